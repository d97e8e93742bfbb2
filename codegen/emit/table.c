/* table.c: the per-op emitter table and node dispatch (emit.h).
 *
 * The table has one entry per row of ir/ops.def, expanded from its
 * `emit` column as [OP_ID] = &cg_emitter_E, so adding an op without
 * deciding how it is compiled fails the build. Ops that are not
 * compiled use cg_emitter_unsupported: a diagnostic naming the op,
 * never a silent miscompile.
 */
#include "codegen/emit/emit.h"

#include <string.h>

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
  if (cg_plan_elsewhere(cg->fn->plan, n)) return true;
  if (!dtype_ok(cg, n)) return false;
  int nfsrc = cg->nfsrc; /* prologue markers live for one emitter */
  bool ok = cg_op_entry(n->op)->emit(cg, n);
  cg->nfsrc = nfsrc;
  return ok;
}

/* A symbol of t that is not among g's arguments' (seen), or -1. */
static int unknown_sym(const Type *t, const bool *seen) {
  for (int d = 0; d < t->rank; d++) {
    int sy[DIM_MAX_SYMS], k = dim_syms(t->dims[d], sy);
    for (int j = 0; j < k; j++)
      if (!seen[sy[j]]) return sy[j];
  }
  return -1;
}

/* The emitters whose scratch function takes sizes without a bound
 * (emit.h) and, for those that compute it at run time, how. */
static const struct {
  const CgEmitter *e;
  CgScratchRtFn rt;
} unbounded_scratch[] = {
    {&cg_emitter_matmul, NULL},     /* none with dynamic sizes */
    {&cg_emitter_norm_param, NULL}, /* none with dynamic sizes */
    {&cg_emitter_softmax, NULL},    /* a size expression */
    {&cg_emitter_attention, cg_attention_scratch_rt},
    {&cg_emitter_conv, cg_conv_scratch_rt},
    {&cg_emitter_fft, cg_fft_scratch_rt},
    {&cg_emitter_ssm, cg_ssm_scratch_rt},
    {&cg_emitter_qgemm, cg_qgemm_scratch_rt},
    {&cg_emitter_grouped_matmul, cg_gm_scratch_rt},
    {&cg_emitter_scan, cg_control_scratch_rt},
    {&cg_emitter_if, cg_control_scratch_rt},
    {&cg_emitter_while, cg_control_scratch_rt},
    {&cg_emitter_custom_fn, cg_control_scratch_rt},
    {&cg_emitter_sample, NULL},  /* a size expression */
    {&cg_emitter_dequant_matmul, NULL}, /* static: K, N */
    {&cg_emitter_solve, NULL},          /* static: N */
    {&cg_emitter_log_mel, NULL}, /* a size expression */
};
enum { N_UNBOUNDED = sizeof unbounded_scratch / sizeof unbounded_scratch[0] };

static bool scratch_dims(const CgEmitter *e) {
  for (int i = 0; i < N_UNBOUNDED; i++)
    if (unbounded_scratch[i].e == e) return true;
  return false;
}

CgScratchRtFn cg_op_scratch_rt(Op op) {
  for (int i = 0; i < N_UNBOUNDED; i++)
    if (unbounded_scratch[i].e == cg_op_entry(op))
      return unbounded_scratch[i].rt;
  return NULL;
}

/* A symbol without a bound in n's type or its operands', or -1. */
static int unbounded_sym(const Node *n) {
  for (int k = -1; k < n->nin; k++) {
    const Type *t = k < 0 ? &n->type : &n->in[k]->type;
    for (int d = 0; d < t->rank; d++) {
      int sy[DIM_MAX_SYMS], m = dim_syms(t->dims[d], sy);
      for (int j = 0; j < m; j++)
        if (!dim_sym_bound_at(sy[j])) return sy[j];
    }
  }
  return -1;
}

bool cg_dyn_check(Cg *cg, Graph *g) {
  if (dim_nsyms() == 0) return true;
  bool ok = true;
  bool *seen = arena_alloc(cg->ctx->arena, (size_t)dim_nsyms());
  memset(seen, 0, (size_t)dim_nsyms());
  for (int i = 0; i < g->nargs; i++)
    for (int d = 0; d < g->args[i]->type.rank; d++) {
      int sy[DIM_MAX_SYMS], k = dim_syms(g->args[i]->type.dims[d], sy);
      for (int j = 0; j < k; j++) seen[sy[j]] = true;
    }
  for (int i = 0; ok && i < g->nnodes; i++) {
    Node *n = g->nodes[i];
    if (n->op == OP_INPUT || n->op == OP_PARAM || !node_dynamic(n)) continue;
    const CgEmitter *e = cg_op_entry(n->op);
    int unk = unknown_sym(&n->type, seen), unb = unbounded_sym(n);
    char ub[160];
    const char *why = e->dyn ? e->dyn(n)
                             : "the op takes static sizes only for now";
    if (unk >= 0)
      why = ub, snprintf(ub, sizeof ub, "?%s is no argument's size, so no "
                         "call can give it", dim_sym_name_at(unk));
    else if (!why && unb >= 0 && e->scratch && !scratch_dims(e))
      why = ub, snprintf(ub, sizeof ub, "its scratch memory is laid out for "
                         "a bound, and ?%s has none (write ?%s<=N)",
                         dim_sym_name_at(unb), dim_sym_name_at(unb));
    if (!why) continue;
    char ts[160];
    ok = diag_error(cg->ctx, n->loc, "codegen: op '%s' of %%%s (%s) with "
                    "dynamic sizes: %s (docs/dynamic-dims.md lists what "
                    "compiles)", op_name(n->op), n->name ? n->name : "?",
                    type_str(&n->type, ts, sizeof ts), why);
  }
  cg->failed |= !ok;
  return ok;
}
