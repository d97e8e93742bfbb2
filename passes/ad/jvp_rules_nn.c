/* jvp_rules_nn.c: JVP rules of the NN layers (language.md 6.5), their
 * backward ops (6.9: the HVP differentiates them), attention, conv2d
 * and the pools. Conventions: jvp_rules.h.
 *
 * The norms reuse their closed-form backward ops: the Jacobian J of the
 * normalized x̂ w.r.t. x is symmetric, so J tx is the backward op on tx
 * with gamma = 1. Ops whose closed form would be long (the norm
 * backward ops, attention, attention_backward) are re-expressed
 * through ordinary ops in a detached graph (the expansions the
 * second-order VJPs use, ad.h) and differentiated by jvp_through; the
 * primal stays the fused op.
 */
#include "passes/ad/jvp_rules.h"

typedef Node *(*Expand)(IrBuilder *b, const Node *n, Node *const *a);

/* A detached graph computing n from arguments typed like its operands,
 * through fn. */
static Graph *expanded(JvpCtx *jc, const Node *n, Expand fn) {
  Ctx *c = B->c;
  Graph *s = ib_graph_detached(c, "jvp_expand", n->loc);
  Node *a[8];
  RLX_ASSERT(n->nin <= 8);
  for (int i = 0; i < n->nin; i++) {
    char nm[8] = {'a', (char)('0' + i), 0};
    a[i] = ir_arg_new(c, s, OP_INPUT, nm, n->in[i]->type, n->loc);
  }
  IrBuilder sb = {c, s, n->loc};
  Node *r = fn(&sb, n, a);
  ir_set_rets(c, s, &r, 1);
  return s;
}

/* ---- normalization layers ---- */

/* v [C] laid along axis ax of n's shape (1 elsewhere). */
static Node *chan(JvpCtx *jc, const Node *n, Node *v, int ax) {
  int64_t d[RLX_MAX_RANK];
  for (int i = 0; i < n->type.rank; i++)
    d[i] = i == ax ? n->type.dims[ax] : 1;
  return ib_reshape(B, v, n->type.rank, d);
}

/* y = γ x̂ + β, x̂ = op(x, 1, 0), γ and β [C] along axis ax; x̂'s
 * Jacobian J is symmetric and bwd(x, γ, [β,] dy) = Jᵀ (γ dy), so
 *   ty = γ bwd(x, 1, [0,] tx) + x̂ tγ + tβ. */
static Node *affine_norm(JvpCtx *jc, const Node *n, Op bwd, int ax) {
  Node *one = ib_fill(B, n->in[1]->type, 1);
  Node *zero = ib_fill(B, n->in[2]->type, 0), *r = NULL;
  if (T(0)) {
    bool ln = bwd == OP_LAYER_NORM_BACKWARD_INPUT;
    Node *in[4] = {X(0), one, ln ? T(0) : zero, T(0)};
    r = MUL(chan(jc, n, X(1), ax), jvp_same_attrs(jc, n, bwd, in, 4 - ln));
  }
  if (T(1)) {
    Node *in[3] = {X(0), one, zero};
    Node *h = jvp_same_attrs(jc, n, n->op, in, 3);
    r = jvp_add(jc, r, MUL(h, chan(jc, n, T(1), ax)));
  }
  if (T(2)) r = jvp_add(jc, r, chan(jc, n, T(2), ax));
  return FIT(r);
}
static int norm_axis(const Node *n) {
  int64_t a = ir_attr_int(n, ATTR_AXIS, -1);
  return (int)(a < 0 ? a + n->type.rank : a);
}
Node *jvp_layer_norm(JvpCtx *jc, const Node *n) {
  return affine_norm(jc, n, OP_LAYER_NORM_BACKWARD_INPUT, norm_axis(n));
}
Node *jvp_rms_norm(JvpCtx *jc, const Node *n) {
  return affine_norm(jc, n, OP_RMS_NORM_BACKWARD_INPUT, norm_axis(n));
}
Node *jvp_group_norm(JvpCtx *jc, const Node *n) {
  return affine_norm(jc, n, OP_GROUP_NORM_BACKWARD_INPUT, 1);
}
/* y = γ r (x - μ) + β per channel (axis 1), r = 1/sqrt(var + eps),
 * x̂ = (x - μ) r:
 *   ty = γ r (tx - tμ) + x̂ tγ + tβ - γ r x̂ r tvar / 2. */
Node *jvp_batch_norm(JvpCtx *jc, const Node *n) {
  double eps = ir_attr_float(n, ATTR_EPS, 1e-5);
  Node *r = chan(jc, n, UN(OP_RSQRT, BIN(OP_ADD, X(4), K(eps))), 1);
  Node *gr = MUL(chan(jc, n, X(1), 1), r), *h = NULL, *t = NULL;
  if (T(1) || T(4)) h = MUL(BIN(OP_SUB, X(0), chan(jc, n, X(3), 1)), r);
  Node *d = T(0);
  if (T(3)) {
    Node *tm = chan(jc, n, T(3), 1);
    d = d ? BIN(OP_SUB, d, tm) : UN(OP_NEG, tm);
  }
  if (d) t = MUL(gr, d);
  if (T(1)) t = jvp_add(jc, t, MUL(h, chan(jc, n, T(1), 1)));
  if (T(2)) t = jvp_add(jc, t, chan(jc, n, T(2), 1));
  if (T(4)) {
    Node *tv = MUL(chan(jc, n, T(4), 1), K(-0.5));
    t = jvp_add(jc, t, MUL(MUL(gr, MUL(h, r)), tv));
  }
  return FIT(t);
}
/* The backward ops: their expansions differentiated. */
Node *jvp_norm_backward(JvpCtx *jc, const Node *n) {
  return jvp_through(jc, n, expanded(jc, n, ad_norm_bwd_expand));
}

/* ---- rope ---- */

/* rope(x, c, s) and rope_backward (s negated) are linear in x, and in
 * (c, s) but for the dims past n_rot, which copy x:
 *   ty = op(tx, c, s) + op(x, tc, ts) - op(x, 0, 0)
 * (the last term, x past n_rot and zeros before, only when n_rot <
 * head_dim). */
Node *jvp_rope(JvpCtx *jc, const Node *n) {
  Node *r = NULL;
  if (T(0)) {
    Node *in[3] = {T(0), X(1), X(2)};
    r = jvp_same_attrs(jc, n, n->op, in, 3);
  }
  if (T(1) || T(2)) {
    Node *in[3] = {X(0), TZ(1), TZ(2)};
    Node *t = jvp_same_attrs(jc, n, n->op, in, 3);
    int64_t d = ir_attr_int(n, ATTR_HEAD_DIM, 1);
    if (ir_attr_int(n, ATTR_N_ROT, d) < d) {
      Node *z = ib_fill(B, n->in[1]->type, 0), *zin[3] = {X(0), z, z};
      t = BIN(OP_SUB, t, jvp_same_attrs(jc, n, n->op, zin, 3));
    }
    r = jvp_add(jc, r, t);
  }
  return r;
}

/* ---- attention ---- */

/* The tangent of P V through ordinary ops (ad_attention_expand): a
 * fully masked row has P = 0 and its tangent is exactly 0. */
Node *jvp_attention(JvpCtx *jc, const Node *n) {
  return jvp_through(jc, n, expanded(jc, n, ad_attention_expand));
}
Node *jvp_attention_backward(JvpCtx *jc, const Node *n) {
  return jvp_through(jc, n, expanded(jc, n, ad_attention_bwd_expand));
}

/* ---- conv2d and its backward ops ---- */

/* conv2d(x, w), conv2d_backward_input(dy, w) and
 * conv2d_backward_weight(x, dy) are bilinear: ty = op(ta, b) + op(a, tb)
 * with n's attributes (stride, padding, dilation, groups, shape). */
Node *jvp_conv2d(JvpCtx *jc, const Node *n) {
  Node *r = NULL;
  if (T(0)) {
    Node *in[2] = {T(0), X(1)};
    r = jvp_same_attrs(jc, n, n->op, in, 2);
  }
  if (T(1)) {
    Node *in[2] = {X(0), T(1)};
    r = jvp_add(jc, r, jvp_same_attrs(jc, n, n->op, in, 2));
  }
  return r;
}

/* ---- max pooling ---- */

/* The tangent of each window's first maximum (the transpose of the
 * VJP, which routes the gradient there). */
Node *jvp_max_pool(JvpCtx *jc, const Node *n) {
  return ad_max_pool_pick(B, n, X(0), Y, T(0));
}
/* max_pool2d_backward(x, dy) is linear in dy, zero a.e. through x. */
Node *jvp_max_pool_backward(JvpCtx *jc, const Node *n) {
  if (!T(1)) return NULL;
  Node *in[2] = {X(0), T(1)};
  return jvp_same_attrs(jc, n, n->op, in, 2);
}
