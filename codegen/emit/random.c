/* random.c: rng_uniform / rng_normal (rlx_rng_*_f32) and sample
 * (rlx_sample_*): one runtime call each (runtime/random/random.c; the
 * bit mapping of the random ops is docs/random.md). sample is
 * OPF_F32_F64: other dtypes never reach its emitter (cg_emit_node).
 */
#include "codegen/emit/emit.h"

static LLVMValueRef f64c(Cg *cg, double v) {
  return LLVMConstReal(cg->t_f64, v);
}

static bool cg_emit_rng(Cg *cg, Node *n) {
  int64_t count = type_numel(&n->type);
  if (count == 0) return true;
  LLVMValueRef args[3] = {cg_buf(cg, n), cg_i64(cg, count),
                          cg_i64(cg, ir_attr_int(n, ATTR_SEED, 0))};
  const char *fn = n->op == OP_RNG_UNIFORM ? "rlx_rng_uniform_f32"
                                           : "rlx_rng_normal_f32";
  cg_fail_if_nonzero(cg, cg_call(cg, fn, cg->t_i32, args, 3));
  return true;
}

/* logits [rows, C] -> rows * C doubles and rows * C i64 indices */
static int64_t cg_scratch_sample(Cg *cg, Node *n) {
  (void)cg;
  return type_numel(&n->in[0]->type) * 16;
}

static bool cg_emit_sample(Cg *cg, Node *n) {
  const Type *t = &n->in[0]->type;
  RLX_ASSERT(op_dtype_ok(n->op, t->dt)); /* OPF_F32_F64 */
  if (t->dims[0] == 0) return true;
  LLVMValueRef args[9] = {
      cg_buf(cg, n->in[0]), cg_i64(cg, t->dims[0]), cg_i64(cg, t->dims[1]),
      f64c(cg, ir_attr_float(n, ATTR_TEMPERATURE, 1.0)),
      cg_i64(cg, ir_attr_int(n, ATTR_TOP_K, 0)),
      f64c(cg, ir_attr_float(n, ATTR_TOP_P, 1.0)),
      cg_i64(cg, ir_attr_int(n, ATTR_SEED, 0)), cg_scratch(cg, n),
      cg_buf(cg, n)};
  const char *fn = t->dt == DT_F32 ? "rlx_sample_f32" : "rlx_sample_f64";
  cg_fail_if_nonzero(cg, cg_call(cg, fn, cg->t_i32, args, 9));
  return true;
}

const CgEmitter cg_emitter_rng = {cg_emit_rng, NULL, NULL};
const CgEmitter cg_emitter_sample = {cg_emit_sample, cg_scratch_sample, NULL};
