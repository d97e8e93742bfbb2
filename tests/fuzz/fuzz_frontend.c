/* fuzz_frontend.c: libFuzzer target for the front end and the passes.
 *
 * Each input is a whole .rlx file: ctx_new on the bytes, fe_parse, and
 * for a clean parse ir_verify plus ir_print_module; a module that
 * verifies then goes through the whole pass pipeline as
 * `rlxc --grad --grad-missing=zero --check` would run it (entry = last
 * graph), then as `rlxc --jvp=%A --hvp --grad-missing=zero --check`
 * (%A: the entry's first floating-point argument), so the AD
 * preparation passes, grad, jvp, hvp, simplify, cse, dce and
 * grad_outputs see every graph the fuzzer finds. No input may crash,
 * leak, hang or trip a sanitizer, and no pass may leave a module the
 * verifier rejects ("internal: ..." diagnostic: abort). With
 * RLX_FUZZ_STRICT=1 in the environment it also checks the contracts
 * between parser, verifier and printer: a clean parse verifies, and the
 * printed module parses again and prints byte-identically (language.md
 * section 4).
 *
 * Build: CC=clang cmake -S . -B build-fuzz -DRLX_FUZZ=ON
 *        cmake --build build-fuzz --target fuzz_frontend
 * Run:   build-fuzz/tests/fuzz/fuzz_frontend -dict=tests/fuzz/rlx.dict \
 *          -max_len=4096 NEWCORPUS tests/fuzz/corpus
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "frontend/frontend.h"
#include "passes/passes.h"

/* The printed form of m (malloc'ed; *len bytes). */
static char *print_module(const Module *m, size_t *len) {
  char *buf = NULL;
  FILE *f = open_memstream(&buf, len);
  if (!f) abort();
  ir_print_module(f, m);
  fclose(f);
  return buf;
}

static void check_round_trip(const Module *m) {
  size_t n1, n2;
  char *p1 = print_module(m, &n1);
  Ctx *c2 = ctx_new("printed.rlx", p1, n1);
  Module *m2 = fe_parse(c2);
  if (!m2 || c2->nerrors) {
    fprintf(stderr, "printed module does not parse:\n%s\n", p1);
    abort();
  }
  char *p2 = print_module(m2, &n2);
  if (n1 != n2 || memcmp(p1, p2, n1)) {
    fprintf(stderr, "round trip differs:\n%s\n----\n%s\n", p1, p2);
    abort();
  }
  free(p2);
  ctx_free(c2);
  free(p1);
}

/* The pipeline on the last graph (with --grad, or forward mode); a
   diagnostic is fine (an input may have nothing to differentiate), an
   internal one is not. */
static void run_passes(Ctx *c, Module *m, bool forward) {
  if (m->ngraphs == 0) return;
  Graph *e = m->graphs[m->ngraphs - 1];
  const char *seed = NULL;
  for (int i = 0; i < e->nargs && !seed; i++)
    if (dt_is_float(e->args[i]->type.dt)) seed = e->args[i]->name;
  Options o = {.input = "fuzz.rlx", .grad = !forward,
               .grad_missing_zero = true, .jvp = forward,
               .jvp_wrt = &seed, .njvp_wrt = seed != NULL, .hvp = forward,
               .check = true, .opt_level = 2};
  Unit u = {.ctx = c, .mod = m, .opt = &o, .cname = "fuzz", .entry = e};
  pass_run_pipeline(&u);
  for (const Diag *d = c->diags; d; d = d->next)
    if (!strncmp(d->msg, "internal", 8)) {
      fprintf(stderr, "pass pipeline: %s\n", d->msg);
      abort();
    }
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  static int strict = -1;
  if (strict < 0) {
    const char *e = getenv("RLX_FUZZ_STRICT");
    strict = e && *e == '1';
  }
  Ctx *c = ctx_new("fuzz.rlx", (const char *)data, size);
  Module *m = fe_parse(c);
  if (m && c->nerrors == 0) {
    bool verified = ir_verify(c, m);
    if (strict && !verified) abort();
    FILE *null = fopen("/dev/null", "w");
    if (null) {
      ir_print_module(null, m);
      fclose(null);
    }
    if (strict && verified) check_round_trip(m);
    if (verified) run_passes(c, m, false);
  }
  ctx_free(c);
  c = ctx_new("fuzz.rlx", (const char *)data, size); /* a fresh module */
  m = fe_parse(c);
  if (m && c->nerrors == 0 && ir_verify(c, m)) run_passes(c, m, true);
  ctx_free(c);
  return 0;
}
