/* layout.c: an entry's sizes and, where they have no bound, the
 * workspace laid out from them at each call (cg_unit.h,
 * docs/dynamic-dims.md).
 *
 * cg_sizes_ok tests the sizes array (each in [0, bound]; a symbol
 * without a bound in [0, RLX_MAX_ELEMS]); cg_store_sizes copies them
 * into a workspace's header, where the graph's code reads them
 * (cg_dim). A plan with blocks placed at run time (CgPlan.ndyn) gets
 * two internal functions:
 *   i64 rlx.layout.NAME(ptr hdr, ptr tab): from the sizes in hdr,
 *     evaluates every block's bytes into tab (size expressions in
 *     checked arithmetic, also each value's bytes, so that no size
 *     product overflows in the graph's code; a scratch area that its
 *     emitter computes at run time, cg_op_scratch_rt) and places them
 *     (rlx_ws_layout); returns the workspace bytes, -1 on overflow;
 *   i64 rlx.wsbytes.NAME(ptr sizes): the same for a sizes array, in a
 *     scratch header and table of its own: bytes, -1 on overflow, -2
 *     when that scratch cannot be allocated.
 * NAME_workspace_bytes(sizes), exported for every entry with sizes,
 * returns the workspace those sizes need: the constant of a static
 * layout, else rlx.wsbytes's result; 0 for invalid sizes.
 */
#include "codegen/cg_unit.h"

#include <stdlib.h>

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

static int cmp_i64(const void *a, const void *b) {
  int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;
  return x < y ? -1 : x > y;
}

/* The bytes of every value of g whose type has a size without a bound,
 * each expression once; -1 where one cannot be formed (the plan failed
 * then already). */
static int value_bytes(Cg *cg, const Graph *g, int64_t *out) {
  int n = 0;
  for (int i = 0; i < g->nnodes; i++)
    if (!type_is_bounded(&g->nodes[i]->type))
      out[n++] = cg_plan_bytes_dim(cg->ctx, &g->nodes[i]->type);
  qsort(out, (size_t)n, sizeof *out, cmp_i64);
  int m = 0;
  for (int i = 0; i < n; i++)
    if (out[i] != -1 && (!m || out[m - 1] != out[i])) out[m++] = out[i];
  return m;
}

static LLVMValueRef internal_fn(Cg *cg, const char *what, const char *name,
                                LLVMTypeRef ft) {
  char buf[300];
  snprintf(buf, sizeof buf, "rlx.%s.%s", what, name);
  LLVMValueRef fn = LLVMAddFunction(cg->mod, buf, ft);
  LLVMSetLinkage(fn, LLVMInternalLinkage);
  cg_fn_attrs_baseline(cg, fn);
  LLVMPositionBuilderAtEnd(cg->b,
                           LLVMAppendBasicBlockInContext(cg->lc, fn, "e"));
  return fn;
}

/* rlx.layout.NAME (see the top). */
static LLVMValueRef layout_fn(Cg *cg, const CgEntry *x, CgPlan *p) {
  LLVMTypeRef pp[2] = {cg->t_ptr, cg->t_ptr};
  LLVMValueRef fn = internal_fn(cg, "layout", x->name,
                                LLVMFunctionType(cg->t_i64, pp, 2, 0));
  CgFn f = {.fn = fn, .ws = LLVMGetParam(fn, 0), .plan = p}, *outer = cg->fn;
  f.alloca_bb = LLVMGetInsertBlock(cg->b);
  cg->fn = &f; /* cg_dim reads the sizes from hdr */
  LLVMValueRef tab = LLVMGetParam(fn, 1), ovf = NULL;
  int n = p->ndyn;
  for (int k = 0; k < n; k++) {
    Node *rt = p->dyn_node[k]; /* a scratch its emitter computes */
    LLVMValueRef v = rt ? cg_op_scratch_rt(rt->op)(cg, rt)
                        : cg_dim_checked(cg, p->dyn_bytes[k], &ovf);
    LLVMBuildStore(cg->b, v,
                   cg_gep(cg, tab, cg_i64(cg, 8 * ((int64_t)n + k))));
  }
  int64_t *vb = arena_tmp_alloc(cg->ctx->arena,
                                sizeof *vb * ((size_t)x->g->nnodes + 1));
  for (int i = 0, m = value_bytes(cg, x->g, vb); i < m; i++)
    cg_dim_checked(cg, vb[i], &ovf);
  arena_tmp_free(cg->ctx->arena, vb);
  LLVMValueRef *r = arena_tmp_alloc(cg->ctx->arena, sizeof *r * 2 * (size_t)n);
  for (int i = 0; i < 2 * n; i++) r[i] = cg_i64(cg, p->dyn_range[i]);
  LLVMValueRef init = LLVMConstArray2(cg->t_i64, r, (uint64_t)(2 * n));
  arena_tmp_free(cg->ctx->arena, r);
  LLVMValueRef range = LLVMAddGlobal(cg->mod, LLVMTypeOf(init), "rlx.range");
  LLVMSetInitializer(range, init);
  LLVMSetGlobalConstant(range, 1);
  LLVMSetLinkage(range, LLVMPrivateLinkage);
  LLVMBasicBlockRef bad = LLVMAppendBasicBlockInContext(cg->lc, fn, "ovf");
  LLVMBasicBlockRef go = LLVMAppendBasicBlockInContext(cg->lc, fn, "go");
  LLVMBuildCondBr(cg->b, ovf ? ovf : LLVMConstInt(LLVMInt1TypeInContext(
                                                       cg->lc), 0, 0),
                  bad, go);
  LLVMPositionBuilderAtEnd(cg->b, bad);
  LLVMBuildRet(cg->b, cg_i64(cg, -1));
  LLVMPositionBuilderAtEnd(cg->b, go);
  LLVMValueRef a[4] = {cg_i64(cg, n), range, cg_i64(cg, p->dyn_base), tab};
  LLVMBuildRet(cg->b, cg_call(cg, "rlx_ws_layout", cg->t_i64, a, 4));
  cg->fn = outer;
  return fn;
}

/* rlx.wsbytes.NAME (see the top). */
static LLVMValueRef wsbytes_fn(Cg *cg, const CgEntry *x, CgPlan *p,
                               LLVMValueRef layout) {
  LLVMValueRef fn = internal_fn(cg, "wsbytes", x->name,
                                LLVMFunctionType(cg->t_i64, &cg->t_ptr, 1, 0));
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
  LLVMValueRef a[2] = {tmp, cg_gep(cg, tmp, cg_i64(cg, hdr))};
  LLVMTypeRef pp[2] = {cg->t_ptr, cg->t_ptr};
  LLVMValueRef r = LLVMBuildCall2(
      cg->b, LLVMFunctionType(cg->t_i64, pp, 2, 0), layout, a, 2, "");
  cg_call(cg, "rlx_free", cg->t_void, &tmp, 1);
  LLVMBuildRet(cg->b, r);
  return fn;
}

bool cg_layout_fns(Cg *cg, CgEntry *x) {
  CgPlan *p = cg_graph_plan(cg, x->g);
  if (p && p->ndyn) {
    x->layout = layout_fn(cg, x, p);
    x->wsbytes = wsbytes_fn(cg, x, p, x->layout);
    x->dyn_tab = p->dyn_tab;
  }
  if (!x->nsyms) return true;
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
    return true;
  }
  LLVMValueRef r = LLVMBuildCall2(
      cg->b, LLVMFunctionType(cg->t_i64, &cg->t_ptr, 1, 0), x->wsbytes,
      &sizes, 1, "");
  LLVMValueRef neg = LLVMBuildICmp(cg->b, LLVMIntSLT, r, cg_i64(cg, 0), "");
  LLVMBuildRet(cg->b, LLVMBuildSelect(cg->b, neg, cg_i64(cg, 0), r, ""));
  return true;
}
