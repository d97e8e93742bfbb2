"""e2e_cases_pool.py -- max_pool2d, avg_pool2d and their backward ops,
forward values (language.md 6.5, 6.9).

NCHW; strides different from the kernel, padding, non-square kernels,
rows of many 2-wide stride-2 windows (the vectorized path, with every
block size and a scalar rest),
an input with many ties (max: the first maximum in row-major window
order gets the gradient, padding never wins) and a plane large enough
for several threads. avg divides by kh*kw, padding counted as zeros.
f32 and f64 against NumPy float64; f16 and bf16 are computed in f32 and
rounded once: cast to f32 and compared with a tolerance of a few ulps of
the half type. Gradients are in tests/gradcheck/.
"""
import numpy as np

from e2e_lib import T, case, out, outs_str

# (x shape, kernel, stride, padding)
FORMS = [((2, 3, 6, 6), (2, 2), (2, 2), (0, 0)),
         ((1, 2, 5, 6), (3, 3), (1, 1), (1, 1)),
         ((2, 2, 7, 5), (3, 2), (2, 1), (1, 0)),
         ((1, 4, 40, 36), (3, 3), (2, 2), (1, 1)),
         # width-2 stride-2 windows (vector path): rows of 31 windows
         # (blocks of 16, 8, 4 + a scalar rest), padding, kh = 3
         ((2, 3, 7, 62), (2, 2), (2, 2), (0, 0)),
         ((1, 2, 6, 45), (2, 2), (2, 2), (1, 1)),
         ((1, 2, 9, 40), (3, 2), (2, 2), (0, 0))]


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
