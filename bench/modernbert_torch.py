#!/usr/bin/python3
"""modernbert_torch.py - ModernBERT-base's encoder stack in PyTorch on a CPU, as
transformers runs it (Debian's python3-torch; no transformers needed).

  /usr/bin/python3 bench/modernbert_torch.py [--seq-len 8192] [--layers 22] [--runs 1]
                                             [--threads N]

Times the forward of ModernBERT-base's encoder stack (hidden 768, 12 heads,
intermediate 1152, 22 layers, global attention every 3rd layer, local
attention 128 (64 each side), RoPE thetas 160000 global / 10000 local, exact
gelu GeGLU, no biases) on one sequence (B = 1) of --seq-len tokens, from the
embeddings' output to final_norm, float32, under torch.no_grad().  The
forward is tools/fixtures/make_modernbert_fixtures.py's modernbert_layers, the
functional copy of transformers' ModernBertModel.forward with
attn_implementation "eager" (the one CPU path that computes what attnd does
without flash-attn): ModernBertModel._update_attention_mask builds the
[B, 1, L, L] additive global and sliding-window masks (finfo.min outside the
window), and every layer, local or global, computes the dense [B, H, L, L]
scores, adds its mask and takes the softmax over all L keys.  So a local
layer costs as much as a global one, and one layer's attention holds two
[1, 12, L, L] float32 tensors at once (6 GiB at L = 8192).  The fixtures
check this forward against an independent float64 formulation.

Weights: random (normal * 0.1, LayerNorm weights 1 + normal * 0.1, seed 0),
the input torch.randn; the values do not change the work.  --layers runs the
first N layers of the 22 (the global / local pattern is kept: layer i is
global when i % 3 == 0).

--threads (default: every CPU this process may run on) is
torch.set_num_threads (ATen's OpenMP threads, which run the elementwise ops
and the softmax); Debian's torch does its GEMMs in the system OpenBLAS, whose
thread count this also sets to --threads (openblas_set_num_threads) unless
OPENBLAS_NUM_THREADS is set in the environment, which then wins.

Prints one JSON line: {"seq_len", "layers", "runs", "median_s", "runs_s",
"torch_threads", "blas_core" (openblas_get_corename() of the OpenBLAS torch
runs, "unknown" when it cannot be asked), "peak_rss_mib" (the process's peak
resident set, ru_maxrss)}, then the same as a "RESULT mb_torch_median_s=...
mb_torch_blas_core=... mb_torch_peak_rss_mib=..." line for bench/run.sh.  Exit status 3 means "cannot do this here"
(reason on stdout).
"""
import argparse
import ctypes
import json
import os
import resource
import statistics
import sys
import time


def fail(reason):
    """Prints why this is skipped and exits with status 3."""
    print(f"SKIP: {reason}")
    sys.exit(3)


try:
    import torch
except Exception as e:  # ImportError, or a broken install
    fail(f"{sys.executable} cannot import torch ({type(e).__name__}: {e})")

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "tools", "fixtures"))
from make_modernbert_fixtures import (  # noqa: E402
    MODERNBERT_BASE_CONFIG, modernbert_layers, random_tensors)


def openblas():
    """The OpenBLAS library torch's BLAS calls land in (the process already
    has it loaded: libtorch_cpu links libblas.so.3 -> openblas), or None."""
    for name in ("libopenblas.so.0", "libblas.so.3"):
        try:
            lib = ctypes.CDLL(name)
            lib.openblas_get_corename.restype = ctypes.c_char_p
            return lib
        except (OSError, AttributeError):
            continue
    return None


def blas_core(lib):
    try:
        return lib.openblas_get_corename().decode() if lib is not None else "unknown"
    except (OSError, AttributeError, UnicodeDecodeError):
        return "unknown"


def main():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--seq-len", type=int, default=8192)
    p.add_argument("--layers", type=int, default=22)
    p.add_argument("--runs", type=int, default=1)
    p.add_argument("--threads", type=int, default=len(os.sched_getaffinity(0)))
    args = p.parse_args()
    if args.seq_len < 1 or not 1 <= args.layers <= 22 or args.runs < 1 or args.threads < 1:
        p.error("--seq-len, --runs and --threads must be >= 1, --layers 1..22")

    torch.set_num_threads(args.threads)
    lib = openblas()
    if lib is not None and "OPENBLAS_NUM_THREADS" not in os.environ:
        try:
            lib.openblas_set_num_threads(args.threads)
        except AttributeError:
            pass

    # ModernBERT-base (MODERNBERT_BASE_CONFIG is its config.json) with the
    # first --layers layers.
    cfg = dict(MODERNBERT_BASE_CONFIG, num_hidden_layers=args.layers)
    tensors = random_tensors(cfg, 0, "ModernBertModel", stack_only=True)
    torch.manual_seed(1)
    x = torch.randn(1, args.seq_len, cfg["hidden_size"])

    runs = []
    with torch.no_grad():
        for _ in range(args.runs):
            t0 = time.perf_counter()
            out = modernbert_layers(cfg, tensors, x)
            runs.append(time.perf_counter() - t0)
            if not torch.isfinite(out).all():
                print("modernbert_torch: the output is not finite", file=sys.stderr)
                sys.exit(1)
            del out
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024.0   # KiB -> MiB
    median = statistics.median(runs)
    print(json.dumps({"seq_len": args.seq_len, "layers": args.layers, "runs": args.runs,
                      "median_s": round(median, 4),
                      "runs_s": [round(r, 4) for r in runs],
                      "torch_threads": torch.get_num_threads(), "blas_core": blas_core(lib),
                      "peak_rss_mib": round(peak, 1)}))
    # for bench/run.sh
    print(f"RESULT mb_torch_median_s={median:.4f} mb_torch_blas_core={blas_core(lib)} "
          f"mb_torch_peak_rss_mib={peak:.0f}")


if __name__ == "__main__":
    main()
