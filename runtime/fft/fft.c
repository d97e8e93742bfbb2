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
 * (rlx_fft_layout, fft_plan.c, a function of rows and n only) and in
 * the tables (fft_tables.c: twiddles, Bluestein's chirp and kernel),
 * which rlx_fft_c64_tab takes ready-made (the compiler's constant) and
 * rlx_fft_c64 computes into the scratch per call; rows are
 * split among a fixed number of slots (working buffers), which
 * rlx_parallel_for hands to threads.  A row's result depends only on
 * the row, so results are bit-identical for any thread count; the
 * SIMD kernels (AVX-512, AVX2, NEON: fft_kern.h) and the portable ones
 * do the same float operations, picked by the ISA level the GEMM
 * dispatch chose (simd/isa.h).
 */
#include <math.h>
#include <string.h>

#include "runtime/fft/fft_internal.h"
#include "runtime/rlxrt.h"
#include "runtime/simd/isa.h"

void rlx_fft_split_scalar(const float *x, int64_t n, float *re, float *im)
{
  for (int64_t j = 0; j < n; j++) {
    re[j] = x[2 * j];
    im[j] = x[2 * j + 1];
  }
}

void rlx_fft_join_scalar(const float *re, const float *im, int64_t n,
                         float scale, float *y)
{
  for (int64_t k = 0; k < n; k++) {
    y[2 * k] = re[k] * scale;
    y[2 * k + 1] = im[k] * scale;
  }
}

typedef struct {
  const FftLayout *L;
  const char *tab; /* the tables block (FftLayout) */
  fft_stage_fn fn;
  fft_split_fn split;
  fft_join_fn join;
  const char *scratch;
  const float *x;
  float *y;
  float scale;
  int64_t rows;
} Ctx;

static void row_direct(const Ctx *c, float *buf, const float *x, float *y)
{
  int64_t n = c->L->n;
  float *ar, *ai, *br, *bi;
  rlx_fft_slot_arrays(buf, n, &ar, &ai, &br, &bi);
  c->split(x, n, ar, ai);
  if (rlx_fft_run(&c->L->plan, c->fn, ar, ai, br, bi)) {
    ar = br;
    ai = bi;
  }
  c->join(ar, ai, n, c->scale, y);
}

static void row_bluestein(const Ctx *c, float *buf, const float *x,
                          float *y)
{
  const FftLayout *L = c->L;
  int64_t n = L->n, M = L->len;
  const float *er = (const float *)(c->tab + L->chirp_off), *ei = er + n;
  const float *hr = (const float *)(c->tab + L->h_off), *hi = hr + M;
  float *ar, *ai, *br, *bi;
  rlx_fft_slot_arrays(buf, M, &ar, &ai, &br, &bi);
  for (int64_t j = 0; j < n; j++) {
    float xr = x[2 * j], xi = x[2 * j + 1];
    ar[j] = xr * er[j] - xi * ei[j];
    ai[j] = xr * ei[j] + xi * er[j];
  }
  memset(ar + n, 0, sizeof(float) * (size_t)(M - n));
  memset(ai + n, 0, sizeof(float) * (size_t)(M - n));
  if (rlx_fft_run(&L->plan, c->fn, ar, ai, br, bi)) {
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
  if (rlx_fft_run(&L->plan, c->fn, ar, ai, br, bi)) {
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

int rlx_fft_c64_tab(int64_t rows, int64_t n, int inverse, int norm,
                    const float *x, float *y, void *scratch,
                    const void *tables)
{
  if (rows < 0 || n < 0 || norm < RLX_FFT_NORM_BACKWARD ||
      norm > RLX_FFT_NORM_ORTHO)
    return RLX_ERR_INVALID;
  if (rows == 0 || n == 0)
    return RLX_OK;
  FftLayout L;
  rlx_fft_layout(rows, n, &L);
  double sign = inverse ? 1.0 : -1.0;
  /* The kernels per ISA level (simd/isa.h); NULL: portable. */
  static const FftIsa portable = {rlx_fft_stage_scalar, rlx_fft_split_scalar,
                                  rlx_fft_join_scalar};
  static const FftIsa *const isas[RLX_ISA_COUNT] = {
      [RLX_ISA_AVX2] = &rlx_fft_avx2,
      [RLX_ISA_AVX512] = &rlx_fft_avx512,
      [RLX_ISA_NEON] = &rlx_fft_neon};
  const FftIsa *k = isas[rlx_isa_level()];
  if (!k || !k->stage)
    k = &portable;
  if (tables)
    rlx_fft_plan_tables(&L, sign, tables);
  else
    rlx_fft_fill_tables(&L, sign, (char *)scratch + L.tab_at, scratch,
                        k->stage);
  double scale = 1.0;
  if (norm == RLX_FFT_NORM_ORTHO)
    scale = 1.0 / sqrt((double)n);
  else if ((norm == RLX_FFT_NORM_BACKWARD) == (inverse != 0))
    scale = 1.0 / (double)n;
  Ctx c = {&L,
           tables ? tables : (char *)scratch + L.tab_at,
           k->stage,
           k->split,
           k->join,
           scratch,
           x,
           y,
           (float)scale,
           rows};
  rlx_parallel_for(L.nslots, 1, slot_task, &c);
  return RLX_OK;
}

int rlx_fft_c64(int64_t rows, int64_t n, int inverse, int norm,
                const float *x, float *y, void *scratch)
{
  return rlx_fft_c64_tab(rows, n, inverse, norm, x, y, scratch, NULL);
}
