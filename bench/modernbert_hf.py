#!/usr/bin/python3
"""modernbert_hf.py - ModernBERT-base as Hugging Face transformers runs it on a CPU:
the peer of the bfloat16 long-context target, where transformers is installed (the
lent machine: Debian has no transformers).

  python3 bench/modernbert_hf.py [--seq-len 8192] [--runs 2] [--threads N]
                                 [--dtype float32|bfloat16] [--attn sdpa|eager]

Builds ModernBertModel from ModernBERT-base's config.json
(tools/fixtures/make_modernbert_fixtures.py's MODERNBERT_BASE_CONFIG; random weights,
seed 0: the values do not change the work), casts it to --dtype (bfloat16:
what `ModernBertModel.from_pretrained(..., dtype=torch.bfloat16)` runs), and
times model(input_ids) on one sequence (B = 1) of --seq-len random token ids
under torch.no_grad(): the embeddings, 22 layers and the final norm.  One
untimed forward first.  --threads is torch.set_num_threads.

Prints one readable line, then "RESULT mb_hf_<dtype>_median_s=...
mb_hf_<dtype>_peak_rss_mib=..." for bench/big_host.sh.  Exit status 3 means
"cannot do this here" (reason on stdout).
"""
import argparse
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
    from transformers import ModernBertConfig, ModernBertModel
except Exception as e:  # ImportError, or a broken install
    fail(f"{sys.executable} cannot import torch and transformers' ModernBertModel "
         f"({type(e).__name__}: {e})")

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "tools", "fixtures"))
from make_modernbert_fixtures import MODERNBERT_BASE_CONFIG  # noqa: E402


def main():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--seq-len", type=int, default=8192)
    p.add_argument("--runs", type=int, default=2)
    p.add_argument("--threads", type=int, default=len(os.sched_getaffinity(0)))
    p.add_argument("--dtype", choices=("float32", "bfloat16"), default="bfloat16")
    p.add_argument("--attn", choices=("sdpa", "eager"), default="sdpa")
    args = p.parse_args()
    if args.seq_len < 1 or args.runs < 1 or args.threads < 1:
        p.error("--seq-len, --runs and --threads must be >= 1")
    torch.set_num_threads(args.threads)
    torch.manual_seed(0)
    cfg = dict(MODERNBERT_BASE_CONFIG)
    cfg["max_position_embeddings"] = max(cfg.get("max_position_embeddings", 8192), args.seq_len)
    config = ModernBertConfig(**cfg)
    config._attn_implementation = args.attn
    model = ModernBertModel(config).eval().to(getattr(torch, args.dtype))
    ids = torch.randint(5, config.vocab_size, (1, args.seq_len))
    mask = torch.ones_like(ids)
    times = []
    with torch.no_grad():
        for i in range(args.runs + 1):
            t0 = time.perf_counter()
            out = model(input_ids=ids, attention_mask=mask).last_hidden_state
            if i:
                times.append(time.perf_counter() - t0)
    assert tuple(out.shape) == (1, args.seq_len, config.hidden_size)
    med = statistics.median(times)
    rss = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    key = f"mb_hf_{args.dtype}"
    print(f"transformers ModernBertModel ({args.attn}, {args.dtype}), torch {torch.__version__}, "
          f"{args.threads} threads, L={args.seq_len}: median of {args.runs} "
          f"{med:.3f} s ({', '.join(f'{t:.3f}' for t in times)}), peak RSS {rss:.0f} MiB")
    print(f"RESULT {key}_median_s={med:.4f} {key}_peak_rss_mib={rss:.0f}")


if __name__ == "__main__":
    main()
