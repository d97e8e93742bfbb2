#!/usr/bin/env python3
"""scan_length_cost.py -- the cost of compiling a scan's gradient does
not depend on the scan length.

For an RNN scan over f32[L, 4] (broadcast weight, per-step operand that
needs its own gradient), in five forms -- final carry, trajectory,
checkpoints=3, reverse=true, reverse=true with checkpoints=3 -- and
L = 10^3, 10^9, 2^31, runs `rlxc --grad --check` and `rlxc --grad -o
X.o`. Each run must finish within --time-limit seconds and use at most
--rss-mb MiB (peak resident set, from wait4). Then, per form:
  * without checkpoints, the printed gradient IR (--emit=ir) has the
    same number of lines at every L, and the object at L > 10^3 is at
    most 4 KiB larger than at L = 10^3 (LLVM picks slightly different
    code for other trip counts);
  * with checkpoints, the module has at most 4 log2(L) + 8 graphs
    (O(log L) segment subgraphs) and the object stays below 256 KiB;
  * the IR printed at the largest L reads back and prints identically.
Before scan reverse mode used reverse scans it built index tables of L
entries: 160 MB objects at L = 10^7 and tens of GB at L = 10^9.
With --as-mb the runs also get an address-space limit (not for
sanitized builds: ASan reserves terabytes), so a regression fails
fast instead of exhausting the machine.
Usage: scan_length_cost.py RLXC [--time-limit S] [--rss-mb M] [--as-mb M]
"""
import argparse
import math
import os
import resource
import subprocess
import sys
import tempfile
import time

SRC = """graph cell {{
  input %h: f32[4]
  input %w: f32[4, 4]
  input %x: f32[4]
  %hw = reshape(matmul(reshape(%h, shape=[1, 4]), %w), shape=[4])
  %n = tanh(add(%hw, %x))
  return %n
}}
graph long_scan {{
  param %h0: f32[4]
  param %w: f32[4, 4]
  param %xs: f32[{L}, 4]
  %y = scan(%h0, %w, %xs, body=@cell, num_bcast=1{attrs})
  %l = reduce_sum(%y)
  return %l
}}
"""
FORMS = [("final", ""), ("traj", ", save_trajectory=true"),
         ("ckpt", ", checkpoints=3"), ("rev", ", reverse=true"),
         ("rev_ckpt", ", checkpoints=3, reverse=true")]
LENGTHS = [10 ** 3, 10 ** 9, 2 ** 31]


def run_measured(args, limit, as_mb):
    """(exit status, seconds, peak RSS in MiB, stdout) of one run, killed
    after `limit` seconds; the peak RSS comes from wait4 of the child."""
    def pre():
        if as_mb:
            b = as_mb << 20
            resource.setrlimit(resource.RLIMIT_AS, (b, b))
    t0 = time.monotonic()
    fo, fe = tempfile.TemporaryFile(), tempfile.TemporaryFile()
    p = subprocess.Popen(args, stdout=fo, stderr=fe, preexec_fn=pre)
    deadline = t0 + limit
    while True:
        pid, status, ru = os.wait4(p.pid, os.WNOHANG)
        if pid:
            break
        if time.monotonic() > deadline:
            p.kill()
            pid, status, ru = os.wait4(p.pid, 0)
            break
        time.sleep(0.01)
    dt = time.monotonic() - t0
    p.returncode = os.waitstatus_to_exitcode(status)
    fo.seek(0)
    fe.seek(0)
    out, err = fo.read(), fe.read()
    fo.close()
    fe.close()
    if p.returncode:
        sys.stderr.write(err.decode("utf-8", "replace")[-2000:])
    return p.returncode, dt, ru.ru_maxrss / 1024, out


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("rlxc")
    ap.add_argument("--time-limit", type=float, default=30.0)
    ap.add_argument("--rss-mb", type=float, default=1024.0)
    ap.add_argument("--as-mb", type=int, default=0)
    a = ap.parse_args()
    ok = True
    with tempfile.TemporaryDirectory(prefix="rlx-scanlen-") as tmp:
        for form, attrs in FORMS:
            lines, size, ngraphs, text = {}, {}, {}, None
            for L in LENGTHS:
                src = os.path.join(tmp, "%s_%d.rlx" % (form, L))
                obj = src[:-4] + ".o"
                open(src, "w").write(SRC.format(L=L, attrs=attrs))
                for what, args in (
                        ("check", [a.rlxc, src, "--grad", "--check"]),
                        ("obj", [a.rlxc, src, "--grad", "-o", obj]),
                        ("ir", [a.rlxc, src, "--grad", "--emit=ir"])):
                    rc, dt, rss, out = run_measured(args, a.time_limit,
                                                    a.as_mb)
                    good = (rc == 0 and dt <= a.time_limit and
                            rss <= a.rss_mb)
                    print("%s %-8s L=%-10d %-5s %6.2f s %7.1f MiB%s" %
                          ("PASS" if good else "FAIL", form, L, what, dt,
                           rss, "" if rc == 0 else " (exit %d)" % rc))
                    ok = ok and good
                    if what == "ir" and rc == 0:
                        text = out
                        lines[L] = out.count(b"\n")
                        ngraphs[L] = out.count(b"\ngraph ") + 1
                if os.path.exists(obj):
                    size[L] = os.path.getsize(obj)
            ok = check_sizes(form, lines, size, ngraphs) and ok
            if text is not None:
                ok = roundtrip(a.rlxc, tmp, form, text) and ok
    print("PASS" if ok else "FAIL")
    return 0 if ok else 1


def check_sizes(form, lines, size, ngraphs):
    L0 = LENGTHS[0]
    if len(size) != len(LENGTHS) or len(lines) != len(LENGTHS):
        print("FAIL %s: some length did not compile" % form)
        return False
    ok = True
    for L in LENGTHS[1:]:
        if "ckpt" in form:
            good = (ngraphs[L] <= 4 * math.log2(L) + 8 and
                    size[L] < 256 * 1024)
            what = "%d graphs, %d bytes" % (ngraphs[L], size[L])
        else:
            good = lines[L] == lines[L0] and size[L] <= size[L0] + 4096
            what = "%d IR lines (%d at L=%d), %d bytes (%d)" % (
                lines[L], lines[L0], L0, size[L], size[L0])
        print("%s %-8s L=%-10d %s" % ("PASS" if good else "FAIL", form, L,
                                       what))
        ok = ok and good
    return ok


def roundtrip(rlxc, tmp, form, text):
    """The printed gradient module is valid input and a fixed point."""
    path = os.path.join(tmp, form + "_printed.rlx")
    open(path, "wb").write(text)
    p = subprocess.run([rlxc, path, "--emit=ir"], stdout=subprocess.PIPE,
                       stderr=subprocess.PIPE, timeout=60)
    good = p.returncode == 0 and p.stdout == text
    print("%s %-8s printed IR round trip" % ("PASS" if good else "FAIL",
                                             form))
    if not good:
        sys.stderr.write(p.stderr.decode("utf-8", "replace")[-2000:])
    return good


if __name__ == "__main__":
    sys.exit(main())
