#!/usr/bin/env python3
"""gen_graphs.py: random valid .rlx graphs for the code generator.

Deterministic for a seed (Python's random.Random; standard library only).
Every graph it writes is valid: it parses, verifies, and compiles with
and without --grad (each param reaches the loss, the first return value,
through differentiable ops). A reject by rlxc is therefore a bug.

Shapes of graph (--shape):
  random   a DAG of about --nodes nodes over a few small f32 shapes:
           heavy sharing (a few hot values read many times), long chains,
           wide fan-outs, broadcasts, reductions, matmuls (batched,
           transposed, f16/bf16 operands), softmax, cross-entropy, data
           movement, gather / scatter_add / topk, dense_solve, f64 /
           bf16 / f16 / i32 / c64 regions through casts, and (unless
           --no-control) scan, if, while and custom_fn with generated
           bodies; params so that --grad applies. Unused values are
           summed into the loss.
  chain    %v_i = add(%v_{i-1}, %x) or mul(%v_{i-1}, 1.0001)
  diamond  %v_i = add(%v_{i-1}, %v_{i-1}): every value used twice
  lattice  %v_i = add(mul(%v_{i-1}, %v_{i-2}), %v_{i-3}): each value is
           read by three later ones
  fanout   one value read by --nodes consumers, combined by a balanced
           tree of adds
  stack    --nodes/3 layers relu/tanh/sigmoid(matmul(h, W_l) + b_l) of
           16x16, every W_l and b_l a param
  scan     scan over f32[--length, 4] with a small body, a broadcast
           param and a trajectory-free carry
The structured shapes (all but random) are the scaling benchmark's
(bench/bench_scale.py); --nodes counts their nodes approximately.

Commands:
  gen_graphs.py gen [--shape S] [--seed N] [--nodes N] [-o FILE]
  gen_graphs.py corpus --out-dir DIR [--count K] [--seed N] [--nodes N]
  gen_graphs.py check --rlxc RLXC [--seeds A:B] [--nodes N]
        [--shape S] [--timeout T] [--mem-limit-mb M] [--keep DIR]
(random graphs also take --no-control and --loss tree|concat: the loss
terms summed by a tree of scalar adds, or 32 at a time by
reduce_sum(concat(...)), which keeps fused groups small)
check generates each graph and compiles it with `rlxc G.rlx -o G.o` and
`rlxc G.rlx --grad -o G.o`; it fails on an exit status other than 0, a
signal (running out of --mem-limit-mb included), a timeout or "LLVM
ERROR" in the output, and prints a reproducer command (the graph is
kept in --keep DIR, default a temporary directory kept on failure).
"""
import argparse
import os
import random
import re
import shutil
import subprocess
import sys
import tempfile
import time



def _ops_with(flag):
    """The ops of ir/ops.def with flag, in table order (a new elementwise
    op joins the random graphs without an edit here)."""
    src = os.path.dirname(os.path.dirname(os.path.dirname(
        os.path.abspath(__file__))))
    with open(os.path.join(src, "ir", "ops.def")) as f:
        rows = re.findall(r'^OP\(\s*\w+\s*,\s*"(\w+)"\s*,[^,]*,[^,]*,'
                          r'\s*([^,]+),', f.read(), re.M)
    return [n for n, flags in rows if flag in flags.split("|")]


UNARY = _ops_with("OPF_UNARY")
BINARY = _ops_with("OPF_BINARY")
COMPARE = _ops_with("OPF_COMPARE")
REDUCE = ["reduce_sum", "reduce_mean", "reduce_max", "reduce_min",
          "reduce_prod"]
MAX_ELEMS = 512  # largest value of a random graph (elements)


def numel(shape):
    n = 1
    for d in shape:
        n *= d
    return n


def bcast(a, b):
    """NumPy broadcast of two shapes, or None."""
    out = []
    for i in range(1, max(len(a), len(b)) + 1):
        x = a[-i] if i <= len(a) else 1
        y = b[-i] if i <= len(b) else 1
        if x != y and x != 1 and y != 1:
            return None
        out.append(max(x, y) if x != 1 and y != 1 else x * y)
    return tuple(reversed(out))


def tstr(dt, shape):
    return "%s[%s]" % (dt, ", ".join(str(d) for d in shape))


def ilist(xs):
    return "[%s]" % ", ".join(str(x) for x in xs)


def flit(rng):
    """A float literal in the language's syntax (no '.5')."""
    return rng.choice(["0.5", "1.0", "2.0", "-0.25", "0.125", "3.0",
                       "1e-3", "-1.5"])


class Val:
    __slots__ = ("name", "shape", "dt", "uses")

    def __init__(self, name, shape, dt="f32"):
        self.name, self.shape, self.dt, self.uses = name, tuple(shape), dt, 0

    def __str__(self):
        return "%" + self.name


class Graph:
    """One graph under construction: statements and a pool of values."""

    def __init__(self, mod, name, rng):
        self.mod, self.name, self.rng = mod, name, rng
        self.args, self.body, self.pool = [], [], []
        self.nodes = 0

    def arg(self, kind, shape, dt="f32", name=None):
        v = Val(name or self.mod.fresh("p" if kind == "param" else "a"),
                shape, dt)
        self.args.append("  %s %%%s: %s" % (kind, v.name, tstr(dt, shape)))
        self.pool.append(v)
        self.nodes += 1
        return v

    def define(self, expr, shape, dt="f32", nodes=1, pool=True):
        v = Val(self.mod.fresh("v"), shape, dt)
        self.body.append("  %%%s = %s" % (v.name, expr))
        self.nodes += nodes
        if pool:
            self.pool.append(v)
        return v

    def use(self, *vals):
        for v in vals:
            if isinstance(v, Val):
                v.uses += 1

    def text(self, rets):
        self.use(*rets)
        return ("graph %s {\n%s\n%s\n  return %s\n}\n" % (
            self.name, "\n".join(self.args), "\n".join(self.body),
            ", ".join(str(r) for r in rets))).replace("\n\n", "\n")


class Module:
    def __init__(self, seed):
        self.rng = random.Random(seed)
        self.count = 0
        self.graphs = []  # texts of subgraphs, in declaration order

    def fresh(self, prefix):
        self.count += 1
        return "%s%d" % (prefix, self.count)


# ---------------------------------------------------------------- random

class RandomGen:
    """Random DAG in graph g; control ops only when depth allows."""

    def __init__(self, mod, g, dims, depth, control, params):
        self.mod, self.g, self.rng = mod, g, mod.rng
        self.dims, self.depth, self.control = dims, depth, control
        self.params = params  # list where new params go (None: inputs)
        self.labels = {}      # N -> i32[N] labels input
        self.indices = {}     # K -> i32[K] index input

    # operand choice: chains (latest), sharing (hot values), uniform
    def pick(self, pred=lambda v: True, dt="f32"):
        c = [v for v in self.g.pool if v.dt == dt and pred(v)]
        if not c:
            return None
        r = self.rng.random()
        if r < 0.35:
            v = c[-1]
        elif r < 0.6:
            hot = sorted(c, key=lambda v: -v.uses)[:3]
            v = self.rng.choice(hot)
        else:
            v = self.rng.choice(c)
        return v

    def new_leaf(self, shape):
        """A fresh f32 value of shape: a param, an input or a const (only
        consts in a body: its inputs are fixed)."""
        r = 2.0 if self.depth > 0 else self.rng.random()
        if self.params is not None and r < 0.6:
            v = self.g.arg("param", shape)
            self.params.append(v)
            return v
        if r < 0.85 or not shape:
            return self.g.arg("input", shape)
        if self.rng.random() < 0.5:
            return self.g.define("const %s %s" % (tstr("f32", shape),
                                                  flit(self.rng)), shape)
        n = numel(shape)
        data = ", ".join("%.3g" % self.rng.uniform(-2, 2) for _ in range(n))
        return self.g.define("const %s [%s]" % (tstr("f32", shape), data),
                             shape)

    def shape(self):
        a, b, c = self.dims
        return self.rng.choice([(a, b), (b, c), (a, c), (b,), (c,), (a, 1),
                                (1, b), (), (2, a, b), (a, b)])

    def op(self):
        """Add one random node (or a few). False if it did not fit."""
        kinds = [("unary", 3), ("binary", 5), ("where", 1), ("reduce", 1.5),
                 ("softmax", 0.7), ("matmul", 1.5), ("transpose", 0.6),
                 ("reshape", 0.5), ("expand", 0.5), ("concat", 0.4),
                 ("narrow", 0.4), ("cumsum", 0.3), ("cast", 0.5),
                 ("leaf", 0.3), ("xent", 0.2), ("gather", 0.25),
                 ("nested", 0.8), ("stop", 0.1), ("half_matmul", 0.3),
                 ("complex", 0.3), ("topk", 0.3), ("scatter", 0.2),
                 ("solve", 0.2)]
        if self.control and self.depth < 2:
            kinds += [("scan", 0.35), ("if", 0.15), ("while", 0.12),
                      ("custom_fn", 0.15)]
        tot = sum(w for _, w in kinds)
        r = self.rng.uniform(0, tot)
        for k, w in kinds:
            r -= w
            if r <= 0:
                break
        return getattr(self, "op_" + k)()

    def op_unary(self):
        a = self.pick()
        if not a:
            return False
        self.g.use(a)
        self.g.define("%s(%s)" % (self.rng.choice(UNARY), a), a.shape)
        return True

    def binary_operands(self):
        a = self.pick()
        if not a:
            return None
        if self.rng.random() < 0.15:
            return a, flit(self.rng), a.shape
        b = self.pick(lambda v: (bcast(a.shape, v.shape) is not None and
                                 numel(bcast(a.shape, v.shape)) <=
                                 MAX_ELEMS))
        if b is None:
            return None
        s = bcast(a.shape, b.shape)
        return (a, b, s) if self.rng.random() < 0.8 else (b, a, s)

    def op_binary(self):
        ops = self.binary_operands()
        if not ops:
            return False
        a, b, s = ops
        self.g.use(a, b)
        self.g.define("%s(%s, %s)" % (self.rng.choice(BINARY), a, b), s)
        return True

    def op_nested(self):
        """Nested calls: anonymous values inside one statement."""
        ops = self.binary_operands()
        if not ops:
            return False
        a, b, s = ops
        self.g.use(a, b)
        e = "%s(%s(%s(%s, %s)), %s)" % (
            self.rng.choice(BINARY), self.rng.choice(UNARY),
            self.rng.choice(BINARY), a, flit(self.rng), b)
        if self.rng.random() < 0.5:
            e = "%s(%s)" % (self.rng.choice(UNARY), e)
        self.g.define(e, s, nodes=4)
        return True

    def op_where(self):
        ops = self.binary_operands()
        if not ops:
            return False
        a, b, s = ops
        c = self.pick(lambda v: bcast(s, v.shape) == s)
        self.g.use(a, b, c)
        cond = "%s(%s, %s)" % (self.rng.choice(COMPARE), c, flit(self.rng))
        if self.rng.random() < 0.5:
            cond = "%s(%s, %s)" % (self.rng.choice(COMPARE), a, b)
        self.g.define("where(%s, %s, %s)" % (cond, a, b), s, nodes=3)
        return True

    def op_stop(self):
        a = self.pick()
        if not a:
            return False
        self.g.use(a)
        self.g.define("stop_gradient(%s)" % a, a.shape)
        return True

    def op_reduce(self):
        a = self.pick(lambda v: len(v.shape) >= 1)
        if not a:
            return False
        self.g.use(a)
        r = len(a.shape)
        op = self.rng.choice(REDUCE)
        keep = self.rng.random() < 0.3
        if self.rng.random() < 0.25:
            axes, attr = list(range(r)), ""
        else:
            axes = sorted(self.rng.sample(range(r),
                                          self.rng.randint(1, r)))
            shown = [x - r if self.rng.random() < 0.3 else x for x in axes]
            attr = ", axes=%s" % ilist(shown)
        if keep:
            attr += ", keep_dims=true"
            s = tuple(1 if i in axes else d for i, d in enumerate(a.shape))
        else:
            s = tuple(d for i, d in enumerate(a.shape) if i not in axes)
        self.g.define("%s(%s%s)" % (op, a, attr), s)
        return True

    def op_softmax(self):
        a = self.pick(lambda v: len(v.shape) >= 1)
        if not a:
            return False
        self.g.use(a)
        op = self.rng.choice(["softmax", "log_softmax"])
        ax = self.rng.randint(-len(a.shape), len(a.shape) - 1)
        attr = "" if ax == -1 and self.rng.random() < 0.5 else \
            ", axis=%d" % ax
        self.g.define("%s(%s%s)" % (op, a, attr), a.shape)
        return True

    def op_matmul(self, half=None):
        a = self.pick(lambda v: len(v.shape) >= 2)
        if not a:
            return False
        k = a.shape[-1]
        batch = a.shape[:-2]

        def fits(v):
            return (len(v.shape) >= 2 and v.shape[-2] == k and
                    bcast(batch, v.shape[:-2]) is not None)
        b = self.pick(fits)
        tb = None
        if b is None or self.rng.random() < 0.25:
            tb = self.pick(lambda v: len(v.shape) == 2 and v.shape[1] == k)
        if tb is not None:
            bexpr, n, bb = "transpose(%s, perm=[1, 0])" % tb, tb.shape[0], ()
            b = tb
        else:
            if b is None:
                b = self.new_leaf((k, self.rng.choice(self.dims)))
            bexpr, n, bb = str(b), b.shape[-1], b.shape[:-2]
        s = bcast(batch, bb) + (a.shape[-2], n)
        if numel(s) > MAX_ELEMS:
            return False
        self.g.use(a, b)
        aexpr, nodes = str(a), 1 if tb is None else 2
        if half:  # f16 / bf16 operands (f32 copies inside), f32 result
            aexpr = "cast(%s, to=%s)" % (aexpr, half)
            bexpr = "cast(%s, to=%s)" % (bexpr, half)
            self.g.define("cast(matmul(%s, %s), to=f32)" % (aexpr, bexpr),
                          s, nodes=nodes + 3)
            return True
        self.g.define("matmul(%s, %s)" % (aexpr, bexpr), s, nodes=nodes)
        return True

    def op_half_matmul(self):
        return self.op_matmul(self.rng.choice(["f16", "bf16"]))

    def op_complex(self):
        """A c64 region: complex, mul, conjugate, back to f32."""
        a = self.pick()
        if not a:
            return False
        b = self.pick(lambda v: v.shape == a.shape) or a
        self.g.use(a, b)
        z = "mul(complex(%s, %s), conjugate(complex(%s, %s)))" % (a, b, b, a)
        f = self.rng.choice(["real", "imag"])  # norm_sq: no reverse mode
        self.g.define("%s(%s)" % (f, z), a.shape, nodes=5)
        return True

    def op_topk(self):
        """topk indices (i64): as f32 values, or to gather with."""
        a = self.pick(lambda v: len(v.shape) >= 1 and v.shape[-1] >= 2)
        if not a:
            return False
        k = self.rng.randint(1, a.shape[-1])
        ts = a.shape[:-1] + (k,)
        t = "topk(%s, k=%d)" % (a, k)
        tab = self.pick(lambda v: len(v.shape) >= 1)
        if self.rng.random() < 0.5:
            ax = self.rng.randrange(len(tab.shape))
            s = tab.shape[:ax] + ts + tab.shape[ax + 1:]
            if numel(s) <= MAX_ELEMS and len(s) <= 6:
                self.g.use(a, tab)
                self.g.define("gather(%s, %s, axis=%d)" % (tab, t, ax), s,
                              nodes=2)
                return True
        self.g.use(a)
        self.g.define("cast(%s, to=f32)" % t, ts, nodes=2)
        return True

    def op_scatter(self):
        u = self.pick(lambda v: len(v.shape) >= 1)
        if not u:
            return False
        n = u.shape[0]
        if n not in self.indices:
            self.indices[n] = self.g.arg("input", (n,), "i32")
        s = (self.rng.choice(self.dims),) + u.shape[1:]
        if numel(s) > MAX_ELEMS:
            return False
        self.g.use(u)
        self.g.define("scatter_add(%s, %s, shape=%s)" %
                      (u, self.indices[n], ilist(s)), s)
        return True

    def op_solve(self):
        m = self.pick(lambda v: len(v.shape) == 2 and
                      v.shape[0] == v.shape[1] and v.shape[0] > 1)
        if not m:
            return False
        n = m.shape[0]
        b = self.pick(lambda v: 1 <= len(v.shape) <= 2 and v.shape[0] == n)
        if not b:
            return False
        self.g.use(m, b)
        self.g.define("dense_solve(add(%s, %d.0), %s)" % (m, 2 * n, b),
                      b.shape, nodes=3)
        return True

    def op_transpose(self):
        a = self.pick(lambda v: len(v.shape) >= 2)
        if not a:
            return False
        self.g.use(a)
        perm = list(range(len(a.shape)))
        while perm == sorted(perm):
            self.rng.shuffle(perm)
        self.g.define("transpose(%s, perm=%s)" % (a, ilist(perm)),
                      tuple(a.shape[p] for p in perm))
        return True

    def op_reshape(self):
        a = self.pick(lambda v: numel(v.shape) > 1)
        if not a:
            return False
        n = numel(a.shape)
        divs = [d for d in range(2, n) if n % d == 0]
        opts = [(n,), (1, n), (n, 1)] + [(d, n // d) for d in divs]
        s = self.rng.choice(opts)
        shown = list(s)
        if len(s) > 1 and self.rng.random() < 0.3:
            shown[self.rng.randrange(len(s))] = -1
        self.g.use(a)
        self.g.define("reshape(%s, shape=%s)" % (a, ilist(shown)), s)
        return True

    def op_expand(self):
        a = self.pick(lambda v: 1 in v.shape or len(v.shape) < 3)
        if not a:
            return False
        s = tuple(self.rng.choice(self.dims) if d == 1 else d
                  for d in a.shape)
        if len(s) < 3 and self.rng.random() < 0.5:
            s = (self.rng.choice([2, 3]),) + s
        if numel(s) > MAX_ELEMS:
            return False
        self.g.use(a)
        self.g.define("expand(%s, shape=%s)" % (a, ilist(s)), s)
        return True

    def op_concat(self):
        a = self.pick(lambda v: len(v.shape) >= 1 and
                      2 * numel(v.shape) <= MAX_ELEMS)
        if not a:
            return False
        ax = self.rng.randrange(len(a.shape))
        b = self.pick(lambda v: len(v.shape) == len(a.shape) and all(
            x == y or i == ax for i, (x, y) in
            enumerate(zip(v.shape, a.shape))) and
            numel(v.shape) + numel(a.shape) <= MAX_ELEMS) or a
        s = list(a.shape)
        s[ax] += b.shape[ax]
        ops = [a, b] if self.rng.random() < 0.7 else [a, b, a]
        if len(ops) == 3:
            s[ax] += a.shape[ax]
        if numel(s) > MAX_ELEMS:
            return False
        self.g.use(*ops)
        attr = "" if ax == 0 and self.rng.random() < 0.5 else \
            ", axis=%d" % ax
        self.g.define("concat(%s%s)" % (", ".join(map(str, ops)), attr),
                      tuple(s))
        return True

    def op_narrow(self):
        a = self.pick(lambda v: any(d >= 2 for d in v.shape))
        if not a:
            return False
        ax = self.rng.choice([i for i, d in enumerate(a.shape) if d >= 2])
        d = a.shape[ax]
        ln = self.rng.randint(1, d - 1)
        st = self.rng.randint(0, d - ln)
        s = list(a.shape)
        s[ax] = ln
        self.g.use(a)
        self.g.define("narrow(%s, axis=%d, start=%d, len=%d)" %
                      (a, ax, st, ln), tuple(s))
        return True

    def op_cumsum(self):
        a = self.pick(lambda v: len(v.shape) >= 1)
        if not a:
            return False
        ax = self.rng.randrange(len(a.shape))
        ex = ", exclusive=true" if self.rng.random() < 0.4 else ""
        self.g.use(a)
        self.g.define("cumsum(%s, axis=%d%s)" % (a, ax, ex), a.shape)
        return True

    def op_cast(self):
        """A region in another dtype, cast back to f32."""
        a = self.pick()
        if not a:
            return False
        self.g.use(a)
        dt = self.rng.choice(["f64", "f64", "bf16", "f16", "i32"])
        u = self.rng.choice(["neg", "abs"] if dt == "i32" else
                            ["tanh", "exp", "neg", "sigmoid", "abs"])
        inner = "%s(cast(%s, to=%s))" % (u, a, dt)
        if dt != "i32" and self.rng.random() < 0.5:
            inner = "mul(%s, %s)" % (inner, flit(self.rng))
        self.g.define("cast(%s, to=f32)" % inner, a.shape, nodes=4)
        return True

    def op_leaf(self):
        self.new_leaf(self.shape())
        return True

    def op_xent(self):
        a = self.pick(lambda v: len(v.shape) == 2)
        if not a:
            return False
        n = a.shape[0]
        if n not in self.labels:
            self.labels[n] = self.g.arg("input", (n,), "i32")
        self.g.use(a)
        self.g.define("softmax_cross_entropy(%s, %s)" %
                      (a, self.labels[n]), (n,))
        return True

    def op_gather(self):
        a = self.pick(lambda v: len(v.shape) >= 1)
        if not a:
            return False
        k = self.rng.choice([2, 3])
        if k not in self.indices:
            self.indices[k] = self.g.arg("input", (k,), "i32")
        ax = self.rng.randrange(len(a.shape))
        s = a.shape[:ax] + (k,) + a.shape[ax + 1:]
        if numel(s) > MAX_ELEMS:
            return False
        self.g.use(a)
        self.g.define("gather(%s, %s, axis=%d)" % (a, self.indices[k], ax),
                      s)
        return True

    # ---- control flow: bodies are random graphs of their own
    def body(self, name, ins, out_shape, nops):
        """Subgraph with inputs ins (shapes) returning out_shape (f32);
        its first input has shape out_shape. Returns its name."""
        sub = Graph(self.mod, name, self.rng)
        vals = [sub.arg("input", s) for s in ins]
        gen = RandomGen(self.mod, sub, self.dims, self.depth + 1,
                        self.control, None)
        gen.labels, gen.indices = {}, {}
        done = 0
        for _ in range(nops * 4):
            if done >= nops:
                break
            done += gen.op_body()
        r = gen.pick(lambda v: bcast(v.shape, out_shape) == out_shape)
        sub.use(r)
        out = sub.define("tanh(add(mul(%s, 0.5), %s))" % (vals[0], r),
                         out_shape, nodes=3)
        self.mod.graphs.append(sub.text([out]))
        return name

    def op_body(self):
        k = self.rng.choice(["unary", "binary", "binary", "nested",
                             "matmul", "reduce", "softmax", "where"])
        return getattr(self, "op_" + k)()

    def small(self, v):
        return v.dt == "f32" and 1 <= len(v.shape) <= 2 and \
            numel(v.shape) <= 64

    def op_scan(self):
        h = self.pick(self.small)
        if not h:
            return False
        L = self.rng.choice([1, 2, 3, 5])
        xs = []
        if self.rng.random() < 0.85:
            x = self.pick(lambda v: len(v.shape) >= 2 and v.shape[0] == L
                          and numel(v.shape) <= 128)
            if x is None or self.rng.random() < 0.4:
                x = self.new_leaf((L,) + self.rng.choice(
                    [h.shape, (self.dims[0],), (self.dims[1], 1)]))
            xs.append(x)
        bs = []
        for _ in range(self.rng.choice([0, 1, 1, 2])):
            b = self.pick(lambda v: numel(v.shape) <= 64)
            if b:
                bs.append(b)
        name = self.mod.fresh("scan_body")
        self.body(name, [h.shape] + [b.shape for b in bs] +
                  [x.shape[1:] for x in xs], h.shape,
                  self.rng.randint(2, 6))
        attrs = "body=@%s" % name
        if not xs or self.rng.random() < 0.5:
            attrs += ", length=%d" % L
        if bs:
            attrs += ", num_bcast=%d" % len(bs)
        traj = self.rng.random() < 0.3
        if traj:
            attrs += ", save_trajectory=true"
        if L > 2 and self.rng.random() < 0.3:
            attrs += ", checkpoints=%d" % self.rng.randint(1, L - 1)
        self.g.use(h, *bs, *xs)
        ops = ", ".join(str(v) for v in [h] + bs + xs)
        s = ((L,) + h.shape) if traj else h.shape
        self.g.define("scan(%s, %s)" % (ops, attrs), s)
        return True

    def op_if(self):
        c = self.pick(self.small)
        if not c:
            return False
        caps = [c] + [v for v in [self.pick(self.small)] if v]
        p = self.pick(lambda v: numel(v.shape) <= 64) or c
        pred = self.g.define("gt(reduce_sum(%s), %s)" % (p, flit(self.rng)),
                             (), "bool", nodes=2, pool=False)
        shapes = [v.shape for v in caps]
        t = self.body(self.mod.fresh("then"), shapes, c.shape, 3)
        e = self.body(self.mod.fresh("else"), shapes, c.shape, 2)
        self.g.use(p, *caps)
        self.g.define("if(%s, %s, then=@%s, else=@%s)" % (
            pred, ", ".join(map(str, caps)), t, e), c.shape)
        return True

    def op_while(self):
        x = self.pick(self.small)
        if not x:
            return False
        k = self.rng.randint(1, 4)
        i0 = self.g.define("const f32[] 0.0", (), pool=False)
        cn = self.mod.fresh("wcond")
        bn = self.mod.fresh("wbody")
        s = tstr("f32", x.shape)
        self.mod.graphs.append(
            "graph %s {\n  input %%x: %s\n  input %%i: f32[]\n"
            "  %%c = lt(%%i, %d.0)\n  return %%c\n}\n" % (cn, s, k))
        u = self.rng.choice(["tanh", "sigmoid", "sin"])
        self.mod.graphs.append(
            "graph %s {\n  input %%x: %s\n  input %%i: f32[]\n"
            "  %%x2 = %s(add(mul(%%x, 0.5), 0.25))\n"
            "  %%i2 = add(%%i, 1.0)\n  return %%x2, %%i2\n}\n" % (bn, s, u))
        self.g.use(x)
        mi = k + self.rng.randint(0, 1)
        self.g.define("while(%s, %s, cond=@%s, body=@%s, max_iterations=%d)"
                      % (x, i0, cn, bn, mi), x.shape)
        return True

    def op_custom_fn(self):
        a = self.pick(self.small)
        if not a:
            return False
        b = self.pick(lambda v: bcast(v.shape, a.shape) == a.shape)
        name = self.body(self.mod.fresh("fn"), [a.shape, b.shape], a.shape,
                         3)
        self.g.use(a, b)
        self.g.define("custom_fn(%s, %s, fwd=@%s)" % (a, b, name), a.shape)
        return True


def random_graph(seed, nodes=60, control=True, loss="tree"):
    mod = Module(seed)
    rng = mod.rng
    dims = (rng.choice([2, 3, 4]), rng.choice([1, 3, 5]),
            rng.choice([4, 6, 7]))
    g = Graph(mod, "g%d" % seed, rng)
    params = []
    gen = RandomGen(mod, g, dims, 0, control, params)
    for _ in range(rng.randint(1, 3)):
        g.arg("input", gen.shape())
    for _ in range(rng.randint(1, 3)):
        params.append(g.arg("param", gen.shape()))
    tries = 0
    while g.nodes < nodes and tries < nodes * 10:
        tries += 1
        gen.op()
    # the loss: every unused f32 value and every param, summed
    sinks = [v for v in g.pool if v.uses == 0 and v.dt == "f32"]
    terms = [g.define("reduce_sum(%s)" % v, (), nodes=1, pool=False)
             for v in sinks if v not in params]
    terms += [g.define("reduce_sum(mul(%s, %s))" % (p, p), (), nodes=2,
                       pool=False) for p in params]
    while len(terms) > 1 and loss == "tree":  # a balanced tree of adds
        nxt = [g.define("add(%s, %s)" % (terms[i], terms[i + 1]), (),
                        pool=False) for i in range(0, len(terms) - 1, 2)]
        if len(terms) % 2:
            nxt.append(terms[-1])
        terms = nxt
    while len(terms) > 1:  # reduce_sum(concat(...)) of 32 at a time
        nxt = []
        for i in range(0, len(terms), 32):
            part = ", ".join("reshape(%s, shape=[1])" % t
                             for t in terms[i:i + 32])
            nxt.append(g.define("reduce_sum(concat(%s))" % part, (),
                                nodes=2 + len(terms[i:i + 32]),
                                pool=False))
        terms = nxt
    rets = [terms[0]]
    extra = [v for v in g.pool if v.dt == "f32"]
    for _ in range(rng.randint(0, 3)):
        rets.append(rng.choice(extra))  # maybe an input, maybe twice
    head = "// generated by tests/tools/gen_graphs.py (random, seed %d)\n" \
        % seed
    return head + "\n".join(mod.graphs + [g.text(rets)])


# ------------------------------------------------------------ structured

def _wrap(name, args, body, rets, subs=()):
    return ("// generated by tests/tools/gen_graphs.py (%s)\n" % name +
            "".join(subs) + "graph %s {\n%s\n%s\n  return %s\n}\n" % (
                name.split()[0], "\n".join(args), "\n".join(body), rets))


def chain_graph(n):
    args = ["  input %a: f32[16]", "  param %x: f32[16]"]
    body, prev = [], "%a"
    for i in range(n):
        if i % 2 == 0:
            body.append("  %%v%d = add(%s, %%x)" % (i, prev))
        else:
            body.append("  %%v%d = mul(%s, 1.0001)" % (i, prev))
        prev = "%%v%d" % i
    body.append("  %%loss = reduce_sum(%s)" % prev)
    return _wrap("chain %d" % n, args, body, "%loss")


def diamond_graph(n):
    args = ["  input %a: f32[16]", "  param %x: f32[16]"]
    body, prev = ["  %v0 = mul(%a, %x)"], "%v0"
    for i in range(1, n):
        body.append("  %%v%d = add(%s, %s)" % (i, prev, prev))
        prev = "%%v%d" % i
    body.append("  %%loss = reduce_sum(%s)" % prev)
    return _wrap("diamond %d" % n, args, body, "%loss")


def lattice_graph(n):
    args = ["  input %a: f32[16]", "  param %x: f32[16]"]
    body = ["  %v0 = mul(%a, %x)", "  %v1 = tanh(%v0)", "  %v2 = sin(%v1)"]
    for i in range(3, n):
        body.append("  %%v%d = add(mul(%%v%d, %%v%d), %%v%d)" %
                    (i, i - 1, i - 2, i - 3))
    body.append("  %%loss = reduce_sum(%%v%d)" % (max(n, 3) - 1))
    return _wrap("lattice %d" % n, args, body, "%loss")


def fanout_graph(n):
    args = ["  input %a: f32[16]", "  param %x: f32[16]"]
    body = ["  %s = tanh(mul(%a, %x))"]
    k = max(2, n // 2)
    terms = []
    for i in range(k):
        body.append("  %%c%d = mul(%%s, %s)" % (i, "%d.5" % (i % 7)))
        terms.append("%%c%d" % i)
    t = 0
    while len(terms) > 1:
        nxt = []
        for i in range(0, len(terms) - 1, 2):
            body.append("  %%t%d = add(%s, %s)" % (t, terms[i],
                                                    terms[i + 1]))
            nxt.append("%%t%d" % t)
            t += 1
        if len(terms) % 2:
            nxt.append(terms[-1])
        terms = nxt
    body.append("  %%loss = reduce_sum(%s)" % terms[0])
    return _wrap("fanout %d" % n, args, body, "%loss")


def stack_graph(n):
    layers = max(1, n // 3)
    args = ["  input %h0: f32[16, 16]"]
    body, prev = [], "%h0"
    acts = ["relu", "tanh", "sigmoid"]
    for i in range(layers):
        args.append("  param %%w%d: f32[16, 16]" % i)
        args.append("  param %%b%d: f32[16]" % i)
        body.append("  %%h%d = %s(add(matmul(%s, %%w%d), %%b%d))" %
                    (i + 1, acts[i % 3], prev, i, i))
        prev = "%%h%d" % (i + 1)
    body.append("  %%loss = reduce_mean(%s)" % prev)
    return _wrap("stack %d" % n, args, body, "%loss")


def scan_graph(length):
    sub = ("graph step {\n  input %h: f32[4]\n  input %w: f32[4]\n"
           "  input %x: f32[4]\n"
           "  %hn = tanh(add(mul(%h, %w), %x))\n  return %hn\n}\n\n")
    args = ["  input %h0: f32[4]", "  param %w: f32[4]",
            "  input %%xs: f32[%d, 4]" % length]
    body = ["  %%hT = scan(%%h0, %%w, %%xs, body=@step, length=%d, "
            "num_bcast=1)" % length,
            "  %loss = reduce_sum(%hT)"]
    return _wrap("scan %d" % length, args, body, "%loss", [sub])


SHAPES = {"chain": chain_graph, "diamond": diamond_graph,
          "lattice": lattice_graph, "fanout": fanout_graph,
          "stack": stack_graph, "scan": scan_graph}


def generate(shape, seed=0, nodes=60, control=True, loss="tree"):
    if shape == "random":
        return random_graph(seed, nodes, control, loss)
    return SHAPES[shape](nodes)


# ---------------------------------------------------------------- check

def compile_one(rlxc, path, grad, timeout, mem_mb=0):
    """(ok, what, seconds, cmd) for one `rlxc path [--grad] -o X.o`,
    under an address-space limit of mem_mb MiB (0: none)."""
    obj = path[:-4] + ("_grad.o" if grad else ".o")
    cmd = [rlxc, path, "-o", obj] + (["--grad"] if grad else [])

    def limit():
        if mem_mb > 0:
            import resource
            b = mem_mb << 20
            resource.setrlimit(resource.RLIMIT_AS, (b, b))
    t0 = time.time()
    try:
        p = subprocess.run(cmd, stdout=subprocess.PIPE,
                           stderr=subprocess.STDOUT, timeout=timeout,
                           preexec_fn=limit)
    except subprocess.TimeoutExpired:
        return False, "timeout after %d s" % timeout, timeout, cmd
    dt = time.time() - t0
    out = p.stdout.decode("utf-8", "replace")
    if p.returncode < 0:
        return False, "signal %d\n%s" % (-p.returncode, out[-2000:]), dt, cmd
    if p.returncode != 0:
        return False, "exit %d\n%s" % (p.returncode, out[-2000:]), dt, cmd
    if "LLVM ERROR" in out:
        return False, "LLVM ERROR\n%s" % out[-2000:], dt, cmd
    return True, "", dt, cmd


def seed_range(s):
    if ":" in s:
        a, b = s.split(":")
        return range(int(a), int(b))
    return [int(x) for x in s.split(",")]


def cmd_check(a):
    keep = a.keep or tempfile.mkdtemp(prefix="gen_graphs.")
    os.makedirs(keep, exist_ok=True)
    bad = 0
    for seed in seed_range(a.seeds):
        src = generate(a.shape, seed, a.nodes, not a.no_control, a.loss)
        tag = "%s_%d_%d" % (a.shape, seed, a.nodes)
        path = os.path.join(keep, tag + ".rlx")
        with open(path, "w") as f:
            f.write(src)
        for grad in (False, True):
            ok, what, dt, cmd = compile_one(a.rlxc, path, grad, a.timeout,
                                            a.mem_limit_mb)
            label = "%s%s" % (tag, " --grad" if grad else "")
            print("%-6s %-32s %6.2f s" % ("ok" if ok else "FAIL", label, dt))
            if not ok:
                bad += 1
                print("  %s" % what.replace("\n", "\n  ").rstrip())
                print("  reproduce: %s  (or: %s gen --shape %s --seed %d "
                      "--nodes %d --loss %s%s)" % (
                          " ".join(cmd), sys.argv[0], a.shape, seed,
                          a.nodes, a.loss,
                          " --no-control" if a.no_control else ""))
        sys.stdout.flush()
    if bad:
        print("%d compile(s) failed; graphs in %s" % (bad, keep))
        return 1
    if not a.keep:
        shutil.rmtree(keep, ignore_errors=True)
    return 0


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    sp = ap.add_subparsers(dest="cmd", required=True)
    g = sp.add_parser("gen", help="write one graph")
    c = sp.add_parser("corpus", help="write --count random graphs")
    k = sp.add_parser("check", help="generate and compile graphs")
    for p in (g, c, k):
        p.add_argument("--seed", type=int, default=0)
        p.add_argument("--nodes", "--length", type=int, default=60,
                       dest="nodes")
        p.add_argument("--no-control", action="store_true",
                       help="no scan/if/while/custom_fn (random)")
        p.add_argument("--loss", choices=["tree", "concat"], default="tree",
                       help="sum the loss terms with a tree of adds or "
                       "with reduce_sum(concat(...)) of 32 (random)")
    for p in (g, k):
        p.add_argument("--shape", default="random",
                       choices=["random"] + sorted(SHAPES))
    g.add_argument("-o", dest="out")
    c.add_argument("--out-dir", required=True)
    c.add_argument("--count", type=int, default=50)
    k.add_argument("--rlxc", required=True)
    k.add_argument("--seeds", default="0:8", help="A:B or A,B,C")
    k.add_argument("--timeout", type=int, default=120)
    k.add_argument("--mem-limit-mb", type=int, default=0,
                   help="address-space limit per compile (0: none; "
                   "not with ASan)")
    k.add_argument("--keep", help="directory for the generated graphs")
    a = ap.parse_args()
    if a.cmd == "gen":
        src = generate(a.shape, a.seed, a.nodes, not a.no_control, a.loss)
        if a.out:
            with open(a.out, "w") as f:
                f.write(src)
        else:
            sys.stdout.write(src)
        return 0
    if a.cmd == "corpus":
        os.makedirs(a.out_dir, exist_ok=True)
        for i in range(a.count):
            s = a.seed + i
            with open(os.path.join(a.out_dir, "gen_%d.rlx" % s), "w") as f:
                f.write(random_graph(s, a.nodes, not a.no_control, a.loss))
        return 0
    return cmd_check(a)


if __name__ == "__main__":
    sys.exit(main())
