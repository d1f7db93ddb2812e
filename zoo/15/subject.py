"""Bug 15 — Tensorflow_Value_Iteration_Networks_V1 (TF): a Value Iteration Network on 8×8 gridworlds.

Facts (SUBJECTS.md): bundled gridworld_8.mat, 9,072 samples. X [N,8,8,2]: channel 0 the obstacle image (raw uint8
{0,1}; the code's (im − 1)/255 in uint8 wraps 0 to 1, so it ends up {1,0}), channel 1 the goal prior {0,10}. Each
sample has 10 state positions S1, S2 ∈ {1,…,6} (int32 [N,10]) and 10 action labels y ∈ {0,…,7} (flattened to
[N·10]). Train set: the first 7,776 samples, permuted once (numpy seed 0). Batch N = 12, 10 states each (120 label
rows); k = 0, no switching; clip [0,10] for every element. S1 and S2 are fed from the current dataset position and
advance every iteration, while X and y stay the persistent first batch (positions and labels mismatch after
iteration 1).
Model (SAME convolutions with spatially flipped kernels): h = conv3×3(X; w0 [3,3,2,150]) + bias[150] (no
activation); r = conv1×1(h; w1 [1,1,150,1]); q = conv3×3(r; w [3,3,1,10]); v = max over the 10 channels; 9 more
times q = conv3×3(concat[r,v]; concat[w,w_fb] [3,3,2,10]), v = max_ch q; a final q with the same kernel; q gathered
at each sample's 10 (S1,S2) positions → q_out [N·10,10]; nn = softmax(q_out·w_o), w_o [10,8]. Every parameter
(bias, w0, w1, w, w_fb, w_o) is 0.01·N(0,1), drawn by numpy after seed 0. Loss: cost = −mean(LOG(nn)[row, y_row]).
Training: RMSProp lr 0.001, decay 0.9, momentum 0, ε 1e-6, centered, one step per iteration on the pre-update batch.
Hazard: log(nn) at an entry equal to 0; objective min|nn| over all 120×8 entries; X [12,8,8,2] clipped to [0,10].
A zero at a labelled entry gives +inf directly; elsewhere log's gradient 0·(1/0) = NaN poisons the weights and the
loss is NaN one iteration later. The study measured @373@ in 14.78 s.

Rebuilt here: the kernels are stored already flipped (conv with flip(w) = cross-correlation with the stored kernel;
RMSProp is elementwise, so training is the same). S1, S2 and y are [N,10] inputs (flattened inside the model) so
that their rows stay the samples. The .mat file is not available: build() writes data.npz with 4,800 gridworlds of
our own (border walls, random interior obstacles, a goal; 10 states along shortest 8-connected paths to it, each
labelled with its optimal move; 400 batches, enough for the study's 373 iterations), X as uint8 channel values
{1 obstacle, 0 free} and {0,10}.
"""
import os
from collections import deque

import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F

from zoo_common import Subject

HERE = os.path.dirname(os.path.abspath(__file__))
SAMPLES = 4800
MOVES = [(-1, 0), (1, 0), (0, 1), (0, -1), (-1, 1), (-1, -1), (1, 1), (1, -1)]   # N S E W NE NW SE SW


def _distances(free, goal):
    dist = np.full(free.shape, -1, np.int64)
    dist[goal] = 0
    queue = deque([goal])
    while queue:
        r, c = queue.popleft()
        for dr, dc in MOVES:
            nr, nc = r + dr, c + dc
            if free[nr, nc] and dist[nr, nc] < 0:
                dist[nr, nc] = dist[r, c] + 1
                queue.append((nr, nc))
    return dist


def _gridworld(rng):
    while True:
        free = np.zeros((8, 8), bool)
        free[1:7, 1:7] = rng.random_sample((6, 6)) >= 0.2
        cells = np.argwhere(free)
        if len(cells) < 6:
            continue
        goal = tuple(cells[rng.randint(len(cells))])
        dist = _distances(free, goal)
        starts = [tuple(p) for p in np.argwhere(dist > 0)]
        if not starts:
            continue
        states, actions = [], []
        while len(states) < 10:
            pos = starts[rng.randint(len(starts))]
            while pos != goal and len(states) < 10:
                best = min(range(8), key=lambda a: (dist[pos[0] + MOVES[a][0], pos[1] + MOVES[a][1]]
                                                    if dist[pos[0] + MOVES[a][0], pos[1] + MOVES[a][1]] >= 0
                                                    else 99, a))
                states.append(pos)
                actions.append(best)
                pos = (pos[0] + MOVES[best][0], pos[1] + MOVES[best][1])
        image = np.zeros((8, 8, 2), np.uint8)
        image[:, :, 0] = ~free                       # raw image 1 = free, 0 = obstacle; (im − 1)/255 wraps to {0,1}
        image[goal[0], goal[1], 1] = 10
        states = np.array(states, np.uint8)
        return image, states[:, 0], states[:, 1], np.array(actions, np.uint8)


def write_data(path):
    rng = np.random.RandomState(15)
    X, S1, S2, y = zip(*(_gridworld(rng) for _ in range(SAMPLES)))
    arrays = {"X": np.stack(X), "S1": np.stack(S1), "S2": np.stack(S2), "y": np.stack(y)}
    if os.path.exists(path):                                 # rewrite only on change (zip entries carry times)
        with np.load(path) as old:
            if set(old.files) == set(arrays) and all(np.array_equal(old[k], v) for k, v in arrays.items()):
                return
    np.savez_compressed(path, **arrays)


class ValueIterationNetwork(nn.Module):
    def __init__(self, k=10, ch_h=150, ch_q=10):
        super().__init__()
        self.k = k
        rng = np.random.RandomState(0)
        draw = lambda *shape: 0.01 * rng.randn(*shape).astype(np.float32)   # noqa: E731
        bias, w0, w1 = draw(ch_h), draw(3, 3, 2, ch_h), draw(1, 1, ch_h, 1)
        w, w_fb, w_o = draw(3, 3, 1, ch_q), draw(3, 3, 1, ch_q), draw(ch_q, 8)
        # TF kernel [kh,kw,in,out] → torch [out,in,kh,kw], flipped spatially once here.
        kernel = lambda t: torch.from_numpy(t.transpose(3, 2, 0, 1)[:, :, ::-1, ::-1].copy())  # noqa
        self.bias = nn.Parameter(torch.from_numpy(bias))
        self.w0 = nn.Parameter(kernel(w0))
        self.w1 = nn.Parameter(kernel(w1))
        self.w = nn.Parameter(kernel(w))
        self.w_fb = nn.Parameter(kernel(w_fb))
        self.w_o = nn.Parameter(torch.from_numpy(w_o))

    def forward(self, X, S1, S2, y):
        im = X.permute(0, 3, 1, 2)                                     # NHWC → NCHW
        h = F.conv2d(im, self.w0, padding=1) + self.bias.reshape(1, -1, 1, 1)
        r = F.conv2d(h, self.w1)
        q = F.conv2d(r, self.w, padding=1)
        v = q.max(dim=1, keepdim=True)[0]
        wwfb = torch.cat([self.w, self.w_fb], dim=1)
        for _ in range(self.k - 1):
            q = F.conv2d(torch.cat([r, v], dim=1), wwfb, padding=1)
            v = q.max(dim=1, keepdim=True)[0]
        q = F.conv2d(torch.cat([r, v], dim=1), wwfb, padding=1)
        n, ch = q.shape[0], q.shape[1]
        position = (S1 * 8 + S2).unsqueeze(1).expand(-1, ch, -1)      # [N, ch_q, 10]
        q_out = torch.gather(q.reshape(n, ch, 64), 2, position).transpose(1, 2).reshape(-1, ch)
        nn_out = torch.softmax(q_out.matmul(self.w_o), dim=1)
        cost = -torch.gather(torch.log(nn_out), 1, y.reshape(-1, 1)).mean()
        return nn_out.reshape(-1, 10, 8), cost                 # nn as [N,10,8]: rows stay the samples


def build():
    path = os.path.join(HERE, "data.npz")
    write_data(path)
    data = np.load(path)
    rows = slice(0, 3)
    X = torch.from_numpy(data["X"][rows].astype(np.float32))
    S1, S2, y = (torch.from_numpy(data[k][rows].astype(np.int64)) for k in ("S1", "S2", "y"))
    return Subject(model=ValueIterationNetwork(), inputs={"X": X, "S1": S1, "S2": S2, "y": y},
                   outputs=["nn", "cost"], opset=13)
