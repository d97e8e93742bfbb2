/* fft_kern.h -- the Stockham stage kernel and the row split / join of
 * one ISA (fft_internal.h), written once over the vector layer
 * (runtime/simd/vec.h, f32).  Included by fft_<isa>.c after a vec_*.h
 * instantiation (VEC_F64 0, T float), with
 *   STAGE_FN, SPLIT_FN, JOIN_FN   the names of the functions to define;
 *   load_dup(p, s, n)  lanes e < n (n <= VL, a multiple of s) = p[e / s]
 *                      for s = 2, 4 .. VL/2 (a constant), reading only
 *                      p[0 .. n/s - 1];
 *   FFT_ODD_ILV        1 when the file defines OddIlv, odd_ilv_init and
 *                      odd_ilv: the interleave of r = 3 or 5 vectors
 *                      (narrow stages below), else 0.
 *
 * A stage of radix 2 .. 5 runs here when its stride s is at least VL
 * (wide: VL consecutive q per vector, the twiddles of p broadcast) or
 * divides VL (narrow: VL consecutive inputs i = q + s p per vector, the
 * twiddles of p = i / s by load_dup, the r outputs y[r i ..] put in
 * order by zips of blocks of s lanes for r = 2 and 4 (VZIPLO, VZIPHI,
 * VSTORE_ZIP), by odd_ilv for 3 and 5); a last, partial vector uses
 * masked loads and stores (narrow: its outputs through a buffer).  The
 * row split and join are VLOAD_UNZIP and VSTORE_ZIP, their tails
 * element by element.  Other stages (radices over 5, strides that
 * neither divide nor exceed VL, odd radices of narrow strides without
 * odd_ilv) run fft_tmpl.h's loops, which this file instantiates as
 * STAGE_FN.  The butterflies do the operations of fft_tmpl.h's, in the
 * same order (VMUL, VADD, VSUB: never VFMA), and the file is compiled
 * without FP contraction: every ISA gives the portable kernel's bits.
 */

/* n lanes from p (n <= 0: none), 0 beyond; n lanes to p. */
__attribute__((always_inline)) TGT static inline VT load_n(const float *p,
                                                           int64_t n)
{
  if (n >= VL)
    return VLOADU(p);
  return n > 0 ? VMASKZ_LOAD(VMASK_FIRST((int)n), p) : VZERO();
}

__attribute__((always_inline)) TGT static inline void store_n(float *p,
                                                              int64_t n,
                                                              VT v)
{
  if (n >= VL)
    VSTOREU(p, v);
  else if (n > 0)
    VMASK_STORE(p, VMASK_FIRST((int)n), v);
}

/* fft_tmpl.h's butterflies (BFLY2 .. BFLY5) on vectors: a[j] in, b[k]
 * out before the twiddles. */
__attribute__((always_inline)) TGT static inline void
vbfly(int r, float sg, const VT *ar, const VT *ai, VT *br, VT *bi)
{
  if (r == 2) {
    br[0] = VADD(ar[0], ar[1]);
    bi[0] = VADD(ai[0], ai[1]);
    br[1] = VSUB(ar[0], ar[1]);
    bi[1] = VSUB(ai[0], ai[1]);
  } else if (r == 3) {
    const VT h = VSET1(0.5f), c = VSET1(0.86602540378443864676f * sg);
    VT tr = VADD(ar[1], ar[2]), ti = VADD(ai[1], ai[2]);
    VT dr = VMUL(VSUB(ar[1], ar[2]), c), di = VMUL(VSUB(ai[1], ai[2]), c);
    VT ur = VSUB(ar[0], VMUL(tr, h)), ui = VSUB(ai[0], VMUL(ti, h));
    br[0] = VADD(ar[0], tr);
    bi[0] = VADD(ai[0], ti);
    br[1] = VSUB(ur, di);
    bi[1] = VADD(ui, dr);
    br[2] = VADD(ur, di);
    bi[2] = VSUB(ui, dr);
  } else if (r == 4) {
    const VT sgp = VSET1(sg), sgn = VSET1(-sg);
    VT t0r = VADD(ar[0], ar[2]), t0i = VADD(ai[0], ai[2]);
    VT t1r = VSUB(ar[0], ar[2]), t1i = VSUB(ai[0], ai[2]);
    VT t2r = VADD(ar[1], ar[3]), t2i = VADD(ai[1], ai[3]);
    VT dr = VMUL(VSUB(ai[1], ai[3]), sgn), di = VMUL(VSUB(ar[1], ar[3]), sgp);
    br[0] = VADD(t0r, t2r);
    bi[0] = VADD(t0i, t2i);
    br[1] = VADD(t1r, dr);
    bi[1] = VADD(t1i, di);
    br[2] = VSUB(t0r, t2r);
    bi[2] = VSUB(t0i, t2i);
    br[3] = VSUB(t1r, dr);
    bi[3] = VSUB(t1i, di);
  } else {
    const VT c1 = VSET1(0.30901699437494742410f);
    const VT c2 = VSET1(-0.80901699437494742410f);
    const VT s1 = VSET1(0.95105651629515357212f * sg);
    const VT s2 = VSET1(0.58778525229247312917f * sg);
    VT p1r = VADD(ar[1], ar[4]), p1i = VADD(ai[1], ai[4]);
    VT m1r = VSUB(ar[1], ar[4]), m1i = VSUB(ai[1], ai[4]);
    VT p2r = VADD(ar[2], ar[3]), p2i = VADD(ai[2], ai[3]);
    VT m2r = VSUB(ar[2], ar[3]), m2i = VSUB(ai[2], ai[3]);
    VT u1r = VADD(VADD(ar[0], VMUL(c1, p1r)), VMUL(c2, p2r));
    VT u1i = VADD(VADD(ai[0], VMUL(c1, p1i)), VMUL(c2, p2i));
    VT u2r = VADD(VADD(ar[0], VMUL(c2, p1r)), VMUL(c1, p2r));
    VT u2i = VADD(VADD(ai[0], VMUL(c2, p1i)), VMUL(c1, p2i));
    VT v1r = VADD(VMUL(s1, m1r), VMUL(s2, m2r));
    VT v1i = VADD(VMUL(s1, m1i), VMUL(s2, m2i));
    VT v2r = VSUB(VMUL(s2, m1r), VMUL(s1, m2r));
    VT v2i = VSUB(VMUL(s2, m1i), VMUL(s1, m2i));
    br[0] = VADD(VADD(ar[0], p1r), p2r);
    bi[0] = VADD(VADD(ai[0], p1i), p2i);
    br[1] = VSUB(u1r, v1i);
    bi[1] = VADD(u1i, v1r);
    br[2] = VSUB(u2r, v2i);
    bi[2] = VADD(u2i, v2r);
    br[3] = VADD(u2r, v2i);
    bi[3] = VSUB(u2i, v2r);
    br[4] = VADD(u1r, v1i);
    bi[4] = VSUB(u1i, v1r);
  }
}

/* b *= w, fft_tmpl.h's CMUL */
__attribute__((always_inline)) TGT static inline void
vtwiddle(VT *br, VT *bi, VT wr, VT wi)
{
  VT cr = VSUB(VMUL(*br, wr), VMUL(*bi, wi));
  VT ci = VADD(VMUL(*br, wi), VMUL(*bi, wr));
  *br = cr;
  *bi = ci;
}

/* One vector of a wide stage: n <= VL consecutive q, inputs x[j is],
 * outputs y[k s], twiddles w[k]. */
__attribute__((always_inline)) TGT static inline void
wide_vec(int r, float sg, int64_t n, int64_t is, int64_t s,
         const float *xr, const float *xi, float *yr, float *yi,
         const VT *wr, const VT *wi)
{
  VT ar[5], ai[5], br[5], bi[5];
  for (int j = 0; j < r; j++) {
    ar[j] = load_n(xr + j * is, n);
    ai[j] = load_n(xi + j * is, n);
  }
  vbfly(r, sg, ar, ai, br, bi);
  store_n(yr, n, br[0]);
  store_n(yi, n, bi[0]);
  for (int k = 1; k < r; k++) {
    vtwiddle(&br[k], &bi[k], wr[k], wi[k]);
    store_n(yr + k * s, n, br[k]);
    store_n(yi + k * s, n, bi[k]);
  }
}

/* The twiddles of p, broadcast. */
__attribute__((always_inline)) TGT static inline void
wide_tw(int r, const FftStage *st, int64_t p, VT *wr, VT *wi)
{
  for (int k = 1; k < r; k++) {
    wr[k] = VSET1(st->twr[(k - 1) * st->m + p]);
    wi[k] = VSET1(st->twi[(k - 1) * st->m + p]);
  }
}

/* Stride s >= VL: VL consecutive q per vector.  A multiple of VL is one
 * loop over the vectors (p, q) (a loop over q per p costs a third more
 * for s = 2 VL); other strides end each p with a masked vector. */
__attribute__((always_inline)) TGT static inline void
wide(int r, const FftStage *st, const float *restrict xr,
     const float *restrict xi, float *restrict yr, float *restrict yi)
{
  const int64_t m = st->m, s = st->s, is = s * m;
  VT wr[5], wi[5];
  if (s % VL == 0) {
    for (int64_t i = 0, p = 0, q = 0; i < is; i += VL) {
      wide_tw(r, st, p, wr, wi);
      const int64_t o = s * r * p + q;
      wide_vec(r, st->sg, VL, is, s, xr + i, xi + i, yr + o, yi + o, wr,
               wi);
      q += VL;
      if (q == s) {
        q = 0;
        p++;
      }
    }
    return;
  }
  for (int64_t p = 0; p < m; p++) {
    wide_tw(r, st, p, wr, wi);
    const int64_t i = s * p, o = s * r * p;
    int64_t q = 0;
    for (; q + VL <= s; q += VL)
      wide_vec(r, st->sg, VL, is, s, xr + i + q, xi + i + q, yr + o + q,
               yi + o + q, wr, wi);
    wide_vec(r, st->sg, s - q, is, s, xr + i + q, xi + i + q, yr + o + q,
             yi + o + q, wr, wi);
  }
}

#if FFT_ODD_ILV
#define ODD_ARG , const OddIlv *oc
#define ODD_PASS , oc
#else
#define ODD_ARG
#define ODD_PASS
#endif

/* The r vectors b to y (r VL floats) in blocks of S lanes: block j of
 * b[0], of b[1] .. of b[r-1], then block j + 1 ...  r = 4 is two levels
 * of zips (b0 with b2, b1 with b3, then the results). */
__attribute__((always_inline)) TGT static inline void
ilv_store(float *y, int r, int S, VT *b ODD_ARG)
{
  if (r == 2) {
    VSTORE_ZIP(y, b[0], b[1], S);
  } else if (r == 4) {
    VT c0 = VZIPLO(b[0], b[2], S), c1 = VZIPHI(b[0], b[2], S);
    VT d0 = VZIPLO(b[1], b[3], S), d1 = VZIPHI(b[1], b[3], S);
    VSTORE_ZIP(y, c0, d0, S);
    VSTORE_ZIP(y + 2 * VL, c1, d1, S);
  }
#if FFT_ODD_ILV
  else {
    odd_ilv(oc, r, b);
    for (int v = 0; v < r; v++)
      VSTOREU(y + v * VL, b[v]);
  }
#endif
}

/* One vector of a narrow stage of stride S: n <= VL inputs from i, the
 * r n outputs y[r i ..] (through a buffer when n < VL). */
__attribute__((always_inline)) TGT static inline void
narrow_vec(int r, int S, const FftStage *st, int64_t i, int64_t n,
           const float *xr, const float *xi, float *yr, float *yi ODD_ARG)
{
  const int64_t m = st->m, is = S * m;
  VT ar[5], ai[5], br[5], bi[5];
  for (int j = 0; j < r; j++) {
    ar[j] = load_n(xr + i + j * is, n);
    ai[j] = load_n(xi + i + j * is, n);
  }
  vbfly(r, st->sg, ar, ai, br, bi);
  for (int k = 1; k < r; k++) {
    const int64_t t = (k - 1) * m + i / S;
    VT wr = S == 1 ? load_n(st->twr + t, n) : load_dup(st->twr + t, S, n);
    VT wi = S == 1 ? load_n(st->twi + t, n) : load_dup(st->twi + t, S, n);
    vtwiddle(&br[k], &bi[k], wr, wi);
  }
  if (n == VL) {
    ilv_store(yr + r * i, r, S, br ODD_PASS);
    ilv_store(yi + r * i, r, S, bi ODD_PASS);
    return;
  }
  float buf[2][5 * VL];
  ilv_store(buf[0], r, S, br ODD_PASS);
  ilv_store(buf[1], r, S, bi ODD_PASS);
  for (int v = 0; v < r; v++) {
    store_n(yr + r * i + VL * v, r * n - VL * v, VLOADU(buf[0] + VL * v));
    store_n(yi + r * i + VL * v, r * n - VL * v, VLOADU(buf[1] + VL * v));
  }
}

/* Stride S < VL dividing VL (a constant here, for the zips). */
__attribute__((always_inline)) TGT static inline void
narrow(int r, int S, const FftStage *st, const float *restrict xr,
       const float *restrict xi, float *restrict yr, float *restrict yi)
{
  const int64_t is = S * st->m;
#if FFT_ODD_ILV
  OddIlv odd, *oc = &odd;
  if (r % 2)
    odd_ilv_init(oc, r, S);
#endif
  int64_t i = 0;
  for (; i + VL <= is; i += VL)
    narrow_vec(r, S, st, i, VL, xr, xi, yr, yi ODD_PASS);
  if (i < is)
    narrow_vec(r, S, st, i, is - i, xr, xi, yr, yi ODD_PASS);
}
#undef ODD_ARG
#undef ODD_PASS

__attribute__((always_inline)) TGT static inline int
vec_stage_r(int r, const FftStage *st, const float *restrict xr,
            const float *restrict xi, float *restrict yr,
            float *restrict yi)
{
  const int64_t s = st->s;
  if (s >= VL) {
    wide(r, st, xr, xi, yr, yi);
    return 1;
  }
  if (r % 2 && !FFT_ODD_ILV)
    return 0;
#define NARROW(S)                                                        \
  if (S < VL && s == S) {                                                \
    narrow(r, S, st, xr, xi, yr, yi);                                    \
    return 1;                                                            \
  }
  NARROW(1)
  NARROW(2)
  NARROW(4)
  NARROW(8)
#undef NARROW
  return 0;
}

/* The stages with a vector version; 0 for the others. */
TGT static int vec_stage(const FftStage *st, const float *restrict xr,
                         const float *restrict xi, float *restrict yr,
                         float *restrict yi)
{
  switch (st->r) {
  case 2: return vec_stage_r(2, st, xr, xi, yr, yi);
  case 3: return vec_stage_r(3, st, xr, xi, yr, yi);
  case 4: return vec_stage_r(4, st, xr, xi, yr, yi);
  case 5: return vec_stage_r(5, st, xr, xi, yr, yi);
  default: return 0;
  }
}

#define STAGE_VEC vec_stage
#include "runtime/fft/fft_tmpl.h"
#undef STAGE_VEC

/* Interleaved (re, im) <-> split arrays, VL complex per step, the
 * tail element by element; the join's product by scale is fft.c's. */
TGT void SPLIT_FN(const float *x, int64_t n, float *re, float *im)
{
  int64_t j = 0;
  for (; j + VL <= n; j += VL) {
    VT a, b;
    VLOAD_UNZIP(x + 2 * j, a, b);
    VSTOREU(re + j, a);
    VSTOREU(im + j, b);
  }
  for (; j < n; j++) {
    re[j] = x[2 * j];
    im[j] = x[2 * j + 1];
  }
}

TGT void JOIN_FN(const float *re, const float *im, int64_t n, float scale,
                 float *y)
{
  const VT sc = VSET1(scale);
  int64_t k = 0;
  for (; k + VL <= n; k += VL)
    VSTORE_ZIP(y + 2 * k, VMUL(VLOADU(re + k), sc), VMUL(VLOADU(im + k), sc),
               1);
  for (; k < n; k++) {
    y[2 * k] = re[k] * scale;
    y[2 * k + 1] = im[k] * scale;
  }
}
