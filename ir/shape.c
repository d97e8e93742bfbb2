/* shape.c: shape/dtype inference dispatcher, on top of the rules
 * (ir/shape_*.c), which share the checks of shape_check.c.
 *
 * Entry point: shape_infer(). The rule table is generated from ops.def
 * (one shape_RULE per row), so an op without a rule does not link.
 * Generic checks done here, in order: an invalid operand makes the node
 * invalid silently; operand count; required attributes present; set
 * attributes of the declared kind. Then the op's rule runs; on success
 * operand 0's dtype is checked against the op table (op_dtypes), and
 * the result's rank and element count against RLX_MAX_RANK and
 * RLX_MAX_ELEMS. On failure n->type.dt is DT_INVALID.
 */
#include "ir/shape_internal.h"

#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

typedef bool (*ShapeRule)(Ctx *c, Node *n);

static const ShapeRule rules[OP_COUNT] = {
#define OP(id, name, nmin, nmax, flags, rule, vjp, jvp, emit, attrs, math) \
  [OP_##id] = shape_##rule,
#include "ir/ops.def"
#undef OP
};

static const char *kind_text(AttrKind k) {
  switch (k) {
  case AK_INT: return "an integer";
  case AK_INTS: return "a list of integers";
  case AK_FLOAT: return "a number";
  case AK_BOOL: return "true or false";
  case AK_DTYPE: return "a dtype";
  case AK_ENUM: return "a word";
  case AK_GRAPH: return "a graph reference";
  }
  return "?";
}

/* Operand count, required attributes, attribute kinds. */
static bool check_generic(Ctx *c, Node *n) {
  const OpInfo *oi = op_info(n->op);
  if (n->nin < oi->min_in || (oi->max_in >= 0 && n->nin > oi->max_in)) {
    if (oi->min_in == oi->max_in)
      return sh_err(c, n, "expected %d operand%s, got %d", oi->min_in,
                    oi->min_in == 1 ? "" : "s", n->nin);
    if (n->nin < oi->min_in)
      return sh_err(c, n, "expected at least %d operand%s, got %d",
                    oi->min_in, oi->min_in == 1 ? "" : "s", n->nin);
    return sh_err(c, n, "expected at most %d operands, got %d", oi->max_in,
                  n->nin);
  }
  for (int i = 0; i < oi->nattrs; i++)
    if (oi->attrs[i].required && !ir_attr_present(n, oi->attrs[i].id))
      return sh_err(c, n, "missing attribute '%s'",
                    attr_name(oi->attrs[i].id));
  for (int i = 0; i < n->nattr; i++) {
    const Attr *a = &n->attrs[i];
    if (!op_attr_spec(n->op, a->id))
      return sh_err(c, n, "unknown attribute '%s'", attr_name(a->id));
    if (a->kind != attr_kind(a->id))
      return sh_err(c, n, "attribute '%s' must be %s", attr_name(a->id),
                    kind_text(attr_kind(a->id)));
    if (a->kind == AK_GRAPH && !a->u.graph)
      return sh_err(c, n, "attribute '%s' names no graph",
                    attr_name(a->id));
    if (a->kind == AK_ENUM && (!a->u.word || !attr_word_ok(a->id,
                                                           a->u.word)))
      return sh_err(c, n, "attribute '%s' has an invalid value '%s'",
                    attr_name(a->id), a->u.word ? a->u.word : "");
  }
  return true;
}

/* Rules that carry dynamic sizes (docs/dynamic-dims.md): each copies or
 * compares a dynamic size, computes with it through sh_add / sh_mul /
 * sh_div, or calls sh_static where it needs a static one. Any other
 * rule sees static operands only: a dynamic one is refused here, so no
 * rule computes with a dynamic dim as if it were a number. */
static const ShapeRule dyn_rules[] = {
    shape_unary, shape_unary_any, shape_binary, shape_compare, shape_where,
    shape_cast, shape_act_bwd, shape_reduce, shape_softmax, shape_cumsum,
    shape_softmax_xent, shape_softmax_xent_bwd, shape_topk, shape_matmul,
    shape_transpose, shape_reshape, shape_concat, shape_narrow,
    shape_gather, shape_gather_bwd, shape_expand, shape_layer_norm, shape_norm_bwd,
    shape_group_norm,
    shape_batch_norm, shape_rope,
    shape_attention, shape_attention_bwd, shape_conv2d, shape_pool2d, shape_scan,
    shape_conv2d_bwd, shape_avg_pool_bwd, shape_max_pool_bwd, shape_if,
    shape_while, shape_custom_fn,
    shape_complex_unary, shape_complex_to_real, shape_complex,
    shape_complex_norm_sq_bwd, shape_selective_scan,
    shape_gated_delta_net, shape_transformer, shape_grouped_matmul,
    shape_grouped_matmul_bwd, shape_log_mel, shape_log_mel_bwd,
    shape_dense_solve, shape_batched_dense_solve,
    shape_rng, shape_sample, shape_fake_quantize, shape_fake_quantize_lsq,
    shape_fake_quantize_bwd, shape_lsq_bwd, shape_quantize, shape_dequantize,
    shape_q_matmul, shape_q_conv2d, shape_dequant_matmul, shape_scatter_add,
};

static bool carries_dynamic(Op op) {
  for (size_t i = 0; i < sizeof dyn_rules / sizeof *dyn_rules; i++)
    if (dyn_rules[i] == rules[op]) return true;
  return false;
}

/* Every operand static, unless the op's rule carries dynamic sizes. */
static bool check_dynamic(Ctx *c, Node *n) {
  if (carries_dynamic(n->op)) return true;
  for (int i = 0; i < n->nin; i++)
    if (!sh_static_type(c, n, i, "its shape rule does not carry dynamic "
                        "sizes"))
      return false;
  return true;
}

/* Result rank/dims/element count within limits (a dynamic size was
 * checked by the dim arithmetic that made it). */
static bool check_result(Ctx *c, Node *n) {
  const Type *t = &n->type;
  if (t->rank < 0 || t->rank > RLX_MAX_RANK)
    return sh_err(c, n, "result rank %d exceeds the maximum %d", t->rank,
                  RLX_MAX_RANK);
  int64_t e = 1;
  for (int i = 0; i < t->rank; i++) {
    if (!dim_is_static(t->dims[i]) && dim_valid(t->dims[i])) continue;
    if (t->dims[i] < 0 || t->dims[i] > RLX_MAX_ELEMS)
      return sh_err(c, n, "result dimension %d is %lld, out of range", i,
                    (long long)t->dims[i]);
    if (__builtin_mul_overflow(e, t->dims[i], &e) || e > RLX_MAX_ELEMS)
      return sh_err(c, n, "result has too many elements (over %lld)",
                    (long long)RLX_MAX_ELEMS);
  }
  return true;
}

/* Operand 0's dtype is one the op compiles for (op_dtypes: the op
 * table's OPF_F32_F64), so --check accepts only what code generation
 * compiles. Runs after the rule, whose dtype diagnostics come first. */
static bool check_dtypes(Ctx *c, Node *n) {
  if (n->nin == 0 || op_dtype_ok(n->op, IN(n, 0)->dt)) return true;
  char set[64];
  return sh_err(c, n, "operand dtype %s is not supported (the op "
                "compiles for %s only)", dt_name(IN(n, 0)->dt),
                dts_str(op_dtypes(n->op), set, sizeof set));
}

bool shape_infer(Ctx *c, Node *n) {
  RLX_ASSERT(n->op < OP_COUNT);
  if (op_has(n->op, OPF_PSEUDO)) return rules[n->op](c, n);
  for (int i = 0; i < n->nin; i++)
    if (!n->in[i] || n->in[i]->type.dt >= DT_COUNT) {
      n->type.dt = DT_INVALID;
      return false;
    }
  bool ok = check_generic(c, n) && check_dynamic(c, n);
  if (ok) {
    memset(&n->type, 0, sizeof n->type);
    ok = rules[n->op](c, n) && check_dtypes(c, n) && check_result(c, n);
  }
  if (!ok) n->type.dt = DT_INVALID;
  return ok;
}

/* ---- pseudo ops ---- */
bool shape_arg(Ctx *c, Node *n) { return n->type.dt < DT_COUNT; }
