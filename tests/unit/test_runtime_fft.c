/* test_runtime_fft.c -- CUnit tests of rlx_fft_c64 (runtime/fft*.c)
 * against a naive O(n^2) DFT in double with exact twiddles
 * (exp(-+2 pi i (j k mod n) / n)), with the float32 bar
 *   |got - ref| <= 1e-4 |ref| + 1e-5 max(1, max |ref|)
 * per component.  Lengths cover every path: 1, 2, powers of two (odd and
 * even exponents, radix 4 + 2), 3, 5, 7, 3*5*7, 1000, 61 (a generic
 * prime radix), and Bluestein for large prime factors: 67, 97, 4099,
 * 2 * 1009; each forward and inverse with every norm, some batched.
 * Also: fft then inverse fft with the same norm is the identity; the
 * output may alias the input; results are bit-identical for 1, 2 and 3
 * threads and for every kernel ISA the machine has (tests/unit/isa.h)
 * against the portable kernels, over every length to 160 and larger
 * ones; bad arguments give RLX_ERR_INVALID.  The scratch starts as NaN
 * bytes.  The tables rlx_fft_tables makes once (the compiler's
 * constants, with the portable stages) equal bit for bit those
 * rlx_fft_c64 computes per call (rlx_fft_tables_bytes bytes at the
 * scratch's FftLayout.tab_at, with every ISA's stage kernel), and
 * rlx_fft_c64_tab gives the same bits.
 */
#include <CUnit/Basic.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "runtime/fft/fft_internal.h" /* FftLayout.tab_at */
#include "runtime/rlxrt.h"
#include "tests/unit/isa.h"

static const int64_t LENS[] = {1,   2,   3,   4,   5,   7,    8,    16,
                               24,  32,  40,  61,  64,  67,  97,   105,
                               128, 256, 375, 640, 1000, 1024, 2018, 4099};
enum { NLEN = sizeof LENS / sizeof LENS[0] };

static float *rand_c64(int64_t count, unsigned seed)
{
  float *x = malloc(sizeof(float) * 2 * (size_t)count);
  srand(seed);
  for (int64_t i = 0; i < 2 * count; i++)
    x[i] = (float)rand() / RAND_MAX * 2.0f - 1.0f;
  return x;
}

static void *scratch_for(int64_t rows, int64_t n)
{
  int64_t bytes = rlx_fft_scratch_bytes(rows, n);
  void *s = rlx_alloc((size_t)bytes);
  memset(s, 0xff, (size_t)bytes); /* NaN floats */
  return s;
}

static double scale_of(int64_t n, int inverse, int norm)
{
  if (norm == RLX_FFT_NORM_ORTHO)
    return 1.0 / sqrt((double)n);
  return (norm == RLX_FFT_NORM_BACKWARD) == (inverse != 0) ? 1.0 / n : 1.0;
}

/* Check rows of got against the naive DFT of x; returns failures. */
static int check(const float *x, const float *got, int64_t rows, int64_t n,
                 int inverse, int norm)
{
  double *ref = malloc(sizeof(double) * 2 * (size_t)n);
  double sc = scale_of(n, inverse, norm), sg = inverse ? 1.0 : -1.0;
  int bad = 0;
  for (int64_t r = 0; r < rows; r++) {
    const float *xr = x + 2 * r * n;
    double mx = 1.0;
    for (int64_t k = 0; k < n; k++) {
      double re = 0, im = 0;
      for (int64_t j = 0; j < n; j++) {
        double a = sg * 2 * M_PI * (double)((j * k) % n) / (double)n;
        double c = cos(a), s = sin(a);
        re += xr[2 * j] * c - xr[2 * j + 1] * s;
        im += xr[2 * j] * s + xr[2 * j + 1] * c;
      }
      ref[2 * k] = re * sc;
      ref[2 * k + 1] = im * sc;
      mx = fmax(mx, fmax(fabs(ref[2 * k]), fabs(ref[2 * k + 1])));
    }
    for (int64_t i = 0; i < 2 * n; i++) {
      double g = got[2 * r * n + i];
      if (!(fabs(g - ref[i]) <= 1e-4 * fabs(ref[i]) + 1e-5 * mx)) {
        if (bad++ < 3)
          printf("\n  n=%lld inv=%d norm=%d row %lld [%lld]: %g vs %g",
                 (long long)n, inverse, norm, (long long)r,
                 (long long)i, g, ref[i]);
      }
    }
  }
  free(ref);
  return bad;
}

static void fft(int64_t rows, int64_t n, int inverse, int norm,
                const float *x, float *y)
{
  void *s = scratch_for(rows, n);
  CU_ASSERT_EQUAL(rlx_fft_c64(rows, n, inverse, norm, x, y, s), RLX_OK);
  rlx_free(s);
}

static void test_vs_naive(void)
{
  for (int li = 0; li < NLEN; li++) {
    int64_t n = LENS[li], rows = n <= 256 ? 3 : 1;
    float *x = rand_c64(rows * n, (unsigned)n);
    float *y = malloc(sizeof(float) * 2 * (size_t)(rows * n));
    for (int inverse = 0; inverse < 2; inverse++)
      for (int norm = 0; norm < 3; norm++) {
        if (n > 1100 && norm != inverse) /* keep the O(n^2) part small */
          continue;
        fft(rows, n, inverse, norm, x, y);
        CU_ASSERT_EQUAL(check(x, y, rows, n, inverse, norm), 0);
      }
    free(x);
    free(y);
  }
}

static void test_round_trip_alias(void)
{
  const int64_t lens[] = {1, 12, 97, 1000, 4099};
  for (int li = 0; li < 5; li++)
    for (int norm = 0; norm < 3; norm++) {
      int64_t n = lens[li], rows = 2;
      float *x = rand_c64(rows * n, 7);
      float *y = malloc(sizeof(float) * 2 * (size_t)(rows * n));
      memcpy(y, x, sizeof(float) * 2 * (size_t)(rows * n));
      fft(rows, n, 0, norm, y, y); /* in place */
      fft(rows, n, 1, norm, y, y);
      int bad = 0;
      for (int64_t i = 0; i < 2 * rows * n; i++)
        bad += !(fabsf(y[i] - x[i]) <= 1e-5f * 2);
      CU_ASSERT_EQUAL(bad, 0);
      free(x);
      free(y);
    }
}

/* Same bits for 1, 2, 3 threads and every ISA as for the portable
 * kernels on 1 thread (radix 4 of stride 1 with m % 16 != 0 (40,
 * 1000), radix 2, 3, 5 of strides 1, 2, 4, 8, >= 16, full and masked
 * (10, 24, 40, 80, 96, 375, 640, 1000, 2048, 3000, 6000), generic
 * fallbacks (97, 375)), 37 rows spread over the slots. */
static void test_deterministic(void)
{
  const int64_t lens[] = {1024, 1000, 97,  4099, 10,   24,  40,
                          80,   96,   375, 640,  2048, 3000, 6000};
  for (int li = 0; li < 14; li++) {
    int64_t n = lens[li], rows = 37;
    float *x = rand_c64(rows * n, 3);
    size_t bytes = sizeof(float) * 2 * (size_t)(rows * n);
    float *ref = malloc(bytes), *y = malloc(bytes);
    for (int isa = 0; isa < N_TEST_ISAS; isa++) {
      if (!test_isa_use(test_isas[isa])) /* scalar first: the reference */
        continue;
      for (int t = 1; t <= 3; t++) {
        rlx_set_num_threads(t);
        fft(rows, n, 0, RLX_FFT_NORM_ORTHO, x, isa || t > 1 ? y : ref);
        if (isa || t > 1)
          CU_ASSERT_EQUAL(memcmp(ref, y, bytes), 0);
      }
    }
    rlx_gemm_select_isa(NULL);
    rlx_set_num_threads(0);
    free(x);
    free(ref);
    free(y);
  }
}

/* Every ISA's bits are the portable kernels', both directions, for
 * every length to 160 (each radix 2 .. 5 at each stride below 16, wide
 * strides with masked tails, generic radices, Bluestein) and longer
 * ones; the first failure per ISA and length is printed. */
static void test_isa_bits(void)
{
  int64_t lens[200];
  int nl = 0;
  for (int64_t n = 1; n <= 160; n++)
    lens[nl++] = n;
  const int64_t more[] = {250,  256,  375,  500,  640,  1000, 1024,
                          1536, 2048, 3000, 4096, 4099, 6000};
  for (int i = 0; i < 13; i++)
    lens[nl++] = more[i];
  for (int li = 0; li < nl; li++) {
    int64_t n = lens[li], rows = 3;
    size_t bytes = sizeof(float) * 2 * (size_t)(rows * n);
    float *x = rand_c64(rows * n, (unsigned)n), *ref[2], *y = malloc(bytes);
    for (int inverse = 0; inverse < 2; inverse++) {
      ref[inverse] = malloc(bytes);
      rlx_gemm_select_isa("scalar");
      fft(rows, n, inverse, RLX_FFT_NORM_BACKWARD, x, ref[inverse]);
    }
    for (int isa = 1; isa < N_TEST_ISAS; isa++) {
      if (!test_isa_use(test_isas[isa]))
        continue;
      for (int inverse = 0; inverse < 2; inverse++) {
        fft(rows, n, inverse, RLX_FFT_NORM_BACKWARD, x, y);
        int same = memcmp(ref[inverse], y, bytes) == 0;
        if (!same)
          printf("\n  %s n=%lld inverse=%d: not the portable bits",
                 test_isas[isa], (long long)n, inverse);
        CU_ASSERT(same);
      }
    }
    rlx_gemm_select_isa(NULL);
    free(x);
    free(ref[0]);
    free(ref[1]);
    free(y);
  }
}

/* Tables made once == per-call tables, same results with and without. */
static void test_tables(void)
{
  const int64_t lens[] = {1, 2, 3, 5, 7, 12, 61, 67, 1000, 1024, 2048, 4099};
  for (int li = 0; li < 12; li++)
    for (int inverse = 0; inverse < 2; inverse++)
      for (int isa = 0; isa < N_TEST_ISAS; isa++) {
        if (!test_isa_use(test_isas[isa]))
          continue;
        int64_t n = lens[li], rows = 3, tb = rlx_fft_tables_bytes(n);
        size_t sb = (size_t)rlx_fft_scratch_bytes(rows, n);
        size_t bytes = sizeof(float) * 2 * (size_t)(rows * n);
        char *tab = calloc(1, (size_t)tb), *work = scratch_for(1, n);
        char *scr = rlx_alloc(sb);
        memset(scr, 0, sb); /* the gaps between the tables compare 0 */
        float *x = rand_c64(rows * n, 11), *ref = malloc(bytes);
        float *y = malloc(bytes);
        CU_ASSERT_EQUAL(rlx_fft_tables(n, inverse, tab, work), RLX_OK);
        rlx_fft_c64(rows, n, inverse, RLX_FFT_NORM_ORTHO, x, ref, scr);
        FftLayout L;
        rlx_fft_layout(rows, n, &L);
        CU_ASSERT_EQUAL(memcmp(scr + L.tab_at, tab, (size_t)tb), 0);
        memset(scr, 0xff, sb);
        CU_ASSERT_EQUAL(rlx_fft_c64_tab(rows, n, inverse, RLX_FFT_NORM_ORTHO,
                                        x, y, scr, tab),
                        RLX_OK);
        CU_ASSERT_EQUAL(memcmp(ref, y, bytes), 0);
        rlx_gemm_select_isa(NULL);
        free(tab);
        rlx_free(work);
        rlx_free(scr);
        free(x);
        free(ref);
        free(y);
      }
  CU_ASSERT_EQUAL(rlx_fft_tables(0, 0, NULL, NULL), RLX_ERR_INVALID);
  CU_ASSERT_EQUAL(rlx_fft_tables_bytes(0), 0);
}

static void test_invalid(void)
{
  float x[2] = {1, 2}, y[2];
  CU_ASSERT_EQUAL(rlx_fft_c64(1, 1, 0, 3, x, y, NULL), RLX_ERR_INVALID);
  CU_ASSERT_EQUAL(rlx_fft_c64(-1, 1, 0, 0, x, y, NULL), RLX_ERR_INVALID);
  CU_ASSERT_EQUAL(rlx_fft_c64(0, 5, 0, 0, x, y, NULL), RLX_OK);
  CU_ASSERT_EQUAL(rlx_fft_scratch_bytes(0, 5), 0);
}

int main(void)
{
  if (CU_initialize_registry() != CUE_SUCCESS)
    return CU_get_error();
  CU_pSuite s = CU_add_suite("runtime_fft", NULL, NULL);
  CU_add_test(s, "vs_naive", test_vs_naive);
  CU_add_test(s, "round_trip_alias", test_round_trip_alias);
  CU_add_test(s, "deterministic", test_deterministic);
  CU_add_test(s, "isa_bits", test_isa_bits);
  CU_add_test(s, "tables", test_tables);
  CU_add_test(s, "invalid", test_invalid);
  CU_basic_set_mode(CU_BRM_VERBOSE);
  CU_basic_run_tests();
  unsigned fails = CU_get_number_of_failures();
  CU_cleanup_registry();
  return fails ? 1 : 0;
}
