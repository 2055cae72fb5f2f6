"""safetensors_io - a tiny reader and writer for the safetensors format.

The format (https://github.com/huggingface/safetensors):

    8 bytes   little-endian u64 N, the header length
    N bytes   JSON: {"name": {"dtype": "F32", "shape": [..], "data_offsets": [b, e]},
                     ..., "__metadata__": {"key": "string", ...}}
              padded with spaces so that 8 + N is a multiple of 8
    the rest  the data section; offsets are relative to its start

save_file() stores tensors in sorted-name order, contiguously, with no holes,
all values little-endian.  It writes nothing but what it is given, so the same
tensors and metadata always give the same bytes.

    from safetensors_io import save_file, load_file
    save_file({"w": torch.ones(2, 3)}, "w.safetensors", {"note": "hi"})
    tensors, metadata = load_file("w.safetensors")            # numpy arrays
    tensors, metadata = load_file("w.safetensors", "pt")      # torch tensors

Only numpy is required; torch is used when it is importable (torch tensors as
input, BF16 in either direction).
"""

import json
import struct

import numpy as np

try:
    import torch
except ImportError:  # numpy-only use still works, without BF16
    torch = None

# safetensors dtype name -> numpy dtype (little-endian).  BF16 has no numpy
# dtype; it travels as its raw 16 bits.
_NP_DTYPES = {
    "F64": np.dtype("<f8"),
    "F32": np.dtype("<f4"),
    "F16": np.dtype("<f2"),
    "BF16": np.dtype("<u2"),
    "I64": np.dtype("<i8"),
    "I32": np.dtype("<i4"),
    "U8": np.dtype("u1"),
    "BOOL": np.dtype("?"),
}
# numpy (kind, itemsize) -> safetensors dtype name, for numpy input.
_FROM_NP = {(np.dtype(v).kind, np.dtype(v).itemsize): k
            for k, v in _NP_DTYPES.items() if k != "BF16"}

_TORCH_DTYPES = {}
if torch is not None:
    _TORCH_DTYPES = {
        torch.float64: "F64",
        torch.float32: "F32",
        torch.float16: "F16",
        torch.bfloat16: "BF16",
        torch.int64: "I64",
        torch.int32: "I32",
        torch.uint8: "U8",
        torch.bool: "BOOL",
    }

METADATA_KEY = "__metadata__"


def _to_bytes(name, value):
    """Returns (dtype name, shape list, little-endian bytes) for one tensor."""
    if torch is not None and isinstance(value, torch.Tensor):
        t = value.detach().cpu().contiguous()
        if t.dtype not in _TORCH_DTYPES:
            raise TypeError(f"{name}: unsupported torch dtype {t.dtype}")
        dtype = _TORCH_DTYPES[t.dtype]
        shape = list(t.shape)
        if dtype == "BF16":
            # The bits of the bfloat16 values torch already rounded
            # (round-to-nearest-even from float32).
            arr = t.view(torch.int16).numpy().astype("<i2")
        else:
            arr = t.numpy()
    else:
        arr = np.asarray(value)
        key = (arr.dtype.kind, arr.dtype.itemsize)
        if key not in _FROM_NP:
            raise TypeError(f"{name}: unsupported numpy dtype {arr.dtype}")
        dtype = _FROM_NP[key]
        shape = list(arr.shape)
    if dtype != "BF16":
        arr = np.ascontiguousarray(arr, dtype=_NP_DTYPES[dtype])
    return dtype, shape, np.ascontiguousarray(arr).tobytes()


def save_file(tensors, path, metadata=None):
    """Writes tensors (name -> torch.Tensor or numpy array) and optional
    metadata (str -> str) to path in the safetensors format."""
    if metadata is not None:
        for k, v in metadata.items():
            if not isinstance(k, str) or not isinstance(v, str):
                raise TypeError(f"metadata {k!r}: keys and values must be strings")
    header = {}
    if metadata:
        header[METADATA_KEY] = dict(metadata)
    chunks = []
    offset = 0
    for name in sorted(tensors):
        if name == METADATA_KEY:
            raise ValueError(f"{METADATA_KEY!r} cannot name a tensor")
        dtype, shape, data = _to_bytes(name, tensors[name])
        header[name] = {"dtype": dtype, "shape": shape,
                        "data_offsets": [offset, offset + len(data)]}
        chunks.append(data)
        offset += len(data)
    text = json.dumps(header, separators=(",", ":"), ensure_ascii=False).encode("utf-8")
    text += b" " * (-len(text) % 8)
    with open(path, "wb") as f:
        f.write(struct.pack("<Q", len(text)))
        f.write(text)
        for data in chunks:
            f.write(data)


def read_header(path):
    """Returns (header dict without metadata, metadata dict, data start offset)."""
    with open(path, "rb") as f:
        raw = f.read(8)
        if len(raw) != 8:
            raise ValueError(f"{path}: shorter than the 8-byte header length")
        (n,) = struct.unpack("<Q", raw)
        text = f.read(n)
        if len(text) != n:
            raise ValueError(f"{path}: header length {n} runs past the end of the file")
    header = json.loads(text.decode("utf-8"))
    if not isinstance(header, dict):
        raise ValueError(f"{path}: header is not a JSON object")
    metadata = header.pop(METADATA_KEY, None) or {}
    return header, metadata, 8 + n


def load_file(path, framework="np"):
    """Reads a safetensors file; returns (name -> tensor, metadata dict).

    framework "np" gives numpy arrays (BF16 widened exactly to float32, since
    numpy has no bfloat16); "pt" gives torch tensors of the stored dtype.
    Raises ValueError when the offsets do not tile the data section exactly.
    """
    header, metadata, start = read_header(path)
    with open(path, "rb") as f:
        f.seek(start)
        data = f.read()
    spans = sorted((v["data_offsets"][0], v["data_offsets"][1], k) for k, v in header.items())
    pos = 0
    for b, e, k in spans:
        if b != pos or e < b:
            raise ValueError(f"{path}: tensor {k}: offsets [{b}, {e}] leave a hole or overlap")
        pos = e
    if pos != len(data):
        raise ValueError(f"{path}: data section is {len(data)} bytes, tensors cover {pos}")
    out = {}
    for name, info in header.items():
        dtype, shape = info["dtype"], info["shape"]
        if dtype not in _NP_DTYPES:
            raise ValueError(f"{path}: tensor {name}: unsupported dtype {dtype}")
        b, e = info["data_offsets"]
        npdt = _NP_DTYPES[dtype]
        numel = int(np.prod(shape, dtype=np.int64))
        if e - b != numel * npdt.itemsize:
            raise ValueError(f"{path}: tensor {name}: {e - b} bytes for shape {shape} {dtype}")
        arr = np.frombuffer(data[b:e], dtype=npdt).reshape(shape).copy()
        if framework == "pt":
            if torch is None:
                raise RuntimeError("framework 'pt' needs torch")
            if dtype == "BF16":
                out[name] = torch.from_numpy(arr.astype(np.int16)).view(torch.bfloat16)
            else:
                out[name] = torch.from_numpy(arr.astype(npdt.newbyteorder("=")))
        else:
            if dtype == "BF16":
                arr = (arr.astype(np.uint32) << 16).view(np.float32)
            out[name] = arr
    return out, metadata
