#!/usr/bin/python3
"""bench_mlp_torch.py -- PyTorch CPU baseline for bench/bench_mlp.c.

Times the MLP 784-512-512-10 (batch 128, relu, float32) forward pass and
one training step (forward + softmax cross-entropy + loss.backward(),
gradients of all six parameters) with torch.set_num_threads(1) and (2),
median of repeated calls after a warm-up, in the same output format as
bench_mlp.  With --rlx PATH it also runs that bench_mlp binary and
prints a Markdown table with the ratios torch_ms / rlx_ms (> 1 means
rlxc is faster), plus the machine and date, for docs/performance.md.

Usage: /usr/bin/python3 bench/bench_mlp_torch.py [--rlx build/bench/bench_mlp]
       [--seconds S] [--threads 1,2]
"""
import argparse
import datetime
import os
import platform
import re
import subprocess
import time

import torch


def model():
    g = torch.Generator().manual_seed(1)
    dims = [784, 512, 512, 10]
    ps = []
    for i in range(3):
        ps.append((torch.rand(dims[i], dims[i + 1], generator=g) * 2 - 1)
                  .requires_grad_())
        ps.append((torch.rand(dims[i + 1], generator=g) * 2 - 1)
                  .requires_grad_())
    x = torch.rand(128, 784, generator=g) * 2 - 1
    y = torch.arange(128) * 7 % 10
    return ps, x, y


def forward(ps, x):
    h = torch.relu(x @ ps[0] + ps[1])
    h = torch.relu(h @ ps[2] + ps[3])
    return h @ ps[4] + ps[5]


def measure(fn, seconds):
    for _ in range(5):
        fn()
    ts, start = [], time.perf_counter()
    while len(ts) < 10 or time.perf_counter() - start < seconds:
        t0 = time.perf_counter()
        fn()
        ts.append(time.perf_counter() - t0)
    ts.sort()
    return ts[len(ts) // 2] * 1e3, ts[0] * 1e3, len(ts)


def run_torch(threads, seconds):
    ps, x, y = model()
    res = {}

    def fwd():
        with torch.no_grad():
            forward(ps, x)

    def step():
        for p in ps:
            p.grad = None
        loss = torch.nn.functional.cross_entropy(forward(ps, x), y)
        loss.backward()

    for t in threads:
        torch.set_num_threads(t)
        for name, fn in (("forward", fwd), ("train_step", step)):
            med, mn, n = measure(fn, seconds)
            res[(name, t)] = med
            print("torch %s threads=%d median_ms=%.3f min_ms=%.3f calls=%d"
                  % (name, t, med, mn, n), flush=True)
    return res


def run_rlx(path, threads, seconds):
    out = subprocess.run([path, "--threads", ",".join(map(str, threads)),
                          "--seconds", str(seconds)], check=True,
                         stdout=subprocess.PIPE).stdout.decode()
    print(out, end="")
    res = {}
    for m in re.finditer(r"rlx (\w+) threads=(\d+) median_ms=([\d.]+)", out):
        res[(m.group(1), int(m.group(2)))] = float(m.group(3))
    ws = re.search(r"workspace_bytes (.*)", out)
    return res, ws.group(1) if ws else "?"


def cpu_name():
    for line in open("/proc/cpuinfo"):
        if line.startswith("model name"):
            return line.split(":", 1)[1].strip()
    return platform.processor()


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--rlx")
    ap.add_argument("--seconds", type=float, default=2.0)
    ap.add_argument("--threads", default="1,2")
    a = ap.parse_args()
    threads = [int(t) for t in a.threads.split(",")]
    tr = run_torch(threads, a.seconds)
    if not a.rlx:
        return
    rr, ws = run_rlx(a.rlx, threads, a.seconds)
    print("\nMachine: %s (%d logical CPUs), %s UTC, torch %s" %
          (cpu_name(), os.cpu_count(),
           datetime.datetime.utcnow().strftime("%Y-%m-%d %H:%M"),
           torch.__version__))
    print("\n| measurement | threads | rlxc ms | PyTorch ms | "
          "PyTorch / rlxc |\n|---|---|---|---|---|")
    for name in ("forward", "train_step"):
        for t in threads:
            r, p = rr.get((name, t)), tr[(name, t)]
            ratio = "%.2f" % (p / r) if r else "?"
            print("| %s | %d | %s | %.3f | %s |" %
                  (name, t, "%.3f" % r if r else "?", p, ratio))
    print("\nWorkspace bytes: %s" % ws)


if __name__ == "__main__":
    main()
