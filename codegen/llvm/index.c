/* index.c: loading and checking index operands (gather, scatter,
 * topk, embedding-like ops; cg.h).
 *
 * An index element is i32, i64, i8, u8 or an integral f32/f64; outside
 * [0, bound), non-integral or NaN, it makes the function return
 * RLX_ERR_INDEX.
 */
#include "codegen/llvm/cg.h"

bool cg_ops_index_dtype_ok(DType dt) {
  return dt == DT_I32 || dt == DT_I64 || dt == DT_F32 || dt == DT_F64 ||
         dt == DT_I8 || dt == DT_U8;
}

LLVMValueRef cg_ops_index(Cg *cg, DType dt, LLVMValueRef base,
                          LLVMValueRef i, int64_t bound_c) {
  return cg_ops_index_v(cg, dt, base, i, cg_i64(cg, bound_c));
}

LLVMValueRef cg_ops_index_v(Cg *cg, DType dt, LLVMValueRef base,
                            LLVMValueRef i, LLVMValueRef bound) {
  LLVMValueRef v = cg_load(cg, dt, base, i);
  if (!dt_is_float(dt)) {
    v = dt == DT_U8 ? LLVMBuildZExt(cg->b, v, cg->t_i64, "")
                    : cg_convert(cg, v, dt, DT_I64);
    cg_check_index(cg, v, bound);
    return v;
  }
  LLVMTypeRef ft = LLVMTypeOf(v);
  LLVMValueRef ge = LLVMBuildFCmp(cg->b, LLVMRealOGE, v,
                                  LLVMConstReal(ft, 0), "");
  LLVMValueRef lt = LLVMBuildFCmp(cg->b, LLVMRealOLT, v,
                                  LLVMBuildSIToFP(cg->b, bound, ft, ""), "");
  LLVMValueRef ok = LLVMBuildAnd(cg->b, ge, lt, "");
  cg_fail_if(cg, LLVMBuildNot(cg->b, ok, ""), 1 /* RLX_ERR_INDEX */);
  LLVMValueRef iv = LLVMBuildFPToSI(cg->b, v, cg->t_i64, "");
  LLVMValueRef back = LLVMBuildSIToFP(cg->b, iv, ft, "");
  cg_fail_if(cg, LLVMBuildFCmp(cg->b, LLVMRealUNE, back, v, ""),
             1 /* RLX_ERR_INDEX */);
  return iv;
}
