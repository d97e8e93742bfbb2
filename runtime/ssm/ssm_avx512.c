/* ssm_avx512.c -- the AVX-512F/DQ f32 sequence-block kernels: ssm_kern.h
 * over 512-bit vectors (simd/vec_avx512.h), a selective-scan channel
 * block being one vector.  AVX512DQ for VFRAC (vreduceps: VEXP2P1 needs no
 * clamps then); ssm.c uses these kernels when the GEMM dispatch chose
 * avx512 and the CPU has AVX512DQ (else the AVX2 ones, same bits). */
#include <math.h>
#include <string.h>

#include "runtime/simd/isa.h"
#include "runtime/ssm/ssm_internal.h"

#if RLX_HAVE_X86_SIMD
#define GDN_NV 2
#define VEC_F64 0
#include "runtime/simd/vec_avx512.h"
#undef TGT
#define TGT __attribute__((target("avx512f,avx512dq")))
#include "runtime/simd/vec_exp.h"
#include "runtime/ssm/ssm_kern.h"

const SsmIsa rlx_ssm_avx512 = {scan_block, gdn_head};
#else
const SsmIsa rlx_ssm_avx512 = {NULL, NULL};
#endif
