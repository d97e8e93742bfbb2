/* expand_fused.c: the "expand_fused" pass (ops-detail.md AD pipeline,
 * step 1): fused blocks -> primitive ops.
 *
 * fused_transformer_layer is lowered in every graph of the module when
 * code is generated (--emit=ir and --check keep the op as written),
 * and every fused block in the AD working copy (working_copy.c) with --grad
 * / --hvp, so reverse mode differentiates primitives. The expansions
 * are fused_expand.c's.
 * Requires: shape-checked module. Provides: no fused_transformer_layer
 * when code is generated; with --grad / --hvp, no fused block in the AD
 * working copy.
 */
#include "passes/ad/ad.h"

static Node *rewrite_transformer(IrBuilder *b, Node *n, void *ud) {
  if (n->op != OP_FUSED_TRANSFORMER_LAYER) return n;
  return ad_fused_expand(b, ud, n, n->in);
}

static Node *rewrite_fused(IrBuilder *b, Node *n, void *ud) {
  if (!(op_info(n->op)->flags & OPF_FUSED)) return n;
  return ad_fused_expand(b, ud, n, n->in);
}

bool pass_expand_fused(Unit *u) {
  Module *m = u->mod;
  for (int i = 0; pass_generates_code(u) && i < m->ngraphs; i++) {
    Graph *g = m->graphs[i];
    for (int j = 0; j < g->nnodes; j++)
      if (g->nodes[j]->op == OP_FUSED_TRANSFORMER_LAYER) {
        ib_rewrite(u->ctx, g, rewrite_transformer, m);
        break;
      }
  }
  if (!ad_wants_grad(u)) return true;
  ad_working_copy(u);
  for (int i = 0; i < u->n_ad_graphs; i++)
    ib_rewrite(u->ctx, u->ad_graphs[i], rewrite_fused, m);
  return true;
}
