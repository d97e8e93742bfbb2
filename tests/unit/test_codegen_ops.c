/* test_codegen_ops.c: numeric tests of the codegen-ops emitters
 * (reductions over every kind of axis set, softmax/log_softmax on inner
 * and outer axes, cumsum and its backward, cross-entropy and its
 * backward with every label dtype, topk on every real dtype (ties, NaN,
 * -0.0), c64 sum/mean/prod reductions, transpose/expand/concat/
 * narrow, gather/scatter_add/gather_backward, scan/while/if/custom_fn,
 * activation backward of every kind) in f32, f64, f16, bf16 and
 * integers, including run-time index errors.
 *
 * Each case of test_codegen_ops_data.h (written by
 * test_codegen_ops_gen.py from NumPy/PyTorch float64 references) is
 * compiled in-process, linked with a generic driver and the runtime by
 * the system C compiler, and run with RLX_NUM_THREADS=1 and 3: the
 * return code must match, outputs must be bit-identical across thread
 * counts and within tolerance (|got - want| <= tol * (1 + |want|)).
 * Skipped when no C compiler is found. */
#include "codegen/codegen.h"
#include "frontend/frontend.h"
#include "passes/passes.h"

#include <CUnit/Basic.h>
#include <limits.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

typedef struct {
  int64_t n;
  int a, b, m;
  double s;
  const double *list;
} OpsIn;

typedef struct {
  int64_t n;
  double tol;
  const double *v;
} OpsOut;

typedef struct {
  const char *name, *src;
  int nin;
  const OpsIn *in;
  int nout;
  const OpsOut *out;
  int rc;
} OpsCase;

#include "test_codegen_ops_data.h"

/* A sanitized build's runtime needs the sanitizer runtimes to link. */
#ifdef __SANITIZE_ADDRESS__
#define SAN_FLAGS "-fsanitize=address,undefined"
#else
#define SAN_FLAGS ""
#endif

/* Paths are built from a short mkdtemp directory and case names. */
#pragma GCC diagnostic ignored "-Wformat-truncation"

static char tmpdir[64];
static char rtlib[PATH_MAX + 32];
static char rtinc[PATH_MAX + 32];

static const char *DRIVER =
    "#include <stdio.h>\n#include <stdlib.h>\n#include \"rlxrt.h\"\n"
    "static void *slurp(const char *p, size_t n) {\n"
    "  void *b = malloc(n ? n : 1); FILE *f = fopen(p, \"rb\");\n"
    "  if (!f || fread(b, 1, n, f) != n) exit(90); fclose(f); return b; }\n"
    "static size_t bytes(const rlx_tensor_desc *d) {\n"
    "  size_t n = rlx_dtype_size(d->dtype);\n"
    "  for (int i = 0; i < d->rank; i++) n *= (size_t)d->dims[i];\n"
    "  return n; }\n"
    "int main(int argc, char **argv) {\n"
    "  const rlx_signature *s = ENTRY_SIG();\n"
    "  const void *in[64]; void *out[64]; char p[4096];\n"
    "  for (int i = 0; i < s->num_inputs; i++) {\n"
    "    snprintf(p, sizeof p, \"%s/in%d.bin\", argv[1], i);\n"
    "    in[i] = slurp(p, bytes(&s->inputs[i])); }\n"
    "  for (int j = 0; j < s->num_outputs; j++)\n"
    "    out[j] = calloc(1, bytes(&s->outputs[j]) + 1);\n"
    "  int rc = ENTRY(in, out, NULL);\n"
    "  snprintf(p, sizeof p, \"%s/rc.txt\", argv[2]);\n"
    "  FILE *f = fopen(p, \"w\"); fprintf(f, \"%d\\n\", rc); fclose(f);\n"
    "  for (int j = 0; rc == 0 && j < s->num_outputs; j++) {\n"
    "    snprintf(p, sizeof p, \"%s/out%d.bin\", argv[2], j);\n"
    "    f = fopen(p, \"wb\"); fwrite(out[j], 1, bytes(&s->outputs[j]), f);\n"
    "    fclose(f); }\n"
    "  for (int i = 0; i < s->num_inputs; i++) free((void *)in[i]);\n"
    "  for (int j = 0; j < s->num_outputs; j++) free(out[j]);\n"
    "  return 0; }\n";

static bool have_cc(void) {
  return system("cc --version >/dev/null 2>&1") == 0;
}

static double in_value(const OpsIn *in, int64_t i) {
  if (in->list) return in->list[i];
  int64_t v = (i * in->a + in->b) % in->m - in->m / 2;
  return (double)v * in->s;
}

static void encode(DType dt, double v, unsigned char *p) {
  switch (dt) {
  case DT_F32: { float x = (float)v; memcpy(p, &x, 4); break; }
  case DT_F64: memcpy(p, &v, 8); break;
  case DT_F16: { _Float16 h = (_Float16)v; memcpy(p, &h, 2); break; }
  case DT_BF16: {
    float x = (float)v;
    uint32_t u;
    memcpy(&u, &x, 4);
    uint16_t b = (uint16_t)(u >> 16);
    memcpy(p, &b, 2);
    break;
  }
  case DT_I8: case DT_U8: case DT_BOOL: *p = (unsigned char)(int64_t)v; break;
  case DT_I32: { int32_t x = (int32_t)(int64_t)v; memcpy(p, &x, 4); break; }
  case DT_I64: { int64_t x = (int64_t)v; memcpy(p, &x, 8); break; }
  default: CU_FAIL("unexpected input dtype");
  }
}

static double decode(DType dt, const unsigned char *p) {
  switch (dt) {
  case DT_F32: { float x; memcpy(&x, p, 4); return x; }
  case DT_F64: { double x; memcpy(&x, p, 8); return x; }
  case DT_F16: { _Float16 h; memcpy(&h, p, 2); return (double)h; }
  case DT_BF16: {
    uint16_t b;
    memcpy(&b, p, 2);
    uint32_t u = (uint32_t)b << 16;
    float x;
    memcpy(&x, &u, 4);
    return x;
  }
  case DT_I8: return (int8_t)*p;
  case DT_U8: case DT_BOOL: return *p;
  case DT_I32: { int32_t x; memcpy(&x, p, 4); return x; }
  case DT_I64: { int64_t x; memcpy(&x, p, 8); return (double)x; }
  default: CU_FAIL("unexpected output dtype"); return NAN;
  }
}

static DType scalar_dt(DType dt) { return dt == DT_C64 ? DT_F32 : dt; }

static bool write_inputs(const OpsCase *c, Graph *g, const char *dir) {
  if (g->nargs != c->nin) return false;
  for (int i = 0; i < c->nin; i++) {
    const Type *t = &g->args[i]->type;
    DType dt = scalar_dt(t->dt); /* c64: interleaved f32 pairs */
    int64_t n = type_numel(t) * (t->dt == DT_C64 ? 2 : 1);
    if (n != c->in[i].n) return false;
    int es = dt_size(dt);
    unsigned char *buf = calloc((size_t)(n * es + 1), 1);
    for (int64_t k = 0; k < n; k++)
      encode(dt, in_value(&c->in[i], k), buf + k * es);
    char p[PATH_MAX];
    snprintf(p, sizeof p, "%s/in%d.bin", dir, i);
    FILE *f = fopen(p, "wb");
    fwrite(buf, 1, (size_t)(n * es), f);
    fclose(f);
    free(buf);
  }
  return true;
}

/* Compile the case, write inputs, link the driver. */
static bool build_case(const OpsCase *c, const char *dir, Type *outs) {
  char obj[PATH_MAX], drv[PATH_MAX], cmd[4 * PATH_MAX + 256];
  snprintf(obj, sizeof obj, "%s/%s.o", dir, c->name);
  ops_init();
  Ctx *ctx = ctx_new("t.rlx", c->src, strlen(c->src));
  Module *m = fe_parse(ctx);
  bool ok = m && ctx->nerrors == 0;
  if (ok) {
    Options o = {.input = "t.rlx", .output = obj,
                 .emit = EMIT_OBJ | EMIT_HEADER, .opt_level = 2};
    Graph *g = m->graphs[m->ngraphs - 1];
    Unit u = {.ctx = ctx, .mod = m, .opt = &o, .cname = g->name,
              .entry = g};
    ok = pass_run_pipeline(&u) && cg_emit(&u) && write_inputs(c, g, dir);
    for (int j = 0; ok && j < u.entry->nret && j < 64; j++)
      outs[j] = u.entry->rets[j]->type;
    ok = ok && u.entry->nret == (c->rc ? u.entry->nret : c->nout);
  }
  ctx_free(ctx);
  if (!ok) return false;
  snprintf(drv, sizeof drv, "%s/drv.c", dir);
  FILE *f = fopen(drv, "w");
  fprintf(f, "#include \"%s.h\"\n#define ENTRY %s\n"
             "#define ENTRY_SIG %s_signature\n%s",
          c->name, c->name, c->name, DRIVER);
  fclose(f);
  snprintf(cmd, sizeof cmd,
           "cc -std=c11 -O1 %s -I%s -I%s -o %s/run %s %s %s -lm -lpthread",
           SAN_FLAGS, dir, rtinc, dir, drv, obj, rtlib);
  return system(cmd) == 0;
}

static int run_threads(const char *dir, int threads, const char *sub) {
  char cmd[3 * PATH_MAX], p[PATH_MAX];
  snprintf(cmd, sizeof cmd, "mkdir -p %s/%s && RLX_NUM_THREADS=%d %s/run "
                            "%s %s/%s", dir, sub, threads, dir, dir, dir, sub);
  if (system(cmd) != 0) return -1;
  snprintf(p, sizeof p, "%s/%s/rc.txt", dir, sub);
  FILE *f = fopen(p, "r");
  int rc = -1;
  if (f && fscanf(f, "%d", &rc) != 1) rc = -1;
  if (f) fclose(f);
  return rc;
}

static unsigned char *read_all(const char *path, long *n) {
  FILE *f = fopen(path, "rb");
  if (!f) return NULL;
  fseek(f, 0, SEEK_END);
  *n = ftell(f);
  rewind(f);
  unsigned char *b = malloc((size_t)*n + 1);
  if (fread(b, 1, (size_t)*n, f) != (size_t)*n) *n = -1;
  fclose(f);
  return b;
}

/* Outputs of runs a and b bit-identical and close to the reference. */
static int check_outputs(const OpsCase *c, const char *dir, const Type *t) {
  int bad = 0;
  for (int j = 0; j < c->nout; j++) {
    char pa[PATH_MAX], pb[PATH_MAX];
    snprintf(pa, sizeof pa, "%s/a/out%d.bin", dir, j);
    snprintf(pb, sizeof pb, "%s/b/out%d.bin", dir, j);
    long na = 0, nb = 0;
    unsigned char *a = read_all(pa, &na), *b = read_all(pb, &nb);
    DType dt = scalar_dt(t[j].dt);
    int es = dt_size(dt);
    if (!a || !b || na != nb || memcmp(a, b, (size_t)na) ||
        na != c->out[j].n * es) {
      fprintf(stderr, "%s: out%d differs across threads or size\n",
              c->name, j);
      bad++;
    } else {
      for (int64_t k = 0; k < c->out[j].n; k++) {
        double got = decode(dt, a + k * es), want = c->out[j].v[k];
        double tol = c->out[j].tol * (1 + fabs(want));
        if (got == want || fabs(got - want) <= tol ||
            (isnan(got) && isnan(want)))
          continue;
        fprintf(stderr, "%s: out%d[%lld] = %.9g, want %.9g\n", c->name, j,
                (long long)k, got, want);
        bad++;
        break;
      }
    }
    free(a);
    free(b);
  }
  return bad;
}

static void run_one(const OpsCase *c) {
  char dir[PATH_MAX];
  snprintf(dir, sizeof dir, "%s/%s", tmpdir, c->name);
  char cmd[PATH_MAX + 16];
  snprintf(cmd, sizeof cmd, "mkdir -p %s", dir);
  CU_ASSERT_EQUAL_FATAL(system(cmd), 0);
  Type outs[64];
  if (!build_case(c, dir, outs)) {
    fprintf(stderr, "%s: does not compile/link\n", c->name);
    CU_FAIL("case does not build");
    return;
  }
  int ra = run_threads(dir, 1, "a"), rb = run_threads(dir, 3, "b");
  if (ra != c->rc || rb != c->rc)
    fprintf(stderr, "%s: rc %d/%d, want %d\n", c->name, ra, rb, c->rc);
  CU_ASSERT_EQUAL(ra, c->rc);
  CU_ASSERT_EQUAL(rb, c->rc);
  if (ra == 0 && rb == 0 && c->rc == 0)
    CU_ASSERT_EQUAL(check_outputs(c, dir, outs), 0);
}

static void test_ops_cases(void) {
  if (!have_cc()) return;
  const char *only = getenv("RLX_OPS_CASE");
  for (size_t i = 0; i < sizeof ops_cases / sizeof *ops_cases; i++)
    if (!only || !strcmp(only, ops_cases[i].name)) run_one(&ops_cases[i]);
}

/* An op outside the compiled set is a diagnostic naming it. */
static void test_unsupported_dtype(void) {
  const char *src = "graph u { input %x: f16[3, 3]\n"
                    "  %t = dense_solve(%x, %x)  return %t }";
  ops_init();
  Ctx *ctx = ctx_new("t.rlx", src, strlen(src));
  Module *m = fe_parse(ctx);
  CU_ASSERT_PTR_NOT_NULL_FATAL(m);
  char obj[PATH_MAX];
  snprintf(obj, sizeof obj, "%s/u.o", tmpdir);
  Options o = {.input = "t.rlx", .output = obj, .emit = EMIT_OBJ,
               .opt_level = 2};
  Graph *g = m->graphs[m->ngraphs - 1];
  Unit u = {.ctx = ctx, .mod = m, .opt = &o, .cname = "u", .entry = g};
  bool ok = ctx->nerrors == 0 && pass_run_pipeline(&u) && cg_emit(&u);
  CU_ASSERT_FALSE(ok);
  bool named = false;
  for (Diag *d = ctx->diags; d; d = d->next)
    if (strstr(d->msg, "dense_solve")) named = true;
  CU_ASSERT_TRUE(named);
  ctx_free(ctx);
}

static int setup(void) {
  snprintf(tmpdir, sizeof tmpdir, "/tmp/rlx_test_cgops_XXXXXX");
  if (!mkdtemp(tmpdir)) return 1;
  char exe[PATH_MAX];
  ssize_t n = readlink("/proc/self/exe", exe, sizeof exe - 1);
  if (n <= 0) return 1;
  exe[n] = 0;
  for (int k = 0; k < 2; k++) { /* BUILD/tests/test_codegen_ops */
    char *slash = strrchr(exe, '/');
    if (slash) *slash = 0;
  }
  snprintf(rtlib, sizeof rtlib, "%s/runtime/librlxrt.a", exe);
  char cwd[PATH_MAX];
  if (!getcwd(cwd, sizeof cwd)) return 1;
  snprintf(rtinc, sizeof rtinc, "%s/../runtime", cwd); /* cwd = tests/ */
  return 0;
}

static int teardown(void) {
  if (getenv("RLX_KEEP_TMP")) return 0;
  char cmd[PATH_MAX + 16];
  snprintf(cmd, sizeof cmd, "rm -rf %s", tmpdir);
  return system(cmd) == 0 ? 0 : 1;
}

int main(void) {
  CU_initialize_registry();
  CU_pSuite s = CU_add_suite("codegen_ops", setup, teardown);
  CU_add_test(s, "numeric cases", test_ops_cases);
  CU_add_test(s, "unsupported dtype diagnosed", test_unsupported_dtype);
  CU_basic_set_mode(CU_BRM_VERBOSE);
  CU_basic_run_tests();
  int fails = (int)CU_get_number_of_failures();
  CU_cleanup_registry();
  return fails ? 1 : 0;
}
