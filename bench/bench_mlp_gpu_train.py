#!/usr/bin/env python3
"""bench_mlp_gpu_train.py [--cnn] PLAIN.so GRAPH.so [ROUNDS] [ITERS] --
the SGD training step of bench_mlp_gpu.rlx on the GPU (docs/gpu.md,
"Training step"): MLP 784-1024-1024-1024-10, batch 128, f32, forward,
mean cross-entropy, backward and the update p -= lr * grad of all eight
params; with --cnn, of bench_cnn.rlx (the CPU benchmark's small CNN,
batch 64: two 3x3 convolutions with bias, ReLU and 2x2 max pooling, a
linear layer; six params). Four variants on one stream of one process:
  rlxc          NAME_train (rlxc --train=sgd --target=cuda)
  rlxc graph    the same compiled with --cuda-graph
  torch eager   torch.optim.SGD(foreach=True), backward()
  torch compile forward + loss and the optimizer step each under
                torch.compile(mode="reduce-overhead")
TF32 off everywhere. First one step of each from the same params is
checked against a float64 PyTorch step (|got - ref| <= 1e-4 |ref| +
1e-5 max(1, max|ref|) per tensor), and once all four have stepped,
every one is checked again (a step that writes outside its own buffers
shows up in another variant's tensors); then ROUNDS (15) rounds, each timing
ITERS (100) steps of every variant (order rotated per round, stream
synchronized before and after), and the median and minimum ms per step.
The .so files are the objects linked -shared with librlxrt.a; the
entries are called through ctypes (samples/gpu_torch_interop.py).
"""
import os
import statistics
import sys

import torch
import torch.nn.functional as F

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)),
                                "..", "samples"))
from gpu_torch_interop import GpuEntry  # noqa: E402
from gpu_rounds import header, time_rounds  # noqa: E402

DIMS = [784, 1024, 1024, 1024, 10]
LR = 0.01


def mlp_forward(x, ps):
    h = x
    for i in range(4):
        h = h @ ps[2 * i] + ps[2 * i + 1]
        if i < 3:
            h = torch.relu(h)
    return h


def cnn_forward(x, ps):
    w1, b1, w2, b2, w3, b3 = ps
    h = F.max_pool2d(torch.relu(F.conv2d(x, w1, padding=1) + b1), 2)
    h = F.max_pool2d(torch.relu(F.conv2d(h, w2, padding=1) + b2), 2)
    return h.reshape(x.shape[0], -1) @ w3 + b3


# name: entry, x shape, param shapes (fan-in: the product of all but
# the first dim of a conv weight, the first dim of a matrix)
MODELS = {
    "mlp": ("bench_mlp_gpu_train", mlp_forward, [128, 784],
            [s for i in range(4) for s in ([DIMS[i], DIMS[i + 1]],
                                           [DIMS[i + 1]])]),
    "cnn": ("bench_cnn_train", cnn_forward, [64, 1, 28, 28],
            [[16, 1, 3, 3], [16, 1, 1], [32, 16, 3, 3], [32, 1, 1],
             [1568, 10], [10]]),
}
MODEL = "cnn" if "--cnn" in sys.argv else "mlp"
ENTRY, forward, XSHAPE, PSHAPES = MODELS[MODEL]


def fan_in(i):
    """The fan-in of param i: its weight's (a bias follows its weight)."""
    w = PSHAPES[i - i % 2]
    n = 1
    for d in (w[1:] if len(w) == 4 else w[:1]):
        n *= d
    return n


def rlxc_variant(so, x, y, init, s):
    f = GpuEntry(so, ENTRY)
    ps = [p.clone() for p in init]
    dev = x.device
    lr = torch.tensor(LR, dtype=torch.float32, device=dev)
    wd = torch.zeros((), dtype=torch.float32, device=dev)
    state = torch.empty(0, dtype=torch.float32, device=dev)  # sgd: none
    loss = torch.empty((), dtype=torch.float32, device=dev)
    run = f.bind([x, y.int()] + ps + [lr, wd, state], [loss], s.cuda_stream)
    return run, ps, loss


def eager_variant(x, y, init):
    ps = [p.clone().requires_grad_() for p in init]
    opt = torch.optim.SGD(ps, lr=LR, foreach=True)
    out = {}

    def run():
        opt.zero_grad(set_to_none=True)
        loss = F.cross_entropy(forward(x, ps), y)
        loss.backward()
        opt.step()
        out["loss"] = loss
    return run, ps, out


def compiled_variant(x, y, init):
    ps = [p.clone().requires_grad_() for p in init]
    opt = torch.optim.SGD(ps, lr=LR, foreach=True)
    out = {}

    @torch.compile(mode="reduce-overhead")
    def loss_fn(x, y):
        return F.cross_entropy(forward(x, ps), y)

    @torch.compile(mode="reduce-overhead")
    def opt_step():
        opt.step()

    def run():
        torch.compiler.cudagraph_mark_step_begin()
        loss = loss_fn(x, y)
        loss.backward()
        opt_step()
        opt.zero_grad(set_to_none=True)
        out["loss"] = loss.detach().clone()
    return run, ps, out


def check(name, got, ref):
    """got (list of tensors) against the float64 reference."""
    worst = 0.0
    ok = True
    for g, r in zip(got, ref):
        g, r = g.detach().double(), r.detach()
        d = (g - r).abs()
        bar = 1e-4 * r.abs() + 1e-5 * max(1.0, float(r.abs().max()))
        ok = ok and bool((d <= bar).all())
        worst = max(worst, float((d / bar).max()))
    print("%-14s one step vs float64: %s (worst |diff| / bar %.3f)" % (
        name, "ok" if ok else "FAIL", worst))
    return ok


def main():
    a = [v for v in sys.argv[1:] if v != "--cnn"]
    plain, graph = a[0], a[1]
    rounds = int(a[2]) if len(a) > 2 else 15
    iters = int(a[3]) if len(a) > 3 else 100
    torch.backends.cuda.matmul.allow_tf32 = False
    torch.backends.cudnn.allow_tf32 = False
    dev = torch.device("cuda")
    g = torch.Generator().manual_seed(0)
    x = torch.randn(*XSHAPE, generator=g).to(dev)
    y = torch.randint(0, 10, (XSHAPE[0],), generator=g).to(dev)
    init = [((torch.rand(*sh, generator=g) * 2 - 1) * fan_in(i) ** -0.5)
            .to(dev) for i, sh in enumerate(PSHAPES)]
    # the float64 reference step
    ref = [p.double().requires_grad_() for p in init]
    ref_loss = F.cross_entropy(forward(x.double(), ref), y)
    grads = torch.autograd.grad(ref_loss, ref)
    ref_new = [p.detach() - LR * gr for p, gr in zip(ref, grads)]

    s = torch.cuda.Stream()
    ok = True
    with torch.cuda.stream(s):
        variants, stepped = [], []
        for name, (run, ps, loss) in (
                ("rlxc", rlxc_variant(plain, x, y, init, s)),
                ("rlxc graph", rlxc_variant(graph, x, y, init, s)),
                ("torch eager", eager_variant(x, y, init)),
                ("torch compile", compiled_variant(x, y, init))):
            run()
            s.synchronize()
            lv = loss if torch.is_tensor(loss) else loss["loss"]
            ok = check(name, [lv.reshape(())] + ps,
                       [ref_loss.detach()] + ref_new) and ok
            variants.append((name, run))
            stepped.append((name, [lv.reshape(())] + ps))
        for name, got in stepped:  # untouched by the later variants?
            ok = check(name + " again", got,
                       [ref_loss.detach()] + ref_new) and ok
        times = time_rounds(variants, s, rounds, iters, 30)
    print(header(rounds, iters) + " (%s)" % MODEL)
    for name, t in times.items():
        print("%-14s median %.4f ms  min %.4f ms per step" % (
            name, statistics.median(t), min(t)))
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
