"""Bug 39b — deep_learning_Nikolenko_and_Co.ch10_04_04_Pic_10_06, the `_sqrt` variant (TF).

Facts (SUBJECTS.md): the Fig. 10.6 variational autoencoder of Nikolenko et al., "Deep Learning", ch. 10
(ch10_04_04_Pic_10_06_sqrt_grist.py), code-identical in substance to 36b: guarded reconstruction logs, 50 epochs of
pre-training, then GRIST on the latent log-variance.
Data: TF-MNIST x [100,784] in [0,1] (searched, clipped to [0,1]); eps [100,2] ~ numpy N(0,1), drawn once per loop and
shared by that loop's monitored and training runs. The persistent batch is drawn before the pre-training; switching is
commented out (no switching). Labels are not used.
Model (n_z = 2): encoder 784 → 500 softplus → 500 softplus → two linear heads z_mean [2] and z_log_sigma_sq (zlss) [2];
z = z_mean + SQRT(exp(clip(zlss, -100, 87)))·eps; decoder 2 → 500 softplus → 500 softplus → 784 sigmoid = x_rec.
Init: every weight Xavier-uniform U(±√(6/(fan_in+fan_out))) (tf.random_uniform), every bias zeros.
Loss cost = mean_N[ -Σ_784( x·log(clip(x_rec, 1e-6, 1)) + (1-x)·log(clip(1-x_rec, 1e-6, 1)) )
                    - 0.5·Σ_2( 1 + zlss - z_mean² - exp(clip(zlss, -100, 87)) ) ]  (the `1 + zlss` term unclipped).
Training: 50 epochs × 550 = 27,500 Adam (lr 1e-3) pre-training steps on fresh batches with fresh eps (no checks, inside
the 30-minute budget), then one Adam step per GRIST loop on the pre-update batch.
Hazard: sqrt(exp(clip(zlss))) with objective min zlss (no abs), driving the smallest zlss toward -∞. Under TF's FTZ
exp flushes to exactly 0 for zlss in (-100, -87.3); the forward stays finite (sqrt(0) = 0), but the training step's
backward computes sqrt' = 0.5/0 = inf and exp' gives inf·0 = NaN, which the clip's gradient mask lets through inside
[-100, 87] into the encoder weights; the NEXT monitored loss is NaN. Without FTZ exp(≥ -100) ≥ 3.7e-44 is never 0.
No GRIST number (the sibling 49b: 307 s including pre-training). Seeds: numpy 20210224 (reset to 0 by the utils
import), TF graph 2021224 (used here as the torch seed).
"""
import torch
import torch.nn as nn
import torch.nn.functional as F

from zoo_common import Subject, tf_glorot_uniform_


def dense(n_in, n_out):
    w = nn.Parameter(tf_glorot_uniform_(torch.empty(n_in, n_out)))
    return w, nn.Parameter(torch.zeros(n_out))


class Vae(nn.Module):
    def __init__(self, n_z=2):
        super().__init__()
        torch.manual_seed(2021224)
        self.W_e1, self.b_e1 = dense(784, 500)
        self.W_e2, self.b_e2 = dense(500, 500)
        self.W_mean, self.b_mean = dense(500, n_z)
        self.W_lss, self.b_lss = dense(500, n_z)
        self.W_d1, self.b_d1 = dense(n_z, 500)
        self.W_d2, self.b_d2 = dense(500, 500)
        self.W_out, self.b_out = dense(500, 784)

    def forward(self, x, eps):
        h = F.softplus(x.matmul(self.W_e1) + self.b_e1)
        h = F.softplus(h.matmul(self.W_e2) + self.b_e2)
        z_mean = h.matmul(self.W_mean) + self.b_mean
        z_log_sigma_sq = h.matmul(self.W_lss) + self.b_lss
        z = z_mean + torch.sqrt(torch.exp(torch.clamp(z_log_sigma_sq, -100.0, 87.0))) * eps
        g = F.softplus(z.matmul(self.W_d1) + self.b_d1)
        g = F.softplus(g.matmul(self.W_d2) + self.b_d2)
        x_reconstr_mean = torch.sigmoid(g.matmul(self.W_out) + self.b_out)
        reconstr_loss = -torch.sum(x * torch.log(torch.clamp(x_reconstr_mean, 1e-6, 1.0))
                                   + (1 - x) * torch.log(torch.clamp(1 - x_reconstr_mean, 1e-6, 1.0)), dim=1)
        latent_loss = -0.5 * torch.sum(1 + z_log_sigma_sq - z_mean * z_mean
                                       - torch.exp(torch.clamp(z_log_sigma_sq, -100.0, 87.0)), dim=1)
        cost = torch.mean(reconstr_loss + latent_loss)
        return x_reconstr_mean, z_log_sigma_sq, cost


def build():
    g = torch.Generator().manual_seed(391)
    x = torch.rand(3, 784, generator=g)
    eps = torch.randn(3, 2, generator=g)
    # training=True: the model has no dropout or batch-norm, but torch's eval-mode export merges initializers of
    # equal value (the zero biases b_e1/b_e2/b_d1/b_d2, b_mean/b_lss) into one, which would tie them in training.
    return Subject(model=Vae(), inputs={"x": x, "eps": eps}, outputs=["x_reconstr_mean", "z_log_sigma_sq", "cost"],
                   opset=13, training=True)
