#!/usr/bin/env python3
"""bench_gpt2_gpu.py GPT2.so[,OTHER.so...] [ROUNDS] [ITERS] -- the AdamW training step
of GPT-2 small (samples/gpt2.rlx: 12 layers, 12 heads, width 768,
context 1024, vocabulary 50,257, batch 16; bf16 compute, f32 params)
on the GPU, in three variants on one stream of one process:
  rlxc          gpt2_train (rlxc --train=adamw --target=cuda --cuda-graph)
  torch eager   the same model under torch.autocast(bfloat16)
                (F.layer_norm, F.scaled_dot_product_attention with
                is_causal: the flash backend, F.gelu tanh,
                F.cross_entropy), torch.optim.AdamW(fused=True)
  torch compile the forward + loss under torch.compile (default mode),
                the fused AdamW step as in eager
AdamW lr 6e-4, betas 0.9/0.95, eps 1e-8, no weight decay. First one
step of each from the same params, as a sanity check between two bf16
computations (not a precision test: bench_gpt_gpu_train.py does that
in f32): the losses must agree to 2e-2 and rlxc's gradients (the AdamW
state's exp_avg / (1 - beta1)) must be within 5% (relative norm of the
difference) of eager's. Then ROUNDS (5) rounds, each timing ITERS (5)
steps of every variant (order rotated per round, stream synchronized
before and after): median and minimum ms per step and tokens per
second, and the peak GPU memory of each variant. With RLX_PROFILE=1
in the environment, each variant's kernels are timed first
(gpu_rounds.kernel_profile: GPU time per op, rlxc's grouped by op).
RLX_VARIANTS="rlxc,torch eager" runs only the variants it names. More
than one object (comma-separated) times each as a variant (named
rlxc:FILE after the first): an A/B of two builds in one run.
"""
import os
import statistics
import sys

import torch
import torch.nn.functional as F

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)),
                                "..", "samples"))
from gpu_torch_interop import GpuEntry  # noqa: E402
from gpu_rounds import header, kernel_profile, time_rounds  # noqa: E402
from bench_gpt_gpu_train import exp_avgs, shapes  # noqa: E402

V, T, B, E, H, L = 50257, 1024, 16, 768, 12, 12
LR, BETAS, EPS = 6e-4, (0.9, 0.95), 1e-8


def loss_fn(tok, tgt, ps):
    """samples/gpt2.rlx's loss, under autocast."""
    with torch.autocast("cuda", dtype=torch.bfloat16):
        x = ps[0][tok] + ps[1]
        for l in range(L):
            g1, b1, wqkv, bqkv, wo, bo, g2, b2, wfc, bfc, wpr, bpr = \
                ps[2 + 12 * l:14 + 12 * l]
            a = F.layer_norm(x, (E,), g1, b1)
            q, k, v = F.linear(a, wqkv.t(), bqkv).split(E, -1)
            q, k, v = (t.reshape(B, T, H, E // H).transpose(1, 2)
                       for t in (q, k, v))
            att = F.scaled_dot_product_attention(q, k, v, is_causal=True)
            x = x + F.linear(att.transpose(1, 2).reshape(B, T, E), wo.t(), bo)
            m = F.layer_norm(x, (E,), g2, b2)
            h = F.gelu(F.linear(m, wfc.t(), bfc), approximate="tanh")
            x = x + F.linear(h, wpr.t(), bpr)
        f = F.layer_norm(x, (E,), ps[-2], ps[-1]).reshape(B * T, E)
        return F.cross_entropy(F.linear(f, ps[0]), tgt)


def rlxc_variant(so, tok, tgt, init, s):
    f = GpuEntry(so, "gpt2_train")
    ps = [p.clone() for p in init]
    dev = tok.device
    hyper = [torch.tensor(v, dtype=torch.float32, device=dev)
             for v in (LR, BETAS[0], BETAS[1], EPS, 0.0)]
    _, dt, shape = f.inputs()[-1]
    state = torch.zeros(shape, dtype=dt, device=dev)
    loss = torch.empty((), dtype=torch.float32, device=dev)
    run = f.bind([tok.int(), tgt.int()] + ps + hyper + [state], [loss],
                 s.cuda_stream)
    return run, ps, loss, state


def torch_variant(tok, tgt, init, compiled):
    ps = [p.clone().requires_grad_() for p in init]
    opt = torch.optim.AdamW(ps, lr=LR, betas=BETAS, eps=EPS,
                            weight_decay=0.0, fused=True)
    out = {}
    fwd = torch.compile(loss_fn) if compiled else loss_fn

    def run():
        loss = fwd(tok, tgt, ps)
        loss.backward()
        out["grads"] = [p.grad.detach().clone() for p in ps] \
            if "grads" not in out else out["grads"]
        opt.step()
        opt.zero_grad(set_to_none=True)
        out["loss"] = loss.detach()
    return run, ps, out, None


def main():
    so = sys.argv[1]
    rounds = int(sys.argv[2]) if len(sys.argv) > 2 else 5
    iters = int(sys.argv[3]) if len(sys.argv) > 3 else 5
    dev = torch.device("cuda")
    g = torch.Generator().manual_seed(0)
    init = [(torch.randn(sh, generator=g) * (0.02 if len(sh) == 2 else 0.1)
             + (1.0 if len(sh) == 1 and i % 2 == 0 else 0.0)).to(dev)
            for i, sh in enumerate(shapes(V, T, E, L))]
    tok = torch.randint(0, V, (B, T), generator=g).to(dev)
    tgt = torch.randint(0, V, (B * T,), generator=g).to(dev)
    s = torch.cuda.Stream()
    ok = True
    peak = {}
    with torch.cuda.stream(s):
        variants, first = [], {}
        sos = so.split(",")
        for name, make in [
                ("rlxc" + ("" if i == 0 else ":" + os.path.basename(f)),
                 lambda f=f: rlxc_variant(f, tok, tgt, init, s))
                for i, f in enumerate(sos)] + [
                ("torch eager", lambda: torch_variant(tok, tgt, init, False)),
                ("torch compile", lambda: torch_variant(tok, tgt, init,
                                                        True))]:
            if name.split(":")[0] not in os.environ.get("RLX_VARIANTS",
                                                        name):
                continue
            torch.cuda.reset_peak_memory_stats()
            base = torch.cuda.memory_allocated()
            run, ps, loss, state = make()
            run()
            s.synchronize()
            peak[name] = torch.cuda.max_memory_allocated() - base
            first[name] = (float(loss if torch.is_tensor(loss)
                                 else loss["loss"]),
                           [m / (1 - BETAS[0]) for m in exp_avgs(state, init)]
                           if state is not None else loss["grads"])
            variants.append((name, run))
        ref_loss, ref_g = first["torch eager"]
        for name, (lv, gr) in first.items():
            num = sum(float((a.float() - b.float()).norm()) ** 2
                      for a, b in zip(gr, ref_g)) ** 0.5
            den = sum(float(b.float().norm()) ** 2 for b in ref_g) ** 0.5
            good = abs(lv - ref_loss) <= 2e-2 and num <= 0.05 * den
            ok = ok and good
            print("%-14s first step: loss %.5f (eager %.5f), gradients "
                  "|diff|/|eager| %.4f: %s" % (name, lv, ref_loss, num / den,
                                               "ok" if good else "FAIL"))
        if os.environ.get("RLX_PROFILE"):
            for name, run in variants:
                print("== kernels of", name)
                kernel_profile(run, s)
        times = time_rounds(variants, s, rounds, iters, 3)
    print(header(rounds, iters))
    eager = statistics.median(times["torch eager"])
    for name, t in times.items():
        med = statistics.median(t)
        print("%-14s median %.2f ms  min %.2f ms per step  %.0f tokens/s  "
              "eager/this %.2f  first-step peak memory %.2f GB (torch "
              "allocator)" % (name, med, min(t), B * T / med * 1e3,
                              eager / med, peak[name] / 1e9))
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
