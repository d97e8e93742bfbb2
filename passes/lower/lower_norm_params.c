/* lower_norm_params.c: the "lower_norm_params" pass. When code is
 * generated, a norm's parameter-gradient op with dynamic sizes
 * (layer_norm_backward_gamma, rms_norm_backward_gamma/beta,
 * group_norm_backward_gamma/beta, batch_norm_inference_backward_gamma/
 * beta over a dynamic batch or sequence) is rewritten into its closed
 * form through ordinary ops (passes/ad/nn_expand.c: the statistics
 * recomputed, then one reduction over the rows), whose emitters take
 * dynamic sizes; the column-blocked kernels of these ops keep static
 * ones (docs/dynamic-dims.md). Reverse mode never emits such an op
 * with dynamic sizes itself (its norm rules sum over the rows), so this
 * only meets the ops a graph writes. It runs with lower_quant, after
 * the AD passes; --check and --emit=ir keep the ops as written.
 * Requires: the AD passes done. Provides: no norm parameter-gradient
 * op with dynamic sizes when code is generated.
 */
#include "passes/ad/ad.h"

static bool norm_param_op(Op op) {
  switch (op) {
  case OP_LAYER_NORM_BACKWARD_GAMMA: case OP_RMS_NORM_BACKWARD_GAMMA:
  case OP_RMS_NORM_BACKWARD_BETA: case OP_GROUP_NORM_BACKWARD_GAMMA:
  case OP_GROUP_NORM_BACKWARD_BETA:
  case OP_BATCH_NORM_INFERENCE_BACKWARD_GAMMA:
  case OP_BATCH_NORM_INFERENCE_BACKWARD_BETA:
    return true;
  default:
    return false;
  }
}

static bool lowered(const Node *n) {
  return norm_param_op(n->op) && node_dynamic(n);
}

static Node *lower(IrBuilder *b, Node *n, void *ud) {
  (void)ud;
  return lowered(n) ? ad_norm_bwd_expand(b, n, n->in) : n;
}

bool pass_lower_norm_params(Unit *u) {
  Module *m = u->mod;
  for (int i = 0; pass_generates_code(u) && i < m->ngraphs; i++) {
    Graph *g = m->graphs[i];
    for (int j = 0; j < g->nnodes; j++)
      if (lowered(g->nodes[j])) {
        ib_rewrite(u->ctx, g, lower, NULL);
        break;
      }
  }
  return true;
}
