#!/usr/bin/env python3
"""bench_scale.py: compile-time scaling of rlxc (docs/performance.md,
"Compile-time scaling").

Full compiles (`rlxc G.rlx -o G.o`, and again with --grad) of graphs
from tests/tools/gen_graphs.py in five shapes of N nodes:
  chain    %v_i = add(%v_{i-1}, %x) / mul(%v_{i-1}, 1.0001), f32[16]
  diamond  %v_i = add(%v_{i-1}, %v_{i-1}) (every value used twice)
  lattice  %v_i = add(mul(%v_{i-1}, %v_{i-2}), %v_{i-3})
  fanout   one value read by N/2 consumers, summed by a tree of adds
  stack    N/3 layers act(matmul(h, W) + b), 16x16, W and b params
and a scan of length L over f32[L, 4] (tanh(h * w + x), w a broadcast
param), whose compile cost should not depend on L.

Each compile runs under a time limit (--timeout, default 120 s) and an
address-space limit (--mem-limit-mb, default 4096); a case that runs
over is recorded as 'timeout', one that dies by a signal as
'crash (SIG...)', a non-zero exit as 'out of memory' or 'reject (exit
N)' with the first diagnostic. After a failure the larger sizes of that
shape and mode are skipped (with --keep-going only after a timeout).
Wall time, CPU time (user + system: the figure that holds on a loaded
machine) and peak RSS come from wait4() on the child. The growth
exponent between consecutive sizes is log(t2 / t1) / log(n2 / n1)
(1 = linear; n log n reads as slightly above 1).

usage: bench/bench_scale.py [--rlxc build/rlxc] [--sizes 1000,10000,...]
         [--shapes chain,diamond,...] [--scan-lengths 1000,1000000,...]
         [--no-grad | --grad-only] [--timeout S] [--mem-limit-mb M]
         [--keep DIR] [--keep-going] [--markdown]
"""
import argparse
import datetime
import math
import os
import platform
import resource
import signal
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "tests", "tools"))
import gen_graphs  # noqa: E402

SHAPES = ["chain", "diamond", "lattice", "fanout", "stack"]


def machine():
    model = platform.processor() or "?"
    try:
        out = subprocess.run(["lscpu"], stdout=subprocess.PIPE,
                             universal_newlines=True).stdout
        for line in out.splitlines():
            if line.startswith("Model name:"):
                model = line.split(":", 1)[1].strip()
    except OSError:
        pass
    return "%s, %d logical CPUs" % (model, os.cpu_count() or 0)


def run_limited(cmd, timeout, mem_mb):
    """(status, wall s, CPU s (user + system), peak RSS MiB, output) of
    cmd."""
    def limit():
        if mem_mb > 0:
            b = mem_mb << 20
            resource.setrlimit(resource.RLIMIT_AS, (b, b))
    errf = tempfile.TemporaryFile()
    t0 = time.monotonic()
    p = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=errf,
                         preexec_fn=limit)
    status, ru = None, None
    while True:
        pid, st, ru = os.wait4(p.pid, os.WNOHANG)
        if pid:
            status = st
            break
        if time.monotonic() - t0 > timeout:
            p.kill()
            _, st, ru = os.wait4(p.pid, 0)
            wall = time.monotonic() - t0
            p.returncode = -9
            errf.close()
            return ("timeout", wall, ru.ru_utime + ru.ru_stime,
                    ru.ru_maxrss / 1024.0, "")
        time.sleep(0.01)
    wall = time.monotonic() - t0
    p.returncode = 0  # reaped by wait4 above
    errf.seek(0)
    out = errf.read(1 << 20).decode("utf-8", "replace")
    errf.close()
    rss = ru.ru_maxrss / 1024.0
    cpu = ru.ru_utime + ru.ru_stime
    if os.WIFSIGNALED(status):
        sig = os.WTERMSIG(status)
        try:
            name = signal.Signals(sig).name
        except ValueError:
            name = str(sig)
        return "crash (%s)" % name, wall, cpu, rss, out
    code = os.WEXITSTATUS(status)
    if code != 0 and "out of memory" in out:
        return "out of memory", wall, cpu, rss, out
    if code != 0:
        return "reject (exit %d)" % code, wall, cpu, rss, out
    if "LLVM ERROR" in out:
        return "LLVM ERROR", wall, cpu, rss, out
    return "ok", wall, cpu, rss, out


def first_diag(out):
    for line in out.splitlines():
        if "error" in line or "ERROR" in line or "Sanitizer" in line:
            return line.strip()[:160]
    return out.strip().splitlines()[0][:160] if out.strip() else ""


def fmt_n(n):
    if n >= 1000 and n % 1000 == 0:
        e = int(round(math.log10(n)))
        if 10 ** e == n:
            return "1e%d" % e
    return str(n)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--rlxc", default=os.path.join(HERE, "..", "build",
                                                   "rlxc"))
    ap.add_argument("--sizes", default="1000,10000,100000")
    ap.add_argument("--shapes", default=",".join(SHAPES))
    ap.add_argument("--scan-lengths",
                    default="1000,1000000,1000000000")
    ap.add_argument("--no-grad", action="store_true")
    ap.add_argument("--grad-only", action="store_true")
    ap.add_argument("--timeout", type=float, default=120)
    ap.add_argument("--mem-limit-mb", type=int, default=4096)
    ap.add_argument("--keep", help="keep the generated graphs here")
    ap.add_argument("--keep-going", action="store_true",
                    help="after a reject or crash, still try the larger "
                    "sizes (a timeout always skips them)")
    ap.add_argument("--markdown", action="store_true",
                    help="print a docs/performance.md table at the end")
    a = ap.parse_args()
    sizes = [int(float(s)) for s in a.sizes.split(",") if s]
    shapes = [s for s in a.shapes.split(",") if s]
    lengths = [int(float(s)) for s in a.scan_lengths.split(",") if s]
    modes = [False, True]
    if a.no_grad:
        modes = [False]
    if a.grad_only:
        modes = [True]
    work = a.keep or tempfile.mkdtemp(prefix="bench_scale.")
    os.makedirs(work, exist_ok=True)

    print("rlxc: %s" % os.path.abspath(a.rlxc))
    print("machine: %s" % machine())
    print("date: %s" % datetime.datetime.utcnow().strftime(
        "%Y-%m-%d %H:%M UTC"))
    print("limits: %g s, %d MiB address space per compile (0: none)" %
          (a.timeout, a.mem_limit_mb))
    print("load average at start: %.2f %.2f %.2f" % os.getloadavg())
    hdr = "%-8s %11s %-6s %-18s %9s %9s %10s %7s %7s" % (
        "shape", "n", "grad", "status", "wall s", "CPU s", "RSS MiB",
        "exp t", "exp m")
    print(hdr)
    rows = []
    cases = [(s, n) for s in shapes for n in sizes]
    cases += [("scan", L) for L in lengths]
    prev = {}
    failed = set()
    for shape, n in cases:
        src = gen_graphs.generate(shape, nodes=n)
        path = os.path.join(work, "%s_%d.rlx" % (shape, n))
        with open(path, "w") as f:
            f.write(src)
        for grad in modes:
            key = (shape, grad)
            if key in failed:
                rows.append((shape, n, grad, "skipped", None, None, None,
                             None, None, ""))
                print("%-8s %11s %-6s %-18s" % (shape, fmt_n(n),
                                                "yes" if grad else "no",
                                                "skipped"))
                continue
            obj = path[:-4] + ("_grad.o" if grad else ".o")
            cmd = [a.rlxc, path, "-o", obj] + (["--grad"] if grad else [])
            st, wall, cpu, rss, out = run_limited(cmd, a.timeout,
                                                  a.mem_limit_mb)
            et = em = None
            if st == "ok" and key in prev and shape != "scan":
                n0, t0, m0 = prev[key]
                if wall > 0 and t0 > 0:
                    et = math.log(wall / t0) / math.log(n / n0)
                if rss > 0 and m0 > 0:
                    em = math.log(rss / m0) / math.log(n / n0)
            if st == "ok":
                prev[key] = (n, wall, rss)
            elif st == "timeout" or not a.keep_going:
                failed.add(key)
            why = "" if st == "ok" else first_diag(out)
            rows.append((shape, n, grad, st, wall, cpu, rss, et, em, why))
            print("%-8s %11s %-6s %-18s %9.2f %9.2f %10.1f %7s %7s" % (
                shape, fmt_n(n), "yes" if grad else "no", st, wall, cpu, rss,
                "%.2f" % et if et is not None else "",
                "%.2f" % em if em is not None else ""))
            if why:
                print("    %s" % why)
                print("    reproduce: %s gen --shape %s --nodes %d -o G.rlx"
                      " && %s G.rlx -o G.o%s" % (
                          os.path.join("tests", "tools", "gen_graphs.py"),
                          shape, n, os.path.basename(a.rlxc),
                          " --grad" if grad else ""))
            sys.stdout.flush()
            try:
                os.remove(obj)
            except OSError:
                pass
            for ext in (".h",):
                try:
                    os.remove(obj[:-2] + ext)
                except OSError:
                    pass
    print("load average at end: %.2f %.2f %.2f" % os.getloadavg())
    if a.markdown:
        print()
        print("| shape | n | --grad | status | wall s | CPU s |"
              " peak RSS MiB | exp (time) | exp (RSS) |")
        print("|---|---:|---|---|---:|---:|---:|---:|---:|")
        for shape, n, grad, st, wall, cpu, rss, et, em, why in rows:
            print("| %s | %s | %s | %s | %s | %s | %s | %s | %s |" % (
                shape, fmt_n(n), "yes" if grad else "no", st,
                "%.2f" % wall if wall is not None else "",
                "%.2f" % cpu if cpu is not None else "",
                "%.0f" % rss if rss is not None else "",
                "%.2f" % et if et is not None else "",
                "%.2f" % em if em is not None else ""))
    if not a.keep:
        for f in os.listdir(work):
            os.remove(os.path.join(work, f))
        os.rmdir(work)
    return 0


if __name__ == "__main__":
    sys.exit(main())
