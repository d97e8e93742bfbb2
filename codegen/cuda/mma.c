/* mma.c: the tensor-core building blocks of the GPU kernels (mma.h):
 * mma.sync on fragment registers, ldmatrix, cp.async, and wgmma
 * (sm_90a) with its descriptors, fences and aligned shared memory.
 * matmul.c, attention.c and conv.c build their tiles from these. */
#include "codegen/cuda/mma.h"

#include <stdlib.h>
#include <string.h>

void cu_cp_async(Cg *cg, LLVMValueRef dst, LLVMValueRef src,
                 LLVMValueRef in, int bytes) {
  LLVMBuilderRef b = cg->b;
  char nm[48];
  snprintf(nm, sizeof nm, "llvm.nvvm.cp.async.%s.shared.global.%d.s",
           bytes == 16 ? "cg" : "ca", bytes);
  LLVMValueRef args[3] = {
      dst, LLVMBuildAddrSpaceCast(b, src, LLVMPointerTypeInContext(cg->lc, 1),
                                  ""),
      LLVMBuildSelect(b, in, cg_i32(cg, bytes), cg_i32(cg, 0), "")};
  cg_intrinsic_n(cg, nm, NULL, 0, args, 3);
}

void cu_ldmatrix4(Cg *cg, LLVMValueRef p, bool trans, LLVMValueRef r[4]) {
  LLVMTypeRef ty = LLVMTypeOf(p);
  LLVMValueRef v = cg_intrinsic_n(
      cg, trans ? "llvm.nvvm.ldmatrix.sync.aligned.m8n8.x4.trans.b16"
                : "llvm.nvvm.ldmatrix.sync.aligned.m8n8.x4.b16",
      &ty, 1, &p, 1);
  for (int i = 0; i < 4; i++)
    r[i] = LLVMBuildExtractValue(cg->b, v, (unsigned)i, "");
}

void cu_mma(Cg *cg, DType dt, LLVMValueRef a[4], LLVMValueRef bf[2],
            LLVMValueRef c[4]) {
  LLVMBuilderRef b = cg->b;
  LLVMValueRef args[10];
  LLVMTypeRef h2 = LLVMVectorType(cg->t_f16, 2);
  for (int i = 0; i < 6; i++) {
    LLVMValueRef v = i < 4 ? a[i] : bf[i - 4];
    args[i] = dt == DT_F16 ? LLVMBuildBitCast(b, v, h2, "") : v;
  }
  for (int i = 0; i < 4; i++) args[6 + i] = c[i];
  const char *nm = dt == DT_BF16 ? "llvm.nvvm.mma.m16n8k16.row.col.bf16"
                   : dt == DT_F16 ? "llvm.nvvm.mma.m16n8k16.row.col.f32.f32"
                                  : "llvm.nvvm.mma.m16n8k8.row.col.tf32";
  LLVMValueRef d = cg_intrinsic_n(cg, nm, NULL, 0, args, 10);
  for (int i = 0; i < 4; i++)
    c[i] = LLVMBuildExtractValue(b, d, (unsigned)i, "");
}

void cu_asm(Cg *cg, const char *s) {
  LLVMTypeRef ft = LLVMFunctionType(cg->t_void, NULL, 0, 0);
  LLVMValueRef f = LLVMGetInlineAsm(ft, s, strlen(s), "~{memory}", 9, 1, 0,
                                    LLVMInlineAsmDialectATT, 0);
  LLVMBuildCall2(cg->b, ft, f, NULL, 0, "");
}

bool cu_wgmma_ok(const Cu *cu) {
  const Options *op = cu->dev->u ? cu->dev->u->opt : NULL;
  return op && op->gpu_arch && !strcmp(op->gpu_arch, "sm_90a") &&
         op->gpu_wg[0] >= 0;
}

LLVMValueRef cu_wg_smem(Cu *cu) {
  LLVMBuilderRef b = cu->dev->b;
  LLVMValueRef p = cu_dyn_shared(cu->dev);
  LLVMValueRef pad = LLVMBuildAnd(
      b, LLVMBuildSub(b, i64(cu, 0), LLVMBuildPtrToInt(b, p, cu->dev->t_i64,
                                                       ""), ""),
      i64(cu, 1023), "");
  return LLVMBuildGEP2(b, cu->dev->t_i8, p, &pad, 1, "");
}

LLVMValueRef cu_wg_desc(Cu *cu, LLVMValueRef a, int64_t lbo, int64_t sbo) {
  LLVMBuilderRef b = cu->dev->b;
  a = LLVMBuildLShr(b, LLVMBuildAnd(b, a, i64(cu, 0x3FFFF), ""), i64(cu, 4),
                    "");
  return LLVMBuildOr(b, a, i64(cu, (lbo >> 4) << 16 | (sbo >> 4) << 32 |
                                   (int64_t)1 << 62), "");
}

/* The descriptor of operand x's 16-deep k step ks in the stage at
 * shared byte address sa (i64), for the outer block from row o0. */
void cu_wgmma(Cg *cg, DType dt, int n, LLVMValueRef acc, int nk,
              LLVMValueRef *ad, LLVMValueRef (*ar)[4], bool ta,
              LLVMValueRef *bd, bool tb, int wait) {
  LLVMBuilderRef b = cg->b;
  int na = n / 2, wa = ar ? 4 : 1; /* A operands per k step */
  int pa = na + (wa + 1) * nk;     /* the predicate's operand */
  char *s = malloc(4096 + (size_t)nk * (96 + (size_t)na * 6));
  RLX_ASSERT(s);
  const char *ty = dt == DT_BF16 ? "bf16" : "f16";
  int len = sprintf(s, "{\n.reg .pred p;\nsetp.ne.b32 p, $%d, 0;\n%s", pa,
                    nk ? "wgmma.fence.sync.aligned;\n" : "");
  for (int ks = 0; ks < nk; ks++) {
    len += sprintf(s + len, "wgmma.mma_async.sync.aligned.m64n%dk16.f32.%s.%s "
                   "{", n, ty, ty);
    for (int i = 0; i < na; i++)
      len += sprintf(s + len, "%s$%d", i ? ", " : "", i);
    if (ar)
      len += sprintf(s + len, "}, {$%d, $%d, $%d, $%d}, $%d, p, 1, 1, %d;\n",
                     na + 4 * ks, na + 4 * ks + 1, na + 4 * ks + 2,
                     na + 4 * ks + 3, na + 4 * nk + ks, tb);
    else
      len += sprintf(s + len, "}, $%d, $%d, p, 1, 1, %d, %d;\n", na + ks,
                     na + nk + ks, ta, tb);
  }
  len += sprintf(s + len, "%swgmma.wait_group.sync.aligned %d;\n}",
                 nk ? "wgmma.commit_group.sync.aligned;\n" : "", wait);
  char *con = malloc((size_t)na * 8 + (size_t)nk * 10 + 16);
  RLX_ASSERT(con);
  int cl = 0;
  for (int i = 0; i < na; i++) cl += sprintf(con + cl, "=f,");
  for (int i = 0; i < wa * nk; i++) cl += sprintf(con + cl, ar ? "r," : "l,");
  for (int i = 0; i < nk; i++) cl += sprintf(con + cl, "l,");
  cl += sprintf(con + cl, "r");
  for (int i = 0; i < na; i++) cl += sprintf(con + cl, ",%d", i);
  int nargs = pa + 1;
  LLVMTypeRef *at = malloc(sizeof *at * (size_t)nargs);
  LLVMTypeRef *rt = malloc(sizeof *rt * (size_t)na);
  LLVMValueRef *args = malloc(sizeof *args * (size_t)nargs);
  RLX_ASSERT(at && rt && args);
  for (int i = 0; i < na; i++) rt[i] = cg->t_f32;
  for (int ks = 0; ks < nk; ks++) {
    for (int i = 0; i < wa; i++) args[wa * ks + i] = ar ? ar[ks][i] : ad[ks];
    args[wa * nk + ks] = bd[ks];
  }
  args[pa - na] = cg_i32(cg, 1);
  for (int i = 0; i < na; i++) {
    LLVMValueRef ix = cg_i32(cg, i);
    args[pa - na + 1 + i] = LLVMBuildLoad2(
        b, cg->t_f32, LLVMBuildGEP2(b, cg->t_f32, acc, &ix, 1, ""), "");
  }
  for (int i = 0; i < nargs; i++) at[i] = LLVMTypeOf(args[i]);
  LLVMTypeRef st = LLVMStructTypeInContext(cg->lc, rt, (unsigned)na, 0);
  LLVMTypeRef ft = LLVMFunctionType(st, at, (unsigned)nargs, 0);
  LLVMValueRef f = LLVMGetInlineAsm(ft, s, (size_t)len, con, (size_t)cl, 1, 0,
                                    LLVMInlineAsmDialectATT, 0);
  LLVMValueRef r = LLVMBuildCall2(b, ft, f, args, (unsigned)nargs, "");
  for (int i = 0; i < na; i++) {
    LLVMValueRef ix = cg_i32(cg, i);
    LLVMBuildStore(b, LLVMBuildExtractValue(b, r, (unsigned)i, ""),
                   LLVMBuildGEP2(b, cg->t_f32, acc, &ix, 1, ""));
  }
  free(s), free(con), free(at), free(rt), free(args);
}
