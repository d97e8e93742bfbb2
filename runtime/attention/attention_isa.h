/* attention_isa.h -- one ISA's attention kernel tables: attention_kern.h
 * instantiated for f32 (with VEXP, simd/vec_exp.h) and f64 over the
 * vector layer.  Included by attention_<isa>.c, inside its ISA guard,
 * with ISA (the name in rlx_attn_<ISA>_f32), VEC_HEADER (the
 * simd/vec_*.h to use) and MM_NV defined, and optionally ATTN_TRANS_F32
 * (the f32 trans kernel; NULL: the portable one).  f64 keeps libm exp (the
 * portable softmax steps of attention_tmpl.h).
 */
#define ATTN_CAT3_(a, b, c) a##b##c
#define ATTN_CAT3(a, b, c) ATTN_CAT3_(a, b, c)

#define VEC_F64 0
#define T float
#define SFX f32
#include VEC_HEADER
#include "runtime/simd/vec_exp.h"
#include "runtime/attention/attention_kern.h"
#undef VEC_F64
#undef T
#undef SFX

#define VEC_F64 1
#define T double
#define SFX f64
#include VEC_HEADER
#include "runtime/attention/attention_kern.h"

#ifndef ATTN_TRANS_F32
#define ATTN_TRANS_F32 NULL
#endif
const AttnIsaF32 ATTN_CAT3(rlx_attn_, ISA, _f32) = {
    mm_f32, online_f32, expsub_f32, ATTN_TRANS_F32, dsub_f32, cols_f32};
const AttnIsaF64 ATTN_CAT3(rlx_attn_, ISA, _f64) = {
    mm_f64, NULL, NULL, NULL, dsub_f64, cols_f64};
