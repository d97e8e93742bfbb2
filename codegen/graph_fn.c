/* graph_fn.c: compiling one Graph into a function (cg_unit.h).
 *
 * cg_compile_graph() turns a Graph into an internal function
 * `i32 f(ptr inputs, ptr outputs, ptr ws)`: plan it (attention groups,
 * fusion), ask every node's emitter for scratch, place memory, then run
 * the emitters in node order and finally copy returned values that were
 * not computed in place (inputs, constants, aliases, repeated returns)
 * into their outputs. A graph of more than CG_SEGMENT_NODES nodes that
 * emit code becomes a chain of segment functions (runs of their calls
 * become call tables, calltable.c). Compiled graphs are cached per
 * Graph. It installs itself as the graph_fn hook (the control-flow
 * emitters compile their subgraphs through cg_graph_fn) and the
 * emitters' hooks (cg_emit_hooks) before the first emitter runs.
 */
#include "codegen/cg_unit.h"

#include <string.h>

#include "runtime/rlxrt.h"

/* Fuse, collect scratch requests, plan. */
static CgPlan *plan_graph(Cg *cg, Graph *g) {
  if (!cg_dyn_check(cg, g)) return NULL;
  CgPlan *p = cg_plan_new(cg->ctx, g);
  cg_attention_groups(p, g, false);
  if (!cg_fuse(g, p)) return NULL;
  cg_views(p, g, false);
  int64_t *scratch = arena_alloc(cg->ctx->arena,
                                 sizeof(int64_t) * (size_t)(g->next_id + 1));
  struct CgPlan *outer = cg->planning;
  cg->planning = p;
  bool ok = true;
  for (int i = 0; ok && i < g->nnodes; i++) {
    Node *n = g->nodes[i];
    const CgEmitter *e = cg_op_entry(n->op);
    CgSlotKind k = p->slot[n->id].kind;
    if (e->scratch && (k == CG_SLOT_NONE ||
                       (k == CG_SLOT_VIEW && n->op != OP_NARROW))) {
      scratch[n->id] = e->scratch(cg, n);
      ok = scratch[n->id] != -1;
    }
  }
  cg->planning = outer;
  return ok && cg_memplan(g, p, scratch) ? p : NULL;
}

static void copy_outputs(Cg *cg, Graph *g) {
  for (int j = 0; j < g->nret; j++) {
    Node *r = g->rets[j];
    CgSlot *s = cg_slot(cg, r);
    if (s->kind == CG_SLOT_OUTPUT && s->index == j) continue;
    if (s->kind == CG_SLOT_INPUT && g->ret_into && g->ret_into[j] == s->index)
      continue; /* an in-place return that is its argument: unchanged */
    LLVMBuildMemCpy(cg->b, cg_arg_ptr(cg, cg->fn->out, j), 1, cg_buf(cg, r),
                    1, cg_bytes(cg, &r->type));
  }
}

/* Does n's emitter produce code (not fused, a side output, folded,
 * aliased or an argument)? */
static bool emits_code(Cg *cg, const Node *n) {
  return !cg_plan_elsewhere(cg->fn->plan, n) && n->op != OP_INPUT &&
         n->op != OP_PARAM && n->op != OP_CONST;
}

static bool emit_nodes(Cg *cg, Graph *g, int from, int to) {
  for (int i = from; i < to; i++)
    if (!cg_emit_node(cg, g->nodes[i])) {
      cg->failed = true;
      return false;
    }
  return true;
}

/* Is block s one of the blocks from fn's first up to b? */
static bool at_or_before(LLVMValueRef fn, LLVMBasicBlockRef s,
                         LLVMBasicBlockRef b) {
  for (LLVMBasicBlockRef x = LLVMGetFirstBasicBlock(fn); x;
       x = LLVMGetNextBasicBlock(x)) {
    if (x == s) return true;
    if (x == b) return false;
  }
  return false;
}

/* Does fn branch back to a block at or before the branch (a loop)?
 * Quadratic in the blocks of one segment, which are few. */
static bool has_loop(LLVMValueRef fn) {
  for (LLVMBasicBlockRef b = LLVMGetFirstBasicBlock(fn); b;
       b = LLVMGetNextBasicBlock(b)) {
    LLVMValueRef t = LLVMGetBasicBlockTerminator(b);
    unsigned n = t ? LLVMGetNumSuccessors(t) : 0;
    for (unsigned k = 0; k < n; k++)
      if (at_or_before(fn, LLVMGetSuccessor(t, k), b)) return true;
  }
  return false;
}

/* Nodes [from, to) as a function of their own, called from the current
 * one: every value lives in memory (the plan), so a graph splits
 * anywhere between nodes. A segment without loops is only address
 * arithmetic and calls (loop nests are outlined bodies): it is marked
 * optnone, so LLVM neither optimizes it nor selects its instructions
 * with the slow selector. */
static bool emit_segment(Cg *cg, Graph *g, int from, int to) {
  CgFn *outer = cg->fn;
  LLVMBasicBlockRef bb = LLVMGetInsertBlock(cg->b);
  char name[300];
  snprintf(name, sizeof name, "rlx.seg.%s.%d", g->name, cg->uniq++);
  LLVMValueRef fn = LLVMAddFunction(cg->mod, name, cg->t_graph_fn);
  LLVMSetLinkage(fn, LLVMInternalLinkage);
  cg_fn_attrs(cg, fn);
  cg_noinline(cg, fn);
  CgFn f;
  cg_fn_begin(cg, &f, fn, outer->plan);
  bool ok = emit_nodes(cg, g, from, to);
  if (ok) cg_fn_finish(cg);
  cg->fn = outer;
  LLVMPositionBuilderAtEnd(cg->b, bb);
  if (!ok) return false;
  if (cg_call_tables(cg, fn)) { /* its calls moved here */
    LLVMDeleteFunction(fn);
    return true;
  }
  if (!has_loop(fn)) cg_optnone(cg, fn);
  LLVMValueRef a[3] = {outer->in, outer->out, outer->ws};
  LLVMValueRef r = LLVMBuildCall2(cg->b, cg->t_graph_fn, fn, a, 3, "");
  if (f.can_fail) cg_fail_if_nonzero(cg, r);
  return true;
}

/* A graph of more than CG_SEGMENT_NODES nodes that emit code becomes a
 * sequence of calls to segment functions of at most that many: LLVM's
 * cost grows faster than linearly in the size of one function. */
static bool emit_body(Cg *cg, Graph *g, LLVMValueRef fn, CgPlan *p) {
  CgFn f;
  cg_fn_begin(cg, &f, fn, p);
  int total = 0;
  for (int i = 0; i < g->nnodes; i++) total += emits_code(cg, g->nodes[i]);
  bool ok = true;
  if (total <= CG_SEGMENT_NODES) ok = emit_nodes(cg, g, 0, g->nnodes);
  for (int i = 0, cnt = 0, from = 0; ok && total > CG_SEGMENT_NODES &&
                                     i < g->nnodes; i++) {
    cnt += emits_code(cg, g->nodes[i]);
    if (cnt == CG_SEGMENT_NODES || i == g->nnodes - 1) {
      ok = emit_segment(cg, g, from, i + 1);
      from = i + 1;
      cnt = 0;
    }
  }
  if (!ok) return false;
  copy_outputs(cg, g);
  cg_fn_finish(cg);
  return true;
}

CgPlan *cg_graph_plan(const Cg *cg, const Graph *g) {
  for (CgSub *s = cg->subs; s; s = s->next)
    if (s->g == g) return s->plan;
  return NULL;
}

LLVMValueRef cg_compile_graph(Cg *cg, Graph *g, int64_t *ws_bytes) {
  cg->graph_fn = cg_compile_graph;
  cg->layout_fn = cg_layout_fn;
  cg_emit_hooks(cg);
  for (CgSub *s = cg->subs; s; s = s->next)
    if (s->g == g) {
      *ws_bytes = s->ws_bytes;
      return s->fn;
    }
  CgFn *saved_fn = cg->fn;
  LLVMBasicBlockRef saved_bb = LLVMGetInsertBlock(cg->b);
  LLVMValueRef fn = NULL;
  CgPlan *p = plan_graph(cg, g);
  if (p) {
    char name[256];
    snprintf(name, sizeof name, "rlx.graph.%s.%d", g->name, cg->uniq++);
    fn = LLVMAddFunction(cg->mod, name, cg->t_graph_fn);
    LLVMSetLinkage(fn, LLVMInternalLinkage);
    cg_fn_attrs(cg, fn);
    if (!emit_body(cg, g, fn, p)) fn = NULL;
  }
  cg->fn = saved_fn;
  if (saved_bb) LLVMPositionBuilderAtEnd(cg->b, saved_bb);
  if (!fn) return NULL;
  CgSub *s = arena_alloc(cg->ctx->arena, sizeof *s);
  *s = (CgSub){g, fn, p->ws_bytes, cg->subs, p, NULL};
  cg->subs = s;
  *ws_bytes = p->ws_bytes;
  return fn;
}
