#!/usr/bin/python3
"""Writes the small half-precision test models (onnx.helper; no PyTorch needed):

  half_mlp.onnx        a float16 model, as `.half()` exports one: x[batch,4] -> MatMul -> Add -> Relu -> y
  fp16_exp_overflow.onnx, fp16_norm_overflow.onnx
                       float32 models finite in float32 whose float16 runs overflow: exp(12·x), and the sum of
                       squares in the norm of a 64-vector, for `grist run --precision fp16`
  amp_matmul_overflow.onnx, amp_exp_in_float32.onnx
                       a MatMul that overflows float16 (autocast runs it in float16), and an Exp of a MatMul that
                       overflows under fp16 but not under amp-fp16 (autocast keeps Exp in float32)

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


if __name__ == "__main__":
    half_mlp()
    fp16_overflows()
    amp_models()
