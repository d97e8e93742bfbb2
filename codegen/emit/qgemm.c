/* qgemm.c: quantized matmuls: q_matmul and q_conv2d (language.md
 * 6.8), int8 in, int8 out, and dequant_matmul.
 *
 * Each node is ONE call of a runtime routine (runtime/rlxrt.h):
 *   rlx_q_matmul(m, n, k, x, w, bias, mult, mults, x_zp, w_zp, out_zp, y,
 *                ws)    (mults: the optional 4th operand, else NULL)
 *   rlx_q_conv2d(geometry, x, w, bias, mult, x_zp, w_zp, out_zp, y, ws)
 * with `mult` rounded to f32 (the runtime multiplies the i32
 * accumulator by it in double) and the geometry a private constant
 * global as for conv2d (conv.c).  The node's scratch area holds
 * the routine's workspace, rlx_q_*_scratch_bytes -- the runtime's own
 * formula (runtime/qgemm/qgemm_plan.c is linked into the compiler;
 * with a dynamic M or batch, the bound's: it grows with M, and a
 * convolution's does not depend on the batch).  The
 * shape rules admit only i8 x, w and i32 bias; operands have storage of
 * their own (fuse.c folds nothing into these ops).  The routines are
 * deterministic for any thread count.
 * dequant_matmul (f32/f64 x times int8 weights with per-group scales:
 * rlx_dequant_matmul_*, runtime/moe/moe.c) multiplies x as
 * [numel / K, K]; without group_size the scales are one row, i.e. one
 * group of K rows.
 * Dynamic sizes (the shape rules keep K and the weights static): M of
 * q_matmul and of dequant_matmul (x's leading axes) and q_conv2d's
 * batch are read at run time (the routines take 0 rows).
 */
#include "codegen/emit/emit.h"

static int64_t routine_bytes(const Node *n) {
  if (n->op == OP_Q_CONV2D) {
    rlx_conv_geom g = cg_conv_geometry(n);
    return rlx_q_conv2d_scratch_bytes(&g);
  }
  const Type *x = &n->in[0]->type, *w = &n->in[1]->type;
  return rlx_q_matmul_scratch_bytes(dim_bound(x->dims[0]), w->dims[1],
                                    x->dims[1]);
}

/* No element at any size (a static 0, or a dynamic size bounded by 0). */
static bool empty(const Type *t) { return type_bytes_bound(t) == 0; }

static int64_t cg_scratch_qgemm(Cg *cg, Node *n) {
  (void)cg;
  if (empty(&n->type)) return 0;
  return node_unbounded(n) ? CG_SCRATCH_RT : cg_align(routine_bytes(n));
}

/* Sizes without a bound: the routine's formula at the call's sizes. */
LLVMValueRef cg_qgemm_scratch_rt(Cg *cg, Node *n) {
  if (n->op == OP_Q_CONV2D) {
    LLVMValueRef g = cg_conv_geometry_call(cg, n);
    return cg_call(cg, "rlx_q_conv2d_scratch_bytes", cg->t_i64, &g, 1);
  }
  const Type *x = &n->in[0]->type, *w = &n->in[1]->type;
  LLVMValueRef a[3] = {cg_dim(cg, x->dims[0]), cg_i64(cg, w->dims[1]),
                       cg_i64(cg, x->dims[1])};
  return cg_call(cg, "rlx_q_matmul_scratch_bytes", cg->t_i64, a, 3);
}

static bool cg_emit_qgemm(Cg *cg, Node *n) {
  if (empty(&n->type)) return true;
  for (int i = 0; i < n->nin; i++) {
    CgSlotKind k = cg_slot(cg, n->in[i])->kind;
    RLX_ASSERT(k != CG_SLOT_FUSED && k != CG_SLOT_FOLDED);
  }
  LLVMValueRef q[13]; /* m, n, k (or geometry), 3 operands, mult, mults,
                        3 zero points, y, ws */
  int nq = 0;
  if (n->op == OP_Q_CONV2D) {
    q[nq++] = cg_conv_geometry_call(cg, n);
  } else {
    const Type *x = &n->in[0]->type, *w = &n->in[1]->type;
    q[nq++] = cg_dim(cg, x->dims[0]);
    q[nq++] = cg_i64(cg, w->dims[1]);
    q[nq++] = cg_i64(cg, x->dims[1]);
  }
  for (int i = 0; i < 3; i++) q[nq++] = cg_buf(cg, n->in[i]);
  q[nq++] = LLVMConstReal(cg->t_f32, (float)ir_attr_float(n, ATTR_MULT, 0));
  if (n->op == OP_Q_MATMUL)
    q[nq++] = n->nin == 4 ? cg_buf(cg, n->in[3]) : LLVMConstNull(cg->t_ptr);
  q[nq++] = cg_i32(cg, (int32_t)ir_attr_int(n, ATTR_X_ZP, 0));
  q[nq++] = cg_i32(cg, (int32_t)ir_attr_int(n, ATTR_W_ZP, 0));
  q[nq++] = cg_i32(cg, (int32_t)ir_attr_int(n, ATTR_OUT_ZP, 0));
  q[nq++] = cg_buf(cg, n);
  q[nq++] = cg_scratch(cg, n);
  cg_call(cg, n->op == OP_Q_CONV2D ? "rlx_q_conv2d" : "rlx_q_matmul",
          cg->t_void, q, nq);
  return true;
}

/* ---- dequant_matmul (runtime/moe/moe.c) ---- */

/* M, K, N and the group size of a dequant_matmul (M a size: dynamic
 * when x's leading axes are). */
static void dq_dims(Ctx *c, const Node *n, int64_t d[4]) {
  const Type *w = &n->in[1]->type;
  d[1] = w->dims[0];
  d[2] = w->dims[1];
  const Type *x = &n->in[0]->type;
  d[0] = 1; /* x's rows: its leading dims */
  for (int i = 0; i + 1 < x->rank; i++) {
    DimStatus st = dim_mul(c, d[0], x->dims[i], &d[0]);
    RLX_ASSERT(st == DIM_OK); /* a factor of x's element count */
  }
  d[3] = ir_attr_present(n, ATTR_GROUP_SIZE)
             ? ir_attr_int(n, ATTR_GROUP_SIZE, 1)
             : (d[1] ? d[1] : 1);
}

static int64_t cg_scratch_dequant_matmul(Cg *cg, Node *n) {
  int64_t d[4];
  dq_dims(cg->ctx, n, d);
  return rlx_dequant_matmul_scratch_bytes(d[1], d[2], dt_size(n->type.dt));
}

static bool cg_emit_dequant_matmul(Cg *cg, Node *n) {
  RLX_ASSERT(op_dtype_ok(n->op, n->in[0]->type.dt)); /* OPF_F32_F64 */
  if (empty(&n->type)) return true;
  int64_t d[4];
  dq_dims(cg->ctx, n, d);
  LLVMValueRef s = cg_slot(cg, n)->scratch_bytes != 0
                       ? cg_scratch(cg, n)
                       : LLVMConstPointerNull(cg->t_ptr);
  LLVMValueRef a[9] = {cg_dim(cg, d[0]),     cg_i64(cg, d[1]),
                       cg_i64(cg, d[2]),     cg_i64(cg, d[3]),
                       cg_buf(cg, n->in[0]), cg_buf(cg, n->in[1]),
                       cg_buf(cg, n->in[2]), cg_buf(cg, n),
                       s};
  cg_call(cg, n->type.dt == DT_F64 ? "rlx_dequant_matmul_f64"
                                   : "rlx_dequant_matmul_f32",
          cg->t_void, a, 9);
  return true;
}

/* Dynamic sizes: M (q_matmul, dequant_matmul) and the batch (q_conv2d),
 * the only ones the shape rules carry. */
static const char *qgemm_dyn(const Node *n) {
  return cg_dyn_leading(&n->type) ? NULL : "a dynamic size after axis 0";
}
static const char *dq_dyn(const Node *n) {
  const Type *t = &n->type;
  return dim_is_static(t->dims[t->rank - 1]) ? NULL : "a dynamic K or N";
}

const CgEmitter cg_emitter_qgemm = {cg_emit_qgemm, cg_scratch_qgemm,
                                    qgemm_dyn};
const CgEmitter cg_emitter_dequant_matmul = {
    cg_emit_dequant_matmul, cg_scratch_dequant_matmul, dq_dyn};
