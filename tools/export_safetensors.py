#!/usr/bin/python3
"""export_safetensors - turn a PyTorch transformer encoder into attnd weights.

    /usr/bin/python3 tools/export_safetensors.py MODEL.pt OUT.safetensors \\
        [--dtype F32|F16|BF16] [--n-heads N] [--activation relu|gelu|gelu_tanh] \\
        [--norm-first | --no-norm-first] [--layer-norm-eps EPS] [--separate-qkv] \\
        [--config-out FILE]
    /usr/bin/python3 tools/export_safetensors.py --demo OUT.pt

MODEL.pt is a file written by torch.save() holding one of

  - an nn.TransformerEncoderLayer            -> names `self_attn.in_proj_weight`, ...
  - an nn.TransformerEncoder (no final norm) -> names `layers.{i}.self_attn...`
  - a state_dict of either                   -> the same names

The weights are written to OUT.safetensors under PyTorch's state_dict names,
converted to the chosen dtype (default F32), and the matching attnd
configuration is printed (or written to --config-out) as a config file:

    {"model": {"d_model": 16, "n_heads": 4, "n_kv_heads": 4, "d_ff": 64,
               "n_layers": 1, "activation": "gelu", "norm_first": false,
               "layer_norm_eps": 1e-05, "bias": true,
               "weights": "/abs/path/OUT.safetensors"}}

so `build/attnd --config FILE` serves the model straight away.

Activation: F.relu / nn.ReLU -> relu, F.gelu / nn.GELU() -> gelu,
nn.GELU(approximate="tanh") or functools.partial(F.gelu, approximate="tanh")
-> gelu_tanh; any other callable (a lambda, say) is probed numerically
(against tools/reference.py's ACT_FN).  Note
that torch 1.13's C++ fast path (eval mode under no_grad) runs exact gelu even
for nn.GELU(approximate="tanh"); attnd computes what the module declares.

From a module everything is read off the module: n_heads from
self_attn.num_heads, activation from its activation function, norm_first,
layer_norm_eps from norm1.eps; options that contradict the module are an
error.  A state_dict carries no hyperparameters, so --n-heads is required,
--activation defaults to relu, --norm-first to false and --layer-norm-eps to
1e-5 (PyTorch's defaults).  n_kv_heads (grouped-query attention) and bias are
read off the tensors: a state_dict with q_proj_weight / k_proj_weight /
v_proj_weight where k and v have fewer rows than q is grouped-query; one with
no bias tensors at all is bias false (as torch >= 2.1's bias=False).

Refused, with a message saying why: an encoder with a final `norm` (attnd has
no final LayerNorm), add_bias_kv / add_zero_attn / kdim / vdim attention, a
LayerNorm without affine parameters, norm1.eps != norm2.eps, an activation
other than relu / gelu / gelu_tanh, some biases present and others missing,
layers that differ, and any tensor name or shape it does not recognise.

--demo OUT.pt saves a small random nn.TransformerEncoderLayer (d_model 16,
4 heads, d_ff 64, gelu, post-norm) to try the tool on:

    /usr/bin/python3 tools/export_safetensors.py --demo /tmp/demo.pt
    /usr/bin/python3 tools/export_safetensors.py /tmp/demo.pt /tmp/demo.safetensors \\
        --config-out /tmp/demo.json
    build/attnd --config /tmp/demo.json

The export logic is the importable function export(); make_fixtures.py uses it.
"""

import argparse
import functools
import json
import os
import sys

import torch
import torch.nn as nn
import torch.nn.functional as F

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from reference import ACT_FN  # noqa: E402
from safetensors_io import save_file  # noqa: E402

DTYPES = {"F32": torch.float32, "F16": torch.float16, "BF16": torch.bfloat16}
ACTIVATIONS = ("relu", "gelu", "gelu_tanh")

# The per-layer tensors attnd knows (names relative to the layer).
ATTN_PACKED = "self_attn.in_proj_weight"
ATTN_SEPARATE = ("self_attn.q_proj_weight", "self_attn.k_proj_weight", "self_attn.v_proj_weight")
WEIGHTS = ("self_attn.out_proj.weight", "linear1.weight", "linear2.weight",
           "norm1.weight", "norm2.weight")
BIASES = ("self_attn.in_proj_bias", "self_attn.out_proj.bias", "linear1.bias",
          "linear2.bias", "norm1.bias", "norm2.bias")
KNOWN = set((ATTN_PACKED,) + ATTN_SEPARATE + WEIGHTS + BIASES)


class ExportError(Exception):
    """The input cannot be expressed as an attnd model; the message says why."""


_ACT_FNS = ACT_FN   # attnd's activation names -> the functional form (reference.py)


def activation_name(fn):
    """attnd's name ("relu", "gelu", "gelu_tanh") for an activation callable.

    Known callables are recognised directly; anything else (a lambda, say) is
    probed numerically against the three candidates.  Raises ExportError when
    it is none of them."""
    if fn is F.relu or isinstance(fn, nn.ReLU):
        return "relu"
    if fn is F.gelu:
        return "gelu"
    if isinstance(fn, nn.GELU):
        return "gelu_tanh" if fn.approximate == "tanh" else "gelu"
    if isinstance(fn, str) and fn in ("relu", "gelu"):
        return fn
    if isinstance(fn, functools.partial) and fn.func is F.gelu and not fn.args:
        approx = fn.keywords.get("approximate", "none")
        if approx in ("none", "tanh") and set(fn.keywords) <= {"approximate"}:
            return "gelu_tanh" if approx == "tanh" else "gelu"
    x = torch.linspace(-8.0, 8.0, 321)
    try:
        with torch.no_grad():
            y = fn(x)
    except Exception as e:  # noqa: BLE001 - any failure means "unknown"
        raise ExportError(f"cannot evaluate the activation function {fn!r}: {e}") from e
    for name, ref in _ACT_FNS.items():
        if isinstance(y, torch.Tensor) and y.shape == x.shape and \
                torch.allclose(y.float(), ref(x), rtol=0, atol=1e-6):
            return name
    raise ExportError(f"activation {fn!r} is not relu, gelu or gelu_tanh; attnd supports only those")


def _check_choice(what, given, actual):
    if given is not None and given != actual:
        raise ExportError(f"--{what} {given} contradicts the module, which has {actual}")


def _layer_hparams(layer):
    """(n_heads, activation, norm_first, eps) of an nn.TransformerEncoderLayer;
    raises ExportError for what attnd cannot run."""
    attn = layer.self_attn
    if not isinstance(attn, nn.MultiheadAttention):
        raise ExportError("self_attn is not an nn.MultiheadAttention")
    if attn.bias_k is not None or attn.bias_v is not None:
        raise ExportError("self_attn uses add_bias_kv, which attnd does not support")
    if attn.add_zero_attn:
        raise ExportError("self_attn uses add_zero_attn, which attnd does not support")
    if attn.kdim != attn.embed_dim or attn.vdim != attn.embed_dim:
        raise ExportError(f"self_attn has kdim {attn.kdim} / vdim {attn.vdim} != d_model "
                          f"{attn.embed_dim}; attnd's keys and values come from the same input")
    for n in ("norm1", "norm2"):
        norm = getattr(layer, n)
        if not isinstance(norm, nn.LayerNorm) or not norm.elementwise_affine:
            raise ExportError(f"{n} is not a LayerNorm with affine parameters")
        if len(norm.normalized_shape) != 1:
            raise ExportError(f"{n} normalises over {tuple(norm.normalized_shape)}, not d_model")
    if layer.norm1.eps != layer.norm2.eps:
        raise ExportError(f"norm1.eps {layer.norm1.eps} != norm2.eps {layer.norm2.eps}; "
                          "attnd has one layer_norm_eps")
    act = activation_name(getattr(layer, "activation", F.relu))
    return attn.num_heads, act, bool(layer.norm_first), float(layer.norm1.eps)


def _split_layers(sd):
    """Splits a state_dict into per-layer dicts.  Returns (layers, is_encoder)."""
    sd = {k: v for k, v in sd.items()}
    if "norm.weight" in sd or "norm.bias" in sd:
        raise ExportError("the encoder has a final `norm` (norm.weight); attnd has no final "
                          "LayerNorm, so its output would differ.  Build the encoder with "
                          "norm=None, or apply that LayerNorm to attnd's outputs yourself")
    if not any(k.startswith("layers.") for k in sd):
        return [sd], False
    layers = {}
    stray = []
    for k, v in sd.items():
        parts = k.split(".", 2)
        if len(parts) == 3 and parts[0] == "layers" and parts[1].isdigit():
            layers.setdefault(int(parts[1]), {})[parts[2]] = v
        else:
            stray.append(k)
    if stray:
        raise ExportError(f"unrecognised tensors beside layers.*: {', '.join(sorted(stray))}")
    n = len(layers)
    if sorted(layers) != list(range(n)):
        raise ExportError(f"layer indices {sorted(layers)} are not 0..{n - 1}")
    return [layers[i] for i in range(n)], True


def _shape(t):
    return list(t.shape)


def _validate_layer(i, p, n_heads):
    """Checks one layer's tensors; returns (d_model, n_kv_heads, d_ff, bias)."""
    where = f"layer {i}: " if i is not None else ""
    for k, v in p.items():
        if k not in KNOWN:
            raise ExportError(f"{where}unrecognised tensor {k!r} (attnd knows: "
                              f"{', '.join(sorted(KNOWN))})")
        if not isinstance(v, torch.Tensor) or not v.is_floating_point():
            raise ExportError(f"{where}{k} is not a floating-point tensor")
    for k in WEIGHTS:
        if k not in p:
            raise ExportError(f"{where}missing tensor {k}")
    D = p["norm1.weight"].shape[0] if p["norm1.weight"].dim() == 1 else -1
    if D <= 0:
        raise ExportError(f"{where}norm1.weight has shape {_shape(p['norm1.weight'])}, "
                          "expected [d_model]")
    if D % n_heads:
        raise ExportError(f"{where}d_model {D} is not divisible by n_heads {n_heads}")
    E = D // n_heads
    packed = ATTN_PACKED in p
    separate = [k for k in ATTN_SEPARATE if k in p]
    if packed and separate:
        raise ExportError(f"{where}both in_proj_weight and {separate[0]} are present")
    if packed:
        G = n_heads
        want = {ATTN_PACKED: [3 * D, D]}
    else:
        if len(separate) != 3:
            raise ExportError(f"{where}needs self_attn.in_proj_weight, or all of "
                              "q_proj_weight, k_proj_weight and v_proj_weight")
        rows = p["self_attn.k_proj_weight"].shape[0]
        if rows % E or not 0 < rows // E <= n_heads or n_heads % (rows // E):
            raise ExportError(f"{where}self_attn.k_proj_weight has {rows} rows, which is not "
                              f"n_kv_heads * head ({E}) for an n_kv_heads dividing {n_heads}")
        G = rows // E
        want = {"self_attn.q_proj_weight": [D, D], "self_attn.k_proj_weight": [G * E, D],
                "self_attn.v_proj_weight": [G * E, D]}
    F_ = p["linear1.weight"].shape[0]
    want.update({"self_attn.out_proj.weight": [D, D], "linear1.weight": [F_, D],
                 "linear2.weight": [D, F_], "norm1.weight": [D], "norm2.weight": [D],
                 "self_attn.in_proj_bias": [D + 2 * G * E], "self_attn.out_proj.bias": [D],
                 "linear1.bias": [F_], "linear2.bias": [D], "norm1.bias": [D],
                 "norm2.bias": [D]})
    for k, v in p.items():
        if _shape(v) != want[k]:
            raise ExportError(f"{where}{k} has shape {_shape(v)}, expected {want[k]}")
    have = [k for k in BIASES if k in p]
    if have and len(have) != len(BIASES):
        missing = [k for k in BIASES if k not in p]
        raise ExportError(f"{where}has {', '.join(have)} but not {', '.join(missing)}; attnd's "
                          "bias setting covers every Linear and LayerNorm: all or none")
    return D, G, F_, bool(have)


def collect(obj, n_heads=None, activation=None, norm_first=None, layer_norm_eps=None):
    """Reads a module or state_dict.  Returns (layers, is_encoder, config) where
    layers is a list of {name: float32 tensor} and config attnd's model config."""
    if isinstance(obj, nn.TransformerEncoder):
        if obj.norm is not None:
            raise ExportError("the nn.TransformerEncoder has a final `norm`; attnd has no final "
                              "LayerNorm, so its output would differ.  Build the encoder with "
                              "norm=None, or apply that LayerNorm to attnd's outputs yourself")
        mods = list(obj.layers)
        if not mods:
            raise ExportError("the nn.TransformerEncoder has no layers")
        for i, m in enumerate(mods):
            if not isinstance(m, nn.TransformerEncoderLayer):
                raise ExportError(f"layers[{i}] is a {type(m).__name__}, "
                                  "not an nn.TransformerEncoderLayer")
        hps = [_layer_hparams(m) for m in mods]
        for i, hp in enumerate(hps[1:], 1):
            if hp != hps[0]:
                raise ExportError(f"layer {i} (n_heads, activation, norm_first, eps) = {hp} "
                                  f"differs from layer 0's {hps[0]}")
        sd, is_encoder = obj.state_dict(), True
    elif isinstance(obj, nn.TransformerEncoderLayer):
        hps = [_layer_hparams(obj)]
        sd, is_encoder = obj.state_dict(), False
    elif isinstance(obj, dict):
        hps = None
        sd = obj
    else:
        raise ExportError(f"expected an nn.TransformerEncoderLayer, an nn.TransformerEncoder or a "
                          f"state_dict of either, got {type(obj).__module__}.{type(obj).__name__}")

    if hps is not None:
        h, act, nf, eps = hps[0]
        _check_choice("n-heads", n_heads, h)
        _check_choice("activation", activation, act)
        _check_choice("norm-first", norm_first, nf)
        _check_choice("layer-norm-eps", layer_norm_eps, eps)
    else:
        if n_heads is None:
            raise ExportError("a state_dict does not record the number of heads: give --n-heads")
        h = n_heads
        act = activation if activation is not None else "relu"
        nf = bool(norm_first) if norm_first is not None else False
        eps = float(layer_norm_eps) if layer_norm_eps is not None else 1e-5
    if act not in ACTIVATIONS:
        raise ExportError(f"activation {act!r} is not one of {', '.join(ACTIVATIONS)}")
    if not isinstance(h, int) or h <= 0:
        raise ExportError(f"n_heads must be a positive integer, got {h!r}")
    if not eps > 0:
        raise ExportError(f"layer_norm_eps must be positive, got {eps}")

    layers, split_encoder = _split_layers(sd)
    is_encoder = split_encoder if hps is None else is_encoder
    dims = None
    for i, p in enumerate(layers):
        d = _validate_layer(i if len(layers) > 1 or is_encoder else None, p, h)
        if dims is not None and d != dims:
            raise ExportError(f"layer {i} (d_model, n_kv_heads, d_ff, bias) = {d} differs from "
                              f"layer 0's {dims}")
        dims = d
    D, G, F_, bias = dims
    config = {"d_model": D, "n_heads": h, "n_kv_heads": G, "d_ff": F_,
              "n_layers": len(layers), "activation": act, "norm_first": nf,
              "layer_norm_eps": eps, "bias": bias}
    layers = [{k: v.detach().to("cpu", torch.float32) for k, v in p.items()} for p in layers]
    return layers, is_encoder, config


def export(obj, out_path, dtype="F32", n_heads=None, activation=None, norm_first=None,
           layer_norm_eps=None, separate_qkv=False, prefixed=None, metadata=None):
    """Writes obj (an nn.TransformerEncoderLayer, nn.TransformerEncoder or a
    state_dict of either) to out_path as safetensors in dtype ("F32", "F16",
    "BF16").  Returns attnd's model config (a dict).

    separate_qkv writes q_proj_weight / k_proj_weight / v_proj_weight instead
    of in_proj_weight.  prefixed (default: whether obj is an encoder) names
    the tensors `layers.{i}.`; a model of several layers is always prefixed.
    Raises ExportError when obj cannot be expressed as an attnd model."""
    if dtype not in DTYPES:
        raise ExportError(f"dtype {dtype!r} is not one of {', '.join(DTYPES)}")
    layers, is_encoder, config = collect(obj, n_heads, activation, norm_first, layer_norm_eps)
    if prefixed is None:
        prefixed = is_encoder
    prefixed = prefixed or len(layers) > 1
    D = config["d_model"]
    out = {}
    for i, p in enumerate(layers):
        p = dict(p)
        if separate_qkv and ATTN_PACKED in p:
            w = p.pop(ATTN_PACKED)
            for k, part in zip(ATTN_SEPARATE, (w[:D], w[D:2 * D], w[2 * D:])):
                p[k] = part.clone()
        prefix = f"layers.{i}." if prefixed else ""
        for k, v in p.items():
            c = v.to(DTYPES[dtype])
            if not torch.isfinite(c).all():
                raise ExportError(f"{prefix}{k} has values that are not finite in {dtype}")
            out[prefix + k] = c.contiguous()
    save_file(out, out_path, metadata)
    return config


def make_demo(path):
    """Saves a small random nn.TransformerEncoderLayer to path (torch.save)."""
    torch.manual_seed(0)
    layer = nn.TransformerEncoderLayer(16, 4, dim_feedforward=64, dropout=0.0,
                                       activation="gelu", batch_first=True)
    with torch.no_grad():  # make the zero-initialised biases and unit norms matter
        for name, p in layer.named_parameters():
            if name.endswith("in_proj_bias") or name.endswith("out_proj.bias") or \
                    (name.startswith("norm") and name.endswith("bias")):
                p.normal_(0.0, 0.1)
            elif name.startswith("norm") and name.endswith("weight"):
                p.normal_(1.0, 0.1)
    layer.eval()
    torch.save(layer, path)


def _parse_args(argv):
    ap = argparse.ArgumentParser(
        prog="export_safetensors.py",
        description="Export a PyTorch nn.TransformerEncoderLayer / nn.TransformerEncoder "
                    "(or a state_dict of either) saved with torch.save() to attnd's "
                    "safetensors weights, and print the matching attnd config.",
        epilog="Examples:\n"
               "  %(prog)s --demo /tmp/demo.pt\n"
               "  %(prog)s /tmp/demo.pt /tmp/demo.safetensors --config-out /tmp/demo.json\n"
               "  %(prog)s sd.pt w.safetensors --n-heads 8 --activation gelu --dtype BF16\n"
               "Exit status: 0 on success, 1 when the model cannot be exported, "
               "2 on bad usage.",
        formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("model", nargs="?", metavar="MODEL.pt",
                    help="file written by torch.save(): a TransformerEncoderLayer, a "
                         "TransformerEncoder (without final norm) or a state_dict of either")
    ap.add_argument("out", nargs="?", metavar="OUT.safetensors", help="weights file to write")
    ap.add_argument("--dtype", choices=list(DTYPES), default="F32",
                    help="stored dtype of the weights (default F32; attnd converts F16/BF16 "
                         "to float32 at load)")
    ap.add_argument("--n-heads", type=int, metavar="N",
                    help="number of attention heads; required for a state_dict, checked "
                         "against a module")
    ap.add_argument("--activation", choices=ACTIVATIONS,
                    help="feed-forward activation; for a state_dict (default relu), checked "
                         "against a module")
    ap.add_argument("--norm-first", action=argparse.BooleanOptionalAction, default=None,
                    help="pre-norm (--norm-first) or post-norm (--no-norm-first); for a "
                         "state_dict (default post-norm), checked against a module")
    ap.add_argument("--layer-norm-eps", type=float, metavar="EPS",
                    help="LayerNorm epsilon; for a state_dict (default 1e-5), checked "
                         "against a module")
    ap.add_argument("--separate-qkv", action="store_true",
                    help="write q_proj_weight/k_proj_weight/v_proj_weight instead of "
                         "in_proj_weight")
    ap.add_argument("--config-out", metavar="FILE",
                    help="write the attnd config ({\"model\": {...}}) to FILE instead of stdout")
    ap.add_argument("--demo", metavar="OUT.pt",
                    help="save a small random nn.TransformerEncoderLayer to OUT.pt and exit")
    args = ap.parse_args(argv)
    if args.demo is None and (args.model is None or args.out is None):
        ap.error("MODEL.pt and OUT.safetensors are required (or --demo OUT.pt)")
    if args.demo is not None and args.model is not None:
        ap.error("--demo takes no other arguments")
    return args


def main(argv=None):
    args = _parse_args(argv)
    if args.demo is not None:
        make_demo(args.demo)
        print(f"wrote {args.demo}: nn.TransformerEncoderLayer(16, 4, dim_feedforward=64, "
              f"activation='gelu'); next:\n  /usr/bin/python3 {sys.argv[0]} {args.demo} "
              f"demo.safetensors --config-out demo.json", file=sys.stderr)
        return 0
    try:
        obj = torch.load(args.model, map_location="cpu")
    except Exception as e:  # noqa: BLE001 - report any load failure plainly
        print(f"export_safetensors: cannot load {args.model} with torch.load: {e}",
              file=sys.stderr)
        return 1
    try:
        config = export(obj, args.out, args.dtype, n_heads=args.n_heads,
                        activation=args.activation, norm_first=args.norm_first,
                        layer_norm_eps=args.layer_norm_eps, separate_qkv=args.separate_qkv)
    except ExportError as e:
        print(f"export_safetensors: {args.model}: {e}", file=sys.stderr)
        return 1
    config["weights"] = os.path.abspath(args.out)
    text = json.dumps({"model": config}, indent=2) + "\n"
    if args.config_out:
        with open(args.config_out, "w") as f:
            f.write(text)
        print(f"wrote {args.out} ({args.dtype}) and {args.config_out}", file=sys.stderr)
    else:
        sys.stdout.write(text)
    return 0


if __name__ == "__main__":
    sys.exit(main())
