/* fft.c -- rlx_fft_c64: the discrete Fourier transform of every row of
 * a [rows, n] c64 array, any n (rlxrt.h).
 *
 * Lengths whose prime factors are all at most FFT_MAX_RADIX run as a
 * mixed-radix Stockham autosort (fft_internal.h): radix-4 stages, one
 * radix-2 stage for an odd power of two, then radix 3, 5 and the other
 * primes (direct DFTs).  Other lengths go through Bluestein's chirp-z
 * algorithm: with e_j = exp(sign pi i j^2 / n),
 * X_k = e_k sum_j (x_j e_j) conj(e_(k-j)), a circular convolution of
 * length M (the power of two >= 2n - 1) done with two forward FFTs of
 * length M (the inverse one as conj(FFT(conj(.))), the 1/M folded into
 * the transformed kernel H).
 *
 * Everything the call needs lives in the caller's scratch
 * (rlx_fft_layout, fft_plan.c, a function of rows and n only):
 * twiddles are recomputed per call in double from two tables of
 * ~sqrt(N) roots each (w_t = coarse[t / F] * fine[t % F], each table by
 * recurrence from one sin/cos pair), rounded to float once into a table
 * of all N roots, from which every stage gathers its own; rows are
 * split among a fixed number of slots (working buffers), which
 * rlx_parallel_for hands to threads.  A row's result depends only on
 * the row, so results are bit-identical for any thread count; the
 * AVX-512 and portable stage kernels do the same float operations
 * (chosen like the GEMM kernels, rlx_gemm_select_isa).
 */
#include <math.h>
#include <string.h>

#include "runtime/fft_internal.h"
#include "runtime/rlxrt.h"

#define TWO_PI 6.283185307179586476925286766559

/* exp(sign 2 pi i t / N) for 0 <= t < N as coarse[t / F] * fine[t % F]. */
typedef struct {
  int64_t N, F;
  double *c, *f; /* (re, im) pairs */
} Roots;

/* The tables by recurrence from one sin/cos pair each (in double: the
 * error after ~sqrt(N) steps stays far below float rounding). */
static void roots_init(Roots *R, int64_t N, double sign, double *mem)
{
  R->N = N;
  R->F = rlx_fft_isqrt_up(N);
  R->f = mem;
  R->c = mem + 2 * R->F;
  double *tab[2] = {R->f, R->c};
  int64_t cnt[2] = {R->F, (N + R->F - 1) / R->F};
  for (int k = 0; k < 2; k++) {
    double *t = tab[k], ang = sign * TWO_PI * (double)(k ? R->F : 1) / N;
    double wr = cos(ang), wi = sin(ang);
    t[0] = 1.0;
    t[1] = 0.0;
    for (int64_t b = 1; b < cnt[k]; b++) {
      t[2 * b] = t[2 * b - 2] * wr - t[2 * b - 1] * wi;
      t[2 * b + 1] = t[2 * b - 2] * wi + t[2 * b - 1] * wr;
    }
  }
}

/* Every root w_t, t < N, rounded to float once. */
static void roots_all(const Roots *R, float *wr, float *wi)
{
  for (int64_t a = 0; a * R->F < R->N; a++) {
    int64_t nb = R->N - a * R->F < R->F ? R->N - a * R->F : R->F;
    double cr = R->c[2 * a], ci = R->c[2 * a + 1];
    float *orr = wr + a * R->F, *oi = wi + a * R->F;
    for (int64_t b = 0; b < nb; b++) {
      orr[b] = (float)(cr * R->f[2 * b] - ci * R->f[2 * b + 1]);
      oi[b] = (float)(cr * R->f[2 * b + 1] + ci * R->f[2 * b]);
    }
  }
}

/* The AVX-512 stages when the GEMM dispatch chose avx512 (like conv.c),
 * so rlx_gemm_select_isa("scalar") tests the portable ones. */
static fft_stage_fn stage_fn(void)
{
  return strcmp(rlx_gemm_isa(), "avx512") == 0 ? rlx_fft_stage_avx512
                                               : rlx_fft_stage_scalar;
}

/* Fill the stage twiddle and omega pointers and values. */
static void plan_twiddles(FftPlan *p, char *scratch, const FftLayout *L,
                          double sign, double *rootmem)
{
  Roots R;
  roots_init(&R, p->len, sign, rootmem);
  float *wr = (float *)(scratch + L->w_off), *wi = wr + p->len;
  roots_all(&R, wr, wi);
  float *twr = (float *)(scratch + L->tw_off), *twi = twr + L->ntw;
  float *omr = (float *)(scratch + L->om_off), *omi = omr + L->nom;
  for (int i = 0; i < p->nst; i++) {
    FftStage *st = &p->st[i];
    st->sg = (float)sign;
    st->twr = twr;
    st->twi = twi;
    for (int64_t k = 1; k < st->r; k++) /* w^(q k) = w_(q k s) */
      for (int64_t q = 0, t = 0; q < st->m; q++, t += k * st->s) {
        twr[(k - 1) * st->m + q] = wr[t];
        twi[(k - 1) * st->m + q] = wi[t];
      }
    twr += (st->r - 1) * st->m;
    twi += (st->r - 1) * st->m;
    if (st->r > 5) {
      st->wr = omr;
      st->wi = omi;
      for (int64_t t = 0; t < st->r; t++) {
        omr[t] = wr[t * (p->len / st->r)];
        omi[t] = wi[t * (p->len / st->r)];
      }
      omr += st->r;
      omi += st->r;
    }
  }
}

/* Transform (ar, ai) in place of the two buffers; returns the buffer
 * pair holding the result (0: a, 1: b). */
static int run(const FftPlan *p, float *ar, float *ai, float *br,
               float *bi)
{
  fft_stage_fn fn = stage_fn();
  int cur = 0;
  for (int i = 0; i < p->nst; i++) {
    if (cur == 0)
      fn(&p->st[i], ar, ai, br, bi);
    else
      fn(&p->st[i], br, bi, ar, ai);
    cur ^= 1;
  }
  return cur;
}

typedef struct {
  const FftLayout *L;
  const char *scratch;
  const float *x;
  float *y;
  float scale;
  int64_t rows;
} Ctx;

/* The four working arrays of a slot, len floats each, spaced so that
 * equal offsets fall in different cache sets (FFT_PAD, fft_internal.h). */
static void slot_arrays(float *buf, int64_t len, float **ar, float **ai,
                        float **br, float **bi)
{
  *ar = buf;
  *ai = *ar + len + FFT_PAD;
  *br = *ai + len + 2 * FFT_PAD;
  *bi = *br + len + 3 * FFT_PAD;
}

static void row_direct(const Ctx *c, float *buf, const float *x, float *y)
{
  int64_t n = c->L->n;
  float *ar, *ai, *br, *bi;
  slot_arrays(buf, n, &ar, &ai, &br, &bi);
  for (int64_t j = 0; j < n; j++) {
    ar[j] = x[2 * j];
    ai[j] = x[2 * j + 1];
  }
  if (run(&c->L->plan, ar, ai, br, bi)) {
    ar = br;
    ai = bi;
  }
  for (int64_t k = 0; k < n; k++) {
    y[2 * k] = ar[k] * c->scale;
    y[2 * k + 1] = ai[k] * c->scale;
  }
}

static void row_bluestein(const Ctx *c, float *buf, const float *x,
                          float *y)
{
  const FftLayout *L = c->L;
  int64_t n = L->n, M = L->len;
  const float *er = (const float *)(c->scratch + L->chirp_off), *ei = er + n;
  const float *hr = (const float *)(c->scratch + L->h_off), *hi = hr + M;
  float *ar, *ai, *br, *bi;
  slot_arrays(buf, M, &ar, &ai, &br, &bi);
  for (int64_t j = 0; j < n; j++) {
    float xr = x[2 * j], xi = x[2 * j + 1];
    ar[j] = xr * er[j] - xi * ei[j];
    ai[j] = xr * ei[j] + xi * er[j];
  }
  memset(ar + n, 0, sizeof(float) * (size_t)(M - n));
  memset(ai + n, 0, sizeof(float) * (size_t)(M - n));
  if (run(&L->plan, ar, ai, br, bi)) {
    float *t = ar;
    ar = br;
    br = t;
    t = ai;
    ai = bi;
    bi = t;
  }
  for (int64_t k = 0; k < M; k++) { /* conj(A H) */
    float zr = ar[k] * hr[k] - ai[k] * hi[k];
    float zi = ar[k] * hi[k] + ai[k] * hr[k];
    ar[k] = zr;
    ai[k] = -zi;
  }
  if (run(&L->plan, ar, ai, br, bi)) {
    ar = br;
    ai = bi;
  }
  for (int64_t k = 0; k < n; k++) { /* e_k conj(D_k) scale */
    float dr = ar[k], di = -ai[k];
    y[2 * k] = (dr * er[k] - di * ei[k]) * c->scale;
    y[2 * k + 1] = (dr * ei[k] + di * er[k]) * c->scale;
  }
}

static void slot_task(void *vctx, int64_t begin, int64_t end)
{
  const Ctx *c = vctx;
  const FftLayout *L = c->L;
  for (int64_t s = begin; s < end; s++) {
    float *buf = (float *)(c->scratch + L->slot_off + s * L->slot_bytes);
    int64_t r0 = s * c->rows / L->nslots, r1 = (s + 1) * c->rows / L->nslots;
    for (int64_t r = r0; r < r1; r++) {
      const float *x = c->x + 2 * r * L->n;
      float *y = c->y + 2 * r * L->n;
      if (L->bluestein)
        row_bluestein(c, buf, x, y);
      else
        row_direct(c, buf, x, y);
    }
  }
}

/* Chirp e and kernel H = FFT_M(h) / M, h_t = h_(M-t) = conj(e_t). */
static void bluestein_setup(const FftLayout *L, char *scratch, double sign,
                            double *rootmem)
{
  int64_t n = L->n, M = L->len;
  Roots R;
  roots_init(&R, 2 * n, sign, rootmem);
  float *ar, *ai, *br, *bi;
  slot_arrays((float *)(scratch + L->slot_off), M, &ar, &ai, &br, &bi);
  /* the 2n roots, in ar and ai (2 M + pad >= 4 n) */
  float *wr = ar, *wi = ar + 2 * n;
  roots_all(&R, wr, wi);
  float *er = (float *)(scratch + L->chirp_off), *ei = er + n;
  for (int64_t j = 0, t = 0; j < n; j++) { /* t = j^2 mod 2n */
    er[j] = wr[t];
    ei[j] = wi[t];
    t += 2 * j + 1;
    while (t >= 2 * n)
      t -= 2 * n;
  }
  memset(ar, 0, sizeof(float) * (size_t)M);
  memset(ai, 0, sizeof(float) * (size_t)M);
  for (int64_t t = 0; t < n; t++) {
    ar[t] = er[t];
    ai[t] = -ei[t];
    if (t > 0) {
      ar[M - t] = er[t];
      ai[M - t] = -ei[t];
    }
  }
  if (run(&L->plan, ar, ai, br, bi)) {
    ar = br;
    ai = bi;
  }
  float *hr = (float *)(scratch + L->h_off), *hi = hr + M;
  float inv = (float)(1.0 / (double)M);
  for (int64_t k = 0; k < M; k++) {
    hr[k] = ar[k] * inv;
    hi[k] = ai[k] * inv;
  }
}

int rlx_fft_c64(int64_t rows, int64_t n, int inverse, int norm,
                const float *x, float *y, void *scratch)
{
  if (rows < 0 || n < 0 || norm < RLX_FFT_NORM_BACKWARD ||
      norm > RLX_FFT_NORM_ORTHO)
    return RLX_ERR_INVALID;
  if (rows == 0 || n == 0)
    return RLX_OK;
  FftLayout L;
  rlx_fft_layout(rows, n, &L);
  double sign = inverse ? 1.0 : -1.0;
  double *rootmem = (double *)((char *)scratch + L.root_off);
  /* The inner power-of-two transform of Bluestein is always forward. */
  plan_twiddles(&L.plan, scratch, &L, L.bluestein ? -1.0 : sign, rootmem);
  if (L.bluestein)
    bluestein_setup(&L, scratch, sign, rootmem);
  double scale = 1.0;
  if (norm == RLX_FFT_NORM_ORTHO)
    scale = 1.0 / sqrt((double)n);
  else if ((norm == RLX_FFT_NORM_BACKWARD) == (inverse != 0))
    scale = 1.0 / (double)n;
  Ctx c = {&L, scratch, x, y, (float)scale, rows};
  rlx_parallel_for(L.nslots, 1, slot_task, &c);
  return RLX_OK;
}

#define TGT
#define STAGE_FN rlx_fft_stage_scalar
#include "runtime/fft_tmpl.h"
