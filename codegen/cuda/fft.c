/* fft.c: fft (c64, forward or inverse, norm backward / forward /
 * ortho) on the GPU (cuda.h, docs/gpu.md), every length the CPU
 * accepts, over the rows of the last axis.
 *
 * A first kernel writes the n roots w_t = exp(-+2 pi i t / n), t < n,
 * into the node's workspace scratch, each computed in double and
 * rounded to float once: the twiddle precision of the CPU's tables
 * (runtime/fft/fft_tables.c). Then, per row:
 * - n a power of two, 2 <= n <= FFT_SMEM: one block per row runs an
 *   iterative radix-2 transform in a shared array of n elements
 *   (rlx.fft.smem.N; bit-reversed load,
 *   log2 n butterfly stages between barriers, w of stage len at
 *   t = pos n / len), f32 arithmetic as the CPU's stages;
 * - any other n: one thread per output element k sums x_j w_(jk mod n)
 *   over j in order, products and sum in double (the exact products of
 *   the float operands), rounded to float once: O(n^2) work per row
 *   instead of the CPU's mixed radix / Bluestein, but at least as
 *   accurate. Lengths above FFT_DFT_MAX are refused.
 * The scale (1/n or 1/sqrt(n), in float as the CPU's) multiplies each
 * result. Every output comes from one thread or a fixed butterfly
 * network: the same bits every run.
 * Dynamic sizes (docs/gpu.md): the leading axes, bounded or not (the
 * rows a size read at run time: the radix-2 grid is one block per row,
 * the direct one a guarded thread per element, both computed at launch,
 * none for 0 rows; the roots and their scratch depend on n alone; rows
 * without a bound making a grid of 2^31 or more blocks are the entry's
 * RLX_ERR_SIZE, as for every grid). The transform length is static (its
 * shape rule, as on the CPU).
 */
#include "codegen/cuda/cuda.h"

#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#define FFT_SMEM 4096     /* c64 elements of the shared-memory transform */
#define FFT_DFT_MAX 65536 /* longest direct transform (n^2 work per row) */
#define FFT_BLOCK 256

#define FM(a, b2) LLVMBuildFMul(cg->b, (a), (b2), "")
#define FA(a, b2) LLVMBuildFAdd(cg->b, (a), (b2), "")
#define FS(a, b2) LLVMBuildFSub(cg->b, (a), (b2), "")

static LLVMValueRef part(Cg *cg, LLVMValueRef v, int i) {
  return LLVMBuildExtractElement(cg->b, v, cg_i32(cg, i), "");
}

static LLVMValueRef pair(Cg *cg, LLVMValueRef re, LLVMValueRef im) {
  LLVMValueRef v = LLVMGetUndef(cg_stype(cg, DT_C64));
  v = LLVMBuildInsertElement(cg->b, v, re, cg_i32(cg, 0), "");
  return LLVMBuildInsertElement(cg->b, v, im, cg_i32(cg, 1), "");
}

/* a * b of two c64 values, in float: (ar br - ai bi, ar bi + ai br) */
static LLVMValueRef cmul(Cg *cg, LLVMValueRef a, LLVMValueRef b) {
  LLVMValueRef ar = part(cg, a, 0), ai = part(cg, a, 1);
  LLVMValueRef br = part(cg, b, 0), bi = part(cg, b, 1);
  return pair(cg, FS(FM(ar, br), FM(ai, bi)), FA(FM(ar, bi), FM(ai, br)));
}

/* roots[t] = exp(sign 2 pi i t / n), t < n, in double rounded once */
static void roots_kernel(Cu *cu, CgPlan *p, Node *n, int64_t len, bool inv) {
  Cg *cg = cu->dev;
  cu_kernel_begin(cu, p, "fft_roots");
  LLVMValueRef t = cu_gid(cu);
  cu_guard(cu, ult(cu, t, len));
  LLVMValueRef a = LLVMBuildFMul(
      cg->b, LLVMBuildUIToFP(cg->b, t, cg->t_f64, ""),
      cg_const(cg, DT_F64, (inv ? 2 : -2) * 3.14159265358979323846 / (double)len), "");
  LLVMValueRef re = cg_ops_libm(cg, "cos", a), im = cg_ops_libm(cg, "sin", a);
  cg_store(cg, DT_C64, cg_scratch(cg, n), t,
           pair(cg, LLVMBuildFPTrunc(cg->b, re, cg->t_f32, ""),
                LLVMBuildFPTrunc(cg->b, im, cg->t_f32, "")));
  cu_kernel_end(cu, cu_blocks_for(len, EW_BLOCK), EW_BLOCK);
}

/* y = v * scale (both parts) */
static LLVMValueRef scaled(Cg *cg, LLVMValueRef v, float scale) {
  if (scale == 1.0f) return v;
  return FM(v, cg_ops_splat(cg, cg_const(cg, DT_F32, scale), 2));
}

/* one thread per output: y_k = scale sum_j x_j w_(jk mod n) in double */
static void dft_kernel(Cu *cu, CgPlan *p, Node *n, int64_t len, float scale) {
  Cg *cg = cu->dev;
  int64_t N = cu_numel(cu, &n->in[0]->type); /* a size */
  cu_kernel_begin(cu, p, "fft_dft");
  LLVMValueRef i = cu_gid(cu);
  cu_guard(cu, ult(cu, i, N));
  LLVMValueRef k = urem(cu, i, len), base = mul(cu, udiv(cu, i, len), len);
  LLVMValueRef x = cg_buf(cg, n->in[0]), w = cg_scratch(cg, n);
  LLVMValueRef c[3] = {cg_const(cg, DT_F64, 0), cg_const(cg, DT_F64, 0),
                       i64(cu, 0)};
  CgLoop l;
  LLVMValueRef j = cg_loop_begin(cg, &l, i64(cu, 0), i64(cu, len), c, 3);
  LLVMValueRef xv = cg_load(cg, DT_C64, x, add(cu, base, j));
  LLVMValueRef wv = cg_load(cg, DT_C64, w, c[2]);
  LLVMValueRef d[4];
  for (int q = 0; q < 4; q++)
    d[q] = LLVMBuildFPExt(cg->b, part(cg, q < 2 ? xv : wv, q & 1),
                          cg->t_f64, "");
  c[0] = FS(FA(c[0], FM(d[0], d[2])), FM(d[1], d[3]));
  c[1] = FA(FA(c[1], FM(d[0], d[3])), FM(d[1], d[2]));
  LLVMValueRef t = add(cu, c[2], k);
  c[2] = LLVMBuildSelect(cg->b, ult(cu, t, len), t,
                         LLVMBuildSub(cg->b, t, i64(cu, len), ""), "");
  cg_loop_end(cg, &l, c);
  LLVMValueRef y = pair(cg, LLVMBuildFPTrunc(cg->b, c[0], cg->t_f32, ""),
                        LLVMBuildFPTrunc(cg->b, c[1], cg->t_f32, ""));
  cg_store(cg, DT_C64, cg_buf(cg, n), i, scaled(cg, y, scale));
  cu_kernel_end_n(cu, N, EW_BLOCK, 1, EW_BLOCK);
}

static void barrier(Cg *cg) {
  cg_intrinsic_n(cg, "llvm.nvvm.barrier0", NULL, 0, NULL, 0);
}

/* for j = tid + B it, it < cnt: the loop index j (cnt B items) */
static LLVMValueRef strided(Cu *cu, CgLoop *l, int64_t cnt, int B) {
  LLVMValueRef it = cg_loop_begin(cu->dev, l, i64(cu, 0), i64(cu, cnt), NULL,
                                  0);
  return add(cu, mul(cu, it, B), cu_tid(cu));
}

/* one block per row: radix-2 in shared memory (len a power of two);
 * rows a size */
static void radix2_kernel(Cu *cu, CgPlan *p, Node *n, int64_t rows,
                          int64_t len, float scale) {
  Cg *cg = cu->dev;
  LLVMTypeRef ct = cg_stype(cg, DT_C64);
  int B = len / 2 < FFT_BLOCK ? (int)(len / 2) : FFT_BLOCK, bits = 0;
  while ((int64_t)1 << bits < len) bits++;
  char nm[32];
  snprintf(nm, sizeof nm, "rlx.fft.smem.%lld", (long long)len);
  cu_kernel_begin(cu, p, "fft_radix2");
  LLVMValueRef sm = cu_shared(cg, nm, ct, len, 16);
  LLVMValueRef base = mul(cu, cu_ctaid(cu), len), w = cg_scratch(cg, n);
  CgLoop l;
  LLVMValueRef i = strided(cu, &l, len / B, B);
  LLVMValueRef i32 = LLVMBuildTrunc(cg->b, i, cg->t_i32, "");
  LLVMValueRef r = cg_intrinsic(cg, "llvm.bitreverse", cg->t_i32, &i32, 1);
  r = LLVMBuildLShr(cg->b, r, cg_i32(cg, 32 - bits), "");
  r = LLVMBuildZExt(cg->b, r, cg->t_i64, "");
  LLVMBuildStore(cg->b, cg_load(cg, DT_C64, cg_buf(cg, n->in[0]),
                                add(cu, base, i)),
                 cu_shared_at(cg, sm, ct, r));
  cg_loop_end(cg, &l, NULL);
  barrier(cg);
  for (int64_t m = 2; m <= len; m *= 2) {
    int64_t half = m / 2;
    LLVMValueRef b = strided(cu, &l, len / 2 / B, B);
    LLVMValueRef pos = urem(cu, b, half);
    LLVMValueRef i0 = add(cu, mul(cu, udiv(cu, b, half), m), pos);
    LLVMValueRef p0 = cu_shared_at(cg, sm, ct, i0);
    LLVMValueRef p1 = cu_shared_at(cg, sm, ct, add(cu, i0, i64(cu, half)));
    LLVMValueRef u = LLVMBuildLoad2(cg->b, ct, p0, "");
    LLVMValueRef v = cmul(cg, LLVMBuildLoad2(cg->b, ct, p1, ""),
                          cg_load(cg, DT_C64, w, mul(cu, pos, len / m)));
    LLVMBuildStore(cg->b, FA(u, v), p0);
    LLVMBuildStore(cg->b, FS(u, v), p1);
    cg_loop_end(cg, &l, NULL);
    barrier(cg);
  }
  i = strided(cu, &l, len / B, B);
  cg_store(cg, DT_C64, cg_buf(cg, n), add(cu, base, i),
           scaled(cg, LLVMBuildLoad2(cg->b, ct, cu_shared_at(cg, sm, ct, i),
                                     ""), scale));
  cg_loop_end(cg, &l, NULL);
  cu_kernel_end_n(cu, rows, 1, 1, (unsigned)B);
}

bool cu_fft(Cu *cu, CgPlan *p, Node *n) {
  const Type *t = &n->in[0]->type;
  if (t->dt != DT_C64 || t->rank < 1)
    return cu_unsupported(cu, n, "operand must be a c64 tensor of rank >= 1");
  Type lead = *t; /* the rows: the leading axes, a size */
  lead.rank--;
  int64_t len = t->dims[t->rank - 1], rows = cu_numel(cu, &lead);
  if (len == 0 || rows == 0) return true;
  bool pow2 = len >= 2 && !(len & (len - 1)) && len <= FFT_SMEM;
  if (!pow2 && len > FFT_DFT_MAX)
    return cu_unsupported(cu, n, "fft length above 65536");
  bool inv = ir_attr_bool(n, ATTR_INVERSE, false);
  const char *nw = ir_attr_word(n, ATTR_NORM);
  double scale = 1.0;
  if (nw && !strcmp(nw, "ortho")) scale = 1.0 / sqrt((double)len);
  else if ((nw && !strcmp(nw, "forward")) != inv) scale = 1.0 / (double)len;
  if (pow2 && dim_is_bounded(rows) && dim_bound(rows) > INT32_MAX)
    return cu_unsupported(cu, n, "more than 2^31 - 1 rows");
  roots_kernel(cu, p, n, len, inv);
  if (pow2)
    radix2_kernel(cu, p, n, rows, len, (float)scale);
  else
    dft_kernel(cu, p, n, len, (float)scale);
  return !cu->dev->failed;
}

/* Dynamic leading axes, bounded or not; the length stays static (the
 * shape rule's; the roots, the shared array and the choice of kernel
 * depend on it). */
const char *cu_fft_dyn(Cu *cu, const CgPlan *p, const Node *n) {
  (void)cu, (void)p;
  const Type *t = &n->in[0]->type;
  return t->rank < 1 || dim_is_static(t->dims[t->rank - 1])
             ? NULL : "a dynamic transform length";
}

/* The n roots: static whatever the rows. */
int64_t cu_fft_scratch(Cu *cu, const Node *n) {
  (void)cu;
  const Type *t = &n->in[0]->type;
  return t->rank < 1 || !dim_is_static(t->dims[t->rank - 1])
             ? 0 : t->dims[t->rank - 1] * 8;
}
