/* backward.c: closed-form backward ops used by autodiff:
 * relu_backward(x, dy), activation_backward(x, dy, kind=K),
 * softmax_cross_entropy_backward(logits, labels, dloss),
 * cumsum_backward(dy) and gather_backward(dy, indices).
 *
 * Elementwise backward ops compute dy * f'(x) per element in the
 * compute type (f16/bf16 in f32, rounded on store); dy may broadcast to
 * x's shape. relu'(0) = abs'(0) = 0 (language.md 6.1); relu_backward
 * selects (x > 0 ? dy : 0), so a NaN dy where x <= 0 gives 0 like
 * PyTorch's threshold_backward.
 * cumsum_backward is the reverse (suffix) sum, excluding the element
 * itself when exclusive; gather_backward scatter-adds dy into zeros of
 * the table's shape (deterministic, see data.c).
 *
 * Entry points: cg_emit_relu_backward, cg_emit_activation_backward,
 * cg_emit_softmax_xent_backward, cg_emit_cumsum_backward,
 * cg_emit_gather_backward; cg_act_grad (the per-element math, which the
 * GPU target's kernel shares) and cg_act_kind_known.
 */
#include "codegen/emit/emit.h"

#include <string.h>

typedef LLVMValueRef (*GradFn)(Cg *cg, const char *kind, LLVMValueRef x,
                               LLVMValueRef dy);

/* Constant v of like's type (scalar or vector). */
static LLVMValueRef C(LLVMValueRef like, double v) {
  LLVMTypeRef t = LLVMTypeOf(like);
  if (LLVMGetTypeKind(t) != LLVMVectorTypeKind) return LLVMConstReal(t, v);
  LLVMValueRef e[64], s = LLVMConstReal(LLVMGetElementType(t), v);
  unsigned n = LLVMGetVectorSize(t);
  for (unsigned i = 0; i < n; i++) e[i] = s;
  return LLVMConstVector(e, n);
}

static LLVMValueRef fmul(Cg *cg, LLVMValueRef a, LLVMValueRef b) {
  return LLVMBuildFMul(cg->b, a, b, "");
}

static LLVMValueRef fadd(Cg *cg, LLVMValueRef a, LLVMValueRef b) {
  return LLVMBuildFAdd(cg->b, a, b, "");
}

static LLVMValueRef fsub(Cg *cg, LLVMValueRef a, LLVMValueRef b) {
  return LLVMBuildFSub(cg->b, a, b, "");
}

static LLVMValueRef fdiv(Cg *cg, LLVMValueRef a, LLVMValueRef b) {
  return LLVMBuildFDiv(cg->b, a, b, "");
}

static LLVMValueRef intr(Cg *cg, const char *name, LLVMValueRef x) {
  return cg_intrinsic(cg, name, LLVMTypeOf(x), &x, 1);
}

static LLVMValueRef sigmoid(Cg *cg, LLVMValueRef x) {
  LLVMValueRef e = cg_ops_exp(cg, LLVMBuildFNeg(cg->b, x, ""));
  return fdiv(cg, C(x, 1), fadd(cg, C(x, 1), e));
}

static LLVMValueRef gelu_d(Cg *cg, LLVMValueRef x) {
  LLVMValueRef cdf = cg_ops_erf(cg, fmul(cg, x, C(x, 0.7071067811865475)));
  cdf = fmul(cg, C(x, 0.5), fadd(cg, C(x, 1), cdf));
  LLVMValueRef pdf = cg_ops_exp(cg, fmul(cg, C(x, -0.5), fmul(cg, x, x)));
  pdf = fmul(cg, pdf, C(x, 0.39894228040143267794));
  return fadd(cg, cdf, fmul(cg, x, pdf));
}

/* With s = 1 / (1 + exp(−2u)) = ½(1 + tanh u), u = k(x + a x³):
 * d/dx (x s) = s + x s (1 − s) 2u′ (one exp, one division; 0 where
 * the forward is, cg_gelu_tanh_exp). */
static LLVMValueRef gelu_tanh_d(Cg *cg, LLVMValueRef x) {
  const double k = 0.79788456080286535588, a = 0.044715;
  LLVMValueRef hi, e = cg_gelu_tanh_exp(cg, x, &hi);
  LLVMValueRef s = fdiv(cg, C(x, 1), fadd(cg, C(x, 1), e));
  LLVMValueRef du = fmul(cg, C(x, 2 * k), fadd(cg, C(x, 1),
                                               fmul(cg, C(x, 3 * a),
                                                    fmul(cg, x, x))));
  LLVMValueRef t = fmul(cg, fmul(cg, x, s), fsub(cg, C(x, 1), s));
  return LLVMBuildSelect(cg->b, hi, C(x, 0), fadd(cg, s, fmul(cg, t, du)),
                         "");
}

static LLVMValueRef sel(Cg *cg, LLVMRealPredicate p, LLVMValueRef x,
                        LLVMValueRef a, LLVMValueRef b) {
  LLVMValueRef c = LLVMBuildFCmp(cg->b, p, x, C(x, 0), "");
  return LLVMBuildSelect(cg->b, c, a, b, "");
}

/* f'(x) for activation kind k. */
static LLVMValueRef deriv(Cg *cg, const char *k, LLVMValueRef x) {
  if (!strcmp(k, "relu")) return sel(cg, LLVMRealOGT, x, C(x, 1), C(x, 0));
  if (!strcmp(k, "gelu")) return gelu_d(cg, x);
  if (!strcmp(k, "gelu_tanh")) return gelu_tanh_d(cg, x);
  if (!strcmp(k, "silu")) {
    LLVMValueRef s = sigmoid(cg, x);
    return fmul(cg, s, fadd(cg, C(x, 1), fmul(cg, x, fsub(cg, C(x, 1), s))));
  }
  if (!strcmp(k, "sigmoid")) {
    LLVMValueRef s = sigmoid(cg, x);
    return fmul(cg, s, fsub(cg, C(x, 1), s));
  }
  if (!strcmp(k, "tanh")) {
    LLVMValueRef t = cg_ops_tanh(cg, x);
    return fsub(cg, C(x, 1), fmul(cg, t, t));
  }
  if (!strcmp(k, "exp")) return cg_ops_exp(cg, x);
  if (!strcmp(k, "log")) return fdiv(cg, C(x, 1), x);
  if (!strcmp(k, "sqrt")) return fdiv(cg, C(x, 0.5), intr(cg, "llvm.sqrt", x));
  if (!strcmp(k, "rsqrt"))
    return fdiv(cg, C(x, -0.5), fmul(cg, x, intr(cg, "llvm.sqrt", x)));
  if (!strcmp(k, "neg")) return C(x, -1);
  if (!strcmp(k, "abs"))
    return sel(cg, LLVMRealOGT, x, C(x, 1),
               sel(cg, LLVMRealOLT, x, C(x, -1), C(x, 0)));
  if (!strcmp(k, "sin")) return intr(cg, "llvm.cos", x);
  if (!strcmp(k, "cos"))
    return LLVMBuildFNeg(cg->b, intr(cg, "llvm.sin", x), "");
  if (!strcmp(k, "tan")) {
    LLVMValueRef t = cg_ops_libm(cg, "tan", x);
    return fadd(cg, C(x, 1), fmul(cg, t, t));
  }
  if (!strcmp(k, "atan"))
    return fdiv(cg, C(x, 1), fadd(cg, C(x, 1), fmul(cg, x, x)));
  return NULL;
}

bool cg_act_kind_known(const char *k) {
  static const char *const kinds[] = {
      "relu", "gelu", "gelu_tanh", "silu", "sigmoid", "tanh", "exp", "log",
      "sqrt", "rsqrt", "neg", "abs", "sin", "cos", "tan", "atan"};
  for (size_t i = 0; i < sizeof kinds / sizeof *kinds; i++)
    if (!strcmp(k, kinds[i])) return true;
  return false;
}

/* dy's flat offset for output flat index i (dy broadcasts to x). */
static LLVMValueRef bcast_off(Cg *cg, const Type *out, const Type *in,
                              LLVMValueRef i) {
  int64_t s[RLX_MAX_RANK];
  cg_bcast_strides(in, out, s);
  LLVMValueRef off = cg_i64(cg, 0), rem = i;
  for (int d = out->rank - 1; d >= 0; d--) {
    LLVMValueRef sz = cg_i64(cg, out->dims[d]);
    LLVMValueRef id = LLVMBuildSRem(cg->b, rem, sz, "");
    rem = LLVMBuildSDiv(cg->b, rem, sz, "");
    if (s[d])
      off = LLVMBuildNSWAdd(cg->b, off,
                            LLVMBuildNSWMul(cg->b, id, cg_i64(cg, s[d]), ""),
                            "");
  }
  return off;
}

LLVMValueRef cg_act_grad(Cg *cg, const char *kind, LLVMValueRef x,
                         LLVMValueRef dy) {
  if (!strcmp(kind, "relu")) return sel(cg, LLVMRealOGT, x, dy, C(x, 0));
  return fmul(cg, dy, deriv(cg, kind, x));
}

typedef struct {
  const char *kind;
  DType dt;
  LLVMValueRef dy; /* body copy */
} ActMap;

static LLVMValueRef act_map(Cg *cg, LLVMValueRef x, LLVMValueRef idx,
                            int lanes, void *ctx) {
  ActMap *A = ctx;
  LLVMValueRef dy = cg_ops_vload(cg, A->dt, A->dy, idx, lanes);
  return cg_act_grad(cg, A->kind, x, dy);
}

#define ACT_BLOCK 4096

/* Lanes factor of the block loops: f32 derivatives built on exp
 * (cg_exp_chain) take four vector registers a step (the AVX2 gelu_tanh
 * backward runs 1.2x faster than with two), others the usual two. */
static int act_wide(const char *kind, DType dt) {
  return dt == DT_F32 && cg_exp_chain(op_lookup(kind)) ? 2 : 1;
}

/* Same shapes: blocks of ACT_BLOCK elements in parallel, each a vector
 * loop (cg_ops_row_map), then the remainder. */
static void act_blocks(Cg *cg, Node *n, const char *kind, int64_t numel) {
  DType dt = n->type.dt;
  int64_t nblk = numel / ACT_BLOCK, rest = numel - nblk * ACT_BLOCK;
  LLVMValueRef vals[3] = {cg_buf(cg, n), cg_buf(cg, n->in[0]),
                          cg_buf(cg, n->in[1])};
  ActMap A = {kind, dt, vals[2]};
  if (nblk > 0) {
    CgPar par;
    LLVMValueRef u = cg_par_begin(cg, &par, cg_i64(cg, nblk),
                                  cg_grain(nblk, 8 * ACT_BLOCK), vals, 3,
                                  true);
    A.dy = vals[2];
    cg_ops_row_map_wide(cg, dt, vals[0], vals[1],
                        LLVMBuildNSWMul(cg->b, u, cg_i64(cg, ACT_BLOCK), ""),
                        ACT_BLOCK, act_wide(kind, dt), act_map, &A);
    cg_par_end(cg, &par);
  }
  if (rest > 0) { /* a body too: the graph function stays loop-free */
    LLVMValueRef p[3] = {cg_buf(cg, n), cg_buf(cg, n->in[0]),
                         cg_buf(cg, n->in[1])};
    CgPar par;
    cg_par_begin(cg, &par, cg_i64(cg, 1), 0, p, 3, true);
    A.dy = p[2];
    cg_ops_row_map(cg, dt, p[0], p[1], cg_i64(cg, nblk * ACT_BLOCK), rest,
                   act_map, &A);
    cg_par_end(cg, &par);
  }
}

/* Dynamic sizes (act_dyn: x and dy of one type): ACT_BLOCK blocks in
 * parallel, then the run-time remainder in one scalar body. */
static void act_blocks_dyn(Cg *cg, Node *n, const char *kind) {
  DType dt = n->type.dt;
  LLVMValueRef vals[3] = {cg_buf(cg, n), cg_buf(cg, n->in[0]),
                          cg_buf(cg, n->in[1])};
  ActMap A = {kind, dt, vals[2]};
  LLVMValueRef numel = cg_numel(cg, &n->type);
  LLVMValueRef nblk = LLVMBuildUDiv(cg->b, numel, cg_i64(cg, ACT_BLOCK), "");
  int64_t bound = type_bytes_bound(&n->type) / dt_size(dt);
  CgPar par;
  LLVMValueRef u = cg_par_begin(cg, &par, nblk,
                                cg_grain(bound / ACT_BLOCK, 8 * ACT_BLOCK),
                                vals, 3, true);
  A.dy = vals[2];
  cg_ops_row_map_wide(cg, dt, vals[0], vals[1],
                      LLVMBuildNSWMul(cg->b, u, cg_i64(cg, ACT_BLOCK), ""),
                      ACT_BLOCK, act_wide(kind, dt), act_map, &A);
  cg_par_end(cg, &par);
  LLVMValueRef p[3] = {cg_buf(cg, n), cg_buf(cg, n->in[0]),
                       cg_buf(cg, n->in[1])};
  cg_par_begin(cg, &par, cg_i64(cg, 1), 0, p, 3, true);
  LLVMValueRef total = cg_numel(cg, &n->type);
  CgLoop l;
  LLVMValueRef i = cg_loop_begin(
      cg, &l,
      LLVMBuildNSWMul(cg->b,
                      LLVMBuildUDiv(cg->b, total, cg_i64(cg, ACT_BLOCK), ""),
                      cg_i64(cg, ACT_BLOCK), ""),
      total, NULL, 0);
  cg_store(cg, dt, p[0], i,
           cg_act_grad(cg, kind, cg_load(cg, dt, p[1], i),
                    cg_load(cg, dt, p[2], i)));
  cg_loop_end(cg, &l, NULL);
  cg_par_end(cg, &par);
}

static bool emit_act_bwd(Cg *cg, Node *n, const char *kind) {
  DType dt = n->type.dt;
  if (!dt_is_float(dt))
    return cg_unsupported(cg, n, "backward of a non-float dtype");
  if (n->in[1]->type.dt != dt)
    return cg_unsupported(cg, n, "x and dy dtypes differ");
  if (!type_is_static(&n->type)) {
    act_blocks_dyn(cg, n, kind);
    return true;
  }
  int64_t numel = type_numel(&n->type);
  if (numel == 0) return true;
  if (type_eq(&n->type, &n->in[1]->type)) {
    act_blocks(cg, n, kind, numel);
    return true;
  }
  LLVMValueRef vals[3] = {cg_buf(cg, n), cg_buf(cg, n->in[0]),
                          cg_buf(cg, n->in[1])};
  CgPar par;
  LLVMValueRef i = cg_par_begin(cg, &par, cg_i64(cg, numel),
                                cg_grain(numel, 8), vals, 3, true);
  LLVMValueRef x = cg_load(cg, dt, vals[1], i);
  LLVMValueRef di = bcast_off(cg, &n->type, &n->in[1]->type, i);
  cg_store(cg, dt, vals[0], i,
           cg_act_grad(cg, kind, x, cg_load(cg, dt, vals[2], di)));
  cg_par_end(cg, &par);
  return true;
}

static bool cg_emit_relu_backward(Cg *cg, Node *n) {
  return emit_act_bwd(cg, n, "relu");
}

static bool cg_emit_activation_backward(Cg *cg, Node *n) {
  const char *k = ir_attr_word(n, ATTR_KIND);
  if (!k || !cg_act_kind_known(k))
    return cg_unsupported(cg, n, "unknown activation kind");
  return emit_act_bwd(cg, n, k);
}

/* ---- softmax_cross_entropy_backward ---- */

typedef struct {
  DType dt;
  LLVMValueRef m, s, g, hot; /* hot: flat index of the label element */
} XentB;

static LLVMValueRef lane_ids(Cg *cg, LLVMValueRef idx, int lanes) {
  if (lanes <= 1) return idx;
  LLVMValueRef c[64];
  for (int i = 0; i < lanes; i++) c[i] = cg_i64(cg, i);
  return LLVMBuildAdd(cg->b, cg_ops_splat(cg, idx, lanes),
                      LLVMConstVector(c, (unsigned)lanes), "");
}

static LLVMValueRef xent_grad(Cg *cg, LLVMValueRef x, LLVMValueRef idx,
                              int lanes, void *ctx) {
  XentB *X = ctx;
  LLVMValueRef m = cg_ops_splat(cg, X->m, lanes);
  LLVMValueRef p = fdiv(cg, cg_ops_exp(cg, fsub(cg, x, m)),
                        cg_ops_splat(cg, X->s, lanes));
  LLVMValueRef eq = LLVMBuildICmp(cg->b, LLVMIntEQ, lane_ids(cg, idx, lanes),
                                  cg_ops_splat(cg, X->hot, lanes), "");
  LLVMValueRef one = cg_ops_splat(cg, cg_const(cg, X->dt, 1), lanes);
  p = LLVMBuildSelect(cg->b, eq, fsub(cg, p, one), p, "");
  return fmul(cg, p, cg_ops_splat(cg, X->g, lanes));
}

static bool cg_emit_softmax_xent_backward(Cg *cg, Node *n) {
  DType dt = n->type.dt;
  if (!dt_is_float(dt))
    return cg_unsupported(cg, n, "logits must be a float dtype");
  if (!cg_ops_index_dtype_ok(n->in[1]->type.dt))
    return cg_unsupported(cg, n, "labels must be i32, i64 or f32");
  const Type *dl = &n->in[2]->type;
  int64_t N = n->in[0]->type.dims[0];
  if (dl->dt != dt || (type_is_static(dl) ? type_numel(dl) != N
                                          : dl->rank != 1 || dl->dims[0] != N))
    return cg_unsupported(cg, n, "dloss must be [N] of the logits dtype");
  int64_t rows = n->type.dims[0], c = n->type.dims[1];
  if (rows == 0 || c == 0) return true;
  LLVMValueRef vals[4] = {cg_buf(cg, n), cg_buf(cg, n->in[0]),
                          cg_buf(cg, n->in[1]), cg_buf(cg, n->in[2])};
  CgPar par;
  LLVMValueRef r = cg_par_begin(cg, &par, cg_dim(cg, rows),
                                cg_grain(dim_bound(rows), 3 * c), vals, 4,
                                true);
  XentRow R;
  cg_ops_xent_row(cg, n, vals, r, &R);
  XentB X = {dt, R.m, R.s, cg_load(cg, dt, vals[3], r),
             LLVMBuildNSWAdd(cg->b, R.off, R.lab, "")};
  cg_ops_row_map(cg, dt, vals[0], vals[1], R.off, c, xent_grad, &X);
  cg_par_end(cg, &par);
  return true;
}

/* ---- cumsum_backward, gather_backward ---- */

static bool cg_emit_cumsum_backward(Cg *cg, Node *n) {
  return cg_ops_cumsum(cg, n, true);
}

static bool cg_emit_gather_backward(Cg *cg, Node *n) {
  int64_t a, t, b; /* sizes: a and t may be dynamic (gather_dyn) */
  cg_split_axis_dim(cg, &n->type, ir_attr_int(n, ATTR_AXIS, 0), &a, &t, &b);
  return cg_ops_scatter(cg, n, n->in[0], n->in[1], a, t, b);
}

/* Dynamic sizes in any axis: a flat loop over x and dy of one type. */
static const char *act_dyn(const Node *n) {
  return type_eq(&n->type, &n->in[1]->type) ? NULL : "dy broadcast to x";
}

static const char *xent_bwd_dyn(const Node *n) {
  return cg_dyn_leading(&n->type) ? NULL : "a dynamic number of classes";
}

const CgEmitter cg_emitter_relu_backward = {cg_emit_relu_backward, NULL,
                                            act_dyn};
const CgEmitter cg_emitter_activation_backward = {cg_emit_activation_backward,
                                                  NULL, act_dyn};
const CgEmitter cg_emitter_cumsum_backward = {cg_emit_cumsum_backward, NULL,
                                                cg_cum_dyn};
static const char *gather_bwd_dyn(const Node *n) {
  return cg_emitter_gather.dyn(n);
}

const CgEmitter cg_emitter_gather_backward = {cg_emit_gather_backward, NULL,
                                              gather_bwd_dyn};
const CgEmitter cg_emitter_softmax_xent_backward = {
    cg_emit_softmax_xent_backward, NULL, xent_bwd_dyn};
