#!/usr/bin/env python3
"""check_oom.py: allocation-failure injection over whole compilations.

In the style of SQLite's fault-injection tests: for a few small graphs
(--grad through scan, if, while and custom_fn; an object, a header, LLVM
IR and the printed IR; the input from a pipe; a run that ends in a
diagnostic), run rlxc with RLXC_FAIL_ALLOC=N, which makes the Nth
allocation of the compilation fail (main.c, ir/arena.c). Which N: one
run with RLXC_TRACE_ALLOC=FILE writes a line per allocation naming its
call stack (six return addresses), and every allocation site is failed
where it is first reached. Failing every N instead costs a process
start per allocation, 3 to 5 times as many runs, and reaches no other
site. Every injected run must:
  - exit with status 1 (not a signal, not a sanitizer's status),
  - print exactly "rlxc: error: out of memory" on stderr (so no leak or
    sanitizer report in the ASan tree, and no other diagnostic),
  - leave its output directory empty (no output, no temporary);
and failing allocation count + 1 must end as the run without injection
(the baseline: success with the expected outputs, or the expected
diagnostic), so that the trace counted every allocation. --every walks
every N instead (the old, exhaustive walk).

Runs go --jobs at a time. Exit status 0 when every run behaved.
Usage: check_oom.py --rlxc BUILD/rlxc --root SOURCE_DIR [--jobs 2]
                    [--only CASE] [--every]
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


def run_once(rlxc, argv, stdin, n, scratch, trace=None):
    """Run with the nth allocation failing (n = 0: none) in a fresh
    output dir, writing the allocation trace to `trace` if given;
    returns (status, stderr, files left)."""
    out = tempfile.mkdtemp(dir=scratch)
    env = dict(os.environ, RLXC_FAIL_ALLOC=str(n))
    if trace:
        env["RLXC_TRACE_ALLOC"] = trace
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


def check_case(rlxc, case, jobs, every, scratch):
    """Fail each allocation site once (or every allocation). Returns
    (errors, runs, allocations counted)."""
    name, argv, stdin, want = case
    trace = os.path.join(scratch, name + ".trace")
    base = run_once(rlxc, argv, stdin, 0, scratch, trace)
    bad = baseline_error(name, base, want)
    if bad:
        return [bad], 1, None
    with open(trace) as f:
        sites = f.read().split()
    seen, todo = set(), []
    for n, site in enumerate(sites, 1):
        if every or site not in seen:
            todo.append(n)
        seen.add(site)
    errors = []
    with concurrent.futures.ThreadPoolExecutor(jobs) as pool:
        res = pool.map(lambda k: run_once(rlxc, argv, stdin, k, scratch),
                       todo + [len(sites) + 1])
        for k, r in zip(todo, res):
            rc, err, left = r
            if (rc != 1 or err != OOM or left) and len(errors) < 5:
                errors.append(f"{name}: N={k}: status {rc}, files "
                              f"{left}, stderr:\n{err[-3000:]}")
        if next(res) != base:
            errors.append(f"{name}: failing allocation {len(sites) + 1} "
                          f"of {len(sites)} did not end as without "
                          f"injection: the trace missed allocations")
    return errors, len(todo) + 2, len(sites)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--rlxc", required=True)
    ap.add_argument("--root", required=True)
    ap.add_argument("--jobs", type=int, default=2)
    ap.add_argument("--every", action="store_true",
                    help="fail every allocation, not every site")
    ap.add_argument("--only", help="run the case of this name only")
    a = ap.parse_args()
    failed = False
    todo = [c for c in cases(a.root) if not a.only or c[0] == a.only]
    if not todo:
        sys.exit(f"check_oom.py: no case named {a.only}")
    with tempfile.TemporaryDirectory(prefix="rlx_oom_") as scratch:
        for case in todo:
            t = time.time()
            errs, runs, count = check_case(a.rlxc, case, a.jobs,
                                           a.every, scratch)
            print(f"{case[0]}: {count} allocations, {runs} runs, "
                  f"{time.time() - t:.1f}s", flush=True)
            for e in errs:
                print("FAIL " + e)
            failed |= bool(errs)
    sys.exit(1 if failed else 0)


if __name__ == "__main__":
    main()
