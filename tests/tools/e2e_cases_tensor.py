"""e2e_cases_tensor.py -- end-to-end cases for language.md 6.2-6.4.

matmul (2-D, batch broadcast, transposed operands, odd sizes),
reductions over every axes pattern (non-contiguous, keep_dims),
softmax / log_softmax / cumsum on every axis, softmax_cross_entropy
(i32 / i64 / f32 labels, bad label -> RLX_ERR_INDEX), topk with ties,
reshape / transpose / expand / concat / narrow, gather and scatter_add
with every index dtype, duplicates and out-of-range indices, constants.
References: NumPy / PyTorch in float64.
"""
import numpy as np
import torch

from e2e_lib import T, case, out, outs_str, tt, uni

ERR_INDEX = "1"  # RLX_ERR_INDEX in rlxrt.h

# ---------------------------------------------------------------- 6.2


@case()
def matmul_2d(c, rng):
    a, b = T("f32", uni(rng, (5, 7)), "a"), T("f32", uni(rng, (7, 3)), "b")
    x, y = T("f64", uni(rng, (4, 6)), "x"), T("f64", uni(rng, (6, 5)), "y")
    u, v = T("f32", uni(rng, (1, 9)), "u"), T("f32", uni(rng, (9, 1)), "v")
    outs = [out("f32", a.v @ b.v, "ab"), out("f64", x.v @ y.v, "xy"),
            out("f32", u.v @ v.v, "uv"), out("f32", v.v @ u.v, "vu")]
    c.graph([a, b, x, y, u, v], "%ab = matmul(%a, %b)\n%xy = matmul(%x, %y)"
            "\n%uv = matmul(%u, %v)\n%vu = matmul(%v, %u)", outs_str(outs),
            comment="2-D matmul, f32 and f64, 1xN and Nx1")
    c.run([a, b, x, y, u, v], outs)


@case()
def matmul_large(c, rng):
    a = T("f32", uni(rng, (67, 131)), "a")
    b = T("f32", uni(rng, (131, 37)), "b")
    x, y = T("f64", uni(rng, (33, 65)), "x"), T("f64", uni(rng, (65, 17)), "y")
    outs = [out("f32", a.v @ b.v, "ab"), out("f64", x.v @ y.v, "xy")]
    c.graph([a, b, x, y], "%ab = matmul(%a, %b)\n%xy = matmul(%x, %y)",
            outs_str(outs), comment="matmul with sizes past one GEMM block")
    c.run([a, b, x, y], outs)


@case()
def matmul_batch(c, rng):
    a = T("f32", uni(rng, (2, 1, 4, 5)), "a")
    b = T("f32", uni(rng, (3, 5, 6)), "b")
    x = T("f64", uni(rng, (3, 4, 5)), "x")
    y = T("f64", uni(rng, (5, 2)), "y")
    p = T("f64", uni(rng, (2, 3)), "p")
    q = T("f64", uni(rng, (4, 3, 2)), "q")
    outs = [out("f32", np.matmul(a.v, b.v), "ab"),
            out("f64", np.matmul(x.v, y.v), "xy"),
            out("f64", np.matmul(p.v, q.v), "pq")]
    c.graph([a, b, x, y, p, q], "%ab = matmul(%a, %b)\n"
            "%xy = matmul(%x, %y)\n%pq = matmul(%p, %q)", outs_str(outs),
            comment="batched matmul with broadcast batch dimensions")
    c.run([a, b, x, y, p, q], outs)


@case()
def matmul_transposed(c, rng):
    a = T("f32", uni(rng, (6, 4)), "a")
    b = T("f32", uni(rng, (5, 6)), "b")
    x = T("f64", uni(rng, (2, 5, 3)), "x")
    y = T("f64", uni(rng, (2, 4, 5)), "y")
    outs = [out("f32", a.v.T @ b.v.T, "tt"),
            out("f32", a.v.T @ a.v, "ta"),
            out("f64", np.matmul(x.v.transpose(0, 2, 1),
                                 y.v.transpose(0, 2, 1)), "xy")]
    c.graph([a, b, x, y],
            "%at = transpose(%a, perm=[1, 0])\n"
            "%bt = transpose(%b, perm=[1, 0])\n%tt = matmul(%at, %bt)\n"
            "%ta = matmul(%at, %a)\n"
            "%xt = transpose(%x, perm=[0, 2, 1])\n"
            "%xy = matmul(%xt, transpose(%y, perm=[0, 2, 1]))",
            outs_str(outs), comment="matmul of transposed operands")
    c.run([a, b, x, y], outs)


@case()
def matmul_c64(c, rng):
    def cplx(shape):
        return uni(rng, shape) + 1j * uni(rng, shape)
    a, b = T("c64", cplx((3, 4)), "a"), T("c64", cplx((4, 2)), "b")
    x, y = T("c64", cplx((2, 3, 5)), "x"), T("c64", cplx((5, 4)), "y")
    outs = [out("c64", a.v @ b.v, "ab"), out("c64", np.matmul(x.v, y.v),
                                              "xy")]
    c.graph([a, b, x, y], "%ab = matmul(%a, %b)\n%xy = matmul(%x, %y)",
            outs_str(outs), comment="complex (c64) matmul, plain product")
    c.run([a, b, x, y], outs)


@case()
def empty_tensors(c, rng):
    e = T("f32", np.zeros((0, 3)), "e")
    b = T("f32", uni(rng, (3,)), "b")
    k0 = T("f64", np.zeros((2, 0)), "k0")
    m = T("f64", np.zeros((0, 3)), "m")
    d = T("f64", uni(rng, (2, 3)), "d")
    outs = [out("f32", e.v + b.v, "s"), out("f32", e.v.sum(0), "r"),
            out("f64", k0.v @ m.v, "mm"),
            out("f64", np.concatenate([k0.v, d.v], 1), "cc")]
    c.graph([e, b, k0, m, d], "%s = add(%e, %b)\n"
            "%r = reduce_sum(%e, axes=[0])\n%mm = matmul(%k0, %m)\n"
            "%cc = concat(%k0, %d, axis=1)", outs_str(outs),
            comment="empty tensors: elementwise, sum over an empty axis,\n"
            "matmul with K = 0, concat with an empty operand")
    c.run([e, b, k0, m, d], outs)


# ---------------------------------------------------------------- 6.3

RED = {"reduce_sum": np.sum, "reduce_mean": np.mean, "reduce_max": np.max,
       "reduce_min": np.min, "reduce_prod": np.prod}
AXES3 = [None, [0], [1], [2], [-1], [0, 2], [0, 1], [1, 2], [0, 1, 2],
         [2, 0]]
AXES4 = [[1, 3], [0, 3], [0, 2, 3]]


def _attr(axes, keep):
    s = "" if axes is None else ", axes=[%s]" % ", ".join(map(str, axes))
    return s + (", keep_dims=true" if keep else "")


def _reduce_case(op, dt):
    def build(c, rng):
        lo, hi = (0.6, 1.5) if op == "reduce_prod" else (-2, 2)
        xv = uni(rng, (3, 4, 5), lo, hi)
        if op in ("reduce_max", "reduce_min"):
            xv = rng.integers(-3, 4, (3, 4, 5)) / 2.0  # ties
        x = T(dt, xv, "x")
        z = T(dt, uni(rng, (2, 3, 4, 5), lo, hi), "z")
        fn, body, outs = RED[op], [], []
        pats = [(x, a, False) for a in AXES3] + [(z, a, False) for a in AXES4]
        pats += [(x, [0, 2], True), (x, [1], True), (z, [1, 3], True),
                 (x, None, True)]
        for i, (t, axes, keep) in enumerate(pats):
            ax = None if axes is None else tuple(axes)
            body.append("%%r%d = %s(%%%s%s)" % (i, op, t.name,
                                                 _attr(axes, keep)))
            outs.append(out(dt, fn(t.v, axis=ax, keepdims=keep), "r%d" % i))
        c.graph([x, z], "\n".join(body), outs_str(outs),
                comment="%s over every axes pattern, %s" % (op, dt))
        c.run([x, z], outs)
    case("%s_%s" % (op, dt))(build)


for _op in RED:
    for _dt in ("f32", "f64"):
        _reduce_case(_op, _dt)


def _softmax_case(dt):
    def build(c, rng):
        xv = uni(rng, (3, 4, 5), -3, 3)
        xv[0, 0, :] += 1000.0  # stability: a naive exp overflows
        x = T(dt, xv, "x")
        body, outs = [], []
        for ax in (0, 1, 2, -1, None):
            for op, f in (("softmax", torch.softmax),
                          ("log_softmax", torch.log_softmax)):
                nm = "%s_%s" % (op, "d" if ax is None else str(ax)
                                .replace("-", "m"))
                attr = "" if ax is None else ", axis=%d" % ax
                body.append("%%%s = %s(%%x%s)" % (nm, op, attr))
                outs.append(out(dt, f(tt(x.v), -1 if ax is None else ax)
                                .numpy(), nm))
        c.graph([x], "\n".join(body), outs_str(outs),
                comment="softmax and log_softmax on every axis, %s" % dt)
        c.run([x], outs)
    case("softmax_" + dt)(build)


def _cumsum_case(dt):
    def build(c, rng):
        x = T(dt, uni(rng, (3, 4, 5), -2, 2), "x")
        body, outs = [], []
        for ax in (0, 1, 2, -1, None):
            for excl in (False, True):
                axn = 2 if ax is None else ax
                r = np.cumsum(x.v, axis=axn)
                if excl:
                    r = r - x.v
                nm = "c%s_%s" % ("d" if ax is None else str(ax)
                                 .replace("-", "m"), "ex" if excl else "in")
                attr = "" if ax is None else ", axis=%d" % ax
                attr += ", exclusive=true" if excl else ""
                body.append("%%%s = cumsum(%%x%s)" % (nm, attr))
                outs.append(out(dt, r, nm))
        c.graph([x], "\n".join(body), outs_str(outs),
                comment="cumsum inclusive and exclusive on every axis, "
                "%s" % dt)
        c.run([x], outs)
    case("cumsum_" + dt)(build)


for _dt in ("f32", "f64"):
    _softmax_case(_dt)
    _cumsum_case(_dt)


def _xent(logits, labels):
    lse = torch.logsumexp(tt(logits), dim=1).numpy()
    return lse - logits[np.arange(len(labels)), labels.astype(np.int64)]


@case()
def softmax_xent(c, rng):
    l1 = T("f32", uni(rng, (6, 5), -3, 3), "l1")
    y1 = T("i32", [0, 4, 2, 2, 1, 3], "y1")
    l2 = T("f64", uni(rng, (4, 7), -3, 3), "l2")
    y2 = T("i64", [6, 0, 3, 3], "y2")
    y3 = T("f32", [1, 1, 0, 4, 3, 2], "y3")
    lv = l1.v.copy()
    outs = [out("f32", _xent(l1.v, y1.v), "e1"),
            out("f64", _xent(l2.v, y2.v), "e2"),
            out("f32", _xent(lv, y3.v), "e3")]
    c.graph([l1, y1, l2, y2, y3], "%e1 = softmax_cross_entropy(%l1, %y1)\n"
            "%e2 = softmax_cross_entropy(%l2, %y2)\n"
            "%e3 = softmax_cross_entropy(%l1, %y3)", outs_str(outs),
            comment="softmax_cross_entropy with i32, i64 and f32 labels")
    c.run([l1, y1, l2, y2, y3], outs)


@case()
def softmax_xent_bad_label(c, rng):
    l1 = T("f32", uni(rng, (3, 5)), "l")
    c.graph([l1, T("i32", [0, 5, 1], "y")],
            "%e = softmax_cross_entropy(%l, %y)", "%e",
            comment="a label >= C must return RLX_ERR_INDEX")
    c.run([l1, T("i32", [0, 5, 1], "y")], [], sub="hi",
          args=["--expect", ERR_INDEX])
    c.run([l1, T("i32", [0, 1, -1], "y")], [], sub="neg",
          args=["--expect", ERR_INDEX])


def _topk_ref(x, k):
    # stable sort on -x: descending, ties to the smaller index
    return np.argsort(-x, axis=-1, kind="stable")[..., :k]


@case()
def topk(c, rng):
    a = T("f32", rng.integers(-3, 4, (4, 10)) / 2.0, "a")
    b = T("f64", uni(rng, (2, 3, 6)), "b")
    d = T("f32", [[1, 1, 1, 1, 1], [5, 4, 3, 2, 1]], "d")
    outs = [out("i64", _topk_ref(a.v, 3), "ta"),
            out("i64", _topk_ref(b.v, 2), "tb"),
            out("i64", _topk_ref(d.v, 5), "td"),
            out("i64", _topk_ref(a.v, 1), "t1")]
    c.graph([a, b, d], "%ta = topk(%a, k=3)\n%tb = topk(%b, k=2)\n"
            "%td = topk(%d, k=5)\n%t1 = topk(%a, k=1)", outs_str(outs),
            comment="topk: i64 indices, descending, ties to smaller index")
    c.run([a, b, d], outs)


# ---------------------------------------------------------------- 6.4


@case()
def reshape(c, rng):
    x = T("f32", uni(rng, (2, 3, 4)), "x")
    s = T("f64", uni(rng, ()), "s")
    shapes = [[6, 4], [4, -1], [24], [2, 12], [1, 24, 1], [-1, 3, 2]]
    body = ["%%r%d = reshape(%%x, shape=[%s])" % (i, ", ".join(map(str, sh)))
            for i, sh in enumerate(shapes)]
    outs = [out("f32", x.v.reshape(sh), "r%d" % i)
            for i, sh in enumerate(shapes)]
    body.append("%rs = reshape(%s, shape=[1, 1])")
    outs.append(out("f64", s.v.reshape(1, 1), "rs"))
    c.graph([x, s], "\n".join(body), outs_str(outs),
            comment="reshape, including -1 and rank 0")
    c.run([x, s], outs)


@case()
def transpose(c, rng):
    x = T("f32", uni(rng, (2, 3, 4)), "x")
    y = T("f64", uni(rng, (2, 3, 4, 5)), "y")
    m = T("f32", uni(rng, (5, 7)), "m")
    pats = [(x, [2, 0, 1]), (x, [1, 0, 2]), (x, [0, 2, 1]),
            (y, [3, 1, 0, 2]), (y, [0, 1, 2, 3]), (m, [1, 0])]
    body, outs = [], []
    for i, (t, p) in enumerate(pats):
        body.append("%%r%d = transpose(%%%s, perm=[%s])" %
                    (i, t.name, ", ".join(map(str, p))))
        outs.append(out(t.dt, t.v.transpose(p), "r%d" % i))
    c.graph([x, y, m], "\n".join(body), outs_str(outs),
            comment="transpose with several permutations")
    c.run([x, y, m], outs)


@case()
def expand(c, rng):
    a = T("f32", uni(rng, (3, 1)), "a")
    b = T("f64", uni(rng, (4,)), "b")
    s = T("f32", uni(rng, ()), "s")
    d = T("f32", uni(rng, (1, 1, 5)), "d")
    pats = [(a, [2, 3, 4]), (b, [3, 4]), (s, [2, 2]), (d, [2, 3, 5]),
            (a, [3, 1])]
    body, outs = [], []
    for i, (t, sh) in enumerate(pats):
        body.append("%%r%d = expand(%%%s, shape=[%s])" %
                    (i, t.name, ", ".join(map(str, sh))))
        outs.append(out(t.dt, np.broadcast_to(t.v, sh), "r%d" % i))
    c.graph([a, b, s, d], "\n".join(body), outs_str(outs),
            comment="expand = numpy broadcast_to")
    c.run([a, b, s, d], outs)


@case()
def concat(c, rng):
    a, b = T("f32", uni(rng, (2, 3)), "a"), T("f32", uni(rng, (2, 1)), "b")
    d = T("f32", uni(rng, (2, 4)), "d")
    e = T("f32", uni(rng, (1, 3)), "e")
    x = T("f64", uni(rng, (2, 3, 2)), "x")
    y = T("f64", uni(rng, (2, 3, 3)), "y")
    outs = [out("f32", np.concatenate([a.v, b.v, d.v], 1), "c1"),
            out("f32", np.concatenate([a.v, e.v], 0), "c0"),
            out("f64", np.concatenate([x.v, y.v, x.v], -1), "cm"),
            out("f32", np.concatenate([e.v], 0), "c_one")]
    c.graph([a, b, d, e, x, y], "%c1 = concat(%a, %b, %d, axis=1)\n"
            "%c0 = concat(%a, %e, axis=0)\n%cm = concat(%x, %y, %x, axis=-1)"
            "\n%c_one = concat(%e)", outs_str(outs),
            comment="concat along several axes, 1 to 3 operands")
    c.run([a, b, d, e, x, y], outs)


@case()
def narrow(c, rng):
    x = T("f32", uni(rng, (4, 5, 6)), "x")
    y = T("f64", uni(rng, (3, 7)), "y")
    pats = [(x, 0, 1, 2), (x, 1, 0, 5), (x, 2, 3, 3), (x, -1, 5, 1),
            (y, 1, 2, 4), (y, 0, 2, 1)]
    body, outs = [], []
    for i, (t, ax, st, ln) in enumerate(pats):
        body.append("%%r%d = narrow(%%%s, axis=%d, start=%d, len=%d)" %
                    (i, t.name, ax, st, ln))
        outs.append(out(t.dt, np.take(t.v, range(st, st + ln), axis=ax),
                        "r%d" % i))
    c.graph([x, y], "\n".join(body), outs_str(outs),
            comment="narrow along every axis")
    c.run([x, y], outs)


@case()
def gather(c, rng):
    t1 = T("f32", uni(rng, (5, 3)), "t1")
    i1 = T("i32", [4, 0, 4, 2], "i1")
    t2 = T("f64", uni(rng, (4, 6)), "t2")
    i2 = T("i64", [[5, 0, 1], [1, 1, 3]], "i2")
    t3 = T("f32", uni(rng, (3, 4, 2)), "t3")
    i3 = T("f32", [1, 0, 0, 1, 1], "i3")
    i4 = T("i32", 2, "i4")
    outs = [out("f32", np.take(t1.v, i1.v, 0), "g1"),
            out("f64", np.take(t2.v, i2.v, 1), "g2"),
            out("f32", np.take(t3.v, i3.v.astype(int), 2), "g3"),
            out("f32", np.take(t1.v, i4.v, 0), "g4")]
    c.graph([t1, i1, t2, i2, t3, i3, i4], "%g1 = gather(%t1, %i1)\n"
            "%g2 = gather(%t2, %i2, axis=1)\n%g3 = gather(%t3, %i3, axis=2)"
            "\n%g4 = gather(%t1, %i4, axis=0)", outs_str(outs),
            comment="gather (numpy take) with i32, i64, f32 and rank-0 "
            "indices")
    c.run([t1, i1, t2, i2, t3, i3, i4], outs)


@case()
def gather_out_of_range(c, rng):
    t = T("f32", uni(rng, (5, 3)), "t")
    c.graph([t, T("i64", [0, 5], "i")], "%g = gather(%t, %i)", "%g",
            comment="an index >= dim returns RLX_ERR_INDEX")
    c.run([t, T("i64", [0, 5], "i")], [], sub="hi",
          args=["--expect", ERR_INDEX, "--null-ws"])
    c.run([t, T("i64", [2, 9999999], "i")], [], sub="far",
          args=["--expect", ERR_INDEX])


def _scatter(upd, idx, shape):
    r = np.zeros(shape)
    np.add.at(r, idx.astype(np.int64), upd)
    return r


@case()
def scatter_add(c, rng):
    u1 = T("f32", uni(rng, (6, 3)), "u1")
    i1 = T("i32", [1, 3, 1, 0, 1, 3], "i1")
    u2, i2 = T("f64", uni(rng, (5,)), "u2"), T("i64", [2, 2, 2, 0, 2], "i2")
    u3, i3 = T("f32", uni(rng, (4, 2, 2)), "u3"), T("f32", [4, 0, 4, 4], "i3")
    outs = [out("f32", _scatter(u1.v, i1.v, (4, 3)), "s1"),
            out("f64", _scatter(u2.v, i2.v, (3,)), "s2"),
            out("f32", _scatter(u3.v, i3.v, (5, 2, 2)), "s3")]
    c.graph([u1, i1, u2, i2, u3, i3],
            "%s1 = scatter_add(%u1, %i1, shape=[4, 3])\n"
            "%s2 = scatter_add(%u2, %i2, shape=[3])\n"
            "%s3 = scatter_add(%u3, %i3, shape=[5, 2, 2])", outs_str(outs),
            comment="scatter_add with duplicate indices, i32/i64/f32")
    c.run([u1, i1, u2, i2, u3, i3], outs)


@case()
def scatter_add_out_of_range(c, rng):
    u = T("f32", uni(rng, (3, 2)), "u")
    c.graph([u, T("i32", [0, 1, 4], "i")],
            "%s = scatter_add(%u, %i, shape=[4, 2])", "%s",
            comment="an index >= shape[0] returns RLX_ERR_INDEX")
    c.run([u, T("i32", [0, 1, 4], "i")], [], sub="hi",
          args=["--expect", ERR_INDEX])


@case()
def constants(c, rng):
    x = T("f32", uni(rng, (2, 3)), "x")
    y = T("f64", uni(rng, (3,)), "y")
    k = T("i32", [5, -6], "k")
    cm = np.arange(1, 7, dtype=np.float64).reshape(2, 3)
    d = np.array([1e-3, -2.5, 3.0])
    outs = [out("f32", x.v + cm, "r0"), out("f32", np.full((2, 3), 0.5),
                                             "r1"),
            out("f64", y.v * d, "r2"), out("i32", k.v + [7, -8], "r3")]
    c.graph([x, y, k],
            "%c = const f32[2, 3] [1, 2, 3, 4, 5, 6]\n%r0 = add(%x, %c)\n"
            "%r1 = const f32[2, 3] 0.5\n"
            "%d = const f64[3] [1e-3, -2.5, 3.0]\n%r2 = mul(%y, %d)\n"
            "%e = const i32[2] [7, -8]\n%r3 = add(%k, %e)", outs_str(outs),
            comment="constants: flat lists, splats, f32/f64/i32")
    c.run([x, y, k], outs)


# ------------------------------------------- other dtypes

def _dtype_vals(rng, dt, shape):
    if dt == "bool":
        return rng.integers(0, 2, shape)
    if dt == "u8":
        return rng.integers(0, 12, shape)
    if dt in ("i8", "i32", "i64"):
        return rng.integers(-9, 10, shape)
    if dt == "c64":
        return rng.integers(-8, 9, shape) / 4 + 1j * rng.integers(-8, 9,
                                                                  shape) / 4
    return rng.integers(-40, 41, shape) / 8.0  # f16 / bf16: exact values


def _dtype_case(dt):
    def build(c, rng):
        x = T(dt, _dtype_vals(rng, dt, (2, 3)), "x")
        y = T(dt, _dtype_vals(rng, dt, (2, 3)), "y")
        i = T("i32", [2, 0], "i")
        j = T("i64", [3, 3], "j")
        m = T("bool", rng.integers(0, 2, (2, 3)), "m")
        xv, yv = x.v, y.v
        ops = [("t", "transpose(%x, perm=[1, 0])", xv.T),
               ("r", "reshape(%x, shape=[6])", xv.reshape(6)),
               ("e", "expand(reshape(%x, shape=[1, 2, 3]), shape=[2, 2, 3])",
                np.broadcast_to(xv, (2, 2, 3))),
               ("n", "narrow(%x, axis=1, start=1, len=2)", xv[:, 1:]),
               ("cc", "concat(%x, narrow(%y, axis=1, start=1, len=2), "
                "axis=1)", np.concatenate([xv, yv[:, 1:]], 1)),
               ("g", "gather(%x, %i, axis=1)", np.take(xv, i.v, 1)),
               ("w", "where(%m, %x, %y)", np.where(m.v != 0, xv, yv))]
        if dt != "c64":
            ops += [("q", "eq(%x, %y)", xv == yv)]
        if dt != "bool":
            ops += [("a", "add(%x, %y)", xv + yv),
                    ("mu", "mul(%x, %y)", xv * yv)]
        if dt not in ("bool", "c64"):  # c64: see scatter_add_c64
            sa = np.zeros((4, 3), dtype=xv.dtype)
            np.add.at(sa, j.v, xv)
            ops += [("sa", "scatter_add(%x, %j, shape=[4, 3])", sa)]
        if dt in ("i8", "i32", "i64"):
            ops += [("ng", "neg(%x)", -xv)]
        if dt in ("i8", "u8", "i32", "i64"):
            ops += [("rs", "reduce_sum(%x, axes=[1])", xv.sum(1)),
                    ("mx", "reduce_max(%x, axes=[0])", xv.max(0)),
                    ("cs", "cumsum(%x, axis=1)", np.cumsum(xv, 1))]
        outs = []
        for nm, _, v in ops:
            odt = "bool" if nm == "q" else dt
            outs.append(out(odt, v, nm))
        c.graph([x, y, i, j, m], "\n".join("%%%s = %s" % (nm, e)
                                            for nm, e, _ in ops),
                outs_str(outs), comment="data movement and simple "
                "arithmetic on %s" % dt)
        c.run([x, y, i, j, m], outs)
    case("dtype_" + dt)(build)


for _dt in ("i8", "u8", "i32", "i64", "bool", "f16", "bf16", "c64"):
    _dtype_case(_dt)


@case()
def topk_int(c, rng):
    """topk of every integer dtype (ties to the smaller index, extremes
    of each range)."""
    a = T("i32", rng.integers(-3, 4, (3, 6)), "a")
    b = T("i64", rng.integers(-3, 4, (5,)), "b")
    e = T("i8", [-128, 127, 0, -1, 127, -128, 5], "e")
    u = T("u8", [[0, 255, 128, 127, 255, 1], [3, 3, 0, 200, 3, 9]], "u")
    outs = [out("i64", _topk_ref(a.v, 2), "ta"),
            out("i64", _topk_ref(b.v, 3), "tb"),
            out("i64", _topk_ref(e.v, 7), "te"),
            out("i64", _topk_ref(u.v, 4), "tu")]
    c.graph([a, b, e, u], "%ta = topk(%a, k=2)\n%tb = topk(%b, k=3)\n"
            "%te = topk(%e, k=7)\n%tu = topk(%u, k=4)",
            outs_str(outs), comment="topk on i32, i64, i8 and u8")
    c.run([a, b, e, u], outs)


def _topk_nan_ref(x, k):
    """Descending with NaN largest, ties (-0.0 == +0.0) to the smaller
    index."""
    x = np.asarray(x, dtype=np.float64)
    rows = x.reshape(-1, x.shape[-1])
    res = [sorted(range(len(r)), key=lambda i, r=r: (
        (0, 0.0, i) if np.isnan(r[i]) else (1, -r[i], i)))[:k]
        for r in rows]
    return np.array(res, dtype=np.int64).reshape(x.shape[:-1] + (k,))


@case()
def topk_half(c, rng):
    """topk of f16 and bf16, ordered as their f32 values: NaN largest,
    +-inf, -0.0 equal to +0.0, ties to the smaller index."""
    sp = [1.5, -0.0, np.nan, 0.0, -np.inf, 1.5, np.inf, -2.0, np.nan, 0.0]
    h = T("f16", [sp, sp[::-1]], "h")
    g = T("bf16", rng.integers(-4, 5, (3, 9)) / 4.0, "g")
    s = T("bf16", sp, "s")
    outs = [out("i64", _topk_nan_ref(h.v, 10), "th"),
            out("i64", _topk_nan_ref(g.v, 4), "tg"),
            out("i64", _topk_nan_ref(s.v, 6), "ts")]
    c.graph([h, g, s], "%th = topk(%h, k=10)\n%tg = topk(%g, k=4)\n"
            "%ts = topk(%s, k=6)", outs_str(outs),
            comment="topk on f16 and bf16")
    c.run([h, g, s], outs)


@case()
def compare_c64(c, rng):
    """eq/ne of complex values (NumPy semantics: both parts compared)."""
    x = T("c64", _dtype_vals(rng, "c64", (4,)), "x")
    yv = _dtype_vals(rng, "c64", (4,))
    yv[0], yv[2] = x.v[0], x.v[2]  # some equal, some not
    y = T("c64", yv, "y")
    outs = [out("bool", x.v == y.v, "q"), out("bool", x.v != y.v, "nq")]
    c.graph([x, y], "%q = eq(%x, %y)\n%nq = ne(%x, %y)", outs_str(outs),
            comment="eq and ne on c64")
    c.run([x, y], outs)


@case()
def scatter_add_c64(c, rng):
    """scatter_add of complex updates, duplicates accumulating."""
    u = T("c64", _dtype_vals(rng, "c64", (3, 2)), "u")
    i = T("i64", [1, 1, 0], "i")
    r = np.zeros((2, 2), dtype=np.complex128)
    np.add.at(r, i.v, u.v)
    outs = [out("c64", r, "s")]
    c.graph([u, i], "%s = scatter_add(%u, %i, shape=[2, 2])", "%s",
            comment="scatter_add on c64")
    c.run([u, i], outs)


@case()
def reduce_sum_c64(c, rng):
    """reduce_sum of complex values over one axis and over all."""
    x = T("c64", _dtype_vals(rng, "c64", (2, 3)), "x")
    outs = [out("c64", x.v.sum(1), "r"), out("c64", x.v.sum(), "ra")]
    c.graph([x], "%r = reduce_sum(%x, axes=[1])\n%ra = reduce_sum(%x)",
            outs_str(outs), comment="reduce_sum on c64")
    c.run([x], outs)


@case()
def reduce_mean_prod_c64(c, rng):
    """reduce_mean and reduce_prod of complex values over inner, outer
    and all axes (keep_dims too), and with a fused elementwise
    prologue."""
    x = T("c64", _dtype_vals(rng, "c64", (3, 4, 5)), "x")
    y = T("c64", _dtype_vals(rng, "c64", (2, 3)), "y")
    outs = [out("c64", x.v.mean(2), "m"),
            out("c64", x.v.mean((0, 2), keepdims=True), "mk"),
            out("c64", x.v.mean(), "ma"),
            out("c64", y.v.prod(1), "p"),
            out("c64", y.v.prod(0), "p0"),
            out("c64", y.v.prod(), "pa"),
            out("c64", (y.v * y.v).prod(1), "pf"),
            out("c64", np.conj(x.v).mean(1), "mf")]
    c.graph([x, y], "%m = reduce_mean(%x, axes=[2])\n"
            "%mk = reduce_mean(%x, axes=[0, 2], keep_dims=true)\n"
            "%ma = reduce_mean(%x)\n%p = reduce_prod(%y, axes=[1])\n"
            "%p0 = reduce_prod(%y, axes=[0])\n%pa = reduce_prod(%y)\n"
            "%pf = reduce_prod(mul(%y, %y), axes=[1])\n"
            "%mf = reduce_mean(conjugate(%x), axes=[1])",
            outs_str(outs), comment="reduce_mean and reduce_prod on c64")
    c.run([x, y], outs)
