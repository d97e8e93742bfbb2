/* fold.c: reductions of vectors and rows in a fixed order, row maps and
 * the column driver (cg.h).
 *
 * Determinism: every fold here visits elements in an order fixed at
 * compile time (vector partial accumulators of a fixed width, then a
 * fixed tree over the lanes, then a scalar tail), and parallel loops
 * only split independent outputs, so results never depend on threads.
 */
#include "codegen/llvm/cg.h"

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

CgRed cg_red_kind(Op op) {
  switch (op) {
  case OP_REDUCE_PROD: return CG_RED_PROD;
  case OP_REDUCE_MAX: return CG_RED_MAX;
  case OP_REDUCE_MIN: return CG_RED_MIN;
  default: return CG_RED_SUM;
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

/* Lanes for a row of n_c elements (`wide` times the usual vector):
 * narrower vectors for short rows (the choice depends only on n_c, so
 * the order stays fixed). */
static int row_lanes(Cg *cg, DType dt, int64_t n_c, int wide) {
  int L = cg_ops_lanes(cg, dt);
  if (L > 1) L *= wide;
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
    LLVMValueRef j = cg_add_i64(cg, cg_mul_c(cg, v, k), cg_i64(cg, a));
    LLVMValueRef idx = cg_add_i64(cg, off, cg_mul_c(cg, j, L));
    LLVMValueRef x = cg_ops_vload(cg, dt, base, idx, L);
    c[a] = cg_ops_combine(cg, dt, r, c[a], f ? f(cg, x, idx, L, ctx) : x);
  }
  cg_loop_end(cg, &l, c);
  for (int64_t j = nv / k * k; j < nv; j++) { /* fewer than k left */
    LLVMValueRef idx = cg_add_i64(cg, off, cg_i64(cg, j * L));
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
  int L = row_lanes(cg, dt, n_c, 1);
  int64_t nv = L > 1 ? n_c / L : 0;
  while (k > 1 && nv < 2 * k) k /= 2;
  LLVMValueRef acc = init;
  CgLoop l;
  if (nv > 0)
    acc = row_fold_vec(cg, dt, r, base, off, nv, L, k, init, f, ctx);
  if (nv * L < n_c) {
    LLVMValueRef j = cg_loop_begin(cg, &l, cg_i64(cg, nv * L),
                                   cg_i64(cg, n_c), &acc, 1);
    LLVMValueRef idx = cg_add_i64(cg, off, j);
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
  cg_ops_row_map_wide(cg, dt, dst, src, off, n_c, 1, f, ctx);
}

void cg_ops_row_map_wide(Cg *cg, DType dt, LLVMValueRef dst,
                         LLVMValueRef src, LLVMValueRef off, int64_t n_c,
                         int wide, CgOpsMapFn f, void *ctx) {
  int L = row_lanes(cg, dt, n_c, wide);
  int64_t nv = L > 1 ? n_c / L : 0;
  CgLoop l;
  if (nv > 0) {
    LLVMValueRef v = cg_loop_begin(cg, &l, cg_i64(cg, 0), cg_i64(cg, nv),
                                   NULL, 0);
    LLVMValueRef idx = cg_add_i64(cg, off, cg_mul_c(cg, v, L));
    LLVMValueRef x = cg_ops_vload(cg, dt, src, idx, L);
    cg_ops_vstore(cg, dt, dst, idx, f(cg, x, idx, L, ctx), L);
    cg_loop_end(cg, &l, NULL);
  }
  if (nv * L < n_c) {
    LLVMValueRef j = cg_loop_begin(cg, &l, cg_i64(cg, nv * L),
                                   cg_i64(cg, n_c), NULL, 0);
    LLVMValueRef idx = cg_add_i64(cg, off, j);
    LLVMValueRef x = cg_load(cg, dt, src, idx);
    cg_store(cg, dt, dst, idx, f(cg, x, idx, 1, ctx));
    cg_loop_end(cg, &l, NULL);
  }
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

/* Body of one column unit: full vector group or one scalar column. */
static void cols_unit(Cg *cg, int lanes, LLVMValueRef o, LLVMValueRef i0,
                      int64_t n_inner, LLVMValueRef *vals, CgOpsColFn body,
                      void *ctx) {
  LLVMValueRef base = cg_add_i64(cg, cg_mul_dim(cg, o, n_inner), i0);
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
  int64_t units, n_inner, maxl = cnt[0] ? lanes[0] : cnt[1] ? L : 1;
  DimStatus st = dim_mul(cg->ctx, outer, nb, &units);
  if (st == DIM_OK) st = dim_mul(cg->ctx, n, inner, &n_inner);
  RLX_ASSERT(st == DIM_OK);
  CgPar par;
  LLVMValueRef u = cg_par_begin(cg, &par, cg_dim(cg, units),
                                cg_grain(dim_bound(units),
                                         dim_bound(n) * maxl + 1),
                                vals, nv, true);
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
    LLVMValueRef i0 = cg_add_i64(
        cg, cg_mul_c(cg, LLVMBuildNSWSub(cg->b, g, cg_i64(cg, first[k]), ""),
                  lanes[k]),
        cg_i64(cg, col0[k]));
    cols_unit(cg, lanes[k], o, i0, n_inner, vals, body, ctx);
    LLVMBuildBr(cg->b, join);
    LLVMPositionBuilderAtEnd(cg->b, next);
  }
  LLVMBuildBr(cg->b, join);
  LLVMPositionBuilderAtEnd(cg->b, join);
  cg_par_end(cg, &par);
}
