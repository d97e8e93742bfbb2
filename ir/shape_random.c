/* shape_random.c: rules for randomness (language.md 6.8).
 *
 * rng_uniform/normal: f32[shape]; shape entries may be dynamic sizes
 *   (shape=[?b, 784]: the draws of the elements that exist are the
 *   static shape's, docs/dynamic-dims.md).
 * sample(logits [N, C]) -> i64 [N], N may be dynamic, C static;
 *   temperature >= 0 (0 = argmax), 0 <= top_k <= C (0 = off),
 *   0 < top_p <= 1.
 */
#include "ir/shape_internal.h"

#include <math.h>

bool shape_rng(Ctx *c, Node *n) {
  int k;
  const int64_t *v = ir_attr_ints(n, ATTR_SHAPE, &k);
  if (k > RLX_MAX_RANK)
    return sh_err(c, n, "shape has rank %d, the maximum is %d", k,
                  RLX_MAX_RANK);
  Type t = {.dt = DT_F32, .rank = k};
  for (int i = 0; i < k; i++) {
    bool dyn = v[i] < -1 && dim_valid(v[i]); /* ?b, ?b*2 */
    if (!dyn && (v[i] < 0 || v[i] > RLX_MAX_ELEMS))
      return sh_err(c, n, "shape[%d] = %lld is not a valid dimension", i,
                    (long long)v[i]);
    t.dims[i] = v[i];
  }
  n->type = t;
  return true;
}

bool shape_sample(Ctx *c, Node *n) {
  const Type *l = IN(n, 0);
  int64_t tk;
  if (!sh_want_float(c, n, 0, "logits")) return false;
  if (l->rank == 2 && !sh_static(c, n, 0, 1, "the class count bounds "
                                 "top_k"))
    return false;
  if (l->rank != 2 || l->dims[1] < 1)
    return sh_err(c, n, "logits must be [N, C] with C >= 1, got %s",
                  TS(l));
  double t = ir_attr_float(n, ATTR_TEMPERATURE, 1.0);
  double p = ir_attr_float(n, ATTR_TOP_P, 1.0);
  if (!(t >= 0) || isinf(t))
    return sh_err(c, n, "temperature must be finite and >= 0, got %g", t);
  if (!(p > 0 && p <= 1))
    return sh_err(c, n, "top_p must be in (0, 1], got %g", p);
  if (!sh_int_attr(c, n, ATTR_TOP_K, 0, l->dims[1], &tk)) return false;
  n->type = type_make(DT_I64, 1, l->dims);
  return true;
}
