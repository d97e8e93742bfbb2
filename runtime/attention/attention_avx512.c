/* attention_avx512.c -- AVX-512F attention kernels (attention_internal.h):
 * attention_isa.h over 512-bit vectors (simd/vec_avx512.h), MM_NV = 4.
 * attention.c uses these tables when the GEMM dispatch chose avx512; the
 * operations per element are those of every other SIMD table (the same
 * FMA chains, VEXP's bits), so the ISAs give the same results.
 */
#include "runtime/attention/attention_internal.h"
#include "runtime/simd/isa.h"

#if RLX_HAVE_X86_SIMD
#define ISA avx512
#define VEC_HEADER "runtime/simd/vec_avx512.h"
#include "runtime/attention/attention_trans_avx2.h"
#define MM_NV 4
#include "runtime/attention/attention_isa.h"
#else
const AttnIsaF32 rlx_attn_avx512_f32 = {0};
const AttnIsaF64 rlx_attn_avx512_f64 = {0};
#endif
