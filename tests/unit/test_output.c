/* test_output.c: CUnit tests of the atomic output files
 * (codegen/output.c) and the reserved-name table (codegen/reserved.c).
 *
 * Outputs: staged files appear only at out_finish(ok); an abort or a
 * failing rename (the target became a directory after staging) leaves no
 * new file and no temporary, and the diagnostic names the output path
 * with the OS reason. out_path follows abi.md's naming rules.
 * Reserved names: the table is sorted (bsearch needs it), the prefix
 * rules and the derived symbols (NAME_grad, NAME_signature, ...).
 */
#include <CUnit/Basic.h>
#include <dirent.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "codegen/output.h"
#include "codegen/reserved.h"

static char dir[64];

static void path(char *buf, size_t cap, const char *name) {
  snprintf(buf, cap, "%s/%s", dir, name);
}

/* Entries of dir except . and .., sorted names joined with ' '. */
static void listing(char *out, size_t cap) {
  char *names[32];
  int n = 0;
  DIR *d = opendir(dir);
  for (struct dirent *e; d && (e = readdir(d)) && n < 32;)
    if (strcmp(e->d_name, ".") && strcmp(e->d_name, ".."))
      names[n++] = strdup(e->d_name);
  if (d) closedir(d);
  for (int i = 0; i < n; i++)
    for (int j = i + 1; j < n; j++)
      if (strcmp(names[j], names[i]) < 0) {
        char *t = names[i];
        names[i] = names[j];
        names[j] = t;
      }
  out[0] = 0;
  for (int i = 0; i < n; i++) {
    snprintf(out + strlen(out), cap - strlen(out), "%s%s", i ? " " : "",
             names[i]);
    free(names[i]);
  }
}

static char *slurp(const char *p) {
  static char buf[256];
  FILE *f = fopen(p, "rb");
  if (!f) return NULL;
  size_t n = fread(buf, 1, sizeof buf - 1, f);
  fclose(f);
  buf[n] = 0;
  return buf;
}

#define CHECK_LISTING(want)                                             \
  do {                                                                  \
    char l_[512];                                                       \
    listing(l_, sizeof l_);                                             \
    CU_ASSERT_STRING_EQUAL(l_, want);                                   \
  } while (0)

static void test_commit(void) {
  char a[128], b[128];
  path(a, sizeof a, "a.h");
  path(b, sizeof b, "b.o");
  Ctx *c = ctx_new("t.rlx", "", 0);
  OutSet s;
  out_init(&s, c);
  CU_ASSERT_TRUE(out_add(&s, a, "head", 4));
  CU_ASSERT_TRUE(out_add(&s, b, "obj", 3));
  CU_ASSERT_PTR_NULL(slurp(a)); /* staged, not yet in place */
  CU_ASSERT_TRUE(out_finish(&s, true));
  CU_ASSERT_STRING_EQUAL(slurp(a), "head");
  CU_ASSERT_STRING_EQUAL(slurp(b), "obj");
  CHECK_LISTING("a.h b.o");
  /* replacing existing files */
  out_init(&s, c);
  CU_ASSERT_TRUE(out_add(&s, a, "new", 3));
  CU_ASSERT_TRUE(out_finish(&s, true));
  CU_ASSERT_STRING_EQUAL(slurp(a), "new");
  /* an abort leaves the old contents and no temporary */
  out_init(&s, c);
  CU_ASSERT_TRUE(out_add(&s, a, "lost", 4));
  CU_ASSERT_FALSE(out_finish(&s, false));
  CU_ASSERT_STRING_EQUAL(slurp(a), "new");
  CHECK_LISTING("a.h b.o");
  CU_ASSERT_EQUAL(c->nerrors, 0);
  unlink(a);
  unlink(b);
  ctx_free(c);
}

static void test_rename_fails(void) {
  char a[128], b[128];
  path(a, sizeof a, "a.h");
  path(b, sizeof b, "b.o");
  Ctx *c = ctx_new("t.rlx", "", 0);
  OutSet s;
  out_init(&s, c);
  CU_ASSERT_TRUE(out_add(&s, a, "head", 4));
  CU_ASSERT_TRUE(out_add(&s, b, "obj", 3));
  mkdir(b, 0755); /* the object's rename will fail */
  CU_ASSERT_FALSE(out_finish(&s, true));
  CHECK_LISTING("b.o"); /* a.h was renamed, then removed again */
  CU_ASSERT_EQUAL(c->nerrors, 1);
  CU_ASSERT_PTR_NOT_NULL(c->diags && strstr(c->diags->msg,
                                            "Is a directory"));
  CU_ASSERT_STRING_EQUAL(c->file, "t.rlx");
  /* a directory target is refused before anything is written */
  out_init(&s, c);
  CU_ASSERT_FALSE(out_add(&s, b, "obj", 3));
  CU_ASSERT_FALSE(out_finish(&s, false));
  CHECK_LISTING("b.o");
  rmdir(b);
  ctx_free(c);
}

static void test_mem(void) {
  char a[128];
  path(a, sizeof a, "m.h");
  Ctx *c = ctx_new("t.rlx", "", 0);
  OutSet s;
  OutMem m;
  out_init(&s, c);
  CU_ASSERT_TRUE_FATAL(out_mem_open(&s, &m));
  fprintf(m.f, "#define X %d\n", 42);
  CU_ASSERT_TRUE(out_mem_add(&s, &m, a, true));
  CU_ASSERT_TRUE_FATAL(out_mem_open(&s, &m));
  fputs("dropped", m.f);
  CU_ASSERT_FALSE(out_mem_add(&s, &m, "unused", false));
  CU_ASSERT_TRUE(out_finish(&s, true));
  CU_ASSERT_STRING_EQUAL(slurp(a), "#define X 42\n");
  CHECK_LISTING("m.h");
  unlink(a);
  ctx_free(c);
}

static void check_path(const char *output, unsigned emit, unsigned kind,
                       const char *want) {
  Options o = {.output = output, .emit = emit};
  char *p = out_path(&o, "net", kind);
  CU_ASSERT_STRING_EQUAL(p, want);
  free(p);
}

static void test_paths(void) {
  unsigned oh = EMIT_OBJ | EMIT_HEADER;
  check_path(NULL, oh, EMIT_OBJ, "net.o");
  check_path(NULL, oh, EMIT_HEADER, "net.h");
  check_path("b/x.o", oh, EMIT_OBJ, "b/x.o");
  check_path("b/x.o", oh, EMIT_HEADER, "b/x.h");
  check_path("b.d/x", oh, EMIT_HEADER, "b.d/x.h");
  check_path("x.h", oh, EMIT_HEADER, "x.h");
  check_path("k.s", EMIT_ASM, EMIT_ASM, "k.s");
  check_path("k.txt", EMIT_LLVM | EMIT_HEADER, EMIT_LLVM, "k.txt");
  check_path("k", EMIT_ASM | EMIT_LLVM, EMIT_ASM, "k.s");
  check_path("k", EMIT_ASM | EMIT_LLVM, EMIT_LLVM, "k.ll");
}

static void test_reserved(void) {
  const char *yes[] = {"getenv", "sysconf", "pthread_create", "printf",
                       "aligned_alloc", "expf", "tanhl", "main", "_x",
                       "__x", "rlx_alloc", "pthread_anything", "mmap",
                       "sem_wait", "atomic_load", "thrd_create", "CMPLX"};
  const char *no[] = {"model", "mlp", "train", "net", "rlx", "pthread",
                      "expff", "getenv2", "Printf", "a", "zzz"};
  for (size_t i = 0; i < sizeof yes / sizeof yes[0]; i++)
    CU_ASSERT_TRUE(cg_reserved(yes[i]));
  for (size_t i = 0; i < sizeof no / sizeof no[0]; i++)
    CU_ASSERT_FALSE(cg_reserved(no[i]));
  char sym[64];
  CU_ASSERT_FALSE(cg_symbols_reserved("model", true, true, true, sym,
                                      sizeof sym));
  CU_ASSERT_TRUE(cg_symbols_reserved("rlx", false, false, false, sym,
                                     sizeof sym));
  CU_ASSERT_STRING_EQUAL(sym, "rlx_signature");
  CU_ASSERT_TRUE(cg_symbols_reserved("exp", false, false, false, sym,
                                     sizeof sym));
  CU_ASSERT_STRING_EQUAL(sym, "exp");
}

/* The listing: rules first (globs), then the names in strcmp order. */
static void test_table_sorted(void) {
  FILE *f = tmpfile();
  CU_ASSERT_PTR_NOT_NULL_FATAL(f);
  cg_list_reserved(f);
  rewind(f);
  char prev[128] = "", line[128];
  int names = 0, unsorted = 0;
  while (fgets(line, sizeof line, f)) {
    line[strcspn(line, "\n")] = 0;
    if (strchr(line, '*')) {
      CU_ASSERT_EQUAL(names, 0);
      continue;
    }
    if (names++ && strcmp(prev, line) >= 0) unsorted++;
    CU_ASSERT_TRUE(cg_reserved(line));
    snprintf(prev, sizeof prev, "%s", line);
  }
  fclose(f);
  CU_ASSERT_EQUAL(unsorted, 0);
  CU_ASSERT(names > 1000);
}

int main(void) {
  snprintf(dir, sizeof dir, "/tmp/rlx_test_output_XXXXXX");
  if (!mkdtemp(dir)) return 1;
  if (CU_initialize_registry() != CUE_SUCCESS) return 1;
  CU_pSuite s = CU_add_suite("output", NULL, NULL);
  CU_add_test(s, "commit", test_commit);
  CU_add_test(s, "rename_fails", test_rename_fails);
  CU_add_test(s, "mem", test_mem);
  CU_add_test(s, "paths", test_paths);
  CU_add_test(s, "reserved", test_reserved);
  CU_add_test(s, "table_sorted", test_table_sorted);
  CU_basic_set_mode(CU_BRM_VERBOSE);
  CU_basic_run_tests();
  unsigned fails = CU_get_number_of_failures();
  CU_cleanup_registry();
  rmdir(dir);
  return fails ? 1 : 0;
}
