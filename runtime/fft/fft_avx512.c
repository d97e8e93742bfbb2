/* fft_avx512.c -- the Stockham stage kernel (fft_tmpl.h) compiled for
 * AVX-512F with a per-function target attribute, like gemm_avx512.c;
 * fft.c calls it only when the GEMM dispatch chose avx512.  The
 * radix-4 stages (those of stride 1 and 4, which the compiler leaves
 * scalar, and of strides that are multiples of 16) have an intrinsics
 * version (small4) doing the same operations; so do the radix 2, 3, 5
 * stages and the radix-4 ones small4 leaves (vec_stage: strides 1, 2,
 * 4, 8 and >= 16, masked tails).
 * Without FP contraction (CMakeLists.txt) it gives the same bits as the
 * portable kernel.
 */
#include "runtime/fft/fft_internal.h"

#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__)) && \
    !defined(RLX_NO_SIMD)
#include <immintrin.h>

#define TGT __attribute__((target("avx512f")))

/* (a + i b) * (c + i d), the operations of fft_tmpl.h's CMUL */
#define VMUL(x, y) _mm512_mul_ps(x, y)
#define VADD(x, y) _mm512_add_ps(x, y)
#define VSUB(x, y) _mm512_sub_ps(x, y)

/* Outputs v0..v3 (16 lanes: 4 groups of 4) as [v0.g, v1.g, v2.g, v3.g]
 * for each 128-bit group g: a transpose of 4 x 4 groups. */
TGT static inline void store_groups(float *y, __m512 v0, __m512 v1,
                                    __m512 v2, __m512 v3)
{
  __m512 a = _mm512_shuffle_f32x4(v0, v1, 0x44);
  __m512 b = _mm512_shuffle_f32x4(v0, v1, 0xEE);
  __m512 c = _mm512_shuffle_f32x4(v2, v3, 0x44);
  __m512 d = _mm512_shuffle_f32x4(v2, v3, 0xEE);
  _mm512_storeu_ps(y, _mm512_shuffle_f32x4(a, c, 0x88));
  _mm512_storeu_ps(y + 16, _mm512_shuffle_f32x4(a, c, 0xDD));
  _mm512_storeu_ps(y + 32, _mm512_shuffle_f32x4(b, d, 0x88));
  _mm512_storeu_ps(y + 48, _mm512_shuffle_f32x4(b, d, 0xDD));
}

/* Lanes 4l + j of the result hold element l of vj ... for the in-lane
 * 4 x 4 transpose: [v0[4l+t], v1[4l+t], v2[4l+t], v3[4l+t]] in lane l of
 * output t. */
TGT static inline void transpose_in_lanes(__m512 *v)
{
  __m512 t0 = _mm512_unpacklo_ps(v[0], v[2]);
  __m512 t1 = _mm512_unpackhi_ps(v[0], v[2]);
  __m512 t2 = _mm512_unpacklo_ps(v[1], v[3]);
  __m512 t3 = _mm512_unpackhi_ps(v[1], v[3]);
  v[0] = _mm512_unpacklo_ps(t0, t2);
  v[1] = _mm512_unpackhi_ps(t0, t2);
  v[2] = _mm512_unpacklo_ps(t1, t3);
  v[3] = _mm512_unpackhi_ps(t1, t3);
}

/* Radix-4 stages of stride s = 1 or 4 (where the generic loops run
 * scalar) or a multiple of 16: 16 consecutive inputs i = q + s p per
 * vector, the butterfly of fft_tmpl.h's BFLY4 with the same operations,
 * then the outputs y[q + s (4 p + k)] (by register transposes for s = 1
 * and 4).  Returns 0 (not handled) for other strides or lengths. */
TGT static int small4(const FftStage *st, const float *restrict xr,
                      const float *restrict xi, float *restrict yr,
                      float *restrict yi)
{
  const int64_t m = st->m, s = st->s, is = s * m;
  if (!((s == 1 && m % 16 == 0) || (s == 4 && m % 4 == 0) || s % 16 == 0))
    return 0;
  const __m512 sgp = _mm512_set1_ps(st->sg), sgn = _mm512_set1_ps(-st->sg);
  const __m512i rep4 = _mm512_set_epi32(3, 3, 3, 3, 2, 2, 2, 2, 1, 1, 1, 1,
                                        0, 0, 0, 0);
  for (int64_t i = 0; i < is; i += 16) {
    const int64_t p = i / s;
    __m512 a0r = _mm512_loadu_ps(xr + i), a0i = _mm512_loadu_ps(xi + i);
    __m512 a1r = _mm512_loadu_ps(xr + i + is);
    __m512 a1i = _mm512_loadu_ps(xi + i + is);
    __m512 a2r = _mm512_loadu_ps(xr + i + 2 * is);
    __m512 a2i = _mm512_loadu_ps(xi + i + 2 * is);
    __m512 a3r = _mm512_loadu_ps(xr + i + 3 * is);
    __m512 a3i = _mm512_loadu_ps(xi + i + 3 * is);
    __m512 t0r = VADD(a0r, a2r), t0i = VADD(a0i, a2i);
    __m512 t1r = VSUB(a0r, a2r), t1i = VSUB(a0i, a2i);
    __m512 t2r = VADD(a1r, a3r), t2i = VADD(a1i, a3i);
    __m512 dr = VMUL(VSUB(a1i, a3i), sgn), di = VMUL(VSUB(a1r, a3r), sgp);
    __m512 br[4], bi[4];
    br[0] = VADD(t0r, t2r);
    bi[0] = VADD(t0i, t2i);
    __m512 ur[3] = {VADD(t1r, dr), VSUB(t0r, t2r), VSUB(t1r, dr)};
    __m512 ui[3] = {VADD(t1i, di), VSUB(t0i, t2i), VSUB(t1i, di)};
    for (int k = 1; k < 4; k++) {
      const float *twr = st->twr + (k - 1) * m + p;
      const float *twi = st->twi + (k - 1) * m + p;
      __m512 wr, wi;
      if (s == 1) {
        wr = _mm512_loadu_ps(twr);
        wi = _mm512_loadu_ps(twi);
      } else if (s >= 16) {
        wr = _mm512_set1_ps(*twr);
        wi = _mm512_set1_ps(*twi);
      } else {
        wr = _mm512_permutexvar_ps(rep4, _mm512_castps128_ps512(
                                             _mm_loadu_ps(twr)));
        wi = _mm512_permutexvar_ps(rep4, _mm512_castps128_ps512(
                                             _mm_loadu_ps(twi)));
      }
      br[k] = VSUB(VMUL(ur[k - 1], wr), VMUL(ui[k - 1], wi));
      bi[k] = VADD(VMUL(ur[k - 1], wi), VMUL(ui[k - 1], wr));
    }
    if (s >= 16) { /* y[q + s (4 p + k)], 16 consecutive q */
      float *yr_ = yr + (i % s) + 4 * s * p, *yi_ = yi + (i % s) + 4 * s * p;
      for (int k = 0; k < 4; k++) {
        _mm512_storeu_ps(yr_ + k * s, br[k]);
        _mm512_storeu_ps(yi_ + k * s, bi[k]);
      }
      continue;
    }
    /* s = 1: outputs y[4 (i + l) + k]; s = 4: y[16 p' + 4 k + q] */
    if (s == 1) {
      transpose_in_lanes(br);
      transpose_in_lanes(bi);
    }
    store_groups(yr + 4 * i, br[0], br[1], br[2], br[3]);
    store_groups(yi + 4 * i, bi[0], bi[1], bi[2], bi[3]);
  }
  return 1;
}

/* The butterflies of fft_tmpl.h (BFLY2 .. BFLY5) on vectors, the same
 * operations in the same order: a[j] in, b[k] out before the twiddles. */
__attribute__((always_inline)) TGT static inline void
vbfly(int r, float sg, const __m512 *ar, const __m512 *ai, __m512 *br,
      __m512 *bi)
{
  if (r == 2) {
    br[0] = VADD(ar[0], ar[1]);
    bi[0] = VADD(ai[0], ai[1]);
    br[1] = VSUB(ar[0], ar[1]);
    bi[1] = VSUB(ai[0], ai[1]);
  } else if (r == 3) {
    const __m512 h = _mm512_set1_ps(0.5f);
    const __m512 c = _mm512_set1_ps(0.86602540378443864676f * sg);
    __m512 tr = VADD(ar[1], ar[2]), ti = VADD(ai[1], ai[2]);
    __m512 dr = VMUL(VSUB(ar[1], ar[2]), c), di = VMUL(VSUB(ai[1], ai[2]), c);
    __m512 ur = VSUB(ar[0], VMUL(tr, h)), ui = VSUB(ai[0], VMUL(ti, h));
    br[0] = VADD(ar[0], tr);
    bi[0] = VADD(ai[0], ti);
    br[1] = VSUB(ur, di);
    bi[1] = VADD(ui, dr);
    br[2] = VADD(ur, di);
    bi[2] = VSUB(ui, dr);
  } else if (r == 4) {
    const __m512 sgp = _mm512_set1_ps(sg), sgn = _mm512_set1_ps(-sg);
    __m512 t0r = VADD(ar[0], ar[2]), t0i = VADD(ai[0], ai[2]);
    __m512 t1r = VSUB(ar[0], ar[2]), t1i = VSUB(ai[0], ai[2]);
    __m512 t2r = VADD(ar[1], ar[3]), t2i = VADD(ai[1], ai[3]);
    __m512 dr = VMUL(VSUB(ai[1], ai[3]), sgn);
    __m512 di = VMUL(VSUB(ar[1], ar[3]), sgp);
    br[0] = VADD(t0r, t2r);
    bi[0] = VADD(t0i, t2i);
    br[1] = VADD(t1r, dr);
    bi[1] = VADD(t1i, di);
    br[2] = VSUB(t0r, t2r);
    bi[2] = VSUB(t0i, t2i);
    br[3] = VSUB(t1r, dr);
    bi[3] = VSUB(t1i, di);
  } else {
    const __m512 c1 = _mm512_set1_ps(0.30901699437494742410f);
    const __m512 c2 = _mm512_set1_ps(-0.80901699437494742410f);
    const __m512 s1 = _mm512_set1_ps(0.95105651629515357212f * sg);
    const __m512 s2 = _mm512_set1_ps(0.58778525229247312917f * sg);
    __m512 p1r = VADD(ar[1], ar[4]), p1i = VADD(ai[1], ai[4]);
    __m512 m1r = VSUB(ar[1], ar[4]), m1i = VSUB(ai[1], ai[4]);
    __m512 p2r = VADD(ar[2], ar[3]), p2i = VADD(ai[2], ai[3]);
    __m512 m2r = VSUB(ar[2], ar[3]), m2i = VSUB(ai[2], ai[3]);
    __m512 u1r = VADD(VADD(ar[0], VMUL(c1, p1r)), VMUL(c2, p2r));
    __m512 u1i = VADD(VADD(ai[0], VMUL(c1, p1i)), VMUL(c2, p2i));
    __m512 u2r = VADD(VADD(ar[0], VMUL(c2, p1r)), VMUL(c1, p2r));
    __m512 u2i = VADD(VADD(ai[0], VMUL(c2, p1i)), VMUL(c1, p2i));
    __m512 v1r = VADD(VMUL(s1, m1r), VMUL(s2, m2r));
    __m512 v1i = VADD(VMUL(s1, m1i), VMUL(s2, m2i));
    __m512 v2r = VSUB(VMUL(s2, m1r), VMUL(s1, m2r));
    __m512 v2i = VSUB(VMUL(s2, m1i), VMUL(s1, m2i));
    br[0] = VADD(VADD(ar[0], p1r), p2r);
    bi[0] = VADD(VADD(ai[0], p1i), p2i);
    br[1] = VSUB(u1r, v1i);
    bi[1] = VADD(u1i, v1r);
    br[2] = VSUB(u2r, v2i);
    bi[2] = VADD(u2i, v2r);
    br[3] = VADD(u2r, v2i);
    bi[3] = VSUB(u2i, v2r);
    br[4] = VADD(u1r, v1i);
    bi[4] = VSUB(u1i, v1r);
  }
}

/* b *= w, fft_tmpl.h's CMUL */
__attribute__((always_inline)) TGT static inline void
vtwiddle(__m512 *br, __m512 *bi, __m512 wr, __m512 wi)
{
  __m512 cr = VSUB(VMUL(*br, wr), VMUL(*bi, wi));
  __m512 ci = VADD(VMUL(*br, wi), VMUL(*bi, wr));
  *br = cr;
  *bi = ci;
}

static inline __mmask16 first(int64_t cnt)
{
  return cnt >= 16  ? (__mmask16)0xFFFF
         : cnt <= 0 ? (__mmask16)0
                    : (__mmask16)((1u << cnt) - 1);
}

/* Stride s >= 16: 16 consecutive q per vector (masked tail), the
 * twiddles of p broadcast. */
__attribute__((always_inline)) TGT static inline void
vec_wide(const int r, const FftStage *st, const float *restrict xr,
         const float *restrict xi, float *restrict yr, float *restrict yi)
{
  const int64_t m = st->m, s = st->s, is = s * m;
  for (int64_t p = 0; p < m; p++) {
    __m512 wr[5], wi[5];
    for (int k = 1; k < r; k++) {
      wr[k] = _mm512_set1_ps(st->twr[(k - 1) * m + p]);
      wi[k] = _mm512_set1_ps(st->twi[(k - 1) * m + p]);
    }
    for (int64_t q = 0; q < s; q += 16) {
      const __mmask16 lm = first(s - q);
      const int64_t i = q + s * p;
      __m512 ar[5], ai[5], br[5], bi[5];
      for (int j = 0; j < r; j++) {
        ar[j] = _mm512_maskz_loadu_ps(lm, xr + i + j * is);
        ai[j] = _mm512_maskz_loadu_ps(lm, xi + i + j * is);
      }
      vbfly(r, st->sg, ar, ai, br, bi);
      float *yr_ = yr + q + s * r * p, *yi_ = yi + q + s * r * p;
      _mm512_mask_storeu_ps(yr_, lm, br[0]);
      _mm512_mask_storeu_ps(yi_, lm, bi[0]);
      for (int k = 1; k < r; k++) {
        vtwiddle(&br[k], &bi[k], wr[k], wi[k]);
        _mm512_mask_storeu_ps(yr_ + k * s, lm, br[k]);
        _mm512_mask_storeu_ps(yi_ + k * s, lm, bi[k]);
      }
    }
  }
}

/* Stride s = 1, 2, 4 or 8: 16 consecutive inputs i = q + s p per vector
 * (masked tail); lane l's twiddle is that of p = i / s (a permute of
 * 16 / s loaded ones); the outputs y[q + s (r p + k)] of a vector are
 * the r * 16 floats from r * i on, gathered from the b[k] by masked
 * permutes (lane e of output vector v: k = (e' / s) % r, l = e' % s +
 * s (e' / (s r)), e' = 16 v + e). */
__attribute__((always_inline)) TGT static inline void
vec_narrow(const int r, const FftStage *st, const float *restrict xr,
           const float *restrict xi, float *restrict yr, float *restrict yi)
{
  const int64_t m = st->m, s = st->s, is = s * m;
  int32_t idx[5][16], div[16];
  __mmask16 mk[5][5] = {{0}};
  for (int v = 0; v < r; v++)
    for (int e = 0; e < 16; e++) {
      int pos = 16 * v + e, t = pos / (int)s;
      idx[v][e] = pos % (int)s + (int)s * (t / r);
      mk[v][t % r] |= (__mmask16)(1u << e);
    }
  for (int e = 0; e < 16; e++)
    div[e] = e / (int)s;
  const __m512i dv = _mm512_loadu_si512(div);
  __m512i iv[5];
  for (int v = 0; v < r; v++)
    iv[v] = _mm512_loadu_si512(idx[v]);
  for (int64_t i = 0; i < is; i += 16) {
    const int64_t L = is - i < 16 ? is - i : 16;
    const __mmask16 lm = first(L);
    __m512 ar[5], ai[5], br[5], bi[5];
    for (int j = 0; j < r; j++) {
      ar[j] = _mm512_maskz_loadu_ps(lm, xr + i + j * is);
      ai[j] = _mm512_maskz_loadu_ps(lm, xi + i + j * is);
    }
    vbfly(r, st->sg, ar, ai, br, bi);
    const __mmask16 wm = first((L + s - 1) / s);
    for (int k = 1; k < r; k++) {
      const int64_t t = (k - 1) * m + i / s;
      __m512 wr = _mm512_maskz_loadu_ps(wm, st->twr + t);
      __m512 wi = _mm512_maskz_loadu_ps(wm, st->twi + t);
      if (s > 1) {
        wr = _mm512_permutexvar_ps(dv, wr);
        wi = _mm512_permutexvar_ps(dv, wi);
      }
      vtwiddle(&br[k], &bi[k], wr, wi);
    }
    for (int v = 0; v < r && 16 * v < L * r; v++) {
      __m512 or_ = _mm512_setzero_ps(), oi = _mm512_setzero_ps();
      for (int k = 0; k < r; k++) {
        or_ = _mm512_mask_permutexvar_ps(or_, mk[v][k], iv[v], br[k]);
        oi = _mm512_mask_permutexvar_ps(oi, mk[v][k], iv[v], bi[k]);
      }
      const __mmask16 om = first(L * r - 16 * v);
      _mm512_mask_storeu_ps(yr + r * i + 16 * v, om, or_);
      _mm512_mask_storeu_ps(yi + r * i + 16 * v, om, oi);
    }
  }
}

/* The stages with an intrinsics version; returns 0 for the others
 * (strides 3, 5, 6, 7, 9 .. 15 and radices > 5: the template's loops). */
TGT static int vec_stage(const FftStage *st, const float *restrict xr,
                         const float *restrict xi, float *restrict yr,
                         float *restrict yi)
{
  const int64_t s = st->s;
  if (st->r == 4 && small4(st, xr, xi, yr, yi))
    return 1;
  if (s < 16 && 16 % s)
    return 0;
  switch (st->r) {
#define VEC_CASE(R)                                                      \
  case R:                                                                \
    if (s >= 16)                                                         \
      vec_wide(R, st, xr, xi, yr, yi);                                   \
    else                                                                 \
      vec_narrow(R, st, xr, xi, yr, yi);                                 \
    return 1;
    VEC_CASE(2)
    VEC_CASE(3)
    VEC_CASE(4)
    VEC_CASE(5)
#undef VEC_CASE
  default: return 0;
  }
}

#define STAGE_VEC vec_stage

/* Interleaved (re, im) <-> split arrays, 16 complex per step, masked
 * tail; the join's product by scale is fft.c's. */
TGT void rlx_fft_split_avx512(const float *x, int64_t n, float *re,
                              float *im)
{
  const __m512i ev = _mm512_set_epi32(30, 28, 26, 24, 22, 20, 18, 16, 14,
                                      12, 10, 8, 6, 4, 2, 0);
  const __m512i od = _mm512_add_epi32(ev, _mm512_set1_epi32(1));
  for (int64_t j = 0; j < n; j += 16) {
    const __mmask16 lm = first(n - j);
    __m512 a = _mm512_maskz_loadu_ps(first(2 * (n - j)), x + 2 * j);
    __m512 b = _mm512_maskz_loadu_ps(first(2 * (n - j) - 16), x + 2 * j + 16);
    _mm512_mask_storeu_ps(re + j, lm, _mm512_permutex2var_ps(a, ev, b));
    _mm512_mask_storeu_ps(im + j, lm, _mm512_permutex2var_ps(a, od, b));
  }
}

TGT void rlx_fft_join_avx512(const float *re, const float *im, int64_t n,
                             float scale, float *y)
{
  const __m512i lo = _mm512_set_epi32(23, 7, 22, 6, 21, 5, 20, 4, 19, 3, 18,
                                      2, 17, 1, 16, 0);
  const __m512i hi = _mm512_add_epi32(lo, _mm512_set1_epi32(8));
  const __m512 sc = _mm512_set1_ps(scale);
  for (int64_t k = 0; k < n; k += 16) {
    const __mmask16 lm = first(n - k);
    __m512 a = VMUL(_mm512_maskz_loadu_ps(lm, re + k), sc);
    __m512 b = VMUL(_mm512_maskz_loadu_ps(lm, im + k), sc);
    _mm512_mask_storeu_ps(y + 2 * k, first(2 * (n - k)),
                          _mm512_permutex2var_ps(a, lo, b));
    _mm512_mask_storeu_ps(y + 2 * k + 16, first(2 * (n - k) - 16),
                          _mm512_permutex2var_ps(a, hi, b));
  }
}
#define STAGE_FN rlx_fft_stage_avx512
#include "runtime/fft/fft_tmpl.h"
#else
void rlx_fft_stage_avx512(const FftStage *st, const float *xr,
                          const float *xi, float *yr, float *yi)
{
  rlx_fft_stage_scalar(st, xr, xi, yr, yi);
}

void rlx_fft_split_avx512(const float *x, int64_t n, float *re, float *im)
{
  rlx_fft_split_scalar(x, n, re, im);
}

void rlx_fft_join_avx512(const float *re, const float *im, int64_t n,
                         float scale, float *y)
{
  rlx_fft_join_scalar(re, im, n, scale, y);
}
#endif
