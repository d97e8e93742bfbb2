/* data.c: data movement: transpose, expand, concat, narrow (all
 * strided copies through cg_ops_copy), gather (NumPy take) and
 * scatter_add (also the kernel of gather_backward).
 *
 * Copies move raw element bits (any dtype, c64 included). Index
 * operands may be i32, i64 or f32 with integral values; every index is
 * checked before the memory it selects is touched: an index outside
 * [0, size) -- negative indices included, they do NOT wrap as in
 * NumPy -- makes the entry point return RLX_ERR_INDEX (see
 * docs/decisions-codegen.md).
 *
 * scatter_add is deterministic: each output element receives its
 * updates in increasing update order; parallel units split the
 * independent trailing (column) range, never the update list.
 *
 * Entry points: cg_emit_transpose, cg_emit_expand, cg_emit_concat,
 * cg_emit_narrow, cg_emit_gather, cg_emit_scatter_add, cg_ops_scatter.
 */
#include "codegen/emit/emit.h"

static void copy_init(Cg *cg, CgCopy *c, const Type *out) {
  c->rank = out->rank;
  c->dst_off = c->src_off = 0;
  for (int i = 0; i < out->rank; i++) c->dims[i] = out->dims[i];
  cg_strides_dim(cg, out, c->dst_str);
}

static bool cg_emit_transpose(Cg *cg, Node *n) {
  int k;
  const int64_t *perm = ir_attr_ints(n, ATTR_PERM, &k);
  const Type *in = &n->in[0]->type;
  if (!perm || k != in->rank)
    return cg_unsupported(cg, n, "perm does not match the rank");
  CgCopy c;
  copy_init(cg, &c, &n->type);
  int64_t s[RLX_MAX_RANK];
  cg_strides_dim(cg, in, s); /* sizes: dynamic ones read at run time */
  for (int i = 0; i < k; i++) c.src_str[i] = s[ir_norm_axis(perm[i], k)];
  cg_ops_copy(cg, &c, cg_buf(cg, n), cg_buf(cg, n->in[0]),
              dt_size(n->type.dt));
  return true;
}

static bool cg_emit_expand(Cg *cg, Node *n) {
  if (!type_is_static(&n->type)) /* a broadcast loop, like a fused one */
    return cg_emitter_elementwise.emit(cg, n);
  CgCopy c;
  copy_init(cg, &c, &n->type);
  cg_bcast_strides(&n->in[0]->type, &n->type, c.src_str);
  cg_ops_copy(cg, &c, cg_buf(cg, n), cg_buf(cg, n->in[0]),
              dt_size(n->type.dt));
  return true;
}

/* out[o, off + j] = in[o, j] for j < len (2-D views, in elements) */
static void copy_rows(Cg *cg, LLVMValueRef dst, LLVMValueRef src,
                      int64_t rows, int64_t len, int64_t dst_row,
                      int64_t src_row, int64_t dst_off, int64_t src_off,
                      int esize) {
  CgCopy c = {.rank = 2, .dims = {rows, len}, .dst_str = {dst_row, 1},
              .src_str = {src_row, 1}, .dst_off = dst_off,
              .src_off = src_off};
  cg_ops_copy(cg, &c, dst, src, esize);
}

/* A concat / narrow with dynamic sizes: t split at axis into the rows
 * of the axes before it (pre, a count read at run time) and the
 * elements after it (inner, a size expression). */
typedef struct {
  Type pre;
  int64_t inner;
  int esize;
} DynRows;

static bool dyn_rows(Cg *cg, const Node *n, const Type *t, int axis,
                     DynRows *r) {
  bool dyn = !type_is_static(&n->type);
  for (int i = 0; i < n->nin; i++) dyn |= !type_is_static(&n->in[i]->type);
  if (!dyn) return false;
  r->pre = *t;
  r->pre.rank = axis;
  r->inner = 1;
  r->esize = dt_size(t->dt);
  for (int d = axis + 1; d < t->rank; d++) {
    DimStatus st = dim_mul(cg->ctx, r->inner, t->dims[d], &r->inner);
    RLX_ASSERT(st == DIM_OK); /* a factor of t's element count */
  }
  return true;
}

/* dst[o, dst_at + j] = src[o, src_at + j] for j < len, rows of dst_len
 * and src_len, all sizes along the axis in units of r->inner elements,
 * o over r->pre's rows (sizes read at run time, in the parallel body). */
static void copy_rows_dyn(Cg *cg, const DynRows *r, LLVMValueRef dst,
                          LLVMValueRef src, int64_t len, int64_t dst_len,
                          int64_t src_len, int64_t dst_at, int64_t src_at) {
  int64_t bound = type_bytes_bound(&r->pre) / dt_size(r->pre.dt);
  LLVMTypeRef et = cg_ops_bits_type(cg, r->esize);
  LLVMValueRef p[2] = {dst, src};
  CgPar par;
  LLVMValueRef o = cg_par_begin(cg, &par, cg_numel(cg, &r->pre),
                                cg_grain(bound, dim_bound(len) *
                                         dim_bound(r->inner)), p, 2, true);
  LLVMValueRef in = cg_dim(cg, r->inner);
  LLVMValueRef doff = LLVMBuildNSWMul(cg->b, cg_add_i64(cg, LLVMBuildNSWMul(
      cg->b, o, cg_dim(cg, dst_len), ""), cg_dim(cg, dst_at)), in, "");
  LLVMValueRef soff = LLVMBuildNSWMul(cg->b, cg_add_i64(cg, LLVMBuildNSWMul(
      cg->b, o, cg_dim(cg, src_len), ""), cg_dim(cg, src_at)), in, "");
  CgLoop l;
  LLVMValueRef j = cg_loop_begin(cg, &l, cg_i64(cg, 0), cg_mul_dim(
      cg, cg_dim(cg, len), r->inner), NULL, 0);
  LLVMValueRef si = cg_add_i64(cg, soff, j), di = cg_add_i64(cg, doff, j);
  LLVMValueRef sp = LLVMBuildInBoundsGEP2(cg->b, et, p[1], &si, 1, "");
  LLVMValueRef dp = LLVMBuildInBoundsGEP2(cg->b, et, p[0], &di, 1, "");
  LLVMBuildStore(cg->b, LLVMBuildLoad2(cg->b, et, sp, ""), dp);
  cg_loop_end(cg, &l, NULL);
  cg_par_end(cg, &par);
}

static bool cg_emit_concat(Cg *cg, Node *n) {
  int axis = ir_norm_axis(ir_attr_int(n, ATTR_AXIS, 0), n->type.rank);
  int64_t outer, total, inner;
  DynRows r;
  if (dyn_rows(cg, n, &n->type, axis, &r)) {
    int64_t off = 0;
    for (int k = 0; k < n->nin; k++) {
      int64_t len = n->in[k]->type.dims[axis];
      if (len != 0)
        copy_rows_dyn(cg, &r, cg_buf(cg, n), cg_buf(cg, n->in[k]), len,
                      n->type.dims[axis], len, off, 0);
      DimStatus st = dim_add(cg->ctx, off, len, &off);
      RLX_ASSERT(st == DIM_OK); /* a part of the result's axis */
    }
    return true;
  }
  cg_ops_split_axis(&n->type, axis, &outer, &total, &inner);
  LLVMValueRef dst = cg_buf(cg, n);
  int64_t off = 0;
  for (int k = 0; k < n->nin; k++) {
    int64_t len = n->in[k]->type.dims[axis];
    if (len > 0)
      copy_rows(cg, dst, cg_buf(cg, n->in[k]), outer, len * inner,
                total * inner, len * inner, off * inner, 0,
                dt_size(n->type.dt));
    off += len;
  }
  return true;
}

static bool cg_emit_narrow(Cg *cg, Node *n) {
  const Type *in = &n->in[0]->type;
  int axis = ir_norm_axis(ir_attr_int(n, ATTR_AXIS, 0), in->rank);
  int64_t start = ir_attr_int(n, ATTR_START, 0);
  int64_t outer, len = in->dims[axis], inner;
  int64_t l = n->type.dims[axis];
  if (start < 0) start += len;
  if (start < 0 || start + l > len)
    return cg_unsupported(cg, n, "slice outside the operand");
  DynRows r;
  if (dyn_rows(cg, n, in, axis, &r)) { /* the narrowed axis static */
    if (l > 0)
      copy_rows_dyn(cg, &r, cg_buf(cg, n), cg_buf(cg, n->in[0]), l, l, len,
                    0, start);
    return true;
  }
  cg_ops_split_axis(in, axis, &outer, &len, &inner);
  copy_rows(cg, cg_buf(cg, n), cg_buf(cg, n->in[0]), outer, l * inner,
            l * inner, len * inner, 0, start * inner, dt_size(n->type.dt));
  return true;
}

/* out [A, I, B] = table [A, T, B] rows picked by idx [I]. */
static bool cg_emit_gather(Cg *cg, Node *n) {
  const Type *tt = &n->in[0]->type;
  DType idt = n->in[1]->type.dt;
  if (!cg_ops_index_dtype_ok(idt))
    return cg_unsupported(cg, n, "indices must be i32, i64 or f32");
  int axis = ir_norm_axis(ir_attr_int(n, ATTR_AXIS, 0), tt->rank);
  const Type *it = &n->in[1]->type;
  int64_t a, t, b, ni = type_bytes_bound(it) / dt_size(it->dt);
  cg_split_axis_dim(cg, tt, axis, &a, &t, &b); /* sizes: may be dynamic */
  int64_t units = dim_bound(a) * ni;
  if (units == 0 || dim_bound(b) == 0) return true;
  int es = dt_size(n->type.dt);
  LLVMTypeRef et = cg_ops_bits_type(cg, es);
  LLVMValueRef vals[3] = {cg_buf(cg, n), cg_buf(cg, n->in[0]),
                          cg_buf(cg, n->in[1])};
  LLVMValueRef nu = cg_mul_dim(cg, cg_numel(cg, it), a);
  CgPar par;
  LLVMValueRef u = cg_par_begin(cg, &par, nu, cg_grain(units, dim_bound(b)),
                                vals, 3, true);
  LLVMValueRef niv = cg_numel(cg, it), tv = cg_dim(cg, t); /* in the body */
  LLVMValueRef bv = cg_dim(cg, b);
  LLVMValueRef ai = LLVMBuildSDiv(cg->b, u, niv, "");
  LLVMValueRef ii = LLVMBuildSRem(cg->b, u, niv, "");
  LLVMValueRef ti = cg_ops_index_v(cg, idt, vals[2], ii, tv);
  LLVMValueRef row = LLVMBuildNSWAdd(
      cg->b, LLVMBuildNSWMul(cg->b, ai, tv, ""), ti, "");
  LLVMValueRef soff = LLVMBuildNSWMul(cg->b, row, bv, "");
  LLVMValueRef doff = LLVMBuildNSWMul(cg->b, u, bv, "");
  CgLoop l;
  LLVMValueRef j = cg_loop_begin(cg, &l, cg_i64(cg, 0), bv, NULL, 0);
  LLVMValueRef si = LLVMBuildNSWAdd(cg->b, soff, j, "");
  LLVMValueRef di = LLVMBuildNSWAdd(cg->b, doff, j, "");
  LLVMValueRef sp = LLVMBuildInBoundsGEP2(cg->b, et, vals[1], &si, 1, "");
  LLVMValueRef dp = LLVMBuildInBoundsGEP2(cg->b, et, vals[0], &di, 1, "");
  LLVMBuildStore(cg->b, LLVMBuildLoad2(cg->b, et, sp, ""), dp);
  cg_loop_end(cg, &l, NULL);
  cg_par_end(cg, &par);
  return true;
}

#define SCATTER_BLOCK 512

typedef struct {
  DType dt, idt;
  int64_t a, t;  /* sizes (dynamic ones read at run time) */
  int64_t b, ni, blk, nbb;
  int64_t nid; /* the index count as a size (dynamic: ni is its bound) */
} Scatter;

/* One unit: batch a, columns [lo, hi), every update row in order. */
static void scatter_unit(Cg *cg, const Scatter *S, LLVMValueRef u,
                         LLVMValueRef *vals) {
  LLVMValueRef nbb = cg_i64(cg, S->nbb);
  LLVMValueRef a = LLVMBuildSDiv(cg->b, u, nbb, "");
  LLVMValueRef lo = LLVMBuildNSWMul(cg->b, LLVMBuildSRem(cg->b, u, nbb, ""),
                                    cg_i64(cg, S->blk), "");
  LLVMValueRef hi = LLVMBuildNSWAdd(cg->b, lo, cg_i64(cg, S->blk), "");
  LLVMValueRef lim = cg_i64(cg, S->b);
  hi = LLVMBuildSelect(cg->b, LLVMBuildICmp(cg->b, LLVMIntSLT, hi, lim, ""),
                       hi, lim, "");
  CgLoop li, lj;
  LLVMValueRef niv = cg_dim(cg, S->nid), tv = cg_dim(cg, S->t);
  LLVMValueRef i = cg_loop_begin(cg, &li, cg_i64(cg, 0), niv, NULL, 0);
  LLVMValueRef t = cg_ops_index_v(cg, S->idt, vals[2], i, tv);
  LLVMValueRef orow = LLVMBuildNSWAdd(
      cg->b, LLVMBuildNSWMul(cg->b, a, tv, ""), t, "");
  LLVMValueRef urow = LLVMBuildNSWAdd(
      cg->b, LLVMBuildNSWMul(cg->b, a, niv, ""), i, "");
  LLVMValueRef oo = LLVMBuildNSWMul(cg->b, orow, lim, "");
  LLVMValueRef uo = LLVMBuildNSWMul(cg->b, urow, lim, "");
  LLVMValueRef j = cg_loop_begin(cg, &lj, lo, hi, NULL, 0);
  LLVMValueRef oi = LLVMBuildNSWAdd(cg->b, oo, j, "");
  LLVMValueRef ui = LLVMBuildNSWAdd(cg->b, uo, j, "");
  LLVMValueRef v = cg_ops_combine(cg, S->dt, CG_RED_SUM,
                                  cg_load(cg, S->dt, vals[0], oi),
                                  cg_load(cg, S->dt, vals[1], ui));
  cg_store(cg, S->dt, vals[0], oi, v);
  cg_loop_end(cg, &lj, NULL);
  cg_loop_end(cg, &li, NULL);
}

bool cg_ops_scatter(Cg *cg, Node *n, Node *upd, Node *idx, int64_t a_c,
                    int64_t t_c, int64_t b_c) {
  Scatter S = {n->type.dt, idx->type.dt, a_c, t_c, b_c,
               type_bytes_bound(&idx->type) / dt_size(idx->type.dt), 0, 0,
               0};
  if (S.dt == DT_BOOL) return cg_unsupported(cg, n, "dtype bool");
  if (!cg_ops_index_dtype_ok(S.idt))
    return cg_unsupported(cg, n, "indices must be i32, i64 or f32");
  if (type_numel_dim(cg->ctx, &idx->type, &S.nid) != DIM_OK)
    return cg_unsupported(cg, n, "too complex an index count");
  if (!dim_is_static(b_c))
    return cg_unsupported(cg, n, "a dynamic size after the indexed axis");
  if (type_is_static(&upd->type) && dim_is_static(a_c) &&
      type_numel(&upd->type) != a_c * S.ni * b_c)
    return cg_unsupported(cg, n, "updates do not match the indices");
  LLVMValueRef out = cg_buf(cg, n);
  cg_zero_bytes(cg, out, &n->type);
  int64_t ab = dim_bound(a_c);
  if (ab == 0 || b_c == 0 || S.ni == 0) return true;
  S.blk = b_c < SCATTER_BLOCK ? b_c : SCATTER_BLOCK;
  S.nbb = (b_c + S.blk - 1) / S.blk;
  LLVMValueRef vals[3] = {out, cg_buf(cg, upd), cg_buf(cg, idx)};
  CgPar par;
  LLVMValueRef u = cg_par_begin(cg, &par, cg_mul_c(cg, cg_dim(cg, a_c),
                                                   S.nbb),
                                cg_grain(ab * S.nbb, S.ni * S.blk), vals, 3,
                                true);
  scatter_unit(cg, &S, u, vals);
  cg_par_end(cg, &par);
  return true;
}

/* scatter_add(updates, indices, shape): along axis 0 of shape. */
static bool cg_emit_scatter_add(Cg *cg, Node *n) {
  const Type *t = &n->type;
  if (t->rank < 1) return cg_unsupported(cg, n, "rank-0 result");
  int64_t b = 1;
  for (int i = 1; i < t->rank; i++) b *= t->dims[i];
  return cg_ops_scatter(cg, n, n->in[0], n->in[1], 1, t->dims[0], b);
}

/* Dynamic sizes: any (a copy with strides read at run time; a swap of
 * the last two axes read only by matmuls is folded into them instead,
 * fuse.c). */
static const char *transpose_dyn(const Node *n) {
  (void)n;
  return NULL;
}

const CgEmitter cg_emitter_transpose = {cg_emit_transpose, NULL,
                                        transpose_dyn};
static const char *expand_dyn(const Node *n) {
  return cg_emitter_elementwise.dyn(n);
}

const CgEmitter cg_emitter_expand = {cg_emit_expand, NULL, expand_dyn};
const CgEmitter cg_emitter_concat = {cg_emit_concat, NULL, cg_dyn_any};
const CgEmitter cg_emitter_narrow = {cg_emit_narrow, NULL, cg_dyn_any};
/* Dynamic sizes: gather any (the table's too: its sizes and the index
 * bound read at run time); gather_backward (cg_ops_scatter) any but
 * after the indexed axis. */
static const char *gather_dyn(const Node *n) {
  if (n->op == OP_GATHER) return NULL;
  const Type *t = &n->type; /* gather_backward: cg_ops_scatter's */
  int axis = ir_norm_axis(ir_attr_int(n, ATTR_AXIS, 0), t->rank);
  for (int d = axis + 1; d < t->rank; d++)
    if (!dim_is_static(t->dims[d]))
      return "a dynamic size after the indexed axis";
  return NULL;
}

const CgEmitter cg_emitter_gather = {cg_emit_gather, NULL, gather_dyn};
/* Dynamic sizes: the update count (the indices' and updates' axis 0,
 * read at run time by cg_ops_scatter) and the table's rows; its later
 * axes static. */
static const char *scatter_add_dyn(const Node *n) {
  for (int d = 1; d < n->type.rank; d++)
    if (!dim_is_static(n->type.dims[d]))
      return "a dynamic size after the indexed axis";
  return NULL;
}

const CgEmitter cg_emitter_scatter_add = {cg_emit_scatter_add, NULL,
                                          scatter_add_dyn};
