#!/usr/bin/python3
"""Small models of opsets 18 to 21 (what PyTorch 2's exporters write) for tests/e2e/newer_opsets_test.cpp.

Debian's ONNX (1.12) knows operators up to opset 17, so these are written with onnx.helper, one revised op (or a few
unrevised ones) each, and tests/oracle/ort_run.js gives ONNX Runtime's outputs as the reference. Writes into
OUT_DIR, for each case C: C.onnx, C.input.<name>.npy per input, and cases.json for ort_run.js.

  /usr/bin/python3 tests/e2e/export_newer_opsets.py OUT_DIR
"""
import json
import os
import sys

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

RNG = np.random.default_rng(18)


def floats(*shape, lo=-2.0, hi=2.0):
    return RNG.uniform(lo, hi, size=shape).astype(np.float32)


def ints(values):
    return np.array(values, dtype=np.int64)


def case(name, opset, nodes, inputs, outputs, initializers=None):
    """inputs: name -> array (graph inputs); outputs: name -> shape (libonnx 1.12's checker wants one);
    initializers: name -> array."""
    graph = helper.make_graph(
        nodes, name,
        [helper.make_tensor_value_info(k, onnx.mapping.NP_TYPE_TO_TENSOR_TYPE[v.dtype], v.shape) for k, v in inputs.items()],
        [helper.make_tensor_value_info(o, TensorProto.FLOAT, shape) for o, shape in outputs.items()],
        [numpy_helper.from_array(v, k) for k, v in (initializers or {}).items()])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset)], producer_name="grist-tests")
    model.ir_version = 8
    return name, model, inputs, list(outputs)


def cases():
    x = floats(2, 3, 4)
    yield case("reduce_mean_axes_input_op18", 18, [helper.make_node("ReduceMean", ["x", "axes"], ["y"])],
               {"x": x}, {"y": [2, 1, 4]}, {"axes": ints([1])})
    yield case("reduce_max_axes_input_op18", 18,
               [helper.make_node("ReduceMax", ["x", "axes"], ["y"], keepdims=0)], {"x": x}, {"y": [2, 3]}, {"axes": ints([-1])})
    yield case("reduce_l2_all_axes_op18", 18, [helper.make_node("ReduceL2", ["x"], ["y"])], {"x": x}, {"y": [1, 1, 1]})
    yield case("reduce_log_sum_exp_op18", 18, [helper.make_node("ReduceLogSumExp", ["x", "axes"], ["y"])],
               {"x": x}, {"y": [1, 3, 1]}, {"axes": ints([0, 2])})
    yield case("reduce_sum_square_noop_op18", 18,
               [helper.make_node("ReduceSumSquare", ["x"], ["y"], noop_with_empty_axes=1)], {"x": x}, {"y": [2, 3, 4]})
    yield case("split_num_outputs_even_op18", 18,
               [helper.make_node("Split", ["x"], ["a", "b", "c"], axis=1, num_outputs=3)], {"x": floats(2, 6)},
               {"a": [2, 2], "b": [2, 2], "c": [2, 2]})
    yield case("split_num_outputs_uneven_op18", 18,
               [helper.make_node("Split", ["x"], ["a", "b", "c"], axis=1, num_outputs=3)], {"x": floats(2, 7)},
               {"a": [2, 3], "b": [2, 3], "c": [2, 1]})
    yield case("pad_axes_op18", 18, [helper.make_node("Pad", ["x", "pads", "value", "axes"], ["y"])], {"x": x}, {"y": [2, 3, 7]},
               {"pads": ints([1, 2]), "value": np.array(0.5, dtype=np.float32), "axes": ints([2])})
    yield case("resize_linear_op18", 18, [helper.make_node("Resize", ["x", "", "scales"], ["y"], mode="linear")],
               {"x": floats(1, 2, 3, 4)}, {"y": [1, 2, 6, 6]}, {"scales": np.array([1, 1, 2, 1.5], dtype=np.float32)})
    yield case("scatter_elements_max_op18", 18,
               [helper.make_node("ScatterElements", ["x", "indices", "updates"], ["y"], axis=1, reduction="max")],
               {"x": floats(3, 4)}, {"y": [3, 4]}, {"indices": ints([[0, 1, 0], [2, 2, 3], [1, 0, 1]]),
                                            "updates": floats(3, 3, lo=-3, hi=3)})
    # A softmax classifier head as an exporter writes it at 18: Gemm, Relu, ReduceMean over the features.
    yield case("mlp_head_op18", 18, [
        helper.make_node("Gemm", ["x", "w", "b"], ["h"], transB=1),
        helper.make_node("Relu", ["h"], ["r"]),
        helper.make_node("ReduceMean", ["r", "axes"], ["m"]),
        helper.make_node("Sub", ["r", "m"], ["c"]),
        helper.make_node("Softmax", ["c"], ["y"], axis=-1)],
        {"x": floats(4, 6)}, {"y": [4, 5]}, {"w": floats(5, 6), "b": floats(5), "axes": ints([-1])})
    # nn.GroupNorm as the opset-18 and -21 op: scale and bias per group (18, deprecated), per channel (21).
    for opset, params in ((18, 2), (21, 6)):
        yield case(f"group_norm_op{opset}", opset,
                   [helper.make_node("GroupNormalization", ["x", "scale", "bias"], ["y"], num_groups=2, epsilon=1e-3)],
                   {"x": floats(2, 6, 3, 3)}, {"y": [2, 6, 3, 3]},
                   {"scale": floats(params, lo=0.5, hi=1.5), "bias": floats(params)})
    yield case("average_pool_dilations_op19", 19,
               [helper.make_node("AveragePool", ["x"], ["y"], kernel_shape=[3, 3], dilations=[2, 2], pads=[1, 1, 1, 1])],
               {"x": floats(1, 2, 7, 7)}, {"y": [1, 2, 5, 5]})
    yield case("cast_reshape_op19", 19, [
        helper.make_node("Shape", ["x"], ["s"]),
        helper.make_node("Cast", ["x"], ["d"], to=TensorProto.DOUBLE),
        helper.make_node("Cast", ["d"], ["f"], to=TensorProto.FLOAT),
        helper.make_node("Reshape", ["f", "flat"], ["r"]),
        helper.make_node("Reshape", ["r", "s"], ["y"])],
        {"x": x}, {"y": [2, 3, 4]}, {"flat": ints([-1])})
    yield case("gelu_erf_op20", 20, [helper.make_node("Gelu", ["x"], ["y"])], {"x": floats(3, 5, lo=-4, hi=4)}, {"y": [3, 5]})
    yield case("gelu_tanh_op20", 20, [helper.make_node("Gelu", ["x"], ["y"], approximate="tanh")],
               {"x": floats(3, 5, lo=-4, hi=4)}, {"y": [3, 5]})
    yield case("reduce_min_op20", 20, [helper.make_node("ReduceMin", ["x", "axes"], ["y"])], {"x": x}, {"y": [1, 3, 4]},
               {"axes": ints([0])})
    yield case("shapes_op21", 21, [
        helper.make_node("Unsqueeze", ["x", "zero"], ["u"]),
        helper.make_node("Transpose", ["u"], ["t"], perm=[0, 1, 3, 2]),
        helper.make_node("Squeeze", ["t", "zero"], ["s"]),
        helper.make_node("Flatten", ["s"], ["f"], axis=1),
        helper.make_node("Constant", [], ["k"], value=numpy_helper.from_array(np.array(2.5, dtype=np.float32))),
        helper.make_node("Mul", ["f", "k"], ["y"])],
        {"x": x}, {"y": [2, 12]}, {"zero": ints([0])})


def main():
    if len(sys.argv) != 2:
        sys.exit(__doc__)
    out = sys.argv[1]
    os.makedirs(out, exist_ok=True)
    listed = []
    for name, model, inputs, outputs in cases():
        onnx.save(model, os.path.join(out, name + ".onnx"))
        files = {}
        for k, v in inputs.items():
            files[k] = f"{name}.input.{k}.npy"
            np.save(os.path.join(out, files[k]), v)
        listed.append({"case": name, "model": name + ".onnx", "inputs": files, "outputs": outputs})
    with open(os.path.join(out, "cases.json"), "w") as f:
        json.dump(listed, f, indent=1)
    print(f"export_newer_opsets: {len(listed)} models in {out}")


if __name__ == "__main__":
    main()
