#!/usr/bin/env python3
"""run_train.py -- the training-step suite (rlxc --train).

  run_train.py --rlxc RLXC --driver TRAIN_RUN --work DIR CASE...
      per case (tests/train/cases/CASE.rlx, golden/CASE/case.txt from
      gen_train.py): rlxc --train=OPT (cases with weight decay also
      --grad, so both entries are built into one object), the header's
      mlp_train_STATE_BYTES against case.txt, cc -shared, then
      train_run (goldens at 1 thread, bit-identical at 2 threads); and
      --emit=plan: every param and state update is stored in place.
      Each case is also compiled with --target=cuda (and --cuda-graph):
      the header's STATE_BYTES and stream argument are checked.
  run_train.py --rlxc RLXC --driver TRAIN_RUN --work DIR --gpu-pack OUT
               CASE...
      compile each case with --target=cuda, with and without
      --cuda-graph, link it into OUT with its goldens, train_run and
      this script: a folder to carry to a GPU host without LLVM.
  run_train.py --gpu-run OUT
      on the GPU host: `train_run --gpu` on every packed object (the
      goldens after every step, in-place updates read back from device
      memory, two runs bit-identical).
  run_train.py --rlxc RLXC --work DIR --diagnostics
      the errors of --train: no param, a loss of more than one element,
      params of two dtypes, an unknown optimizer, --wrt with --train.
  run_train.py --rlxc RLXC --driver TRAIN_EXACT --work DIR --exact OPT
      tests/train/exact/lin.rlx with --train=OPT against train_exact's
      C reference, bitwise (every param and state piece after every
      step); and --emit=plan: the state updates are side outputs of the
      param updates' loops (fuse.c), so the test covers them.
Only the Python standard library is used.
"""
import argparse
import os
import re
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))


def sh(cmd, cwd=None):
    p = subprocess.run(cmd, cwd=cwd, stdout=subprocess.PIPE,
                       stderr=subprocess.STDOUT, timeout=300)
    return p.returncode, p.stdout.decode("utf-8", "replace")


def case_info(name):
    info = {}
    with open(os.path.join(HERE, "golden", name, "case.txt")) as f:
        for line in f:
            if line.startswith("#") or not line.strip():
                continue
            k, v = line.split(None, 1)
            info[k] = v.strip()
    return info


def run_case(a, name):
    info = case_info(name)
    work = os.path.join(a.work, name)
    os.makedirs(work, exist_ok=True)
    obj = os.path.join(work, "mlp.o")
    args = [a.rlxc, os.path.join(HERE, "cases", name + ".rlx"),
            "--train=" + info["optimizer"], "-o", obj]
    if "_wd_" in name:
        args.append("--grad")
    rc, out = sh(args)
    if rc:
        return "rlxc failed: " + out
    with open(os.path.join(work, "mlp.h")) as f:
        hdr = f.read()
    m = re.search(r"#define mlp_train_STATE_BYTES (\d+)", hdr)
    if not m or m.group(1) != info["state_bytes"]:
        return "header: mlp_train_STATE_BYTES %s, expected %s" % (
            m and m.group(1), info["state_bytes"])
    if ("mlp_grad(" in hdr) != ("_wd_" in name):
        return "header: mlp_grad present iff --grad was given"
    so = os.path.join(work, "mlp.so")
    rc, out = sh([os.environ.get("CC", "cc"), "-shared", obj, "-o", so])
    if rc:
        return "cc failed: " + out
    rc, out = sh([a.driver, so, "mlp_train", os.path.join(HERE, "golden",
                                                          name)])
    if rc:
        return "train_run: " + out
    rc, out = sh(args[:2] + ["--train=" + info["optimizer"], "--emit=plan",
                             "-o", os.path.join(work, "mlp.plan")])
    if rc:
        return "rlxc --emit=plan failed: " + out
    with open(os.path.join(work, "mlp.plan")) as f:
        plan = ("\n" + f.read()).split("\nplan ")
    train = [p for p in plan if "(graph mlp_train)" in p.split("\n", 1)[0]]
    nst = {"sgd": 0, "momentum": 4, "adamw": 9}[info["optimizer"]]
    n = train[0].count("(in place)") if train else -1
    if n != 4 + nst:
        return "plan: %d values stored in place, expected %d" % (n, 4 + nst)
    for extra in ([], ["--cuda-graph"]):
        why, _ = compile_gpu(a, name, work, extra)
        if why:
            return why
    return None


def compile_gpu(a, name, work, extra):
    """--target=cuda object of case `name` (and the header checked):
    (error or None, object path)."""
    info = case_info(name)
    tag = "mlp_gpu" + ("_graph" if extra else "")
    obj = os.path.join(work, tag + ".o")
    rc, out = sh([a.rlxc, os.path.join(HERE, "cases", name + ".rlx"),
                  "--train=" + info["optimizer"], "--target=cuda",
                  "--name=mlp", "-o", obj] + extra)
    if rc:
        return "rlxc --target=cuda %s failed: %s" % (" ".join(extra), out), obj
    with open(os.path.join(work, tag + ".h")) as f:
        hdr = f.read()
    m = re.search(r"#define mlp_train_STATE_BYTES (\d+)", hdr)
    if not m or m.group(1) != info["state_bytes"]:
        return "cuda header: mlp_train_STATE_BYTES %s" % (m and m.group(1)), obj
    if not re.search(r"int mlp_train\([^)]*void \*stream\);", hdr):
        return "cuda header: no stream argument in mlp_train", obj
    return None, obj


def gpu_pack(a, out, cases):
    import shutil
    os.makedirs(out, exist_ok=True)
    shutil.copy(os.path.abspath(__file__), out)
    shutil.copy(a.driver, out)
    bad = 0
    with open(os.path.join(out, "manifest.txt"), "w") as man:
        for name in cases:
            work = os.path.join(a.work, name)
            os.makedirs(work, exist_ok=True)
            shutil.copytree(os.path.join(HERE, "golden", name),
                            os.path.join(out, name), dirs_exist_ok=True)
            for extra in ([], ["--cuda-graph"]):
                why, obj = compile_gpu(a, name, work, extra)
                so = "%s%s.so" % (name, "_graph" if extra else "")
                if not why:
                    rc, msg = sh([os.environ.get("CC", "cc"), "-shared", obj,
                                  "-o", os.path.join(out, so)])
                    why = msg if rc else None
                if why:
                    print("FAIL pack %s: %s" % (so, why))
                    bad += 1
                else:
                    man.write("%s %s\n" % (so, name))
    return bad


def gpu_run(out):
    bad = n = 0
    with open(os.path.join(out, "manifest.txt")) as man:
        for line in man:
            so, name = line.split()
            rc, msg = sh([os.path.join(out, "train_run"), "--gpu",
                          os.path.join(out, so), "mlp_train",
                          os.path.join(out, name)])
            n += 1
            bad += rc != 0
            print("%s %s%s" % ("FAIL" if rc else "PASS", so,
                               ":\n" + msg if rc else ""))
    print("%d of %d passed" % (n - bad, n))
    return bad


MLP = """graph g {
  input %x: f32[4, 3]
  param %w: f32[3, 2]
  %l = reduce_sum(matmul(%x, %w))
  return %l
}
"""

DIAGS = [
    ("no_param", """graph g {
  input %x: f32[4]
  %l = reduce_sum(mul(%x, %x))
  return %l
}
""", ["--train=sgd"], 1, r"--train: graph 'g' has no param to train"),
    ("vector_loss", """graph g {
  input %x: f32[4, 3]
  param %w: f32[3, 2]
  %y = matmul(%x, %w)
  return %y
}
""", ["--train=adamw"], 1, r"the loss\) must be a real floating-point value "
     r"of one element \(it is f32 with 8 elements\)"),
    ("mixed_dtypes", """graph g {
  input %x: f32[3]
  param %w: f32[3]
  param %v: f64[3]
  %l = add(reduce_sum(mul(%x, %w)), cast(reduce_sum(%v), to=f32))
  return %l
}
""", ["--train=momentum"], 1, r"param '%v' is f64 but '%w' is f32"),
    ("unknown_optimizer", MLP, ["--train=adam"], 2,
     r"--train: unknown optimizer 'adam' \(expected sgd, momentum or "
     r"adamw\)"),
    ("with_wrt", MLP, ["--train=sgd", "--wrt=%w"], 2,
     r"--train updates every param; it cannot be combined with --wrt"),
    ("ok", MLP, ["--train=sgd", "--check", "--dump-ir=train"], 0,
     r"graph g_train \{\n  input %x: f32\[4, 3\]\n  param %w: f32\[3, 2\]\n"
     r"  input %lr: f32\[\]\n  input %weight_decay: f32\[\]"),
]


def diagnostics(a):
    os.makedirs(a.work, exist_ok=True)
    bad = 0
    for name, src, args, want_rc, pattern in DIAGS:
        path = os.path.join(a.work, "diag_%s.rlx" % name)
        with open(path, "w") as f:
            f.write(src)
        rc, out = sh([a.rlxc, path, "--check"] + args)
        if rc != want_rc or not re.search(pattern, out):
            print("FAIL diag %s: exit %d (want %d), output:\n%s" % (
                name, rc, want_rc, out))
            bad += 1
        else:
            print("PASS diag", name)
    return bad


# "(in place) stored by" lines of lin_train's plan: the state updates
# (AdamW: m and v of w and b, and step stored by its cast to f64).
EXACT_SIDES = {"sgd": 0, "momentum": 2, "adamw": 5}


def exact(a, opt):
    work = os.path.join(a.work, "exact_" + opt)
    os.makedirs(work, exist_ok=True)
    src = os.path.join(HERE, "exact", "lin.rlx")
    obj, so = os.path.join(work, "lin.o"), os.path.join(work, "lin.so")
    rc, out = sh([a.rlxc, src, "--train=" + opt, "-o", obj])
    if rc:
        return "rlxc failed: " + out
    rc, out = sh([os.environ.get("CC", "cc"), "-shared", obj, "-o", so])
    if rc:
        return "cc failed: " + out
    rc, out = sh([a.driver, so, "lin_train", opt])
    if rc:
        return "train_exact: " + out
    plan = os.path.join(work, "lin.plan")
    rc, out = sh([a.rlxc, src, "--train=" + opt, "--emit=plan", "-o", plan])
    if rc:
        return "rlxc --emit=plan failed: " + out
    with open(plan) as f:
        text = ("\n" + f.read()).split("\nplan ")
    train = [t for t in text if "(graph lin_train)" in t.split("\n", 1)[0]]
    n = train[0].count("(in place) stored by") if train else -1
    if n != EXACT_SIDES[opt]:
        return "plan: %d side outputs stored in place, expected %d" % (
            n, EXACT_SIDES[opt])
    return None


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--rlxc", help="needed except with --gpu-run")
    p.add_argument("--driver")
    p.add_argument("--work")
    p.add_argument("--diagnostics", action="store_true")
    p.add_argument("--exact", metavar="OPT", choices=sorted(EXACT_SIDES))
    p.add_argument("--gpu-pack", metavar="OUT")
    p.add_argument("--gpu-run", metavar="OUT")
    p.add_argument("--dir", help="cases/ and golden/ elsewhere (default: "
                   "tests/train)")
    p.add_argument("cases", nargs="*")
    a = p.parse_args()
    global HERE
    HERE = a.dir or HERE
    if a.gpu_run:
        return 1 if gpu_run(a.gpu_run) else 0
    if not a.rlxc:
        p.error("--rlxc is required")
    if a.gpu_pack:
        return 1 if gpu_pack(a, a.gpu_pack, a.cases) else 0
    bad = diagnostics(a) if a.diagnostics else 0
    if a.exact:
        why = exact(a, a.exact)
        print("%s exact_%s%s" % ("FAIL" if why else "PASS", a.exact,
                                 ": " + why if why else ""))
        bad += why is not None
    for name in a.cases:
        why = run_case(a, name)
        print("%s %s%s" % ("FAIL" if why else "PASS", name,
                           ": " + why if why else ""))
        bad += why is not None
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
