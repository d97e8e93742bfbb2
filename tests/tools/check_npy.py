#!/usr/bin/env python3
"""check_npy.py DIR -- NumPy reads the .npy files that
tests/unit/test_runtime_params.c wrote: one [2, 3] array per dtype whose
raw bytes are 0, 1, 0, 1, ... (see the test)."""
import os
import sys

import numpy as np

DTYPES = {"f32": np.float32, "f64": np.float64, "f16": np.float16,
          "i8": np.int8, "u8": np.uint8, "i32": np.int32, "i64": np.int64,
          "bool": np.bool_, "c64": np.complex64}


def main():
    bad = 0
    for name, dt in DTYPES.items():
        a = np.load(os.path.join(sys.argv[1], name + ".npy"))
        want = bytes(i * 37 % 2 for i in range(6 * np.dtype(dt).itemsize))
        if a.dtype != dt or a.shape != (2, 3) or a.tobytes() != want:
            print("check_npy: %s.npy: dtype %s shape %s" % (name, a.dtype,
                                                           a.shape))
            bad += 1
    sys.exit(1 if bad else 0)


if __name__ == "__main__":
    main()
