#!/usr/bin/env python3
"""e2e.py -- compile, link, run and check end-to-end cases.

A case NAME is tests/e2e/cases/NAME.rlx plus tests/e2e/golden/NAME/,
written by tests/tools/gen_goldens.py.  golden/NAME/run.txt says what
to do, one directive per line ('#' starts a comment):

  rlxc ARGS...          extra rlxc arguments (e.g. --grad), may repeat
  diag REGEX            a known limitation: rlxc must exit 1 with a
                        diagnostic matching REGEX; the runs are skipped
                        (the case fails once the graph compiles, so the
                        line gets removed and the goldens used)
  run ENTRY DIR ARGS... link tests/tools/rlx_run.c for entry ENTRY, run
                        it on golden/NAME/DIR (inI.bin, outJ.bin) with
                        the rlx_run ARGS (--expect RC, --threads 1,2,3,
                        --null-ws, --rtol X, --atol Y, --fd, ...);
                        '--grad-entry E' defines RLX_GRAD_ENTRY=E;
                        '--env K=V' sets an environment variable

Steps per case: rlxc NAME.rlx -o WORK/NAME.o (+ header), cc -shared
it into WORK/NAME.so, and run every 'run' line with the build tree's
generic driver BUILD/tests/rlx_run (tests/tools/rlx_run.c, built once
by CMake with the harness and the runtime), which loads NAME.so.
Only the Python standard library is used (no NumPy, no torch): all
numeric comparison happens in C (tests/tools/harness.c).

Usage: e2e.py [--build DIR] [--work DIR] [--rlxc-args A] [--kernels]
              [--rlxc RLXC] [--cc CC] [--emulator CMD] [-v] [CASE...]
  no CASE: every case with a run.txt (--kernels: those calling the
  runtime's ISA-dispatched kernels).  Prints PASS/FAIL NAME: reason
  per case; exit 0 when all pass.  For another target (the aarch64
  tree run under qemu, docs/testing.md): BUILD is that target's
  runtime-only tree (its rlx_run), RLXC a host rlxc, A its --target,
  CC the cross compiler and CMD the emulator that runs rlx_run.
"""
import argparse
import glob
import os
import re
import shlex
import subprocess
import sys
import tempfile

SRC = os.path.dirname(os.path.dirname(os.path.dirname(
    os.path.abspath(__file__))))
CASES = os.path.join(SRC, "tests", "e2e", "cases")
GOLDEN = os.path.join(SRC, "tests", "e2e", "golden")


class CaseFail(Exception):
    """One case failed at a step; str() is a one-line reason."""


def sh(cmd, cwd=None, env=None, timeout=300, input=None):
    """Run cmd; return (rc, combined output)."""
    try:
        p = subprocess.run(cmd, cwd=cwd, env=env, timeout=timeout,
                           input=input,
                           stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
    except subprocess.TimeoutExpired:
        return 124, "timed out after %ds" % timeout
    except OSError as e:
        return 127, str(e)
    return p.returncode, p.stdout.decode("utf-8", "replace")


def first_line(text, pattern=("error", "output ", "fd:", "harness",
                               "FAIL")):
    """The most telling line of a tool's output, for the summary: the
    first line holding the earliest pattern of the list."""
    lines = [l.strip() for l in text.splitlines() if l.strip()]
    for p in pattern:
        for l in lines:
            if p in l:
                return l[:200]
    return lines[0][:200] if lines else "(no output)"


def find_driver(build):
    """BUILD/tests/rlx_run, the driver CMake builds (target rlx_run)."""
    hits = [os.path.join(build, "tests", "rlx_run")] + glob.glob(
        os.path.join(build, "**", "rlx_run"), recursive=True)
    for p in hits:
        if os.path.isfile(p) and os.access(p, os.X_OK):
            return p
    raise CaseFail("rlx_run not built under %s (cmake --build %s "
                   "--target rlx_run)" % (build, build))


class Runner:
    def __init__(self, args):
        self.build = os.path.abspath(args.build)
        self.work = os.path.abspath(args.work or tempfile.mkdtemp(
            prefix="rlx-e2e-"))
        self.cc = args.cc
        self.emulator = shlex.split(args.emulator)
        self.rlxc_extra = args.rlxc_args
        self.verbose = args.verbose
        self.rlxc = os.path.abspath(args.rlxc or os.path.join(self.build,
                                                              "rlxc"))
        self.linked = set()
        os.makedirs(self.work, exist_ok=True)

    def compile_case(self, name, wdir, rlxc_args):
        if not os.path.exists(self.rlxc):
            raise CaseFail("rlxc not built (%s)" % self.rlxc)
        obj = os.path.join(wdir, name + ".o")
        cmd = [self.rlxc, os.path.join(CASES, name + ".rlx"), "-o", obj]
        rlxc_args = rlxc_args + shlex.split(self.rlxc_extra)
        rc, out = sh(cmd + rlxc_args, cwd=wdir)
        if self.verbose:
            print(" ".join(cmd + rlxc_args) + "\n" + out)
        if rc:
            raise CaseFail("rlxc exit %d: %s" % (rc, first_line(out)))
        hdr = os.path.join(wdir, name + ".h")
        if not os.path.exists(obj) or not os.path.exists(hdr):
            raise CaseFail("rlxc wrote no %s.o/%s.h" % (name, name))
        return obj, hdr

    def expect_diag(self, name, wdir, spec):
        if not os.path.exists(self.rlxc):
            raise CaseFail("rlxc not built (%s)" % self.rlxc)
        cmd = [self.rlxc, os.path.join(CASES, name + ".rlx"), "-o",
               os.path.join(wdir, name + ".o")] + spec["rlxc"]
        rc, out = sh(cmd, cwd=wdir)
        if rc == 0:
            raise CaseFail("compiles now: remove the 'diag' line of its "
                           "run.txt (gen_goldens.py) to test its numbers")
        if rc != 1 or not re.search(spec["diag"], out):
            raise CaseFail("expected exit 1 and a diagnostic matching %r, "
                           "got exit %d: %s" % (spec["diag"], rc,
                                                first_line(out)))

    def check_header(self, hdr, entries):
        """The generated header compiles and declares each entry with
        the ABI's types (what a program including it relies on)."""
        src = "".join(
            "int (*f%d)(const void *const *, void *const *, void *) = %s;\n"
            "const rlx_signature *(*s%d)(void) = %s_signature;\n"
            % (i, e, i, e) for i, e in enumerate(sorted(entries)))
        rc, out = sh([self.cc, "-std=c11", "-fsyntax-only", "-Werror",
                      "-I" + os.path.join(SRC, "runtime"), "-include", hdr,
                      "-x", "c", "-"], input=src.encode())
        if rc:
            raise CaseFail("%s: %s" % (os.path.basename(hdr),
                                       first_line(out, ("error",))))

    def link(self, obj):
        """The case as a shared object for rlx_run (its runtime calls
        resolve to the driver's); once per case."""
        so = obj[:-2] + ".so"
        if so not in self.linked:
            rc, out = sh([self.cc, "-shared", obj, "-o", so])
            if rc:
                raise CaseFail("%s does not link: %s" %
                               (os.path.basename(so),
                                first_line(out, ("error",))))
            self.linked.add(so)
        return so

    def run_case(self, name):
        spec = read_spec(name)
        wdir = os.path.join(self.work, name)
        os.makedirs(wdir, exist_ok=True)
        if spec["diag"]:
            return self.expect_diag(name, wdir, spec)
        obj, hdr = self.compile_case(name, wdir, spec["rlxc"])
        self.linked = set()
        self.check_header(hdr, {e for e, _, _ in spec["runs"]})
        for entry, sub, rargs in spec["runs"]:
            grad_entry, env = None, dict(os.environ)
            while "--grad-entry" in rargs or "--env" in rargs:
                key = "--grad-entry" if "--grad-entry" in rargs else "--env"
                i = rargs.index(key)
                if key == "--env":
                    k, _, v = rargs[i + 1].partition("=")
                    env[k] = v
                else:
                    grad_entry = rargs[i + 1]
                rargs = rargs[:i] + rargs[i + 2:]
            cmd = self.emulator + [find_driver(self.build), "--so",
                                   self.link(obj), "--entry", entry]
            if grad_entry:
                cmd += ["--grad-entry", grad_entry]
            gdir = os.path.join(GOLDEN, name, sub)
            rc, out = sh(cmd + rargs + [gdir], cwd=wdir, env=env)
            if self.verbose:
                print(out)
            if rc < 0:
                raise CaseFail("%s %s: killed by signal %d" %
                               (entry, " ".join(rargs), -rc))
            if rc:
                raise CaseFail("%s %s: %s" % (entry, " ".join(rargs),
                                              first_line(out)))


def read_spec(name):
    path = os.path.join(GOLDEN, name, "run.txt")
    if not os.path.exists(path):
        raise CaseFail("no %s" % path)
    spec = {"rlxc": [], "runs": [], "diag": None}
    with open(path) as f:
        for line in f:
            words = shlex.split(line, comments=True)
            if not words:
                continue
            if words[0] == "rlxc":
                spec["rlxc"] += words[1:]
            elif words[0] == "diag" and len(words) == 2:
                spec["diag"] = words[1]
            elif words[0] == "run" and len(words) >= 3:
                spec["runs"].append((words[1], words[2], words[3:]))
            else:
                raise CaseFail("%s: bad line: %s" % (path, line.strip()))
    return spec


def all_cases():
    return sorted(os.path.basename(os.path.dirname(p)) for p in
                  glob.glob(os.path.join(GOLDEN, "*", "run.txt")))


# Ops that generated code runs through librlxrt's ISA-dispatched kernels
# (docs/runtime.md): --kernels selects the cases that call one, for the
# runs under RLX_ISA=avx2 / scalar.
KERNEL_OPS = re.compile(
    r"\b(matmul|conv2d\w*|attention\w*|fft|selective_scan|"
    r"gated_delta_net|q_matmul|q_conv2d|grouped_matmul\w*|dequant_matmul|"
    r"rng_uniform|rng_normal|sample|log_mel\w*|fused_transformer_layer)\(")


def kernel_cases():
    return [c for c in all_cases()
            if KERNEL_OPS.search(open(os.path.join(CASES, c + ".rlx")).read())]


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("cases", nargs="*")
    ap.add_argument("--build", default=os.path.join(SRC, "build"))
    ap.add_argument("--work", default=None)
    ap.add_argument("--cc", default=os.environ.get("CC", "cc"))
    ap.add_argument("--rlxc", help="the rlxc to compile with (default: "
                    "BUILD/rlxc)")
    ap.add_argument("--emulator", default="",
                    help="command that runs the driver (qemu-aarch64 -L "
                    "/usr/aarch64-linux-gnu)")
    ap.add_argument("--rlxc-args", default="",
                    help="extra rlxc arguments for every case (e.g. -O0)")
    ap.add_argument("--kernels", action="store_true",
                    help="only the cases that call ISA-dispatched runtime "
                    "kernels (KERNEL_OPS)")
    ap.add_argument("--list-kernels", action="store_true",
                    help="print the --kernels cases (a CMake list) and exit")
    ap.add_argument("-v", "--verbose", action="store_true")
    args = ap.parse_args()
    if args.list_kernels:
        print(";".join(kernel_cases()))
        return 0
    r = Runner(args)
    cases = args.cases or (kernel_cases() if args.kernels else all_cases())
    failed = 0
    for name in cases:
        try:
            r.run_case(name)
            print("PASS %s" % name)
        except CaseFail as e:
            failed += 1
            print("FAIL %s: %s" % (name, e))
        sys.stdout.flush()
    if len(cases) > 1:
        print("%d/%d cases passed" % (len(cases) - failed, len(cases)))
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
