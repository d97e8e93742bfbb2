#!/usr/bin/env python3
"""checkpoint_memory.py -- scan checkpoints really save memory.

Compiles the gradient of a 64-step scan (carry f32[256]) with
checkpoints=0 and checkpoints=4/8 and reads ENTRY_grad_WORKSPACE_BYTES
from the generated headers. The saved trajectory needs 64 carries
(64 KiB); with K checkpoints reverse mode keeps K carries plus O(log L)
bisection midpoints, so the checkpointed workspaces must be far smaller
(below a quarter of the plain one, and below 32 carries in all).
Usage: checkpoint_memory.py RLXC
"""
import os
import re
import subprocess
import sys
import tempfile

SRC = """graph cell {{
  input %h: f32[256]
  input %x: f32[256]
  %n = tanh(add(mul(%h, 0.5), %x))
  return %n
}}
graph ck {{
  param %h0: f32[256]
  input %xs: f32[64, 256]
  %hT = scan(%h0, %xs, body=@cell, checkpoints={k})
  %loss = reduce_sum(%hT)
  return %loss
}}
"""


def workspace(rlxc, tmp, k):
    path = os.path.join(tmp, "ck%d.rlx" % k)
    open(path, "w").write(SRC.format(k=k))
    out = os.path.join(tmp, "ck%d.h" % k)
    subprocess.run([rlxc, path, "--grad", "--emit=header", "-o", out],
                   check=True)
    m = re.search(r"ck_grad_WORKSPACE_BYTES (\d+)", open(out).read())
    return int(m.group(1))


def main():
    rlxc = sys.argv[1]
    with tempfile.TemporaryDirectory(prefix="rlx-ck-") as tmp:
        full = workspace(rlxc, tmp, 0)
        ok = True
        for k in (4, 8):
            w = workspace(rlxc, tmp, k)
            good = w * 4 < full and w < 32 * 1024
            print("%s checkpoints=%d: %d bytes (plain trajectory: %d)" %
                  ("PASS" if good else "FAIL", k, w, full))
            ok = ok and good
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
