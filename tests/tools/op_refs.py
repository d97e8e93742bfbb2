#!/usr/bin/env python3
"""op_refs.py -- the reference facts of the elementwise ops, one row each.

Every test that needs to know what an elementwise op computes reads it
here, so a new elementwise op is one row in this file:
  tests/gradcheck/ir_eval.py        the NumPy IR interpreter (np, d;
                                    activation_backward kind=OP uses d)
  tests/gradcheck/gen_gradcheck.py  u_OP / b_OP and
                                    activation_backward_OP cases (torch,
                                    dom)
  tests/tools/e2e_cases_core.py     unary_OP / binary_OP / compare_*,
                                    elementwise_long (np or torch,
                                    e2e range, dom, zeros)
  tests/unit/test_codegen_ops_gen.py  the activation_backward cases (d
                                    via torch autograd, else d)
(tests/tools/gen_graphs.py, standard library only, takes its op lists
from ir/ops.def directly.)
`op_refs.py --check SRC` (ctest tools.op_refs) fails when the rows do
not match ir/ops.def (OPF_UNARY / OPF_BINARY / OPF_COMPARE rows, same
order) or the activation kinds of ir/attrs.def (the unary rows with a
derivative).

Row fields
  np     f(x) in NumPy on float64 arrays (binary: f(a, b))
  d      unary: f'(x) in NumPy on float64 arrays, for the op's
         activation_backward kind; None when the op has no kind (its
         VJP does not use activation_backward; round: straight-through)
  torch  the PyTorch function, resolved lazily by torch_fn(op) (the
         interpreter and the CI runners never import torch): a name
         under torch or F (torch.nn.functional), optionally with
         keyword arguments
  e2e    (lo, hi): the e2e case's uniform sampling range (unary)
  e2e_torch  the e2e forward reference is torch_fn(op) rather than np
         (gelu, gelu_tanh: NumPy has no erf)
  dom    where the op may be sampled. Unary: "real" (anywhere),
         "pos" (x > 0: log, sqrt, rsqrt), "kink" (f' jumps at 0: keep
         away from 0), "pole" (poles at +-pi/2: keep |x| < 1.2, and
         long vectors only on the positive side). Binary: None, "nonzero"
         (b away from 0), "ties" (a == b is a convention: keep apart),
         "posbase" (a > 0). Each consumer maps dom to its own ranges.
  zeros  unary: the e2e case also feeds +0, -0 and hi (signed zero or
         a boundary matters)
The functions need NumPy; the names and --check do not.
"""
import math
import os
import re
import sys

try:
    import numpy as np
except ImportError:  # the names and --check need no NumPy
    class _NoNumPy:
        def __getattr__(self, name):
            def missing(*a, **k):
                raise ImportError("op_refs: np.%s needs NumPy" % name)
            return missing
    np = _NoNumPy()


def _erf(x):
    return np.vectorize(math.erf, otypes=[np.float64])(x)


def _sig(x):
    return 1 / (1 + np.exp(-x))


_K = math.sqrt(2 / math.pi)


def _gelu_tanh(x):
    return 0.5 * x * (1 + np.tanh(_K * (x + 0.044715 * x ** 3)))


def _d_gelu_tanh(x):
    t = np.tanh(_K * (x + 0.044715 * x ** 3))
    return (0.5 * (1 + t) + 0.5 * x * (1 - t * t) * _K *
            (1 + 3 * 0.044715 * x * x))


def _d_silu(x):
    s = _sig(x)
    return s * (1 + x * (1 - s))


def _d_sigmoid(x):
    s = _sig(x)
    return s * (1 - s)


class Row:
    def __init__(self, np, d=None, torch=None, e2e=None, e2e_torch=False,
                 dom=None, zeros=False):
        self.np, self.d, self.torch, self.e2e = np, d, torch, e2e
        self.e2e_torch, self.dom, self.zeros = e2e_torch, dom, zeros


def U(np_fn, d, torch, e2e, dom="real", **kw):
    return Row(np_fn, d, torch, e2e, dom=dom, **kw)


# language.md 6.1, in the order of ir/ops.def
UNARY = {
    "relu": U(lambda x: np.maximum(x, 0),
              lambda x: (x > 0).astype(np.float64),
              "torch.relu", (-2, 2), "kink", zeros=True),
    "gelu": U(lambda x: x * (0.5 * (1 + _erf(x / math.sqrt(2)))),
              lambda x: (0.5 * (1 + _erf(x / math.sqrt(2))) +
                         x * np.exp(-0.5 * x * x) / math.sqrt(2 * math.pi)),
              "F.gelu", (-3, 3), e2e_torch=True),
    "gelu_tanh": U(_gelu_tanh, _d_gelu_tanh,
                   ("F.gelu", {"approximate": "tanh"}), (-3, 3),
                   e2e_torch=True),
    "silu": U(lambda x: x * _sig(x), _d_silu, "F.silu", (-4, 4)),
    "sigmoid": U(_sig, _d_sigmoid, "torch.sigmoid", (-6, 6)),
    "tanh": U(np.tanh, lambda x: 1 - np.tanh(x) ** 2, "torch.tanh",
              (-3, 3)),
    "exp": U(np.exp, np.exp, "torch.exp", (-4, 4)),
    "log": U(np.log, lambda x: 1 / x, "torch.log", (0.05, 5), "pos"),
    "sqrt": U(np.sqrt, lambda x: 0.5 / np.sqrt(x), "torch.sqrt", (0, 4),
              "pos", zeros=True),
    "rsqrt": U(lambda x: 1 / np.sqrt(x), lambda x: -0.5 * x ** -1.5,
               "torch.rsqrt", (0.1, 4), "pos"),
    "neg": U(np.negative, lambda x: -np.ones_like(x), "torch.neg", (-2, 2),
             zeros=True),
    "abs": U(np.abs, np.sign, "torch.abs", (-2, 2), "kink", zeros=True),
    "sin": U(np.sin, np.cos, "torch.sin", (-4, 4)),
    "cos": U(np.cos, lambda x: -np.sin(x), "torch.cos", (-4, 4)),
    "tan": U(np.tan, lambda x: 1 / np.cos(x) ** 2, "torch.tan", (-1.3, 1.3),
             "pole"),
    "atan": U(np.arctan, lambda x: 1 / (1 + x * x), "torch.atan", (-5, 5)),
    # straight-through gradient: no activation_backward kind
    "round": U(np.round, None, "torch.round", (-4, 4)),
}

# language.md 6.1, in the order of ir/ops.def
BINARY = {
    "add": Row(np.add, torch="torch.add"),
    "sub": Row(np.subtract, torch="torch.sub"),
    "mul": Row(np.multiply, torch="torch.mul"),
    "div": Row(np.divide, torch="torch.div", dom="nonzero"),
    "min": Row(np.minimum, torch="torch.minimum", dom="ties"),
    "max": Row(np.maximum, torch="torch.maximum", dom="ties"),
    "pow": Row(np.power, torch="torch.pow", dom="posbase"),
}

COMPARE = {
    "eq": Row(np.equal, torch="torch.eq"),
    "ne": Row(np.not_equal, torch="torch.ne"),
    "lt": Row(np.less, torch="torch.lt"),
    "le": Row(np.less_equal, torch="torch.le"),
    "gt": Row(np.greater, torch="torch.gt"),
    "ge": Row(np.greater_equal, torch="torch.ge"),
}

# the activation_backward kinds: unary ops with a derivative
ACT_KINDS = [op for op, r in UNARY.items() if r.d is not None]


def row(op):
    for t in (UNARY, BINARY, COMPARE):
        if op in t:
            return t[op]
    raise KeyError("op_refs: no row for op '%s'" % op)


def act(kind, x):
    """(f(x), f'(x)) of an activation kind, in float64."""
    r = UNARY[kind]
    x = np.asarray(x).astype(np.float64)
    return r.np(x), r.d(x)


def torch_fn(op):
    """The PyTorch function of op (imports torch on first use)."""
    import torch
    import torch.nn.functional as F
    spec = row(op).torch
    name, kw = spec if isinstance(spec, tuple) else (spec, None)
    mod, attr = name.split(".")
    fn = getattr({"torch": torch, "F": F}[mod], attr)
    if kw:
        return lambda *a: fn(*a, **kw)
    return fn


# ---- consistency with the compiler's tables ----

def check(src):
    """Errors where the table and ir/ops.def / ir/attrs.def disagree."""
    text = open(os.path.join(src, "ir", "ops.def")).read()
    rows = re.findall(r'^OP\(\s*\w+\s*,\s*"(\w+)"\s*,[^,]*,[^,]*,\s*([^,]+),',
                      text, re.M)
    errs = []
    for flag, table in (("OPF_UNARY", UNARY), ("OPF_BINARY", BINARY),
                        ("OPF_COMPARE", COMPARE)):
        want = [n for n, f in rows if flag in f.split("|")]
        if want != list(table):
            errs.append("%s ops of ir/ops.def %s, op_refs.py has %s"
                        % (flag, want, list(table)))
    attrs = open(os.path.join(src, "ir", "attrs.def")).read()
    m = re.search(r'^ATTR\(KIND,[^"]*"kind",[^"]*"([^"]*)"\)', attrs, re.M)
    kinds = m.group(1).split() if m else None
    if kinds != ACT_KINDS:
        errs.append("activation_backward kinds of ir/attrs.def %s, unary "
                    "rows of op_refs.py with a derivative %s"
                    % (kinds, ACT_KINDS))
    for op, r in UNARY.items():
        if r.torch is None or r.e2e is None:
            errs.append("unary '%s': torch and e2e are required" % op)
        if r.dom not in ("real", "pos", "kink", "pole"):
            errs.append("unary '%s': unknown dom %r" % (op, r.dom))
    for op, r in BINARY.items():
        if r.dom not in (None, "nonzero", "ties", "posbase"):
            errs.append("binary '%s': unknown dom %r" % (op, r.dom))
    return errs


if __name__ == "__main__":
    if len(sys.argv) != 3 or sys.argv[1] != "--check":
        sys.exit("usage: op_refs.py --check SRC")
    errs = check(sys.argv[2])
    for e in errs:
        print("FAIL op_refs: " + e)
    sys.exit(1 if errs else 0)
