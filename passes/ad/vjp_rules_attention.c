/* vjp_rules_attention.c: VJP rules of attention (language.md 6.5) and of
 * attention_backward (6.9, second order).
 *
 * First order: one attention_backward(q, k, v, g [, mask], wrt=...) per
 * operand that wants a gradient: q, k, v and, with mask=bias, the bias
 * (wrt=bias, this compiler's extension: dL/dbias = P * (dP - D), the
 * unscaled dS). A custom mask gets no gradient. Code generation computes
 * all of one attention's backward nodes in a single FlashAttention-2
 * pass (codegen/emit/attention.c).
 *
 * Second order: attention_backward is re-expressed through ordinary ops
 * in a detached graph (the compositional backward: P = softmax(masked
 * scores); dV = P^T dY; dP = dY V^T; dS = P * (dP - rowsum(dP * P));
 * with softcap dS *= 1 - tanh^2; dQ = dS K scale; dK = dS^T Q scale)
 * and grad_into differentiates that. It stores Lq x Lk matrices; only
 * the second-order path uses it. Masked scores (with mask=bias: scores
 * whose bias made them -inf) are replaced by the dtype's lowest finite
 * value and the probabilities of masked keys by exact zeros, so a fully
 * masked row stays zero (never NaN) here too, and so do its
 * derivatives.
 * The expansions are attention_expand.c's; the forward op's (P V,
 * ad_attention_expand) is what the JVP of attention differentiates.
 * Conventions: vjp_rules.h.
 */
#include "passes/ad/vjp_rules.h"

#include <math.h>
#include <string.h>

static const char *const wrt_names[4] = {"q", "k", "v", "bias"};


bool vjp_attention(GradCtx *gc, const Node *n, Node *g) {
  Node *in[5] = {X(0), X(1), X(2), g, n->nin > 3 ? X(3) : NULL};
  for (int i = 0; i < (ad_attention_has_bias(n) ? 4 : 3); i++) {
    if (!WANT(i)) continue;
    Node *r = ib_op(B, OP_ATTENTION_BACKWARD, in, n->nin + 1);
    ir_attr_copy_all(B->c, r, n);
    ir_attr_set_word(B->c, r, ATTR_WRT, wrt_names[i]);
    ACC(i, ib_finish(B, r));
  }
  return true;
}

/* Second order: differentiate the expansion. */
bool vjp_attention_backward(GradCtx *gc, const Node *n, Node *g) {
  Ctx *c = B->c;
  Graph *s = ib_graph_detached(c, "attention_bwd", n->loc);
  Node *a[5], *in[5], *gr[5] = {NULL};
  for (int i = 0; i < n->nin; i++) {
    char nm[8] = {'a', (char)('0' + i), 0};
    a[i] = ir_arg_new(c, s, OP_INPUT, nm, n->in[i]->type, n->loc);
    in[i] = X(i);
  }
  IrBuilder sb = {c, s, n->loc};
  Node *r = ad_attention_bwd_expand(&sb, n, a);
  ir_set_rets(c, s, &r, 1);
  if (!gc->walk(B, gc->mod, s, in, false, &g, a, n->nin, gr, NULL))
    return false;
  bool custom = !strcmp(ir_attr_word(n, ATTR_MASK), "custom");
  for (int i = 0; i < n->nin; i++) /* unused operand: an exact zero */
    if (WANT(i) && !(custom && i == 4))
      ACC(i, gr[i] ? gr[i] : ib_fill(B, n->in[i]->type, 0));
  return true;
}
