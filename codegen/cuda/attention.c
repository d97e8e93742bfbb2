/* attention.c: attention and attention_backward on the GPU (cuda.h),
 * FlashAttention-2 structure on the CUDA cores, with the semantics of
 * the CPU routines (runtime/rlxrt.h, rlx_attention_*): scores
 * s = (q * scale) . k, softcap s = C tanh(s / C), then the mask (-inf)
 * or the bias (added), softmax over the allowed keys; a row with no
 * allowed key gives o = 0, lse = -inf and zero gradients.
 *
 * Every kernel: one block of AT_NT threads per (batch, head, tile of
 * AT_NT rows), one thread per row; tiles of the other side's rows are
 * staged in shared memory (AT_SMEM bytes; rows per tile `bt` from the
 * head dim), loops over them in a fixed order, f32 (f16/bf16, rounded
 * on store) or f64 arithmetic. No atomics, no Lq x Lk buffer.
 * - attention: query rows; key tiles in the mask's range; online
 *   softmax per tile (tile max, rescale by exp(m - m'), then the tile's
 *   exp and the products with V); o = acc / l.
 * - attention_backward, one group of the plan's attention groups
 *   (plan/attention_groups.c: every wanted wrt of one attention, its
 *   leader writes all of them): the rows' lse comes from the forward
 *   attention when it saved it (a D kernel then computes
 *   D = rowsum(dO * O) from the forward's o), else a pre-pass (the
 *   forward per query row) writes lse and D, to the leader's scratch
 *   (cu_attention_scratch); wrt=q and wrt=bias: query rows over key
 *   tiles, P = exp(s - lse), dS = P (dO.v - D), dbias = dS,
 *   dq += dS f k (f: scale, or scale (1 - tanh^2) with softcap);
 *   wrt=k, v: key rows over query tiles, dv += P dO, dk += dS f q (on
 *   the tensor cores one kernel for both when head_dim <= 64; above,
 *   its registers would spill).
 * Per-thread rows (q, dO, accumulators) are arrays of head_dim
 * elements in local memory.
 * bf16/f16 attention and attention_backward with head_dim a multiple
 * of 16 up to 128 run on the tensor cores instead ("on the tensor
 * cores" below: mma.sync, ldmatrix, cp.async from mma.h): the forward,
 * the pre-pass, dq / dbias over key tiles and dk / dv over query tiles
 * with the same structure; other dtypes and head dims use the kernels
 * above. With --gpu-arch=sm_90a and head_dim 64 or 128 the same kernels
 * multiply by wgmma from shared memory (Tc.wg).
 */
#include "codegen/cuda/mma.h"

#include <math.h>
#include <string.h>

enum { AT_NT = 64, AT_SMEM = 45056 };

typedef struct {
  Cu *cu;
  Node *n;
  rlx_attn_geom g;    /* dynamic sizes at their bounds (the layout) */
  int64_t bdim, lq, lk; /* batch and lengths as sizes (dynamic ones read
                           at run time: the grid, the loops, the masks) */
  DType dt, ct;       /* storage dtype; compute dtype (f32 or f64) */
  LLVMTypeRef et;     /* compute type */
  int64_t es, bt;     /* compute bytes; rows per shared tile */
  int mi;             /* mask operand index */
  Node *res[4];       /* the results: o | dq dk dv dbias (NULL: none) */
  int64_t lse_off, d_off; /* workspace bytes of the rows' lse and D
                             ([b][h][lq], compute type; -1: none) */
  int64_t lse_skip;   /* lse at lse_off plus these bytes (a size: after
                         D in a scratch laid out at run time), or 0 */
  LLVMValueRef b, h, bh, t0, tid; /* this block's head, first row */
} At;

static Cg *dev(At *a) { return a->cu->dev; }

static LLVMValueRef cst(At *a, double v) { return cg_const(dev(a), a->ct, v); }
static LLVMValueRef at_add(At *a, LLVMValueRef x, LLVMValueRef y) {
  return LLVMBuildFAdd(dev(a)->b, x, y, "");
}
static LLVMValueRef at_sub(At *a, LLVMValueRef x, LLVMValueRef y) {
  return LLVMBuildFSub(dev(a)->b, x, y, "");
}
static LLVMValueRef at_mul(At *a, LLVMValueRef x, LLVMValueRef y) {
  return LLVMBuildFMul(dev(a)->b, x, y, "");
}
static LLVMValueRef sel(At *a, LLVMValueRef c, LLVMValueRef x,
                        LLVMValueRef y) {
  return LLVMBuildSelect(dev(a)->b, c, x, y, "");
}
static LLVMValueRef icmp(At *a, LLVMIntPredicate p, LLVMValueRef x,
                         LLVMValueRef y) {
  return LLVMBuildICmp(dev(a)->b, p, x, y, "");
}
static LLVMValueRef smin(At *a, LLVMValueRef x, LLVMValueRef y) {
  return sel(a, icmp(a, LLVMIntSLT, x, y), x, y);
}
static LLVMValueRef smax(At *a, LLVMValueRef x, LLVMValueRef y) {
  return sel(a, icmp(a, LLVMIntSGT, x, y), x, y);
}
static LLVMValueRef I(At *a, int64_t v) { return i64(a->cu, v); }
/* A size's value; L - 1; lk - lq (the causal mask's offset). */
static LLVMValueRef SZ(At *a, int64_t L) { return cu_size(a->cu, L); }
static LLVMValueRef last(At *a, int64_t L) {
  return LLVMBuildSub(dev(a)->b, SZ(a, L), I(a, 1), "");
}
static LLVMValueRef koff(At *a) {
  return LLVMBuildSub(dev(a)->b, SZ(a, a->lk), SZ(a, a->lq), "");
}

/* Element i of the compute-type array at generic pointer p. */
static LLVMValueRef at_ptr(At *a, LLVMValueRef p, LLVMValueRef i) {
  return LLVMBuildGEP2(dev(a)->b, a->et, p, &i, 1, "");
}
static LLVMValueRef lget(At *a, LLVMValueRef p, LLVMValueRef i) {
  return LLVMBuildLoad2(dev(a)->b, a->et, at_ptr(a, p, i), "");
}
static void lset(At *a, LLVMValueRef p, LLVMValueRef i, LLVMValueRef v) {
  LLVMBuildStore(dev(a)->b, v, at_ptr(a, p, i));
}

/* Generic pointer to byte off of the block's shared area. */
static LLVMValueRef sh(At *a, int64_t off) {
  Cg *cg = dev(a);
  return cu_shared_at(cg, cu_shared(cg, "rlx.attn.smem", cg->t_i8, AT_SMEM, 16),
                      cg->t_i8, I(a, off));
}

/* A per-thread array of head_dim compute values (local memory). */
static LLVMValueRef row_array(At *a, const char *nm) {
  int64_t d = a->g.d ? a->g.d : 1;
  return cg_alloca(dev(a), LLVMArrayType2(a->et, (uint64_t)d), nm);
}

static void barrier(At *a) {
  cg_intrinsic_n(dev(a), "llvm.nvvm.barrier0", NULL, 0, NULL, 0);
}

/* if (cond) { ... }: returns the join block to pass to end_if. */
static LLVMBasicBlockRef begin_if(At *a, LLVMValueRef cond) {
  Cg *cg = dev(a);
  LLVMBasicBlockRef go = cg_block(cg, "at.go"), join = cg_block(cg, "at.j");
  LLVMBuildCondBr(cg->b, cond, go, join);
  LLVMPositionBuilderAtEnd(cg->b, go);
  return join;
}
static void end_if(At *a, LLVMBasicBlockRef join) {
  LLVMBuildBr(dev(a)->b, join);
  LLVMPositionBuilderAtEnd(dev(a)->b, join);
}

/* Element offset of row r of head (b, h) of a q-like (length lq) or
 * k-like (length lk) operand x: [b, L, h*d] or [b, h, L, d]; rows of
 * a view (plan/views.c: q, k, v inside qkv, dq, dk, dv inside their
 * concat) are its storage's rows (NULL x: a dense operand). */
static LLVMValueRef row_off(At *a, const Node *x, bool qlike,
                            LLVMValueRef r) {
  Cu *cu = a->cu;
  int64_t L = qlike ? a->lq : a->lk, d = a->g.d, hd = a->g.h * d;
  const CgSlot *s = x ? cg_slot(dev(a), (Node *)x) : NULL;
  if (s && s->kind == CG_SLOT_VIEW)
    hd = s->alias->type.dims[s->alias->type.rank - 1];
  if (a->g.layout == 4) return mul(cu, add(cu, mul(cu, a->bh, L), r), d);
  return add(cu, mul(cu, add(cu, mul(cu, a->b, L), r), hd),
             mul(cu, a->h, d));
}

/* Shared rows [r][c] (r < bt, c < d) at byte off = rows r0 + r of src's
 * head (b, h); rows past its length are left as they were. */
static void stage(At *a, Node *src, bool qlike, int64_t off,
                  LLVMValueRef r0) {
  Cu *cu = a->cu;
  Cg *cg = dev(a);
  int64_t d = a->g.d, tot = a->bt * d, L = qlike ? a->lq : a->lk;
  if (tot == 0) return;
  CgLoop l;
  LLVMValueRef it = cg_loop_begin(cg, &l, I(a, 0),
                                  I(a, (tot + AT_NT - 1) / AT_NT), NULL, 0);
  LLVMValueRef e = add(cu, mul(cu, it, AT_NT), a->tid);
  LLVMValueRef r = udiv(cu, e, d), row = add(cu, r0, r);
  LLVMValueRef in = LLVMBuildAnd(cg->b, ult(cu, e, tot), ult(cu, row, L), "");
  LLVMBasicBlockRef j = begin_if(a, in);
  LLVMValueRef src_i = add(cu, row_off(a, src, qlike, row), urem(cu, e, d));
  lset(a, sh(a, off), e, cg_load(cg, a->dt, cg_buf(cg, src), src_i));
  end_if(a, j);
  cg_loop_end(cg, &l, NULL);
}

/* sum_c x[c] y[c] (x[c] * scale if sx), c = 0, 1, ..., from 0. */
static LLVMValueRef dot(At *a, LLVMValueRef x, LLVMValueRef y, bool sx) {
  Cg *cg = dev(a);
  LLVMValueRef acc = cst(a, 0);
  CgLoop l;
  LLVMValueRef c = cg_loop_begin(cg, &l, I(a, 0), I(a, a->g.d), &acc, 1);
  LLVMValueRef xv = lget(a, x, c);
  if (sx) xv = at_mul(a, xv, cst(a, a->g.scale));
  acc = at_add(a, acc, at_mul(a, xv, lget(a, y, c)));
  cg_loop_end(cg, &l, &acc);
  return acc;
}

/* p[c] = 0 for c < head_dim. */
static void zero(At *a, LLVMValueRef p) {
  Cg *cg = dev(a);
  CgLoop l;
  LLVMValueRef c = cg_loop_begin(cg, &l, I(a, 0), I(a, a->g.d), NULL, 0);
  lset(a, p, c, cst(a, 0));
  cg_loop_end(cg, &l, NULL);
}

/* p[c] = p[c] * s + x * y[c] (s, y may be NULL: p[c] *s / + nothing). */
static void axpy(At *a, LLVMValueRef p, LLVMValueRef s, LLVMValueRef x,
                 LLVMValueRef y) {
  Cg *cg = dev(a);
  CgLoop l;
  LLVMValueRef c = cg_loop_begin(cg, &l, I(a, 0), I(a, a->g.d), NULL, 0);
  LLVMValueRef v = s ? at_mul(a, lget(a, p, c), s) : lget(a, p, c);
  if (y) v = at_add(a, v, at_mul(a, x, lget(a, y, c)));
  lset(a, p, c, v);
  cg_loop_end(cg, &l, NULL);
}

/* Whether query i may see key j (NULL: always). */
static LLVMValueRef allowed(At *a, LLVMValueRef i, LLVMValueRef j) {
  Cu *cu = a->cu;
  Cg *cg = dev(a);
  const rlx_attn_geom *g = &a->g;
  LLVMValueRef ok = NULL, d = add(cu, i, koff(a));
  if (g->mask == RLX_ATTN_CAUSAL || g->mask == RLX_ATTN_SLIDING)
    ok = icmp(a, LLVMIntSLE, j, d);
  if (g->mask == RLX_ATTN_SLIDING)
    ok = LLVMBuildAnd(cg->b, ok, icmp(a, LLVMIntSGE, j,
                                      add(cu, d, I(a, -g->window))), "");
  if (g->mask == RLX_ATTN_CUSTOM) {
    Node *m = a->n->in[a->mi];
    LLVMValueRef v = cg_load(cg, m->type.dt, cg_buf(cg, m),
                             add(cu, mul(cu, a->b, a->lk), j));
    if (m->type.dt != DT_BOOL) /* keep unless value < 0.5 (NaN kept) */
      v = LLVMBuildFCmp(cg->b, LLVMRealUGE,
                        cg_convert(cg, v, m->type.dt, DT_F64),
                        LLVMConstReal(cg->t_f64, 0.5), "");
    ok = v;
  }
  return ok;
}

/* The final score of query i and key j from s = (q * scale) . k:
 * softcap, mask, bias. *f (if f) gets ds/d(q.k): scale, or
 * scale (1 - tanh^2) with softcap. */
static LLVMValueRef finish_score(At *a, LLVMValueRef s, LLVMValueRef i,
                                 LLVMValueRef j, LLVMValueRef *f) {
  Cu *cu = a->cu;
  Cg *cg = dev(a);
  const rlx_attn_geom *g = &a->g;
  if (f) *f = cst(a, g->scale);
  if (g->softcap > 0) {
    LLVMValueRef t = cg_ops_tanh(cg, LLVMBuildFDiv(cg->b, s,
                                                   cst(a, g->softcap), ""));
    s = at_mul(a, cst(a, g->softcap), t);
    if (f) *f = at_mul(a, *f, at_sub(a, cst(a, 1), at_mul(a, t, t)));
  }
  LLVMValueRef ok = allowed(a, i, j);
  if (ok) s = sel(a, ok, s, cst(a, -INFINITY));
  if (g->mask == RLX_ATTN_BIAS) {
    LLVMValueRef bi = add(cu, mul(cu, add(cu, mul(cu, a->bh, a->lq), i),
                                  a->lk), j);
    s = at_add(a, s, cg_load(cg, a->dt, cg_buf(cg, a->n->in[a->mi]), bi));
  }
  return s;
}

/* The final score of query i (x: its row) and key j (y: its row); sx:
 * x still needs the scale; *f as finish_score's. */
static LLVMValueRef score(At *a, LLVMValueRef x, LLVMValueRef y, bool sx,
                          LLVMValueRef i, LLVMValueRef j, LLVMValueRef *f) {
  return finish_score(a, dot(a, x, y, sx), i, j, f);
}

/* Keys [lo, hi) the queries [i0, i0 + nq) may see; queries that keys
 * [j0, j0 + nk) may be seen by (the CPU's krange_ / qrange_). */
static void krange(At *a, LLVMValueRef i0, LLVMValueRef nq, LLVMValueRef *lo,
                   LLVMValueRef *hi) {
  Cu *cu = a->cu;
  const rlx_attn_geom *g = &a->g;
  LLVMValueRef off = koff(a);
  *lo = I(a, 0), *hi = SZ(a, a->lk);
  if (g->mask == RLX_ATTN_CAUSAL || g->mask == RLX_ATTN_SLIDING)
    *hi = smax(a, I(a, 0), smin(a, *hi, add(cu, add(cu, off, i0), nq)));
  if (g->mask == RLX_ATTN_SLIDING)
    *lo = smax(a, I(a, 0), add(cu, add(cu, off, i0), I(a, -g->window)));
  *hi = smax(a, *hi, *lo);
}

static void qrange(At *a, LLVMValueRef j0, LLVMValueRef nk, LLVMValueRef *lo,
                   LLVMValueRef *hi) {
  Cu *cu = a->cu;
  const rlx_attn_geom *g = &a->g;
  LLVMValueRef moff = LLVMBuildNeg(dev(a)->b, koff(a), "");
  *lo = I(a, 0), *hi = SZ(a, a->lq);
  if (g->mask == RLX_ATTN_CAUSAL || g->mask == RLX_ATTN_SLIDING)
    *lo = smin(a, *hi, smax(a, I(a, 0), add(cu, j0, moff)));
  if (g->mask == RLX_ATTN_SLIDING)
    *hi = smax(a, I(a, 0), smin(a, *hi, add(cu, add(cu, j0, nk),
                                            add(cu, moff,
                                                I(a, g->window)))));
  *hi = smax(a, *hi, *lo);
}

/* Start a kernel over (b, h, tile of AT_NT rows of length L); false if
 * there is no block. */
static bool at_begin(At *a, CgPlan *p, const char *what, int64_t L) {
  Cu *cu = a->cu;
  int64_t nt = (dim_bound(L) + AT_NT - 1) / AT_NT;
  if (a->g.b * a->g.h * nt == 0) return false;
  cu_kernel_begin(cu, p, what);
  LLVMValueRef c = cu_ctaid(cu);
  LLVMValueRef ntv = cu_ceil_div(cu, L, AT_NT);
  a->t0 = mul(cu, LLVMBuildURem(dev(a)->b, c, ntv, ""), AT_NT);
  a->bh = LLVMBuildUDiv(dev(a)->b, c, ntv, "");
  a->b = udiv(cu, a->bh, a->g.h);
  a->h = urem(cu, a->bh, a->g.h);
  a->tid = cu_tid(cu);
  return true;
}

static void at_end(At *a, int64_t L, unsigned threads) {
  if (!dim_is_static(L)) /* the batch static (cu_dyn_why) */
    cu_kernel_end_n(a->cu, L, AT_NT, (unsigned)(a->g.b * a->g.h), threads);
  else
    cu_kernel_end_n(a->cu, a->bdim, 1,
                    (unsigned)(a->g.h * ((L + AT_NT - 1) / AT_NT)), threads);
}

/* This thread's row t0 + tid, clamped to L - 1 (*valid: inside). */
static LLVMValueRef my_row(At *a, int64_t L, LLVMValueRef *valid) {
  LLVMValueRef r = add(a->cu, a->t0, a->tid);
  *valid = ult(a->cu, r, L);
  return smin(a, r, last(a, L));
}

/* Rows of this block's tile: min(AT_NT, L - t0). */
static LLVMValueRef tile_len(At *a, int64_t L) {
  return smin(a, I(a, AT_NT), LLVMBuildSub(dev(a)->b, SZ(a, L), a->t0, ""));
}

/* Load row r of src's head into the local array x (times scale if s). */
static void load_row(At *a, LLVMValueRef x, Node *src, bool qlike,
                     LLVMValueRef r, bool s) {
  Cg *cg = dev(a);
  CgLoop l;
  LLVMValueRef base = row_off(a, src, qlike, r);
  LLVMValueRef c = cg_loop_begin(cg, &l, I(a, 0), I(a, a->g.d), NULL, 0);
  LLVMValueRef v = cg_load(cg, a->dt, cg_buf(cg, src), add(a->cu, base, c));
  lset(a, x, c, s ? at_mul(a, v, cst(a, a->g.scale)) : v);
  cg_loop_end(cg, &l, NULL);
}

/* ---- forward (also the backward's pre-pass) ---- */

/* Shared layout over key tiles: K [bt][d], V [bt][d], S [bt][AT_NT]. */
static int64_t k_tile_rows(int64_t d, int64_t es) {
  int64_t r = AT_SMEM / (es * (2 * d + AT_NT));
  return r < 64 ? r : 64;
}

/* Open the loop over the key tiles the block's query rows may see
 * (loop-carried values v[nv]): stage the tile's K at shared offset 0 and
 * V after it between barriers; its first key row, *nk its key count. */
static LLVMValueRef key_tiles_begin(At *a, CgLoop *tl, LLVMValueRef *v,
                                    int nv, LLVMValueRef *nk) {
  Cu *cu = a->cu;
  int64_t bt = a->bt;
  LLVMValueRef lo, hi;
  krange(a, a->t0, tile_len(a, a->lq), &lo, &hi);
  LLVMValueRef kt = cg_loop_begin(dev(a), tl, udiv(cu, lo, bt),
                                  udiv(cu, add(cu, hi, I(a, bt - 1)), bt),
                                  v, nv);
  LLVMValueRef j0 = mul(cu, kt, bt);
  barrier(a);
  stage(a, a->n->in[1], false, 0, j0);
  stage(a, a->n->in[2], false, bt * a->g.d * a->es, j0);
  barrier(a);
  *nk = smin(a, I(a, bt), LLVMBuildSub(dev(a)->b, SZ(a, a->lk), j0, ""));
  return j0;
}

/* Online softmax of query row i (qs: its scaled row) over its key
 * tiles: acc = sum_j exp(s_j - m) v_j, *m the max, *l the sum. */
static void fwd_row(At *a, LLVMValueRef qs, LLVMValueRef acc, LLVMValueRef i,
                    LLVMValueRef *m, LLVMValueRef *l) {
  Cu *cu = a->cu;
  Cg *cg = dev(a);
  int64_t bt = a->bt, vo = bt * a->g.d * a->es, so = 2 * vo;
  zero(a, acc);
  LLVMValueRef ml[2] = {cst(a, -INFINITY), cst(a, 0)}, nk;
  CgLoop tl;
  LLVMValueRef j0 = key_tiles_begin(a, &tl, ml, 2, &nk);
  LLVMValueRef mt = ml[0];
  CgLoop jl;
  LLVMValueRef jj = cg_loop_begin(cg, &jl, I(a, 0), nk, &mt, 1);
  LLVMValueRef s = score(a, qs, at_ptr(a, sh(a, 0), mul(cu, jj, a->g.d)),
                         false, i, add(cu, j0, jj), NULL);
  lset(a, sh(a, so), add(cu, mul(cu, jj, AT_NT), a->tid), s);
  mt = sel(a, LLVMBuildFCmp(cg->b, LLVMRealOGT, s, mt, ""), s, mt);
  cg_loop_end(cg, &jl, &mt);
  LLVMValueRef mu = sel(a, LLVMBuildFCmp(cg->b, LLVMRealOEQ, mt,
                                         cst(a, -INFINITY), ""),
                        cst(a, 0), mt);
  LLVMValueRef alpha = cg_ops_exp(cg, at_sub(a, ml[0], mu));
  axpy(a, acc, alpha, NULL, NULL);
  LLVMValueRef sum = cst(a, 0);
  jj = cg_loop_begin(cg, &jl, I(a, 0), nk, &sum, 1);
  LLVMValueRef pj = cg_ops_exp(
      cg, at_sub(a, lget(a, sh(a, so), add(cu, mul(cu, jj, AT_NT), a->tid)),
               mu));
  sum = at_add(a, sum, pj);
  axpy(a, acc, NULL, pj, at_ptr(a, sh(a, vo), mul(cu, jj, a->g.d)));
  cg_loop_end(cg, &jl, &sum);
  ml[1] = at_add(a, at_mul(a, ml[1], alpha), sum);
  ml[0] = mt;
  cg_loop_end(cg, &tl, ml);
  *m = ml[0], *l = ml[1];
}

/* o[c] = acc[c] / l, 0 for a row without allowed keys. */
static LLVMValueRef out_elem(At *a, LLVMValueRef acc, LLVMValueRef c,
                             LLVMValueRef l) {
  Cg *cg = dev(a);
  LLVMValueRef pos = LLVMBuildFCmp(cg->b, LLVMRealOGT, l, cst(a, 0), "");
  return sel(a, pos, LLVMBuildFDiv(cg->b, lget(a, acc, c), l, ""),
             cst(a, 0));
}

/* Element (b, h, i) of the [b][h][lq] array at workspace byte off. */
static LLVMValueRef row_val(At *a, int64_t off, int64_t skip,
                            LLVMValueRef i) {
  Cg *cg = dev(a);
  LLVMValueRef base = cg_ws_at(cg, off);
  if (skip) base = cg_gep(cg, base, cu_size(a->cu, skip));
  return at_ptr(a, base, add(a->cu, mul(a->cu, a->bh, a->lq), i));
}
static LLVMValueRef lse_at(At *a, LLVMValueRef i) {
  return row_val(a, a->lse_off, a->lse_skip, i);
}
static LLVMValueRef d_at(At *a, LLVMValueRef i) {
  return row_val(a, a->d_off, 0, i);
}

/* Row i's lse = m + log l (-inf for l = 0: no allowed key). */
static void put_lse(At *a, LLVMValueRef i, LLVMValueRef m, LLVMValueRef l) {
  Cg *cg = dev(a);
  LLVMValueRef pos = LLVMBuildFCmp(cg->b, LLVMRealOGT, l, cst(a, 0), "");
  LLVMValueRef lse = sel(a, pos, at_add(a, m, cg_ops_log(cg, l)),
                         cst(a, -INFINITY));
  LLVMBuildStore(cg->b, lse, lse_at(a, i));
}

/* attention: o rows (and their lse when a->lse_off != -1); pre (the
 * backward's pre-pass): lse and D = dO . O of each row. */
static void fwd_kernel(At *a, CgPlan *p, bool pre) {
  Cu *cu = a->cu;
  Cg *cg = dev(a);
  if (!at_begin(a, p, pre ? "attention_lse" : "attention", a->lq)) return;
  LLVMValueRef valid, i = my_row(a, a->lq, &valid);
  LLVMValueRef qs = row_array(a, "qs"), acc = row_array(a, "acc"), m, l;
  load_row(a, qs, a->n->in[0], true, i, true);
  fwd_row(a, qs, acc, i, &m, &l);
  LLVMBasicBlockRef j = begin_if(a, valid);
  LLVMValueRef base = row_off(a, NULL, true, i); /* o and dO: dense */
  CgLoop cl;
  LLVMValueRef dd = cst(a, 0);
  LLVMValueRef c = cg_loop_begin(cg, &cl, I(a, 0), I(a, a->g.d), &dd, 1);
  LLVMValueRef o = out_elem(a, acc, c, l);
  if (pre)
    dd = at_add(a, dd, at_mul(a, cg_load(cg, a->dt, cg_buf(cg, a->n->in[3]),
                                     add(cu, base, c)), o));
  else
    cg_store(cg, a->dt, cg_buf(cg, a->n), add(cu, base, c), o);
  cg_loop_end(cg, &cl, &dd);
  if (pre) LLVMBuildStore(cg->b, dd, d_at(a, i));
  if (a->lse_off != -1) put_lse(a, i, m, l);
  end_if(a, j);
  at_end(a, a->lq, AT_NT);
}

/* lse of row r, +inf for a row without allowed keys (P = exp(s - lse)
 * is then 0), and D. */
static void lse_d(At *a, LLVMValueRef r, LLVMValueRef *ls, LLVMValueRef *d) {
  Cg *cg = dev(a);
  LLVMValueRef v = LLVMBuildLoad2(cg->b, a->et, lse_at(a, r),
                                  "");
  *ls = sel(a, LLVMBuildFCmp(cg->b, LLVMRealOEQ, v, cst(a, -INFINITY), ""),
            cst(a, INFINITY), v);
  *d = LLVMBuildLoad2(cg->b, a->et, d_at(a, r), "");
}

/* D = dO . o of each query row, o the forward attention's output (the
 * backward of a forward that saved its lse): a warp per row, lane l
 * folding elements l, l + 32, ... in order, then the warp's butterfly
 * sum (a fixed order). */
static void dsum_kernel(At *a, CgPlan *p, Node *o) {
  Cu *cu = a->cu;
  Cg *cg = dev(a);
  int64_t rows; /* a size: the batch may be dynamic */
  dim_mul(cg->ctx, a->bdim, a->g.h, &rows);
  dim_mul(cg->ctx, rows, a->lq, &rows);
  if (rows == 0) return;
  cu_kernel_begin(cu, p, "attention_dsum");
  LLVMValueRef gid = cu_gid(cu), r = udiv(cu, gid, 32);
  LLVMValueRef lane = urem(cu, gid, 32), valid = ult(cu, r, rows);
  r = smin(a, r, LLVMBuildSub(cg->b, cu_size(cu, rows), I(a, 1), ""));
  a->bh = udiv(cu, r, a->lq);
  a->b = udiv(cu, a->bh, a->g.h), a->h = urem(cu, a->bh, a->g.h);
  LLVMValueRef i = urem(cu, r, a->lq), base = row_off(a, NULL, true, i);
  LLVMValueRef dd = cst(a, 0);
  CgLoop cl;
  LLVMValueRef k = cg_loop_begin(cg, &cl, I(a, 0), I(a, (a->g.d + 31) / 32),
                                 &dd, 1);
  LLVMValueRef c = add(cu, lane, mul(cu, k, 32)), in = ult(cu, c, a->g.d);
  LLVMValueRef x = add(cu, base, smin(a, c, I(a, a->g.d - 1)));
  LLVMValueRef t = at_mul(a, cg_load(cg, a->dt, cg_buf(cg, a->n->in[3]), x),
                          cg_load(cg, a->dt, cg_buf(cg, o), x));
  dd = at_add(a, dd, sel(a, in, t, cst(a, 0)));
  cg_loop_end(cg, &cl, &dd);
  dd = cu_block_reduce(cu, a->ct, CG_RED_SUM, dd, 32);
  LLVMBasicBlockRef j = begin_if(a, LLVMBuildAnd(
      cg->b, valid, LLVMBuildICmp(cg->b, LLVMIntEQ, lane, I(a, 0), ""), ""));
  LLVMBuildStore(cg->b, dd, d_at(a, i));
  end_if(a, j);
  cu_kernel_end_n(cu, rows, EW_BLOCK / 32, 1, EW_BLOCK);
}

/* ---- backward: query rows (dq, dbias) ---- */

static void dq_kernel(At *a, CgPlan *p, bool dbias) {
  Cu *cu = a->cu;
  Cg *cg = dev(a);
  if (!at_begin(a, p, dbias ? "attention_dbias" : "attention_dq", a->lq))
    return;
  int64_t bt = a->bt, vo = bt * a->g.d * a->es;
  LLVMValueRef valid, i = my_row(a, a->lq, &valid), ls, dd;
  LLVMValueRef qs = row_array(a, "qs"), dy = row_array(a, "dy");
  LLVMValueRef acc = row_array(a, "dq");
  load_row(a, qs, a->n->in[0], true, i, true);
  load_row(a, dy, a->n->in[3], true, i, false);
  zero(a, acc);
  lse_d(a, i, &ls, &dd);
  CgLoop tl, jl;
  LLVMValueRef nk, j0 = key_tiles_begin(a, &tl, NULL, 0, &nk);
  LLVMValueRef jj = cg_loop_begin(cg, &jl, I(a, 0), nk, NULL, 0);
  LLVMValueRef j = add(cu, j0, jj), f;
  LLVMValueRef kr = at_ptr(a, sh(a, 0), mul(cu, jj, a->g.d));
  LLVMValueRef s = score(a, qs, kr, false, i, j, &f);
  LLVMValueRef pj = cg_ops_exp(cg, at_sub(a, s, ls));
  LLVMValueRef dp = dot(a, dy, at_ptr(a, sh(a, vo), mul(cu, jj, a->g.d)),
                        false);
  LLVMValueRef ds = at_mul(a, pj, at_sub(a, dp, dd));
  if (dbias) {
    LLVMBasicBlockRef jn = begin_if(a, valid);
    LLVMValueRef bi = add(cu, mul(cu, add(cu, mul(cu, a->bh, a->lq), i),
                                  a->lk), j);
    cg_store(cg, a->dt, cg_buf(cg, a->res[3]), bi, ds);
    end_if(a, jn);
  } else {
    axpy(a, acc, NULL, at_mul(a, ds, f), kr);
  }
  cg_loop_end(cg, &jl, NULL);
  cg_loop_end(cg, &tl, NULL);
  if (!dbias) {
    LLVMBasicBlockRef jn = begin_if(a, valid);
    LLVMValueRef base = row_off(a, a->res[0], true, i);
    LLVMValueRef c = cg_loop_begin(cg, &jl, I(a, 0), I(a, a->g.d), NULL, 0);
    cg_store(cg, a->dt, cg_buf(cg, a->res[0]), add(cu, base, c),
             lget(a, acc, c));
    cg_loop_end(cg, &jl, NULL);
    end_if(a, jn);
  }
  at_end(a, a->lq, AT_NT);
}

/* ---- backward: key rows (dk, dv) ---- */

/* Shared layout over query tiles: Q [bt][d], dO [bt][d], lse [bt],
 * D [bt]. */
static int64_t q_tile_rows(int64_t d, int64_t es) {
  int64_t r = AT_SMEM / (es * (2 * d + 2));
  return r < 64 ? r : 64;
}

/* lse (+inf for rows without keys) and D of query rows i0 + r, r < bt,
 * into shared memory at byte off (lse) and off + bt es (D). */
static void stage_lse(At *a, int64_t off, LLVMValueRef i0) {
  Cu *cu = a->cu;
  Cg *cg = dev(a);
  CgLoop l;
  LLVMValueRef it = cg_loop_begin(cg, &l, I(a, 0),
                                  I(a, (a->bt + AT_NT - 1) / AT_NT), NULL, 0);
  LLVMValueRef r = add(cu, mul(cu, it, AT_NT), a->tid), i = add(cu, i0, r);
  LLVMValueRef in = LLVMBuildAnd(cg->b, ult(cu, r, a->bt),
                                 ult(cu, i, a->lq), "");
  LLVMBasicBlockRef j = begin_if(a, in);
  LLVMValueRef ls, dd;
  lse_d(a, i, &ls, &dd);
  lset(a, sh(a, off), r, ls);
  lset(a, sh(a, off), add(cu, r, I(a, a->bt)), dd);
  end_if(a, j);
  cg_loop_end(cg, &l, NULL);
}

static void dkv_kernel(At *a, CgPlan *p, bool dv) {
  Cu *cu = a->cu;
  Cg *cg = dev(a);
  if (!at_begin(a, p, dv ? "attention_dv" : "attention_dk", a->lk)) return;
  int64_t bt = a->bt, d = a->g.d, oo = bt * d * a->es, lo_ = 2 * oo;
  LLVMValueRef valid, j = my_row(a, a->lk, &valid), lo, hi;
  LLVMValueRef kr = row_array(a, "k"), vr = row_array(a, "v");
  LLVMValueRef acc = row_array(a, "acc");
  load_row(a, kr, a->n->in[1], false, j, false);
  if (!dv) load_row(a, vr, a->n->in[2], false, j, false);
  zero(a, acc);
  qrange(a, a->t0, tile_len(a, a->lk), &lo, &hi);
  CgLoop tl, il;
  LLVMValueRef qt = cg_loop_begin(cg, &tl, udiv(cu, lo, bt),
                                  udiv(cu, add(cu, hi, I(a, bt - 1)), bt),
                                  NULL, 0);
  LLVMValueRef i0 = mul(cu, qt, bt);
  barrier(a);
  stage(a, a->n->in[0], true, 0, i0);
  stage(a, a->n->in[3], true, oo, i0);
  stage_lse(a, lo_, i0);
  barrier(a);
  LLVMValueRef nq = smin(a, I(a, bt), LLVMBuildSub(cg->b, SZ(a, a->lq), i0,
                                                   ""));
  LLVMValueRef ii = cg_loop_begin(cg, &il, I(a, 0), nq, NULL, 0), f;
  LLVMValueRef qrow = at_ptr(a, sh(a, 0), mul(cu, ii, d));
  LLVMValueRef dyr = at_ptr(a, sh(a, oo), mul(cu, ii, d));
  LLVMValueRef s = score(a, qrow, kr, true, add(cu, i0, ii), j, &f);
  LLVMValueRef pj = cg_ops_exp(cg, at_sub(a, s, lget(a, sh(a, lo_), ii)));
  if (dv) {
    axpy(a, acc, NULL, pj, dyr);
  } else {
    LLVMValueRef dd = lget(a, sh(a, lo_), add(cu, ii, I(a, bt)));
    LLVMValueRef ds = at_mul(a, pj, at_sub(a, dot(a, dyr, vr, false), dd));
    axpy(a, acc, NULL, at_mul(a, ds, f), qrow);
  }
  cg_loop_end(cg, &il, NULL);
  cg_loop_end(cg, &tl, NULL);
  LLVMBasicBlockRef jn = begin_if(a, valid);
  LLVMValueRef base = row_off(a, a->res[dv ? 2 : 1], false, j);
  LLVMValueRef c = cg_loop_begin(cg, &il, I(a, 0), I(a, d), NULL, 0);
  cg_store(cg, a->dt, cg_buf(cg, a->res[dv ? 2 : 1]), add(cu, base, c),
           lget(a, acc, c));
  cg_loop_end(cg, &il, NULL);
  end_if(a, jn);
  at_end(a, a->lk, AT_NT);
}

/* ---- on the tensor cores (bf16, f16) ----
 * One block of 4 warps per (batch, head, tile of 64 query rows), warp w
 * the 16 rows from 16 w: its Q rows as mma A fragments in registers.
 * Key tiles of 64 rows: K and V staged in shared memory [key][d] by
 * cp.async (16-byte chunks XOR-swizzled by row, rows past Lk zero),
 * S = Q K^T by mma (K fragments by ldmatrix), each accumulator element
 * (row g + 8 h, key 2 t + e of its n8 tile) scaled and finished by
 * finish_score, online softmax per row (max over the quad of lanes that
 * hold the row), P rounded to the dtype reused as the A fragment of
 * O += P V (V fragments by ldmatrix.trans); o = O / l at the end. */

enum { TC_THREADS = 128, TC_KEYS = 64, TC_SMEM = 3 * TC_KEYS * 128 * 2 };

static bool tc_ok(const At *a) {
  return (a->dt == DT_BF16 || a->dt == DT_F16) && a->g.d > 0 &&
         dim_bound(a->lk) > 0 &&
         a->g.d % 16 == 0 && a->g.d <= 128 && AT_NT == 64;
}

/* With wgmma (sm_90a, head_dim 64 or 128) the products read their
 * operands from shared memory: the block's own 64 rows (Q; Q and dO;
 * K and V) are staged once in buffers of their own, and every tile
 * buffer takes wgmma's 128-byte-swizzle layout: head_dim in panels of
 * 64 (TC_KEYS rows of 128 bytes each, chunk c ^ (row & 7)), read
 * K-major (rows the m or n index) or MN-major (rows the k index) from
 * the same bytes; buffers in dynamic shared memory on 1024-byte
 * boundaries. */
typedef struct {
  LLVMValueRef smem, lane, rr, jh, jl; /* lane & 7, lane >> 4, (lane >> 3) & 1 */
  int64_t cpr;                      /* 16-byte chunks per row: d / 8 */
  int sm;                           /* swizzle mask */
  bool wg;                          /* wgmma */
  int nbuf;                         /* tile buffers (wgmma) */
} Tc;

static bool tc_wg(const At *a) {
  return cu_wgmma_ok(a->cu) && a->g.d % 64 == 0;
}

static LLVMValueRef i32v(At *a, int64_t v) { return cg_i32(dev(a), (int)v); }

/* Shared pointer to chunk c of row r (i32) of tile buffer buf (i32:
 * 0, 1 K, 2 V). */
static LLVMValueRef tc_chunk(At *a, const Tc *t, LLVMValueRef buf,
                             LLVMValueRef r, LLVMValueRef c) {
  LLVMBuilderRef b = dev(a)->b;
  LLVMValueRef x = LLVMBuildXor(b, c, LLVMBuildAnd(b, r, i32v(a, t->sm), ""),
                                "");
  LLVMValueRef o = LLVMBuildAdd(b, LLVMBuildMul(b, r, i32v(a, t->cpr), ""), x,
                                "");
  if (t->wg) /* panel c / 8, row r, chunk (c ^ r) & 7 */
    o = LLVMBuildAdd(b, LLVMBuildAdd(
        b, LLVMBuildMul(b, LLVMBuildLShr(b, c, i32v(a, 3), ""),
                        i32v(a, TC_KEYS * 8), ""),
        LLVMBuildMul(b, r, i32v(a, 8), ""), ""),
        LLVMBuildAnd(b, x, i32v(a, 7), ""), "");
  o = LLVMBuildAdd(b, LLVMBuildMul(b, o, i32v(a, 16), ""),
                   LLVMBuildMul(b, buf, i32v(a, TC_KEYS * t->cpr * 16), ""),
                   "");
  return LLVMBuildGEP2(b, dev(a)->t_i8, t->smem, &o, 1, "");
}

/* Issue the copies of rows j0 .. j0 + 63 of operand src (k-like: K, V;
 * q-like: Q, dO) into shared buffer buf (zero past its length) as one
 * commit group: cp.async if the buffer is 16-byte aligned, else element
 * loads. */
static void tc_issue(At *a, const Tc *t, Node *src, bool qlike,
                     LLVMValueRef buf, LLVMValueRef j0) {
  Cu *cu = a->cu;
  Cg *cg = dev(a);
  LLVMBuilderRef b = cg->b;
  LLVMTypeRef h = cg_ops_bits_type(cg, 2);
  LLVMValueRef tid = LLVMBuildTrunc(b, a->tid, cg->t_i32, "");
  int64_t L = qlike ? a->lq : a->lk;
  LLVMValueRef pi = LLVMBuildPtrToInt(b, cg_buf(cg, src), cg->t_i64, "");
  LLVMValueRef al = LLVMBuildICmp(b, LLVMIntEQ, LLVMBuildAnd(b, pi, I(a, 15),
                                  ""), I(a, 0), "");
  for (int64_t q = 0; q < TC_KEYS * t->cpr / TC_THREADS; q++) {
    LLVMValueRef e = LLVMBuildAdd(b, tid, i32v(a, q * TC_THREADS), "");
    LLVMValueRef r = LLVMBuildUDiv(b, e, i32v(a, t->cpr), "");
    LLVMValueRef c = LLVMBuildURem(b, e, i32v(a, t->cpr), "");
    LLVMValueRef dst = tc_chunk(a, t, buf, r, c);
    LLVMValueRef j = add(cu, j0, LLVMBuildZExt(b, r, cg->t_i64, ""));
    LLVMValueRef in = ult(cu, j, L);
    LLVMValueRef off = add(cu, row_off(a, src, qlike, smin(a, j, last(a, L))),
                           mul(cu, LLVMBuildZExt(b, c, cg->t_i64, ""), 8));
    LLVMValueRef ptr = LLVMBuildGEP2(b, h, cg_buf(cg, src), &off, 1, "");
    LLVMBasicBlockRef ab = cg_block(cg, "tc.async");
    LLVMBasicBlockRef sb = cg_block(cg, "tc.sync");
    LLVMBasicBlockRef done = cg_block(cg, "tc.staged");
    LLVMBuildCondBr(b, al, ab, sb);
    LLVMPositionBuilderAtEnd(b, ab);
    cu_cp_async(cg, dst, ptr, in, 16);
    LLVMBuildBr(b, done);
    LLVMPositionBuilderAtEnd(b, sb);
    LLVMValueRef vec = LLVMConstNull(LLVMVectorType(h, 8));
    for (int k = 0; k < 8; k++) {
      LLVMValueRef ki = i64(cu, k);
      LLVMValueRef x = LLVMBuildLoad2(b, h, LLVMBuildGEP2(b, h, ptr, &ki, 1,
                                                          ""), "");
      vec = LLVMBuildInsertElement(b, vec, LLVMBuildSelect(
          b, in, x, LLVMConstNull(h), ""), i32v(a, k), "");
    }
    LLVMSetAlignment(LLVMBuildStore(b, vec, dst), 16);
    LLVMBuildBr(b, done);
    LLVMPositionBuilderAtEnd(b, done);
  }
  cg_intrinsic_n(cg, "llvm.nvvm.cp.async.commit.group", NULL, 0, NULL, 0);
}

/* Wait until at most n commit groups of this thread are in flight,
 * then for every thread (barrier; before it, with wgmma, the fence
 * that makes the copies visible to the tensor cores' reads). */
static void tc_wait(At *a, const Tc *t, int n) {
  LLVMValueRef v = i32v(a, n);
  if (n)
    cg_intrinsic_n(dev(a), "llvm.nvvm.cp.async.wait.group", NULL, 0, &v, 1);
  else
    cg_intrinsic_n(dev(a), "llvm.nvvm.cp.async.wait.all", NULL, 0, NULL, 0);
  if (t->wg) cu_asm(dev(a), "fence.proxy.async.shared::cta;");
  barrier(a);
}

/* exp(x) as ex2.approx(x log2 e) (exp(-inf) = 0). */
static LLVMValueRef tc_exp(At *a, LLVMValueRef x) {
  x = at_mul(a, x, cst(a, 1.4426950408889634));
  return cg_intrinsic_n(dev(a), "llvm.nvvm.ex2.approx.ftz.f", NULL, 0, &x, 1);
}

/* Two compute values rounded to the dtype, packed in an i32 (x low). */
static LLVMValueRef tc_pack(At *a, LLVMValueRef x, LLVMValueRef y) {
  Cg *cg = dev(a);
  LLVMValueRef p = cg_alloca(cg, cg->t_i32, "pk");
  cg_store(cg, a->dt, p, I(a, 0), x);
  cg_store(cg, a->dt, p, I(a, 1), y);
  return LLVMBuildLoad2(cg->b, cg->t_i32, p, "");
}

/* The i32 holding elements c, c + 1 of row i (zero past its length)
 * of x (q-like or k-like). */
static LLVMValueRef tc_q_pair(At *a, Node *x, bool qlike, LLVMValueRef i,
                              LLVMValueRef c) {
  Cu *cu = a->cu;
  Cg *cg = dev(a);
  LLVMBuilderRef b = cg->b;
  LLVMTypeRef h = cg_ops_bits_type(cg, 2);
  int64_t L = qlike ? a->lq : a->lk;
  LLVMValueRef in = ult(cu, i, L);
  LLVMValueRef off = add(cu, row_off(a, x, qlike, smin(a, i, last(a, L))), c);
  LLVMValueRef r = NULL;
  for (int k = 0; k < 2; k++) {
    LLVMValueRef o = add(cu, off, I(a, k));
    LLVMValueRef v = LLVMBuildZExt(b, LLVMBuildLoad2(b, h, LLVMBuildGEP2(
        b, h, cg_buf(cg, x), &o, 1, ""), ""), cg->t_i32, "");
    v = LLVMBuildShl(b, v, i32v(a, 16 * k), "");
    r = r ? LLVMBuildOr(b, r, v, "") : v;
  }
  return LLVMBuildSelect(b, in, r, i32v(a, 0), "");
}

/* max(x, y) (max.f32: a NaN operand gives the other). */
static LLVMValueRef tc_max(At *a, LLVMValueRef x, LLVMValueRef y) {
  LLVMValueRef v[2] = {x, y};
  return cg_intrinsic_n(dev(a), "llvm.maxnum", &a->et, 1, v, 2);
}

/* v combined with lanes lane ^ 1 and lane ^ 2 (the quad): max or sum. */
static LLVMValueRef tc_quad(At *a, LLVMValueRef v, bool max) {
  Cg *cg = dev(a);
  for (int m = 1; m <= 2; m *= 2) {
    LLVMValueRef args[4] = {cg_i32(cg, -1),
                            LLVMBuildBitCast(cg->b, v, cg->t_i32, ""),
                            cg_i32(cg, m), cg_i32(cg, 31)};
    LLVMValueRef o = LLVMBuildBitCast(
        cg->b, cg_intrinsic_n(cg, "llvm.nvvm.shfl.sync.bfly.i32", NULL, 0,
                              args, 4), cg->t_f32, "");
    v = max ? tc_max(a, v, o) : at_add(a, v, o);
  }
  return v;
}

/* Element k of the f32 alloca array p. */
static LLVMValueRef tc_at(At *a, LLVMValueRef p, int k) {
  LLVMValueRef ix = i32v(a, k);
  return LLVMBuildGEP2(dev(a)->b, dev(a)->t_f32, p, &ix, 1, "");
}
static LLVMValueRef tc_get(At *a, LLVMValueRef p, int k) {
  return LLVMBuildLoad2(dev(a)->b, dev(a)->t_f32, tc_at(a, p, k), "");
}

/* Start a kernel over tiles of 64 rows of length L (4 warps of 16
 * rows) and its per-thread frame: shared tiles, lane pieces, its rows
 * rows[0] = g and rows[1] = g + 8 of its warp's 16, t2 = 2 (lane & 3)
 * (its first column in an n8 tile). false if there is no block. */
static bool tc_begin(At *a, CgPlan *p, const char *what, int64_t L, Tc *t,
                     int nbuf, LLVMValueRef rows[2], LLVMValueRef *t2) {
  Cu *cu = a->cu;
  Cg *cg = dev(a);
  LLVMBuilderRef b = cg->b;
  *t = (Tc){.cpr = a->g.d / 8, .wg = tc_wg(a), .nbuf = nbuf};
  t->sm = (int)((t->cpr & -t->cpr) < 8 ? (t->cpr & -t->cpr) : 8) - 1;
  if (!t->wg)
    t->smem = cu_shared(cg, "rlx.attn.tc", cg->t_i8, TC_SMEM, 128);
  if (!at_begin(a, p, what, L)) return false;
  if (t->wg) t->smem = cu_wg_smem(cu);
  LLVMValueRef tid = LLVMBuildTrunc(b, a->tid, cg->t_i32, "");
  t->lane = LLVMBuildAnd(b, tid, i32v(a, 31), "");
  t->rr = LLVMBuildAnd(b, t->lane, i32v(a, 7), "");
  t->jh = LLVMBuildLShr(b, t->lane, i32v(a, 4), "");
  t->jl = LLVMBuildAnd(b, LLVMBuildLShr(b, t->lane, i32v(a, 3), ""),
                       i32v(a, 1), "");
  LLVMValueRef g = LLVMBuildZExt(b, LLVMBuildLShr(b, t->lane, i32v(a, 2), ""),
                                 cg->t_i64, "");
  *t2 = LLVMBuildZExt(b, LLVMBuildShl(b, LLVMBuildAnd(
      b, t->lane, i32v(a, 3), ""), i32v(a, 1), ""), cg->t_i64, "");
  rows[0] = add(cu, add(cu, a->t0, mul(cu, udiv(cu, a->tid, 32), 16)), g);
  rows[1] = add(cu, rows[0], I(a, 8));
  return true;
}

/* Close a tensor-core kernel over L (with wgmma: its dynamic shared
 * memory). */
static void tc_end(At *a, const Tc *t, int64_t L) {
  at_end(a, L, TC_THREADS);
  if (t->wg)
    cu_kernel_dyn_shared(a->cu, (unsigned)(t->nbuf * TC_KEYS * t->cpr * 16 +
                                           1024));
}

/* The wgmma descriptor of 16-deep k step ks of tile buffer buf:
 * K-major (rows the m or n index, k along head_dim: panel ks / 4, 32
 * bytes a step) or MN-major (mn: rows the k index, 16 rows a step;
 * head_dim panels TC_KEYS * 128 bytes apart). */
static LLVMValueRef tc_desc(At *a, const Tc *t, LLVMValueRef buf, int ks,
                            bool mn) {
  Cg *cg = dev(a);
  LLVMValueRef z = i32v(a, 0);
  LLVMValueRef sa = LLVMBuildPtrToInt(cg->b, tc_chunk(a, t, buf, z, z),
                                      cg->t_i64, "");
  int64_t off = mn ? ks * 2048 : ks / 4 * TC_KEYS * 128 + ks % 4 * 32;
  return cu_wg_desc(a->cu, add(a->cu, sa, I(a, off)),
                    mn ? TC_KEYS * 128 : 16, 1024);
}

/* fr[ks][0..4): the A fragments of rows[] of x (q-like or k-like), columns
 * 16 ks .. 16 ks + 15. */
static void tc_frags(At *a, Node *x, bool qlike, LLVMValueRef rows[2],
                     LLVMValueRef t2, LLVMValueRef fr[8][4]) {
  for (int ks = 0; ks < a->g.d / 16; ks++)
    for (int i = 0; i < 4; i++)
      fr[ks][i] = tc_q_pair(a, x, qlike, rows[i & 1],
                            add(a->cu, t2, I(a, 16 * ks + 8 * (i >> 1))));
}

/* sc[32] = X Y^T for this warp's 16 rows and the 64 keys of tile buffer
 * buf (X: A fragments fr; Y [key][d]): n8 tile nt at sc[4 nt ..];
 * ldmatrix of keys 16 np + 8 jh + rr, columns 16 ks + 8 jl gives the B
 * fragments of tiles 2 np, 2 np + 1. */
static void tc_xyt(At *a, const Tc *t, LLVMValueRef fr[8][4],
                   LLVMValueRef xb, LLVMValueRef buf, LLVMValueRef sc) {
  Cg *cg = dev(a);
  LLVMBuilderRef b = cg->b;
  if (t->wg) { /* X: the block's 64 rows in buffer xb */
    LLVMValueRef ad[8], bd[8];
    for (int ks = 0; ks < a->g.d / 16; ks++) {
      ad[ks] = tc_desc(a, t, xb, ks, false);
      bd[ks] = tc_desc(a, t, buf, ks, false);
    }
    for (int k = 0; k < 32; k++) LLVMBuildStore(b, cst(a, 0), tc_at(a, sc, k));
    cu_wgmma(cg, a->dt, TC_KEYS, sc, (int)(a->g.d / 16), ad, NULL, false, bd,
             false, 0);
    return;
  }
  for (int np = 0; np < TC_KEYS / 16; np++) {
    LLVMValueRef c0[4], c1[4];
    for (int i = 0; i < 4; i++) c0[i] = c1[i] = cst(a, 0);
    for (int ks = 0; ks < a->g.d / 16; ks++) {
      LLVMValueRef r[4];
      LLVMValueRef row = LLVMBuildAdd(b, LLVMBuildAdd(b, i32v(a, 16 * np),
                                      t->rr, ""), LLVMBuildShl(b, t->jh,
                                      i32v(a, 3), ""), "");
      cu_ldmatrix4(cg, tc_chunk(a, t, buf, row, LLVMBuildAdd(
                   b, i32v(a, 2 * ks), t->jl, "")), false, r);
      cu_mma(cg, a->dt, fr[ks], r, c0);
      cu_mma(cg, a->dt, fr[ks], r + 2, c1);
    }
    for (int i = 0; i < 4; i++) {
      LLVMBuildStore(b, c0[i], tc_at(a, sc, 8 * np + i));
      LLVMBuildStore(b, c1[i], tc_at(a, sc, 8 * np + 4 + i));
    }
  }
}

/* acc[4 n ..] += W Y for n8 column tiles n < d / 8: W = sc (this warp's
 * 16 rows by the tile's 64 keys) rounded to the dtype as A fragments
 * (keys 16 kk from S tiles 2 kk, 2 kk + 1), Y the [key][d] tile buffer
 * buf; ldmatrix.trans of keys 16 kk + 8 jl + rr, columns 16 dn + 8 jh
 * gives the B fragments of tiles 2 dn, 2 dn + 1. */
static void tc_wy(At *a, const Tc *t, LLVMValueRef sc, LLVMValueRef buf,
                  LLVMValueRef acc) {
  Cg *cg = dev(a);
  LLVMBuilderRef b = cg->b;
  LLVMValueRef pa[TC_KEYS / 16][4], bd[TC_KEYS / 16];
  for (int kk = 0; kk < TC_KEYS / 16; kk++) {
    for (int i = 0; i < 4; i++) {
      int k = 8 * kk + 4 * (i >> 1) + 2 * (i & 1);
      pa[kk][i] = tc_pack(a, tc_get(a, sc, k), tc_get(a, sc, k + 1));
    }
    if (t->wg) {
      bd[kk] = tc_desc(a, t, buf, kk, true);
      continue;
    }
    LLVMValueRef row = LLVMBuildAdd(b, LLVMBuildAdd(b, i32v(a, 16 * kk),
                                    t->rr, ""), LLVMBuildShl(b, t->jl,
                                    i32v(a, 3), ""), "");
    for (int dn = 0; dn < a->g.d / 16; dn++) {
      LLVMValueRef r[4];
      cu_ldmatrix4(cg, tc_chunk(a, t, buf, row, LLVMBuildAdd(
                   b, i32v(a, 2 * dn), t->jh, "")), true, r);
      for (int x = 0; x < 2; x++) {
        LLVMValueRef c[4];
        for (int i = 0; i < 4; i++) c[i] = tc_get(a, acc, 4 * (2 * dn + x) + i);
        cu_mma(cg, a->dt, pa[kk], r + 2 * x, c);
        for (int i = 0; i < 4; i++)
          LLVMBuildStore(b, c[i], tc_at(a, acc, 4 * (2 * dn + x) + i));
      }
    }
  }
  if (t->wg)
    cu_wgmma(cg, a->dt, (int)a->g.d, acc, TC_KEYS / 16, NULL, pa, false, bd,
             true, 0);
}

/* Key j of element e (0, 1) of n8 tile nt of the tile from j0. */
static LLVMValueRef tc_key(At *a, LLVMValueRef j0, LLVMValueRef t2, int nt,
                           int e) {
  return add(a->cu, add(a->cu, j0, t2), I(a, 8 * nt + e));
}

/* The final score of sc element k for query i and key j (clamped to
 * the lengths; -inf where !ok); in an interior tile (fast) only the
 * scale. */
static LLVMValueRef tc_score(At *a, LLVMValueRef sc, int k, LLVMValueRef i,
                             LLVMValueRef j, LLVMValueRef ok, bool fast,
                             LLVMValueRef *f) {
  LLVMValueRef s = at_mul(a, tc_get(a, sc, k), cst(a, a->g.scale));
  if (fast) {
    if (f) *f = cst(a, a->g.scale);
    return s;
  }
  s = finish_score(a, s, smin(a, i, last(a, a->lq)),
                   smin(a, j, last(a, a->lk)), f);
  return sel(a, ok, s, cst(a, -INFINITY));
}

/* Interior tiles: every (query, key) of queries [qa, qa + TC_KEYS) x
 * keys [ka, ka + TC_KEYS) inside the lengths and allowed by the mask, and scores
 * that need only the scale (no softcap, bias or custom mask); such a
 * tile skips the per-element checks. NULL where no tile can be. */
static LLVMValueRef tc_interior(At *a, LLVMValueRef qa, LLVMValueRef ka) {
  const rlx_attn_geom *g = &a->g;
  if (g->softcap > 0 || g->mask == RLX_ATTN_CUSTOM ||
      g->mask == RLX_ATTN_BIAS)
    return NULL;
  Cu *cu = a->cu;
  LLVMBuilderRef b = dev(a)->b;
  LLVMValueRef in = LLVMBuildAnd(
      b, icmp(a, LLVMIntSLE, add(cu, qa, I(a, TC_KEYS)), SZ(a, a->lq)),
      icmp(a, LLVMIntSLE, add(cu, ka, I(a, TC_KEYS)), SZ(a, a->lk)), "");
  LLVMValueRef d = add(cu, qa, koff(a)); /* the mask's i + off */
  if (g->mask == RLX_ATTN_CAUSAL || g->mask == RLX_ATTN_SLIDING)
    in = LLVMBuildAnd(b, in, icmp(a, LLVMIntSLE,
                                  add(cu, ka, I(a, TC_KEYS - 1)), d), "");
  if (g->mask == RLX_ATTN_SLIDING)
    in = LLVMBuildAnd(b, in, icmp(a, LLVMIntSGE, ka, add(
        cu, d, I(a, TC_KEYS - 1 - g->window))), "");
  return in;
}

/* A tile's element loop emitted twice, for interior tiles (fast) and
 * the others:
 *   TcSplit sp;
 *   for (bool fast = tc_split_begin(a, &sp, interior);; fast = false) {
 *     ...; if (!tc_split_next(a, &sp)) break;
 *   }
 * once (fast false) when interior is NULL. */
typedef struct {
  LLVMBasicBlockRef slow, join;
  int pass;
} TcSplit;

static bool tc_split_begin(At *a, TcSplit *s, LLVMValueRef interior) {
  *s = (TcSplit){0};
  if (!interior) return false;
  Cg *cg = dev(a);
  LLVMBasicBlockRef fast = cg_block(cg, "tc.inner");
  s->slow = cg_block(cg, "tc.edge"), s->join = cg_block(cg, "tc.join");
  LLVMBuildCondBr(cg->b, interior, fast, s->slow);
  LLVMPositionBuilderAtEnd(cg->b, fast);
  return true;
}

static bool tc_split_next(At *a, TcSplit *s) {
  if (!s->join) return false;
  LLVMBuildBr(dev(a)->b, s->join);
  LLVMPositionBuilderAtEnd(dev(a)->b, s->pass++ ? s->join : s->slow);
  return s->pass == 1;
}

/* exp(s - m) as ex2.approx(s log2 e - m log2 e), ml = -m log2 e (the
 * row's, computed once). */
static LLVMValueRef tc_exp_sub(At *a, LLVMValueRef s, LLVMValueRef ml) {
  LLVMValueRef x[3] = {s, cst(a, 1.4426950408889634), ml};
  x[0] = cg_intrinsic_n(dev(a), "llvm.fma", &a->et, 1, x, 3);
  return cg_intrinsic_n(dev(a), "llvm.nvvm.ex2.approx.ftz.f", NULL, 0, x, 1);
}

/* -m log2 e. */
static LLVMValueRef tc_mlog(At *a, LLVMValueRef m) {
  return at_mul(a, m, cst(a, -1.4426950408889634));
}

/* attention (o, and its lse when a->lse_off != -1) or the backward's
 * pre-pass (pre: lse and D = dO . o of each row, as fwd_kernel). */
static void tc_fwd_kernel(At *a, CgPlan *p, bool pre) {
  Cu *cu = a->cu;
  Cg *cg = dev(a);
  LLVMBuilderRef b = cg->b;
  int64_t nd = a->g.d / 8; /* n8 tiles of O */
  Tc t;
  LLVMValueRef rows[2], t2, qa[8][4];
  if (!tc_begin(a, p, pre ? "attention_mma_lse" : "attention_mma", a->lq,
                &t, 4, rows, &t2))
    return;
  LLVMValueRef qb = i32v(a, 3); /* wgmma: Q's buffer, staged first */
  if (t.wg) tc_issue(a, &t, a->n->in[0], true, qb, a->t0);
  else tc_frags(a, a->n->in[0], true, rows, t2, qa);
  /* state: m[2], l[2] (this thread's partial sums), O[nd][4] */
  LLVMValueRef st = cg_alloca(cg, LLVMArrayType2(cg->t_f32, 4 + 4 * nd),
                              "st");
  for (int k = 0; k < 4 + 4 * nd; k++)
    LLVMBuildStore(b, cst(a, k < 2 ? -INFINITY : 0), tc_at(a, st, k));
  LLVMValueRef acc = tc_at(a, st, 4);
  LLVMValueRef sc = cg_alloca(cg, LLVMArrayType2(cg->t_f32, 32), "s");
  LLVMValueRef lo, hi;
  krange(a, a->t0, tile_len(a, a->lq), &lo, &hi);
  /* pipeline: K of tile kt + 1 (other K buffer) loads while tile kt's
   * softmax and P V run; V of tile kt + 1 while its S does */
  LLVMValueRef kt0 = udiv(cu, lo, TC_KEYS);
  Node *kn = a->n->in[1], *vn = a->n->in[2];
  tc_issue(a, &t, kn, false, LLVMBuildTrunc(b, LLVMBuildAnd(b, kt0, I(a, 1),
                                            ""), cg->t_i32, ""),
           mul(cu, kt0, TC_KEYS));
  tc_issue(a, &t, vn, false, i32v(a, 2), mul(cu, kt0, TC_KEYS));
  CgLoop tl;
  LLVMValueRef kt = cg_loop_begin(cg, &tl, kt0,
                                  udiv(cu, add(cu, hi, I(a, TC_KEYS - 1)),
                                       TC_KEYS), NULL, 0);
  LLVMValueRef j0 = mul(cu, kt, TC_KEYS);
  LLVMValueRef kb = LLVMBuildTrunc(b, LLVMBuildAnd(b, kt, I(a, 1), ""),
                                   cg->t_i32, "");
  tc_wait(a, &t, 1); /* K of this tile has landed */
  tc_xyt(a, &t, qa, qb, kb, sc);
  tc_issue(a, &t, kn, false, LLVMBuildXor(b, kb, i32v(a, 1), ""),
           add(cu, j0, I(a, TC_KEYS)));
  /* scores, then the online softmax of rows[h] (elements 2 h, 2 h + 1) */
  TcSplit sp;
  for (bool fast = tc_split_begin(a, &sp, tc_interior(a, a->t0, j0));;
       fast = false) {
    for (int h = 0; h < 2; h++)
      for (int nt = 0; nt < TC_KEYS / 8; nt++)
        for (int e = 0; e < 2; e++) {
          int k = 4 * nt + 2 * h + e;
          LLVMValueRef j = tc_key(a, j0, t2, nt, e);
          LLVMBuildStore(b, tc_score(a, sc, k, rows[h], j,
                                     ult(cu, j, a->lk), fast, NULL),
                         tc_at(a, sc, k));
        }
    if (!tc_split_next(a, &sp)) break;
  }
  for (int h = 0; h < 2; h++) {
    LLVMValueRef mx = tc_get(a, st, h);
    for (int nt = 0; nt < TC_KEYS / 8; nt++)
      for (int e = 0; e < 2; e++)
        mx = tc_max(a, mx, tc_get(a, sc, 4 * nt + 2 * h + e));
    mx = tc_quad(a, mx, true);
    LLVMValueRef mu = sel(a, LLVMBuildFCmp(b, LLVMRealOEQ, mx,
                                           cst(a, -INFINITY), ""),
                          cst(a, 0), mx);
    LLVMValueRef alpha = tc_exp(a, at_sub(a, tc_get(a, st, h), mu));
    LLVMValueRef sum = at_mul(a, tc_get(a, st, 2 + h), alpha);
    LLVMValueRef ml = tc_mlog(a, mu);
    for (int nt = 0; nt < TC_KEYS / 8; nt++)
      for (int e = 0; e < 2; e++) {
        int k = 4 * nt + 2 * h + e;
        LLVMValueRef pj = tc_exp_sub(a, tc_get(a, sc, k), ml);
        LLVMBuildStore(b, pj, tc_at(a, sc, k));
        sum = at_add(a, sum, pj);
      }
    LLVMBuildStore(b, mx, tc_at(a, st, h));
    LLVMBuildStore(b, sum, tc_at(a, st, 2 + h));
    for (int n = 0; n < nd; n++)
      for (int e = 0; e < 2; e++) {
        LLVMValueRef q = tc_at(a, acc, 4 * n + 2 * h + e);
        LLVMBuildStore(b, at_mul(a, LLVMBuildLoad2(b, cg->t_f32, q, ""),
                                 alpha), q);
      }
  }
  tc_wait(a, &t, 1); /* V of this tile has landed */
  tc_wy(a, &t, sc, i32v(a, 2), acc);
  barrier(a); /* every warp is done with V */
  tc_issue(a, &t, vn, false, i32v(a, 2), add(cu, j0, I(a, TC_KEYS)));
  cg_loop_end(cg, &tl, NULL);
  cg_intrinsic_n(cg, "llvm.nvvm.cp.async.wait.all", NULL, 0, NULL, 0);
  /* o = O / l (0 for a row without allowed keys); the pre-pass: lse and
   * D (the quad's partial dot products summed) */
  for (int h = 0; h < 2; h++) {
    LLVMValueRef l = tc_quad(a, tc_get(a, st, 2 + h), false);
    LLVMValueRef pos = LLVMBuildFCmp(b, LLVMRealOGT, l, cst(a, 0), "");
    LLVMValueRef valid = ult(cu, rows[h], a->lq);
    LLVMValueRef i = smin(a, rows[h], last(a, a->lq));
    LLVMValueRef base = row_off(a, NULL, true, i), dd = cst(a, 0);
    for (int n = 0; n < nd; n++)
      for (int e = 0; e < 2; e++) {
        LLVMValueRef o = sel(a, pos, LLVMBuildFDiv(
            b, tc_get(a, acc, 4 * n + 2 * h + e), l, ""), cst(a, 0));
        LLVMValueRef off = add(cu, base, add(cu, t2, I(a, 8 * n + e)));
        if (pre) {
          dd = at_add(a, dd, at_mul(a, cg_load(cg, a->dt, cg_buf(
              cg, a->n->in[3]), off), o));
        } else {
          LLVMBasicBlockRef jn = begin_if(a, valid);
          cg_store(cg, a->dt, cg_buf(cg, a->n), off, o);
          end_if(a, jn);
        }
      }
    if (pre) dd = tc_quad(a, dd, false);
    LLVMBasicBlockRef jn = begin_if(a, valid);
    if (pre) LLVMBuildStore(b, dd, d_at(a, i));
    if (a->lse_off != -1) put_lse(a, i, tc_get(a, st, h), l);
    end_if(a, jn);
  }
  tc_end(a, &t, a->lq);
}

/* A zeroed f32 array of n (registers once promoted). */
static LLVMValueRef tc_zeros(At *a, int64_t n, const char *nm) {
  LLVMValueRef p = cg_alloca(dev(a), LLVMArrayType2(dev(a)->t_f32,
                                                    (uint64_t)n), nm);
  for (int k = 0; k < n; k++)
    LLVMBuildStore(dev(a)->b, cst(a, 0), tc_at(a, p, k));
  return p;
}

/* Open the loop over the 64-row tiles covering [lo, hi) of the other
 * side (x0, x2: its q-like or k-like operands), staged by cp.async in
 * the shared buffers buf[0] (x0) and buf[1] (x2); the tile's first
 * row. Where four buffers fit (head_dim <= 96) the next tile's copies
 * are in flight while this one is used (x0 alternates between buffers
 * 0 and 1, x2 between 2 and 3; one barrier a tile); else each tile is
 * staged in buffers 0 and 2 between two barriers. */
static LLVMValueRef tc_tiles_begin(At *a, const Tc *t, CgLoop *tl,
                                   LLVMValueRef lo, LLVMValueRef hi,
                                   Node *x0, Node *x2, bool qlike,
                                   LLVMValueRef buf[2]) {
  Cu *cu = a->cu;
  Cg *cg = dev(a);
  LLVMBuilderRef b = cg->b;
  bool pipe = t->wg || 4 * TC_KEYS * t->cpr * 16 <= TC_SMEM;
  LLVMValueRef first = udiv(cu, lo, TC_KEYS);
  if (pipe) {
    LLVMValueRef par = LLVMBuildTrunc(b, LLVMBuildAnd(b, first, I(a, 1), ""),
                                      cg->t_i32, "");
    tc_issue(a, t, x0, qlike, par, mul(cu, first, TC_KEYS));
    tc_issue(a, t, x2, qlike, LLVMBuildAdd(b, par, i32v(a, 2), ""),
             mul(cu, first, TC_KEYS));
  }
  LLVMValueRef it = cg_loop_begin(cg, tl, first,
                                  udiv(cu, add(cu, hi, I(a, TC_KEYS - 1)),
                                       TC_KEYS), NULL, 0);
  LLVMValueRef r0 = mul(cu, it, TC_KEYS);
  if (!pipe) {
    buf[0] = i32v(a, 0), buf[1] = i32v(a, 2);
    barrier(a); /* every warp is done with the previous tile */
    tc_issue(a, t, x0, qlike, buf[0], r0);
    tc_issue(a, t, x2, qlike, buf[1], r0);
    cg_intrinsic_n(cg, "llvm.nvvm.cp.async.wait.all", NULL, 0, NULL, 0);
    barrier(a);
    return r0;
  }
  LLVMValueRef par = LLVMBuildTrunc(b, LLVMBuildAnd(b, it, I(a, 1), ""),
                                    cg->t_i32, "");
  buf[0] = par, buf[1] = LLVMBuildAdd(b, par, i32v(a, 2), "");
  /* this tile has landed, and every warp is done with the previous one,
   * whose buffers the next tile's copies reuse */
  tc_wait(a, t, 0);
  LLVMValueRef nx = LLVMBuildXor(b, par, i32v(a, 1), "");
  tc_issue(a, t, x0, qlike, nx, add(cu, r0, I(a, TC_KEYS)));
  tc_issue(a, t, x2, qlike, LLVMBuildAdd(b, nx, i32v(a, 2), ""),
           add(cu, r0, I(a, TC_KEYS)));
  return r0;
}

/* Close tc_tiles_begin's loop; no copies left in flight. */
static void tc_tiles_end(At *a, CgLoop *tl) {
  cg_loop_end(dev(a), tl, NULL);
  cg_intrinsic_n(dev(a), "llvm.nvvm.cp.async.wait.all", NULL, 0, NULL, 0);
}

/* Store the d / 8 n8 tiles of acc as rows[] (inside the length) of the
 * output (q-like or k-like). */
static void tc_store_rows(At *a, Node *out, LLVMValueRef rows[2],
                          LLVMValueRef t2, LLVMValueRef acc, bool qlike) {
  Cu *cu = a->cu;
  Cg *cg = dev(a);
  for (int h = 0; h < 2; h++) {
    LLVMBasicBlockRef jn = begin_if(a, ult(cu, rows[h],
                                           qlike ? a->lq : a->lk));
    LLVMValueRef base = row_off(a, out, qlike, rows[h]);
    for (int n = 0; n < a->g.d / 8; n++)
      for (int e = 0; e < 2; e++)
        cg_store(cg, a->dt, cg_buf(cg, out),
                 add(cu, base, add(cu, t2, I(a, 8 * n + e))),
                 tc_get(a, acc, 4 * n + 2 * h + e));
    end_if(a, jn);
  }
}

/* attention_backward wrt=q (dq) or wrt=bias (dbias): per key tile S =
 * Q K^T and dP = dO V^T by mma, P = exp(s - lse), dS = P (dP - D);
 * dbias = dS stored, or dq += (dS f) K by mma (f: finish_score's). */
static void tc_dq_kernel(At *a, CgPlan *p, bool dbias) {
  Cu *cu = a->cu;
  Cg *cg = dev(a);
  LLVMBuilderRef b = cg->b;
  int64_t nd = a->g.d / 8;
  Tc t;
  LLVMValueRef rows[2], t2, qa[8][4], ya[8][4], ls[2], dd[2];
  if (!tc_begin(a, p, dbias ? "attention_mma_dbias" : "attention_mma_dq",
                a->lq, &t, 6, rows, &t2))
    return;
  LLVMValueRef qb = i32v(a, 4), yb = i32v(a, 5); /* wgmma: Q, dO */
  if (t.wg) {
    tc_issue(a, &t, a->n->in[0], true, qb, a->t0);
    tc_issue(a, &t, a->n->in[3], true, yb, a->t0);
  } else {
    tc_frags(a, a->n->in[0], true, rows, t2, qa);
    tc_frags(a, a->n->in[3], true, rows, t2, ya);
  }
  for (int h = 0; h < 2; h++) {
    lse_d(a, smin(a, rows[h], last(a, a->lq)), &ls[h], &dd[h]);
    ls[h] = tc_mlog(a, ls[h]);
  }
  LLVMValueRef acc = tc_zeros(a, 4 * nd, "dq"), sc = tc_zeros(a, 32, "s");
  LLVMValueRef dp = tc_zeros(a, 32, "dp"), lo, hi;
  krange(a, a->t0, tile_len(a, a->lq), &lo, &hi);
  CgLoop tl;
  LLVMValueRef buf[2], j0 = tc_tiles_begin(a, &t, &tl, lo, hi, a->n->in[1],
                                           a->n->in[2], false, buf);
  tc_xyt(a, &t, qa, qb, buf[0], sc);
  tc_xyt(a, &t, ya, yb, buf[1], dp);
  TcSplit sp;
  for (bool fast = tc_split_begin(a, &sp, tc_interior(a, a->t0, j0));;
       fast = false) {
    for (int h = 0; h < 2; h++) {
      LLVMValueRef i = smin(a, rows[h], last(a, a->lq));
      LLVMValueRef in = ult(cu, rows[h], a->lq);
      for (int nt = 0; nt < TC_KEYS / 8; nt++)
        for (int e = 0; e < 2; e++) {
          int k = 4 * nt + 2 * h + e;
          LLVMValueRef j = tc_key(a, j0, t2, nt, e), f;
          LLVMValueRef s = tc_score(a, sc, k, i, j, ult(cu, j, a->lk), fast,
                                    &f);
          LLVMValueRef pj = tc_exp_sub(a, s, ls[h]);
          LLVMValueRef ds = at_mul(a, pj, at_sub(a, tc_get(a, dp, k),
                                                 dd[h]));
          if (!dbias) {
            LLVMBuildStore(b, at_mul(a, ds, f), tc_at(a, sc, k));
            continue;
          }
          LLVMBasicBlockRef jn = begin_if(a, LLVMBuildAnd(
              b, in, ult(cu, j, a->lk), ""));
          LLVMValueRef bi = add(cu, mul(cu, add(cu, mul(cu, a->bh, a->lq),
                                                i), a->lk), j);
          cg_store(cg, a->dt, cg_buf(cg, a->res[3]), bi, ds);
          end_if(a, jn);
        }
    }
    if (!tc_split_next(a, &sp)) break;
  }
  if (!dbias) tc_wy(a, &t, sc, buf[0], acc);
  tc_tiles_end(a, &tl);
  if (!dbias) tc_store_rows(a, a->res[0], rows, t2, acc, true);
  tc_end(a, &t, a->lq);
}

/* attention_backward wrt=k (dk) and/or wrt=v (dv): 64 key rows a
 * block, over the query tiles that may see them (Q and dO tiles
 * staged): S^T = K Q^T by mma, P^T = exp(s - lse_i) (lse and D of the
 * query columns); dv += P^T dO, and dP^T = V dO^T, dS^T = P^T (dP^T - D),
 * dk += (dS^T f) Q, by mma. */
static void tc_dkv_kernel(At *a, CgPlan *p, bool dk, bool dv) {
  Cu *cu = a->cu;
  Cg *cg = dev(a);
  LLVMBuilderRef b = cg->b;
  int64_t nd = a->g.d / 8;
  Tc t;
  LLVMValueRef rows[2], t2, ka[8][4], va[8][4];
  if (!tc_begin(a, p, !dk ? "attention_mma_dv" : !dv ? "attention_mma_dk"
                : "attention_mma_dkv", a->lk, &t, 6, rows, &t2))
    return;
  LLVMValueRef kb = i32v(a, 4), vb = i32v(a, 5); /* wgmma: K, V */
  if (t.wg) {
    tc_issue(a, &t, a->n->in[1], false, kb, a->t0);
    if (dk) tc_issue(a, &t, a->n->in[2], false, vb, a->t0);
  } else {
    tc_frags(a, a->n->in[1], false, rows, t2, ka);
    if (dk) tc_frags(a, a->n->in[2], false, rows, t2, va);
  }
  LLVMValueRef acck = dk ? tc_zeros(a, 4 * nd, "dk") : NULL;
  LLVMValueRef accv = dv ? tc_zeros(a, 4 * nd, "dv") : NULL;
  LLVMValueRef sc = tc_zeros(a, 32, "s"), dp = tc_zeros(a, 32, "dp"), lo, hi;
  qrange(a, a->t0, tile_len(a, a->lk), &lo, &hi);
  CgLoop tl;
  LLVMValueRef buf[2], i0 = tc_tiles_begin(a, &t, &tl, lo, hi, a->n->in[0],
                                           a->n->in[3], true, buf);
  tc_xyt(a, &t, ka, kb, buf[0], sc);
  if (dk) tc_xyt(a, &t, va, vb, buf[1], dp);
  LLVMValueRef ls[TC_KEYS / 8][2], dd[TC_KEYS / 8][2];
  for (int nt = 0; nt < TC_KEYS / 8; nt++)
    for (int e = 0; e < 2; e++) {
      LLVMValueRef i = tc_key(a, i0, t2, nt, e);
      lse_d(a, smin(a, i, last(a, a->lq)), &ls[nt][e], &dd[nt][e]);
      ls[nt][e] = tc_mlog(a, ls[nt][e]);
    }
  TcSplit sp;
  for (bool fast = tc_split_begin(a, &sp, tc_interior(a, i0, a->t0));;
       fast = false) {
    for (int nt = 0; nt < TC_KEYS / 8; nt++)
      for (int e = 0; e < 2; e++)
        for (int h = 0; h < 2; h++) {
          int k = 4 * nt + 2 * h + e;
          LLVMValueRef i = tc_key(a, i0, t2, nt, e), f;
          LLVMValueRef s = tc_score(a, sc, k, i, rows[h], ult(cu, i, a->lq),
                                    fast, &f);
          LLVMValueRef pj = tc_exp_sub(a, s, ls[nt][e]);
          LLVMBuildStore(b, pj, tc_at(a, sc, k));
          if (dk)
            LLVMBuildStore(b, at_mul(a, at_mul(a, pj, at_sub(
                a, tc_get(a, dp, k), dd[nt][e])), f), tc_at(a, dp, k));
        }
    if (!tc_split_next(a, &sp)) break;
  }
  if (dv) tc_wy(a, &t, sc, buf[1], accv);
  if (dk) tc_wy(a, &t, dp, buf[0], acck);
  tc_tiles_end(a, &tl);
  if (dk) tc_store_rows(a, a->res[1], rows, t2, acck, false);
  if (dv) tc_store_rows(a, a->res[2], rows, t2, accv, false);
  tc_end(a, &t, a->lk);
}

/* b * h * lq of attention n as a size, -1 if it overflows. */
static int64_t at_rows(Ctx *c, const Node *n) {
  rlx_attn_geom g = cg_attn_geometry(n);
  int64_t r;
  return dim_mul(c, g.b, g.h, &r) == DIM_OK && dim_mul(c, r, g.lq, &r) ==
                                                    DIM_OK ? r : -1;
}

/* The leader's scratch: D, and lse unless its forward saved it
 * ([b][h][lq] each, compute type); members have none. */
int64_t cu_attention_scratch(const CgPlan *p, const Node *n) {
  const CgSlot *s = &p->slot[n->id];
  if (n->op != OP_ATTENTION_BACKWARD || s->attn_lead) return 0;
  int64_t es = n->type.dt == DT_F64 ? 8 : 4, rows;
  if (!node_unbounded(n)) {
    rlx_attn_geom g = cg_attn_geometry_bound(n);
    return cg_align((s->fwd ? 1 : 2) * g.b * g.h * g.lq * es + 1);
  }
  return (rows = at_rows(p->ctx, n)) != -1 &&
                 dim_mul(p->ctx, rows, (s->fwd ? 1 : 2) * es, &rows) == DIM_OK
             ? rows : -1; /* a size: laid out at run time */
}

bool cu_attention(Cu *cu, CgPlan *p, Node *n) {
  DType dt = n->type.dt;
  if (dt != DT_F32 && dt != DT_F64 && dt != DT_F16 && dt != DT_BF16)
    return cu_bad_dtype(cu, n, dt);
  const CgSlot *s = &p->slot[n->id];
  if (s->attn_lead) return true; /* written by its leader */
  bool bwd = n->op == OP_ATTENTION_BACKWARD;
  rlx_attn_geom gd = cg_attn_geometry(n); /* sizes */
  At a = {.cu = cu, .n = n, .g = cg_attn_geometry_bound(n), .dt = dt,
          .bdim = gd.b, .lq = gd.lq, .lk = gd.lk,
          .ct = dt == DT_F64 ? DT_F64 : DT_F32, .mi = bwd ? 4 : 3,
          .res = {n}, .lse_off = -1, .d_off = -1};
  a.et = cg_ctype(cu->dev, a.ct);
  a.es = dt_size(a.ct);
  if (k_tile_rows(a.g.d, a.es) < 1)
    return cu_unsupported(cu, n, "head_dim too large for the shared tiles");
  a.bt = k_tile_rows(a.g.d, a.es);
  bool tc = tc_ok(&a);
  if (!bwd) {
    if (cu_numel(cu, &n->type) == 0) return true;
    if (s->saved_bytes != 0) a.lse_off = s->saved_off; /* number, size */
    if (tc) tc_fwd_kernel(&a, p, false);
    else fwd_kernel(&a, p, false);
    return !cu->dev->failed;
  }
  /* one group: lse (the forward's, else the pre-pass's) and D once,
   * then the kernels of the wanted results */
  cg_attn_members(p, n, a.res);
  Node *f = s->fwd;
  a.d_off = s->scratch_off;
  if (f)
    a.lse_off = p->slot[f->id].saved_off;
  else if (!node_unbounded(n))
    a.lse_off = a.d_off + a.g.b * a.g.h * a.g.lq * a.es;
  else /* after D, in a block laid out at run time */
    a.lse_off = a.d_off, dim_mul(cu->dev->ctx, at_rows(cu->dev->ctx, n),
                                 a.es, &a.lse_skip);
  if (f) dsum_kernel(&a, p, f);
  else if (tc) tc_fwd_kernel(&a, p, true);
  else if (a.g.lq > 0) fwd_kernel(&a, p, true);
  if (a.res[0]) (tc ? tc_dq_kernel : dq_kernel)(&a, p, false);
  if (a.res[3]) (tc ? tc_dq_kernel : dq_kernel)(&a, p, true);
  if (tc && a.res[1] && a.res[2] && (a.g.d <= 64 || tc_wg(&a))) {
    tc_dkv_kernel(&a, p, true, true); /* both in one pass */
    return !cu->dev->failed;
  }
  a.bt = q_tile_rows(a.g.d, a.es);
  for (int w = 1; w <= 2; w++)
    if (a.res[w] && tc) tc_dkv_kernel(&a, p, w == 1, w == 2);
    else if (a.res[w]) dkv_kernel(&a, p, w == 2);
  return !cu->dev->failed;
}
