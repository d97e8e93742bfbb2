#!/usr/bin/python3
"""bench_moe_torch.py -- PyTorch CPU baseline for bench/bench_moe.c.

Same shapes and routing rule as bench_moe (float32, 8 experts, 4096
rows of width 512 -> 512, expert j gets a share proportional to 0.6^j,
ids shuffled): one dense torch.mm of the rows next to the usual
PyTorch MoE loop (per expert: index_select the rows, mm, index_copy_
into the output), forward and backward (autograd from a given dy to dx
and dw; dense: dx and dw0 of one mm).  torch.set_num_threads(T); OMP /
OpenBLAS / MKL thread counts are set to T before torch loads
(bench/torch_env.py).  The variants
alternate: --rounds rounds of --calls calls each; median and minimum
per variant.  With --rlx PATH it then runs that bench_moe binary with
the same threads, rounds and calls.

Usage: OPENBLAS_NUM_THREADS=1 /usr/bin/python3 bench/bench_moe_torch.py
       [--threads 1] [--rounds 5] [--calls 10] [--rlx build/bench/bench_moe]
"""
import argparse
import subprocess
import sys
import time

import torch_env

T, K, N, E = 4096, 512, 512, 8


def routing(torch):
    share = [0.6 ** j for j in range(E)]
    cnt = [int(T * s / sum(share)) for s in share[:-1]]
    cnt.append(T - sum(cnt))
    ids = torch.cat([torch.full((c,), j) for j, c in enumerate(cnt)])
    g = torch.Generator().manual_seed(1)
    return ids[torch.randperm(T, generator=g)], cnt


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--threads", type=int, default=1)
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--calls", type=int, default=10)
    ap.add_argument("--rlx")
    a = ap.parse_args()
    torch_env.set_env(a.threads)
    import torch
    torch.set_num_threads(a.threads)
    torch.manual_seed(1)
    x = torch.rand(T, K) - 0.5
    w = torch.rand(E, K, N) - 0.5
    dy = torch.rand(T, N) - 0.5
    ids, cnt = routing(torch)
    rows = [torch.nonzero(ids == j).flatten() for j in range(E)]
    print("routing rows per expert: " + " ".join(map(str, cnt)))

    def moe(xx, ww):
        y = xx.new_empty(T, N)
        for j in range(E):
            y.index_copy_(0, rows[j], xx.index_select(0, rows[j]) @ ww[j])
        return y

    def fwd_dense():
        with torch.no_grad():
            return x @ w[0]

    def fwd_grouped():
        with torch.no_grad():
            return moe(x, w)

    def bwd(fn, ww):
        xx = x.detach().requires_grad_()
        ww = ww.detach().requires_grad_()
        fn(xx, ww).backward(dy)

    variants = [("fwd dense", fwd_dense), ("fwd grouped", fwd_grouped),
                ("bwd dense", lambda: bwd(lambda u, v: u @ v, w[0])),
                ("bwd grouped", lambda: bwd(moe, w))]
    for _, f in variants:
        for _ in range(2):
            f()
    times = {n: [] for n, _ in variants}
    for _ in range(a.rounds):
        for n, f in variants:
            for _ in range(a.calls):
                t0 = time.perf_counter()
                f()
                times[n].append((time.perf_counter() - t0) * 1e3)
    res = {}
    for n, _ in variants:
        ts = sorted(times[n])
        res[n] = (ts[len(ts) // 2], ts[0])
        print("torch moe %-11s threads=%d median_ms=%.2f min_ms=%.2f"
              % (n, a.threads, res[n][0], res[n][1]))
    for p in ("fwd", "bwd"):
        g, d = res[p + " grouped"], res[p + " dense"]
        print("torch moe ratio %s grouped/dense median=%.2f min=%.2f"
              % (p, g[0] / d[0], g[1] / d[1]))
    sys.stdout.flush()
    if a.rlx:
        subprocess.run([a.rlx, "--threads=%d" % a.threads,
                        "--rounds=%d" % a.rounds, "--calls=%d" % a.calls],
                       check=True)


if __name__ == "__main__":
    main()
