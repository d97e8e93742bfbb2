#!/usr/bin/env python3
"""bench_attention_gpu.py: bf16 attention with --target=cuda against
torch.nn.functional.scaled_dot_product_attention (flash backend).

  bench_attention_gpu.py build RLXC LIBRLXRT OUT [SM]  (here: compile
        every case to OUT/NAME.so, with --gpu-arch=SM when given: sm_90a
        for the wgmma kernels)
  bench_attention_gpu.py run OUT [ROUNDS [REGEX]]  (GPU host: check and
        time the cases whose name REGEX matches, default all)

Cases: head dim 64 and 128, L = 1024, 2048, 4096, 8192 (Lq = Lk), causal
and not, B = 16384 / L sequences of H = 2048 / d heads ([B, H, L, d],
bf16), the forward alone (`fwd`: o) and forward + backward (`fb`: o,
dq, dk, dv from dO as attention_backward nodes, what a training step
runs: one attention group, the forward saving its lse, docs/gpu.md). Check first, per case: o (and dq, dk, dv) against torch's flash
kernels on the same inputs, max |err| / max |ref| (both bf16 results of
f32-accumulated sums: a few 1e-3 expected). Timing: rlxc and torch
alternated (bench/gpu_rounds.py), ROUNDS (5) rounds of enough calls
for ~0.2 s, median and minimum ms per call; TFLOP/s count only the
unmasked work: forward 4 B H d * (allowed (i, j) pairs), backward 2.5
times that (the FlashAttention-2 papers' convention).
"""
import json
import os
import re
import statistics
import sys

DIMS = (64, 128)
LENS = (1024, 2048, 4096, 8192)


def cases():
    """Forwards first, then forward + backward, short to long."""
    for mode in ("fwd", "fb"):
        for L in LENS:
            for d in DIMS:
                for causal in (False, True):
                    name = "attn_%s_d%d_L%d%s" % (mode, d, L,
                                                  "_causal" if causal else "")
                    yield name, d, L, causal, mode


def shape(d, L):
    return 16384 // L, 2048 // d, L, d


def graph(name, d, L, causal, mode):
    s = "bf16[%s]" % ", ".join(map(str, shape(d, L)))
    mask = "causal" if causal else "none"
    ins = "qkv" + ("y" if mode == "fb" else "")
    lines = ["graph %s {" % name] + ["  input %%%s: %s" % (x, s) for x in ins]
    lines.append("  %%o = attention(%%q, %%k, %%v, mask=%s)" % mask)
    for w in "qkv" if mode == "fb" else "":
        lines.append("  %%d%s = attention_backward(%%q, %%k, %%v, %%y, "
                     "wrt=%s, mask=%s)" % (w, w, mask))
    ret = "%o, %dq, %dk, %dv" if mode == "fb" else "%o"
    return "\n".join(lines + ["  return %s" % ret, "}", ""])


def pairs(L, causal):
    return L * (L + 1) // 2 if causal else L * L


def run(out, rounds, match=None):
    import torch
    import torch.nn.functional as F
    from torch.nn.attention import SDPBackend, sdpa_kernel
    here = os.path.dirname(os.path.abspath(__file__))
    for x in (here, os.path.join(here, "..", "bench"),
              os.path.join(here, "..", "samples")):
        sys.path.insert(0, x)
    import gpu_torch_interop as gi
    from gpu_rounds import header, time_rounds, timed
    gi.DTYPES[3] = torch.bfloat16
    dev = torch.device("cuda")
    s = torch.cuda.current_stream()
    print(header(rounds, 0))
    print("%-28s %9s %9s %9s %9s %7s %7s %9s" % (
        "case", "rlxc ms", "(min)", "torch ms", "(min)", "rlxc TF", "torch TF",
        "rlxc/torch"))
    results, fails = [], 0
    for name, d, L, causal, mode in cases():
        so = os.path.join(out, name + ".so")
        if not os.path.exists(so) or (match and not re.search(match, name)):
            continue
        torch.manual_seed(0)
        ins = [torch.randn(shape(d, L), device=dev).to(torch.bfloat16)
               for _ in range(4 if mode == "fb" else 3)]
        e = gi.GpuEntry(so, name)
        outs = [torch.empty(sh, dtype=dt, device=dev)
                for _, dt, sh in e.outputs()]
        rl = e.bind(ins, outs)
        q, k, v = (t.detach().clone().requires_grad_(mode == "fb")
                   for t in ins[:3])

        def tfn():
            with sdpa_kernel(SDPBackend.FLASH_ATTENTION):
                o = F.scaled_dot_product_attention(q, k, v, is_causal=causal)
                if mode == "fb":
                    q.grad = k.grad = v.grad = None
                    o.backward(ins[3])
            return o
        ro = tfn()
        rl()
        torch.cuda.synchronize()
        refs = [ro.detach()] + ([q.grad, k.grad, v.grad] if mode == "fb"
                                else [])
        errs = [((a.float() - b.float()).abs().max() /
                 b.float().abs().max().clamp(min=1e-30)).item()
                for a, b in zip(outs, refs)]
        ok = all(x < 2e-2 for x in errs)
        fails += not ok
        # calls per round: ~0.2 s of the slower variant
        s.synchronize()
        ms = timed(rl, 1)
        iters = max(1, min(50, int(200 / max(ms, 1e-3))))
        r = rounds if ms < 2000 else 1
        times = time_rounds([("rlxc", rl), ("torch", tfn)], s, r, iters, 1)
        B, H = shape(d, L)[:2]
        flop = 4.0 * B * H * d * pairs(L, causal) * (3.5 if mode == "fb"
                                                      else 1.0)
        med = {n: statistics.median(t) for n, t in times.items()}
        mn = {n: min(t) for n, t in times.items()}
        tf = {n: flop / (med[n] * 1e-3) / 1e12 for n in med}
        print("%-28s %9.3f %9.3f %9.3f %9.3f %7.1f %7.1f %9.2f  err %s %s"
              % (name, med["rlxc"], mn["rlxc"], med["torch"], mn["torch"],
                 tf["rlxc"], tf["torch"], tf["rlxc"] / tf["torch"],
                 " ".join("%.1e" % x for x in errs),
                 "ok" if ok else "FAIL"), flush=True)
        results.append({"case": name, "ms": med, "min_ms": mn, "tflops": tf,
                        "err": errs, "ok": ok})
        del e, rl, outs, ins, q, k, v, ro, refs
        torch.cuda.empty_cache()
    json.dump(results, open(os.path.join(os.environ.get("OUT", out),
                                         "attention_bench.json"), "w"),
              indent=1)
    return 1 if fails else 0



if __name__ == "__main__":
    sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
    import gpu_cases
    sys.exit(gpu_cases.main(__doc__, lambda: [(c[0], graph(*c))
                                              for c in cases()], run))
