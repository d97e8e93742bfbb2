/* avx2_transpose.h -- the 8 x 8 float in-register transpose shared by
 * the AVX2 GEMM packing (gemm_avx2.c) and the convolution transposes
 * (conv_avx2.c).  Include after <immintrin.h> with TGT defined as the
 * AVX2 target attribute. */
#ifndef RLX_AVX2_TRANSPOSE_H
#define RLX_AVX2_TRANSPOSE_H

/* In-register transpose: out[j] lane i = r[i] lane j (8 x 8 floats). */
TGT static inline void transpose8_ps(__m256 r[8])
{
  __m256 t[8], s[8];
  for (int i = 0; i < 4; i++) {
    t[2 * i] = _mm256_unpacklo_ps(r[2 * i], r[2 * i + 1]);
    t[2 * i + 1] = _mm256_unpackhi_ps(r[2 * i], r[2 * i + 1]);
  }
  for (int h = 0; h < 2; h++) {
    __m256 a = t[4 * h], b = t[4 * h + 1], c = t[4 * h + 2];
    __m256 d = t[4 * h + 3];
    s[4 * h] = _mm256_shuffle_ps(a, c, 0x44);
    s[4 * h + 1] = _mm256_shuffle_ps(a, c, 0xEE);
    s[4 * h + 2] = _mm256_shuffle_ps(b, d, 0x44);
    s[4 * h + 3] = _mm256_shuffle_ps(b, d, 0xEE);
  }
  for (int i = 0; i < 4; i++) {
    r[i] = _mm256_permute2f128_ps(s[i], s[4 + i], 0x20);
    r[4 + i] = _mm256_permute2f128_ps(s[i], s[4 + i], 0x31);
  }
}

#endif
