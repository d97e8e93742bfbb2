/* pipeline.c: the pass pipeline, as a list one can read.
 *
 * pass_run_pipeline() runs the passes of `passes[]` in order, one line
 * each. After every pass it
 *   - prints the module to stderr when --dump-ir asks for it
 *     (`--dump-ir=all`: after every pass; `--dump-ir=NAME`: after that
 *     one), preceded by the line `// ---- after NAME ----`;
 *   - runs ir_verify() on the whole module unless the environment sets
 *     RLX_NO_VERIFY (to time the passes alone). A verifier failure after
 *     a pass is a compiler bug: the verifier reports it as
 *     "internal: verifier: ..." and a note names the pass.
 * The pipeline stops at the first pass that fails (returns false or
 * reports an error); the diagnostics are already on the Ctx.
 *
 * Adding a pass: one line in `passes[]` (its own file states what it
 * requires and provides; passes that only apply with --grad / --jvp
 * test u->opt themselves and return true otherwise).
 */
#include "passes/passes.h"

#include <stdlib.h>
#include <string.h>

/* "parse": a marker, not a transformation. The front end has already
 * built and shape-checked the module before the pipeline starts; this
 * entry exists so that `--dump-ir=parse` (and `all`) shows the module
 * exactly as parsed, and so that it is verified once before any real
 * pass runs. */
static bool pass_parse(Unit *u) {
  (void)u;
  return true;
}

/* "verify": an explicit verification point (also when RLX_NO_VERIFY
 * disables the automatic check after each pass). */
static bool pass_verify(Unit *u) { return ir_verify(u->ctx, u->mod); }

static const Pass passes[] = {
    {"parse", pass_parse},
    {"verify", pass_verify},
    {"prepare_if", pass_prepare_if},
    {"prepare_while", pass_prepare_while},
    {"inline_custom_fn", pass_inline_custom_fn},
    {"scan_prep", pass_scan_prep},
    {"grad", pass_grad},
    {"simplify", pass_simplify},
    {"cse", pass_cse},
    {"dce", pass_dce},
};

const Pass *pass_list(int *n) {
  *n = (int)(sizeof passes / sizeof passes[0]);
  return passes;
}

static bool want_dump(const Options *o, const char *pass) {
  if (!o || !o->dump_ir) return false;
  return !strcmp(o->dump_ir, "all") || !strcmp(o->dump_ir, pass);
}

static void dump(const Unit *u, const char *pass) {
  fflush(stdout);
  fprintf(stderr, "// ---- after %s ----\n", pass);
  ir_print_module(stderr, u->mod);
  fflush(stderr);
}

bool pass_run_pipeline(Unit *u) {
  int n;
  const Pass *p = pass_list(&n);
  bool verify = getenv("RLX_NO_VERIFY") == NULL;
  for (int i = 0; i < n; i++) {
    int before = u->ctx->nerrors;
    bool ok = p[i].run(u) && u->ctx->nerrors == before;
    if (want_dump(u->opt, p[i].name)) dump(u, p[i].name);
    if (!ok) return false;
    if (verify && strcmp(p[i].name, "verify") && !ir_verify(u->ctx, u->mod)) {
      diag_note(u->ctx, (Loc){0, 0}, "the module was malformed after "
                "pass '%s'", p[i].name);
      return false;
    }
  }
  return true;
}
