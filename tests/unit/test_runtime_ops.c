/* test_runtime_ops.c -- CUnit tests of the runtime's smaller entry
 * points: rlx_topk_f32/_f64 (order, ties, NaN, k = 0 / k = n, invalid
 * k), rlx_dense_solve_f32/_f64 (known solutions, pivoting, batches,
 * singular detection, x aliasing b), error strings, dtype tables and
 * rlx_alloc alignment.
 */
#include <CUnit/Basic.h>
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "runtime/rlxrt.h"

static void test_topk_basic(void)
{
  float x[] = {3, 1, 4, 1, 5, 9, 2, 6};
  int64_t idx[8];
  CU_ASSERT(rlx_topk_f32(x, 1, 8, 3, idx) == RLX_OK);
  CU_ASSERT(idx[0] == 5 && idx[1] == 7 && idx[2] == 4);
  CU_ASSERT(rlx_topk_f32(x, 1, 8, 8, idx) == RLX_OK);
  int64_t want[] = {5, 7, 4, 2, 0, 6, 1, 3};
  CU_ASSERT(memcmp(idx, want, sizeof want) == 0);
  CU_ASSERT(rlx_topk_f32(x, 1, 8, 0, idx) == RLX_OK);
  CU_ASSERT(rlx_topk_f32(x, 1, 8, 9, idx) == RLX_ERR_INVALID);
  CU_ASSERT(rlx_topk_f32(x, 1, 8, -1, idx) == RLX_ERR_INVALID);
}

static void test_topk_ties_nan(void)
{
  double x[] = {2, 7, 2, 7, NAN, -INFINITY, INFINITY, NAN, 2, -0.0, 0.0};
  int64_t idx[11];
  CU_ASSERT(rlx_topk_f64(x, 1, 11, 11, idx) == RLX_OK);
  int64_t want[] = {4, 7, 6, 1, 3, 0, 2, 8, 9, 10, 5};
  CU_ASSERT(memcmp(idx, want, sizeof want) == 0);
  float y[] = {1, 1, 1, 1, 1, 1};
  int64_t iy[4];
  CU_ASSERT(rlx_topk_f32(y, 2, 3, 2, iy) == RLX_OK);
  CU_ASSERT(iy[0] == 0 && iy[1] == 1 && iy[2] == 0 && iy[3] == 1);
}

/* Many random rows with repeated values against a selection reference. */
static void test_topk_random(void)
{
  enum { ROWS = 300, N = 57, K = 20 };
  float *x = malloc(ROWS * N * sizeof *x);
  int64_t *idx = malloc(ROWS * K * sizeof *idx);
  for (int i = 0; i < ROWS * N; i++)
    x[i] = (float)(rand() % 10);
  CU_ASSERT(rlx_topk_f32(x, ROWS, N, K, idx) == RLX_OK);
  int ok = 1;
  for (int r = 0; r < ROWS; r++) {
    char used[N] = {0};
    for (int t = 0; t < K; t++) {
      int best = -1;
      for (int j = 0; j < N; j++)
        if (!used[j] && (best < 0 || x[r * N + j] > x[r * N + best]))
          best = j;
      used[best] = 1;
      ok &= idx[r * K + t] == best;
    }
  }
  CU_ASSERT(ok);
  free(x);
  free(idx);
}

static void test_solve_known(void)
{
  /* Needs a row swap: a[0][0] = 0. */
  double a[9] = {0, 2, 1, 1, 1, 1, 2, 1, 3};
  double xs[3] = {1, -2, 3}, b[3], x[3], scratch[12];
  for (int i = 0; i < 3; i++)
    b[i] = a[3 * i] * xs[0] + a[3 * i + 1] * xs[1] + a[3 * i + 2] * xs[2];
  CU_ASSERT(rlx_dense_solve_f64(1, 3, 1, a, b, x, scratch) == RLX_OK);
  for (int i = 0; i < 3; i++)
    CU_ASSERT(fabs(x[i] - xs[i]) < 1e-12);
  /* x aliasing b, f32, two batches, two right-hand sides. */
  float af[8] = {4, 1, 2, 3, 1, 0, 0, 2};
  float bf[8] = {4, 8, 2, 4, 3, 1, 4, 2};
  float sf[12];
  CU_ASSERT(rlx_dense_solve_f32(2, 2, 2, af, bf, bf, sf) == RLX_OK);
  float want[8] = {1, 2, 0, 0, 3, 1, 2, 1};
  for (int i = 0; i < 8; i++)
    CU_ASSERT(fabsf(bf[i] - want[i]) < 1e-5f);
}

static void test_solve_random(void)
{
  enum { N = 40, R = 3 };
  double *a = malloc(N * N * 8), *x = malloc(N * R * 8);
  double *b = malloc(N * R * 8), *s = malloc((N * N + N) * 8);
  for (int i = 0; i < N * N; i++)
    a[i] = (double)rand() / RAND_MAX - 0.5 + (i % (N + 1) == 0 ? 4 : 0);
  for (int i = 0; i < N * R; i++)
    b[i] = (double)rand() / RAND_MAX;
  CU_ASSERT(rlx_dense_solve_f64(1, N, R, a, b, x, s) == RLX_OK);
  double worst = 0;
  for (int i = 0; i < N; i++)
    for (int j = 0; j < R; j++) {
      double r = -b[i * R + j];
      for (int p = 0; p < N; p++)
        r += a[i * N + p] * x[p * R + j];
      worst = fmax(worst, fabs(r));
    }
  CU_ASSERT(worst < 1e-10);
  free(a), free(x), free(b), free(s);
}

static void test_solve_singular(void)
{
  double a[4] = {1, 2, 2, 4}, b[2] = {1, 1}, x[2], s[6];
  CU_ASSERT(rlx_dense_solve_f64(1, 2, 1, a, b, x, s) == RLX_ERR_SINGULAR);
  float z[4] = {0, 0, 0, 0}, bz[2] = {1, 1}, xz[2], sz[6];
  CU_ASSERT(rlx_dense_solve_f32(1, 2, 1, z, bz, xz, sz) ==
            RLX_ERR_SINGULAR);
  CU_ASSERT(rlx_dense_solve_f64(1, 0, 1, a, b, x, s) == RLX_OK);
}

static void test_tables(void)
{
  CU_ASSERT_STRING_EQUAL(rlx_strerror(RLX_OK), "success");
  CU_ASSERT_STRING_EQUAL(rlx_strerror(RLX_ERR_SINGULAR), "singular matrix");
  CU_ASSERT_STRING_EQUAL(rlx_strerror(99), "unknown error");
  CU_ASSERT_STRING_EQUAL(rlx_strerror(-1), "unknown error");
  CU_ASSERT_STRING_EQUAL(rlx_dtype_name(RLX_DT_BF16), "bf16");
  CU_ASSERT_STRING_EQUAL(rlx_dtype_name(RLX_DT_C64), "c64");
  CU_ASSERT_STRING_EQUAL(rlx_dtype_name(42), "?");
  CU_ASSERT_EQUAL(rlx_dtype_size(RLX_DT_F32), 4);
  CU_ASSERT_EQUAL(rlx_dtype_size(RLX_DT_BOOL), 1);
  CU_ASSERT_EQUAL(rlx_dtype_size(RLX_DT_C64), 8);
  CU_ASSERT_EQUAL(rlx_dtype_size(RLX_DT_F16), 2);
  CU_ASSERT_EQUAL(rlx_dtype_size(-3), 0);
}

static void test_alloc(void)
{
  size_t sizes[] = {0, 1, 63, 64, 65, 1000, 1 << 20};
  for (size_t i = 0; i < sizeof sizes / sizeof *sizes; i++) {
    void *p = rlx_alloc(sizes[i]);
    CU_ASSERT_PTR_NOT_NULL(p);
    CU_ASSERT((uintptr_t)p % 64 == 0);
    memset(p, 1, sizes[i]);
    rlx_free(p);
  }
  CU_ASSERT_PTR_NULL(rlx_alloc(SIZE_MAX - 10));
  rlx_free(NULL);
}

int main(void)
{
  srand(777);
  if (CU_initialize_registry() != CUE_SUCCESS)
    return 1;
  CU_pSuite s = CU_add_suite("runtime_ops", NULL, NULL);
  CU_add_test(s, "topk_basic", test_topk_basic);
  CU_add_test(s, "topk_ties_nan", test_topk_ties_nan);
  CU_add_test(s, "topk_random", test_topk_random);
  CU_add_test(s, "solve_known", test_solve_known);
  CU_add_test(s, "solve_random", test_solve_random);
  CU_add_test(s, "solve_singular", test_solve_singular);
  CU_add_test(s, "tables", test_tables);
  CU_add_test(s, "alloc", test_alloc);
  CU_basic_set_mode(CU_BRM_VERBOSE);
  CU_basic_run_tests();
  unsigned fails = CU_get_number_of_failures();
  CU_cleanup_registry();
  return fails != 0;
}
