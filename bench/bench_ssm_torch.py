#!/usr/bin/python3
"""bench_ssm_torch.py -- PyTorch CPU baselines for bench/bench_ssm.c's
selective scan (float32, b=8, s=1024, h=256, n=16 by default), run in
alternation with rlxc's fused kernel.

The recurrence of language.md selective_scan,
  state_t = exp(delta_t (x) a) * state_{t-1} + (delta_t x_t) (x) b_t,
  y_t = state_t . c_t,
in two PyTorch forms:
  loop        a Python loop over t, each step vectorized over (b, h, n);
  vectorized  the associative (parallel) scan: with dA = exp(delta (x) a)
              and u = (delta x) (x) b for all steps at once, log2(s)
              doubling steps (A, U)[t] <- (A[t] A[t-d], A[t] U[t-d] + U[t])
              over whole tensors, then y = sum_n(U * c).  (The log-space
              cumsum form, exp(L_t) cumsum(exp(-L) u), overflows float32
              for these lengths: sum of delta*a reaches about -400.)
Both are checked against each other (and rlx's output is checked in
tests/e2e; here only timed).

--op gdn: gated_delta_net instead (float32, b=8, s=1024, H=8, n=64 by
default), the loop form of language.md's recurrence,
  S = exp(g_t) S;  d = (v_t - S^T k_t) beta_t;  S = S + k_t d^T;
  o_t = S^T q_t / sqrt(n),
each step batched matrix-vector products over (b, H) (torch.matmul);
inputs as bench_ssm.c's (q, v in [-1, 1), k in [-1/8, 1/8), g in
[-0.7, -0.05), beta in [0.1, 0.9)); compared with bench_ssm --gdn.
torch.set_num_threads(T); OMP / OpenBLAS / MKL thread counts are set to
T before torch loads (bench/torch_env.py). Each round runs rlx (when
--rlx is given), then loop, then vectorized; --rounds rounds; per side
the median and minimum over all calls of all rounds, and the ratios
torch / rlx of the medians and of the minima; then a "cpu" line: the
same from the process CPU time per call (rlx: bench_ssm's "# cpu"
lines), which the other jobs of a loaded machine disturb less.

Usage: OPENBLAS_NUM_THREADS=1 /usr/bin/python3 bench/bench_ssm_torch.py
       [--op scan|gdn] [--threads 1] [--rounds 3] [--calls 3]
       [--shape 8,1024,256,16 | 8,1024,8,64 for gdn]
       [--rlx build/bench/bench_ssm] [--forms loop,vectorized]
"""
import argparse
import re
import subprocess
import sys

import torch_env

LINE = {"scan": re.compile(r"rlx selective_scan .*median_ms=(\S+) "
                          r"min_ms=(\S+)"),
        "gdn": re.compile(r"rlx gated_delta_net .*median_ms=(\S+) "
                         r"min_ms=(\S+)")}


def loop_form(torch, x, d, a, b, c):
    bs, s, h = x.shape
    st = x.new_zeros(bs, h, a.shape[1])
    ys = []
    for t in range(s):
        dt = d[:, t, :, None]
        st = torch.exp(dt * a) * st + (dt * x[:, t, :, None]) * \
            b[:, t, None, :]
        ys.append((st * c[:, t, None, :]).sum(-1))
    return torch.stack(ys, 1)


def gdn_loop_form(torch, q, k, v, g, beta):
    bs, s, H, n = q.shape
    S = q.new_zeros(bs, H, n, n)
    eg = torch.exp(g)
    os_ = []
    for t in range(s):
        S = eg[:, t, :, None, None] * S
        kt = k[:, t, :, None, :]                           # [b, H, 1, n]
        d = (v[:, t] - torch.matmul(kt, S)[:, :, 0]) * beta[:, t, :, None]
        S = S + k[:, t, :, :, None] * d[:, :, None, :]
        os_.append(torch.matmul(q[:, t, :, None, :], S)[:, :, 0])
    return torch.stack(os_, 1) / n ** 0.5


def vectorized_form(torch, x, d, a, b, c):
    A = torch.exp(d[..., None] * a)                  # [b, s, h, n]
    U = (d * x)[..., None] * b[:, :, None, :]
    s, k = x.shape[1], 1
    while k < s:
        U = torch.cat([U[:, :k], A[:, k:] * U[:, :-k] + U[:, k:]], 1)
        A = torch.cat([A[:, :k], A[:, k:] * A[:, :-k]], 1)
        k *= 2
    return (U * c[:, :, None, :]).sum(-1)


def timed(fn, calls, cpu=None):
    """Wall seconds of each call; process CPU seconds appended to cpu."""
    return torch_env.timings(fn, 0, warmup=0, min_calls=calls, cpu=cpu)


CPU = re.compile(r"# cpu (\S+) .*cpu_median_ms=(\S+) cpu_min_ms=(\S+)")


def cpu_line(what, rlx_out, torch_cpu):
    """Process CPU time per call, the load-independent companion: rlx's
    '# cpu' lines (median of the runs' medians, minimum) against the
    torch loop's calls."""
    rl = [(float(m.group(2)), float(m.group(3))) for out in rlx_out
          for m in CPU.finditer(out) if m.group(1) == what.split()[0]]
    if not rl or not torch_cpu:
        return
    meds = sorted(r[0] for r in rl)
    r = (meds[len(meds) // 2], min(v[1] for v in rl))
    t = stats(torch_cpu)
    print("cpu   %s rlx median_ms=%.2f min_ms=%.2f torch loop median_ms=%.2f "
          "min_ms=%.2f ratio_median=%.1f ratio_min=%.1f" % (
              what, r[0], r[1], t[0], t[1], t[0] / r[0], t[1] / r[1]))


def stats(ts):
    return torch_env.median_min(ts, 1e3)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--threads", type=int, default=1)
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--calls", type=int, default=3)
    ap.add_argument("--op", choices=("scan", "gdn"), default="scan")
    ap.add_argument("--shape")
    ap.add_argument("--rlx")
    ap.add_argument("--forms", default="loop,vectorized",
                    help="the PyTorch forms to time (with vectorized, the two are "
                    "first checked against each other)")
    o = ap.parse_args()
    torch_env.set_env(o.threads)
    import torch
    torch.set_num_threads(o.threads)
    gdn = o.op == "gdn"
    o.shape = o.shape or ("8,1024,8,64" if gdn else "8,1024,256,16")
    bs, s, h, n = (int(v) for v in o.shape.split(","))
    g = torch.Generator().manual_seed(0)

    def uni(shape, lo, hi):
        return torch.rand(shape, generator=g) * (hi - lo) + lo
    if gdn:
        gdn_main(torch, o, uni, bs, s, h, n)
        return
    x, d = uni((bs, s, h), -1, 1), uni((bs, s, h), 0.05, 0.6)
    a = uni((h, n), -2, -0.2)
    b, c = uni((bs, s, n), -1, 1), uni((bs, s, n), -1, 1)
    with torch.no_grad():
        if "vectorized" in o.forms:
            y1 = loop_form(torch, x, d, a, b, c)
            y2 = vectorized_form(torch, x, d, a, b, c)
            err = float((y1 - y2).abs().max() / y1.abs().max())
            print("# torch %s threads=%d loop vs vectorized max rel diff "
                  "%.2e" % (torch.__version__, o.threads, err))
            if err > 1e-4:
                sys.exit("the two PyTorch forms disagree")
        res = {"rlx": [], "loop": [], "vectorized": []}
        outs, loop_cpu = [], []
        for _ in range(o.rounds):
            if o.rlx:
                out = subprocess.run(
                    [o.rlx, "--threads=%d" % o.threads, "--secs=1",
                     "--shape=" + o.shape, "--gdn=1,1,1,1"],
                    check=True, stdout=subprocess.PIPE).stdout.decode()
                m = LINE["scan"].search(out)
                res["rlx"].append((float(m.group(1)), float(m.group(2))))
                outs.append(out)
            if "loop" in o.forms:
                res["loop"] += timed(
                    lambda: loop_form(torch, x, d, a, b, c), o.calls,
                    loop_cpu)
            if "vectorized" in o.forms:
                res["vectorized"] += timed(
                    lambda: vectorized_form(torch, x, d, a, b, c), o.calls)
            print("# round: rlx %s loop %s vectorized %s (ms)" % (
                res["rlx"][-1:] or "-",
                " ".join("%.1f" % (t * 1e3) for t in res["loop"][-o.calls:]),
                " ".join("%.1f" % (t * 1e3)
                         for t in res["vectorized"][-o.calls:])),
                flush=True)
    what = "selective_scan b=%d s=%d h=%d n=%d threads=%d" % (bs, s, h, n,
                                                               o.threads)
    base = None
    if res["rlx"]:
        meds = sorted(r[0] for r in res["rlx"])
        base = (meds[len(meds) // 2], min(r[1] for r in res["rlx"]))
        print("rlx   %s median_ms=%.2f min_ms=%.2f (median of %d runs' "
              "medians)" % (what, base[0], base[1], len(meds)))
    for k in ("loop", "vectorized"):
        if not res[k]:
            continue
        med, mn = stats(res[k])
        line = "torch %-10s %s median_ms=%.2f min_ms=%.2f" % (k, what, med,
                                                             mn)
        if base:
            line += " ratio_median=%.1f ratio_min=%.1f" % (med / base[0],
                                                          mn / base[1])
        print(line, flush=True)
    cpu_line(what, outs, loop_cpu)


def gdn_main(torch, o, uni, bs, s, H, n):
    q, k = uni((bs, s, H, n), -1, 1), uni((bs, s, H, n), -0.125, 0.125)
    v = uni((bs, s, H, n), -1, 1)
    g, beta = uni((bs, s, H), -0.7, -0.05), uni((bs, s, H), 0.1, 0.9)
    rlx, loop, outs, loop_cpu = [], [], [], []
    with torch.no_grad():
        for _ in range(o.rounds):
            if o.rlx:
                out = subprocess.run(
                    [o.rlx, "--threads=%d" % o.threads, "--secs=1",
                     "--shape=1,1,16,1", "--gdn=" + o.shape],
                    check=True, stdout=subprocess.PIPE).stdout.decode()
                m = LINE["gdn"].search(out)
                rlx.append((float(m.group(1)), float(m.group(2))))
                outs.append(out)
            loop += timed(lambda: gdn_loop_form(torch, q, k, v, g, beta),
                          o.calls, loop_cpu)
            print("# round: rlx %s loop %s (ms)" % (
                rlx[-1:] or "-",
                " ".join("%.1f" % (t * 1e3) for t in loop[-o.calls:])),
                flush=True)
    what = "gated_delta_net b=%d s=%d H=%d n=%d threads=%d" % (
        bs, s, H, n, o.threads)
    line = "torch loop %s median_ms=%.2f min_ms=%.2f" % ((what,) +
                                                         stats(loop))
    if rlx:
        meds = sorted(r[0] for r in rlx)
        base = (meds[len(meds) // 2], min(r[1] for r in rlx))
        print("rlx   %s median_ms=%.2f min_ms=%.2f (median of %d runs' "
              "medians)" % (what, base[0], base[1], len(meds)))
        line += " ratio_median=%.1f ratio_min=%.1f" % (
            stats(loop)[0] / base[0], stats(loop)[1] / base[1])
    print(line, flush=True)
    cpu_line(what, outs, loop_cpu)


if __name__ == "__main__":
    main()
