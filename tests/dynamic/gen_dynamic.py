#!/usr/bin/python3
"""Goldens of tests/dynamic (NumPy, float64): each case's inputs at the
bound and, for every tested size, the outputs computed from the first
`size` rows. data/CASE.bin, little-endian: u32 inputs, u32 outputs,
u32 sizes, the sizes (i64); per input a u32 kind (0 f32, 1 i32), u32
count and float64 values (kind bit 2: one such count and values per
size, the input dense at that size, for a dynamic axis after the
first); per size and output a u32 count and float64 values.
Run: /usr/bin/python3 tests/dynamic/gen_dynamic.py"""
import os
import struct

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
F64 = np.float64


def put(f, a):
    a = np.ascontiguousarray(a, dtype=F64).ravel()
    f.write(struct.pack("<I", a.size))
    f.write(a.astype("<f8").tobytes())


def mlp(rng, rows=64, sizes=(0, 1, 7, 17, 64)):
    f32 = lambda *s: rng.standard_normal(s).astype(np.float32)
    ins = [f32(rows, 8), f32(rows, 3), f32(8, 16) * 0.5, f32(16) * 0.1,
           f32(16, 3) * 0.5]

    def run(n):
        x, skip, w1, b1, w2 = [a.astype(F64) for a in ins]
        x, skip = x[:n], skip[:n]
        h = np.maximum(x @ w1 + b1, 0)
        flat = x.reshape(-1, 4)
        return [np.tanh(h @ w2) + skip, flat, flat * flat]
    return ins, list(sizes), run


def mlpu(rng):  # mlp.rlx without a bound: one object past 64 rows too
    return mlp(rng, 300, (0, 1, 7, 64, 300))


def heads(rng):
    x = (rng.standard_normal((40, 10)) * 3).astype(np.float32)
    labels = rng.integers(0, 10, 40).astype(np.int32)

    def run(n):
        xd = x[:n].astype(F64)
        m = xd.max(axis=1, keepdims=True) if n else np.zeros((0, 1))
        e = np.exp(xd - m)
        s = e.sum(axis=1, keepdims=True)
        lp = xd - m - np.log(s)
        xe = -lp[np.arange(n), labels[:n]]
        with np.errstate(invalid="ignore"):
            loss = xe.mean() if n else np.nan
        colmax = xd.max(axis=0) if n else np.full(10, -np.inf)
        return [e / s, lp, xd.mean(axis=1), xd.sum(axis=0), colmax, xe,
                np.array([loss]), np.array([xd.sum()])]
    return [x, labels], [0, 1, 9, 40], run


def train(rng, rows=32, sizes=(0, 1, 5, 8, 9, 32)):
    f32 = lambda *s: rng.standard_normal(s).astype(np.float32)
    x, y = f32(rows, 6), rng.integers(0, 4, rows).astype(np.int32)
    w1, b1, w2, b2 = f32(6, 8) * 0.5, f32(8) * 0.1, f32(8, 4) * 0.5, f32(4)
    dout = np.ones((), np.float32)

    def run(n):
        xd, yd = x[:n].astype(F64), y[:n]
        W1, B1, W2, B2 = [a.astype(F64) for a in (w1, b1, w2, b2)]
        pre = xd @ W1 + B1
        h = np.maximum(pre, 0)
        z = h @ W2 + B2
        m = z.max(axis=1, keepdims=True) if n else np.zeros((0, 1))
        e = np.exp(z - m)
        p = e / e.sum(axis=1, keepdims=True)
        lp = np.log(p) if n else p
        with np.errstate(invalid="ignore"):
            loss = -lp[np.arange(n), yd].mean() if n else np.nan
        dz = p.copy()
        dz[np.arange(n), yd] -= 1
        dz /= max(n, 1)
        dh = (dz @ W2.T) * (pre > 0)
        return [np.array([loss]), xd.T @ dh, dh.sum(axis=0), h.T @ dz,
                dz.sum(axis=0)]
    return [x, y, w1, b1, w2, b2, dout], list(sizes), run


def trainu(rng):  # train.rlx without a bound
    return train(rng, 700, (0, 1, 9, 32, 700))


def norms(rng):
    x = (rng.standard_normal((24, 3, 12)) * 2 + 0.5).astype(np.float32)
    gamma = (rng.standard_normal(12) + 1).astype(np.float32)
    beta = (rng.standard_normal(12) * 0.1).astype(np.float32)

    def ln(v, eps):
        mu = v.mean(axis=-1, keepdims=True)
        var = ((v - mu) ** 2).mean(axis=-1, keepdims=True)
        return (v - mu) / np.sqrt(var + eps) * gamma + beta

    def run(n):
        xd = x[:n].astype(F64)
        rms = xd / np.sqrt((xd * xd).mean(axis=-1, keepdims=True) + 1e-5)
        return [ln(xd, 1e-5), rms * gamma + beta, ln(np.tanh(xd), 1e-3)]
    return [x, gamma, beta], [0, 1, 5, 24], run


class PerSize:
    """An input given at each size (a dynamic axis after the first)."""
    def __init__(self, full, cut):
        self.full, self.cut = full, cut
        self.dtype = full.dtype


def attention(q, k, v, heads, mask="none", keep=None, bias=None,
              window=0, scale=None, softcap=0.0):
    """language.md's attention on [B, L, H*D] (heads given) or
    [B, H, L, D] (heads None), float64."""
    if heads:
        b = q.shape[0]
        split = lambda x: x.reshape(b, x.shape[1], heads,
                                    x.shape[2] // heads).transpose(0, 2, 1, 3)
        q, k, v = split(q), split(k), split(v)
    lq, lk, d = q.shape[2], k.shape[2], q.shape[3]
    s = q @ k.transpose(0, 1, 3, 2) * (scale or 1 / np.sqrt(d))
    if softcap:
        s = softcap * np.tanh(s / softcap)
    i = np.arange(lq)[:, None] + (lk - lq)
    j = np.arange(lk)[None, :]
    ok = np.ones((q.shape[0], 1, lq, lk), bool)
    if mask in ("causal", "sliding_window"):
        ok &= j <= i
    if mask == "sliding_window":
        ok &= j >= i - window
    if mask == "custom":
        ok &= (keep >= 0.5)[:, None, None, :]
    if mask == "bias":
        s = s + bias
    s = np.where(ok, s, -np.inf)
    m = s.max(axis=-1, keepdims=True) if lk else np.zeros(s.shape[:-1] + (1,))
    m = np.where(np.isfinite(m), m, 0)
    e = np.exp(s - m)
    den = e.sum(axis=-1, keepdims=True)
    o = (e / np.where(den > 0, den, 1)) @ v
    if heads:
        o = o.transpose(0, 2, 1, 3).reshape(b, lq, o.shape[1] * o.shape[3])
    return o


def rope(x, cos, sin, d, rot, neg=False):
    """NeoX rope of [B, S, H*D] with n_rot rot; neg: rope_backward."""
    b, s, e = x.shape
    h = x.reshape(b, s, e // d, d).copy()  # heads of d
    half = rot // 2
    c, sn = cos[:s, None, :half], sin[:s, None, :half] * (-1 if neg else 1)
    x1, x2 = h[..., :half].copy(), h[..., half:rot].copy()
    h[..., :half] = x1 * c - x2 * sn
    h[..., half:rot] = x2 * c + x1 * sn
    return h.reshape(b, s, e)


def seq(rng):
    t_max = 21
    f32 = lambda *s: rng.standard_normal(s).astype(np.float32)
    q, k, v = f32(2, t_max, 16), f32(2, t_max, 16), f32(2, t_max, 16)
    ang = rng.uniform(0, 6.3, (t_max, 3))
    cos, sin = np.cos(ang).astype(np.float32), np.sin(ang).astype(np.float32)
    keep = (rng.uniform(size=(2, t_max)) > 0.3).astype(np.float32)
    bias = f32(2, 2, t_max, t_max)
    q4 = f32(2, 2, t_max, 8)
    gamma = (rng.standard_normal(16) + 1).astype(np.float32)
    beta = (rng.standard_normal(16) * 0.1).astype(np.float32)
    cut1 = lambda a, t: a[:, :t]
    ids = rng.integers(0, 16, (2, t_max)).astype(np.int32)
    ins = [PerSize(q, cut1), PerSize(k, cut1), PerSize(v, cut1), cos, sin,
           PerSize(keep, cut1), PerSize(bias, lambda a, t: a[:, :, :t, :t]),
           PerSize(q4, lambda a, t: a[:, :, :t]), PerSize(ids, cut1), gamma,
           beta]

    def norm(x, rms, eps):
        mu = 0 if rms else x.mean(axis=-1, keepdims=True)
        var = ((x - mu) ** 2).mean(axis=-1, keepdims=True)
        return (x - mu) / np.sqrt(var + eps) * gamma + beta

    def run(t):
        Q, K, V = [a[:, :t].astype(F64) for a in (q, k, v)]
        Q4 = q4[:, :, :t].astype(F64)
        B4 = bias[:, :, :t, :t].astype(F64)
        C, S = cos.astype(F64), sin.astype(F64)
        qr, kr = rope(Q, C, S, 8, 6), rope(K, C, S, 8, 6, neg=True)
        e = np.exp(K - K.max(axis=2, keepdims=True)) if t else K
        ew = np.tanh(Q + beta) + K * V
        lp = Q4 - (Q4.max(axis=-1, keepdims=True) if t else 0)
        lp -= np.log(np.exp(lp).sum(axis=-1, keepdims=True))
        return [qr, kr, attention(qr, kr, V, 2, "causal"),
                attention(Q, K, V, 2, scale=0.5),
                attention(Q, K, V, 2, "sliding_window", window=2),
                attention(Q, K, V, 2, "custom", keep=keep[:, :t]),
                attention(Q, K, V, 2, "bias", bias=B4, softcap=3.0),
                attention(Q4, Q4, Q4, None, "causal"),
                norm(V, False, 1e-5), norm(Q, True, 1e-5),
                e / e.sum(axis=2, keepdims=True), lp, ew,
                ew.sum(axis=(0, 1)), Q4.mean(axis=3, keepdims=True),
                gamma[ids[:, :t]], Q[:, :, 4:12],
                np.concatenate([Q[:, :, 4:12], K], axis=-1)]
    return ins, [0, 1, 13, t_max], run


def attnb(rng):
    q = rng.standard_normal((5, 2, 7, 8)).astype(np.float32)
    k = rng.standard_normal((5, 2, 7, 8)).astype(np.float32)
    w = (rng.standard_normal((8, 8)) * 0.5).astype(np.float32)
    dout = np.ones((), np.float32)

    def run(n):
        Q, K, W = q[:n].astype(F64), k[:n].astype(F64), w.astype(F64)
        V = K @ W
        d = 8
        s = Q @ K.transpose(0, 1, 3, 2) / np.sqrt(d)
        s = np.where(np.tril(np.ones((7, 7), bool)), s, -np.inf)
        p = np.exp(s - s.max(axis=-1, keepdims=True)) if n else s
        p = p / p.sum(axis=-1, keepdims=True) if n else p
        a = p @ V
        # d loss / d w = sum over keys of k^T (p^T 2a)
        dv = p.transpose(0, 1, 3, 2) @ (2 * a)
        dw = K.reshape(-1, 8).T @ dv.reshape(-1, 8)
        return [np.array([(a * a).sum()]), dw]
    return [q, k, w, dout], [0, 1, 3, 5], run


def cum(rng):
    t_max = 21
    f32 = lambda *s: rng.standard_normal(s).astype(np.float32)
    x, r, s = f32(2, t_max, 16), f32(t_max, 3), f32(2, t_max)
    h0, xs, w = f32(2, 4), f32(t_max, 2, 4), f32(4, 4) * 0.5
    cut1 = lambda a, t: a[:, :t]

    def scan(t, reverse=False):
        h, W, hs = h0.astype(F64), w.astype(F64), []
        for k in reversed(range(t)) if reverse else range(t):
            h = np.tanh(h @ W + xs[k])
            hs.append(h)
        return np.array(hs).reshape(t, 2, 4), h

    def suffix(a, axis, exclusive=False):
        c = np.flip(np.cumsum(np.flip(a, axis), axis), axis)
        return c - a if exclusive else c

    def run(t):
        X, R, S = x[:, :t].astype(F64), r[:t].astype(F64), s[:, :t].astype(F64)
        a = np.cumsum(X, axis=1)
        return [a, a - X, np.cumsum(X, axis=2), suffix(X, 1),
                np.cumsum(R, axis=0), suffix(R, 0, True), np.cumsum(S, axis=1),
                suffix(S, 1), scan(t)[0], scan(t, True)[1],
                np.cumsum(S, axis=0), suffix(X, 0, True)]
    return ([PerSize(x, cut1), r, PerSize(s, cut1), h0, xs, w],
            [0, 1, 13, t_max], run)


def bcast(rng):
    t_max = 21
    f32 = lambda *s: rng.standard_normal(s).astype(np.float32)
    x, p, s = f32(2, t_max, 16), f32(t_max, 16), f32(2, t_max, t_max)
    r, c, k = f32(2, t_max, 1), f32(t_max, 1), f32(2, 1, t_max)
    cut1 = lambda a, t: a[:, :t]

    def run(t):
        X, P = x[:, :t].astype(F64), p[:t].astype(F64)
        S = s[:, :t, :t].astype(F64)
        R, C = r[:, :t].astype(F64), c[:t].astype(F64)
        y = X + P
        z = (S - R) * C
        with np.errstate(invalid="ignore"):
            gm = S.mean(axis=1) if t else np.zeros((2, 0))
        gk = z.max(axis=0, keepdims=True) if t else np.zeros((1, 0, 0))
        e = np.exp(S - S.max(axis=-1, keepdims=True)) if t else S
        sm = e / e.sum(axis=-1, keepdims=True) if t else S
        return [y, z, np.broadcast_to(P, (2, t, 16)), y.sum(axis=0),
                z.sum(axis=(0, 2)), gm, gk, sm, sm @ X,
                X @ X.transpose(0, 2, 1), S - k[:, :, :t],
                X.transpose(1, 0, 2), S.transpose(2, 0, 1)]
    return ([PerSize(x, cut1), p, PerSize(s, lambda a, t: a[:, :t, :t]),
             PerSize(r, cut1), c, PerSize(k, lambda a, t: a[:, :, :t])],
            [0, 1, 13, t_max], run)


def conv2d(x, w, stride=1, pad=0, groups=1):
    """NCHW cross-correlation (language.md's conv2d), float64."""
    x = np.pad(x, ((0, 0), (0, 0), (pad, pad), (pad, pad)))
    n, c, h, wd = x.shape
    co, cg, kh, kw = w.shape
    oh, ow = (h - kh) // stride + 1, (wd - kw) // stride + 1
    y = np.zeros((n, co, oh, ow))
    per = co // groups
    for o in range(co):
        g = o // per
        xs = x[:, g * cg:(g + 1) * cg]
        for i in range(kh):
            for j in range(kw):
                patch = xs[:, :, i:i + stride * oh:stride,
                           j:j + stride * ow:stride]
                y[:, o] += np.einsum("nchw,c->nhw", patch, w[o, :, i, j])
    return y


def conv2d_bwd(x, w, dy, pad=0):
    """conv2d's backward ops (stride 1, groups 1), float64: dx, the
    adjoint of conv2d(., w) applied to dy, and dw, summed over the
    batch."""
    xp = np.pad(x, ((0, 0), (0, 0), (pad, pad), (pad, pad)))
    dxp = np.zeros_like(xp)
    dw = np.zeros_like(w)
    _, _, oh, ow = dy.shape
    for o in range(w.shape[0]):
        for i in range(w.shape[2]):
            for j in range(w.shape[3]):
                patch = xp[:, :, i:i + oh, j:j + ow]
                dw[o, :, i, j] = np.einsum("nchw,nhw->c", patch, dy[:, o])
                dxp[:, :, i:i + oh, j:j + ow] += np.einsum(
                    "nhw,c->nchw", dy[:, o], w[o, :, i, j])
    return dxp[:, :, pad:pad + x.shape[2], pad:pad + x.shape[3]], dw


def group_norm(x, gamma, beta, groups, eps=1e-5):
    n, c = x.shape[:2]
    v = x.reshape(n, groups, int(np.prod(x.shape[1:])) // groups)
    h = (v - v.mean(axis=2, keepdims=True)) / np.sqrt(
        v.var(axis=2, keepdims=True) + eps)
    return h.reshape(x.shape) * gamma[:, None, None] + beta[:, None, None]


def pool2d(x, k, stride, pad, op):
    """NCHW max (padding never wins) or average (padding counts as
    zeros) pooling, float64."""
    fill = -np.inf if op == "max" else 0
    xp = np.pad(x, ((0, 0), (0, 0), (pad, pad), (pad, pad)),
                constant_values=fill)
    oh = (x.shape[2] + 2 * pad - k) // stride + 1
    ow = (x.shape[3] + 2 * pad - k) // stride + 1
    win = np.stack([xp[:, :, i:i + stride * oh:stride, j:j + stride * ow:stride]
                    for i in range(k) for j in range(k)])
    return win.max(axis=0) if op == "max" else win.sum(axis=0) / (k * k)


def cnn(rng):
    f32 = lambda *s: rng.standard_normal(s).astype(np.float32)
    x, w, wg, bias = f32(9, 2, 7, 6), f32(4, 2, 3, 3), f32(4, 1, 3, 3), f32(4, 1, 1)
    dy, gam, bet = f32(9, 4, 7, 6), f32(4), f32(4)
    z, mu, var = f32(9, 4), f32(4), np.abs(f32(4)) + np.float32(0.5)
    g64, b64, m64, v64 = (a.astype(F64) for a in (gam, bet, mu, var))

    def bnorm(a):  # batch_norm_inference, eps 1e-5, channels axis 1
        sh = (-1,) + (1,) * (a.ndim - 2)
        return (a - m64.reshape(sh)) / np.sqrt(v64.reshape(sh) + 1e-5) * \
            g64.reshape(sh) + b64.reshape(sh)

    def run(n):
        X, DY, W = x[:n].astype(F64), dy[:n].astype(F64), w.astype(F64)
        c = np.maximum(conv2d(X, W, pad=1) + bias, 0)
        dx, dw = conv2d_bwd(X, W, DY, pad=1)
        gn = group_norm(DY, g64, b64, 2)
        e = DY - DY.max(axis=1, keepdims=True) if n else DY
        lsm = e - np.log(np.exp(e).sum(axis=1, keepdims=True))
        return [c, conv2d(X, wg.astype(F64), stride=2, groups=2), dx, dw, gn,
                pool2d(gn, 2, 2, 0, "max"), pool2d(gn, 3, 2, 1, "avg"),
                bnorm(DY), bnorm(z[:n].astype(F64)), np.exp(lsm), lsm]
    return [x, dy, z, w, wg, bias, gam, bet, mu, var], [0, 1, 5, 9], run


def topk(rng):
    """topk's indices (descending, ties to the smaller index: a stable
    sort of the negated rows), from small integers, so rows have ties."""
    ints = lambda *s: rng.integers(-4, 5, s)
    x, n = ints(16, 11).astype(np.float32), ints(16, 11).astype(np.int32)
    h = (ints(16, 3, 7) / 2).astype(np.float32)  # exact in f16
    m = ints(2, 16, 5).astype(np.float32)
    top = lambda a, k: np.argsort(-a.astype(F64), axis=-1,
                                  kind="stable")[..., :k]

    def run(b):
        return [top(x[:b], 3), top(n[:b], 11), top(h[:b], 2),
                top(m[:, :b], 1)]
    return [x, n, h, PerSize(m, lambda a, b: a[:, :b])], [0, 1, 5, 16], run


def redhalf(rng):
    """f16/bf16 reductions: inputs in quarters (exact in both), sums in
    float64 rounded once to the dtype (exact here but the means)."""
    x = (rng.integers(-12, 13, (16, 6)) / 4).astype(np.float32)
    y = (rng.integers(-12, 13, (16, 6)) / 4).astype(np.float32)

    def run(b):
        X, Y = x[:b].astype(F64), y[:b].astype(F64)
        return [round_half("bf16", X.sum(axis=0)),
                round_half("f16", Y.mean(axis=0)),
                round_half("bf16", X.max(axis=1)),
                round_half("f16", Y.mean(axis=1))]
    return [x, y], [1, 5, 9, 16], run


def round_half(dt, a):
    """Values of a rounded to f16 or bf16 (nearest even), as float32."""
    a = np.asarray(a, np.float32)
    if dt == "f16":
        return a.astype(np.float16).astype(np.float32)
    u = a.view(np.uint32).astype(np.uint64)
    u = (u + 0x7FFF + ((u >> 16) & 1)) & 0xFFFF0000
    return u.astype(np.uint32).view(np.float32)


def conv_half(dt):
    """cnn's convolutions in f16 or bf16: inputs exact in dt, references
    in float64 rounded once to dt, as conv.c rounds the f32 routine's
    result."""
    def case(rng):
        f = lambda *s: round_half(dt, rng.standard_normal(s))
        x, dy = f(9, 2, 7, 6), f(9, 4, 7, 6)
        w, wg = f(4, 2, 3, 3), f(4, 1, 3, 3)

        def run(n):
            X, DY = x[:n].astype(F64), dy[:n].astype(F64)
            W, WG = w.astype(F64), wg.astype(F64)
            dx, dw = conv2d_bwd(X, W, DY, pad=1)
            return [round_half(dt, a) for a in (
                conv2d(X, W, pad=1), conv2d(X, WG, stride=2, groups=2),
                dx, dw)]
        return [x, dy, w, wg], [0, 1, 5, 9], run
    return case


def convgrad(rng):
    """convgrad.rlx's loss and weight gradients: each cast rounds as the
    graph does, each half conv once on its result."""
    f32 = lambda *s: rng.standard_normal(s).astype(np.float32)
    x, r = f32(9, 2, 7, 6), f32(9, 4, 7, 6)
    wb, wh = f32(4, 2, 3, 3), f32(4, 2, 3, 3)
    dout = np.ones((), np.float32)

    def run(n):
        loss, grads = 0.0, []
        for dt, w in (("bf16", wb), ("f16", wh)):
            X, R = round_half(dt, x[:n]).astype(F64), r[:n].astype(F64)
            W = round_half(dt, w).astype(F64)
            y = round_half(dt, conv2d(X, W, pad=1)).astype(F64)
            loss += (y * R).sum()
            dw = conv2d_bwd(X, W, round_half(dt, R).astype(F64), pad=1)[1]
            grads.append(round_half(dt, dw))
        return [np.array([loss])] + grads
    return [x, r, wb, wh, dout], [0, 1, 5, 9], run


def att_half(dt):
    """seq's causal, custom-mask and biased attention in f16 or bf16:
    inputs exact in dt, references in float64 rounded once to dt, as
    attention.c rounds the f32 routine's result."""
    def case(rng):
        t_max = 21
        f = lambda *s: round_half(dt, rng.standard_normal(s))
        q, k, v, q4 = f(2, t_max, 16), f(2, t_max, 16), f(2, t_max, 16), \
            f(2, 2, t_max, 8)
        keep = (rng.uniform(size=(2, t_max)) > 0.3).astype(np.float32)
        bias = f(2, 2, t_max, t_max)
        cut1 = lambda a, t: a[:, :t]
        ins = [PerSize(q, cut1), PerSize(k, cut1), PerSize(v, cut1),
               PerSize(keep, cut1), PerSize(q4, lambda a, t: a[:, :, :t]),
               PerSize(bias, lambda a, t: a[:, :, :t, :t])]

        def run(t):
            Q, K, V = [a[:, :t].astype(F64) for a in (q, k, v)]
            Q4 = q4[:, :, :t].astype(F64)
            B4 = bias[:, :, :t, :t].astype(F64)
            return [round_half(dt, a) for a in (
                attention(Q, K, V, 2, "causal"),
                attention(Q, K, V, 2, "custom", keep=keep[:, :t]),
                attention(Q4, Q4, Q4, None, "bias", bias=B4))]
        return ins, [0, 1, 13, t_max], run
    return case


def causal_bwd(q, k, v, dy):
    """dq, dk, dv of causal attention on [B, H, L, D], float64."""
    lq = q.shape[2]
    s = q @ k.transpose(0, 1, 3, 2) / np.sqrt(q.shape[3])
    s = np.where(np.tril(np.ones((lq, lq), bool)), s, -np.inf)
    p = np.exp(s - s.max(axis=-1, keepdims=True))
    p /= p.sum(axis=-1, keepdims=True)
    dp = dy @ v.transpose(0, 1, 3, 2)
    ds = p * (dp - (dp * p).sum(axis=-1, keepdims=True)) / np.sqrt(q.shape[3])
    return ds @ k, ds.transpose(0, 1, 3, 2) @ q, p.transpose(0, 1, 3, 2) @ dy


def attgrad(rng):
    """attgrad.rlx's loss and parameter gradients: each cast rounds as
    the graph does, each half attention (forward, and dq, dk, dv) once
    on its result."""
    f32 = lambda *s: rng.standard_normal(s).astype(np.float32)
    x, r = f32(9, 2, 7, 8), round_half("bf16", f32(9, 2, 7, 8))
    ps = [f32(2, 7, 8) for _ in range(6)]
    dout = np.ones((), np.float32)

    def run(n):
        loss, grads = 0.0, []
        R = r[:n].astype(F64)
        for dt, (pq, pk, pv) in (("bf16", ps[:3]), ("f16", ps[3:])):
            Q, K, V = [round_half(dt, x[:n] + p).astype(F64)
                       for p in (pq, pk, pv)]
            y = round_half(dt, attention(Q, K, V, None, "causal"))
            loss += (y.astype(F64) * R).sum()
            grads += [round_half(dt, g).astype(F64).sum(axis=0)
                      for g in causal_bwd(Q, K, V, R)]
        return [np.array([loss])] + grads
    return [x, r] + ps + [dout], [0, 1, 5, 9], run


def ctl(rng):
    """ctl.rlx: control flow over [?b, 4] values."""
    b_max = 9
    f32 = lambda *s: rng.standard_normal(s).astype(np.float32)
    h0, xs, w = f32(b_max, 4), f32(5, b_max, 4), f32(4, 4) * 0.5
    p = np.array(1.0, dtype=np.float32)
    cut1 = lambda a, n: a[:, :n]

    def run(n):
        H, X, W = h0[:n].astype(F64), xs[:, :n].astype(F64), w.astype(F64)

        def scan(reverse):
            h, hs = H, []
            for k in reversed(range(5)) if reverse else range(5):
                h = np.tanh(h @ W + X[k] + 0.5 * H)
                hs.append(h)
            return np.array(hs).reshape(5, n, 4), h
        hs = scan(False)[0]
        wl = H
        for _ in range(3):
            wl = wl * 0.5 + 1
        ns = H
        for k in range(5):
            ns = np.tanh(ns + X[k])
        return [hs, scan(True)[1], wl, np.tanh(H), H * H, H @ W + 1,
                np.concatenate([H, wl]), np.concatenate([X, hs]), X[1:4],
                hs[:, :, 1:3], np.tanh(H) ** 2, ns]
    return [h0, PerSize(xs, cut1), w, p], [0, 1, 6, b_max], run


def ctljvp(rng):
    """ctljvp.rlx: outputs, and their tangents along (tw, tg) by central
    differences of the float64 forward."""
    b_max = 9
    f32 = lambda *s: rng.standard_normal(s).astype(np.float32)
    h0, xs, w, g = f32(b_max, 4), f32(5, b_max, 4), f32(4, 4) * 0.5, f32(4)
    tw, tg = f32(4, 4), f32(4)
    p = np.array(1.0, dtype=np.float32)
    cut1 = lambda a, n: a[:, :n]

    def fwd(n, W, G):
        H, X = h0[:n].astype(F64), xs[:, :n].astype(F64)

        def scan(h, reverse):
            hs = []
            for k in reversed(range(5)) if reverse else range(5):
                h = np.tanh(h @ W + X[k])
                hs.append(h)
            return np.array(hs).reshape(5, n, 4), h
        hg = H * G
        wl = hg
        for _ in range(3):
            wl = wl * wl * 0.25 + 0.5
        return [scan(hg, False)[0], scan(H, True)[1], wl, np.tanh(hg),
                hg * hg, np.sin(hg @ W)]

    def run(n):
        W, G, eps = w.astype(F64), g.astype(F64), 1e-6
        up = fwd(n, W + eps * tw, G + eps * tg)
        dn = fwd(n, W - eps * tw, G - eps * tg)
        return fwd(n, W, G) + [(a - b) / (2 * eps) for a, b in zip(up, dn)]
    return ([h0, PerSize(xs, cut1), p, w, g, tw, tg], [0, 1, 6, b_max],
            run)


# ---- complex ops and fft, the fused sequence blocks, grouped_matmul,
# log_mel, the dense solves, fused_transformer_layer (issue 26) ----

def cplx(rng):
    """complex, fft (forward, inverse ortho, forward norm over a dynamic
    middle axis), conjugate, complex_norm_sq and its backward op."""
    f32 = lambda *s: rng.standard_normal(s).astype(np.float32)
    re, im, w, m = f32(16, 12), f32(16, 12), f32(12), f32(2, 16, 5)

    def run(n):
        R, I, W = re[:n].astype(F64), im[:n].astype(F64), w.astype(F64)
        M = m[:, :n].astype(F64)
        z = R + 1j * I
        y = np.fft.fft(z, axis=-1)
        yi = np.fft.ifft(z * (W + 1j * W), norm="ortho")
        zm = np.fft.fft(M - 1j * M, norm="forward")
        nb = R * z
        return [y.real, y.imag, yi.real, yi.imag, zm.real, zm.imag,
                np.abs(y) ** 2, nb.real, nb.imag]
    return [re, im, w, PerSize(m, lambda a, t: a[:, :t])], [0, 1, 7, 16], run


def cplxgrad(rng):
    """cplxgrad.rlx's loss and parameter gradients (torch's convention:
    a C-linear y = A w gets A^H g; the ortho fft's adjoint is the ortho
    inverse)."""
    f32 = lambda *s: rng.standard_normal(s).astype(np.float32)
    x, r, p, q = f32(16, 8), f32(16, 8), f32(8), f32(8)
    dout = np.ones((), np.float32)

    def run(n):
        X, R = x[:n].astype(F64), r[:n].astype(F64)
        z = (X + p.astype(F64)) + 1j * (X * q.astype(F64))
        y = np.fft.fft(np.conj(z), norm="ortho")
        loss = (R * np.abs(y) ** 2).sum() + (R * y.real).sum()
        gz = np.conj(np.fft.ifft(2 * R * y + R, norm="ortho"))
        return [np.array([loss]), gz.real.sum(axis=0),
                (X * gz.imag).sum(axis=0)]
    return [x, r, p, q, dout], [0, 1, 7, 16], run


def cplxhvp(rng):
    """cplxhvp.rlx (cplxgrad's graph) under --hvp: the loss, gradients,
    <gradient, tangent> and the Hessian times the tangent (the gradient
    is affine in z, so H v is the gradient's change along dz)."""
    f32 = lambda *s: rng.standard_normal(s).astype(np.float32)
    x, r, p, q, tp, tq = f32(16, 8), f32(16, 8), f32(8), f32(8), f32(8), \
        f32(8)
    dout = np.ones((), np.float32)

    def run(n):
        X, R = x[:n].astype(F64), r[:n].astype(F64)
        TP, TQ = tp.astype(F64), tq.astype(F64)
        fo = lambda v: np.fft.fft(v, norm="ortho")
        grad = lambda z, c: np.conj(np.fft.ifft(2 * R * fo(np.conj(z)) +
                                                c * R, norm="ortho"))
        z = (X + p.astype(F64)) + 1j * (X * q.astype(F64))
        y = fo(np.conj(z))
        loss = (R * np.abs(y) ** 2).sum() + (R * y.real).sum()
        gz, hz = grad(z, 1), grad(TP + 1j * (X * TQ), 0)
        dp, dq = gz.real.sum(axis=0), (X * gz.imag).sum(axis=0)
        return [np.array([loss]), dp, dq,
                np.array([(dp * TP).sum() + (dq * TQ).sum()]),
                hz.real.sum(axis=0), (X * hz.imag).sum(axis=0)]
    return [x, r, p, q, dout, tp, tq], [0, 1, 7, 16], run


def selective_scan(x, delta, a, b, c):
    """language.md's selective_scan: x, delta [B, S, H], a [H, N]."""
    y = np.zeros_like(x)
    st = np.zeros((x.shape[0], x.shape[2], a.shape[1]))
    for t in range(x.shape[1]):
        st = (np.exp(delta[:, t, :, None] * a) * st +
              (delta[:, t] * x[:, t])[:, :, None] * b[:, t, None, :])
        y[:, t] = (st * c[:, t, None, :]).sum(-1)
    return y


def gated_delta_net(q, k, v, g, beta):
    """language.md's gated_delta_net: q, k, v [B, S, H, N]."""
    B, S, H, N = q.shape
    st, o = np.zeros((B, H, N, N)), np.zeros_like(q)
    for t in range(S):
        st = np.exp(g[:, t])[:, :, None, None] * st
        d = (v[:, t] - np.einsum("bhij,bhi->bhj", st, k[:, t])) * \
            beta[:, t, :, None]
        st = st + k[:, t, :, :, None] * d[:, :, None, :]
        o[:, t] = np.einsum("bhij,bhi->bhj", st, q[:, t]) / np.sqrt(N)
    return o


def ssm(rng):
    """selective_scan over a dynamic length [2, ?t, 5] and over dynamic
    channels [1, 4, ?t], gated_delta_net over a dynamic batch
    [?t, 3, 2, 4], a dynamic length [1, ?t, 2, 4] and dynamic heads
    [1, 3, ?t, 4]."""
    f32 = lambda *s: rng.standard_normal(s).astype(np.float32)
    uni = lambda lo, hi, *s: rng.uniform(lo, hi, s).astype(np.float32)
    x, delta = f32(2, 12, 5), uni(0.05, 0.5, 2, 12, 5)
    a = -np.exp(f32(5, 4) * 0.5).astype(np.float32)
    b, c = f32(2, 12, 4), f32(2, 12, 4)
    q, k, v = f32(12, 3, 2, 4), f32(12, 3, 2, 4) * 0.5, f32(12, 3, 2, 4)
    g, beta = uni(-0.5, -0.05, 12, 3, 2), uni(0, 1, 12, 3, 2)
    xh, dh = f32(1, 4, 12), uni(0.05, 0.5, 1, 4, 12)
    ah, bh, ch = -np.exp(f32(12, 3) * 0.5).astype(np.float32), \
        f32(1, 4, 3), f32(1, 4, 3)
    qs, ks, vs = f32(1, 12, 2, 4), f32(1, 12, 2, 4) * 0.5, f32(1, 12, 2, 4)
    gs, bs = uni(-0.5, -0.05, 1, 12, 2), uni(0, 1, 1, 12, 2)
    qh, kh, vh = f32(1, 3, 12, 4), f32(1, 3, 12, 4) * 0.5, f32(1, 3, 12, 4)
    gh, bh2 = uni(-0.5, -0.05, 1, 3, 12), uni(0, 1, 1, 3, 12)
    cut1 = lambda arr, t: arr[:, :t]
    cut2 = lambda arr, t: arr[:, :, :t]
    ins = [PerSize(x, cut1), PerSize(delta, cut1), a, PerSize(b, cut1),
           PerSize(c, cut1), q, k, v, g, beta, PerSize(xh, cut2),
           PerSize(dh, cut2), ah, bh, ch] + \
        [PerSize(arr, cut1) for arr in (qs, ks, vs, gs, bs)] + \
        [PerSize(arr, cut2) for arr in (qh, kh, vh, gh, bh2)]

    def run(t):
        d = lambda arr: arr.astype(F64)
        return [selective_scan(d(x[:, :t]), d(delta[:, :t]), d(a),
                               d(b[:, :t]), d(c[:, :t])),
                selective_scan(d(xh[:, :, :t]), d(dh[:, :, :t]), d(ah[:t]),
                               d(bh), d(ch)),
                gated_delta_net(d(q[:t]), d(k[:t]), d(v[:t]), d(g[:t]),
                                d(beta[:t])),
                gated_delta_net(d(qs[:, :t]), d(ks[:, :t]), d(vs[:, :t]),
                                d(gs[:, :t]), d(bs[:, :t])),
                gated_delta_net(d(qh[:, :, :t]), d(kh[:, :, :t]),
                                d(vh[:, :, :t]), d(gh[:, :, :t]),
                                d(bh2[:, :, :t]))]
    return ins, [0, 1, 7, 12], run


def moe(rng):
    """grouped_matmul (i32 and f32 expert ids) and its weight gradient op
    over a dynamic token count."""
    f32 = lambda *s: rng.standard_normal(s).astype(np.float32)
    x, w, dy = f32(16, 6), f32(3, 6, 5), f32(16, 5)
    e = rng.integers(0, 3, 16).astype(np.int32)

    def run(t):
        X, W, D = x[:t].astype(F64), w.astype(F64), dy[:t].astype(F64)
        y = np.einsum("tk,tkn->tn", X, W[e[:t]])
        dw = np.zeros(W.shape)
        for i in range(t):
            dw[e[i]] += np.outer(X[i], D[i])
        return [y, y, dw]
    return [x, w, e, e.astype(np.float32), dy], [0, 1, 7, 16], run


def lmsolve(rng):
    """log_mel and log_mel_backward over dynamic leading axes (a zero
    spec row takes the floor), batched_dense_solve over a dynamic batch
    (matrix and vector right-hand sides), dense_solve with a dynamic
    number of right-hand sides."""
    f32 = lambda *s: rng.standard_normal(s).astype(np.float32)
    s = np.abs(f32(12, 3, 9))
    s[2, 1] = 0
    s2, f = np.abs(f32(2, 12, 9)), np.abs(f32(9, 4))
    dy = f32(12, 3, 4)
    a = (f32(12, 3, 3) + 3 * np.eye(3)).astype(np.float32)
    b, bv = f32(12, 3, 2), f32(12, 3)
    a0, bk = (f32(4, 4) + 4 * np.eye(4)).astype(np.float32), f32(4, 12)
    ins = [s, PerSize(s2, lambda arr, t: arr[:, :t]), f, dy, a, b, bv, a0,
           PerSize(bk, lambda arr, t: arr[:, :t])]

    def run(t):
        S, S2, F = s[:t].astype(F64), s2[:, :t].astype(F64), f.astype(F64)
        A = a[:t].astype(F64)
        z = S @ F
        gz = np.where(z >= 1e-10, dy[:t] / np.where(z >= 1e-10, z, 1), 0)
        return [np.log(np.maximum(z, 1e-10)),
                np.log(np.maximum(S2 @ F, 1e-10)), gz @ F.T,
                np.linalg.solve(A, b[:t].astype(F64)),
                np.linalg.solve(A, bv[:t].astype(F64)[..., None])[..., 0],
                np.linalg.solve(a0.astype(F64), bk[:, :t].astype(F64))]
    return ins, [0, 1, 7, 12], run


def tlayer(rng):
    """fused_transformer_layer over a dynamic batch [?b, 5, 8] and over a
    dynamic sequence [2, ?b, 8] (heads 2, head_dim 4, gelu) with custom
    key masks."""
    f32 = lambda *s: rng.standard_normal(s).astype(np.float32)
    h = f32(6, 5, 8)
    ps = [f32(8, 24) * 0.3, f32(24) * 0.1, f32(8, 8) * 0.3, f32(8) * 0.1,
          f32(8) * 0.2 + 1, f32(8) * 0.1, f32(8, 12) * 0.3, f32(12) * 0.1,
          f32(12, 8) * 0.3, f32(8) * 0.1, f32(8) * 0.2 + 1, f32(8) * 0.1]
    mask = (rng.uniform(size=(6, 5)) > 0.3).astype(np.float32)
    mask[:, 0] = 1
    hs = f32(2, 6, 8)
    ms = (rng.uniform(size=(2, 6)) > 0.3).astype(np.float32)
    ms[:, 0] = 1
    from math import erf
    erf = np.vectorize(erf, otypes=[F64])

    def ln(v, g, b):
        mu = v.mean(axis=-1, keepdims=True)
        var = ((v - mu) ** 2).mean(axis=-1, keepdims=True)
        return (v - mu) / np.sqrt(var + 1e-12) * g + b

    def layer(H, keep):
        qw, qb, ow, ob, g1, b1, w1, c1, w2, c2, g2, b2 = \
            [p.astype(F64) for p in ps]
        qkv = H @ qw + qb
        a = attention(qkv[..., :8], qkv[..., 8:16], qkv[..., 16:], 2,
                      "custom", keep=keep)
        h1 = ln(a @ ow + ob + H, g1, b1)
        u = h1 @ w1 + c1
        act = u * 0.5 * (1 + erf(u / np.sqrt(2)))
        return ln(act @ w2 + c2 + h1, g2, b2)

    def run(n):
        return [layer(h[:n].astype(F64), mask[:n]),
                layer(hs[:, :n].astype(F64), ms[:, :n])]
    cut1 = lambda arr, t: arr[:, :t]
    return [h] + ps + [mask, PerSize(hs, cut1), PerSize(ms, cut1)], \
        [0, 1, 5, 6], run


# ---- quantization, reduce_prod, scatter_add, random ops (issue 26) ----

def rint_f32(a, s):
    """round(a / s) half to even, the division in float32 (as the f32
    graph computes it)."""
    return np.rint(np.float32(a) / np.float32(s)).astype(F64)


def fake_q(x, bits, axis=None, scale=None):
    """language.md's fake quantization forward (float64 but for the
    rounding's argument, computed in float32 as the graph does)."""
    q = 2.0 ** (bits - 1) - 1
    other = tuple(i for i in range(x.ndim) if i != axis)
    if scale is None:
        m = np.abs(x).max(axis=other, keepdims=True) if x.size else \
            np.zeros([1] * x.ndim)
        s = (np.maximum(np.float32(m), np.float32(q * 1e-12)) /
             np.float32(q)).astype(np.float32)
    else:
        sh = [1] * x.ndim
        if axis is not None:
            sh[axis] = -1
        s = np.maximum(scale, np.float32(1e-12)).reshape(sh)
    z = np.float32(x) / s
    return np.clip(np.rint(z), -q, q) * s.astype(F64)


def quant(rng):
    ints = lambda lo, hi, *s: rng.integers(lo, hi, s).astype(np.float32)
    f32 = lambda *s: rng.standard_normal(s).astype(np.float32)
    x, xi, x4 = f32(16, 6), ints(-8, 9, 16, 6), ints(-6, 7, 16, 2, 5, 5)
    w, w4 = ints(-5, 6, 6, 4), ints(-4, 5, 3, 2, 3, 3)
    bias, bias3 = (rng.integers(-50, 51, 4).astype(np.int32),
                   rng.integers(-50, 51, 3).astype(np.int32))
    sc, sg = f32(4) * 0.1, f32(2, 4) * 0.1
    s6 = (np.abs(f32(6)) * 0.2 + 0.05).astype(np.float32)
    idx = rng.integers(0, 5, 16).astype(np.int32)

    def requant(acc, mult, zp):
        return np.clip(np.rint(acc * F64(np.float32(mult))) + zp, -128, 127)

    def run(n):
        X, XI, X4 = x[:n].astype(F64), xi[:n].astype(F64), x4[:n].astype(F64)
        W = w.astype(F64)
        q = np.clip(rint_f32(x[:n], 0.05) + 3, -128, 127)
        acc = bias + (XI - 1) @ (W + 2)
        cacc = conv2d(X4 - 2, w4.astype(F64), pad=1) + bias3[:, None, None]
        sa = np.zeros((5, 6))
        np.add.at(sa, idx[:n], X)
        return [q, (q - 3) * F64(np.float32(0.05)), fake_q(x[:n], 4),
                fake_q(x[:n], 8, 0), fake_q(x[:n], 5, 1),
                fake_q(x[:n], 4, 1, s6), requant(acc, 0.0625, 5),
                requant(cacc, 0.03125, 0), X @ (W * sc),
                X @ (W * np.repeat(sg.astype(F64), 3, axis=0)),
                X.prod(axis=1), X.prod(axis=0, keepdims=True), sa]
    return ([x, xi, x4, w, w4, bias, bias3, sc, sg, s6, idx], [0, 1, 5, 16],
            run)


M32 = np.uint64(0xFFFFFFFF)


def philox(seed, stream, nblocks):
    """docs/random.md's Philox-4x32-10 blocks 0..nblocks-1 of a stream:
    [nblocks, 4] words (as uint64)."""
    key = seed % 2 ** 64
    k0, k1 = np.uint64(key & 0xFFFFFFFF), np.uint64(key >> 32)
    j = np.arange(nblocks, dtype=np.uint64)
    c = [j & M32, j >> np.uint64(32), np.full(nblocks, stream, np.uint64),
         np.zeros(nblocks, np.uint64)]
    for r in range(10):
        r0 = (k0 + np.uint64(r * 0x9E3779B9)) & M32
        r1 = (k1 + np.uint64(r * 0xBB67AE85)) & M32
        p0, p1 = c[0] * np.uint64(0xD2511F53), c[2] * np.uint64(0xCD9E8D57)
        c = [(p1 >> np.uint64(32)) ^ c[1] ^ r0, p1 & M32,
             (p0 >> np.uint64(32)) ^ c[3] ^ r1, p0 & M32]
    return np.stack(c, axis=1)


def rng_uniform(seed, count):
    w = philox(seed, 0, (count + 3) // 4).ravel()[:count]
    return (w >> np.uint64(8)).astype(F64) * 2.0 ** -24


def rng_normal(seed, count):
    w = philox(seed, 1, (count + 3) // 4)
    u1 = ((w[:, 0::2] >> np.uint64(8)).astype(F64) + 1) * 2.0 ** -24
    u2 = (w[:, 1::2] >> np.uint64(8)).astype(F64) * 2.0 ** -24
    r = np.sqrt(-2 * np.log(u1))
    z = np.stack([r * np.cos(2 * np.pi * u2), r * np.sin(2 * np.pi * u2)],
                 axis=2)  # [blocks, pair, cos/sin]
    return z.ravel()[:count]


def sample_rows(logits, seed):
    """docs/random.md's sample at temperature 1, no top_k / top_p."""
    out = []
    for r, row in enumerate(logits.astype(F64)):
        w = philox(seed, 2, r + 1)[r]
        u = (F64(w[0] >> np.uint64(5)) * 2.0 ** 26 +
             F64(w[1] >> np.uint64(6))) * 2.0 ** -53
        order = np.argsort(-row, kind="stable")
        p = np.exp(row[order] - row[order[0]])
        t, acc, pick = u * sum(p), 0.0, order[-1]
        for i, v in zip(order, p):
            acc += v
            if t < acc:
                pick = i
                break
        out.append(pick)
    return np.array(out, F64)


def rng_case(rng):
    """rng.rlx: draws over [?b, ...] (NumPy's Philox, docs/random.md),
    and flags where they differ from the static shape's draws."""
    x = rng.standard_normal((16, 9)).astype(np.float32)
    logits = (rng.standard_normal((16, 10)) * 2).astype(np.float32)
    pos = lambda *s: np.arange(int(np.prod(s)), dtype=np.int32).reshape(s)

    def run(n):
        keep = rng_uniform(11, 16 * 9).reshape(16, 9)[:n] >= 0.5
        return [rng_uniform(5, n * 7).reshape(n, 7),
                rng_normal(2 ** 64 - 9, n * 15).reshape(n, 3, 5),
                x[:n].astype(F64) * keep * 2, sample_rows(logits[:n], 3),
                np.zeros((n, 7)), np.zeros((n, 3, 5)), np.zeros(n)]
    return ([x, logits, logits, pos(16, 7), pos(16, 3, 5), pos(16)],
            [0, 1, 5, 16], run)


def quantgrad(rng):
    """quantgrad.rlx's loss and STE / LSQ gradients (language.md, "Fake
    quantization"); z and the ranges in float32 as the graph computes
    them."""
    x = (rng.standard_normal((16, 6)) * 1.5).astype(np.float32)
    s = (np.abs(rng.standard_normal(6)) * 0.2 + 0.1).astype(np.float32)
    a = (rng.standard_normal(6) + 1).astype(np.float32)
    s1 = np.array([0.3], np.float32)
    dout = np.ones((), np.float32)

    def lsq(xa, sc, bits, axis, dy):
        """fake_quantize_lsq's dx and ds (grad_scale) for upstream dy."""
        q = 2.0 ** (bits - 1) - 1
        sh = [1, -1] if axis == 1 else [1, 1]
        S = np.maximum(sc, np.float32(1e-12)).reshape(sh)
        z = (xa / S).astype(F64)
        inside = np.abs(z) <= q
        psi = np.where(inside, np.rint(z) - z, np.clip(np.rint(z), -q, q))
        n = xa.shape[0] * (1 if axis == 1 else xa.shape[1])
        ds = (psi * dy).sum(axis=0 if axis == 1 else None) / np.sqrt(
            max(n, 1) * q)
        return np.where(inside, dy, 0), np.atleast_1d(ds)

    def run(n):
        X = x[:n].astype(F64)
        xa = x[:n] * a  # float32, as the graph
        y = fake_q(xa, 4, 1, s) + fake_q(xa, 5, 0) + fake_q(xa, 3, None, s1)
        dxf, ds = lsq(xa, s, 4, 1, X)
        dxr, ds1 = lsq(xa, s1, 3, None, X)
        q = 15.0  # hardtanh STE of the per-row fake_quantize
        m = np.abs(xa).max(axis=1, keepdims=True) if n else np.zeros((0, 1))
        qs = np.maximum(np.float32(m), np.float32(q * 1e-12)).astype(F64)
        dxg = X * np.maximum(0, 1 - np.abs(xa.astype(F64)) / qs)
        da = ((dxf + dxg + dxr) * X).sum(axis=0)
        return [np.array([(y * X).sum()]), ds, da, ds1]
    return [x, s, a, s1, dout], [0, 1, 5, 16], run


def quantjvp(rng):
    """quantjvp.rlx: the loss and its tangent, the dot product of
    quantgrad's gradients with the tangents (the rules' transposes)."""
    ins, sizes, grads = quantgrad(rng)
    v = [rng.standard_normal(a.shape).astype(np.float32) for a in ins[1:4]]

    def run(n):
        g = grads(n)
        return [g[0], np.array([sum((gi * vi.astype(F64)).sum()
                                    for gi, vi in zip(g[1:], v))])]
    return ins[:4] + v, sizes, run


def quantseq(rng):
    """quantseq.rlx: quant's ops over [2, ?t, 6], inputs dense at each
    length."""
    t_max = 13
    x = rng.standard_normal((2, t_max, 6)).astype(np.float32)
    xi = rng.integers(-8, 9, (2, t_max, 6)).astype(np.float32)
    w = rng.integers(-5, 6, (6, 4)).astype(np.float32)
    bias = rng.integers(-50, 51, 4).astype(np.int32)
    sc = (rng.standard_normal(4) * 0.1).astype(np.float32)
    s6 = (np.abs(rng.standard_normal(6)) * 0.2 + 0.05).astype(np.float32)
    idx = rng.integers(0, 5, (2, t_max)).astype(np.int32)
    cut1 = lambda a, t: a[:, :t]

    def run(t):
        xs, X = x[:, :t], x[:, :t].astype(F64)
        q = np.clip(rint_f32(xs, 0.05) - 2, -128, 127)
        acc = bias + xi[:, :t].reshape(-1, 6).astype(F64) @ w.astype(F64)
        qm = np.clip(np.rint(acc * 0.0625) - 3, -128, 127)
        sa = np.zeros((5, 6))
        np.add.at(sa, idx[:, :t].ravel(), X.reshape(-1, 6))
        return [q, (q + 2) * F64(np.float32(0.05)), fake_q(xs, 3),
                fake_q(xs, 6, 1), fake_q(xs, 5, 2, s6), qm,
                X @ (w.astype(F64) * sc), X.prod(axis=2), X.prod(axis=1),
                sa, rng_uniform(7, 2 * t * 3).reshape(2, t, 3)]
    return ([PerSize(x, cut1), PerSize(xi, cut1), w, bias, sc, s6,
             PerSize(idx, cut1)], [0, 1, 5, t_max], run)


def gath(rng):
    """gath.rlx: gathers and scatters over tables with a dynamic batch;
    r reverses the rows at each size."""
    b_max = 8
    x = rng.standard_normal((b_max, 5, 3)).astype(np.float32)
    i = np.array([4, 1], dtype=np.int32)
    r = np.arange(b_max, dtype=np.int32)
    rev = lambda a, n: np.arange(n, dtype=np.int32)[::-1].copy()

    def run(n):
        X = x[:n].astype(F64)
        y = X[:, i]
        g = np.zeros_like(X)
        np.add.at(g, (slice(None), i), y)
        R = X[::-1]
        return [y, R, R, g, R]
    return [x, i, PerSize(r, rev)], [0, 1, 5, b_max], run


def bwdops(rng):  # bwdops.rlx: the backward ops themselves, in float64
    f32 = lambda *s: rng.standard_normal(s).astype(np.float32)
    x, dy, x4, dy4 = f32(7, 6), f32(7, 6), f32(7, 4, 2, 3), f32(7, 4, 2, 3)
    y = rng.integers(0, 6, 7).astype(np.int32)
    g, bt, g4, b4 = f32(6) + 1, f32(6) * 0.1, f32(4) + 1, f32(4) * 0.1
    mu, var = f32(4) * 0.3, rng.uniform(0.5, 2.0, 4).astype(np.float32)
    eps = 1e-5

    def run(n):
        X, DY, X4, DY4 = [a[:n].astype(F64) for a in (x, dy, x4, dy4)]
        G, G4, MU, VAR = [a.astype(F64) for a in (g, g4, mu, var)]
        mean = lambda v, ax: v.mean(axis=ax, keepdims=True)
        s = 1 / (1 + np.exp(-X))
        c = X - mean(X, 1)
        r = 1 / np.sqrt(mean(c * c, 1) + eps)
        h, gg = c * r, DY * G
        li = r * (gg - mean(gg, 1) - h * mean(gg * h, 1))
        rr = 1 / np.sqrt(mean(X * X, 1) + eps)
        ri = gg * rr - X * mean(gg * X, 1) * rr ** 3
        ch = lambda v: v[None, :, None, None]
        xv, dv = X4.reshape(n, 2, 12), (DY4 * ch(G4)).reshape(n, 2, 12)
        c4 = xv - mean(xv, 2)
        r4 = 1 / np.sqrt(mean(c4 * c4, 2) + eps)
        h4 = c4 * r4
        gi = (r4 * (dv - mean(dv, 2) - h4 * mean(dv * h4, 2))).reshape(X4.shape)
        rb = ch(1 / np.sqrt(VAR + eps))
        e = np.exp(X - X.max(axis=1, keepdims=True)) if n else X
        p = e / e.sum(axis=1, keepdims=True) if n else X
        onehot = np.eye(6)[y[:n]]
        return [DY * (X > 0), DY * s * (1 - s), li, (DY * h).sum(0), ri,
                (DY * X * rr).sum(0), DY.sum(0), gi,
                (DY4 * h4.reshape(X4.shape)).sum((0, 2, 3)),
                DY4.sum((0, 2, 3)), DY4 * ch(G4) * rb,
                (DY4 * (X4 - ch(MU)) * rb).sum((0, 2, 3)), DY4.sum((0, 2, 3)),
                (p - onehot) * DY.sum(1)[:, None]]
    return [x, dy, x4, dy4, y, g, bt, g4, b4, mu, var], [0, 1, 5, 7], run


def max_pool_bwd(x, dy, k):
    """max_pool2d_backward, kernel k, stride k, no padding: each window's
    dy to its first maximum (row-major), float64."""
    dx = np.zeros(x.shape)
    for i in range(dy.shape[2]):
        for j in range(dy.shape[3]):
            w = x[:, :, k * i:k * i + k, k * j:k * j + k].reshape(
                x.shape[0], x.shape[1], k * k)
            a = w.argmax(axis=2)
            for n in range(x.shape[0]):
                for c in range(x.shape[1]):
                    dx[n, c, k * i + a[n, c] // k, k * j + a[n, c] % k] += \
                        dy[n, c, i, j]
    return dx


def gpub(rng):
    """gpub.rlx: rope, cumsum, topk, pools, draws over a batch."""
    f32 = lambda *s: rng.standard_normal(s).astype(np.float32)
    x, c, p, dy = f32(9, 4, 12), f32(9, 6), f32(9, 2, 5, 6), f32(9, 2, 2, 3)
    t = rng.integers(-4, 5, (9, 11)).astype(np.float32)  # ties
    ang = np.arange(4)[:, None] * (0.5 ** np.arange(3))[None, :]
    cos, sin = np.cos(ang).astype(np.float32), np.sin(ang).astype(np.float32)

    def run(b):
        X, C, P = x[:b].astype(F64), c[:b].astype(F64), p[:b].astype(F64)
        cs, sn = cos.astype(F64), sin.astype(F64)
        sfx = np.flip(np.cumsum(np.flip(C, 0), 0), 0)
        return [rope(X, cs, sn, 6, 6), rope(X, cs, sn, 6, 6, neg=True),
                np.cumsum(C, axis=1), np.cumsum(C, axis=0) - C, sfx,
                np.argsort(-t[:b].astype(F64), axis=1, kind="stable")[:, :3],
                pool2d(P, 2, 2, 0, "max"), pool2d(P, 3, 2, 1, "avg"),
                max_pool_bwd(P, dy[:b].astype(F64), 2),
                rng_uniform(5, b * 7).reshape(b, 7)]
    return [x, cos, sin, c, t, p, dy], [0, 1, 4, 9], run


def mmhalf(rng):
    """mmhalf.rlx: bf16/f16 products over a dynamic batch, inputs exact
    in the dtype, each product rounded once."""
    bf = lambda *s: round_half("bf16", rng.standard_normal(s))
    x, w, v = bf(40, 24), bf(24, 16), bf(8, 16)
    y = round_half("f16", rng.standard_normal((40, 5, 24)))

    def run(b):
        h = round_half("bf16", x[:b].astype(F64) @ w.astype(F64))
        return [h, round_half("bf16", h.astype(F64) @ v.astype(F64).T),
                round_half("f16", y[:b].astype(F64) @ w.astype(F64))]
    return [x, y, w, v], [0, 1, 17, 40], run


def main():
    os.makedirs(os.path.join(HERE, "data"), exist_ok=True)
    for name, case in [("mlp", mlp), ("heads", heads), ("train", train),
                       ("mlpu", mlpu), ("trainu", trainu),
                       ("bwdops", bwdops),
                       ("norms", norms), ("seq", seq), ("attnb", attnb),
                       ("cum", cum), ("bcast", bcast), ("cnn", cnn),
                       ("topk", topk), ("convf16", conv_half("f16")),
                       ("convbf16", conv_half("bf16")),
                       ("convgrad", convgrad),
                       ("attf16", att_half("f16")),
                       ("attbf16", att_half("bf16")),
                       ("attgrad", attgrad), ("redhalf", redhalf),
                       ("ctl", ctl), ("ctljvp", ctljvp),
                       ("quant", quant), ("rng", rng_case),
                       ("quantgrad", quantgrad), ("quantseq", quantseq),
                       ("quantjvp", quantjvp), ("gath", gath),
                       ("cplx", cplx), ("cplxgrad", cplxgrad),
                       ("cplxhvp", cplxhvp), ("ssm", ssm), ("moe", moe),
                       ("lmsolve", lmsolve), ("tlayer", tlayer),
                       ("gpub", gpub), ("mmhalf", mmhalf)]:
        ins, sizes, run = case(np.random.default_rng(26))
        outs = [run(n) for n in sizes]
        with open(os.path.join(HERE, "data", name + ".bin"), "wb") as f:
            f.write(struct.pack("<III", len(ins), len(outs[0]), len(sizes)))
            f.write(struct.pack("<%dq" % len(sizes), *sizes))
            for a in ins:
                per = isinstance(a, PerSize)
                f.write(struct.pack("<I", (a.dtype == np.int32) | 2 * per))
                for x in [a.cut(a.full, n) for n in sizes] if per else [a]:
                    put(f, x)
            for o in outs:
                for a in o:
                    put(f, a)


if __name__ == "__main__":
    main()
