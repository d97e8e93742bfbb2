#!/usr/bin/env python3
"""bench_gemm_gpu.py: matmul with --target=cuda against torch.matmul.

  bench_gemm_gpu.py build RLXC LIBRLXRT OUT [--mm SPEC] [--cases REGEX]
                        [--arch SM]
        (here: compile every case, or those matching REGEX, to OUT/NAME.so
        with RLX_CUDA_MM=SPEC, docs/gpu.md, and --gpu-arch=SM if given)
  bench_gemm_gpu.py run OUT                   (GPU host: check, then time)
  bench_gemm_gpu.py check OUT                 (the checks alone, e.g. under
                                                compute-sanitizer)
OUT may instead hold variants, one build each in OUT/VARIANT/: run and
check then go over every variant in name order, and run ends with one
table of every variant's timings (the tile choices of RLX_CUDA_MM side
by side, each against torch.matmul timed alternately with it).

Checks (fresh random inputs, output poisoned with NaN first, three calls
that must give the same bits):
- bf16 / f16 inputs (tensor cores, f32 accumulation, result rounded to
  the input dtype, then cast to f32 in the graph): reference = float64
  product of the same (already rounded) inputs; bound per element
  |got - ref| <= 2^-8 |ref| + 1e-5 max(1, max|ref|) (half an ulp of the
  8-bit-mantissa result plus f32 accumulation).
- f32 with --gpu-tf32: reference = float64 product of the inputs rounded
  to tf32 the way cvt.rna does (nearest, ties away from zero); bound =
  the project's f32 bar, 1e-4 |ref| + 1e-5 max(1, max|ref|).
- f32 exact (CUDA cores): the f32 bar against the float64 product.
Timing: the bench_* GEMMs (4096^3; bf16 logits of GPT-2's shape,
16384 x 768 times the transposed 50257 x 768 embedding, and its
unaligned input gradient 16384 x 50257 times 50257 x 768), rlxc and
torch.matmul alternated, CUDA events around 20 calls (5 for the
logits), 7 rounds each,
medians; TF32 against torch with allow_tf32 and exact f32 against torch
with it off.
"""
import json
import os
import re
import subprocess
import sys

# name: (dtype, a shape, b shape, b transposed in the graph, a transposed,
#        extra rlxc args, cast the result to f32)
CASES = {
    "bf16_1x1x1": ("bf16", [1, 1], [1, 1], False, False, [], True),
    "bf16_17x33x65": ("bf16", [17, 65], [65, 33], False, False, [], True),
    "bf16_128x256x64": ("bf16", [128, 64], [64, 256], False, False, [], True),
    "bf16_bt_200x136x96": ("bf16", [200, 96], [136, 96], True, False, [],
                           True),
    "bf16_at_72x40x48": ("bf16", [48, 72], [48, 40], False, True, [], True),
    "bf16_batch_3x70x90x40": ("bf16", [3, 70, 40], [3, 40, 90], False, False,
                              [], True),
    "bf16_bcast_2x130x129x257": ("bf16", [2, 130, 257], [257, 129], False,
                                 False, [], True),
    "bf16_split_100x72x3000": ("bf16", [100, 3000], [3000, 72], False, False,
                               [], True),
    "bf16_split_batch_2x70x90x1000": ("bf16", [2, 70, 1000], [2, 1000, 90],
                                      False, False, [], True),
    "f16_17x33x65": ("f16", [17, 65], [65, 33], False, False, [], True),
    "f16_128x256x64": ("f16", [128, 64], [64, 256], False, False, [], True),
    "tf32_17x33x65": ("f32", [17, 65], [65, 33], False, False, ["--gpu-tf32"],
                      False),
    "tf32_batch_2x128x256x64": ("f32", [2, 128, 64], [2, 64, 256], False,
                                False, ["--gpu-tf32"], False),
    "tf32_bt_100x72x40": ("f32", [100, 40], [72, 40], True, False,
                          ["--gpu-tf32"], False),
    "f32_17x33x65": ("f32", [17, 65], [65, 33], False, False, [], False),
    "f32_1040x2000x40": ("f32", [1040, 40], [40, 2000], False, False, [],
                         False),
    "f32_t_1040x2000x40": ("f32", [40, 1040], [2000, 40], True, True, [],
                           False),
    "bench_bf16": ("bf16", [4096, 4096], [4096, 4096], False, False, [],
                   False),
    "bench_f32": ("f32", [4096, 4096], [4096, 4096], False, False, [], False),
    "bench_tf32": ("f32", [4096, 4096], [4096, 4096], False, False,
                   ["--gpu-tf32"], False),
    "bench_logits": ("bf16", [16384, 768], [50257, 768], True, False, [],
                     False),
    "bench_logits_dx": ("bf16", [16384, 50257], [50257, 768], False, False,
                        [], False),
    # GPT-2's weight gradients x^T dy (few output tiles: K split)
    "bench_dw_768x768": ("bf16", [16384, 768], [16384, 768], False, True, [],
                         False),
    "bench_dw_768x3072": ("bf16", [16384, 768], [16384, 3072], False, True,
                          [], False),
    "bench_dw_3072x768": ("bf16", [16384, 3072], [16384, 768], False, True,
                          [], False),
}


def shape(s):
    return ", ".join(map(str, s))


def graph(name, c):
    dt, sa, sb, bt, at, _, cast = c
    lines = ["graph %s {" % name,
             "  input %%a: %s[%s]" % (dt, shape(sa)),
             "  input %%b: %s[%s]" % (dt, shape(sb))]
    a, b = "%a", "%b"
    if at:
        r = len(sa)
        perm = list(range(r - 2)) + [r - 1, r - 2]
        lines.append("  %%at = transpose(%%a, perm=[%s])" % shape(perm))
        a = "%at"
    if bt:
        r = len(sb)
        perm = list(range(r - 2)) + [r - 1, r - 2]
        lines.append("  %%bt = transpose(%%b, perm=[%s])" % shape(perm))
        b = "%bt"
    lines.append("  %%c = matmul(%s, %s)" % (a, b))
    if cast:
        lines.append("  %d = cast(%c, to=f32)")
    lines += ["  return %s" % ("%d" if cast else "%c"), "}", ""]
    return "\n".join(lines)


def build(rlxc, rt, out, *opts):
    os.makedirs(out, exist_ok=True)
    env, pick, extra = dict(os.environ), ".*", []
    for i in range(0, len(opts), 2):
        if opts[i] == "--mm":
            env["RLX_CUDA_MM"] = opts[i + 1]
        elif opts[i] == "--arch":
            extra = ["--gpu-arch=" + opts[i + 1]]
        elif opts[i] == "--cases":
            pick = opts[i + 1]
        else:
            sys.exit("build: unknown option %s" % opts[i])
    meta = {}
    for name, c in CASES.items():
        if not re.search(pick, name):
            continue
        src = os.path.join(out, name + ".rlx")
        open(src, "w").write(graph(name, c))
        obj = os.path.join(out, name + ".o")
        subprocess.run([rlxc, src, "--target=cuda", "-o", obj] + c[5] +
                       extra, check=True, env=env)
        hdr = open(os.path.join(out, name + ".h")).read()
        ws = int(re.search(r"%s_WORKSPACE_BYTES (\d+)" % name, hdr).group(1))
        subprocess.run(["cc", "-shared", "-o", os.path.join(out, name + ".so"),
                        obj, rt, "-lm", "-lpthread", "-ldl"], check=True)
        for ext in (".o", ".h", ".rlx"):
            os.remove(os.path.join(out, name + ext))
        meta[name] = {"ws": ws}
    json.dump(meta, open(os.path.join(out, "cases.json"), "w"))


def variants(out):
    """(label, dir) of every build under out: out itself or its subdirs."""
    if os.path.exists(os.path.join(out, "cases.json")):
        return [("", out)]
    return [(d, os.path.join(out, d)) for d in sorted(os.listdir(out))
            if os.path.exists(os.path.join(out, d, "cases.json"))]


def run(out, bench=True):
    fails, table = 0, []
    for label, d in variants(out):
        if label:
            print("== variant %s" % label, flush=True)
        f, rows = run_one(d, bench)
        fails += f
        table += [(label,) + r for r in rows]
    if table:
        print("%-22s %-16s %9s %8s %9s %8s %6s %9s" % (
            "variant", "gemm", "rlxc ms", "TFLOP/s", "torch ms", "TFLOP/s",
            "ratio", "rel diff"))
        for r in table:
            print("%-22s %-16s %9.3f %8.1f %9.3f %8.1f %6.2f %9.2e" % r)
    print("checks: %d failed" % fails)
    return 1 if fails else 0


def run_one(out, bench):
    import torch
    sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
    from gpu_rounds import load_case, timed
    dev = torch.device("cuda")
    meta = json.load(open(os.path.join(out, "cases.json")))
    tdt = {"bf16": torch.bfloat16, "f16": torch.float16, "f32": torch.float32}

    def tf32(x):
        i = x.contiguous().view(torch.int32)
        return ((i + 0x1000) & ~0x1fff).view(torch.float32)

    def mat(t, transpose):
        return t.transpose(-1, -2) if transpose else t

    fails = 0
    for name, c in CASES.items():
        if name.startswith("bench") or name not in meta:
            continue
        dt, sa, sb, bt, at, args, cast = c
        call = load_case(out, name, meta[name]["ws"])
        a = torch.randn(sa, device=dev).to(tdt[dt])
        b = torch.randn(sb, device=dev).to(tdt[dt])
        ea, eb = mat(a, at).double(), mat(b, bt).double()
        if "--gpu-tf32" in args:
            ea, eb = mat(tf32(a), at).double(), mat(tf32(b), bt).double()
        ref = torch.matmul(ea, eb)
        o = torch.full(ref.shape, float("nan"), device=dev,
                       dtype=torch.float32 if cast else tdt[dt])
        bits = []
        for _ in range(3):
            o.fill_(float("nan"))
            call([a, b], [o])
            torch.cuda.synchronize()
            bits.append(o.clone())
        same = all(torch.equal(x.view(torch.int16 if x.element_size() == 2
                                      else torch.int32),
                               bits[0].view(torch.int16
                                            if x.element_size() == 2
                                            else torch.int32))
                   for x in bits)
        got = o.double()
        mx = max(1.0, ref.abs().max().item())
        rel = 2.0 ** -8 if dt != "f32" else 1e-4
        bound = rel * ref.abs() + 1e-5 * mx
        err = (got - ref).abs()
        ok = bool(torch.isfinite(got).all()) and bool((err <= bound).all()) \
            and same
        rn = ((got - ref).norm() / ref.norm()).item() if ref.norm() else 0.0
        print("%-26s %s max|err| %.3g (bound at worst %.3g) rel-norm %.2e "
              "bits-stable %s" % (name, "ok  " if ok else "FAIL",
                                  err.max().item(),
                                  (err / bound).max().item(), rn, same))
        fails += not ok

    if not bench:
        return fails, []
    print("GPU:", torch.cuda.get_device_name(), "torch", torch.__version__)
    print(subprocess.run(["nvidia-smi", "--query-gpu=driver_version",
                          "--format=csv,noheader"], capture_output=True,
                         text=True).stdout.strip())

    rows = []
    for name, c in CASES.items():
        if not name.startswith("bench") or name not in meta:
            continue
        dt, sa, sb, bt, at, args, _ = c
        call = load_case(out, name, meta[name]["ws"])
        a = torch.randn(sa, device=dev).to(tdt[dt])
        b = torch.randn(sb, device=dev).to(tdt[dt])
        ma, mb = mat(a, at), mat(b, bt)
        flop = 2.0 * ma.shape[0] * ma.shape[1] * mb.shape[1]
        o = torch.empty(ma.shape[0], mb.shape[1], device=dev, dtype=tdt[dt])
        torch.backends.cuda.matmul.allow_tf32 = "--gpu-tf32" in args
        ot = torch.empty_like(o)
        ours = lambda: call([a, b], [o])
        theirs = lambda: torch.matmul(ma, mb, out=ot)
        ours(), theirs()
        torch.cuda.synchronize()
        t1, t2, it = [], [], 20 if flop < 2e11 else 5
        for _ in range(7):
            t1.append(timed(ours, it))
            t2.append(timed(theirs, it))
        m1, m2 = sorted(t1)[3], sorted(t2)[3]
        d = (o.double() - ot.double()).norm() / ot.double().norm()
        rows.append((name, m1, flop / m1 / 1e9, m2, flop / m2 / 1e9,
                     m2 / m1, d.item()))
        del a, b, o, ot
        torch.cuda.empty_cache()
    return fails, rows


if __name__ == "__main__":
    if sys.argv[1] == "build":
        build(*sys.argv[2:])
    else:
        sys.exit(run(sys.argv[2], sys.argv[1] == "run"))
