"""Bug 63 — gongdols.main (PyTorch).

Facts (SUBJECTS.md): an RBM on MNIST (main_grist.py): bug 62's program without its unused add_noise helper, and with
MNIST instead of FashionMNIST. Data: torchvision MNIST train with ToTensor(), DataLoader batch 64 without shuffle (the
first batch is the first 64 training images); `data` [64,784] in [0,1], real-valued visible units (the bernoulli()
line is commented out); labels int64, unused. Clip [0,1]; switching on (k = 3, every 50 loops).
Model: RBM n_vis 784, n_hid 500, k = 1. W [500,784] = N(0,1)·0.01 (unseeded torch RNG; seeded here), v_bias and h_bias
zeros. Gibbs sampler relu(sign(p - U(0,1))): v → h → v1 (the extra v1 → h pass is unused, not modelled).
free_energy(v) = mean_B[ -Σ_500 LOG(EXP(wx_b) + 1) - v·v_bias ], wx_b = v·Wᵀ + h_bias. Loss = free_energy(v) -
free_energy(v1). Training: torch Adam lr 0.005 (default betas and eps), one step per loop (on the monitored forward).
Hazard: exp(wx_b) overflows for wx_b > 88.72: inf, log(inf) = inf, free energy -inf, loss -inf or NaN. The study's
objective (T+, -max wx_b) is the one of the last free_energy call, on v1, which depends on the data only through
sign(): ∂O/∂data is all zeros, the input never moves, and only Adam training on the persistent batch (plus 3 rows
switched every 50 loops) can push wx_b past 88.7. A re-run of the unmodified script (t10k stand-in, ~1,550 loops): max
wx_b(v1) rose from ≈ 3 to ≈ 18 and stayed finite. No GRIST number. The iteration counter advances 2 per loop.
Modelling: the Gibbs noise U(0,1) of the two samplings is two model inputs (u_h [N,500], u_v [N,784]) that the
manifest redraws every iteration, so the monitored pass and the training step share one draw (as the program's single
forward did) and the export's reference output is deterministic.
"""
import torch
import torch.nn as nn

from zoo_common import Subject


class RBM(nn.Module):
    def __init__(self, n_vis=784, n_hid=500):
        super().__init__()
        torch.manual_seed(63)
        self.W = nn.Parameter(torch.randn(n_hid, n_vis) * 0.01)
        self.v_bias = nn.Parameter(torch.zeros(n_vis))
        self.h_bias = nn.Parameter(torch.zeros(n_hid))

    def free_energy(self, v):
        vbias_term = v.matmul(self.v_bias)
        wx_b = v.matmul(self.W.t()) + self.h_bias
        hidden_term = torch.log(torch.exp(wx_b) + 1).sum(dim=1)
        return (-hidden_term - vbias_term).mean()

    def forward(self, data, u_h, u_v):
        v = data
        p_h = torch.sigmoid(v.matmul(self.W.t()) + self.h_bias)
        h = torch.relu(torch.sign(p_h - u_h))
        p_v = torch.sigmoid(h.matmul(self.W) + self.v_bias)
        v1 = torch.relu(torch.sign(p_v - u_v))
        loss = self.free_energy(v) - self.free_energy(v1)
        return v1, loss


def build():
    g = torch.Generator().manual_seed(630)
    data = torch.rand(4, 784, generator=g)
    u_h = torch.rand(4, 500, generator=g)
    u_v = torch.rand(4, 784, generator=g)
    return Subject(model=RBM(), inputs={"data": data, "u_h": u_h, "u_v": u_v}, outputs=["v1", "loss"], opset=13)
