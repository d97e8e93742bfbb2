/* dce.c: dead-code elimination.
 *
 * A node is live when a return value depends on it; arguments are
 * always kept (they are the signature). Runs with --grad on the
 * gradient graph (the AD passes also call pass_dce_graph on the
 * backward bodies they create). Provides: every node of the graph
 * reaches a return value.
 */
#include "passes/cleanup/cleanup.h"

void pass_dce_graph(Ctx *c, Graph *g) {
  bool *live = arena_alloc(c->arena, sizeof(bool) * (size_t)(g->next_id + 1));
  for (int i = 0; i < g->nret; i++) live[g->rets[i]->id] = true;
  for (int i = g->nnodes - 1; i >= 0; i--) {
    const Node *n = g->nodes[i];
    if (!live[n->id]) continue;
    for (int k = 0; k < n->nin; k++) live[n->in[k]->id] = true;
  }
  ib_filter(c, g, live);
}

bool pass_dce(Unit *u) {
  Graph *g[4] = UNIT_DERIVED(u);
  for (int i = 0; i < 4; i++)
    if (g[i]) pass_dce_graph(u->ctx, g[i]);
  return true;
}
