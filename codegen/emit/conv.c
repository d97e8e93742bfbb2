/* conv.c: conv2d (language.md 6.5) and its closed-form backward
 * ops conv2d_backward_input and conv2d_backward_weight (6.9), NCHW.
 *
 * Each node is ONE call of a runtime routine (runtime/rlxrt.h,
 * rlx_conv2d_*): a private constant global holds the geometry
 * (rlx_conv_geom, 16 i64), and the node's scratch area holds the
 * routine's workspace, rlx_conv2d_scratch_bytes(geometry, op, element
 * size) bytes -- the runtime's own formula (runtime/conv/conv_plan.c is
 * linked into the compiler). The geometry's x is operand 0 of conv2d
 * and conv2d_backward_weight and the `shape` attribute (the result) of
 * conv2d_backward_input; its w is operand 1 of conv2d and
 * conv2d_backward_input and the `shape` attribute of
 * conv2d_backward_weight. Every routine takes (geometry, operand 0,
 * operand 1, result, scratch) and writes its whole result.
 *
 * f32 and f64 call the routine of their type. f16/bf16 operands are
 * widened to f32 copies in the scratch area (after the routine's
 * workspace), the f32 routine runs into a third f32 copy, which is
 * rounded once to the dtype (nearest even), as matmul does; with a
 * dynamic batch the copies are laid out at the bound and the loops
 * convert the run-time batch's elements. A batch without a bound has
 * the scratch computed at run time (the routine's formula at the
 * call's geometry, the copies at the call's sizes: cg_conv_scratch_rt),
 * and so are the parts' offsets. Other
 * dtypes are diagnosed (the shape rules admit only floats).
 *
 * Operands always have storage of their own: fusion computes nodes
 * only inside elementwise and reduction consumers and folds transposes
 * only into matmul (fuse.c), so cg_buf reads them directly; the memory
 * plan keeps the result apart from the operands. The routines are
 * deterministic for any thread count.
 */
#include "codegen/emit/emit.h"

#include "runtime/rlxrt.h"

#include <stddef.h>

static bool half(DType dt) { return dt == DT_F16 || dt == DT_BF16; }

static int conv_kind(Op op) {
  return op == OP_CONV2D_BACKWARD_INPUT    ? RLX_CONV_BWD_INPUT
         : op == OP_CONV2D_BACKWARD_WEIGHT ? RLX_CONV_BWD_WEIGHT
                                           : RLX_CONV_FWD;
}

/* An ints attribute of two entries, or def when absent. */
static void pair(const Node *n, AttrId id, int64_t def, int64_t *v) {
  int k;
  const int64_t *a = ir_attr_ints(n, id, &k);
  v[0] = a && k == 2 ? a[0] : def;
  v[1] = a && k == 2 ? a[1] : def;
}

/* The geometry of a shape-checked conv node (q_conv2d: as conv2d). */
rlx_conv_geom cg_conv_geometry(const Node *n) {
  int kind = conv_kind(n->op);
  const Type *x = kind == RLX_CONV_BWD_INPUT ? &n->type : &n->in[0]->type;
  const Type *w = kind == RLX_CONV_BWD_WEIGHT ? &n->type : &n->in[1]->type;
  const Type *y = kind == RLX_CONV_FWD ? &n->type
                  : kind == RLX_CONV_BWD_INPUT ? &n->in[0]->type
                                               : &n->in[1]->type;
  int64_t s[2], p[2], d[2];
  pair(n, ATTR_STRIDE, 1, s);
  pair(n, ATTR_PADDING, 0, p);
  pair(n, ATTR_DILATION, 1, d);
  return (rlx_conv_geom){
      .n = x->dims[0], .c = x->dims[1], .h = x->dims[2], .w = x->dims[3],
      .co = w->dims[0], .kh = w->dims[2], .kw = w->dims[3],
      .oh = y->dims[2], .ow = y->dims[3], .sh = s[0], .sw = s[1],
      .ph = p[0], .pw = p[1], .dh = d[0], .dw = d[1],
      .groups = ir_attr_int(n, ATTR_GROUPS, 1)};
}

/* Bytes of the routine's workspace for n (f16/bf16: the f32 one). A
 * dynamic batch (conv_dyn) takes the largest over every batch up to
 * its bound, tried up to 4096, and the bound's (the workspace need not
 * grow with the batch: fewer images may split other axes). */
static int64_t routine_bytes(const Node *n) {
  rlx_conv_geom g = cg_conv_geometry(n);
  DType dt = n->type.dt;
  int op = conv_kind(n->op), es = half(dt) ? 4 : dt_size(dt);
  if (dim_is_static(g.n)) return rlx_conv2d_scratch_bytes(&g, op, es);
  int64_t top = dim_bound(g.n), most = 0;
  for (int64_t b = 0; b <= top; b = b < 4096 ? b + 1 : top + (b == top)) {
    g.n = b;
    int64_t s = rlx_conv2d_scratch_bytes(&g, op, es);
    most = s > most ? s : most;
  }
  return most;
}

static int64_t cg_scratch_conv(Cg *cg, Node *n) {
  (void)cg;
  if (node_unbounded(n)) return CG_SCRATCH_RT; /* cg_conv_scratch_rt */
  int64_t bytes = cg_align(routine_bytes(n));
  if (!half(n->type.dt)) return bytes;
  return bytes + cg_f32_copy_bytes(&n->in[0]->type) +
         cg_f32_copy_bytes(&n->in[1]->type) + cg_f32_copy_bytes(&n->type);
}

static const char *routine(int kind, DType dt) {
  static const char *const names[3][2] = {
      {"rlx_conv2d_f32", "rlx_conv2d_f64"},
      {"rlx_conv2d_bwd_input_f32", "rlx_conv2d_bwd_input_f64"},
      {"rlx_conv2d_bwd_weight_f32", "rlx_conv2d_bwd_weight_f64"}};
  if (dt != DT_F32 && dt != DT_F64 && !half(dt)) return NULL;
  return names[kind][dt == DT_F64];
}

_Static_assert(sizeof(rlx_conv_geom) == 16 * sizeof(int64_t) &&
                   offsetof(rlx_conv_geom, groups) == 15 * sizeof(int64_t),
               "rlx_conv_geom: 16 int64s, groups last");

/* The geometry as a private constant global of 16 i64 (the struct's
 * field order). */
LLVMValueRef cg_conv_geometry_global(Cg *cg, const rlx_conv_geom *g) {
  int64_t n = dim_is_static(g->n) ? g->n : 0; /* dynamic: set at run time */
  const int64_t f[16] = {n,     g->c,  g->h,  g->w,  g->co, g->kh,
                         g->kw, g->oh, g->ow, g->sh, g->sw, g->ph,
                         g->pw, g->dh, g->dw, g->groups};
  LLVMValueRef v[16];
  for (int i = 0; i < 16; i++) v[i] = cg_i64(cg, f[i]);
  LLVMValueRef init = LLVMConstArray2(cg->t_i64, v, 16);
  return cg_ops_const_global(cg, init, "rlx.conv");
}

LLVMValueRef cg_conv_geometry_call(Cg *cg, const Node *n) {
  rlx_conv_geom g = cg_conv_geometry(n);
  LLVMValueRef geom = cg_conv_geometry_global(cg, &g);
  if (dim_is_static(g.n)) return geom;
  LLVMTypeRef gt = LLVMArrayType(cg->t_i64, 16);
  LLVMValueRef p = cg_alloca(cg, gt, "conv.geom");
  LLVMBuildStore(cg->b, LLVMBuildLoad2(cg->b, gt, geom, ""), p);
  LLVMSetAlignment(LLVMBuildStore(cg->b, cg_dim(cg, g.n), p), 8);
  return p;
}

/* With a batch without a bound, the parts of the scratch at run time:
 * the routine's formula at the call's geometry, the f32 copies at the
 * call's sizes, each rounded up to 64 bytes. */

static LLVMValueRef routine_rt(Cg *cg, const Node *n, LLVMValueRef geom) {
  LLVMValueRef a[3] = {geom, cg_i32(cg, conv_kind(n->op)),
                       cg_i64(cg, half(n->type.dt) ? 4 : dt_size(n->type.dt))};
  return cg_align_rt(cg, cg_call(cg, "rlx_conv2d_scratch_bytes", cg->t_i64,
                                 a, 3));
}

static const Type *copy_type(const Node *n, int i) {
  return i < 2 ? &n->in[i]->type : &n->type;
}

LLVMValueRef cg_conv_scratch_rt(Cg *cg, Node *n) {
  LLVMValueRef b = routine_rt(cg, n, cg_conv_geometry_call(cg, n));
  for (int i = 0; half(n->type.dt) && i < 3; i++)
    b = cg_add_i64(cg, b, cg_f32_copy_size(cg, copy_type(n, i), true));
  return b;
}

static bool cg_emit_conv(Cg *cg, Node *n) {
  DType dt = n->type.dt;
  int kind = conv_kind(n->op);
  const char *fn = routine(kind, dt);
  if (!fn) {
    char why[64];
    snprintf(why, sizeof why, "dtype %s", dt_name(dt));
    return cg_unsupported(cg, n, why);
  }
  if (type_is_static(&n->type) && type_numel(&n->type) == 0) return true;
  for (int i = 0; i < 2; i++) { /* fuse.c folds nothing into a conv */
    CgSlotKind k = cg_slot(cg, n->in[i])->kind;
    RLX_ASSERT(k != CG_SLOT_FUSED && k != CG_SLOT_FOLDED);
  }
  bool rt = node_unbounded(n); /* the parts' offsets at run time */
  LLVMValueRef s = cg_slot(cg, n)->scratch_bytes != 0
                       ? cg_scratch(cg, n)
                       : LLVMConstPointerNull(cg->t_ptr);
  LLVMValueRef geom = cg_conv_geometry_call(cg, n);
  int64_t rb = rt ? 0 : cg_align(routine_bytes(n));
  LLVMValueRef off = rt ? routine_rt(cg, n, geom) : cg_i64(cg, rb);
  LLVMValueRef a[5] = {geom,
                       cg_buf(cg, n->in[0]), cg_buf(cg, n->in[1]),
                       cg_buf(cg, n),
                       rt || rb ? s : LLVMConstPointerNull(cg->t_ptr)};
  if (!half(dt)) {
    cg_call(cg, fn, cg->t_void, a, 5);
    return true;
  }
  /* f32 copies of operand 0, operand 1 and the result, laid out at the
   * bounds; the loops convert the elements of the run-time batch only
   * (?b*C*H*W) */
  LLVMValueRef out = a[3];
  for (int i = 0; i < 3; i++) {
    LLVMValueRef f = cg_gep(cg, s, off);
    if (i < 2) cg_convert_type(cg, f, DT_F32, a[i + 1], dt, copy_type(n, i));
    a[i + 1] = f;
    off = cg_add_i64(cg, off, cg_f32_copy_size(cg, copy_type(n, i), rt));
  }
  cg_call(cg, fn, cg->t_void, a, 5);
  cg_convert_type(cg, out, dt, a[3], DT_F32, &n->type);
  return true;
}

/* Dynamic sizes: the batch (the shape rule keeps the others static),
 * every dtype (f16/bf16 convert the run-time batch's elements). */
static const char *conv_dyn(const Node *n) {
  (void)n;
  return NULL;
}

const CgEmitter cg_emitter_conv = {cg_emit_conv, cg_scratch_conv, conv_dyn};
