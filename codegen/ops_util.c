/* ops_util.c: helpers shared by the codegen-ops emitters (reductions,
 * data movement, control flow, backward ops); see emit_ops.h.
 *
 * Determinism: every fold here visits elements in an order fixed at
 * compile time (vector partial accumulators of a fixed width, then a
 * fixed tree over the lanes, then a scalar tail), and parallel loops
 * only split independent outputs, so results never depend on threads.
 */
#include "codegen/emit_ops.h"

#include <string.h>

bool cg_ops_is_real(DType dt) { return dt_is_float(dt); }

int cg_ops_lanes(Cg *cg, DType dt) {
  int bytes = cg->avx512 ? 128 : 64; /* two registers: some ILP */
  if (dt == DT_F32 || dt == DT_F64) return bytes / dt_size(dt);
  return 1;
}

LLVMTypeRef cg_ops_vtype(Cg *cg, DType dt, int lanes) {
  LLVMTypeRef t = cg_ctype(cg, dt);
  return lanes > 1 ? LLVMVectorType(t, (unsigned)lanes) : t;
}

LLVMValueRef cg_ops_splat(Cg *cg, LLVMValueRef s, int lanes) {
  if (lanes <= 1) return s;
  LLVMTypeRef vt = LLVMVectorType(LLVMTypeOf(s), (unsigned)lanes);
  LLVMValueRef v = LLVMGetUndef(vt);
  v = LLVMBuildInsertElement(cg->b, v, s, cg_i32(cg, 0), "");
  LLVMValueRef zero = LLVMConstNull(LLVMVectorType(cg->t_i32,
                                                   (unsigned)lanes));
  return LLVMBuildShuffleVector(cg->b, v, LLVMGetUndef(vt), zero, "");
}

static LLVMValueRef vptr(Cg *cg, DType dt, LLVMValueRef base,
                         LLVMValueRef idx) {
  return LLVMBuildInBoundsGEP2(cg->b, cg_stype(cg, dt), base, &idx, 1, "");
}

LLVMValueRef cg_ops_vload(Cg *cg, DType dt, LLVMValueRef base,
                          LLVMValueRef idx, int lanes) {
  if (lanes <= 1) return cg_load(cg, dt, base, idx);
  Node *fused = cg->nfsrc ? cg_fused_src_of(cg, base) : NULL;
  if (fused) return cg_fused_load(cg, fused, idx, lanes); /* prologue */
  LLVMTypeRef vt = LLVMVectorType(cg_stype(cg, dt), (unsigned)lanes);
  LLVMValueRef v = LLVMBuildLoad2(cg->b, vt, vptr(cg, dt, base, idx), "");
  LLVMSetAlignment(v, (unsigned)dt_size(dt));
  return v;
}

void cg_ops_vstore(Cg *cg, DType dt, LLVMValueRef base, LLVMValueRef idx,
                   LLVMValueRef v, int lanes) {
  if (lanes <= 1) {
    cg_store(cg, dt, base, idx, v);
    return;
  }
  LLVMValueRef s = LLVMBuildStore(cg->b, v, vptr(cg, dt, base, idx));
  LLVMSetAlignment(s, (unsigned)dt_size(dt));
}

static int64_t int_min(DType dt) {
  switch (dt) {
  case DT_I8: return INT8_MIN;
  case DT_I32: return INT32_MIN;
  case DT_I64: return INT64_MIN;
  default: return 0; /* u8 */
  }
}

static int64_t int_max(DType dt) {
  switch (dt) {
  case DT_I8: return INT8_MAX;
  case DT_U8: return UINT8_MAX;
  case DT_I32: return INT32_MAX;
  default: return INT64_MAX;
  }
}

LLVMValueRef cg_ops_red_init(Cg *cg, DType dt, CgRed r) {
  bool fl = dt_is_float(dt);
  switch (r) {
  case CG_RED_SUM: return cg_const(cg, dt, 0);
  case CG_RED_PROD: return cg_const(cg, dt, 1);
  case CG_RED_MAX:
    if (fl) return cg_const(cg, dt, -__builtin_inf());
    return LLVMConstInt(cg_ctype(cg, dt), (unsigned long long)int_min(dt),
                        1);
  default:
    if (fl) return cg_const(cg, dt, __builtin_inf());
    return LLVMConstInt(cg_ctype(cg, dt), (unsigned long long)int_max(dt),
                        1);
  }
}

/* Complex product of two <2 x float> (re, im) values by the textbook
 * formula (ac - bd, ad + bc); no C Annex G inf/NaN recovery, like
 * NumPy's complex64 multiply. */
static LLVMValueRef c64_mul(Cg *cg, LLVMValueRef a, LLVMValueRef b) {
  LLVMValueRef i0 = cg_i32(cg, 0), i1 = cg_i32(cg, 1);
  LLVMValueRef ar = LLVMBuildExtractElement(cg->b, a, i0, "");
  LLVMValueRef ai = LLVMBuildExtractElement(cg->b, a, i1, "");
  LLVMValueRef br = LLVMBuildExtractElement(cg->b, b, i0, "");
  LLVMValueRef bi = LLVMBuildExtractElement(cg->b, b, i1, "");
  LLVMValueRef re = LLVMBuildFSub(cg->b, LLVMBuildFMul(cg->b, ar, br, ""),
                                  LLVMBuildFMul(cg->b, ai, bi, ""), "");
  LLVMValueRef im = LLVMBuildFAdd(cg->b, LLVMBuildFMul(cg->b, ar, bi, ""),
                                  LLVMBuildFMul(cg->b, ai, br, ""), "");
  LLVMValueRef v = LLVMGetUndef(LLVMTypeOf(a));
  v = LLVMBuildInsertElement(cg->b, v, re, i0, "");
  return LLVMBuildInsertElement(cg->b, v, im, i1, "");
}

LLVMValueRef cg_ops_combine(Cg *cg, DType dt, CgRed r, LLVMValueRef a,
                            LLVMValueRef b) {
  LLVMValueRef ab[2] = {a, b};
  LLVMTypeRef t = LLVMTypeOf(a);
  if (dt == DT_C64) {
    /* callers diagnose c64 max/min (not ordered) */
    RLX_ASSERT(r == CG_RED_SUM || r == CG_RED_PROD);
    if (r == CG_RED_PROD) return c64_mul(cg, a, b);
    return LLVMBuildFAdd(cg->b, a, b, "");
  }
  if (dt_is_float(dt)) {
    switch (r) {
    case CG_RED_SUM: return LLVMBuildFAdd(cg->b, a, b, "");
    case CG_RED_PROD: return LLVMBuildFMul(cg->b, a, b, "");
    case CG_RED_MAX: return cg_intrinsic(cg, "llvm.maximum", t, ab, 2);
    default: return cg_intrinsic(cg, "llvm.minimum", t, ab, 2);
    }
  }
  bool u = dt == DT_U8;
  switch (r) {
  case CG_RED_SUM: return LLVMBuildAdd(cg->b, a, b, "");
  case CG_RED_PROD: return LLVMBuildMul(cg->b, a, b, "");
  case CG_RED_MAX:
    return cg_intrinsic(cg, u ? "llvm.umax" : "llvm.smax", t, ab, 2);
  default: return cg_intrinsic(cg, u ? "llvm.umin" : "llvm.smin", t, ab, 2);
  }
}

static LLVMValueRef half_mask(Cg *cg, int h, int start) {
  LLVMValueRef m[64];
  for (int i = 0; i < h; i++) m[i] = cg_i32(cg, start + i);
  return LLVMConstVector(m, (unsigned)h);
}

LLVMValueRef cg_ops_hfold(Cg *cg, DType dt, CgRed r, LLVMValueRef v) {
  LLVMTypeRef t = LLVMTypeOf(v);
  if (LLVMGetTypeKind(t) != LLVMVectorTypeKind) return v;
  int n = (int)LLVMGetVectorSize(t);
  while (n > 1) {
    int h = n / 2;
    LLVMValueRef u = LLVMGetUndef(LLVMTypeOf(v));
    LLVMValueRef lo = LLVMBuildShuffleVector(cg->b, v, u,
                                             half_mask(cg, h, 0), "");
    LLVMValueRef hi = LLVMBuildShuffleVector(cg->b, v, u,
                                             half_mask(cg, h, h), "");
    v = cg_ops_combine(cg, dt, r, lo, hi);
    n = h;
  }
  return LLVMBuildExtractElement(cg->b, v, cg_i32(cg, 0), "");
}

static LLVMValueRef add_i64(Cg *cg, LLVMValueRef a, LLVMValueRef b) {
  return LLVMBuildNSWAdd(cg->b, a, b, "");
}

static LLVMValueRef mul_c(Cg *cg, LLVMValueRef a, int64_t c) {
  if (c == 1) return a;
  return LLVMBuildNSWMul(cg->b, a, cg_i64(cg, c), "");
}

/* Lanes for a row of n_c elements: narrower vectors for short rows
 * (the choice depends only on n_c, so the order stays fixed). */
static int row_lanes(Cg *cg, DType dt, int64_t n_c) {
  int L = cg_ops_lanes(cg, dt);
  while (L > 4 && n_c < L) L /= 2;
  return L;
}

/* Vector part of a row fold: k accumulators, vector j into j % k,
 * combined pairwise at the end. */
static LLVMValueRef row_fold_vec(Cg *cg, DType dt, CgRed r,
                                 LLVMValueRef base, LLVMValueRef off,
                                 int64_t nv, int L, int k, LLVMValueRef init,
                                 CgOpsMapFn f, void *ctx) {
  LLVMValueRef c[8];
  for (int a = 0; a < k; a++)
    c[a] = cg_ops_splat(cg, a ? cg_ops_red_init(cg, dt, r) : init, L);
  CgLoop l;
  LLVMValueRef v = cg_loop_begin(cg, &l, cg_i64(cg, 0), cg_i64(cg, nv / k),
                                 c, k);
  for (int a = 0; a < k; a++) {
    LLVMValueRef j = add_i64(cg, mul_c(cg, v, k), cg_i64(cg, a));
    LLVMValueRef idx = add_i64(cg, off, mul_c(cg, j, L));
    LLVMValueRef x = cg_ops_vload(cg, dt, base, idx, L);
    c[a] = cg_ops_combine(cg, dt, r, c[a], f ? f(cg, x, idx, L, ctx) : x);
  }
  cg_loop_end(cg, &l, c);
  for (int64_t j = nv / k * k; j < nv; j++) { /* fewer than k left */
    LLVMValueRef idx = add_i64(cg, off, cg_i64(cg, j * L));
    LLVMValueRef x = cg_ops_vload(cg, dt, base, idx, L);
    int a = (int)(j % k);
    c[a] = cg_ops_combine(cg, dt, r, c[a], f ? f(cg, x, idx, L, ctx) : x);
  }
  for (int h = k / 2; h >= 1; h /= 2)
    for (int a = 0; a < h; a++)
      c[a] = cg_ops_combine(cg, dt, r, c[a], c[a + h]);
  return cg_ops_hfold(cg, dt, r, c[0]);
}

LLVMValueRef cg_ops_row_fold_k(Cg *cg, DType dt, CgRed r, LLVMValueRef base,
                               LLVMValueRef off, int64_t n_c,
                               LLVMValueRef init, CgOpsMapFn f, void *ctx,
                               int k) {
  int L = row_lanes(cg, dt, n_c);
  int64_t nv = L > 1 ? n_c / L : 0;
  while (k > 1 && nv < 2 * k) k /= 2;
  LLVMValueRef acc = init;
  CgLoop l;
  if (nv > 0)
    acc = row_fold_vec(cg, dt, r, base, off, nv, L, k, init, f, ctx);
  if (nv * L < n_c) {
    LLVMValueRef j = cg_loop_begin(cg, &l, cg_i64(cg, nv * L),
                                   cg_i64(cg, n_c), &acc, 1);
    LLVMValueRef idx = add_i64(cg, off, j);
    LLVMValueRef x = cg_load(cg, dt, base, idx);
    if (f) x = f(cg, x, idx, 1, ctx);
    acc = cg_ops_combine(cg, dt, r, acc, x);
    cg_loop_end(cg, &l, &acc);
  }
  return acc;
}

LLVMValueRef cg_ops_row_fold(Cg *cg, DType dt, CgRed r, LLVMValueRef base,
                             LLVMValueRef off, int64_t n_c,
                             LLVMValueRef init, CgOpsMapFn f, void *ctx) {
  return cg_ops_row_fold_k(cg, dt, r, base, off, n_c, init, f, ctx, 1);
}

void cg_ops_row_map(Cg *cg, DType dt, LLVMValueRef dst, LLVMValueRef src,
                    LLVMValueRef off, int64_t n_c, CgOpsMapFn f, void *ctx) {
  int L = row_lanes(cg, dt, n_c);
  int64_t nv = L > 1 ? n_c / L : 0;
  CgLoop l;
  if (nv > 0) {
    LLVMValueRef v = cg_loop_begin(cg, &l, cg_i64(cg, 0), cg_i64(cg, nv),
                                   NULL, 0);
    LLVMValueRef idx = add_i64(cg, off, mul_c(cg, v, L));
    LLVMValueRef x = cg_ops_vload(cg, dt, src, idx, L);
    cg_ops_vstore(cg, dt, dst, idx, f(cg, x, idx, L, ctx), L);
    cg_loop_end(cg, &l, NULL);
  }
  if (nv * L < n_c) {
    LLVMValueRef j = cg_loop_begin(cg, &l, cg_i64(cg, nv * L),
                                   cg_i64(cg, n_c), NULL, 0);
    LLVMValueRef idx = add_i64(cg, off, j);
    LLVMValueRef x = cg_load(cg, dt, src, idx);
    cg_store(cg, dt, dst, idx, f(cg, x, idx, 1, ctx));
    cg_loop_end(cg, &l, NULL);
  }
}

static LLVMValueRef splat_f(Cg *cg, LLVMTypeRef vt, double c) {
  return cg_ops_splat(cg, LLVMConstReal(LLVMGetElementType(vt), c),
                      (int)LLVMGetVectorSize(vt));
}

/* 2^k for an i32 vector k in [-126, 127], as floats. */
static LLVMValueRef pow2i(Cg *cg, LLVMValueRef k, LLVMTypeRef vt) {
  int n = (int)LLVMGetVectorSize(vt);
  LLVMValueRef e = LLVMBuildAdd(cg->b, k, cg_ops_splat(cg, cg_i32(cg, 127), n),
                                "");
  e = LLVMBuildShl(cg->b, e, cg_ops_splat(cg, cg_i32(cg, 23), n), "");
  return LLVMBuildBitCast(cg->b, e, vt, "");
}

/* exp of an f32 vector in straight-line vector code (LLVM would call
 * expf per lane): n = rint(x log2 e), r = x - n ln2 (two-part ln2),
 * Cephes expf polynomial (about 1 ulp), times 2^n applied in two halves
 * so results down to the denormal range are right; x >= 89 -> inf,
 * x <= -104 -> 0, NaN -> NaN. */
static LLVMValueRef vexp_f32(Cg *cg, LLVMValueRef x) {
  LLVMBuilderRef b = cg->b;
  LLVMTypeRef vt = LLVMTypeOf(x);
  int lanes = (int)LLVMGetVectorSize(vt);
  LLVMValueRef a2[2] = {x, splat_f(cg, vt, 89.0)};
  LLVMValueRef c = cg_intrinsic(cg, "llvm.minnum", vt, a2, 2);
  a2[0] = c;
  a2[1] = splat_f(cg, vt, -104.0);
  c = cg_intrinsic(cg, "llvm.maxnum", vt, a2, 2);
  LLVMValueRef t = LLVMBuildFMul(b, c, splat_f(cg, vt, 1.44269504088896341),
                                 "");
  LLVMValueRef n = cg_intrinsic(cg, "llvm.rint", vt, &t, 1);
  LLVMValueRef r = LLVMBuildFSub(
      b, c, LLVMBuildFMul(b, n, splat_f(cg, vt, 0.693359375), ""), "");
  r = LLVMBuildFSub(b, r, LLVMBuildFMul(b, n, splat_f(cg, vt,
                                                      -2.12194440e-4), ""),
                    "");
  static const double P[] = {1.9875691500E-4, 1.3981999507E-3,
                             8.3334519073E-3, 4.1665795894E-2,
                             1.6666665459E-1, 5.0000001201E-1};
  LLVMValueRef p = splat_f(cg, vt, P[0]);
  for (int i = 1; i < 6; i++)
    p = LLVMBuildFAdd(b, LLVMBuildFMul(b, p, r, ""), splat_f(cg, vt, P[i]),
                      "");
  p = LLVMBuildFMul(b, p, LLVMBuildFMul(b, r, r, ""), "");
  p = LLVMBuildFAdd(b, p, LLVMBuildFAdd(b, r, splat_f(cg, vt, 1.0), ""), "");
  LLVMTypeRef it = LLVMVectorType(cg->t_i32, (unsigned)lanes);
  LLVMValueRef ni = LLVMBuildFPToSI(b, n, it, "");
  LLVMValueRef n1 = LLVMBuildAShr(b, ni, cg_ops_splat(cg, cg_i32(cg, 1), lanes),
                                  "");
  LLVMValueRef n2 = LLVMBuildSub(b, ni, n1, "");
  p = LLVMBuildFMul(b, p, pow2i(cg, n1, vt), "");
  p = LLVMBuildFMul(b, p, pow2i(cg, n2, vt), "");
  LLVMValueRef nan = LLVMBuildFCmp(b, LLVMRealUNO, x, x, "");
  return LLVMBuildSelect(b, nan, x, p, "");
}

LLVMValueRef cg_ops_exp(Cg *cg, LLVMValueRef v) {
  LLVMTypeRef t = LLVMTypeOf(v);
  if (LLVMGetTypeKind(t) == LLVMVectorTypeKind &&
      LLVMGetElementType(t) == cg->t_f32)
    return vexp_f32(cg, v);
  return cg_intrinsic(cg, "llvm.exp", t, &v, 1);
}

LLVMValueRef cg_ops_log(Cg *cg, LLVMValueRef v) {
  return cg_intrinsic(cg, "llvm.log", LLVMTypeOf(v), &v, 1);
}

static LLVMValueRef libm1(Cg *cg, const char *name, LLVMValueRef v) {
  LLVMTypeRef t = LLVMTypeOf(v);
  char buf[32];
  bool f = LLVMGetTypeKind(t) == LLVMFloatTypeKind;
  snprintf(buf, sizeof buf, "%s%s", name, f ? "f" : "");
  return cg_call(cg, buf, t, &v, 1);
}

LLVMValueRef cg_ops_libm(Cg *cg, const char *name, LLVMValueRef v) {
  LLVMTypeRef t = LLVMTypeOf(v);
  if (LLVMGetTypeKind(t) != LLVMVectorTypeKind) return libm1(cg, name, v);
  LLVMValueRef r = LLVMGetUndef(t);
  for (unsigned i = 0; i < LLVMGetVectorSize(t); i++) {
    LLVMValueRef e = LLVMBuildExtractElement(cg->b, v, cg_i32(cg, (int)i), "");
    r = LLVMBuildInsertElement(cg->b, r, libm1(cg, name, e),
                               cg_i32(cg, (int)i), "");
  }
  return r;
}

static bool is_vf32(Cg *cg, LLVMValueRef v) {
  LLVMTypeRef t = LLVMTypeOf(v);
  return LLVMGetTypeKind(t) == LLVMVectorTypeKind &&
         LLVMGetElementType(t) == cg->t_f32;
}

/* f32 vectors: tanh x = sign(x) (1 - 2 / (exp(2|x|) + 1)) (absolute
 * error ~1e-7); otherwise libm. */
LLVMValueRef cg_ops_tanh(Cg *cg, LLVMValueRef x) {
  if (!is_vf32(cg, x)) return cg_ops_libm(cg, "tanh", x);
  LLVMTypeRef vt = LLVMTypeOf(x);
  LLVMValueRef a = cg_intrinsic(cg, "llvm.fabs", vt, &x, 1);
  LLVMValueRef e = cg_ops_exp(cg, LLVMBuildFMul(cg->b, a,
                                                splat_f(cg, vt, 2), ""));
  LLVMValueRef q = LLVMBuildFDiv(
      cg->b, splat_f(cg, vt, 2), LLVMBuildFAdd(cg->b, e, splat_f(cg, vt, 1),
                                               ""), "");
  LLVMValueRef t = LLVMBuildFSub(cg->b, splat_f(cg, vt, 1), q, "");
  LLVMValueRef cs[2] = {t, x};
  return cg_intrinsic(cg, "llvm.copysign", vt, cs, 2);
}

/* f32 vectors: erf by Abramowitz & Stegun 7.1.26 (absolute error
 * < 1.5e-7), odd extension; otherwise libm. */
LLVMValueRef cg_ops_erf(Cg *cg, LLVMValueRef x) {
  if (!is_vf32(cg, x)) return cg_ops_libm(cg, "erf", x);
  static const double A[] = {1.061405429, -1.453152027, 1.421413741,
                             -0.284496736, 0.254829592};
  LLVMTypeRef vt = LLVMTypeOf(x);
  LLVMBuilderRef b = cg->b;
  LLVMValueRef a = cg_intrinsic(cg, "llvm.fabs", vt, &x, 1);
  LLVMValueRef t = LLVMBuildFDiv(
      b, splat_f(cg, vt, 1),
      LLVMBuildFAdd(b, splat_f(cg, vt, 1),
                    LLVMBuildFMul(b, a, splat_f(cg, vt, 0.3275911), ""), ""),
      "");
  LLVMValueRef p = splat_f(cg, vt, A[0]);
  for (int i = 1; i < 5; i++)
    p = LLVMBuildFAdd(b, LLVMBuildFMul(b, p, t, ""), splat_f(cg, vt, A[i]),
                      "");
  p = LLVMBuildFMul(b, p, t, "");
  LLVMValueRef e = cg_ops_exp(cg, LLVMBuildFNeg(b, LLVMBuildFMul(b, a, a, ""),
                                                ""));
  LLVMValueRef r = LLVMBuildFSub(b, splat_f(cg, vt, 1),
                                 LLVMBuildFMul(b, p, e, ""), "");
  LLVMValueRef cs[2] = {r, x};
  return cg_intrinsic(cg, "llvm.copysign", vt, cs, 2);
}

bool cg_ops_index_dtype_ok(DType dt) {
  return dt == DT_I32 || dt == DT_I64 || dt == DT_F32 || dt == DT_F64 ||
         dt == DT_I8 || dt == DT_U8;
}

LLVMValueRef cg_ops_index(Cg *cg, DType dt, LLVMValueRef base,
                          LLVMValueRef i, int64_t bound_c) {
  LLVMValueRef v = cg_load(cg, dt, base, i);
  if (!dt_is_float(dt)) {
    v = dt == DT_U8 ? LLVMBuildZExt(cg->b, v, cg->t_i64, "")
                    : cg_convert(cg, v, dt, DT_I64);
    cg_check_index(cg, v, cg_i64(cg, bound_c));
    return v;
  }
  LLVMTypeRef ft = LLVMTypeOf(v);
  LLVMValueRef ge = LLVMBuildFCmp(cg->b, LLVMRealOGE, v,
                                  LLVMConstReal(ft, 0), "");
  LLVMValueRef lt = LLVMBuildFCmp(cg->b, LLVMRealOLT, v,
                                  LLVMConstReal(ft, (double)bound_c), "");
  LLVMValueRef ok = LLVMBuildAnd(cg->b, ge, lt, "");
  cg_fail_if(cg, LLVMBuildNot(cg->b, ok, ""), 1 /* RLX_ERR_INDEX */);
  LLVMValueRef iv = LLVMBuildFPToSI(cg->b, v, cg->t_i64, "");
  LLVMValueRef back = LLVMBuildSIToFP(cg->b, iv, ft, "");
  cg_fail_if(cg, LLVMBuildFCmp(cg->b, LLVMRealUNE, back, v, ""),
             1 /* RLX_ERR_INDEX */);
  return iv;
}

void cg_ops_split_axis(const Type *t, int64_t axis, int64_t *outer,
                       int64_t *n, int64_t *inner) {
  *outer = *n = *inner = 1;
  if (t->rank == 0) return;
  if (axis < 0) axis += t->rank;
  for (int i = 0; i < t->rank; i++) {
    if (i < axis) *outer *= t->dims[i];
    else if (i == axis) *n = t->dims[i];
    else *inner *= t->dims[i];
  }
}

LLVMTypeRef cg_ops_bits_type(Cg *cg, int esize) {
  switch (esize) {
  case 1: return cg->t_i8;
  case 2: return cg->t_i16;
  case 4: return cg->t_i32;
  default: return cg->t_i64;
  }
}

/* Drop size-1 dims and merge neighbours contiguous in both arrays. */
static void copy_canon(const CgCopy *in, CgCopy *c) {
  *c = *in;
  c->rank = 0;
  for (int d = 0; d < in->rank; d++) {
    if (in->dims[d] == 1) continue;
    int k = c->rank;
    if (k > 0 && c->dst_str[k - 1] == in->dst_str[d] * in->dims[d] &&
        c->src_str[k - 1] == in->src_str[d] * in->dims[d]) {
      c->dims[k - 1] *= in->dims[d];
      c->dst_str[k - 1] = in->dst_str[d];
      c->src_str[k - 1] = in->src_str[d];
      continue;
    }
    c->dims[k] = in->dims[d];
    c->dst_str[k] = in->dst_str[d];
    c->src_str[k] = in->src_str[d];
    c->rank++;
  }
}

static void copy_nest(Cg *cg, const CgCopy *c, int d, LLVMValueRef doff,
                      LLVMValueRef soff, LLVMValueRef *p, LLVMTypeRef et) {
  if (d == c->rank) {
    LLVMValueRef sp = LLVMBuildInBoundsGEP2(cg->b, et, p[1], &soff, 1, "");
    LLVMValueRef dp = LLVMBuildInBoundsGEP2(cg->b, et, p[0], &doff, 1, "");
    LLVMBuildStore(cg->b, LLVMBuildLoad2(cg->b, et, sp, ""), dp);
    return;
  }
  CgLoop l;
  LLVMValueRef i = cg_loop_begin(cg, &l, cg_i64(cg, 0),
                                 cg_i64(cg, c->dims[d]), NULL, 0);
  copy_nest(cg, c, d + 1, add_i64(cg, doff, mul_c(cg, i, c->dst_str[d])),
            add_i64(cg, soff, mul_c(cg, i, c->src_str[d])), p, et);
  cg_loop_end(cg, &l, NULL);
}

/* Tiled transpose-like copy: the last dim is written contiguously but
 * read with a stride, and dim k is read contiguously. Tiles of
 * COPY_TILE x COPY_TILE_L (k, last) keep the source lines in cache. */
/* Tile sizes (measured on the AVX-512 host: 16 x 16 beats 32 x 32 by
 * 3x, whose 4 KB-strided source rows thrash L1 sets). */
#define COPY_TILE 16   /* along k (read contiguously) */
#define COPY_TILE_L 16 /* along the last dim (written contiguously) */

typedef struct {
  const CgCopy *c;
  int k;
  LLVMValueRef kt, *p;
  LLVMTypeRef et;
} Tiled;

static LLVMValueRef min_c(Cg *cg, LLVMValueRef a, int64_t c) {
  LLVMValueRef b = cg_i64(cg, c);
  return LLVMBuildSelect(cg->b, LLVMBuildICmp(cg->b, LLVMIntSLT, a, b, ""),
                         a, b, "");
}

static void tile_body(Cg *cg, Tiled *T, LLVMValueRef doff,
                      LLVMValueRef soff) {
  const CgCopy *c = T->c;
  int L = c->rank - 1, k = T->k;
  CgLoop lt, lk, ll;
  int64_t nl = (c->dims[L] + COPY_TILE_L - 1) / COPY_TILE_L;
  LLVMValueRef t = cg_loop_begin(cg, &lt, cg_i64(cg, 0), cg_i64(cg, nl),
                                 NULL, 0);
  LLVMValueRef k0 = mul_c(cg, T->kt, COPY_TILE);
  LLVMValueRef l0 = mul_c(cg, t, COPY_TILE_L);
  LLVMValueRef k1 = min_c(cg, add_i64(cg, k0, cg_i64(cg, COPY_TILE)),
                          c->dims[k]);
  LLVMValueRef l1 = min_c(cg, add_i64(cg, l0, cg_i64(cg, COPY_TILE_L)),
                          c->dims[L]);
  LLVMValueRef i = cg_loop_begin(cg, &lk, k0, k1, NULL, 0);
  LLVMValueRef dk = add_i64(cg, doff, mul_c(cg, i, c->dst_str[k]));
  LLVMValueRef sk = add_i64(cg, soff, mul_c(cg, i, c->src_str[k]));
  LLVMValueRef j = cg_loop_begin(cg, &ll, l0, l1, NULL, 0);
  LLVMValueRef di = add_i64(cg, dk, mul_c(cg, j, c->dst_str[L]));
  LLVMValueRef si = add_i64(cg, sk, mul_c(cg, j, c->src_str[L]));
  LLVMValueRef sp = LLVMBuildInBoundsGEP2(cg->b, T->et, T->p[1], &si, 1, "");
  LLVMValueRef dp = LLVMBuildInBoundsGEP2(cg->b, T->et, T->p[0], &di, 1, "");
  LLVMBuildStore(cg->b, LLVMBuildLoad2(cg->b, T->et, sp, ""), dp);
  cg_loop_end(cg, &ll, NULL);
  cg_loop_end(cg, &lk, NULL);
  cg_loop_end(cg, &lt, NULL);
}

/* Loops over the dims other than k and the last, then one tile row. */
static void tile_nest(Cg *cg, Tiled *T, int d, LLVMValueRef doff,
                      LLVMValueRef soff) {
  const CgCopy *c = T->c;
  while (d == T->k) d++;
  if (d >= c->rank - 1) {
    tile_body(cg, T, doff, soff);
    return;
  }
  CgLoop l;
  LLVMValueRef i = cg_loop_begin(cg, &l, cg_i64(cg, 0),
                                 cg_i64(cg, c->dims[d]), NULL, 0);
  tile_nest(cg, T, d + 1, add_i64(cg, doff, mul_c(cg, i, c->dst_str[d])),
            add_i64(cg, soff, mul_c(cg, i, c->src_str[d])));
  cg_loop_end(cg, &l, NULL);
}

static int tiled_dim(const CgCopy *c) {
  int L = c->rank - 1;
  if (c->rank < 2 || c->dst_str[L] != 1 || c->src_str[L] == 1 ||
      c->dims[L] < 8)
    return -1;
  for (int k = 0; k < L; k++)
    if (c->src_str[k] == 1 && c->dims[k] >= 8) return k;
  return -1;
}

static void copy_tiled(Cg *cg, const CgCopy *c, int k, LLVMValueRef *p,
                       LLVMTypeRef et) {
  int64_t nk = (c->dims[k] + COPY_TILE - 1) / COPY_TILE, numel = 1;
  for (int d = 0; d < c->rank; d++) numel *= c->dims[d];
  CgPar par;
  Tiled T = {c, k, NULL, p, et};
  T.kt = cg_par_begin(cg, &par, cg_i64(cg, nk), cg_grain(nk, numel / nk),
                      p, 2, true);
  tile_nest(cg, &T, 0, cg_i64(cg, c->dst_off), cg_i64(cg, c->src_off));
  cg_par_end(cg, &par);
}

void cg_ops_copy(Cg *cg, const CgCopy *in, LLVMValueRef dst,
                 LLVMValueRef src, int esize) {
  for (int d = 0; d < in->rank; d++)
    if (in->dims[d] == 0) return;
  CgCopy c;
  copy_canon(in, &c);
  LLVMTypeRef et = cg_ops_bits_type(cg, esize);
  LLVMValueRef p[2] = {dst, src};
  if (c.rank == 0) {
    copy_nest(cg, &c, 0, cg_i64(cg, c.dst_off), cg_i64(cg, c.src_off), p,
              et);
    return;
  }
  int k = tiled_dim(&c);
  if (k >= 0) {
    copy_tiled(cg, &c, k, p, et);
    return;
  }
  int64_t per = 1;
  for (int d = 1; d < c.rank; d++) per *= c.dims[d];
  CgPar par;
  LLVMValueRef i = cg_par_begin(cg, &par, cg_i64(cg, c.dims[0]),
                                cg_grain(c.dims[0], per), p, 2, true);
  LLVMValueRef doff = add_i64(cg, cg_i64(cg, c.dst_off),
                              mul_c(cg, i, c.dst_str[0]));
  LLVMValueRef soff = add_i64(cg, cg_i64(cg, c.src_off),
                              mul_c(cg, i, c.src_str[0]));
  copy_nest(cg, &c, 1, doff, soff, p, et);
  cg_par_end(cg, &par);
}

/* Body of one column unit: full vector group or one scalar column. */
static void cols_unit(Cg *cg, int lanes, LLVMValueRef o, LLVMValueRef i0,
                      int64_t n, int64_t inner, LLVMValueRef *vals,
                      CgOpsColFn body, void *ctx) {
  LLVMValueRef base = add_i64(cg, mul_c(cg, o, n * inner), i0);
  body(cg, lanes, base, vals, ctx);
}

void cg_ops_cols(Cg *cg, DType dt, int64_t outer, int64_t n, int64_t inner,
                 int wide, LLVMValueRef *vals, int nv, CgOpsColFn body,
                 void *ctx) {
  if (outer == 0 || inner == 0) return;
  /* column groups by class: wide vectors, vectors, scalar columns */
  int L = cg_ops_lanes(cg, dt), lanes[3] = {L * wide, L, 1};
  int64_t cnt[3], first[3], col0[3], left = inner, nb = 0, c0 = 0;
  bool use[3] = {L > 1 && wide > 1, L > 1, true};
  for (int k = 0; k < 3; k++) {
    cnt[k] = use[k] ? left / lanes[k] : 0;
    first[k] = nb, col0[k] = c0;
    nb += cnt[k], c0 += cnt[k] * lanes[k], left -= cnt[k] * lanes[k];
  }
  int64_t units = outer * nb, maxl = cnt[0] ? lanes[0] : cnt[1] ? L : 1;
  CgPar par;
  LLVMValueRef u = cg_par_begin(cg, &par, cg_i64(cg, units),
                                cg_grain(units, n * maxl + 1), vals, nv,
                                true);
  LLVMValueRef nbv = cg_i64(cg, nb);
  LLVMValueRef o = LLVMBuildSDiv(cg->b, u, nbv, "");
  LLVMValueRef g = LLVMBuildSRem(cg->b, u, nbv, "");
  LLVMBasicBlockRef join = cg_block(cg, "col.join");
  for (int k = 0; k < 3; k++) {
    if (!cnt[k]) continue;
    LLVMBasicBlockRef here = cg_block(cg, "col.class");
    LLVMBasicBlockRef next = cg_block(cg, "col.next");
    LLVMValueRef in = LLVMBuildICmp(cg->b, LLVMIntSLT, g,
                                    cg_i64(cg, first[k] + cnt[k]), "");
    LLVMBuildCondBr(cg->b, in, here, next);
    LLVMPositionBuilderAtEnd(cg->b, here);
    LLVMValueRef i0 = add_i64(
        cg, mul_c(cg, LLVMBuildNSWSub(cg->b, g, cg_i64(cg, first[k]), ""),
                  lanes[k]),
        cg_i64(cg, col0[k]));
    cols_unit(cg, lanes[k], o, i0, n, inner, vals, body, ctx);
    LLVMBuildBr(cg->b, join);
    LLVMPositionBuilderAtEnd(cg->b, next);
  }
  LLVMBuildBr(cg->b, join);
  LLVMPositionBuilderAtEnd(cg->b, join);
  cg_par_end(cg, &par);
}

LLVMValueRef cg_ops_const_global(Cg *cg, LLVMValueRef init, const char *name) {
  LLVMValueRef gv = LLVMAddGlobal(cg->mod, LLVMTypeOf(init), name);
  LLVMSetInitializer(gv, init);
  LLVMSetGlobalConstant(gv, 1);
  LLVMSetLinkage(gv, LLVMPrivateLinkage);
  LLVMSetUnnamedAddress(gv, LLVMGlobalUnnamedAddr);
  LLVMSetAlignment(gv, 8);
  return gv;
}
