/* shape_check.c: the checks the shape rules (ir/shape_*.c) share,
 * below all of them: the "OPNAME: ..." diagnostic, dtype classes,
 * axes, overflow-checked dims, broadcasting, attribute ranges, and the
 * conv2d / pool2d output geometry (conv2d, q_conv2d, the pools and
 * their backward ops). Declared in shape_internal.h.
 */
#include "ir/shape_internal.h"

#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

bool sh_err(Ctx *c, const Node *n, const char *fmt, ...) {
  char buf[900];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(buf, sizeof buf, fmt, ap);
  va_end(ap);
  return diag_error(c, n->loc, "%s: %s", op_name(n->op), buf);
}

TypeStr sh_ts(const Type *t) {
  TypeStr r;
  type_str(t, r.s, sizeof r.s);
  return r;
}

DimStr sh_ds(int64_t d) {
  DimStr r;
  dim_str(d, r.s, sizeof r.s);
  return r;
}

bool sh_static(Ctx *c, const Node *n, int i, int axis, const char *why) {
  int64_t d = IN(n, i)->dims[axis];
  if (dim_is_static(d)) return true;
  return sh_err(c, n, "axis %d of operand %d is dynamic (%s); %s needs a "
                "static size there (%s)", axis, i, DS(d), op_name(n->op),
                why);
}

bool sh_static_type(Ctx *c, const Node *n, int i, const char *why) {
  int k = type_first_dynamic(IN(n, i));
  return k < 0 || sh_static(c, n, i, k, why);
}

/* ---- dtype helpers ---- */
bool sh_is_index_dt(DType dt) {
  return dt == DT_I32 || dt == DT_I64 || dt == DT_F32;
}

bool sh_want_float(Ctx *c, const Node *n, int i, const char *what) {
  DType dt = IN(n, i)->dt;
  if (i == 0 && op_dtypes(n->op) != DTS_ANY) { /* e.g. OPF_F32_F64 */
    char set[64];
    if (dt_is_float(dt) && op_dtype_ok(n->op, dt)) return true;
    return sh_err(c, n, "%s must have a dtype the op compiles for (%s), "
                  "got %s", what, dts_str(op_dtypes(n->op), set, sizeof set),
                  dt_name(dt));
  }
  if (dt_is_float(dt)) return true;
  return sh_err(c, n, "%s must have a float dtype (f32, f64, f16, bf16), "
                "got %s", what, dt_name(dt));
}

bool sh_want_float_or_complex(Ctx *c, const Node *n, int i,
                              const char *what) {
  DType dt = IN(n, i)->dt;
  if (dt_is_float(dt) || dt_is_complex(dt)) return true;
  return sh_err(c, n, "%s must have a float or c64 dtype, got %s", what,
                dt_name(dt));
}

bool sh_want_index(Ctx *c, const Node *n, int i, const char *what) {
  DType dt = IN(n, i)->dt;
  if (sh_is_index_dt(dt)) return true;
  return sh_err(c, n, "%s must have an index dtype (i32, i64 or f32), "
                "got %s", what, dt_name(dt));
}

bool sh_same_dtype(Ctx *c, const Node *n, int i, int j) {
  DType a = IN(n, i)->dt, b = IN(n, j)->dt;
  if (a == b) return true;
  return sh_err(c, n, "dtype mismatch: %s vs %s", dt_name(a), dt_name(b));
}

bool sh_want_type(Ctx *c, const Node *n, int i, const char *what,
                  const Type *t) {
  if (type_eq(IN(n, i), t)) return true;
  return sh_err(c, n, "%s has type %s, expected %s", what, TS(IN(n, i)),
                TS(t));
}

bool sh_want_rank(Ctx *c, const Node *n, int i, const char *what,
                  int rank) {
  if (IN(n, i)->rank == rank) return true;
  return sh_err(c, n, "%s must have rank %d, got %s", what, rank,
                TS(IN(n, i)));
}

/* ---- dims and axes ---- */
bool sh_axis(Ctx *c, const Node *n, int64_t axis, int rank, int *out) {
  if (axis < -rank || axis >= rank)
    return sh_err(c, n, "axis %lld out of range for rank %d",
                  (long long)axis, rank);
  *out = (int)(axis < 0 ? axis + rank : axis);
  return true;
}

/* A dim operation's failure as "OP: ..." (DIM_OK: true). */
static bool dim_check(Ctx *c, const Node *n, DimStatus st, int64_t a,
                      int64_t b, char op) {
  switch (st) {
  case DIM_OK: return true;
  case DIM_TOO_COMPLEX:
    return sh_err(c, n, "size %s %c %s is too complex to carry (over 8 "
                  "terms or a product of over 8 sizes)", DS(a), op, DS(b));
  case DIM_INEXACT:
    return sh_err(c, n, "size %s is not a multiple of %s", DS(a), DS(b));
  default:
    return sh_err(c, n, "size overflow: %s %c %s", DS(a), op, DS(b));
  }
}

bool sh_div(Ctx *c, const Node *n, int64_t a, int64_t b, int64_t *out) {
  return dim_check(c, n, dim_div(c, a, b, out), a, b, '/');
}

bool sh_mul(Ctx *c, const Node *n, int64_t a, int64_t b, int64_t *out) {
  if (!dim_is_static(a) || !dim_is_static(b))
    return dim_check(c, n, dim_mul(c, a, b, out), a, b, '*');
  if (__builtin_mul_overflow(a, b, out) || *out < 0 ||
      *out > RLX_MAX_ELEMS)
    return sh_err(c, n, "size overflow: %lld * %lld", (long long)a,
                  (long long)b);
  return true;
}

bool sh_add(Ctx *c, const Node *n, int64_t a, int64_t b, int64_t *out) {
  if (!dim_is_static(a) || !dim_is_static(b))
    return dim_check(c, n, dim_add(c, a, b, out), a, b, '+');
  if (__builtin_add_overflow(a, b, out) || *out < 0 ||
      *out > RLX_MAX_ELEMS)
    return sh_err(c, n, "size overflow: %lld + %lld", (long long)a,
                  (long long)b);
  return true;
}

bool sh_bcast(Ctx *c, const Node *n, const Type *a, const Type *b,
              Type *out) {
  int r = a->rank > b->rank ? a->rank : b->rank;
  Type t = {.dt = a->dt, .rank = r};
  for (int i = 0; i < r; i++) {
    int ia = a->rank - r + i, ib = b->rank - r + i;
    int64_t da = ia >= 0 ? a->dims[ia] : 1, db = ib >= 0 ? b->dims[ib] : 1;
    if (da != db && da != 1 && db != 1)
      return sh_err(c, n, "shapes %s and %s do not broadcast "
                    "(dimension %d: %s vs %s)", TS(a), TS(b), i, DS(da),
                    DS(db));
    t.dims[i] = da == 1 ? db : da;
  }
  *out = t;
  return true;
}

bool sh_f32_attr(Ctx *c, const Node *n, AttrId id, const char *why) {
  double v = ir_attr_float(n, id, 0);
  float f = (float)v;
  if (isfinite(f) && (f != 0 || v == 0)) return true;
  return sh_err(c, n, "%s %g is out of f32 range (rounds to %g)%s",
                attr_name(id), v, (double)f, why);
}

/* "NAME[i]" (i >= 0) or "NAME" into buf. */
static const char *attr_label(AttrId id, int i, char *buf, size_t n) {
  if (i < 0) snprintf(buf, n, "%s", attr_name(id));
  else snprintf(buf, n, "%s[%d]", attr_name(id), i);
  return buf;
}

/* Diagnoses v outside [lo, hi] for attribute `what`. An upper bound of
 * RLX_MAX_ELEMS (a size limit, not part of the op's rule) reads
 * ">= lo" below the range and "between lo and 2^40" above it. */
static bool in_range(Ctx *c, const Node *n, const char *what, int64_t v,
                     int64_t lo, int64_t hi) {
  if (v >= lo && v <= hi) return true;
  if (hi == RLX_MAX_ELEMS && v < lo)
    return sh_err(c, n, "%s must be >= %lld, got %lld", what,
                  (long long)lo, (long long)v);
  if (hi == RLX_MAX_ELEMS)
    return sh_err(c, n, "%s must be between %lld and 2^40, got %lld",
                  what, (long long)lo, (long long)v);
  return sh_err(c, n, "%s must be in [%lld, %lld], got %lld", what,
                (long long)lo, (long long)hi, (long long)v);
}

bool sh_int_attr(Ctx *c, const Node *n, AttrId id, int64_t lo, int64_t hi,
                 int64_t *out) {
  const Attr *a = ir_attr(n, id);
  RLX_ASSERT(a && a->kind == AK_INT);
  char what[64];
  if (!in_range(c, n, attr_label(id, -1, what, sizeof what), a->u.i, lo,
                hi))
    return false;
  *out = a->u.i;
  return true;
}

bool sh_ints_attr(Ctx *c, const Node *n, AttrId id, int k, int64_t lo,
                  int64_t hi, const int64_t *def, int64_t *out) {
  int m;
  const int64_t *v = ir_attr_ints(n, id, &m);
  if (!v && def) {
    v = def;
    m = k;
  }
  RLX_ASSERT(v != NULL);
  if (m != k)
    return sh_err(c, n, "%s must have %d entries, got %d", attr_name(id),
                  k, m);
  for (int i = 0; i < k; i++) {
    char what[64];
    if (!in_range(c, n, attr_label(id, i, what, sizeof what), v[i], lo,
                  hi))
      return false;
    out[i] = v[i];
  }
  return true;
}

/* ---- conv2d / pool2d geometry ---- */

/* Output size along one spatial dim; false if not positive. */
static bool out_size(Ctx *c, const Node *n, const char *which, int64_t in,
                     int64_t k, int64_t s, int64_t p, int64_t d,
                     int64_t *o) {
  int64_t span, num;
  if (__builtin_mul_overflow(d, k - 1, &span) ||
      __builtin_add_overflow(in, 2 * p, &num) ||
      __builtin_sub_overflow(num, span + 1, &num))
    return sh_err(c, n, "size overflow computing the output %s", which);
  if (num < 0)
    return sh_err(c, n, "output %s is not positive (input %lld, kernel "
                  "%lld, padding %lld, dilation %lld, stride %lld)", which,
                  (long long)in, (long long)k, (long long)p, (long long)d,
                  (long long)s);
  *o = num / s + 1;
  return true;
}

/* Axis `axis` of t static: t is an operand of n (sh_static) or the
 * type of n's `shape` attribute (a backward op's x or w). */
static bool static_axis(Ctx *c, const Node *n, const Type *t, int axis,
                        const char *why) {
  for (int i = 0; i < n->nin; i++)
    if (IN(n, i) == t) return sh_static(c, n, i, axis, why);
  if (dim_is_static(t->dims[axis])) return true;
  return sh_err(c, n, "axis %d of shape is dynamic (%s); %s needs a static "
                "size there (%s)", axis, DS(t->dims[axis]), op_name(n->op),
                why);
}

bool sh_conv2d_out(Ctx *c, const Node *n, const Type *x, const Type *w,
                   Type *out) {
  static const int64_t one[2] = {1, 1}, zero[2] = {0, 0};
  int64_t s[2], p[2], d[2], g;
  const int64_t big = RLX_MAX_ELEMS;
  if (x->rank != 4) return sh_err(c, n, "x must be [N, C, H, W], got %s",
                                  TS(x));
  if (w->rank != 4)
    return sh_err(c, n, "w must be [C_out, C_in/groups, kH, kW], got %s",
                  TS(w));
  if (!sh_ints_attr(c, n, ATTR_STRIDE, 2, 1, big, one, s) ||
      !sh_ints_attr(c, n, ATTR_PADDING, 2, 0, big, zero, p) ||
      !sh_ints_attr(c, n, ATTR_DILATION, 2, 1, big, one, d) ||
      !sh_int_attr(c, n, ATTR_GROUPS, 1, big, &g))
    return false;
  for (int i = 1; i < 4; i++)
    if (!static_axis(c, n, x, i, i == 1 ? "the channels are split into "
                     "groups" : "the output size is computed from it"))
      return false;
  for (int i = 0; i < 4; i++)
    if (!static_axis(c, n, w, i, "the kernel's sizes")) return false;
  if (x->dims[1] % g || w->dims[0] % g)
    return sh_err(c, n, "groups %lld must divide input channels %lld and "
                  "output channels %lld", (long long)g,
                  (long long)x->dims[1], (long long)w->dims[0]);
  if (w->dims[1] != x->dims[1] / g)
    return sh_err(c, n, "w %s needs %lld input channels per group (x %s, "
                  "groups %lld)", TS(w), (long long)(x->dims[1] / g),
                  TS(x), (long long)g);
  if (w->dims[2] < 1 || w->dims[3] < 1)
    return sh_err(c, n, "kernel must be non-empty, w is %s", TS(w));
  Type o = {.dt = x->dt, .rank = 4, .dims = {x->dims[0], w->dims[0]}};
  if (!out_size(c, n, "height", x->dims[2], w->dims[2], s[0], p[0], d[0],
                &o.dims[2]) ||
      !out_size(c, n, "width", x->dims[3], w->dims[3], s[1], p[1], d[1],
                &o.dims[3]))
    return false;
  *out = o;
  return true;
}

bool sh_pool2d_out(Ctx *c, const Node *n, const Type *x, Type *out) {
  static const int64_t zero[2] = {0, 0};
  int64_t k[2], s[2], p[2];
  const int64_t big = RLX_MAX_ELEMS;
  if (x->rank != 4) return sh_err(c, n, "x must be [N, C, H, W], got %s",
                                  TS(x));
  if (!sh_ints_attr(c, n, ATTR_KERNEL, 2, 1, big, NULL, k) ||
      !sh_ints_attr(c, n, ATTR_STRIDE, 2, 1, big, k, s) ||
      !sh_ints_attr(c, n, ATTR_PADDING, 2, 0, big, zero, p))
    return false;
  for (int i = 2; i < 4; i++)
    if (!static_axis(c, n, x, i, "the output size is computed from it"))
      return false;
  for (int i = 0; i < 2; i++)
    if (p[i] > k[i] / 2)
      return sh_err(c, n, "padding %lld exceeds half the kernel %lld",
                    (long long)p[i], (long long)k[i]);
  Type o = {.dt = x->dt, .rank = 4, .dims = {x->dims[0], x->dims[1]}};
  if (!out_size(c, n, "height", x->dims[2], k[0], s[0], p[0], 1, &o.dims[2])
      || !out_size(c, n, "width", x->dims[3], k[1], s[1], p[1], 1,
                   &o.dims[3]))
    return false;
  *out = o;
  return true;
}
