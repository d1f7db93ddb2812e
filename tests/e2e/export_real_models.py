#!/usr/bin/python3
"""Exports the real-model end-to-end set (torchvision classifiers, a Transformer encoder, LSTM and GRU
classifiers) with Debian's PyTorch, at opsets 13 and 17 (and 17's upgraded to 18), and records PyTorch's outputs and
gradients.

    /usr/bin/python3 tests/e2e/export_real_models.py OUT_DIR [--only NAME,...] [--force]

Run by the build (the `e2e_models` target of tests/CMakeLists.txt, which `make test` builds), never
committed: the models are up to 45 MB each. Weights are random (weights=None, fixed seeds), never downloaded.
Writes into OUT_DIR, for each case C = <model>_op<opset>:
  C.onnx           the exported model (eval mode, TrainingMode.PRESERVE: the exporter's eval-mode peephole
                   would fold BatchNormalization into the convolutions, renaming and changing the weights
                   whose gradients PyTorch recorded; without it every parameter keeps its PyTorch name)
  C.expected.npz   input:NAME, output:NAME and grad:NAME as tests/models/make_models.py writes them: the
                   gradient of L = sum(first output) with respect to the input and every parameter; and
                   f64:output:NAME, f64:grad:NAME, the same computed in float64 (the exact values to which
                   both float32 results are compared where the float32 sums are ill-conditioned)
  C.input.NAME.npy each input alone, for the ONNX Runtime oracle (tests/oracle/ort_run.js)
  cases.json       the cases: model file, input files, output names; read by the oracle
  stamp            a hash of this script and the torch/torchvision versions: a matching stamp skips the export
Install libopenblas0-pthread first (Debian's torch otherwise links the slow reference BLAS).
"""
import argparse
import copy
import hashlib
import json
import os
import sys
import warnings

import numpy as np
import torch
import torch.nn as nn
import torchvision

warnings.filterwarnings("ignore", category=UserWarning)  # the exporter's notes on constant shapes and the RNNs

OPSETS = (13, 17)


class TransformerClassifier(nn.Module):
    """A token embedding, one nn.TransformerEncoderLayer (4 heads, ReLU feed-forward, post-norm) and a linear
    head on the mean over the sequence: MatMul, Softmax, LayerNorm (decomposed at opset 13,
    LayerNormalization at 17), Split of the fused in-projection."""

    def __init__(self):
        super().__init__()
        self.proj = nn.Linear(8, 32)
        self.encoder = nn.TransformerEncoderLayer(d_model=32, nhead=4, dim_feedforward=64, dropout=0.1,
                                                  batch_first=True)
        self.head = nn.Linear(32, 5)

    def forward(self, x):
        return self.head(self.encoder(self.proj(x)).mean(dim=1))


class LstmClassifier(nn.Module):
    """A two-layer batch-first nn.LSTM and a linear head on the last step's output."""

    def __init__(self):
        super().__init__()
        self.lstm = nn.LSTM(8, 16, num_layers=2, batch_first=True)
        self.fc = nn.Linear(16, 4)

    def forward(self, x):
        y, _ = self.lstm(x)
        return self.fc(y[:, -1])


class GruClassifier(nn.Module):
    """A bidirectional nn.GRU over [seq, batch, features] and a linear head on both directions' final states."""

    def __init__(self):
        super().__init__()
        self.gru = nn.GRU(8, 16, bidirectional=True)
        self.fc = nn.Linear(32, 4)

    def forward(self, x):
        _, h = self.gru(x)
        return self.fc(torch.cat([h[0], h[1]], dim=1))


class ConvNextBlock(nn.Module):
    """A small ConvNeXt-style network: a patchify stem, a depthwise 7x7 conv, nn.GroupNorm (exported as
    Reshape, InstanceNormalization over the groups, Reshape, Mul and Add at both opsets), pointwise convs with
    nn.GELU in both forms PyTorch exports (erf: Div, Erf, Add, Mul; approximate='tanh': Pow, Mul, Add, Tanh), a
    residual, GroupNorm of one group, and a linear head on the spatial mean."""

    def __init__(self):
        super().__init__()
        self.stem = nn.Conv2d(3, 16, 4, stride=4)
        self.dw = nn.Conv2d(16, 16, 7, padding=3, groups=16)
        self.norm = nn.GroupNorm(4, 16)
        self.pw1 = nn.Conv2d(16, 32, 1)
        self.act1 = nn.GELU()
        self.pw2 = nn.Conv2d(32, 16, 1)
        self.norm2 = nn.GroupNorm(1, 16)
        self.act2 = nn.GELU(approximate="tanh")
        self.head = nn.Linear(16, 5)

    def forward(self, x):
        x = self.stem(x)
        y = self.pw2(self.act1(self.pw1(self.norm(self.dw(x)))))
        return self.head(self.act2(self.norm2(x + y)).mean(dim=(2, 3)))


def vision(name):
    return lambda: getattr(torchvision.models, name)(weights=None)


# name -> (builder, input shape, seed). Images at 64x64 (torchvision's classifiers pool adaptively, so the
# small size changes no op; squeezenet's ceil-mode pools still see odd sizes).
MODELS = {
    "resnet18": (vision("resnet18"), (1, 3, 64, 64), 10),
    "mobilenet_v2": (vision("mobilenet_v2"), (1, 3, 64, 64), 11),
    "squeezenet1_1": (vision("squeezenet1_1"), (1, 3, 64, 64), 12),
    "shufflenet_v2_x0_5": (vision("shufflenet_v2_x0_5"), (1, 3, 64, 64), 13),
    "mobilenet_v3_small": (vision("mobilenet_v3_small"), (1, 3, 64, 64), 14),
    "transformer_encoder": (TransformerClassifier, (2, 6, 8), 15),
    "lstm_classifier": (LstmClassifier, (2, 7, 8), 16),
    "gru_classifier": (GruClassifier, (7, 2, 8), 17),
    "convnext_block": (ConvNextBlock, (2, 3, 32, 32), 18),
}


def stamp():
    h = hashlib.sha256()
    with open(os.path.abspath(__file__), "rb") as f:
        h.update(f.read())
    h.update(torch.__version__.encode())
    h.update(torchvision.__version__.encode())
    return h.hexdigest()


def distinct_constant_parameters(model):
    """Fresh models hold many parameters of one repeated value (batch and layer norm scales of ones, biases of
    zeros). torch.onnx.export deduplicates initializers of equal value, feeding the second through an Identity
    of the first: that first initializer's gradient is then the sum over all its uses, not PyTorch's gradient
    of one parameter. Perturbing them, as training would, keeps every parameter its own initializer (checked
    after the export) and gives the normalisations a non-trivial scale and shift."""
    with torch.no_grad():
        for p in model.parameters():
            if p.numel() > 1 and bool((p == p.reshape(-1)[0]).all()):
                p.add_(0.1 * torch.randn_like(p))


def check_every_parameter_is_an_initializer(path, params):
    import onnx
    inits = {i.name for i in onnx.load(path, load_external_data=False).graph.initializer}
    missing = [n for n in params if n not in inits]
    if missing:
        sys.exit(f"export_real_models: {path}: parameters not exported as their own initializer: {missing[:5]}")


def calibrate_batch_norms(model, shape):
    """Running statistics from data: torchvision's fresh batch norms (mean 0, variance 1) leave the random
    network unnormalised, and MobileNet's outputs collapse to ~1e-9, below any absolute tolerance. A cumulative
    average over a few random batches in training mode gives each normalisation the scale it would have after
    training, so every layer's values stay of order one."""
    norms = [m for m in model.modules() if isinstance(m, nn.modules.batchnorm._BatchNorm)]
    if not norms:
        return
    for m in norms:
        m.reset_running_stats()
        m.momentum = None
    model.train()
    with torch.no_grad():
        for _ in range(4):
            model(torch.randn(4, *shape[1:]))
    model.eval()


def export_model(out, name):
    """Both opsets from one model: the same weights and input, so one PyTorch reference serves both."""
    build, shape, seed = MODELS[name]
    torch.manual_seed(seed)
    model = build()
    distinct_constant_parameters(model)
    calibrate_batch_norms(model, shape)
    model.eval()
    x = torch.randn(*shape)
    leaf = x.detach().clone().requires_grad_(True)
    y = model(leaf)
    params = dict(model.named_parameters())
    grads = torch.autograd.grad(y.sum(), [leaf] + list(params.values()))
    record = {"input:x": x.numpy(), "output:y": y.detach().numpy()}
    for n, g in zip(["x"] + list(params.keys()), grads):
        record["grad:" + n] = g.numpy()
    # The same in float64: how far each float32 result (PyTorch's and grist's) is from the exact value.
    model64 = copy.deepcopy(model).double()
    leaf64 = x.double().requires_grad_(True)
    y64 = model64(leaf64)
    grads64 = torch.autograd.grad(y64.sum(), [leaf64] + list(model64.parameters()))
    record["f64:output:y"] = y64.detach().numpy()
    for n, g in zip(["x"] + list(params.keys()), grads64):
        record["f64:grad:" + n] = g.numpy()
    cases = []
    for opset in OPSETS + (18,):
        case = f"{name}_op{opset}"
        path = os.path.join(out, case + ".onnx")
        if opset == 18:
            upgrade_to_opset_18(os.path.join(out, f"{name}_op17.onnx"), path)
        else:
            torch.onnx.export(model, (x,), path, input_names=["x"], output_names=["y"], opset_version=opset,
                              do_constant_folding=False, training=torch.onnx.TrainingMode.PRESERVE)
        check_every_parameter_is_an_initializer(path, params)
        np.savez(os.path.join(out, case + ".expected.npz"), **record)
        np.save(os.path.join(out, case + ".input.x.npy"), x.numpy())
        cases.append({"case": case, "model": case + ".onnx", "inputs": {"x": case + ".input.x.npy"},
                      "outputs": ["y"]})
        print("exported", case, flush=True)
    return cases


# The Reduce* ops whose axes became an input at opset 18 (ReduceSum's did at 13).
REDUCE_AXES_INPUT_AT_18 = {"ReduceL1", "ReduceL2", "ReduceLogSum", "ReduceLogSumExp", "ReduceMax", "ReduceMean",
                           "ReduceMin", "ReduceProd", "ReduceSumSquare"}


def upgrade_to_opset_18(src, dst):
    """The opset-17 export as PyTorch 2 would write it at opset 18 (Debian's torch 1.13 stops at 17, its ONNX's
    version converter too): the one change of opset 18 these models meet is the Reduce* ops' axes, an attribute
    before and an int64 input after. Every other op they use is the same at 18."""
    import onnx
    from onnx import helper, numpy_helper
    m = onnx.load(src, load_external_data=False)
    for op in m.opset_import:
        if op.domain in ("", "ai.onnx"):
            op.version = 18
    for k, node in enumerate(m.graph.node):
        if node.op_type not in REDUCE_AXES_INPUT_AT_18:
            continue
        axes = [a for a in node.attribute if a.name == "axes"]
        if not axes:
            continue
        name = f"{node.name or node.op_type + str(k)}_axes"
        m.graph.initializer.append(numpy_helper.from_array(np.array(list(axes[0].ints), dtype=np.int64), name))
        node.attribute.remove(axes[0])
        node.input.append(name)
    onnx.save(m, dst)


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("out")
    parser.add_argument("--only", help="comma-separated model names")
    parser.add_argument("--force", action="store_true", help="export even when the stamp matches")
    args = parser.parse_args()
    os.makedirs(args.out, exist_ok=True)
    stamp_path = os.path.join(args.out, "stamp")
    want = stamp()
    names = args.only.split(",") if args.only else list(MODELS)
    unknown = [n for n in names if n not in MODELS]
    if unknown:
        sys.exit("export_real_models: no model " + ", ".join(unknown))
    if not args.force and not args.only and os.path.exists(stamp_path):
        with open(stamp_path) as f:
            if f.read().strip() == want:
                os.utime(stamp_path)  # newer than the script again, for the build's dependency check
                print("export_real_models: up to date")
                return
    torch.set_num_threads(max(1, min(2, os.cpu_count() or 1)))
    cases = []
    for name in names:
        cases += export_model(args.out, name)
    if args.only:
        return  # a partial export leaves cases.json and the stamp as they were
    with open(os.path.join(args.out, "cases.json"), "w") as f:
        json.dump(cases, f, indent=1)
    with open(stamp_path, "w") as f:
        f.write(want + "\n")


if __name__ == "__main__":
    main()
