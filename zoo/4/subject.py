"""Bug 4 — Pytorch_Geometric_Fork (PyTorch): the VGAE unit test test_vgae of a PyG fork.

Facts (SUBJECTS.md): one fixed float32 tensor x = [[1,−1],[1,2],[2,1]] [3,2]; no labels, no dataset; batch 3, no
switching, no clip. Model: a VGAE whose encoder is the identity returning (x, x), so μ = logvar = x; no parameters.
encode in training mode draws z = μ + randn·exp(logvar) (unused); the script then calls eval(), where z = μ.
Loss (monitored): kl_loss = −0.5 · mean_rows(Σ_cols(1 + logvar − μ² − LOG(logvar))) — the fork has log(logvar)
where upstream PyG has exp(logvar), and the upstream clamp of logvar at 10 is commented out. No training; at most
10,000 search iterations. The study's objective was written for the upstream exp overflow (−max logvar, +0.15 per
step, ≈ 579 iterations to overflow), but the shipped log fails at once: log(−1) = NaN on the initial data, so the
study measured @1@ in 0.05 s (loss checked before the first update).
"""
import torch
import torch.nn as nn

from zoo_common import Subject


class VGAEKL(nn.Module):
    def forward(self, x):
        mu, logvar = x, x                              # identity encoder; eval mode: z = mu
        z = mu
        kl_loss = -0.5 * (1 + logvar - mu ** 2 - torch.log(logvar)).sum(dim=1).mean()
        return z, kl_loss


def build():
    x = torch.tensor([[1, -1], [1, 2], [2, 1]], dtype=torch.float32)
    return Subject(model=VGAEKL(), inputs={"x": x}, outputs=["z", "kl_loss"], opset=13)
