/* test_ad_util.h: fixture for the autodiff CUnit suites (test_grad.c,
 * test_jvp.c): parse a source string, run the whole pass pipeline with
 * the given options (it verifies the module after every pass), and
 * inspect the result: op counts, diagnostics. */
#ifndef TEST_AD_UTIL_H
#define TEST_AD_UTIL_H

#include "frontend/frontend.h"
#include "ir/ir.h"
#include "passes/passes.h"

#include <CUnit/Basic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef struct {
  Ctx *c;
  Module *m;
  Options o;
  Unit u;
  bool ok;
} T;

/* Parse src (which must parse) and run the pipeline with options o
 * (opt_level 2) on its last graph. */
static inline T *ad_run(const char *src, Options o) {
  T *t = calloc(1, sizeof *t);
  t->c = ctx_new("t.rlx", src, strlen(src));
  t->m = fe_parse(t->c);
  CU_ASSERT_PTR_NOT_NULL_FATAL(t->m);
  CU_ASSERT_EQUAL_FATAL(t->c->nerrors, 0);
  t->o = o;
  t->o.opt_level = 2;
  t->u.ctx = t->c;
  t->u.mod = t->m;
  t->u.opt = &t->o;
  t->u.entry = t->m->graphs[t->m->ngraphs - 1];
  t->u.cname = t->u.entry->name;
  t->ok = pass_run_pipeline(&t->u);
  return t;
}

static inline void done(T *t) {
  ctx_free(t->c);
  free(t);
}

static inline int count_op(const Graph *g, Op op) {
  int k = 0;
  for (int i = 0; i < g->nnodes; i++) k += g->nodes[i]->op == op;
  return k;
}

/* A diagnostic containing `what` (at `line`, unless 0)? */
static inline bool has_diag(const T *t, const char *what, int line) {
  for (Diag *d = t->c->diags; d; d = d->next)
    if (strstr(d->msg, what) && (!line || d->loc.line == line)) return true;
  return false;
}

static inline void dump_diags(const T *t) {
  for (Diag *d = t->c->diags; d; d = d->next)
    fprintf(stderr, "  %d:%d: %s\n", d->loc.line, d->loc.col, d->msg);
}

#define OK(t)                                                       \
  do {                                                              \
    if (!(t)->ok) dump_diags(t);                                    \
    CU_ASSERT_TRUE_FATAL((t)->ok);                                  \
  } while (0)

#endif
