/* vec_exp.h -- VEXP(x): exp of the VL floats of x over the vector layer
 * (vec.h), for the f32 softmax kernels.  Include once per file, after
 * an f32 vec_*.h instantiation.
 *
 * x clamped to [-110, 88.72], n = rint(x / ln 2), r = x - n ln 2 in two
 * FMAs (Cody-Waite), a degree-7 polynomial, then p * 2^n; about 1 ulp
 * (the attention unit test checks against a double reference).  Every
 * step is a lane-wise IEEE operation, so every ISA gives the same bits.
 * 2^n: AVX-512 has vscalefps (VSCALEF: one rounding); elsewhere it is
 * applied as two exact powers 2^h and 2^(n - h), h = floor(n / 2) (each
 * a normal float for n in [-159, 128]), so the only rounding is the
 * last product's -- scalef's rounding, denormal results included.
 * The ISA headers provide VROUND (to nearest even), VFLOOR and, where
 * there is no VSCALEF, VPOW2I(n) = 2^n for integer n in [-126, 127].
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
#ifdef VSCALEF
  return VSCALEF(p, n);
#else
  VT h = VFLOOR(VMUL(n, VSET1(0.5f)));
  return VMUL(VMUL(p, VPOW2I(h)), VPOW2I(VSUB(n, h)));
#endif
}
#define VEXP(x) vec_exp(x)
