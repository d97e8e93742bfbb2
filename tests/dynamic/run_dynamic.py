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
--gpu compiles for --target=cuda and links dyn_run.c with -DRLX_GPU;
--no-run only builds: DIR/CASE then holds dyn_run and data.bin, to run
as `dyn_run data.bin` on a GPU host (scripts/test_gpu.sh dynamic).
--gpu-check: without a GPU (CI), compile every case with --target=cuda:
those of GPU_CASES must compile (rlxc verifies the PTX), every other
one must be refused with a diagnostic naming the op and --target=cuda
(a size without a bound too), and GRAPH_CASES compile with --cuda-graph too.
--gpu-pack: build GPU_CASES' drivers with --gpu --no-run into DIR, and
GRAPH_CASES' again with --cuda-graph into DIR/CASE-graph (every size a
recorded graph, replayed when it comes again). --cuda-graph adds the
flag to one case's build.
usage: run_dynamic.py --rlxc RLXC --build BUILD --work DIR [--cflags=F]
                      [--gpu [--gpu-arch=SM] [--cuda-graph]] [--no-run] CASE
       run_dynamic.py --rlxc RLXC --build BUILD --work DIR
                      --gpu-check|--gpu-pack"""
import argparse
import concurrent.futures
import glob
import os
import shutil
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
SRC = os.path.dirname(os.path.dirname(HERE))


def sh(cmd):
    r = subprocess.run(cmd, capture_output=True, text=True, timeout=300)
    sys.stdout.write(r.stdout + r.stderr)
    if r.returncode:
        sys.exit("FAIL: %s exited %d" % (" ".join(cmd), r.returncode))


def spec_of(src):
    spec = {}
    for line in open(src):
        if line.split(":")[0] in ("// RLXC", "// ENTRY", "// DRIVER",
                                  "// TOL", "// DEFINE", "// DATA"):
            k, v = line[3:].split(":", 1)
            spec[k] = v.split()
    return spec


# The cases --target=cuda compiles (docs/gpu.md, "Dynamic sizes"):
# elementwise groups, reductions, softmax, transposes, rope, cumsum and
# draws with dynamic sizes anywhere; row ops (norms, cross-entropy,
# topk) with static rows; products with a dynamic M, K or batch (on the
# tensor cores too: mmhalf, GPU only, the CPU refuses it; any sizes on
# CUDA cores); conv and pools over a dynamic batch, attention over a
# dynamic batch or length; gather, scatter, sample; control flow (its
# subgraphs' nodes by these rules, a dynamic scan length a run-time
# trip count). Sizes without a bound (the *u cases, unb64): the ops
# whose grids, loops and scratch follow the run-time sizes alone, the
# workspace laid out at each call (mlpu, trainu, unb64, cnnu, cnn64u,
# convbf16u, rngu, att64u, attf16u, gath64u, scan64u: a scan's length;
# ctlu, ctl64u, ctljvpu, scanb64u: control flow, its subgraphs'
# workspaces, carries and results laid out at each call too).
GPU_CASES = ["att64", "att64u", "attbf16", "attf16", "attf16u", "attgrad",
             "attnb", "bcast", "bwd64", "bwdops", "cnn", "cnn64", "cnn64u",
             "cnnu", "convbf16", "convbf16u", "convf16", "convgrad", "cplx",
             "cplxgrad", "cplxhvp", "cplxu", "ctl", "ctl64", "ctl64u",
             "ctljvp", "ctljvpu", "ctlu", "cum", "gath", "gath64", "gath64u",
             "gmm64", "gmm64u", "gpub", "heads", "lm64", "lm64u", "lmsolve",
             "lmsolveu", "mlp", "mlpu", "mmhalf", "moe", "moeu", "norm64",
             "norms", "pb64", "quant", "quant64", "quantgrad", "quantjvp",
             "quantseq", "quantu", "redhalf", "rng", "rngu", "scan64",
             "scan64u", "scanb64", "scanb64u", "seq", "seq64", "solve64",
             "ssm", "ssm64", "ssm64u", "ssmu", "tl64", "tlayer", "topk",
             "train", "train64", "trainu", "unb64"]

# Built again with --cuda-graph (a while loop refuses it: ctl*).
GRAPH_CASES = ["att64", "att64u", "attnb", "cnn", "cnn64", "cnnu", "gath",
               "gpub", "mlp", "mlpu", "mmhalf", "rng", "scan64", "tl64",
               "tlayer", "train", "train64", "unb64"]

REFUSED = ("is not supported by --target=cuda yet",)


def gpu_check(a):
    os.makedirs(a.work, exist_ok=True)
    names = sorted(f[:-4] for f in os.listdir(HERE) if f.endswith(".rlx"))
    runs = names + ["%s --cuda-graph" % c for c in GRAPH_CASES]

    def compile_one(k):
        c = runs[k]
        src = os.path.join(HERE, c.split()[0] + ".rlx")
        return subprocess.run([a.rlxc, src, "-o", os.path.join(
            a.work, "x%d.o" % k), "--target=cuda"] + c.split()[1:] +
                              spec_of(src).get("RLXC", []),
                              capture_output=True, text=True, timeout=300)
    bad = 0
    with concurrent.futures.ThreadPoolExecutor(os.cpu_count() or 1) as ex:
        for c, r in zip(runs, ex.map(compile_one, range(len(runs)))):
            err = r.stderr.strip().splitlines()
            if c.split()[0] in GPU_CASES:
                ok = r.returncode == 0
                what = "compiled" if ok else "FAIL (%s)" % (err[:1] or "?")
            else:
                ok = (r.returncode == 1 and err and
                      any(m in err[0] for m in REFUSED))
                what = "refused" if ok else (
                    "FAIL: want a refusal, got rc %d %s" % (r.returncode,
                                                             err[:1]))
            print("%-10s %s" % (c, what))
            bad += not ok
    unknown = [c for c in GPU_CASES + GRAPH_CASES if c not in GPU_CASES or
               c not in names]
    print("%d cases (%d with --cuda-graph), %d failures%s" % (
        len(names), len(GRAPH_CASES), bad + len(unknown),
                                       ", unknown: %s" % unknown if unknown
                                       else ""))
    return 1 if bad or unknown else 0


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--rlxc", required=True)
    ap.add_argument("--build", required=True)
    ap.add_argument("--work", required=True)
    ap.add_argument("--cflags", default="")
    ap.add_argument("--gpu", action="store_true")
    ap.add_argument("--gpu-arch", default="")
    ap.add_argument("--cuda-graph", action="store_true")
    ap.add_argument("--no-run", action="store_true")
    ap.add_argument("--gpu-check", action="store_true")
    ap.add_argument("--gpu-pack", action="store_true")
    ap.add_argument("case", nargs="?")
    a = ap.parse_args()
    if a.gpu_check:
        return gpu_check(a)
    if a.gpu_pack:
        a.gpu = a.no_run = True
        for graph, cases in ((False, GPU_CASES), (True, GRAPH_CASES)):
            for c in cases:
                a.case, a.cuda_graph = c, graph
                run(a)
        return 0
    run(a)


def run(a):
    rt = glob.glob(os.path.join(a.build, "runtime", "librlxrt.a"))
    if not rt:
        sys.exit("FAIL: librlxrt.a not found under %s/runtime" % a.build)
    work = os.path.join(a.work, a.case + ("-graph" if a.cuda_graph else ""))
    os.makedirs(work, exist_ok=True)
    src = os.path.join(HERE, a.case + ".rlx")
    spec = spec_of(src)
    obj = os.path.join(work, "model.o")
    gpu = ["--target=cuda"] if a.gpu else []
    if a.gpu and a.gpu_arch:
        gpu.append("--gpu-arch=" + a.gpu_arch)
    if a.gpu and a.cuda_graph:
        gpu.append("--cuda-graph")
    sh([a.rlxc, src, "--name=model", "-o", obj] + spec.get("RLXC", []) + gpu)
    exe = os.path.join(work, "dyn_run")
    cc = os.environ.get("CC", "cc").split()
    sh(cc + a.cflags.split() + [
        "-O1", "-std=c11", "-DENTRY=" + spec.get("ENTRY", ["model"])[0],
    ] + ["-DTOL=" + t for t in spec.get("TOL", [])] + [
        "-D" + d for d in spec.get("DEFINE", [])] + [
        "-I", work, "-I", os.path.join(SRC, "runtime"),
        os.path.join(HERE, spec.get("DRIVER", ["dyn_run.c"])[0]), obj, rt[0],
        "-o", exe, "-lm", "-lpthread"] + (["-DRLX_GPU", "-ldl"] if a.gpu
                                          else []))
    data = os.path.join(HERE, "data", spec.get("DATA", [a.case])[0] + ".bin")
    if a.no_run:
        if os.path.exists(data):
            shutil.copy(data, os.path.join(work, "data.bin"))
        return
    sh([exe] + ([data] if os.path.exists(data) else []))


if __name__ == "__main__":
    sys.exit(main())
