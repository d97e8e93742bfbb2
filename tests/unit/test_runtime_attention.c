/* test_runtime_attention.c -- CUnit tests of the attention kernels
 * (rlx_attention_*, runtime/attention*.c).
 *
 * Every case runs forward and backward in f32 and f64 against a naive
 * full-matrix reference in double written from the definitions in
 * rlxrt.h (softmax over the allowed keys, lse; P = softmax, dV = P^T dY,
 * dP = dY V^T, dS = P (dP - rowsum(dP P)) = dbias, dQ = dS K scale, dK =
 * dS^T Q scale, times 1 - tanh^2 with softcap), with the float32 bar
 *   |got - ref| <= 1e-4 |ref| + 1e-5 max(1, max |ref|)
 * (f64: 1e-11 and 1e-12) on o, lse, dq, dk, dv and dbias (infinite
 * reference values, the lse of rows with no allowed key, must match
 * exactly; the gradients' relative bar grows by max |lse| eps, the
 * rounding of the stored lse, which matters only for scores ~1e4).  The cases cover every mask kind, softcap, custom scales,
 * layouts 3 and 4, lq < lk and lq > lk, rows with no allowed key
 * (custom all-zero batch; causal / sliding with lq > lk), lengths 1, 7,
 * 65, 129, 130, 200, 300, head sizes 1, 8, 16, 24, 33, 64, 80, several key chunks
 * (b h < 16) and one (b h >= 16), and scores of 1e4 (integer q, k).
 * Outputs start as NaN and the scratch as NaN bytes.  Results must be
 * bit-identical for 1, 2 and 3 threads; backward with o and lse given
 * and with NULL (recompute) must agree bit for bit; so must runs that
 * want only some of dq, dk, dv (or o without lse).  Every kernel ISA the
 * CPU has (portable, AVX2, AVX-512) must pass the reference check, and
 * AVX2 and AVX-512 must agree bit for bit (the same FMA chains and exp).
 */
#include <CUnit/Basic.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "runtime/rlxrt.h"
#include "tests/unit/isa.h"

typedef struct {
  int64_t b, h, lq, lk, d, layout, mask, window;
  double scale, cap, amp; /* scale 0: 1/sqrt(d); amp: input magnitude */
} Case;

static const Case CASES[] = {
  /* b  h   lq   lk   d  lay mask              win scale cap amp */
  {1, 1, 1, 1, 1, 3, RLX_ATTN_NONE, 0, 0, 0, 1},
  {2, 3, 7, 7, 8, 3, RLX_ATTN_CAUSAL, 0, 0, 0, 1},
  {1, 2, 65, 65, 64, 4, RLX_ATTN_CAUSAL, 0, 0, 0, 1},
  {2, 2, 129, 65, 80, 3, RLX_ATTN_NONE, 0, 0, 0, 1},
  {1, 2, 65, 129, 64, 4, RLX_ATTN_CAUSAL, 0, 0.2, 0, 1},
  {2, 1, 129, 65, 8, 4, RLX_ATTN_CAUSAL, 0, 0, 0, 1},
  {1, 2, 129, 129, 16, 3, RLX_ATTN_SLIDING, 20, 0, 0, 1},
  {1, 1, 130, 70, 8, 4, RLX_ATTN_SLIDING, 5, 0, 0, 1},
  {2, 2, 65, 129, 8, 3, RLX_ATTN_CUSTOM, 0, 0, 0, 1},
  {2, 2, 65, 70, 24, 4, RLX_ATTN_BIAS, 0, 0, 0, 1},
  {1, 2, 129, 129, 64, 3, RLX_ATTN_NONE, 0, 0.3, 2.0, 1},
  {1, 1, 70, 129, 1, 4, RLX_ATTN_BIAS, 0, 1.7, 5.0, 1},
  {1, 3, 7, 129, 80, 3, RLX_ATTN_CAUSAL, 0, 0, 1.5, 1},
  {1, 1, 200, 300, 33, 3, RLX_ATTN_NONE, 0, 0, 0, 1},
  {4, 4, 65, 65, 8, 4, RLX_ATTN_CAUSAL, 0, 0, 0, 1},
  {1, 2, 7, 9, 4, 3, RLX_ATTN_NONE, 0, 1, 0, 50},   /* scores ~ 1e4 */
  {1, 1, 65, 65, 1, 4, RLX_ATTN_CAUSAL, 0, 1, 0, 100},
};
enum { NCASE = sizeof CASES / sizeof CASES[0] };

static rlx_attn_geom geom(const Case *c)
{
  rlx_attn_geom g = {c->b, c->h, c->lq, c->lk, c->d, c->layout,
                     c->mask, c->window, c->scale, c->cap, {0}};
  if (g.scale == 0)
    g.scale = 1 / sqrt((double)c->d);
  return g;
}

static double rnd(void)
{
  return (double)rand() / RAND_MAX * 2.0 - 1.0;
}

/* Element (b, h, i, c) of a tensor with `len` rows per head. */
static int64_t at(const rlx_attn_geom *g, int64_t len, int64_t b,
                  int64_t h, int64_t i, int64_t c)
{
  return g->layout == 4 ? ((b * g->h + h) * len + i) * g->d + c
                        : ((b * len + i) * g->h + h) * g->d + c;
}

static int allowed(const rlx_attn_geom *g, const unsigned char *keep,
                   int64_t b, int64_t i, int64_t j)
{
  int64_t off = g->lk - g->lq;
  switch (g->mask) {
  case RLX_ATTN_CAUSAL:
    return j <= off + i;
  case RLX_ATTN_SLIDING:
    return j <= off + i && j >= off + i - g->window;
  case RLX_ATTN_CUSTOM:
    return keep[b * g->lk + j] != 0;
  default:
    return 1;
  }
}

typedef struct {
  double *o, *lse, *dq, *dk, *dv, *dbias;
} Outs;

/* The reference, one row of one head at a time, full rows in double. */
static void reference(const rlx_attn_geom *g, const double *q,
                      const double *k, const double *v,
                      const unsigned char *keep, const double *bias,
                      const double *dy, Outs *r, int64_t nq, int64_t nk)
{
  memset(r->o, 0, nq * sizeof(double));
  memset(r->dq, 0, nq * sizeof(double));
  memset(r->dk, 0, nk * sizeof(double));
  memset(r->dv, 0, nk * sizeof(double));
  double *s = malloc(g->lk * sizeof *s), *fac = malloc(g->lk * sizeof *s);
  double *p = malloc(g->lk * sizeof *s), *dp = malloc(g->lk * sizeof *s);
  for (int64_t b = 0; b < g->b; b++)
    for (int64_t h = 0; h < g->h; h++)
      for (int64_t i = 0; i < g->lq; i++) {
        int64_t row = (b * g->h + h) * g->lq + i;
        double m = -INFINITY;
        for (int64_t j = 0; j < g->lk; j++) {
          double x = 0;
          for (int64_t c = 0; c < g->d; c++)
            x += q[at(g, g->lq, b, h, i, c)] * k[at(g, g->lk, b, h, j, c)];
          x *= g->scale;
          fac[j] = 1;
          if (g->softcap > 0) {
            double t = tanh(x / g->softcap);
            x = g->softcap * t;
            fac[j] = 1 - t * t;
          }
          if (bias)
            x += bias[row * g->lk + j];
          s[j] = allowed(g, keep, b, i, j) ? x : -INFINITY;
          m = s[j] > m ? s[j] : m;
        }
        double sum = 0;
        for (int64_t j = 0; j < g->lk; j++)
          sum += p[j] = m == -INFINITY ? 0 : exp(s[j] - m);
        r->lse[row] = m == -INFINITY ? -INFINITY : m + log(sum);
        double dsum = 0;
        for (int64_t j = 0; j < g->lk; j++) {
          p[j] = sum > 0 ? p[j] / sum : 0;
          dp[j] = 0;
          for (int64_t c = 0; c < g->d; c++) {
            double dyc = dy[at(g, g->lq, b, h, i, c)];
            r->o[at(g, g->lq, b, h, i, c)] += p[j] * v[at(g, g->lk, b, h, j, c)];
            r->dv[at(g, g->lk, b, h, j, c)] += p[j] * dyc;
            dp[j] += dyc * v[at(g, g->lk, b, h, j, c)];
          }
          dsum += dp[j] * p[j];
        }
        for (int64_t j = 0; j < g->lk; j++) {
          double ds = p[j] * (dp[j] - dsum);
          if (r->dbias)
            r->dbias[row * g->lk + j] = ds;
          ds *= fac[j] * g->scale;
          for (int64_t c = 0; c < g->d; c++) {
            r->dq[at(g, g->lq, b, h, i, c)] += ds * k[at(g, g->lk, b, h, j, c)];
            r->dk[at(g, g->lk, b, h, j, c)] += ds * q[at(g, g->lq, b, h, i, c)];
          }
        }
      }
  free(s);
  free(fac);
  free(p);
  free(dp);
}

static int close_all(const char *what, const double *ref, const double *got,
                     int64_t n, double rel, double abs_)
{
  double mx = 1;
  for (int64_t i = 0; i < n; i++)
    if (isfinite(ref[i]))
      mx = fabs(ref[i]) > mx ? fabs(ref[i]) : mx;
  for (int64_t i = 0; i < n; i++) {
    int ok = isinf(ref[i]) ? got[i] == ref[i]
                           : fabs(got[i] - ref[i]) <= rel * fabs(ref[i]) + abs_ * mx;
    if (!ok) {
      fprintf(stderr, "\n  %s[%lld]: got %.9g, want %.9g", what,
              (long long)i, got[i], ref[i]);
      return 0;
    }
  }
  return 1;
}

/* Runs one case in dtype T on every thread count and every kernel ISA
   the CPU has.  Returns a bit mask of failures: 1 thread dependence,
   2 recompute differs, 4 partial outputs differ, 8 reference mismatch
   (any ISA), 16 the vector ISAs (AVX2, AVX-512) differ in a bit. */
#define DEFINE_RUN(SFX, T)                                                 \
  static int run_##SFX(const rlx_attn_geom *g, const double *const in[5], \
                       const unsigned char *keep, const Outs *ref,        \
                       double rel, double rel_g, double abs_)             \
  {                                                                       \
    static const int threads[] = {1, 2, 3};                               \
    int64_t nq = g->b * g->h * g->lq * g->d, nk = g->b * g->h * g->lk * g->d; \
    int64_t nr = g->b * g->h * g->lq, nb = nr * g->lk;                    \
    int64_t n[5] = {nq, nk, nk, nq, g->mask == RLX_ATTN_BIAS ? nb : 0};   \
    T *x[5];                                                              \
    for (int a = 0; a < 5; a++) {                                         \
      x[a] = malloc((n[a] + 1) * sizeof(T));                              \
      for (int64_t i = 0; i < n[a]; i++)                                  \
        x[a][i] = (T)in[a][i];                                            \
    }                                                                     \
    /* outputs: o lse dq dk dv dbias, twice (first run, this run) */      \
    int64_t no[6] = {nq, nr, nq, nk, nk, n[4]};                             \
    T *first[6], *cur[6], *alt[6];                                        \
    for (int a = 0; a < 6; a++) {                                         \
      first[a] = malloc((no[a] + 1) * sizeof(T));                         \
      cur[a] = malloc((no[a] + 1) * sizeof(T));                           \
      alt[a] = malloc((no[a] + 1) * sizeof(T));                           \
    }                                                                     \
    int64_t ns = rlx_attention_scratch_bytes(g, RLX_ATTN_BWD_RECOMPUTE,   \
                                             sizeof(T));                  \
    int64_t ns1 = rlx_attention_scratch_bytes(g, RLX_ATTN_FWD, sizeof(T)); \
    int64_t ns2 = rlx_attention_scratch_bytes(g, RLX_ATTN_BWD, sizeof(T)); \
    ns = ns > ns1 ? ns : ns1;                                             \
    ns = ns > ns2 ? ns : ns2;                                             \
    void *scratch = rlx_alloc((size_t)ns);                                \
    const void *mask = g->mask == RLX_ATTN_BIAS ? (const void *)x[4]      \
                                                : (const void *)keep;     \
    int fail = 0, have_simd = 0;                                          \
    T *simd[6]; /* the first vector ISA's results: the others match */    \
    for (int a = 0; a < 6; a++)                                           \
      simd[a] = malloc((no[a] + 1) * sizeof(T));                          \
    for (int isa = 0; isa < N_TEST_ISAS; isa++) {                         \
      if (!test_isa_use(test_isas[isa]))                                  \
        continue;                                                         \
      for (int t = 0; t < 3; t++) {                                       \
        rlx_set_num_threads(threads[t]);                                  \
        for (int a = 0; a < 6; a++)                                       \
          memset(cur[a], 0xff, (no[a] + 1) * sizeof(T));                  \
        memset(scratch, 0xff, (size_t)ns);                                \
        rlx_attention_##SFX(g, x[0], x[1], x[2], mask, cur[0], cur[1],    \
                            scratch);                                     \
        memset(scratch, 0xff, (size_t)ns);                                \
        rlx_attention_bwd_##SFX(g, x[0], x[1], x[2], mask, x[3], cur[0],  \
                                cur[1], cur[2], cur[3], cur[4],           \
                                n[4] ? cur[5] : NULL, scratch);           \
        if (t == 0) {                                                     \
          for (int a = 0; a < 6; a++) {                                   \
            memcpy(first[a], cur[a], no[a] * sizeof(T));                  \
            double *refs[6] = {ref->o, ref->lse,                             \
                               ref->dq, ref->dk, ref->dv, ref->dbias};    \
            double *r = refs[a], *got = malloc((no[a] + 1) * sizeof *got); \
            for (int64_t i = 0; i < no[a]; i++)                           \
              got[i] = first[a][i];                                       \
            static const char *nm[6] = {"o", "lse", "dq", "dk", "dv", "dbias"}; \
            if (no[a] && !close_all(nm[a], r, got, no[a],                 \
                                    a < 2 ? rel : rel_g, abs_))           \
              fail |= 8;                                                  \
            free(got);                                                    \
          }                                                               \
          /* recompute and partial outputs, this ISA, one thread */       \
          memset(scratch, 0xff, (size_t)ns);                              \
          for (int a = 0; a < 6; a++)                                     \
            memset(alt[a], 0xff, (no[a] + 1) * sizeof(T));                \
          rlx_attention_bwd_##SFX(g, x[0], x[1], x[2], mask, x[3], NULL,  \
                                  NULL, alt[2], alt[3], alt[4],           \
                                  n[4] ? alt[5] : NULL, scratch);         \
          for (int a = 2; a < 6; a++)                                     \
            if (memcmp(alt[a], first[a], no[a] * sizeof(T)))              \
              fail |= 2;                                                  \
          for (int w = 2; w < 5; w++) {                                   \
            memset(alt[w], 0xff, (no[w] + 1) * sizeof(T));                \
            rlx_attention_bwd_##SFX(g, x[0], x[1], x[2], mask, x[3],      \
                                    first[0], first[1],                   \
                                    w == 2 ? alt[2] : NULL,               \
                                    w == 3 ? alt[3] : NULL,               \
                                    w == 4 ? alt[4] : NULL, NULL, scratch); \
            if (memcmp(alt[w], first[w], no[w] * sizeof(T)))              \
              fail |= 4;                                                  \
          }                                                               \
          memset(alt[0], 0xff, (no[0] + 1) * sizeof(T));                  \
          rlx_attention_##SFX(g, x[0], x[1], x[2], mask, alt[0], NULL,    \
                              scratch);                                   \
          if (memcmp(alt[0], first[0], no[0] * sizeof(T)))                \
            fail |= 4;                                                    \
          for (int a = 0; a < 6 && isa > 0; a++)                          \
            if (!have_simd)                                               \
              memcpy(simd[a], first[a], no[a] * sizeof(T));               \
            else if (memcmp(simd[a], first[a], no[a] * sizeof(T)))        \
              fail |= 16;                                                 \
          have_simd |= isa > 0;                                           \
        } else {                                                          \
          for (int a = 0; a < 6; a++)                                     \
            if (memcmp(cur[a], first[a], no[a] * sizeof(T)))              \
              fail |= 1;                                                  \
        }                                                                 \
      }                                                                   \
    }                                                                     \
    rlx_gemm_select_isa(NULL);                                            \
    rlx_set_num_threads(0);                                               \
    for (int a = 0; a < 5; a++)                                           \
      free(x[a]);                                                         \
    for (int a = 0; a < 6; a++) {                                         \
      free(simd[a]);                                                      \
      free(first[a]);                                                     \
      free(cur[a]);                                                       \
      free(alt[a]);                                                       \
    }                                                                     \
    rlx_free(scratch);                                                    \
    return fail;                                                          \
  }
DEFINE_RUN(f32, float)
DEFINE_RUN(f64, double)

static int check_case(int ci)
{
  const Case *c = &CASES[ci];
  rlx_attn_geom g = geom(c);
  int64_t nq = g.b * g.h * g.lq * g.d, nk = g.b * g.h * g.lk * g.d;
  int64_t nr = g.b * g.h * g.lq, nb = nr * g.lk;
  int64_t n[5] = {nq, nk, nk, nq, nb};
  double *in[5];
  /* Values representable in f32, so both dtypes see equal inputs. */
  for (int a = 0; a < 5; a++) {
    in[a] = malloc(n[a] * sizeof(double));
    for (int64_t i = 0; i < n[a]; i++)
      in[a][i] = (float)(rnd() * (a < 2 ? c->amp : a == 4 ? 2 : 1));
  }
  /* Huge scores: integer q and k, so q.k (~1e4) is exact in f32 too
     (its rounding alone would move P by ~1e-3). */
  for (int a = 0; a < 2 && c->amp > 1; a++)
    for (int64_t i = 0; i < n[a]; i++)
      in[a][i] = round(in[a][i]);
  unsigned char *keep = malloc(g.b * g.lk);
  for (int64_t i = 0; i < g.b * g.lk; i++)
    keep[i] = i >= g.lk && rand() % 3 != 0; /* batch 0: all masked */
  Outs ref;
  ref.o = malloc(nq * sizeof(double));
  ref.lse = malloc(nr * sizeof(double));
  ref.dq = malloc(nq * sizeof(double));
  ref.dk = malloc(nk * sizeof(double));
  ref.dv = malloc(nk * sizeof(double));
  ref.dbias = g.mask == RLX_ATTN_BIAS ? malloc(nb * sizeof(double)) : NULL;
  reference(&g, in[0], in[1], in[2], keep,
            g.mask == RLX_ATTN_BIAS ? in[4] : NULL, in[3], &ref, nq, nk);
  const double *const cin[5] = {in[0], in[1], in[2], in[3], in[4]};
  /* The gradients use P = exp(s - lse) with lse rounded to T: with
     |lse| ~ 1e4 that alone moves P by |lse| eps / 2 (6e-4 in f32). */
  double big = 0;
  for (int64_t i = 0; i < nr; i++)
    if (isfinite(ref.lse[i]) && fabs(ref.lse[i]) > big)
      big = fabs(ref.lse[i]);
  int f32 = run_f32(&g, cin, keep, &ref, 1e-4, 1e-4 + big * 0x1p-23, 1e-5);
  int f64 = run_f64(&g, cin, keep, &ref, 1e-11, 1e-11 + big * 0x1p-52,
                    1e-12);
  if (f32 || f64)
    fprintf(stderr, "\n  case %d: f32 failures %d, f64 failures %d "
            "(1 threads, 2 recompute, 4 partial outputs, 8 values, "
            "16 AVX2 vs AVX-512 bits)\n",
            ci, f32, f64);
  for (int a = 0; a < 5; a++)
    free(in[a]);
  free(keep);
  free(ref.o);
  free(ref.lse);
  free(ref.dq);
  free(ref.dk);
  free(ref.dv);
  free(ref.dbias);
  return !f32 && !f64;
}

static void test_cases(void)
{
  srand(11);
  for (int ci = 0; ci < NCASE; ci++)
    CU_ASSERT(check_case(ci));
}

/* Scratch is linear in lq + lk: doubling both lengths at most about
   doubles it (never the 4x of an lq x lk matrix), and the forward's
   does not grow with the length at all. */
static void test_scratch_linear(void)
{
  rlx_attn_geom g = {1, 8, 4096, 4096, 64, 4, RLX_ATTN_CAUSAL, 0, 0.125, 0,
                     {0}};
  rlx_attn_geom g2 = g;
  g2.lq = g2.lk = 8192;
  for (int op = 0; op < 3; op++) {
    int64_t a = rlx_attention_scratch_bytes(&g, op, 4);
    int64_t b = rlx_attention_scratch_bytes(&g2, op, 4);
    CU_ASSERT(a > 0 && b <= 2 * a + 4096);
    if (op == RLX_ATTN_FWD)
      CU_ASSERT(a == b && a <= (4 << 20));
  }
}

/* Layout 3 with row pitches (rlx_attn_geom.ld): q, k, v as the column
   blocks of one [b, l, 3hd] tensor and dq, dk, dv written into one
   too (the compiler's views of a fused qkv projection and of the
   gradients' concat) give the dense call's bits, at every ISA; the
   columns between the blocks are left alone. */
static void test_pitched(void)
{
  const int64_t B = 2, H = 3, L = 70, D = 8, HD = H * D, W = 3 * HD + 5;
  rlx_attn_geom g = {B, H, L, L, D, 3, RLX_ATTN_CAUSAL, 0, 0.3, 0, {0}};
  int64_t n = B * L * HD, nw = B * L * W;
  float *x = malloc(sizeof(float) * 4 * n), *qkv = malloc(sizeof(float) * nw);
  float *o = malloc(sizeof(float) * 2 * n), *lse = malloc(sizeof(float) * 2 * B * H * L);
  float *dd = malloc(sizeof(float) * 3 * n), *dw = malloc(sizeof(float) * nw);
  for (int64_t i = 0; i < 4 * n; i++)
    x[i] = (float)rnd();
  for (int64_t r = 0; r < B * L; r++)
    for (int j = 0; j < 3; j++)
      memcpy(qkv + r * W + j * HD, x + j * n + r * HD, sizeof(float) * HD);
  for (int i = 0; i < N_TEST_ISAS; i++) {
    if (!test_isa_use(test_isas[i]))
      continue;
    rlx_attn_geom gp = g;
    for (int j = 0; j < 6; j++)
      gp.ld[j] = W;
    void *sf = rlx_alloc((size_t)rlx_attention_scratch_bytes(&g, RLX_ATTN_FWD, 4));
    void *sb = rlx_alloc((size_t)rlx_attention_scratch_bytes(&g, RLX_ATTN_BWD, 4));
    rlx_attention_f32(&g, x, x + n, x + 2 * n, NULL, o, lse, sf);
    rlx_attention_f32(&gp, qkv, qkv + HD, qkv + 2 * HD, NULL, o + n,
                      lse + B * H * L, sf);
    CU_ASSERT(memcmp(o, o + n, sizeof(float) * n) == 0);
    CU_ASSERT(memcmp(lse, lse + B * H * L, sizeof(float) * B * H * L) == 0);
    rlx_attention_bwd_f32(&g, x, x + n, x + 2 * n, NULL, x + 3 * n, o, lse,
                          dd, dd + n, dd + 2 * n, NULL, sb);
    for (int64_t k = 0; k < nw; k++)
      dw[k] = -7.0f;
    rlx_attention_bwd_f32(&gp, qkv, qkv + HD, qkv + 2 * HD, NULL, x + 3 * n,
                          o, lse, dw, dw + HD, dw + 2 * HD, NULL, sb);
    int same = 1;
    for (int64_t r = 0; r < B * L; r++) {
      for (int j = 0; j < 3; j++)
        same &= memcmp(dw + r * W + j * HD, dd + j * n + r * HD,
                       sizeof(float) * HD) == 0;
      for (int64_t c = 3 * HD; c < W; c++)
        same &= dw[r * W + c] == -7.0f;
    }
    CU_ASSERT(same);
    rlx_free(sf);
    rlx_free(sb);
  }
  rlx_gemm_select_isa(NULL);
  free(x), free(qkv), free(o), free(lse), free(dd), free(dw);
}

int main(void)
{
  if (CU_initialize_registry() != CUE_SUCCESS)
    return 1;
  CU_pSuite s = CU_add_suite("runtime_attention", NULL, NULL);
  CU_add_test(s, "cases: fwd + bwd x f32/f64 x threads x ISA", test_cases);
  CU_add_test(s, "scratch linear", test_scratch_linear);
  CU_add_test(s, "row pitches (views of qkv)", test_pitched);
  CU_basic_set_mode(CU_BRM_VERBOSE);
  CU_basic_run_tests();
  int fails = (int)CU_get_number_of_failures();
  CU_cleanup_registry();
  return fails != 0;
}
