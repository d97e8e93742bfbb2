/* avx512_transpose.h -- the 16 x 16 float in-register transpose shared
 * by the AVX-512 GEMM packing (gemm_avx512.c) and the convolution
 * transposes (conv_avx512.c). Include after <immintrin.h> with TGT
 * defined as the AVX-512 target attribute. */
#ifndef RLX_AVX512_TRANSPOSE_H
#define RLX_AVX512_TRANSPOSE_H

/* In-register transpose: r[i] lane j <-> r[j] lane i (16 x 16). */
TGT static inline void transpose16(__m512 r[16])
{
  __m512 t[16];
  for (int i = 0; i < 8; i++) {
    t[2 * i] = _mm512_unpacklo_ps(r[2 * i], r[2 * i + 1]);
    t[2 * i + 1] = _mm512_unpackhi_ps(r[2 * i], r[2 * i + 1]);
  }
  for (int g = 0; g < 4; g++) {
    __m512d t0 = _mm512_castps_pd(t[4 * g]);
    __m512d t1 = _mm512_castps_pd(t[4 * g + 1]);
    __m512d t2 = _mm512_castps_pd(t[4 * g + 2]);
    __m512d t3 = _mm512_castps_pd(t[4 * g + 3]);
    r[4 * g] = _mm512_castpd_ps(_mm512_unpacklo_pd(t0, t2));
    r[4 * g + 1] = _mm512_castpd_ps(_mm512_unpackhi_pd(t0, t2));
    r[4 * g + 2] = _mm512_castpd_ps(_mm512_unpacklo_pd(t1, t3));
    r[4 * g + 3] = _mm512_castpd_ps(_mm512_unpackhi_pd(t1, t3));
  }
  /* Now r[4g + c], 128-bit lane L, holds rows 4g..4g+3 of column
     4L + c; gather the four row groups of each column. */
  for (int c = 0; c < 4; c++) {
    __m512 a0 = _mm512_shuffle_f32x4(r[c], r[4 + c], 0x88);
    __m512 a1 = _mm512_shuffle_f32x4(r[c], r[4 + c], 0xDD);
    __m512 a2 = _mm512_shuffle_f32x4(r[8 + c], r[12 + c], 0x88);
    __m512 a3 = _mm512_shuffle_f32x4(r[8 + c], r[12 + c], 0xDD);
    t[c] = _mm512_shuffle_f32x4(a0, a2, 0x88);
    t[8 + c] = _mm512_shuffle_f32x4(a0, a2, 0xDD);
    t[4 + c] = _mm512_shuffle_f32x4(a1, a3, 0x88);
    t[12 + c] = _mm512_shuffle_f32x4(a1, a3, 0xDD);
  }
  for (int i = 0; i < 16; i++)
    r[i] = t[i];
}

#endif
