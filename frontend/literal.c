/* literal.c: types, numeric literals and `const` expressions.
 *
 * fe_build_type checks a written TYPE (known dtype, rank <= RLX_MAX_RANK,
 * no negative dims, element count <= RLX_MAX_ELEMS) and builds its
 * dynamic dimensions (`?NAME`, `?NAME<=N`; a bare `?` is an error).
 * fe_store_scalar converts one literal to a dtype's storage with range
 * checks: integers must fit the integer dtype (bool: 0 or 1), floats
 * must be finite in the target float format unless written inf/nan,
 * floating-point literals are rejected in integer/bool contexts, and
 * true/false are accepted for bool only. f16/bf16 are rounded to
 * nearest-even directly from the double value; c64 stores (v, 0).
 * fe_build_const builds `const TYPE LITERAL` (splat scalar, or a flat
 * row-major list of exactly N elements; c64 lists hold re, im pairs).
 */
#include "frontend/fe_ast.h"

#include <float.h>
#include <math.h>
#include <string.h>

static bool dim_status(Ctx *c, Loc loc, DimStatus st) {
  if (st == DIM_OK) return true;
  return diag_error(c, loc, "dimension %s", st == DIM_OVERFLOW
                    ? "exceeds the limit of 2^40 elements"
                    : "expression is too complex (over 8 terms or a "
                      "product of over 8 sizes)");
}

/* One written dimension as a dim: static, or dynamic (ir/dim.c). */
bool fe_build_dim(Ctx *c, const FeDim *d, int64_t *out) {
  int64_t a, b;
  switch (d->kind) {
  case FD_INT:
    *out = d->num.i;
    if (d->num.i < 0)
      return diag_error(c, d->loc, "negative dimension %lld",
                        (long long)d->num.i);
    if (d->num.i > RLX_MAX_ELEMS)
      return diag_error(c, d->loc, "dimension %lld exceeds the limit "
                        "of 2^40 elements", (long long)d->num.i);
    return true;
  case FD_BARE:
    return diag_error(c, d->loc, "a dynamic dimension needs a name: "
                      "write ?NAME or ?NAME<=N");
  case FD_SYM: {
    int64_t old = dim_sym_bound(c, d->name);
    if (d->has_bound && (d->num.is_float || d->num.i < 1 ||
                         d->num.i > RLX_MAX_ELEMS))
      return diag_error(c, d->num.loc, "the bound of ?%s must be a "
                        "positive integer of at most 2^40, got %.40s",
                        d->name, d->num.text ? d->num.text : "");
    if (dim_sym(c, d->name, d->has_bound ? d->num.i : 0, out) ==
        DIM_BOUND_CLASH)
      return diag_error(c, d->num.loc, "?%s is bounded by %lld here but "
                        "by %lld before (a name is one size in the "
                        "module)", d->name, (long long)d->num.i,
                        (long long)old);
    return true;
  }
  case FD_ADD:
  case FD_MUL:
    if (!fe_build_dim(c, d->l, &a) || !fe_build_dim(c, d->r, &b)) return false;
    return dim_status(c, d->loc, d->kind == FD_ADD ? dim_add(c, a, b, out)
                                                   : dim_mul(c, a, b, out));
  }
  RLX_ASSERT(!"bad FeDim kind");
  return false;
}

bool fe_build_type(Ctx *c, const FeType *t, Type *out) {
  *out = (Type){.dt = DT_INVALID};
  bool ok = true, big = false;
  DType dt = dt_lookup(t->dtype);
  char hint[96];
  if (dt == DT_INVALID)
    ok = diag_error(c, t->loc, "unknown dtype '%s'%s", t->dtype,
                    suggest_dtype(t->dtype, hint, sizeof hint));
  if (t->n > RLX_MAX_RANK)
    return diag_error(c, t->dims[RLX_MAX_RANK]->loc, "rank %d exceeds "
                      "the maximum rank %d", t->n, RLX_MAX_RANK);
  /* the element count of the static sizes (a dynamic size is checked
   * when the entry is called) */
  int64_t dims[RLX_MAX_RANK], numel = 1;
  for (int i = 0; i < t->n; i++) {
    if (!fe_build_dim(c, t->dims[i], &dims[i])) ok = false;
    else if (!dim_is_static(dims[i]) || !dims[i]) continue;
    else if (numel > RLX_MAX_ELEMS / dims[i]) big = true;
    else numel *= dims[i];
  }
  if (ok && big)
    ok = diag_error(c, t->loc, "tensor type has more than 2^40 elements");
  if (!ok) return false;
  *out = type_make(dt, t->n, dims);
  return true;
}

/* Round |a| to a binary float with mbits fraction and ebits exponent
 * bits (IEEE layout, round to nearest even); the bits without sign.
 * Overflow gives infinity. */
static uint32_t small_float(double a, int mbits, int ebits) {
  int bias = (1 << (ebits - 1)) - 1, emin = 1 - bias;
  uint32_t inf = ((1u << ebits) - 1) << mbits;
  if (isnan(a)) return inf | (1u << (mbits - 1));
  if (isinf(a)) return inf;
  if (a == 0) return 0;
  int e;
  frexp(a, &e);
  int x = e - 1 < emin ? emin : e - 1;
  double r = nearbyint(ldexp(a, mbits - x)); /* exact scaling */
  if (r >= ldexp(1.0, mbits + 1)) {
    r /= 2;
    x++;
  }
  if (r < ldexp(1.0, mbits)) return (uint32_t)r; /* subnormal */
  if (x > bias) return inf;
  return ((uint32_t)(x + bias) << mbits) | ((uint32_t)r - (1u << mbits));
}

static bool range_error(Ctx *c, const FeNum *n, DType dt) {
  return diag_error(c, n->loc, "literal %.40s is out of range for %s",
                    n->text ? n->text : "", dt_name(dt));
}

static bool store_float(Ctx *c, const FeNum *n, double v, DType dt,
                        void *dst) {
  bool fin = isfinite(v);
  switch (dt) {
  case DT_F64: *(double *)dst = v; return true;
  case DT_F32:
  case DT_C64: {
    float f = (float)v, pair[2] = {f, 0};
    if (fin && isinf(f)) return range_error(c, n, dt);
    memcpy(dst, pair, dt == DT_C64 ? 8 : 4);
    return true;
  }
  case DT_F16:
  case DT_BF16: {
    bool h = dt == DT_F16;
    uint32_t bits = small_float(fabs(v), h ? 10 : 7, h ? 5 : 8);
    uint32_t inf = h ? 0x7c00 : 0x7f80;
    if (fin && bits == inf) return range_error(c, n, dt);
    uint16_t u = (uint16_t)(bits | (signbit(v) ? 0x8000u : 0));
    memcpy(dst, &u, 2);
    return true;
  }
  default: break;
  }
  RLX_ASSERT(!"not a float dtype");
  return false;
}

static bool store_int(Ctx *c, const FeNum *n, DType dt, void *dst) {
  int64_t v = n->i;
  switch (dt) {
  case DT_I8:
    if (v < INT8_MIN || v > INT8_MAX) return range_error(c, n, dt);
    *(int8_t *)dst = (int8_t)v;
    return true;
  case DT_U8:
  case DT_BOOL:
    if (v < 0 || v > (dt == DT_BOOL ? 1 : UINT8_MAX))
      return range_error(c, n, dt);
    *(uint8_t *)dst = (uint8_t)v;
    return true;
  case DT_I32:
    if (v < INT32_MIN || v > INT32_MAX) return range_error(c, n, dt);
    *(int32_t *)dst = (int32_t)v;
    return true;
  case DT_I64: memcpy(dst, &v, 8); return true;
  default: return store_float(c, n, (double)v, dt, dst);
  }
}

bool fe_store_scalar(Ctx *c, const FeScalar *sc, DType dt, void *dst) {
  if (sc->kind == FS_DIM)
    return diag_error(c, sc->num.loc, "a dynamic size is not a value "
                      "(only shape attributes take one)");
  if (sc->kind != FS_NUM) {
    if (dt != DT_BOOL)
      return diag_error(c, sc->num.loc, "'%s' is only valid for bool, "
                        "not %s", sc->kind == FS_TRUE ? "true" : "false",
                        dt_name(dt));
    *(uint8_t *)dst = sc->kind == FS_TRUE;
    return true;
  }
  const FeNum *n = &sc->num;
  if (!n->is_float) return store_int(c, n, dt, dst);
  if (dt_is_int(dt) || dt == DT_BOOL)
    return diag_error(c, n->loc, "floating-point literal %.40s where %s "
                      "is required", n->text ? n->text : "", dt_name(dt));
  return store_float(c, n, n->f, dt, dst);
}

/* Elements of a list literal into data (numel elements of t). */
static bool const_list(Ctx *c, const FeList *l, const Type *t,
                       void *data) {
  int64_t numel = type_numel(t);
  bool cplx = t->dt == DT_C64, ok = true;
  int64_t want = cplx ? 2 * numel : numel;
  char ts[160];
  if (l->n != want)
    return diag_error(c, l->loc, "const %s needs %lld %s, found %d",
                      type_str(t, ts, sizeof ts), (long long)want,
                      cplx ? "numbers (re, im pairs)" : "elements", l->n);
  size_t esz = cplx ? 4 : (size_t)dt_size(t->dt);
  DType edt = cplx ? DT_F32 : t->dt;
  for (int i = 0; i < l->n && !diag_too_many(c); i++)
    if (!fe_store_scalar(c, &l->v[i], edt, (char *)data + (size_t)i * esz))
      ok = false;
  return ok;
}

Node *fe_build_const(FeBuild *b, const FeExpr *e) {
  Type t;
  if (!fe_build_type(b->c, e->type, &t)) return NULL;
  if (!type_is_static(&t)) {
    char ts[160];
    diag_error(b->c, e->loc, "const %s: a constant needs a static type",
               type_str(&t, ts, sizeof ts));
    return NULL;
  }
  if (e->lit->kind == FV_SCALAR) {
    unsigned char buf[16];
    if (!fe_store_scalar(b->c, &e->lit->s, t.dt, buf)) return NULL;
    return ir_const_new(b->c, b->g, t, buf, true, e->loc);
  }
  void *data = NULL;
  if (e->lit->list->n == (t.dt == DT_C64 ? 2 : 1) * type_numel(&t))
    data = arena_alloc(b->c->arena, (size_t)type_bytes(&t) + 1);
  if (!const_list(b->c, e->lit->list, &t, data)) return NULL;
  return ir_const_new(b->c, b->g, t, data, false, e->loc);
}
