/* layout.c: the run-time layout function of a graph whose plan places
 * blocks at run time (sizes without a bound; plan.h, CgPlan.ndyn,
 * docs/dynamic-dims.md).
 *
 * i64 rlx.layout.G(ptr hdr, ptr tab): from the sizes in the header hdr
 * (cg_dim reads them there) it evaluates every block's bytes into tab
 * -- size expressions in checked arithmetic, a scratch area through its
 * emitter (cg_op_scratch_rt: a routine's formula, or a control-flow
 * node's own subgraphs' layouts; a target's own through the Cg's
 * scratch_rt hook) -- checks every value's bytes the same
 * way, so that no size product overflows in the graph's code, and
 * places the blocks (rlx_ws_layout). It returns the workspace bytes,
 * -1 on overflow. The entry runs it on its workspace at each call
 * (codegen/layout.c); a control-flow node on its subgraph's workspace
 * before the calls (control.c, through the layout_fn hook). One
 * function per graph, kept in its CgSub.
 */
#include "codegen/emit/emit.h"

#include <stdlib.h>

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

static LLVMTypeRef layout_type(Cg *cg) {
  LLVMTypeRef pp[2] = {cg->t_ptr, cg->t_ptr};
  return LLVMFunctionType(cg->t_i64, pp, 2, 0);
}

static LLVMValueRef build(Cg *cg, Graph *g, CgPlan *p) {
  char name[300];
  snprintf(name, sizeof name, "rlx.layout.%s.%d", g->name, cg->uniq++);
  LLVMValueRef fn = LLVMAddFunction(cg->mod, name, layout_type(cg));
  LLVMSetLinkage(fn, LLVMInternalLinkage);
  cg_fn_attrs_baseline(cg, fn);
  LLVMBasicBlockRef saved = LLVMGetInsertBlock(cg->b);
  LLVMPositionBuilderAtEnd(cg->b,
                           LLVMAppendBasicBlockInContext(cg->lc, fn, "e"));
  CgFn f = {.fn = fn, .ws = LLVMGetParam(fn, 0), .plan = p}, *outer = cg->fn;
  f.alloca_bb = LLVMGetInsertBlock(cg->b);
  cg->fn = &f; /* cg_dim reads the sizes from hdr */
  LLVMValueRef tab = LLVMGetParam(fn, 1), ovf = NULL;
  int n = p->ndyn;
  for (int k = 0; k < n; k++) {
    Node *rt = p->dyn_node[k];
    LLVMValueRef v;
    if (rt) { /* a scratch its emitter computes (< 0: overflow) */
      v = cg->scratch_rt ? cg->scratch_rt(cg, rt)
                         : cg_op_scratch_rt(rt->op)(cg, rt);
      LLVMValueRef neg = LLVMBuildICmp(cg->b, LLVMIntSLT, v, cg_i64(cg, 0),
                                       "");
      ovf = ovf ? LLVMBuildOr(cg->b, ovf, neg, "") : neg;
    } else {
      v = cg_dim_checked(cg, p->dyn_bytes[k], &ovf);
    }
    LLVMBuildStore(cg->b, v,
                   cg_gep(cg, tab, cg_i64(cg, 8 * ((int64_t)n + k))));
  }
  int64_t *vb = arena_tmp_alloc(cg->ctx->arena,
                                sizeof *vb * ((size_t)g->nnodes + 1));
  for (int i = 0, m = value_bytes(cg, g, vb); i < m; i++)
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
  LLVMBuildCondBr(cg->b,
                  ovf ? ovf : LLVMConstInt(LLVMInt1TypeInContext(cg->lc), 0,
                                           0),
                  bad, go);
  LLVMPositionBuilderAtEnd(cg->b, bad);
  LLVMBuildRet(cg->b, cg_i64(cg, -1));
  LLVMPositionBuilderAtEnd(cg->b, go);
  LLVMValueRef a[4] = {cg_i64(cg, n), range, cg_i64(cg, p->dyn_base), tab};
  LLVMBuildRet(cg->b, cg_call(cg, "rlx_ws_layout", cg->t_i64, a, 4));
  cg->fn = outer;
  if (saved) LLVMPositionBuilderAtEnd(cg->b, saved);
  return fn;
}

LLVMValueRef cg_layout_fn(Cg *cg, Graph *g) {
  for (CgSub *s = cg->subs; s; s = s->next)
    if (s->g == g) {
      if (!s->plan->ndyn) return NULL;
      if (!s->layout) s->layout = build(cg, g, s->plan);
      return s->layout;
    }
  RLX_ASSERT(!"cg_layout_fn: graph not compiled");
  return NULL;
}
