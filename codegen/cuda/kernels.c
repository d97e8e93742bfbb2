/* kernels.c: the GPU op emitters (cuda.h), one kernel per planned node
 * that emits code, launched in node order on one stream.
 *
 * - elementwise groups (the plan's fused trees, broadcasting by
 *   strides, every dtype the CPU elementwise path compiles: the same
 *   scalar code, elementwise_scalar.c), expand, where, cast, compares,
 *   relu_backward: one thread per output element.
 * - reduce_sum/mean/max/min/prod over any axes, softmax, log_softmax,
 *   softmax_cross_entropy and its backward: one block per output row;
 *   each thread folds a strided slice of the row in order, then the
 *   block combines the partials with warp butterflies and the warps'
 *   results in warp order (device.c). No atomics: the same bits from run
 *   to run. Prologue-fused producers are evaluated in the loads.
 * - matmul / batched matmul (f32, f64): shared-memory tiles of 16R x 16R
 *   outputs, R x R per thread, k in increasing order with fma: the same
 *   bits for every tile size; few tiles: K split over blocks, partial
 *   sums added in slice order by a second kernel (deterministic).
 *   Transposes folded by the plan are read through strides.
 * - transpose, narrow, concat, gather, returned-value copies: one
 *   thread per output element.
 * - cumsum, scatter_add, gather_backward, topk: index.c; rng_*, sample:
 *   random.c.
 * Anything else: `op 'NAME' is not supported by --target=cuda yet`.
 * Index operands out of range make the thread skip its element (the
 * entry cannot report it without synchronizing).
 */
#include "codegen/cuda/kernel.h"

#include <string.h>

#define TS 16 /* matmul tile */

/* ---- one thread per output element ---- */

static bool ew_kernel(Cu *cu, CgPlan *p, Node *n) {
  int64_t N = type_numel(&n->type);
  if (N == 0) return true;
  Cg *cg = cu->dev;
  cu_kernel_begin(cu, p, op_name(n->op));
  LLVMValueRef i = cu_gid(cu);
  cu_guard(cu, ult(cu, i, N));
  LLVMValueRef v = cg_fused_load(cg, n, i, 1);
  if (cg->failed) return false;
  cg_store(cg, n->type.dt, cg_buf(cg, n), i, v);
  cu_kernel_end(cu, blocks_for(N, EW_BLOCK), EW_BLOCK);
  return !cg->failed;
}

/* x > 0 ? dy : 0, dy broadcast to x's shape. */
static bool relu_bwd_kernel(Cu *cu, CgPlan *p, Node *n) {
  Cg *cg = cu->dev;
  DType dt = n->type.dt;
  if (!dt_is_float(dt) || n->in[1]->type.dt != dt)
    return bad_dtype(cu, n, dt);
  int64_t N = type_numel(&n->type), bs[RLX_MAX_RANK];
  if (N == 0) return true;
  cg_bcast_strides(&n->in[1]->type, &n->type, bs);
  cu_kernel_begin(cu, p, "relu_backward");
  LLVMValueRef i = cu_gid(cu);
  cu_guard(cu, ult(cu, i, N));
  LLVMValueRef x = cg_load(cg, dt, cg_buf(cg, n->in[0]), i);
  LLVMValueRef dy = cg_load(cg, dt, cg_buf(cg, n->in[1]),
                            remap(cu, i, n->type.dims, bs, n->type.rank));
  LLVMValueRef pos = LLVMBuildFCmp(cg->b, LLVMRealOGT, x,
                                   cg_const(cg, dt, 0), "");
  cg_store(cg, dt, cg_buf(cg, n), i,
           LLVMBuildSelect(cg->b, pos, dy, cg_const(cg, dt, 0), ""));
  cu_kernel_end(cu, blocks_for(N, EW_BLOCK), EW_BLOCK);
  return true;
}

/* Element copy dst[i] = src[f(i)] of n's type, f given by strides over
 * n's dims (in elements) plus a base offset. */
static void copy_kernel(Cu *cu, CgPlan *p, Node *n, LLVMValueRef (*dst)(Cu *,
                        Node *), Node *src, const int64_t *sstr,
                        int64_t soff, const char *what) {
  Cg *cg = cu->dev;
  int64_t N = type_numel(&n->type);
  if (N == 0) return;
  int es = dt_size(n->type.dt);
  LLVMTypeRef et = cg_ops_bits_type(cg, es);
  cu_kernel_begin(cu, p, what);
  LLVMValueRef i = cu_gid(cu);
  cu_guard(cu, ult(cu, i, N));
  LLVMValueRef si = add(cu, remap(cu, i, n->type.dims, sstr, n->type.rank),
                        i64(cu, soff));
  LLVMValueRef sp = LLVMBuildGEP2(cg->b, et, cg_buf(cg, src), &si, 1, "");
  LLVMValueRef dp = LLVMBuildGEP2(cg->b, et, dst(cu, n), &i, 1, "");
  LLVMBuildStore(cg->b, LLVMBuildLoad2(cg->b, et, sp, ""), dp);
  cu_kernel_end(cu, blocks_for(N, EW_BLOCK), EW_BLOCK);
}

static LLVMValueRef own_buf(Cu *cu, Node *n) { return cg_buf(cu->dev, n); }

static bool transpose_kernel(Cu *cu, CgPlan *p, Node *n) {
  int k;
  const int64_t *perm = ir_attr_ints(n, ATTR_PERM, &k);
  const Type *in = &n->in[0]->type;
  if (!perm || k != in->rank)
    return unsupported(cu, n, "perm does not match the rank");
  int64_t s[RLX_MAX_RANK], ss[RLX_MAX_RANK];
  cg_strides(in, s);
  for (int i = 0; i < k; i++) ss[i] = s[norm_axis(perm[i], k)];
  copy_kernel(cu, p, n, own_buf, n->in[0], ss, 0, "transpose");
  return true;
}

static bool narrow_kernel(Cu *cu, CgPlan *p, Node *n) {
  const Type *in = &n->in[0]->type;
  int axis = norm_axis(ir_attr_int(n, ATTR_AXIS, 0), in->rank);
  int64_t start = ir_attr_int(n, ATTR_START, 0), s[RLX_MAX_RANK];
  if (start < 0) start += in->dims[axis];
  if (start < 0 || start + n->type.dims[axis] > in->dims[axis])
    return unsupported(cu, n, "slice outside the operand");
  cg_strides(in, s);
  copy_kernel(cu, p, n, own_buf, n->in[0], s, start * s[axis], "narrow");
  return true;
}

/* concat: one kernel per operand, writing its slab of the output. */

static bool concat_kernel(Cu *cu, CgPlan *p, Node *n) {
  Cg *cg = cu->dev;
  int axis = norm_axis(ir_attr_int(n, ATTR_AXIS, 0), n->type.rank);
  int64_t os[RLX_MAX_RANK], off = 0;
  cg_strides(&n->type, os);
  int es = dt_size(n->type.dt);
  LLVMTypeRef et = cg_ops_bits_type(cg, es);
  for (int k = 0; k < n->nin; k++) {
    Node *x = n->in[k];
    int64_t N = type_numel(&x->type);
    if (N) {
      cu_kernel_begin(cu, p, "concat");
      LLVMValueRef i = cu_gid(cu);
      cu_guard(cu, ult(cu, i, N));
      LLVMValueRef di = add(cu, remap(cu, i, x->type.dims, os, x->type.rank),
                            i64(cu, off * os[axis]));
      LLVMValueRef sp = LLVMBuildGEP2(cg->b, et, cg_buf(cg, x), &i, 1, "");
      LLVMValueRef dp = LLVMBuildGEP2(cg->b, et, cg_buf(cg, n), &di, 1, "");
      LLVMBuildStore(cg->b, LLVMBuildLoad2(cg->b, et, sp, ""), dp);
      cu_kernel_end(cu, blocks_for(N, EW_BLOCK), EW_BLOCK);
    }
    off += x->type.dims[axis];
  }
  return true;
}

/* out [A, I, B] = table [A, T, B] rows picked by idx [I]. */
static bool gather_kernel(Cu *cu, CgPlan *p, Node *n) {
  Cg *cg = cu->dev;
  const Type *tt = &n->in[0]->type;
  DType idt = n->in[1]->type.dt;
  if (!cg_ops_index_dtype_ok(idt))
    return unsupported(cu, n, "indices must be i32, i64 or f32");
  int axis = norm_axis(ir_attr_int(n, ATTR_AXIS, 0), tt->rank);
  int64_t a, t, b, ni = type_numel(&n->in[1]->type);
  cg_ops_split_axis(tt, axis, &a, &t, &b);
  int64_t N = a * ni * b;
  if (N == 0) return true;
  LLVMTypeRef et = cg_ops_bits_type(cg, dt_size(n->type.dt));
  cu_kernel_begin(cu, p, "gather");
  LLVMValueRef i = cu_gid(cu);
  cu_guard(cu, ult(cu, i, N));
  LLVMValueRef j = urem(cu, i, b), u = udiv(cu, i, b);
  LLVMValueRef ii = urem(cu, u, ni), ai = udiv(cu, u, ni);
  LLVMValueRef ti = cg_ops_index(cg, idt, cg_buf(cg, n->in[1]), ii, t);
  LLVMValueRef si = add(cu, mul(cu, add(cu, mul(cu, ai, t), ti), b), j);
  LLVMValueRef sp = LLVMBuildGEP2(cg->b, et, cg_buf(cg, n->in[0]), &si, 1, "");
  LLVMValueRef dp = LLVMBuildGEP2(cg->b, et, cg_buf(cg, n), &i, 1, "");
  LLVMBuildStore(cg->b, LLVMBuildLoad2(cg->b, et, sp, ""), dp);
  cu_kernel_end(cu, blocks_for(N, EW_BLOCK), EW_BLOCK);
  return true;
}

void cu_copy_out(Cu *cu, CgPlan *p, Node *src, int j) {
  int64_t s[RLX_MAX_RANK];
  cg_strides(&src->type, s);
  cu->fn.plan = p;
  cu_kernel_begin(cu, p, "copy_out");
  /* copy_kernel's destination: outputs[j] */
  Cg *cg = cu->dev;
  int64_t N = type_numel(&src->type);
  LLVMTypeRef et = cg_ops_bits_type(cg, dt_size(src->type.dt));
  LLVMValueRef i = cu_gid(cu);
  cu_guard(cu, ult(cu, i, N));
  LLVMValueRef sp = LLVMBuildGEP2(cg->b, et, cg_buf(cg, src), &i, 1, "");
  LLVMValueRef dp = LLVMBuildGEP2(cg->b, et,
                                  cg_arg_ptr(cg, cg->fn->out, j), &i, 1, "");
  LLVMBuildStore(cg->b, LLVMBuildLoad2(cg->b, et, sp, ""), dp);
  cu_kernel_end(cu, blocks_for(N, EW_BLOCK), EW_BLOCK);
}

/* ---- one block per row ---- */

/* Fold f(x_j) over a row: thread t takes j = t, t + B, ... in order,
 * then the block combines (cu_block_reduce). x_j at base + j * step. */
typedef LLVMValueRef (*RowMap)(Cu *cu, LLVMValueRef x, LLVMValueRef j,
                               void *ctx);
typedef struct {
  Node *src;          /* read with cg_load (prologue markers work) */
  DType dt;
  int64_t len, block;
  const int64_t *dims, *str; /* row element j -> offset (remap), or */
  int rank;                  /* rank 0: base + j * step */
  LLVMValueRef base;
  int64_t step;
} Row;

static LLVMValueRef row_off(Cu *cu, const Row *r, LLVMValueRef j) {
  if (r->rank) return add(cu, r->base, remap(cu, j, r->dims, r->str, r->rank));
  return add(cu, r->base, mul(cu, j, r->step));
}

static LLVMValueRef row_fold(Cu *cu, const Row *r, CgRed red, RowMap f,
                             void *ctx) {
  Cg *cg = cu->dev;
  LLVMValueRef acc = cg_ops_red_init(cg, r->dt, red);
  LLVMValueRef tid = cu_tid(cu), src = cg_buf(cg, r->src);
  CgLoop l;
  LLVMValueRef it = cg_loop_begin(cg, &l, i64(cu, 0),
                                  i64(cu, (r->len + r->block - 1) / r->block),
                                  &acc, 1);
  LLVMValueRef j = add(cu, mul(cu, it, r->block), tid);
  LLVMValueRef in = ult(cu, j, r->len);
  LLVMValueRef jc = LLVMBuildSelect(cg->b, in, j, i64(cu, 0), "");
  LLVMValueRef x = cg_load(cg, r->dt, src, row_off(cu, r, jc));
  if (f) x = f(cu, x, jc, ctx);
  LLVMValueRef nx = cg_ops_combine(cg, r->dt, red, acc, x);
  acc = LLVMBuildSelect(cg->b, in, nx, acc, "");
  cg_loop_end(cg, &l, &acc);
  return cu_block_reduce(cu, r->dt, red, acc, (int)r->block);
}

/* for j = tid; j < len; j += block: body(j) */
static LLVMValueRef row_each_begin(Cu *cu, const Row *r, CgLoop *l,
                                   LLVMBasicBlockRef *skip) {
  Cg *cg = cu->dev;
  LLVMValueRef it = cg_loop_begin(cg, l, i64(cu, 0),
                                  i64(cu, (r->len + r->block - 1) / r->block),
                                  NULL, 0);
  LLVMValueRef j = add(cu, mul(cu, it, r->block), cu_tid(cu));
  LLVMBasicBlockRef go = cg_block(cg, "row.go");
  *skip = cg_block(cg, "row.skip");
  LLVMBuildCondBr(cg->b, ult(cu, j, r->len), go, *skip);
  LLVMPositionBuilderAtEnd(cg->b, go);
  return j;
}

static void row_each_end(Cu *cu, CgLoop *l, LLVMBasicBlockRef skip) {
  Cg *cg = cu->dev;
  LLVMBuildBr(cg->b, skip);
  LLVMPositionBuilderAtEnd(cg->b, skip);
  cg_loop_end(cg, l, NULL);
}

static bool reduce_kernel(Cu *cu, CgPlan *p, Node *n) {
  Cg *cg = cu->dev;
  const Type *t = &n->in[0]->type;
  DType dt = t->dt;
  if (dt == DT_C64 || dt == DT_BOOL || (n->op == OP_REDUCE_MEAN &&
                                        !dt_is_float(dt)))
    return bad_dtype(cu, n, dt);
  bool red[RLX_MAX_RANK] = {false};
  int k;
  const int64_t *ax = ir_attr_ints(n, ATTR_AXES, &k);
  for (int i = 0; i < t->rank; i++) red[i] = ax == NULL;
  for (int i = 0; ax && i < k; i++) red[norm_axis(ax[i], t->rank)] = true;
  int64_t s[RLX_MAX_RANK], kd[RLX_MAX_RANK], ks[RLX_MAX_RANK];
  int64_t rd[RLX_MAX_RANK], rs[RLX_MAX_RANK], rows = 1, len = 1;
  int nk = 0, nr = 0;
  cg_strides(t, s);
  for (int i = 0; i < t->rank; i++) {
    if (red[i]) rd[nr] = t->dims[i], rs[nr++] = s[i], len *= t->dims[i];
    else kd[nk] = t->dims[i], ks[nk++] = s[i], rows *= t->dims[i];
  }
  if (rows == 0) return true;
  int block = cu_block_for(len);
  cu_kernel_begin(cu, p, op_name(n->op));
  LLVMValueRef o = cu_ctaid(cu);
  Row r = {n->in[0], dt, len, block, rd, rs, nr,
           remap(cu, o, kd, ks, nk), 0};
  CgRed kind = cg_red_kind(n->op);
  LLVMValueRef v = row_fold(cu, &r, kind, NULL, NULL);
  if (n->op == OP_REDUCE_MEAN)
    v = LLVMBuildFDiv(cg->b, v, cg_const(cg, dt, (double)len), "");
  cu_guard(cu, LLVMBuildICmp(cg->b, LLVMIntEQ, cu_tid(cu), i64(cu, 0), ""));
  cg_store(cg, n->type.dt, cg_buf(cg, n), o, v);
  cu_kernel_end(cu, (unsigned)rows, (unsigned)block);
  return true;
}

typedef struct {
  DType dt;
  LLVMValueRef m;
} ExpCtx;

static LLVMValueRef exp_minus(Cu *cu, LLVMValueRef x, LLVMValueRef j,
                              void *ctx) {
  ExpCtx *e = ctx;
  (void)j;
  return cg_ops_exp(cu->dev, LLVMBuildFSub(cu->dev->b, x, e->m, ""));
}

/* max m and sum s of exp(x - m) over row r. */
static void row_lse(Cu *cu, const Row *r, LLVMValueRef *m, LLVMValueRef *s) {
  *m = row_fold(cu, r, CG_RED_MAX, NULL, NULL);
  ExpCtx e = {r->dt, *m};
  *s = row_fold(cu, r, CG_RED_SUM, exp_minus, &e);
}

static bool softmax_kernel(Cu *cu, CgPlan *p, Node *n) {
  Cg *cg = cu->dev;
  DType dt = n->type.dt;
  if (!dt_is_float(dt)) return bad_dtype(cu, n, dt);
  int64_t outer, len, inner;
  cg_ops_split_axis(&n->type, ir_attr_int(n, ATTR_AXIS, -1), &outer, &len,
                    &inner);
  int64_t rows = outer * inner;
  if (rows == 0 || len == 0) return true;
  int block = cu_block_for(len);
  cu_kernel_begin(cu, p, op_name(n->op));
  LLVMValueRef o = cu_ctaid(cu);
  LLVMValueRef base = add(cu, mul(cu, udiv(cu, o, inner), len * inner),
                          urem(cu, o, inner));
  Row r = {n->in[0], dt, len, block, NULL, NULL, 0, base, inner};
  LLVMValueRef m, s;
  row_lse(cu, &r, &m, &s);
  LLVMValueRef ls = n->op == OP_LOG_SOFTMAX ? cg_ops_log(cg, s) : NULL;
  CgLoop l;
  LLVMBasicBlockRef skip;
  LLVMValueRef j = row_each_begin(cu, &r, &l, &skip);
  LLVMValueRef off = row_off(cu, &r, j);
  LLVMValueRef d = LLVMBuildFSub(cg->b, cg_load(cg, dt, cg_buf(cg, n->in[0]),
                                                off), m, "");
  LLVMValueRef y = ls ? LLVMBuildFSub(cg->b, d, ls, "")
                      : LLVMBuildFDiv(cg->b, cg_ops_exp(cg, d), s, "");
  cg_store(cg, dt, cg_buf(cg, n), off, y);
  row_each_end(cu, &l, skip);
  cu_kernel_end(cu, (unsigned)rows, (unsigned)block);
  return true;
}

/* softmax_cross_entropy (bwd false): out[r] = (m - x[lab]) + log s;
 * backward: out[r, j] = (softmax - onehot) * dloss[r]. */
static bool xent_kernel(Cu *cu, CgPlan *p, Node *n, bool bwd) {
  Cg *cg = cu->dev;
  DType dt = n->in[0]->type.dt;
  if (!dt_is_float(dt)) return unsupported(cu, n, "logits dtype");
  if (!cg_ops_index_dtype_ok(n->in[1]->type.dt))
    return unsupported(cu, n, "labels must be i32, i64 or f32");
  int64_t rows = n->in[0]->type.dims[0], c = n->in[0]->type.dims[1];
  if (rows == 0 || c == 0) return true;
  int block = cu_block_for(c);
  cu_kernel_begin(cu, p, bwd ? "xent_backward" : "xent");
  LLVMValueRef o = cu_ctaid(cu);
  LLVMValueRef lab = cg_ops_index(cg, n->in[1]->type.dt, cg_buf(cg, n->in[1]),
                                  o, c);
  Row r = {n->in[0], dt, c, block, NULL, NULL, 0, mul(cu, o, c), 1};
  LLVMValueRef m, s;
  row_lse(cu, &r, &m, &s);
  if (!bwd) {
    cu_guard(cu, LLVMBuildICmp(cg->b, LLVMIntEQ, cu_tid(cu), i64(cu, 0), ""));
    LLVMValueRef xl = cg_load(cg, dt, cg_buf(cg, n->in[0]),
                              add(cu, r.base, lab));
    LLVMValueRef d = LLVMBuildFSub(cg->b, m, xl, "");
    cg_store(cg, dt, cg_buf(cg, n), o,
             LLVMBuildFAdd(cg->b, d, cg_ops_log(cg, s), ""));
  } else {
    LLVMValueRef g = cg_load(cg, dt, cg_buf(cg, n->in[2]), o);
    CgLoop l;
    LLVMBasicBlockRef skip;
    LLVMValueRef j = row_each_begin(cu, &r, &l, &skip);
    LLVMValueRef off = row_off(cu, &r, j);
    LLVMValueRef x = cg_load(cg, dt, cg_buf(cg, n->in[0]), off);
    LLVMValueRef pr = LLVMBuildFDiv(
        cg->b, cg_ops_exp(cg, LLVMBuildFSub(cg->b, x, m, "")), s, "");
    LLVMValueRef hot = LLVMBuildICmp(cg->b, LLVMIntEQ, j, lab, "");
    pr = LLVMBuildSelect(cg->b, hot,
                         LLVMBuildFSub(cg->b, pr, cg_const(cg, dt, 1), ""),
                         pr, "");
    cg_store(cg, dt, cg_buf(cg, n), off, LLVMBuildFMul(cg->b, pr, g, ""));
    row_each_end(cu, &l, skip);
  }
  cu_kernel_end(cu, (unsigned)rows, (unsigned)block);
  return true;
}

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
  cu_kernel_end(cu, blocks_for(total, EW_BLOCK), EW_BLOCK);
}

static bool matmul_kernel(Cu *cu, CgPlan *p, Node *n) {
  Cg *cg = cu->dev;
  DType dt = n->type.dt;
  const Type *t = &n->type;
  if (dt != DT_F32 && dt != DT_F64) return bad_dtype(cu, n, dt);
  if (t->rank < 2 || n->in[0]->type.rank < 2 || n->in[1]->type.rank < 2)
    return unsupported(cu, n, "rank < 2");
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
  m.abase = remap(cu, bb, t->dims, m.a.bstr, t->rank - 2);
  m.bbase = remap(cu, bb, t->dims, m.b.bstr, t->rank - 2);
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

/* ---- constants placed in the workspace ---- */

static bool const_kernel(Cu *cu, CgPlan *p, Node *n) {
  Cg *cg = cu->dev;
  int64_t N = type_numel(&n->type);
  if (N == 0) return true;
  cu_kernel_begin(cu, p, "const");
  LLVMValueRef i = cu_gid(cu);
  cu_guard(cu, ult(cu, i, N));
  LLVMValueRef v = cg_const_elem(cg, n, 0);
  cg_store(cg, n->type.dt, cg_buf(cg, n), i, v);
  cu_kernel_end(cu, blocks_for(N, EW_BLOCK), EW_BLOCK);
  return n->splat || N == 1 ||
         unsupported(cu, n, "non-splat constant in the workspace");
}

bool cu_emit_node(Cu *cu, CgPlan *p, Node *n) {
  CgSlotKind k = cg_plan_slot(p, n)->kind;
  if (k == CG_SLOT_FUSED || k == CG_SLOT_FOLDED || k == CG_SLOT_ALIAS ||
      n->op == OP_INPUT || n->op == OP_PARAM)
    return true;
  if (n->op == OP_CONST) return k != CG_SLOT_WS || const_kernel(cu, p, n);
  if (k == CG_SLOT_NONE) return true;
  cu->dev->fn = NULL;
  if (cg_is_elementwise(n->op) || n->op == OP_EXPAND)
    return ew_kernel(cu, p, n);
  switch (n->op) {
  case OP_RELU_BACKWARD: return relu_bwd_kernel(cu, p, n);
  case OP_REDUCE_SUM: case OP_REDUCE_MEAN: case OP_REDUCE_MAX:
  case OP_REDUCE_MIN: case OP_REDUCE_PROD: return reduce_kernel(cu, p, n);
  case OP_SOFTMAX: case OP_LOG_SOFTMAX: return softmax_kernel(cu, p, n);
  case OP_SOFTMAX_CROSS_ENTROPY: return xent_kernel(cu, p, n, false);
  case OP_SOFTMAX_CROSS_ENTROPY_BACKWARD: return xent_kernel(cu, p, n, true);
  case OP_MATMUL: return matmul_kernel(cu, p, n);
  case OP_TRANSPOSE: return transpose_kernel(cu, p, n);
  case OP_NARROW: return narrow_kernel(cu, p, n);
  case OP_CONCAT: return concat_kernel(cu, p, n);
  case OP_GATHER: return gather_kernel(cu, p, n);
  case OP_CUMSUM: case OP_CUMSUM_BACKWARD: return cu_cumsum(cu, p, n);
  case OP_SCATTER_ADD: case OP_GATHER_BACKWARD: return cu_scatter(cu, p, n);
  case OP_TOPK: return cu_topk(cu, p, n);
  case OP_RNG_UNIFORM: case OP_RNG_NORMAL: return cu_rng(cu, p, n);
  case OP_SAMPLE: return cu_sample(cu, p, n);
  default: return unsupported(cu, n, NULL);
  }
}
