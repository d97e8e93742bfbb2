/* attention_neon.c -- AArch64 Advanced SIMD attention kernels
 * (attention_internal.h):
 * attention_isa.h over 128-bit vectors (simd/vec_neon.h), MM_NV = 4.
 * attention.c uses these tables when the GEMM dispatch chose neon; the
 * operations per element are those of every other SIMD table (the same
 * FMA chains, VEXP's bits), so the ISAs give the same results.
 */
#include "runtime/attention/attention_internal.h"
#include "runtime/simd/isa.h"

#if RLX_HAVE_NEON
#define ISA neon
#define VEC_HEADER "runtime/simd/vec_neon.h"
#define MM_NV 4
#include "runtime/attention/attention_isa.h"
#else
const AttnIsaF32 rlx_attn_neon_f32 = {0};
const AttnIsaF64 rlx_attn_neon_f64 = {0};
#endif
