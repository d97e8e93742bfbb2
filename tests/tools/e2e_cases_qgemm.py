"""e2e_cases_qgemm.py -- q_matmul and q_conv2d (language.md 6.8),
int8 in, int8 out, bit-exact.

The reference is NumPy integer arithmetic: acc = bias + sum (x - x_zp)
(w - w_zp) in int64, wrapped to i32, times float64(float32(mult)) (one
IEEE double product), np.rint (half to even), plus out_zp, clipped to
[-128, 127].  Forms: zero points at both ends of their range, sizes
that are not multiples of the kernels' tiles, mult values that make
many results saturate, that make every product a multiple of 1/2 (ties
both ways) and that take the product far beyond i32; a bias that wraps
the accumulator; convolutions with stride, padding (cells hold x_zp),
dilation, groups, depthwise, 1x1 (read in place) and non-square
kernels; an operand that is a reshape (alias).  Runs at 1 and 3 threads
(bit-identical), with and without a workspace.
"""
import numpy as np

from e2e_lib import T, case, out, outs_str

I8 = (-128, 128)


def requant(acc, mult, ozp):
    """The i8 result of int64 accumulators (see the module doc)."""
    a32 = ((acc + 2**31) % 2**32 - 2**31).astype(np.float64)
    r = np.rint(a32 * np.float64(np.float32(mult))) + ozp
    return np.clip(r, -128, 127).astype(np.int64)


def q_matmul_ref(x, w, bias, mult, xz, wz, ozp):
    acc = bias[None, :] + (x - xz) @ (w - wz)
    return requant(acc, mult, ozp)


def q_conv2d_ref(x, w, bias, mult, xz, wz, ozp, s, p, d, g):
    n, c, h, wd = x.shape
    co, cg, kh, kw = w.shape
    oh = (h + 2 * p[0] - d[0] * (kh - 1) - 1) // s[0] + 1
    ow = (wd + 2 * p[1] - d[1] * (kw - 1) - 1) // s[1] + 1
    xp = np.full((n, c, h + 2 * p[0], wd + 2 * p[1]), xz, dtype=np.int64)
    xp[:, :, p[0]:p[0] + h, p[1]:p[1] + wd] = x
    cog = co // g
    acc = np.zeros((n, co, oh, ow), dtype=np.int64) + bias[None, :, None,
                                                          None]
    for i in range(kh):
        for j in range(kw):
            win = xp[:, :, i * d[0]:i * d[0] + s[0] * (oh - 1) + 1:s[0],
                     j * d[1]:j * d[1] + s[1] * (ow - 1) + 1:s[1]] - xz
            for gi in range(g):
                wg = w[gi * cog:(gi + 1) * cog, :, i, j] - wz  # [cog, cg]
                xg = win[:, gi * cg:(gi + 1) * cg]  # [n, cg, oh, ow]
                acc[:, gi * cog:(gi + 1) * cog] += np.einsum(
                    "oc,nchw->nohw", wg, xg)
    return requant(acc, mult, ozp)


def _attrs(mult, xz, wz, oz):
    return "mult=%r, x_zp=%d, w_zp=%d, out_zp=%d" % (mult, xz, wz, oz)


# (M, K, N, mult, x_zp, w_zp, out_zp, x range, w range, bias range);
# x ranges marked "even" hold even values only: with an even x_zp and
# mult 1/4, a quarter of the results are exact ties (acc = 2 mod 4).
MM_FORMS = [(5, 7, 3, 0.004, 1, -2, 5, I8, I8, (-3000, 3000)),
            (33, 65, 70, 1e-4, -128, 127, 127, I8, I8, (-10**5, 10**5)),
            (9, 130, 40, 0.25, 2, 0, 3, (-4, 5, "even"), (-8, 9), (-9, 9)),
            (8, 32, 32, 0.25, -4, 1, 0, (-6, 7, "even"), (-9, 9),
             (-99, 99)),
            (17, 4, 10, 1e-9, 0, 0, 0, I8, I8, (2**31 - 600, 2**31 - 1)),
            (3, 6, 5, 1e30, 3, 3, 120, I8, I8, (-5, 5)),
            (1, 1, 1, 0.5, 0, 0, -1, I8, I8, (-4, 4))]


@case()
def q_matmul_forms(c, rng):
    """Every form of q_matmul against the NumPy integer reference."""
    ins, body, outs = [], [], []
    for f, (m, k, n, mult, xz, wz, oz, xr, wr, br) in enumerate(MM_FORMS):
        xv = rng.integers(xr[0], xr[1], size=(m, k))
        if "even" in xr:
            xv &= ~1
        x = T("i8", xv, "x%d" % f)
        w = T("i8", rng.integers(wr[0], wr[1], size=(k, n)), "w%d" % f)
        b = T("i32", rng.integers(br[0], br[1], size=(n,), endpoint=True),
              "b%d" % f)
        ins += [x, w, b]
        body.append("%%y%d = q_matmul(%%x%d, %%w%d, %%b%d, %s)"
                    % (f, f, f, f, _attrs(mult, xz, wz, oz)))
        outs.append(out("i8", q_matmul_ref(x.v, w.v, b.v, mult, xz, wz,
                                           oz), "y%d" % f))
    # operands that are aliases (reshapes of flat inputs), a const bias
    xf = T("i8", rng.integers(*I8, size=(4 * 6,)), "xflat")
    wf = T("i8", rng.integers(*I8, size=(6 * 5,)), "wflat")
    ins += [xf, wf]
    body += ["%rb = const i32[5] [-7, 0, 3, 100, -250]",
             "%r = q_matmul(reshape(%xflat, shape=[4, 6]), "
             "reshape(%wflat, shape=[6, 5]), %rb, mult=0.01, x_zp=-1)"]
    outs.append(out("i8", q_matmul_ref(
        xf.v.reshape(4, 6), wf.v.reshape(6, 5),
        np.array([-7, 0, 3, 100, -250]), 0.01, -1, 0, 0), "r"))
    c.graph(ins, "\n".join(body), outs_str(outs),
            comment="q_matmul: zero points, odd sizes, saturation, ties, "
            "a wrapping bias,\nhuge mult, an alias operand and a constant "
            "bias; bit-exact")
    c.run(ins, outs, args=["--threads", "1,3", "--null-ws"])


@case()
def q_matmul_mults(c, rng):
    """Per-channel requantization: a fourth operand of f32 column
    multipliers, column j scaled by float64(mult) * float64(mults[j]);
    multiples of 1/8 with even x make ties."""
    m, k, n, mult, xz, wz, oz = 9, 37, 35, 0.5, 2, -1, -128
    x = T("i8", rng.integers(-20, 20, size=(m, k)) & ~1, "x")
    w = T("i8", rng.integers(*I8, size=(k, n)), "w")
    b = T("i32", rng.integers(-500, 500, size=(n,), endpoint=True), "b")
    s = T("f32", rng.integers(1, 9, size=(n,)) / 256.0, "s")
    acc = b.v[None, :] + (x.v - xz) @ (w.v - wz)
    a32 = ((acc + 2**31) % 2**32 - 2**31).astype(np.float64)
    cm = np.float64(np.float32(mult)) * s.v.astype(np.float32).astype(
        np.float64)
    y = np.clip(np.rint(a32 * cm[None, :]) + oz, -128, 127).astype(np.int64)
    c.graph([x, w, b, s], "%%y = q_matmul(%%x, %%w, %%b, %%s, %s)"
            % _attrs(mult, xz, wz, oz), "%y",
            comment="q_matmul with per-channel multipliers; bit-exact")
    c.run([x, w, b, s], [out("i8", y, "y")],
          args=["--threads", "1,3", "--null-ws"])


# (x shape, w shape, stride, padding, dilation, groups, mult, zps)
CONV_FORMS = [
    ((2, 3, 6, 5), (4, 3, 3, 3), (1, 1), (0, 0), (1, 1), 1, 0.002,
     (0, 0, 0)),
    ((1, 2, 8, 7), (3, 2, 3, 3), (2, 2), (1, 1), (1, 1), 1, 0.003,
     (5, -3, 9)),
    ((1, 2, 3, 4), (2, 2, 2, 3), (1, 1), (3, 2), (1, 1), 1, 0.0004,
     (-128, 127, 127)),
    ((1, 2, 9, 8), (3, 2, 3, 2), (1, 1), (0, 1), (2, 2), 1, 0.0004,
     (127, -128, 100)),
    ((2, 4, 6, 5), (6, 2, 3, 3), (1, 2), (1, 0), (1, 1), 2, 0.003,
     (7, 2, -3)),
    ((1, 3, 6, 6), (6, 1, 3, 3), (1, 1), (1, 1), (1, 1), 3, 0.005,
     (0, 0, -128)),
    ((2, 5, 7, 9), (11, 5, 1, 1), (1, 1), (0, 0), (1, 1), 1, 0.004,
     (-2, 3, 4)),
    ((1, 16, 12, 12), (40, 16, 3, 3), (1, 1), (1, 1), (1, 1), 1, 0.0005,
     (10, -1, 2))]


@case()
def q_conv2d_forms(c, rng):
    """Every attribute form of q_conv2d against the NumPy reference."""
    ins, body, outs = [], [], []
    for f, (xs, ws, s, p, d, g, mult, (xz, wz, oz)) in enumerate(
            CONV_FORMS):
        x = T("i8", rng.integers(*I8, size=xs), "x%d" % f)
        w = T("i8", rng.integers(*I8, size=ws), "w%d" % f)
        b = T("i32", rng.integers(-20000, 20000, size=(ws[0],)), "b%d" % f)
        ins += [x, w, b]
        body.append("%%y%d = q_conv2d(%%x%d, %%w%d, %%b%d, %s, "
                    "stride=[%d, %d], padding=[%d, %d], dilation=[%d, %d], "
                    "groups=%d)" % ((f, f, f, f, _attrs(mult, xz, wz, oz))
                                    + s + p + d + (g,)))
        outs.append(out("i8", q_conv2d_ref(x.v, w.v, b.v, mult, xz, wz, oz,
                                           s, p, d, g), "y%d" % f))
    c.graph(ins, "\n".join(body), outs_str(outs),
            comment="q_conv2d: stride, padding (cells hold x_zp), "
            "dilation, groups, depthwise,\n1x1, non-square kernels, zero "
            "points; bit-exact")
    c.run(ins, outs, args=["--threads", "1,3", "--null-ws"])
