/* shape_reduce.c: rules for reductions, softmax, cumsum, cross entropy
 * and topk (language.md 6.3).
 *
 * reduce_*: `axes` absent = every axis; an explicit empty list reduces
 *   nothing (NumPy axis=()). Negative axes count from the end; an axis
 *   out of range or named twice is an error. keep_dims keeps reduced
 *   axes as size 1. dtypes: bool is rejected; reduce_mean wants float or
 *   c64; reduce_max/min reject c64.
 * softmax/log_softmax: float, axis in range (rank >= 1).
 * cumsum(_backward): numeric non-bool, axis in range (rank >= 1).
 * softmax_cross_entropy: logits [N, C] float, labels [N] index -> [N].
 * topk: real numeric, rank >= 1, k in [1, last dim] -> i64 [..., k].
 */
#include "ir/shape_internal.h"

/* Marks reduced axes in red[]; rank r. */
static bool reduce_axes(Ctx *c, Node *n, int r, bool *red) {
  int k;
  const int64_t *ax = ir_attr_ints(n, ATTR_AXES, &k);
  for (int i = 0; i < r; i++) red[i] = ax == NULL;
  for (int i = 0; ax && i < k; i++) {
    int a;
    if (!sh_axis(c, n, ax[i], r, &a)) return false;
    if (red[a])
      return sh_err(c, n, "axis %lld is named twice in axes",
                    (long long)ax[i]);
    red[a] = true;
  }
  return true;
}

bool shape_reduce(Ctx *c, Node *n) {
  const Type *x = IN(n, 0);
  if (x->dt == DT_BOOL)
    return sh_err(c, n, "bool operands are not supported (cast first)");
  if (n->op == OP_REDUCE_MEAN && dt_is_int(x->dt))
    return sh_err(c, n, "operand must have a float or c64 dtype, got %s",
                  dt_name(x->dt));
  if ((n->op == OP_REDUCE_MAX || n->op == OP_REDUCE_MIN) &&
      dt_is_complex(x->dt))
    return sh_err(c, n, "c64 operands cannot be ordered");
  bool red[RLX_MAX_RANK];
  if (!reduce_axes(c, n, x->rank, red)) return false;
  bool keep = ir_attr_bool(n, ATTR_KEEP_DIMS, false);
  Type t = {.dt = x->dt};
  for (int i = 0; i < x->rank; i++) {
    if (!red[i]) t.dims[t.rank++] = x->dims[i];
    else if (keep) t.dims[t.rank++] = 1;
  }
  n->type = t;
  return true;
}

bool shape_softmax(Ctx *c, Node *n) {
  int a;
  if (!sh_want_float(c, n, 0, "operand")) return false;
  if (!sh_axis(c, n, ir_attr_int(n, ATTR_AXIS, -1), IN(n, 0)->rank, &a))
    return false;
  n->type = *IN(n, 0);
  return true;
}

bool shape_cumsum(Ctx *c, Node *n) {
  int a;
  if (IN(n, 0)->dt == DT_BOOL)
    return sh_err(c, n, "bool operands are not supported (cast first)");
  if (!sh_axis(c, n, ir_attr_int(n, ATTR_AXIS, -1), IN(n, 0)->rank, &a))
    return false;
  n->type = *IN(n, 0);
  return true;
}

/* logits [N, C] (operand 0) and labels [N] (operand 1). */
static bool xent_check(Ctx *c, Node *n) {
  const Type *l = IN(n, 0), *y = IN(n, 1);
  if (!sh_want_float(c, n, 0, "logits")) return false;
  if (!sh_want_index(c, n, 1, "labels")) return false;
  if (l->rank != 2)
    return sh_err(c, n, "logits must be [N, C], got %s", TS(l));
  if (dim_is_static(l->dims[1]) && l->dims[1] < 1)
    return sh_err(c, n, "logits need at least one class, got %s", TS(l));
  if (y->rank != 1 || y->dims[0] != l->dims[0])
    return sh_err(c, n, "labels must be [%s] to match logits %s, got %s",
                  DS(l->dims[0]), TS(l), TS(y));
  return true;
}

bool shape_softmax_xent(Ctx *c, Node *n) {
  if (!xent_check(c, n)) return false;
  n->type = type_make(IN(n, 0)->dt, 1, IN(n, 0)->dims);
  return true;
}

/* (logits, labels, dloss [N]) -> logits' type */
bool shape_softmax_xent_bwd(Ctx *c, Node *n) {
  if (!xent_check(c, n)) return false;
  Type dl = type_make(IN(n, 0)->dt, 1, IN(n, 0)->dims);
  if (!sh_want_type(c, n, 2, "dloss", &dl)) return false;
  n->type = *IN(n, 0);
  return true;
}

bool shape_topk(Ctx *c, Node *n) {
  const Type *x = IN(n, 0);
  if (x->dt == DT_BOOL || dt_is_complex(x->dt))
    return sh_err(c, n, "operand must be real numeric, got %s",
                  dt_name(x->dt));
  if (x->rank < 1)
    return sh_err(c, n, "operand must have rank >= 1, got %s", TS(x));
  if (!sh_static(c, n, 0, x->rank - 1, "k is checked against it"))
    return false;
  int64_t last = x->dims[x->rank - 1];
  int64_t k = ir_attr_int(n, ATTR_K, 0);
  if (k < 1 || k > last)
    return sh_err(c, n, "k must be in [1, %lld] (last dimension), got %lld",
                  (long long)last, (long long)k);
  n->type = *x;
  n->type.dt = DT_I64;
  n->type.dims[x->rank - 1] = k;
  return true;
}
