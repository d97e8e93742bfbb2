/* test_runtime_gemm.c -- CUnit tests of rlx_gemm_f32 / _f64 / _c64.
 *
 * Every case is compared with a naive reference summed by Dot2 (Ogita,
 * Rump and Oishi's compensated dot product: as if in twice double
 * precision, on every target; long double would be software quad on
 * AArch64, too slow under qemu).  Tolerance per element:
 *   |c - ref| <= 4 * (k + 2) * eps * (sum_p |a_ip||b_pj| + |c0_ij|) + tiny
 * i.e. a few times the standard error bound of a length-k dot product
 * (eps = FLT_EPSILON / DBL_EPSILON).  Cases cover 1x1, 1xN, Nx1, primes,
 * sizes just below / at / above every register and cache block (MR 4..14,
 * NR 8..32, KC 256/384, NC 512..1024, MC 1008), transposed and strided
 * operands, batch-stride-0 broadcasting, accumulate, k = 0, padding of C
 * rows left untouched, bit-identical results for 1..4 threads and for
 * concurrent callers, and across kernel ISAs.  The shape suite runs for
 * every kernel ISA this CPU supports.
 */
#include <CUnit/Basic.h>
#include <float.h>
#include <math.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "runtime/rlxrt.h"
#include "tests/unit/isa.h"

enum { PAD = 3 };
static const float SENTINEL = 12345.0f;

typedef struct {
  int64_t batch, m, n, k;
  int ta, tb;        /* operand stored transposed */
  int a_bcast, b_bcast;
  int acc;
} Case;

static double rnd(void)
{
  return (double)rand() / RAND_MAX * 2.0 - 1.0;
}

/* Strides of an m x k operand stored row-major (or transposed). */
static void strides(int64_t rows, int64_t cols, int trans, int bcast,
                    int64_t *bs, int64_t *rs, int64_t *cs)
{
  *rs = trans ? 1 : cols + 1;   /* + 1: a non-dense leading dimension */
  *cs = trans ? rows + 2 : 1;
  *bs = bcast ? 0 : rows * cols + rows * 2 + cols + 5;
}

/* Dot2's step: returns s + x y, adding the rounding errors of the
   product and the sum (TwoProduct, TwoSum) to *err. */
static double dot2_step(double s, double x, double y, double *err)
{
  double p = x * y, ep = fma(x, y, -p);
  double t = s + p, z = t - s;
  *err += ((s - (t - z)) + (p - z)) + ep;
  return t;
}

#define DEFINE_CHECK(SFX, T, EPS)                                         \
  static int check_##SFX(Case cs)                                         \
  {                                                                       \
    int64_t a_bs, a_rs, a_cs, b_bs, b_rs, b_cs;                           \
    strides(cs.m, cs.k, cs.ta, cs.a_bcast, &a_bs, &a_rs, &a_cs);          \
    strides(cs.k, cs.n, cs.tb, cs.b_bcast, &b_bs, &b_rs, &b_cs);          \
    int64_t c_rs = cs.n + PAD, c_bs = cs.m * c_rs;                        \
    size_t alen = (size_t)(a_bs * cs.batch + (cs.m + 2) * (cs.k + 2));    \
    size_t blen = (size_t)(b_bs * cs.batch + (cs.k + 2) * (cs.n + 2));    \
    size_t clen = (size_t)(c_bs * cs.batch);                              \
    T *a = malloc(alen * sizeof(T)), *b = malloc(blen * sizeof(T));       \
    T *c = malloc(clen * sizeof(T)), *c0 = malloc(clen * sizeof(T));      \
    for (size_t i = 0; i < alen; i++)                                     \
      a[i] = (T)rnd();                                                    \
    for (size_t i = 0; i < blen; i++)                                     \
      b[i] = (T)rnd();                                                    \
    for (size_t i = 0; i < clen; i++)                                     \
      c[i] = c0[i] = (i % c_rs) >= (size_t)cs.n ? SENTINEL : (T)rnd();    \
    rlx_gemm_##SFX(cs.batch, cs.m, cs.n, cs.k, a, a_bs, a_rs, a_cs, b,    \
                   b_bs, b_rs, b_cs, c, c_bs, c_rs, cs.acc);              \
    int ok = 1;                                                           \
    for (int64_t bi = 0; bi < cs.batch; bi++)                             \
      for (int64_t i = 0; i < cs.m; i++)                                  \
        for (int64_t j = 0; j < cs.n + PAD; j++) {                        \
          size_t ci = (size_t)(bi * c_bs + i * c_rs + j);                 \
          if (j >= cs.n) {                                                \
            ok &= c[ci] == SENTINEL;                                      \
            continue;                                                     \
          }                                                               \
          double ref = cs.acc ? c0[ci] : 0, err = 0, mag = fabs(ref);     \
          for (int64_t p = 0; p < cs.k; p++) {                            \
            double x = a[bi * a_bs + i * a_rs + p * a_cs];                \
            double y = b[bi * b_bs + p * b_rs + j * b_cs];                \
            ref = dot2_step(ref, x, y, &err);                             \
            mag += fabs(x * y);                                           \
          }                                                               \
          double tol = 4.0 * (cs.k + 2) * EPS * mag + 1e-30;              \
          ok &= fabs(c[ci] - (ref + err)) <= tol;                         \
        }                                                                 \
    free(a), free(b), free(c), free(c0);                                  \
    return ok;                                                            \
  }

DEFINE_CHECK(f32, float, FLT_EPSILON)
DEFINE_CHECK(f64, double, DBL_EPSILON)

static const Case shapes[] = {
  {1, 1, 1, 1, 0, 0, 0, 0, 0},     {1, 1, 1, 1, 0, 0, 0, 0, 1},
  {1, 1, 37, 5, 0, 0, 0, 0, 0},    {1, 37, 1, 5, 0, 0, 0, 0, 0},
  {1, 1, 1, 300, 0, 0, 0, 0, 0},   {1, 7, 13, 17, 0, 0, 0, 0, 0},
  {1, 97, 101, 103, 0, 0, 0, 0, 0}, {1, 13, 31, 255, 0, 0, 0, 0, 0},
  {1, 14, 32, 256, 0, 0, 0, 0, 0}, {1, 15, 33, 257, 0, 0, 0, 0, 0},
  {1, 29, 65, 383, 0, 0, 0, 0, 0}, {1, 28, 64, 384, 0, 0, 0, 0, 1},
  {1, 43, 17, 385, 0, 0, 0, 0, 0}, {1, 5, 511, 769, 0, 0, 0, 0, 0},
  {1, 9, 513, 9, 0, 0, 0, 0, 0},   {1, 3, 1025, 7, 0, 0, 0, 0, 0},
  {1, 1009, 3, 5, 0, 0, 0, 0, 0},  {1, 2017, 2, 3, 0, 0, 0, 0, 1},
  {1, 61, 67, 71, 1, 0, 0, 0, 0},  {1, 61, 67, 71, 0, 1, 0, 0, 0},
  {1, 61, 67, 71, 1, 1, 0, 0, 1},  {1, 30, 770, 400, 1, 1, 0, 0, 0},
  {3, 19, 23, 29, 0, 0, 1, 0, 0},  {4, 19, 23, 29, 0, 0, 0, 1, 1},
  {5, 33, 40, 50, 1, 0, 0, 0, 0},  {2, 150, 260, 390, 0, 1, 1, 0, 0},
  {1, 0, 5, 5, 0, 0, 0, 0, 0},     {1, 5, 0, 5, 0, 0, 0, 0, 0},
  {1, 45, 50, 400, 1, 0, 0, 0, 1}, {1, 100, 10, 50, 1, 1, 0, 0, 0},
  {2, 29, 64, 33, 1, 0, 0, 1, 0},  {1, 28, 65, 500, 0, 0, 0, 0, 1},
  /* A^T of several pack_at groups (8 panels of 14, 12 or 6 rows) */
  {1, 130, 70, 400, 1, 0, 0, 0, 0}, {1, 128, 48, 300, 1, 0, 0, 0, 1},
};

static void run_shapes(int f64)
{
  for (size_t i = 0; i < sizeof shapes / sizeof *shapes; i++) {
    int ok = f64 ? check_f64(shapes[i]) : check_f32(shapes[i]);
    if (!ok)
      fprintf(stderr, "\n  %s isa=%s case %zu failed\n",
              f64 ? "f64" : "f32", rlx_gemm_isa(), i);
    CU_ASSERT(ok);
  }
}


static void test_shapes_f32(void)
{
  for (int t = 1; t <= 2; t++)
    for (int i = 0; i < N_TEST_ISAS; i++)
      if (test_isa_use(test_isas[i])) {
        rlx_set_num_threads(t);
        run_shapes(0);
      }
  rlx_gemm_select_isa(NULL);
  rlx_set_num_threads(0);
}

static void test_shapes_f64(void)
{
  for (int t = 1; t <= 2; t++)
    for (int i = 0; i < N_TEST_ISAS; i++)
      if (test_isa_use(test_isas[i])) {
        rlx_set_num_threads(t);
        run_shapes(1);
      }
  rlx_gemm_select_isa(NULL);
  rlx_set_num_threads(0);
}

static void test_k_zero(void)
{
  float a[4] = {1, 2, 3, 4}, c[6] = {1, 2, 3, 4, 5, 6};
  rlx_gemm_f32(1, 2, 3, 0, a, 0, 0, 1, a, 0, 3, 1, c, 0, 3, 1);
  CU_ASSERT(c[0] == 1 && c[5] == 6);
  rlx_gemm_f32(1, 2, 3, 0, a, 0, 0, 1, a, 0, 3, 1, c, 0, 3, 0);
  for (int i = 0; i < 6; i++)
    CU_ASSERT(c[i] == 0);
  double d[2] = {7, 8};
  rlx_gemm_f64(2, 1, 1, 0, NULL, 0, 0, 1, NULL, 0, 0, 1, d, 1, 1, 0);
  CU_ASSERT(d[0] == 0 && d[1] == 0);
}

/* Same inputs, 1..4 threads (and batch splits): identical bits. */
static void determinism_case(int64_t batch, int64_t m, int64_t n,
                             int64_t k)
{
  size_t al = (size_t)(batch * m * k), bl = (size_t)(batch * k * n);
  size_t cl = (size_t)(batch * m * n);
  float *a = malloc(al * 4), *b = malloc(bl * 4);
  float *c1 = malloc(cl * 4), *c2 = malloc(cl * 4);
  for (size_t i = 0; i < al; i++)
    a[i] = (float)rnd();
  for (size_t i = 0; i < bl; i++)
    b[i] = (float)rnd();
  for (int t = 1; t <= 4; t++) {
    float *c = t == 1 ? c1 : c2;
    rlx_set_num_threads(t);
    rlx_gemm_f32(batch, m, n, k, a, m * k, k, 1, b, k * n, n, 1, c, m * n,
                 n, 0);
    if (t > 1)
      CU_ASSERT(memcmp(c1, c2, cl * 4) == 0);
  }
  rlx_set_num_threads(0);
  free(a), free(b), free(c1), free(c2);
}

static void test_determinism(void)
{
  determinism_case(1, 200, 300, 800);
  determinism_case(1, 33, 1100, 390);
  determinism_case(1, 1500, 40, 300);
  determinism_case(3, 70, 90, 500);
  determinism_case(7, 5, 9, 11);
}

/* Several user threads running GEMMs at once (the pool is shared, so
   most calls run serially in their thread): results must match. */
typedef struct {
  const float *a, *b;
  const float *want;
  int bad;
} ConcJob;

static void *conc_thread(void *arg)
{
  ConcJob *cj = arg;
  float *c = malloc(120 * 140 * 4);
  for (int rep = 0; rep < 20; rep++) {
    rlx_gemm_f32(1, 120, 140, 500, cj->a, 0, 500, 1, cj->b, 0, 140, 1, c,
                 0, 140, 0);
    cj->bad += memcmp(c, cj->want, 120 * 140 * 4) != 0;
  }
  free(c);
  return NULL;
}

static void test_concurrent(void)
{
  float *a = malloc(120 * 500 * 4), *b = malloc(500 * 140 * 4);
  float *want = malloc(120 * 140 * 4);
  for (int i = 0; i < 120 * 500; i++)
    a[i] = (float)rnd();
  for (int i = 0; i < 500 * 140; i++)
    b[i] = (float)rnd();
  rlx_set_num_threads(2);
  rlx_gemm_f32(1, 120, 140, 500, a, 0, 500, 1, b, 0, 140, 1, want, 0, 140,
               0);
  pthread_t th[3];
  ConcJob jobs[3];
  for (int i = 0; i < 3; i++) {
    jobs[i] = (ConcJob){a, b, want, 0};
    CU_ASSERT_FATAL(pthread_create(&th[i], NULL, conc_thread, &jobs[i]) ==
                    0);
  }
  for (int i = 0; i < 3; i++) {
    pthread_join(th[i], NULL);
    CU_ASSERT_EQUAL(jobs[i].bad, 0);
  }
  rlx_set_num_threads(0);
  free(a), free(b), free(want);
}

/* Complex: reference in double, interleaved (re, im). */
static void test_c64(void)
{
  int64_t m = 13, n = 21, k = 17;
  float *a = malloc(2 * m * k * 4), *b = malloc(2 * k * n * 4);
  float *c = malloc(2 * m * n * 4), *c0 = malloc(2 * m * n * 4);
  for (int64_t i = 0; i < 2 * m * k; i++)
    a[i] = (float)rnd();
  for (int64_t i = 0; i < 2 * k * n; i++)
    b[i] = (float)rnd();
  for (int64_t i = 0; i < 2 * m * n; i++)
    c[i] = c0[i] = (float)rnd();
  for (int acc = 0; acc < 2; acc++) {
    memcpy(c, c0, 2 * m * n * 4);
    /* B read transposed: B(p,j) at b[j*k + p]. */
    rlx_gemm_c64(1, m, n, k, a, 0, k, 1, b, 0, 1, k, c, 0, n, acc);
    int ok = 1;
    for (int64_t i = 0; i < m; i++)
      for (int64_t j = 0; j < n; j++) {
        double re = acc ? c0[2 * (i * n + j)] : 0;
        double im = acc ? c0[2 * (i * n + j) + 1] : 0;
        for (int64_t p = 0; p < k; p++) {
          double ar = a[2 * (i * k + p)], ai = a[2 * (i * k + p) + 1];
          double br = b[2 * (j * k + p)], bi = b[2 * (j * k + p) + 1];
          re += ar * br - ai * bi;
          im += ar * bi + ai * br;
        }
        ok &= fabs(c[2 * (i * n + j)] - re) < 1e-4;
        ok &= fabs(c[2 * (i * n + j) + 1] - im) < 1e-4;
      }
    CU_ASSERT(ok);
  }
  free(a), free(b), free(c), free(c0);
}

/* Every kernel ISA performs the same per-element operations with the
   same KC, so the bits agree across ISAs: each against the portable
   kernels' result.  M = 45 uses AVX-512's 14-row tiles, M = 128 its
   12-row table (gemm.c: pick_cfg_f32). */
static void isa_identical_m(int M)
{
  enum { N = 70, K = 800 };
  float *a = malloc(M * K * 4), *b = malloc(K * N * 4);
  float *c0 = malloc(M * N * 4), *c = malloc(M * N * 4);
  float *e0 = malloc(M * N * 4), *e = malloc(M * N * 4);
  float *g0 = malloc(M * N * 4), *g = malloc(M * N * 4);
  double *ad = malloc(M * K * 8), *bd = malloc(K * N * 8);
  double *d0 = malloc(M * N * 8), *d = malloc(M * N * 8);
  for (int i = 0; i < M * K; i++)
    ad[i] = a[i] = (float)rnd();
  for (int i = 0; i < K * N; i++)
    bd[i] = b[i] = (float)rnd();
  for (int i = 0; i < N_TEST_ISAS; i++) {
    if (!test_isa_use(test_isas[i]))
      continue;
    float *cf = i == 0 ? c0 : c, *ef = i == 0 ? e0 : e;
    float *gf = i == 0 ? g0 : g;
    double *df = i == 0 ? d0 : d;
    for (int j = 0; j < M * N; j++)
      gf[j] = ef[j] = cf[j] = (float)(df[j] = j * 0.25);
    rlx_gemm_f32(1, M, N, K, a, 0, K, 1, b, 0, 1, K, cf, 0, N, 1);
    /* B row-major (K x N, the same values read as another matrix):
       the packing of untransposed B panels */
    rlx_gemm_f32(1, M, N, K, a, 0, K, 1, b, 0, N, 1, ef, 0, N, 1);
    /* and A stored transposed (K x M): the packing of A^T panels */
    rlx_gemm_f32(1, M, N, K, a, 0, 1, M, b, 0, N, 1, gf, 0, N, 1);
    rlx_gemm_f64(1, M, N, K, ad, 0, 1, M, bd, 0, N, 1, df, 0, N, 0);
    if (i > 0) {
      CU_ASSERT(memcmp(c0, c, M * N * 4) == 0);
      CU_ASSERT(memcmp(e0, e, M * N * 4) == 0);
      CU_ASSERT(memcmp(g0, g, M * N * 4) == 0);
      CU_ASSERT(memcmp(d0, d, M * N * 8) == 0);
    }
  }
  rlx_gemm_select_isa(NULL);
  free(a), free(b), free(c0), free(c), free(e0), free(e), free(g0),
      free(g), free(ad),
      free(bd), free(d0), free(d);
}

/* A batch sharing B whose A and C rows run on from one element to the
   next is computed as one GEMM of batch * m rows (gemm.c fold_batch):
   the bits of per-element calls, for A stored both ways, f32 and f64,
   at 1 and 3 threads. */
static void test_batch_fold(void)
{
  enum { NB = 8, N = 70, K = 100 };
  static const int ms[] = {64, 13};
  for (int mi = 0; mi < 2; mi++)
    for (int ta = 0; ta < 2; ta++)
      for (int th = 1; th <= 3; th += 2) {
        int M = ms[mi], R = NB * M;
        float *a = malloc(R * K * 4), *b = malloc(K * N * 4);
        float *c = malloc(R * N * 4), *c1 = malloc(R * N * 4);
        double *ad = malloc(R * K * 8), *bd = malloc(K * N * 8);
        double *d = malloc(R * N * 8), *d1 = malloc(R * N * 8);
        for (int i = 0; i < R * K; i++)
          ad[i] = a[i] = (float)rnd();
        for (int i = 0; i < K * N; i++)
          bd[i] = b[i] = (float)rnd();
        /* A row r = bi * M + i at r * K (ta = 0) or at r with column
           stride R (ta = 1: A^T, K x R) */
        int64_t rs = ta ? 1 : K, cs = ta ? R : 1;
        rlx_set_num_threads(th);
        rlx_gemm_f32(NB, M, N, K, a, M * rs, rs, cs, b, 0, N, 1, c,
                     (int64_t)M * N, N, 0);
        rlx_gemm_f64(NB, M, N, K, ad, M * rs, rs, cs, bd, 0, N, 1, d,
                     (int64_t)M * N, N, 0);
        for (int bi = 0; bi < NB; bi++) {
          rlx_gemm_f32(1, M, N, K, a + bi * M * rs, 0, rs, cs, b, 0, N, 1,
                       c1 + bi * M * N, 0, N, 0);
          rlx_gemm_f64(1, M, N, K, ad + bi * M * rs, 0, rs, cs, bd, 0, N,
                       1, d1 + bi * M * N, 0, N, 0);
        }
        CU_ASSERT(memcmp(c, c1, (size_t)R * N * 4) == 0);
        CU_ASSERT(memcmp(d, d1, (size_t)R * N * 8) == 0);
        free(a), free(b), free(c), free(c1), free(ad), free(bd), free(d),
            free(d1);
      }
  rlx_set_num_threads(0);
}

static void test_isa_identical(void)
{
  isa_identical_m(45);
  isa_identical_m(128);
}

static void test_isa_select(void)
{
  CU_ASSERT(rlx_gemm_select_isa("scalar") == RLX_OK);
  CU_ASSERT_STRING_EQUAL(rlx_gemm_isa(), "scalar");
  CU_ASSERT(rlx_gemm_select_isa("no-such-isa") == RLX_ERR_INVALID);
  CU_ASSERT_STRING_EQUAL(rlx_gemm_isa(), "scalar");
  CU_ASSERT(rlx_gemm_select_isa(NULL) == RLX_OK);
}

/* RLX_ISA hides the wider ISAs, for the default and for explicit
   selection alike (read at every selection, so it can change here). */
static void test_isa_env(void)
{
  const char *saved = getenv("RLX_ISA");
  char *keep = saved ? strdup(saved) : NULL;
  setenv("RLX_ISA", "scalar", 1);
  CU_ASSERT(rlx_gemm_select_isa(NULL) == RLX_OK);
  CU_ASSERT_STRING_EQUAL(rlx_gemm_isa(), "scalar");
  CU_ASSERT(rlx_gemm_select_isa("avx2") == RLX_ERR_INVALID);
  CU_ASSERT(rlx_gemm_select_isa("avx512") == RLX_ERR_INVALID);
  setenv("RLX_ISA", "avx2", 1);
  CU_ASSERT(rlx_gemm_select_isa("avx512") == RLX_ERR_INVALID);
  CU_ASSERT(rlx_gemm_select_isa(NULL) == RLX_OK);
  CU_ASSERT(strcmp(rlx_gemm_isa(), "avx512") != 0);
  /* the best the CPU has, when it has AVX2 */
  if (rlx_gemm_select_isa("avx2") == RLX_OK) {
    CU_ASSERT(rlx_gemm_select_isa(NULL) == RLX_OK);
    CU_ASSERT_STRING_EQUAL(rlx_gemm_isa(), "avx2");
  }
  setenv("RLX_ISA", "avx512", 1); /* no wider than the CPU's best */
  CU_ASSERT(rlx_gemm_select_isa(NULL) == RLX_OK);
  if (keep)
    setenv("RLX_ISA", keep, 1);
  else
    unsetenv("RLX_ISA");
  free(keep);
  CU_ASSERT(rlx_gemm_select_isa(NULL) == RLX_OK);
}

int main(void)
{
  srand(12345);
  if (CU_initialize_registry() != CUE_SUCCESS)
    return 1;
  CU_pSuite s = CU_add_suite("runtime_gemm", NULL, NULL);
  CU_add_test(s, "shapes_f32", test_shapes_f32);
  CU_add_test(s, "shapes_f64", test_shapes_f64);
  CU_add_test(s, "k_zero", test_k_zero);
  CU_add_test(s, "determinism", test_determinism);
  CU_add_test(s, "concurrent", test_concurrent);
  CU_add_test(s, "c64", test_c64);
  CU_add_test(s, "batch_fold", test_batch_fold);
  CU_add_test(s, "isa_identical", test_isa_identical);
  CU_add_test(s, "isa_select", test_isa_select);
  CU_add_test(s, "isa_env", test_isa_env);
  CU_basic_set_mode(CU_BRM_VERBOSE);
  CU_basic_run_tests();
  unsigned fails = CU_get_number_of_failures();
  CU_cleanup_registry();
  return fails != 0;
}
