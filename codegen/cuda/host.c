/* host.c: building the host functions of --target=cuda (cuda.h): a
 * graph's enqueue function and the control nodes' host code
 * (control.c) share the signature i32 (in, out, ws, stream), the
 * CPU's function frame (cg_fn_begin: allocas, an error exit returning
 * a failed call's code) and the kernel launch through rlx_gpu_launch.
 */
#include "codegen/cuda/cuda.h"

static LLVMValueRef dims3(Cg *cg, LLVMValueRef a, LLVMValueRef x) {
  for (int i = 0; i < 3; i++) {
    LLVMValueRef k = cg_i64(cg, i);
    LLVMBuildStore(cg->b, i ? cg_i32(cg, 1) : x,
                   LLVMBuildInBoundsGEP2(cg->b, cg->t_i32, a, &k, 1, ""));
  }
  return a;
}

LLVMValueRef cu_layout_sizes(Cg *cg, LLVMValueRef hdr, LLVMValueRef layout,
                             int ndyn, LLVMValueRef *r) {
  int64_t ns = dim_nsyms();
  LLVMValueRef a = LLVMBuildAlloca(
      cg->b, LLVMArrayType2(cg->t_i64, (uint64_t)(ns + ndyn)), "sizes");
  LLVMValueRef tab = LLVMBuildAlloca(
      cg->b, LLVMArrayType2(cg->t_i64, 3 * (uint64_t)ndyn), "layout");
  cg_memcpy(cg, a, hdr, 8 * ns);
  *r = cg_call_layout(cg, layout, hdr, tab);
  cg_memcpy(cg, cg_gep(cg, a, cg_i64(cg, 8 * ns)), tab, 8 * (int64_t)ndyn);
  return a;
}

static void or_over(Cg *cg, LLVMValueRef *ovf, LLVMValueRef v,
                    int64_t most) {
  LLVMValueRef o = LLVMBuildICmp(cg->b, LLVMIntUGT, v, cg_i64(cg, most), "");
  *ovf = *ovf ? LLVMBuildOr(cg->b, *ovf, o, "") : o;
}

LLVMValueRef cu_grid_blocks(Cg *cg, const CuLaunch *l, LLVMValueRef *ovf) {
  LLVMBuilderRef b = cg->b;
  LLVMValueRef g = cg_i64(cg, l->grid);
  for (int k = 0; k < 2; k++) {
    int64_t d = k ? l->gdim2 : l->gdim;
    LLVMValueRef per = cg_i64(cg, k ? l->gper2 : l->gper);
    if (!d) continue;
    LLVMValueRef n = cg_add_i64(cg, ovf ? cg_dim_checked(cg, d, ovf)
                                        : cg_dim(cg, d),
                                LLVMBuildSub(b, per, cg_i64(cg, 1), ""));
    LLVMValueRef f = LLVMBuildUDiv(b, n, per, "");
    if (ovf) or_over(cg, ovf, f, INT32_MAX); /* the product cannot wrap */
    g = LLVMBuildMul(b, g, f, "");
  }
  if (ovf) or_over(cg, ovf, g, INT32_MAX);
  return g;
}

/* l's grid: constant, or cu_grid_blocks from the sizes (at most the
 * grid of the sizes' bounds, which the kernel was made for, or checked
 * by the entry: grids_ok); with *skip the block to go to when it is 0
 * (nothing to launch). */
static LLVMValueRef grid_of(Cg *cg, const CuLaunch *l,
                            LLVMBasicBlockRef *skip) {
  *skip = NULL;
  if (!l->gdim) return cg_i32(cg, (int32_t)l->grid);
  LLVMBuilderRef b = cg->b;
  LLVMValueRef g = cu_grid_blocks(cg, l, NULL);
  LLVMBasicBlockRef go = cg_block(cg, "launch");
  *skip = cg_block(cg, "launched");
  LLVMBuildCondBr(b, LLVMBuildICmp(b, LLVMIntEQ, g, cg_i64(cg, 0), ""), *skip,
                  go);
  LLVMPositionBuilderAtEnd(b, go);
  return LLVMBuildTrunc(b, g, cg->t_i32, "");
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
  h->f.sizes = LLVMGetParam(fn, 4);
  h->grid = cg_alloca(cg, LLVMArrayType2(cg->t_i32, 3), "grid");
  h->block = cg_alloca(cg, LLVMArrayType2(cg->t_i32, 3), "block");
  h->wsp = cg_alloca(cg, cg->t_ptr, "wsp");
  h->args = NULL;
  h->nargs = 0;
  return fn;
}

LLVMValueRef cu_host_end(Cu *cu, CuHostFn *h) {
  Cg *cg = cu->host;
  cg_fn_finish(cg);
  cg->fn = h->saved;
  return h->f.fn;
}

/* The kernelParams entry of parameter p: the address of an element of
 * in or out, of a whole array (a dummy one for a NULL array: a byval
 * array of no element still takes a pointer), or of ws's slot. */
static LLVMValueRef param_addr(Cu *cu, CuHostFn *h, CuParam p,
                               LLVMValueRef in, LLVMValueRef out,
                               LLVMValueRef ws) {
  Cg *cg = cu->host;
  LLVMBuilderRef b = cg->b;
  LLVMValueRef a = p.arr == CU_IN ? in : out;
  if (p.arr == CU_WS) {
    LLVMBuildStore(b, ws, h->wsp);
    return h->wsp;
  }
  if (p.arr == CU_SIZES) return h->f.sizes; /* the byval array's bytes */
  if (p.idx >= 0) {
    LLVMValueRef k = cg_i64(cg, p.idx);
    return LLVMBuildInBoundsGEP2(b, cg->t_ptr, a, &k, 1, "");
  }
  LLVMValueRef dummy = cg_alloca(cg, cg->t_ptr, "dummy");
  LLVMBuildStore(b, LLVMConstNull(cg->t_ptr), dummy);
  return LLVMBuildSelect(b, LLVMBuildIsNull(b, a, ""), dummy, a, "");
}

void cu_host_launch(Cu *cu, CuHostFn *h, const CuLaunch *l, LLVMValueRef in,
                    LLVMValueRef out, LLVMValueRef ws) {
  Cg *cg = cu->host;
  LLVMBuilderRef b = cg->b;
  const CuKernel *kn = &cu->kernels[l->kernel];
  if (kn->npar > h->nargs) {
    h->nargs = kn->npar;
    h->args = cg_alloca(cg, LLVMArrayType2(cg->t_ptr, (uint64_t)h->nargs),
                        "args");
  }
  for (int i = 0; i < kn->npar; i++) {
    LLVMValueRef x = cg_i64(cg, i);
    LLVMBuildStore(b, param_addr(cu, h, kn->par[i], in, out, ws),
                   LLVMBuildInBoundsGEP2(b, cg->t_ptr, h->args, &x, 1, ""));
  }
  LLVMBasicBlockRef skip;
  LLVMValueRef grid = grid_of(cg, l, &skip);
  LLVMValueRef k = cg_i64(cg, l->kernel);
  LLVMValueRef kp = LLVMBuildLoad2(
      b, cg->t_ptr, LLVMBuildInBoundsGEP2(b, cg->t_ptr, cu->ktab, &k, 1, ""),
      "");
  LLVMValueRef a[6] = {kp, dims3(cg, h->grid, grid),
                       dims3(cg, h->block, cg_i32(cg, (int32_t)l->block)),
                       cg_i32(cg, (int32_t)kn->shmem),
                       h->stream,
                       h->args ? h->args : LLVMConstNull(cg->t_ptr)};
  cg_fail_if_nonzero(cg, cg_call(cg, "rlx_gpu_launch", cg->t_i32, a, 6));
  if (skip) {
    LLVMBuildBr(cg->b, skip);
    LLVMPositionBuilderAtEnd(cg->b, skip);
  }
}
