#!/usr/bin/python3
"""Goldens of tests/dynamic (NumPy, float64): inputs at the bound and,
for every tested size, the outputs computed from the first `size` rows.
Writes data/mlp.bin: little-endian; per array a u32 element count then
float64 elements. Run: /usr/bin/python3 tests/dynamic/gen_dynamic.py"""
import os
import struct

import numpy as np

SIZES = [0, 1, 7, 17, 64]
BOUND = 64
HERE = os.path.dirname(os.path.abspath(__file__))


def put(f, a):
    a = np.ascontiguousarray(a, dtype=np.float64).ravel()
    f.write(struct.pack("<I", a.size))
    f.write(a.astype("<f8").tobytes())


def main():
    rng = np.random.default_rng(26)
    f32 = lambda *s: rng.standard_normal(s).astype(np.float32)
    x, skip = f32(BOUND, 8), f32(BOUND, 3)
    w1, b1, w2 = f32(8, 16) * 0.5, f32(16) * 0.1, f32(16, 3) * 0.5
    os.makedirs(os.path.join(HERE, "data"), exist_ok=True)
    with open(os.path.join(HERE, "data", "mlp.bin"), "wb") as f:
        for a in (x, skip, w1, b1, w2):
            put(f, a)
        for n in SIZES:
            xd, sd = x[:n].astype(np.float64), skip[:n].astype(np.float64)
            h = np.maximum(xd @ w1.astype(np.float64) + b1, 0)
            y = np.tanh(h @ w2.astype(np.float64)) + sd
            flat = xd.reshape(-1, 4)
            put(f, y)
            put(f, flat)
            put(f, flat * flat)


if __name__ == "__main__":
    main()
