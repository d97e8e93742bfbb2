#!/usr/bin/python3
"""gen_gradcheck.py -- write the gradient-check suite and its goldens.

The suite loops over every op of ir/ops.def: each op that can carry a
gradient (not a pseudo op, not OPF_NO_GRAD) must have at least one case
here or be listed in SKIP with a reason, else this script fails (and so
does run_gradcheck.py at test time, which repeats the check without
torch). A new op therefore cannot silently skip the suite.

Every case is written twice:
  gc_NAME_f32  reverse mode in float32, compared with torch.autograd
               computed in float64 on the same (rounded) inputs, under
               |got-ref| <= 1e-4*|ref| + 1e-5*max(1, max|ref|)
               (the harness default for f32);
  gc_NAME_f64  the same graph in float64: the forward value and the
               gradients against torch (f64 tolerance 1e-9*|ref| +
               1e-11*max(1, max|ref|)) and a central finite-difference
               check of ENTRY_grad against ENTRY (rlx_run --fd, step
               1e-6, tolerance 1e-5*|fd| + 1e-7*max(1, max|fd|)).
Complex cases (c64 params) exist in one variant, gc_NAME_f32, against
torch.autograd on complex128 (the conjugate-Wirtinger convention);
run_gradcheck.py adds their finite differences (re and im perturbed
separately) and dot-product test in double.
Inputs avoid kinks (relu/abs away from 0, no ties for min/max, logs of
positive values, ...). Cases whose derivative is a convention rather
than a limit (straight-through round, ties, a custom vjp body that
differs from the true derivative) skip the finite-difference run; their
torch reference implements the convention explicitly.

Forward mode: every case also gets ENTRY_jvp goldens (rlxc --jvp, one
tangent per param, uniform in [-1, 1) from a generator seeded with the
CRC-32 of "NAME/jvp", rounded to the param's dtype): the outputs and
their tangents from torch.autograd.functional.jvp in float64 (complex
cases: torch.autograd.forward_ad). Where forward mode does not follow
the case's reference (a declared vjp, which forward mode ignores), the
case names its JVP reference (jvp_ref). run_gradcheck.py --jvp-ir adds
finite differences along the tangent and the dot-product test; a case
whose identity <w, J v> = <J^T w, v> holds only loosely or not at all
says so, with the reason, in a `# jvp-dot:` line of its run.txt.

Outputs: tests/gradcheck/cases/NAME.rlx, tests/gradcheck/golden/NAME/
(run.txt + grad/, fwd/ and jvp/ input and reference files) in the
format of tests/tools/e2e.py, which run_gradcheck.py reuses. The
machinery (registry, the builder G, tangents, torch's forward-mode
references, golden files, run.txt) is the AD harness's generator half,
tests/tools/adcheck/gen.py, shared with tests/hvp/gen_hvp.py; this
file holds the cases and what is the suite's own (coverage of
ir/ops.def, manifest.txt, skipped.txt, JVP tolerances). The
elementwise cases (u_OP, b_OP, activation_backward_OP) are one per row
of tests/tools/op_refs.py: torch function and sampling domain. The
cases of the op families with a module in tests/families/ (norm,
gnorm, rope, pool, conv, attention, fft) are that module's GRADCHECK
list, registered here after the other op cases.
Needs /usr/bin/python3 with numpy and torch; CI does not.
Usage: /usr/bin/python3 tests/gradcheck/gen_gradcheck.py [NAME...]
"""
import os
import sys

import numpy as np
import torch
import torch.nn.functional as F

HERE = os.path.dirname(os.path.abspath(__file__))
SRC = os.path.dirname(os.path.dirname(HERE))
sys.path.insert(0, os.path.join(SRC, "tests", "tools"))
import e2e_lib as L  # noqa: E402
from adcheck import gen as ag  # noqa: E402
from adcheck.check import needs_case, op_table  # noqa: E402
import op_refs as R  # noqa: E402  (the elementwise ops' facts)
sys.path.insert(0, os.path.join(SRC, "tests"))
import families  # noqa: E402

CASES_DIR = os.path.join(HERE, "cases")
GOLDEN_DIR = os.path.join(HERE, "golden")

# Ops outside reverse mode's scope (docs/autodiff.md): rlxc reports a
# diagnostic when a gradient would have to flow through them.
SKIP = {}
for _op in "quantize dequantize".split():
    SKIP[_op] = ("i8 carries no gradient: the straight-through rules never "
                 "see a cotangent")
SKIP["if"] = "removed by prepare_if before AD: see case ctl_if"
SKIP["while"] = "removed by prepare_while before AD: see case ctl_while"


REG = ag.Registry()  # options: ops covered, fd?, extra rlxc args,
#                      forward-mode options (fwd)


def case(name, ops=(), fd=True, rlxc=(), dts=("f32", "f64"), jvp_ref=None,
         dot=None, hvp_sym=None):
    """jvp_ref: the reference of the JVP goldens when it is not the
    case's own reference (a declared vjp that forward mode ignores);
    dot: (rtol, reason) to loosen the dot-product test of the f64
    variant, rtol None to skip it (run_gradcheck.py --jvp-ir);
    hvp_sym: reason to skip the HVP symmetry test alone (a gradient
    that is a convention, not the gradient of a function)."""
    return REG.case(name, dts, ops=tuple(ops) or (name,), fd=fd,
                    rlxc=list(rlxc), fwd={"jvp_ref": jvp_ref, "dot": dot,
                                          "sym": hvp_sym})


def family(mod):
    """The cases of a family module (tests/families/), in its order."""
    for name, options, fn in mod.GRADCHECK:
        case(name, **options)(fn)


def unary(op, fn, sample=None, fd=True):
    @case("u_" + op, ops=[op], fd=fd)
    def _(g):
        x = g.p("x", sample(g) if sample else g.u((3, 4)))
        return "%%y = %s(%%x)" % op, "%y", lambda t: fn(t["x"])


# sampling of u_OP by the row's dom (tests/tools/op_refs.py)
U_SAMPLE = {"real": None,
            "pos": lambda g: g.u((3, 4), 0.3, 3.0),
            "kink": lambda g: g.away0((3, 4)),
            "pole": lambda g: g.u((3, 4), -1.2, 1.2)}
for _op, _r in R.UNARY.items():
    if _op != "round":  # straight-through: its own case below
        unary(_op, R.torch_fn(_op), U_SAMPLE[_r.dom])


class _STE(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x):
        return torch.round(x)

    @staticmethod
    def backward(ctx, g):
        return g


# round: straight-through by definition (no finite differences)
unary("round", _STE.apply,
      lambda g: np.round(g.u((3, 4), -3, 3)) + g.u((3, 4), -0.3, 0.3),
      fd=False)


def binary(op, fn, sa=None, sb=None):
    @case("b_" + op, ops=[op])
    def _(g):
        b = sb(g) if sb else g.u((4,))
        a = sa(g, b) if sa else g.u((3, 4))
        g.p("a", a)
        g.p("b", b)
        return "%%y = %s(%%a, %%b)" % op, "%y", lambda t: fn(t["a"], t["b"])


# samplers (sa, sb) of b_OP by the row's dom (tests/tools/op_refs.py)
B_SAMPLE = {None: (None, None),
            "nonzero": (None, lambda g: g.away0((4,), 0.5)),
            "ties": (lambda g, b: b + g.away0((3, 4), 0.2, 1), None),
            "posbase": (lambda g, b: g.u((3, 4), 0.5, 2.0),
                        lambda g: g.u((4,), -1.5, 1.5))}
for _op, _r in R.BINARY.items():
    binary(_op, R.torch_fn(_op), *B_SAMPLE[_r.dom])


@case("where", ops=["where"])
def _(g):
    g.i("c", "bool", g.rng.uniform(size=(3, 4)) < 0.5)
    g.p("a", g.u((3, 4)))
    g.p("b", g.u((3, 1)))
    return ("%y = where(%c, %a, %b)", "%y",
            lambda t: torch.where(t["c"], t["a"], t["b"]))


# the f64 variant rounds through f32: finite differences see the rounding,
# and the tangent and the cotangent are rounded too (dot product to f32)
@case("cast", ops=["cast"], fd=False,
      dot=(1e-6, "tangent and cotangent rounded through f32"))
def _(g):
    g.p("x", g.u((3, 4)))
    other = "f64" if g.dt == "f32" else "f32"
    body = ("%%c = cast(%%x, to=%s)\n%%y = mul(cast(%%c, to=%s), %%x)"
            % (other, g.dt))
    prec = torch.float32 if g.dt == "f64" else torch.float64
    return body, "%y", lambda t: t["x"].to(prec).to(torch.float64) * t["x"]


# stop_gradient changes the derivative on purpose: no finite differences
@case("stop_gradient", ops=["stop_gradient"], fd=False)
def _(g):
    g.p("x", g.u((3, 4)))
    return ("%s = mul(%x, %x)\n%y = add(%s, mul(stop_gradient(%s), %x))",
            "%y", lambda t: t["x"] ** 2 + (t["x"] ** 2).detach() * t["x"])


@case("matmul", ops=["matmul"])
def _(g):
    g.p("a", g.u((2, 3, 4)))
    g.p("b", g.u((4, 5)))
    return "%y = matmul(%a, %b)", "%y", lambda t: t["a"] @ t["b"]


@case("matmul_bcast", ops=["matmul"])
def _(g):
    g.p("a", g.u((1, 3, 4)))
    g.p("b", g.u((2, 1, 4, 5)))
    return "%y = matmul(%a, %b)", "%y", lambda t: t["a"] @ t["b"]


@case("dense_solve", ops=["dense_solve"])
def _(g):
    g.p("a", np.eye(3) * 3 + g.u((3, 3), -1, 1))
    g.p("b", g.u((3, 2)))
    return ("%y = dense_solve(%a, %b)", "%y",
            lambda t: torch.linalg.solve(t["a"], t["b"]))


@case("dense_solve_vec", ops=["dense_solve"])
def _(g):
    g.p("a", np.eye(3) * 3 + g.u((3, 3), -1, 1))
    g.p("b", g.u((3,)))
    return ("%y = dense_solve(%a, %b)", "%y",
            lambda t: torch.linalg.solve(t["a"], t["b"]))


@case("batched_dense_solve", ops=["batched_dense_solve"])
def _(g):
    g.p("a", np.eye(3) * 3 + g.u((2, 3, 3), -1, 1))
    g.p("b", g.u((2, 3)))
    return ("%y = batched_dense_solve(%a, %b)", "%y",
            lambda t: torch.linalg.solve(t["a"], t["b"]))


# ---- mixture of experts and dequant_matmul (bilinear; ids and i8 fixed)

def _route(g, t, n_exp, empty):
    """Expert ids in [0, n_exp), uneven, none equal to `empty`."""
    ids = [j for j in range(n_exp) if j != empty]
    return g.rng.choice(ids, size=t, p=np.linspace(2, 1, len(ids)) /
                        np.linspace(2, 1, len(ids)).sum())


@case("grouped_matmul", ops=["grouped_matmul"])
def _(g):
    g.p("x", g.u((7, 3)))
    g.p("w", g.u((4, 3, 5)))
    g.i("e", "i32", _route(g, 7, 4, 2))
    return ("%y = grouped_matmul(%x, %w, %e)", "%y",
            lambda t: torch.einsum("tk,tkn->tn", t["x"],
                                   t["w"][t["e"].long()]))


@case("grouped_matmul_backward_weight",
      ops=["grouped_matmul_backward_weight"])
def _(g):
    g.p("x", g.u((7, 3)))
    g.p("dy", g.u((7, 5)))
    g.i("e", "i64", _route(g, 7, 4, 1))
    return ("%y = grouped_matmul_backward_weight(%x, %dy, %e, "
            "shape=[4, 3, 5])", "%y",
            lambda t: torch.zeros(4, 3, 5, dtype=torch.float64).index_add(
                0, t["e"].long(), torch.einsum("tk,tn->tkn", t["x"],
                                               t["dy"])))


def _dq_ref(t, group):
    s = t["s"] if group is None else \
        torch.repeat_interleave(t["s"], group, dim=0)
    return t["x"] @ (t["w"].to(torch.float64) * s)


@case("dequant_matmul", ops=["dequant_matmul"])
def _(g):
    g.p("x", g.u((2, 3, 6)))
    g.i("w", "i8", g.rng.integers(-128, 128, (6, 5)))
    g.p("s", g.u((5,), 0.005, 0.02))
    return ("%y = dequant_matmul(%x, %w, %s)", "%y",
            lambda t: _dq_ref(t, None))


@case("dequant_matmul_group", ops=["dequant_matmul"])
def _(g):
    g.p("x", g.u((4, 6)))
    g.i("w", "i8", g.rng.integers(-128, 128, (6, 5)))
    g.p("s", g.u((3, 5), 0.005, 0.02))
    return ("%y = dequant_matmul(%x, %w, %s, group_size=2)", "%y",
            lambda t: _dq_ref(t, 2))


@case("reduce_sum", ops=["reduce_sum"])
def _(g):
    g.p("x", g.u((2, 3, 4)))
    return ("%y = reduce_sum(%x, axes=[0, 2])", "%y",
            lambda t: t["x"].sum(dim=(0, 2)))


@case("reduce_mean", ops=["reduce_mean"])
def _(g):
    g.p("x", g.u((2, 3, 4)))
    return ("%y = reduce_mean(%x, axes=[-1, 0], keep_dims=true)", "%y",
            lambda t: t["x"].mean(dim=(0, 2), keepdim=True))


@case("reduce_max", ops=["reduce_max"])
def _(g):
    g.p("x", g.distinct((2, 3, 4)))
    return ("%y = reduce_max(%x, axes=[0, 2])", "%y",
            lambda t: t["x"].amax(dim=(0, 2)))


@case("reduce_min", ops=["reduce_min"])
def _(g):
    g.p("x", g.distinct((2, 3, 4)))
    return ("%y = reduce_min(%x, axes=[1])", "%y",
            lambda t: t["x"].amin(dim=1))


@case("reduce_max_all", ops=["reduce_max"])
def _(g):
    g.p("x", g.distinct((3, 4)))
    return "%y = reduce_max(%x)", "%y", lambda t: t["x"].amax()


def _tie_ref(x, red, dims):
    """Every element equal to the result receives the full gradient."""
    yk = red(x.detach(), dims, True)
    mask = (x.detach() == yk).to(x.dtype)
    return red(x.detach(), dims, False) + (x * mask).sum(dim=dims) - \
        (x.detach() * mask).sum(dim=dims)


@case("reduce_max_ties", ops=["reduce_max"], fd=False)
def _(g):
    x = np.round(g.u((2, 3, 4), -2, 2))  # integers: many ties
    x[:, 1, :] = 1.0                      # a set that is all ties
    g.p("x", x)
    return ("%y = reduce_max(%x, axes=[0, 2])", "%y",
            lambda t: _tie_ref(t["x"], lambda v, d, k: v.amax(dim=d, keepdim=k),
                               (0, 2)))


@case("reduce_min_ties", ops=["reduce_min"], fd=False)
def _(g):
    x = np.round(g.u((3, 4), -2, 2))
    x[0, :] = -3.0
    g.p("x", x)
    return ("%y = reduce_min(%x, axes=[1])", "%y",
            lambda t: _tie_ref(t["x"], lambda v, d, k: v.amin(dim=d, keepdim=k),
                               (1,)))


@case("reduce_prod", ops=["reduce_prod"])
def _(g):
    g.p("x", g.away0((2, 3, 4), 0.5, 1.5))
    return ("%y = reduce_prod(%x, axes=[0, 2])", "%y",
            lambda t: t["x"].prod(dim=2).prod(dim=0))


@case("reduce_prod_zeros", ops=["reduce_prod"])
def _(g):
    x = g.away0((4, 3), 0.5, 1.5)
    x[1, 0] = 0.0               # one zero in column 0
    x[0, 2] = x[3, 2] = 0.0     # two zeros in column 2
    g.p("x", x)
    return ("%y = reduce_prod(%x, axes=[0])", "%y",
            lambda t: t["x"].prod(dim=0))


@case("softmax", ops=["softmax"])
def _(g):
    g.p("x", g.u((3, 4)))
    return ("%y = softmax(%x, axis=0)", "%y",
            lambda t: torch.softmax(t["x"], dim=0))


@case("log_softmax", ops=["log_softmax"])
def _(g):
    g.p("x", g.u((3, 4)))
    return ("%y = log_softmax(%x)", "%y",
            lambda t: torch.log_softmax(t["x"], dim=-1))


@case("cumsum", ops=["cumsum"])
def _(g):
    g.p("x", g.u((3, 4)))
    return ("%y = cumsum(%x, axis=0)", "%y",
            lambda t: torch.cumsum(t["x"], dim=0))


@case("cumsum_excl", ops=["cumsum"])
def _(g):
    g.p("x", g.u((3, 4)))
    return ("%y = cumsum(%x, exclusive=true)", "%y",
            lambda t: torch.cumsum(t["x"], dim=1) - t["x"])


@case("softmax_cross_entropy", ops=["softmax_cross_entropy"])
def _(g):
    g.p("l", g.u((4, 5)))
    g.i("lab", "i32", g.rng.integers(0, 5, size=(4,)))
    return ("%y = softmax_cross_entropy(%l, %lab)", "%y",
            lambda t: F.cross_entropy(t["l"], t["lab"], reduction="none"))


@case("reshape", ops=["reshape"])
def _(g):
    g.p("x", g.u((3, 4)))
    return ("%y = mul(reshape(%x, shape=[2, -1]), reshape(%x, shape=[2, 6]))",
            "%y", lambda t: t["x"].reshape(2, 6) ** 2)


@case("transpose", ops=["transpose"])
def _(g):
    g.p("x", g.u((2, 3, 4)))
    return ("%y = transpose(%x, perm=[2, 0, 1])", "%y",
            lambda t: t["x"].permute(2, 0, 1))


@case("expand", ops=["expand"])
def _(g):
    g.p("x", g.u((3, 1)))
    return ("%y = expand(%x, shape=[2, 3, 4])", "%y",
            lambda t: t["x"].expand(2, 3, 4))


@case("concat", ops=["concat"])
def _(g):
    g.p("a", g.u((2, 3)))
    g.p("b", g.u((2, 2)))
    return ("%y = concat(%a, %b, %a, axis=-1)", "%y",
            lambda t: torch.cat([t["a"], t["b"], t["a"]], dim=1))


@case("narrow", ops=["narrow"])
def _(g):
    g.p("x", g.u((5, 4)))
    return ("%y = mul(narrow(%x, axis=0, start=1, len=3), "
            "narrow(%x, axis=0, start=2, len=3))", "%y",
            lambda t: t["x"][1:4] * t["x"][2:5])


@case("gather", ops=["gather"])
def _(g):
    g.p("t", g.u((5, 3)))
    g.i("idx", "i32", np.array([[0, 2, 2], [4, 0, 1]]))
    return ("%y = gather(%t, %idx, axis=0)", "%y",
            lambda t: t["t"][t["idx"]])


@case("gather_axis1", ops=["gather"])
def _(g):
    g.p("t", g.u((2, 5, 3)))
    g.i("idx", "i64", np.array([3, 3, 0, 4]))
    return ("%y = gather(%t, %idx, axis=1)", "%y",
            lambda t: t["t"][:, t["idx"], :])


@case("scatter_add", ops=["scatter_add"])
def _(g):
    g.p("u", g.u((4, 3)))
    g.i("idx", "i32", np.array([1, 3, 1, 0]))
    return ("%y = scatter_add(%u, %idx, shape=[5, 3])", "%y",
            lambda t: torch.zeros(5, 3, dtype=torch.float64)
            .index_add(0, t["idx"], t["u"]))


# ---- backward ops (second order) ----

@case("relu_backward", ops=["relu_backward"])
def _(g):
    g.p("x", g.away0((3, 4)))
    g.p("dy", g.u((3, 4)))
    return ("%y = relu_backward(%x, %dy)", "%y",
            lambda t: t["dy"] * (t["x"] > 0))


def _dact(fn, x):
    """f'(x), differentiable again (create_graph)."""
    xx = x if x.requires_grad else x.detach().requires_grad_(True)
    (d,) = torch.autograd.grad(fn(xx).sum(), xx, create_graph=True)
    return d


ACT = {k: R.torch_fn(k) for k in R.ACT_KINDS}


def act_bwd_case(kind):
    """activation_backward w.r.t. both operands (second order). abs'
    is sign(x) with a zero derivative (torch's double backward of abs is
    not, so its reference is written with sign directly)."""
    @case("activation_backward_" + kind, ops=["activation_backward"])
    def _(g):
        dom = R.UNARY[kind].dom
        g.p("x", g.u((3, 4), 0.3, 2.0) if dom == "pos" else
            g.away0((3, 4), 0.2, 1.2) if dom == "kink" else
            g.u((3, 4), -1.2, 1.2))
        g.p("dy", g.u((3, 4)))
        return ("%%y = activation_backward(%%x, %%dy, kind=%s)" % kind, "%y",
                lambda t: t["dy"] * (torch.sign(t["x"]) if kind == "abs"
                                     else _dact(ACT[kind], t["x"])))


for _k in sorted(ACT):
    act_bwd_case(_k)


# ---- fake quantization (ops-detail.md "Quantization") ----

def _fq_q(bits):
    return 2.0 ** (bits - 1) - 1


def _fq_other(x, axis):
    return [i for i in range(x.dim()) if axis is None or i != axis % x.dim()]


def _fq_range(x, bits, axis):
    """Q S = max(max|x|, Q 1e-12) per tensor or per channel (keepdim),
    differentiable through the max (S = max(max|x| / Q, 1e-12))."""
    m = x.abs().amax(dim=_fq_other(x, axis), keepdim=True)
    return torch.clamp(m, min=_fq_q(bits) * 1e-12)


def _fq_scale(x, bits, axis):
    return _fq_range(x, bits, axis) / _fq_q(bits)


def _fq_mask(x, bits, axis, ste):
    """dx / dy of each STE kind (torch ops: its derivatives are exact)."""
    r, q = _fq_range(x, bits, axis), _fq_q(bits)
    if ste == "identity":
        return torch.ones_like(x)
    if ste == "clipped":
        return (x.abs() <= r).to(x.dtype)
    if ste == "tanh":
        return 1 - torch.tanh(x / (r / q)) ** 2
    return torch.clamp(1 - (x / r).abs(), min=0)


def _fq_grid(x, s, q):
    return torch.clamp(torch.round(x / s), -q, q) * s


class _FQ(torch.autograd.Function):
    """fake_quantize with its STE backward."""
    @staticmethod
    def forward(ctx, x, bits, axis, ste):
        ctx.save_for_backward(x)
        ctx.save_for_forward(x)
        ctx.a = (bits, axis, ste)
        return _fq_grid(x, _fq_scale(x, bits, axis), _fq_q(bits))

    @staticmethod
    def backward(ctx, gr):
        (x,) = ctx.saved_tensors
        return gr * _fq_mask(x, *ctx.a), None, None, None

    @staticmethod
    def jvp(ctx, tx, *_):
        """true forward mode (tests/hvp): the STE map on the tangent"""
        (x,) = ctx.saved_tensors
        return tx * _fq_mask(x, *ctx.a)


def _lsq_lay(s, x, axis):
    shape = [1] * x.dim()
    if axis is not None:
        shape[axis % x.dim()] = x.shape[axis % x.dim()]
    return torch.clamp(s.reshape(shape), min=1e-12)


def _lsq_bwd(x, s, dy, bits, axis, gs, wrt):
    """LSQ (Esser et al. 2020): dx = dy inside |x/S| <= Q; ds = Σ ψ dy
    with ψ = round(z) - z inside, ±Q outside, times 1/sqrt(N Q)."""
    q, S = _fq_q(bits), _lsq_lay(s, x, axis)
    z = x / S
    inside = z.abs() <= q
    if wrt == "x":
        return torch.where(inside, dy, torch.zeros_like(dy))
    psi = torch.clamp(torch.round(z), -q, q).detach() - torch.where(
        inside, z, torch.zeros_like(z))
    if gs:
        psi = psi / np.sqrt(x.numel() / S.numel() * q)
    return (psi * dy).sum(dim=_fq_other(x, axis)).reshape(s.shape)


class _LSQ(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x, s, bits, axis, gs):
        ctx.save_for_backward(x, s)
        ctx.save_for_forward(x, s)
        ctx.a = (bits, axis, gs)
        return _fq_grid(x, _lsq_lay(s, x, axis), _fq_q(bits))

    @staticmethod
    def backward(ctx, gr):
        x, s = ctx.saved_tensors
        return (_lsq_bwd(x, s, gr, *ctx.a, "x"), _lsq_bwd(x, s, gr, *ctx.a, "s"),
                None, None, None)

    @staticmethod
    def jvp(ctx, tx, ts, *_):
        """true forward mode (tests/hvp): the transpose of backward"""
        x, s = ctx.saved_tensors
        bits, axis, gs = ctx.a
        q, S = _fq_q(bits), _lsq_lay(s, x, axis)
        z = x / S
        inside = z.abs() <= q
        psi = torch.clamp(torch.round(z), -q, q) - torch.where(
            inside, z, torch.zeros_like(z))
        if gs:
            psi = psi / np.sqrt(x.numel() / S.numel() * q)
        return (torch.where(inside, tx, torch.zeros_like(tx)) +
                psi * ts.reshape(S.shape))


def _fq_attrs(bits, axis, extra=""):
    a = ["bits=%d" % bits] + (["axis=%d" % axis] if axis is not None else [])
    return ", ".join(a + ([extra] if extra else []))


def fq_case(name, ste, bits, axis, shape, anchor=False):
    """fake_quantize with an STE (no finite differences: the STE is a
    convention). anchor: an input row of 3.0 concatenated on axis 0
    holds the max, so S does not depend on x (the tanh and hardtanh
    gradients then are true gradients of a function of x: the HVP is
    symmetric)."""
    @case("fq_" + name, ops=["fake_quantize"], fd=False)
    def _(g):
        g.p("x", g.away0(shape, 0.05, 2.0))
        v, ref = "%x", lambda t: t["x"]
        if anchor:
            g.i("c", g.dt, np.full((1,) + shape[1:], 3.0))
            v = "concat(%x, %c, axis=0)"
            ref = lambda t: torch.cat([t["x"], t["c"]], 0)  # noqa: E731
        return ("%%y = fake_quantize(%s, %s)" % (
            v, _fq_attrs(bits, axis, "ste=" + ste)), "%y",
            lambda t: _FQ.apply(ref(t), bits, axis, ste))


fq_case("identity", "identity", 4, None, (3, 4))
fq_case("clipped_axis1", "clipped", 3, 1, (2, 3, 4))
fq_case("tanh_axis_neg", "tanh", 8, -1, (3, 4), anchor=True)
fq_case("hardtanh", "hardtanh", 5, None, (3, 4), anchor=True)


LSQ_SYM = "LSQ's ds is a convention, not a derivative: no symmetric Hessian"


def lsq_case(name, bits, axis, gs, shape, sshape, smag):
    @case("lsq_" + name, ops=["fake_quantize_lsq"], fd=False,
          hvp_sym=LSQ_SYM)
    def _(g):
        g.p("x", g.u(shape, -2.5, 2.5))
        g.p("s", g.u(sshape, 0.8, 1.2) * smag)
        return ("%%y = fake_quantize_lsq(%%x, %%s, %s)" % _fq_attrs(
            bits, axis, "grad_scale=true" if gs else ""), "%y",
            lambda t: _LSQ.apply(t["x"], t["s"], bits, axis, gs))


lsq_case("tensor", 3, None, False, (3, 4), (), 0.6)
lsq_case("tensor_gs", 4, None, True, (3, 4), (1,), 0.3)
lsq_case("axis1_gs", 3, 1, True, (2, 3, 4), (3,), 0.6)
lsq_case("axis_neg", 8, -1, False, (3, 4), (4,), 0.015)


def fqb_case(name, ste, bits, axis, shape):
    """fake_quantize_backward w.r.t. x and dy (second order): exact,
    through S = max|x| / Q (inputs avoid ties and x = 0)."""
    @case("fqb_" + name, ops=["fake_quantize_backward"])
    def _(g):
        g.p("x", g.away0(shape, 0.1, 2.0))
        g.p("dy", g.u(shape))
        return ("%%y = fake_quantize_backward(%%x, %%dy, %s)" % _fq_attrs(
            bits, axis, "ste=" + ste), "%y",
            lambda t: t["dy"] * _fq_mask(t["x"], bits, axis, ste))


fqb_case("identity", "identity", 4, None, (3, 4))
fqb_case("clipped", "clipped", 3, 1, (2, 3, 4))
fqb_case("tanh", "tanh", 3, 0, (3, 4))
fqb_case("hardtanh", "hardtanh", 5, None, (3, 4))
fqb_case("hardtanh_axis", "hardtanh", 2, -1, (3, 4))


def lsqb_case(name, wrt, bits, axis, gs, shape, sshape, smag):
    """lsq backward ops w.r.t. x, scale and dy: piecewise constant in x
    and s for dx; ds exact inside each rounding step."""
    op = "fake_quantize_lsq_backward_" + ("x" if wrt == "x" else "scale")
    @case("lsqb_" + name, ops=[op])
    def _(g):
        g.p("x", g.u(shape, -2.5, 2.5))
        g.p("s", g.u(sshape, 0.8, 1.2) * smag)
        g.p("dy", g.u(shape))
        return ("%%y = %s(%%x, %%s, %%dy, %s)" % (op, _fq_attrs(
            bits, axis, "grad_scale=true" if gs else "")), "%y",
            lambda t: _lsq_bwd(t["x"], t["s"], t["dy"], bits, axis, gs, wrt))


lsqb_case("x", "x", 3, 1, False, (2, 3, 4), (3,), 0.6)
lsqb_case("scale", "s", 3, None, False, (3, 4), (), 0.6)
lsqb_case("scale_axis_gs", "s", 4, 0, True, (3, 4), (3,), 0.3)


@case("cumsum_backward", ops=["cumsum_backward"])
def _(g):
    g.p("dy", g.u((3, 4)))
    return ("%y = cumsum_backward(%dy, axis=0)", "%y",
            lambda t: torch.flip(torch.cumsum(torch.flip(t["dy"], [0]), 0),
                                 [0]))


@case("gather_backward", ops=["gather_backward"])
def _(g):
    g.p("dy", g.u((4, 3)))
    g.i("idx", "i32", np.array([1, 3, 1, 0]))
    return ("%y = gather_backward(%dy, %idx, axis=0, shape=[5, 3])", "%y",
            lambda t: torch.zeros(5, 3, dtype=torch.float64)
            .index_add(0, t["idx"], t["dy"]))


@case("softmax_cross_entropy_backward",
      ops=["softmax_cross_entropy_backward"])
def _(g):
    g.p("l", g.u((4, 5)))
    g.i("lab", "i32", g.rng.integers(0, 5, size=(4,)))
    g.p("d", g.u((4,)))
    return ("%y = softmax_cross_entropy_backward(%l, %lab, %d)", "%y",
            lambda t: (torch.softmax(t["l"], 1) -
                       F.one_hot(t["lab"], 5).to(torch.float64)) *
            t["d"][:, None])


# ---- fused sequence blocks (differentiated through expand_fused) ----

import e2e_cases_seq as SEQ  # noqa: E402

# (suffix, b, s, h, n): s = 1, state sizes 1, 2 and 64
SSM_GC_FORMS = [("", 2, 3, 3, 2), ("_s1", 1, 1, 2, 1), ("_n64", 1, 2, 2, 64)]
GDN_GC_FORMS = [("", 2, 3, 2, 2), ("_s1", 1, 1, 1, 1), ("_n64", 1, 2, 1, 64)]


def ssm_case(sfx, b, s, h, n):
    @case("selective_scan" + sfx, ops=["selective_scan"])
    def _(g):
        for nm, v in zip("x d a b c".split(), SEQ.ssm_values(g.rng, b, s, h,
                                                               n)):
            g.p(nm, v)
        return ("%%y = selective_scan(%%x, %%d, %%a, %%b, %%c, "
                "state_size=%d)" % n, "%y",
                lambda t: SEQ.selective_scan_ref(
                    *[t[k] for k in "x d a b c".split()]))


def gdn_case(sfx, b, s, h, n):
    @case("gated_delta_net" + sfx, ops=["gated_delta_net"])
    def _(g):
        for nm, v in zip("q k v g beta".split(), SEQ.gdn_values(g.rng, b, s,
                                                                  h, n)):
            g.p(nm, v)
        return ("%%y = gated_delta_net(%%q, %%k, %%v, %%g, %%beta, "
                "state_size=%d)" % n, "%y",
                lambda t: SEQ.gated_delta_net_ref(
                    *[t[k] for k in "q k v g beta".split()]))


for _f in SSM_GC_FORMS:
    ssm_case(*_f)
for _f in GDN_GC_FORMS:
    gdn_case(*_f)


def tl_case(sfx, b, s, heads, hd, inter, act):
    @case("fused_transformer_layer" + sfx, ops=["fused_transformer_layer"])
    def _(g):
        vals, m = SEQ.transformer_values(g.rng, b, s, heads * hd, inter)
        for nm, v in zip(SEQ.TL_NAMES, vals):
            g.p(nm + "0", v)
        g.i("mask0", g.dt, m)
        return ("%%y = %s" % SEQ._tl_call(0, heads, hd, inter, act), "%y",
                lambda t: SEQ.transformer_ref(
                    {k: t[k + "0"] for k in SEQ.TL_NAMES[:-1]}, m, heads,
                    act))


tl_case("", 2, 3, 2, 2, 6, "gelu")
tl_case("_silu", 1, 2, 1, 3, 4, "silu")


# ---- complex (conjugate-Wirtinger convention, as torch) ----

def cplx(g, shape):
    return g.u(shape, -1, 1) + 1j * g.u(shape, -1, 1)


@case("c64_mul_matmul", ops=["matmul", "mul"], dts=("f32",))
def _(g):
    g.dt = "c64"
    g.p("a", cplx(g, (2, 3)))
    g.p("b", cplx(g, (3,)))
    g.p("c", cplx(g, (2, 3, 2)))
    return ("%y = matmul(mul(%a, %b), %c)", "%y",
            lambda t: torch.matmul(t["a"] * t["b"], t["c"]))


@case("c64_div_sub", ops=["div", "sub", "add"], dts=("f32",))
def _(g):
    g.dt = "c64"
    g.p("a", cplx(g, (3, 2)))
    g.p("b", cplx(g, (2,)) * 2 + 2)
    return ("%y = add(div(%a, %b), sub(%b, %a))", "%y",
            lambda t: t["a"] / t["b"] + (t["b"] - t["a"]))


@case("c64_real_imag_complex", ops=["real", "imag", "complex"],
      dts=("f32",))
def _(g):
    g.args.append(L.T("c64", cplx(g, (2, 3)), "z", "param"))
    g.p("r", g.u((2, 3)))
    g.p("i", g.u((3,)))
    return ("%w = mul(%z, complex(%r, %i))\n"
            "%y = add(mul(real(%w), imag(%w)), mul(real(%z), %r))", "%y",
            lambda t: (lambda w: w.real * w.imag + t["z"].real * t["r"])(
                t["z"] * torch.complex(t["r"], t["i"].expand(2, 3))))


@case("c64_reductions", ops=["reduce_prod", "reduce_mean", "cumsum"],
      dts=("f32",))
def _(g):
    """c64 reductions: reduce_prod's gradient uses the conjugate of its
    partials (g conj(prod / z)), as torch."""
    g.args.append(L.T("c64", cplx(g, (2, 3)), "z", "param"))
    return ("%y = add(reduce_prod(%z, axes=[1], keep_dims=true),\n"
            "         add(cumsum(%z, axis=1), reduce_mean(%z, axes=[0])))",
            "%y", lambda t: torch.prod(t["z"], 1, keepdim=True) +
            (torch.cumsum(t["z"], 1) + t["z"].mean(0)))


@case("c64_conjugate_norm_sq", ops=["conjugate", "complex_norm_sq"],
      dts=("f32",))
def _(g):
    g.args.append(L.T("c64", cplx(g, (2, 3)), "z", "param"))
    g.args.append(L.T("c64", cplx(g, (3,)), "b", "param"))
    return ("%y = complex_norm_sq(mul(conjugate(%z), %b))", "%y",
            lambda t: (torch.conj(t["z"]) * t["b"]).abs() ** 2)


@case("c64_norm_sq_backward", ops=["complex_norm_sq_backward"],
      dts=("f32",))
def _(g):
    """complex_norm_sq_backward(z, s) = s z, with s real."""
    g.args.append(L.T("c64", cplx(g, (2, 3)), "z", "param"))
    g.p("s", g.u((2, 3)))
    return ("%y = mul(complex_norm_sq_backward(%z, %s), %z)", "%y",
            lambda t: t["s"] * t["z"] * t["z"])


# ---- log_mel (log(max(spec filters, 1e-10)); floor: zero gradient) ----


def _log_mel(s, f):
    return torch.log(torch.clamp(s @ f, min=1e-10))


@case("log_mel", ops=["log_mel"])
def _(g):
    g.p("s", g.u((2, 3, 5), 0.1, 2.0))
    g.p("f", g.u((5, 4), 0.0, 1.0))
    return "%y = log_mel(%s, %f)", "%y", lambda t: _log_mel(t["s"], t["f"])


@case("log_mel_floor", ops=["log_mel"])
def _(g):
    f = g.u((5, 4), 0.0, 1.0)
    f[:, 2] = 0.0  # that mel bin sits on the floor: zero gradient
    g.p("s", g.u((3, 5), 0.1, 2.0))
    g.i("f", g.dt, f)
    return "%y = log_mel(%s, %f)", "%y", lambda t: _log_mel(t["s"], t["f"])


@case("log_mel_backward", ops=["log_mel_backward"])
def _(g):
    g.p("s", g.u((2, 3, 5), 0.1, 2.0))
    g.p("f", g.u((5, 4), 0.0, 1.0))
    g.p("dy", g.u((2, 3, 4)))

    def ref(t):
        z = t["s"] @ t["f"]
        gz = torch.where(z >= 1e-10, t["dy"] / z, torch.zeros_like(z))
        return gz @ t["f"].T
    return "%y = log_mel_backward(%s, %f, %dy)", "%y", ref


# ---- the op families with a module of their own (tests/families/) ----

for _m in families.modules():
    family(_m)


# ---- whole graphs ----

@case("mlp", ops=[])
def _(g):
    g.i("x", g.dt, g.u((8, 6)))
    g.p("w1", g.u((6, 5), -0.7, 0.7))
    g.p("b1", g.u((5,), -0.5, 0.5))
    g.p("w2", g.u((5, 3), -0.7, 0.7))
    g.p("b2", g.u((3,), -0.5, 0.5))
    g.i("lab", "i32", g.rng.integers(0, 3, size=(8,)))
    body = ("%h = tanh(add(matmul(%x, %w1), %b1))\n"
            "%z = add(matmul(%h, %w2), %b2)\n"
            "%loss = reduce_mean(softmax_cross_entropy(%z, %lab), axes=[0])")

    def ref(t):
        h = torch.tanh(t["x"] @ t["w1"] + t["b1"])
        return F.cross_entropy(h @ t["w2"] + t["b2"], t["lab"])
    return body, "%loss", ref


RNN_CELL = """graph cell_{dt} {{
  input %h: {dt}[3]
  input %w: {dt}[3, 3]
  input %x: {dt}[3]
  %hw = reshape(matmul(reshape(%h, shape=[1, 3]), %w), shape=[3])
  %n = tanh(add(%hw, %x))
  return %n
}}
"""


def _rnn(t, steps, rev=False):
    """Steps 0 ... L-1 (L-1 ... 0 with rev); row s = carry after s."""
    h, hs = t["h0"], [None] * steps
    for s in (reversed(range(steps)) if rev else range(steps)):
        h = torch.tanh(h @ t["w"] + t["xs"][s])
        hs[s] = h
    return h, torch.stack(hs)


def rnn_case(name, attrs, traj, steps=7):
    rev = "reverse=true" in attrs

    @case(name, ops=["scan"])
    def _(g):
        g.p("h0", g.u((3,), -0.5, 0.5))
        g.p("w", g.u((3, 3), -0.8, 0.8))
        g.p("xs", g.u((steps, 3), -1, 1))
        body = ("%%y = scan(%%h0, %%w, %%xs, body=@cell_%s, num_bcast=1%s)"
                % (g.dt, attrs))
        return (body, "%y",
                lambda t: _rnn(t, steps, rev)[1 if traj else 0],
                RNN_CELL.format(dt=g.dt))


rnn_case("rnn", "", False)
rnn_case("rnn_ckpt3", ", checkpoints=3", False)
rnn_case("rnn_ckpt2_len8", ", checkpoints=2", False, steps=8)
rnn_case("rnn_traj", ", save_trajectory=true", True)
rnn_case("rnn_traj_ckpt", ", save_trajectory=true, checkpoints=2", True)
# Checkpointed reversal (passes/ad/vjp_rules_scan.c): 23 steps, prime (first step split
# off, halves of 11 and 5 likewise); 36 = 4 segments of 9 = 3 x 3.
rnn_case("rnn_ckpt2_len23", ", checkpoints=2", False, steps=23)
rnn_case("rnn_ckpt4_len36", ", checkpoints=4", False, steps=36)
# reverse=true scans: steps L-1 ... 0, row t of the trajectory = carry
# after step t.
rnn_case("rnn_rev", ", reverse=true", False)
rnn_case("rnn_rev_traj", ", save_trajectory=true, reverse=true", True)
rnn_case("rnn_rev_ckpt4_len36", ", checkpoints=4, reverse=true", False,
         steps=36)
rnn_case("rnn_rev_ckpt2_len23", ", checkpoints=2, reverse=true", False,
         steps=23)

# scan_backward / scan_backward_xs written by hand (lowered to a reverse
# scan by lower_scan_bwd): step c' = tanh(c*x) + x (+ x*y), body its
# hand-written VJP; the reference runs the reverse sweep of ops-detail.md
# in torch, whose autograd differentiates it (double backward). With
# checkpoints the carries are recomputed from h0 (traj gets no gradient).
SB_PRE = """graph sb_{dt} {{
  input %c: {dt}[3]
  input %x: {dt}[3]
  %n = add(tanh(mul(%c, %x)), %x)
  return %n
}}
graph sb_vjp_{dt} {{
  input %c: {dt}[3]
  input %x: {dt}[3]
  input %dc: {dt}[3]
  %t = tanh(mul(%c, %x))
  %g = mul(%dc, sub(1, mul(%t, %t)))
  %dn = mul(%g, %x)
  %dx = add(mul(%g, %c), %dc)
  return %dn, %dx
}}
graph sb2_vjp_{dt} {{
  input %c: {dt}[3]
  input %x: {dt}[3]
  input %y: {dt}[3]
  input %dc: {dt}[3]
  %t = tanh(mul(%c, %x))
  %g = mul(%dc, sub(1, mul(%t, %t)))
  %dn = mul(%g, %x)
  %dx = add(mul(%g, %c), mul(%dc, %y))
  %dy = mul(%dc, %x)
  return %dn, %dx, %dy
}}
"""


def _sb_sweep(t, ckpt):
    """(d h0, dx rows, dy rows) of the reverse sweep."""
    h0, xs, ys = t["h0"], t["xs"], t.get("ys")
    L = xs.shape[0]
    tr = t["traj"]
    if ckpt:
        c, rows = h0, []
        for s in range(L):
            c = torch.tanh(c * xs[s]) + xs[s]
            rows.append(c)
        tr = torch.stack(rows)
    dc, dx, dy = torch.zeros_like(h0), [None] * L, [None] * L
    for s in reversed(range(L)):
        dc = dc + t["dtraj"][s]
        c = h0 if s == 0 else tr[s - 1]
        gc = dc * (1 - torch.tanh(c * xs[s]) ** 2)
        dx[s] = gc * c + (dc if ys is None else dc * ys[s])
        if ys is not None:
            dy[s] = dc * xs[s]
        dc = gc * xs[s]
    return dc, torch.stack(dx), (torch.stack(dy) if ys is not None else None)


def scan_bwd_case(name, op, L, k=None, two=False, ckpt=0):
    @case(name, ops=[op])
    def _(g):
        g.p("h0", g.u((3,), -1, 1))
        g.p("xs", g.u((L, 3), -1, 1))
        if two:
            g.p("ys", g.u((L, 3), -1, 1))
        traj = g.u((L, 3), -1, 1)
        if ckpt or L == 1:  # traj is not read: no gradient, an input
            g.i("traj", g.dt, traj)
        else:
            g.p("traj", traj)
        g.p("dtraj", g.u((L, 3), -1, 1))
        attrs = ", body=@%s_vjp_%s" % ("sb2" if two else "sb", g.dt)
        if k is not None:
            attrs += ", k=%d" % k
        if ckpt:
            attrs += ", checkpoints=%d, fwd=@sb_%s" % (ckpt, g.dt)
        call = "%%y = %s(%%h0, %%xs, %s%%traj, %%dtraj%s)" % (
            op, "%ys, " if two else "", attrs)
        pick = 0 if k is None else 1 + k
        return (call, "%y", lambda t: _sb_sweep(t, ckpt)[pick],
                SB_PRE.format(dt=g.dt))


scan_bwd_case("scan_backward", "scan_backward", 5)
scan_bwd_case("scan_backward_len1", "scan_backward", 1)
scan_bwd_case("scan_backward_ckpt", "scan_backward", 6, ckpt=2)
scan_bwd_case("scan_backward_xs", "scan_backward_xs", 5, k=0)
scan_bwd_case("scan_backward_xs_k1", "scan_backward_xs", 4, k=1, two=True)
scan_bwd_case("scan_backward_xs_ckpt", "scan_backward_xs", 5, k=0, ckpt=3)

NEST_PRE = """graph inner_{dt} {{
  input %c: {dt}[2]
  input %x: {dt}[2]
  %n = sin(add(mul(%c, %x), %c))
  return %n
}}
graph outer_{dt} {{
  input %h: {dt}[2]
  input %w: {dt}[2]
  input %xs: {dt}[3, 2]
  %s = scan(%h, %xs, body=@inner_{dt})
  %n = tanh(mul(%s, %w))
  return %n
}}
"""


def nested_case(name, attrs):
    """A scan whose body runs a scan; broadcast weight; checkpoints."""
    @case(name, ops=["scan"])
    def _(g):
        g.p("h0", g.u((2,), -1, 1))
        g.p("w", g.u((2,), -1.5, 1.5))
        g.p("ys", g.u((5, 3, 2), -1, 1))

        def ref(t):
            h = t["h0"]
            for i in range(5):
                s = h
                for j in range(3):
                    s = torch.sin(s * t["ys"][i, j] + s)
                h = torch.tanh(s * t["w"])
            return h
        return ("%%y = scan(%%h0, %%w, %%ys, body=@outer_%s, num_bcast=1%s)"
                % (g.dt, attrs), "%y", ref, NEST_PRE.format(dt=g.dt))


nested_case("scan_nested", "")
nested_case("scan_nested_ckpt", ", checkpoints=2")

IF_PRE = """graph th_{dt} {{
  input %a: {dt}[3]
  input %b: {dt}[3]
  %y = mul(%a, %b)
  return %y
}}
graph el_{dt} {{
  input %a: {dt}[3]
  input %b: {dt}[3]
  %y = sin(sub(%a, %b))
  return %y
}}
"""


def if_case(name, pred):
    @case(name, ops=["if"])
    def _(g):
        g.i("q", "bool", np.array(pred))
        g.p("a", g.u((3,)))
        g.p("b", g.u((3,)))

        def ref(t):
            return t["a"] * t["b"] if pred else torch.sin(t["a"] - t["b"])
        return ("%y = if(%q, %a, %b, then=@th_{0}, else=@el_{0})"
                .format(g.dt), "%y", ref, IF_PRE.format(dt=g.dt))


if_case("ctl_if_true", True)
if_case("ctl_if_false", False)

WHILE_PRE = """graph wc_{dt} {{
  input %x: {dt}[3]
  input %w: {dt}[3]
  %k = lt(reduce_sum(%x), 6.0)
  return %k
}}
graph wb_{dt} {{
  input %x: {dt}[3]
  input %w: {dt}[3]
  %n = add(mul(%x, %w), 0.25)
  return %n, %w
}}
"""


@case("ctl_while", ops=["while"])
def _(g):
    g.p("x", g.u((3,), 0.2, 0.6))
    g.p("w", g.u((3,), 1.2, 1.6))

    def ref(t):
        x, w = t["x"], t["w"]
        for _ in range(12):
            if not float(x.sum()) < 6.0:
                break
            x = x * w + 0.25
        return x
    return ("%y = while(%x, %w, cond=@wc_{0}, body=@wb_{0}, "
            "max_iterations=12)".format(g.dt), "%y", ref,
            WHILE_PRE.format(dt=g.dt))


NESTED_CTL_PRE = """graph nth_{dt} {{
  input %a: {dt}[2]
  %y = mul(%a, sin(%a))
  return %y
}}
graph nel_{dt} {{
  input %a: {dt}[2]
  %y = tanh(%a)
  return %y
}}
graph nwc_{dt} {{
  input %x: {dt}[2]
  %k = lt(reduce_sum(abs(%x)), 3.0)
  return %k
}}
graph nwb_{dt} {{
  input %x: {dt}[2]
  %n = mul(%x, 1.3)
  return %n
}}
graph nbody_{dt} {{
  input %h: {dt}[2]
  input %x: {dt}[2]
  %p = gt(reduce_sum(%x), 0.0)
  %a = if(%p, add(%h, %x), then=@nth_{dt}, else=@nel_{dt})
  %b = while(%a, cond=@nwc_{dt}, body=@nwb_{dt}, max_iterations=4)
  return %b
}}
graph ninner_{dt} {{
  input %c: {dt}[2]
  input %x: {dt}[2]
  %n = sin(add(%c, %x))
  return %n
}}
graph nth2_{dt} {{
  input %a: {dt}[2]
  input %xs: {dt}[3, 2]
  %y = scan(%a, %xs, body=@ninner_{dt})
  return %y
}}
graph nel2_{dt} {{
  input %a: {dt}[2]
  input %xs: {dt}[3, 2]
  %y = mul(%a, 2.0)
  return %y
}}
"""


def _nested_ctl(t, q):
    h = t["h0"]
    for i in range(5):
        x = t["xs"][i]
        a = h + x
        a = a * torch.sin(a) if float(x.sum()) > 0 else torch.tanh(a)
        for _ in range(4):
            if not float(a.abs().sum()) < 3.0:
                break
            a = a * 1.3
        h = a
    if q:
        for j in range(3):
            h = torch.sin(h + t["ys"][j])
        return h
    return h * 2.0


def nested_ctl_case(name, q):
    """if and while inside a checkpointed scan body; a scan inside an
    if branch."""
    @case(name, ops=["if", "while", "scan"])
    def _(g):
        g.p("h0", g.u((2,), -1, 1))
        g.p("xs", g.u((5, 2), -1, 1))
        g.p("ys", g.u((3, 2), -1, 1))
        g.i("q", "bool", np.array(q))
        return ("%r = scan(%h0, %xs, body=@nbody_{0}, checkpoints=2)\n"
                "%y = if(%q, %r, %ys, then=@nth2_{0}, else=@nel2_{0})"
                .format(g.dt), "%y", lambda t: _nested_ctl(t, q),
                NESTED_CTL_PRE.format(dt=g.dt))


nested_ctl_case("ctl_nested_true", True)
nested_ctl_case("ctl_nested_false", False)

CUSTOM_PRE = """graph sq_{dt} {{ input %x: {dt}[4] %y = mul(%x, %x) return %y }}
graph sq_vjp_{dt} {{
  input %x: {dt}[4]
  input %primal_output: {dt}[4]
  input %d_output: {dt}[4]
  %g = mul(mul(%d_output, %x), 3.0)
  return %g
}}
graph cube_{dt} {{ input %x: {dt}[4] %y = mul(%x, mul(%x, %x)) return %y }}
"""


class _Sq3(torch.autograd.Function):
    """x*x whose declared vjp is 3*x*g (not the true 2*x*g)."""
    @staticmethod
    def forward(ctx, x):
        ctx.save_for_backward(x)
        return x * x

    @staticmethod
    def backward(ctx, gr):
        (x,) = ctx.saved_tensors
        return 3 * x * gr


# forward mode ignores the declared vjp (no jvp body): the JVP is the
# derivative of fwd, so it is not the transpose of the VJP
@case("custom_vjp", ops=["custom_fn"], fd=False,
      jvp_ref=lambda t: t["x"] * t["x"] + t["x"] ** 3,
      dot=(None, "declared vjp is not the derivative of fwd, which "
           "forward mode differentiates"))
def _(g):
    g.p("x", g.u((4,)))
    return ("%y = add(custom_fn(%x, fwd=@sq_{0}, vjp=@sq_vjp_{0}), "
            "custom_fn(%x, fwd=@cube_{0}))".format(g.dt), "%y",
            lambda t: _Sq3.apply(t["x"]) + t["x"] ** 3,
            CUSTOM_PRE.format(dt=g.dt))


@case("bcast_all", ops=[])
def _(g):
    g.p("a", g.u((3, 1, 4)))
    g.p("b", g.u((2, 1)))
    g.p("c", g.u((4,)))
    return ("%y = div(mul(add(%a, %b), sub(%c, %a)), add(exp(%b), 1.0))",
            "%y", lambda t: (t["a"] + t["b"]) * (t["c"] - t["a"]) /
            (torch.exp(t["b"]) + 1.0))


# ---- generation ----

def check_coverage():
    covered = set()
    for c in REG:
        covered.update(c.ops)
    missing = [n for n, f in op_table()
               if needs_case(f) and n not in covered and n not in SKIP]
    if missing:
        sys.exit("gen_gradcheck: ops without a gradient case or SKIP "
                 "entry: " + " ".join(missing))
    return covered


# f32 JVP runs with a looser tolerance than the default (rlx_run
# --rtol/--atol, which run_gradcheck.py honours too), with the reason
JVP_TOL_F32 = {
    # groups of 2 elements: x^ = +-sqrt(var/(var+eps)), so the value and
    # its tangent are ~eps/(var+eps) ~ 1e-3 of the terms they are
    # computed from; f32 cancellation leaves ~3e-3 relative (the f64
    # variant agrees with torch, finite differences and the dot product)
    "group_norm_backward_input_nc": ((1e-4, 3e-5), "2-element groups: "
                                     "f32 cancellation of terms ~1e3 "
                                     "times the result"),
}


def generate(c, dt):
    cname, fd, rlxc, fwd = c.name, c.fd, c.rlxc, c.fwd
    name = "gc_%s_%s" % (cname, dt)
    rng, g, body, ret, fn, pre = ag.start(c, dt)
    ts = {t.name: ag.torch_of(t) for t in g.args}
    y = fn(ts)
    odt = "c64" if y.is_complex() else dt
    dv = rng.uniform(-1, 1, size=tuple(y.shape))
    if odt == "c64":
        dv = dv + 1j * rng.uniform(-1, 1, size=tuple(y.shape))
    dout = L.T(odt, dv, "d_output")
    y.backward(torch.tensor(dout.v))
    params = [t for t in g.args if t.kind == "param"]
    grads = [ts[p.name].grad for p in params]
    grads = [gr if gr is not None else torch.zeros(p.shape, dtype=torch.float64)
             for gr, p in zip(grads, params)]
    ag.write_case(CASES_DIR, name, ag.graph_text(
        name, g, body, ret, pre,
        "gradient check (tests/gradcheck/gen_gradcheck.py)"))
    gdir = ag.golden_dir(GOLDEN_DIR, name)
    yv = L.out(odt, y.detach().numpy(), "y")
    gouts = [yv] + [L.out(p.dt, gr.resolve_conj().numpy(), "d_" + p.name)
                    for gr, p in zip(grads, params)]
    ag.write_sub(gdir, "grad", g.args + [dout], gouts)
    runs = ["run %s_grad grad --threads 1,2" % name]
    if dt == "f64" and fd:
        ag.write_sub(gdir, "fwd", g.args, [yv])
        runs.append("run %s fwd --threads 1 --fd --fd-max 64 "
                    "--grad-entry %s_grad" % (name, name))
    # forward mode: ENTRY_jvp (inputs, then a tangent per param)
    tans = ag.tangents(cname, params)
    ts = {t.name: ag.torch_of(t) for t in g.args}
    y2, ty = ag.jvp_ref(fwd["jvp_ref"] or fn, ts, params, tans)
    if not fwd["jvp_ref"]:
        assert torch.allclose(y2, y.detach(), rtol=1e-14, atol=0)
    ag.write_sub(gdir, "jvp", g.args + tans,
                 [yv, L.out(odt, ty.numpy(), "tangent_y")])
    tol = JVP_TOL_F32.get(cname) if dt == "f32" else None
    runs.append("run %s_jvp jvp --threads 1,2" % name + (
        " --rtol %g --atol %g" % tol[0] if tol else ""))
    notes = []
    if tol:
        notes.append(("jvp-tol", tol[1]))
    if dt == "f64" and fwd["dot"]:
        rtol, why = fwd["dot"]
        notes.append(("jvp-dot", "%s (%s)" % (
            "skip" if rtol is None else "rtol %g" % rtol, why)))
    if dt == "f64" and fwd["sym"]:
        notes.append(("hvp-sym", "skip (%s)" % fwd["sym"]))
    ag.write_run(gdir, "tests/gradcheck/gen_gradcheck.py", notes,
                 ["--grad", "--jvp"] + rlxc, runs)
    return name


def main(argv):
    check_coverage()
    names = ag.generate_all(REG, argv, generate, CASES_DIR, GOLDEN_DIR)
    with open(os.path.join(HERE, "manifest.txt"), "w") as f:
        f.write("# case and the ops it checks (generated by "
                "gen_gradcheck.py)\n")
        for c in REG:
            f.write("%s %s\n" % (c.name, " ".join(c.ops)))
    with open(os.path.join(HERE, "skipped.txt"), "w") as f:
        f.write("# ops without a gradient case, with the reason "
                "(generated by gen_gradcheck.py)\n")
        for op in sorted(SKIP):
            f.write("%s\t%s\n" % (op, SKIP[op]))
    print("wrote %d cases" % len(names))


if __name__ == "__main__":
    main(sys.argv[1:])
