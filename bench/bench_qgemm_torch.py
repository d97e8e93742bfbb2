#!/usr/bin/python3
"""bench_qgemm_torch.py -- PyTorch's quantized linear next to
bench/bench_qgemm.c (rlx_q_matmul and rlx_gemm_f32).

Times torch.ops.quantized.linear (quint8 activations with zero point 3,
qint8 per-tensor symmetric weights prepacked once, quint8 output: the
same work as q_matmul with w_zp = 0) on bench_qgemm's shapes, with the
quantized engine given (default: the first of fbgemm, onednn, x86,
qnnpack this build supports), one thread (torch.set_num_threads and
OMP/OpenBLAS/MKL held to 1 before torch loads: bench/torch_env.py).  Median and minimum per call
over --seconds after warm-up.  With --rlx PATH it alternates with that
bench_qgemm binary --rounds times (both see the same machine load) and
prints, per shape, the best medians and minima of rlx int8, rlx f32 and
torch int8 in microseconds and their MAC/s (one MAC = one multiply-add).

Usage: /usr/bin/python3 bench/bench_qgemm_torch.py [--rlx build/bench/bench_qgemm]
       [--engine NAME] [--seconds S] [--rounds N] [MxNxK ...]
"""
import argparse
import re
import subprocess

import torch_env
torch_env.set_env(1)
import torch  # noqa: E402

SIZES = ["512x512x512", "32x64x64", "32x10x64"]


def measure(fn, seconds):
    """(median us, min us) after 20 warm-up calls, at least 10."""
    return torch_env.measure(fn, seconds, warmup=20, min_calls=10,
                             scale=1e6)[:2]


def torch_linear(size, seconds):
    m, n, k = (int(v) for v in size.split("x"))
    g = torch.Generator().manual_seed(0)
    x = torch.randint(0, 256, (m, k), generator=g, dtype=torch.uint8)
    qx = torch._make_per_tensor_quantized_tensor(x, 0.02, 3)
    w = torch.randint(-127, 128, (n, k), generator=g, dtype=torch.int8)
    qw = torch._make_per_tensor_quantized_tensor(w, 0.01, 0)
    bias = torch.randn(n)
    packed = torch.ops.quantized.linear_prepack(qw, bias)
    return measure(lambda: torch.ops.quantized.linear(qx, packed, 0.5, 1),
                   seconds)


def run_rlx(path, sizes, seconds):
    out = subprocess.run([path, "--secs=%g" % seconds] + sizes, check=True,
                         stdout=subprocess.PIPE, text=True).stdout
    res = {}
    pat = re.compile(r"^(\S+) int8: median_us=(\S+) min_us=(\S+) .*f32: "
                     r"median_us=(\S+) min_us=(\S+)")
    for line in out.splitlines():
        mt = pat.match(line)
        if mt:
            v = [float(x) for x in mt.groups()[1:]]
            res[mt.group(1)] = {"int8": (v[0], v[1]), "f32": (v[2], v[3])}
    return res


def best(a, b):
    return b if a is None else (min(a[0], b[0]), min(a[1], b[1]))


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--rlx")
    ap.add_argument("--engine")
    ap.add_argument("--seconds", type=float, default=1.0)
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("sizes", nargs="*")
    a = ap.parse_args()
    sizes = a.sizes or SIZES
    torch.set_num_threads(1)
    engines = torch.backends.quantized.supported_engines
    eng = a.engine or next(e for e in ("fbgemm", "onednn", "x86", "qnnpack")
                           if e in engines)
    torch.backends.quantized.engine = eng
    res = {s: {} for s in sizes}
    for _ in range(a.rounds):
        if a.rlx:
            for s, r in run_rlx(a.rlx, sizes, a.seconds).items():
                for kind, v in r.items():
                    res[s][kind] = best(res[s].get(kind), v)
        for s in sizes:
            res[s]["torch"] = best(res[s].get("torch"),
                                   torch_linear(s, a.seconds / 3))
    print("torch %s, quantized engine %s, 1 thread, %s" %
          (torch.__version__, eng, torch_env.utc_now() + " UTC"))
    print("| MxNxK | rlx int8 median / min us | rlx f32 median / min us "
          "| torch int8 (%s) median / min us | GMAC/s at median: int8, "
          "f32, torch |" % eng)
    print("|---|---|---|---|---|")
    for s in sizes:
        m, n, k = (int(v) for v in s.split("x"))
        macs = m * n * k
        cells, rates = [], []
        for kind in ("int8", "f32", "torch"):
            v = res[s].get(kind)
            cells.append("%.2f / %.2f" % v if v else "-")
            rates.append("%.1f" % (macs / v[0] * 1e-3) if v else "-")
        print("| %s | %s | %s |" % (s, " | ".join(cells), ", ".join(rates)))


if __name__ == "__main__":
    main()
