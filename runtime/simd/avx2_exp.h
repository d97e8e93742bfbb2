/* avx2_exp.h -- exp8: exp of 8 floats with AVX2 + FMA, for the
 * attention kernels.  Include only where TGT is the avx2,fma target
 * attribute and <immintrin.h> is included.
 *
 * The algorithm and constants of exp16 (avx512_exp.h), operation for
 * operation, so both give the same bits: x clamped to [-110, 88.72],
 * n = rint(x / ln 2), r = x - n ln 2 in two FMAs, the degree-7
 * polynomial, then p * 2^n.  AVX2 has no vscalefps: 2^n is applied as
 * two exact powers 2^(n >> 1) and 2^(n - (n >> 1)) (each a normal
 * float for n in [-159, 128]), so the only rounding is the last
 * product's, which is scalef's rounding (denormal results included). */
#ifndef RLX_AVX2_EXP_H
#define RLX_AVX2_EXP_H

/* 2^e for integer lanes e in [-126, 127]. */
TGT static inline __m256 pow2i8(__m256i e)
{
  return _mm256_castsi256_ps(
      _mm256_slli_epi32(_mm256_add_epi32(e, _mm256_set1_epi32(127)), 23));
}

TGT static inline __m256 exp8(__m256 x)
{
  x = _mm256_max_ps(x, _mm256_set1_ps(-110.0f));
  x = _mm256_min_ps(x, _mm256_set1_ps(88.72f));
  __m256 n = _mm256_round_ps(
      _mm256_mul_ps(x, _mm256_set1_ps(1.44269504088896341f)),
      _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
  __m256 r = _mm256_fnmadd_ps(n, _mm256_set1_ps(0.693359375f), x);
  r = _mm256_fnmadd_ps(n, _mm256_set1_ps(-2.12194440e-4f), r);
  __m256 p = _mm256_set1_ps(1.9875691500e-4f);
  p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(1.3981999507e-3f));
  p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(8.3334519073e-3f));
  p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(4.1665795894e-2f));
  p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(1.6666665459e-1f));
  p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(5.0000001201e-1f));
  p = _mm256_fmadd_ps(p, _mm256_mul_ps(r, r), r);
  p = _mm256_add_ps(p, _mm256_set1_ps(1.0f));
  __m256i ni = _mm256_cvtps_epi32(n);
  __m256i n1 = _mm256_srai_epi32(ni, 1);
  return _mm256_mul_ps(_mm256_mul_ps(p, pow2i8(n1)),
                       pow2i8(_mm256_sub_epi32(ni, n1)));
}

#endif
