#!/usr/bin/env python3
"""Error corpus runner (tests/errors/*.rlx).

For one FILE.rlx: `rlxc --check [ARGS] FILE` must exit with status 1
(not 0, not 2, never a signal) and, for every comment line
    // EXPECT: LINE:COL: TEXT
print on stderr a diagnostic line `FILE:LINE:COL: error: ...TEXT...`
(TEXT is a substring of the message). Optional lines:
    // ARGS: --grad --wrt=%w     extra command-line arguments
    // EXPECT-COUNT: N           exactly N `error:` lines
A file without EXPECT lines fails. Assertion failures and internal
errors ("internal error", "internal:") fail the test: user mistakes must
be diagnosed by the front end, not by an internal check.
"""
import argparse
import re
import shlex
import subprocess
import sys


def check(rlxc, path):
    text = open(path, "rb").read().decode("utf-8", "replace")
    expects = re.findall(r"//\s*EXPECT:\s*(\d+):(\d+):\s?(.*)", text)
    args = []
    for m in re.findall(r"//\s*ARGS:\s*(.*)", text):
        args += shlex.split(m)
    count = re.findall(r"//\s*EXPECT-COUNT:\s*(\d+)", text)
    if not expects:
        return ["no `// EXPECT: LINE:COL: TEXT` line in the file"]
    p = subprocess.run([rlxc, "--check"] + args + [path],
                       stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                       timeout=120)
    err = p.stderr.decode("utf-8", "replace")
    errs = []
    if p.returncode != 1:
        errs.append("exit status %d, expected 1" % p.returncode)
    if "internal error" in err or "internal:" in err:
        errs.append("an internal error was reported")
    lines = err.splitlines()
    for line, col, msg in expects:
        msg = msg.rstrip()
        head = "%s:%s:%s: error: " % (path, line, col)
        if not any(l.startswith(head) and msg in l[len(head):]
                   for l in lines):
            errs.append("missing diagnostic %s...%s..." % (head, msg))
    if count:
        n = sum(1 for l in lines if ": error: " in l)
        if n != int(count[0]):
            errs.append("%d errors reported, expected %s" % (n, count[0]))
    if errs:
        errs.append("stderr was:\n" + err)
    return errs


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--rlxc", required=True)
    ap.add_argument("files", nargs="+")
    a = ap.parse_args()
    failed = 0
    for f in a.files:
        errs = check(a.rlxc, f)
        for e in errs:
            print("FAIL %s: %s" % (f, e))
        if not errs:
            print("ok %s" % f)
        failed += bool(errs)
    sys.exit(1 if failed else 0)


if __name__ == "__main__":
    main()
