#!/usr/bin/python3
"""bench_rng_torch.py -- PyTorch CPU baseline for bench/bench_rng.c.

torch.rand / torch.randn into a preallocated [4096, 4096] float32
tensor (out=, a fresh generator seed per call) and torch.mul of two
such tensors, next to bench_rng's rlx_rng_uniform_f32,
rlx_rng_normal_f32 and a C mul loop. torch.set_num_threads(T); OMP /
OpenBLAS / MKL thread counts are set to T before torch loads
(bench/torch_env.py). The two sides
alternate for --rounds rounds (median and minimum per call over
--seconds each); the summary gives the medians over the rounds, the
minima, samples per second and the rlx/torch ratio.

Usage: OPENBLAS_NUM_THREADS=1 /usr/bin/python3 bench/bench_rng_torch.py
       --rlx build/bench/bench_rng [--threads 1] [--seconds 1]
       [--rounds 3]
"""
import argparse
import re
import statistics
import subprocess

import torch_env

LINE = re.compile(r"rlx (\S+) threads=\d+ median_ms=(\S+) min_ms=(\S+)")
N = 4096 * 4096


def run_torch(torch, seconds):
    out = torch.empty(4096, 4096)
    a, b = torch.rand(4096, 4096), torch.rand(4096, 4096)
    gen = torch.Generator().manual_seed(0)
    fns = {"rng_uniform": lambda: torch.rand(4096, 4096, out=out,
                                             generator=gen),
           "rng_normal": lambda: torch.randn(4096, 4096, out=out,
                                             generator=gen),
           "mul": lambda: torch.mul(a, b, out=out)}
    res = {}
    for what, fn in fns.items():
        ts = torch_env.timings(fn, seconds, warmup=3, min_calls=10)
        res[what] = (statistics.median(ts) * 1e3, min(ts) * 1e3)
    return res


def run_rlx(path, threads, seconds):
    out = subprocess.run([path, "--threads=%d" % threads,
                          "--secs=%g" % seconds], check=True,
                         stdout=subprocess.PIPE).stdout.decode()
    return {m.group(1): (float(m.group(2)), float(m.group(3)))
            for m in LINE.finditer(out)}


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--rlx", required=True, help="bench_rng binary")
    ap.add_argument("--threads", type=int, default=1)
    ap.add_argument("--seconds", type=float, default=1.0)
    ap.add_argument("--rounds", type=int, default=3)
    a = ap.parse_args()
    torch_env.set_env(a.threads)
    import torch
    torch.set_num_threads(a.threads)
    print("# torch %s threads=%d, [4096, 4096] f32, %d rounds" %
          (torch.__version__, a.threads, a.rounds))
    runs = {"rlx": [], "torch": []}
    for _ in range(a.rounds):
        runs["rlx"].append(run_rlx(a.rlx, a.threads, a.seconds))
        runs["torch"].append(run_torch(torch, a.seconds))
    print("%-12s %-6s %10s %10s %12s" % ("kernel", "side", "median_ms",
                                         "min_ms", "Msamples/s"))
    for what in ("rng_uniform", "rng_normal", "mul"):
        med = {}
        for side in ("rlx", "torch"):
            m = statistics.median(r[what][0] for r in runs[side])
            mn = min(r[what][1] for r in runs[side])
            med[side] = m
            print("%-12s %-6s %10.2f %10.2f %12.0f" %
                  (what, side, m, mn, N / m / 1e3))
        print("%-12s ratio torch/rlx (median) %.2f" %
              (what, med["torch"] / med["rlx"]))


if __name__ == "__main__":
    main()
