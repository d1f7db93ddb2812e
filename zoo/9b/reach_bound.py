"""9b: can any training step bring an output logit below -88.7, where y_ = sigmoid(logit) is exactly 0 and log(y_)
fails? (issue 9: a class-1 or class-2 trigger needs the weights training reaches.)

usage: /usr/bin/python3 zoo/9b/reach_bound.py MODE STEPS
  MODE data    the program's own training: GD lr 0.5 on Fashion-MNIST batches of 100 (MNIST is not available)
  MODE spread  crafted batches: rows of ones, labels spread over the classes other than 0 (drives class 0's
               logit down without sending any other output to 1)
  MODE one     crafted batches: rows of ones, every label class 1

Both weight matrices start at zero, so every hidden unit gets the same gradient and stays equal to the others
(printed: the spread of W1's and W2's columns). With equal units the logit of class c is h * S_c, S_c the sum of
W2's column c and h = sigmoid(x . w1) for the shared column w1; over x in [0,1]^784, h ranges over
[sigmoid(sum min(w1, 0)), sigmoid(sum max(w1, 0))], so the lowest logit any input gives is exact ("reachable").
"""
import gzip
import sys

import numpy as np
import torch

torch.set_num_threads(1)


def idx(path):
    with gzip.open(path) as f:
        d = f.read()
    nd = d[3]
    dims = [int.from_bytes(d[4 + 4 * i:8 + 4 * i], "big") for i in range(nd)]
    return np.frombuffer(d, np.uint8, offset=4 + 4 * nd).reshape(dims)


def main():
    mode, steps = sys.argv[1], int(sys.argv[2])
    folder = "/usr/share/datasets/fashion-mnist/"
    images = torch.tensor(idx(folder + "train-images-idx3-ubyte.gz").reshape(-1, 784) / 255.0, dtype=torch.float32)
    labels = torch.tensor(idx(folder + "train-labels-idx1-ubyte.gz").astype(np.int64))
    g = torch.Generator().manual_seed(1)
    w1 = torch.zeros(784, 512, requires_grad=True)
    w2 = torch.zeros(512, 10, requires_grad=True)
    for t in range(1, steps + 1):
        if mode == "data":
            i = torch.randint(0, images.shape[0], (100,), generator=g)
            x, y = images[i], torch.nn.functional.one_hot(labels[i], 10).float()
        elif mode == "spread":
            x, y = torch.ones(100, 784), torch.nn.functional.one_hot(torch.arange(100) % 9 + 1, 10).float()
        else:
            x, y = torch.ones(100, 784), torch.nn.functional.one_hot(torch.full((100,), 1), 10).float()
        y_ = torch.sigmoid(torch.sigmoid(x @ w1) @ w2)
        cost = (-y * torch.log(y_) - (1 - y) * torch.log(1 - y_)).sum(dim=1).mean()
        cost.backward()
        with torch.no_grad():
            w1 -= 0.5 * w1.grad
            w2 -= 0.5 * w2.grad
            w1.grad = None
            w2.grad = None
            if not torch.isfinite(cost):
                print(f"{mode} step {t}: the training loss is {cost.item()} (y_ saturated: "
                      f"min {y_.min().item():.3g}, max {y_.max().item():.9g})")
                return
            if t in (1, 2, 10, 100, 1000, 3000, 10000, 20000) or t % 5000 == 0 or t == steps:
                spread = max((w1 - w1[:, :1]).abs().max().item(), (w2 - w2[:1, :]).abs().max().item())
                col = w1[:, 0]
                h_lo = torch.sigmoid(torch.clamp(col, max=0).sum()).item()
                h_hi = torch.sigmoid(torch.clamp(col, min=0).sum()).item()
                sums = w2.sum(dim=0)
                lowest = torch.minimum(sums * h_lo, sums * h_hi).min().item()
                print(f"{mode} step {t}: lowest reachable logit {lowest:.2f} (y_ = 0 needs < -88.7), "
                      f"h in [{h_lo:.3g}, {h_hi:.3g}], unit spread {spread:.1e}")


if __name__ == "__main__":
    main()
