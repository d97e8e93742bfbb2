/* log_mel_expand.c: log_mel and log_mel_backward re-expressed through
 * ordinary ops in a detached graph (log_mel.h: ad_log_mel_graph), which
 * their VJP and JVP rules differentiate (vjp_rules_log_mel.c,
 * jvp_rules_log_mel.c). With z = spec filters and m = [z >= 1e-10]:
 * log_mel = log(max(z, 1e-10)); log_mel_backward = where(m, dy/z, 0)
 * filters^T, z replaced by 1 where m is false so that no inf or NaN
 * reaches a gradient that the mask zeroes.
 */
#include "passes/ad/log_mel.h"

static Node *expand(IrBuilder *b, const Node *n, Node *const *a) {
  const Type *st = &a[0]->type;
  DType dt = st->dt;
  int64_t d2[2] = {1, st->dims[st->rank - 1]};
  for (int i = 0; i + 1 < st->rank; i++) { /* the rows, maybe dynamic */
    DimStatus ds = dim_mul(b->c, d2[0], st->dims[i], &d2[0]);
    RLX_ASSERT(ds == DIM_OK); /* a factor of spec's element count */
  }
  Node *z = ib_bin(b, OP_MATMUL, ib_reshape(b, a[0], 2, d2), a[1]);
  Node *eps = ib_scalar(b, dt, 1e-10);
  if (n->op == OP_LOG_MEL)
    return ib_reshape_as(b, ib_un(b, OP_LOG, ib_bin(b, OP_MAX, z, eps)),
                         &n->type);
  Node *m = ib_bin(b, OP_GE, z, eps);
  Node *zs = ib_where(b, m, z, ib_scalar(b, dt, 1));
  Node *dy = ib_reshape_as(b, a[2], &z->type);
  Node *gz = ib_where(b, m, ib_bin(b, OP_DIV, dy, zs), ib_scalar(b, dt, 0));
  return ib_reshape_as(b, ib_bin(b, OP_MATMUL, gz, ib_mT(b, a[1])), st);
}

Graph *ad_log_mel_graph(Ctx *c, const Node *n) {
  Graph *s = ib_graph_detached(c, "log_mel_expand", n->loc);
  Node *a[3];
  for (int i = 0; i < n->nin; i++) {
    char nm[8] = {'a', (char)('0' + i), 0};
    a[i] = ir_arg_new(c, s, OP_INPUT, nm, n->in[i]->type, n->loc);
  }
  IrBuilder sb = {c, s, n->loc};
  Node *r = expand(&sb, n, a);
  ir_set_rets(c, s, &r, 1);
  return s;
}
