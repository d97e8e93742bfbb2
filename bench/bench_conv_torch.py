#!/usr/bin/python3
"""bench_conv_torch.py -- PyTorch CPU baseline for bench/bench_conv.c.

Times, on bench_conv's shapes (float32, NCHW), PyTorch's forward
convolution (torch.nn.functional.conv2d) and the two backward
convolutions that autograd runs (torch.ops.aten.convolution_backward
with one output mask at a time: input gradient, weight gradient), plus
`step`: one autograd training step of the small CNN's two convolutions
(y1 = conv(x, w1), y2 = conv(x2, w2), backward from given dy1, dy2; x
needs no gradient, x2 does: both forwards, both weight gradients and
conv2's input gradient, the five ops bench_conv's step runs).
torch.set_num_threads(T), OpenMP and OpenBLAS held to T as well (env
OMP_NUM_THREADS / OPENBLAS_NUM_THREADS / MKL_NUM_THREADS are set to the
largest T before torch loads, and openblas_set_num_threads is called:
bench/torch_env.py).
Median and minimum of calls repeated for --seconds after 2 warm-ups.

With --rlx PATH it also runs that bench_conv binary, alternating the two
--rounds times so both see the same machine load, keeps the best median
and minimum of each, and prints a Markdown table (GFLOP/s of both from
the medians, ratio = torch_ms / rlx_ms: above 1 means rlxc is faster),
with the machine, date and load, for docs/performance.md.  --chart PATH
draws the GFLOP/s of the run (bench/charts.py, needs matplotlib).

Usage: /usr/bin/python3 bench/bench_conv_torch.py [--rlx build/bench/bench_conv]
       [--seconds S] [--threads 1,2] [--rounds N] [--batch N]
       [--chart docs/charts/conv.svg] [SHAPE ...]
"""
import argparse
import os
import re
import subprocess
import sys

import torch_env

# name: (x shape, out channels, kernel, padding, groups)
SHAPES = {
    "resnet3x3": ((32, 64, 56, 56), 64, 3, 1, 1),
    "resnet1x1": ((32, 256, 14, 14), 256, 1, 0, 1),
    "dw3x3": ((32, 128, 28, 28), 128, 3, 1, 128),
    "cnn1": ((64, 1, 28, 28), 16, 3, 1, 1),
    "cnn2": ((64, 16, 14, 14), 32, 3, 1, 1),
}
OPS = ("fwd", "bwd_input", "bwd_weight")


def measure(fn, seconds):
    """(median ms, min ms) after 2 warm-up calls, at least 5."""
    return torch_env.measure(fn, seconds, warmup=2, min_calls=5)[:2]


def flops(name, batch):
    (n, c, h, w), co, k, p, g = SHAPES[name]
    n = batch or n
    oh, ow = h + 2 * p - k + 1, w + 2 * p - k + 1
    return 2.0 * n * co * oh * ow * (c // g) * k * k


def layer(torch, name, batch):
    (n, c, h, w), co, k, p, g = SHAPES[name]
    gen = torch.Generator().manual_seed(1)
    x = torch.rand(batch or n, c, h, w, generator=gen) - 0.5
    wt = torch.rand(co, c // g, k, k, generator=gen) - 0.5
    y = torch.nn.functional.conv2d(x, wt, padding=p, groups=g)
    return x, wt, torch.rand(y.shape, generator=gen) - 0.5, p, g


def op_fn(torch, name, op, batch):
    x, wt, dy, p, g = layer(torch, name, batch)
    F = torch.nn.functional
    cb = torch.ops.aten.convolution_backward
    if op == "fwd":
        return lambda: F.conv2d(x, wt, padding=p, groups=g)
    mask = [op == "bwd_input", op == "bwd_weight", False]
    return lambda: cb(dy, x, wt, None, [1, 1], [p, p], [1, 1], False,
                      [0, 0], g, mask)


def step_fn(torch, batch):
    x1, w1, dy1, p1, _ = layer(torch, "cnn1", batch)
    x2, w2, dy2, p2, _ = layer(torch, "cnn2", batch)
    w1.requires_grad_()
    w2.requires_grad_()
    x2.requires_grad_()

    def step():
        w1.grad = w2.grad = x2.grad = None
        y1 = torch.nn.functional.conv2d(x1, w1, padding=p1)
        y2 = torch.nn.functional.conv2d(x2, w2, padding=p2)
        torch.autograd.backward([y1, y2], [dy1, dy2])
    return step


def run_torch(names, threads, seconds, batch):
    import torch
    res = {}
    for t in threads:
        torch_env.use_threads(torch, t)
        for name in names:
            ops = ["step"] if name == "cnn" else OPS
            for op in ops:
                with torch.no_grad():
                    fn = (step_fn(torch, batch) if op == "step"
                          else op_fn(torch, name, op, batch))
                if op == "step":
                    med, mn = measure(fn, seconds)
                else:
                    with torch.no_grad():
                        med, mn = measure(fn, seconds)
                res[(name, op, t)] = (med, mn)
                print("torch %s %s threads=%d median_ms=%.3f min_ms=%.3f"
                      % (name, op, t, med, mn), flush=True)
    return res


def run_rlx(path, names, threads, seconds, batch):
    cmd = [path, "--threads=" + ",".join(map(str, threads)),
           "--secs=%g" % seconds] + names
    if batch:
        cmd.append("--batch=%d" % batch)
    out = subprocess.run(cmd, check=True, stdout=subprocess.PIPE)
    out = out.stdout.decode()
    print(out, end="", flush=True)
    pat = r"rlx (\S+) (\S+) threads=(\d+) median_ms=([\d.]+) min_ms=([\d.]+)"
    return {(m.group(1), m.group(2), int(m.group(3))):
            (float(m.group(4)), float(m.group(5)))
            for m in re.finditer(pat, out)}


def table(names, threads, rlx, torch_res, batch):
    print("\n%s UTC, %s, %d CPUs, load average %s"
          % (torch_env.utc_now(), torch_env.cpu_name(), os.cpu_count(),
             torch_env.load_average()))
    print("\n| shape | op | threads | rlxc median (min) ms | GFLOP/s "
          "| PyTorch median (min) ms | GFLOP/s | PyTorch / rlxc |")
    print("|---|---|---|---|---|---|---|---|")
    for name in names:
        ops = ["step"] if name == "cnn" else OPS
        for t in threads:
            for op in ops:
                k = (name, op, t)
                if k not in rlx or k not in torch_res:
                    continue
                f = (2 * flops("cnn1", batch) + 3 * flops("cnn2", batch)
                     if name == "cnn" else flops(name, batch))
                r, p = rlx[k], torch_res[k]
                print("| %s | %s | %d | %.3f (%.3f) | %.1f | %.3f (%.3f) | "
                      "%.1f | %.2f |" % (name, op, t, r[0], r[1],
                                         f / r[0] * 1e-6, p[0], p[1],
                                         f / p[0] * 1e-6, p[0] / r[0]))


def chart(path, names, threads, rlx, torch_res, batch):
    """--chart: GFLOP/s from the medians, whiskers up to the best call."""
    import charts
    recs = []
    for t in threads:
        for name in names:
            f = (2 * flops("cnn1", batch) + 3 * flops("cnn2", batch)
                 if name == "cnn" else flops(name, batch))
            for op in ["step"] if name == "cnn" else OPS:
                k = (name, op, t)
                g = [(f / v[0] * 1e-6, (f / v[0] * 1e-6, f / v[1] * 1e-6))
                     if v else (None, None)
                     for v in (rlx.get(k), torch_res.get(k))]
                if g[0][0] or g[1][0]:
                    recs.append(charts.record("%s %s" % (name, op), t,
                                              g[0][0], g[1][0], g[0][1],
                                              g[1][1]))
    charts.draw(recs, path, "convolutions" + (" (batch %d)" % batch
                                              if batch else ""),
                unit="GFLOP/s", machine=charts.machine(), date=charts.now())
    print("chart: %s" % path)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--rlx")
    ap.add_argument("--seconds", type=float, default=1.0)
    ap.add_argument("--threads", default="1,2")
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--batch", type=int, default=0)
    ap.add_argument("--chart", metavar="PATH",
                    help="draw the GFLOP/s of this run into PATH "
                    "(bench/charts.py; .svg or .png)")
    ap.add_argument("shapes", nargs="*")
    a = ap.parse_args()
    if a.chart:
        import charts
        charts.require()
    threads = [int(t) for t in a.threads.split(",")]
    names = a.shapes or list(SHAPES) + ["cnn"]
    for n in names:
        if n not in SHAPES and n != "cnn":
            sys.exit("unknown shape " + n)
    torch_env.set_env(max(threads))
    if not a.rlx:
        tor = run_torch(names, threads, a.seconds, a.batch)
        if a.chart:
            chart(a.chart, names, threads, {}, tor, a.batch)
        return
    rlx, tor = {}, {}
    for _ in range(a.rounds):
        torch_env.merge_best(tor, run_torch(names, threads, a.seconds,
                                            a.batch))
        torch_env.merge_best(rlx, run_rlx(a.rlx, names, threads, a.seconds,
                                          a.batch))
    table(names, threads, rlx, tor, a.batch)
    if a.chart:
        chart(a.chart, names, threads, rlx, tor, a.batch)


if __name__ == "__main__":
    main()
