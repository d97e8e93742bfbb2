"""e2e_cases_models.py -- whole models with NN layers, forward and
training step (rlxc --grad), against torch.autograd in float64.

- resblock: a ResNet basic block, conv 3x3 -> batch_norm_inference ->
  relu -> conv 3x3 -> batch_norm_inference -> + x -> relu, loss =
  mean(y^2), gradients of both filters and the norms' gamma and beta
  (running mean and variance are inputs).
- prenorm: a pre-norm transformer block without attention, rms_norm ->
  linear -> rope (2 heads of 8, n_rot 4 < head_dim) -> linear ->
  residual -> rms_norm -> SwiGLU MLP -> residual, loss = mean(y^2),
  gradients of every weight, gamma and beta.
f32 and f64; the f32 training step also runs at 1, 2 and 3 threads
(bit-identical) and concurrently; f64 is checked against central
finite differences of the forward entry too.
"""
import numpy as np
import torch
import torch.nn.functional as F

from e2e_cases_flow import _grads
from e2e_lib import T, case, out, round_to, uni


def _resblock_loss(ts):
    x = ts["x"]
    h = F.conv2d(x, ts["w1"], padding=1)
    h = F.relu(F.batch_norm(h, ts["m1"], ts["v1"], ts["g1"], ts["b1"],
                            False, eps=1e-5))
    h = F.conv2d(h, ts["w2"], padding=1)
    y = F.relu(F.batch_norm(h, ts["m2"], ts["v2"], ts["g2"], ts["b2"],
                            False, eps=1e-5) + x)
    return [(y * y).mean()]


RESBLOCK = """%c1 = conv2d(%x, %w1, padding=[1, 1])
%h = relu(batch_norm_inference(%c1, %g1, %b1, %m1, %v1))
%c2 = conv2d(%h, %w2, padding=[1, 1])
%y = relu(add(batch_norm_inference(%c2, %g2, %b2, %m2, %v2), %x))
%loss = reduce_mean(mul(%y, %y))"""


def _resblock_inputs(dt, rng):
    ins = [T(dt, uni(rng, (2, 4, 6, 6)), "x")]
    for k in "12":
        ins += [T(dt, uni(rng, (4,)) * 0.3, "m" + k),
                T(dt, uni(rng, (4,), 0.5, 1.5), "v" + k)]
    for k in "12":
        ins += [T(dt, uni(rng, (4, 4, 3, 3)) * 0.4, "w" + k, "param"),
                T(dt, uni(rng, (4,), 0.5, 1.5), "g" + k, "param"),
                T(dt, uni(rng, (4,)) * 0.2, "b" + k, "param")]
    return ins


def _rope(v, cos, sin, d, r):
    h = r // 2
    vs = v.reshape(v.shape[:-1] + (v.shape[-1] // d, d))
    c, s = cos[:, None, :h], sin[:, None, :h]
    a, b = vs[..., :h], vs[..., h:r]
    return torch.cat([a * c - b * s, b * c + a * s, vs[..., r:]],
                     -1).reshape(v.shape)


def _rms(v, g, b):
    return v * torch.rsqrt((v * v).mean(-1, keepdim=True) + 1e-6) * g + b


def _prenorm_loss(ts):
    x = ts["x"]
    q = _rope(_rms(x, ts["g1"], ts["be1"]) @ ts["wq"], ts["cos"],
              ts["sin"], 8, 4)
    x1 = x + q @ ts["wo"]
    h2 = _rms(x1, ts["g2"], ts["be2"])
    y = x1 + (F.silu(h2 @ ts["w1"]) * (h2 @ ts["w3"])) @ ts["w2"]
    return [(y * y).mean()]


PRENORM = """%q = rope(matmul(rms_norm(%x, %g1, %be1), %wq), %cos, %sin, \
head_dim=8, n_rot=4)
%x1 = add(%x, matmul(%q, %wo))
%h2 = rms_norm(%x1, %g2, %be2)
%u = mul(silu(matmul(%h2, %w1)), matmul(%h2, %w3))
%y = add(%x1, matmul(%u, %w2))
%loss = reduce_mean(mul(%y, %y))"""


def _prenorm_inputs(dt, rng):
    ins = [T(dt, uni(rng, (2, 5, 16)), "x"),
           T(dt, uni(rng, (5, 4)), "cos"), T(dt, uni(rng, (5, 4)), "sin")]
    for k in "12":
        ins += [T(dt, uni(rng, (16,), 0.5, 1.5), "g" + k, "param"),
                T(dt, uni(rng, (16,)) * 0.2, "be" + k, "param")]
    for n, s in (("wq", (16, 16)), ("wo", (16, 16)), ("w1", (16, 24)),
                 ("w3", (16, 24)), ("w2", (24, 16))):
        ins.append(T(dt, uni(rng, s) * 0.3, n, "param"))
    return ins


def _train_case(name, dt, inputs, body, loss_fn, what):
    def build(c, rng):
        ins = inputs(dt, rng)
        wrt = [t.name for t in ins if t.kind == "param"]
        c.graph(ins, body, "%loss", comment="%s, %s; --grad gives "
                "%s_grad: loss, then d_<param> for every param" %
                (what, dt, name))
        fo, gr = _grads(loss_fn, ins, wrt)
        outs = [out(dt, fo[0], "loss")]
        c.run(ins, outs)
        gouts = outs + [out(dt, g, "d_" + n) for g, n in zip(gr, wrt)]
        args = (["--threads", "1,2,3", "--concurrent", "3"]
                if dt == "f32" else [])
        c.run(ins + [T(dt, 1.0, "d_output")], gouts, sub="grad",
              entry=name + "_grad", args=args)
        if dt == "f64":
            c.run(ins, outs, sub="fwd", args=["--fd", "--grad-entry",
                                              name + "_grad"])
    case(name, rlxc=["--grad"])(build)


for _dt, _sfx in (("f32", ""), ("f64", "64")):
    _train_case("resblock_train" + _sfx, _dt, _resblock_inputs, RESBLOCK,
                _resblock_loss, "ResNet basic block")
    _train_case("prenorm_train" + _sfx, _dt, _prenorm_inputs, PRENORM,
                _prenorm_loss, "pre-norm block (rms_norm, rope, SwiGLU)")


def _bf(v):
    return round_to("bf16", v)


@case(rlxc=["--grad"])
def mixed_lm_head(c, rng):
    """A bf16 language-model head as samples/gpt2.rlx ends: layer_norm
    in f32 cast to bf16, a bf16 product with a cast, transposed f32
    weight, logits cast to f32 for the cross-entropy (its prologue in
    the forward and the backward), the logits' gradient cast to bf16
    (on the GPU stored by xent_backward, the layer_norm's output by the
    norm: codegen/plan/cast_stores.c). Reference: NumPy in float64 with
    the graph's bf16 roundings (products accumulate exactly, then round
    once): tolerance 1e-2 for a rounding that lands on the other side."""
    n, d, v = 6, 16, 37
    y = T("i32", rng.integers(0, v, size=n), "y")
    h = T("f32", uni(rng, (n, d)) * 2.0, "h", "param")
    g = T("f32", uni(rng, (d,), 0.5, 1.5), "g", "param")
    b = T("f32", uni(rng, (d,)) * 0.2, "b", "param")
    w = T("f32", uni(rng, (v, d)), "w", "param")
    ins = [y, h, g, b, w]
    c.graph(ins, "%a = cast(layer_norm(%h, %g, %b), to=bf16)\n"
            "%z = cast(matmul(%a, transpose(cast(%w, to=bf16), "
            "perm=[1, 0])), to=f32)\n"
            "%loss = reduce_mean(softmax_cross_entropy(%z, %y))", "%loss",
            comment="mixed-precision LM head; --grad gives mixed_lm_head_grad:"
            "\nloss, d_h, d_g, d_b, d_w")
    mu = h.v.mean(1, keepdims=True)
    r = 1.0 / np.sqrt(((h.v - mu) ** 2).mean(1, keepdims=True) + 1e-5)
    xh = (h.v - mu) * r
    a = _bf(xh * g.v + b.v)
    wb = _bf(w.v)
    z = _bf(a @ wb.T)
    lab = y.v.astype(np.int64)
    m = z.max(1, keepdims=True)
    p = np.exp(z - m)
    s = p.sum(1, keepdims=True)
    loss = ((m[:, 0] - z[np.arange(n), lab]) + np.log(s[:, 0])).mean()
    dz = p / s
    dz[np.arange(n), lab] -= 1
    dz = _bf(dz / n)
    da = _bf(dz @ wb)
    dw = _bf(dz.T @ a)
    dg, db = (da * xh).sum(0), da.sum(0)
    gx = da * g.v
    dh = r * (gx - gx.mean(1, keepdims=True) -
              xh * (gx * xh).mean(1, keepdims=True))
    outs = [out("f32", loss, "loss")]
    tol = ["--rtol", "1e-2", "--atol", "1e-3"]
    c.run(ins, outs, args=["--threads", "1,2"] + tol)
    c.run(ins + [T("f32", 1.0, "d_output")],
          outs + [out("f32", dh, "d_h"), out("f32", dg, "d_g"),
                  out("f32", db, "d_b"), out("f32", dw, "d_w")],
          sub="grad", entry="mixed_lm_head_grad",
          args=["--threads", "1,2,3"] + tol)
