#!/usr/bin/python3
"""bench_attention_torch.py -- PyTorch CPU baseline for bench/bench_attention.c.

PyTorch's manual attention on bench_attention's shapes (float32, B = 1,
H = 8, D = 64, [b, h, L, d], scale 1/8): s = q @ k^T * scale,
masked_fill(-inf) for causal, softmax, @ v (fwd), and the same with
autograd backward from a given dy to dq, dk, dv (fwd+bwd).  The flops
counted are bench_attention's (forward 4 L^2 D per head, forward +
backward 14 L^2 D, causal half), so the GFLOP/s compare directly.
torch.set_num_threads(T); OMP / OpenBLAS thread counts are set to T
before torch loads.  Median and minimum of calls repeated for
--seconds after 2 warm-ups.

Usage: OPENBLAS_NUM_THREADS=1 /usr/bin/python3 bench/bench_attention_torch.py
       [--threads 1] [--seconds S] [--lens 256,1024,4096]
"""
import argparse
import os
import sys
import time


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--threads", type=int, default=1)
    ap.add_argument("--seconds", type=float, default=1.0)
    ap.add_argument("--lens", default="256,1024,4096")
    a = ap.parse_args()
    os.environ["OMP_NUM_THREADS"] = str(a.threads)
    os.environ["OPENBLAS_NUM_THREADS"] = str(a.threads)
    import torch
    torch.set_num_threads(a.threads)
    torch.manual_seed(0)
    print(f"# torch {torch.__version__} threads={a.threads}")
    B, H, D, scale = 1, 8, 64, 0.125

    def attn(q, k, v, causal):
        s = (q @ k.transpose(-2, -1)) * scale
        if causal:
            L = q.shape[-2]
            m = torch.ones(L, L, dtype=torch.bool).triu(1)
            s = s.masked_fill(m, float("-inf"))
        return torch.softmax(s, dim=-1) @ v

    def timed(fn, secs):
        for _ in range(2):
            fn()
        t = []
        start = time.perf_counter()
        while len(t) < 5 or time.perf_counter() - start < secs:
            t0 = time.perf_counter()
            fn()
            t.append(time.perf_counter() - t0)
        t.sort()
        return t[len(t) // 2], t[0]

    a_ = torch.randn(1, 1)  # load the kernels before timing
    del a_
    for L in [int(x) for x in a.lens.split(",")]:
        for causal in (0, 1):
            q, k, v, dy = (torch.rand(B, H, L, D) - 0.5 for _ in range(4))
            qg, kg, vg = (x.clone().requires_grad_(True) for x in (q, k, v))
            unit = B * H * L * L * D * (0.5 if causal else 1.0)

            def fwd():
                with torch.no_grad():
                    attn(q, k, v, causal)

            def fwdbwd():
                qg.grad = kg.grad = vg.grad = None
                attn(qg, kg, vg, causal).backward(dy)

            for name, fn, fl in (("fwd", fwd, 4 * unit),
                                 ("fwd+bwd", fwdbwd, 14 * unit)):
                med, mn = timed(fn, a.seconds)
                print(f"torch attn L={L} mask={'causal' if causal else 'none'}"
                      f" {name} threads={a.threads} median_ms={med * 1e3:.3f}"
                      f" min_ms={mn * 1e3:.3f} gflops={fl / med * 1e-9:.1f}"
                      f" gflops_best={fl / mn * 1e-9:.1f}", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
