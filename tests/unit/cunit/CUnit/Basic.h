/* Basic.h -- the part of CUnit's basic interface that the runtime unit
 * suites (tests/unit/test_runtime_*.c) use, for trees that have no
 * libcunit for their target: the runtime-only cross build run under
 * qemu (docs/testing.md, "aarch64 under qemu").  Same semantics as
 * CUnit 2.1: a failed assertion is printed and counted and its test goes
 * on; a _FATAL one ends its test (longjmp); CU_basic_run_tests runs every
 * test of every suite in order and prints a summary.  A suite that uses
 * anything else fails to compile here, never silently.
 */
#ifndef RLX_TEST_CUNIT_BASIC_H
#define RLX_TEST_CUNIT_BASIC_H
#include <setjmp.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef enum { CUE_SUCCESS = 0 } CU_ErrorCode;
enum { CU_BRM_VERBOSE = 2 };
typedef struct CU_Suite {
  const char *name;
  int (*init)(void), (*clean)(void);
} CU_Suite, *CU_pSuite;
typedef struct CU_Test {
  CU_pSuite suite;
  const char *name;
  void (*fn)(void);
} CU_Test, *CU_pTest;

enum { CU_MAX_SUITES = 16, CU_MAX_TESTS = 256 };
static CU_Suite cu_suites[CU_MAX_SUITES];
static CU_Test cu_tests[CU_MAX_TESTS];
static int cu_n_suites, cu_n_tests;
static atomic_uint cu_failures, cu_test_failures;
static jmp_buf cu_fatal;

static inline CU_ErrorCode CU_initialize_registry(void) { return CUE_SUCCESS; }
static inline void CU_cleanup_registry(void) { cu_n_suites = cu_n_tests = 0; }
static inline CU_ErrorCode CU_get_error(void) { return CUE_SUCCESS; }
static inline void CU_basic_set_mode(int mode) { (void)mode; }
static inline unsigned CU_get_number_of_failures(void) { return cu_failures; }

static inline void cu_full(const char *what)
{
  fprintf(stderr, "tests/unit/cunit: more than %s\n", what);
  exit(2);
}

static inline CU_pSuite CU_add_suite(const char *name, int (*init)(void),
                                     int (*clean)(void))
{
  if (cu_n_suites == CU_MAX_SUITES)
    cu_full("CU_MAX_SUITES suites");
  cu_suites[cu_n_suites] = (CU_Suite){name, init, clean};
  return &cu_suites[cu_n_suites++];
}

static inline CU_pTest CU_add_test(CU_pSuite s, const char *name,
                                   void (*fn)(void))
{
  if (cu_n_tests == CU_MAX_TESTS)
    cu_full("CU_MAX_TESTS tests");
  cu_tests[cu_n_tests] = (CU_Test){s, name, fn};
  return &cu_tests[cu_n_tests++];
}

static inline void cu_assert(int ok, int fatal, const char *expr,
                             const char *file, int line)
{
  if (ok)
    return;
  cu_failures++;
  cu_test_failures++;
  printf("\n    %s:%d - %s", file, line, expr);
  if (fatal)
    longjmp(cu_fatal, 1);
}

/* Runs one test; whether an assertion of it failed.  (setjmp in a
   function of its own, with no locals for longjmp to clobber.) */
static inline int cu_run_one(void (*fn)(void))
{
  cu_test_failures = 0;
  if (!setjmp(cu_fatal))
    fn();
  return cu_test_failures != 0;
}

static inline CU_ErrorCode CU_basic_run_tests(void)
{
  int failed_tests = 0;
  for (int si = 0; si < cu_n_suites; si++) {
    CU_pSuite s = &cu_suites[si];
    printf("\nSuite: %s", s->name);
    if (s->init && s->init() != 0) {
      printf("\n  suite initialization FAILED");
      cu_failures++;
      continue;
    }
    for (int ti = 0; ti < cu_n_tests; ti++) {
      if (cu_tests[ti].suite != s)
        continue;
      printf("\n  Test: %s ...", cu_tests[ti].name);
      fflush(stdout);
      int failed = cu_run_one(cu_tests[ti].fn);
      failed_tests += failed;
      printf(failed ? "\n  ...FAILED" : "passed");
      fflush(stdout);
    }
    if (s->clean && s->clean() != 0) {
      printf("\n  suite cleanup FAILED");
      cu_failures++;
    }
  }
  printf("\n\n%d of %d tests failed, %u assertions failed\n", failed_tests,
         cu_n_tests, (unsigned)cu_failures);
  return CUE_SUCCESS;
}

#define CU_TEST_IMPL(ok, fatal, expr) \
  cu_assert(!!(ok), fatal, expr, __FILE__, __LINE__)
#define CU_ASSERT(v) CU_TEST_IMPL(v, 0, "CU_ASSERT(" #v ")")
#define CU_ASSERT_FATAL(v) CU_TEST_IMPL(v, 1, "CU_ASSERT_FATAL(" #v ")")
#define CU_ASSERT_EQUAL(a, b) \
  CU_TEST_IMPL((a) == (b), 0, "CU_ASSERT_EQUAL(" #a "," #b ")")
#define CU_ASSERT_EQUAL_FATAL(a, b) \
  CU_TEST_IMPL((a) == (b), 1, "CU_ASSERT_EQUAL_FATAL(" #a "," #b ")")
#define CU_ASSERT_NOT_EQUAL(a, b) \
  CU_TEST_IMPL((a) != (b), 0, "CU_ASSERT_NOT_EQUAL(" #a "," #b ")")
#define CU_ASSERT_STRING_EQUAL(a, b) \
  CU_TEST_IMPL(strcmp((const char *)(a), (const char *)(b)) == 0, 0, \
               "CU_ASSERT_STRING_EQUAL(" #a "," #b ")")
#define CU_ASSERT_PTR_NULL(p) \
  CU_TEST_IMPL((const void *)(p) == NULL, 0, "CU_ASSERT_PTR_NULL(" #p ")")
#define CU_ASSERT_PTR_NOT_NULL(p) \
  CU_TEST_IMPL((const void *)(p) != NULL, 0, \
               "CU_ASSERT_PTR_NOT_NULL(" #p ")")
#endif
