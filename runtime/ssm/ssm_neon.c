/* ssm_neon.c -- the AArch64 Advanced SIMD f32 sequence-block kernels:
 * ssm_kern.h over 128-bit vectors (simd/vec_neon.h), four per
 * selective-scan channel block.  ssm.c uses them when the GEMM dispatch
 * chose neon. */
#include <math.h>
#include <string.h>

#include "runtime/simd/isa.h"
#include "runtime/ssm/ssm_internal.h"

#if RLX_HAVE_NEON
#define GDN_NV 4
#define VEC_F64 0
#include "runtime/simd/vec_neon.h"
#include "runtime/simd/vec_exp.h"
#include "runtime/ssm/ssm_kern.h"

const SsmIsa rlx_ssm_neon = {scan_block, gdn_head};
#else
const SsmIsa rlx_ssm_neon = {NULL, NULL};
#endif
