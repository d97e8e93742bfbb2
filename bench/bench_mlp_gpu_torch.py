#!/usr/bin/env python3
"""bench_mlp_gpu_torch.py DIR [ITERS] -- PyTorch eager reference for
bench_mlp_gpu.rlx on the GPU (docs/gpu.md): the same inputs (DIR/inI.bin,
as rlx_run_gpu reads them), one step = forward, cross-entropy (mean),
backward (the gradients of all params; no optimizer, as the _grad
entry). Prints the wall time per step (stream synchronized once after
ITERS steps, as rlx_run_gpu --time) and the largest gradient difference
from DIR/outJ.bin (the CPU path's outputs, f64)."""
import os
import sys
import time

import numpy as np
import torch

d, iters = sys.argv[1], int(sys.argv[2]) if len(sys.argv) > 2 else 200
dev = torch.device("cuda")
torch.backends.cuda.matmul.allow_tf32 = False
torch.backends.cudnn.allow_tf32 = False
dims = [784, 1024, 1024, 1024, 10]
x = torch.from_numpy(np.fromfile(os.path.join(d, "in0.bin"), np.float32)
                     .reshape(128, 784)).to(dev)
y = torch.from_numpy(np.fromfile(os.path.join(d, "in1.bin"), np.int32)
                     .astype(np.int64)).to(dev)
ps = []
for i in range(4):
    w = np.fromfile(os.path.join(d, "in%d.bin" % (2 + 2 * i)), np.float32)
    b = np.fromfile(os.path.join(d, "in%d.bin" % (3 + 2 * i)), np.float32)
    ps.append(torch.from_numpy(w.reshape(dims[i], dims[i + 1])).to(dev)
              .requires_grad_())
    ps.append(torch.from_numpy(b).to(dev).requires_grad_())


def step():
    h = x
    for i in range(4):
        h = h @ ps[2 * i] + ps[2 * i + 1]
        if i < 3:
            h = torch.relu(h)
    loss = torch.nn.functional.cross_entropy(h, y)
    for p in ps:
        p.grad = None
    loss.backward()
    return loss


for _ in range(20):
    step()
torch.cuda.synchronize()
t0 = time.perf_counter()
for _ in range(iters):
    step()
torch.cuda.synchronize()
ms = 1e3 * (time.perf_counter() - t0) / iters
loss = step()
torch.cuda.synchronize()
worst = 0.0
ref = np.fromfile(os.path.join(d, "out0.bin"), np.float64)
worst = abs(float(loss.detach()) - ref[0])
for j, p in enumerate(ps):
    r = np.fromfile(os.path.join(d, "out%d.bin" % (j + 1)), np.float64)
    worst = max(worst, float(np.abs(p.grad.double().cpu().numpy().ravel()
                                    - r).max()))
print("torch %s eager: %.4f ms per step (%d steps), max |diff| vs CPU "
      "goldens %.2e" % (torch.__version__, ms, iters, worst))
