#!/usr/bin/env python3
"""gpu_e2e.py -- the e2e cases with rlxc --target=cuda (docs/gpu.md).

  gpu_e2e.py check [--build DIR] [--every N [--first K]]
      Without a GPU (CI): compile every case (tests/e2e/cases, rlxc
      arguments from golden/NAME/run.txt) with --target=cuda. Each must
      either compile (its PTX verified by LLVM, no `.extern .func`:
      rlxc checks both) or be refused with "op 'X' is not supported by
      --target=cuda yet". Any other outcome fails. --every N: only every
      Nth case in name order, from the Kth (0) (the sanitizer tree,
      where a compile takes seconds; halves that ctest runs in
      parallel).
  gpu_e2e.py pack [--build DIR] OUT
      Compile and link the supported cases into OUT (shared objects,
      their golden runs, rlx_run_gpu, a manifest): a folder to carry to
      a GPU host, which needs no LLVM.
  gpu_e2e.py bits [--build DIR] OUT FILE.rlx...
      Pack graphs whose GPU outputs must have the CPU path's bits (the
      CPU's outputs on fixed inputs as goldens, tolerance 0 unless the
      file has a `// RLX-TOL: ...` line); appends to OUT's manifest.
  gpu_e2e.py run OUT [CASE...]
      On the GPU host: run every packed run with rlx_run_gpu against
      the CPU goldens at the same tolerances; print pass counts.
Runs that need what the GPU driver does not do (--fd, --gen,
--grad-entry, --env, --write) are packed as skipped. --expect RC runs
check the code through the object's NAME_gpu_status (rlx_run_gpu).

Options before the command: --arch SM compiles with --gpu-arch=SM
(e.g. sm_90a: the wgmma GEMM); --suite gradcheck takes the cases and
goldens of tests/gradcheck (the same run.txt format; its runs are the
reverse-mode gradient `_grad` and the forward-mode `_jvp` entries
against torch goldens) instead of tests/e2e, --suite hvp those of
tests/hvp (`_grad`, `_jvp` and `_hvp` entries); --match REGEX keeps the
cases whose name it matches (re.search).
"""
import concurrent.futures
import os
import re
import shutil
import subprocess
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import e2e  # noqa: E402  (read_spec, all_cases, CASES, GOLDEN)

UNSUPPORTED = "is not supported by --target=cuda yet"
SKIP_OPTS = ("--fd", "--gen", "--grad-entry", "--env", "--write")


def compile_case(rlxc, name, wdir):
    spec = e2e.read_spec(name)
    if spec["diag"]:
        return spec, "diag", ""
    obj = os.path.join(wdir, name + ".o")
    cmd = [rlxc, os.path.join(e2e.CASES, name + ".rlx"), "-o", obj,
           "--target=cuda"] + spec["rlxc"] + ARCH
    p = subprocess.run(cmd, capture_output=True, text=True, timeout=600)
    if p.returncode == 0 and os.path.exists(obj):
        return spec, "ok", obj
    err = (p.stderr or p.stdout).strip().splitlines()
    msg = err[0] if err else "exit %d" % p.returncode
    if p.returncode == 1 and any(UNSUPPORTED in l for l in err):
        return spec, "unsupported", msg
    return spec, "fail", msg


def select_suite(suite):
    """Point e2e's CASES / GOLDEN at tests/SUITE (e2e, gradcheck, hvp)."""
    if suite not in ("e2e", "gradcheck", "hvp"):
        sys.exit("gpu_e2e: --suite e2e, gradcheck or hvp")
    root = os.path.join(e2e.SRC, "tests", suite)
    e2e.CASES = os.path.join(root, "cases")
    e2e.GOLDEN = os.path.join(root, "golden")


MATCH = None  # --match: a compiled regex of the case names to keep
ARCH = []  # --arch SM: ["--gpu-arch=SM"]


def check(build, out=None, every=1, first=0):
    rlxc = os.path.join(build, "rlxc")
    wdir = out or os.path.join(build, "gpu_e2e")
    os.makedirs(wdir, exist_ok=True)
    counts, fails, packed = {}, [], []
    names = [c for c in e2e.all_cases() if not MATCH or MATCH.search(c)]
    for name in names[first::every]:
        spec, what, info = compile_case(rlxc, name, wdir)
        counts[what] = counts.get(what, 0) + 1
        if what == "fail":
            fails.append("%s: %s" % (name, info))
        if what == "ok":
            packed.append((name, spec, info))
    print("--target=cuda: %d compile, %d not supported yet, %d expected "
          "diagnostics, %d failed" % (counts.get("ok", 0),
                                      counts.get("unsupported", 0),
                                      counts.get("diag", 0), len(fails)))
    for f in fails:
        print("FAIL " + f)
    return fails, packed


def pack(build, out):
    out = os.path.abspath(out)
    fails, packed = check(build, os.path.join(out, "cases"))
    lines = []
    for name, spec, obj in packed:
        so = obj[:-2] + ".so"
        subprocess.run(["cc", "-shared", obj, "-o", so], check=True)
        os.remove(obj)
        for entry, sub, rargs in spec["runs"]:
            if any(o in rargs for o in SKIP_OPTS):
                lines.append("skip %s %s %s" % (name, entry, sub))
                continue
            dst = os.path.join(out, "golden", name, sub)
            if not os.path.exists(dst):
                shutil.copytree(os.path.join(e2e.GOLDEN, name, sub), dst)
            lines.append("run %s %s %s %s" % (name, entry, sub,
                                              " ".join(rargs)))
    shutil.copy(os.path.join(build, "tests", "rlx_run_gpu"), out)
    for f in ("gpu_e2e.py", "e2e.py"):  # OUT is self-contained
        shutil.copy(os.path.join(os.path.dirname(__file__), f), out)
    with open(os.path.join(out, "manifest.txt"), "w") as f:
        f.write("\n".join(lines) + "\n")
    return 1 if fails else 0


def bits(build, out, files):
    """Pack graphs whose GPU outputs must equal the CPU path's bits: each
    FILE (its last graph the entry, of float inputs) compiled for the
    CPU and the GPU, inputs uniform in [-3, 3) (fixed seed), the CPU's outputs
    (rlx_run --write) as the goldens, compared at tolerance 0 (or a
    `// RLX-TOL: --rtol X --atol Y` line's). Adds to OUT's manifest."""
    import random
    import struct
    out = os.path.abspath(out)
    rlxc = os.path.join(build, "rlxc")
    os.makedirs(os.path.join(out, "cases"), exist_ok=True)
    lines = []
    for f in files:
        text = open(f).read()
        name = re.findall(r"^graph (\w+)", text, re.M)[-1]  # the entry
        tol = re.search(r"^// RLX-TOL:(.*)$", text, re.M)
        tol = tol.group(1).split() if tol else ["--rtol", "0", "--atol", "0"]
        cpu = os.path.join(out, name + "_cpu")
        so = os.path.join(out, "cases", name + ".so")
        for target, dst in (([], cpu + ".so"), (["--target=cuda"], so)):
            subprocess.run([rlxc, f, "-o", dst[:-3] + ".o"] + target,
                           check=True)
            subprocess.run(["cc", "-shared", dst[:-3] + ".o", "-o", dst],
                           check=True)
            os.remove(dst[:-3] + ".o")
        gdir = os.path.join(out, "golden", name, "bits")
        os.makedirs(gdir, exist_ok=True)
        rng = random.Random(1234)
        k = 0
        entry = text[text.rindex("graph " + name):]
        for m in re.finditer(r"input %\w+: (f32|f64)\[([0-9, ]*)\]", entry):
            n = 1
            for d in m.group(2).split(","):
                n *= int(d) if d.strip() else 1  # f32[]: a scalar
            fmt = "<%d%s" % (n, "f" if m.group(1) == "f32" else "d")
            vals = [rng.uniform(-3, 3) for _ in range(n)]
            with open(os.path.join(gdir, "in%d.bin" % k), "wb") as g:
                g.write(struct.pack(fmt, *vals))
            k += 1
        subprocess.run([os.path.join(build, "tests", "rlx_run"), "--so",
                        cpu + ".so", "--entry", name, "--write", gdir, gdir],
                       check=True, stdout=subprocess.DEVNULL)
        for ext in (".so", ".h"):
            if os.path.exists(cpu + ext):
                os.remove(cpu + ext)
        if os.path.exists(so[:-3] + ".h"):
            os.remove(so[:-3] + ".h")
        lines.append("run %s %s bits %s" % (name, name, " ".join(tol)))
    for f in ("gpu_e2e.py", "e2e.py"):
        shutil.copy(os.path.join(os.path.dirname(__file__), f), out)
    shutil.copy(os.path.join(build, "tests", "rlx_run_gpu"), out)
    with open(os.path.join(out, "manifest.txt"), "a") as f:
        f.write("\n".join(lines) + "\n")
    return 0


def run(out, only):
    """Run the packed runs, 8 processes at a time (each its own context on
    the one GPU); failures are listed in manifest order."""
    out = os.path.abspath(out)
    todo, skipped = [], 0
    for line in open(os.path.join(out, "manifest.txt")):
        w = line.split()
        if not w or (only and w[1] not in only):
            continue
        if w[0] == "skip":
            skipped += 1
        else:
            todo.append(w)

    def one(w):
        name, entry, sub, rargs = w[1], w[2], w[3], w[4:]
        cmd = [os.path.join(out, "rlx_run_gpu"), "--so",
               os.path.join(out, "cases", name + ".so"), "--entry", entry]
        cmd += rargs + [os.path.join(out, "golden", name, sub)]
        p = subprocess.run(cmd, capture_output=True, text=True, timeout=300)
        if p.returncode == 0:
            return None
        msg = (p.stderr + p.stdout).strip().splitlines()
        return "%s %s: %s" % (name, entry, " | ".join(msg[:3]) or
                              "exit %d" % p.returncode)
    with concurrent.futures.ThreadPoolExecutor(8) as pool:
        failed = [f for f in pool.map(one, todo) if f]
    for f in failed:
        print("FAIL " + f)
    print("GPU e2e: %d passed, %d failed, %d skipped" %
          (len(todo) - len(failed), len(failed), skipped))
    return 1 if failed else 0


def main():
    a = sys.argv[1:]
    build = "build"
    if "--build" in a:
        i = a.index("--build")
        build = a[i + 1]
        a = a[:i] + a[i + 2:]
    every = 1
    if "--every" in a:
        i = a.index("--every")
        every = int(a[i + 1])
        a = a[:i] + a[i + 2:]
    first = 0
    if "--first" in a:
        i = a.index("--first")
        first = int(a[i + 1])
        a = a[:i] + a[i + 2:]
    if "--suite" in a:
        i = a.index("--suite")
        select_suite(a[i + 1])
        a = a[:i] + a[i + 2:]
    if "--arch" in a:
        i = a.index("--arch")
        ARCH.append("--gpu-arch=" + a[i + 1])
        a = a[:i] + a[i + 2:]
    if "--match" in a:
        global MATCH
        i = a.index("--match")
        MATCH = re.compile(a[i + 1])
        a = a[:i] + a[i + 2:]
    if a[:1] == ["check"]:
        return 1 if check(build, every=every, first=first)[0] else 0
    if a[:1] == ["pack"] and len(a) == 2:
        return pack(build, a[1])
    if a[:1] == ["bits"] and len(a) >= 3:
        return bits(build, a[1], a[2:])
    if a[:1] == ["run"] and len(a) >= 2:
        return run(a[1], a[2:])
    print(__doc__)
    return 2


if __name__ == "__main__":
    sys.exit(main())
