"""Bug 28a — SC_DNN, variant `sc_train_creg` (TF): a stochastic-computing-aware 784-128-10 network.

Facts (SUBJECTS.md), adamsolomou/SC-DNN `ID_28/sc_train_creg_grist.py`:
- data: TF-MNIST; ONE batch of 500 (features [500,784] in [0,1], one-hot labels [500,10]) drawn before the loop and
  reused for ever; the study never mutates it.
- model: two "scaled" layers.
  sc_matmul(x, w, s_in, gain): m = max(s_in); x' = x·s_in/(m + 1e-7); s = Σ_rows |w| per output unit, S = s + 1e-7;
  z = (x'·w)/S; curr = m·S; z_up = z·gain; new_scale = curr/(gain + 1e-7); output clip(z_up, −1, 1), scale new_scale.
  sc_add(x, b, s_in): b' = b/s_in; output clip(x + b', −1, 1), scale s_in.
  Layer 1 = sc_matmul(X, w1 [784,128], ones[784], gain1 [128]) then sc_add(b1 [128]); layer 2 = sc_matmul(·, wout
  [128,10], layer-1 scales, gain2 [10]) then sc_add(bout [10]); logits = layer-2 output × layer-2 scale.
  Init: w1 = ZEROS (as shipped); wout, b1, bout ~ N(0,1); gain1 (G_matmul_1) ~ U(0,16), trainable = False; gain2
  (G_matmul_2) ~ U(0,16), trainable.
- loss: mean softmax_cross_entropy_with_logits(logits, Y) + 0.25·Σ_{w1,wout,b1,bout} Σ 2·(|a| − clip(|a|, −1, 1));
  dangerous ops DIV(curr, gain1 + 1e-7) and DIV(b, s_in). The TF cross-entropy op is the stable
  −Σ y·log_softmax(logits), written so here.
- training: Adam lr 0.1 (TF defaults) on w1, wout, b1, bout and gain2, one step per loop on the fixed batch.
- hazard: division by the layer-1 gain and scale. The study searched the VARIABLE gain1, not the input, with a Newton
  step (O = min|gain1|, δ = O/(∂O/∂gain1), gain1 ← clip(gain1 − δ, 0, 16), assigned by a new tf.assign each loop).
  results.txt: @4@ in 1.64 s. Analysis: the NaN is injected by the Newton update itself — ∂O/∂gain1 is one-hot, so δ
  = +inf elsewhere and the whole vector clips to 0; then O = 0 and ∂O/∂gain1 = 0 (|·|′(0) = 0), δ = 0/0 = NaN is
  assigned to gain1 and the loss turns NaN. With gain1 = 0 the program's own divisions stay finite (1e-7/1e-7 = 1).

Here gain1 is a non-trainable initializer named `gain1` (the manifest's train params leave it out). No seeds in the
program; this file seeds torch for determinism.
"""
import torch
import torch.nn as nn

from zoo_common import Subject

EPS = 1e-7


def sc_matmul(x, w, s_in, gain):
    m = torch.max(s_in)
    x_scaled = x * s_in / (m + EPS)
    S = torch.sum(torch.abs(w), dim=0) + EPS
    z = x_scaled.matmul(w) / S
    curr = m * S
    z_up = z * gain
    new_scale = curr / (gain + EPS)
    return torch.clamp(z_up, -1.0, 1.0), new_scale


def sc_add(x, b, s_in):
    b_scaled = b / s_in
    return torch.clamp(x + b_scaled, -1.0, 1.0), s_in


def creg(a):
    return torch.sum(2 * (torch.abs(a) - torch.clamp(torch.abs(a), -1.0, 1.0)))


class ScDnn(nn.Module):
    def __init__(self):
        super().__init__()
        torch.manual_seed(28)
        self.w1 = nn.Parameter(torch.zeros(784, 128))
        self.wout = nn.Parameter(torch.randn(128, 10))
        self.b1 = nn.Parameter(torch.randn(128))
        self.bout = nn.Parameter(torch.randn(10))
        self.gain1 = nn.Parameter(torch.rand(128) * 16, requires_grad=False)
        self.gain2 = nn.Parameter(torch.rand(10) * 16)

    def forward(self, features, labels):
        s_in = torch.ones(784)
        h, scale1 = sc_matmul(features, self.w1, s_in, self.gain1)
        h, scale1 = sc_add(h, self.b1, scale1)
        h, scale2 = sc_matmul(h, self.wout, scale1, self.gain2)
        h, scale2 = sc_add(h, self.bout, scale2)
        logits = h * scale2
        cross_entropy = torch.mean(-torch.sum(labels * torch.log_softmax(logits, dim=1), dim=1))
        loss = cross_entropy + 0.25 * (creg(self.w1) + creg(self.wout) + creg(self.b1) + creg(self.bout))
        return logits, loss


def build():
    g = torch.Generator().manual_seed(1028)
    features = torch.rand(4, 784, generator=g)
    labels = torch.eye(10)[torch.tensor([0, 3, 7, 9])]
    return Subject(model=ScDnn(), inputs={"features": features, "labels": labels}, outputs=["logits", "loss"],
                   opset=13)
