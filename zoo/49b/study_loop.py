# The study's program on zoo/49b, in torch (evidence for docs/RESULTS.md, session 16): PRETRAIN steps of Adam
# (lr 1e-3) on fresh Fashion-MNIST batches with fresh eps, the persistent batch drawn before them (the study: 50
# epochs × 550 = 27,500), then the GRIST loop: eps drawn once per loop, a sign step of x against ∂min(zlss)/∂x
# (ε = 0.15, clipped to the first batch's range), one Adam step on the pre-update batch; flush-to-zero as
# TensorFlow's CPU kernels. The failure needs a zlss below −87.3 (exp flushes to 0, sqrt's gradient is inf).
# Usage: /usr/bin/python3 zoo/49b/study_loop.py SEED PRETRAIN ITERATIONS
import gzip, os, sys, time
import numpy as np
import torch
here = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.dirname(here)); sys.path.insert(0, here)
from subject import CvaeSqrt
torch.set_num_threads(1)
torch.set_flush_denormal(True)
seed, pretrain, iters = int(sys.argv[1]), int(sys.argv[2]), int(sys.argv[3])
torch.manual_seed(seed); rng = np.random.default_rng(seed)
with gzip.open('/usr/share/datasets/fashion-mnist/train-images-idx3-ubyte.gz') as f:
    X = np.frombuffer(f.read(), np.uint8, offset=16).reshape(-1, 784)
with gzip.open('/usr/share/datasets/fashion-mnist/train-labels-idx1-ubyte.gz') as f:
    Y = np.frombuffer(f.read(), np.uint8, offset=8)
def batch(idx):
    return (torch.tensor(X[idx], dtype=torch.float32) / 255.0,
            torch.nn.functional.one_hot(torch.tensor(Y[idx].astype(np.int64)), 10).float())
m = CvaeSqrt(); opt = torch.optim.Adam(m.parameters(), lr=1e-3, eps=1e-8)  # TF's Adam: epsilon 1e-8
x, y = batch(rng.choice(len(X), 100, replace=False)); lo, hi = float(x.min()), float(x.max())
t0 = time.time(); perm = rng.permutation(len(X)); pos = 0
for step in range(pretrain):
    if pos + 100 > len(X): perm = rng.permutation(len(X)); pos = 0
    bx, by = batch(perm[pos:pos + 100]); pos += 100
    opt.zero_grad(); m(bx, by, torch.randn(100, 2))[2].backward(); opt.step()
    if (step + 1) % 5500 == 0:
        with torch.no_grad(): zl = m(x, y, torch.randn(100, 2))[1]
        print(f"pretrain {step + 1}: min zlss on the persistent batch {zl.min().item():.2f} ({time.time() - t0:.0f} s)", flush=True)
lowest = float('inf')
for it in range(1, iters + 1):
    eps = torch.randn(100, 2)
    xv = x.clone().requires_grad_(True)
    _, zlss, cost = m(xv, y, eps)
    lowest = min(lowest, zlss.min().item())
    if not torch.isfinite(cost):
        print(f"seed {seed}: TRIGGER (monitored cost) at iteration {it}"); break
    g, = torch.autograd.grad(zlss.min(), xv)
    monitored = x
    with torch.no_grad(): x = (x - 0.15 * torch.sign(g)).clamp(lo, hi)
    opt.zero_grad(); m(monitored, y, eps)[2].backward()
    if any(not torch.isfinite(p.grad).all() for p in m.parameters()):
        print(f"seed {seed}: TRIGGER (training backward) at iteration {it}, min zlss {lowest:.2f}"); break
    opt.step()
    if it % 500 == 0: print(f"it {it}: min zlss so far {lowest:.2f} ({time.time() - t0:.0f} s)", flush=True)
else:
    print(f"seed {seed}: no trigger in {iters} iterations after {pretrain} pre-training steps; min zlss {lowest:.2f} "
          f"(the failure needs < -87.3)")
