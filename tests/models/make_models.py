#!/usr/bin/python3
"""Exports the end-to-end test models with Debian's PyTorch and records PyTorch's own outputs and gradients.

Run with Debian's interpreter:  /usr/bin/python3 tests/models/make_models.py
Writes, for each model M, tests/models/M.onnx and tests/models/M.expected.npz holding
  input:NAME     the data fed to input NAME
  output:NAME    PyTorch's value of output NAME
  grad:NAME      PyTorch's gradient of the scalar L with respect to input or parameter NAME, where
                 L = the model's loss output when it has one, else the sum of its first output.
Deterministic (fixed seeds); the files are small and committed, so tests never need Python.
"""
import os
import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F

HERE = os.path.dirname(os.path.abspath(__file__))


class Mlp(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc1 = nn.Linear(20, 16)
        self.fc2 = nn.Linear(16, 5)

    def forward(self, x):
        return self.fc2(torch.relu(self.fc1(x)))


class SmallCnn(nn.Module):
    """conv → relu → maxpool → conv → tanh → avgpool → dropout → flatten → linear."""

    def __init__(self):
        super().__init__()
        self.conv1 = nn.Conv2d(1, 4, 3, padding=1)
        self.conv2 = nn.Conv2d(4, 6, 3, stride=1, padding=0, groups=2)
        self.drop = nn.Dropout(0.3)
        self.fc = nn.Linear(6 * 2 * 2, 3)

    def forward(self, x):
        x = F.max_pool2d(F.relu(self.conv1(x)), 2)      # 12x12 -> 6x6
        x = F.avg_pool2d(torch.tanh(self.conv2(x)), 2)  # 6x6 -> 4x4 -> 2x2
        x = self.drop(x)
        return self.fc(torch.flatten(x, 1))


class ClassifierWithLoss(nn.Module):
    """A classifier with its loss inside: log(softmax) by hand, as buggy programs write it, and NLL."""

    def __init__(self):
        super().__init__()
        self.fc1 = nn.Linear(8, 12)
        self.fc2 = nn.Linear(12, 4)

    def forward(self, x, y):
        logits = self.fc2(torch.sigmoid(self.fc1(x)))
        probs = torch.softmax(logits, dim=1)
        loss = F.nll_loss(torch.log(probs), y)
        return probs, loss


class CrossEntropyClassifier(nn.Module):
    """F.cross_entropy with class weights and an ignored class: torch.onnx exports it as one
    SoftmaxCrossEntropyLoss node (opset 13), so PyTorch's loss and its gradients pin the fused op."""

    def __init__(self):
        super().__init__()
        self.fc = nn.Linear(6, 5)
        self.register_buffer("class_weight", torch.tensor([1.0, 0.5, 2.0, 1.5, 0.25]))

    def forward(self, x, y):
        return F.cross_entropy(self.fc(x), y, weight=self.class_weight, ignore_index=3)


class VaeHead(nn.Module):
    """conv → leaky relu → batch norm (eval, running statistics) → max pool → linear → chunk into a mean and
    a log-variance; F.normalize(mean) (ReduceL2, clamp, division) and exp(logvar / 2). The scan test
    expects every op bounded and the normalising division proved safe."""

    def __init__(self):
        super().__init__()
        self.conv = nn.Conv2d(1, 4, 3, padding=1)
        self.act = nn.LeakyReLU(0.1)
        self.bn = nn.BatchNorm2d(4)
        self.fc = nn.Linear(4 * 4 * 4, 6)
        with torch.no_grad():
            self.bn.running_mean.copy_(torch.rand(4) - 0.5)
            self.bn.running_var.copy_(torch.rand(4) + 0.5)

    def forward(self, x):
        h = F.max_pool2d(self.bn(self.act(self.conv(x))), 2)  # 8x8 -> 4x4
        mean, logvar = self.fc(torch.flatten(h, 1)).chunk(2, dim=1)
        return F.normalize(mean, dim=1), torch.exp(0.5 * logvar)


class LstmClassifier(nn.Module):
    """A two-layer bidirectional nn.LSTM over [seq, batch, features] and a linear head on the last step's
    outputs: LSTM nodes of both directions, the second fed by the first's Y (Transpose, Reshape)."""

    def __init__(self):
        super().__init__()
        self.lstm = nn.LSTM(4, 3, num_layers=2, bidirectional=True)
        self.fc = nn.Linear(6, 2)

    def forward(self, x):
        y, _ = self.lstm(x)
        return self.fc(y[-1])


class GruClassifier(nn.Module):
    """A batch-first nn.GRU (exported with linear_before_reset = 1) and a linear head on its final state."""

    def __init__(self):
        super().__init__()
        self.gru = nn.GRU(4, 3, batch_first=True)
        self.fc = nn.Linear(3, 2)

    def forward(self, x):
        _, h = self.gru(x)
        return self.fc(h[-1])


def export_recurrent():
    torch.manual_seed(5)
    export("lstm_classifier", LstmClassifier(), (torch.randn(5, 2, 4),), ["x"], ["y"], {}, 14)
    torch.manual_seed(6)
    export("gru_classifier", GruClassifier(), (torch.randn(2, 5, 4),), ["x"], ["y"], {}, 14)


def export(name, model, args, input_names, output_names, dynamic, opset, loss_index=None, train_mode=False):
    model.eval()
    path = os.path.join(HERE, name + ".onnx")
    torch.onnx.export(model, args, path, input_names=input_names, output_names=output_names,
                      dynamic_axes=dynamic, opset_version=opset, do_constant_folding=False,
                      training=torch.onnx.TrainingMode.TRAINING if train_mode else torch.onnx.TrainingMode.EVAL)
    # Reference values in eval mode (dropout off), gradients from PyTorch autograd.
    model.eval()
    leaf_args = []
    for a in args:
        if a.dtype.is_floating_point:
            a = a.detach().clone().requires_grad_(True)
        leaf_args.append(a)
    outs = model(*leaf_args)
    if not isinstance(outs, tuple):
        outs = (outs,)
    scalar = outs[loss_index] if loss_index is not None else outs[0].sum()
    params = dict(model.named_parameters())
    grads = torch.autograd.grad(scalar, [a for a in leaf_args if a.requires_grad] + list(params.values()))
    record = {}
    for n, a in zip(input_names, leaf_args):
        record["input:" + n] = a.detach().numpy()
    for n, o in zip(output_names, outs):
        record["output:" + n] = o.detach().numpy()
    float_inputs = [n for n, a in zip(input_names, leaf_args) if a.requires_grad]
    for n, g in zip(float_inputs + list(params.keys()), grads):
        record["grad:" + n] = g.numpy()
    np.savez(os.path.join(HERE, name + ".expected.npz"), **record)
    print("wrote", path)


def export_cross_entropy():
    # Labels 3 (ignored) and repeats, so ignore_index and the weighted mean's denominator both matter.
    export("cross_entropy", CrossEntropyClassifier(), (torch.randn(7, 6), torch.tensor([0, 3, 1, 2, 4, 3, 1])),
           ["x", "y"], ["loss"], {"x": {0: "batch"}, "y": {0: "batch"}}, 13, loss_index=0)


class FreeLogitsLogSoftmax(nn.Module):
    """GRIST.md §4 known answer: free logits z, loss = -mean(log(softmax(z))) with no parameters."""

    def forward(self, z):
        return -torch.log(torch.softmax(z, dim=1)).mean()


class ToyLogisticRegression(nn.Module):
    """SUBJECTS.md bug 26: sigmoid(x·W + b) with zero W, b and a hand-written BCE."""

    def __init__(self):
        super().__init__()
        self.W = nn.Parameter(torch.zeros(2, 1))
        self.b = nn.Parameter(torch.zeros(1))

    def forward(self, x, y):
        h = torch.sigmoid(x.matmul(self.W) + self.b)
        return -(y * torch.log(h) + (1 - y) * torch.log(1 - h)).mean()


class CraftedTrainingToy(nn.Module):
    """w·x fitted to y by MSE, and log(1.5 − w·x) of the same prediction. For x in [0, 1] the log is safe while
    w < 1.5, and the program's own data (x ≈ y ≈ 0.95) keeps w near 1; a training batch of small x with the
    same labels drives w up (towards y/x), after which x = 1 breaks the log: reachable by training, not by
    inputs alone."""

    def __init__(self):
        super().__init__()
        self.w = nn.Parameter(torch.ones(1, 1))

    def forward(self, x, y):
        p = x.matmul(self.w)
        loss = ((p - y) * (p - y)).mean()
        return loss, torch.log(1.5 - p)


def export_crafted_training_toy():
    torch.onnx.export(CraftedTrainingToy(), (torch.rand(4, 1), torch.rand(4, 1)),
                      os.path.join(HERE, "crafted_training_toy.onnx"), input_names=["x", "y"],
                      output_names=["loss", "log_margin"], dynamic_axes={"x": {0: "batch"}, "y": {0: "batch"}},
                      opset_version=13, do_constant_folding=False, training=torch.onnx.TrainingMode.TRAINING)


class LabelCraftToy(nn.Module):
    """A two-class softmax classifier z = x·W (W = 0) and log(1.5 − z₀) of its first logit. The program's data
    is all class 1, so its own training, and any batch with those labels, only lowers W₀ (for x in [0, 1] the
    log is then safe); training on rows labelled class 0 raises W₀ past 1.5, after which x = 1 breaks the log:
    reachable by crafted training only when the crafted batch may choose its labels."""

    def __init__(self):
        super().__init__()
        self.W = nn.Parameter(torch.zeros(1, 2))

    def forward(self, x, y):
        z = x.matmul(self.W)
        loss = -(y * torch.log_softmax(z, dim=1)).sum(dim=1).mean()
        return loss, torch.log(1.5 - z[:, 0])


def export_label_craft_toy():
    torch.onnx.export(LabelCraftToy(), (torch.rand(4, 1), torch.rand(4, 2)),
                      os.path.join(HERE, "label_craft_toy.onnx"), input_names=["x", "y"],
                      output_names=["loss", "log_margin"], dynamic_axes={"x": {0: "batch"}, "y": {0: "batch"}},
                      opset_version=13, do_constant_folding=False, training=torch.onnx.TrainingMode.TRAINING)


def export_hunt_models():
    """Models of the hunt's known-answer tests (their manifests are committed beside them)."""
    torch.onnx.export(FreeLogitsLogSoftmax(), (torch.rand(3, 5),), os.path.join(HERE, "free_logits.onnx"),
                      input_names=["z"], output_names=["loss"], dynamic_axes={"z": {0: "batch"}}, opset_version=13,
                      do_constant_folding=False)
    torch.onnx.export(ToyLogisticRegression(), (torch.rand(6, 2), torch.rand(6, 1)),
                      os.path.join(HERE, "logreg_toy.onnx"), input_names=["x", "y"], output_names=["cost"],
                      dynamic_axes={"x": {0: "batch"}, "y": {0: "batch"}}, opset_version=13,
                      do_constant_folding=False, training=torch.onnx.TrainingMode.TRAINING)
    export_crafted_training_toy()
    export_label_craft_toy()


def export_bad_models():
    """Models that must be refused with a clear message (built with onnx.helper, no PyTorch)."""
    import onnx
    from onnx import helper, TensorProto
    # Valid ONNX ops that grist does not implement: the error must list every one with its node names.
    x = helper.make_tensor_value_info("x", TensorProto.FLOAT, ["batch", 3, 4])
    w = helper.make_tensor_value_info("w", TensorProto.FLOAT, [1, 8, 4])
    r = helper.make_tensor_value_info("r", TensorProto.FLOAT, [1, 8, 2])
    y = helper.make_tensor_value_info("y", TensorProto.FLOAT, ["n"])
    nodes = [helper.make_node("NonMaxSuppression", ["x", "w"], ["h"], name="nms_a"),
             helper.make_node("NonMaxSuppression", ["x", "r"], ["h2"], name="nms_b"),
             helper.make_node("Det", ["h"], ["d"], name="det_1"),
             helper.make_node("Relu", ["d"], ["y"], name="relu")]
    m = helper.make_model(helper.make_graph(nodes, "unsupported", [x, w, r], [y]),
                          opset_imports=[helper.make_opsetid("", 13)])
    onnx.save(m, os.path.join(HERE, "unsupported_ops.onnx"))
    # An initializer whose declared dimensions would need 4 TiB: refused before any allocation.
    big = TensorProto()
    big.name = "huge"
    big.data_type = TensorProto.FLOAT
    big.dims.extend([1 << 20, 1 << 20])
    big.raw_data = b"\0" * 16
    inp = helper.make_tensor_value_info("a", TensorProto.FLOAT, [2])
    out = helper.make_tensor_value_info("b", TensorProto.FLOAT, [2])
    g = helper.make_graph([helper.make_node("Add", ["a", "huge"], ["b"])], "huge", [inp], [out], initializer=[big])
    onnx.save(helper.make_model(g, opset_imports=[helper.make_opsetid("", 13)]), os.path.join(HERE, "huge_initializer.onnx"))


def export_reliability_models():
    """Models of the command-line reliability tests (built with onnx.helper, no PyTorch)."""
    import onnx
    from onnx import helper, TensorProto
    # A fixed batch dimension of 3: hunt and run take it without --batch.
    x = helper.make_tensor_value_info("x", TensorProto.FLOAT, [3, 4])
    y = helper.make_tensor_value_info("y", TensorProto.FLOAT, [])
    nodes = [helper.make_node("Log", ["x"], ["l"], name="log"),
             helper.make_node("ReduceSum", ["l"], ["y"], name="sum", keepdims=0)]
    m = helper.make_model(helper.make_graph(nodes, "fixed_batch", [x], [y]), opset_imports=[helper.make_opsetid("", 13)])
    onnx.save(m, os.path.join(HERE, "fixed_batch.onnx"))
    # An opset from the future: refused with the numbers, not run as if it were known.
    r = helper.make_tensor_value_info("r", TensorProto.FLOAT, [2])
    m = helper.make_model(helper.make_graph([helper.make_node("Relu", ["a"], ["r"])], "future",
                                            [helper.make_tensor_value_info("a", TensorProto.FLOAT, [2])], [r]),
                          opset_imports=[helper.make_opsetid("", 99)])
    m.ir_version = 8
    onnx.save(m, os.path.join(HERE, "future_opset.onnx"))
    # ConstantOfShape [2^20, 2^20]: 4 TiB of float32, named with its node and shape rather than "out of memory".
    shape = helper.make_tensor("shape", TensorProto.INT64, [2], [1 << 20, 1 << 20])
    nodes = [helper.make_node("Constant", [], ["s"], name="dims", value=shape),
             helper.make_node("ConstantOfShape", ["s"], ["big"], name="big_zeros"),
             helper.make_node("Add", ["a", "big"], ["r"], name="add")]
    m = helper.make_model(helper.make_graph(nodes, "huge_constant",
                                            [helper.make_tensor_value_info("a", TensorProto.FLOAT, [1])],
                                            [helper.make_tensor_value_info("r", TensorProto.FLOAT, [1 << 20, 1 << 20])]),
                          opset_imports=[helper.make_opsetid("", 13)])
    onnx.save(m, os.path.join(HERE, "huge_constant.onnx"))


def main():
    import sys
    only = sys.argv[1:]  # model names: export only these (the others' files stay as committed)
    if only:
        torch.manual_seed(4)
        if "cross_entropy" in only:
            export_cross_entropy()
        if "reliability" in only:
            export_reliability_models()
        if "bad" in only:
            export_bad_models()
        if "recurrent" in only:
            export_recurrent()
        if "label_craft_toy" in only:
            export_label_craft_toy()
        return
    export_reliability_models()
    export_bad_models()
    export_hunt_models()
    torch.manual_seed(0)
    export("mlp", Mlp(), (torch.randn(3, 20),), ["x"], ["y"], {"x": {0: "batch"}, "y": {0: "batch"}}, 13)
    torch.manual_seed(1)
    export("cnn", SmallCnn(), (torch.rand(2, 1, 12, 12),), ["x"], ["y"], {"x": {0: "batch"}, "y": {0: "batch"}}, 12,
           train_mode=True)
    torch.manual_seed(2)
    export("classifier_loss", ClassifierWithLoss(), (torch.randn(5, 8), torch.tensor([0, 3, 1, 2, 3])),
           ["x", "y"], ["probs", "loss"], {"x": {0: "batch"}, "y": {0: "batch"}, "probs": {0: "batch"}}, 15,
           loss_index=1)
    torch.manual_seed(4)
    export_cross_entropy()
    torch.manual_seed(3)
    export("vae_head", VaeHead(), (torch.rand(3, 1, 8, 8),), ["x"], ["direction", "std"],
           {"x": {0: "batch"}, "direction": {0: "batch"}, "std": {0: "batch"}}, 13)
    export_recurrent()


if __name__ == "__main__":
    main()
