#!/usr/bin/env python3
"""gpu_interop_check.py RLXC LIBRLXRT CC -- GpuEntry.bind of
samples/gpu_torch_interop.py, without a GPU or PyTorch (docs/gpu.md).

Compiles a small training step with `rlxc --target=cuda --train=sgd`,
links it -shared with librlxrt.a as the samples do, and loads it with
GpuEntry against a stand-in `torch` module (tensors are Python objects
with made-up device addresses). Checks that the function bind() returns
keeps the workspace alive after the caller drops the GpuEntry: on
2026-12-05 it did not, so bench_mlp_gpu_train.py's rlxc steps wrote
their scratch into PyTorch tensors allocated later in the freed
workspace. Also checks that a wrong number of inputs or outputs is
refused. The entry is never called (no driver here). The header
declares k_gpu_status, and GpuEntry.status() (k_gpu_status: the errors
the kernels found) returns RLX_ERR_GPU without a driver. Exit 0 on
success.
"""
import gc
import itertools
import os
import subprocess
import sys
import tempfile
import types
import weakref

ROOT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..")

GRAPH = """
graph k {
  input %x: f32[8, 16]
  input %y: i32[8]
  param %w1: f32[16, 32]
  param %b1: f32[32]
  param %w2: f32[32, 4]
  param %b2: f32[4]
  %h = relu(add(matmul(%x, %w1), %b1))
  %z = add(matmul(%h, %w2), %b2)
  %loss = reduce_mean(softmax_cross_entropy(%z, %y))
  return %loss
}
"""


def fake_torch():
    """The little of torch that GpuEntry.bind touches."""
    t = types.ModuleType("torch")
    for nm in ("float32", "float64", "int32", "int64", "uint8"):
        setattr(t, nm, "dtype:" + nm)
    addr = itertools.count(1 << 40, 1 << 20)

    class device:
        def __init__(self, kind):
            self.kind = kind

        def __eq__(self, o):
            return isinstance(o, device) and o.kind == self.kind

        def __ne__(self, o):
            return not self == o

    class Tensor:
        def __init__(self, shape, dtype, dev):
            self.shape, self.dtype, self.device = tuple(shape), dtype, dev
            self.is_cuda = True
            self._ptr = next(addr)

        def is_contiguous(self):
            return True

        def data_ptr(self):
            return self._ptr

    def empty(*shape, dtype=None, device=None):
        if len(shape) == 1 and isinstance(shape[0], tuple):
            shape = shape[0]
        return Tensor(shape, dtype, device)

    t.device, t.Tensor, t.empty = device, Tensor, empty
    return t


def main():
    rlxc, rt, cc = sys.argv[1:4]
    sys.modules["torch"] = torch = fake_torch()
    sys.path.insert(0, os.path.join(ROOT, "samples"))
    from gpu_torch_interop import GpuEntry
    with tempfile.TemporaryDirectory() as d:
        src, obj, so = (os.path.join(d, n) for n in ("k.rlx", "k.o",
                                                     "k.so"))
        open(src, "w").write(GRAPH)
        subprocess.run([rlxc, src, "--target=cuda", "--train=sgd", "-o",
                        obj], check=True)
        decl = "int k_gpu_status(void *stream);"
        if decl not in open(os.path.join(d, "k.h")).read():
            print("FAIL: k.h does not declare %s" % decl)
            return 1
        subprocess.run([cc, "-shared", obj, rt, "-lm", "-lpthread", "-ldl",
                        "-o", so], check=True)
        e = GpuEntry(so, "k_train")
        os.environ["RLX_CUDA_LIBRARY"] = os.path.join(d, "no-libcuda.so")
        rc = e.status(0)
        print("%s: k_gpu_status without a driver gave %d (RLX_ERR_GPU is 8)"
              % ("ok" if rc == 8 else "FAIL", rc))
        ok = rc == 8
        ws_bytes = e.sig.workspace_bytes
        assert ws_bytes > 0, "the test needs an entry with a workspace"
        dev = torch.device("cuda")
        ins = [torch.empty(s, dtype=dt, device=dev) for _, dt, s in
               e.inputs()]
        outs = [torch.empty(s, dtype=dt, device=dev) for _, dt, s in
                e.outputs()]
        for what, a, b in (("one input too few", ins[:-1], outs),
                           ("one output too many", ins, outs + outs[:1])):
            try:
                e.bind(a, b, 1)
                print("FAIL: bind took %s" % what)
                ok = False
            except ValueError as err:
                print("ok: %s refused (%s)" % (what, err))
        run = e.bind(ins, outs, 1)
        ws = weakref.ref(e.ws)
        assert e.ws.shape == (ws_bytes,)
        del e
        gc.collect()
        if ws() is None:
            print("FAIL: the workspace was freed while the bound function "
                  "still passes its address")
            ok = False
        else:
            print("ok: the bound function keeps its %d-byte workspace"
                  % ws_bytes)
        del run
        gc.collect()
        if ws() is not None:
            print("FAIL: the workspace outlived the bound function (the "
                  "check above proves nothing)")
            ok = False
    print("gpu_interop_check: %s" % ("PASS" if ok else "FAIL"))
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
