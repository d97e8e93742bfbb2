/* shape.c: shape/dtype inference dispatcher and the helpers that the
 * rules in ir/shape_*.c share.
 *
 * Entry point: shape_infer(). The rule table is generated from ops.def
 * (one shape_RULE per row), so an op without a rule does not link.
 * Generic checks done here, in order: an invalid operand makes the node
 * invalid silently; operand count; required attributes present; set
 * attributes of the declared kind. Then the op's rule runs; on success
 * operand 0's dtype is checked against the op table (op_dtypes), and
 * the result's rank and element count against RLX_MAX_RANK and
 * RLX_MAX_ELEMS. On failure n->type.dt is DT_INVALID.
 */
#include "ir/shape_internal.h"

#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

typedef bool (*ShapeRule)(Ctx *c, Node *n);

static const ShapeRule rules[OP_COUNT] = {
#define OP(id, name, nmin, nmax, flags, rule, vjp, jvp, emit, attrs, math) \
  [OP_##id] = shape_##rule,
#include "ir/ops.def"
#undef OP
};

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

static const char *kind_text(AttrKind k) {
  switch (k) {
  case AK_INT: return "an integer";
  case AK_INTS: return "a list of integers";
  case AK_FLOAT: return "a number";
  case AK_BOOL: return "true or false";
  case AK_DTYPE: return "a dtype";
  case AK_ENUM: return "a word";
  case AK_GRAPH: return "a graph reference";
  }
  return "?";
}

/* Operand count, required attributes, attribute kinds. */
static bool check_generic(Ctx *c, Node *n) {
  const OpInfo *oi = op_info(n->op);
  if (n->nin < oi->min_in || (oi->max_in >= 0 && n->nin > oi->max_in)) {
    if (oi->min_in == oi->max_in)
      return sh_err(c, n, "expected %d operand%s, got %d", oi->min_in,
                    oi->min_in == 1 ? "" : "s", n->nin);
    if (n->nin < oi->min_in)
      return sh_err(c, n, "expected at least %d operand%s, got %d",
                    oi->min_in, oi->min_in == 1 ? "" : "s", n->nin);
    return sh_err(c, n, "expected at most %d operands, got %d", oi->max_in,
                  n->nin);
  }
  for (int i = 0; i < oi->nattrs; i++)
    if (oi->attrs[i].required && !ir_attr_present(n, oi->attrs[i].id))
      return sh_err(c, n, "missing attribute '%s'",
                    attr_name(oi->attrs[i].id));
  for (int i = 0; i < n->nattr; i++) {
    const Attr *a = &n->attrs[i];
    if (!op_attr_spec(n->op, a->id))
      return sh_err(c, n, "unknown attribute '%s'", attr_name(a->id));
    if (a->kind != attr_kind(a->id))
      return sh_err(c, n, "attribute '%s' must be %s", attr_name(a->id),
                    kind_text(attr_kind(a->id)));
    if (a->kind == AK_GRAPH && !a->u.graph)
      return sh_err(c, n, "attribute '%s' names no graph",
                    attr_name(a->id));
    if (a->kind == AK_ENUM && (!a->u.word || !attr_word_ok(a->id,
                                                           a->u.word)))
      return sh_err(c, n, "attribute '%s' has an invalid value '%s'",
                    attr_name(a->id), a->u.word ? a->u.word : "");
  }
  return true;
}

/* Result rank/dims/element count within limits. */
static bool check_result(Ctx *c, Node *n) {
  const Type *t = &n->type;
  if (t->rank < 0 || t->rank > RLX_MAX_RANK)
    return sh_err(c, n, "result rank %d exceeds the maximum %d", t->rank,
                  RLX_MAX_RANK);
  int64_t e = 1;
  for (int i = 0; i < t->rank; i++) {
    if (t->dims[i] < 0 || t->dims[i] > RLX_MAX_ELEMS)
      return sh_err(c, n, "result dimension %d is %lld, out of range", i,
                    (long long)t->dims[i]);
    if (__builtin_mul_overflow(e, t->dims[i], &e) || e > RLX_MAX_ELEMS)
      return sh_err(c, n, "result has too many elements (over %lld)",
                    (long long)RLX_MAX_ELEMS);
  }
  return true;
}

/* Operand 0's dtype is one the op compiles for (op_dtypes: the op
 * table's OPF_F32_F64), so --check accepts only what code generation
 * compiles. Runs after the rule, whose dtype diagnostics come first. */
static bool check_dtypes(Ctx *c, Node *n) {
  if (n->nin == 0 || op_dtype_ok(n->op, IN(n, 0)->dt)) return true;
  char set[64];
  return sh_err(c, n, "operand dtype %s is not supported (the op "
                "compiles for %s only)", dt_name(IN(n, 0)->dt),
                dts_str(op_dtypes(n->op), set, sizeof set));
}

bool shape_infer(Ctx *c, Node *n) {
  RLX_ASSERT(n->op < OP_COUNT);
  if (op_has(n->op, OPF_PSEUDO)) return rules[n->op](c, n);
  for (int i = 0; i < n->nin; i++)
    if (!n->in[i] || n->in[i]->type.dt >= DT_COUNT) {
      n->type.dt = DT_INVALID;
      return false;
    }
  bool ok = check_generic(c, n);
  if (ok) {
    memset(&n->type, 0, sizeof n->type);
    ok = rules[n->op](c, n) && check_dtypes(c, n) && check_result(c, n);
  }
  if (!ok) n->type.dt = DT_INVALID;
  return ok;
}

/* ---- pseudo ops ---- */
bool shape_arg(Ctx *c, Node *n) { return n->type.dt < DT_COUNT; }

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

bool sh_mul(Ctx *c, const Node *n, int64_t a, int64_t b, int64_t *out) {
  if (__builtin_mul_overflow(a, b, out) || *out < 0 ||
      *out > RLX_MAX_ELEMS)
    return sh_err(c, n, "size overflow: %lld * %lld", (long long)a,
                  (long long)b);
  return true;
}

bool sh_add(Ctx *c, const Node *n, int64_t a, int64_t b, int64_t *out) {
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
                    "(dimension %d: %lld vs %lld)", TS(a), TS(b), i,
                    (long long)da, (long long)db);
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
