#!/usr/bin/env python3
"""The LLVM IR rlxc emits for every e2e, gradcheck and HVP case, for
checking that a refactoring of the compiler changes no emitted code.

  ir_identity.py dump --rlxc BUILD/rlxc OUT   write OUT/<suite>/<case>.ll
  ir_identity.py diff OLD NEW                  list cases whose IR differs

Each case is compiled with the rlxc arguments of its run.txt (e2e cases
that expect a diagnostic are skipped) and `--emit=llvm --mcpu=x86-64-v4`
(a fixed CPU, so dumps taken on different machines compare). Usage:
dump with the compiler before a change and after it, then diff; exit
status 1 when any case differs or is missing from one side.
"""
import argparse
import concurrent.futures
import glob
import os
import shlex
import subprocess
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(
    os.path.abspath(__file__))))
SUITES = {  # suite: (case sources, goldens with run.txt)
    "e2e": ("tests/e2e/cases", "tests/e2e/golden"),
    "gradcheck": ("tests/gradcheck/cases", "tests/gradcheck/golden"),
    "hvp": ("tests/hvp/cases", "tests/hvp/golden"),
}


def case_args(run_txt):
    """rlxc arguments of a run.txt, or None for a diagnostic case."""
    args = []
    for line in open(run_txt):
        w = shlex.split(line, comments=True)
        if w and w[0] == "rlxc":
            args += w[1:]
        elif w and w[0] == "diag":
            return None
    return args


def cases():
    for suite, (src, gold) in SUITES.items():
        for run_txt in sorted(glob.glob(os.path.join(ROOT, gold, "*",
                                                     "run.txt"))):
            name = os.path.basename(os.path.dirname(run_txt))
            args = case_args(run_txt)
            rlx = os.path.join(ROOT, src, name + ".rlx")
            if args is not None and os.path.exists(rlx):
                yield suite, name, rlx, args


def dump_one(rlxc, out, suite, name, rlx, args):
    ll = os.path.join(out, suite, name + ".ll")
    cmd = [rlxc, rlx, "--emit=llvm", "--mcpu=x86-64-v4", "-o", ll] + args
    p = subprocess.run(cmd, cwd=ROOT, stdout=subprocess.PIPE,
                       stderr=subprocess.STDOUT, timeout=600)
    if p.returncode != 0:  # the message is the "IR", so failures compare
        with open(ll, "wb") as f:
            f.write(b"; rlxc exit %d\n" % p.returncode + p.stdout)
    return p.returncode


def dump(a):
    rlxc = os.path.abspath(a.rlxc)
    for suite in SUITES:
        os.makedirs(os.path.join(a.out, suite), exist_ok=True)
    todo = list(cases())
    with concurrent.futures.ThreadPoolExecutor(a.jobs) as ex:
        rcs = list(ex.map(lambda c: dump_one(rlxc, a.out, *c), todo))
    print("%d cases dumped to %s (%d with rlxc errors)"
          % (len(todo), a.out, sum(1 for r in rcs if r)))
    return 0


def diff(a):
    def listing(d):
        return {os.path.relpath(p, d) for p in
                glob.glob(os.path.join(d, "*", "*.ll"))}
    old, new = listing(a.old), listing(a.new)
    bad = sorted(old ^ new)
    for rel in sorted(old & new):
        with open(os.path.join(a.old, rel), "rb") as f1, \
                open(os.path.join(a.new, rel), "rb") as f2:
            if f1.read() != f2.read():
                bad.append(rel)
    for rel in bad:
        print("differs: " + rel)
    print("%d of %d cases identical" % (len(old | new) - len(bad),
                                         len(old | new)))
    return 1 if bad else 0


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    sub = ap.add_subparsers(dest="cmd", required=True)
    d = sub.add_parser("dump")
    d.add_argument("--rlxc", required=True)
    d.add_argument("-j", "--jobs", type=int, default=os.cpu_count() or 1)
    d.add_argument("out")
    c = sub.add_parser("diff")
    c.add_argument("old")
    c.add_argument("new")
    a = ap.parse_args()
    return dump(a) if a.cmd == "dump" else diff(a)


if __name__ == "__main__":
    sys.exit(main())
