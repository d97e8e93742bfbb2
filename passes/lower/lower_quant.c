/* lower_quant.c: the "lower_quant" pass. When code is generated,
 * fake_quantize, fake_quantize_lsq and their backward ops are rewritten
 * in every graph of the module into the ordinary ops of their expansion
 * (passes/ad/quant_expand.c: elementwise ops, the max-abs reduction of
 * fake_quantize's scale, the channel sum of lsq's ds), so they fuse into their
 * neighbours' loops and vectorize like any elementwise chain. It runs
 * after the AD passes (whose rules know the ops as units) and before
 * simplify / cse / dce, which then clean the expansion; --check and
 * --emit=ir keep the ops as written, as expand_fused does for
 * fused_transformer_layer.
 * Requires: the AD passes done. Provides: no fake quantization op when
 * code is generated (code generation rejects one as an internal error).
 */
#include "passes/ad/ad.h"

static Node *lower(IrBuilder *b, Node *n, void *ud) {
  (void)ud;
  return ad_is_fake_quant(n->op) ? ad_quant_expand(b, n, n->in) : n;
}

bool pass_lower_quant(Unit *u) {
  Module *m = u->mod;
  for (int i = 0; pass_generates_code(u) && i < m->ngraphs; i++) {
    Graph *g = m->graphs[i];
    for (int j = 0; j < g->nnodes; j++)
      if (ad_is_fake_quant(g->nodes[j]->op)) {
        ib_rewrite(u->ctx, g, lower, NULL);
        break;
      }
  }
  return true;
}
