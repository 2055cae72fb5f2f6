#!/usr/bin/env python3
"""make_bad_safetensors.py - writes the safetensors test fixtures.

    /usr/bin/python3 tools/make_bad_safetensors.py tests/fixtures/safetensors

writes, deterministically (same bytes on every run), under the given directory:

  good/   valid files with hand-picked contents, and good/expected.json giving
          each file's tensors in header order: name, dtype, shape and the
          float32 values st_tensor_read_f32 must produce ("inf", "-inf" and
          "nan" for non-finite values), or "read_error" for dtypes it refuses;
          and "metadata" for files with __metadata__.
  bad/    files each broken in one way at the format level, and
          bad/expected.json: {"file": "substring of st_open's error message"}.
  model/  a tiny attnd model (d_model 4, n_heads 2, n_kv_heads 2, d_ff 8,
          n_layers 1, bias true) in PyTorch nn.TransformerEncoderLayer naming,
          valid at the format level, and variants the model loader refuses;
          model/expected.json: {"file": {"ok": true}} or
          {"file": {"ok": false, "error": "substring"}}.

Python 3 standard library only (struct and json): the expected values are
computed here independently of the C reader.
"""

import json
import math
import os
import struct
import sys

# struct format of one element, per dtype; F16, BF16 and F8 are given as raw
# bit patterns.
FMT = {
    "BOOL": "B", "U8": "B", "I8": "b", "I16": "h", "U16": "H", "F16": "H", "BF16": "H",
    "I32": "i", "U32": "I", "F32": "f", "F64": "d", "I64": "q", "U64": "Q",
    "F8_E4M3": "B", "F8_E5M2": "B",
}

INF = float("inf")
NAN = float("nan")


# ---- float32 values, computed without the C code -------------------------

def f32_of_float(x):
    """x (a Python float) rounded to float32, nearest-even, overflow to +-inf."""
    if math.isnan(x) or math.isinf(x):
        return x
    try:
        return struct.unpack("<f", struct.pack("<f", x))[0]
    except OverflowError:  # rounds past FLT_MAX
        return math.copysign(INF, x)


def f32_of_int(v):
    """The integer v rounded to float32 exactly (nearest, ties to even), in
    integer arithmetic so large 64-bit values are not rounded twice."""
    if v == 0:
        return 0.0
    sign, a = (-1.0 if v < 0 else 1.0), abs(v)
    shift = a.bit_length() - 24
    if shift > 0:
        q, r = divmod(a, 1 << shift)
        half = 1 << (shift - 1)
        if r > half or (r == half and q & 1):
            q += 1
        a = q << shift
    return sign * float(a)  # at most 25 significant bits: exact in a double


def f16_bits_value(b):
    return struct.unpack("<e", struct.pack("<H", b))[0]


def bf16_bits_value(b):
    return struct.unpack("<f", struct.pack("<I", b << 16))[0]


def expected_f32(dtype, values):
    """The float32 values st_tensor_read_f32 must give for raw values."""
    if dtype in ("F32", "F64"):
        return [f32_of_float(float(v)) for v in values]
    if dtype == "F16":
        return [f16_bits_value(v) for v in values]
    if dtype == "BF16":
        return [bf16_bits_value(v) for v in values]
    if dtype == "BOOL":
        return [1.0 if v else 0.0 for v in values]
    return [f32_of_int(int(v)) for v in values]


def json_float(x):
    if math.isnan(x):
        return "nan"
    if math.isinf(x):
        return "inf" if x > 0 else "-inf"
    return x


# ---- writing files ---------------------------------------------------------

def pack(dtype, values):
    return struct.pack("<%d%s" % (len(values), FMT[dtype]), *values)


def numel(shape):
    n = 1
    for d in shape:
        n *= d
    return n


def encode_header(header, align):
    """Compact JSON, padded with spaces to a multiple of align bytes (as the
    Rust writer does, so the data section is aligned); align 0 pads it to an
    odd length instead, so no multi-byte element is aligned."""
    text = json.dumps(header, separators=(",", ":"), allow_nan=False).encode()
    if align:
        text += b" " * (-len(text) % align)
    elif len(text) % 2 == 0:
        text += b" "
    return text


def write_bytes(path, blob):
    with open(path, "wb") as f:
        f.write(blob)


def write_raw(path, header, data=b"", length=None):
    """A file from a header (bytes, str or JSON-able object) and data bytes;
    length overrides the header length field."""
    if isinstance(header, str):
        header = header.encode()
    elif not isinstance(header, bytes):
        header = encode_header(header, 8)
    if length is None:
        length = len(header)
    write_bytes(path, struct.pack("<Q", length) + header + data)


def build(tensors, metadata=None, metadata_at=0, data_order=None, align=8):
    """A valid file: tensors is a list of (name, dtype, shape, values) in
    header order; data_order (names) the order of their bytes in the data
    section (default: header order).  Returns the file's bytes."""
    blobs = {}
    for name, dtype, shape, values in tensors:
        assert numel(shape) == len(values), name
        blobs[name] = pack(dtype, values)
    offsets, data = {}, b""
    for name in data_order or [t[0] for t in tensors]:
        offsets[name] = [len(data), len(data) + len(blobs[name])]
        data += blobs[name]
    header = {}
    for i, (name, dtype, shape, _) in enumerate(tensors):
        if metadata is not None and i == metadata_at:
            header["__metadata__"] = metadata
        header[name] = {"dtype": dtype, "shape": list(shape), "data_offsets": offsets[name]}
    if metadata is not None and metadata_at >= len(tensors):
        header["__metadata__"] = metadata
    text = encode_header(header, align)
    return struct.pack("<Q", len(text)) + text + data


def clean(directory):
    """Removes what an earlier run wrote, so a renamed fixture leaves no stale file."""
    os.makedirs(directory, exist_ok=True)
    for name in sorted(os.listdir(directory)):
        if name.endswith(".safetensors") or name == "expected.json":
            os.remove(os.path.join(directory, name))


def write_json(path, obj):
    with open(path, "w") as f:
        json.dump(obj, f, indent=2, allow_nan=False)
        f.write("\n")


# ---- good/ -----------------------------------------------------------------

def good_files():
    """(file name, tensors, build options, extra expectations) of the valid files."""
    f64_tie = float.fromhex("0x1.ffffffp127")          # FLT_MAX + half ulp: rounds to inf
    f64_below = float.fromhex("0x1.fffffefffffffp127")  # just below the tie: FLT_MAX
    dtypes = [
        ("f32", "F32", [2, 3], [1.0, -2.5, 0.1, 3.4028234663852886e38, 1e-45, -0.0]),
        ("f32_special", "F32", [3], [INF, -INF, NAN]),
        # subnormals (min, max, negative min), -0, 65504, +-inf, NaN, 1, min normal, -2, ~1/3
        ("f16", "F16", [12], [0x0001, 0x8000, 0x7BFF, 0x7C00, 0xFC00, 0x7E00,
                              0x3C00, 0x03FF, 0x0400, 0xC000, 0x3555, 0x8001]),
        ("bf16", "BF16", [2, 4], [0x3F80, 0xBF80, 0x7F80, 0xFF80, 0x7FC0, 0x0001, 0x4049, 0x8000]),
        ("i32", "I32", [6], [0, 1, -1, 2147483647, -2147483648, 16777217]),
        ("u8", "U8", [5], [0, 1, 127, 128, 255]),
        ("bool", "BOOL", [3], [1, 0, 1]),
        ("f64", "F64", [10], [1.0, -0.0, 0.1, 1e300, -1e300, NAN, 1e-300, 1e-40,
                              f64_tie, f64_below]),
        ("i64", "I64", [6], [0, -1, 2**53 + 1, -2**63, 2**63 - 1, 123456789]),
        ("i8", "I8", [4], [-128, -1, 0, 127]),
        ("i16", "I16", [4], [-32768, -1, 1, 32767]),
        ("u16", "U16", [3], [0, 1, 65535]),
        ("u32", "U32", [3], [0, 4294967295, 16777217]),
        ("u64", "U64", [3], [0, 2**64 - 1, 2**24 + 1]),
        ("scalar", "F32", [], [42.5]),
        ("empty", "F32", [0], []),
        ("empty_2d", "I32", [2, 0], []),
        ("max_dims", "U8", [1] * 8, [7]),
    ]
    meta = [("w", "F32", [2, 2], [1.0, 2.0, 3.0, 4.0]), ("b", "F32", [2], [0.5, -0.5])]
    unaligned = [("x", "F32", [3], [1.5, -0.25, 1e-38]), ("y", "F64", [2], [2.0, -3.5]),
                 ("z", "F16", [3], [0x3C00, 0x0001, 0xFBFF]), ("w", "I64", [1], [-7])]
    zeros = [("a", "F32", [2], [1.0, 2.0]), ("z1", "F32", [0], []), ("z2", "U8", [0, 3], []),
             ("b", "U8", [1], [9])]
    f8 = [("e4m3", "F8_E4M3", [2], [0x38, 0xB8]), ("e5m2", "F8_E5M2", [1], [0x3C])]
    return [
        ("dtypes.safetensors", dtypes, {}, {}),
        # __metadata__ between the tensors, and data in a different order from the header
        ("metadata.safetensors", meta,
         {"metadata": {"format": "pt", "note": "hello, world"}, "metadata_at": 1,
          "data_order": ["b", "w"]}, {}),
        ("empty.safetensors", [], {}, {}),
        ("only_metadata.safetensors", [], {"metadata": {"a": "b"}}, {}),
        # odd header length: every multi-byte element is unaligned
        ("unaligned.safetensors", unaligned, {"align": 0}, {}),
        # empty tensors at the same offsets as others
        ("zeros.safetensors", zeros, {"data_order": ["z2", "a", "z1", "b"]}, {}),
        ("f8.safetensors", f8, {},
         {"e4m3": "tensor 'e4m3' has dtype F8_E4M3, which cannot be read as F32",
          "e5m2": "tensor 'e5m2' has dtype F8_E5M2, which cannot be read as F32"}),
    ]


def write_good(directory):
    clean(directory)
    expected = {}
    for fname, tensors, opts, read_errors in good_files():
        blob = build(tensors, **opts)
        if opts.get("align") == 0:
            assert struct.unpack("<Q", blob[:8])[0] % 2 == 1, "unaligned.safetensors is aligned"
        write_bytes(os.path.join(directory, fname), blob)
        entry = {"tensors": []}
        for name, dtype, shape, values in tensors:
            t = {"name": name, "dtype": dtype, "shape": shape}
            if name in read_errors:
                t["read_error"] = read_errors[name]
            else:
                t["values"] = [json_float(x) for x in expected_f32(dtype, values)]
            entry["tensors"].append(t)
        if "metadata" in opts:
            entry["metadata"] = opts["metadata"]
        expected[fname] = entry
    write_json(os.path.join(directory, "expected.json"), expected)


# ---- bad/ ------------------------------------------------------------------

def one(dtype="F32", shape=(2,), offsets=(0, 8), **fields):
    """A header with one tensor 'a'; a field given as None is left out, and
    fields (e.g. data_offsets=8) replace whole entries as they are."""
    entry = {"dtype": dtype, "shape": shape, "data_offsets": offsets}
    entry.update(fields)
    for key, value in list(entry.items()):
        if value is None:
            del entry[key]
        elif isinstance(value, tuple):
            entry[key] = list(value)
    return {"a": entry}


def write_bad(directory):
    clean(directory)
    d8 = bytes(range(8))
    expected = {}

    def bad(fname, expect, header, data=b"", length=None):
        write_raw(os.path.join(directory, fname), header, data, length)
        expected[fname] = expect

    def bad_bytes(fname, expect, blob):
        write_bytes(os.path.join(directory, fname), blob)
        expected[fname] = expect

    # the file itself
    good = build([("a", "F32", [4], [1.0, 2.0, 3.0, 4.0]), ("b", "F32", [4], [5.0, 6.0, 7.0, 8.0])])
    n = struct.unpack("<Q", good[:8])[0]
    bad_bytes("truncated.safetensors",
              "tensor 'b': data_offsets [16, 32] run past the end of the data section (20 bytes)",
              good[:8 + n + 20])
    bad_bytes("zero_length.safetensors",
              "file is 0 bytes, shorter than the 8-byte header length", b"")
    bad_bytes("too_short.safetensors",
              "file is 5 bytes, shorter than the 8-byte header length", b"\x02\x00\x00\x00\x00")
    bad("header_past_end.safetensors",
        "header length 1000 runs past the end of the file (size 24)", "{}" + " " * 14, length=1000)
    bad("header_huge.safetensors",
        "header length 200000000 is over the limit of 100000000 bytes", "{}      ",
        length=200_000_000)
    bad("header_length_max.safetensors",
        "header length 18446744073709551615 is over the limit of 100000000 bytes", "{}      ",
        length=2**64 - 1)

    # the header's JSON (the texts after "header is not valid JSON: " are jansson's)
    bad("header_empty.safetensors", "header is not valid JSON: '[' or '{' expected", b"")
    bad("bad_json.safetensors", "header is not valid JSON: '}' expected",
        '{"a":{"dtype":"F32","shape":[2],"data_offsets":[0,8]}', d8)
    bad("json_trailing_garbage.safetensors", "header is not valid JSON: end of file expected",
        '{} {}')
    bad("json_invalid_utf8.safetensors",
        "header is not valid JSON: unable to decode byte 0xff", b'{"\xff":1}')
    bad("json_nul_in_name.safetensors", "header is not valid JSON: NUL byte in object key",
        '{"a\\u0000b":1}')
    bad("header_not_object.safetensors", "header is not a JSON object", "[1, 2]")
    bad("duplicate_key.safetensors", "header is not valid JSON: duplicate object key",
        '{"a":{"dtype":"F32","shape":[2],"data_offsets":[0,8]},'
        '"a":{"dtype":"F32","shape":[2],"data_offsets":[0,8]}}', d8)

    # one entry
    bad("entry_not_object.safetensors", "tensor 'a' is not an object", {"a": [1, 2]})
    bad("missing_dtype.safetensors", "tensor 'a' has no dtype", one(dtype=None), d8)
    bad("dtype_not_string.safetensors", "tensor 'a': dtype is not a string", one(dtype=4), d8)
    bad("unknown_dtype.safetensors", "tensor 'a' has unknown dtype 'Q8'", one(dtype="Q8"), d8)
    bad("dtype_lower_case.safetensors", "tensor 'a' has unknown dtype 'f32'", one(dtype="f32"), d8)
    bad("missing_shape.safetensors", "tensor 'a' has no shape", one(shape=None), d8)
    bad("shape_not_array.safetensors", "tensor 'a': shape is not an array", one(shape=2), d8)
    bad("shape_negative.safetensors", "tensor 'a': shape[1] is not a non-negative integer",
        one(shape=[2, -1]), d8)
    bad("shape_float.safetensors", "tensor 'a': shape[0] is not a non-negative integer",
        one(shape=[2.0]), d8)
    bad("shape_too_many_dims.safetensors", "tensor 'a': shape has 9 dimensions, more than 8",
        one(shape=[1] * 9, offsets=[0, 4]), d8[:4])
    bad("shape_numel_overflow.safetensors",
        "tensor 'a': shape [4294967296, 4294967296, 4294967296] of F32 is too large",
        one(shape=[2**32] * 3), d8)
    bad("shape_bytes_overflow.safetensors",
        "tensor 'a': shape [4611686018427387904] of F32 is too large", one(shape=[2**62]), d8)
    bad("missing_data_offsets.safetensors", "tensor 'a' has no data_offsets",
        one(data_offsets=None), d8)
    arity = "tensor 'a': data_offsets is not an array of 2 non-negative integers"
    bad("offsets_not_array.safetensors", arity, one(data_offsets=8), d8)
    bad("offsets_one_entry.safetensors", arity, one(offsets=[8]), d8)
    bad("offsets_three_entries.safetensors", arity, one(offsets=[0, 8, 8]), d8)
    bad("offsets_negative.safetensors", arity, one(offsets=[-8, 0]), d8)
    bad("offsets_float.safetensors", arity, one(offsets=[0.0, 8.0]), d8)
    bad("offsets_begin_after_end.safetensors", "tensor 'a': data_offsets [8, 4] begin after end",
        one(shape=[1], offsets=[8, 4]), d8)
    bad("offsets_out_of_range.safetensors",
        "tensor 'a': data_offsets [1000, 1008] run past the end of the data section (8 bytes)",
        one(offsets=[1000, 1008]), d8)
    bad("size_mismatch.safetensors",
        "tensor 'a': shape [2, 3] of F32 needs 24 bytes, data_offsets give 20",
        one(shape=[2, 3], offsets=[0, 20]), bytes(20))

    # the tensors together
    def two(a, b):
        return {"a": {"dtype": "F32", "shape": [2], "data_offsets": a},
                "b": {"dtype": "F32", "shape": [2], "data_offsets": b}}

    bad("overlap.safetensors", "tensors 'a' and 'b' overlap", two([0, 8], [4, 12]), bytes(12))
    bad("overlap_same.safetensors", "tensors 'a' and 'b' overlap", two([0, 8], [0, 8]), d8)
    bad("empty_inside_tensor.safetensors",
        "tensor 'z' (0 bytes at offset 4) lies inside tensor 'a'",
        {"a": {"dtype": "F32", "shape": [2], "data_offsets": [0, 8]},
         "z": {"dtype": "F32", "shape": [0], "data_offsets": [4, 4]}}, d8)
    bad("hole.safetensors",
        "data section is not fully covered: 4 bytes at offset 8 belong to no tensor",
        two([0, 8], [12, 20]), bytes(20))
    bad("hole_at_start.safetensors",
        "data section is not fully covered: 4 bytes at offset 0 belong to no tensor",
        one(offsets=[4, 12]), bytes(12))
    bad("trailing_bytes.safetensors",
        "data section is not fully covered: 4 bytes at offset 8 belong to no tensor",
        one(), bytes(12))
    bad("no_tensors_but_data.safetensors",
        "data section is not fully covered: 3 bytes at offset 0 belong to no tensor", {}, b"abc")

    # __metadata__
    bad("metadata_not_string.safetensors", "__metadata__ value 'k' is not a string",
        {"__metadata__": {"format": "pt", "k": 1}, **one()}, d8)
    bad("metadata_not_object.safetensors", "__metadata__ is not an object",
        {"__metadata__": ["format", "pt"], **one()}, d8)

    write_json(os.path.join(directory, "expected.json"), expected)


# ---- model/ ------------------------------------------------------------------

D, F = 4, 8  # d_model, d_ff; n_heads = n_kv_heads = 2, n_layers 1, bias true

MODEL = [
    ("self_attn.in_proj_weight", [3 * D, D]),
    ("self_attn.in_proj_bias", [3 * D]),
    ("self_attn.out_proj.weight", [D, D]),
    ("self_attn.out_proj.bias", [D]),
    ("linear1.weight", [F, D]),
    ("linear1.bias", [F]),
    ("linear2.weight", [D, F]),
    ("linear2.bias", [D]),
    ("norm1.weight", [D]),
    ("norm1.bias", [D]),
    ("norm2.weight", [D]),
    ("norm2.bias", [D]),
]


def model_values(index, name, shape):
    """Small deterministic values: 0.01 * k for k in -10..10, a different
    pattern per tensor; LayerNorm weights are 1."""
    n = numel(shape)
    if name.startswith("norm") and name.endswith(".weight"):
        return [1.0] * n
    return [0.01 * (((7 * k + 3 * index) % 21) - 10) for k in range(n)]


def model_tensors(shapes=None, prefix=""):
    return [(prefix + name, "F32", shape, model_values(i, name, shape))
            for i, (name, shape) in enumerate(shapes or MODEL)]


def write_model(directory):
    clean(directory)
    expected = {}

    def model(fname, tensors, error=None):
        write_bytes(os.path.join(directory, fname), build(tensors))
        expected[fname] = {"ok": True} if error is None else {"ok": False, "error": error}

    def replace(tensors, name, new):
        return [new if t[0] == name else t for t in tensors]

    valid = model_tensors()
    model("valid.safetensors", valid)
    model("prefixed.safetensors", model_tensors(prefix="layers.0."))
    model("missing_tensor.safetensors",
          [t for t in valid if t[0] != "self_attn.out_proj.weight"],
          "missing tensor 'self_attn.out_proj.weight'")
    model("extra_tensor.safetensors",
          valid + [("extra.weight", "F32", [D], [0.5] * D)],
          "unexpected tensor 'extra.weight'")
    model("wrong_shape.safetensors",
          replace(valid, "linear1.weight",
                  ("linear1.weight", "F32", [F, 3], [0.01 * k for k in range(F * 3)])),
          "tensor 'linear1.weight' has shape [8, 3], expected [8, 4]")
    model("wrong_dtype.safetensors",
          replace(valid, "norm1.weight", ("norm1.weight", "I32", [D], [1] * D)),
          "tensor 'norm1.weight' has dtype I32")
    b2 = next(t for t in valid if t[0] == "linear2.bias")
    model("nan_value.safetensors",
          replace(valid, "linear2.bias", (b2[0], "F32", b2[2], b2[3][:3] + [NAN])),
          "tensor 'linear2.bias' has a non-finite value at index 3")
    model("in_proj_and_q_proj.safetensors",
          valid + [("self_attn.q_proj_weight", "F32", [D, D], [0.02] * (D * D))],
          "unexpected tensor 'self_attn.q_proj_weight'")
    write_json(os.path.join(directory, "expected.json"), expected)


def main(argv):
    if len(argv) != 2:
        sys.stderr.write("usage: %s OUTPUT_DIR\n" % argv[0])
        return 2
    out = argv[1]
    write_good(os.path.join(out, "good"))
    write_bad(os.path.join(out, "bad"))
    write_model(os.path.join(out, "model"))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
