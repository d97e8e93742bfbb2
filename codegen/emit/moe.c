/* moe.c: grouped_matmul (mixture of experts) and
 * grouped_matmul_backward_weight, each one call of the runtime
 * (runtime/moe/moe.c): rlx_grouped_matmul_*,
 * rlx_grouped_matmul_bwd_weight_*. f32 and f64 (OPF_F32_F64: other
 * dtypes never reach these emitters). dequant_matmul, whose kernel
 * also lives in runtime/moe, is a quantized matmul: qgemm.c.
 *
 * Expert ids of dtype i32 / i64 go to the runtime as they are (it
 * checks the range: RLX_ERR_INDEX from the entry point); f32 ids are
 * first checked and converted to i64 in the node's scratch, after the
 * runtime's own scratch (grouping of the rows by expert).
 * grouped_matmul's w may be a FOLDED transpose (fuse.c): the runtime
 * reads the transpose's input with swapped strides (the gradient to x,
 * grouped_matmul(dy, w^T, e), costs no copy of w).
 */
#include "codegen/emit/emit.h"

#include "runtime/rlxrt.h"

/* T, K, N, E of a grouped_matmul or its backward op. */
static void gm_dims(const Node *n, int64_t d[4]) {
  const Type *x = &n->in[0]->type;
  const Type *w = n->op == OP_GROUPED_MATMUL ? &n->in[1]->type : &n->type;
  d[0] = x->dims[0];
  d[1] = x->dims[1];
  d[2] = w->dims[2];
  d[3] = w->dims[0];
}

/* The scratch grows with T: the bound's serves every smaller count (the
 * runtime lays its parts out from the run-time T, within the bound's). */
static int64_t cg_scratch_grouped_matmul(Cg *cg, Node *n) {
  (void)cg;
  if (node_unbounded(n)) return CG_SCRATCH_RT; /* cg_gm_scratch_rt */
  int64_t d[4];
  gm_dims(n, d);
  d[0] = dim_bound(d[0]);
  int64_t b = cg_align(rlx_grouped_matmul_scratch_bytes(
      d[0], d[1], d[2], d[3], dt_size(n->type.dt)));
  return b + (dt_is_float(n->in[2]->type.dt) ? cg_align(d[0] * 8) : 0);
}

/* The routine's part of the scratch (aligned), where the i64 expert
 * copy starts: at the bound, or (rt: T without a bound) at the call's
 * T. */
static LLVMValueRef routine_part(Cg *cg, const Node *n, bool rt) {
  int64_t d[4];
  gm_dims(n, d);
  if (!rt)
    return cg_i64(cg, cg_align(rlx_grouped_matmul_scratch_bytes(
                          dim_bound(d[0]), d[1], d[2], d[3],
                          dt_size(n->type.dt))));
  LLVMValueRef a[5] = {cg_dim(cg, d[0]), cg_i64(cg, d[1]), cg_i64(cg, d[2]),
                       cg_i64(cg, d[3]), cg_i64(cg, dt_size(n->type.dt))};
  return cg_align_rt(cg, cg_call(cg, "rlx_grouped_matmul_scratch_bytes",
                                 cg->t_i64, a, 5));
}

LLVMValueRef cg_gm_scratch_rt(Cg *cg, Node *n) {
  int64_t d[4];
  gm_dims(n, d);
  LLVMValueRef b = routine_part(cg, n, true);
  if (!dt_is_float(n->in[2]->type.dt)) return b;
  return cg_add_i64(cg, b, cg_align_rt(cg, LLVMBuildNSWMul(
                                              cg->b, cg_dim(cg, d[0]),
                                              cg_i64(cg, 8), "")));
}

static bool cg_emit_grouped_matmul(Cg *cg, Node *n) {
  RLX_ASSERT(op_dtype_ok(n->op, n->in[0]->type.dt)); /* OPF_F32_F64 */
  bool fwd = n->op == OP_GROUPED_MATMUL;
  int64_t d[4];
  gm_dims(n, d);
  DType et = n->in[2]->type.dt;
  LLVMValueRef s = cg_scratch(cg, n), ex = cg_buf(cg, n->in[2]);
  int64_t ib = dt_size(et);
  if (dt_is_float(et)) { /* checked i64 copy after the runtime's part */
    LLVMValueRef off = routine_part(cg, n, node_unbounded(n));
    LLVMValueRef v[2] = {cg_gep(cg, s, off), ex};
    ex = v[0];
    CgPar p;
    LLVMValueRef i = cg_par_begin(cg, &p, cg_dim(cg, d[0]),
                                  cg_grain(dim_bound(d[0]), 1), v, 2, true);
    cg_store(cg, DT_I64, v[0], i, cg_ops_index(cg, et, v[1], i, d[3]));
    cg_par_end(cg, &p);
    ib = 8;
  }
  static const char *const names[2][2] = {
      {"rlx_grouped_matmul_bwd_weight_f32",
       "rlx_grouped_matmul_bwd_weight_f64"},
      {"rlx_grouped_matmul_f32", "rlx_grouped_matmul_f64"}};
  Node *w = n->in[1];
  bool wt = cg_slot(cg, w)->kind == CG_SLOT_FOLDED;
  LLVMValueRef a[11];
  int na = 0;
  for (int i = 0; i < 4; i++) a[na++] = cg_dim(cg, d[i]); /* T: run time */
  a[na++] = cg_buf(cg, n->in[0]);
  a[na++] = cg_buf(cg, wt ? w->in[0] : w);
  if (fwd) a[na++] = cg_i64(cg, wt); /* w_t */
  a[na++] = ex;
  a[na++] = cg_i64(cg, ib);
  a[na++] = cg_buf(cg, n);
  a[na++] = s;
  cg_fail_if_nonzero(cg, cg_call(cg, names[fwd][n->type.dt == DT_F64],
                                 cg->t_i32, a, na));
  return true;
}

/* Dynamic sizes: the token count T (the runtime call's, read at run
 * time); K, N and E static (the shape rules). */
static const char *grouped_matmul_dyn(const Node *n) {
  int64_t d[4];
  gm_dims(n, d);
  return dim_is_static(d[1]) && dim_is_static(d[2]) && dim_is_static(d[3])
             ? NULL
             : "a dynamic K, N or expert count";
}

const CgEmitter cg_emitter_grouped_matmul = {
    cg_emit_grouped_matmul, cg_scratch_grouped_matmul, grouped_matmul_dyn};
