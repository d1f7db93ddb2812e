#!/usr/bin/python3
"""Writes the small half-precision test models (onnx.helper; no PyTorch needed):

  half_mlp.onnx        a float16 model, as `.half()` exports one: x[batch,4] -> MatMul -> Add -> Relu -> y
  fp16_exp_overflow.onnx, fp16_norm_overflow.onnx
                       float32 models finite in float32 whose float16 runs overflow: exp(12·x), and the sum of
                       squares in the norm of a 64-vector, for `grist run --precision fp16`
  amp_matmul_overflow.onnx, amp_exp_in_float32.onnx
                       a MatMul that overflows float16 (autocast runs it in float16), and an Exp of a MatMul that
                       overflows under fp16 but not under amp-fp16 (autocast keeps Exp in float32)
  fp16_fix_{norm,softmax,attention,variance}.onnx (+ .toml)
                       issue 16's four half-failing models (tests/support/half_models.h) for `grist fix
                       --precision fp16`: a norm whose sum of squares passes 65504, a hand-written softmax with
                       logits above 11.09, an attention score product, a variance flushed to 0 under a sqrt

Run with Debian's interpreter:  /usr/bin/python3 tests/models/make_half_models.py
"""
import os

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

HERE = os.path.dirname(os.path.abspath(__file__))


def save(model, name):
    onnx.checker.check_model(model)
    onnx.save(model, os.path.join(HERE, name))


def half_mlp():
    rng = np.random.default_rng(16)
    w = numpy_helper.from_array(rng.uniform(-1, 1, (4, 3)).astype(np.float16), "w")
    b = numpy_helper.from_array(np.array([0.1, -0.2, 0.3], dtype=np.float16), "b")
    nodes = [helper.make_node("MatMul", ["x", "w"], ["h"], name="matmul"),
             helper.make_node("Add", ["h", "b"], ["hb"], name="add"),
             helper.make_node("Relu", ["hb"], ["y"], name="relu")]
    g = helper.make_graph(nodes, "half_mlp", [helper.make_tensor_value_info("x", TensorProto.FLOAT16, ["batch", 4])],
                          [helper.make_tensor_value_info("y", TensorProto.FLOAT16, ["batch", 3])], [w, b])
    save(helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)]), "half_mlp.onnx")


def scaled_model(name, scale, nodes, out, out_shape, n=4):
    """x[1,n] -> Mul(x, scale) -> nodes -> out: float32 throughout."""
    c = numpy_helper.from_array(np.array(scale, dtype=np.float32), "scale_by")
    nodes = [helper.make_node("Mul", ["x", "scale_by"], ["xs"], name="scale")] + nodes
    g = helper.make_graph(nodes, name, [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, n])],
                          [helper.make_tensor_value_info(out, TensorProto.FLOAT, out_shape)], [c])
    save(helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)]), name + ".onnx")


def fp16_overflows():
    # With x in [1, 1.05): e^(12x) is at least e^12 ≈ 162755, finite in float32, inf in float16 (max 65504).
    scaled_model("fp16_exp_overflow", 12.0, [helper.make_node("Exp", ["xs"], ["y"], name="exp")], "y", [1, 4])
    # A norm of 64 values in [40, 42): its sum of squares (> 102400) overflows float16, the norm itself would not.
    scaled_model("fp16_norm_overflow", 40.0,
                 [helper.make_node("ReduceSumSquare", ["xs"], ["ss"], name="sum_of_squares", keepdims=0),
                  helper.make_node("Sqrt", ["ss"], ["y"], name="norm")], "y", [], n=64)


def matmul_model(name, weight, extra, out):
    """x[1,64] -> MatMul with a constant [64,1] weight -> extra nodes -> out: float32 throughout."""
    w = numpy_helper.from_array(np.full((64, 1), weight, dtype=np.float32), "w")
    nodes = [helper.make_node("MatMul", ["x", "w"], ["xw"], name="matmul")] + extra
    g = helper.make_graph(nodes, name, [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 64])],
                          [helper.make_tensor_value_info(out, TensorProto.FLOAT, [1, 1])], [w])
    save(helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)]), name + ".onnx")


def amp_models():
    # With x in [1, 1.05): x·w sums 64 products of about 1100, > 65504: autocast runs MatMul in float16.
    matmul_model("amp_matmul_overflow", 1100.0, [], "xw")
    # x·w is about 12, and e^12 overflows float16; autocast keeps Exp in float32, `.half()` (fp16) does not.
    matmul_model("amp_exp_in_float32", 12.0 / 64, [helper.make_node("Exp", ["xw"], ["y"], name="exp")], "y")


def fix_model(name, inputs, nodes, out, inits, data, lo, hi, out_shape):
    """A float32 model and its manifest: every input data, drawn uniform in `data`, searched within [lo, hi]."""
    g = helper.make_graph(nodes, name, [helper.make_tensor_value_info(n, TensorProto.FLOAT, s) for n, s in inputs],
                          [helper.make_tensor_value_info(out, TensorProto.FLOAT, out_shape)], inits)
    save(helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)]), name + ".onnx")
    with open(os.path.join(HERE, name + ".toml"), "w") as f:
        f.write(f'# Written by make_half_models.py: {name}.onnx for grist fix --precision fp16 (issue 16).\n')
        f.write(f'model = "{name}.onnx"\n')
        for n, _ in inputs:
            f.write(f'\n[inputs.{n}]\nrole = "data"\nsource = "uniform"\nuniform = [{data[0]!r}, {data[1]!r}]\n'
                    f'range = [{lo!r}, {hi!r}]\n')
        f.write('\n[batch]\nsize = 1\n\n[search]\nseed = 7\n')


def fix_models():
    f32 = lambda name, v: numpy_helper.from_array(np.array(v, dtype=np.float32), name)
    i64 = lambda name, v: numpy_helper.from_array(np.array(v, dtype=np.int64), name)
    # x / sqrt(Σx² + 1e-4), x in [-100, 100]^16: Σx² reaches 160000.
    fix_model("fp16_fix_norm", [("x", [1, 16])],
              [helper.make_node("ReduceSumSquare", ["x"], ["ss"], name="sum_of_squares", axes=[1], keepdims=1),
               helper.make_node("Add", ["ss", "eps"], ["sse"], name="add_eps"),
               helper.make_node("Sqrt", ["sse"], ["norm"], name="norm"),
               helper.make_node("Div", ["x", "norm"], ["y"], name="normalize")], "y", [f32("eps", 1e-4)],
              (50.0, 60.0), -100.0, 100.0, [1, 16])
    # exp(z) / Σexp(z), z in [-15, 15]^8.
    fix_model("fp16_fix_softmax", [("z", [1, 8])],
              [helper.make_node("Exp", ["z"], ["e"], name="exp"),
               helper.make_node("ReduceSum", ["e", "axes"], ["s"], name="sum", keepdims=1),
               helper.make_node("Div", ["e", "s"], ["p"], name="div")], "p", [i64("axes", [1])],
              (6.0, 8.0), -15.0, 15.0, [1, 8])
    # softmax(q·kᵀ), q and k in [-100, 100]^(4×8): a score reaches 80000.
    fix_model("fp16_fix_attention", [("q", [1, 4, 8]), ("k", [1, 4, 8])],
              [helper.make_node("Transpose", ["k"], ["kt"], name="transpose", perm=[0, 2, 1]),
               helper.make_node("MatMul", ["q", "kt"], ["scores"], name="scores"),
               helper.make_node("Softmax", ["scores"], ["attn"], name="softmax", axis=-1)], "attn", [],
              (50.0, 60.0), -100.0, 100.0, [1, 4, 4])
    # (x − mean) / sqrt(var + 1e-8), x in [-1e-3, 3e-3]^8: float16 flushes the variance and 1e-8 to 0.
    fix_model("fp16_fix_variance", [("x", [1, 8])],
              [helper.make_node("ReduceMean", ["x"], ["mean"], name="mean", axes=[1], keepdims=1),
               helper.make_node("Sub", ["x", "mean"], ["xc"], name="center"),
               helper.make_node("Pow", ["xc", "two"], ["sq"], name="square"),
               helper.make_node("ReduceMean", ["sq"], ["var"], name="variance", axes=[1], keepdims=1),
               helper.make_node("Add", ["var", "eps"], ["ve"], name="add_eps"),
               helper.make_node("Sqrt", ["ve"], ["sd"], name="std"),
               helper.make_node("Div", ["xc", "sd"], ["y"], name="standardize")], "y",
              [f32("eps", 1e-8), f32("two", 2.0)], (0.0, 2e-3), -1e-3, 3e-3, [1, 8])


if __name__ == "__main__":
    half_mlp()
    fp16_overflows()
    amp_models()
    fix_models()
