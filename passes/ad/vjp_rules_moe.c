/* vjp_rules_moe.c: VJP rules of grouped_matmul, its weight gradient op and
 * dequant_matmul (language.md 6.8, 6.9). Conventions: vjp_rules.h.
 *
 * grouped_matmul(x, w, e) is bilinear in (x, w); with upstream g [T, N]:
 *   dx = grouped_matmul(g, w^T, e)     (w^T: [E, N, K])
 *   dw = grouped_matmul_backward_weight(x, g, e, shape = w's shape)
 * grouped_matmul_backward_weight(x, dy, e) -> [E, K, N] is bilinear in
 * (x, dy); with upstream G (w-shaped):
 *   dx = grouped_matmul(dy, G^T, e),  d_dy = grouped_matmul(x, G, e)
 * The expert ids get no gradient.
 * dequant_matmul(x, w, s) = x W with W = w * s (the scales broadcast per
 * column, or per group of group_size rows): with x and g as matrices
 * [M, K] and [M, N],
 *   dx = g W^T,   ds = sum over each group's rows of w * (x^T g).
 * w (i8) gets no gradient.
 */
#include "passes/ad/vjp_rules.h"

static Node *swap12(GradCtx *gc, Node *w) {
  static const int64_t perm[3] = {0, 2, 1};
  return ib_transpose(B, w, perm);
}

static Node *grouped(GradCtx *gc, Node *x, Node *w, Node *e) {
  Node *in[3] = {x, w, e};
  return ib_finish(B, ib_op(B, OP_GROUPED_MATMUL, in, 3));
}

bool vjp_grouped_matmul(GradCtx *gc, const Node *n, Node *g) {
  if (WANT(0)) ACC(0, grouped(gc, g, swap12(gc, X(1)), X(2)));
  if (WANT(1)) {
    Node *in[3] = {X(0), g, X(2)};
    Node *r = ib_op(B, OP_GROUPED_MATMUL_BACKWARD_WEIGHT, in, 3);
    const Type *w = &n->in[1]->type;
    ir_attr_set_ints(B->c, r, ATTR_SHAPE, w->dims, w->rank);
    ACC(1, ib_finish(B, r));
  }
  return true;
}

bool vjp_grouped_matmul_backward_weight(GradCtx *gc, const Node *n,
                                        Node *g) {
  if (WANT(0)) ACC(0, grouped(gc, X(1), swap12(gc, g), X(2)));
  if (WANT(1)) ACC(1, grouped(gc, X(0), g, X(2)));
  return true;
}

/* Group count, group size, K and N of a dequant_matmul. */
static void dq_geom(const Node *n, int64_t *ng, int64_t *gs, int64_t *k,
                    int64_t *nn) {
  *k = n->in[1]->type.dims[0];
  *nn = n->in[1]->type.dims[1];
  *ng = n->in[2]->type.rank == 2 ? n->in[2]->type.dims[0] : 1;
  *gs = *ng ? *k / *ng : 0;
}

/* w * s as [K, N] (group rows: per group, w as [groups, size, N]). */
static Node *dq_weight(GradCtx *gc, const Node *n, Node *wf, Node *s) {
  int64_t ng, gs, k, nn;
  dq_geom(n, &ng, &gs, &k, &nn);
  if (n->in[2]->type.rank == 1) return MUL(wf, s);
  int64_t d3[3] = {ng, gs, nn}, s3[3] = {ng, 1, nn}, d2[2] = {k, nn};
  Node *p = MUL(ib_reshape(B, wf, 3, d3), ib_reshape(B, s, 3, s3));
  return ib_reshape(B, p, 2, d2);
}

bool vjp_dequant_matmul(GradCtx *gc, const Node *n, Node *g) {
  int64_t ng, gs, k, nn;
  dq_geom(n, &ng, &gs, &k, &nn);
  const Type *xt = &n->in[0]->type;
  int64_t m = 1; /* x's rows: its leading dims (a size: may be dynamic) */
  for (int i = 0; i + 1 < xt->rank; i++) {
    DimStatus st = dim_mul(B->c, m, xt->dims[i], &m);
    RLX_ASSERT(st == DIM_OK); /* a factor of x's element count */
  }
  int64_t xd[2] = {m, k}, gd[2] = {m, nn};
  Node *wf = ib_cast(B, X(1), DT);
  Node *g2 = ib_reshape(B, g, 2, gd);
  if (WANT(0)) {
    Node *dx = BIN(OP_MATMUL, g2, ib_mT(B, dq_weight(gc, n, wf, X(2))));
    ACC(0, ib_reshape_as(B, dx, &n->in[0]->type));
  }
  if (WANT(2)) {
    Node *x2 = ib_reshape(B, X(0), 2, xd);
    Node *q = MUL(wf, BIN(OP_MATMUL, ib_mT(B, x2), g2));
    if (n->in[2]->type.rank == 1) {
      static const int64_t ax0[1] = {0};
      ACC(2, ib_reduce(B, OP_REDUCE_SUM, q, ax0, 1, false));
    } else {
      static const int64_t ax1[1] = {1};
      int64_t d3[3] = {ng, gs, nn};
      ACC(2, ib_reduce(B, OP_REDUCE_SUM, ib_reshape(B, q, 3, d3), ax1, 1,
                       false));
    }
  }
  return true;
}
