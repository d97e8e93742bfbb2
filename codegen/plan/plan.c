/* plan.c: a plan's lifetime, slot lookup, op classes and fused-tree
 * walks (plan.h), shared by fusion, the memory plan and the targets.
 *
 * Walks: a fused tree is a DAG (a value read twice by one group), so a
 * walk without a visited set is exponential; each walk takes a new
 * epoch and marks the nodes it meets with it.
 */
#include "codegen/plan/plan.h"

int64_t cg_align(int64_t bytes) { return (bytes + 63) & ~(int64_t)63; }

int64_t cg_dim_header(void) {
  int n = dim_nsyms();
  return n ? cg_align(8 * (int64_t)n) : 0;
}

int64_t cg_plan_bytes(const Type *t) {
  return type_is_static(t) ? type_bytes(t) : type_bytes_bound(t);
}

int64_t cg_plan_bytes_dim(Ctx *c, const Type *t) {
  if (type_is_bounded(t)) return cg_align(cg_plan_bytes(t));
  int64_t d;
  if (type_numel_dim(c, t, &d) != DIM_OK ||
      dim_mul(c, d, dt_size(t->dt), &d) != DIM_OK)
    return -1;
  return d;
}

int *cg_use_counts(Arena *a, const Graph *g) {
  int *uses = arena_tmp_alloc(a, ((size_t)g->next_id + 1) * sizeof *uses);
  for (int i = 0; i < g->nnodes; i++)
    for (int k = 0; k < g->nodes[i]->nin; k++) uses[g->nodes[i]->in[k]->id]++;
  for (int j = 0; j < g->nret; j++) uses[g->rets[j]->id] += 2;
  return uses;
}

int64_t cg_plan_slot_bytes(const CgPlan *p, const Node *n) {
  const Type *t = &n->type;
  int64_t P = p->slot[n->id].pitch;
  if (!P) return cg_plan_bytes(t);
  return type_numel(t) / t->dims[t->rank - 1] * P * dt_size(t->dt);
}

CgPlan *cg_plan_new(Ctx *ctx, Graph *g) {
  CgPlan *p = arena_alloc(ctx->arena, sizeof *p);
  p->g = g;
  p->ctx = ctx;
  p->nslots = g->next_id;
  p->slot = arena_alloc(ctx->arena, sizeof(CgSlot) * (size_t)(g->next_id + 1));
  p->seen = arena_alloc(ctx->arena,
                        sizeof(unsigned) * (size_t)(g->next_id + 1));
  for (int i = 0; i <= g->next_id; i++) {
    p->slot[i].scratch_off = -1;
    p->slot[i].def = p->slot[i].last = -1;
  }
  return p;
}

CgSlot *cg_plan_slot(const CgPlan *p, const Node *n) {
  RLX_ASSERT(n->id >= 0 && n->id < p->nslots);
  return &p->slot[n->id];
}

bool cg_plan_elsewhere(const CgPlan *p, const Node *n) {
  const CgSlot *s = cg_plan_slot(p, n);
  return s->kind == CG_SLOT_FUSED || s->kind == CG_SLOT_FOLDED ||
         s->kind == CG_SLOT_ALIAS ||
         (s->kind == CG_SLOT_VIEW && n->op == OP_NARROW) || s->side_of ||
         s->stored_by;
}

bool cg_is_complex_op(Op op) {
  return op == OP_CONJUGATE || op == OP_REAL || op == OP_IMAG ||
         op == OP_COMPLEX || op == OP_COMPLEX_NORM_SQ ||
         op == OP_COMPLEX_NORM_SQ_BACKWARD;
}

bool cg_is_quant_op(Op op) {
  return op == OP_QUANTIZE || op == OP_DEQUANTIZE;
}

bool cg_is_elementwise(Op op) {
  return cg_is_complex_op(op) || cg_is_quant_op(op) ||
         (op_has(op, OPF_ELEMENTWISE) && !op_has(op, OPF_PSEUDO));
}

void cg_walk_begin(CgPlan *plan) { plan->epoch++; }

bool cg_walk_first(CgPlan *plan, const Node *n) {
  if (plan->seen[n->id] == plan->epoch) return false;
  plan->seen[n->id] = plan->epoch;
  return true;
}

bool cg_is_fused(const CgPlan *plan, const Node *n) {
  return plan->slot[n->id].kind == CG_SLOT_FUSED;
}

bool cg_in_tree(const CgPlan *plan, const Node *n) {
  const CgSlot *s = &plan->slot[n->id];
  return s->kind == CG_SLOT_FUSED || s->side_of;
}

void cg_strides(const Type *t, int64_t *strides) {
  int64_t s = 1;
  for (int i = t->rank - 1; i >= 0; i--) {
    strides[i] = s;
    s *= t->dims[i];
  }
}

void cg_bcast_strides(const Type *in, const Type *out, int64_t *strides) {
  int64_t s[RLX_MAX_RANK];
  cg_strides(in, s);
  int off = out->rank - in->rank;
  for (int i = 0; i < out->rank; i++) {
    int j = i - off;
    strides[i] = (j < 0 || in->dims[j] == 1) ? 0 : s[j];
  }
}
