"""ir_eval.py -- a small NumPy interpreter of printed .rlx IR.

It gives the gradient-check suite an independent way to evaluate the
graphs rlxc's passes produce (rlxc --grad --emit=ir), so the VJP rules
are checked numerically even where native code generation of an op is
missing, and so a wrong number can be blamed on AD or on codegen.
It reads the canonical printer output (one statement per line, every
definition annotated with its type) and covers the ops that reverse
mode emits. Values are computed in the declared dtypes (f32 in
float32, f64 in float64). The elementwise ops' functions and
derivatives come from tests/tools/op_refs.py, the ops of a family
module's EVAL table from tests/families/. Needs only NumPy.

Entry points: parse_module(text) -> {name: Graph};
run_graph(graphs, name, inputs) -> list of outputs.
"""
import math
import os
import re
import sys

import numpy as np

_TOOLS = os.path.join(os.path.dirname(os.path.dirname(
    os.path.abspath(__file__))), "tools")
if _TOOLS not in sys.path:
    sys.path.insert(0, _TOOLS)
import op_refs  # noqa: E402  (the elementwise ops' facts)
sys.path.insert(0, os.path.dirname(_TOOLS))
import families  # noqa: E402  (the op families' semantics)

NP = {"f32": np.float32, "f64": np.float64, "i8": np.int8, "u8": np.uint8,
      "i32": np.int32, "i64": np.int64, "bool": np.bool_,
      "c64": np.complex64}


class Graph:
    def __init__(self, name):
        self.name, self.args, self.stmts, self.rets = name, [], [], []
        self.params = []  # names of the `param` arguments


def parse_type(s):
    m = re.match(r"\s*(\w+)\[([^\]]*)\]", s)
    dims = [int(d) for d in m.group(2).split(",") if d.strip()]
    return m.group(1), tuple(dims)


def split_top(s):
    """Split s at top-level commas."""
    parts, depth, cur = [], 0, ""
    for ch in s:
        if ch in "([":
            depth += 1
        elif ch in ")]":
            depth -= 1
        if ch == "," and depth == 0:
            parts.append(cur.strip())
            cur = ""
        else:
            cur += ch
    if cur.strip():
        parts.append(cur.strip())
    return parts


def parse_value(v):
    v = v.strip()
    if v.startswith("["):
        return [int(x) for x in v[1:-1].split(",") if x.strip()]
    if v in ("true", "false"):
        return v == "true"
    if v.startswith("@"):
        return ("graph", v[1:])
    try:
        return int(v)
    except ValueError:
        pass
    try:
        return float(v)
    except ValueError:
        return v  # enum word or dtype


def parse_const(rest):
    """'f32[2] [1, 2]' or 'f32[] 0.5' -> (dtype, shape, values, splat)."""
    m = re.match(r"\s*const\s+(\w+\[[^\]]*\])\s+(.*)$", rest)
    dt, shape = parse_type(m.group(1))
    lit = m.group(2).strip()

    def num(x):
        x = x.strip()
        return float(x == "true") if x in ("true", "false") else float(x)
    if lit.startswith("["):
        vals = [num(x) for x in lit[1:-1].split(",") if x.strip()]
        return dt, shape, vals, False
    return dt, shape, [num(lit)], True


def parse_module(text):
    graphs, g = {}, None
    for raw in text.splitlines():
        line = raw.split("//")[0].strip()
        if not line:
            continue
        m = re.match(r"graph\s+(\w+)\s*\{", line)
        if m:
            g = Graph(m.group(1))
            graphs[g.name] = g
            continue
        if line == "}":
            g = None
            continue
        m = re.match(r"(input|param)\s+%([\w.]+)\s*:\s*(.*)$", line)
        if m:
            g.args.append((m.group(2), parse_type(m.group(3))))
            if m.group(1) == "param":
                g.params.append(m.group(2))
            continue
        m = re.match(r"return\s+(.*)$", line)
        if m:
            g.rets = [r.strip()[1:] for r in m.group(1).split(",")]
            continue
        m = re.match(r"%([\w.]+)\s*=\s*(.*?)\s*:\s*(\w+\[[^\]]*\])\s*$", line)
        if not m:
            raise ValueError("ir_eval: cannot parse: " + raw)
        name, rhs, ty = m.group(1), m.group(2), parse_type(m.group(3))
        if rhs.startswith("const "):
            g.stmts.append((name, "const", parse_const(rhs), {}, ty))
            continue
        m2 = re.match(r"(\w+)\((.*)\)$", rhs)
        op, args = m2.group(1), split_top(m2.group(2))
        ops, attrs = [], {}
        for a in args:
            if re.match(r"^\w+=", a):
                k, v = a.split("=", 1)
                attrs[k] = parse_value(v)
            else:
                ops.append(a)
        g.stmts.append((name, op, ops, attrs, ty))
    return graphs


# ---- op semantics ----

FAMILY = families.semantics()  # {op: fn(op, ins, attrs)}: tests/families/
_act = op_refs.act  # (f(x), f'(x)) in float64 of an activation kind
UNARY = op_refs.UNARY  # f(x) in float64 (round: in its own dtype, below)
BINARY = {op: r.np for op, r in op_refs.BINARY.items()}
COMPARE = {op: r.np for op, r in op_refs.COMPARE.items()}


def _axes(a, rank):
    ax = a.get("axes")
    if ax is None:
        return tuple(range(rank))
    return tuple(sorted(x % rank for x in ax))


def _reduce(op, x, a):
    ax, keep = _axes(a, x.ndim), a.get("keep_dims", False)
    f = {"reduce_sum": np.sum, "reduce_mean": np.mean, "reduce_max": np.max,
         "reduce_min": np.min, "reduce_prod": np.prod}[op]
    return f(x, axis=ax, keepdims=keep)


def _softmax(x, axis):
    e = np.exp(x - x.max(axis=axis, keepdims=True))
    return e / e.sum(axis=axis, keepdims=True)


def _cumsum(x, axis, excl, reverse):
    if reverse:
        x = np.flip(x, axis)
    y = np.cumsum(x, axis=axis)
    if excl:
        y = y - x
    return np.flip(y, axis) if reverse else y


def _log_softmax(x, axis):
    """(x - max) - log sum exp(x - max): no cancellation for huge x."""
    m = x.max(axis=axis, keepdims=True)
    return (x - m) - np.log(np.exp(x - m).sum(axis=axis, keepdims=True))


def _sce(l, lab):
    """(max - l[label]) + log sum exp(l - max), never lse - l[label]."""
    m = l.max(axis=1)
    ls = np.log(np.exp(l - m[:, None]).sum(axis=1))
    return (m - l[np.arange(l.shape[0]), lab.astype(np.int64)]) + ls


def _scatter(dy, idx, axis, shape):
    out = np.zeros(shape, dtype=dy.dtype)
    idx = idx.astype(np.int64)
    pre = (slice(None),) * axis
    flat = idx.reshape(-1)
    dyr = dy.reshape(dy.shape[:axis] + (flat.size,) +
                     dy.shape[axis + idx.ndim:])
    for k, i in enumerate(flat):
        out[pre + (i,)] += dyr[pre + (k,)]
    return out


def _solve(a, b, batched):
    if b.ndim == a.ndim - 1:
        return np.linalg.solve(a, b[..., None])[..., 0]
    return np.linalg.solve(a, b)


def _scan(graphs, a, ins, ty):
    body = graphs[a["body"][1]]
    nb = a.get("num_bcast", 0)
    carry, bc, xs = ins[0], ins[1:1 + nb], ins[1 + nb:]
    length = a.get("length", xs[0].shape[0] if xs else 0)
    steps = range(length)
    if a.get("reverse", False):  # t = L-1 ... 0; row t: carry after t
        steps = reversed(steps)
    traj = [None] * length
    for t in steps:
        carry = run_graph(graphs, body.name,
                          [carry] + list(bc) + [x[t] for x in xs])[0]
        traj[t] = carry
    if a.get("save_trajectory", False):
        return np.stack(traj) if traj else np.zeros(ty[1])
    return carry


def _fake_quant(op, ins, a):
    """fake_quantize* ops (ops-detail.md "Quantization"), float64: Q =
    2^(bits-1)-1, S = max(scale, 1e-12), half-to-even rounding."""
    dt = ins[0].dtype
    x = ins[0].astype(np.float64)
    q = 2.0 ** (a.get("bits", 8) - 1) - 1
    ax = a.get("axis")
    shape = [1] * x.ndim
    if ax is not None:
        ax %= x.ndim
        shape[ax] = x.shape[ax]
    other = tuple(i for i in range(x.ndim) if i != ax)
    if op.startswith("fake_quantize_lsq"):
        s = np.maximum(ins[1].astype(np.float64).reshape(shape), 1e-12)
    else:  # clip range rg = Q S, exactly max|x| at the largest element
        m = np.abs(x).max(axis=other, keepdims=True) if x.size else 1.0
        rg = np.maximum(m, q * 1e-12)
        s = rg / q
    z = x / s
    r = np.clip(np.round(z), -q, q)
    inside = np.abs(z) <= q
    if op in ("fake_quantize", "fake_quantize_lsq"):
        return (r * s).astype(dt)
    dy = ins[-1].astype(np.float64)
    if op == "fake_quantize_lsq_backward_x":
        return np.where(inside, dy, 0).astype(dt)
    if op == "fake_quantize_lsq_backward_scale":
        psi = r - np.where(inside, z, 0)
        if a.get("grad_scale", False):
            psi = psi / math.sqrt(x.size / (x.shape[ax] if ax is not None
                                            else 1) * q)
        ds = (psi * dy).sum(axis=other)
        return ds.reshape(ins[1].shape).astype(dt)
    ste = a.get("ste", "identity")
    m = {"identity": lambda: 1.0,
         "clipped": lambda: np.abs(x) <= rg,
         "tanh": lambda: 1 - np.tanh(z) ** 2,
         "hardtanh": lambda: np.maximum(0, 1 - np.abs(x / rg))}[ste]()
    return (dy * m).astype(dt)


def _moe(op, ins, a):
    """grouped_matmul, grouped_matmul_backward_weight, dequant_matmul."""
    if op == "dequant_matmul":
        x, w, s = ins
        g = a.get("group_size", w.shape[0])
        return x @ (w.astype(x.dtype) * np.repeat(s.reshape(-1, w.shape[1]),
                                                  g, axis=0))
    e = ins[2].astype(np.int64)
    if op == "grouped_matmul":
        return np.einsum("tk,tkn->tn", ins[0], ins[1][e])
    dw = np.zeros(a["shape"], ins[0].dtype)
    np.add.at(dw, e, np.einsum("tk,tn->tkn", ins[0], ins[1]))
    return dw


def _seq(op, ins):
    """selective_scan / gated_delta_net: the recurrence, a loop over time
    (language.md 6.7)."""
    dt = ins[0].dtype
    x = [np.asarray(v, np.float64) for v in ins]
    if op == "selective_scan":
        xs, d, A, B, C = x
        st = np.zeros((xs.shape[0], A.shape[0], A.shape[1]))
        y = np.zeros(xs.shape)
        for t in range(xs.shape[1]):
            dd = d[:, t, :, None]
            st = np.exp(dd * A) * st + dd * B[:, t, None, :] * \
                xs[:, t, :, None]
            y[:, t] = (st * C[:, t, None, :]).sum(-1)
        return y.astype(dt)
    q, k, v, g, beta = x
    n = q.shape[3]
    S = np.zeros(q.shape[:1] + q.shape[2:3] + (n, n))
    o = np.zeros(q.shape)
    for t in range(q.shape[1]):
        S = np.exp(g[:, t])[..., None, None] * S
        sk = np.einsum("bhij,bhi->bhj", S, k[:, t])
        dv = (v[:, t] - sk) * beta[:, t][..., None]
        S = S + k[:, t][..., :, None] * dv[..., None, :]
        o[:, t] = np.einsum("bhij,bhi->bhj", S, q[:, t]) / math.sqrt(n)
    return o.astype(dt)


def _transformer(ins, a):
    """fused_transformer_layer (the forward graph keeps it unless code is
    generated): post-norm layer from the attention and norm above."""
    x = [v.astype(np.float64) for v in ins[:13]]
    h, e = x[0], x[0].shape[2]
    qkv = h @ x[1] + x[2]
    att = FAMILY["attention"]("attention", [qkv[..., :e], qkv[..., e:2 * e],
                                   qkv[..., 2 * e:], ins[13]],
                     {"heads": a["heads"], "mask": "custom"})

    def ln(y, g, b, eps):
        return FAMILY["layer_norm"]("layer_norm", [y, g, b], {"eps": eps})
    h1 = ln(att @ x[3] + x[4] + h, x[5], x[6], a.get("eps1", 1e-12))
    f = _act(a.get("activation", "gelu"), h1 @ x[7] + x[8])[0]
    y = ln(f @ x[9] + x[10] + h1, x[11], x[12], a.get("eps2", 1e-12))
    return y.astype(ins[0].dtype)


def apply(graphs, op, ins, a, ty):
    if op in FAMILY:
        return FAMILY[op](op, ins, a)
    if op.startswith("fake_quantize"):
        return _fake_quant(op, ins, a)
    if op in ("selective_scan", "gated_delta_net"):
        return _seq(op, ins)
    if op == "fused_transformer_layer":
        return _transformer(ins, a)
    dt = NP[ty[0]]
    if op == "neg":  # also c64
        return np.negative(ins[0])
    if op in ("round",):
        return np.round(ins[0])
    if op in UNARY:
        return UNARY[op].np(ins[0].astype(np.float64))
    if op in ("stop_gradient",):
        return ins[0]
    if op in BINARY:
        return BINARY[op](ins[0], ins[1])
    if op in COMPARE:
        return COMPARE[op](ins[0], ins[1])
    if op == "where":
        return np.where(ins[0] != 0, ins[1], ins[2])
    if op == "cast":
        x = ins[0]
        if np.issubdtype(dt, np.integer) and np.issubdtype(x.dtype,
                                                           np.floating):
            x = np.trunc(np.nan_to_num(x))
        return x.astype(dt)
    if op == "conjugate":
        return np.conj(ins[0])
    if op == "real":
        return np.real(ins[0])
    if op == "imag":
        return np.imag(ins[0])
    if op == "complex":
        return ins[0] + 1j * ins[1]
    if op == "complex_norm_sq":
        return (np.real(ins[0]) ** 2 + np.imag(ins[0]) ** 2)
    if op == "complex_norm_sq_backward":
        return ins[1] * ins[0]
    if op == "matmul":
        return np.matmul(ins[0], ins[1])
    if op in ("log_mel", "log_mel_backward"):
        z = np.matmul(ins[0], ins[1])
        eps = z.dtype.type(1e-10)
        if op == "log_mel":
            return np.log(np.maximum(z, eps))
        gz = np.where(z >= eps, ins[2] / np.where(z >= eps, z, 1), 0)
        return np.matmul(gz, ins[1].T).astype(z.dtype)
    if op in ("dense_solve", "batched_dense_solve"):
        return _solve(ins[0], ins[1], op.startswith("batched"))
    if op.startswith("reduce_"):
        return _reduce(op, ins[0], a)
    if op == "softmax":
        return _softmax(ins[0], a.get("axis", -1))
    if op == "log_softmax":
        return _log_softmax(ins[0].astype(np.float64), a.get("axis", -1))
    if op in ("cumsum", "cumsum_backward"):
        return _cumsum(ins[0], a.get("axis", -1) % ins[0].ndim,
                       a.get("exclusive", False), op == "cumsum_backward")
    if op == "softmax_cross_entropy":
        return _sce(ins[0].astype(np.float64), ins[1])
    if op == "softmax_cross_entropy_backward":
        l, lab, d = ins
        oh = np.eye(l.shape[1])[lab.astype(np.int64)]
        return (_softmax(l.astype(np.float64), 1) - oh) * d[:, None]
    if op == "relu_backward":
        return ins[1] * (ins[0] > 0)
    if op == "activation_backward":
        return ins[1] * _act(a["kind"], ins[0])[1]
    if op == "reshape":
        return ins[0].reshape(ty[1])
    if op == "transpose":
        return np.transpose(ins[0], a["perm"])
    if op == "expand":
        return np.broadcast_to(ins[0], a["shape"])
    if op == "concat":
        return np.concatenate(ins, axis=a.get("axis", 0))
    if op == "narrow":
        ax = a.get("axis", 0) % ins[0].ndim
        s = (slice(None),) * ax + (slice(a["start"], a["start"] + a["len"]),)
        return ins[0][s]
    if op == "gather":
        return np.take(ins[0], ins[1].astype(np.int64), axis=a.get("axis", 0))
    if op == "gather_backward":
        return _scatter(ins[0], ins[1], a.get("axis", 0) % len(a["shape"]),
                        tuple(a["shape"]))
    if op == "scatter_add":
        return _scatter(ins[0], ins[1], 0, tuple(a["shape"]))
    if op in ("grouped_matmul", "grouped_matmul_backward_weight",
              "dequant_matmul"):
        return _moe(op, ins, a)
    if op == "scan":
        return _scan(graphs, a, ins, ty)
    if op == "if":
        br = a["then"] if bool(np.asarray(ins[0]) != 0) else a["else"]
        return run_graph(graphs, br[1], ins[1:])[0]
    if op == "while":
        c, n = list(ins), 0
        while (n < a.get("max_iterations", 1 << 30) and
               bool(np.asarray(run_graph(graphs, a["cond"][1], c)[0]) != 0)):
            c = run_graph(graphs, a["body"][1], c)
            n += 1
        return c[0]
    if op == "custom_fn":
        return run_graph(graphs, a["fwd"][1], ins)[0]
    raise NotImplementedError("ir_eval: op '%s'" % op)


def operand(env, s, ty_hint):
    if s.startswith("%"):
        return env[s[1:]]
    return np.array(parse_value(s))  # inline literal


def run_graph(graphs, name, inputs):
    g = graphs[name]
    env = {}
    for (n, (dt, shape)), v in zip(g.args, inputs):
        env[n] = np.asarray(v, dtype=NP[dt]).reshape(shape)
    for name_, op, ops, attrs, ty in g.stmts:
        dt = NP[ty[0]]
        if op == "const":
            cdt, shape, vals, splat = ops
            v = np.full(shape, vals[0]) if splat else \
                np.array(vals).reshape(shape)
            env[name_] = v.astype(dt)
            continue
        ins = [operand(env, s, ty) for s in ops]
        # literal operands adopt the dtype of the other operands
        ref = next((x for x in ins if x.ndim or x.dtype != np.float64),
                   None)
        ins = [x.astype(ref.dtype) if (ref is not None and x.ndim == 0 and
                                       ops[i][0] != "%" and
                                       ref.dtype != np.bool_) else x
               for i, x in enumerate(ins)]
        v = apply(graphs, op, ins, attrs, ty)
        v = np.asarray(v)
        if v.shape != ty[1]:
            raise ValueError("ir_eval: %s %s gave shape %s, IR says %s" %
                             (name_, op, v.shape, ty[1]))
        env[name_] = v.astype(dt)
    return [env[r] for r in g.rets]
