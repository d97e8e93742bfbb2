#!/usr/bin/python3
"""random_graphs.py -- random f64 graphs, reverse mode vs finite
differences, at the IR level.

Builds N random graphs (fixed seed) from smooth ops: unary activations,
broadcasting binaries, keep_dims reductions, softmax / log_softmax,
cumsum, matmul of transposes, narrow + concat, gather, scans with a
broadcast weight, custom_fn without derivative bodies. Each graph is
compiled with `rlxc --grad --emit=ir` and the gradient graph is
evaluated with ir_eval.py; every gradient element is compared with a
central finite difference (step 1e-6) of the loss:
|fd - an| <= 1e-5*|fd| + 1e-6*max(1, |fd|).
This exercises accumulation, unbroadcasting and the clean-up passes on
combinations no hand-written case covers. Needs NumPy.
Usage: random_graphs.py RLXC [N] [SEED]
"""
import os
import subprocess
import sys
import tempfile

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import ir_eval  # noqa: E402

UNARY = ["tanh", "sin", "sigmoid", "silu", "gelu", "gelu_tanh", "atan",
         "cos"]
SMALL = {"[]": (), "[3]": (3,), "[2, 1]": (2, 1), "[2, 3]": (2, 3)}

PRE = """graph cell {
  input %h: f64[3]
  input %w: f64[3]
  input %x: f64[3]
  %n = tanh(add(mul(%h, %w), %x))
  return %n
}
graph sq {
  input %a: f64[2, 3]
  %r = mul(%a, sin(%a))
  return %r
}
"""


class Gen:
    def __init__(self, rng):
        self.rng, self.lines, self.n = rng, [], 0
        self.vals = ["%p0", "%p1", "%p2"]  # all f64[2, 3]
        self.small = {"%q0": "[3]", "%q1": "[2, 1]", "%q2": "[]"}

    def new(self, expr):
        self.n += 1
        name = "%%v%d" % self.n
        self.lines.append("%s = %s" % (name, expr))
        self.vals.append(name)
        return name

    def pick(self):
        return self.vals[self.rng.integers(len(self.vals))]

    def other(self):
        if self.rng.uniform() < 0.4:
            return list(self.small)[self.rng.integers(len(self.small))]
        return self.pick()

    def step(self):
        r, v = self.rng.integers(12), self.pick()
        ax = int(self.rng.integers(2))
        if r == 0:
            return self.new("%s(%s)" % (UNARY[self.rng.integers(8)], v))
        if r in (1, 2):
            op = ["add", "sub", "mul"][self.rng.integers(3)]
            a, b = (v, self.other()) if self.rng.uniform() < 0.5 else \
                (self.other(), v)
            return self.new("%s(%s, %s)" % (op, a, b))
        if r == 3:
            return self.new("div(%s, add(sigmoid(%s), 0.5))" %
                            (v, self.other()))
        if r == 4:
            op = ["reduce_sum", "reduce_mean", "reduce_prod"][
                self.rng.integers(3)]
            return self.new("add(%s, %s(%s, axes=[%d], keep_dims=true))" %
                            (self.pick(), op, v, ax))
        if r == 5:
            op = ["softmax", "log_softmax"][self.rng.integers(2)]
            return self.new("%s(%s, axis=%d)" % (op, v, ax))
        if r == 6:
            return self.new("cumsum(%s, axis=%d, exclusive=%s)" %
                            (v, ax, ["false", "true"][self.rng.integers(2)]))
        if r == 7:
            t = "transpose(%s, perm=[1, 0])" % self.pick()
            return self.new("mul(matmul(matmul(%s, %s), %s), 0.5)" %
                            (v, t, self.pick()))
        if r == 8:
            return self.new("concat(narrow(%s, axis=1, start=0, len=1), "
                            "narrow(%s, axis=1, start=1, len=2), axis=1)" %
                            (v, self.pick()))
        if r == 9:
            return self.new("gather(%s, %%idx, axis=1)" % v)
        if r == 10:
            s = self.new("scan(reduce_mean(%s, axes=[0]), %%q0, %s, "
                         "body=@cell, num_bcast=1%s)" %
                         (v, v, ["", ", checkpoints=1"][
                             self.rng.integers(2)]))
            self.vals.remove(s)
            return self.new("mul(%s, %s)" % (self.pick(), s))
        return self.new("custom_fn(%s, fwd=@sq)" % v)

    def graph(self, steps):
        for _ in range(steps):
            self.step()
        last = self.vals[-1]
        loss = "reduce_sum(mul(%s, %s))" % (last, last)
        for k, v in enumerate(self.vals[3:-1]):  # every value matters
            loss = "add(%s, reduce_mean(mul(%s, %.2f)))" % (
                loss, v, 0.3 + 0.1 * k)
        body = "\n".join("  " + l for l in self.lines)
        return (PRE + "graph rg {\n  param %p0: f64[2, 3]\n"
                "  param %p1: f64[2, 3]\n  param %p2: f64[2, 3]\n"
                "  param %q0: f64[3]\n  param %q1: f64[2, 1]\n"
                "  param %q2: f64[]\n"
                "  %idx = const i32[3] [2, 0, 2]\n" + body +
                "\n  %loss = " + loss + "\n"
                "  return %loss\n}\n")


def check(rlxc, src, tmp, rng):
    path = os.path.join(tmp, "rg.rlx")
    open(path, "w").write(src)
    ir = os.path.join(tmp, "rg.ir")
    p = subprocess.run([rlxc, path, "--grad", "--grad-missing=zero",
                        "--emit=ir", "-o", ir], stderr=subprocess.PIPE)
    if p.returncode:
        return "rlxc: " + p.stderr.decode()[:400]
    g = ir_eval.parse_module(open(ir).read())
    shapes = [s for _, (_, s) in g["rg"].args]
    ins = [rng.uniform(-0.9, 0.9, size=s) for s in shapes]
    out = ir_eval.run_graph(g, "rg_grad", ins + [np.array(1.0)])
    eps = 1e-6
    for k, x in enumerate(ins):
        flat = x.reshape(-1)
        for e in range(flat.size):
            x0 = flat[e]
            flat[e] = x0 + eps
            fp = float(ir_eval.run_graph(g, "rg", ins)[0])
            flat[e] = x0 - eps
            fm = float(ir_eval.run_graph(g, "rg", ins)[0])
            flat[e] = x0
            fd, an = (fp - fm) / (2 * eps), float(out[1 + k].reshape(-1)[e])
            if not abs(fd - an) <= 1e-5 * abs(fd) + 1e-6 * max(1, abs(fd)):
                return "d_%s[%d]: fd %.10g analytic %.10g" % (
                    g["rg"].args[k][0], e, fd, an)
    return None


def main():
    rlxc = sys.argv[1]
    n = int(sys.argv[2]) if len(sys.argv) > 2 else 60
    seed = int(sys.argv[3]) if len(sys.argv) > 3 else 2026
    rng = np.random.default_rng(seed)
    bad = 0
    with tempfile.TemporaryDirectory(prefix="rlx-rg-") as tmp:
        for i in range(n):
            src = Gen(rng).graph(int(rng.integers(3, 9)))
            err = check(rlxc, src, tmp, rng)
            if err:
                bad += 1
                print("FAIL graph %d: %s\n%s" % (i, err, src))
    print("random graphs: %d/%d passed" % (n - bad, n))
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
