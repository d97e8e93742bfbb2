"""e2e_cases_random.py -- rng_uniform, rng_normal, sample and log_mel
(language.md 6.8; the bit mapping of docs/random.md).

The references are independent NumPy implementations: Philox-4x32-10
written from the Random123 paper (the runtime's is checked against the
published known-answer vectors in tests/unit/test_runtime_random.c),
the documented counter mapping, uniform (w >> 8) 2^-24 and Box-Muller
in float64; sample's filtering (temperature, top_k with ties to the
smaller index, top_p keeping the class that crosses p) and its draw
with the row's 53-bit uniform, in float64; log_mel in float64 with the
floor active on some bins. Every run is repeated with 1, 2, 3 and 7
threads and must be bit-identical.
"""
import numpy as np

from e2e_lib import T, case, out, outs_str, uni

ERR_INVALID = "4"  # RLX_ERR_INVALID in rlxrt.h
THREADS = ["--threads", "1,2,3,7"]
M32 = np.uint64(0xFFFFFFFF)


def philox(ctr, key):
    """Philox-4x32-10 on arrays: ctr 4 x [n] uint64 (32-bit values),
    key 2 uint32 -> 4 x [n] uint64 words."""
    c = [np.asarray(x, dtype=np.uint64) for x in ctr]
    k0, k1 = int(key[0]), int(key[1])
    for r in range(10):
        ka = np.uint64((k0 + r * 0x9E3779B9) & 0xFFFFFFFF)
        kb = np.uint64((k1 + r * 0xBB67AE85) & 0xFFFFFFFF)
        p0 = c[0] * np.uint64(0xD2511F53)
        p1 = c[2] * np.uint64(0xCD9E8D57)
        c = [(p1 >> np.uint64(32)) ^ c[1] ^ ka, p1 & M32,
             (p0 >> np.uint64(32)) ^ c[3] ^ kb, p0 & M32]
    return c


def words(seed, stream, n):
    """Word i % 4 of block i / 4 of `stream`, i < n (docs/random.md)."""
    s = seed & 0xFFFFFFFFFFFFFFFF
    i = np.arange(n, dtype=np.uint64)
    j = i // np.uint64(4)
    w = philox([j & M32, j >> np.uint64(32), np.full(n, stream, np.uint64),
                np.zeros(n, np.uint64)], (s & 0xFFFFFFFF, s >> 32))
    return np.choose((i % np.uint64(4)).astype(np.int64), w)


def uniform(seed, n):
    return (words(seed, 0, n) >> np.uint64(8)).astype(np.float64) * 2.0**-24


def normal(seed, n):
    m = n + (n & 1)
    w = (words(seed, 1, m) >> np.uint64(8)).astype(np.float64)
    u1, u2 = (w[0::2] + 1) * 2.0**-24, w[1::2] * 2.0**-24
    r, t = np.sqrt(-2 * np.log(u1)), 2 * np.pi * u2
    z = np.empty(m)
    z[0::2], z[1::2] = r * np.cos(t), r * np.sin(t)
    return z[:n]


def sample_ref(x, temp, top_k, top_p, seed):
    rows, c = x.shape
    s = x.astype(np.float64) / (temp if temp > 0 else 1.0)
    r = np.arange(rows, dtype=np.uint64)
    w = philox([r & M32, r >> np.uint64(32),
                np.full(rows, 2, np.uint64), np.zeros(rows, np.uint64)],
               (seed & 0xFFFFFFFF, (seed >> 32) & 0xFFFFFFFF))
    u = ((w[0] >> np.uint64(5)).astype(np.float64) * 67108864.0 +
         (w[1] >> np.uint64(6)).astype(np.float64)) * 2.0**-53
    ids = []
    for i in range(rows):
        order = np.argsort(-s[i], kind="stable")
        k = 1 if temp == 0 else (top_k or c)
        order = order[:k]
        p = np.exp(s[i][order] - s[i][order[0]])
        cum = np.cumsum(p)
        kept = k
        if top_p < 1:
            kept = int(np.argmax(cum >= top_p * cum[-1])) + 1
        j = int(np.argmax(u[i] * cum[kept - 1] < cum[:kept]))
        ids.append(order[j])
    return np.array(ids, dtype=np.int64)


@case()
def rng_streams(c, rng):
    x = T("f32", uni(rng, (2,)), "x")
    forms = [("rng_uniform", [3, 37], 5), ("rng_uniform", [1031], 0),
             ("rng_uniform", [], 9), ("rng_normal", [101], -7),
             ("rng_normal", [4, 33], 123456789012)]
    body, outs = [], []
    for i, (op, shape, seed) in enumerate(forms):
        n = int(np.prod(shape)) if shape else 1
        v = (uniform if op == "rng_uniform" else normal)(seed, n)
        body.append("%%r%d = %s(shape=[%s], seed=%d)" %
                    (i, op, ", ".join(map(str, shape)), seed))
        outs.append(out("f32", v.reshape(shape), "r%d" % i))
    c.graph([x], "\n".join(body), outs_str(outs),
            comment="rng_uniform / rng_normal against a NumPy Philox")
    c.run([x], outs, args=THREADS)


# (temperature, top_k, top_p, seed)
SAMPLE_FORMS = [(1.0, 0, 1.0, 0), (0.7, 0, 1.0, 3), (1.0, 5, 1.0, 4),
                (1.3, 0, 0.9, 5), (0.8, 4, 0.6, 6), (0.0, 0, 1.0, 7),
                (1.0, 1, 1.0, 8), (1.0, 0, 1e-3, 9)]


@case()
def sample_filters(c, rng):
    a = T("f32", uni(rng, (64, 11), -3, 3), "a")
    b = T("f64", np.round(uni(rng, (16, 7), -2, 2)), "b")  # ties
    body, outs = [], []
    for i, (t, k, p, s) in enumerate(SAMPLE_FORMS):
        for src in (a, b):
            if k > src.shape[1]:
                continue
            nm = "%s%d" % (src.name, i)
            body.append("%%%s = sample(%%%s, temperature=%r, top_k=%d, "
                        "top_p=%r, seed=%d)" % (nm, src.name, t, k, p, s))
            outs.append(out("i64", sample_ref(src.v, t, k, p, s), nm))
    c.graph([a, b], "\n".join(body), outs_str(outs),
            comment="sample: temperature, top_k, top_p, argmax forms")
    c.run([a, b], outs, args=THREADS)


@case()
def sample_nan(c, rng):
    a = T("f32", [[0.5, np.nan, 1.0], [1.0, 2.0, 3.0]], "a")
    o = out("i64", np.zeros(2, np.int64), "s")
    c.graph([a], "%s = sample(%a, seed=1)", "%s",
            comment="a NaN logit: RLX_ERR_INVALID")
    c.run([a], [o], args=["--expect", ERR_INVALID])


def _log_mel(s, f):
    return np.log(np.maximum(s @ f, 1e-10))


@case()
def log_mel_forms(c, rng):
    s3 = T("f32", uni(rng, (2, 9, 33), 0, 2) ** 2, "s3")
    f3 = uni(rng, (33, 10), 0, 1)
    f3[:, 4] = 0  # that bin sits on the floor
    f3 = T("f32", f3, "f3")
    s1 = T("f64", uni(rng, (6,), 0, 1), "s1")
    f1 = T("f64", uni(rng, (6, 3), -1, 1), "f1")  # negative: floor too
    s2 = T("f64", uni(rng, (70, 129), 0, 1), "s2")
    f2 = T("f64", uni(rng, (129, 40), 0, 0.1), "f2")
    dy = T("f32", uni(rng, (2, 9, 10)), "dy")
    z = s3.v @ f3.v
    ds = np.where(z >= 1e-10, dy.v / np.where(z >= 1e-10, z, 1), 0) @ f3.v.T
    outs = [out("f32", _log_mel(s3.v, f3.v), "y3"),
            out("f64", _log_mel(s1.v, f1.v), "y1"),
            out("f64", _log_mel(s2.v, f2.v), "y2"),
            out("f32", ds, "ds")]
    c.graph([s3, f3, s1, f1, s2, f2, dy],
            "%y3 = log_mel(%s3, %f3)\n%y1 = log_mel(%s1, %f1)\n"
            "%y2 = log_mel(%s2, %f2)\n"
            "%ds = log_mel_backward(%s3, %f3, %dy)", outs_str(outs),
            comment="log_mel: ranks 1-3, f32/f64, floor; log_mel_backward")
    c.run([s3, f3, s1, f1, s2, f2, dy], outs, args=THREADS)


@case(diag=r"sample: logits must have a dtype the op compiles for "
      r"\(f32, f64\), got f16")
def sample_f16(c, rng):
    a = T("f16", uni(rng, (4, 9), -2, 2), "a")
    o = out("i64", sample_ref(a.v, 0.9, 3, 0.8, 2), "s")
    c.graph([a], "%s = sample(%a, temperature=0.9, top_k=3, top_p=0.8, "
            "seed=2)", "%s", comment="f16 logits: not compiled yet")
    c.run([a], [o])


@case(diag=r"log_mel: spec must have a dtype the op compiles for "
      r"\(f32, f64\), got f16")
def log_mel_f16(c, rng):
    s = T("f16", uni(rng, (3, 8), 0, 1), "s")
    f = T("f16", uni(rng, (8, 4), 0, 1), "f")
    o = out("f16", _log_mel(s.v.astype(np.float64), f.v), "y")
    c.graph([s, f], "%y = log_mel(%s, %f)", "%y",
            comment="f16 spectra: not compiled yet")
    c.run([s, f], [o])


KS_N = 250000  # 10^6 at the runtime level: test_runtime_random.c


@case()
def rng_ks(c, rng):
    """The compiled rng_uniform passes a Kolmogorov-Smirnov test at
    KS_N samples: the graph sorts the values (topk with k = n, descending),
    and computes D = max_j max(x_j - 1 + (j+1)/n, 1 - j/n - x_j) in f64
    (the positions j/n from an exclusive cumsum of 1/n). The generator
    asserts D below the 0.1% critical value 1.95/sqrt(n); the run must
    reproduce D (and so the same sample) and bounds it the same way."""
    x = T("f64", [1.0 / KS_N], "h")
    u = np.sort(uniform(11, KS_N))[::-1].astype(np.float64)
    j = np.arange(KS_N) / KS_N
    d = max(np.max(u - 1 + j + 1.0 / KS_N), np.max(1 - j - u))
    assert d < 1.95 / np.sqrt(KS_N), d
    body = ("%%u = rng_uniform(shape=[N], seed=11)\n"
            "%%i = topk(%%u, k=N)\n"
            "%%s = cast(gather(%%u, %%i), to=f64)\n"
            "%%j = cumsum(expand(%%h, shape=[N]), exclusive=true)\n"
            "%%a = reduce_max(add(sub(%%s, 1.0), add(%%j, %%h)))\n"
            "%%b = reduce_max(sub(sub(1.0, %%j), %%s))\n"
            "%%d = max(%%a, %%b)\n"
            "%%ok = lt(%%d, CRIT)").replace("%%", "%")
    body = body.replace("N", str(KS_N)).replace(
        "CRIT", repr(1.95 / np.sqrt(KS_N)))
    c.graph([x], body, "%d, %ok", comment="KS test of the compiled "
            "rng_uniform at %d samples" % KS_N)
    c.run([x], [out("f64", d, "d"), out("bool", True, "ok")],
          args=["--threads", "1,2"])
