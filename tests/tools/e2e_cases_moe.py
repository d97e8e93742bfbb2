"""e2e_cases_moe.py -- grouped_matmul (mixture of experts), its weight
gradient op grouped_matmul_backward_weight, and dequant_matmul, forward
values (language.md 6.8, 6.9).

grouped_matmul: uneven routing with an expert that gets no rows (its
weight gradient is zero), expert ids of every index dtype (i32, i64,
f32 with integral values), a workload split across threads (run at 1,
2, 3 and 7 threads: bit-identical); an id outside [0, E) (too large,
negative, non-integral f32) returns RLX_ERR_INDEX. dequant_matmul: one
scale per column and per group of rows (several groups), x with batch
dims, more columns than one dequantized panel (256). References: NumPy
float64 on the rounded inputs. Gradients are in tests/gradcheck/.
"""
import numpy as np

from e2e_lib import T, case, out, outs_str, uni

ERR_INDEX = "1"  # RLX_ERR_INDEX in rlxrt.h


def gm_ref(x, w, e):
    return np.stack([x[i] @ w[e[i]] for i in range(len(e))]) \
        if len(e) else np.zeros((0, w.shape[2]))


def gmbw_ref(x, dy, e, n_exp):
    dw = np.zeros((n_exp, x.shape[1], dy.shape[1]))
    for i in range(len(e)):
        dw[e[i]] += np.outer(x[i], dy[i])
    return dw


def route(rng, t, n_exp, empty):
    """Skewed expert ids in [0, n_exp), none equal to `empty`."""
    p = np.array([0.5 ** j for j in range(n_exp)])
    p[empty] = 0
    return rng.choice(n_exp, size=t, p=p / p.sum())


def _gm_case(name, dt, idt, t, k, n, n_exp, threads, ret_t=False):
    """ret_t: also return the transposed weight (then not folded into
    the runtime call's strides, fuse.c)."""
    @case(name)
    def _(c, rng):
        x = T(dt, uni(rng, (t, k)), "x")
        w = T(dt, uni(rng, (n_exp, k, n)), "w")
        e = T(idt, route(rng, t, n_exp, n_exp - 2), "e")
        dy = T(dt, uni(rng, (t, n)), "dy")
        wt = T(dt, uni(rng, (n_exp, n, k)), "wt")
        ev = e.v.astype(np.int64)
        wtt = wt.v.transpose(0, 2, 1)
        outs = [out(dt, gm_ref(x.v, w.v, ev), "y"),
                out(dt, gmbw_ref(x.v, dy.v, ev, n_exp), "dw"),
                out(dt, gm_ref(x.v, wtt, ev), "yt")]
        if ret_t:
            outs.append(out(dt, wtt, "wtt"))
        c.graph([x, w, e, dy, wt],
                "%%y = grouped_matmul(%%x, %%w, %%e)\n"
                "%%dw = grouped_matmul_backward_weight(%%x, %%dy, %%e, "
                "shape=[%d, %d, %d])\n"
                "%%wtt = transpose(%%wt, perm=[0, 2, 1])\n"
                "%%yt = grouped_matmul(%%x, %%wtt, %%e)" % (n_exp, k, n),
                outs_str(outs),
                comment="grouped_matmul and its weight gradient, %s ids, "
                "skewed routing;\nexpert %d gets no rows; w given "
                "transposed (%s)" % (idt, n_exp - 2,
                                     "returned too" if ret_t else "folded"))
        c.run([x, w, e, dy, wt], outs, args=["--threads", threads])


_gm_case("moe_grouped_f32", "f32", "i32", 37, 12, 9, 5, "1,2,3")
_gm_case("moe_grouped_f64", "f64", "i64", 29, 7, 11, 4, "1,2,3", True)
_gm_case("moe_grouped_fids", "f32", "f32", 23, 5, 6, 3, "1,2")
_gm_case("moe_grouped_threads", "f32", "i32", 700, 96, 80, 8,
         "1,2,3,7,1")


@case()
def moe_bad_expert(c, rng):
    x = T("f32", uni(rng, (4, 3)), "x")
    w = T("f32", uni(rng, (3, 3, 2)), "w")
    c.graph([x, w, T("i32", [0, 1, 2, 0], "e"),
             T("f32", [0, 1, 2, 0], "f")],
            "%y = grouped_matmul(%x, %w, %e)\n"
            "%z = grouped_matmul(%x, %w, %f)", "%y, %z",
            comment="an expert id outside [0, E) returns RLX_ERR_INDEX")
    for sub, e, f in (("hi", [0, 3, 1, 0], [0, 1, 2, 0]),
                      ("neg", [0, 1, -1, 0], [0, 1, 2, 0]),
                      ("fhi", [0, 1, 2, 0], [0, 1, 3, 0]),
                      ("frac", [0, 1, 2, 0], [0, 1.5, 2, 0])):
        c.run([x, w, T("i32", e, "e"), T("f32", f, "f")], [], sub=sub,
              args=["--expect", ERR_INDEX, "--null-ws"])


def dq_ref(x, w, s, g):
    wf = w.astype(np.float64)
    if g:
        wf = wf * np.repeat(s, g, axis=0)
    else:
        wf = wf * s
    return x @ wf


def _dq_case(dt):
    @case("dequant_matmul_" + dt)
    def _(c, rng):
        k, n, g = 20, 300, 5
        x = T(dt, uni(rng, (3, 4, k)), "x")
        w = T("i8", rng.integers(-128, 128, (k, n)), "w")
        s = T(dt, uni(rng, (n,), 0.001, 0.05), "s")
        gs = T(dt, uni(rng, (k // g, n), 0.001, 0.05), "gs")
        v = T(dt, uni(rng, (k,)), "v")
        ins = [x, w, s, gs, v]
        outs = [out(dt, dq_ref(x.v, w.v, s.v, 0), "y"),
                out(dt, dq_ref(x.v, w.v, gs.v, g), "yg"),
                out(dt, dq_ref(v.v, w.v, gs.v, g), "yv")]
        c.graph(ins, "%%y = dequant_matmul(%%x, %%w, %%s)\n"
                "%%yg = dequant_matmul(%%x, %%w, %%gs, group_size=%d)\n"
                "%%yv = dequant_matmul(%%v, %%w, %%gs, group_size=%d)"
                % (g, g), outs_str(outs),
                comment="dequant_matmul: one scale per column, and per "
                "group of %d rows (%d groups);\nx with batch dims and a "
                "vector x; %d columns: two dequantized panels"
                % (g, k // g, n))
        c.run(ins, outs, args=["--threads", "1,2,3"])


_dq_case("f32")
_dq_case("f64")


def _half_case(op):
    """f16 is not compiled: a diagnostic naming the op (the references
    are written for when it is)."""
    @case("moe_f16_" + op, diag=r"%s: x must have a dtype the op compiles for "
          r"\(f32, f64\), got f16" % op)
    def _(c, rng):
        x = T("f16", uni(rng, (3, 4)), "x")
        if op == "grouped_matmul":
            w = T("f16", uni(rng, (2, 4, 5)), "w")
            e = T("i32", [1, 0, 1], "e")
            ins, ref = [x, w, e], gm_ref(x.v, w.v, e.v)
            body = "%y = grouped_matmul(%x, %w, %e)"
        else:
            w = T("i8", rng.integers(-128, 128, (4, 5)), "w")
            s = T("f16", uni(rng, (5,), 0.01, 0.05), "s")
            ins, ref = [x, w, s], dq_ref(x.v, w.v, s.v, 0)
            body = "%y = dequant_matmul(%x, %w, %s)"
        outs = [out("f16", ref, "y")]
        c.graph(ins, body, "%y", comment="%s in f16: not compiled "
                "(diagnostic naming the op)" % op)
        c.run(ins, outs)


_half_case("grouped_matmul")
_half_case("dequant_matmul")


@case()
def moe_empty(c, rng):
    """Zero-size edges: no rows (y empty, dw zeros) and K = 0 (zeros)."""
    x = T("f32", np.zeros((0, 3)), "x")
    w = T("f32", uni(rng, (2, 3, 4)), "w")
    e = T("i32", np.zeros((0,), np.int32), "e")
    dy = T("f32", np.zeros((0, 4)), "dy")
    x0 = T("f32", np.zeros((2, 0)), "x0")
    q0 = T("i8", np.zeros((0, 4), np.int8), "q0")
    s = T("f32", uni(rng, (4,), 0.01, 0.05), "s")
    ins = [x, w, e, dy, x0, q0, s]
    outs = [out("f32", np.zeros((0, 4)), "y"),
            out("f32", np.zeros((2, 3, 4)), "dw"),
            out("f32", np.zeros((2, 4)), "z")]
    c.graph(ins, "%y = grouped_matmul(%x, %w, %e)\n"
            "%dw = grouped_matmul_backward_weight(%x, %dy, %e, "
            "shape=[2, 3, 4])\n"
            "%z = dequant_matmul(%x0, %q0, %s)", outs_str(outs),
            comment="no rows: an empty result and a zero weight gradient; "
            "K = 0: zeros")
    c.run(ins, outs, args=["--threads", "1,2"])
