#!/usr/bin/python3
"""bench_jvp_torch.py -- PyTorch CPU baseline for bench/bench_jvp.c.

The MLP 784-512-512-10 (batch 128, tanh, mean softmax cross-entropy,
float32) of bench/bench_jvp.rlx, with the same init scheme (weights
uniform / sqrt(fan_in), biases 0.1 * uniform, tangents scaled alike):

  forward   the loss under no_grad
  jvp       functorch.jvp of the loss, every param seeded (forward mode,
            dual tensors); "jvp.autograd" the same through
            torch.autograd.functional.jvp (the double-backward trick)
  jvp_x     functorch.jvp of the loss, only the input x seeded
  grad      torch.autograd.grad of the loss, every param
  hvp       functorch.jvp(functorch.grad(f)): forward over reverse, as
            rlxc's ENTRY_hvp does (PyTorch 1.13 has no forward rule for
            nll_loss_backward or _log_softmax_backward_data, so this f
            writes the cross-entropy as logsumexp - gather: the same
            value); "hvp.double_backward" the manual reverse over
            reverse: autograd.grad(create_graph=True), <g, v>, a second
            autograd.grad; "hvp.autograd" torch.autograd.functional.hvp

with torch.set_num_threads(T) and OpenBLAS's own pool set to T
(bench/torch_env.py; torch.set_num_threads does not reach it), the
eight timed interleaved (one call of each in turn, for 8 x S seconds
per thread count, as bench_jvp times its five entries), so load from
other processes reaches them alike.  With --rlx PATH it alternates with that bench_jvp binary --rounds
times (PyTorch first in odd rounds, rlxc first in even ones), and
reports per measurement the median over the rounds of each round's
median, the lowest minimum of all rounds and the spread of the round
medians (min-max, as a % of their median): a Markdown table with
PyTorch / rlxc ratios (> 1: rlxc is faster), and a second table with
the ratios JVP / forward and HVP / grad of each side against the
targets (JVP <= 2x forward, HVP <= 3x grad) and the FLOP bounds.
--chart PATH draws the first table (bench/charts.py, needs matplotlib).

Usage: /usr/bin/python3 bench/bench_jvp_torch.py [--rlx build/bench/bench_jvp]
       [--seconds S] [--threads 1,2] [--rounds N] [--chart docs/charts/jvp.svg]
"""
import argparse
import os
import re
import statistics
import subprocess
import time

import torch_env
torch_env.set_env(max(torch_env.argv_threads("1,2")))
import functorch  # noqa: E402
import torch  # noqa: E402
import torch.nn.functional as F  # noqa: E402

DIMS = [784, 512, 512, 10]
BATCH = 128
# (key, label): PyTorch's rows; the rlxc entry each is compared with is
# the key before the first dot.
ROWS = [("forward", "forward"),
        ("jvp", "jvp (functorch)"),
        ("jvp.autograd", "jvp (autograd.functional)"),
        ("jvp_x", "jvp x only (functorch)"),
        ("grad", "grad"),
        ("hvp", "hvp (functorch fwd-over-rev)"),
        ("hvp.double_backward", "hvp (double backward)"),
        ("hvp.autograd", "hvp (autograd.functional)")]


def flops():
    """Multiply-add FLOPs (2 per MAC) of the matrix products of each
    entry; elementwise work not counted."""
    mm = [2 * BATCH * DIMS[i] * DIMS[i + 1] for i in range(3)]
    fwd = sum(mm)
    # tangent of z_l = h_{l-1} @ W_l: x @ dW1 (x not seeded), then
    # dh @ W + h @ dW for layers 2 and 3
    jvp = fwd + mm[0] + 2 * mm[1] + 2 * mm[2]
    jvp_x = 2 * fwd  # dx @ W1, dh1 @ W2, dh2 @ W3
    # backward: dW_l = h^T dz_l (3), dh_{l-1} = dz_l W_l^T (layers 2, 3)
    grad = fwd + sum(mm) + mm[1] + mm[2]
    # forward over reverse: the grad's products, plus two tangent
    # products per product of the grad whose factors both depend on the
    # params, one for x @ W1 and x^T dz1 (x is not seeded)
    hvp = grad + 2 * mm[0] + 6 * mm[1] + 6 * mm[2]
    return {"forward": fwd, "jvp": jvp, "jvp_x": jvp_x, "grad": grad,
            "hvp": hvp}


def model():
    g = torch.Generator().manual_seed(1)

    def uniform(*shape):
        return torch.rand(*shape, generator=g) * 2 - 1

    ps, vs = [], []
    for i in range(3):
        s = DIMS[i] ** -0.5
        ps += [uniform(DIMS[i], DIMS[i + 1]) * s, uniform(DIMS[i + 1]) * 0.1]
        vs += [uniform(DIMS[i], DIMS[i + 1]) * s, uniform(DIMS[i + 1]) * 0.1]
    x = uniform(BATCH, 784)
    y = torch.arange(BATCH) * 7 % 10
    return tuple(ps), tuple(vs), x, y


def logits(ps, x):
    h = torch.tanh(x @ ps[0] + ps[1])
    h = torch.tanh(h @ ps[2] + ps[3])
    return h @ ps[4] + ps[5]


def run_torch(threads, seconds):
    ps, vs, x, y = model()
    dx = torch.rand(x.shape, generator=torch.Generator().manual_seed(2)) \
        * 2 - 1

    def loss(*p):
        return F.cross_entropy(logits(p, x), y)

    def loss_lse(*p):  # the same value; forward AD can go through its grad
        z = logits(p, x)
        return (torch.logsumexp(z, 1) - z.gather(1, y[:, None])[:, 0]).mean()

    def loss_x(xx):
        return F.cross_entropy(logits(ps, xx), y)

    grad_lse = functorch.grad(loss_lse, argnums=tuple(range(len(ps))))
    leaf = [p.clone().requires_grad_() for p in ps]

    def fwd():
        with torch.no_grad():
            loss(*ps)

    def grad():
        return torch.autograd.grad(loss(*leaf), leaf)

    def hvp_rr():
        g = torch.autograd.grad(loss(*leaf), leaf, create_graph=True)
        gv = sum((a * b).sum() for a, b in zip(g, vs))
        return torch.autograd.grad(gv, leaf)

    fns = {"forward": fwd,
           "jvp": lambda: functorch.jvp(loss, ps, vs),
           "jvp.autograd": lambda: torch.autograd.functional.jvp(loss, ps,
                                                                  vs),
           "jvp_x": lambda: functorch.jvp(loss_x, (x,), (dx,)),
           "grad": grad,
           "hvp": lambda: functorch.jvp(grad_lse, ps, vs),
           "hvp.double_backward": hvp_rr,
           "hvp.autograd": lambda: torch.autograd.functional.hvp(loss, ps,
                                                                 vs)}
    res = {}
    for t in threads:
        torch_env.use_threads(torch, t)
        for (key, _), (med, mn, n) in zip(ROWS, interleaved(
                [fns[k] for k, _ in ROWS], seconds)):
            res[(key, t)] = (med, mn)
            print("torch %s threads=%d median_ms=%.3f min_ms=%.3f calls=%d"
                  % (key, t, med, mn, n), flush=True)
    return res


def interleaved(fns, seconds):
    """Call fns in turn, one call each per sweep, for len(fns) * seconds
    (at least 10 sweeps, after 3 warm-up sweeps), as bench_jvp.c's
    time_interleaved does; [(median_ms, min_ms, calls)] per fn."""
    for _ in range(3):
        for fn in fns:
            fn()
    ts = [[] for _ in fns]
    start = time.perf_counter()
    while len(ts[0]) < 10 or time.perf_counter() - start < \
            len(fns) * seconds:
        for fn, t in zip(fns, ts):
            t0 = time.perf_counter()
            fn()
            t.append(time.perf_counter() - t0)
    out = []
    for t in ts:
        t.sort()
        out.append((t[len(t) // 2] * 1e3, t[0] * 1e3, len(t)))
    return out


def check_torch():
    """The three HVPs agree (sanity of the baseline itself)."""
    ps, vs, x, y = model()
    leaf = [p.clone().requires_grad_() for p in ps]
    g = torch.autograd.grad(F.cross_entropy(logits(leaf, x), y), leaf,
                            create_graph=True)
    hv = torch.autograd.grad(sum((a * b).sum() for a, b in zip(g, vs)),
                             leaf)

    def loss_lse(*p):
        z = logits(p, x)
        return (torch.logsumexp(z, 1) - z.gather(1, y[:, None])[:, 0]).mean()

    _, hv2 = functorch.jvp(functorch.grad(loss_lse, argnums=(0, 1, 2, 3, 4,
                                                             5)), ps, vs)
    scale = max(a.abs().max().item() for a in hv)
    err = max((a - b).abs().max().item() for a, b in zip(hv, hv2)) / scale
    print("torch check hvp forward-over-reverse vs double backward: "
          "rel_err=%.2e" % err, flush=True)


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


def summary(rounds):
    """{key: (median of the round medians, lowest minimum, spread %)}
    from a list of per-round {key: (median, min)}."""
    out = {}
    for k in {k for r in rounds for k in r}:
        meds = [r[k][0] for r in rounds if k in r]
        mins = [r[k][1] for r in rounds if k in r]
        m = statistics.median(meds)
        out[k] = (m, min(mins), 100 * (max(meds) - min(meds)) / m)
    return out


def fmt(v):
    return "%.3f (%.3f)" % (v[0], v[1]) if v else "?"


def tables(rs, ts, threads, ws):
    print("\n" + torch_env.machine_line(torch, ", ".join(
        map(os.path.basename, torch_env.blas_libs())) or "none"))
    print("\n| measurement | threads | rlxc median (min) ms | PyTorch "
          "median (min) ms | PyTorch / rlxc (median) |\n"
          "|---|---|---|---|---|")
    for t in threads:
        for key, label in ROWS:
            r, p = rs.get((key.split(".")[0], t)), ts.get((key, t))
            print("| %s | %d | %s | %s | %s |" % (
                label, t, fmt(r), fmt(p),
                "%.2f" % (p[0] / r[0]) if r and p else "?"))
    print("\nSpread of the round medians (max - min, % of the median):")
    for t in threads:
        print("  %d thread%s: rlxc %s; PyTorch %s" % (
            t, "" if t == 1 else "s",
            ", ".join("%s %.0f%%" % (k, rs[(k, t)][2]) for k in
                      ("forward", "jvp", "jvp_x", "grad", "hvp")
                      if (k, t) in rs),
            ", ".join("%s %.0f%%" % (k, ts[(k, t)][2]) for k, _ in ROWS
                      if (k, t) in ts)))
    fl = flops()
    print("\n| ratio | threads | FLOP bound | target | rlxc median "
          "(min) | PyTorch median (min) |\n|---|---|---|---|---|---|")
    for t in threads:
        for num, den, tgt, pnum in (("jvp", "forward", "<= 2", "jvp"),
                                    ("jvp_x", "forward", "", "jvp_x"),
                                    ("hvp", "grad", "<= 3", "hvp")):
            def ratio(d, a, b):
                if (a, t) not in d or (b, t) not in d:
                    return "?"
                return "%.2f (%.2f)" % (d[(a, t)][0] / d[(b, t)][0],
                                        d[(a, t)][1] / d[(b, t)][1])
            print("| %s / %s | %d | %.2f | %s | %s | %s |" % (
                num, den, t, fl[num] / fl[den], tgt or "—",
                ratio(rs, num, den), ratio(ts, pnum, den)))
    print("\nMatrix-product GFLOP per call: %s" % ", ".join(
        "%s %.3f" % (k, v / 1e9) for k, v in fl.items()))
    print("Workspace bytes: %s" % ws)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--rlx")
    ap.add_argument("--seconds", type=float, default=1.0)
    ap.add_argument("--threads", default="1,2")
    ap.add_argument("--rounds", type=int, default=5,
                    help="alternate PyTorch and rlxc this many times")
    ap.add_argument("--chart", metavar="PATH",
                    help="draw the numbers of this run into PATH "
                    "(bench/charts.py; .svg or .png)")
    a = ap.parse_args()
    if a.chart:
        import charts
        charts.require()
    threads = [int(t) for t in a.threads.split(",")]
    check_torch()
    tr, rr, ws = [], [], "?"
    for i in range(a.rounds):
        order = ("torch", "rlx") if i % 2 == 0 else ("rlx", "torch")
        for side in order:
            if side == "torch":
                tr.append(run_torch(threads, a.seconds))
            elif a.rlx:
                res, ws = run_rlx(a.rlx, threads, a.seconds)
                rr.append(res)
    ts, rs = summary(tr), summary(rr)
    tables(rs, ts, threads, ws)
    if a.chart:
        import charts
        recs = []
        for t in threads:
            for key, label in ROWS:
                r, p = rs.get((key.split(".")[0], t)), ts.get((key, t))
                recs.append(charts.record(
                    label, t, r and r[0], p and p[0],
                    r and (r[1], r[0]), p and (p[1], p[0])))
        charts.draw(recs, a.chart, "forward mode, MLP 784-512-512-10 tanh",
                    unit="ms", machine=charts.machine(), date=charts.now())
        print("chart: %s" % a.chart)


if __name__ == "__main__":
    main()
