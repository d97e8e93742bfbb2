/* pool.c: max_pool2d and avg_pool2d (language.md 6.5) and their
 * closed-form backward ops max_pool2d_backward and avg_pool2d_backward
 * (6.9), NCHW.
 *
 * Window (oh, ow) covers rows oh*sh - ph .. + kh - 1 and columns
 * ow*sw - pw .. + kw - 1 of its (n, c) plane. Padding cells are never
 * read: a max window looks at its in-bounds cells only (padding never
 * wins; the shape rule keeps padding <= kernel/2, so every window has
 * an in-bounds cell), and avg_pool2d sums the in-bounds cells and
 * divides by kh*kw (padding counted as zeros). The argmax of a window
 * is its FIRST maximum in row-major order (strictly greater replaces;
 * a NaN replaces a non-NaN, so the first NaN wins).
 *
 * Forward ops and avg_pool2d_backward thread over rows of the output
 * (each element written once, from values loaded in that iteration).
 * max_pool2d_backward threads over (n, c) planes: each plane is zeroed
 * (unless disjoint windows tile it), then dy is added at each window's
 * argmax serially over the windows in row-major order, so the sums do
 * not depend on the thread count.
 * avg_pool2d_backward gathers, per input element, dy over the windows
 * covering it (fixed order), times 1/(kh*kw). f16/bf16 compute in f32
 * and round on store (max_pool2d_backward's overlapping windows round
 * each partial sum). A dynamic batch N only changes the outer trip
 * count (read at run time).
 */
#include "codegen/emit/emit.h"

typedef struct {
  DType dt;
  int64_t h, w, oh, ow, kh, kw, sh, sw, ph, pw;
  LLVMValueRef y, x; /* body pointers: output, input */
} Pool;

typedef struct {
  LLVMValueRef best, arg; /* value (compute type), plane offset (i64) */
} Arg;

#define BD cg->b
#define I64(v) cg_i64(cg, (v))

static LLVMValueRef add(Cg *cg, LLVMValueRef a, LLVMValueRef b) {
  return LLVMBuildAdd(BD, a, b, "");
}
static LLVMValueRef mul(Cg *cg, LLVMValueRef a, LLVMValueRef b) {
  return LLVMBuildMul(BD, a, b, "");
}
static LLVMValueRef smax(Cg *cg, LLVMValueRef a, LLVMValueRef b) {
  return LLVMBuildSelect(BD, LLVMBuildICmp(BD, LLVMIntSGT, a, b, ""), a,
                         b, "");
}
static LLVMValueRef smin(Cg *cg, LLVMValueRef a, LLVMValueRef b) {
  return LLVMBuildSelect(BD, LLVMBuildICmp(BD, LLVMIntSLT, a, b, ""), a,
                         b, "");
}

/* In-bounds part [lo, hi) of a window starting at s (may be < 0) with
 * k cells over a dim of n. */
static void span(Cg *cg, LLVMValueRef s, int64_t k, int64_t n,
                 LLVMValueRef *lo, LLVMValueRef *hi) {
  *lo = smax(cg, s, I64(0));
  *hi = smin(cg, add(cg, s, I64(k)), I64(n));
}

static void init(Pool *P, const Node *n, const Type *x, const Type *o) {
  int m;
  const int64_t *k = ir_attr_ints(n, ATTR_KERNEL, &m);
  const int64_t *s = ir_attr_ints(n, ATTR_STRIDE, &m);
  const int64_t *p = ir_attr_ints(n, ATTR_PADDING, &m);
  if (!s) s = k;
  *P = (Pool){.dt = x->dt, .h = x->dims[2], .w = x->dims[3],
              .oh = o->dims[2], .ow = o->dims[3], .kh = k[0], .kw = k[1],
              .sh = s[0], .sw = s[1], .ph = p ? p[0] : 0,
              .pw = p ? p[1] : 0};
}

/* Does cell value v replace the running first maximum best? Strictly
 * greater, or a NaN over a non-NaN (scalars or vectors). */
static LLVMValueRef replaces(Cg *cg, LLVMValueRef v, LLVMValueRef best) {
  return LLVMBuildOr(
      BD, LLVMBuildFCmp(BD, LLVMRealOGT, v, best, ""),
      LLVMBuildAnd(BD, LLVMBuildFCmp(BD, LLVMRealUNO, v, v, ""),
                   LLVMBuildFCmp(BD, LLVMRealORD, best, best, ""), ""),
      "");
}

/* First maximum of window (r, q) of the plane at element offset base;
 * arg is the plane-relative offset of that cell. */
static Arg argmax(Cg *cg, Pool *P, LLVMValueRef base, LLVMValueRef r,
                  LLVMValueRef q) {
  LLVMValueRef r0, r1, c0, c1;
  span(cg, LLVMBuildSub(BD, mul(cg, r, I64(P->sh)), I64(P->ph), ""), P->kh,
       P->h, &r0, &r1);
  span(cg, LLVMBuildSub(BD, mul(cg, q, I64(P->sw)), I64(P->pw), ""), P->kw,
       P->w, &c0, &c1);
  LLVMValueRef first = add(cg, mul(cg, r0, I64(P->w)), c0);
  LLVMValueRef carry[2] = {cg_load(cg, P->dt, P->x, add(cg, base, first)),
                           first};
  CgLoop li, lj;
  LLVMValueRef i = cg_loop_begin(cg, &li, r0, r1, carry, 2);
  LLVMValueRef inner[2] = {carry[0], carry[1]};
  LLVMValueRef j = cg_loop_begin(cg, &lj, c0, c1, inner, 2);
  LLVMValueRef off = add(cg, mul(cg, i, I64(P->w)), j);
  LLVMValueRef v = cg_load(cg, P->dt, P->x, add(cg, base, off));
  LLVMValueRef up = replaces(cg, v, inner[0]);
  inner[0] = LLVMBuildSelect(BD, up, v, inner[0], "");
  inner[1] = LLVMBuildSelect(BD, up, off, inner[1], "");
  cg_loop_end(cg, &lj, inner);
  carry[0] = inner[0];
  carry[1] = inner[1];
  cg_loop_end(cg, &li, carry);
  return (Arg){carry[0], carry[1]};
}

/* Sum of P->x[base + i * stride + j] over [r0, r1) x [c0, c1), times
 * 1/(kh*kw): padding cells count as zeros. */
static LLVMValueRef rect_mean(Cg *cg, Pool *P, LLVMValueRef base,
                              int64_t stride, LLVMValueRef r0,
                              LLVMValueRef r1, LLVMValueRef c0,
                              LLVMValueRef c1) {
  LLVMValueRef acc = cg_const(cg, P->dt, 0);
  CgLoop li, lj;
  LLVMValueRef i = cg_loop_begin(cg, &li, r0, r1, &acc, 1);
  LLVMValueRef a2 = acc;
  LLVMValueRef j = cg_loop_begin(cg, &lj, c0, c1, &a2, 1);
  LLVMValueRef off = add(cg, base, add(cg, mul(cg, i, I64(stride)), j));
  a2 = LLVMBuildFAdd(BD, a2, cg_load(cg, P->dt, P->x, off), "");
  cg_loop_end(cg, &lj, &a2);
  acc = a2;
  cg_loop_end(cg, &li, &acc);
  double inv = 1.0 / (double)(P->kh * P->kw);
  return LLVMBuildFMul(BD, acc, cg_const(cg, P->dt, inv), "");
}

/* The average of window (r, q): its in-bounds cells / (kh*kw). */
static LLVMValueRef average(Cg *cg, Pool *P, LLVMValueRef base,
                            LLVMValueRef r, LLVMValueRef q) {
  LLVMValueRef r0, r1, c0, c1;
  span(cg, LLVMBuildSub(BD, mul(cg, r, I64(P->sh)), I64(P->ph), ""), P->kh,
       P->h, &r0, &r1);
  span(cg, LLVMBuildSub(BD, mul(cg, q, I64(P->sw)), I64(P->pw), ""), P->kw,
       P->w, &c0, &c1);
  return rect_mean(cg, P, base, P->w, r0, r1, c0, c1);
}

/* Interior windows (every cell in bounds) along one dim: outputs
 * [*lo, *hi) (empty when there are none). */
static void interior(int64_t k, int64_t s, int64_t p, int64_t n,
                     int64_t on, int64_t *lo, int64_t *hi) {
  *lo = (p + s - 1) / s;
  *hi = n - k + p >= 0 ? (n - k + p) / s + 1 : 0;
  if (*hi > on) *hi = on;
  if (*hi < *lo) *hi = *lo;
}

/* Window (r, q) known to be interior, unrolled over its kh*kw cells in
 * row-major order with the general path's arithmetic: the first
 * maximum (a NaN replaces a non-NaN) and its cell index, or the mean. */
static Arg window_fast(Cg *cg, Pool *P, bool max, LLVMValueRef base,
                       LLVMValueRef r, LLVMValueRef q) {
  LLVMValueRef top = add(cg, base,
                         add(cg, mul(cg, LLVMBuildSub(BD, mul(cg, r,
                                     I64(P->sh)), I64(P->ph), ""),
                                     I64(P->w)),
                             LLVMBuildSub(BD, mul(cg, q, I64(P->sw)),
                                          I64(P->pw), "")));
  LLVMValueRef best = cg_const(cg, P->dt, 0), arg = I64(0);
  for (int64_t i = 0; i < P->kh; i++)
    for (int64_t j = 0; j < P->kw; j++) {
      LLVMValueRef v = cg_load(cg, P->dt, P->x,
                               add(cg, top, I64(i * P->w + j)));
      if (!max) {
        best = LLVMBuildFAdd(BD, best, v, "");
        continue;
      }
      if (i == 0 && j == 0) {
        best = v;
        continue;
      }
      LLVMValueRef up = replaces(cg, v, best);
      best = LLVMBuildSelect(BD, up, v, best, "");
      arg = LLVMBuildSelect(BD, up, I64(i * P->kw + j), arg, "");
    }
  if (!max)
    best = LLVMBuildFMul(BD, best,
                         cg_const(cg, P->dt, 1.0 / (double)(P->kh * P->kw)),
                         "");
  return (Arg){best, arg};
}

/* ---- windows of width 2, stride 2 (kw = sw = 2), f32 / f64 ----
 * VL consecutive interior windows of one output row at once: each of
 * their kh rows is 2*VL contiguous cells, two unit-stride vector loads
 * split into the even (j = 0) and odd (j = 1) columns by shuffles; the
 * first maximum is folded over the cells in row-major order with the
 * scalar path's compares, lane by lane, so the results are the same. */
static int pair_lanes(const Pool *P) {
  if (P->kw != 2 || P->sw != 2) return 0;
  return P->dt == DT_F32 ? 16 : P->dt == DT_F64 ? 8 : 0;
}

static LLVMValueRef vsplat(Cg *cg, LLVMValueRef c, int n) {
  LLVMValueRef e[16];
  for (int i = 0; i < n; i++) e[i] = c;
  return LLVMConstVector(e, (unsigned)n);
}

/* Shuffle of (a, b) picking lanes first, first + step, ... (n lanes;
 * index >= n means b's lane index - n). */
static LLVMValueRef pick(Cg *cg, LLVMValueRef a, LLVMValueRef b, int n,
                         const int *idx) {
  LLVMValueRef m[16];
  for (int i = 0; i < n; i++) m[i] = cg_i32(cg, idx[i]);
  return LLVMBuildShuffleVector(BD, a, b, LLVMConstVector(m, (unsigned)n),
                                "");
}

/* Element offset of the top-left cell of window (r, q). */
static LLVMValueRef window_top(Cg *cg, Pool *P, LLVMValueRef base,
                               LLVMValueRef r, LLVMValueRef q) {
  LLVMValueRef row = LLVMBuildSub(BD, mul(cg, r, I64(P->sh)), I64(P->ph), "");
  LLVMValueRef col = LLVMBuildSub(BD, mul(cg, q, I64(P->sw)), I64(P->pw), "");
  return add(cg, base, add(cg, mul(cg, row, I64(P->w)), col));
}

/* Windows q .. q+n-1 (interior): the first maximum and its cell index
 * (i32 lanes, i*2 + j). */
static Arg pair_argmax(Cg *cg, Pool *P, LLVMValueRef base, LLVMValueRef r,
                       LLVMValueRef q, int n) {
  int ev[16], od[16];
  for (int i = 0; i < n; i++) ev[i] = 2 * i, od[i] = 2 * i + 1;
  LLVMValueRef top = window_top(cg, P, base, r, q), best = NULL, arg = NULL;
  for (int64_t i = 0; i < P->kh; i++) {
    LLVMValueRef at = add(cg, top, I64(i * P->w));
    LLVMValueRef lo = cg_ops_vload(cg, P->dt, P->x, at, n);
    LLVMValueRef hi = cg_ops_vload(cg, P->dt, P->x, add(cg, at, I64(n)), n);
    LLVMValueRef cell[2] = {pick(cg, lo, hi, n, ev), pick(cg, lo, hi, n, od)};
    for (int j = 0; j < 2; j++) {
      LLVMValueRef v = cell[j], k = vsplat(cg, cg_i32(cg, (int)i * 2 + j), n);
      if (!best) {
        best = v, arg = k;
        continue;
      }
      LLVMValueRef up = replaces(cg, v, best);
      best = LLVMBuildSelect(BD, up, v, best, "");
      arg = LLVMBuildSelect(BD, up, k, arg, "");
    }
  }
  return (Arg){best, arg};
}

/* Interior windows [a, b) of row r in blocks of VL, VL/2, VL/4 (rows
 * of 7 or 14 windows are common); a rest shorter than a block that
 * has a full block before it is done as one block ending at b, which
 * redoes a few windows: fn must store each window's own cells from
 * its inputs only, so the stores repeat the same values (14 windows:
 * 8 + 8 at 6, not 8 + 4 + 2 scalar). Returns where the scalar loop
 * takes over. fn emits windows q .. q+n-1. */
typedef void (*PairFn)(Cg *cg, Pool *P, LLVMValueRef base, LLVMValueRef r,
                       LLVMValueRef q, int n, void *ud);
static LLVMValueRef pair_blocks(Cg *cg, Pool *P, LLVMValueRef base,
                                LLVMValueRef r, LLVMValueRef a,
                                LLVMValueRef b, PairFn fn, void *ud) {
  LLVMValueRef a0 = a;
  for (int n = pair_lanes(P), k = 0; n && k < 3; n /= 2, k++) {
    LLVMValueRef nb = LLVMBuildSDiv(BD, LLVMBuildSub(BD, b, a, ""), I64(n),
                                    "");
    CgLoop l;
    LLVMValueRef t = cg_loop_begin(cg, &l, I64(0), nb, NULL, 0);
    fn(cg, P, base, r, add(cg, a, mul(cg, t, I64(n))), n, ud);
    cg_loop_end(cg, &l, NULL);
    a = add(cg, a, mul(cg, nb, I64(n)));
    LLVMValueRef tail = LLVMBuildAnd(
        BD, LLVMBuildICmp(BD, LLVMIntSLT, a, b, ""),
        LLVMBuildICmp(BD, LLVMIntSGE, LLVMBuildSub(BD, b, a0, ""), I64(n),
                      ""), "");
    CgLoop lt;
    cg_loop_begin(cg, &lt, I64(0), LLVMBuildZExt(BD, tail, cg->t_i64, ""),
                  NULL, 0);
    fn(cg, P, base, r, LLVMBuildSub(BD, b, I64(n), ""), n, ud);
    cg_loop_end(cg, &lt, NULL);
    a = LLVMBuildSelect(BD, tail, b, a, "");
  }
  return a;
}

static void pair_fwd(Cg *cg, Pool *P, LLVMValueRef base, LLVMValueRef r,
                     LLVMValueRef q, int n, void *ud) {
  LLVMValueRef obase = ud; /* the output row's first element */
  cg_ops_vstore(cg, P->dt, P->y, add(cg, obase, q),
                pair_argmax(cg, P, base, r, q, n).best, n);
}

/* max_pool2d_backward with disjoint windows: each window's kh x 2 cells
 * get 0 + dy at the first maximum and 0 elsewhere, interleaved back
 * into two contiguous stores per window row. ud: dy at the row. */
static void pair_bwd(Cg *cg, Pool *P, LLVMValueRef base, LLVMValueRef r,
                     LLVMValueRef q, int n, void *ud) {
  LLVMValueRef *dy = ud; /* {dy pointer, element offset of the row} */
  Arg w = pair_argmax(cg, P, base, r, q, n);
  LLVMValueRef zero = vsplat(cg, cg_const(cg, P->dt, 0), n);
  LLVMValueRef d = LLVMBuildFAdd(
      BD, zero, cg_ops_vload(cg, P->dt, dy[0], add(cg, dy[1], q), n), "");
  int lo[16], hi[16];
  for (int i = 0; i < n; i++) {
    lo[i] = i % 2 ? n + i / 2 : i / 2;
    hi[i] = lo[i] + n / 2;
  }
  LLVMValueRef top = window_top(cg, P, base, r, q);
  for (int64_t i = 0; i < P->kh; i++) {
    LLVMValueRef c[2];
    for (int j = 0; j < 2; j++) {
      LLVMValueRef k = vsplat(cg, cg_i32(cg, (int)i * 2 + j), n);
      c[j] = LLVMBuildSelect(BD, LLVMBuildICmp(BD, LLVMIntEQ, w.arg, k, ""),
                             d, zero, "");
    }
    LLVMValueRef at = add(cg, top, I64(i * P->w));
    cg_ops_vstore(cg, P->dt, P->y, at, pick(cg, c[0], c[1], n, lo), n);
    cg_ops_vstore(cg, P->dt, P->y, add(cg, at, I64(n)),
                  pick(cg, c[0], c[1], n, hi), n);
  }
}

/* Output columns of row r split as general [0, a), interior [a, b),
 * general [b, ow): [a, b) is the interior column range when r's window
 * rows are all in bounds, else empty (a = b = ow). */
static void split_row(Cg *cg, Pool *P, LLVMValueRef r, LLVMValueRef *a,
                      LLVMValueRef *b) {
  int64_t rlo, rhi, qlo, qhi;
  interior(P->kh, P->sh, P->ph, P->h, P->oh, &rlo, &rhi);
  interior(P->kw, P->sw, P->pw, P->w, P->ow, &qlo, &qhi);
  LLVMValueRef in = LLVMBuildAnd(
      BD, LLVMBuildICmp(BD, LLVMIntSGE, r, I64(rlo), ""),
      LLVMBuildICmp(BD, LLVMIntSLT, r, I64(rhi), ""), "");
  in = LLVMBuildAnd(BD, in, LLVMConstInt(cg->t_i1, qlo < qhi, 0), "");
  *a = LLVMBuildSelect(BD, in, I64(qlo), I64(P->ow), "");
  *b = LLVMBuildSelect(BD, in, I64(qhi), I64(P->ow), "");
}

/* Forward: one output row (plane * oh + r) per iteration. */
static void fwd_row(Cg *cg, Pool *P, bool max, LLVMValueRef row) {
  LLVMValueRef pl = LLVMBuildSDiv(BD, row, I64(P->oh), "");
  LLVMValueRef r = LLVMBuildSRem(BD, row, I64(P->oh), "");
  LLVMValueRef base = mul(cg, pl, I64(P->h * P->w));
  LLVMValueRef obase = mul(cg, row, I64(P->ow)), a, b;
  split_row(cg, P, r, &a, &b);
  LLVMValueRef a1 = max ? pair_blocks(cg, P, base, r, a, b, pair_fwd, obase)
                        : a; /* interior windows left for the loop */
  LLVMValueRef lo[3] = {I64(0), a1, b}, hi[3] = {a, b, I64(P->ow)};
  for (int part = 0; part < 3; part++) {
    CgLoop l;
    LLVMValueRef q = cg_loop_begin(cg, &l, lo[part], hi[part], NULL, 0);
    LLVMValueRef v = part == 1 ? window_fast(cg, P, max, base, r, q).best
                     : max     ? argmax(cg, P, base, r, q).best
                               : average(cg, P, base, r, q);
    cg_store(cg, P->dt, P->y, add(cg, obase, q), v);
    cg_loop_end(cg, &l, NULL);
  }
}

/* N * per for t [N, ...]: a size expression when the batch N is
 * dynamic (pool_dyn), read at run time with cg_dim. */
static int64_t batch_times(Cg *cg, const Type *t, int64_t per) {
  int64_t d;
  DimStatus st = dim_mul(cg->ctx, t->dims[0], per, &d);
  RLX_ASSERT(st == DIM_OK);
  return d;
}

static bool emit_fwd(Cg *cg, Node *n) {
  Pool P;
  init(&P, n, &n->in[0]->type, &n->type);
  int64_t rows = batch_times(cg, &n->type, n->type.dims[1] * P.oh);
  if (rows == 0 || P.ow == 0) return true;
  LLVMValueRef v[2] = {cg_buf(cg, n), cg_buf(cg, n->in[0])};
  CgPar par;
  LLVMValueRef row = cg_par_begin(cg, &par, cg_dim(cg, rows),
                                  cg_grain(dim_bound(rows),
                                           P.ow * P.kh * P.kw), v, 2,
                                  true);
  P.y = v[0];
  P.x = v[1];
  fwd_row(cg, &P, n->op == OP_MAX_POOL2D, row);
  cg_par_end(cg, &par);
  return true;
}

/* max_pool2d_backward, one plane: zero, then dy to each first max. */
static void max_bwd_plane(Cg *cg, Pool *P, LLVMValueRef dy,
                          LLVMValueRef pl) {
  LLVMValueRef base = mul(cg, pl, I64(P->h * P->w));
  LLVMValueRef obase = mul(cg, pl, I64(P->oh * P->ow));
  CgLoop lz, lr, lq;
  /* windows that share no cell (stride >= kernel): an interior window
   * writes each of its cells, 0 + dy at the argmax (the general path's
   * sum) and 0 elsewhere; when they tile the plane (no padding, stride
   * = kernel, sizes multiples of it) every cell is written so, and the
   * plane needs no zeroing first */
  bool disjoint = P->sh >= P->kh && P->sw >= P->kw;
  bool tiled = P->ph == 0 && P->pw == 0 && P->sh == P->kh &&
               P->sw == P->kw && P->h == P->oh * P->kh &&
               P->w == P->ow * P->kw;
  if (!tiled) {
    LLVMValueRef z = cg_loop_begin(cg, &lz, I64(0), I64(P->h * P->w), NULL,
                                   0);
    cg_store(cg, P->dt, P->y, add(cg, base, z), cg_const(cg, P->dt, 0));
    cg_loop_end(cg, &lz, NULL);
  }
  LLVMValueRef r = cg_loop_begin(cg, &lr, I64(0), I64(P->oh), NULL, 0), a, b;
  split_row(cg, P, r, &a, &b);
  LLVMValueRef at[2] = {dy, add(cg, obase, mul(cg, r, I64(P->ow)))};
  LLVMValueRef a1 = disjoint ? pair_blocks(cg, P, base, r, a, b, pair_bwd, at)
                             : a; /* interior windows left for the loop */
  LLVMValueRef lo[3] = {I64(0), a1, b}, hi[3] = {a, b, I64(P->ow)};
  for (int part = 0; part < 3; part++) {
    LLVMValueRef q = cg_loop_begin(cg, &lq, lo[part], hi[part], NULL, 0);
    LLVMValueRef oi = add(cg, obase, add(cg, mul(cg, r, I64(P->ow)), q));
    LLVMValueRef d = cg_load(cg, P->dt, dy, oi);
    if (part == 1) {
      Arg w = window_fast(cg, P, true, base, r, q);
      LLVMValueRef top = add(cg, base, add(cg,
          mul(cg, LLVMBuildSub(BD, mul(cg, r, I64(P->sh)), I64(P->ph), ""),
              I64(P->w)),
          LLVMBuildSub(BD, mul(cg, q, I64(P->sw)), I64(P->pw), "")));
      if (disjoint) {
        LLVMValueRef d0 = LLVMBuildFAdd(BD, cg_const(cg, P->dt, 0), d, "");
        for (int64_t k = 0; k < P->kh * P->kw; k++) {
          LLVMValueRef hit = LLVMBuildICmp(BD, LLVMIntEQ, w.arg, I64(k), "");
          cg_store(cg, P->dt, P->y,
                   add(cg, top, I64(k / P->kw * P->w + k % P->kw)),
                   LLVMBuildSelect(BD, hit, d0, cg_const(cg, P->dt, 0),
                                   ""));
        }
        cg_loop_end(cg, &lq, NULL);
        continue;
      }
      LLVMValueRef cell = add(cg, mul(cg, LLVMBuildSDiv(BD, w.arg,
                                                        I64(P->kw), ""),
                                      I64(P->w)),
                              LLVMBuildSRem(BD, w.arg, I64(P->kw), ""));
      LLVMValueRef xi = add(cg, top, cell);
      cg_store(cg, P->dt, P->y, xi,
               LLVMBuildFAdd(BD, cg_load(cg, P->dt, P->y, xi), d, ""));
    } else {
      LLVMValueRef xi = add(cg, base, argmax(cg, P, base, r, q).arg);
      cg_store(cg, P->dt, P->y, xi,
               LLVMBuildFAdd(BD, cg_load(cg, P->dt, P->y, xi), d, ""));
    }
    cg_loop_end(cg, &lq, NULL);
  }
  cg_loop_end(cg, &lr, NULL);
}

static bool emit_max_bwd(Cg *cg, Node *n) {
  Pool P;
  init(&P, n, &n->in[0]->type, &n->in[1]->type);
  int64_t planes = batch_times(cg, &n->type, n->type.dims[1]);
  if (planes == 0 || P.h * P.w == 0) return true;
  LLVMValueRef v[3] = {cg_buf(cg, n), cg_buf(cg, n->in[0]),
                       cg_buf(cg, n->in[1])};
  CgPar par;
  int64_t work = P.h * P.w + P.oh * P.ow * P.kh * P.kw;
  LLVMValueRef pl = cg_par_begin(cg, &par, cg_dim(cg, planes),
                                 cg_grain(dim_bound(planes), work), v, 3,
                                 true);
  P.y = v[0];
  P.x = v[1];
  max_bwd_plane(cg, &P, v[2], pl);
  cg_par_end(cg, &par);
  return true;
}

/* Windows covering input index i along one dim: [lo, hi). */
static void covering(Cg *cg, LLVMValueRef i, int64_t k, int64_t s,
                     int64_t p, int64_t on, LLVMValueRef *lo,
                     LLVMValueRef *hi) {
  LLVMValueRef ip = add(cg, i, I64(p));
  LLVMValueRef a = add(cg, ip, I64(s - k)); /* ip - k + 1 + s - 1 */
  *lo = smax(cg, LLVMBuildSDiv(BD, a, I64(s), ""), I64(0));
  *hi = smin(cg, add(cg, LLVMBuildSDiv(BD, ip, I64(s), ""), I64(1)),
             I64(on));
}

/* avg_pool2d_backward, one input row (plane * h + r): x is dy here. */
static void avg_bwd_row(Cg *cg, Pool *P, LLVMValueRef row) {
  LLVMValueRef pl = LLVMBuildSDiv(BD, row, I64(P->h), "");
  LLVMValueRef r = LLVMBuildSRem(BD, row, I64(P->h), "");
  LLVMValueRef obase = mul(cg, pl, I64(P->oh * P->ow));
  LLVMValueRef r0, r1, c0, c1;
  covering(cg, r, P->kh, P->sh, P->ph, P->oh, &r0, &r1);
  CgLoop lc;
  LLVMValueRef c = cg_loop_begin(cg, &lc, I64(0), I64(P->w), NULL, 0);
  covering(cg, c, P->kw, P->sw, P->pw, P->ow, &c0, &c1);
  LLVMValueRef v = rect_mean(cg, P, obase, P->ow, r0, r1, c0, c1);
  cg_store(cg, P->dt, P->y, add(cg, mul(cg, row, I64(P->w)), c), v);
  cg_loop_end(cg, &lc, NULL);
}

static bool emit_avg_bwd(Cg *cg, Node *n) {
  Pool P;
  init(&P, n, &n->type, &n->in[0]->type);
  int64_t rows = batch_times(cg, &n->type, n->type.dims[1] * P.h);
  if (rows == 0 || P.w == 0) return true;
  LLVMValueRef v[2] = {cg_buf(cg, n), cg_buf(cg, n->in[0])};
  CgPar par;
  int64_t work = P.w * (P.kh / P.sh + 1) * (P.kw / P.sw + 1);
  LLVMValueRef row = cg_par_begin(cg, &par, cg_dim(cg, rows),
                                  cg_grain(dim_bound(rows), work), v, 2,
                                  true);
  P.y = v[0];
  P.x = v[1];
  avg_bwd_row(cg, &P, row);
  cg_par_end(cg, &par);
  return true;
}

static bool cg_emit_pool(Cg *cg, Node *n) {
  switch (n->op) {
  case OP_MAX_POOL2D_BACKWARD: return emit_max_bwd(cg, n);
  case OP_AVG_POOL2D_BACKWARD: return emit_avg_bwd(cg, n);
  default: return emit_fwd(cg, n);
  }
}

/* Dynamic sizes: the batch N (the shape rules keep C, H and W static),
 * an outer trip count read at run time. */
static const char *pool_dyn(const Node *n) {
  (void)n;
  return NULL;
}

const CgEmitter cg_emitter_pool = {cg_emit_pool, NULL, pool_dyn};
