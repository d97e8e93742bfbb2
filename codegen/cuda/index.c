/* index.c: the GPU kernels of the order-dependent index ops (cuda.h):
 * cumsum and cumsum_backward, scatter_add and gather_backward, topk.
 * Each output element is computed by one thread, in the CPU path's
 * order, so the bits equal the CPU's and never depend on the launch.
 *
 * - cumsum / cumsum_backward: one thread per column of the [outer,
 *   len, inner] view, walking the column in order (reversed for the
 *   backward: a suffix sum), the running sum in the compute type as on
 *   the CPU (f16/bf16 carried in f32).
 * - scatter_add / gather_backward: one thread per output element
 *   (a, t, j) of the [A, T, B] view walks the whole index list in
 *   order and adds update row i where idx[i] == t, rounding to the
 *   dtype after each add as the CPU's read-add-store does. No atomics.
 *   O(T B NI) index reads: fine for the sizes of embedding gradients
 *   in tests, slow for huge index lists.
 * - topk: one thread per row element computes its rank (how many
 *   elements of the row rank before it: greater, NaN largest, ties to
 *   the smaller index, as runtime/linalg/topk.c) and, when the rank is
 *   below k, writes its index to out[row][rank]. O(len^2) per row.
 * Index operands are checked as on the CPU (cg_ops_index); a thread
 * that meets a bad index skips its element (docs/gpu.md).
 */
#include "codegen/cuda/cuda.h"

/* ---- cumsum, cumsum_backward ---- */

bool cu_cumsum(Cu *cu, CgPlan *p, Node *n) {
  Cg *cg = cu->dev;
  DType dt = n->type.dt;
  if (dt == DT_BOOL) return cu_bad_dtype(cu, n, dt);
  bool rev = n->op == OP_CUMSUM_BACKWARD;
  bool excl = ir_attr_bool(n, ATTR_EXCLUSIVE, false);
  int64_t outer, len, inner;
  cg_ops_split_axis(&n->type, ir_attr_int(n, ATTR_AXIS, -1), &outer, &len,
                    &inner);
  int64_t cols = outer * inner;
  if (type_numel(&n->type) == 0) return true;
  cu_kernel_begin(cu, p, op_name(n->op));
  LLVMValueRef c = cu_gid(cu);
  cu_guard(cu, ult(cu, c, cols));
  LLVMValueRef base = add(cu, mul(cu, udiv(cu, c, inner), len * inner),
                          urem(cu, c, inner));
  LLVMValueRef acc = cg_const(cg, dt, 0), src = cg_buf(cg, n->in[0]);
  LLVMValueRef dst = cg_buf(cg, n);
  CgLoop l;
  LLVMValueRef j = cg_loop_begin(cg, &l, i64(cu, 0), i64(cu, len), &acc, 1);
  if (rev) j = LLVMBuildSub(cg->b, i64(cu, len - 1), j, "");
  LLVMValueRef at = add(cu, base, mul(cu, j, inner));
  LLVMValueRef nxt = cg_ops_combine(cg, dt, CG_RED_SUM, acc,
                                    cg_load(cg, dt, src, at));
  cg_store(cg, dt, dst, at, excl ? acc : nxt);
  acc = nxt;
  cg_loop_end(cg, &l, &acc);
  cu_kernel_end(cu, cu_blocks_for(cols, EW_BLOCK), EW_BLOCK);
  return true;
}

/* ---- scatter_add, gather_backward ---- */

/* out [A, T, B] = zeros; out[a, idx[i], :] += upd[a, i, :], i in order. */
bool cu_scatter(Cu *cu, CgPlan *p, Node *n) {
  Cg *cg = cu->dev;
  DType dt = n->type.dt, idt = n->in[1]->type.dt;
  const Type *t = &n->type;
  if (dt == DT_BOOL) return cu_bad_dtype(cu, n, dt);
  if (!cg_ops_index_dtype_ok(idt))
    return cu_unsupported(cu, n, "indices must be i32, i64 or f32");
  if (t->rank < 1) return cu_unsupported(cu, n, "rank-0 result");
  int64_t a, tt, b, ni = type_numel(&n->in[1]->type);
  int axis = n->op == OP_GATHER_BACKWARD ? (int)ir_attr_int(n, ATTR_AXIS, 0)
                                         : 0;
  cg_ops_split_axis(t, axis, &a, &tt, &b);
  if (type_numel(&n->in[0]->type) != a * ni * b)
    return cu_unsupported(cu, n, "updates do not match the indices");
  int64_t N = type_numel(t);
  if (N == 0) return true;
  cu_kernel_begin(cu, p, op_name(n->op));
  LLVMValueRef o = cu_gid(cu);
  cu_guard(cu, ult(cu, o, N));
  LLVMValueRef j = urem(cu, o, b), u = udiv(cu, o, b);
  LLVMValueRef ti = urem(cu, u, tt), ai = udiv(cu, u, tt);
  LLVMValueRef ubase = add(cu, mul(cu, ai, ni * b), j);
  LLVMValueRef acc = cg_const(cg, dt, 0);
  LLVMValueRef idx = cg_buf(cg, n->in[1]), upd = cg_buf(cg, n->in[0]);
  CgLoop l;
  LLVMValueRef i = cg_loop_begin(cg, &l, i64(cu, 0), i64(cu, ni), &acc, 1);
  LLVMValueRef k = cg_ops_index(cg, idt, idx, i, tt);
  LLVMValueRef v = cg_load(cg, dt, upd, add(cu, ubase, mul(cu, i, b)));
  LLVMValueRef sum = cg_round_dt(cg, dt, cg_ops_combine(cg, dt, CG_RED_SUM,
                                                        acc, v));
  acc = LLVMBuildSelect(cg->b, LLVMBuildICmp(cg->b, LLVMIntEQ, k, ti, ""),
                        sum, acc, "");
  cg_loop_end(cg, &l, &acc);
  cg_store(cg, dt, cg_buf(cg, n), o, acc);
  cu_kernel_end(cu, cu_blocks_for(N, EW_BLOCK), EW_BLOCK);
  return true;
}

/* ---- topk ---- */

LLVMValueRef cu_ranks_before(Cu *cu, DType dt, LLVMValueRef xj, LLVMValueRef j,
                             LLVMValueRef xi, LLVMValueRef i) {
  LLVMBuilderRef b = cu->dev->b;
  LLVMValueRef jlt = LLVMBuildICmp(b, LLVMIntULT, j, i, "");
  if (!dt_is_float(dt)) {
    LLVMIntPredicate gtp = dt == DT_U8 ? LLVMIntUGT : LLVMIntSGT;
    LLVMValueRef gt = LLVMBuildICmp(b, gtp, xj, xi, "");
    LLVMValueRef eq = LLVMBuildICmp(b, LLVMIntEQ, xj, xi, "");
    return LLVMBuildOr(b, gt, LLVMBuildAnd(b, eq, jlt, ""), "");
  }
  LLVMValueRef nj = LLVMBuildFCmp(b, LLVMRealUNO, xj, xj, "");
  LLVMValueRef ni = LLVMBuildFCmp(b, LLVMRealUNO, xi, xi, "");
  LLVMValueRef gt = LLVMBuildFCmp(b, LLVMRealOGT, xj, xi, "");
  LLVMValueRef eq = LLVMBuildFCmp(b, LLVMRealOEQ, xj, xi, "");
  LLVMValueRef num = LLVMBuildOr(b, gt, LLVMBuildAnd(b, eq, jlt, ""), "");
  LLVMValueRef t = LLVMConstInt(LLVMInt1TypeInContext(cu->dev->lc), 1, 0);
  LLVMValueRef f = LLVMConstNull(LLVMTypeOf(t));
  return LLVMBuildSelect(b, nj, LLVMBuildSelect(b, ni, jlt, t, ""),
                         LLVMBuildSelect(b, ni, f, num, ""), "");
}

bool cu_topk(Cu *cu, CgPlan *p, Node *n) {
  Cg *cg = cu->dev;
  const Type *t = &n->in[0]->type;
  DType dt = t->dt;
  if (dt == DT_BOOL || dt == DT_C64) return cu_bad_dtype(cu, n, dt);
  if (t->rank < 1) return cu_unsupported(cu, n, "rank-0 operand");
  int64_t len = t->dims[t->rank - 1], N = type_numel(t);
  int64_t k = n->type.dims[n->type.rank - 1];
  if (type_numel(&n->type) == 0) return true;
  cu_kernel_begin(cu, p, "topk");
  LLVMValueRef e = cu_gid(cu);
  cu_guard(cu, ult(cu, e, N));
  LLVMValueRef i = urem(cu, e, len), row = udiv(cu, e, len);
  LLVMValueRef src = cg_buf(cg, n->in[0]), base = mul(cu, row, len);
  LLVMValueRef xi = cg_load(cg, dt, src, e);
  LLVMValueRef rank = i64(cu, 0);
  CgLoop l;
  LLVMValueRef j = cg_loop_begin(cg, &l, i64(cu, 0), i64(cu, len), &rank, 1);
  LLVMValueRef xj = cg_load(cg, dt, src, add(cu, base, j));
  rank = add(cu, rank, LLVMBuildZExt(cg->b, cu_ranks_before(cu, dt, xj, j, xi, i),
                                     cg->t_i64, ""));
  cg_loop_end(cg, &l, &rank);
  cu_guard(cu, ult(cu, rank, k));
  cg_store(cg, n->type.dt, cg_buf(cg, n), add(cu, mul(cu, row, k), rank), i);
  cu_kernel_end(cu, cu_blocks_for(N, EW_BLOCK), EW_BLOCK);
  return true;
}
