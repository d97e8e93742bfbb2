/* norm.c: the GPU kernels of the norm family (cuda.h, docs/gpu.md):
 * layer_norm, rms_norm, group_norm, batch_norm_inference and their
 * backward ops (_backward_input, _gamma, _beta). The math is the CPU
 * emitter's (emit/norm.c), in the compute type (f16/bf16 in f32,
 * rounded once on store); only the order of the sums differs.
 *
 * A "unit" is a set of elements sharing statistics. layer_norm and
 * rms_norm view x as [outer, C, inner] around the axis: unit u = (o, i)
 * holds the C elements o C inner + j inner + i (strided when inner > 1),
 * element j of channel j. group_norm views x as [N, C, HW]: unit
 * (n, g) is the contiguous run of C/G channels of HW elements each.
 *
 * - forward, _backward_input (layer, rms, group): one block per unit.
 *   Statistics as on the CPU: shift x0 = the unit's first element,
 *   mu = mean(x - x0), var = mean(((x - x0) - mu)^2) (two passes, no
 *   E[x^2] - E[x]^2), r = 1/sqrt(var + eps); rms: r = 1/sqrt(mean(x^2)
 *   + eps). Each sum: thread t folds j = t, t + B, ... in order, then
 *   cu_block_reduce (a fixed order: the same bits every run).
 * - batch_norm_inference and its _backward_input: elementwise (the
 *   statistics are operands), one thread per element.
 * - _gamma, _beta: layer/rms over rows of >= 32 contiguous channels
 *   (inner 1, outer >= 2): a column reduction (cu_col_reduce: coalesced
 *   reads, about 512 blocks, fixed order, partials after the statistics
 *   in scratch). Otherwise one block per channel c folds its outer *
 *   inner (layer, rms) or N * HW (group, batch) elements in a fixed
 *   order (few channels over many rows use few SMs). No atomics.
 *   layer/rms/group _gamma first run a stage-1 kernel (one block per
 *   unit) that stores (mu, r, x0) of every unit in the node's workspace
 *   scratch (cu_norm_scratch).
 */
#include "codegen/cuda/cuda.h"

#include <stdint.h>
#include <stdio.h>

typedef struct {
  Node *n;
  DType dt, cdt;        /* x's dtype, the statistics' (f32 or f64) */
  int kind, role;
  double eps;
  int64_t outer, C, inner; /* x as [outer, C, inner] around the channels */
  int64_t U, len;       /* units, elements per unit */
  /* outer and U are sizes: a dynamic batch makes them dynamic (forward
   * and backward_input: cu_dyn_why; the pass lower_norm_params leaves
   * no parameter-gradient op with dynamic sizes) */
  int64_t G, cpu;       /* groups (1 but for group_norm), channels each */
  /* kernel values */
  LLVMValueRef x, ga, be, mn, vr, dy, st; /* operands, scratch */
  LLVMValueRef base, cb; /* unit: its first element, its first channel */
  LLVMValueRef ch;       /* parameter gradients: the block's channel */
  LLVMValueRef sh, mu, r, a, c; /* shift x0, statistics, mean(g), mean(g xh) */
} Nm;

/* Node n's geometry; false when n is no norm op. */
static bool nm_init(Ctx *ctx, Nm *S, Node *n) {
  int kind, role;
  if (!cg_norm_op(n->op, &kind, &role)) return false;
  const Type *t = &n->in[0]->type;
  *S = (Nm){.n = n, .dt = t->dt, .cdt = t->dt == DT_F64 ? DT_F64 : DT_F32,
            .kind = kind, .role = role};
  bool nchw = S->kind == CG_NORM_GROUP || S->kind == CG_NORM_BATCH;
  S->eps = ir_attr_float(n, ATTR_EPS, S->kind == CG_NORM_RMS ? 1e-6 : 1e-5);
  int64_t ax = nchw ? 1 : ir_attr_int(n, ATTR_AXIS, -1), o = 1;
  ax += ax < 0 ? t->rank : 0;
  S->C = t->dims[ax], S->inner = 1;
  for (int i = (int)ax + 1; i < t->rank; i++) S->inner *= t->dims[i];
  for (int i = 0; i < ax; i++) dim_mul(ctx, o, t->dims[i], &o);
  S->outer = o;
  S->G = S->kind == CG_NORM_GROUP ? ir_attr_int(n, ATTR_GROUPS, 1) : 1;
  S->cpu = S->C / S->G;
  dim_mul(ctx, S->outer, S->kind == CG_NORM_GROUP ? S->G : S->inner, &S->U);
  S->len = S->kind == CG_NORM_GROUP ? S->cpu * S->inner : S->C;
  return true;
}

/* Bytes of a _gamma op's unit statistics [mu | r | x0] in scratch
 * (rounded up to 8), 0 for other roles and batch norm. */
static int64_t nm_stats_bytes(const Nm *S) {
  if (S->role != CG_NORM_GAMMA || S->kind == CG_NORM_BATCH) return 0;
  return (3 * S->U * dt_size(S->cdt) + 7) / 8 * 8;
}

/* The operand pointers (x first, dy last; scratch) in the kernel. */
static void nm_bind(Cu *cu, Nm *S) {
  Cg *cg = cu->dev;
  Node *n = S->n;
  S->x = cg_buf(cg, n->in[0]);
  S->ga = n->nin > 2 ? cg_buf(cg, n->in[1]) : NULL;
  S->be = S->role == CG_NORM_FWD ? cg_buf(cg, n->in[2]) : NULL;
  S->mn = S->kind == CG_NORM_BATCH ? cg_buf(cg, n->in[3]) : NULL;
  S->vr = S->kind == CG_NORM_BATCH ? cg_buf(cg, n->in[4]) : NULL;
  S->dy = S->role != CG_NORM_FWD ? cg_buf(cg, n->in[n->nin - 1]) : NULL;
  S->st = cg_slot(cg, n)->scratch_bytes ? cg_scratch(cg, n) : NULL;
}

#define FM(a, b2) LLVMBuildFMul(cg->b, (a), (b2), "")
#define FA(a, b2) LLVMBuildFAdd(cg->b, (a), (b2), "")
#define FS(a, b2) LLVMBuildFSub(cg->b, (a), (b2), "")

/* 1/sqrt(v + eps) (sqrt.rn, div.rn) */
static LLVMValueRef rsq(Cu *cu, Nm *S, LLVMValueRef v) {
  Cg *cg = cu->dev;
  v = FA(v, cg_const(cg, S->dt, S->eps));
  LLVMValueRef q = cg_intrinsic(cg, "llvm.sqrt", LLVMTypeOf(v), &v, 1);
  return LLVMBuildFDiv(cg->b, cg_const(cg, S->dt, 1), q, "");
}

static LLVMValueRef mean(Cu *cu, Nm *S, LLVMValueRef s) {
  return LLVMBuildFDiv(cu->dev->b, s, cg_const(cu->dev, S->dt,
                                               (double)S->len), "");
}

/* ---- elements of the current unit (layer, rms, group) ---- */

/* Element j of the unit: its offset in x, its channel. */
static LLVMValueRef off_of(Cu *cu, Nm *S, LLVMValueRef j) {
  return add(cu, S->base, mul(cu, j, S->kind == CG_NORM_GROUP ? 1 : S->inner));
}
static LLVMValueRef chan_of(Cu *cu, Nm *S, LLVMValueRef j) {
  return S->kind == CG_NORM_GROUP ? add(cu, S->cb, udiv(cu, j, S->inner)) : j;
}

static LLVMValueRef ld(Cu *cu, Nm *S, LLVMValueRef p, LLVMValueRef j) {
  return cg_load(cu->dev, S->dt, p, off_of(cu, S, j));
}
static LLVMValueRef ldc(Cu *cu, Nm *S, LLVMValueRef p, LLVMValueRef j) {
  return cg_load(cu->dev, S->dt, p, chan_of(cu, S, j));
}

typedef LLVMValueRef (*ElemFn)(Cu *cu, Nm *S, LLVMValueRef j);

/* Sum of f(j), j < cnt: thread t takes j = t, t + B, ... in order, then
 * the block's sum (cu_block_reduce). Every thread gets it. */
static LLVMValueRef fold(Cu *cu, Nm *S, int64_t cnt, int block, ElemFn f) {
  Cg *cg = cu->dev;
  LLVMValueRef acc = cg_const(cg, S->dt, 0), tid = cu_tid(cu);
  CgLoop l;
  LLVMValueRef it = cg_loop_begin(cg, &l, i64(cu, 0),
                                  i64(cu, (cnt + block - 1) / block), &acc, 1);
  LLVMValueRef j = add(cu, mul(cu, it, block), tid);
  LLVMValueRef in = ult(cu, j, cnt);
  LLVMValueRef v = f(cu, S, LLVMBuildSelect(cg->b, in, j, i64(cu, 0), ""));
  acc = LLVMBuildSelect(cg->b, in, FA(acc, v), acc, "");
  cg_loop_end(cg, &l, &acc);
  return cu_block_reduce(cu, S->dt, CG_RED_SUM, acc, block);
}

/* y[off(j)] = f(j) for the unit's j = t, t + B, ... */
static void map(Cu *cu, Nm *S, int block, ElemFn f) {
  Cg *cg = cu->dev;
  CgLoop l;
  LLVMValueRef it = cg_loop_begin(cg, &l, i64(cu, 0),
                                  i64(cu, (S->len + block - 1) / block),
                                  NULL, 0);
  LLVMValueRef j = add(cu, mul(cu, it, block), cu_tid(cu));
  LLVMBasicBlockRef go = cg_block(cg, "norm.go");
  LLVMBasicBlockRef skip = cg_block(cg, "norm.skip");
  LLVMBuildCondBr(cg->b, ult(cu, j, S->len), go, skip);
  LLVMPositionBuilderAtEnd(cg->b, go);
  cg_store(cg, S->dt, cg_buf(cg, S->n), off_of(cu, S, j), f(cu, S, j));
  LLVMBuildBr(cg->b, skip);
  LLVMPositionBuilderAtEnd(cg->b, skip);
  cg_loop_end(cg, &l, NULL);
}

static LLVMValueRef e_shift(Cu *cu, Nm *S, LLVMValueRef j) {
  Cg *cg = cu->dev;
  return FS(ld(cu, S, S->x, j), S->sh);
}

/* x - mean as the CPU computes it: (x - x0) - mu */
static LLVMValueRef dev(Cu *cu, Nm *S, LLVMValueRef j) {
  Cg *cg = cu->dev;
  return FS(e_shift(cu, S, j), S->mu);
}

static LLVMValueRef e_dev2(Cu *cu, Nm *S, LLVMValueRef j) {
  Cg *cg = cu->dev;
  LLVMValueRef d = dev(cu, S, j);
  return FM(d, d);
}

static LLVMValueRef e_sq(Cu *cu, Nm *S, LLVMValueRef j) {
  Cg *cg = cu->dev;
  LLVMValueRef x = ld(cu, S, S->x, j);
  return FM(x, x);
}

/* x-hat (layer, group) or x (rms) */
static LLVMValueRef xhat(Cu *cu, Nm *S, LLVMValueRef j) {
  Cg *cg = cu->dev;
  if (S->kind == CG_NORM_RMS) return ld(cu, S, S->x, j);
  return FM(dev(cu, S, j), S->r);
}

/* g = dy gamma */
static LLVMValueRef e_g(Cu *cu, Nm *S, LLVMValueRef j) {
  Cg *cg = cu->dev;
  return FM(ld(cu, S, S->dy, j), ldc(cu, S, S->ga, j));
}

static LLVMValueRef e_gx(Cu *cu, Nm *S, LLVMValueRef j) {
  Cg *cg = cu->dev;
  return FM(e_g(cu, S, j), xhat(cu, S, j));
}

/* layer, group: xh gamma + beta; rms: (x r) gamma + beta */
static LLVMValueRef out_fwd(Cu *cu, Nm *S, LLVMValueRef j) {
  Cg *cg = cu->dev;
  LLVMValueRef h = xhat(cu, S, j);
  if (S->kind == CG_NORM_RMS) h = FM(h, S->r);
  return FA(FM(h, ldc(cu, S, S->ga, j)), ldc(cu, S, S->be, j));
}

/* layer, group: r ((g - mean(g)) - xh mean(g xh));
 * rms: g r - (x mean(g x)) r^3 */
static LLVMValueRef out_dx(Cu *cu, Nm *S, LLVMValueRef j) {
  Cg *cg = cu->dev;
  LLVMValueRef g = e_g(cu, S, j), r = S->r;
  if (S->kind == CG_NORM_RMS)
    return FS(FM(g, r), FM(FM(ld(cu, S, S->x, j), S->c), FM(r, FM(r, r))));
  return FM(r, FS(FS(g, S->a), FM(xhat(cu, S, j), S->c)));
}

/* The unit's statistics: S->sh, S->mu (layer, group), S->r. */
static void stats(Cu *cu, Nm *S, int block) {
  LLVMValueRef var;
  if (S->kind == CG_NORM_RMS) {
    var = mean(cu, S, fold(cu, S, S->len, block, e_sq));
  } else {
    S->sh = cg_load(cu->dev, S->dt, S->x, S->base);
    S->mu = mean(cu, S, fold(cu, S, S->len, block, e_shift));
    var = mean(cu, S, fold(cu, S, S->len, block, e_dev2));
  }
  S->r = rsq(cu, S, var);
}

/* The launch of `grid` blocks or threads needs grid < 2^31. */
static bool grid_ok(Cu *cu, Nm *S, int64_t grid) {
  return grid <= INT32_MAX ||
         cu_unsupported(cu, S->n, "more than 2^31 - 1 blocks");
}

/* One block per unit: forward, backward_input, or (role gamma) stage 1,
 * which stores [mu | r | x0] of every unit in scratch (compute type). */
static bool unit_kernel(Cu *cu, CgPlan *p, Nm *S) {
  Cg *cg = cu->dev;
  if (!grid_ok(cu, S, dim_bound(S->U))) return false;
  int block = cu_block_for(S->len);
  char what[64];
  snprintf(what, sizeof what, "%s%s", op_name(S->n->op),
           S->role == CG_NORM_GAMMA ? "_stats" : "");
  cu_kernel_begin(cu, p, what);
  nm_bind(cu, S);
  LLVMValueRef u = cu_ctaid(cu);
  S->base = S->kind == CG_NORM_GROUP
                ? mul(cu, u, S->len)
                : add(cu, mul(cu, udiv(cu, u, S->inner), S->C * S->inner),
                      urem(cu, u, S->inner));
  S->cb = S->kind == CG_NORM_GROUP ? mul(cu, urem(cu, u, S->G), S->cpu) : NULL;
  stats(cu, S, block);
  if (S->role == CG_NORM_FWD) {
    map(cu, S, block, out_fwd);
  } else if (S->role == CG_NORM_DX) {
    if (S->kind != CG_NORM_RMS)
      S->a = mean(cu, S, fold(cu, S, S->len, block, e_g));
    S->c = mean(cu, S, fold(cu, S, S->len, block, e_gx));
    map(cu, S, block, out_dx);
  } else {
    cu_guard(cu, LLVMBuildICmp(cg->b, LLVMIntEQ, cu_tid(cu), i64(cu, 0), ""));
    LLVMValueRef v[3] = {S->mu, S->r, S->sh};
    for (int k = 0; k < 3; k++)
      if (v[k]) cg_store(cg, S->cdt, S->st, add(cu, u, i64(cu, k * S->U)),
                         v[k]);
  }
  cu_kernel_end_n(cu, S->U, 1, 1, (unsigned)block);
  return true;
}

/* batch_norm_inference forward and backward_input, one thread per
 * element: r = 1/sqrt(var[c] + eps), y = ((x - mean[c]) r) gamma[c] +
 * beta[c]; dx = (dy gamma[c]) r. */
static bool bn_kernel(Cu *cu, CgPlan *p, Nm *S) {
  Cg *cg = cu->dev;
  int64_t N = cu_numel(cu, &S->n->type);
  if (!grid_ok(cu, S, (int64_t)cu_blocks_for(dim_bound(N), EW_BLOCK)))
    return false;
  cu_kernel_begin(cu, p, op_name(S->n->op));
  nm_bind(cu, S);
  LLVMValueRef i = cu_gid(cu);
  cu_guard(cu, ult(cu, i, N));
  LLVMValueRef c = urem(cu, udiv(cu, i, S->inner), S->C);
  LLVMValueRef r = rsq(cu, S, cg_load(cg, S->dt, S->vr, c));
  LLVMValueRef ga = cg_load(cg, S->dt, S->ga, c), y;
  if (S->role == CG_NORM_DX) {
    y = FM(FM(cg_load(cg, S->dt, S->dy, i), ga), r);
  } else {
    LLVMValueRef d = FS(cg_load(cg, S->dt, S->x, i),
                        cg_load(cg, S->dt, S->mn, c));
    y = FA(FM(FM(d, r), ga), cg_load(cg, S->dt, S->be, c));
  }
  cg_store(cg, S->dt, cg_buf(cg, S->n), i, y);
  cu_kernel_end_n(cu, N, EW_BLOCK, 1, EW_BLOCK);
  return true;
}

/* ---- parameter gradients: columns, or one block per channel ---- */

/* Channel S->ch's element k of outer * inner: dy (beta) or dy xh (gamma),
 * the unit's statistics from scratch (batch: mean[c], r[c] in S->mu,
 * S->r). */
static LLVMValueRef e_param(Cu *cu, Nm *S, LLVMValueRef k) {
  Cg *cg = cu->dev;
  LLVMValueRef o = udiv(cu, k, S->inner);
  LLVMValueRef off = add(cu, mul(cu, add(cu, mul(cu, o, S->C), S->ch),
                                 S->inner), urem(cu, k, S->inner));
  LLVMValueRef dy = cg_load(cg, S->dt, S->dy, off);
  if (S->role == CG_NORM_BETA) return dy;
  LLVMValueRef x = cg_load(cg, S->dt, S->x, off), mu = S->mu, r = S->r;
  if (S->kind != CG_NORM_BATCH) {
    LLVMValueRef u = S->kind == CG_NORM_GROUP
                         ? add(cu, mul(cu, o, S->G), udiv(cu, S->ch, S->cpu))
                         : k;
    r = cg_load(cg, S->cdt, S->st, add(cu, u, i64(cu, S->U)));
    if (S->kind == CG_NORM_RMS) return FM(dy, FM(x, r));
    mu = cg_load(cg, S->cdt, S->st, u);
    x = FS(x, cg_load(cg, S->cdt, S->st, add(cu, u, i64(cu, 2 * S->U))));
  }
  return FM(dy, FM(FS(x, mu), r));
}

/* layer/rms _gamma and _beta over rows of C >= 32 contiguous channels
 * (inner 1, outer >= 2) as a column reduction (cu_col_reduce): coalesced
 * [outer, C] reads spread over about 512 blocks; the partials follow the
 * statistics in scratch. */
static bool nm_col(const Nm *S, CuCol *c) {
  *c = (CuCol){.n = S->n, .dt = S->dt, .kind = CG_RED_SUM,
               .part_off = nm_stats_bytes(S)};
  return (S->kind == CG_NORM_LAYER || S->kind == CG_NORM_RMS) &&
         S->inner == 1 && cu_col_plan(c, S->outer, S->C);
}

static void col_bind(Cu *cu, CuCol *c) { nm_bind(cu, c->ctx); }

static LLVMValueRef col_e(Cu *cu, CuCol *c, LLVMValueRef row,
                          LLVMValueRef col) {
  Nm *S = c->ctx;
  S->ch = col;
  return e_param(cu, S, row);
}

static void col_out(Cu *cu, CuCol *c, LLVMValueRef col, LLVMValueRef v) {
  cg_store(cu->dev, c->dt, cg_buf(cu->dev, c->n), col, v);
}

static bool param_kernel(Cu *cu, CgPlan *p, Nm *S) {
  Cg *cg = cu->dev;
  int64_t cnt = S->outer * S->inner;
  if (S->C == 0) return true;
  if (!grid_ok(cu, S, S->C)) return false;
  if (cnt > 0 && S->len > 0 && S->role == CG_NORM_GAMMA && S->kind != CG_NORM_BATCH &&
      !unit_kernel(cu, p, S))
    return false;
  CuCol c;
  if (cnt > 0 && nm_col(S, &c)) {
    S->mu = S->r = NULL;
    c.elem = col_e, c.finish = col_out, c.bind = col_bind, c.ctx = S;
    cu_col_reduce(cu, p, &c, op_name(S->n->op));
    return true;
  }
  int block = cu_block_for(cnt);
  cu_kernel_begin(cu, p, op_name(S->n->op));
  nm_bind(cu, S);
  S->ch = cu_ctaid(cu);
  S->mu = S->r = NULL;
  if (S->kind == CG_NORM_BATCH && S->role == CG_NORM_GAMMA) {
    S->mu = cg_load(cg, S->dt, S->mn, S->ch);
    S->r = rsq(cu, S, cg_load(cg, S->dt, S->vr, S->ch));
  }
  LLVMValueRef v = cnt ? fold(cu, S, cnt, block, e_param)
                       : cg_const(cg, S->dt, 0); /* no rows: zeros */
  cu_guard(cu, LLVMBuildICmp(cg->b, LLVMIntEQ, cu_tid(cu), i64(cu, 0), ""));
  cg_store(cg, S->dt, cg_buf(cg, S->n), S->ch, v);
  cu_kernel_end(cu, (unsigned)S->C, (unsigned)block);
  return true;
}

bool cu_norm(Cu *cu, CgPlan *p, Node *n) {
  Nm S;
  if (!nm_init(cu->dev->ctx, &S, n)) return cu_unsupported(cu, n, NULL);
  if (!dt_is_float(S.dt)) return cu_bad_dtype(cu, n, S.dt);
  if (S.role == CG_NORM_GAMMA || S.role == CG_NORM_BETA) return param_kernel(cu, p, &S);
  if (type_is_static(&n->type) && type_numel(&n->type) == 0) return true;
  if (S.kind == CG_NORM_BATCH) return bn_kernel(cu, p, &S);
  return unit_kernel(cu, p, &S);
}

int64_t cu_norm_scratch(Cu *cu, const Node *n) {
  Nm S;
  CuCol c;
  if (!nm_init(cu->dev->ctx, &S, (Node *)n) ||
      (S.role != CG_NORM_GAMMA && S.role != CG_NORM_BETA))
    return 0;
  int64_t st = nm_stats_bytes(&S);
  return S.outer * S.inner > 0 && nm_col(&S, &c) ? st + cu_col_scratch(&c)
                                                 : st;
}
