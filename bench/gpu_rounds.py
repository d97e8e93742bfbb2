"""gpu_rounds.py -- the timing loop the GPU training benchmarks share
(bench_mlp_gpu_train.py, bench_gpt_gpu_train.py, bench_gpt2_gpu.py)."""
import subprocess
import time

import torch


def time_rounds(variants, s, rounds, iters, warmup):
    """variants: [(name, run)], each run() enqueueing one step on stream s.
    warmup calls of each (compilation, graph capture), then `rounds`
    rounds, each timing `iters` calls of every variant (the order
    rotated per round, s synchronized before and after): {name: [ms per
    call, one value a round]}."""
    for _, run in variants:
        for _ in range(warmup):
            run()
    s.synchronize()
    times = {name: [] for name, _ in variants}
    for r in range(rounds):
        k = r % len(variants)
        for name, run in variants[k:] + variants[:k]:
            s.synchronize()
            t0 = time.perf_counter()
            for _ in range(iters):
                run()
            s.synchronize()
            times[name].append(1e3 * (time.perf_counter() - t0) / iters)
    return times


def header(rounds, iters):
    """The line naming the GPU, driver, torch, date and the rounds."""
    smi = subprocess.run(["nvidia-smi", "--query-gpu=name,driver_version",
                          "--format=csv,noheader"], capture_output=True,
                         text=True).stdout.strip()
    return "%s; torch %s; %s; %d rounds x %d steps" % (
        smi, torch.__version__, time.strftime("%Y-%m-%d"), rounds, iters)
