#!/usr/bin/env python3
"""Dynamic dimensions end to end (docs/dynamic-dims.md): compile CASE.rlx
once with rlxc, link dyn_run.c (which includes the generated header),
and run it over data/CASE.bin (NumPy goldens from gen_dynamic.py).
A case's first lines may give rlxc flags (`// RLXC: --grad`), the
entry to test (`// ENTRY: model_grad`), another driver (`// DRIVER:
dyn_fd.c`, which needs no data file), dyn_run.c's tolerance for
half-precision results (`// TOL: 2e-2`, both the relative and the
absolute term), macros for the driver (`// DEFINE: UNBOUNDED`) and
another case's data file (`// DATA: attf16`). Needs only python3 and a C compiler.
usage: run_dynamic.py --rlxc RLXC --build BUILD --work DIR [--cflags=F] CASE"""
import argparse
import glob
import os
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
SRC = os.path.dirname(os.path.dirname(HERE))


def sh(cmd):
    r = subprocess.run(cmd, capture_output=True, text=True, timeout=300)
    sys.stdout.write(r.stdout + r.stderr)
    if r.returncode:
        sys.exit("FAIL: %s exited %d" % (" ".join(cmd), r.returncode))


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--rlxc", required=True)
    ap.add_argument("--build", required=True)
    ap.add_argument("--work", required=True)
    ap.add_argument("--cflags", default="")
    ap.add_argument("case")
    a = ap.parse_args()
    rt = glob.glob(os.path.join(a.build, "runtime", "librlxrt.a"))
    if not rt:
        sys.exit("FAIL: librlxrt.a not found under %s/runtime" % a.build)
    work = os.path.join(a.work, a.case)
    os.makedirs(work, exist_ok=True)
    src = os.path.join(HERE, a.case + ".rlx")
    spec = {}
    for line in open(src):
        if line.split(":")[0] in ("// RLXC", "// ENTRY", "// DRIVER",
                                  "// TOL", "// DEFINE", "// DATA"):
            k, v = line[3:].split(":", 1)
            spec[k] = v.split()
    obj = os.path.join(work, "model.o")
    sh([a.rlxc, src, "--name=model", "-o", obj] + spec.get("RLXC", []))
    exe = os.path.join(work, "dyn_run")
    cc = os.environ.get("CC", "cc").split()
    sh(cc + a.cflags.split() + [
        "-O1", "-std=c11", "-DENTRY=" + spec.get("ENTRY", ["model"])[0],
    ] + ["-DTOL=" + t for t in spec.get("TOL", [])] + [
        "-D" + d for d in spec.get("DEFINE", [])] + [
        "-I", work, "-I", os.path.join(SRC, "runtime"),
        os.path.join(HERE, spec.get("DRIVER", ["dyn_run.c"])[0]), obj, rt[0],
        "-o", exe, "-lm", "-lpthread"])
    data = os.path.join(HERE, "data", spec.get("DATA", [a.case])[0] + ".bin")
    sh([exe] + ([data] if os.path.exists(data) else []))


if __name__ == "__main__":
    main()
