/* mma.h: tensor-core building blocks shared by the GPU kernels that use
 * them (mma.c defines them; matmul.c, attention.c and conv.c use them):
 * the mma instruction on fragment registers, ldmatrix, cp.async and
 * wgmma. */
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

/* acc (a pointer to the n / 2 f32 accumulators of a warpgroup's
 * m64 x n tile, wgmma's fragment layout) += nk 16-deep k steps of
 * A x B, bf16 or f16 (sm_90a; inline PTX, LLVM 19 has no wgmma
 * intrinsics): A by shared-memory descriptors ad[ks] (ta: MN-major) or,
 * when ar is given, register fragments ar[ks] (mma.m16n8k16's A layout
 * per warp); B by descriptors bd[ks] (tb: MN-major). One asm block
 * (the accumulators its operands, so no compiler move falls between
 * the steps): fence, the wgmmas, commit, then wait until at most `wait`
 * groups are pending; nk = 0: the wait alone. */
void cu_wgmma(Cg *cg, DType dt, int n, LLVMValueRef acc, int nk,
              LLVMValueRef *ad, LLVMValueRef (*ar)[4], bool ta,
              LLVMValueRef *bd, bool tb, int wait);
/* The kernels may use wgmma: --gpu-arch=sm_90a, not RLX_CUDA_MM=nowg. */
bool cu_wgmma_ok(const Cu *cu);
/* The kernel's dynamic shared memory from its first 1024-byte boundary
 * (wgmma's 128-byte swizzle atoms; ask for 1024 bytes more). */
LLVMValueRef cu_wg_smem(Cu *cu);
/* The descriptor of a 128-byte-swizzled shared operand starting at
 * shared byte address a (i64): lbo, sbo as wgmma's. */
LLVMValueRef cu_wg_desc(Cu *cu, LLVMValueRef a, int64_t lbo, int64_t sbo);
/* An inline asm statement without operands (fences). */
void cu_asm(Cg *cg, const char *s);

#endif
