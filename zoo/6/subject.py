"""Bug 6 — StackOverFlow-1 (TF): the "Deep MNIST for experts" CNN (TF-Program-Bugs StackOverflow IPS-1).

Facts (SUBJECTS.md): TF-MNIST, x [N,784] in [0,1], y_ [N,10] one-hot, a keep_prob placeholder; N = 50, k = 2,
switching from next_batch(50). Model: reshape to 28×28×1; conv 5×5 1→32 stride 1 SAME + bias, ReLU, max-pool 2×2
stride 2 SAME → 14×14×32; conv 5×5 32→64 + bias, ReLU, max-pool → 7×7×64; flatten 3136 (NHWC order); FC 3136→1024,
ReLU; dropout(keep_prob); FC 1024→10; softmax → y_conv. Weights truncated_normal(std 0.1) (redrawn beyond 2σ),
biases constant 0.1. Loss: cross_entropy = −Σ_{batch,class} y_·LOG(y_conv) (a sum). Training: Adam lr 1e-4, one step
per iteration on the updated batch, keep_prob 0.5; the monitored run uses keep_prob 1.0. Hazard: log(y_conv) at an
entry equal to 0; objective min|y_conv|; x clipped to [0,1]. Random init: the input gradient is non-zero from
iteration 1. No recorded result. Seeds tf/np 20180130.
"""
import torch
import torch.nn as nn

from zoo_common import Subject, tf_truncated_normal_


class DeepMnistCNN(nn.Module):
    def __init__(self, keep_prob=0.5):
        super().__init__()
        torch.manual_seed(20180130)
        self.conv1 = nn.Conv2d(1, 32, 5, padding=2)      # SAME, stride 1
        self.conv2 = nn.Conv2d(32, 64, 5, padding=2)
        self.fc1 = nn.Linear(7 * 7 * 64, 1024)
        self.fc2 = nn.Linear(1024, 10)
        self.pool = nn.MaxPool2d(2, 2)                   # SAME on even sizes: no padding
        self.dropout = nn.Dropout(1.0 - keep_prob)
        for layer in (self.conv1, self.conv2, self.fc1, self.fc2):
            tf_truncated_normal_(layer.weight, 0.1)
            nn.init.constant_(layer.bias, 0.1)

    def forward(self, x, y_):
        h = x.reshape(-1, 1, 28, 28)
        h = self.pool(torch.relu(self.conv1(h)))
        h = self.pool(torch.relu(self.conv2(h)))
        h = h.permute(0, 2, 3, 1).reshape(-1, 7 * 7 * 64)  # TensorFlow's NHWC flatten order
        h = self.dropout(torch.relu(self.fc1(h)))
        y_conv = torch.softmax(self.fc2(h), dim=1)
        cross_entropy = -(y_ * torch.log(y_conv)).sum()
        return y_conv, cross_entropy


def build():
    g = torch.Generator().manual_seed(1)
    x = torch.rand(3, 784, generator=g)
    y_ = torch.nn.functional.one_hot(torch.tensor([7, 2, 1]), 10).float()
    return Subject(model=DeepMnistCNN(), inputs={"x": x, "y_": y_}, outputs=["y_conv", "cross_entropy"], opset=13,
                   training=True)
