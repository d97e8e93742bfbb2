#!/usr/bin/env python3
"""compare_params.py A.safetensors B.safetensors [rtol] [atol]

Compare two safetensors checkpoints (as written by rlx_save_params)
element-wise: the same tensor names, dtypes and shapes, and for every
element |a - b| <= rtol * |b| + atol (defaults 1e-5 and 1e-6).  Prints
the largest absolute and relative difference per tensor and overall;
exit status 0 when every element is within tolerance, 1 otherwise.
Standard library only (F32, F64, I32, I64 tensors)."""
import array
import json
import struct
import sys

TYPECODES = {"F32": "f", "F64": "d", "I32": "i", "I64": "q"}


def read_safetensors(path):
    """{name: (dtype, shape, array)} from a safetensors file (header: u64
    little-endian length, then JSON {name: {dtype, shape, data_offsets}},
    then the data, little-endian)."""
    with open(path, "rb") as f:
        blob = f.read()
    (n,) = struct.unpack_from("<Q", blob, 0)
    header = json.loads(blob[8:8 + n])
    data = blob[8 + n:]
    out = {}
    for name, t in header.items():
        if name == "__metadata__":
            continue
        begin, end = t["data_offsets"]
        values = array.array(TYPECODES[t["dtype"]], data[begin:end])
        if sys.byteorder != "little":
            values.byteswap()
        out[name] = (t["dtype"], t["shape"], values)
    return out


def main(argv):
    if len(argv) < 3:
        print(__doc__.strip(), file=sys.stderr)
        return 2
    rtol = float(argv[3]) if len(argv) > 3 else 1e-5
    atol = float(argv[4]) if len(argv) > 4 else 1e-6
    a, b = read_safetensors(argv[1]), read_safetensors(argv[2])
    if sorted(a) != sorted(b):
        print("tensor names differ: %s vs %s" % (sorted(a), sorted(b)))
        return 1
    ok, worst_abs, worst_rel, count = True, 0.0, 0.0, 0
    for name in sorted(a):
        (ta, sa, x), (tb, sb, y) = a[name], b[name]
        if ta != tb or sa != sb:
            print("%s: %s%s vs %s%s" % (name, ta, sa, tb, sb))
            ok = False
            continue
        dmax = rmax = 0.0
        bad = 0
        for u, v in zip(x, y):
            d = abs(u - v)
            dmax = max(dmax, d)
            if d:
                rmax = max(rmax, d / abs(v) if v else float("inf"))
            bad += d > rtol * abs(v) + atol
        print("%-8s %-14s max |a-b| %.3g  max rel %.3g  out of tolerance %d"
              % (name, str(sa), dmax, rmax, bad))
        worst_abs, worst_rel = max(worst_abs, dmax), max(worst_rel, rmax)
        count += len(x)
        ok = ok and bad == 0
    print("%d values: max |a-b| %.3g, max rel %.3g (tolerance |a-b| <= "
          "%g*|b| + %g): %s" % (count, worst_abs, worst_rel, rtol, atol,
                                "equal" if ok else "DIFFERENT"))
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main(sys.argv))
