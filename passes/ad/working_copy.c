/* working_copy.c: the AD working copy of the entry graph.
 *
 * The AD preparation passes rewrite control flow into forms reverse mode
 * can walk (both branches of an `if` evaluated, `while` unrolled, ...).
 * Those forms compute the same values but not the same way: an untaken
 * branch or an iteration after the loop ended may run out-of-range
 * gathers or singular solves, and they cost more. So the passes work on
 * clones: the entry graph and every graph it references (through
 * body/then/else/cond/fwd/vjp/jvp attributes) are copied once, in
 * module order so subgraphs come first, and the copies' graph
 * references point to the copies. u->entry and its subgraphs are never
 * modified; ENTRY behaves the same with or without --grad.
 * Entry points: ad_working_copy (idempotent), ad_drop_unused.
 */
#include "passes/ad/ad.h"

#include <stdio.h>

static int graph_index(const Module *m, const Graph *g) {
  for (int i = 0; i < m->ngraphs; i++)
    if (m->graphs[i] == g) return i;
  return -1;
}

/* reach[i]: module graph i is g0 or referenced from a reached graph */
static bool *reachable(Ctx *c, const Module *m, const Graph *g0) {
  bool *reach = arena_alloc(c->arena, (size_t)m->ngraphs + 1);
  int k = graph_index(m, g0);
  if (k >= 0) reach[k] = true;
  for (int i = m->ngraphs - 1; i >= 0; i--) {
    if (!reach[i]) continue;
    const Graph *g = m->graphs[i];
    for (int j = 0; j < g->nnodes; j++)
      for (int a = 0; a < g->nodes[j]->nattr; a++) {
        const Attr *at = &g->nodes[j]->attrs[a];
        int t = at->kind == AK_GRAPH ? graph_index(m, at->u.graph) : -1;
        if (t >= 0) reach[t] = true;
      }
  }
  return reach;
}

/* Copy g, redirecting graph attributes through map (old index -> new). */
static Graph *clone(Unit *u, const Graph *g, Graph **map) {
  Ctx *c = u->ctx;
  char nm[256];
  snprintf(nm, sizeof nm, "%s_ad", g->name);
  Graph *k = ib_graph_detached(c, ib_fresh_graph_name(c, u->mod, nm),
                               g->loc);
  Node **args = arena_alloc(c->arena,
                            sizeof(Node *) * (size_t)(g->nargs + 1));
  for (int i = 0; i < g->nargs; i++)
    args[i] = ir_arg_new(c, k, g->args[i]->op, g->args[i]->name,
                         g->args[i]->type, g->args[i]->loc);
  IrBuilder b = {c, k, g->loc};
  Node **rets = ib_inline(&b, g, args);
  for (int i = 0; i < k->nnodes; i++) {
    Node *n = k->nodes[i];
    for (int a = 0; a < n->nattr; a++) {
      int t = n->attrs[a].kind == AK_GRAPH
                  ? graph_index(u->mod, n->attrs[a].u.graph) : -1;
      if (t >= 0 && map[t]) n->attrs[a].u.graph = map[t];
    }
  }
  /* ib_inline drops value names; the copy keeps them for readability */
  for (int i = 0, j = 0; i < g->nnodes; i++) {
    const Node *o = g->nodes[i];
    if (o->op == OP_INPUT || o->op == OP_PARAM) continue;
    k->nodes[g->nargs + j++]->name = o->name;
  }
  ir_set_rets(c, k, rets, g->nret);
  return ib_attach(c, u->mod, k);
}

void ad_working_copy(Unit *u) {
  if (u->ad_entry) return;
  Module *m = u->mod;
  int n0 = m->ngraphs;
  bool *reach = reachable(u->ctx, m, u->entry);
  Graph **map = arena_alloc(u->ctx->arena, sizeof(Graph *) * (size_t)n0);
  u->ad_graphs = arena_alloc(u->ctx->arena, sizeof(Graph *) * (size_t)n0);
  for (int i = 0; i < n0; i++) {
    if (!reach[i]) continue;
    map[i] = clone(u, m->graphs[i], map);
    u->ad_graphs[u->n_ad_graphs++] = map[i];
    if (m->graphs[i] == u->entry) u->ad_entry = map[i];
  }
}

void ad_drop_unused(Unit *u) {
  if (!u->ad_entry || !u->grad) return;
  bool *reach = reachable(u->ctx, u->mod, u->grad);
  Graph **drop = arena_alloc(u->ctx->arena,
                             sizeof(Graph *) * (size_t)(u->n_ad_graphs + 1));
  int nd = 0;
  for (int i = 0; i < u->n_ad_graphs; i++) {
    int k = graph_index(u->mod, u->ad_graphs[i]);
    if (k >= 0 && !reach[k]) drop[nd++] = u->ad_graphs[i];
  }
  for (int i = 0; i < nd; i++) ir_module_remove_graph(u->mod, drop[i]);
}
