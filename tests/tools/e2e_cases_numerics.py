"""e2e_cases_numerics.py -- numerics at extreme magnitudes.

softmax_cross_entropy, log_softmax and softmax on rows of huge logits
(all equal, or distinct but close: 1e7 + k, 1e8 + 8k in f32, 1e15 + k
and 1e16, 1e17 in f64, up to 3e38 / 1e300), the cross-entropy of a
fused elementwise producer, its mean over the batch, and its gradient
(rlxc --grad, plus finite differences in f64).  A loss computed as
(max + log sum exp(x - max)) - x[label] cancels to 0 or to a multiple
of the logits' ulp there; the exact loss is log 4 for 4 equal logits.
References: NumPy in float64 only (exact for these inputs: x - max is
exact), no PyTorch.
"""
import numpy as np

from e2e_lib import T, case, out, outs_str, round_to

# 4 classes per row; rows of equal, nearly equal and ordinary logits
ROWS32 = [[1e8] * 4, [1e7] * 4, [-1e8] * 4, [3e38] * 4,
          [1e7, 1e7 + 2, 1e7 + 4, 1e7 + 8],
          [1e8, 1e8 + 8, 1e8 - 8, 1e8 + 16],
          [0.5, -1.0, 2.0, 0.25]]
LAB32 = [0, 3, 1, 2, 1, 3, 2]
ROWS64 = [[1e17] * 4, [1e16] * 4, [-1e17] * 4, [1e300] * 4,
          [1e15, 1e15 + 1, 1e15 + 3, 1e15 + 6],
          [1e16, 1e16 + 2, 1e16 - 4, 1e16 + 8],
          [0.5, -1.0, 2.0, 0.25]]
LAB64 = [2, 0, 3, 1, 3, 0, 1]


def _lse_parts(x, axis):
    """max and log sum exp(x - max) along axis (keepdims)."""
    m = x.max(axis=axis, keepdims=True)
    return m, np.log(np.exp(x - m).sum(axis=axis, keepdims=True))


def log_softmax(x, axis):
    m, ls = _lse_parts(x, axis)
    return (x - m) - ls


def softmax(x, axis):
    e = np.exp(x - x.max(axis=axis, keepdims=True))
    return e / e.sum(axis=axis, keepdims=True)


def xent(logits, labels):
    """(max - x[label]) + log sum exp(x - max), per row, float64."""
    m, ls = _lse_parts(logits, 1)
    lab = np.asarray(labels).astype(np.int64)
    xl = logits[np.arange(len(lab)), lab]
    return (m[:, 0] - xl) + ls[:, 0]


def xent_grad(logits, labels, dloss):
    """(softmax(logits) - onehot(label)) * dloss[:, None]."""
    p = softmax(logits, 1)
    lab = np.asarray(labels).astype(np.int64)
    p[np.arange(len(lab)), lab] -= 1
    return p * np.asarray(dloss)[:, None]


@case()
def xent_large_logits(c, rng):
    l32 = T("f32", ROWS32, "l32")
    y32 = T("i32", LAB32, "y32")
    f32 = T("f32", LAB32, "f32")
    b32 = T("f32", [0, 8, 16, 24], "b32")
    l64 = T("f64", ROWS64, "l64")
    y64 = T("i64", LAB64, "y64")
    z32 = round_to("f32", l32.v + b32.v)  # add in f32, then the op
    e32, e64 = xent(l32.v, y32.v), xent(l64.v, y64.v)
    outs = [out("f32", e32, "e32"), out("f32", xent(l32.v, f32.v), "g32"),
            out("f32", e32.mean(), "m32"),
            out("f32", xent(z32, y32.v), "z32"),
            out("f64", e64, "e64"), out("f64", e64.mean(), "m64")]
    ins = [l32, y32, f32, b32, l64, y64]
    c.graph(ins, "%e32 = softmax_cross_entropy(%l32, %y32)\n"
            "%g32 = softmax_cross_entropy(%l32, %f32)\n"
            "%m32 = reduce_mean(%e32)\n"
            "%z32 = softmax_cross_entropy(add(%l32, %b32), %y32)\n"
            "%e64 = softmax_cross_entropy(%l64, %y64)\n"
            "%m64 = reduce_mean(%e64)", outs_str(outs),
            comment="softmax_cross_entropy of huge logits (equal: loss "
            "log 4; nearly equal;\n3e38, 1e300), i32/f32/i64 labels, a "
            "fused add producer, the batch mean")
    c.run(ins, outs)


def _huge_rows(dt):
    if dt == "f32":
        big = [[1e8] * 8, [-1e8] * 8, [3e38] * 8,
               [1e7 + k for k in (0, 1, 3, 6, 2, 5, 4, 7)],
               [1e8 + 8 * k for k in (3, 0, 1, 7, 2, 6, 5, 4)]]
    else:
        big = [[1e17] * 8, [-1e17] * 8, [1e300] * 8,
               [1e15 + k for k in (0, 1, 3, 6, 2, 5, 4, 7)],
               [1e16 + 2 * k for k in (3, 0, 1, 7, 2, 6, 5, 4)]]
    return big


def _softmax_large_case(dt):
    def build(c, rng):
        x = T(dt, _huge_rows(dt), "x")
        xt = T(dt, np.asarray(_huge_rows(dt)).T.copy(), "xt")
        outs = [out(dt, log_softmax(x.v, 1), "ls_r"),
                out(dt, softmax(x.v, 1), "sm_r"),
                out(dt, log_softmax(xt.v, 0), "ls_c"),
                out(dt, softmax(xt.v, 0), "sm_c")]
        c.graph([x, xt], "%ls_r = log_softmax(%x)\n%sm_r = softmax(%x)\n"
                "%ls_c = log_softmax(%xt, axis=0)\n"
                "%sm_c = softmax(%xt, axis=0)", outs_str(outs),
                comment="log_softmax and softmax of rows of huge equal "
                "and nearly equal\nvalues, last axis and axis 0, %s" % dt)
        c.run([x, xt], outs)
    case("softmax_large_" + dt)(build)


for _dt in ("f32", "f64"):
    _softmax_large_case(_dt)


def _xent_grad_case(name, dt, rows, labels, bias):
    """loss = mean(softmax_cross_entropy(z, y)), z = add(l, b) (a fused
    producer) or l; gradients d_l (and d_b)."""
    def build(c, rng):
        ldt = "i32" if dt == "f32" else "i64"
        y = T(ldt, labels, "y")
        lg = T(dt, rows, "l", "param")
        ins, z, zs = [y, lg], lg.v, "%l"
        if bias:
            b = T(dt, [0, 8, 16, 24] if dt == "f32" else [0, 1, 2, 4], "b",
                  "param")
            ins, z, zs = ins + [b], round_to(dt, lg.v + b.v), "add(%l, %b)"
        c.graph(ins, "%%e = softmax_cross_entropy(%s, %%y)\n"
                "%%loss = reduce_mean(%%e)" % zs, "%loss, %e",
                comment="mean cross-entropy of huge logits; --grad gives"
                "\n%s_grad: loss, e, d_l%s" % (name, ", d_b" if bias
                                                else ""))
        e = xent(z, y.v)
        n = len(labels)
        dz = xent_grad(z, y.v, np.full(n, 1.0 / n))
        outs = [out(dt, e.mean(), "loss"), out(dt, e, "e")]
        c.run(ins, outs)
        gouts = outs + [out(dt, dz, "d_l")]
        if bias:
            gouts.append(out(dt, dz.sum(axis=0), "d_b"))
        c.run(ins + [T(dt, 1.0, "d_output")], gouts, sub="grad",
              entry=name + "_grad")
        if not bias:  # the step on l is exact: finite differences
            c.run(ins, outs, sub="fwd", args=["--fd", "--grad-entry",
                                              name + "_grad"])
    case(name, rlxc=["--grad"])(build)


_xent_grad_case("xent_large_grad", "f32", ROWS32, LAB32, True)
_xent_grad_case("xent_large_grad64", "f64", ROWS64, LAB64, True)
# moderate magnitudes, where a 1e-6 step is still representable: the
# finite differences see the loss's rounding error (ulp(1e9) before)
_xent_grad_case("xent_large_grad_fd", "f64",
                [[1e9] * 4, [1e9, 1e9 + 1, 1e9 - 2, 1e9 + 0.5],
                 [-1e9, -1e9 + 3, -1e9 + 1, -1e9],
                 [1e7 + 0.25, 1e7, 1e7 - 1, 1e7 + 2]],
                [1, 3, 0, 2], False)


@case()
def dense_solve_singular(c, rng):
    """A singular system (an exactly zero pivot) makes the entry return
    RLX_ERR_SINGULAR, in dense_solve and in one system of a batch."""
    sing, reg = [[1.0, 2.0], [2.0, 4.0]], [[2.0, 1.0], [1.0, 3.0]]
    rhs = T("f32", [1.0, 1.0], "b")
    rhsb = T("f32", [[1.0, 1.0], [0.5, 2.0]], "bb")
    for sub, a, ab in (("single", sing, [reg, reg]),
                       ("batched", reg, [reg, sing])):
        ins = [T("f32", a, "a"), rhs, T("f32", ab, "ab"), rhsb]
        c.graph(ins, "%x = dense_solve(%a, %b)\n"
                "%xb = batched_dense_solve(%ab, %bb)", "%x, %xb",
                comment="a singular system: RLX_ERR_SINGULAR")
        c.run(ins, [], sub=sub, args=["--expect", "2"])


def _gelu_tanh_half_case(dt, tol):
    """gelu_tanh and its derivative with f16 / bf16 results over
    [-12, 12] and random values: the CPU's tanh form and the GPU's
    sigmoid form (docs/gpu.md) both within a rounding of the float64
    values."""
    def build(c, rng):
        xs = np.concatenate([np.linspace(-12, 12, 97),
                             rng.standard_normal(63) * 3])
        x = T(dt, xs.reshape(8, 20), "x")
        dy = T(dt, rng.standard_normal((8, 20)), "dy")
        k, a = np.sqrt(2 / np.pi), 0.044715
        xv = x.v
        th = np.tanh(k * (xv + a * xv ** 3))
        d = 0.5 * (1 + th) + 0.5 * xv * (1 - th * th) * k * (
            1 + 3 * a * xv * xv)
        outs = [out("f32", 0.5 * xv * (1 + th), "y"),
                out("f32", dy.v * d, "dx")]
        c.graph([x, dy], "%y = cast(gelu_tanh(%x), to=f32)\n"
                "%dx = cast(activation_backward(%x, %dy, kind=gelu_tanh), "
                "to=f32)", outs_str(outs), comment="gelu_tanh and its "
                "derivative in %s (results cast to f32 for the "
                "tolerance)" % dt)
        c.run([x, dy], outs, args=["--threads", "1,2", "--rtol", tol,
                                   "--atol", tol])
    case("gelu_tanh_" + dt)(build)


_gelu_tanh_half_case("bf16", "1e-2")
_gelu_tanh_half_case("f16", "2e-3")
