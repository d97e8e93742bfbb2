/* ssm.c: selective_scan and gated_delta_net (language.md 6.7) as
 * calls of the runtime's fused kernels (runtime/ssm/ssm.c,
 * rlx_selective_scan_* / rlx_gated_delta_net_*): the time loop runs
 * inside the call with the state in the node's scratch area (sized by
 * runtime/ssm/ssm_plan.c), never as graph nodes. f32 and f64 (OPF_F32_F64:
 * cg_emit_node diagnoses other dtypes). fused_transformer_layer never reaches
 * code generation: the expand_fused pass lowers it to matmul, attention,
 * layer_norm and activation nodes.
 */
#include "codegen/emit/emit.h"

#include "runtime/rlxrt.h"

#include <stdio.h>

/* b, s, h (or heads), n of a shape-checked node */
static void geometry(const Node *n, int64_t g[4]) {
  const Type *x = &n->in[0]->type;
  g[0] = x->dims[0], g[1] = x->dims[1], g[2] = x->dims[2];
  g[3] = n->op == OP_SELECTIVE_SCAN ? n->in[2]->type.dims[1] : x->dims[3];
}

/* The scratch grows with b and h (one task per batch row and channel
 * block or head): the bounds' serves every smaller size. */
static int64_t cg_scratch_ssm(Cg *cg, Node *n) {
  (void)cg;
  if (node_unbounded(n)) return CG_SCRATCH_RT; /* cg_ssm_scratch_rt */
  int64_t g[4], es = dt_size(n->type.dt);
  geometry(n, g);
  g[0] = dim_bound(g[0]), g[2] = dim_bound(g[2]);
  return cg_align(n->op == OP_SELECTIVE_SCAN
                      ? rlx_selective_scan_scratch_bytes(g[0], g[2], g[3], es)
                      : rlx_gated_delta_net_scratch_bytes(g[0], g[2], g[3],
                                                          es));
}

/* Sizes without a bound: the formula at the call's b and h. */
LLVMValueRef cg_ssm_scratch_rt(Cg *cg, Node *n) {
  int64_t g[4];
  geometry(n, g);
  LLVMValueRef a[4] = {cg_dim(cg, g[0]), cg_dim(cg, g[2]), cg_i64(cg, g[3]),
                       cg_i64(cg, dt_size(n->type.dt))};
  return cg_call(cg, n->op == OP_SELECTIVE_SCAN
                         ? "rlx_selective_scan_scratch_bytes"
                         : "rlx_gated_delta_net_scratch_bytes",
                 cg->t_i64, a, 4);
}

static bool cg_emit_ssm(Cg *cg, Node *n) {
  RLX_ASSERT(op_dtype_ok(n->op, n->in[0]->type.dt)); /* OPF_F32_F64 */
  int64_t g[4];
  geometry(n, g);
  if (type_bytes_bound(&n->type) == 0) return true;
  char fn[64];
  snprintf(fn, sizeof fn, "rlx_%s_%s", op_name(n->op), dt_name(n->type.dt));
  LLVMValueRef args[11];
  for (int i = 0; i < 4; i++) args[i] = cg_dim(cg, g[i]); /* b, s, h: run time */
  for (int i = 0; i < 5; i++) args[4 + i] = cg_buf(cg, n->in[i]);
  args[9] = cg_buf(cg, n);
  args[10] = cg_scratch(cg, n);
  cg_call(cg, fn, cg->t_void, args, 11);
  return true;
}

/* Dynamic sizes: the batch b, the length s and the channels or heads
 * (the kernels take them at run time; no rows or no steps: no work);
 * the state size is an attribute, so static. */
static const char *ssm_dyn(const Node *n) {
  (void)n;
  return NULL;
}

const CgEmitter cg_emitter_ssm = {cg_emit_ssm, cg_scratch_ssm, ssm_dyn};
