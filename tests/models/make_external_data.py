#!/usr/bin/python3
"""Writes small ONNX models whose weights are external data, as exporters write models over 2 GiB.

Usage: /usr/bin/python3 tests/models/make_external_data.py DIR   (run by tests/cli/cli_test.sh, in a scratch DIR)
Writes, with Debian's python3-onnx and numpy:
  DIR/ok/model.onnx + weights.bin    y = x @ W + b, and a Constant node's tensor, all in one external file
  DIR/ok/input.npz, expected.npz     x, and numpy's y to compare grist's --output with
  DIR/ok/linked.onnx                 its location a symlink inside the folder (allowed)
  DIR/absolute/model.onnx            location an absolute path
  DIR/dotdot/sub/model.onnx          location ../ok/weights.bin
  DIR/symlink/model.onnx             location a symlink that leads out of the folder
  DIR/missing/model.onnx             the weights file absent
  DIR/short/model.onnx               the weights file cut short (offset + length past its end)
  DIR/length/model.onnx              a length that does not match the tensor's shape
"""
import os
import shutil
import sys

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

out = sys.argv[1]
rng = np.random.default_rng(7)
W = rng.standard_normal((4, 3)).astype(np.float32)
b = rng.standard_normal(3).astype(np.float32)
scale = np.array([2.0], dtype=np.float64)
x = rng.standard_normal((2, 4)).astype(np.float32)

nodes = [
    helper.make_node("MatMul", ["x", "W"], ["/fc/MatMul_output_0"]),
    helper.make_node("Add", ["/fc/MatMul_output_0", "b"], ["/fc/Add_output_0"]),
    helper.make_node("Constant", [], ["scale"], value=numpy_helper.from_array(scale, "scale")),
    helper.make_node("Cast", ["scale"], ["scale32"], to=TensorProto.FLOAT),
    helper.make_node("Mul", ["/fc/Add_output_0", "scale32"], ["y"]),
]
graph = helper.make_graph(
    nodes, "ext", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [2, 4])],
    [helper.make_tensor_value_info("y", TensorProto.FLOAT, [2, 3])],
    [numpy_helper.from_array(W, "W"), numpy_helper.from_array(b, "b")])
model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)])
model.ir_version = 8


def save(folder, name="model.onnx", location="weights.bin"):
    os.makedirs(folder, exist_ok=True)
    m = onnx.ModelProto()
    m.CopyFrom(model)
    onnx.save_model(m, os.path.join(folder, name), save_as_external_data=True, all_tensors_to_one_file=True,
                    location=location, size_threshold=0, convert_attribute=True)
    return m


def relocate(folder, location, length=None):
    """Rewrites every external tensor's location (and length) in folder/model.onnx."""
    path = os.path.join(folder, "model.onnx")
    m = onnx.load(path, load_external_data=False)
    tensors = list(m.graph.initializer) + [a.t for n in m.graph.node for a in n.attribute if a.HasField("t")]
    for t in tensors:
        for e in t.external_data:
            if e.key == "location":
                e.value = location
            if e.key == "length" and length is not None and t.name == "W":
                e.value = str(length)
    with open(path, "wb") as f:
        f.write(m.SerializeToString())


ok = os.path.join(out, "ok")
save(ok)
np.savez(os.path.join(ok, "input.npz"), x=x)
np.savez(os.path.join(ok, "expected.npz"), y=((x @ W + b) * np.float32(2.0)).astype(np.float32))
save(ok, "linked.onnx", "inside.bin")
os.makedirs(os.path.join(ok, "data"))
shutil.move(os.path.join(ok, "inside.bin"), os.path.join(ok, "data", "real.bin"))
os.symlink("data/real.bin", os.path.join(ok, "inside.bin"))

save(os.path.join(out, "absolute"))
relocate(os.path.join(out, "absolute"), os.path.abspath(os.path.join(ok, "weights.bin")))
save(os.path.join(out, "dotdot", "sub"))
relocate(os.path.join(out, "dotdot", "sub"), "../../ok/weights.bin")
save(os.path.join(out, "symlink"))
os.remove(os.path.join(out, "symlink", "weights.bin"))
os.symlink(os.path.abspath(os.path.join(ok, "weights.bin")), os.path.join(out, "symlink", "weights.bin"))
save(os.path.join(out, "missing"))
os.remove(os.path.join(out, "missing", "weights.bin"))
save(os.path.join(out, "short"))
with open(os.path.join(out, "short", "weights.bin"), "r+b") as f:
    f.truncate(os.path.getsize(os.path.join(out, "short", "weights.bin")) - 4)
save(os.path.join(out, "length"))
relocate(os.path.join(out, "length"), "weights.bin", length=4 * 4 * 3 - 4)
