/* basic.c: the emitters of graph arguments, constants and reshape, and
 * of ops that are never compiled (emit.h).
 *
 * input/param: bound to inputs[i] by the plan, no code. const: non-splat
 * constants are globals (cg_buf); a splat constant read through a
 * buffer gets a workspace slot, filled here. reshape: shares its
 * operand's bytes (CG_SLOT_ALIAS), skipped by cg_emit_node. lowered:
 * ops a pass rewrites before code generation (lower_quant,
 * expand_fused, lower_scan_bwd). unsupported: a diagnostic.
 */
#include "codegen/emit/emit.h"

static bool cg_emit_unsupported(Cg *cg, Node *n) {
  return cg_unsupported(cg, n, NULL);
}

static bool cg_emit_lowered(Cg *cg, Node *n) {
  return cg_unsupported(cg, n, "internal: not lowered before planning");
}

static bool cg_emit_nothing(Cg *cg, Node *n) {
  (void)cg;
  (void)n;
  return true;
}

/* Returned aliases are copied out by the graph function. */
static bool cg_emit_alias(Cg *cg, Node *n) {
  RLX_ASSERT(cg_slot(cg, n)->kind == CG_SLOT_ALIAS);
  return true;
}

static bool cg_emit_const(Cg *cg, Node *n) {
  CgSlot *s = cg_slot(cg, n);
  if (s->kind != CG_SLOT_WS) return true;
  DType dt = n->type.dt;
  LLVMValueRef v = cg_const_elem(cg, n, 0);
  LLVMValueRef base = cg_buf(cg, n);
  CgLoop l;
  LLVMValueRef i = cg_loop_begin(cg, &l, cg_i64(cg, 0),
                                 cg_i64(cg, type_numel(&n->type)), NULL, 0);
  cg_store(cg, dt, base, i, v);
  cg_loop_end(cg, &l, NULL);
  return true;
}

const CgEmitter cg_emitter_unsupported = {cg_emit_unsupported, NULL, NULL};
const CgEmitter cg_emitter_lowered = {cg_emit_lowered, NULL, NULL};
const CgEmitter cg_emitter_nothing = {cg_emit_nothing, NULL, NULL};
const char *cg_dyn_any(const Node *n) {
  (void)n;
  return NULL;
}

/* no code: the graph function copies a returned alias */
const CgEmitter cg_emitter_alias = {cg_emit_alias, NULL, cg_dyn_any};
const CgEmitter cg_emitter_const = {cg_emit_const, NULL, NULL};
