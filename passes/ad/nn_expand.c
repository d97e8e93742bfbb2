/* nn_expand.c: closed forms of the NN layers' backward ops through
 * ordinary ops (ad.h), shared by their second-order VJPs
 * (vjp_rules_nn.c) and their JVPs (jvp_rules_nn.c): the norm backward
 * ops re-expressed through primitives (ad_norm_bwd_expand), and the
 * pick of each pooling window's first maximum (ad_max_pool_pick).
 */
#include "passes/ad/ad.h"

#include <string.h>

int ad_norm_axis(const Node *n) {
  int64_t a = ir_attr_int(n, ATTR_AXIS, -1);
  return (int)(a < 0 ? a + n->in[0]->type.rank : a);
}
Node *ad_sum_but(IrBuilder *b, Node *v, int ax) {
  int64_t axes[RLX_MAX_RANK];
  int k = 0;
  for (int i = 0; i < v->type.rank; i++)
    if (i != ax) axes[k++] = i;
  return k ? ib_reduce(b, OP_REDUCE_SUM, v, axes, k, false) : v;
}

/* The norm backward ops re-expressed through primitives (for their
 * second-order VJPs and their JVPs; the kernels compute the first
 * order). a[] are the op's operands, ax its axis. */
#define NB(op, p, q) ib_bin(b, op, p, q)
#define NM(p, q) NB(OP_MUL, p, q)
static Node *nb_mean(IrBuilder *b, Node *v, int ax) {
  int64_t a = ax;
  return ib_reduce(b, OP_REDUCE_MEAN, v, &a, 1, true);
}
static Node *nb_chan(IrBuilder *b, Node *v, const Type *xt, int ax) {
  int64_t d[RLX_MAX_RANK];
  for (int i = 0; i < xt->rank; i++) d[i] = i == ax ? xt->dims[ax] : 1;
  return ib_reshape(b, v, xt->rank, d);
}
static Node *nb_expand(IrBuilder *b, const Node *n, Node *const *a) {
  const Type *xt = &a[0]->type;
  int ax = ad_norm_axis(n);
  bool rms = n->op != OP_LAYER_NORM_BACKWARD_INPUT &&
             n->op != OP_LAYER_NORM_BACKWARD_GAMMA;
  double eps = ir_attr_float(n, ATTR_EPS, rms ? 1e-6 : 1e-5); /* the
                                                 ops' defaults */
  Node *x = a[0], *dy = a[n->nin - 1], *e = ib_scalar(b, xt->dt, eps);
  Node *c = rms ? x : NB(OP_SUB, x, nb_mean(b, x, ax));
  Node *r = ib_un(b, OP_RSQRT, NB(OP_ADD, nb_mean(b, NM(c, c), ax), e));
  Node *h = NM(c, r); /* x-hat (layer) or x r (rms) */
  switch (n->op) {
  case OP_LAYER_NORM_BACKWARD_GAMMA: case OP_RMS_NORM_BACKWARD_GAMMA:
    return ad_sum_but(b, NM(dy, h), ax);
  case OP_RMS_NORM_BACKWARD_BETA:
    return ad_sum_but(b, dy, ax);
  default: break;
  }
  Node *gg = NM(dy, nb_chan(b, a[1], xt, ax));
  Node *m = nb_mean(b, NM(gg, h), ax);
  if (rms) /* gg r - x m r^2 r (m is already scaled by r once) */
    return NB(OP_SUB, NM(gg, r), NM(NM(x, m), NM(r, r)));
  Node *t = NB(OP_SUB, gg, nb_mean(b, gg, ax));
  return NM(r, NB(OP_SUB, t, NM(h, m)));
}
/* group_norm_backward_*(x, gamma, beta, dy): x viewed as
 * [N, G, C/G, HW], statistics over the last two axes. */
static Node *gn_expand(IrBuilder *b, const Node *n, Node *const *a) {
  const Type *xt = &a[0]->type;
  int64_t G = ir_attr_int(n, ATTR_GROUPS, 1), C = xt->dims[1], hw = 1;
  for (int i = 2; i < xt->rank; i++) hw *= xt->dims[i];
  int64_t d4[4] = {xt->dims[0], G, C / G, hw}, gd[4] = {1, G, C / G, 1};
  int64_t st[2] = {2, 3}, pr[2] = {0, 3};
  Node *x = ib_reshape(b, a[0], 4, d4), *dy = ib_reshape(b, a[3], 4, d4);
  Node *e = ib_scalar(b, xt->dt, ir_attr_float(n, ATTR_EPS, 1e-5));
  Node *c = NB(OP_SUB, x, ib_reduce(b, OP_REDUCE_MEAN, x, st, 2, true));
  Node *v = ib_reduce(b, OP_REDUCE_MEAN, NM(c, c), st, 2, true);
  Node *r = ib_un(b, OP_RSQRT, NB(OP_ADD, v, e)), *h = NM(c, r);
  if (n->op == OP_GROUP_NORM_BACKWARD_GAMMA) dy = NM(dy, h);
  if (n->op != OP_GROUP_NORM_BACKWARD_INPUT)
    return ib_reshape_as(b, ib_reduce(b, OP_REDUCE_SUM, dy, pr, 2, false),
                         &a[1]->type);
  Node *gg = NM(dy, ib_reshape(b, a[1], 4, gd));
  Node *m = ib_reduce(b, OP_REDUCE_MEAN, NM(gg, h), st, 2, true);
  Node *t = NB(OP_SUB, gg, ib_reduce(b, OP_REDUCE_MEAN, gg, st, 2, true));
  return ib_reshape_as(b, NM(r, NB(OP_SUB, t, NM(h, m))), xt);
}
/* batch_norm_inference_backward_*(x, gamma, beta, mean, var, dy) */
static Node *bn_expand(IrBuilder *b, const Node *n, Node *const *a) {
  const Type *xt = &a[0]->type;
  Node *dy = a[5];
  if (n->op == OP_BATCH_NORM_INFERENCE_BACKWARD_BETA)
    return ad_sum_but(b, dy, 1);
  Node *e = ib_scalar(b, xt->dt, ir_attr_float(n, ATTR_EPS, 1e-5));
  Node *r = ib_un(b, OP_RSQRT, NB(OP_ADD, nb_chan(b, a[4], xt, 1), e));
  if (n->op == OP_BATCH_NORM_INFERENCE_BACKWARD_INPUT)
    return NM(NM(dy, nb_chan(b, a[1], xt, 1)), r);
  Node *h = NM(NB(OP_SUB, a[0], nb_chan(b, a[3], xt, 1)), r);
  return ad_sum_but(b, NM(dy, h), 1);
}
#undef NM
#undef NB
Node *ad_norm_bwd_expand(IrBuilder *b, const Node *n, Node *const *a) {
  switch (n->op) {
  case OP_GROUP_NORM_BACKWARD_INPUT: case OP_GROUP_NORM_BACKWARD_GAMMA:
  case OP_GROUP_NORM_BACKWARD_BETA:
    return gn_expand(b, n, a);
  case OP_BATCH_NORM_INFERENCE_BACKWARD_INPUT:
  case OP_BATCH_NORM_INFERENCE_BACKWARD_GAMMA:
  case OP_BATCH_NORM_INFERENCE_BACKWARD_BETA:
    return bn_expand(b, n, a);
  default:
    return nb_expand(b, n, a);
  }
}

typedef struct {
  int64_t k[2], s[2], p[2], o[2];
} PoolGeo;

static PoolGeo pool_geo(const Node *n, const Type *out) {
  PoolGeo G;
  int m;
  const int64_t *k = ir_attr_ints(n, ATTR_KERNEL, &m);
  const int64_t *s = ir_attr_ints(n, ATTR_STRIDE, &m);
  const int64_t *p = ir_attr_ints(n, ATTR_PADDING, &m);
  for (int i = 0; i < 2; i++) {
    G.k[i] = k[i];
    G.s[i] = s ? s[i] : k[i];
    G.p[i] = p ? p[i] : 0;
    G.o[i] = out->dims[2 + i];
  }
  return G;
}
/* v [N, C, H, W] padded along ax (2 or 3) with pv: p in front, enough
 * behind for every offset's strided view. */
static Node *pool_pad(IrBuilder *b, Node *v, int ax, const PoolGeo *G,
                      double pv) {
  int d = ax - 2;
  int64_t len = v->type.dims[ax] + G->p[d];
  int64_t need = G->k[d] - 1 + G->o[d] * G->s[d];
  int64_t back = need > len ? need - len : 0;
  Node *parts[3];
  int np = 0;
  Type t = v->type;
  if (G->p[d]) {
    t.dims[ax] = G->p[d];
    parts[np++] = ib_fill(b, t, pv);
  }
  parts[np++] = v;
  if (back) {
    t.dims[ax] = back;
    parts[np++] = ib_fill(b, t, pv);
  }
  return np > 1 ? ib_concat(b, parts, np, ax) : v;
}
/* Rows off, off + s, ... (o of them) of padded v along ax. */
static Node *pool_view(IrBuilder *b, Node *v, int ax, const PoolGeo *G,
                       int64_t off) {
  int d = ax - 2;
  Node *r = ib_narrow(b, v, ax, off, G->o[d] * G->s[d]);
  if (G->s[d] == 1) return r;
  int64_t dims[5], t4[4];
  int k = 0;
  for (int i = 0; i < 4; i++) {
    t4[i] = i == ax ? G->o[d] : r->type.dims[i];
    dims[k++] = t4[i];
    if (i == ax) dims[k++] = G->s[d];
  }
  r = ib_narrow(b, ib_reshape(b, r, 5, dims), ax + 1, 0, 1);
  return ib_reshape(b, r, 4, t4);
}
/* v's window cell (i, j) of every window: [N, C, OH, OW]. */
static Node *pool_cell(IrBuilder *b, Node *hv, const PoolGeo *G,
                       int64_t i, int64_t j) {
  return pool_view(b, pool_view(b, hv, 2, G, i), 3, G, j);
}
/* The first maximum of each window (row-major; padding cells never
 * count): an in-bounds cell == m and no earlier cell was. */
#define PB(op, p, q) ib_bin(b, op, p, q)
Node *ad_max_pool_pick(IrBuilder *b, const Node *n, Node *x, Node *m,
                       Node *v) {
  PoolGeo G = pool_geo(n, &m->type);
  Node *xp = pool_pad(b, pool_pad(b, x, 2, &G, 0), 3, &G, 0);
  Node *vp = pool_pad(b, pool_pad(b, v, 2, &G, 0), 3, &G, 0);
  Node *ok = ib_fill(b, x->type, 1); /* 0 on padding cells */
  ok = pool_pad(b, pool_pad(b, ok, 2, &G, 0), 3, &G, 0);
  Node *found = ib_fill(b, m->type, 0), *acc = ib_fill(b, m->type, 0);
  DType dt = m->type.dt;
  for (int64_t i = 0; i < G.k[0]; i++)
    for (int64_t j = 0; j < G.k[1]; j++) {
      Node *hit = ib_cast(b, PB(OP_EQ, pool_cell(b, xp, &G, i, j), m), dt);
      hit = PB(OP_MUL, hit, pool_cell(b, ok, &G, i, j));
      Node *e = PB(OP_MUL, hit, PB(OP_SUB, ib_scalar(b, dt, 1), found));
      acc = PB(OP_ADD, acc, PB(OP_MUL, e, pool_cell(b, vp, &G, i, j)));
      found = PB(OP_ADD, found, e);
    }
  return acc;
}
#undef PB
