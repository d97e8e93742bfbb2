"""e2e_cases_gnorm.py -- group_norm and batch_norm_inference (language.md
6.5) against torch.nn.functional in float64.

Forward: x [N, C] and 1, 2 and 3 spatial dims; groups 1, a divisor and
C; eps; spatial sizes that are not a multiple of the vector width (the
kernels' scalar tails); rows with a large common offset (variance by
deviations); one shape large enough that units run on several threads.
f32 and f64. f16 and bf16 (the forward ops and the dx / dgamma
kernels) are computed in f32 and rounded once, their results cast to
f32 and compared with a tolerance of a few half ulps. Every run repeats
at 1, 2 and 3 threads (bit-identical).

Training (rlxc --grad): loss = sum(w * norm(x)) on [4, 32, 16, 16], so
the backward kernels (dx, and the dgamma/dbeta sums over N and the
spatial dims) run threaded; batch_norm also with mean and var as
params. The backward ops are checked one by one, first and second
order, by the gradient suite (tests/gradcheck/).
"""
import torch
import torch.nn.functional as F

from e2e_cases_flow import _grads
from e2e_lib import T, case, out, outs_str, tt, uni

# group_norm: (x shape, groups, eps attribute or None, offset added to x)
GN_FORMS = [((2, 6, 5), 2, None, 0.0), ((2, 6, 4, 5), 3, 1e-3, 0.0),
            ((2, 6, 4, 5), 1, None, 0.0), ((2, 6, 4, 5), 6, None, 0.0),
            ((2, 4, 3, 2, 3), 2, None, 0.0), ((3, 6), 3, None, 0.0),
            ((2, 4, 9, 7), 2, None, 1000.0), ((4, 32, 16, 16), 8, None, 0.0)]
# batch_norm_inference: (x shape, eps attribute or None)
BN_FORMS = [((2, 6, 5), None), ((2, 5, 4, 7), 1e-3), ((3, 6), None),
            ((2, 3, 2, 3, 4), None), ((4, 32, 16, 16), None)]


def group_norm(x, g, b, groups, eps):
    return F.group_norm(tt(x), groups, tt(g), tt(b), eps).numpy()


def batch_norm(x, g, b, m, v, eps):
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


def _bn_formula(x, g, b, m, v, eps=1e-5):
    sh = (1, -1) + (1,) * (x.dim() - 2)
    return (x - m.reshape(sh)) * torch.rsqrt(v.reshape(sh) + eps) * \
        g.reshape(sh) + b.reshape(sh)


def _vjp(f, args, dy, i):
    """d sum(dy * f(args)) / d args[i] in float64."""
    ts = [tt(a).requires_grad_(True) for a in args]
    (d,) = torch.autograd.grad((f(*ts) * tt(dy)).sum(), ts[i])
    return d.numpy()


def _gn3(x, g, b):
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
                out("f32", _vjp(_bn_formula, bnp, dy.v, 0), "bdx"),
                out("f32", _vjp(_bn_formula, bnp, dy.v, 1), "bdg")]
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
        if bn:  # by formula: torch has no gradient for mean and var
            y = _bn_formula(ts["x"], ts["g"], ts["b"], ts["m"], ts["v"])
        else:
            y = F.group_norm(ts["x"], 8, ts["g"], ts["b"], 1e-5)
        return [(y * ts["w"]).sum()]

    def build(c, rng):
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
