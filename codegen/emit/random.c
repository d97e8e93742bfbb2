/* random.c: rng_uniform / rng_normal (rlx_rng_*_f32) and sample
 * (rlx_sample_*): one runtime call each (runtime/random/random.c; the
 * bit mapping of the random ops is docs/random.md). sample is
 * OPF_F32_F64: other dtypes never reach its emitter (cg_emit_node).
 * Dynamic sizes: the element count (rng) or the row count (sample) is
 * read at run time; element i (row r) draws from counter block i (r)
 * whatever the size, so the elements that exist are the static shape's
 * draws, bit for bit. sample's scratch is the bound's.
 */
#include "codegen/emit/emit.h"

static LLVMValueRef f64c(Cg *cg, double v) {
  return LLVMConstReal(cg->t_f64, v);
}

static bool cg_emit_rng(Cg *cg, Node *n) {
  if (type_is_static(&n->type) && type_numel(&n->type) == 0) return true;
  LLVMValueRef args[3] = {cg_buf(cg, n), cg_numel(cg, &n->type),
                          cg_i64(cg, ir_attr_int(n, ATTR_SEED, 0))};
  const char *fn = n->op == OP_RNG_UNIFORM ? "rlx_rng_uniform_f32"
                                           : "rlx_rng_normal_f32";
  cg_fail_if_nonzero(cg, cg_call(cg, fn, cg->t_i32, args, 3));
  return true;
}

/* logits [rows, C] -> rows * C doubles and rows * C i64 indices */
static int64_t cg_scratch_sample(Cg *cg, Node *n) {
  const Type *t = &n->in[0]->type;
  int64_t d;
  if (type_is_bounded(t))
    return type_bytes_bound(t) / dt_size(t->dt) * 16; /* the bound's */
  if (type_numel_dim(cg->ctx, t, &d) == DIM_OK &&
      dim_mul(cg->ctx, d, 16, &d) == DIM_OK)
    return d; /* rows without a bound: a size expression */
  cg_unsupported(cg, n, "too large a size expression");
  return -1;
}

static bool cg_emit_sample(Cg *cg, Node *n) {
  const Type *t = &n->in[0]->type;
  RLX_ASSERT(op_dtype_ok(n->op, t->dt)); /* OPF_F32_F64 */
  if (t->dims[0] == 0) return true; /* a dynamic 0: the kernel's no rows */
  LLVMValueRef args[9] = {
      cg_buf(cg, n->in[0]), cg_dim(cg, t->dims[0]), cg_i64(cg, t->dims[1]),
      f64c(cg, ir_attr_float(n, ATTR_TEMPERATURE, 1.0)),
      cg_i64(cg, ir_attr_int(n, ATTR_TOP_K, 0)),
      f64c(cg, ir_attr_float(n, ATTR_TOP_P, 1.0)),
      cg_i64(cg, ir_attr_int(n, ATTR_SEED, 0)), cg_scratch(cg, n),
      cg_buf(cg, n)};
  const char *fn = t->dt == DT_F32 ? "rlx_sample_f32" : "rlx_sample_f64";
  cg_fail_if_nonzero(cg, cg_call(cg, fn, cg->t_i32, args, 9));
  return true;
}

/* Any dynamic sizes (a flat count). */
static const char *rng_dyn(const Node *n) {
  (void)n;
  return NULL;
}
/* The rows (the shape rule keeps the classes static). */
static const char *sample_dyn(const Node *n) {
  return cg_dyn_leading(&n->in[0]->type) ? NULL : "dynamic classes";
}

const CgEmitter cg_emitter_rng = {cg_emit_rng, NULL, rng_dyn};
const CgEmitter cg_emitter_sample = {cg_emit_sample, cg_scratch_sample,
                                     sample_dyn};
