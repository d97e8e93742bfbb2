/* emit_qgemm.c: q_matmul and q_conv2d (language.md 6.8), int8 in, int8
 * out.
 *
 * Each node is ONE call of a runtime routine (runtime/rlxrt.h):
 *   rlx_q_matmul(m, n, k, x, w, bias, mult, mults, x_zp, w_zp, out_zp, y,
 *                ws)    (mults: the optional 4th operand, else NULL)
 *   rlx_q_conv2d(geometry, x, w, bias, mult, x_zp, w_zp, out_zp, y, ws)
 * with `mult` rounded to f32 (the runtime multiplies the i32
 * accumulator by it in double) and the geometry a private constant
 * global as for conv2d (emit_conv.c).  The node's scratch area holds
 * the routine's workspace, rlx_q_*_scratch_bytes -- the runtime's own
 * formula (runtime/qgemm/qgemm_plan.c is linked into the compiler).  The
 * shape rules admit only i8 x, w and i32 bias; operands have storage of
 * their own (fuse.c folds nothing into these ops).  The routines are
 * deterministic for any thread count.
 */
#include "codegen/emit_ops.h"

static int64_t routine_bytes(const Node *n) {
  if (n->op == OP_Q_CONV2D) {
    rlx_conv_geom g = cg_conv_geometry(n);
    return rlx_q_conv2d_scratch_bytes(&g);
  }
  const Type *x = &n->in[0]->type, *w = &n->in[1]->type;
  return rlx_q_matmul_scratch_bytes(x->dims[0], w->dims[1], x->dims[1]);
}

int64_t cg_scratch_qgemm(Cg *cg, Node *n) {
  (void)cg;
  return type_numel(&n->type) ? cg_align(routine_bytes(n)) : 0;
}

bool cg_emit_qgemm(Cg *cg, Node *n) {
  if (type_numel(&n->type) == 0) return true;
  for (int i = 0; i < n->nin; i++) {
    CgSlotKind k = cg_slot(cg, n->in[i])->kind;
    RLX_ASSERT(k != CG_SLOT_FUSED && k != CG_SLOT_FOLDED);
  }
  LLVMValueRef q[13]; /* m, n, k (or geometry), 3 operands, mult, mults,
                        3 zero points, y, ws */
  int nq = 0;
  if (n->op == OP_Q_CONV2D) {
    rlx_conv_geom g = cg_conv_geometry(n);
    q[nq++] = cg_conv_geometry_global(cg, &g);
  } else {
    const Type *x = &n->in[0]->type, *w = &n->in[1]->type;
    q[nq++] = cg_i64(cg, x->dims[0]);
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
