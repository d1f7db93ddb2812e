"""Bug 5 — MatchZoo (PyTorch): MatchZoo-py unit test test_rank_crossentropy_loss with RankCrossEntropyLossFGSM.

Facts (SUBJECTS.md): no dataset. y_pred = pred_value [6,1] = [0.8, 0.1, 0.1, 0.8, 0.1, 0.1] (the searched tensor),
y_true [6,1] = [1, 0, 0, 0, 1, 0]; no switching, no clip. Model: no parameters; num_neg = 2, so rows are regrouped
with stride 3: logits [2,3] = [[p0,p1,p2],[p3,p4,p5]], labels [2,3] = [[1,0,0],[0,1,0]]. Loss:
loss = −mean_rows(Σ_cols labels·SQRT(softmax_row(logits))) — the non-FGSM sibling and upstream MatchZoo have log
here; the function also returns s = softmax(logits), the objective variable. No training. Hazard: sqrt(s) at s = 0,
where the value is 0 and only the derivative is infinite (s ≥ 0, so no negative argument); objective min|s|.
Analysis: the four tied minimal entries fall and the positive logit rises by 0.15 per iteration; at the 346th
forward pass they underflow to exactly 0, the loss stays −0.5 (labels·sqrt(0) = 0), and |·|'(0) = 0 stalls the
search: no one found a way for the shipped script to produce a non-finite loss. RANUM quotes a GRIST-paper time of
0.34 s, which matches the ≈ 346-iteration softmax-underflow timescale (unverified). The counter advances 2 per loop.
"""
import torch
import torch.nn as nn

from zoo_common import Subject


class RankCrossEntropySqrt(nn.Module):
    def __init__(self, num_neg=2):
        super().__init__()
        self.group = num_neg + 1

    def forward(self, y_pred, y_true):
        logits = y_pred.reshape(-1, self.group)
        labels = y_true.reshape(-1, self.group)
        s = torch.softmax(logits, dim=-1)
        loss = -(labels * torch.sqrt(s)).sum(dim=-1).mean()
        return s, loss


def build():
    y_pred = torch.tensor([[0.8], [0.1], [0.1], [0.8], [0.1], [0.1]], dtype=torch.float32)
    y_true = torch.tensor([[1], [0], [0], [0], [1], [0]], dtype=torch.float32)
    return Subject(model=RankCrossEntropySqrt(), inputs={"y_pred": y_pred, "y_true": y_true}, outputs=["s", "loss"],
                   opset=13, batch_dim=False)
