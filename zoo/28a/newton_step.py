# The study's 28a search step on the non-trainable gain1 (SUBJECTS.md; evidence for docs/RESULTS.md, session 9):
# O = min|gain1|, delta = O / (dO/dgain1), gain1 <- clip(gain1 - delta, 0, 16). What does it write into gain1?
# (NaN is carried through the clip, as a NaN delta would be by the assignment.)
import torch
torch.manual_seed(0)
g1 = torch.empty(128).uniform_(0, 16)
for it in range(1, 5):
    v = g1.clone().requires_grad_(True)
    O = v.abs().min(); d, = torch.autograd.grad(O, v)
    with torch.no_grad():
        delta = O / d
        g1 = torch.clamp(g1 - delta, 0, 16) if not torch.isnan(delta).any() else torch.where(torch.isnan(delta), delta, torch.clamp(g1 - delta, 0, 16))
    print(f"iteration {it}: O={O.item():.4g}, delta finite={torch.isfinite(delta).sum().item()}/128, gain1 NaN={torch.isnan(g1).sum().item()}, gain1==0: {(g1==0).sum().item()}")
    # the program's divisions with gain1 + 1e-7: finite while gain1 is a number
    print("   curr/(gain1+1e-7) finite:", bool(torch.isfinite(1.0 / (g1 + 1e-7)).all()))
