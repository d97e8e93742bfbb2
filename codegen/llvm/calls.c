/* calls.c: calls of runtime and libm functions (declared on first
 * use, nounwind), LLVM intrinsics, memcpy and memset (cg.h).
 */
#include "codegen/llvm/cg.h"

#include <string.h>

LLVMValueRef cg_intrinsic_n(Cg *cg, const char *name, LLVMTypeRef *tys,
                            int nt, LLVMValueRef *args, int nargs) {
  unsigned id = LLVMLookupIntrinsicID(name, strlen(name));
  RLX_ASSERT(id != 0);
  LLVMValueRef f = LLVMGetIntrinsicDeclaration(cg->mod, id, tys, (size_t)nt);
  LLVMTypeRef ft = LLVMIntrinsicGetType(cg->lc, id, tys, (size_t)nt);
  return LLVMBuildCall2(cg->b, ft, f, args, (unsigned)nargs, "");
}

LLVMValueRef cg_intrinsic(Cg *cg, const char *name, LLVMTypeRef t,
                          LLVMValueRef *args, int nargs) {
  return cg_intrinsic_n(cg, name, &t, t ? 1 : 0, args, nargs);
}

LLVMValueRef cg_call(Cg *cg, const char *name, LLVMTypeRef ret,
                     LLVMValueRef *args, int nargs) {
  LLVMTypeRef pt[32];
  RLX_ASSERT(nargs <= 32);
  for (int i = 0; i < nargs; i++) pt[i] = LLVMTypeOf(args[i]);
  LLVMTypeRef ft = LLVMFunctionType(ret, pt, (unsigned)nargs, 0);
  LLVMValueRef f = LLVMGetNamedFunction(cg->mod, name);
  if (!f) {
    f = LLVMAddFunction(cg->mod, name, ft);
    unsigned k = LLVMGetEnumAttributeKindForName("nounwind", 8);
    LLVMAddAttributeAtIndex(f, LLVMAttributeFunctionIndex,
                            LLVMCreateEnumAttribute(cg->lc, k, 0));
  }
  return LLVMBuildCall2(cg->b, ft, f, args, (unsigned)nargs, "");
}

void cg_memcpy(Cg *cg, LLVMValueRef dst, LLVMValueRef src, int64_t bytes) {
  if (bytes <= 0) return;
  LLVMBuildMemCpy(cg->b, dst, 1, src, 1, cg_i64(cg, bytes));
}

void cg_memset0(Cg *cg, LLVMValueRef dst, int64_t bytes) {
  if (bytes <= 0) return;
  LLVMBuildMemSet(cg->b, dst, LLVMConstInt(cg->t_i8, 0, 0),
                  cg_i64(cg, bytes), 1);
}
