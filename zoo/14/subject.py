"""Bug 14 — MNIST (TF): betasspace/MNIST v3, LeNet-5 (train_grist.py, model.py).

Facts (SUBJECTS.md): TF-MNIST read with reshape=False ([N,28,28,1] in [0,1]) and zero-padded by 2 pixels on each
side to [N,32,32,1]; one-hot labels. The 55,000 training pairs are shuffled once (sklearn.utils.shuffle, numpy
seed 0); the first batch is rows 0–63 and at loop L the "new" batch is rows [64(L−1), 64L); N = 64, k = 3.
Model: conv 5×5 1→6 VALID + bias, ReLU (28×28×6) → max-pool 2×2 stride 2 (14×14×6) → conv 5×5 6→16 VALID + bias,
ReLU (10×10×16) → max-pool (5×5×16) → conv 5×5 16→120 VALID + bias, ReLU (1×1×120) → flatten 120 → FC 120→84, ReLU
→ FC 84→10 → softmax y. Weights truncated normal (mean 0, std 0.1), biases zeros. Loss: −Σ_{batch,class}
label·LOG(y). Training: gradient descent lr 0.001 on the pre-update batch (the train step reuses the monitor feed).
Hazard: log(y) at an entry equal to 0; objective min|y|; x (the padded image, border included) clipped to [0,1].
The only number is the paper's 86.23 s (quoted by RANUM). No TF seed. Harness slip: the new-batch slice is empty
from L = 861 on, so a failing run dies with IndexError at the switch of iteration 900.

Data: the manifest cannot pad, so build() writes data.npz: the first 384 rows of the TF training split (file rows
5000–59,999 of Fashion-MNIST, standing in for MNIST) after a seed-0 permutation, zero-padded to 32×32, as uint8
pixels ([N,32,32,1]) and uint8 labels.
"""
import gzip
import os

import numpy as np
import torch
import torch.nn as nn

from zoo_common import Subject, tf_truncated_normal_

HERE = os.path.dirname(os.path.abspath(__file__))
FASHION = "/usr/share/datasets/fashion-mnist"
ROWS = 384


def _idx(name, offset):
    with gzip.open(os.path.join(FASHION, name)) as f:
        return np.frombuffer(f.read(), np.uint8, offset=offset)


def write_data(path):
    """Padded, once-shuffled TF training split: images uint8 [ROWS,32,32,1], labels uint8 [ROWS]."""
    images = _idx("train-images-idx3-ubyte.gz", 16).reshape(-1, 28, 28)[5000:]
    labels = _idx("train-labels-idx1-ubyte.gz", 8)[5000:]
    order = np.random.RandomState(0).permutation(len(images))[:ROWS]
    padded = np.zeros((ROWS, 32, 32, 1), np.uint8)
    padded[:, 2:30, 2:30, 0] = images[order]
    arrays = {"images": padded, "labels": labels[order].copy()}
    if os.path.exists(path):                                 # rewrite only on change (zip entries carry times)
        with np.load(path) as old:
            if set(old.files) == set(arrays) and all(np.array_equal(old[k], v) for k, v in arrays.items()):
                return
    np.savez_compressed(path, **arrays)


class LeNet5(nn.Module):
    def __init__(self):
        super().__init__()
        torch.manual_seed(0)
        self.conv1 = nn.Conv2d(1, 6, 5)
        self.conv2 = nn.Conv2d(6, 16, 5)
        self.conv3 = nn.Conv2d(16, 120, 5)
        self.fc1 = nn.Linear(120, 84)
        self.fc2 = nn.Linear(84, 10)
        self.pool = nn.MaxPool2d(2, 2)
        for layer in (self.conv1, self.conv2, self.conv3, self.fc1, self.fc2):
            tf_truncated_normal_(layer.weight, 0.1)
            nn.init.zeros_(layer.bias)

    def forward(self, input_x, label):
        h = input_x.permute(0, 3, 1, 2)                  # NHWC placeholder → NCHW
        h = self.pool(torch.relu(self.conv1(h)))
        h = self.pool(torch.relu(self.conv2(h)))
        h = torch.relu(self.conv3(h)).reshape(-1, 120)
        h = torch.relu(self.fc1(h))
        y = torch.softmax(self.fc2(h), dim=1)
        loss = -(label * torch.log(y)).sum()
        return y, loss


def build():
    path = os.path.join(HERE, "data.npz")
    if os.path.isdir(FASHION):
        write_data(path)
    data = np.load(path)
    x = torch.from_numpy(data["images"][:4].astype(np.float32) / 255.0)
    label = torch.nn.functional.one_hot(torch.from_numpy(data["labels"][:4].astype(np.int64)), 10).float()
    return Subject(model=LeNet5(), inputs={"input_x": x, "label": label}, outputs=["y", "loss"], opset=13)
