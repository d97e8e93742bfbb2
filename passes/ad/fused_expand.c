/* fused_expand.c: the expansions of the fused blocks into primitive
 * ops (ad_fused_expand), used by the expand_fused pass and by the
 * fused blocks' JVP rules (jvp_rules_fused.c).
 *
 * fused_transformer_layer (its forward pass is the existing fast
 * kernels: matmul, attention with a custom mask, layer_norm,
 * activation):
 *   qkv = h W + b; q, k, v = narrow(qkv, axis 2) at 0, E, 2E;
 *   a = attention(q, k, v, mask, mask=custom, heads=H);
 *   h1 = layer_norm(a Wo + bo + h, eps=eps1);
 *   out = layer_norm(act(h1 W1 + b1) W2 + b2 + h1, eps=eps2).
 * selective_scan and gated_delta_net keep their fused kernels in the
 * forward graph; with --grad / --hvp they are expanded in the AD working
 * copy (working_copy.c), so reverse mode differentiates primitives. The time
 * recurrence becomes one `scan` with save_trajectory=true over a
 * per-step body of a few elementwise ops (graph size independent of the
 * sequence length); the readout is vectorized over all steps after it:
 *   selective_scan: carry state [b,h,n]; per-step operands
 *     dA = exp(delta (x) a), dBx = (delta*x) (x) b, moved to [s,b,h,n];
 *     body: state' = dA*state + dBx; y = sum_n(traj * c).
 *   gated_delta_net: carry S [b,H,n,n] (S[i][j]); per-step operands
 *     exp(g) [s,b,H,1,1], k [s,b,H,n,1], v, beta [s,b,H,1(,1)];
 *     body: S1 = eg*S; sk = sum_i(S1 * k); d = (v - sk) beta;
 *     S' = S1 + k d; o = sum_i(traj * q) / sqrt(n).
 * Bodies are new graphs placed right before the graph that uses them
 * (graph references point to earlier graphs).
 */
#include "passes/ad/ad.h"

#include <math.h>
#include <string.h>

static Type with_dims(DType dt, int r, const int64_t *d) {
  return type_make(dt, r, d);
}

/* x of rank r with a unit axis inserted at position `at` */
static Node *unsqueeze(IrBuilder *b, Node *x, int at) {
  int64_t d[RLX_MAX_RANK];
  int r = x->type.rank;
  for (int i = 0, j = 0; i <= r; i++)
    d[i] = i == at ? 1 : x->type.dims[j++];
  return ib_reshape(b, x, r + 1, d);
}

/* Move axis 1 (time) of x to the front: [b,s,...] -> [s,b,...]. */
static Node *time_major(IrBuilder *b, Node *x) {
  int64_t p[RLX_MAX_RANK];
  for (int i = 0; i < x->type.rank; i++) p[i] = i;
  p[0] = 1, p[1] = 0;
  return ib_transpose(b, x, p);
}

/* A trajectory scan of `body` from a zero carry of type ct over the
 * time-major per-step operands xs[0..nx). */
static Node *traj_scan(IrBuilder *b, Graph *body, Type ct, Node *const *xs,
                       int nx, int64_t len) {
  Node *in[8];
  in[0] = ib_fill(b, ct, 0);
  for (int i = 0; i < nx; i++) in[1 + i] = xs[i];
  Node *s = ir_node_new(b->c, b->g, OP_SCAN, in, 1 + nx, b->loc);
  ir_attr_set_graph(b->c, s, ATTR_BODY, body);
  if (dim_is_static(len)) /* a dynamic length is the xs' axis 0 */
    ir_attr_set_int(b->c, s, ATTR_LENGTH, len);
  ir_attr_set_int(b->c, s, ATTR_NUM_BCAST, 0);
  ir_attr_set_bool(b->c, s, ATTR_SAVE_TRAJ, true);
  return ib_finish(b, s);
}

/* A detached body graph with arguments of types t[0..n) (the first is
 * the carry; the others are the per-step slices of xs[]). */
static Graph *new_body(Ctx *c, Module *m, const char *name, Node **args,
                       const Type *carry, Node *const *xs, int nx,
                       Loc loc) {
  Graph *g = ib_graph_detached(c, ib_fresh_graph_name(c, m, name), loc);
  static const char *const names[] = {"state", "x0", "x1", "x2", "x3"};
  args[0] = ir_arg_new(c, g, OP_INPUT, names[0], *carry, loc);
  for (int i = 0; i < nx; i++) {
    Type t = xs[i]->type;
    t.rank--;
    memmove(t.dims, t.dims + 1, sizeof(int64_t) * (size_t)t.rank);
    args[1 + i] = ir_arg_new(c, g, OP_INPUT, names[1 + i], t, loc);
  }
  return g;
}

static Node *expand_selective_scan(IrBuilder *b, Module *m, const Node *n,
                                   Node *const *a, const Graph *user) {
  const Type *xt = &a[0]->type;
  DType dt = xt->dt;
  int64_t B = xt->dims[0], S = xt->dims[1], H = xt->dims[2];
  int64_t N = a[2]->type.dims[1];
  Node *delta4 = unsqueeze(b, a[1], 3);                   /* [b,s,h,1] */
  Node *dA = ib_un(b, OP_EXP, ib_bin(b, OP_MUL, delta4, a[2]));
  Node *dx = unsqueeze(b, ib_bin(b, OP_MUL, a[1], a[0]), 3);
  Node *dBx = ib_bin(b, OP_MUL, dx, unsqueeze(b, a[3], 2));
  Node *xs[2] = {time_major(b, dA), time_major(b, dBx)};
  int64_t c3[3] = {B, H, N};
  Type ct = with_dims(dt, 3, c3);
  Node *args[3];
  Graph *body = new_body(b->c, m, "selective_scan_step", args, &ct, xs, 2,
                         n->loc);
  IrBuilder bb = {b->c, body, n->loc};
  Node *next = ib_bin(&bb, OP_ADD, ib_bin(&bb, OP_MUL, args[1], args[0]),
                      args[2]);
  ir_set_rets(b->c, body, &next, 1);
  body = ib_attach_before(b->c, m, body, user);
  Node *traj = time_major(b, traj_scan(b, body, ct, xs, 2, S)); /* b,s,h,n */
  Node *yc = ib_bin(b, OP_MUL, traj, unsqueeze(b, a[4], 2));
  int64_t ax = 3;
  return ib_reduce(b, OP_REDUCE_SUM, yc, &ax, 1, false);
}

static Node *expand_gated_delta_net(IrBuilder *b, Module *m, const Node *n,
                                    Node *const *a, const Graph *user) {
  const Type *qt = &a[0]->type;
  DType dt = qt->dt;
  int64_t B = qt->dims[0], S = qt->dims[1], H = qt->dims[2];
  int64_t N = qt->dims[3];
  /* per-step operands: exp(g) [b,s,H,1,1], k [b,s,H,n,1], v [b,s,H,n],
   * beta [b,s,H,1], all time-major */
  int64_t d5[5] = {B, S, H, 1, 1};
  Node *eg = ib_reshape(b, ib_un(b, OP_EXP, a[3]), 5, d5);
  Node *xs[4] = {time_major(b, eg), time_major(b, unsqueeze(b, a[1], 4)),
                 time_major(b, a[2]), time_major(b, unsqueeze(b, a[4], 3))};
  int64_t c4[4] = {B, H, N, N};
  Type ct = with_dims(dt, 4, c4);
  Node *args[5];
  Graph *body = new_body(b->c, m, "gated_delta_net_step", args, &ct, xs, 4,
                         n->loc);
  IrBuilder bb = {b->c, body, n->loc};
  Node *s1 = ib_bin(&bb, OP_MUL, args[1], args[0]);      /* eg * S */
  int64_t ax = 2;
  Node *sk = ib_reduce(&bb, OP_REDUCE_SUM, ib_bin(&bb, OP_MUL, s1, args[2]),
                       &ax, 1, false);                    /* [b,H,n] */
  Node *d = ib_bin(&bb, OP_MUL, ib_bin(&bb, OP_SUB, args[3], sk), args[4]);
  Node *next = ib_bin(&bb, OP_ADD, s1,
                      ib_bin(&bb, OP_MUL, args[2], unsqueeze(&bb, d, 2)));
  ir_set_rets(b->c, body, &next, 1);
  body = ib_attach_before(b->c, m, body, user);
  Node *traj = time_major(b, traj_scan(b, body, ct, xs, 4, S)); /* b,s,H,n,n */
  Node *oq = ib_bin(b, OP_MUL, traj, unsqueeze(b, a[0], 4));
  ax = 3;
  Node *o = ib_reduce(b, OP_REDUCE_SUM, oq, &ax, 1, false);
  return ib_bin(b, OP_MUL, o, ib_scalar(b, dt, 1 / sqrt((double)N)));
}

static Node *linear(IrBuilder *b, Node *x, Node *w, Node *bias) {
  Node *in[2] = {x, w};
  return ib_bin(b, OP_ADD, ib_finish(b, ib_op(b, OP_MATMUL, in, 2)), bias);
}

static Node *layer_norm(IrBuilder *b, Node *x, Node *g, Node *beta,
                        double eps) {
  Node *in[3] = {x, g, beta};
  Node *r = ib_op(b, OP_LAYER_NORM, in, 3);
  ir_attr_set_float(b->c, r, ATTR_EPS, eps);
  return ib_finish(b, r);
}

static Op activation(const Node *n) {
  const char *w = ir_attr_word(n, ATTR_ACTIVATION);
  if (!w || !strcmp(w, "gelu")) return OP_GELU;
  if (!strcmp(w, "gelu_tanh")) return OP_GELU_TANH;
  if (!strcmp(w, "relu")) return OP_RELU;
  return OP_SILU;
}

static Node *expand_transformer(IrBuilder *b, const Node *n,
                                Node *const *a) {
  int64_t E = a[0]->type.dims[2];
  Node *qkv = linear(b, a[0], a[1], a[2]);
  Node *in[4] = {ib_narrow(b, qkv, 2, 0, E), ib_narrow(b, qkv, 2, E, E),
                 ib_narrow(b, qkv, 2, 2 * E, E), a[13]};
  Node *at = ib_op(b, OP_ATTENTION, in, 4);
  ir_attr_set_word(b->c, at, ATTR_MASK, "custom");
  ir_attr_set_int(b->c, at, ATTR_HEADS, ir_attr_int(n, ATTR_HEADS, 1));
  ib_finish(b, at);
  Node *o = ib_bin(b, OP_ADD, linear(b, at, a[3], a[4]), a[0]);
  Node *h1 = layer_norm(b, o, a[5], a[6], ir_attr_float(n, ATTR_EPS1, 1e-12));
  Node *f = ib_un(b, activation(n), linear(b, h1, a[7], a[8]));
  f = ib_bin(b, OP_ADD, linear(b, f, a[9], a[10]), h1);
  return layer_norm(b, f, a[11], a[12], ir_attr_float(n, ATTR_EPS2, 1e-12));
}

Node *ad_fused_expand(IrBuilder *b, Module *m, const Node *n,
                      Node *const *a) {
  /* an empty result (a zero batch, length or channel count): zeros,
   * which also makes every gradient zero (scan needs length >= 1); a
   * dynamic one is empty at run time only, where the scan runs no
   * steps */
  if (n->op != OP_FUSED_TRANSFORMER_LAYER && type_is_static(&n->type) &&
      type_numel(&n->type) == 0)
    return ib_fill(b, n->type, 0);
  switch (n->op) {
  case OP_SELECTIVE_SCAN: return expand_selective_scan(b, m, n, a, b->g);
  case OP_GATED_DELTA_NET: return expand_gated_delta_net(b, m, n, a, b->g);
  case OP_FUSED_TRANSFORMER_LAYER: return expand_transformer(b, n, a);
  default: RLX_ASSERT(!"ad_fused_expand: not a fused block"); return NULL;
  }
}
