# The study's GRIST loop on zoo/16c, in torch (evidence for docs/RESULTS.md, session 9): a step of x against
# ∂max(logits)/∂x over the whole batch (sign × ε as the study's tool, or Adam's moments), clip to the first batch's
# [0,2], then one plain GD step (lr 0.01) on the updated batch; FIFO switching of 5 rows every 100 iterations;
# flush-to-zero as TensorFlow's CPU kernels. Usage: study_loop.py SEED ITERATIONS [EPS [train|notrain [sign|adam]]]
import os, sys, gzip, time, numpy as np, torch
here = os.path.dirname(os.path.abspath(__file__))
torch.set_num_threads(1)
step = sys.argv[5] if len(sys.argv) > 5 else 'sign'
sys.path.insert(0, os.path.dirname(here)); sys.path.insert(0, here)
torch.set_flush_denormal(True)
from subject import FuzzNanModel
seed = int(sys.argv[1]); iters = int(sys.argv[2]); eps = float(sys.argv[3]) if len(sys.argv) > 3 else 0.15
train = (sys.argv[4] != 'notrain') if len(sys.argv) > 4 else True
torch.manual_seed(seed); rng = np.random.default_rng(seed)
with gzip.open('/usr/share/datasets/fashion-mnist/train-images-idx3-ubyte.gz') as f: X = np.frombuffer(f.read(), np.uint8, offset=16).reshape(-1,28,28,1)
with gzip.open('/usr/share/datasets/fashion-mnist/train-labels-idx1-ubyte.gz') as f: Y = np.frombuffer(f.read(), np.uint8, offset=8)
perm = rng.permutation(len(X)); pos = 0
def take(n):
    global pos
    idx = perm[pos:pos+n]; pos += n
    return torch.tensor(X[idx], dtype=torch.float32) / 127.5, torch.nn.functional.one_hot(torch.tensor(Y[idx].astype(np.int64)), 10).float()
m = FuzzNanModel(); x, y = take(100); lo, hi = float(x.min()), float(x.max())
opt = torch.optim.SGD(m.parameters(), lr=0.01); age = list(range(100)); t0 = time.time()
for it in range(1, iters + 1):
    xv = x.clone().requires_grad_(True)
    logits, loss = m(xv, y)
    if not torch.isfinite(loss):
        print(f"seed {seed}: TRIGGER at iteration {it}, {time.time()-t0:.1f}s, min row-max {logits.max(1).values.min().item():.1f}"); break
    O = logits.max()
    g, = torch.autograd.grad(O, xv, retain_graph=False)
    with torch.no_grad():
        if step == 'adam':
            if it == 1: am = torch.zeros_like(x); av = torch.zeros_like(x); at = torch.zeros_like(x)
            nz = g != 0; at += nz; am = torch.where(nz, 0.9*am + 0.1*g, am); av = torch.where(nz, 0.999*av + 0.001*g*g, av)
            mh = am / (1 - 0.9**at.clamp(min=1)); vh = av / (1 - 0.999**at.clamp(min=1))
            x = torch.where(at > 0, x - eps * mh / (vh.sqrt() + 1e-8), x).clamp(lo, hi)
        else:
            x = (x - eps * torch.sign(g)).clamp(lo, hi)
    if train:
        opt.zero_grad(); _, l2 = m(x, y); l2.backward(); opt.step()
    if it % 100 == 0:
        nx, ny = take(5); x = torch.cat([x[5:], nx]); y = torch.cat([y[5:], ny])
    if it % 500 == 0:
        with torch.no_grad(): lg, ls = m(x, y)
        print(f"it {it}: max {lg.max().item():.2f} min-rowmax {lg.max(1).values.min().item():.2f} loss {ls.item():.3f} |W3| {m.W3.abs().max().item():.2f}", flush=True)
else:
    print(f"seed {seed}: no trigger in {iters}")
