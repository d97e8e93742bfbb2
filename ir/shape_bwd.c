/* shape_bwd.c: rules for the closed-form backward ops (language.md
 * 6.9). Each result has the type of the forward value it
 * differentiates; the upstream gradient dy must have the type of the
 * forward op's output. Operand conventions (ops.def comments):
 *
 * relu_backward / activation_backward / fake_quantize_backward (x, dy),
 *   max_pool2d_backward (x, dy [pool output]) -> x's type.
 * layer_norm_backward_input (x, gamma, dy) -> x; _gamma (x, dy) -> [C]
 *   with C = x.shape[axis] and x's dtype.
 * rms_norm / group_norm _backward_input|gamma|beta (x, gamma, beta, dy)
 * batch_norm_inference_backward_* (x, gamma, beta, mean, var, dy)
 *   -> x's / gamma's / beta's type.
 * avg_pool2d_backward (dy, shape = x's shape) -> dy.dtype[shape].
 * conv2d_backward_input (dy, w, shape = x's shape) -> dy.dtype[shape];
 * conv2d_backward_weight (x, dy, shape = w's shape) -> dy.dtype[shape].
 * attention_backward (q, k, v, dy [, mask], wrt) -> q's, k's or v's
 *   type (wrt=bias, only with mask=bias: the bias operand's); dy has
 *   q's type.
 * complex_norm_sq_backward (z c64, g f32 of z's shape) -> z's type.
 * (rope_backward, cumsum_backward, gather_backward,
 * softmax_cross_entropy_backward, fake_quantize_lsq_backward_*,
 * scan_backward*, log_mel_backward live beside their forward rules.)
 */
#include "ir/shape_internal.h"

#include <string.h>

bool shape_bwd_like_x(Ctx *c, Node *n) {
  const Type *x = IN(n, 0);
  Type dy = *x;
  if (n->op == OP_FAKE_QUANTIZE_BACKWARD) {
    if (!shape_fake_quantize(c, n)) return false;
  } else if (!sh_want_float(c, n, 0, "x")) {
    return false;
  }
  if (n->op == OP_MAX_POOL2D_BACKWARD && !sh_pool2d_out(c, n, x, &dy))
    return false;
  if (!sh_want_type(c, n, 1, "dy", &dy)) return false;
  n->type = *x;
  return true;
}

/* Per-channel vector operand check: [ch] of x's dtype. */
static bool want_vec(Ctx *c, const Node *n, int i, const char *what,
                     const Type *x, int64_t ch) {
  Type v = type_make(x->dt, 1, &ch);
  return sh_want_type(c, n, i, what, &v);
}

/* Channel count of the norm op's x (checks axis/groups/rank). */
static bool norm_channels(Ctx *c, const Node *n, int64_t *ch) {
  const Type *x = IN(n, 0);
  int ax;
  switch (n->op) {
  case OP_GROUP_NORM_BACKWARD_INPUT: case OP_GROUP_NORM_BACKWARD_GAMMA:
  case OP_GROUP_NORM_BACKWARD_BETA:
    if (!sh_group_count(c, n, x)) return false;
    *ch = x->dims[1];
    return true;
  case OP_BATCH_NORM_INFERENCE_BACKWARD_INPUT:
  case OP_BATCH_NORM_INFERENCE_BACKWARD_GAMMA:
  case OP_BATCH_NORM_INFERENCE_BACKWARD_BETA:
    if (!sh_batch_norm_x(c, n, x)) return false;
    *ch = x->dims[1];
    return true;
  default:
    if (!sh_norm_axis(c, n, x, &ax)) return false;
    *ch = x->dims[ax];
    return true;
  }
}

bool shape_norm_bwd(Ctx *c, Node *n) {
  static const char *const names[] = {"x", "gamma", "beta", "mean", "var"};
  int64_t ch;
  if (!norm_channels(c, n, &ch)) return false;
  int last = n->nin - 1;
  for (int i = 1; i < last; i++)
    if (!want_vec(c, n, i, names[i], IN(n, 0), ch)) return false;
  if (!sh_want_type(c, n, last, "dy", IN(n, 0))) return false;
  const char *nm = op_name(n->op);
  size_t l = strlen(nm);
  if (n->op == OP_LAYER_NORM_BACKWARD_GAMMA)
    n->type = type_make(IN(n, 0)->dt, 1, &ch);
  else if (l > 6 && !strcmp(nm + l - 6, "_input"))
    n->type = *IN(n, 0);
  else if (l > 6 && !strcmp(nm + l - 6, "_gamma"))
    n->type = *IN(n, 1);
  else
    n->type = *IN(n, 2); /* _beta */
  return true;
}

/* The `shape` attribute as a type of dtype dt (dims >= 0). */
static bool shape_of_attr(Ctx *c, const Node *n, DType dt, Type *t) {
  int k;
  const int64_t *v = ir_attr_ints(n, ATTR_SHAPE, &k);
  if (k > RLX_MAX_RANK)
    return sh_err(c, n, "shape has rank %d, the maximum is %d", k,
                  RLX_MAX_RANK);
  *t = (Type){.dt = dt, .rank = k};
  for (int i = 0; i < k; i++) {
    if (v[i] < 0 || v[i] > RLX_MAX_ELEMS)
      return sh_err(c, n, "shape[%d] = %lld is not a valid dimension", i,
                    (long long)v[i]);
    t->dims[i] = v[i];
  }
  return true;
}

bool shape_avg_pool_bwd(Ctx *c, Node *n) {
  Type x, o;
  if (!sh_want_float(c, n, 0, "dy")) return false;
  if (!shape_of_attr(c, n, IN(n, 0)->dt, &x) ||
      !sh_pool2d_out(c, n, &x, &o) || !sh_want_type(c, n, 0, "dy", &o))
    return false;
  n->type = x;
  return true;
}

bool shape_conv2d_bwd(Ctx *c, Node *n) {
  bool in = n->op == OP_CONV2D_BACKWARD_INPUT;
  int dyi = in ? 0 : 1;
  Type s, o;
  if (!sh_want_float(c, n, 0, in ? "dy" : "x") ||
      !sh_same_dtype(c, n, 0, 1))
    return false;
  if (!shape_of_attr(c, n, IN(n, 0)->dt, &s)) return false;
  const Type *x = in ? &s : IN(n, 0), *w = in ? IN(n, 1) : &s;
  if (!sh_conv2d_out(c, n, x, w, &o) || !sh_want_type(c, n, dyi, "dy", &o))
    return false;
  n->type = s;
  return true;
}

bool shape_attention_bwd(Ctx *c, Node *n) {
  Type o;
  if (!sh_attention_check(c, n, 4, &o) || !sh_want_type(c, n, 3, "dy", &o))
    return false;
  const char *w = ir_attr_word(n, ATTR_WRT);
  bool bias = !strcmp(ir_attr_word(n, ATTR_MASK), "bias");
  if (!strcmp(w, "bias") && !bias)
    return sh_err(c, n, "wrt=bias needs mask=bias");
  int i = !strcmp(w, "q") ? 0 : !strcmp(w, "k") ? 1 : !strcmp(w, "v") ? 2
                                                                       : 4;
  n->type = *IN(n, i);
  return true;
}

bool shape_complex_norm_sq_bwd(Ctx *c, Node *n) {
  const Type *z = IN(n, 0);
  if (z->dt != DT_C64)
    return sh_err(c, n, "z must be c64, got %s", TS(z));
  Type g = *z;
  g.dt = DT_F32;
  if (!sh_want_type(c, n, 1, "g", &g)) return false;
  n->type = *z;
  return true;
}
