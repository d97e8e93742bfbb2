"""gnorm.py -- group_norm, batch_norm_inference and their backward ops
(language.md 6.5): NumPy semantics, gradient-check cases, end-to-end
cases (references: torch.nn.functional in float64).

Gradient checks: GC_GN_FORMS and GC_BN_FORMS, every operand a param
(batch_norm's mean and var too), the backward ops against torch's double
backward. End-to-end forward: x [N, C] and 1, 2 and 3 spatial dims;
groups 1, a divisor and C; eps; spatial sizes that are not a multiple of
the vector width (the kernels' scalar tails); rows with a large common
offset (variance by deviations); one shape large enough that units run
on several threads. f32 and f64. f16 and bf16 (the forward ops and the
dx / dgamma kernels) are computed in f32 and rounded once, their results
cast to f32 and compared with a tolerance of a few half ulps. Every run
repeats at 1, 2 and 3 threads (bit-identical).

Training (rlxc --grad): loss = sum(w * norm(x)) on [4, 32, 16, 16], so
the backward kernels (dx, and the dgamma/dbeta sums over N and the
spatial dims) run threaded; batch_norm also with mean and var as params.
The backward ops are checked one by one, first and second order, by the
gradient checks above.
"""
import numpy as np

from e2e_lib import T, case, out, outs_str, tt, uni
from families import gc_case

GRADCHECK = []


# ---- NumPy semantics ----

def nchw_norm(op, ins, a):
    """group_norm / batch_norm_inference and their backward ops, x
    [N, C, ...] (float64): x viewed as [N, G, C/G, HW] (batch_norm:
    G = C, statistics from the operands)."""
    x = ins[0].astype(np.float64)
    N, C = x.shape[:2]
    bn = op.startswith("batch_norm")
    G = C if bn else a["groups"]
    x4 = x.reshape(N, G, C // G, -1)
    ch = [v.astype(np.float64).reshape(1, G, C // G, 1)
          for v in ins[1:5 if bn else 3]]
    eps = a.get("eps", 1e-5)
    if bn:
        r = 1 / np.sqrt(ch[3] + eps)
        h = (x4 - ch[2]) * r
    else:
        c = x4 - x4.mean((2, 3), keepdims=True)
        r = 1 / np.sqrt((c * c).mean((2, 3), keepdims=True) + eps)
        h = c * r
    if op in ("group_norm", "batch_norm_inference"):
        return (h * ch[0] + ch[1]).reshape(x.shape)
    dy = ins[-1].astype(np.float64).reshape(x4.shape)
    if op.endswith("_gamma"):
        return (dy * h).sum((0, 3)).reshape(C)
    if op.endswith("_beta"):
        return dy.sum((0, 3)).reshape(C)
    g = dy * ch[0]
    if bn:
        return (g * r).reshape(x.shape)
    m = (g * h).mean((2, 3), keepdims=True)
    dx = r * (g - g.mean((2, 3), keepdims=True) - h * m)
    return dx.reshape(x.shape)


EVAL = {op: nchw_norm for op in (
    "group_norm", "group_norm_backward_input", "group_norm_backward_gamma",
    "group_norm_backward_beta", "batch_norm_inference",
    "batch_norm_inference_backward_input",
    "batch_norm_inference_backward_gamma",
    "batch_norm_inference_backward_beta")}


# ---- gradient checks (PyTorch references) ----

def bn_torch(x, gam, bet, mean, var, eps=1e-5):
    """batch_norm_inference by formula (torch's batch_norm has no
    gradient for the running statistics)."""
    import torch
    sh = (1, -1) + (1,) * (x.dim() - 2)
    return (x - mean.reshape(sh)) * torch.rsqrt(var.reshape(sh) + eps) * \
        gam.reshape(sh) + bet.reshape(sh)


# (case suffix, x shape, groups (group_norm), eps attribute or None)
GC_GN_FORMS = [("", (2, 4, 3), 2, None), ("_2d_g1", (2, 4, 3, 2), 1, 1e-3),
            ("_3d_gc", (1, 4, 2, 2, 3), 4, None), ("_nc", (3, 4), 2, None)]
GC_BN_FORMS = [("", (2, 3, 4), 0, None), ("_2d", (2, 3, 2, 3), 0, 1e-3),
            ("_nc", (4, 3), 0, None)]


def nchw_norm_case(op, sfx, shape, groups, eps):
    """The forward op and its three backward ops (gradients of
    sum(dy * op(...)) through create_graph); every operand is a param,
    batch_norm's mean and var included."""
    bn = op == "batch_norm_inference"
    names = ["x", "gam", "bet"] + (["mean", "var"] if bn else [])
    attrs = ("" if bn else ", groups=%d" % groups) + \
        ("" if eps is None else ", eps=%g" % eps)
    e = 1e-5 if eps is None else eps
    ch = shape[1]

    def params(g):
        g.p("x", g.u(shape))
        g.p("gam", g.u((ch,), 0.5, 1.5))
        g.p("bet", g.u((ch,)))
        if bn:
            g.p("mean", g.u((ch,), -1, 1))
            g.p("var", g.u((ch,), 0.3, 2.0))
        return ", ".join("%" + n for n in names)

    def fwd(t):
        import torch.nn.functional as F
        xs = [t[n] for n in names]
        return bn_torch(*xs, e) if bn else F.group_norm(xs[0], groups,
                                                        xs[1], xs[2], e)

    @gc_case(op + sfx, ops=[op])
    def _(g):
        return ("%%y = %s(%s%s)" % (op, params(g), attrs), "%y", fwd)

    for wrt, part in enumerate(("input", "gamma", "beta")):
        name = "%s_backward_%s" % (op, part)

        def mk(name=name, wrt=wrt):
            def bwd(t):
                import torch
                (d,) = torch.autograd.grad((fwd(t) * t["dy"]).sum(),
                                           t[names[wrt]], create_graph=True)
                return d

            @gc_case(name + sfx, ops=[name])
            def _(g):
                ops = params(g)
                g.p("dy", g.u(shape))
                return ("%%y = %s(%s, %%dy%s)" % (name, ops, attrs), "%y",
                        bwd)
        mk()


for _f in GC_GN_FORMS:
    nchw_norm_case("group_norm", *_f)
for _f in GC_BN_FORMS:
    nchw_norm_case("batch_norm_inference", *_f)


# ---- end-to-end cases ----

# group_norm: (x shape, groups, eps attribute or None, offset added to x)
GN_FORMS = [((2, 6, 5), 2, None, 0.0), ((2, 6, 4, 5), 3, 1e-3, 0.0),
            ((2, 6, 4, 5), 1, None, 0.0), ((2, 6, 4, 5), 6, None, 0.0),
            ((2, 4, 3, 2, 3), 2, None, 0.0), ((3, 6), 3, None, 0.0),
            ((2, 4, 9, 7), 2, None, 1000.0), ((4, 32, 16, 16), 8, None, 0.0)]
# batch_norm_inference: (x shape, eps attribute or None)
BN_FORMS = [((2, 6, 5), None), ((2, 5, 4, 7), 1e-3), ((3, 6), None),
            ((2, 3, 2, 3, 4), None), ((4, 32, 16, 16), None)]


def group_norm(x, g, b, groups, eps):
    import torch.nn.functional as F
    return F.group_norm(tt(x), groups, tt(g), tt(b), eps).numpy()


def batch_norm(x, g, b, m, v, eps):
    import torch.nn.functional as F
    return F.batch_norm(tt(x), tt(m), tt(v), tt(g), tt(b), False,
                        eps=eps).numpy()


def _attr(eps):
    return "" if eps is None else ", eps=%g" % eps


def _gn_case(dt):
    def build(c, rng):
        ins, body, outs = [], [], []
        for k, (shape, groups, eps, shift) in enumerate(GN_FORMS):
            ch = shape[1]
            x = T(dt, uni(rng, shape, -2, 2) + shift, "x%d" % k)
            g = T(dt, uni(rng, (ch,), 0.5, 1.5), "g%d" % k)
            b = T(dt, uni(rng, (ch,)), "b%d" % k)
            ins += [x, g, b]
            body.append("%%y%d = group_norm(%%x%d, %%g%d, %%b%d, groups=%d%s)"
                        % (k, k, k, k, groups, _attr(eps)))
            outs.append(out(dt, group_norm(x.v, g.v, b.v, groups,
                                           eps or 1e-5), "y%d" % k))
        c.graph(ins, "\n".join(body), outs_str(outs),
                comment="group_norm: [N, C] and 1 to 3 spatial dims, "
                "groups 1, a divisor and C,\neps, tails, offset rows and "
                "a threaded shape, %s" % dt)
        c.run(ins, outs)
    case("gnorm_forward_" + dt)(build)


def _bn_case(dt):
    def build(c, rng):
        ins, body, outs = [], [], []
        for k, (shape, eps) in enumerate(BN_FORMS):
            ch = shape[1]
            x = T(dt, uni(rng, shape, -2, 2), "x%d" % k)
            ps = [T(dt, uni(rng, (ch,), 0.5, 1.5), "g%d" % k),
                  T(dt, uni(rng, (ch,)), "b%d" % k),
                  T(dt, uni(rng, (ch,)), "m%d" % k),
                  T(dt, uni(rng, (ch,), 0.2, 2), "v%d" % k)]
            ins += [x] + ps
            body.append("%%y%d = batch_norm_inference(%%x%d, %%g%d, %%b%d, "
                        "%%m%d, %%v%d%s)" % (k, k, k, k, k, k, _attr(eps)))
            outs.append(out(dt, batch_norm(x.v, *[p.v for p in ps],
                                           eps or 1e-5), "y%d" % k))
        c.graph(ins, "\n".join(body), outs_str(outs),
                comment="batch_norm_inference: [N, C] and 1 to 3 spatial "
                "dims, eps, a threaded shape, %s" % dt)
        c.run(ins, outs)
    case("bnorm_forward_" + dt)(build)


def _vjp(f, args, dy, i):
    """d sum(dy * f(args)) / d args[i] in float64."""
    import torch
    ts = [tt(a).requires_grad_(True) for a in args]
    (d,) = torch.autograd.grad((f(*ts) * tt(dy)).sum(), ts[i])
    return d.numpy()


def _gn3(x, g, b):
    import torch.nn.functional as F
    return F.group_norm(x, 3, g, b, 1e-5)


def _half_case(dt):
    def build(c, rng):
        x = T(dt, uni(rng, (2, 6, 5, 3), -2, 2), "x")
        x2 = T(dt, uni(rng, (3, 6), -2, 2), "x2")
        g = T(dt, uni(rng, (6,), 0.5, 1.5), "g")
        b = T(dt, uni(rng, (6,)), "b")
        m = T(dt, uni(rng, (6,)), "m")
        v = T(dt, uni(rng, (6,), 0.2, 2), "v")
        dy = T(dt, uni(rng, (2, 6, 5, 3)), "dy")
        ins = [x, x2, g, b, m, v, dy]
        gnp, bnp = [x.v, g.v, b.v], [x.v, g.v, b.v, m.v, v.v]
        outs = [out("f32", group_norm(x.v, g.v, b.v, 3, 1e-5), "gn"),
                out("f32", group_norm(x2.v, g.v, b.v, 2, 1e-5), "gn2"),
                out("f32", batch_norm(x.v, g.v, b.v, m.v, v.v, 1e-5), "bn"),
                out("f32", batch_norm(x2.v, g.v, b.v, m.v, v.v, 1e-5),
                    "bn2"),
                out("f32", _vjp(_gn3, gnp, dy.v, 0), "gdx"),
                out("f32", _vjp(_gn3, gnp, dy.v, 1), "gdg"),
                out("f32", _vjp(bn_torch, bnp, dy.v, 0), "bdx"),
                out("f32", _vjp(bn_torch, bnp, dy.v, 1), "bdg")]
        c.graph(ins, "%gn = cast(group_norm(%x, %g, %b, groups=3), to=f32)\n"
                "%gn2 = cast(group_norm(%x2, %g, %b, groups=2), to=f32)\n"
                "%bn = cast(batch_norm_inference(%x, %g, %b, %m, %v), "
                "to=f32)\n"
                "%bn2 = cast(batch_norm_inference(%x2, %g, %b, %m, %v), "
                "to=f32)\n"
                "%gdx = cast(group_norm_backward_input(%x, %g, %b, %dy, "
                "groups=3), to=f32)\n"
                "%gdg = cast(group_norm_backward_gamma(%x, %g, %b, %dy, "
                "groups=3), to=f32)\n"
                "%bdx = cast(batch_norm_inference_backward_input(%x, %g, %b, "
                "%m, %v, %dy), to=f32)\n"
                "%bdg = cast(batch_norm_inference_backward_gamma(%x, %g, %b, "
                "%m, %v, %dy), to=f32)", outs_str(outs),
                comment="group_norm / batch_norm_inference and backward "
                "ops in %s (computed\nin f32, rounded once)" % dt)
        tol = "2e-2" if dt == "bf16" else "2e-3"
        c.run(ins, outs, args=["--threads", "1,2,3", "--rtol", tol,
                               "--atol", tol])
    case("gbnorm_half_" + dt)(build)


TRAIN_SHAPE = (4, 32, 16, 16)


def _train_case(name, bn):
    dt = "f32"

    def loss(ts):
        import torch.nn.functional as F
        if bn:  # by formula: torch has no gradient for mean and var
            y = bn_torch(ts["x"], ts["g"], ts["b"], ts["m"], ts["v"])
        else:
            y = F.group_norm(ts["x"], 8, ts["g"], ts["b"], 1e-5)
        return [(y * ts["w"]).sum()]

    def build(c, rng):
        from e2e_cases_flow import _grads
        ch = TRAIN_SHAPE[1]
        ins = [T(dt, uni(rng, TRAIN_SHAPE, -2, 2), "x", "param"),
               T(dt, uni(rng, TRAIN_SHAPE), "w"),
               T(dt, uni(rng, (ch,), 0.5, 1.5), "g", "param"),
               T(dt, uni(rng, (ch,)), "b", "param")]
        if bn:
            ins += [T(dt, uni(rng, (ch,)), "m", "param"),
                    T(dt, uni(rng, (ch,), 0.2, 2), "v", "param")]
            y = "batch_norm_inference(%x, %g, %b, %m, %v)"
        else:
            y = "group_norm(%x, %g, %b, groups=8)"
        wrt = [t.name for t in ins if t.kind == "param"]
        c.graph(ins, "%%loss = reduce_sum(mul(%s, %%w))" % y, "%loss",
                comment="loss = sum(w * %s) on %s; --grad gives %s_grad: "
                "loss, then d_<param>" % (y.split("(")[0], dt, name))
        fo, gr = _grads(loss, ins, wrt)
        outs = [out(dt, fo[0], "loss")]
        gouts = outs + [out(dt, g, "d_" + n) for g, n in zip(gr, wrt)]
        c.run(ins + [T(dt, 1.0, "d_output")], gouts, sub="grad",
              entry=name + "_grad", args=["--threads", "1,2,3"])
    case(name, rlxc=["--grad"])(build)


for _dt in ("f32", "f64"):
    _gn_case(_dt)
    _bn_case(_dt)
for _dt in ("f16", "bf16"):
    _half_case(_dt)
_train_case("gnorm_train", False)
_train_case("bnorm_train", True)
