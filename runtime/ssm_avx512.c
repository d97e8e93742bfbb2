/* ssm_avx512.c -- the AVX-512F f32 selective-scan block (ssm.c): the 16
 * channel lanes of a block are one vector; per step and state index k,
 * state_k = exp(delta * a_k) * state_k + (delta x) b_k and
 * y += c_k state_k.  State size 16 (Mamba's usual) keeps the state in
 * 16 registers across the time loop (unrolled) and computes the exp as
 * exp2_16 of rates pre-scaled by log2(e) (four instructions fewer than
 * exp16, about 8% less time); other sizes stream the state through the
 * task's scratch (L1) and use exp16 (avx512_exp.h).  Tail blocks load
 * and store under a lane mask.  Compiled with a per-function target
 * attribute like gemm_avx512.c. */
#include "runtime/ssm_internal.h"

#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__)) && \
    !defined(RLX_NO_SIMD)
#include <immintrin.h>

#define TGT __attribute__((target("avx512f")))
#include "runtime/avx512_exp.h"

#define LANES RLX_SSM_LANES

/* 2^z for z = x log2(e) (the decay rates are stored pre-scaled by
 * log2(e)): n = rint(z), f = z - n in [-1/2, 1/2], 2^f by its degree-6
 * Taylor polynomial (relative error below 1.3e-7), scaled by 2^n with
 * vscalefps (0 below the denormal range). Four instructions fewer per
 * state update than exp16. */
TGT static inline __m512 exp2_16(__m512 z)
{
  z = _mm512_max_ps(z, _mm512_set1_ps(-160.0f));
  __m512 n = _mm512_roundscale_ps(z, _MM_FROUND_TO_NEAREST_INT |
                                         _MM_FROUND_NO_EXC);
  __m512 f = _mm512_sub_ps(z, n);
  __m512 p = _mm512_set1_ps(1.5252733804059841e-5f);
  p = _mm512_fmadd_ps(p, f, _mm512_set1_ps(1.5403530393381609e-4f));
  p = _mm512_fmadd_ps(p, f, _mm512_set1_ps(1.3333558146428443e-3f));
  p = _mm512_fmadd_ps(p, f, _mm512_set1_ps(9.6181291076284772e-3f));
  p = _mm512_fmadd_ps(p, f, _mm512_set1_ps(5.5504108664821580e-2f));
  p = _mm512_fmadd_ps(p, f, _mm512_set1_ps(2.4022650695910071e-1f));
  p = _mm512_fmadd_ps(p, f, _mm512_set1_ps(6.9314718055994531e-1f));
  p = _mm512_fmadd_ps(p, f, _mm512_set1_ps(1.0f));
  return _mm512_scalef_ps(p, n);
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
      atm[k * LANES + j] = j < nc ? a[(c0 + j) * n + k] : 0;
      stm[k * LANES + j] = 0;
    }
  if (n == 16) {
    for (int64_t k = 0; k < n * LANES; k++)
      atm[k] *= 1.44269504088896341f;
    block_16(p, bi, c0, atm);
    return;
  }
  for (int64_t t = 0; t < s; t++) {
    int64_t r = bi * s + t;
    const float *bt = (const float *)p->bm + r * n;
    const float *ct = (const float *)p->cm + r * n;
    __m512 dv = _mm512_maskz_loadu_ps(m, (const float *)p->delta + r * h + c0);
    __m512 du = _mm512_mul_ps(
        dv, _mm512_maskz_loadu_ps(m, (const float *)p->x + r * h + c0));
    __m512 yv = _mm512_setzero_ps();
    for (int64_t k = 0; k < n; k++) {
      __m512 e = exp16(_mm512_mul_ps(dv, _mm512_loadu_ps(atm + k * LANES)));
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
