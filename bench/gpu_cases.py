"""gpu_cases.py -- what the GPU kernel benchmarks of many small graphs
share (bench_attention_gpu.py, bench_conv_gpu.py): compiling each case
here to a shared object, and their command line. No torch needed."""
import os
import subprocess
import sys


def build(rlxc, rt, out, graphs, arch=None):
    """graphs: [(name, .rlx text)] -> OUT/NAME.so (--target=cuda, with
    --gpu-arch=ARCH when given), linked with the runtime RT."""
    os.makedirs(out, exist_ok=True)
    for name, text in graphs:
        src = os.path.join(out, name + ".rlx")
        open(src, "w").write(text)
        obj = os.path.join(out, name + ".o")
        subprocess.run([rlxc, src, "--target=cuda", "-o", obj] +
                       (["--gpu-arch=" + arch] if arch else []), check=True)
        subprocess.run(["cc", "-shared", "-o", os.path.join(out, name + ".so"),
                        obj, rt, "-lm", "-lpthread", "-ldl"], check=True)
        for ext in (".o", ".h", ".rlx"):
            p = os.path.join(out, name + ext)
            if os.path.exists(p):
                os.remove(p)


def main(doc, graphs, run):
    """build RLXC LIBRLXRT OUT [SM] | run OUT [ROUNDS [REGEX]]."""
    a = sys.argv[1:]
    if len(a) in (4, 5) and a[0] == "build":
        build(a[1], a[2], a[3], graphs(), *a[4:])
        return 0
    if len(a) in (2, 3, 4) and a[0] == "run":
        return run(a[1], int(a[2]) if len(a) >= 3 else 5, *a[3:])
    sys.exit(doc)
