#!/usr/bin/env python3
"""gpu_torch_interop.py -- call an rlxc --target=cuda entry from PyTorch
(docs/gpu.md, "PyTorch interop").

  rlxc samples/mlp.rlx --target=cuda -o mlp_gpu.o        # on a machine
  cc -shared mlp_gpu.o build/runtime/librlxrt.a -lm -lpthread -ldl \
     -o mlp_gpu.so                                        # with LLVM
  python3 samples/gpu_torch_interop.py mlp_gpu.so mlp     # on the GPU

The entry takes device pointers and a CUstream: torch.Tensor.data_ptr()
of CUDA tensors and torch.cuda.current_stream().cuda_stream. The
runtime uses the device's primary context, the one PyTorch uses, so
the pointers and the stream are valid in both; the entry only enqueues
work on the stream, in order with PyTorch's own kernels on it. The
argument shapes and dtypes come from NAME_signature() (rlx_signature,
read here with ctypes). The script runs mlp.rlx's forward on random
inputs and checks loss and logits against the same model in PyTorch
(float32, TF32 off) at the e2e tolerance; exit 0 on success.
"""
import ctypes
import sys

import torch


class TensorDesc(ctypes.Structure):
    _fields_ = [("name", ctypes.c_char_p), ("dtype", ctypes.c_int),
                ("rank", ctypes.c_int),
                ("dims", ctypes.POINTER(ctypes.c_int64)),
                ("kind", ctypes.c_int)]


class Signature(ctypes.Structure):
    _fields_ = [("name", ctypes.c_char_p), ("num_inputs", ctypes.c_int),
                ("num_outputs", ctypes.c_int),
                ("inputs", ctypes.POINTER(TensorDesc)),
                ("outputs", ctypes.POINTER(TensorDesc)),
                ("workspace_bytes", ctypes.c_size_t)]


# rlx_dtype codes (runtime/rlxrt.h) of the dtypes used here
DTYPES = {0: torch.float32, 1: torch.float64, 6: torch.int32,
          7: torch.int64}


class GpuEntry:
    """NAME of a shared object from rlxc --target=cuda, called on torch
    CUDA tensors: outputs = entry(*inputs) (allocated here, on the
    inputs' device), or entry.call(inputs, outputs) into given ones."""

    def __init__(self, so, name):
        self.lib = ctypes.CDLL(so)
        self.fn = getattr(self.lib, name)
        self.fn.restype = ctypes.c_int
        self.fn.argtypes = [ctypes.c_void_p] * 4
        sig = getattr(self.lib, name + "_signature")
        sig.restype = ctypes.POINTER(Signature)
        self.sig = sig().contents
        self.ws = None
        unit = name  # UNIT_gpu_status: the object's, for every entry
        for suffix in ("_grad", "_jvp", "_hvp", "_train"):
            if not hasattr(self.lib, unit + "_gpu_status") and \
                    name.endswith(suffix):
                unit = name[:-len(suffix)]
        self.status_fn = getattr(self.lib, unit + "_gpu_status")
        self.status_fn.restype = ctypes.c_int
        self.status_fn.argtypes = [ctypes.c_void_p]

    def status(self, stream=None):
        """The errors the kernels of the object found (an index out of
        range, a NaN logit of sample, a singular solve: docs/gpu.md):
        synchronizes the stream, returns 0 or the first RLX_ERR_* code
        recorded since the last call, and clears it."""
        if stream is None:
            stream = torch.cuda.current_stream().cuda_stream
        return self.status_fn(stream)

    @staticmethod
    def _desc(d):
        return (d.name.decode(), DTYPES.get(d.dtype),
                tuple(d.dims[i] for i in range(d.rank)))

    def inputs(self):
        return [self._desc(self.sig.inputs[i])
                for i in range(self.sig.num_inputs)]

    def outputs(self):
        return [self._desc(self.sig.outputs[j])
                for j in range(self.sig.num_outputs)]

    def bind(self, inputs, outputs, stream=None):
        """A function of no argument that calls the entry on these
        tensors (checked once; the pointer arrays built once). The
        function holds everything its pointers point into: the tensors,
        the workspace and this entry (with its library)."""
        for what, ts, want in (("input", inputs, self.inputs()),
                               ("output", outputs, self.outputs())):
            if len(ts) != len(want):
                raise ValueError("%s_%ss: %d given, the entry takes %d" % (
                    self.sig.name.decode(), what, len(ts), len(want)))
            for t, (nm, dt, shape) in zip(ts, want):
                if not (t.is_cuda and t.is_contiguous() and t.dtype == dt
                        and tuple(t.shape) == shape):
                    raise ValueError("%s %s: want a contiguous CUDA %s %s"
                                     % (what, nm, dt, shape))
        dev = inputs[0].device
        if self.ws is None or self.ws.device != dev:
            self.ws = torch.empty(max(1, self.sig.workspace_bytes),
                                  dtype=torch.uint8, device=dev)
        ins = (ctypes.c_void_p * len(inputs))(*[t.data_ptr() for t in inputs])
        outs = (ctypes.c_void_p * len(outputs))(
            *[t.data_ptr() for t in outputs])
        if stream is None:
            stream = torch.cuda.current_stream(dev).cuda_stream
        fn, ws, name = self.fn, self.ws.data_ptr(), self.sig.name.decode()

        def run():
            rc = fn(ins, outs, ws, stream)
            if rc:
                raise RuntimeError("%s returned %d" % (name, rc))
            return outputs
        # Keep every buffer behind the pointers alive as long as run is:
        # the workspace too. It is self.ws, and a caller that drops the
        # GpuEntry once it has run (bench_mlp_gpu_train.py did) would
        # otherwise free it to PyTorch's allocator while run still
        # passes its address: the next tensors allocated there are
        # overwritten by every call (found 2026-12-05, docs/gpu.md).
        run.tensors = (list(inputs), list(outputs), self.ws)
        run.entry = self
        return run

    def call(self, inputs, outputs, stream=None):
        return self.bind(inputs, outputs, stream)()

    def __call__(self, *inputs):
        outs = [torch.empty(shape, dtype=dt, device=inputs[0].device)
                for _, dt, shape in self.outputs()]
        return self.call(list(inputs), outs)


def main():
    so, name = sys.argv[1], sys.argv[2] if len(sys.argv) > 2 else "mlp"
    torch.backends.cuda.matmul.allow_tf32 = False
    torch.manual_seed(0)
    f = GpuEntry(so, name)
    dev = torch.device("cuda")
    ins = []
    for nm, dt, shape in f.inputs():
        if dt == torch.int32:
            ins.append(torch.randint(0, 10, shape, dtype=dt, device=dev))
        else:
            ins.append(torch.randn(shape, dtype=dt, device=dev) * 0.3)
    loss, logits = f(*ins)
    if f.status():
        print("FAIL: the kernels found an error (%d)" % f.status())
        return 1
    x, y, w1, b1, w2, b2 = ins
    ref_logits = torch.relu(x @ w1 + b1) @ w2 + b2
    ref_loss = torch.nn.functional.cross_entropy(ref_logits, y.long())
    torch.cuda.synchronize()
    ok = True
    for what, got, ref in (("loss", loss, ref_loss), ("logits", logits,
                                                      ref_logits)):
        got, ref = got.double().cpu(), ref.double().cpu()
        bar = 1e-4 * ref.abs() + 1e-5 * max(1.0, float(ref.abs().max()))
        err = float((got - ref).abs().max())
        good = bool(((got - ref).abs() <= bar).all())
        ok = ok and good
        print("%s: max |rlxc - torch| = %.3g (%s)" % (what, err,
                                                      "ok" if good else
                                                      "FAIL"))
    print("gpu_torch_interop: %s (torch %s, %s)" % (
        "PASS" if ok else "FAIL", torch.__version__,
        torch.cuda.get_device_name(dev)))
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
