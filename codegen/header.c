/* header.c: the generated C header (abi.md §4).
 *
 * For each entry point E: a comment listing every argument (position,
 * name, dtype and shape, input or param), E_NUM_INPUTS, E_NUM_OUTPUTS,
 * E_WORKSPACE_BYTES (unless laid out at each call), E_WORKSPACE_ALIGN,
 * with sizes E_workspace_bytes(sizes), per argument E_ARG_<name> (its
 * index in the inputs or the outputs) and E_BYTES_<name> (its size),
 * the prototype and E_signature(). Outputs also get E_OUT_<name>; an
 * output whose name an input already has gets only E_OUT_ / E_OUT_BYTES_,
 * and a name returned twice names its first position (so every macro is
 * defined once). ENTRY_train also gets E_STATE_BYTES and E_STATE_ALIGN
 * (its optimizer state buffer, one input). Once per unit: the target triple and CPU, and
 * cname_CPU_FEATURES, the extensions the entries check for at their first
 * call. The header needs only rlxrt.h.
 */
#include "codegen/cg_unit.h"
#include "codegen/cuda/cuda.h"

#include <ctype.h>
#include <stdlib.h>
#include <string.h>

static void arg_line(FILE *f, const CgEntry *e, const Node *n, int i,
                     bool out) {
  char ty[160], buf[64];
  type_str(&n->type, ty, sizeof ty);
  const char *kind = out ? ""
      : n == e->state ? "  (optimizer state, updated in place)"
      : n->op == OP_PARAM ? (e->train ? "  (param, updated in place)"
                                      : "  (param)")
      : "  (input)";
  fprintf(f, " *     [%d] %s: %s%s\n", i, cg_out_name(n, i, buf), ty, kind);
}

/* Dynamic dimensions: the index of module symbol k in e's sizes. */
static int size_index(const CgEntry *e, int k) {
  for (int i = 0; i < e->nsyms; i++)
    if (e->syms[i] == k) return i;
  RLX_ASSERT(!"symbol not among the entry's sizes");
  return -1;
}

/* n's bytes: a number, or for a dynamic type a C expression of the
 * macro parameter s (the sizes array), e.g. "((s)[0] * 3136LL)". */
static const char *arg_bytes(const CgEntry *e, const Node *n, char *buf,
                             size_t cap) {
  int64_t b = dt_size(n->type.dt);
  size_t k = 0;
  for (int i = 0; i < n->type.rank; i++) {
    int64_t d = n->type.dims[i];
    if (dim_is_static(d)) {
      b *= d;
      continue;
    }
    k += (size_t)snprintf(buf + k, k < cap ? cap - k : 0, "(");
    for (int t = 0; t < dim_nterms(d); t++) {
      int sy[RLX_MAX_RANK], ns;
      int64_t c = dim_term(d, t, sy, &ns);
      if (c != 1 || !ns)
        k += (size_t)snprintf(buf + k, k < cap ? cap - k : 0, "%s%lldLL",
                              t ? " + " : "", (long long)c);
      else if (t)
        k += (size_t)snprintf(buf + k, k < cap ? cap - k : 0, " + ");
      for (int j = 0; j < ns; j++)
        k += (size_t)snprintf(buf + k, k < cap ? cap - k : 0, "%s(s)[%d]",
                              j || c != 1 ? " * " : "", size_index(e, sy[j]));
    }
    k += (size_t)snprintf(buf + k, k < cap ? cap - k : 0, ") * ");
  }
  snprintf(buf + k, k < cap ? cap - k : 0, "%lldLL", (long long)b);
  if (k) { /* dynamic: wrap it, and name the parameter */
    char tmp[512];
    snprintf(tmp, sizeof tmp, "(s) (%s)", buf);
    snprintf(buf, cap, "%s", tmp);
  } else {
    snprintf(buf, cap, " %lld", (long long)b);
  }
  return buf;
}

typedef struct {
  const char *s;
  int i;
} Named;

static int cmp_name(const void *a, const void *b) {
  return strcmp(((const Named *)a)->s, ((const Named *)b)->s);
}

static int cmp_named(const void *a, const void *b) {
  const Named *x = a, *y = b;
  int c = strcmp(x->s, y->s);
  return c ? c : (x->i > y->i) - (x->i < y->i);
}

/* E_ARG_<name> / E_BYTES_<name> for inputs, E_OUT_<name> /
 * E_OUT_BYTES_<name> (and E_ARG_ / E_BYTES_ unless an input took the
 * name) for outputs. Names are looked up sorted: graphs with tens of
 * thousands of params have as many gradient outputs. */
static void arg_macros(FILE *f, const char *nm, const CgEntry *e,
                       Arena *ar) {
  char bb[512];
  const struct { int nargs, nret; Node **args, **rets; } gg = {
      e->nargs, e->nret, e->args, e->rets}, *g = &gg;
  for (int i = 0; i < g->nargs; i++) {
    const char *a = g->args[i]->name;
    fprintf(f, "#define %s_ARG_%s %d\n#define %s_BYTES_%s%s\n", nm, a, i,
            nm, a, arg_bytes(e, g->args[i], bb, sizeof bb));
  }
  Named *args = arena_tmp_alloc(ar, sizeof *args * ((size_t)g->nargs + 1));
  Named *outs = arena_tmp_alloc(ar, sizeof *outs * ((size_t)g->nret + 1));
  bool *dup = arena_tmp_alloc(ar, (size_t)g->nret + 1);
  for (int i = 0; i < g->nargs; i++) args[i] = (Named){g->args[i]->name, i};
  for (int j = 0; j < g->nret; j++) {
    char buf[64];
    outs[j] = (Named){arena_strdup(ar, cg_out_name(g->rets[j], j, buf)), j};
  }
  qsort(args, (size_t)g->nargs, sizeof *args, cmp_named);
  qsort(outs, (size_t)g->nret, sizeof *outs, cmp_named);
  for (int k = 1; k < g->nret; k++) /* the first output of a name has it */
    dup[outs[k].i] = !strcmp(outs[k].s, outs[k - 1].s);
  for (int j = 0; j < g->nret; j++) {
    char buf[64];
    const char *a = cg_out_name(g->rets[j], j, buf);
    if (dup[j]) continue;
    const char *b = arg_bytes(e, g->rets[j], bb, sizeof bb);
    fprintf(f, "#define %s_OUT_%s %d\n#define %s_OUT_BYTES_%s%s\n", nm, a,
            j, nm, a, b);
    Named key = {a, 0};
    if (!bsearch(&key, args, (size_t)g->nargs, sizeof *args, cmp_name))
      fprintf(f, "#define %s_ARG_%s %d\n#define %s_BYTES_%s%s\n", nm, a,
              j, nm, a, b);
  }
  arena_tmp_free(ar, args);
  arena_tmp_free(ar, outs);
  arena_tmp_free(ar, dup);
}

static void entry_text(FILE *f, const CgEntry *e, Arena *ar, bool gpu) {
  const char *nm = e->name;
  fprintf(f, "/* %s (graph '%s')\n *   inputs:\n", nm, e->g->name);
  for (int i = 0; i < e->nargs; i++) arg_line(f, e, e->args[i], i, false);
  fprintf(f, " *   outputs:\n");
  for (int i = 0; i < e->nret; i++) arg_line(f, e, e->rets[i], i, true);
  if (e->layout)
    fprintf(f, " *   workspace: %s_workspace_bytes(sizes) bytes, laid out "
               "at each call\n *   (NULL: allocated per call)\n", nm);
  else
    fprintf(f, " *   workspace: %lld bytes%s (%s)\n", (long long)e->ws_bytes,
            e->nsyms ? " for any sizes" : "",
            gpu ? "device memory; NULL is an error when > 0"
                : "NULL: allocated per call");
  if (e->nsyms) {
    fprintf(f, " *   sizes (the last argument, int64_t each; 0 <= size <= "
               "bound, without a\n *   bound <= 2^40, else RLX_ERR_SIZE):");
    for (int i = 0; i < e->nsyms; i++) {
      int64_t most = dim_sym_bound_at(e->syms[i]);
      fprintf(f, " [%d] ?%s", i, dim_sym_name_at(e->syms[i]));
      if (most) fprintf(f, "<=%lld", (long long)most);
    }
    fprintf(f, "\n *   _BYTES_ macros of dynamic values take the sizes "
               "array.\n");
  }
  if (e->train)
    fprintf(f, " *   One training step: the params are read and overwritten "
               "with their\n *   updated values; the optimizer state (%lld "
               "bytes, %s_STATE_BYTES)\n *   is zeroed by the caller before "
               "the first step and updated in place.\n",
            (long long)e->train->state_bytes, nm);
  fprintf(f, " */\n");
  fprintf(f, "#define %s_NUM_INPUTS %d\n", nm, e->nargs);
  fprintf(f, "#define %s_NUM_OUTPUTS %d\n", nm, e->nret);
  if (!e->layout)
    fprintf(f, "#define %s_WORKSPACE_BYTES %lld\n", nm,
            (long long)e->ws_bytes);
  fprintf(f, "#define %s_WORKSPACE_ALIGN 64\n", nm);
  if (e->train)
    fprintf(f, "#define %s_STATE_BYTES %lld\n#define %s_STATE_ALIGN 64\n",
            nm, (long long)e->train->state_bytes, nm);
  if (e->nsyms)
    fprintf(f, "#define %s_NUM_SIZES %d\n", nm, e->nsyms);
  for (int i = 0; i < e->nsyms; i++) {
    const char *sy = dim_sym_name_at(e->syms[i]);
    fprintf(f, "#define %s_SIZE_%s %d\n", nm, sy, i);
    if (dim_sym_bound_at(e->syms[i]))
      fprintf(f, "#define %s_SIZE_MAX_%s %lld\n", nm, sy,
              (long long)dim_sym_bound_at(e->syms[i]));
  }
  arg_macros(f, nm, e, ar);
  fprintf(f, "int %s(const void *const *inputs, void *const *outputs, "
             "void *workspace%s%s);\n", nm, gpu ? ",\n    void *stream" : "",
          e->nsyms ? ",\n    const int64_t *sizes" : "");
  if (e->nsyms)
    fprintf(f, "/* The workspace bytes these sizes need; 0 for invalid "
               "sizes%s. */\nsize_t %s_workspace_bytes(const int64_t "
               "*sizes);\n", e->layout ? " (or no memory to compute it)"
                                       : " (else the constant above)", nm);
  fprintf(f, "const rlx_signature *%s_signature(void);\n\n", nm);
}

bool cg_header_text(FILE *f, const Cg *cg, const CgEntry *e, int ne) {
  const Unit *u = cg->u;
  char guard[256];
  size_t k = 0;
  for (const char *p = u->cname; *p && k + 8 < sizeof guard; p++)
    guard[k++] = (char)toupper((unsigned char)*p);
  guard[k] = 0;
  bool sizes = false;
  for (int i = 0; i < ne; i++) sizes |= e[i].nsyms > 0;
  fprintf(f, "/* Generated by rlxc from %s; do not edit.\n"
             " * Call: int E(inputs, outputs, workspace%s%s) returns 0 or an "
             "RLX_ERR_* code.\n * Link with -lrlxrt -lm -lpthread. */\n",
          u->opt && u->opt->input ? u->opt->input : "(memory)",
          cu_target(u->opt) ? ", stream" : "", sizes ? ", sizes" : "");
  fprintf(f, "#ifndef RLX_GENERATED_%s_H\n#define RLX_GENERATED_%s_H\n\n",
          guard, guard);
  fprintf(f, "#include \"rlxrt.h\"\n\n#ifdef __cplusplus\n"
             "extern \"C\" {\n#endif\n\n");
  fprintf(f, "/* Compiled for %s, CPU %s. Each entry checks at its first "
             "call that the\n * CPU has the extensions of "
             "%s_CPU_FEATURES (rlx_cpu_supports) and\n * returns "
             "RLX_ERR_CPU otherwise. */\n",
          cg->triple, cg->cpu, u->cname);
  fprintf(f, "#define %s_TARGET \"%s\"\n#define %s_TARGET_CPU \"%s\"\n"
             "#define %s_CPU_FEATURES \"%s\"\n\n",
          u->cname, cg->triple, u->cname, cg->cpu, u->cname, cg->cpu_needs);
  bool gpu = cu_target(u->opt);
  if (gpu)
    fprintf(f, "/* --target=cuda (docs/gpu.md): every pointer is a device "
               "pointer and\n * stream a CUstream (NULL: the legacy default "
               "stream); an entry enqueues\n * its kernels and returns without "
               "synchronizing. A NULL workspace is\n * RLX_ERR_INVALID when "
               "E_WORKSPACE_BYTES > 0. */\n\n");
  if (gpu)
    fprintf(f, "/* Errors found by the kernels (an index out of range, a NaN "
               "logit of\n * sample, a singular solve): an entry returns "
               "before its kernels run,\n * so they are recorded on the "
               "device. The function below\n * synchronizes stream and "
               "returns the first RLX_ERR_* code any kernel of\n * this "
               "object recorded, on any stream, since the last call (and "
               "clears\n * it), 0 if none, or RLX_ERR_GPU (rlx_gpu_error()) "
               "when the driver\n * failed. */\nint %s_gpu_status(void "
               "*stream);\n\n", u->cname);
  for (int i = 0; i < ne; i++) entry_text(f, &e[i], u->ctx->arena, gpu);
  fprintf(f, "#ifdef __cplusplus\n}\n#endif\n\n#endif\n");
  return !ferror(f);
}
