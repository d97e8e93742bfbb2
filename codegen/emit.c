/* emit.c: the per-op emitter table and the trivial emitters.
 *
 * The table has one entry per row of ir/ops.def, built by X-macro from
 * the CG_<ID> macros of emit_table.h / emit_table_ops.h, so adding an
 * op without deciding how it is compiled fails the build. Ops that are
 * not compiled map to cg_emit_unsupported: a diagnostic naming the op,
 * never a silent miscompile.
 */
#include "codegen/cg.h"

#include "codegen/emit_table.h"

static const CgOpEntry table[OP_COUNT] = {
#define OP(id, name, nmin, nmax, flags, rule, vjp, jvp, emit, attrs, math) [OP_##id] = CG_##id,
#include "ir/ops.def"
#undef OP
};

const CgOpEntry *cg_op_entry(Op op) {
  RLX_ASSERT(op >= 0 && op < OP_COUNT);
  return &table[op];
}

bool cg_op_compiles(Op op) {
  return cg_op_entry(op)->emit != cg_emit_unsupported;
}

/* The op table's dtype set (op_dtypes), also enforced by verification:
 * a graph built around the verifier still gets a diagnostic here, so
 * emitters of OPF_F32_F64 ops may assume f32 or f64. */
static bool dtype_ok(Cg *cg, Node *n) {
  if (n->nin == 0 || op_dtype_ok(n->op, n->in[0]->type.dt)) return true;
  char set[64], why[96];
  snprintf(why, sizeof why, "dtype %s (only %s)",
           dt_name(n->in[0]->type.dt),
           dts_str(op_dtypes(n->op), set, sizeof set));
  return cg_unsupported(cg, n, why);
}

bool cg_emit_node(Cg *cg, Node *n) {
  CgSlotKind k = cg_slot(cg, n)->kind;
  if (k == CG_SLOT_FUSED || k == CG_SLOT_FOLDED || k == CG_SLOT_ALIAS)
    return true;
  if (!dtype_ok(cg, n)) return false;
  int nfsrc = cg->nfsrc; /* prologue markers live for one emitter */
  bool ok = cg_op_entry(n->op)->emit(cg, n);
  cg->nfsrc = nfsrc;
  return ok;
}

bool cg_unsupported(Cg *cg, Node *n, const char *why) {
  cg->failed = true;
  if (why)
    return diag_error(cg->ctx, n->loc, "codegen: op '%s' is not supported: %s",
                      op_name(n->op), why);
  return diag_error(cg->ctx, n->loc, "codegen: op '%s' is not supported",
                    op_name(n->op));
}

bool cg_emit_unsupported(Cg *cg, Node *n) {
  return cg_unsupported(cg, n, NULL);
}

/* The ops a pass lowers before code generation (lower_quant,
 * expand_fused, lower_scan_bwd): never emitted. */
bool cg_emit_lowered(Cg *cg, Node *n) {
  return cg_unsupported(cg, n, "internal: not lowered before planning");
}

/* Graph arguments are bound to inputs[i] by the memory plan. */
bool cg_emit_nothing(Cg *cg, Node *n) {
  (void)cg;
  (void)n;
  return true;
}

/* Reshape shares its operand's bytes (CG_SLOT_ALIAS): it is skipped by
 * cg_emit_node; returned aliases are copied out by the graph function. */
bool cg_emit_alias(Cg *cg, Node *n) {
  RLX_ASSERT(cg_slot(cg, n)->kind == CG_SLOT_ALIAS);
  return true;
}

/* Non-splat constants are globals (cg_buf). A splat constant read
 * through a buffer gets a workspace slot, filled here. */
bool cg_emit_const(Cg *cg, Node *n) {
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
