/* device.c: building blocks of the device module (cuda.h): kernels and
 * their launches, thread indices, warp and block reductions and the
 * column reductions (cu_col_reduce) in a fixed order, the math library
 * and the PTX text.
 *
 * Math: LLVM 19 cannot select llvm.exp/log/sin/cos/pow (nor libm calls)
 * for NVPTX, so after the kernels are built every such call is renamed
 * to its OpenCL C name (llvm.exp.f32 and expf -> _Z3expf, tanh ->
 * _Z4tanhd) and libclc's self-contained NVPTX bitcode
 * (/usr/lib/clc/nvptx64--nvidiacl.bc, Debian libclc-19; expf <= 0.84
 * ulp, tanhf <= 2 ulp) is linked: only the functions used are kept
 * (they are linkonce_odr). The f32 exp and tanh of the elementwise ops
 * are the CPU path's own straight-line Cephes code. A PTX naming an
 * `.extern .func` (an unknown intrinsic, a missing library function)
 * would fail only when the driver loads it: it is a diagnostic here.
 */
#include "codegen/cuda/cuda.h"

#include <llvm-c/Analysis.h>
#include <llvm-c/BitReader.h>
#include <llvm-c/Linker.h>
#include <llvm-c/Transforms/PassBuilder.h>
#include <stdlib.h>
#include <string.h>

#define LIBCLC "/usr/lib/clc/nvptx64--nvidiacl.bc"

static LLVMValueRef sreg(Cu *cu, const char *nm) {
  Cg *cg = cu->dev;
  LLVMValueRef v = cg_intrinsic_n(cg, nm, NULL, 0, NULL, 0);
  return LLVMBuildZExt(cg->b, v, cg->t_i64, "");
}

LLVMValueRef cu_tid(Cu *cu) {
  return sreg(cu, "llvm.nvvm.read.ptx.sreg.tid.x");
}
LLVMValueRef cu_ctaid(Cu *cu) {
  return sreg(cu, "llvm.nvvm.read.ptx.sreg.ctaid.x");
}

bool cu_unsupported(Cu *cu, Node *n, const char *why) {
  cu->dev->failed = true;
  return diag_error(cu->dev->ctx, n->loc, "op '%s' is not supported by "
                    "--target=cuda yet%s%s", op_name(n->op), why ? ": " : "",
                    why ? why : "");
}

bool cu_bad_dtype(Cu *cu, Node *n, DType dt) {
  char why[48];
  snprintf(why, sizeof why, "dtype %s", dt_name(dt));
  return cu_unsupported(cu, n, why);
}

unsigned cu_blocks_for(int64_t n, int b) {
  return (unsigned)((n + b - 1) / b);
}

LLVMValueRef cu_remap(Cu *cu, LLVMValueRef i, const int64_t *dims,
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

LLVMValueRef cu_gid(Cu *cu) {
  Cg *cg = cu->dev;
  LLVMValueRef n = sreg(cu, "llvm.nvvm.read.ptx.sreg.ntid.x");
  return LLVMBuildNUWAdd(cg->b, LLVMBuildNUWMul(cg->b, cu_ctaid(cu), n, ""),
                         cu_tid(cu), "");
}

void cu_kernel_begin(Cu *cu, CgPlan *plan, const char *what) {
  Cg *cg = cu->dev;
  RLX_ASSERT(cu->nkernels < CU_MAX_KERNELS);
  char name[96];
  snprintf(name, sizeof name, "rlx_k%d_%s", cu->nkernels, what);
  cu->kernels[cu->nkernels].name = arena_strdup(cg->ctx->arena, name);
  /* the body; cu_kernel_end wraps it into the kernel */
  LLVMValueRef fn = LLVMAddFunction(cg->mod, "rlx.kernel.body",
                                    cu->t_kernel);
  LLVMSetLinkage(fn, LLVMInternalLinkage);
  cg_fn_attrs(cg, fn);
  unsigned inl = LLVMGetEnumAttributeKindForName("alwaysinline", 12);
  LLVMAddAttributeAtIndex(fn, LLVMAttributeFunctionIndex,
                          LLVMCreateEnumAttribute(cg->lc, inl, 0));
  CgFn *f = &cu->fn;
  memset(f, 0, sizeof *f);
  f->fn = fn;
  f->plan = plan;
  f->in = LLVMGetParam(fn, 0);
  f->out = LLVMGetParam(fn, 1);
  f->ws = LLVMGetParam(fn, 2);
  f->sizes = LLVMGetParam(fn, 3);
  f->alloca_bb = LLVMAppendBasicBlockInContext(cg->lc, fn, "entry");
  LLVMBasicBlockRef body = LLVMAppendBasicBlockInContext(cg->lc, fn, "body");
  f->err_bb = LLVMAppendBasicBlockInContext(cg->lc, fn, "err");
  cu->exit_bb = LLVMAppendBasicBlockInContext(cg->lc, fn, "exit");
  LLVMPositionBuilderAtEnd(cg->b, f->alloca_bb);
  f->status = LLVMBuildAlloca(cg->b, cg->t_i32, "status");
  LLVMPositionBuilderAtEnd(cg->b, body);
  cg->fn = f;
  cg->nfsrc = 0;
}

/* Is x a load of a pointer from p? */
static bool ptr_load(LLVMValueRef x, LLVMValueRef p) {
  return LLVMIsALoadInst(x) && LLVMGetOperand(x, 0) == p &&
         LLVMGetTypeKind(LLVMTypeOf(x)) == LLVMPointerTypeKind;
}

/* Mark in used[] the elements of the pointer array a (n of them) that
 * the body loads (cg_arg_ptr: a constant-index GEP, then loads); false
 * when a has another use (passed on whole, a variable index). */
static bool loaded_elements(Cg *cg, LLVMValueRef a, int n, bool *used) {
  for (LLVMUseRef u = LLVMGetFirstUse(a); u; u = LLVMGetNextUse(u)) {
    LLVMValueRef x = LLVMGetUser(u);
    int64_t i = 0;
    if (LLVMIsAGetElementPtrInst(x)) {
      LLVMValueRef k = LLVMGetNumOperands(x) == 2 ? LLVMGetOperand(x, 1)
                                                  : NULL;
      if (!k || LLVMGetOperand(x, 0) != a || !LLVMIsAConstantInt(k) ||
          LLVMGetGEPSourceElementType(x) != cg->t_ptr)
        return false;
      i = LLVMConstIntGetSExtValue(k);
      if (i < 0 || i >= n) return false;
      for (LLVMUseRef v = LLVMGetFirstUse(x); v; v = LLVMGetNextUse(v))
        if (!ptr_load(LLVMGetUser(v), x)) return false;
    } else if (!ptr_load(x, a)) {
      return false;
    }
    used[i] = true;
  }
  return true;
}

/* Kernel k of body: its parameters are the elements of the input and
 * output pointer arrays the body loads (or an array on whole, byval,
 * where it uses it otherwise), then ws and the sizes (byval) if the
 * body uses them; it rebuilds
 * the arrays the body takes from them and calls it (inlined; SROA then
 * turns the arrays back into the parameters). */
static void kernel_wrap(Cu *cu, LLVMValueRef body, CuKernel *k) {
  Cg *cg = cu->dev;
  int cnt[2] = {cu->nin, cu->nout};
  int most = cnt[0] > cnt[1] ? cnt[0] : cnt[1];
  bool *used = malloc(sizeof *used * (size_t)most);
  CuParam *par = arena_alloc(cg->ctx->arena, sizeof *par *
                                                 (size_t)(cnt[0] + cnt[1] + 1));
  int np = 0, top[2] = {-1, -1};
  RLX_ASSERT(used);
  k->bytes = 0;
  for (int a = 0; a < 2; a++) {
    memset(used, 0, sizeof *used * (size_t)most);
    if (!loaded_elements(cg, LLVMGetParam(body, (unsigned)a), cnt[a], used))
      par[np++] = (CuParam){a, -1}, k->bytes += 8 * (int64_t)cnt[a];
    else
      for (int i = 0; i < cnt[a]; i++)
        if (used[i]) par[np++] = (CuParam){a, i}, top[a] = i, k->bytes += 8;
  }
  free(used);
  if (LLVMGetFirstUse(LLVMGetParam(body, 2)))
    par[np++] = (CuParam){CU_WS, 0}, k->bytes += 8;
  if (LLVMGetFirstUse(LLVMGetParam(body, 3)))
    par[np++] = (CuParam){CU_SIZES, -1}, k->bytes += 8 * cu->nsizes;
  LLVMTypeRef *t = malloc(sizeof *t * (size_t)(np + 1));
  RLX_ASSERT(t);
  for (int i = 0; i < np; i++) t[i] = cg->t_ptr;
  LLVMValueRef fn = LLVMAddFunction(
      cg->mod, k->name, LLVMFunctionType(cg->t_void, t, (unsigned)np, 0));
  free(t);
  LLVMSetFunctionCallConv(fn, LLVMPTXKernelCallConv);
  cg_fn_attrs(cg, fn);
  LLVMPositionBuilderAtEnd(cg->b,
                           LLVMAppendBasicBlockInContext(cg->lc, fn, "e"));
  LLVMValueRef arr[4] = {LLVMConstNull(cg->t_ptr), LLVMConstNull(cg->t_ptr),
                         LLVMConstNull(cg->t_ptr), LLVMConstNull(cg->t_ptr)};
  for (int a = 0; a < 2; a++)
    if (top[a] >= 0)
      arr[a] = LLVMBuildAlloca(
          cg->b, LLVMArrayType2(cg->t_ptr, (uint64_t)top[a] + 1), "");
  unsigned byval = LLVMGetEnumAttributeKindForName("byval", 5);
  for (int i = 0; i < np; i++) {
    LLVMValueRef p = LLVMGetParam(fn, (unsigned)i);
    if (par[i].arr == CU_WS) {
      arr[2] = p;
    } else if (par[i].arr == CU_SIZES) {
      LLVMTypeRef at = LLVMArrayType2(cg->t_i64, (uint64_t)cu->nsizes);
      LLVMAddAttributeAtIndex(fn, (unsigned)i + 1,
                              LLVMCreateTypeAttribute(cg->lc, byval, at));
      arr[3] = p;
    } else if (par[i].idx < 0) {
      LLVMTypeRef at = LLVMArrayType2(cg->t_ptr, (uint64_t)cnt[par[i].arr]);
      LLVMAddAttributeAtIndex(fn, (unsigned)i + 1,
                              LLVMCreateTypeAttribute(cg->lc, byval, at));
      arr[par[i].arr] = p;
    } else {
      LLVMValueRef x = cg_i64(cg, par[i].idx);
      LLVMBuildStore(cg->b, p, LLVMBuildInBoundsGEP2(
                                   cg->b, cg->t_ptr, arr[par[i].arr], &x, 1,
                                   ""));
    }
  }
  LLVMBuildCall2(cg->b, cu->t_kernel, body, arr, 4, "");
  LLVMBuildRetVoid(cg->b);
  k->par = par;
  k->npar = np;
}

/* The module's error word rlx_err (docs/gpu.md): [0] the first RLX_ERR_*
 * code a kernel recorded, [1] the last code rlx_err_take took. */
static LLVMValueRef err_word(Cg *cg) {
  LLVMValueRef g = LLVMGetNamedGlobal(cg->mod, "rlx_err");
  if (g) return g;
  LLVMTypeRef t = LLVMArrayType2(cg->t_i32, 2);
  g = LLVMAddGlobalInAddressSpace(cg->mod, t, "rlx_err", 1);
  LLVMSetInitializer(g, LLVMConstNull(t));
  LLVMSetAlignment(g, 4);
  return g;
}

/* The body's error exit (cg_fail_if: its checks store an RLX_ERR_* code
 * in status): the code goes to the error word if the word holds none
 * (compare-and-swap from 0; a kernel's checks all record one code, so
 * the result does not depend on thread order), then the thread exits.
 * A body without checks has no exit of this kind and no atomic. An if
 * branch's kernels record in the branch's word (cu->err): the branch
 * may not be taken. */
static void err_exit(Cu *cu) {
  Cg *cg = cu->dev;
  LLVMBasicBlockRef bb = cu->fn.err_bb;
  if (!LLVMGetFirstUse(LLVMBasicBlockAsValue(bb))) {
    LLVMDeleteBasicBlock(bb);
    return;
  }
  LLVMPositionBuilderAtEnd(cg->b, bb);
  LLVMValueRef code = LLVMBuildLoad2(cg->b, cg->t_i32, cu->fn.status, "");
  LLVMBuildAtomicCmpXchg(cg->b, cu->err ? cu->err : err_word(cg),
                         cg_i32(cg, 0), code, LLVMAtomicOrderingMonotonic,
                         LLVMAtomicOrderingMonotonic, 0);
  LLVMBuildBr(cg->b, cu->exit_bb);
}

void cu_err_take(Cu *cu) {
  Cg *cg = cu->dev;
  LLVMValueRef w = LLVMGetNamedGlobal(cg->mod, "rlx_err");
  if (!w) return;
  RLX_ASSERT(cu->nkernels < CU_MAX_KERNELS);
  LLVMValueRef fn = LLVMAddFunction(cg->mod, "rlx_err_take",
                                    LLVMFunctionType(cg->t_void, NULL, 0, 0));
  LLVMSetFunctionCallConv(fn, LLVMPTXKernelCallConv);
  cg_fn_attrs(cg, fn);
  LLVMPositionBuilderAtEnd(cg->b,
                           LLVMAppendBasicBlockInContext(cg->lc, fn, "e"));
  LLVMValueRef old = LLVMBuildAtomicRMW(cg->b, LLVMAtomicRMWBinOpXchg, w,
                                        cg_i32(cg, 0),
                                        LLVMAtomicOrderingMonotonic, 0);
  LLVMValueRef k[2] = {cg_i64(cg, 0), cg_i64(cg, 1)};
  LLVMBuildStore(cg->b, old, LLVMBuildInBoundsGEP2(
                                 cg->b, LLVMGlobalGetValueType(w), w, k, 2,
                                 ""));
  LLVMBuildRetVoid(cg->b);
  cu->kernels[cu->nkernels++] = (CuKernel){"rlx_err_take", NULL, 0, 0, 0};
}

/* nvvm.annotations entry (key, v) of kernel `name`: ptxas's
 * .maxntid (maxntidx), .minnctapersm (minctasm). */
static void annotate(Cg *cg, const char *name, const char *key, unsigned v) {
  LLVMMetadataRef md[3] = {
      LLVMValueAsMetadata(LLVMGetNamedFunction(cg->mod, name)),
      LLVMMDStringInContext2(cg->lc, key, strlen(key)),
      LLVMValueAsMetadata(cg_i32(cg, (int32_t)v))};
  LLVMAddNamedMetadataOperand(
      cg->mod, "nvvm.annotations",
      LLVMMetadataAsValue(cg->lc, LLVMMDNodeInContext2(cg->lc, md, 3)));
}

/* Every kernel is launched with `block` threads, so it declares them
 * (.maxntid): ptxas then knows its register budget. */
void cu_kernel_end(Cu *cu, unsigned grid, unsigned block) {
  Cg *cg = cu->dev;
  CgFn *f = &cu->fn;
  LLVMBuildBr(cg->b, cu->exit_bb);
  err_exit(cu);
  LLVMPositionBuilderAtEnd(cg->b, cu->exit_bb);
  LLVMBuildRetVoid(cg->b);
  LLVMPositionBuilderAtEnd(cg->b, f->alloca_bb);
  LLVMBuildBr(cg->b, LLVMGetNextBasicBlock(f->alloca_bb));
  LLVMMoveBasicBlockAfter(cu->exit_bb, LLVMGetLastBasicBlock(f->fn));
  cg->fn = NULL;
  kernel_wrap(cu, f->fn, &cu->kernels[cu->nkernels]);
  annotate(cg, cu->kernels[cu->nkernels].name, "maxntidx", block);
  cu_add_step(cu, (CuLaunch){.kernel = cu->nkernels++, .grid = grid ? grid : 1,
                             .block = block});
}

void cu_kernel_end_n(Cu *cu, int64_t n, unsigned per, unsigned mul,
                     unsigned block) {
  if (dim_is_static(n)) {
    cu_kernel_end(cu, (unsigned)((n + per - 1) / per * mul), block);
    return;
  }
  cu_kernel_end(cu, mul, block);
  cu->launch[cu->nlaunch - 1].gdim = n;
  cu->launch[cu->nlaunch - 1].gper = per;
  int64_t most = dim_bound(n); /* the grid at the bounds fits an i32 (no
                                   bound: entry.c checks it at run time) */
  if (dim_is_bounded(n) &&
      (most < 0 || (most + per - 1) / per > INT32_MAX / (mul ? mul : 1))) {
    cu->dev->failed = true;
    diag_error(cu->dev->ctx, (Loc){0, 0}, "codegen: --target=cuda: a "
               "kernel of %s would launch more than 2^31 - 1 blocks at "
               "the sizes' bounds", cu->kernels[cu->nkernels - 1].name);
  }
}

void cu_kernel_end_n2(Cu *cu, int64_t n, unsigned per, int64_t n2,
                      unsigned per2, unsigned mul, unsigned block) {
  RLX_ASSERT(!dim_is_bounded(n2));
  cu_kernel_end_n(cu, n, per, mul, block);
  CuLaunch *l = &cu->launch[cu->nlaunch - 1];
  if (!l->gdim) l->gdim = n, l->gper = per, l->grid = mul; /* n static */
  l->gdim2 = n2, l->gper2 = per2;
}

int64_t cu_numel(Cu *cu, const Type *t) {
  int64_t n = 1;
  for (int i = 0; i < t->rank; i++) {
    DimStatus st = dim_mul(cu->dev->ctx, n, t->dims[i], &n);
    RLX_ASSERT(st == DIM_OK); /* the shape rules made t's count */
  }
  return n;
}

void cu_add_step(Cu *cu, CuLaunch l) {
  if (cu->nlaunch == cu->cap) {
    cu->cap = cu->cap ? 2 * cu->cap : 64;
    CuLaunch *a = arena_alloc(cu->dev->ctx->arena,
                              sizeof *a * (size_t)cu->cap);
    if (cu->nlaunch) memcpy(a, cu->launch, sizeof *a * (size_t)cu->nlaunch);
    cu->launch = a;
  }
  cu->launch[cu->nlaunch++] = l;
}

void cu_guard(Cu *cu, LLVMValueRef cond) {
  Cg *cg = cu->dev;
  LLVMBasicBlockRef go = cg_block(cg, "go");
  LLVMBuildCondBr(cg->b, cond, go, cu->exit_bb);
  LLVMPositionBuilderAtEnd(cg->b, go);
}

int cu_block_for(int64_t n) {
  int b = 32;
  while (b < 256 && b < n) b *= 2;
  return b;
}

/* v from the lane lane ^ m of the warp (32 or 64 bits, c64's <2 x float>
 * too: i32 pieces). */
static LLVMValueRef shfl_xor(Cg *cg, LLVMValueRef v, int m) {
  LLVMTypeRef t = LLVMTypeOf(v);
  LLVMTypeKind k = LLVMGetTypeKind(t);
  unsigned bits = k == LLVMFloatTypeKind    ? 32
                  : k == LLVMDoubleTypeKind ? 64
                  : k == LLVMVectorTypeKind ? 64 /* c64: <2 x float> */
                                            : LLVMGetIntTypeWidth(t);
  LLVMValueRef x = v;
  if (bits <= 32) {
    LLVMTypeRef it = LLVMIntTypeInContext(cg->lc, bits);
    x = LLVMBuildZExt(cg->b, LLVMBuildBitCast(cg->b, v, it, ""), cg->t_i32,
                      "");
    LLVMValueRef a[4] = {cg_i32(cg, -1), x, cg_i32(cg, m), cg_i32(cg, 31)};
    x = cg_intrinsic_n(cg, "llvm.nvvm.shfl.sync.bfly.i32", NULL, 0, a, 4);
    return LLVMBuildBitCast(cg->b, LLVMBuildTrunc(cg->b, x, it, ""), t, "");
  }
  LLVMTypeRef vt = LLVMVectorType(cg->t_i32, 2);
  x = LLVMBuildBitCast(cg->b, v, vt, "");
  LLVMValueRef r = LLVMGetUndef(vt);
  for (int k = 0; k < 2; k++) {
    LLVMValueRef a[4] = {cg_i32(cg, -1),
                         LLVMBuildExtractElement(cg->b, x, cg_i32(cg, k), ""),
                         cg_i32(cg, m), cg_i32(cg, 31)};
    LLVMValueRef s =
        cg_intrinsic_n(cg, "llvm.nvvm.shfl.sync.bfly.i32", NULL, 0, a, 4);
    r = LLVMBuildInsertElement(cg->b, r, s, cg_i32(cg, k), "");
  }
  return LLVMBuildBitCast(cg->b, r, t, "");
}

LLVMValueRef cu_shared(Cg *cg, const char *name, LLVMTypeRef et, int64_t n,
                       unsigned align) {
  LLVMValueRef g = LLVMGetNamedGlobal(cg->mod, name);
  if (g) return g;
  LLVMTypeRef t = LLVMArrayType2(et, (uint64_t)n);
  g = LLVMAddGlobalInAddressSpace(cg->mod, t, name, 3);
  LLVMSetInitializer(g, LLVMGetUndef(t));
  LLVMSetLinkage(g, LLVMInternalLinkage);
  LLVMSetAlignment(g, align);
  return g;
}

LLVMValueRef cu_dyn_shared(Cg *cg) {
  const char *name = "rlx_dyn_smem";
  LLVMValueRef g = LLVMGetNamedGlobal(cg->mod, name);
  if (g) return g;
  g = LLVMAddGlobalInAddressSpace(cg->mod, LLVMArrayType2(cg->t_i8, 0), name,
                                  3);
  LLVMSetLinkage(g, LLVMExternalLinkage);
  LLVMSetAlignment(g, 128);
  return g;
}

void cu_kernel_dyn_shared(Cu *cu, unsigned bytes) {
  cu->kernels[cu->nkernels - 1].shmem = bytes;
}

void cu_kernel_min_blocks(Cu *cu, unsigned n) {
  if (n > 1)
    annotate(cu->dev, cu->kernels[cu->nkernels - 1].name, "minctasm", n);
}

LLVMValueRef cu_shared_at(Cg *cg, LLVMValueRef g, LLVMTypeRef et,
                          LLVMValueRef i) {
  LLVMValueRef p = LLVMBuildGEP2(cg->b, et, g, &i, 1, "");
  return LLVMBuildAddrSpaceCast(cg->b, p, cg->t_ptr, "");
}

/* The block's shared scratch: 32 slots of 8 bytes (and one more). */
static LLVMValueRef shared_at(Cg *cg, LLVMValueRef i) {
  return cu_shared_at(cg, cu_shared(cg, "rlx.red", cg->t_i64, 33, 8),
                      cg->t_i64, i);
}

static void barrier(Cg *cg) {
  cg_intrinsic_n(cg, "llvm.nvvm.barrier0", NULL, 0, NULL, 0);
}

LLVMValueRef cu_block_reduce(Cu *cu, DType dt, CgRed r, LLVMValueRef v,
                             int block) {
  Cg *cg = cu->dev;
  for (int m = 16; m >= 1; m /= 2)
    v = cg_ops_combine(cg, dt, r, v, shfl_xor(cg, v, m));
  if (block <= 32) return v;
  LLVMTypeRef t = LLVMTypeOf(v);
  LLVMValueRef tid = cu_tid(cu);
  LLVMValueRef lane = LLVMBuildAnd(cg->b, tid, cg_i64(cg, 31), "");
  LLVMValueRef warp = LLVMBuildLShr(cg->b, tid, cg_i64(cg, 5), "");
  LLVMBasicBlockRef wr = cg_block(cg, "red.write");
  LLVMBasicBlockRef join = cg_block(cg, "red.join");
  LLVMBuildCondBr(cg->b, LLVMBuildICmp(cg->b, LLVMIntEQ, lane,
                                       cg_i64(cg, 0), ""), wr, join);
  LLVMPositionBuilderAtEnd(cg->b, wr);
  LLVMBuildStore(cg->b, v, shared_at(cg, warp));
  LLVMBuildBr(cg->b, join);
  LLVMPositionBuilderAtEnd(cg->b, join);
  barrier(cg);
  LLVMValueRef acc = LLVMBuildLoad2(cg->b, t, shared_at(cg, cg_i64(cg, 0)), "");
  for (int w = 1; w < block / 32; w++)
    acc = cg_ops_combine(
        cg, dt, r, acc,
        LLVMBuildLoad2(cg->b, t, shared_at(cg, cg_i64(cg, w)), ""));
  barrier(cg); /* the slots are free again for the next reduction */
  return acc;
}

LLVMValueRef cu_exp_neg(Cu *cu, DType dt, LLVMValueRef x) {
  Cg *cg = cu->dev;
  if (dt == DT_F64) return cg_ops_exp(cg, x);
  x = LLVMBuildFMul(cg->b, x, LLVMConstReal(cg->t_f32, 1.4426950408889634),
                    "");
  return cg_intrinsic_n(cg, "llvm.nvvm.ex2.approx.ftz.f", NULL, 0, &x, 1);
}

/* ---- math through libclc ---- */

static const char *const llvm_math[] = {"exp", "exp2", "log", "log2",
                                        "log10", "sin", "cos", "pow", NULL};

/* The OpenCL C (libclc) name of a math declaration, or false. */
static bool clc_name(LLVMValueRef f, char *buf, size_t n) {
  const char *nm = LLVMGetValueName(f);
  char base[32];
  LLVMTypeRef ft = LLVMGlobalGetValueType(f);
  LLVMTypeRef rt = LLVMGetReturnType(ft);
  bool f32 = LLVMGetTypeKind(rt) == LLVMFloatTypeKind;
  if (!f32 && LLVMGetTypeKind(rt) != LLVMDoubleTypeKind) return false;
  if (!strncmp(nm, "llvm.", 5)) {
    const char *dot = strchr(nm + 5, '.');
    size_t len = dot ? (size_t)(dot - nm - 5) : 0;
    int k = 0;
    while (llvm_math[k] && (strlen(llvm_math[k]) != len ||
                            strncmp(llvm_math[k], nm + 5, len)))
      k++;
    if (!llvm_math[k]) return false;
    snprintf(base, sizeof base, "%s", llvm_math[k]);
  } else {
    size_t len = strlen(nm);
    if (len == 0 || len >= sizeof base || !strncmp(nm, "rlx", 3) ||
        !strncmp(nm, "_Z", 2))
      return false;
    int keep = (int)(len - (f32 && nm[len - 1] == 'f')); /* tanhf -> tanh */
    snprintf(base, sizeof base, "%.*s", keep, nm);
  }
  unsigned np = LLVMCountParamTypes(ft);
  int k = snprintf(buf, n, "_Z%zu%s", strlen(base), base);
  for (unsigned i = 0; i < np && (size_t)k + 2 < n; i++)
    buf[k++] = f32 ? 'f' : 'd', buf[k] = 0;
  return true;
}

/* Rename math calls; true when libclc is needed. */
static bool rename_math(Cg *cg) {
  bool any = false;
  LLVMValueRef f = LLVMGetFirstFunction(cg->mod), next;
  for (; f; f = next) {
    next = LLVMGetNextFunction(f);
    char nm[64];
    if (LLVMCountBasicBlocks(f) || !clc_name(f, nm, sizeof nm)) continue;
    LLVMValueRef g = LLVMGetNamedFunction(cg->mod, nm);
    if (!g) g = LLVMAddFunction(cg->mod, nm, LLVMGlobalGetValueType(f));
    LLVMReplaceAllUsesWith(f, g);
    LLVMDeleteFunction(f);
    any = true;
  }
  return any;
}

/* libclc's definitions as link-once, so that the linker takes only
 * those the module calls and, as it copies them, what they reference;
 * their bodies are read from the bitcode only then (the module is
 * loaded lazily). Parsing all 10,000 functions took ~1 s a compile. */
static void link_once(LLVMModuleRef m) {
  for (LLVMValueRef f = LLVMGetFirstFunction(m); f; f = LLVMGetNextFunction(f))
    if (!LLVMIsDeclaration(f) && LLVMGetLinkage(f) == LLVMExternalLinkage)
      LLVMSetLinkage(f, LLVMLinkOnceODRLinkage);
  for (LLVMValueRef g = LLVMGetFirstGlobal(m); g; g = LLVMGetNextGlobal(g))
    if (!LLVMIsDeclaration(g) && LLVMGetLinkage(g) == LLVMExternalLinkage)
      LLVMSetLinkage(g, LLVMLinkOnceODRLinkage);
}

static bool link_libclc(Cg *cg) {
  LLVMMemoryBufferRef mb;
  char *err = NULL;
  if (LLVMCreateMemoryBufferWithContentsOfFile(LIBCLC, &mb, &err)) {
    diag_error(cg->ctx, (Loc){0, 0}, "codegen: --target=cuda needs "
               "libclc's NVPTX math library %s (Debian package libclc-19): "
               "%s", LIBCLC, err ? err : "");
    LLVMDisposeMessage(err);
    return false;
  }
  LLVMModuleRef m;
  /* the lazy module owns mb from here on, even when this fails */
  if (LLVMGetBitcodeModuleInContext2(cg->lc, mb, &m))
    return diag_error(cg->ctx, (Loc){0, 0}, "codegen: cannot read %s",
                      LIBCLC);
  link_once(m);
  LLVMSetTarget(m, cg->triple);
  LLVMSetDataLayout(m, LLVMGetDataLayoutStr(cg->mod));
  if (LLVMLinkModules2(cg->mod, m))
    return diag_error(cg->ctx, (Loc){0, 0}, "codegen: cannot link %s",
                      LIBCLC);
  /* what libclc brought in is private to this module */
  for (LLVMValueRef f = LLVMGetFirstFunction(cg->mod); f;
       f = LLVMGetNextFunction(f))
    if (LLVMCountBasicBlocks(f) &&
        LLVMGetFunctionCallConv(f) != LLVMPTXKernelCallConv)
      LLVMSetLinkage(f, LLVMInternalLinkage);
  for (LLVMValueRef g = LLVMGetFirstGlobal(cg->mod); g;
       g = LLVMGetNextGlobal(g))
    if (LLVMGetLinkage(g) == LLVMLinkOnceODRLinkage)
      LLVMSetLinkage(g, LLVMInternalLinkage);
  return true;
}

/* Every llvm.nvvm.* callee must be an intrinsic LLVM knows. */
static bool known_intrinsics(Cg *cg) {
  for (LLVMValueRef f = LLVMGetFirstFunction(cg->mod); f;
       f = LLVMGetNextFunction(f)) {
    size_t len;
    const char *nm = LLVMGetValueName2(f, &len);
    if (!strncmp(nm, "llvm.nvvm.", 10) && !LLVMLookupIntrinsicID(nm, len))
      return diag_error(cg->ctx, (Loc){0, 0}, "codegen: internal error: "
                        "unknown NVPTX intrinsic %s", nm);
  }
  return true;
}

static bool optimize(Cg *cg) {
  char *msg = NULL;
  if (LLVMVerifyModule(cg->mod, LLVMReturnStatusAction, &msg)) {
    diag_error(cg->ctx, (Loc){0, 0},
               "codegen: internal error: invalid device module: %s", msg);
    LLVMDisposeMessage(msg);
    return false;
  }
  LLVMDisposeMessage(msg);
  char pipeline[32];
  snprintf(pipeline, sizeof pipeline, "default<O%d>", cg->opt_level);
  LLVMPassBuilderOptionsRef po = LLVMCreatePassBuilderOptions();
  LLVMErrorRef e = LLVMRunPasses(cg->mod, pipeline, cg->tm, po);
  LLVMDisposePassBuilderOptions(po);
  if (!e) return true;
  char *m = LLVMGetErrorMessage(e);
  diag_error(cg->ctx, (Loc){0, 0}, "codegen: optimization failed: %s", m);
  LLVMDisposeErrorMessage(m);
  return false;
}

/* PTX ISA 7.8 allows a kernel 4 KiB of parameters (8.1, which needs
 * drivers of CUDA 12.1, 32,764 bytes). A kernel takes the pointers it
 * loads (a fused group has at most 128 operands); only a byval array of
 * an entry of over 511 arguments or results could exceed that, and no
 * kernel passes its arrays on whole: a diagnostic, should one. */
static bool param_space(Cu *cu) {
  for (int i = 0; i < cu->nkernels; i++)
    if (cu->kernels[i].bytes > 4096)
      return diag_error(cu->dev->ctx, (Loc){0, 0}, "--target=cuda: kernel "
                        "%s takes %lld bytes of parameters, over the 4 KiB "
                        "of PTX ISA 7.8", cu->kernels[i].name,
                        (long long)cu->kernels[i].bytes);
  return true;
}

char *cu_finish_module(Cu *cu) {
  Cg *cg = cu->dev;
  if (!known_intrinsics(cg) || !param_space(cu)) return NULL;
  if (rename_math(cg) && !link_libclc(cg)) return NULL;
  if (!optimize(cg)) return NULL;
  LLVMMemoryBufferRef buf;
  char *err = NULL;
  if (LLVMTargetMachineEmitToMemoryBuffer(cg->tm, cg->mod, LLVMAssemblyFile,
                                          &err, &buf)) {
    diag_error(cg->ctx, (Loc){0, 0}, "codegen: PTX emission failed: %s",
               err ? err : "");
    LLVMDisposeMessage(err);
    return NULL;
  }
  size_t n = LLVMGetBufferSize(buf);
  char *ptx = malloc(n + 1);
  RLX_ASSERT(ptx);
  memcpy(ptx, LLVMGetBufferStart(buf), n);
  ptx[n] = 0;
  LLVMDisposeMemoryBuffer(buf);
  const char *x = strstr(ptx, ".extern .func");
  if (x) {
    const char *nm = x + 13;
    while (*nm == ' ') nm++;
    int len = 0;
    while (nm[len] && nm[len] != '\n' && len < 80) len++;
    diag_error(cg->ctx, (Loc){0, 0}, "codegen: --target=cuda: the PTX calls "
               "an undefined function (%.*s)", len, nm);
    free(ptx);
    return NULL;
  }
  return ptx;
}

/* ---- column reductions ---- */

/* cu_col_reduce (cuda.h): one block of CR_WARPS warps per (32 columns,
 * segment of rows): lane = column, warp w folds rows w, w + CR_WARPS,
 * ... of its segment in order (CR_UNROLL loads in flight), the warps
 * combine in order through shared memory. With S > 1 segments (of at
 * least 256 rows, about 512 blocks in all) each writes its partials
 * ([S, K], the partial dtype) to the node's scratch and a second kernel
 * combines them per column in segment order. Reads are coalesced and
 * the order fixed: the same bits every run. */
enum { CR_WARPS = 8, CR_UNROLL = 4 };

bool cu_col_plan(CuCol *c, int64_t len, int64_t K) {
  c->len = len, c->K = K;
  if (!dim_is_bounded(len)) return false; /* segments: for a bound */
  if (!dim_is_static(len)) len = dim_bound(len); /* planned for it */
  if (K < 32 || len < 2) return false;
  int64_t most = len / 256, ncg = (K + 31) / 32;
  c->S = 512 / ncg;
  if (c->S > most) c->S = most;
  if (c->S < 1) c->S = 1;
  c->seg = (len + c->S - 1) / c->S;
  c->S = (len + c->seg - 1) / c->seg;
  return true;
}

static DType col_part_dt(DType dt) {
  return dt == DT_F16 || dt == DT_BF16 ? DT_F32 : dt;
}

int64_t cu_col_scratch(const CuCol *c) {
  return c->S > 1 ? c->S * c->K * 8 : 0;
}

/* The partials' array in the node's scratch. */
static LLVMValueRef col_parts(Cu *cu, const CuCol *c) {
  Cg *cg = cu->dev;
  LLVMValueRef off = i64(cu, c->part_off);
  return LLVMBuildGEP2(cg->b, cg->t_i8, cg_scratch(cg, c->n), &off, 1, "");
}

void cu_col_reduce(Cu *cu, CgPlan *p, CuCol *c, const char *what) {
  Cg *cg = cu->dev;
  LLVMBuilderRef b = cg->b;
  DType dt = c->dt, pt = col_part_dt(dt);
  CgRed kind = c->kind;
  int64_t ncg = (c->K + 31) / 32;
  cu_kernel_begin(cu, p, what);
  if (c->bind) c->bind(cu, c);
  LLVMValueRef bid = cu_ctaid(cu), tid = cu_tid(cu);
  LLVMValueRef lane = urem(cu, tid, 32), w = udiv(cu, tid, 32);
  LLVMValueRef col = add(cu, mul(cu, urem(cu, bid, ncg), 32), lane);
  LLVMValueRef seg = udiv(cu, bid, ncg), cin = ult(cu, col, c->K);
  LLVMValueRef colc = LLVMBuildSelect(b, cin, col, i64(cu, 0), "");
  LLVMValueRef r0 = mul(cu, seg, c->seg);
  LLVMValueRef end = add(cu, r0, i64(cu, c->seg));
  end = LLVMBuildSelect(b, ult(cu, end, c->len), end, cu_size(cu, c->len),
                        "");
  LLVMValueRef acc = cg_ops_red_init(cg, dt, kind);
  int64_t step = CR_WARPS * CR_UNROLL;
  CgLoop l;
  LLVMValueRef it = cg_loop_begin(cg, &l, i64(cu, 0),
                                  i64(cu, (c->seg + step - 1) / step), &acc, 1);
  LLVMValueRef x[CR_UNROLL], in[CR_UNROLL];
  for (int u = 0; u < CR_UNROLL; u++) {
    LLVMValueRef r = add(cu, add(cu, r0, mul(cu, it, step)),
                         add(cu, w, i64(cu, u * CR_WARPS)));
    in[u] = LLVMBuildICmp(b, LLVMIntULT, r, end, "");
    r = LLVMBuildSelect(b, in[u], r, i64(cu, 0), "");
    x[u] = c->elem(cu, c, r, colc);
  }
  for (int u = 0; u < CR_UNROLL; u++)
    acc = LLVMBuildSelect(b, in[u], cg_ops_combine(cg, dt, kind, acc, x[u]),
                          acc, "");
  cg_loop_end(cg, &l, &acc);
  LLVMTypeRef ct = LLVMTypeOf(acc);
  LLVMValueRef sm = cu_shared(cg, "rlx.colred", cg->t_i8, CR_WARPS * 32 * 8,
                              16);
  LLVMBuildStore(b, acc, cu_shared_at(cg, sm, ct, tid));
  cg_intrinsic_n(cg, "llvm.nvvm.barrier0", NULL, 0, NULL, 0);
  cu_guard(cu, LLVMBuildAnd(b, cin, ult(cu, tid, 32), ""));
  LLVMValueRef v = LLVMBuildLoad2(b, ct, cu_shared_at(cg, sm, ct, lane), "");
  for (int q = 1; q < CR_WARPS; q++)
    v = cg_ops_combine(cg, dt, kind, v, LLVMBuildLoad2(
                           b, ct, cu_shared_at(cg, sm, ct,
                                               add(cu, lane, i64(cu, 32 * q))),
                           ""));
  if (c->S == 1)
    c->finish(cu, c, col, v);
  else
    cg_store(cg, pt, col_parts(cu, c), add(cu, mul(cu, seg, c->K), col), v);
  cu_kernel_end(cu, (unsigned)(ncg * c->S), CR_WARPS * 32);
  if (c->S == 1) return;
  cu_kernel_begin(cu, p, what);
  if (c->bind) c->bind(cu, c);
  col = cu_gid(cu);
  cu_guard(cu, ult(cu, col, c->K));
  LLVMValueRef part = col_parts(cu, c);
  v = cg_load(cg, pt, part, col);
  for (int64_t s = 1; s < c->S; s++)
    v = cg_ops_combine(cg, pt, kind, v, cg_load(cg, pt, part,
                                                add(cu, col, i64(cu, s * c->K))));
  c->finish(cu, c, col, v);
  cu_kernel_end(cu, cu_blocks_for(c->K, EW_BLOCK), EW_BLOCK);
}
