"""e2e_cases_scale.py -- graphs large enough for the code generator's
size measures: more than CG_SEGMENT_NODES (128) nodes that emit code, so
the graph function is a chain of segment functions; repeated layers, so
the elementwise emitter shares loop bodies between roots; long fused
chains, cut into groups of at most 64 nodes.

deep_stack: 160 layers h = tanh(h @ W + b) with one shared W and b, the
loss sum(h) and its gradient (rlxc --grad: d_W and d_b summed over all
layers); f64, so the float64 NumPy reference is exact to rounding.
long_chain: v_i = v_{i-1} * c_i + x for 300 steps (5 groups of 64), f32.
References: NumPy only.
"""
import numpy as np

from e2e_lib import T, case, out, round_to

LAYERS = 160


@case(rlxc=["--grad"])
def deep_stack(c, rng):
    x = T("f64", rng.uniform(-1, 1, (4, 8)), "x")
    w = T("f64", rng.uniform(-0.4, 0.4, (8, 8)), "w", "param")
    b = T("f64", rng.uniform(-0.2, 0.2, (8,)), "b", "param")
    lines, h = [], "%x"
    for i in range(LAYERS):
        lines.append("%%h%d = tanh(add(matmul(%s, %%w), %%b))" % (i, h))
        h = "%%h%d" % i
    lines.append("%%loss = reduce_sum(%s, axes=[0, 1])" % h)
    c.graph([x, w, b], "\n".join(lines), "%loss",
            comment="%d shared layers: segments and shared loop bodies"
            % LAYERS)
    hs = [x.v]
    for _ in range(LAYERS):
        hs.append(np.tanh(hs[-1] @ w.v + b.v))
    loss = hs[-1].sum()
    dh, dw, db = np.ones_like(hs[-1]), np.zeros_like(w.v), np.zeros_like(b.v)
    for i in range(LAYERS, 0, -1):
        da = dh * (1 - hs[i] ** 2)
        dw += hs[i - 1].T @ da
        db += da.sum(axis=0)
        dh = da @ w.v.T
    outs = [out("f64", loss, "loss")]
    c.run([x, w, b], outs)
    c.run([x, w, b, T("f64", 1.0, "d_output")],
          outs + [out("f64", dw, "d_w"), out("f64", db, "d_b")],
          sub="grad", entry="deep_stack_grad")


@case()
def long_chain(c, rng):
    n = 300
    x = T("f32", rng.uniform(-1, 1, (1000,)), "x")
    cs = rng.uniform(0.5, 0.99, n).astype(np.float32)
    lines, v = [], "%x"
    for i in range(n):
        lines.append("%%v%d = add(mul(%s, %r), %%x)" % (i, v, float(cs[i])))
        v = "%%v%d" % i
    c.graph([x], "\n".join(lines), v, comment="300 fused steps")
    ref = x.v.astype(np.float32)
    for i in range(n):  # f32 rounding after every op, as rlxc computes
        ref = round_to("f32", round_to("f32", ref * np.float64(cs[i])) + x.v)
    c.run([x], [out("f32", ref, v[1:])])


@case(rlxc=["--grad"])
def lattice_grad(c, rng):
    """v_i = tanh(v_{i-1} v_{i-2} - v_{i-3} + c_i x): every value read
    three times, so none fuses; forward and gradient are hundreds of
    segment calls that become call tables (codegen/calltable.c) reading
    inputs, outputs and workspace addresses."""
    n = 400
    a = T("f64", rng.uniform(-1, 1, (16,)), "a")
    x = T("f64", rng.uniform(-1, 1, (16,)), "x", "param")
    cs = rng.uniform(-1, 1, n)
    lines = ["%v0 = mul(%a, %x)", "%v1 = tanh(%v0)", "%v2 = sin(%v1)"]
    for i in range(3, n):
        lines.append("%%v%d = tanh(sub(add(mul(%%v%d, %%v%d), mul(%%x, %r)), "
                     "%%v%d))" % (i, i - 1, i - 2, float(cs[i]), i - 3))
    lines.append("%%loss = reduce_sum(%%v%d)" % (n - 1))
    c.graph([a, x], "\n".join(lines), "%loss, %v" + str(n - 1),
            comment="%d-step lattice: call tables" % n)
    v = [a.v * x.v]
    v.append(np.tanh(v[0]))
    v.append(np.sin(v[1]))
    for i in range(3, n):
        v.append(np.tanh(v[i - 1] * v[i - 2] + x.v * cs[i] - v[i - 3]))
    g = [np.zeros(16) for _ in range(n)]
    g[n - 1] = np.ones(16)
    dx = np.zeros(16)
    for i in range(n - 1, 2, -1):
        d = g[i] * (1 - v[i] ** 2)
        g[i - 1] += d * v[i - 2]
        g[i - 2] += d * v[i - 1]
        g[i - 3] -= d
        dx += d * cs[i]
    g[1] += g[2] * np.cos(v[1])
    g[0] += g[1] * (1 - v[1] ** 2)
    dx += g[0] * a.v
    outs = [out("f64", v[n - 1].sum(), "loss"),
            out("f64", v[n - 1], "v%d" % (n - 1))]
    c.run([a, x], outs)
    c.run([a, x, T("f64", 1.0, "d_output")],
          outs + [out("f64", dx, "d_x")],
          sub="grad", entry="lattice_grad_grad")
