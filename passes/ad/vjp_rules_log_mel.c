/* vjp_rules_log_mel.c: VJP rules of log_mel and log_mel_backward, over
 * the expansion they share with the JVP rules (log_mel_expand.c).
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
