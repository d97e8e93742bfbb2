/* emit_norm.c: layer_norm and rms_norm (language.md 6.5) and their
 * closed-form backward ops (6.9): layer_norm_backward_input/gamma,
 * rms_norm_backward_input/gamma/beta.
 *
 * The tensor is viewed as [outer, n, inner] around the normalized axis.
 * A "unit" is one set of n elements that share statistics: a row
 * (inner == 1: the n elements are contiguous and are folded with
 * vector partial accumulators, threads over rows) or a group of
 * columns (inner > 1: vector lanes run across inner, each lane keeps
 * its own sums; threads over groups). Statistics are computed in two
 * passes over the unit, which stays in cache: mean, then the sum of
 * squared deviations (no E[x^2] - E[x]^2 cancellation). Math is in the
 * compute type (f16/bf16 in f32, rounded once on store).
 *
 *   layer_norm: mu = mean(x), r = 1/sqrt(mean((x-mu)^2) + eps),
 *     y = (x - mu) r gamma + beta.
 *   rms_norm: r = 1/sqrt(mean(x^2) + eps), y = x r gamma + beta.
 *   layer_norm_backward_input(x, gamma, dy): g = dy gamma, xh = (x-mu) r,
 *     dx = r (g - mean(g) - xh mean(g xh)).
 *   rms_norm_backward_input(x, gamma, beta, dy): m = mean(gamma dy x),
 *     dx = gamma dy r - x m r^3.
 *   *_backward_gamma: sum of dy xh (layer) or dy x r (rms);
 *   rms_norm_backward_beta: sum of dy — over every non-normalized
 *     element, per channel.
 *
 * Parameter gradients never split a sum across threads: stage 1 stores
 * (mu, r) per unit in scratch; stage 2 runs over lane groups of the
 * [outer, n*inner] view and sums over outer in order; with inner > 1 a
 * stage 3 adds the inner partials of each channel in order. Results are
 * bit-identical for any thread count.
 */
#include "codegen/emit_ops.h"

typedef struct {
  DType dt, cdt;
  Op op;
  bool rms, col;
  int64_t len, inner, outer;
  double eps;
  LLVMValueRef x, ga, be, dy, y, st; /* body pointers */
  LLVMValueRef off;  /* row: offset of the row; col: base of the group */
  LLVMValueRef j;    /* col: current index along the axis */
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

/* Per-channel operand p at the channel of element idx. */
static LLVMValueRef chan(Cg *cg, Nrm *S, LLVMValueRef p, LLVMValueRef idx,
                         int lanes) {
  if (!S->col)
    return cg_ops_vload(cg, S->dt, p, LLVMBuildSub(cg->b, idx, S->off, ""),
                        lanes);
  return cg_ops_splat(cg, cg_load(cg, S->dt, p, S->j), lanes);
}

static LLVMValueRef dyv(Cg *cg, Nrm *S, LLVMValueRef idx, int lanes) {
  return cg_ops_vload(cg, S->dt, S->dy, idx, lanes);
}

/* ---- per-element hooks ---- */

/* x - mean, as (x - x0) - mean(x - x0): exact shift for rows with a
 * large common offset */
static LLVMValueRef dev(Cg *cg, Nrm *S, LLVMValueRef x, int L) {
  return FS(FS(x, sp(cg, S->sh, L)), sp(cg, S->mu, L));
}

static LLVMValueRef f_shift(Cg *cg, LLVMValueRef x, LLVMValueRef idx,
                            int L, void *ctx) {
  Nrm *S = ctx;
  return FS(x, sp(cg, S->sh, L));
}

static LLVMValueRef f_dev2(Cg *cg, LLVMValueRef x, LLVMValueRef idx,
                           int L, void *ctx) {
  LLVMValueRef d = dev(cg, ctx, x, L);
  return FM(d, d);
}

static LLVMValueRef f_sq(Cg *cg, LLVMValueRef x, LLVMValueRef idx, int L,
                         void *ctx) {
  return FM(x, x);
}

/* x-hat (layer) or x (rms) */
static LLVMValueRef xhat(Cg *cg, Nrm *S, LLVMValueRef x, int L) {
  if (S->rms) return x;
  return FM(dev(cg, S, x, L), sp(cg, S->r, L));
}

static LLVMValueRef f_g(Cg *cg, LLVMValueRef x, LLVMValueRef idx, int L,
                        void *ctx) {
  Nrm *S = ctx;
  return FM(dyv(cg, S, idx, L), chan(cg, S, S->ga, idx, L));
}

static LLVMValueRef f_gx(Cg *cg, LLVMValueRef x, LLVMValueRef idx, int L,
                         void *ctx) {
  Nrm *S = ctx;
  return FM(f_g(cg, x, idx, L, ctx), xhat(cg, S, x, L));
}

static LLVMValueRef out_fwd(Cg *cg, LLVMValueRef x, LLVMValueRef idx,
                            int L, void *ctx) {
  Nrm *S = ctx;
  LLVMValueRef h = xhat(cg, S, x, L);
  if (S->rms) h = FM(h, sp(cg, S->r, L));
  return FA(FM(h, chan(cg, S, S->ga, idx, L)), chan(cg, S, S->be, idx, L));
}

static LLVMValueRef out_dx(Cg *cg, LLVMValueRef x, LLVMValueRef idx, int L,
                           void *ctx) {
  Nrm *S = ctx;
  LLVMValueRef g = f_g(cg, x, idx, L, ctx), r = sp(cg, S->r, L);
  LLVMValueRef c = sp(cg, S->c, L);
  if (S->rms) /* g r - x m r^3 */
    return FS(FM(g, r), FM(FM(x, c), FM(r, FM(r, r))));
  LLVMValueRef t = FS(g, sp(cg, S->a, L));
  return FM(r, FS(t, FM(xhat(cg, S, x, L), c)));
}

/* ---- unit drivers ---- */

/* Sum of f(base[e]) over the unit's elements. */
static LLVMValueRef fold(Cg *cg, Nrm *S, LLVMValueRef base, int L,
                         CgOpsMapFn f) {
  LLVMValueRef z = cg_const(cg, S->dt, 0);
  if (!S->col)
    return cg_ops_row_fold(cg, S->dt, CG_RED_SUM, base, S->off, S->len, z,
                           f, S);
  LLVMValueRef acc = cg_ops_splat(cg, z, L);
  CgLoop l;
  S->j = cg_loop_begin(cg, &l, cg_i64(cg, 0), cg_i64(cg, S->len), &acc, 1);
  LLVMValueRef idx = add64(cg, S->off, mulc(cg, S->j, S->inner));
  LLVMValueRef x = cg_ops_vload(cg, S->dt, base, idx, L);
  acc = FA(acc, f ? f(cg, x, idx, L, S) : x);
  cg_loop_end(cg, &l, &acc);
  return acc;
}

/* dst[e] = f(src[e]) over the unit's elements. */
static void map(Cg *cg, Nrm *S, LLVMValueRef dst, int L, CgOpsMapFn f) {
  if (!S->col) {
    cg_ops_row_map(cg, S->dt, dst, S->x, S->off, S->len, f, S);
    return;
  }
  CgLoop l;
  S->j = cg_loop_begin(cg, &l, cg_i64(cg, 0), cg_i64(cg, S->len), NULL, 0);
  LLVMValueRef idx = add64(cg, S->off, mulc(cg, S->j, S->inner));
  LLVMValueRef x = cg_ops_vload(cg, S->dt, S->x, idx, L);
  cg_ops_vstore(cg, S->dt, dst, idx, f(cg, x, idx, L, S), L);
  cg_loop_end(cg, &l, NULL);
}

static LLVMValueRef mean(Cg *cg, Nrm *S, LLVMValueRef s, int L) {
  return LLVMBuildFDiv(cg->b, s, sp(cg, K(cg, S, (double)S->len, 1), L),
                       "");
}

/* mu (layer) and r of the unit. */
static void stats(Cg *cg, Nrm *S, int L) {
  LLVMValueRef var;
  if (S->rms) {
    var = mean(cg, S, fold(cg, S, S->x, L, f_sq), L);
  } else {
    S->sh = cg_ops_vload(cg, S->dt, S->x, S->off, L);
    S->mu = mean(cg, S, fold(cg, S, S->x, L, f_shift), L);
    var = mean(cg, S, fold(cg, S, S->x, L, f_dev2), L);
  }
  var = FA(var, sp(cg, K(cg, S, S->eps, 1), L));
  LLVMValueRef sq = cg_intrinsic(cg, "llvm.sqrt", LLVMTypeOf(var), &var, 1);
  S->r = LLVMBuildFDiv(cg->b, sp(cg, K(cg, S, 1, 1), L), sq, "");
}

typedef void (*UnitFn)(Cg *cg, Nrm *S, int L);

static void bind(Nrm *S, LLVMValueRef *v, int nin) {
  S->y = v[0];
  S->x = v[1];
  S->ga = nin > 2 ? v[2] : NULL;
  S->be = nin > 2 ? v[3] : NULL;
  S->dy = v[nin];
  S->st = v[nin + 1];
}

typedef struct {
  Nrm *S;
  UnitFn f;
  int nin;
} ColCtx;

static void col_body(Cg *cg, int lanes, LLVMValueRef base,
                     LLVMValueRef *vals, void *ctx) {
  ColCtx *C = ctx;
  bind(C->S, vals, C->nin);
  C->S->off = base;
  C->f(cg, C->S, lanes);
}

/* Run f once per unit (rows or column groups), in parallel. vals:
 * out, operands..., scratch (or out again). */
static void units(Cg *cg, Nrm *S, LLVMValueRef *vals, int nin, UnitFn f) {
  S->col = S->inner > 1;
  if (S->col) {
    ColCtx C = {S, f, nin};
    cg_ops_cols(cg, S->dt, S->outer, S->len, S->inner, vals, nin + 2,
                col_body, &C);
    return;
  }
  CgPar par;
  LLVMValueRef o = cg_par_begin(cg, &par, cg_i64(cg, S->outer),
                                cg_grain(S->outer, 4 * S->len), vals,
                                nin + 2, true);
  bind(S, vals, nin);
  S->off = mulc(cg, o, S->len);
  f(cg, S, 1); /* row statistics are scalars */
  cg_par_end(cg, &par);
}

static void u_fwd(Cg *cg, Nrm *S, int L) {
  stats(cg, S, L);
  map(cg, S, S->y, L, out_fwd);
}

static void u_dx(Cg *cg, Nrm *S, int L) {
  stats(cg, S, L);
  if (!S->rms) S->a = mean(cg, S, fold(cg, S, S->x, L, f_g), L);
  S->c = mean(cg, S, fold(cg, S, S->x, L, f_gx), L);
  map(cg, S, S->y, L, out_dx);
}

/* Stage 1 of parameter gradients: (mu, r) of unit u into scratch. */
static void u_stats(Cg *cg, Nrm *S, int L) {
  stats(cg, S, L);
  LLVMValueRef u = S->off;
  if (S->col) {
    LLVMValueRef blk = cg_i64(cg, S->len * S->inner);
    LLVMValueRef o = LLVMBuildSDiv(cg->b, u, blk, "");
    u = add64(cg, mulc(cg, o, S->inner), LLVMBuildSRem(cg->b, u, blk, ""));
  } else {
    u = LLVMBuildSDiv(cg->b, u, cg_i64(cg, S->len), "");
  }
  int L1 = S->col ? L : 1;
  LLVMValueRef nu = cg_i64(cg, S->outer * S->inner);
  LLVMValueRef ur = add64(cg, u, nu); /* [mu | r | shift] */
  cg_ops_vstore(cg, S->cdt, S->st, ur, S->r, L1);
  if (S->rms) return;
  cg_ops_vstore(cg, S->cdt, S->st, u, S->mu, L1);
  cg_ops_vstore(cg, S->cdt, S->st, add64(cg, ur, nu), S->sh, L1);
}

static void init(Nrm *S, Node *n, const Type *xt) {
  S->dt = xt->dt;
  S->cdt = xt->dt == DT_F64 ? DT_F64 : DT_F32;
  S->op = n->op;
  S->rms = n->op == OP_RMS_NORM || n->op == OP_RMS_NORM_BACKWARD_INPUT ||
           n->op == OP_RMS_NORM_BACKWARD_GAMMA;
  S->eps = ir_attr_float(n, ATTR_EPS, S->rms ? 1e-6 : 1e-5);
  cg_ops_split_axis(xt, ir_attr_int(n, ATTR_AXIS, -1), &S->outer, &S->len,
                    &S->inner);
}

static int load_vals(Cg *cg, Node *n, LLVMValueRef *v) {
  v[0] = cg_buf(cg, n);
  for (int i = 0; i < n->nin; i++) v[1 + i] = cg_buf(cg, n->in[i]);
  v[n->nin + 1] = cg_slot(cg, n)->scratch_bytes ? cg_scratch(cg, n) : v[0];
  return n->nin;
}

bool cg_emit_norm(Cg *cg, Node *n) {
  Nrm S = {0};
  init(&S, n, &n->in[0]->type);
  if (type_numel(&n->type) == 0) return true;
  LLVMValueRef v[8];
  int nin = load_vals(cg, n, v);
  units(cg, &S, v, nin, n->op == OP_LAYER_NORM || n->op == OP_RMS_NORM
                            ? u_fwd : u_dx);
  return true;
}

/* ---- parameter gradients ---- */

int64_t cg_scratch_norm(Cg *cg, Node *n) {
  if (n->op != OP_LAYER_NORM_BACKWARD_GAMMA &&
      n->op != OP_RMS_NORM_BACKWARD_GAMMA && n->op != OP_RMS_NORM_BACKWARD_BETA)
    return 0;
  Nrm S = {0};
  init(&S, n, &n->in[0]->type);
  int csz = dt_size(S.cdt);
  return (3 * S.outer * S.inner + (S.inner > 1 ? S.len * S.inner : 0)) * csz;
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

/* Stage 2 body: column group q of the [outer, len*inner] view. */
static void p_body(Cg *cg, int L, LLVMValueRef q, LLVMValueRef *vals,
                   void *ctx) {
  PCtx *P = ctx;
  Nrm *S = P->S;
  int nin = S->op == OP_LAYER_NORM_BACKWARD_GAMMA ? 2 : 4;
  bind(S, vals, nin);
  int64_t w = S->len * S->inner;
  LLVMValueRef acc = K(cg, S, 0, L), nu = cg_i64(cg, S->outer * S->inner);
  CgLoop l;
  LLVMValueRef o = cg_loop_begin(cg, &l, cg_i64(cg, 0),
                                 cg_i64(cg, S->outer), &acc, 1);
  LLVMValueRef idx = add64(cg, q, mulc(cg, o, w));
  LLVMValueRef t = cg_ops_vload(cg, S->dt, S->dy, idx, L);
  if (!P->beta) {
    LLVMValueRef x = cg_ops_vload(cg, S->dt, S->x, idx, L);
    int cs = dt_size(S->cdt);
    LLVMValueRef r1 = cg_gep(cg, S->st, mulc(cg, nu, cs));
    LLVMValueRef sh = cg_gep(cg, r1, mulc(cg, nu, cs));
    if (!S->rms)
      x = FS(FS(x, stat_at(cg, S, sh, o, q, L)),
             stat_at(cg, S, S->st, o, q, L));
    LLVMValueRef r = stat_at(cg, S, r1, o, q, L);
    t = FM(t, FM(x, r));
  }
  acc = FA(acc, t);
  cg_loop_end(cg, &l, &acc);
  LLVMValueRef dst = S->y;
  if (S->inner > 1) {
    int64_t part = 3 * S->outer * S->inner * dt_size(S->cdt);
    dst = cg_gep(cg, S->st, cg_i64(cg, part));
  }
  cg_ops_vstore(cg, P->pdt, dst, q, acc, L);
}

/* Stage 3 (inner > 1): out[c] = sum of the inner partials, in order. */
static void p_sum(Cg *cg, Nrm *S, LLVMValueRef *vals, int nv) {
  CgPar par;
  LLVMValueRef c = cg_par_begin(cg, &par, cg_i64(cg, S->len),
                                cg_grain(S->len, S->inner), vals, nv, true);
  int64_t part = 3 * S->outer * S->inner * dt_size(S->cdt);
  LLVMValueRef p = cg_gep(cg, vals[nv - 1], cg_i64(cg, part));
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

bool cg_emit_norm_param(Cg *cg, Node *n) {
  Nrm S = {0};
  init(&S, n, &n->in[0]->type);
  int64_t bytes = (int64_t)dt_size(S.dt) * S.len;
  if (S.outer * S.inner == 0) {
    cg_memset0(cg, cg_buf(cg, n), bytes);
    return true;
  }
  LLVMValueRef v[8];
  int nin = load_vals(cg, n, v);
  bool beta = n->op == OP_RMS_NORM_BACKWARD_BETA;
  if (!beta) units(cg, &S, v, nin, u_stats);
  nin = load_vals(cg, n, v);
  PCtx P = {&S, beta, S.inner > 1 ? S.cdt : S.dt};
  cg_ops_cols(cg, S.dt, 1, S.outer, S.len * S.inner, v, nin + 2, p_body,
              &P);
  if (S.inner > 1) {
    nin = load_vals(cg, n, v);
    LLVMValueRef w[2] = {v[0], v[nin + 1]};
    p_sum(cg, &S, w, 2);
  }
  return true;
}
