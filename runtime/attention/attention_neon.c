/* attention_neon.c -- AArch64 Advanced SIMD attention kernels (attention_internal.h):
 * attention_kern.h over 128-bit vectors (simd/vec_neon.h) for f32 and f64 --
 * the register-tiled mm and the f32 softmax steps on VEXP
 * (simd/vec_exp.h).
 *
 * attention.c uses these tables when the GEMM dispatch chose neon.
 * The operations per element are those of every other SIMD table (the
 * same FMA chains, VEXP's bits), so the ISAs give the same results.
 * f64 uses libm exp (the portable steps of attention_tmpl.h).
 */
#include "runtime/attention/attention_internal.h"
#include "runtime/simd/isa.h"

#if RLX_HAVE_NEON
#define MM_NV 4

#define VEC_F64 0
#define T float
#define SFX f32
#include "runtime/simd/vec_neon.h"
#include "runtime/simd/vec_exp.h"
#include "runtime/attention/attention_kern.h"
#undef VEC_F64
#undef T
#undef SFX

#define VEC_F64 1
#define T double
#define SFX f64
#include "runtime/simd/vec_neon.h"
#include "runtime/attention/attention_kern.h"

const AttnIsaF32 rlx_attn_neon_f32 = {mm_f32, online_f32, expsub_f32};
const AttnIsaF64 rlx_attn_neon_f64 = {mm_f64, NULL, NULL};
#else
const AttnIsaF32 rlx_attn_neon_f32 = {NULL, NULL, NULL};
const AttnIsaF64 rlx_attn_neon_f64 = {NULL, NULL, NULL};
#endif
