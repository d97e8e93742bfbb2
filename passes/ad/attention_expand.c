/* attention_expand.c: attention and attention_backward re-expressed
 * through ordinary ops (ad.h: ad_attention_expand,
 * ad_attention_bwd_expand), for the second-order VJP
 * (vjp_rules_attention.c) and the JVPs (jvp_rules_nn.c), which
 * differentiate them. Scores -> softcap -> bias -> mask -> softmax ->
 * P V; the backward's compositional form (P = softmax(masked scores);
 * dV = P^T dY; dP = dY V^T; dS = P * (dP - rowsum(dP * P)); with
 * softcap dS *= 1 - tanh^2; dQ = dS K scale; dK = dS^T Q scale). It
 * stores Lq x Lk matrices. Masked scores (with mask=bias: scores whose
 * bias made them -inf) become the dtype's lowest finite value and the
 * probabilities of masked keys exact zeros, so a fully masked row stays
 * zero (never NaN), and so do its derivatives.
 */
#include "passes/ad/ad.h"

#include <math.h>
#include <string.h>


bool ad_attention_has_bias(const Node *n) {
  return !strcmp(ir_attr_word(n, ATTR_MASK), "bias");
}

#define EB(op, x, y) ib_bin(b, op, x, y)

static int64_t heads(const Node *n, const Type *q) {
  if (q->rank == 4) return q->dims[1];
  if (ir_attr_present(n, ATTR_HEADS)) return ir_attr_int(n, ATTR_HEADS, 1);
  return q->dims[2] / ir_attr_int(n, ATTR_HEAD_DIM, 1);
}

static const int64_t swap12[4] = {0, 2, 1, 3};

/* [B, L, H*D] -> [B, H, L, D] (rank 4: unchanged) */
static Node *to_bhld(IrBuilder *b, Node *x, int64_t h) {
  if (x->type.rank == 4) return x;
  int64_t d[4] = {x->type.dims[0], x->type.dims[1], h, x->type.dims[2] / h};
  return ib_transpose(b, ib_reshape(b, x, 4, d), swap12);
}

static Node *from_bhld(IrBuilder *b, Node *x, const Type *t) {
  return t->rank == 4 ? x : ib_reshape_as(b, ib_transpose(b, x, swap12), t);
}

/* 0, 1, ..., n-1 as i64 [n] reshaped to `shape` */
static Node *iota(IrBuilder *b, int64_t n, int rank, const int64_t *shape) {
  int64_t *v = arena_alloc(b->c->arena, sizeof *v * (size_t)(n ? n : 1));
  for (int64_t i = 0; i < n; i++) v[i] = i;
  return ib_reshape(b, ib_i64s(b, v, n), rank, shape);
}

/* n-1-i along `axis` of an i64 `shape` ([n, 1] or [1, n]): the
 * reverse index, a suffix count of ones, so that a dynamic n needs no
 * constant of n elements. */
static Node *rev_iota(IrBuilder *b, const int64_t *shape, int axis) {
  Type t = {.dt = DT_I64, .rank = 2, .dims = {shape[0], shape[1]}};
  Node *one = ib_fill(b, t, 1);
  Node *r = ib_op(b, OP_CUMSUM_BACKWARD, &one, 1);
  ir_attr_set_int(b->c, r, ATTR_AXIS, axis);
  ir_attr_set_bool(b->c, r, ATTR_EXCLUSIVE, true);
  return ib_finish(b, r);
}

/* Allowed keys (bool, broadcasting to [B, H, Lq, Lk]), NULL: all.
 * mask: the custom mask operand (with mask=custom); s: the scores with
 * the bias added (with mask=bias). A key whose biased score is -inf is
 * masked, as in the kernels (its probability is exp(-inf) = 0, a row of
 * them gives zeros): left in the softmax, such a row would compute
 * (-inf) - (-inf) = NaN, and so would every derivative through it. */
static Node *allowed(IrBuilder *b, const Node *n, Node *mask, Node *s,
                     int64_t lq, int64_t lk) {
  const char *m = ir_attr_word(n, ATTR_MASK);
  Node *no = ib_scalar(b, DT_BOOL, 0), *yes = ib_scalar(b, DT_BOOL, 1);
  if (!strcmp(m, "bias")) /* ne, not gt: NaN is not hidden */
    return EB(OP_NE, s, ib_scalar(b, s->type.dt, -INFINITY));
  if (!strcmp(m, "custom")) {
    int64_t d[4] = {mask->type.dims[0], 1, 1, lk};
    Node *lt = EB(OP_LT, ib_cast(b, mask, DT_F64), ib_scalar(b, DT_F64, 0.5));
    return ib_reshape(b, ib_where(b, lt, no, yes), 4, d);
  }
  if (strcmp(m, "causal") && strcmp(m, "sliding_window")) return NULL;
  int64_t col[2] = {lq, 1}, row[2] = {1, lk};
  if (!dim_is_static(lq) || !dim_is_static(lk)) {
    /* with the reverse indices ir = lq-1-i, jr = lk-1-j: j <= i + lk -
     * lq is jr >= ir, and j >= i + lk - lq - window is jr <= ir + window */
    Node *ir = rev_iota(b, col, 0), *jr = rev_iota(b, row, 1);
    Node *ok = EB(OP_GE, jr, ir);
    if (strcmp(m, "sliding_window")) return ok;
    Node *w = ib_scalar(b, DT_I64, (double)ir_attr_int(n, ATTR_WINDOW, 0));
    return ib_where(b, ok, EB(OP_LE, jr, EB(OP_ADD, ir, w)), no);
  }
  Node *i = iota(b, lq, 2, col), *j = iota(b, lk, 2, row);
  Node *hi = EB(OP_ADD, i, ib_scalar(b, DT_I64, (double)(lk - lq)));
  Node *ok = EB(OP_LE, j, hi);
  if (strcmp(m, "sliding_window")) return ok;
  Node *lo = EB(OP_SUB, hi, ib_scalar(b, DT_I64,
                                      (double)ir_attr_int(n, ATTR_WINDOW, 0)));
  return ib_where(b, ok, EB(OP_GE, j, lo), no);
}

static double lowest(DType dt) {
  return dt == DT_F64 ? -1.7976931348623157e308
         : dt == DT_F16 ? -65504.0
         : dt == DT_BF16 ? -3.3895313892515355e38
                         : -3.4028234663852886e38;
}

/* The probabilities P [B, H, Lq, Lk] of attention or attention_backward
 * n (operands a[], the mask after q, k, v (, dy)): masked scores become
 * the dtype's lowest finite value, masked keys' probabilities exact
 * zeros. x[0..nx) receive a[0..nx) as [B, H, L, D], *t tanh(s / cap)
 * (NULL without softcap), *scale the scale. */
static Node *att_probs(IrBuilder *b, const Node *n, Node *const *a, int nx,
                       Node **x, Node **t, double *scale) {
  const Type *qt = &a[0]->type;
  DType dt = qt->dt;
  int64_t h = heads(n, qt);
  int mi = n->op == OP_ATTENTION ? 3 : 4;
  Node *mask = n->nin > mi ? a[mi] : NULL;
  for (int i = 0; i < nx; i++) x[i] = to_bhld(b, a[i], h);
  Node *q = x[0], *k = x[1];
  int64_t lq = q->type.dims[2], lk = k->type.dims[2], d = q->type.dims[3];
  *scale = ir_attr_present(n, ATTR_SCALE) ? ir_attr_float(n, ATTR_SCALE, 1)
                                          : 1.0 / sqrt((double)d);
  double cap = ir_attr_float(n, ATTR_SOFTCAP, 0);
  Node *s = EB(OP_MUL, EB(OP_MATMUL, q, ib_mT(b, k)), ib_scalar(b, dt, *scale));
  *t = NULL;
  if (cap > 0) {
    *t = ib_un(b, OP_TANH, EB(OP_DIV, s, ib_scalar(b, dt, cap)));
    s = EB(OP_MUL, *t, ib_scalar(b, dt, cap));
  }
  if (ad_attention_has_bias(n)) s = EB(OP_ADD, s, mask);
  Node *ok = allowed(b, n, mask, s, lq, lk);
  if (ok) s = ib_where(b, ok, s, ib_scalar(b, dt, lowest(dt)));
  Node *p = ib_un(b, OP_SOFTMAX, s);
  if (ok) p = ib_where(b, ok, p, ib_scalar(b, dt, 0));
  return p;
}

/* attention(a[0..2] = q, k, v [, a[3] = mask]) through ordinary ops:
 * P V (the JVP of attention differentiates this). */
Node *ad_attention_expand(IrBuilder *b, const Node *n, Node *const *a) {
  Node *x[3], *t;
  double scale;
  Node *p = att_probs(b, n, a, 3, x, &t, &scale);
  return from_bhld(b, EB(OP_MATMUL, p, x[2]), &a[0]->type);
}

/* attention_backward(a[0..3] = q, k, v, dy [, a[4] = mask]) with n's
 * attributes, through ordinary ops. */
Node *ad_attention_bwd_expand(IrBuilder *b, const Node *n, Node *const *a) {
  Node *x[4], *t;
  double scale;
  Node *p = att_probs(b, n, a, 4, x, &t, &scale);
  Node *q = x[0], *k = x[1], *v = x[2], *dy = x[3];
  DType dt = a[0]->type.dt;
  const char *w = ir_attr_word(n, ATTR_WRT);
  if (!strcmp(w, "v"))
    return from_bhld(b, EB(OP_MATMUL, ib_mT(b, p), dy), &a[2]->type);
  Node *dp = EB(OP_MATMUL, dy, ib_mT(b, v));
  const int64_t last = 3;
  Node *rs = ib_reduce(b, OP_REDUCE_SUM, EB(OP_MUL, dp, p), &last, 1, true);
  Node *ds = EB(OP_MUL, p, EB(OP_SUB, dp, rs));
  if (!strcmp(w, "bias")) return ds;
  if (t)
    ds = EB(OP_MUL, ds, EB(OP_SUB, ib_scalar(b, dt, 1), EB(OP_MUL, t, t)));
  ds = EB(OP_MUL, ds, ib_scalar(b, dt, scale));
  if (!strcmp(w, "q"))
    return from_bhld(b, EB(OP_MATMUL, ds, k), &a[0]->type);
  return from_bhld(b, EB(OP_MATMUL, ib_mT(b, ds), q), &a[1]->type);
}
