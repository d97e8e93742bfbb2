/* shape_elem.c: rules for elementwise ops (language.md 6.1).
 *
 * unary: float dtypes only (f32 f64 f16 bf16), same type out.
 * unary_any (neg, abs, stop_gradient): any numeric dtype (not bool);
 *   abs rejects c64 (its result would be real: use complex_norm_sq).
 * binary: equal dtypes, NumPy broadcasting; c64 only for add/sub/mul/
 *   div; integers only for the OPF_INT ops (add sub mul min max: not
 *   div or pow); bool only for the OPF_BOOL ops mul/min/max (logical
 *   and/and/or on 0/1 values, e.g. a running "active" flag). The same
 *   flags decide what codegen/emit/elementwise_scalar.c compiles.
 * compare: equal dtypes, broadcasting, result bool; c64 only eq/ne.
 * where: cond bool or real numeric, a/b equal dtypes, 3-way broadcast.
 * cast: any real dtype to any dtype; c64 only to c64 (use real/imag).
 */
#include "ir/shape_internal.h"

bool shape_unary(Ctx *c, Node *n) {
  if (!sh_want_float(c, n, 0, "operand")) return false;
  n->type = *IN(n, 0);
  return true;
}

bool shape_unary_any(Ctx *c, Node *n) {
  DType dt = IN(n, 0)->dt;
  if (dt == DT_BOOL)
    return sh_err(c, n, "operand must be numeric, got bool");
  if (n->op == OP_ABS && dt_is_complex(dt))
    return sh_err(c, n, "c64 operands are not supported "
                  "(use complex_norm_sq)");
  if (dt_is_int(dt) && !op_has(n->op, OPF_INT))
    return sh_err(c, n, "%s operands are not supported (cast to a float "
                  "dtype first)", dt_name(dt));
  n->type = *IN(n, 0);
  return true;
}

bool shape_binary(Ctx *c, Node *n) {
  if (!sh_same_dtype(c, n, 0, 1)) return false;
  DType dt = IN(n, 0)->dt;
  if (dt == DT_BOOL && !op_has(n->op, OPF_BOOL))
    return sh_err(c, n, "bool operands are not supported (cast first)");
  if (dt_is_int(dt) && !op_has(n->op, OPF_INT))
    return sh_err(c, n, "%s operands are not supported (cast to a float "
                  "dtype first)", dt_name(dt));
  bool cplx_ok = n->op == OP_ADD || n->op == OP_SUB || n->op == OP_MUL ||
                 n->op == OP_DIV;
  if (dt_is_complex(dt) && !cplx_ok)
    return sh_err(c, n, "c64 operands are not supported");
  return sh_bcast(c, n, IN(n, 0), IN(n, 1), &n->type);
}

bool shape_compare(Ctx *c, Node *n) {
  if (!sh_same_dtype(c, n, 0, 1)) return false;
  if (dt_is_complex(IN(n, 0)->dt) && n->op != OP_EQ && n->op != OP_NE)
    return sh_err(c, n, "c64 operands cannot be ordered");
  if (!sh_bcast(c, n, IN(n, 0), IN(n, 1), &n->type)) return false;
  n->type.dt = DT_BOOL;
  return true;
}

bool shape_where(Ctx *c, Node *n) {
  if (dt_is_complex(IN(n, 0)->dt))
    return sh_err(c, n, "condition must be bool or real numeric, got c64");
  if (!sh_same_dtype(c, n, 1, 2)) return false;
  Type ab;
  if (!sh_bcast(c, n, IN(n, 1), IN(n, 2), &ab)) return false;
  if (!sh_bcast(c, n, IN(n, 0), &ab, &n->type)) return false;
  n->type.dt = IN(n, 1)->dt;
  return true;
}

bool shape_cast(Ctx *c, Node *n) {
  const Attr *a = ir_attr(n, ATTR_TO);
  DType to = a->u.dt, from = IN(n, 0)->dt;
  if (to >= DT_COUNT) return sh_err(c, n, "invalid target dtype");
  if (dt_is_complex(from) && !dt_is_complex(to))
    return sh_err(c, n, "cannot cast c64 to %s (use real or imag)",
                  dt_name(to));
  n->type = *IN(n, 0);
  n->type.dt = to;
  return true;
}

/* relu_backward / activation_backward (x, dy): dy has x's type. */
bool shape_act_bwd(Ctx *c, Node *n) {
  const Type *x = IN(n, 0);
  if (!sh_want_float(c, n, 0, "x") || !sh_want_type(c, n, 1, "dy", x))
    return false;
  n->type = *x;
  return true;
}
