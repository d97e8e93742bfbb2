"""e2e_cases_norm.py -- layer_norm and rms_norm forward (language.md 6.5).

Every normalized-axis form (last axis; a middle axis, so the kernel
runs over column groups with a vector part and a scalar tail; axis 0),
eps, row lengths that are not a multiple of the vector width, rows
with a large common offset (variance by deviations, not E[x^2] -
E[x]^2), f32 and f64 against NumPy float64. f16 and bf16 are computed
in f32 and rounded once: their results are cast to f32 and compared
with a tolerance of a few ulps of the half type. The backward ops are
checked by the gradient suite (tests/gradcheck/).
"""
import numpy as np

from e2e_lib import T, case, out, outs_str


def layer_norm(x, g, b, axis=-1, eps=1e-5):
    mu = x.mean(axis=axis, keepdims=True)
    var = ((x - mu) ** 2).mean(axis=axis, keepdims=True)
    return (x - mu) / np.sqrt(var + eps) * _ch(g, x, axis) + _ch(b, x, axis)


def rms_norm(x, g, b, axis=-1, eps=1e-6):
    ms = (x * x).mean(axis=axis, keepdims=True)
    return x / np.sqrt(ms + eps) * _ch(g, x, axis) + _ch(b, x, axis)


def _ch(v, x, axis):
    """[C] parameter broadcast along axis of x."""
    ax = axis % x.ndim
    shape = [1] * x.ndim
    shape[ax] = -1
    return np.asarray(v).reshape(shape)


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
            for op, fn, e0 in (("layer_norm", layer_norm, 1e-5),
                               ("rms_norm", rms_norm, 1e-6)):
                a = "" if axis == -1 else ", axis=%d" % axis
                a += "" if eps is None else ", eps=%g" % eps
                nm = "%s%d" % (op[0], k)
                body.append("%%%s = %s(%%x%d, %%g%d, %%b%d%s)" %
                            (nm, op, k, k, k, a))
                outs.append(out(dt, fn(x.v, g.v, b.v, axis,
                                       e0 if eps is None else eps), nm))
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
        outs = [out("f32", layer_norm(x.v, g.v, b.v), "l"),
                out("f32", rms_norm(x.v, g.v, b.v), "r"),
                out("f32", layer_norm(xt.v, g.v, b.v, 1), "lt"),
                out("f32", rms_norm(xt.v, g.v, b.v, 1), "rt")]
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
