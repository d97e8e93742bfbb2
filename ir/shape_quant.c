/* shape_quant.c: rules for quantization ops (language.md 6.8,
 * ops-detail.md "Quantization") and their backward ops.
 *
 * fake_quantize(x): x float, 2 <= bits <= 8, axis (if set) in range.
 * fake_quantize_lsq(x, scale): as above; scale has x's dtype and is
 *   rank 0 or [1] (per tensor) or [x.shape[axis]] (with axis).
 * quantize(x) -> i8 of x's shape: x float, scale > 0, zero_point in
 *   [-128, 127]; scale finite and > 0 rounded to f32 unless x is f64.
 *   dequantize(q i8) -> f32: scale likewise in f32.
 * q_matmul(x i8 [M, K], w i8 [K, N], bias i32 [N][, mults f32 [N]])
 *   -> i8 [M, N] (mults: per-column multipliers, times mult);
 * q_conv2d(x i8 [N, C, H, W], w i8, bias i32 [C_out]) -> i8 (conv2d
 *   geometry). mult > 0 and finite, also as f32; zero points in
 *   [-128, 127].
 * dequant_matmul(x [..., K], w i8 [K, N], scales) -> [..., N] of x's
 *   float dtype; scales [N] (per column) or, with group_size G (which
 *   must divide K), [K/G, N]; scales have x's dtype.
 * grouped_matmul(x [T, K], w [E, K, N], expert [T] index) -> [T, N].
 * fake_quantize_backward(x, dy), fake_quantize_lsq_backward_x/scale
 *   (x, scale, dy): dy has x's type; results x's / scale's type.
 * Dynamic sizes (docs/dynamic-dims.md): the fake-quantization ops,
 * quantize and dequantize take them on any axis; q_matmul on M,
 * q_conv2d on the batch N, dequant_matmul on the leading axes of x; K
 * and the weights' sizes stay static.
 */
#include "ir/shape_internal.h"

#include <math.h>
#include <stdio.h>

static bool bits_axis(Ctx *c, const Node *n) {
  int64_t b;
  int a;
  if (!sh_want_float(c, n, 0, "x")) return false;
  if (!sh_int_attr(c, n, ATTR_BITS, 2, 8, &b)) return false;
  if (ir_attr_present(n, ATTR_AXIS) &&
      !sh_axis(c, n, ir_attr_int(n, ATTR_AXIS, 0), IN(n, 0)->rank, &a))
    return false;
  return true;
}

bool shape_fake_quantize(Ctx *c, Node *n) {
  if (!bits_axis(c, n)) return false;
  n->type = *IN(n, 0);
  return true;
}

/* x (0) and scale (1) of an lsq op. */
static bool lsq_check(Ctx *c, const Node *n) {
  const Type *x = IN(n, 0), *s = IN(n, 1);
  if (!bits_axis(c, n) || !sh_same_dtype(c, n, 0, 1)) return false;
  if (!ir_attr_present(n, ATTR_AXIS)) {
    if (s->rank == 0 || (s->rank == 1 && s->dims[0] == 1)) return true;
    return sh_err(c, n, "scale must be a scalar without axis, got %s",
                  TS(s));
  }
  int a;
  sh_axis(c, n, ir_attr_int(n, ATTR_AXIS, 0), x->rank, &a);
  if (s->rank == 1 && s->dims[0] == x->dims[a]) return true;
  return sh_err(c, n, "scale must be [%s] (x.shape[%d]), got %s",
                DS(x->dims[a]), a, TS(s));
}

bool shape_fake_quantize_lsq(Ctx *c, Node *n) {
  if (!lsq_check(c, n)) return false;
  n->type = *IN(n, 0);
  return true;
}

bool shape_lsq_bwd(Ctx *c, Node *n) {
  if (!lsq_check(c, n) || !sh_want_type(c, n, 2, "dy", IN(n, 0)))
    return false;
  n->type = *IN(n, n->op == OP_FAKE_QUANTIZE_LSQ_BACKWARD_X ? 0 : 1);
  return true;
}

static bool zp_ok(Ctx *c, const Node *n, AttrId id) {
  int64_t z;
  return sh_int_attr(c, n, id, -128, 127, &z);
}

static bool positive(Ctx *c, const Node *n, AttrId id) {
  double v = ir_attr_float(n, id, 0);
  if (v > 0 && !isinf(v)) return true;
  return sh_err(c, n, "%s must be finite and > 0, got %g", attr_name(id),
                v);
}

/* quantize computes x / scale in f64 for f64 x, else in f32 (f16 and
 * bf16 are computed in f32): scale must be finite there. */
bool shape_quantize(Ctx *c, Node *n) {
  if (!sh_want_float(c, n, 0, "x") || !positive(c, n, ATTR_SCALE) ||
      !zp_ok(c, n, ATTR_ZERO_POINT))
    return false;
  char why[64];
  snprintf(why, sizeof why, ", the precision used for %s x",
           dt_name(IN(n, 0)->dt));
  if (IN(n, 0)->dt != DT_F64 && !sh_f32_attr(c, n, ATTR_SCALE, why))
    return false;
  n->type = *IN(n, 0);
  n->type.dt = DT_I8;
  return true;
}

/* dequantize computes (q - zero_point) * scale in f32, its result. */
bool shape_dequantize(Ctx *c, Node *n) {
  if (IN(n, 0)->dt != DT_I8)
    return sh_err(c, n, "operand must be i8, got %s", TS(IN(n, 0)));
  if (!positive(c, n, ATTR_SCALE) ||
      !sh_f32_attr(c, n, ATTR_SCALE, ", the precision of the f32 result") ||
      !zp_ok(c, n, ATTR_ZERO_POINT))
    return false;
  n->type = *IN(n, 0);
  n->type.dt = DT_F32;
  return true;
}

/* Shared attribute and dtype checks of q_matmul / q_conv2d. */
static bool q_common(Ctx *c, const Node *n) {
  if (IN(n, 0)->dt != DT_I8 || IN(n, 1)->dt != DT_I8)
    return sh_err(c, n, "x and w must be i8, got %s and %s",
                  dt_name(IN(n, 0)->dt), dt_name(IN(n, 1)->dt));
  if (IN(n, 2)->dt != DT_I32)
    return sh_err(c, n, "bias must be i32, got %s", dt_name(IN(n, 2)->dt));
  /* mult is used rounded to f32 (language.md q_matmul) */
  return positive(c, n, ATTR_MULT) && sh_f32_attr(c, n, ATTR_MULT, "") &&
         zp_ok(c, n, ATTR_X_ZP) &&
         zp_ok(c, n, ATTR_W_ZP) && zp_ok(c, n, ATTR_OUT_ZP);
}

bool shape_q_matmul(Ctx *c, Node *n) {
  const Type *x = IN(n, 0), *w = IN(n, 1);
  if (!q_common(c, n)) return false;
  if (x->rank != 2 || w->rank != 2)
    return sh_err(c, n, "x and w must be matrices, got %s and %s", TS(x),
                  TS(w));
  if (!sh_static(c, n, 0, 1, "the inner dimension K") ||
      !sh_static_type(c, n, 1, "the weight matrix w"))
    return false;
  if (x->dims[1] != w->dims[0])
    return sh_err(c, n, "inner dimensions differ: %lld vs %lld",
                  (long long)x->dims[1], (long long)w->dims[0]);
  Type b = type_make(DT_I32, 1, &w->dims[1]);
  if (!sh_want_type(c, n, 2, "bias", &b)) return false;
  Type m = type_make(DT_F32, 1, &w->dims[1]);
  if (n->nin == 4 && !sh_want_type(c, n, 3, "mults", &m)) return false;
  int64_t d[2] = {x->dims[0], w->dims[1]};
  n->type = type_make(DT_I8, 2, d);
  return true;
}

bool shape_q_conv2d(Ctx *c, Node *n) {
  if (!q_common(c, n)) return false;
  if (!sh_conv2d_out(c, n, IN(n, 0), IN(n, 1), &n->type)) return false;
  Type b = type_make(DT_I32, 1, &IN(n, 1)->dims[0]);
  return sh_want_type(c, n, 2, "bias", &b);
}

bool shape_dequant_matmul(Ctx *c, Node *n) {
  const Type *x = IN(n, 0), *w = IN(n, 1);
  if (!sh_want_float(c, n, 0, "x")) return false;
  if (w->dt != DT_I8 || w->rank != 2)
    return sh_err(c, n, "w must be an i8 matrix [K, N], got %s", TS(w));
  if ((x->rank >= 1 && !sh_static(c, n, 0, x->rank - 1, "the inner "
                                  "dimension K")) ||
      !sh_static_type(c, n, 1, "the weight matrix w") ||
      !sh_static_type(c, n, 2, "the scales"))
    return false;
  if (x->rank < 1 || x->dims[x->rank - 1] != w->dims[0])
    return sh_err(c, n, "x must be [..., %lld] to match w %s, got %s",
                  (long long)w->dims[0], TS(w), TS(x));
  Type s = {.dt = x->dt, .rank = 1, .dims = {w->dims[1]}};
  if (ir_attr_present(n, ATTR_GROUP_SIZE)) {
    int64_t g;
    if (!sh_int_attr(c, n, ATTR_GROUP_SIZE, 1, RLX_MAX_ELEMS, &g))
      return false;
    if (w->dims[0] % g)
      return sh_err(c, n, "group_size %lld does not divide K = %lld",
                    (long long)g, (long long)w->dims[0]);
    s = (Type){.dt = x->dt, .rank = 2,
               .dims = {w->dims[0] / g, w->dims[1]}};
  }
  if (!sh_want_type(c, n, 2, "scales", &s)) return false;
  n->type = *x;
  n->type.dims[x->rank - 1] = w->dims[1];
  return true;
}

bool shape_grouped_matmul(Ctx *c, Node *n) {
  const Type *x = IN(n, 0), *w = IN(n, 1), *e = IN(n, 2);
  if (!sh_want_float(c, n, 0, "x") || !sh_same_dtype(c, n, 0, 1) ||
      !sh_want_index(c, n, 2, "expert"))
    return false;
  if (x->rank != 2 || w->rank != 3 || w->dims[1] != x->dims[1])
    return sh_err(c, n, "x [T, K] and w [E, K, N] do not fit: %s and %s",
                  TS(x), TS(w));
  if (!sh_static_type(c, n, 1, "the experts' weights are laid out as "
                      "[E, K, N] matrices"))
    return false;
  if (e->rank != 1 || e->dims[0] != x->dims[0])
    return sh_err(c, n, "expert must be [%s] (one per row of x), got %s",
                  DS(x->dims[0]), TS(e));
  int64_t d[2] = {x->dims[0], w->dims[2]};
  n->type = type_make(x->dt, 2, d);
  return true;
}

/* fake_quantize_backward (x, dy): dy has x's type. */
bool shape_fake_quantize_bwd(Ctx *c, Node *n) {
  const Type *x = IN(n, 0);
  if (!shape_fake_quantize(c, n) || !sh_want_type(c, n, 1, "dy", x))
    return false;
  n->type = *x;
  return true;
}
