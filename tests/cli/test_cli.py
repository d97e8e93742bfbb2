#!/usr/bin/env python3
"""rlxc command-line tests (abi.md §1): help, version, --list-ops,
exit statuses (0 ok, 1 input errors, 2 bad command line), --emit=ir to a
file, --dump-ir, --name/--entry checks (reserved names), atomic output
files (a failing run leaves no new file: directory targets, write errors
through RLIMIT_FSIZE, /dev/full and a full tmpfs when mounting is
permitted, unwritable directories when not root), outputs that would
share a path, CR / CRLF / BOM sources, and docs/ops.md == --list-ops=md.
Every case runs; the report lists all failures."""
import argparse
import os
import re
import resource
import shutil
import signal
import stat
import subprocess
import sys
import tempfile

FAILS = []

GOOD = """graph sq {
  input %x: f32[4]
  %y = mul(%x, %x)
  return %y
}

graph model {
  input %x: f32[4]
  param %w: f32[4]
  %s = custom_fn(%x, fwd=@sq)
  %y = add(%s, %w)
  return %y
}
"""


def run(rlxc, args, stdin=None, fsize=None):
    def limit():  # write(2) past fsize bytes fails with EFBIG
        signal.signal(signal.SIGXFSZ, signal.SIG_IGN)
        resource.setrlimit(resource.RLIMIT_FSIZE, (fsize, fsize))
    p = subprocess.run([rlxc] + args, input=stdin, stdout=subprocess.PIPE,
                       stderr=subprocess.PIPE, timeout=60,
                       preexec_fn=limit if fsize is not None else None)
    return (p.returncode, p.stdout.decode("utf-8", "replace"),
            p.stderr.decode("utf-8", "replace"))


def expect(name, cond, detail=""):
    if not cond:
        FAILS.append("%s %s" % (name, detail))


def case_status(rlxc, name, args, want, err_has=None):
    rc, out, err = run(rlxc, args)
    expect(name, rc == want, "exit %d, expected %d; stderr: %s"
           % (rc, want, err))
    if err_has:
        expect(name, err_has in err, "stderr lacks %r: %s" % (err_has, err))


def test_info(rlxc):
    rc, out, err = run(rlxc, ["--help"])
    expect("help", rc == 0 and "usage: rlxc" in out and "--emit" in out)
    rc, out, _ = run(rlxc, ["-h"])
    expect("-h", rc == 0 and "usage: rlxc" in out)
    rc, out, _ = run(rlxc, ["--version"])
    expect("version", rc == 0 and out == "rlxc 0.1.0\n", repr(out))
    rc, out, _ = run(rlxc, ["--list-ops"])
    rows = [ln.split() for ln in out.splitlines()]
    ops = [r[0] for r in rows]
    expect("list-ops-columns", all(len(r) == 4 for r in rows) and
           ["matmul", "compiles", "reverse", "forward"] in rows, out)
    expect("list-ops", rc == 0 and "matmul" in ops and "scan" in ops
           and "input" not in ops and "const" not in ops
           and len(ops) == len(set(ops)) and len(ops) > 80)


def test_bad_command_lines(rlxc, good):
    cases = [
        ("no-input", [], "no input file"),
        ("two-inputs", [good, good], "more than one input"),
        ("unknown-option", ["--frobnicate", good], "unknown option"),
        ("bad-emit", ["--emit=exe", good], "unknown kind"),
        ("empty-emit", ["--emit=", good], "--emit"),
        ("bad-O", ["-O7", good], "unknown option"),
        ("bad-dump", ["--dump-ir=nosuchpass", good], "valid: all"),
        ("bad-grad-missing", ["--grad-missing=maybe", good], "expected"),
        ("name-main", ["--name=main", good], "reserved"),
        ("name-underscore", ["--name=_model", good], "reserved"),
        ("name-rlx", ["--name=rlx_model", good], "runtime"),
        ("name-derived", ["--name=rlx", good], "'rlx_signature' is reserved"),
        ("emit-trailing-comma", ["--emit=obj,", good], "empty item"),
        ("emit-empty-item", ["--emit=obj,,header", good], "empty item"),
        ("emit-leading-comma", ["--emit=,obj", good], "empty item"),
        ("wrt-trailing-comma", ["--wrt=%w,", good], "empty item"),
        ("jvp-empty-item", ["--jvp=%x,,%w", good], "empty item"),
        ("name-keyword", ["--name=int", good], "keyword"),
        ("name-invalid", ["--name=a-b", good], "C identifier"),
        ("name-digit", ["--name=9a", good], "digit"),
        ("o-missing", [good, "-o"], "-o needs a path"),
        ("wrt-empty", ["--wrt=", good], "--wrt"),
        ("list-ops-fmt", ["--list-ops=xml"], "unknown option"),
        ("color-value", ["-fdiagnostics-color=maybe", good], "expected auto"),
    ]
    for sym in ["getenv", "sysconf", "pthread_create", "aligned_alloc",
                "printf", "expf", "memcpy", "malloc", "mmap", "dlopen",
                "open", "write", "sched_yield", "posix_memalign",
                "atomic_flag_clear", "tanhf", "erff", "powl"]:
        case_status(rlxc, "bad-cli.name-" + sym, ["--name=" + sym, good], 2,
                    "'%s' is reserved" % sym)
    for name, args, msg in cases:
        case_status(rlxc, "bad-cli." + name, args, 2, msg)


def test_dot(rlxc, tmp, good):
    """--emit=dot: a digraph with one cluster per graph, the gradient
    graph marked, fused groups as clusters, balanced braces."""
    mlp = os.path.join(tmp, "mlp.rlx")
    open(mlp, "w").write(
        "graph mlp {\n  input %x: f32[4, 3]\n  param %w: f32[3, 2]\n"
        "  %h = relu(add(matmul(%x, %w), 1.0))\n"
        "  %l = reduce_sum(mul(%h, %h))\n  return %l\n}\n")
    dot = os.path.join(tmp, "mlp.dot")
    rc, out, err = run(rlxc, ["--emit=dot", "--grad", mlp, "-o", dot])
    text = open(dot).read() if os.path.exists(dot) else ""
    expect("dot", rc == 0 and out == "" and text.startswith("//") and
           "digraph \"mlp\" {" in text and
           "graph mlp_grad (gradient)" in text and
           'label="fused"' in text and "%w (param)" in text and
           text.count("{") == text.count("}"), err + text[:400])
    rc, out, err = run(rlxc, ["--emit=dot", good])
    expect("dot-stdout", rc == 0 and "digraph" in out, err)


def test_plan(rlxc, tmp):
    """--emit=plan: per graph function its workspace, each value's
    storage and the fused groups; to -o PATH when alone."""
    mlp = os.path.join(tmp, "mlp_plan.rlx")
    open(mlp, "w").write(
        "graph mlp {\n  input %x: f32[4, 3]\n  param %w: f32[3, 2]\n"
        "  %h = relu(add(matmul(%x, %w), 1.0))\n"
        "  %l = reduce_sum(mul(%h, %h))\n  return %l, %h\n}\n")
    rc, out, err = run(rlxc, ["--emit=plan", "--grad", mlp])
    expect("plan", rc == 0 and out.startswith("plan rlx.graph.mlp.") and
           "(graph mlp_grad)" in out and "workspace" in out and
           "%x = input  inputs[0]" in out and "%w = param  inputs[1]" in out
           and " group: " in out and "fused into %h" in out and
           "%l = reduce_sum  outputs[0]" in out and "ws [" in out, err + out)
    path = os.path.join(tmp, "mlp.plan")
    rc, out, err = run(rlxc, ["--emit=plan", mlp, "-o", path])
    text = open(path).read() if os.path.exists(path) else ""
    expect("plan-file", rc == 0 and out == "" and
           text.startswith("plan rlx.graph.mlp."), err + text[:400])


def test_color(rlxc, tmp):
    """-fdiagnostics-color: escapes only when asked (stderr is a pipe
    here, so auto means off)."""
    bad = os.path.join(tmp, "bad.rlx")
    open(bad, "w").write("graph g {\n  input %x: f33[2]\n  return %x\n}\n")
    for mode, want in (("always", True), ("never", False), ("auto", False)):
        rc, _, err = run(rlxc, ["--check", "-fdiagnostics-color=" + mode,
                                bad])
        expect("color." + mode, rc == 1 and ("\033[01;31merror" in err)
               == want and "did you mean 'f32'" in err, repr(err))


def test_targets(rlxc, tmp, good):
    """--mattr and foreign triples: objects or diagnostics, never a
    signal; -avx512f really removes 512-bit registers; --mcpu decides
    the exp's FMA and the vector loops' width."""
    o = os.path.join(tmp, "t.o")
    s = os.path.join(tmp, "t.s")
    case_status(rlxc, "mattr.ok", ["--mattr=+avx2,-avx512f", good, "-o", o],
                0)
    case_status(rlxc, "mattr.unknown", ["--mattr=+nosuch", good, "-o", o],
                1, "unknown feature")
    case_status(rlxc, "mattr.unsigned", ["--mattr=avx2", good, "-o", o], 1,
                "'+feature' or '-feature'")
    case_status(rlxc, "mattr.empty", ["--mattr=", good], 2, "--mattr")
    rc, _, err = run(rlxc, ["--mattr=-avx512f", "--emit=asm", good, "-o",
                            s])
    expect("mattr.no-zmm", rc == 0 and "zmm" not in open(s).read(), err)
    # the f32 exp's multiply-adds are fused only where the CPU has FMA;
    # explicit vector loops of f32 are two zmm wide on AVX-512 also when
    # the CPU is named (activation_backward: <32 x float> a step)
    act = os.path.join(tmp, "act.rlx")
    open(act, "w").write("graph act { input %x: f32[8192]\n"
                         "  param %w: f32[8192]\n"
                         "  %y = reduce_sum(sigmoid(mul(%x, %w)))\n"
                         "  return %y }\n")
    ll = os.path.join(tmp, "act.ll")
    for cpu, fma, zmm in [("x86-64-v2", False, False),
                          ("x86-64-v3", True, False),
                          ("x86-64-v4", True, True)]:
        rc, _, err = run(rlxc, ["--target=x86_64-linux-gnu", "--mcpu=" + cpu,
                                "--grad", "--emit=llvm", act, "-o", ll])
        text = open(ll).read() if rc == 0 else ""
        expect("exp-fma." + cpu, rc == 0 and ("llvm.fma" in text) == fma,
               err)
        expect("lanes." + cpu, rc == 0 and ("<32 x float>" in text) == zmm,
               err)
    for triple in ["riscv64-linux-gnu", "aarch64-linux-gnu"]:
        case_status(rlxc, "target." + triple, ["--target=" + triple, good,
                                               "-o", o], 0)
    case_status(rlxc, "target.unknown", ["--target=nosuch-arch-x", good,
                                         "-o", o], 1, "unknown target")


def test_cuda_mm(rlxc, tmp, good):
    """RLX_CUDA_MM (docs/gpu.md): tile choices accepted, bad ones a
    command-line error (exit 2) naming the variable and the value."""
    o = os.path.join(tmp, "mm.o")
    cases = [("ok.tiles", "128x128x32s4w4b2,f32r8b2", 0),
             ("ok.wg", "wg128x256s4p,nowg", 0), ("ok.wg3", "wg64x128s3", 0),
             ("bad.wg-b", "wg128x256s4b2", 2),
             ("bad.wg-smem", "wg128x256s5p", 2),
             ("bad.wg-p2", "wg128x128s2p", 2),
             ("bad.warps", "128x128x32s4w3", 2), ("bad.r", "f32r3", 2),
             ("bad.word", "fast", 2)]
    saved = os.environ.get("RLX_CUDA_MM")
    try:
        for name, v, want in cases:
            os.environ["RLX_CUDA_MM"] = v
            case_status(rlxc, "cuda-mm." + name,
                        ["--target=cuda", good, "-o", o], want,
                        "RLX_CUDA_MM" if want else None)
            if want:
                rc, _, err = run(rlxc, ["--target=cuda", good, "-o", o])
                expect("cuda-mm.%s.value" % name, "'%s'" % v in err, err)
    finally:
        if saved is None:
            os.environ.pop("RLX_CUDA_MM", None)
        else:
            os.environ["RLX_CUDA_MM"] = saved


def test_gpu_params(rlxc, tmp):
    """--target=cuda: a kernel takes only the pointers it uses (8 bytes
    each), not its entry's whole argument and result arrays, so a graph
    of thousands of arguments stays within PTX ISA 7.8's 4 KiB of kernel
    parameters: add(a0, a1) takes a0, a1 and its output."""
    s = os.path.join(tmp, "p.s")
    for n in (10, 4100):
        g = os.path.join(tmp, "args%d.rlx" % n)
        with open(g, "w") as f:
            f.write("graph args {\n%s  %%s = add(%%a0, %%a1)\n"
                    "  return %%s\n}\n" % "".join(
                        "  input %%a%d: f32[2]\n" % i for i in range(n)))
        rc, _, err = run(rlxc, ["--target=cuda", "--emit=asm", g, "-o", s])
        asm = open(s).read() if rc == 0 else ""
        expect("gpu.params%d" % n, rc == 0 and ".version 7.8" in asm and
               "rlx_k0_add_param_2\\n)" in asm, err)


FFT_GRAPH = """graph ffts {
  input %x: c64[2, 8]
  input %z: c64[1, 131072]
  %a = fft(%x)
  %b = fft(%x, inverse=true)
  %c = fft(%x, norm=ortho)
  %d = fft(%z)
  return %a, %b, %c, %d
}
"""


def test_fft_tables(rlxc, tmp):
    """fft's tables (codegen/emit/fft.c): one constant per (n,
    direction), shared by the calls; none above RLX_FFT_TABLES_MAX or for
    a target of the other byte order (the call computes them)."""
    src = os.path.join(tmp, "ffts.rlx")
    ll = os.path.join(tmp, "ffts.ll")
    open(src, "w").write(FFT_GRAPH)
    for triple, want in [("x86_64-linux-gnu", [8, 8, 8, 0]),
                         ("powerpc64-linux-gnu", [0, 0, 0, 0])]:
        rc, _, err = run(rlxc, ["--target=" + triple, "--emit=llvm", src,
                                "-o", ll])
        expect("fft.tables." + triple, rc == 0, err)
        if rc:
            continue
        text = open(ll).read()
        calls = re.findall(r"call i32 @rlx_fft_c64_tab\(i64 \d+, i64 (\d+),"
                           r" i32 (\d), .*, ptr (?:nonnull )?(\S+)\)", text)
        got = [int(n) if t == "@rlx.fft.%s.%s" % (n, "inv" if i == "1"
                                                  else "fwd") else 0
               for n, i, t in calls]
        expect("fft.tables." + triple, got == want, "calls %s" % calls)
        defs = re.findall(r"^@rlx\.fft\.\S+ = ", text, re.M)
        expect("fft.tables.shared." + triple,
               len(defs) == (2 if want[0] else 0), "globals %s" % defs)


def test_reserved_graphs(rlxc, tmp):
    """A graph named after a library symbol cannot name the entry points
    (exit 1, at the graph); --name fixes it; ordinary names pass."""
    for sym in ["getenv", "sysconf", "pthread_create", "printf", "_x"]:
        f = os.path.join(tmp, "r_%s.rlx" % sym)
        open(f, "w").write("graph %s {\n  input %%x: f32[]\n"
                           "  return %%x\n}\n" % sym)
        case_status(rlxc, "graph-reserved-" + sym, ["--check", f], 1,
                    "graph '%s' cannot name the entry points" % sym)
        case_status(rlxc, "graph-reserved-renamed-" + sym,
                    ["--check", "--name=model", f], 0)
    ok = os.path.join(tmp, "ok_names.rlx")
    open(ok, "w").write("graph mlp {\n  input %x: f32[]\n  return %x\n}\n")
    for name in ["model", "mlp", "train", "net", "forward", "predict",
                 "digits", "loss", "step", "f"]:
        case_status(rlxc, "name-allowed-" + name,
                    ["--check", "--name=" + name, ok], 0)


def test_inputs(rlxc, tmp, good):
    case_status(rlxc, "missing-file", [os.path.join(tmp, "nope.rlx")], 1,
                "cannot open")
    case_status(rlxc, "directory", ["--check", tmp], 1, "cannot read")
    case_status(rlxc, "check-ok", ["--check", good], 0)
    case_status(rlxc, "entry-unknown", ["--check", "--entry=zz", good], 1,
                "entry graph 'zz' not found")
    case_status(rlxc, "entry-ok", ["--check", "--entry=sq", good], 0)
    empty = os.path.join(tmp, "empty.rlx")
    open(empty, "w").write("// nothing here\n")
    case_status(rlxc, "no-graph", ["--check", empty], 1, "no graph")
    mainf = os.path.join(tmp, "main.rlx")
    open(mainf, "w").write("graph main {\n  input %x: f32[]\n"
                           "  return %x\n}\n")
    case_status(rlxc, "graph-main", ["--check", mainf], 1,
                "cannot name the entry points")
    case_status(rlxc, "graph-main-renamed",
                ["--check", "--name=model", mainf], 0)
    nul = os.path.join(tmp, "nul.rlx")
    open(nul, "wb").write(b"graph g {\x00\xff }\n")
    rc, _, err = run(rlxc, ["--check", nul])
    expect("nul-bytes", rc == 1 and "error:" in err, "exit %d" % rc)


def test_emit_ir(rlxc, tmp, good):
    rc, out, err = run(rlxc, ["--emit=ir", good])
    expect("emit-ir-stdout", rc == 0 and out.startswith("graph sq {\n")
           and "%y = mul(%x, %x) : f32[4]" in out, out + err)
    dst = os.path.join(tmp, "out.rlx")
    rc, out2, err = run(rlxc, ["--emit=ir", "-o", dst, good])
    expect("emit-ir-file", rc == 0 and out2 == "" and
           os.path.exists(dst) and open(dst).read() == out, err)
    rc, out3, err = run(rlxc, ["--emit=ir", "-"], stdin=GOOD.encode())
    expect("emit-ir-stdin", rc == 0 and out3 == out, err)
    rc, out, err = run(rlxc, ["--check", "--dump-ir", good])
    expect("dump-ir-all", rc == 0 and "// ---- after parse ----" in err
           and "// ---- after verify: no change ----" in err
           and err.count("graph model {") == 1 and out == "", err)
    rc, out, err = run(rlxc, ["--check", "--grad", "--dump-ir", good])
    expect("dump-ir-changed", rc == 0 and
           "// ---- after inline_custom_fn ----" in err and
           "// ---- after cse: no change ----" in err and
           err.count("graph model_grad {") == 2, err)
    rc, out, err = run(rlxc, ["--time-passes", "-o",
                              os.path.join(tmp, "t.o"), good])
    rows = [ln.split() for ln in err.splitlines()[2:]]
    expect("time-passes", rc == 0 and "time and memory per phase" in err
           and all(len(r) >= 6 for r in rows) and rows[-1][-1] == "total"
           and any(r[-1] == "inline_custom_fn" for r in rows)
           and "LLVM: emit object" in err, err)
    rc, out, err = run(rlxc, ["--check", "--dump-ir=parse", good])
    expect("dump-ir-one", rc == 0 and err.count("// ---- after") == 1
           and "graph model {" in err, err)


DYN = """graph body {
  input %h: f32[?b<=32, 4]
  input %x: f32[?b<=32, 4]
  %y = add(%h, %x) : f32[?b, 4]
  return %y
}

graph dyn {
  input %x: f32[?b<=32, 4]
  input %xs: f32[?t, ?b<=32, 4]
  %s = scan(%x, %xs, body=@body) : f32[?b, 4]
  return %s
}
"""


def test_dynamic(rlxc, tmp):
    """Dynamic dimensions (docs/dynamic-dims.md): --check, --emit=ir and
    --dump-ir accept them; code generation lays a workspace out at each
    call for sizes without a bound (the header then has
    NAME_workspace_bytes and no NAME_WORKSPACE_BYTES; a scan's scratch is
    then laid out at run time too), and refuses, at the node,
    an op that cannot take dynamic sizes yet; the transformations stop
    with one diagnostic at the first dynamic argument; --target=cuda
    takes them too (a scan's carry without a bound: its scratch at run
    time). A failure writes nothing."""
    d = os.path.join(tmp, "dyn")
    os.mkdir(d)
    src = os.path.join(d, "dyn.rlx")
    open(src, "w").write(DYN)
    rc, out, err = run(rlxc, ["--check", src])
    expect("dyn-check", rc == 0 and out == "" and err == "", err)
    rc, out, err = run(rlxc, ["--emit=ir", src])
    expect("dyn-emit-ir", rc == 0 and out == DYN, out + err)
    rc, out, err = run(rlxc, ["--check", "--dump-ir=all", src])
    expect("dyn-dump-ir", rc == 0 and "// ---- after parse ----" in err
           and "input %x: f32[?b<=32, 4]" in err
           and "after simplify: no change" in err, err)
    rc, out, err = run(rlxc, ["--emit=plan", "-o", os.path.join(d, "p.txt"),
                              src])
    plan = open(os.path.join(d, "p.txt")).read() if rc == 0 else ""
    expect("dyn-plan", rc == 0 and "%s = scan  outputs[0] scratch run-time "
           "#0 (bytes computed at run time)" in plan, err + plan)
    rc, out, err = run(rlxc, ["--target=cuda", "-o", os.path.join(d, "x.o"),
                              src])  # a scan over a length without a bound
    expect("dyn-gpu-length", rc == 0 and err == "", err)
    carry = os.path.join(d, "carry.rlx")  # and a carry without one
    open(carry, "w").write(
        "graph body {\n  input %h: f32[?b, 4]\n  input %x: f32[?b, 4]\n"
        "  %y = add(%h, %x)\n  return %y\n}\n\ngraph g {\n  input %x: "
        "f32[?b, 4]\n  input %xs: f32[3, ?b, 4]\n  %s = scan(%x, %xs, "
        "body=@body)\n  return %s\n}\n")
    rc, out, err = run(rlxc, ["--target=cuda", "--emit=plan", "-o",
                              os.path.join(d, "c.txt"), carry])
    plan = open(os.path.join(d, "c.txt")).read() if rc == 0 else ""
    expect("dyn-gpu-carry", rc == 0 and "plan rlx.sub.body.0.enqueue" in plan
           and "%s = scan  outputs[0] scratch run-time #0" in plan,
           err + plan)
    cases = []
    for name, text, want, where in [
            ("softmax", "graph g {\n  input %x: f32[3, ?b<=8]\n"
             "  %y = softmax(%x, axis=0)\n  return %y\n}\n",
             "codegen: op 'softmax' of %y (f32[3, ?b]) with dynamic sizes: "
             "an axis other than the last", ":3:8"),
            ("nosize", "graph g {\n  input %x: f32[?b<=4, 3]\n"
             "  %y = expand(%x, shape=[?n<=2, ?b, 3])\n  return %y\n}\n",
             "?n is no argument's size, so no call can give it", ":3:8"),
            ("gpugrid", "graph g {\n  input %x: f32[?b<=900000000000, 4]\n"
             "  %y = relu(%x)\n  return %y\n}\n",
             "would launch more than 2^31 - 1 blocks at the sizes' bounds",
             "")]:
        f = os.path.join(d, name + ".rlx")
        open(f, "w").write(text)
        gpu = ["--target=cuda"] if name in ("gpu", "gpugrid") else []
        cases.append((name, gpu + ["-o", os.path.join(d, "x.o")], f, want,
                      where))
    f = os.path.join(d, "free.rlx")
    open(f, "w").write("graph g {\n  input %x: f32[2, ?t, 8]\n  param %w: "
                       "f32[8, 8]\n  %y = attention(matmul(%x, %w), %x, %x, "
                       "heads=2)\n  return %y\n}\n")
    rc, out, err = run(rlxc, ["-o", os.path.join(d, "free.o"), f])
    h = open(os.path.join(d, "free.h")).read() if rc == 0 else ""
    expect("dyn-free", rc == 0 and "size_t g_workspace_bytes(const int64_t "
           "*sizes);" in h and "g_WORKSPACE_BYTES" not in h, err + h)
    for name, args, f, want, where in cases:
        expect_fails_clean(rlxc, "dyn-" + name, d, args + [f], want,
                           where=f + where)
        rc, _, err = run(rlxc, args + [f])
        expect("dyn-%s-once" % name, err.count("error:") == 1, err)


def listing(d):
    return sorted(os.listdir(d))


def expect_fails_clean(rlxc, name, d, args, reason, fsize=None, where=None):
    """args fail with exit 1, `WHERE: error: ...: REASON`, and leave d as
    it was (no output, no temporary)."""
    before = listing(d)
    rc, _, err = run(rlxc, args, fsize=fsize)
    expect(name, rc == 1, "exit %d: %s" % (rc, err))
    expect(name, reason in err, "stderr lacks %r: %s" % (reason, err))
    if where:
        expect(name, err.startswith(where + ": error: "),
               "stderr does not start with %r: %s" % (where + ": error:",
                                                      err))
    expect(name, "LLVM ERROR" not in err, err)
    expect(name, listing(d) == before, "left %s (was %s)"
           % (listing(d), before))


def test_outputs(rlxc, tmp, good):
    d = os.path.join(tmp, "out")
    os.mkdir(d)
    obj, hdr = os.path.join(d, "x.o"), os.path.join(d, "x.h")
    rc, _, err = run(rlxc, ["-o", obj, good])
    expect("outputs-ok", rc == 0 and listing(d) == ["x.h", "x.o"],
           "%d %s %s" % (rc, listing(d), err))
    umask = os.umask(0)
    os.umask(umask)
    mode = 0o666 & ~umask
    for f in (obj, hdr):
        m = stat.S_IMODE(os.stat(f).st_mode) if os.path.exists(f) else 0
        expect("outputs-mode", m == mode, "%s: %o, expected %o" % (f, m, mode))
    size = os.path.getsize(obj) if rc == 0 else 0
    hsize = os.path.getsize(hdr) if rc == 0 else 600
    open(obj, "w").write("old")
    rc, _, err = run(rlxc, ["-o", obj, good])
    expect("outputs-replace", rc == 0 and os.path.getsize(obj) == size, err)
    shutil.rmtree(d)
    os.mkdir(d)
    os.mkdir(os.path.join(d, "dir.o"))
    dir_o = os.path.join(d, "dir.o")
    expect_fails_clean(rlxc, "outputs-dir", d, ["-o", dir_o, good],
                       "Is a directory", where=dir_o)
    os.mkdir(os.path.join(d, "dir.h"))
    expect_fails_clean(rlxc, "outputs-dir-header", d,
                       ["-o", os.path.join(d, "dir.obj"), good],
                       "Is a directory",
                       where=os.path.join(d, "dir.h"))
    expect_fails_clean(rlxc, "outputs-dir-ir", d,
                       ["--emit=ir", "-o", dir_o, good], "Is a directory",
                       where=dir_o)
    expect_fails_clean(rlxc, "outputs-no-dir", d,
                       ["-o", os.path.join(d, "nodir", "x.o"), good],
                       "No such file or directory")
    # write errors: the header (first) or the object (after the header
    # was written) exceeds RLIMIT_FSIZE
    for lim in (16, hsize):
        expect_fails_clean(rlxc, "outputs-fsize-%d" % lim, d,
                           ["-o", os.path.join(d, "x.o"), good],
                           "File too large", fsize=lim)
    expect_fails_clean(rlxc, "outputs-fsize-ir", d,
                       ["--emit=ir", "-o", os.path.join(d, "x.rlx"), good],
                       "File too large", fsize=16)
    if os.path.exists("/dev/full"):
        expect_fails_clean(rlxc, "outputs-dev-full", d,
                           ["--emit=obj", "-o", "/dev/full", good],
                           "No space left on device", where="/dev/full")
    rc, _, err = run(rlxc, ["--emit=obj", "-o", "/dev/null", good])
    expect("outputs-dev-null", rc == 0 and os.path.exists("/dev/null") and
           stat.S_ISCHR(os.stat("/dev/null").st_mode), err)
    test_full_disk(rlxc, tmp, good)
    if os.geteuid() != 0:  # root writes anywhere
        ro = os.path.join(tmp, "ro")
        os.mkdir(ro)
        os.chmod(ro, 0o555)
        expect_fails_clean(rlxc, "outputs-unwritable", ro,
                           ["-o", os.path.join(ro, "x.o"), good],
                           "Permission denied")
        os.chmod(ro, 0o755)


def test_full_disk(rlxc, tmp, good):
    """A 64 KiB tmpfs filled up to one free page: the header fits, the
    object does not. Skipped where mounting is not permitted."""
    mnt = os.path.join(tmp, "small")
    os.mkdir(mnt)
    if subprocess.run(["mount", "-t", "tmpfs", "-o", "size=64k", "tmpfs",
                       mnt], stdout=subprocess.DEVNULL,
                      stderr=subprocess.DEVNULL).returncode != 0:
        print("skip outputs-full-disk: cannot mount a tmpfs")
        return
    try:
        fill = os.path.join(mnt, "fill")
        with open(fill, "wb") as f:
            try:
                for _ in range(15):
                    f.write(b"\0" * 4096)
                    f.flush()
            except OSError:
                pass
        expect_fails_clean(rlxc, "outputs-full-disk", mnt,
                           ["-o", os.path.join(mnt, "x.o"), good],
                           "No space left on device")
    finally:
        subprocess.run(["umount", mnt])


def test_same_path(rlxc, tmp, good):
    """Two outputs of one run with one path: a command-line error."""
    d = os.path.join(tmp, "same")
    os.mkdir(d)
    cases = [
        ("o-header", ["-o", os.path.join(d, "x.h")], "object and the header"),
        ("o-asm", ["--emit=obj,asm", "-o", os.path.join(d, "k.s")],
         "object and the assembly"),
        ("o-ll", ["--emit=obj,llvm", "-o", os.path.join(d, "k.ll")],
         "object and the LLVM IR"),
        ("asm-header", ["--emit=asm,header", "-o", os.path.join(d, "k.h")],
         "header and the assembly"),
        ("dot-h", ["-o", os.path.join(d, ".h")], "would both be written"),
    ]
    for name, args, msg in cases:
        case_status(rlxc, "same-path." + name, args + [good], 2, msg)
    expect("same-path-clean", listing(d) == [], str(listing(d)))
    case_status(rlxc, "same-path.check-ok",
                ["--check", "-o", os.path.join(d, "x.h"), good], 0)
    rc, _, err = run(rlxc, ["--emit=asm,llvm", "-o", os.path.join(d, "k"),
                            good])
    expect("distinct-paths", rc == 0 and listing(d) == ["k.ll", "k.s"],
           "%d %s %s" % (rc, listing(d), err))


def test_line_ends(rlxc, tmp):
    """LF, CRLF and lone-CR files report the same line:col; a UTF-8
    byte-order mark is skipped."""
    body = ["graph g {", "  input %x: f32[4]", "  %y = nosuchop(%x)",
            "  return %y", "}", ""]
    for name, nl in [("lf", "\n"), ("crlf", "\r\n"), ("cr", "\r")]:
        f = os.path.join(tmp, "ends_%s.rlx" % name)
        open(f, "wb").write(nl.join(body).encode())
        rc, _, err = run(rlxc, ["--check", f])
        expect("line-ends-" + name, rc == 1 and
               (f + ":3:8: error: unknown op 'nosuchop'") in err, err)
    f = os.path.join(tmp, "bom.rlx")
    open(f, "wb").write(b"\xef\xbb\xbf" + GOOD.encode())
    rc, out, err = run(rlxc, ["--emit=ir", f])
    expect("bom-accepted", rc == 0 and out.startswith("graph sq {"), err)
    open(f, "wb").write(b"\xef\xbb\xbfgraph g { $\n}\n")
    rc, _, err = run(rlxc, ["--check", f])
    expect("bom-columns", rc == 1 and (f + ":1:11: error:") in err, err)


def test_ops_md(rlxc, root):
    rc, out, err = run(rlxc, ["--list-ops=md"])
    path = os.path.join(root, "docs", "ops.md")
    have = open(path).read() if os.path.exists(path) else ""
    expect("docs/ops.md", rc == 0 and have == out,
           "docs/ops.md is out of date: regenerate it with "
           "`rlxc --list-ops=md > docs/ops.md`")
    rc, listing, _ = run(rlxc, ["--list-ops"])
    words = {"-": "no", "compiles": "yes", "reverse": "yes",
             "forward": "yes"}
    for row in listing.splitlines():
        op, cols = row.split()[0], row.split()[1:]
        md = "| `%s` |" % op
        line = next((ln for ln in out.splitlines() if ln.startswith(md)), "")
        cells = [c.strip() for c in line.split("|")[5:8]]
        want = [words.get(c, c.replace(",", ", ")) for c in cols]
        expect("ops.md-" + op, cells == want, line)
    # dtype-restricted ops (op table OPF_F32_F64) say so in both listings
    for op in ("selective_scan", "dense_solve", "sample", "log_mel"):
        row = next((r.split() for r in listing.splitlines()
                    if r.split()[0] == op), [])
        expect("list-ops-dtypes-" + op, row[1:2] == ["f32,f64"], row)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--rlxc", required=True)
    ap.add_argument("--root", required=True)
    a = ap.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        good = os.path.join(tmp, "good.rlx")
        open(good, "w").write(GOOD)
        test_info(a.rlxc)
        test_bad_command_lines(a.rlxc, good)
        test_inputs(a.rlxc, tmp, good)
        test_reserved_graphs(a.rlxc, tmp)
        test_targets(a.rlxc, tmp, good)
        test_gpu_params(a.rlxc, tmp)
        test_cuda_mm(a.rlxc, tmp, good)
        test_fft_tables(a.rlxc, tmp)
        test_color(a.rlxc, tmp)
        test_dot(a.rlxc, tmp, good)
        test_plan(a.rlxc, tmp)
        test_emit_ir(a.rlxc, tmp, good)
        test_dynamic(a.rlxc, tmp)
        test_outputs(a.rlxc, tmp, good)
        test_same_path(a.rlxc, tmp, good)
        test_line_ends(a.rlxc, tmp)
        test_ops_md(a.rlxc, a.root)
    for f in FAILS:
        print("FAIL " + f)
    print("%d failure(s)" % len(FAILS))
    sys.exit(1 if FAILS else 0)


if __name__ == "__main__":
    main()
