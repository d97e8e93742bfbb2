#!/usr/bin/env python3
"""check_oom.py: allocation-failure injection over whole compilations.

In the style of SQLite's fault-injection tests: for a few small graphs
(--grad through scan, if, while and custom_fn; an object, a header, LLVM
IR and the printed IR; the input from a pipe; a run that ends in a
diagnostic), run rlxc with RLXC_FAIL_ALLOC=N, which makes the Nth
allocation of the compilation fail (main.c, ir/arena.c), for N = 1, 2,
3, ... until the run ends as it does without injection (the baseline:
success with the expected outputs, or the expected diagnostic). Every
run before that must:
  - exit with status 1 (not a signal, not a sanitizer's status),
  - print exactly "rlxc: error: out of memory" on stderr (so no leak or
    sanitizer report in the ASan tree, and no other diagnostic),
  - leave its output directory empty (no output, no temporary).
A case needing more than --max-runs runs is walked with a stride after
that many (every case here is small enough to be walked fully).

Runs go --jobs at a time. Exit status 0 when every run behaved.
Usage: check_oom.py --rlxc BUILD/rlxc --root SOURCE_DIR [--jobs 2]
"""
import argparse
import concurrent.futures
import os
import shutil
import subprocess
import sys
import tempfile
import time

OOM = "rlxc: error: out of memory\n"


def cases(root):
    """(name, argv after rlxc with @OUT@ for the output dir, stdin text or
    None, files the baseline run leaves there)."""
    mlp = os.path.join(root, "samples", "mlp.rlx")
    e2e = os.path.join(root, "tests", "e2e", "cases")
    with open(mlp) as f:
        # a pipe, not a file: read_all grows its buffer (past 64 KiB),
        # and the scanner gets a large buffer of comment lines
        piped = "// padding\n" * 7000 + f.read()
    return [
        ("mlp_grad_obj", ["--grad", mlp, "-o", "@OUT@/mlp.o"], None,
         ["mlp.h", "mlp.o"]),
        ("control_grad_ir",
         ["--grad", os.path.join(e2e, "control_grad.rlx"), "--emit=ir",
          "-o", "@OUT@/g.rlx"], None, ["g.rlx"]),
        ("scan_grad_llvm",
         ["--grad", "--wrt=wx,wh", os.path.join(e2e, "scan_rnn.rlx"),
          "--emit=header,llvm", "-o", "@OUT@/s.ll"], None, ["s.h", "s.ll"]),
        ("mlp_grad_stdin", ["--grad", "--check", "-"], piped, []),
        # forward mode and forward over reverse
        ("mlp_jvp_hvp", ["--jvp", "--hvp", "--check", mlp], None, []),
    ]


def run_once(rlxc, argv, stdin, n, scratch):
    """Run with the nth allocation failing (n = 0: none) in a fresh
    output dir; returns (status, stderr, files left)."""
    out = tempfile.mkdtemp(dir=scratch)
    env = dict(os.environ, RLXC_FAIL_ALLOC=str(n))
    env.setdefault("ASAN_OPTIONS", "detect_leaks=1")
    args = [rlxc] + [a.replace("@OUT@", out) for a in argv]
    p = subprocess.run(args, input=(stdin or "").encode(), env=env,
                       stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
                       timeout=120)
    left = sorted(os.listdir(out))
    shutil.rmtree(out)
    return p.returncode, p.stderr.decode(errors="replace"), left


def baseline_error(name, base, want):
    rc, err, left = base
    if left == want and (rc == 0) == (err == "") and rc in (0, 1) and \
            err != OOM:
        return None
    return (f"{name}: without injection: status {rc}, files {left} "
            f"(expected {want}), stderr:\n{err[-3000:]}")


def check_case(rlxc, case, jobs, max_runs, scratch):
    """Walk N upward until a run ends like the baseline. Returns
    (errors, runs, that N)."""
    name, argv, stdin, want = case
    base = run_once(rlxc, argv, stdin, 0, scratch)
    bad = baseline_error(name, base, want)
    if bad:
        return [bad], 1, None
    errors, runs, stride, n = [], 1, 1, 1
    with concurrent.futures.ThreadPoolExecutor(jobs) as pool:
        while n < 10**7 and len(errors) < 5:
            batch = [n + i * stride for i in range(jobs)]
            res = list(pool.map(
                lambda k: run_once(rlxc, argv, stdin, k, scratch), batch))
            runs += len(batch)
            for k, r in zip(batch, res):
                if r == base:
                    return errors, runs, k
                rc, err, left = r
                if rc != 1 or err != OOM or left:
                    errors.append(f"{name}: N={k}: status {rc}, files "
                                  f"{left}, stderr:\n{err[-3000:]}")
            n = batch[-1] + stride
            if runs >= max_runs:
                stride = 7  # a very large case: sample the rest
    return errors + [f"{name}: stopped at N={n}"], runs, None


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--rlxc", required=True)
    ap.add_argument("--root", required=True)
    ap.add_argument("--jobs", type=int, default=2)
    ap.add_argument("--max-runs", type=int, default=3000)
    ap.add_argument("--only", help="run the case of this name only")
    a = ap.parse_args()
    failed = False
    todo = [c for c in cases(a.root) if not a.only or c[0] == a.only]
    if not todo:
        sys.exit(f"check_oom.py: no case named {a.only}")
    with tempfile.TemporaryDirectory(prefix="rlx_oom_") as scratch:
        for case in todo:
            t = time.time()
            errs, runs, end = check_case(a.rlxc, case, a.jobs,
                                         a.max_runs, scratch)
            print(f"{case[0]}: {runs} runs, ends as without injection "
                  f"from N={end}, {time.time() - t:.1f}s", flush=True)
            for e in errs:
                print("FAIL " + e)
            failed |= bool(errs)
    sys.exit(1 if failed else 0)


if __name__ == "__main__":
    main()
