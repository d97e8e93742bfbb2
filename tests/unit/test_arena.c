/* test_arena.c: the compilation arena and its out-of-memory path
 * (ir/arena.c, ctx_* in ir/diag.c), and the source line shown under a
 * diagnostic.
 *
 * Arena: zeroed, aligned allocations; temporaries released early in any
 * order; every allocation call counted. Out of memory: the injected
 * failure of the nth allocation runs the Ctx's cleanups newest first
 * and longjmps to oom_jump; ctx_undefer'ed cleanups do not run. In
 * process, for every n: parse, verify, print and the --grad pipeline of
 * a small module (custom_fn, cast, reduction) and of one call nested 220
 * deep (the parser's stack grows past YYINITDEPTH) with allocation n
 * failing end at the jump, and ctx_free then releases everything (the
 * ASan tree checks for leaks).
 * Diagnostics: the line under an error ends at LF, CR LF or a lone CR,
 * as in the lexer.
 */
#include "frontend/frontend.h"
#include "passes/passes.h"

#include <CUnit/Basic.h>
#include <setjmp.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

static void test_alloc(void) {
  Arena *a = arena_new();
  CU_ASSERT_PTR_NOT_NULL_FATAL(a);
  unsigned char *p = arena_alloc(a, 3);
  unsigned char *q = arena_alloc(a, 100000); /* its own block */
  CU_ASSERT_EQUAL((uintptr_t)p % 16, 0);
  CU_ASSERT_EQUAL((uintptr_t)q % 16, 0);
  CU_ASSERT_EQUAL(p[0] | p[2] | q[0] | q[99999], 0);
  char *t1 = arena_tmp_alloc(a, 10), *t2 = arena_tmp_alloc(a, 20);
  CU_ASSERT_EQUAL(t1[9] | t2[19], 0);
  strcpy(t2, "kept bytes");
  t2 = arena_tmp_realloc(a, t2, 1 << 20);
  CU_ASSERT_STRING_EQUAL(t2, "kept bytes");
  arena_tmp_free(a, t1); /* any order; t2 is left to arena_free */
  arena_tmp_free(a, NULL);
  CU_ASSERT_EQUAL(arena_count(a), 5);
  arena_free(a);
}

/* ---- out of memory ---- */

static int order[8], norder;

static void note(void *arg, bool fatal) {
  order[norder++] = (int)(intptr_t)arg * (fatal ? -1 : 1);
}

static void test_oom_jump(void) {
  Ctx *c = ctx_new("t.rlx", "", 0);
  jmp_buf jb;
  norder = 0;
  ctx_defer(c, note, (void *)1);
  ctx_defer(c, note, (void *)2);
  ctx_defer(c, note, (void *)3);
  ctx_undefer(c, note, (void *)2);
  if (setjmp(jb) == 0) {
    c->oom_jump = &jb;
    arena_fail_at(c->arena, 3);
    arena_alloc(c->arena, 8);
    arena_tmp_alloc(c->arena, 8);
    arena_alloc(c->arena, 8); /* the third: jumps */
    CU_FAIL("the injected failure did not jump");
  }
  CU_ASSERT_PTR_NULL(c->oom_jump);
  CU_ASSERT_EQUAL(norder, 2);
  CU_ASSERT_EQUAL(order[0], 3); /* newest first, 2 was undeferred */
  CU_ASSERT_EQUAL(order[1], 1);
  ctx_defer(c, note, (void *)4);
  ctx_unwind(c, true);
  CU_ASSERT_EQUAL(norder, 3);
  CU_ASSERT_EQUAL(order[2], -4);
  ctx_free(c); /* nothing left to run */
  CU_ASSERT_EQUAL(norder, 3);
}

static const char small[] =
    "graph f { input %x: f32[3] %y = mul(%x, %x) return %y }\n"
    "graph g {\n"
    "  param %w: f32[3]\n"
    "  %c = cast(%w, to=f64)\n"
    "  %s = reduce_sum(custom_fn(%w, fwd=@f))\n"
    "  %t = tanh(%s)\n"
    "  return %t, %c\n"
    "}\n";

/* Front end, verifier, printer and the --grad pipeline. */
static bool compile(Ctx *c, FILE *out) {
  Module *m = fe_parse(c);
  if (!m || c->nerrors || !ir_verify(c, m)) return false;
  ir_print_module(out, m);
  Options o = {.input = "t.rlx", .grad = true, .check = true,
               .opt_level = 2};
  Unit u = {.ctx = c, .mod = m, .opt = &o, .cname = "g",
            .entry = m->graphs[m->ngraphs - 1]};
  return pass_run_pipeline(&u) && c->nerrors == 0;
}

/* Compile src with allocation n failing (0: none): true when it
 * jumped. */
static bool jumps_at(const char *src, long n, FILE *out) {
  Ctx *c = ctx_new("t.rlx", src, strlen(src));
  jmp_buf jb;
  volatile bool jumped = true;
  if (setjmp(jb) == 0) {
    c->oom_jump = &jb;
    arena_fail_at(c->arena, n);
    CU_ASSERT_TRUE(compile(c, out));
    jumped = false;
  }
  ctx_free(c);
  return jumped;
}

/* Allocation n failing for every n until the compilation succeeds;
 * returns that n. */
static long walk(const char *src, FILE *out) {
  CU_ASSERT_FALSE(jumps_at(src, 0, out));
  long n = 1;
  while (n < 100000 && jumps_at(src, n, out)) n++;
  return n;
}

static void test_every_allocation(void) {
  FILE *out = fopen("/dev/null", "w");
  CU_ASSERT_PTR_NOT_NULL_FATAL(out);
  long n = walk(small, out);
  CU_ASSERT(n > 100 && n < 100000);
  enum { DEPTH = 220 };
  char deep[64 + 5 * DEPTH];
  int k = snprintf(deep, sizeof deep, "graph g {\n  param %%x: f32[2]\n"
                   "  %%y = ");
  for (int i = 0; i < DEPTH; i++) k += sprintf(deep + k, "neg(");
  k += sprintf(deep + k, "%%x");
  for (int i = 0; i < DEPTH; i++) deep[k++] = ')';
  snprintf(deep + k, sizeof deep - (size_t)k, "\n  return %%y\n}\n");
  n = walk(deep, out);
  CU_ASSERT(n > DEPTH && n < 100000);
  fclose(out);
}

/* ---- the source line under a diagnostic ---- */

/* What diag_error prints for an error at line:col of text. */
static char *diag_text(const char *text, int line, int col) {
  static char buf[512];
  Ctx *c = ctx_new("t.rlx", text, strlen(text));
  FILE *f = tmpfile();
  c->diag_out = f;
  diag_error(c, (Loc){line, col}, "bad");
  rewind(f);
  size_t n = fread(buf, 1, sizeof buf - 1, f);
  buf[n] = 0;
  fclose(f);
  ctx_free(c);
  return buf;
}

static void test_caret_lines(void) {
  const char *want = "t.rlx:2:3: error: bad\nbcd\n  ^\n";
  CU_ASSERT_STRING_EQUAL(diag_text("a\nbcd\ne\n", 2, 3), want);
  CU_ASSERT_STRING_EQUAL(diag_text("a\r\nbcd\r\ne\r\n", 2, 3), want);
  CU_ASSERT_STRING_EQUAL(diag_text("a\rbcd\re\r", 2, 3), want);
  CU_ASSERT_STRING_EQUAL(diag_text("a\r\rbcd", 3, 3),
                         "t.rlx:3:3: error: bad\nbcd\n  ^\n");
  CU_ASSERT_STRING_EQUAL(diag_text("a\r\n\nbcd", 3, 3),
                         "t.rlx:3:3: error: bad\nbcd\n  ^\n");
  CU_ASSERT_STRING_EQUAL(diag_text("\xef\xbb\xbf" "ab", 1, 2),
                         "t.rlx:1:2: error: bad\nab\n ^\n");
}

int main(void) {
  if (CU_initialize_registry() != CUE_SUCCESS) return 1;
  CU_pSuite s = CU_add_suite("arena", NULL, NULL);
  CU_add_test(s, "alloc", test_alloc);
  CU_add_test(s, "oom_jump", test_oom_jump);
  CU_add_test(s, "every_allocation", test_every_allocation);
  CU_add_test(s, "caret_lines", test_caret_lines);
  CU_basic_set_mode(CU_BRM_VERBOSE);
  CU_basic_run_tests();
  unsigned fails = CU_get_number_of_failures();
  CU_cleanup_registry();
  return fails ? 1 : 0;
}
