/* emit_random.c: rng_uniform / rng_normal (rlx_rng_*_f32), sample
 * (rlx_sample_*) and log_mel / log_mel_backward (rlx_log_mel_*): one
 * runtime call each (runtime/random/random.c, runtime/fft/log_mel.c; the bit
 * mapping of the random ops is docs/random.md). sample and log_mel* are
 * OPF_F32_F64: other dtypes never reach these emitters (cg_emit_node).
 */
#include "codegen/emit_random.h"

static LLVMValueRef f64c(Cg *cg, double v) {
  return LLVMConstReal(cg->t_f64, v);
}

bool cg_emit_rng(Cg *cg, Node *n) {
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
int64_t cg_scratch_sample(Cg *cg, Node *n) {
  (void)cg;
  return type_numel(&n->in[0]->type) * 16;
}

bool cg_emit_sample(Cg *cg, Node *n) {
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

/* spec [..., F]: the product of the leading dims */
static int64_t spec_rows(const Type *s) {
  int64_t r = 1;
  for (int i = 0; i + 1 < s->rank; i++) r *= s->dims[i];
  return r;
}

/* log_mel_backward: z = spec filters, rows * M elements */
int64_t cg_scratch_log_mel(Cg *cg, Node *n) {
  (void)cg;
  if (n->op != OP_LOG_MEL_BACKWARD) return 0;
  const Type *s = &n->in[0]->type;
  return cg_align(spec_rows(s) * n->in[1]->type.dims[1] * dt_size(s->dt));
}

bool cg_emit_log_mel(Cg *cg, Node *n) {
  const Type *s = &n->in[0]->type;
  RLX_ASSERT(op_dtype_ok(n->op, s->dt)); /* OPF_F32_F64 */
  int64_t F = s->dims[s->rank - 1], M = n->in[1]->type.dims[1];
  int64_t rows = spec_rows(s);
  if (type_numel(&n->type) == 0) return true;
  bool f32 = s->dt == DT_F32;
  if (n->op == OP_LOG_MEL) {
    LLVMValueRef a[6] = {cg_i64(cg, rows), cg_i64(cg, F), cg_i64(cg, M),
                         cg_buf(cg, n->in[0]), cg_buf(cg, n->in[1]),
                         cg_buf(cg, n)};
    cg_call(cg, f32 ? "rlx_log_mel_f32" : "rlx_log_mel_f64", cg->t_void, a,
            6);
    return true;
  }
  LLVMValueRef a[8] = {cg_i64(cg, rows), cg_i64(cg, F), cg_i64(cg, M),
                       cg_buf(cg, n->in[0]), cg_buf(cg, n->in[1]),
                       cg_buf(cg, n->in[2]), cg_buf(cg, n),
                       cg_scratch(cg, n)};
  cg_call(cg, f32 ? "rlx_log_mel_backward_f32" : "rlx_log_mel_backward_f64",
          cg->t_void, a, 8);
  return true;
}
