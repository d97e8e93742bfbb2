"""fft.py -- fft (language.md 6.8): NumPy semantics, gradient-check
cases, end-to-end cases.

Gradient check: every (inverse, norm) pair, lengths 6 (mixed radix), 8
and 67 (Bluestein), against torch.autograd on complex128 (conjugate-
Wirtinger convention). End-to-end: every length class of the runtime
(1, 2, powers of two, 3*5*7, 1000, generic prime radix 61, Bluestein
for 17 < 64 < 97, 2 * 1009 and 4099), each norm forward and inverse,
batched over leading axes, round trips, and --grad through fft and
complex_norm_sq. References: numpy.fft and torch.autograd in float64 /
complex128.
"""
import numpy as np

from e2e_lib import T, case, out, outs_str, uni
from families import gc_case

GRADCHECK = []


# ---- NumPy semantics ----

def fft(op, ins, a):
    f = np.fft.ifft if a.get("inverse", False) else np.fft.fft
    return f(ins[0], axis=-1, norm=a.get("norm", "backward"))


EVAL = {"fft": fft}


# ---- gradient check (PyTorch reference) ----

def fft_ref(x, inverse=False, norm="backward"):
    import torch
    return (torch.fft.ifft if inverse else torch.fft.fft)(x, norm=norm)


@gc_case("c64_fft", ops=["fft"], dts=("f32",))
def _(g):
    """Every (inverse, norm) pair; lengths 6 (mixed radix), 8 and 67
    (Bluestein)."""
    g.args.append(T("c64", cplx(g.rng, (2, 6)), "z", "param"))
    g.args.append(T("c64", cplx(g.rng, (8,)), "u", "param"))
    g.args.append(T("c64", cplx(g.rng, (67,)), "v", "param"))
    body = ("%a = fft(%z)\n"
            "%b = fft(%a, inverse=true, norm=ortho)\n"
            "%c = fft(mul(%b, %b), norm=forward)\n"
            "%d = fft(%c, inverse=true)\n"
            "%e = fft(%d, norm=ortho)\n"
            "%f = fft(%e, inverse=true, norm=forward)\n"
            "%s8 = reduce_sum(fft(mul(%u, %u), inverse=true))\n"
            "%s67 = reduce_sum(fft(mul(%v, %v), norm=ortho))\n"
            "%y = add(%f, add(%s8, %s67))")

    def ref(t):
        a = fft_ref(t["z"])
        b = fft_ref(a, True, "ortho")
        c = fft_ref(b * b, False, "forward")
        d = fft_ref(c, True)
        e = fft_ref(d, False, "ortho")
        f = fft_ref(e, True, "forward")
        s8 = fft_ref(t["u"] * t["u"], True).sum()
        s67 = fft_ref(t["v"] * t["v"], False, "ortho").sum()
        return f + (s8 + s67)
    return body, "%y", ref


# ---- end-to-end cases ----

def cplx(rng, shape):
    return uni(rng, shape) + 1j * uni(rng, shape)


def _ref(v, inverse, norm):
    return fft("fft", [v], {"inverse": inverse, "norm": norm})


def _attrs(inverse, norm):
    a = []
    if inverse:
        a.append("inverse=true")
    if norm != "backward":
        a.append("norm=%s" % norm)
    return "".join(", " + s for s in a)


@case()
def fft_norms_batched(c, rng):
    """Every (inverse, norm) pair on a [2, 3, 12] batch, and round trips
    (fft then inverse fft with the same norm: the identity)."""
    x = T("c64", cplx(rng, (2, 3, 12)), "x")
    body, outs = [], []
    for inverse in (False, True):
        for norm in ("backward", "forward", "ortho"):
            nm = "%s_%s" % ("i" if inverse else "f", norm)
            body.append("%%%s = fft(%%x%s)" % (nm, _attrs(inverse, norm)))
            outs.append(out("c64", _ref(x.v, inverse, norm), nm))
    for norm in ("backward", "forward", "ortho"):
        body.append("%%rt_%s = fft(fft(%%x%s)%s)" % (
            norm, _attrs(False, norm), _attrs(True, norm)))
        outs.append(out("c64", x.v, "rt_" + norm))
    c.graph([x], "\n".join(body), outs_str(outs),
            comment="fft: every norm, forward and inverse, batched; "
            "round trips")
    c.run([x], outs)


@case()
def fft_lengths(c, rng):
    """One input per length class (small: rows of a batch; long: one
    row, so the goldens stay small)."""
    lens = [(1, 3), (2, 2), (8, 2), (64, 2), (105, 2), (61, 2), (17, 2),
            (97, 2), (1000, 1), (2018, 1), (4099, 1)]
    xs, body, outs = [], [], []
    for k, (n, rows) in enumerate(lens):
        x = T("c64", cplx(rng, (rows, n)), "x%d" % n)
        xs.append(x)
        inverse = k % 2 == 1
        norm = ("backward", "ortho", "forward")[k % 3]
        body.append("%%y%d = fft(%%x%d%s)" % (n, n, _attrs(inverse, norm)))
        outs.append(out("c64", _ref(x.v, inverse, norm), "y%d" % n))
    c.graph(xs, "\n".join(body), outs_str(outs),
            comment="fft over every length class: 1, 2, powers of two, "
            "3*5*7, a generic prime radix (61),\nBluestein (17, 97, "
            "2*1009, 4099 prime), 1000 = 2^3 5^3")
    c.run(xs, outs)


@case(rlxc=["--grad"])
def fft_grad(c, rng):
    """--grad through fft (each norm, both directions) and
    complex_norm_sq, against torch.autograd on complex128."""
    import torch
    z = T("c64", cplx(rng, (2, 10)), "z", "param")
    w = T("f32", uni(rng, (2, 10)), "w")
    src = ("%a = fft(%z, norm=ortho)\n"
           "%b = fft(mul(%a, %a), inverse=true)\n"
           "%e = fft(%b, norm=forward)\n"
           "%d = fft(%e, inverse=true, norm=forward)\n"
           "%loss = reduce_sum(mul(complex_norm_sq(add(%d, %b)), %w))")
    c.graph([z, w], src, "%loss", comment="--grad through fft (every "
            "norm, both directions) and complex_norm_sq")
    tz = torch.tensor(z.v, dtype=torch.complex128, requires_grad=True)
    tw = torch.tensor(w.v, dtype=torch.float64)
    F = torch.fft
    a = F.fft(tz, norm="ortho")
    b = F.ifft(a * a)
    e = F.fft(b, norm="forward")
    d = F.ifft(e, norm="forward")
    loss = ((d + b).abs() ** 2 * tw).sum()
    loss.backward()
    outs = [out("f32", loss.item(), "loss")]
    c.run([z, w], outs)
    gouts = outs + [out("c64", tz.grad.numpy(), "d_z")]
    c.run([z, w, T("f32", 1.0, "d_output")], gouts, sub="grad",
          entry="fft_grad_grad")
