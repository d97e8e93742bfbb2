/* reduce.c: reductions (reduce_sum/mean/max/min/prod over any set
 * of axes), softmax / log_softmax over any axis, cumsum, softmax
 * cross-entropy and topk.
 *
 * Reductions: the input dims are canonicalized (size-1 dims dropped,
 * neighbouring dims of the same kind merged) into alternating kept and
 * reduced groups. The output is filled with the identity, then the
 * input is visited in row-major order and each element combined into
 * its output element, so every output element accumulates its inputs
 * in one fixed order. An innermost reduced group is folded with vector
 * partial accumulators (fixed width and tree: still a fixed order); an
 * innermost kept group is an elementwise update that LLVM vectorizes.
 * The parallel loop splits the first kept group (blocks of 256 when it
 * is innermost), never a reduced one, so results are bit-identical for
 * any thread count. f16/bf16 accumulate each output element in f32.
 * reduce_mean divides the sum by the element count (0/0 = NaN for an
 * empty reduction, as NumPy).
 *
 * softmax / log_softmax / cumsum work on the [outer, n, inner] view of
 * the axis: inner == 1 rows are folded with vector partials; otherwise
 * whole row segments are streamed (running max/sum per column in the
 * node's scratch for softmax, the previous output row for cumsum),
 * never a column walked with a large stride. Softmax is numerically
 * stable (x - max before exp); log_softmax is (x - max) - log(sum) and
 * the cross-entropy loss (max - x[label]) + log(sum), sum = sum of
 * exp(x - max): never x - (max + log(sum)), which cancels to 0 (or to a
 * multiple of the ulp of x) once |x| >> log(sum), e.g. a row of equal
 * logits 1e8 in f32 (the loss is log C).
 *
 * Entry points: cg_emit_reduce, cg_emit_softmax, cg_emit_cumsum,
 * cg_emit_softmax_xent, cg_emit_topk (and cg_emit_cumsum_backward in
 * backward.c, which reuses the cumsum kernel through
 * cg_ops_cumsum below).
 */
#include "codegen/emit/emit.h"

#include "runtime/rlxrt.h"

#include <string.h>

/* ---------------- reductions ---------------- */

typedef struct {
  int nd, nred;
  int64_t size[RLX_MAX_RANK];
  bool red[RLX_MAX_RANK];
  int64_t istr[RLX_MAX_RANK], ostr[RLX_MAX_RANK];
} RShape;

typedef struct {
  Cg *cg;
  DType dt;
  CgRed r;
  bool mean, direct;
  double count;
  int64_t dcount;     /* a dynamic count (a dim), else 0 */
  RShape s;
  int p;              /* parallel (first kept) group, -1 if none */
  int64_t blk;        /* block of group p per parallel unit */
  LLVMValueRef y, x;  /* output, input (body copies) */
} Red;

/* Sizes and strides are sizes (dim_mul): with dynamic axes, any group
 * and the strides of the groups before the last dynamic one may be
 * dynamic (read at run time). */
static void rshape(Ctx *c, const Node *n, RShape *s) {
  const Type *t = &n->in[0]->type;
  bool red[RLX_MAX_RANK] = {false};
  int k;
  const int64_t *ax = ir_attr_ints(n, ATTR_AXES, &k);
  for (int i = 0; i < t->rank; i++) red[i] = ax == NULL;
  for (int i = 0; ax && i < k; i++)
    red[ax[i] < 0 ? ax[i] + t->rank : ax[i]] = true;
  s->nd = s->nred = 0;
  for (int i = 0; i < t->rank; i++) {
    if (t->dims[i] == 1) continue;
    if (s->nd > 0 && s->red[s->nd - 1] == red[i]) {
      int64_t *z = &s->size[s->nd - 1];
      if (dim_is_static(*z) && dim_is_static(t->dims[i])) {
        *z *= t->dims[i];
      } else {
        DimStatus st = dim_mul(c, *z, t->dims[i], z);
        RLX_ASSERT(st == DIM_OK);
      }
      continue;
    }
    s->size[s->nd] = t->dims[i];
    s->red[s->nd++] = red[i];
  }
  if (s->nd == 0) { /* a single element: one kept group of 1 */
    s->size[0] = 1;
    s->red[0] = false;
    s->nd = 1;
  }
  int64_t is = 1, os = 1;
  for (int i = s->nd - 1; i >= 0; i--) {
    s->istr[i] = is;
    s->ostr[i] = s->red[i] ? 0 : os;
    s->nred += s->red[i];
    DimStatus st = dim_mul(c, is, s->size[i], &is);
    if (st == DIM_OK && !s->red[i]) st = dim_mul(c, os, s->size[i], &os);
    RLX_ASSERT(st == DIM_OK); /* factors of the element counts */
  }
}

static LLVMValueRef add64(Cg *cg, LLVMValueRef a, LLVMValueRef b) {
  return LLVMBuildNSWAdd(cg->b, a, b, "");
}

static LLVMValueRef mulc(Cg *cg, LLVMValueRef a, int64_t c) {
  if (c == 1) return a;
  return LLVMBuildNSWMul(cg->b, a, cg_i64(cg, c), "");
}

/* v / count; c64 divides both parts (cg_const of c64 is (count, 0)). */
static LLVMValueRef div_count(Red *R, LLVMValueRef v) {
  Cg *cg = R->cg;
  DType ct = R->dt == DT_C64 ? DT_F32 : R->dt;
  LLVMValueRef c = cg_const(cg, ct, R->count);
  if (!dim_is_static(R->dcount))
    c = LLVMBuildSIToFP(cg->b, cg_dim(cg, R->dcount), cg_ctype(cg, ct), "");
  if (R->dt == DT_C64) c = cg_ops_splat(cg, c, 2);
  return LLVMBuildFDiv(cg->b, v, c, "");
}

static void store_acc(Red *R, LLVMValueRef off, LLVMValueRef acc) {
  Cg *cg = R->cg;
  if (!R->direct)
    acc = cg_ops_combine(cg, R->dt, R->r, cg_load(cg, R->dt, R->y, off), acc);
  else if (R->mean)
    acc = div_count(R, acc);
  cg_store(cg, R->dt, R->y, off, acc);
}

/* Loop nest over groups d.. with input/output offsets; group p runs
 * over [lo, hi). */
static void red_nest(Red *R, int d, LLVMValueRef ioff, LLVMValueRef ooff,
                     LLVMValueRef lo, LLVMValueRef hi) {
  Cg *cg = R->cg;
  RShape *s = &R->s;
  bool last = d == s->nd - 1;
  if (last && s->red[d] && !dim_is_static(s->size[d])) {
    /* a dynamic row: in order, scalar */
    LLVMValueRef acc = cg_ops_red_init(cg, R->dt, R->r);
    CgLoop l;
    LLVMValueRef j = cg_loop_begin(cg, &l, cg_i64(cg, 0),
                                   cg_dim(cg, s->size[d]), &acc, 1);
    acc = cg_ops_combine(cg, R->dt, R->r, acc,
                         cg_load(cg, R->dt, R->x, add64(cg, ioff, j)));
    cg_loop_end(cg, &l, &acc);
    store_acc(R, ooff, acc);
    return;
  }
  if (last && s->red[d]) {
    LLVMValueRef init = cg_ops_red_init(cg, R->dt, R->r);
    store_acc(R, ooff, cg_ops_row_fold(cg, R->dt, R->r, R->x, ioff,
                                       s->size[d], init, NULL, NULL));
    return;
  }
  LLVMValueRef b = cg_i64(cg, 0), e = cg_dim(cg, s->size[d]);
  if (d == R->p) {
    b = lo;
    e = hi;
  }
  CgLoop l;
  LLVMValueRef j = cg_loop_begin(cg, &l, b, e, NULL, 0);
  LLVMValueRef ii = add64(cg, ioff, cg_mul_dim(cg, j, s->istr[d]));
  LLVMValueRef oi = add64(cg, ooff, cg_mul_dim(cg, j, s->ostr[d]));
  if (last) {
    LLVMValueRef v = cg_ops_combine(cg, R->dt, R->r,
                                    cg_load(cg, R->dt, R->y, oi),
                                    cg_load(cg, R->dt, R->x, ii));
    cg_store(cg, R->dt, R->y, oi, v);
  } else {
    red_nest(R, d + 1, ii, oi, lo, hi);
  }
  cg_loop_end(cg, &l, NULL);
}

/* A key for the body of R's loops (kind: CG_BODY_FILL or _REDUCE, aux:
 * numel or `divide`): everything the body depends on. */
static int red_key(const Red *R, int64_t *key, int kind, int64_t aux) {
  const RShape *s = &R->s;
  int m = 0;
  int64_t count;
  memcpy(&count, &R->count, sizeof count);
  key[m++] = kind, key[m++] = R->dt, key[m++] = R->r, key[m++] = R->mean;
  key[m++] = R->direct, key[m++] = count, key[m++] = aux;
  key[m++] = R->p, key[m++] = R->blk, key[m++] = s->nd;
  for (int d = 0; d < s->nd; d++) {
    key[m++] = s->size[d], key[m++] = s->red[d];
    key[m++] = s->istr[d], key[m++] = s->ostr[d];
  }
  return m;
}
#define RED_KEY_MAX (10 + 4 * RLX_MAX_RANK)

/* y[i] = v(i) for the whole output (serial, vectorizable), in a body of
 * its own so that the graph function stays free of loops (graph_fn.c).
 * numel: a size. */
static void red_fill(Red *R, int64_t numel, bool divide) {
  Cg *cg = R->cg;
  LLVMValueRef y = R->y;
  int64_t key[RED_KEY_MAX];
  CgKey k = {key, NULL, red_key(R, key, CG_BODY_FILL, numel * 2 + divide), 0};
  if (cg_par_shared(cg, &k, cg_i64(cg, 1), 0, &y, 1)) return;
  CgPar par;
  cg_par_begin(cg, &par, cg_i64(cg, 1), 0, &y, 1, true);
  CgLoop l;
  LLVMValueRef i = cg_loop_begin(cg, &l, cg_i64(cg, 0), cg_dim(cg, numel),
                                 NULL, 0);
  LLVMValueRef v = divide ? div_count(R, cg_load(cg, R->dt, y, i))
                          : cg_ops_red_init(cg, R->dt, R->r);
  cg_store(cg, R->dt, y, i, v);
  cg_loop_end(cg, &l, NULL);
  cg_par_end(cg, &par);
  cg_par_keep(cg, &k, &par);
}

/* in_numel: at the bounds when dynamic (only the grain uses it). */
static void red_parallel(Red *R, int64_t in_numel) {
  Cg *cg = R->cg;
  RShape *s = &R->s;
  int64_t nunits = 1;
  LLVMValueRef nu = cg_i64(cg, 1);
  if (R->p >= 0) {
    int64_t sz = s->size[R->p];
    nunits = (dim_bound(sz) + R->blk - 1) / R->blk;
    nu = dim_is_static(sz) ? cg_i64(cg, nunits)
         : LLVMBuildUDiv(cg->b, cg_add_i64(cg, cg_dim(cg, sz),
                                           cg_i64(cg, R->blk - 1)),
                         cg_i64(cg, R->blk), "");
  }
  LLVMValueRef vals[2] = {R->y, R->x};
  int64_t grain = cg_grain(nunits, in_numel / (nunits ? nunits : 1) + 1);
  int64_t key[RED_KEY_MAX];
  CgKey k = {key, NULL, red_key(R, key, CG_BODY_REDUCE, nunits), 0};
  if (cg_par_shared(cg, &k, nu, grain, vals, 2)) return;
  CgPar par;
  LLVMValueRef u = cg_par_begin(cg, &par, nu, grain, vals, 2, true);
  Red B = *R;
  B.y = vals[0];
  B.x = vals[1];
  LLVMValueRef lo = mulc(cg, u, R->blk), hi = NULL;
  if (R->p >= 0) {
    hi = add64(cg, lo, cg_i64(cg, R->blk));
    LLVMValueRef lim = cg_dim(cg, s->size[R->p]);
    hi = LLVMBuildSelect(cg->b, LLVMBuildICmp(cg->b, LLVMIntSLT, hi, lim, ""),
                         hi, lim, "");
  }
  red_nest(&B, 0, cg_i64(cg, 0), cg_i64(cg, 0), lo, hi);
  cg_par_end(cg, &par);
  cg_par_keep(cg, &k, &par);
}

/* f16/bf16: per output element, an f32 accumulator over reduced groups
 * (kept indices decoded from the flat output index). */
static LLVMValueRef red_scalar_nest(Red *R, int d, LLVMValueRef ioff,
                                    LLVMValueRef acc) {
  Cg *cg = R->cg;
  while (d < R->s.nd && !R->s.red[d]) d++;
  if (d == R->s.nd)
    return cg_ops_combine(cg, R->dt, R->r, acc,
                          cg_load(cg, R->dt, R->x, ioff));
  CgLoop l;
  LLVMValueRef j = cg_loop_begin(cg, &l, cg_i64(cg, 0),
                                 cg_dim(cg, R->s.size[d]), &acc, 1);
  acc = red_scalar_nest(R, d + 1,
                        add64(cg, ioff, cg_mul_dim(cg, j, R->s.istr[d])),
                        acc);
  cg_loop_end(cg, &l, &acc);
  return acc;
}

/* out: the output's element count, a size (dynamic: read at run time);
 * in_bound: the input's count at the bounds (the grain). */
static void red_scalar(Red *R, int64_t out, int64_t in_bound) {
  Cg *cg = R->cg;
  LLVMValueRef vals[2] = {R->y, R->x};
  int64_t ob = dim_bound(out);
  CgPar par;
  LLVMValueRef o = cg_par_begin(cg, &par, cg_dim(cg, out),
                                cg_grain(ob, in_bound / (ob ? ob : 1) + 1),
                                vals, 2, true);
  Red B = *R;
  B.y = vals[0];
  B.x = vals[1];
  LLVMValueRef ioff = cg_i64(cg, 0), rem = o;
  for (int d = R->s.nd - 1; d >= 0; d--) {
    if (R->s.red[d]) continue;
    LLVMValueRef sz = cg_dim(cg, R->s.size[d]);
    LLVMValueRef id = LLVMBuildSRem(cg->b, rem, sz, "");
    rem = LLVMBuildSDiv(cg->b, rem, sz, "");
    ioff = add64(cg, ioff, cg_mul_dim(cg, id, R->s.istr[d]));
  }
  LLVMValueRef acc = red_scalar_nest(&B, 0, ioff,
                                     cg_ops_red_init(cg, R->dt, R->r));
  if (R->mean) acc = div_count(&B, acc);
  cg_store(cg, R->dt, B.y, o, acc);
  cg_par_end(cg, &par);
}

/* Dynamic sizes (red_dyn): in any group, kept or reduced; the count of
 * a mean may then be a run-time value, and so may the output's size
 * that fills and the mean's division cover. */
static bool red_dyn_emit(Red *R, Node *n) {
  Cg *cg = R->cg;
  RShape *s = &R->s;
  R->p = -1;
  for (int d = 0; d < s->nd && R->p < 0; d++)
    if (!s->red[d]) R->p = d;
  R->blk = R->p == s->nd - 1 ? 256 : 1;
  R->direct = s->nred == 1 && s->red[s->nd - 1];
  int64_t cnt = 1;
  for (int d = 0; d < s->nd; d++)
    if (s->red[d]) {
      DimStatus st = dim_mul(cg->ctx, cnt, s->size[d], &cnt);
      RLX_ASSERT(st == DIM_OK);
    }
  if (dim_is_static(cnt)) R->count = (double)cnt;
  else R->dcount = cnt;
  int64_t in_bound = type_bytes_bound(&n->in[0]->type) / dt_size(R->dt);
  int64_t out;
  DimStatus st = type_numel_dim(cg->ctx, &n->type, &out);
  RLX_ASSERT(st == DIM_OK);
  if (R->dt == DT_F16 || R->dt == DT_BF16) { /* as the static half path */
    red_scalar(R, out, in_bound);
    return true;
  }
  if (!R->direct) red_fill(R, out, false);
  red_parallel(R, in_bound);
  if (!R->direct && R->mean) red_fill(R, out, true);
  return true;
}

/* Dynamic sizes: any axes, reduced or kept, every dtype. */
static const char *red_dyn(const Node *n) {
  (void)n;
  return NULL;
}

static bool cg_emit_reduce(Cg *cg, Node *n) {
  DType dt = n->type.dt;
  Red R = {.cg = cg, .dt = dt, .r = cg_red_kind(n->op),
           .mean = n->op == OP_REDUCE_MEAN};
  if (dt == DT_BOOL) return cg_unsupported(cg, n, "dtype bool");
  if (dt == DT_C64 && (R.r == CG_RED_MAX || R.r == CG_RED_MIN))
    return cg_unsupported(cg, n, "c64 values are not ordered");
  if (R.mean && !dt_is_float(dt) && dt != DT_C64)
    return cg_unsupported(cg, n, "reduce_mean of an integer dtype");
  rshape(cg->ctx, n, &R.s);
  R.y = cg_buf(cg, n);
  R.x = cg_buf(cg, n->in[0]);
  if (!type_is_static(&n->in[0]->type)) return red_dyn_emit(&R, n);
  int64_t in_numel = type_numel(&n->in[0]->type);
  int64_t out_numel = type_numel(&n->type);
  R.count = out_numel ? (double)in_numel / (double)out_numel : 0;
  if (out_numel == 0) return true;
  if (in_numel == 0) {
    red_fill(&R, out_numel, false);
    if (R.mean) red_fill(&R, out_numel, true);
    return true;
  }
  if (dt == DT_F16 || dt == DT_BF16) {
    red_scalar(&R, out_numel, in_numel);
    return true;
  }
  R.p = -1;
  for (int d = 0; d < R.s.nd && R.p < 0; d++)
    if (!R.s.red[d]) R.p = d;
  R.blk = R.p == R.s.nd - 1 ? 256 : 1;
  R.direct = R.s.nred == 1 && R.s.red[R.s.nd - 1];
  if (!R.direct) red_fill(&R, out_numel, false);
  red_parallel(&R, in_numel);
  if (!R.direct && R.mean) red_fill(&R, out_numel, true);
  return true;
}

/* ---------------- softmax / log_softmax ---------------- */

typedef struct {
  DType dt;
  bool log;
  LLVMValueRef y, m, s; /* body copies; m, s scalars or vectors */
} Smx;

static LLVMValueRef vsplat(Cg *cg, LLVMValueRef v, int lanes) {
  if (LLVMGetTypeKind(LLVMTypeOf(v)) == LLVMVectorTypeKind) return v;
  return cg_ops_splat(cg, v, lanes);
}

/* exp(x - m) */
static LLVMValueRef smx_exp(Cg *cg, LLVMValueRef x, LLVMValueRef idx,
                            int lanes, void *ctx) {
  Smx *S = ctx;
  return cg_ops_exp(cg, LLVMBuildFSub(cg->b, x, vsplat(cg, S->m, lanes), ""));
}

/* e = exp(x - m), stored into y, returned for the sum */
static LLVMValueRef smx_exp_store(Cg *cg, LLVMValueRef x, LLVMValueRef idx,
                                  int lanes, void *ctx) {
  Smx *S = ctx;
  LLVMValueRef e = smx_exp(cg, x, idx, lanes, ctx);
  cg_ops_vstore(cg, S->dt, S->y, idx, e, lanes);
  return e;
}

static LLVMValueRef smx_out(Cg *cg, LLVMValueRef x, LLVMValueRef idx,
                            int lanes, void *ctx) {
  Smx *S = ctx;
  LLVMValueRef s = vsplat(cg, S->s, lanes);
  if (S->log) {
    LLVMValueRef t = LLVMBuildFSub(cg->b, x, vsplat(cg, S->m, lanes), "");
    return LLVMBuildFSub(cg->b, t, cg_ops_log(cg, s), "");
  }
  return LLVMBuildFDiv(cg->b, smx_exp(cg, x, idx, lanes, ctx), s, "");
}

static LLVMValueRef smx_scale(Cg *cg, LLVMValueRef e, LLVMValueRef idx,
                              int lanes, void *ctx) {
  Smx *S = ctx;
  return LLVMBuildFDiv(cg->b, e, vsplat(cg, S->s, lanes), "");
}

/* Rows (inner == 1): fold max, fold sum of exp, then write. */
/* outer: a dim (dynamic: the rows of a dynamic axis 0, smx_dyn). */
static void smx_rows(Cg *cg, Smx *S, int64_t outer, int64_t n,
                     LLVMValueRef *vals) {
  CgPar par;
  LLVMValueRef o = cg_par_begin(cg, &par, cg_dim(cg, outer),
                                cg_grain(dim_bound(outer), 3 * n), vals, 2,
                                true);
  S->y = vals[0];
  LLVMValueRef x = vals[1], off = mulc(cg, o, n);
  S->m = cg_ops_row_fold(cg, S->dt, CG_RED_MAX, x, off, n,
                         cg_ops_red_init(cg, S->dt, CG_RED_MAX), NULL, NULL);
  bool store = !S->log && (S->dt == DT_F32 || S->dt == DT_F64);
  S->s = cg_ops_row_fold(cg, S->dt, CG_RED_SUM, x, off, n,
                         cg_const(cg, S->dt, 0),
                         store ? smx_exp_store : smx_exp, S);
  if (store)
    cg_ops_row_map(cg, S->dt, S->y, S->y, off, n, smx_scale, S);
  else
    cg_ops_row_map(cg, S->dt, S->y, x, off, n, smx_out, S);
  cg_par_end(cg, &par);
}

/* Rows of a dynamic length n (a size): scalar passes in order (max,
 * sum of exp, write); outer: a size. */
static void smx_rows_dyn(Cg *cg, Smx *S, int64_t outer, int64_t n,
                         LLVMValueRef *vals) {
  CgPar par;
  LLVMValueRef o = cg_par_begin(cg, &par, cg_dim(cg, outer),
                                cg_grain(dim_bound(outer), 3 * dim_bound(n)),
                                vals, 2, true);
  S->y = vals[0];
  LLVMValueRef x = vals[1], len = cg_dim(cg, n);
  LLVMValueRef off = LLVMBuildNSWMul(cg->b, o, len, ""), zero = cg_i64(cg, 0);
  LLVMValueRef acc[2] = {cg_ops_red_init(cg, S->dt, CG_RED_MAX),
                         cg_const(cg, S->dt, 0)};
  for (int pass = 0; pass < 3; pass++) {
    CgLoop l;
    LLVMValueRef j = cg_loop_begin(cg, &l, zero, len,
                                   pass < 2 ? &acc[pass] : NULL, pass < 2);
    LLVMValueRef at = add64(cg, off, j), v = cg_load(cg, S->dt, x, at);
    if (pass == 0)
      acc[0] = cg_ops_combine(cg, S->dt, CG_RED_MAX, acc[0], v);
    else if (pass == 1)
      acc[1] = LLVMBuildFAdd(cg->b, acc[1], smx_exp(cg, v, at, 1, S), "");
    else
      cg_store(cg, S->dt, S->y, at, smx_out(cg, v, at, 1, S));
    cg_loop_end(cg, &l, pass < 2 ? &acc[pass] : NULL);
    if (pass == 0) S->m = acc[0];
    if (pass == 1) S->s = acc[1];
  }
  cg_par_end(cg, &par);
}

/* ---- softmax over an outer axis: row passes with per-unit scratch ----
 * A unit is (o, block of SMX_CB columns); its running max m[] and sum
 * s[] live in the node's scratch (compute dtype), so every pass streams
 * whole contiguous row segments instead of walking columns with a
 * large power-of-two stride (which thrashes cache sets). */
#define SMX_CB 256

typedef struct {
  DType dt, cdt;     /* storage, compute (f32 or f64) */
  bool log, store;
  int64_t n, inner, nb;
  LLVMValueRef y, x, m, s, base; /* body values */
  LLVMValueRef row;  /* base + j*inner of the current row */
  int pass;
} SmxSeg;

typedef void (*SegFn)(Cg *cg, SmxSeg *S, LLVMValueRef i, int lanes);

/* f(i, lanes) over [0, cnt): vector groups, then scalars. */
static void seg_loop(Cg *cg, SmxSeg *S, int64_t cnt, SegFn f) {
  int L = cg_ops_lanes(cg, S->dt);
  int64_t nv = L > 1 ? cnt / L : 0;
  CgLoop l;
  if (nv > 0) {
    LLVMValueRef v = cg_loop_begin(cg, &l, cg_i64(cg, 0), cg_i64(cg, nv),
                                   NULL, 0);
    f(cg, S, mulc(cg, v, L), L);
    cg_loop_end(cg, &l, NULL);
  }
  if (nv * L < cnt) {
    LLVMValueRef t = cg_loop_begin(cg, &l, cg_i64(cg, nv * L),
                                   cg_i64(cg, cnt), NULL, 0);
    f(cg, S, t, 1);
    cg_loop_end(cg, &l, NULL);
  }
}

static void seg_init(Cg *cg, SmxSeg *S, LLVMValueRef i, int L) {
  LLVMValueRef ninf = cg_ops_red_init(cg, S->cdt, CG_RED_MAX);
  cg_ops_vstore(cg, S->cdt, S->m, i, cg_ops_splat(cg, ninf, L), L);
  cg_ops_vstore(cg, S->cdt, S->s, i,
                cg_ops_splat(cg, cg_const(cg, S->cdt, 0), L), L);
}

static LLVMValueRef seg_x(Cg *cg, SmxSeg *S, LLVMValueRef ptr,
                          LLVMValueRef i, int L) {
  return cg_ops_vload(cg, S->dt, ptr, add64(cg, S->row, i), L);
}

static void seg_row(Cg *cg, SmxSeg *S, LLVMValueRef i, int L) {
  LLVMBuilderRef b = cg->b;
  LLVMValueRef m = cg_ops_vload(cg, S->cdt, S->m, i, L);
  LLVMValueRef x = seg_x(cg, S, S->x, i, L);
  LLVMValueRef at = add64(cg, S->row, i);
  if (S->pass == 1) {
    cg_ops_vstore(cg, S->cdt, S->m, i,
                  cg_ops_combine(cg, S->cdt, CG_RED_MAX, m, x), L);
    return;
  }
  LLVMValueRef s = cg_ops_vload(cg, S->cdt, S->s, i, L);
  if (S->pass == 2) {
    LLVMValueRef e = cg_ops_exp(cg, LLVMBuildFSub(b, x, m, ""));
    if (S->store) cg_ops_vstore(cg, S->dt, S->y, at, e, L);
    cg_ops_vstore(cg, S->cdt, S->s, i, LLVMBuildFAdd(b, s, e, ""), L);
    return;
  }
  LLVMValueRef r;
  if (S->store)
    r = LLVMBuildFDiv(b, seg_x(cg, S, S->y, i, L), s, "");
  else if (S->log) /* s holds log(sum) after pass 2 */
    r = LLVMBuildFSub(b, LLVMBuildFSub(b, x, m, ""), s, "");
  else
    r = LLVMBuildFDiv(b, cg_ops_exp(cg, LLVMBuildFSub(b, x, m, "")), s, "");
  cg_ops_vstore(cg, S->dt, S->y, at, r, L);
}

static void seg_log(Cg *cg, SmxSeg *S, LLVMValueRef i, int L) {
  LLVMValueRef s = cg_ops_vload(cg, S->cdt, S->s, i, L);
  cg_ops_vstore(cg, S->cdt, S->s, i, cg_ops_log(cg, s), L);
}

static void seg_unit(Cg *cg, SmxSeg *S, int64_t cnt) {
  seg_loop(cg, S, cnt, seg_init);
  for (S->pass = 1; S->pass <= 3; S->pass++) {
    if (S->pass == 3 && S->log) seg_loop(cg, S, cnt, seg_log);
    CgLoop l;
    LLVMValueRef j = cg_loop_begin(cg, &l, cg_i64(cg, 0), cg_i64(cg, S->n),
                                   NULL, 0);
    S->row = add64(cg, S->base, mulc(cg, j, S->inner));
    seg_loop(cg, S, cnt, seg_row);
    cg_loop_end(cg, &l, NULL);
  }
}

/* Units of the segments of outer rows of a static inner (a size:
 * dynamic axes before the softmax axis, smx_dyn). */
static int64_t smx_units(Cg *cg, int64_t outer, int64_t inner) {
  int64_t units;
  DimStatus st = dim_mul(cg->ctx, outer, (inner + SMX_CB - 1) / SMX_CB,
                         &units);
  RLX_ASSERT(st == DIM_OK && dim_is_static(inner));
  return units;
}

static int64_t cg_scratch_softmax(Cg *cg, Node *n) {
  int64_t outer, len, inner;
  cg_split_axis_dim(cg, &n->type, ir_attr_int(n, ATTR_AXIS, -1), &outer,
                    &len, &inner);
  if (!dim_is_static(len) || !dim_is_static(inner)) return 0; /* rows */
  if (inner == 1 || !dt_is_float(n->type.dt)) return 0;
  int csz = n->type.dt == DT_F64 ? 8 : 4; /* dynamic: the bound's units, */
  int64_t units = smx_units(cg, outer, inner), d; /* or a size expression */
  if (dim_is_bounded(units)) return dim_bound(units) * 2 * SMX_CB * csz;
  if (dim_mul(cg->ctx, units, 2 * SMX_CB * csz, &d) == DIM_OK) return d;
  cg_unsupported(cg, n, "too large a size expression");
  return -1;
}

/* units: a size (dynamic: read at run time). */
static void smx_outer_axis(Cg *cg, Node *n, SmxSeg *S, int64_t units) {
  int64_t tail = S->inner % SMX_CB, nb = S->nb;
  int csz = dt_size(S->cdt);
  LLVMValueRef vals[3] = {cg_buf(cg, n), cg_buf(cg, n->in[0]),
                          cg_scratch(cg, n)};
  CgPar par;
  LLVMValueRef u = cg_par_begin(cg, &par, cg_dim(cg, units),
                                cg_grain(dim_bound(units), 3 * S->n * SMX_CB),
                                vals, 3, true);
  S->y = vals[0];
  S->x = vals[1];
  S->m = cg_gep(cg, vals[2], mulc(cg, u, 2 * SMX_CB * csz));
  S->s = cg_gep(cg, S->m, cg_i64(cg, SMX_CB * csz));
  LLVMValueRef o = LLVMBuildSDiv(cg->b, u, cg_i64(cg, nb), "");
  LLVMValueRef blk = LLVMBuildSRem(cg->b, u, cg_i64(cg, nb), "");
  S->base = add64(cg, mulc(cg, o, S->n * S->inner), mulc(cg, blk, SMX_CB));
  if (tail == 0) {
    seg_unit(cg, S, SMX_CB);
  } else {
    LLVMBasicBlockRef bf = cg_block(cg, "smx.full");
    LLVMBasicBlockRef bt = cg_block(cg, "smx.tail");
    LLVMBasicBlockRef bj = cg_block(cg, "smx.join");
    LLVMBuildCondBr(cg->b, LLVMBuildICmp(cg->b, LLVMIntSLT, blk,
                                         cg_i64(cg, nb - 1), ""), bf, bt);
    LLVMPositionBuilderAtEnd(cg->b, bf);
    seg_unit(cg, S, SMX_CB);
    LLVMBuildBr(cg->b, bj);
    LLVMPositionBuilderAtEnd(cg->b, bt);
    seg_unit(cg, S, tail);
    LLVMBuildBr(cg->b, bj);
    LLVMPositionBuilderAtEnd(cg->b, bj);
  }
  cg_par_end(cg, &par);
}

static bool cg_emit_softmax(Cg *cg, Node *n) {
  DType dt = n->type.dt;
  if (!dt_is_float(dt))
    return cg_unsupported(cg, n, "softmax of a non-float dtype");
  int64_t outer, len, inner;
  Smx S = {.dt = dt, .log = n->op == OP_LOG_SOFTMAX};
  LLVMValueRef vals[2] = {cg_buf(cg, n), cg_buf(cg, n->in[0])};
  cg_split_axis_dim(cg, &n->type, ir_attr_int(n, ATTR_AXIS, -1), &outer,
                    &len, &inner);
  if (!type_is_static(&n->type) && inner == 1) { /* rows, dynamic axes */
    if (!dim_is_static(len))
      smx_rows_dyn(cg, &S, outer, len, vals);
    else if (len > 0)
      smx_rows(cg, &S, outer, len, vals);
    return true;
  }
  if (outer == 0 || len == 0 || inner == 0) return true;
  if (inner == 1) {
    smx_rows(cg, &S, outer, len, vals);
    return true;
  }
  SmxSeg G = {.dt = dt, .cdt = dt == DT_F64 ? DT_F64 : DT_F32,
              .log = S.log, .n = len, .inner = inner,
              .nb = (inner + SMX_CB - 1) / SMX_CB};
  G.store = !G.log && (dt == DT_F32 || dt == DT_F64);
  smx_outer_axis(cg, n, &G, smx_units(cg, outer, inner));
  return true;
}

/* ---------------- cumsum ---------------- */

typedef struct {
  DType dt;
  bool excl, rev;
  int64_t n, inner; /* sizes (dynamic: read at run time) */
} Cum;

/* The row of step j: n - 1 - j for the reverse (suffix) sums. */
static LLVMValueRef cum_step(Cg *cg, const Cum *C, LLVMValueRef j) {
  if (!C->rev) return j;
  LLVMValueRef last = dim_is_static(C->n)
      ? cg_i64(cg, C->n - 1)
      : LLVMBuildNSWSub(cg->b, cg_dim(cg, C->n), cg_i64(cg, 1), "");
  return LLVMBuildNSWSub(cg->b, last, j, "");
}

static void cum_body(Cg *cg, int lanes, LLVMValueRef base,
                     LLVMValueRef *vals, void *ctx) {
  Cum *C = ctx;
  LLVMValueRef acc = cg_ops_splat(cg, cg_const(cg, C->dt, 0), lanes);
  CgLoop l;
  LLVMValueRef j = cg_loop_begin(cg, &l, cg_i64(cg, 0), cg_dim(cg, C->n),
                                 &acc, 1);
  j = cum_step(cg, C, j);
  LLVMValueRef idx = add64(cg, base, dim_is_static(C->inner)
                                         ? mulc(cg, j, C->inner)
                                         : cg_mul_dim(cg, j, C->inner));
  LLVMValueRef x = cg_ops_vload(cg, C->dt, vals[1], idx, lanes);
  LLVMValueRef nxt = cg_ops_combine(cg, C->dt, CG_RED_SUM, acc, x);
  cg_ops_vstore(cg, C->dt, vals[0], idx, C->excl ? acc : nxt, lanes);
  acc = nxt;
  cg_loop_end(cg, &l, &acc);
}

/* Inner > 1 (f32/f64/integers): stream whole row segments, each output
 * row = previous output row + an input row, so no column is walked
 * with a large stride. Units: (o, block of CUM_CB columns). */
#define CUM_CB 512

typedef struct {
  Cum *C;
  LLVMValueRef y, x, row, prev; /* prev: NULL for the first row */
} CumRow;

static void cum_lanes(Cg *cg, CumRow *R, LLVMValueRef i, int L) {
  DType dt = R->C->dt;
  LLVMValueRef at = add64(cg, R->row, i), v;
  if (!R->prev) {
    v = R->C->excl ? cg_ops_splat(cg, cg_const(cg, dt, 0), L)
                   : cg_ops_vload(cg, dt, R->x, at, L);
  } else {
    LLVMValueRef pi = add64(cg, R->prev, i);
    v = cg_ops_combine(cg, dt, CG_RED_SUM, cg_ops_vload(cg, dt, R->y, pi, L),
                       cg_ops_vload(cg, dt, R->x, R->C->excl ? pi : at, L));
  }
  cg_ops_vstore(cg, dt, R->y, at, v, L);
}

static void cum_row(Cg *cg, CumRow *R, int64_t cnt) {
  int L = cg_ops_lanes(cg, R->C->dt);
  int64_t nv = L > 1 ? cnt / L : 0;
  CgLoop l;
  if (nv > 0) {
    LLVMValueRef v = cg_loop_begin(cg, &l, cg_i64(cg, 0), cg_i64(cg, nv),
                                   NULL, 0);
    cum_lanes(cg, R, mulc(cg, v, L), L);
    cg_loop_end(cg, &l, NULL);
  }
  if (nv * L < cnt) {
    LLVMValueRef t = cg_loop_begin(cg, &l, cg_i64(cg, nv * L),
                                   cg_i64(cg, cnt), NULL, 0);
    cum_lanes(cg, R, t, 1);
    cg_loop_end(cg, &l, NULL);
  }
}

static LLVMValueRef cum_row_off(Cg *cg, Cum *C, LLVMValueRef base,
                                LLVMValueRef j) {
  return add64(cg, base, mulc(cg, cum_step(cg, C, j), C->inner));
}

static void cum_unit(Cg *cg, CumRow *R, LLVMValueRef base, int64_t cnt) {
  Cum *C = R->C;
  R->prev = NULL;
  R->row = cum_row_off(cg, C, base, cg_i64(cg, 0));
  cum_row(cg, R, cnt);
  CgLoop l;
  LLVMValueRef j = cg_loop_begin(cg, &l, cg_i64(cg, 1), cg_dim(cg, C->n),
                                 NULL, 0);
  R->row = cum_row_off(cg, C, base, j);
  R->prev = cum_row_off(cg, C, base,
                        LLVMBuildNSWSub(cg->b, j, cg_i64(cg, 1), ""));
  cum_row(cg, R, cnt);
  cg_loop_end(cg, &l, NULL);
}

/* outer: a size; a unit writes its first row unconditionally, so a
 * dynamic n runs no unit when it is 0. */
static void cum_rows(Cg *cg, Cum *C, int64_t outer, LLVMValueRef *vals) {
  int64_t nb = (C->inner + CUM_CB - 1) / CUM_CB, tail = C->inner % CUM_CB;
  int64_t units, n_inner;
  DimStatus st = dim_mul(cg->ctx, outer, nb, &units);
  if (st == DIM_OK) st = dim_mul(cg->ctx, C->n, C->inner, &n_inner);
  RLX_ASSERT(st == DIM_OK);
  LLVMValueRef nu = cg_dim(cg, units);
  if (!dim_is_static(C->n))
    nu = LLVMBuildSelect(cg->b, LLVMBuildICmp(cg->b, LLVMIntSGT,
                                              cg_dim(cg, C->n),
                                              cg_i64(cg, 0), ""),
                         nu, cg_i64(cg, 0), "");
  CgPar par;
  LLVMValueRef u = cg_par_begin(cg, &par, nu,
                                cg_grain(dim_bound(units),
                                         dim_bound(C->n) * CUM_CB),
                                vals, 2, true);
  CumRow R = {C, vals[0], vals[1], NULL, NULL};
  LLVMValueRef o = LLVMBuildSDiv(cg->b, u, cg_i64(cg, nb), "");
  LLVMValueRef blk = LLVMBuildSRem(cg->b, u, cg_i64(cg, nb), "");
  LLVMValueRef base = add64(cg, cg_mul_dim(cg, o, n_inner),
                            mulc(cg, blk, CUM_CB));
  if (tail == 0) {
    cum_unit(cg, &R, base, CUM_CB);
  } else {
    LLVMBasicBlockRef bf = cg_block(cg, "cum.full");
    LLVMBasicBlockRef bt = cg_block(cg, "cum.tail");
    LLVMBasicBlockRef bj = cg_block(cg, "cum.join");
    LLVMBuildCondBr(cg->b, LLVMBuildICmp(cg->b, LLVMIntSLT, blk,
                                         cg_i64(cg, nb - 1), ""), bf, bt);
    LLVMPositionBuilderAtEnd(cg->b, bf);
    cum_unit(cg, &R, base, CUM_CB);
    LLVMBuildBr(cg->b, bj);
    LLVMPositionBuilderAtEnd(cg->b, bt);
    cum_unit(cg, &R, base, tail);
    LLVMBuildBr(cg->b, bj);
    LLVMPositionBuilderAtEnd(cg->b, bj);
  }
  cg_par_end(cg, &par);
}

/* A dynamic inner (a dynamic axis after the cumsum axis): one scalar
 * scan per column (o, i), strided by the run-time inner, in parallel
 * over the outer * inner columns. */
static void cum_cols_dyn(Cg *cg, Cum *C, int64_t outer, LLVMValueRef *vals) {
  int64_t cols, n_inner;
  DimStatus st = dim_mul(cg->ctx, outer, C->inner, &cols);
  if (st == DIM_OK) st = dim_mul(cg->ctx, C->n, C->inner, &n_inner);
  RLX_ASSERT(st == DIM_OK);
  CgPar par;
  LLVMValueRef u = cg_par_begin(cg, &par, cg_dim(cg, cols),
                                cg_grain(dim_bound(cols), dim_bound(C->n)),
                                vals, 2, true);
  LLVMValueRef in = cg_dim(cg, C->inner);
  LLVMValueRef o = LLVMBuildSDiv(cg->b, u, in, "");
  LLVMValueRef i = LLVMBuildSRem(cg->b, u, in, "");
  cum_body(cg, 1, add64(cg, cg_mul_dim(cg, o, n_inner), i), vals, C);
  cg_par_end(cg, &par);
}

bool cg_ops_cumsum(Cg *cg, Node *n, bool rev) {
  DType dt = n->type.dt;
  if (dt == DT_BOOL) return cg_unsupported(cg, n, "dtype bool");
  int64_t outer, len, inner; /* sizes */
  cg_split_axis_dim(cg, &n->type, ir_attr_int(n, ATTR_AXIS, -1), &outer,
                    &len, &inner);
  if (outer == 0 || len == 0 || inner == 0) return true;
  Cum C = {dt, ir_attr_bool(n, ATTR_EXCLUSIVE, false), rev, len, inner};
  LLVMValueRef vals[2] = {cg_buf(cg, n), cg_buf(cg, n->in[0])};
  if (!dim_is_static(inner))
    cum_cols_dyn(cg, &C, outer, vals);
  else if (inner > 1 && dt != DT_F16 && dt != DT_BF16)
    cum_rows(cg, &C, outer, vals);
  else /* rows, or f16/bf16: carry each column in f32 */
    cg_ops_cols(cg, dt, outer, len, inner, 1, vals, 2, cum_body, &C);
  return true;
}

static bool cg_emit_cumsum(Cg *cg, Node *n) {
  return cg_ops_cumsum(cg, n, false);
}

/* ---------------- softmax cross-entropy ---------------- */

void cg_ops_xent_row(Cg *cg, Node *n, LLVMValueRef *vals, LLVMValueRef r,
                     XentRow *X) {
  DType dt = n->in[0]->type.dt;
  int64_t c = n->in[0]->type.dims[1];
  X->lab = cg_ops_index(cg, n->in[1]->type.dt, vals[2], r, c);
  X->off = mulc(cg, r, c);
  X->m = cg_ops_row_fold(cg, dt, CG_RED_MAX, vals[1], X->off, c,
                         cg_ops_red_init(cg, dt, CG_RED_MAX), NULL, NULL);
  Smx S = {.dt = dt, .m = X->m};
  X->s = cg_ops_row_fold(cg, dt, CG_RED_SUM, vals[1], X->off, c,
                         cg_const(cg, dt, 0), smx_exp, &S);
}

static bool cg_emit_softmax_xent(Cg *cg, Node *n) {
  DType dt = n->type.dt;
  if (!dt_is_float(dt))
    return cg_unsupported(cg, n, "logits must be a float dtype");
  if (!cg_ops_index_dtype_ok(n->in[1]->type.dt))
    return cg_unsupported(cg, n, "labels must be i32, i64 or f32");
  int64_t rows = n->in[0]->type.dims[0], c = n->in[0]->type.dims[1];
  if (rows == 0) return true;
  LLVMValueRef vals[3] = {cg_buf(cg, n), cg_buf(cg, n->in[0]),
                          cg_buf(cg, n->in[1])};
  CgPar par;
  LLVMValueRef r = cg_par_begin(cg, &par, cg_dim(cg, rows),
                                cg_grain(dim_bound(rows), 2 * c + 1), vals, 3,
                                true);
  XentRow X;
  cg_ops_xent_row(cg, n, vals, r, &X);
  LLVMValueRef xl = cg_load(cg, dt, vals[1], add64(cg, X.off, X.lab));
  LLVMValueRef d = LLVMBuildFSub(cg->b, X.m, xl, "");
  cg_store(cg, dt, vals[0], r,
           LLVMBuildFAdd(cg->b, d, cg_ops_log(cg, X.s), ""));
  cg_par_end(cg, &par);
  return true;
}

/* ---------------- topk ---------------- */

/* The runtime entry for dt (f16/bf16 compare as f32), NULL if none. */
static const char *topk_fn(DType dt) {
  switch (dt) {
  case DT_F32: return "rlx_topk_f32";
  case DT_F64: return "rlx_topk_f64";
  case DT_F16: return "rlx_topk_f16";
  case DT_BF16: return "rlx_topk_bf16";
  case DT_I8: return "rlx_topk_i8";
  case DT_U8: return "rlx_topk_u8";
  case DT_I32: return "rlx_topk_i32";
  case DT_I64: return "rlx_topk_i64";
  default: return NULL;
  }
}

static bool cg_emit_topk(Cg *cg, Node *n) {
  const Type *t = &n->in[0]->type;
  DType dt = t->dt;
  const char *fn = topk_fn(dt);
  if (!fn) return cg_unsupported(cg, n, "topk of a bool or c64 operand");
  if (t->rank < 1) return cg_unsupported(cg, n, "rank-0 operand");
  /* The row length is static (shape rule); the leading axes may be
   * dynamic, so the row count is read at run time (0 rows: no work). */
  Type lead = *t;
  int64_t len = t->dims[t->rank - 1];
  lead.dims[t->rank - 1] = 1;
  int64_t k = n->type.dims[n->type.rank - 1];
  if (type_is_static(&n->type) && type_numel(&n->type) == 0) return true;
  LLVMValueRef args[5] = {cg_buf(cg, n->in[0]), cg_numel(cg, &lead),
                          cg_i64(cg, len), cg_i64(cg, k), cg_buf(cg, n)};
  LLVMValueRef rc = cg_call(cg, fn, cg->t_i32, args, 5);
  cg_fail_if(cg, LLVMBuildICmp(cg->b, LLVMIntNE, rc, cg_i32(cg, 0), ""),
             RLX_ERR_INVALID);
  return true;
}

const CgEmitter cg_emitter_reduce = {cg_emit_reduce, NULL, red_dyn};
/* Dynamic sizes: any axes before the softmax axis (rows, or segments
 * of the later static axes: smx_outer_axis); the row itself dynamic too
 * (f32, f64: smx_rows_dyn) when every later axis has size 1. */
static const char *smx_dyn(const Node *n) {
  const Type *t = &n->type;
  int64_t ax = ir_attr_int(n, ATTR_AXIS, -1);
  ax += ax < 0 ? t->rank : 0;
  bool later = true; /* the softmax axis and those after it static */
  for (int64_t d = ax; d < t->rank; d++) later &= dim_is_static(t->dims[d]);
  if (later) return NULL;
  if (dim_is_static(t->dims[ax]) || (t->dt != DT_F32 && t->dt != DT_F64))
    return cg_dyn_rows(n, t);
  for (int64_t d = ax + 1; d < t->rank; d++)
    if (t->dims[d] != 1) return "an axis other than the last";
  return NULL;
}

const CgEmitter cg_emitter_softmax = {cg_emit_softmax, cg_scratch_softmax,
                                      smx_dyn};
/* Dynamic sizes: any (run-time trip counts; a dynamic axis after the
 * cumsum axis scans each column on its own: cum_cols_dyn). */
const char *cg_cum_dyn(const Node *n) {
  (void)n;
  return NULL;
}

const CgEmitter cg_emitter_cumsum = {cg_emit_cumsum, NULL, cg_cum_dyn};
static const char *xent_dyn(const Node *n) {
  return cg_dyn_leading(&n->in[0]->type) ? NULL
                                         : "a dynamic number of classes";
}

const CgEmitter cg_emitter_softmax_xent = {cg_emit_softmax_xent, NULL,
                                           xent_dyn};
/* Dynamic sizes: every axis before the last (the row count is read at
 * run time); the shape rule keeps the topk axis static. */
static const char *topk_dyn(const Node *n) {
  const Type *t = &n->in[0]->type;
  return dim_is_static(t->dims[t->rank - 1]) ? NULL
                                             : "a dynamic topk axis";
}

const CgEmitter cg_emitter_topk = {cg_emit_topk, NULL, topk_dyn};
