/* build.c: syntax tree -> IR, graph and statement level.
 *
 * Graphs are built in file order; a graph may reference (`@name`) only
 * graphs declared before it. In each graph the `input`/`param`
 * statements are created first (so Graph.nodes starts with the
 * arguments in declaration order), but their names only become visible
 * when their statement is reached: uses must follow definitions.
 *
 * Name resolution uses FeMap (hash tables in the arena): O(1) per
 * lookup. A name whose definition failed is bound to NULL ("poisoned")
 * so its uses fail silently: one mistake, one diagnostic.
 *
 * Entry point: fe_build() (called by fe_parse after a clean parse).
 */
#include "frontend/fe_ast.h"

#include <string.h>

/* Bind %name to n; report a redefinition (with a note at the first). */
static bool define(FeBuild *b, const FeRef *ref, Node *n) {
  bool found;
  Loc prev;
  fe_map_get(&b->values, ref->name, &found, &prev);
  if (found) {
    diag_error(b->c, ref->loc, "redefinition of '%%%s'", ref->name);
    diag_note(b->c, prev, "previous definition of '%%%s' is here",
              ref->name);
    return false;
  }
  fe_map_put(b->c, &b->values, ref->name, n, ref->loc);
  return true;
}

/* One graph argument, as ir_arg_new() makes it, except that g->args is
 * set once for all arguments by build_args (ir_arg_new copies the array
 * on every call: quadratic for files with many inputs). */
static Node *new_arg(FeBuild *b, const FeStmt *st, Type t) {
  Op op = st->kind == FT_INPUT ? OP_INPUT : OP_PARAM;
  Node *n = ir_node_new(b->c, b->g, op, NULL, 0, st->target.loc);
  n->name = st->target.name;
  n->type = t;
  n->arg_index = b->g->nargs++;
  return n;
}

/* Create every graph argument up front; returns one Node* per
 * statement (NULL for non-arguments). */
static Node **build_args(FeBuild *b, const FeGraph *fg) {
  Node **args = arena_alloc(b->c->arena,
                            sizeof(Node *) * (size_t)(fg->stmts.n + 1));
  Node **list = arena_alloc(b->c->arena,
                            sizeof(Node *) * (size_t)(fg->stmts.n + 1));
  for (int i = 0; i < fg->stmts.n; i++) {
    const FeStmt *st = fg->stmts.v[i];
    if (st->kind != FT_INPUT && st->kind != FT_PARAM) continue;
    Type t;
    if (!fe_build_type(b->c, st->type, &t)) t = (Type){.dt = DT_INVALID};
    args[i] = new_arg(b, st, t);
    list[args[i]->arg_index] = args[i];
  }
  b->g->args = list;
  return args;
}

/* `%name = EXPR [: TYPE]` */
static void build_def(FeBuild *b, const FeStmt *st) {
  Node *n = fe_build_expr(b, st->expr);
  if (st->type) {
    Type want;
    char s1[160], s2[160];
    if (fe_build_type(b->c, st->type, &want) && n &&
        n->type.dt != DT_INVALID && !type_eq(&want, &n->type))
      diag_error(b->c, st->type->loc,
                 "annotation %s does not match inferred type %s",
                 type_str(&want, s1, sizeof s1),
                 type_str(&n->type, s2, sizeof s2));
  }
  /* a redefinition leaves the new node unnamed (printed as %N) */
  if (define(b, &st->target, n) && n) n->name = st->target.name;
}

static void build_return(FeBuild *b, const FeStmt *st) {
  Node **rets = arena_alloc(b->c->arena,
                            sizeof(Node *) * (size_t)st->nrets);
  bool ok = true;
  for (int i = 0; i < st->nrets; i++) {
    rets[i] = fe_resolve(b, st->rets[i].name, st->rets[i].loc);
    if (!rets[i]) ok = false;
  }
  if (ok) ir_set_rets(b->c, b->g, rets, st->nrets);
}

/* Statements in order; exactly one `return`, as the last statement. */
static void build_body(FeBuild *b, const FeGraph *fg, Node **args) {
  const FeStmt *ret = NULL;
  bool after_reported = false;
  for (int i = 0; i < fg->stmts.n && !diag_too_many(b->c); i++) {
    const FeStmt *st = fg->stmts.v[i];
    if (ret && st->kind == FT_RETURN) {
      diag_error(b->c, st->loc, "duplicate 'return' in graph '%s'",
                 fg->name);
      diag_note(b->c, ret->loc, "first 'return' is here");
      continue;
    }
    if (ret && !after_reported) {
      diag_error(b->c, st->loc, "statement after 'return': 'return' "
                 "must be the last statement of graph '%s'", fg->name);
      after_reported = true;
    }
    switch (st->kind) {
    case FT_INPUT:
    case FT_PARAM: define(b, &st->target, args[i]); break;
    case FT_DEF: build_def(b, st); break;
    case FT_RETURN:
      ret = st;
      build_return(b, st);
      break;
    }
  }
  if (!ret && !diag_too_many(b->c))
    diag_error(b->c, fg->end, "graph '%s' has no 'return' statement",
               fg->name);
}

static void build_graph(FeBuild *b, const FeGraph *fg) {
  bool found;
  Loc prev;
  fe_map_get(b->graphs, fg->name, &found, &prev);
  if (found) {
    diag_error(b->c, fg->loc, "redefinition of graph '%s'", fg->name);
    diag_note(b->c, prev, "previous definition of graph '%s' is here",
              fg->name);
  }
  /* a duplicate is still checked, but not added to the module */
  b->g = ir_graph_new(b->c, found ? NULL : b->m, fg->name, fg->loc);
  b->values = (FeMap){0};
  int errors = b->c->nerrors;
  Node **args = build_args(b, fg);
  build_body(b, fg, args);
  /* a graph with errors is bound to NULL: its users fail silently */
  if (!found)
    fe_map_put(b->c, b->graphs, fg->name,
               b->c->nerrors > errors ? NULL : b->g, fg->loc);
}

Module *fe_build(FeState *s) {
  Ctx *c = s->c;
  Module *m = ir_module_new(c);
  if (s->graphs.n == 0) {
    diag_error(c, (Loc){1, 1}, "no graph in the input");
    return m;
  }
  FeMap all = {0}, built = {0};
  for (int i = 0; i < s->graphs.n; i++) {
    FeGraph *fg = s->graphs.v[i];
    bool found;
    fe_map_get(&all, fg->name, &found, NULL);
    if (!found) fe_map_put(c, &all, fg->name, fg, fg->loc);
  }
  FeBuild b = {.c = c, .m = m, .graphs = &built, .all_graphs = &all};
  for (int i = 0; i < s->graphs.n && !diag_too_many(c); i++)
    build_graph(&b, s->graphs.v[i]);
  return m;
}
