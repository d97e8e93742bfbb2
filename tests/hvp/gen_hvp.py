#!/usr/bin/python3
"""gen_hvp.py -- write the forward-mode suite of whole graphs and its
goldens: Hessian-vector products (rlxc --hvp) and control flow under
rlxc --jvp (and --hvp where the graph returns a scalar loss).

Cases (float64 unless named; the op-by-op JVP checks live in
tests/gradcheck/, which gives every gradient case a JVP golden):
  hvp_mlp_tanh     MLP with tanh, mean squared error (also f32)
  hvp_mlp_tanh_wrt the same with --wrt=%w2,%x --jvp=%w2,%x (a subset,
                   an input, not in declaration order)
  hvp_xent         gelu MLP into softmax_cross_entropy (also f32)
  hvp_norms        layer_norm, tanh, rms_norm, a sin readout
  hvp_attention    q/k/v projections into causal attention (rank 3,
                   2 heads, softcap), tanh readout
  hvp_attention_bias
                   attention(mask=bias) whose bias (an input) has
                   fully and partly -inf rows (f32 and f64): the
                   forward's rule makes a fully masked row zero, so its
                   tangents and H v entries are zero, never NaN; the
                   reference masks those keys explicitly
  hvp_attention_bias_param
                   the issue's form: attention(%q, %k, %k, %b) with the
                   -inf bias a param too (no finite differences: they
                   cannot step a -inf param)
  hvp_prod_zeros   reduce_prod over rows and over non-contiguous axes
                   with no, one, two and three zeros in a set (f32 and
                   f64); the reference multiplies the elements one by
                   one, so torch differentiates a polynomial: exact
                   second derivatives at zeros
  hvp_prod_issue   the issue's products [0, 3, 2] and [0, 0, 2], no
                   axes (f32 and f64)
  hvp_rnn          a tanh RNN as a scan with a body graph
  hvp_fake_quant   quantization-aware MLP: fake_quantize_lsq (per
                   channel, grad_scale) and fake_quantize (tanh STE);
                   references in true forward mode over the STE rules
                   (custom, like the custom_fn cases; H not symmetric)
  flow_scan_ckpt   scan with checkpoints=3 over 8 steps
  flow_scan_traj   scan with save_trajectory=true, checkpoints=2, a
                   loss over the whole trajectory
  flow_while       while with max_iterations and a data-dependent
                   trip count, an integer counter and a float carry
                   that the body changes
  flow_while_nomax the same loop without max_iterations: --jvp only
                   (reverse mode needs max_iterations)
  flow_if_then     if whose predicate is computed from a param (then
  flow_if_else     branch taken / else branch taken)
  flow_custom_jvp  custom_fn with a jvp body that is deliberately not
                   the derivative (5x t for x*x), one with only a vjp
                   body and one with neither (fwd differentiated):
                   --jvp only (a jvp body alone has no reverse mode)
  flow_custom_hvp  custom_fn with a vjp body (3x g) and a jvp body
                   (5x t), neither the derivative: --grad --jvp --hvp

Golden subdirectories (tests/tools/e2e.py format; run.txt says which):
  grad/  ENTRY_grad: inputs, d_output -> loss, gradients (torch.autograd)
  fwd/   ENTRY (f64 cases with finite differences): rlx_run's finite
         differences of ENTRY_grad, and run_hvp.py's along the tangent
  jvp/   ENTRY_jvp: inputs, tangent per param -> outputs, tangents
         (torch.autograd.functional.jvp)
  hvp/   ENTRY_hvp: inputs, d_output, tangent per param -> loss,
         gradients, <grad, v>, H v (torch.autograd.functional.hvp of
         d_output * loss)
The tangent of each param comes from a generator of its own (seeded
with the CRC-32 of "NAME/jvp"), uniform in [-1, 1); d_output is a
scalar in [0.5, 1.5) for a loss, so the products are scaled by it.
The custom_fn cases use torch.autograd.Function classes with the same
deliberately wrong formulas as the graph's bodies; their references
are computed in true forward mode (torch.autograd.forward_ad: the
Function's jvp is used) and, for the HVP, forward over reverse (the
JVP of the gradient, as rlxc builds ENTRY_hvp): proof that the bodies
are what rlxc uses. Their run.txt skips the checks that assume the
derivatives are consistent (`# jvp-dot: skip`, `# hvp-sym: skip`).
The machinery (registry, the builder G, tangents, golden files,
run.txt) is the AD harness's generator half, tests/tools/adcheck/gen.py,
shared with tests/gradcheck/gen_gradcheck.py (whose torch references of
layer_norm/rms_norm and the fake quantizers the cases here reuse).
Needs /usr/bin/python3 with numpy and torch; CI does not.
Usage: /usr/bin/python3 tests/hvp/gen_hvp.py [NAME...]
"""
import functools
import os
import sys

import numpy as np
import torch
import torch.autograd.forward_ad as fwad
import torch.nn.functional as F

HERE = os.path.dirname(os.path.abspath(__file__))
SRC = os.path.dirname(os.path.dirname(HERE))
sys.path.insert(0, os.path.join(SRC, "tests", "tools"))
sys.path.insert(0, os.path.join(SRC, "tests", "gradcheck"))
sys.path.insert(0, os.path.join(SRC, "tests"))
import e2e_lib as L  # noqa: E402
from adcheck import gen as ag  # noqa: E402
# torch references of ops, from the suites that define them
from gen_gradcheck import _FQ, _LSQ  # noqa: E402
from families.attention import allowed_mask, attn_torch  # noqa: E402
from families.norm import norm_torch  # noqa: E402

CASES_DIR = os.path.join(HERE, "cases")
GOLDEN_DIR = os.path.join(HERE, "golden")

REG = ag.Registry()


def case(name, modes=("grad", "jvp", "hvp"), fd=True, dts=("f64",),
         custom=False, skip=None, wrt=None):
    """modes: the entries checked; fd: finite differences (f64);
    custom: references in true forward mode (custom_fn bodies);
    skip: {"jvp-dot" | "hvp-sym": reason}; wrt: argument names for
    --wrt and --jvp (default: every param)."""
    return REG.case(name, dts, modes=tuple(modes), fd=fd, custom=custom,
                    skip=skip or {}, wrt=wrt)


# ---- HVP of small networks ----

def mlp_tanh(g):
    g.i("x", g.dt, g.u((6, 5)))
    g.p("w1", g.u((5, 4), -0.8, 0.8))
    g.p("b1", g.u((4,), -0.5, 0.5))
    g.p("w2", g.u((4, 3), -0.8, 0.8))
    g.p("b2", g.u((3,), -0.5, 0.5))
    g.i("tgt", g.dt, g.u((6, 3), -1, 1))
    body = ("%h = tanh(add(matmul(%x, %w1), %b1))\n"
            "%e = sub(add(matmul(%h, %w2), %b2), %tgt)\n"
            "%l = reduce_mean(mul(%e, %e))")

    def ref(t):
        h = torch.tanh(t["x"] @ t["w1"] + t["b1"])
        return ((h @ t["w2"] + t["b2"] - t["tgt"]) ** 2).mean()
    return body, "%l", ref, ""


case("hvp_mlp_tanh", dts=("f32", "f64"))(mlp_tanh)
# a subset of the arguments, an input among them, not in declaration
# order: --wrt=%w2,%x --jvp=%w2,%x
case("hvp_mlp_tanh_wrt", wrt=("w2", "x"))(mlp_tanh)


@case("hvp_xent", dts=("f32", "f64"))
def _(g):
    g.i("x", g.dt, g.u((8, 6)))
    g.p("w1", g.u((6, 5), -0.7, 0.7))
    g.p("b1", g.u((5,), -0.5, 0.5))
    g.p("w2", g.u((5, 4), -0.7, 0.7))
    g.p("b2", g.u((4,), -0.5, 0.5))
    g.i("lab", "i32", g.rng.integers(0, 4, size=(8,)))
    body = ("%h = gelu(add(matmul(%x, %w1), %b1))\n"
            "%z = add(matmul(%h, %w2), %b2)\n"
            "%l = reduce_mean(softmax_cross_entropy(%z, %lab), axes=[0])")

    def ref(t):
        h = F.gelu(t["x"] @ t["w1"] + t["b1"])
        return F.cross_entropy(h @ t["w2"] + t["b2"], t["lab"])
    return body, "%l", ref, ""


@case("hvp_norms")
def _(g):
    g.i("x", g.dt, g.u((4, 6)))
    g.p("w1", g.u((6, 6), -0.8, 0.8))
    g.p("g1", g.u((6,), 0.5, 1.5))
    g.p("c1", g.u((6,), -0.5, 0.5))
    g.p("w2", g.u((6, 5), -0.8, 0.8))
    g.p("g2", g.u((5,), 0.5, 1.5))
    g.p("c2", g.u((5,), -0.5, 0.5))
    g.i("r", g.dt, g.u((4, 5)))
    body = ("%a = layer_norm(matmul(%x, %w1), %g1, %c1)\n"
            "%b = rms_norm(matmul(tanh(%a), %w2), %g2, %c2)\n"
            "%l = reduce_sum(mul(sin(%b), %r))")

    def ref(t):
        a = norm_torch(t["x"] @ t["w1"], t["g1"], t["c1"], 1, 1e-5, False)
        b = norm_torch(torch.tanh(a) @ t["w2"], t["g2"], t["c2"], 1, 1e-6,
                       True)
        return (torch.sin(b) * t["r"]).sum()
    return body, "%l", ref, ""


ATT = {"heads": 2, "softcap": 2.5}


@case("hvp_attention")
def _(g):
    g.i("x", g.dt, g.u((2, 5, 4), -1, 1))
    for w in ("wq", "wk", "wv"):
        g.p(w, g.u((4, 4), -0.9, 0.9))
    g.i("r", g.dt, g.u((2, 5, 4)))
    body = ("%o = attention(matmul(%x, %wq), matmul(%x, %wk), "
            "matmul(%x, %wv), mask=causal, heads=2, softcap=2.5)\n"
            "%l = reduce_sum(mul(tanh(%o), %r))")
    ok = allowed_mask("causal", 2, 5, 5, None, ATT)

    def ref(t):
        x = t["x"]
        o = attn_torch(x @ t["wq"], x @ t["wk"], x @ t["wv"], None, ok, 3,
                       2, ATT)
        return (torch.tanh(o) * t["r"]).sum()
    return body, "%l", ref, ""


NEG_INF = float("-inf")


def masked_bias(g, shape):
    """A bias in [-1, 1) with -inf entries: head 0 row 1 and head 1 row
    2 fully masked, head 1 row 0 partly."""
    b = g.u(shape, -1, 1)
    b[0, 0, 1, :] = NEG_INF
    b[0, 1, 2, :] = NEG_INF
    b[0, 1, 0, ::2] = NEG_INF
    return b


def bias_attn(t, q, k, v, ok):
    """attention(q, k, v, b, mask=bias) with the forward's rule for -inf
    biases (ok = b != -inf): those keys masked, a row without allowed
    keys zero. The bias enters as where(ok, b, 0), so torch never sees
    an infinity and its derivatives there are zero."""
    okt = torch.tensor(ok)
    b = torch.where(okt, t["b"], torch.zeros_like(t["b"]))
    return attn_torch(q, k, v, b, ok, 4, q.shape[1], {})


@case("hvp_attention_bias", dts=("f32", "f64"))
def _(g):
    g.p("q", g.u((1, 2, 3, 4), -1, 1))
    g.p("k", g.u((1, 2, 4, 4), -1, 1))
    g.p("v", g.u((1, 2, 4, 4), -1, 1))
    ok = g.i("b", g.dt, masked_bias(g, (1, 2, 3, 4))).v != NEG_INF
    g.i("r", g.dt, g.u((1, 2, 3, 4)))
    body = ("%o = attention(%q, %k, %v, %b, mask=bias)\n"
            "%l = reduce_sum(mul(tanh(%o), %r))")

    def ref(t):
        o = bias_attn(t, t["q"], t["k"], t["v"], ok)
        return (torch.tanh(o) * t["r"]).sum()
    return body, "%l", ref, ""


@case("hvp_attention_bias_param", dts=("f32", "f64"), fd=False)
def _(g):
    g.p("q", g.u((1, 2, 3, 4), -1, 1))
    g.p("k", g.u((1, 2, 4, 4), -1, 1))
    ok = g.p("b", masked_bias(g, (1, 2, 3, 4))).v != NEG_INF
    body = ("%y = attention(%q, %k, %k, %b, mask=bias)\n"
            "%l = reduce_sum(mul(%y, %y))")

    def ref(t):
        y = bias_attn(t, t["q"], t["k"], t["k"], ok)
        return (y * y).sum()
    return body, "%l", ref, ""


def prod_ref(x, dims):
    """x's product over dims as a chain of multiplications (torch then
    differentiates a polynomial: exact at zeros to every order)."""
    for d in sorted(dims, reverse=True):
        x = functools.reduce(torch.mul, x.unbind(d))
    return x


@case("hvp_prod_zeros", dts=("f32", "f64"))
def _(g):
    x = g.away0((5, 4), 0.5, 1.5)
    x[1, 0] = 0.0                   # one zero, first
    x[2, 2] = 0.0                   # one zero, inside
    x[3, 1] = x[3, 3] = 0.0         # two zeros
    x[4, :3] = 0.0                  # three zeros
    g.p("x", x)
    z = g.away0((3, 2, 3), 0.5, 1.5)
    z[1, 0, 2] = 0.0                # sets of 9 along axes 0 and 2:
    z[0, 1, 0] = z[2, 1, 1] = 0.0   # one zero, two zeros
    g.p("z", z)
    g.i("c", g.dt, g.u((5,), 0.5, 1.5))
    body = ("%p = reduce_prod(%x, axes=[1])\n"
            "%q = reduce_prod(%z, axes=[0, 2], keep_dims=true)\n"
            "%l = add(reduce_sum(mul(%p, %c)), reduce_sum(sin(%q)))")

    def ref(t):
        p = prod_ref(t["x"], (1,))
        return (p * t["c"]).sum() + torch.sin(prod_ref(t["z"], (0, 2))).sum()
    return body, "%l", ref, ""


@case("hvp_prod_issue", dts=("f32", "f64"))
def _(g):
    g.p("x", np.array([0.0, 3.0, 2.0]))
    g.p("y", np.array([0.0, 0.0, 2.0]))
    body = "%l = add(reduce_prod(%x), reduce_prod(%y))"
    return body, "%l", \
        lambda t: prod_ref(t["x"], (0,)) + prod_ref(t["y"], (0,)), ""


CELL = """graph cell_{dt} {{
  input %h: {dt}[3]
  input %w: {dt}[3, 3]
  input %x: {dt}[3]
  %hw = reshape(matmul(reshape(%h, shape=[1, 3]), %w), shape=[3])
  %n = tanh(add(%hw, %x))
  return %n
}}
"""


def _rnn(t, steps):
    h, hs = t["h0"], []
    for s in range(steps):
        h = torch.tanh(h @ t["w"] + t["xs"][s])
        hs.append(h)
    return h, torch.stack(hs)


def rnn_params(g, steps):
    g.p("h0", g.u((3,), -0.5, 0.5))
    g.p("w", g.u((3, 3), -0.8, 0.8))
    g.p("xs", g.u((steps, 3), -1, 1))


@case("hvp_rnn")
def _(g):
    rnn_params(g, 6)
    body = ("%h = scan(%h0, %w, %xs, body=@cell_{0}, num_bcast=1)\n"
            "%l = reduce_sum(mul(%h, %h))".format(g.dt))
    return body, "%l", lambda t: (_rnn(t, 6)[0] ** 2).sum(), \
        CELL.format(dt=g.dt)


# ---- control flow ----

@case("flow_scan_ckpt")
def _(g):
    rnn_params(g, 8)
    body = ("%h = scan(%h0, %w, %xs, body=@cell_{0}, num_bcast=1, "
            "checkpoints=3)\n%l = reduce_sum(sin(%h))".format(g.dt))
    return body, "%l", lambda t: torch.sin(_rnn(t, 8)[0]).sum(), \
        CELL.format(dt=g.dt)


@case("flow_scan_traj")
def _(g):
    rnn_params(g, 7)
    g.i("c", g.dt, g.u((7, 3)))
    body = ("%tr = scan(%h0, %w, %xs, body=@cell_{0}, num_bcast=1, "
            "save_trajectory=true, checkpoints=2)\n"
            "%l = reduce_sum(mul(mul(%tr, %tr), %c))".format(g.dt))
    return body, "%l", lambda t: (_rnn(t, 7)[1] ** 2 * t["c"]).sum(), \
        CELL.format(dt=g.dt)


WHILE_PRE = """graph wc_{dt} {{
  input %x: {dt}[3]
  input %w: {dt}[3]
  input %i: i32[]
  %k = lt(reduce_sum(mul(%x, %x)), 9.0)
  return %k
}}
graph wb_{dt} {{
  input %x: {dt}[3]
  input %w: {dt}[3]
  input %i: i32[]
  %n = add(mul(%x, %w), sin(%x))
  %v = mul(%w, 0.95)
  %j = add(%i, 1)
  return %n, %v, %j
}}
"""


def _while(t, cap):
    x, w, n = t["x"], t["w"], 0
    while n < cap and float((x * x).sum()) < 9.0:
        x, w, n = x * w + torch.sin(x), w * 0.95, n + 1
    return x


def while_case(name, cap):
    """x = x w + sin x, w = 0.95 w until |x|^2 >= 9 (5 trips here);
    an i32 counter carry; with cap, max_iterations=cap."""
    modes = ("grad", "jvp", "hvp") if cap else ("jvp",)

    @case(name, modes=modes)
    def _(g):
        g.p("x", g.u((3,), 0.05, 0.1))
        g.p("w", g.u((3,), 0.9, 1.1))
        g.i("i0", "i32", np.array(0))
        mi = ", max_iterations=%d" % cap if cap else ""
        if cap:
            body = ("%y = while(%x, %w, %i0, cond=@wc_{0}, body=@wb_{0}{1})\n"
                    "%l = reduce_sum(mul(%y, %y))".format(g.dt, mi))
            return body, "%l", lambda t: (_while(t, cap) ** 2).sum(), \
                WHILE_PRE.format(dt=g.dt)
        body = "%y = while(%x, %w, %i0, cond=@wc_{0}, body=@wb_{0})".format(
            g.dt)
        return body, "%y", lambda t: _while(t, 1 << 30), \
            WHILE_PRE.format(dt=g.dt)


while_case("flow_while", 12)
while_case("flow_while_nomax", None)

IF_PRE = """graph th_{dt} {{
  input %a: {dt}[3]
  input %b: {dt}[3]
  %y = mul(mul(%a, %b), %a)
  return %y
}}
graph el_{dt} {{
  input %a: {dt}[3]
  input %b: {dt}[3]
  %y = sin(sub(%a, %b))
  return %y
}}
"""


def if_case(name, then):
    @case(name)
    def _(g):
        s = 1.0 if then else -1.0
        g.p("a", s * g.u((3,), 0.3, 1.0))
        g.p("b", g.u((3,)))
        body = ("%q = gt(reduce_sum(%a), 0.0)\n"
                "%y = if(%q, %a, %b, then=@th_{0}, else=@el_{0})\n"
                "%l = reduce_sum(mul(%y, exp(%b)))".format(g.dt))

        def ref(t):
            a, b = t["a"], t["b"]
            y = a * b * a if float(a.sum()) > 0 else torch.sin(a - b)
            return (y * torch.exp(b)).sum()
        return body, "%l", ref, IF_PRE.format(dt=g.dt)


if_case("flow_if_then", True)
if_case("flow_if_else", False)

CUSTOM_PRE = """graph sq_{dt} {{ input %x: {dt}[4] %y = mul(%x, %x) return %y }}
graph sq_vjp_{dt} {{
  input %x: {dt}[4]
  input %primal_output: {dt}[4]
  input %d_output: {dt}[4]
  %g = mul(mul(%d_output, %x), 3.0)
  return %g
}}
graph sq_jvp_{dt} {{
  input %x: {dt}[4]
  input %tangent_0: {dt}[4]
  %t = mul(mul(%tangent_0, %x), 5.0)
  return %t
}}
graph cube_{dt} {{ input %x: {dt}[4] %y = mul(%x, mul(%x, %x)) return %y }}
graph cube_vjp_{dt} {{
  input %x: {dt}[4]
  input %primal_output: {dt}[4]
  input %d_output: {dt}[4]
  %g = mul(mul(%d_output, mul(%x, %x)), 4.0)
  return %g
}}
"""


class _Sq(torch.autograd.Function):
    """x*x with the graph's bodies: vjp 3x g, jvp 5x t (true: 2x)."""
    @staticmethod
    def forward(ctx, x):
        ctx.save_for_backward(x)
        ctx.save_for_forward(x)
        return x * x

    @staticmethod
    def backward(ctx, gr):
        (x,) = ctx.saved_tensors
        return 3 * x * gr

    @staticmethod
    def jvp(ctx, t):
        (x,) = ctx.saved_tensors
        return 5 * x * t


class _SqJ(_Sq):
    """x*x with only the jvp body (no vjp: reverse mode rejects it)."""
    @staticmethod
    def backward(ctx, gr):
        raise RuntimeError("no vjp body")


class _CubeV(torch.autograd.Function):
    """x^3 with a vjp body 4x^2 g (true: 3x^2) and no jvp body: forward
    mode differentiates fwd, 3x^2 t."""
    @staticmethod
    def forward(ctx, x):
        ctx.save_for_backward(x)
        ctx.save_for_forward(x)
        return x * x * x

    @staticmethod
    def backward(ctx, gr):
        (x,) = ctx.saved_tensors
        return 4 * x * x * gr

    @staticmethod
    def jvp(ctx, t):
        (x,) = ctx.saved_tensors
        return 3 * x * x * t


@case("hvp_fake_quant", fd=False, custom=True,
      skip={"hvp-sym": "STE and LSQ gradients are conventions, not "
            "gradients: H is not symmetric"})
def _(g):
    """Quantization-aware training: an LSQ-quantized first layer
    (per-channel learned scale, gradient scale) and a fake_quantize
    second layer (tanh STE): the HVP is forward over reverse through the
    STE rules and their backward ops, as rlxc builds it."""
    g.i("x", g.dt, g.u((6, 5)))
    g.p("w1", g.u((5, 4), -0.8, 0.8))
    g.p("s1", g.u((4,), 0.08, 0.12))
    g.p("w2", g.u((4, 3), -0.8, 0.8))
    g.i("tgt", g.dt, g.u((6, 3)))
    body = ("%q1 = fake_quantize_lsq(%w1, %s1, bits=4, axis=1, "
            "grad_scale=true)\n"
            "%h = tanh(matmul(%x, %q1))\n"
            "%q2 = fake_quantize(%w2, bits=3, axis=0, ste=tanh)\n"
            "%e = sub(matmul(%h, %q2), %tgt)\n"
            "%l = reduce_mean(mul(%e, %e))")

    def ref(t):
        q1 = _LSQ.apply(t["w1"], t["s1"], 4, 1, True)
        q2 = _FQ.apply(t["w2"], 3, 0, "tanh")
        e = torch.tanh(t["x"] @ q1) @ q2 - t["tgt"]
        return (e * e).mean()
    return body, "%l", ref, ""


INCONSISTENT = {"jvp-dot": "the custom_fn bodies are not each other's "
                "transpose", "hvp-sym": "the custom_fn bodies are not "
                "derivatives: H is not symmetric"}


@case("flow_custom_jvp", modes=("jvp",), fd=False, custom=True)
def _(g):
    g.p("x", g.u((4,), -1.5, 1.5))
    body = ("%a = custom_fn(%x, fwd=@sq_{0}, jvp=@sq_jvp_{0})\n"
            "%b = custom_fn(%x, fwd=@cube_{0}, vjp=@cube_vjp_{0})\n"
            "%c = custom_fn(%x, fwd=@cube_{0})\n"
            "%y = add(mul(%a, sin(%x)), add(%b, mul(%c, %c)))".format(g.dt))

    def ref(t):
        x = t["x"]
        return (_SqJ.apply(x) * torch.sin(x) + _CubeV.apply(x) +
                (x ** 3) ** 2)
    return body, "%y", ref, CUSTOM_PRE.format(dt=g.dt)


@case("flow_custom_hvp", fd=False, custom=True, skip=INCONSISTENT)
def _(g):
    g.p("x", g.u((4,), -1.5, 1.5))
    g.p("z", g.u((4,), -1, 1))
    body = ("%a = custom_fn(%x, fwd=@sq_{0}, vjp=@sq_vjp_{0}, "
            "jvp=@sq_jvp_{0})\n"
            "%b = custom_fn(mul(%x, %z), fwd=@cube_{0}, vjp=@cube_vjp_{0})\n"
            "%l = reduce_sum(add(mul(%a, sin(%z)), mul(%b, %x)))"
            .format(g.dt))

    def ref(t):
        x, z = t["x"], t["z"]
        return (_Sq.apply(x) * torch.sin(z) + _CubeV.apply(x * z) * x).sum()
    return body, "%l", ref, CUSTOM_PRE.format(dt=g.dt)


# ---- references ----

def fwd_over_rev(f, prim, vs, d):
    """(grads, H v) as rlxc builds ENTRY_hvp: the JVP of the gradient
    (the custom Functions' backward differentiated, their jvp for the
    forward values)."""
    with fwad.dual_level():
        xs = [fwad.make_dual(p.clone().requires_grad_(True), v)
              for p, v in zip(prim, vs)]
        gs = torch.autograd.grad(d * f(*xs), xs, create_graph=True)
        pt = [fwad.unpack_dual(gr) for gr in gs]
    return ([p.detach() for p, _ in pt],
            [(t if t is not None else torch.zeros_like(p)).detach()
             for p, t in pt])


# ---- generation ----

def generate(c, dt):
    cname, modes, fd, custom, skip, wrt = (c.name, c.modes, c.fd, c.custom,
                                           c.skip, c.wrt)
    name = "%s_%s" % (cname, dt)
    rng, g, body, ret, fn, pre = ag.start(c, dt)
    ag.write_case(CASES_DIR, name, ag.graph_text(
        name, g, body, ret, pre, "forward-mode check (tests/hvp/gen_hvp.py)"))
    ts = {t.name: ag.torch_of(t) for t in g.args}
    params = ([next(t for t in g.args if t.name == n) for n in wrt] if wrt
              else [t for t in g.args if t.kind == "param"])
    names = [p.name for p in params]
    prim = [ts[n].detach() for n in names]
    f = ag.closure(fn, ts, names)
    gdir = ag.golden_dir(GOLDEN_DIR, name)
    runs, flags = [], []
    with torch.no_grad():
        y = f(*prim)
    yv = L.out(dt, y.numpy(), "y")
    tans = ag.tangents(cname, params)
    vs = [torch.tensor(t.v) for t in tans]
    scalar = y.dim() == 0
    dout = L.T(dt, rng.uniform(0.5, 1.5) if scalar else
               rng.uniform(-1, 1, size=tuple(y.shape)), "d_output")
    d = torch.tensor(dout.v)
    grads = None
    if "grad" in modes or "hvp" in modes:
        xs = [p.clone().requires_grad_(True) for p in prim]
        grads = [gr if gr is not None else torch.zeros_like(p) for gr, p in
                 zip(torch.autograd.grad(f(*xs), xs, d, allow_unused=True),
                     prim)]
    if "grad" in modes:
        flags.append("--grad")
        ag.write_sub(gdir, "grad", g.args + [dout],
                     [yv] + [L.out(dt, gr.numpy(), "d_" + n)
                             for gr, n in zip(grads, names)])
        runs.append("run %s_grad grad --threads 1,2" % name)
    if fd and dt == "f64":  # ENTRY itself: finite differences
        ag.write_sub(gdir, "fwd", g.args, [yv])
        runs.append("run %s fwd --threads 1" % name + (
            " --fd --fd-max 64 --grad-entry %s_grad" % name
            if "grad" in modes else ""))
    if wrt:
        flags.append("--wrt=" + ",".join("%" + n for n in wrt))
    if "jvp" in modes:
        flags.append("--jvp=" + ",".join("%" + n for n in wrt) if wrt
                     else "--jvp")
        if custom:
            y2, ty = ag.fwd_jvp(f, prim, vs)
        else:
            y2, ty = torch.autograd.functional.jvp(f, tuple(prim), tuple(vs))
        assert torch.allclose(y2, y, rtol=1e-14, atol=0)
        ag.write_sub(gdir, "jvp", g.args + tans,
                     [yv, L.out(dt, ty.detach().numpy(), "tangent_y")])
        runs.append("run %s_jvp jvp --threads 1,2" % name)
    if "hvp" in modes:
        assert scalar
        flags.append("--hvp")
        if custom:
            g2, hv = fwd_over_rev(f, prim, vs, d)
            assert all(torch.allclose(a, b, rtol=1e-14, atol=1e-300)
                       for a, b in zip(g2, grads))
        else:
            _, hv = torch.autograd.functional.hvp(
                lambda *xs: d * f(*xs), tuple(prim), tuple(vs))
        gdot = sum(float((gr * v).sum()) for gr, v in zip(grads, vs))
        ag.write_sub(gdir, "hvp", g.args + [dout] + tans,
                     [yv] + [L.out(dt, gr.numpy(), "d_" + n)
                             for gr, n in zip(grads, names)] +
                     [L.out(dt, np.array(gdot), "grad_dot_tangent")] +
                     [L.out(dt, h.detach().numpy(), "hvp_" + n)
                      for h, n in zip(hv, names)])
        runs.append("run %s_hvp hvp --threads 1,2" % name)
    ag.write_run(gdir, "tests/hvp/gen_hvp.py",
                 [(k, "skip (%s)" % skip[k]) for k in sorted(skip)],
                 flags, runs)
    return name


def main(argv):
    names = ag.generate_all(REG, argv, generate, CASES_DIR, GOLDEN_DIR)
    print("wrote %d cases" % len(set(names)))


if __name__ == "__main__":
    main(sys.argv[1:])
