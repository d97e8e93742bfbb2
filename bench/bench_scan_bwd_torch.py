#!/usr/bin/python3
"""bench_scan_bwd_torch.py -- PyTorch CPU baseline for bench_scan_bwd.c.

The same reverse sweep as bench/bench_scan_bwd.rlx (carry f32[4096], 256
steps, step c' = tanh(c*x) + x, its VJP written by hand), as a Python
loop of eager float32 torch ops producing d init and the dx rows in one
pass (rlxc computes them with two reverse scans, one per op). With
torch.set_num_threads(T) and OpenBLAS's pool set to T
(bench/torch_env.py). With --rlx PATH
it alternates with that bench_scan_bwd binary for --rounds rounds
(PyTorch first in odd rounds) and prints per thread count the median of
the round medians, the lowest minimum, and the ratio PyTorch / rlxc
(> 1: rlxc is faster).

Usage: OPENBLAS_NUM_THREADS=1 /usr/bin/python3 bench/bench_scan_bwd_torch.py
       [--rlx build/bench/bench_scan_bwd] [--seconds S] [--rounds N]
"""
import argparse
import re
import statistics
import subprocess

import torch_env
torch_env.set_env(2)  # the largest T measured
import torch  # noqa: E402

L, N = 256, 4096


def sweep(h0, xs, traj, dtraj):
    dc, dx = torch.zeros_like(h0), torch.empty_like(xs)
    for t in range(L - 1, -1, -1):
        dc = dc + dtraj[t]
        c = h0 if t == 0 else traj[t - 1]
        th = torch.tanh(c * xs[t])
        g = dc * (1 - th * th)
        dx[t] = g * c + dc
        dc = g * xs[t]
    return dc, dx


def time_torch(threads, seconds):
    torch_env.use_threads(torch, threads)
    gen = torch.Generator().manual_seed(1)
    a = [torch.rand(s, generator=gen) * 2 - 1
         for s in ((N,), (L, N), (L, N), (L, N))]
    ts = torch_env.timings(lambda: sweep(*a), seconds, warmup=3,
                           min_calls=10)
    return statistics.median(ts) * 1e3, min(ts) * 1e3


def time_rlx(path, seconds):
    out = subprocess.run([path, "--seconds", str(seconds)], check=True,
                         stdout=subprocess.PIPE).stdout.decode()
    r = {}
    for m in re.finditer(r"threads=(\d+) median_ms=([\d.]+) min_ms=([\d.]+)",
                         out):
        r[int(m.group(1))] = (float(m.group(2)), float(m.group(3)))
    return r


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--rlx")
    ap.add_argument("--seconds", type=float, default=2)
    ap.add_argument("--rounds", type=int, default=3)
    a = ap.parse_args()
    tor = {1: [], 2: []}
    rlx = {1: [], 2: []}
    for r in range(a.rounds):
        order = ["torch", "rlx"] if r % 2 == 0 else ["rlx", "torch"]
        for who in order:
            if who == "torch":
                for t in (1, 2):
                    tor[t].append(time_torch(t, a.seconds))
            elif a.rlx:
                for t, v in time_rlx(a.rlx, a.seconds).items():
                    rlx[t].append(v)
    print(torch_env.machine_line(torch))
    print("| threads | PyTorch median / min ms | rlxc median / min ms | "
          "ratio (median) |")
    print("|---|---|---|---|")
    for t in (1, 2):
        tm = statistics.median(v[0] for v in tor[t])
        tn = min(v[1] for v in tor[t])
        if rlx[t]:
            rm = statistics.median(v[0] for v in rlx[t])
            rn = min(v[1] for v in rlx[t])
            print("| %d | %.2f / %.2f | %.2f / %.2f | %.2f |"
                  % (t, tm, tn, rm, rn, tm / rm))
        else:
            print("| %d | %.2f / %.2f | - | - |" % (t, tm, tn))


if __name__ == "__main__":
    main()
