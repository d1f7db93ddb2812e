"""Bug 49a — deep_learning_Nikolenko_and_Co.ch10_04_06_Pic_10_08 (TF).

Facts (SUBJECTS.md): the conditional VAE (CVAE) on MNIST of Nikolenko et al., "Deep Learning", ch. 10, Fig. 10.8
(ch10_04_06_Pic_10_08_grist.py), numerically identical to 43a.
Data: TF-MNIST x [100,784] in [0,1] (searched, clipped to [0,1]) and y [100,10] one-hot labels fed as a model input —
not mutated, but switched together with their images; eps [100,2] ~ N(0,1) drawn per loop and shared by the monitored
and training runs. Switching on (k = 5).
Model (n_z = 2): encoder concat(x, y) (794) → 500 softplus → 500 softplus → z_mean [2], z_log_sigma_sq (zlss) [2];
zlss is clipped to [-87, 87] and REASSIGNED (every later use sees the clipped value); z = z_mean + sqrt(exp(zlss))·eps;
decoder concat(z, y) (12) → 500 softplus → 500 softplus → 784 sigmoid = x_rec. Init: Xavier-uniform with the
concatenated fan-ins (794, 12), biases zeros. A dead branch tanh(concat(z_mean, y)·W_dec1 + b_dec1) is built and unused
(not modelled: it feeds nothing).
Loss cost = mean_N[ -Σ_784( x·LOG(x_rec + 1e-10) + (1-x)·log(1e-10 + 1 - x_rec) ) - 0.5·Σ_2(1 + zlss - z_mean² - exp(zlss)) ]
with the clipped zlss. In float32 `1e-10 + 1` is exactly 1.0, so the second term is log(1 - x_rec) unguarded (written
literally below so the exported constant is 1.0).
Training: Adam lr 1e-3 (TF), one step per loop on the pre-update batch; no pre-training.
Hazard: the study's target is log(x_rec + 1e-10) with objective min|x_reconstr_mean| (T0), mutating x only; that log is
protected (≥ -23). The realistic non-finite path is log(1 - x_rec) = log(0) once the decoder saturates (x_rec rounds
to 1.0 for a logit ≳ 16.6) on the repeatedly trained persistent batch: +inf (x < 1) or NaN (x = 1) in the loss.
The study measured @452@ in 15.33 s (results.txt). The plotting code after the loop never runs (it would use an
undefined `ys`); unlike 43a there is no scatter helper or test-batch draw.
"""
import torch
import torch.nn as nn
import torch.nn.functional as F

from zoo_common import Subject, tf_glorot_uniform_


def dense(n_in, n_out):
    w = nn.Parameter(tf_glorot_uniform_(torch.empty(n_in, n_out)))
    return w, nn.Parameter(torch.zeros(n_out))


class Cvae(nn.Module):
    def __init__(self, seed, n_z=2):
        super().__init__()
        torch.manual_seed(seed)
        self.W_e1, self.b_e1 = dense(784 + 10, 500)
        self.W_e2, self.b_e2 = dense(500, 500)
        self.W_mean, self.b_mean = dense(500, n_z)
        self.W_lss, self.b_lss = dense(500, n_z)
        self.W_d1, self.b_d1 = dense(n_z + 10, 500)
        self.W_d2, self.b_d2 = dense(500, 500)
        self.W_out, self.b_out = dense(500, 784)

    def forward(self, x, y, eps):
        h = F.softplus(torch.cat([x, y], dim=1).matmul(self.W_e1) + self.b_e1)
        h = F.softplus(h.matmul(self.W_e2) + self.b_e2)
        z_mean = h.matmul(self.W_mean) + self.b_mean
        z_log_sigma_sq = torch.clamp(h.matmul(self.W_lss) + self.b_lss, -87.0, 87.0)
        z = z_mean + torch.sqrt(torch.exp(z_log_sigma_sq)) * eps
        g = F.softplus(torch.cat([z, y], dim=1).matmul(self.W_d1) + self.b_d1)
        g = F.softplus(g.matmul(self.W_d2) + self.b_d2)
        x_reconstr_mean = torch.sigmoid(g.matmul(self.W_out) + self.b_out)
        reconstr_loss = -torch.sum(x * torch.log(x_reconstr_mean + 1e-10)
                                   + (1 - x) * torch.log(1e-10 + 1 - x_reconstr_mean), dim=1)
        latent_loss = -0.5 * torch.sum(1 + z_log_sigma_sq - z_mean * z_mean - torch.exp(z_log_sigma_sq), dim=1)
        cost = torch.mean(reconstr_loss + latent_loss)
        return x_reconstr_mean, z_log_sigma_sq, cost


def build():
    g = torch.Generator().manual_seed(491)
    x = torch.rand(3, 784, generator=g)
    y = torch.nn.functional.one_hot(torch.tensor([5, 0, 4]), 10).float()
    eps = torch.randn(3, 2, generator=g)
    # training=True: the model has no dropout or batch-norm, but torch's eval-mode export merges initializers of
    # equal value (the zero biases) into one, which would tie them in training.
    return Subject(model=Cvae(49), inputs={"x": x, "y": y, "eps": eps},
                   outputs=["x_reconstr_mean", "z_log_sigma_sq", "cost"], opset=13, training=True)
