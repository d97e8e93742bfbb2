#!/usr/bin/python3
"""bench_mlp_torch.py -- PyTorch CPU baseline for bench/bench_mlp.c.

Times the MLP 784-512-512-10 (batch 128, relu, float32) forward pass and
one training step (forward + softmax cross-entropy + loss.backward(),
gradients of all six parameters) with torch.set_num_threads(1) and (2),
and OpenBLAS's own thread pool set to the same count (unless
--no-blas-limit: torch.set_num_threads does not reach it), median of
repeated calls after a warm-up, in the same output format as bench_mlp.
With --rlx PATH it also runs that bench_mlp binary, alternating the two
--rounds times so that both see the same machine load, keeps the best
median (and the best minimum) of each, and prints a Markdown table with
the ratios torch_ms / rlx_ms (> 1 means rlxc is faster), plus the
machine, date and load, for docs/performance.md.  --chart PATH draws
those numbers (bench/charts.py, needs matplotlib) into PATH (.svg/.png).

Thread setup, timing and the machine line: bench/torch_env.py.

Usage: /usr/bin/python3 bench/bench_mlp_torch.py [--rlx build/bench/bench_mlp]
       [--seconds S] [--threads 1,2] [--rounds N] [--no-blas-limit]
       [--chart docs/charts/mlp.svg]
"""
import argparse
import os
import re
import subprocess
import sys

import torch_env
torch_env.set_env(max(torch_env.argv_threads("1,2")),
                  blas="--no-blas-limit" not in sys.argv)
import torch  # noqa: E402


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
    """(median ms, min ms, calls) after 5 warm-up calls, at least 10."""
    return torch_env.measure(fn, seconds, warmup=5, min_calls=10)


def run_torch(threads, seconds, limit_blas):
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
        torch_env.use_threads(torch, t, blas=limit_blas)
        for name, fn in (("forward", fwd), ("train_step", step)):
            med, mn, n = measure(fn, seconds)
            res[(name, t)] = (med, mn)
            print("torch %s threads=%d median_ms=%.3f min_ms=%.3f calls=%d"
                  % (name, t, med, mn, n), flush=True)
    return res


def run_rlx(path, threads, seconds):
    out = subprocess.run([path, "--threads", ",".join(map(str, threads)),
                          "--seconds", str(seconds)], check=True,
                         stdout=subprocess.PIPE).stdout.decode()
    print(out, end="", flush=True)
    res = {}
    pat = r"rlx (\w+) threads=(\d+) median_ms=([\d.]+) min_ms=([\d.]+)"
    for m in re.finditer(pat, out):
        res[(m.group(1), int(m.group(2)))] = (float(m.group(3)),
                                              float(m.group(4)))
    ws = re.search(r"workspace_bytes (.*)", out)
    return res, ws.group(1) if ws else "?"


def table(rb, tb, threads, ws, limit_blas):
    print("\n" + torch_env.machine_line(
        torch, (", ".join(map(os.path.basename, torch_env.blas_libs()))
                or "none") if limit_blas else "no (default pool)"))
    print("\n| measurement | threads | rlxc median (min) ms | PyTorch "
          "median (min) ms | PyTorch / rlxc (median) |\n"
          "|---|---|---|---|---|")
    for name in ("forward", "train_step"):
        for t in threads:
            r, p = rb.get((name, t)), tb[(name, t)]
            print("| %s | %d | %s | %.3f (%.3f) | %s |" %
                  (name, t, "%.3f (%.3f)" % r if r else "?", p[0], p[1],
                   "%.2f" % (p[0] / r[0]) if r else "?"))
    for t in threads:
        g = rb.get(("gemm_only", t))
        if g:
            print("| rlxc forward GEMMs only | %d | %.3f (%.3f) | | |" %
                  (t, g[0], g[1]))
    print("\nWorkspace bytes: %s" % ws)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--rlx")
    ap.add_argument("--seconds", type=float, default=2.0)
    ap.add_argument("--threads", default="1,2")
    ap.add_argument("--no-blas-limit", action="store_true",
                    help="leave OpenBLAS's pool at its default size "
                    "(PyTorch's behaviour without OPENBLAS_NUM_THREADS)")
    ap.add_argument("--rounds", type=int, default=3,
                    help="alternate PyTorch and rlxc this many times")
    ap.add_argument("--chart", metavar="PATH",
                    help="draw the numbers of this run into PATH "
                    "(bench/charts.py; .svg or .png)")
    a = ap.parse_args()
    if a.chart:
        import charts
        charts.require()
    threads = [int(t) for t in a.threads.split(",")]
    tb, rb, ws = {}, {}, "?"
    for _ in range(a.rounds):
        torch_env.merge_best(tb, run_torch(threads, a.seconds,
                                           not a.no_blas_limit))
        if a.rlx:
            res, ws = run_rlx(a.rlx, threads, a.seconds)
            torch_env.merge_best(rb, res)
    if a.rlx:
        table(rb, tb, threads, ws, not a.no_blas_limit)
    if a.chart:
        order = [(n, t) for t in threads for n in ("forward", "train_step")]
        charts.draw(charts.timings((rb, tb), order), a.chart,
                    "MLP 784-512-512-10, batch 128", unit="ms",
                    machine=charts.machine(), date=charts.now())
        print("chart: %s" % a.chart)


if __name__ == "__main__":
    main()
