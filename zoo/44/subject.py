"""Bug 44 — CNNRelationExtraction (TF).

Facts (SUBJECTS.md): a text-CNN class for relation extraction, exercised by its MNIST example
(examples/cnn-mnist/mnist_example_grist.py importing the class from CNN_grist.py).
Data: TF-MNIST train images reshaped to x [N,28,28,1] (NHWC) in [0,1], searched and clipped to the first batch's range
[0,1]; labels one-hot → class ids → int one-hot [N,10] fed to the float placeholder y_. N = 50 (k = 2). Batches come
from a sequential Batcher without shuffling (slices of 50 in file order, wrapping at the end). Extra input: the scalar
keep_prob, 0.5 in BOTH the monitored and the training run (one `self.dropout = 0.5` feed), so the monitored loss is
stochastic.
Model: conv 5×5, 1→16, stride 1, SAME, + bias, ReLU → max-pool 2×2 stride 2 SAME → 14×14×16 → flatten 3136 (TF's
NHWC order) → FC 128 ReLU → dropout(keep_prob) → FC 10 → softmax y_conv. Init: every weight truncated-normal std 0.1,
every bias constant 0.1.
Loss cross_entropy = -Σ_{batch,class} y_·LOG(y_conv), a sum. Training: Adagrad lr 1e-3 (TF: accumulator 0.1), one
step per loop on the pre-update batch. Hazard: log(softmax) underflow; objective min|y_conv| over [50,10]. The weights
are non-zero, so the search moves from loop 1 with training alongside. The entry file's first line records a GRIST
success at iteration 4,522 after 2 min 34 s; the original example ran 103,300 iterations in 30 minutes with no NaN.
Here the keep_prob dropout is nn.Dropout(0.5), exported in training mode.
"""
import torch
import torch.nn as nn

from zoo_common import Subject, tf_truncated_normal_


class CnnMnist(nn.Module):
    def __init__(self):
        super().__init__()
        torch.manual_seed(44)
        self.conv = nn.Conv2d(1, 16, 5, stride=1, padding=2)
        self.pool = nn.MaxPool2d(2, 2)
        self.fc1 = nn.Linear(14 * 14 * 16, 128)
        self.dropout = nn.Dropout(1 - 0.5)  # keep_prob 0.5
        self.fc2 = nn.Linear(128, 10)
        with torch.no_grad():
            for layer in (self.conv, self.fc1, self.fc2):
                tf_truncated_normal_(layer.weight, 0.1)
                layer.bias.fill_(0.1)

    def forward(self, x, y_):
        h = torch.relu(self.conv(x.permute(0, 3, 1, 2)))      # NHWC → NCHW
        h = self.pool(h)
        h = h.permute(0, 2, 3, 1).reshape(-1, 14 * 14 * 16)    # flatten in TF's NHWC order
        h = torch.relu(self.fc1(h))
        h = self.dropout(h)
        y_conv = torch.softmax(self.fc2(h), dim=1)
        cross_entropy = -torch.sum(y_ * torch.log(y_conv))
        return y_conv, cross_entropy


def build():
    g = torch.Generator().manual_seed(440)
    x = torch.rand(3, 28, 28, 1, generator=g)
    y_ = torch.nn.functional.one_hot(torch.tensor([5, 0, 4]), 10).float()
    return Subject(model=CnnMnist(), inputs={"x": x, "y_": y_}, outputs=["y_conv", "cross_entropy"], opset=13,
                   training=True)
