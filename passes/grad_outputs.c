/* grad_outputs.c: the gradient outputs of ENTRY_grad get their own
 * values and names, after the clean-up passes.
 *
 * Runs with --grad, last. Gradient output k is named `d_NAME` after its
 * wrt value (the generated header's and the test harness's
 * convention). When that gradient is an argument (e.g. `d_output` itself
 * for loss = a + b), another output, or a value that already has a
 * name, it is first copied with an identity reshape, so that every
 * output is a value of its own: outputs may not alias inputs or each
 * other (abi.md section 3) and the copy is the one that codegen would
 * have to make anyway. Nothing runs after this pass that could fold the
 * copy away.
 */
#include "passes/ad.h"

#include <stdio.h>
#include <string.h>

static bool name_taken(const Graph *g, const char *name) {
  for (int i = 0; i < g->nnodes; i++)
    if (g->nodes[i]->name && !strcmp(g->nodes[i]->name, name)) return true;
  return false;
}

/* Names of the wrt values in order: --wrt, else the entry's params. */
static const char *wrt_name(const Unit *u, int k) {
  if (u->opt->nwrt) return u->opt->wrt[k];
  for (int i = 0, j = 0; i < u->entry->nargs; i++)
    if (u->entry->args[i]->op == OP_PARAM && j++ == k)
      return u->entry->args[i]->name;
  return NULL;
}

bool pass_grad_outputs(Unit *u) {
  if (!u->opt || !u->opt->grad || !u->grad) return true;
  Graph *g = u->grad;
  int nf = u->entry->nret;
  IrBuilder b = {u->ctx, g, g->loc};
  for (int k = 0; nf + k < g->nret; k++) {
    Node *r = g->rets[nf + k];
    const char *w = wrt_name(u, k);
    char buf[256];
    snprintf(buf, sizeof buf, "d_%s", w ? w : "value");
    if (r->name && !strcmp(r->name, buf)) continue;
    bool shared = false;
    for (int j = 0; j < g->nret; j++) shared |= j != nf + k && g->rets[j] == r;
    if (shared || r->name || r->op == OP_INPUT || r->op == OP_PARAM ||
        r->op == OP_CONST)
      r = g->rets[nf + k] = ib_reshape_as(&b, r, &r->type);
    if (!name_taken(g, buf)) r->name = arena_strdup(u->ctx->arena, buf);
  }
  return true;
}
