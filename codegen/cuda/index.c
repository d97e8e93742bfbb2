/* index.c: the GPU kernels of the order-dependent index ops (cuda.h):
 * cumsum and cumsum_backward, scatter_add and gather_backward, topk.
 * Each output element is computed by one thread, in the CPU path's
 * order, so the bits equal the CPU's and never depend on the launch.
 *
 * - cumsum / cumsum_backward: one thread per column of the [outer,
 *   len, inner] view, walking the column in order (reversed for the
 *   backward: a suffix sum), the running sum in the compute type as on
 *   the CPU (f16/bf16 carried in f32).
 * - scatter_add / gather_backward: a block per tile of rows of the
 *   [A, T, B] view and 128 columns; its warps walk the index list in
 *   order, 32 indices a step (a ballot finds those in the tile), and
 *   add the matching update rows, rounding to the dtype after each add
 *   as the CPU's read-add-store does. No atomics (cu_scatter).
 * - topk: one thread per row element computes its rank (how many
 *   elements of the row rank before it: greater, NaN largest, ties to
 *   the smaller index, as runtime/linalg/topk.c) and, when the rank is
 *   below k, writes its index to out[row][rank]. O(len^2) per row.
 * Index operands are checked as on the CPU (cg_ops_index); a thread
 * that meets a bad index skips its element and records RLX_ERR_INDEX
 * (docs/gpu.md, errors found by kernels).
 */
#include "codegen/cuda/cuda.h"

/* ---- cumsum, cumsum_backward ---- */

bool cu_cumsum(Cu *cu, CgPlan *p, Node *n) {
  Cg *cg = cu->dev;
  DType dt = n->type.dt;
  if (dt == DT_BOOL) return cu_bad_dtype(cu, n, dt);
  bool rev = n->op == OP_CUMSUM_BACKWARD;
  bool excl = ir_attr_bool(n, ATTR_EXCLUSIVE, false);
  int64_t outer, len, inner, cols; /* sizes: outer or len may be dynamic */
  cg_split_axis_dim(cg, &n->type, ir_attr_int(n, ATTR_AXIS, -1), &outer, &len,
                    &inner);
  dim_mul(cg->ctx, outer, inner, &cols);
  if (cols == 0 || len == 0) return true;
  cu_kernel_begin(cu, p, op_name(n->op));
  LLVMValueRef c = cu_gid(cu);
  cu_guard(cu, ult(cu, c, cols));
  LLVMValueRef base = add(cu, mul(cu, mul(cu, udiv(cu, c, inner), len),
                                  inner),
                          urem(cu, c, inner));
  LLVMValueRef acc = cg_const(cg, dt, 0), src = cg_buf(cg, n->in[0]);
  LLVMValueRef dst = cg_buf(cg, n);
  CgLoop l;
  LLVMValueRef j = cg_loop_begin(cg, &l, i64(cu, 0), cu_size(cu, len), &acc,
                                 1);
  if (rev)
    j = LLVMBuildSub(cg->b, LLVMBuildSub(cg->b, cu_size(cu, len), j, ""),
                     i64(cu, 1), "");
  LLVMValueRef at = add(cu, base, mul(cu, j, inner));
  LLVMValueRef nxt = cg_ops_combine(cg, dt, CG_RED_SUM, acc,
                                    cg_load(cg, dt, src, at));
  cg_store(cg, dt, dst, at, excl ? acc : nxt);
  acc = nxt;
  cg_loop_end(cg, &l, &acc);
  cu_kernel_end_n(cu, cols, EW_BLOCK, 1, EW_BLOCK);
  return true;
}

/* ---- scatter_add, gather_backward ---- */

enum { SC_THREADS = 128, SC_SMEM = 32768, SC_ROWS = 64 };

/* Index i of idx as i64 and whether it is in [0, bound) (a size;
 * floats: also integral), as cg_ops_index checks it, without leaving
 * the warp. */
static LLVMValueRef index_at(Cu *cu, DType dt, LLVMValueRef idx,
                             LLVMValueRef i, int64_t bound, LLVMValueRef *ok) {
  Cg *cg = cu->dev;
  LLVMBuilderRef b = cg->b;
  LLVMValueRef v = cg_load(cg, dt, idx, i);
  if (!dt_is_float(dt)) {
    v = dt == DT_U8 ? LLVMBuildZExt(b, v, cg->t_i64, "")
                    : cg_convert(cg, v, dt, DT_I64);
    *ok = ult(cu, v, bound); /* unsigned: negative indices too */
    return v;
  }
  LLVMTypeRef ft = LLVMTypeOf(v);
  LLVMValueRef k = LLVMBuildFPToSI(b, v, cg->t_i64, "");
  *ok = LLVMBuildAnd(
      b, LLVMBuildAnd(b, LLVMBuildFCmp(b, LLVMRealOGE, v,
                                       LLVMConstReal(ft, 0), ""),
                      LLVMBuildFCmp(b, LLVMRealOLT, v,
                                    LLVMBuildSIToFP(b, cu_size(cu, bound), ft,
                                                    ""), ""), ""),
      LLVMBuildFCmp(b, LLVMRealOEQ, LLVMBuildSIToFP(b, k, ft, ""), v, ""), "");
  return k;
}

static LLVMValueRef warp_op(Cu *cu, const char *nm, LLVMValueRef a,
                            LLVMValueRef c) {
  LLVMValueRef args[4] = {cg_i32(cu->dev, -1), a, c, cg_i32(cu->dev, 31)};
  return cg_intrinsic_n(cu->dev, nm, NULL, 0, args, c ? 4 : 2);
}

/* out [A, T, B] = zeros; out[a, idx[i], :] += upd[a, i, :], i in order
 * (each add rounded to the dtype, as the CPU's read-add-store). One
 * block per (a, tile of `rows` rows of T, SC_THREADS columns of B):
 * thread = column, its sums of the tile's rows in shared memory. Each
 * warp walks the index list 32 at a time: lane l checks idx[i0 + l],
 * a ballot marks the lanes whose row is in the tile, and the warp adds
 * those updates in lane order. Every output sums its updates in index
 * order: the CPU's bits, no atomics. Work: O(NI T / rows) index checks
 * (32 a step) and O(NI B) adds. A bad index anywhere makes every warp
 * stop, the block skip its outputs and record RLX_ERR_INDEX. */
bool cu_scatter(Cu *cu, CgPlan *p, Node *n) {
  Cg *cg = cu->dev;
  LLVMBuilderRef b = cg->b;
  DType dt = n->type.dt, idt = n->in[1]->type.dt;
  const Type *t = &n->type;
  if (dt == DT_BOOL) return cu_bad_dtype(cu, n, dt);
  if (!cg_ops_index_dtype_ok(idt))
    return cu_unsupported(cu, n, "indices must be i32, i64 or f32");
  if (t->rank < 1) return cu_unsupported(cu, n, "rank-0 result");
  /* ni: a size (dynamic indices and updates into a static result) */
  int64_t a, tt, bc, ni = cu_numel(cu, &n->in[1]->type);
  int axis = n->op == OP_GATHER_BACKWARD ? (int)ir_attr_int(n, ATTR_AXIS, 0)
                                         : 0;
  cg_split_axis_dim(cg, t, axis, &a, &tt, &bc); /* a or tt may be dynamic */
  if (type_is_static(&n->in[0]->type) && type_is_static(t) &&
      type_numel(&n->in[0]->type) != a * ni * bc)
    return cu_unsupported(cu, n, "updates do not match the indices");
  if (cu_numel(cu, t) == 0) return true;
  LLVMValueRef zero = cg_const(cg, dt, 0);
  LLVMTypeRef ct = LLVMTypeOf(zero);
  int64_t es = (int64_t)LLVMABISizeOfType(LLVMGetModuleDataLayout(cg->mod),
                                          ct);
  int64_t rows = SC_SMEM / (SC_THREADS * es);
  rows = rows > SC_ROWS ? SC_ROWS : rows;
  int64_t nt = (dim_bound(tt) + rows - 1) / rows;
  int64_t nc = (bc + SC_THREADS - 1) / SC_THREADS;
  cu_kernel_begin(cu, p, op_name(n->op));
  LLVMValueRef sm = cu_shared(cg, "rlx.scatter", cg->t_i8, SC_SMEM, 16);
  LLVMValueRef bid = cu_ctaid(cu), tid = cu_tid(cu);
  LLVMValueRef j = add(cu, mul(cu, urem(cu, bid, nc), SC_THREADS), tid);
  LLVMValueRef ntv = cu_ceil_div(cu, tt, rows); /* tiles of T at run time */
  LLVMValueRef rest = udiv(cu, bid, nc);
  LLVMValueRef t0 = mul(cu, LLVMBuildURem(b, rest, ntv, ""), rows);
  LLVMValueRef ai = LLVMBuildUDiv(b, rest, ntv, "");
  LLVMValueRef jin = ult(cu, j, bc);
  LLVMValueRef ubase = add(cu, mul(cu, mul(cu, ai, ni), bc),
                           LLVMBuildSelect(b, jin, j, i64(cu, 0), ""));
  for (int64_t r = 0; r < rows; r++)
    LLVMBuildStore(b, zero, cu_shared_at(cg, sm, ct,
                                         add(cu, tid, i64(cu, r * SC_THREADS))));
  LLVMValueRef lane = LLVMBuildTrunc(b, urem(cu, tid, 32), cg->t_i32, "");
  LLVMValueRef idx = cg_buf(cg, n->in[1]), upd = cg_buf(cg, n->in[0]);
  CgLoop l, m;
  LLVMValueRef i0 = mul(cu, cg_loop_begin(cg, &l, i64(cu, 0),
                                          cu_ceil_div(cu, ni, 32), NULL, 0),
                        32);
  LLVMValueRef i = add(cu, i0, LLVMBuildZExt(b, lane, cg->t_i64, ""));
  LLVMValueRef iin = ult(cu, i, ni), ok;
  LLVMValueRef k = index_at(cu, idt, idx, LLVMBuildSelect(b, iin, i, i64(cu, 0),
                                                         ""), tt, &ok);
  LLVMValueRef bad = warp_op(cu, "llvm.nvvm.vote.ballot.sync",
                             LLVMBuildAnd(b, iin, LLVMBuildNot(b, ok, ""), ""),
                             NULL);
  cg_fail_if(cg, LLVMBuildICmp(b, LLVMIntNE, bad, cg_i32(cg, 0), ""),
             RLX_ERR_INDEX);
  LLVMValueRef r = LLVMBuildSub(b, k, t0, "");
  LLVMValueRef hit = LLVMBuildAnd(b, iin, ult(cu, r, rows), "");
  LLVMValueRef mask = warp_op(cu, "llvm.nvvm.vote.ballot.sync", hit, NULL);
  LLVMValueRef r32 = LLVMBuildTrunc(b, r, cg->t_i32, "");
  LLVMValueRef cnt = LLVMBuildZExt(b, cg_intrinsic_n(cg, "llvm.ctpop",
                                                     &cg->t_i32, 1, &mask, 1),
                                   cg->t_i64, "");
  cg_loop_begin(cg, &m, i64(cu, 0), cnt, &mask, 1);
  LLVMValueRef zu[2] = {mask, LLVMConstInt(LLVMInt1TypeInContext(cg->lc), 0, 0)};
  LLVMValueRef src = cg_intrinsic_n(cg, "llvm.cttz", &cg->t_i32, 1, zu, 2);
  LLVMValueRef rr = LLVMBuildZExt(
      b, warp_op(cu, "llvm.nvvm.shfl.sync.idx.i32", r32, src), cg->t_i64, "");
  LLVMValueRef ui = add(cu, i0, LLVMBuildZExt(b, src, cg->t_i64, ""));
  LLVMValueRef slot = cu_shared_at(cg, sm, ct, add(cu, tid, mul(cu, rr,
                                                                 SC_THREADS)));
  LLVMValueRef v = cg_load(cg, dt, upd, add(cu, ubase, mul(cu, ui, bc)));
  LLVMBuildStore(b, cg_round_dt(cg, dt, cg_ops_combine(
                        cg, dt, CG_RED_SUM, LLVMBuildLoad2(b, ct, slot, ""), v)),
                 slot);
  mask = LLVMBuildAnd(b, mask, LLVMBuildSub(b, mask, cg_i32(cg, 1), ""), "");
  cg_loop_end(cg, &m, &mask);
  cg_loop_end(cg, &l, NULL);
  cu_guard(cu, jin);
  LLVMValueRef obase = add(cu, mul(cu, add(cu, mul(cu, ai, tt), t0), bc), j);
  for (int64_t q = 0; q < rows; q++) {
    LLVMBasicBlockRef st = cg_block(cg, "sc.store"), nx = cg_block(cg, "sc.next");
    LLVMBuildCondBr(b, ult(cu, add(cu, t0, i64(cu, q)), tt), st, nx);
    LLVMPositionBuilderAtEnd(b, st);
    cg_store(cg, dt, cg_buf(cg, n), add(cu, obase, i64(cu, q * bc)),
             LLVMBuildLoad2(b, ct, cu_shared_at(cg, sm, ct, add(
                                cu, tid, i64(cu, q * SC_THREADS))), ""));
    LLVMBuildBr(b, nx);
    LLVMPositionBuilderAtEnd(b, nx);
  }
  if (dim_is_static(tt))
    cu_kernel_end_n(cu, a, 1, (unsigned)(nt * nc), SC_THREADS);
  else /* a static (cu_dyn_why) */
    cu_kernel_end_n(cu, tt, (unsigned)rows, (unsigned)(a * nc), SC_THREADS);
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
  int64_t len = t->dims[t->rank - 1], N = cu_numel(cu, t); /* N: a size */
  int64_t k = n->type.dims[n->type.rank - 1];
  if (N == 0 || k == 0) return true;
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
  cu_kernel_end_n(cu, N, EW_BLOCK, 1, EW_BLOCK);
  return true;
}
