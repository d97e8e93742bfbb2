/* shape_move.c: rules for shape and data movement (language.md 6.4)
 * and gather_backward.
 *
 * reshape: entries >= 0 or a single -1 (inferred; an error when the
 *   other entries multiply to 0, or when a dynamic element count is not
 *   an exact multiple of them); element counts must match.
 * transpose: perm is a permutation of [0, rank).
 * expand: NumPy broadcast_to: target rank >= input rank, each input dim
 *   (right-aligned) equals the target dim or is 1.
 * concat: >= 1 operand, equal dtypes and ranks (>= 1), dims equal except
 *   along axis (negative allowed), which are summed.
 * narrow: 0 <= start, 0 <= len, start + len <= dim (a static axis).
 * gather: NumPy take; indices i32/i64/f32 of any rank.
 * scatter_add(updates [N, ...], indices [N], shape) -> updates.dtype
 *   [shape], shape rank >= 1 and shape[1:] == updates.shape[1:]; N and
 *   the sizes of shape may be dynamic.
 * gather_backward(dy, indices, axis, shape): dy must be the gather
 *   output for a table of `shape`; result dy.dtype [shape].
 */
#include "ir/shape_internal.h"

/* Read a shape attribute (entries in [lo, MAX], or for reshape and
 * expand dynamic sizes) into t (dtype dt). */
static bool shape_attr(Ctx *c, Node *n, int64_t lo, DType dt, Type *t) {
  bool dyn_ok = n->op == OP_RESHAPE || n->op == OP_EXPAND ||
                n->op == OP_GATHER_BACKWARD || n->op == OP_SCATTER_ADD;
  int k;
  const int64_t *v = ir_attr_ints(n, ATTR_SHAPE, &k);
  if (k > RLX_MAX_RANK)
    return sh_err(c, n, "shape has rank %d, the maximum is %d", k,
                  RLX_MAX_RANK);
  t->dt = dt;
  t->rank = k;
  for (int i = 0; i < k; i++) {
    bool dyn = dyn_ok && v[i] < -1 && dim_valid(v[i]); /* ?b*2 */
    if (!dyn && (v[i] < lo || v[i] > RLX_MAX_ELEMS))
      return sh_err(c, n, "shape[%d] = %lld is not a valid dimension", i,
                    (long long)v[i]);
    t->dims[i] = v[i];
  }
  return true;
}

bool shape_reshape(Ctx *c, Node *n) {
  Type t;
  if (!shape_attr(c, n, -1, IN(n, 0)->dt, &t)) return false;
  int infer = -1;
  int64_t known = 1, have = 1;
  for (int i = 0; i < IN(n, 0)->rank; i++)
    if (!sh_mul(c, n, have, IN(n, 0)->dims[i], &have)) return false;
  for (int i = 0; i < t.rank; i++) {
    if (t.dims[i] == -1) {
      if (infer >= 0) return sh_err(c, n, "shape has more than one -1");
      infer = i;
    } else if (!sh_mul(c, n, known, t.dims[i], &known)) {
      return false;
    }
  }
  /* a dynamic element count divides exactly by a size or a product of
   * sizes (?b*784 / 784 = ?b), else the -1 cannot be carried */
  if (infer >= 0) {
    if (dim_div(c, have, known, &t.dims[infer]) != DIM_OK)
      return sh_err(c, n, "cannot infer -1: %s elements do not divide "
                    "into %s", DS(have), DS(known));
    known = have;
  }
  if (known != have)
    return sh_err(c, n, "element count differs: %s has %s, shape has %s",
                  TS(IN(n, 0)), DS(have), DS(known));
  n->type = t;
  return true;
}

bool shape_transpose(Ctx *c, Node *n) {
  const Type *x = IN(n, 0);
  int k;
  const int64_t *p = ir_attr_ints(n, ATTR_PERM, &k);
  if (k != x->rank)
    return sh_err(c, n, "perm has %d entries, operand rank is %d", k,
                  x->rank);
  bool seen[RLX_MAX_RANK] = {false};
  Type t = {.dt = x->dt, .rank = k};
  for (int i = 0; i < k; i++) {
    if (p[i] < 0 || p[i] >= k || seen[p[i]])
      return sh_err(c, n, "perm is not a permutation of [0, %d): "
                    "entry %d is %lld", k, i, (long long)p[i]);
    seen[p[i]] = true;
    t.dims[i] = x->dims[p[i]];
  }
  n->type = t;
  return true;
}

bool shape_expand(Ctx *c, Node *n) {
  const Type *x = IN(n, 0);
  Type t;
  if (!shape_attr(c, n, 0, x->dt, &t)) return false;
  if (t.rank < x->rank)
    return sh_err(c, n, "target rank %d is smaller than operand rank %d",
                  t.rank, x->rank);
  for (int i = 0; i < x->rank; i++) {
    int j = t.rank - x->rank + i;
    if (x->dims[i] != 1 && x->dims[i] != t.dims[j])
      return sh_err(c, n, "cannot broadcast %s to %s (dimension %d: "
                    "%s vs %s)", TS(x), TS(&t), j, DS(x->dims[i]),
                    DS(t.dims[j]));
  }
  n->type = t;
  return true;
}

bool shape_concat(Ctx *c, Node *n) {
  const Type *a = IN(n, 0);
  if (a->rank < 1)
    return sh_err(c, n, "operands must have rank >= 1, got %s", TS(a));
  int ax;
  if (!sh_axis(c, n, ir_attr_int(n, ATTR_AXIS, 0), a->rank, &ax))
    return false;
  Type t = *a;
  for (int i = 1; i < n->nin; i++) {
    const Type *b = IN(n, i);
    if (!sh_same_dtype(c, n, 0, i)) return false;
    if (b->rank != a->rank)
      return sh_err(c, n, "operand %d has rank %d, expected %d (%s vs %s)",
                    i, b->rank, a->rank, TS(b), TS(a));
    for (int d = 0; d < a->rank; d++)
      if (d != ax && b->dims[d] != a->dims[d])
        return sh_err(c, n, "operand %d has shape %s, expected %s except "
                      "along axis %d", i, TS(b), TS(a), ax);
    if (!sh_add(c, n, t.dims[ax], b->dims[ax], &t.dims[ax])) return false;
  }
  n->type = t;
  return true;
}

bool shape_narrow(Ctx *c, Node *n) {
  const Type *x = IN(n, 0);
  int ax;
  int64_t s, l;
  if (!sh_axis(c, n, ir_attr_int(n, ATTR_AXIS, 0), x->rank, &ax))
    return false;
  if (!sh_int_attr(c, n, ATTR_START, 0, RLX_MAX_ELEMS, &s)) return false;
  if (!sh_int_attr(c, n, ATTR_LEN, 0, RLX_MAX_ELEMS, &l)) return false;
  if (!sh_static(c, n, 0, ax, "start + len is checked against it"))
    return false;
  if (s + l > x->dims[ax])
    return sh_err(c, n, "start %lld + len %lld exceeds dimension %lld of "
                  "axis %d", (long long)s, (long long)l,
                  (long long)x->dims[ax], ax);
  n->type = *x;
  n->type.dims[ax] = l;
  return true;
}

static bool sh_gather_out(Ctx *c, const Node *n, const Type *t, const Type *idx,
                   Type *out) {
  int ax;
  if (t->rank < 1)
    return sh_err(c, n, "table must have rank >= 1, got %s", TS(t));
  if (!sh_axis(c, n, ir_attr_int(n, ATTR_AXIS, 0), t->rank, &ax))
    return false;
  int r = t->rank - 1 + idx->rank;
  if (r > RLX_MAX_RANK)
    return sh_err(c, n, "result rank %d exceeds the maximum %d", r,
                  RLX_MAX_RANK);
  Type o = {.dt = t->dt, .rank = 0};
  for (int i = 0; i < ax; i++) o.dims[o.rank++] = t->dims[i];
  for (int i = 0; i < idx->rank; i++) o.dims[o.rank++] = idx->dims[i];
  for (int i = ax + 1; i < t->rank; i++) o.dims[o.rank++] = t->dims[i];
  *out = o;
  return true;
}

bool shape_gather(Ctx *c, Node *n) {
  if (!sh_want_index(c, n, 1, "indices")) return false;
  return sh_gather_out(c, n, IN(n, 0), IN(n, 1), &n->type);
}

bool shape_gather_bwd(Ctx *c, Node *n) {
  Type t, g;
  if (IN(n, 0)->dt == DT_BOOL) /* a scatter-add, like scatter_add */
    return sh_err(c, n, "dy must be numeric, got bool");
  if (!sh_want_index(c, n, 1, "indices")) return false;
  if (!shape_attr(c, n, 0, IN(n, 0)->dt, &t)) return false;
  if (!sh_gather_out(c, n, &t, IN(n, 1), &g)) return false;
  if (!sh_want_type(c, n, 0, "dy", &g)) return false;
  n->type = t;
  return true;
}

bool shape_scatter_add(Ctx *c, Node *n) {
  const Type *u = IN(n, 0), *ix = IN(n, 1);
  Type t;
  if (u->dt == DT_BOOL)
    return sh_err(c, n, "updates must be numeric, got bool");
  if (!sh_want_index(c, n, 1, "indices")) return false;
  if (!shape_attr(c, n, 0, u->dt, &t)) return false;
  if (t.rank < 1) return sh_err(c, n, "shape must have rank >= 1");
  if (u->rank < 1)
    return sh_err(c, n, "updates must have rank >= 1, got %s", TS(u));
  if (ix->rank != 1 || ix->dims[0] != u->dims[0])
    return sh_err(c, n, "indices must be [%s] (one per updates row), "
                  "got %s", DS(u->dims[0]), TS(ix));
  bool ok = u->rank == t.rank;
  for (int i = 1; ok && i < t.rank; i++) ok = u->dims[i] == t.dims[i];
  if (!ok)
    return sh_err(c, n, "updates %s do not match shape %s beyond "
                  "dimension 0", TS(u), TS(&t));
  n->type = t;
  return true;
}
