/* mma.h: tensor-core building blocks shared by the GPU kernels that use
 * mma.sync (matmul.c defines them; attention.c uses them): the mma
 * instruction on fragment registers, ldmatrix and cp.async. */
#ifndef RLX_CODEGEN_CUDA_MMA_H
#define RLX_CODEGEN_CUDA_MMA_H

#include "codegen/cuda/cuda.h"

/* c[0..4) (f32 values) = mma(a[4], b[2], c) in dt's instruction:
 * bf16, f16 (m16n8k16) or f32 (m16n8k8.tf32); a, b: i32 registers in
 * the fragment layout of the PTX ISA (row-major A, column-major B). */
void cu_mma(Cg *cg, DType dt, LLVMValueRef a[4], LLVMValueRef b[2],
            LLVMValueRef c[4]);
/* ldmatrix.sync.aligned.m8n8.x4(.trans).b16 at shared pointer p (lane
 * l addresses row l & 7 of matrix l >> 3): r[j] is matrix j's
 * register. */
void cu_ldmatrix4(Cg *cg, LLVMValueRef p, bool trans, LLVMValueRef r[4]);
/* cp.async of `bytes` (4, 8: .ca; 16: .cg) from global src (generic
 * pointer) to shared dst (addrspace 3); zero-filled where in (i1) is
 * false (src is then not read). */
void cu_cp_async(Cg *cg, LLVMValueRef dst, LLVMValueRef src,
                 LLVMValueRef in, int bytes);

#endif
