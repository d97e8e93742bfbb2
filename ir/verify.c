/* verify.c: the IR verifier, run after every pass (passes/pipeline.c).
 *
 * Checks, per graph in module order:
 *   - graph names are unique in the module; every node belongs to one
 *     graph and is listed once (single definition, unique node ids);
 *   - operands are non-NULL nodes of the SAME graph defined EARLIER in
 *     the node list (this gives topological order and no cycles);
 *   - operand counts match ops.def; pseudo ops have no operands;
 *   - arguments: g->args[i] is an input/param node with arg_index i;
 *   - attributes: the op declares each one (op_attr_spec), the value
 *     kind matches attrs.def, enum words are legal, no duplicates,
 *     required ones are present, graph refs point to graphs EARLIER in
 *     the module;
 *   - user names are unique per graph and lexically valid;
 *   - types: valid dtype/rank/dims; for non-pseudo ops, shape_infer()
 *     re-run on a copy of the node yields exactly the stored type;
 *   - constants carry data; the graph has at least one return value and
 *     every return value is a node of the graph.
 * Every finding is a diagnostic "internal: verifier: ..." (never an
 * assert): the front end rejects user mistakes before the verifier runs,
 * so a finding means a compiler bug, but a pass bug must not crash rlxc.
 * Memory: scratch tables are arena temporaries, released per graph;
 * shape_infer runs on a scratch Ctx that shares c's arena (so running
 * out of memory anywhere takes the driver's out-of-memory path).
 * Entry point: ir_verify.
 */
#include "ir/ir.h"

#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

typedef struct {
  Ctx *c;
  Ctx *scratch;       /* shape_infer diagnostics land here, not on c */
  Arena *a;           /* c's arena: scratch tables */
  const Module *m;
  const Graph *g;
  int gi;             /* index of g in the module */
  int nids;
  const Node **owner; /* owner[id]: the node of g with that id */
  char *state;        /* 0 unseen, 1 defined (walk position passed) */
  bool ok;
} V;

#define VERR(v, loc, ...) verr((v), (loc), __VA_ARGS__)

static void verr(V *v, Loc loc, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

static void verr(V *v, Loc loc, const char *fmt, ...) {
  char buf[768];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(buf, sizeof buf, fmt, ap);
  va_end(ap);
  diag_error(v->c, loc, "internal: verifier: graph '%s': %s",
             v->g && v->g->name ? v->g->name : "?", buf);
  v->ok = false;
}

/* "%name" or "%#id (op)" for messages. */
static const char *nref(const Node *n, char *buf, size_t len) {
  if (!n) snprintf(buf, len, "<null>");
  else if (n->name) snprintf(buf, len, "%%%s (%s)", n->name, op_name(n->op));
  else snprintf(buf, len, "node #%d (%s)", n->id, op_name(n->op));
  return buf;
}

static bool valid_value_name(const char *s) {
  if (!*s) return false;
  for (; *s; s++)
    if (!(*s == '_' || *s == '.' || (*s >= '0' && *s <= '9') ||
          (*s >= 'a' && *s <= 'z') || (*s >= 'A' && *s <= 'Z')))
      return false;
  return true;
}

static bool valid_ident(const char *s) {
  if (!s || !*s || (*s >= '0' && *s <= '9')) return false;
  for (; *s; s++)
    if (!(*s == '_' || (*s >= '0' && *s <= '9') ||
          (*s >= 'a' && *s <= 'z') || (*s >= 'A' && *s <= 'Z')))
      return false;
  return true;
}

/* ---- string set (open addressing) for name uniqueness ---- */
typedef struct {
  Arena *a;
  size_t cap;
  const char **slot;
} NameSet;

static size_t hash_str(const char *s) {
  size_t h = 1469598103934665603u;
  for (; *s; s++) h = (h ^ (unsigned char)*s) * 1099511628211u;
  return h;
}

static void set_init(NameSet *s, Arena *a, size_t n) {
  s->a = a;
  s->cap = 16;
  while (s->cap < 2 * n + 2) s->cap *= 2;
  s->slot = arena_tmp_alloc(a, s->cap * sizeof *s->slot);
}

/* Insert; false if already present. */
static bool set_add(NameSet *s, const char *name) {
  size_t i = hash_str(name) & (s->cap - 1);
  while (s->slot[i]) {
    if (!strcmp(s->slot[i], name)) return false;
    i = (i + 1) & (s->cap - 1);
  }
  s->slot[i] = name;
  return true;
}

/* ---- types ---- */
static bool type_ok(const Type *t) {
  if (t->dt >= DT_COUNT || t->rank < 0 || t->rank > RLX_MAX_RANK)
    return false;
  int64_t n = 1;
  for (int i = 0; i < t->rank; i++) {
    if (!dim_is_static(t->dims[i])) { /* checked by the rules */
      if (!dim_valid(t->dims[i])) return false;
      continue;
    }
    if (t->dims[i] > RLX_MAX_ELEMS) return false;
    if (t->dims[i] && n > RLX_MAX_ELEMS / t->dims[i]) return false;
    n *= t->dims[i];
  }
  return true;
}

static void check_type(V *v, const Node *n) {
  char a[128], b[128], r[96];
  if (!type_ok(&n->type)) {
    VERR(v, n->loc, "%s has an invalid type %s", nref(n, r, sizeof r),
         type_str(&n->type, a, sizeof a));
    return;
  }
  if (op_has(n->op, OPF_PSEUDO)) return;
  Node copy = *n;
  copy.type.dt = DT_INVALID;
  copy.type.rank = 0;
  int before = v->scratch->nerrors;
  Diag **tail = v->scratch->diags_tail;
  if (!shape_infer(v->scratch, &copy) || v->scratch->nerrors > before) {
    VERR(v, n->loc, "%s: the shape rule rejects the node: %s",
         nref(n, r, sizeof r), *tail ? (*tail)->msg : "(no message)");
    return;
  }
  if (!type_eq(&copy.type, &n->type))
    VERR(v, n->loc, "%s has type %s but its shape rule infers %s",
         nref(n, r, sizeof r), type_str(&n->type, a, sizeof a),
         type_str(&copy.type, b, sizeof b));
}

/* ---- attributes ---- */
static bool graph_before(const V *v, const Graph *sub) {
  for (int i = 0; i < v->gi; i++)
    if (v->m->graphs[i] == sub) return true;
  return false;
}

static void check_attr(V *v, const Node *n, const Attr *a, int idx) {
  char r[96];
  nref(n, r, sizeof r);
  if (a->id >= ATTR_COUNT) {
    VERR(v, n->loc, "%s has an attribute with a bad id", r);
    return;
  }
  const char *an = attr_name(a->id);
  for (int j = 0; j < idx; j++)
    if (n->attrs[j].id == a->id)
      VERR(v, a->loc, "%s sets attribute '%s' twice", r, an);
  if (!op_attr_spec(n->op, a->id))
    VERR(v, a->loc, "%s: op does not take attribute '%s'", r, an);
  if (a->kind != attr_kind(a->id)) {
    VERR(v, a->loc, "%s: attribute '%s' has the wrong kind", r, an);
    return;
  }
  if (a->kind == AK_ENUM && (!a->u.word || !attr_word_ok(a->id, a->u.word)))
    VERR(v, a->loc, "%s: '%s' is not a legal value of '%s'", r,
         a->u.word ? a->u.word : "<null>", an);
  if (a->kind == AK_DTYPE && a->u.dt >= DT_COUNT)
    VERR(v, a->loc, "%s: attribute '%s' has an invalid dtype", r, an);
  if (a->kind == AK_INTS && a->u.ints.n > 0 && !a->u.ints.v)
    VERR(v, a->loc, "%s: attribute '%s' has no values", r, an);
  if (a->kind == AK_GRAPH && (!a->u.graph || !graph_before(v, a->u.graph)))
    VERR(v, a->loc, "%s: attribute '%s' must name a graph declared "
         "earlier in the module", r, an);
}

static void check_attrs(V *v, const Node *n) {
  for (int i = 0; i < n->nattr; i++) check_attr(v, n, &n->attrs[i], i);
  const OpInfo *oi = op_info(n->op);
  char r[96];
  for (int s = 0; s < oi->nattrs; s++)
    if (oi->attrs[s].required && !ir_attr_present(n, oi->attrs[s].id))
      VERR(v, n->loc, "%s lacks required attribute '%s'",
           nref(n, r, sizeof r), attr_name(oi->attrs[s].id));
}

/* ---- nodes ---- */
static bool in_graph(const V *v, const Node *n) {
  return n && n->id >= 0 && n->id < v->nids && v->owner[n->id] == n;
}

static void check_operands(V *v, const Node *n) {
  char r[96], o[96];
  const OpInfo *oi = op_info(n->op);
  if (n->nin < oi->min_in || (oi->max_in >= 0 && n->nin > oi->max_in))
    VERR(v, n->loc, "%s has %d operands", nref(n, r, sizeof r), n->nin);
  if (n->nin > 0 && !n->in) {
    VERR(v, n->loc, "%s has no operand array", nref(n, r, sizeof r));
    return;
  }
  for (int i = 0; i < n->nin; i++) {
    const Node *x = n->in[i];
    if (!x)
      VERR(v, n->loc, "%s: operand %d is NULL", nref(n, r, sizeof r), i);
    else if (!in_graph(v, x))
      VERR(v, n->loc, "%s: operand %d, %s, belongs to another graph",
           nref(n, r, sizeof r), i, nref(x, o, sizeof o));
    else if (v->state[x->id] != 1)
      VERR(v, n->loc, "%s: operand %d, %s, is not defined before its "
           "use (cycle or wrong order)", nref(n, r, sizeof r), i,
           nref(x, o, sizeof o));
  }
}

static void check_node(V *v, const Node *n) {
  char r[96];
  if (n->op >= OP_COUNT) {
    VERR(v, n->loc, "node #%d has an invalid op", n->id);
    return;
  }
  check_operands(v, n);
  check_attrs(v, n);
  if (n->op == OP_CONST && !n->data)
    VERR(v, n->loc, "%s has no data", nref(n, r, sizeof r));
  if (n->op == OP_INPUT || n->op == OP_PARAM) {
    int k = n->arg_index;
    if (k < 0 || k >= v->g->nargs || v->g->args[k] != n)
      VERR(v, n->loc, "%s is not argument %d of the graph",
           nref(n, r, sizeof r), k);
  }
  if (n->name && !valid_value_name(n->name))
    VERR(v, n->loc, "value name '%s' is not a valid name", n->name);
  check_type(v, n);
}

/* Map ids to nodes; reject NULL entries, duplicates and bad ids. */
static bool index_nodes(V *v) {
  const Graph *g = v->g;
  v->nids = g->next_id;
  for (int i = 0; i < g->nnodes; i++)
    if (g->nodes[i] && g->nodes[i]->id >= v->nids)
      v->nids = g->nodes[i]->id + 1;
  size_t k = (size_t)v->nids + 1;
  v->owner = arena_tmp_alloc(v->a, k * sizeof *v->owner);
  v->state = arena_tmp_alloc(v->a, k);
  bool ok = true;
  for (int i = 0; i < g->nnodes; i++) {
    const Node *n = g->nodes[i];
    if (!n || n->id < 0) {
      VERR(v, g->loc, "node list entry %d is %s", i, n ? "bad" : "NULL");
      ok = false;
    } else if (v->owner[n->id]) {
      VERR(v, n->loc, "node id %d appears twice in the node list", n->id);
      ok = false;
    } else {
      v->owner[n->id] = n;
    }
  }
  return ok;
}

static void check_names(V *v) {
  NameSet s;
  set_init(&s, v->a, (size_t)v->g->nnodes);
  for (int i = 0; i < v->g->nnodes; i++) {
    const Node *n = v->g->nodes[i];
    if (n->name && !set_add(&s, n->name))
      VERR(v, n->loc, "value %%%s is defined twice", n->name);
  }
  arena_tmp_free(s.a, s.slot);
}

static void check_args_rets(V *v) {
  const Graph *g = v->g;
  char r[96];
  for (int i = 0; i < g->nargs; i++) {
    const Node *a = g->args[i];
    if (!in_graph(v, a) || (a->op != OP_INPUT && a->op != OP_PARAM))
      VERR(v, g->loc, "argument %d is not an input/param of the graph", i);
  }
  if (g->nret < 1) VERR(v, g->loc, "the graph has no return value");
  for (int i = 0; i < g->nret; i++)
    if (!in_graph(v, g->rets[i]))
      VERR(v, g->loc, "return value %d, %s, is not a node of the graph",
           i, nref(g->rets[i], r, sizeof r));
}

static void verify_graph(V *v) {
  const Graph *g = v->g;
  if (!valid_ident(g->name))
    VERR(v, g->loc, "graph name is not an identifier");
  if (index_nodes(v)) {
    for (int i = 0; i < g->nnodes && !diag_too_many(v->c); i++) {
      check_node(v, g->nodes[i]);
      v->state[g->nodes[i]->id] = 1;
    }
    check_names(v);
    check_args_rets(v);
  }
  arena_tmp_free(v->a, v->owner);
  arena_tmp_free(v->a, v->state);
  v->owner = NULL;
  v->state = NULL;
}

bool ir_verify(Ctx *c, const Module *m) {
  V v = {.c = c, .a = c->arena, .m = m, .ok = true};
  if (!m) {
    diag_error(c, (Loc){0, 0}, "internal: verifier: no module");
    return false;
  }
  Ctx scratch = {.arena = c->arena, .file = c->file, .dims = c->dims,
                 .max_errors = 1 << 30};
  scratch.diags_tail = &scratch.diags;
  v.scratch = &scratch;
  NameSet graphs;
  set_init(&graphs, v.a, (size_t)m->ngraphs);
  for (int i = 0; i < m->ngraphs && !diag_too_many(c); i++) {
    v.g = m->graphs[i];
    v.gi = i;
    if (!v.g) {
      diag_error(c, (Loc){0, 0}, "internal: verifier: graph %d is NULL", i);
      v.ok = false;
      continue;
    }
    if (v.g->name && !set_add(&graphs, v.g->name))
      VERR(&v, v.g->loc, "a graph of this name is declared twice");
    verify_graph(&v);
  }
  arena_tmp_free(v.a, graphs.slot);
  return v.ok;
}
