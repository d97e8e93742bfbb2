/* random.c: the GPU kernels of rng_uniform, rng_normal and sample
 * (cuda.h), bit for bit the mapping of docs/random.md that the CPU
 * runtime implements (runtime/random/random.c): the same Philox-4x32-10
 * blocks, counters and keys, the same f32 conversions, and for
 * rng_normal the same f32 operation sequence (Cephes log and sin/cos
 * polynomials, IEEE sqrt; plain fmul/fadd, which the NVPTX backend does
 * not contract into fma), so the draws are bit-identical to the CPU's.
 *
 * - rng_uniform / rng_normal: one thread per Philox block (4 elements).
 * - sample: one thread per logit ranks it (s = x / T in f64, ties to
 *   the smaller index, as rlx_topk_f64) and writes its index to the
 *   row's rank slot in the node's scratch (N C i64, then N C f64 for
 *   the probabilities); then one thread per row does the CPU's
 *   sequential walk: exp(s - max) in rank order, the top-p prefix, the
 *   pick. exp is libclc's f64 exp (the CPU's is libm's; both within an
 *   ulp, so a pick can differ only when u lands within an ulp of a
 *   class boundary). A NaN logit makes the row's thread skip it and
 *   record RLX_ERR_INVALID, the CPU's code (docs/gpu.md).
 */
#include "codegen/cuda/cuda.h"

#define PHILOX_M0 0xD2511F53u
#define PHILOX_M1 0xCD9E8D57u
#define PHILOX_W0 0x9E3779B9u
#define PHILOX_W1 0xBB67AE85u

enum { STREAM_UNIFORM = 0, STREAM_NORMAL = 1, STREAM_SAMPLE = 2 };

static LLVMValueRef u32(Cg *cg, uint32_t v) {
  return LLVMConstInt(cg->t_i32, v, 0);
}

/* The 4 words of Philox block j (i64) of `stream` under key seed. */
static void philox(Cg *cg, LLVMValueRef j, uint32_t stream, uint64_t seed,
                   LLVMValueRef w[4]) {
  LLVMBuilderRef b = cg->b;
  LLVMValueRef c[4] = {
      LLVMBuildTrunc(b, j, cg->t_i32, ""),
      LLVMBuildTrunc(b, LLVMBuildLShr(b, j, cg_i64(cg, 32), ""), cg->t_i32,
                     ""),
      u32(cg, stream), u32(cg, 0)};
  for (uint32_t r = 0; r < 10; r++) {
    uint32_t k0 = (uint32_t)seed + r * PHILOX_W0;
    uint32_t k1 = (uint32_t)(seed >> 32) + r * PHILOX_W1;
    LLVMValueRef p0 = LLVMBuildMul(b, LLVMBuildZExt(b, c[0], cg->t_i64, ""),
                                   cg_i64(cg, PHILOX_M0), "");
    LLVMValueRef p1 = LLVMBuildMul(b, LLVMBuildZExt(b, c[2], cg->t_i64, ""),
                                   cg_i64(cg, PHILOX_M1), "");
    LLVMValueRef h0 = LLVMBuildTrunc(
        b, LLVMBuildLShr(b, p0, cg_i64(cg, 32), ""), cg->t_i32, "");
    LLVMValueRef h1 = LLVMBuildTrunc(
        b, LLVMBuildLShr(b, p1, cg_i64(cg, 32), ""), cg->t_i32, "");
    LLVMValueRef n0 = LLVMBuildXor(b, LLVMBuildXor(b, h1, c[1], ""),
                                   u32(cg, k0), "");
    LLVMValueRef n2 = LLVMBuildXor(b, LLVMBuildXor(b, h0, c[3], ""),
                                   u32(cg, k1), "");
    c[1] = LLVMBuildTrunc(b, p1, cg->t_i32, "");
    c[3] = LLVMBuildTrunc(b, p0, cg->t_i32, "");
    c[0] = n0;
    c[2] = n2;
  }
  for (int k = 0; k < 4; k++) w[k] = c[k];
}

/* f32 arithmetic, one rounding per operation, as the C source reads */
static LLVMValueRef fc(Cg *cg, float v) {
  return LLVMConstReal(cg->t_f32, (double)v);
}
static LLVMValueRef fm(Cg *cg, LLVMValueRef a, LLVMValueRef b) {
  return LLVMBuildFMul(cg->b, a, b, "");
}
static LLVMValueRef fa(Cg *cg, LLVMValueRef a, LLVMValueRef b) {
  return LLVMBuildFAdd(cg->b, a, b, "");
}
static LLVMValueRef fs(Cg *cg, LLVMValueRef a, LLVMValueRef b) {
  return LLVMBuildFSub(cg->b, a, b, "");
}
static LLVMValueRef bits_f(Cg *cg, LLVMValueRef i) {
  return LLVMBuildBitCast(cg->b, i, cg->t_f32, "");
}
static LLVMValueRef f_bits(Cg *cg, LLVMValueRef f) {
  return LLVMBuildBitCast(cg->b, f, cg->t_i32, "");
}
static LLVMValueRef sitof(Cg *cg, LLVMValueRef i) {
  return LLVMBuildSIToFP(cg->b, i, cg->t_f32, "");
}
static LLVMValueRef shr(Cg *cg, LLVMValueRef w, uint32_t s) {
  return LLVMBuildLShr(cg->b, w, u32(cg, s), "");
}

/* (float)(int32_t)(w >> 8) * 2^-24 */
static LLVMValueRef u01(Cg *cg, LLVMValueRef w) {
  return fm(cg, sitof(cg, shr(cg, w, 8)), fc(cg, 0x1p-24f));
}

/* log01 of random.c: ln x for x in (0, 1]. */
static LLVMValueRef log01(Cg *cg, LLVMValueRef x) {
  LLVMBuilderRef b = cg->b;
  LLVMValueRef i = f_bits(cg, x);
  LLVMValueRef e = LLVMBuildSub(b, shr(cg, i, 23), u32(cg, 126), "");
  i = LLVMBuildOr(b, LLVMBuildAnd(b, i, u32(cg, 0x7fffffu), ""),
                  u32(cg, 0x3f000000u), "");
  LLVMValueRef m = bits_f(cg, i);
  LLVMValueRef lo = LLVMBuildZExt(
      b, LLVMBuildFCmp(b, LLVMRealOLT, m, fc(cg, 0.70710678f), ""),
      cg->t_i32, "");
  e = LLVMBuildSub(b, e, lo, "");
  LLVMValueRef f = fs(cg, fm(cg, m, sitof(cg, LLVMBuildAdd(b, u32(cg, 1), lo,
                                                          ""))),
                      fc(cg, 1.0f));
  LLVMValueRef z = fm(cg, f, f), fe = sitof(cg, e);
  static const float P[9] = {
      7.0376836292e-2f, -1.1514610310e-1f, 1.1676998740e-1f,
      -1.2420140846e-1f, 1.4249322787e-1f, -1.6668057665e-1f,
      2.0000714765e-1f, -2.4999993993e-1f, 3.3333331174e-1f};
  LLVMValueRef y = fc(cg, P[0]);
  for (int k = 1; k < 9; k++) /* y * f - c as y * f + (-c): same bits */
    y = P[k] < 0 ? fs(cg, fm(cg, y, f), fc(cg, -P[k]))
                 : fa(cg, fm(cg, y, f), fc(cg, P[k]));
  y = fs(cg, fs(cg, fm(cg, fm(cg, y, f), z), fm(cg, fc(cg, 2.12194440e-4f),
                                                fe)),
         fm(cg, fc(cg, 0.5f), z));
  return fa(cg, fa(cg, f, y), fm(cg, fc(cg, 0.693359375f), fe));
}

/* sincos_turn of random.c: cos and sin of 2 pi k 2^-24, k < 2^24. */
static void sincos_turn(Cg *cg, LLVMValueRef k, LLVMValueRef *c,
                        LLVMValueRef *s) {
  LLVMBuilderRef b = cg->b;
  LLVMValueRef q = shr(cg, LLVMBuildAdd(b, k, u32(cg, 0x200000u), ""), 22);
  LLVMValueRef a = fm(cg, sitof(cg, LLVMBuildSub(
                              b, k, LLVMBuildShl(b, q, u32(cg, 22), ""), "")),
                      fc(cg, 6.28318530717958647692f * 0x1p-24f));
  LLVMValueRef z = fm(cg, a, a);
  LLVMValueRef sn = fa(cg, a, fm(cg, fm(cg, a, z),
                                 fs(cg, fm(cg, fa(cg, fm(cg, fc(cg, -1.9515295891e-4f), z),
                                                  fc(cg, 8.3321608736e-3f)),
                                           z),
                                    fc(cg, 1.6666654611e-1f))));
  LLVMValueRef cs = fa(cg, fs(cg, fc(cg, 1.0f), fm(cg, fc(cg, 0.5f), z)),
                       fm(cg, fm(cg, z, z),
                          fa(cg, fm(cg, fs(cg, fm(cg, fc(cg, 2.443315711809948e-5f), z),
                                           fc(cg, 1.388731625493765e-3f)),
                                    z),
                             fc(cg, 4.166664568298827e-2f))));
  LLVMValueRef bc = f_bits(cg, cs), bs = f_bits(cg, sn);
  LLVMValueRef odd = LLVMBuildSub(b, u32(cg, 0),
                                  LLVMBuildAnd(b, q, u32(cg, 1), ""), "");
  LLVMValueRef nodd = LLVMBuildNot(b, odd, "");
  LLVMValueRef c0 = LLVMBuildOr(b, LLVMBuildAnd(b, bs, odd, ""),
                                LLVMBuildAnd(b, bc, nodd, ""), "");
  LLVMValueRef s0 = LLVMBuildOr(b, LLVMBuildAnd(b, bc, odd, ""),
                                LLVMBuildAnd(b, bs, nodd, ""), "");
  LLVMValueRef q1 = shr(cg, q, 1);
  LLVMValueRef sc = LLVMBuildShl(
      b, LLVMBuildAnd(b, LLVMBuildXor(b, q, q1, ""), u32(cg, 1), ""),
      u32(cg, 31), "");
  LLVMValueRef ss = LLVMBuildShl(b, LLVMBuildAnd(b, q1, u32(cg, 1), ""),
                                 u32(cg, 31), "");
  *c = bits_f(cg, LLVMBuildXor(b, c0, sc, ""));
  *s = bits_f(cg, LLVMBuildXor(b, s0, ss, ""));
}

/* Box-Muller on the word pair (w0, w1): v[0] = r cos, v[1] = r sin. */
static void normal_pair(Cg *cg, LLVMValueRef w0, LLVMValueRef w1,
                        LLVMValueRef *v) {
  LLVMValueRef u1 = fm(cg, sitof(cg, LLVMBuildAdd(cg->b, shr(cg, w0, 8),
                                                  u32(cg, 1), "")),
                       fc(cg, 0x1p-24f));
  LLVMValueRef r = fm(cg, fc(cg, -2.0f), log01(cg, u1));
  r = cg_intrinsic(cg, "llvm.sqrt", cg->t_f32, &r, 1);
  LLVMValueRef c, s;
  sincos_turn(cg, shr(cg, w1, 8), &c, &s);
  v[0] = fm(cg, r, c);
  v[1] = fm(cg, r, s);
}

bool cu_rng(Cu *cu, CgPlan *p, Node *n) {
  Cg *cg = cu->dev;
  if (n->type.dt != DT_F32) return cu_bad_dtype(cu, n, n->type.dt);
  int64_t N = cu_numel(cu, &n->type); /* a dynamic batch: a size */
  if (N == 0) return true;
  bool normal = n->op == OP_RNG_NORMAL;
  cu_kernel_begin(cu, p, op_name(n->op));
  LLVMValueRef j = cu_gid(cu);
  cu_guard(cu, ult(cu, mul(cu, j, 4), N)); /* j < ceil(N / 4) */
  LLVMValueRef w[4], v[4];
  philox(cg, j, normal ? STREAM_NORMAL : STREAM_UNIFORM,
         (uint64_t)ir_attr_int(n, ATTR_SEED, 0), w);
  for (int k = 0; k < 4; k += 2) {
    if (normal) {
      normal_pair(cg, w[k], w[k + 1], v + k);
    } else {
      v[k] = u01(cg, w[k]);
      v[k + 1] = u01(cg, w[k + 1]);
    }
  }
  /* elements 4j + k < N: the last block may be partial */
  LLVMValueRef e0 = mul(cu, j, 4), dst = cg_buf(cg, n);
  for (int k = 0; k < 4; k++) {
    LLVMValueRef e = add(cu, e0, i64(cu, k));
    if (k) cu_guard(cu, ult(cu, e, N));
    cg_store(cg, DT_F32, dst, e, v[k]);
  }
  cu_kernel_end_n(cu, N, 4 * EW_BLOCK, 1, EW_BLOCK);
  return true;
}

/* ---- sample ---- */

/* 16 bytes a logit: at the bound of ?rows, or without one a size. */
int64_t cu_sample_scratch(Ctx *ctx, const Node *n) {
  const Type *t = &n->in[0]->type;
  int64_t d;
  if (type_is_bounded(t)) return type_bytes_bound(t) / dt_size(t->dt) * 16;
  return type_numel_dim(ctx, t, &d) == DIM_OK &&
                 dim_mul(ctx, d, 16, &d) == DIM_OK ? d : -1;
}

typedef struct {
  int64_t rows, C, K; /* rows: a size (the scratch laid out for its
                         bound, or for it at run time) */
  double temp, top_p;
  uint64_t seed;
} Smp;

static LLVMValueRef f64c(Cg *cg, double v) {
  return LLVMConstReal(cg->t_f64, v);
}

/* s of logit e in f64: x / T (T > 0), x (T = 0). */
static LLVMValueRef smp_s(Cu *cu, const Smp *S, Node *n, LLVMValueRef e) {
  Cg *cg = cu->dev;
  DType dt = n->in[0]->type.dt;
  LLVMValueRef x = cg_load(cg, dt, cg_buf(cg, n->in[0]), e);
  if (dt == DT_F32) x = LLVMBuildFPExt(cg->b, x, cg->t_f64, "");
  return S->temp > 0 ? LLVMBuildFDiv(cg->b, x, f64c(cg, S->temp), "") : x;
}

/* One thread per logit: idx[row][rank] = i for ranks < K (scratch). */
static void smp_rank(Cu *cu, CgPlan *p, Node *n, const Smp *S) {
  Cg *cg = cu->dev;
  int64_t N;
  dim_mul(cg->ctx, S->rows, S->C, &N);
  cu_kernel_begin(cu, p, "sample_rank");
  LLVMValueRef e = cu_gid(cu);
  cu_guard(cu, ult(cu, e, N));
  LLVMValueRef i = urem(cu, e, S->C), row = udiv(cu, e, S->C);
  LLVMValueRef base = mul(cu, row, S->C), si = smp_s(cu, S, n, e);
  LLVMValueRef rank = i64(cu, 0);
  CgLoop l;
  LLVMValueRef j = cg_loop_begin(cg, &l, i64(cu, 0), i64(cu, S->C), &rank, 1);
  LLVMValueRef sj = smp_s(cu, S, n, add(cu, base, j));
  rank = add(cu, rank, LLVMBuildZExt(cg->b, cu_ranks_before(cu, DT_F64, sj, j,
                                                            si, i),
                                     cg->t_i64, ""));
  cg_loop_end(cg, &l, &rank);
  cu_guard(cu, ult(cu, rank, S->K));
  cg_store(cg, DT_I64, cg_scratch(cg, n), add(cu, base, rank), i);
  cu_kernel_end_n(cu, N, EW_BLOCK, 1, EW_BLOCK);
}

/* The row's uniform in [0, 1) with 53 bits (block r of stream 2). */
static LLVMValueRef row_uniform(Cg *cg, LLVMValueRef r, uint64_t seed) {
  LLVMValueRef w[4];
  philox(cg, r, STREAM_SAMPLE, seed, w);
  LLVMValueRef hi = LLVMBuildUIToFP(cg->b, shr(cg, w[0], 5), cg->t_f64, "");
  LLVMValueRef lo = LLVMBuildUIToFP(cg->b, shr(cg, w[1], 6), cg->t_f64, "");
  return LLVMBuildFMul(cg->b, LLVMBuildFAdd(cg->b, LLVMBuildFMul(
                                                       cg->b, hi, f64c(cg, 67108864.0), ""),
                                            lo, ""),
                       f64c(cg, 0x1p-53), "");
}

/* One thread per row: the CPU's sample_row over the ranked classes. */
static void smp_row(Cu *cu, CgPlan *p, Node *n, const Smp *S) {
  Cg *cg = cu->dev;
  LLVMBuilderRef b = cg->b;
  cu_kernel_begin(cu, p, "sample_row");
  LLVMValueRef r = cu_gid(cu);
  cu_guard(cu, ult(cu, r, S->rows));
  LLVMValueRef base = mul(cu, r, S->C);
  /* a NaN logit: the row is skipped, RLX_ERR_INVALID as on the CPU */
  LLVMValueRef nan = LLVMConstNull(LLVMInt1TypeInContext(cg->lc));
  CgLoop l;
  LLVMValueRef j = cg_loop_begin(cg, &l, i64(cu, 0), i64(cu, S->C), &nan, 1);
  LLVMValueRef x = smp_s(cu, S, n, add(cu, base, j));
  nan = LLVMBuildOr(b, nan, LLVMBuildFCmp(b, LLVMRealUNO, x, x, ""), "");
  cg_loop_end(cg, &l, &nan);
  cg_fail_if(cg, nan, RLX_ERR_INVALID);
  LLVMValueRef ip = LLVMBuildGEP2(b, cg->t_i64, cg_scratch(cg, n), &base, 1,
                                  "");
  LLVMValueRef pb = add(cu, base, dim_is_bounded(S->rows)
                                      ? i64(cu, dim_bound(S->rows) * S->C)
                                      : mul(cu, cu_size(cu, S->rows), S->C));
  LLVMValueRef pp = LLVMBuildGEP2(b, cg->t_f64, cg_scratch(cg, n), &pb, 1, "");
  LLVMValueRef m = smp_s(cu, S, n, add(cu, base,
                                       cg_load(cg, DT_I64, ip, i64(cu, 0))));
  LLVMValueRef inf = LLVMBuildFCmp(
      b, LLVMRealOEQ, cg_intrinsic(cg, "llvm.fabs", cg->t_f64, &m, 1),
      f64c(cg, __builtin_inf()), "");
  /* p in rank order into pp[], total */
  LLVMValueRef total = f64c(cg, 0);
  LLVMValueRef i = cg_loop_begin(cg, &l, i64(cu, 0), i64(cu, S->K), &total,
                                 1);
  LLVMValueRef d = smp_s(cu, S, n, add(cu, base, cg_load(cg, DT_I64, ip, i)));
  LLVMValueRef pv = LLVMBuildSelect(
      b, inf, LLVMBuildUIToFP(b, LLVMBuildFCmp(b, LLVMRealOEQ, d, m, ""),
                              cg->t_f64, ""),
      cg_ops_exp(cg, LLVMBuildFSub(b, d, m, "")), "");
  cg_store(cg, DT_F64, pp, i, pv);
  total = LLVMBuildFAdd(b, total, pv, "");
  cg_loop_end(cg, &l, &total);
  LLVMValueRef kept = i64(cu, S->K), mass = total;
  LLVMValueRef no = LLVMConstNull(LLVMInt1TypeInContext(cg->lc));
  if (S->top_p < 1) { /* the first prefix reaching top_p of the total */
    LLVMValueRef lim = LLVMBuildFMul(b, f64c(cg, S->top_p), total, "");
    LLVMValueRef c[4] = {f64c(cg, 0), kept, mass, no};
    i = cg_loop_begin(cg, &l, i64(cu, 0), i64(cu, S->K), c, 4);
    LLVMValueRef acc = LLVMBuildFAdd(b, c[0], cg_load(cg, DT_F64, pp, i), "");
    LLVMValueRef hit = LLVMBuildAnd(
        b, LLVMBuildNot(b, c[3], ""),
        LLVMBuildFCmp(b, LLVMRealOGE, acc, lim, ""), "");
    c[1] = LLVMBuildSelect(b, hit, add(cu, i, i64(cu, 1)), c[1], "");
    c[2] = LLVMBuildSelect(b, hit, acc, c[2], "");
    c[3] = LLVMBuildOr(b, c[3], hit, "");
    c[0] = acc;
    cg_loop_end(cg, &l, c);
    kept = c[1], mass = c[2];
  }
  /* the first kept class whose cumulative mass exceeds u * mass */
  LLVMValueRef t = LLVMBuildFMul(b, row_uniform(cg, r, S->seed), mass, "");
  LLVMValueRef c[3] = {
      f64c(cg, 0),
      cg_load(cg, DT_I64, ip, LLVMBuildSub(b, kept, i64(cu, 1), "")), no};
  i = cg_loop_begin(cg, &l, i64(cu, 0), kept, c, 3);
  LLVMValueRef acc = LLVMBuildFAdd(b, c[0], cg_load(cg, DT_F64, pp, i), "");
  LLVMValueRef hit = LLVMBuildAnd(b, LLVMBuildNot(b, c[2], ""),
                                  LLVMBuildFCmp(b, LLVMRealOLT, t, acc, ""),
                                  "");
  c[1] = LLVMBuildSelect(b, hit, cg_load(cg, DT_I64, ip, i), c[1], "");
  c[2] = LLVMBuildOr(b, c[2], hit, "");
  c[0] = acc;
  cg_loop_end(cg, &l, c);
  cg_store(cg, DT_I64, cg_buf(cg, n), r, c[1]);
  cu_kernel_end_n(cu, S->rows, EW_BLOCK, 1, EW_BLOCK);
}

bool cu_sample(Cu *cu, CgPlan *p, Node *n) {
  const Type *t = &n->in[0]->type;
  Smp S = {t->dims[0], t->dims[1], ir_attr_int(n, ATTR_TOP_K, 0),
           ir_attr_float(n, ATTR_TEMPERATURE, 1.0),
           ir_attr_float(n, ATTR_TOP_P, 1.0),
           (uint64_t)ir_attr_int(n, ATTR_SEED, 0)};
  if (t->dt != DT_F32 && t->dt != DT_F64) return cu_bad_dtype(cu, n, t->dt);
  if (S.rows == 0) return true;
  if (S.C < 1 || S.K < 0 || S.K > S.C || !(S.temp >= 0) ||
      !(S.top_p > 0 && S.top_p <= 1))
    return cu_unsupported(cu, n, "invalid attributes");
  if (S.K == 0) S.K = S.C;
  if (S.temp == 0) S.K = 1;
  smp_rank(cu, p, n, &S);
  smp_row(cu, p, n, &S);
  return true;
}
