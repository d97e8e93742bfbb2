/* xent_pairs.c: softmax_cross_entropy forward/backward pairs of the
 * plan (plan.h).
 *
 * A training step computes the cross-entropy of the logits and, in the
 * reverse walk, its backward over the same logits and labels; both need
 * each row's max m and sum s of exp(x - m). cg_xent_pairs() (a target
 * that uses it: the GPU, whose two kernels compute m and s the same
 * way, so the bits do not change) links the backward to the forward
 * (slot.fwd) and has the forward save m and s in a block of its own
 * (saved_bytes: [m of every row][s of every row], the logits' dtype,
 * f32 or f64), live to the backward (cg_memplan); the backward then
 * reads the logits once instead of twice. Linear in the graph.
 */
#include "codegen/plan/plan.h"

void cg_xent_pairs(CgPlan *p, Graph *g) {
  Node **fw = arena_alloc(p->ctx->arena, sizeof *fw * (size_t)(g->next_id + 1));
  for (int i = 0; i <= g->next_id; i++) fw[i] = NULL;
  for (int i = 0; i < g->nnodes; i++) {
    Node *n = g->nodes[i];
    bool bwd = n->op == OP_SOFTMAX_CROSS_ENTROPY_BACKWARD;
    if (!bwd && n->op != OP_SOFTMAX_CROSS_ENTROPY) continue;
    Node *x = n->in[0];
    DType dt = x->type.dt;
    if (!bwd && (dt == DT_F32 || dt == DT_F64))
      fw[x->id] = n; /* the latest forward of these logits */
    Node *f = bwd ? fw[x->id] : NULL;
    if (!f || f->in[1] != n->in[1]) continue;
    p->slot[n->id].fwd = f;
    Type st = {.dt = dt, .rank = 2, .dims = {2, x->type.dims[0]}};
    p->slot[f->id].saved_bytes = /* a dynamic batch: at its bound, or */
        cg_plan_bytes_dim(p->ctx, &st); /* a size without one (-1: none) */
  }
}
