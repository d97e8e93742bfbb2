/* jvp_nn.c: JVP rules of the NN layers (language.md 6.5), their
 * backward ops, attention, conv2d and the pools. Conventions: jvp.h.
 * (Being written: each rule reports that forward mode does not cover
 * the op yet.) */
#include "passes/jvp.h"

static Node *todo(JvpCtx *jc, const Node *n) {
  jc->ok = diag_error(B->c, n->loc, "forward mode through '%s' is not "
                      "supported yet", op_name(n->op));
  return NULL;
}
Node *jvp_layer_norm(JvpCtx *jc, const Node *n) { return todo(jc, n); }
Node *jvp_rms_norm(JvpCtx *jc, const Node *n) { return todo(jc, n); }
Node *jvp_group_norm(JvpCtx *jc, const Node *n) { return todo(jc, n); }
Node *jvp_batch_norm(JvpCtx *jc, const Node *n) { return todo(jc, n); }
Node *jvp_norm_backward(JvpCtx *jc, const Node *n) { return todo(jc, n); }
Node *jvp_rope(JvpCtx *jc, const Node *n) { return todo(jc, n); }
Node *jvp_attention(JvpCtx *jc, const Node *n) { return todo(jc, n); }
Node *jvp_attention_backward(JvpCtx *jc, const Node *n) { return todo(jc, n); }
Node *jvp_conv2d(JvpCtx *jc, const Node *n) { return todo(jc, n); }
Node *jvp_max_pool(JvpCtx *jc, const Node *n) { return todo(jc, n); }
Node *jvp_avg_pool(JvpCtx *jc, const Node *n) { return todo(jc, n); }
Node *jvp_max_pool_backward(JvpCtx *jc, const Node *n) { return todo(jc, n); }
