/* gemm_isa.h -- one ISA's GEMM kernel tables: gemm_kern.h instantiated
 * for f32 and f64 over the vector layer, GK_MR x (GK_NV vectors) tiles.
 * Included by gemm_<isa>.c with ISA (the name in rlx_gemm_<ISA>_f32),
 * ISA_NAME (its string), VEC_HEADER, GK_MR and GK_NV defined.  KC is
 * the same in every table (384 f32, 256 f64), so every ISA gives the
 * same bits.
 * Optional: GK_NC_F32, the columns of a packed f32 B block (default
 * 512; blocking only, no effect on results).
 * Optional: GK_F32_EXTRA, a header included after the f32 kernel (with
 * the f32 vector layer active) that defines ISA-specific packing and
 * edge routines and names them in GK_PACK_A_F32, GK_PACK_B_F32,
 * GK_PACK_BT_F32, GK_PACK_AT_F32 and GK_EDGE_F32 (contracts:
 * gemm_internal.h); those not named stay NULL (the driver's generic
 * loops).  Naming GK_EDGE_RA_F32 too (the edge tile reading A in place
 * by rows) also enables kern_f32_ra: the table then reads full A panels
 * of unit column stride in place instead of packing them.
 */
#define GEMM_CAT3_(a, b, c) a##b##c
#define GEMM_CAT3(a, b, c) GEMM_CAT3_(a, b, c)

#define VEC_F64 0
#define T float
#define GK_NAME kern_f32
#include VEC_HEADER
#include "runtime/gemm/gemm_kern.h"
enum { NR_F32 = GK_NV * VL };
#ifdef GK_F32_EXTRA
#include GK_F32_EXTRA
#endif
#ifndef GK_PACK_A_F32
#define GK_PACK_A_F32 NULL
#endif
#ifndef GK_PACK_B_F32
#define GK_PACK_B_F32 NULL
#endif
#ifndef GK_PACK_BT_F32
#define GK_PACK_BT_F32 NULL
#endif
#ifndef GK_PACK_AT_F32
#define GK_PACK_AT_F32 NULL
#endif
#ifndef GK_EDGE_F32
#define GK_EDGE_F32 NULL
#endif
#ifdef GK_EDGE_RA_F32
#define GK_KERN_RA_F32 kern_f32_ra
#else
#define GK_KERN_RA_F32 NULL
#define GK_EDGE_RA_F32 NULL
#endif
#undef VEC_F64
#undef T
#undef GK_NAME

#define VEC_F64 1
#define T double
#define GK_NAME kern_f64
#include VEC_HEADER
#include "runtime/gemm/gemm_kern.h"
enum { NR_F64 = GK_NV * VL };

#ifndef GK_NC_F32 /* columns of a packed f32 B block */
#define GK_NC_F32 512
#endif
const RlxGemmCfgF32 GEMM_CAT3(rlx_gemm_, ISA, _f32) = {
  .name = ISA_NAME, .mr = GK_MR, .nr = NR_F32, .kc = 384, .nc = GK_NC_F32,
  .kern = kern_f32, .pack_a = GK_PACK_A_F32, .pack_b = GK_PACK_B_F32,
  .pack_bt = GK_PACK_BT_F32, .pack_at = GK_PACK_AT_F32,
  .edge = GK_EDGE_F32, .kern_ra = GK_KERN_RA_F32,
  .edge_ra = GK_EDGE_RA_F32};
const RlxGemmCfgF64 GEMM_CAT3(rlx_gemm_, ISA, _f64) = {
  .name = ISA_NAME, .mr = GK_MR, .nr = NR_F64, .kc = 256, .nc = 512,
  .kern = kern_f64};
