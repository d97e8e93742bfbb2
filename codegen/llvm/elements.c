/* elements.c: element types, constants, addresses, loads/stores with
 * dtype conversion and casts (cg.h).
 *
 * Storage vs compute types: f16/bf16 are stored as i16 bit patterns and
 * computed in float (rounded back on store: round to nearest even);
 * bool is stored as i8 (0/1) and computed as i1; c64 is <2 x float>.
 * cg_convert() implements cast semantics between compute types:
 * float->int truncates toward zero and saturates with NaN -> 0
 * (llvm.fpto[su]i.sat), x->bool is x != 0, c64->real takes the real
 * part (NumPy), real->c64 has a zero imaginary part.
 */
#include "codegen/llvm/cg.h"

#include <string.h>

#include "runtime/rlxrt.h"

LLVMValueRef cg_gep(Cg *cg, LLVMValueRef base, LLVMValueRef off) {
  if (LLVMIsAConstantInt(off) && LLVMConstIntGetSExtValue(off) == 0)
    return base; /* less IR for large graphs: no zero-offset GEPs */
  return LLVMBuildInBoundsGEP2(cg->b, cg->t_i8, base, &off, 1, "");
}

static LLVMValueRef elem_ptr(Cg *cg, DType dt, LLVMValueRef base,
                             LLVMValueRef idx) {
  return LLVMBuildInBoundsGEP2(cg->b, cg_stype(cg, dt), base, &idx, 1, "");
}

static LLVMValueRef bf16_to_f32(Cg *cg, LLVMValueRef bits) {
  LLVMValueRef w = LLVMBuildZExt(cg->b, bits, cg->t_i32, "");
  w = LLVMBuildShl(cg->b, w, cg_i32(cg, 16), "");
  return LLVMBuildBitCast(cg->b, w, cg->t_f32, "");
}

/* Round to nearest even; NaN stays a quiet NaN with its sign. NVPTX
 * (sm_80 and up): one cvt.rn.bf16.f32, the same bits but for NaNs
 * (canonical 0x7fff). */
static LLVMValueRef f32_to_bf16(Cg *cg, LLVMValueRef f) {
  LLVMBuilderRef b = cg->b;
  LLVMValueRef w = LLVMIsABitCastInst(f) ? LLVMGetOperand(f, 0) : NULL;
  w = w && LLVMIsABinaryOperator(w) &&
              LLVMGetInstructionOpcode(w) == LLVMShl &&
              LLVMIsAConstantInt(LLVMGetOperand(w, 1)) &&
              LLVMConstIntGetZExtValue(LLVMGetOperand(w, 1)) == 16
          ? LLVMGetOperand(w, 0) : NULL;
  if (w && LLVMIsAZExtInst(w) &&
      LLVMTypeOf(LLVMGetOperand(w, 0)) == cg->t_i16)
    return LLVMGetOperand(w, 0); /* bf16_to_f32's bits: exact */
  if (cg->triple && !strncmp(cg->triple, "nvptx", 5))
    return LLVMBuildBitCast(
        b, LLVMBuildFPTrunc(b, f, LLVMBFloatTypeInContext(cg->lc), ""),
        cg->t_i16, "");
  LLVMValueRef u = LLVMBuildBitCast(b, f, cg->t_i32, "");
  LLVMValueRef lsb = LLVMBuildAnd(
      b, LLVMBuildLShr(b, u, cg_i32(cg, 16), ""), cg_i32(cg, 1), "");
  LLVMValueRef r = LLVMBuildAdd(
      b, u, LLVMBuildAdd(b, lsb, cg_i32(cg, 0x7fff), ""), "");
  r = LLVMBuildLShr(b, r, cg_i32(cg, 16), "");
  LLVMValueRef nan = LLVMBuildOr(
      b, LLVMBuildLShr(b, u, cg_i32(cg, 16), ""), cg_i32(cg, 0x40), "");
  LLVMValueRef isnan = LLVMBuildFCmp(b, LLVMRealUNO, f, f, "");
  r = LLVMBuildSelect(b, isnan, nan, r, "");
  return LLVMBuildTrunc(b, r, cg->t_i16, "");
}

LLVMValueRef cg_round_dt(Cg *cg, DType dt, LLVMValueRef v) {
  if (dt == DT_F16)
    return LLVMBuildFPExt(cg->b, LLVMBuildFPTrunc(cg->b, v, cg->t_f16, ""),
                          cg->t_f32, "");
  if (dt == DT_BF16) return bf16_to_f32(cg, f32_to_bf16(cg, v));
  return v;
}

static LLVMValueRef to_compute(Cg *cg, DType dt, LLVMValueRef v) {
  switch (dt) {
  case DT_F16:
    v = LLVMBuildBitCast(cg->b, v, cg->t_f16, "");
    return LLVMBuildFPExt(cg->b, v, cg->t_f32, "");
  case DT_BF16: return bf16_to_f32(cg, v);
  case DT_BOOL:
    return LLVMBuildICmp(cg->b, LLVMIntNE, v, LLVMConstInt(cg->t_i8, 0, 0),
                         "");
  default: return v;
  }
}

LLVMValueRef cg_load(Cg *cg, DType dt, LLVMValueRef base, LLVMValueRef idx) {
  Node *fn = cg->nfsrc ? cg_fused_src_of(cg, base) : NULL;
  if (fn && fn == cg->epi_op) return cg->epi_val; /* in cg_store below */
  if (fn) return cg->fused_load(cg, fn, idx, 1); /* prologue (fuse.c) */
  LLVMValueRef p = elem_ptr(cg, dt, base, idx);
  LLVMValueRef v = LLVMBuildLoad2(cg->b, cg_stype(cg, dt), p, "");
  if (dt == DT_C64) LLVMSetAlignment(v, 4);
  return to_compute(cg, dt, v);
}

LLVMValueRef cg_const_elem(Cg *cg, const Node *n, int64_t i) {
  DType dt = n->type.dt;
  if (n->splat) i = 0;
  const char *p = (const char *)n->data + i * dt_size(dt);
  LLVMValueRef v;
  switch (dt) {
  case DT_F32: {
    float f;
    memcpy(&f, p, 4);
    return LLVMConstReal(cg->t_f32, f);
  }
  case DT_F64: {
    double d;
    memcpy(&d, p, 8);
    return LLVMConstReal(cg->t_f64, d);
  }
  case DT_C64: {
    float f[2];
    memcpy(f, p, 8);
    LLVMValueRef e[2] = {LLVMConstReal(cg->t_f32, f[0]),
                         LLVMConstReal(cg->t_f32, f[1])};
    return LLVMConstVector(e, 2);
  }
  default: {
    uint64_t u = 0;
    memcpy(&u, p, (size_t)dt_size(dt)); /* little-endian host */
    v = LLVMConstInt(cg_stype(cg, dt), u, 0);
  }
  }
  return to_compute(cg, dt, v);
}

void cg_store(Cg *cg, DType dt, LLVMValueRef base, LLVMValueRef idx,
              LLVMValueRef v) {
  LLVMValueRef rp;
  Node *r = cg->nfsrc ? cg_epi_root(cg, base, &rp) : NULL;
  if (r) { /* a CG_SLOT_EPI op stores its epilogue (plan/epilogues.c) */
    RLX_ASSERT(!cg->epi_op);
    cg->epi_op = cg_fused_src_of(cg, base);
    cg->epi_val = cg_round_dt(cg, dt, v);
    LLVMValueRef y = cg->fused_load(cg, r, idx, 1);
    cg->epi_op = NULL;
    int64_t P = cg_plan_slot(cg->fn->plan, r)->pitch;
    int64_t C = r->type.dims[r->type.rank - 1];
    if (P) /* rows P apart (plan/views.c) */
      idx = LLVMBuildAdd(cg->b, idx, LLVMBuildMul(
          cg->b, LLVMBuildUDiv(cg->b, idx, cg_i64(cg, C), ""),
          cg_i64(cg, P - C), ""), "");
    cg_store(cg, r->type.dt, rp, idx, y);
    return;
  }
  switch (dt) {
  case DT_F16:
    v = LLVMBuildFPTrunc(cg->b, v, cg->t_f16, "");
    v = LLVMBuildBitCast(cg->b, v, cg->t_i16, "");
    break;
  case DT_BF16: v = f32_to_bf16(cg, v); break;
  case DT_BOOL: v = LLVMBuildZExt(cg->b, v, cg->t_i8, ""); break;
  default: break;
  }
  LLVMValueRef s = LLVMBuildStore(cg->b, v, elem_ptr(cg, dt, base, idx));
  if (dt == DT_C64) LLVMSetAlignment(s, 4);
}

static bool is_unsigned(DType dt) { return dt == DT_U8 || dt == DT_BOOL; }

static LLVMValueRef from_float(Cg *cg, LLVMValueRef v, DType to) {
  LLVMTypeRef t = cg_ctype(cg, to);
  if (to == DT_BOOL)
    return LLVMBuildFCmp(cg->b, LLVMRealUNE, v,
                         LLVMConstReal(LLVMTypeOf(v), 0), "");
  if (dt_is_float(to)) {
    unsigned a = LLVMGetTypeKind(LLVMTypeOf(v)) == LLVMDoubleTypeKind;
    unsigned c = LLVMGetTypeKind(t) == LLVMDoubleTypeKind;
    if (a == c) return v;
    return a ? LLVMBuildFPTrunc(cg->b, v, t, "")
             : LLVMBuildFPExt(cg->b, v, t, "");
  }
  if (to == DT_C64) {
    v = from_float(cg, v, DT_F32);
    LLVMValueRef z = LLVMConstNull(cg->t_c64);
    return LLVMBuildInsertElement(cg->b, z, v, cg_i32(cg, 0), "");
  }
  LLVMTypeRef tys[2] = {t, LLVMTypeOf(v)};
  return cg_intrinsic_n(cg, is_unsigned(to) ? "llvm.fptoui.sat"
                                        : "llvm.fptosi.sat",
                    tys, 2, &v, 1);
}

static LLVMValueRef from_int(Cg *cg, LLVMValueRef v, DType from, DType to) {
  LLVMTypeRef t = cg_ctype(cg, to);
  if (to == DT_BOOL)
    return LLVMBuildICmp(cg->b, LLVMIntNE, v, LLVMConstNull(LLVMTypeOf(v)),
                         "");
  if (to == DT_C64)
    return from_float(cg, from_int(cg, v, from, DT_F32), DT_C64);
  if (dt_is_float(to))
    return is_unsigned(from) ? LLVMBuildUIToFP(cg->b, v, t, "")
                             : LLVMBuildSIToFP(cg->b, v, t, "");
  unsigned wf = LLVMGetIntTypeWidth(LLVMTypeOf(v));
  unsigned wt = LLVMGetIntTypeWidth(t);
  if (wf == wt) return v;
  if (wf > wt) return LLVMBuildTrunc(cg->b, v, t, "");
  return is_unsigned(from) ? LLVMBuildZExt(cg->b, v, t, "")
                           : LLVMBuildSExt(cg->b, v, t, "");
}

LLVMValueRef cg_convert(Cg *cg, LLVMValueRef v, DType from, DType to) {
  if (from == to) return v;
  if (dt_is_float(from)) return from_float(cg, v, to);
  if (from == DT_C64) {
    if (to == DT_BOOL) {
      LLVMValueRef ne = LLVMBuildFCmp(cg->b, LLVMRealUNE, v,
                                      LLVMConstNull(cg->t_c64), "");
      LLVMValueRef a = LLVMBuildExtractElement(cg->b, ne, cg_i32(cg, 0), "");
      LLVMValueRef c = LLVMBuildExtractElement(cg->b, ne, cg_i32(cg, 1), "");
      return LLVMBuildOr(cg->b, a, c, "");
    }
    v = LLVMBuildExtractElement(cg->b, v, cg_i32(cg, 0), "");
    return from_float(cg, v, to);
  }
  return from_int(cg, v, from, to);
}
