/* vjp_rules_quant.c: the VJP rules of fake_quantize, fake_quantize_lsq
 * and (second order) of their backward ops, over the expansion of
 * quant_expand.c. quantize/dequantize use vjp_rules.c's cast rule
 * (straight through).
 * Conventions of the rule macros: vjp_rules.h.
 */
#include "passes/ad/vjp_rules.h"

#include <math.h>
#include <string.h>

/* ---- rules ---- */

/* STE: dx = fake_quantize_backward(x, g) (its ste kind) */
bool vjp_fake_quantize(GradCtx *gc, const Node *n, Node *g) {
  Node *in[2] = {X(0), g};
  ACC(0, vjp_same_attrs(gc, n, OP_FAKE_QUANTIZE_BACKWARD, in, 2));
  return true;
}

bool vjp_fake_quantize_lsq(GradCtx *gc, const Node *n, Node *g) {
  Node *in[3] = {X(0), X(1), g};
  if (WANT(0))
    ACC(0, vjp_same_attrs(gc, n, OP_FAKE_QUANTIZE_LSQ_BACKWARD_X, in, 3));
  if (WANT(1))
    ACC(1, vjp_same_attrs(gc, n, OP_FAKE_QUANTIZE_LSQ_BACKWARD_SCALE, in, 3));
  return true;
}

/* Second order: autodiff over the backward op's expansion. */
bool vjp_fake_quantize_bwd(GradCtx *gc, const Node *n, Node *g) {
  Graph *s = ad_quant_graph(B->c, n);
  Node *in[3], *gr[3] = {NULL, NULL, NULL};
  for (int i = 0; i < n->nin; i++) in[i] = X(i);
  if (!gc->walk(B, gc->mod, s, in, false, &g, s->args, n->nin, gr, NULL))
    return false;
  for (int i = 0; i < n->nin; i++) /* unused operand: an exact zero */
    if (WANT(i)) ACC(i, gr[i] ? gr[i] : ib_fill(B, n->in[i]->type, 0));
  return true;
}
