/* shape_moe.c: rule of grouped_matmul's closed-form weight gradient
 * (language.md 6.9); grouped_matmul itself is in shape_quant.c.
 *
 * grouped_matmul_backward_weight(x [T, K], dy [T, N], expert [T] index,
 *   shape=[E, K, N]) -> [E, K, N] of x's float dtype; dy has x's dtype.
 * Dynamic sizes (with grouped_matmul's rule, shape_quant.c): the token
 * count T; K, N and E static.
 */
#include "ir/shape_internal.h"

bool shape_grouped_matmul_bwd(Ctx *c, Node *n) {
  const Type *x = IN(n, 0), *e = IN(n, 2);
  int k;
  const int64_t *s = ir_attr_ints(n, ATTR_SHAPE, &k);
  int64_t en, numel;
  if (!sh_want_float(c, n, 0, "x") || !sh_want_index(c, n, 2, "expert"))
    return false;
  if (k != 3 || s[0] < 0 || s[1] < 0 || s[2] < 0)
    return sh_err(c, n, "shape must be [E, K, N] (the shape of w)");
  if (!sh_mul(c, n, s[0], s[1], &en) || !sh_mul(c, n, en, s[2], &numel))
    return false;
  if (x->rank != 2 || x->dims[1] != s[1])
    return sh_err(c, n, "x must be [T, %lld] to match shape, got %s",
                  (long long)s[1], TS(x));
  int64_t d[2] = {x->dims[0], s[2]};
  Type dy = type_make(x->dt, 2, d);
  if (!sh_want_type(c, n, 1, "dy", &dy)) return false;
  if (e->rank != 1 || e->dims[0] != x->dims[0])
    return sh_err(c, n, "expert must be [%s] (one per row of x), got %s",
                  DS(x->dims[0]), TS(e));
  n->type = type_make(x->dt, 3, s);
  return true;
}
