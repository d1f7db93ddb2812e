"""Bug 45b — DataStructure, MNIST_Digit_classification_using_CNN2_grist.py (TF).

Facts (SUBJECTS.md): the TF "Deep MNIST" CNN from the same tutorial as 45a.
Data: TF-MNIST, x [50,784] in [0,1] (searched, clipped to the first batch's range [0,1]), reshaped to 28×28×1 inside
the model; y_ [50,10] one-hot. N = 50 (k = 2). Extra input: the scalar keep_prob, 0.5 in BOTH the monitored and the
training run (shared feed).
Model: conv 5×5 1→32 SAME + b, ReLU → max-pool 2×2 SAME → conv 5×5 32→64 SAME + b, ReLU → max-pool → 7×7×64 → flatten
3136 (TF's NHWC order) → FC 1024 ReLU → dropout(keep_prob) → FC 10 → softmax y_CNN. Init: weights truncated-normal
std 0.1, biases constant 0.1. Loss cross_entropy = mean_N(-Σ_10 y_·LOG(y_CNN)). Training: Adam lr 1e-4 (TF), one step
per loop on the pre-update batch. Hazard: log(softmax) underflow; objective min|y_CNN|; the search is active from
loop 1 (non-zero weights) with slow Adam training alongside. No GRIST number. No seeds in the program (seeded here).
Here the keep_prob dropout is nn.Dropout(0.5), exported in training mode.
"""
import torch
import torch.nn as nn

from zoo_common import Subject, tf_truncated_normal_


class DeepMnist(nn.Module):
    def __init__(self, seed):
        super().__init__()
        torch.manual_seed(seed)
        self.conv1 = nn.Conv2d(1, 32, 5, padding=2)
        self.conv2 = nn.Conv2d(32, 64, 5, padding=2)
        self.pool = nn.MaxPool2d(2, 2)
        self.fc1 = nn.Linear(7 * 7 * 64, 1024)
        self.dropout = nn.Dropout(1 - 0.5)  # keep_prob 0.5
        self.fc2 = nn.Linear(1024, 10)
        with torch.no_grad():
            for layer in (self.conv1, self.conv2, self.fc1, self.fc2):
                tf_truncated_normal_(layer.weight, 0.1)
                layer.bias.fill_(0.1)

    def forward(self, x, y_):
        h = x.reshape(-1, 1, 28, 28)                          # TF's [-1,28,28,1]: the same layout for one channel
        h = self.pool(torch.relu(self.conv1(h)))
        h = self.pool(torch.relu(self.conv2(h)))
        h = h.permute(0, 2, 3, 1).reshape(-1, 7 * 7 * 64)     # flatten in TF's NHWC order
        h = self.dropout(torch.relu(self.fc1(h)))
        y_CNN = torch.softmax(self.fc2(h), dim=1)
        cross_entropy = torch.mean(-torch.sum(y_ * torch.log(y_CNN), dim=1))
        return y_CNN, cross_entropy


def build():
    g = torch.Generator().manual_seed(451)
    x = torch.rand(3, 784, generator=g)
    y_ = torch.nn.functional.one_hot(torch.tensor([7, 2, 1]), 10).float()
    return Subject(model=DeepMnist(45), inputs={"x": x, "y_": y_}, outputs=["y_CNN", "cross_entropy"], opset=13,
                   training=True)
