#!/usr/bin/python3
"""run_onnx_test.py -- ONNX import tests (tools/onnx2rlx.py).

Needs only the standard library, NumPy and onnx (Debian: python3-onnx);
no torch: the PyTorch references were written by tests/onnx/gen_onnx.py
and are committed in tests/onnx/data/.

    run_onnx_test.py --rlxc RLXC --build BUILD --work DIR CASE

Cases:
  mlp, cnn, misc  convert data/CASE.onnx, compile, link tests/onnx/
                  onnx_run.c, load the params from the converter's
                  safetensors file with rlx_load_params, run, and compare
                  every output with PyTorch's float64 outputs.
  mlp_grad        the MLP converted with --loss xent, compiled with
                  --grad: loss and every param gradient against torch.
  mlp_train       SGD_STEPS steps of SGD through the gradient entry: the
                  losses must match torch's float64 SGD run and decrease.
  semantics       hand-made ONNX graphs (onnx.helper) for attribute
                  semantics torch does not export here (Gemm transA/alpha/
                  beta, 1-D MatMul, Reshape 0/-1, clamped and negative
                  Slice, negative Gather indices, ReduceSum axes input,
                  opset-11 Softmax, Squeeze/Unsqueeze, Pad, Flatten)
                  against NumPy.
  unsupported     a graph with ops the converter lacks: exit 1 and one
                  "unsupported op 'X' (node 'N')" line per such node.
  rejects         graphs whose attributes rlx cannot express: exit 1
                  with a message naming the node and the attribute.
  invalid         malformed models (initializer or Constant data that
                  disagrees with its dims, a value defined twice, a
                  node the ONNX checker rejects) and unusable -o /
                  --weights paths: exit 1, exactly one error line naming
                  the value, no traceback, no file left behind.
  names           --name values that are no usable graph name are one
                  error line; a valid --name is used; a name derived
                  from -o that is a keyword (-o graph.rlx) becomes m_graph
                  with a note, and rlxc --check accepts every result.

Tolerance: |got - ref| <= 1e-4*|ref| + 1e-5*max(1, max|ref|).
Exit status: 0 pass, 1 fail, 77 skip (the onnx module is missing).
"""
import argparse
import glob
import json
import math
import os
import re
import struct
import subprocess
import sys

try:
    import numpy as np
    import onnx
    from onnx import helper, TensorProto, numpy_helper
except ImportError as e:
    print("SKIP: %s (apt-get install python3-onnx python3-numpy)" % e)
    sys.exit(77)

HERE = os.path.dirname(os.path.abspath(__file__))
SRC = os.path.dirname(os.path.dirname(HERE))
DATA = os.path.join(HERE, "data")
TOOL = os.path.join(SRC, "tools", "onnx2rlx.py")
RTOL, ATOL = 1e-4, 1e-5


class Fail(Exception):
    pass


def sh(cmd, expect=0):
    p = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
    out = p.stdout.decode("utf-8", "replace")
    if expect is not None and p.returncode != expect:
        raise Fail("%s exited %d (expected %d):\n%s"
                   % (" ".join(cmd), p.returncode, expect, out))
    return p.returncode, out


def close(name, got, ref):
    ref = np.asarray(ref, dtype=np.float64)
    got = np.asarray(got, dtype=np.float64).reshape(ref.shape)
    scale = max(1.0, float(np.abs(ref).max()) if ref.size else 1.0)
    err = np.abs(got - ref)
    bound = RTOL * np.abs(ref) + ATOL * scale
    bad = ~(err <= bound)
    if bad.any():
        i = int(np.argmax(np.where(bad, err - bound, -np.inf)))
        raise Fail("%s: %d of %d elements differ; worst at %d: got %.9g, "
                   "ref %.9g" % (name, int(bad.sum()), ref.size, i,
                                 got.reshape(-1)[i], ref.reshape(-1)[i]))
    print("  ok %-28s %s max err %.2e" % (name, list(ref.shape),
                                         float(err.max()) if ref.size else 0))


class Env:
    def __init__(self, args):
        self.rlxc = args.rlxc
        self.build = args.build
        self.work = args.work
        self.cc = os.environ.get("CC", "cc").split()
        self.cflags = args.cflags.split()
        os.makedirs(self.work, exist_ok=True)
        rt = glob.glob(os.path.join(self.build, "runtime", "librlxrt.a")) \
            or glob.glob(os.path.join(self.build, "**", "librlxrt.a"),
                         recursive=True)
        if not rt:
            raise Fail("librlxrt.a not found under %s" % self.build)
        self.runtime = rt[0]

    def path(self, *p):
        return os.path.join(self.work, *p)

    def convert(self, onnx_path, name, extra=()):
        rlx = self.path(name + ".rlx")
        st = self.path(name + ".safetensors")
        sh([sys.executable, TOOL, onnx_path, "-o", rlx, "--weights", st,
            "--name", name] + list(extra))
        return rlx, st

    def compile(self, rlx, name, grad=False, entry=None):
        """rlxc + link onnx_run.c; returns the driver's path."""
        obj = self.path(name + ".o")
        sh([self.rlxc, rlx, "-o", obj] + (["--grad"] if grad else []))
        entry = entry or name
        exe = self.path("run_" + entry)
        tools = os.path.join(SRC, "tests", "tools")
        sh(self.cc + self.cflags + [
            "-O1", "-std=c11", "-I", SRC, "-I", os.path.join(SRC, "runtime"),
            "-I", self.work, "-include", self.path(name + ".h"),
            "-DRLX_ENTRY=" + entry, os.path.join(HERE, "onnx_run.c"),
            os.path.join(tools, "harness.c"),
            os.path.join(tools, "harness_fd.c"),
            os.path.join(tools, "harness_mt.c"), obj, self.runtime,
            "-o", exe, "-lm", "-lpthread"])
        return exe


def rlx_signature(rlx):
    """Input names (in order, without params) and return names."""
    text = open(rlx).read()
    ins = re.findall(r"^\s*input %(\w+):", text, re.M)
    rets = re.search(r"^\s*return (.*)$", text, re.M).group(1)
    return ins, [r.strip().lstrip("%") for r in rets.split(",")]


def write_inputs(d, names, arrays):
    os.makedirs(d, exist_ok=True)
    for n, a in zip(names, arrays):
        np.ascontiguousarray(a).tofile(os.path.join(d, n + ".bin"))


def read_out(d, name):
    return np.fromfile(os.path.join(d, name + ".bin"), dtype=np.float64)


def read_safetensors(path):
    raw = open(path, "rb").read()
    (n,) = struct.unpack("<Q", raw[:8])
    head = json.loads(raw[8:8 + n])
    meta = head.pop("__metadata__", {})
    dt = {"F32": "<f4", "F64": "<f8", "I64": "<i8", "I32": "<i4"}
    out = {}
    for k, v in head.items():
        b, e = v["data_offsets"]
        out[k] = np.frombuffer(raw[8 + n + b:8 + n + e],
                               dtype=dt[v["dtype"]]).reshape(v["shape"])
    return out, meta


# ------------------------------------------------------------------ cases
def dynamic_batch(src, dst):
    """src with dimension 0 of every graph input and output made the
    symbolic 'batch' (what torch.onnx.export's dynamic_axes writes);
    returns the fixed size it had."""
    m = onnx.load(src)
    n = m.graph.input[0].type.tensor_type.shape.dim[0].dim_value
    for v in list(m.graph.input) + list(m.graph.output):
        v.type.tensor_type.shape.dim[0].dim_param = "batch"
    onnx.checker.check_model(m)
    onnx.save(m, dst)
    return n


def case_forward(env, name, dynamic=False):
    """name's model against its PyTorch reference; dynamic: exported
    with a symbolic batch, converted with --shape batch=N."""
    ref = np.load(os.path.join(DATA, name + "_ref.npz"))
    src = os.path.join(DATA, name + ".onnx")
    extra = []
    if dynamic:
        n = dynamic_batch(src, env.path(name + "_dynamic.onnx"))
        src, name = env.path(name + "_dynamic.onnx"), name + "_dynamic"
        extra = ["--shape", "batch=%d" % n]
    rlx, st = env.convert(src, name, extra)
    exe = env.compile(rlx, name)
    ins, rets = rlx_signature(rlx)
    nin = len([k for k in ref.files if k.startswith("in:")])
    if len(ins) != nin:
        raise Fail("graph has inputs %s, the reference %d" % (ins, nin))
    d_in, d_out = env.path(name + "_in"), env.path(name + "_out")
    write_inputs(d_in, ins, [ref["in:%d" % i] for i in range(nin)])
    os.makedirs(d_out, exist_ok=True)
    sh([exe, st, d_in, d_out])
    for j, r in enumerate(rets):
        close("%s output %d (%s)" % (name, j, r), read_out(d_out, r),
              ref["out:%d" % j])


def case_symbolic(env, name):
    """name's model exported with a symbolic batch, converted to the
    dynamic dimension ?batch<=N (--shape batch<=N, N the reference's
    batch) and compiled once, run by tests/dynamic's driver (dyn_run.c)
    at batch 0, 1 and N against the first rows of the PyTorch reference
    (the models here map rows independently); and torch's flatten
    x.view(x.size(0), -1) of a symbolic batch converts to a reshape
    that carries it."""
    ref = np.load(os.path.join(DATA, name + "_ref.npz"))
    src = env.path(name + "_sym.onnx")
    n = dynamic_batch(os.path.join(DATA, name + ".onnx"), src)
    rlx, st = env.convert(src, name + "_sym", ["--shape", "batch<=%d" % n])
    text = open(rlx).read()
    if "[?batch<=%d, " % n not in text:
        raise Fail("no input of the dynamic size ?batch<=%d in %s" % (n, rlx))
    d = env.path(name + "_sym_run")
    os.makedirs(d, exist_ok=True)
    obj = os.path.join(d, "model.o")
    sh([env.rlxc, rlx, "--name=model", "-o", obj])
    params, _ = read_safetensors(st)
    ins, rets = rlx_signature(rlx)
    arrays = [ref["in:%d" % i] for i in range(len(ins))] + \
        [params[p] for p in re.findall(r"^\s*param %(\w+):", text, re.M)]
    sizes = [0, 1, n]
    data = os.path.join(d, "data.bin")  # gen_dynamic.py's format
    with open(data, "wb") as f:
        f.write(struct.pack("<III", len(arrays), len(rets), len(sizes)))
        f.write(struct.pack("<%dq" % len(sizes), *sizes))
        blobs = [(0, a) for a in arrays] + \
            [(None, ref["out:%d" % j][:k]) for k in sizes
             for j in range(len(rets))]
        for kind, a in blobs:
            a = np.ascontiguousarray(a, dtype=np.float64).ravel()
            if kind is not None:
                f.write(struct.pack("<I", kind))
            f.write(struct.pack("<I", a.size) + a.astype("<f8").tobytes())
    exe = os.path.join(d, "dyn_run")
    sh(env.cc + env.cflags + [
        "-O1", "-std=c11", "-DENTRY=model", "-I", d,
        "-I", os.path.join(SRC, "runtime"),
        os.path.join(SRC, "tests", "dynamic", "dyn_run.c"), obj, env.runtime,
        "-o", exe, "-lm", "-lpthread"])
    print(sh([exe, data])[1].strip())
    # torch's x.view(x.size(0), -1): Shape, Gather, Unsqueeze, Concat
    # fold to the sizes [?N, -1], which Reshape carries
    F = TensorProto.FLOAT
    view = model([helper.make_node("Shape", ["x"], ["s"]),
                  helper.make_node("Gather", ["s", "i0"], ["b"], axis=0),
                  helper.make_node("Unsqueeze", ["b", "ax0"], ["b1"]),
                  helper.make_node("Concat", ["b1", "m1"], ["shp"], axis=0),
                  helper.make_node("Reshape", ["x", "shp"], ["y"])],
                 [vi("x", F, ["N", 3, 4])], [vi("y", F, ["N", 12])],
                 [init("i0", np.array(0, np.int64)),
                  init("ax0", np.array([0], np.int64)),
                  init("m1", np.array([-1], np.int64))])
    path = env.path("view_sym.onnx")
    onnx.save(view, path)
    rlx, _ = env.convert(path, "view_sym", ["--shape", "N<=8"])
    text = open(rlx).read()
    for want in ("input %x: f32[?N<=8, 3, 4]",
                 "reshape(%x, shape=[?N, 12]) : f32[?N, 12]"):
        if want not in text:
            raise Fail("view_sym: %r not in:\n%s" % (want, text))
    sh([env.rlxc, rlx, "--check"])
    print("  ok view_sym: reshape(%x, shape=[?N, 12])")


def mlp_grad_setup(env):
    ref = np.load(os.path.join(DATA, "mlp_ref.npz"))
    rlx, st = env.convert(os.path.join(DATA, "mlp.onnx"), "mlpx",
                          ["--loss", "xent"])
    exe = env.compile(rlx, "mlpx", grad=True, entry="mlpx_grad")
    ins, rets = rlx_signature(rlx)
    if ins[-1] != "labels" or rets[0] != "loss":
        raise Fail("--loss xent: unexpected signature %s -> %s" % (ins, rets))
    d_in = env.path("mlpx_in")
    write_inputs(d_in, ins + ["d_output"],
                 [ref["in:0"], ref["labels"].astype(np.int64),
                  np.array(1.0, np.float32)])
    return ref, st, exe, d_in, rets


def case_mlp_grad(env):
    ref, st, exe, d_in, rets = mlp_grad_setup(env)
    d_out = env.path("mlpx_out")
    os.makedirs(d_out, exist_ok=True)
    sh([exe, st, d_in, d_out])
    close("loss", read_out(d_out, "loss"), ref["loss"])
    close("log_softmax output", read_out(d_out, rets[1]), ref["out:0"])
    _, meta = read_safetensors(st)   # rlx name -> ONNX name
    seen = set()
    for rn, on in meta.items():
        close("d_%s (%s)" % (rn, on), read_out(d_out, "d_" + rn),
              ref["grad:" + on])
        seen.add(on)
    want = {k[5:] for k in ref.files if k.startswith("grad:")}
    if seen != want:
        raise Fail("params %s, torch has %s" % (sorted(seen), sorted(want)))


def case_mlp_train(env):
    ref, st, exe, d_in, _ = mlp_grad_setup(env)
    want = ref["sgd_losses"]
    trained = env.path("mlpx_trained.safetensors")
    _, out = sh([exe, "--sgd", str(len(want)), repr(float(ref["sgd_lr"])),
                 st, d_in, trained])
    got = [float(x) for x in re.findall(r"^step \d+ loss (\S+)$", out, re.M)]
    print("  rlx   losses " + " ".join("%.6f" % x for x in got))
    print("  torch losses " + " ".join("%.6f" % x for x in want))
    if len(got) != len(want):
        raise Fail("expected %d steps:\n%s" % (len(want), out))
    close("SGD losses", got, want)
    if not all(b < a for a, b in zip(got, got[1:])) or \
            got[-1] > 0.8 * got[0]:
        raise Fail("loss does not decrease enough: %s" % got)
    before, _ = read_safetensors(st)
    after, _ = read_safetensors(trained)
    if set(before) != set(after) or \
            all(np.array_equal(before[k], after[k]) for k in before):
        raise Fail("rlx_save_params did not write the trained params")


# ---- hand-made graphs
def vi(name, dt, shape):
    return helper.make_tensor_value_info(name, dt, shape)


def model(nodes, inputs, outputs, inits=(), opset=13, name="g"):
    g = helper.make_graph(nodes, name, inputs, outputs,
                          initializer=list(inits))
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", opset)],
                          producer_name="run_onnx_test")
    m.ir_version = 7
    return m


def const(name, arr):
    return helper.make_node("Constant", [], [name],
                            value=numpy_helper.from_array(np.asarray(arr),
                                                          name))


def init(name, arr):
    return numpy_helper.from_array(np.asarray(arr), name)


def run_model(env, m, name, feeds):
    """Convert, compile, run a hand-made model; {output name: array}."""
    path = env.path(name + ".onnx")
    onnx.checker.check_model(m)
    onnx.save(m, path)
    rlx, st = env.convert(path, name)
    exe = env.compile(rlx, name)
    ins, rets = rlx_signature(rlx)
    d_in, d_out = env.path(name + "_in"), env.path(name + "_out")
    write_inputs(d_in, ins, [feeds[i.name] for i in m.graph.input])
    os.makedirs(d_out, exist_ok=True)
    sh([exe, st, d_in, d_out])
    return {o.name: read_out(d_out, r) for o, r in zip(m.graph.output, rets)}


def softmax(x, axis):
    e = np.exp(x - x.max(axis=axis, keepdims=True))
    return e / e.sum(axis=axis, keepdims=True)


def gelu(x):
    erf = np.vectorize(math.erf)
    return 0.5 * x * (1 + erf(x / 2 ** 0.5))


def case_semantics(env):
    rng = np.random.default_rng(1)
    f32 = np.float32
    a = rng.standard_normal((3, 4)).astype(f32)      # input
    b = rng.standard_normal((5, 3)).astype(f32)      # param (transA use)
    v = rng.standard_normal((4,)).astype(f32)        # param (1-D matmul)
    x = rng.standard_normal((2, 3, 4, 5)).astype(f32)
    F = TensorProto.FLOAT
    nodes = [
        # Gemm: bp [5,3] transposed times a5 [5,4]; C [3,1] broadcast
        helper.make_node("Gemm", ["bp", "a5"], ["gemm_ab"], transA=1),
        helper.make_node("Gemm", ["bp", "a5", "cp4"], ["gemm"], transA=1,
                         alpha=0.5, beta=2.0),
        helper.make_node("MatMul", ["a", "vp"], ["mv"]),        # [3]
        helper.make_node("MatMul", ["vp", "x"], ["vm"]),        # [2,3,5]
        const("shp", np.array([0, -1, 10], np.int64)),
        helper.make_node("Reshape", ["x", "shp"], ["rs"]),       # [2,6,10]
        const("st", np.array([-3, 1], np.int64)),
        const("en", np.array([100, -1], np.int64)),
        const("ax", np.array([3, 1], np.int64)),
        helper.make_node("Slice", ["x", "st", "en", "ax"], ["sl"]),
        const("gi", np.array([[-1, 0], [2, -3]], np.int64)),
        helper.make_node("Gather", ["x", "gi"], ["ga"], axis=2),
        const("rax", np.array([-1, 1], np.int64)),
        helper.make_node("ReduceSum", ["x", "rax"], ["rsum"], keepdims=0),
        helper.make_node("ReduceMean", ["x"], ["rmean"], axes=[0, 2]),
        helper.make_node("ReduceSum", ["x"], ["rall"], keepdims=0),
        const("uax", np.array([0, 2], np.int64)),
        helper.make_node("Unsqueeze", ["mv", "uax"], ["un"]),     # [1,3,1]
        helper.make_node("Squeeze", ["un"], ["sq"]),              # [3]
        helper.make_node("Flatten", ["x"], ["fl"], axis=-1),      # [24,5]
        const("pads", np.array([0, 1, 0, 2, 0, 0, 0, 1], np.int64)),
        const("pv", np.array(1.5, f32)),
        helper.make_node("Pad", ["x", "pads", "pv"], ["pad"]),
        helper.make_node("Concat", ["x", "x"], ["cat"], axis=-2),
        helper.make_node("Transpose", ["x"], ["tr"]),
        helper.make_node("LogSoftmax", ["x"], ["lsm"], axis=1),
        helper.make_node("Sub", ["x", "vp1"], ["sub"]),
        helper.make_node("Identity", ["sub"], ["idn"]),
        # torch's GELU export: x/2 * (1 + erf(x/sqrt 2)) -> rlx gelu
        const("three", np.array(3.0, f32)),
        helper.make_node("Mul", ["x", "three"], ["x3"]),
        const("sqrt2", np.array(2 ** 0.5, f32)),
        helper.make_node("Div", ["x3", "sqrt2"], ["ge_d"]),
        helper.make_node("Erf", ["ge_d"], ["ge_e"]),
        const("one", np.array(1.0, f32)),
        helper.make_node("Add", ["ge_e", "one"], ["ge_a"]),
        helper.make_node("Mul", ["x3", "ge_a"], ["ge_m"]),
        const("half", np.array(0.5, f32)),
        helper.make_node("Mul", ["ge_m", "half"], ["gelu"]),
    ]
    outs = {"gemm_ab": (3, 4), "gemm": (3, 4), "mv": (3,), "vm": (2, 3, 5),
            "rs": (2, 6, 10), "sl": (2, 1, 4, 3), "ga": (2, 3, 2, 2, 5),
            "rsum": (2, 4), "rmean": (1, 3, 1, 5), "rall": (),
            "sq": (3,), "fl": (24, 5), "pad": (2, 4, 4, 8),
            "cat": (2, 3, 8, 5), "tr": (5, 4, 3, 2), "lsm": (2, 3, 4, 5),
            "idn": (2, 3, 4, 5), "gelu": (2, 3, 4, 5)}
    vp1 = rng.standard_normal((4, 1)).astype(f32)
    c4 = rng.standard_normal((3, 1)).astype(f32)
    a5 = rng.standard_normal((5, 4)).astype(f32)
    m = model(nodes, [vi("a", F, [3, 4]), vi("x", F, [2, 3, 4, 5])],
              [vi(k, F, list(s)) for k, s in outs.items()],
              [init("bp", b), init("vp", v),
               init("vp1", vp1), init("cp4", c4), init("a5", a5)])
    got = run_model(env, m, "sem13", {"a": a, "x": x})
    x64, a64 = x.astype(np.float64), a.astype(np.float64)
    b64, v64 = b.astype(np.float64), v.astype(np.float64)
    want = {
        "gemm_ab": b64.T @ a5,
        "gemm": 0.5 * (b64.T @ a5) + 2.0 * c4,
        "mv": a64 @ v64, "vm": np.matmul(v64, x64),
        "rs": x64.reshape(2, 6, 10), "sl": x64[:, 1:2, :, 2:5],
        "ga": np.take(x64, np.array([[3, 0], [2, 1]]), axis=2),
        "rsum": x64.sum(axis=(1, 3)), "rmean": x64.mean(axis=(0, 2),
                                                        keepdims=True),
        "rall": x64.sum(), "sq": a64 @ v64, "fl": x64.reshape(24, 5),
        "pad": np.pad(x64, [(0, 0), (1, 0), (0, 0), (2, 1)],
                      constant_values=1.5),
        "cat": np.concatenate([x64, x64], axis=2),
        "tr": x64.transpose(3, 2, 1, 0),
        "lsm": np.log(softmax(x64, 1)), "idn": x64 - vp1,
        "gelu": gelu(3 * x64)}
    for k in outs:
        close("opset 13 " + k, got[k], want[k])

    # opset 11: Softmax over the flattened dims [axis, rank), axes attrs
    nodes = [helper.make_node("Softmax", ["x"], ["sm"], axis=1),
             helper.make_node("Unsqueeze", ["x"], ["un"], axes=[-1]),
             helper.make_node("Squeeze", ["un"], ["sq"], axes=[4]),
             helper.make_node("Relu", ["sq"], ["r"])]
    m = model(nodes, [vi("x", F, [2, 3, 4, 5])],
              [vi("sm", F, [2, 3, 4, 5]), vi("r", F, [2, 3, 4, 5])],
              opset=11)
    got = run_model(env, m, "sem11", {"x": x})
    close("opset 11 Softmax(axis=1)", got["sm"],
          softmax(x64.reshape(2, 60), 1).reshape(x.shape))
    close("opset 11 Unsqueeze/Squeeze", got["r"], np.maximum(x64, 0))


def expect_error(env, m, name, patterns, args=()):
    path = env.path(name + ".onnx")
    onnx.save(m, path)
    if os.path.exists(env.path(name + ".rlx")):
        os.remove(env.path(name + ".rlx"))
    rc, out = sh([sys.executable, TOOL, path, "-o", env.path(name + ".rlx")]
                 + list(args), expect=None)
    if rc != 1:
        raise Fail("%s: converter exited %d, expected 1:\n%s" % (name, rc,
                                                                out))
    for p in patterns:
        if p not in out:
            raise Fail("%s: message lacks %r:\n%s" % (name, p, out))
    if os.path.exists(env.path(name + ".rlx")):
        raise Fail("%s: an .rlx was written despite the error" % name)
    print("  ok %-28s %s" % (name, out.strip().splitlines()[0][:100]))


def case_unsupported(env):
    F = TensorProto.FLOAT
    nodes = [helper.make_node("Erf", ["x"], ["e"], name="lone_erf"),
             helper.make_node("Relu", ["e"], ["r"], name="relu"),
             helper.make_node("Hardmax", ["r"], ["h"], name="hard"),
             helper.make_node("Erf", ["h"], ["y"], name="erf2")]
    m = model(nodes, [vi("x", F, [2, 3])], [vi("y", F, [2, 3])])
    expect_error(env, m, "unsup", [
        "onnx2rlx: error: unsupported op 'Erf' (node 'lone_erf')",
        "onnx2rlx: error: unsupported op 'Hardmax' (node 'hard')",
        "onnx2rlx: error: unsupported op 'Erf' (node 'erf2')"])
    rc, out = sh([sys.executable, TOOL, env.path("unsup.onnx"), "-o",
                  env.path("unsup.rlx")], expect=1)
    if len(out.strip().splitlines()) != 3 or "Relu" in out:
        raise Fail("expected exactly the 3 unsupported nodes:\n" + out)
    # another domain is never taken for the default one
    m = model([helper.make_node("Relu", ["x"], ["y"], name="msrelu",
                                domain="com.example")],
              [vi("x", F, [2])], [vi("y", F, [2])])
    m.opset_import.append(helper.make_opsetid("com.example", 1))
    expect_error(env, m, "domain",
                 ["unsupported op 'com.example.Relu' (node 'msrelu')"])


def case_rejects(env):
    F = TensorProto.FLOAT
    x4 = vi("x", F, [1, 2, 6, 6])
    w = init("w", np.ones((2, 2, 3, 3), np.float32))
    cases = [
        ("avgpool_exclude_pad",
         [helper.make_node("AveragePool", ["x"], ["y"], name="ap",
                           kernel_shape=[3, 3], pads=[1, 1, 1, 1])],
         [x4], [], ["node 'ap' (AveragePool)", "count_include_pad=0"]),
        ("maxpool_ceil",
         [helper.make_node("MaxPool", ["x"], ["y"], name="mp",
                           kernel_shape=[2, 2], strides=[3, 3],
                           ceil_mode=1)],
         [vi("x", F, [1, 2, 7, 7])], [], ["node 'mp'", "ceil_mode=1"]),
        ("conv_asym",
         [helper.make_node("Conv", ["x", "w"], ["y"], name="cv",
                           pads=[0, 0, 1, 1])],
         [x4], [w], ["node 'cv' (Conv)", "asymmetric pads"]),
        ("conv_autopad",
         [helper.make_node("Conv", ["x", "w"], ["y"], name="cv2",
                           auto_pad="SAME_UPPER")],
         [x4], [w], ["node 'cv2'", "auto_pad=SAME_UPPER"]),
        # an attribute ONNX does not define: the ONNX checker's error
        ("gemm_attr",
         [helper.make_node("Gemm", ["a", "b"], ["y"], name="gm",
                           transB=1, foo=3)],
         [vi("a", F, [2, 3]), vi("b", F, [4, 3])], [],
         ["node 'gm' (Gemm)", "Unrecognized attribute: foo"]),
        # an ONNX attribute the mapping does not implement
        ("constant_string",
         [helper.make_node("Constant", [], ["y"], name="cs",
                           value_string="text")], [], [],
         ["node 'cs' (Constant)", "attribute 'value_string' is not "
          "supported"]),
        ("slice_step",
         [const("s", np.array([0], np.int64)),
          const("e", np.array([6], np.int64)),
          const("a", np.array([2], np.int64)),
          const("k", np.array([2], np.int64)),
          helper.make_node("Slice", ["x", "s", "e", "a", "k"], ["y"],
                           name="sl")],
         [x4], [], ["node 'sl' (Slice)", "steps other than 1"]),
        ("reshape_runtime_shape",
         [helper.make_node("Reshape", ["x", "s"], ["y"], name="rs")],
         [x4, vi("s", TensorProto.INT64, [2])], [],
         ["node 'rs' (Reshape)", "must be a constant"]),
        ("bn_training",
         [helper.make_node("BatchNormalization",
                           ["x", "g", "g", "g", "g"], ["y"], name="bn",
                           training_mode=1)],
         [x4], [init("g", np.ones(2, np.float32))],
         ["node 'bn'", "training_mode=1"]),
        ("pad_reflect",
         [const("p", np.array([0, 0, 1, 1, 0, 0, 1, 1], np.int64)),
          helper.make_node("Pad", ["x", "p"], ["y"], name="pd",
                           mode="reflect")],
         [x4], [], ["node 'pd' (Pad)", "mode='reflect'"]),
        ("cast_float_int",
         [helper.make_node("Cast", ["x"], ["y"], name="ct",
                           to=TensorProto.INT32)],
         [x4], [], ["node 'ct' (Cast)", "not supported"]),
        ("layernorm_extra_output",
         [helper.make_node("LayerNormalization", ["x", "g"],
                           ["y", "mean"], name="ln")],
         [x4], [init("g", np.ones(6, np.float32))],
         ["node 'ln'", "output 1 ('mean') is not supported"]),
    ]
    # the type of y (the ONNX checker needs a shape on every output)
    out_type = {"maxpool_ceil": [1, 2, 3, 3], "conv_asym": [1, 2, 5, 5],
                "gemm_attr": [2, 4], "slice_step": [1, 2, 3, 6],
                "reshape_runtime_shape": ["a", "b"],
                "pad_reflect": [1, 2, 8, 8],
                "cast_float_int": (TensorProto.INT32, [1, 2, 6, 6]),
                "constant_string": (TensorProto.STRING, [])}
    opset = {"layernorm_extra_output": 17, "bn_training": 15}
    for name, nodes, ins, inits, pats in cases:
        t = out_type.get(name, [1, 2, 6, 6])
        dt, shape = t if isinstance(t, tuple) else (F, t)
        outs = [vi("y", dt, shape)]
        if name == "layernorm_extra_output":
            outs.append(vi("mean", F, [1, 2, 6, 1]))
        m = model(nodes, ins, outs, inits, opset=opset.get(name, 13))
        expect_error(env, m, name, pats)
    dyn = model([helper.make_node("Relu", ["x"], ["y"])],
                [vi("x", F, ["batch", 3])], [vi("y", F, ["batch", 3])])
    # a dynamic dimension (dim_param) is carried, not computed with
    flat = model([helper.make_node("Flatten", ["x"], ["y"], axis=0,
                                   name="flat")],
                 [vi("x", F, ["batch", 3])], [vi("y", F, [1, "n"])])
    expect_error(env, flat, "dynamic_product", [
        "node 'flat' (Flatten)", "the size ?batch*3", "--shape NAME=N"])
    shp = model([helper.make_node("Shape", ["x"], ["s"]),
                 helper.make_node("Identity", ["s"], ["y"], name="id")],
                [vi("x", F, ["batch", 3])],
                [vi("y", TensorProto.INT64, [2])])
    expect_error(env, shp, "dynamic_shape_data", [
        "value 'y' holds the dynamic dimension ?batch (from Shape)",
        "--shape NAME=N"])
    unknown = model([helper.make_node("Relu", ["x"], ["y"])],
                    [vi("x", F, [None, 3])], [vi("y", F, [None, 3])])
    expect_error(env, unknown, "unknown_dim", ["graph input 'x'",
                                               "dimension 0 of unknown size"])
    expect_error(env, dyn, "shape_unused", ["--shape seq=...",
                                            "no graph input has the "
                                            "dimension 'seq'"],
                 ["--shape", "batch=2", "--shape", "seq=4"])


# ---- invalid models, names and paths: one error line, nothing written
def raw_tensor(name, dims, values=None, raw=None):
    """A float TensorProto built field by field (helper.make_tensor
    refuses data that disagrees with dims)."""
    t = TensorProto()
    t.name, t.data_type = name, TensorProto.FLOAT
    t.dims.extend(dims)
    if raw is not None:
        t.raw_data = raw
    else:
        t.float_data.extend(values)
    return t


def run_tool(env, d, model_path, args):
    """Run the converter in the fresh directory d; (rc, output, files
    in d other than the model afterwards)."""
    rc, out = sh([sys.executable, TOOL, model_path] + args, expect=None)
    left = sorted(f for f in os.listdir(d) if not f.endswith(".onnx"))
    return rc, out, left


def fresh_dir(env, name):
    d = env.path(name)
    if os.path.isdir(d):
        for root, dirs, files in os.walk(d, topdown=False):
            for f in files:
                os.remove(os.path.join(root, f))
            for sub in dirs:
                os.rmdir(os.path.join(root, sub))
    os.makedirs(d, exist_ok=True)
    return d


def expect_one_error(env, name, m, patterns, args=None, keep=()):
    """Convert m (saved unchecked) in a fresh directory: exit 1, exactly
    one line "onnx2rlx: error: ..." holding each pattern, no traceback,
    and no file left besides the model and the entries of keep."""
    d = fresh_dir(env, name)
    for k in keep:
        os.makedirs(os.path.join(d, k), exist_ok=True)
    path = os.path.join(d, "m.onnx")
    with open(path, "wb") as f:
        f.write(m.SerializeToString())
    args = args or ["-o", os.path.join(d, "m.rlx")]
    rc, out, left = run_tool(env, d, path, [a.replace("{d}", d)
                                            for a in args])
    lines = out.strip().splitlines()
    if rc != 1:
        raise Fail("%s: converter exited %d, expected 1:\n%s"
                   % (name, rc, out))
    if "Traceback" in out or len(lines) != 1 or \
            not lines[0].startswith("onnx2rlx: error: "):
        raise Fail("%s: expected one 'onnx2rlx: error:' line:\n%s"
                   % (name, out))
    for p in patterns:
        if p not in out:
            raise Fail("%s: message lacks %r:\n%s" % (name, p, out))
    if left != sorted(keep):
        raise Fail("%s: files left behind: %s" % (name, left))
    for k in keep:
        inside = os.listdir(os.path.join(d, k))
        if inside:
            raise Fail("%s: files written into %s/: %s" % (name, k, inside))
    print("  ok %-22s %s" % (name, lines[0][:100]))


def case_invalid(env):
    F = TensorProto.FLOAT
    x, y = vi("x", F, [3, 4]), vi("y", F, [3, 4])
    w = init("w", np.ones((3, 4), np.float32))
    add_w = helper.make_node("Add", ["x", "w"], ["y"], name="add")
    cases = [
        ("init_dims", [add_w], [raw_tensor("w", [3, 4], [1.0] * 10)],
         ["initializer 'w': dims [3, 4] hold 12 values, data has 10"]),
        ("init_raw_dims", [add_w],
         [raw_tensor("w", [3, 4], raw=b"\0" * 40)],
         ["initializer 'w'", "48 bytes", "raw data has 40 bytes"]),
        ("const_dims",
         [helper.make_node("Constant", [], ["c"], name="cst",
                           value=raw_tensor("c", [4], [1.0] * 3)),
          helper.make_node("Add", ["x", "c"], ["y"], name="add")], [],
         ["node 'cst' (Constant): attribute 'value'",
          "dims [4] hold 4 values, data has 3"]),
        ("dup_init", [add_w], [w, w],
         ["initializer 'w' is defined twice"]),
        ("out_is_input",
         [helper.make_node("Relu", ["x"], ["x"], name="r"),
          helper.make_node("Neg", ["x"], ["y"], name="n")], [],
         ["node 'r' (Relu): output 'x' is already defined by graph input "
          "'x'"]),
        ("out_is_init",
         [helper.make_node("Relu", ["x"], ["w"], name="r"), add_w], [w],
         ["node 'r' (Relu): output 'w' is already defined by initializer "
          "'w'"]),
        ("two_writers",
         [helper.make_node("Relu", ["x"], ["y"], name="a"),
          helper.make_node("Neg", ["x"], ["y"], name="b")], [],
         ["node 'b' (Neg): output 'y' is already defined by node 'a' "
          "(Relu)"]),
        ("checker_node",
         [helper.make_node("Relu", ["x", "x"], ["y"], name="r2")], [],
         ["node 'r2' (Relu)"]),
    ]
    for name, nodes, inits, pats in cases:
        expect_one_error(env, name, model(nodes, [x], [y], inits), pats)
    ok = model([add_w], [x], [y], [w])
    expect_one_error(env, "o_missing_dir", ok,
                     ["output '{d}/nodir/m.rlx'".replace(
                         "{d}", env.path("o_missing_dir")),
                      "does not exist"],
                     args=["-o", "{d}/nodir/m.rlx"])
    expect_one_error(env, "weights_missing_dir", ok,
                     ["weights", "does not exist"],
                     args=["-o", "{d}/m.rlx", "--weights",
                           "{d}/nodir/m.safetensors"])
    expect_one_error(env, "o_is_dir", ok, ["output", "is a directory"],
                     args=["-o", "{d}/out"], keep=["out"])
    expect_one_error(env, "o_is_dir_slash", ok,
                     ["output", "is a directory"],
                     args=["-o", "{d}/out/"], keep=["out"])


def case_names(env):
    F = TensorProto.FLOAT
    m = model([helper.make_node("Relu", ["x"], ["y"])], [vi("x", F, [2])],
              [vi("y", F, [2])])
    for bad, why in (("a b", "not an identifier"),
                     ("x;y", "not an identifier"),
                     ("graph", "keyword of the .rlx language"),
                     ("return", "keyword of the .rlx language"),
                     ("int", "C keyword"), ("main", "main"),
                     ("_m", "reserved"), ("rlx_m", "rlx_")):
        expect_one_error(env, "name_" + re.sub(r"\W", "_", bad), m,
                         ["graph name '%s' (--name)" % bad, why],
                         args=["-o", "{d}/m.rlx", "--name", bad])
    for label, args, want in (
            ("valid", ["-o", "ok.rlx", "--name", "my_net2"], "my_net2"),
            ("from_file", ["-o", "my-net.rlx"], "my_net"),
            ("keyword_file", ["-o", "graph.rlx"], "m_graph"),
            ("digit_file", ["-o", "2d.rlx"], "m_2d")):
        d = fresh_dir(env, "name_" + label)
        path = os.path.join(d, "m.onnx")
        onnx.save(m, path)
        args = [os.path.join(d, a) if a.endswith(".rlx") else a
                for a in args]
        rc, out, left = run_tool(env, d, path, args)
        if rc != 0 or "Traceback" in out:
            raise Fail("%s: converter exited %d:\n%s" % (label, rc, out))
        rlx = args[1]
        if not re.search(r"^graph %s \{$" % want, open(rlx).read(), re.M):
            raise Fail("%s: expected 'graph %s {' in %s" % (label, want,
                                                            rlx))
        if want.startswith("m_") and "note: graph named '%s'" % want \
                not in out:
            raise Fail("%s: no note on the renamed graph:\n%s"
                       % (label, out))
        sh([env.rlxc, rlx, "--check"])
        print("  ok %-22s graph %s (rlxc --check accepts it)"
              % (label, want))


CASES = {"mlp": lambda e: case_forward(e, "mlp"),
         "mlp_dynamic": lambda e: case_forward(e, "mlp", dynamic=True),
         "cnn": lambda e: case_forward(e, "cnn"),
         "cnn_symbolic": lambda e: case_symbolic(e, "cnn"),
         "misc": lambda e: case_forward(e, "misc"),
         "mlp_grad": case_mlp_grad, "mlp_train": case_mlp_train,
         "semantics": case_semantics, "unsupported": case_unsupported,
         "rejects": case_rejects, "invalid": case_invalid,
         "names": case_names}


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--rlxc", required=True)
    ap.add_argument("--build", required=True)
    ap.add_argument("--work", required=True)
    ap.add_argument("--cflags", default="")
    ap.add_argument("case", choices=sorted(CASES))
    args = ap.parse_args()
    try:
        env = Env(args)
        env.work = os.path.join(args.work, args.case)
        os.makedirs(env.work, exist_ok=True)
        CASES[args.case](env)
    except Fail as e:
        print("FAIL onnx.%s: %s" % (args.case, e))
        return 1
    print("PASS onnx.%s" % args.case)
    return 0


if __name__ == "__main__":
    sys.exit(main())
