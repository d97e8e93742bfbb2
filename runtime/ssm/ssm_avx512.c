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
#include <math.h>
#include <string.h>

#include "runtime/ssm/ssm_internal.h"

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

/* Gated delta net, columns [j0, j0 + 2 LANES) of step t of one head
 * (ssm.c gdn_head_f32, the same operations on the same elements in the
 * same order, so the same bits): with PEND, first the previous step's
 * second pass S += kp d (its rank-1 update, fused into this pass), then
 * S1 = eg S, sk = S1^T k and sq = S1^T q over the rows i in order,
 * d = (v - sk) beta, o = (sq + d kq) rs; d replaces the old d in dp.
 * Separate multiplies and adds (no FMA), as the portable loops.  FULL:
 * all 2 LANES columns exist, S moves without lane masks (masked stores
 * cost about a fifth of the time at n = 64). */
TGT static inline __attribute__((always_inline)) void
gdn_cols(float *S, int64_t n, int64_t j0, int pend, int full,
         const float *kp, float *dp, const float *q, const float *k,
         const float *v, float eg, float be, float kq, float rs, float *o)
{
  __mmask16 m[2];
  __m512 dv[2], sk[2], sq[2];
  for (int c = 0; c < 2; c++) {
    int64_t nc = n - j0 - c * LANES;
    m[c] = lanes(nc < 0 ? 0 : nc < LANES ? nc : LANES);
    dv[c] = _mm512_maskz_loadu_ps(m[c], dp + j0 + c * LANES);
    sk[c] = sq[c] = _mm512_setzero_ps();
  }
  const __m512 veg = _mm512_set1_ps(eg);
  for (int64_t i = 0; i < n; i++) {
    const __m512 ki = _mm512_set1_ps(k[i]), qi = _mm512_set1_ps(q[i]);
    for (int c = 0; c < 2; c++) {
      float *Si = S + i * n + j0 + c * LANES;
      __m512 w =
          full ? _mm512_loadu_ps(Si) : _mm512_maskz_loadu_ps(m[c], Si);
      if (pend)
        w = _mm512_add_ps(w, _mm512_mul_ps(_mm512_set1_ps(kp[i]), dv[c]));
      w = _mm512_mul_ps(w, veg);
      if (full)
        _mm512_storeu_ps(Si, w);
      else
        _mm512_mask_storeu_ps(Si, m[c], w);
      sk[c] = _mm512_add_ps(sk[c], _mm512_mul_ps(w, ki));
      sq[c] = _mm512_add_ps(sq[c], _mm512_mul_ps(w, qi));
    }
  }
  for (int c = 0; c < 2; c++) {
    int64_t j = j0 + c * LANES;
    __m512 d = _mm512_mul_ps(
        _mm512_sub_ps(_mm512_maskz_loadu_ps(m[c], v + j), sk[c]),
        _mm512_set1_ps(be));
    __m512 y = _mm512_mul_ps(
        _mm512_add_ps(sq[c], _mm512_mul_ps(d, _mm512_set1_ps(kq))),
        _mm512_set1_ps(rs));
    _mm512_mask_storeu_ps(o + j, m[c], y);
    _mm512_mask_storeu_ps(dp + j, m[c], d);
  }
}

/* One (batch row, head) of the f32 gated delta net: S [n][n] and the
 * previous step's d (n floats) in ws.  Each step prefetches the next
 * step's q, k, v and o rows (H n floats apart). */
TGT static void gdn_head(const rlx_ssm_args *p, int64_t task, float *S)
{
  const int64_t s = p->s, H = p->h, n = p->n;
  const int64_t bi = task / H, hh = task % H;
  const float rs = (float)(1 / sqrt((double)n));
  float *dp = S + n * n;
  const float *kp = 0;
  memset(S, 0, sizeof(float) * (size_t)(n * n));
  for (int64_t t = 0; t < s; t++) {
    int64_t r = (bi * s + t) * H + hh;
    const float *q = (const float *)p->x + r * n;
    const float *k = (const float *)p->delta + r * n;
    const float *v = (const float *)p->a + r * n;
    float *o = (float *)p->y + r * n;
    if (t + 1 < s)
      for (int64_t j = 0; j < n; j += LANES) {
        _mm_prefetch((const char *)(q + H * n + j), _MM_HINT_T0);
        _mm_prefetch((const char *)(k + H * n + j), _MM_HINT_T0);
        _mm_prefetch((const char *)(v + H * n + j), _MM_HINT_T0);
        _mm_prefetch((const char *)(o + H * n + j), _MM_HINT_T0);
      }
    float eg = expf(((const float *)p->bm)[r]), be = ((const float *)p->cm)[r];
    float kq = 0;
    for (int64_t j = 0; j < n; j++)
      kq += k[j] * q[j];
    for (int64_t j0 = 0; j0 < n; j0 += 2 * LANES)
      if (n - j0 < 2 * LANES)
        gdn_cols(S, n, j0, kp != 0, 0, kp, dp, q, k, v, eg, be, kq, rs, o);
      else if (kp)
        gdn_cols(S, n, j0, 1, 1, kp, dp, q, k, v, eg, be, kq, rs, o);
      else
        gdn_cols(S, n, j0, 0, 1, kp, dp, q, k, v, eg, be, kq, rs, o);
    kp = k;
  }
}

const rlx_ssm_block_f32_fn rlx_ssm_avx512_block_f32 = block_f32;
const rlx_gdn_head_f32_fn rlx_gdn_avx512_head_f32 = gdn_head;
#else
const rlx_ssm_block_f32_fn rlx_ssm_avx512_block_f32 = 0;
const rlx_gdn_head_f32_fn rlx_gdn_avx512_head_f32 = 0;
#endif
