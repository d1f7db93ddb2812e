#!/usr/bin/python3
"""Exports one small module per repair pattern of `grist fix` with Debian's PyTorch, at opsets 13 and 17, as
tests/models/fix/<pattern>_op<opset>.onnx: the shapes PyTorch's exporter really writes, with the Cast,
Unsqueeze, Expand and Identity noise it puts between the ops of one expression.

Run with Debian's interpreter:  /usr/bin/python3 tests/models/make_fix_models.py
Deterministic (fixed seeds, constant folding off); the files are a few hundred bytes each and committed, so the
tests never need Python. tests/fix/repair_test.cpp says what each one must become.
"""
import os
import warnings

import torch
import torch.nn as nn
import torch.nn.functional as F

HERE = os.path.join(os.path.dirname(os.path.abspath(__file__)), "fix")


class LogSoftmaxNoisy(nn.Module):
    """log(softmax) with a float64 cast and an unsqueeze between the two, cast back after."""

    def forward(self, x):
        p = torch.softmax(x, dim=1)
        return torch.log(p.double().unsqueeze(1)).float()


class SoftmaxCrossEntropy(nn.Module):
    """The hand-written cross-entropy of the study's TensorFlow programs, on a linear layer's logits."""

    def __init__(self):
        super().__init__()
        torch.manual_seed(11)
        self.fc = nn.Linear(4, 3)

    def forward(self, x, y):
        p = torch.softmax(self.fc(x), dim=1)
        return -(y * torch.log(p)).sum(dim=1).mean()


class LogSumExpForm(nn.Module):
    """log(exp(x) / Σexp(x)) with keepdim=False and an unsqueeze putting the axis back."""

    def forward(self, x):
        e = torch.exp(x)
        return torch.log(e / e.sum(dim=1).unsqueeze(1))


class LogSigmoid(nn.Module):
    def forward(self, x):
        return torch.log(torch.sigmoid(x).unsqueeze(0))


class LogOneMinusSigmoid(nn.Module):
    """log(1 − sigmoid(x)) of a hand-written binary cross-entropy, with the sigmoid reshaped in between."""

    def forward(self, x):
        h = torch.sigmoid(x).reshape(-1, 2, 2)
        return torch.log(1 - h)


class LogSumExp(nn.Module):
    def forward(self, x):
        return torch.log(torch.exp(x).sum(dim=1))


class Softplus(nn.Module):
    """The RBMs' free energy: log(1 + exp(x)) summed."""

    def forward(self, x):
        return torch.log(1 + torch.exp(x)).sum(dim=1)


class StableSoftmax(nn.Module):
    """exp(x) / Σexp(x) with the sum repeated across the axis, as the U-Net of subject 17 writes it."""

    def forward(self, x):
        e = torch.exp(x)
        return e / e.sum(dim=1, keepdim=True).repeat(1, 4)


class SqrtOfExp(nn.Module):
    """The VAEs' standard deviation: sqrt(exp(log σ²)) after a clamp."""

    def forward(self, x):
        return torch.sqrt(torch.exp(torch.clamp(x, -100.0, 87.0)))


class NormDivision(nn.Module):
    """x / ‖x‖ with torch.norm (ReduceL2), not F.normalize (which guards it)."""

    def forward(self, x):
        return x / x.norm(p=2, dim=1, keepdim=True)


class NormDivisionByHand(nn.Module):
    """x / ‖x‖ by hand, as sqrt(Σ x²), broadcast with expand_as."""

    def forward(self, x):
        n = torch.sqrt(x.pow(2).sum(dim=1, keepdim=True))
        return x / n.expand_as(x)


class Division(nn.Module):
    def forward(self, a, b):
        return a / (b - 1)


class LogOfDifference(nn.Module):
    """log of a value with no stable form: the clamp."""

    def forward(self, x):
        return torch.log(x - 0.5)


class SqrtOfDifference(nn.Module):
    def forward(self, x):
        return torch.sqrt(x - 0.5)


class ExpOverflow(nn.Module):
    def forward(self, x):
        return torch.exp(x * 3.0)


class PowNegative(nn.Module):
    def forward(self, x):
        return torch.pow(x, -2.0)


class PowNegativeOdd(nn.Module):
    def forward(self, x):
        return x ** -3


class PowFraction(nn.Module):
    def forward(self, x):
        return torch.pow(x, 0.5)


MODELS = {
    "log_softmax": (LogSoftmaxNoisy, {"x": (2, 4)}),
    "softmax_cross_entropy": (SoftmaxCrossEntropy, {"x": (2, 4), "y": (2, 3)}),
    "log_sum_exp_form": (LogSumExpForm, {"x": (2, 4)}),
    "log_sigmoid": (LogSigmoid, {"x": (2, 4)}),
    "log_one_minus_sigmoid": (LogOneMinusSigmoid, {"x": (2, 4)}),
    "log_sum_exp": (LogSumExp, {"x": (2, 4)}),
    "softplus": (Softplus, {"x": (2, 4)}),
    "stable_softmax": (StableSoftmax, {"x": (2, 4)}),
    "sqrt_of_exp": (SqrtOfExp, {"x": (2, 4)}),
    "norm_division": (NormDivision, {"x": (2, 4)}),
    "norm_division_by_hand": (NormDivisionByHand, {"x": (2, 4)}),
    "division": (Division, {"a": (2, 4), "b": (2, 4)}),
    "log_clamp": (LogOfDifference, {"x": (2, 4)}),
    "sqrt_clamp": (SqrtOfDifference, {"x": (2, 4)}),
    "exp_clamp": (ExpOverflow, {"x": (2, 4)}),
    "pow_negative": (PowNegative, {"x": (2, 4)}),
    "pow_negative_odd": (PowNegativeOdd, {"x": (2, 4)}),
    "pow_fraction": (PowFraction, {"x": (2, 4)}),
}


def main():
    os.makedirs(HERE, exist_ok=True)
    for name, (cls, inputs) in MODELS.items():
        for opset in (13, 17):
            torch.manual_seed(0)
            model = cls().eval()
            args = tuple(torch.rand(*shape) for shape in inputs.values())
            names = list(inputs.keys())
            out = model(*args)
            dynamic = {n: {0: "batch"} for n in names}
            if out.dim() > 0:
                dynamic["out"] = {0: "batch"} if name != "log_sigmoid" else {1: "batch"}
            path = os.path.join(HERE, f"{name}_op{opset}.onnx")
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                torch.onnx.export(model, args, path, input_names=names, output_names=["out"], dynamic_axes=dynamic,
                                  opset_version=opset, do_constant_folding=False)
            print(path)


if __name__ == "__main__":
    main()
