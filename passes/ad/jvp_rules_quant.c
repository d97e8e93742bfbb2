/* jvp_rules_quant.c: forward-mode rules of fake quantization (the
 * transposes of vjp_rules_quant.c's rules; conventions: jvp_rules.h).
 *
 * fake_quantize: t = fake_quantize_backward(x, tx) (its STE kind, a
 *   diagonal map). fake_quantize_lsq: t = lsq_backward_x(x, s, tx) +
 *   ψ(x/S) ts laid along the channel axis (times the gradient scale
 *   when set: the transpose of ds = Σ ψ dy, not the derivative).
 * The backward ops: their expansions (ad_quant_expand) differentiated.
 */
#include "passes/ad/jvp_rules.h"

Node *jvp_fake_quantize(JvpCtx *jc, const Node *n) {
  Node *in[2] = {X(0), T(0)};
  return jvp_same_attrs(jc, n, OP_FAKE_QUANTIZE_BACKWARD, in, 2);
}

Node *jvp_fake_quantize_lsq(JvpCtx *jc, const Node *n) {
  Node *t = NULL;
  if (T(0)) {
    Node *in[3] = {X(0), X(1), T(0)};
    t = jvp_same_attrs(jc, n, OP_FAKE_QUANTIZE_LSQ_BACKWARD_X, in, 3);
  }
  if (T(1))
    t = jvp_add(jc, t, MUL(ad_lsq_psi(B, n, X(0), X(1)),
                           ad_quant_lay(B, n, T(1))));
  return t;
}

Node *jvp_fake_quantize_bwd(JvpCtx *jc, const Node *n) {
  return jvp_through(jc, n, ad_quant_graph(B->c, n));
}
