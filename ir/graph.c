/* graph.c: building modules, graphs and nodes; attribute access;
 * type helpers. All memory comes from the Ctx arena. */
#include "ir/ir.h"

#include <string.h>

/* ---- types ---- */
int64_t type_numel(const Type *t) {
  int64_t n = 1;
  for (int i = 0; i < t->rank; i++) {
    RLX_ASSERT(dim_is_static(t->dims[i]));
    n *= t->dims[i];
  }
  return n;
}

int64_t type_bytes(const Type *t) { return type_numel(t) * dt_size(t->dt); }

bool node_dynamic(const Node *n) {
  if (!type_is_static(&n->type)) return true;
  for (int i = 0; i < n->nin; i++)
    if (!type_is_static(&n->in[i]->type)) return true;
  return false;
}

bool node_unbounded(const Node *n) {
  if (!type_is_bounded(&n->type)) return true;
  for (int i = 0; i < n->nin; i++)
    if (!type_is_bounded(&n->in[i]->type)) return true;
  return false;
}

bool type_same_dims(const Type *a, const Type *b) {
  if (a->rank != b->rank) return false;
  for (int i = 0; i < a->rank; i++)
    if (a->dims[i] != b->dims[i]) return false;
  return true;
}

bool type_eq(const Type *a, const Type *b) {
  return a->dt == b->dt && type_same_dims(a, b);
}

Type type_make(DType dt, int rank, const int64_t *dims) {
  Type t = {.dt = dt, .rank = rank};
  RLX_ASSERT(rank >= 0 && rank <= RLX_MAX_RANK);
  for (int i = 0; i < rank; i++) t.dims[i] = dims[i];
  return t;
}

char *type_str_ex(const Type *t, bool bounds, char *buf, size_t n) {
  size_t k = (size_t)snprintf(buf, n, "%s[", dt_name(t->dt));
  for (int i = 0; i < t->rank && k < n; i++) {
    char d[96];
    k += (size_t)snprintf(buf + k, n - k, "%s%s", i ? ", " : "",
                          dim_str_ex(t->dims[i], bounds, d, sizeof d));
  }
  if (k < n) snprintf(buf + k, n - k, "]");
  return buf;
}

char *type_str(const Type *t, char *buf, size_t n) {
  return type_str_ex(t, false, buf, n);
}

/* ---- modules and graphs ---- */
static void *grow(Ctx *c, void *old, int n, int *cap, size_t elem) {
  return arena_grow(c->arena, old, n, cap, elem);
}

Module *ir_module_new(Ctx *c) { return arena_alloc(c->arena, sizeof(Module)); }

Graph *ir_graph_new(Ctx *c, Module *m, const char *name, Loc loc) {
  Graph *g = arena_alloc(c->arena, sizeof *g);
  g->arena = c->arena;
  g->name = arena_strdup(c->arena, name);
  g->loc = loc;
  if (m) {
    m->graphs = grow(c, m->graphs, m->ngraphs, &m->cap_graphs,
                     sizeof(Graph *));
    m->graphs[m->ngraphs++] = g;
  }
  return g;
}

Graph *ir_graph_find(const Module *m, const char *name) {
  for (int i = 0; i < m->ngraphs; i++)
    if (!strcmp(m->graphs[i]->name, name)) return m->graphs[i];
  return NULL;
}

void ir_module_remove_graph(Module *m, Graph *g) {
  int j = 0;
  for (int i = 0; i < m->ngraphs; i++)
    if (m->graphs[i] != g) m->graphs[j++] = m->graphs[i];
  m->ngraphs = j;
}

/* ---- nodes ---- */
Node *ir_node_new(Ctx *c, Graph *g, Op op, Node *const *in, int nin,
                  Loc loc) {
  Node *n = arena_alloc(c->arena, sizeof *n);
  n->id = g->next_id++;
  n->op = op;
  n->type.dt = DT_INVALID;
  n->nin = nin;
  n->in = arena_alloc(c->arena, sizeof(Node *) * (size_t)(nin ? nin : 1));
  if (nin) memcpy(n->in, in, sizeof(Node *) * (size_t)nin);
  n->loc = loc;
  g->nodes = grow(c, g->nodes, g->nnodes, &g->cap_nodes, sizeof(Node *));
  g->nodes[g->nnodes++] = n;
  return n;
}

Node *ir_arg_new(Ctx *c, Graph *g, Op op, const char *name, Type t,
                 Loc loc) {
  RLX_ASSERT(op == OP_INPUT || op == OP_PARAM);
  Node *n = ir_node_new(c, g, op, NULL, 0, loc);
  n->name = name ? arena_strdup(c->arena, name) : NULL;
  n->type = t;
  n->arg_index = g->nargs;
  g->args = grow(c, g->args, g->nargs, &g->cap_args, sizeof(Node *));
  g->args[g->nargs++] = n;
  return n;
}

Node *ir_const_new(Ctx *c, Graph *g, Type t, const void *data, bool splat,
                   Loc loc) {
  Node *n = ir_node_new(c, g, OP_CONST, NULL, 0, loc);
  n->type = t;
  n->splat = splat;
  size_t bytes = (size_t)(splat ? 1 : type_numel(&t)) * (size_t)dt_size(t.dt);
  n->data = arena_alloc(c->arena, bytes ? bytes : 1);
  if (data && bytes) memcpy(n->data, data, bytes);
  return n;
}

void ir_set_rets(Ctx *c, Graph *g, Node *const *rets, int n) {
  g->rets = arena_alloc(c->arena, sizeof(Node *) * (size_t)(n ? n : 1));
  if (n) memcpy(g->rets, rets, sizeof(Node *) * (size_t)n);
  g->nret = n;
}

double ir_const_get(const Node *n, int64_t i) {
  RLX_ASSERT(n->op == OP_CONST);
  if (n->splat) i = 0;
  const void *p = n->data;
  switch (n->type.dt) {
  case DT_F32: return ((const float *)p)[i];
  case DT_F64: return ((const double *)p)[i];
  case DT_I8: return ((const int8_t *)p)[i];
  case DT_U8: case DT_BOOL: return ((const uint8_t *)p)[i];
  case DT_I32: return ((const int32_t *)p)[i];
  case DT_I64: return (double)((const int64_t *)p)[i];
  case DT_C64: return ((const float *)p)[2 * i];
  default: return 0; /* f16/bf16 bit patterns: not numeric here */
  }
}

/* ---- attributes ---- */
Attr *ir_attr_set(Ctx *c, Node *n, AttrId id, AttrKind kind) {
  for (int i = 0; i < n->nattr; i++)
    if (n->attrs[i].id == id) {
      memset(&n->attrs[i].u, 0, sizeof n->attrs[i].u);
      n->attrs[i].kind = kind;
      return &n->attrs[i];
    }
  Attr *a = arena_alloc(c->arena, sizeof(Attr) * (size_t)(n->nattr + 1));
  if (n->nattr) memcpy(a, n->attrs, sizeof(Attr) * (size_t)n->nattr);
  n->attrs = a;
  Attr *r = &a[n->nattr++];
  r->id = id;
  r->kind = kind;
  return r;
}

void ir_attr_set_int(Ctx *c, Node *n, AttrId id, int64_t v) {
  ir_attr_set(c, n, id, AK_INT)->u.i = v;
}
void ir_attr_set_float(Ctx *c, Node *n, AttrId id, double v) {
  ir_attr_set(c, n, id, AK_FLOAT)->u.f = v;
}
void ir_attr_set_bool(Ctx *c, Node *n, AttrId id, bool v) {
  ir_attr_set(c, n, id, AK_BOOL)->u.b = v;
}
void ir_attr_set_dtype(Ctx *c, Node *n, AttrId id, DType v) {
  ir_attr_set(c, n, id, AK_DTYPE)->u.dt = v;
}
void ir_attr_set_word(Ctx *c, Node *n, AttrId id, const char *w) {
  ir_attr_set(c, n, id, AK_ENUM)->u.word = arena_strdup(c->arena, w);
}
void ir_attr_set_graph(Ctx *c, Node *n, AttrId id, Graph *g) {
  ir_attr_set(c, n, id, AK_GRAPH)->u.graph = g;
}
void ir_attr_set_ints(Ctx *c, Node *n, AttrId id, const int64_t *v, int k) {
  Attr *a = ir_attr_set(c, n, id, AK_INTS);
  a->u.ints.n = k;
  a->u.ints.v = arena_alloc(c->arena, sizeof(int64_t) * (size_t)(k ? k : 1));
  if (k) memcpy(a->u.ints.v, v, sizeof(int64_t) * (size_t)k);
}

void ir_attr_copy_all(Ctx *c, Node *dst, const Node *src) {
  for (int i = 0; i < src->nattr; i++) {
    const Attr *a = &src->attrs[i];
    if (a->kind == AK_INTS)
      ir_attr_set_ints(c, dst, a->id, a->u.ints.v, a->u.ints.n);
    else
      *ir_attr_set(c, dst, a->id, a->kind) = *a;
  }
}

bool ir_attr_present(const Node *n, AttrId id) {
  for (int i = 0; i < n->nattr; i++)
    if (n->attrs[i].id == id) return true;
  return false;
}

const Attr *ir_attr(const Node *n, AttrId id) {
  for (int i = 0; i < n->nattr; i++)
    if (n->attrs[i].id == id) return &n->attrs[i];
  const OpAttrSpec *s = op_attr_spec(n->op, id);
  return s && s->has_default ? &s->def : NULL;
}

int64_t ir_attr_int(const Node *n, AttrId id, int64_t fallback) {
  const Attr *a = ir_attr(n, id);
  return a && a->kind == AK_INT ? a->u.i : fallback;
}
double ir_attr_float(const Node *n, AttrId id, double fallback) {
  const Attr *a = ir_attr(n, id);
  return a && a->kind == AK_FLOAT ? a->u.f : fallback;
}
bool ir_attr_bool(const Node *n, AttrId id, bool fallback) {
  const Attr *a = ir_attr(n, id);
  return a && a->kind == AK_BOOL ? a->u.b : fallback;
}
Graph *ir_attr_graph(const Node *n, AttrId id) {
  const Attr *a = ir_attr(n, id);
  return a && a->kind == AK_GRAPH ? a->u.graph : NULL;
}
const char *ir_attr_word(const Node *n, AttrId id) {
  const Attr *a = ir_attr(n, id);
  return a && a->kind == AK_ENUM ? a->u.word : NULL;
}
const int64_t *ir_attr_ints(const Node *n, AttrId id, int *k) {
  const Attr *a = ir_attr(n, id);
  if (!a || a->kind != AK_INTS) {
    *k = 0;
    return NULL;
  }
  *k = a->u.ints.n;
  return a->u.ints.v;
}
