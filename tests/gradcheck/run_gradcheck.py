#!/usr/bin/python3
"""run_gradcheck.py -- run the gradient-check suite (no torch needed).

Cases and goldens are written by gen_gradcheck.py (see its docstring
for what each case checks and the tolerances). Three checks:

  --coverage        every op of ir/ops.def that can carry a gradient has
                    a case (manifest.txt) or a reason in skipped.txt;
  --ir RLXC         evaluate the IR that `rlxc --grad --emit=ir` prints
                    with the NumPy interpreter ir_eval.py: the gradient
                    entry against the torch goldens (f32 tolerance
                    1e-4*|ref| + 1e-5*max(1, max|ref|); f64 1e-8/1e-10),
                    and, for f64 cases with a finite-difference run,
                    central differences (step 1e-6) of <d_output, out0>
                    against the gradient;
  --native BUILD    compile, link and run every case with the e2e
                    machinery (tests/tools/e2e.py): the same goldens
                    plus the harness's finite-difference check, on
                    native code. Cases listed in native_xfail.txt (an
                    op code generation does not support yet) may fail:
                    XFAIL, with the reason.
Usage: run_gradcheck.py [--coverage] [--ir RLXC] [--native BUILD] [CASE...]
Exit status 0 when every selected check passes.
"""
import argparse
import glob
import os
import re
import shlex
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
SRC = os.path.dirname(os.path.dirname(HERE))
CASES = os.path.join(HERE, "cases")
GOLDEN = os.path.join(HERE, "golden")


def op_table():
    text = open(os.path.join(SRC, "ir", "ops.def")).read()
    rows = re.findall(r'^OP\(\s*\w+\s*,\s*"(\w+)"\s*,[^,]*,[^,]*,\s*([^,]+),',
                      text, re.M)
    return [(n, f.strip()) for n, f in rows]


def coverage():
    covered = set()
    for line in open(os.path.join(HERE, "manifest.txt")):
        if not line.startswith("#"):
            covered.update(line.split()[1:])
    skipped = set()
    for line in open(os.path.join(HERE, "skipped.txt")):
        if line.strip() and not line.startswith("#"):
            skipped.add(line.split("\t")[0])
    bad = [n for n, f in op_table()
           if not any(x in f for x in ("OPF_PSEUDO", "OPF_NO_GRAD",
                                       "OPF_COMPARE"))
           and n not in covered and n not in skipped]
    for n in bad:
        print("FAIL coverage: op '%s' has no gradient case and no reason "
              "in skipped.txt" % n)
    if not bad:
        print("PASS coverage: %d ops with cases, %d skipped with reasons"
              % (len(covered), len(skipped)))
    return not bad


def all_cases():
    return sorted(os.path.basename(os.path.dirname(p)) for p in
                  glob.glob(os.path.join(GOLDEN, "*", "run.txt")))


def read_spec(name):
    spec = {"rlxc": [], "runs": []}
    for line in open(os.path.join(GOLDEN, name, "run.txt")):
        w = shlex.split(line, comments=True)
        if w and w[0] == "rlxc":
            spec["rlxc"] += w[1:]
        elif w and w[0] == "run":
            spec["runs"].append((w[1], w[2], w[3:]))
    return spec


# ---- IR-level check ----

def ir_case(rlxc, name, np, ir_eval):
    spec = read_spec(name)
    with tempfile.TemporaryDirectory(prefix="rlx-gc-") as tmp:
        ir = os.path.join(tmp, name + ".ir")
        p = subprocess.run([rlxc, os.path.join(CASES, name + ".rlx"),
                            "--emit=ir", "-o", ir] + spec["rlxc"],
                           stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                           timeout=120)
        if p.returncode:
            return "rlxc: " + p.stderr.decode()[:300]
        graphs = ir_eval.parse_module(open(ir).read())
    for entry, sub, args in spec["runs"]:
        g = graphs[entry]
        d = os.path.join(GOLDEN, name, sub)
        ins = []
        for i, (_, (dt, shape)) in enumerate(g.args):
            raw = np.fromfile(os.path.join(d, "in%d.bin" % i),
                              dtype=np.dtype(ir_eval.NP[dt]).newbyteorder("<")
                              if dt != "bool" else np.uint8)
            ins.append(raw.reshape(shape))
        outs = ir_eval.run_graph(graphs, entry, ins)
        err = compare(np, outs, d, g)
        if err:
            return "%s %s: %s" % (entry, sub, err)
        if "--fd" in args:
            err = fd_check(np, ir_eval, graphs, entry, ins, args)
            if err:
                return "%s fd: %s" % (entry, err)
    return None


def compare(np, outs, d, g):
    for j, o in enumerate(outs):
        ref = np.fromfile(os.path.join(d, "out%d.bin" % j), dtype="<f8")
        if np.iscomplexobj(o):  # goldens hold (re, im) pairs
            got = np.asarray(o, dtype=np.complex128).reshape(-1).view(
                np.float64)
        else:
            got = np.asarray(o, dtype=np.float64).reshape(-1)
        if got.size != ref.size:
            return "output %d: %d elements, golden %d" % (j, got.size,
                                                          ref.size)
        f32 = o.dtype in (np.float32, np.complex64)
        rtol, atol = (1e-4, 1e-5) if f32 else (1e-8, 1e-10)
        scale = max(1.0, float(np.max(np.abs(ref))) if ref.size else 1.0)
        bad = np.abs(got - ref) > rtol * np.abs(ref) + atol * scale
        if bad.any():
            k = int(np.argmax(bad))
            return ("output %d (%s): %d of %d differ, e.g. [%d] got %.9g "
                    "want %.9g" % (j, g.rets[j], int(bad.sum()), bad.size,
                                   k, got[k], ref[k]))
    return None


def fd_check(np, ir_eval, graphs, entry, ins, args):
    """Central differences of <dout, out0> for every param of entry."""
    g = graphs[entry]
    rng = np.random.default_rng(7)
    out0 = ir_eval.run_graph(graphs, entry, ins)[0]
    dout = rng.uniform(-1, 1, size=out0.shape)
    gins = ins + [dout.astype(out0.dtype)]
    grads = ir_eval.run_graph(graphs, entry + "_grad", gins)[len(g.rets):]
    # gradients come in param order (the default wrt set)
    pidx = [i for i, (n, _) in enumerate(g.args) if n in g.params]
    eps = 1e-6
    for k, i in enumerate(pidx):
        x = ins[i]
        flat = x.reshape(-1)
        for e in range(flat.size):
            x0 = flat[e]
            flat[e] = x0 + eps
            fp = float(np.sum(dout * ir_eval.run_graph(graphs, entry, ins)[0]))
            flat[e] = x0 - eps
            fm = float(np.sum(dout * ir_eval.run_graph(graphs, entry, ins)[0]))
            flat[e] = x0
            fd = (fp - fm) / (2 * eps)
            an = float(grads[k].reshape(-1)[e])
            if abs(fd - an) > 1e-5 * abs(fd) + 1e-7 * max(1.0, abs(fd)):
                return "d_%s[%d]: fd %.9g analytic %.9g" % (
                    g.args[i][0], e, fd, an)
    return None


def run_ir(rlxc, cases):
    import numpy as np
    sys.path.insert(0, HERE)
    import ir_eval
    failed = 0
    for name in cases:
        try:
            err = ir_case(rlxc, name, np, ir_eval)
        except Exception as e:  # report, keep going
            err = "%s: %s" % (type(e).__name__, e)
        print(("FAIL ir %s: %s" % (name, err)) if err else "PASS ir " + name)
        failed += bool(err)
    print("ir: %d/%d cases passed" % (len(cases) - failed, len(cases)))
    return failed == 0


def run_native(build, cases, cflags=""):
    sys.path.insert(0, os.path.join(SRC, "tests", "tools"))
    import e2e
    e2e.CASES, e2e.GOLDEN = CASES, GOLDEN
    class Args(argparse.Namespace):
        def __getattr__(self, name):  # options e2e.py adds later: empty
            return ""
    args = Args(build=build, work=None, verbose=False, cflags=cflags,
                cc=os.environ.get("CC", "cc"))
    r = e2e.Runner(args)
    xfail = {}
    for line in open(os.path.join(HERE, "native_xfail.txt")):
        if line.strip() and not line.startswith("#"):
            k, _, why = line.strip().partition(" ")
            xfail[k] = why.strip()
    failed = 0
    for name in cases:
        try:
            r.run_case(name)
            note = (" (listed in native_xfail.txt: remove it)"
                    if name in xfail else "")
            print("PASS native %s%s" % (name, note))
        except e2e.CaseFail as e:
            if name in xfail:
                print("XFAIL native %s: %s [%s]" % (name, xfail[name], e))
            else:
                failed += 1
                print("FAIL native %s: %s" % (name, e))
        sys.stdout.flush()
    print("native: %d/%d cases passed" % (len(cases) - failed, len(cases)))
    return failed == 0


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("cases", nargs="*")
    ap.add_argument("--coverage", action="store_true")
    ap.add_argument("--ir", metavar="RLXC")
    ap.add_argument("--native", metavar="BUILD")
    ap.add_argument("--cflags", default="",
                    help="extra C flags for the native drivers "
                    "(e.g. -fsanitize=address,undefined)")
    a = ap.parse_args()
    cases = a.cases or all_cases()
    ok = True
    if a.coverage:
        ok = coverage() and ok
    if a.ir:
        ok = run_ir(a.ir, cases) and ok
    if a.native:
        ok = run_native(a.native, cases, a.cflags) and ok
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
