"""norm.py -- layer_norm, rms_norm and their backward ops (language.md
6.5): NumPy semantics, gradient-check cases, end-to-end cases.

Gradient checks: every op on the last, a middle and the first axis
(NORM_FORMS), the backward ops against torch's double backward of
sum(dy * norm(x)). End-to-end (forward): every normalized-axis form
(last axis; a middle axis, so the kernel runs over column groups with a
vector part and a scalar tail; axis 0), eps, row lengths that are not a
multiple of the vector width, rows with a large common offset (variance
by deviations, not E[x^2] - E[x]^2), f32 and f64 against the NumPy
semantics in float64. f16 and bf16 are computed in f32 and rounded
once: their results are cast to f32 and compared with a tolerance of a
few ulps of the half type.
"""
import numpy as np

from e2e_lib import T, case, out, outs_str
from families import gc_case

GRADCHECK = []


# ---- NumPy semantics ----

def norm(op, ins, a):
    """layer_norm / rms_norm and their backward ops (float64)."""
    x = ins[0].astype(np.float64)
    ax = a.get("axis", -1) % x.ndim
    rms = op.startswith("rms")
    eps = a.get("eps", 1e-6 if rms else 1e-5)
    shp = [1] * x.ndim
    shp[ax] = -1
    red = tuple(i for i in range(x.ndim) if i != ax)
    c = x if rms else x - x.mean(ax, keepdims=True)
    v = (c * c).mean(ax, keepdims=True) + eps
    if op in ("layer_norm", "rms_norm"):
        return c / np.sqrt(v) * ins[1].reshape(shp) + ins[2].reshape(shp)
    r = 1 / np.sqrt(v)
    h = c * r
    dy = ins[-1].astype(np.float64)
    if op.endswith("_gamma"):
        return (dy * h).sum(red)
    if op.endswith("_beta"):
        return dy.sum(red)
    g = dy * ins[1].reshape(shp)
    m = (g * h).mean(ax, keepdims=True)
    if rms:
        return g * r - x * m * r * r
    return r * (g - g.mean(ax, keepdims=True) - h * m)


EVAL = {op: norm for op in (
    "layer_norm", "layer_norm_backward_input", "layer_norm_backward_gamma",
    "rms_norm", "rms_norm_backward_input", "rms_norm_backward_gamma",
    "rms_norm_backward_beta")}


# ---- gradient checks (PyTorch references) ----

def norm_torch(x, gam, bet, axis, eps, rms):
    """layer_norm / rms_norm over one axis, in torch (differentiable)."""
    import torch
    shape = [1] * x.dim()
    shape[axis] = -1
    if rms:
        h = x * torch.rsqrt((x * x).mean(axis, keepdim=True) + eps)
    else:
        c = x - x.mean(axis, keepdim=True)
        h = c * torch.rsqrt((c * c).mean(axis, keepdim=True) + eps)
    return h * gam.reshape(shape) + bet.reshape(shape)


# (case suffix, x shape, axis, eps attribute or None)
NORM_FORMS = [("", (3, 5), -1, None), ("_axis1", (2, 4, 3), 1, 1e-3),
              ("_axis0", (4, 3), 0, None)]


def norm_case(op, sfx, shape, axis, eps):
    rms = op == "rms_norm"
    e = eps if eps is not None else (1e-6 if rms else 1e-5)
    attrs = ("" if axis == -1 else ", axis=%d" % axis) + \
        ("" if eps is None else ", eps=%g" % eps)
    ch = shape[axis]

    @gc_case(op + sfx, ops=[op])
    def _(g):
        g.p("x", g.u(shape))
        g.p("gam", g.u((ch,), 0.5, 1.5))
        g.p("bet", g.u((ch,)))
        return ("%%y = %s(%%x, %%gam, %%bet%s)" % (op, attrs), "%y",
                lambda t: norm_torch(t["x"], t["gam"], t["bet"],
                                     axis % len(shape), e, rms))

    # backward ops: gradients of sum(dy * norm(x)) through create_graph
    def bwd(t, wrt):
        import torch
        one = torch.ones(ch, dtype=torch.float64)  # d/dgamma needs no gamma
        x, gam, bet = t["x"], t.get("gam", one), t.get("bet", 0 * one)
        xs = [v if v.requires_grad else v.detach().requires_grad_(True)
              for v in (x, gam, bet)]
        y = norm_torch(xs[0], xs[1], xs[2], axis % len(shape), e, rms)
        (d,) = torch.autograd.grad((y * t["dy"]).sum(), xs[wrt],
                                   create_graph=True)
        return d

    parts = (("input", 0), ("gamma", 1)) + ((("beta", 2),) if rms else ())
    for part, wrt in parts:
        name = "%s_backward_%s" % (op, part)

        def mk(name=name, wrt=wrt, part=part):
            @gc_case(name + sfx, ops=[name])
            def _(g):
                g.p("x", g.u(shape))
                ops = ["%x"]
                if rms or part != "gamma":
                    g.p("gam", g.u((ch,), 0.5, 1.5))
                    ops.append("%gam")
                if rms:
                    g.p("bet", g.u((ch,)))
                    ops.append("%bet")
                g.p("dy", g.u(shape))
                ops.append("%dy")
                return ("%%y = %s(%s%s)" % (name, ", ".join(ops), attrs),
                        "%y", lambda t: bwd(t, wrt))
        mk()


for _op in ("layer_norm", "rms_norm"):
    for _f in NORM_FORMS:
        norm_case(_op, *_f)


# ---- end-to-end cases (forward; references: the semantics above) ----

def _fwd(op, x, g, b, axis=-1, eps=None):
    a = {"axis": axis} if eps is None else {"axis": axis, "eps": eps}
    return norm(op, [x, g, b], a)


# (x shape, axis, eps attribute or None, offset added to x)
FORMS = [((5, 37), -1, None, 0.0), ((3, 4, 20), 1, 1e-3, 0.0),
         ((6, 3), 0, None, 0.0), ((4, 64), -1, None, 1000.0),
         ((2, 3, 5, 7), 2, 1e-2, 0.0),
         # 300 columns: wide strips, vector groups and scalar columns
         ((9, 300), -1, None, 0.0)]


def _norm_case(dt):
    def build(c, rng):
        ins, body, outs = [], [], []
        for k, (shape, axis, eps, shift) in enumerate(FORMS):
            ch = shape[axis]
            x = T(dt, rng.uniform(-2, 2, size=shape) + shift, "x%d" % k)
            g = T(dt, rng.uniform(0.5, 1.5, size=(ch,)), "g%d" % k)
            b = T(dt, rng.uniform(-1, 1, size=(ch,)), "b%d" % k)
            ins += [x, g, b]
            for op in ("layer_norm", "rms_norm"):
                a = "" if axis == -1 else ", axis=%d" % axis
                a += "" if eps is None else ", eps=%g" % eps
                nm = "%s%d" % (op[0], k)
                body.append("%%%s = %s(%%x%d, %%g%d, %%b%d%s)" %
                            (nm, op, k, k, k, a))
                outs.append(out(dt, _fwd(op, x.v, g.v, b.v, axis, eps), nm))
        c.graph(ins, "\n".join(body), outs_str(outs),
                comment="layer_norm and rms_norm over the last, a middle "
                "and the first axis,\nwith eps, tails and offset rows, %s"
                % dt)
        c.run(ins, outs)
    case("norm_forward_" + dt)(build)


def _half_case(dt):
    def build(c, rng):
        x = T(dt, rng.uniform(-2, 2, size=(4, 24)), "x")
        xt = T(dt, rng.uniform(-2, 2, size=(3, 24, 5)), "xt")
        g = T(dt, rng.uniform(0.5, 1.5, size=(24,)), "g")
        b = T(dt, rng.uniform(-1, 1, size=(24,)), "b")
        ins = [x, xt, g, b]
        outs = [out("f32", _fwd("layer_norm", x.v, g.v, b.v), "l"),
                out("f32", _fwd("rms_norm", x.v, g.v, b.v), "r"),
                out("f32", _fwd("layer_norm", xt.v, g.v, b.v, 1), "lt"),
                out("f32", _fwd("rms_norm", xt.v, g.v, b.v, 1), "rt")]
        c.graph(ins, "%l = cast(layer_norm(%x, %g, %b), to=f32)\n"
                "%r = cast(rms_norm(%x, %g, %b), to=f32)\n"
                "%lt = cast(layer_norm(%xt, %g, %b, axis=1), to=f32)\n"
                "%rt = cast(rms_norm(%xt, %g, %b, axis=1), to=f32)",
                outs_str(outs),
                comment="layer_norm / rms_norm in %s (computed in f32, "
                "rounded once)" % dt)
        tol = "2e-2" if dt == "bf16" else "2e-3"
        c.run(ins, outs, args=["--threads", "1,2", "--rtol", tol,
                               "--atol", tol])
    case("norm_forward_" + dt)(build)


for _dt in ("f32", "f64"):
    _norm_case(_dt)
for _dt in ("f16", "bf16"):
    _half_case(_dt)
