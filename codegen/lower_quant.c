/* lower_quant.c: code generation of fake quantization. Before a graph
 * is fused and planned, cg_lower_quant() rewrites fake_quantize,
 * fake_quantize_lsq and their backward ops into the ordinary ops of
 * their expansion (passes/vjp_quant.c: elementwise ops, the max-abs
 * reduction of fake_quantize's scale, the channel sum of lsq's ds), so
 * they fuse into their neighbours' loops and vectorize like any
 * elementwise chain. Their table entry is cg_emit_lowered, never run.
 */
#include "codegen/emit_ops.h"
#include "passes/ad.h"

static Node *lower(IrBuilder *b, Node *n, void *ud) {
  (void)ud;
  return ad_is_fake_quant(n->op) ? ad_quant_expand(b, n, n->in) : n;
}

void cg_lower_quant(Ctx *c, Graph *g) {
  for (int i = 0; i < g->nnodes; i++)
    if (ad_is_fake_quant(g->nodes[i]->op)) {
      ib_rewrite(c, g, lower, NULL);
      return;
    }
}

bool cg_emit_lowered(Cg *cg, Node *n) {
  return cg_unsupported(cg, n, "internal: not lowered before planning");
}
