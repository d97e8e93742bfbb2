/* layout.c: an entry's sizes and, where they have no bound, the
 * workspace laid out from them at each call (cg_unit.h,
 * docs/dynamic-dims.md).
 *
 * cg_sizes_ok tests the sizes array (each in [0, bound]; a symbol
 * without a bound in [0, RLX_MAX_ELEMS]); cg_store_sizes copies them
 * into a workspace's header, where the graph's code reads them
 * (cg_dim). A plan with blocks placed at run time (CgPlan.ndyn) has a
 * layout function (emit/layout.c), which the entry runs on its
 * workspace, and gets
 *   i64 rlx.wsbytes.NAME(ptr sizes): the layout for a sizes array, in a
 *     scratch header and table of its own: bytes, -1 on overflow, -2
 *     when that scratch cannot be allocated.
 * NAME_workspace_bytes(sizes), exported for every entry with sizes,
 * returns the workspace those sizes need: the constant of a static
 * layout, else rlx.wsbytes's result; 0 for invalid sizes.
 */
#include "codegen/cg_unit.h"

#include "runtime/rlxrt.h"

static LLVMValueRef size_at(Cg *cg, LLVMValueRef sizes, int i) {
  LLVMValueRef idx = cg_i64(cg, i);
  return LLVMBuildLoad2(
      cg->b, cg->t_i64,
      LLVMBuildInBoundsGEP2(cg->b, cg->t_i64, sizes, &idx, 1, ""), "");
}

LLVMValueRef cg_sizes_ok(Cg *cg, const CgEntry *x, LLVMValueRef sizes) {
  LLVMValueRef ok = LLVMConstInt(LLVMInt1TypeInContext(cg->lc), 1, 0);
  for (int i = 0; i < x->nsyms; i++) {
    int64_t most = dim_sym_bound_at(x->syms[i]);
    LLVMValueRef in = LLVMBuildICmp(cg->b, LLVMIntULE, size_at(cg, sizes, i),
                                    cg_i64(cg, most ? most : RLX_MAX_ELEMS),
                                    ""); /* unsigned: negative ones too */
    ok = LLVMBuildAnd(cg->b, ok, in, "");
  }
  return ok;
}

void cg_store_sizes(Cg *cg, const CgEntry *x, LLVMValueRef sizes,
                    LLVMValueRef ws) {
  for (int i = 0; i < x->nsyms; i++)
    LLVMBuildStore(cg->b, size_at(cg, sizes, i),
                   cg_gep(cg, ws, cg_i64(cg, 8 * (int64_t)x->syms[i])));
}

/* rlx.wsbytes.NAME (see the top). */
static LLVMValueRef wsbytes_fn(Cg *cg, const CgEntry *x, CgPlan *p,
                               LLVMValueRef layout) {
  char name[300];
  snprintf(name, sizeof name, "rlx.wsbytes.%s", x->name);
  LLVMValueRef fn = LLVMAddFunction(
      cg->mod, name, LLVMFunctionType(cg->t_i64, &cg->t_ptr, 1, 0));
  LLVMSetLinkage(fn, LLVMInternalLinkage);
  cg_fn_attrs_baseline(cg, fn);
  LLVMPositionBuilderAtEnd(cg->b,
                           LLVMAppendBasicBlockInContext(cg->lc, fn, "e"));
  int64_t hdr = cg_dim_header();
  LLVMValueRef sz = cg_i64(cg, hdr + 24 * (int64_t)p->ndyn);
  LLVMValueRef tmp = cg_call(cg, "rlx_alloc", cg->t_ptr, &sz, 1);
  LLVMBasicBlockRef nomem = LLVMAppendBasicBlockInContext(cg->lc, fn, "nomem");
  LLVMBasicBlockRef go = LLVMAppendBasicBlockInContext(cg->lc, fn, "go");
  LLVMBuildCondBr(cg->b, LLVMBuildIsNull(cg->b, tmp, ""), nomem, go);
  LLVMPositionBuilderAtEnd(cg->b, nomem);
  LLVMBuildRet(cg->b, cg_i64(cg, -2));
  LLVMPositionBuilderAtEnd(cg->b, go);
  cg_store_sizes(cg, x, LLVMGetParam(fn, 0), tmp);
  LLVMValueRef r = cg_call_layout(cg, layout, tmp,
                                  cg_gep(cg, tmp, cg_i64(cg, hdr)));
  cg_call(cg, "rlx_free", cg->t_void, &tmp, 1);
  LLVMBuildRet(cg->b, r);
  return fn;
}

void cg_layout_fns(Cg *cg, CgEntry *x) {
  CgPlan *p = cg_graph_plan(cg, x->g);
  if (p && p->ndyn) {
    x->layout = cg_layout_fn(cg, x->g);
    x->wsbytes = wsbytes_fn(cg, x, p, x->layout);
    x->dyn_tab = p->dyn_tab;
  }
  if (!x->nsyms) return;
  char name[300];
  snprintf(name, sizeof name, "%s_workspace_bytes", x->name);
  LLVMValueRef fn = LLVMAddFunction(
      cg->mod, name, LLVMFunctionType(cg->t_i64, &cg->t_ptr, 1, 0));
  cg_fn_attrs_baseline(cg, fn);
  LLVMBasicBlockRef e = LLVMAppendBasicBlockInContext(cg->lc, fn, "e");
  LLVMBasicBlockRef bad = LLVMAppendBasicBlockInContext(cg->lc, fn, "bad");
  LLVMBasicBlockRef go = LLVMAppendBasicBlockInContext(cg->lc, fn, "go");
  LLVMPositionBuilderAtEnd(cg->b, e);
  LLVMValueRef sizes = LLVMGetParam(fn, 0);
  LLVMBuildCondBr(cg->b, cg_sizes_ok(cg, x, sizes), go, bad);
  LLVMPositionBuilderAtEnd(cg->b, bad);
  LLVMBuildRet(cg->b, cg_i64(cg, 0));
  LLVMPositionBuilderAtEnd(cg->b, go);
  if (!x->wsbytes) {
    LLVMBuildRet(cg->b, cg_i64(cg, x->ws_bytes));
    return;
  }
  LLVMValueRef r = LLVMBuildCall2(
      cg->b, LLVMFunctionType(cg->t_i64, &cg->t_ptr, 1, 0), x->wsbytes,
      &sizes, 1, "");
  LLVMValueRef neg = LLVMBuildICmp(cg->b, LLVMIntSLT, r, cg_i64(cg, 0), "");
  LLVMBuildRet(cg->b, LLVMBuildSelect(cg->b, neg, cg_i64(cg, 0), r, ""));
}
