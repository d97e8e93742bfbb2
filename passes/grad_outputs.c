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
#include <stdlib.h>
#include <string.h>

static int cmp_str(const void *a, const void *b) {
  return strcmp(*(const char *const *)a, *(const char *const *)b);
}

/* The names of g's values, sorted (arena); *n gets their count. */
static const char **sorted_names(Ctx *c, const Graph *g, int *n) {
  const char **v = arena_alloc(c->arena, sizeof(char *) *
                                             ((size_t)g->nnodes + 1));
  *n = 0;
  for (int i = 0; i < g->nnodes; i++)
    if (g->nodes[i]->name) v[(*n)++] = g->nodes[i]->name;
  qsort(v, (size_t)*n, sizeof *v, cmp_str);
  return v;
}

/* Names of the wrt values in order: --wrt, else the entry's params. */
static const char **wrt_names(const Unit *u) {
  if (u->opt->nwrt) return (const char **)u->opt->wrt;
  const Graph *e = u->entry;
  const char **v = arena_alloc(u->ctx->arena, sizeof(char *) *
                                                  ((size_t)e->nargs + 1));
  for (int i = 0, j = 0; i < e->nargs; i++)
    if (e->args[i]->op == OP_PARAM) v[j++] = e->args[i]->name;
  return v;
}

/* Was wrt value k listed before (--wrt=%a,%a: one name, the first)?
 * Params are distinct; a --wrt list is short. */
static bool repeated(const Unit *u, const char **wrt, int k) {
  for (int j = 0; u->opt->nwrt && j < k; j++)
    if (wrt[j] && wrt[k] && !strcmp(wrt[j], wrt[k])) return true;
  return false;
}

bool pass_grad_outputs(Unit *u) {
  if (!u->opt || !u->opt->grad || !u->grad) return true;
  Graph *g = u->grad;
  int nf = u->entry->nret, nnames;
  IrBuilder b = {u->ctx, g, g->loc};
  const char **names = sorted_names(u->ctx, g, &nnames);
  const char **wrt = wrt_names(u);
  int *nret_of = arena_alloc(u->ctx->arena,
                             sizeof(int) * ((size_t)g->next_id + 1));
  for (int j = 0; j < g->nret; j++) nret_of[g->rets[j]->id]++;
  for (int k = 0; nf + k < g->nret; k++) {
    Node *r = g->rets[nf + k];
    const char *w = wrt[k], *key = NULL;
    char buf[256];
    snprintf(buf, sizeof buf, "d_%s", w ? w : "value");
    if (r->name && !strcmp(r->name, buf)) continue;
    if (nret_of[r->id] > 1 || r->name || r->op == OP_INPUT ||
        r->op == OP_PARAM || r->op == OP_CONST) {
      nret_of[r->id]--;
      r = g->rets[nf + k] = ib_reshape_as(&b, r, &r->type);
    }
    key = buf;
    if (!bsearch(&key, names, (size_t)nnames, sizeof *names, cmp_str) &&
        !repeated(u, wrt, k))
      r->name = arena_strdup(u->ctx->arena, buf);
  }
  return true;
}
