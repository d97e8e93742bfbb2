/* rope.c: rope (language.md 6.5) and its closed-form backward op
 * rope_backward (6.9), NeoX half-split layout.
 *
 * x is [B, S, H*D] or [S, H*D], viewed as rows = B*S rows of H heads of
 * D elements (B and S may be dynamic: the row count and S are read at
 * run time); cos and sin are [S, W] (W = n_rot/2 or D/2, only the
 * first n_rot/2 columns are read, the row stride is W). For i < R/2
 * (R = n_rot) the pair (x1, x2) = (x[i], x[i + R/2]) of each head maps
 * to (x1 c - x2 s, x2 c + x1 s) with c, s = cos, sin[row % S, i];
 * dims R..D-1 are copied. rope_backward is the transpose: the same
 * rotation with s negated (ops-detail.md).
 *
 * Threads over rows; every output element is written by exactly one
 * iteration from values loaded in that iteration, so the result does
 * not depend on the thread count. f16/bf16 compute in f32 (cg_load /
 * cg_store) and round once on store.
 */
#include "codegen/emit/emit.h"

typedef struct {
  DType dt;
  bool neg;              /* rope_backward: rotate by -theta */
  int64_t s, heads, d, half, rot, w; /* s may be dynamic */
  LLVMValueRef y, x, cs, sn; /* body pointers */
} Rope;

#define FM(a, b2) LLVMBuildFMul(cg->b, (a), (b2), "")
#define FA(a, b2) LLVMBuildFAdd(cg->b, (a), (b2), "")
#define FS(a, b2) LLVMBuildFSub(cg->b, (a), (b2), "")

static LLVMValueRef add64(Cg *cg, LLVMValueRef a, LLVMValueRef b) {
  return LLVMBuildAdd(cg->b, a, b, "");
}

static LLVMValueRef mulc(Cg *cg, LLVMValueRef a, int64_t c) {
  return LLVMBuildMul(cg->b, a, cg_i64(cg, c), "");
}

/* Rotate the first R dims of the head at element offset base. */
static void rotate(Cg *cg, Rope *R, LLVMValueRef base, LLVMValueRef crow) {
  CgLoop l;
  LLVMValueRef i = cg_loop_begin(cg, &l, cg_i64(cg, 0),
                                 cg_i64(cg, R->half), NULL, 0);
  LLVMValueRef ci = add64(cg, crow, i);
  LLVMValueRef c = cg_load(cg, R->dt, R->cs, ci);
  LLVMValueRef s = cg_load(cg, R->dt, R->sn, ci);
  if (R->neg) s = LLVMBuildFNeg(cg->b, s, "");
  LLVMValueRef i1 = add64(cg, base, i);
  LLVMValueRef i2 = add64(cg, i1, cg_i64(cg, R->half));
  LLVMValueRef x1 = cg_load(cg, R->dt, R->x, i1);
  LLVMValueRef x2 = cg_load(cg, R->dt, R->x, i2);
  cg_store(cg, R->dt, R->y, i1, FS(FM(x1, c), FM(x2, s)));
  cg_store(cg, R->dt, R->y, i2, FA(FM(x2, c), FM(x1, s)));
  cg_loop_end(cg, &l, NULL);
}

/* Copy dims R..D-1 of the head at base. */
static void pass_rest(Cg *cg, Rope *R, LLVMValueRef base) {
  if (R->rot == R->d) return;
  CgLoop l;
  LLVMValueRef i = cg_loop_begin(cg, &l, cg_i64(cg, R->rot),
                                 cg_i64(cg, R->d), NULL, 0);
  LLVMValueRef e = add64(cg, base, i);
  cg_store(cg, R->dt, R->y, e, cg_load(cg, R->dt, R->x, e));
  cg_loop_end(cg, &l, NULL);
}

/* One row (b, s): every head. */
static void row(Cg *cg, Rope *R, LLVMValueRef r) {
  LLVMValueRef srow = LLVMBuildSRem(cg->b, r, cg_dim(cg, R->s), "");
  LLVMValueRef crow = mulc(cg, srow, R->w);
  LLVMValueRef rbase = mulc(cg, r, R->heads * R->d);
  CgLoop l;
  LLVMValueRef h = cg_loop_begin(cg, &l, cg_i64(cg, 0),
                                 cg_i64(cg, R->heads), NULL, 0);
  LLVMValueRef base = add64(cg, rbase, mulc(cg, h, R->d));
  rotate(cg, R, base, crow);
  pass_rest(cg, R, base);
  cg_loop_end(cg, &l, NULL);
}

static void init(Rope *R, const Node *n) {
  const Type *x = &n->in[0]->type, *cs = &n->in[1]->type;
  R->dt = x->dt;
  R->neg = n->op == OP_ROPE_BACKWARD;
  R->d = ir_attr_int(n, ATTR_HEAD_DIM, 1);
  R->rot = ir_attr_present(n, ATTR_N_ROT) ? ir_attr_int(n, ATTR_N_ROT, 0)
                                          : R->d;
  R->half = R->rot / 2;
  R->s = x->dims[x->rank - 2];
  R->heads = x->dims[x->rank - 1] / R->d;
  R->w = cs->dims[1];
}

static bool cg_emit_rope(Cg *cg, Node *n) {
  Rope R = {0};
  init(&R, n);
  int64_t numel = type_bytes_bound(&n->type) / dt_size(n->type.dt);
  if (numel == 0) return true;
  int64_t rows = numel / (R.heads * R.d);
  Type lead = n->type; /* [B, S] or [S]: the rows, read at run time */
  lead.rank--;
  LLVMValueRef v[4] = {cg_buf(cg, n), cg_buf(cg, n->in[0]),
                       cg_buf(cg, n->in[1]), cg_buf(cg, n->in[2])};
  CgPar par;
  /* not noalias: the memory plan may let y reuse x's storage */
  LLVMValueRef r = cg_par_begin(cg, &par, cg_numel(cg, &lead),
                                cg_grain(rows, R.heads * R.d), v, 4, false);
  R.y = v[0];
  R.x = v[1];
  R.cs = v[2];
  R.sn = v[3];
  row(cg, &R, r);
  cg_par_end(cg, &par);
  return true;
}

/* Dynamic sizes: B and S, any of them (the shape rule keeps the head
 * axis static; cos and sin have x's S rows). */
static const char *rope_dyn(const Node *n) {
  (void)n;
  return NULL;
}

const CgEmitter cg_emitter_rope = {cg_emit_rope, NULL, rope_dyn};
