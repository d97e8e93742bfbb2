#!/usr/bin/env python3
"""bench_gpt_gpu_train.py PLAIN.so GRAPH.so [ROUNDS] [ITERS] -- the AdamW
training step of the character-level GPT (samples/gpt.rlx: vocabulary
256, context 64, batch 8, width 128, 4 layers of 4-head causal
attention, 834,304 params) on the GPU, f32, in four variants on one
stream of one process:
  rlxc          gpt_train (rlxc --train=adamw --target=cuda)
  rlxc graph    the same compiled with --cuda-graph
  torch eager   the same model (F.layer_norm, F.scaled_dot_product_attention
                with is_causal, F.gelu tanh, F.cross_entropy),
                torch.optim.AdamW(fused=True), backward()
  torch compile forward + loss under torch.compile(mode="reduce-overhead"),
                the fused AdamW step as in eager
TF32 off everywhere; AdamW lr 1e-3, betas 0.9/0.95, eps 1e-8, no weight
decay. First one step of each from the same params is checked against
a float64 PyTorch step (|got - ref| <= 1e-4 |ref| + 1e-5 max(1, max|ref|)
per tensor): the loss, and for rlxc also the optimizer state's exp_avg,
which is (1 - beta1) * gradient after one step: every gradient at the
bar. The updated params are compared too but not counted: AdamW's first
step moves each param by lr * g / (|g| + eps), a quotient f32 cannot get
to the bar where |g| is near eps, and no f32 implementation does (on
the H100, 2026-12-06: rlxc 1.6, torch eager 2.7, torch.compile 2.1
times the bar). After the first steps of all four, each variant's loss
and params must still be bit-identical to what its own step wrote (a
later variant writing over them fails). Then ROUNDS (15) rounds, each timing
ITERS (100) steps of every variant (order rotated per round, stream
synchronized before and after), and the median and minimum ms per step
and tokens per second. The .so files are the objects linked -shared
with librlxrt.a; the entries are called through ctypes
(samples/gpu_torch_interop.py).
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

V, T, B, E, H, L = 256, 64, 8, 128, 4, 4
LR, BETAS, EPS = 1e-3, (0.9, 0.95), 1e-8


def shapes(V=V, T=T, E=E, L=L):
    """The params' shapes in signature order (gpt.rlx, gen_gpt2.py)."""
    s = [(V, E), (T, E)]
    for _ in range(L):
        s += [(E,), (E,), (E, 3 * E), (3 * E,), (E, E), (E,), (E,), (E,),
              (E, 4 * E), (4 * E,), (4 * E, E), (E,)]
    return s + [(E,), (E,)]


def loss_fn(tok, tgt, ps):
    """samples/gpt.rlx's loss (the mean next-token cross-entropy)."""
    x = ps[0][tok] + ps[1]
    for l in range(L):
        g1, b1, wqkv, bqkv, wo, bo, g2, b2, wfc, bfc, wpr, bpr = \
            ps[2 + 12 * l:14 + 12 * l]
        a = F.layer_norm(x, (E,), g1, b1)
        q, k, v = (a @ wqkv + bqkv).split(E, -1)
        q, k, v = (t.reshape(B, T, H, E // H).transpose(1, 2)
                   for t in (q, k, v))
        att = F.scaled_dot_product_attention(q, k, v, is_causal=True)
        x = x + att.transpose(1, 2).reshape(B, T, E) @ wo + bo
        m = F.layer_norm(x, (E,), g2, b2)
        x = x + F.gelu(m @ wfc + bfc, approximate="tanh") @ wpr + bpr
    f = F.layer_norm(x, (E,), ps[-2], ps[-1]).reshape(B * T, E)
    return F.cross_entropy(f @ ps[0].t(), tgt)


def rlxc_variant(so, tok, tgt, init, s):
    f = GpuEntry(so, "gpt_train")
    ps = [p.clone() for p in init]
    dev = tok.device
    hyper = [torch.tensor(v, dtype=torch.float32, device=dev)
             for v in (LR, BETAS[0], BETAS[1], EPS, 0.0)]
    _, dt, shape = f.inputs()[-1]
    state = torch.zeros(shape, dtype=dt, device=dev)
    loss = torch.empty((), dtype=torch.float32, device=dev)
    logits = torch.empty(B * T, V, dtype=torch.float32, device=dev)
    run = f.bind([tok.int(), tgt.int()] + ps + hyper + [state],
                 [loss, logits], s.cuda_stream)
    return run, ps, loss, state


def torch_variant(tok, tgt, init, compiled):
    ps = [p.clone().requires_grad_() for p in init]
    opt = torch.optim.AdamW(ps, lr=LR, betas=BETAS, eps=EPS,
                            weight_decay=0.0, fused=True)
    out = {}
    fwd = torch.compile(loss_fn, mode="reduce-overhead") if compiled \
        else loss_fn

    def run():
        if compiled:
            torch.compiler.cudagraph_mark_step_begin()
        loss = fwd(tok, tgt, ps)
        loss.backward()
        opt.step()
        opt.zero_grad(set_to_none=True)
        out["loss"] = loss.detach().clone() if compiled else loss
    return run, ps, out, None


def exp_avgs(state, init):
    """exp_avg of every param from rlxc's AdamW state (docs/abi.md: each
    piece at a 64-byte aligned offset, exp_avg of every param first)."""
    flat = state.view(torch.uint8).view(-1)
    res, off = [], 0
    for p in init:
        n = p.numel() * 4
        res.append(flat[off:off + n].view(torch.float32).reshape(p.shape))
        off = (off + n + 63) // 64 * 64
    return res


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
    print("%-20s vs float64: %s (worst |diff| / bar %.3f)" % (
        name, "ok" if ok else "FAIL", worst))
    return ok


def main():
    plain, graph = sys.argv[1], sys.argv[2]
    rounds = int(sys.argv[3]) if len(sys.argv) > 3 else 15
    iters = int(sys.argv[4]) if len(sys.argv) > 4 else 100
    torch.backends.cuda.matmul.allow_tf32 = False
    torch.backends.cudnn.allow_tf32 = False
    dev = torch.device("cuda")
    g = torch.Generator().manual_seed(0)
    init = [(torch.randn(sh, generator=g) * (0.02 if len(sh) == 2 else 0.1)
             + (1.0 if len(sh) == 1 and i % 2 == 0 else 0.0)).to(dev)
            for i, sh in enumerate(shapes())]
    tok = torch.randint(0, V, (B, T), generator=g).to(dev)
    tgt = torch.randint(0, V, (B * T,), generator=g).to(dev)
    # the float64 reference step (AdamW's first step, in float64)
    ref = [p.double().requires_grad_() for p in init]
    with torch.nn.attention.sdpa_kernel(
            torch.nn.attention.SDPBackend.MATH):
        ref_loss = loss_fn(tok, tgt, ref)
    grads = torch.autograd.grad(ref_loss, ref)
    b1, b2 = BETAS
    ref_m = [(1 - b1) * gr for gr in grads]
    ref_new = [p.detach() - LR * (m / (1 - b1)) /
               ((((1 - b2) * gr * gr) / (1 - b2)).sqrt() + EPS)
               for p, m, gr in zip(ref, ref_m, grads)]

    s = torch.cuda.Stream()
    ok = True
    with torch.cuda.stream(s):
        variants, stepped = [], []
        for name, (run, ps, loss, state) in (
                ("rlxc", rlxc_variant(plain, tok, tgt, init, s)),
                ("rlxc graph", rlxc_variant(graph, tok, tgt, init, s)),
                ("torch eager", torch_variant(tok, tgt, init, False)),
                ("torch compile", torch_variant(tok, tgt, init, True))):
            run()
            s.synchronize()
            lv = loss if torch.is_tensor(loss) else loss["loss"]
            ok = check(name + " loss", [lv.reshape(())],
                       [ref_loss.detach()]) and ok
            check(name + " params (not counted)", ps, ref_new)
            if state is not None:
                ok = check(name + " gradients", exp_avgs(state, init),
                           ref_m) and ok
            variants.append((name, run))
            got = [lv.reshape(())] + ps
            stepped.append((name, got, [t.clone() for t in got]))
        for name, got, snap in stepped:  # untouched by the later variants?
            same = all(torch.equal(a, b) for a, b in zip(got, snap))
            print("%-20s untouched by the later variants: %s" % (
                name, "ok" if same else "FAIL"))
            ok = ok and same
        times = time_rounds(variants, s, rounds, iters, 30)
    print(header(rounds, iters))
    eager = statistics.median(times["torch eager"])
    for name, t in times.items():
        med = statistics.median(t)
        print("%-14s median %.4f ms  min %.4f ms per step  %.0f tokens/s  "
              "eager/this %.2f" % (name, med, min(t), B * T / med * 1e3,
                                   eager / med))
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
