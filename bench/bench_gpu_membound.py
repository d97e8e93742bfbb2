#!/usr/bin/env python3
"""bench_gpu_membound.py: the memory-bound kernels of the GPT-2 training
step (--target=cuda) alone, at that step's shapes (B=16, T=1024, width
768, vocabulary 50,257), against the bytes they must move and the
equivalent PyTorch op.

  bench_gpu_membound.py build RLXC LIBRLXRT OUT  (here: every case to
                                                  OUT/NAME.so)
  bench_gpu_membound.py run OUT                  (GPU host: check, time)
  bench_gpu_membound.py check OUT                (the checks alone)

Check (each case, fresh random inputs, outputs poisoned with NaN, two
calls that must give the same bits): against a float64 PyTorch
reference of the same inputs (xent rows: the first 256), the project's
f32 bar 1e-4 |ref| + 1e-5 max(1, max|ref|); bf16 results: 2^-8 |ref|.
Timing: CUDA events around 20 calls, 7 rounds alternating rlxc and
torch, medians. GB/s counts the bytes the op must read and write once
(its ideal traffic), so GB/s / 3,350 (H100 SXM HBM3) is the fraction of
peak; "ideal ms" is those bytes at 3 TB/s.
"""
import json
import os
import re
import subprocess
import sys

B, V, D = 16 * 1024, 50257, 768
P = V * D  # the token embedding's parameters (AdamW update of wte)

# name: (graph body lines, inputs [(name, dtype, shape)], outputs
#        [(dtype, shape)], bytes moved once)
CASES = {
    "xent": (["%e = softmax_cross_entropy(%l, %y)"],
             [("l", "f32", [B, V]), ("y", "i32", [B])],
             ["e"], B * V * 4 + B * 8),
    "xent_backward": (["%g = softmax_cross_entropy_backward(%l, %y, %d)"],
                      [("l", "f32", [B, V]), ("y", "i32", [B]),
                       ("d", "f32", [B])],
                      ["g"], 2 * B * V * 4 + B * 8),
    # the GPT-2 step's forms: bf16 logits read through their f32 cast
    # (fused into the loads), the gradient stored as bf16
    "xent_bf16": (["%e = softmax_cross_entropy(cast(%l, to=f32), %y)"],
                  [("l", "bf16", [B, V]), ("y", "i32", [B])],
                  ["e"], B * V * 2 + B * 8),
    "xent_backward_bf16": (["%g = cast(softmax_cross_entropy_backward("
                            "cast(%l, to=f32), %y, %d), to=bf16)"],
                           [("l", "bf16", [B, V]), ("y", "i32", [B]),
                            ("d", "f32", [B])],
                           ["g"], 2 * B * V * 2 + B * 8),
    # a block's GELU gradient: [B, 4 D] bf16
    "gelu_bwd_bf16": (["%g = activation_backward(%x, %dy, kind=gelu_tanh)"],
                      [("x", "bf16", [B, 4 * D]), ("dy", "bf16", [B, 4 * D])],
                      ["g"], 3 * B * 4 * D * 2),
    "add": (["%s = add(%a, %b)"],
            [("a", "f32", [B, D]), ("b", "f32", [B, D])],
            ["s"], 3 * B * D * 4),
    "cast_bf16": (["%c = cast(%a, to=bf16)"], [("a", "f32", [B, D])],
                  ["c"], B * D * 6),
    # gamma's gradient of a block's layer_norm (stage 1: the rows'
    # statistics, then the column sums): ideal = reading x and dy once
    "ln_gamma": (["%g = layer_norm_backward_gamma(%x, %dy)"],
                 [("x", "f32", [B, D]), ("dy", "f32", [B, D])], ["g"],
                 2 * B * D * 4 + D * 4),
    # AdamW's first moment of wte: m' = 0.9 m + 0.1 g
    "adam_m": (["%mn = add(mul(%m, 0.9), mul(%g, 0.1))"],
               [("m", "f32", [P]), ("g", "f32", [P])], ["mn"], 3 * P * 4),
}


def graph(name, c):
    body, ins, outs, _ = c
    lines = ["graph %s {" % name]
    lines += ["  input %%%s: %s[%s]" % (n, dt, ", ".join(map(str, s)))
              for n, dt, s in ins]
    lines += ["  " + l for l in body]
    lines += ["  return " + ", ".join("%" + o for o in outs), "}", ""]
    return "\n".join(lines)


def build(rlxc, rt, out):
    os.makedirs(out, exist_ok=True)
    meta = {}
    for name, c in CASES.items():
        src = os.path.join(out, name + ".rlx")
        open(src, "w").write(graph(name, c))
        obj = os.path.join(out, name + ".o")
        subprocess.run([rlxc, src, "--target=cuda", "-o", obj], check=True)
        hdr = open(os.path.join(out, name + ".h")).read()
        ws = int(re.search(r"%s_WORKSPACE_BYTES (\d+)" % name, hdr).group(1))
        subprocess.run(["cc", "-shared", "-o", os.path.join(out, name + ".so"),
                        obj, rt, "-lm", "-lpthread", "-ldl"], check=True)
        for ext in (".o", ".h"):
            os.remove(os.path.join(out, name + ext))
        meta[name] = {"ws": ws}
    json.dump(meta, open(os.path.join(out, "cases.json"), "w"))


def run(out, bench=True):
    import torch
    sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
    from gpu_rounds import load_case, timed
    import torch.nn.functional as F
    dev = torch.device("cuda")
    meta = json.load(open(os.path.join(out, "cases.json")))
    tdt = {"bf16": torch.bfloat16, "f32": torch.float32, "i32": torch.int32}

    def inputs(name):
        ins = []
        for n, dt, s in CASES[name][1]:
            if dt == "i32":
                ins.append(torch.randint(0, V, s, device=dev,
                                         dtype=torch.int32))
            else:
                ins.append((torch.randn(s, device=dev) *
                            (4.0 if n == "l" else 1.0)).to(tdt[dt]))
        return ins

    def xent_bwd_torch(l, y, d):  # eager: softmax, one-hot subtract, scale
        p = torch.softmax(l, 1)
        p[torch.arange(l.shape[0], device=dev), y.long()] -= 1
        return p.mul_(d[:, None])

    def torch_op(name, ins):
        l = ins[0].float() if ins[0].dtype == torch.bfloat16 else ins[0]
        if name.startswith("xent_backward"):
            g = xent_bwd_torch(l, *ins[1:])
            return g.to(ins[0].dtype) if ins[0].dtype == torch.bfloat16 else g
        if name.startswith("xent"):
            return F.cross_entropy(l, ins[1].long(), reduction="none")
        if name == "gelu_bwd_bf16":  # eager's kernel
            return torch.ops.aten.gelu_backward(ins[1], ins[0],
                                                approximate="tanh")
        if name == "add":
            return ins[0] + ins[1]
        if name == "cast_bf16":
            return ins[0].to(torch.bfloat16)
        if name == "ln_gamma" and ins[0].dtype == torch.float64:
            x, dy = ins
            mu = x.mean(1, keepdim=True)
            var = ((x - mu) ** 2).mean(1, keepdim=True)
            return (dy * (x - mu) / torch.sqrt(var + 1e-5)).sum(0)
        if name == "ln_gamma":  # torch's kernel, given mean and rstd
            x, dy = ins
            return torch.ops.aten.native_layer_norm_backward(
                dy, x, [D], ln_stats[0], ln_stats[1], ln_stats[2], None,
                [False, True, False])[1]
        return ins[0] * 0.9 + ins[1] * 0.1

    def outputs(name, ins):
        r = torch_op(name, [x[:256] if name.startswith("xent") else x
                            for x in ins])
        xent = name.startswith("xent")  # computed on 256 of the B rows
        shape = ([B] if xent and r.dim() == 1 else [B, V] if xent
                 else list(r.shape))
        return [torch.full(shape, float("nan"), device=dev, dtype=r.dtype)]

    ln_stats = []

    def prepare(name, ins):  # torch's saved statistics for ln_gamma
        if name == "ln_gamma":
            _, m, r = torch.ops.aten.native_layer_norm(ins[0], [D], None,
                                                       None, 1e-5)
            ln_stats[:] = [m, r, torch.ones(D, device=dev)]

    fails = 0
    for name in CASES:
        call = load_case(out, name, meta[name]["ws"])
        ins = inputs(name)
        prepare(name, ins)
        outs = outputs(name, ins)
        bits = []
        for _ in range(2):
            outs[0].fill_(float("nan"))
            call(ins, outs)
            torch.cuda.synchronize()
            bits.append(outs[0].clone())
        same = torch.equal(bits[0].view(torch.uint8),
                           bits[1].view(torch.uint8))
        sub = name.startswith("xent")
        ref = torch_op(name, [x[:256].double() if sub and x.is_floating_point()
                              else x[:256] if sub else x.double()
                              for x in ins]).double()
        got = outs[0][:256].double() if sub else outs[0].double()
        mx = max(1.0, ref.abs().max().item())
        rel = 2.0 ** -8 if outs[0].dtype == torch.bfloat16 else 1e-4
        err = (got - ref).abs()
        bound = rel * ref.abs() + 1e-5 * mx
        ok = bool(torch.isfinite(got).all()) and bool((err <= bound).all()) \
            and same
        print("%-14s %s max|err| %.3g (bound at worst %.3g) bits-stable %s"
              % (name, "ok  " if ok else "FAIL", err.max().item(),
                 (err / bound).max().item(), same), flush=True)
        fails += not ok
        del ins, outs, bits, ref, got, err, bound
        torch.cuda.empty_cache()
    if not bench:
        return 1 if fails else 0

    print("GPU:", torch.cuda.get_device_name(), "torch", torch.__version__)
    print("driver", subprocess.run(["nvidia-smi", "--query-gpu=driver_version",
                                    "--format=csv,noheader"],
                                   capture_output=True, text=True)
          .stdout.strip())

    print("%-14s %9s %8s %9s %8s %9s %6s" % ("kernel", "rlxc ms", "GB/s",
                                             "torch ms", "GB/s", "ideal ms",
                                             "ratio"))
    for name, c in CASES.items():
        call = load_case(out, name, meta[name]["ws"])
        ins = inputs(name)
        prepare(name, ins)
        outs = outputs(name, ins)
        ours = lambda: call(ins, outs)
        theirs = lambda: torch_op(name, ins)
        ours(), theirs()
        torch.cuda.synchronize()
        t1, t2 = [], []
        for _ in range(7):
            t1.append(timed(ours))
            t2.append(timed(theirs))
        m1, m2 = sorted(t1)[3], sorted(t2)[3]
        gb = c[3] / 1e9
        print("%-14s %9.3f %8.0f %9.3f %8.0f %9.3f %6.2f"
              % (name, m1, gb / m1 * 1e3, m2, gb / m2 * 1e3, gb / 3.0,
                 m2 / m1), flush=True)
        del ins, outs
        torch.cuda.empty_cache()
    return 1 if fails else 0


if __name__ == "__main__":
    if sys.argv[1] == "build":
        build(*sys.argv[2:5])
    else:
        sys.exit(run(sys.argv[2], sys.argv[1] == "run"))
