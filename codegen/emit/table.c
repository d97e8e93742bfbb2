/* table.c: the per-op emitter table and node dispatch (emit.h).
 *
 * The table has one entry per row of ir/ops.def, expanded from its
 * `emit` column as [OP_ID] = &cg_emitter_E, so adding an op without
 * deciding how it is compiled fails the build. Ops that are not
 * compiled use cg_emitter_unsupported: a diagnostic naming the op,
 * never a silent miscompile.
 */
#include "codegen/emit/emit.h"

static const CgEmitter *const table[OP_COUNT] = {
#define OP(id, name, nmin, nmax, flags, rule, vjp, jvp, emit, attrs, math) \
  [OP_##id] = &cg_emitter_##emit,
#include "ir/ops.def"
#undef OP
};

const CgEmitter *cg_op_entry(Op op) {
  RLX_ASSERT(op >= 0 && op < OP_COUNT);
  return table[op];
}

bool cg_op_compiles(Op op) {
  return cg_op_entry(op) != &cg_emitter_unsupported;
}

void cg_emit_hooks(Cg *cg) { cg->fused_load = cg_fused_load; }

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
