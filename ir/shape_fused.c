/* shape_fused.c: rules for the fused blocks (language.md 6.7).
 *
 * fused_transformer_layer: h [B, S, E] with E = heads*head_dim and
 *   I = intermediate; qkv_w [E, 3E], qkv_b [3E], out_w [E, E], out_b,
 *   ln1_g, ln1_b [E], fc1_w [E, I], fc1_b [I], fc2_w [I, E], fc2_b,
 *   ln2_g, ln2_b [E] (all h's float dtype), mask [B, S] (custom mask:
 *   bool or real). Result: h's type.
 * selective_scan(x, delta [b,s,h], a [h,n], b, c [b,s,n]), n =
 *   state_size -> x's type. gated_delta_net(q, k, v [b,s,H,n],
 *   g, beta [b,s,H]) -> q's type. One float dtype throughout.
 * Dynamic sizes: selective_scan and gated_delta_net any but the state
 * size (an attribute); fused_transformer_layer B and S (its expansion's
 * ops carry them), the hidden and intermediate sizes static.
 */
#include "ir/shape_internal.h"

enum { SYM_1, SYM_B, SYM_S, SYM_E, SYM_3E, SYM_I };
static const struct { const char *name; int rank; int d[3]; } tl_ops[] = {
  {"h", 3, {SYM_B, SYM_S, SYM_E}},     {"qkv_w", 2, {SYM_E, SYM_3E}},
  {"qkv_b", 1, {SYM_3E}},              {"out_w", 2, {SYM_E, SYM_E}},
  {"out_b", 1, {SYM_E}},               {"ln1_g", 1, {SYM_E}},
  {"ln1_b", 1, {SYM_E}},               {"fc1_w", 2, {SYM_E, SYM_I}},
  {"fc1_b", 1, {SYM_I}},               {"fc2_w", 2, {SYM_I, SYM_E}},
  {"fc2_b", 1, {SYM_E}},               {"ln2_g", 1, {SYM_E}},
  {"ln2_b", 1, {SYM_E}},               {"mask", 2, {SYM_B, SYM_S}},
};

bool shape_transformer(Ctx *c, Node *n) {
  const Type *h = IN(n, 0);
  int64_t hd, dd, im, e;
  if (!sh_want_float(c, n, 0, "h")) return false;
  if (h->rank != 3)
    return sh_err(c, n, "h must be [B, S, hidden], got %s", TS(h));
  if (!sh_int_attr(c, n, ATTR_HEADS, 1, RLX_MAX_ELEMS, &hd) ||
      !sh_int_attr(c, n, ATTR_HEAD_DIM, 1, RLX_MAX_ELEMS, &dd) ||
      !sh_int_attr(c, n, ATTR_INTERMEDIATE, 1, RLX_MAX_ELEMS, &im))
    return false;
  if (!sh_static(c, n, 0, 2, "the hidden size is heads * head_dim"))
    return false;
  if (__builtin_mul_overflow(hd, dd, &e) || e != h->dims[2])
    return sh_err(c, n, "heads %lld * head_dim %lld != hidden size %lld",
                  (long long)hd, (long long)dd, (long long)h->dims[2]);
  int64_t sym[] = {1, h->dims[0], h->dims[1], e, 3 * e, im};
  for (int i = 1; i < 14; i++) {
    Type t = {.dt = h->dt, .rank = tl_ops[i].rank};
    for (int j = 0; j < t.rank; j++) t.dims[j] = sym[tl_ops[i].d[j]];
    if (i == 13) {
      if (dt_is_complex(IN(n, i)->dt))
        return sh_err(c, n, "mask must be bool or real, got c64");
      t.dt = IN(n, i)->dt;
    }
    if (!sh_want_type(c, n, i, tl_ops[i].name, &t)) return false;
  }
  n->type = *h;
  return true;
}

/* Operand i must be dt[d0, d1, ...] (rank r). */
static bool want_dims(Ctx *c, const Node *n, int i, const char *what,
                      DType dt, int r, int64_t d0, int64_t d1, int64_t d2,
                      int64_t d3) {
  int64_t d[4] = {d0, d1, d2, d3};
  Type t = type_make(dt, r, d);
  return sh_want_type(c, n, i, what, &t);
}

bool shape_selective_scan(Ctx *c, Node *n) {
  const Type *x = IN(n, 0);
  int64_t ns;
  if (!sh_want_float(c, n, 0, "x")) return false;
  if (!sh_int_attr(c, n, ATTR_STATE_SIZE, 1, RLX_MAX_ELEMS, &ns))
    return false;
  if (x->rank != 3) return sh_err(c, n, "x must be [b, s, h], got %s",
                                  TS(x));
  int64_t b = x->dims[0], s = x->dims[1], h = x->dims[2];
  DType dt = x->dt;
  if (!want_dims(c, n, 1, "delta", dt, 3, b, s, h, 0) ||
      !want_dims(c, n, 2, "a", dt, 2, h, ns, 0, 0) ||
      !want_dims(c, n, 3, "b", dt, 3, b, s, ns, 0) ||
      !want_dims(c, n, 4, "c", dt, 3, b, s, ns, 0))
    return false;
  n->type = *x;
  return true;
}

bool shape_gated_delta_net(Ctx *c, Node *n) {
  const Type *q = IN(n, 0);
  int64_t ns;
  if (!sh_want_float(c, n, 0, "q")) return false;
  if (!sh_int_attr(c, n, ATTR_STATE_SIZE, 1, RLX_MAX_ELEMS, &ns))
    return false;
  if (q->rank != 4 || q->dims[3] != ns)
    return sh_err(c, n, "q must be [b, s, H, %lld] (state_size), got %s",
                  (long long)ns, TS(q));
  int64_t b = q->dims[0], s = q->dims[1], h = q->dims[2];
  if (!sh_want_type(c, n, 1, "k", q) || !sh_want_type(c, n, 2, "v", q) ||
      !want_dims(c, n, 3, "g", q->dt, 3, b, s, h, 0) ||
      !want_dims(c, n, 4, "beta", q->dt, 3, b, s, h, 0))
    return false;
  n->type = *q;
  return true;
}
