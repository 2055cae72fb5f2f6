#!/usr/bin/env python3
"""make_invalid_requests.py - writes the invalid /v1/encode request bodies.

    /usr/bin/python3 tools/make_invalid_requests.py tests/fixtures/requests/invalid

writes, deterministically (same bytes on every run), one file per case under
the given directory, and expected.json mapping each file name to the status
and a substring of the error message the daemon must answer with:

    {"_config": {...}, "not_json.json": {"status": 400, "message": "invalid JSON"}, ...}

"_config" is the model and limits every case is written for (d_model 4,
n_heads 2, n_layers 2, d_ff 8; max_batch 4, max_seq_len 8,
max_batch_tokens 16, max_attention_bytes 1024).  Its keys are the daemon's
settings: the integration test passes each as a flag (--d-model 4 ...), the
codec's unit test builds its hyperparameters and limits from them.

max_attention_bytes is 1024 rather than a rounder 4096: with max_batch_tokens
16 and max_seq_len 8 the largest attention output of this model is
2 sequences x 2 heads x 8 x 8 x 4 bytes x 2 layers = 2048 bytes, so only a
limit below that can be exceeded (attention_too_large.json).

Python 3 standard library only; base64 cases pack float32 with struct.
"""

import base64
import json
import os
import struct
import sys

CONFIG = {
    "d_model": 4,
    "n_heads": 2,
    "n_layers": 2,
    "d_ff": 8,
    "max_batch": 4,
    "max_seq_len": 8,
    "max_batch_tokens": 16,
    "max_attention_bytes": 1024,
}
D = CONFIG["d_model"]


def row(i=0):
    """One valid d_model row with distinct values."""
    return [round(0.1 * (i * D + k + 1), 3) for k in range(D)]


def seq(n, start=0):
    return [row(start + i) for i in range(n)]


def batch(b, n):
    return [seq(n, 10 * s) for s in range(b)]


def b64_floats(values):
    return base64.b64encode(struct.pack("<%df" % len(values), *values)).decode("ascii")


def flat(b, n):
    return [v for s in batch(b, n) for r in s for v in r]


def body(obj):
    return json.dumps(obj, separators=(", ", ": ")).encode("utf-8")


CASES = {}  # file -> (bytes, status, message substring)


def case(name, data, status, message):
    if isinstance(data, (dict, list)):
        data = body(data)
    elif isinstance(data, str):
        data = data.encode("utf-8")
    assert name not in CASES, name
    CASES[name + ".json"] = (data, status, message)


def make():
    ok = {"embeddings": batch(2, 3)}

    # ---- JSON itself
    case("not_json", '{"embeddings": [[1, 2, 3, 4]', 400, "invalid JSON")
    case("empty_body", b"", 400, "invalid JSON")
    case("not_object", [[0.1, 0.2, 0.3, 0.4]], 400, "JSON object")
    case("duplicate_key", '{"embeddings": [[1, 2, 3, 4]], "embeddings": [[1, 2, 3, 4]]}', 400,
         "duplicate")
    case("deep_nesting", "[" * 5000 + "]" * 5000, 400, "invalid JSON")
    case("invalid_utf8", b'{"embeddings": [[1, 2, 3, 4]], "\xff\xfe": 1}', 400, "invalid JSON")
    case("nul_in_key", '{"embeddings": [[1, 2, 3, 4]], "a\\u0000b": 1}', 400, "invalid JSON")
    # past double: a number too, refused as outside float32, naming where
    case("number_overflow_double", '{"embeddings": [[1e400, 2, 3, 4]]}', 400,
         "embeddings[0][0] = inf is outside the float32 range")

    # ---- fields
    case("unknown_field", {"embedings": batch(1, 2)}, 400, "unknown field 'embedings'")
    case("missing_embeddings", {"attention": "mean"}, 400, "embeddings is required")
    case("both_embeddings", {"embeddings": batch(1, 2), "embeddings_b64": b64_floats(flat(1, 2)),
                             "shape": [1, 2, D]}, 400, "not both")
    case("shape_without_b64", {"embeddings": batch(1, 2), "shape": [1, 2, D]}, 400,
         "shape is only used with embeddings_b64")

    # ---- nested embeddings
    case("embeddings_not_array", {"embeddings": "0.1 0.2 0.3 0.4"}, 400, "embeddings must be")
    case("empty_embeddings", {"embeddings": []}, 400, "embeddings is empty")
    case("empty_sequence", {"embeddings": [[]]}, 400, "embeddings[0] is empty")
    e = batch(2, 3)
    e[0][1] = e[0][1][:3]
    case("ragged_rows", {"embeddings": e}, 400, "embeddings[0][1] has 3 numbers; d_model is 4")
    e = batch(3, 3)
    e[2] = e[2][:2]
    case("ragged_sequences", {"embeddings": e}, 400, "embeddings[2] has 2 rows; embeddings[0] has 3")
    case("wrong_d_model", {"embeddings": [[1, 2, 3, 4, 5]]}, 400,
         "embeddings[0] has 5 numbers; d_model is 4")
    e = batch(1, 2)
    e[0][1][2] = "0.5"
    case("string_number", {"embeddings": e}, 400, "embeddings[0][1][2] is not a number")
    e = seq(3)
    e[2][3] = None
    case("null_number", {"embeddings": e}, 400, "embeddings[2][3] is not a number")
    e = batch(2, 2)
    e[1][0][0] = True
    case("bool_number", {"embeddings": e}, 400, "embeddings[1][0][0] is not a number")
    e = batch(1, 2)
    e[0][0][1] = 1e39
    case("float32_overflow", {"embeddings": e}, 400, "embeddings[0][0][1] = 1e+39 is outside")
    case("row_not_array", {"embeddings": [[row(0), 5]]}, 400, "embeddings[0][1] is a number")

    # ---- base64 embeddings
    v = flat(1, 3)
    v[6] = float("nan")
    case("nan_b64", {"embeddings_b64": b64_floats(v), "shape": [1, 3, D]}, 400,
         "float 6 (embeddings[0][1][2]) is NaN")
    v = flat(2, 2)
    v[13] = float("-inf")
    case("inf_b64", {"embeddings_b64": b64_floats(v), "shape": [2, 2, D]}, 400,
         "float 13 (embeddings[1][1][1]) is infinite")
    good = b64_floats(flat(1, 2))
    case("b64_without_shape", {"embeddings_b64": good}, 400, "embeddings_b64 needs shape")
    case("b64_bad_char", {"embeddings_b64": good[:5] + "*" + good[6:], "shape": [1, 2, D]}, 400,
         "not valid base64: '*' at offset 5")
    case("b64_bad_padding", {"embeddings_b64": good[:-4] + "A=A=", "shape": [2, D]}, 400,
         "not valid base64")
    case("b64_bad_length", {"embeddings_b64": good[:-1], "shape": [1, 2, D]}, 400,
         "not a multiple of 4")
    case("b64_size_mismatch", {"embeddings_b64": good, "shape": [1, 3, D]}, 400,
         "holds 32 bytes; shape [1, 3, 4] needs 48")
    case("b64_not_string", {"embeddings_b64": [1, 2], "shape": [1, D]}, 400,
         "embeddings_b64 must be a base64 string")
    case("shape_d_model", {"embeddings_b64": b64_floats([0.0] * 10), "shape": [2, 5]}, 400,
         "shape[1] = 5 but d_model is 4")
    case("shape_rank", {"embeddings_b64": good, "shape": [8]}, 400, "shape must be")
    case("shape_zero", {"embeddings_b64": "", "shape": [0, D]}, 400,
         "shape[0] must be a positive integer")

    # ---- lengths
    case("lengths_out_of_range", {"embeddings": batch(2, 3), "lengths": [3, 9]}, 400,
         "lengths[1] = 9 is outside 1..3")
    case("lengths_zero", {"embeddings": batch(2, 3), "lengths": [0, 3]}, 400,
         "lengths[0] = 0 is outside 1..3")
    case("lengths_count", {"embeddings": batch(2, 3), "lengths": [3, 3, 3]}, 400,
         "lengths has 3 entries; the batch has 2 sequences")
    case("lengths_not_integer", {"embeddings": batch(2, 3), "lengths": [2.5, 3]}, 400,
         "lengths[0] is a number; expected an integer")
    case("lengths_unbatched_count", {"embeddings": seq(3), "lengths": [2, 2]}, 400,
         "lengths has 2 entries; the batch has 1 sequence")

    # ---- mask
    case("mask_not_object", {"embeddings": batch(1, 3), "mask": [True]}, 400,
         "mask must be an object")
    case("unknown_mask_option", {"embeddings": batch(1, 3), "mask": {"windw": 1}}, 400,
         "mask: unknown option 'windw'")
    case("bad_causal", {"embeddings": batch(1, 3), "mask": {"causal": "yes"}}, 400,
         "mask.causal must be true or false")
    case("bad_window", {"embeddings": batch(1, 3), "mask": {"window": -1}}, 400,
         "mask.window = -1 must not be negative")
    case("bad_window_type", {"embeddings": batch(1, 3), "mask": {"window": "2"}}, 400,
         "mask.window must be a non-negative integer or")
    case("bad_window_side", {"embeddings": batch(1, 3), "mask": {"window": {"left": -2}}}, 400,
         "mask.window.left = -2 must not be negative")
    case("unknown_window_option",
         {"embeddings": batch(1, 3), "mask": {"window": {"left": 1, "up": 1}}}, 400,
         "mask.window: unknown option 'up'")
    case("global_out_of_range", {"embeddings": batch(1, 3), "mask": {"global": [0, 3]}}, 400,
         "mask.global[1] = 3 is outside 0..2")
    case("global_not_array", {"embeddings": batch(1, 3), "mask": {"global": 1}}, 400,
         "mask.global must be an array")
    case("key_padding_length",
         {"embeddings": batch(2, 3), "mask": {"key_padding": [[False] * 3, [False] * 2]}}, 400,
         "mask.key_padding[1] has 2 entries; L is 3")
    case("key_padding_rows", {"embeddings": batch(2, 3), "mask": {"key_padding": [[False] * 3]}},
         400, "mask.key_padding has 1 row; the batch has 2 sequences")
    case("key_padding_not_bool",
         {"embeddings": batch(1, 3), "mask": {"key_padding": [[False, 0, False]]}}, 400,
         "mask.key_padding[0][1] is not a boolean")
    m = [[False] * 3 for _ in range(3)]
    m[1][2] = 0.5
    case("attn_mixed_types", {"embeddings": batch(1, 3), "mask": {"attn": m}}, 400,
         "mask.attn mixes booleans and numbers: mask.attn[1][2] is a number")
    case("attn_row_length",
         {"embeddings": batch(2, 3), "mask": {"attn": [[[0.0] * 3] * 3, [[0.0] * 3, [0.0] * 2,
                                                                          [0.0] * 3]]}}, 400,
         "mask.attn[1][1] has 2 entries; L is 3")
    case("attn_matrix_count",
         {"embeddings": batch(2, 3), "mask": {"attn": [[[True] * 3] * 3] * 3}}, 400,
         "mask.attn has 3 matrices; the batch has 2 sequences")
    case("attn_string", {"embeddings": batch(1, 2), "mask": {"attn": [[True, "x"], [True, True]]}},
         400, "mask.attn[0][1] is a string; expected a boolean or a number")
    case("attn_3d_unbatched", {"embeddings": seq(2), "mask": {"attn": [[[True] * 2] * 2]}}, 400,
         "mask.attn must be [L][L] for a single sequence")
    case("attn_overflow", {"embeddings": batch(1, 2), "mask": {"attn": [[0, 1e39], [0, 0]]}}, 400,
         "mask.attn[0][1] = 1e+39 is over the float32 range")

    # ---- sparse patterns (docs/model.md, "Masks and sparse patterns")
    case("strided_zero", {"embeddings": batch(1, 3), "mask": {"strided": {"stride": 0}}}, 400,
         "mask.strided.stride = 0 must be at least 1")
    case("strided_not_object", {"embeddings": batch(1, 3), "mask": {"strided": 2}}, 400,
         "mask.strided must be an object")
    case("strided_unknown_key", {"embeddings": batch(1, 3), "mask": {"strided": {"step": 2}}}, 400,
         "mask.strided: unknown option 'step'; expected stride")
    case("fixed_summary_too_big",
         {"embeddings": batch(1, 3), "mask": {"fixed": {"block": 8, "summary": 9}}}, 400,
         "mask.fixed.summary = 9 must be below mask.fixed.block = 8")
    case("fixed_no_summary", {"embeddings": batch(1, 3), "mask": {"fixed": {"block": 2}}}, 400,
         "mask.fixed.summary is required")
    case("blocks_no_size", {"embeddings": batch(1, 3), "mask": {"blocks": {"random": 1}}}, 400,
         "mask.blocks.size is required")
    case("blocks_float_window",
         {"embeddings": batch(1, 3), "mask": {"blocks": {"size": 2, "window": 1.5}}}, 400,
         "mask.blocks.window must be an integer, not a number")
    case("blocks_negative_seed",
         {"embeddings": batch(1, 3), "mask": {"blocks": {"size": 2, "seed": -4}}}, 400,
         "mask.blocks.seed = -4 must not be negative")
    case("blocks_size_too_large",
         {"embeddings": batch(1, 3), "mask": {"blocks": {"size": 2 ** 31}}}, 400,
         "mask.blocks.size = 2147483648 is too large")
    case("bad_attention_format", dict(ok, attention_format="coo"), 400,
         "attention_format must be \"dense\" or \"csr\", not 'coo'")
    case("attention_format_not_string", dict(ok, attention_format=1), 400,
         "attention_format must be \"dense\" or \"csr\", not a number")
    case("csr_too_large",
         {"embeddings": batch(2, 8), "attention_layers": "all", "attention_format": "csr"}, 413,
         "(csr: 128 allowed pairs x 2 heads x float32 x 2 layers) is over "
         "limits.max_attention_bytes (1024)")

    # ---- options
    case("bad_attention", dict(ok, attention="max"), 400,
         "attention must be \"heads\", \"mean\" or \"none\"")
    case("bad_precision", dict(ok, precision=12), 400, "precision = 12 is outside 1..9")
    case("precision_not_integer", dict(ok, precision="9"), 400,
         "precision must be an integer 1..9")
    case("bad_encoding", dict(ok, encoding="hex"), 400,
         "encoding must be \"json\" or \"base64\", not 'hex'")
    case("layer_out_of_range", dict(ok, attention_layers=[2]), 400,
         "attention_layers[0] = 2 is outside 0..1")
    case("layer_negative", dict(ok, attention_layers=[1, -1]), 400,
         "attention_layers[1] = -1 is outside 0..1")
    case("layers_empty", dict(ok, attention_layers=[]), 400, "attention_layers is empty")
    case("layers_duplicate", dict(ok, attention_layers=[0, 0]), 400,
         "attention_layers[1] = 0 is listed twice")
    case("layers_bad_string", dict(ok, attention_layers="first"), 400,
         "attention_layers must be \"last\", \"all\" or an array")

    # ---- limits (413), checked before the rest of the input
    case("too_many_sequences", {"embeddings": batch(5, 1)}, 413,
         "batch of 5 sequences is over limits.max_batch (4)")
    case("too_long_sequence", {"embeddings": seq(9)}, 413,
         "sequence length 9 is over limits.max_seq_len (8)")
    case("too_many_tokens", {"embeddings": batch(3, 6)}, 413, "limits.max_batch_tokens (16)")
    case("attention_too_large", {"embeddings": batch(2, 8), "attention_layers": "all"}, 413,
         "is over limits.max_attention_bytes (1024); ask for \"attention\": \"mean\" or \"none\"")
    case("too_many_sequences_ragged", {"embeddings": [seq(1), [], [], [], "x"]}, 413,
         "limits.max_batch (4)")
    case("b64_too_many_sequences", {"embeddings_b64": "AAAA", "shape": [100000, 8, D]}, 413,
         "batch of 100000 sequences is over limits.max_batch (4)")
    case("b64_huge_shape",
         {"embeddings_b64": "AAAA", "shape": [4, 9223372036854775807, D]}, 413,
         "limits.max_seq_len (8)")


def main():
    if len(sys.argv) != 2:
        sys.exit("usage: make_invalid_requests.py OUT_DIR")
    out = sys.argv[1]
    os.makedirs(out, exist_ok=True)
    make()
    expected = {"_config": CONFIG}
    for name in sorted(CASES):
        data, status, message = CASES[name]
        with open(os.path.join(out, name), "wb") as f:
            f.write(data)
        expected[name] = {"status": status, "message": message}
    with open(os.path.join(out, "expected.json"), "w") as f:
        json.dump(expected, f, indent=1, sort_keys=False)
        f.write("\n")
    # Files of earlier runs that are no longer cases would fail the tests.
    for name in sorted(os.listdir(out)):
        if name != "expected.json" and name not in CASES:
            os.remove(os.path.join(out, name))
    print("%d invalid requests in %s" % (len(CASES), out))


if __name__ == "__main__":
    main()
