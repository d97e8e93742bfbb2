"""e2e_cases_scanbwd.py -- scan_backward and scan_backward_xs written by
hand (language.md 6.9), compiled through their lowering to a reverse
scan (passes/lower/lower_scan_bwd.c).

Step: carry f32[3], per-step x f32[3] (and y): c' = tanh(c*x) + x(*y)
(its carry derivative depends on the carry, so the results read traj);
body: its hand-written VJP (carry, x..., dcarry) -> (dcarry, dx...).
Reference: the reverse sweep of ops-detail.md ("Scan reverse mode")
written out in NumPy float64: t = L-1 ... 0: dc += dtraj[t];
carry_in = init (t = 0) or traj[t-1]; (dc, dx_t...) = body(carry_in,
x_t..., dc). traj is random (the ops read it as given) except with
checkpoints, where only the checkpoint rows t_k = ceil((k+1)L/K)-1 are
the true carries and the other rows hold garbage: the carries must be
recomputed with fwd.
"""
import numpy as np

from e2e_lib import T, case, out, outs_str, uni

ONE = """
graph step {
  input %c: DT[3]
  input %x: DT[3]
  %n = add(tanh(mul(%c, %x)), %x)
  return %n
}

graph step_vjp {
  input %c: DT[3]
  input %x: DT[3]
  input %dc: DT[3]
  %t = tanh(mul(%c, %x))
  %g = mul(%dc, sub(1, mul(%t, %t)))
  %dn = mul(%g, %x)
  %dx = add(mul(%g, %c), %dc)
  return %dn, %dx
}
"""

TWO = """
graph step2 {
  input %c: f32[3]
  input %x: f32[3]
  input %y: f32[3]
  %n = add(tanh(mul(%c, %x)), mul(%x, %y))
  return %n
}

graph step2_vjp {
  input %c: f32[3]
  input %x: f32[3]
  input %y: f32[3]
  input %dc: f32[3]
  %t = tanh(mul(%c, %x))
  %g = mul(%dc, sub(1, mul(%t, %t)))
  %dn = mul(%g, %x)
  %dx = add(mul(%g, %c), mul(%dc, %y))
  %dy = mul(%dc, %x)
  return %dn, %dx, %dy
}
"""


def step(c, x, y=None):
    return np.tanh(c * x) + (x if y is None else x * y)


def step_vjp(c, x, y, dc):
    g = dc * (1 - np.tanh(c * x) ** 2)
    dx = g * c + (dc if y is None else dc * y)
    return g * x, dx, (None if y is None else dc * x)


def sweep(init, xs, ys, traj, dtraj):
    """(d init, dx rows, dy rows) by the reverse sweep."""
    L = xs.shape[0]
    dc, dx, dy = np.zeros_like(init), np.zeros_like(xs), np.zeros_like(xs)
    for t in reversed(range(L)):
        dc = dc + dtraj[t]
        cin = init if t == 0 else traj[t - 1]
        dc, dx[t], d = step_vjp(cin, xs[t], None if ys is None else ys[t],
                                dc)
        if d is not None:
            dy[t] = d
    return dc, dx, dy


def forward_traj(init, xs, ys=None):
    c, rows = init, []
    for t in range(xs.shape[0]):
        c = step(c, xs[t], None if ys is None else ys[t])
        rows.append(c)
    return np.stack(rows)


def _one(c, rng, L, dt):
    ins = [T(dt, uni(rng, (3,)), "h0"), T(dt, uni(rng, (L, 3)), "xs"),
           T(dt, uni(rng, (L, 3)), "traj"), T(dt, uni(rng, (L, 3)), "dtraj")]
    h0, xs, traj, dtraj = [t.v for t in ins]
    dh, dx, _ = sweep(h0, xs, None, traj, dtraj)
    outs = [out(dt, dh, "dh0"), out(dt, dx, "dxs")]
    c.graph(ins, "%dh0 = scan_backward(%h0, %xs, %traj, %dtraj, "
            "body=@step_vjp)\n"
            "%dxs = scan_backward_xs(%h0, %xs, %traj, %dtraj, "
            "body=@step_vjp, k=0)", outs_str(outs),
            pre=ONE.replace("DT", dt),
            comment="scan_backward / scan_backward_xs over %d step%s of a "
            "nonlinear step's VJP;\nthe trajectory is read as given" %
            (L, "" if L == 1 else "s"))
    c.run(ins, outs)


@case()
def scanbwd_len1(c, rng):
    _one(c, rng, 1, "f32")


@case()
def scanbwd_len6(c, rng):
    _one(c, rng, 6, "f32")


@case()
def scanbwd_len5_f64(c, rng):
    _one(c, rng, 5, "f64")


@case()
def scanbwd_two_xs(c, rng):
    L = 4
    ins = [T("f32", uni(rng, (3,)), "h0"), T("f32", uni(rng, (L, 3)), "xs"),
           T("f32", uni(rng, (L, 3)), "ys"),
           T("f32", uni(rng, (L, 3)), "traj"),
           T("f32", uni(rng, (L, 3)), "dtraj")]
    h0, xs, ys, traj, dtraj = [t.v for t in ins]
    dh, dx, dy = sweep(h0, xs, ys, traj, dtraj)
    outs = [out("f32", dh, "dh0"), out("f32", dx, "dxs"),
            out("f32", dy, "dys")]
    call = "(%h0, %xs, %ys, %traj, %dtraj, body=@step2_vjp"
    c.graph(ins, "%%dh0 = scan_backward%s)\n"
            "%%dxs = scan_backward_xs%s)\n"
            "%%dys = scan_backward_xs%s, k=1)" % (call, call, call),
            outs_str(outs), pre=TWO,
            comment="two per-step operands: d init and the rows of dx "
            "(k=0) and dy (k=1)")
    c.run(ins, outs)


@case()
def scanbwd_ckpt(c, rng):
    L, K = 7, 3
    ins = [T("f32", uni(rng, (3,)), "h0"), T("f32", uni(rng, (L, 3)), "xs"),
           None, T("f32", uni(rng, (L, 3)), "dtraj")]
    h0, xs = ins[0].v, ins[1].v
    true = forward_traj(h0, xs)
    keep = [-(-(k + 1) * L // K) - 1 for k in range(K)]
    bad = np.full_like(true, 1e3)
    bad[keep] = true[keep]
    ins[2] = T("f32", bad, "traj")
    dh, dx, _ = sweep(h0, xs, None, true, ins[3].v)
    outs = [out("f32", dh, "dh0"), out("f32", dx, "dxs")]
    call = ("(%%h0, %%xs, %%traj, %%dtraj, body=@step_vjp, checkpoints=%d, "
            "fwd=@step" % K)
    c.graph(ins, "%%dh0 = scan_backward%s)\n"
            "%%dxs = scan_backward_xs%s, k=0)" % (call, call),
            outs_str(outs), pre=ONE.replace("DT", "f32"),
            comment="checkpoints=%d over %d steps: only trajectory rows %s "
            "are valid\n(the others hold 1000); the carries come from fwd"
            % (K, L, keep))
    c.run(ins, outs)


@case()
def scanbwd_no_xs(c, rng):
    pre = """
graph decay_vjp {
  input %c: f32[2, 2]
  input %dc: f32[2, 2]
  %d = mul(%dc, cos(%c))
  return %d
}
"""
    L = 3
    ins = [T("f32", uni(rng, (2, 2)), "h0"),
           T("f32", uni(rng, (L, 2, 2)), "traj"),
           T("f32", uni(rng, (L, 2, 2)), "dtraj")]
    h0, traj, dtraj = [t.v for t in ins]
    dc = np.zeros_like(h0)
    for t in reversed(range(L)):
        dc = (dc + dtraj[t]) * np.cos(h0 if t == 0 else traj[t - 1])
    outs = [out("f32", dc, "dh0")]
    c.graph(ins, "%%dh0 = scan_backward(%%h0, %%traj, %%dtraj, "
            "body=@decay_vjp, length=%d)" % L, outs_str(outs), pre=pre,
            comment="no per-step operand (length given), rank-2 carry")
    c.run(ins, outs)


@case()
def scanbwd_nested(c, rng):
    pre = ONE.replace("DT", "f32") + """
graph outer {
  input %h: f32[3]
  input %x: f32[2, 3]
  %tr = scan(%h, %x, body=@step, save_trajectory=true)
  %r = scan_backward(%h, %x, %tr, %tr, body=@step_vjp)
  %n = add(tanh(%r), mul(%h, 0.5))
  return %n
}
"""
    ins = [T("f32", uni(rng, (3,)), "h0"),
           T("f32", uni(rng, (4, 2, 3)), "ys")]
    h = ins[0].v
    for s in range(4):
        x = ins[1].v[s]
        tr = forward_traj(h, x)
        r = sweep(h, x, None, tr, tr)[0]
        h = np.tanh(r) + 0.5 * h
    outs = [out("f32", h, "y")]
    c.graph(ins, "%y = scan(%h0, %ys, body=@outer)", outs_str(outs),
            pre=pre, comment="scan_backward inside a scan body (lowered "
            "in the body graph)")
    c.run(ins, outs)
