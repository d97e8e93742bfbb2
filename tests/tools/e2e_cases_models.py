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
import torch
import torch.nn.functional as F

from e2e_cases_flow import _grads
from e2e_lib import T, case, out, uni


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
