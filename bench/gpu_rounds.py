"""gpu_rounds.py -- the timing loop the GPU training benchmarks share
(bench_mlp_gpu_train.py, bench_gpt_gpu_train.py, bench_gpt2_gpu.py), and
the loader of single-entry objects and the event timer of
bench_gemm_gpu.py and bench_gpu_membound.py."""
import ctypes
import os
import subprocess
import sys
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


def kernel_profile(run, s, steps=2, top=25):
    """Time the kernels of `steps` calls of run() with torch's profiler
    (CUPTI: it sees rlxc's driver-API launches and graph nodes too).
    rlxc kernels are named rlx_k<N>_<op>: they are grouped by <op>,
    others by name. Prints the `top` groups by total GPU time."""
    import re
    from torch.profiler import ProfilerActivity, profile
    run()
    s.synchronize()
    with profile(activities=[ProfilerActivity.CUDA]) as prof:
        for _ in range(steps):
            run()
        s.synchronize()
    groups = {}
    for ev in prof.events():
        if ev.device_type != torch.autograd.DeviceType.CUDA:
            continue
        key = re.sub(r"^rlx_k\d+_", "rlx:", ev.name)[:60]
        t, n = groups.get(key, (0.0, 0))
        groups[key] = (t + ev.time_range.elapsed_us() / steps, n + 1)
    total = sum(t for t, _ in groups.values())
    print("kernel time per step: %.2f ms in %d launches" % (
        total / 1e3, sum(n for _, n in groups.values()) // steps))
    for key, (t, n) in sorted(groups.items(), key=lambda kv: -kv[1][0])[:top]:
        print("  %-60s %8.3f ms %5.1f%% %5d launches" % (
            key, t / 1e3, 100 * t / total, n // steps))



def timed(fn, iters=20):
    """Mean ms of fn() over iters calls, CUDA events around them on the
    current stream."""
    s, e = torch.cuda.Event(True), torch.cuda.Event(True)
    s.record()
    for _ in range(iters):
        fn()
    e.record()
    torch.cuda.synchronize()
    return s.elapsed_time(e) / iters

def load_case(out, name, ws_bytes):
    """Entry `name` of OUT/name.so (a --target=cuda object linked -shared
    with librlxrt) with a device workspace of ws_bytes: returns
    call(ins, outs), which enqueues it on the current stream on the
    tensors' device pointers (and exits on a nonzero return)."""
    lib = ctypes.CDLL(os.path.join(out, name + ".so"))
    f = getattr(lib, name)
    f.argtypes = [ctypes.c_void_p] * 4
    f.restype = ctypes.c_int
    ws = torch.empty(max(ws_bytes, 1), dtype=torch.uint8, device="cuda")

    def call(ins, outs):
        pi = (ctypes.c_void_p * len(ins))(*[t.data_ptr() for t in ins])
        po = (ctypes.c_void_p * len(outs))(*[t.data_ptr() for t in outs])
        rc = f(pi, po, ctypes.c_void_p(ws.data_ptr()),
               ctypes.c_void_p(torch.cuda.current_stream().cuda_stream))
        if rc:
            sys.exit("call failed: rc %d" % rc)
    return call
