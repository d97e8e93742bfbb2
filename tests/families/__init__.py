"""tests/families -- one module per op family: everything the test
generators and the IR interpreter need to know about the family's ops,
so that a new op of the family edits one test file.

A family module holds, for its ops:
  EVAL        {op: fn(op, ins, attrs)}: the NumPy semantics (float64
              where the op is floating), read by tests/gradcheck/ir_eval.py;
  GRADCHECK   the gradient-check cases with their PyTorch references,
              registered by @gc_case and written by
              tests/gradcheck/gen_gradcheck.py;
  e2e cases   registered with tests/tools/e2e_lib.py (@case) and written
              by tests/tools/gen_goldens.py.
It imports only NumPy (and e2e_lib, itself NumPy-only at import): the
test runs have no PyTorch, so the functions that compute the PyTorch
references import torch themselves, and only the generators call them.
"""
import importlib
import os
import pkgutil
import sys

_TOOLS = os.path.join(os.path.dirname(os.path.dirname(
    os.path.abspath(__file__))), "tools")
if _TOOLS not in sys.path:
    sys.path.insert(0, _TOOLS)


def gc_case(name, **options):
    """Register a gradient-check case of the calling family module:
    gen_gradcheck.py's case(name, **options) applied to the builder."""
    def deco(fn):
        sys.modules[fn.__module__].GRADCHECK.append((name, options, fn))
        return fn
    return deco


def modules():
    """Every family module, in name order."""
    return [importlib.import_module(__name__ + "." + m.name)
            for m in sorted(pkgutil.iter_modules(__path__),
                            key=lambda m: m.name)]


def semantics():
    """{op: fn(op, ins, attrs)} of every family."""
    table = {}
    for m in modules():
        table.update(m.EVAL)
    return table
