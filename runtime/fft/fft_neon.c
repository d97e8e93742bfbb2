/* fft_neon.c -- the FFT kernels (fft_kern.h) over 128-bit AArch64
 * Advanced SIMD vectors (simd/vec_neon.h), and load_dup (stride 2, the
 * only one below VL = 4: one zip).  Radix-3 and radix-5 stages of
 * stride 1, 2 run the template's loops (no odd_ilv).
 *
 * fft.c uses this table when the GEMM dispatch chose neon.  fft_kern.h
 * uses VMUL / VADD / VSUB, never VFMA, and the file is compiled without
 * FP contraction, so it gives the portable kernel's bits.
 */
#include "runtime/fft/fft_internal.h"
#include "runtime/simd/isa.h"

#if RLX_HAVE_NEON
#define VEC_F64 0
#define T float
#include "runtime/simd/vec_neon.h"

/* s = 2: [p0 p0 p1 p1] (n = 4) or p0 everywhere (n = 2) */
static inline VT load_dup(const float *p, int s, int64_t n)
{
  (void)s;
  if (n < 4)
    return vld1q_dup_f32(p);
  float32x4_t w = vcombine_f32(vld1_f32(p), vdup_n_f32(0.0f));
  return VZIPLO(w, w, 1);
}

#define FFT_ODD_ILV 0
#define STAGE_FN rlx_fft_stage_neon
#define SPLIT_FN rlx_fft_split_neon
#define JOIN_FN rlx_fft_join_neon
#include "runtime/fft/fft_kern.h"

const FftIsa rlx_fft_neon = {rlx_fft_stage_neon, rlx_fft_split_neon,
                             rlx_fft_join_neon};
#else
const FftIsa rlx_fft_neon = {NULL, NULL, NULL};
#endif
