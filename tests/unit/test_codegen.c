/* test_codegen.c: the code generator driven in-process (front end ->
 * Unit -> cg_emit). Checks: an elementwise f32 graph vectorizes at host
 * width (zmm in --emit=asm when the CPU has avx512f, skipped otherwise);
 * -O0..-O3, --target and --mcpu produce output and bad ones are
 * diagnosed; unsupported ops and dtypes are diagnosed naming the op;
 * the header declares the ABI; and compiled objects, linked with the
 * runtime by the system C compiler, compute the right numbers (fused
 * broadcasts, parallel loops bit-identical for 1 and 2 threads, folded
 * transposes, f16/bf16 rounding, saturating casts, NULL workspace).
 * Numeric cases are skipped when no C compiler is found. */
#include "codegen/cg_unit.h"
#include "frontend/frontend.h"
#include "passes/passes.h"

#include <CUnit/Basic.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static char tmpdir[64];
static char rtlib[PATH_MAX + 32]; /* librlxrt.a of this build */
static char rtinc[PATH_MAX + 32];

typedef struct {
  Ctx *c;
  Options o;
  Unit u;
} Comp;

/* Parse src into k; its last graph is the entry. */
static Graph *parse(Comp *k, const char *src) {
  ops_init();
  memset(k, 0, sizeof *k);
  k->c = ctx_new("t.rlx", src, strlen(src));
  Module *m = fe_parse(k->c);
  CU_ASSERT_PTR_NOT_NULL_FATAL(m);
  CU_ASSERT_EQUAL_FATAL(k->c->nerrors, 0);
  Graph *g = m->graphs[m->ngraphs - 1];
  k->u = (Unit){.ctx = k->c, .mod = m, .opt = &k->o, .cname = g->name,
                .entry = g};
  return g;
}

/* Parse src and run cg_emit with the given emit kinds and options. */
static bool compile(Comp *k, const char *src, unsigned emit,
                    const char *out, int opt, const char *target,
                    const char *mcpu) {
  parse(k, src);
  k->o = (Options){.input = "t.rlx", .output = out, .emit = emit,
                   .opt_level = opt, .target = target, .mcpu = mcpu};
  return cg_emit(&k->u);
}

/* compile() of an f32 graph whose f32 nodes are then retyped to dt:
 * a graph the verifier would reject, to test code generation's own
 * dtype checks (the op table's, cg_emit_node). */
static bool compile_as(Comp *k, const char *src, DType dt, const char *out) {
  Graph *g = parse(k, src);
  for (int i = 0; i < g->nnodes; i++)
    if (g->nodes[i]->type.dt == DT_F32) g->nodes[i]->type.dt = dt;
  k->o = (Options){.input = "t.rlx", .output = out, .emit = EMIT_OBJ,
                   .opt_level = 2};
  return cg_emit(&k->u);
}

static bool diag_has(Ctx *c, const char *what) {
  for (Diag *d = c->diags; d; d = d->next)
    if (strstr(d->msg, what)) return true;
  return false;
}

static char *slurp(const char *path) {
  FILE *f = fopen(path, "rb");
  if (!f) return NULL;
  fseek(f, 0, SEEK_END);
  long n = ftell(f);
  rewind(f);
  char *s = malloc((size_t)n + 1);
  s[fread(s, 1, (size_t)n, f)] = 0;
  fclose(f);
  return s;
}

static void path(char *buf, const char *name) {
  snprintf(buf, PATH_MAX, "%s/%s", tmpdir, name);
}

static const char *EW =
    "graph ew { input %x: f32[4096]  input %y: f32[4096]\n"
    "  %a = add(%x, %y)  %b = mul(%a, %x)  %c = sub(%b, 1.5)\n"
    "  return %c }";

/* 512-bit vectors for an AVX-512 CPU, named so that the test runs on
   any host. */
static void test_zmm(void) {
  char p[PATH_MAX];
  path(p, "ew.s");
  Comp k;
  CU_ASSERT_TRUE(compile(&k, EW, EMIT_ASM, p, 2, NULL, "znver4"));
  char *s = slurp(p);
  CU_ASSERT_PTR_NOT_NULL_FATAL(s);
  CU_ASSERT_PTR_NOT_NULL(strstr(s, "zmm"));
  free(s);
  ctx_free(k.c);
}

static void test_levels_targets(void) {
  char p[PATH_MAX];
  path(p, "lv.s");
  for (int o = 0; o <= 3; o++) {
    Comp k;
    CU_ASSERT_TRUE(compile(&k, EW, EMIT_ASM, p, o, NULL, NULL));
    ctx_free(k.c);
  }
  Comp k;
  CU_ASSERT_TRUE(compile(&k, EW, EMIT_ASM, p, 2, "aarch64-linux-gnu", NULL));
  char *s = slurp(p);
  CU_ASSERT_PTR_NOT_NULL(s && strstr(s, "ldr"));
  free(s);
  ctx_free(k.c);
  CU_ASSERT_FALSE(compile(&k, EW, EMIT_ASM, p, 2, "nosuch-target", NULL));
  CU_ASSERT_TRUE(diag_has(k.c, "unknown target"));
  ctx_free(k.c);
  CU_ASSERT_FALSE(compile(&k, EW, EMIT_ASM, p, 2, NULL, "nosuchcpu"));
  CU_ASSERT_TRUE(diag_has(k.c, "unknown CPU 'nosuchcpu'"));
  ctx_free(k.c);
  CU_ASSERT_TRUE(compile(&k, EW, EMIT_ASM, p, 2, NULL, "haswell"));
  s = slurp(p);
  CU_ASSERT_PTR_NOT_NULL(s && strstr(s, "ymm"));
  CU_ASSERT_PTR_NULL(s ? strstr(s, "zmm") : "x");
  free(s);
  ctx_free(k.c);
}

/* Roots whose fused trees are equal up to node identity share one
 * outlined body (codegen/emit/elementwise.c), before any LLVM pass: three
 * identical layers give one add+tanh body, and a different constant
 * (or op) gives another. */
static int count_bodies(const char *src) {
  ops_init();
  Ctx *c = ctx_new("t.rlx", src, strlen(src));
  Module *m = fe_parse(c);
  CU_ASSERT_PTR_NOT_NULL_FATAL(m);
  Graph *g = m->graphs[m->ngraphs - 1];
  Cg *cg = cg_new(c, NULL, "t");
  CU_ASSERT_PTR_NOT_NULL_FATAL(cg);
  CgEntry x = {g, "t", 0, g->args, g->rets, g->nargs, g->nret, NULL, NULL, 0, NULL,
               NULL, NULL, 0};
  CU_ASSERT_TRUE(cg_entry(cg, &x));
  int n = 0;
  for (LLVMValueRef f = LLVMGetFirstFunction(cg->mod); f;
       f = LLVMGetNextFunction(f))
    n += !strncmp(LLVMGetValueName(f), "rlx.body", 8);
  cg_free(cg);
  ctx_free(c);
  return n;
}

static void test_shared_bodies(void) {
  const char *head = "graph g { input %x: f32[8, 16]  param %w: f32[16, 16]"
                     "  param %b: f32[16]\n";
  char src[1024];
  snprintf(src, sizeof src, "%s"
           "  %%h1 = tanh(add(matmul(%%x, %%w), %%b))\n"
           "  %%h2 = tanh(add(matmul(%%h1, %%w), %%b))\n"
           "  %%h3 = tanh(add(matmul(%%h2, %%w), %%b))\n"
           "  %%y = matmul(%%h3, %%w)\n"
           "  return %%y }", head);
  CU_ASSERT_EQUAL(count_bodies(src), 1);
  snprintf(src, sizeof src, "%s"
           "  %%h1 = tanh(add(matmul(%%x, %%w), %%b))\n"
           "  %%h2 = tanh(mul(add(matmul(%%h1, %%w), %%b), 2.0))\n"
           "  %%h3 = tanh(mul(add(matmul(%%h2, %%w), %%b), 3.0))\n"
           "  %%h4 = exp(add(matmul(%%h3, %%w), %%b))\n"
           "  %%y = matmul(%%h4, %%w)\n"
           "  return %%y }", head);
  CU_ASSERT_EQUAL(count_bodies(src), 4);
}

static void test_unsupported(void) {
  char p[PATH_MAX];
  path(p, "un.o");
  Comp k;
  CU_ASSERT_FALSE(compile_as(&k,
                             "graph g { input %a: f32[3, 3]\n"
                             "  %m = dense_solve(%a, %a)  return %m }",
                             DT_F16, p));
  CU_ASSERT_TRUE(diag_has(k.c, "codegen: op 'dense_solve' is not "
                                "supported: dtype f16 (only f32, f64)"));
  ctx_free(k.c);
  CU_ASSERT_FALSE(compile_as(&k,
                             "graph g { input %a: f32[4]\n"
                             "  %m = div(%a, %a)  return %m }",
                             DT_I32, p));
  CU_ASSERT_TRUE(diag_has(k.c, "op 'div' is not supported: dtype i32"));
  ctx_free(k.c);
  CU_ASSERT_FALSE(compile(&k, "graph expf { input %a: f32[4]\n"
                              "  %m = neg(%a)  return %m }",
                          EMIT_OBJ, p, 2, NULL, NULL));
  CU_ASSERT_TRUE(diag_has(k.c, "entry point name 'expf' is reserved"));
  ctx_free(k.c);
}

static void test_header(void) {
  char p[PATH_MAX];
  path(p, "hd.o");
  Comp k;
  CU_ASSERT_TRUE(compile(&k,
                         "graph net { input %x: f32[3, 4]  param %w: "
                         "f64[2]\n  %y = neg(%x)  return %y, %w }",
                         EMIT_HEADER, p, 2, NULL, NULL));
  path(p, "hd.h");
  char *s = slurp(p);
  CU_ASSERT_PTR_NOT_NULL_FATAL(s);
  CU_ASSERT_PTR_NOT_NULL(strstr(s, "#define net_NUM_INPUTS 2"));
  CU_ASSERT_PTR_NOT_NULL(strstr(s, "#define net_NUM_OUTPUTS 2"));
  CU_ASSERT_PTR_NOT_NULL(strstr(s, "#define net_WORKSPACE_BYTES 0"));
  CU_ASSERT_PTR_NOT_NULL(strstr(s, "int net(const void *const *inputs, "
                                   "void *const *outputs, void *workspace);"));
  CU_ASSERT_PTR_NOT_NULL(strstr(s, "const rlx_signature *net_signature"));
  CU_ASSERT_PTR_NOT_NULL(strstr(s, "[1] w: f64[2]  (param)"));
  free(s);
  ctx_free(k.c);
}

/* ---- numeric cases: compile, link a driver, run ---- */

/* A sanitized build's runtime needs the sanitizer runtimes too. */
#ifdef __SANITIZE_ADDRESS__
#define SAN_FLAGS "-fsanitize=address,undefined"
#else
#define SAN_FLAGS ""
#endif

static bool have_cc(void) {
  return system("cc --version >/dev/null 2>&1") == 0;
}

/* Build NAME.o from src and link it with the driver text; run with env.
 * Returns the driver's exit status. */
static int run_case(const char *name, const char *src, const char *driver,
                    const char *env) {
  char obj[PATH_MAX], drv[PATH_MAX], exe[PATH_MAX], cmd[6 * PATH_MAX];
  snprintf(obj, sizeof obj, "%s/%s.o", tmpdir, name);
  snprintf(drv, sizeof drv, "%s/%s_main.c", tmpdir, name);
  snprintf(exe, sizeof exe, "%s/%s", tmpdir, name);
  Comp k;
  bool ok = compile(&k, src, EMIT_OBJ | EMIT_HEADER, obj, 2, NULL, NULL);
  ctx_free(k.c);
  CU_ASSERT_TRUE_FATAL(ok);
  FILE *f = fopen(drv, "w");
  fprintf(f, "#include <math.h>\n#include <stdio.h>\n#include <string.h>\n"
             "#include <stdint.h>\n#include <stdlib.h>\n"
             "#include \"%s/%s.h\"\n%s", tmpdir, name, driver);
  fclose(f);
  snprintf(cmd, sizeof cmd, "cc -O1 %s -I%s -o %s %s %s %s -lm -lpthread",
           SAN_FLAGS, rtinc, exe, drv, obj, rtlib);
  CU_ASSERT_EQUAL_FATAL(system(cmd), 0);
  snprintf(cmd, sizeof cmd, "%s %s", env ? env : "", exe);
  int st = system(cmd);
  return WIFEXITED(st) ? WEXITSTATUS(st) : 99;
}

static void test_run_broadcast_parallel(void) {
  if (!have_cc()) return;
  const char *src =
      "graph bp { input %x: f32[512, 1024]  input %b: f32[1024]\n"
      "  input %c: f32[512, 1]\n"
      "  %y = mul(add(%x, %b), %c)  %z = max(%y, 0.25)\n"
      "  return %z }";
  const char *drv =
      "int main(void) {\n"
      "  float *x = malloc(4 << 19), *b = malloc(4096), *c = malloc(2048);\n"
      "  float *z = malloc(4 << 19);\n"
      "  for (int i = 0; i < 512 * 1024; i++) x[i] = (i % 977) * 0.01f - 4;\n"
      "  for (int i = 0; i < 1024; i++) b[i] = i * 0.001f;\n"
      "  for (int i = 0; i < 512; i++) c[i] = 1 - i * 0.003f;\n"
      "  const void *in[3] = {x, b, c}; void *out[1] = {z};\n"
      "  if (bp(in, out, NULL)) return 2;\n"
      "  for (int i = 0; i < 512; i++) for (int j = 0; j < 1024; j++) {\n"
      "    float y = (x[i * 1024 + j] + b[j]) * c[i];\n"
      "    if (y < 0.25f) y = 0.25f;\n"
      "    if (y != z[i * 1024 + j]) return 3; }\n"
      "  FILE *f = fopen(getenv(\"OUTF\"), \"wb\");\n"
      "  fwrite(z, 4, 512 * 1024, f); fclose(f);\n"
      "  free(x); free(b); free(c); free(z); return 0; }\n";
  char e1[PATH_MAX + 64], e2[PATH_MAX + 64];
  snprintf(e1, sizeof e1, "RLX_NUM_THREADS=1 OUTF=%s/bp1", tmpdir);
  snprintf(e2, sizeof e2, "RLX_NUM_THREADS=2 OUTF=%s/bp2", tmpdir);
  CU_ASSERT_EQUAL(run_case("bp", src, drv, e1), 0);
  CU_ASSERT_EQUAL(run_case("bp", src, drv, e2), 0);
  char p1[PATH_MAX], p2[PATH_MAX], cmd[3 * PATH_MAX];
  path(p1, "bp1");
  path(p2, "bp2");
  snprintf(cmd, sizeof cmd, "cmp -s %s %s", p1, p2);
  CU_ASSERT_EQUAL(system(cmd), 0);
}

/* Prologue fusion: each reduction-family op reads an elementwise
 * producer that is fused into its loads (mul(y, x), ...) and the same
 * value computed through a buffer (mul(x, y) is also returned, so it is
 * not fused). Results must be bit-identical, for 1 and 2 threads. */
static void test_run_prologue(void) {
  if (!have_cc()) return;
  const char *src =
      "graph pf { input %x: f32[512, 1024]  input %y: f32[512, 1024]\n"
      "  input %b: f32[1024]  input %l: i32[512]  input %d: f64[300, 7]\n"
      "  %p = mul(%x, %y)  %s1 = reduce_sum(%p, axes=[1])\n"
      "  %s2 = reduce_sum(mul(%y, %x), axes=[1])\n"
      "  %c = sub(%x, %b)  %k1 = reduce_max(%c, axes=[0])\n"
      "  %k2 = reduce_max(add(neg(%b), %x), axes=[0])\n"
      "  %a = add(%x, %b)  %sm1 = log_softmax(%a)\n"
      "  %sm2 = log_softmax(add(%b, %x))\n"
      "  %z = mul(%y, %b)  %e1 = softmax_cross_entropy(%z, %l)\n"
      "  %e2 = softmax_cross_entropy(mul(%b, %y), %l)\n"
      "  %q = exp(%d)  %m1 = reduce_mean(%q)\n"
      "  %w = add(mul(%x, 2.0), %b)  %t1 = reduce_sum(%w, axes=[1])\n"
      "  %m2 = reduce_mean(exp(mul(%d, 1.0)))\n"
      "  return %s1, %s2, %k1, %k2, %sm1, %sm2, %e1, %e2, %m1, %m2,\n"
      "         %p, %c, %a, %z, %q, %t1 }";
  const char *drv =
      "#define N (512 * 1024)\n"
      "int main(void) {\n"
      "  float *x = malloc(4 * N), *y = malloc(4 * N), b[1024];\n"
      "  int32_t l[512]; double d[2100];\n"
      "  for (int i = 0; i < N; i++) x[i] = (i % 977) * 0.01f - 4;\n"
      "  for (int i = 0; i < N; i++) y[i] = (i % 613) * 0.003f - 0.9f;\n"
      "  for (int i = 0; i < 1024; i++) b[i] = i * 0.001f;\n"
      "  for (int i = 0; i < 512; i++) l[i] = (i * 37) % 1024;\n"
      "  for (int i = 0; i < 2100; i++) d[i] = sin(i) * 3;\n"
      "  static float s1[512], s2[512], k1[1024], k2[1024], e1[512],\n"
      "      e2[512], t1[512];\n"
      "  float *sm1 = malloc(4 * N), *sm2 = malloc(4 * N);\n"
      "  float *p = malloc(4 * N), *c = malloc(4 * N), *a = malloc(4 * N),\n"
      "      *z = malloc(4 * N);\n"
      "  static double m1, m2, q[2100];\n"
      "  const void *in[5] = {x, y, b, l, d};\n"
      "  void *out[16] = {s1, s2, k1, k2, sm1, sm2, e1, e2, &m1, &m2,\n"
      "                   p, c, a, z, q, t1};\n"
      "  if (pf(in, out, NULL)) return 2;\n"
      "  if (memcmp(s1, s2, sizeof s1) || memcmp(k1, k2, sizeof k1))\n"
      "    return 3;\n"
      "  if (memcmp(sm1, sm2, 4 * N) || memcmp(e1, e2, sizeof e1)) return 4;\n"
      "  if (m1 != m2) return 5;\n"
      "  double r = 0;\n"
      "  for (int j = 0; j < 1024; j++) r += (double)x[j] * y[j];\n"
      "  if (fabs(r - s1[0]) > 1e-3 * (1 + fabs(r))) return 6;\n"
      "  r = 0;\n"
      "  for (int j = 0; j < 1024; j++) r += x[1024 + j] * 2.0 + b[j];\n"
      "  if (fabs(r - t1[1]) > 1e-3 * (1 + fabs(r))) return 7;\n"
      "  FILE *f = fopen(getenv(\"OUTF\"), \"wb\");\n"
      "  fwrite(s2, 4, 512, f); fwrite(k2, 4, 1024, f); fwrite(sm2, 4, N, f);\n"
      "  fwrite(e2, 4, 512, f); fwrite(&m2, 8, 1, f); fclose(f);\n"
      "  free(x); free(y); free(sm1); free(sm2); free(p); free(c); free(a);\n"
      "  free(z); return 0; }\n";
  char e1[PATH_MAX + 64], e2[PATH_MAX + 64];
  snprintf(e1, sizeof e1, "RLX_NUM_THREADS=1 OUTF=%s/pf1", tmpdir);
  snprintf(e2, sizeof e2, "RLX_NUM_THREADS=2 OUTF=%s/pf2", tmpdir);
  CU_ASSERT_EQUAL(run_case("pf", src, drv, e1), 0);
  CU_ASSERT_EQUAL(run_case("pf", src, drv, e2), 0);
  char p1[PATH_MAX], p2[PATH_MAX], cmd[3 * PATH_MAX];
  path(p1, "pf1");
  path(p2, "pf2");
  snprintf(cmd, sizeof cmd, "cmp -s %s %s", p1, p2);
  CU_ASSERT_EQUAL(system(cmd), 0);
}

static void test_run_matmul_folded(void) {
  if (!have_cc()) return;
  const char *src =
      "graph mt { input %a: f64[2, 3, 5, 4]  input %b: f64[3, 6, 4]\n"
      "  %t = transpose(%b, perm=[0, 2, 1])\n"
      "  %m = matmul(%a, %t)  %r = add(%m, 1.0)\n"
      "  return %r, %m }";
  const char *drv =
      "int main(void) {\n"
      "  double a[120], b[72], r[180], m[180];\n"
      "  for (int i = 0; i < 120; i++) a[i] = sin(i);\n"
      "  for (int i = 0; i < 72; i++) b[i] = cos(i * 0.7);\n"
      "  const void *in[2] = {a, b}; void *out[2] = {r, m};\n"
      "  static char ws[mt_WORKSPACE_BYTES + 64]\n"
      "      __attribute__((aligned(64)));\n"
      "  if (mt(in, out, ws)) return 2;\n"
      "  for (int p = 0; p < 2; p++) for (int q = 0; q < 3; q++)\n"
      "  for (int i = 0; i < 5; i++) for (int j = 0; j < 6; j++) {\n"
      "    double s = 0;\n"
      "    for (int k = 0; k < 4; k++)\n"
      "      s += a[((p * 3 + q) * 5 + i) * 4 + k] * b[(q * 6 + j) * 4 + k];\n"
      "    int o = ((p * 3 + q) * 5 + i) * 6 + j;\n"
      "    if (fabs(s - m[o]) > 1e-12) return 3;\n"
      "    if (fabs(s + 1 - r[o]) > 1e-12) return 4;\n"
      "  }\n  return 0; }\n";
  CU_ASSERT_EQUAL(run_case("mt", src, drv, NULL), 0);
}

static void test_run_dtypes(void) {
  if (!have_cc()) return;
  const char *src =
      "graph dt { input %h: f16[4]  input %f: f32[6]\n"
      "  %s = add(%h, %h)  %i = cast(%f, to=i8)  %u = cast(%f, to=u8)\n"
      "  %bf = cast(%f, to=bf16)  %q = lt(%f, 0.0)\n"
      "  %w = where(%q, %i, cast(%u, to=i8))\n"
      "  return %s, %i, %u, %bf, %w }";
  const char *drv =
      "int main(void) {\n"
      "  /* f16: 1, 65504, 1 + 2^-10, -2 */\n"
      "  uint16_t h[4] = {0x3c00, 0x7bff, 0x3c01, 0xc000};\n"
      "  float f[6] = {1.5f, -1.5f, 300.f, -300.f, NAN, 1.00390625f};\n"
      "  uint16_t s[4], bf[6]; int8_t i[6], w[6]; uint8_t u[6];\n"
      "  const void *in[2] = {h, f}; void *out[5] = {s, i, u, bf, w};\n"
      "  if (dt(in, out, NULL)) return 2;\n"
      "  uint16_t es[4] = {0x4000, 0x7c00, 0x4001, 0xc400};\n"
      "  int8_t ei[6] = {1, -1, 127, -128, 0, 1};\n"
      "  uint8_t eu[6] = {1, 0, 255, 0, 0, 1};\n"
      "  uint16_t eb[6] = {0x3fc0, 0xbfc0, 0x4396, 0xc396, 0x7fc0, 0x3f80};\n"
      "  int8_t ew[6] = {1, -1, -1, -128, 0, 1};\n"
      "  if (memcmp(s, es, 8)) return 3;\n"
      "  if (memcmp(i, ei, 6)) return 4;\n"
      "  if (memcmp(u, eu, 6)) return 5;\n"
      "  if (memcmp(bf, eb, 12)) return 6;\n"
      "  if (memcmp(w, ew, 6)) return 7;\n"
      "  return 0; }\n";
  CU_ASSERT_EQUAL(run_case("dt", src, drv, NULL), 0);
}

static int setup(void) {
  snprintf(tmpdir, sizeof tmpdir, "/tmp/rlx_test_codegen_XXXXXX");
  if (!mkdtemp(tmpdir)) return 1;
  char exe[PATH_MAX];
  ssize_t n = readlink("/proc/self/exe", exe, sizeof exe - 1);
  if (n <= 0) return 1;
  exe[n] = 0;
  char *slash = strrchr(exe, '/'); /* BUILD/tests/test_codegen */
  if (slash) *slash = 0;
  slash = strrchr(exe, '/');
  if (slash) *slash = 0;
  snprintf(rtlib, sizeof rtlib, "%s/runtime/librlxrt.a", exe);
  char cwd[PATH_MAX];
  if (!getcwd(cwd, sizeof cwd)) return 1;
  snprintf(rtinc, sizeof rtinc, "%s/../runtime", cwd); /* cwd = tests/ */
  return 0;
}

static int teardown(void) {
  char cmd[PATH_MAX + 16];
  snprintf(cmd, sizeof cmd, "rm -rf %s", tmpdir);
  return getenv("RLX_KEEP_TMP") || system(cmd) == 0 ? 0 : 1;
}

int main(void) {
  CU_initialize_registry();
  CU_pSuite s = CU_add_suite("codegen", setup, teardown);
  CU_add_test(s, "zmm in asm", test_zmm);
  CU_add_test(s, "levels and targets", test_levels_targets);
  CU_add_test(s, "shared bodies", test_shared_bodies);
  CU_add_test(s, "unsupported", test_unsupported);
  CU_add_test(s, "header", test_header);
  CU_add_test(s, "run broadcast parallel", test_run_broadcast_parallel);
  CU_add_test(s, "run prologue", test_run_prologue);
  CU_add_test(s, "run matmul folded", test_run_matmul_folded);
  CU_add_test(s, "run dtypes", test_run_dtypes);
  CU_basic_set_mode(CU_BRM_VERBOSE);
  CU_basic_run_tests();
  unsigned f = CU_get_number_of_failures();
  CU_cleanup_registry();
  return f ? 1 : 0;
}
