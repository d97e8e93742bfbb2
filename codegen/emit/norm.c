/* norm.c: layer_norm, rms_norm, group_norm and batch_norm_inference
 * (language.md 6.5) and their closed-form backward ops (6.9):
 * layer_norm_backward_input/gamma, rms_norm_, group_norm_ and
 * batch_norm_inference_backward_input/gamma/beta.
 *
 * A "unit" is one set of n elements that share statistics. layer_norm
 * and rms_norm view x as [outer, len, inner] around the normalized
 * axis: a unit is a row (inner == 1: the n elements are contiguous and
 * are folded with vector partial accumulators, threads over rows) or a
 * group of columns (inner > 1: vector lanes run across inner, each lane
 * keeps its own sums; threads over groups). group_norm and
 * batch_norm_inference see x as [N, C, HW] (HW: the spatial dims
 * flattened, 1 without any) and use rows: a unit is the contiguous
 * block of cpu channels of hw elements each (group_norm: one (n, group),
 * cpu = C/G; batch_norm_inference: one (n, c) plane, or with HW == 1 a
 * whole [C] row). With hw > 1 the per-channel operands are loaded once
 * per channel and the channel's hw elements run vectorized; with
 * hw == 1 they are vector loads beside x. batch_norm_inference reads
 * its statistics from the mean and var operands instead of computing
 * them.
 *
 * Computed statistics take two passes over the unit, which stays in
 * cache: mean, then the sum of squared deviations (no E[x^2] - E[x]^2
 * cancellation). Math is in the compute type (f16/bf16 in f32, rounded
 * once on store).
 *
 *   layer_norm, group_norm: mu = mean(x), r = 1/sqrt(mean((x-mu)^2) +
 *     eps), y = (x - mu) r gamma + beta.
 *   rms_norm: r = 1/sqrt(mean(x^2) + eps), y = x r gamma + beta.
 *   batch_norm_inference: r = 1/sqrt(var[c] + eps),
 *     y = (x - mean[c]) r gamma + beta.
 *   layer_norm/group_norm_backward_input: g = dy gamma, xh = (x-mu) r,
 *     dx = r (g - mean(g) - xh mean(g xh)).
 *   rms_norm_backward_input(x, gamma, beta, dy): m = mean(gamma dy x),
 *     dx = gamma dy r - x m r^3.
 *   batch_norm_inference_backward_input: dx = dy gamma r.
 *   *_backward_gamma: sum of dy xh (layer, group, batch) or dy x r
 *   (rms); *_backward_beta: sum of dy — over every element of the
 *   channel.
 *
 * Parameter gradients never split a sum across threads: stage 1 stores
 * (mu, r, x0) per unit in scratch (batch_norm: none, its statistics
 * are operands). layer/rms: stage 2 runs over lane groups of the
 * [outer, len*inner] view and sums over outer in order; with inner > 1
 * a stage 3 adds the inner partials of each channel in order.
 * group/batch norm: threads over channels, channel c folds its N
 * contiguous runs of HW elements in order. Row folds use NACC vector
 * accumulators. Results are bit-identical for any thread count.
 */
#include "codegen/emit/emit.h"

enum { P_GA, P_BE, P_MN, P_VR }; /* per-channel operands */

typedef struct {
  DType dt, cdt;
  int role, nin; /* CG_NORM_FWD..., operand count */
  bool rms, bn, col, nchw; /* nchw: group_norm, batch_norm_inference */
  bool pe; /* batch_norm rows (hw == 1): statistics per element */
  int64_t len, inner, outer; /* [outer, len, inner] around the channels */
  int64_t n;                 /* elements of a unit */
  int64_t nunit, cpu, hw;    /* row units: cpu channels of hw elements */
  int64_t nu;                /* units whose statistics stage 1 keeps */
  double eps;
  LLVMValueRef x, p[4], dy, y, st; /* body pointers */
  LLVMValueRef off;  /* row: offset of the unit; col: base of the group */
  LLVMValueRef j;    /* col: current index along the axis */
  LLVMValueRef u, cb; /* row: unit index, its first channel */
  LLVMValueRef cv[4]; /* row, hw > 1: the current channel's operands */
  LLVMValueRef sh, mu, r, a, c; /* unit statistics: shift x0, mean of
                                   x - x0, 1/sqrt(var + eps), sums */
} Nrm;

static LLVMValueRef add64(Cg *cg, LLVMValueRef a, LLVMValueRef b) {
  return LLVMBuildAdd(cg->b, a, b, "");
}

static LLVMValueRef mulc(Cg *cg, LLVMValueRef a, int64_t c) {
  return LLVMBuildMul(cg->b, a, cg_i64(cg, c), "");
}

static LLVMValueRef sp(Cg *cg, LLVMValueRef v, int lanes) {
  if (LLVMGetTypeKind(LLVMTypeOf(v)) == LLVMVectorTypeKind) return v;
  return cg_ops_splat(cg, v, lanes);
}

static LLVMValueRef K(Cg *cg, Nrm *S, double v, int lanes) {
  return cg_ops_splat(cg, cg_const(cg, S->dt, v), lanes);
}

#define FM(a, b2) LLVMBuildFMul(cg->b, (a), (b2), "")
#define FA(a, b2) LLVMBuildFAdd(cg->b, (a), (b2), "")
#define FS(a, b2) LLVMBuildFSub(cg->b, (a), (b2), "")

/* 1/sqrt(v + eps) */
static LLVMValueRef rsq(Cg *cg, Nrm *S, LLVMValueRef v) {
  int L = LLVMGetTypeKind(LLVMTypeOf(v)) == LLVMVectorTypeKind
              ? (int)LLVMGetVectorSize(LLVMTypeOf(v)) : 1;
  v = FA(v, K(cg, S, S->eps, L));
  LLVMValueRef sq = cg_intrinsic(cg, "llvm.sqrt", LLVMTypeOf(v), &v, 1);
  return LLVMBuildFDiv(cg->b, K(cg, S, 1, L), sq, "");
}

/* Per-channel operand k at the channel of element idx. */
static LLVMValueRef chan(Cg *cg, Nrm *S, int k, LLVMValueRef idx,
                         int lanes) {
  if (S->col)
    return cg_ops_splat(cg, cg_load(cg, S->dt, S->p[k], S->j), lanes);
  if (S->hw > 1) return sp(cg, S->cv[k], lanes);
  LLVMValueRef c = add64(cg, S->cb, LLVMBuildSub(cg->b, idx, S->off, ""));
  return cg_ops_vload(cg, S->dt, S->p[k], c, lanes);
}

/* Channel c (within the unit) starts: load its operands (hw > 1). */
static void chan_begin(Cg *cg, Nrm *S, LLVMValueRef c) {
  LLVMValueRef ch = add64(cg, S->cb, c);
  for (int k = 0; k < 4; k++)
    S->cv[k] = S->p[k] ? cg_load(cg, S->dt, S->p[k], ch) : NULL;
  if (!S->bn) return;
  S->mu = S->cv[P_MN];
  S->r = rsq(cg, S, S->cv[P_VR]);
}

static LLVMValueRef dyv(Cg *cg, Nrm *S, LLVMValueRef idx, int lanes) {
  return cg_ops_vload(cg, S->dt, S->dy, idx, lanes);
}

/* ---- per-element hooks ---- */

/* mean and 1/sqrt(var + eps) at element idx (batch_norm with hw == 1:
 * per element; otherwise the unit's or the channel's) */
static LLVMValueRef mu_of(Cg *cg, Nrm *S, LLVMValueRef idx, int L) {
  if (S->pe) return chan(cg, S, P_MN, idx, L);
  return sp(cg, S->mu, L);
}

static LLVMValueRef r_of(Cg *cg, Nrm *S, LLVMValueRef idx, int L) {
  if (S->pe) return rsq(cg, S, chan(cg, S, P_VR, idx, L));
  return sp(cg, S->r, L);
}

/* x - mean; computed statistics as (x - x0) - mean(x - x0): exact
 * shift for units with a large common offset */
static LLVMValueRef dev(Cg *cg, Nrm *S, LLVMValueRef x, LLVMValueRef idx,
                        int L) {
  if (S->bn) return FS(x, mu_of(cg, S, idx, L));
  return FS(FS(x, sp(cg, S->sh, L)), sp(cg, S->mu, L));
}

static LLVMValueRef f_shift(Cg *cg, LLVMValueRef x, LLVMValueRef idx,
                            int L, void *ctx) {
  Nrm *S = ctx;
  return FS(x, sp(cg, S->sh, L));
}

static LLVMValueRef f_dev2(Cg *cg, LLVMValueRef x, LLVMValueRef idx,
                           int L, void *ctx) {
  LLVMValueRef d = dev(cg, ctx, x, idx, L);
  return FM(d, d);
}

static LLVMValueRef f_sq(Cg *cg, LLVMValueRef x, LLVMValueRef idx, int L,
                         void *ctx) {
  return FM(x, x);
}

/* x-hat (layer, group, batch) or x (rms) */
static LLVMValueRef xhat(Cg *cg, Nrm *S, LLVMValueRef x, LLVMValueRef idx,
                         int L) {
  if (S->rms) return x;
  return FM(dev(cg, S, x, idx, L), r_of(cg, S, idx, L));
}

static LLVMValueRef f_g(Cg *cg, LLVMValueRef x, LLVMValueRef idx, int L,
                        void *ctx) {
  Nrm *S = ctx;
  return FM(dyv(cg, S, idx, L), chan(cg, S, P_GA, idx, L));
}

static LLVMValueRef f_gx(Cg *cg, LLVMValueRef x, LLVMValueRef idx, int L,
                         void *ctx) {
  Nrm *S = ctx;
  return FM(f_g(cg, x, idx, L, ctx), xhat(cg, S, x, idx, L));
}

static LLVMValueRef out_fwd(Cg *cg, LLVMValueRef x, LLVMValueRef idx,
                            int L, void *ctx) {
  Nrm *S = ctx;
  LLVMValueRef h = xhat(cg, S, x, idx, L);
  if (S->rms) h = FM(h, sp(cg, S->r, L));
  return FA(FM(h, chan(cg, S, P_GA, idx, L)), chan(cg, S, P_BE, idx, L));
}

static LLVMValueRef out_dx(Cg *cg, LLVMValueRef x, LLVMValueRef idx, int L,
                           void *ctx) {
  Nrm *S = ctx;
  LLVMValueRef g = f_g(cg, x, idx, L, ctx), r = r_of(cg, S, idx, L);
  if (S->bn) return FM(g, r);
  LLVMValueRef c = sp(cg, S->c, L);
  if (S->rms) /* g r - x m r^3 */
    return FS(FM(g, r), FM(FM(x, c), FM(r, FM(r, r))));
  LLVMValueRef t = FS(g, sp(cg, S->a, L));
  return FM(r, FS(t, FM(xhat(cg, S, x, idx, L), c)));
}

/* ---- unit drivers ---- */

/* Loop over the unit's channels (row units with hw > 1): before each
 * body, the channel's operands are loaded and S->off is moved to the
 * channel's first element. acc: a scalar carried through, or NULL. */
static void chan_loop_begin(Cg *cg, Nrm *S, CgLoop *l, LLVMValueRef *acc,
                            LLVMValueRef *off0) {
  *off0 = S->off;
  LLVMValueRef c = cg_loop_begin(cg, l, cg_i64(cg, 0), cg_i64(cg, S->cpu),
                                 acc, acc ? 1 : 0);
  chan_begin(cg, S, c);
  S->off = add64(cg, *off0, mulc(cg, c, S->hw));
}

/* Sum of f(base[off + j]), j < n: rows are folded with NACC vector
 * accumulators (latency-bound otherwise). */
#define NACC 4
static LLVMValueRef fold_row(Cg *cg, Nrm *S, LLVMValueRef base,
                             LLVMValueRef off, int64_t n, CgOpsMapFn f) {
  return cg_ops_row_fold_k(cg, S->dt, CG_RED_SUM, base, off, n,
                           cg_const(cg, S->dt, 0), f, S, NACC);
}

/* Sum of f(base[e]) over the unit's elements. pc: f reads per-channel
 * operands. */
static LLVMValueRef fold(Cg *cg, Nrm *S, LLVMValueRef base, int L,
                         CgOpsMapFn f, bool pc) {
  LLVMValueRef z = cg_const(cg, S->dt, 0);
  if (!S->col && (!pc || S->hw == 1))
    return fold_row(cg, S, base, S->off, S->n, f);
  CgLoop l;
  LLVMValueRef off0, acc;
  if (!S->col) {
    acc = z;
    chan_loop_begin(cg, S, &l, &acc, &off0);
    acc = FA(acc, fold_row(cg, S, base, S->off, S->hw, f));
    cg_loop_end(cg, &l, &acc);
    S->off = off0;
    return acc;
  }
  acc = cg_ops_splat(cg, z, L);
  S->j = cg_loop_begin(cg, &l, cg_i64(cg, 0), cg_i64(cg, S->len), &acc, 1);
  LLVMValueRef idx = add64(cg, S->off, mulc(cg, S->j, S->inner));
  LLVMValueRef x = cg_ops_vload(cg, S->dt, base, idx, L);
  acc = FA(acc, f ? f(cg, x, idx, L, S) : x);
  cg_loop_end(cg, &l, &acc);
  return acc;
}

/* dst[e] = f(src[e]) over the unit's elements. */
static void map(Cg *cg, Nrm *S, LLVMValueRef dst, int L, CgOpsMapFn f) {
  CgLoop l;
  if (!S->col && S->hw == 1) {
    cg_ops_row_map(cg, S->dt, dst, S->x, S->off, S->n, f, S);
  } else if (!S->col) {
    LLVMValueRef off0;
    chan_loop_begin(cg, S, &l, NULL, &off0);
    cg_ops_row_map(cg, S->dt, dst, S->x, S->off, S->hw, f, S);
    cg_loop_end(cg, &l, NULL);
    S->off = off0;
  } else {
    S->j = cg_loop_begin(cg, &l, cg_i64(cg, 0), cg_i64(cg, S->len), NULL,
                         0);
    LLVMValueRef idx = add64(cg, S->off, mulc(cg, S->j, S->inner));
    LLVMValueRef x = cg_ops_vload(cg, S->dt, S->x, idx, L);
    cg_ops_vstore(cg, S->dt, dst, idx, f(cg, x, idx, L, S), L);
    cg_loop_end(cg, &l, NULL);
  }
}

static LLVMValueRef mean(Cg *cg, Nrm *S, LLVMValueRef s, int L) {
  return LLVMBuildFDiv(cg->b, s, sp(cg, K(cg, S, (double)S->n, 1), L),
                       "");
}

/* mu (layer, group) and r of the unit (batch_norm: per channel, set by
 * chan_begin or read per element). */
static void stats(Cg *cg, Nrm *S, int L) {
  LLVMValueRef var;
  if (S->bn) return;
  if (S->rms) {
    var = mean(cg, S, fold(cg, S, S->x, L, f_sq, false), L);
  } else {
    S->sh = cg_ops_vload(cg, S->dt, S->x, S->off, L);
    S->mu = mean(cg, S, fold(cg, S, S->x, L, f_shift, false), L);
    var = mean(cg, S, fold(cg, S, S->x, L, f_dev2, false), L);
  }
  S->r = rsq(cg, S, var);
}

typedef void (*UnitFn)(Cg *cg, Nrm *S, int L);

/* vals: out, operands (x first, dy last), scratch (or out again) */
static void bind(Nrm *S, LLVMValueRef *v) {
  int nin = S->nin;
  S->y = v[0];
  S->x = v[1];
  S->p[P_GA] = nin > 2 ? v[2] : NULL;
  S->p[P_BE] = nin > 2 ? v[3] : NULL;
  S->p[P_MN] = S->bn ? v[4] : NULL;
  S->p[P_VR] = S->bn ? v[5] : NULL;
  S->dy = v[nin];
  S->st = v[nin + 1];
}

typedef struct {
  Nrm *S;
  UnitFn f;
} ColCtx;

static void col_body(Cg *cg, int lanes, LLVMValueRef base,
                     LLVMValueRef *vals, void *ctx) {
  ColCtx *C = ctx;
  bind(C->S, vals);
  C->S->off = base;
  C->f(cg, C->S, lanes);
}

/* Run f once per unit (rows or column groups), in parallel. */
static void units(Cg *cg, Nrm *S, LLVMValueRef *vals, UnitFn f) {
  int nv = S->nin + 2;
  if (S->col) {
    ColCtx C = {S, f};
    cg_ops_cols(cg, S->dt, S->outer, S->len, S->inner, 1, vals, nv, col_body,
                &C);
    return;
  }
  CgPar par; /* nunit: a dim (dynamic: rows, norm_dyn) */
  LLVMValueRef o = cg_par_begin(cg, &par, cg_dim(cg, S->nunit),
                                cg_grain(dim_bound(S->nunit), 4 * S->n), vals,
                                nv, true);
  bind(S, vals);
  int64_t cyc = S->len / S->cpu; /* units before the channels repeat */
  S->u = o;
  S->off = mulc(cg, o, S->n);
  S->cb = cyc > 1 ? mulc(cg, LLVMBuildSRem(cg->b, o, cg_i64(cg, cyc), ""),
                         S->cpu)
                  : cg_i64(cg, 0);
  f(cg, S, 1); /* row statistics are scalars */
  cg_par_end(cg, &par);
}

static void u_fwd(Cg *cg, Nrm *S, int L) {
  stats(cg, S, L);
  map(cg, S, S->y, L, out_fwd);
}

static void u_dx(Cg *cg, Nrm *S, int L) {
  stats(cg, S, L);
  if (!S->rms && !S->bn)
    S->a = mean(cg, S, fold(cg, S, S->x, L, f_g, true), L);
  if (!S->bn) S->c = mean(cg, S, fold(cg, S, S->x, L, f_gx, true), L);
  map(cg, S, S->y, L, out_dx);
}

/* Stage 1 of parameter gradients: (mu, r) of unit u into scratch. */
static void u_stats(Cg *cg, Nrm *S, int L) {
  stats(cg, S, L);
  LLVMValueRef u = S->u;
  if (S->col) {
    LLVMValueRef blk = cg_i64(cg, S->len * S->inner);
    LLVMValueRef o = LLVMBuildSDiv(cg->b, S->off, blk, "");
    u = add64(cg, mulc(cg, o, S->inner),
              LLVMBuildSRem(cg->b, S->off, blk, ""));
  }
  int L1 = S->col ? L : 1;
  LLVMValueRef nu = cg_i64(cg, S->nu);
  LLVMValueRef ur = add64(cg, u, nu); /* [mu | r | shift] */
  cg_ops_vstore(cg, S->cdt, S->st, ur, S->r, L1);
  if (S->rms) return;
  cg_ops_vstore(cg, S->cdt, S->st, u, S->mu, L1);
  cg_ops_vstore(cg, S->cdt, S->st, add64(cg, ur, nu), S->sh, L1);
}

/* Kind and role of each norm op. */
static const struct {
  Op op;
  signed char kind, role;
} NORM_OPS[] = {
    {OP_LAYER_NORM, CG_NORM_LAYER, CG_NORM_FWD},
    {OP_LAYER_NORM_BACKWARD_INPUT, CG_NORM_LAYER, CG_NORM_DX},
    {OP_LAYER_NORM_BACKWARD_GAMMA, CG_NORM_LAYER, CG_NORM_GAMMA},
    {OP_RMS_NORM, CG_NORM_RMS, CG_NORM_FWD},
    {OP_RMS_NORM_BACKWARD_INPUT, CG_NORM_RMS, CG_NORM_DX},
    {OP_RMS_NORM_BACKWARD_GAMMA, CG_NORM_RMS, CG_NORM_GAMMA},
    {OP_RMS_NORM_BACKWARD_BETA, CG_NORM_RMS, CG_NORM_BETA},
    {OP_GROUP_NORM, CG_NORM_GROUP, CG_NORM_FWD},
    {OP_GROUP_NORM_BACKWARD_INPUT, CG_NORM_GROUP, CG_NORM_DX},
    {OP_GROUP_NORM_BACKWARD_GAMMA, CG_NORM_GROUP, CG_NORM_GAMMA},
    {OP_GROUP_NORM_BACKWARD_BETA, CG_NORM_GROUP, CG_NORM_BETA},
    {OP_BATCH_NORM_INFERENCE, CG_NORM_BATCH, CG_NORM_FWD},
    {OP_BATCH_NORM_INFERENCE_BACKWARD_INPUT, CG_NORM_BATCH, CG_NORM_DX},
    {OP_BATCH_NORM_INFERENCE_BACKWARD_GAMMA, CG_NORM_BATCH, CG_NORM_GAMMA},
    {OP_BATCH_NORM_INFERENCE_BACKWARD_BETA, CG_NORM_BATCH, CG_NORM_BETA},
};

bool cg_norm_op(Op op, int *kind, int *role) {
  for (size_t i = 0; i < sizeof NORM_OPS / sizeof *NORM_OPS; i++)
    if (NORM_OPS[i].op == op) {
      *kind = NORM_OPS[i].kind;
      *role = NORM_OPS[i].role;
      return true;
    }
  return false;
}

/* Unit geometry of group_norm (cpu = C/G channels of HW elements per
 * (n, group)) and batch_norm_inference ((n, c) planes, or [C] rows
 * when HW == 1). */
static void init_nchw(Ctx *c, Nrm *S, Node *n) {
  if (S->bn) {
    if (S->inner > 1) {
      S->cpu = 1;
      S->hw = S->n = S->inner;
      DimStatus st = dim_mul(c, S->outer, S->len, &S->nunit); /* N C */
      RLX_ASSERT(st == DIM_OK);
    }
    S->nu = 0;
    S->pe = S->hw == 1;
    return;
  }
  int64_t g = ir_attr_int(n, ATTR_GROUPS, 1);
  S->cpu = S->len / g;
  S->hw = S->inner;
  S->n = S->cpu * S->inner;
  DimStatus st = dim_mul(c, S->outer, g, &S->nunit); /* dynamic: N G */
  RLX_ASSERT(st == DIM_OK);
  S->nu = dim_is_static(S->nunit) ? S->nunit : 0;
}

static void init(Ctx *c, Nrm *S, Node *n, const Type *xt) {
  int kind = CG_NORM_LAYER;
  cg_norm_op(n->op, &kind, &S->role);
  S->dt = xt->dt;
  S->cdt = xt->dt == DT_F64 ? DT_F64 : DT_F32;
  S->nin = n->nin;
  S->rms = kind == CG_NORM_RMS;
  S->bn = kind == CG_NORM_BATCH;
  bool nchw = S->nchw = kind == CG_NORM_GROUP || kind == CG_NORM_BATCH;
  S->eps = ir_attr_float(n, ATTR_EPS, S->rms ? 1e-6 : 1e-5);
  if (!type_is_static(xt) && nchw) { /* a dynamic N (norm_dyn) */
    S->outer = xt->dims[0];
    S->len = xt->dims[1];
    S->inner = 1;
    for (int d = 2; d < xt->rank; d++) S->inner *= xt->dims[d];
  } else if (!type_is_static(xt)) { /* rows under dynamic axes (norm_dyn) */
    int64_t ax = ir_attr_int(n, ATTR_AXIS, -1);
    ax += ax < 0 ? xt->rank : 0;
    S->outer = 1;
    for (int64_t d = 0; d < ax; d++) {
      DimStatus st = dim_mul(c, S->outer, xt->dims[d], &S->outer);
      RLX_ASSERT(st == DIM_OK);
    }
    S->len = xt->dims[ax];
    S->inner = 1;
  } else {
    cg_ops_split_axis(xt, nchw ? 1 : ir_attr_int(n, ATTR_AXIS, -1),
                      &S->outer, &S->len, &S->inner);
  }
  S->col = !nchw && S->inner > 1;
  S->n = S->cpu = S->len;
  S->hw = 1;
  S->nunit = S->outer;
  S->nu = type_is_static(xt) ? S->outer * S->inner : 0;
  if (nchw) init_nchw(c, S, n);
}

/* v: out, operands, scratch (or out again) */
static void load_vals(Cg *cg, Node *n, LLVMValueRef *v) {
  v[0] = cg_buf(cg, n);
  for (int i = 0; i < n->nin; i++) v[1 + i] = cg_buf(cg, n->in[i]);
  v[n->nin + 1] = cg_slot(cg, n)->scratch_bytes ? cg_scratch(cg, n) : v[0];
}

static bool cg_emit_norm(Cg *cg, Node *n) {
  Nrm S = {0};
  init(cg->ctx, &S, n, &n->in[0]->type);
  if (type_is_static(&n->type) && type_numel(&n->type) == 0) return true;
  LLVMValueRef v[8];
  load_vals(cg, n, v);
  units(cg, &S, v, S.role == CG_NORM_FWD ? u_fwd : u_dx);
  return true;
}

/* ---- parameter gradients ---- */

static int64_t cg_scratch_norm(Cg *cg, Node *n) {
  Nrm S = {0};
  init(cg->ctx, &S, n, &n->in[0]->type);
  if (S.role != CG_NORM_GAMMA && S.role != CG_NORM_BETA) return 0;
  int64_t part = S.col ? S.len * S.inner : 0; /* stage 3 partials */
  return (3 * S.nu + part) * dt_size(S.cdt);
}

typedef struct {
  Nrm *S;
  bool beta;
  DType pdt; /* dtype of the partial sums' destination */
} PCtx;

/* Statistic p[o*inner + (q % inner)] for the lanes q.. of column q. */
static LLVMValueRef stat_at(Cg *cg, Nrm *S, LLVMValueRef p, LLVMValueRef o,
                            LLVMValueRef q, int L) {
  if (S->inner == 1) return cg_ops_splat(cg, cg_load(cg, S->cdt, p, o), L);
  LLVMValueRef ob = mulc(cg, o, S->inner), v = NULL;
  LLVMTypeRef vt = cg_ops_vtype(cg, S->cdt, L);
  if (L > 1) v = LLVMGetUndef(vt);
  for (int k = 0; k < L; k++) {
    LLVMValueRef i = LLVMBuildSRem(cg->b, add64(cg, q, cg_i64(cg, k)),
                                   cg_i64(cg, S->inner), "");
    LLVMValueRef s = cg_load(cg, S->cdt, p, add64(cg, ob, i));
    if (L == 1) return s;
    v = LLVMBuildInsertElement(cg->b, v, s, cg_i32(cg, k), "");
  }
  return v;
}

/* Stage 1 scratch: [mu | r | shift] of nu units, in the compute type. */
static LLVMValueRef stat_base(Cg *cg, Nrm *S, int k) {
  return cg_gep(cg, S->st, cg_i64(cg, k * S->nu * dt_size(S->cdt)));
}

/* Stage 2 body (layer_norm, rms_norm): column group q of the
 * [outer, len*inner] view. */
static void p_body(Cg *cg, int L, LLVMValueRef q, LLVMValueRef *vals,
                   void *ctx) {
  PCtx *P = ctx;
  Nrm *S = P->S;
  bind(S, vals);
  int64_t w = S->len * S->inner;
  LLVMValueRef acc = K(cg, S, 0, L);
  CgLoop l;
  LLVMValueRef o = cg_loop_begin(cg, &l, cg_i64(cg, 0),
                                 cg_i64(cg, S->outer), &acc, 1);
  LLVMValueRef idx = add64(cg, q, mulc(cg, o, w));
  LLVMValueRef t = cg_ops_vload(cg, S->dt, S->dy, idx, L);
  if (!P->beta) {
    LLVMValueRef x = cg_ops_vload(cg, S->dt, S->x, idx, L);
    if (!S->rms)
      x = FS(FS(x, stat_at(cg, S, stat_base(cg, S, 2), o, q, L)),
             stat_at(cg, S, stat_base(cg, S, 0), o, q, L));
    t = FM(t, FM(x, stat_at(cg, S, stat_base(cg, S, 1), o, q, L)));
  }
  acc = FA(acc, t);
  cg_loop_end(cg, &l, &acc);
  LLVMValueRef dst = S->y;
  if (S->inner > 1) dst = stat_base(cg, S, 3);
  cg_ops_vstore(cg, P->pdt, dst, q, acc, L);
}

/* Stage 3 (inner > 1): out[c] = sum of the inner partials, in order. */
static void p_sum(Cg *cg, Nrm *S, LLVMValueRef *vals, int nv) {
  CgPar par;
  LLVMValueRef c = cg_par_begin(cg, &par, cg_i64(cg, S->len),
                                cg_grain(S->len, S->inner), vals, nv, true);
  S->st = vals[nv - 1];
  LLVMValueRef p = stat_base(cg, S, 3);
  LLVMValueRef acc = cg_const(cg, S->cdt, 0);
  CgLoop l;
  LLVMValueRef i = cg_loop_begin(cg, &l, cg_i64(cg, 0),
                                 cg_i64(cg, S->inner), &acc, 1);
  LLVMValueRef e = add64(cg, mulc(cg, c, S->inner), i);
  acc = FA(acc, cg_load(cg, S->cdt, p, e));
  cg_loop_end(cg, &l, &acc);
  cg_store(cg, S->dt, vals[0], c, acc);
  cg_par_end(cg, &par);
}

static LLVMValueRef f_dyxh(Cg *cg, LLVMValueRef x, LLVMValueRef idx, int L,
                           void *ctx) {
  Nrm *S = ctx;
  return FM(dyv(cg, S, idx, L), xhat(cg, S, x, idx, L));
}

/* Stage 2 of group_norm / batch_norm_inference, threads over channels:
 * out[c] = sum over n in order of the fold of dy (beta) or dy xh
 * (gamma) over the HW contiguous elements of (n, c). */
static void p_chan(Cg *cg, Nrm *S, LLVMValueRef *vals) {
  CgPar par;
  int64_t hw = S->inner, N = S->outer;
  LLVMValueRef c = cg_par_begin(cg, &par, cg_i64(cg, S->len),
                                cg_grain(S->len, 2 * N * hw), vals,
                                S->nin + 2, true);
  bind(S, vals);
  S->pe = false;
  S->cb = cg_i64(cg, 0);
  if (S->bn) chan_begin(cg, S, c); /* mean[c], r[c] */
  LLVMValueRef z = cg_const(cg, S->dt, 0), acc = z;
  CgLoop l;
  LLVMValueRef o = cg_loop_begin(cg, &l, cg_i64(cg, 0), cg_i64(cg, N),
                                 &acc, 1);
  if (!S->bn && S->role == CG_NORM_GAMMA) { /* unit (o, c / cpu) */
    LLVMValueRef u = LLVMBuildSDiv(cg->b, c, cg_i64(cg, S->cpu), "");
    u = add64(cg, mulc(cg, o, S->len / S->cpu), u);
    S->mu = cg_load(cg, S->cdt, stat_base(cg, S, 0), u);
    S->r = cg_load(cg, S->cdt, stat_base(cg, S, 1), u);
    S->sh = cg_load(cg, S->cdt, stat_base(cg, S, 2), u);
  }
  LLVMValueRef off = mulc(cg, add64(cg, mulc(cg, o, S->len), c), hw);
  bool beta = S->role == CG_NORM_BETA;
  acc = FA(acc, fold_row(cg, S, beta ? S->dy : S->x, off, hw,
                         beta ? NULL : f_dyxh));
  cg_loop_end(cg, &l, &acc);
  cg_store(cg, S->dt, S->y, c, acc);
  cg_par_end(cg, &par);
}

static bool cg_emit_norm_param(Cg *cg, Node *n) {
  Nrm S = {0};
  init(cg->ctx, &S, n, &n->in[0]->type);
  int64_t bytes = (int64_t)dt_size(S.dt) * S.len;
  if (type_numel(&n->in[0]->type) == 0) {
    cg_memset0(cg, cg_buf(cg, n), bytes);
    return true;
  }
  LLVMValueRef v[8];
  load_vals(cg, n, v);
  if (S.role == CG_NORM_GAMMA && !S.bn) units(cg, &S, v, u_stats);
  load_vals(cg, n, v);
  if (S.nchw) {
    p_chan(cg, &S, v);
    return true;
  }
  PCtx P = {&S, S.role == CG_NORM_BETA, S.inner > 1 ? S.cdt : S.dt};
  /* inner == 1: strips of 8 vector groups, 8 accumulators per row */
  cg_ops_cols(cg, S.dt, 1, S.outer, S.len * S.inner, S.inner == 1 ? 8 : 1, v,
              S.nin + 2, p_body, &P);
  if (S.inner > 1) {
    load_vals(cg, n, v);
    LLVMValueRef w[2] = {v[0], v[S.nin + 1]};
    p_sum(cg, &S, w, 2);
  }
  return true;
}

/* Dynamic sizes: layer_norm and rms_norm (and their input gradients)
 * over rows: the normalized axis and the later ones static (size 1),
 * the rows under dynamic axes before it; group_norm and
 * batch_norm_inference (and their input gradients) over a dynamic batch
 * N, the other axes static. */
static const char *norm_dyn(const Node *n) {
  const Type *t = &n->in[0]->type;
  Op op = n->op;
  if (op == OP_GROUP_NORM || op == OP_GROUP_NORM_BACKWARD_INPUT ||
      op == OP_BATCH_NORM_INFERENCE ||
      op == OP_BATCH_NORM_INFERENCE_BACKWARD_INPUT) {
    for (int d = 1; d < t->rank; d++)
      if (!dim_is_static(t->dims[d])) return "a dynamic axis other than N";
    return NULL;
  }
  if (op != OP_LAYER_NORM && op != OP_RMS_NORM &&
      op != OP_LAYER_NORM_BACKWARD_INPUT && op != OP_RMS_NORM_BACKWARD_INPUT)
    return "the op takes static sizes only for now";
  for (int i = 0; i < n->nin; i++)
    if (i && !type_is_static(&n->in[i]->type) &&
        !type_eq(&n->in[i]->type, t))
      return "a dynamic operand other than x and dy";
  return cg_dyn_rows(n, t);
}

const CgEmitter cg_emitter_norm = {cg_emit_norm, NULL, norm_dyn};
const CgEmitter cg_emitter_norm_param = {cg_emit_norm_param, cg_scratch_norm, NULL};
