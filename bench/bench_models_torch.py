#!/usr/bin/python3
"""bench_models_torch.py -- PyTorch CPU baseline for bench/bench_models.c.

The same models as bench/bench_{cnn,resblock,tblock,gpt}.rlx, float32,
forward (no_grad) and one training step (forward + loss.backward(),
gradients of the params only), with torch.set_num_threads(T) and
OpenBLAS's pool set to T too (bench/torch_env.py). With
--rlx PATH it alternates with that bench_models binary --rounds times,
keeps the best median and minimum of each side, and prints a Markdown
table with the ratios torch_ms / rlx_ms (> 1: rlxc is faster). With
--rlx both sides run the same numbers: PyTorch takes each model's inputs
and params from `bench_models --dump-inputs` (without --rlx it draws its
its own by the same rule: uniform in [-1, 1), weight matrices and
filters in [-b, b), b = 1/sqrt(fan_in) as PyTorch's default init).
The data matter on Intel CPUs: subnormal operands cost microcode assists.
--chart PATH draws those numbers (bench/charts.py, needs matplotlib).

Usage: /usr/bin/python3 bench/bench_models_torch.py
       [--rlx build/bench/bench_models] [--seconds S] [--threads 1,2]
       [--rounds N] [--only cnn|resblock|tblock|gpt]
       [--chart docs/charts/models.svg]
"""
import argparse
import os
import re
import subprocess
import tempfile

import torch_env
torch_env.set_env(max(torch_env.argv_threads("1,2")))
import torch  # noqa: E402
import torch.nn.functional as F  # noqa: E402


def uniform(g, *shape):
    return torch.rand(*shape, generator=g) * 2 - 1


def rlx_data(path, name):
    """Model `name`'s inputs and params as bench_models fills them,
    and rlxc's loss on them: ({input name: tensor}, [param tensors in the
    graph's order], loss)."""
    import numpy as np
    dtypes = {0: np.float32, 6: np.int32}
    with tempfile.TemporaryDirectory() as d:
        out = subprocess.run([path, "--dump-inputs", d, "--only", name],
                             check=True, stdout=subprocess.PIPE).stdout
        loss = float(re.search(rb"loss \S+ (\S+)", out).group(1))
        ins, ps = {}, []
        for line in open(os.path.join(d, name + ".txt")):
            arg, kind, dt = line.split()
            t = torch.from_numpy(np.fromfile(
                os.path.join(d, "%s.%s.bin" % (name, arg)),
                dtype=dtypes[int(dt)]))
            if kind == "param":
                ps.append(t)
            else:
                ins[arg] = t.long() if t.dtype == torch.int32 else t
    return ins, ps, loss


def take(data, ps, inputs):
    """With data (rlx_data's), its params shaped as ps and its inputs
    shaped as `inputs` (name: tensor); else ps and inputs."""
    if data is None:  # bench_models' rule: fan_in dims[0] for x @ W
        return ([p / (p.shape[0] if p.dim() == 2 else p[0].numel()) ** 0.5
                 if p.dim() >= 2 else p for p in ps], inputs)
    ins, dps, _ = data
    assert [p.numel() for p in ps] == [p.numel() for p in dps]
    return ([d.reshape(p.shape) for d, p in zip(dps, ps)],
            {k: ins[k].reshape(v.shape) for k, v in inputs.items()})


def cnn(data=None):
    g = torch.Generator().manual_seed(1)
    ps = [uniform(g, 16, 1, 3, 3), uniform(g, 16), uniform(g, 32, 16, 3, 3),
          uniform(g, 32), uniform(g, 1568, 10), uniform(g, 10)]
    ps, i = take(data, ps, {"x": uniform(g, 64, 1, 28, 28),
                            "y": torch.arange(64) * 7 % 10})
    x, y = i["x"], i["y"]

    def loss(ps):
        h = F.max_pool2d(F.relu(F.conv2d(x, ps[0], ps[1], padding=1)), 2)
        h = F.max_pool2d(F.relu(F.conv2d(h, ps[2], ps[3], padding=1)), 2)
        return F.cross_entropy(h.reshape(64, 1568) @ ps[4] + ps[5], y)
    return ps, loss


def resblock(data=None):
    g = torch.Generator().manual_seed(1)
    ps = [uniform(g, 64, 64, 3, 3), uniform(g, 64), uniform(g, 64),
          uniform(g, 64, 64, 3, 3), uniform(g, 64), uniform(g, 64)]
    x = uniform(g, 8, 64, 28, 28)
    m1, v1 = uniform(g, 64), uniform(g, 64) + 1.5
    m2, v2 = uniform(g, 64), uniform(g, 64) + 1.5
    ps, i = take(data, ps, {"x": x, "m1": m1, "v1": v1, "m2": m2, "v2": v2})
    x, m1, v1, m2, v2 = i["x"], i["m1"], i["v1"], i["m2"], i["v2"]

    def loss(ps):
        h = F.conv2d(x, ps[0], padding=1)
        h = F.relu(F.batch_norm(h, m1, v1, ps[1], ps[2], False))
        h = F.conv2d(h, ps[3], padding=1)
        y = F.relu(F.batch_norm(h, m2, v2, ps[4], ps[5], False) + x)
        return (y * y).mean()
    return ps, loss


def tblock(data=None):
    g = torch.Generator().manual_seed(1)
    ps = [uniform(g, 512), uniform(g, 512), uniform(g, 512, 512),
          uniform(g, 512, 512), uniform(g, 512), uniform(g, 512),
          uniform(g, 512, 1024), uniform(g, 512, 1024),
          uniform(g, 1024, 512)]
    ps, i = take(data, ps, {"x": uniform(g, 2, 128, 512),
                            "cos": uniform(g, 128, 32),
                            "sin": uniform(g, 128, 32)})
    x, cos, sin = i["x"], i["cos"], i["sin"]

    def rms_norm(v, gamma, beta):
        return v * torch.rsqrt(v.pow(2).mean(-1, keepdim=True) + 1e-6) \
            * gamma + beta

    def rope(v):  # NeoX half split per head of 64
        v = v.reshape(2, 128, 8, 64)
        a, b = v[..., :32], v[..., 32:]
        c, s = cos[:, None, :], sin[:, None, :]
        return torch.cat([a * c - b * s, b * c + a * s], -1) \
            .reshape(2, 128, 512)

    def loss(ps):
        h = rms_norm(x, ps[0], ps[1])
        x1 = x + rope(h @ ps[2]) @ ps[3]
        h2 = rms_norm(x1, ps[4], ps[5])
        y = x1 + (F.silu(h2 @ ps[6]) * (h2 @ ps[7])) @ ps[8]
        return (y * y).mean()
    return ps, loss


def gpt(data=None):
    """bench_gpt.rlx: pre-LN GPT, manual causal attention (matmul,
    masked_fill, softmax, matmul), tied embedding."""
    g = torch.Generator().manual_seed(1)
    V, T, B, E, H, L = 256, 64, 8, 128, 4, 4
    ps = [uniform(g, V, E), uniform(g, T, E)]
    for _ in range(L):
        ps += [uniform(g, E), uniform(g, E), uniform(g, E, 3 * E),
               uniform(g, 3 * E), uniform(g, E, E), uniform(g, E),
               uniform(g, E), uniform(g, E), uniform(g, E, 4 * E),
               uniform(g, 4 * E), uniform(g, 4 * E, E),
               uniform(g, E)]
    ps += [uniform(g, E), uniform(g, E)]
    ps, i = take(data, ps, {"tok": torch.arange(B * T).reshape(B, T) * 7
                            % 10, "tgt": torch.arange(B * T) * 3 % 10})
    tok, tgt = i["tok"], i["tgt"]
    causal = torch.ones(T, T, dtype=torch.bool).tril()

    def heads(t):
        return t.reshape(B, T, H, E // H).transpose(1, 2)

    def loss(ps):
        x = ps[0][tok] + ps[1]
        for l in range(L):
            (g1, b1, wqkv, bqkv, wo, bo, g2, b2, wfc, bfc, wpr, bpr) = \
                ps[2 + 12 * l:14 + 12 * l]
            a = F.layer_norm(x, (E,), g1, b1)
            q, k, v = (a @ wqkv + bqkv).split(E, -1)
            s = heads(q) @ heads(k).transpose(-1, -2) / (E // H) ** 0.5
            p = torch.softmax(s.masked_fill(~causal, float("-inf")), -1)
            att = (p @ heads(v)).transpose(1, 2).reshape(B, T, E)
            x = x + att @ wo + bo
            m = F.layer_norm(x, (E,), g2, b2)
            x = x + F.gelu(m @ wfc + bfc, approximate="tanh") @ wpr + bpr
        f = F.layer_norm(x, (E,), ps[-2], ps[-1]).reshape(B * T, E)
        return F.cross_entropy(f @ ps[0].t(), tgt)
    return ps, loss


MODELS = {"cnn": cnn, "resblock": resblock, "tblock": tblock, "gpt": gpt}


def run_torch(names, threads, seconds, rlx=None):
    res = {}
    for name in names:
        data = rlx_data(rlx, name) if rlx else None
        ps, loss = MODELS[name](data)
        if data:  # the same numbers: the same loss, up to rounding
            print("loss %s: rlxc %.6g, PyTorch %.6g" % (
                name, data[2], loss(ps).item()), flush=True)
        for p in ps:
            p.requires_grad_()

        def fwd():
            with torch.no_grad():
                loss(ps)

        def step():
            for p in ps:
                p.grad = None
            loss(ps).backward()

        for t in threads:
            torch_env.use_threads(torch, t)
            for what, fn in (("forward", fwd), ("train_step", step)):
                med, mn, n = torch_env.measure(fn, seconds, warmup=5,
                                               min_calls=10)
                res[(name + "." + what, t)] = (med, mn)
                print("torch %s.%s threads=%d median_ms=%.3f min_ms=%.3f "
                      "calls=%d" % (name, what, t, med, mn, n), flush=True)
    return res


def run_rlx(path, names, threads, seconds):
    res, ws = {}, []
    for name in names:
        out = subprocess.run(
            [path, "--threads", ",".join(map(str, threads)), "--seconds",
             str(seconds), "--only", name], check=True,
            stdout=subprocess.PIPE).stdout.decode()
        print(out, end="", flush=True)
        pat = r"rlx ([\w.]+) threads=(\d+) median_ms=([\d.]+) " \
              r"min_ms=([\d.]+)"
        for m in re.finditer(pat, out):
            res[(m.group(1), int(m.group(2)))] = (float(m.group(3)),
                                                  float(m.group(4)))
        ws += re.findall(r"workspace_bytes (.*)", out)
    return res, ws


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--rlx")
    ap.add_argument("--seconds", type=float, default=2.0)
    ap.add_argument("--threads", default="1,2")
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--only")
    ap.add_argument("--chart", metavar="PATH",
                    help="draw the numbers of this run into PATH "
                    "(bench/charts.py; .svg or .png)")
    a = ap.parse_args()
    if a.chart:
        import charts
        charts.require()
    threads = [int(t) for t in a.threads.split(",")]
    names = [a.only] if a.only else list(MODELS)
    tb, rb, ws = {}, {}, []
    for _ in range(a.rounds):
        torch_env.merge_best(tb, run_torch(names, threads, a.seconds,
                                           a.rlx))
        if a.rlx:
            res, ws = run_rlx(a.rlx, names, threads, a.seconds)
            torch_env.merge_best(rb, res)
    if not a.rlx:
        chart(a.chart, names, threads, rb, tb)
        return
    print("\n" + torch_env.machine_line(torch, ", ".join(
        map(os.path.basename, torch_env.blas_libs())) or "none"))
    print("\n| model.measurement | threads | rlxc median (min) ms | PyTorch "
          "median (min) ms | PyTorch / rlxc (median) |\n|---|---|---|---|---|")
    for (key, t), p in sorted(tb.items()):
        r = rb.get((key, t))
        print("| %s | %d | %s | %.3f (%.3f) | %s |" % (
            key, t, "%.3f (%.3f)" % r if r else "?", p[0], p[1],
            "%.2f" % (p[0] / r[0]) if r else "?"))
    print("\nWorkspace bytes: %s" % "; ".join(ws))
    chart(a.chart, names, threads, rb, tb)


def chart(path, names, threads, rb, tb):
    """--chart: this run's medians (whiskers to the minima)."""
    if not path:
        return
    import charts
    order = [(n + "." + w, t) for t in threads for n in names
             for w in ("forward", "train_step")]
    charts.draw(charts.timings((rb, tb), order), path,
                "tiny GPT" if names == ["gpt"] else "whole models",
                unit="ms", machine=charts.machine(), date=charts.now())
    print("chart: %s" % path)


if __name__ == "__main__":
    main()
