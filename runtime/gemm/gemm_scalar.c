/* gemm_scalar.c -- portable C GEMM micro-kernels (4x8): gemm_isa.h over
 * one-element vectors, the fallback of CPUs without a SIMD table.
 *
 * fma()/fmaf() make every step one fused multiply-add, as the contract
 * in gemm_internal.h requires (a library call unless the compiler
 * targets hardware FMA), so the results are bit-identical to the SIMD
 * tables'.
 */
#include "runtime/gemm/gemm_internal.h"

#define ISA scalar
#define ISA_NAME "scalar"
#define VEC_HEADER "runtime/simd/vec_scalar.h"
#define GK_MR 4
#define GK_NV 8
#include "runtime/gemm/gemm_isa.h"
