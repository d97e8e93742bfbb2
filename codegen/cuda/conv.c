/* conv.c: conv2d, conv2d_backward_input and conv2d_backward_weight on
 * the GPU (cuda.h), NCHW, with stride, padding, dilation and groups
 * (depthwise included), the geometry of the CPU path (cg_conv_geometry,
 * emit/conv.c).
 *
 * All three are implicit GEMMs, one per group g (G groups, Cg = C/G
 * input and Cog = Co/G output channels each), with operands gathered
 * from the tensors on the fly (no im2col buffer, no scratch):
 * - conv2d: rows = output pixels (n, oh, ow), columns = output channels
 *   of g, k = (ci, kh, kw); A = x at (oh sh - ph + kh dh, ow sw - pw +
 *   kw dw), 0 in the padding; B = w[g Cog + col, k].
 * - conv2d_backward_input, the transposed convolution in gather form:
 *   rows = input pixels (n, h, w), columns = input channels of g,
 *   k = (co, kh, kw); A = dy at ((h + ph - kh dh) / sh, ...) where that
 *   divides exactly and lands in the output, else 0; B = w[g Cog + co,
 *   col, kh, kw].
 * - conv2d_backward_weight: rows = output channels of g, columns =
 *   (ci, kh, kw), k = (n, oh, ow): the correlation of dy and x; A =
 *   dy[n, g Cog + row, oh, ow], B = x as for conv2d.
 * The kernel is matmul.c's CUDA-core tile with a shape that fits few
 * columns (depthwise convolutions have one): 256 threads as TX columns
 * x TY rows, TX the smallest power of two >= the column count, at most
 * 16, computing a TY R x TX R output tile (R x R per thread; R = 4, 2
 * or 1, the largest that still gives about one block per SM, TY R <=
 * 256), 16-deep k slices staged in shared memory with the next slice's
 * loads in flight. Every output is fma
 * over k = 0, 1, ... from 0: a fixed order, the same bits whatever R,
 * no atomics. Few output tiles and a long k (conv2d_backward_weight's
 * k is every output pixel of the batch) split k over S blocks as
 * matmul.c does: each writes its partial sums (compute type) to the
 * node's scratch, a second kernel adds them in slice order; S is a
 * function of the shape, so the bits are still fixed. f16/bf16 load
 * into f32 and round once on store (the CPU also computes them in f32
 * and rounds once).
 * On the tensor cores: f16/bf16 GEMMs of at least 16 columns use
 * mma.m16n8k16 (f32 accumulators) on a 128 x 64 tile (128 x 32 for at
 * most 32 columns) of 8 warps, k in slices of 32 gathered (the same
 * addresses as the loaders below, computed incrementally: g_*) into
 * shared memory as [row][k] 16-bit rows (16-byte chunks XOR-swizzled
 * by row pair), fragments by ldmatrix; the same pipeline, split and
 * store, each output the mma chain over its slices in order.
 */
#include "codegen/cuda/mma.h"

#define TS 16      /* tile edge in threads */
#define CV_R_MAX 4
#define CV_SMS 120 /* aim for at least this many blocks */
#define CV_SPLIT_K 128 /* shortest k range of a split GEMM */
#define MB 128     /* tensor cores: rows of a tile, */
#define MK 32      /* k of a slice */

typedef struct Cv Cv;
/* lda, ldb: operand element (row, col) of group g's A or B (compute
 * type), 0 out of range; out: the element offset of output (row, col)
 * of group g. */
typedef LLVMValueRef (*CvLoad)(Cu *cu, const Cv *v, LLVMValueRef g,
                               LLVMValueRef r, LLVMValueRef c);

struct Cv {
  DType dt;
  LLVMTypeRef et;                /* compute type */
  int64_t n, c, h, w, co, kh, kw, oh, ow, sh, sw, ph, pw, dh, dw, groups;
  int64_t cg, cog;               /* channels per group: in, out */
  int64_t M, N, K;               /* GEMM of one group */
  int R, TX, TY;                 /* R x R outputs per thread; threads
                                    TX (columns) x TY (rows) */
  bool tc;                       /* on the tensor cores */
  int bm, bn, bk;                /* tile rows, columns; k of a slice */
  int64_t tm, tn, S, ks;         /* tiles; k split into S ranges of ks */
  CvLoad lda, ldb, out;
  LLVMValueRef x, wt, y;         /* buffers: input, weight, output-side */
  LLVMValueRef part;             /* split: offset of this range's sums */
  LLVMValueRef As, Bs, tid, tx, ty, row0, col0, grp;
};

/* The compute dtype of the partial sums of a split GEMM. */
static DType part_dt(DType dt) { return dt == DT_F64 ? DT_F64 : DT_F32; }

void cu_conv_pair(const Node *n, AttrId id, int64_t def, int64_t *v) {
  int k;
  const int64_t *a = ir_attr_ints(n, id, &k);
  v[0] = a && k == 2 ? a[0] : def;
  v[1] = a && k == 2 ? a[1] : def;
}

/* Geometry of n: x, w and y the tensors of the forward convolution. */
static void cv_init(Cv *v, const Node *n, const Type *x, const Type *w,
                    const Type *y) {
  int64_t s[2], p[2], d[2];
  cu_conv_pair(n, ATTR_STRIDE, 1, s);
  cu_conv_pair(n, ATTR_PADDING, 0, p);
  cu_conv_pair(n, ATTR_DILATION, 1, d);
  *v = (Cv){.dt = n->type.dt, .n = x->dims[0], .c = x->dims[1],
            .h = x->dims[2], .w = x->dims[3], .co = w->dims[0],
            .kh = w->dims[2], .kw = w->dims[3], .oh = y->dims[2],
            .ow = y->dims[3], .sh = s[0], .sw = s[1], .ph = p[0],
            .pw = p[1], .dh = d[0], .dw = d[1],
            .groups = ir_attr_int(n, ATTR_GROUPS, 1)};
  v->cg = v->c / v->groups;
  v->cog = v->co / v->groups;
}

static LLVMValueRef and3(Cg *cg, LLVMValueRef a, LLVMValueRef b,
                         LLVMValueRef c) {
  return LLVMBuildAnd(cg->b, LLVMBuildAnd(cg->b, a, b, ""), c, "");
}

LLVMValueRef cu_in_range(Cu *cu, LLVMValueRef i, int64_t n) {
  Cg *cg = cu->dev;
  return LLVMBuildAnd(
      cg->b, LLVMBuildICmp(cg->b, LLVMIntSGE, i, i64(cu, 0), ""),
      LLVMBuildICmp(cg->b, LLVMIntSLT, i, i64(cu, n), ""), "");
}

/* buf[off] where ok, else 0 (the load reads element 0 instead). */
static LLVMValueRef load_if(Cu *cu, const Cv *v, LLVMValueRef buf,
                            LLVMValueRef ok, LLVMValueRef off) {
  Cg *cg = cu->dev;
  off = LLVMBuildSelect(cg->b, ok, off, i64(cu, 0), "");
  return LLVMBuildSelect(cg->b, ok, cg_load(cg, v->dt, buf, off),
                         cg_const(cg, v->dt, 0), "");
}

/* x[n, g Cg + ci, oh sh - ph + kh dh, ow sw - pw + kw dw], 0 in the
 * padding; pix = (n, oh, ow), tap = (ci, kh, kw); ok: both in range. */
static LLVMValueRef x_tap(Cu *cu, const Cv *v, LLVMValueRef g,
                          LLVMValueRef pix, LLVMValueRef tap,
                          LLVMValueRef ok) {
  Cg *cg = cu->dev;
  LLVMValueRef ow = urem(cu, pix, v->ow), t = udiv(cu, pix, v->ow);
  LLVMValueRef oh = urem(cu, t, v->oh), n = udiv(cu, t, v->oh);
  LLVMValueRef kw = urem(cu, tap, v->kw), u = udiv(cu, tap, v->kw);
  LLVMValueRef kh = urem(cu, u, v->kh), ci = udiv(cu, u, v->kh);
  LLVMValueRef ih = LLVMBuildSub(cg->b, add(cu, mul(cu, oh, v->sh),
                                            mul(cu, kh, v->dh)),
                                 i64(cu, v->ph), "");
  LLVMValueRef iw = LLVMBuildSub(cg->b, add(cu, mul(cu, ow, v->sw),
                                            mul(cu, kw, v->dw)),
                                 i64(cu, v->pw), "");
  ok = and3(cg, ok, cu_in_range(cu, ih, v->h),
            cu_in_range(cu, iw, v->w));
  LLVMValueRef ch = add(cu, mul(cu, n, v->c), add(cu, mul(cu, g, v->cg), ci));
  LLVMValueRef off = add(cu, mul(cu, add(cu, mul(cu, ch, v->h), ih), v->w),
                         iw);
  return load_if(cu, v, v->x, ok, off);
}

/* r < rk and c < ck (i1). */
static LLVMValueRef both_in(Cu *cu, LLVMValueRef r, LLVMValueRef c,
                            int64_t rk, int64_t ck) {
  return LLVMBuildAnd(cu->dev->b, ult(cu, r, rk), ult(cu, c, ck), "");
}

/* ---- conv2d ---- */

static LLVMValueRef fwd_a(Cu *cu, const Cv *v, LLVMValueRef g,
                          LLVMValueRef r, LLVMValueRef k) {
  return x_tap(cu, v, g, r, k, both_in(cu, r, k, v->M, v->K));
}

static LLVMValueRef fwd_b(Cu *cu, const Cv *v, LLVMValueRef g,
                          LLVMValueRef k, LLVMValueRef c) {
  LLVMValueRef co = add(cu, mul(cu, g, v->cog), c);
  return load_if(cu, v, v->wt, both_in(cu, k, c, v->K, v->N),
                 add(cu, mul(cu, co, v->K), k));
}

/* y[n, g Cog + c, oh, ow] with r = (n, oh, ow). */
static LLVMValueRef fwd_out(Cu *cu, const Cv *v, LLVMValueRef g,
                            LLVMValueRef r, LLVMValueRef c) {
  int64_t hw = v->oh * v->ow;
  LLVMValueRef ch = add(cu, mul(cu, udiv(cu, r, hw), v->co),
                        add(cu, mul(cu, g, v->cog), c));
  return add(cu, mul(cu, ch, hw), urem(cu, r, hw));
}

/* ---- conv2d_backward_input: x is dy here, y is dx ---- */

/* dy[n, g Cog + co, oh, ow] for input pixel r = (n, h, w) and
 * k = (co, kh, kw): oh = (h + ph - kh dh) / sh when exact, in range. */
static LLVMValueRef bin_a(Cu *cu, const Cv *v, LLVMValueRef g,
                          LLVMValueRef r, LLVMValueRef k) {
  Cg *cg = cu->dev;
  LLVMValueRef ok = both_in(cu, r, k, v->M, v->K);
  LLVMValueRef iw = urem(cu, r, v->w), t = udiv(cu, r, v->w);
  LLVMValueRef ih = urem(cu, t, v->h), n = udiv(cu, t, v->h);
  LLVMValueRef kw = urem(cu, k, v->kw), u = udiv(cu, k, v->kw);
  LLVMValueRef kh = urem(cu, u, v->kh), co = udiv(cu, u, v->kh);
  LLVMValueRef a = LLVMBuildSub(cg->b, add(cu, ih, i64(cu, v->ph)),
                                mul(cu, kh, v->dh), "");
  LLVMValueRef b = LLVMBuildSub(cg->b, add(cu, iw, i64(cu, v->pw)),
                                mul(cu, kw, v->dw), "");
  /* a >= 0 is checked before the unsigned / and % are trusted */
  LLVMValueRef oh = udiv(cu, a, v->sh), ow = udiv(cu, b, v->sw);
  LLVMValueRef zero = i64(cu, 0);
  ok = and3(cg, ok, LLVMBuildICmp(cg->b, LLVMIntSGE, a, zero, ""),
            LLVMBuildICmp(cg->b, LLVMIntSGE, b, zero, ""));
  ok = and3(cg, ok, LLVMBuildICmp(cg->b, LLVMIntEQ, urem(cu, a, v->sh), zero,
                                  ""),
            LLVMBuildICmp(cg->b, LLVMIntEQ, urem(cu, b, v->sw), zero, ""));
  ok = and3(cg, ok, ult(cu, oh, v->oh), ult(cu, ow, v->ow));
  LLVMValueRef ch = add(cu, mul(cu, n, v->co), add(cu, mul(cu, g, v->cog), co));
  LLVMValueRef off = add(cu, mul(cu, add(cu, mul(cu, ch, v->oh), oh), v->ow),
                         ow);
  return load_if(cu, v, v->x, ok, off);
}

/* w[g Cog + co, c, kh, kw] for k = (co, kh, kw). */
static LLVMValueRef bin_b(Cu *cu, const Cv *v, LLVMValueRef g,
                          LLVMValueRef k, LLVMValueRef c) {
  int64_t taps = v->kh * v->kw;
  LLVMValueRef co = add(cu, mul(cu, g, v->cog), udiv(cu, k, taps));
  LLVMValueRef off = add(cu, mul(cu, add(cu, mul(cu, co, v->cg), c), taps),
                         urem(cu, k, taps));
  return load_if(cu, v, v->wt, both_in(cu, k, c, v->K, v->N), off);
}

/* dx[n, g Cg + c, h, w] with r = (n, h, w). */
static LLVMValueRef bin_out(Cu *cu, const Cv *v, LLVMValueRef g,
                            LLVMValueRef r, LLVMValueRef c) {
  int64_t hw = v->h * v->w;
  LLVMValueRef ch = add(cu, mul(cu, udiv(cu, r, hw), v->c),
                        add(cu, mul(cu, g, v->cg), c));
  return add(cu, mul(cu, ch, hw), urem(cu, r, hw));
}

/* ---- conv2d_backward_weight: wt is dy here, y is dw ---- */

/* dy[n, g Cog + r, oh, ow] for k = (n, oh, ow). */
static LLVMValueRef bwt_a(Cu *cu, const Cv *v, LLVMValueRef g,
                          LLVMValueRef r, LLVMValueRef k) {
  int64_t hw = v->oh * v->ow;
  LLVMValueRef ch = add(cu, mul(cu, udiv(cu, k, hw), v->co),
                        add(cu, mul(cu, g, v->cog), r));
  return load_if(cu, v, v->wt, both_in(cu, r, k, v->M, v->K),
                 add(cu, mul(cu, ch, hw), urem(cu, k, hw)));
}

static LLVMValueRef bwt_b(Cu *cu, const Cv *v, LLVMValueRef g,
                          LLVMValueRef k, LLVMValueRef c) {
  return x_tap(cu, v, g, k, c, both_in(cu, k, c, v->K, v->N));
}

/* dw[g Cog + r, c] (c = (ci, kh, kw), rows of N elements). */
static LLVMValueRef bwt_out(Cu *cu, const Cv *v, LLVMValueRef g,
                            LLVMValueRef r, LLVMValueRef c) {
  return add(cu, mul(cu, add(cu, mul(cu, g, v->cog), r), v->N), c);
}

/* ---- the tiled GEMM ---- */

/* The shared array "rlx.cv.NAME.TYPE.n" of n elements of et. */
static LLVMValueRef shared_tile(Cg *cg, const char *name, LLVMTypeRef et,
                                int64_t n) {
  char nm[48];
  snprintf(nm, sizeof nm, "rlx.cv.%s.%s.%lld", name,
           LLVMGetTypeKind(et) == LLVMDoubleTypeKind ? "f64" : "f32",
           (long long)n);
  return cu_shared(cg, nm, et, n, 16);
}

static LLVMValueRef slot(Cg *cg, LLVMTypeRef et, LLVMValueRef arr, int i) {
  LLVMValueRef ix = cg_i32(cg, i);
  return LLVMBuildGEP2(cg->b, et, arr, &ix, 1, "");
}

/* Per thread: elements of the A slice (16 x TY R, whole) and of the B
 * slice (16 x TX R, which may have fewer than 256). */
static int qa(const Cv *v) { return v->TY * v->R / TS; }
static int qb(const Cv *v) { return (TS * v->TX * v->R + 255) / 256; }

/* Slice k0 into the registers pa[], pb[]: A (row0 + e / 16, k0 + e % 16)
 * and B (k0 + e / TX R, col0 + e % TX R), e = tid + 256 q. */
static void cv_fetch(Cu *cu, const Cv *v, LLVMValueRef k0, LLVMValueRef pa,
                     LLVMValueRef pb) {
  Cg *cg = cu->dev;
  int w = v->TX * v->R;
  for (int q = 0; q < qa(v); q++) {
    LLVMValueRef e = add(cu, v->tid, i64(cu, q * 256));
    LLVMValueRef a = v->lda(cu, v, v->grp, add(cu, v->row0, udiv(cu, e, TS)),
                            add(cu, k0, urem(cu, e, TS)));
    LLVMBuildStore(cg->b, a, slot(cg, v->et, pa, q));
  }
  for (int q = 0; q < qb(v); q++) {
    LLVMValueRef e = add(cu, v->tid, i64(cu, q * 256));
    LLVMValueRef b = v->ldb(cu, v, v->grp, add(cu, k0, udiv(cu, e, w)),
                            add(cu, v->col0, urem(cu, e, w)));
    LLVMBuildStore(cg->b, b, slot(cg, v->et, pb, q));
  }
}

/* Registers to the shared tiles, k-major: As[kk][r], Bs[kk][c] (B: only
 * e < 16 TX R). */
static void cv_put(Cu *cu, const Cv *v, LLVMValueRef pa, LLVMValueRef pb) {
  Cg *cg = cu->dev;
  int h = v->TY * v->R, nb = TS * v->TX * v->R;
  for (int q = 0; q < qa(v); q++) {
    LLVMValueRef e = add(cu, v->tid, i64(cu, q * 256));
    LLVMValueRef ai = add(cu, mul(cu, urem(cu, e, TS), h), udiv(cu, e, TS));
    LLVMBuildStore(cg->b, LLVMBuildLoad2(cg->b, v->et, slot(cg, v->et, pa, q),
                                         ""),
                   cu_shared_at(cg, v->As, v->et, ai));
  }
  for (int q = 0; q < qb(v); q++) {
    LLVMValueRef e = add(cu, v->tid, i64(cu, q * 256));
    LLVMBasicBlockRef st = cg_block(cg, "cv.put"), nx = cg_block(cg, "cv.n");
    LLVMBuildCondBr(cg->b, ult(cu, e, nb), st, nx);
    LLVMPositionBuilderAtEnd(cg->b, st);
    LLVMBuildStore(cg->b, LLVMBuildLoad2(cg->b, v->et, slot(cg, v->et, pb, q),
                                         ""),
                   cu_shared_at(cg, v->Bs, v->et, e));
    LLVMBuildBr(cg->b, nx);
    LLVMPositionBuilderAtEnd(cg->b, nx);
  }
}

/* acc[i][j] = fma(As[k][ty + TY i], Bs[k][tx + TX j], acc), k < 16. */
static void cv_slice(Cu *cu, const Cv *v, LLVMValueRef acc) {
  Cg *cg = cu->dev;
  int R = v->R, h = v->TY * R, w = v->TX * R;
  for (int k = 0; k < TS; k++) {
    LLVMValueRef av[CV_R_MAX], bv[CV_R_MAX];
    for (int i = 0; i < R; i++) {
      av[i] = LLVMBuildLoad2(cg->b, v->et, cu_shared_at(cg, v->As, v->et,
                             add(cu, v->ty, i64(cu, k * h + v->TY * i))), "");
      bv[i] = LLVMBuildLoad2(cg->b, v->et, cu_shared_at(cg, v->Bs, v->et,
                             add(cu, v->tx, i64(cu, k * w + v->TX * i))), "");
    }
    for (int i = 0; i < R; i++)
      for (int j = 0; j < R; j++) {
        LLVMValueRef p = slot(cg, v->et, acc, i * R + j);
        LLVMValueRef f[3] = {av[i], bv[j], LLVMBuildLoad2(cg->b, v->et, p,
                                                          "")};
        LLVMBuildStore(cg->b, cg_intrinsic(cg, "llvm.fma", v->et, f, 3), p);
      }
  }
}

/* x (compute type) to the output element of (r, c) when both are in
 * range (a split GEMM: its partial sums, compute type, at part + that
 * offset). */
static void cv_put_out(Cu *cu, const Cv *v, LLVMValueRef r, LLVMValueRef c,
                       LLVMValueRef x) {
  Cg *cg = cu->dev;
  LLVMBasicBlockRef st = cg_block(cg, "cv.store");
  LLVMBasicBlockRef nx = cg_block(cg, "cv.next");
  LLVMBuildCondBr(cg->b, both_in(cu, r, c, v->M, v->N), st, nx);
  LLVMPositionBuilderAtEnd(cg->b, st);
  LLVMValueRef at = v->out(cu, v, v->grp, r, c);
  if (v->part)
    cg_store(cg, part_dt(v->dt), v->y, add(cu, v->part, at), x);
  else
    cg_store(cg, v->dt, v->y, at, x);
  LLVMBuildBr(cg->b, nx);
  LLVMPositionBuilderAtEnd(cg->b, nx);
}

/* Outputs in range of this thread's tile to y through v->out() (a
 * split GEMM: its partial sums, compute type, at part + that offset). */
static void cv_store(Cu *cu, const Cv *v, LLVMValueRef acc) {
  Cg *cg = cu->dev;
  for (int i = 0; i < v->R; i++)
    for (int j = 0; j < v->R; j++) {
      LLVMValueRef r = add(cu, v->row0, add(cu, v->ty, i64(cu, v->TY * i)));
      LLVMValueRef c = add(cu, v->col0, add(cu, v->tx, i64(cu, v->TX * j)));
      cv_put_out(cu, v, r, c, LLVMBuildLoad2(
          cg->b, v->et, slot(cg, v->et, acc, i * v->R + j), ""));
    }
}

/* ---- on the tensor cores ----
 * 8 warps as WM x WN (WN = bn / 32), warp (wm, wn) the MT m16 x 4 n8
 * tiles at rows 16 MT wm, columns 32 wn (MT = bm / 16 WM). A slice:
 * A [bm][32] and B [bn][32] (k contiguous, 64 bytes a row, chunk c of
 * row r at c ^ ((r >> 1) & 3): the 8 rows an ldmatrix reads hit
 * distinct banks). */

static int tc_wn(const Cv *v) { return v->bn / 32; }
static int tc_mt(const Cv *v) { return v->bm / 16 / (8 / tc_wn(v)); }

/* Shared byte offset (i32) of element k (a multiple of 8 for a chunk)
 * of row r of a slice tile. */
static LLVMValueRef tc_off(Cg *cg, LLVMValueRef r, LLVMValueRef k) {
  LLVMBuilderRef b = cg->b;
  LLVMValueRef c = LLVMBuildXor(
      b, LLVMBuildLShr(b, k, cg_i32(cg, 3), ""),
      LLVMBuildAnd(b, LLVMBuildLShr(b, r, cg_i32(cg, 1), ""), cg_i32(cg, 3),
                   ""), "");
  return LLVMBuildAdd(
      b, LLVMBuildAdd(b, LLVMBuildMul(b, r, cg_i32(cg, 64), ""),
                      LLVMBuildMul(b, c, cg_i32(cg, 16), ""), ""),
      LLVMBuildMul(b, LLVMBuildAnd(b, k, cg_i32(cg, 7), ""), cg_i32(cg, 2),
                   ""), "");
}

static LLVMValueRef tc_ptr(Cg *cg, LLVMValueRef tile, LLVMValueRef off) {
  return LLVMBuildGEP2(cg->b, cg->t_i8, tile, &off, 1, "");
}

/* The gathers of the tensor-core path, split into the part fixed by a
 * thread's row of the tile (an output pixel, a channel, a tap: computed
 * once per kernel) and the part of k, which a thread steps through E
 * consecutive values a slice (its k digits advanced by carries, divided
 * out once a slice). Each part is an offset, y and x (tap rows and
 * columns: added, or subtracted for the transposed convolution) and ok;
 * the element is the raw 16-bit word, 0 where out of range. */
typedef struct { LLVMValueRef off, y, x, ok; } Part;
enum { G_LIN, G_XTAP, G_DYTAP }; /* off; x at (y, x); dy at (y, x) / s */

/* How operand `b` (0: A, 1: B) of v gathers: its kind, k's digits
 * (d0 = k / (r1 r2), d1 = k / r2 % r1, d2 = k % r2) and their
 * coefficients: off = d0 o0 + d2 o2, y = d1 y1 + y0, x = d2 x2 + x0. */
typedef struct {
  int kind;
  int64_t r1, r2, o0, o2, y1, y0, x2, x0;
} Gk;

static Gk gk(const Cv *v, int b) {
  int64_t hw = v->h * v->w, ohw = v->oh * v->ow;
  if (v->lda == fwd_a) /* x: k = (ci, kh, kw) */
    return b ? (Gk){G_LIN, 1, 1, 1, 0, 0, 0, 0, 0}
             : (Gk){G_XTAP, v->kh, v->kw, hw, 0, v->dh, 0, v->dw, 0};
  if (v->lda == bin_a) /* dy: k = (co, kh, kw); w: k = (co, tap) */
    return b ? (Gk){G_LIN, 1, v->kh * v->kw, v->cg * v->kh * v->kw, 1, 0, 0,
                    0, 0}
             : (Gk){G_DYTAP, v->kh, v->kw, ohw, 0, v->dh, 0, v->dw, 0};
  /* backward weight: dy (k = (n, pixel)), x (k = (n, oh, ow)) */
  return b ? (Gk){G_XTAP, v->oh, v->ow, v->c * hw, 0, v->sh, -v->ph, v->sw,
                  -v->pw}
           : (Gk){G_LIN, 1, ohw, v->co * ohw, 1, 0, 0, 0, 0};
}

/* The fixed part of row (A) or column (B) i of operand b. */
static Part g_fixed(Cu *cu, const Cv *v, int b, LLVMValueRef i) {
  Cg *cg = cu->dev;
  LLVMValueRef g = v->grp, z = i64(cu, 0);
  int64_t hw = v->h * v->w, ohw = v->oh * v->ow, taps = v->kh * v->kw;
  Part p = {z, z, z, b ? ult(cu, i, v->N) : ult(cu, i, v->M)};
  if (gk(v, b).kind == G_LIN) { /* a channel's (or a weight row's) base */
    p.off = v->lda == fwd_a ? mul(cu, add(cu, mul(cu, g, v->cog), i), v->K)
          : v->lda == bin_a ? add(cu, mul(cu, g, v->cog * v->cg * taps),
                                  mul(cu, i, taps))
                            : mul(cu, add(cu, mul(cu, g, v->cog), i), ohw);
    return p;
  }
  if (v->lda == bwt_a) { /* a tap (ci, kh, kw) of x */
    LLVMValueRef kw = urem(cu, i, v->kw), u = udiv(cu, i, v->kw);
    p.off = mul(cu, add(cu, mul(cu, g, v->cg), udiv(cu, u, v->kh)), hw);
    p.y = mul(cu, urem(cu, u, v->kh), v->dh);
    p.x = mul(cu, kw, v->dw);
    return p;
  }
  bool in = v->lda == bin_a; /* a pixel of dx (n, h, w), else of y */
  int64_t pw = in ? v->w : v->ow, ph = in ? v->h : v->oh;
  LLVMValueRef x = urem(cu, i, pw), t = udiv(cu, i, pw);
  LLVMValueRef y = urem(cu, t, ph), n = udiv(cu, t, ph);
  if (in) {
    p.off = mul(cu, add(cu, mul(cu, n, v->co), mul(cu, g, v->cog)), ohw);
    p.y = add(cu, y, i64(cu, v->ph)), p.x = add(cu, x, i64(cu, v->pw));
  } else {
    p.off = mul(cu, add(cu, mul(cu, n, v->c), mul(cu, g, v->cg)), hw);
    p.y = LLVMBuildSub(cg->b, mul(cu, y, v->sh), i64(cu, v->ph), "");
    p.x = LLVMBuildSub(cg->b, mul(cu, x, v->sw), i64(cu, v->pw), "");
  }
  return p;
}

/* The element of fixed part f and k part q (an i16 word). */
static LLVMValueRef g_get(Cu *cu, const Cv *v, int b, Part f, Part q) {
  Cg *cg = cu->dev;
  LLVMBuilderRef bl = cg->b;
  int kind = gk(v, b).kind;
  LLVMValueRef ok = LLVMBuildAnd(bl, f.ok, q.ok, ""), off = add(cu, f.off,
                                                                q.off);
  if (kind == G_XTAP) {
    LLVMValueRef y = add(cu, f.y, q.y), x = add(cu, f.x, q.x);
    ok = and3(cg, ok, cu_in_range(cu, y, v->h), cu_in_range(cu, x, v->w));
    off = add(cu, off, add(cu, mul(cu, y, v->w), x));
  } else if (kind == G_DYTAP) {
    LLVMValueRef a = LLVMBuildSub(bl, f.y, q.y, "");
    LLVMValueRef c = LLVMBuildSub(bl, f.x, q.x, ""), z = i64(cu, 0);
    ok = and3(cg, ok, LLVMBuildICmp(bl, LLVMIntSGE, a, z, ""),
              LLVMBuildICmp(bl, LLVMIntSGE, c, z, ""));
    ok = and3(cg, ok, LLVMBuildICmp(bl, LLVMIntEQ, urem(cu, a, v->sh), z, ""),
              LLVMBuildICmp(bl, LLVMIntEQ, urem(cu, c, v->sw), z, ""));
    LLVMValueRef oy = udiv(cu, a, v->sh), ox = udiv(cu, c, v->sw);
    ok = and3(cg, ok, ult(cu, oy, v->oh), ult(cu, ox, v->ow));
    off = add(cu, off, add(cu, mul(cu, oy, v->ow), ox));
  }
  LLVMValueRef buf = b == (v->lda == bwt_a) ? v->x : v->wt;
  LLVMTypeRef h = cg_ops_bits_type(cg, 2);
  off = LLVMBuildSelect(bl, ok, off, i64(cu, 0), "");
  LLVMValueRef e = LLVMBuildLoad2(bl, h, LLVMBuildGEP2(bl, h, buf, &off, 1,
                                                       ""), "");
  return LLVMBuildSelect(bl, ok, e, LLVMConstNull(h), "");
}

/* Elements a thread gathers of operand b a slice: E consecutive k of
 * row tid / (32 / E), from k E (tid % (32 / E)). */
static int g_e(const Cv *v, int b) { return (b ? v->bn : v->bm) * MK / 256; }
static LLVMValueRef g_row(Cu *cu, const Cv *v, int b) {
  return udiv(cu, v->tid, MK / g_e(v, b));
}
static LLVMValueRef g_k(Cu *cu, const Cv *v, int b) {
  return mul(cu, urem(cu, v->tid, MK / g_e(v, b)), g_e(v, b));
}

/* Slice k0 into the registers p[b][] (the E words of operand b). */
static void tc_fetch(Cu *cu, const Cv *v, LLVMValueRef k0, const Part *fix,
                     LLVMValueRef p[2]) {
  Cg *cg = cu->dev;
  LLVMBuilderRef bl = cg->b;
  for (int b = 0; b < 2; b++) {
    Gk g = gk(v, b);
    LLVMValueRef k = add(cu, k0, g_k(cu, v, b)), ok;
    LLVMValueRef d2 = urem(cu, k, g.r2), t = udiv(cu, k, g.r2);
    LLVMValueRef d1 = urem(cu, t, g.r1), d0 = udiv(cu, t, g.r1);
    for (int e = 0; e < g_e(v, b); e++) {
      if (e) { /* k + 1: d2 + 1, carried into d1, d0 */
        LLVMValueRef one = i64(cu, 1), z = i64(cu, 0);
        d2 = add(cu, d2, one);
        LLVMValueRef c2 = LLVMBuildICmp(bl, LLVMIntEQ, d2, i64(cu, g.r2), "");
        d2 = LLVMBuildSelect(bl, c2, z, d2, "");
        d1 = add(cu, d1, LLVMBuildZExt(bl, c2, cg->t_i64, ""));
        LLVMValueRef c1 = LLVMBuildICmp(bl, LLVMIntEQ, d1, i64(cu, g.r1), "");
        d1 = LLVMBuildSelect(bl, c1, z, d1, "");
        d0 = add(cu, d0, LLVMBuildZExt(bl, c1, cg->t_i64, ""));
      }
      ok = ult(cu, add(cu, k, i64(cu, e)), v->K);
      Part q = {add(cu, mul(cu, d0, g.o0), mul(cu, d2, g.o2)),
                add(cu, mul(cu, d1, g.y1), i64(cu, g.y0)),
                add(cu, mul(cu, d2, g.x2), i64(cu, g.x0)), ok};
      LLVMValueRef w = g_get(cu, v, b, fix[b], q);
      p[b] = LLVMBuildInsertElement(bl, p[b], w, cg_i32(cg, e), "");
    }
  }
}

/* The registers to the shared tiles: 8 words (16 bytes) a store. */
static void tc_put(Cu *cu, const Cv *v, LLVMValueRef p[2]) {
  Cg *cg = cu->dev;
  LLVMBuilderRef bl = cg->b;
  LLVMTypeRef h = cg_ops_bits_type(cg, 2);
  for (int b = 0; b < 2; b++) {
    int E = g_e(v, b), n = E < 8 ? E : 8;
    LLVMValueRef r = LLVMBuildTrunc(bl, g_row(cu, v, b), cg->t_i32, "");
    LLVMValueRef k = LLVMBuildTrunc(bl, g_k(cu, v, b), cg->t_i32, "");
    for (int c = 0; c < E; c += n) {
      LLVMValueRef vec = LLVMGetUndef(LLVMVectorType(h, (unsigned)n));
      for (int e = 0; e < n; e++)
        vec = LLVMBuildInsertElement(
            bl, vec, LLVMBuildExtractElement(bl, p[b], cg_i32(cg, c + e), ""),
            cg_i32(cg, e), "");
      LLVMValueRef o = tc_off(cg, r, LLVMBuildAdd(bl, k, cg_i32(cg, c), ""));
      LLVMSetAlignment(LLVMBuildStore(bl, vec, tc_ptr(cg, b ? v->Bs : v->As,
                                                      o)),
                       (unsigned)(2 * n));
    }
  }
}

/* acc += the slice's A rows of this warp times its B columns. */
static void tc_slice(Cu *cu, const Cv *v, LLVMValueRef acc) {
  Cg *cg = cu->dev;
  LLVMBuilderRef b = cg->b;
  int mt = tc_mt(v);
  LLVMValueRef t = LLVMBuildTrunc(b, v->tid, cg->t_i32, "");
  LLVMValueRef lane = LLVMBuildAnd(b, t, cg_i32(cg, 31), "");
  LLVMValueRef w = LLVMBuildLShr(b, t, cg_i32(cg, 5), "");
  LLVMValueRef wm = LLVMBuildURem(b, w, cg_i32(cg, 8 / tc_wn(v)), "");
  LLVMValueRef wn = LLVMBuildUDiv(b, w, cg_i32(cg, 8 / tc_wn(v)), "");
  LLVMValueRef l7 = LLVMBuildAnd(b, lane, cg_i32(cg, 7), "");
  LLVMValueRef l3 = LLVMBuildAnd(b, LLVMBuildLShr(b, lane, cg_i32(cg, 3), ""),
                                 cg_i32(cg, 1), "");
  LLVMValueRef l4 = LLVMBuildLShr(b, lane, cg_i32(cg, 4), "");
  for (int ks = 0; ks < MK / 16; ks++) {
    LLVMValueRef fa[2][4], fb[4][2];
    for (int m = 0; m < mt; m++) { /* rows + (lane & 15), k + 8 (lane >> 4) */
      LLVMValueRef row = LLVMBuildAdd(b, LLVMBuildAdd(
          b, LLVMBuildMul(b, wm, cg_i32(cg, 16 * mt), ""),
          cg_i32(cg, 16 * m), ""), LLVMBuildAdd(
          b, l7, LLVMBuildShl(b, l3, cg_i32(cg, 3), ""), ""), "");
      LLVMValueRef k = LLVMBuildAdd(b, cg_i32(cg, 16 * ks),
                                    LLVMBuildShl(b, l4, cg_i32(cg, 3), ""), "");
      cu_ldmatrix4(cg, tc_ptr(cg, v->As, tc_off(cg, row, k)), false, fa[m]);
    }
    for (int np = 0; np < 2; np++) { /* cols + (lane & 7) + 8 (lane >> 4),
                                        k + 8 ((lane >> 3) & 1) */
      LLVMValueRef col = LLVMBuildAdd(b, LLVMBuildAdd(
          b, LLVMBuildMul(b, wn, cg_i32(cg, 32), ""), cg_i32(cg, 16 * np), ""),
          LLVMBuildAdd(b, l7, LLVMBuildShl(b, l4, cg_i32(cg, 3), ""), ""), "");
      LLVMValueRef k = LLVMBuildAdd(b, cg_i32(cg, 16 * ks),
                                    LLVMBuildShl(b, l3, cg_i32(cg, 3), ""), "");
      LLVMValueRef r[4];
      cu_ldmatrix4(cg, tc_ptr(cg, v->Bs, tc_off(cg, col, k)), false, r);
      fb[2 * np][0] = r[0], fb[2 * np][1] = r[1];
      fb[2 * np + 1][0] = r[2], fb[2 * np + 1][1] = r[3];
    }
    for (int m = 0; m < mt; m++)
      for (int n = 0; n < 4; n++) {
        LLVMValueRef c[4];
        for (int i = 0; i < 4; i++)
          c[i] = LLVMBuildLoad2(b, cg->t_f32, slot(cg, cg->t_f32, acc,
                                                   16 * m + 4 * n + i), "");
        cu_mma(cg, v->dt, fa[m], fb[n], c);
        for (int i = 0; i < 4; i++)
          LLVMBuildStore(b, c[i], slot(cg, cg->t_f32, acc, 16 * m + 4 * n + i));
      }
  }
}

/* Element i of n8 tile n of m16 tile m of this warp: row
 * 16 (MT wm + m) + lane / 4 + 8 (i / 2), column 32 wn + 8 n +
 * 2 (lane % 4) + i % 2. */
static void tc_store(Cu *cu, const Cv *v, LLVMValueRef acc) {
  Cg *cg = cu->dev;
  int mt = tc_mt(v);
  LLVMValueRef lane = urem(cu, v->tid, 32), w = udiv(cu, v->tid, 32);
  LLVMValueRef wm = urem(cu, w, 8 / tc_wn(v)), wn = udiv(cu, w, 8 / tc_wn(v));
  LLVMValueRef r0 = add(cu, add(cu, v->row0, mul(cu, wm, 16 * mt)),
                        udiv(cu, lane, 4));
  LLVMValueRef c0 = add(cu, add(cu, v->col0, mul(cu, wn, 32)),
                        mul(cu, urem(cu, lane, 4), 2));
  for (int m = 0; m < mt; m++)
    for (int n = 0; n < 4; n++)
      for (int i = 0; i < 4; i++)
        cv_put_out(cu, v, add(cu, r0, i64(cu, 16 * m + 8 * (i / 2))),
                   add(cu, c0, i64(cu, 8 * n + i % 2)),
                   LLVMBuildLoad2(cg->b, cg->t_f32, slot(
                       cg, cg->t_f32, acc, 16 * m + 4 * n + i), ""));
}

/* R, the tiles and the split of k (matmul.c's rules): R the largest
 * that still gives CV_SMS blocks; fewer than 2 CV_SMS blocks and k of
 * at least 2 CV_SPLIT_K: S ranges of ks (whole slices, at least
 * CV_SPLIT_K) for about 4 CV_SMS blocks. A batch without a bound (in M
 * or K) leaves k unsplit: one range, to the run-time K. */
static void cv_tiles(Cv *v) {
  int64_t M = dim_bound(v->M), K = dim_bound(v->K); /* a dynamic batch */
  for (v->TX = 1; v->TX < TS && v->TX < v->N; v->TX *= 2) {}
  v->TY = 256 / v->TX;
  v->tc = (v->dt == DT_BF16 || v->dt == DT_F16) && v->N >= 16;
  if (v->tc)
    v->bm = MB, v->bn = v->N <= 32 ? 32 : 64, v->bk = MK;
  for (int R = CV_R_MAX; R >= 1 && !v->tc; R /= 2) {
    if (v->TY * R > 256 && R > 1) continue;
    v->R = R, v->bm = v->TY * R, v->bn = v->TX * R, v->bk = TS;
    if (v->groups * ((M + v->bm - 1) / v->bm) *
            ((v->N + v->bn - 1) / v->bn) >= CV_SMS)
      break;
  }
  v->tm = (M + v->bm - 1) / v->bm;
  v->tn = (v->N + v->bn - 1) / v->bn;
  int64_t blocks = v->groups * v->tm * v->tn, S = 1;
  bool split = dim_is_bounded(v->M) && dim_is_bounded(v->K);
  if (split && blocks > 0 && blocks < 2 * CV_SMS && K >= 2 * CV_SPLIT_K) {
    int64_t want = 4 * CV_SMS / blocks, most = K / CV_SPLIT_K;
    S = want < most ? want : most;
    if (S < 1) S = 1;
  }
  v->ks = ((K + S - 1) / S + v->bk - 1) / v->bk * v->bk;
  if (v->ks == 0) v->ks = v->bk;
  v->S = (K + v->ks - 1) / v->ks;
  if (v->S < 1) v->S = 1;
  if (!dim_is_bounded(v->K)) /* one range, to the run-time K */
    v->S = 1, v->ks = (RLX_MAX_ELEMS + v->bk - 1) / v->bk * v->bk;
}

/* n's elements at the bound of a dynamic batch: the stride of the
 * split sums. */
static int64_t cv_numel(const Node *n) {
  return type_bytes_bound(&n->type) / dt_size(n->type.dt);
}

/* out[i] = sum over s of part[s][i], in slice order, rounded once. */
static void cv_sum(Cu *cu, CgPlan *p, Node *n, const Cv *v) {
  Cg *cg = cu->dev;
  DType pt = part_dt(v->dt);
  int64_t total = cu_numel(cu, &n->type), stride = cv_numel(n);
  cu_kernel_begin(cu, p, "conv_sum");
  LLVMValueRef i = cu_gid(cu), part = cg_scratch(cg, n);
  cu_guard(cu, ult(cu, i, total));
  LLVMValueRef x = cg_load(cg, pt, part, i);
  for (int64_t k = 1; k < v->S; k++)
    x = LLVMBuildFAdd(cg->b, x, cg_load(cg, pt, part,
                                        add(cu, i, i64(cu, k * stride))), "");
  cg_store(cg, v->dt, cg_buf(cg, n), i, x);
  cu_kernel_end_n(cu, total, EW_BLOCK, 1, EW_BLOCK);
}

/* The slices of the range [k0, kend). */
static LLVMValueRef cv_slices(Cu *cu, const Cv *v, LLVMValueRef k0,
                              LLVMValueRef kend) {
  return udiv(cu, add(cu, LLVMBuildSub(cu->dev->b, kend, k0, ""),
                      i64(cu, v->bk - 1)), v->bk);
}

/* One kernel: blocks over (k range, group, row tile, column tile), the
 * k slices of the range in order, software-pipelined as in matmul.c;
 * a split GEMM adds the ranges in cv_sum. */
static void cv_gemm(Cu *cu, CgPlan *p, Node *n, Cv *v) {
  Cg *cg = cu->dev;
  v->et = cg_ctype(cg, v->dt);
  int64_t tm = v->tm, tn = v->tn;
  if (v->tc) { /* 16-bit [row][k] tiles */
    v->As = cu_shared(cg, "rlx.cv.ta", cg->t_i8, MB * MK * 2, 128);
    v->Bs = cu_shared(cg, v->bn == 64 ? "rlx.cv.tb64" : "rlx.cv.tb32",
                      cg->t_i8, v->bn * MK * 2, 128);
  } else {
    v->As = shared_tile(cg, "a", v->et, TS * v->TY * v->R);
    v->Bs = shared_tile(cg, "b", v->et, TS * v->TX * v->R);
  }
  cu_kernel_begin(cu, p, op_name(n->op));
  v->x = cg_buf(cg, n->in[0]);
  v->wt = cg_buf(cg, n->in[1]);
  v->y = cg_buf(cg, n);
  LLVMValueRef acc = cg_alloca(cg, LLVMArrayType2(v->et, CV_R_MAX * CV_R_MAX),
                               "acc");
  LLVMValueRef bid = cu_ctaid(cu);
  v->tid = cu_tid(cu);
  v->tx = urem(cu, v->tid, v->TX), v->ty = udiv(cu, v->tid, v->TX);
  /* block -> (k range, group, row tile, column tile); a dynamic M: the
   * run-time count of row tiles */
  LLVMValueRef tmv = cu_ceil_div(cu, v->M, v->bm);
  LLVMValueRef rest = udiv(cu, bid, tn);
  v->col0 = mul(cu, urem(cu, bid, tn), v->bn);
  v->row0 = mul(cu, LLVMBuildURem(cg->b, rest, tmv, ""), v->bm);
  rest = LLVMBuildUDiv(cg->b, rest, tmv, "");
  v->grp = urem(cu, rest, v->groups);
  LLVMValueRef k0 = mul(cu, udiv(cu, rest, v->groups), v->ks);
  LLVMValueRef kend = add(cu, k0, i64(cu, v->ks));
  kend = LLVMBuildSelect(cg->b, ult(cu, kend, v->K), kend, cu_size(cu, v->K),
                         "");
  /* a dynamic K: ranges past it are empty */
  kend = LLVMBuildSelect(cg->b, LLVMBuildICmp(cg->b, LLVMIntULT, kend, k0, ""),
                         k0, kend, "");
  if (v->tc) /* f32 accumulators */
    acc = cg_alloca(cg, LLVMArrayType2(cg->t_f32, 32), "acc");
  for (int i = 0; i < (v->tc ? 32 : v->R * v->R); i++)
    LLVMBuildStore(cg->b, cg_const(cg, v->tc ? DT_F32 : v->dt, 0),
                   slot(cg, v->tc ? cg->t_f32 : v->et, acc, i));
  LLVMValueRef pa = cg_alloca(cg, LLVMArrayType2(v->et, 16), "pa");
  LLVMValueRef pb = cg_alloca(cg, LLVMArrayType2(v->et, CV_R_MAX), "pb");
  CgLoop l;
  /* ks is a multiple of bk: a range is whole slices, and the slice
   * fetched after a range's last is never used */
  if (v->tc) { /* the slice in vectors of 16-bit words */
    Part fix[2];
    LLVMValueRef pv[2];
    for (int b = 0; b < 2; b++) {
      fix[b] = g_fixed(cu, v, b, add(cu, b ? v->col0 : v->row0,
                                     g_row(cu, v, b)));
      pv[b] = LLVMGetUndef(LLVMVectorType(cg_ops_bits_type(cg, 2),
                                          (unsigned)g_e(v, b)));
    }
    tc_fetch(cu, v, k0, fix, pv); /* pv: this slice's words, carried */
    LLVMValueRef kt = cg_loop_begin(cg, &l, i64(cu, 0), cv_slices(cu, v, k0,
                                                                   kend),
                                    pv, 2);
    tc_put(cu, v, pv);
    cg_intrinsic_n(cg, "llvm.nvvm.barrier0", NULL, 0, NULL, 0);
    tc_fetch(cu, v, add(cu, k0, mul(cu, add(cu, kt, i64(cu, 1)), v->bk)), fix,
             pv);
    tc_slice(cu, v, acc);
    cg_intrinsic_n(cg, "llvm.nvvm.barrier0", NULL, 0, NULL, 0);
    cg_loop_end(cg, &l, pv);
  } else {
    cv_fetch(cu, v, k0, pa, pb);
    LLVMValueRef kt = cg_loop_begin(cg, &l, i64(cu, 0), cv_slices(cu, v, k0,
                                                                   kend),
                                    NULL, 0);
    cv_put(cu, v, pa, pb);
    cg_intrinsic_n(cg, "llvm.nvvm.barrier0", NULL, 0, NULL, 0);
    cv_fetch(cu, v, add(cu, k0, mul(cu, add(cu, kt, i64(cu, 1)), TS)), pa, pb);
    cv_slice(cu, v, acc);
    cg_intrinsic_n(cg, "llvm.nvvm.barrier0", NULL, 0, NULL, 0);
    cg_loop_end(cg, &l, NULL);
  }
  if (v->S > 1) { /* range s's partial sums to scratch[s] */
    v->y = cg_scratch(cg, n);
    v->part = mul(cu, udiv(cu, k0, v->ks), cv_numel(n));
  }
  (v->tc ? tc_store : cv_store)(cu, v, acc);
  if (dim_is_static(v->M))
    cu_kernel_end(cu, (unsigned)(v->S * v->groups * tm * tn), 256);
  else
    cu_kernel_end_n(cu, v->M, (unsigned)v->bm,
                    (unsigned)(v->S * v->groups * tn), 256);
  if (v->S > 1) cv_sum(cu, p, n, v);
}

/* The GEMM of conv node n (geometry, sizes, loaders, tiles); with a
 * dynamic batch, M (forward, backward_input) or K (backward_weight) is
 * a dynamic size. */
static int64_t dmul(Ctx *ctx, int64_t a, int64_t b) {
  DimStatus st = dim_mul(ctx, a, b, &a);
  RLX_ASSERT(st == DIM_OK); /* a factor of a tensor's count */
  return a;
}

static void cv_setup(Ctx *ctx, Cv *v, const Node *n) {
  const Type *a = &n->in[0]->type, *b = &n->in[1]->type, *t = &n->type;
  switch (n->op) {
  case OP_CONV2D_BACKWARD_INPUT: /* (dy, w) -> dx */
    cv_init(v, n, t, b, a);
    v->M = dmul(ctx, v->n, v->h * v->w), v->N = v->cg;
    v->K = v->cog * v->kh * v->kw;
    v->lda = bin_a, v->ldb = bin_b, v->out = bin_out;
    break;
  case OP_CONV2D_BACKWARD_WEIGHT: /* (x, dy) -> dw */
    cv_init(v, n, a, t, b);
    v->M = v->cog, v->N = v->cg * v->kh * v->kw;
    v->K = dmul(ctx, v->n, v->oh * v->ow);
    v->lda = bwt_a, v->ldb = bwt_b, v->out = bwt_out;
    break;
  default: /* (x, w) -> y */
    cv_init(v, n, a, b, t);
    v->M = dmul(ctx, v->n, v->oh * v->ow), v->N = v->cog;
    v->K = v->cg * v->kh * v->kw;
    v->lda = fwd_a, v->ldb = fwd_b, v->out = fwd_out;
    break;
  }
  cv_tiles(v);
}

int64_t cu_conv_scratch(Cu *cu, const Node *n) {
  if (!dt_is_float(n->type.dt) || cv_numel(n) == 0) return 0;
  Cv v;
  cv_setup(cu->dev->ctx, &v, n);
  return v.S > 1 ? v.S * cv_numel(n) * dt_size(part_dt(v.dt)) : 0;
}

bool cu_conv(Cu *cu, CgPlan *p, Node *n) {
  DType dt = n->type.dt;
  if (!dt_is_float(dt)) return cu_bad_dtype(cu, n, dt);
  for (int k = 0; k < 2; k++)
    if (n->in[k]->type.dt != dt) return cu_bad_dtype(cu, n, n->in[k]->type.dt);
  if (cv_numel(n) == 0) return true;
  Cv v;
  cv_setup(cu->dev->ctx, &v, n);
  cv_gemm(cu, p, n, &v);
  return !cu->dev->failed;
}
