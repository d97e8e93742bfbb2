/* codegen.c: cg_emit(), cg_write_header() and cg_write_plan(), the
 * public entry points.
 *
 * One Cg (all LLVM objects) per call, created and disposed here. Every
 * entry of the Unit (ENTRY, ENTRY_grad, ENTRY_jvp, ENTRY_hvp) is built
 * first; only if all succeed are files written, and then atomically:
 * all of them or none (output.h). Output names come from out_path: with
 * -o PATH the object is PATH and the others replace its extension
 * (.h, .s, .ll); when no object is requested, a single asm or llvm
 * output is written to PATH itself. Without -o: ENTRY.o, ENTRY.h, ...
 * in the current directory. Entry point names (and the E_signature
 * symbols derived from them) must not be reserved (reserved.c).
 * Out of memory unwinds through the Ctx (ir.h): cg_new registers the
 * Cg and out_init the staged files, so both are released then.
 */
#include "codegen/cg_unit.h"
#include "codegen/cuda/cuda.h"
#include "codegen/output.h"
#include "codegen/reserved.h"

#include <string.h>

/* A diagnostic when an entry point named nm, or its nm_signature,
 * would take a reserved name (reserved.c). */
static bool check_reserved(Unit *u, const Graph *g, const char *nm) {
  char sym[256];
  if (!cg_symbols_reserved(nm, false, false, false, sym, sizeof sym))
    return true;
  if (!strcmp(sym, nm))
    return diag_error(u->ctx, g->loc, "codegen: entry point name '%s' is "
                      "reserved (C library, POSIX or rlx runtime "
                      "symbol); use --name", nm);
  return diag_error(u->ctx, g->loc, "codegen: symbol '%s' of entry point "
                    "'%s' is reserved (C library, POSIX or rlx runtime "
                    "symbol); use --name", sym, nm);
}

/* --target=cuda: a host Cg, whose unit cuda/entry.c builds. */
static Cg *unit_cg(Unit *u) {
  return cu_target(u->opt) ? cu_host_new(u) : cg_new(u->ctx, u, u->cname);
}

static bool build_unit(Cg *cg, Unit *u, CgEntry *e, int *ne) {
  return cu_target(u->opt) ? cu_build_unit(cg, u, e, ne)
                           : cg_build_unit(cg, u, e, ne);
}

bool cg_build_unit(Cg *cg, Unit *u, CgEntry *e, int *ne) {
  struct { Graph *g; const char *suffix; } all[CG_MAX_ENTRIES] = {
      {u->entry, ""}, {u->grad, "_grad"}, {u->jvp, "_jvp"}, {u->hvp, "_hvp"},
      {u->train, "_train"}};
  *ne = 0;
  for (int i = 0; i < CG_MAX_ENTRIES; i++) {
    if (!all[i].g) continue;
    size_t len = strlen(u->cname) + strlen(all[i].suffix) + 1;
    char *nm = arena_alloc(u->ctx->arena, len);
    snprintf(nm, len, "%s%s", u->cname, all[i].suffix);
    if (!check_reserved(u, all[i].g, nm)) return false;
    CgEntry *x = &e[(*ne)++];
    *x = (CgEntry){all[i].g, nm, 0, all[i].g->args, all[i].g->rets,
                   all[i].g->nargs, all[i].g->nret, NULL, NULL, 0, NULL, NULL,
                   NULL, 0};
    if (all[i].g == u->train) cg_train_args(u, x);
    if (!cg_entry(cg, x)) return false;
  }
  return !cg->failed;
}

/* Stage the output of kind (EMIT_LLVM, EMIT_ASM, EMIT_OBJ) in out. Its
 * names are allocated first: cg_write_* hold an LLVM buffer while they
 * stage it, which an out-of-memory unwind would not free. */
static bool stage_code(Cg *cg, Unit *u, OutSet *out, unsigned kind) {
  char *p = out_path_in(u->ctx->arena, u->opt, u->cname, kind);
  out_prepare(out, p);
  return kind == EMIT_LLVM ? cg_write_ll(cg, out, p)
                           : cg_write_obj(cg, out, p, kind == EMIT_ASM);
}

static bool stage_header(Cg *cg, Unit *u, OutSet *out, const CgEntry *e,
                         int ne) {
  char *p = out_path_in(u->ctx->arena, u->opt, u->cname, EMIT_HEADER);
  OutMem m;
  return out_mem_open(out, &m) &&
         out_mem_add(out, &m, p, cg_header_text(m.f, cg, e, ne));
}

/* The header is staged last: LLVM, whose running out of memory aborts
 * the process (abi.md), then works while as few temporaries as
 * possible exist (none for the usual object + header). */
static bool stage_files(Cg *cg, Unit *u, OutSet *out, const CgEntry *e,
                        int ne) {
  unsigned emit = u->opt->emit;
  if (emit & (EMIT_OBJ | EMIT_ASM | EMIT_LLVM)) {
    TimeMark t;
    time_begin(u->ctx, &t);
    bool ok = cg_optimize(cg);
    time_end(u->ctx, &t, "LLVM: optimize");
    if (!ok) return false;
    static const unsigned kinds[] = {EMIT_LLVM, EMIT_ASM, EMIT_OBJ};
    static const char *const what[] = {"LLVM: write IR", "LLVM: emit asm",
                                       "LLVM: emit object"};
    for (int i = 0; i < 3; i++) {
      if (!(emit & kinds[i])) continue;
      time_begin(u->ctx, &t);
      ok = stage_code(cg, u, out, kinds[i]);
      time_end(u->ctx, &t, what[i]);
      if (!ok) return false;
    }
  }
  return !(emit & EMIT_HEADER) || stage_header(cg, u, out, e, ne);
}

/* Every output or none: nothing is renamed into place unless all of
 * them were written (output.h) and no diagnostic came meanwhile (an
 * LLVM backend error is reported, not returned). */
static bool write_files(Cg *cg, Unit *u, const CgEntry *e, int ne) {
  OutSet out;
  int errors = u->ctx->nerrors;
  out_init(&out, u->ctx);
  bool ok = stage_files(cg, u, &out, e, ne);
  return out_finish(&out, ok && u->ctx->nerrors == errors);
}

bool cg_emit(Unit *u) {
  ops_init();
  Cg *cg = unit_cg(u);
  if (!cg) return false;
  CgEntry e[CG_MAX_ENTRIES];
  int ne = 0;
  TimeMark t;
  time_begin(u->ctx, &t);
  bool ok = build_unit(cg, u, e, &ne);
  time_end(u->ctx, &t, "codegen: fusion, memory plan, LLVM IR");
  ok = ok && write_files(cg, u, e, ne);
  cg_free(cg);
  return ok;
}

bool cg_write_header(Unit *u, FILE *f) {
  ops_init();
  Cg *cg = unit_cg(u);
  if (!cg) return false;
  CgEntry e[CG_MAX_ENTRIES];
  int ne = 0;
  bool ok = build_unit(cg, u, e, &ne) && cg_header_text(f, cg, e, ne);
  cg_free(cg);
  return ok;
}

/* Plans in compile order: the cache list is newest first. */
static void dump_plans(FILE *f, const CgSub *s) {
  if (!s) return;
  dump_plans(f, s->next);
  cg_plan_dump(f, s->plan, LLVMGetValueName(s->fn));
}

bool cg_write_plan(Unit *u, FILE *f) {
  ops_init();
  Cg *cg = unit_cg(u);
  if (!cg) return false;
  CgEntry e[CG_MAX_ENTRIES];
  int ne = 0;
  bool ok = build_unit(cg, u, e, &ne);
  if (ok) dump_plans(f, cg->subs);
  cg_free(cg);
  return ok && !ferror(f);
}
