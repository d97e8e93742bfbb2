/* vec_neon.h -- the vector layer (vec.h) over 128-bit AArch64 Advanced
 * SIMD registers.  NEON has no masked loads: MT is the lane count and
 * partial vectors go through a small stack buffer.  VMAX / VMIN are
 * compare-and-select, so NaN and signed zeros behave as on x86. */
#include "runtime/simd/vec_undef.h"
#include <arm_neon.h>
#include <math.h>

#ifndef RLX_VEC_NEON_ONCE
#define RLX_VEC_NEON_ONCE
static inline float32x4_t rlx_neon_loadn_f32(int n, const float *p)
{
  float b[4] = {0};
  for (int i = 0; i < n; i++)
    b[i] = p[i];
  return vld1q_f32(b);
}
static inline void rlx_neon_storen_f32(float *p, int n, float32x4_t v)
{
  float b[4];
  vst1q_f32(b, v);
  for (int i = 0; i < n; i++)
    p[i] = b[i];
}
static inline float64x2_t rlx_neon_loadn_f64(int n, const double *p)
{
  double b[2] = {0};
  for (int i = 0; i < n; i++)
    b[i] = p[i];
  return vld1q_f64(b);
}
static inline void rlx_neon_storen_f64(double *p, int n, float64x2_t v)
{
  double b[2];
  vst1q_f64(b, v);
  for (int i = 0; i < n; i++)
    p[i] = b[i];
}
/* VFRAC and VLDEXP (vec.h). */
static inline float32x4_t rlx_neon_frac_f32(float32x4_t x)
{
  float32x4_t n = vrndmq_f32(x), f = vsubq_f32(x, n);
  uint32x4_t up = vcgtq_f32(vaddq_f32(f, n), x);
  return vreinterpretq_f32_u32(vaddq_u32(vreinterpretq_u32_f32(f), up));
}
static inline float32x4_t rlx_neon_ldexp_f32(float32x4_t p, float32x4_t n)
{
  int32x4_t i = vcvtnq_s32_f32(n), h = vshrq_n_s32(i, 1);
  float32x4_t ph = vreinterpretq_f32_s32(
      vaddq_s32(vreinterpretq_s32_f32(p), vshlq_n_s32(h, 23)));
  int32x4_t e = vaddq_s32(vsubq_s32(i, h), vdupq_n_s32(127));
  return vmulq_f32(ph, vreinterpretq_f32_s32(vshlq_n_s32(e, 23)));
}
/* VZIPLO / VZIPHI / VSTORE_ZIP of f32 lanes: g = 2 zips them as f64
   pairs */
static inline float32x4_t rlx_neon_zip_f32(float32x4_t a, float32x4_t b,
                                           int g, int hi)
{
  if (g == 1)
    return hi ? vzip2q_f32(a, b) : vzip1q_f32(a, b);
  float64x2_t x = vreinterpretq_f64_f32(a), y = vreinterpretq_f64_f32(b);
  return vreinterpretq_f32_f64(hi ? vzip2q_f64(x, y) : vzip1q_f64(x, y));
}
static inline void rlx_neon_store_zip_f64(double *p, float64x2_t a,
                                          float64x2_t b)
{
  float64x2x2_t t = {{a, b}};
  vst2q_f64(p, t);
}
static inline void rlx_neon_store_zip_f32(float *p, float32x4_t a,
                                          float32x4_t b, int g)
{
  if (g == 1) {
    float32x4x2_t t = {{a, b}};
    vst2q_f32(p, t);
  } else {
    vst1q_f32(p, rlx_neon_zip_f32(a, b, g, 0));
    vst1q_f32(p + 4, rlx_neon_zip_f32(a, b, g, 1));
  }
}
static inline void rlx_neon_load_unzip_f32(const float *p, float32x4_t *a,
                                           float32x4_t *b)
{
  float32x4x2_t t = vld2q_f32(p);
  *a = t.val[0];
  *b = t.val[1];
}
static inline void rlx_neon_load_unzip_f64(const double *p, float64x2_t *a,
                                           float64x2_t *b)
{
  float64x2x2_t t = vld2q_f64(p);
  *a = t.val[0];
  *b = t.val[1];
}
#endif

#undef TGT
#define TGT
#define MT int
#define VMASK_FIRST(n) (n)
#if VEC_F64
#define VT float64x2_t
#define VL 2
#define VZERO() vdupq_n_f64(0.0)
#define VSET1(x) vdupq_n_f64(x)
#define VLOADU(p) vld1q_f64(p)
#define VSTOREU(p, v) vst1q_f64(p, v)
#define VMASKZ_LOAD(m, p) rlx_neon_loadn_f64(m, p)
#define VMASK_STORE(p, m, v) rlx_neon_storen_f64(p, m, v)
#define VFMA(a, b, c) vfmaq_f64(c, a, b)
#define VFNMA(a, b, c) vfmsq_f64(c, a, b)
#define VADD(a, b) vaddq_f64(a, b)
#define VSUB(a, b) vsubq_f64(a, b)
#define VMUL(a, b) vmulq_f64(a, b)
#define VDIV(a, b) vdivq_f64(a, b)
#define VMAX(a, b) vbslq_f64(vcgtq_f64(a, b), a, b)
#define VMIN(a, b) vbslq_f64(vcltq_f64(a, b), a, b)
#define VROUND(x) vrndnq_f64(x)
#define VFLOOR(x) vrndmq_f64(x)
#define VZERO_WHERE_NEGINF(c, x)                                          \
  vbslq_f64(vceqq_f64(c, vdupq_n_f64(-INFINITY)), vdupq_n_f64(0.0), x)
#define VZIPLO(a, b, g) vzip1q_f64(a, b)
#define VZIPHI(a, b, g) vzip2q_f64(a, b)
#define VSTORE_ZIP(p, a, b, g) rlx_neon_store_zip_f64(p, a, b)
#define VLOAD_UNZIP(p, a, b) rlx_neon_load_unzip_f64(p, &(a), &(b))
#else
#define VT float32x4_t
#define VL 4
#define VZERO() vdupq_n_f32(0.0f)
#define VSET1(x) vdupq_n_f32(x)
#define VLOADU(p) vld1q_f32(p)
#define VSTOREU(p, v) vst1q_f32(p, v)
#define VMASKZ_LOAD(m, p) rlx_neon_loadn_f32(m, p)
#define VMASK_STORE(p, m, v) rlx_neon_storen_f32(p, m, v)
#define VFMA(a, b, c) vfmaq_f32(c, a, b)
#define VFNMA(a, b, c) vfmsq_f32(c, a, b)
#define VADD(a, b) vaddq_f32(a, b)
#define VSUB(a, b) vsubq_f32(a, b)
#define VMUL(a, b) vmulq_f32(a, b)
#define VDIV(a, b) vdivq_f32(a, b)
#define VMAX(a, b) vbslq_f32(vcgtq_f32(a, b), a, b)
#define VMIN(a, b) vbslq_f32(vcltq_f32(a, b), a, b)
#define VROUND(x) vrndnq_f32(x)
#define VFLOOR(x) vrndmq_f32(x)
#define VFRAC(x) rlx_neon_frac_f32(x)
#define VLDEXP(p, n) rlx_neon_ldexp_f32(p, n)
#define VZERO_WHERE_NEGINF(c, x)                                          \
  vbslq_f32(vceqq_f32(c, vdupq_n_f32(-INFINITY)), vdupq_n_f32(0.0f), x)
#define VZIPLO(a, b, g) rlx_neon_zip_f32(a, b, g, 0)
#define VZIPHI(a, b, g) rlx_neon_zip_f32(a, b, g, 1)
#define VSTORE_ZIP(p, a, b, g) rlx_neon_store_zip_f32(p, a, b, g)
#define VLOAD_UNZIP(p, a, b) rlx_neon_load_unzip_f32(p, &(a), &(b))
#endif
