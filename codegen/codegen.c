/* codegen.c: cg_emit() and cg_write_header(), the public entry points.
 *
 * One Cg (all LLVM objects) per call, created and disposed here. Every
 * entry of the Unit (ENTRY, ENTRY_grad, ENTRY_jvp, ENTRY_hvp) is built
 * first; only if all succeed are files written. Output names: with
 * -o PATH the object is PATH and the others replace its extension
 * (.h, .s, .ll); when no object is requested, a single asm or llvm
 * output is written to PATH itself. Without -o: ENTRY.o, ENTRY.h, ...
 * in the current directory.
 */
#include "codegen/cg_unit.h"

#include <stdlib.h>
#include <string.h>

/* Names the generated object or its runtime already use: an entry point
 * with one of these names would clash at link time or capture calls. */
static bool reserved(const char *nm) {
  static const char *const libc[] = {
      "exp", "expf", "log", "logf", "sin", "sinf", "cos", "cosf", "tan",
      "tanf", "atan", "atanf", "tanh", "tanhf", "erf", "erff", "pow", "powf",
      "sqrt", "sqrtf", "fabs", "fabsf", "rint", "rintf", "roundeven",
      "roundevenf", "fmin", "fminf", "fmax", "fmaxf", "exp2", "exp2f",
      "log2", "log2f", "memcpy", "memset", "memmove", "malloc", "free",
      "calloc", "realloc", "abort", "exit", "main", NULL};
  if (!strncmp(nm, "rlx_", 4) || !strncmp(nm, "__", 2)) return true;
  for (int i = 0; libc[i]; i++)
    if (!strcmp(nm, libc[i])) return true;
  return false;
}

bool cg_build_unit(Cg *cg, Unit *u, CgEntry *e, int *ne) {
  struct { Graph *g; const char *suffix; } all[CG_MAX_ENTRIES] = {
      {u->entry, ""}, {u->grad, "_grad"}, {u->jvp, "_jvp"}, {u->hvp, "_hvp"}};
  *ne = 0;
  for (int i = 0; i < CG_MAX_ENTRIES; i++) {
    if (!all[i].g) continue;
    size_t len = strlen(u->cname) + strlen(all[i].suffix) + 1;
    char *nm = arena_alloc(u->ctx->arena, len);
    snprintf(nm, len, "%s%s", u->cname, all[i].suffix);
    if (reserved(nm))
      return diag_error(u->ctx, all[i].g->loc,
                        "codegen: entry point name '%s' is reserved (C "
                        "library or rlx runtime symbol); use --name", nm);
    CgEntry *x = &e[(*ne)++];
    *x = (CgEntry){all[i].g, nm, 0};
    if (!cg_entry(cg, x->g, nm, &x->ws_bytes)) return false;
  }
  return !cg->failed;
}

/* base + ext, where base is PATH without its extension. */
static char *derive(Unit *u, const char *path, const char *ext) {
  const char *slash = strrchr(path, '/');
  const char *dot = strrchr(path, '.');
  size_t n = dot && (!slash || dot > slash) ? (size_t)(dot - path)
                                            : strlen(path);
  char *s = arena_alloc(u->ctx->arena, n + strlen(ext) + 1);
  memcpy(s, path, n);
  strcpy(s + n, ext);
  return s;
}

static const char *out_path(Unit *u, unsigned kind, const char *ext) {
  const Options *o = u->opt;
  if (!o->output) return derive(u, u->cname, ext);
  unsigned files = o->emit & (EMIT_OBJ | EMIT_ASM | EMIT_LLVM);
  if (kind == EMIT_OBJ || (kind != EMIT_HEADER && files == kind))
    return o->output;
  return derive(u, o->output, ext);
}

static bool write_header(Unit *u, const CgEntry *e, int ne) {
  const char *p = out_path(u, EMIT_HEADER, ".h");
  FILE *f = fopen(p, "w");
  if (!f)
    return diag_error(u->ctx, (Loc){0, 0}, "cannot write '%s'", p);
  bool ok = cg_header_text(f, u, e, ne);
  if (fclose(f) != 0) ok = false;
  if (!ok) diag_error(u->ctx, (Loc){0, 0}, "cannot write '%s'", p);
  return ok;
}

static bool write_files(Cg *cg, Unit *u, const CgEntry *e, int ne) {
  unsigned emit = u->opt->emit;
  if ((emit & EMIT_HEADER) && !write_header(u, e, ne)) return false;
  if (!(emit & (EMIT_OBJ | EMIT_ASM | EMIT_LLVM))) return true;
  if (!cg_optimize(cg)) return false;
  if ((emit & EMIT_LLVM) && !cg_write_ll(cg, out_path(u, EMIT_LLVM, ".ll")))
    return false;
  if ((emit & EMIT_ASM) &&
      !cg_write_obj(cg, out_path(u, EMIT_ASM, ".s"), true))
    return false;
  if ((emit & EMIT_OBJ) &&
      !cg_write_obj(cg, out_path(u, EMIT_OBJ, ".o"), false))
    return false;
  return true;
}

bool cg_emit(Unit *u) {
  ops_init();
  Cg *cg = cg_new(u->ctx, u, u->cname);
  if (!cg) return false;
  CgEntry e[CG_MAX_ENTRIES];
  int ne = 0;
  bool ok = cg_build_unit(cg, u, e, &ne) && write_files(cg, u, e, ne);
  cg_free(cg);
  return ok;
}

bool cg_write_header(Unit *u, FILE *f) {
  ops_init();
  Cg *cg = cg_new(u->ctx, u, u->cname);
  if (!cg) return false;
  CgEntry e[CG_MAX_ENTRIES];
  int ne = 0;
  bool ok = cg_build_unit(cg, u, e, &ne) && cg_header_text(f, u, e, ne);
  cg_free(cg);
  return ok;
}
