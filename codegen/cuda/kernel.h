/* kernel.h: small helpers of the GPU op emitters (kernels.c, index.c,
 * random.c): the target's refusal, grid sizes and i64 index arithmetic
 * in the current kernel. Static inline: each emitter file gets its own
 * copy, no symbol crosses files. */
#ifndef RLX_CG_CUDA_KERNEL_H
#define RLX_CG_CUDA_KERNEL_H

#include "codegen/cuda/cuda.h"

#include <stdio.h>

#define EW_BLOCK 256 /* threads per block of one-thread-per-element kernels */

/* The GPU target's refusal of n (why: a short reason, or NULL). */
static inline bool unsupported(Cu *cu, Node *n, const char *why) {
  cu->dev->failed = true;
  return diag_error(cu->dev->ctx, n->loc, "op '%s' is not supported by "
                    "--target=cuda yet%s%s", op_name(n->op), why ? ": " : "",
                    why ? why : "");
}

static inline bool bad_dtype(Cu *cu, Node *n, DType dt) {
  char why[48];
  snprintf(why, sizeof why, "dtype %s", dt_name(dt));
  return unsupported(cu, n, why);
}

static inline unsigned blocks_for(int64_t n, int b) {
  return (unsigned)((n + b - 1) / b);
}

static inline int norm_axis(int64_t a, int rank) {
  return (int)(a < 0 ? a + rank : a);
}

static inline LLVMValueRef i64(Cu *cu, int64_t v) {
  return cg_i64(cu->dev, v);
}

static inline LLVMValueRef add(Cu *cu, LLVMValueRef a, LLVMValueRef b) {
  return LLVMBuildAdd(cu->dev->b, a, b, "");
}

static inline LLVMValueRef mul(Cu *cu, LLVMValueRef a, int64_t c) {
  return c == 1 ? a : LLVMBuildMul(cu->dev->b, a, i64(cu, c), "");
}

static inline LLVMValueRef udiv(Cu *cu, LLVMValueRef a, int64_t c) {
  return c == 1 ? a : LLVMBuildUDiv(cu->dev->b, a, i64(cu, c), "");
}

static inline LLVMValueRef urem(Cu *cu, LLVMValueRef a, int64_t c) {
  return LLVMBuildURem(cu->dev->b, a, i64(cu, c), "");
}

static inline LLVMValueRef ult(Cu *cu, LLVMValueRef a, int64_t c) {
  return LLVMBuildICmp(cu->dev->b, LLVMIntULT, a, i64(cu, c), "");
}

/* Offset of flat index i (over dims[0..r), row-major) with strides. */
static inline LLVMValueRef remap(Cu *cu, LLVMValueRef i, const int64_t *dims,
                                 const int64_t *str, int r) {
  LLVMValueRef off = i64(cu, 0);
  for (int d = r - 1; d >= 0; d--) {
    if (dims[d] == 1) continue;
    LLVMValueRef q = d ? urem(cu, i, dims[d]) : i;
    if (str[d]) off = add(cu, off, mul(cu, q, str[d]));
    if (d) i = udiv(cu, i, dims[d]);
  }
  return off;
}

#endif
