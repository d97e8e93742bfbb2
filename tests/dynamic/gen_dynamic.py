#!/usr/bin/python3
"""Goldens of tests/dynamic (NumPy, float64): each case's inputs at the
bound and, for every tested size, the outputs computed from the first
`size` rows. data/CASE.bin, little-endian: u32 inputs, u32 outputs,
u32 sizes, the sizes (i64); per input a u32 kind (0 f32, 1 i32), u32
count and float64 values; per size and output a u32 count and float64
values. Run: /usr/bin/python3 tests/dynamic/gen_dynamic.py"""
import os
import struct

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
F64 = np.float64


def put(f, a):
    a = np.ascontiguousarray(a, dtype=F64).ravel()
    f.write(struct.pack("<I", a.size))
    f.write(a.astype("<f8").tobytes())


def mlp(rng):
    f32 = lambda *s: rng.standard_normal(s).astype(np.float32)
    ins = [f32(64, 8), f32(64, 3), f32(8, 16) * 0.5, f32(16) * 0.1,
           f32(16, 3) * 0.5]

    def run(n):
        x, skip, w1, b1, w2 = [a.astype(F64) for a in ins]
        x, skip = x[:n], skip[:n]
        h = np.maximum(x @ w1 + b1, 0)
        flat = x.reshape(-1, 4)
        return [np.tanh(h @ w2) + skip, flat, flat * flat]
    return ins, [0, 1, 7, 17, 64], run


def heads(rng):
    x = (rng.standard_normal((40, 10)) * 3).astype(np.float32)
    labels = rng.integers(0, 10, 40).astype(np.int32)

    def run(n):
        xd = x[:n].astype(F64)
        m = xd.max(axis=1, keepdims=True) if n else np.zeros((0, 1))
        e = np.exp(xd - m)
        s = e.sum(axis=1, keepdims=True)
        lp = xd - m - np.log(s)
        xe = -lp[np.arange(n), labels[:n]]
        with np.errstate(invalid="ignore"):
            loss = xe.mean() if n else np.nan
        colmax = xd.max(axis=0) if n else np.full(10, -np.inf)
        return [e / s, lp, xd.mean(axis=1), xd.sum(axis=0), colmax, xe,
                np.array([loss]), np.array([xd.sum()])]
    return [x, labels], [0, 1, 9, 40], run


def train(rng):
    f32 = lambda *s: rng.standard_normal(s).astype(np.float32)
    x, y = f32(32, 6), rng.integers(0, 4, 32).astype(np.int32)
    w1, b1, w2, b2 = f32(6, 8) * 0.5, f32(8) * 0.1, f32(8, 4) * 0.5, f32(4)
    dout = np.ones((), np.float32)

    def run(n):
        xd, yd = x[:n].astype(F64), y[:n]
        W1, B1, W2, B2 = [a.astype(F64) for a in (w1, b1, w2, b2)]
        pre = xd @ W1 + B1
        h = np.maximum(pre, 0)
        z = h @ W2 + B2
        m = z.max(axis=1, keepdims=True) if n else np.zeros((0, 1))
        e = np.exp(z - m)
        p = e / e.sum(axis=1, keepdims=True)
        lp = np.log(p) if n else p
        with np.errstate(invalid="ignore"):
            loss = -lp[np.arange(n), yd].mean() if n else np.nan
        dz = p.copy()
        dz[np.arange(n), yd] -= 1
        dz /= max(n, 1)
        dh = (dz @ W2.T) * (pre > 0)
        return [np.array([loss]), xd.T @ dh, dh.sum(axis=0), h.T @ dz,
                dz.sum(axis=0)]
    return [x, y, w1, b1, w2, b2, dout], [0, 1, 5, 8, 9, 32], run


def norms(rng):
    x = (rng.standard_normal((24, 3, 12)) * 2 + 0.5).astype(np.float32)
    gamma = (rng.standard_normal(12) + 1).astype(np.float32)
    beta = (rng.standard_normal(12) * 0.1).astype(np.float32)

    def ln(v, eps):
        mu = v.mean(axis=-1, keepdims=True)
        var = ((v - mu) ** 2).mean(axis=-1, keepdims=True)
        return (v - mu) / np.sqrt(var + eps) * gamma + beta

    def run(n):
        xd = x[:n].astype(F64)
        rms = xd / np.sqrt((xd * xd).mean(axis=-1, keepdims=True) + 1e-5)
        return [ln(xd, 1e-5), rms * gamma + beta, ln(np.tanh(xd), 1e-3)]
    return [x, gamma, beta], [0, 1, 5, 24], run


def main():
    os.makedirs(os.path.join(HERE, "data"), exist_ok=True)
    for name, case in [("mlp", mlp), ("heads", heads), ("train", train),
                       ("norms", norms)]:
        ins, sizes, run = case(np.random.default_rng(26))
        outs = [run(n) for n in sizes]
        with open(os.path.join(HERE, "data", name + ".bin"), "wb") as f:
            f.write(struct.pack("<III", len(ins), len(outs[0]), len(sizes)))
            f.write(struct.pack("<%dq" % len(sizes), *sizes))
            for a in ins:
                f.write(struct.pack("<I", 1 if a.dtype == np.int32 else 0))
                put(f, a)
            for o in outs:
                for a in o:
                    put(f, a)


if __name__ == "__main__":
    main()
