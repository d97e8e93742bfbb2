/* avx512_exp.h -- exp16: exp of 16 floats with AVX-512F, for the
 * attention kernels.  Include only where TGT is the
 * avx512f target attribute and <immintrin.h> is included.
 *
 * x clamped to [-110, 88.72] (below -103.97 the result is exactly 0:
 * -inf gives 0, never a denormal), n = rint(x / ln 2), r = x - n ln 2
 * in two FMAs (Cody-Waite), exp(r) by the degree-7 polynomial of Cephes
 * expf, scaled by 2^n with vscalefps (which also handles the denormal
 * range).  About 1 ulp. */
#ifndef RLX_AVX512_EXP_H
#define RLX_AVX512_EXP_H

TGT static inline __m512 exp16(__m512 x)
{
  x = _mm512_max_ps(x, _mm512_set1_ps(-110.0f));
  x = _mm512_min_ps(x, _mm512_set1_ps(88.72f));
  __m512 n = _mm512_roundscale_ps(
      _mm512_mul_ps(x, _mm512_set1_ps(1.44269504088896341f)),
      _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
  __m512 r = _mm512_fnmadd_ps(n, _mm512_set1_ps(0.693359375f), x);
  r = _mm512_fnmadd_ps(n, _mm512_set1_ps(-2.12194440e-4f), r);
  __m512 p = _mm512_set1_ps(1.9875691500e-4f);
  p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(1.3981999507e-3f));
  p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(8.3334519073e-3f));
  p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(4.1665795894e-2f));
  p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(1.6666665459e-1f));
  p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(5.0000001201e-1f));
  p = _mm512_fmadd_ps(p, _mm512_mul_ps(r, r), r);
  p = _mm512_add_ps(p, _mm512_set1_ps(1.0f));
  return _mm512_scalef_ps(p, n);
}

#endif
