/* matmul.c: matmul through the runtime GEMM (rlx_gemm_f32/f64/c64).
 *
 * a [..., M, K] x b [..., K, N] -> [..., M, N] with NumPy-broadcast
 * batch dims. A FOLDED operand (a transpose of the last two dims, see
 * fuse.c) is read from the transpose's input with swapped row/column
 * strides, so it is never materialized. Batch dims are coalesced where
 * every operand is contiguous (or broadcast) across them; the innermost
 * remaining batch dim is the GEMM's batch (stride 0 broadcasts) and any
 * outer ones become a loop of GEMM calls. The GEMM is deterministic for
 * any thread count (runtime/rlxrt.h). f16/bf16 operands are widened to
 * f32 in the node's scratch area, multiplied in f32 and rounded once to
 * the dtype (nearest even). Other dtypes are diagnosed.
 *
 * dense_solve / batched_dense_solve (f32, f64) call rlx_dense_solve_*
 * with scratch n*n + n elements; a singular matrix returns
 * RLX_ERR_SINGULAR from the entry point.
 */
#include "codegen/emit/emit.h"

typedef struct {
  Node *store;          /* node whose buffer holds the operand */
  int64_t rs, cs;       /* element strides of rows / columns */
  int64_t bs[RLX_MAX_RANK]; /* per output batch dim */
} Operand;

static void operand(Cg *cg, Node *x, const Type *out, Operand *o) {
  int r = x->type.rank;
  int64_t R = x->type.dims[r - 2], C = x->type.dims[r - 1];
  if (cg_slot(cg, x)->kind == CG_SLOT_FOLDED) {
    o->store = x->in[0];
    o->rs = 1;
    o->cs = R;
  } else {
    o->store = x;
    o->rs = C;
    o->cs = 1;
  }
  int ob = out->rank - 2, xb = r - 2;
  int64_t s = R * C;
  for (int d = ob - 1; d >= 0; d--) {
    int j = d - (ob - xb);
    bool have = j >= 0 && x->type.dims[j] != 1;
    o->bs[d] = have ? s : 0;
    if (j >= 0) s *= x->type.dims[j];
  }
}

/* Merge batch dims contiguous for a, b and c; returns the count. */
static int coalesce(const Type *out, Operand *a, Operand *b, int64_t *cbs,
                    int64_t *bd) {
  int ob = out->rank - 2, k = 0;
  int64_t mn = out->dims[ob] * out->dims[ob + 1], s = mn;
  int64_t cst[RLX_MAX_RANK];
  for (int d = ob - 1; d >= 0; d--) {
    cst[d] = s;
    s *= out->dims[d];
  }
  for (int d = 0; d < ob; d++) {
    if (out->dims[d] == 1) continue;
    if (k > 0 && cbs[k - 1] == cst[d] * out->dims[d] &&
        a->bs[k - 1] == a->bs[d] * out->dims[d] &&
        b->bs[k - 1] == b->bs[d] * out->dims[d]) {
      bd[k - 1] *= out->dims[d];
      cbs[k - 1] = cst[d];
      a->bs[k - 1] = a->bs[d];
      b->bs[k - 1] = b->bs[d];
      continue;
    }
    bd[k] = out->dims[d];
    cbs[k] = cst[d];
    a->bs[k] = a->bs[d];
    b->bs[k] = b->bs[d];
    k++;
  }
  return k;
}

static const char *gemm_name(DType dt) {
  switch (dt) {
  case DT_F32: return "rlx_gemm_f32";
  case DT_F64: return "rlx_gemm_f64";
  case DT_C64: return "rlx_gemm_c64";
  default: return NULL;
  }
}

static LLVMValueRef at(Cg *cg, LLVMValueRef p, LLVMValueRef elems, int es) {
  return cg_gep(cg, p, LLVMBuildNSWMul(cg->b, elems, cg_i64(cg, es), ""));
}

static bool half(DType dt) { return dt == DT_F16 || dt == DT_BF16; }

static int64_t cg_scratch_matmul(Cg *cg, Node *n) {
  (void)cg;
  if (!half(n->type.dt)) return 0;
  return cg_align(type_numel(&n->in[0]->type) * 4) +
         cg_align(type_numel(&n->in[1]->type) * 4) +
         cg_align(type_numel(&n->type) * 4);
}

static void gemm(Cg *cg, Node *n, const char *fn, LLVMValueRef pa,
                 LLVMValueRef pb, LLVMValueRef pc, int es);

static bool cg_emit_matmul(Cg *cg, Node *n) {
  DType dt = n->type.dt;
  const char *fn = gemm_name(half(dt) ? DT_F32 : dt);
  if (!fn) {
    char why[64];
    snprintf(why, sizeof why, "dtype %s", dt_name(dt));
    return cg_unsupported(cg, n, why);
  }
  if (type_is_static(&n->type) && type_numel(&n->type) == 0) return true;
  Node *sa = cg_slot(cg, n->in[0])->kind == CG_SLOT_FOLDED ? n->in[0]->in[0]
                                                          : n->in[0];
  Node *sb = cg_slot(cg, n->in[1])->kind == CG_SLOT_FOLDED ? n->in[1]->in[0]
                                                          : n->in[1];
  if (!half(dt)) {
    gemm(cg, n, fn, cg_buf(cg, sa), cg_buf(cg, sb), cg_buf(cg, n),
         dt_size(dt));
    return true;
  }
  int64_t na = type_numel(&sa->type), nb = type_numel(&sb->type);
  LLVMValueRef s = cg_scratch(cg, n);
  LLVMValueRef fa = s, fb = cg_gep(cg, s, cg_i64(cg, cg_align(na * 4)));
  LLVMValueRef fc = cg_gep(cg, s, cg_i64(cg, cg_align(na * 4) +
                                             cg_align(nb * 4)));
  cg_convert_loop(cg, fa, DT_F32, cg_buf(cg, sa), dt, na);
  cg_convert_loop(cg, fb, DT_F32, cg_buf(cg, sb), dt, nb);
  gemm(cg, n, fn, fa, fb, fc, 4);
  cg_convert_loop(cg, cg_buf(cg, n), dt, fc, DT_F32, type_numel(&n->type));
  return true;
}

/* Row and column strides of operand x (rank 2, or a [..., R, C] read
 * as [prod(...) * R, C] rows), from its storage. */
static void dyn_strides(Cg *cg, Node *x, LLVMValueRef *rs, LLVMValueRef *cs) {
  int r = x->type.rank;
  LLVMValueRef R = cg_dim(cg, x->type.dims[r - 2]);
  LLVMValueRef C = cg_dim(cg, x->type.dims[r - 1]);
  bool folded = cg_slot(cg, x)->kind == CG_SLOT_FOLDED;
  *rs = folded ? cg_i64(cg, 1) : C;
  *cs = folded ? R : cg_i64(cg, 1);
}

/* With dynamic sizes (mm_dyn): one GEMM of M = the product of a's
 * leading dims (a [..., M, K] contiguous, b [K, N]) or of two matrices,
 * or one strided batch over the leading dims that a and b share (each
 * matrix dense, or a folded transpose of one), sizes read at run time. */
static void gemm_dyn(Cg *cg, Node *n, const char *fn, LLVMValueRef pa,
                     LLVMValueRef pb, LLVMValueRef pc) {
  const Type *t = &n->type, *ta = &n->in[0]->type;
  int nbatch = n->in[1]->type.rank > 2 ? ta->rank - 2 : 0;
  LLVMValueRef B = cg_i64(cg, 1), M = cg_i64(cg, 1);
  for (int d = 0; d + 1 < ta->rank; d++) {
    LLVMValueRef *p = d < nbatch ? &B : &M;
    *p = LLVMBuildNSWMul(cg->b, *p, cg_dim(cg, ta->dims[d]), "");
  }
  LLVMValueRef N = cg_dim(cg, t->dims[t->rank - 1]);
  LLVMValueRef K = cg_dim(cg, ta->dims[ta->rank - 1]);
  LLVMValueRef ars, acs, brs, bcs, z = cg_i64(cg, 0);
  dyn_strides(cg, n->in[0], &ars, &acs);
  dyn_strides(cg, n->in[1], &brs, &bcs);
  LLVMValueRef abs = z, bbs = z, cbs = z;
  if (nbatch) { /* each operand's matrices are dense */
    abs = LLVMBuildNSWMul(cg->b, M, K, "");
    bbs = LLVMBuildNSWMul(cg->b, K, N, "");
    cbs = LLVMBuildNSWMul(cg->b, M, N, "");
  }
  LLVMValueRef args[16] = {B, M, N, K, pa, abs, ars, acs,
                           pb, bbs, brs, bcs, pc, cbs, N, cg_i32(cg, 0)};
  cg_call(cg, fn, cg->t_void, args, 16);
}

static const char *mm_dyn(const Node *n) {
  const Type *a = &n->in[0]->type, *b = &n->in[1]->type;
  if (half(n->type.dt)) return "f16/bf16 operands";
  if (b->rank > 2) { /* one strided batch (gemm_dyn) */
    if (a->rank != b->rank) return "a batched right operand of another rank";
    for (int d = 0; d + 2 < a->rank; d++)
      if (a->dims[d] != b->dims[d]) return "batch axes that broadcast";
    return NULL;
  }
  if (a->rank > 2 && (n->in[0]->op == OP_TRANSPOSE || !type_is_static(b)))
    return "a batched left operand that is not a contiguous [..., K] with "
           "a static right operand";
  return NULL;
}

/* The GEMM call(s) for n with operand storage pa, pb (elements of es
 * bytes, laid out as n's operands' storage nodes) into pc. */
static void gemm(Cg *cg, Node *n, const char *fn, LLVMValueRef pa,
                 LLVMValueRef pb, LLVMValueRef pc, int es) {
  const Type *t = &n->type;
  if (!type_is_static(t) || !type_is_static(&n->in[0]->type) ||
      !type_is_static(&n->in[1]->type)) {
    gemm_dyn(cg, n, fn, pa, pb, pc);
    return;
  }
  Operand a, b;
  operand(cg, n->in[0], t, &a);
  operand(cg, n->in[1], t, &b);
  int64_t cbs[RLX_MAX_RANK], bd[RLX_MAX_RANK];
  int nb = coalesce(t, &a, &b, cbs, bd);
  int64_t M = t->dims[t->rank - 2], N = t->dims[t->rank - 1];
  int64_t K = n->in[0]->type.dims[n->in[0]->type.rank - 1];
  CgLoop loops[RLX_MAX_RANK];
  LLVMValueRef oa = cg_i64(cg, 0), obb = cg_i64(cg, 0), oc = cg_i64(cg, 0);
  for (int d = 0; d + 1 < nb; d++) {
    LLVMValueRef i = cg_loop_begin(cg, &loops[d], cg_i64(cg, 0),
                                   cg_i64(cg, bd[d]), NULL, 0);
    oa = LLVMBuildNSWAdd(
        cg->b, oa, LLVMBuildNSWMul(cg->b, i, cg_i64(cg, a.bs[d]), ""), "");
    obb = LLVMBuildNSWAdd(
        cg->b, obb, LLVMBuildNSWMul(cg->b, i, cg_i64(cg, b.bs[d]), ""), "");
    oc = LLVMBuildNSWAdd(cg->b, oc,
                         LLVMBuildNSWMul(cg->b, i, cg_i64(cg, cbs[d]), ""), "");
  }
  int last = nb - 1;
  LLVMValueRef args[16] = {
      cg_i64(cg, nb ? bd[last] : 1), cg_i64(cg, M), cg_i64(cg, N),
      cg_i64(cg, K), at(cg, pa, oa, es), cg_i64(cg, nb ? a.bs[last] : 0),
      cg_i64(cg, a.rs), cg_i64(cg, a.cs), at(cg, pb, obb, es),
      cg_i64(cg, nb ? b.bs[last] : 0), cg_i64(cg, b.rs), cg_i64(cg, b.cs),
      at(cg, pc, oc, es), cg_i64(cg, nb ? cbs[last] : 0), cg_i64(cg, N),
      cg_i32(cg, 0)};
  cg_call(cg, fn, cg->t_void, args, 16);
  for (int d = nb - 2; d >= 0; d--) cg_loop_end(cg, &loops[d], NULL);
}

static const char *solve_name(DType dt) {
  return dt == DT_F32 ? "rlx_dense_solve_f32"
         : dt == DT_F64 ? "rlx_dense_solve_f64" : NULL;
}

static int64_t cg_scratch_solve(Cg *cg, Node *n) {
  (void)cg;
  const Type *a = &n->in[0]->type;
  int64_t N = a->dims[a->rank - 1];
  return (N * N + N) * dt_size(n->type.dt);
}

static bool cg_emit_solve(Cg *cg, Node *n) {
  const char *fn = solve_name(n->type.dt);
  RLX_ASSERT(fn != NULL); /* OPF_F32_F64: checked by cg_emit_node */
  const Type *a = &n->in[0]->type, *b = &n->in[1]->type;
  int batched = n->op == OP_BATCHED_DENSE_SOLVE;
  int64_t B = batched ? a->dims[0] : 1, N = a->dims[a->rank - 1];
  int64_t K = b->rank == 2 + batched ? b->dims[b->rank - 1] : 1;
  if (dim_bound(B) * N * dim_bound(K) == 0) return true;
  LLVMBasicBlockRef ok = cg_block(cg, "solve.ok");
  LLVMValueRef vb = cg_dim(cg, B), vk = cg_dim(cg, K);
  if (!dim_is_static(B) || !dim_is_static(K)) {
    /* no systems or no right-hand sides: no work (as for static sizes,
     * a singular a is then no error) */
    LLVMBasicBlockRef call = cg_block(cg, "solve.call");
    LLVMValueRef none = LLVMBuildICmp(
        cg->b, LLVMIntEQ, LLVMBuildMul(cg->b, vb, vk, ""), cg_i64(cg, 0), "");
    LLVMBuildCondBr(cg->b, none, ok, call);
    LLVMPositionBuilderAtEnd(cg->b, call);
  }
  LLVMValueRef args[7] = {vb, cg_i64(cg, N), vk,
                          cg_buf(cg, n->in[0]), cg_buf(cg, n->in[1]),
                          cg_buf(cg, n), cg_scratch(cg, n)};
  LLVMValueRef r = cg_call(cg, fn, cg->t_i32, args, 7);
  LLVMValueRef bad = LLVMBuildICmp(cg->b, LLVMIntNE, r, cg_i32(cg, 0), "");
  LLVMBasicBlockRef fail = cg_block(cg, "solve.fail");
  LLVMBuildCondBr(cg->b, bad, fail, ok);
  LLVMPositionBuilderAtEnd(cg->b, fail);
  LLVMBuildStore(cg->b, r, cg->fn->status);
  LLVMBuildBr(cg->b, cg->fn->err_bb);
  LLVMPositionBuilderAtEnd(cg->b, ok);
  return true;
}

/* Dynamic sizes: the batch B and the right-hand sides K (read at run
 * time; none: no work); N static (the shape rule). */
static const char *solve_dyn(const Node *n) {
  const Type *a = &n->in[0]->type;
  return dim_is_static(a->dims[a->rank - 1]) ? NULL
                                               : "a dynamic system size N";
}

const CgEmitter cg_emitter_matmul = {cg_emit_matmul, cg_scratch_matmul,
                                     mm_dyn};
const CgEmitter cg_emitter_solve = {cg_emit_solve, cg_scratch_solve,
                                    solve_dyn};
