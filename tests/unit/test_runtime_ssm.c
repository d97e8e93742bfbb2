/* test_runtime_ssm.c -- CUnit tests of the fused sequence-block kernels
 * (runtime/ssm/) on every kernel ISA the machine has (tests/unit/isa.h;
 * the portable loops first), at 1, 2 and 3 threads (the bits must not
 * depend on the thread count), against double-precision loops written
 * from the recurrences with the float32 bar
 *   |got - ref| <= 1e-4 |ref| + 1e-5 max(1, max |ref|):
 *   - gated_delta_net f32: every SIMD kernel (second pass fused into the
 *     next step's first) gives the bits of the portable loops; state
 *     sizes 1, 5, 16, 33, 40, 64 and 100 (full and masked column
 *     sweeps of every vector width);
 *   - selective_scan f32: every ISA within the bar (state sizes 3, 16:
 *     the registers path, and 40; channel counts that are not multiples
 *     of 16 or of a vector); the SIMD kernels give the same bits as each
 *     other (not as the portable loops: libm expf), also where exp
 *     underflows to denormals (a rate of -150), is 0 (a rate of -inf:
 *     0, not NaN) or overflows (a rate of +200: compared bitwise only),
 *     and with rates in [-150, 1.2) (delta a log2(e) in about
 *     [-130, 1]: AVX2 steps on its fast exp, every product in
 *     (-123, 1/2), and on its general one; a product in (1/2, 1), whose
 *     exp's fraction is rounded down; a rate of -1e-30), also in whole
 *     16-channel blocks without special rates (AVX2 runs a whole block
 *     in one time loop and checks the range per chunk of steps: chunks
 *     all in range, and chunks that take the general exp).
 * Outputs and the scratch start as NaN bytes.
 */
#include <CUnit/Basic.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "runtime/rlxrt.h"
#include "tests/unit/isa.h"

static float *uni(int64_t count, float lo, float hi)
{
  float *x = malloc(sizeof(float) * (size_t)(count > 0 ? count : 1));
  for (int64_t i = 0; i < count; i++)
    x[i] = lo + (hi - lo) * (float)rand() / (float)RAND_MAX;
  return x;
}

/* The float32 bar, element by element; returns the failures. */
static int64_t check_bar(const float *got, const double *ref, int64_t count)
{
  double mx = 1;
  for (int64_t i = 0; i < count; i++)
    mx = fmax(mx, fabs(ref[i]));
  int64_t bad = 0;
  for (int64_t i = 0; i < count; i++)
    bad += !(fabs(got[i] - ref[i]) <= 1e-4 * fabs(ref[i]) + 1e-5 * mx);
  return bad;
}

/* language.md gated_delta_net in double: S = exp(g) S;
 * S += k ((v - S^T k) beta)^T; o = S^T q / sqrt(n). */
static void gdn_ref(int64_t b, int64_t s, int64_t H, int64_t n,
                    const float *q, const float *k, const float *v,
                    const float *g, const float *beta, double *o)
{
  double *S = malloc(sizeof(double) * (size_t)(n * n));
  double *d = malloc(sizeof(double) * (size_t)n);
  for (int64_t bh = 0; bh < b * H; bh++) {
    memset(S, 0, sizeof(double) * (size_t)(n * n));
    for (int64_t t = 0; t < s; t++) {
      int64_t r = ((bh / H) * s + t) * H + bh % H;
      const float *qt = q + r * n, *kt = k + r * n, *vt = v + r * n;
      for (int64_t i = 0; i < n * n; i++)
        S[i] *= exp((double)g[r]);
      for (int64_t j = 0; j < n; j++) {
        double sk = 0;
        for (int64_t i = 0; i < n; i++)
          sk += S[i * n + j] * kt[i];
        d[j] = (vt[j] - sk) * beta[r];
      }
      for (int64_t i = 0; i < n; i++)
        for (int64_t j = 0; j < n; j++)
          S[i * n + j] += kt[i] * d[j];
      for (int64_t j = 0; j < n; j++) {
        double y = 0;
        for (int64_t i = 0; i < n; i++)
          y += S[i * n + j] * qt[i];
        o[r * n + j] = y / sqrt((double)n);
      }
    }
  }
  free(S);
  free(d);
}

static void test_gdn(void)
{
  static const int64_t shapes[][4] = {{2, 9, 3, 64}, {1, 7, 2, 100},
                                      {2, 6, 2, 40}, {1, 8, 3, 33},
                                      {2, 5, 2, 16}, {1, 6, 2, 5},
                                      {2, 4, 1, 1}};
  srand(7);
  for (size_t si = 0; si < sizeof shapes / sizeof shapes[0]; si++) {
    int64_t b = shapes[si][0], s = shapes[si][1], H = shapes[si][2];
    int64_t n = shapes[si][3], e = b * s * H * n;
    int64_t ns = rlx_gated_delta_net_scratch_bytes(b, H, n, 4);
    float *q = uni(e, -1, 1), *k = uni(e, -0.5f, 0.5f), *v = uni(e, -1, 1);
    float *g = uni(b * s * H, -0.7f, -0.05f);
    float *beta = uni(b * s * H, 0.1f, 0.9f);
    float *first = uni(e, 0, 0), *o = uni(e, 0, 0);
    double *ref = malloc(sizeof(double) * (size_t)e);
    void *scr = rlx_alloc((size_t)ns);
    gdn_ref(b, s, H, n, q, k, v, g, beta, ref);
    for (int isa = 0; isa < N_TEST_ISAS; isa++) {
      if (!test_isa_use(test_isas[isa])) /* scalar first: the reference */
        continue;
      for (int th = 1; th <= 3; th++) {
        rlx_set_num_threads(th);
        memset(o, 0xff, sizeof(float) * (size_t)e);
        memset(scr, 0xff, (size_t)ns);
        rlx_gated_delta_net_f32(b, s, H, n, q, k, v, g, beta, o, scr);
        if (isa == 0 && th == 1)
          memcpy(first, o, sizeof(float) * (size_t)e);
        else
          CU_ASSERT_EQUAL(memcmp(first, o, sizeof(float) * (size_t)e), 0);
      }
    }
    CU_ASSERT_EQUAL(check_bar(first, ref, e), 0);
    rlx_gemm_select_isa(NULL);
    rlx_set_num_threads(0);
    float *bufs[] = {q, k, v, g, beta, first, o};
    for (int i = 0; i < 7; i++)
      free(bufs[i]);
    free(ref);
    rlx_free(scr);
  }
}

/* language.md selective_scan in double. */
static void scan_ref(int64_t b, int64_t s, int64_t h, int64_t n,
                     const float *x, const float *dl, const float *a,
                     const float *bm, const float *cm, double *y)
{
  double *st = malloc(sizeof(double) * (size_t)n);
  for (int64_t bi = 0; bi < b; bi++)
    for (int64_t c = 0; c < h; c++) {
      memset(st, 0, sizeof(double) * (size_t)n);
      for (int64_t t = 0; t < s; t++) {
        int64_t r = bi * s + t;
        double d = dl[r * h + c], acc = 0;
        for (int64_t k = 0; k < n; k++) {
          st[k] = exp(d * a[c * n + k]) * st[k] +
                  d * x[r * h + c] * bm[r * n + k];
          acc += st[k] * cm[r * n + k];
        }
        y[r * h + c] = acc;
      }
    }
  free(st);
}

/* Runs the scan on test_isas[isa] at 1, 2 and 3 threads into y (the
   1-thread result; the others must equal it); 0 if that ISA is absent. */
static int scan_isa(int isa, int64_t b, int64_t s, int64_t h, int64_t n,
                    const float *x, const float *dl, const float *a,
                    const float *bm, const float *cm, float *y, float *y2,
                    void *scr, int64_t ns)
{
  if (!test_isa_use(test_isas[isa]))
    return 0;
  for (int th = 1; th <= 3; th++) {
    rlx_set_num_threads(th);
    memset(y2, 0xff, sizeof(float) * (size_t)(b * s * h));
    memset(scr, 0xff, (size_t)ns);
    rlx_selective_scan_f32(b, s, h, n, x, dl, a, bm, cm, y2, scr);
    if (th == 1)
      memcpy(y, y2, sizeof(float) * (size_t)(b * s * h));
    else
      CU_ASSERT_EQUAL(memcmp(y, y2, sizeof(float) * (size_t)(b * s * h)), 0);
  }
  return 1;
}

static void test_selective_scan(void)
{
  static const int64_t shapes[][4] = {{2, 40, 37, 16}, {1, 25, 20, 40},
                                      {1, 9, 9, 3},    {2, 40, 24, 16},
                                      {2, 45, 32, 16}, {1, 37, 48, 5}};
  srand(11);
  for (size_t si = 0; si < sizeof shapes / sizeof shapes[0]; si++) {
    int64_t b = shapes[si][0], s = shapes[si][1], h = shapes[si][2];
    int64_t n = shapes[si][3], e = b * s * h;
    int64_t ns = rlx_selective_scan_scratch_bytes(b, h, n, 4);
    size_t bytes = sizeof(float) * (size_t)e;
    float *x = uni(e, -1, 1), *dl = uni(e, 0.05f, 0.6f);
    float *a = uni(h * n, -2, -0.2f);
    if (si >= 3) { /* rates in [-150, 1.2): delta a log2(e) in about */
      for (int64_t i = 0; i < h * n; i++) /* [-130, 1], AVX2 steps on */
        a[i] = -150 + 151.2f * (a[i] + 2) / 1.8f; /* both its paths */
      a[9 * n + 1] = -1e-30f; /* 2^(tiny - 1): w - floor(w) exact */
      a[10 * n + 4] = 0.9f;   /* delta a log2(e) in (1/2, 1): rounded down */
    }
    float *bm = uni(b * s * n, -1, 1), *cm = uni(b * s * n, -1, 1);
    float *y = uni(e, 0, 0), *y2 = uni(e, 0, 0), *simd = uni(e, 0, 0);
    double *ref = malloc(sizeof(double) * (size_t)e);
    void *scr = rlx_alloc((size_t)ns);
    a[3 * n + 2] = -INFINITY; /* channel 3, state 2: forgets every step */
    a[5 * n + n - 1] = -150;  /* channel 5: exps of 2^-130 to 2^-11 */
    scan_ref(b, s, h, n, x, dl, a, bm, cm, ref);
    int simd_isas = 0;
    for (int isa = 0; isa < N_TEST_ISAS; isa++) {
      if (!scan_isa(isa, b, s, h, n, x, dl, a, bm, cm, y, y2, scr, ns))
        continue;
      CU_ASSERT_EQUAL(check_bar(y, ref, e), 0);
      if (isa > 0 && simd_isas++ == 0)
        memcpy(simd, y, bytes);
      else if (isa > 0)
        CU_ASSERT_EQUAL(memcmp(simd, y, bytes), 0);
    }
    /* Channel 7: 2^(200 delta log2 e) overflows for delta > 0.44. */
    a[7 * n] = 200;
    simd_isas = 0;
    for (int isa = 1; isa < N_TEST_ISAS; isa++) {
      if (!scan_isa(isa, b, s, h, n, x, dl, a, bm, cm, y, y2, scr, ns))
        continue;
      if (simd_isas++ == 0)
        memcpy(simd, y, bytes);
      else
        CU_ASSERT_EQUAL(memcmp(simd, y, bytes), 0);
    }
    rlx_gemm_select_isa(NULL);
    rlx_set_num_threads(0);
    float *bufs[] = {x, dl, a, bm, cm, y, y2, simd};
    for (int i = 0; i < 8; i++)
      free(bufs[i]);
    free(ref);
    rlx_free(scr);
  }
}

int main(void)
{
  if (CU_initialize_registry() != CUE_SUCCESS)
    return CU_get_error();
  CU_pSuite s = CU_add_suite("runtime_ssm", NULL, NULL);
  CU_add_test(s, "gated_delta_net", test_gdn);
  CU_add_test(s, "selective_scan", test_selective_scan);
  CU_basic_set_mode(CU_BRM_VERBOSE);
  CU_basic_run_tests();
  unsigned fails = CU_get_number_of_failures();
  CU_cleanup_registry();
  return fails ? 1 : 0;
}
