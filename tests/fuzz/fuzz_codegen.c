/* fuzz_codegen.c: libFuzzer target for code generation.
 *
 * Each input is a whole .rlx file. A module that parses and verifies,
 * and is small enough (caps below), is compiled three times, each time
 * from a fresh parse: as `rlxc` compiles it (entry = last graph), as
 * `rlxc --grad --grad-missing=zero`, and as `rlxc --jvp=%A --hvp
 * --grad-missing=zero` (%A: the entry's first floating-point argument,
 * so graphs without a param get a tangent too). Each run goes through the whole
 * pass pipeline and, when that succeeds, through LLVM IR generation of
 * every entry (cg_build_unit: fusion, memory plan, emitters, the entry
 * wrappers), then LLVMVerifyModule on the result. No object is written
 * and the LLVM optimizer does not run (its cost would dominate), unless
 * RLX_FUZZ_CG_OPT=N (0..3) asks for default<ON> after the verifier.
 *
 * Failures (abort): a crash, leak, hang or sanitizer report; any
 * "internal..." diagnostic (pipeline or codegen); code generation that
 * fails without a diagnostic; a module LLVM's verifier rejects; with
 * RLX_FUZZ_CG_OPT, a failing optimization. A diagnostic otherwise is
 * fine: an op or dtype the code generator does not support, nothing to
 * differentiate, a reserved entry name.
 *
 * Caps (the input is skipped beyond them, so each run stays in the
 * millisecond range): at most CAP_NODES nodes in the parsed module and
 * CAP_NODES_AFTER after the pipeline (with --grad, `while` is unrolled
 * and every graph gets a backward twin), no value with more than
 * CAP_ELEMS elements, no `while` with max_iterations above CAP_ITERS.
 *
 * Build: CC=clang cmake -S . -B build-fuzz -DRLX_FUZZ=ON
 *        cmake --build build-fuzz --target fuzz_codegen
 * Run:   build-fuzz/tests/fuzz/fuzz_codegen -dict=tests/fuzz/rlx.dict \
 *          NEWCORPUS tests/e2e/cases tests/gradcheck/cases
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <llvm-c/Analysis.h>

#include "codegen/cg_unit.h"
#include "frontend/frontend.h"
#include "passes/passes.h"

#define CAP_NODES 256
#define CAP_NODES_AFTER 4096
#define CAP_ELEMS (1 << 16)
#define CAP_ITERS 64

/* RLX_FUZZ_CG_OPT: 0..3, -2 when unset (no optimizer), -1 unread */
static int opt_level = -1;

static bool has_internal(const Ctx *c) {
  for (const Diag *d = c->diags; d; d = d->next)
    if (!strncmp(d->msg, "internal", 8) ||
        !strncmp(d->msg, "codegen: internal", 17)) {
      fprintf(stderr, "diagnostic: %s\n", d->msg);
      return true;
    }
  return false;
}

/* Nodes of every graph of m, or -1 when some value or attribute is over
   a cap. A dynamic shape counts at its bounds (unbounded ones are
   diagnosed by code generation, docs/dynamic-dims.md). */
static int module_size(const Module *m) {
  int total = 0;
  for (int i = 0; i < m->ngraphs; i++) {
    const Graph *g = m->graphs[i];
    total += g->nnodes;
    for (int j = 0; j < g->nnodes; j++) {
      const Node *n = g->nodes[j];
      const Type *t = &n->type;
      int64_t b = type_is_static(t) ? type_bytes(t) : type_bytes_bound(t);
      if (b > CAP_ELEMS * (int64_t)dt_size(t->dt)) return -1;
      for (int k = 0; k < n->nattr; k++)
        if (n->attrs[k].id == ATTR_MAX_ITERS &&
            n->attrs[k].u.i > CAP_ITERS)
          return -1;
    }
  }
  return total;
}

/* LLVM IR for every entry of u, then the verifier. */
static void gen(Unit *u) {
  Cg *cg = cg_new(u->ctx, u, u->cname);
  if (!cg) {
    if (has_internal(u->ctx) || u->ctx->nerrors == 0) abort();
    return;
  }
  CgEntry e[CG_MAX_ENTRIES];
  int ne = 0;
  bool ok = cg_build_unit(cg, u, e, &ne);
  if (has_internal(u->ctx)) abort();
  if (!ok && u->ctx->nerrors == 0) {
    fprintf(stderr, "codegen failed without a diagnostic\n");
    abort();
  }
  if (ok) {
    char *msg = NULL;
    if (LLVMVerifyModule(cg->mod, LLVMReturnStatusAction, &msg)) {
      fprintf(stderr, "invalid LLVM module (grad=%d jvp=%d):\n%s\n",
              u->opt->grad, u->opt->jvp, msg ? msg : "");
      abort();
    }
    LLVMDisposeMessage(msg);
    if (opt_level >= 0 && !cg_optimize(cg)) {
      has_internal(u->ctx);
      abort();
    }
  }
  cg_free(cg);
}

/* The name of g's first floating-point argument, or NULL. */
static const char *first_float_arg(const Graph *g) {
  for (int i = 0; i < g->nargs; i++)
    if (dt_is_float(g->args[i]->type.dt)) return g->args[i]->name;
  return NULL;
}

enum { PLAIN, GRAD, FORWARD };

static void compile(const uint8_t *data, size_t size, int mode) {
  Ctx *c = ctx_new("fuzz.rlx", (const char *)data, size);
  Module *m = fe_parse(c);
  if (m && c->nerrors == 0 && m->ngraphs > 0 && ir_verify(c, m)) {
    Graph *e = m->graphs[m->ngraphs - 1];
    const char *seed = first_float_arg(e);
    Options o = {.input = "fuzz.rlx", .grad = mode == GRAD,
                 .grad_missing_zero = true,
                 .jvp = mode == FORWARD, .jvp_wrt = &seed,
                 .njvp_wrt = seed != NULL, .hvp = mode == FORWARD,
                 .emit = EMIT_OBJ | EMIT_HEADER,
                 .opt_level = opt_level >= 0 ? opt_level : 2};
    Unit u = {.ctx = c, .mod = m, .opt = &o, .cname = "fuzz", .entry = e};
    bool ok = pass_run_pipeline(&u) && c->nerrors == 0;
    if (has_internal(c)) abort();
    int after = ok ? module_size(m) : -1;
    if (ok && after >= 0 && after <= CAP_NODES_AFTER) gen(&u);
  }
  ctx_free(c);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  if (opt_level == -1) {
    const char *e = getenv("RLX_FUZZ_CG_OPT");
    opt_level = e && *e >= '0' && *e <= '3' ? *e - '0' : -2;
    ops_init();
  }
  /* the front end once, to apply the caps before any pass runs */
  Ctx *c = ctx_new("fuzz.rlx", (const char *)data, size);
  Module *m = fe_parse(c);
  int n = m && c->nerrors == 0 ? module_size(m) : -1;
  ctx_free(c);
  if (n < 0 || n > CAP_NODES) return 0;
  compile(data, size, PLAIN);
  compile(data, size, GRAD);
  compile(data, size, FORWARD);
  return 0;
}
