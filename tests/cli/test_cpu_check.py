#!/usr/bin/env python3
"""test_cpu_check.py: an object needs the CPU it was compiled for, and
says so instead of crashing (RLX_ERR_CPU, docs/abi.md).

One small graph is compiled with --mcpu=x86-64-v4 (AVX-512), x86-64-v3
(AVX2 + FMA), x86-64 (baseline) and for the host, linked with a driver
that prints rlx_cpu_supports(E_CPU_FEATURES) and the entry's return
code and result, and run natively and under qemu-x86_64 emulating CPUs
without AVX-512 (-cpu max: AVX2, no AVX-512) and without AVX (-cpu
Nehalem). Each run must either compute the right values or return
RLX_ERR_CPU on both calls with one stderr line naming the first missing
extension -- never SIGILL.  Also checks the header's macros and
rlx_cpu_supports on an unknown name.  Skipped (77) without qemu-x86_64
or off x86-64.
Usage: test_cpu_check.py --rlxc BUILD/rlxc --runtime librlxrt.a --root SRC
"""
import argparse
import math
import os
import platform
import re
import shutil
import subprocess
import sys
import tempfile

GRAPH = """graph m {
  input %x: f32[4, 8]
  %y = tanh(mul(%x, %x))
  return %y
}
"""

DRIVER = r"""
#include <stdio.h>
#include HDR
int main(void) {
  float x[32], y[32] = {0};
  for (int i = 0; i < 32; i++) x[i] = (float)i / 16.0f;
  const void *in[] = {x};
  void *out[] = {y};
  char miss[64];
  int ok = rlx_cpu_supports(m_CPU_FEATURES, miss, sizeof miss);
  char miss2[64];
  int unk = rlx_cpu_supports("sse2x,avx", miss2, sizeof miss2);
  int r1 = m(in, out, NULL), r2 = m(in, out, NULL);
  printf("%d %s %d %s %d %d", ok, ok ? "-" : miss, unk, miss2, r1, r2);
  for (int i = 0; i < 32; i++) printf(" %.9g", y[i]);
  printf("\n");
  return 0;
}
"""

failures = []


def check(cond, what):
    if not cond:
        failures.append(what)
        print("FAIL " + what)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--rlxc", required=True)
    ap.add_argument("--runtime", required=True)
    ap.add_argument("--root", required=True)
    a = ap.parse_args()
    qemu = shutil.which("qemu-x86_64")
    if platform.machine() != "x86_64" or not qemu:
        print("skip: needs x86-64 and qemu-x86_64 (Debian qemu-user)")
        return 77
    cc = os.environ.get("CC", "cc")
    with tempfile.TemporaryDirectory() as tmp:
        src = os.path.join(tmp, "m.rlx")
        with open(src, "w") as f:
            f.write(GRAPH)
        with open(os.path.join(tmp, "drv.c"), "w") as f:
            f.write(DRIVER)
        builds = {}
        for name, mcpu in [("v4", "x86-64-v4"), ("v3", "x86-64-v3"),
                           ("v1", "x86-64"), ("host", None)]:
            args = [a.rlxc, src, "-o", os.path.join(tmp, name + ".o")]
            if mcpu:
                args.append("--mcpu=" + mcpu)
            subprocess.run(args, check=True)
            hdr = open(os.path.join(tmp, name + ".h")).read()
            feats = re.search(r'#define m_CPU_FEATURES "([^"]*)"', hdr)
            check(feats and re.search(r'#define m_TARGET_CPU "', hdr),
                  f"{name}: header macros")
            exe = os.path.join(tmp, "d_" + name)
            subprocess.run([cc, "-O1", f'-DHDR="{name}.h"', "-I",
                            os.path.join(a.root, "runtime"), "-I", tmp,
                            os.path.join(tmp, "drv.c"),
                            os.path.join(tmp, name + ".o"), a.runtime,
                            "-lm", "-lpthread", "-o", exe], check=True)
            builds[name] = (exe, feats.group(1).split(",") if feats else [])
        check(builds["v1"][1] == [""], "x86-64: no extensions needed")
        check("avx2" in builds["v3"][1] and "avx512f" not in builds["v3"][1],
              "x86-64-v3 needs avx2, not avx512f")
        check("avx512f" in builds["v4"][1], "x86-64-v4 needs avx512f")
        want = [math.tanh((i / 16) ** 2) for i in range(32)]
        runs = [("native", [])]
        runs += [(f"qemu -cpu {c}", [qemu, "-cpu", c])
                 for c in ("max", "Nehalem")]
        for how, pre in runs:
            for name, (exe, feats) in builds.items():
                p = subprocess.run(pre + [exe], capture_output=True,
                                   text=True, timeout=120)
                what = f"{name} {how}"
                if p.returncode != 0:
                    check(False, f"{what}: exit {p.returncode} {p.stderr}")
                    continue
                f = p.stdout.split()
                ok, miss, unk, miss2 = int(f[0]), f[1], int(f[2]), f[3]
                r1, r2 = int(f[4]), int(f[5])
                y = [float(v) for v in f[6:]]
                check(unk == 0 and miss2 == "sse2x",
                      f"{what}: unknown name counts as missing")
                if ok:
                    check(r1 == 0 and r2 == 0, f"{what}: rc {r1} {r2}")
                    check(all(abs(g - w) <= 1e-4 * abs(w) + 1e-5
                              for g, w in zip(y, want)), f"{what}: values")
                    check(p.stderr == "", f"{what}: stderr {p.stderr!r}")
                else:
                    check(r1 == 7 and r2 == 7, f"{what}: RLX_ERR_CPU, got "
                          f"{r1} {r2}")
                    check(miss in feats, f"{what}: missing '{miss}'")
                    lines = p.stderr.splitlines()
                    check(len(lines) == 1 and f"lacks '{miss}'" in lines[0]
                          and "rlxrt: m:" in lines[0],
                          f"{what}: one message naming '{miss}': "
                          f"{p.stderr!r}")
                print(f"{what}: supports={ok} missing={miss} rc={r1}")
        # The emulated CPUs: AVX2 but no AVX-512, and no AVX at all.
        out = {h: subprocess.run(pre + [builds["v3"][0]], capture_output=True,
                                 text=True).stdout.split()[0]
               for h, pre in runs[1:]}
        check(out == {"qemu -cpu max": "1", "qemu -cpu Nehalem": "0"},
              f"x86-64-v3 runs on qemu max only: {out}")
        v4 = subprocess.run([qemu, "-cpu", "max", builds["v4"][0]],
                            capture_output=True, text=True).stdout.split()
        check(v4[0] == "0" and v4[1] == "avx512f",
              f"x86-64-v4 under qemu max lacks avx512f: {v4[:2]}")
    print("FAILED: %d" % len(failures) if failures else "all passed")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
