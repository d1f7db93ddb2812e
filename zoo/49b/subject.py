"""Bug 49b — deep_learning_Nikolenko_and_Co.ch10_04_06_Pic_10_08, the `_sqrt` variant (TF).

Facts (SUBJECTS.md): the `_sqrt` variant of the Fig. 10.8 conditional VAE of Nikolenko et al., "Deep Learning",
ch. 10 (ch10_04_06_Pic_10_08_sqrt_grist.py), code-identical in substance to 43b: guarded reconstruction logs, 50 epochs
of pre-training, then GRIST on the latent log-variance.
Data: TF-MNIST x [100,784] in [0,1] (searched, clipped to [0,1]); y [100,10] one-hot fed as a model input (not
mutated); eps [100,2] ~ numpy N(0,1) drawn once per loop and shared by the monitored and training runs. The persistent
batch is drawn before the pre-training; switching is commented out (no switching).
Model (n_z = 2): encoder concat(x, y) 794 → 500 softplus → 500 softplus → z_mean [2], z_log_sigma_sq (zlss) [2]; zlss is
NOT reassigned: z = z_mean + SQRT(exp(clip(zlss, -100, 87)))·eps; decoder concat(z, y) 12 → 500 softplus → 500 softplus
→ 784 sigmoid = x_rec. Init: Xavier-uniform weights (concatenated fan-ins), zero biases.
Loss cost = mean_N[ -Σ_784( x·log(clip(x_rec, 1e-6, 1)) + (1-x)·log(clip(1-x_rec, 1e-6, 1)) )
                    - 0.5·Σ_2( 1 + zlss - z_mean² - exp(clip(zlss, -100, 87)) ) ]  (the `1 + zlss` term unclipped).
Training: 50 epochs (27,500 steps) of Adam lr 1e-3 pre-training on fresh (x, y) batches with fresh eps, then one Adam
step per GRIST loop on the pre-update batch.
Hazard: sqrt(exp(clip(zlss))) with objective min zlss (no abs). Under TF's FTZ, a zlss in (-100, -87.3) makes exp
exactly 0: the forward stays finite, the training step's backward gives sqrt' = 0.5/0 = inf and exp' inf·0 = NaN, which
the clip's gradient mask passes into the encoder weights; the NaN loss is seen one loop later. Without FTZ it cannot
fire. The study: GRIST paper average 307.24 s (RANUM's final_texify.py), pre-training included.
Seeds: numpy 515411 (reset to 0 by the utils import), TF graph 515411 (used here as the torch seed).
"""
import torch
import torch.nn as nn
import torch.nn.functional as F

from zoo_common import Subject, tf_glorot_uniform_


def dense(n_in, n_out):
    w = nn.Parameter(tf_glorot_uniform_(torch.empty(n_in, n_out)))
    return w, nn.Parameter(torch.zeros(n_out))


class CvaeSqrt(nn.Module):
    def __init__(self, n_z=2):
        super().__init__()
        torch.manual_seed(515411)
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
        z_log_sigma_sq = h.matmul(self.W_lss) + self.b_lss
        z = z_mean + torch.sqrt(torch.exp(torch.clamp(z_log_sigma_sq, -100.0, 87.0))) * eps
        g = F.softplus(torch.cat([z, y], dim=1).matmul(self.W_d1) + self.b_d1)
        g = F.softplus(g.matmul(self.W_d2) + self.b_d2)
        x_reconstr_mean = torch.sigmoid(g.matmul(self.W_out) + self.b_out)
        reconstr_loss = -torch.sum(x * torch.log(torch.clamp(x_reconstr_mean, 1e-6, 1.0))
                                   + (1 - x) * torch.log(torch.clamp(1 - x_reconstr_mean, 1e-6, 1.0)), dim=1)
        latent_loss = -0.5 * torch.sum(1 + z_log_sigma_sq - z_mean * z_mean
                                       - torch.exp(torch.clamp(z_log_sigma_sq, -100.0, 87.0)), dim=1)
        cost = torch.mean(reconstr_loss + latent_loss)
        return x_reconstr_mean, z_log_sigma_sq, cost


def build():
    g = torch.Generator().manual_seed(492)
    x = torch.rand(3, 784, generator=g)
    y = torch.nn.functional.one_hot(torch.tensor([1, 9, 2]), 10).float()
    eps = torch.randn(3, 2, generator=g)
    # training=True: the model has no dropout or batch-norm, but torch's eval-mode export merges initializers of
    # equal value (the zero biases) into one, which would tie them in training.
    return Subject(model=CvaeSqrt(), inputs={"x": x, "y": y, "eps": eps},
                   outputs=["x_reconstr_mean", "z_log_sigma_sq", "cost"], opset=13, training=True)
