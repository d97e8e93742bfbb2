#!/usr/bin/python3
"""gen_params_data.py -- checkpoint files written by NumPy, for
tests/unit/test_runtime_params.c (committed; CI does not run this).

tests/unit/data/params/
  w.npy, b.npy        np.save: f32 [2, 3] = arange(6) / 2 - 1, f32 [3] =
                      [0.25, -0.5, 2]
  n.npy               np.save: i64 [4] = [1, -2, 3, -4]
  s.npy               np.save: f64 [] = 3.5
  h.npy               np.save: f16 [2] = [1.5, -2]
  ckpt.safetensors    written here from the format's description
                      (8-byte little-endian header length, JSON header,
                      data): w, b as above plus an unrelated tensor
                      "other" (u8 [2]) and a __metadata__ entry; the
                      header is NOT padded and its keys are out of
                      order, as other writers may do.
  long.safetensors    w, b, n as above; u8 [5] = 1..5 named with 300
                      'p's then e-acute, the euro sign and U+1F600
                      (json.dumps writes them as \\u escapes, the last
                      as a surrogate pair); an unrelated tensor with a
                      1000-character name; __metadata__ values of 300
                      and 2000 characters. Also a fuzz_params seed.
"""
import json
import os
import struct

import numpy as np

D = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(
    __file__))), "unit", "data", "params")


def main():
    os.makedirs(D, exist_ok=True)
    w = (np.arange(6, dtype=np.float32) / 2 - 1).reshape(2, 3)
    b = np.array([0.25, -0.5, 2], dtype=np.float32)
    np.save(os.path.join(D, "w.npy"), w)
    np.save(os.path.join(D, "b.npy"), b)
    np.save(os.path.join(D, "n.npy"), np.array([1, -2, 3, -4], np.int64))
    np.save(os.path.join(D, "s.npy"), np.float64(3.5))
    np.save(os.path.join(D, "h.npy"), np.array([1.5, -2], np.float16))
    other = np.array([7, 9], np.uint8)
    blobs = [("other", "U8", other), ("b", "F32", b), ("w", "F32", w)]
    header, off, data = {"__metadata__": {"format": "pt"}}, 0, b""
    for name, dt, a in blobs:
        raw = a.tobytes()
        header[name] = {"shape": list(a.shape), "dtype": dt,
                        "data_offsets": [off, off + len(raw)]}
        off += len(raw)
        data += raw
    write_safetensors("ckpt.safetensors", header, data)
    write_long(w, b)


def write_safetensors(name, header, data):
    h = json.dumps(header).encode()
    with open(os.path.join(D, name), "wb") as f:
        f.write(struct.pack("<Q", len(h)) + h + data)


def write_long(w, b):
    """Names and metadata strings longer than any fixed buffer."""
    n = np.array([1, -2, 3, -4], np.int64)
    u = np.arange(1, 6, dtype=np.uint8)
    blobs = [("p" * 300 + "\u00e9\u20ac\U0001f600", "U8", u),
             ("o" * 1000, "I32", np.array([5, 6], np.int32)),
             ("w", "F32", w), ("b", "F32", b), ("n", "I64", n)]
    header = {"__metadata__": {"format": "pt", "note": "x" * 300,
                               "long": "y" * 1000 + "\n\"" + "z" * 998}}
    off, data = 0, b""
    for name, dt, a in blobs:
        raw = a.tobytes()
        header[name] = {"dtype": dt, "shape": list(a.shape),
                        "data_offsets": [off, off + len(raw)]}
        off += len(raw)
        data += raw
    write_safetensors("long.safetensors", header, data)


if __name__ == "__main__":
    main()
