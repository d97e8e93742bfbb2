/* emit_ops.h: emitters of the codegen-ops files (emit_reduce.c,
 * emit_data.c, emit_control.c, emit_backward.c) and the helpers they
 * share (ops_util.c). Included by emit_table_ops.h.
 *
 * Conventions of the helpers: element offsets and counts are i64 LLVM
 * values unless named *_c (compile-time int64_t). "lanes" is a vector
 * width in elements: 1 means scalar code in the dtype's compute type
 * (cg_load/cg_store, so f16/bf16/bool work), >1 means native vectors,
 * only for f32/f64/integer storage types (see cg_ops_lanes).
 */
#ifndef RLX_EMIT_OPS_H
#define RLX_EMIT_OPS_H

#include "codegen/cg.h"
#include "runtime/rlxrt.h"

/* ---- emitters (table entries) ---- */
bool cg_emit_reduce(Cg *cg, Node *n);
int64_t cg_scratch_reduce(Cg *cg, Node *n);
bool cg_emit_softmax(Cg *cg, Node *n);
int64_t cg_scratch_softmax(Cg *cg, Node *n);
bool cg_emit_cumsum(Cg *cg, Node *n);
bool cg_emit_softmax_xent(Cg *cg, Node *n);
bool cg_emit_topk(Cg *cg, Node *n);
bool cg_emit_transpose(Cg *cg, Node *n);
bool cg_emit_expand(Cg *cg, Node *n);
bool cg_emit_concat(Cg *cg, Node *n);
bool cg_emit_narrow(Cg *cg, Node *n);
bool cg_emit_gather(Cg *cg, Node *n);
bool cg_emit_scatter_add(Cg *cg, Node *n);
bool cg_emit_scan(Cg *cg, Node *n);
int64_t cg_scratch_scan(Cg *cg, Node *n);
bool cg_emit_if(Cg *cg, Node *n);
int64_t cg_scratch_if(Cg *cg, Node *n);
bool cg_emit_while(Cg *cg, Node *n);
int64_t cg_scratch_while(Cg *cg, Node *n);
bool cg_emit_custom_fn(Cg *cg, Node *n);
int64_t cg_scratch_custom_fn(Cg *cg, Node *n);
bool cg_emit_ssm(Cg *cg, Node *n); /* selective_scan, gated_delta_net */
int64_t cg_scratch_ssm(Cg *cg, Node *n);
bool cg_emit_relu_backward(Cg *cg, Node *n);
bool cg_emit_activation_backward(Cg *cg, Node *n);
bool cg_emit_softmax_xent_backward(Cg *cg, Node *n);
bool cg_emit_cumsum_backward(Cg *cg, Node *n);
bool cg_emit_gather_backward(Cg *cg, Node *n);
/* layer_norm, rms_norm, group_norm, batch_norm_inference and their
 * backward ops (emit_norm.c) */
bool cg_emit_norm(Cg *cg, Node *n);       /* forward, *_backward_input */
bool cg_emit_norm_param(Cg *cg, Node *n); /* *_backward_gamma/beta */
int64_t cg_scratch_norm(Cg *cg, Node *n);
/* rope and rope_backward (emit_rope.c) */
bool cg_emit_rope(Cg *cg, Node *n);
bool cg_emit_pool(Cg *cg, Node *n);
/* conv2d and its backward ops: one runtime call each (emit_conv.c) */
bool cg_emit_conv(Cg *cg, Node *n);
int64_t cg_scratch_conv(Cg *cg, Node *n);
/* The geometry of a conv node and its private constant global of 16
   i64 (also q_conv2d's). */
rlx_conv_geom cg_conv_geometry(const Node *n);
LLVMValueRef cg_conv_geometry_global(Cg *cg, const rlx_conv_geom *g);
/* q_matmul, q_conv2d: one runtime call each (emit_qgemm.c) */
bool cg_emit_qgemm(Cg *cg, Node *n);
int64_t cg_scratch_qgemm(Cg *cg, Node *n);

/* ---- shared helpers (ops_util.c) ---- */
typedef enum { CG_RED_SUM, CG_RED_PROD, CG_RED_MAX, CG_RED_MIN } CgRed;

/* Vector width used for dt's contiguous loops (1: scalar only). */
int cg_ops_lanes(Cg *cg, DType dt);
/* Compute type of dt with `lanes` lanes. */
LLVMTypeRef cg_ops_vtype(Cg *cg, DType dt, int lanes);
LLVMValueRef cg_ops_splat(Cg *cg, LLVMValueRef s, int lanes);
LLVMValueRef cg_ops_vload(Cg *cg, DType dt, LLVMValueRef base,
                          LLVMValueRef idx, int lanes);
void cg_ops_vstore(Cg *cg, DType dt, LLVMValueRef base, LLVMValueRef idx,
                   LLVMValueRef v, int lanes);
/* Identity element of a reduction (compute type, scalar). */
LLVMValueRef cg_ops_red_init(Cg *cg, DType dt, CgRed r);
/* a (+ * max min) b, scalars or vectors of dt's compute type. Float
 * max/min propagate NaN (NumPy). */
LLVMValueRef cg_ops_combine(Cg *cg, DType dt, CgRed r, LLVMValueRef a,
                            LLVMValueRef b);
/* Fold the lanes of v in a fixed tree order. */
LLVMValueRef cg_ops_hfold(Cg *cg, DType dt, CgRed r, LLVMValueRef v);

/* Per-element hook: value x (lanes wide) at element index idx. */
typedef LLVMValueRef (*CgOpsMapFn)(Cg *cg, LLVMValueRef x, LLVMValueRef idx,
                                   int lanes, void *ctx);
/* Fold f(base[off + j]) for j in [0, n_c) with r, starting from init
 * (scalar): vector partial accumulators then a scalar tail, always in
 * the same order. f may be NULL (identity). */
LLVMValueRef cg_ops_row_fold(Cg *cg, DType dt, CgRed r, LLVMValueRef base,
                             LLVMValueRef off, int64_t n_c,
                             LLVMValueRef init, CgOpsMapFn f, void *ctx);
/* The same with k (1, 2, 4 or 8) vector accumulators, vector j into
 * j % k, combined pairwise (fewer for short rows): more throughput on
 * long rows, another fixed order. */
LLVMValueRef cg_ops_row_fold_k(Cg *cg, DType dt, CgRed r, LLVMValueRef base,
                               LLVMValueRef off, int64_t n_c,
                               LLVMValueRef init, CgOpsMapFn f, void *ctx,
                               int k);
/* dst[off + j] = f(src[off + j]) for j in [0, n_c) (vectorized). */
void cg_ops_row_map(Cg *cg, DType dt, LLVMValueRef dst, LLVMValueRef src,
                    LLVMValueRef off, int64_t n_c, CgOpsMapFn f, void *ctx);

/* exp / log / other unary libm functions on scalars or vectors of f32
 * or f64 (intrinsics; vectors are expanded by LLVM). */
LLVMValueRef cg_ops_exp(Cg *cg, LLVMValueRef v);
LLVMValueRef cg_ops_log(Cg *cg, LLVMValueRef v);
/* libm call by base name ("tanh", "erf", ...) on a float/double scalar
 * (the float variant gets the 'f' suffix) or per lane of a vector. */
LLVMValueRef cg_ops_libm(Cg *cg, const char *name, LLVMValueRef v);
/* tanh / erf: libm, except f32 vectors: straight-line approximations
 * (absolute error ~1e-7) so that loops stay vectorized. */
LLVMValueRef cg_ops_tanh(Cg *cg, LLVMValueRef v);
LLVMValueRef cg_ops_erf(Cg *cg, LLVMValueRef v);

/* Load index element i of an index buffer (i32, i64, or f32/f64 with
 * integral values), check 0 <= v < bound (else RLX_ERR_INDEX; a
 * non-integral or NaN float index is out of range too) and return it
 * as i64. */
LLVMValueRef cg_ops_index(Cg *cg, DType dt, LLVMValueRef base,
                          LLVMValueRef i, int64_t bound_c);
bool cg_ops_index_dtype_ok(DType dt);

/* Strided copy: dst[sum i_d*dst_str[d]] = src[sum i_d*src_str[d]] for
 * every multi-index below dims (element strides, offsets in elements),
 * elements of esize bytes. Dims are canonicalized (size-1 dims dropped,
 * contiguous neighbours merged) and the outer loop runs in parallel. */
typedef struct {
  int rank;
  int64_t dims[RLX_MAX_RANK];
  int64_t dst_str[RLX_MAX_RANK], src_str[RLX_MAX_RANK];
  int64_t dst_off, src_off;
} CgCopy;
void cg_ops_copy(Cg *cg, const CgCopy *c, LLVMValueRef dst,
                 LLVMValueRef src, int esize);
/* Integer type of `esize` bytes (1, 2, 4, 8). */
LLVMTypeRef cg_ops_bits_type(Cg *cg, int esize);

/* [outer, n, inner] view around axis (negative counts from the end). */
void cg_ops_split_axis(const Type *t, int64_t axis, int64_t *outer,
                       int64_t *n, int64_t *inner);
/* Is dt a real float type (f32 f64 f16 bf16)? */
bool cg_ops_is_real(DType dt);

/* Column driver: for each o in [0, outer) and each lane group of
 * [0, inner), calls body(lanes, base) where base = o*n*inner + i0, so
 * the body visits elements base + j*inner, j in [0, n). Groups use
 * wide * cg_ops_lanes(dt) lanes (wide > 1: fewer, wider column strips,
 * whose rows are longer contiguous reads with independent accumulators),
 * then cg_ops_lanes(dt), the rest scalar. Runs in parallel over
 * independent (o, group) units. vals (pointers) are passed to the
 * outlined body and replaced by its copies, as in cg_par_begin. */
typedef void (*CgOpsColFn)(Cg *cg, int lanes, LLVMValueRef base,
                           LLVMValueRef *vals, void *ctx);
void cg_ops_cols(Cg *cg, DType dt, int64_t outer, int64_t n, int64_t inner,
                 int wide, LLVMValueRef *vals, int nv, CgOpsColFn body,
                 void *ctx);

/* A private, unnamed-address constant global holding init (8-aligned):
 * the geometry structs of runtime calls (conv, attention). */
LLVMValueRef cg_ops_const_global(Cg *cg, LLVMValueRef init, const char *name);

/* cumsum kernel of node n (axis, exclusive attrs); rev: suffix sums
 * (cumsum_backward). emit_reduce.c. */
bool cg_ops_cumsum(Cg *cg, Node *n, bool rev);
/* Per row r of logits [N, C] (n->in[0]; labels n->in[1]); vals are
 * {out, logits, labels} body pointers: label (checked), row offset,
 * max m and sum s of exp(x - m). emit_reduce.c. */
typedef struct {
  LLVMValueRef lab, off, m, s;
} XentRow;
void cg_ops_xent_row(Cg *cg, Node *n, LLVMValueRef *vals, LLVMValueRef r,
                     XentRow *X);
/* Scatter-add kernel: out [A, T, B] = 0, then for a, i in order:
 * out[a, idx[i], :] += upd[a, i, :] (upd [A, I, B]). emit_data.c. */
bool cg_ops_scatter(Cg *cg, Node *n, Node *upd, Node *idx, int64_t a_c,
                    int64_t t_c, int64_t b_c);

#endif
