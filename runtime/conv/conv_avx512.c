/* conv_avx512.c -- AVX-512F convolution micro-kernels (conv_kern.h) and
 * the channel transposes, f32 and f64.
 *
 * The kernels are conv_kern.h over 512-bit vectors (simd/vec_avx512.h);
 * conv.c uses these tables when the GEMM dispatch chose avx512.
 * Transposes go through 16 x 16 (f32) / 8 x 8 (f64) register blocks,
 * with masked loads and stores at the edges only: masked loads stream
 * from memory at about half the rate of plain ones (Zen 5).
 */
#include "runtime/conv/conv_internal.h"
#include "runtime/simd/isa.h"

#define KVMAX {4, 4, 4, 3, 2}
#define KACC 28

#if RLX_HAVE_X86_SIMD

/* ---- f32 ---- */
#define VEC_F64 0
#define T float
#define SFX F32
#include "runtime/simd/vec_avx512.h"
#include "runtime/conv/conv_kern.h"

#include "runtime/simd/avx512_transpose.h"

TGT static void trans_f32(const float *src, int64_t ss, int64_t rows,
                          int64_t len, float *dst, int64_t ld, int64_t width)
{
  for (int64_t i0 = 0; i0 < width; i0 += 16) {
    int64_t ni = width - i0 < 16 ? width - i0 : 16;
    __mmask16 st = (__mmask16)((1u << ni) - 1);
    for (int64_t p0 = 0; p0 < len; p0 += 16) {
      int64_t np = len - p0 < 16 ? len - p0 : 16;
      __mmask16 ld_m = (__mmask16)((1u << np) - 1);
      __m512 r[16];
      for (int i = 0; i < 16; i++) {
        const float *s = src + (i0 + i) * ss + p0;
        r[i] = i0 + i >= rows ? _mm512_setzero_ps()
               : np == 16     ? _mm512_loadu_ps(s)
                              : _mm512_maskz_loadu_ps(ld_m, s);
      }
      transpose16(r);
      for (int j = 0; j < np; j++)
        _mm512_mask_storeu_ps(dst + (p0 + j) * ld + i0, st, r[j]);
    }
  }
}

CONV_TABLE(rlx_conv_avx512_f32, "avx512", trans_f32);

#undef VEC_F64
#undef T
#undef SFX

/* ---- f64 ---- */
#define VEC_F64 1
#define T double
#define SFX F64
#include "runtime/simd/vec_avx512.h"
#include "runtime/conv/conv_kern.h"

/* out[j] lane i = r[i] lane j for 8 x 8 doubles. */
TGT static inline void transpose8(__m512d r[8])
{
  __m512d t[8], out[8];
  for (int i = 0; i < 4; i++) {
    t[2 * i] = _mm512_unpacklo_pd(r[2 * i], r[2 * i + 1]);
    t[2 * i + 1] = _mm512_unpackhi_pd(r[2 * i], r[2 * i + 1]);
  }
  for (int o = 0; o < 2; o++) {
    __m512d u0 = _mm512_shuffle_f64x2(t[o], t[2 + o], 0x88);
    __m512d u1 = _mm512_shuffle_f64x2(t[4 + o], t[6 + o], 0x88);
    __m512d u2 = _mm512_shuffle_f64x2(t[o], t[2 + o], 0xDD);
    __m512d u3 = _mm512_shuffle_f64x2(t[4 + o], t[6 + o], 0xDD);
    out[o] = _mm512_shuffle_f64x2(u0, u1, 0x88);
    out[4 + o] = _mm512_shuffle_f64x2(u0, u1, 0xDD);
    out[2 + o] = _mm512_shuffle_f64x2(u2, u3, 0x88);
    out[6 + o] = _mm512_shuffle_f64x2(u2, u3, 0xDD);
  }
  for (int i = 0; i < 8; i++)
    r[i] = out[i];
}

TGT static void trans_f64(const double *src, int64_t ss, int64_t rows,
                          int64_t len, double *dst, int64_t ld, int64_t width)
{
  for (int64_t i0 = 0; i0 < width; i0 += 8) {
    int64_t ni = width - i0 < 8 ? width - i0 : 8;
    __mmask8 st = (__mmask8)((1u << ni) - 1);
    for (int64_t p0 = 0; p0 < len; p0 += 8) {
      int64_t np = len - p0 < 8 ? len - p0 : 8;
      __mmask8 ld_m = (__mmask8)((1u << np) - 1);
      __m512d r[8];
      for (int i = 0; i < 8; i++) {
        const double *s = src + (i0 + i) * ss + p0;
        r[i] = i0 + i >= rows ? _mm512_setzero_pd()
               : np == 8      ? _mm512_loadu_pd(s)
                              : _mm512_maskz_loadu_pd(ld_m, s);
      }
      transpose8(r);
      for (int j = 0; j < np; j++)
        _mm512_mask_storeu_pd(dst + (p0 + j) * ld + i0, st, r[j]);
    }
  }
}

CONV_TABLE(rlx_conv_avx512_f64, "avx512", trans_f64);
#else
const ConvIsaF32 rlx_conv_avx512_f32 = {.name = "avx512"};
const ConvIsaF64 rlx_conv_avx512_f64 = {.name = "avx512"};
#endif
