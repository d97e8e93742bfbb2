/* jvp_rules_moe.c: JVP rules of grouped_matmul, grouped_matmul_backward_weight
 * (bilinear in operands 0 and 1) and dequant_matmul (bilinear in x and
 * the scales, operands 0 and 2): the op applied with one tangent in
 * place of its operand, summed; the transposes of vjp_rules_moe.c's rules.
 * Conventions: jvp_rules.h. */
#include "passes/ad/jvp_rules.h"

/* op(..., T(i), ...) + op(..., T(j), ...) with the other operands' primal
 * copies. */
static Node *bilinear(JvpCtx *jc, const Node *n, int i, int j) {
  Node *r = NULL;
  const int at[2] = {i, j};
  for (int k = 0; k < 2; k++) {
    if (!T(at[k])) continue;
    Node *in[3];
    for (int a = 0; a < n->nin; a++) in[a] = a == at[k] ? T(a) : X(a);
    r = jvp_add(jc, r, jvp_same_attrs(jc, n, n->op, in, n->nin));
  }
  return r;
}

Node *jvp_grouped_matmul(JvpCtx *jc, const Node *n) {
  return bilinear(jc, n, 0, 1);
}

Node *jvp_dequant_matmul(JvpCtx *jc, const Node *n) {
  return bilinear(jc, n, 0, 2);
}
