"""torch_env.py -- what the PyTorch baselines bench/*_torch.py share.

Thread pools. PyTorch's CPU work runs on three pools: its intra-op
pool (torch.set_num_threads), OpenMP's, and the BLAS library's own
(Debian's torch calls the system libblas.so.3, which is OpenBLAS when
libopenblas is installed; torch.set_num_threads does not reach it, so
without a limit PyTorch's "1 thread" GEMMs run on every CPU). A script
measuring T threads:
  set_env(T)          before torch loads: OMP_NUM_THREADS,
                      OPENBLAS_NUM_THREADS and MKL_NUM_THREADS = T (the
                      largest T of a run; refuses once torch is loaded);
  argv_threads(d)     the thread counts of --threads on the command line
                      (d when absent), for scripts that import torch at
                      module level, before argparse runs;
  use_threads(torch, t)   torch.set_num_threads(t) and OpenBLAS's pool
                      to t (set_blas_threads) where it is loaded.

Timing: timings(fn, seconds, warmup, min_calls) calls fn `warmup`
times, then until both min_calls calls and `seconds` have passed, and
returns each call's wall seconds (and process CPU seconds into a list
given as cpu=); median_min(ts, scale) is the (upper) median and the
minimum of a sample, times scale (1e3: ms); measure() both, with the
number of calls; merge_best keeps the best median and minimum over
rounds.

Machine description: cpu_name(), load_average() (the 1, 5 and 15
minute load, as /proc/loadavg prints them), utc_now() ("YYYY-MM-DD
HH:MM") and machine_line(torch, blas), the "Machine: ..." line of the
Markdown reports.
"""
import ctypes
import datetime
import os
import platform
import sys
import time

THREAD_VARS = ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS")


def set_env(threads, blas=True):
    """OpenMP, OpenBLAS (unless not blas: its default pool) and MKL
    pools of `threads` threads; must run before torch is imported (they
    read the environment when loaded)."""
    if "torch" in sys.modules:
        raise RuntimeError("torch_env.set_env: torch is already loaded")
    for v in THREAD_VARS:
        if blas or v != "OPENBLAS_NUM_THREADS":
            os.environ[v] = str(threads)


def argv_threads(default, argv=None):
    """[int] of `--threads A,B` / `--threads=A,B` in argv (sys.argv),
    else of default."""
    argv = sys.argv[1:] if argv is None else argv
    val = default
    for i, a in enumerate(argv):
        if a == "--threads" and i + 1 < len(argv):
            val = argv[i + 1]
        elif a.startswith("--threads="):
            val = a.split("=", 1)[1]
    try:
        return [int(t) for t in str(val).split(",")]
    except ValueError:  # argparse reports it
        return [int(t) for t in str(default).split(",")]


def blas_libs():
    """OpenBLAS libraries loaded into this process."""
    return sorted({line.split()[-1] for line in open("/proc/self/maps")
                   if "openblas" in line and ".so" in line})


def set_blas_threads(t):
    """OpenBLAS's own pthread pool to t threads in every loaded
    OpenBLAS; returns the libraries it was set in."""
    done = []
    for path in blas_libs():
        lib = ctypes.CDLL(path)
        if hasattr(lib, "openblas_set_num_threads"):
            lib.openblas_set_num_threads(ctypes.c_int(t))
            done.append(os.path.basename(path))
    return done


def use_threads(torch, t, blas=True):
    """torch.set_num_threads(t) and, with blas, OpenBLAS's pool too."""
    torch.set_num_threads(t)
    if blas:
        set_blas_threads(t)


def timings(fn, seconds, warmup=2, min_calls=5, cpu=None):
    """Wall seconds of each call of fn after `warmup` calls, calling
    until min_calls calls and `seconds` have passed (seconds 0: exactly
    min_calls calls); process CPU seconds appended to cpu if given."""
    for _ in range(warmup):
        fn()
    ts, start = [], time.perf_counter()
    while len(ts) < min_calls or time.perf_counter() - start < seconds:
        t0, c0 = time.perf_counter(), time.process_time()
        fn()
        ts.append(time.perf_counter() - t0)
        if cpu is not None:
            cpu.append(time.process_time() - c0)
    return ts


def median_min(ts, scale=1.0):
    """(upper median, minimum) of ts, times scale."""
    ts = sorted(ts)
    return ts[len(ts) // 2] * scale, ts[0] * scale


def measure(fn, seconds, warmup=2, min_calls=5, scale=1e3):
    """(median, minimum, calls) of timings(), times scale (ms)."""
    ts = timings(fn, seconds, warmup, min_calls)
    return median_min(ts, scale) + (len(ts),)


def merge_best(best, res):
    """Keep the lowest median and the lowest minimum over rounds:
    best[k] and res[k] are (median, min)."""
    for k, (med, mn) in res.items():
        om, on = best.get(k, (med, mn))
        best[k] = (min(om, med), min(on, mn))


def cpu_name():
    for line in open("/proc/cpuinfo"):
        if line.startswith("model name"):
            return line.split(":", 1)[1].strip()
    return platform.processor() or platform.machine()


def load_average():
    return " ".join(open("/proc/loadavg").read().split()[:3])


def utc_now():
    return datetime.datetime.now(datetime.timezone.utc).strftime(
        "%Y-%m-%d %H:%M")


def machine_line(torch, blas=None):
    """'Machine: CPU (N logical CPUs), DATE UTC, torch V, load average
    L' and, with blas (the OpenBLAS state to report), ', OpenBLAS set to
    T threads: BLAS'."""
    s = ("Machine: %s (%d logical CPUs), %s UTC, torch %s, load average %s"
         % (cpu_name(), os.cpu_count(), utc_now(), torch.__version__,
            load_average()))
    if blas is not None:
        s += ", OpenBLAS set to T threads: %s" % blas
    return s
