/* partials.c: partial derivatives both modes' rules build (ad.h): the
 * normalized axes of a reduction, the partials of reduce_prod (exact
 * with zeros), and f''(x) of activation_backward's kinds. Below the
 * VJP and JVP rules.
 */
#include "passes/ad/ad.h"

#include <string.h>

/* Normalized reduction axes of n (all when absent) and the keep_dims
 * shape of its result. Returns the number of axes. */
int ad_reduce_axes(const Node *n, int64_t *axes, Type *kept) {
  const Type *xt = &n->in[0]->type;
  int k;
  const int64_t *a = ir_attr_ints(n, ATTR_AXES, &k);
  bool mark[RLX_MAX_RANK] = {false};
  if (!a) {
    for (int i = 0; i < xt->rank; i++) mark[i] = true;
  } else {
    for (int i = 0; i < k; i++)
      mark[a[i] < 0 ? a[i] + xt->rank : a[i]] = true;
  }
  *kept = *xt;
  int m = 0;
  for (int i = 0; i < xt->rank; i++)
    if (mark[i]) {
      if (axes) axes[m] = i;
      m++;
      kept->dims[i] = 1;
    }
  kept->dt = n->type.dt;
  return m;
}

/* reduce_prod. The partial of x_i is the product of the other elements of
 * its reduced set, built as (exclusive prefix product) * (exclusive
 * suffix product): no division and no zero test, so it is exact with
 * zeros, and it is a polynomial in x made of mul, narrow and concat,
 * whose own rules differentiate it exactly again (HVP, second order):
 * a branch on the zero count would be a constant to them and lose
 * every term through a zero element's tangent. */

/* v [O, m] moved by s along axis 1 towards higher indices (rev: lower),
 * the s cells left empty holding 1. */
static Node *shift_ones(IrBuilder *b, Node *v, int64_t s, bool rev) {
  int64_t m = v->type.dims[1];
  Type t = v->type;
  t.dims[1] = s;
  Node *one = ib_fill(b, t, 1);
  Node *keep = ib_narrow(b, v, 1, rev ? s : 0, m - s);
  Node *p[2] = {rev ? keep : one, rev ? one : keep};
  return ib_concat(b, p, 2, 1);
}

/* Exclusive running products along axis 1 of v [O, m] (m >= 2):
 * r[:, i] = v[:, 0] ... v[:, i-1] (rev: v[:, i+1] ... v[:, m-1]), 1 for
 * an empty product. Hillis-Steele doubling: after the steps s = 1, 2,
 * 4, ... < m - 1 each cell holds the product of a window of at least
 * m - 1 shifted cells, i.e. of all it needs. */
static Node *excl_prod(IrBuilder *b, Node *v, bool rev) {
  int64_t m = v->type.dims[1];
  Node *r = shift_ones(b, v, 1, rev);
  for (int64_t s = 1; s < m - 1; s *= 2)
    r = ib_bin(b, OP_MUL, r, shift_ones(b, r, s, rev));
  return r;
}

/* The partials of reduce_prod n at x (x's shape): x transposed so that
 * the reduced axes come last (kept axes first, both in order), viewed
 * as [O, m], one reduced set per row; transposed back at the end. O
 * may be dynamic (a size), m is static (passes/pipeline.c). */
Node *ad_prod_partials(IrBuilder *b, const Node *n, Node *x) {
  Type kept;
  int64_t axes[RLX_MAX_RANK], perm[RLX_MAX_RANK], inv[RLX_MAX_RANK];
  int k = ad_reduce_axes(n, axes, &kept), r = x->type.rank, j = 0;
  bool red[RLX_MAX_RANK] = {false}, moved = false;
  int64_t o = 1, m = 1;
  for (int i = 0; i < k; i++) red[axes[i]] = true;
  for (int pass = 0; pass < 2; pass++)
    for (int i = 0; i < r; i++)
      if (red[i] == (pass == 1)) {
        DimStatus st = dim_mul(b->c, pass ? m : o, x->type.dims[i],
                               pass ? &m : &o);
        RLX_ASSERT(st == DIM_OK); /* a factor of x's element count */
        moved |= i != j;
        inv[i] = j;
        perm[j++] = i;
      }
  RLX_ASSERT(dim_is_static(m)); /* pipeline.c: prod_dynamic_axis */
  if (m <= 1 || o == 0) /* sets of one element (or no element) */
    return ib_fill(b, x->type, 1);
  Node *xp = moved ? ib_transpose(b, x, perm) : x;
  int64_t d[2] = {o, m};
  Node *v = ib_reshape(b, xp, 2, d);
  Node *p = ib_bin(b, OP_MUL, excl_prod(b, v, false), excl_prod(b, v, true));
  p = ib_reshape_as(b, p, &xp->type);
  return moved ? ib_transpose(b, p, inv) : p;
}

/* f''(x) for activation_backward's kinds, from ordinary ops; NULL when
 * it is zero (piecewise-linear kinds). */
Node *ad_act_second(IrBuilder *b, const char *kind, Node *x, DType dt) {
#define SU(op, a) ib_un(b, op, a)
#define SB(op, a, b2) ib_bin(b, op, a, b2)
#define SM(a, b2) ib_bin(b, OP_MUL, a, b2)
#define KS(v) ib_scalar(b, dt, (v))
#define IS(k) (!strcmp(kind, k))
  if (IS("relu") || IS("abs") || IS("neg")) return NULL;
  if (IS("sigmoid") || IS("silu")) {
    Node *s = SU(OP_SIGMOID, x), *s1 = SM(s, SB(OP_SUB, KS(1), s));
    if (IS("sigmoid")) return SM(s1, SB(OP_SUB, KS(1), SM(KS(2), s)));
    Node *q = SM(x, SB(OP_SUB, KS(1), SM(KS(2), s)));
    return SM(s1, SB(OP_ADD, KS(2), q));
  }
  if (IS("gelu")) { /* phi(x) (2 - x^2) */
    Node *x2 = SM(x, x);
    Node *phi = SM(KS(0.3989422804014327), SU(OP_EXP, SM(KS(-0.5), x2)));
    return SM(phi, SB(OP_SUB, KS(2), x2));
  }
  if (IS("gelu_tanh")) { /* (1-t^2) (u' + x/2 (u'' - 2 t u'^2)) */
    double k = 0.7978845608028654, c = 0.044715;
    Node *x2 = SM(x, x);
    Node *u = SM(KS(k), SB(OP_ADD, x, SM(KS(c), SM(x2, x))));
    Node *t = SU(OP_TANH, u), *d = SB(OP_SUB, KS(1), SM(t, t));
    Node *u1 = SM(KS(k), SB(OP_ADD, KS(1), SM(KS(3 * c), x2)));
    Node *u2 = SM(KS(6 * k * c), x);
    Node *in = SB(OP_SUB, u2, SM(KS(2), SM(t, SM(u1, u1))));
    return SM(d, SB(OP_ADD, u1, SM(SM(KS(0.5), x), in)));
  }
  if (IS("tanh")) {
    Node *t = SU(OP_TANH, x);
    return SM(KS(-2), SM(t, SB(OP_SUB, KS(1), SM(t, t))));
  }
  if (IS("exp")) return SU(OP_EXP, x);
  if (IS("log")) return SB(OP_DIV, KS(-1), SM(x, x));
  if (IS("sqrt")) return SM(KS(-0.25), SB(OP_POW, x, KS(-1.5)));
  if (IS("rsqrt")) return SM(KS(0.75), SB(OP_POW, x, KS(-2.5)));
  if (IS("sin")) return SU(OP_NEG, SU(OP_SIN, x));
  if (IS("cos")) return SU(OP_NEG, SU(OP_COS, x));
  if (IS("tan")) {
    Node *t = SU(OP_TAN, x);
    return SM(SM(KS(2), t), SB(OP_ADD, KS(1), SM(t, t)));
  }
  RLX_ASSERT(IS("atan"));
  Node *q = SB(OP_ADD, KS(1), SM(x, x));
  return SB(OP_DIV, SM(KS(-2), x), SM(q, q));
#undef KS
#undef IS
#undef SU
#undef SB
#undef SM
}
