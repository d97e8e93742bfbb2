/* build_expr.c: syntax tree -> IR for expressions: op calls, their
 * operands (values, nested calls, numeric literals) and attributes.
 *
 * A call whose op, operands or attributes are wrong reports each
 * problem and yields NULL (no node); its users then fail silently.
 * When everything resolves, the node is created and shape_infer()
 * checks arity, required attributes and the op's shape rule.
 *
 * Literal operand dtype rule (language.md 3, "numeric literal"):
 *   - binary ops and compares: the dtype of the other operand;
 *   - where(cond, a, b): a literal branch takes the other branch's
 *     dtype;
 *   - in every other position, or when the deciding operand is itself
 *     a literal or has no valid type: f32.
 * Integer literals convert to float dtypes; a floating-point literal in
 * an integer or bool context is an error (fe_store_scalar).
 *
 * Recursion over nested calls is bounded by the lexer's nesting limit.
 */
#include "frontend/fe_ast.h"

#include <string.h>

Node *fe_resolve(FeBuild *b, const char *name, Loc loc) {
  bool found;
  Node *n = fe_map_get(&b->values, name, &found, NULL);
  if (!found) {
    Suggest sg;
    char hint[96];
    suggest_init(&sg, name);
    for (int i = 0; i < b->values.cap; i++) suggest_add(&sg, b->values.keys[i]);
    diag_error(b->c, loc, "undefined value '%%%s'%s", name,
               suggest_hint(&sg, "%", hint, sizeof hint));
  }
  return n;
}

/* The graph @name, which must be declared earlier in the file; NULL
 * after a diagnostic, or silently if that graph had errors. */
static Graph *resolve_graph(FeBuild *b, const char *name, Loc loc) {
  bool found;
  Graph *g = fe_map_get(b->graphs, name, &found, NULL);
  if (found) return g;
  fe_map_get(b->all_graphs, name, &found, NULL);
  if (!found)
    diag_error(b->c, loc, "unknown graph '@%s'", name);
  else if (!strcmp(name, b->g->name))
    diag_error(b->c, loc, "graph '@%s' cannot reference itself", name);
  else
    diag_error(b->c, loc, "graph '@%s' must be declared before it is "
               "used", name);
  return NULL;
}

/* ---- attributes ---- */
static const char *kind_desc(AttrKind k) {
  switch (k) {
  case AK_INT: return "an integer";
  case AK_INTS: return "a list of integers";
  case AK_FLOAT: return "a number";
  case AK_BOOL: return "true or false";
  case AK_DTYPE: return "a dtype name";
  case AK_ENUM: return "a word";
  case AK_GRAPH: return "a graph reference '@name'";
  }
  return "?";
}

static const char *val_desc(const FeVal *v) {
  switch (v->kind) {
  case FV_SCALAR:
    if (v->s.kind != FS_NUM) return "a boolean";
    return v->s.num.is_float ? "a floating-point number" : "an integer";
  case FV_WORD: return "a word";
  case FV_GRAPH: return "a graph reference";
  case FV_LIST: return "a list";
  }
  return "?";
}

static bool is_int(const FeScalar *s) {
  return s->kind == FS_NUM && !s->num.is_float;
}

/* Convert an [ints] value; each element must be an integer. */
static bool ints_value(FeBuild *b, const FeList *l, Attr *out) {
  out->u.ints.n = l->n;
  out->u.ints.v = arena_alloc(b->c->arena,
                              sizeof(int64_t) * (size_t)(l->n ? l->n : 1));
  for (int i = 0; i < l->n; i++) {
    if (l->v[i].kind == FS_DIM && out->id == ATTR_SHAPE) {
      if (!fe_build_dim(b->c, l->v[i].dim, &out->u.ints.v[i])) return false;
      continue;
    }
    if (!is_int(&l->v[i]))
      return diag_error(b->c, l->v[i].num.loc, "list attribute '%s' "
                        "takes integers%s only", attr_name(out->id),
                        out->id == ATTR_SHAPE ? " and dynamic sizes" : "");
    out->u.ints.v[i] = l->v[i].num.i;
  }
  return true;
}

/* Fill *out from the value; false (after a diagnostic) on mismatch. */
static bool attr_value(FeBuild *b, const FeVal *v, Attr *out) {
  const char *nm = attr_name(out->id);
  char hint[96];
  switch (out->kind) {
  case AK_INT:
    if (v->kind != FV_SCALAR || !is_int(&v->s)) break;
    out->u.i = v->s.num.i;
    return true;
  case AK_FLOAT:
    if (v->kind != FV_SCALAR || v->s.kind != FS_NUM) break;
    out->u.f = v->s.num.is_float ? v->s.num.f : (double)v->s.num.i;
    return true;
  case AK_BOOL:
    if (v->kind != FV_SCALAR || v->s.kind == FS_NUM) break;
    out->u.b = v->s.kind == FS_TRUE;
    return true;
  case AK_DTYPE:
    if (v->kind != FV_WORD) break;
    out->u.dt = dt_lookup(v->word);
    if (out->u.dt != DT_INVALID) return true;
    return diag_error(b->c, v->loc, "unknown dtype '%s'%s", v->word,
                      suggest_dtype(v->word, hint, sizeof hint));
  case AK_ENUM:
    if (v->kind != FV_WORD) break;
    if (!attr_word_ok(out->id, v->word)) {
      Suggest sg;
      suggest_init(&sg, v->word);
      suggest_attr_words(&sg, out->id);
      return diag_error(b->c, v->loc, "'%s' is not a valid value for "
                        "attribute '%s'%s", v->word, nm,
                        suggest_hint(&sg, "", hint, sizeof hint));
    }
    out->u.word = v->word;
    return true;
  case AK_GRAPH:
    if (v->kind != FV_GRAPH) break;
    out->u.graph = resolve_graph(b, v->word, v->loc);
    return out->u.graph != NULL;
  case AK_INTS:
    if (v->kind != FV_LIST) break;
    return ints_value(b, v->list, out);
  }
  return diag_error(b->c, v->loc, "attribute '%s' expects %s, found %s",
                    nm, kind_desc(out->kind), val_desc(v));
}

/* Check every attribute of call e against op; fills attrs[0..*n). */
static bool build_attrs(FeBuild *b, Op op, const FeExpr *e, Attr *attrs,
                        int *n) {
  Loc seen[ATTR_COUNT];
  bool have[ATTR_COUNT] = {0}, ok = true;
  *n = 0;
  for (int i = 0; i < e->nargs; i++) {
    const FeArg *a = &e->args[i];
    if (!a->attr) continue;
    AttrId id = attr_lookup(a->attr);
    if (id == ATTR_COUNT || !op_attr_spec(op, id)) {
      Suggest sg;
      char hint[96];
      suggest_init(&sg, a->attr);
      for (int k = 0; k < ATTR_COUNT; k++)
        if (op_attr_spec(op, (AttrId)k)) suggest_add(&sg, attr_name(k));
      ok = diag_error(b->c, a->loc, "op '%s' has no attribute '%s'%s",
                      op_name(op), a->attr, suggest_hint(&sg, "", hint,
                                                         sizeof hint));
      continue;
    }
    if (have[id]) {
      ok = diag_error(b->c, a->loc, "duplicate attribute '%s'", a->attr);
      diag_note(b->c, seen[id], "first given here");
      continue;
    }
    have[id] = true;
    seen[id] = a->loc;
    Attr *out = &attrs[*n];
    *out = (Attr){.id = id, .kind = attr_kind(id), .loc = a->loc};
    if (attr_value(b, a->val, out)) (*n)++;
    else ok = false;
  }
  return ok;
}

/* ---- operands ---- */
static DType literal_dtype(Op op, Node *const *in, const bool *lit,
                           int n, int i) {
  int other = -1;
  if ((op_has(op, OPF_BINARY) || op_has(op, OPF_COMPARE)) && n == 2)
    other = 1 - i;
  else if (op == OP_WHERE && n == 3 && i > 0)
    other = 3 - i;
  if (other >= 0 && !lit[other] && in[other] &&
      in[other]->type.dt != DT_INVALID)
    return in[other]->type.dt;
  return DT_F32;
}

static Node *build_literal(FeBuild *b, const FeNum *num, DType dt) {
  unsigned char buf[16];
  FeScalar sc = {FS_NUM, *num, NULL};
  if (!fe_store_scalar(b->c, &sc, dt, buf)) return NULL;
  Node *n = ir_const_new(b->c, b->g, type_make(dt, 0, NULL), buf, false,
                         num->loc);
  n->literal = true;
  return n;
}

/* Operands in order: values and nested calls first, then literals
 * (whose dtype may depend on the other operands). */
static bool build_operands(FeBuild *b, Op op, const FeExpr *e, Node **in,
                           int nin) {
  bool *lit = arena_alloc(b->c->arena, (size_t)nin + 1);
  bool ok = true, seen_attr = false;
  int k = 0;
  for (int i = 0; i < e->nargs; i++) {
    const FeArg *a = &e->args[i];
    if (a->attr) {
      seen_attr = true;
      continue;
    }
    if (seen_attr)
      ok = diag_error(b->c, a->loc, "operand after attributes: operands "
                      "come first");
    lit[k] = a->operand->kind == FX_NUM;
    if (!lit[k] && !(in[k] = fe_build_expr(b, a->operand))) ok = false;
    k++;
  }
  if (!ok || op == OP_COUNT) return false;
  k = 0;
  for (int i = 0; i < e->nargs; i++) {
    const FeArg *a = &e->args[i];
    if (a->attr) continue;
    if (lit[k]) {
      DType dt = literal_dtype(op, in, lit, nin, k);
      if (!(in[k] = build_literal(b, &a->operand->num, dt))) ok = false;
    }
    k++;
  }
  return ok;
}

static Node *build_call(FeBuild *b, const FeExpr *e) {
  Op op = op_lookup(e->name);
  if (op == OP_COUNT) {
    Suggest sg;
    char hint[96];
    suggest_init(&sg, e->name);
    for (int k = 0; k < OP_COUNT; k++) suggest_add(&sg, op_name((Op)k));
    diag_error(b->c, e->loc, "unknown op '%s'%s", e->name,
               suggest_hint(&sg, "", hint, sizeof hint));
  }
  int nin = 0, nattr = 0;
  for (int i = 0; i < e->nargs; i++)
    if (!e->args[i].attr) nin++;
  int given = e->nargs - nin;
  Node **in = arena_alloc(b->c->arena, sizeof(Node *) * (size_t)(nin + 1));
  bool ok = build_operands(b, op, e, in, nin);
  if (op == OP_COUNT) return NULL;
  Attr *attrs = given ? arena_alloc(b->c->arena,
                                    sizeof(Attr) * (size_t)given)
                      : NULL;
  if (given && !build_attrs(b, op, e, attrs, &nattr)) ok = false;
  if (!ok) return NULL;
  Node *n = ir_node_new(b->c, b->g, op, in, nin, e->loc);
  for (int i = 0; i < nattr; i++) {
    Attr *a = ir_attr_set(b->c, n, attrs[i].id, attrs[i].kind);
    *a = attrs[i];
  }
  shape_infer(b->c, n);
  return n;
}

Node *fe_build_expr(FeBuild *b, const FeExpr *e) {
  switch (e->kind) {
  case FX_VALUE: return fe_resolve(b, e->name, e->loc);
  case FX_NUM: {
    return build_literal(b, &e->num, DT_F32);
  }
  case FX_CALL: return build_call(b, e);
  case FX_CONST: return fe_build_const(b, e);
  }
  return NULL;
}
