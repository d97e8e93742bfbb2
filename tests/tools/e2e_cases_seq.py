"""e2e_cases_seq.py -- the fused sequence blocks (language.md 6.7):
selective_scan (Mamba), gated_delta_net and fused_transformer_layer.

References: plain PyTorch float64 written from the equations of the
spec (a Python loop over time for the recurrences; the transformer
layer from torch's layer_norm and the plain attention of
tests/families/attention.py), on the rounded inputs. Forward cases run
the fused kernels (selective_scan, gated_delta_net) or the lowering
(fused_transformer_layer) at 1, 2 and 3 threads over several shapes:
s = 1, state sizes 1, 4, 16 (the registers path), 40 and 64 (the
streamed path), channel counts that are not multiples of the kernel's
16 lanes. seq_grad compiles one graph with all three blocks with
--grad: its forward entry runs the fused kernels, its gradient entry
the expansion into primitives (expand_fused); both must give the
reference loss, the gradients match torch.autograd and finite
differences. The gradient-check suite (tests/gradcheck) has the
per-op cases and the JVP goldens.
"""
import math

import numpy as np
import torch
import torch.nn.functional as F

from families.attention import allowed_mask, attn_torch
from e2e_cases_flow import _grads
from e2e_lib import T, case, out, outs_str, tt, uni


def selective_scan_ref(x, delta, a, b, c):
    """x, delta [B,S,H], a [H,N], b, c [B,S,N] -> y [B,S,H]."""
    bs, s, h = x.shape
    st = x.new_zeros(bs, h, a.shape[1])
    ys = []
    for t in range(s):
        dt = delta[:, t, :, None]
        st = torch.exp(dt * a) * st + dt * b[:, t, None, :] * \
            x[:, t, :, None]
        ys.append((st * c[:, t, None, :]).sum(-1))
    return torch.stack(ys, 1)


def gated_delta_net_ref(q, k, v, g, beta):
    """q, k, v [B,S,H,N], g, beta [B,S,H] -> o [B,S,H,N]."""
    bs, s, h, n = q.shape
    S = q.new_zeros(bs, h, n, n)
    os_ = []
    for t in range(s):
        S = torch.exp(g[:, t])[..., None, None] * S
        sk = torch.einsum("bhij,bhi->bhj", S, k[:, t])
        d = (v[:, t] - sk) * beta[:, t][..., None]
        S = S + k[:, t][..., :, None] * d[..., None, :]
        os_.append(torch.einsum("bhij,bhi->bhj", S, q[:, t]) / math.sqrt(n))
    return torch.stack(os_, 1)


ACTS = {"gelu": F.gelu, "relu": F.relu, "silu": F.silu,
        "gelu_tanh": lambda x: F.gelu(x, approximate="tanh")}
TL_NAMES = ("h qkv_w qkv_b out_w out_b ln1_g ln1_b fc1_w fc1_b fc2_w fc2_b "
            "ln2_g ln2_b mask").split()


def transformer_ref(t, mask, heads, act="gelu", eps1=1e-12, eps2=1e-12):
    """Post-norm BERT layer; t: dict of the operands (TL_NAMES) but the
    mask (NumPy [B,S], value < 0.5 = masked key)."""
    h = t["h"]
    bs, s, e = h.shape
    q, k, v = (h @ t["qkv_w"] + t["qkv_b"]).split(e, -1)
    ok = allowed_mask("custom", bs, s, s, mask, {})
    a = attn_torch(q, k, v, None, ok, 3, heads, {})
    h1 = F.layer_norm(a @ t["out_w"] + t["out_b"] + h, (e,), t["ln1_g"],
                      t["ln1_b"], eps1)
    f = ACTS[act](h1 @ t["fc1_w"] + t["fc1_b"]) @ t["fc2_w"] + t["fc2_b"]
    return F.layer_norm(f + h1, (e,), t["ln2_g"], t["ln2_b"], eps2)


def ssm_values(rng, bs, s, h, n):
    """x, delta (> 0), a (< 0), b, c as NumPy arrays."""
    return [uni(rng, (bs, s, h)), rng.uniform(0.05, 0.6, (bs, s, h)),
            -rng.uniform(0.2, 2.0, (h, n)), uni(rng, (bs, s, n)),
            uni(rng, (bs, s, n))]


def gdn_values(rng, bs, s, h, n):
    """q, k, v, g (< 0), beta in (0, 1); k scaled so |k| is about 1."""
    r = 1 / math.sqrt(n)
    return [uni(rng, (bs, s, h, n)), uni(rng, (bs, s, h, n)) * r,
            uni(rng, (bs, s, h, n)), -rng.uniform(0.05, 0.7, (bs, s, h)),
            rng.uniform(0.1, 0.9, (bs, s, h))]


def transformer_values(rng, bs, s, e, inter):
    """The 13 float operands (TL_NAMES but mask) and a mask [B,S] with
    some keys masked in every row."""
    se = 1 / math.sqrt(e)
    shapes = [(bs, s, e), (e, 3 * e), (3 * e,), (e, e), (e,), (e,), (e,),
              (e, inter), (inter,), (inter, e), (e,), (e,), (e,)]
    vals = [uni(rng, sh) * (1 if i == 0 else se) for i, sh in
            enumerate(shapes)]
    vals[5] += 1
    vals[11] += 1
    m = rng.uniform(0, 1, (bs, s))
    m[:, 0] = 1.0  # at least one allowed key per row
    return vals, m


SSM_FORMS = [(2, 5, 19, 4), (1, 1, 3, 1), (2, 7, 33, 64), (1, 40, 16, 16),
             (1, 3, 17, 40)]
GDN_FORMS = [(2, 5, 3, 4), (1, 1, 1, 1), (1, 6, 2, 64), (2, 9, 1, 16)]
TL_FORMS = [(2, 5, 2, 4, 12, "gelu", "f32"), (1, 3, 1, 8, 16, "silu", "bool"),
            (2, 1, 2, 2, 6, "gelu_tanh", "f32"), (1, 4, 2, 4, 8, "relu", "f32")]


def _ssm_case(dt):
    def build(c, rng):
        ins, body, outs = [], [], []
        for f, (bs, s, h, n) in enumerate(SSM_FORMS):
            vals = ssm_values(rng, bs, s, h, n)
            ts = [T(dt, v, "%s%d" % (nm, f)) for nm, v in
                  zip(("x", "d", "a", "b", "c"), vals)]
            ins += ts
            y = selective_scan_ref(*[tt(t.v) for t in ts])
            body.append("%%y%d = selective_scan(%%x%d, %%d%d, %%a%d, %%b%d, "
                        "%%c%d, state_size=%d)" % ((f,) * 6 + (n,)))
            outs.append(out(dt, y.numpy(), "y%d" % f))
        c.graph(ins, "\n".join(body), outs_str(outs),
                comment="selective_scan forward (fused kernel), %s" % dt)
        c.run(ins, outs)
    case("seq_selective_scan_" + dt)(build)


def _gdn_case(dt):
    def build(c, rng):
        ins, body, outs = [], [], []
        for f, (bs, s, h, n) in enumerate(GDN_FORMS):
            vals = gdn_values(rng, bs, s, h, n)
            ts = [T(dt, v, "%s%d" % (nm, f)) for nm, v in
                  zip(("q", "k", "v", "g", "beta"), vals)]
            ins += ts
            o = gated_delta_net_ref(*[tt(t.v) for t in ts])
            body.append("%%o%d = gated_delta_net(%%q%d, %%k%d, %%v%d, %%g%d, "
                        "%%beta%d, state_size=%d)" % ((f,) * 6 + (n,)))
            outs.append(out(dt, o.numpy(), "o%d" % f))
        c.graph(ins, "\n".join(body), outs_str(outs),
                comment="gated_delta_net forward (fused kernel), %s" % dt)
        c.run(ins, outs)
    case("seq_gated_delta_net_" + dt)(build)


def _tl_call(f, heads, hd, inter, act, extra=""):
    ops = ", ".join("%%%s%d" % (nm, f) for nm in TL_NAMES)
    a = "heads=%d, head_dim=%d, intermediate=%d" % (heads, hd, inter)
    if act != "gelu":
        a += ", activation=%s" % act
    return "fused_transformer_layer(%s, %s%s)" % (ops, a, extra)


@case()
def seq_transformer_layer(c, rng):
    """fused_transformer_layer lowered to matmul/attention/layer_norm."""
    ins, body, outs = [], [], []
    for f, (bs, s, heads, hd, inter, act, mdt) in enumerate(TL_FORMS):
        vals, m = transformer_values(rng, bs, s, heads * hd, inter)
        if mdt == "bool":
            m = (m >= 0.5).astype(np.int64)
        ts = [T("f32", v, "%s%d" % (nm, f)) for nm, v in
              zip(TL_NAMES, vals)] + [T(mdt, m, "mask%d" % f)]
        ins += ts
        eps = ", eps1=1e-05, eps2=1e-06" if f == 1 else ""
        y = transformer_ref({nm: tt(t.v) for nm, t in zip(TL_NAMES, ts)},
                            ts[-1].v, heads, act, *((1e-5, 1e-6) if f == 1
                                                    else ()))
        body.append("%%y%d = %s" % (f, _tl_call(f, heads, hd, inter, act,
                                                eps)))
        outs.append(out("f32", y.numpy(), "y%d" % f))
    c.graph(ins, "\n".join(body), outs_str(outs),
            comment="fused_transformer_layer forward (lowered to the "
            "matmul, attention, layer_norm\nand activation kernels), f32 "
            "and bool masks, every activation")
    c.run(ins, outs)


for _dt in ("f32", "f64"):
    _ssm_case(_dt)
    _gdn_case(_dt)


@case(rlxc=["--grad"])
def seq_grad(c, rng):
    """All three blocks in one f64 loss: the forward entry runs the fused
    kernels, seq_grad_grad the expansion; the same loss either way."""
    dt = "f64"
    sv = ssm_values(rng, 2, 4, 3, 5)
    gv = gdn_values(rng, 1, 3, 2, 3)
    tv, m = transformer_values(rng, 1, 3, 4, 6)
    ins = [T(dt, v, nm, "param") for nm, v in
           zip(("x", "d", "a", "b", "c"), sv)]
    ins += [T(dt, v, nm, "param") for nm, v in
            zip(("q", "k", "v", "g", "beta"), gv)]
    ins += [T(dt, v, "%s0" % nm, "param") for nm, v in zip(TL_NAMES, tv)]
    ins.append(T(dt, m, "mask0"))
    wy = [T(dt, uni(rng, (2, 4, 3)), "wy"), T(dt, uni(rng, (1, 3, 2, 3)),
                                               "wo"),
          T(dt, uni(rng, (1, 3, 4)), "wt")]
    ins += wy
    body = ("%y = selective_scan(%x, %d, %a, %b, %c, state_size=5)\n"
            "%o = gated_delta_net(%q, %k, %v, %g, %beta, state_size=3)\n"
            "%t = " + _tl_call(0, 2, 2, 6, "gelu") + "\n"
            "%loss = add(add(reduce_sum(mul(%y, %wy)), reduce_sum(mul(%o, "
            "%wo))), reduce_sum(mul(%t, %wt)))")
    wrt = [t.name for t in ins if t.kind == "param"]

    def fn(ts):
        y = selective_scan_ref(*[ts[n] for n in "x d a b c".split()])
        o = gated_delta_net_ref(*[ts[n] for n in "q k v g beta".split()])
        tl = transformer_ref({nm: ts[nm + "0"] for nm in TL_NAMES[:-1]}, m,
                             2)
        return [(y * ts["wy"]).sum() + (o * ts["wo"]).sum() +
                (tl * ts["wt"]).sum()]
    c.graph(ins, body, "%loss",
            comment="selective_scan, gated_delta_net and "
            "fused_transformer_layer in one loss;\n--grad: seq_grad_grad "
            "differentiates their expansion (expand_fused)")
    fo, gr = _grads(fn, ins, wrt)
    outs = [out(dt, fo[0], "loss")]
    c.run(ins, outs)
    gouts = outs + [out(dt, g, "d_" + n) for g, n in zip(gr, wrt)]
    c.run(ins + [T(dt, 1.0, "d_output")], gouts, sub="grad",
          entry="seq_grad_grad")
    c.run(ins, outs, sub="fwd", args=["--fd", "--grad-entry",
                                      "seq_grad_grad"])


@case(diag=r"gated_delta_net: q must have a dtype the op compiles for "
      r"\(f32, f64\), got f16")
def seq_f16_unsupported(c, rng):
    """The fused kernels are f32/f64: f16 gets a diagnostic naming the
    op (the goldens are ready for an f16 kernel)."""
    vals = gdn_values(rng, 1, 3, 2, 4)
    ins = [T("f16", v, nm) for nm, v in zip(("q", "k", "v", "g", "beta"),
                                            vals)]
    o = gated_delta_net_ref(*[tt(t.v) for t in ins])
    c.graph(ins, "%o = cast(gated_delta_net(%q, %k, %v, %g, %beta, "
            "state_size=4), to=f32)", "%o",
            comment="gated_delta_net in f16: not compiled (diagnostic)")
    c.run(ins, [out("f32", o.numpy(), "o")])
