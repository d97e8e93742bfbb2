/* vector.c: vector types, splats, vector loads and stores (cg.h).
 *
 * A vector of `lanes` elements of dt's compute type; lanes 1 is scalar
 * code through cg_load/cg_store (f16/bf16/bool work), lanes > 1 native
 * vectors, only for f32/f64/integer storage types (cg_ops_lanes). A
 * load through a prologue marker (cg_fused_src) computes the fused
 * tree instead, through the fused_load hook.
 */
#include "codegen/llvm/cg.h"

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
  if (fused) return cg->fused_load(cg, fused, idx, lanes); /* prologue */
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

LLVMTypeRef cg_ops_bits_type(Cg *cg, int esize) {
  switch (esize) {
  case 1: return cg->t_i8;
  case 2: return cg->t_i16;
  case 4: return cg->t_i32;
  default: return cg->t_i64;
  }
}
