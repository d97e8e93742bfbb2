/* fft_avx512.c -- the Stockham stage kernel (fft_tmpl.h) compiled for
 * AVX-512F with a per-function target attribute, like gemm_avx512.c;
 * fft.c calls it only when the GEMM dispatch chose avx512.  The
 * radix-4 stages (those of stride 1 and 4, which the compiler leaves
 * scalar, and of strides that are multiples of 16) have an intrinsics
 * version (small4) doing the same operations.
 * Without FP contraction (CMakeLists.txt) it gives the same bits as the
 * portable kernel.
 */
#include "runtime/fft_internal.h"

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

#define STAGE_SMALL4 small4
#define STAGE_FN rlx_fft_stage_avx512
#include "runtime/fft_tmpl.h"
#else
void rlx_fft_stage_avx512(const FftStage *st, const float *xr,
                          const float *xi, float *yr, float *yi)
{
  rlx_fft_stage_scalar(st, xr, xi, yr, yi);
}
#endif
