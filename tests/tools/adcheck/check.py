"""adcheck.check -- the runners' side of the AD harness (no torch).

A Suite is a directory holding cases/NAME.rlx and golden/NAME/run.txt
(+ grad/, fwd/, jvp/, hvp/: tests/tools/e2e.py's format), written by
the suite's generator (adcheck.gen). Its methods read run.txt, compile
a case to IR, evaluate runs against the goldens with ir_eval, run the
forward-mode checks, loop over cases printing PASS/FAIL/PENDING, and
run cases natively through e2e.py. The module-level functions are the
checks themselves: goldens (compare), finite differences of the
gradient (fd_check) and along a tangent (jvp_fd_check), the dot
product <w, J v> = <J^T w, v> (dot_check), and the HVP identities
(grad_dot_check, symmetry_check, hvp_fd_check).

NumPy and ir_eval (tests/gradcheck/ir_eval.py, the IR interpreter) are
passed in as arguments (np, ir_eval) and imported by load_eval() only
when an IR check runs, so --coverage and --native need neither.
"""
import argparse
import glob
import os
import re
import shlex
import subprocess
import sys
import tempfile

SRC = os.path.dirname(os.path.dirname(os.path.dirname(os.path.dirname(
    os.path.abspath(__file__)))))
TOOLS = os.path.join(SRC, "tests", "tools")
GRADCHECK = os.path.join(SRC, "tests", "gradcheck")  # ir_eval.py


def load_eval():
    """(numpy, ir_eval): the IR checks' interpreter."""
    import numpy as np
    if GRADCHECK not in sys.path:
        sys.path.insert(0, GRADCHECK)
    import ir_eval
    return np, ir_eval


# ---- ir/ops.def ----

def op_table():
    """[(name, flags)] from ir/ops.def."""
    text = open(os.path.join(SRC, "ir", "ops.def")).read()
    rows = re.findall(r'^OP\(\s*\w+\s*,\s*"(\w+)"\s*,[^,]*,[^,]*,\s*([^,]+),',
                      text, re.M)
    return [(n, f.strip()) for n, f in rows]


def needs_case(flags):
    """An op that can carry a gradient: not a pseudo op, not
    OPF_NO_GRAD, not a comparison."""
    return not any(f in flags for f in ("OPF_PSEUDO", "OPF_NO_GRAD",
                                        "OPF_COMPARE"))


# ---- run.txt ----

FWD_FLAGS = ("--jvp", "--hvp")  # rlxc flags of forward mode
FWD_ENTRIES = ("_jvp", "_hvp")   # suffixes of forward-mode entries
PENDING_RE = re.compile(r"forward mode through '(\w+)' is not supported "
                        r"yet")


def read_spec(path):
    """run.txt at path: rlxc args, runs, the dot-product test's
    tolerance (`# jvp-dot: rtol X (why)` or `# jvp-dot: skip (why)`),
    whether the HVP symmetry test runs (not after `# hvp-sym: skip
    (why)`: a gradient that is a convention, not the derivative of a
    function, e.g. STE, or custom_fn bodies that are not derivatives)
    and the skip reasons by key ("jvp-dot", "hvp-sym")."""
    spec = {"rlxc": [], "runs": [], "dot": (1e-10, None), "sym": True,
            "skip": {}}
    for line in open(path):
        m = re.match(r"#\s*(hvp-sym|jvp-dot):\s*skip\s*\((.*)\)", line)
        if m:
            spec["skip"][m.group(1)] = m.group(2)
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


# ---- IR-level checks ----

class Pending(Exception):
    """rlxc reports that forward mode does not cover an op yet."""


def load_inputs(np, ir_eval, g, d):
    ins = []
    for i, (_, (dt, shape)) in enumerate(g.args):
        raw = np.fromfile(os.path.join(d, "in%d.bin" % i),
                          dtype=np.dtype(ir_eval.NP[dt]).newbyteorder("<")
                          if dt != "bool" else np.uint8)
        ins.append(raw.reshape(shape))
    return ins


def is_fwd_run(run):
    return run[0].endswith(FWD_ENTRIES)


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


def pending_note(ops):
    return ("%d case(s) wait for forward-mode rules still being "
            "written, through: %s" % (sum(ops.values()), ", ".join(
                "%s (%d)" % kv for kv in sorted(ops.items()))))


# ---- Hessian-vector products (ENTRY_hvp: inputs, d_output, a tangent
# per seeded argument -> loss, gradients, <grad, v>, H v) ----

def rel_ok(np, a, b, terms, rtol):
    """|a - b| <= rtol * sum|terms| (absolute when every term is 0);
    NaN fails."""
    scale = float(sum(np.abs(t).sum() for t in terms))
    return abs(a - b) <= rtol * (scale or 1.0)


def hvp_fn(ir_eval, graphs, entry, x, d, nt):
    """tangents -> (gradients, <grad, v>, H v) of ENTRY_hvp `entry` at
    inputs x and d_output d (nt seeded arguments)."""
    def hvp(tans):
        o = ir_eval.run_graph(graphs, entry, list(x) + [d] + list(tans))
        return o[1:1 + nt], float(o[1 + nt]), o[2 + nt:]
    return hvp


def grad_dot_check(np, grads, gdot, v, rtol=1e-12):
    """ENTRY_hvp's <grad, v> output against sum(grad * v) of its own
    gradient outputs; None or a reason."""
    prods = [gr * t for gr, t in zip(grads, v)]
    own = float(sum(p.sum() for p in prods))
    if not rel_ok(np, gdot, own, prods, rtol):
        return "<grad, v> output %.17g, sum(grad * v) %.17g" % (gdot, own)
    return None


def symmetry_check(np, hvp, u, w, rtol, hu=None):
    """<u, H w> = <w, H u> (H v from hvp(v)[2]; hu: H u if already
    computed), relative to the sums of |products|; None or a reason."""
    if hu is None:
        hu = hvp(u)[2]
    hw = hvp(w)[2]
    a = [p * q for p, q in zip(u, hw)]
    b = [p * q for p, q in zip(w, hu)]
    sa, sb = (float(sum(t.sum() for t in s)) for s in (a, b))
    if not rel_ok(np, sa, sb, a + b, rtol):
        scale = float(sum(np.abs(t).sum() for t in a + b))
        return ("H not symmetric: <u, H w> = %.17g, <w, H u> = %.17g "
                "(rel %.3g)" % (sa, sb, abs(sa - sb) / (scale or 1)))
    return None


def hvp_fd_check(np, ir_eval, graphs, base, x, d, seeds, v, hv, eps=1e-6):
    """Central differences of ENTRY_grad (base + "_grad", at inputs x,
    d_output d) along v (v[k] moves argument seeds[k]) against H v, to
    1e-5*|fd| + 1e-7*max(1, max|fd|); None or a reason."""
    g = graphs[base]

    def grad_at(s):
        xs = list(x)
        for k, i in enumerate(seeds):
            xs[i] = x[i] + s * v[k]
        return ir_eval.run_graph(graphs, base + "_grad",
                                 xs + [d])[len(g.rets):]
    gp, gm = grad_at(eps), grad_at(-eps)
    for k, i in enumerate(seeds):
        f = (gp[k] - gm[k]) / (2 * eps)
        bad = ~(np.abs(f - hv[k]) <= 1e-5 * np.abs(f) + 1e-7 * max(
            1.0, float(np.max(np.abs(f))) if f.size else 1.0))
        if bad.any():
            e = int(np.argmax(bad.reshape(-1)))
            return "hvp_%s[%d]: fd %.9g hvp %.9g" % (
                g.args[i][0], e, f.reshape(-1)[e], hv[k].reshape(-1)[e])
    return None


# ---- a suite's directories ----

class Suite:
    """The cases and goldens of one suite directory (HERE/cases,
    HERE/golden); xfail: a file of `CASE REASON` lines whose native run
    may fail (XFAIL), or None."""

    def __init__(self, here, xfail=None):
        self.here = here
        self.cases = os.path.join(here, "cases")
        self.golden = os.path.join(here, "golden")
        self.xfail = xfail

    def all_cases(self):
        return sorted(os.path.basename(os.path.dirname(p)) for p in
                      glob.glob(os.path.join(self.golden, "*", "run.txt")))

    def read_spec(self, name):
        return read_spec(os.path.join(self.golden, name, "run.txt"))

    def source(self, name):
        return os.path.join(self.cases, name + ".rlx")

    def compile_ir(self, rlxc, name, args, ir_eval, text=None):
        """{graph name: Graph} of `rlxc CASE --emit=ir ARGS` (of the
        graph text `text` instead of the case's file if given); raises
        Pending or RuntimeError (with rlxc's message) when it fails."""
        with tempfile.TemporaryDirectory(prefix="rlx-gc-") as tmp:
            ir = os.path.join(tmp, name + ".ir")
            src = self.source(name)
            if text is not None:
                src = os.path.join(tmp, name + ".rlx")
                open(src, "w").write(text)
            p = subprocess.run([rlxc, src, "--emit=ir", "-o", ir] + args,
                               stdout=subprocess.PIPE,
                               stderr=subprocess.PIPE, timeout=120)
            if p.returncode:
                err = p.stderr.decode()
                m = PENDING_RE.search(err)
                if m:
                    raise Pending(m.group(1))
                raise RuntimeError("rlxc: " + err[:300])
            return ir_eval.parse_module(open(ir).read())

    def eval_runs(self, np, ir_eval, graphs, name, runs):
        """Every run's entry on its golden inputs against its goldens
        (and finite differences where the run has --fd); None or a
        reason."""
        for entry, sub, args in runs:
            g = graphs[entry]
            d = os.path.join(self.golden, name, sub)
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

    def jvp_checks(self, np, ir_eval, graphs, name, spec):
        """The forward-mode checks of a compiled case (module `graphs`):
        its _jvp (and _hvp) runs against the goldens, then for f64 the
        tangent finite differences (cases that run ENTRY itself) and the
        dot product (cases with ENTRY_grad). None or a reason."""
        runs = [r for r in spec["runs"] if is_fwd_run(r)]
        if not runs:
            return "no _jvp run in run.txt"
        err = self.eval_runs(np, ir_eval, graphs, name, runs)
        if err:
            return err
        for entry, sub, _ in runs:
            if not entry.endswith("_jvp"):
                continue
            base = entry[:-4]
            g = graphs[base]
            ins = load_inputs(np, ir_eval, graphs[entry],
                              os.path.join(self.golden, name, sub))
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

    def run_checks(self, kind, check, rlxc, cases):
        """Run check(rlxc, name, np, ir_eval) on every case, printing
        PASS/FAIL KIND NAME and a count; cases needing a forward rule
        still being written are reported as PENDING (and fail)."""
        np, ir_eval = load_eval()
        failed, pending = 0, {}
        for name in cases:
            try:
                err = check(rlxc, name, np, ir_eval)
            except Pending as e:
                pending[str(e)] = pending.get(str(e), 0) + 1
                err = ("PENDING: forward mode through '%s' is not "
                       "supported yet" % e)
            except Exception as e:  # report, keep going
                err = "%s: %s" % (type(e).__name__, e)
            print(("FAIL %s %s: %s" % (kind, name, err)) if err
                  else "PASS %s %s" % (kind, name))
            sys.stdout.flush()
            failed += bool(err)
        print("%s: %d/%d cases passed" % (kind, len(cases) - failed,
                                          len(cases)))
        if pending:
            print("%s: %s" % (kind, pending_note(pending)))
        return failed == 0

    def run_native(self, build, cases):
        """Compile, link and run every case with tests/tools/e2e.py (its
        goldens, tolerances and --threads bit-identity). A case failing
        with PENDING_RE runs again without forward mode, for the
        record; cases in the xfail file may fail (XFAIL)."""
        if TOOLS not in sys.path:
            sys.path.insert(0, TOOLS)
        import e2e
        e2e.CASES, e2e.GOLDEN = self.cases, self.golden

        class Args(argparse.Namespace):
            def __getattr__(self, name):  # options e2e.py adds later
                return ""
        args = Args(build=build, work=None, verbose=False,
                    cc=os.environ.get("CC", "cc"))
        r = e2e.Runner(args)
        xfail = {}
        for line in open(self.xfail) if self.xfail else ():
            if line.strip() and not line.startswith("#"):
                k, _, why = line.strip().partition(" ")
                xfail[k] = why.strip()
        read_spec_all = e2e.read_spec

        def reverse_only(name):
            spec = read_spec_all(name)
            spec["rlxc"] = [a for a in spec["rlxc"]
                            if not a.startswith(FWD_FLAGS)]
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
                    print("XFAIL native %s: %s [%s]" % (name, xfail[name],
                                                        e))
                else:
                    failed += 1
                    print("FAIL native %s: %s" % (name, e))
            sys.stdout.flush()
        print("native: %d/%d cases passed" % (len(cases) - failed,
                                              len(cases)))
        if pending:
            print("native: " + pending_note(pending))
        return failed == 0
