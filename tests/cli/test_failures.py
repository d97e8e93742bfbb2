#!/usr/bin/env python3
"""test_failures.py: runs that fail as a whole, through the real driver.

  - Out of memory for real: a 100000-node chain `--grad --check` under
    address-space limits (RLIMIT_AS, i.e. `ulimit -v`) from just above
    what rlxc needs to start up to a comfortable one: every run exits 0,
    or 1 with exactly "rlxc: error: out of memory"; never a signal or an
    internal error. Skipped in a sanitizer build (ASan cannot start
    under such a limit).
  - An LLVM fatal error (msp430 cannot soften a float operation):
    "rlxc: error: LLVM: REASON", exit 1, no file left behind.
  - An LLVM backend error (BPF cannot call the runtime): a diagnostic
    "error: codegen: LLVM: ...", exit 1, no file left behind (LLVM
    itself would print it and exit, skipping the cleanup).
  - The source line under a diagnostic of a file with CR, CR LF or LF
    line ends is that one line.
A target LLVM was built without is skipped. Exit status 0 on success.
Usage: test_failures.py --rlxc BUILD/rlxc --root SOURCE_DIR
"""
import argparse
import os
import resource
import subprocess
import sys
import tempfile

OOM = "rlxc: error: out of memory\n"
failures = []


def check(cond, what):
    if not cond:
        failures.append(what)
        print("FAIL " + what)


def run(rlxc, args, limit=None, cwd=None):
    def lim():
        resource.setrlimit(resource.RLIMIT_AS, (limit, limit))
    p = subprocess.run([rlxc] + args, capture_output=True, cwd=cwd,
                       preexec_fn=lim if limit else None, timeout=300)
    return p.returncode, p.stderr.decode(errors="replace")


def chain(path, n):
    with open(path, "w") as f:
        f.write("graph big {\n  param %v0: f32[64]\n")
        for i in range(1, n + 1):
            f.write(f"  %v{i} = mul(%v{i - 1}, 0.999)\n")
        f.write(f"  %r = reduce_sum(%v{n})\n  return %r\n}}\n")


def test_address_limits(rlxc, tmp):
    mib = 1 << 20
    if run(rlxc, ["--version"], limit=4096 * mib)[0] != 0:
        print("skip: rlxc does not start under RLIMIT_AS (sanitizer)")
        return
    start = 64 * mib
    while run(rlxc, ["--version"], limit=start)[0] != 0:
        start += 16 * mib
        if start > 2048 * mib:
            check(False, "rlxc --version does not start under 2 GiB")
            return
    src = os.path.join(tmp, "chain.rlx")
    chain(src, 100000)
    outcomes = []
    for extra in (0, 16, 48, 112, 240, 2048):
        rc, err = run(rlxc, ["--grad", "--check", src],
                      limit=start + extra * mib)
        outcomes.append(rc)
        check(rc == 0 or (rc == 1 and err == OOM),
              f"limit start+{extra} MiB: status {rc}, stderr {err[-500:]}")
    check(1 in outcomes and outcomes[-1] == 0,
          f"expected out of memory at a low limit and success at the "
          f"highest: {outcomes}")


def test_llvm_errors(rlxc, root, tmp):
    mlp = os.path.join(root, "samples", "mlp.rlx")
    for target, want in (("msp430", "rlxc: error: LLVM: "),
                         ("bpf", "error: codegen: LLVM: ")):
        out = os.path.join(tmp, target)
        os.mkdir(out)
        rc, err = run(rlxc, [f"--target={target}", mlp, "-o",
                             os.path.join(out, "m.o")])
        if "unknown target" in err:
            print(f"skip: LLVM has no {target} target")
            continue
        check(rc == 1 and want in err,
              f"--target={target}: status {rc}, stderr {err[-500:]}")
        check(os.listdir(out) == [],
              f"--target={target} left {os.listdir(out)}")


def test_caret_line_ends(rlxc, tmp):
    for name, nl in (("lf", "\n"), ("crlf", "\r\n"), ("cr", "\r")):
        path = os.path.join(tmp, name + ".rlx")
        with open(path, "w", newline="") as f:
            f.write(nl.join(["graph g {", "  input %x: f32[2]",
                             "  %y = nosuchop(%x)", "  return %y", "}",
                             ""]))
        rc, err = run(rlxc, ["--check", path])
        lines = err.split("\n")
        check(rc == 1 and len(lines) >= 3 and ":3:8: error:" in lines[0]
              and lines[1] == "  %y = nosuchop(%x)"
              and lines[2] == "       ^",
              f"{name} line ends: status {rc}, stderr {err!r}")


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--rlxc", required=True)
    ap.add_argument("--root", required=True)
    a = ap.parse_args()
    with tempfile.TemporaryDirectory(prefix="rlx_fail_") as tmp:
        test_address_limits(a.rlxc, tmp)
        test_llvm_errors(a.rlxc, a.root, tmp)
        test_caret_line_ends(a.rlxc, tmp)
    print(f"{len(failures)} failure(s)")
    sys.exit(1 if failures else 0)


if __name__ == "__main__":
    main()
