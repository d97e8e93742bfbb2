/* vec_scalar.h -- the vector layer (vec.h) over one-element "vectors":
 * the portable C instantiation. */
#include "runtime/simd/vec_undef.h"
#include <math.h>

#ifndef RLX_VEC_SCALAR_ONCE
#define RLX_VEC_SCALAR_ONCE
/* VFRAC (vec.h). */
static inline float rlx_scalar_fracf(float x)
{
  float n = floorf(x), f = x - n;
  return f + n > x ? nextafterf(f, 0) : f;
}
#endif

#ifndef TGT
#define TGT
#endif
#define VL 1
#define MT int
#define VZERO() ((T)0)
#define VSET1(x) ((T)(x))
#define VLOADU(p) (*(p))
#define VSTOREU(p, v) (*(p) = (v))
#define VMASK_FIRST(n) (n)
#define VMASKZ_LOAD(m, p) ((m) > 0 ? *(p) : (T)0)
#define VMASK_STORE(p, m, v) ((m) > 0 ? (void)(*(p) = (v)) : (void)0)
#define VADD(a, b) ((a) + (b))
#define VSUB(a, b) ((a) - (b))
#define VMUL(a, b) ((a) * (b))
#define VDIV(a, b) ((a) / (b))
#define VMAX(a, b) ((a) > (b) ? (a) : (b))
#define VMIN(a, b) ((a) < (b) ? (a) : (b))
#define VZERO_WHERE_NEGINF(c, x) ((c) == -(T)INFINITY ? (T)0 : (x))
#define VZIPLO(a, b, g) (a)
#define VZIPHI(a, b, g) (b)
#define VSTORE_ZIP(p, a, b, g) ((p)[0] = (a), (void)((p)[1] = (b)))
#define VLOAD_UNZIP(p, a, b) ((a) = (p)[0], (void)((b) = (p)[1]))
#if VEC_F64
#define VT double
#define VROUND(x) nearbyint(x)
#define VFLOOR(x) floor(x)
#define VFMA(a, b, c) fma(a, b, c)
#define VFNMA(a, b, c) fma(-(a), b, c)
#else
#define VT float
#define VROUND(x) nearbyintf(x)
#define VFLOOR(x) floorf(x)
#define VFRAC(x) rlx_scalar_fracf(x)
#define VLDEXP(p, n) ldexpf(p, (int)(n))
#define VFMA(a, b, c) fmaf(a, b, c)
#define VFNMA(a, b, c) fmaf(-(a), b, c)
#endif
