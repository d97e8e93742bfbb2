#!/usr/bin/env python3
"""test_codegen_ops_gen.py -- writes test_codegen_ops_data.h, the cases
of test_codegen_ops.c (reductions, softmax, cumsum, cross-entropy, topk,
data movement, gather/scatter, control flow, backward ops).

Inputs are exact integer patterns v(i) = ((i*a + b) % m - m//2) * s
(the C test regenerates them bit for bit); expected outputs are computed
here in float64 with NumPy (derivatives of activations with PyTorch
autograd when available, else the NumPy derivatives of
tests/tools/op_refs.py) and stored as doubles.
Run with /usr/bin/python3 from tests/unit:  ./test_codegen_ops_gen.py
"""
import math
import os
import sys

import numpy as np

sys.path.insert(0, os.path.join(os.path.dirname(os.path.dirname(
    os.path.abspath(__file__))), "tools"))
import op_refs as R  # noqa: E402  (the elementwise ops' facts)

try:
    import torch
except ImportError:  # CI: goldens are committed, torch is optional
    torch = None

DT = {"f32": np.float32, "f64": np.float64, "f16": np.float16,
      "i32": np.int32, "i64": np.int64, "i8": np.int8, "u8": np.uint8,
      "bool": np.bool_}
TOL = {"c64": 2e-5, "f32": 2e-5, "f64": 1e-11, "f16": 4e-3, "bf16": 2e-2}
CASES = []


def pat(shape, a=7, b=3, m=61, s=0.125):
    return ("pat", shape, a, b, m, s)


def lst(shape, vals):
    return ("list", shape, list(np.array(vals, dtype=np.float64).ravel()))


def make(dt, spec):
    if spec[0] == "pat":
        _, shape, a, b, m, s = spec
        n = int(np.prod(shape)) * (2 if dt == "c64" else 1)
        i = np.arange(n, dtype=np.int64)
        v = ((i * a + b) % m - m // 2).astype(np.float64) * s
    else:
        _, shape, vals = spec
        v = np.array(vals, dtype=np.float64)
    if dt == "c64":  # pairs (re, im), each exact in f32
        v = v.astype(np.float32).astype(np.float64)
        return (v[0::2] + 1j * v[1::2]).reshape(shape)
    v = v.reshape(shape)
    if dt == "bf16":
        return v  # patterns are chosen exact in bf16
    if dt in ("i8", "u8", "i32", "i64"):  # C: double -> int64 -> wrap
        return v.astype(np.int64).astype(DT[dt]).astype(np.float64)
    return v.astype(DT[dt]).astype(np.float64) if dt != "bool" else v


def case(name, src, ins, outs, rc=0, tol=None):
    """ins: [(dtype, spec)]; outs: [(dtype, array)] (ignored if rc)."""
    CASES.append((name, src, ins, outs, rc, tol))


def vals(ins, k):
    dt, spec = ins[k]
    return make(dt, spec)


# ---------------- reductions ----------------
def reductions():
    x = ("f32", pat([37, 300], 13, 5, 201, 0.0625))
    red = {"sum": np.sum, "max": np.max, "min": np.min, "mean": np.mean}
    for op, fn in red.items():
        src = ("graph r_%s { input %%x: f32[37, 300]\n"
               "  %%a = reduce_%s(%%x, axes=[1])\n"
               "  %%b = reduce_%s(%%x, axes=[0])\n"
               "  %%c = reduce_%s(%%x)\n"
               "  %%d = reduce_%s(%%x, axes=[0, 1], keep_dims=true)\n"
               "  return %%a, %%b, %%c, %%d }" % (op, op, op, op, op))
        X = vals([x], 0)
        case("r_" + op, src, [x],
             [("f32", fn(X, axis=1)), ("f32", fn(X, axis=0)),
              ("f32", fn(X)), ("f32", fn(X).reshape(1, 1))])
    # interleaved kept / reduced groups, 4-D
    z = ("f64", pat([3, 4, 5, 6], 11, 1, 97, 0.5))
    Z = vals([z], 0)
    src = ("graph r_mid { input %z: f64[3, 4, 5, 6]\n"
           "  %a = reduce_sum(%z, axes=[1, 3])\n"
           "  %b = reduce_max(%z, axes=[0, 2])\n"
           "  %c = reduce_prod(reduce_mean(%z, axes=[1, 2]), axes=[1])\n"
           "  %d = reduce_min(%z, axes=[2], keep_dims=true)\n"
           "  return %a, %b, %c, %d }")
    case("r_mid", src, [z],
         [("f64", Z.sum(axis=(1, 3))), ("f64", Z.max(axis=(0, 2))),
          ("f64", Z.mean(axis=(1, 2)).prod(axis=1)),
          ("f64", Z.min(axis=2, keepdims=True))])
    # prod near 1 over a long row
    p = ("f64", pat([4, 100], 3, 1, 41, 1.0 / 512))
    P = vals([p], 0) + 1.0
    src = ("graph r_prod { input %p: f64[4, 100]\n"
           "  %a = reduce_prod(add(%p, 1.0), axes=[1])\n"
           "  return %a }")
    case("r_prod", src, [p], [("f64", P.prod(axis=1))])
    # integers
    i = ("i32", pat([6, 50], 17, 2, 23, 1))
    I = vals([i], 0).astype(np.int64)
    u = ("u8", ("pat", [9, 7], 5, 1, 250, 1))
    U = vals([u], 0)
    src = ("graph r_int { input %i: i32[6, 50]  input %u: u8[9, 7]\n"
           "  %a = reduce_sum(%i, axes=[1])\n"
           "  %b = reduce_max(%i, axes=[0])\n"
           "  %c = reduce_min(%i)\n"
           "  %d = reduce_max(%u, axes=[0])\n"
           "  %e = reduce_min(%u, axes=[1])\n"
           "  return %a, %b, %c, %d, %e }")
    case("r_int", src, [i, u],
         [("i32", I.sum(axis=1)), ("i32", I.max(axis=0)),
          ("i32", I.min()), ("u8", U.max(axis=0)), ("u8", U.min(axis=1))])
    # f16 / bf16 accumulate in f32
    h = ("f16", pat([8, 130], 7, 3, 255, 0.25))
    H = vals([h], 0)
    bf = ("bf16", pat([5, 40], 3, 1, 127, 0.5))
    BF = vals([bf], 0)
    src = ("graph r_half { input %h: f16[8, 130]  input %g: bf16[5, 40]\n"
           "  %a = reduce_sum(%h, axes=[1])\n"
           "  %b = reduce_mean(%h, axes=[0])\n"
           "  %c = reduce_max(%g, axes=[1])\n"
           "  %d = reduce_sum(%g, axes=[0])\n"
           "  return %a, %b, %c, %d }")
    case("r_half", src, [h, bf],
         [("f16", H.sum(axis=1)), ("f16", H.mean(axis=0)),
          ("bf16", BF.max(axis=1)), ("bf16", BF.sum(axis=0))])
    # big enough to run in parallel (determinism across thread counts)
    big = ("f32", pat([512, 520], 7919, 1, 1001, 1.0 / 64))
    B = vals([big], 0)
    src = ("graph r_big { input %x: f32[512, 520]\n"
           "  %a = reduce_sum(%x, axes=[1])\n"
           "  %b = reduce_sum(%x, axes=[0])\n"
           "  %c = reduce_max(%x, axes=[0])\n"
           "  %d = reduce_sum(%x)\n"
           "  return %a, %b, %c, %d }")
    case("r_big", src, [big],
         [("f32", B.sum(axis=1)), ("f32", B.sum(axis=0)),
          ("f32", B.max(axis=0)), ("f32", B.sum())], tol=1e-4)


# ---------------- softmax, cumsum ----------------
def softmax(x, axis):
    e = np.exp(x - x.max(axis=axis, keepdims=True))
    return e / e.sum(axis=axis, keepdims=True)


def log_softmax(x, axis):
    m = x.max(axis=axis, keepdims=True)
    return x - m - np.log(np.exp(x - m).sum(axis=axis, keepdims=True))


def softmaxes():
    x = ("f32", pat([2, 19, 37], 13, 5, 101, 0.0625))
    X = vals([x], 0)
    src = ("graph smx { input %x: f32[2, 19, 37]\n"
           "  %a = softmax(%x)\n  %b = softmax(%x, axis=1)\n"
           "  %c = log_softmax(%x, axis=0)\n  %d = log_softmax(%x)\n"
           "  return %a, %b, %c, %d }")
    case("smx", src, [x],
         [("f32", softmax(X, 2)), ("f32", softmax(X, 1)),
          ("f32", log_softmax(X, 0)), ("f32", log_softmax(X, 2))])
    y = ("f64", pat([12, 130], 7, 3, 401, 0.03125))
    Y = vals([y], 0)
    h = ("f16", pat([4, 20], 5, 1, 61, 0.125))
    H = vals([h], 0)
    src = ("graph smx2 { input %y: f64[12, 130]  input %h: f16[4, 20]\n"
           "  %a = softmax(%y)\n  %b = log_softmax(%y, axis=0)\n"
           "  %c = softmax(%h)\n  %d = log_softmax(%h, axis=0)\n"
           "  return %a, %b, %c, %d }")
    case("smx2", src, [y, h],
         [("f64", softmax(Y, 1)), ("f64", log_softmax(Y, 0)),
          ("f16", softmax(H, 1)), ("f16", log_softmax(H, 0))])
    w = ("f32", pat([3, 600], 7, 3, 211, 0.0625))
    W = vals([w], 0)
    v = ("f64", pat([2, 3, 512], 5, 1, 97, 0.125))
    V = vals([v], 0)
    bf = ("bf16", pat([3, 260], 3, 1, 61, 0.125))
    BF = vals([bf], 0)
    src = ("graph smx3 { input %w: f32[3, 600]  input %v: f64[2, 3, 512]\n"
           "  input %g: bf16[3, 260]\n"
           "  %a = softmax(%w, axis=0)\n  %b = log_softmax(%v, axis=1)\n"
           "  %c = softmax(%v, axis=1)\n  %d = log_softmax(%g, axis=0)\n"
           "  return %a, %b, %c, %d }")
    case("smx3", src, [w, v, bf],
         [("f32", softmax(W, 0)), ("f64", log_softmax(V, 1)),
          ("f64", softmax(V, 1)), ("bf16", log_softmax(BF, 0))])
    c = ("f32", pat([5, 23, 19], 3, 1, 17, 0.25))
    C = vals([c], 0)
    i = ("i32", pat([4, 9], 5, 2, 13, 1))
    I = vals([i], 0)
    rev = lambda a, ax: np.flip(np.cumsum(np.flip(a, ax), ax), ax)
    excl = lambda a, ax: np.cumsum(a, ax) - a
    src = ("graph cum { input %c: f32[5, 23, 19]  input %i: i32[4, 9]\n"
           "  %a = cumsum(%c, axis=1)\n"
           "  %b = cumsum(%c, exclusive=true)\n"
           "  %d = cumsum(%i, axis=0, exclusive=true)\n"
           "  %e = cumsum_backward(%c, axis=0)\n"
           "  %f = cumsum_backward(%c, axis=-1, exclusive=true)\n"
           "  return %a, %b, %d, %e, %f }")
    case("cum", src, [c, i],
         [("f32", np.cumsum(C, 1)), ("f32", excl(C, 2)),
          ("i32", excl(I, 0)), ("f32", rev(C, 0)),
          ("f32", rev(C, 2) - C)])


    k = ("f64", pat([3, 1100], 7, 1, 37, 0.25))
    K = vals([k], 0)
    h = ("f16", pat([6, 40], 3, 1, 15, 0.25))
    H = vals([h], 0)
    src = ("graph cum2 { input %k: f64[3, 1100]  input %h: f16[6, 40]\n"
           "  %a = cumsum(%k, axis=0)\n"
           "  %b = cumsum(%k, axis=0, exclusive=true)\n"
           "  %c = cumsum_backward(%k, axis=0, exclusive=true)\n"
           "  %d = cumsum(%h, axis=0)\n"
           "  %e = cumsum_backward(%h, axis=0)\n"
           "  return %a, %b, %c, %d, %e }")
    case("cum2", src, [k, h],
         [("f64", np.cumsum(K, 0)), ("f64", excl(K, 0)),
          ("f64", rev(K, 0) - K), ("f16", np.cumsum(H, 0)),
          ("f16", rev(H, 0))])


def complexes():
    z = ("c64", pat([3, 4, 5], 7, 1, 31, 0.25))
    Z = vals([z], 0)
    u = ("c64", pat([6, 2], 5, 2, 13, 0.5))
    U = vals([u], 0)
    si = [2, 0, 2, 3, 3, 2]
    sa = np.zeros((4, 2), dtype=complex)
    for k, j in enumerate(si):
        sa[j] += U[k]
    src = ("graph cz { input %z: c64[3, 4, 5]  input %u: c64[6, 2]\n"
           "  input %i: i32[6]\n"
           "  %a = reduce_sum(%z, axes=[1])\n"
           "  %b = reduce_sum(%z, axes=[0, 2], keep_dims=true)\n"
           "  %c = cumsum(%z, axis=0)\n"
           "  %d = scatter_add(%u, %i, shape=[4, 2])\n"
           "  %e = transpose(%z, perm=[2, 0, 1])\n"
           "  return %a, %b, %c, %d, %e }")
    case("cz", src, [z, u, ("i32", lst([6], si))],
         [("c64", Z.sum(axis=1)), ("c64", Z.sum(axis=(0, 2), keepdims=True)),
          ("c64", np.cumsum(Z, 0)), ("c64", sa),
          ("c64", Z.transpose(2, 0, 1))])
    w = ("c64", pat([2, 3], 5, 4, 11, 0.5))
    W = vals([w], 0)
    src = ("graph cr { input %z: c64[3, 4, 5]  input %w: c64[2, 3]\n"
           "  %a = reduce_mean(%z, axes=[0, 2])\n"
           "  %b = reduce_mean(%z)\n"
           "  %c = reduce_prod(%w, axes=[1])\n"
           "  %d = reduce_prod(%w, keep_dims=true)\n"
           "  %e = reduce_prod(%z, axes=[2])\n"
           "  return %a, %b, %c, %d, %e }")
    case("cr", src, [z, w],
         [("c64", Z.mean(axis=(0, 2))), ("c64", Z.mean()),
          ("c64", W.prod(axis=1)), ("c64", W.prod(keepdims=True)),
          ("c64", Z.prod(axis=2))])


def xents():
    lg = ("f32", pat([6, 37], 7, 1, 53, 0.125))
    L = vals([lg], 0)
    lab = [3, 0, 36, 17, 5, 36]
    dl = ("f32", pat([6], 3, 1, 7, 0.5))
    D = vals([dl], 0)

    def xent(L, lab):
        m = L.max(axis=1)
        return m + np.log(np.exp(L - m[:, None]).sum(axis=1)) - \
            L[np.arange(len(lab)), lab]

    def xent_b(L, lab, D):
        p = softmax(L, 1)
        p[np.arange(len(lab)), lab] -= 1
        return p * D[:, None]
    for ldt in ("i32", "i64", "f32"):
        src = ("graph xe_%s { input %%l: f32[6, 37]  input %%y: %s[6]\n"
               "  input %%d: f32[6]\n"
               "  %%a = softmax_cross_entropy(%%l, %%y)\n"
               "  %%b = softmax_cross_entropy_backward(%%l, %%y, %%d)\n"
               "  return %%a, %%b }" % (ldt, ldt))
        case("xe_" + ldt, src, [lg, (ldt, lst([6], lab)), dl],
             [("f32", xent(L, lab)), ("f32", xent_b(L, lab, D))])
    src = ("graph xe_bad { input %l: f32[6, 37]  input %y: i64[6]\n"
           "  %a = softmax_cross_entropy(%l, %y)  return %a }")
    case("xe_bad", src, [lg, ("i64", lst([6], [1, 2, 3, 37, 0, 0]))], [], 1)
    src = ("graph xe_frac { input %l: f32[6, 37]  input %y: f32[6]\n"
           "  %a = softmax_cross_entropy(%l, %y)  return %a }")
    case("xe_frac", src, [lg, ("f32", lst([6], [1, 2, 3.5, 3, 0, 0]))],
         [], 1)
    src = ("graph xe_neg { input %l: f32[6, 37]  input %y: i32[6]\n"
           "  %a = softmax_cross_entropy(%l, %y)  return %a }")
    case("xe_neg", src, [lg, ("i32", lst([6], [1, -1, 3, 3, 0, 0]))],
         [], 1)



def _perm(k, n):
    """k, 2k, 3k, ... mod n: a permutation of range(n) (gcd(k, n) = 1)."""
    return [(i * k) % n for i in range(n)]


def xent_rows(L, lab):
    """(max - x[label]) + log sum exp(x - max): no cancellation."""
    m = L.max(axis=1)
    ls = np.log(np.exp(L - m[:, None]).sum(axis=1))
    return (m - L[np.arange(len(lab)), lab]) + ls


def xent_grad_rows(L, lab, D):
    p = softmax(L, 1)
    p[np.arange(len(lab)), lab] -= 1
    return p * D[:, None]


def xents_huge():
    """Huge logits (issue: lse - x[label] cancelled to 0 for rows of
    equal values 1e8); every dtype, with backward and log_softmax."""
    c = 37
    p = _perm(5, c)
    rows = {
        "f32": [[1e8] * c, [1e7] * c, [-1e8] * c, [3e38] * c,
                [1e7 + k for k in p], [1e8 + 8 * k for k in p]],
        "f64": [[1e17] * c, [1e16] * c, [-1e17] * c, [1e300] * c,
                [1e15 + k for k in p], [1e16 + 2 * k for k in p]],
        # exact in the format; column differences stay below 65504
        "f16": [[60000] * c, [59008 + 32 * k for k in p],
                [2048 + 2 * k for k in p], [-2048] * c],
        "bf16": [[2.0 ** 27] * c, [-2.0 ** 27] * c, [2.0 ** 100] * c,
                 [k * 0.25 - 4 for k in p]],
    }
    for dt, r in rows.items():
        n = len(r)
        lab = [(7 * i + 3) % c for i in range(n)]
        lg = (dt, lst([n, c], r))
        dl = (dt, pat([n], 3, 1, 7, 0.5))
        L, D = vals([lg], 0), vals([dl], 0)
        src = ("graph xh_%s { input %%l: %s[%d, %d]  input %%y: i32[%d]\n"
               "  input %%d: %s[%d]\n"
               "  %%a = softmax_cross_entropy(%%l, %%y)\n"
               "  %%b = softmax_cross_entropy_backward(%%l, %%y, %%d)\n"
               "  %%c = log_softmax(%%l)\n"
               "  %%e = log_softmax(%%l, axis=0)\n"
               "  return %%a, %%b, %%c, %%e }"
               % (dt, dt, n, c, n, dt, n))
        case("xh_" + dt, src, [lg, ("i32", lst([n], lab)), dl],
             [(dt, xent_rows(L, lab)), (dt, xent_grad_rows(L, lab, D)),
              (dt, log_softmax(L, 1)), (dt, log_softmax(L, 0))])


def topks():
    t = ("f32", lst([2, 7], [1, 5, 5, 2, 9, -1, 5, 0, 0, 3, -2, 3, 3, 8]))
    T = vals([t], 0)
    u = ("f64", pat([3, 50], 7, 3, 29, 0.5))
    U = vals([u], 0)

    def topk(x, k):  # stable: ties to the smaller index
        return np.argsort(-x, axis=-1, kind="stable")[..., :k]
    src = ("graph tk { input %t: f32[2, 7]  input %u: f64[3, 50]\n"
           "  %a = topk(%t, k=4)  %b = topk(%u, k=9)\n"
           "  return %a, %b }")
    case("tk", src, [t, u], [("i64", topk(T, 4)), ("i64", topk(U, 9))])
    topks_dtypes()


def topk_ref(x, k):
    """Indices of the k largest along the last axis: NaN largest, ties
    (and -0.0 == +0.0, NaN == NaN) to the smaller index."""
    x = np.asarray(x, dtype=np.float64)
    rows = x.reshape(-1, x.shape[-1])
    out = [sorted(range(len(r)), key=lambda i, r=r: (
        (0, 0.0, i) if math.isnan(r[i]) else (1, -r[i], i)))[:k]
        for r in rows]
    return np.array(out, dtype=np.int64).reshape(x.shape[:-1] + (k,))


def topks_dtypes():
    """topk on every other real dtype: integers (with their extremes),
    f16/bf16 (compared as f32: NaN, +-inf, -0.0 == +0.0, ties)."""
    ints = {"i8": [-128, 127, 5, 5, -1, 0, 127, -128],
            "u8": [0, 255, 7, 7, 128, 1, 255, 0],
            "i32": [-2147483648, 2147483647, 3, 3, -7, 0, 9, 3],
            "i64": [-(2 ** 40), 2 ** 40, 3, 3, -7, 0, 9, 3]}
    for dt, row in ints.items():
        x = ("list", [2, 8], [float(v) for v in row + row[::-1]])
        p = ("pat", [3, 40], 7, 3, 29, 1.0)
        X, P = make(dt, x), make(dt, p)
        src = ("graph tk_%s { input %%x: %s[2, 8]  input %%p: %s[3, 40]\n"
               "  %%a = topk(%%x, k=5)  %%b = topk(%%p, k=40)\n"
               "  %%c = topk(%%p, k=1)  return %%a, %%b, %%c }"
               % (dt, dt, dt))
        case("tk_" + dt, src, [(dt, x), (dt, p)],
             [("i64", topk_ref(X, 5)), ("i64", topk_ref(P, 40)),
              ("i64", topk_ref(P, 1))])
    nan, inf = float("nan"), float("inf")
    row = [1.5, -0.0, nan, 0.0, -inf, 1.5, inf, -2.0, nan, 0.0, -1.5, 3.0]
    for dt in ("f16", "bf16"):
        x = ("list", [2, 12], row + row[::-1])
        p = ("pat", [4, 33], 5, 1, 23, 0.25)
        X, P = make(dt, x), make(dt, p)
        src = ("graph tk_%s { input %%x: %s[2, 12]  input %%p: %s[4, 33]\n"
               "  %%a = topk(%%x, k=12)  %%b = topk(%%p, k=7)\n"
               "  return %%a, %%b }" % (dt, dt, dt))
        case("tk_" + dt, src, [(dt, x), (dt, p)],
             [("i64", topk_ref(X, 12)), ("i64", topk_ref(P, 7))])


# ---------------- data movement ----------------
def data():
    x = ("f32", pat([4, 5, 33], 7, 1, 97, 0.5))
    X = vals([x], 0)
    b = ("i8", pat([3, 1, 6], 5, 1, 101, 1))
    Bv = vals([b], 0)
    src = ("graph mv { input %x: f32[4, 5, 33]  input %b: i8[3, 1, 6]\n"
           "  %t = transpose(%x, perm=[2, 0, 1])\n"
           "  %u = transpose(%b, perm=[1, 2, 0])\n"
           "  %e = expand(%b, shape=[2, 3, 4, 6])\n"
           "  %c = concat(%x, %x, narrow(%x, axis=1, start=1, len=2), axis=1)\n"
           "  %n = narrow(%x, axis=2, start=30, len=3)\n"
           "  return %t, %u, %e, %c, %n }")
    case("mv", src, [x, b],
         [("f32", X.transpose(2, 0, 1)), ("i8", Bv.transpose(1, 2, 0)),
          ("i8", np.broadcast_to(Bv, (2, 3, 4, 6))),
          ("f32", np.concatenate([X, X, X[:, 1:3]], axis=1)),
          ("f32", X[:, :, 30:33])])
    big = ("f64", pat([300, 260], 7919, 1, 1001, 0.25))
    src = ("graph mvbig { input %x: f64[300, 260]\n"
           "  %t = transpose(%x, perm=[1, 0])\n"
           "  %s = reduce_sum(%t, axes=[1])\n"
           "  return %s }")
    case("mvbig", src, [big], [("f64", vals([big], 0).sum(axis=0))])
    tb = ("f32", pat([3, 6, 4], 5, 1, 31, 0.5))
    TB = vals([tb], 0)
    idx = [5, 0, 0, 2, 5]
    src = ("graph ga { input %t: f32[3, 6, 4]  input %i: i64[5]\n"
           "  input %f: f32[2, 2]  input %dy: f32[3, 5, 4]\n"
           "  %a = gather(%t, %i, axis=1)\n"
           "  %b = gather(%t, %f, axis=0)\n"
           "  %c = gather_backward(%dy, %i, axis=1, shape=[3, 6, 4])\n"
           "  return %a, %b, %c }")
    dy = ("f32", pat([3, 5, 4], 3, 2, 19, 0.25))
    DY = vals([dy], 0)
    gb = np.zeros((3, 6, 4))
    for k, j in enumerate(idx):
        gb[:, j, :] += DY[:, k, :]
    F = [[2, 0], [1, 2]]
    case("ga", src, [tb, ("i64", lst([5], idx)), ("f32", lst([2, 2], F)),
                     dy],
         [("f32", TB[:, idx, :]), ("f32", TB[np.array(F)]), ("f32", gb)])
    src = ("graph ga_neg { input %t: f32[3, 6, 4]  input %i: i32[2]\n"
           "  %a = gather(%t, %i, axis=1)  return %a }")
    case("ga_neg", src, [tb, ("i32", lst([2], [1, -1]))], [], 1)
    src = ("graph ga_big { input %t: f32[3, 6, 4]  input %i: i32[2]\n"
           "  %a = gather(%t, %i, axis=2)  return %a }")
    case("ga_big", src, [tb, ("i32", lst([2], [1, 4]))], [], 1)
    up = ("f64", pat([7, 3, 2], 5, 1, 23, 0.5))
    UP = vals([up], 0)
    si = [4, 0, 4, 4, 1, 0, 2]
    sa = np.zeros((5, 3, 2))
    for k, j in enumerate(si):
        sa[j] += UP[k]
    src = ("graph sc { input %u: f64[7, 3, 2]  input %i: i32[7]\n"
           "  %a = scatter_add(%u, %i, shape=[5, 3, 2])  return %a }")
    case("sc", src, [up, ("i32", lst([7], si))], [("f64", sa)])
    src = ("graph sc_bad { input %u: f64[7, 3, 2]  input %i: i32[7]\n"
           "  %a = scatter_add(%u, %i, shape=[5, 3, 2])  return %a }")
    case("sc_bad", src, [up, ("i32", lst([7], [0, 1, 2, 3, 4, 5, 0]))],
         [], 1)


# ---------------- control flow ----------------
def control():
    src = ("graph cell { input %h: f64[4]  input %w: f64[4]"
           "  input %x: f64[4]\n"
           "  %r = tanh(add(mul(%h, %w), %x))  return %r }\n"
           "graph sc_t { input %h0: f64[4]  input %w: f64[4]"
           "  input %xs: f64[6, 4]\n"
           "  %a = scan(%h0, %w, %xs, body=@cell, num_bcast=1)\n"
           "  %b = scan(%h0, %w, %xs, body=@cell, num_bcast=1,"
           " save_trajectory=true, checkpoints=2)\n"
           "  return %a, %b }")
    h0 = ("f64", pat([4], 3, 1, 9, 0.25))
    w = ("f64", pat([4], 5, 2, 7, 0.5))
    xs = ("f64", pat([6, 4], 7, 1, 13, 0.125))
    H, W, XS = vals([h0], 0), vals([w], 0), vals([xs], 0)
    traj = []
    h = H
    for t in range(6):
        h = np.tanh(h * W + XS[t])
        traj.append(h)
    case("sc_t", src, [h0, w, xs], [("f64", h), ("f64", np.array(traj))])
    for L in (1, 2, 3):
        src = ("graph cellf { input %%h: f32[3]  input %%x: f32[3]\n"
               "  %%r = add(mul(%%h, 0.5), %%x)  return %%r }\n"
               "graph sc_l%d { input %%h0: f32[3]  input %%xs: f32[%d, 3]\n"
               "  %%a = scan(%%h0, %%xs, body=@cellf)  return %%a }"
               % (L, L))
        hs = ("f32", pat([3], 3, 1, 9, 0.25))
        xx = ("f32", pat([L, 3], 5, 1, 11, 0.25))
        h = vals([hs], 0)
        for t in range(L):
            h = h * 0.5 + vals([xx], 0)[t]
        case("sc_l%d" % L, src, [hs, xx], [("f32", h)])
    src = ("graph wc { input %x: f64[2]  input %n: i32[]\n"
           "  %c = lt(%n, 100)  return %c }\n"
           "graph wb { input %x: f64[2]  input %n: i32[]\n"
           "  %y = mul(%x, 1.5)  %m = add(%n, 1)  return %y, %m }\n"
           "graph wl { input %x: f64[2]  input %n: i32[]\n"
           "  %a = while(%x, %n, cond=@wc, body=@wb, max_iterations=7)\n"
           "  %b = while(%x, %n, cond=@wc, body=@wb)\n"
           "  %c = while(%x, %n, cond=@wc, body=@wb, max_iterations=0)\n"
           "  return %a, %b, %c }")
    x = ("f64", lst([2], [1.0, -2.0]))
    X = vals([x], 0)
    case("wl", src, [x, ("i32", lst([], [95]))],
         [("f64", X * 1.5 ** 5), ("f64", X * 1.5 ** 5), ("f64", X)])
    src = ("graph tb { input %a: f32[3]  input %b: f32[3]\n"
           "  %r = sub(%a, %b)  return %r }\n"
           "graph eb { input %a: f32[3]  input %b: f32[3]\n"
           "  %r = div(%a, %b)  return %r }\n"
           "graph sq { input %a: f32[3]  %r = mul(%a, %a)  return %r }\n"
           "graph cf { input %p: i64[]  input %q: f64[]  input %a: f32[3]\n"
           "  input %b: f32[3]\n"
           "  %x = if(%p, %a, %b, then=@tb, else=@eb)\n"
           "  %y = if(%q, %a, %b, then=@tb, else=@eb)\n"
           "  %z = custom_fn(%a, fwd=@sq)\n"
           "  return %x, %y, %z }")
    a = ("f32", lst([3], [1, 2, 3]))
    b = ("f32", lst([3], [4, 8, 16]))
    A, B = vals([a], 0), vals([b], 0)
    case("cf", src, [("i64", lst([], [0])), ("f64", lst([], [-0.5])), a, b],
         [("f32", A / B), ("f32", A - B), ("f32", A * A)])
    control_dtypes()


def control_dtypes():
    """scan/while/if carrying i32, c64, f16, bool and u8 values, with f16
    and bf16 predicates (values exact in every dtype)."""
    src = ("graph sci { input %h: i32[3]  input %x: i32[3]\n"
           "  %r = add(mul(%h, 2), %x)  return %r }\n"
           "graph scc { input %h: c64[2]  input %x: c64[2]\n"
           "  %r = add(%h, %x)  return %r }\n"
           "graph sch { input %h: f16[3]  input %x: f16[3]\n"
           "  %r = add(%h, %x)  return %r }\n"
           "graph scb { input %h: bool[3]  input %x: bool[3]\n"
           "  %r = ne(%h, %x)  return %r }\n"
           "graph wcu { input %v: u8[2]  input %n: i8[]\n"
           "  %c = lt(%n, 4)  return %c }\n"
           "graph wbu { input %v: u8[2]  input %n: i8[]\n"
           "  %v2 = add(%v, %v)  %n2 = add(%n, 1)  return %v2, %n2 }\n"
           "graph tbb { input %a: bf16[2]  %r = neg(%a)  return %r }\n"
           "graph ebb { input %a: bf16[2]  return %a }\n"
           "graph cd { input %hi: i32[3]  input %xi: i32[4, 3]\n"
           "  input %hc: c64[2]  input %xc: c64[3, 2]\n"
           "  input %hh: f16[3]  input %xh: f16[2, 3]\n"
           "  input %hb: bool[3]  input %xb: bool[2, 3]\n"
           "  input %v: u8[2]  input %n: i8[]  input %ph: f16[]\n"
           "  input %pb: bf16[]  input %a: bf16[2]\n"
           "  %si = scan(%hi, %xi, body=@sci, save_trajectory=true)\n"
           "  %sc = scan(%hc, %xc, body=@scc)\n"
           "  %sh = scan(%hh, %xh, body=@sch)\n"
           "  %sb = scan(%hb, %xb, body=@scb, save_trajectory=true)\n"
           "  %w = while(%v, %n, cond=@wcu, body=@wbu)\n"
           "  %i1 = if(%ph, %a, then=@tbb, else=@ebb)\n"
           "  %i2 = if(%pb, %a, then=@tbb, else=@ebb)\n"
           "  return %si, %sc, %sh, %sb, %w, %i1, %i2 }")
    ins = [("i32", pat([3], 3, 1, 9, 1.0)),
           ("i32", pat([4, 3], 5, 2, 11, 1.0)),
           ("c64", pat([2], 3, 1, 9, 0.25)),
           ("c64", pat([3, 2], 5, 2, 11, 0.5)),
           ("f16", pat([3], 3, 1, 9, 0.25)),
           ("f16", pat([2, 3], 7, 1, 13, 0.5)),
           ("bool", lst([3], [1, 0, 0])),
           ("bool", lst([2, 3], [1, 1, 0, 0, 1, 0])),
           ("u8", lst([2], [3, 20])), ("i8", lst([], [0])),
           ("f16", lst([], [0.0])), ("bf16", lst([], [-0.5])),
           ("bf16", lst([2], [1.5, -2.0]))]
    V = [vals(ins, k) for k in range(len(ins))]
    h, traj = V[0], []
    for t in range(4):
        h = h * 2 + V[1][t]
        traj.append(h)
    hb, trb = V[6] != 0, []
    for t in range(2):
        hb = hb != (V[7][t] != 0)
        trb.append(hb)
    w = (V[8].astype(np.int64) * 16) % 256
    case("cd", src, ins,
         [("i32", np.array(traj)), ("c64", V[2] + V[3].sum(0)),
          ("f16", V[4] + V[5].sum(0)), ("bool", np.array(trb)),
          ("u8", w), ("bf16", V[12]), ("bf16", -V[12])])


# ---------------- backward ops ----------------
def d_act(kind, x):
    """f'(x) of an activation kind: torch autograd when available (not
    for relu), else the NumPy derivative of tests/tools/op_refs.py."""
    if torch is not None and kind != "relu":
        t = torch.tensor(x, dtype=torch.float64, requires_grad=True)
        R.torch_fn(kind)(t).sum().backward()
        return t.grad.numpy()
    return R.act(kind, x)[1]


def backward():
    kinds = R.ACT_KINDS
    pos = {k for k in kinds if R.UNARY[k].dom == "pos"}
    for dt in ("f64", "f32"):
        xs = ("f64" if dt == "f64" else "f32",
              pat([3, 11], 7, 1, 33, 0.0625))
        xp = (dt, pat([3, 11], 7, 1, 33, 0.0625))
        dy = (dt, pat([3, 11], 5, 2, 17, 0.5))
        X, DY = vals([xs], 0), vals([dy], 0)
        XP = X + 2.25
        lines, outs = [], []
        for k in kinds:
            src_x = "%xp" if k in pos else "%x"
            lines.append("  %%%s = activation_backward(%s, %%dy, kind=%s)"
                         % (k, src_x, k))
            xv = XP if k in pos else X
            outs.append((dt, DY * d_act(k, xv)))
        lines.append("  %rb = relu_backward(%x, %dy)")
        outs.append((dt, DY * (X > 0)))
        src = ("graph ab_%s { input %%x: %s[3, 11]  input %%dy: %s[3, 11]\n"
               "  %%xp = add(%%x, 2.25)\n%s\n  return %s, %%rb }"
               % (dt, dt, dt, "\n".join(lines),
                  ", ".join("%" + k for k in kinds)))
        case("ab_" + dt, src, [xp, dy], outs)
    # long f32 rows: parallel vector blocks (erf/tanh approximations)
    x = ("f32", pat([4100], 7919, 1, 2001, 1.0 / 256))
    dy = ("f32", pat([4100], 13, 2, 17, 0.5))
    X, DY = vals([x], 0), vals([dy], 0)
    ks = ["gelu", "gelu_tanh", "tanh", "sigmoid"]
    src = ("graph ab_long { input %%x: f32[4100]  input %%dy: f32[4100]\n"
           "%s\n  return %s }" % (
               "\n".join("  %%%s = activation_backward(%%x, %%dy, kind=%s)"
                         % (k, k) for k in ks),
               ", ".join("%" + k for k in ks)))
    case("ab_long", src, [x, dy], [("f32", DY * d_act(k, X)) for k in ks])
    # gelu_tanh far out (x in [-12, -6)): value and derivative are 0
    # where -2u > 40 (docs/decisions-codegen.md), so no subnormal comes
    # out: scaled by 2^100 / 2^60, the subnormals of the plain formula
    # (x near -9.5) and the tiny values below x = -9 would be far from 0
    for dt in ("f32", "f64"):
        x = (dt, pat([192], 1, 0, 768, 1.0 / 32))
        X = vals([x], 0)
        m2u = -2 * 0.7978845608028654 * (X + 0.044715 * X ** 3)
        e = np.exp(np.minimum(np.maximum(m2u, -40), 40))
        sg = 1 / (1 + e)
        du = 2 * 0.7978845608028654 * (1 + 3 * 0.044715 * X * X)
        far = m2u > 40
        y = np.where(far, 0, X / (1 + e))
        d = np.where(far, 0, sg + X * sg * (1 - sg) * du)
        src = ("graph gt_far_%s { input %%x: %s[192]\n"
               "  %%y = mul(gelu_tanh(%%x), 1.2676506002282294e30)\n"
               "  %%one = add(mul(%%x, 0), 1.152921504606847e18)\n"
               "  %%d = activation_backward(%%x, %%one, kind=gelu_tanh)\n"
               "  return %%y, %%d }" % (dt, dt))
        case("gt_far_" + dt, src, [x],
             [(dt, y * 2.0 ** 100), (dt, d * 2.0 ** 60)])


def c_double(v, digits=17):
    if isinstance(v, (bool, np.bool_)):
        return "1" if v else "0"
    v = float(v)
    if math.isnan(v):
        return "NAN"
    if math.isinf(v):
        return "INFINITY" if v > 0 else "-INFINITY"
    return repr(v) if digits == 17 else "%.*g" % (digits, v)


def emit(f):
    f.write("/* generated by test_codegen_ops_gen.py -- do not edit */\n")
    for ci, (name, src, ins, outs, rc, tol) in enumerate(CASES):
        for k, (dt, spec) in enumerate(ins):
            if spec[0] == "list":
                f.write("static const double c%d_l%d[] = {%s};\n" % (
                    ci, k, ", ".join(c_double(v) for v in spec[2]) or "0"))
        for k, (dt, arr) in enumerate(outs):
            a = np.asarray(arr)
            if dt == "c64":
                a = np.stack([a.real, a.imag], -1)
            a = a.astype(np.float64).ravel()
            dg = 17 if dt in ("f64", "i64") else 10
            f.write("static const double c%d_o%d[] = {%s};\n" % (
                ci, k, ", ".join(c_double(v, dg) for v in a)))
        f.write("static const OpsIn c%d_in[] = {\n" % ci)
        for k, (dt, spec) in enumerate(ins):
            n = int(np.prod(spec[1])) * (2 if dt == "c64" else 1)
            if spec[0] == "pat":
                _, _, a, b, m, s = spec
                f.write("  {%d, %d, %d, %d, %r, NULL},\n" % (n, a, b, m, s))
            else:
                f.write("  {%d, 0, 0, 0, 0, c%d_l%d},\n" % (n, ci, k))
        f.write("};\n")
        f.write("static const OpsOut c%d_out[] = {\n" % ci)
        for k, (dt, arr) in enumerate(outs):
            t = tol if tol is not None else TOL.get(dt, 0.0)
            f.write("  {%d, %r, c%d_o%d},\n" % (
                np.asarray(arr).size * (2 if dt == "c64" else 1), t, ci, k))
        if not outs:
            f.write("  {0, 0, NULL},\n")
        f.write("};\n")
    f.write("static const OpsCase ops_cases[] = {\n")
    for ci, (name, src, ins, outs, rc, tol) in enumerate(CASES):
        f.write("  {%s, %s, %d, c%d_in, %d, c%d_out, %d},\n" % (
            cstr(name), cstr(src), len(ins), ci, len(outs), ci, rc))
    f.write("};\n")


def cstr(s):
    return '"' + s.replace("\\", "\\\\").replace('"', '\\"').replace(
        "\n", '\\n"\n    "') + '"'


def masked_softmax():
    """Masks: -inf, -1e9 and scores 85-120 below the row's max (the f32
    exp's select below -104, its subnormal range, exp(-inf) = 0); 3 x 40:
    vector lanes and a scalar tail."""
    inf = float("inf")
    row = [0.5, -inf, 2.0, -1e9, -100.0, -103.5, -104.5, -110.0, -88.0,
           -95.0, 1.25, -inf, -inf, -inf, -inf, -inf, -inf, 3.0, -inf,
           -1e30, -118.0, -106.0, -102.0, -87.0, -inf, 0.0, -0.5, -inf,
           -inf, -inf, -inf, -1e9, -1e9, 4.0, -inf, -inf, -inf, -inf,
           -90.0, -inf]
    mk = ("f32", lst([3, 40], [row, [v - 1.0 for v in row],
                               [-inf] * 39 + [7.0]]))
    MK = vals([mk], 0)
    src = ("graph smx_mask { input %m: f32[3, 40]\n"
           "  %a = softmax(%m, axis=1)\n  %b = exp(%m)\n"
           "  %c = log_softmax(%m, axis=1)\n"
           "  return %a, %b, %c }")
    with np.errstate(invalid="ignore"):
        case("smx_mask", src, [mk],
             [("f32", softmax(MK, 1)), ("f32", np.exp(MK)),
              ("f32", log_softmax(MK, 1))])


def main():
    reductions()
    softmaxes()
    xents()
    complexes()
    topks()
    data()
    control()
    backward()
    xents_huge()
    masked_softmax()
    here = os.path.dirname(os.path.abspath(__file__))
    with open(os.path.join(here, "test_codegen_ops_data.h"), "w") as f:
        emit(f)


if __name__ == "__main__":
    main()
