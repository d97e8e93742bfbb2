/* emit_table.h: code emitter of every core op, by op ID (see cg.h).
 * emit.c expands one entry per row of ir/ops.def, so an op with no
 * CG_<ID> macro here or in emit_table_ops.h fails the build. An entry
 * is {emit function, scratch-bytes function or NULL}; ops that are not
 * compiled use CG_UNSUPPORTED (a diagnostic naming the op). Ops owned
 * by the codegen-ops files are listed in emit_table_ops.h. */
#ifndef RLX_EMIT_TABLE_H
#define RLX_EMIT_TABLE_H

#define CG_UNSUPPORTED {cg_emit_unsupported, NULL}

#define CG_INPUT {cg_emit_nothing, NULL}
#define CG_PARAM {cg_emit_nothing, NULL}
#define CG_CONST {cg_emit_const, NULL}
#define CG_RELU {cg_emit_elementwise, NULL}
#define CG_GELU {cg_emit_elementwise, NULL}
#define CG_GELU_TANH {cg_emit_elementwise, NULL}
#define CG_SILU {cg_emit_elementwise, NULL}
#define CG_SIGMOID {cg_emit_elementwise, NULL}
#define CG_TANH {cg_emit_elementwise, NULL}
#define CG_EXP {cg_emit_elementwise, NULL}
#define CG_LOG {cg_emit_elementwise, NULL}
#define CG_SQRT {cg_emit_elementwise, NULL}
#define CG_RSQRT {cg_emit_elementwise, NULL}
#define CG_NEG {cg_emit_elementwise, NULL}
#define CG_ABS {cg_emit_elementwise, NULL}
#define CG_SIN {cg_emit_elementwise, NULL}
#define CG_COS {cg_emit_elementwise, NULL}
#define CG_TAN {cg_emit_elementwise, NULL}
#define CG_ATAN {cg_emit_elementwise, NULL}
#define CG_ROUND {cg_emit_elementwise, NULL}
#define CG_ADD {cg_emit_elementwise, NULL}
#define CG_SUB {cg_emit_elementwise, NULL}
#define CG_MUL {cg_emit_elementwise, NULL}
#define CG_DIV {cg_emit_elementwise, NULL}
#define CG_MIN {cg_emit_elementwise, NULL}
#define CG_MAX {cg_emit_elementwise, NULL}
#define CG_POW {cg_emit_elementwise, NULL}
#define CG_EQ {cg_emit_elementwise, NULL}
#define CG_NE {cg_emit_elementwise, NULL}
#define CG_LT {cg_emit_elementwise, NULL}
#define CG_LE {cg_emit_elementwise, NULL}
#define CG_GT {cg_emit_elementwise, NULL}
#define CG_GE {cg_emit_elementwise, NULL}
#define CG_WHERE {cg_emit_elementwise, NULL}
#define CG_CAST {cg_emit_elementwise, NULL}
#define CG_STOP_GRADIENT {cg_emit_elementwise, NULL}
#define CG_MATMUL {cg_emit_matmul, cg_scratch_matmul}
#define CG_DENSE_SOLVE {cg_emit_solve, cg_scratch_solve}
#define CG_BATCHED_DENSE_SOLVE {cg_emit_solve, cg_scratch_solve}
#define CG_RESHAPE {cg_emit_alias, NULL}
#define CG_LAYER_NORM {cg_emit_norm, NULL}
#define CG_RMS_NORM {cg_emit_norm, NULL}
#define CG_GROUP_NORM {cg_emit_norm, NULL}
#define CG_BATCH_NORM_INFERENCE {cg_emit_norm, NULL}
#define CG_ROPE {cg_emit_rope, NULL}
#define CG_ATTENTION {cg_emit_attention, cg_scratch_attention}
#define CG_CONV2D {cg_emit_conv, cg_scratch_conv}
#define CG_MAX_POOL2D {cg_emit_pool, NULL}
#define CG_AVG_POOL2D {cg_emit_pool, NULL}
#define CG_FUSED_TRANSFORMER_LAYER {cg_emit_lowered, NULL} /* expand_fused */
#define CG_SELECTIVE_SCAN {cg_emit_ssm, cg_scratch_ssm}
#define CG_GATED_DELTA_NET {cg_emit_ssm, cg_scratch_ssm}
#define CG_FAKE_QUANTIZE {cg_emit_lowered, NULL} /* passes/lower_quant.c */
#define CG_FAKE_QUANTIZE_LSQ {cg_emit_lowered, NULL}
#define CG_QUANTIZE {cg_emit_elementwise, NULL}
#define CG_DEQUANTIZE {cg_emit_elementwise, NULL}
#define CG_Q_MATMUL {cg_emit_qgemm, cg_scratch_qgemm}
#define CG_Q_CONV2D {cg_emit_qgemm, cg_scratch_qgemm}
#define CG_DEQUANT_MATMUL \
  {cg_emit_dequant_matmul, cg_scratch_dequant_matmul}
#define CG_GROUPED_MATMUL \
  {cg_emit_grouped_matmul, cg_scratch_grouped_matmul}
#define CG_CONJUGATE {cg_emit_elementwise, NULL}
#define CG_COMPLEX_NORM_SQ {cg_emit_elementwise, NULL}
#define CG_COMPLEX {cg_emit_elementwise, NULL}
#define CG_REAL {cg_emit_elementwise, NULL}
#define CG_IMAG {cg_emit_elementwise, NULL}
#define CG_FFT {cg_emit_fft, cg_scratch_fft}
#define CG_LOG_MEL {cg_emit_log_mel, cg_scratch_log_mel}
#define CG_RNG_UNIFORM {cg_emit_rng, NULL}
#define CG_RNG_NORMAL {cg_emit_rng, NULL}
#define CG_SAMPLE {cg_emit_sample, cg_scratch_sample}
#define CG_LAYER_NORM_BACKWARD_INPUT {cg_emit_norm, NULL}
#define CG_LAYER_NORM_BACKWARD_GAMMA {cg_emit_norm_param, cg_scratch_norm}
#define CG_RMS_NORM_BACKWARD_INPUT {cg_emit_norm, NULL}
#define CG_RMS_NORM_BACKWARD_GAMMA {cg_emit_norm_param, cg_scratch_norm}
#define CG_RMS_NORM_BACKWARD_BETA {cg_emit_norm_param, cg_scratch_norm}
#define CG_GROUP_NORM_BACKWARD_INPUT {cg_emit_norm, NULL}
#define CG_GROUP_NORM_BACKWARD_GAMMA {cg_emit_norm_param, cg_scratch_norm}
#define CG_GROUP_NORM_BACKWARD_BETA {cg_emit_norm_param, cg_scratch_norm}
#define CG_BATCH_NORM_INFERENCE_BACKWARD_INPUT {cg_emit_norm, NULL}
#define CG_BATCH_NORM_INFERENCE_BACKWARD_GAMMA \
  {cg_emit_norm_param, cg_scratch_norm}
#define CG_BATCH_NORM_INFERENCE_BACKWARD_BETA \
  {cg_emit_norm_param, cg_scratch_norm}
#define CG_ROPE_BACKWARD {cg_emit_rope, NULL}
#define CG_MAX_POOL2D_BACKWARD {cg_emit_pool, NULL}
#define CG_AVG_POOL2D_BACKWARD {cg_emit_pool, NULL}
#define CG_CONV2D_BACKWARD_INPUT {cg_emit_conv, cg_scratch_conv}
#define CG_CONV2D_BACKWARD_WEIGHT {cg_emit_conv, cg_scratch_conv}
#define CG_ATTENTION_BACKWARD {cg_emit_attention, cg_scratch_attention}
#define CG_COMPLEX_NORM_SQ_BACKWARD {cg_emit_elementwise, NULL}
#define CG_FAKE_QUANTIZE_BACKWARD {cg_emit_lowered, NULL}
#define CG_FAKE_QUANTIZE_LSQ_BACKWARD_X {cg_emit_lowered, NULL}
#define CG_FAKE_QUANTIZE_LSQ_BACKWARD_SCALE {cg_emit_lowered, NULL}
#define CG_LOG_MEL_BACKWARD {cg_emit_log_mel, cg_scratch_log_mel}
#define CG_GROUPED_MATMUL_BACKWARD_WEIGHT \
  {cg_emit_grouped_matmul, cg_scratch_grouped_matmul}

#include "codegen/emit_random.h"
#include "codegen/emit_moe.h"
#include "codegen/emit_table_ops.h"

#endif
