#!/usr/bin/env python3
"""Golden corpus runner (tests/golden/*.rlx).

For one FILE.rlx:
  1. `rlxc --check FILE` exits 0;
  2. `rlxc --emit=ir FILE` prints P1; P1 re-parsed and printed again
     (`rlxc --emit=ir P1`) is byte-identical (language.md §4);
  3. if FILE.expected.rlx exists, P1 equals it (`--update` rewrites it);
  4. RUN lines, checked with LLVM FileCheck (Debian llvm-19-tools):
       // RUN: ARGS              run `rlxc ARGS FILE` (must exit 0; `%s`
                                 in ARGS stands for FILE, which is then
                                 not appended) and pipe its stdout
                                 followed by its stderr into
                                 `FileCheck FILE --check-prefix=CHECK`
       // RUN: ARGS | P1 P2 -OPT  the same, but one FileCheck run per
                                 prefix P1, P2 ([A-Z][A-Z0-9_]*), each
                                 over the whole output, with the extra
                                 FileCheck options -OPT
     A prefix belongs to one RUN line; a comment line that looks like a
     check (`// WORD-NEXT:` etc., or a WORD containing CHECK) whose
     prefix no RUN line names is an error. Every FileCheck run gets
     --strict-whitespace --allow-empty. Exactly N lines of the output
     contain TEXT: a prefix of its own with
       // P-COUNT-N: {{^.*}}TEXT
       // P-NOT: TEXT
     (docs/testing.md, "Golden corpus"). FileCheck is $FILECHECK, else
     FileCheck-19 or /usr/lib/llvm-19/bin/FileCheck or FileCheck; a file
     with RUN lines fails when none is found.
With --coverage DIR [DIR...]: every op of `rlxc --list-ops` (and `const`)
must be used by the printed IR of some DIR/*.rlx. ctest passes
tests/golden and the generated case directories tests/e2e/cases and
tests/gradcheck/cases: every file of those is also round-tripped (as
printed and after --grad) by golden.roundtrip_repo, and compiled and
run against its goldens by e2e.* / gradcheck.*, so an op used only there
is checked at least as strictly as one used by a hand-written golden
file (which adds nothing for an op without its own syntax).
With --roundtrip-all ROOT: every .rlx file under ROOT (except
tests/errors and build trees) that `rlxc --emit=ir` accepts must round
trip; so must the module after the last pass of `--grad` (printed by
--dump-ir=all) whenever `--check --grad --grad-missing=zero` accepts it.
--coverage and --roundtrip-all need --roundtrip-tool (rlx_roundtrip,
tests/tools/rlx_roundtrip.c), which does those compilations in one
process.
Exit status 0 on success, 1 with a report on failure.
"""
import argparse
import difflib
import glob
import os
import re
import shlex
import shutil
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


RUN_RE = re.compile(r"^\s*//\s*RUN:\s?(.*)$")
PREFIX_RE = re.compile(r"^[A-Z][A-Z0-9_]*$")
# A comment line that looks like a FileCheck directive: WORD or
# WORD-SUFFIX followed by a colon.
DIRECTIVE_RE = re.compile(r"^\s*//\s*([A-Z][A-Z0-9_-]*?)"
                          r"(-NEXT|-SAME|-NOT|-DAG|-LABEL|-EMPTY|"
                          r"-COUNT-[0-9]+)?:")


def parse_runs(text):
    """[(rlxc args, [prefix], [FileCheck option])] from the RUN lines.

    `// RUN: ARGS` checks with prefix CHECK; `// RUN: ARGS | P1 P2 -OPT`
    checks the same output once per prefix P1, P2 (each its own FileCheck
    run over the whole output) with the extra FileCheck options -OPT."""
    runs, owner = [], {}
    for n, line in enumerate(text.splitlines(), 1):
        m = RUN_RE.match(line)
        if not m:
            continue
        args, bar, tail = m.group(1).partition("|")
        prefixes, opts = [], []
        for tok in shlex.split(tail):
            if tok.startswith("-"):
                opts.append(tok)
            elif PREFIX_RE.match(tok) and tok != "RUN":
                prefixes.append(tok)
            else:
                raise ValueError("line %d: bad check prefix %r (want "
                                 "[A-Z][A-Z0-9_]*)" % (n, tok))
        if not bar:
            prefixes = ["CHECK"]
        elif not prefixes:
            raise ValueError("line %d: no check prefix after '|'" % n)
        for p in prefixes:
            if p in owner:
                raise ValueError("line %d: prefix %s already used by the "
                                 "RUN line on line %d" % (n, p, owner[p]))
            owner[p] = n
        runs.append((args.strip(), prefixes, opts))
    # A check line whose prefix no RUN line names would be ignored
    # silently by FileCheck: refuse it.
    for n, line in enumerate(text.splitlines(), 1):
        m = DIRECTIVE_RE.match(line)
        if not m or m.group(1) in owner or m.group(1) == "RUN":
            continue
        if m.group(2) or "CHECK" in m.group(1):
            raise ValueError("line %d: check line with prefix %s, which no "
                             "RUN line names: %s"
                             % (n, m.group(1), line.strip()))
    return runs


def find_filecheck(explicit):
    """LLVM FileCheck: --filecheck, $FILECHECK, FileCheck-19 on PATH,
    /usr/lib/llvm-19/bin/FileCheck, FileCheck on PATH."""
    for c in (explicit, os.environ.get("FILECHECK")):
        if c:
            found = shutil.which(c)
            if not found:
                raise RuntimeError("FileCheck %r (from --filecheck or "
                                   "$FILECHECK) is not an executable" % c)
            return found
    for c in ("FileCheck-19", "/usr/lib/llvm-19/bin/FileCheck",
              "FileCheck"):
        found = shutil.which(c)
        if found:
            return found
    raise RuntimeError("LLVM FileCheck not found (tried FileCheck-19, "
                       "/usr/lib/llvm-19/bin/FileCheck, FileCheck): install "
                       "llvm-19-tools or set FILECHECK=/path/to/FileCheck")


# Applied to every FileCheck run: whitespace inside a pattern must match
# exactly (as the printer is canonical), and an empty output is an input
# like any other (a CHECK-NOT-only prefix passes on it).
FILECHECK_OPTS = ["--strict-whitespace", "--allow-empty",
                  "--dump-input=fail"]


def run_checks(rlxc, filecheck, path, text):
    try:
        runs = parse_runs(text)
    except ValueError as e:
        return ["RUN/CHECK lines: %s" % e]
    if not runs:
        return []
    try:
        fc = find_filecheck(filecheck)
    except RuntimeError as e:
        return [str(e)]
    errs = []
    for args, prefixes, opts in runs:
        argv = shlex.split(args)
        if "%s" in argv:
            argv = [path if a == "%s" else a for a in argv]
        else:
            argv.append(path)
        rc, out, err = run(rlxc, argv)
        if rc != 0:
            errs.append("RUN %s: exit %d\n%s" % (args, rc, err))
            continue
        for p in prefixes:
            cmd = [fc, path, "--check-prefix=" + p] + FILECHECK_OPTS + opts
            q = subprocess.run(cmd, input=(out + err).encode("utf-8"),
                               stdout=subprocess.PIPE,
                               stderr=subprocess.STDOUT, timeout=120)
            if q.returncode != 0:
                errs.append("RUN %s | %s: FileCheck failed (%s):\n%s"
                            % (args, p, " ".join(cmd[1:]),
                               q.stdout.decode("utf-8", "replace")))
    return errs


def check_file(rlxc, filecheck, path, update):
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
    errs += run_checks(rlxc, filecheck, path,
                      open(path, errors="replace").read())
    return errs


def run_roundtrip(tool, files, ops=False):
    """tests/tools/rlx_roundtrip.c over files: (exit status, output)."""
    p = subprocess.run([tool] + (["--ops"] if ops else []) + files,
                       stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                       timeout=1200)
    return p.returncode, p.stdout.decode("utf-8", errors="replace")


def coverage(rlxc, tool, dirs):
    rc, out, err = run(rlxc, ["--list-ops"])
    if rc != 0:
        return ["--list-ops exited %d" % rc]
    want = {ln.split()[0] for ln in out.splitlines() if ln.strip()} | {"const"}
    files = sorted(f for d in dirs for f in glob.glob(os.path.join(d, "*.rlx"))
                   if not f.endswith(".expected.rlx"))
    rc, out = run_roundtrip(tool, files, ops=True)
    seen = {ln[3:] for ln in out.splitlines() if ln.startswith("op ")}
    missing = sorted(want - seen)
    if missing:
        return ["ops not used by any .rlx file of %s: %s"
                % (" ".join(dirs), " ".join(missing))]
    return []


def roundtrip_all(tool, root):
    files = [f for f in sorted(glob.glob(os.path.join(root, "**", "*.rlx"),
                                         recursive=True))
             if not os.path.relpath(f, root).startswith(("tests/errors",
                                                         "build"))
             and "/build" not in os.path.relpath(f, root)]
    rc, out = run_roundtrip(tool, files)
    print(out, end="")
    return [] if rc == 0 else ["round trip failed (above)"]


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--rlxc", required=True)
    ap.add_argument("--update", action="store_true",
                    help="rewrite FILE.expected.rlx from the printer")
    ap.add_argument("--filecheck", metavar="PATH",
                    help="LLVM FileCheck (default: $FILECHECK, "
                    "FileCheck-19, /usr/lib/llvm-19/bin/FileCheck)")
    ap.add_argument("--coverage", metavar="DIR", nargs="+")
    ap.add_argument("--roundtrip-all", metavar="ROOT")
    ap.add_argument("--roundtrip-tool", metavar="PATH",
                    help="rlx_roundtrip (tests/tools/rlx_roundtrip.c), "
                    "for --coverage and --roundtrip-all")
    ap.add_argument("files", nargs="*")
    a = ap.parse_args()
    failed = 0
    if a.coverage:
        errs = coverage(a.rlxc, a.roundtrip_tool, a.coverage)
        for e in errs:
            print("FAIL coverage: " + e)
        failed += bool(errs)
    if a.roundtrip_all:
        errs = roundtrip_all(a.roundtrip_tool, a.roundtrip_all)
        for e in errs:
            print("FAIL " + e)
        failed += bool(errs)
    for f in a.files:
        errs = check_file(a.rlxc, a.filecheck, f, a.update)
        for e in errs:
            print("FAIL %s: %s" % (f, e))
        failed += bool(errs)
        if not errs:
            print("ok %s" % f)
    sys.exit(1 if failed else 0)


if __name__ == "__main__":
    main()
