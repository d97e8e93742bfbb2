"""e2e_cases_rope.py -- rope and rope_backward forward (language.md 6.5).

NeoX half split on [S, H*D] and [B, S, H*D], n_rot == head_dim and
n_rot < head_dim (the tail dims copied), cos/sin tables of width n_rot/2
and D/2 (only the first n_rot/2 columns read), heads > 1, a row count
large enough for several threads; rope_backward is rope with sin
negated. f32 and f64 against NumPy float64; f16 and bf16 are computed in
f32 and rounded once: results cast to f32 and compared with a tolerance
of a few ulps of the half type. Gradients are in tests/gradcheck/.
"""
import numpy as np

from e2e_lib import T, case, out, outs_str


def rope(x, cos, sin, d, r=None, back=False):
    r = d if r is None else r
    h = r // 2
    xs = x.reshape(x.shape[:-1] + (x.shape[-1] // d, d))
    c = cos[:, :h].reshape(-1, 1, h)
    s = sin[:, :h].reshape(-1, 1, h) * (-1 if back else 1)
    x1, x2 = xs[..., :h], xs[..., h:r]
    y = np.concatenate([x1 * c - x2 * s, x2 * c + x1 * s, xs[..., r:]], -1)
    return y.reshape(x.shape)


def _tables(rng, s, w):
    th = rng.uniform(-np.pi, np.pi, size=(s, w))
    return np.cos(th), np.sin(th)


# (x shape, head_dim, n_rot or None, table width)
FORMS = [((7, 16), 8, None, 4), ((2, 5, 24), 8, 4, 2),
         ((3, 4, 12), 6, 2, 3), ((2, 300, 64), 32, 16, 16)]


def _rope_case(dt):
    def build(c, rng):
        ins, body, outs = [], [], []
        for k, (shape, d, r, w) in enumerate(FORMS):
            cs, sn = _tables(rng, shape[-2], w)
            x = T(dt, rng.uniform(-2, 2, size=shape), "x%d" % k)
            ct, st = T(dt, cs, "c%d" % k), T(dt, sn, "s%d" % k)
            ins += [x, ct, st]
            a = ", head_dim=%d" % d + ("" if r is None else ", n_rot=%d" % r)
            for op, back in (("rope", False), ("rope_backward", True)):
                nm = "%s%d" % ("f" if not back else "b", k)
                body.append("%%%s = %s(%%x%d, %%c%d, %%s%d%s)" %
                            (nm, op, k, k, k, a))
                outs.append(out(dt, rope(x.v, ct.v, st.v, d, r, back), nm))
        c.graph(ins, "\n".join(body), outs_str(outs),
                comment="rope and rope_backward on [S, HD] and [B, S, HD],"
                "\nn_rot <= head_dim, table widths n_rot/2 and D/2, %s" % dt)
        c.run(ins, outs, args=["--threads", "1,3"])
    case("rope_forward_" + dt)(build)


def _half_case(dt):
    def build(c, rng):
        cs, sn = _tables(rng, 6, 4)
        x = T(dt, rng.uniform(-2, 2, size=(2, 6, 16)), "x")
        ct, st = T(dt, cs, "c"), T(dt, sn, "s")
        ins = [x, ct, st]
        outs = [out("f32", rope(x.v, ct.v, st.v, 8, 8), "f"),
                out("f32", rope(x.v, ct.v, st.v, 8, 4, True), "b")]
        c.graph(ins, "%f = cast(rope(%x, %c, %s, head_dim=8), to=f32)\n"
                "%b = cast(rope_backward(%x, %c, %s, head_dim=8, n_rot=4),"
                " to=f32)", outs_str(outs),
                comment="rope / rope_backward in %s (computed in f32, "
                "rounded once)" % dt)
        tol = "2e-2" if dt == "bf16" else "2e-3"
        c.run(ins, outs, args=["--threads", "1,2", "--rtol", tol,
                               "--atol", tol])
    case("rope_forward_" + dt)(build)


for _dt in ("f32", "f64"):
    _rope_case(_dt)
for _dt in ("f16", "bf16"):
    _half_case(_dt)
