#!/usr/bin/python3
"""run_gradcheck.py -- run the gradient-check suite (no torch needed).

Cases and goldens are written by gen_gradcheck.py (see its docstring
for what each case checks and the tolerances). The checks themselves
(goldens, finite differences, dot product, HVP identities, the native
runs) are the AD harness's, tests/tools/adcheck/check.py, shared with
tests/hvp/run_hvp.py; this file holds the suite's selection of them,
its op families and its sanitizer sample. Five checks:

  --coverage        every op of ir/ops.def that can carry a gradient has
                    a case (manifest.txt) or a reason in skipped.txt;
  --ir RLXC         evaluate the IR that `rlxc --grad --emit=ir` prints
                    with the NumPy interpreter ir_eval.py: the gradient
                    entry against the torch goldens (f32 tolerance
                    1e-4*|ref| + 1e-5*max(1, max|ref|); f64 1e-8/1e-10;
                    a run's --rtol/--atol replace them, as in rlx_run),
                    and, for f64 cases with a finite-difference run,
                    central differences (step 1e-6) of <d_output, out0>
                    against the gradient (reverse mode only: rlxc runs
                    without --jvp/--hvp and the _jvp runs are left out);
  --jvp-ir RLXC     forward mode on the IR of one `rlxc --grad --jvp
                    --emit=ir` per case: ENTRY_jvp against the torch
                    JVP goldens (jvp/, same tolerances); for f64 cases
                    with a run of ENTRY itself (those with finite
                    differences), central differences (step 1e-6) of
                    ENTRY along the golden tangent against the tangent
                    of output 0; for every f64 case, the dot-product
                    test <w, J v> = <J^T w, v> (ENTRY_jvp against
                    ENTRY_grad, random v and w) to 1e-10 relative to
                    sum|w (J v)| + sum|(J^T w) v| (a case's run.txt may
                    loosen or skip it with a `# jvp-dot:` line giving
                    the reason); c64 cases (one f32 variant) get
                    both reverse- and forward-mode finite differences
                    and the dot product (inner product Re sum(conj(a)
                    b)) with ir_eval computing c64 in complex128 and
                    f32 in float64;
  --hvp-ir RLXC     Hessian-vector products through every op, without
                    a reference: each f64 case's output y made a scalar
                    loss sum(sin(y) (y + 1)) (slope 1 at y = 0),
                    compiled with --grad --hvp
                    (forward over the op's VJP rule); <grad, v> equals
                    sum(grad * v), H is symmetric (<u, H w> = <w, H u>,
                    tolerance as the dot product's) and, for cases with
                    finite differences, H v equals central differences
                    of ENTRY_grad along v (`# hvp-sym: skip (why)` in
                    run.txt skips symmetry);
  --native BUILD    compile, link and run every case with the e2e
                    machinery (tests/tools/e2e.py): the same goldens,
                    the _jvp runs included (one rlxc --grad --jvp per
                    case), plus the harness's finite-difference check,
                    on native code. Cases listed in native_xfail.txt
                    (an op code generation does not support yet) may
                    fail: XFAIL, with the reason.
A case whose rlxc fails with "forward mode through 'OP' is not
supported yet" (a rule still being written) is reported as FAIL ...
PENDING with the op, and the run ends with the list of such ops; it
still fails (never an expected failure). --native then runs it again
without --jvp, so its reverse-mode result is still reported.
Usage: run_gradcheck.py [--coverage] [--ir RLXC] [--jvp-ir RLXC]
                        [--hvp-ir RLXC] [--native BUILD] [--sample]
                        [--family FAMILY] [--list-families] [CASE...]
Exit status 0 when every selected check passes.
"""
import argparse
import os
import re
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
SRC = os.path.dirname(os.path.dirname(HERE))
sys.path.insert(0, os.path.join(SRC, "tests", "tools"))
from adcheck import check as ac  # noqa: E402

SUITE = ac.Suite(HERE, xfail=os.path.join(HERE, "native_xfail.txt"))


def coverage():
    covered = set()
    for line in open(os.path.join(HERE, "manifest.txt")):
        if not line.startswith("#"):
            covered.update(line.split()[1:])
    skipped = set()
    for line in open(os.path.join(HERE, "skipped.txt")):
        if line.strip() and not line.startswith("#"):
            skipped.add(line.split("\t")[0])
    bad = [n for n, f in ac.op_table()
           if ac.needs_case(f) and n not in covered and n not in skipped]
    for n in bad:
        print("FAIL coverage: op '%s' has no gradient case and no reason "
              "in skipped.txt" % n)
    if not bad:
        print("PASS coverage: %d ops with cases, %d skipped with reasons"
              % (len(covered), len(skipped)))
    return not bad


# Op families, by the case name's prefix after "gc_": ctest runs each
# check once per family (tests/gradcheck/CMakeLists.txt), so that -j2
# balances them; "other" takes every case no family names.
FAMILIES = {
    "elementwise": ("u", "b", "activation", "bcast", "where", "cast",
                    "relu", "stop", "custom"),
    "norm": ("group", "rms", "batch", "layer"),
    "attention": ("attention", "rope", "softmax"),
    "conv": ("conv2d", "max", "avg"),
    "sequence": ("rnn", "scan", "selective", "gated", "cumsum", "ctl"),
    "quant": ("fq", "fqb", "lsq", "lsqb", "dequant"),
}


def family_of(name):
    head = name[3:] if name.startswith("gc_") else name
    head = head.split("_")[0]
    for fam, heads in FAMILIES.items():
        if head in heads:
            return fam
    return "other"


# The sanitizer tree's fixed sample (--sample, docs/testing.md), for
# the IR checks (the sanitized rlxc's --grad / --jvp / --hvp) and the
# native runs (the sanitized runtime's kernels, the driver) alike: of
# the sorted cases, every SAMPLE_EVERY-th, the first case that checks
# each op of manifest.txt, and in the families that call runtime
# kernels the first case of each (op, dtype). So every op still goes
# through each sanitized path.
SAMPLE_EVERY = 6
KERNEL_FAMILIES = ("conv", "attention", "sequence", "quant")


def sample(cases):
    ops = {}
    for line in open(os.path.join(HERE, "manifest.txt")):
        if not line.startswith("#"):
            w = line.split()
            ops[w[0]] = w[1:]
    keep, seen = [], set()
    for i, name in enumerate(SUITE.all_cases()):
        base = re.sub(r"^gc_|_(f32|f64|c64)$", "", name)
        keys = set(ops.get(base, ()))
        if family_of(name) in KERNEL_FAMILIES:
            keys |= {(op, name[-3:]) for op in keys}
        if name in cases and (i % SAMPLE_EVERY == 0 or keys - seen):
            keep.append(name)
        seen |= keys
    return keep


# ---- IR-level checks ----

def ir_case(rlxc, name, np, ir_eval):
    """Reverse mode only: without --jvp/--hvp, the other runs."""
    spec = SUITE.read_spec(name)
    try:
        graphs = SUITE.compile_ir(rlxc, name, [
            a for a in spec["rlxc"] if not a.startswith(ac.FWD_FLAGS)],
            ir_eval)
    except RuntimeError as e:
        return str(e)
    return SUITE.eval_runs(np, ir_eval, graphs, name,
                           [r for r in spec["runs"]
                            if not ac.is_fwd_run(r)]) or \
        c64_fd(np, ir_eval, graphs, name, spec)


def c64_fd(np, ir_eval, graphs, name, spec):
    """A c64 case's reverse-mode finite differences, in double, on the
    inputs of its ENTRY_grad run (None or a reason)."""
    for entry, sub, _ in spec["runs"]:
        if not entry.endswith("_grad") or not ac.is_c64_case(graphs[entry]):
            continue
        base = entry[:-5]
        ins = ac.load_inputs(np, ir_eval, graphs[base],
                             os.path.join(SUITE.golden, name, sub))
        with ac.widened(np, ir_eval) as w:
            err = ac.fd_check(np, ir_eval, graphs, base, w.wide(ins), [])
        if err:
            return "%s fd (c64 in double): %s" % (base, err)
    return None


def jvp_case(rlxc, name, np, ir_eval):
    spec = SUITE.read_spec(name)
    try:
        graphs = SUITE.compile_ir(rlxc, name, spec["rlxc"], ir_eval)
    except RuntimeError as e:
        return str(e)
    return SUITE.jvp_checks(np, ir_eval, graphs, name, spec)


def hvp_case(rlxc, name, np, ir_eval):
    """f64 cases: ENTRY's output y made a scalar loss sum(sin(y)(y + 1))
    (its slope is 1, not 0, at y = 0, so second derivatives of ops at
    points where y = 0 count: products with a zero),
    compiled with --grad --hvp (forward over reverse through the op's
    VJP rule); H symmetric and, for cases with finite differences,
    H v = central differences of ENTRY_grad along v. No reference."""
    spec = SUITE.read_spec(name)
    text = open(SUITE.source(name)).read()
    m = re.search(r"\n  return %(\w+)\n\}\s*$", text)
    text = text[:m.start()] + ("\n  %%hvp_loss = reduce_sum(mul(sin(%%%s), "
                               "add(%%%s, 1.0)))\n  return %%hvp_loss\n}\n"
                               % (m.group(1), m.group(1)))
    args = [a for a in spec["rlxc"] if not a.startswith(ac.FWD_FLAGS)]
    graphs = SUITE.compile_ir(rlxc, name, args + ["--hvp"], ir_eval, text)
    g, gh = graphs[name], graphs[name + "_hvp"]
    x = ac.load_inputs(np, ir_eval, g, os.path.join(SUITE.golden, name,
                                                    "grad"))
    seeds = ac.seed_index(g, gh, len(g.args) + 1)
    nt, d = len(seeds), np.array(0.75)
    rng = np.random.default_rng(3)
    u, w = ([rng.uniform(-1, 1, size=x[i].shape) for i in seeds]
            for _ in range(2))
    hvp = ac.hvp_fn(ir_eval, graphs, name + "_hvp", x, d, nt)
    gu, dot, hu = hvp(u)
    err = ac.grad_dot_check(np, gu, dot, u)
    if err:
        return err
    rtol, _ = spec["dot"]
    if rtol is not None and spec["sym"]:
        err = ac.symmetry_check(np, hvp, u, w, rtol, hu)
        if err:
            return err
    if any(r[0] == name for r in spec["runs"]):  # cases with fd
        return ac.hvp_fd_check(np, ir_eval, graphs, name, x, d, seeds, u,
                               hu)
    return None


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("cases", nargs="*")
    ap.add_argument("--coverage", action="store_true")
    ap.add_argument("--ir", metavar="RLXC")
    ap.add_argument("--jvp-ir", metavar="RLXC")
    ap.add_argument("--hvp-ir", metavar="RLXC")
    ap.add_argument("--native", metavar="BUILD")
    ap.add_argument("--family", choices=list(FAMILIES) + ["other"],
                    help="only the cases of this op family")
    ap.add_argument("--sample", action="store_true",
                    help="only the sanitizer tree's sample of the cases")
    ap.add_argument("--list-families", action="store_true")
    a = ap.parse_args()
    if a.list_families:
        print(";".join(list(FAMILIES) + ["other"]))
        return 0
    cases = a.cases or SUITE.all_cases()
    if a.family:
        cases = [c for c in cases if family_of(c) == a.family]
    if a.sample:
        cases = sample(cases)
    ok = True
    if a.coverage:
        ok = coverage() and ok
    if a.ir:
        ok = SUITE.run_checks("ir", ir_case, a.ir, cases) and ok
    if a.jvp_ir:
        ok = SUITE.run_checks("jvp", jvp_case, a.jvp_ir, cases) and ok
    if a.hvp_ir:
        ok = SUITE.run_checks("hvp", hvp_case, a.hvp_ir,
                              [c for c in cases if c.endswith("_f64")]) \
            and ok
    if a.native:
        ok = SUITE.run_native(a.native, cases) and ok
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
