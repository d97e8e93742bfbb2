/* types.c: LLVM types and constants of the IR's dtypes (cg.h).
 *
 * Storage vs compute types: f16/bf16 are stored as i16 bit patterns and
 * computed in float; bool is stored as i8 (0/1) and computed as i1; c64
 * is <2 x float> in both.
 */
#include "codegen/llvm/cg.h"

LLVMTypeRef cg_stype(Cg *cg, DType dt) {
  switch (dt) {
  case DT_F32: return cg->t_f32;
  case DT_F64: return cg->t_f64;
  case DT_F16: case DT_BF16: return cg->t_i16;
  case DT_I8: case DT_U8: case DT_BOOL: return cg->t_i8;
  case DT_I32: return cg->t_i32;
  case DT_I64: return cg->t_i64;
  case DT_C64: return cg->t_c64;
  default: RLX_ASSERT(!"bad dtype"); return NULL;
  }
}

LLVMTypeRef cg_ctype(Cg *cg, DType dt) {
  switch (dt) {
  case DT_F16: case DT_BF16: return cg->t_f32;
  case DT_BOOL: return cg->t_i1;
  default: return cg_stype(cg, dt);
  }
}

LLVMValueRef cg_i64(Cg *cg, int64_t v) {
  return LLVMConstInt(cg->t_i64, (unsigned long long)v, 1);
}

LLVMValueRef cg_i32(Cg *cg, int32_t v) {
  return LLVMConstInt(cg->t_i32, (unsigned long long)(int64_t)v, 1);
}

LLVMValueRef cg_const(Cg *cg, DType dt, double v) {
  LLVMTypeRef t = cg_ctype(cg, dt);
  if (dt_is_float(dt)) return LLVMConstReal(t, v);
  if (dt == DT_BOOL) return LLVMConstInt(t, v != 0, 0);
  if (dt == DT_C64) {
    LLVMValueRef e[2] = {LLVMConstReal(cg->t_f32, v),
                         LLVMConstReal(cg->t_f32, 0)};
    return LLVMConstVector(e, 2);
  }
  return LLVMConstInt(t, (unsigned long long)(int64_t)v, 1);
}
