"""conv.py -- conv2d, conv2d_backward_input, conv2d_backward_weight
(language.md 6.5): NumPy semantics, gradient-check cases, end-to-end
cases.

Gradient checks: CONV_FORMS, the backward ops of CONV_BWD_FORMS against
torch's double backward (second order through the backward ops). End-to-
end: every attribute form: stride 2 (one that leaves input rows unread),
padding beyond the kernel's reach (windows of padding only), dilation 2,
groups 2, depthwise (groups = C_in, channel multiplier 2), non-square
kernels, 1x1, all at once, and a form large enough to be split across
threads (run at 1, 2, 3, 7 threads: bit-identical, and concurrently).
References: torch float64 (F.conv2d and torch.nn.grad.conv2d_input /
conv2d_weight) on the rounded inputs. f32 and f64 at the harness
tolerances; f16 and bf16 are computed in f32 and rounded once: cast to
f32 and compared with a tolerance of a few ulps of the half type.
Operands that are an elementwise result, a reshape (alias) and a
constant check that every storage kind reaches the runtime call.
"""
import numpy as np

from e2e_lib import T, case, out, outs_str, tt, uni
from families import gc_case

GRADCHECK = []


# ---- NumPy semantics ----

def conv2d(op, ins, a):
    """conv2d and its backward ops, NCHW, one kernel tap at a time: tap
    (r, q) reads the strided view of the zero-padded input it meets."""
    st, p = a.get("stride", [1, 1]), a.get("padding", [0, 0])
    d, G = a.get("dilation", [1, 1]), a.get("groups", 1)
    if op == "conv2d":
        x, w = ins
    elif op == "conv2d_backward_input":
        dy, w = ins
        x = np.zeros(a["shape"], dy.dtype)
    else:
        x, dy = ins
        w = np.zeros(a["shape"], x.dtype)
    N, C, H, W = x.shape
    Co, Cg, KH, KW = w.shape
    OH = (H + 2 * p[0] - d[0] * (KH - 1) - 1) // st[0] + 1
    OW = (W + 2 * p[1] - d[1] * (KW - 1) - 1) // st[1] + 1
    xp = np.pad(x, ((0, 0), (0, 0), (p[0], p[0]), (p[1], p[1])))
    wg = w.reshape(G, Co // G, Cg, KH, KW)
    y = np.zeros((N, G, Co // G, OH, OW), x.dtype)
    if op != "conv2d":
        dyg = dy.reshape(N, G, Co // G, OH, OW)
    for r in range(KH):
        for q in range(KW):
            rs = slice(r * d[0], r * d[0] + (OH - 1) * st[0] + 1, st[0])
            cs = slice(q * d[1], q * d[1] + (OW - 1) * st[1] + 1, st[1])
            if op == "conv2d":
                xs = xp[:, :, rs, cs].reshape(N, G, Cg, OH, OW)
                y += np.einsum("ngchw,goc->ngohw", xs, wg[..., r, q])
            elif op == "conv2d_backward_input":
                xp[:, :, rs, cs] += np.einsum(
                    "ngohw,goc->ngchw", dyg, wg[..., r, q]).reshape(
                        N, C, OH, OW)
            else:
                xs = xp[:, :, rs, cs].reshape(N, G, Cg, OH, OW)
                wg[..., r, q] = np.einsum("ngohw,ngchw->goc", dyg, xs)
    if op == "conv2d":
        return y.reshape(N, Co, OH, OW)
    if op == "conv2d_backward_input":
        return xp[:, :, p[0]:p[0] + H, p[1]:p[1] + W].copy()
    return wg.reshape(w.shape)


EVAL = {op: conv2d for op in ("conv2d", "conv2d_backward_input",
                              "conv2d_backward_weight")}


# ---- attributes, shapes and torch references ----

def _attrs(s, p, d, g):
    return (", stride=[%d, %d], padding=[%d, %d], dilation=[%d, %d], "
            "groups=%d" % (s + p + d + (g,)))


def _shape(shape):
    return ", shape=[%s]" % ", ".join(str(d) for d in shape)


def refs(x, w, dy, s, p, d, g):
    """(y, dx, dw) in float64 by torch."""
    import torch
    import torch.nn.functional as F
    y = F.conv2d(tt(x), tt(w), None, s, p, d, g).numpy()
    dx = torch.nn.grad.conv2d_input(x.shape, tt(w), tt(dy), s, p, d, g)
    dw = torch.nn.grad.conv2d_weight(tt(x), w.shape, tt(dy), s, p, d, g)
    return y, dx.numpy(), dw.numpy()


def _out_shape(xs, ws, s, p, d):
    return (xs[0], ws[0]) + tuple(
        (xs[2 + i] + 2 * p[i] - d[i] * (ws[2 + i] - 1) - 1) // s[i] + 1
        for i in range(2))


# ---- gradient checks ----

# (suffix, x shape, w shape, stride, padding, dilation, groups)
CONV_FORMS = [("", (2, 3, 5, 5), (4, 3, 3, 3), (1, 1), (0, 0), (1, 1), 1),
              ("_s2p1", (1, 2, 6, 5), (3, 2, 3, 3), (2, 2), (1, 1), (1, 1),
               1),
              # padding beyond the kernel's reach: windows of zeros only
              ("_pbig", (1, 2, 3, 4), (2, 2, 2, 3), (1, 1), (3, 2), (1, 1),
               1),
              ("_d2", (1, 2, 7, 6), (2, 2, 3, 2), (1, 1), (0, 1), (2, 2), 1),
              ("_g2", (2, 4, 5, 4), (6, 2, 3, 3), (1, 2), (1, 0), (1, 1), 2),
              # depthwise (groups = C_in), channel multiplier 2
              ("_dw", (1, 3, 5, 5), (6, 1, 3, 3), (1, 1), (1, 1), (1, 1), 3),
              ("_rect", (1, 2, 6, 7), (3, 2, 2, 4), (2, 1), (0, 1), (1, 1),
               1),
              ("_1x1", (2, 3, 4, 4), (5, 3, 1, 1), (2, 2), (0, 0), (1, 1), 1),
              ("_all", (2, 4, 7, 6), (4, 2, 3, 2), (2, 1), (1, 2), (2, 1),
               2)]
# forms whose backward ops get cases of their own (second order)
CONV_BWD_FORMS = ("", "_pbig", "_dw", "_1x1", "_all")


def conv_case(sfx, xs, ws, s, p, d, gr):
    attrs = _attrs(s, p, d, gr)

    def conv(x, w):
        import torch.nn.functional as F
        return F.conv2d(x, w, None, s, p, d, gr)

    @gc_case("conv2d" + sfx, ops=["conv2d"])
    def _(g):
        g.p("x", g.u(xs))
        g.p("w", g.u(ws))
        return ("%%y = conv2d(%%x, %%w%s)" % attrs, "%y",
                lambda t: conv(t["x"], t["w"]))

    if sfx not in CONV_BWD_FORMS:
        return
    ys = _out_shape(xs, ws, s, p, d)

    def bwd(x, w, dy, wrt):
        """d<conv(x, w), dy>/d wrt, differentiable (create_graph)."""
        import torch
        (r,) = torch.autograd.grad((conv(x, w) * dy).sum(), wrt,
                                   create_graph=True)
        return r

    def zeros(shape):
        import torch
        return torch.zeros(shape, dtype=torch.float64, requires_grad=True)

    def bin_ref(t):
        x0 = zeros(xs)
        return bwd(x0, t["w"], t["dy"], x0)

    def bwt_ref(t):
        w0 = zeros(ws)
        return bwd(t["x"], w0, t["dy"], w0)

    @gc_case("conv2d_backward_input" + sfx, ops=["conv2d_backward_input"])
    def _(g):
        g.p("dy", g.u(ys))
        g.p("w", g.u(ws))
        return ("%%y = conv2d_backward_input(%%dy, %%w%s%s)"
                % (_shape(xs), attrs), "%y", bin_ref)

    @gc_case("conv2d_backward_weight" + sfx, ops=["conv2d_backward_weight"])
    def _(g):
        g.p("x", g.u(xs))
        g.p("dy", g.u(ys))
        return ("%%y = conv2d_backward_weight(%%x, %%dy%s%s)"
                % (_shape(ws), attrs), "%y", bwt_ref)


for _f in CONV_FORMS:
    conv_case(*_f)


# ---- end-to-end cases ----

# (x shape, w shape, stride, padding, dilation, groups)
FORMS = [((2, 3, 6, 5), (4, 3, 3, 3), (1, 1), (0, 0), (1, 1), 1),
         ((1, 2, 8, 7), (3, 2, 3, 3), (2, 2), (1, 1), (1, 1), 1),
         ((1, 2, 3, 4), (2, 2, 2, 3), (1, 1), (3, 2), (1, 1), 1),
         ((1, 2, 9, 8), (3, 2, 3, 2), (1, 1), (0, 1), (2, 2), 1),
         ((2, 4, 6, 5), (6, 2, 3, 3), (1, 2), (1, 0), (1, 1), 2),
         ((1, 3, 6, 6), (6, 1, 3, 3), (1, 1), (1, 1), (1, 1), 3),
         ((1, 2, 6, 7), (3, 2, 2, 4), (2, 1), (0, 1), (1, 1), 1),
         ((2, 3, 5, 5), (5, 3, 1, 1), (2, 2), (0, 0), (1, 1), 1),
         ((2, 4, 9, 8), (4, 2, 3, 2), (2, 1), (1, 2), (2, 1), 2)]
BIG = ((2, 8, 20, 18), (8, 4, 3, 3), (1, 1), (1, 1), (1, 1), 2)


def _body(dt, forms, rng):
    """Inputs, lines and named references of the three ops per form."""
    ins, body, outs = [], [], []
    for f, (xs, ws, s, p, d, g) in enumerate(forms):
        x = T(dt, uni(rng, xs), "x%d" % f)
        w = T(dt, uni(rng, ws), "w%d" % f)
        dy = T(dt, uni(rng, _out_shape(xs, ws, s, p, d)), "g%d" % f)
        ins += [x, w, dy]
        y, dx, dw = refs(x.v, w.v, dy.v, s, p, d, g)
        a = _attrs(s, p, d, g)
        body += ["%%y%d = conv2d(%%x%d, %%w%d%s)" % (f, f, f, a),
                 "%%dx%d = conv2d_backward_input(%%g%d, %%w%d%s%s)"
                 % (f, f, f, _shape(xs), a),
                 "%%dw%d = conv2d_backward_weight(%%x%d, %%g%d%s%s)"
                 % (f, f, f, _shape(ws), a)]
        outs += [("y%d" % f, y), ("dx%d" % f, dx), ("dw%d" % f, dw)]
    return ins, body, outs


def _conv_case(dt):
    def build(c, rng):
        ins, body, named = _body(dt, FORMS, rng)
        outs = [out(dt, v, nm) for nm, v in named]
        c.graph(ins, "\n".join(body), outs_str(outs),
                comment="conv2d and its backward ops, every attribute "
                "form, %s" % dt)
        c.run(ins, outs, args=["--threads", "1,3"])
    case("conv_forward_" + dt)(build)


def _half_case(dt):
    def build(c, rng):
        ins, body, named = _body(dt, [FORMS[i] for i in (1, 4, 5, 8)], rng)
        outs = [out("f32", v, nm) for nm, v in named]
        body = [ln.replace(" = ", " = cast(", 1) + ", to=f32)"
                for ln in body]
        c.graph(ins, "\n".join(body), outs_str(outs),
                comment="conv2d and its backward ops in %s (computed in "
                "f32, rounded once)" % dt)
        tol = "2e-2" if dt == "bf16" else "2e-3"
        c.run(ins, outs, args=["--threads", "1,2", "--rtol", tol,
                               "--atol", tol])
    case("conv_forward_" + dt)(build)


for _dt in ("f32", "f64", "f16", "bf16"):
    (_conv_case if _dt in ("f32", "f64") else _half_case)(_dt)


@case()
def conv_threads(c, rng):
    """Work split across threads; operands of every storage kind."""
    xs, ws, s, p, d, g = BIG
    ins, body, named = _body("f32", [BIG], rng)
    x, w = ins[0].v, ins[1].v
    flat = T("f32", uni(rng, (3 * 7 * 6,)), "flat")
    k = T("f32", np.round(uni(rng, (3, 3, 2, 2)) * 8) / 8)  # exact in f32
    ins.append(flat)
    a = _attrs(s, p, d, g)
    body += ["%%r = conv2d(relu(%%x0), %%w0%s)" % a,
             "%%k = const f32[3, 3, 2, 2] [%s]"
             % ", ".join(repr(v) for v in k.v.ravel()),
             "%v = conv2d(reshape(%flat, shape=[1, 3, 7, 6]), %k)",
             "%v1 = add(%v, 1.0)"]
    zero = np.zeros((1, 3, 6, 5))
    named += [("r", refs(np.maximum(x, 0), w, ins[2].v, s, p, d, g)[0]),
              ("v1", refs(flat.v.reshape(1, 3, 7, 6), k.v, zero, (1, 1),
                          (0, 0), (1, 1), 1)[0] + 1.0)]
    outs = [out("f32", v, nm) for nm, v in named]
    c.graph(ins, "\n".join(body), outs_str(outs),
            comment="conv2d and its backward ops on a workload split "
            "across threads: bit-identical\nfor 1, 2, 3, 7 threads and "
            "concurrent calls; a fused relu, a reshape\nand a constant "
            "as operands")
    c.run(ins, outs, args=["--threads", "1,2,3,7,1", "--null-ws",
                           "--concurrent", "3"])


# ---- a small CNN, one training step ----

CNN = """%c1 = relu(add(conv2d(%x, %w1, padding=[1, 1]), %b1))
%p1 = max_pool2d(%c1, kernel=[2, 2])
%c2 = relu(add(conv2d(%p1, %w2, padding=[1, 1], groups=2), %b2))
%p2 = max_pool2d(%c2, kernel=[2, 2])
%f = reshape(%p2, shape=[4, 24])
%loss = reduce_mean(softmax_cross_entropy(matmul(%f, %w3), %y))"""


def _cnn_loss(ts, labels):
    import torch
    import torch.nn.functional as F
    h = F.max_pool2d(F.relu(F.conv2d(ts["x"], ts["w1"], padding=1) +
                            ts["b1"]), 2)
    h = F.max_pool2d(F.relu(F.conv2d(h, ts["w2"], padding=1, groups=2) +
                            ts["b2"]), 2)
    z = h.reshape(4, 24) @ ts["w3"]
    return [F.cross_entropy(z, torch.tensor(labels.astype(np.int64)))]


def _cnn_case(name, dt):
    def build(c, rng):
        from e2e_cases_flow import _grads
        x = T(dt, uni(rng, (4, 2, 8, 8)), "x")
        y = T("i32", rng.integers(0, 5, (4,)), "y")
        ps = [T(dt, uni(rng, (4, 2, 3, 3)) * 0.5, "w1", "param"),
              T(dt, uni(rng, (4, 1, 1)) * 0.2, "b1", "param"),
              T(dt, uni(rng, (6, 2, 3, 3)) * 0.5, "w2", "param"),
              T(dt, uni(rng, (6, 1, 1)) * 0.2, "b2", "param"),
              T(dt, uni(rng, (24, 5)) * 0.5, "w3", "param")]
        ins = [x, y] + ps
        c.graph(ins, CNN, "%loss", comment="CNN: conv, relu, max_pool, "
                "conv (groups 2), relu, max_pool, linear,\nsoftmax "
                "cross-entropy; --grad gives %s_grad: loss, d_w1, d_b1, "
                "d_w2, d_b2, d_w3" % name)
        wrt = [t.name for t in ps]
        fo, gr = _grads(lambda ts: _cnn_loss(ts, y.v), ins, wrt)
        outs = [out(dt, fo[0], "loss")]
        c.run(ins, outs)
        gouts = outs + [out(dt, g, "d_" + n) for g, n in zip(gr, wrt)]
        c.run(ins + [T(dt, 1.0, "d_output")], gouts, sub="grad",
              entry=name + "_grad",
              args=["--threads", "1,2,3", "--concurrent", "3"])
        if dt == "f64":
            c.run(ins, outs, sub="fwd", args=["--fd", "--grad-entry",
                                              name + "_grad"])
    case(name, rlxc=["--grad"])(build)


_cnn_case("cnn_train", "f32")
_cnn_case("cnn_train64", "f64")
