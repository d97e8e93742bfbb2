/* vjp_rules_nn.c: VJP rules of the NN layers (language.md 6.5) and of their
 * backward ops (second order). First order emits the closed-form
 * backward ops of 6.9, each a kernel of its own; a backward op is
 * differentiated by re-expressing it through ordinary ops in a small
 * detached graph and running grad_into over that (exact, and only on
 * the second-order path). Conventions: vjp_rules.h.
 */
#include "passes/ad/vjp_rules.h"

/* ---- normalization layers ---- */

/* With dynamic sizes, gamma's gradient is sum_but(g * norm(x, 1, 0))
 * and beta's sum_but(g): ops whose emitters take dynamic rows (the
 * parameter backward ops' kernels take static sizes). group_norm's
 * channels are axis 1. */
static bool norm_params_dyn(GradCtx *gc, const Node *n, Node *g) {
  int ax = n->op == OP_GROUP_NORM ? 1 : ad_norm_axis(n);
  if (WANT(1)) {
    Node *in[3] = {X(0), ib_fill(B, n->in[1]->type, 1),
                   ib_fill(B, n->in[2]->type, 0)};
    Node *xhat = vjp_same_attrs(gc, n, n->op, in, 3);
    ACC(1, ad_sum_but(B, MUL(g, xhat), ax));
  }
  if (WANT(2)) ACC(2, ad_sum_but(B, g, ax));
  return true;
}

bool vjp_layer_norm(GradCtx *gc, const Node *n, Node *g) {
  Node *in[3] = {X(0), X(1), g}, *gin[2] = {X(0), g};
  if (WANT(0))
    ACC(0, vjp_same_attrs(gc, n, OP_LAYER_NORM_BACKWARD_INPUT, in, 3));
  if (!type_is_static(&n->in[0]->type)) return norm_params_dyn(gc, n, g);
  if (WANT(1))
    ACC(1, vjp_same_attrs(gc, n, OP_LAYER_NORM_BACKWARD_GAMMA, gin, 2));
  if (WANT(2)) ACC(2, ad_sum_but(B, g, ad_norm_axis(n)));
  return true;
}
/* (x, gamma, beta) -> the op's three backward ops on (x, gamma, beta, g) */
static bool norm3(GradCtx *gc, const Node *n, Node *g, const Op *bwd) {
  Node *in[4] = {X(0), X(1), X(2), g};
  bool dyn = !type_is_static(&n->in[0]->type); /* rms_norm, group_norm */
  for (int i = 0; i < (dyn ? 1 : 3); i++)
    if (WANT(i)) ACC(i, vjp_same_attrs(gc, n, bwd[i], in, 4));
  return dyn ? norm_params_dyn(gc, n, g) : true;
}
bool vjp_rms_norm(GradCtx *gc, const Node *n, Node *g) {
  static const Op bwd[3] = {OP_RMS_NORM_BACKWARD_INPUT,
                            OP_RMS_NORM_BACKWARD_GAMMA,
                            OP_RMS_NORM_BACKWARD_BETA};
  return norm3(gc, n, g, bwd);
}
bool vjp_group_norm(GradCtx *gc, const Node *n, Node *g) {
  static const Op bwd[3] = {OP_GROUP_NORM_BACKWARD_INPUT,
                            OP_GROUP_NORM_BACKWARD_GAMMA,
                            OP_GROUP_NORM_BACKWARD_BETA};
  return norm3(gc, n, g, bwd);
}
/* x, gamma, beta: the backward ops on (x, gamma, beta, mean, var, g);
 * mean and var from the same per-channel sums, with r = 1/sqrt(var +
 * eps): dmean = -gamma r sum(g), dvar = -gamma r^2 sum(g xhat) / 2.
 * With dynamic sizes the per-channel sums are sum_but(g xhat, 1) and
 * sum_but(g, 1), xhat = batch_norm_inference(x, 1, 0, mean, var), as
 * for the other norms (norm_params_dyn). */
bool vjp_batch_norm(GradCtx *gc, const Node *n, Node *g) {
  static const Op bwd[3] = {OP_BATCH_NORM_INFERENCE_BACKWARD_INPUT,
                            OP_BATCH_NORM_INFERENCE_BACKWARD_GAMMA,
                            OP_BATCH_NORM_INFERENCE_BACKWARD_BETA};
  Node *in[6] = {X(0), X(1), X(2), X(3), X(4), g}, *s[3] = {NULL};
  bool dyn = !type_is_static(&n->in[0]->type);
  for (int i = 0; i < 3; i++) { /* dgamma for var, dbeta for mean */
    if (!WANT(i) && !(i && WANT(5 - i))) continue;
    if (!dyn || i == 0) {
      s[i] = vjp_same_attrs(gc, n, bwd[i], in, 6);
      continue;
    }
    Node *h = g;
    if (i == 1) {
      Node *u[5] = {X(0), ib_fill(B, n->in[1]->type, 1),
                    ib_fill(B, n->in[2]->type, 0), X(3), X(4)};
      h = MUL(g, vjp_same_attrs(gc, n, n->op, u, 5));
    }
    s[i] = ad_sum_but(B, h, 1);
  }
  for (int i = 0; i < 3; i++)
    if (WANT(i)) ACC(i, s[i]);
  if (!WANT(3) && !WANT(4)) return true;
  Node *t = BIN(OP_ADD, X(4), K(ir_attr_float(n, ATTR_EPS, 1e-5)));
  if (WANT(3))
    ACC(3, MUL(UN(OP_NEG, MUL(X(1), s[2])), UN(OP_RSQRT, t)));
  if (WANT(4)) ACC(4, BIN(OP_DIV, MUL(MUL(X(1), s[1]), K(-0.5)), t));
  return true;
}

/* Second order: differentiate the op's expansion (a detached graph
 * over its operands) with the upstream gradient g. */
bool vjp_norm_backward(GradCtx *gc, const Node *n, Node *g) {
  Ctx *c = B->c;
  Graph *s = ib_graph_detached(c, "norm_bwd", n->loc);
  Node *a[6], *in[6], *gr[6] = {NULL};
  for (int i = 0; i < n->nin; i++) {
    char nm[8] = {'a', (char)('0' + i), 0};
    a[i] = ir_arg_new(c, s, OP_INPUT, nm, n->in[i]->type, n->loc);
    in[i] = X(i);
  }
  IrBuilder sb = {c, s, n->loc};
  Node *r = ad_norm_bwd_expand(&sb, n, a);
  ir_set_rets(c, s, &r, 1);
  if (!gc->walk(B, gc->mod, s, in, false, &g, a, n->nin, gr, NULL))
    return false;
  for (int i = 0; i < n->nin; i++) /* unused operand: an exact zero */
    if (WANT(i)) ACC(i, gr[i] ? gr[i] : ib_fill(B, n->in[i]->type, 0));
  return true;
}

/* ---- rope (linear in x: rope and rope_backward are transposes) ---- */

/* rope(x, cos, sin) through primitives (narrow, mul, concat), sin
 * negated for rope_backward: differentiated for the cos/sin
 * gradients only. a[] = {x or dy, cos, sin}. */
#define RB(op, p, q) ib_bin(b, op, p, q)
static Node *rope_expand(IrBuilder *b, const Node *n, Node *const *a) {
  const Type *xt = &a[0]->type;
  int k = xt->rank;
  int64_t d = ir_attr_int(n, ATTR_HEAD_DIM, 1), s = xt->dims[k - 2];
  int64_t r = ir_attr_present(n, ATTR_N_ROT) ? ir_attr_int(n, ATTR_N_ROT, 0)
                                             : d;
  int64_t h = r / 2, dims[RLX_MAX_RANK], cd[3] = {s, 1, h};
  for (int i = 0; i < k - 1; i++) dims[i] = xt->dims[i];
  dims[k - 1] = xt->dims[k - 1] / d;
  dims[k] = d;
  Node *x = ib_reshape(b, a[0], k + 1, dims);
  Node *c = ib_reshape(b, ib_narrow(b, a[1], 1, 0, h), 3, cd);
  Node *sn = ib_reshape(b, ib_narrow(b, a[2], 1, 0, h), 3, cd);
  if (n->op == OP_ROPE_BACKWARD) sn = ib_un(b, OP_NEG, sn);
  Node *x1 = ib_narrow(b, x, k, 0, h), *x2 = ib_narrow(b, x, k, h, h);
  Node *p[3] = {RB(OP_SUB, RB(OP_MUL, x1, c), RB(OP_MUL, x2, sn)),
                RB(OP_ADD, RB(OP_MUL, x2, c), RB(OP_MUL, x1, sn)), NULL};
  int np = 2;
  if (r < d) p[np++] = ib_narrow(b, x, k, r, d - r);
  return ib_reshape_as(b, ib_concat(b, p, np, k), xt);
}
#undef RB
/* cos / sin gradients of rope or rope_backward (g: upstream). */
static bool rope_tables(GradCtx *gc, const Node *n, Node *g) {
  if (!WANT(1) && !WANT(2)) return true;
  Ctx *c = B->c;
  Graph *s = ib_graph_detached(c, "rope_tables", n->loc);
  Node *a[3], *in[3], *gr[2] = {NULL, NULL};
  for (int i = 0; i < 3; i++) {
    char nm[8] = {'a', (char)('0' + i), 0};
    a[i] = ir_arg_new(c, s, OP_INPUT, nm, n->in[i]->type, n->loc);
    in[i] = X(i);
  }
  IrBuilder sb = {c, s, n->loc};
  Node *r = rope_expand(&sb, n, a);
  ir_set_rets(c, s, &r, 1);
  if (!gc->walk(B, gc->mod, s, in, false, &g, a + 1, 2, gr, NULL))
    return false;
  for (int i = 1; i < 3; i++)
    if (WANT(i))
      ACC(i, gr[i - 1] ? gr[i - 1] : ib_fill(B, n->in[i]->type, 0));
  return true;
}
/* rope -> rope_backward(g, cos, sin); rope_backward -> rope(g, ...) */
bool vjp_rope(GradCtx *gc, const Node *n, Node *g) {
  Node *in[3] = {g, X(1), X(2)};
  Op t = n->op == OP_ROPE ? OP_ROPE_BACKWARD : OP_ROPE;
  if (WANT(0)) ACC(0, vjp_same_attrs(gc, n, t, in, 3));
  return rope_tables(gc, n, g);
}

/* ---- 2-D pooling (NCHW) ---- */

/* op(a) with n's kernel, stride and padding only (no shape), plus
 * shape = t's dims when t is given. */
static Node *pool_op(GradCtx *gc, const Node *n, Op op, Node *const *a,
                     int na, const Type *t) {
  static const AttrId ids[3] = {ATTR_KERNEL, ATTR_STRIDE, ATTR_PADDING};
  Node *r = ib_op(B, op, a, na);
  for (int i = 0; i < 3; i++) {
    int k;
    const int64_t *v = ir_attr_ints(n, ids[i], &k);
    if (v) ir_attr_set_ints(B->c, r, ids[i], v, k);
  }
  if (t) ir_attr_set_ints(B->c, r, ATTR_SHAPE, t->dims, t->rank);
  return ib_finish(B, r);
}
bool vjp_max_pool(GradCtx *gc, const Node *n, Node *g) {
  Node *in[2] = {X(0), g};
  ACC(0, pool_op(gc, n, OP_MAX_POOL2D_BACKWARD, in, 2, NULL));
  return true;
}
bool vjp_avg_pool(GradCtx *gc, const Node *n, Node *g) {
  ACC(0, pool_op(gc, n, OP_AVG_POOL2D_BACKWARD, &g, 1, &n->in[0]->type));
  return true;
}
/* avg_pool2d_backward is linear in dy, its transpose avg_pool2d. */
bool vjp_avg_pool_backward(GradCtx *gc, const Node *n, Node *g) {
  ACC(0, pool_op(gc, n, OP_AVG_POOL2D, &g, 1, NULL));
  return true;
}

/* max_pool2d_backward(x, dy) is linear in dy: its VJP w.r.t. dy
 * gathers the cotangent at each window's first maximum; w.r.t. x it
 * is zero almost everywhere, so an exact zero. */
bool vjp_max_pool_backward(GradCtx *gc, const Node *n, Node *g) {
  if (WANT(0)) ACC(0, ib_fill(B, n->in[0]->type, 0));
  if (!WANT(1)) return true;
  Node *x = X(0), *m = pool_op(gc, n, OP_MAX_POOL2D, &x, 1, NULL);
  ACC(1, ad_max_pool_pick(B, n, x, m, g));
  return true;
}
