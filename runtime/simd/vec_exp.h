/* vec_exp.h -- VEXP(x): exp of the VL floats of x over the vector layer
 * (vec.h), for the f32 softmax kernels, and VEXP2(z) = 2^z, for kernels
 * that scale their exponents by log2(e) beforehand (the selective scan).
 * Include once per file, after an f32 vec_*.h instantiation.
 *
 * VEXP: x clamped to [-110, 88.72], n = rint(x / ln 2), r = x - n ln 2
 * in two FMAs (Cody-Waite), a degree-7 polynomial, then p * 2^n
 * (VLDEXP, n in [-159, 128]); about 1 ulp (the attention unit test
 * checks against a double reference).  Every step is a lane-wise IEEE
 * operation, VLDEXP's one rounding included, so every ISA gives the
 * same bits.
 */
TGT static inline VT vec_exp(VT x)
{
  x = VMAX(x, VSET1(-110.0f));
  x = VMIN(x, VSET1(88.72f));
  VT n = VROUND(VMUL(x, VSET1(1.44269504088896341f)));
  VT r = VFNMA(n, VSET1(0.693359375f), x);
  r = VFNMA(n, VSET1(-2.12194440e-4f), r);
  VT p = VSET1(1.9875691500e-4f);
  p = VFMA(p, r, VSET1(1.3981999507e-3f));
  p = VFMA(p, r, VSET1(8.3334519073e-3f));
  p = VFMA(p, r, VSET1(4.1665795894e-2f));
  p = VFMA(p, r, VSET1(1.6666665459e-1f));
  p = VFMA(p, r, VSET1(5.0000001201e-1f));
  p = VFMA(p, VMUL(r, r), r);
  p = VADD(p, VSET1(1.0f));
  return VLDEXP(p, n);
}
#define VEXP(x) vec_exp(x)

/* VEXP2(z): 2^z.  f = z - floor(z) in [0, 1) (VFRAC: rounded down,
 * exact but for z in (-1/2, 0)), 2^f by a degree-5 minimax polynomial
 * (relative error 7.5e-8 before rounding; at most 2.2 ulp measured over
 * z in [-100, 20] against double exp2), times 2^floor(z) with one
 * rounding.  Where there is VSCALEF (AVX-512) it takes z as it is:
 * vscalefps floors z itself for any z, and VFRAC is 0 for +-inf, so -inf
 * gives 0 and +inf inf.  Elsewhere z is first clamped to [-160, 129]
 * (VLDEXP's range), beyond which 2^z rounds to 0 / inf anyway.  NaN
 * stays NaN (the clamps pass their second operand through).  The same
 * operations, VFRAC's and VLDEXP's roundings included, on every ISA: the
 * same bits.
 */
TGT static inline VT vec_exp2_poly(VT f)
{
  VT p = VSET1(1.8775766948238015e-3f);
  p = VFMA(p, f, VSET1(8.98933969438076e-3f));
  p = VFMA(p, f, VSET1(5.582631751894951e-2f));
  p = VFMA(p, f, VSET1(2.4015361070632935e-1f));
  p = VFMA(p, f, VSET1(6.931530833244324e-1f));
  p = VFMA(p, f, VSET1(9.999999403953552e-1f));
  return p;
}
TGT static inline VT vec_exp2(VT z)
{
#ifndef VSCALEF
  z = VMIN(VSET1(129.0f), VMAX(VSET1(-160.0f), z));
#endif
  VT p = vec_exp2_poly(VFRAC(z));
#ifdef VSCALEF
  return VSCALEF(p, z);
#else
  return VLDEXP(p, VFLOOR(z));
#endif
}
#define VEXP2(z) vec_exp2(z)

/* VEXP2_NORMAL(z): VEXP2(z) for z in [-124, 124] (the caller checks;
 * not NaN), where the layer has VFRAC_FLOORED and VSCALE_NORMAL (AVX2):
 * the same bits in 18 instructions instead of 25: no clamps, one VFLOOR
 * for the fraction and the scale, 2^floor(z) as an exponent add, exact
 * as VLDEXP's one rounding is (p is in [1 - 2^-24, 2], so p * 2^n is
 * normal for n >= -125 and finite for n <= 123). */
#ifdef VFRAC_FLOORED
TGT static inline VT vec_exp2_normal(VT z)
{
  VT n = VFLOOR(z);
  return VSCALE_NORMAL(vec_exp2_poly(VFRAC_FLOORED(z, n)), n);
}
#define VEXP2_NORMAL(z) vec_exp2_normal(z)
#endif
