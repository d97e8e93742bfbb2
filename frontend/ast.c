/* ast.c: syntax-tree constructors called by the grammar actions
 * (parser.y, one call per action), and the arena hash map used for name
 * resolution (FeMap).
 *
 * Invariants: every object is in the Ctx arena; growable arrays double
 * their capacity, so building n items costs O(n) time and memory.
 */
#include "frontend/fe_ast.h"

#include <string.h>

static void *grow(Ctx *c, void *v, int n, int *cap, size_t elem) {
  return arena_grow(c->arena, v, n, cap, elem);
}

void fe_vec_push(Ctx *c, FeVec *v, void *p) {
  v->v = grow(c, v->v, v->n, &v->cap, sizeof(void *));
  v->v[v->n++] = p;
}

/* ---- graphs and statements ---- */
FeGraph *fe_ast_graph(FeState *s, const char *name, Loc loc) {
  FeGraph *g = arena_alloc(s->c->arena, sizeof *g);
  g->name = name;
  g->loc = loc;
  fe_vec_push(s->c, &s->graphs, g);
  return g;
}

void fe_ast_graph_end(FeState *s, FeGraph *g, FeVec *stmts, Loc end) {
  (void)s;
  if (stmts) g->stmts = *stmts;
  g->end = end;
}

FeVec *fe_ast_stmts(FeState *s, FeVec *list, FeStmt *st) {
  if (!list) list = arena_alloc(s->c->arena, sizeof *list);
  fe_vec_push(s->c, list, st);
  return list;
}

static FeStmt *new_stmt(FeState *s, FeStmtKind k, Loc loc) {
  FeStmt *st = arena_alloc(s->c->arena, sizeof *st);
  st->kind = k;
  st->loc = loc;
  return st;
}

FeStmt *fe_ast_arg(FeState *s, FeStmtKind k, Loc loc, const char *name,
                   Loc nloc, FeType *t) {
  FeStmt *st = new_stmt(s, k, loc);
  st->target = (FeRef){name, nloc};
  st->type = t;
  return st;
}

FeStmt *fe_ast_def(FeState *s, const char *name, Loc nloc, FeExpr *e,
                   FeType *annot) {
  FeStmt *st = new_stmt(s, FT_DEF, nloc);
  st->target = (FeRef){name, nloc};
  st->expr = e;
  st->type = annot;
  return st;
}

FeStmt *fe_ast_return(FeState *s, FeStmt *st, Loc loc, const char *name,
                      Loc nloc) {
  if (!st) st = new_stmt(s, FT_RETURN, loc);
  st->rets = grow(s->c, st->rets, st->nrets, &st->cap, sizeof(FeRef));
  st->rets[st->nrets++] = (FeRef){name, nloc};
  return st;
}

/* ---- types ---- */
FeType *fe_ast_type(FeState *s, FeType *t, const char *dtype, Loc loc) {
  if (!t) t = arena_alloc(s->c->arena, sizeof *t);
  t->dtype = dtype;
  t->loc = loc;
  return t;
}

FeType *fe_ast_dim(FeState *s, FeType *t, FeDim *d) {
  t->dims = grow(s->c, t->dims, t->n, &t->cap, sizeof *t->dims);
  t->dims[t->n++] = d;
  return t;
}

static FeDim *new_dim(FeState *s, FeDimKind k, Loc loc) {
  FeDim *d = arena_alloc(s->c->arena, sizeof *d);
  d->kind = k;
  d->loc = loc;
  return d;
}

FeDim *fe_ast_dnum(FeState *s, FeNum num, Loc loc) {
  FeDim *d = new_dim(s, FD_INT, loc);
  d->num = num;
  d->num.loc = loc;
  return d;
}

/* name NULL: a bare `?` */
FeDim *fe_ast_dsym(FeState *s, const char *name, const FeNum *bound,
                   Loc loc) {
  FeDim *d = new_dim(s, name ? FD_SYM : FD_BARE, loc);
  d->name = name;
  if (bound) {
    d->has_bound = true;
    d->num = *bound;
  }
  return d;
}

FeDim *fe_ast_dop(FeState *s, FeDimKind k, FeDim *l, FeDim *r, Loc loc) {
  FeDim *d = new_dim(s, k, loc);
  d->l = l;
  d->r = r;
  return d;
}

/* ---- expressions ---- */
static FeExpr *new_expr(FeState *s, FeExprKind k, Loc loc) {
  FeExpr *e = arena_alloc(s->c->arena, sizeof *e);
  e->kind = k;
  e->loc = loc;
  return e;
}

FeExpr *fe_ast_value(FeState *s, const char *name, Loc loc) {
  FeExpr *e = new_expr(s, FX_VALUE, loc);
  e->name = name;
  return e;
}

FeExpr *fe_ast_num(FeState *s, FeNum num) {
  FeExpr *e = new_expr(s, FX_NUM, num.loc);
  e->num = num;
  return e;
}

FeExpr *fe_ast_call(FeState *s, FeExpr *call, const char *op, Loc loc) {
  if (!call) call = new_expr(s, FX_CALL, loc);
  call->name = op;
  return call;
}

FeExpr *fe_ast_call_arg(FeState *s, FeExpr *call, FeExpr *operand,
                        const char *attr, const FeVal *val, Loc loc) {
  call->args = grow(s->c, call->args, call->nargs, &call->cap,
                    sizeof(FeArg));
  FeArg *a = &call->args[call->nargs++];
  a->attr = attr;
  a->operand = operand;
  if (val) {
    FeVal *v = arena_alloc(s->c->arena, sizeof *v);
    *v = *val;
    a->val = v;
  }
  a->loc = loc;
  return call;
}

FeExpr *fe_ast_const(FeState *s, FeType *t, const FeVal *lit, Loc loc) {
  FeExpr *e = new_expr(s, FX_CONST, loc);
  e->type = t;
  FeVal *v = arena_alloc(s->c->arena, sizeof *v);
  *v = *lit;
  e->lit = v;
  return e;
}

/* ---- literal and attribute values ---- */
FeScalar fe_ast_scalar(FeScalarKind k, FeNum num, Loc loc) {
  num.loc = loc;
  return (FeScalar){k, num, NULL};
}

FeScalar fe_ast_scalar_dim(FeDim *d) {
  FeNum num = {0};
  num.loc = d->loc;
  return (FeScalar){FS_DIM, num, d};
}

FeVal fe_ast_val_scalar(const FeScalar *sc) {
  return (FeVal){.kind = FV_SCALAR, .s = *sc, .loc = sc->num.loc};
}

FeVal fe_ast_val_word(FeValKind k, const char *w, Loc loc) {
  return (FeVal){.kind = k, .word = w, .loc = loc};
}

FeVal fe_ast_val_list(FeList *l, Loc loc) {
  return (FeVal){.kind = FV_LIST, .list = l, .loc = loc};
}

FeList *fe_ast_list(FeState *s, FeList *l, const FeScalar *item, Loc loc) {
  if (!l) {
    l = arena_alloc(s->c->arena, sizeof *l);
    l->loc = loc;
  }
  if (item) {
    l->v = grow(s->c, l->v, l->n, &l->cap, sizeof(FeScalar));
    l->v[l->n++] = *item;
  }
  return l;
}

/* ---- FeMap: open addressing, FNV-1a, load factor <= 1/2 ---- */
static uint64_t hash(const char *k) {
  uint64_t h = 1469598103934665603ull;
  for (; *k; k++) h = (h ^ (unsigned char)*k) * 1099511628211ull;
  return h;
}

static int slot(const FeMap *m, const char *key) {
  size_t mask = (size_t)m->cap - 1, i = (size_t)hash(key) & mask;
  while (m->keys[i] && strcmp(m->keys[i], key)) i = (i + 1) & mask;
  return (int)i;
}

void *fe_map_get(const FeMap *m, const char *key, bool *found, Loc *loc) {
  *found = false;
  if (!m->cap) return NULL;
  int i = slot(m, key);
  if (!m->keys[i]) return NULL;
  *found = true;
  if (loc) *loc = m->locs[i];
  return m->vals[i];
}

static void rehash(Ctx *c, FeMap *m) {
  FeMap old = *m;
  m->cap = old.cap ? old.cap * 2 : 8;
  m->keys = arena_alloc(c->arena, sizeof(char *) * (size_t)m->cap);
  m->vals = arena_alloc(c->arena, sizeof(void *) * (size_t)m->cap);
  m->locs = arena_alloc(c->arena, sizeof(Loc) * (size_t)m->cap);
  for (int i = 0; i < old.cap; i++) {
    if (!old.keys[i]) continue;
    int j = slot(m, old.keys[i]);
    m->keys[j] = old.keys[i];
    m->vals[j] = old.vals[i];
    m->locs[j] = old.locs[i];
  }
}

/* Insert or replace key (the key string must outlive the map). */
void fe_map_put(Ctx *c, FeMap *m, const char *key, void *val, Loc loc) {
  if (2 * (m->n + 1) > m->cap) rehash(c, m);
  int i = slot(m, key);
  if (!m->keys[i]) m->n++;
  m->keys[i] = key;
  m->vals[i] = val;
  m->locs[i] = loc;
}
