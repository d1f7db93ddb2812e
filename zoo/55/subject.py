"""Bug 55 — practice, logistic_regression.py (TF).

Facts (SUBJECTS.md): despite the file name, the TF Deep-MNIST CNN, the same architecture and init as bug 45b.
Data: TF-MNIST, X [50,784] in [0,1] (searched, clipped to the first batch's range [0,1]), Y [50,10] one-hot; N = 50
(k = 2). Extra input: the scalar keep_prob, 0.5 in BOTH the monitored and the training run.
Model: conv 5×5 1→32 SAME + b, ReLU → max-pool 2×2 → conv 5×5 32→64 SAME + b, ReLU → max-pool → 7×7×64 → FC 1024 ReLU →
dropout(keep_prob) → FC 10 → softmax `prediction`. Weights truncated-normal std 0.1, biases 0.1. A softmax regression
`pred` (W [784,10] and b zeros) is also defined and unused (not modelled: it feeds nothing).
Loss cross_entropy = mean_N(-Σ_10 Y·LOG(prediction)). Training: Adam lr 1e-4 (TF), one step per loop on the pre-update
batch (the unused learnin_rate = 0.1 / trainin_epochs are not modelled). Hazard: log(softmax) underflow; objective
min|prediction|; the search is active from loop 1, with slow training. No GRIST number. Two sessions exist in the
program; only the InteractiveSession is used, which is what this models.
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

    def forward(self, X, Y):
        h = X.reshape(-1, 1, 28, 28)                          # TF's [-1,28,28,1]: the same layout for one channel
        h = self.pool(torch.relu(self.conv1(h)))
        h = self.pool(torch.relu(self.conv2(h)))
        h = h.permute(0, 2, 3, 1).reshape(-1, 7 * 7 * 64)     # flatten in TF's NHWC order
        h = self.dropout(torch.relu(self.fc1(h)))
        prediction = torch.softmax(self.fc2(h), dim=1)
        cross_entropy = torch.mean(-torch.sum(Y * torch.log(prediction), dim=1))
        return prediction, cross_entropy


def build():
    g = torch.Generator().manual_seed(550)
    X = torch.rand(3, 784, generator=g)
    Y = torch.nn.functional.one_hot(torch.tensor([3, 8, 6]), 10).float()
    return Subject(model=DeepMnist(55), inputs={"X": X, "Y": Y}, outputs=["prediction", "cross_entropy"], opset=13,
                   training=True)
