#!/usr/bin/env python3
"""Every symbol librlxrt or generated code imports or exports must be a
name rlxc refuses for the entry points (codegen/reserved.c), so that an
entry point can never capture a call of the runtime (issue: --name=getenv
made every program segfault inside librlxrt).

Checks:
  - `rlxc --list-reserved` prints glob rules, then names in strcmp order
    without duplicates (the table is searched with bsearch);
  - `nm -u` and the defined globals of librlxrt.a are all reserved;
  - `nm -u` of objects rlxc generates for the e2e cases that call libm
    or the runtime (exp, tanh, pow, erf, matmul, ...; with --grad where
    the case's run.txt asks for it; the first case of each such op and
    rlxc arguments) are all reserved;
  - for every Nth of those symbols in name order (--cli-every N, default
    1; ctest passes 8: the driver and the listing share one table, so a
    sample shows that the driver uses it) `rlxc --check --name=SYM`
    fails with exit 2 and the 'reserved' message.

Usage: check_reserved.py --rlxc RLXC --runtime librlxrt.a --cases DIR
       [--goldens DIR] [--nm nm] [--cli-every N]
"""
import argparse
import fnmatch
import os
import re
import subprocess
import sys
import tempfile

OPS = re.compile(r"\b(exp|tanh|pow|erf|log|sin|cos|tan|atan|gelu\w*|silu|"
                 r"sigmoid|softmax|log_softmax|sqrt|rsqrt|round|topk|"
                 r"matmul|solve|cumsum|softmax_cross_entropy)\(")
FAILS = []


def nm(tool, path, undefined):
    args = [tool, "-u" if undefined else "--defined-only", path]
    p = subprocess.run(args, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                       universal_newlines=True)
    if p.returncode != 0:
        FAILS.append("%s failed: %s" % (" ".join(args), p.stderr))
        return set()
    syms = set()
    for line in p.stdout.splitlines():
        f = line.split()
        if not f or line.endswith(":"):
            continue
        kind, sym = (f[0], f[1]) if len(f) == 2 else (f[1], f[2])
        if undefined or kind.isupper():  # globals only
            syms.add(sym.split("@")[0])
    return syms


def listing(rlxc):
    out = subprocess.run([rlxc, "--list-reserved"], stdout=subprocess.PIPE,
                         universal_newlines=True, check=True).stdout
    lines = out.split()
    rules = [l for l in lines if "*" in l]
    names = [l for l in lines if "*" not in l]
    if lines[:len(rules)] != rules:
        FAILS.append("--list-reserved: rules must come first")
    if names != sorted(set(names)):
        bad = [b for a, b in zip(names, names[1:]) if a >= b][:5]
        FAILS.append("the reserved table is not sorted or has duplicates "
                     "(bsearch needs strcmp order): %s" % bad)
    if len(names) < 1000:
        FAILS.append("only %d reserved names" % len(names))
    return rules, set(names)


def is_reserved(sym, rules, names):
    return sym in names or any(fnmatch.fnmatchcase(sym, r) for r in rules)


def case_flags(goldens, name):
    run = os.path.join(goldens, name, "run.txt") if goldens else ""
    if not os.path.exists(run):
        return []
    for line in open(run):
        if line.startswith("rlxc"):
            return line.split()[1:]
    return []


def generated_imports(a, tmp):
    syms = {}
    cases = sorted(f for f in os.listdir(a.cases) if f.endswith(".rlx"))
    n = 0
    seen = set()
    for f in cases:
        path = os.path.join(a.cases, f)
        name = f[:-4]
        flags = case_flags(a.goldens, name)
        # a case is compiled when it uses one of OPS with flags no
        # earlier compiled case used it with
        uses = {(op, tuple(flags)) for op in
                OPS.findall(open(path, errors="replace").read())}
        if uses <= seen:
            continue
        seen |= uses
        obj = os.path.join(tmp, name + ".o")
        p = subprocess.run([a.rlxc, "--emit=obj", "-o", obj] + flags +
                           [path], stdout=subprocess.PIPE,
                           stderr=subprocess.PIPE, universal_newlines=True)
        if p.returncode != 0:
            FAILS.append("rlxc %s failed: %s" % (f, p.stderr))
            continue
        n += 1
        for s in nm(a.nm, obj, True):
            syms.setdefault(s, name)
    if n < 10:
        FAILS.append("only %d e2e cases compiled" % n)
    return syms


def check_cli(rlxc, tmp, syms, every):
    src = os.path.join(tmp, "g.rlx")
    open(src, "w").write("graph g {\n  input %x: f32[]\n  return %x\n}\n")
    for s in sorted(syms)[::every]:
        p = subprocess.run([rlxc, "--check", "--name=" + s, src],
                           stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                           universal_newlines=True)
        if p.returncode != 2 or "reserved" not in p.stderr:
            FAILS.append("--name=%s: exit %d, expected 2 with 'reserved': "
                         "%s" % (s, p.returncode, p.stderr))


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--rlxc", required=True)
    ap.add_argument("--runtime", required=True)
    ap.add_argument("--cases", required=True)
    ap.add_argument("--goldens")
    ap.add_argument("--nm", default="nm")
    ap.add_argument("--cli-every", type=int, default=1)
    a = ap.parse_args()
    rules, names = listing(a.rlxc)
    found = {s: "librlxrt (import)" for s in nm(a.nm, a.runtime, True)}
    for s in nm(a.nm, a.runtime, False):
        found.setdefault(s, "librlxrt (export)")
    with tempfile.TemporaryDirectory() as tmp:
        for s, where in generated_imports(a, tmp).items():
            found.setdefault(s, "generated code (%s)" % where)
        for s, where in sorted(found.items()):
            if not is_reserved(s, rules, names):
                FAILS.append("%s: '%s' is not reserved; add it to "
                             "codegen/reserved.c" % (where, s))
        check_cli(a.rlxc, tmp, [s for s in found
                                if re.match(r"[A-Za-z_]\w*$", s)],
                  a.cli_every)
    print("%d symbols checked" % len(found))
    for f in FAILS:
        print("FAIL " + f)
    print("%d failure(s)" % len(FAILS))
    sys.exit(1 if FAILS else 0)


if __name__ == "__main__":
    main()
