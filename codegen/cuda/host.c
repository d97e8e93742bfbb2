/* host.c: building the host functions of --target=cuda (cuda.h): a
 * graph's enqueue function and the control nodes' host code
 * (control.c) share the signature i32 (in, out, ws, stream), the
 * CPU's function frame (cg_fn_begin: allocas, an error exit returning
 * a failed call's code) and the kernel launch through rlx_gpu_launch.
 */
#include "codegen/cuda/cuda.h"

static LLVMValueRef dims3(Cg *cg, LLVMValueRef a, unsigned x) {
  for (int i = 0; i < 3; i++) {
    LLVMValueRef k = cg_i64(cg, i);
    LLVMBuildStore(cg->b, cg_i32(cg, i ? 1 : (int32_t)x),
                   LLVMBuildInBoundsGEP2(cg->b, cg->t_i32, a, &k, 1, ""));
  }
  return a;
}

LLVMValueRef cu_host_begin(Cu *cu, CuHostFn *h, CgPlan *plan,
                           const char *name) {
  Cg *cg = cu->host;
  LLVMValueRef fn = LLVMAddFunction(cg->mod, name, cu->t_enq);
  LLVMSetLinkage(fn, LLVMPrivateLinkage);
  cg_fn_attrs_baseline(cg, fn);
  h->saved = cg->fn;
  cg_fn_begin(cg, &h->f, fn, plan);
  h->stream = LLVMGetParam(fn, 3);
  h->grid = cg_alloca(cg, LLVMArrayType2(cg->t_i32, 3), "grid");
  h->block = cg_alloca(cg, LLVMArrayType2(cg->t_i32, 3), "block");
  return fn;
}

LLVMValueRef cu_host_end(Cu *cu, CuHostFn *h) {
  Cg *cg = cu->host;
  cg_fn_finish(cg);
  cg->fn = h->saved;
  return h->f.fn;
}

LLVMValueRef cu_host_args(Cu *cu, LLVMValueRef in, LLVMValueRef out,
                          LLVMValueRef ws) {
  Cg *cg = cu->host;
  LLVMBuilderRef b = cg->b;
  LLVMValueRef args = cg_alloca(cg, LLVMArrayType2(cg->t_ptr, 3), "args");
  LLVMValueRef wsp = cg_alloca(cg, cg->t_ptr, "wsp");
  LLVMValueRef dummy = cg_alloca(cg, cg->t_ptr, "dummy");
  LLVMBuildStore(b, LLVMConstNull(cg->t_ptr), dummy);
  LLVMBuildStore(b, ws, wsp);
  /* byval arrays of no element still take a pointer: a dummy one */
  LLVMValueRef a3[3] = {
      LLVMBuildSelect(b, LLVMBuildIsNull(b, in, ""), dummy, in, ""),
      LLVMBuildSelect(b, LLVMBuildIsNull(b, out, ""), dummy, out, ""), wsp};
  for (int i = 0; i < 3; i++) {
    LLVMValueRef k = cg_i64(cg, i);
    LLVMBuildStore(b, a3[i],
                   LLVMBuildInBoundsGEP2(b, cg->t_ptr, args, &k, 1, ""));
  }
  return args;
}

void cu_host_launch(Cu *cu, CuHostFn *h, const CuLaunch *l,
                    LLVMValueRef args) {
  Cg *cg = cu->host;
  LLVMBuilderRef b = cg->b;
  LLVMValueRef k = cg_i64(cg, l->kernel);
  LLVMValueRef kp = LLVMBuildLoad2(
      b, cg->t_ptr, LLVMBuildInBoundsGEP2(b, cg->t_ptr, cu->ktab, &k, 1, ""),
      "");
  LLVMValueRef a[6] = {kp, dims3(cg, h->grid, l->grid),
                       dims3(cg, h->block, l->block), cg_i32(cg, 0),
                       h->stream, args};
  cg_fail_if_nonzero(cg, cg_call(cg, "rlx_gpu_launch", cg->t_i32, a, 6));
}

