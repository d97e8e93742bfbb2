#!/usr/bin/env python3
"""Golden corpus runner (tests/golden/*.rlx).

For one FILE.rlx:
  1. `rlxc --check FILE` exits 0;
  2. `rlxc --emit=ir FILE` prints P1; P1 re-parsed and printed again
     (`rlxc --emit=ir P1`) is byte-identical (language.md §4);
  3. if FILE.expected.rlx exists, P1 equals it (`--update` rewrites it);
  4. RUN/CHECK lines (FileCheck-like, on stdout followed by stderr):
       // RUN: ARGS          run `rlxc ARGS FILE` (must exit 0)
       // CHECK: TEXT        a later line contains TEXT (in order)
       // CHECK-NEXT: TEXT   the line right after the previous match does
       // CHECK-NOT: TEXT    no line between the previous and the next
                             match (or the end) contains TEXT
       // CHECK-COUNT: N TEXT  exactly N lines of the whole output of the
                             RUN contain TEXT
     CHECK lines belong to the closest RUN line above them.
With --coverage DIR: every op of `rlxc --list-ops` (and `const`) must be
used by the printed IR of some DIR/*.rlx.
With --roundtrip-all ROOT: every .rlx file under ROOT (except
tests/errors and build trees) that `rlxc --check` accepts must round
trip; so must the module after the last pass of `--grad` (printed by
--dump-ir=all) whenever `--check --grad --grad-missing=zero` accepts it.
Exit status 0 on success, 1 with a report on failure.
"""
import argparse
import difflib
import glob
import os
import re
import shlex
import subprocess
import sys
import tempfile


def run(rlxc, args):
    p = subprocess.run([rlxc] + args, stdout=subprocess.PIPE,
                       stderr=subprocess.PIPE, timeout=120)
    return (p.returncode, p.stdout.decode("utf-8", "replace"),
            p.stderr.decode("utf-8", "replace"))


def diff(a, b, na, nb):
    return "".join(difflib.unified_diff(a.splitlines(True),
                                        b.splitlines(True), na, nb))


def parse_checks(text):
    """[(args, [(kind, arg)])] from RUN/CHECK comment lines."""
    runs = []
    pat = re.compile(r"^\s*//\s*(RUN|CHECK|CHECK-NEXT|CHECK-NOT|"
                     r"CHECK-COUNT):\s?(.*)$")
    for line in text.splitlines():
        m = pat.match(line)
        if not m:
            continue
        kind, arg = m.group(1), m.group(2).rstrip()
        if kind == "RUN":
            runs.append((arg, []))
        elif not runs:
            raise ValueError("%s line before any RUN line" % kind)
        else:
            runs[-1][1].append((kind, arg))
    return runs


def check_output(lines, checks):
    """Apply CHECK lines to output lines; returns a list of errors."""
    errs, pos, nots, last = [], 0, [], -1
    for kind, arg in checks:
        if kind == "CHECK-NOT":
            nots.append(arg)
            continue
        if kind == "CHECK-COUNT":
            n, _, text = arg.partition(" ")
            got = sum(1 for l in lines if text in l)
            if got != int(n):
                errs.append("CHECK-COUNT: %s lines contain %r, expected %s"
                            % (got, text, n))
            continue
        if kind == "CHECK-NEXT":
            found = last + 1 if (last + 1 < len(lines)
                                 and arg in lines[last + 1]) else None
        else:
            found = next((i for i in range(pos, len(lines))
                          if arg in lines[i]), None)
        if found is None:
            errs.append("%s: %r not found after line %d" % (kind, arg, pos))
            return errs
        for t in nots:
            for i in range(pos, found):
                if t in lines[i]:
                    errs.append("CHECK-NOT: %r found at line %d" % (t, i))
        nots, pos, last = [], found + 1, found
    for t in nots:
        for i in range(pos, len(lines)):
            if t in lines[i]:
                errs.append("CHECK-NOT: %r found at line %d" % (t, i))
    return errs


def run_checks(rlxc, path, text):
    errs = []
    for args, checks in parse_checks(text):
        argv = shlex.split(args)
        if "%s" in argv:
            argv = [path if a == "%s" else a for a in argv]
        else:
            argv.append(path)
        rc, out, err = run(rlxc, argv)
        if rc != 0:
            errs.append("RUN %s: exit %d\n%s" % (args, rc, err))
            continue
        for e in check_output((out + err).splitlines(), checks):
            errs.append("RUN %s: %s" % (args, e))
        if errs:
            errs.append("output was:\n" + out + err)
    return errs


def check_file(rlxc, path, update):
    errs = []
    rc, out, err = run(rlxc, ["--check", path])
    if rc != 0:
        return ["--check exited %d:\n%s" % (rc, err)]
    rc, p1, err = run(rlxc, ["--emit=ir", path])
    if rc != 0:
        return ["--emit=ir exited %d:\n%s" % (rc, err)]
    with tempfile.NamedTemporaryFile("w", suffix=".rlx",
                                     delete=False) as t:
        t.write(p1)
    try:
        rc, p2, err = run(rlxc, ["--emit=ir", t.name])
    finally:
        os.unlink(t.name)
    if rc != 0:
        errs.append("re-parsing the printed IR exited %d:\n%s\n--- IR:\n%s"
                    % (rc, err, p1))
    elif p1 != p2:
        errs.append("round trip differs:\n" + diff(p1, p2, "print1",
                                                     "print2"))
    exp = path[:-4] + ".expected.rlx"
    if update:
        with open(exp, "w") as f:
            f.write(p1)
    elif os.path.exists(exp):
        want = open(exp).read()
        if want != p1:
            errs.append("differs from %s:\n%s"
                        % (exp, diff(want, p1, "expected", "printed")))
    errs += run_checks(rlxc, path, open(path, errors="replace").read())
    return errs


def coverage(rlxc, d):
    rc, out, err = run(rlxc, ["--list-ops"])
    if rc != 0:
        return ["--list-ops exited %d" % rc]
    want = {ln.split()[0] for ln in out.splitlines() if ln.strip()} | {"const"}
    seen = set()
    for f in sorted(glob.glob(os.path.join(d, "*.rlx"))):
        if f.endswith(".expected.rlx"):
            continue
        rc, ir, err = run(rlxc, ["--emit=ir", f])
        seen |= set(re.findall(r"= ([a-z_0-9]+)\(", ir))
        if " = const " in ir:
            seen.add("const")
    missing = sorted(want - seen)
    if missing:
        return ["ops not covered by any golden file: " + " ".join(missing)]
    return []


def last_dump(err):
    """The module printed after the last pass in a --dump-ir=all log."""
    parts = re.split(r"^// ---- after [a-z_0-9]+ ----\n", err, flags=re.M)
    return parts[-1] if len(parts) > 1 else None


def reparse_errors(rlxc, what, text):
    with tempfile.NamedTemporaryFile("w", suffix=".rlx",
                                     delete=False) as t:
        t.write(text)
    try:
        rc, again, err = run(rlxc, ["--emit=ir", t.name])
    finally:
        os.unlink(t.name)
    if rc != 0:
        return ["%s: printed IR does not parse:\n%s" % (what, err)]
    if again != text:
        return ["%s: round trip differs:\n%s"
                % (what, diff(text, again, "print1", "print2"))]
    return []


def roundtrip_all(rlxc, root):
    errs, n = [], 0
    for f in sorted(glob.glob(os.path.join(root, "**", "*.rlx"),
                              recursive=True)):
        rel = os.path.relpath(f, root)
        if rel.startswith(("tests/errors", "build")) or "/build" in rel:
            continue
        rc, p1, _ = run(rlxc, ["--emit=ir", f])
        if rc != 0:
            continue
        n += 1
        errs += reparse_errors(rlxc, rel, p1)
        rc, _, err = run(rlxc, ["--check", "--grad", "--grad-missing=zero",
                                "--dump-ir=all", f])
        dump = last_dump(err) if rc == 0 else None
        if dump:
            errs += reparse_errors(rlxc, rel + " (after --grad)", dump)
    print("round trip checked on %d files" % n)
    return errs


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--rlxc", required=True)
    ap.add_argument("--update", action="store_true",
                    help="rewrite FILE.expected.rlx from the printer")
    ap.add_argument("--coverage", metavar="DIR")
    ap.add_argument("--roundtrip-all", metavar="ROOT")
    ap.add_argument("files", nargs="*")
    a = ap.parse_args()
    failed = 0
    if a.coverage:
        errs = coverage(a.rlxc, a.coverage)
        for e in errs:
            print("FAIL coverage: " + e)
        failed += bool(errs)
    if a.roundtrip_all:
        errs = roundtrip_all(a.rlxc, a.roundtrip_all)
        for e in errs:
            print("FAIL " + e)
        failed += bool(errs)
    for f in a.files:
        errs = check_file(a.rlxc, f, a.update)
        for e in errs:
            print("FAIL %s: %s" % (f, e))
        failed += bool(errs)
        if not errs:
            print("ok %s" % f)
    sys.exit(1 if failed else 0)


if __name__ == "__main__":
    main()
