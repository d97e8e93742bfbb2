/* quant.c: the GPU kernels of the quantized, grouped (MoE) and dense
 * solver ops (cuda.h; dequant_matmul and q_matmul run on matmul.c's
 * tiles). One thread per output element, walking its sum in k order
 * from 0 (deterministic, no atomics), unless stated:
 *
 * - q_matmul (per-tensor mult or per-column mults; its sums from
 *   matmul.c), q_conv2d (stride, padding, dilation, groups): the i32 sum
 *   bias + sum (x - x_zp)(w - w_zp), wrapping as the CPU's (exact in any
 *   order), then the CPU's requantization (runtime/qgemm rlx_requant):
 *   the sum times (f64)(f32)mult (times mults[j]) in f64, rounded half
 *   to even, plus out_zp, saturated to i8: the CPU's bits. q_conv2d folds
 *   k = (ci, kh, kw) of the output channel's group; padding cells hold
 *   x_zp, so they add 0.
 * - grouped_matmul: y[t, j] = sum over k of x[t, k] w[e[t], k, j] (w
 *   read through strides where the plan folded its transpose);
 *   grouped_matmul_backward_weight: dw[e, k, j] = sum of x[t, k] dy[t, j]
 *   over the rows t routed to expert e, in row order (an expert without
 *   rows gets 0). A bad expert id makes the thread skip its element
 *   and record RLX_ERR_INDEX (docs/gpu.md, "Errors found by kernels").
 * - dense_solve, batched_dense_solve: one block per system, the CPU's
 *   elimination (runtime/linalg/solve.c) on a copy of A in the node's
 *   workspace scratch: per column every thread finds the same pivot (the
 *   first of largest magnitude), the block swaps the rows, then each
 *   thread eliminates whole rows; back substitution, one thread per
 *   right-hand column. Each element sees the CPU's operations in the
 *   CPU's order (separate mul and sub): the CPU's bits. A singular
 *   system (an exactly zero pivot) gets NaN in all of its x and records
 *   RLX_ERR_SINGULAR.
 *
 * Dynamic sizes (docs/gpu.md; cu_quant_dyn), with or without a bound:
 * every size the shape rules let be dynamic. q_matmul's M and
 * dequant_matmul's (x's leading axes) are matmul.c's (row tiles from the
 * run-time M); q_conv2d's batch and grouped_matmul's token count T make
 * the element count, the grid of its one-thread kernel computed at
 * launch; grouped_matmul_backward_weight walks the run-time T (T = 0:
 * zeros); a solve's B is its grid (one block a system; the copies of A
 * laid out for B's bound, or as a size without one) and its K the
 * run-time width of x's rows (K = 0: no work and no error, as on the
 * CPU).
 */
#include "codegen/cuda/cuda.h"

/* ---- shared pieces ---- */

/* Kernel `what` over n elements (a size), one thread each: the element
 * index; a dynamic n: the grid from the run-time count. */
static LLVMValueRef each_begin(Cu *cu, CgPlan *p, const char *what,
                               int64_t n) {
  cu_kernel_begin(cu, p, what);
  LLVMValueRef i = cu_gid(cu);
  cu_guard(cu, ult(cu, i, n));
  return i;
}

static void each_end(Cu *cu, int64_t n) {
  cu_kernel_end_n(cu, n, EW_BLOCK, 1, EW_BLOCK);
}

/* i8 element buf[i] minus zero point zp, as i32. */
static LLVMValueRef q_elem(Cu *cu, LLVMValueRef buf, LLVMValueRef i,
                           int64_t zp) {
  Cg *cg = cu->dev;
  LLVMValueRef v = LLVMBuildSExt(cg->b, cg_load(cg, DT_I8, buf, i),
                                 cg->t_i32, "");
  return LLVMBuildSub(cg->b, v, cg_i32(cg, (int32_t)zp), "");
}

/* rlx_requant: sat8(rint(acc * m) + out_zp) in f64, m = (f64)(f32)mult
 * times ms (an f32 per-column multiplier) if given. */
static LLVMValueRef requant(Cu *cu, Node *n, LLVMValueRef acc,
                            LLVMValueRef ms) {
  Cg *cg = cu->dev;
  LLVMBuilderRef b = cg->b;
  LLVMTypeRef d = cg->t_f64;
  LLVMValueRef m = LLVMConstReal(d, (float)ir_attr_float(n, ATTR_MULT, 0));
  if (ms) m = LLVMBuildFMul(b, m, LLVMBuildFPExt(b, ms, d, ""), "");
  LLVMValueRef r = LLVMBuildFMul(b, LLVMBuildSIToFP(b, acc, d, ""), m, "");
  r = cg_intrinsic(cg, "llvm.rint", d, &r, 1);
  r = LLVMBuildFAdd(b, r, LLVMConstReal(d, (double)(int32_t)ir_attr_int(
                                               n, ATTR_OUT_ZP, 0)), "");
  LLVMValueRef lo = LLVMConstReal(d, -128), hi = LLVMConstReal(d, 127);
  r = LLVMBuildSelect(b, LLVMBuildFCmp(b, LLVMRealOLT, r, lo, ""), lo, r, "");
  r = LLVMBuildSelect(b, LLVMBuildFCmp(b, LLVMRealOGT, r, hi, ""), hi, r, "");
  return LLVMBuildTrunc(b, LLVMBuildFPToSI(b, r, cg->t_i32, ""), cg->t_i8,
                        "");
}

/* ---- q_matmul's requantization, q_conv2d ---- */

LLVMValueRef cu_q_requant(Cu *cu, Node *n, LLVMValueRef acc, LLVMValueRef c) {
  Cg *cg = cu->dev;
  acc = LLVMBuildAdd(cg->b, acc, cg_load(cg, DT_I32, cg_buf(cg, n->in[2]), c),
                     "");
  LLVMValueRef ms = n->nin == 4 ? cg_load(cg, DT_F32, cg_buf(cg, n->in[3]), c)
                                : NULL;
  return requant(cu, n, acc, ms);
}

static bool q_conv2d(Cu *cu, CgPlan *p, Node *n) {
  Cg *cg = cu->dev;
  LLVMBuilderRef b = cg->b;
  const Type *x = &n->in[0]->type, *w = &n->in[1]->type, *y = &n->type;
  int64_t s[2], pd[2], d[2];
  cu_conv_pair(n, ATTR_STRIDE, 1, s);
  cu_conv_pair(n, ATTR_PADDING, 0, pd);
  cu_conv_pair(n, ATTR_DILATION, 1, d);
  int64_t C = x->dims[1], H = x->dims[2], W = x->dims[3];
  int64_t CO = y->dims[1], OH = y->dims[2], OW = y->dims[3];
  int64_t KH = w->dims[2], KW = w->dims[3], CG = w->dims[1];
  int64_t G = ir_attr_int(n, ATTR_GROUPS, 1), COG = CO / (G > 0 ? G : 1);
  int64_t xz = ir_attr_int(n, ATTR_X_ZP, 0), wz = ir_attr_int(n, ATTR_W_ZP, 0);
  int64_t total = cu_numel(cu, y); /* a size: the batch may be dynamic */
  if (total == 0) return true;
  LLVMValueRef i = each_begin(cu, p, "q_conv2d", total);
  LLVMValueRef ow = urem(cu, i, OW), oh = urem(cu, udiv(cu, i, OW), OH);
  LLVMValueRef co = urem(cu, udiv(cu, i, OW * OH), CO);
  LLVMValueRef nb = udiv(cu, i, OW * OH * CO);
  /* x's channel 0 of this image and group, w's row of co */
  LLVMValueRef xb = mul(cu, add(cu, mul(cu, nb, C),
                                mul(cu, udiv(cu, co, COG), CG)), H * W);
  LLVMValueRef wb = mul(cu, co, CG * KH * KW);
  LLVMValueRef acc = cg_load(cg, DT_I32, cg_buf(cg, n->in[2]), co);
  CgLoop l;
  LLVMValueRef k = cg_loop_begin(cg, &l, i64(cu, 0), i64(cu, CG * KH * KW),
                                 &acc, 1);
  LLVMValueRef kw = urem(cu, k, KW), kh = urem(cu, udiv(cu, k, KW), KH);
  LLVMValueRef ci = udiv(cu, k, KW * KH);
  LLVMValueRef ih = add(cu, mul(cu, oh, s[0]), add(cu, mul(cu, kh, d[0]),
                                                   i64(cu, -pd[0])));
  LLVMValueRef iw = add(cu, mul(cu, ow, s[1]), add(cu, mul(cu, kw, d[1]),
                                                   i64(cu, -pd[1])));
  LLVMValueRef in = LLVMBuildAnd(b, cu_in_range(cu, ih, H),
                                 cu_in_range(cu, iw, W), "");
  LLVMValueRef xo = add(cu, xb, add(cu, mul(cu, ci, H * W),
                                    add(cu, mul(cu, ih, W), iw)));
  xo = LLVMBuildSelect(b, in, xo, i64(cu, 0), "");
  LLVMValueRef xv = LLVMBuildSelect(b, in, q_elem(cu, cg_buf(cg, n->in[0]),
                                                  xo, xz), cg_i32(cg, 0), "");
  LLVMValueRef wv = q_elem(cu, cg_buf(cg, n->in[1]), add(cu, wb, k), wz);
  acc = LLVMBuildAdd(b, acc, LLVMBuildMul(b, xv, wv, ""), "");
  cg_loop_end(cg, &l, &acc);
  cg_store(cg, DT_I8, cg_buf(cg, n), i, requant(cu, n, acc, NULL));
  each_end(cu, total);
  return true;
}

/* ---- grouped_matmul and its weight gradient ---- */

/* fma(a, b, c) */
static LLVMValueRef fma3(Cg *cg, LLVMValueRef a, LLVMValueRef b,
                         LLVMValueRef c) {
  LLVMValueRef f[3] = {a, b, c};
  return cg_intrinsic(cg, "llvm.fma", LLVMTypeOf(c), f, 3);
}

/* Whether grouped op n's dtypes are supported (else a diagnostic). */
static bool gm_dtypes_ok(Cu *cu, Node *n) {
  DType dt = n->type.dt;
  if (dt != DT_F32 && dt != DT_F64) return cu_bad_dtype(cu, n, dt);
  if (!cg_ops_index_dtype_ok(n->in[2]->type.dt))
    return cu_unsupported(cu, n, "expert ids must be i32, i64 or f32");
  return true;
}

static bool grouped_matmul(Cu *cu, CgPlan *p, Node *n) {
  Cg *cg = cu->dev;
  DType dt = n->type.dt, et = n->in[2]->type.dt;
  if (!gm_dtypes_ok(cu, n)) return false;
  Node *w = n->in[1];
  bool wt = cg_plan_slot(p, w)->kind == CG_SLOT_FOLDED;
  int64_t K = n->in[0]->type.dims[1];
  int64_t E = w->type.dims[0], N = w->type.dims[2];
  int64_t ks = wt ? 1 : N, js = wt ? K : 1; /* w[e, k, j] strides */
  int64_t total = cu_numel(cu, &n->type); /* T N, T a size */
  if (total == 0) return true;
  LLVMValueRef i = each_begin(cu, p, "grouped_matmul", total);
  LLVMValueRef t = udiv(cu, i, N), j = urem(cu, i, N);
  LLVMValueRef e = cg_ops_index(cg, et, cg_buf(cg, n->in[2]), t, E);
  LLVMValueRef wb = add(cu, mul(cu, e, K * N), mul(cu, j, js));
  LLVMValueRef acc = cg_const(cg, dt, 0);
  CgLoop l;
  LLVMValueRef k = cg_loop_begin(cg, &l, i64(cu, 0), i64(cu, K), &acc, 1);
  LLVMValueRef xv = cg_load(cg, dt, cg_buf(cg, n->in[0]),
                            add(cu, mul(cu, t, K), k));
  LLVMValueRef wv = cg_load(cg, dt, cg_buf(cg, wt ? w->in[0] : w),
                            add(cu, wb, mul(cu, k, ks)));
  acc = fma3(cg, xv, wv, acc);
  cg_loop_end(cg, &l, &acc);
  cg_store(cg, dt, cg_buf(cg, n), i, acc);
  each_end(cu, total);
  return true;
}

static bool grouped_bwd_weight(Cu *cu, CgPlan *p, Node *n) {
  Cg *cg = cu->dev;
  DType dt = n->type.dt, et = n->in[2]->type.dt;
  if (!gm_dtypes_ok(cu, n)) return false;
  int64_t T = n->in[0]->type.dims[0], K = n->in[0]->type.dims[1];
  int64_t E = n->type.dims[0], N = n->type.dims[2];
  int64_t total = E * K * N;
  if (total == 0) return true;
  LLVMValueRef i = each_begin(cu, p, "grouped_matmul_backward_weight", total);
  LLVMValueRef j = urem(cu, i, N), kk = urem(cu, udiv(cu, i, N), K);
  LLVMValueRef e = udiv(cu, i, K * N);
  LLVMValueRef acc = cg_const(cg, dt, 0);
  CgLoop l;
  LLVMValueRef t = cg_loop_begin(cg, &l, i64(cu, 0), cu_size(cu, T), &acc,
                                 1);
  LLVMValueRef te = cg_ops_index(cg, et, cg_buf(cg, n->in[2]), t, E);
  LLVMValueRef xv = cg_load(cg, dt, cg_buf(cg, n->in[0]),
                            add(cu, mul(cu, t, K), kk));
  LLVMValueRef dv = cg_load(cg, dt, cg_buf(cg, n->in[1]),
                            add(cu, mul(cu, t, N), j));
  acc = LLVMBuildSelect(cg->b, LLVMBuildICmp(cg->b, LLVMIntEQ, te, e, ""),
                        fma3(cg, xv, dv, acc), acc, "");
  cg_loop_end(cg, &l, &acc);
  cg_store(cg, dt, cg_buf(cg, n), i, acc);
  each_end(cu, total);
  return true;
}

/* ---- dense_solve, batched_dense_solve ---- */

/* Sizes of a solve: systems, N, right-hand columns (B and K sizes,
 * maybe dynamic). */
static void sv_dims(const Node *n, int64_t *B, int64_t *N, int64_t *K) {
  const Type *a = &n->in[0]->type, *b = &n->in[1]->type;
  bool batched = n->op == OP_BATCHED_DENSE_SOLVE;
  *B = batched ? a->dims[0] : 1;
  *N = a->dims[a->rank - 1];
  *K = b->rank == 2 + batched ? b->dims[b->rank - 1] : 1;
}

/* No work at any size: a static 0 among them (a dynamic size is a
 * negative dim id, never 0). */
static bool sv_none(int64_t B, int64_t N, int64_t K) {
  return B == 0 || N == 0 || K == 0;
}

/* The sizes the shape rules let be dynamic (cu_dyn_why): all of them. */
const char *cu_quant_dyn(Cu *cu, const CgPlan *p, const Node *n) {
  (void)cu, (void)p;
  const Type *t = &n->type, *x = &n->in[0]->type;
  switch (n->op) {
  case OP_Q_MATMUL: case OP_DEQUANT_MATMUL: /* M: matmul.c's row tiles */
    return dim_is_static(t->dims[t->rank - 1]) &&
                   dim_is_static(x->dims[x->rank - 1])
               ? NULL : "a dynamic K or N";
  case OP_Q_CONV2D:
    return cg_dyn_leading(t) && cg_dyn_leading(x) &&
                   type_is_static(&n->in[1]->type)
               ? NULL : "a dynamic size outside axis 0 (the batch)";
  case OP_GROUPED_MATMUL: case OP_GROUPED_MATMUL_BACKWARD_WEIGHT: {
    const Type *w = n->op == OP_GROUPED_MATMUL ? &n->in[1]->type : t;
    return dim_is_static(x->dims[1]) && type_is_static(w)
               ? NULL : "a dynamic K, N or expert count";
  }
  case OP_DENSE_SOLVE: case OP_BATCHED_DENSE_SOLVE:
    return dim_is_static(x->dims[x->rank - 1]) ? NULL
                                               : "a dynamic system size N";
  default: return CU_STATIC_ONLY;
  }
}

/* One copy of A per system: A's bytes, at B's bound, or without one a
 * size (laid out at run time). */
int64_t cu_solve_scratch(Cu *cu, const Node *n) {
  if (n->op != OP_DENSE_SOLVE && n->op != OP_BATCHED_DENSE_SOLVE) return 0;
  int64_t B, N, K, d;
  sv_dims(n, &B, &N, &K);
  if (sv_none(B, N, K)) return 0;
  const Type *a = &n->in[0]->type;
  if (type_is_bounded(a)) return type_bytes_bound(a);
  Ctx *ctx = cu->dev->ctx;
  return type_numel_dim(ctx, a, &d) == DIM_OK &&
                 dim_mul(ctx, d, dt_size(a->dt), &d) == DIM_OK ? d : -1;
}

/* for (e = lo + tid; e < hi; e += block), lo and hi i64 values: the
 * body runs between strided_begin and strided_end. */
typedef struct {
  CgLoop l;
  LLVMBasicBlockRef skip;
} Strided;

static LLVMValueRef strided_begin(Cu *cu, Strided *s, LLVMValueRef lo,
                                  LLVMValueRef hi, int block) {
  Cg *cg = cu->dev;
  LLVMBuilderRef b = cg->b;
  LLVMValueRef len = LLVMBuildSub(b, hi, lo, "");
  LLVMValueRef it_n = LLVMBuildSDiv(b, add(cu, len, i64(cu, block - 1)),
                                    i64(cu, block), "");
  LLVMValueRef it = cg_loop_begin(cg, &s->l, i64(cu, 0), it_n, NULL, 0);
  LLVMValueRef e = add(cu, lo, add(cu, mul(cu, it, block), cu_tid(cu)));
  LLVMBasicBlockRef go = cg_block(cg, "sv.go");
  s->skip = cg_block(cg, "sv.skip");
  LLVMBuildCondBr(b, LLVMBuildICmp(b, LLVMIntSLT, e, hi, ""), go, s->skip);
  LLVMPositionBuilderAtEnd(b, go);
  return e;
}

static void strided_end(Cu *cu, Strided *s) {
  Cg *cg = cu->dev;
  LLVMBuildBr(cg->b, s->skip);
  LLVMPositionBuilderAtEnd(cg->b, s->skip);
  cg_loop_end(cg, &s->l, NULL);
}

static void barrier(Cu *cu) {
  cg_intrinsic_n(cu->dev, "llvm.nvvm.barrier0", NULL, 0, NULL, 0);
}

typedef struct {
  DType dt;
  int64_t N, K;             /* K a size */
  int block;
  LLVMValueRef lu, x; /* this system's LU copy [N, N] and x [N, K] */
} Sv;

static LLVMValueRef sv_ld(Cu *cu, const Sv *s, LLVMValueRef buf,
                          LLVMValueRef r, int64_t w, LLVMValueRef c) {
  return cg_load(cu->dev, s->dt, buf, add(cu, mul(cu, r, w), c));
}

static void sv_st(Cu *cu, const Sv *s, LLVMValueRef buf, LLVMValueRef r,
                  int64_t w, LLVMValueRef c, LLVMValueRef v) {
  cg_store(cu->dev, s->dt, buf, add(cu, mul(cu, r, w), c), v);
}

/* Rows p and c of buf ([N, w]) swapped, the columns spread over the
 * block. */
static void sv_swap(Cu *cu, const Sv *s, LLVMValueRef buf, int64_t w,
                    LLVMValueRef pr, LLVMValueRef c) {
  Strided st;
  LLVMValueRef j = strided_begin(cu, &st, i64(cu, 0), cu_size(cu, w),
                                 s->block);
  LLVMValueRef a = sv_ld(cu, s, buf, pr, w, j), b = sv_ld(cu, s, buf, c, w, j);
  sv_st(cu, s, buf, pr, w, j, b);
  sv_st(cu, s, buf, c, w, j, a);
  strided_end(cu, &st);
}

/* buf[r, j] -= f * buf[c, j] for j in [lo, w). */
static void sv_axpy(Cu *cu, const Sv *s, LLVMValueRef buf, int64_t w,
                    LLVMValueRef lo, LLVMValueRef r, LLVMValueRef c,
                    LLVMValueRef f) {
  Cg *cg = cu->dev;
  CgLoop l;
  LLVMValueRef j = cg_loop_begin(cg, &l, lo, cu_size(cu, w), NULL, 0);
  LLVMValueRef v = LLVMBuildFSub(
      cg->b, sv_ld(cu, s, buf, r, w, j),
      LLVMBuildFMul(cg->b, f, sv_ld(cu, s, buf, c, w, j), ""), "");
  sv_st(cu, s, buf, r, w, j, v);
  cg_loop_end(cg, &l, NULL);
}

/* Column c of the elimination; returns whether its pivot is 0 (i1). */
static LLVMValueRef sv_column(Cu *cu, const Sv *s, LLVMValueRef c) {
  Cg *cg = cu->dev;
  LLVMBuilderRef b = cg->b;
  LLVMTypeRef t = cg_ctype(cg, s->dt);
  /* pivot: the first row of largest |lu[r, c]|, r >= c (every thread) */
  LLVMValueRef v0 = sv_ld(cu, s, s->lu, c, s->N, c);
  LLVMValueRef carry[2] = {c, cg_intrinsic(cg, "llvm.fabs", t, &v0, 1)};
  CgLoop l;
  LLVMValueRef r = cg_loop_begin(cg, &l, add(cu, c, i64(cu, 1)),
                                 i64(cu, s->N), carry, 2);
  LLVMValueRef v = sv_ld(cu, s, s->lu, r, s->N, c);
  v = cg_intrinsic(cg, "llvm.fabs", t, &v, 1);
  LLVMValueRef gt = LLVMBuildFCmp(b, LLVMRealOGT, v, carry[1], "");
  LLVMValueRef next[2] = {LLVMBuildSelect(b, gt, r, carry[0], ""),
                          LLVMBuildSelect(b, gt, v, carry[1], "")};
  cg_loop_end(cg, &l, next);
  LLVMValueRef pr = next[0];
  LLVMValueRef zero = LLVMBuildFCmp(b, LLVMRealOEQ,
                                    sv_ld(cu, s, s->lu, pr, s->N, c),
                                    cg_const(cg, s->dt, 0), "");
  barrier(cu); /* everyone has read the column */
  LLVMBasicBlockRef sw = cg_block(cg, "sv.swap"), done = cg_block(cg, "sv.el");
  LLVMBuildCondBr(b, LLVMBuildICmp(b, LLVMIntNE, pr, c, ""), sw, done);
  LLVMPositionBuilderAtEnd(b, sw);
  sv_swap(cu, s, s->lu, s->N, pr, c);
  sv_swap(cu, s, s->x, s->K, pr, c);
  LLVMBuildBr(b, done);
  LLVMPositionBuilderAtEnd(b, done);
  barrier(cu);
  /* rows below c, one thread per row */
  Strided st;
  LLVMValueRef c1 = add(cu, c, i64(cu, 1));
  LLVMValueRef rr = strided_begin(cu, &st, c1, i64(cu, s->N), s->block);
  LLVMValueRef f = LLVMBuildFDiv(b, sv_ld(cu, s, s->lu, rr, s->N, c),
                                 sv_ld(cu, s, s->lu, c, s->N, c), "");
  sv_axpy(cu, s, s->lu, s->N, c1, rr, c, f);
  sv_axpy(cu, s, s->x, s->K, i64(cu, 0), rr, c, f);
  strided_end(cu, &st);
  barrier(cu);
  return zero;
}

/* x[r, j] = (x[r, j] - sum over q > r of lu[r, q] x[q, j]) / lu[r, r],
 * r from N - 1 down, one thread per column j. */
static void sv_back(Cu *cu, const Sv *s) {
  Cg *cg = cu->dev;
  LLVMBuilderRef b = cg->b;
  Strided st;
  LLVMValueRef j = strided_begin(cu, &st, i64(cu, 0), cu_size(cu, s->K),
                                 s->block);
  CgLoop lr, lq;
  LLVMValueRef it = cg_loop_begin(cg, &lr, i64(cu, 0), i64(cu, s->N), NULL, 0);
  LLVMValueRef r = LLVMBuildSub(b, i64(cu, s->N - 1), it, "");
  LLVMValueRef acc = sv_ld(cu, s, s->x, r, s->K, j);
  LLVMValueRef q = cg_loop_begin(cg, &lq, add(cu, r, i64(cu, 1)),
                                 i64(cu, s->N), &acc, 1);
  acc = LLVMBuildFSub(b, acc, LLVMBuildFMul(
                                  b, sv_ld(cu, s, s->lu, r, s->N, q),
                                  sv_ld(cu, s, s->x, q, s->K, j), ""), "");
  cg_loop_end(cg, &lq, &acc);
  sv_st(cu, s, s->x, r, s->K, j,
        LLVMBuildFDiv(b, acc, sv_ld(cu, s, s->lu, r, s->N, r), ""));
  cg_loop_end(cg, &lr, NULL);
  strided_end(cu, &st);
}

/* buf[0..n) of dt = src[0..n) (src NULL: NaN), spread over the block. */
static void sv_fill(Cu *cu, const Sv *s, LLVMValueRef dst, LLVMValueRef src,
                    int64_t n) {
  Strided st;
  LLVMValueRef e = strided_begin(cu, &st, i64(cu, 0), cu_size(cu, n),
                                 s->block);
  LLVMValueRef v = src ? cg_load(cu->dev, s->dt, src, e)
                       : cg_const(cu->dev, s->dt, __builtin_nan(""));
  cg_store(cu->dev, s->dt, dst, e, v);
  strided_end(cu, &st);
}

static bool dense_solve(Cu *cu, CgPlan *p, Node *n) {
  Cg *cg = cu->dev;
  LLVMBuilderRef b = cg->b;
  DType dt = n->type.dt;
  if (dt != DT_F32 && dt != DT_F64) return cu_bad_dtype(cu, n, dt);
  int64_t B, N, K, NK;
  sv_dims(n, &B, &N, &K);
  if (sv_none(B, N, K)) return true;
  DimStatus st = dim_mul(cg->ctx, N, K, &NK);
  RLX_ASSERT(st == DIM_OK); /* a factor of b's element count */
  int64_t kb = dim_bound(K); /* the block for K's bound (none: 256) */
  Sv s = {.dt = dt, .N = N, .K = K, .block = cu_block_for(N > kb ? N : kb)};
  cu_kernel_begin(cu, p, op_name(n->op));
  if (!dim_is_static(K)) /* no right-hand sides: no work, no error */
    cu_guard(cu, LLVMBuildICmp(b, LLVMIntNE, cu_size(cu, K), i64(cu, 0), ""));
  LLVMValueRef sys = cu_ctaid(cu);
  LLVMTypeRef et = cg_ctype(cg, dt);
  LLVMValueRef ao = mul(cu, sys, N * N), xo = mul(cu, sys, NK);
  s.lu = LLVMBuildGEP2(b, et, cg_scratch(cg, n), &ao, 1, "");
  s.x = LLVMBuildGEP2(b, et, cg_buf(cg, n), &xo, 1, "");
  LLVMValueRef a = LLVMBuildGEP2(b, et, cg_buf(cg, n->in[0]), &ao, 1, "");
  LLVMValueRef rhs = LLVMBuildGEP2(b, et, cg_buf(cg, n->in[1]), &xo, 1, "");
  sv_fill(cu, &s, s.lu, a, N * N);
  sv_fill(cu, &s, s.x, rhs, NK); /* same element per thread: x may be b */
  barrier(cu);
  LLVMValueRef bad = LLVMConstInt(cg->t_i1, 0, 0);
  CgLoop l;
  LLVMValueRef c = cg_loop_begin(cg, &l, i64(cu, 0), i64(cu, N), &bad, 1);
  bad = LLVMBuildOr(b, bad, sv_column(cu, &s, c), "");
  cg_loop_end(cg, &l, &bad);
  sv_back(cu, &s);
  LLVMBasicBlockRef nan = cg_block(cg, "sv.singular");
  LLVMBasicBlockRef done = cg_block(cg, "sv.done");
  LLVMBuildCondBr(b, bad, nan, done);
  LLVMPositionBuilderAtEnd(b, nan);
  barrier(cu);
  sv_fill(cu, &s, s.x, NULL, NK);
  LLVMBuildBr(b, done);
  LLVMPositionBuilderAtEnd(b, done);
  cg_fail_if(cg, bad, RLX_ERR_SINGULAR);
  cu_kernel_end_n(cu, B, 1, 1, (unsigned)s.block); /* a block a system */
  return true;
}

bool cu_quant(Cu *cu, CgPlan *p, Node *n) {
  switch (n->op) {
  case OP_Q_CONV2D: return q_conv2d(cu, p, n);
  case OP_GROUPED_MATMUL: return grouped_matmul(cu, p, n);
  case OP_GROUPED_MATMUL_BACKWARD_WEIGHT: return grouped_bwd_weight(cu, p, n);
  case OP_DENSE_SOLVE: case OP_BATCHED_DENSE_SOLVE:
    return dense_solve(cu, p, n);
  default: return cu_unsupported(cu, n, NULL);
  }
}
