#!/usr/bin/env python3
"""gpu_ptx_check.py RLXC FILE.rlx [RLXC-ARGS...] -- FileCheck the PTX.

rlxc also gets the arguments of a `// RLXC-ARGS: ...` line of FILE.

Compiles FILE with `rlxc --target=cuda`, takes the PTX text embedded in
the host object (the NUL-terminated constant that starts with the
`//` header LLVM writes, up to its `.version` line and beyond) and
checks it with LLVM FileCheck against the CHECK lines of FILE. Exit 0
when FileCheck passes."""
import os
import shutil
import subprocess
import sys
import tempfile


def filecheck():
    for c in (os.environ.get("FILECHECK"), "FileCheck-19",
              "/usr/lib/llvm-19/bin/FileCheck", "FileCheck"):
        if c and (shutil.which(c) or os.path.exists(c)):
            return c
    sys.exit("gpu_ptx_check: no FileCheck (llvm-19-tools)")


def main():
    rlxc, src, extra = sys.argv[1], sys.argv[2], sys.argv[3:]
    for line in open(src):
        if line.startswith("// RLXC-ARGS:"):
            extra += line.split(":", 1)[1].split()
    with tempfile.TemporaryDirectory() as d:
        obj = os.path.join(d, "k.o")
        subprocess.run([rlxc, src, "--target=cuda", "-o", obj] + extra,
                       check=True)
        data = open(obj, "rb").read()
    at = data.find(b".version ")
    if at < 0:
        sys.exit("gpu_ptx_check: no PTX in the object")
    start = data.rfind(b"\0", 0, at) + 1
    ptx = data[start:data.index(b"\0", at)]
    p = subprocess.run([filecheck(), src], input=ptx)
    return p.returncode


if __name__ == "__main__":
    sys.exit(main())
