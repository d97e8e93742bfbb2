/* vec_exp.h -- VEXP(x): exp of the VL floats of x over the vector layer
 * (vec.h), for the f32 softmax kernels, and VEXP2P1(w) = 2^(w + 1), for kernels
 * that scale their exponents by log2(e) beforehand (the selective scan).
 * Include once per file, after an f32 vec_*.h instantiation.
 *
 * VEXP: x clamped to [-110, 88.72], n = rint(x / ln 2), r = x - n ln 2
 * in two FMAs (Cody-Waite), a degree-7 polynomial, then p * 2^n
 * (VLDEXP, n in [-159, 128]); about 1 ulp (the attention unit test
 * checks against a double reference).  -inf (a masked score) gives 0
 * by a select, computed as exp(0): through VLDEXP it underflowed, which
 * costs Intel cores a microcode assist per vector (the causal tiles'
 * partly masked rows).  Every step is a lane-wise IEEE operation,
 * VLDEXP's one rounding included, so every ISA gives the same bits.
 */
TGT static inline VT vec_exp(VT x0)
{
  VT x = VZERO_WHERE_NEGINF(x0, x0);
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
  return VZERO_WHERE_NEGINF(x0, VLDEXP(p, n));
}
#define VEXP(x) vec_exp(x)

/* VEXP2P1(w): 2^(w + 1), for kernels that form w = z log2(e) - 1 in
 * the FMA that scales their exponent (the selective scan: w = delta a - 1
 * with the rates pre-scaled by log2(e)).  f = w - floor(w) in [0, 1)
 * (VFRAC: rounded down, exact but for w in (-1/2, 0)), 2^(f + 1) by a
 * degree-5 minimax polynomial (the coefficients of 2^f's doubled,
 * exactly; relative error 7.5e-8 before rounding), times 2^floor(w) with
 * one rounding.  The shift by -1 costs nothing (an FMA instead of a
 * multiply) and keeps w out of (-1/2, 0) for every z < 1/2: there the
 * fraction is exact, and AVX2 takes VEXP2P1_NEG, which needs no
 * rounded-down emulation (Mamba's delta a is negative).  Against double
 * exp2 of the exact z, w's own rounding adds at most 2^-24 ln 2 relative
 * error for |z| < 1/2.  Where there is VSCALEF (AVX-512) it takes w as it
 * is: vscalefps floors w itself for any w, and VFRAC is 0 for +-inf, so
 * -inf gives 0 and +inf inf.  Elsewhere w is first clamped to
 * [-160, 129] (VLDEXP's range), beyond which the result rounds to 0 / inf
 * anyway.  NaN stays NaN (the clamps pass their second operand through).
 * The same operations, VFRAC's and VLDEXP's roundings included, on every
 * ISA: the same bits.
 */
TGT static inline VT vec_exp2p1_poly(VT f)
{
  VT p = VSET1(2 * 1.8775766948238015e-3f);
  p = VFMA(p, f, VSET1(2 * 8.98933969438076e-3f));
  p = VFMA(p, f, VSET1(2 * 5.582631751894951e-2f));
  p = VFMA(p, f, VSET1(2 * 2.4015361070632935e-1f));
  p = VFMA(p, f, VSET1(2 * 6.931530833244324e-1f));
  p = VFMA(p, f, VSET1(2 * 9.999999403953552e-1f));
  return p;
}
TGT static inline VT vec_exp2p1(VT w)
{
#ifndef VSCALEF
  w = VMIN(VSET1(129.0f), VMAX(VSET1(-160.0f), w));
#endif
  VT p = vec_exp2p1_poly(VFRAC(w));
#ifdef VSCALEF
  return VSCALEF(p, w);
#else
  return VLDEXP(p, VFLOOR(w));
#endif
}
#define VEXP2P1(w) vec_exp2p1(w)

/* VEXP2P1_NEG(w): VEXP2P1(w) for w in [-124, -1/2] (the caller checks;
 * not NaN), where the layer has VSCALE_NORMAL (AVX2): the same bits in
 * 11 micro-ops instead of 21: no clamps, the fraction w - floor(w)
 * exact (no rounded-down emulation), one VFLOOR for the fraction and the
 * scale, 2^floor(w) as an exponent add, exact as VLDEXP's one rounding
 * is (p is in [2 - 2^-23, 4], so p * 2^n is normal for n >= -124 and
 * finite for n <= -1). */
#ifdef VSCALE_NORMAL
TGT static inline VT vec_exp2p1_neg(VT w)
{
  VT n = VFLOOR(w);
  return VSCALE_NORMAL(vec_exp2p1_poly(VSUB(w, n)), n);
}
#define VEXP2P1_NEG(w) vec_exp2p1_neg(w)
#endif

