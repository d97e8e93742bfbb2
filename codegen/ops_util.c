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

LLVMValueRef cg_ops_combine(Cg *cg, DType dt, CgRed r, LLVMValueRef a,
                            LLVMValueRef b) {
  LLVMValueRef ab[2] = {a, b};
  LLVMTypeRef t = LLVMTypeOf(a);
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

LLVMValueRef cg_ops_row_fold(Cg *cg, DType dt, CgRed r, LLVMValueRef base,
                             LLVMValueRef off, int64_t n_c,
                             LLVMValueRef init, CgOpsMapFn f, void *ctx) {
  int L = cg_ops_lanes(cg, dt);
  int64_t nv = L > 1 ? n_c / L : 0;
  LLVMValueRef acc = init;
  CgLoop l;
  if (nv > 0) {
    LLVMValueRef c = cg_ops_splat(cg, init, L);
    LLVMValueRef v = cg_loop_begin(cg, &l, cg_i64(cg, 0), cg_i64(cg, nv),
                                   &c, 1);
    LLVMValueRef idx = add_i64(cg, off, mul_c(cg, v, L));
    LLVMValueRef x = cg_ops_vload(cg, dt, base, idx, L);
    if (f) x = f(cg, x, idx, L, ctx);
    c = cg_ops_combine(cg, dt, r, c, x);
    cg_loop_end(cg, &l, &c);
    acc = cg_ops_hfold(cg, dt, r, c);
  }
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

void cg_ops_row_map(Cg *cg, DType dt, LLVMValueRef dst, LLVMValueRef src,
                    LLVMValueRef off, int64_t n_c, CgOpsMapFn f, void *ctx) {
  int L = cg_ops_lanes(cg, dt);
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

LLVMValueRef cg_ops_exp(Cg *cg, LLVMValueRef v) {
  return cg_intrinsic(cg, "llvm.exp", LLVMTypeOf(v), &v, 1);
}

LLVMValueRef cg_ops_log(Cg *cg, LLVMValueRef v) {
  return cg_intrinsic(cg, "llvm.log", LLVMTypeOf(v), &v, 1);
}

LLVMValueRef cg_ops_libm(Cg *cg, const char *name, LLVMValueRef v) {
  LLVMTypeRef t = LLVMTypeOf(v);
  char buf[32];
  bool f = LLVMGetTypeKind(t) == LLVMFloatTypeKind;
  snprintf(buf, sizeof buf, "%s%s", name, f ? "f" : "");
  LLVMValueRef r = cg_call(cg, buf, t, &v, 1);
  return r;
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
                 LLVMValueRef *vals, int nv, CgOpsColFn body, void *ctx) {
  if (outer == 0 || inner == 0) return;
  int L = cg_ops_lanes(cg, dt);
  int64_t nfull = L > 1 ? inner / L : 0;
  int64_t ntail = inner - nfull * L;
  int64_t nb = nfull + ntail;
  int64_t units = outer * nb;
  CgPar par;
  LLVMValueRef u = cg_par_begin(cg, &par, cg_i64(cg, units),
                                cg_grain(units, n * (nfull ? L : 1) + 1),
                                vals, nv, true);
  LLVMValueRef nbv = cg_i64(cg, nb);
  LLVMValueRef o = LLVMBuildSDiv(cg->b, u, nbv, "");
  LLVMValueRef g = LLVMBuildSRem(cg->b, u, nbv, "");
  if (nfull == 0 || ntail == 0) {
    LLVMValueRef i0 = nfull ? mul_c(cg, g, L) : g;
    cols_unit(cg, nfull ? L : 1, o, i0, n, inner, vals, body, ctx);
  } else {
    LLVMBasicBlockRef bf = cg_block(cg, "col.full");
    LLVMBasicBlockRef bt = cg_block(cg, "col.tail");
    LLVMBasicBlockRef bj = cg_block(cg, "col.join");
    LLVMValueRef isf = LLVMBuildICmp(cg->b, LLVMIntSLT, g,
                                     cg_i64(cg, nfull), "");
    LLVMBuildCondBr(cg->b, isf, bf, bt);
    LLVMPositionBuilderAtEnd(cg->b, bf);
    cols_unit(cg, L, o, mul_c(cg, g, L), n, inner, vals, body, ctx);
    LLVMBuildBr(cg->b, bj);
    LLVMPositionBuilderAtEnd(cg->b, bt);
    LLVMValueRef i0 = add_i64(cg, LLVMBuildNSWSub(cg->b, g, cg_i64(cg, nfull),
                                                  ""),
                              cg_i64(cg, nfull * L));
    cols_unit(cg, 1, o, i0, n, inner, vals, body, ctx);
    LLVMBuildBr(cg->b, bj);
    LLVMPositionBuilderAtEnd(cg->b, bj);
  }
  cg_par_end(cg, &par);
}
