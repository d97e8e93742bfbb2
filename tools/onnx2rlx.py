#!/usr/bin/python3
"""onnx2rlx.py -- convert an ONNX graph into .rlx plus a safetensors file.

    onnx2rlx.py model.onnx -o model.rlx [--weights model.safetensors]
                [--name GRAPH] [--params] [--loss xent] [--shape NAME=N]...

Float initializers become `param` arguments (so `rlxc --grad`
differentiates them), named from their ONNX names sanitized to C
identifiers, and are written to the safetensors file (default: the .rlx
path with .safetensors), which the runtime's rlx_load_params reads.
Graph inputs become `input`s, graph outputs the `return`. Integer
initializers and Constant nodes become `const` values; shape
computations on constants (Shape, Gather, Unsqueeze, Concat, ...) are
folded (dynamic sizes kept as symbols).

Every ONNX node maps to rlx ops by its exact ONNX semantics (docs/onnx.md
lists the ops and what is rejected). A node whose op has no mapping is
reported as "onnx2rlx: error: unsupported op 'X' (node 'NAME')", every
such node, and the tool exits 1; an attribute or attribute value a
mapping does not implement is an error naming the node, never ignored.

Before converting, the model is checked (initializer data against its
dims, one definition per value, then onnx.checker), and so are the graph
name and the output paths; the outputs are built in memory and written
only when all is well. Every error is one line "onnx2rlx: error: ..."
naming the node or value, exit 1, no file written. An unexpected
exception is "onnx2rlx: internal error: ...", exit 3, never a traceback.

--loss xent adds `input %labels: i64[N]` and returns first
reduce_mean(softmax_cross_entropy(OUT, labels)) for the first output OUT
[N, C] (logits or log-probabilities: softmax_cross_entropy of a
log_softmax output is the same NLL loss), then the graph's outputs.
--params prints the initializer -> param name table.
A symbolic dimension NAME of the graph inputs (ONNX `dim_param`, what
torch.onnx.export's dynamic_axes writes) becomes rlx's dynamic
dimension ?NAME (docs/dynamic-dims.md); --shape NAME<=N gives it the
bound N that code generation needs, --shape NAME=N fixes it to the
size N instead. A NAME no input uses is an error. Dynamic sizes are
copied through the ops (and a Reshape's 0, -1 or folded Shape entries);
a size computed from one (a product with a static factor, Shape's
value used as data) is an error naming it.

Uses only the standard library, NumPy and onnx (Debian: python3-onnx).
"""
import argparse
import json
import os
import re
import struct
import sys
import tempfile

import numpy as np

try:
    import onnx
    import onnx.checker
    import onnx.defs
    from onnx import numpy_helper, helper
except ImportError:  # pragma: no cover - reported to the user
    sys.stderr.write("onnx2rlx: the Python 'onnx' package is required "
                     "(Debian: apt-get install python3-onnx)\n")
    sys.exit(2)


class ConvertError(Exception):
    """A node (or the graph) uses something the converter rejects."""


# ONNX TensorProto element type -> (rlx dtype, numpy dtype, safetensors)
DTYPES = {
    1: ("f32", np.float32, "F32"),
    11: ("f64", np.float64, "F64"),
    10: ("f16", np.float16, "F16"),
    3: ("i8", np.int8, "I8"),
    2: ("u8", np.uint8, "U8"),
    6: ("i32", np.int32, "I32"),
    7: ("i64", np.int64, "I64"),
    9: ("bool", np.bool_, "BOOL"),
}
NP2RLX = {np.dtype(v[1]): v[0] for v in DTYPES.values()}
NP2ST = {np.dtype(v[1]): v[2] for v in DTYPES.values()}
NP_OF = {v[0]: v[1] for v in DTYPES.values()}
FLOATS = ("f32", "f64", "f16", "bf16")


def rlx_dtype_of(elem_type, what):
    if elem_type not in DTYPES:
        name = onnx.TensorProto.DataType.Name(elem_type) \
            if elem_type in onnx.TensorProto.DataType.values() else elem_type
        raise ConvertError("%s has element type %s, which rlx has no dtype "
                           "for" % (what, name))
    return DTYPES[elem_type][0]


class Sym:
    """A dynamic dimension: ONNX dim_param `onnx` as rlx's ?NAME
    (docs/dynamic-dims.md). Sizes holding one are only copied and
    compared; any arithmetic on it (a product, int(), an order) raises
    ConvertError naming it, never a wrong static size."""
    __slots__ = ("name", "onnx")

    def __init__(self, name, onnx_name):
        self.name, self.onnx = name, onnx_name

    def __eq__(self, o):
        return isinstance(o, Sym) and o.name == self.name

    def __ne__(self, o):
        return not self == o

    def __hash__(self):
        return hash(("?", self.name))

    def __str__(self):
        return "?" + self.name

    __repr__ = __str__

    def _no(self, *_):
        raise ConvertError(
            "the dynamic dimension %s (dim_param '%s') reaches a size "
            "computation the converter does not carry symbolically; fix it "
            "with --shape %s=N" % (self, self.onnx, self.onnx))

    __int__ = __index__ = __float__ = __neg__ = _no
    __add__ = __radd__ = __sub__ = __rsub__ = __mul__ = __rmul__ = _no
    __floordiv__ = __rfloordiv__ = __mod__ = __rmod__ = __truediv__ = _no
    __lt__ = __le__ = __gt__ = __ge__ = _no


def split_size(dims):
    """The product of dims as (its symbols' names sorted, the static
    factor)."""
    syms = sorted(d.name for d in dims if isinstance(d, Sym))
    return syms, int(np.prod([int(d) for d in dims if not isinstance(d, Sym)]))


def size_str(syms, p):
    return "*".join(["?" + x for x in syms] + ([str(p)] if p != 1 or not syms
                                               else []))


def size_prod(dims):
    """The product of dims as one dimension: an int, or a single Sym
    (rlx sizes like ?b*4 are not carried here)."""
    syms, p = split_size(dims)
    if not syms or p == 0:
        return p
    if len(syms) == 1 and p == 1:
        return next(d for d in dims if isinstance(d, Sym))
    raise ConvertError("the size %s (a product with a dynamic dimension) is "
                       "not carried by the converter; fix the dimension "
                       "with --shape NAME=N" % size_str(syms, p))


def dim_str(d, bounds=None):
    if isinstance(d, Sym):
        b = (bounds or {}).get(d.onnx)
        return "?%s<=%d" % (d.name, b) if b is not None else str(d)
    return str(int(d))


def type_str(dt, shape, bounds=None):
    return "%s[%s]" % (dt, ", ".join(dim_str(d, bounds) for d in shape))


def fmt_float(v):
    v = float(v)
    if v != v:
        return "nan"
    if v in (float("inf"), float("-inf")):
        return "inf" if v > 0 else "-inf"
    s = repr(v)
    return s if ("." in s or "e" in s) else s + ".0"


def fmt_elem(v, dt):
    if dt == "bool":
        return "true" if v else "false"
    if dt in FLOATS:
        return fmt_float(v)
    return str(int(v))


def norm_axis(axis, rank, what="axis"):
    a = int(axis)
    if not -rank <= a < rank:
        raise ConvertError("%s %d is out of range for rank %d"
                           % (what, a, rank))
    return a + rank if a < 0 else a


def bcast(s1, s2):
    """NumPy broadcasting of two shapes (ONNX multidirectional)."""
    r = max(len(s1), len(s2))
    a = [1] * (r - len(s1)) + list(s1)
    b = [1] * (r - len(s2)) + list(s2)
    out = []
    for x, y in zip(a, b):
        if x != y and x != 1 and y != 1:
            raise ConvertError("shapes %s and %s do not broadcast"
                               % (list(s1), list(s2)))
        out.append(y if x == 1 else x)
    return out


class Converter:
    def __init__(self, model, src_name, sizes=None, bounds=None):
        self.model = model
        self.sizes = dict(sizes or {})  # --shape NAME=N: dim_param -> size
        self.bounds = dict(bounds or {})  # --shape NAME<=N: -> bound
        self.syms = {}  # rlx symbol name -> dim_param
        self.sizes_used = set()
        self.graph = model.graph
        self.src_name = src_name
        self.opset = 1
        for imp in model.opset_import:
            if imp.domain in ("", "ai.onnx"):
                self.opset = imp.version
        self.types = {}     # onnx name -> (rlx dtype, shape list)
        self.consts = {}    # onnx name -> np.ndarray (known values)
        self.params = {}    # onnx name -> np.ndarray (float initializers)
        self.param_of = {}  # onnx name -> the initializer it is (aliases)
        self.inputs = []    # onnx names of graph inputs
        self.rlx = {}       # onnx name -> rlx value name (emitted values)
        self.used_names = set()
        self.body = []
        self.used_params = set()

    # ------------------------------------------------------------ names
    def fresh(self, base):
        s = re.sub(r"[^A-Za-z0-9_]", "_", base).strip("_") or "v"
        s = re.sub(r"_+", "_", s)
        if s[0].isdigit():
            s = "v" + s
        if s in ("d_output", "labels", "loss"):
            s = s + "_"
        name, k = s, 2
        while name in self.used_names:
            name = "%s_%d" % (s, k)
            k += 1
        self.used_names.add(name)
        return name

    # ------------------------------------------------------ value access
    def has(self, name):
        return name in self.types

    def dtype(self, name):
        return self.types[name][0]

    def shape(self, name):
        return list(self.types[name][1])

    def const(self, name):
        """The value of name if it is a known non-param constant."""
        return self.consts.get(name)

    def need_const(self, name, what):
        v = self.const(name)
        if v is None:
            raise ConvertError("%s ('%s') must be a constant (an initializer "
                               "of integer type or a Constant node)"
                               % (what, name))
        return v

    def val(self, name):
        """The rlx operand for ONNX value name, emitting a const or
        marking a param used as needed."""
        if name in self.rlx:
            if name in self.param_of:
                self.used_params.add(self.param_of[name])
            return "%" + self.rlx[name]
        if name in self.consts:
            v = self.consts[name]
            if v.dtype == object:
                raise ConvertError(
                    "value '%s' holds the dynamic dimension %s (from Shape) "
                    "as data: rlx has no op that reads a size at run time; "
                    "fix it with --shape NAME=N" % (name, next(
                        x for x in v.reshape(-1) if isinstance(x, Sym))))
            dt = NP2RLX[v.dtype]
            rn = self.fresh(name)
            flat = v.reshape(-1)
            if flat.size > 0 and (flat == flat[0]).all() and \
                    not (v.dtype.kind == "f" and np.isnan(flat[0])):
                lit = fmt_elem(flat[0], dt)
            else:
                lit = "[%s]" % ", ".join(fmt_elem(x, dt) for x in flat)
            self.body.append("  %%%s = const %s %s" % (rn, type_str(
                dt, v.shape), lit))
            self.rlx[name] = rn
            return "%" + rn
        raise ConvertError("value '%s' is not defined" % name)

    def define(self, out, expr, dt, shape):
        """Emit %out = expr : dt[shape] for ONNX output name out."""
        rn = self.fresh(out)
        self.body.append("  %%%s = %s : %s" % (rn, expr, type_str(dt, shape)))
        self.rlx[out] = rn
        self.types[out] = (dt, list(shape))
        return "%" + rn

    def tmp(self, expr, dt, shape, hint):
        rn = self.fresh(hint)
        self.body.append("  %%%s = %s : %s" % (rn, expr, type_str(dt, shape)))
        return "%" + rn

    def alias(self, out, src):
        """out is the same value as src (Identity, no-op reshape)."""
        self.types[out] = self.types[src]
        if src in self.consts and src not in self.params:
            self.consts[out] = self.consts[src]
        else:
            if src not in self.rlx:
                self.val(src)
            self.rlx[out] = self.rlx[src]
            if src in self.param_of:
                self.param_of[out] = self.param_of[src]

    def set_const(self, out, value):
        value = np.asarray(value)
        if value.dtype == object:  # sizes from Shape with dynamic ones
            self.consts[out] = value
            self.types[out] = ("i64", list(value.shape))
            return
        if value.dtype not in NP2RLX:
            raise ConvertError("folded constant '%s' has dtype %s"
                               % (out, value.dtype))
        self.consts[out] = value
        self.types[out] = (NP2RLX[value.dtype], list(value.shape))

    # ------------------------------------------------------------- setup
    def load(self):
        g = self.graph
        inits = {i.name for i in g.initializer}
        for init in g.initializer:
            arr = numpy_helper.to_array(init)
            if arr.dtype not in NP2RLX:
                raise ConvertError("initializer '%s' has dtype %s, which "
                                   "rlx has no dtype for"
                                   % (init.name, arr.dtype))
            arr = np.array(arr, order="C")  # (keeps rank 0)
            self.types[init.name] = (NP2RLX[arr.dtype], list(arr.shape))
            if arr.dtype.kind == "f":
                self.params[init.name] = arr
                self.param_of[init.name] = init.name
                self.rlx[init.name] = self.fresh(init.name)
            else:
                self.consts[init.name] = arr
        for vi in g.input:
            if vi.name in inits:   # keep_initializers_as_inputs exports
                continue
            tt = vi.type.tensor_type
            if not vi.type.HasField("tensor_type"):
                raise ConvertError("graph input '%s' is not a tensor"
                                   % vi.name)
            dt = rlx_dtype_of(tt.elem_type, "graph input '%s'" % vi.name)
            if not tt.HasField("shape"):
                raise ConvertError("graph input '%s' has no shape (static "
                                   "shapes only)" % vi.name)
            dims = [self.input_dim(vi.name, i, d)
                    for i, d in enumerate(tt.shape.dim)]
            self.types[vi.name] = (dt, dims)
            self.rlx[vi.name] = self.fresh(vi.name)
            self.inputs.append(vi.name)
        for sub in ("sparse_initializer",):
            if len(getattr(g, sub, [])):
                raise ConvertError("sparse initializers are not supported")
        unused = sorted((set(self.sizes) | set(self.bounds)) -
                        self.sizes_used)
        if unused:
            raise ConvertError("--shape %s=...: no graph input has the "
                               "dimension '%s'" % (unused[0], unused[0]))

    def input_dim(self, name, i, d):
        """The size of dimension i of graph input name: its dim_value, or
        the --shape size of its dim_param."""
        if d.HasField("dim_value") and d.dim_value >= 0:
            return d.dim_value
        if d.dim_param and d.dim_param in self.sizes:
            self.sizes_used.add(d.dim_param)
            return self.sizes[d.dim_param]
        if d.dim_param:  # a dynamic dimension, ?NAME (a C identifier)
            self.sizes_used.add(d.dim_param)
            rn = re.sub(r"[^A-Za-z0-9_]", "_", d.dim_param)
            rn = "d" + rn if rn[0].isdigit() else rn
            if self.syms.setdefault(rn, d.dim_param) != d.dim_param:
                raise ConvertError(
                    "the dynamic dimensions '%s' and '%s' both become ?%s"
                    % (self.syms[rn], d.dim_param, rn))
            return Sym(rn, d.dim_param)
        raise ConvertError(
            "graph input '%s' has a dimension %d of unknown size; rlx "
            "needs static shapes: export with fixed sizes" % (name, i))

    # --------------------------------------------------------- attributes
    def attrs(self, node, spec):
        """Attributes of node as a dict, with spec's defaults; any
        attribute spec does not name is an error (never ignored)."""
        out = dict(spec)
        for a in node.attribute:
            if a.name not in spec:
                raise ConvertError("attribute '%s' is not supported"
                                   % a.name)
            if a.type == onnx.AttributeProto.GRAPH or a.ref_attr_name:
                raise ConvertError("attribute '%s': graph or reference "
                                   "attributes are not supported" % a.name)
            v = helper.get_attribute_value(a)
            if isinstance(v, bytes):
                v = v.decode()
            out[a.name] = v
        return out

    def n_inputs(self, node, lo, hi):
        ins = list(node.input)
        while ins and ins[-1] == "":
            ins.pop()
        if not lo <= len(ins) <= hi:
            raise ConvertError("expected %d to %d inputs, got %d"
                               % (lo, hi, len(ins)))
        for x in ins:
            if x and not self.has(x):
                raise ConvertError("input '%s' is not defined" % x)
        return ins + [""] * (hi - len(ins))

    def one_output(self, node, allowed=1):
        outs = [o for o in node.output]
        for extra in outs[allowed:]:
            if extra and self.is_used(extra):
                raise ConvertError("output %d ('%s') is not supported"
                                   % (outs.index(extra), extra))
        return outs[0]

    def is_used(self, name):
        return name in self.consumers or name in self.out_names

    # -------------------------------------------------------------- run
    def convert(self, graph_name, loss):
        self.load()
        nodes = list(self.graph.node)
        self.out_names = {o.name for o in self.graph.output}
        # Readers of each value: for the GELU pattern and extra outputs.
        self.consumers = {}
        for n in nodes:
            for x in n.input:
                self.consumers.setdefault(x, []).append(n)
        nodes = fuse_erf_gelu(self, nodes)
        bad = []
        for n in nodes:
            if n.domain not in ("", "ai.onnx") or n.op_type not in OPS:
                bad.append(n)
        if bad:
            msg = "\n".join(printable(
                "onnx2rlx: error: unsupported op '%s%s' (node '%s')"
                % (n.domain + "." if n.domain not in ("", "ai.onnx") else "",
                   n.op_type, n.name or "<unnamed>")) for n in bad)
            raise Unsupported(msg)
        for n in nodes:
            try:
                if all(self.has(x) for x in n.input if x) and \
                        self.try_fold(n):
                    continue
                OPS[n.op_type](self, n)
            except ConvertError as e:
                raise ConvertError("node '%s' (%s): %s"
                                   % (n.name or "<unnamed>", n.op_type, e))
        rets = []
        for o in self.graph.output:
            if not self.has(o.name):
                raise ConvertError("graph output '%s' is not computed"
                                   % o.name)
            rets.append(self.val(o.name))
        if loss:
            rets.insert(0, self.add_loss(loss))
        return self.assemble(graph_name, rets)

    def add_loss(self, loss):
        if loss != "xent":
            raise ConvertError("unknown --loss '%s' (known: xent)" % loss)
        out = self.graph.output[0].name
        dt, shp = self.types[out]
        if len(shp) != 2 or dt not in FLOATS:
            raise ConvertError("--loss xent needs a float first output "
                               "[N, C], got %s" % type_str(dt, shp))
        self.labels_shape = [shp[0]]
        self.used_names.add("labels")
        self.used_names.add("loss")
        x = self.tmp("softmax_cross_entropy(%s, %%labels)" % self.val(out),
                     dt, shp[:1], "xent")
        self.body.append("  %%loss = reduce_mean(%s) : %s"
                         % (x, type_str(dt, [])))
        return "%loss"

    def assemble(self, graph_name, rets):
        lines = ["// Generated by tools/onnx2rlx.py from %s (ONNX opset %d)."
                 % (self.src_name, self.opset),
                 "// Params: ONNX initializers, values in the safetensors "
                 "file written with it.",
                 "graph %s {" % graph_name]
        for name in self.inputs:
            dt, shp = self.types[name]
            lines.append("  input %%%s: %s" % (self.rlx[name],
                                               type_str(dt, shp,
                                                        self.bounds)))
        if getattr(self, "labels_shape", None) is not None:
            lines.append("  input %%labels: %s"
                         % type_str("i64", self.labels_shape, self.bounds))
        for init in self.graph.initializer:
            if init.name in self.used_params:
                dt, shp = self.types[init.name]
                lines.append("  param %%%s: %s  // %s" % (
                    self.rlx[init.name], type_str(dt, shp), init.name))
        lines += self.body
        lines.append("  return %s" % ", ".join(rets))
        lines.append("}")
        return "\n".join(lines) + "\n"

    def param_table(self):
        return [(self.rlx[i.name], i.name, self.params[i.name])
                for i in self.graph.initializer if i.name in self.used_params]

    # ----------------------------------------------------------- folding
    def try_fold(self, n):
        """Evaluate n in NumPy when its inputs are known non-param
        constants (or, for Shape, when the shape is static)."""
        if n.op_type == "Shape":
            return False  # op_Shape folds itself
        if n.op_type not in FOLD or n.domain not in ("", "ai.onnx"):
            return False
        ins = [x for x in n.input if x]
        if not ins or not all(x in self.consts and x not in self.params
                              for x in ins):
            return False
        vals = [self.consts[x] if x else None for x in n.input]
        out = FOLD[n.op_type](self, n, vals)
        self.set_const(n.output[0], out)
        return True


class Unsupported(Exception):
    pass


# ------------------------------------------------------------- Gelu(erf)
def fuse_erf_gelu(cv, nodes):
    """torch.onnx (opset < 20) exports F.gelu as
    Mul(Mul(x, Add(Erf(Div(x, sqrt2)), 1)), 0.5); replace each complete
    pattern by one Gelu node. An Erf outside the pattern stays (and is
    reported as unsupported)."""
    cvals = {}
    for n in nodes:
        if n.op_type == "Constant" and len(n.output) == 1:
            try:
                cvals[n.output[0]] = numpy_helper.to_array(
                    helper.get_attribute_value(n.attribute[0]))
            except Exception:
                pass
    for k, v in cv.consts.items():
        cvals[k] = v

    def scalar(name, want):
        v = cvals.get(name)
        return v is not None and v.size == 1 and \
            abs(float(v.reshape(-1)[0]) - want) <= 1e-6 * max(1, abs(want))

    def only_use(name):
        users = cv.consumers.get(name, [])
        return users[0] if len(users) == 1 and name not in cv.out_names \
            else None

    def other(n, name):
        a, b = n.input
        return b if a == name else a if b == name else None

    drop, repl = set(), {}
    for e in nodes:
        if e.op_type != "Erf" or len(e.input) != 1:
            continue
        d = next((n for n in nodes if e.input[0] in n.output), None)
        if d is None or d.op_type != "Div" or not scalar(d.input[1],
                                                          2 ** 0.5):
            continue
        x = d.input[0]
        if only_use(d.output[0]) is not e:
            continue
        a = only_use(e.output[0])
        if a is None or a.op_type != "Add" or \
                not scalar(other(a, e.output[0]), 1.0):
            continue
        m = only_use(a.output[0])
        if m is None or m.op_type != "Mul" or other(m, a.output[0]) != x:
            continue
        h = only_use(m.output[0])
        if h is None or h.op_type != "Mul" or \
                not scalar(other(h, m.output[0]), 0.5):
            continue
        g = helper.make_node("Gelu", [x], [h.output[0]],
                             name=e.name + "(erf pattern)")
        drop.update(id(n) for n in (d, e, a, m))
        repl[id(h)] = g
    return [repl.get(id(n), n) for n in nodes if id(n) not in drop]


# ------------------------------------------------------------- op table
OPS = {}
FOLD = {}


def op(*names):
    def reg(fn):
        for nm in names:
            OPS[nm] = fn
        return fn
    return reg


def fold(*names):
    def reg(fn):
        for nm in names:
            FOLD[nm] = fn
        return fn
    return reg


UNARY = {"Relu": "relu", "Sigmoid": "sigmoid", "Tanh": "tanh",
         "Exp": "exp", "Log": "log", "Sqrt": "sqrt", "Neg": "neg",
         "Abs": "abs", "Sin": "sin", "Cos": "cos", "Tan": "tan",
         "Atan": "atan"}
BINARY = {"Add": "add", "Sub": "sub", "Mul": "mul", "Div": "div",
          "Pow": "pow"}


@op(*UNARY)
def op_unary(cv, n):
    cv.attrs(n, {})
    (x,) = cv.n_inputs(n, 1, 1)
    dt = cv.dtype(x)
    if dt not in FLOATS:
        raise ConvertError("input must be a float tensor, got %s" % dt)
    cv.define(cv.one_output(n), "%s(%s)" % (UNARY[n.op_type], cv.val(x)),
              dt, cv.shape(x))


@op(*BINARY)
def op_binary(cv, n):
    cv.attrs(n, {})
    a, b = cv.n_inputs(n, 2, 2)
    if cv.dtype(a) != cv.dtype(b):
        raise ConvertError("operand dtypes differ: %s and %s"
                           % (cv.dtype(a), cv.dtype(b)))
    if n.op_type == "Div" and cv.dtype(a) not in FLOATS:
        raise ConvertError("integer Div (truncating) is not supported")
    if n.op_type == "Pow" and cv.dtype(a) not in FLOATS:
        raise ConvertError("integer Pow is not supported")
    shp = bcast(cv.shape(a), cv.shape(b))
    cv.define(cv.one_output(n), "%s(%s, %s)" % (BINARY[n.op_type], cv.val(a),
                                                cv.val(b)),
              cv.dtype(a), shp)


@fold("Add", "Sub", "Mul", "Div")
def fold_binary(cv, n, v):
    a, b = v
    if n.op_type == "Div" and a.dtype.kind in "iu":
        return (np.trunc(a / b)).astype(a.dtype)
    return {"Add": np.add, "Sub": np.subtract, "Mul": np.multiply,
            "Div": np.divide}[n.op_type](a, b).astype(a.dtype)


@op("Gelu")
def op_gelu(cv, n):
    at = cv.attrs(n, {"approximate": "none"})
    (x,) = cv.n_inputs(n, 1, 1)
    fn = {"none": "gelu", "tanh": "gelu_tanh"}.get(at["approximate"])
    if fn is None:
        raise ConvertError("approximate='%s' is not supported"
                           % at["approximate"])
    cv.define(cv.one_output(n), "%s(%s)" % (fn, cv.val(x)), cv.dtype(x),
              cv.shape(x))


@op("Identity")
def op_identity(cv, n):
    cv.attrs(n, {})
    (x,) = cv.n_inputs(n, 1, 1)
    cv.alias(cv.one_output(n), x)


@fold("Identity")
def fold_identity(cv, n, v):
    return v[0]


@op("Constant")
def op_constant(cv, n):
    if len(n.attribute) != 1:
        raise ConvertError("expected exactly one value attribute")
    a = n.attribute[0]
    if a.name == "value":
        v = numpy_helper.to_array(a.t)
    elif a.name in ("value_float", "value_floats"):
        v = np.array(helper.get_attribute_value(a), dtype=np.float32)
    elif a.name in ("value_int", "value_ints"):
        v = np.array(helper.get_attribute_value(a), dtype=np.int64)
    else:
        raise ConvertError("attribute '%s' is not supported" % a.name)
    cv.set_const(cv.one_output(n), np.array(v, order="C"))


@op("Shape")
def op_shape(cv, n):
    at = cv.attrs(n, {"start": 0, "end": None})
    (x,) = cv.n_inputs(n, 1, 1)
    shp = cv.shape(x)
    start, end = at["start"], at["end"]
    shp = shp[start:end] if end is not None else shp[start:]
    dyn = any(isinstance(d, Sym) for d in shp)  # kept as sizes (set_const)
    cv.set_const(cv.one_output(n), np.array(shp, dtype=object if dyn
                                            else np.int64))


@op("Cast")
def op_cast(cv, n):
    at = cv.attrs(n, {"to": 1, "saturate": 1})
    (x,) = cv.n_inputs(n, 1, 1)
    dt = rlx_dtype_of(at["to"], "Cast target")
    if dt == cv.dtype(x):
        cv.alias(cv.one_output(n), x)
        return
    raise ConvertError("Cast of a computed tensor (%s -> %s) is not "
                       "supported (rlx cast truncates and saturates float "
                       "-> int, ONNX does not define it)"
                       % (cv.dtype(x), dt))


@fold("Cast")
def fold_cast(cv, n, v):
    at = cv.attrs(n, {"to": 1, "saturate": 1})
    dt = rlx_dtype_of(at["to"], "Cast target")
    return v[0].astype(NP_OF[dt])


# ----- linear algebra
@op("MatMul")
def op_matmul(cv, n):
    cv.attrs(n, {})
    a, b = cv.n_inputs(n, 2, 2)
    dt = cv.dtype(a)
    if dt != cv.dtype(b) or dt not in FLOATS:
        raise ConvertError("operands must share a float dtype, got %s and "
                           "%s" % (dt, cv.dtype(b)))
    sa, sb = cv.shape(a), cv.shape(b)
    if not sa or not sb:
        raise ConvertError("MatMul operands must have rank >= 1")
    va, vb = cv.val(a), cv.val(b)
    # NumPy matmul: a 1-D operand gets a unit dim, removed afterwards.
    ea, eb = list(sa), list(sb)
    if len(sa) == 1:
        ea = [1] + sa
        va = cv.tmp("reshape(%s, shape=[%s])" % (va, ", ".join(map(str, ea))),
                    dt, ea, "mm_a")
    if len(sb) == 1:
        eb = sb + [1]
        vb = cv.tmp("reshape(%s, shape=[%s])" % (vb, ", ".join(map(str, eb))),
                    dt, eb, "mm_b")
    if ea[-1] != eb[-2]:
        raise ConvertError("inner dimensions differ: %s x %s" % (sa, sb))
    batch = bcast(ea[:-2], eb[:-2])
    full = batch + [ea[-2], eb[-1]]
    final = batch + ([ea[-2]] if len(sa) > 1 else []) + \
        ([eb[-1]] if len(sb) > 1 else [])
    out = cv.one_output(n)
    if final == full:
        cv.define(out, "matmul(%s, %s)" % (va, vb), dt, full)
    else:
        t = cv.tmp("matmul(%s, %s)" % (va, vb), dt, full, "mm")
        cv.define(out, "reshape(%s, shape=[%s])"
                  % (t, ", ".join(map(str, final))), dt, final)


@op("Gemm")
def op_gemm(cv, n):
    at = cv.attrs(n, {"alpha": 1.0, "beta": 1.0, "transA": 0, "transB": 0})
    a, b, c = cv.n_inputs(n, 2, 3)
    dt = cv.dtype(a)
    if dt not in FLOATS or cv.dtype(b) != dt or (c and cv.dtype(c) != dt):
        raise ConvertError("operands must share a float dtype")
    sa, sb = cv.shape(a), cv.shape(b)
    if len(sa) != 2 or len(sb) != 2:
        raise ConvertError("A and B must be 2-D, got %s and %s" % (sa, sb))
    va, vb = cv.val(a), cv.val(b)
    if at["transA"]:
        sa = sa[::-1]
        va = cv.tmp("transpose(%s, perm=[1, 0])" % va, dt, sa, "gemm_at")
    if at["transB"]:
        sb = sb[::-1]
        vb = cv.tmp("transpose(%s, perm=[1, 0])" % vb, dt, sb, "gemm_bt")
    if sa[1] != sb[0]:
        raise ConvertError("inner dimensions differ: %s x %s" % (sa, sb))
    shp = [sa[0], sb[1]]
    expr = "matmul(%s, %s)" % (va, vb)
    if at["alpha"] != 1.0:
        expr = "mul(%s, %s)" % (expr, fmt_float(at["alpha"]))
    if c and at["beta"] != 0.0:
        if bcast(cv.shape(c), shp) != shp:
            raise ConvertError("C %s does not broadcast to %s"
                               % (cv.shape(c), shp))
        vc = cv.val(c)
        if at["beta"] != 1.0:
            vc = "mul(%s, %s)" % (vc, fmt_float(at["beta"]))
        expr = "add(%s, %s)" % (expr, vc)
    cv.define(cv.one_output(n), expr, dt, shp)


# ----- softmax family
@op("Softmax", "LogSoftmax")
def op_softmax(cv, n):
    legacy = cv.opset < 13
    at = cv.attrs(n, {"axis": 1 if legacy else -1})
    (x,) = cv.n_inputs(n, 1, 1)
    dt, shp = cv.dtype(x), cv.shape(x)
    if dt not in FLOATS:
        raise ConvertError("input must be a float tensor")
    ax = norm_axis(at["axis"], len(shp))
    fn = "softmax" if n.op_type == "Softmax" else "log_softmax"
    out = cv.one_output(n)
    if not legacy or ax == len(shp) - 1:
        cv.define(out, "%s(%s, axis=%d)" % (fn, cv.val(x), ax), dt, shp)
        return
    # opset < 13: over the flattened dims [axis, rank).
    two = [size_prod(shp[:ax]), size_prod(shp[ax:])]
    t = cv.tmp("reshape(%s, shape=[%s, %s])" % (cv.val(x), two[0], two[1]),
               dt, two, "sm2d")
    t = cv.tmp("%s(%s, axis=1)" % (fn, t), dt, two, "sm")
    cv.define(out, "reshape(%s, shape=[%s])" % (t, ", ".join(map(str, shp))),
              dt, shp)


# ----- convolution and pooling
def spatial_pads(at, rank_sp):
    """(begin pads) for NOTSET/VALID auto_pad; SAME_* are rejected."""
    ap = at.get("auto_pad", "NOTSET")
    if ap == "VALID":
        return [0] * rank_sp, [0] * rank_sp
    if ap != "NOTSET":
        raise ConvertError("auto_pad=%s is not supported (use explicit "
                           "pads)" % ap)
    pads = list(at.get("pads") or [0] * (2 * rank_sp))
    if len(pads) != 2 * rank_sp:
        raise ConvertError("pads must have %d entries" % (2 * rank_sp))
    return pads[:rank_sp], pads[rank_sp:]


@op("Conv")
def op_conv(cv, n):
    at = cv.attrs(n, {"auto_pad": "NOTSET", "dilations": None, "group": 1,
                      "kernel_shape": None, "pads": None, "strides": None})
    x, w, b = cv.n_inputs(n, 2, 3)
    dt, sx, sw = cv.dtype(x), cv.shape(x), cv.shape(w)
    if len(sx) != 4 or len(sw) != 4:
        raise ConvertError("only 2-D convolution (NCHW input, 4-D weight) "
                           "is supported, got %s and %s" % (sx, sw))
    if at["kernel_shape"] is not None and \
            list(at["kernel_shape"]) != sw[2:]:
        raise ConvertError("kernel_shape %s differs from the weight's %s"
                           % (list(at["kernel_shape"]), sw[2:]))
    strides = list(at["strides"] or [1, 1])
    dil = list(at["dilations"] or [1, 1])
    beg, end = spatial_pads(at, 2)
    if beg != end:
        raise ConvertError("asymmetric pads %s are not supported (rlx "
                           "conv2d pads both sides equally)" % (beg + end))
    g = int(at["group"])
    if sx[1] % g or sw[0] % g or sw[1] * g != sx[1]:
        raise ConvertError("group %d does not fit input %s and weight %s"
                           % (g, sx, sw))
    oh = [(sx[2 + i] + 2 * beg[i] - dil[i] * (sw[2 + i] - 1) - 1)
          // strides[i] + 1 for i in range(2)]
    shp = [sx[0], sw[0]] + oh
    expr = "conv2d(%s, %s, stride=[%d, %d], padding=[%d, %d], " \
        "dilation=[%d, %d], groups=%d)" % (
            cv.val(x), cv.val(w), strides[0], strides[1], beg[0], beg[1],
            dil[0], dil[1], g)
    if b:
        if cv.shape(b) != [sw[0]]:
            raise ConvertError("bias must be [%d], got %s"
                               % (sw[0], cv.shape(b)))
        vb = cv.tmp("reshape(%s, shape=[%d, 1, 1])" % (cv.val(b), sw[0]),
                    dt, [sw[0], 1, 1], "conv_bias")
        expr = "add(%s, %s)" % (expr, vb)
    cv.define(cv.one_output(n), expr, dt, shp)


@op("MaxPool", "AveragePool")
def op_pool(cv, n):
    spec = {"auto_pad": "NOTSET", "ceil_mode": 0, "kernel_shape": None,
            "pads": None, "strides": None, "dilations": None}
    if n.op_type == "MaxPool":
        spec["storage_order"] = 0
    else:
        spec["count_include_pad"] = 0
    at = cv.attrs(n, spec)
    (x,) = cv.n_inputs(n, 1, 1)
    out = cv.one_output(n)   # MaxPool's Indices output must be unused
    dt, sx = cv.dtype(x), cv.shape(x)
    if len(sx) != 4:
        raise ConvertError("only 2-D pooling (NCHW input) is supported")
    k = list(at["kernel_shape"] or [])
    if len(k) != 2:
        raise ConvertError("kernel_shape must have 2 entries")
    s = list(at["strides"] or [1, 1])
    if list(at["dilations"] or [1, 1]) != [1, 1]:
        raise ConvertError("dilations other than 1 are not supported")
    if at.get("storage_order", 0) != 0:
        raise ConvertError("storage_order=1 is not supported")
    beg, end = spatial_pads(at, 2)
    if beg != end:
        raise ConvertError("asymmetric pads %s are not supported"
                           % (beg + end))
    for i in range(2):
        if beg[i] > k[i] // 2:
            raise ConvertError("pad %d exceeds half the kernel %d (rlx "
                               "requires every window to touch the input)"
                               % (beg[i], k[i]))
    if n.op_type == "AveragePool" and any(beg) and \
            not at["count_include_pad"]:
        raise ConvertError("count_include_pad=0 with non-zero pads is not "
                           "supported: rlx avg_pool2d divides by the full "
                           "kernel size (count_include_pad=1)")
    oh = []
    for i in range(2):
        span = sx[2 + i] + 2 * beg[i] - k[i]
        floor_o = span // s[i] + 1
        if at["ceil_mode"]:
            ceil_o = -(-span // s[i]) + 1
            if (ceil_o - 1) * s[i] >= sx[2 + i] + beg[i]:
                ceil_o -= 1   # ONNX/torch drop a window starting in padding
            if ceil_o != floor_o:
                raise ConvertError("ceil_mode=1 gives a different output "
                                   "size here; only floor mode is "
                                   "supported")
        oh.append(floor_o)
    fn = "max_pool2d" if n.op_type == "MaxPool" else "avg_pool2d"
    cv.define(out, "%s(%s, kernel=[%d, %d], stride=[%d, %d], "
              "padding=[%d, %d])" % (fn, cv.val(x), k[0], k[1], s[0], s[1],
                                     beg[0], beg[1]),
              dt, sx[:2] + oh)


@op("Pad")
def op_pad(cv, n):
    if cv.opset < 11:
        at = cv.attrs(n, {"mode": "constant", "pads": None, "value": 0.0})
        (x,) = cv.n_inputs(n, 1, 1)
        pads, value = list(at["pads"]), at["value"]
    else:
        at = cv.attrs(n, {"mode": "constant"})
        x, p, c, axes = cv.n_inputs(n, 2, 4)
        pads = [int(v) for v in cv.need_const(p, "pads")]
        value = float(cv.need_const(c, "constant_value").reshape(-1)[0]) \
            if c else 0.0
        if axes:
            raise ConvertError("the axes input is not supported")
    if at["mode"] != "constant":
        raise ConvertError("mode='%s' is not supported (only constant)"
                           % at["mode"])
    dt, shp = cv.dtype(x), cv.shape(x)
    r = len(shp)
    if len(pads) != 2 * r or any(v < 0 for v in pads):
        raise ConvertError("pads must be %d non-negative entries, got %s"
                           % (2 * r, pads))
    out = cv.one_output(n)
    if not any(pads):
        cv.alias(out, x)
        return
    cur, cshp = cv.val(x), list(shp)
    axes = [ax for ax in range(r) if pads[ax] or pads[ax + r]]
    for ax in axes:
        b, e = pads[ax], pads[ax + r]
        parts = []
        for cnt in (b, None, e):
            if cnt is None:
                parts.append(cur)
            elif cnt:
                ps = cshp[:ax] + [cnt] + cshp[ax + 1:]
                rn = cv.fresh("pad_value")
                st = [1 if isinstance(d, Sym) else d for d in ps]
                cv.body.append("  %%%s = const %s %s" % (
                    rn, type_str(dt, st), fmt_elem(value, dt)))
                parts.append("%" + rn if st == ps else  # constants: static
                             "expand(%%%s, shape=[%s])"
                             % (rn, ", ".join(map(str, ps))))
        cshp[ax] += b + e
        expr = "concat(%s, axis=%d)" % (", ".join(parts), ax)
        if ax == axes[-1]:
            cv.define(out, expr, dt, cshp)
        else:
            cur = cv.tmp(expr, dt, cshp, "pad")


# ----- normalization
@op("BatchNormalization")
def op_batchnorm(cv, n):
    at = cv.attrs(n, {"epsilon": 1e-5, "momentum": 0.9, "training_mode": 0,
                      "spatial": 1, "is_test": 1, "consumed_inputs": None})
    if at["training_mode"]:
        raise ConvertError("training_mode=1 is not supported (export the "
                           "model in eval mode)")
    if at["spatial"] != 1 or at["is_test"] != 1:
        raise ConvertError("spatial=0 / is_test=0 are not supported")
    x, g, b, m, v = cv.n_inputs(n, 5, 5)
    out = cv.one_output(n)   # running mean/var outputs must be unused
    dt, sx = cv.dtype(x), cv.shape(x)
    if len(sx) < 2:
        raise ConvertError("input must be [N, C, ...]")
    for nm, t in (("scale", g), ("B", b), ("mean", m), ("var", v)):
        if cv.shape(t) != [sx[1]] or cv.dtype(t) != dt:
            raise ConvertError("%s must be %s, got %s" % (
                nm, type_str(dt, [sx[1]]), type_str(*cv.types[t])))
    cv.define(out, "batch_norm_inference(%s, %s, %s, %s, %s, eps=%s)" % (
        cv.val(x), cv.val(g), cv.val(b), cv.val(m), cv.val(v),
        fmt_float(at["epsilon"])), dt, sx)


@op("LayerNormalization")
def op_layernorm(cv, n):
    at = cv.attrs(n, {"axis": -1, "epsilon": 1e-5, "stash_type": 1})
    if at["stash_type"] != 1:
        raise ConvertError("stash_type=%d is not supported"
                           % at["stash_type"])
    x, g, b = cv.n_inputs(n, 2, 3)
    out = cv.one_output(n)   # Mean / InvStdDev outputs must be unused
    dt, sx = cv.dtype(x), cv.shape(x)
    ax = norm_axis(at["axis"], len(sx))
    norm = sx[ax:]
    k = int(np.prod(norm))
    for nm, t in (("Scale", g), ("B", b)):
        if t and (cv.dtype(t) != dt or bcast(cv.shape(t), norm) != norm):
            raise ConvertError("%s %s does not broadcast to the normalized "
                               "shape %s" % (nm, cv.shape(t), norm))

    def vec(t, fill):
        if not t:
            rn = cv.fresh("ln_" + ("one" if fill else "zero"))
            cv.body.append("  %%%s = const %s %s" % (
                rn, type_str(dt, [k]), fmt_float(fill)))
            return "%" + rn
        v = cv.val(t)
        if cv.shape(t) != norm:
            v = cv.tmp("expand(%s, shape=[%s])" % (v, ", ".join(
                map(str, norm))), dt, norm, "ln_expand")
        if len(norm) != 1:
            v = cv.tmp("reshape(%s, shape=[%d])" % (v, k), dt, [k], "ln_vec")
        return v

    vg, vb = vec(g, 1.0), vec(b, 0.0)
    if len(norm) == 1:
        cv.define(out, "layer_norm(%s, %s, %s, axis=-1, eps=%s)" % (
            cv.val(x), vg, vb, fmt_float(at["epsilon"])), dt, sx)
        return
    flat = sx[:ax] + [k]
    t = cv.tmp("reshape(%s, shape=[%s])" % (cv.val(x), ", ".join(
        map(str, flat))), dt, flat, "ln_in")
    t = cv.tmp("layer_norm(%s, %s, %s, axis=-1, eps=%s)" % (
        t, vg, vb, fmt_float(at["epsilon"])), dt, flat, "ln")
    cv.define(out, "reshape(%s, shape=[%s])" % (t, ", ".join(
        map(str, sx))), dt, sx)


# ----- data movement
def reshape_target(shape_in, target, allowzero):
    """The ONNX Reshape target as sizes; a dynamic size (a Sym: copied by
    a 0 entry, an entry from a folded Shape, or the -1 of a product whose
    other factors cancel) is carried."""
    out, infer = [], -1
    for i, d in enumerate(v if isinstance(v, Sym) else int(v)
                          for v in target):
        if isinstance(d, Sym):
            pass
        elif d == 0 and not allowzero:
            if i >= len(shape_in):
                raise ConvertError("shape[%d] = 0 copies a dimension the "
                                   "input does not have" % i)
            d = shape_in[i]
        elif d == -1:
            if infer >= 0:
                raise ConvertError("shape has more than one -1")
            infer = i
        elif d < 0:
            raise ConvertError("invalid shape entry %d" % d)
        out.append(d)
    syms, total = split_size(shape_in)
    if infer >= 0:
        rs, rest = split_size([d for j, d in enumerate(out) if j != infer])
        left = list(syms)
        for x in rs:
            if x in left:
                left.remove(x)
        if rest == 0 or total % rest or len(left) > 1 or \
                len(left) + len(rs) != len(syms) or \
                (left and total != rest):
            raise ConvertError("cannot infer -1 in %s for %s elements"
                               % (list(target), size_str(syms, total)))
        out[infer] = next(d for d in shape_in if isinstance(d, Sym)
                          and d.name == left[0]) if left else total // rest
    if split_size(out) != (syms, total):
        raise ConvertError("cannot reshape %s to %s" % (shape_in, out))
    return out


def emit_reshape(cv, out, x, shp):
    if shp == cv.shape(x):
        cv.alias(out, x)
    else:
        cv.define(out, "reshape(%s, shape=[%s])" % (cv.val(x), ", ".join(
            map(str, shp))), cv.dtype(x), shp)


@op("Reshape")
def op_reshape(cv, n):
    at = cv.attrs(n, {"allowzero": 0, "shape": None})
    if cv.opset < 5:
        (x,) = cv.n_inputs(n, 1, 1)
        target = at["shape"]
    else:
        x, s = cv.n_inputs(n, 2, 2)
        target = cv.need_const(s, "shape")
    emit_reshape(cv, cv.one_output(n), x,
                 reshape_target(cv.shape(x), target, at["allowzero"]))


@fold("Reshape")
def fold_reshape(cv, n, v):
    at = cv.attrs(n, {"allowzero": 0})
    return v[0].reshape(reshape_target(list(v[0].shape), v[1],
                                       at["allowzero"]))


@op("Flatten")
def op_flatten(cv, n):
    at = cv.attrs(n, {"axis": 1})
    (x,) = cv.n_inputs(n, 1, 1)
    shp = cv.shape(x)
    ax = int(at["axis"])
    if not -len(shp) <= ax <= len(shp):
        raise ConvertError("axis %d out of range" % ax)
    ax = ax + len(shp) if ax < 0 else ax
    emit_reshape(cv, cv.one_output(n), x,
                 [size_prod(shp[:ax]), size_prod(shp[ax:])])


def squeeze_axes(cv, n):
    if cv.opset < 13:
        at = cv.attrs(n, {"axes": None})
        (x,) = cv.n_inputs(n, 1, 1)
        return x, at["axes"]
    cv.attrs(n, {})
    x, a = cv.n_inputs(n, 1, 2)
    return x, (list(cv.need_const(a, "axes")) if a else None)


def unsqueeze_shape(shp, axes):
    r = len(shp) + len(axes)
    axes = sorted(norm_axis(a, r) for a in axes)
    if len(set(axes)) != len(axes):
        raise ConvertError("repeated axes")
    out, it = [], iter(shp)
    for i in range(r):
        out.append(1 if i in axes else next(it))
    return out


def squeeze_shape(shp, axes):
    if axes is None:
        return [d for d in shp if d != 1]
    ax = {norm_axis(a, len(shp)) for a in axes}
    for a in ax:
        if shp[a] != 1:
            raise ConvertError("cannot squeeze axis %d of size %d"
                               % (a, shp[a]))
    return [d for i, d in enumerate(shp) if i not in ax]


@op("Unsqueeze")
def op_unsqueeze(cv, n):
    x, axes = squeeze_axes(cv, n)
    if axes is None:
        raise ConvertError("axes are required")
    emit_reshape(cv, cv.one_output(n), x, unsqueeze_shape(cv.shape(x), axes))


@op("Squeeze")
def op_squeeze(cv, n):
    x, axes = squeeze_axes(cv, n)
    emit_reshape(cv, cv.one_output(n), x, squeeze_shape(cv.shape(x), axes))


@fold("Unsqueeze", "Squeeze")
def fold_squeeze(cv, n, v):
    if cv.opset < 13:
        axes = cv.attrs(n, {"axes": None})["axes"]
    else:
        cv.attrs(n, {})
        axes = list(v[1]) if len(v) > 1 and v[1] is not None else None
    if n.op_type == "Unsqueeze":
        return v[0].reshape(unsqueeze_shape(list(v[0].shape), axes))
    return v[0].reshape(squeeze_shape(list(v[0].shape), axes))


@op("Transpose")
def op_transpose(cv, n):
    (x,) = cv.n_inputs(n, 1, 1)
    shp = cv.shape(x)
    at = cv.attrs(n, {"perm": list(range(len(shp)))[::-1]})
    perm = [int(p) for p in at["perm"]]
    if sorted(perm) != list(range(len(shp))):
        raise ConvertError("perm %s is not a permutation of rank %d"
                           % (perm, len(shp)))
    out = cv.one_output(n)
    if perm == list(range(len(shp))):
        cv.alias(out, x)
        return
    cv.define(out, "transpose(%s, perm=[%s])" % (cv.val(x), ", ".join(
        map(str, perm))), cv.dtype(x), [shp[p] for p in perm])


@op("Concat")
def op_concat(cv, n):
    at = cv.attrs(n, {"axis": None})
    if at["axis"] is None:
        raise ConvertError("attribute 'axis' is required")
    ins = [x for x in n.input if x]
    for x in ins:
        if not cv.has(x):
            raise ConvertError("input '%s' is not defined" % x)
    if not ins:
        raise ConvertError("no inputs")
    shp0 = cv.shape(ins[0])
    ax = norm_axis(at["axis"], len(shp0))
    total = 0
    for x in ins:
        s = cv.shape(x)
        if len(s) != len(shp0) or cv.dtype(x) != cv.dtype(ins[0]) or \
                any(s[i] != shp0[i] for i in range(len(s)) if i != ax):
            raise ConvertError("inputs do not match: %s vs %s"
                               % (type_str(*cv.types[x]),
                                  type_str(*cv.types[ins[0]])))
        total += s[ax]
    shp = shp0[:ax] + [total] + shp0[ax + 1:]
    cv.define(cv.one_output(n), "concat(%s, axis=%d)" % (", ".join(
        cv.val(x) for x in ins), ax), cv.dtype(ins[0]), shp)


@fold("Concat")
def fold_concat(cv, n, v):
    at = cv.attrs(n, {"axis": 0})
    return np.concatenate([x for x in v if x is not None], axis=at["axis"])


@op("Gather")
def op_gather(cv, n):
    at = cv.attrs(n, {"axis": 0})
    x, i = cv.n_inputs(n, 2, 2)
    shp = cv.shape(x)
    if not shp:
        raise ConvertError("data must have rank >= 1")
    ax = norm_axis(at["axis"], len(shp))
    if cv.dtype(i) not in ("i32", "i64"):
        raise ConvertError("indices must be int32 or int64")
    idx = cv.const(i)
    vi = None
    if idx is not None:
        # ONNX allows negative indices (count from the end); rlx gather
        # does not, so constant indices are normalized here.
        if ((idx < -shp[ax]) | (idx >= shp[ax])).any():
            raise ConvertError("index out of range for dimension %d"
                               % shp[ax])
        idx = np.where(idx < 0, idx + shp[ax], idx).astype(np.int64)
        tmpname = i + "#norm"
        cv.set_const(tmpname, idx)
        vi = cv.val(tmpname)
    else:
        vi = cv.val(i)   # runtime indices: negative ones -> RLX_ERR_INDEX
    ishp = cv.shape(i)
    out = shp[:ax] + ishp + shp[ax + 1:]
    cv.define(cv.one_output(n), "gather(%s, %s, axis=%d)" % (cv.val(x), vi,
                                                            ax),
              cv.dtype(x), out)


@fold("Gather")
def fold_gather(cv, n, v):
    at = cv.attrs(n, {"axis": 0})
    return np.take(v[0], v[1], axis=at["axis"])


def slice_params(cv, n, shp, vals=None):
    """(axes, starts, ends, steps) normalized; constants only."""
    if cv.opset < 10:
        at = cv.attrs(n, {"starts": None, "ends": None, "axes": None})
        starts, ends, axes = at["starts"], at["ends"], at["axes"]
        steps = None
    else:
        cv.attrs(n, {})
        ins = list(n.input) + [""] * (5 - len(n.input))
        get = (lambda k, what: vals[k] if vals is not None else
               cv.need_const(ins[k], what))
        starts, ends = get(1, "starts"), get(2, "ends")
        axes = get(3, "axes") if ins[3] else None
        steps = get(4, "steps") if ins[4] else None
    starts, ends = [int(v) for v in starts], [int(v) for v in ends]
    if axes is None:
        axes = list(range(len(starts)))
    axes = [norm_axis(a, len(shp)) for a in axes]
    steps = [1] * len(starts) if steps is None else [int(v) for v in steps]
    if not len(starts) == len(ends) == len(axes) == len(steps):
        raise ConvertError("starts/ends/axes/steps lengths differ")
    if len(set(axes)) != len(axes):
        raise ConvertError("repeated axes")
    res = []
    for a, s, e, st in zip(axes, starts, ends, steps):
        if st != 1:
            raise ConvertError("steps other than 1 are not supported "
                               "(got %d on axis %d)" % (st, a))
        d = shp[a]
        s = s + d if s < 0 else s
        e = e + d if e < 0 else e
        s, e = min(max(s, 0), d), min(max(e, 0), d)
        res.append((a, s, max(e - s, 0)))
    return res


@op("Slice")
def op_slice(cv, n):
    x = n.input[0]
    if not cv.has(x):
        raise ConvertError("input '%s' is not defined" % x)
    shp = cv.shape(x)
    cshp = list(shp)
    parts = [p for p in slice_params(cv, n, shp) if (p[1], p[2]) !=
             (0, shp[p[0]])]
    out = cv.one_output(n)
    if not parts:
        cv.alias(out, x)
        return
    v = cv.val(x)
    for k, (a, s, ln) in enumerate(parts):
        cshp[a] = ln
        expr = "narrow(%s, axis=%d, start=%d, len=%d)" % (v, a, s, ln)
        if k == len(parts) - 1:
            cv.define(out, expr, cv.dtype(x), cshp)
        else:
            v = cv.tmp(expr, cv.dtype(x), cshp, "slice")


@fold("Slice")
def fold_slice(cv, n, v):
    x = v[0]
    idx = [slice(None)] * x.ndim
    for a, s, ln in slice_params(cv, n, list(x.shape), v):
        idx[a] = slice(s, s + ln)
    return x[tuple(idx)]


# ----- reductions
@op("ReduceMean", "ReduceSum")
def op_reduce(cv, n):
    axes_input = n.op_type == "ReduceSum" and cv.opset >= 13 or \
        cv.opset >= 18
    if axes_input:
        at = cv.attrs(n, {"keepdims": 1, "noop_with_empty_axes": 0})
        x, a = cv.n_inputs(n, 1, 2)
        axes = list(cv.need_const(a, "axes")) if a else None
    else:
        at = cv.attrs(n, {"keepdims": 1, "axes": None})
        (x,) = cv.n_inputs(n, 1, 1)
        axes = at["axes"]
    dt, shp = cv.dtype(x), cv.shape(x)
    if n.op_type == "ReduceMean" and dt not in FLOATS:
        raise ConvertError("ReduceMean of %s is not supported" % dt)
    out = cv.one_output(n)
    if not axes:
        if at.get("noop_with_empty_axes", 0):
            cv.alias(out, x)
            return
        axes = list(range(len(shp)))
    axes = sorted({norm_axis(a, len(shp)) for a in axes})
    keep = bool(at["keepdims"])
    oshp = [1 if i in axes else d for i, d in enumerate(shp)] if keep else \
        [d for i, d in enumerate(shp) if i not in axes]
    fn = "reduce_mean" if n.op_type == "ReduceMean" else "reduce_sum"
    cv.define(out, "%s(%s, axes=[%s], keep_dims=%s)" % (
        fn, cv.val(x), ", ".join(map(str, axes)),
        "true" if keep else "false"), dt, oshp)


# ------------------------------------------------------------ safetensors
def safetensors_bytes(tensors, metadata):
    """The file for tensors, a list of (name, ndarray). Format: u64 LE
    header length, JSON header (padded with spaces to a multiple of 8),
    raw LE data."""
    header, off, blobs = {}, 0, []
    if metadata:
        header["__metadata__"] = metadata
    for name, arr in tensors:
        st = NP2ST[np.dtype(arr.dtype.name)]
        b = np.asarray(arr, dtype=arr.dtype.newbyteorder("<"), order="C") \
            .tobytes()
        header[name] = {"dtype": st, "shape": list(arr.shape),
                        "data_offsets": [off, off + len(b)]}
        blobs.append(b)
        off += len(b)
    h = json.dumps(header, separators=(",", ":")).encode()
    h += b" " * (-len(h) % 8)
    return b"".join([struct.pack("<Q", len(h)), h] + blobs)


# ------------------------------------------------------------- validation
# Everything below runs before anything is written: a model, a name or a
# path the converter cannot use is one error line and exit 1.

RLX_KEYWORDS = {"graph", "input", "param", "return", "const", "true",
                "false"}
C_KEYWORDS = {  # C11 and C23, as rlxc checks a C name (docs/abi.md)
    "auto", "break", "case", "char", "const", "continue", "default", "do",
    "double", "else", "enum", "extern", "float", "for", "goto", "if",
    "inline", "int", "long", "register", "restrict", "return", "short",
    "signed", "sizeof", "static", "struct", "switch", "typedef", "union",
    "unsigned", "void", "volatile", "while", "bool", "true", "false",
    "alignas", "alignof", "constexpr", "nullptr", "static_assert",
    "thread_local", "typeof", "typeof_unqual", "asm"}
IDENT = re.compile(r"[A-Za-z_][A-Za-z0-9_]*\Z")

# Where a TensorProto without raw_data keeps the values of each dtype.
VALUE_FIELD = {1: "float_data", 11: "double_data", 7: "int64_data",
               10: "int32_data", 3: "int32_data", 2: "int32_data",
               6: "int32_data", 9: "int32_data"}


def node_label(n):
    return "node '%s' (%s)" % (n.name or "<unnamed>", n.op_type)


def graph_name_problem(name):
    """Why name cannot be the graph name, or None. It must be an .rlx
    identifier and not one of the language's keywords; and since it is
    the C name of the entry points rlxc emits, not a C keyword, not
    main, not reserved in C (a leading _) and not in the runtime's rlx_
    namespace. (rlxc's table of C library names stays rlxc's check.)"""
    if not IDENT.match(name):
        return "not an identifier ([A-Za-z_][A-Za-z0-9_]*)"
    if name in RLX_KEYWORDS:
        return "a keyword of the .rlx language"
    if name in C_KEYWORDS:
        return "a C keyword (the graph name is the C name of its entry " \
            "points)"
    if name == "main":
        return "'main' is reserved for the program"
    if name.startswith("_"):
        return "names starting with '_' are reserved in C"
    if name.startswith("rlx_"):
        return "the prefix rlx_ is reserved for the runtime"
    return None


def graph_name(name, output):
    """(graph name, note or None). --name is taken as given, and an
    error if it cannot be used. Without it the name is -o's file name
    with other characters than [A-Za-z0-9_] made '_'; where that cannot
    be used either (-o graph.rlx, -o 2d.rlx) it gets the prefix m_, and
    the note says so."""
    if name is not None:
        why = graph_name_problem(name)
        if why:
            raise ConvertError("graph name '%s' (--name): %s" % (name, why))
        return name, None
    base = re.sub(r"[^A-Za-z0-9_]", "_", os.path.splitext(
        os.path.basename(output))[0])
    why = graph_name_problem(base)
    if why is None:
        return base, None
    return "m_" + base, "graph named 'm_%s': '%s' from -o is %s; --name " \
        "sets another name" % (base, base, why)


def tensor_problem(t):
    """Why the data of TensorProto t disagrees with its dims, or None:
    the dims (none negative) give the element count, and raw_data must
    hold exactly that many elements' bytes, else the dtype's value field
    (float_data, int64_data, ...) that many values. A dtype rlx lacks is
    reported where the tensor is converted."""
    dims = [int(d) for d in t.dims]
    if any(d < 0 for d in dims):
        return "negative dims %s" % dims
    n = 1
    for d in dims:
        n *= d
    if t.data_type not in DTYPES:
        return None
    if t.data_location == onnx.TensorProto.EXTERNAL:
        return "its external data was not loaded"
    if t.HasField("raw_data"):
        size = np.dtype(DTYPES[t.data_type][1]).itemsize
        if len(t.raw_data) != n * size:
            return "dims %s hold %d value%s (%d bytes), raw data has %d " \
                "bytes" % (dims, n, "" if n == 1 else "s", n * size,
                           len(t.raw_data))
        return None
    have = len(getattr(t, VALUE_FIELD[t.data_type]))
    if have != n:
        return "dims %s hold %d value%s, data has %d" % (
            dims, n, "" if n == 1 else "s", have)
    return None


def check_tensors(graph):
    """Every initializer, and every tensor attribute of a node (the
    value of a Constant), holds as many values as its dims say."""
    for init in graph.initializer:
        why = tensor_problem(init)
        if why:
            raise ConvertError("initializer '%s': %s" % (init.name, why))
    for n in graph.node:
        for a in n.attribute:
            why = a.type == onnx.AttributeProto.TENSOR and \
                tensor_problem(a.t)
            if why:
                raise ConvertError("%s: attribute '%s': %s"
                                   % (node_label(n), a.name, why))


def check_single_assignment(graph):
    """Every value is defined once: by a graph input, an initializer
    (a graph input of the same name declares it, as exports with
    keep_initializers_as_inputs do) or one output of one node. A second
    definition would otherwise silently win."""
    owner = {}
    for init in graph.initializer:
        if init.name in owner:
            raise ConvertError("initializer '%s' is defined twice"
                               % init.name)
        owner[init.name] = "initializer '%s'" % init.name
    inits = set(owner)
    for vi in graph.input:
        if vi.name in inits:
            continue
        if vi.name in owner:
            raise ConvertError("graph input '%s' is declared twice"
                               % vi.name)
        owner[vi.name] = "graph input '%s'" % vi.name
    for n in graph.node:
        for o in n.output:
            if not o:
                continue   # an optional output left out
            if o in owner:
                raise ConvertError("%s: output '%s' is already defined by "
                                   "%s" % (node_label(n), o, owner[o]))
            owner[o] = node_label(n)


def checker_culprit(graph):
    """The graph input, graph output or initializer that onnx.checker
    rejects on its own, or None: the checker's messages about these
    ("Field 'shape' of 'type' is required but missing.") do not name
    the value."""
    ctx = onnx.checker.DEFAULT_CONTEXT
    for what, items, check in (
            ("graph input", graph.input, onnx.checker.check_value_info),
            ("graph output", graph.output, onnx.checker.check_value_info),
            ("initializer", graph.initializer, onnx.checker.check_tensor)):
        for v in items:
            try:
                check(v, ctx)
            except onnx.checker.ValidationError:
                return "%s '%s'" % (what, v.name)
    return None


def checker_message(text, graph):
    """onnx.checker's message as one line (its own line breaks made
    spaces), starting with the node its context names or else the
    value checker_culprit finds."""
    body, _, context = text.partition("==> Context:")
    msg = " ".join(body.split()) or "(no message)"
    m = re.search(r"Bad node spec for node\. Name: (.*?) OpType: (\S+)",
                  context)
    if m:
        return "node '%s' (%s): %s" % (m.group(1) or "<unnamed>",
                                       m.group(2), msg)
    culprit = checker_culprit(graph)
    return "%s: %s" % (culprit or "not a valid ONNX model", msg)


def model_opset(model):
    return max([imp.version for imp in model.opset_import
                if imp.domain in ("", "ai.onnx")] or [1])


def check_onnx(model, path):
    """onnx.checker.check_model: the model is valid ONNX (each node
    against its operator's schema, attribute types, definition before
    use, ...). A model over protobuf's 2 GB limit is checked from its
    file. The checker cannot judge an opset newer than the installed
    onnx package (it has no schema for Gelu-20 in onnx 1.12): such a
    model is not checked, and the returned note says so."""
    known = onnx.defs.onnx_opset_version()
    if model_opset(model) > known:
        return "opset %d is newer than the onnx package's (%s, opsets " \
            "up to %d): onnx.checker skipped" % (model_opset(model),
                                                 onnx.__version__, known)
    try:
        onnx.checker.check_model(model if model.ByteSize() < 2 ** 31
                                 else path)
    except onnx.checker.ValidationError as e:
        raise ConvertError(checker_message(str(e), model.graph))
    return None


def check_model(model, path):
    """The converter's own checks (their messages name the value), then
    the ONNX checker; returns the checker's note (or None)."""
    check_tensors(model.graph)
    check_single_assignment(model.graph)
    return check_onnx(model, path)


def check_output_paths(rlx, weights, model_path):
    """Each output can be created: a non-empty path whose directory
    exists and which is not a directory itself; the .rlx and the weights
    are two files, and neither is the input model."""
    for what, p in (("output", rlx), ("weights", weights)):
        if not p:
            raise ConvertError("%s path is empty" % what)
        d = os.path.dirname(p) or "."
        if not os.path.isdir(d):
            raise ConvertError("%s '%s': directory '%s' does not exist"
                               % (what, p, d))
        if os.path.isdir(p):
            raise ConvertError("%s '%s' is a directory" % (what, p))
        if os.path.exists(p) and os.path.exists(model_path) and \
                os.path.samefile(p, model_path):
            raise ConvertError("%s '%s' is the input model" % (what, p))
    if os.path.abspath(rlx) == os.path.abspath(weights) or (
            os.path.exists(rlx) and os.path.exists(weights) and
            os.path.samefile(rlx, weights)):
        raise ConvertError("output '%s' and weights '%s' are one file "
                           "(give --weights another path)" % (rlx, weights))


# ----------------------------------------------------------------- output
class WriteError(Exception):
    """An output could not be written (the OS's reason)."""


def write_outputs(files):
    """Write files, a list of (path, bytes). Each goes to a temporary
    file beside its target, renamed over it once all are written, so
    that a failed write leaves no new or partial file: the temporaries
    are removed, and a target already renamed into place is removed
    again (as rlxc does with its outputs). A target that exists and is
    not a regular file (/dev/null) is written in place."""
    umask = os.umask(0)
    os.umask(umask)
    temps, done, target = [], [], None
    try:
        for target, data in files:
            if os.path.exists(target) and not os.path.isfile(target):
                with open(target, "wb") as f:
                    f.write(data)
                continue
            fd, tmp = tempfile.mkstemp(
                dir=os.path.dirname(target) or ".",
                prefix="." + os.path.basename(target) + ".")
            temps.append((tmp, target))
            with os.fdopen(fd, "wb") as f:
                f.write(data)
            os.chmod(tmp, 0o666 & ~umask)
        for tmp, target in temps:
            os.replace(tmp, target)
            done.append(target)
    except OSError as e:
        for tmp, path in temps:
            for p in [tmp] + ([path] if path in done else []):
                try:
                    os.remove(p)
                except OSError:
                    pass
        raise WriteError("cannot write '%s': %s"
                         % (target, e.strerror or one_line(e)))


# ------------------------------------------------------------------- main
def parse_args(argv):
    ap = argparse.ArgumentParser(
        prog="onnx2rlx.py",
        description="Convert an ONNX model to .rlx + safetensors params.")
    ap.add_argument("model", help="input .onnx file")
    ap.add_argument("-o", "--output", required=True, help="output .rlx")
    ap.add_argument("--weights", help="output .safetensors (default: the "
                    ".rlx path with .safetensors)")
    ap.add_argument("--name", help="graph name (default: from the file)")
    ap.add_argument("--params", action="store_true",
                    help="print the ONNX initializer -> rlx param table")
    ap.add_argument("--loss", choices=["xent"],
                    help="add input %%labels and return a mean "
                    "cross-entropy loss of the first output first")
    ap.add_argument("--shape", action="append", default=[],
                    metavar="NAME=N|NAME<=N", type=shape_arg,
                    help="size N for the symbolic input dimension NAME "
                    "(ONNX dim_param, e.g. from dynamic_axes), or with <= "
                    "its bound: it stays the dynamic dimension ?NAME<=N")
    return ap.parse_args(argv)


def shape_arg(text):
    """--shape NAME=N as (NAME, N, False), --shape NAME<=N (a bound) as
    (NAME, N, True)."""
    le = "<=" in text
    name, eq, n = text.partition("<=" if le else "=")
    if not (name and eq and n.isdigit()):
        raise argparse.ArgumentTypeError("want NAME=N or NAME<=N (N a size "
                                         ">= 0), not '%s'" % text)
    return name, int(n), le


def load_model(path):
    """The ModelProto of path (with its external data)."""
    try:
        return onnx.load(path)
    except Exception as e:
        raise ConvertError("cannot read '%s': %s" % (path, one_line(e)))


def printable(text):
    """text with control characters (a newline in a name) escaped, so
    that each message stays one line."""
    return re.sub(r"[\x00-\x1f\x7f]",
                  lambda m: "\\x%02x" % ord(m.group()), text)


def one_line(e):
    lines = [ln.strip() for ln in str(e).splitlines() if ln.strip()]
    return lines[0] if lines else type(e).__name__


def convert(args):
    """Check the name, the paths and the model, convert in memory, then
    write both outputs. Raises ConvertError, Unsupported or WriteError."""
    weights = args.weights or os.path.splitext(args.output)[0] + \
        ".safetensors"
    name, note = graph_name(args.name, args.output)
    check_output_paths(args.output, weights, args.model)
    model = load_model(args.model)
    notes = [note, check_model(model, args.model)]
    cv = Converter(model, os.path.basename(args.model),
                   {k: n for k, n, le in args.shape if not le},
                   {k: n for k, n, le in args.shape if le})
    text = cv.convert(name, args.loss)
    table = cv.param_table()
    st = safetensors_bytes([(rn, arr) for rn, _, arr in table],
                           {rn: on for rn, on, _ in table})
    write_outputs([(weights, st), (args.output, text.encode())])
    for note in notes:
        if note:
            sys.stderr.write("onnx2rlx: note: %s\n" % note)
    if args.params:
        for rn, on, arr in table:
            print("%-24s %-32s %s" % (rn, on, type_str(NP2RLX[arr.dtype],
                                                      arr.shape)))


def main(argv=None):
    """Exit status: 0 converted; 1 an error (one line each, nothing
    written); 2 a bad command line (argparse); 3 an internal error (a
    bug: no traceback, one line naming the exception)."""
    args = parse_args(argv)
    try:
        convert(args)
    except Unsupported as e:
        sys.stderr.write(str(e) + "\n")
        return 1
    except (ConvertError, WriteError) as e:
        sys.stderr.write("onnx2rlx: error: %s\n" % printable(str(e)))
        return 1
    except KeyboardInterrupt:
        return 130
    except Exception as e:
        sys.stderr.write("onnx2rlx: internal error: %s: %s\n"
                         % (type(e).__name__, printable(one_line(e))))
        return 3
    return 0


if __name__ == "__main__":
    sys.exit(main())
