/* jvp_quant.c: forward-mode rules of fake quantization (the
 * transposes of vjp_quant.c's rules; conventions: jvp.h).
 *
 * fake_quantize: t = fake_quantize_backward(x, tx) (its STE kind, a
 *   diagonal map). fake_quantize_lsq: t = lsq_backward_x(x, s, tx) +
 *   ψ(x/S) ts laid along the channel axis (times the gradient scale
 *   when set: the transpose of ds = Σ ψ dy, not the derivative).
 * The backward ops: their expansions (ad_quant_expand) differentiated.
 */
#include "passes/jvp.h"

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
  if (T(1)) {
    int64_t d[RLX_MAX_RANK];
    const Type *xt = &n->type;
    int64_t a = ir_attr_int(n, ATTR_AXIS, 0);
    if (a < 0) a += xt->rank;
    bool chan = ir_attr_present(n, ATTR_AXIS);
    for (int i = 0; i < xt->rank; i++)
      d[i] = chan && i == a ? xt->dims[i] : 1;
    Node *ts = ib_reshape(B, T(1), xt->rank, d);
    t = jvp_add(jc, t, MUL(ad_lsq_psi(B, n, X(0), X(1)), ts));
  }
  return t;
}

Node *jvp_fake_quantize_bwd(JvpCtx *jc, const Node *n) {
  return jvp_through(jc, n, ad_quant_graph(B->c, n));
}
