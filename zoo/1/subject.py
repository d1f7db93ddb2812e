"""Bug 1 — GitHub-IPS-1 (TF): a spatial-transformer network classifying 40×40 cluttered MNIST.

Facts (SUBJECTS.md): bundled mnist_sequence1_sample_5distortions5x5.npz, X_train 10,000×1600 float32 in [0,1], int
labels 0–9 → one-hot float [N,10]. Batches are consecutive slices X_train[idx[i]:idx[i+1]] with
idx = int(linspace(0, 9999, 100)), a step of 101: every batch has 101 rows (the searcher is built with N = 100, so
k = 5); switching takes the next slice, at index (iteration mod 99). Placeholders x [N,1600], y [N,10], keep_prob;
the monitor feeds keep_prob 1.0, training 0.8.
Model. Localisation net: FC 1600→20, tanh; dropout(keep_prob); FC 20→6, tanh → θ, a 2×3 affine matrix. Spatial
transformer: a 40×40 output grid in [−1,1]², mapped through θ, coordinates rescaled by (c+1)·40/2, bilinear sampling
of the 40×40×1 image with floor and integer casts and indices clipped to the border. Classifier: conv 3×3 1→16
stride 2 SAME + bias, ReLU → 20×20×16; conv 3×3 16→16 stride 2 SAME + bias, ReLU → 10×10×16; flatten 1600;
FC 1600→1024, ReLU; dropout(keep_prob); FC 1024→10; softmax → y_pred. Init: every weight matrix and kernel is
zeros; every bias N(0, 0.01), except the last localisation bias, the identity transform [1,0,0,0,1,0] (so at start
θ = tanh(identity), a zoom by 0.762). Loss: cross_entropy = −Σ_{batch,class} y·LOG(y_pred) (a sum). Training:
Adam (lr 0.001, β1 0.9, β2 0.999, ε 1e-8), one step per iteration on the updated batch, keep_prob 0.8. Hazard:
log(y_pred) at an entry equal to 0 (NaN off the label, +inf on it); objective min|y_pred| over [N,10]; x clipped to
[0,1]. Trigger: with all weights zero y_pred does not depend on x, so ∂O/∂x stays 0 until Adam has made the whole
weight chain non-zero; then search and training interleave. No GRIST result is recorded. Seeds tf 20191215, np 0.
Harness slip: 101-row batches but 100-entry bookkeeping lists (IndexError if row 100 is ever the arg-min).

Rebuilt here: TensorFlow's SAME padding at stride 2 on an even size pads one row/column at the bottom/right only
(explicit Pad); the flatten follows TensorFlow's NHWC order; bilinear sampling gathers per sample (GatherElements).
The bundled file is not available: build() writes data.npz with 303 rows (3 slices of 101) of our own cluttered
40×40 images — a Fashion-MNIST item (standing in for MNIST) at a random offset plus 5 random 5×5 crops of other
items, uint8 — and their uint8 labels.
"""
import gzip
import os

import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F

from zoo_common import Subject

HERE = os.path.dirname(os.path.abspath(__file__))
FASHION = "/usr/share/datasets/fashion-mnist"
ROWS = 303
SIDE = 40


def _idx(name, offset):
    with gzip.open(os.path.join(FASHION, name)) as f:
        return np.frombuffer(f.read(), np.uint8, offset=offset)


def write_data(path):
    images = _idx("train-images-idx3-ubyte.gz", 16).reshape(-1, 28, 28)
    labels = _idx("train-labels-idx1-ubyte.gz", 8)
    rng = np.random.RandomState(0)
    canvas = np.zeros((ROWS, SIDE, SIDE), np.uint8)
    for i in range(ROWS):
        for _ in range(5):                                   # 5 distortions: 5×5 crops of random other items
            src = images[rng.randint(len(images))]
            r, c = rng.randint(0, 28 - 5 + 1, size=2)
            R, C = rng.randint(0, SIDE - 5 + 1, size=2)
            canvas[i, R:R + 5, C:C + 5] = np.maximum(canvas[i, R:R + 5, C:C + 5], src[r:r + 5, c:c + 5])
        R, C = rng.randint(0, SIDE - 28 + 1, size=2)
        canvas[i, R:R + 28, C:C + 28] = np.maximum(canvas[i, R:R + 28, C:C + 28], images[i])
    arrays = {"X": canvas.reshape(ROWS, SIDE * SIDE), "y": labels[:ROWS].copy()}
    if os.path.exists(path):                                 # rewrite only on change (zip entries carry times)
        with np.load(path) as old:
            if set(old.files) == set(arrays) and all(np.array_equal(old[k], v) for k, v in arrays.items()):
                return
    np.savez_compressed(path, **arrays)


def _bias(n):
    return nn.Parameter(torch.randn(n) * 0.01)


class SpatialTransformerNet(nn.Module):
    def __init__(self, keep_prob=0.8):
        super().__init__()
        torch.manual_seed(20191215)
        # localisation net
        self.W_fc_loc1 = nn.Parameter(torch.zeros(SIDE * SIDE, 20))
        self.b_fc_loc1 = _bias(20)
        self.W_fc_loc2 = nn.Parameter(torch.zeros(20, 6))
        self.b_fc_loc2 = nn.Parameter(torch.tensor([1.0, 0.0, 0.0, 0.0, 1.0, 0.0]))
        # classifier
        self.W_conv1 = nn.Parameter(torch.zeros(16, 1, 3, 3))
        self.b_conv1 = _bias(16)
        self.W_conv2 = nn.Parameter(torch.zeros(16, 16, 3, 3))
        self.b_conv2 = _bias(16)
        self.W_fc1 = nn.Parameter(torch.zeros(10 * 10 * 16, 1024))
        self.b_fc1 = _bias(1024)
        self.W_fc2 = nn.Parameter(torch.zeros(1024, 10))
        self.b_fc2 = _bias(10)
        self.drop_loc = nn.Dropout(1.0 - keep_prob)
        self.drop_fc = nn.Dropout(1.0 - keep_prob)
        # the 40×40 output grid in [−1,1]²: rows (x_t, y_t, 1), x varying fastest
        lin = torch.linspace(-1.0, 1.0, SIDE)
        y_t, x_t = torch.meshgrid(lin, lin, indexing="ij")
        self.register_buffer("grid", torch.stack([x_t.reshape(-1), y_t.reshape(-1), torch.ones(SIDE * SIDE)]))

    def transformer(self, im, theta):
        """Bilinear sampling of im [N,1600] (a 40×40×1 image, row-major) at θ·grid, as the TF tutorial does."""
        T_g = theta.reshape(-1, 2, 3).matmul(self.grid)              # [N,2,1600]
        x = (T_g[:, 0, :] + 1.0) * SIDE / 2.0
        y = (T_g[:, 1, :] + 1.0) * SIDE / 2.0
        x0 = torch.floor(x)
        y0 = torch.floor(y)
        x1 = torch.clamp(x0 + 1.0, 0.0, SIDE - 1.0)
        y1 = torch.clamp(y0 + 1.0, 0.0, SIDE - 1.0)
        x0 = torch.clamp(x0, 0.0, SIDE - 1.0)
        y0 = torch.clamp(y0, 0.0, SIDE - 1.0)
        ix0, ix1, iy0, iy1 = (t.to(torch.int64) for t in (x0, x1, y0, y1))
        Ia = torch.gather(im, 1, iy0 * SIDE + ix0)
        Ib = torch.gather(im, 1, iy1 * SIDE + ix0)
        Ic = torch.gather(im, 1, iy0 * SIDE + ix1)
        Id = torch.gather(im, 1, iy1 * SIDE + ix1)
        wa = (x1 - x) * (y1 - y)
        wb = (x1 - x) * (y - y0)
        wc = (x - x0) * (y1 - y)
        wd = (x - x0) * (y - y0)
        return wa * Ia + wb * Ib + wc * Ic + wd * Id                  # [N,1600]

    def forward(self, x, y):
        h_fc_loc1 = self.drop_loc(torch.tanh(x.matmul(self.W_fc_loc1) + self.b_fc_loc1))
        h_fc_loc2 = torch.tanh(h_fc_loc1.matmul(self.W_fc_loc2) + self.b_fc_loc2)
        h_trans = self.transformer(x, h_fc_loc2).reshape(-1, 1, SIDE, SIDE)
        # conv 3×3 stride 2, TensorFlow SAME on an even size: one extra row/column at the bottom/right
        h = F.conv2d(F.pad(h_trans, (0, 1, 0, 1)), self.W_conv1, stride=2)
        h = torch.relu(h + self.b_conv1.reshape(1, -1, 1, 1))
        h = F.conv2d(F.pad(h, (0, 1, 0, 1)), self.W_conv2, stride=2)
        h = torch.relu(h + self.b_conv2.reshape(1, -1, 1, 1))
        h = h.permute(0, 2, 3, 1).reshape(-1, 10 * 10 * 16)             # NHWC flatten
        h_fc1 = self.drop_fc(torch.relu(h.matmul(self.W_fc1) + self.b_fc1))
        y_pred = torch.softmax(h_fc1.matmul(self.W_fc2) + self.b_fc2, dim=1)
        cross_entropy = -(y * torch.log(y_pred)).sum()
        return y_pred, cross_entropy


def build():
    path = os.path.join(HERE, "data.npz")
    if os.path.isdir(FASHION):
        write_data(path)
    data = np.load(path)
    x = torch.from_numpy(data["X"][:4].astype(np.float32) / 255.0)
    y = torch.nn.functional.one_hot(torch.from_numpy(data["y"][:4].astype(np.int64)), 10).float()
    return Subject(model=SpatialTransformerNet(), inputs={"x": x, "y": y}, outputs=["y_pred", "cross_entropy"],
                   opset=13, training=True)
