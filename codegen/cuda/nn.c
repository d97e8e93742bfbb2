/* nn.c: the GPU kernels of rope and the 2-D pools (cuda.h), with the
 * CPU emitters' semantics (emit/rope.c, emit/pool.c). One thread per
 * output element, so no atomics and no order that depends on the
 * launch; every element is computed with the CPU's operations in the
 * CPU's order (f16/bf16 in f32, rounded on store).
 *
 * - rope, rope_backward: element i of a head of D (NeoX half split,
 *   R = n_rot): i < R/2 gives x1 c - x2 s, R/2 <= i < R gives
 *   x2 c + x1 s (x1 = x[i mod R/2], x2 = x[i mod R/2 + R/2], c, s of
 *   column i mod R/2 of the row's table row), i >= R copies; the
 *   backward negates s.
 * - max_pool2d, avg_pool2d: the window's in-bounds cells in row-major
 *   order: the first maximum (strictly greater replaces, a NaN
 *   replaces a non-NaN), or the sum from 0 times 1/(kh kw) (padding
 *   counts as zeros).
 * - max_pool2d_backward, avg_pool2d_backward: gathers. Input element
 *   (r, c) walks the windows that cover it in row-major window order;
 *   max adds dy of each window whose first maximum is (r, c) (so the
 *   argmax of each covering window is recomputed; f16/bf16 round each
 *   partial sum, as the CPU's read-add-store does), avg sums dy over
 *   them and scales by 1/(kh kw).
 * Operands always have storage of their own (fuse.c computes nothing
 * into these ops) and the memory plan keeps results apart from them.
 */
#include "codegen/cuda/cuda.h"

/* ---- rope ---- */

bool cu_rope(Cu *cu, CgPlan *p, Node *n) {
  Cg *cg = cu->dev;
  LLVMBuilderRef b = cg->b;
  const Type *x = &n->in[0]->type;
  DType dt = x->dt;
  if (!dt_is_float(dt) || n->in[1]->type.dt != dt || n->in[2]->type.dt != dt)
    return cu_bad_dtype(cu, n, dt);
  int64_t d = ir_attr_int(n, ATTR_HEAD_DIM, 1);
  int64_t rot = ir_attr_present(n, ATTR_N_ROT) ? ir_attr_int(n, ATTR_N_ROT, 0)
                                               : d;
  int64_t half = rot / 2, s = x->dims[x->rank - 2], e = x->dims[x->rank - 1];
  int64_t w = n->in[1]->type.dims[1], N = cu_numel(cu, &n->type);
  if (N == 0) return true;
  cu_kernel_begin(cu, p, op_name(n->op));
  LLVMValueRef o = cu_gid(cu);
  cu_guard(cu, ult(cu, o, N));
  LLVMValueRef i = urem(cu, o, d);
  LLVMValueRef lo = ult(cu, i, half), in = ult(cu, i, rot);
  LLVMValueRef k = LLVMBuildSelect(b, lo, i, LLVMBuildSub(b, i, i64(cu, half),
                                                         ""), "");
  k = LLVMBuildSelect(b, in, k, i64(cu, 0), "");
  LLVMValueRef ci = add(cu, mul(cu, urem(cu, udiv(cu, o, e), s), w), k);
  LLVMValueRef c = cg_load(cg, dt, cg_buf(cg, n->in[1]), ci);
  LLVMValueRef sn = cg_load(cg, dt, cg_buf(cg, n->in[2]), ci);
  if (n->op == OP_ROPE_BACKWARD) sn = LLVMBuildFNeg(b, sn, "");
  LLVMValueRef po = LLVMBuildSelect(
      b, lo, add(cu, o, i64(cu, half)),
      LLVMBuildSelect(b, in, LLVMBuildSub(b, o, i64(cu, half), ""), o, ""),
      "");
  LLVMValueRef xs = cg_buf(cg, n->in[0]);
  LLVMValueRef a = cg_load(cg, dt, xs, o), pa = cg_load(cg, dt, xs, po);
  LLVMValueRef ac = LLVMBuildFMul(b, a, c, ""), ps = LLVMBuildFMul(b, pa, sn,
                                                                  "");
  LLVMValueRef y = LLVMBuildSelect(b, lo, LLVMBuildFSub(b, ac, ps, ""),
                                   LLVMBuildFAdd(b, ac, ps, ""), "");
  cg_store(cg, dt, cg_buf(cg, n), o, LLVMBuildSelect(b, in, y, a, ""));
  cu_kernel_end_n(cu, N, EW_BLOCK, 1, EW_BLOCK);
  return !cg->failed;
}

/* ---- pools ---- */

typedef struct {
  DType dt;
  int64_t h, w, oh, ow, kh, kw, sh, sw, ph, pw;
} Pool;

/* Geometry of input x and pooled output o of n. */
static void pool_init(Pool *P, const Node *n, const Type *x, const Type *o) {
  int m;
  const int64_t *k = ir_attr_ints(n, ATTR_KERNEL, &m);
  const int64_t *s = ir_attr_ints(n, ATTR_STRIDE, &m);
  const int64_t *pd = ir_attr_ints(n, ATTR_PADDING, &m);
  if (!s) s = k;
  *P = (Pool){.dt = x->dt, .h = x->dims[2], .w = x->dims[3],
              .oh = o->dims[2], .ow = o->dims[3], .kh = k[0], .kw = k[1],
              .sh = s[0], .sw = s[1], .ph = pd ? pd[0] : 0,
              .pw = pd ? pd[1] : 0};
}

static LLVMValueRef smax(Cu *cu, LLVMValueRef a, int64_t c) {
  LLVMBuilderRef b = cu->dev->b;
  LLVMValueRef v = i64(cu, c);
  return LLVMBuildSelect(b, LLVMBuildICmp(b, LLVMIntSGT, a, v, ""), a, v, "");
}
static LLVMValueRef smin(Cu *cu, LLVMValueRef a, int64_t c) {
  LLVMBuilderRef b = cu->dev->b;
  LLVMValueRef v = i64(cu, c);
  return LLVMBuildSelect(b, LLVMBuildICmp(b, LLVMIntSLT, a, v, ""), a, v, "");
}

/* In-bounds cells [lo, hi) of window o along a dim (kernel k, stride s,
 * padding p, input size n). */
static void span(Cu *cu, LLVMValueRef o, int64_t k, int64_t s, int64_t p,
                 int64_t n, LLVMValueRef *lo, LLVMValueRef *hi) {
  LLVMValueRef st = LLVMBuildSub(cu->dev->b, mul(cu, o, s), i64(cu, p), "");
  *lo = smax(cu, st, 0);
  *hi = smin(cu, add(cu, st, i64(cu, k)), n);
}

/* Windows [lo, hi) covering input index i along a dim (on windows). */
static void covering(Cu *cu, LLVMValueRef i, int64_t k, int64_t s, int64_t p,
                     int64_t on, LLVMValueRef *lo, LLVMValueRef *hi) {
  LLVMBuilderRef b = cu->dev->b;
  LLVMValueRef ip = add(cu, i, i64(cu, p));
  LLVMValueRef a = add(cu, ip, i64(cu, s - k)); /* ceil((ip - k + 1) / s) */
  *lo = smax(cu, LLVMBuildSDiv(b, a, i64(cu, s), ""), 0);
  *hi = smin(cu, add(cu, LLVMBuildSDiv(b, ip, i64(cu, s), ""), i64(cu, 1)),
             on);
}

/* Does v replace the running first maximum best? */
static LLVMValueRef replaces(Cg *cg, LLVMValueRef v, LLVMValueRef best) {
  LLVMBuilderRef b = cg->b;
  return LLVMBuildOr(
      b, LLVMBuildFCmp(b, LLVMRealOGT, v, best, ""),
      LLVMBuildAnd(b, LLVMBuildFCmp(b, LLVMRealUNO, v, v, ""),
                   LLVMBuildFCmp(b, LLVMRealORD, best, best, ""), ""),
      "");
}

/* Fold the in-bounds cells of window (r, q) of the plane at base of
 * src (row length P->w) in row-major order: the first maximum and its
 * plane offset (max), or the sum from 0 times 1/(kh kw) (avg). The
 * same walk over [r0, r1) x [c0, c1) of any plane with rows of `row`
 * elements serves avg_pool2d_backward. */
static LLVMValueRef rect_fold(Cu *cu, Pool *P, bool max, LLVMValueRef src,
                              LLVMValueRef base, int64_t row,
                              LLVMValueRef r0, LLVMValueRef r1,
                              LLVMValueRef c0, LLVMValueRef c1,
                              LLVMValueRef *arg) {
  Cg *cg = cu->dev;
  LLVMValueRef first = add(cu, mul(cu, r0, row), c0);
  LLVMValueRef carry[2] = {max ? cg_load(cg, P->dt, src, add(cu, base, first))
                               : cg_const(cg, P->dt, 0),
                           first};
  CgLoop li, lj;
  LLVMValueRef i = cg_loop_begin(cg, &li, r0, r1, carry, 2);
  LLVMValueRef in[2] = {carry[0], carry[1]};
  LLVMValueRef j = cg_loop_begin(cg, &lj, c0, c1, in, 2);
  LLVMValueRef off = add(cu, mul(cu, i, row), j);
  LLVMValueRef v = cg_load(cg, P->dt, src, add(cu, base, off));
  if (max) {
    LLVMValueRef up = replaces(cg, v, in[0]);
    in[0] = LLVMBuildSelect(cg->b, up, v, in[0], "");
    in[1] = LLVMBuildSelect(cg->b, up, off, in[1], "");
  } else {
    in[0] = LLVMBuildFAdd(cg->b, in[0], v, "");
  }
  cg_loop_end(cg, &lj, in);
  carry[0] = in[0];
  carry[1] = in[1];
  cg_loop_end(cg, &li, carry);
  if (arg) *arg = carry[1];
  if (max) return carry[0];
  return LLVMBuildFMul(cg->b, carry[0],
                       cg_const(cg, P->dt, 1.0 / (double)(P->kh * P->kw)),
                       "");
}

/* Window (r, q) of the plane at base of x: as rect_fold. */
static LLVMValueRef window(Cu *cu, Pool *P, bool max, LLVMValueRef x,
                           LLVMValueRef base, LLVMValueRef r, LLVMValueRef q,
                           LLVMValueRef *arg) {
  LLVMValueRef r0, r1, c0, c1;
  span(cu, r, P->kh, P->sh, P->ph, P->h, &r0, &r1);
  span(cu, q, P->kw, P->sw, P->pw, P->w, &c0, &c1);
  return rect_fold(cu, P, max, x, base, P->w, r0, r1, c0, c1, arg);
}

/* max_pool2d, avg_pool2d: output element o = (plane, r, q). */
static bool pool_fwd(Cu *cu, CgPlan *p, Node *n) {
  Cg *cg = cu->dev;
  Pool P;
  pool_init(&P, n, &n->in[0]->type, &n->type);
  int64_t N = cu_numel(cu, &n->type); /* a dynamic batch: a size */
  if (N == 0) return true;
  cu_kernel_begin(cu, p, op_name(n->op));
  LLVMValueRef o = cu_gid(cu);
  cu_guard(cu, ult(cu, o, N));
  LLVMValueRef q = urem(cu, o, P.ow), u = udiv(cu, o, P.ow);
  LLVMValueRef r = urem(cu, u, P.oh), pl = udiv(cu, u, P.oh);
  LLVMValueRef v = window(cu, &P, n->op == OP_MAX_POOL2D,
                          cg_buf(cg, n->in[0]), mul(cu, pl, P.h * P.w), r, q,
                          NULL);
  cg_store(cg, P.dt, cg_buf(cg, n), o, v);
  cu_kernel_end_n(cu, N, EW_BLOCK, 1, EW_BLOCK);
  return !cg->failed;
}

/* max_pool2d_backward(x, dy): input element e = (plane, r, c) sums, in
 * row-major window order, dy of the covering windows whose first
 * maximum is e. */
static bool max_pool_bwd(Cu *cu, CgPlan *p, Node *n) {
  Cg *cg = cu->dev;
  Pool P;
  pool_init(&P, n, &n->in[0]->type, &n->in[1]->type);
  int64_t N = cu_numel(cu, &n->type); /* a dynamic batch: a size */
  if (N == 0) return true;
  cu_kernel_begin(cu, p, op_name(n->op));
  LLVMValueRef e = cu_gid(cu);
  cu_guard(cu, ult(cu, e, N));
  LLVMValueRef c = urem(cu, e, P.w), u = udiv(cu, e, P.w);
  LLVMValueRef r = urem(cu, u, P.h), pl = udiv(cu, u, P.h);
  LLVMValueRef self = add(cu, mul(cu, r, P.w), c);
  LLVMValueRef xb = mul(cu, pl, P.h * P.w), ob = mul(cu, pl, P.oh * P.ow);
  LLVMValueRef x = cg_buf(cg, n->in[0]), dy = cg_buf(cg, n->in[1]);
  LLVMValueRef r0, r1, q0, q1;
  covering(cu, r, P.kh, P.sh, P.ph, P.oh, &r0, &r1);
  covering(cu, c, P.kw, P.sw, P.pw, P.ow, &q0, &q1);
  LLVMValueRef acc = cg_const(cg, P.dt, 0);
  CgLoop li, lj;
  LLVMValueRef wr = cg_loop_begin(cg, &li, r0, r1, &acc, 1);
  LLVMValueRef a2 = acc;
  LLVMValueRef wq = cg_loop_begin(cg, &lj, q0, q1, &a2, 1);
  LLVMValueRef arg;
  window(cu, &P, true, x, xb, wr, wq, &arg);
  LLVMValueRef d = cg_load(cg, P.dt, dy, add(cu, ob, add(cu, mul(cu, wr, P.ow),
                                                         wq)));
  LLVMValueRef sum = cg_round_dt(cg, P.dt, LLVMBuildFAdd(cg->b, a2, d, ""));
  LLVMValueRef hit = LLVMBuildICmp(cg->b, LLVMIntEQ, arg, self, "");
  a2 = LLVMBuildSelect(cg->b, hit, sum, a2, "");
  cg_loop_end(cg, &lj, &a2);
  acc = a2;
  cg_loop_end(cg, &li, &acc);
  cg_store(cg, P.dt, cg_buf(cg, n), e, acc);
  cu_kernel_end_n(cu, N, EW_BLOCK, 1, EW_BLOCK);
  return !cg->failed;
}

/* avg_pool2d_backward(dy): input element (plane, r, c) = the sum of dy
 * over the covering windows, row-major, times 1/(kh kw). */
static bool avg_pool_bwd(Cu *cu, CgPlan *p, Node *n) {
  Cg *cg = cu->dev;
  Pool P;
  pool_init(&P, n, &n->type, &n->in[0]->type);
  int64_t N = cu_numel(cu, &n->type); /* a dynamic batch: a size */
  if (N == 0) return true;
  cu_kernel_begin(cu, p, op_name(n->op));
  LLVMValueRef e = cu_gid(cu);
  cu_guard(cu, ult(cu, e, N));
  LLVMValueRef c = urem(cu, e, P.w), u = udiv(cu, e, P.w);
  LLVMValueRef r = urem(cu, u, P.h), pl = udiv(cu, u, P.h);
  LLVMValueRef r0, r1, q0, q1;
  covering(cu, r, P.kh, P.sh, P.ph, P.oh, &r0, &r1);
  covering(cu, c, P.kw, P.sw, P.pw, P.ow, &q0, &q1);
  LLVMValueRef v = rect_fold(cu, &P, false, cg_buf(cg, n->in[0]),
                             mul(cu, pl, P.oh * P.ow), P.ow, r0, r1, q0, q1,
                             NULL);
  cg_store(cg, P.dt, cg_buf(cg, n), e, v);
  cu_kernel_end_n(cu, N, EW_BLOCK, 1, EW_BLOCK);
  return !cg->failed;
}

bool cu_pool(Cu *cu, CgPlan *p, Node *n) {
  DType dt = n->type.dt;
  if (!dt_is_float(dt)) return cu_bad_dtype(cu, n, dt);
  for (int k = 0; k < n->nin; k++)
    if (n->in[k]->type.dt != dt) return cu_bad_dtype(cu, n, n->in[k]->type.dt);
  switch (n->op) {
  case OP_MAX_POOL2D_BACKWARD: return max_pool_bwd(cu, p, n);
  case OP_AVG_POOL2D_BACKWARD: return avg_pool_bwd(cu, p, n);
  default: return pool_fwd(cu, p, n);
  }
}
