/* test_runtime_qgemm.c -- CUnit tests of the int8 kernels behind
 * q_matmul and q_conv2d (rlx_q_*, runtime/qgemm*.c).
 *
 * The reference is direct int64 loops over the definition (language.md
 * q_matmul): acc = bias + sum (x - x_zp)(w - w_zp), wrapped to i32,
 * times mult in double, rounded half to even by hand (floor and a tie
 * test, not rint), plus out_zp, saturated to i8.  Every case must match
 * it exactly on every int8 kernel this CPU and build have (rlx_q_isa
 * names: the portable one, AVX2, AVX-VNNI, AVX-512 VNNI, NEON, NEON
 * sdot; the others are skipped with a line on stderr), at 1, 2 and 3
 * threads.  Sizes are odd (M, N, K not
 * multiples of the 8 x 32 tile or of 4), zero points reach -128 and
 * 127, mult makes a share of the results saturate, a tie case makes
 * every accumulator a multiple of 1/2 (.5 ties both ways), and a
 * wrap case puts bias near INT32_MAX; mult 3e30 and 1e-12 take the
 * products far beyond i32 and to below one half.  Extreme operands (x
 * and w all -128 or 127) make the kernels' pair sums exceed i16 (2 * 255
 * * -128 in vpmaddubsw, 2 * -128 * -128 in smlal): a kernel summing
 * pairs in i16 would saturate or wrap; one such case has identical rows
 * and a bias cancelling each column's sum, so that with mult 1 any error
 * of 1 in a sum shows.  Outputs carry guard bytes, and the scratch
 * starts as 0xA5 bytes.  The convolution sweep covers
 * stride, padding (cells hold x_zp), dilation, groups, depthwise and
 * the in-place 1x1 path.
 */
#include <CUnit/Basic.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "runtime/rlxrt.h"
#include "tests/unit/isa.h"

static uint64_t rng_state = 0x9e3779b97f4a7c15ull;

static uint32_t rnd(void)
{
  rng_state = rng_state * 6364136223846793005ull + 1442695040888963407ull;
  return (uint32_t)(rng_state >> 33);
}

static int8_t rnd8(void) { return (int8_t)(rnd() & 0xff); }

static int8_t extreme(void) { return rnd() & 1 ? 127 : -128; }

/* Round half to even without rint. */
static double round_even(double r)
{
  double f = floor(r), d = r - f;
  if (d > 0.5 || (d == 0.5 && fmod(f, 2.0) != 0))
    f += 1;
  return f;
}

/* mult: the f32 attribute, or its product with a per-column f32 (exact
   in double). */
static int8_t ref_out(int64_t acc, double mult, int32_t ozp)
{
  int32_t a32 = (int32_t)(uint32_t)(uint64_t)acc; /* wrap mod 2^32 */
  double r = round_even((double)a32 * mult) + ozp;
  return (int8_t)(r < -128 ? -128 : r > 127 ? 127 : r);
}

typedef struct {
  float mult;
  int32_t xz, wz, oz;
} QP;

enum { GUARD = 64 };

/* The int8 kernels and the GEMM dispatch level each needs, the
   portable reference first. */
static const char *const q_isas[][2] = {
    {"scalar", "scalar"},  {"avx2", "avx2"}, {"avxvnni", "avx2"},
    {"avx512vnni", "avx512"}, {"neon", "neon"}, {"neondot", "neon"}};
enum { N_Q_ISAS = sizeof q_isas / sizeof q_isas[0] };
static int q_tested[N_Q_ISAS];

/* Runs fn under each kernel and thread count; compares with ref. */
typedef void (*Runner)(const void *ctx, int8_t *y, void *ws);

static int check_all(Runner fn, const void *ctx, const int8_t *ref,
                     int64_t count, int64_t ws_bytes)
{
  int bad = 0;
  int8_t *y = malloc((size_t)count + 2 * GUARD);
  char *ws = aligned_alloc(64, (size_t)(ws_bytes + 63) / 64 * 64 + 64);
  for (int i = 0; i < N_Q_ISAS; i++) {
    if (rlx_gemm_select_isa(q_isas[i][1]) != RLX_OK ||
        rlx_q_select_isa(q_isas[i][0]) != RLX_OK) {
      test_isa_skip(q_isas[i][0]);
      continue;
    }
    q_tested[i] = strcmp(rlx_q_isa(), q_isas[i][0]) == 0;
    bad += !q_tested[i];
    for (int t = 1; t <= 3; t++) {
      rlx_set_num_threads(t);
      memset(y, 0x5a, (size_t)count + 2 * GUARD);
      memset(ws, 0xa5, (size_t)ws_bytes);
      fn(ctx, y + GUARD, ws);
      for (int64_t e = 0; e < GUARD; e++)
        bad += y[e] != 0x5a || y[GUARD + count + e] != 0x5a;
      for (int64_t e = 0; e < count; e++)
        bad += y[GUARD + e] != ref[e];
    }
  }
  rlx_q_select_isa(NULL);
  rlx_gemm_select_isa(NULL);
  rlx_set_num_threads(0);
  free(y);
  free(ws);
  return bad;
}

/* ---- q_matmul ---- */

typedef struct {
  int64_t m, n, k;
  const int8_t *x, *w;
  const int32_t *bias;
  QP q;
  const float *mults; /* per column, or NULL */
} MM;

static void run_mm(const void *ctx, int8_t *y, void *ws)
{
  const MM *c = ctx;
  rlx_q_matmul(c->m, c->n, c->k, c->x, c->w, c->bias, c->q.mult, c->mults,
               c->q.xz, c->q.wz, c->q.oz, y, ws);
}

/* kind 0: random; 1: ties (even x, mult 1/4); 2: bias wraps i32;
   3: random with per-column multipliers (ties too: multiples of 1/8);
   4: x and w all -128 or 127; 5: as 4 with identical rows of x and a
   bias that cancels the sums but for -100..100. */
static int mm_case(int64_t m, int64_t n, int64_t k, QP q, int kind)
{
  int8_t *x = malloc((size_t)(m * k + 1)), *w = malloc((size_t)(k * n + 1));
  int32_t *bias = malloc((size_t)n * 4);
  float *mults = malloc((size_t)n * 4 + 4);
  int8_t *ref = malloc((size_t)(m * n));
  for (int64_t j = 0; j < n; j++)
    mults[j] = (float)(1 + rnd() % 16) / 8;
  for (int64_t i = 0; i < m * k; i++)
    x[i] = kind == 5 && i >= k ? x[i % k]
           : kind >= 4         ? extreme()
           : kind == 1         ? (int8_t)(rnd8() & ~1)
                               : rnd8();
  for (int64_t i = 0; i < k * n; i++)
    w[i] = kind >= 4 ? extreme() : rnd8();
  for (int64_t j = 0; j < n; j++) {
    int64_t sum = 0; /* row 0's */
    for (int64_t p = 0; p < k; p++)
      sum += (int64_t)(x[p] - q.xz) * (w[p * n + j] - q.wz);
    bias[j] = kind == 5   ? (int32_t)(-sum + (int32_t)(rnd() % 201) - 100)
              : kind == 2 ? (int32_t)(INT32_MAX - (int32_t)(rnd() % 1000))
              : kind == 1 ? (int32_t)(rnd() % 4001) - 2000
                          : (int32_t)(rnd() % 200001) - 100000;
  }
  for (int64_t i = 0; i < m; i++)
    for (int64_t j = 0; j < n; j++) {
      int64_t acc = bias[j];
      for (int64_t p = 0; p < k; p++)
        acc += (int64_t)(x[i * k + p] - q.xz) * (w[p * n + j] - q.wz);
      ref[i * n + j] = ref_out(
          acc, (double)q.mult * (kind == 3 ? mults[j] : 1), q.oz);
    }
  MM c = {m, n, k, x, w, bias, q, kind == 3 ? mults : NULL};
  int bad = check_all(run_mm, &c, ref, m * n,
                      rlx_q_matmul_scratch_bytes(m, n, k));
  if (bad)
    fprintf(stderr, "q_matmul %lldx%lldx%lld kind %d: %d bad\n",
            (long long)m, (long long)n, (long long)k, kind, bad);
  free(x);
  free(w);
  free(bias);
  free(mults);
  free(ref);
  return bad;
}

static void test_matmul(void)
{
  static const int64_t sz[][3] = {
      {1, 1, 1},   {3, 5, 7},    {8, 32, 4},   {9, 33, 5},  {17, 31, 63},
      {64, 64, 64}, {13, 100, 130}, {32, 10, 64}, {2, 70, 1}, {5, 6, 0},
      {40, 65, 257}, {130, 47, 33}};
  for (size_t s = 0; s < sizeof sz / sizeof sz[0]; s++) {
    int64_t m = sz[s][0], n = sz[s][1], k = sz[s][2];
    /* outputs spread over about +-300 before saturation */
    float mult = (float)(150.0 / (3000.0 * sqrt((double)k + 1) + 1e5));
    QP qs[] = {{mult, 0, 0, 0}, {mult, 3, -5, 7}, {mult, -128, 127, -128},
               {mult, 127, -128, 127}};
    for (size_t i = 0; i < 4; i++)
      CU_ASSERT(mm_case(m, n, k, qs[i], 0) == 0);
    /* x even, x_zp even -> acc even; bias odd/even; mult 0.25 gives
       .5 ties (acc = 2 mod 4) */
    CU_ASSERT(mm_case(m, n, k, (QP){0.25f, 2, 1, 0}, 1) == 0);
    CU_ASSERT(mm_case(m, n, k, (QP){0.25f, -4, -3, 5}, 1) == 0);
    CU_ASSERT(mm_case(m, n, k, (QP){1e-9f, 1, 2, 0}, 2) == 0);
    CU_ASSERT(mm_case(m, n, k, (QP){0.002f, 3, -1, -128}, 3) == 0);
    /* products far beyond i32 and below one half */
    CU_ASSERT(mm_case(m, n, k, (QP){3e30f, -7, 9, 100}, 0) == 0);
    CU_ASSERT(mm_case(m, n, k, (QP){1e-12f, 0, 0, -100}, 0) == 0);
    /* extreme operands: sums with a standard deviation of about 16384
       sqrt(k), about 50 after mult; then every sum cancelled */
    float xmult = (float)(50.0 / (16384.0 * sqrt((double)k + 1)));
    CU_ASSERT(mm_case(m, n, k, (QP){xmult, 0, 0, 0}, 4) == 0);
    CU_ASSERT(mm_case(m, n, k, (QP){xmult, 3, -5, 7}, 4) == 0);
    CU_ASSERT(mm_case(m, n, k, (QP){1.0f, 0, 0, 0}, 5) == 0);
    CU_ASSERT(mm_case(m, n, k, (QP){1.0f, -128, 127, -3}, 5) == 0);
  }
}

/* ---- q_conv2d ---- */

typedef struct {
  rlx_conv_geom g;
  const int8_t *x, *w;
  const int32_t *bias;
  QP q;
} CV;

static void run_cv(const void *ctx, int8_t *y, void *ws)
{
  const CV *c = ctx;
  rlx_q_conv2d(&c->g, c->x, c->w, c->bias, c->q.mult, c->q.xz, c->q.wz,
               c->q.oz, y, ws);
}

static int conv_case(rlx_conv_geom g, QP q)
{
  g.oh = (g.h + 2 * g.ph - g.dh * (g.kh - 1) - 1) / g.sh + 1;
  g.ow = (g.w + 2 * g.pw - g.dw * (g.kw - 1) - 1) / g.sw + 1;
  int64_t cg = g.c / g.groups, cog = g.co / g.groups;
  int64_t nx = g.n * g.c * g.h * g.w, nw = g.co * cg * g.kh * g.kw,
          ny = g.n * g.co * g.oh * g.ow;
  int8_t *x = malloc((size_t)nx), *w = malloc((size_t)nw);
  int8_t *ref = malloc((size_t)ny);
  int32_t *bias = malloc((size_t)g.co * 4);
  for (int64_t i = 0; i < nx; i++)
    x[i] = rnd8();
  for (int64_t i = 0; i < nw; i++)
    w[i] = rnd8();
  for (int64_t i = 0; i < g.co; i++)
    bias[i] = (int32_t)(rnd() % 20001) - 10000;
  for (int64_t b = 0; b < g.n; b++)
    for (int64_t o = 0; o < g.co; o++)
      for (int64_t oh = 0; oh < g.oh; oh++)
        for (int64_t ow = 0; ow < g.ow; ow++) {
          int64_t acc = bias[o], gi = o / cog;
          for (int64_t c = 0; c < cg; c++)
            for (int64_t i = 0; i < g.kh; i++)
              for (int64_t j = 0; j < g.kw; j++) {
                int64_t ih = oh * g.sh - g.ph + i * g.dh,
                        iw = ow * g.sw - g.pw + j * g.dw;
                int xv = ih < 0 || ih >= g.h || iw < 0 || iw >= g.w
                             ? q.xz
                             : x[((b * g.c + gi * cg + c) * g.h + ih) * g.w +
                                 iw];
                acc += (int64_t)(xv - q.xz) *
                       (w[((o * cg + c) * g.kh + i) * g.kw + j] - q.wz);
              }
          ref[((b * g.co + o) * g.oh + oh) * g.ow + ow] =
              ref_out(acc, q.mult, q.oz);
        }
  CV c = {g, x, w, bias, q};
  int bad = check_all(run_cv, &c, ref, ny, rlx_q_conv2d_scratch_bytes(&g));
  if (bad)
    fprintf(stderr, "q_conv2d c%lld co%lld k%lldx%lld g%lld: %d bad\n",
            (long long)g.c, (long long)g.co, (long long)g.kh,
            (long long)g.kw, (long long)g.groups, bad);
  free(x);
  free(w);
  free(ref);
  free(bias);
  return bad;
}

static void test_conv(void)
{
  /* n c h w co kh kw (oh ow) sh sw ph pw dh dw groups */
  static const rlx_conv_geom gs[] = {
      {2, 3, 6, 5, 4, 3, 3, 0, 0, 1, 1, 0, 0, 1, 1, 1},
      {1, 2, 8, 7, 3, 3, 3, 0, 0, 2, 2, 1, 1, 1, 1, 1},
      {1, 2, 3, 4, 2, 2, 3, 0, 0, 1, 1, 3, 2, 1, 1, 1},
      {1, 2, 9, 8, 3, 3, 2, 0, 0, 1, 1, 0, 1, 2, 2, 1},
      {2, 4, 6, 5, 6, 3, 3, 0, 0, 1, 2, 1, 0, 1, 1, 2},
      {1, 3, 6, 6, 6, 3, 3, 0, 0, 1, 1, 1, 1, 1, 1, 3},
      {2, 5, 7, 9, 11, 1, 1, 0, 0, 1, 1, 0, 0, 1, 1, 1},
      {1, 16, 12, 12, 40, 3, 3, 0, 0, 1, 1, 1, 1, 1, 1, 1}};
  for (size_t i = 0; i < sizeof gs / sizeof gs[0]; i++) {
    CU_ASSERT(conv_case(gs[i], (QP){0.003f, 0, 0, 0}) == 0);
    CU_ASSERT(conv_case(gs[i], (QP){0.002f, 5, -3, 9}) == 0);
    CU_ASSERT(conv_case(gs[i], (QP){0.004f, -128, 127, -7}) == 0);
  }
}

int main(void)
{
  if (CU_initialize_registry() != CUE_SUCCESS)
    return 1;
  CU_pSuite s = CU_add_suite("runtime_qgemm", NULL, NULL);
  CU_add_test(s, "q_matmul vs int64 reference, ISAs x threads",
              test_matmul);
  CU_add_test(s, "q_conv2d vs int64 reference, ISAs x threads",
              test_conv);
  CU_basic_set_mode(CU_BRM_VERBOSE);
  CU_basic_run_tests();
  unsigned fails = CU_get_number_of_failures();
  printf("q kernels tested:");
  for (int i = 0; i < N_Q_ISAS; i++)
    if (q_tested[i])
      printf(" %s", q_isas[i][0]);
  printf("; default: %s\n", rlx_q_isa());
  CU_cleanup_registry();
  return fails ? 1 : 0;
}
