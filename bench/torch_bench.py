#!/usr/bin/python3
"""torch_bench.py - the PyTorch side of `make bench` (Debian's python3-torch).

  OPENBLAS_NUM_THREADS=O torch_bench.py time --threads T [--shapes 1x128,8x128,1x512]
                                             [--repeat N] [--warmup W] [--autocast]
  OPENBLAS_NUM_THREADS=1 torch_bench.py linears --threads T [--repeat N] [--warmup W]
  torch_bench.py export OUT.onnx [--check-dir DIR]

time: the same computation as attnd's enc_forward with ENC_ATTN_HEADS -- one
nn.TransformerEncoderLayer (d_model 768, 12 heads, d_ff 3072, gelu, post-norm,
batch_first), eval mode, under torch.no_grad(), returning the outputs AND the
per-head attention weights.  nn.TransformerEncoderLayer.forward never returns
the weights, so Block below runs its own submodules in its order:
self_attn(x, x, x, need_weights=True, average_attn_weights=False), then add &
norm and the feed-forward block on that same attention output (nothing is
computed twice).  Before timing it checks Block's outputs against the layer's
own forward.  --threads is torch.set_num_threads (ATen's OpenMP threads).
--autocast runs the timed forwards under torch.autocast(device_type="cpu",
dtype=torch.bfloat16), PyTorch's bfloat16 with float32 weights (the peer of
attnd's model.dtype bfloat16); its RESULT keys then begin torch_bf16_.
Debian's torch does its GEMMs in the system OpenBLAS (pthreads), whose thread
count torch.set_num_threads does not change: it comes from
OPENBLAS_NUM_THREADS (default: every core), so bench/run.sh runs one process
per (torch threads, OpenBLAS threads) pair and keeps the best.

linears: the four Linears of the block alone at B=8 L=128 (1024 tokens:
768 -> 2304, 768 -> 768, 768 -> 3072, 3072 -> 768, with bias), as
bench_core linears times attnd's: under bfloat16 autocast (oneDNN's
bfloat16 matmul, AMX where the CPU has it), then each Linear through
torch.ao.quantization.quantize_dynamic (qint8, the quantized engine
PyTorch picks: onednn or fbgemm).  RESULT keys torch_lin_bf16_* and
torch_lin_i8_*; a step PyTorch cannot run is said and skipped.

export: writes Block to ONNX (opset 14; dynamic B and L; outputs "out" (B, L,
768) and "attn" (B, 12, L, L)), and with --check-dir one B=1 L=128 input and
PyTorch's outputs as raw little-endian float32 (x.f32, out.f32, attn.f32) for
the ONNX Runtime run to compare against.

Each timing prints a readable line and a "RESULT key=value" line for
bench/run.sh.  Exit status 3 means "cannot do this here" (reason on stdout).
"""
import argparse
import contextlib
import os
import sys
import time

D_MODEL, N_HEADS, D_FF = 768, 12, 3072


def fail(reason):
    """Prints why this part is skipped and exits with status 3."""
    print(f"SKIP: {reason}")
    sys.exit(3)


try:
    import torch
    from torch import nn
except Exception as e:  # ImportError, or a broken install
    fail(f"{sys.executable} cannot import torch ({type(e).__name__}: {e})")


class Block(nn.Module):
    """One post-norm encoder layer that also returns per-head attention weights."""

    def __init__(self, layer):
        super().__init__()
        self.layer = layer

    def forward(self, x):
        l = self.layer
        a, w = l.self_attn(x, x, x, need_weights=True, average_attn_weights=False)
        x = l.norm1(x + l.dropout1(a))
        x = l.norm2(x + l._ff_block(x))
        return x, w  # (B, L, D), (B, H, L, L)


def make_block():
    torch.manual_seed(0)
    layer = nn.TransformerEncoderLayer(D_MODEL, N_HEADS, D_FF, activation="gelu",
                                       batch_first=True, norm_first=False)
    return Block(layer).eval()


def openblas_threads():
    """The thread count of the OpenBLAS torch uses, as a string ("?" if unknown)."""
    try:
        import ctypes
        return str(ctypes.CDLL("libopenblas.so.0").openblas_get_num_threads())
    except (OSError, AttributeError):
        return "?"


def parse_shapes(text):
    return [tuple(int(v) for v in s.split("x")) for s in text.split(",")]


def cmd_time(args):
    torch.set_num_threads(args.threads)
    block = make_block()
    with torch.no_grad():
        x = torch.randn(2, 16, D_MODEL)
        out, w = block(x)
        diff = (out - block.layer(x)).abs().max().item()
        rowsum = (w.sum(-1) - 1).abs().max().item()
    if diff > 1e-5 or tuple(w.shape) != (2, N_HEADS, 16, 16) or rowsum > 1e-5:
        print(f"torch_bench: Block differs from nn.TransformerEncoderLayer ({diff:.3g})",
              file=sys.stderr)
        sys.exit(1)
    blas = openblas_threads()
    print(f"torch {torch.__version__}: torch.get_num_threads() = {torch.get_num_threads()}, "
          f"OpenBLAS threads = {blas}; Block == layer(x) within {diff:.1e}")
    for B, L in parse_shapes(args.shapes):
        x = torch.randn(B, L, D_MODEL)
        ms = []
        cast = (torch.autocast(device_type="cpu", dtype=torch.bfloat16) if args.autocast
                else contextlib.nullcontext())
        with torch.no_grad(), cast:
            for i in range(args.warmup + args.repeat):
                t0 = time.perf_counter()
                out, w = block(x)
                t = (time.perf_counter() - t0) * 1e3
                if i >= args.warmup:
                    ms.append(t)
        assert tuple(w.shape) == (B, N_HEADS, L, L)
        ms.sort()
        best, median = ms[0], ms[len(ms) // 2]
        key = f"torch_{'bf16_' if args.autocast else ''}{args.threads}_{blas}_{B}x{L}"
        print(f"PyTorch{' autocast bfloat16' if args.autocast else ''} B={B} L={L}, "
              f"torch.set_num_threads({args.threads}), OpenBLAS threads "
              f"{blas}, best of {args.repeat}: "
              f"{best:.3f} ms, median {median:.3f} ms")
        print(f"RESULT {key}_best_ms={best:.3f} {key}_median_ms={median:.3f}")


def time_linears(linears, inputs, args, cast):
    """Best and median ms of the four Linears in turn, under cast."""
    ms = []
    with torch.no_grad(), cast:
        for i in range(args.warmup + args.repeat):
            t0 = time.perf_counter()
            for lin, x in zip(linears, inputs):
                lin(x)
            if i >= args.warmup:
                ms.append((time.perf_counter() - t0) * 1e3)
    ms.sort()
    return ms[0], ms[len(ms) // 2]


def cmd_linears(args):
    torch.set_num_threads(args.threads)
    torch.manual_seed(0)
    shapes = [(3 * D_MODEL, D_MODEL), (D_MODEL, D_MODEL), (D_FF, D_MODEL), (D_MODEL, D_FF)]
    linears = [nn.Linear(k, n).eval() for n, k in shapes]
    inputs = [torch.randn(8 * 128, k) for _, k in shapes]
    runs = [("bf16", "bfloat16 autocast", lambda: (
        linears, torch.autocast(device_type="cpu", dtype=torch.bfloat16)))]
    def quantised():
        q = [torch.ao.quantization.quantize_dynamic(nn.Sequential(l), {nn.Linear},
                                                    dtype=torch.qint8) for l in linears]
        return q, contextlib.nullcontext()
    runs.append(("i8", "quantize_dynamic qint8 (engine "
                 f"{torch.backends.quantized.engine})", quantised))
    for key, name, make in runs:
        try:
            mods, cast = make()
            best, median = time_linears(mods, inputs, args, cast)
        except Exception as e:
            print(f"PyTorch four Linears {name}: cannot run ({type(e).__name__}: {e})")
            continue
        print(f"PyTorch {torch.__version__} four Linears B=8 L=128, {name}, "
              f"torch.set_num_threads({args.threads}), best of {args.repeat}: {best:.3f} ms, "
              f"median {median:.3f} ms")
        print(f"RESULT torch_lin_{key}_best_ms={best:.3f} torch_lin_{key}_median_ms={median:.3f}")


def cmd_export(args):
    block = make_block()
    x = torch.randn(1, 128, D_MODEL)
    try:
        t0 = time.perf_counter()
        torch.onnx.export(block, (x,), args.out, input_names=["x"],
                          output_names=["out", "attn"], opset_version=14,
                          dynamic_axes={"x": {0: "B", 1: "L"}, "out": {0: "B", 1: "L"},
                                        "attn": {0: "B", 2: "L", 3: "L"}})
        secs = time.perf_counter() - t0
    except Exception as e:
        fail(f"torch.onnx.export failed: {type(e).__name__}: {str(e).splitlines()[0]}")
    print(f"exported with torch {torch.__version__}, opset 14, in {secs:.1f} s: {args.out} "
          f"({os.path.getsize(args.out) / 2**20:.1f} MiB)")
    if args.check_dir:
        with torch.no_grad():
            out, w = block(x)
        for name, t in (("x", x), ("out", out), ("attn", w)):
            t.contiguous().numpy().astype("<f4").tofile(os.path.join(args.check_dir,
                                                                     name + ".f32"))


def main():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    sub = p.add_subparsers(dest="cmd", required=True)
    t = sub.add_parser("time")
    t.add_argument("--threads", type=int, required=True)
    t.add_argument("--shapes", default="1x128,8x128,1x512")
    t.add_argument("--repeat", type=int, default=20)
    t.add_argument("--warmup", type=int, default=3)
    t.add_argument("--autocast", action="store_true")
    lp = sub.add_parser("linears")
    lp.add_argument("--threads", type=int, required=True)
    lp.add_argument("--repeat", type=int, default=20)
    lp.add_argument("--warmup", type=int, default=3)
    e = sub.add_parser("export")
    e.add_argument("out")
    e.add_argument("--check-dir")
    args = p.parse_args()
    if args.cmd == "time":
        cmd_time(args)
    elif args.cmd == "linears":
        cmd_linears(args)
    else:
        cmd_export(args)


if __name__ == "__main__":
    main()
