"""pool.py -- max_pool2d, avg_pool2d and their backward ops
(language.md 6.5, 6.9): NumPy semantics, gradient-check cases,
end-to-end cases.

Gradient checks: POOL_FORMS and a max_pool2d with ties, against torch.
End-to-end (forward values, references from a second NumPy
implementation, cell by cell, independent of the one the interpreter
runs): NCHW; strides different from the kernel, padding, non-square
kernels, rows of many 2-wide stride-2 windows (the vectorized path,
with every block size, overlapping last blocks and a scalar rest), an
input with many ties (max: the first maximum in row-major window order
gets the gradient, padding never wins) and a plane large enough for
several threads. avg divides by
kh*kw, padding counted as zeros. f32 and f64 against NumPy float64; f16
and bf16 are computed in f32 and rounded once: cast to f32 and compared
with a tolerance of a few ulps of the half type.
"""
import numpy as np

from e2e_lib import T, case, out, outs_str
from families import gc_case

GRADCHECK = []


# ---- NumPy semantics ----

def pool2d(op, ins, a):
    """max/avg_pool2d and their backward ops, NCHW (first maximum)."""
    k = a["kernel"]
    st = a.get("stride", k)
    p = a.get("padding", [0, 0])
    if op == "avg_pool2d_backward":
        dy = ins[0]
        x = np.zeros(a["shape"], dy.dtype)
    else:
        x = ins[0]
    H, W = x.shape[2], x.shape[3]
    OH = (H + 2 * p[0] - k[0]) // st[0] + 1
    OW = (W + 2 * p[1] - k[1]) // st[1] + 1
    out = np.zeros(x.shape[:2] + (OH, OW), x.dtype)
    dx = np.zeros(x.shape, x.dtype)
    for r in range(OH):
        for q in range(OW):
            r0, c0 = r * st[0] - p[0], q * st[1] - p[1]
            rs = slice(max(r0, 0), min(r0 + k[0], H))
            cs = slice(max(c0, 0), min(c0 + k[1], W))
            win = x[:, :, rs, cs]
            if op == "avg_pool2d":
                out[:, :, r, q] = win.sum((2, 3)) / (k[0] * k[1])
            elif op == "avg_pool2d_backward":
                dx[:, :, rs, cs] += (dy[:, :, r, q] / (k[0] * k[1]))[
                    :, :, None, None]
            else:
                f = win.reshape(win.shape[:2] + (-1,))
                i = f.argmax(-1)
                out[:, :, r, q] = f.max(-1)
                if op == "max_pool2d_backward":
                    wc = cs.stop - cs.start
                    for n in range(x.shape[0]):
                        for c in range(x.shape[1]):
                            dx[n, c, rs.start + i[n, c] // wc,
                               cs.start + i[n, c] % wc] += ins[1][n, c, r, q]
    return out if op in ("max_pool2d", "avg_pool2d") else dx


EVAL = {op: pool2d for op in ("max_pool2d", "avg_pool2d",
                              "max_pool2d_backward", "avg_pool2d_backward")}


# ---- gradient checks (PyTorch references) ----

# (suffix, x shape, kernel, stride or None, padding or None)
POOL_FORMS = [("", (2, 3, 6, 6), (2, 2), None, None),
              ("_s1p1", (1, 2, 5, 6), (3, 3), (1, 1), (1, 1)),
              ("_rect", (2, 2, 7, 5), (3, 2), (2, 1), (1, 0))]


def _pool_out(shape, k, s, p):
    s, p = s or k, p or (0, 0)
    return shape[:2] + tuple((shape[2 + i] + 2 * p[i] - k[i]) // s[i] + 1
                             for i in range(2))


def _pool_attrs(k, s, p):
    a = ", kernel=[%d, %d]" % k
    if s:
        a += ", stride=[%d, %d]" % s
    if p:
        a += ", padding=[%d, %d]" % p
    return a


def pool_torch(kind, x, k, s, p):
    import torch.nn.functional as F
    f = F.max_pool2d if kind == "max" else F.avg_pool2d
    kw = {} if kind == "max" else {"count_include_pad": True}
    return f(x, k, s or k, p or (0, 0), **kw)


def pool_case(kind, sfx, shape, k, s, p):
    op = kind + "_pool2d"
    attrs = _pool_attrs(k, s, p)
    oshape = _pool_out(shape, k, s, p)

    @gc_case(op + sfx, ops=[op])
    def _(g):
        g.p("x", g.distinct(shape))
        return ("%%y = %s(%%x%s)" % (op, attrs), "%y",
                lambda t: pool_torch(kind, t["x"], k, s, p))

    if kind == "max":
        def mbwd(t):
            import torch
            y = pool_torch(kind, t["x"], k, s, p)
            (dx,) = torch.autograd.grad((y * t["dy"]).sum(), t["x"],
                                        create_graph=True)
            return dx

        @gc_case(op + "_backward" + sfx, ops=[op + "_backward"])
        def _(g):
            g.p("x", g.distinct(shape))
            g.p("dy", g.u(oshape))
            return ("%%y = max_pool2d_backward(%%x, %%dy%s)" % attrs, "%y",
                    mbwd)
        return

    def abwd(t):
        import torch
        x = torch.zeros(shape, dtype=torch.float64, requires_grad=True)
        y = pool_torch(kind, x, k, s, p)
        (dx,) = torch.autograd.grad((y * t["dy"]).sum(), x,
                                    create_graph=True)
        return dx

    sh = ", shape=[%s]" % ", ".join(str(d) for d in shape)

    @gc_case(op + "_backward" + sfx, ops=[op + "_backward"])
    def _(g):
        g.p("dy", g.u(oshape))
        return ("%%y = avg_pool2d_backward(%%dy%s%s)" % (sh, attrs), "%y",
                abwd)


for _kind in ("max", "avg"):
    for _f in POOL_FORMS:
        pool_case(_kind, *_f)


# ties: the gradient goes to the first maximum (row-major), as torch
@gc_case("max_pool2d_ties", ops=["max_pool2d"], fd=False)
def _(g):
    g.p("x", np.round(g.u((2, 2, 5, 6), -1, 1)))
    return ("%y = max_pool2d(%x, kernel=[3, 3], stride=[1, 2], "
            "padding=[1, 1])", "%y",
            lambda t: pool_torch("max", t["x"], (3, 3), (1, 2), (1, 1)))


# ---- end-to-end cases ----

# (x shape, kernel, stride, padding)
FORMS = [((2, 3, 6, 6), (2, 2), (2, 2), (0, 0)),
         ((1, 2, 5, 6), (3, 3), (1, 1), (1, 1)),
         ((2, 2, 7, 5), (3, 2), (2, 1), (1, 0)),
         ((1, 4, 40, 36), (3, 3), (2, 2), (1, 1)),
         # width-2 stride-2 windows (vector path): rows of 31 windows
         # (a block of 16 and one of 16 ending at the row's end),
         # padding, kh = 3, rows of 14, 12 and 7 windows (blocks of 8 or
         # 4 and an overlapping one), 3 windows (scalar only: the 6 x 6
         # form above)
         ((2, 3, 7, 62), (2, 2), (2, 2), (0, 0)),
         ((1, 2, 6, 45), (2, 2), (2, 2), (1, 1)),
         ((1, 2, 9, 40), (3, 2), (2, 2), (0, 0)),
         ((1, 2, 4, 28), (2, 2), (2, 2), (0, 0)),
         ((1, 2, 2, 24), (2, 2), (2, 2), (0, 0)),
         ((2, 2, 6, 14), (2, 2), (2, 2), (0, 0))]


def _windows(shape, k, s, p):
    """(oh, ow) and, per output cell, the in-bounds input cells of its
    window in row-major order."""
    h, w = shape[2:]
    oh = (h + 2 * p[0] - k[0]) // s[0] + 1
    ow = (w + 2 * p[1] - k[1]) // s[1] + 1
    cells = {}
    for i in range(oh):
        for j in range(ow):
            cells[i, j] = [(a, b)
                           for a in range(i * s[0] - p[0],
                                          i * s[0] - p[0] + k[0])
                           for b in range(j * s[1] - p[1],
                                          j * s[1] - p[1] + k[1])
                           if 0 <= a < h and 0 <= b < w]
    return (oh, ow), cells


def pool(kind, x, k, s, p):
    (oh, ow), cells = _windows(x.shape, k, s, p)
    y = np.zeros(x.shape[:2] + (oh, ow))
    for (i, j), cs in cells.items():
        v = np.stack([x[:, :, a, b] for a, b in cs], -1)
        y[:, :, i, j] = v.max(-1) if kind == "max" else \
            v.sum(-1) / (k[0] * k[1])
    return y


def pool_backward(kind, x, dy, k, s, p):
    (oh, ow), cells = _windows(x.shape, k, s, p)
    dx = np.zeros(x.shape)
    for (i, j), cs in cells.items():
        if kind == "avg":
            for a, b in cs:
                dx[:, :, a, b] += dy[:, :, i, j] / (k[0] * k[1])
            continue
        v = np.stack([x[:, :, a, b] for a, b in cs], -1)
        first = v.argmax(-1)  # NumPy's argmax: the first maximum
        for n in range(x.shape[0]):
            for c in range(x.shape[1]):
                a, b = cs[first[n, c]]
                dx[n, c, a, b] += dy[n, c, i, j]
    return dx


def _attrs(k, s, p):
    return ", kernel=[%d, %d], stride=[%d, %d], padding=[%d, %d]" % (
        k + s + p)


def _body(dt, forms, rng, ties):
    ins, body, outs = [], [], []
    for f, (shape, k, s, p) in enumerate(forms):
        xv = rng.uniform(-2, 2, size=shape)
        if ties:
            xv = np.round(xv)
        (oh, ow), _ = _windows(shape, k, s, p)
        x = T(dt, xv, "x%d" % f)
        dy = T(dt, rng.uniform(-1, 1, size=shape[:2] + (oh, ow)), "g%d" % f)
        ins += [x, dy]
        a = _attrs(k, s, p)
        sh = ", shape=[%s]" % ", ".join(str(d) for d in shape)
        for kind in ("max", "avg"):
            body.append("%%%s%d = %s_pool2d(%%x%d%s)" % (kind, f, kind, f, a))
            outs.append(("%s%d" % (kind, f), pool(kind, x.v, k, s, p)))
        body.append("%%mb%d = max_pool2d_backward(%%x%d, %%g%d%s)"
                    % (f, f, f, a))
        outs.append(("mb%d" % f,
                     pool_backward("max", x.v, dy.v, k, s, p)))
        body.append("%%ab%d = avg_pool2d_backward(%%g%d%s%s)"
                    % (f, f, sh, a))
        outs.append(("ab%d" % f,
                     pool_backward("avg", x.v, dy.v, k, s, p)))
    return ins, body, outs


def _pool_case(dt, ties):
    def build(c, rng):
        forms = FORMS[:3] + FORMS[4:] if ties else FORMS
        ins, body, named = _body(dt, forms, rng, ties)
        outs = [out(dt, v, nm) for nm, v in named]
        c.graph(ins, "\n".join(body), outs_str(outs),
                comment="max/avg pool and their backward ops, %s%s"
                % (dt, ", integer-valued input (ties)" if ties else ""))
        c.run(ins, outs, args=["--threads", "1,3"])
    case("pool_forward_%s%s" % (dt, "_ties" if ties else ""))(build)


def _half_case(dt):
    def build(c, rng):
        ins, body, named = _body(dt, FORMS[1:3], rng, False)
        outs = [out("f32", v, nm) for nm, v in named]
        body = [ln.replace(" = ", " = cast(", 1) + ", to=f32)"
                for ln in body]
        c.graph(ins, "\n".join(body), outs_str(outs),
                comment="pooling in %s (computed in f32, rounded once)" % dt)
        tol = "2e-2" if dt == "bf16" else "2e-3"
        c.run(ins, outs, args=["--threads", "1,2", "--rtol", tol,
                               "--atol", tol])
    case("pool_forward_" + dt)(build)


for _dt in ("f32", "f64"):
    _pool_case(_dt, False)
_pool_case("f32", True)
for _dt in ("f16", "bf16"):
    _half_case(_dt)
