"""attention.py -- attention and attention_backward (language.md 6.5,
6.9): NumPy semantics, gradient-check cases, end-to-end cases.

NumPy semantics: the full score matrix in float64. Gradient checks:
the forms of ATTN_FORMS, the backward op (wrt q, k, v and bias) against
torch's double backward, second order by expansion.
End-to-end: every form the spec allows: rank 3 [B, S, H*D] (heads or
head_dim) and rank 4 [B, H, S, D]; Lq != Lk both ways (Lq > Lk with a
causal mask leaves rows with no allowed key); mask none, causal,
sliding_window, custom (f32 and bool, one batch fully masked) and bias
(whose gradient is wrt=bias); custom scale; softcap; lengths 1, 7, 65,
129 (not multiples of the kernels' 64-wide tiles); huge logits. The
graphs hold the forward attention next to its backward nodes, as a
gradient graph does, so code generation's sharing (one pass for q, k, v
and bias; the forward's saved log-sum-exp) is what runs; the direct
cases also run backward nodes without a forward. Reference: torch
float64 autograd of a plain attention (full score matrix, -inf masking,
fully masked rows set to zero) on the rounded inputs. Gradients are also
checked by finite differences in tests/gradcheck/. bf16 and f16 forms
with head dims 16..128 (attention_half_mma, attention_half_mma_bwd)
exercise the GPU's tensor-core kernels. Last, a whole GPT
block (embedding gather, layer_norm, causal attention, gelu_tanh MLP,
residuals, tied head, cross-entropy) trained one step, against
torch.autograd.
"""
import math

import numpy as np

from e2e_lib import T, case, out, outs_str, tt, uni
from families import gc_case

GRADCHECK = []


# ---- NumPy semantics ----

def attention(op, ins, a):
    """attention / attention_backward: the full score matrix in float64
    (masked scores -inf, rows with no allowed key zero; with mask=bias
    the keys whose biased score is -inf are masked, as in the kernels)."""
    bwd = op == "attention_backward"
    q, k, v = (x.astype(np.float64) for x in ins[:3])
    dt = ins[0].dtype
    mi = 4 if bwd else 3
    m = ins[mi] if len(ins) > mi else None
    r3 = q.ndim == 3
    if r3:
        e = q.shape[2]
        h = a["heads"] if "heads" in a else e // a["head_dim"]

        def bhld(x):
            return x.reshape(x.shape[0], x.shape[1], h, -1).transpose(
                0, 2, 1, 3)
        q, k, v = bhld(q), bhld(k), bhld(v)
    lq, lk, d = q.shape[2], k.shape[2], q.shape[3]
    scale = a.get("scale", 1 / math.sqrt(d))
    s = q @ k.transpose(0, 1, 3, 2) * scale
    cap = a.get("softcap")
    t = None
    if cap:
        t = np.tanh(s / cap)
        s = cap * t
    kind = a.get("mask", "none")
    i, j = np.arange(lq)[:, None], np.arange(lk)[None, :]
    ok = np.ones(s.shape, bool)
    if kind in ("causal", "sliding_window"):
        ok &= j <= (lk - lq) + i
    if kind == "sliding_window":
        ok &= j >= (lk - lq) + i - a["window"]
    if kind == "custom":
        ok &= ~(m.astype(np.float64) < 0.5)[:, None, None, :]
    if kind == "bias":  # a -inf biased score masks its key
        s = s + m
        ok &= s != -np.inf
    s = np.where(ok, s, -np.inf)
    mx = np.where(ok.any(-1, keepdims=True), s.max(-1, keepdims=True), 0)
    p = np.where(ok, np.exp(s - mx), 0)
    den = p.sum(-1, keepdims=True)
    p = p / np.where(den > 0, den, 1)

    def back(x, like):
        if r3:
            x = x.transpose(0, 2, 1, 3).reshape(like.shape)
        return x.astype(dt)
    if not bwd:
        return back(p @ v, ins[0])
    dy = ins[3].astype(np.float64)
    if r3:
        dy = bhld(dy)
    w = a["wrt"]
    if w == "v":
        return back(p.transpose(0, 1, 3, 2) @ dy, ins[2])
    dp = dy @ v.transpose(0, 1, 3, 2)
    ds = p * (dp - (dp * p).sum(-1, keepdims=True))
    if w == "bias":
        return ds.astype(dt)
    if t is not None:
        ds = ds * (1 - t * t)
    ds = ds * scale
    if w == "q":
        return back(ds @ k, ins[0])
    return back(ds.transpose(0, 1, 3, 2) @ q, ins[1])


EVAL = {"attention": attention, "attention_backward": attention}


# ---- gradient checks (PyTorch references; FlashAttention-2 kernels,
# second order by expansion) ----

def allowed_mask(kind, b, lq, lk, m, attrs):
    """bool [B, 1, Lq, Lk]: may query i see key j?"""
    i = np.arange(lq)[:, None]
    j = np.arange(lk)[None, :]
    ok = np.ones((b, 1, lq, lk), dtype=bool)
    if kind in ("causal", "sliding_window"):
        ok &= j <= (lk - lq) + i
    if kind == "sliding_window":
        ok &= j >= (lk - lq) + i - attrs["window"]
    if kind in ("custom", "custom_bool"):
        ok &= ~(m[:, None, None, :] < 0.5)
    return ok


def attn_torch(q, k, v, bias, ok, rank, h, attrs):
    """Plain attention in torch (autograd-able); q, k, v as given."""
    import torch

    def bhld(x):
        if rank == 4:
            return x
        b, n, e = x.shape
        return x.reshape(b, n, h, e // h).transpose(1, 2)
    qb, kb, vb = bhld(q), bhld(k), bhld(v)
    d = qb.shape[-1]
    s = qb @ kb.transpose(-1, -2) * attrs.get("scale", 1 / np.sqrt(d))
    if "softcap" in attrs:
        c = attrs["softcap"]
        s = c * torch.tanh(s / c)
    if bias is not None:
        s = s + bias
    okt = torch.tensor(ok).expand(s.shape)
    s = s.masked_fill(~okt, float("-inf"))
    row = okt.any(-1, keepdim=True)
    s = torch.where(row, s, torch.zeros_like(s))
    p = torch.softmax(s, -1) * okt
    y = p @ vb
    if rank == 3:
        y = y.transpose(1, 2).reshape(q.shape)
    return y



# (name, rank, B, H, Lq, Lk, D, mask, attrs)
ATTN_FORMS = [
    ("", 4, 1, 2, 5, 5, 3, "none", {}),
    ("_causal3", 3, 2, 2, 6, 6, 2, "causal", {"heads": 2}),
    ("_decode", 4, 1, 1, 3, 7, 4, "causal", {"scale": 0.7}),
    ("_rowsmasked", 4, 1, 2, 6, 4, 2, "causal", {}),
    ("_sliding", 3, 1, 2, 7, 7, 2, "sliding_window",
     {"head_dim": 2, "window": 2, "softcap": 1.5}),
    ("_custom", 4, 2, 1, 4, 5, 3, "custom", {}),
    ("_bias", 4, 1, 2, 4, 5, 2, "bias", {"softcap": 2.0, "scale": 0.8}),
    # an input bias with -inf entries: fully masked rows (zeros, with zero
    # derivatives of every order) and a partly masked one
    ("_biasinf", 4, 1, 2, 4, 5, 2, "bias", {"inf": True}),
]
ATTN_BWD_FORMS = ("", "_causal3", "_custom", "_bias", "_biasinf")


def inf_bias(g, shape):
    """A bias in [-1, 1) with rows 1 (head 0) and 3 (head 1) all -inf
    and every other key of row 0 (head 1) -inf."""
    m = g.u(shape, -1, 1)
    m[:, 0, 1, :] = m[:, 1, 3, :] = float("-inf")
    m[:, 1, 0, ::2] = float("-inf")
    return m


def bias_of(t, mv):
    """The bias operand for attn_torch and the keys it allows: a -inf
    bias (mv, the input's values) masks its key, as the kernels do; it
    enters as where(ok, m, 0), so torch never sees an infinity."""
    import torch
    if mv is None:
        return t["m"], True
    ok = mv != float("-inf")
    return torch.where(torch.tensor(ok), t["m"], torch.zeros_like(t["m"])), ok


def attn_case(sfx, rank, b, h, lq, lk, d, kind, attrs):
    qs = (b, h, lq, d) if rank == 4 else (b, lq, h * d)
    ks = (b, h, lk, d) if rank == 4 else (b, lk, h * d)
    a = ", ".join(["mask=" + kind] + ["%s=%r" % (k, attrs[k]) for k in
                                      ("heads", "head_dim", "window",
                                       "scale", "softcap") if k in attrs])

    def operands(g):
        g.p("q", g.u(qs, -1, 1))
        g.p("k", g.u(ks, -1, 1))
        g.p("v", g.u(ks, -1, 1))
        if kind == "custom":
            mv = g.rng.uniform(0, 1, (b, lk))
            mv[-1, :] = 0.1  # a fully masked batch
            return g.i("m", g.dt, mv).v
        if kind == "bias" and inf:
            return g.i("m", g.dt, inf_bias(g, (b, h, lq, lk))).v
        if kind == "bias":
            g.p("m", g.u((b, h, lq, lk), -1, 1))
        return None

    def fwd(t, mv):
        if kind == "bias":
            bias, ok = bias_of(t, mv)
            ok = ok & allowed_mask(kind, b, lq, lk, None, attrs)
        else:
            bias, ok = None, allowed_mask(kind, b, lq, lk, mv, attrs)
        return attn_torch(t["q"], t["k"], t["v"], bias, ok, rank, h, attrs)

    mop = ", %m" if kind in ("custom", "bias") else ""
    inf = attrs.get("inf", False)  # the bias an input with -inf entries

    @gc_case("attention" + sfx, ops=["attention"])
    def _(g):
        mv = operands(g)
        return ("%%y = attention(%%q, %%k, %%v%s, %s)" % (mop, a), "%y",
                lambda t: fwd(t, mv))

    if sfx not in ATTN_BWD_FORMS:
        return
    for w in ("q", "k", "v") + (("bias",) if kind == "bias" else ()):
        @gc_case("attention_backward_%s%s" % (w, sfx),
              ops=["attention_backward"])
        def _(g, w=w):
            mv = operands(g)
            g.p("dy", g.u(qs, -1, 1))

            def ref(t):
                import torch
                key = "m" if w == "bias" else w
                if inf and w == "bias":  # an input: a leaf of its own
                    t = dict(t, m=t["m"].detach().requires_grad_(True))
                y = fwd(t, mv)
                (r,) = torch.autograd.grad((y * t["dy"]).sum(), t[key],
                                           create_graph=True)
                return r
            return ("%%y = attention_backward(%%q, %%k, %%v, %%dy%s, "
                    "wrt=%s, %s)" % (mop, w, a), "%y", ref)


for _f in ATTN_FORMS:
    attn_case(*_f)


# ---- end-to-end cases ----


# (rank, B, H, Lq, Lk, D, mask, attrs)
FORMS = [
    (4, 2, 2, 7, 7, 8, "none", {}),
    (3, 1, 2, 65, 65, 16, "causal", {"heads": 2}),
    (4, 1, 1, 7, 129, 8, "causal", {"scale": 0.2}),
    (4, 1, 2, 9, 5, 4, "causal", {}),
    (3, 1, 2, 33, 33, 8, "sliding_window", {"head_dim": 8, "window": 3}),
    (4, 2, 1, 6, 10, 8, "custom", {}),
    (3, 2, 3, 5, 4, 2, "custom_bool", {"heads": 3}),
    (4, 1, 2, 5, 6, 8, "bias", {"scale": 0.3, "softcap": 2.0}),
    (4, 1, 1, 1, 1, 4, "none", {}),
    (3, 1, 1, 20, 20, 16, "causal", {"heads": 1, "softcap": 5.0}),
]


def _attrs(kind, attrs):
    a = ["mask=%s" % ("custom" if kind == "custom_bool" else kind)]
    for key in ("heads", "head_dim", "window", "scale", "softcap"):
        if key in attrs:
            a.append("%s=%r" % (key, attrs[key]))
    return ", ".join(a)


def _shapes(rank, b, h, lq, lk, d):
    if rank == 4:
        return (b, h, lq, d), (b, h, lk, d)
    return (b, lq, h * d), (b, lk, h * d)


def _form_inputs(dt, f, form, rng, scale_q=1.0):
    rank, b, h, lq, lk, d, kind, attrs = form
    qs, ks = _shapes(rank, b, h, lq, lk, d)
    ins = [T(dt, uni(rng, qs) * scale_q, "q%d" % f),
           T(dt, uni(rng, ks), "k%d" % f), T(dt, uni(rng, ks), "v%d" % f)]
    m = None
    if kind == "custom":
        mv = rng.uniform(0, 1, (b, lk))
        mv[-1, :] = 0.2  # the last batch fully masked
        m = T(dt, mv, "m%d" % f)
    elif kind == "custom_bool":
        mv = rng.integers(0, 2, (b, lk))
        mv[0, :] = 0
        m = T("bool", mv, "m%d" % f)
    elif kind == "bias":
        m = T(dt, uni(rng, (b, h, lq, lk)) * 2, "m%d" % f)
    return ins, m


def _refs(ins, m, dy, form):
    """y and the gradients of <y, dy> wrt q, k, v (and bias)."""
    import torch
    rank, b, h, lq, lk, d, kind, attrs = form
    mv = m.v if m is not None else None
    ok = allowed_mask(kind, b, lq, lk, mv, attrs)
    ts = [tt(t.v).requires_grad_(True) for t in ins]
    bias = tt(mv).requires_grad_(True) if kind == "bias" else None
    y = attn_torch(ts[0], ts[1], ts[2], bias, ok, rank, h, attrs)
    wrt = ts + ([bias] if bias is not None else [])
    gr = torch.autograd.grad(y, wrt, tt(dy.v))
    return y.detach().numpy(), [g.numpy() for g in gr]


def _direct_case(dt):
    def build(c, rng):
        ins, body, outs = [], [], []
        for f, form in enumerate(FORMS):
            kind, attrs = form[6], form[7]
            qkv, m = _form_inputs(dt, f, form, rng)
            dy = T(dt, uni(rng, qkv[0].shape), "g%d" % f)
            ins += qkv + ([m] if m is not None else []) + [dy]
            y, grads = _refs(qkv, m, dy, form)
            a = _attrs(kind, attrs)
            ops = "%%q%d, %%k%d, %%v%d" % (f, f, f)
            mk = ", %%m%d" % f if m is not None else ""
            body.append("%%y%d = attention(%s%s, %s)" % (f, ops, mk, a))
            outs.append(out(dt, y, "y%d" % f))
            for w, g in zip(("q", "k", "v", "bias"), grads):
                body.append("%%d%s%d = attention_backward(%s, %%g%d%s, "
                            "wrt=%s, %s)" % (w, f, ops, f, mk, w, a))
                outs.append(out(dt, g, "d%s%d" % (w, f)))
        c.graph(ins, "\n".join(body), outs_str(outs),
                comment="attention and attention_backward (wrt q, k, v, "
                "bias) in every form, %s" % dt)
        c.run(ins, outs, args=["--threads", "1,2,3"])
    case("attention_" + dt)(build)


for _dt in ("f32", "f64"):
    _direct_case(_dt)


@case()
def attention_bwd_alone(c, rng):
    """Backward nodes without their forward (o and lse recomputed), one
    of them alone, and a half-precision attention."""
    form = (4, 2, 2, 65, 70, 8, "causal", {})
    qkv, _ = _form_inputs("f32", 0, form, rng)
    dy = T("f32", uni(rng, qkv[0].shape), "g0")
    _, grads = _refs(qkv, None, dy, form)
    form1 = (3, 1, 2, 7, 9, 4, "none", {"heads": 2})
    qkv1, _ = _form_inputs("f32", 1, form1, rng)
    dy1 = T("f32", uni(rng, qkv1[0].shape), "g1")
    _, grads1 = _refs(qkv1, None, dy1, form1)
    form2 = (4, 1, 2, 9, 9, 8, "causal", {})
    qkv2, _ = _form_inputs("f16", 2, form2, rng)
    y2, _ = _refs(qkv2, None, T("f16", np.zeros(qkv2[0].shape)), form2)
    ins = qkv + [dy] + qkv1 + [dy1] + qkv2
    body = ["%%d%s = attention_backward(%%q0, %%k0, %%v0, %%g0, wrt=%s, "
            "mask=causal)" % (w, w) for w in "qkv"]
    body += ["%dq_again = attention_backward(%q0, %k0, %v0, %g0, wrt=q, "
             "mask=causal)",
             "%dk1 = attention_backward(%q1, %k1, %v1, %g1, wrt=k, "
             "heads=2)",
             "%y2 = cast(attention(%q2, %k2, %v2, mask=causal), to=f32)"]
    outs = [out("f32", g, "d" + w) for w, g in zip("qkv", grads)]
    outs += [out("f32", grads[0], "dq_again"), out("f32", grads1[1], "dk1"),
             out("f32", y2, "y2")]
    c.graph(ins, "\n".join(body), outs_str(outs),
            comment="attention_backward without a forward attention "
            "(recomputed o and lse), a duplicate wrt=q\n(its own call: "
            "no CSE without --grad), one alone, and attention in f16 "
            "(computed in f32,\nrounded once)")
    c.run(ins, outs, args=["--threads", "1,2,3", "--rtol", "2e-3",
                           "--atol", "2e-3"])


@case()
def attention_huge_logits(c, rng):
    """Scores of about 1e4: no overflow, the softmax picks the max."""
    form = (4, 1, 2, 20, 24, 16, "causal", {"scale": 1.0})
    qkv, _ = _form_inputs("f32", 0, form, rng, scale_q=1000.0)
    dy = T("f32", uni(rng, qkv[0].shape), "g0")
    y, grads = _refs(qkv, None, dy, form)
    ins = qkv + [dy]
    a = "mask=causal, scale=1.0"
    body = ["%%y = attention(%%q0, %%k0, %%v0, %s)" % a]
    body += ["%%d%s = attention_backward(%%q0, %%k0, %%v0, %%g0, wrt=%s, "
             "%s)" % (w, w, a) for w in "qkv"]
    outs = [out("f32", y, "y")] + [out("f32", g, "d" + w)
                                   for w, g in zip("qkv", grads)]
    c.graph(ins, "\n".join(body), outs_str(outs),
            comment="attention with scores near 1e4: finite, exact "
            "softmax (exp(1e4) overflows any float)")
    # f32 scores of 1e4 carry absolute errors ~1e4 * 2^-24 * sqrt(D),
    # which the softmax turns into relative errors ~1e-3: the tolerance
    # is the problem's conditioning, not the kernel's.
    c.run(ins, outs, args=["--threads", "1,2,3", "--rtol", "2e-3",
                           "--atol", "2e-3"])


@case()
def attention_half_mma(c, rng):
    """bf16 and f16 attention with head dims 16..128 (the GPU's
    tensor-core kernel, docs/gpu.md): lengths that are not multiples of
    its 64-row tiles, every mask, softcap, scale, Lq != Lk both ways,
    fully masked rows (causal with Lq > Lk; a custom mask's masked
    batch). NumPy float64 references of the rounded inputs; outputs cast
    to f32 in the graph, compared at bf16's tolerance."""
    forms = [("bf16", (4, 1, 2, 70, 70, 64, "none", {})),
             ("bf16", (3, 1, 1, 65, 65, 128, "causal", {"heads": 1})),
             ("bf16", (4, 1, 1, 40, 100, 64, "sliding_window",
                       {"window": 20})),
             ("bf16", (4, 2, 1, 33, 20, 32, "causal", {})),
             ("bf16", (4, 1, 2, 20, 70, 64, "bias",
                       {"scale": 0.2, "softcap": 2.0})),
             ("bf16", (3, 2, 2, 17, 80, 16, "custom", {"heads": 2})),
             ("f16", (4, 1, 1, 70, 70, 64, "causal", {"softcap": 5.0}))]
    ins, body, outs = [], [], []
    for f, (dt, form) in enumerate(forms):
        kind, attrs = form[6], form[7]
        qkv, m = _form_inputs(dt, f, form, rng)
        ins += qkv + ([m] if m is not None else [])
        a = dict(attrs, mask=kind)
        y = attention("attention", [t.v for t in qkv] +
                      ([m.v] if m is not None else []), a)
        mk = ", %%m%d" % f if m is not None else ""
        body.append("%%y%d = cast(attention(%%q%d, %%k%d, %%v%d%s, %s), "
                    "to=f32)" % (f, f, f, f, mk, _attrs(kind, attrs)))
        outs.append(out("f32", y, "y%d" % f))
    c.graph(ins, "\n".join(body), outs_str(outs),
            comment="bf16/f16 attention, head_dim 16..128, every mask "
            "(the GPU runs it on tensor cores)")
    # bf16 output rounding (2^-9 relative) plus P rounded to the dtype
    # before P V: well inside 1e-2; a wrong tile or row is off by ~0.1
    c.run(ins, outs, args=["--threads", "1,2", "--rtol", "1e-2",
                           "--atol", "4e-3"])


@case()
def attention_half_mma_bwd(c, rng):
    """attention_backward in bf16 / f16 (the GPU's tensor-core pre-pass
    and dq / dbias kernels; dk, dv read the pre-pass's lse and D): the
    forms of attention_half_mma, references from torch float64
    autograd of the rounded inputs, outputs cast to f32."""
    forms = [("bf16", (4, 1, 2, 70, 70, 64, "none", {})),
             ("bf16", (3, 1, 1, 40, 40, 128, "causal", {"heads": 1})),
             ("bf16", (4, 2, 1, 33, 20, 32, "causal", {})),
             ("bf16", (4, 1, 2, 20, 70, 64, "bias",
                       {"scale": 0.2, "softcap": 2.0})),
             ("bf16", (3, 2, 2, 17, 80, 16, "custom", {"heads": 2})),
             ("f16", (4, 1, 1, 70, 40, 64, "sliding_window",
                      {"window": 9}))]
    ins, body, outs = [], [], []
    for f, (dt, form) in enumerate(forms):
        kind, attrs = form[6], form[7]
        qkv, m = _form_inputs(dt, f, form, rng)
        dy = T(dt, uni(rng, qkv[0].shape), "g%d" % f)
        ins += qkv + ([m] if m is not None else []) + [dy]
        _, grads = _refs(qkv, m, dy, form)
        ops = "%%q%d, %%k%d, %%v%d, %%g%d" % (f, f, f, f)
        mk = ", %%m%d" % f if m is not None else ""
        for w, g in zip(("q", "k", "v", "bias"), grads):
            body.append("%%d%s%d = cast(attention_backward(%s%s, wrt=%s, "
                        "%s), to=f32)" % (w, f, ops, mk, w,
                                          _attrs(kind, attrs)))
            outs.append(out("f32", g, "d%s%d" % (w, f)))
    c.graph(ins, "\n".join(body), outs_str(outs),
            comment="bf16/f16 attention_backward, head_dim 16..128, every "
            "mask (the GPU's tensor-core pre-pass, dq and dbias)")
    # dS rounded to the dtype before dS K, sums of up to 80 terms
    c.run(ins, outs, args=["--threads", "1,2", "--rtol", "2e-2",
                           "--atol", "1e-2"])


# ---- --grad through attention ----

def _train_runs(c, name, dt, ins, fo, gr, wrt):
    """The loss (forward entry), loss and gradients (NAME_grad, threads
    1, 2, 3 bit-identical) and, in f64, finite differences."""
    outs = [out(dt, fo[0], "loss")]
    c.run(ins, outs)
    gouts = outs + [out(dt, g, "d_" + n) for g, n in zip(gr, wrt)]
    c.run(ins + [T(dt, 1.0, "d_output")], gouts, sub="grad",
          entry=name + "_grad", args=["--threads", "1,2,3"])
    if dt == "f64":
        c.run(ins, outs, sub="fwd", args=["--fd", "--grad-entry",
                                          name + "_grad"])


def _grad_case(name, dt, form):
    rank, b, h, lq, lk, d, kind, attrs = form

    def build(c, rng):
        from e2e_cases_flow import _grads
        qkv, m = _form_inputs(dt, 0, form, rng)
        for t in qkv:
            t.kind = "param"
        w = T(dt, uni(rng, qkv[0].shape), "w")
        ins = qkv + ([m] if m is not None else []) + [w]
        if kind == "bias":
            m.kind = "param"
        mk = ", %m0" if m is not None else ""
        src = ("%%y = attention(%%q0, %%k0, %%v0%s, %s)\n"
               "%%loss = reduce_sum(mul(%%y, %%w))"
               % (mk, _attrs(kind, attrs)))
        c.graph(ins, src, "%loss", comment="--grad through attention "
                "(%s, rank %d), %s" % (kind, rank, dt))
        ok = allowed_mask(kind, b, lq, lk, m.v if m is not None else None,
                          attrs)

        def loss(ts):
            bias = ts["m0"] if kind == "bias" else None
            y = attn_torch(ts["q0"], ts["k0"], ts["v0"], bias, ok, rank, h,
                           attrs)
            return [(y * ts["w"]).sum()]
        wrt = [t.name for t in ins if t.kind == "param"]
        fo, gr = _grads(loss, ins, wrt)
        _train_runs(c, name, dt, ins, fo, gr, wrt)
    case(name, rlxc=["--grad"])(build)


_grad_case("attention_grad_causal", "f32",
           (3, 2, 2, 65, 65, 8, "causal", {"heads": 2}))
_grad_case("attention_grad_bias", "f32",
           (4, 1, 2, 9, 7, 8, "bias", {"softcap": 1.5}))
_grad_case("attention_grad_custom64", "f64",
           (4, 2, 2, 6, 8, 4, "custom", {}))
_grad_case("attention_grad_sliding64", "f64",
           (3, 1, 2, 12, 12, 4, "sliding_window",
            {"heads": 2, "window": 2, "softcap": 3.0}))


# ---- a GPT block, one training step ----

GPT = """%x0 = add(gather(%wte, %tok), %wpe)
%a = layer_norm(%x0, %g1, %b1)
%qkv = add(matmul(%a, %wqkv), %bqkv)
%q = narrow(%qkv, axis=2, start=0, len=8)
%k = narrow(%qkv, axis=2, start=8, len=8)
%v = narrow(%qkv, axis=2, start=16, len=8)
%att = attention(%q, %k, %v, heads=2, mask=causal)
%x1 = add(%x0, add(matmul(%att, %wo), %bo))
%m = layer_norm(%x1, %g2, %b2)
%h = gelu_tanh(add(matmul(%m, %wfc), %bfc))
%x2 = add(%x1, add(matmul(%h, %wpr), %bpr))
%f = reshape(layer_norm(%x2, %gf, %bf), shape=[12, 8])
%logits = matmul(%f, transpose(%wte, perm=[1, 0]))
%loss = reduce_mean(softmax_cross_entropy(%logits, %tgt))"""


def _gpt_loss(ts, tok, tgt):
    import torch
    F = torch.nn.functional
    x = ts["wte"][torch.tensor(tok.astype(np.int64))] + ts["wpe"]
    a = F.layer_norm(x, (8,), ts["g1"], ts["b1"])
    q, k, v = (a @ ts["wqkv"] + ts["bqkv"]).split(8, -1)

    def heads(t):
        return t.reshape(2, 6, 2, 4).transpose(1, 2)
    s = heads(q) @ heads(k).transpose(-1, -2) / 2.0
    causal = torch.ones(6, 6, dtype=torch.bool).tril()
    p = torch.softmax(s.masked_fill(~causal, float("-inf")), -1)
    att = (p @ heads(v)).transpose(1, 2).reshape(2, 6, 8)
    x = x + att @ ts["wo"] + ts["bo"]
    m = F.layer_norm(x, (8,), ts["g2"], ts["b2"])
    x = x + F.gelu(m @ ts["wfc"] + ts["bfc"], approximate="tanh") @ \
        ts["wpr"] + ts["bpr"]
    f = F.layer_norm(x, (8,), ts["gf"], ts["bf"]).reshape(12, 8)
    lab = torch.tensor(tgt.astype(np.int64))
    return [F.cross_entropy(f @ ts["wte"].t(), lab)]


def _gpt_case(name, dt):
    def build(c, rng):
        from e2e_cases_flow import _grads
        tok = T("i32", rng.integers(0, 16, (2, 6)), "tok")
        tgt = T("i32", rng.integers(0, 16, (12,)), "tgt")
        shapes = [("wte", (16, 8)), ("wpe", (6, 8)), ("g1", (8,)),
                  ("b1", (8,)), ("wqkv", (8, 24)), ("bqkv", (24,)),
                  ("wo", (8, 8)), ("bo", (8,)), ("g2", (8,)), ("b2", (8,)),
                  ("wfc", (8, 32)), ("bfc", (32,)), ("wpr", (32, 8)),
                  ("bpr", (8,)), ("gf", (8,)), ("bf", (8,))]
        ps = [T(dt, (1.0 if n[0] == "g" else 0.0) + uni(rng, s) * 0.5, n,
                "param") for n, s in shapes]
        ins = [tok, tgt] + ps
        c.graph(ins, GPT, "%loss", comment="a GPT block: embedding "
                "gather, layer_norm, causal attention (2 heads),\n"
                "gelu_tanh MLP, residuals, tied output head, mean "
                "cross-entropy; --grad: d every param")
        wrt = [t.name for t in ps]
        fo, gr = _grads(lambda ts: _gpt_loss(ts, tok.v, tgt.v), ins, wrt)
        _train_runs(c, name, dt, ins, fo, gr, wrt)
    case(name, rlxc=["--grad"])(build)


_gpt_case("gpt_block_train", "f32")
_gpt_case("gpt_block_train64", "f64")
