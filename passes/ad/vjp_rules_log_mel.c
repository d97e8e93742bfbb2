/* vjp_rules_log_mel.c: VJP rules of log_mel and log_mel_backward, and the
 * expansion they share with the JVP rules (log_mel.h).
 *
 * With z = spec filters (spec viewed as [R, F]) and m = [z >= 1e-10]:
 *   y     = log(max(z, 1e-10))
 *   dspec = log_mel_backward(spec, filters, g) = (g m / z) filters^T
 *   dfilters = spec^T (g m / z)   (through the expansion)
 * log_mel_backward (second order) is differentiated through its
 * expansion; z is replaced by 1 where m is false so that no inf or NaN
 * reaches a gradient that the mask zeroes.
 */
#include "passes/ad/log_mel.h"

#include "passes/ad/vjp_rules.h"

static Node *expand(IrBuilder *b, const Node *n, Node *const *a) {
  const Type *st = &a[0]->type;
  DType dt = st->dt;
  int64_t d2[2] = {1, st->dims[st->rank - 1]};
  for (int i = 0; i + 1 < st->rank; i++) d2[0] *= st->dims[i];
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

/* Gradients of the expansion w.r.t. operands first..nin-1 (those
 * wanted), accumulated. */
static bool through(GradCtx *gc, const Node *n, Node *g, int first) {
  Graph *s = ad_log_mel_graph(B->c, n);
  Node *in[3], *tg[3], *gr[3] = {NULL};
  int idx[3], nt = 0;
  for (int i = 0; i < n->nin; i++) {
    in[i] = X(i);
    if (i >= first && WANT(i)) {
      idx[nt] = i;
      tg[nt++] = s->args[i];
    }
  }
  if (!nt) return true;
  if (!gc->walk(B, gc->mod, s, in, false, &g, tg, nt, gr, NULL))
    return false;
  for (int k = 0; k < nt; k++)
    ACC(idx[k], gr[k] ? gr[k] : ib_fill(B, n->in[idx[k]]->type, 0));
  return true;
}

bool vjp_log_mel(GradCtx *gc, const Node *n, Node *g) {
  Node *in[3] = {X(0), X(1), g};
  if (WANT(0)) ACC(0, ib_finish(B, ib_op(B, OP_LOG_MEL_BACKWARD, in, 3)));
  return through(gc, n, g, 1);
}

bool vjp_log_mel_backward(GradCtx *gc, const Node *n, Node *g) {
  return through(gc, n, g, 0);
}
