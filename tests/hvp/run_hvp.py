#!/usr/bin/python3
"""run_hvp.py -- run the forward-mode suite of whole graphs (no torch).

Cases and goldens are written by gen_hvp.py (see its docstring). The
machinery is tests/gradcheck/run_gradcheck.py's, pointed at this
directory. Two checks:

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
import re
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
SRC = os.path.dirname(os.path.dirname(HERE))
sys.path.insert(0, os.path.join(SRC, "tests", "gradcheck"))
import run_gradcheck as rg  # noqa: E402

rg.CASES = os.path.join(HERE, "cases")
rg.GOLDEN = os.path.join(HERE, "golden")


def skips(name):
    out = {}
    for line in open(os.path.join(rg.GOLDEN, name, "run.txt")):
        m = re.match(r"#\s*(hvp-sym|jvp-dot):\s*skip\s*\((.*)\)", line)
        if m:
            out[m.group(1)] = m.group(2)
    return out


def rel_err(np, a, b, terms):
    scale = float(sum(np.abs(t).sum() for t in terms))
    return abs(a - b) / scale if scale else abs(a - b)


def hvp_checks(np, ir_eval, graphs, name, spec):
    sk = skips(name)
    for entry, sub, _ in spec["runs"]:
        if not entry.endswith("_hvp"):
            continue
        base = entry[:-4]
        g, gh = graphs[base], graphs[entry]
        ins = rg.load_inputs(np, ir_eval, gh, os.path.join(rg.GOLDEN, name,
                                                           sub))
        if ins[0].dtype != np.float64:
            continue
        nin = len(g.args)
        x, d, v = ins[:nin], ins[nin], ins[nin + 1:]
        nt = len(v)

        def hvp(tans):
            o = ir_eval.run_graph(graphs, entry, x + [d] + list(tans))
            return o[1:1 + nt], float(o[1 + nt]), o[2 + nt:]
        grads, gdot, hv = hvp(v)
        prods = [gr * t for gr, t in zip(grads, v)]
        own = float(sum(p.sum() for p in prods))
        if not rel_err(np, gdot, own, prods) <= 1e-12:  # NaN fails
            return ("%s: <grad, v> output %.17g, sum grad*v %.17g" %
                    (entry, gdot, own))
        if base + "_jvp" in graphs and "jvp-dot" not in sk:
            tl = ir_eval.run_graph(graphs, base + "_jvp",
                                   x + list(v))[len(g.rets)]
            lt = float(d) * float(tl)
            if not rel_err(np, lt, gdot, prods) <= 1e-10:
                return ("%s: d_output * tangent of the loss (ENTRY_jvp) "
                        "%.17g, <grad, v> %.17g" % (entry, lt, gdot))
        if "hvp-sym" not in sk:
            rng = np.random.default_rng(5)
            u = [rng.uniform(-1, 1, size=t.shape) for t in v]
            w = [rng.uniform(-1, 1, size=t.shape) for t in v]
            hu, hw = hvp(u)[2], hvp(w)[2]
            a = [p * q for p, q in zip(u, hw)]
            b = [p * q for p, q in zip(w, hu)]
            sa, sb = float(sum(t.sum() for t in a)), \
                float(sum(t.sum() for t in b))
            if not rel_err(np, sa, sb, a + b) <= 1e-10:
                return ("%s: not symmetric: <u, H w> = %.17g, <w, H u> = "
                        "%.17g" % (entry, sa, sb))
        fd = any(r[0] == base and "--fd" in r[2] for r in spec["runs"])
        if fd and base + "_grad" in graphs:
            pidx = rg.seed_index(g, gh, nin + 1)
            eps = 1e-6

            def grad_at(s):
                xs = list(x)
                for k, i in enumerate(pidx):
                    xs[i] = x[i] + s * v[k]
                return ir_eval.run_graph(graphs, base + "_grad",
                                         xs + [d])[len(g.rets):]
            gp, gm = grad_at(eps), grad_at(-eps)
            for k, i in enumerate(pidx):
                f = (gp[k] - gm[k]) / (2 * eps)
                bad = ~(np.abs(f - hv[k]) <= 1e-5 * np.abs(f) + 1e-7 * max(
                    1.0, float(np.max(np.abs(f))) if f.size else 1.0))
                if bad.any():
                    e = int(np.argmax(bad.reshape(-1)))
                    return ("%s fd: hvp_%s[%d]: fd %.9g hvp %.9g" % (
                        entry, g.args[i][0], e, f.reshape(-1)[e],
                        hv[k].reshape(-1)[e]))
    return None


def ir_case(rlxc, name, np, ir_eval):
    spec = rg.read_spec(name)
    if "jvp-dot" in skips(name):
        spec["dot"] = (None, skips(name)["jvp-dot"])
    graphs = rg.compile_ir(rlxc, name, spec["rlxc"], ir_eval)
    err = rg.eval_runs(np, ir_eval, graphs, name,
                       [r for r in spec["runs"] if not rg.is_fwd_run(r)])
    if err:
        return err
    err = rg.jvp_checks(np, ir_eval, graphs, name, spec)
    if err:
        return err
    return hvp_checks(np, ir_eval, graphs, name, spec)


def run_ir(rlxc, cases):
    import numpy as np
    import ir_eval
    failed, pending = 0, {}
    for name in cases:
        try:
            err = ir_case(rlxc, name, np, ir_eval)
        except rg.Pending as e:
            pending[str(e)] = pending.get(str(e), 0) + 1
            err = ("PENDING: forward mode through '%s' is not supported "
                   "yet" % e)
        except Exception as e:  # report, keep going
            err = "%s: %s" % (type(e).__name__, e)
        print(("FAIL ir %s: %s" % (name, err)) if err else "PASS ir " + name)
        sys.stdout.flush()
        failed += bool(err)
    print("ir: %d/%d cases passed" % (len(cases) - failed, len(cases)))
    if pending:
        print("ir: " + rg.pending_note(pending))
    return failed == 0


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("cases", nargs="*")
    ap.add_argument("--ir", metavar="RLXC")
    ap.add_argument("--native", metavar="BUILD")
    a = ap.parse_args()
    cases = a.cases or rg.all_cases()
    ok = True
    if a.ir:
        ok = run_ir(a.ir, cases) and ok
    if a.native:
        ok = rg.run_native(a.native, cases) and ok
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
