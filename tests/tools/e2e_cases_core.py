"""e2e_cases_core.py -- end-to-end cases for language.md 6.1-6.4.

Elementwise (every unary in f32 and f64, binary with broadcasting,
compares, where, stop_gradient), casts between all real dtypes
(saturation, NaN -> 0), matmul, reductions over every axes pattern,
softmax / log_softmax / cumsum on every axis, softmax_cross_entropy,
topk with ties, shape ops, gather / scatter_add with every index dtype
and out-of-range indices, constants and literals.
References: NumPy / PyTorch in float64 (see e2e_lib.py); the
elementwise ops' references, sampling ranges and domains are the rows of
op_refs.py.
"""
import numpy as np
import torch

import op_refs as R
from e2e_lib import T, case, out, outs_str, round_to, tt, uni

# ---------------------------------------------------------------- 6.1


def _unary_ref(op):
    """The float64 reference of unary op (tests/tools/op_refs.py)."""
    r = R.UNARY[op]
    if r.e2e_torch:
        fn = R.torch_fn(op)
        return lambda x: fn(tt(x)).numpy()
    return r.np


UNARY = {op: (_unary_ref(op), r.e2e) for op, r in R.UNARY.items()}


def _unary_case(op, fn, lo, hi):
    def build(c, rng):
        av = uni(rng, (3, 7), lo, hi)
        if R.UNARY[op].zeros:
            av[0, :3] = [0.0, -0.0, hi]
        if op == "round":
            av[0, :] = [-2.5, -1.5, -0.5, 0.5, 1.5, 2.5, 3.5]
        a = T("f32", av, "a")
        b = T("f64", uni(rng, (2, 3, 4), lo, hi), "b")
        c.graph([a, b], "%%ra = %s(%%a)\n%%rb = %s(%%b)" % (op, op),
                "%ra, %rb", comment="unary %s in f32 and f64" % op)
        c.run([a, b], [out("f32", fn(a.v), "ra"), out("f64", fn(b.v), "rb")])
    case("unary_" + op)(build)


for _op, (_fn, (_lo, _hi)) in UNARY.items():
    _unary_case(_op, _fn, _lo, _hi)


@case()
def unary_int_neg_abs(c, rng):
    a = T("i32", rng.integers(-50, 50, (2, 5)), "a")
    b = T("i64", rng.integers(-2**40, 2**40, (6,)), "b")
    c.graph([a, b], "%r0 = neg(%a)\n%r1 = abs(%a)\n%r2 = neg(%b)\n"
            "%r3 = abs(%b)", "%r0, %r1, %r2, %r3",
            comment="neg and abs on integers")
    c.run([a, b], [out("i32", -a.v, "r0"), out("i32", np.abs(a.v), "r1"),
                   out("i64", -b.v, "r2"), out("i64", np.abs(b.v), "r3")])


BINARY = {op: (r.np, r.dom) for op, r in R.BINARY.items()}


def _bin_vals(rng, shape, kind, second):
    if kind == "ties":
        return rng.integers(-4, 4, shape) / 4.0
    if kind == "posbase" and not second:
        return uni(rng, shape, 0.1, 2.0)
    if kind == "posbase":
        return uni(rng, shape, -2, 2)
    if kind == "nonzero" and second:
        return rng.choice([-1, 1], shape) * uni(rng, shape, 0.5, 2)
    return uni(rng, shape, -2, 2)


def _binary_case(op, fn, kind):
    def build(c, rng):
        a = T("f32", _bin_vals(rng, (2, 1, 4), kind, False), "a")
        b = T("f32", _bin_vals(rng, (3, 1), kind, True), "b")
        x = T("f64", _bin_vals(rng, (3, 4), kind, False), "x")
        y = T("f64", _bin_vals(rng, (4,), kind, True), "y")
        s = T("f64", _bin_vals(rng, (), kind, True), "s")
        outs = [out("f32", fn(a.v, b.v), "r0"),
                out("f64", fn(x.v, y.v), "r1"),
                out("f64", fn(x.v, s.v), "r2")]
        body = ("%%r0 = %s(%%a, %%b)\n%%r1 = %s(%%x, %%y)\n"
                "%%r2 = %s(%%x, %%s)" % ((op,) * 3))
        if op != "pow":  # pow(y, x) would take negative bases
            body += "\n%%r3 = %s(%%y, %%x)" % op
            outs.append(out("f64", fn(y.v, x.v), "r3"))
        c.graph([a, b, x, y, s], body, outs_str(outs),
                comment="binary %s with broadcasting, f32 and f64" % op)
        c.run([a, b, x, y, s], outs)
    case("binary_" + op)(build)


for _op, (_fn, _kind) in BINARY.items():
    _binary_case(_op, _fn, _kind)


@case()
def binary_int(c, rng):
    a = T("i32", rng.integers(-100, 100, (2, 1, 3)), "a")
    b = T("i32", rng.integers(-100, 100, (4, 1)), "b")
    x = T("i64", rng.integers(-2**40, 2**40, (3, 2)), "x")
    y = T("i64", rng.integers(-2**20, 2**20, (2,)), "y")
    ops = ["add", "sub", "mul", "min", "max"]
    fns = [np.add, np.subtract, np.multiply, np.minimum, np.maximum]
    body, outs = [], []
    for op, fn in zip(ops, fns):
        body.append("%%%s32 = %s(%%a, %%b)" % (op, op))
        body.append("%%%s64 = %s(%%x, %%y)" % (op, op))
        outs += [out("i32", fn(a.v, b.v), op + "32"),
                 out("i64", fn(x.v, y.v), op + "64")]
    c.graph([a, b, x, y], "\n".join(body),
            outs_str(outs),
            comment="integer add/sub/mul/min/max with broadcasting")
    c.run([a, b, x, y], outs)


@case()
def binary_bool(c, rng):
    """bool mul / min / max (the OPF_BOOL ops): and, and, or."""
    a = T("bool", rng.integers(0, 2, (3, 4)), "a")
    b = T("bool", rng.integers(0, 2, (4,)), "b")
    fns = [("mul", np.logical_and), ("min", np.logical_and),
           ("max", np.logical_or)]
    outs = [out("bool", f(a.v != 0, b.v != 0), op) for op, f in fns]
    c.graph([a, b], "\n".join("%%%s = %s(%%a, %%b)" % (op, op)
                              for op, _ in fns),
            outs_str(outs), comment="bool mul/min/max with broadcasting")
    c.run([a, b], outs)


@case()
def literals(c, rng):
    x = T("f32", uni(rng, (2, 3)), "x")
    y = T("f64", uni(rng, (4,)), "y")
    c.graph([x, y], "%r0 = add(%x, 1.5)\n%r1 = mul(2, %x)\n"
            "%r2 = sub(%y, 0.25)\n%r3 = pow(%y, 2)\n"
            "%r4 = where(gt(%x, 0), %x, 0.0)\n%r5 = max(%y, -1e-1)",
            "%r0, %r1, %r2, %r3, %r4, %r5",
            comment="numeric literals adopt the other operand's dtype")
    c.run([x, y], [out("f32", x.v + 1.5, "r0"), out("f32", 2 * x.v, "r1"),
                   out("f64", y.v - 0.25, "r2"), out("f64", y.v ** 2, "r3"),
                   out("f32", np.where(x.v > 0, x.v, 0.0), "r4"),
                   out("f64", np.maximum(y.v, -0.1), "r5")])


CMP = [(op, r.np) for op, r in R.COMPARE.items()]


def _compare_case(dt, sa, sb):
    def build(c, rng):
        if dt in ("f32", "f64"):
            av = rng.integers(-3, 3, sa) / 2.0
            bv = rng.integers(-3, 3, sb) / 2.0
            av.flat[0] = np.nan
        elif dt == "bool":  # ordered as false < true
            av, bv = rng.integers(0, 2, sa), rng.integers(0, 2, sb)
        else:
            big = 2**40 if dt == "i64" else 3
            av = rng.integers(-3, 3, sa) * big
            bv = rng.integers(-3, 3, sb) * big
        a, b = T(dt, av, "a"), T(dt, bv, "b")
        body = "\n".join("%%%s = %s(%%a, %%b)" % (n, n) for n, _ in CMP)
        c.graph([a, b], body, ", ".join("%" + n for n, _ in CMP),
                comment="compares on %s with broadcasting (NaN in a)" % dt)
        c.run([a, b], [out("bool", f(a.v, b.v), n) for n, f in CMP])
    case("compare_" + dt)(build)


_compare_case("f32", (2, 1, 4), (3, 1))
_compare_case("f64", (3, 4), (4,))
_compare_case("i32", (2, 3), (2, 1))
_compare_case("i64", (5,), ())
_compare_case("bool", (2, 4), (4,))


@case()
def where_ops(c, rng):
    cb = T("bool", rng.integers(0, 2, (2, 1, 4)), "cb")
    a = T("f32", uni(rng, (3, 1)), "a")
    b = T("f32", uni(rng, (4,)), "b")
    cf = T("f32", rng.integers(-1, 2, (3, 4)) * 0.5, "cf")
    x = T("f64", uni(rng, (3, 4)), "x")
    s = T("f64", uni(rng, ()), "s")
    ci = T("i32", rng.integers(-2, 2, (4,)), "ci")
    c.graph([cb, a, b, cf, x, s, ci],
            "%r0 = where(%cb, %a, %b)\n%r1 = where(%cf, %x, %s)\n"
            "%r2 = where(%ci, %s, %x)",
            "%r0, %r1, %r2",
            comment="where: bool and numeric conditions, broadcasting")
    c.run([cb, a, b, cf, x, s, ci],
          [out("f32", np.where(cb.v != 0, a.v, b.v), "r0"),
           out("f64", np.where(cf.v != 0, x.v, s.v), "r1"),
           out("f64", np.where(ci.v != 0, s.v, x.v), "r2")])


@case()
def stop_gradient_fwd(c, rng):
    a = T("f32", uni(rng, (2, 3)), "a")
    b = T("f64", uni(rng, (4,)), "b")
    c.graph([a, b], "%r0 = stop_gradient(%a)\n"
            "%r1 = mul(stop_gradient(%b), %b)", "%r0, %r1",
            comment="stop_gradient is the identity in forward")
    c.run([a, b], [out("f32", a.v, "r0"), out("f64", b.v * b.v, "r1")])


@case()
def side_outputs(c, rng):
    x = T("f32", uni(rng, (37, 129)), "x")
    b = T("f32", uni(rng, (129,)), "b")
    y = T("f64", uni(rng, (5, 3)), "y")
    c.graph([x, b, y], "%h = add(%x, %b)\n%t = mul(tanh(%h), %h)\n"
            "%s = mul(%x, 2.0)\n%d = cast(add(%s, 1.0), to=f64)\n"
            "%e = exp(%y)\n%u = sub(%e, %y)\n%w = mul(%u, %u)",
            "%t, %h, %d, %s, %w, %u, %e",
            comment="returned values read only by one elementwise group "
            "of their\nshape are stored by its loop (side outputs, "
            "fuse.c): %h by %t's\n(a broadcast leaf), %s (f32) by %d's "
            "(f64), %u and %e by %w's")
    h = x.v + b.v
    s_ = round_to("f32", x.v * 2.0)
    e = np.exp(y.v)
    u = e - y.v
    c.run([x, b, y], [out("f32", np.tanh(h) * h, "t"), out("f32", h, "h"),
                      out("f64", round_to("f32", s_ + 1.0), "d"),
                      out("f32", s_, "s"),
                      out("f64", u * u, "w"), out("f64", u, "u"),
                      out("f64", e, "e")])


# ---------------------------------------------------------------- casts

ALL_DT = ["f32", "f64", "f16", "bf16", "i8", "u8", "i32", "i64", "bool"]


def cast_ref(v, to):
    """language.md 6.1: float->int truncates toward zero, saturates,
    NaN -> 0; int->int wraps like NumPy; ->bool is != 0."""
    v = np.asarray(v)
    if to == "bool":
        return (v != 0).astype(np.int64)
    if to in ("f32", "f64", "f16", "bf16"):
        with np.errstate(over="ignore"):
            return round_to(to, v.astype(np.float64))
    lo, hi = {"i8": (-128, 127), "u8": (0, 255), "i32": (-2**31, 2**31 - 1),
              "i64": (-2**63, 2**63 - 1)}[to]
    if v.dtype.kind == "f":
        r = np.trunc(np.nan_to_num(v, nan=0.0, posinf=np.inf,
                                   neginf=-np.inf))
        out_v = np.empty(v.shape, dtype=np.int64)
        out_v[r >= hi] = hi
        out_v[r <= lo] = lo
        mid = (r > lo) & (r < hi)
        out_v[mid] = r[mid].astype(np.int64)
        return out_v
    bits = {"i8": np.int8, "u8": np.uint8, "i32": np.int32, "i64": np.int64}
    return v.astype(np.int64).astype(bits[to]).astype(np.int64)


CAST_PLAIN = {
    "f32": [0.0, -0.0, 1.0, -1.0, 2.5, -2.5, 0.75, -0.75, 100.9, -100.9,
            3.0e-5, 255.5, 65504.0, 1.0e6, 123456.7],
    "f64": [0.0, -0.0, 1.0, -1.0, 2.5, -2.5, 0.1, -0.7, 100.9, -99.99,
            1.0e-300, 255.5, 1.0 + 2.0**-30, 70000.0, 1.0e10],
    "f16": [0.0, -0.0, 1.0, -1.0, 2.5, -2.5, 0.099975586, 300.0, -300.0,
            65504.0, 127.5, -128.5, 6.1035e-05, 1000.0],
    "bf16": [0.0, -0.0, 1.0, -1.0, 2.5, -2.5, 0.5, 300.0, -300.0, 1.0e10,
             127.0, -129.0, 3.0e38, 1.5],
}
CAST_SPECIAL = {  # saturation and non-finite values (not for -> bool)
    "f32": [np.nan, np.inf, -np.inf, 3.0e9, -3.0e9, 1.0e20, -1.0e20,
            300.0, -300.0, 3.0e38],
    "f64": [np.nan, np.inf, -np.inf, 1.0e19, -1.0e19, 3.0e9, -3.0e9,
            1.0e300, -1.0e300, 2.0**63, -(2.0**63)],
    "f16": [np.nan, np.inf, -np.inf, 65504.0, -65504.0],
    "bf16": [np.nan, np.inf, -np.inf, 3.0e38, -3.0e38, 1.0e10],
}
INT_PLAIN = {"i8": [0, 1, 5, 100, 127, 64, 3],
             "u8": [0, 1, 5, 100, 127, 64, 3],
             "i32": [0, 1, 5, 100, 127, 64, 3],
             "i64": [0, 1, 5, 100, 127, 64, 3],
             "bool": [0, 1, 1, 0, 1]}
INT_WIDE = {"i8": [-128, 127, -1, -77], "u8": [255, 128, 200, 0],
            "i32": [-2**31, 2**31 - 1, 16777217, -16777217, -5],
            "i64": [-2**63, 2**63 - 1, 2**53 + 1, -(2**40) - 3, -5],
            "bool": [1, 0]}


def _cast_case(src):
    def build(c, rng):
        is_f = src in CAST_PLAIN
        p = T(src, (CAST_PLAIN if is_f else INT_PLAIN)[src], "p")
        w = T(src, (CAST_SPECIAL if is_f else INT_WIDE)[src], "w")
        body, outs = [], []
        for to in ALL_DT:
            body.append("%%p_%s = cast(%%p, to=%s)" % (to, to))
            outs.append(out(to, cast_ref(p.v, to), "p_" + to))
        wide_to = ALL_DT if is_f else ["f32", "f64", "f16", "bf16", src]
        wide_to = [d for d in wide_to if d != "bool"]
        for to in wide_to:
            body.append("%%w_%s = cast(%%w, to=%s)" % (to, to))
            outs.append(out(to, cast_ref(w.v, to), "w_" + to))
        c.graph([p, w], "\n".join(body),
                outs_str(outs),
                comment="cast from %s to every real dtype; w holds "
                "saturating / special values" % src)
        c.run([p, w], outs)
    case("cast_from_" + src)(build)


for _src in ALL_DT:
    _cast_case(_src)


@case()
def cast_int_narrow(c, rng):
    """Out-of-range integer narrowing: follows NumPy (two's complement
    wrap), the spec being silent (see docs/testing.md)."""
    a = T("i64", [300, -300, 2**40 + 5, -129, 255, 256], "a")
    b = T("i32", [70000, -70000, 128, -1, 2**31 - 1], "b")
    outs = [out("i8", cast_ref(a.v, "i8"), "a_i8"),
            out("u8", cast_ref(a.v, "u8"), "a_u8"),
            out("i32", cast_ref(a.v, "i32"), "a_i32"),
            out("i8", cast_ref(b.v, "i8"), "b_i8"),
            out("u8", cast_ref(b.v, "u8"), "b_u8")]
    c.graph([a, b], "%a_i8 = cast(%a, to=i8)\n%a_u8 = cast(%a, to=u8)\n"
            "%a_i32 = cast(%a, to=i32)\n%b_i8 = cast(%b, to=i8)\n"
            "%b_u8 = cast(%b, to=u8)", outs_str(outs),
            comment="integer narrowing out of range: NumPy wrap-around")
    c.run([a, b], outs)


# ------------------------------------------- vector bodies and extremes

# ops sampled on the negative range too (not x > 0 only, no poles)
SIGNED_OK = [op for op in UNARY if R.UNARY[op].dom in ("real", "kink")]


@case()
def elementwise_long(c, rng):
    """Every unary op on 1031 f32 and 517 f64 elements (vector loops
    plus tails; the small cases only exercise tails), on a positive
    range valid for all ops and on a negative range where defined."""
    p32 = T("f32", uni(rng, (1031,), 0.05, 1.3), "p32")
    n32 = T("f32", uni(rng, (1031,), -3.0, -0.05), "n32")
    p64 = T("f64", uni(rng, (517,), 0.05, 1.3), "p64")
    n64 = T("f64", uni(rng, (517,), -3.0, -0.05), "n64")
    body, outs = [], []
    for op, (fn, _) in UNARY.items():
        srcs = [p32, p64] + ([n32, n64] if op in SIGNED_OK else [])
        for t in srcs:
            nm = "%s_%s" % (op, t.name)
            body.append("%%%s = %s(%%%s)" % (nm, op, t.name))
            outs.append(out(t.dt, fn(t.v), nm))
    c.graph([p32, n32, p64, n64], "\n".join(body),
            outs_str(outs),
            comment="every unary op on long vectors, f32 and f64")
    c.run([p32, n32, p64, n64], outs)


@case()
def unary_extremes(c, rng):
    """Arguments near overflow/underflow of the vector math routines."""
    e32 = T("f32", [88.0, 87.5, 80.0, -87.0, -100.0, -104.0, 0.0, 1e-30,
                    -1e-30, 50.0, -50.0, 20.0, -20.0, 10.0, -10.0, 7.5,
                    -7.5, 1e-3, -1e-3, 3e-8], "e32")
    e64 = T("f64", [709.0, 700.0, -700.0, -745.0, 0.0, 1e-300, 40.0,
                    -40.0, 20.0, -20.0, 10.0, -10.0, 1e-8, -1e-8, 30.5,
                    -30.5, 5.0, -5.0], "e64")
    pos32 = T("f32", [1e-30, 1e-38, 3e38, 1.0, 1e10, 1e-10, 2.0, 0.5],
              "pos32")
    pos64 = T("f64", [1e-300, 1e-308, 1e300, 1.0, 1e100, 1e-100], "pos64")
    ops = ["exp", "tanh", "sigmoid", "gelu", "gelu_tanh", "silu", "atan",
           "sin", "cos"]
    saved = np.seterr(over="ignore")  # exp(-x) in the sigmoid reference
    body, outs = [], []
    for op in ops:
        for t in (e32, e64):
            nm = "%s_%s" % (op, t.name)
            body.append("%%%s = %s(%%%s)" % (nm, op, t.name))
            outs.append(out(t.dt, UNARY[op][0](t.v), nm))
    for op in ("log", "sqrt", "rsqrt"):
        for t in (pos32, pos64):
            nm = "%s_%s" % (op, t.name)
            body.append("%%%s = %s(%%%s)" % (nm, op, t.name))
            outs.append(out(t.dt, UNARY[op][0](t.v), nm))
    c.graph([e32, e64, pos32, pos64], "\n".join(body),
            outs_str(outs),
            comment="unary ops at extreme arguments (overflow, underflow,"
            "\nsaturation of tanh/sigmoid, tiny and huge positives)")
    np.seterr(**saved)
    c.run([e32, e64, pos32, pos64], outs)


@case()
def fusion_chain(c, rng):
    """Elementwise chains over a transposed input with broadcasting, a
    value used by several consumers, a reduction prologue and a softmax
    of a fused expression: fusion must not change results."""
    x = T("f32", uni(rng, (2, 3, 4, 17)), "x")
    y = T("f32", uni(rng, (4, 1, 17)), "y")
    z = T("f32", uni(rng, (3, 1)), "z")
    t = x.v.transpose(0, 2, 1, 3)
    o1 = np.tanh(t * y.v + z.v)
    outs = [out("f32", o1, "o1"),
            out("f32", (o1 * t).sum(axis=(1, 3)), "o2"),
            out("f32", torch.softmax(tt(o1 + 1.0), 1).numpy(), "o3"),
            out("f32", np.where(t > 0, t, t * 0.1), "o4"),
            out("f32", np.exp(-np.abs(o1)).reshape(8, 51), "o5")]
    c.graph([x, y, z], "%t = transpose(%x, perm=[0, 2, 1, 3])\n"
            "%o1 = tanh(add(mul(%t, %y), %z))\n"
            "%o2 = reduce_sum(mul(%o1, %t), axes=[1, 3])\n"
            "%o3 = softmax(add(%o1, 1.0), axis=1)\n"
            "%o4 = where(gt(%t, 0.0), %t, mul(%t, 0.1))\n"
            "%o5 = reshape(exp(neg(abs(%o1))), shape=[8, 51])",
            "%o1, %o2, %o3, %o4, %o5",
            comment="fused elementwise chains with broadcasting and a "
            "transposed input")
    c.run([x, y, z], outs)


@case()
def reduce_long(c, rng):
    """Reductions, softmax and cumsum over long axes (vector bodies and
    tails), innermost and outer."""
    a = T("f32", uni(rng, (3, 1037)), "a")
    b = T("f64", uni(rng, (523, 5)), "b")
    s = T("f32", uni(rng, (2, 1031), -5, 5), "s")
    outs = [out("f32", a.v.sum(1), "sa"), out("f32", a.v.max(1), "ma"),
            out("f32", a.v.mean(), "mean_a"),
            out("f64", b.v.sum(0), "sb"), out("f64", b.v.min(0), "mb"),
            out("f64", np.prod(1 + b.v[:40] * 0.1, 0), "pb"),
            out("f32", torch.softmax(tt(s.v), 1).numpy(), "sm"),
            out("f32", torch.log_softmax(tt(s.v), 1).numpy(), "lsm"),
            out("f64", np.cumsum(b.v, 0), "cb")]
    c.graph([a, b, s], "%sa = reduce_sum(%a, axes=[1])\n"
            "%ma = reduce_max(%a, axes=[1])\n%mean_a = reduce_mean(%a)\n"
            "%sb = reduce_sum(%b, axes=[0])\n%mb = reduce_min(%b, axes=[0])"
            "\n%pb = reduce_prod(add(mul(narrow(%b, axis=0, start=0, "
            "len=40), 0.1), 1.0), axes=[0])\n"
            "%sm = softmax(%s)\n%lsm = log_softmax(%s)\n"
            "%cb = cumsum(%b, axis=0)",
            outs_str(outs), comment="reductions over long axes")
    c.run([a, b, s], outs)


@case()
def reduce_columns(c, rng):
    """Reductions over leading axes with many kept columns (bias
    gradients: the GPU's column kernels, one or several row segments),
    and scatter_add with a long index list over several row tiles."""
    a = T("f32", uni(rng, (600, 40)), "a")
    b = T("f32", uni(rng, (4, 150, 33)), "b")
    d = T("f64", uni(rng, (300, 64)), "d")
    u = T("f32", uni(rng, (700, 5)), "u")
    i = T("i32", rng.integers(0, 100, 700), "i")
    su = np.zeros((100, 5))
    np.add.at(su, i.v.astype(np.int64), u.v)
    outs = [out("f32", a.v.sum(0), "sa"),
            out("f32", b.v.mean((0, 1)), "mb"),
            out("f64", d.v.max(0), "xd"), out("f64", d.v.min(0), "nd"),
            out("f32", su, "su")]
    c.graph([a, b, d, u, i], "%sa = reduce_sum(%a, axes=[0])\n"
            "%mb = reduce_mean(%b, axes=[0, 1])\n"
            "%xd = reduce_max(%d, axes=[0])\n%nd = reduce_min(%d, axes=[0])\n"
            "%su = scatter_add(%u, %i, shape=[100, 5])",
            outs_str(outs), comment="column reductions, a long scatter_add")
    c.run([a, b, d, u, i], outs)
