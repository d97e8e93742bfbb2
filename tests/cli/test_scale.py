#!/usr/bin/env python3
"""test_scale.py: regression tests for graphs that once blew up the
compiler (issue "compile any valid graph, of any size").

Each case generates a valid graph, compiles it to an object (or checks
it) and requires exit 0 within a time limit, with no signal:
  diamond      %v_i = add(%v_{i-1}, %v_{i-1}), N = 40: the fused-tree
               walks were exponential (N = 32 took 51 s).
  deep-chain   %v_i = add(%v_{i-1}, %x), N = 20000, compiled with a
               1 MiB stack: the fused-tree recursion overflowed it.
  grad-chain   300 x mul(%v, 0.999) over a param, --grad: a fused group
               of more than 256 leaves was rejected as unsupported.
  wide-sum     256 values add(%x, 1.5) summed: the same rejection.
  many-params  8000 layers (matmul + add + tanh), --check --grad: the
               naming of 16000 gradient outputs was quadratic (20 s).
  wrt-twice    --wrt=%a,%a: one gradient name, the graph verifies.
  long-name    a 300-character graph name with --grad: the fresh name
               of the gradient graph was truncated and looked up
               forever (found by fuzz_codegen).
Limits are generous for sanitizer builds (--scale multiplies them); the
failures they catch took minutes, hours, or crashed.
"""
import argparse
import os
import resource
import subprocess
import sys
import tempfile
import time

FAILS = []


def chain(n, line, head="input %x: f32[64]", tail=None):
    body = ["graph g {", "  " + head, "  %v0 = exp(%x)"]
    body += ["  %%v%d = %s" % (i, line(i)) for i in range(1, n + 1)]
    body.append(tail(n) if tail else "  return %%v%d" % n)
    return "\n".join(body + ["}", ""])


def layers(n):
    out = ["graph g {", "  input %x: f32[8, 16]"]
    for i in range(n):
        out += ["  param %%w%d: f32[16, 16]" % i, "  param %%b%d: f32[16]" % i]
    h = "%x"
    for i in range(n):
        out += ["  %%m%d = matmul(%s, %%w%d)" % (i, h, i),
                "  %%a%d = add(%%m%d, %%b%d)" % (i, i, i),
                "  %%h%d = tanh(%%a%d)" % (i, i)]
        h = "%%h%d" % i
    out += ["  %%l = reduce_sum(%s, axes=[0, 1])" % h, "  return %l", "}", ""]
    return "\n".join(out)


def wide_sum(n):
    out = ["graph g {", "  input %x: f32[64]"]
    out += ["  %%u%d = add(%%x, 1.5)" % i for i in range(n)]
    acc = "%u0"
    for i in range(1, n):
        out.append("  %%s%d = add(%s, %%u%d)" % (i, acc, i))
        acc = "%%s%d" % i
    return "\n".join(out + ["  return %s" % acc, "}", ""])


CASES = [
    ("diamond", lambda: chain(
        40, lambda i: "add(%%v%d, %%v%d)" % (i - 1, i - 1)), [], 5, None),
    ("deep-chain", lambda: chain(20000, lambda i: "add(%%v%d, %%x)" % (i - 1)),
     [], 60, 1 << 20),
    ("grad-chain", lambda: chain(
        300, lambda i: "mul(%%v%d, 0.999)" % (i - 1), head="param %x: f32[64]",
        tail=lambda n: "  %%l = reduce_sum(%%v%d, axes=[0])\n  return %%l" % n),
     ["--grad"], 20, None),
    ("wide-sum", lambda: wide_sum(256), [], 20, None),
    ("many-params", lambda: layers(8000), ["--check", "--grad"], 5, None),
    ("wrt-twice", lambda: chain(
        3, lambda i: "mul(%%v%d, %%x)" % (i - 1), head="param %x: f32[64]",
        tail=lambda n: "  %%l = reduce_sum(%%v%d, axes=[0])\n  return %%l" % n),
     ["--grad", "--wrt=%x,%x"], 20, None),
    ("long-name", lambda: chain(
        2, lambda i: "mul(%%v%d, %%x)" % (i - 1), head="param %x: f32[64]",
        tail=lambda n: "  %%l = reduce_sum(%%v%d, axes=[0])\n  return %%l" % n
    ).replace("graph g {", "graph %s {" % ("g" * 300)),
     ["--grad", "--check"], 10, None),
]


def run_case(rlxc, tmp, name, src, args, limit, stack):
    path = os.path.join(tmp, name + ".rlx")
    with open(path, "w") as f:
        f.write(src)
    out = [] if "--check" in args else ["-o", os.path.join(tmp, name + ".o")]

    def lower_stack():
        resource.setrlimit(resource.RLIMIT_STACK, (stack, stack))
    t0 = time.monotonic()
    try:
        p = subprocess.run([rlxc] + args + out + [path],
                           stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                           timeout=limit,
                           preexec_fn=lower_stack if stack else None)
    except subprocess.TimeoutExpired:
        FAILS.append("%s: no result within %.0f s" % (name, limit))
        return
    dt = time.monotonic() - t0
    err = p.stderr.decode("utf-8", "replace")
    if p.returncode != 0:
        FAILS.append("%s: exit %d (%s)" % (name, p.returncode, err[-400:]))
    print("%-12s %.2f s" % (name, dt))


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--rlxc", required=True)
    ap.add_argument("--scale", type=float, default=1.0,
                    help="multiply every time limit (sanitizer builds)")
    a = ap.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        for name, gen, args, limit, stack in CASES:
            run_case(a.rlxc, tmp, name, gen(), args, limit * a.scale, stack)
    for f in FAILS:
        print("FAIL " + f)
    print("%d passed, %d failed" % (len(CASES) - len(FAILS), len(FAILS)))
    sys.exit(1 if FAILS else 0)


if __name__ == "__main__":
    main()
