#!/usr/bin/python3
"""run_gradcheck.py -- run the gradient-check suite (no torch needed).

Cases and goldens are written by gen_gradcheck.py (see its docstring
for what each case checks and the tolerances). Five checks:

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
                        [--hvp-ir RLXC] [--native BUILD [--sample]]
                        [--family FAMILY] [--list-families] [CASE...]
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


# The sanitizer tree's fixed sample (--sample, docs/testing.md): every
# op's compilation already runs through the sanitized rlxc in the IR
# checks; the native runs (the sanitized runtime's kernels, the driver)
# take, of the sorted cases, every SAMPLE_EVERY-th, the first case that
# checks each op of manifest.txt, and in the families that call runtime
# kernels the first case of each (op, dtype).
SAMPLE_EVERY = 6
KERNEL_FAMILIES = ("conv", "attention", "sequence", "quant")


def sample(cases):
    ops = {}
    for line in open(os.path.join(HERE, "manifest.txt")):
        if not line.startswith("#"):
            w = line.split()
            ops[w[0]] = w[1:]
    keep, seen = [], set()
    for i, name in enumerate(all_cases()):
        base = re.sub(r"^gc_|_(f32|f64|c64)$", "", name)
        keys = set(ops.get(base, ()))
        if family_of(name) in KERNEL_FAMILIES:
            keys |= {(op, name[-3:]) for op in keys}
        if name in cases and (i % SAMPLE_EVERY == 0 or keys - seen):
            keep.append(name)
        seen |= keys
    return keep


FWD_FLAGS = ("--jvp", "--hvp")  # rlxc flags of forward mode
FWD_ENTRIES = ("_jvp", "_hvp")   # suffixes of forward-mode entries
PENDING_RE = re.compile(r"forward mode through '(\w+)' is not supported "
                        r"yet")


def read_spec(name):
    """run.txt: rlxc args, runs, and the dot-product test's tolerance
    (`# jvp-dot: rtol X (why)` or `# jvp-dot: skip (why)`); the HVP
    symmetry test follows it unless `# hvp-sym: skip (why)` (a gradient
    that is a convention, not the derivative of a function, e.g. STE)."""
    spec = {"rlxc": [], "runs": [], "dot": (1e-10, None), "sym": True}
    for line in open(os.path.join(GOLDEN, name, "run.txt")):
        if re.match(r"#\s*hvp-sym:\s*skip\s*\(", line):
            spec["sym"] = False
        m = re.match(r"#\s*jvp-dot:\s*(skip|rtol\s+(\S+))\s*\((.*)\)",
                     line)
        if m:
            spec["dot"] = (None if m.group(1) == "skip"
                           else float(m.group(2)), m.group(3))
        w = shlex.split(line, comments=True)
        if w and w[0] == "rlxc":
            spec["rlxc"] += w[1:]
        elif w and w[0] == "run":
            spec["runs"].append((w[1], w[2], w[3:]))
    return spec


# ---- IR-level check ----

class Pending(Exception):
    """rlxc reports that forward mode does not cover an op yet."""


def compile_ir(rlxc, name, args, ir_eval, text=None):
    """{graph name: Graph} of `rlxc CASE --emit=ir ARGS` (of the graph
    text `text` instead of the case's file if given); raises Pending or
    RuntimeError (with rlxc's message) when it fails."""
    with tempfile.TemporaryDirectory(prefix="rlx-gc-") as tmp:
        ir = os.path.join(tmp, name + ".ir")
        src = os.path.join(CASES, name + ".rlx")
        if text is not None:
            src = os.path.join(tmp, name + ".rlx")
            open(src, "w").write(text)
        p = subprocess.run([rlxc, src, "--emit=ir", "-o", ir] + args,
                           stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                           timeout=120)
        if p.returncode:
            err = p.stderr.decode()
            m = PENDING_RE.search(err)
            if m:
                raise Pending(m.group(1))
            raise RuntimeError("rlxc: " + err[:300])
        return ir_eval.parse_module(open(ir).read())


def load_inputs(np, ir_eval, g, d):
    ins = []
    for i, (_, (dt, shape)) in enumerate(g.args):
        raw = np.fromfile(os.path.join(d, "in%d.bin" % i),
                          dtype=np.dtype(ir_eval.NP[dt]).newbyteorder("<")
                          if dt != "bool" else np.uint8)
        ins.append(raw.reshape(shape))
    return ins


def eval_runs(np, ir_eval, graphs, name, runs):
    """Every run's entry on its golden inputs against its goldens (and
    finite differences where the run has --fd); None or a reason."""
    for entry, sub, args in runs:
        g = graphs[entry]
        d = os.path.join(GOLDEN, name, sub)
        ins = load_inputs(np, ir_eval, g, d)
        outs = ir_eval.run_graph(graphs, entry, ins)
        err = compare(np, outs, d, g, run_tol(args))
        if err:
            return "%s %s: %s" % (entry, sub, err)
        if "--fd" in args:
            err = fd_check(np, ir_eval, graphs, entry, ins, args)
            if err:
                return "%s fd: %s" % (entry, err)
    return None


def is_fwd_run(run):
    return run[0].endswith(FWD_ENTRIES)


def ir_case(rlxc, name, np, ir_eval):
    """Reverse mode only: without --jvp/--hvp, the other runs."""
    spec = read_spec(name)
    try:
        graphs = compile_ir(rlxc, name, [a for a in spec["rlxc"] if not
                                         a.startswith(FWD_FLAGS)], ir_eval)
    except RuntimeError as e:
        return str(e)
    return eval_runs(np, ir_eval, graphs, name,
                     [r for r in spec["runs"] if not is_fwd_run(r)]) or \
        c64_fd(np, ir_eval, graphs, name, spec)


def run_tol(args):
    """(rtol, atol) of a run's --rtol/--atol (either replaces the default
    pair, the other being 0, as in rlx_run), else None."""
    if "--rtol" not in args and "--atol" not in args:
        return None
    val = [float(args[args.index(k) + 1]) if k in args else 0.0
           for k in ("--rtol", "--atol")]
    return tuple(val)


def compare(np, outs, d, g, tol=None):
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
        rtol, atol = tol or ((1e-4, 1e-5) if f32 else (1e-8, 1e-10))
        fin = np.isfinite(ref)  # the harness's rule (docs/testing.md):
        scale = max(1.0, float(np.max(np.abs(ref[fin]))) if fin.any()
                    else 1.0)  # max over finite elements; NaN matches
        ok = np.abs(got - ref) <= rtol * np.abs(ref) + atol * scale
        ok |= (got == ref) | (np.isnan(got) & np.isnan(ref))  # NaN, inf
        bad = ~ok  # a NaN where the golden is a number fails
        if bad.any():
            k = int(np.argmax(bad))
            return ("output %d (%s): %d of %d differ, e.g. [%d] got %.9g "
                    "want %.9g" % (j, g.rets[j], int(bad.sum()), bad.size,
                                   k, got[k], ref[k]))
    return None


def rand_like(np, rng, x):
    """Uniform in [-1, 1) with x's shape and dtype (complex: re and im)."""
    v = rng.uniform(-1, 1, size=x.shape)
    if np.iscomplexobj(x):
        v = v + 1j * rng.uniform(-1, 1, size=x.shape)
    return v.astype(x.dtype)


def fd_check(np, ir_eval, graphs, entry, ins, args):
    """Central differences of Re<dout, out0> = Re sum(conj(dout) out0)
    for every wrt value of entry (an argument); a complex value is
    perturbed in re and in im, giving the re and im of its gradient
    (torch's convention: dL/dre + i dL/dim)."""
    g = graphs[entry]
    rng = np.random.default_rng(7)
    out0 = ir_eval.run_graph(graphs, entry, ins)[0]
    dout = rand_like(np, rng, out0)
    gins = ins + [dout]
    grads = ir_eval.run_graph(graphs, entry + "_grad", gins)[len(g.rets):]
    # gradients in wrt order, named d_NAME where the name is free (the
    # default wrt set: every param, in order)
    names = [n for n, _ in g.args]
    wrt = [r[2:] for r in graphs[entry + "_grad"].rets[len(g.rets):]]
    pidx = ([names.index(n) for n in wrt] if all(n in names for n in wrt)
            else [i for i, n in enumerate(names) if n in g.params])
    eps = 1e-6

    def loss():
        y = ir_eval.run_graph(graphs, entry, ins)[0]
        return float(np.real(np.sum(np.conj(dout) * y)))
    for k, i in enumerate(pidx):
        x = ins[i]
        flat = x.reshape(-1)
        units = (1, 1j) if np.iscomplexobj(x) else (1,)
        for e in range(flat.size):
            x0 = flat[e]
            for u in units:
                flat[e] = x0 + eps * u
                fp = loss()
                flat[e] = x0 - eps * u
                fm = loss()
                flat[e] = x0
                fd = (fp - fm) / (2 * eps)
                gk = grads[k].reshape(-1)[e]
                an = float(np.real(gk) if u == 1 else np.imag(gk))
                if abs(fd - an) > 1e-5 * abs(fd) + 1e-7 * max(1.0, abs(fd)):
                    return "d_%s[%d]%s: fd %.9g analytic %.9g" % (
                        g.args[i][0], e, "" if u == 1 else ".im", fd, an)
    return None


class widened:
    """c64 cases' finite differences and dot products run in double:
    inside, ir_eval computes c64 as complex128 and f32 as float64, and
    wide(x) converts an input."""

    def __init__(self, np, ir_eval):
        self.np, self.ir_eval = np, ir_eval

    def __enter__(self):
        self.saved = dict(self.ir_eval.NP)
        self.ir_eval.NP.update(c64=self.np.complex128, f32=self.np.float64)
        return self

    def wide(self, xs):
        np = self.np
        return [x.astype(np.complex128) if np.iscomplexobj(x) else
                x.astype(np.float64) if x.dtype == np.float32 else x.copy()
                for x in xs]

    def __exit__(self, *exc):
        self.ir_eval.NP.clear()
        self.ir_eval.NP.update(self.saved)
        return False


def is_c64_case(g):
    return any(dt == "c64" for _, (dt, _) in g.args)


def c64_fd(np, ir_eval, graphs, name, spec):
    """A c64 case's reverse-mode finite differences, in double, on the
    inputs of its ENTRY_grad run (None or a reason)."""
    for entry, sub, _ in spec["runs"]:
        if not entry.endswith("_grad") or not is_c64_case(graphs[entry]):
            continue
        base = entry[:-5]
        ins = load_inputs(np, ir_eval, graphs[base],
                          os.path.join(GOLDEN, name, sub))
        with widened(np, ir_eval) as w:
            err = fd_check(np, ir_eval, graphs, base, w.wide(ins), [])
        if err:
            return "%s fd (c64 in double): %s" % (base, err)
    return None


def seed_index(g, gd, first):
    """Positions in g's arguments of the values that derived graph gd
    (ENTRY_jvp, ENTRY_hvp) seeds: its arguments from `first` on, named
    tangent_NAME. Forward and reverse checks pair them with ENTRY_grad's
    gradients by position, so a case seeds what it differentiates, in
    the same order (the defaults: every float param)."""
    names = [a for a, _ in g.args]
    out = []
    for n, _ in gd.args[first:]:
        base = n[len("tangent_"):] if n.startswith("tangent_") else None
        if base not in names:
            raise ValueError("%s: %s seeds no argument of %s" % (
                gd.name, n, g.name))
        out.append(names.index(base))
    return out


def jvp_fd_check(np, ir_eval, graphs, entry, ins, tans, eps=1e-6):
    """Central differences of ENTRY's output 0 along the tangents (one
    per seeded argument) against ENTRY_jvp's tangent of output 0."""
    g = graphs[entry]
    an = ir_eval.run_graph(graphs, entry + "_jvp", ins + tans)[len(g.rets)]
    wide = np.complex128 if np.iscomplexobj(an) else np.float64
    an = an.astype(wide)
    pidx = seed_index(g, graphs[entry + "_jvp"], len(g.args))

    def at(s):
        x = list(ins)
        for k, i in enumerate(pidx):
            x[i] = ins[i] + s * tans[k]
        return ir_eval.run_graph(graphs, entry, x)[0].astype(wide)
    fd = (at(eps) - at(-eps)) / (2 * eps)
    bad = ~(np.abs(fd - an) <= 1e-5 * np.abs(fd) + 1e-7 * max(
        1.0, float(np.max(np.abs(fd))) if fd.size else 1.0))  # NaN: bad
    if bad.any():
        k = int(np.argmax(bad.reshape(-1)))
        return "tangent of %s[%d]: fd %.9g jvp %.9g" % (
            g.rets[0], k, fd.reshape(-1)[k], an.reshape(-1)[k])
    return None


def dot_check(np, ir_eval, graphs, entry, ins, rtol, seed=11):
    """<w, J v> (ENTRY_jvp) = <J^T w, v> (ENTRY_grad) for random v, w:
    forward and reverse mode are each other's transpose, whatever the
    reference. The inner product is the real one, <a, b> =
    Re sum(conj(a) b) (complex values: v, w with random re and im; the
    conjugate-Wirtinger gradient is the adjoint for it). Relative to
    sum|w (J v)| + sum|(J^T w) v|."""
    g = graphs[entry]
    pidx = seed_index(g, graphs[entry + "_jvp"], len(g.args))
    rng = np.random.default_rng(seed)
    v = [rand_like(np, rng, ins[i]) for i in pidx]
    jv = ir_eval.run_graph(graphs, entry + "_jvp", ins + v)[len(g.rets)]
    w = rand_like(np, rng, jv)
    gr = ir_eval.run_graph(graphs, entry + "_grad", ins + [w])[len(g.rets):]
    if len(gr) != len(v):
        return "%d gradients for %d tangents" % (len(gr), len(v))

    def dot(x, y):
        return np.real(np.conj(x.astype(np.complex128)) * y).reshape(-1)
    a = dot(w, jv)
    b = np.concatenate([dot(x, y) for x, y in zip(gr, v)] or
                       [np.zeros(0)])
    lhs, rhs = float(a.sum()), float(b.sum())
    scale = float(np.abs(a).sum() + np.abs(b).sum())
    if not abs(lhs - rhs) <= rtol * scale:  # NaN fails
        return ("<w, Jv> = %.17g but <J^T w, v> = %.17g (rel %.3g, rtol "
                "%g)" % (lhs, rhs, abs(lhs - rhs) / (scale or 1), rtol))
    return None


def jvp_checks(np, ir_eval, graphs, name, spec):
    """The forward-mode checks of a compiled case (module `graphs`):
    its _jvp (and _hvp) runs against the goldens, then for f64 the
    tangent finite differences (cases that run ENTRY itself) and the
    dot product (cases with ENTRY_grad). None or a reason."""
    runs = [r for r in spec["runs"] if is_fwd_run(r)]
    if not runs:
        return "no _jvp run in run.txt"
    err = eval_runs(np, ir_eval, graphs, name, runs)
    if err:
        return err
    for entry, sub, _ in runs:
        if not entry.endswith("_jvp"):
            continue
        base = entry[:-4]
        g = graphs[base]
        ins = load_inputs(np, ir_eval, graphs[entry],
                          os.path.join(GOLDEN, name, sub))
        nin = len(g.args)
        f64 = all(dt == "f64" for _, (dt, _) in g.args
                  if dt in ("f32", "f64", "c64"))
        err = None
        if f64:
            err = f64_jvp_checks(np, ir_eval, graphs, base, ins, nin,
                                 spec, any(r[0] == base
                                           for r in spec["runs"]))
        elif is_c64_case(g):  # in double, fd always
            with widened(np, ir_eval) as w:
                err = f64_jvp_checks(np, ir_eval, graphs, base,
                                     w.wide(ins), nin, spec, True)
        if err:
            return err
    return None


def f64_jvp_checks(np, ir_eval, graphs, base, ins, nin, spec, fd):
    """Finite differences along the tangents (if fd) and the dot
    product of ENTRY_jvp (inputs, then tangents: ins); None or a
    reason."""
    entry = base + "_jvp"
    if fd:
        err = jvp_fd_check(np, ir_eval, graphs, base, ins[:nin], ins[nin:])
        if err:
            return "%s fd: %s" % (entry, err)
    rtol, _ = spec["dot"]
    if rtol is not None and base + "_grad" in graphs:
        err = dot_check(np, ir_eval, graphs, base, ins[:nin], rtol)
        if err:
            return "%s dot product: %s" % (entry, err)
    return None


def jvp_case(rlxc, name, np, ir_eval):
    spec = read_spec(name)
    try:
        graphs = compile_ir(rlxc, name, spec["rlxc"], ir_eval)
    except RuntimeError as e:
        return str(e)
    return jvp_checks(np, ir_eval, graphs, name, spec)


def pending_note(ops):
    return ("%d case(s) wait for forward-mode rules still being "
            "written, through: %s" % (sum(ops.values()), ", ".join(
                "%s (%d)" % kv for kv in sorted(ops.items()))))


def run_fwd_checks(kind, check, rlxc, cases):
    """Run check(rlxc, name, np, ir_eval) on every case, printing
    PASS/FAIL KIND NAME; cases needing a forward rule still being
    written are reported as PENDING (and fail)."""
    import numpy as np
    sys.path.insert(0, HERE)
    import ir_eval
    failed, pending = 0, {}
    for name in cases:
        try:
            err = check(rlxc, name, np, ir_eval)
        except Pending as e:
            pending[str(e)] = pending.get(str(e), 0) + 1
            err = ("PENDING: forward mode through '%s' is not supported "
                   "yet" % e)
        except Exception as e:  # report, keep going
            err = "%s: %s" % (type(e).__name__, e)
        print(("FAIL %s %s: %s" % (kind, name, err)) if err
              else "PASS %s %s" % (kind, name))
        sys.stdout.flush()
        failed += bool(err)
    print("%s: %d/%d cases passed" % (kind, len(cases) - failed, len(cases)))
    if pending:
        print("%s: %s" % (kind, pending_note(pending)))
    return failed == 0


def run_jvp_ir(rlxc, cases):
    return run_fwd_checks("jvp", jvp_case, rlxc, cases)


def hvp_case(rlxc, name, np, ir_eval):
    """f64 cases: ENTRY's output y made a scalar loss sum(sin(y)(y + 1))
    (its slope is 1, not 0, at y = 0, so second derivatives of ops at
    points where y = 0 count: products with a zero),
    compiled with --grad --hvp (forward over reverse through the op's
    VJP rule); H symmetric and, for cases with finite differences,
    H v = central differences of ENTRY_grad along v. No reference."""
    spec = read_spec(name)
    text = open(os.path.join(CASES, name + ".rlx")).read()
    m = re.search(r"\n  return %(\w+)\n\}\s*$", text)
    text = text[:m.start()] + ("\n  %%hvp_loss = reduce_sum(mul(sin(%%%s), "
                               "add(%%%s, 1.0)))\n  return %%hvp_loss\n}\n"
                               % (m.group(1), m.group(1)))
    args = [a for a in spec["rlxc"] if not a.startswith(FWD_FLAGS)]
    graphs = compile_ir(rlxc, name, args + ["--hvp"], ir_eval, text)
    g, gh = graphs[name], graphs[name + "_hvp"]
    x = load_inputs(np, ir_eval, g, os.path.join(GOLDEN, name, "grad"))
    seeds = seed_index(g, gh, len(g.args) + 1)
    nt, d = len(seeds), np.array(0.75)
    rng = np.random.default_rng(3)
    u, w = ([rng.uniform(-1, 1, size=x[i].shape) for i in seeds]
            for _ in range(2))

    def hvp(t):
        o = ir_eval.run_graph(graphs, name + "_hvp", x + [d] + t)
        return o[1:1 + nt], float(o[1 + nt]), o[2 + nt:]
    gu, dot, hu = hvp(u)
    own = [a * b for a, b in zip(gu, u)]
    if not abs(dot - sum(float(p.sum()) for p in own)) <= 1e-12 * sum(
            float(np.abs(p).sum()) for p in own):  # NaN fails
        return "<grad, v> output %.17g is not sum(grad * v)" % dot
    rtol, _ = spec["dot"]
    if rtol is not None and spec["sym"]:
        hw = hvp(w)[2]
        a = [p * q for p, q in zip(u, hw)]
        b = [p * q for p, q in zip(w, hu)]
        sa, sb = (sum(float(t.sum()) for t in v) for v in (a, b))
        scale = sum(float(np.abs(t).sum()) for t in a + b)
        if not abs(sa - sb) <= rtol * scale:  # NaN fails
            return ("H not symmetric: <u, H w> = %.17g, <w, H u> = %.17g "
                    "(rel %.3g)" % (sa, sb, abs(sa - sb) / (scale or 1)))
    if any(r[0] == name for r in spec["runs"]):  # cases with fd
        eps = 1e-6

        def grad_at(s):
            xs = list(x)
            for k, i in enumerate(seeds):
                xs[i] = x[i] + s * u[k]
            return ir_eval.run_graph(graphs, name + "_grad", xs + [d])[1:]
        gp, gm = grad_at(eps), grad_at(-eps)
        for k, i in enumerate(seeds):
            f = (gp[k] - gm[k]) / (2 * eps)
            bad = ~(np.abs(f - hu[k]) <= 1e-5 * np.abs(f) + 1e-7 * max(
                1.0, float(np.max(np.abs(f))) if f.size else 1.0))
            if bad.any():
                e = int(np.argmax(bad.reshape(-1)))
                return "hvp_%s[%d]: fd %.9g hvp %.9g" % (
                    g.args[i][0], e, f.reshape(-1)[e], hu[k].reshape(-1)[e])
    return None


def run_hvp_ir(rlxc, cases):
    return run_fwd_checks("hvp", hvp_case, rlxc,
                          [c for c in cases if c.endswith("_f64")])


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


def run_native(build, cases):
    sys.path.insert(0, os.path.join(SRC, "tests", "tools"))
    import e2e
    e2e.CASES, e2e.GOLDEN = CASES, GOLDEN
    class Args(argparse.Namespace):
        def __getattr__(self, name):  # options e2e.py adds later: empty
            return ""
    args = Args(build=build, work=None, verbose=False,
                cc=os.environ.get("CC", "cc"))
    r = e2e.Runner(args)
    xfail = {}
    for line in open(os.path.join(HERE, "native_xfail.txt")):
        if line.strip() and not line.startswith("#"):
            k, _, why = line.strip().partition(" ")
            xfail[k] = why.strip()
    read_spec_all = e2e.read_spec

    def reverse_only(name):
        spec = read_spec_all(name)
        spec["rlxc"] = [a for a in spec["rlxc"] if not a.startswith(FWD_FLAGS)]
        spec["runs"] = [r for r in spec["runs"] if not is_fwd_run(r)]
        return spec
    failed, pending = 0, {}
    for name in cases:
        try:
            r.run_case(name)
            note = (" (listed in native_xfail.txt: remove it)"
                    if name in xfail else "")
            print("PASS native %s%s" % (name, note))
        except e2e.CaseFail as e:
            m = PENDING_RE.search(str(e))
            if m:  # the reverse-mode runs alone, for the record
                pending[m.group(1)] = pending.get(m.group(1), 0) + 1
                e2e.read_spec = reverse_only
                try:
                    r.run_case(name)
                    rev = "reverse-mode runs pass"
                except e2e.CaseFail as e2:
                    rev = "reverse-mode runs FAIL too: %s" % e2
                finally:
                    e2e.read_spec = read_spec_all
                e = "PENDING: %s (%s)" % (m.group(0), rev)
            if name in xfail:
                print("XFAIL native %s: %s [%s]" % (name, xfail[name], e))
            else:
                failed += 1
                print("FAIL native %s: %s" % (name, e))
        sys.stdout.flush()
    print("native: %d/%d cases passed" % (len(cases) - failed, len(cases)))
    if pending:
        print("native: " + pending_note(pending))
    return failed == 0


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
                    help="--native: only the sanitizer tree's sample")
    ap.add_argument("--list-families", action="store_true")
    a = ap.parse_args()
    if a.list_families:
        print(";".join(list(FAMILIES) + ["other"]))
        return 0
    cases = a.cases or all_cases()
    if a.family:
        cases = [c for c in cases if family_of(c) == a.family]
    ok = True
    if a.coverage:
        ok = coverage() and ok
    if a.ir:
        ok = run_ir(a.ir, cases) and ok
    if a.jvp_ir:
        ok = run_jvp_ir(a.jvp_ir, cases) and ok
    if a.hvp_ir:
        ok = run_hvp_ir(a.hvp_ir, cases) and ok
    if a.native:
        ok = run_native(a.native, sample(cases) if a.sample else cases) \
            and ok
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
