/* matmul.c: matmul and batched matmul on the GPU (cuda.h).
 *
 * f32, f64: shared-memory tiles of 16R x 16R outputs, R x R per thread,
 * k in increasing order with fma: the same bits for every tile size;
 * few tiles: K split over blocks, partial sums added in slice order by a
 * second kernel (deterministic). Transposes folded by the plan are read
 * through strides.
 */
#include "codegen/cuda/cuda.h"

#define EW_BLOCK 256 /* the split-K sum kernel */
#define TS 16 /* matmul tile */

/* ---- matmul ----
 * C[b] = A[b] B[b]: a block of 16x16 threads computes a tile of
 * 16R x 16R outputs, thread (tx, ty) the outputs (ty + 16i, tx + 16j),
 * i, j < R, from 16-deep slices of A and B staged in shared memory
 * (k-major, so the inner loop reads one A and one B value per output
 * row / column). R (4, 2 or 1) is the largest that still gives about
 * one block per SM. Every output is fma(a_k, b_k, acc) over k = 0, 1,
 * ... in order from 0, whatever R: the same bits for any tile size. */

typedef struct {
  Node *st;                 /* storage node */
  int64_t rs, cs;           /* element (row, col) strides of the operand */
  int64_t bstr[RLX_MAX_RANK]; /* per output batch dim */
} MmOp;

#define MM_R_MAX 4
#define MM_SMS 120 /* aim for at least this many blocks */
#define MM_SPLIT_K 128 /* shortest K slice of a split product */

static void mm_operand(CgPlan *p, Node *x, const Type *out, MmOp *o) {
  bool folded = cg_plan_slot(p, x)->kind == CG_SLOT_FOLDED;
  o->st = folded ? x->in[0] : x;
  const Type *t = &o->st->type;
  int64_t s[RLX_MAX_RANK];
  cg_strides(t, s);
  o->rs = folded ? 1 : s[t->rank - 2];
  o->cs = folded ? s[t->rank - 2] : 1;
  int ob = out->rank - 2, xb = t->rank - 2;
  for (int d = 0; d < ob; d++) {
    int e = d - (ob - xb);
    o->bstr[d] = e >= 0 && t->dims[e] != 1 ? s[e] : 0;
  }
}

/* A shared [TS][TS * MM_R_MAX] array of et (one per name). */
static LLVMValueRef shared_tile(Cg *cg, const char *nm, LLVMTypeRef et) {
  LLVMValueRef g = LLVMGetNamedGlobal(cg->mod, nm);
  if (g) return g;
  LLVMTypeRef t = LLVMArrayType2(et, TS * TS * MM_R_MAX);
  g = LLVMAddGlobalInAddressSpace(cg->mod, t, nm, 3);
  LLVMSetInitializer(g, LLVMGetUndef(t));
  LLVMSetLinkage(g, LLVMInternalLinkage);
  LLVMSetAlignment(g, 16);
  return g;
}

static LLVMValueRef tile_at(Cu *cu, LLVMValueRef g, LLVMTypeRef et,
                            LLVMValueRef i) {
  Cg *cg = cu->dev;
  LLVMValueRef p = LLVMBuildGEP2(cg->b, et, g, &i, 1, "");
  return LLVMBuildAddrSpaceCast(cg->b, p, cg->t_ptr, "");
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
  LLVMValueRef v = cg_load(cg, dt, cg_buf(cg, o->st), add(cu, base, off));
  return LLVMBuildSelect(cg->b, in, v, cg_const(cg, dt, 0), "");
}

typedef struct {
  DType dt;
  LLVMTypeRef et;
  int R;                       /* outputs per thread: R x R */
  int64_t M, N, K;
  LLVMValueRef kend;           /* this block's k range ends here */
  MmOp a, b;
  LLVMValueRef As, Bs;         /* shared tiles [TS][TS R], k-major */
  LLVMValueRef abase, bbase, row0, col0, tx, ty, tid;
} Mm;

/* The k0 slice, R elements of A and of B per thread, into registers
 * pa[], pb[] (allocas LLVM promotes): A(row0 + r, k0 + kk) and
 * B(k0 + kk, col0 + c) for e = tid + 256 q. Past K they are 0, so the
 * slice after the last is fetched harmlessly. */
static void mm_fetch(Cu *cu, const Mm *m, LLVMValueRef k0, LLVMValueRef pa,
                     LLVMValueRef pb) {
  Cg *cg = cu->dev;
  int w = TS * m->R;
  for (int q = 0; q < m->R; q++) {
    LLVMValueRef e = add(cu, m->tid, i64(cu, q * TS * TS));
    LLVMValueRef qi = cg_i32(cg, q);
    LLVMValueRef v = mm_load(cu, m->dt, m->abase, &m->a,
                             add(cu, m->row0, udiv(cu, e, TS)), i64(cu, m->M),
                             add(cu, k0, urem(cu, e, TS)), m->kend);
    LLVMBuildStore(cg->b, v, LLVMBuildGEP2(cg->b, m->et, pa, &qi, 1, ""));
    v = mm_load(cu, m->dt, m->bbase, &m->b, add(cu, k0, udiv(cu, e, w)),
                m->kend, add(cu, m->col0, urem(cu, e, w)), i64(cu, m->N));
    LLVMBuildStore(cg->b, v, LLVMBuildGEP2(cg->b, m->et, pb, &qi, 1, ""));
  }
}

/* Registers to the shared tiles (k-major): As[kk][r], Bs[kk][c]. */
static void mm_put(Cu *cu, const Mm *m, LLVMValueRef pa, LLVMValueRef pb) {
  Cg *cg = cu->dev;
  int w = TS * m->R;
  for (int q = 0; q < m->R; q++) {
    LLVMValueRef e = add(cu, m->tid, i64(cu, q * TS * TS));
    LLVMValueRef qi = cg_i32(cg, q);
    LLVMValueRef ai = add(cu, mul(cu, urem(cu, e, TS), w), udiv(cu, e, TS));
    LLVMValueRef bi = add(cu, mul(cu, udiv(cu, e, w), w), urem(cu, e, w));
    LLVMValueRef v = LLVMBuildLoad2(
        cg->b, m->et, LLVMBuildGEP2(cg->b, m->et, pa, &qi, 1, ""), "");
    LLVMBuildStore(cg->b, v, tile_at(cu, m->As, m->et, ai));
    v = LLVMBuildLoad2(cg->b, m->et,
                       LLVMBuildGEP2(cg->b, m->et, pb, &qi, 1, ""), "");
    LLVMBuildStore(cg->b, v, tile_at(cu, m->Bs, m->et, bi));
  }
}

/* acc[i][j] = fma(As[k][ty + 16i], Bs[k][tx + 16j], acc) for k < TS. */
static void mm_slice(Cu *cu, const Mm *m, LLVMValueRef acc) {
  Cg *cg = cu->dev;
  int R = m->R, w = TS * R;
  for (int k = 0; k < TS; k++) {
    LLVMValueRef av[MM_R_MAX], bv[MM_R_MAX];
    for (int i = 0; i < R; i++) {
      av[i] = LLVMBuildLoad2(cg->b, m->et, tile_at(cu, m->As, m->et,
                             add(cu, m->ty, i64(cu, k * w + TS * i))), "");
      bv[i] = LLVMBuildLoad2(cg->b, m->et, tile_at(cu, m->Bs, m->et,
                             add(cu, m->tx, i64(cu, k * w + TS * i))), "");
    }
    for (int i = 0; i < R; i++)
      for (int j = 0; j < R; j++) {
        LLVMValueRef ix = cg_i32(cg, i * R + j);
        LLVMValueRef p = LLVMBuildGEP2(cg->b, m->et, acc, &ix, 1, "");
        LLVMValueRef f[3] = {av[i], bv[j],
                             LLVMBuildLoad2(cg->b, m->et, p, "")};
        LLVMBuildStore(cg->b, cg_intrinsic(cg, "llvm.fma", m->et, f, 3), p);
      }
  }
}

/* Tile and split of matmul n: R (outputs per thread R x R), S slices
 * of K of ks elements each (a multiple of TS). Few blocks (small M N)
 * leave SMs idle and each block walks a long K: then the K range is
 * split over S blocks, whose partial sums a second kernel adds in
 * slice order (deterministic; S is a function of the shape). */
typedef struct {
  int64_t batch, M, N, K, tm, tn, ks;
  int R, S;
} MmGeom;

static MmGeom mm_geom(const Node *n) {
  const Type *t = &n->type;
  MmGeom g = {.M = t->dims[t->rank - 2], .N = t->dims[t->rank - 1],
              .K = n->in[0]->type.dims[n->in[0]->type.rank - 1], .R = 1,
              .S = 1};
  g.batch = g.M && g.N ? type_numel(t) / (g.M * g.N) : 0;
  for (int R = MM_R_MAX; R >= 1; R /= 2) {
    g.R = R;
    g.tm = (g.M + TS * R - 1) / (TS * R);
    g.tn = (g.N + TS * R - 1) / (TS * R);
    if (g.batch * g.tm * g.tn >= MM_SMS) break;
  }
  int64_t blocks = g.batch * g.tm * g.tn;
  if (blocks > 0 && blocks < 2 * MM_SMS && g.K >= 2 * MM_SPLIT_K) {
    int64_t s = 4 * MM_SMS / blocks, smax = g.K / MM_SPLIT_K;
    g.S = (int)(s < smax ? s : smax);
    if (g.S < 1) g.S = 1;
  }
  int64_t per = (g.K + g.S - 1) / g.S;
  g.ks = (per + TS - 1) / TS * TS;
  if (g.ks == 0) g.ks = TS;
  g.S = (int)((g.K + g.ks - 1) / g.ks);
  if (g.S < 1) g.S = 1;
  return g;
}

int64_t cu_matmul_scratch(const Node *n) {
  MmGeom g = mm_geom(n);
  return g.S > 1 ? g.S * type_numel(&n->type) * dt_size(n->type.dt) : 0;
}

/* out[i] = sum over s of part[s][i], in slice order. */
static void mm_reduce(Cu *cu, CgPlan *p, Node *n, int S) {
  Cg *cg = cu->dev;
  DType dt = n->type.dt;
  int64_t total = type_numel(&n->type);
  cu_kernel_begin(cu, p, "matmul_sum");
  LLVMValueRef i = cu_gid(cu), part = cg_scratch(cg, n);
  cu_guard(cu, ult(cu, i, total));
  LLVMValueRef v = cg_load(cg, dt, part, i);
  for (int k = 1; k < S; k++)
    v = LLVMBuildFAdd(cg->b, v, cg_load(cg, dt, part,
                                        add(cu, i, i64(cu, k * total))), "");
  cg_store(cg, dt, cg_buf(cg, n), i, v);
  cu_kernel_end(cu, cu_blocks_for(total, EW_BLOCK), EW_BLOCK);
}

bool cu_matmul(Cu *cu, CgPlan *p, Node *n) {
  Cg *cg = cu->dev;
  DType dt = n->type.dt;
  const Type *t = &n->type;
  if (dt != DT_F32 && dt != DT_F64) return cu_bad_dtype(cu, n, dt);
  if (t->rank < 2 || n->in[0]->type.rank < 2 || n->in[1]->type.rank < 2)
    return cu_unsupported(cu, n, "rank < 2");
  if (type_numel(t) == 0) return true;
  MmGeom g = mm_geom(n);
  Mm m = {.dt = dt, .et = cg_ctype(cg, dt), .M = g.M, .N = g.N, .K = g.K,
          .R = g.R};
  int64_t batch = g.batch, tm = g.tm, tn = g.tn;
  mm_operand(p, n->in[0], t, &m.a);
  mm_operand(p, n->in[1], t, &m.b);
  bool f32 = dt == DT_F32;
  m.As = shared_tile(cg, f32 ? "rlx.mm.a.f32" : "rlx.mm.a.f64", m.et);
  m.Bs = shared_tile(cg, f32 ? "rlx.mm.b.f32" : "rlx.mm.b.f64", m.et);
  cu_kernel_begin(cu, p, "matmul");
  LLVMValueRef acc = cg_alloca(cg, LLVMArrayType2(m.et, MM_R_MAX * MM_R_MAX),
                               "acc");
  LLVMValueRef bid = cu_ctaid(cu);
  m.tid = cu_tid(cu);
  LLVMValueRef bn = urem(cu, bid, tn), bm = urem(cu, udiv(cu, bid, tn), tm);
  LLVMValueRef bb = urem(cu, udiv(cu, bid, tn * tm), batch);
  LLVMValueRef k0 = mul(cu, udiv(cu, bid, tn * tm * batch), g.ks);
  LLVMValueRef kend = add(cu, k0, i64(cu, g.ks));
  m.kend = LLVMBuildSelect(cg->b, ult(cu, kend, g.K), kend, i64(cu, g.K), "");
  m.tx = urem(cu, m.tid, TS), m.ty = udiv(cu, m.tid, TS);
  m.row0 = mul(cu, bm, TS * m.R), m.col0 = mul(cu, bn, TS * m.R);
  m.abase = cu_remap(cu, bb, t->dims, m.a.bstr, t->rank - 2);
  m.bbase = cu_remap(cu, bb, t->dims, m.b.bstr, t->rank - 2);
  for (int i = 0; i < m.R * m.R; i++) {
    LLVMValueRef ix = cg_i32(cg, i);
    LLVMBuildStore(cg->b, cg_const(cg, dt, 0),
                   LLVMBuildGEP2(cg->b, m.et, acc, &ix, 1, ""));
  }
  /* software pipeline: the next slice's loads are in flight while
   * this one is multiplied */
  LLVMTypeRef rt = LLVMArrayType2(m.et, MM_R_MAX);
  LLVMValueRef pa = cg_alloca(cg, rt, "pa"), pb = cg_alloca(cg, rt, "pb");
  mm_fetch(cu, &m, k0, pa, pb);
  CgLoop l;
  LLVMValueRef kt = cg_loop_begin(cg, &l, i64(cu, 0), i64(cu, g.ks / TS),
                                  NULL, 0);
  mm_put(cu, &m, pa, pb);
  cg_intrinsic_n(cg, "llvm.nvvm.barrier0", NULL, 0, NULL, 0);
  mm_fetch(cu, &m, add(cu, k0, mul(cu, add(cu, kt, i64(cu, 1)), TS)), pa, pb);
  mm_slice(cu, &m, acc);
  cg_intrinsic_n(cg, "llvm.nvvm.barrier0", NULL, 0, NULL, 0);
  cg_loop_end(cg, &l, NULL);
  /* a split product writes slice s's partial sums to scratch[s] */
  LLVMValueRef dst = g.S > 1 ? cg_scratch(cg, n) : cg_buf(cg, n);
  LLVMValueRef obase = add(cu, mul(cu, bb, m.M * m.N),
                           mul(cu, udiv(cu, k0, g.ks), type_numel(t)));
  for (int i = 0; i < m.R; i++)
    for (int j = 0; j < m.R; j++) {
      LLVMValueRef r = add(cu, m.row0, add(cu, m.ty, i64(cu, TS * i)));
      LLVMValueRef c = add(cu, m.col0, add(cu, m.tx, i64(cu, TS * j)));
      LLVMBasicBlockRef st = cg_block(cg, "mm.store");
      LLVMBasicBlockRef nx = cg_block(cg, "mm.next");
      LLVMBuildCondBr(cg->b, LLVMBuildAnd(cg->b, ult(cu, r, m.M),
                                          ult(cu, c, m.N), ""), st, nx);
      LLVMPositionBuilderAtEnd(cg->b, st);
      LLVMValueRef ix = cg_i32(cg, i * m.R + j);
      LLVMValueRef v = LLVMBuildLoad2(
          cg->b, m.et, LLVMBuildGEP2(cg->b, m.et, acc, &ix, 1, ""), "");
      cg_store(cg, dt, dst, add(cu, obase, add(cu, mul(cu, r, m.N), c)), v);
      LLVMBuildBr(cg->b, nx);
      LLVMPositionBuilderAtEnd(cg->b, nx);
    }
  cu_kernel_end(cu, (unsigned)(batch * tm * tn * g.S), TS * TS);
  if (g.S > 1) mm_reduce(cu, p, n, g.S);
  return true;
}
