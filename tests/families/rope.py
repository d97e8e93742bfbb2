"""rope.py -- rope and rope_backward (language.md 6.5): NumPy
semantics, gradient-check cases, end-to-end cases.

Gradient checks: ROPE_FORMS (n_rot == head_dim, n_rot < head_dim, table
widths), rope_backward against torch's double backward. End-to-end
(forward): NeoX half split on [S, H*D] and [B, S, H*D], n_rot ==
head_dim and n_rot < head_dim (the tail dims copied), cos/sin tables of
width n_rot/2 and D/2 (only the first n_rot/2 columns read), heads > 1,
a row count large enough for several threads; rope_backward is rope with
sin negated. f32 and f64 against NumPy float64; f16 and bf16 are
computed in f32 and rounded once: results cast to f32 and compared with
a tolerance of a few ulps of the half type.
"""
import numpy as np

from e2e_lib import T, case, out, outs_str
from families import gc_case

GRADCHECK = []


# ---- NumPy semantics ----

def rope(op, ins, a):
    """rope / rope_backward (NeoX half split; backward negates sin)."""
    x = ins[0]
    d = a["head_dim"]
    r = a.get("n_rot", d)
    h = r // 2
    xs = x.reshape(x.shape[:-1] + (x.shape[-1] // d, d))
    c = ins[1][:, :h].reshape(-1, 1, h)
    s = ins[2][:, :h].reshape(-1, 1, h)
    if op == "rope_backward":
        s = -s
    x1, x2 = xs[..., :h], xs[..., h:r]
    y = np.concatenate([x1 * c - x2 * s, x2 * c + x1 * s, xs[..., r:]], -1)
    return y.reshape(x.shape)


EVAL = {"rope": rope, "rope_backward": rope}


# ---- gradient checks (PyTorch references) ----

def rope_torch(x, cos, sin, d, r):
    """rope in torch: x [..., S, H*D], cos/sin [S, W], first r/2 used."""
    import torch
    h = r // 2
    xs = x.reshape(*x.shape[:-1], x.shape[-1] // d, d)
    c = cos[:, :h].reshape(-1, 1, h)
    s = sin[:, :h].reshape(-1, 1, h)
    x1, x2 = xs[..., :h], xs[..., h:r]
    y = torch.cat([x1 * c - x2 * s, x2 * c + x1 * s, xs[..., r:]], -1)
    return y.reshape(x.shape)


# (suffix, x shape, head_dim, n_rot or None, cos width)
ROPE_FORMS = [("", (3, 8), 4, None, 2), ("_nrot", (2, 3, 12), 6, 4, 3),
              ("_nrot_w", (2, 3, 8), 8, 4, 2)]


def rope_case(sfx, shape, d, r, w):
    rr = r if r is not None else d
    attrs = ", head_dim=%d" % d + ("" if r is None else ", n_rot=%d" % r)
    tab = (shape[-2], w)

    @gc_case("rope" + sfx, ops=["rope"])
    def _(g):
        g.p("x", g.u(shape))
        g.p("cs", g.u(tab))
        g.p("sn", g.u(tab))
        return ("%%y = rope(%%x, %%cs, %%sn%s)" % attrs, "%y",
                lambda t: rope_torch(t["x"], t["cs"], t["sn"], d, rr))

    # rope_backward: d/dx of sum(dy * rope(x)) through create_graph
    def bwd(t):
        import torch
        x = torch.zeros(shape, dtype=torch.float64, requires_grad=True)
        y = rope_torch(x, t["cs"], t["sn"], d, rr)
        (dx,) = torch.autograd.grad((y * t["dy"]).sum(), x,
                                    create_graph=True)
        return dx

    @gc_case("rope_backward" + sfx, ops=["rope_backward"])
    def _(g):
        g.p("dy", g.u(shape))
        g.p("cs", g.u(tab))
        g.p("sn", g.u(tab))
        return ("%%y = rope_backward(%%dy, %%cs, %%sn%s)" % attrs, "%y", bwd)


for _f in ROPE_FORMS:
    rope_case(*_f)


# ---- end-to-end cases (references: the semantics above) ----

def _ref(x, cos, sin, d, r=None, back=False):
    a = {"head_dim": d} if r is None else {"head_dim": d, "n_rot": r}
    return rope("rope_backward" if back else "rope", [x, cos, sin], a)


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
                outs.append(out(dt, _ref(x.v, ct.v, st.v, d, r, back), nm))
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
        outs = [out("f32", _ref(x.v, ct.v, st.v, 8, 8), "f"),
                out("f32", _ref(x.v, ct.v, st.v, 8, 4, True), "b")]
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
