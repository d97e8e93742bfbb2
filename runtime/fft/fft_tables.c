/* fft_tables.c -- the tables of an rlx_fft_c64 transform (fft_internal.h):
 * each stage's twiddles, the generic radices' omegas and, for
 * Bluestein, the chirp and the transformed kernel; a function of n and
 * the direction only.  rlx_fft_c64 computes them into its scratch per
 * call; the compiler, which links this file, computes them once with
 * the same code (rlx_fft_tables) and emits them as a constant, which
 * rlx_fft_c64_tab reads instead.  The portable stage kernel lives here
 * too (the compiler needs it for Bluestein's kernel; the AVX-512 one
 * gives the same bits).
 *
 * Twiddles come from two tables of ~sqrt(N) roots each
 * (w_t = coarse[t / F] * fine[t % F], each table by recurrence from one
 * sin/cos pair, in double), rounded to float once into a table of all N
 * roots, from which every stage gathers its own.
 */
#include <math.h>
#include <string.h>

#include "runtime/fft/fft_internal.h"
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

/* The inner power-of-two transform of Bluestein is always forward. */
static double plan_sign(const FftLayout *L, double sign)
{
  return L->bluestein ? -1.0 : sign;
}

void rlx_fft_plan_tables(FftLayout *L, double sign, const char *tab)
{
  FftPlan *p = &L->plan;
  const float *twr = (const float *)(tab + L->tw_off), *twi = twr + L->ntw;
  const float *omr = (const float *)(tab + L->om_off), *omi = omr + L->nom;
  for (int i = 0; i < p->nst; i++) {
    FftStage *st = &p->st[i];
    st->sg = (float)plan_sign(L, sign);
    st->twr = twr;
    st->twi = twi;
    twr += (st->r - 1) * st->m;
    twi += (st->r - 1) * st->m;
    if (st->r > 5) {
      st->wr = omr;
      st->wi = omi;
      omr += st->r;
      omi += st->r;
    }
  }
}

/* The stages' twiddle and omega values, gathered from all len roots. */
static void fill_twiddles(const FftLayout *L, const float *wr,
                          const float *wi)
{
  const FftPlan *p = &L->plan;
  for (int i = 0; i < p->nst; i++) {
    /* locals: stores through the table pointers cannot change them */
    const int64_t r = p->st[i].r, m = p->st[i].m, s = p->st[i].s;
    float *restrict twr = (float *)p->st[i].twr;
    float *restrict twi = (float *)p->st[i].twi;
    for (int64_t k = 1; k < r; k++) /* w^(q k) = w_(q k s) */
      for (int64_t q = 0, t = 0; q < m; q++, t += k * s) {
        twr[(k - 1) * m + q] = wr[t];
        twi[(k - 1) * m + q] = wi[t];
      }
    if (r > 5) {
      float *restrict omr = (float *)p->st[i].wr;
      float *restrict omi = (float *)p->st[i].wi;
      for (int64_t t = 0; t < r; t++) {
        omr[t] = wr[t * (p->len / r)];
        omi[t] = wi[t * (p->len / r)];
      }
    }
  }
}

void rlx_fft_slot_arrays(float *buf, int64_t len, float **ar, float **ai,
                         float **br, float **bi)
{
  *ar = buf;
  *ai = *ar + len + FFT_PAD;
  *br = *ai + len + 2 * FFT_PAD;
  *bi = *br + len + 3 * FFT_PAD;
}

int rlx_fft_run(const FftPlan *p, fft_stage_fn fn, float *ar, float *ai,
                float *br, float *bi)
{
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

/* Chirp e and kernel H = FFT_M(h) / M, h_t = h_(M-t) = conj(e_t). */
static void bluestein_setup(const FftLayout *L, char *tab, char *scratch,
                            double sign, fft_stage_fn fn)
{
  int64_t n = L->n, M = L->len;
  Roots R;
  roots_init(&R, 2 * n, sign, (double *)(scratch + L->root_off));
  float *ar, *ai, *br, *bi;
  rlx_fft_slot_arrays((float *)(scratch + L->slot_off), M, &ar, &ai, &br,
                      &bi);
  /* the 2n roots, in ar and ai (2 M + pad >= 4 n) */
  float *wr = ar, *wi = ar + 2 * n;
  roots_all(&R, wr, wi);
  float *er = (float *)(tab + L->chirp_off), *ei = er + n;
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
  if (rlx_fft_run(&L->plan, fn, ar, ai, br, bi)) {
    ar = br;
    ai = bi;
  }
  float *hr = (float *)(tab + L->h_off), *hi = hr + M;
  float inv = (float)(1.0 / (double)M);
  for (int64_t k = 0; k < M; k++) {
    hr[k] = ar[k] * inv;
    hi[k] = ai[k] * inv;
  }
}

void rlx_fft_fill_tables(FftLayout *L, double sign, char *tab,
                         char *scratch, fft_stage_fn fn)
{
  rlx_fft_plan_tables(L, sign, tab);
  Roots R;
  roots_init(&R, L->len, plan_sign(L, sign),
             (double *)(scratch + L->root_off));
  float *wr = (float *)(scratch + L->w_off), *wi = wr + L->len;
  roots_all(&R, wr, wi);
  fill_twiddles(L, wr, wi);
  if (L->bluestein)
    bluestein_setup(L, tab, scratch, sign, fn);
}

int rlx_fft_tables(int64_t n, int inverse, void *tables, void *scratch)
{
  if (n <= 0)
    return RLX_ERR_INVALID;
  FftLayout L;
  rlx_fft_layout(1, n, &L);
  rlx_fft_fill_tables(&L, inverse ? 1.0 : -1.0, tables, scratch,
                      rlx_fft_stage_scalar);
  return RLX_OK;
}

#define TGT
#define STAGE_FN rlx_fft_stage_scalar
#include "runtime/fft/fft_tmpl.h"
