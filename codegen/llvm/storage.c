/* storage.c: addresses of the plan's storage in the function being
 * emitted (cg.h).
 *
 * cg_buf(n) is the pointer to n's bytes as the plan placed them: the
 * n-th inputs/outputs pointer, ws + offset (cg_ws_at: an offset of the
 * run-time layout is read from its table, or on the GPU from the
 * sizes array after the symbols), a private 64-byte aligned
 * constant global (made at the first use, kept in the plan's target
 * data), the owner of an alias, or for a prologue-fused node a marker
 * pointer (prologue.c).
 */
#include "codegen/llvm/cg.h"

#include <string.h>

CgSlot *cg_slot(Cg *cg, Node *n) { return cg_plan_slot(cg->fn->plan, n); }

LLVMValueRef cg_arg_ptr(Cg *cg, LLVMValueRef arr, int i) {
  LLVMValueRef idx = cg_i64(cg, i);
  LLVMValueRef p = LLVMBuildInBoundsGEP2(cg->b, cg->t_ptr, arr, &idx, 1, "");
  return LLVMBuildLoad2(cg->b, cg->t_ptr, p, "");
}

static LLVMValueRef const_global(Cg *cg, Node *n) {
  int64_t bytes = type_bytes(&n->type);
  LLVMValueRef init = LLVMConstStringInContext(
      cg->lc, (const char *)n->data, (unsigned)bytes, 1);
  LLVMValueRef g = LLVMAddGlobal(cg->mod, LLVMTypeOf(init), "rlx.const");
  LLVMSetInitializer(g, init);
  LLVMSetGlobalConstant(g, 1);
  LLVMSetLinkage(g, LLVMPrivateLinkage);
  LLVMSetUnnamedAddress(g, LLVMGlobalUnnamedAddr);
  LLVMSetAlignment(g, 64);
  return g;
}

/* n's global, made at its first use (the plan's target data). */
static LLVMValueRef const_of(Cg *cg, Node *n) {
  CgPlan *p = cg->fn->plan;
  if (!p->target) {
    size_t bytes = sizeof(void *) * (size_t)(p->nslots + 1);
    p->target = memset(arena_alloc(cg->ctx->arena, bytes), 0, bytes);
  }
  if (!p->target[n->id]) p->target[n->id] = const_global(cg, n);
  return p->target[n->id];
}

LLVMValueRef cg_ws_at(Cg *cg, int64_t off) {
  int k = cg_off_dyn(off);
  if (k < 0) return cg_gep(cg, cg->fn->ws, cg_i64(cg, off));
  LLVMValueRef tab = cg->fn->sizes ? cg->fn->sizes : cg->fn->ws; /* dims.c */
  int64_t at = cg->fn->sizes ? 8 * (int64_t)(dim_nsyms() + k)
                             : cg->fn->plan->dyn_tab + 8 * (int64_t)k;
  LLVMValueRef v = LLVMBuildLoad2(cg->b, cg->t_i64,
                                  cg_gep(cg, tab, cg_i64(cg, at)), "");
  LLVMSetAlignment(v, 8);
  return cg_gep(cg, cg->fn->ws, v);
}

LLVMValueRef cg_buf(Cg *cg, Node *n) {
  CgSlot *s = cg_slot(cg, n);
  switch (s->kind) {
  case CG_SLOT_INPUT: return cg_arg_ptr(cg, cg->fn->in, s->index);
  case CG_SLOT_OUTPUT: return cg_arg_ptr(cg, cg->fn->out, s->index);
  case CG_SLOT_WS: return cg_ws_at(cg, s->offset);
  case CG_SLOT_CONST: return const_of(cg, n);
  case CG_SLOT_ALIAS: return cg_buf(cg, s->alias);
  case CG_SLOT_VIEW:
    return cg_gep(cg, cg_buf(cg, s->alias), cg_i64(cg, s->offset));
  case CG_SLOT_FUSED: return cg_fused_src(cg, n); /* prologue marker */
  case CG_SLOT_EPI: { /* a marker: stores through it store the group */
    LLVMValueRef rp, p = cg_fused_src(cg, n);
    if (cg_epi_root(cg, p, &rp)) return p;
    LLVMBasicBlockRef cur = LLVMGetInsertBlock(cg->b);
    LLVMPositionBuilderAtEnd(cg->b, cg->fn->alloca_bb); /* dominates all */
    rp = cg_buf(cg, s->store_as);
    LLVMPositionBuilderAtEnd(cg->b, cur);
    cg_epi_bind(cg, p, s->store_as, rp);
    return p;
  }
  default:
    RLX_ASSERT(!"cg_buf: node has no storage");
    return NULL;
  }
}

LLVMValueRef cg_scratch(Cg *cg, Node *n) {
  CgSlot *s = cg_slot(cg, n);
  RLX_ASSERT(s->scratch_off != -1);
  return cg_ws_at(cg, s->scratch_off);
}

LLVMValueRef cg_ops_const_global(Cg *cg, LLVMValueRef init, const char *name) {
  LLVMValueRef gv = LLVMAddGlobal(cg->mod, LLVMTypeOf(init), name);
  LLVMSetInitializer(gv, init);
  LLVMSetGlobalConstant(gv, 1);
  LLVMSetLinkage(gv, LLVMPrivateLinkage);
  LLVMSetUnnamedAddress(gv, LLVMGlobalUnnamedAddr);
  LLVMSetAlignment(gv, 8);
  return gv;
}
