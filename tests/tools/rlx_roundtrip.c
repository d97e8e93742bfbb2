/* rlx_roundtrip.c: the printer's round trip over many files in one
 * process (golden.roundtrip_repo, golden.op_coverage; run_golden.py).
 *
 * For each FILE that `rlxc --emit=ir FILE` accepts, P1 (the canonical IR
 * it prints: parse, verify, the default pipeline, print) must print
 * again unchanged from its own parse (language.md §4); and whenever
 * `rlxc --check --grad --grad-missing=zero FILE` is accepted, the module
 * after that pipeline (what --dump-ir=all prints last) must too. This is
 * what rlxc does for those command lines, without a process start per
 * step: four per file, ~90 ms each on the CI machine, made ~1000 files
 * a 6-minute test.
 *
 * Usage: rlx_roundtrip FILE...
 *   prints "round trip checked on N files, G of them after --grad
 *   too"; exit status 1 when a round trip fails.
 * rlx_roundtrip --ops FILE...
 *   prints every op that some P1 uses, one per line (the coverage check
 *   compares them with `rlxc --list-ops`), and checks no round trip.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "frontend/frontend.h"
#include "passes/passes.h"

static bool used[OP_COUNT];

static char *read_file(const char *path, size_t *len) {
  FILE *f = fopen(path, "rb");
  if (!f) return NULL;
  char *buf = NULL;
  size_t cap = 0, n = 0, r;
  do {
    if (n + 4096 > cap) buf = realloc(buf, cap = 2 * cap + 4096);
    r = fread(buf + n, 1, cap - n, f);
    n += r;
  } while (r > 0);
  fclose(f);
  *len = n;
  return buf;
}

static char *print_text(const Module *m) {
  char *text = NULL;
  size_t len = 0;
  FILE *f = open_memstream(&text, &len);
  ir_print_module(f, m);
  fclose(f);
  return text;
}

/* Parse src, run the pipeline (with --grad when grad: the entry is the
 * last graph, --check) and print the result; NULL when rlxc would reject
 * it. With ops, records the ops of the result. */
static char *compile(const char *name, const char *src, size_t len,
                     bool grad, bool ops) {
  Ctx *c = ctx_new(name, src, len);
  Module *m = fe_parse(c);
  char *text = NULL;
  if (m && c->nerrors == 0 && m->ngraphs > 0) {
    Graph *e = m->graphs[m->ngraphs - 1];
    Options o = {.input = name, .emit = EMIT_IR, .opt_level = 2,
                 .grad = grad, .check = grad, .grad_missing_zero = grad};
    Unit u = {.ctx = c, .mod = m, .opt = &o, .cname = e->name, .entry = e};
    if (pass_run_pipeline(&u) && c->nerrors == 0) {
      text = print_text(m);
      for (int i = 0; ops && i < m->ngraphs; i++)
        for (int j = 0; j < m->graphs[i]->nnodes; j++)
          used[m->graphs[i]->nodes[j]->op] = true;
    }
  }
  ctx_free(c);
  return text;
}

/* text, parsed and printed again by the default pipeline, is text. */
static bool reprints(const char *what, const char *text) {
  char *again = compile(what, text, strlen(text), false, false);
  bool ok = again && !strcmp(again, text);
  if (!ok)
    printf("%s: %s\n--- printed ---\n%s--- printed again ---\n%s\n", what,
           again ? "round trip differs" : "printed IR does not parse",
           text, again ? again : "");
  free(again);
  return ok;
}

int main(int argc, char **argv) {
  ops_init();
  bool ops = argc > 1 && !strcmp(argv[1], "--ops");
  int checked = 0, grads = 0, failed = 0;
  for (int i = 1 + ops; i < argc; i++) {
    size_t len;
    char *src = read_file(argv[i], &len);
    if (!src) {
      printf("%s: cannot read\n", argv[i]);
      failed++;
      continue;
    }
    char *p1 = compile(argv[i], src, len, false, ops);
    if (p1 && !ops) {
      checked++;
      failed += !reprints(argv[i], p1);
      char *dump = compile(argv[i], src, len, true, false);
      char what[4096];
      snprintf(what, sizeof what, "%s (after --grad)", argv[i]);
      if (dump) failed += !reprints(what, dump), grads++;
      free(dump);
    }
    free(p1);
    free(src);
  }
  if (!ops)
    printf("round trip checked on %d files, %d of them after --grad "
           "too\n", checked, grads);
  for (int op = 0; ops && op < OP_COUNT; op++)
    if (used[op]) printf("op %s\n", op_name(op));
  return failed ? 1 : 0;
}
