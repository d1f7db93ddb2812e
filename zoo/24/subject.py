"""Bug 24 — Tensorflow_Gesture_Demo `Demo/Mnist.py` (TF): the MNIST tutorial CNN.

Facts (SUBJECTS.md): TF-MNIST, input/x-input [N,784] in [0,1] and one-hot input/y-input [N,10], N = 100 (k = 5).
Model: reshape to 28×28×1; conv 5×5 1→32 SAME + bias, ReLU, max-pool 2×2 stride 2 SAME; conv 5×5 32→64 SAME + bias,
ReLU, max-pool; FC 3136→1024, ReLU; FC 1024→10; softmax y. No dropout (dropout_keep_prob = 0.5 is defined but never
used). Weights TF truncated normal(std 0.1), biases constant 0.1 (the first FC bias and the output bias are separate
variables). Loss: −Σ_{batch,class} y_label·LOG(y), a sum, no epsilon. Training: Adam lr 1e-4 (TF defaults) on the
updated batch (TF subjects 1–31). Hazard: log(y) at a softmax entry equal to 0 (objective min|y|), x clipped to the
first batch's range [0,1]; non-zero init, so the search moves x from iteration 1. No study result recorded.

Layout: the program is NHWC; the flatten before the first FC runs in TensorFlow's (h, w, c) order (a Transpose from
PyTorch's NCHW), so fc1's rows are indexed as the program's were.
"""
import torch
import torch.nn as nn
import torch.nn.functional as F

from zoo_common import Subject, tf_truncated_normal_


def _weight(*shape):
    return nn.Parameter(tf_truncated_normal_(torch.empty(*shape), std=0.1))


def _bias(n):
    return nn.Parameter(torch.full((n,), 0.1))


class MnistCnn(nn.Module):
    def __init__(self):
        super().__init__()
        torch.manual_seed(24)
        self.conv1_w = _weight(32, 1, 5, 5)
        self.conv1_b = _bias(32)
        self.conv2_w = _weight(64, 32, 5, 5)
        self.conv2_b = _bias(64)
        self.fc1_w = _weight(3136, 1024)
        self.fc1_b = _bias(1024)
        self.fc2_w = _weight(1024, 10)
        self.fc2_b = _bias(10)

    def forward(self, x, y_label):
        h = x.reshape(-1, 1, 28, 28)
        h = torch.relu(F.conv2d(h, self.conv1_w, padding=2) + self.conv1_b.view(1, -1, 1, 1))
        h = F.max_pool2d(h, 2, 2)
        h = torch.relu(F.conv2d(h, self.conv2_w, padding=2) + self.conv2_b.view(1, -1, 1, 1))
        h = F.max_pool2d(h, 2, 2)
        h = h.permute(0, 2, 3, 1).reshape(-1, 7 * 7 * 64)
        h = torch.relu(h.matmul(self.fc1_w) + self.fc1_b)
        y = torch.softmax(h.matmul(self.fc2_w) + self.fc2_b, dim=1)
        loss = -torch.sum(y_label * torch.log(y))
        return y, loss


def build():
    g = torch.Generator().manual_seed(1024)
    x = torch.rand(4, 784, generator=g)
    y_label = torch.eye(10)[torch.tensor([0, 3, 7, 9])]
    return Subject(model=MnistCnn(), inputs={"x": x, "y_label": y_label}, outputs=["y", "loss"], opset=13)
