/* shape_conv.c: rules for conv2d and 2-D pooling (language.md 6.5)
 * and their backward ops (6.9); their output geometry is in
 * shape_check.c (q_conv2d shares it).
 *
 * conv2d(x [N, C, H, W], w [Co, C/groups, kH, kW]): stride, dilation
 *   >= 1, padding >= 0, groups divides C and Co. Each output size
 *   (H + 2p - d(k-1) - 1)/s + 1 must be positive.
 * max/avg_pool2d(x [N, C, H, W]): kernel >= 1, stride (default kernel)
 *   >= 1, padding >= 0 and at most half the kernel; output size
 *   (H + 2p - k)/s + 1 must be positive.
 * avg_pool2d_backward (dy, shape = x's shape) -> dy.dtype[shape];
 *   max_pool2d_backward (x, dy [pool output]) -> x's type.
 * conv2d_backward_input (dy, w, shape = x's shape) -> dy.dtype[shape];
 * conv2d_backward_weight (x, dy, shape = w's shape) -> dy.dtype[shape].
 * Dynamic sizes: the batch N only (of x, dy and the `shape` attribute).
 */
#include "ir/shape_internal.h"

#include <math.h>
#include <stdio.h>
#include <string.h>

bool shape_conv2d(Ctx *c, Node *n) {
  if (!sh_want_float(c, n, 0, "x") || !sh_same_dtype(c, n, 0, 1))
    return false;
  return sh_conv2d_out(c, n, IN(n, 0), IN(n, 1), &n->type);
}

bool shape_pool2d(Ctx *c, Node *n) {
  if (!sh_want_float(c, n, 0, "x")) return false;
  return sh_pool2d_out(c, n, IN(n, 0), &n->type);
}

/* The `shape` attribute as a type of dtype dt (dims >= 0, or dynamic
 * sizes: the AD rules write x's type, sh_conv2d_out / sh_pool2d_out
 * keep all but the batch static). */
static bool shape_of_attr(Ctx *c, const Node *n, DType dt, Type *t) {
  int k;
  const int64_t *v = ir_attr_ints(n, ATTR_SHAPE, &k);
  if (k > RLX_MAX_RANK)
    return sh_err(c, n, "shape has rank %d, the maximum is %d", k,
                  RLX_MAX_RANK);
  *t = (Type){.dt = dt, .rank = k};
  for (int i = 0; i < k; i++) {
    bool dyn = v[i] < -1 && dim_valid(v[i]); /* ?b */
    if (!dyn && (v[i] < 0 || v[i] > RLX_MAX_ELEMS))
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

bool shape_max_pool_bwd(Ctx *c, Node *n) {
  const Type *x = IN(n, 0);
  Type dy;
  if (!sh_want_float(c, n, 0, "x") || !sh_pool2d_out(c, n, x, &dy) ||
      !sh_want_type(c, n, 1, "dy", &dy))
    return false;
  n->type = *x;
  return true;
}
