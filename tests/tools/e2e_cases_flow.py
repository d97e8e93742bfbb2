"""e2e_cases_flow.py -- control flow, whole graphs, gradients.

scan (broadcast + per-step operands, save_trajectory, checkpoints), if,
while, custom_fn; multi-op graphs (MLP forward with softmax, RNN with
scan); NULL workspace; bit-identical results for 1, 2, 3 threads on
sizes big enough to split; ENTRY_grad entries (rlxc --grad) checked
against torch.autograd in float64 and by finite differences (--fd).
"""
import numpy as np
import torch

from e2e_lib import T, case, out, outs_str, tt, uni

THREADS = ["--threads", "1,2,3"]


# ---------------------------------------------------------------- scan

CELL = """
graph cell {
  input %h: DT[2, 4]
  input %wx: DT[3, 4]
  input %wh: DT[4, 4]
  input %b: DT[4]
  input %x: DT[2, 3]
  %a = add(add(matmul(%x, %wx), matmul(%h, %wh)), %b)
  %hn = tanh(%a)
  return %hn
}
"""


def _rnn_ref(h0, xs, wx, wh, b):
    h, traj = h0, []
    for t in range(xs.shape[0]):
        h = np.tanh(xs[t] @ wx + h @ wh + b)
        traj.append(h)
    return h, np.stack(traj)


def _rnn_inputs(rng, dt, kind="input"):
    return [T(dt, uni(rng, (2, 4)), "h0"), T(dt, uni(rng, (6, 2, 3)), "xs"),
            T(dt, uni(rng, (3, 4)) * 0.7, "wx", kind),
            T(dt, uni(rng, (4, 4)) * 0.7, "wh", kind),
            T(dt, uni(rng, (4,)) * 0.3, "b", kind)]


@case()
def scan_rnn(c, rng):
    ins = _rnn_inputs(rng, "f32")
    h0, xs, wx, wh, b = ins
    hT, traj = _rnn_ref(*[t.v for t in ins])
    outs = [out("f32", hT, "hT"), out("f32", traj, "traj"),
            out("f32", hT, "hc")]
    call = "scan(%h0, %wx, %wh, %b, %xs, body=@cell, length=6, num_bcast=3"
    c.graph(ins, "%%hT = %s)\n%%traj = %s, save_trajectory=true)\n"
            "%%hc = %s, checkpoints=2)" % (call, call, call), outs_str(outs),
            pre=CELL.replace("DT", "f32"),
            comment="RNN written with scan: broadcast weights, per-step x,\n"
            "final carry, trajectory, and checkpoints (no effect on values)")
    c.run(ins, outs)
    c.run(ins, outs, args=["--null-ws", "--concurrent", "4"])


@case()
def scan_multi(c, rng):
    pre = """
graph step {
  input %c: f64[3]
  input %s: f64[]
  input %x1: f64[3]
  input %x2: f64[]
  %r = add(mul(%c, %x1), mul(%x2, %s))
  return %r
}
"""
    c0 = T("f64", uni(rng, (3,)), "c0")
    s = T("f64", 0.5, "s")
    x1 = T("f64", uni(rng, (5, 3), 0.5, 1.5), "x1")
    x2 = T("f64", uni(rng, (5,)), "x2")
    cur, traj = c0.v, []
    for t in range(5):
        cur = cur * x1.v[t] + x2.v[t] * s.v
        traj.append(cur)
    outs = [out("f64", cur, "r"), out("f64", np.stack(traj), "tr")]
    c.graph([c0, s, x1, x2],
            "%r = scan(%c0, %s, %x1, %x2, body=@step, num_bcast=1)\n"
            "%tr = scan(%c0, %s, %x1, %x2, body=@step, length=5, "
            "num_bcast=1, save_trajectory=true)", outs_str(outs), pre=pre,
            comment="scan with a scalar broadcast and two per-step operands"
            "\n(length inferred from xs in the first call)")
    c.run([c0, s, x1, x2], outs)


# ---------------------------------------------------------------- if/while

IF_PRE = """
graph then_b {
  input %x: f32[3]
  input %y: f32[3]
  %r = add(%x, %y)
  return %r
}

graph else_b {
  input %x: f32[3]
  input %y: f32[3]
  %r = mul(%x, %y)
  return %r
}
"""


@case()
def if_select(c, rng):
    x, y = T("f32", uni(rng, (3,)), "x"), T("f32", uni(rng, (3,)), "y")
    for sub, p, q in (("t", 1, 0.0), ("f", 0, -2.5)):
        ins = [T("bool", p, "p"), T("f32", q, "q"), x, y]
        outs = [out("f32", x.v + y.v if p else x.v * y.v, "r"),
                out("f32", x.v + y.v if q else x.v * y.v, "rq")]
        c.graph(ins, "%r = if(%p, %x, %y, then=@then_b, else=@else_b)\n"
                "%rq = if(%q, %x, %y, then=@then_b, else=@else_b)",
                "%r, %rq", pre=IF_PRE,
                comment="if with a bool and a numeric scalar predicate")
        c.run(ins, outs, sub=sub)


WHILE_PRE = """
graph wcond {
  input %x: f32[3]
  input %i: f32[]
  %c = lt(%i, 5.0)
  return %c
}

graph wbody {
  input %x: f32[3]
  input %i: f32[]
  %x2 = add(mul(%x, 1.5), 0.25)
  %i2 = add(%i, 1.0)
  return %x2, %i2
}

graph scond {
  input %v: f64[4]
  %c = lt(reduce_sum(%v), 100.0)
  return %c
}

graph sbody {
  input %v: f64[4]
  %v2 = mul(%v, 2.0)
  return %v2
}
"""


@case()
def while_loop(c, rng):
    x = T("f32", uni(rng, (3,)), "x")
    v = T("f64", uni(rng, (4,), 0.5, 1.0), "v")
    for sub, i0 in (("five", 0.0), ("zero", 7.0), ("two", 3.0)):
        xr = x.v.copy()
        for _ in range(max(0, 5 - int(i0))):
            xr = xr * 1.5 + 0.25
        vr = v.v.copy()
        while vr.sum() < 100.0:
            vr = vr * 2.0
        ins = [x, T("f32", i0, "i0"), v]
        c.graph(ins, "%r = while(%x, %i0, cond=@wcond, body=@wbody, "
                "max_iterations=10)\n%s = while(%v, cond=@scond, "
                "body=@sbody)", "%r, %s", pre=WHILE_PRE,
                comment="while: counted loop (0, 2, 5 trips) and a "
                "data-dependent loop")
        c.run(ins, [out("f32", xr, "r"), out("f64", vr, "s")], sub=sub)


@case()
def custom_fn_fwd(c, rng):
    pre = """
graph f2 {
  input %a: f32[2, 3]
  input %b: f32[3]
  %r = add(mul(%a, %a), %b)
  return %r
}
"""
    a, b = T("f32", uni(rng, (2, 3)), "a"), T("f32", uni(rng, (3,)), "b")
    c.graph([a, b], "%r = custom_fn(%a, %b, fwd=@f2)\n%s = neg(%r)",
            "%r, %s", pre=pre, comment="custom_fn computes its fwd body")
    r = a.v * a.v + b.v
    c.run([a, b], [out("f32", r, "r"), out("f32", -r, "s")])


# ---------------------------------------------------------------- graphs


def _mlp_fwd_ref(x, w1, b1, w2, b2):
    h = np.maximum(x @ w1 + b1, 0)
    return torch.softmax(tt(h @ w2 + b2), -1).numpy()


@case()
def mlp_forward(c, rng):
    x = T("f32", uni(rng, (8, 16)), "x")
    ps = [T("f32", uni(rng, (16, 32)) * 0.4, "w1", "param"),
          T("f32", uni(rng, (32,)) * 0.1, "b1", "param"),
          T("f32", uni(rng, (32, 10)) * 0.4, "w2", "param"),
          T("f32", uni(rng, (10,)) * 0.1, "b2", "param")]
    c.graph([x] + ps, "%h = relu(add(matmul(%x, %w1), %b1))\n"
            "%z = add(matmul(%h, %w2), %b2)\n%p = softmax(%z)", "%p",
            comment="MLP forward 16-32-10 with relu and softmax")
    outs = [out("f32", _mlp_fwd_ref(*[t.v for t in [x] + ps]), "p")]
    c.run([x] + ps, outs)
    c.run([x] + ps, outs, args=["--null-ws", "--concurrent", "4"])
    c.run([x] + ps, outs, args=["--concurrent", "3"])


@case()
def determinism_big(c, rng):
    a = T("f32", uni(rng, (64, 96)), "a")
    b = T("f32", uni(rng, (96, 80)), "b")
    r = T("f32", uni(rng, (4000, 3)), "r")
    s = T("f32", uni(rng, (2, 3000)), "s")
    outs = [out("f32", a.v @ b.v, "ab"),
            out("f32", r.v.sum(0), "rs"),
            out("f32", torch.softmax(tt(a.v), 0).numpy(), "sm"),
            out("f32", np.cumsum(s.v, 1), "cs"),
            out("f32", r.v.mean(), "rm")]
    c.graph([a, b, r, s], "%ab = matmul(%a, %b)\n"
            "%rs = reduce_sum(%r, axes=[0])\n%sm = softmax(%a, axis=0)\n"
            "%cs = cumsum(%s, axis=1)\n%rm = reduce_mean(%r)",
            outs_str(outs), comment="work big enough to be split across "
            "threads: outputs must be\nbit-identical for 1, 2, 3 threads")
    c.run([a, b, r, s], outs, args=["--threads", "1,2,3,7,16,1", "--null-ws",
                                    "--concurrent", "3"])
    for n in ("1", "3"):  # the default thread count comes from the env
        c.run([a, b, r, s], outs, args=["--env", "RLX_NUM_THREADS=" + n,
                                        "--threads", "0,2"])


# ---------------------------------------------------------------- grads


def _grads(fn, tensors, wrt):
    """Loss and gradients by torch.autograd in float64."""
    ts = {t.name: tt(t.v).requires_grad_(t.name in wrt) for t in tensors}
    res = fn(ts)
    loss = res[0]
    loss.backward()
    return [r.detach().numpy() for r in res], [ts[n].grad.numpy()
                                               for n in wrt]


def _mlp_loss(ts, labels):
    h = torch.relu(ts["x"] @ ts["w1"] + ts["b1"])
    z = h @ ts["w2"] + ts["b2"]
    lab = torch.tensor(labels.astype(np.int64))
    loss = torch.nn.functional.cross_entropy(z, lab)
    return [loss, torch.softmax(z, -1)]


def _mlp_train_case(name, dt):
    def build(c, rng):
        x = T(dt, uni(rng, (8, 16)), "x")
        y = T("i32", rng.integers(0, 5, (8,)), "y")
        ps = [T(dt, uni(rng, (16, 12)) * 0.5, "w1", "param"),
              T(dt, uni(rng, (12,)) * 0.2, "b1", "param"),
              T(dt, uni(rng, (12, 5)) * 0.5, "w2", "param"),
              T(dt, uni(rng, (5,)) * 0.2, "b2", "param")]
        ins = [x, y] + ps
        c.graph(ins, "%h = relu(add(matmul(%x, %w1), %b1))\n"
                "%z = add(matmul(%h, %w2), %b2)\n"
                "%loss = reduce_mean(softmax_cross_entropy(%z, %y))\n"
                "%p = softmax(%z)", "%loss, %p",
                comment="MLP 16-12-5 with softmax cross-entropy loss; "
                "--grad gives\n%s_grad: loss, p, d_w1, d_b1, d_w2, d_b2"
                % name)
        fo, gr = _grads(lambda ts: _mlp_loss(ts, y.v), ins,
                        ["w1", "b1", "w2", "b2"])
        outs = [out(dt, fo[0], "loss"), out(dt, fo[1], "p")]
        c.run(ins, outs)
        dout = T(dt, 1.0, "d_output")
        gouts = outs + [out(dt, g, "d_" + n) for g, n in
                        zip(gr, ["w1", "b1", "w2", "b2"])]
        c.run(ins + [dout], gouts, sub="grad", entry=name + "_grad",
              args=["--threads", "1,2,3", "--concurrent", "3"])
        if dt == "f64":
            c.run(ins, outs, sub="fwd", args=["--fd", "--grad-entry",
                                              name + "_grad"])
    case(name, rlxc=["--grad"])(build)


_mlp_train_case("mlp_train", "f32")
_mlp_train_case("mlp_train64", "f64")


def _rnn_grad_case(name, attrs, traj):
    def build(c, rng):
        ins = _rnn_inputs(rng, "f64", "param")
        call = ("scan(%%h0, %%wx, %%wh, %%b, %%xs, body=@cell, length=6, "
                "num_bcast=3%s)" % attrs)
        body = "%%hs = %s\n%%loss = reduce_sum(mul(%%hs, %%hs))" % call

        def fn(ts):
            h, hs = ts["h0"], []
            for t in range(6):
                h = torch.tanh(ts["xs"][t] @ ts["wx"] + h @ ts["wh"] +
                               ts["b"])
                hs.append(h)
            v = torch.stack(hs) if traj else h
            return [(v * v).sum()]
        c.graph(ins, body, "%loss", pre=CELL.replace("DT", "f64"),
                comment="RNN scan loss, gradients of wx, wh, b (%s)" %
                (attrs.strip(", ") or "plain"))
        wrt = ["wx", "wh", "b"]
        fo, gr = _grads(fn, ins, wrt)
        outs = [out("f64", fo[0], "loss")]
        c.run(ins, outs)
        gouts = outs + [out("f64", g, "d_" + n) for g, n in zip(gr, wrt)]
        c.run(ins + [T("f64", 1.0, "d_output")], gouts, sub="grad",
              entry=name + "_grad")
        c.run(ins, outs, sub="fwd", args=["--fd", "--grad-entry",
                                          name + "_grad"])
    case(name, rlxc=["--grad"])(build)


_rnn_grad_case("rnn_grad", "", False)
_rnn_grad_case("rnn_grad_ckpt", ", checkpoints=2", False)
_rnn_grad_case("rnn_grad_traj", ", save_trajectory=true, checkpoints=3",
               True)


@case(rlxc=["--grad"])
def control_grad(c, rng):
    pre = IF_PRE.replace("f32", "f64") + """
graph sqf {
  input %a: f64[3]
  %r = mul(%a, %a)
  return %r
}

graph sqv {
  input %a: f64[3]
  input %primal_output: f64[3]
  input %d_output: f64[3]
  %g = mul(mul(%d_output, %a), 3.0)
  return %g
}

graph lcond {
  input %x: f64[3]
  input %i: f64[]
  %c = lt(%i, 3.0)
  return %c
}

graph lbody {
  input %x: f64[3]
  input %i: f64[]
  %x2 = mul(%x, tanh(%x))
  %i2 = add(%i, 1.0)
  return %x2, %i2
}
"""
    p = T("bool", 1, "p")
    i0 = T("f64", 0.0, "i0")
    w = T("f64", uni(rng, (3,)), "w", "param")
    u = T("f64", uni(rng, (3,)), "u", "param")
    ins = [p, i0, w, u]
    c.graph(ins, "%a = if(%p, %w, %u, then=@then_b, else=@else_b)\n"
            "%b = custom_fn(%u, fwd=@sqf, vjp=@sqv)\n"
            "%l = while(%w, %i0, cond=@lcond, body=@lbody, "
            "max_iterations=5)\n"
            "%loss = reduce_sum(add(add(mul(%a, %a), %b), %l))", "%loss",
            pre=pre, comment="gradients through if, while and a custom_fn "
            "whose vjp body\nis deliberately 3*a*g (not 2*a*g) to prove "
            "the body is used")
    wv, uv = w.v, u.v
    a = wv + uv
    lw = wv.copy()
    dl = np.ones(3)
    for _ in range(3):  # d/dx x*tanh(x) = tanh + x*(1 - tanh^2)
        dl = dl * (np.tanh(lw) + lw * (1 - np.tanh(lw) ** 2))
        lw = lw * np.tanh(lw)
    loss = np.sum(a * a + uv * uv + lw)
    outs = [out("f64", loss, "loss")]
    c.run(ins, outs)
    gouts = outs + [out("f64", 2 * a + dl, "d_w"),
                    out("f64", 2 * a + 3 * uv, "d_u")]
    c.run(ins + [T("f64", 1.0, "d_output")], gouts, sub="grad",
          entry="control_grad_grad")


@case(rlxc=["--grad"])
def grad_misc(c, rng):
    """Broadcasting everywhere, non-contiguous reduction axes, reduce_prod
    with zeros, reduce_max and binary max with ties (language.md 6.1,
    6.3: every tied element gets the full gradient of reduce_max; binary
    max sends it to a on ties)."""
    a = T("f64", uni(rng, (2, 3, 4)), "a", "param")
    b = T("f64", uni(rng, (3, 1)), "b", "param")
    cc = T("f64", uni(rng, (4,)), "c", "param")
    v = T("f64", uni(rng, (3,)), "v", "param")
    zv = uni(rng, (3, 4), 0.5, 1.5)
    zv[1, 2] = 0.0
    zv[2, 0] = zv[2, 3] = 0.0
    z = T("f64", zv, "z", "param")
    q = T("f64", [[1, 3, 3, 0], [2, 2, 2, 2], [-1, 0.5, 0.25, 0.5]], "q",
          "param")
    r = T("f64", [3, 2, 0.25, -5], "r", "param")
    s = T("f64", [1.5, -2.0, 0.5], "s")
    ins = [a, b, cc, v, z, q, r, s]
    c.graph(ins, "%t1 = reduce_sum(mul(add(%a, %b), %c))\n"
            "%t2 = reduce_sum(mul(reduce_sum(mul(%a, %a), axes=[0, 2]), %v))"
            "\n%t3 = reduce_sum(reduce_prod(%z, axes=[1]))\n"
            "%t4 = reduce_sum(mul(reduce_max(%q, axes=[1]), %s))\n"
            "%t5 = reduce_sum(max(%q, %r))\n"
            "%loss = add(add(add(add(%t1, %t2), %t3), %t4), %t5)", "%loss",
            comment="gradients: broadcasting, non-contiguous axes, "
            "reduce_prod with zeros,\nreduce_max / max ties")

    def fn(ts):
        A, B, C, V, Z, Q, R, S = [ts[t.name] for t in ins]
        t1 = ((A + B) * C).sum()
        t2 = ((A * A).sum(dim=(0, 2)) * V).sum()
        t3 = Z.prod(dim=1).sum()
        m = Q.detach().amax(dim=1, keepdim=True)
        rmax = m.squeeze(1) + ((Q - Q.detach()) * (Q.detach() == m)).sum(1)
        t4 = (rmax * S).sum()
        t5 = torch.where(Q >= R, Q, R.expand(3, 4)).sum()
        return [t1 + t2 + t3 + t4 + t5]
    wrt = ["a", "b", "c", "v", "z", "q", "r"]
    fo, gr = _grads(fn, ins, wrt)
    outs = [out("f64", fo[0], "loss")]
    c.run(ins, outs)
    c.run(ins + [T("f64", 1.0, "d_output")],
          outs + [out("f64", g, "d_" + n) for g, n in zip(gr, wrt)],
          sub="grad", entry="grad_misc_grad")


NEST_PRE = """
graph halve {
  input %c: f32[3]
  %r = mul(%c, 0.5)
  return %r
}

graph bump {
  input %c: f32[3]
  %r = add(%c, 1.0)
  return %r
}

graph nbody {
  input %c: f32[3]
  input %x: f32[3]
  %p = gt(reduce_sum(%c), 0.0)
  %d = if(%p, %c, then=@halve, else=@bump)
  %r = sub(%d, %x)
  return %r
}

graph sq3 {
  input %a: f32[3]
  %r = mul(%a, %a)
  return %r
}

graph wc {
  input %v: f32[3]
  input %k: f32[]
  %c = lt(%k, 3.0)
  return %c
}

graph wb {
  input %v: f32[3]
  input %k: f32[]
  %v2 = add(custom_fn(%v, fwd=@sq3), 0.1)
  %k2 = add(%k, 1.0)
  return %v2, %k2
}

graph one {
  input %c: f32[3]
  input %x: f32[3]
  %r = add(mul(%c, %x), 1.0)
  return %r
}

graph tscan {
  input %c: f32[3]
  input %xs: f32[4, 3]
  %r = scan(%c, %xs, body=@nbody, length=4)
  return %r
}

graph escan {
  input %c: f32[3]
  input %xs: f32[4, 3]
  %r = neg(%c)
  return %r
}

graph gbody {
  input %c: f32[2]
  input %t: f32[5, 2]
  input %i: i32[]
  %g = gather(%t, %i)
  %r = add(%c, %g)
  return %r
}
"""


@case()
def nested_control(c, rng):
    """Control flow inside control flow: a scan whose body has an if with
    a data-dependent predicate, a while whose body calls a custom_fn, a
    scan of length 1, a scan inside an if branch."""
    c0 = T("f32", [0.5, -2.0, 1.0], "c0")
    xs = T("f32", uni(rng, (4, 3)), "xs")
    v0 = T("f32", uni(rng, (3,), -0.9, 0.9), "v0")
    x1 = T("f32", uni(rng, (1, 3)), "x1")
    p = T("bool", 1, "p")

    def nb(cur, x):
        d = cur * 0.5 if cur.sum() > 0 else cur + 1.0
        return d - x
    cur = c0.v
    for t in range(4):
        cur = nb(cur, xs.v[t])
    v = v0.v.copy()
    for _ in range(3):
        v = v * v + 0.1
    outs = [out("f32", cur, "s"), out("f32", v, "w"),
            out("f32", c0.v * x1.v[0] + 1.0, "s1"),
            out("f32", cur, "i")]
    ins = [c0, xs, v0, x1, p]
    c.graph(ins, "%s = scan(%c0, %xs, body=@nbody)\n"
            "%k0 = const f32[] 0.0\n"
            "%w = while(%v0, %k0, cond=@wc, body=@wb, max_iterations=8)\n"
            "%s1 = scan(%c0, %x1, body=@one, length=1)\n"
            "%i = if(%p, %c0, %xs, then=@tscan, else=@escan)",
            "%s, %w, %s1, %i", pre=NEST_PRE,
            comment="nested control flow")
    c.run(ins, outs, sub="then")
    pf = T("bool", 0, "p")
    c.run([c0, xs, v0, x1, pf], outs[:3] + [out("f32", -c0.v, "i")],
          sub="else")


NEST_GRAD_PRE = """
graph gh {
  input %c: f64[3]
  input %w: f64[3]
  %r = mul(%c, %w)
  return %r
}

graph gb {
  input %c: f64[3]
  input %w: f64[3]
  %r = tanh(add(%c, %w))
  return %r
}

graph gstep {
  input %c: f64[3]
  input %w: f64[3]
  input %x: f64[3]
  %p = gt(reduce_sum(%c), 0.0)
  %d = if(%p, %c, %w, then=@gh, else=@gb)
  %r = add(%d, %x)
  return %r
}
"""


@case(rlxc=["--grad"])
def nested_grad(c, rng):
    """Reverse mode through a scan whose body holds an if with a
    data-dependent predicate (broadcast weight w, per-step x)."""
    c0 = T("f64", [0.3, -0.2, 0.4], "c0")
    w = T("f64", uni(rng, (3,), 0.5, 1.0), "w", "param")
    # row offsets make the predicate flip: branches T F T T T, with
    # |sum(c)| >= 0.5 at every step so finite differences keep them
    xs = T("f64", uni(rng, (5, 3)) + np.array([[-1], [1], [-1], [1], [-1]]),
           "xs", "param")
    ins = [c0, w, xs]
    c.graph(ins, "%h = scan(%c0, %w, %xs, body=@gstep, num_bcast=1)\n"
            "%loss = reduce_sum(mul(%h, %h))", "%loss", pre=NEST_GRAD_PRE,
            comment="gradients through scan(if(...)) of w and xs")

    def fn(ts):
        h = ts["c0"]
        for t in range(5):
            if float(h.detach().sum()) > 0:
                d = h * ts["w"]
            else:
                d = torch.tanh(h + ts["w"])
            h = d + ts["xs"][t]
        return [(h * h).sum()]
    fo, gr = _grads(fn, ins, ["w", "xs"])
    outs = [out("f64", fo[0], "loss")]
    c.run(ins, outs)
    c.run(ins + [T("f64", 1.0, "d_output")],
          outs + [out("f64", gr[0], "d_w"), out("f64", gr[1], "d_xs")],
          sub="grad", entry="nested_grad_grad")
    c.run(ins, outs, sub="fwd", args=["--fd", "--grad-entry",
                                      "nested_grad_grad"])


@case()
def index_error_in_scan(c, rng):
    """An out-of-range gather index inside a scan body must make the
    entry return RLX_ERR_INDEX."""
    c0 = T("f32", [0.0, 0.0], "c0")
    tab = T("f32", uni(rng, (5, 2)), "tab")
    ok = T("i32", [0, 4, 2], "ix")
    bad = T("i32", [0, 5, 2], "ix")
    ins = [c0, tab, ok]
    c.graph(ins, "%r = scan(%c0, %tab, %ix, body=@gbody, num_bcast=1)",
            "%r", pre=NEST_PRE, comment="index error inside a scan body")
    c.run(ins, [out("f32", tab.v[[0, 4, 2]].sum(0), "r")], sub="ok")
    c.run([c0, tab, bad], [], sub="bad", args=["--expect", "1"])


IF_GATHER_PRE = """
graph gthen {
  input %tab: f32[5, 2]
  input %i: i32[3]
  input %j: i32[3]
  %g = gather(%tab, %i)
  return %g
}

graph gelse {
  input %tab: f32[5, 2]
  input %i: i32[3]
  input %j: i32[3]
  %g = gather(%tab, %j)
  return %g
}
"""


@case()
def index_error_in_if(c, rng):
    """An out-of-range gather index in the branch an if takes makes the
    entry return RLX_ERR_INDEX; in the branch not taken it is no error
    (the GPU runs both branches: docs/gpu.md)."""
    tab = T("f32", uni(rng, (5, 2)), "tab")
    ok, bad = T("i32", [0, 4, 2], "i"), T("i32", [0, 5, 2], "i")
    j = T("i32", [1, 1, 3], "j")
    body = "%r = if(%p, %tab, %i, %j, then=@gthen, else=@gelse)"
    for sub, p, i, want in (("ok", 1, ok, tab.v[[0, 4, 2]]),
                            ("untaken", 0, bad, tab.v[[1, 1, 3]]),
                            ("taken", 1, bad, None)):
        ins = [T("bool", p, "p"), tab, i, j]
        c.graph(ins, body, "%r", pre=IF_GATHER_PRE,
                comment="index error inside an if branch")
        if want is None:
            c.run(ins, [], sub=sub, args=["--expect", "1"])
        else:
            c.run(ins, [out("f32", want, "r")], sub=sub)
