/* grad_accum.c: the one place where gradients meet operands, below
 * the VJP rules and the reverse walk that call it: grad_accum reduces a
 * gradient whose shape is a broadcast of its operand's shape (summing
 * the stretched axes) and sums the contributions to one value with
 * `add`; vjp_same_attrs builds an op with a node's attributes (adjoint
 * pairs such as cumsum / cumsum_backward). Declared in ad.h / vjp_rules.h.
 */
#include "passes/ad/vjp_rules.h"

static bool differentiable(const Node *n) {
  return dt_is_float(n->type.dt) || dt_is_complex(n->type.dt);
}

Node *grad_unbroadcast(IrBuilder *b, Node *g, const Type *t) {
  const Type *gt = &g->type;
  RLX_ASSERT(gt->dt == t->dt && gt->rank >= t->rank);
  if (type_eq(gt, t)) return g;
  int off = gt->rank - t->rank, k = 0;
  int64_t axes[RLX_MAX_RANK];
  for (int i = 0; i < gt->rank; i++) {
    bool stretched = i < off || t->dims[i - off] == 1;
    if (stretched && gt->dims[i] != 1) axes[k++] = i;
  }
  if (k) g = ib_reduce(b, OP_REDUCE_SUM, g, axes, k, false);
  if (!type_eq(&g->type, t)) g = ib_reshape_as(b, g, t);
  return g;
}

void grad_accum(GradCtx *gc, const Node *opnd, Node *g) {
  if (!gc->active[opnd->id] || !differentiable(opnd)) return;
  g = grad_unbroadcast(&gc->b, g, &opnd->type);
  Node **slot = &gc->adj[opnd->id];
  *slot = *slot ? ib_bin(&gc->b, OP_ADD, *slot, g) : g;
}

Node *vjp_same_attrs(GradCtx *gc, const Node *n, Op op, Node *const *in,
                     int nin) {
  Node *r = ib_op(B, op, in, nin);
  ir_attr_copy_all(B->c, r, n);
  return ib_finish(B, r);
}
