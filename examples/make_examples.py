#!/usr/bin/python3
"""Exports the bundled example models with Debian's PyTorch: /usr/bin/python3 examples/make_examples.py"""
import os
import torch
import torch.nn as nn

HERE = os.path.dirname(os.path.abspath(__file__))


class LogSoftmaxByHand(nn.Module):
    """log(softmax(x·W + b)): the study's most common bug (log of a probability that underflows to 0)."""

    def __init__(self):
        super().__init__()
        self.fc = nn.Linear(10, 5)

    def forward(self, x):
        return torch.log(torch.softmax(self.fc(x), dim=1))


def main():
    torch.manual_seed(0)
    torch.onnx.export(LogSoftmaxByHand(), (torch.rand(4, 10),), os.path.join(HERE, "log_softmax.onnx"),
                      input_names=["x"], output_names=["log_probs"],
                      dynamic_axes={"x": {0: "batch"}, "log_probs": {0: "batch"}}, opset_version=13)


if __name__ == "__main__":
    main()
