/* attention_trans_avx2.h -- the f32 trans kernel of attention_internal.h
 * in 8 x 8 blocks through the AVX2 in-register transpose (simd/
 * avx2_transpose.h), the rest element by element.  Included by
 * attention_avx2.c and attention_avx512.c (every AVX-512 CPU has AVX2)
 * before attention_isa.h; defines ATTN_TRANS_F32.  Moves and one
 * multiply per element: the bits of the portable kernel.
 */
#include <immintrin.h>

#define TGT __attribute__((target("avx2")))
#include "runtime/simd/avx2_transpose.h"

TGT static void trans_avx2_f32(const float *src, int64_t lds, int64_t rows,
                               int64_t cols, float mul, float *dst,
                               int64_t ldd)
{
  const __m256 m = _mm256_set1_ps(mul);
  int64_t r8 = rows / 8 * 8, c8 = cols / 8 * 8;
  for (int64_t r0 = 0; r0 < r8; r0 += 8) {
    for (int64_t c0 = 0; c0 < c8; c0 += 8) {
      __m256 v[8];
      for (int i = 0; i < 8; i++)
        v[i] = _mm256_loadu_ps(src + (r0 + i) * lds + c0);
      transpose8_ps(v);
      for (int j = 0; j < 8; j++)
        _mm256_storeu_ps(dst + (c0 + j) * ldd + r0, _mm256_mul_ps(v[j], m));
    }
    for (int64_t c = c8; c < cols; c++)
      for (int64_t r = r0; r < r0 + 8; r++)
        dst[c * ldd + r] = src[r * lds + c] * mul;
  }
  for (int64_t r = r8; r < rows; r++)
    for (int64_t c = 0; c < cols; c++)
      dst[c * ldd + r] = src[r * lds + c] * mul;
}
#undef TGT
#define ATTN_TRANS_F32 trans_avx2_f32
