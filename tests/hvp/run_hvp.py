#!/usr/bin/python3
"""run_hvp.py -- run the forward-mode suite of whole graphs (no torch).

Cases and goldens are written by gen_hvp.py (see its docstring). The
machinery is the AD harness's (tests/tools/adcheck/check.py, shared
with tests/gradcheck/run_gradcheck.py), pointed at this directory.
Two checks:

  --ir RLXC      one `rlxc CASE --emit=ir` per case with its run.txt
                 flags (--grad --jvp --hvp, or fewer); the IR is
                 evaluated by tests/gradcheck/ir_eval.py: every run
                 (ENTRY_grad, ENTRY_jvp, ENTRY_hvp; ENTRY's finite
                 differences against ENTRY_grad) against its goldens
                 (f32 1e-4*|ref| + 1e-5*max(1, max|ref|), f64 1e-8 /
                 1e-10); for f64, run_gradcheck's JVP checks (finite
                 differences along the tangent, the dot product
                 <w, J v> = <J^T w, v>) and, for ENTRY_hvp:
                   - <grad, v> (its output) = sum over wrt of grad * v
                     of its own gradient outputs (1e-12 relative);
                   - d_output * (tangent of the loss from ENTRY_jvp) =
                     <grad, v> (1e-10 relative);
                   - symmetry: <u, H w> = <w, H u> for random u, w
                     (1e-10 relative to the sums of |products|);
                   - central differences (step 1e-6) of ENTRY_grad
                     along v against H v (1e-5*|fd| + 1e-7*max(1,
                     max|fd|)), where the case has finite differences.
                 `# jvp-dot: skip (why)` / `# hvp-sym: skip (why)` in a
                 run.txt skip the identities that assume the derivatives
                 are consistent (custom_fn bodies that are not).
  --native BUILD compile (one rlxc per case), link and run every run
                 line through tests/tools/e2e.py (the harness's
                 tolerances; --threads 1,2 bit-identity).
Usage: run_hvp.py [--ir RLXC] [--native BUILD] [CASE...]
"""
import argparse
import os
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
SRC = os.path.dirname(os.path.dirname(HERE))
sys.path.insert(0, os.path.join(SRC, "tests", "tools"))
from adcheck import check as ac  # noqa: E402

SUITE = ac.Suite(HERE)


def hvp_checks(np, ir_eval, graphs, name, spec):
    """The f64 ENTRY_hvp runs: <grad, v>, d_output * the loss's tangent,
    symmetry, finite differences of ENTRY_grad along the golden
    tangent (cases with a finite-difference run); None or a reason."""
    sk = spec["skip"]
    for entry, sub, _ in spec["runs"]:
        if not entry.endswith("_hvp"):
            continue
        base = entry[:-4]
        g, gh = graphs[base], graphs[entry]
        ins = ac.load_inputs(np, ir_eval, gh, os.path.join(SUITE.golden,
                                                           name, sub))
        if ins[0].dtype != np.float64:
            continue
        nin = len(g.args)
        x, d, v = ins[:nin], ins[nin], ins[nin + 1:]
        hvp = ac.hvp_fn(ir_eval, graphs, entry, x, d, len(v))
        grads, gdot, hv = hvp(v)
        err = ac.grad_dot_check(np, grads, gdot, v)
        if err:
            return "%s: %s" % (entry, err)
        if base + "_jvp" in graphs and "jvp-dot" not in sk:
            tl = ir_eval.run_graph(graphs, base + "_jvp",
                                   x + list(v))[len(g.rets)]
            lt = float(d) * float(tl)
            if not ac.rel_ok(np, lt, gdot,
                             [gr * t for gr, t in zip(grads, v)], 1e-10):
                return ("%s: d_output * tangent of the loss (ENTRY_jvp) "
                        "%.17g, <grad, v> %.17g" % (entry, lt, gdot))
        if "hvp-sym" not in sk:
            rng = np.random.default_rng(5)
            u = [rng.uniform(-1, 1, size=t.shape) for t in v]
            w = [rng.uniform(-1, 1, size=t.shape) for t in v]
            err = ac.symmetry_check(np, hvp, u, w, 1e-10)
            if err:
                return "%s: %s" % (entry, err)
        fd = any(r[0] == base and "--fd" in r[2] for r in spec["runs"])
        if fd and base + "_grad" in graphs:
            err = ac.hvp_fd_check(np, ir_eval, graphs, base, x, d,
                                  ac.seed_index(g, gh, nin + 1), v, hv)
            if err:
                return "%s fd: %s" % (entry, err)
    return None


def ir_case(rlxc, name, np, ir_eval):
    spec = SUITE.read_spec(name)
    graphs = SUITE.compile_ir(rlxc, name, spec["rlxc"], ir_eval)
    err = SUITE.eval_runs(np, ir_eval, graphs, name,
                          [r for r in spec["runs"] if not ac.is_fwd_run(r)])
    if err:
        return err
    err = SUITE.jvp_checks(np, ir_eval, graphs, name, spec)
    if err:
        return err
    return hvp_checks(np, ir_eval, graphs, name, spec)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("cases", nargs="*")
    ap.add_argument("--ir", metavar="RLXC")
    ap.add_argument("--native", metavar="BUILD")
    a = ap.parse_args()
    cases = a.cases or SUITE.all_cases()
    ok = True
    if a.ir:
        ok = SUITE.run_checks("ir", ir_case, a.ir, cases) and ok
    if a.native:
        ok = SUITE.run_native(a.native, cases) and ok
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
