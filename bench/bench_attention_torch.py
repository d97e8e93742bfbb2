#!/usr/bin/python3
"""bench_attention_torch.py -- PyTorch CPU baseline for bench/bench_attention.c.

PyTorch's manual attention on bench_attention's shapes (float32, B = 1,
H = 8, D = 64, [b, h, L, d], scale 1/8): s = q @ k^T * scale,
masked_fill(-inf) for causal, softmax, @ v (fwd), and the same with
autograd backward from a given dy to dq, dk, dv (fwd+bwd).  The flops
counted are bench_attention's (forward 4 L^2 D per head, forward +
backward 14 L^2 D, causal half), so the GFLOP/s compare directly.
torch.set_num_threads(T); OMP / OpenBLAS / MKL thread counts are set to
T before torch loads (bench/torch_env.py).  Median and minimum of calls
repeated for --seconds after 2 warm-ups.  With --rlx PATH it then runs that
bench_attention binary on the same threads, seconds and lengths;
--chart PATH draws the GFLOP/s of both (rlxc's only with --rlx; its
rlx_gemm 512^3 rate as the peak line) with bench/charts.py (needs
matplotlib).

Usage: OPENBLAS_NUM_THREADS=1 /usr/bin/python3 bench/bench_attention_torch.py
       [--threads 1] [--seconds S] [--lens 256,1024,4096]
       [--rlx build/bench/bench_attention] [--chart docs/charts/attention.svg]
"""
import argparse
import re
import subprocess
import sys

import torch_env

LINE = re.compile(r"(rlx|torch) (.+?) threads=(\d+) median_ms=\S+ min_ms=\S+"
                  r" gflops=([\d.]+) gflops_best=([\d.]+)")


def run_rlx(path, threads, seconds, lens):
    out = subprocess.run([path, "--threads=%d" % threads,
                          "--secs=%g" % seconds, "--lens=" + lens],
                         check=True, stdout=subprocess.PIPE).stdout.decode()
    print(out, end="", flush=True)
    return out


def chart(path, threads, out):
    """--chart: records from the printed lines of both sides."""
    import charts
    res, order, peak = {}, [], None
    for m in LINE.finditer(out):
        what, g = m.group(2), (float(m.group(4)), float(m.group(5)))
        if what.startswith("gemm 512x512x512"):
            peak = g[0]
            continue
        label = what.replace("attn ", "").replace("mask=", "")
        if label not in order:
            order.append(label)
        res[(m.group(1), label)] = g
    recs = []
    for label in order:
        r, p = res.get(("rlx", label)), res.get(("torch", label))
        recs.append(charts.record(label, threads, r and r[0], p and p[0],
                                  r, p))
    charts.draw(recs, path, "attention, B=1 H=8 D=64", unit="GFLOP/s",
                machine=charts.machine(), date=charts.now(), peak=peak,
                peak_label=peak and "rlx_gemm 512³, %d thread%s: %.0f "
                "GFLOP/s" % (threads, "" if threads == 1 else "s", peak))
    print("chart: %s" % path)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--threads", type=int, default=1)
    ap.add_argument("--seconds", type=float, default=1.0)
    ap.add_argument("--lens", default="256,1024,4096")
    ap.add_argument("--rlx", help="bench_attention binary to run after")
    ap.add_argument("--chart", metavar="PATH",
                    help="draw the GFLOP/s of this run into PATH "
                    "(bench/charts.py; .svg or .png)")
    a = ap.parse_args()
    if a.chart:
        import charts
        charts.require()
    lines = []
    torch_env.set_env(a.threads)
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
                med, mn = torch_env.median_min(
                    torch_env.timings(fn, a.seconds, warmup=2, min_calls=5))
                lines.append(
                    f"torch attn L={L} mask={'causal' if causal else 'none'}"
                    f" {name} threads={a.threads} median_ms={med * 1e3:.3f}"
                    f" min_ms={mn * 1e3:.3f} gflops={fl / med * 1e-9:.1f}"
                    f" gflops_best={fl / mn * 1e-9:.1f}")
                print(lines[-1], flush=True)
    out = "\n".join(lines) + "\n"
    if a.rlx:
        out += run_rlx(a.rlx, a.threads, a.seconds, a.lens)
    if a.chart:
        chart(a.chart, a.threads, out)
    return 0


if __name__ == "__main__":
    sys.exit(main())
