"""e2e_cases_quant.py -- fake quantization (language.md 6.8).

fake_quantize per tensor and per channel (axis 1, axis -2 of a rank-3
tensor), bits 8, 4, 3 and 2, with exact ties x/s = k + 0.5 (rounded half
to even: 0.5 -> 0, 1.5 -> 2, 2.5 -> 2); fake_quantize_lsq with a scalar
scale and a per-channel scale holding 0 and a negative entry (clamped to
1e-12: a zero x stays 0, any other x lands on ±Q·1e-12); and --grad
through both: the STE kinds' dx and LSQ's dx and ds (straight through the
floor where it is active); quantize / dequantize with scales near
FLT_MAX (finite in the precision they compute in). References: NumPy
float64 of ops-detail.md's formulas, written here independently of the
compiler.
"""
import numpy as np

from e2e_lib import T, case, out, outs_str


def _q(bits):
    return 2.0 ** (bits - 1) - 1


def _chan(x, axis):
    """keepdims reduction axes and the broadcast shape of a channel
    vector."""
    if axis is None:
        return tuple(range(x.ndim)), [1] * x.ndim
    axis %= x.ndim
    shape = [1] * x.ndim
    shape[axis] = x.shape[axis]
    return tuple(i for i in range(x.ndim) if i != axis), shape


def fq_range(x, bits, axis):
    """Q·s = max|x| (floored at Q·1e-12), keepdims."""
    other, _ = _chan(x, axis)
    return np.maximum(np.abs(x).max(axis=other, keepdims=True),
                      _q(bits) * 1e-12)


def fake_quantize(x, bits=8, axis=None):
    q = _q(bits)
    s = fq_range(x, bits, axis) / q
    return np.clip(np.round(x / s), -q, q) * s  # np.round: half to even


def lsq_scale(x, s, axis):
    return np.maximum(np.reshape(s, _chan(x, axis)[1]), 1e-12)


def lsq(x, s, bits=8, axis=None):
    q, S = _q(bits), lsq_scale(x, s, axis)
    return np.clip(np.round(x / S), -q, q) * S


def ste_dx(x, dy, bits, axis, ste):
    r = fq_range(x, bits, axis)
    s = r / _q(bits)
    m = {"identity": np.ones_like(x), "clipped": np.abs(x) <= r,
         "tanh": 1 - np.tanh(x / s) ** 2,
         "hardtanh": np.maximum(0, 1 - np.abs(x / r))}[ste]
    return dy * m


def lsq_grads(x, s, dy, bits, axis, gs):
    q, S = _q(bits), lsq_scale(x, s, axis)
    z = x / S
    inside = np.abs(z) <= q
    psi = np.where(inside, np.round(z) - z, np.sign(z) * q)
    if gs:
        psi = psi / np.sqrt(x.size / S.size * q)
    other, _ = _chan(x, axis)
    return (np.where(inside, dy, 0),
            (psi * dy).sum(axis=other).reshape(np.shape(s)))


# per-tensor, max|x| = 127 (bits 8): s = 1, ties at .5
X8 = [[0.5, 1.5, 2.5, -2.5, -3.5, 127.0],
      [-0.49, 0.51, 3.49, -126.5, 10.25, -7.75],
      [4.5, 5.5, -0.5, -1.5, 100.0, 0.0],
      [60.5, -61.5, 0.125, 2.0, -3.0, 6.5]]
# per channel (axis 1), bits 4: column maxima 3.5 (s = 0.5: ties at 0.25,
# 0.75, 1.25), 7 (s = 1), 1.75 (s = 0.25) and three ordinary columns
XC = [[0.25, 0.5, 0.125, 0.3, -1.1, 2.0],
      [0.75, 1.5, -0.375, -0.9, 0.7, -0.2],
      [1.25, -2.5, 1.75, 0.05, 0.4, 1.3],
      [-3.5, 7.0, -0.625, 1.2, -0.15, 0.6]]


def _fwd_case(dt):
    def build(c, rng):
        x8, xc = T(dt, X8, "x8"), T(dt, XC, "xc")
        x3 = T(dt, rng.uniform(-2, 2, size=(2, 3, 5)), "x3")
        s0 = T(dt, 0.25, "s0")
        sc = T(dt, [0.5, 0.0, -0.3, 0.2, 0.1, 0.4], "sc")
        outs = [out(dt, fake_quantize(x8.v, 8), "p8"),
                out(dt, fake_quantize(xc.v, 4, 1), "pc"),
                out(dt, fake_quantize(x3.v, 3, -2), "pn"),
                out(dt, fake_quantize(xc.v, 2), "p2"),
                out(dt, lsq(xc.v, s0.v, 4), "l0"),
                out(dt, lsq(xc.v, sc.v, 3, 1), "lc")]
        ins = [x8, xc, x3, s0, sc]
        c.graph(ins, "%p8 = fake_quantize(%x8)\n"
                "%pc = fake_quantize(%xc, bits=4, axis=1, ste=tanh)\n"
                "%pn = fake_quantize(%x3, bits=3, axis=-2)\n"
                "%p2 = fake_quantize(%xc, bits=2, ste=clipped)\n"
                "%l0 = fake_quantize_lsq(%xc, %s0, bits=4)\n"
                "%lc = fake_quantize_lsq(%xc, %sc, bits=3, axis=1)",
                outs_str(outs),
                comment="fake_quantize per tensor and per channel (ties "
                "at .5, half to even),\nfake_quantize_lsq with a scalar "
                "scale and a [6] scale holding 0 and -0.3, %s" % dt)
        c.run(ins, outs)
    case("fake_quantize_" + dt)(build)


for _dt in ("f32", "f64"):
    _fwd_case(_dt)


@case()
def fake_quantize_f16(c, rng):
    """f16 (computed in f32, rounded per op): an all-zero channel and a
    zero scale give zeros, never 0/0 (the floor is 2^-24 in f16)."""
    x = T("f16", [[0.0, 0.4, 1.1], [0.0, -2.6, -3.5], [0.0, 7.0, 0.3]], "x")
    s = T("f16", [0.0, 0.5, 0.25], "s")
    outs = [out("f16", fake_quantize(x.v, 4, 1), "p"),
            out("f16", lsq(x.v, s.v, 4, -1), "l")]
    c.graph([x, s], "%p = fake_quantize(%x, bits=4, axis=1)\n"
            "%l = fake_quantize_lsq(%x, %s, bits=4, axis=-1)",
            outs_str(outs), comment="fake quantization in f16: zero "
            "channel, zero scale")
    c.run([x, s], outs)


def _grad_case(dt):
    """loss = Σ w·(fq_tanh(a) + fq_hardtanh(a, axis=0) + fq_clipped(a)
    + fq(a)) + Σ w·lsq(b, s, axis=1, grad_scale), s holding 0."""
    def build(c, rng):
        a = T(dt, rng.uniform(-2, 2, size=(3, 4)), "a", "param")
        b = T(dt, rng.uniform(-2, 2, size=(3, 4)), "b", "param")
        s = T(dt, [0.3, 0.0, 0.6, -0.2], "s", "param")
        w = T(dt, rng.uniform(-1, 1, size=(3, 4)), "w")
        ins = [a, b, s, w]
        kinds = [("tanh", None, 4), ("hardtanh", 0, 5), ("clipped", 1, 3),
                 ("identity", None, 8)]
        y = sum(fake_quantize(a.v, bits, ax) for _, ax, bits in kinds)
        y = y + lsq(b.v, s.v, 3, 1)
        loss = (w.v * y).sum()
        da = sum(ste_dx(a.v, w.v, bits, ax, k) for k, ax, bits in kinds)
        db, ds = lsq_grads(b.v, s.v, w.v, 3, 1, True)
        body = []
        for i, (k, ax, bits) in enumerate(kinds):
            at = ", axis=%d" % ax if ax is not None else ""
            body.append("%%f%d = fake_quantize(%%a, bits=%d%s, ste=%s)"
                        % (i, bits, at, k))
        body += ["%l = fake_quantize_lsq(%b, %s, bits=3, axis=1, "
                 "grad_scale=true)",
                 "%y = add(add(add(%f0, %f1), add(%f2, %f3)), %l)",
                 "%loss = reduce_sum(mul(%w, %y))"]
        outs = [out(dt, loss, "loss")]
        c.graph(ins, "\n".join(body), "%loss",
                comment="--grad through fake_quantize (each STE kind) "
                "and fake_quantize_lsq\n(grad_scale, a zero and a "
                "negative scale: ds straight through the floor), %s" % dt)
        c.run(ins, outs)
        gouts = outs + [out(dt, da, "d_a"), out(dt, db, "d_b"),
                        out(dt, ds, "d_s")]
        c.run(ins + [T(dt, 1.0, "d_output")], gouts, sub="grad",
              entry="fake_quantize_grad_%s_grad" % dt)
    case("fake_quantize_grad_" + dt, rlxc=["--grad"])(build)


for _dt in ("f32", "f64"):
    _grad_case(_dt)


def _quantize(x, s, zp=0):
    with np.errstate(invalid="ignore", over="ignore"):
        return np.clip(np.rint(np.asarray(x) / s) + zp, -128, 127)


@case()
def quantize_large_scale(c, rng):
    """quantize / dequantize with a scale near the top of f32's range.
    3.0e38 is finite in f32, so f32 x is quantized in f32 without inf
    (±inf -> 127 / -128, ±3.4e38 -> ±1); f64 x takes 3.5e38 (beyond
    f32: a diagnostic for f32 x) and is quantized in f64; dequantize
    with 3.0e38 gives (q - zp)·3.0e38 in f32."""
    x = T("f32", [np.inf, -np.inf, 3.4e38, -3.4e38, 2.4e38, 0.0, 1e30],
          "x")
    xd = T("f64", [np.inf, -np.inf, 3.4e38, -3.4e38, 1e300, 0.0], "xd")
    q = T("i8", [1, 2, 0, 1], "q")
    outs = [out("i8", _quantize(x.v, 3.0e38), "a"),
            out("i8", _quantize(x.v, 3.0e38, -5), "b"),
            out("i8", _quantize(xd.v, 3.5e38), "c"),
            out("f32", (q.v - 1) * np.float64(np.float32(3.0e38)), "d")]
    c.graph([x, xd, q], "%a = quantize(%x, scale=3.0e38)\n"
            "%b = quantize(%x, scale=3.0e38, zero_point=-5)\n"
            "%c = quantize(%xd, scale=3.5e38)\n"
            "%d = dequantize(%q, scale=3.0e38, zero_point=1)",
            outs_str(outs), comment="quantize/dequantize with scales "
            "near FLT_MAX: 3.0e38 (f32), 3.5e38 (f64 x)")
    c.run([x, xd, q], outs)
