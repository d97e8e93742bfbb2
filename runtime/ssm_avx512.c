/* ssm_avx512.c -- the AVX-512F/DQ f32 selective-scan block (ssm.c): the
 * 16 channel lanes of a block are one vector; per step and state index
 * k, state_k = exp(delta * a_k) * state_k + (delta x) b_k and
 * y += c_k state_k, the exp as exp2_16 of rates pre-scaled by log2(e).
 * State size 16 (Mamba's usual) keeps the state in 16 registers across
 * the time loop (unrolled); other sizes stream the state through the
 * task's scratch (L1).  The delta, x and y rows of a block are h floats
 * apart: each step prefetches those PF steps ahead.  Tail blocks load
 * and store under a lane mask.  Compiled with a per-function target
 * attribute like gemm_avx512.c. */
#include "runtime/ssm_internal.h"

#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__)) && \
    !defined(RLX_NO_SIMD)
#include <immintrin.h>

#define TGT __attribute__((target("avx512f,avx512dq")))

#define LANES RLX_SSM_LANES
#define LOG2E 1.44269504088896341f

/* 2^z (the decay rates are stored pre-scaled by log2(e), so z = delta a
 * log2(e)): f = z - floor(z) in [0, 1) by one vreduceps, 2^f by the
 * degree-5 minimax polynomial (relative error 7.5e-8 before rounding;
 * at most 2.2 ulp measured over z in [-100, 20]), scaled by 2^floor(z)
 * with vscalefps, which floors z itself.  -inf gives 0 (vreduceps
 * returns 0 for infinities), +inf gives inf, NaN stays NaN. */
TGT static inline __m512 exp2_16(__m512 z)
{
  __m512 f = _mm512_reduce_ps(z, _MM_FROUND_TO_NEG_INF | _MM_FROUND_NO_EXC);
  __m512 p = _mm512_set1_ps(1.8775766948238015e-3f);
  p = _mm512_fmadd_ps(p, f, _mm512_set1_ps(8.98933969438076e-3f));
  p = _mm512_fmadd_ps(p, f, _mm512_set1_ps(5.582631751894951e-2f));
  p = _mm512_fmadd_ps(p, f, _mm512_set1_ps(2.4015361070632935e-1f));
  p = _mm512_fmadd_ps(p, f, _mm512_set1_ps(6.931530833244324e-1f));
  p = _mm512_fmadd_ps(p, f, _mm512_set1_ps(9.999999403953552e-1f));
  return _mm512_scalef_ps(p, z);
}

/* Steps ahead that prefetch_ahead fetches: one step of the n = 16
 * block takes about 100 cycles, a miss to memory several hundred. */
#define PF 12

/* Prefetch row ra's delta and x lines and y line (for writing) of the
 * block at channel c0, ra = the row PF steps ahead (the current one
 * near the end): the rows are h floats apart, a new 4 KiB page every
 * few steps, which the hardware prefetchers do not follow; without this
 * the time loop waits on the delta load every step. */
TGT static inline void prefetch_row(const rlx_ssm_args *p, int64_t ra,
                                    int64_t c0)
{
  int64_t o = ra * p->h + c0;
  _mm_prefetch((const char *)((const float *)p->delta + o), _MM_HINT_T0);
  _mm_prefetch((const char *)((const float *)p->x + o), _MM_HINT_T0);
  _mm_prefetch((const char *)((float *)p->y + o), _MM_HINT_T0);
}

/* Lane mask of a block with nc valid channels. */
static __mmask16 lanes(int64_t nc) { return (__mmask16)((1u << nc) - 1); }

/* The block for state size NK (a constant): state in registers across
 * the whole time loop (the loops over k unroll fully). */
#define BLOCK_FIXED(NK)                                                   \
  TGT static void block_##NK(const rlx_ssm_args *p, int64_t bi,          \
                             int64_t c0, const float *atm)               \
  {                                                                       \
    const int64_t s = p->s, h = p->h;                                     \
    const __mmask16 m = lanes(h - c0 < LANES ? h - c0 : LANES);           \
    __m512 st[NK];                                                        \
    for (int k = 0; k < NK; k++)                                          \
      st[k] = _mm512_setzero_ps();                                        \
    for (int64_t t = 0; t < s; t++) {                                     \
      int64_t r = bi * s + t;                                             \
      prefetch_row(p, t + PF < s ? r + PF : r, c0);                       \
      const float *bt = (const float *)p->bm + r * NK;                    \
      const float *ct = (const float *)p->cm + r * NK;                    \
      __m512 dv = _mm512_maskz_loadu_ps(m, (const float *)p->delta + r * h + c0); \
      __m512 du = _mm512_mul_ps(                                          \
          dv, _mm512_maskz_loadu_ps(m, (const float *)p->x + r * h + c0)); \
      __m512 yv = _mm512_setzero_ps();                                    \
      _Pragma("GCC unroll 16") for (int k = 0; k < NK; k++) {             \
        __m512 e = exp2_16(_mm512_mul_ps(dv, _mm512_loadu_ps(atm + k * LANES))); \
        st[k] = _mm512_fmadd_ps(e, st[k],                                 \
                                _mm512_mul_ps(du, _mm512_set1_ps(bt[k]))); \
        yv = _mm512_fmadd_ps(_mm512_set1_ps(ct[k]), st[k], yv);           \
      }                                                                   \
      _mm512_mask_storeu_ps((float *)p->y + r * h + c0, m, yv);           \
    }                                                                     \
  }

BLOCK_FIXED(16)

TGT static void block_f32(const rlx_ssm_args *p, int64_t bi, int64_t c0,
                          float *ws)
{
  const int64_t s = p->s, h = p->h, n = p->n;
  const int64_t nc = h - c0 < LANES ? h - c0 : LANES;
  const __mmask16 m = lanes(nc);
  const float *a = p->a;
  float *atm = ws, *stm = ws + n * LANES;
  for (int64_t k = 0; k < n; k++)
    for (int j = 0; j < LANES; j++) {
      atm[k * LANES + j] = j < nc ? a[(c0 + j) * n + k] * LOG2E : 0;
      stm[k * LANES + j] = 0;
    }
  if (n == 16) {
    block_16(p, bi, c0, atm);
    return;
  }
  for (int64_t t = 0; t < s; t++) {
    int64_t r = bi * s + t;
    prefetch_row(p, t + PF < s ? r + PF : r, c0);
    const float *bt = (const float *)p->bm + r * n;
    const float *ct = (const float *)p->cm + r * n;
    __m512 dv = _mm512_maskz_loadu_ps(m, (const float *)p->delta + r * h + c0);
    __m512 du = _mm512_mul_ps(
        dv, _mm512_maskz_loadu_ps(m, (const float *)p->x + r * h + c0));
    __m512 yv = _mm512_setzero_ps();
    for (int64_t k = 0; k < n; k++) {
      __m512 e = exp2_16(_mm512_mul_ps(dv, _mm512_loadu_ps(atm + k * LANES)));
      __m512 sk = _mm512_loadu_ps(stm + k * LANES);
      sk = _mm512_fmadd_ps(e, sk, _mm512_mul_ps(du, _mm512_set1_ps(bt[k])));
      _mm512_storeu_ps(stm + k * LANES, sk);
      yv = _mm512_fmadd_ps(_mm512_set1_ps(ct[k]), sk, yv);
    }
    _mm512_mask_storeu_ps((float *)p->y + r * h + c0, m, yv);
  }
}

const rlx_ssm_block_f32_fn rlx_ssm_avx512_block_f32 = block_f32;
#else
const rlx_ssm_block_f32_fn rlx_ssm_avx512_block_f32 = 0;
#endif
