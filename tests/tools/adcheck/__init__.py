"""adcheck -- the harness shared by the automatic-differentiation suites,
tests/gradcheck/ (every op: reverse mode, its JVP, its HVP) and
tests/hvp/ (whole graphs under --jvp / --hvp, control flow).

Two halves, so that the runners never import torch:
  adcheck.gen    the generators' side (NumPy + torch): case registry,
                 the per-dtype case builder G, .rlx text, tangents,
                 torch references in forward mode, golden directories
                 (in/out .bin + meta.txt), run.txt, pruning of cases
                 that no longer exist;
  adcheck.check  the runners' side (standard library; NumPy and
                 tests/gradcheck/ir_eval.py imported when a check needs
                 them): run.txt parsing, `rlxc --emit=ir` into
                 ir_eval's graphs, goldens, finite differences, the
                 dot-product and HVP identities, the PASS/FAIL/PENDING
                 loop, the native runs through tests/tools/e2e.py.
Each suite keeps its cases, its own checks and its command line:
gen_gradcheck.py / run_gradcheck.py, gen_hvp.py / run_hvp.py.
"""
