/* ssm_avx2.c -- the AVX2 + FMA f32 sequence-block kernels: ssm_kern.h
 * over 256-bit vectors (simd/vec_avx2.h), two per selective-scan channel
 * block, run in one time loop for full blocks (SSM_NV: each step's
 * 64-byte delta, x and y lines used whole; 3 to 12% less CPU time per
 * call, docs/performance.md 2026-12-05).  ssm.c uses them when the GEMM
 * dispatch chose avx2. */
#include <math.h>
#include <string.h>

#include "runtime/simd/isa.h"
#include "runtime/ssm/ssm_internal.h"

#if RLX_HAVE_X86_SIMD
#define GDN_NV 2
#define VEC_F64 0
#define SSM_NV 2 /* vectors per time loop (ssm_kern.h scan_vecs) */
#include "runtime/simd/vec_avx2.h"
#include "runtime/simd/vec_exp.h"
#include "runtime/ssm/ssm_kern.h"

const SsmIsa rlx_ssm_avx2 = {scan_block, gdn_head};
#else
const SsmIsa rlx_ssm_avx2 = {NULL, NULL};
#endif
