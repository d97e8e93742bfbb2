/* shape_nn.c: rules for normalization layers and rope (language.md
 * 6.5); attention is in shape_attention.c,
 * convolution and pooling in shape_conv.c.
 *
 * layer_norm / rms_norm(x, gamma, beta, axis): x float rank >= 1,
 *   gamma and beta of x's dtype and shape [x.shape[axis]] -> x's type.
 * group_norm(x, gamma, beta, groups): x [N, C, ...], groups >= 1
 *   divides C, gamma/beta [C].
 * batch_norm_inference(x, gamma, beta, mean, var): x [N, C, ...], the
 *   four per-channel operands [C]; all one float dtype.
 * rope / rope_backward(x, cos, sin, head_dim=D, n_rot=D): x [B, S, H*D]
 *   or [S, H*D]; D and n_rot even, 0 < n_rot <= D. cos and sin are
 *   [S, R] with R = n_rot/2 or R = D/2 (language.md writes D/2; only the
 *   first n_rot/2 columns are read, the row stride is R). Same dtype.
 * eps (where present) must be >= 0.
 * layer_norm_backward_input (x, gamma, dy) -> x; _gamma (x, dy) -> [C]
 *   with C = x.shape[axis] and x's dtype.
 * rms_norm / group_norm _backward_input|gamma|beta (x, gamma, beta, dy)
 * batch_norm_inference_backward_* (x, gamma, beta, mean, var, dy)
 *   -> x's / gamma's / beta's type.
 */
#include "ir/shape_internal.h"

#include <math.h>
#include <string.h>

static bool eps_ok(Ctx *c, const Node *n) {
  double e = ir_attr_float(n, ATTR_EPS, 0);
  if (!(e >= 0) || isinf(e))
    return sh_err(c, n, "eps must be finite and >= 0, got %g", e);
  return true;
}

/* Operand i is a [len] vector of x's dtype. */
static bool want_vec(Ctx *c, const Node *n, int i, const char *what,
                     const Type *x, int64_t len) {
  Type v = type_make(x->dt, 1, &len);
  return sh_want_type(c, n, i, what, &v);
}

static bool sh_norm_axis(Ctx *c, const Node *n, const Type *x, int *axis) {
  if (!dt_is_float(x->dt))
    return sh_err(c, n, "x must have a float dtype (f32, f64, f16, bf16), "
                  "got %s", dt_name(x->dt));
  if (!eps_ok(c, n)) return false;
  return sh_axis(c, n, ir_attr_int(n, ATTR_AXIS, -1), x->rank, axis);
}

bool shape_layer_norm(Ctx *c, Node *n) {
  const Type *x = IN(n, 0);
  int ax;
  if (!sh_norm_axis(c, n, x, &ax)) return false;
  if (!want_vec(c, n, 1, "gamma", x, x->dims[ax])) return false;
  if (!want_vec(c, n, 2, "beta", x, x->dims[ax])) return false;
  n->type = *x;
  return true;
}

/* x [N, C, ...] with groups dividing C. */
static bool sh_group_count(Ctx *c, const Node *n, const Type *x) {
  int64_t g;
  if (!dt_is_float(x->dt))
    return sh_err(c, n, "x must have a float dtype (f32, f64, f16, bf16), "
                  "got %s", dt_name(x->dt));
  if (!eps_ok(c, n)) return false;
  if (x->rank < 2)
    return sh_err(c, n, "x must be [N, C, ...], got %s", TS(x));
  if (!sh_int_attr(c, n, ATTR_GROUPS, 1, RLX_MAX_ELEMS, &g)) return false;
  if (!sh_static(c, n, 0, 1, "the channels are split into groups"))
    return false;
  if (x->dims[1] % g)
    return sh_err(c, n, "channels %lld are not divisible by groups %lld",
                  (long long)x->dims[1], (long long)g);
  return true;
}

bool shape_group_norm(Ctx *c, Node *n) {
  const Type *x = IN(n, 0);
  if (!sh_group_count(c, n, x)) return false;
  if (!want_vec(c, n, 1, "gamma", x, x->dims[1])) return false;
  if (!want_vec(c, n, 2, "beta", x, x->dims[1])) return false;
  n->type = *x;
  return true;
}

/* x [N, C, ...] of a float dtype and a valid eps (batch_norm_inference
 * and its backward ops). */
static bool sh_batch_norm_x(Ctx *c, const Node *n, const Type *x) {
  if (!sh_want_float(c, n, 0, "x") || !eps_ok(c, n)) return false;
  if (x->rank < 2)
    return sh_err(c, n, "x must be [N, C, ...], got %s", TS(x));
  return true;
}

bool shape_batch_norm(Ctx *c, Node *n) {
  static const char *const names[] = {"x", "gamma", "beta", "mean", "var"};
  const Type *x = IN(n, 0);
  if (!sh_batch_norm_x(c, n, x)) return false;
  for (int i = 1; i < 5; i++)
    if (!want_vec(c, n, i, names[i], x, x->dims[1])) return false;
  n->type = *x;
  return true;
}

/* head_dim D and n_rot R of a rope node: D, R even, 0 < R <= D. */
static bool rope_dims(Ctx *c, const Node *n, int64_t *d, int64_t *r) {
  if (!sh_int_attr(c, n, ATTR_HEAD_DIM, 1, RLX_MAX_ELEMS, d)) return false;
  *r = *d;
  if (ir_attr_present(n, ATTR_N_ROT) &&
      !sh_int_attr(c, n, ATTR_N_ROT, 1, *d, r))
    return false;
  if (*d % 2) return sh_err(c, n, "head_dim must be even, got %lld",
                            (long long)*d);
  if (*r % 2) return sh_err(c, n, "n_rot must be even, got %lld",
                            (long long)*r);
  return true;
}

bool shape_rope(Ctx *c, Node *n) {
  const Type *x = IN(n, 0), *cs = IN(n, 1);
  int64_t d, r;
  if (!sh_want_float(c, n, 0, "x")) return false;
  if (!rope_dims(c, n, &d, &r)) return false;
  if (x->rank != 2 && x->rank != 3)
    return sh_err(c, n, "x must be [B, S, H*D] or [S, H*D], got %s", TS(x));
  if (!sh_static(c, n, 0, x->rank - 1, "it is split into heads"))
    return false;
  int64_t s = x->dims[x->rank - 2], e = x->dims[x->rank - 1];
  if (e % d)
    return sh_err(c, n, "last dimension %lld of x is not a multiple of "
                  "head_dim %lld", (long long)e, (long long)d);
  bool ok = cs->rank == 2 && cs->dims[0] == s &&
            (cs->dims[1] == r / 2 || cs->dims[1] == d / 2);
  if (!ok)
    return sh_err(c, n, "cos must be [%s, %lld] (S, n_rot/2), got %s",
                  DS(s), (long long)(r / 2), TS(cs));
  if (!sh_same_dtype(c, n, 0, 1)) return false;
  if (!sh_want_type(c, n, 2, "sin", cs)) return false;
  n->type = *x;
  return true;
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
  /* dynamic sizes: those of the forward op (layer_norm and rms_norm: any
   * axis; group and batch norms: all but C) */
  const char *nm = op_name(n->op);
  if (!norm_channels(c, n, &ch)) return false;
  int last = n->nin - 1;
  for (int i = 1; i < last; i++)
    if (!want_vec(c, n, i, names[i], IN(n, 0), ch)) return false;
  if (!sh_want_type(c, n, last, "dy", IN(n, 0))) return false;
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
