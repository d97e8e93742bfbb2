/* grad_outputs.c: the derivative outputs of ENTRY_grad, ENTRY_hvp and
 * ENTRY_jvp get their own values and names, after the clean-up passes.
 *
 * Runs last. Gradient output k is named `d_NAME` after its wrt value
 * (the generated header's and the test harness's convention); HVP
 * outputs are `d_NAME`, `grad_dot_tangent`, `hvp_NAME`; the tangent of
 * a named return value NAME is `tangent_NAME`. When that gradient is an argument (e.g. `d_output` itself
 * for loss = a + b), another output, or a value that already has a
 * name, it is first copied with an identity reshape, so that every
 * output is a value of its own: outputs may not alias inputs or each
 * other (abi.md section 3) and the copy is the one that codegen would
 * have to make anyway. Nothing runs after this pass that could fold the
 * copy away.
 */
#include "passes/ad/ad.h"

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
const char **ad_wrt_names(const Unit *u) {
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

typedef struct {
  const char *key;
  int k;
} Want;

static int cmp_want(const void *a, const void *b) {
  const Want *x = a, *y = b;
  int c = strcmp(x->key, y->key);
  return c ? c : (x->k > y->k) - (x->k < y->k);
}

/* dup[k]: want[k] is also want[j] for some j < k (sorting: n log n). */
static bool *repeated_wants(Ctx *c, char **want, int n) {
  bool *dup = arena_alloc(c->arena, (size_t)n + 1);
  Want *w = arena_alloc(c->arena, sizeof *w * ((size_t)n + 1));
  int m = 0;
  for (int k = 0; k < n; k++)
    if (want[k]) w[m++] = (Want){want[k], k};
  qsort(w, (size_t)m, sizeof *w, cmp_want);
  for (int i = 1; i < m; i++)
    dup[w[i].k] = !strcmp(w[i].key, w[i - 1].key);
  return dup;
}

/* Outputs first.. of g get values of their own and, where free, the
 * names want[k] (NULL: keep; skip[k]: a repeated --wrt, unnamed). */
static void own_outputs(Unit *u, Graph *g, int first, char **want,
                        const bool *skip) {
  IrBuilder b = {u->ctx, g, g->loc};
  int nnames;
  const char **names = sorted_names(u->ctx, g, &nnames);
  int *nret_of = arena_alloc(u->ctx->arena,
                             sizeof(int) * ((size_t)g->next_id + 1));
  for (int j = 0; j < g->nret; j++) nret_of[g->rets[j]->id]++;
  bool *dup = repeated_wants(u->ctx, want, g->nret - first);
  for (int k = 0; first + k < g->nret; k++) {
    Node *r = g->rets[first + k];
    const char *key = want[k];
    if (key && r->name && !strcmp(r->name, key)) continue;
    if (nret_of[r->id] > 1 || r->name || r->op == OP_INPUT ||
        r->op == OP_PARAM || r->op == OP_CONST) {
      nret_of[r->id]--;
      r = g->rets[first + k] = ib_reshape_as(&b, r, &r->type);
    }
    if (key && !(skip && skip[k]) && !dup[k] &&
        !bsearch(&key, names, (size_t)nnames, sizeof *names, cmp_str))
      r->name = key;
  }
}

static char *prefixed(Ctx *c, const char *pfx, const char *name) {
  char buf[256];
  snprintf(buf, sizeof buf, "%s%s", pfx, name ? name : "value");
  return arena_strdup(c->arena, buf);
}

bool pass_grad_outputs(Unit *u) {
  if (!u->opt) return true;
  Ctx *c = u->ctx;
  int nf = u->entry->nret;
  const char **wrt = ad_wrt_names(u);
  int nw = u->grad ? u->grad->nret - nf
                   : u->hvp ? (u->hvp->nret - 2) / 2 : 0;
  bool *skip = arena_alloc(c->arena, (size_t)nw + 1);
  char **want = arena_alloc(c->arena, sizeof(char *) * (size_t)(2 * nw + 2 +
                                                                  nf));
  for (int k = 0; k < nw; k++) {
    skip[k] = repeated(u, wrt, k);
    want[k] = prefixed(c, "d_", wrt[k]);
  }
  if (u->grad) own_outputs(u, u->grad, nf, want, skip);
  if (u->hvp) { /* loss, d_W..., grad_dot_tangent, hvp_W... */
    bool *sk = arena_alloc(c->arena, (size_t)(2 * nw + 2));
    for (int k = 0; k < nw; k++) {
      sk[k] = sk[nw + 1 + k] = skip[k];
      want[nw + 1 + k] = prefixed(c, "hvp_", wrt[k]);
    }
    want[nw] = prefixed(c, "grad_dot_tangent", "");
    own_outputs(u, u->hvp, 1, want, sk);
  }
  if (u->jvp) {
    for (int i = 0; i < nf; i++)
      want[i] = u->jvp->rets[i]->name
          ? prefixed(c, "tangent_", u->jvp->rets[i]->name) : NULL;
    own_outputs(u, u->jvp, nf, want, NULL);
  }
  return true;
}
