/* test_runtime_random.c -- CUnit tests of runtime/random/random.c:
 * Philox-4x32-10 against the Random123 known-answer vectors
 * (kat_vectors, the three philox4x32 10 lines); rng_uniform and
 * rng_normal follow the documented (seed, element) -> counter mapping
 * (docs/random.md) at every element of odd sizes, are bit-identical
 * for 1, 2, 3 and 7 threads, and pass a Kolmogorov-Smirnov test at
 * 10^6 samples; sample: frequencies over 60000 rows match the filtered
 * softmax (chi-square; fixed seeds, so it cannot flake), filtered
 * classes never appear, top_k = 1 and temperature 0 are the argmax,
 * top_p edge cases, invalid arguments and NaN logits are rejected. A
 * checksum of both generators pins their bits; test_runtime_random_c
 * runs the same suite on the portable kernels (RLX_NO_SIMD).
 */
#include <CUnit/Basic.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "runtime/rlxrt.h"

#define UNIFORM_SUM 0xe51337bcf2015ed8ull
#define NORMAL_SUM 0xab6a7f67e34685dcull

static void test_kat(void)
{
  static const uint32_t v[3][10] = {
      {0, 0, 0, 0, 0, 0, 0x6627e8d5, 0xe169c58d, 0xbc57ac4c, 0x9b00dbd8},
      {0xffffffff, 0xffffffff, 0xffffffff, 0xffffffff, 0xffffffff,
       0xffffffff, 0x408f276d, 0x41c83b0e, 0xa20bc7c6, 0x6d5451fd},
      {0x243f6a88, 0x85a308d3, 0x13198a2e, 0x03707344, 0xa4093822,
       0x299f31d0, 0xd16cfe09, 0x94fdcceb, 0x5001e420, 0x24126ea1}};
  for (int t = 0; t < 3; t++) {
    uint32_t out[4];
    rlx_philox4x32_10(v[t], v[t] + 4, out);
    for (int k = 0; k < 4; k++)
      CU_ASSERT_EQUAL(out[k], v[t][6 + k]);
  }
}

/* Word i % 4 of block i / 4 of `stream` under seed (docs/random.md). */
static uint32_t word(uint64_t seed, uint32_t stream, uint64_t i)
{
  uint32_t c[4] = {(uint32_t)(i / 4), (uint32_t)((i / 4) >> 32), stream, 0};
  uint32_t k[2] = {(uint32_t)seed, (uint32_t)(seed >> 32)}, w[4];
  rlx_philox4x32_10(c, k, w);
  return w[i % 4];
}

static void test_mapping(void)
{
  const int64_t n = 1031;
  const uint64_t seed = 0x123456789abcdefull;
  float *u = malloc(n * sizeof *u), *z = malloc(n * sizeof *z);
  CU_ASSERT_EQUAL(rlx_rng_uniform_f32(u, n, seed), RLX_OK);
  CU_ASSERT_EQUAL(rlx_rng_normal_f32(z, n, seed), RLX_OK);
  int bad_u = 0, bad_z = 0;
  for (int64_t i = 0; i < n; i++) {
    if (u[i] != (float)(word(seed, 0, i) >> 8) * 0x1p-24f)
      bad_u++;
    int64_t p = i & ~(int64_t)1; /* the pair (p, p + 1) */
    double u1 = ((word(seed, 1, p) >> 8) + 1) * 0x1p-24;
    double u2 = (word(seed, 1, p + 1) >> 8) * 0x1p-24;
    double r = sqrt(-2 * log(u1)), t = 2 * M_PI * u2;
    double ref = (i & 1) ? r * sin(t) : r * cos(t);
    if (fabs(z[i] - ref) > 1e-5 * (1 + fabs(ref)))
      bad_z++;
  }
  CU_ASSERT_EQUAL(bad_u, 0);
  CU_ASSERT_EQUAL(bad_z, 0);
  CU_ASSERT_EQUAL(rlx_rng_uniform_f32(u, -1, 0), RLX_ERR_INVALID);
  free(u);
  free(z);
}

static void test_threads(void)
{
  const int64_t n = 1000003;
  static const int th[4] = {1, 2, 3, 7};
  float *ref = malloc(n * sizeof *ref), *got = malloc(n * sizeof *got);
  for (int normal = 0; normal < 2; normal++) {
    int (*fn)(float *, int64_t, uint64_t) =
        normal ? rlx_rng_normal_f32 : rlx_rng_uniform_f32;
    for (int t = 0; t < 4; t++) {
      rlx_set_num_threads(th[t]);
      memset(got, 0xff, n * sizeof *got);
      fn(t ? got : ref, n, 42);
      if (t)
        CU_ASSERT_EQUAL(memcmp(ref, got, n * sizeof *got), 0);
    }
    fn(got, n, 42); /* every call with one seed: the same bits */
    CU_ASSERT_EQUAL(memcmp(ref, got, n * sizeof *got), 0);
    fn(got, n, 43);
    CU_ASSERT_NOT_EQUAL(memcmp(ref, got, n * sizeof *got), 0);
  }
  rlx_set_num_threads(0);
  free(ref);
  free(got);
}

/* FNV-1a of the bytes of n values of each generator: the same constant
 * for the AVX-512 kernels (test_runtime_random) and the portable C ones
 * (test_runtime_random_c, built with RLX_NO_SIMD), so both give the
 * same bits. */
static void test_checksum(void)
{
  const int64_t n = 100003;
  float *v = malloc(n * sizeof *v);
  uint64_t h[2];
  for (int g = 0; g < 2; g++) {
    (g ? rlx_rng_normal_f32 : rlx_rng_uniform_f32)(v, n, 2024);
    h[g] = 0xcbf29ce484222325ull;
    const unsigned char *b = (const unsigned char *)v;
    for (size_t i = 0; i < n * sizeof *v; i++)
      h[g] = (h[g] ^ b[i]) * 0x100000001b3ull;
  }
  if (getenv("RLX_PRINT_CHECKSUM"))
    printf("\n0x%016llxull 0x%016llxull\n", (unsigned long long)h[0],
           (unsigned long long)h[1]);
  CU_ASSERT_EQUAL(h[0], UNIFORM_SUM);
  CU_ASSERT_EQUAL(h[1], NORMAL_SUM);
  free(v);
}

static int cmp_float(const void *a, const void *b)
{
  float x = *(const float *)a, y = *(const float *)b;
  return (x > y) - (x < y);
}

/* Kolmogorov-Smirnov statistic of v[0..n) against cdf (v is sorted). */
static double ks(float *v, int64_t n, double (*cdf)(double))
{
  qsort(v, (size_t)n, sizeof *v, cmp_float);
  double d = 0;
  for (int64_t i = 0; i < n; i++) {
    double f = cdf(v[i]);
    d = fmax(d, fmax(f - (double)i / n, (double)(i + 1) / n - f));
  }
  return d;
}
static double cdf_uniform(double x) { return x < 0 ? 0 : x > 1 ? 1 : x; }
static double cdf_normal(double x) { return 0.5 * erfc(-x / sqrt(2)); }

/* 10^6 samples; the 0.1% critical value of D is 1.95 / sqrt(n). */
static void test_ks(void)
{
  const int64_t n = 1000000;
  float *v = malloc(n * sizeof *v);
  rlx_rng_uniform_f32(v, n, 7);
  int out_of_range = 0;
  for (int64_t i = 0; i < n; i++)
    out_of_range += !(v[i] >= 0 && v[i] < 1);
  CU_ASSERT_EQUAL(out_of_range, 0);
  double du = ks(v, n, cdf_uniform);
  rlx_rng_normal_f32(v, n, 7);
  int nonfinite = 0;
  double mean = 0, var = 0;
  for (int64_t i = 0; i < n; i++) {
    nonfinite += !isfinite(v[i]);
    mean += v[i];
    var += (double)v[i] * v[i];
  }
  CU_ASSERT_EQUAL(nonfinite, 0);
  double dn = ks(v, n, cdf_normal);
  CU_ASSERT(du < 1.95 / sqrt((double)n));
  CU_ASSERT(dn < 1.95 / sqrt((double)n));
  CU_ASSERT(fabs(mean / n) < 0.005);
  CU_ASSERT(fabs(var / n - 1) < 0.01);
  free(v);
}

/* ---- sample ---- */

#define C 6
/* class probabilities (a permutation of .40 .25 .15 .10 .06 .04) */
static const double P[C] = {0.10, 0.40, 0.06, 0.25, 0.04, 0.15};

/* Draw `rows` identical rows of logits log(P) (times scale) and count. */
static void draw(double temp, int64_t top_k, double top_p, uint64_t seed,
                 int64_t rows, double scale, int64_t *count)
{
  float *x = malloc(rows * C * sizeof *x);
  int64_t *out = malloc(rows * sizeof *out);
  void *scratch = malloc(rows * C * 16);
  for (int64_t r = 0; r < rows; r++)
    for (int j = 0; j < C; j++)
      x[r * C + j] = (float)(scale * log(P[j]));
  CU_ASSERT_EQUAL(rlx_sample_f32(x, rows, C, temp, top_k, top_p, seed,
                                 scratch, out), RLX_OK);
  memset(count, 0, C * sizeof *count);
  for (int64_t r = 0; r < rows; r++)
    if (out[r] >= 0 && out[r] < C)
      count[out[r]]++;
  free(x);
  free(out);
  free(scratch);
}

/* Chi-square of counts against q (zero-probability classes must have
 * zero counts); returns the statistic, or 1e9 on a forbidden class. */
static double chi2(const int64_t *count, const double *q, int64_t rows)
{
  double s = 0;
  for (int j = 0; j < C; j++) {
    if (q[j] == 0) {
      if (count[j])
        return 1e9;
      continue;
    }
    double e = q[j] * rows;
    s += (count[j] - e) * (count[j] - e) / e;
  }
  return s;
}

/* Expected: P^(1/T) renormalized, restricted to the set `keep`. */
static void expect(double temp, const int *keep, double *q)
{
  double z = 0;
  for (int j = 0; j < C; j++) {
    q[j] = keep[j] ? pow(P[j], 1 / temp) : 0;
    z += q[j];
  }
  for (int j = 0; j < C; j++)
    q[j] /= z;
}

static void test_sample_freq(void)
{
  const int64_t rows = 60000;
  int64_t count[C];
  double q[C];
  /* chi-square 0.01% critical value for 5 degrees of freedom: 25.7 */
  static const int all[C] = {1, 1, 1, 1, 1, 1};
  static const int top4[C] = {1, 1, 0, 1, 0, 1};  /* .40 .25 .15 .10 */
  static const int top3[C] = {0, 1, 0, 1, 0, 1};  /* .40 .25 .15 */
  static const int top2[C] = {0, 1, 0, 1, 0, 0};
  struct {
    double temp;
    int64_t k;
    double p;
    const int *keep;
  } cs[] = {
      {1, 0, 1, all},      {1, 4, 1, top4},     {1, 0, 0.7, top3},
      {1, 4, 0.7, top2},   /* top-p of the top-4: .4/.9, .65/.9 = .72 */
      {1, 4, 0.75, top3},  /* .72 < .75 <= .8/.9 */
      {2, 0, 1, all},      {0.5, 0, 1, all},    {1, 2, 1, top2},
  };
  for (size_t t = 0; t < sizeof cs / sizeof cs[0]; t++) {
    draw(cs[t].temp, cs[t].k, cs[t].p, 1000 + t, rows, 1, count);
    expect(cs[t].temp, cs[t].keep, q);
    double s = chi2(count, q, rows);
    if (!(s < 25.7))
      fprintf(stderr, "case %zu: chi2 %g\n", t, s);
    CU_ASSERT(s < 25.7);
  }
  /* over many seeds, one row each */
  int64_t tot[C] = {0};
  for (uint64_t seed = 0; seed < 20000; seed++) {
    draw(1, 0, 1, seed * 7919, 1, 1, count);
    for (int j = 0; j < C; j++)
      tot[j] += count[j];
  }
  expect(1, all, q);
  CU_ASSERT(chi2(tot, q, 20000) < 25.7);
}

static void test_sample_edges(void)
{
  int64_t count[C];
  /* top_p tiny, top_k = 1, temperature 0: always the argmax (class 1) */
  draw(1, 0, 1e-6, 5, 1000, 1, count);
  CU_ASSERT_EQUAL(count[1], 1000);
  draw(1, 1, 1, 5, 1000, 1, count);
  CU_ASSERT_EQUAL(count[1], 1000);
  draw(0, 0, 1, 5, 1000, 1, count);
  CU_ASSERT_EQUAL(count[1], 1000);
  /* top_p = 1 and no top_k: every class appears */
  draw(1, 0, 1, 5, 1000, 1, count);
  for (int j = 0; j < C; j++)
    CU_ASSERT(count[j] > 0);
  /* huge logits (+-inf after scaling) stay finite in the kernel */
  draw(1, 0, 1, 5, 100, 1e38, count);
  CU_ASSERT_EQUAL(count[1], 100);

  /* top_k = 1 on random logits with ties: the first maximum */
  enum { R = 200, N = 17 };
  static float x[R * N];
  static int64_t out[R];
  static char scratch[R * N * 16];
  uint32_t s = 1;
  for (int i = 0; i < R * N; i++) {
    s = s * 1103515245u + 12345u;
    x[i] = (float)((s >> 16) % 5);
  }
  CU_ASSERT_EQUAL(rlx_sample_f32(x, R, N, 0.8, 1, 1, 9, scratch, out),
                  RLX_OK);
  int bad = 0;
  for (int r = 0; r < R; r++) {
    int best = 0;
    for (int j = 1; j < N; j++)
      if (x[r * N + j] > x[r * N + best])
        best = j;
    bad += out[r] != best;
  }
  CU_ASSERT_EQUAL(bad, 0);

  /* invalid arguments, NaN logit */
  CU_ASSERT_EQUAL(rlx_sample_f32(x, R, N, -1, 0, 1, 0, scratch, out),
                  RLX_ERR_INVALID);
  CU_ASSERT_EQUAL(rlx_sample_f32(x, R, N, 1, 0, 0, 0, scratch, out),
                  RLX_ERR_INVALID);
  CU_ASSERT_EQUAL(rlx_sample_f32(x, R, N, 1, N + 1, 1, 0, scratch, out),
                  RLX_ERR_INVALID);
  x[3 * N + 2] = NAN;
  CU_ASSERT_EQUAL(rlx_sample_f32(x, R, N, 1, 0, 1, 0, scratch, out),
                  RLX_ERR_INVALID);
}

int main(void)
{
  if (CU_initialize_registry() != CUE_SUCCESS)
    return 1;
  CU_pSuite s = CU_add_suite("runtime_random", NULL, NULL);
  CU_add_test(s, "philox_kat", test_kat);
  CU_add_test(s, "mapping", test_mapping);
  CU_add_test(s, "threads", test_threads);
  CU_add_test(s, "checksum", test_checksum);
  CU_add_test(s, "ks", test_ks);
  CU_add_test(s, "sample_freq", test_sample_freq);
  CU_add_test(s, "sample_edges", test_sample_edges);
  CU_basic_set_mode(CU_BRM_VERBOSE);
  CU_basic_run_tests();
  unsigned fails = CU_get_number_of_failures();
  CU_cleanup_registry();
  return fails != 0;
}
