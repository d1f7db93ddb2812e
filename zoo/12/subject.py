"""Bug 12 — Skorch (PyTorch): the skorch MNIST example MLP, trained through a GRIST-instrumented skorch copy.

Facts (SUBJECTS.md): fetch_openml('mnist_784') as float32 / 255 in [0,1], int64 class ids (not one-hot);
train_test_split(test_size 0.25, random_state 42) then skorch's stratified 5-fold CV split keep ≈ 42,000 training
rows; DataLoader batch 128, no shuffle. The persistent batch is the first DataLoader batch: Xi [128,784],
yi [128] int64; N = 128, k = 6; clamp [0,1]; switching from the next DataLoader item. Model: Linear(784→98) → ReLU →
Dropout(p=0.5) → Linear(98→10) → softmax over the last dim; PyTorch default Linear init after torch.manual_seed(0).
Loss: NLLLoss_mean(LOG(y_pred), y) = −mean_n log y_pred[n, y_n] (skorch applies torch.log to the softmax output).
Training: SGD lr 0.1, no momentum, one step per loop on the graph of the pre-update batch; the module is in train
mode, so dropout 0.5 is active for the objective and the monitored loss alike (a fresh mask every evaluation).
Hazard: log(y_pred) at an entry equal to 0; objective min|y_pred| over [128,10]; Xi clamped to [0,1]. A zero at a
label entry gives +inf at once; elsewhere NLL ignores it in the forward but log's backward gives 0/0 = NaN, SGD
writes NaN into the weights and the next loss is NaN. No recorded result. The counter advances 2 per loop
(switching every 50 loops).
"""
import torch
import torch.nn as nn
import torch.nn.functional as F

from zoo_common import Subject


class ClassifierModule(nn.Module):
    def __init__(self):
        super().__init__()
        torch.manual_seed(0)
        self.hidden = nn.Linear(784, 98)
        self.dropout = nn.Dropout(0.5)
        self.output = nn.Linear(98, 10)

    def forward(self, X, y):
        h = self.dropout(torch.relu(self.hidden(X)))
        y_pred = torch.softmax(self.output(h), dim=-1)
        loss = F.nll_loss(torch.log(y_pred), y)
        return y_pred, loss


def build():
    g = torch.Generator().manual_seed(42)
    X = torch.rand(4, 784, generator=g)
    y = torch.tensor([5, 0, 4, 1], dtype=torch.int64)
    return Subject(model=ClassifierModule(), inputs={"X": X, "y": y}, outputs=["y_pred", "loss"], opset=13,
                   training=True)
