/* vjp_rules_conv.c: VJP rules of conv2d (language.md 6.5) and of its
 * closed-form backward ops (6.9), first and second order. Every
 * gradient is one of the three conv ops, with the stride, padding,
 * dilation and groups of the node differentiated, so each shows up as
 * a node of its own (one runtime call, codegen/emit/conv.c).
 *
 * conv2d(x, w) is bilinear; with upstream g (y-shaped):
 *   dx = conv2d_backward_input(g, w, shape = x's shape)
 *   dw = conv2d_backward_weight(x, g, shape = w's shape)
 * conv2d_backward_input(dy, w) = A_w^T dy is bilinear (A_w: x ->
 * conv2d(x, w)); <g, A_w^T dy> = <conv2d(g, w), dy>, so with upstream g
 * (x-shaped):
 *   d_dy = conv2d(g, w),  d_w = conv2d_backward_weight(g, dy, shape = w's)
 * conv2d_backward_weight(x, dy) = B_x^T dy (B_x: w -> conv2d(x, w));
 * <G, B_x^T dy> = <conv2d(x, G), dy>, so with upstream G (w-shaped):
 *   d_x = conv2d_backward_input(dy, G, shape = x's),  d_dy = conv2d(x, G)
 * Conventions: vjp_rules.h.
 */
#include "passes/ad/vjp_rules.h"

/* op(a, b) with n's stride, padding, dilation and groups (those set on
 * n), plus shape = t's dims when t is given (the backward ops). */
static Node *conv_op(GradCtx *gc, const Node *n, Op op, Node *a, Node *b,
                     const Type *t) {
  static const AttrId ids[3] = {ATTR_STRIDE, ATTR_PADDING, ATTR_DILATION};
  Node *in[2] = {a, b};
  Node *r = ib_op(B, op, in, 2);
  for (int i = 0; i < 3; i++) {
    int k;
    const int64_t *v = ir_attr_ints(n, ids[i], &k);
    if (v && ir_attr_present(n, ids[i]))
      ir_attr_set_ints(B->c, r, ids[i], v, k);
  }
  if (ir_attr_present(n, ATTR_GROUPS))
    ir_attr_set_int(B->c, r, ATTR_GROUPS, ir_attr_int(n, ATTR_GROUPS, 1));
  if (t) ir_attr_set_ints(B->c, r, ATTR_SHAPE, t->dims, t->rank);
  return ib_finish(B, r);
}

bool vjp_conv2d(GradCtx *gc, const Node *n, Node *g) {
  if (WANT(0))
    ACC(0, conv_op(gc, n, OP_CONV2D_BACKWARD_INPUT, g, X(1),
                   &n->in[0]->type));
  if (WANT(1))
    ACC(1, conv_op(gc, n, OP_CONV2D_BACKWARD_WEIGHT, X(0), g,
                   &n->in[1]->type));
  return true;
}

/* (dy, w), g x-shaped */
bool vjp_conv2d_backward_input(GradCtx *gc, const Node *n, Node *g) {
  if (WANT(0)) ACC(0, conv_op(gc, n, OP_CONV2D, g, X(1), NULL));
  if (WANT(1))
    ACC(1, conv_op(gc, n, OP_CONV2D_BACKWARD_WEIGHT, g, X(0),
                   &n->in[1]->type));
  return true;
}

/* (x, dy), g w-shaped */
bool vjp_conv2d_backward_weight(GradCtx *gc, const Node *n, Node *g) {
  if (WANT(0))
    ACC(0, conv_op(gc, n, OP_CONV2D_BACKWARD_INPUT, X(1), g,
                   &n->in[0]->type));
  if (WANT(1)) ACC(1, conv_op(gc, n, OP_CONV2D, X(0), g, NULL));
  return true;
}
