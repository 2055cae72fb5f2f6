#!/usr/bin/python3
"""ort_quant.py - ONNX Runtime's dynamic int8 of the bench's block, for the int8 part.

    /usr/bin/python3 bench/ort_quant.py IN.onnx OUT.onnx

IN is the block bench/torch_bench.py export writes (float32).  OUT is the
model onnxruntime.quantization.quantize_dynamic(IN, OUT) writes with its
defaults (weight_type QInt8, per_channel False, reduce_range False,
MatMulConstBOnly): each MatMul whose B is a weight becomes

    DynamicQuantizeLinear(A) -> A_q (uint8), A_scale, A_zero_point
    MatMulInteger(A_q, W_q, A_zero_point, 0) -> Cast(float)
    -> Mul(A_scale * W_scale)

W_q = W / W_scale rounded half to even, in [-127, 127], W_scale = max |W| /
127 (symmetric, one scale a tensor); A is quantised at run time, one uint8
scale and zero point for the whole tensor.  ONNX Runtime's graph optimiser
(level "all", as bench/ort_bench.js runs it) fuses each such group into its
DynamicQuantizeMatMul kernel (MLAS's u8s8 GEMM: AVX512_VNNI, AMX where the
CPU has them).  onnxruntime's Python package is not in Debian, so this
writes the same graph with Debian's python3-onnx.

The export's attention output Linear is a Gemm (MultiheadAttention's 2-D
reshape), which quantize_dynamic would leave in float32 (Gemm is not among
its integer ops).  A BERT exported by transformers has that Linear as a
MatMul on the 3-D hidden states, so it is first rewritten as one here
(MatMul by B transposed, then Add of the bias): all four Linears in int8,
as attnd's model.dtype int8 has them.  The attention's own products stay
float32, as in both.

Prints what it rewrote.  Exit status 3 means "cannot do this here" (reason
on stdout).
"""
import sys


def fail(reason):
    """Prints why this cannot run and exits with status 3."""
    print(f"SKIP: {reason}")
    sys.exit(3)


try:
    import numpy as np
    import onnx
    from onnx import TensorProto, helper, numpy_helper
except Exception as e:  # ImportError, or a broken install
    fail(f"{sys.executable} cannot import onnx and numpy ({type(e).__name__}: {e}; "
         "apt-get install python3-onnx)")


def gemm_as_matmul(node, weights):
    """A Gemm of A (2-D) by a weight B (transB 1, alpha and beta 1) and a bias
    as MatMul(A, B^T) + Add(bias), or None when it is another Gemm."""
    attrs = {a.name: helper.get_attribute_value(a) for a in node.attribute}
    if (node.input[1] not in weights or attrs.get("transA", 0) != 0
            or attrs.get("alpha", 1.0) != 1.0 or attrs.get("beta", 1.0) != 1.0):
        return None
    w = weights[node.input[1]]
    if attrs.get("transB", 0):
        w = w.T
    name = node.input[1] + "_t"
    weights[name] = np.ascontiguousarray(w)
    out = node.output[0]
    if len(node.input) < 3:
        return [helper.make_node("MatMul", [node.input[0], name], [out], node.name + "_matmul")]
    mid = out + "_matmul"
    return [helper.make_node("MatMul", [node.input[0], name], [mid], node.name + "_matmul"),
            helper.make_node("Add", [mid, node.input[2]], [out], node.name + "_bias")]


def quantised_matmul(node, weights, new_inits):
    """MatMul(A, W) as quantize_dynamic's integer ops (see the header)."""
    a, wname = node.input
    w = weights[wname].astype(np.float32)
    scale = np.float32(np.abs(w).max() / 127.0) if np.abs(w).max() > 0 else np.float32(1.0)
    wq = np.clip(np.round(w / scale), -127, 127).astype(np.int8)
    p = node.name or wname
    new_inits += [numpy_helper.from_array(wq, wname + "_quantized"),
                  numpy_helper.from_array(np.array(scale, dtype=np.float32), wname + "_scale"),
                  numpy_helper.from_array(np.array(0, dtype=np.int8), wname + "_zero_point")]
    aq, ascale, azp = a + "_quantized", a + "_scale", a + "_zero_point"
    acc = node.output[0] + "_output_quantized"
    return [
        helper.make_node("DynamicQuantizeLinear", [a], [aq, ascale, azp], p + "_dql"),
        helper.make_node("MatMulInteger", [aq, wname + "_quantized", azp, wname + "_zero_point"],
                         [acc], p + "_quant"),
        helper.make_node("Cast", [acc], [acc + "_cast_output"], p + "_cast", to=TensorProto.FLOAT),
        helper.make_node("Mul", [ascale, wname + "_scale"], [p + "_scales_mul:0"],
                         p + "_scales_mul"),
        helper.make_node("Mul", [acc + "_cast_output", p + "_scales_mul:0"], [node.output[0]],
                         p + "_output_scale_mul"),
    ]


def main():
    if len(sys.argv) != 3:
        print("usage: ort_quant.py IN.onnx OUT.onnx", file=sys.stderr)
        sys.exit(2)
    model = onnx.load(sys.argv[1])
    g = model.graph
    weights = {t.name: numpy_helper.to_array(t) for t in g.initializer}
    nodes = []
    for node in g.node:  # the Gemms first, so that every Linear is a MatMul
        as_matmul = gemm_as_matmul(node, weights) if node.op_type == "Gemm" else None
        nodes += as_matmul or [node]
    new_inits, out, done = [], [], []
    for node in nodes:
        if node.op_type == "MatMul" and node.input[1] in weights and weights[node.input[1]].ndim == 2:
            out += quantised_matmul(node, weights, new_inits)
            done.append(f"{node.input[1]} {list(weights[node.input[1]].shape)}")
        else:
            out.append(node)
    if len(done) != 4:
        fail(f"expected the block's four Linears as MatMuls by weights, found {len(done)}")
    used = {i for n in out for i in n.input}
    inits = [t for t in g.initializer if t.name in used] + new_inits
    del g.node[:]
    g.node.extend(out)
    del g.initializer[:]
    g.initializer.extend(inits)
    onnx.checker.check_model(model)
    onnx.save(model, sys.argv[2])
    print(f"ort_quant: {len(done)} MatMuls by weights in int8 as quantize_dynamic writes them "
          f"(QInt8, per tensor): {', '.join(done)} -> {sys.argv[2]}")


if __name__ == "__main__":
    main()
