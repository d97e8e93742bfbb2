#!/usr/bin/env python3
"""bench_conv_gpu.py: conv2d and its two backward convolutions with
--target=cuda against PyTorch's (cuDNN) on the same inputs.

  bench_conv_gpu.py build RLXC LIBRLXRT OUT [SM]  (here: compile every
                                               case to OUT/NAME.so)
  bench_conv_gpu.py run OUT [ROUNDS [REGEX]]  (GPU host: check and time
                                               the cases REGEX matches)

Cases: ResNet 3x3 layers (batch 32: 64 channels at 56x56, 128 at 28x28,
256 at 14x14, padding 1) and the small CNN's second convolution (batch
64, 16 -> 32 channels at 14x14), in bf16 (tensor cores on both sides)
and f32 (TF32 off on both sides: cuDNN's f32 kernels, rlxc's CUDA-core
GEMM), each as `fwd` (conv2d), `bin` (conv2d_backward_input) and `bwt`
(conv2d_backward_weight; torch: torch.nn.grad.conv2d_input / _weight,
which call the same cuDNN backward kernels as autograd). Check first:
max |err| / max |ref| against torch's result (both f32-accumulated;
a few 1e-3 expected in bf16). Timing: alternated rounds
(bench/gpu_rounds.py), median and minimum ms per call, TFLOP/s as
2 N Co OH OW Ci KH KW for every form.
"""
import os
import re
import statistics
import sys

SHAPES = (  # name, N, C, H, Co, K
    ("r56", 32, 64, 56, 64, 3),
    ("r28", 32, 128, 28, 128, 3),
    ("r14", 32, 256, 14, 256, 3),
    ("cnn2", 64, 16, 14, 32, 3),
)
FORMS = ("fwd", "bin", "bwt")


def cases():
    for dt in ("bf16", "f32"):
        for s in SHAPES:
            for form in FORMS:
                yield "conv_%s_%s_%s" % (s[0], dt, form), s, dt, form


def graph(name, s, dt, form):
    _, n, c, h, co, k = s
    x, w, y = ("%s[%d, %d, %d, %d]" % (dt, n, c, h, h),
               "%s[%d, %d, %d, %d]" % (dt, co, c, k, k),
               "%s[%d, %d, %d, %d]" % (dt, n, co, h, h))
    p = "padding=[%d, %d]" % (k // 2, k // 2)
    if form == "fwd":
        ins, body = (("x", x), ("w", w)), "conv2d(%%x, %%w, %s)" % p
    elif form == "bin":
        ins, body = (("dy", y), ("w", w)), (
            "conv2d_backward_input(%%dy, %%w, shape=[%d, %d, %d, %d], %s)"
            % (n, c, h, h, p))
    else:
        ins, body = (("x", x), ("dy", y)), (
            "conv2d_backward_weight(%%x, %%dy, shape=[%d, %d, %d, %d], %s)"
            % (co, c, k, k, p))
    lines = ["graph %s {" % name] + ["  input %%%s: %s" % i for i in ins]
    lines += ["  %%r = %s" % body, "  return %r", "}", ""]
    return "\n".join(lines)


def run(out, rounds, match=None):
    import torch
    import torch.nn.functional as F
    here = os.path.dirname(os.path.abspath(__file__))
    for x in (here, os.path.join(here, "..", "samples")):
        sys.path.insert(0, x)
    import gpu_torch_interop as gi
    from gpu_rounds import header, time_rounds, timed
    gi.DTYPES[3] = torch.bfloat16
    torch.backends.cudnn.allow_tf32 = False
    torch.backends.cuda.matmul.allow_tf32 = False
    torch.backends.cudnn.benchmark = True
    dev = torch.device("cuda")
    st = torch.cuda.current_stream()
    print(header(rounds, 0))
    print("%-24s %8s %8s %8s %8s %7s %7s %8s" % (
        "case", "rlxc ms", "(min)", "torch ms", "(min)", "rlxc TF",
        "torch TF", "rlxc/torch"))
    fails = 0
    for name, s, dt, form in cases():
        so = os.path.join(out, name + ".so")
        if not os.path.exists(so) or (match and not re.search(match, name)):
            continue
        _, n, c, h, co, k = s
        tdt = torch.bfloat16 if dt == "bf16" else torch.float32
        torch.manual_seed(0)
        x = torch.randn(n, c, h, h, device=dev).to(tdt)
        w = (torch.randn(co, c, k, k, device=dev) / (c * k * k) ** 0.5).to(tdt)
        dy = torch.randn(n, co, h, h, device=dev).to(tdt)
        p = k // 2
        ins, fn = {
            "fwd": ([x, w], lambda: F.conv2d(x, w, padding=p)),
            "bin": ([dy, w], lambda: torch.nn.grad.conv2d_input(
                x.shape, w, dy, padding=p)),
            "bwt": ([x, dy], lambda: torch.nn.grad.conv2d_weight(
                x, w.shape, dy, padding=p)),
        }[form]
        e = gi.GpuEntry(so, name)
        outs = [torch.empty(sh, dtype=odt, device=dev)
                for _, odt, sh in e.outputs()]
        rl = e.bind(ins, outs)
        ref = fn()
        rl()
        torch.cuda.synchronize()
        err = ((outs[0].float() - ref.float()).abs().max() /
               ref.float().abs().max().clamp(min=1e-30)).item()
        ok = err < (2e-2 if dt == "bf16" else 1e-4)
        fails += not ok
        ms = timed(rl, 1)
        iters = max(1, min(200, int(100 / max(ms, 1e-3))))
        times = time_rounds([("rlxc", rl), ("torch", fn)], st, rounds, iters,
                            2)
        flop = 2.0 * n * co * h * h * c * k * k
        med = {v: statistics.median(t) for v, t in times.items()}
        mn = {v: min(t) for v, t in times.items()}
        tf = {v: flop / (med[v] * 1e-3) / 1e12 for v in med}
        print("%-24s %8.3f %8.3f %8.3f %8.3f %7.1f %7.1f %8.2f  err %.1e %s"
              % (name, med["rlxc"], mn["rlxc"], med["torch"], mn["torch"],
                 tf["rlxc"], tf["torch"], med["torch"] / med["rlxc"], err,
                 "ok" if ok else "FAIL"), flush=True)
        del e, rl, outs, ins, x, w, dy, ref
    return 1 if fails else 0



if __name__ == "__main__":
    sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
    import gpu_cases
    sys.exit(gpu_cases.main(__doc__, lambda: [(c[0], graph(*c))
                                              for c in cases()], run))
