/* kernels.c: the GPU op emitters (cuda.h), one kernel per planned node
 * that emits code, launched in node order on one stream.
 *
 * - elementwise groups (the plan's fused trees, broadcasting by
 *   strides, every dtype the CPU elementwise path compiles: the same
 *   scalar code, elementwise_scalar.c; a group's side outputs stored by
 *   the root's kernel), expand, where, cast, compares,
 *   relu_backward, activation_backward: one thread per output element.
 * - reduce_sum/mean/max/min/prod over any axes (c64: sum, mean, prod),
 *   softmax, log_softmax,
 *   softmax_cross_entropy and its backward: one block per output row;
 *   each thread folds a strided slice of the row in order, then the
 *   block combines the partials with warp butterflies and the warps'
 *   results in warp order (device.c). No atomics: the same bits from run
 *   to run. Prologue-fused producers are evaluated in the loads.
 * - matmul / batched matmul (f32, f64, c64; bf16, f16), dequant_matmul,
 *   q_matmul: matmul.c.
 * - transpose, narrow, concat, gather, returned-value copies: one
 *   thread per output element.
 * - cumsum, scatter_add, gather_backward, topk: index.c; rng_*, sample:
 *   random.c; the norm family: norm.c; attention, attention_backward:
 *   attention.c; rope and the pools: nn.c; conv2d and its backward
 *   ops: conv.c; q_conv2d, grouped_matmul and its weight gradient,
 *   dense solves: quant.c; scan, if, while, custom_fn: control.c;
 *   selective_scan, gated_delta_net, log_mel and its backward: seq.c;
 *   fft: fft.c.
 * Anything else: `op 'NAME' is not supported by --target=cuda yet`.
 * Index operands out of range make the thread skip its element and
 * record RLX_ERR_INDEX in the module's error word (device.c).
 */
#include "codegen/cuda/cuda.h"

#include <stdio.h>
#include <string.h>


/* ---- one thread per output element ---- */

/* Elementwise groups and copies: each thread takes EW_UNROLL elements
 * a block apart (i = (ctaid EW_UNROLL + u) EW_BLOCK + tid: every load
 * and store instruction of a warp is coalesced), loads all of them
 * (in flight together; out-of-range ones load element 0), then stores
 * those inside. Each element's code and bits are unchanged. */
enum { EW_UNROLL = 4 };

/* The thread's flat indices i[u], whether each is below N, and each
 * clamped to 0 where not. */
static void ew_indices(Cu *cu, int64_t N, LLVMValueRef *i, LLVMValueRef *in,
                       LLVMValueRef *ic) {
  LLVMValueRef i0 = add(cu, mul(cu, cu_ctaid(cu), EW_UNROLL * EW_BLOCK),
                        cu_tid(cu));
  for (int u = 0; u < EW_UNROLL; u++) {
    i[u] = add(cu, i0, i64(cu, u * EW_BLOCK));
    in[u] = ult(cu, i[u], N);
    ic[u] = LLVMBuildSelect(cu->dev->b, in[u], i[u], i64(cu, 0), "");
  }
}

/* Code after ew_if runs where in holds, up to ew_join(its result). */
static LLVMBasicBlockRef ew_if(Cu *cu, LLVMValueRef in) {
  Cg *cg = cu->dev;
  LLVMBasicBlockRef st = cg_block(cg, "ew.st"), next = cg_block(cg, "ew.next");
  LLVMBuildCondBr(cg->b, in, st, next);
  LLVMPositionBuilderAtEnd(cg->b, st);
  return next;
}

static void ew_join(Cu *cu, LLVMBasicBlockRef next) {
  LLVMBuildBr(cu->dev->b, next);
  LLVMPositionBuilderAtEnd(cu->dev->b, next);
}

/* Close a kernel of ew_indices' threads for N elements (a size). */
static void ew_end(Cu *cu, int64_t N) {
  cu_kernel_end_n(cu, N, EW_UNROLL * EW_BLOCK, 1, EW_BLOCK);
}

/* An elementwise group: the root n and its side outputs (fuse.c), each
 * stored at the element after all loads of the thread's elements (a
 * side output over its argument m reads m[i] before it writes m[i]; no
 * other thread touches element i). */
static bool ew_kernel(Cu *cu, CgPlan *p, Node *n) {
  int64_t N = cu_numel(cu, &n->type);
  if (N == 0) return true;
  Cg *cg = cu->dev;
  cu_kernel_begin(cu, p, op_name(n->op));
  LLVMValueRef i[EW_UNROLL], in[EW_UNROLL], ic[EW_UNROLL], v[EW_UNROLL];
  LLVMValueRef sv[EW_UNROLL][CG_MAX_GROUP_SIDES];
  Node *side[CG_MAX_GROUP_SIDES];
  int ns = 0;
  ew_indices(cu, N, i, in, ic);
  for (int u = 0; u < EW_UNROLL; u++) {
    v[u] = cg_group_load(cg, n, ic[u], side, sv[u], &ns);
    if (cg->failed) return false;
  }
  for (int u = 0; u < EW_UNROLL; u++) {
    LLVMBasicBlockRef next = ew_if(cu, in[u]);
    cg_store(cg, n->type.dt, cg_buf(cg, n), i[u], v[u]);
    for (int k = 0; k < ns; k++)
      cg_store(cg, side[k]->type.dt, cg_buf(cg, side[k]), i[u], sv[u][k]);
    ew_join(cu, next);
  }
  ew_end(cu, N);
  return !cg->failed;
}

/* Kinds whose f32 derivative the CPU computes, on its vector lanes, with
 * the straight-line exp, tanh and erf of codegen/llvm/math.c (on scalars
 * it calls libm, here libclc). */
static bool act_vector_math(const char *kind) {
  static const char *const k[] = {"gelu", "gelu_tanh", "silu", "sigmoid",
                                  "tanh", "exp"};
  for (size_t j = 0; j < sizeof k / sizeof *k; j++)
    if (!strcmp(kind, k[j])) return true;
  return false;
}

/* relu_backward and activation_backward: dy * f'(x) per element (relu:
 * x > 0 ? dy : 0), dy broadcast to x's shape, in the compute type
 * (f16/bf16 in f32, rounded on store), with the CPU emitter's formulas
 * (cg_act_grad, emit/backward.c). f32 kinds of act_vector_math compute
 * the element as a <1 x float>, so they take the CPU vector lanes' code
 * and bits; the rest is scalar code whose only calls (sin, cos, tan;
 * f64 and f16/bf16 exp, tanh, erf) go to libclc instead of libm. */
/* dy f'(x) at element x, dy. */
static LLVMValueRef act_grad(Cu *cu, DType dt, const char *kind,
                             LLVMValueRef x, LLVMValueRef dy) {
  Cg *cg = cu->dev;
  LLVMValueRef g;
  if (!strcmp(kind, "gelu_tanh") && cg_gelu_tanh_fast(cg, dt, x, NULL, &g))
    return LLVMBuildFMul(cg->b, dy, g, "");
  if (dt != DT_F32 || !act_vector_math(kind)) return cg_act_grad(cg, kind, x, dy);
  LLVMTypeRef vt = LLVMVectorType(cg->t_f32, 1);
  LLVMValueRef z = cg_i32(cg, 0);
  LLVMValueRef vx = LLVMBuildInsertElement(cg->b, LLVMGetUndef(vt), x, z, "");
  LLVMValueRef vd = LLVMBuildInsertElement(cg->b, LLVMGetUndef(vt), dy, z, "");
  return LLVMBuildExtractElement(cg->b, cg_act_grad(cg, kind, vx, vd), z, "");
}

/* EW_UNROLL elements a thread, their loads first (ew_kernel). */
static bool act_bwd_kernel(Cu *cu, CgPlan *p, Node *n, const char *kind) {
  Cg *cg = cu->dev;
  DType dt = n->type.dt;
  if (!kind || !cg_act_kind_known(kind))
    return cu_unsupported(cu, n, "unknown activation kind");
  if (!dt_is_float(dt) || n->in[1]->type.dt != dt)
    return cu_bad_dtype(cu, n, dt);
  int64_t N = cu_numel(cu, &n->type), bs[RLX_MAX_RANK];
  if (N == 0) return true;
  cg_bcast_strides_dim(cg, &n->in[1]->type, &n->type, bs);
  bool same = type_same_dims(&n->in[1]->type, &n->type);
  char what[48];
  snprintf(what, sizeof what, "%s_backward", kind);
  cu_kernel_begin(cu, p, what);
  LLVMValueRef i[EW_UNROLL], in[EW_UNROLL], ic[EW_UNROLL], x[EW_UNROLL];
  LLVMValueRef dy[EW_UNROLL];
  ew_indices(cu, N, i, in, ic);
  for (int u = 0; u < EW_UNROLL; u++) {
    x[u] = cg_load(cg, dt, cg_buf(cg, n->in[0]), ic[u]);
    dy[u] = cg_load(cg, dt, cg_buf(cg, n->in[1]),
                    same ? ic[u] : cu_remap(cu, ic[u], n->type.dims, bs,
                                            n->type.rank));
  }
  for (int u = 0; u < EW_UNROLL; u++) {
    LLVMBasicBlockRef next = ew_if(cu, in[u]);
    cg_store(cg, dt, cg_buf(cg, n), i[u], act_grad(cu, dt, kind, x[u], dy[u]));
    ew_join(cu, next);
  }
  ew_end(cu, N);
  return !cg->failed;
}

/* Element copy dst[i] = src[f(i)] of n's type, f given by strides over
 * n's dims (in elements) plus a base offset; EW_UNROLL elements a
 * thread (ew_indices). */
static void copy_kernel(Cu *cu, CgPlan *p, Node *n, LLVMValueRef (*dst)(Cu *,
                        Node *), Node *src, const int64_t *sstr,
                        int64_t soff, const char *what) { /* sizes */
  Cg *cg = cu->dev;
  int64_t N = cu_numel(cu, &n->type);
  if (N == 0) return;
  int es = dt_size(n->type.dt);
  LLVMTypeRef et = cg_ops_bits_type(cg, es);
  cu_kernel_begin(cu, p, what);
  LLVMValueRef i[EW_UNROLL], in[EW_UNROLL], ic[EW_UNROLL], v[EW_UNROLL];
  ew_indices(cu, N, i, in, ic);
  for (int u = 0; u < EW_UNROLL; u++) {
    LLVMValueRef si = add(cu, cu_remap(cu, ic[u], n->type.dims, sstr,
                                       n->type.rank), cu_size(cu, soff));
    LLVMValueRef sp = LLVMBuildGEP2(cg->b, et, cg_buf(cg, src), &si, 1, "");
    v[u] = LLVMBuildLoad2(cg->b, et, sp, "");
  }
  for (int u = 0; u < EW_UNROLL; u++) {
    LLVMBasicBlockRef next = ew_if(cu, in[u]);
    LLVMValueRef dp = LLVMBuildGEP2(cg->b, et, dst(cu, n), &i[u], 1, "");
    LLVMBuildStore(cg->b, v[u], dp);
    ew_join(cu, next);
  }
  ew_end(cu, N);
}

static LLVMValueRef own_buf(Cu *cu, Node *n) { return cg_buf(cu->dev, n); }

static bool transpose_kernel(Cu *cu, CgPlan *p, Node *n) {
  int k;
  const int64_t *perm = ir_attr_ints(n, ATTR_PERM, &k);
  const Type *in = &n->in[0]->type;
  if (!perm || k != in->rank)
    return cu_unsupported(cu, n, "perm does not match the rank");
  int64_t s[RLX_MAX_RANK], ss[RLX_MAX_RANK];
  cg_strides_dim(cu->dev, in, s);
  for (int i = 0; i < k; i++) ss[i] = s[ir_norm_axis(perm[i], k)];
  copy_kernel(cu, p, n, own_buf, n->in[0], ss, 0, "transpose");
  return true;
}

static bool narrow_kernel(Cu *cu, CgPlan *p, Node *n) {
  const Type *in = &n->in[0]->type;
  int axis = ir_norm_axis(ir_attr_int(n, ATTR_AXIS, 0), in->rank);
  int64_t start = ir_attr_int(n, ATTR_START, 0), s[RLX_MAX_RANK];
  if (start < 0) start += in->dims[axis];
  if (start < 0 || start + n->type.dims[axis] > in->dims[axis])
    return cu_unsupported(cu, n, "slice outside the operand");
  cg_strides_dim(cu->dev, in, s);
  int64_t off; /* start times a size */
  dim_mul(cu->dev->ctx, start, s[axis], &off);
  copy_kernel(cu, p, n, own_buf, n->in[0], s, off, "narrow");
  return true;
}

/* concat: one kernel per operand, writing its slab of the output
 * (EW_UNROLL elements a thread, ew_indices). */

static bool concat_kernel(Cu *cu, CgPlan *p, Node *n) {
  Cg *cg = cu->dev;
  int axis = ir_norm_axis(ir_attr_int(n, ATTR_AXIS, 0), n->type.rank);
  int64_t os[RLX_MAX_RANK], off = 0;
  cg_strides_dim(cg, &n->type, os);
  int es = dt_size(n->type.dt);
  LLVMTypeRef et = cg_ops_bits_type(cg, es);
  for (int k = 0; k < n->nin; k++) {
    Node *x = n->in[k];
    int64_t N = cu_numel(cu, &x->type);
    if (N) {
      cu_kernel_begin(cu, p, "concat");
      LLVMValueRef i[EW_UNROLL], in[EW_UNROLL], ic[EW_UNROLL], v[EW_UNROLL];
      ew_indices(cu, N, i, in, ic);
      for (int u = 0; u < EW_UNROLL; u++) {
        LLVMValueRef sp = LLVMBuildGEP2(cg->b, et, cg_buf(cg, x), &ic[u], 1,
                                        "");
        v[u] = LLVMBuildLoad2(cg->b, et, sp, "");
      }
      for (int u = 0; u < EW_UNROLL; u++) {
        LLVMBasicBlockRef next = ew_if(cu, in[u]);
        LLVMValueRef di = add(cu, cu_remap(cu, i[u], x->type.dims, os,
                                           x->type.rank),
                              mul(cu, cu_size(cu, off), os[axis]));
        LLVMValueRef dp = LLVMBuildGEP2(cg->b, et, cg_buf(cg, n), &di, 1, "");
        LLVMBuildStore(cg->b, v[u], dp);
        ew_join(cu, next);
      }
      ew_end(cu, N);
    }
    dim_add(cg->ctx, off, x->type.dims[axis], &off); /* a size */
  }
  return true;
}

/* out [A, I, B] = table [A, T, B] rows picked by idx [I]. */
static bool gather_kernel(Cu *cu, CgPlan *p, Node *n) {
  Cg *cg = cu->dev;
  const Type *tt = &n->in[0]->type;
  DType idt = n->in[1]->type.dt;
  if (!cg_ops_index_dtype_ok(idt))
    return cu_unsupported(cu, n, "indices must be i32, i64 or f32");
  int axis = ir_norm_axis(ir_attr_int(n, ATTR_AXIS, 0), tt->rank);
  int64_t a, t, b, ni = cu_numel(cu, &n->in[1]->type), N; /* sizes */
  cg_split_axis_dim(cg, tt, axis, &a, &t, &b);
  dim_mul(cg->ctx, ni, a, &N);
  dim_mul(cg->ctx, N, b, &N);
  if (N == 0) return true;
  LLVMTypeRef et = cg_ops_bits_type(cg, dt_size(n->type.dt));
  cu_kernel_begin(cu, p, "gather");
  LLVMValueRef i = cu_gid(cu);
  cu_guard(cu, ult(cu, i, N));
  LLVMValueRef j = urem(cu, i, b), u = udiv(cu, i, b);
  LLVMValueRef ii = urem(cu, u, ni), ai = udiv(cu, u, ni);
  LLVMValueRef ti = cg_ops_index_v(cg, idt, cg_buf(cg, n->in[1]), ii,
                                   cu_size(cu, t));
  LLVMValueRef si = add(cu, mul(cu, add(cu, mul(cu, ai, t), ti), b), j);
  LLVMValueRef sp = LLVMBuildGEP2(cg->b, et, cg_buf(cg, n->in[0]), &si, 1, "");
  LLVMValueRef dp = LLVMBuildGEP2(cg->b, et, cg_buf(cg, n), &i, 1, "");
  LLVMBuildStore(cg->b, LLVMBuildLoad2(cg->b, et, sp, ""), dp);
  cu_kernel_end_n(cu, N, EW_BLOCK, 1, EW_BLOCK);
  return true;
}

void cu_copy_out(Cu *cu, CgPlan *p, Node *src, int j) {
  int64_t s[RLX_MAX_RANK];
  cg_strides(&src->type, s);
  cu->fn.plan = p;
  cu_kernel_begin(cu, p, "copy_out");
  /* copy_kernel's destination: outputs[j] */
  Cg *cg = cu->dev;
  int64_t N = cu_numel(cu, &src->type);
  LLVMTypeRef et = cg_ops_bits_type(cg, dt_size(src->type.dt));
  LLVMValueRef i = cu_gid(cu);
  cu_guard(cu, ult(cu, i, N));
  LLVMValueRef sp = LLVMBuildGEP2(cg->b, et, cg_buf(cg, src), &i, 1, "");
  LLVMValueRef dp = LLVMBuildGEP2(cg->b, et,
                                  cg_arg_ptr(cg, cg->fn->out, j), &i, 1, "");
  LLVMBuildStore(cg->b, LLVMBuildLoad2(cg->b, et, sp, ""), dp);
  cu_kernel_end_n(cu, N, EW_BLOCK, 1, EW_BLOCK);
}

/* ---- one block per row ---- */

/* Fold f(x_j) over a row: thread t takes j = t, t + B, ... in order,
 * then the block combines (cu_block_reduce). x_j at base + j * step.
 * ROW_UNROLL loads are issued before they are combined (more bytes in
 * flight); the order of the fold is the same. */
enum { ROW_UNROLL = 4 };
typedef LLVMValueRef (*RowMap)(Cu *cu, LLVMValueRef x, LLVMValueRef j,
                               void *ctx);
typedef struct {
  Node *src;          /* read with cg_load (prologue markers work) */
  DType dt;
  int64_t len, block; /* len: a size (reduce_*: may be dynamic) */
  const int64_t *dims, *str; /* row element j -> offset (remap), or */
  int rank;                  /* rank 0: base + j * step */
  LLVMValueRef base;
  int64_t step;
} Row;

static LLVMValueRef row_off(Cu *cu, const Row *r, LLVMValueRef j) {
  if (r->rank)
    return add(cu, r->base, cu_remap(cu, j, r->dims, r->str, r->rank));
  return add(cu, r->base, mul(cu, j, r->step));
}

/* The loop over a row's ROW_UNROLL-element steps of thread t: iteration
 * it loads x[u] = element j[u] = (it ROW_UNROLL + u) B + t (in[u]: j[u]
 * < len; outside, element 0 is loaded) and f of it. */
static LLVMValueRef row_loads(Cu *cu, const Row *r, CgLoop *l,
                              LLVMValueRef *carry, int ncarry, RowMap f,
                              void *ctx, LLVMValueRef *x, LLVMValueRef *j,
                              LLVMValueRef *in) {
  Cg *cg = cu->dev;
  LLVMValueRef tid = cu_tid(cu), src = cg_buf(cg, r->src);
  LLVMValueRef it = cg_loop_begin(cg, l, i64(cu, 0),
                                  cu_ceil_div(cu, r->len, r->block * ROW_UNROLL),
                                  carry, ncarry);
  for (int u = 0; u < ROW_UNROLL; u++) {
    LLVMValueRef k = add(cu, mul(cu, it, ROW_UNROLL), i64(cu, u));
    j[u] = add(cu, mul(cu, k, r->block), tid);
    in[u] = ult(cu, j[u], r->len);
    j[u] = LLVMBuildSelect(cg->b, in[u], j[u], i64(cu, 0), "");
    x[u] = cg_load(cg, r->dt, src, row_off(cu, r, j[u]));
  }
  for (int u = 0; f && u < ROW_UNROLL; u++) x[u] = f(cu, x[u], j[u], ctx);
  return it;
}

static LLVMValueRef row_fold(Cu *cu, const Row *r, CgRed red, RowMap f,
                             void *ctx) {
  Cg *cg = cu->dev;
  LLVMValueRef acc = cg_ops_red_init(cg, r->dt, red);
  LLVMValueRef x[ROW_UNROLL], j[ROW_UNROLL], in[ROW_UNROLL];
  CgLoop l;
  row_loads(cu, r, &l, &acc, 1, f, ctx, x, j, in);
  for (int u = 0; u < ROW_UNROLL; u++)
    acc = LLVMBuildSelect(cg->b, in[u],
                          cg_ops_combine(cg, r->dt, red, acc, x[u]), acc, "");
  cg_loop_end(cg, &l, &acc);
  return cu_block_reduce(cu, r->dt, red, acc, (int)r->block);
}

/* for j = tid; j < len; j += block: body(j) */
static LLVMValueRef row_each_begin(Cu *cu, const Row *r, CgLoop *l,
                                   LLVMBasicBlockRef *skip) {
  Cg *cg = cu->dev;
  LLVMValueRef it = cg_loop_begin(cg, l, i64(cu, 0),
                                  cu_ceil_div(cu, r->len, r->block), NULL,
                                  0);
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

/* ---- column reductions ---- */

/* reduce_* whose reduced axes lead and kept axes follow views x as
 * [len, K]: a column reduction when K >= 32 (bias gradients: sums over
 * batch and sequence; a position table's over the batch). */
static bool col_view(Cu *cu, const Node *n, CuCol *c) {
  const Type *t = &n->in[0]->type;
  if (t->dt == DT_C64 || t->dt == DT_BOOL) return false;
  bool red[RLX_MAX_RANK] = {false};
  int k;
  const int64_t *ax = ir_attr_ints(n, ATTR_AXES, &k);
  if (!ax) return false;
  for (int i = 0; i < k; i++) red[ir_norm_axis(ax[i], t->rank)] = true;
  int64_t len = 1, K = 1;
  for (int i = 0; i < t->rank; i++) {
    if (red[i] && K > 1) return false; /* a reduced axis after a kept one */
    if (red[i]) dim_mul(cu->dev->ctx, len, t->dims[i], &len); /* a size */
    else if (!dim_is_static(t->dims[i])) return false; /* K static */
    else K *= t->dims[i];
  }
  *c = (CuCol){.n = (Node *)n, .dt = t->dt, .kind = cg_red_kind(n->op)};
  return cu_col_plan(c, len, K);
}

/* Size n as a value of dt's compute type (a mean's count). */
static LLVMValueRef count(Cu *cu, DType dt, int64_t n) {
  Cg *cg = cu->dev;
  DType et = dt == DT_C64 ? DT_F32 : dt; /* c64: both parts by n */
  LLVMValueRef v = dim_is_static(n)
                       ? cg_const(cg, et, (double)n)
                       : LLVMBuildUIToFP(cg->b, cu_size(cu, n),
                                         cg_ctype(cg, et), "");
  return dt == DT_C64 ? cg_ops_splat(cg, v, 2) : v;
}

/* x[row, col] of a reduce node. */
static LLVMValueRef col_elem(Cu *cu, CuCol *c, LLVMValueRef row,
                             LLVMValueRef col) {
  Cg *cg = cu->dev;
  return cg_load(cg, c->dt, cg_buf(cg, c->n->in[0]),
                 add(cu, mul(cu, row, c->K), col));
}

/* The column's result v (mean: / len) to the output. */
static void col_finish(Cu *cu, CuCol *c, LLVMValueRef col, LLVMValueRef v) {
  Cg *cg = cu->dev;
  if (c->n->op == OP_REDUCE_MEAN)
    v = LLVMBuildFDiv(cg->b, v, count(cu, c->dt, c->len), "");
  cg_store(cg, c->n->type.dt, cg_buf(cg, c->n), col, v);
}

static bool reduce_kernel(Cu *cu, CgPlan *p, Node *n) {
  Cg *cg = cu->dev;
  const Type *t = &n->in[0]->type;
  DType dt = t->dt;
  bool c64 = dt == DT_C64;
  if (dt == DT_BOOL || (c64 && (n->op == OP_REDUCE_MAX ||
                                n->op == OP_REDUCE_MIN)) ||
      (n->op == OP_REDUCE_MEAN && !dt_is_float(dt) && !c64))
    return cu_bad_dtype(cu, n, dt);
  bool red[RLX_MAX_RANK] = {false};
  int k;
  const int64_t *ax = ir_attr_ints(n, ATTR_AXES, &k);
  for (int i = 0; i < t->rank; i++) red[i] = ax == NULL;
  for (int i = 0; ax && i < k; i++) red[ir_norm_axis(ax[i], t->rank)] = true;
  int64_t s[RLX_MAX_RANK], kd[RLX_MAX_RANK], ks[RLX_MAX_RANK];
  int64_t rd[RLX_MAX_RANK], rs[RLX_MAX_RANK], rows = 1, len = 1;
  int nk = 0, nr = 0;
  cg_strides_dim(cg, t, s);
  for (int i = 0; i < t->rank; i++) {
    int64_t *c = red[i] ? &len : &rows; /* sizes: may be dynamic */
    if (red[i]) rd[nr] = t->dims[i], rs[nr++] = s[i];
    else kd[nk] = t->dims[i], ks[nk++] = s[i];
    dim_mul(cu->dev->ctx, *c, t->dims[i], c);
  }
  if (rows == 0) return true;
  CuCol cr;
  if (col_view(cu, n, &cr)) {
    cr.elem = col_elem, cr.finish = col_finish;
    cu_col_reduce(cu, p, &cr, op_name(n->op));
    return true;
  }
  int block = cu_block_for(dim_bound(len));
  cu_kernel_begin(cu, p, op_name(n->op));
  LLVMValueRef o = cu_ctaid(cu);
  Row r = {n->in[0], dt, len, block, rd, rs, nr,
           cu_remap(cu, o, kd, ks, nk), 0};
  CgRed kind = cg_red_kind(n->op);
  LLVMValueRef v = row_fold(cu, &r, kind, NULL, NULL);
  if (n->op == OP_REDUCE_MEAN) /* c64: both parts by the count */
    v = LLVMBuildFDiv(cg->b, v, count(cu, dt, len), "");
  cu_guard(cu, LLVMBuildICmp(cg->b, LLVMIntEQ, cu_tid(cu), i64(cu, 0), ""));
  cg_store(cg, n->type.dt, cg_buf(cg, n), o, v);
  cu_kernel_end_n(cu, rows, 1, 1, (unsigned)block);
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
  return cu_exp_neg(cu, e->dt, LLVMBuildFSub(cu->dev->b, x, e->m, ""));
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
  if (!dt_is_float(dt)) return cu_bad_dtype(cu, n, dt);
  int64_t outer, len, inner, rows; /* sizes: any may be dynamic */
  cg_split_axis_dim(cg, &n->type, ir_attr_int(n, ATTR_AXIS, -1), &outer,
                    &len, &inner);
  dim_mul(cu->dev->ctx, outer, inner, &rows);
  if (rows == 0 || len == 0) return true;
  int block = cu_block_for(dim_bound(len));
  cu_kernel_begin(cu, p, op_name(n->op));
  LLVMValueRef o = cu_ctaid(cu);
  LLVMValueRef base = add(cu, mul(cu, mul(cu, udiv(cu, o, inner), len),
                                  inner), urem(cu, o, inner));
  Row r = {n->in[0], dt, len, block, NULL, NULL, 0, base, inner};
  LLVMValueRef m, s;
  row_lse(cu, &r, &m, &s);
  bool log = n->op == OP_LOG_SOFTMAX;
  LLVMValueRef ls = log ? cg_ops_log(cg, s)
                        : LLVMBuildFDiv(cg->b, cg_const(cg, dt, 1), s, "");
  CgLoop l;
  LLVMBasicBlockRef skip;
  LLVMValueRef j = row_each_begin(cu, &r, &l, &skip);
  LLVMValueRef off = row_off(cu, &r, j);
  LLVMValueRef d = LLVMBuildFSub(cg->b, cg_load(cg, dt, cg_buf(cg, n->in[0]),
                                                off), m, "");
  LLVMValueRef y = log ? LLVMBuildFSub(cg->b, d, ls, "")
                       : LLVMBuildFMul(cg->b, cu_exp_neg(cu, dt, d), ls, "");
  cg_store(cg, dt, cg_buf(cg, n), off, y);
  row_each_end(cu, &l, skip);
  cu_kernel_end_n(cu, rows, 1, 1, (unsigned)block);
  return true;
}

/* exp(a - b), 1 where a == b (two -inf maxima: no NaN). */
static LLVMValueRef rescale(Cu *cu, DType dt, LLVMValueRef a, LLVMValueRef b) {
  Cg *cg = cu->dev;
  return LLVMBuildSelect(cg->b, LLVMBuildFCmp(cg->b, LLVMRealOEQ, a, b, ""),
                         cg_const(cg, dt, 1),
                         cu_exp_neg(cu, dt, LLVMBuildFSub(cg->b, a, b, "")),
                         "");
}

/* max m and sum s of exp(x - m) over row r in one pass (online):
 * each thread keeps its running max and its sum scaled to it, rescaled
 * when the max grows; the block takes the max M, then the sum of the
 * threads' sums scaled to M. The order is fixed (same bits every run);
 * the sum's rounding differs from row_lse's two passes. */
static void row_lse_online(Cu *cu, const Row *r, LLVMValueRef *m,
                           LLVMValueRef *s) {
  Cg *cg = cu->dev;
  DType dt = r->dt;
  LLVMValueRef ninf = cg_ops_red_init(cg, dt, CG_RED_MAX);
  LLVMValueRef zero = cg_ops_red_init(cg, dt, CG_RED_SUM);
  LLVMValueRef acc[2] = {ninf, zero}, x[ROW_UNROLL], j[ROW_UNROLL];
  LLVMValueRef in[ROW_UNROLL];
  CgLoop l;
  row_loads(cu, r, &l, acc, 2, NULL, NULL, x, j, in);
  LLVMValueRef mn = acc[0];
  for (int u = 0; u < ROW_UNROLL; u++) {
    x[u] = LLVMBuildSelect(cg->b, in[u], x[u], ninf, "");
    mn = cg_ops_combine(cg, dt, CG_RED_MAX, mn, x[u]);
  }
  LLVMValueRef sum = LLVMBuildFMul(cg->b, acc[1], rescale(cu, dt, acc[0], mn),
                                   "");
  for (int u = 0; u < ROW_UNROLL; u++) {
    LLVMValueRef e = cu_exp_neg(cu, dt, LLVMBuildFSub(cg->b, x[u], mn, ""));
    sum = LLVMBuildFAdd(cg->b, sum,
                        LLVMBuildSelect(cg->b, in[u], e, zero, ""), "");
  }
  acc[0] = mn, acc[1] = sum;
  cg_loop_end(cg, &l, acc);
  *m = cu_block_reduce(cu, dt, CG_RED_MAX, acc[0], (int)r->block);
  *s = cu_block_reduce(cu, dt, CG_RED_SUM, LLVMBuildFMul(
                           cg->b, acc[1], rescale(cu, dt, acc[0], *m), ""),
                       (int)r->block);
}

/* softmax_cross_entropy (bwd false): out[r] = (m - x[lab]) + log s;
 * backward: out[r, j] = (softmax - onehot) * dloss[r]. One block per
 * row (512 threads for rows of 4096 or more), m and s in one pass
 * (row_lse_online), exp as cu_exp_neg, softmax as exp(x - m) times
 * 1 / s (one division a thread); the backward then reads the row once more,
 * ROW_UNROLL loads before their stores. A forward paired with its
 * backward (cg_xent_pairs) saves m and s, and the backward reads them
 * instead of its first pass: the same values, one read of the row. */
/* The gradient's epilogue root stored with rows pitch apart
 * (plan/views.c): zeros past row o's c elements. */
static void xent_zero_pad(Cu *cu, CgPlan *p, Node *n, LLVMValueRef o,
                          int64_t c) {
  Cg *cg = cu->dev;
  LLVMValueRef rp;
  Node *rt = p->slot[n->id].kind == CG_SLOT_EPI
                 ? cg_epi_root(cg, cg_buf(cg, n), &rp) : NULL;
  int64_t P = rt ? p->slot[rt->id].pitch : 0;
  if (!P) return;
  LLVMBasicBlockRef z = cg_block(cg, "xent.pad"), done = cg_block(cg, "xent.end");
  LLVMBuildCondBr(cg->b, ult(cu, cu_tid(cu), P - c), z, done);
  LLVMPositionBuilderAtEnd(cg->b, z);
  LLVMTypeRef et = cg_stype(cg, rt->type.dt);
  LLVMValueRef at = add(cu, mul(cu, o, P), add(cu, cu_tid(cu), i64(cu, c)));
  LLVMBuildStore(cg->b, LLVMConstNull(et),
                 LLVMBuildGEP2(cg->b, et, rp, &at, 1, ""));
  LLVMBuildBr(cg->b, done);
  LLVMPositionBuilderAtEnd(cg->b, done);
}

static bool xent_kernel(Cu *cu, CgPlan *p, Node *n, bool bwd) {
  Cg *cg = cu->dev;
  DType dt = n->in[0]->type.dt;
  if (!dt_is_float(dt)) return cu_unsupported(cu, n, "logits dtype");
  if (!cg_ops_index_dtype_ok(n->in[1]->type.dt))
    return cu_unsupported(cu, n, "labels must be i32, i64 or f32");
  int64_t rows = n->in[0]->type.dims[0], c = n->in[0]->type.dims[1];
  if (rows == 0 || c == 0) return true;
  int block = c >= 4096 ? 512 : cu_block_for(c);
  cu_kernel_begin(cu, p, bwd ? "xent_backward" : "xent");
  LLVMValueRef o = cu_ctaid(cu);
  LLVMValueRef lab = cg_ops_index(cg, n->in[1]->type.dt, cg_buf(cg, n->in[1]),
                                  o, c);
  Row r = {n->in[0], dt, c, block, NULL, NULL, 0, mul(cu, o, c), 1};
  const CgSlot *sl = &p->slot[n->id];
  Node *f = bwd ? sl->fwd : n; /* the node whose saved m and s these are */
  LLVMValueRef m, s, saved = NULL;
  if (f && p->slot[f->id].saved_bytes != 0) /* a number, or a size */
    saved = cg_ws_at(cg, p->slot[f->id].saved_off);
  if (bwd && saved) {
    m = cg_load(cg, dt, saved, o);
    s = cg_load(cg, dt, saved, add(cu, o, cu_size(cu, rows)));
  } else {
    row_lse_online(cu, &r, &m, &s);
  }
  if (!bwd) {
    cu_guard(cu, LLVMBuildICmp(cg->b, LLVMIntEQ, cu_tid(cu), i64(cu, 0), ""));
    if (saved) {
      cg_store(cg, dt, saved, o, m);
      cg_store(cg, dt, saved, add(cu, o, cu_size(cu, rows)), s);
    }
    LLVMValueRef xl = cg_load(cg, dt, cg_buf(cg, n->in[0]),
                              add(cu, r.base, lab));
    LLVMValueRef d = LLVMBuildFSub(cg->b, m, xl, "");
    cg_store(cg, dt, cg_buf(cg, n), o,
             LLVMBuildFAdd(cg->b, d, cg_ops_log(cg, s), ""));
  } else {
    LLVMValueRef g = cg_load(cg, dt, cg_buf(cg, n->in[2]), o);
    LLVMValueRef inv = LLVMBuildFDiv(cg->b, cg_const(cg, dt, 1), s, "");
    LLVMValueRef x[ROW_UNROLL], j[ROW_UNROLL], in[ROW_UNROLL];
    CgLoop l;
    row_loads(cu, &r, &l, NULL, 0, NULL, NULL, x, j, in);
    for (int u = 0; u < ROW_UNROLL; u++) {
      LLVMValueRef pr = LLVMBuildFMul(
          cg->b, cu_exp_neg(cu, dt, LLVMBuildFSub(cg->b, x[u], m, "")), inv,
          "");
      LLVMValueRef hot = LLVMBuildICmp(cg->b, LLVMIntEQ, j[u], lab, "");
      pr = LLVMBuildSelect(cg->b, hot,
                           LLVMBuildFSub(cg->b, pr, cg_const(cg, dt, 1), ""),
                           pr, "");
      LLVMBasicBlockRef st = cg_block(cg, "xent.st");
      LLVMBasicBlockRef next = cg_block(cg, "xent.next");
      LLVMBuildCondBr(cg->b, in[u], st, next);
      LLVMPositionBuilderAtEnd(cg->b, st);
      cg_store(cg, dt, cg_buf(cg, n), add(cu, r.base, j[u]),
               LLVMBuildFMul(cg->b, pr, g, ""));
      LLVMBuildBr(cg->b, next);
      LLVMPositionBuilderAtEnd(cg->b, next);
    }
    cg_loop_end(cg, &l, NULL);
    xent_zero_pad(cu, p, n, o, c);
  }
  cu_kernel_end_n(cu, rows, 1, 1, (unsigned)block);
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
  cu_kernel_end(cu, cu_blocks_for(N, EW_BLOCK), EW_BLOCK);
  return n->splat || N == 1 ||
         cu_unsupported(cu, n, "non-splat constant in the workspace");
}

/* ---- dynamic sizes ----
 * Elementwise groups, reductions, softmax, transposes, rope, cumsum,
 * draws and concat take dynamic sizes in any axis (offsets from strides
 * that are sizes: docs/gpu.md, "Dynamic sizes"); row ops want their
 * rows static; products, gathers and attention have their own rules;
 * conv and the pools take a dynamic batch (axis 0) only. */

/* Is every dynamic size of n's type and its operands' in axis 0? */
static bool lead_ok(const Node *n) {
  if (!cg_dyn_leading(&n->type)) return false;
  for (int i = 0; i < n->nin; i++)
    if (!cg_dyn_leading(&n->in[i]->type)) return false;
  return true;
}

/* Are t's sizes from axis on static (a row op's row and after)? */
static bool static_from(const Type *t, int64_t axis) {
  for (int i = ir_norm_axis(axis, t->rank); i < t->rank; i++)
    if (!dim_is_static(t->dims[i])) return false;
  return true;
}

const char *cu_dyn_why(Cu *cu, CgPlan *p, const Node *n) {
  if (!node_dynamic(n) || n->op == OP_INPUT || n->op == OP_PARAM)
    return NULL;
  CgSlotKind k = cg_plan_slot(p, n)->kind;
  if (k == CG_SLOT_FOLDED || k == CG_SLOT_ALIAS) return NULL; /* views */
  if (cg_is_elementwise(n->op) || n->op == OP_EXPAND ||
      n->op == OP_RELU_BACKWARD || n->op == OP_ACTIVATION_BACKWARD)
    return NULL; /* any sizes */
  switch (n->op) {
  case OP_REDUCE_SUM: case OP_REDUCE_MEAN: case OP_REDUCE_MAX:
  case OP_REDUCE_MIN: case OP_REDUCE_PROD: case OP_TRANSPOSE:
  case OP_SOFTMAX: case OP_LOG_SOFTMAX: case OP_SCAN: case OP_IF:
  case OP_WHILE: case OP_CUSTOM_FN: /* subgraphs: their own nodes' */
  case OP_ROPE: case OP_ROPE_BACKWARD: case OP_RNG_UNIFORM:
  case OP_RNG_NORMAL: case OP_CUMSUM: case OP_CUMSUM_BACKWARD:
    return NULL; /* any sizes */
  case OP_SOFTMAX_CROSS_ENTROPY: case OP_SOFTMAX_CROSS_ENTROPY_BACKWARD:
    return static_from(&n->in[0]->type, 1) ? NULL : "dynamic classes";
  case OP_LAYER_NORM: case OP_RMS_NORM: case OP_LAYER_NORM_BACKWARD_INPUT:
  case OP_RMS_NORM_BACKWARD_INPUT: /* units: any sizes before the axis */
    return static_from(&n->in[0]->type, ir_attr_int(n, ATTR_AXIS, -1))
               ? NULL : "a dynamic size in the normalized axis or after it";
  case OP_GROUP_NORM: case OP_BATCH_NORM_INFERENCE:
  case OP_GROUP_NORM_BACKWARD_INPUT:
  case OP_BATCH_NORM_INFERENCE_BACKWARD_INPUT: /* NCHW: a dynamic N */
    return static_from(&n->in[0]->type, 1) ? NULL
                                           : "a dynamic size after N";
  case OP_MATMUL: return cu_matmul_dyn(cu, p, n);
  case OP_CONCAT: return NULL; /* slab offsets: sums of sizes */
  case OP_NARROW:
    return dim_is_static(n->type.dims[ir_norm_axis(
               ir_attr_int(n, ATTR_AXIS, 0), n->type.rank)])
               ? NULL : "along a dynamic axis";
  case OP_GATHER: return NULL; /* any sizes */
  case OP_SAMPLE:
    return static_from(&n->in[0]->type, 1) ? NULL : "dynamic classes";
  case OP_SCATTER_ADD: case OP_GATHER_BACKWARD: { /* static rows */
    int64_t a, t, b;
    int ax = n->op == OP_GATHER_BACKWARD ? (int)ir_attr_int(n, ATTR_AXIS, 0)
                                         : 0;
    cg_split_axis_dim(cu->dev, &n->type, ax, &a, &t, &b);
    return dim_is_static(b) && (dim_is_static(a) || dim_is_static(t))
               ? NULL : "dynamic sizes after the axis, or before and in it";
  }
  case OP_TOPK:
    return static_from(&n->in[0]->type, -1) ? NULL : "a dynamic row";
  case OP_ATTENTION: case OP_ATTENTION_BACKWARD: {
    /* a dynamic batch or dynamic lengths (heads, head_dim static) */
    rlx_attn_geom g = cg_attn_geometry(n);
    if (!dim_is_static(g.h) || !dim_is_static(g.d))
      return "dynamic heads or head_dim";
    return dim_is_static(g.b) || (dim_is_static(g.lq) &&
                                  dim_is_static(g.lk))
               ? NULL : "a dynamic batch and a dynamic length";
  }
  case OP_CONV2D: case OP_CONV2D_BACKWARD_INPUT:
  case OP_CONV2D_BACKWARD_WEIGHT: /* a batch: M or K of the GEMM */
  case OP_MAX_POOL2D: case OP_AVG_POOL2D: case OP_MAX_POOL2D_BACKWARD:
  case OP_AVG_POOL2D_BACKWARD: /* static planes */
    return lead_ok(n) ? NULL : "a dynamic size outside axis 0 (the batch)";
  case OP_FFT: return cu_fft_dyn(cu, p, n);
  case OP_SELECTIVE_SCAN: case OP_GATED_DELTA_NET: case OP_LOG_MEL:
  case OP_LOG_MEL_BACKWARD: return cu_seq_dyn(cu, p, n);
  case OP_Q_MATMUL: case OP_DEQUANT_MATMUL: case OP_Q_CONV2D:
  case OP_GROUPED_MATMUL:
  case OP_GROUPED_MATMUL_BACKWARD_WEIGHT: case OP_DENSE_SOLVE:
  case OP_BATCHED_DENSE_SOLVE: return cu_quant_dyn(cu, p, n);
  default: return CU_STATIC_ONLY;
  }
}

int64_t cu_scratch(Cu *cu, const CgPlan *p, const Node *n) {
  switch (n->op) {
  case OP_SCAN: case OP_IF: case OP_WHILE: case OP_CUSTOM_FN:
    return cu_control_scratch(cu, p, n);
  case OP_MATMUL: case OP_DEQUANT_MATMUL: case OP_Q_MATMUL:
    return p->slot[n->id].kind == CG_SLOT_NONE ||
                   p->slot[n->id].kind == CG_SLOT_EPI
               ? cu_matmul_scratch(cu, p, n) : 0;
  case OP_SAMPLE: return cu_sample_scratch(cu->dev->ctx, n);
  case OP_ATTENTION_BACKWARD: return cu_attention_scratch(p, n);
  case OP_CONV2D: case OP_CONV2D_BACKWARD_INPUT:
  case OP_CONV2D_BACKWARD_WEIGHT: return cu_conv_scratch(cu, n);
  case OP_DENSE_SOLVE: case OP_BATCHED_DENSE_SOLVE:
    return cu_solve_scratch(cu, n);
  case OP_SELECTIVE_SCAN: case OP_GATED_DELTA_NET:
  case OP_LOG_MEL_BACKWARD: return cu_seq_scratch(cu, n);
  case OP_FFT: return cu_fft_scratch(cu, n);
  case OP_REDUCE_SUM: case OP_REDUCE_MEAN: case OP_REDUCE_MAX:
  case OP_REDUCE_MIN: case OP_REDUCE_PROD: {
    CuCol c;
    return col_view(cu, n, &c) ? cu_col_scratch(&c) : 0;
  }
  default: return cu_norm_scratch(cu, n); /* 0 but for a norm's _gamma */
  }
}

bool cu_emit_node(Cu *cu, CgPlan *p, Node *n) {
  CgSlotKind k = cg_plan_slot(p, n)->kind;
  if (cg_plan_elsewhere(p, n) || n->op == OP_INPUT || n->op == OP_PARAM)
    return true;
  if (n->op == OP_CONST) return k != CG_SLOT_WS || const_kernel(cu, p, n);
  if (k == CG_SLOT_NONE) return true;
  cu->dev->fn = NULL;
  if (cg_is_elementwise(n->op) || n->op == OP_EXPAND)
    return ew_kernel(cu, p, n);
  switch (n->op) {
  case OP_RELU_BACKWARD: return act_bwd_kernel(cu, p, n, "relu");
  case OP_ACTIVATION_BACKWARD:
    return act_bwd_kernel(cu, p, n, ir_attr_word(n, ATTR_KIND));
  case OP_REDUCE_SUM: case OP_REDUCE_MEAN: case OP_REDUCE_MAX:
  case OP_REDUCE_MIN: case OP_REDUCE_PROD: return reduce_kernel(cu, p, n);
  case OP_SOFTMAX: case OP_LOG_SOFTMAX: return softmax_kernel(cu, p, n);
  case OP_SOFTMAX_CROSS_ENTROPY: return xent_kernel(cu, p, n, false);
  case OP_SOFTMAX_CROSS_ENTROPY_BACKWARD: return xent_kernel(cu, p, n, true);
  case OP_MATMUL: return cu_matmul(cu, p, n);
  case OP_TRANSPOSE: return transpose_kernel(cu, p, n);
  case OP_NARROW: return narrow_kernel(cu, p, n);
  case OP_CONCAT: return concat_kernel(cu, p, n);
  case OP_GATHER: return gather_kernel(cu, p, n);
  case OP_CUMSUM: case OP_CUMSUM_BACKWARD: return cu_cumsum(cu, p, n);
  case OP_SCATTER_ADD: case OP_GATHER_BACKWARD: return cu_scatter(cu, p, n);
  case OP_TOPK: return cu_topk(cu, p, n);
  case OP_RNG_UNIFORM: case OP_RNG_NORMAL: return cu_rng(cu, p, n);
  case OP_SAMPLE: return cu_sample(cu, p, n);
  case OP_LAYER_NORM: case OP_RMS_NORM: case OP_GROUP_NORM:
  case OP_BATCH_NORM_INFERENCE: case OP_LAYER_NORM_BACKWARD_INPUT:
  case OP_LAYER_NORM_BACKWARD_GAMMA: case OP_RMS_NORM_BACKWARD_INPUT:
  case OP_RMS_NORM_BACKWARD_GAMMA: case OP_RMS_NORM_BACKWARD_BETA:
  case OP_GROUP_NORM_BACKWARD_INPUT: case OP_GROUP_NORM_BACKWARD_GAMMA:
  case OP_GROUP_NORM_BACKWARD_BETA:
  case OP_BATCH_NORM_INFERENCE_BACKWARD_INPUT:
  case OP_BATCH_NORM_INFERENCE_BACKWARD_GAMMA:
  case OP_BATCH_NORM_INFERENCE_BACKWARD_BETA: return cu_norm(cu, p, n);
  case OP_ATTENTION: case OP_ATTENTION_BACKWARD:
    return cu_attention(cu, p, n);
  case OP_ROPE: case OP_ROPE_BACKWARD: return cu_rope(cu, p, n);
  case OP_MAX_POOL2D: case OP_AVG_POOL2D: case OP_MAX_POOL2D_BACKWARD:
  case OP_AVG_POOL2D_BACKWARD: return cu_pool(cu, p, n);
  case OP_CONV2D: case OP_CONV2D_BACKWARD_INPUT:
  case OP_CONV2D_BACKWARD_WEIGHT: return cu_conv(cu, p, n);
  case OP_DEQUANT_MATMUL: return cu_dequant_matmul(cu, p, n);
  case OP_Q_MATMUL: return cu_q_matmul(cu, p, n);
  case OP_Q_CONV2D: case OP_GROUPED_MATMUL:
  case OP_GROUPED_MATMUL_BACKWARD_WEIGHT:
  case OP_DENSE_SOLVE: case OP_BATCHED_DENSE_SOLVE: return cu_quant(cu, p, n);
  case OP_SCAN: case OP_IF: case OP_WHILE: case OP_CUSTOM_FN:
    return cu_control(cu, p, n);
  case OP_SELECTIVE_SCAN: case OP_GATED_DELTA_NET: return cu_ssm(cu, p, n);
  case OP_LOG_MEL: case OP_LOG_MEL_BACKWARD: return cu_log_mel(cu, p, n);
  case OP_FFT: return cu_fft(cu, p, n);
  default: return cu_unsupported(cu, n, NULL);
  }
}
