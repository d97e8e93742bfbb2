/* matmul.c: matmul and batched matmul on the GPU (cuda.h).
 *
 * f32, f64, c64: shared-memory tiles of 16R x 16R outputs, R x R per
 * thread, k in increasing order with fma (c64: acc + a b, the complex
 * product as the CPU's rlx_gemm_c64): the same bits for every tile size;
 * few tiles: K split over blocks, partial sums added in slice order by a
 * second kernel (deterministic). Transposes folded by the plan are read
 * through strides. dequant_matmul (f32, f64) runs on the same tiles, x
 * as [numel / K, K], its i8 weight dequantized as the tiles are loaded
 * ((T)w[k, j] * s[k / group, j], the CPU's dequantized panel); so does
 * q_matmul: i32 tiles of x - x_zp and w - w_zp, i32 sums (exact), the
 * CPU's requantization on store (cu_q_requant).
 */
#include "codegen/cuda/mma.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define TS 16 /* matmul tile */

/* ---- matmul ----
 * C[b] = A[b] B[b]: a block of 16x16 threads computes a tile of
 * 16R x 16R outputs, R x R per thread, from 16-deep slices of A and B
 * staged in shared memory (k-major, rows padded by 4 elements so that
 * the stores of k-contiguous operands spread over the banks). Thread
 * (tx, ty) owns rows ty V + v + 16 V h and columns tx V + v + 16 V h
 * (V = min(R, 4) consecutive ones, h < R / V), read with V-wide vector
 * shared loads. Two shared buffers: the next slice is fetched into
 * registers while the current one is multiplied, then stored into the
 * other buffer; one barrier per slice. R (8 for 4-byte elements, else
 * 4, then 2 or 1) is the largest that still gives about one block per
 * SM. Every output is fma(a_k, b_k, acc) over k = 0, 1, ... in order
 * from 0, whatever R: the same bits for any tile size. */

typedef struct {
  Node *st;                 /* storage node */
  int64_t rs, cs;           /* element (row, col) strides of the operand */
  int64_t bstr[RLX_MAX_RANK]; /* per output batch dim */
  Node *scale;              /* dequant_matmul's w (i8 st): element (r, c) */
  int64_t group;            /* is st's times scale[(r / group) rs + c] */
  bool q;                   /* q_matmul's (i8 st): element - zp, as i32 */
  int64_t zp;
  bool pitched;             /* rows padded with zeros (CgSlot.pitch) */
} MmOp;

#define MM_R_MAX 8
#define MM_PAD 4 /* elements after each shared row */
#define MM_STAGES 3 /* shared buffers of the cp.async pipeline */
#define MM_SMS 120 /* aim for at least this many blocks */
#define MM_SPLIT_K 128 /* shortest K slice of a split product */
static void mm_operand(Cg *cg, CgPlan *p, Node *x, const Type *out,
                       MmOp *o) {
  bool folded = cg_plan_slot(p, x)->kind == CG_SLOT_FOLDED;
  o->st = folded ? x->in[0] : x;
  const Type *t = &o->st->type;
  int64_t s[RLX_MAX_RANK]; /* sizes: a batch stride may be dynamic */
  cg_strides_dim(cg, t, s);
  o->pitched = cg_plan_slot(p, o->st)->pitch > 0; /* plan/views.c */
  if (o->pitched) s[t->rank - 2] = cg_plan_slot(p, o->st)->pitch;
  o->rs = folded ? 1 : s[t->rank - 2];
  o->cs = folded ? s[t->rank - 2] : 1;
  int ob = out->rank - 2, xb = t->rank - 2;
  for (int d = 0; d < ob; d++) {
    int e = d - (ob - xb);
    o->bstr[d] = e >= 0 && t->dims[e] != 1 ? s[e] : 0;
  }
}

/* Load operand element (r, c) if r < R and c < C, else 0. */
static LLVMValueRef mm_load(Cu *cu, DType dt, LLVMValueRef base,
                            const MmOp *o, LLVMValueRef r, LLVMValueRef R,
                            LLVMValueRef c, LLVMValueRef C) {
  Cg *cg = cu->dev;
  LLVMValueRef in = LLVMBuildAnd(
      cg->b, LLVMBuildICmp(cg->b, LLVMIntULT, r, R, ""),
      LLVMBuildICmp(cg->b, LLVMIntULT, c, C, ""), "");
  LLVMValueRef off = add(cu, mul(cu, LLVMBuildSelect(cg->b, in, r,
                                                     i64(cu, 0), ""), o->rs),
                         mul(cu, LLVMBuildSelect(cg->b, in, c, i64(cu, 0), ""),
                             o->cs));
  LLVMValueRef v;
  if (o->scale) { /* the CPU's dequantized weight (T)w * s */
    r = LLVMBuildSelect(cg->b, in, r, i64(cu, 0), "");
    c = LLVMBuildSelect(cg->b, in, c, i64(cu, 0), "");
    v = LLVMBuildSIToFP(cg->b, cg_load(cg, DT_I8, cg_buf(cg, o->st),
                                       add(cu, base, off)),
                        cg_ctype(cg, dt), "");
    LLVMValueRef so = add(cu, mul(cu, udiv(cu, r, o->group), o->rs), c);
    v = LLVMBuildFMul(cg->b, v, cg_load(cg, dt, cg_buf(cg, o->scale), so), "");
  } else if (o->q) {
    v = LLVMBuildSExt(cg->b, cg_load(cg, DT_I8, cg_buf(cg, o->st),
                                     add(cu, base, off)), cg->t_i32, "");
    v = LLVMBuildSub(cg->b, v, cg_i32(cg, (int32_t)o->zp), "");
  } else {
    v = cg_load(cg, dt, cg_buf(cg, o->st), add(cu, base, off));
  }
  return LLVMBuildSelect(cg->b, in, v, cg_const(cg, dt, 0), "");
}

typedef struct {
  DType dt;
  LLVMTypeRef et;
  int R, V;                    /* outputs per thread: R x R; V-wide loads */
  int64_t M, N, K;
  LLVMValueRef kend;           /* this block's k range ends here */
  MmOp a, b;
  LLVMValueRef As, Bs;         /* shared tiles [2][TS][16 R + MM_PAD] */
  LLVMValueRef abase, bbase, row0, col0, tx, ty, tid;
} Mm;

/* Elements of one shared row, and of one of the two buffers. */
static int64_t mm_w(const Mm *m) { return TS * m->R + MM_PAD; }
static int64_t mm_buf(const Mm *m) { return TS * mm_w(m); }

/* Does x's fetch run along k (its k stride is 1), else along the outer
 * index? Consecutive threads then read consecutive elements. */
static bool mm_kfast(const MmOp *x, bool a_side) {
  return (a_side ? x->cs : x->rs) == 1;
}

/* Thread element e (0 <= e < 256 R) of a 16 R x TS operand slice ->
 * its outer index o and k index kk. */
static void mm_split(Cu *cu, const Mm *m, const MmOp *x, bool a_side,
                     LLVMValueRef e, LLVMValueRef *o, LLVMValueRef *kk) {
  bool kf = mm_kfast(x, a_side);
  int64_t w = TS * m->R;
  *o = kf ? udiv(cu, e, TS) : urem(cu, e, w);
  *kk = kf ? urem(cu, e, TS) : udiv(cu, e, w);
}

/* The k0 slice, R elements of A and of B per thread, into registers
 * pa[], pb[] (allocas LLVM promotes): A(row0 + o, k0 + kk) and
 * B(k0 + kk, col0 + o) for e = tid + 256 q (mm_split). Past K they are
 * 0, so the slice after the last is fetched harmlessly. */
static void mm_fetch(Cu *cu, const Mm *m, LLVMValueRef k0, LLVMValueRef pa,
                     LLVMValueRef pb) {
  Cg *cg = cu->dev;
  for (int q = 0; q < m->R; q++) {
    LLVMValueRef e = add(cu, m->tid, i64(cu, q * TS * TS));
    LLVMValueRef qi = cg_i32(cg, q), o, kk;
    mm_split(cu, m, &m->a, true, e, &o, &kk);
    LLVMValueRef v = mm_load(cu, m->dt, m->abase, &m->a, add(cu, m->row0, o),
                             cu_size(cu, m->M), add(cu, k0, kk), m->kend);
    LLVMBuildStore(cg->b, v, LLVMBuildGEP2(cg->b, m->et, pa, &qi, 1, ""));
    mm_split(cu, m, &m->b, false, e, &o, &kk);
    v = mm_load(cu, m->dt, m->bbase, &m->b, add(cu, k0, kk), m->kend,
                add(cu, m->col0, o), cu_size(cu, m->N));
    LLVMBuildStore(cg->b, v, LLVMBuildGEP2(cg->b, m->et, pb, &qi, 1, ""));
  }
}

/* Registers to buffer buf of the shared tiles (k-major): As[buf][kk][o],
 * Bs[buf][kk][o]. */
static void mm_put(Cu *cu, const Mm *m, LLVMValueRef buf, LLVMValueRef pa,
                   LLVMValueRef pb) {
  Cg *cg = cu->dev;
  LLVMValueRef b0 = mul(cu, buf, mm_buf(m));
  for (int q = 0; q < m->R; q++) {
    LLVMValueRef e = add(cu, m->tid, i64(cu, q * TS * TS));
    LLVMValueRef qi = cg_i32(cg, q), o, kk;
    for (int s = 0; s < 2; s++) {
      mm_split(cu, m, s ? &m->b : &m->a, !s, e, &o, &kk);
      LLVMValueRef v = LLVMBuildLoad2(
          cg->b, m->et, LLVMBuildGEP2(cg->b, m->et, s ? pb : pa, &qi, 1, ""),
          "");
      LLVMValueRef i = add(cu, b0, add(cu, mul(cu, kk, mm_w(m)), o));
      LLVMBuildStore(cg->b, v, cu_shared_at(cg, s ? m->Bs : m->As, m->et, i));
    }
  }
}

/* cp.async of the k0 slice into stage st (i64) of the shared tiles:
 * mm_fetch's elements, each copied straight to its k-major place and
 * zero-filled (source size 0) past the edges. Element q of a thread
 * is its element 0 moved by a constant along o (k-fast operand) or k:
 * addresses are one per operand plus immediates. */
static void mm_issue(Cu *cu, const Mm *m, LLVMValueRef k0, LLVMValueRef st) {
  Cg *cg = cu->dev;
  LLVMBuilderRef b = cg->b;
  int es = dt_size(m->dt);
  for (int s = 0; s < 2; s++) {
    const MmOp *x = s ? &m->b : &m->a;
    bool kf = mm_kfast(x, !s);
    LLVMValueRef o, kk;
    mm_split(cu, m, x, !s, m->tid, &o, &kk);
    LLVMValueRef ko = add(cu, k0, kk);
    LLVMValueRef oo = add(cu, s ? m->col0 : m->row0, o);
    LLVMValueRef r = s ? ko : oo, c = s ? oo : ko;
    LLVMValueRef R = s ? m->kend : cu_size(cu, m->M);
    LLVMValueRef C = s ? cu_size(cu, m->N) : m->kend;
    LLVMValueRef buf = cg_buf(cg, x->st);
    LLVMValueRef off = add(cu, s ? m->bbase : m->abase,
                           add(cu, mul(cu, r, x->rs), mul(cu, c, x->cs)));
    LLVMValueRef p0 = LLVMBuildGEP2(b, m->et, buf, &off, 1, "");
    LLVMValueRef d = add(cu, mul(cu, st, mm_buf(m)),
                         add(cu, mul(cu, kk, mm_w(m)), o));
    LLVMValueRef d0 = LLVMBuildGEP2(b, m->et, s ? m->Bs : m->As, &d, 1, "");
    for (int q = 0; q < m->R; q++) {
      int64_t dout = kf ? TS * q : 0, dk = kf ? 0 : TS * TS / (TS * m->R) * q;
      int64_t dr = s ? dk : dout, dc = s ? dout : dk;
      LLVMValueRef in = LLVMBuildAnd(
          b, LLVMBuildICmp(b, LLVMIntULT, add(cu, r, i64(cu, dr)), R, ""),
          LLVMBuildICmp(b, LLVMIntULT, add(cu, c, i64(cu, dc)), C, ""), "");
      LLVMValueRef so = i64(cu, dr * x->rs + dc * x->cs);
      LLVMValueRef dd = i64(cu, dk * mm_w(m) + dout);
      LLVMValueRef src = LLVMBuildSelect(
          b, in, LLVMBuildGEP2(b, m->et, p0, &so, 1, ""), buf, "");
      cu_cp_async(cg, LLVMBuildGEP2(b, m->et, d0, &dd, 1, ""), src, in, es);
    }
  }
  cg_intrinsic_n(cg, "llvm.nvvm.cp.async.commit.group", NULL, 0, NULL, 0);
}

/* acc + a b: fma; i32 multiply-add (wrapping); for c64 (<2 x float>)
 * the textbook complex product added to acc (rlx_gemm_c64's
 * c += ar br - ai bi, c' += ar bi + ai br). */
static LLVMValueRef mm_fma(Cg *cg, DType dt, LLVMValueRef a, LLVMValueRef b,
                           LLVMValueRef acc) {
  if (dt == DT_I32) /* q_matmul: wrapping, exact in any order */
    return LLVMBuildAdd(cg->b, acc, LLVMBuildMul(cg->b, a, b, ""), "");
  if (dt == DT_C64)
    return LLVMBuildFAdd(cg->b, acc,
                         cg_ops_combine(cg, dt, CG_RED_PROD, a, b), "");
  LLVMValueRef f[3] = {a, b, acc};
  return cg_intrinsic(cg, "llvm.fma", LLVMTypeOf(acc), f, 3);
}

/* V consecutive elements of shared tile t from index i into v[]: one
 * vector load (c64: V scalar loads). */
static void mm_lds(Cu *cu, const Mm *m, LLVMValueRef t, LLVMValueRef i,
                   LLVMValueRef *v) {
  Cg *cg = cu->dev;
  if (m->V == 1 || m->dt == DT_C64) {
    for (int j = 0; j < m->V; j++)
      v[j] = LLVMBuildLoad2(cg->b, m->et, cu_shared_at(cg, t, m->et,
                            add(cu, i, i64(cu, j))), "");
    return;
  }
  LLVMTypeRef vt = LLVMVectorType(m->et, (unsigned)m->V);
  unsigned bytes = (unsigned)(m->V * dt_size(m->dt));
  LLVMValueRef x = LLVMBuildLoad2(cg->b, vt, cu_shared_at(cg, t, m->et, i),
                                  "");
  LLVMSetAlignment(x, bytes < 16 ? bytes : 16);
  for (int j = 0; j < m->V; j++)
    v[j] = LLVMBuildExtractElement(cg->b, x, cg_i32(cg, j), "");
}

/* acc[i][j] = fma(A(row i, k), B(k, col j), acc) for the k < TS of
 * buffer buf; row i = ty V + v + 16 V h for i = h V + v (columns
 * alike with tx). */
static void mm_slice(Cu *cu, const Mm *m, LLVMValueRef buf, LLVMValueRef acc) {
  Cg *cg = cu->dev;
  int R = m->R, V = m->V;
  LLVMValueRef b0 = mul(cu, buf, mm_buf(m));
  LLVMValueRef ao = add(cu, b0, mul(cu, m->ty, V));
  LLVMValueRef bo = add(cu, b0, mul(cu, m->tx, V));
  for (int k = 0; k < TS; k++) {
    LLVMValueRef av[MM_R_MAX], bv[MM_R_MAX];
    for (int h = 0; h < R / V; h++) {
      int64_t d = k * mm_w(m) + TS * V * h;
      mm_lds(cu, m, m->As, add(cu, ao, i64(cu, d)), av + h * V);
      mm_lds(cu, m, m->Bs, add(cu, bo, i64(cu, d)), bv + h * V);
    }
    for (int i = 0; i < R; i++)
      for (int j = 0; j < R; j++) {
        LLVMValueRef ix = cg_i32(cg, i * R + j);
        LLVMValueRef p = LLVMBuildGEP2(cg->b, m->et, acc, &ix, 1, "");
        LLVMBuildStore(cg->b, mm_fma(cg, m->dt, av[i], bv[j],
                                     LLVMBuildLoad2(cg->b, m->et, p, "")), p);
      }
  }
}

/* Tile and split of matmul n: R (outputs per thread R x R), S slices
 * of K of ks elements each (a multiple of TS). Few blocks (small M N)
 * leave SMs idle and each block walks a long K: then the K range is
 * split over S blocks, whose partial sums a second kernel adds in
 * slice order (deterministic; S is a function of the shape). */
/* The tiles of a product: batch, M, N, K, tm x tn output tiles of
 * 16R x 16R, K in S slices of ks. Dynamic sizes (docs/gpu.md, cu_matmul_
 * dyn): the tiles are chosen for the bounds (batch, tm, tn: the bounds'
 * counts; bdim: the batch as a size); the grid comes from the run-time
 * M or batch, column tiles past a run-time N store nothing, k slices
 * past a run-time K are empty. Sizes without a bound (only in M, K or
 * the batch) leave K unsplit: one slice to the run-time K. */
typedef struct {
  int64_t batch, bdim, M, N, K, tm, tn, ks;
  int R, S;
} MmGeom;

/* The largest R of n's tiles: 8 for 4-byte sums (f32, i32; RLX_CUDA_MM's
 * f32rR can lower it), else 4 (the shared tiles stay under 48 KiB). */
static int mm_rmax(const Cu *cu, DType dt) {
  const Unit *u = cu->dev->u;
  int r = u && u->opt && u->opt->gpu_mm_r ? u->opt->gpu_mm_r : MM_R_MAX;
  return dt_size(dt) == 4 ? r : MM_R_MAX / 2;
}

static DType mm_acc_dt(const Node *n);

static MmGeom mm_geom(const Cu *cu, const Node *n) {
  const Type *t = &n->type;
  MmGeom g = {.M = t->dims[t->rank - 2], .N = t->dims[t->rank - 1],
              .K = n->in[0]->type.dims[n->in[0]->type.rank - 1], .R = 1,
              .S = 1};
  if (n->op == OP_DEQUANT_MATMUL) { /* x as [numel / K, K], one batch */
    const Type *w = &n->in[1]->type, *x = &n->in[0]->type;
    g.K = w->dims[0], g.N = w->dims[1], g.M = 1;
    for (int i = 0; i + 1 < x->rank; i++) { /* M: a size (dynamic axes) */
      DimStatus st = dim_mul(cu->dev->ctx, g.M, x->dims[i], &g.M);
      RLX_ASSERT(st == DIM_OK); /* a factor of x's element count */
    }
  }
  int64_t M = dim_bound(g.M), K = dim_bound(g.K), N = dim_bound(g.N);
  g.bdim = 1; /* dequant_matmul: one batch */
  for (int i = 0; n->op != OP_DEQUANT_MATMUL && i + 2 < t->rank; i++)
    dim_mul(cu->dev->ctx, g.bdim, t->dims[i], &g.bdim);
  g.batch = M && N ? dim_bound(g.bdim) : 0;
  for (int R = mm_rmax(cu, mm_acc_dt(n)); R >= 1; R /= 2) {
    g.R = R;
    g.tm = (M + TS * R - 1) / (TS * R);
    g.tn = (dim_bound(g.N) + TS * R - 1) / (TS * R); /* blocks past a
                                          dynamic N store nothing */
    if (g.batch * g.tm * g.tn >= MM_SMS) break;
  }
  int64_t blocks = g.batch * g.tm * g.tn;
  bool split = type_is_bounded(t) && dim_is_bounded(g.K); /* partials and
                                          slices laid out for the bounds */
  if (split && blocks > 0 && blocks < 2 * MM_SMS && K >= 2 * MM_SPLIT_K) {
    int64_t s = 4 * MM_SMS / blocks, smax = K / MM_SPLIT_K;
    g.S = (int)(s < smax ? s : smax);
    if (g.S < 1) g.S = 1;
  }
  int64_t per = (K + g.S - 1) / g.S;
  g.ks = (per + TS - 1) / TS * TS;
  if (g.ks == 0) g.ks = TS;
  g.S = (int)((K + g.ks - 1) / g.ks);
  if (g.S < 1) g.S = 1;
  if (!dim_is_bounded(g.K)) /* one slice, to the run-time K */
    g.S = 1, g.ks = (RLX_MAX_ELEMS + TS - 1) / TS * TS;
  return g;
}

/* Does matmul n run on the tensor cores (bf16, f16; f32 with
 * --gpu-tf32)? */
static bool mm_on_mma(const Cu *cu, const Node *n) {
  DType dt = n->type.dt;
  const Unit *u = cu->dev->u;
  return n->op == OP_MATMUL && (dt == DT_BF16 || dt == DT_F16 ||
         (dt == DT_F32 && u && u->opt && u->opt->gpu_tf32));
}

static bool mma_matmul(Cu *cu, CgPlan *p, Node *n);

/* The tiles' sum dtype: q_matmul's i32, else n's. */
static DType mm_acc_dt(const Node *n) {
  return n->op == OP_Q_MATMUL ? DT_I32 : n->type.dt;
}
static void mm_cores(Cu *cu, CgPlan *p, Node *n, const MmOp *a,
                     const MmOp *b);

static int64_t mma_scratch(const Cu *cu, const CgPlan *p, const Node *n);

/* M N of product n as a size (the batch stride of its output). */
static int64_t mm_mn(Cu *cu, const Node *n) {
  const Type *t = &n->type;
  int64_t mn;
  dim_mul(cu->dev->ctx, t->dims[t->rank - 2], t->dims[t->rank - 1], &mn);
  return mn;
}

/* The elements of n's output at its bounds (the stride of split-K
 * partials). */
static int64_t mm_numel(const Node *n) {
  return type_bytes_bound(&n->type) / dt_size(n->type.dt);
}

int64_t cu_matmul_scratch(const Cu *cu, const CgPlan *p, const Node *n) {
  if (mm_on_mma(cu, n)) return mma_scratch(cu, p, n);
  MmGeom g = mm_geom(cu, n);
  return g.S > 1 ? g.S * mm_numel(n) * dt_size(mm_acc_dt(n)) : 0;
}

const char *cu_matmul_dyn(const Cu *cu, const CgPlan *p, const Node *n) {
  const Type *t = &n->type;
  int r = t->rank;
  bool bdyn = false, mdyn = !dim_is_static(t->dims[r - 2]);
  for (int i = 0; i + 2 < r; i++) bdyn |= !dim_is_static(t->dims[i]);
  if (bdyn && mdyn) return "a dynamic M and a dynamic batch";
  if (!mm_on_mma(cu, n)) return NULL; /* CUDA cores: any other sizes */
  if (!dim_is_static(t->dims[r - 1]) ||
      !dim_is_static(n->in[0]->type.dims[n->in[0]->type.rank - 1]))
    return "a dynamic N or K on the tensor cores";
  for (int k = 0; k < 2; k++) { /* rows and columns at static strides */
    MmOp o = {0};
    mm_operand(cu->dev, (CgPlan *)p, n->in[k], t, &o);
    if (!dim_is_static(o.rs) || !dim_is_static(o.cs))
      return "an operand of the tensor cores whose rows or columns are a "
             "dynamic stride apart";
  }
  return NULL;
}

/* Output element off (column c) of n <- its sum v: q_matmul's
 * requantized. */
static void mm_out(Cu *cu, Node *n, LLVMValueRef off, LLVMValueRef c,
                   LLVMValueRef v) {
  Cg *cg = cu->dev;
  if (n->op == OP_Q_MATMUL) v = cu_q_requant(cu, n, v, c);
  cg_store(cg, n->type.dt, cg_buf(cg, n), off, v);
}

/* out[i] = sum over s of part[s][i] (dt, from scratch byte off), in
 * slice order. */
static void mm_reduce(Cu *cu, CgPlan *p, Node *n, int S, DType dt,
                      int64_t off) {
  Cg *cg = cu->dev;
  int64_t total = cu_numel(cu, &n->type), stride = mm_numel(n);
  cu_kernel_begin(cu, p, "matmul_sum");
  LLVMValueRef i = cu_gid(cu);
  LLVMValueRef part = cg_gep(cg, cg_scratch(cg, n), i64(cu, off));
  cu_guard(cu, ult(cu, i, total));
  LLVMValueRef v = cg_load(cg, dt, part, i);
  for (int k = 1; k < S; k++) {
    LLVMValueRef x = cg_load(cg, dt, part, add(cu, i, i64(cu, k * stride)));
    v = dt == DT_I32 ? LLVMBuildAdd(cg->b, v, x, "")
                     : LLVMBuildFAdd(cg->b, v, x, "");
  }
  mm_out(cu, n, i, urem(cu, i, n->type.dims[n->type.rank - 1]), v);
  cu_kernel_end_n(cu, total, EW_BLOCK, 1, EW_BLOCK);
}

bool cu_matmul(Cu *cu, CgPlan *p, Node *n) {
  DType dt = n->type.dt;
  const Type *t = &n->type;
  bool mma = mm_on_mma(cu, n);
  if (!mma && dt != DT_F32 && dt != DT_F64 && dt != DT_C64)
    return cu_bad_dtype(cu, n, dt);
  if (n->in[0]->type.dt != dt || n->in[1]->type.dt != dt)
    return cu_unsupported(cu, n, "operands of another dtype than the result");
  if (t->rank < 2 || n->in[0]->type.rank < 2 || n->in[1]->type.rank < 2)
    return cu_unsupported(cu, n, "rank < 2");
  if (type_is_static(t) && type_numel(t) == 0) return true;
  if (mma) return mma_matmul(cu, p, n);
  MmOp a = {0}, b = {0};
  mm_operand(cu->dev, p, n->in[0], t, &a);
  mm_operand(cu->dev, p, n->in[1], t, &b);
  mm_cores(cu, p, n, &a, &b);
  return true;
}

bool cu_dequant_matmul(Cu *cu, CgPlan *p, Node *n) {
  DType dt = n->type.dt;
  if (dt != DT_F32 && dt != DT_F64) return cu_bad_dtype(cu, n, dt);
  if (type_is_static(&n->type) && type_numel(&n->type) == 0) return true;
  const Type *w = &n->in[1]->type; /* and x's leading axes: M, dynamic
                                      ones too (mm_geom) */
  int64_t K = w->dims[0], N = w->dims[1];
  int64_t grp = ir_attr_present(n, ATTR_GROUP_SIZE)
                    ? ir_attr_int(n, ATTR_GROUP_SIZE, 1) : K;
  MmOp a = {.st = n->in[0], .rs = K, .cs = 1};
  MmOp b = {.st = n->in[1], .rs = N, .cs = 1, .scale = n->in[2],
            .group = grp > 0 ? grp : 1};
  mm_cores(cu, p, n, &a, &b);
  return true;
}

bool cu_q_matmul(Cu *cu, CgPlan *p, Node *n) {
  /* M may be dynamic (mm_geom); K and N are static */
  if (type_is_static(&n->type) && type_numel(&n->type) == 0) return true;
  MmOp a = {.st = n->in[0], .rs = n->in[0]->type.dims[1], .cs = 1,
            .q = true, .zp = ir_attr_int(n, ATTR_X_ZP, 0)};
  MmOp b = {.st = n->in[1], .rs = n->in[1]->type.dims[1], .cs = 1,
            .q = true, .zp = ir_attr_int(n, ATTR_W_ZP, 0)};
  mm_cores(cu, p, n, &a, &b);
  return true;
}

/* The CUDA-core product of n (matmul, dequant_matmul, q_matmul:
 * mm_geom) with operands a and b. */
static void mm_cores(Cu *cu, CgPlan *p, Node *n, const MmOp *a,
                     const MmOp *b) {
  Cg *cg = cu->dev;
  DType dt = mm_acc_dt(n);
  const Type *t = &n->type;
  MmGeom g = mm_geom(cu, n);
  Mm m = {.dt = dt, .et = cg_ctype(cg, dt), .M = g.M, .N = g.N, .K = g.K,
          .R = g.R, .a = *a, .b = *b};
  int64_t batch = g.batch, tm = g.tm, tn = g.tn;
  m.V = m.R < 4 ? m.R : 4;
  char a_name[32], b_name[32];
  snprintf(a_name, sizeof a_name, "rlx.mm.a.%s.r%d", dt_name(dt), m.R);
  snprintf(b_name, sizeof b_name, "rlx.mm.b.%s.r%d", dt_name(dt), m.R);
  /* plain loads (not dequant_matmul's or q_matmul's): cp.async into
   * MM_STAGES buffers of dynamic shared memory */
  bool async = !a->scale && !a->q && !b->scale && !b->q &&
               dim_is_static(a->rs) && dim_is_static(a->cs) &&
               dim_is_static(b->rs) && dim_is_static(b->cs); /* immediates */
  if (async) {
    LLVMValueRef i = i64(cu, MM_STAGES * mm_buf(&m));
    m.As = cu_dyn_shared(cg);
    m.Bs = LLVMConstInBoundsGEP2(m.et, m.As, &i, 1);
  } else {
    m.As = cu_shared(cg, a_name, m.et, 2 * mm_buf(&m), 16);
    m.Bs = cu_shared(cg, b_name, m.et, 2 * mm_buf(&m), 16);
  }
  cu_kernel_begin(cu, p, op_name(n->op));
  LLVMValueRef acc = cg_alloca(cg, LLVMArrayType2(m.et, MM_R_MAX * MM_R_MAX),
                               "acc");
  LLVMValueRef bid = cu_ctaid(cu);
  m.tid = cu_tid(cu);
  /* block -> (slice, batch, tile row, tile column); a dynamic M: the
   * run-time count of tile rows */
  LLVMValueRef tmv = cu_ceil_div(cu, g.M, TS * m.R), bb = i64(cu, 0);
  bool batched = batch > 1 || !dim_is_static(g.bdim);
  bool nfree = !dim_is_bounded(g.N); /* run-time column tiles */
  LLVMValueRef tnv = nfree ? cu_ceil_div(cu, g.N, TS * m.R) : i64(cu, tn);
  LLVMValueRef bn = LLVMBuildURem(cg->b, bid, tnv, "");
  LLVMValueRef rest = LLVMBuildUDiv(cg->b, bid, tnv, "");
  LLVMValueRef bm = LLVMBuildURem(cg->b, rest, tmv, "");
  rest = LLVMBuildUDiv(cg->b, rest, tmv, "");
  if (batched) bb = urem(cu, rest, g.bdim);
  LLVMValueRef k0 = mul(cu, udiv(cu, rest, g.bdim), g.ks);
  LLVMValueRef kend = add(cu, k0, i64(cu, g.ks));
  m.kend = LLVMBuildSelect(cg->b, ult(cu, kend, g.K), kend,
                           cu_size(cu, g.K), "");
  /* slices of this block: ks / TS, fewer for a dynamic K (none past it) */
  LLVMValueRef nk = i64(cu, g.ks / TS);
  if (!dim_is_static(g.K)) {
    LLVMValueRef d = LLVMBuildSub(cg->b, m.kend, k0, "");
    nk = LLVMBuildSelect(cg->b, LLVMBuildICmp(cg->b, LLVMIntSGT, d,
                                              i64(cu, 0), ""),
                         udiv(cu, add(cu, d, i64(cu, TS - 1)), TS),
                         i64(cu, 0), "");
  }
  m.tx = urem(cu, m.tid, TS), m.ty = udiv(cu, m.tid, TS);
  m.row0 = mul(cu, bm, TS * m.R), m.col0 = mul(cu, bn, TS * m.R);
  m.abase = batched ? cu_remap(cu, bb, t->dims, m.a.bstr, t->rank - 2)
                      : i64(cu, 0);
  m.bbase = batched ? cu_remap(cu, bb, t->dims, m.b.bstr, t->rank - 2)
                      : i64(cu, 0);
  for (int i = 0; i < m.R * m.R; i++) {
    LLVMValueRef ix = cg_i32(cg, i);
    LLVMBuildStore(cg->b, cg_const(cg, dt, 0),
                   LLVMBuildGEP2(cg->b, m.et, acc, &ix, 1, ""));
  }
  CgLoop l;
  if (async) {
    /* slices kt + 1 and kt + 2 in flight while kt is multiplied; the
     * barrier after slice kt landed also ends every thread's reads of
     * kt - 1, whose buffer kt + 2 then fills */
    mm_issue(cu, &m, k0, i64(cu, 0));
    mm_issue(cu, &m, add(cu, k0, i64(cu, TS)), i64(cu, 1));
    LLVMValueRef kt = cg_loop_begin(cg, &l, i64(cu, 0), nk, NULL, 0);
    LLVMValueRef one = cg_i32(cg, 1), nxt = add(cu, kt, i64(cu, 2));
    cg_intrinsic_n(cg, "llvm.nvvm.cp.async.wait.group", NULL, 0, &one, 1);
    cg_intrinsic_n(cg, "llvm.nvvm.barrier0", NULL, 0, NULL, 0);
    mm_issue(cu, &m, add(cu, k0, mul(cu, nxt, TS)), urem(cu, nxt, MM_STAGES));
    mm_slice(cu, &m, urem(cu, kt, MM_STAGES), acc);
    cg_loop_end(cg, &l, NULL);
    cg_intrinsic_n(cg, "llvm.nvvm.cp.async.wait.all", NULL, 0, NULL, 0);
  } else {
    /* software pipeline: the next slice's loads are in flight while
     * this one is multiplied, then stored into the other buffer (last
     * read before the previous barrier) */
    LLVMTypeRef rt = LLVMArrayType2(m.et, MM_R_MAX);
    LLVMValueRef pa = cg_alloca(cg, rt, "pa"), pb = cg_alloca(cg, rt, "pb");
    mm_fetch(cu, &m, k0, pa, pb);
    mm_put(cu, &m, i64(cu, 0), pa, pb);
    cg_intrinsic_n(cg, "llvm.nvvm.barrier0", NULL, 0, NULL, 0);
    LLVMValueRef kt = cg_loop_begin(cg, &l, i64(cu, 0), nk, NULL, 0);
    LLVMValueRef nxt = add(cu, kt, i64(cu, 1));
    mm_fetch(cu, &m, add(cu, k0, mul(cu, nxt, TS)), pa, pb);
    mm_slice(cu, &m, urem(cu, kt, 2), acc);
    mm_put(cu, &m, urem(cu, nxt, 2), pa, pb);
    cg_intrinsic_n(cg, "llvm.nvvm.barrier0", NULL, 0, NULL, 0);
    cg_loop_end(cg, &l, NULL);
  }
  /* a split product writes slice s's partial sums to scratch[s] */
  LLVMValueRef obase = mul(cu, udiv(cu, k0, g.ks), mm_numel(n));
  if (batched) obase = add(cu, obase, mul(cu, bb, mm_mn(cu, n)));
  for (int i = 0; i < m.R; i++)
    for (int j = 0; j < m.R; j++) {
      int64_t di = i % m.V + TS * m.V * (i / m.V);
      int64_t dj = j % m.V + TS * m.V * (j / m.V);
      LLVMValueRef r = add(cu, m.row0, add(cu, mul(cu, m.ty, m.V),
                                           i64(cu, di)));
      LLVMValueRef c = add(cu, m.col0, add(cu, mul(cu, m.tx, m.V),
                                           i64(cu, dj)));
      LLVMBasicBlockRef st = cg_block(cg, "mm.store");
      LLVMBasicBlockRef nx = cg_block(cg, "mm.next");
      LLVMBuildCondBr(cg->b, LLVMBuildAnd(cg->b, ult(cu, r, m.M),
                                          ult(cu, c, m.N), ""), st, nx);
      LLVMPositionBuilderAtEnd(cg->b, st);
      LLVMValueRef ix = cg_i32(cg, i * m.R + j);
      LLVMValueRef v = LLVMBuildLoad2(
          cg->b, m.et, LLVMBuildGEP2(cg->b, m.et, acc, &ix, 1, ""), "");
      LLVMValueRef off = add(cu, obase, add(cu, mul(cu, r, m.N), c));
      if (g.S > 1)
        cg_store(cg, dt, cg_scratch(cg, n), off, v);
      else
        mm_out(cu, n, off, c, v);
      LLVMBuildBr(cg->b, nx);
      LLVMPositionBuilderAtEnd(cg->b, nx);
    }
  if (nfree) /* and M or the batch static, or a size (S is 1) */
    cu_kernel_end_n2(cu, dim_is_static(g.M) ? g.bdim : g.M,
                     dim_is_static(g.M) ? 1 : TS * m.R, g.N, TS * m.R,
                     (unsigned)(dim_is_static(g.M) ? tm : batch), TS * TS);
  else if (!dim_is_static(g.M)) /* the batch static */
    cu_kernel_end_n(cu, g.M, TS * m.R, (unsigned)(batch * tn * g.S),
                    TS * TS);
  else
    cu_kernel_end_n(cu, g.bdim, 1, (unsigned)(tm * tn * g.S), TS * TS);
  if (async)
    cu_kernel_dyn_shared(cu, (unsigned)(2 * MM_STAGES * mm_buf(&m) *
                                        dt_size(dt)));
  const Unit *u = cg->u;
  cu_kernel_min_blocks(cu, u && u->opt ? (unsigned)u->opt->gpu_mm_b : 0);
  if (g.S > 1) mm_reduce(cu, p, n, g.S, mm_acc_dt(n), 0);
}

/* ---- tensor cores ----
 * bf16 and f16 (mma.m16n8k16, f32 accumulators) and, with --gpu-tf32,
 * f32 (mma.m16n8k8.tf32, operands rounded to tf32 with cvt.rna). A
 * block of 8 warps computes a BM x BN output tile (MmaCfg; 128 x 128 by
 * default, RLX_CUDA_MM chooses another): warp w the 64 x BN / WN
 * sub-tile at rows 64 (w % WM), WM = BM / 64 warps along M, as 4 x NI
 * mma tiles. K advances in slices of ROWB bytes of each row (BK 16-bit
 * elements, BK / 2 f32), staged in dynamic shared memory in S buffers:
 * the copies of slices k + 1 .. k + S - 1 are in flight (cp.async, one
 * commit group per slice) while slice k is multiplied; one barrier per
 * slice. Fragments come from shared memory with ldmatrix (.trans where
 * the operand's contiguous dimension is M or N), those of the next
 * 16-deep step loaded before the current step's mma. Each operand's
 * stage is rows of 16-byte chunks, XOR-swizzled by row so that the 8
 * rows one ldmatrix reads fall in distinct banks. Chunks past the edges
 * of M, N or K are zero-filled (cp.async's source size 0), so any shape
 * works. An operand whose rows are not 16-byte aligned (an odd row
 * length: GPT-2's vocabulary of 50,257) cannot be copied in 16-byte
 * chunks: in a product of at least MMA_PAD_MACS a first kernel copies
 * it into the node's scratch with rows padded to 16 bytes (zeros past
 * the row: a chunk straddling the edge reads them), small ones are
 * staged with masked element loads. Every output is the mma chain over
 * its k slices in increasing order. Few output tiles (mm_geom's rule):
 * K split over S blocks, each writing f32 partial sums to the scratch,
 * which matmul_sum adds in split order and rounds once (deterministic;
 * S is a function of the shape). */

#define MMA_PAD_MACS (1LL << 24) /* smallest product padding an operand */
#define WG_LBO 8192 /* wgmma MN-major: bytes between 64-wide outer blocks
                       (64 k rows of 128 bytes) */

/* The tile: BM x BN outputs, ROWB bytes of k per stage row, S stages;
 * WM warps along M, NI n8 tiles per warp (4 m16 tiles each). */
typedef struct {
  int bm, bn, rowb, stages, wm, ni;
  int minb;                 /* blocks per SM asked of ptxas (0: no cap) */
  int threads;              /* 32 per warp: 128 or 256 */
  bool wg;                  /* wgmma (sm_90a): a warpgroup per 64 rows */
  int wgp;                  /* 1: a slice's wgmma overlaps the next's
                               copies (one group left pending) */
} MmaCfg;

/* The tile of a batch x M x N product of dt: the unit's (RLX_CUDA_MM's
 * BMxBNxBKsS, else 128x128x32s4), or 128 x 128 when a larger tile
 * gives fewer blocks than SMs (the bits are the same). For sm_90a,
 * 16-bit products use wgmma (RLX_CUDA_MM's wgBMxBNsS[p], else
 * wg128x256s4p; the mma chain differs from mma.sync's only in how the
 * hardware orders its sums: results within the same bounds). */
static MmaCfg mma_cfg(const Cu *cu, DType dt, int64_t batch, int64_t M,
                      int64_t N) {
  const Unit *u = cu->dev->u;
  const Options *op = u ? u->opt : NULL;
  const int *o = op && op->gpu_mma[0] ? op->gpu_mma : NULL;
  MmaCfg c = {o ? o[0] : 128, o ? o[1] : 128, o ? 2 * o[2] : 64,
              o ? o[3] : 4, 0, 0, o ? o[4] : 0, o && o[5] ? 32 * o[5] : 256,
              false, 0};
  if (dt_size(dt) == 2 && cu_wgmma_ok(cu)) {
    const int *w = op->gpu_wg;
    c = (MmaCfg){w[0] ? w[0] : 128, w[0] ? w[1] : 256, 128,
                 w[0] ? w[2] : 4, 0, 0, 0, 0, true, w[0] ? w[3] : 1};
  }
  if (c.bm * c.bn > 128 * 128 &&
      batch * ((M + c.bm - 1) / c.bm) * ((N + c.bn - 1) / c.bn) < MM_SMS)
    c.bm = c.bn = 128;
  if (c.wg) { /* BM / 64 warpgroups, each 64 x BN */
    c.threads = 2 * c.bm, c.wm = c.bm / 64, c.ni = c.bn / 8;
    return c;
  }
  c.wm = c.bm / 64;
  c.ni = c.bn / (c.threads / 32 / c.wm) / 8;
  return c;
}

/* One operand of the tensor-core product. Its tile is `outer` (M or N)
 * by k; kmajor: shared rows are the 128 outer indices (4 chunks of k
 * each); else rows are the k indices (16 chunks of outer each, 16-bit
 * types only: ldmatrix.trans). */
typedef struct {
  const MmOp *o;
  int64_t os, ks;           /* element strides along outer and k */
  int64_t outer;            /* M or N */
  bool kmajor, async;       /* async: cp.async (16-byte chunks) allowed */
  bool wgmn;                /* wgmma's MN-major layout (swz) */
  int tile;                 /* BM or BN */
  int cpr;                  /* 16-byte chunks per shared row */
  LLVMValueRef base;        /* batch offset (elements), i64 */
  LLVMValueRef o0;          /* this block's first outer index, i64 */
  LLVMValueRef aligned;     /* i1: the buffer is 16-byte aligned */
  int soff;                 /* byte offset of its part of a stage */
  int64_t pad;              /* padded copy at this scratch byte offset, or -1 */
} MmaOp;

typedef struct {
  Node *n;
  MmaCfg c;
  int stageb;               /* bytes of one stage (both operands) */
  DType dt;
  int es, ve;               /* element bytes, elements per 16-byte chunk */
  int64_t K;
  int S;                    /* K split over S blocks (f32 partial sums) */
  int64_t nks;              /* k slices per split */
  int64_t part;             /* scratch byte offset of the partial sums */
  LLVMValueRef koff;        /* this block's first k (i64) */
  LLVMValueRef smem, lane, warp, tid;
  MmaOp a, b;
} Mma;

static LLVMValueRef i32c(Cu *cu, int v) { return cg_i32(cu->dev, v); }

/* Chunk (row, c) of an operand stage -> byte offset (i32), swizzled. */
static LLVMValueRef swz(Cu *cu, const MmaOp *x, LLVMValueRef row,
                        LLVMValueRef c) {
  LLVMBuilderRef b = cu->dev->b;
  int cpr = x->cpr; /* 4 (two rows a bank line) or a multiple of 8 */
  if (x->wgmn) {
    /* wgmma's MN-major 128-byte swizzle: 64 outer indices (8 chunks)
     * of 8 k rows make a 1024-byte atom, chunk c ^ (row & 7); atoms
     * along k are adjacent, those along the outer index WG_LBO apart */
    LLVMValueRef r7 = LLVMBuildAnd(b, row, i32c(cu, 7), "");
    LLVMValueRef o = LLVMBuildAdd(
        b, LLVMBuildMul(b, LLVMBuildLShr(b, c, i32c(cu, 3), ""),
                        i32c(cu, WG_LBO), ""),
        LLVMBuildMul(b, row, i32c(cu, 128), ""), "");
    LLVMValueRef cc = LLVMBuildXor(b, LLVMBuildAnd(b, c, i32c(cu, 7), ""),
                                   r7, "");
    return LLVMBuildAdd(b, LLVMBuildAdd(b, o, LLVMBuildMul(b, cc, i32c(cu, 16),
                                                           ""), ""),
                        i32c(cu, x->soff), "");
  }
  LLVMValueRef s = cpr == 4
      ? LLVMBuildAnd(b, LLVMBuildLShr(b, row, i32c(cu, 1), ""),
                     i32c(cu, 3), "")
      : LLVMBuildAnd(b, row, i32c(cu, 7), "");
  LLVMValueRef ch = LLVMBuildAdd(b, LLVMBuildMul(b, row, i32c(cu, cpr), ""),
                                 LLVMBuildXor(b, c, s, ""), "");
  return LLVMBuildAdd(b, LLVMBuildMul(b, ch, i32c(cu, 16), ""),
                      i32c(cu, x->soff), "");
}

static LLVMValueRef smem_at(Cu *cu, const Mma *m, LLVMValueRef stage,
                            LLVMValueRef off) {
  Cg *cg = cu->dev;
  LLVMValueRef o = LLVMBuildAdd(
      cg->b, LLVMBuildMul(cg->b, stage, i32c(cu, m->stageb), ""), off, "");
  return LLVMBuildGEP2(cg->b, cg->t_i8, m->smem, &o, 1, "");
}

/* Operand x's storage: its buffer, or its padded copy in scratch. */
static LLVMValueRef mma_buf(Cu *cu, const Mma *m, const MmaOp *x) {
  Cg *cg = cu->dev;
  return x->pad < 0 ? cg_buf(cg, x->o->st)
                    : cg_gep(cg, cg_scratch(cg, m->n), i64(cu, x->pad));
}

/* Pointer to element (ou, kk) of operand x, or to its first element
 * when that is outside the operand (*in: whether it is inside). */
static LLVMValueRef mma_at(Cu *cu, const Mma *m, const MmaOp *x,
                           LLVMValueRef ou, LLVMValueRef kk,
                           LLVMValueRef *in) {
  Cg *cg = cu->dev;
  LLVMBuilderRef b = cg->b;
  *in = LLVMBuildAnd(b, ult(cu, ou, x->outer), ult(cu, kk, m->K), "");
  LLVMValueRef off = add(cu, x->base, add(cu, mul(cu, ou, x->os),
                                          mul(cu, kk, x->ks)));
  off = LLVMBuildSelect(b, *in, off, i64(cu, 0), "");
  return LLVMBuildGEP2(b, cg_ops_bits_type(cg, m->es), mma_buf(cu, m, x),
                       &off, 1, "");
}

/* Element (ou, kk) of operand x as raw bits, 0 outside the operand. */
static LLVMValueRef mma_elem(Cu *cu, const Mma *m, const MmaOp *x,
                             LLVMValueRef ou, LLVMValueRef kk) {
  LLVMBuilderRef b = cu->dev->b;
  LLVMTypeRef et = cg_ops_bits_type(cu->dev, m->es);
  LLVMValueRef in, p = mma_at(cu, m, x, ou, kk, &in);
  return LLVMBuildSelect(b, in, LLVMBuildLoad2(b, et, p, ""),
                         LLVMConstNull(et), "");
}

/* Stage `stage` of operand x <- its k slice from element k0: chunks
 * e = tid + 256 q, row e / cpr, chunk e % cpr (consecutive threads
 * along the contiguous dimension). cp.async where allowed and the
 * buffer is aligned, else masked element loads and a 16-byte store. */
static void mma_stage_op(Cu *cu, const Mma *m, const MmaOp *x,
                         LLVMValueRef stage, LLVMValueRef k0) {
  Cg *cg = cu->dev;
  LLVMBuilderRef b = cg->b;
  int cpr = x->cpr;
  LLVMTypeRef et = cg_ops_bits_type(cg, m->es);
  int nt = m->c.threads;
  for (int q = 0; q < x->tile * m->c.rowb / 16 / nt; q++) {
    LLVMValueRef e = LLVMBuildAdd(b, m->tid, i32c(cu, q * nt), "");
    LLVMValueRef row = LLVMBuildUDiv(b, e, i32c(cu, cpr), "");
    LLVMValueRef c = LLVMBuildURem(b, e, i32c(cu, cpr), "");
    LLVMValueRef dst = smem_at(cu, m, stage, swz(cu, x, row, c));
    LLVMValueRef row64 = LLVMBuildZExt(b, row, cg->t_i64, "");
    LLVMValueRef c64 = mul(cu, LLVMBuildZExt(b, c, cg->t_i64, ""), m->ve);
    /* the chunk's first element (outer, k); it runs along k if kmajor */
    LLVMValueRef ou = add(cu, x->o0, x->kmajor ? row64 : c64);
    LLVMValueRef kk = add(cu, k0, x->kmajor ? c64 : row64);
    LLVMBasicBlockRef sync = cg_block(cg, "mma.sync");
    LLVMBasicBlockRef done = cg_block(cg, "mma.staged");
    if (x->async) {
      LLVMBasicBlockRef ab = cg_block(cg, "mma.async");
      LLVMBuildCondBr(b, x->aligned, ab, sync);
      LLVMPositionBuilderAtEnd(b, ab);
      /* whole chunk in or out: the contiguous extent is a multiple of ve,
       * or the row is padded with zeros */
      LLVMValueRef in, src = mma_at(cu, m, x, ou, kk, &in);
      cu_cp_async(cg, dst, src, in, 16);
      LLVMBuildBr(b, done);
    } else {
      LLVMBuildBr(b, sync);
    }
    LLVMPositionBuilderAtEnd(b, sync);
    LLVMValueRef v = LLVMGetUndef(LLVMVectorType(et, (unsigned)m->ve));
    for (int j = 0; j < m->ve; j++) {
      LLVMValueRef el = x->kmajor
          ? mma_elem(cu, m, x, ou, add(cu, kk, i64(cu, j)))
          : mma_elem(cu, m, x, add(cu, ou, i64(cu, j)), kk);
      v = LLVMBuildInsertElement(b, v, el, i32c(cu, j), "");
    }
    LLVMSetAlignment(LLVMBuildStore(b, v, dst), 16);
    LLVMBuildBr(b, done);
    LLVMPositionBuilderAtEnd(b, done);
  }
}

/* Stage the k slice kt (i64) into buffer kt % S; one commit
 * group (all chunks zero past K). */
static void mma_stage(Cu *cu, const Mma *m, LLVMValueRef kt) {
  Cg *cg = cu->dev;
  LLVMValueRef stage = LLVMBuildTrunc(cg->b, urem(cu, kt, m->c.stages),
                                      cg->t_i32, "");
  LLVMValueRef k0 = add(cu, m->koff, mul(cu, kt, m->c.rowb / m->es));
  mma_stage_op(cu, m, &m->a, stage, k0);
  mma_stage_op(cu, m, &m->b, stage, k0);
  cg_intrinsic_n(cg, "llvm.nvvm.cp.async.commit.group", NULL, 0, NULL, 0);
}

/* ldmatrix.x4 of operand x for the 16 outer indices from o0 (i32,
 * within the tile) at k step ks (32 bytes) of the stage: lane l
 * addresses row l & 7 of matrix j = l >> 3, whose outer half is one bit
 * of j and k half the other (A: outer half j & 1, giving a0..a3 of
 * m16n8k16 / m16n8k8; B: outer half j >> 1, giving b0 b1 of two n8
 * tiles). tf32 operands are rounded from f32 (cvt.rna). */
static void ldm(Cu *cu, const Mma *m, const MmaOp *x, bool a_side,
                LLVMValueRef stage, LLVMValueRef o0, int ks,
                LLVMValueRef r[4]) {
  Cg *cg = cu->dev;
  LLVMBuilderRef b = cg->b;
  LLVMValueRef rr = LLVMBuildAnd(b, m->lane, i32c(cu, 7), "");
  LLVMValueRef j = LLVMBuildLShr(b, m->lane, i32c(cu, 3), "");
  LLVMValueRef lo = LLVMBuildAnd(b, j, i32c(cu, 1), "");
  LLVMValueRef hi = LLVMBuildLShr(b, j, i32c(cu, 1), "");
  LLVMValueRef ohalf = a_side ? lo : hi, khalf = a_side ? hi : lo;
  LLVMValueRef row, c;
  if (x->kmajor) { /* row: outer index; chunk: 16 bytes of k */
    row = LLVMBuildAdd(b, LLVMBuildAdd(b, o0, rr, ""),
                       LLVMBuildShl(b, ohalf, i32c(cu, 3), ""), "");
    c = LLVMBuildAdd(b, i32c(cu, 2 * ks), khalf, "");
  } else {         /* row: k index; chunk: 8 outer indices */
    row = LLVMBuildAdd(b, LLVMBuildAdd(b, i32c(cu, 16 * ks), rr, ""),
                       LLVMBuildShl(b, khalf, i32c(cu, 3), ""), "");
    c = LLVMBuildAdd(b, LLVMBuildLShr(b, o0, i32c(cu, 3), ""), ohalf, "");
  }
  LLVMValueRef p = smem_at(cu, m, stage, swz(cu, x, row, c));
  cu_ldmatrix4(cg, p, !x->kmajor, r);
  for (int i = 0; i < 4; i++) {
    if (m->dt == DT_F32) {
      LLVMValueRef f = LLVMBuildBitCast(b, r[i], cg->t_f32, "");
      r[i] = cg_intrinsic_n(cg, "llvm.nvvm.f2tf32.rna", NULL, 0, &f, 1);
    }
  }
}

/* acc[0..4) = mma(a[4], bf[2], acc[0..4)) in m->dt's instruction. */
static void mma_op(Cu *cu, const Mma *m, LLVMValueRef *a, LLVMValueRef *bf,
                   LLVMValueRef acc) {
  Cg *cg = cu->dev;
  LLVMBuilderRef b = cg->b;
  LLVMValueRef c[4], p[4];
  for (int i = 0; i < 4; i++) {
    LLVMValueRef ix = i32c(cu, i);
    p[i] = LLVMBuildGEP2(b, cg->t_f32, acc, &ix, 1, "");
    c[i] = LLVMBuildLoad2(b, cg->t_f32, p[i], "");
  }
  cu_mma(cg, m->dt, a, bf, c);
  for (int i = 0; i < 4; i++) LLVMBuildStore(b, c[i], p[i]);
}

static void mma_operand(Mma *m, MmaOp *x, const MmOp *o, bool a_side,
                        int64_t outer) {
  x->o = o;
  x->os = a_side ? o->rs : o->cs;
  x->ks = a_side ? o->cs : o->rs;
  x->outer = outer;
  x->kmajor = !(x->os == 1 && x->ks != 1 && m->es == 2);
  x->tile = a_side ? m->c.bm : m->c.bn;
  x->soff = a_side ? 0 : m->c.bm * m->c.rowb;
  x->cpr = x->kmajor ? m->c.rowb / 16 : x->tile * m->es / 16;
  x->wgmn = m->c.wg && !x->kmajor;
  /* cp.async: 16-byte chunks along the unit-stride dimension, whose
   * extent (or pitch: zeros past the row), other stride and batch
   * strides are multiples of a chunk */
  int64_t ext = x->kmajor ? m->K : outer, other = x->kmajor ? x->os : x->ks;
  x->async = (x->kmajor ? x->ks : x->os) == 1 &&
             (ext % m->ve == 0 || o->pitched) && other % m->ve == 0;
  for (int d = 0; d < RLX_MAX_RANK; d++)
    if (o->bstr[d] % m->ve) x->async = false;
}

/* The warp's outputs of C[bb] from (row0, col0), mt x NI tiles of
 * m16n8 accumulators, in n's dtype; a split product's in f32 to its
 * partial sums part[split][bb][M][N] in the scratch. */
static void mma_store(Cu *cu, Node *n, const Mma *m, LLVMValueRef acc,
                      LLVMValueRef bb, int mt, LLVMValueRef row0,
                      LLVMValueRef col0, int64_t M, int64_t N,
                      LLVMValueRef split) {
  Cg *cg = cu->dev;
  LLVMBuilderRef b = cg->b;
  LLVMValueRef g = LLVMBuildZExt(b, LLVMBuildLShr(b, m->lane, i32c(cu, 2),
                                                  ""), cg->t_i64, "");
  LLVMValueRef t2 = LLVMBuildZExt(
      b, LLVMBuildShl(b, LLVMBuildAnd(b, m->lane, i32c(cu, 3), ""),
                      i32c(cu, 1), ""), cg->t_i64, "");
  LLVMValueRef base = mul(cu, bb, mm_mn(cu, n));
  LLVMValueRef dst = cg_buf(cg, n);
  DType dt = n->type.dt;
  if (m->S > 1) {
    base = add(cu, base, mul(cu, split, mm_numel(n)));
    dst = cg_gep(cg, cg_scratch(cg, n), i64(cu, m->part)), dt = DT_F32;
  }
  for (int mi = 0; mi < mt; mi++)
    for (int ni = 0; ni < m->c.ni; ni++)
      for (int i = 0; i < 4; i++) {
        LLVMValueRef r = add(cu, row0, add(cu, g, i64(cu, 16 * mi +
                                                          8 * (i >> 1))));
        LLVMValueRef c = add(cu, col0, add(cu, t2, i64(cu, 8 * ni +
                                                           (i & 1))));
        LLVMBasicBlockRef st = cg_block(cg, "mma.store");
        LLVMBasicBlockRef nx = cg_block(cg, "mma.next");
        LLVMBuildCondBr(b, LLVMBuildAnd(b, ult(cu, r, M), ult(cu, c, N), ""),
                        st, nx);
        LLVMPositionBuilderAtEnd(b, st);
        LLVMValueRef ix = i32c(cu, (mi * m->c.ni + ni) * 4 + i);
        LLVMValueRef v = LLVMBuildLoad2(
            b, cg->t_f32, LLVMBuildGEP2(b, cg->t_f32, acc, &ix, 1, ""), "");
        cg_store(cg, dt, dst, add(cu, base, add(cu, mul(cu, r, N), c)), v);
        LLVMBuildBr(b, nx);
        LLVMPositionBuilderAtEnd(b, nx);
      }
}

/* Pad operand x (o: its strides, changed here) when cp.async cannot
 * stage it only because its rows (the storage's last dimension C, the
 * unit stride) are not a multiple of 16 bytes: the copy's rows are Cp,
 * C rounded up to a chunk, so every other stride s becomes s / C * Cp.
 * The copy goes to scratch byte *off, which advances. */
static void mma_pad(Mma *m, MmaOp *x, MmOp *o, int64_t macs, int64_t *off) {
  const Type *t = &o->st->type;
  int64_t C = t->dims[t->rank - 1], Cp = (C + m->ve - 1) / m->ve * m->ve;
  int64_t *st[2 + RLX_MAX_RANK] = {&x->os, &x->ks};
  for (int d = 0; d < RLX_MAX_RANK; d++) st[2 + d] = &o->bstr[d];
  x->pad = -1;
  if (x->async || (x->kmajor ? x->ks : x->os) != 1 || C < 2 ||
      macs < MMA_PAD_MACS)
    return;
  for (int i = 0; i < 2 + RLX_MAX_RANK; i++)
    if (*st[i] != 1 && *st[i] % C) return;
  for (int i = 0; i < 2 + RLX_MAX_RANK; i++)
    if (*st[i] != 1) *st[i] = *st[i] / C * Cp;
  x->async = true;
  x->pad = *off;
  *off += cg_align(type_numel(t) / C * Cp * m->es);
}

/* The product's operands (oa, ob: their strides), tiles and padded
 * copies; returns the scratch bytes of the copies. */
static int64_t mma_setup(const Cu *cu, CgPlan *p, Node *n, Mma *m,
                         MmOp *oa, MmOp *ob) {
  const Type *t = &n->type;
  mm_operand(cu->dev, p, n->in[0], t, oa);
  mm_operand(cu->dev, p, n->in[1], t, ob);
  int64_t M = t->dims[t->rank - 2], N = t->dims[t->rank - 1];
  int64_t Mb = dim_bound(M), numel = mm_numel(n); /* dynamic: bounds */
  int64_t batch = Mb && N ? numel / (Mb * N) : 0;
  *m = (Mma){.n = n, .c = mma_cfg(cu, n->in[0]->type.dt, batch, Mb, N),
             .dt = n->in[0]->type.dt,
             .K = n->in[0]->type.dims[n->in[0]->type.rank - 1]};
  m->stageb = (m->c.bm + m->c.bn) * m->c.rowb;
  m->es = dt_size(m->dt);
  m->ve = 16 / m->es;
  mma_operand(m, &m->a, oa, true, M);
  mma_operand(m, &m->b, ob, false, N);
  /* no padded copies with dynamic sizes: unaligned rows are staged by
   * masked element loads */
  int64_t off = 0, macs = type_is_static(t) ? numel * m->K : 0;
  mma_pad(m, &m->a, oa, macs, &off);
  mma_pad(m, &m->b, ob, macs, &off);
  /* few blocks: K split as mm_geom splits it, at least 4 slices each */
  int64_t blocks = batch * ((Mb + m->c.bm - 1) / m->c.bm) *
                   ((N + m->c.bn - 1) / m->c.bn);
  int64_t nk = (m->K + m->c.rowb / m->es - 1) / (m->c.rowb / m->es);
  int64_t S = type_is_bounded(t) && blocks > 0 && blocks < 2 * MM_SMS
                  ? 4 * MM_SMS / blocks : 1; /* partials: for the bounds */
  S = S < nk / 4 ? S : nk / 4;
  m->S = 1, m->nks = nk, m->part = off;
  if (S > 1) {
    m->nks = (nk + S - 1) / S;
    m->S = (int)((nk + m->nks - 1) / m->nks);
    off += cg_align(m->S * numel * 4);
  }
  return off;
}

static int64_t mma_scratch(const Cu *cu, const CgPlan *p, const Node *n) {
  Mma m;
  MmOp oa = {0}, ob = {0};
  return mma_setup(cu, (CgPlan *)p, (Node *)n, &m, &oa, &ob);
}

/* Copy operand x into its padded scratch copy: a row of C elements to
 * Cp, zeros past C; one 16-byte chunk a thread. */
static void mma_pad_copy(Cu *cu, CgPlan *p, const Mma *m, const MmaOp *x) {
  Cg *cg = cu->dev;
  LLVMBuilderRef b = cg->b;
  const Type *t = &x->o->st->type;
  int64_t C = t->dims[t->rank - 1], cpr = (C + m->ve - 1) / m->ve;
  int64_t chunks = type_numel(t) / C * cpr;
  cu_kernel_begin(cu, p, "matmul_pad");
  LLVMValueRef i = cu_gid(cu);
  cu_guard(cu, ult(cu, i, chunks));
  LLVMValueRef r = udiv(cu, i, cpr), c0 = mul(cu, urem(cu, i, cpr), m->ve);
  LLVMTypeRef et = cg_ops_bits_type(cg, m->es);
  LLVMValueRef src = cg_buf(cg, x->o->st);
  LLVMValueRef v = LLVMGetUndef(LLVMVectorType(et, (unsigned)m->ve));
  for (int j = 0; j < m->ve; j++) {
    LLVMValueRef c = add(cu, c0, i64(cu, j)), in = ult(cu, c, C);
    LLVMValueRef off = LLVMBuildSelect(b, in, add(cu, mul(cu, r, C), c),
                                       i64(cu, 0), "");
    LLVMValueRef e = LLVMBuildLoad2(b, et, LLVMBuildGEP2(b, et, src, &off,
                                                         1, ""), "");
    v = LLVMBuildInsertElement(b, v, LLVMBuildSelect(b, in, e,
                                                     LLVMConstNull(et), ""),
                               i32c(cu, j), "");
  }
  LLVMValueRef dst = LLVMBuildGEP2(b, et, mma_buf(cu, m, x),
                                   (LLVMValueRef[]){mul(cu, i, m->ve)}, 1, "");
  LLVMSetAlignment(LLVMBuildStore(b, v, dst), 16);
  cu_kernel_end(cu, cu_blocks_for(chunks, EW_BLOCK), EW_BLOCK);
}

/* Fragments of 16-deep k step ks of the stage: af[mi] (A, 4 regs) and
 * bf[ni] (B, 2 regs) of the warp's tiles from rows wm, columns wn. */
static void mma_frags(Cu *cu, const Mma *m, LLVMValueRef stage,
                      LLVMValueRef wm, LLVMValueRef wn, int ks,
                      LLVMValueRef af[4][4], LLVMValueRef (*bf)[2]) {
  LLVMBuilderRef b = cu->dev->b;
  LLVMValueRef r[4];
  for (int mi = 0; mi < 4; mi++)
    ldm(cu, m, &m->a, true, stage, LLVMBuildAdd(b, wm, i32c(cu, 16 * mi), ""),
        ks, af[mi]);
  for (int nj = 0; nj < m->c.ni / 2; nj++) {
    ldm(cu, m, &m->b, false, stage,
        LLVMBuildAdd(b, wn, i32c(cu, 16 * nj), ""), ks, r);
    bf[2 * nj][0] = r[0], bf[2 * nj][1] = r[1];
    bf[2 * nj + 1][0] = r[2], bf[2 * nj + 1][1] = r[3];
  }
}

/* ---- wgmma (sm_90a) ----
 * Inline PTX (LLVM 19 has no wgmma intrinsics). A stage holds A's and
 * B's 64-deep k slices in the 128-byte-swizzle layouts wgmma reads
 * (K-major: rows of 128 bytes of k, 8 rows a 1024-byte atom, the same
 * chunk swizzle as the mma.sync stages; MN-major: swz's wgmn layout);
 * stages start on 1024-byte boundaries. Warpgroup g multiplies rows
 * 64 g .. 64 g + 63 of the tile by all BN columns. */

static LLVMValueRef wg_desc(Cu *cu, const MmaOp *x, LLVMValueRef sa, int o0,
                            int ks) {
  int64_t off = x->soff + (x->wgmn ? (int64_t)o0 / 64 * WG_LBO + ks * 2048
                                   : (int64_t)o0 * 128 + ks * 32);
  return cu_wg_desc(cu, add(cu, sa, i64(cu, off)), x->wgmn ? WG_LBO : 16,
                    1024);
}

/* acc (BN / 2 f32 per thread) += the stage's A rows of warpgroup g
 * times B, then wait until at most `wait` groups are pending (sa NULL:
 * the wait alone). */
static void wg_slice(Cu *cu, const Mma *m, LLVMValueRef sa, LLVMValueRef g,
                     LLVMValueRef acc, int wait) {
  LLVMBuilderRef b = cu->dev->b;
  int nk = sa ? m->c.rowb / 32 : 0;
  LLVMValueRef ad[8], bd[8];
  for (int ks = 0; ks < nk; ks++) {
    /* A: the warpgroup's 64 rows (g is 0 or 1: select the offset) */
    LLVMValueRef d0 = wg_desc(cu, &m->a, sa, 0, ks);
    LLVMValueRef d1 = m->c.wm > 1 ? wg_desc(cu, &m->a, sa, 64, ks) : d0;
    ad[ks] = m->c.wm > 1 ? LLVMBuildSelect(
        b, LLVMBuildICmp(b, LLVMIntEQ, g, i32c(cu, 0), ""), d0, d1, "") : d0;
    bd[ks] = wg_desc(cu, &m->b, sa, 0, ks);
  }
  cu_wgmma(cu->dev, m->dt, m->c.bn, acc, nk, ad, NULL, m->a.wgmn, bd,
           m->b.wgmn, wait);
}

/* Close the product's kernel: `blocks` blocks, or with a dynamic M
 * ceil(M / bm) * per * batch, with a dynamic batch bdim * tm * per. */
static void mma_end(Cu *cu, int64_t M, int64_t bdim, const MmaCfg *c,
                    int64_t per, int64_t blocks) {
  if (!dim_is_static(M)) /* the batch static */
    cu_kernel_end_n(cu, M, (unsigned)c->bm, (unsigned)(per * bdim),
                    (unsigned)c->threads);
  else
    cu_kernel_end_n(cu, bdim, 1, (unsigned)(blocks / dim_bound(bdim)),
                    (unsigned)c->threads);
}

static bool mma_matmul(Cu *cu, CgPlan *p, Node *n) {
  Cg *cg = cu->dev;
  LLVMBuilderRef b = cg->b;
  const Type *t = &n->type;
  MmOp oa = {0}, ob = {0};
  Mma m;
  mma_setup(cu, p, n, &m, &oa, &ob);
  int64_t M = t->dims[t->rank - 2], N = t->dims[t->rank - 1], K = m.K;
  int64_t Mb = dim_bound(M), batch = mm_numel(n) / (Mb * N), bdim = 1;
  for (int i = 0; i + 2 < t->rank; i++) /* a dynamic batch: a size */
    dim_mul(cg->ctx, bdim, t->dims[i], &bdim);
  const MmaCfg *c = &m.c;
  int64_t tm = (Mb + c->bm - 1) / c->bm, tn = (N + c->bn - 1) / c->bn;
  if (m.a.pad >= 0) mma_pad_copy(cu, p, &m, &m.a);
  if (m.b.pad >= 0) mma_pad_copy(cu, p, &m, &m.b);
  cu_kernel_begin(cu, p, m.dt == DT_F32 ? "matmul_tf32"
                         : c->wg ? "matmul_wgmma" : "matmul_mma");
  m.smem = c->wg ? cu_wg_smem(cu) : cu_dyn_shared(cg);
  int mt = c->wg ? 1 : 4, nacc = mt * c->ni * 4; /* m16 tiles per warp */
  LLVMValueRef acc = cg_alloca(cg, LLVMArrayType2(cg->t_f32, (uint64_t)nacc),
                               "acc");
  LLVMValueRef bid = cu_ctaid(cu);
  m.tid = LLVMBuildTrunc(b, cu_tid(cu), cg->t_i32, "");
  m.lane = LLVMBuildAnd(b, m.tid, i32c(cu, 31), "");
  m.warp = LLVMBuildLShr(b, m.tid, i32c(cu, 5), "");
  /* block -> (split, batch, tile row, tile column); a dynamic M or
   * batch: their run-time counts */
  LLVMValueRef tmv = cu_ceil_div(cu, M, c->bm);
  LLVMValueRef bn = urem(cu, bid, tn), rest = udiv(cu, bid, tn);
  LLVMValueRef bm = LLVMBuildURem(b, rest, tmv, "");
  LLVMValueRef bb = LLVMBuildUDiv(b, rest, tmv, ""), split = i64(cu, 0);
  if (m.S > 1) {
    split = udiv(cu, bb, bdim);
    bb = urem(cu, bb, bdim);
  }
  m.koff = mul(cu, split, m.nks * (c->rowb / m.es));
  m.a.o0 = mul(cu, bm, c->bm);
  m.b.o0 = mul(cu, bn, c->bn);
  m.a.base = cu_remap(cu, bb, t->dims, oa.bstr, t->rank - 2);
  m.b.base = cu_remap(cu, bb, t->dims, ob.bstr, t->rank - 2);
  MmaOp *ops[2] = {&m.a, &m.b};
  for (int i = 0; i < 2; i++) {
    LLVMValueRef pi = LLVMBuildPtrToInt(b, mma_buf(cu, &m, ops[i]),
                                        cg->t_i64, "");
    ops[i]->aligned = LLVMBuildICmp(
        b, LLVMIntEQ, LLVMBuildAnd(b, pi, i64(cu, 15), ""), i64(cu, 0), "");
  }
  for (int i = 0; i < nacc; i++) {
    LLVMValueRef ix = i32c(cu, i);
    LLVMBuildStore(b, LLVMConstReal(cg->t_f32, 0),
                   LLVMBuildGEP2(b, cg->t_f32, acc, &ix, 1, ""));
  }
  /* this block's k slices: nks, fewer in the last split */
  int64_t kel = c->rowb / m.es, nk0 = (K + kel - 1) / kel;
  LLVMValueRef left = LLVMBuildSub(b, i64(cu, nk0), mul(cu, split, m.nks),
                                   "");
  LLVMValueRef nk = m.S == 1 ? i64(cu, nk0) : LLVMBuildSelect(
      b, ult(cu, left, m.nks), left, i64(cu, m.nks), "");
  for (int s = 0; s < c->stages - 1 - c->wgp; s++)
    mma_stage(cu, &m, i64(cu, s));
  if (c->wg) {
    /* warpgroup g: rows 64 g; warp w of it: rows 16 (w % 4) */
    LLVMValueRef g = LLVMBuildLShr(b, m.warp, i32c(cu, 2), "");
    CgLoop l;
    LLVMValueRef kt = cg_loop_begin(cg, &l, i64(cu, 0), nk, NULL, 0);
    /* pipelined (wgp): slice kt - 1's wgmma may still run, so the copies
     * refill slice kt - 2's buffer: S - 2 slices ahead, not S - 1 */
    int ahead = c->stages - 1 - c->wgp;
    LLVMValueRef wg = i32c(cu, ahead - 1);
    cg_intrinsic_n(cg, "llvm.nvvm.cp.async.wait.group", NULL, 0, &wg, 1);
    cu_asm(cg, "fence.proxy.async.shared::cta;");
    cg_intrinsic_n(cg, "llvm.nvvm.barrier0", NULL, 0, NULL, 0);
    mma_stage(cu, &m, add(cu, kt, i64(cu, ahead)));
    LLVMValueRef stage = LLVMBuildTrunc(b, urem(cu, kt, c->stages),
                                        cg->t_i32, "");
    wg_slice(cu, &m, LLVMBuildPtrToInt(b, smem_at(cu, &m, stage, i32c(cu, 0)),
                                       cg->t_i64, ""), g, acc, c->wgp);
    cg_loop_end(cg, &l, NULL);
    if (c->wgp) wg_slice(cu, &m, NULL, g, acc, 0);
    cg_intrinsic_n(cg, "llvm.nvvm.cp.async.wait.all", NULL, 0, NULL, 0);
    LLVMValueRef r0 = LLVMBuildAdd(
        b, LLVMBuildShl(b, g, i32c(cu, 6), ""),
        LLVMBuildShl(b, LLVMBuildAnd(b, m.warp, i32c(cu, 3), ""),
                     i32c(cu, 4), ""), "");
    mma_store(cu, n, &m, acc, bb, 1,
              add(cu, m.a.o0, LLVMBuildZExt(b, r0, cg->t_i64, "")), m.b.o0,
              M, N, split);
    mma_end(cu, M, bdim, c, tn * m.S, batch * tm * tn * m.S);
    cu_kernel_dyn_shared(cu, (unsigned)(c->stages * m.stageb + 1024));
    if (m.S > 1) mm_reduce(cu, p, n, m.S, DT_F32, m.part);
    return true;
  }
  /* warp w: rows 64 (w % WM), columns BN / WN (w / WM) of the tile */
  int wcols = c->ni * 8;
  LLVMValueRef wm = LLVMBuildShl(
      b, LLVMBuildURem(b, m.warp, i32c(cu, c->wm), ""), i32c(cu, 6), "");
  LLVMValueRef wn = LLVMBuildMul(
      b, LLVMBuildUDiv(b, m.warp, i32c(cu, c->wm), ""), i32c(cu, wcols), "");
  CgLoop l;
  LLVMValueRef kt = cg_loop_begin(cg, &l, i64(cu, 0), nk, NULL, 0);
  /* slice kt has landed (for this thread; the barrier: for all), and
   * every warp is done with slice kt - 1, whose buffer is refilled */
  LLVMValueRef wg = i32c(cu, c->stages - 2);
  cg_intrinsic_n(cg, "llvm.nvvm.cp.async.wait.group", NULL, 0, &wg, 1);
  cg_intrinsic_n(cg, "llvm.nvvm.barrier0", NULL, 0, NULL, 0);
  mma_stage(cu, &m, add(cu, kt, i64(cu, c->stages - 1)));
  LLVMValueRef stage = LLVMBuildTrunc(b, urem(cu, kt, c->stages),
                                      cg->t_i32, "");
  /* register double buffering: step ks + 1's fragments are loaded
   * before step ks's mma */
  LLVMValueRef af[2][4][4], bf[2][16][2];
  mma_frags(cu, &m, stage, wm, wn, 0, af[0], bf[0]);
  for (int ks = 0; ks < c->rowb / 32; ks++) {
    int cur = ks & 1;
    if (ks + 1 < c->rowb / 32)
      mma_frags(cu, &m, stage, wm, wn, ks + 1, af[!cur], bf[!cur]);
    for (int mi = 0; mi < 4; mi++)
      for (int ni = 0; ni < c->ni; ni++) {
        LLVMValueRef ix = i32c(cu, (mi * c->ni + ni) * 4);
        mma_op(cu, &m, af[cur][mi], bf[cur][ni],
               LLVMBuildGEP2(b, cg->t_f32, acc, &ix, 1, ""));
      }
  }
  cg_loop_end(cg, &l, NULL);
  cg_intrinsic_n(cg, "llvm.nvvm.cp.async.wait.all", NULL, 0, NULL, 0);
  mma_store(cu, n, &m, acc, bb, 4,
            add(cu, m.a.o0, LLVMBuildZExt(b, wm, cg->t_i64, "")),
            add(cu, m.b.o0, LLVMBuildZExt(b, wn, cg->t_i64, "")), M, N,
            split);
  mma_end(cu, M, bdim, c, tn * m.S, batch * tm * tn * m.S);
  cu_kernel_dyn_shared(cu, (unsigned)(c->stages * m.stageb));
  cu_kernel_min_blocks(cu, (unsigned)c->minb);
  if (m.S > 1) mm_reduce(cu, p, n, m.S, DT_F32, m.part);
  return true;
}
