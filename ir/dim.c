/* dim.c: dynamic dimensions (docs/dynamic-dims.md).
 *
 * A Type's dimension is either a static size (>= 0) or a dynamic one:
 * DIM_DYN_BASE - k, where k indexes an interned size expression of the
 * Ctx's DimTable. An expression is a sum of terms, each a positive
 * integer coefficient times a product of symbols (`?NAME`), kept in one
 * canonical form (symbols of a term sorted by name, terms sorted, equal
 * terms merged), so structurally equal sizes get one number and
 * type_eq, copies and the rules' `==` checks need no change. An
 * expression without symbols is its static value, never interned.
 *
 * The table lives in the Ctx's arena. type_str, which has no Ctx,
 * prints through the table of the newest live Ctx (dim_table_use, set
 * by ctx_new); numbering follows the order in which the front end
 * meets the sizes, so it is deterministic.
 */
#include "ir/ir.h"

#include <stdio.h>
#include <string.h>

/* An expression has at most DIM_MAX_TERMS terms of at most DIM_MAX_DEG
 * symbols; a temporary holds twice the terms before merging. Every
 * coefficient is positive, so merging never cancels a term: a sum with
 * more distinct terms than the limit stays over it. */
enum { DIM_MAX_TERMS = 8, DIM_MAX_DEG = RLX_MAX_RANK,
       DIM_CAP = 2 * DIM_MAX_TERMS };

typedef struct {
  int64_t coef;        /* > 0 */
  int n;               /* symbols in the product; 0: the constant */
  int sym[DIM_MAX_DEG]; /* symbol indices, sorted by name */
} DimTerm;

typedef struct {
  int n;
  DimTerm t[DIM_CAP];
} DimExpr;

typedef struct {
  const char *name;
  int64_t bound; /* 0: none */
} DimSym;

struct DimTable {
  Arena *a;
  int nsym, capsym;
  DimSym *syms;
  int nexpr, capexpr;
  DimExpr **exprs;
};

static _Thread_local DimTable *cur;

DimTable *dim_table_new(Arena *a) {
  DimTable *t = arena_alloc(a, sizeof *t);
  t->a = a;
  return t;
}

void dim_table_use(DimTable *t) { cur = t; }
DimTable *dim_table_current(void) { return cur; }

bool type_is_static(const Type *t) {
  return type_first_dynamic(t) < 0;
}

int type_first_dynamic(const Type *t) {
  for (int i = 0; i < t->rank; i++)
    if (!dim_is_static(t->dims[i])) return i;
  return -1;
}

static const DimExpr *expr_of(const DimTable *t, int64_t d) {
  if (!t || dim_is_static(d) || d > DIM_DYN_BASE) return NULL;
  int64_t k = DIM_DYN_BASE - d;
  return k < t->nexpr ? t->exprs[k] : NULL;
}

bool dim_valid(int64_t d) {
  return dim_is_static(d) ? d <= RLX_MAX_ELEMS : expr_of(cur, d) != NULL;
}

/* ---- canonical form ---- */
static int cmp_sym(const DimTable *t, int a, int b) {
  return a == b ? 0 : strcmp(t->syms[a].name, t->syms[b].name);
}

/* Terms by their symbol lists (shorter prefix first); the constant
 * (no symbols) last. */
static int cmp_term(const DimTable *t, const DimTerm *a, const DimTerm *b) {
  if (!a->n || !b->n) return (a->n == 0) - (b->n == 0);
  for (int i = 0; i < a->n && i < b->n; i++) {
    int c = cmp_sym(t, a->sym[i], b->sym[i]);
    if (c) return c;
  }
  return a->n - b->n;
}

/* Sort, merge equal terms, drop zero ones (insertion sort: few terms).
 * DIM_OVERFLOW when a merged coefficient leaves RLX_MAX_ELEMS,
 * DIM_TOO_COMPLEX over DIM_MAX_TERMS terms. */
static DimStatus canon(const DimTable *t, DimExpr *e) {
  for (int i = 1; i < e->n; i++)
    for (int j = i; j > 0 && cmp_term(t, &e->t[j - 1], &e->t[j]) > 0; j--) {
      DimTerm x = e->t[j];
      e->t[j] = e->t[j - 1];
      e->t[j - 1] = x;
    }
  int k = 0;
  for (int i = 0; i < e->n; i++) {
    if (k && cmp_term(t, &e->t[k - 1], &e->t[i]) == 0) {
      e->t[k - 1].coef += e->t[i].coef;
      if (e->t[k - 1].coef > RLX_MAX_ELEMS) return DIM_OVERFLOW;
    } else if (e->t[i].coef) {
      e->t[k++] = e->t[i];
    }
  }
  e->n = k;
  if (k == 1 && !e->t[0].n && e->t[0].coef > RLX_MAX_ELEMS)
    return DIM_OVERFLOW;
  return k > DIM_MAX_TERMS ? DIM_TOO_COMPLEX : DIM_OK;
}

static bool same_expr(const DimExpr *a, const DimExpr *b) {
  if (a->n != b->n) return false;
  for (int i = 0; i < a->n; i++) {
    const DimTerm *x = &a->t[i], *y = &b->t[i];
    if (x->coef != y->coef || x->n != y->n ||
        memcmp(x->sym, y->sym, (size_t)x->n * sizeof *x->sym))
      return false;
  }
  return true;
}

/* The dim of a canonical expression: its value when constant, else
 * the number of its interned copy. */
static int64_t intern(DimTable *t, const DimExpr *e) {
  if (e->n == 0) return 0;
  if (e->n == 1 && e->t[0].n == 0) return e->t[0].coef;
  for (int i = 0; i < t->nexpr; i++)
    if (same_expr(t->exprs[i], e)) return DIM_DYN_BASE - i;
  t->exprs = arena_grow(t->a, t->exprs, t->nexpr, &t->capexpr,
                        sizeof *t->exprs);
  DimExpr *copy = arena_alloc(t->a, sizeof *copy);
  *copy = *e;
  t->exprs[t->nexpr] = copy;
  return DIM_DYN_BASE - t->nexpr++;
}

/* e = d as an expression (a constant is one term, 0 none). */
static void load(const DimTable *t, int64_t d, DimExpr *e) {
  const DimExpr *x = expr_of(t, d);
  RLX_ASSERT(dim_is_static(d) || x);
  memset(e, 0, sizeof *e);
  if (x) *e = *x;
  else if (d) e->t[e->n++] = (DimTerm){.coef = d};
}

/* ---- symbols ---- */
DimStatus dim_sym(Ctx *c, const char *name, int64_t bound, int64_t *out) {
  DimTable *t = c->dims;
  int i = 0;
  while (i < t->nsym && strcmp(t->syms[i].name, name)) i++;
  if (i == t->nsym) {
    t->syms = arena_grow(t->a, t->syms, t->nsym, &t->capsym,
                         sizeof *t->syms);
    t->syms[t->nsym++] = (DimSym){arena_strdup(t->a, name), 0};
  }
  DimSym *s = &t->syms[i];
  if (bound && s->bound && s->bound != bound) return DIM_BOUND_CLASH;
  if (bound) s->bound = bound;
  DimExpr e = {.n = 1, .t[0] = {.coef = 1, .n = 1, .sym[0] = i}};
  *out = intern(t, &e);
  return DIM_OK;
}

int64_t dim_sym_bound(Ctx *c, const char *name) {
  for (int i = 0; i < c->dims->nsym; i++)
    if (!strcmp(c->dims->syms[i].name, name)) return c->dims->syms[i].bound;
  return 0;
}

/* ---- arithmetic ---- */
DimStatus dim_add(Ctx *c, int64_t a, int64_t b, int64_t *out) {
  DimExpr x, y;
  load(c->dims, a, &x);
  load(c->dims, b, &y);
  memcpy(&x.t[x.n], y.t, (size_t)y.n * sizeof *y.t); /* 8 + 8 fit */
  x.n += y.n;
  DimStatus st = canon(c->dims, &x);
  if (st == DIM_OK) *out = intern(c->dims, &x);
  return st;
}

/* p = p * q for terms; false when the degree is too high. */
static DimStatus term_mul(const DimTable *t, const DimTerm *p,
                          const DimTerm *q, DimTerm *r) {
  if (p->n + q->n > DIM_MAX_DEG) return DIM_TOO_COMPLEX;
  if (__builtin_mul_overflow(p->coef, q->coef, &r->coef) ||
      r->coef > RLX_MAX_ELEMS)
    return DIM_OVERFLOW;
  int i = 0, j = 0;
  r->n = 0;
  while (i < p->n || j < q->n)
    r->sym[r->n++] = j == q->n || (i < p->n && cmp_sym(t, p->sym[i],
                                                       q->sym[j]) <= 0)
                         ? p->sym[i++]
                         : q->sym[j++];
  return DIM_OK;
}

DimStatus dim_mul(Ctx *c, int64_t a, int64_t b, int64_t *out) {
  DimExpr x, y, r = {0};
  load(c->dims, a, &x);
  load(c->dims, b, &y);
  for (int i = 0; i < x.n; i++)
    for (int j = 0; j < y.n; j++) {
      DimStatus st = r.n < DIM_CAP ? DIM_OK : canon(c->dims, &r);
      if (st == DIM_OK)
        st = term_mul(c->dims, &x.t[i], &y.t[j], &r.t[r.n++]);
      if (st != DIM_OK) return st;
    }
  DimStatus st = canon(c->dims, &r);
  if (st == DIM_OK) *out = intern(c->dims, &r);
  return st;
}

/* q = p / d for terms when d divides p exactly (coefficient and
 * symbols); false otherwise. */
static bool term_div(const DimTable *t, const DimTerm *p, const DimTerm *d,
                     DimTerm *q) {
  if (p->coef % d->coef) return false;
  *q = (DimTerm){.coef = p->coef / d->coef};
  int j = 0;
  for (int i = 0; i < p->n; i++) {
    if (j < d->n && cmp_sym(t, p->sym[i], d->sym[j]) == 0) j++;
    else q->sym[q->n++] = p->sym[i];
  }
  return j == d->n;
}

DimStatus dim_div(Ctx *c, int64_t a, int64_t b, int64_t *out) {
  DimExpr x, y, r = {0};
  if (a == b && b != 0) {
    *out = 1;
    return DIM_OK;
  }
  load(c->dims, a, &x);
  load(c->dims, b, &y);
  /* a sum divides exactly only by one term (a size, or a monomial) */
  if (y.n != 1) return DIM_INEXACT;
  for (int i = 0; i < x.n; i++)
    if (!term_div(c->dims, &x.t[i], &y.t[0], &r.t[r.n++]))
      return DIM_INEXACT;
  DimStatus st = canon(c->dims, &r);
  if (st == DIM_OK) *out = intern(c->dims, &r);
  return st;
}

DimStatus type_numel_dim(Ctx *c, const Type *t, int64_t *out) {
  int64_t n = 1;
  for (int i = 0; i < t->rank; i++) {
    DimStatus s = dim_mul(c, n, t->dims[i], &n);
    if (s != DIM_OK) return s;
  }
  *out = n;
  return DIM_OK;
}

/* The bound of symbol k for dim_bound: its own, or DIM_NOMINAL. */
static int64_t sym_bound(int k) {
  return cur->syms[k].bound ? cur->syms[k].bound : DIM_NOMINAL;
}

int64_t dim_bound(int64_t d) {
  const DimExpr *e = expr_of(cur, d);
  if (!e) return dim_is_static(d) ? d : -1;
  int64_t sum = 0;
  for (int i = 0; i < e->n; i++) {
    int64_t p = e->t[i].coef;
    for (int j = 0; j < e->t[i].n; j++)
      if (__builtin_mul_overflow(p, sym_bound(e->t[i].sym[j]), &p)) return -1;
    if (__builtin_add_overflow(sum, p, &sum)) return -1;
  }
  return sum;
}

bool dim_is_bounded(int64_t d) {
  const DimExpr *e = expr_of(cur, d);
  for (int i = 0; e && i < e->n; i++)
    for (int j = 0; j < e->t[i].n; j++)
      if (!cur->syms[e->t[i].sym[j]].bound) return false;
  return true;
}

bool type_is_bounded(const Type *t) {
  for (int i = 0; i < t->rank; i++)
    if (!dim_is_bounded(t->dims[i])) return false;
  return true;
}

int64_t type_bytes_bound(const Type *t) {
  int64_t b = dt_size(t->dt);
  for (int i = 0; i < t->rank; i++) {
    int64_t d = dim_bound(t->dims[i]);
    if (d < 0 || __builtin_mul_overflow(b, d, &b)) return -1;
  }
  return b;
}

int dim_nsyms(void) { return cur ? cur->nsym : 0; }
const char *dim_sym_name_at(int k) { return cur->syms[k].name; }
int64_t dim_sym_bound_at(int k) { return cur->syms[k].bound; }

int dim_syms(int64_t d, int *out) {
  const DimExpr *e = expr_of(cur, d);
  int k = 0;
  for (int i = 0; e && i < e->n; i++)
    for (int j = 0; j < e->t[i].n; j++) out[k++] = e->t[i].sym[j];
  return k;
}

int dim_nterms(int64_t d) {
  const DimExpr *e = expr_of(cur, d);
  return e ? e->n : 1;
}

int64_t dim_term(int64_t d, int i, int *syms, int *nsyms) {
  const DimExpr *e = expr_of(cur, d);
  if (!e) {
    *nsyms = 0;
    return d;
  }
  *nsyms = e->t[i].n;
  for (int j = 0; j < e->t[i].n; j++) syms[j] = e->t[i].sym[j];
  return e->t[i].coef;
}

/* ---- text ---- */
static size_t put(char *buf, size_t n, size_t k, const char *fmt,
                  const char *s, long long v) {
  if (k >= n) return k;
  int w = s ? snprintf(buf + k, n - k, fmt, s, v)
            : snprintf(buf + k, n - k, fmt, v);
  return k + (w > 0 ? (size_t)w : 0);
}

char *dim_str_ex(int64_t d, bool bounds, char *buf, size_t n) {
  const DimExpr *e = expr_of(cur, d);
  if (n) buf[0] = 0;
  if (!e) {
    if (dim_is_static(d)) snprintf(buf, n, "%lld", (long long)d);
    else snprintf(buf, n, "?<%lld>", (long long)d); /* no table: a bug */
    return buf;
  }
  size_t k = 0;
  for (int i = 0; i < e->n; i++) {
    const DimTerm *t = &e->t[i];
    if (i) k = put(buf, n, k, "%s", "+", 0);
    if (t->coef != 1 || !t->n)
      k = put(buf, n, k, t->n ? "%lld*" : "%lld", NULL, t->coef);
    for (int j = 0; j < t->n; j++) {
      const DimSym *s = &cur->syms[t->sym[j]];
      k = put(buf, n, k, j ? "*?%s" : "?%s", s->name, 0);
      if (bounds && s->bound) k = put(buf, n, k, "<=%lld", NULL, s->bound);
    }
  }
  return buf;
}

char *dim_str(int64_t d, char *buf, size_t n) {
  return dim_str_ex(d, false, buf, n);
}

char *dim_str_attr(int64_t d, char *buf, size_t n) {
  const DimExpr *e = expr_of(cur, d);
  if (!e) return dim_str_ex(d, false, buf, n);
  size_t k = 0;
  if (n) buf[0] = 0;
  for (int i = 0; i < e->n; i++) { /* the constant term is last */
    const DimTerm *t = &e->t[i];
    if (i) k = put(buf, n, k, "%s", "+", 0);
    for (int j = 0; j < t->n; j++)
      k = put(buf, n, k, j ? "*?%s" : "?%s", cur->syms[t->sym[j]].name, 0);
    if (t->coef != 1 || !t->n)
      k = put(buf, n, k, t->n ? "*%lld" : "%lld", NULL, t->coef);
  }
  return buf;
}
