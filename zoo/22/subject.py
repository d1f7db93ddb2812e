"""Bug 22 — git1_rbm `My_pytorch1.py` (PyTorch): a Bernoulli RBM trained by CD-1 on MNIST.

Facts (SUBJECTS.md): torchvision MNIST train with ToTensor ([0,1], not binarised), DataLoader batch 64 without
shuffle; the batch [64,1,28,28] is viewed as [64,784] (the int64 labels are carried but unused). N = 64, k = 3,
clamp [0,1]. RBM n_vis 784, n_hid 500, k = 1: W [500,784] = 0.01·N(0,1), v_bias [784] and h_bias [500] zeros.
Hidden sample p_h = sigmoid(v·Wᵀ + h_bias), h = relu(sign(p_h − U(0,1))); visible sample p_v = sigmoid(h·W + v_bias),
v1 = relu(sign(p_v − U(0,1))); forward returns (v, v1). Loss: free energy F(u) = mean_rows(−Σ_hidden log(1 +
EXP(wx_b)) − u·v_bias) with wx_b = u·Wᵀ + h_bias; loss = F(v) − F(v1). Training: SGD lr 0.1 (no momentum), one step
per loop on the pre-update batch. Hazard: exp(wx_b) overflows for wx_b > 88.72 (log(inf) = inf, loss ±inf/NaN). The
study's objective is −max wx_b of the SECOND free-energy call (F(v1) overwrote the stored objective). Zero-gradient
search: v1 depends on the input only through sign(), so ∂O/∂x = 0 and only SGD on the persistent batch (with FIFO
rotation of 3 rows every 50 loops) can move anything; whether W grows enough within 30 min is undetermined. No
study result. The counter advances 2 per loop.

The Gibbs noise U(0,1) is drawn by the program in every forward; here it is two model inputs (u_h [N,500], u_v
[N,784]) that the manifest re-draws every iteration, so the monitored pass and the training step share one draw (as
the program's single forward did) and the export's reference output is deterministic.
"""
import torch
import torch.nn as nn

from zoo_common import Subject


class RBM(nn.Module):
    def __init__(self, n_vis=784, n_hid=500):
        super().__init__()
        torch.manual_seed(22)
        self.W = nn.Parameter(torch.randn(n_hid, n_vis) * 0.01)
        self.v_bias = nn.Parameter(torch.zeros(n_vis))
        self.h_bias = nn.Parameter(torch.zeros(n_hid))

    def free_energy(self, u):
        wx_b = u.matmul(self.W.t()) + self.h_bias
        vbias_term = u.matmul(self.v_bias)
        hidden_term = torch.log(1 + torch.exp(wx_b)).sum(dim=1)
        return (-hidden_term - vbias_term).mean()

    def forward(self, x, u_h, u_v):
        v = x.view(-1, 784)
        p_h = torch.sigmoid(v.matmul(self.W.t()) + self.h_bias)
        h = torch.relu(torch.sign(p_h - u_h))
        p_v = torch.sigmoid(h.matmul(self.W) + self.v_bias)
        v1 = torch.relu(torch.sign(p_v - u_v))
        loss = self.free_energy(v) - self.free_energy(v1)
        return v1, loss


def build():
    g = torch.Generator().manual_seed(1022)
    x = torch.rand(4, 1, 28, 28, generator=g)
    u_h = torch.rand(4, 500, generator=g)
    u_v = torch.rand(4, 784, generator=g)
    return Subject(model=RBM(), inputs={"x": x, "u_h": u_h, "u_v": u_v}, outputs=["v1", "loss"], opset=13)
