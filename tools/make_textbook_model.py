#!/usr/bin/python3
"""make_textbook_model.py - writes config/textbook.safetensors, the model that
runs the textbook's worked example ("the ring fell") exactly on attnd.

    /usr/bin/python3 tools/make_textbook_model.py config/textbook.safetensors
    build/attnd --config config/textbook.json        # from the repository root

One block, d_model 4, one head (head size 4), d_ff 4, bias false.  The three
tokens are the one-hot embeddings e0 ("the"), e1 ("ring"), e2 ("fell"), and
the in-projection holds the example's Q, K and V as columns, so x W^T gives
exactly Q = [[1,0,0,0],[0,1,1,0],[0,1,0,0]], K = [[1,0,0,0],[0,1,0,0],
[0,1,1,0]], V = [[1,1,0,0],[0,0,2,2],[3,0,0,3]] and the attention weights are
softmax(Q K^T / 2) ~ [[0.452,0.274,0.274],[0.186,0.307,0.507],
[0.233,0.384,0.384]].  The output projection is the identity, the FFN is zero
and the LayerNorms have unit weight, so the block's outputs are
LN2(LN1(x + A V)).  The page at / recognises this file by its sha256.

Python 3 standard library only; the same bytes on every run.
"""

import json
import struct
import sys

Q = [[1, 0, 0, 0], [0, 1, 1, 0], [0, 1, 0, 0]]
K = [[1, 0, 0, 0], [0, 1, 0, 0], [0, 1, 1, 0]]
V = [[1, 1, 0, 0], [0, 0, 2, 2], [3, 0, 0, 3]]
D = 4


def in_proj():
    """[3*D, D]: W[o][i] = M[i][o] for token i's one-hot row, for M = Q, K, V."""
    w = []
    for m in (Q, K, V):
        for o in range(D):
            w.append([float(m[i][o]) if i < len(m) else 0.0 for i in range(D)])
    return w


def eye():
    return [[1.0 if i == j else 0.0 for j in range(D)] for i in range(D)]


def zeros():
    return [[0.0] * D for _ in range(D)]


def flat(t):
    return [v for row in t for v in row] if isinstance(t[0], list) else list(t)


def shape(t):
    return [len(t), len(t[0])] if isinstance(t[0], list) else [len(t)]


TENSORS = {
    "self_attn.in_proj_weight": in_proj(),
    "self_attn.out_proj.weight": eye(),
    "linear1.weight": zeros(),
    "linear2.weight": zeros(),
    "norm1.weight": [1.0] * D,
    "norm2.weight": [1.0] * D,
}


def main():
    out_path = sys.argv[1] if len(sys.argv) > 1 else "config/textbook.safetensors"
    header, data = {}, b""
    for name in sorted(TENSORS):
        t = TENSORS[name]
        blob = struct.pack("<%df" % len(flat(t)), *flat(t))
        header[name] = {"dtype": "F32", "shape": shape(t),
                        "data_offsets": [len(data), len(data) + len(blob)]}
        data += blob
    header["__metadata__"] = {"description": "the textbook's 'the ring fell' example: "
                                             "tools/make_textbook_model.py"}
    text = json.dumps(header, separators=(",", ":")).encode()
    text += b" " * ((8 - (8 + len(text)) % 8) % 8)
    with open(out_path, "wb") as f:
        f.write(struct.pack("<Q", len(text)) + text + data)


if __name__ == "__main__":
    main()
