/* builder.c: node constructors, in-place rewriting and subgraph
 * inlining shared by the passes (see builder.h for the contract).
 * Every constructor asserts that shape inference accepted the node:
 * passes only build nodes they know to be well typed. */
#include "ir/builder.h"

#include <stdio.h>
#include <string.h>

Node *ib_finish(IrBuilder *b, Node *n) {
  int before = b->c->nerrors;
  bool ok = shape_infer(b->c, n);
  RLX_ASSERT(ok && b->c->nerrors == before);
  return n;
}

Node *ib_op(IrBuilder *b, Op op, Node *const *in, int nin) {
  return ir_node_new(b->c, b->g, op, in, nin, b->loc);
}

Node *ib_un(IrBuilder *b, Op op, Node *x) {
  return ib_finish(b, ib_op(b, op, &x, 1));
}

Node *ib_bin(IrBuilder *b, Op op, Node *x, Node *y) {
  Node *in[2] = {x, y};
  return ib_finish(b, ib_op(b, op, in, 2));
}

Node *ib_where(IrBuilder *b, Node *c, Node *x, Node *y) {
  Node *in[3] = {c, x, y};
  return ib_finish(b, ib_op(b, OP_WHERE, in, 3));
}

/* Store v as element 0 of dtype dt into buf (16 bytes). */
static void put_scalar(void *buf, DType dt, double v) {
  switch (dt) {
  case DT_F32: *(float *)buf = (float)v; break;
  case DT_F64: *(double *)buf = v; break;
  case DT_C64: ((float *)buf)[0] = (float)v; ((float *)buf)[1] = 0; break;
  case DT_I8: *(int8_t *)buf = (int8_t)v; break;
  case DT_U8: case DT_BOOL: *(uint8_t *)buf = (uint8_t)v; break;
  case DT_I32: *(int32_t *)buf = (int32_t)v; break;
  case DT_I64: *(int64_t *)buf = (int64_t)v; break;
  default: RLX_ASSERT(!"scalar of f16/bf16 not supported in passes");
  }
}

Node *ib_fill(IrBuilder *b, Type t, double v) {
  if (!type_is_static(&t)) /* a constant's type is static: broadcast one */
    return ib_expand(b, ib_scalar(b, t.dt, v), &t);
  if (t.dt == DT_F16 || t.dt == DT_BF16) {
    Type f = t;
    f.dt = DT_F32;
    return ib_cast(b, ib_fill(b, f, v), t.dt);
  }
  unsigned char buf[16] = {0};
  put_scalar(buf, t.dt, v);
  return ir_const_new(b->c, b->g, t, buf, true, b->loc);
}

Node *ib_scalar(IrBuilder *b, DType dt, double v) {
  if (dt == DT_F16 || dt == DT_BF16) /* no bit-pattern literal: a cast */
    return ib_cast(b, ib_fill(b, type_make(DT_F32, 0, NULL), v), dt);
  return ib_fill(b, type_make(dt, 0, NULL), v);
}

Node *ib_reshape(IrBuilder *b, Node *x, int rank, const int64_t *dims) {
  Node *n = ib_op(b, OP_RESHAPE, &x, 1);
  ir_attr_set_ints(b->c, n, ATTR_SHAPE, dims, rank);
  return ib_finish(b, n);
}

Node *ib_reshape_as(IrBuilder *b, Node *x, const Type *t) {
  return ib_reshape(b, x, t->rank, t->dims);
}

Node *ib_transpose(IrBuilder *b, Node *x, const int64_t *perm) {
  Node *n = ib_op(b, OP_TRANSPOSE, &x, 1);
  ir_attr_set_ints(b->c, n, ATTR_PERM, perm, x->type.rank);
  return ib_finish(b, n);
}

Node *ib_mT(IrBuilder *b, Node *x) {
  int r = x->type.rank;
  int64_t perm[RLX_MAX_RANK];
  for (int i = 0; i < r; i++) perm[i] = i;
  perm[r - 2] = r - 1;
  perm[r - 1] = r - 2;
  return ib_transpose(b, x, perm);
}

Node *ib_expand(IrBuilder *b, Node *x, const Type *t) {
  Node *n = ib_op(b, OP_EXPAND, &x, 1);
  ir_attr_set_ints(b->c, n, ATTR_SHAPE, t->dims, t->rank);
  return ib_finish(b, n);
}

Node *ib_reduce(IrBuilder *b, Op op, Node *x, const int64_t *axes, int k,
                bool keep) {
  Node *n = ib_op(b, op, &x, 1);
  ir_attr_set_ints(b->c, n, ATTR_AXES, axes, k);
  if (keep) ir_attr_set_bool(b->c, n, ATTR_KEEP_DIMS, true);
  return ib_finish(b, n);
}

Node *ib_narrow(IrBuilder *b, Node *x, int axis, int64_t start,
                int64_t len) {
  Node *n = ib_op(b, OP_NARROW, &x, 1);
  ir_attr_set_int(b->c, n, ATTR_AXIS, axis);
  ir_attr_set_int(b->c, n, ATTR_START, start);
  ir_attr_set_int(b->c, n, ATTR_LEN, len);
  return ib_finish(b, n);
}

Node *ib_concat(IrBuilder *b, Node *const *parts, int n, int axis) {
  if (n == 1) return parts[0];
  Node *r = ib_op(b, OP_CONCAT, parts, n);
  ir_attr_set_int(b->c, r, ATTR_AXIS, axis);
  return ib_finish(b, r);
}

Node *ib_cast(IrBuilder *b, Node *x, DType to) {
  if (x->type.dt == to) return x;
  Node *n = ib_op(b, OP_CAST, &x, 1);
  ir_attr_set_dtype(b->c, n, ATTR_TO, to);
  return ib_finish(b, n);
}

Node *ib_i64s(IrBuilder *b, const int64_t *v, int64_t n) {
  Type t = type_make(DT_I64, 1, &n);
  return ir_const_new(b->c, b->g, t, v, false, b->loc);
}

/* ---- rewriting ---- */

/* Append an existing node to g's list (growing it in the arena). */
static void push_node(Ctx *c, Graph *g, Node *n) {
  if (g->nnodes == g->cap_nodes) {
    int cap = g->cap_nodes ? g->cap_nodes * 2 : 16;
    Node **p = arena_alloc(c->arena, sizeof(Node *) * (size_t)cap);
    if (g->nnodes) memcpy(p, g->nodes, sizeof(Node *) * (size_t)g->nnodes);
    g->nodes = p;
    g->cap_nodes = cap;
  }
  g->nodes[g->nnodes++] = n;
}

static Node *follow(Node **repl, int nrepl, Node *n) {
  while (n->id < nrepl && repl[n->id] && repl[n->id] != n) n = repl[n->id];
  return n;
}

void ib_rewrite(Ctx *c, Graph *g, RewriteFn fn, void *ud) {
  int nold = g->nnodes, nrepl = g->next_id;
  Node **old = g->nodes;
  Node **repl = arena_alloc(c->arena, sizeof(Node *) * (size_t)(nrepl + 1));
  g->nodes = NULL;
  g->nnodes = g->cap_nodes = 0;
  IrBuilder b = {c, g, {0, 0}};
  for (int i = 0; i < nold; i++) {
    Node *n = old[i];
    for (int k = 0; k < n->nin; k++) n->in[k] = follow(repl, nrepl, n->in[k]);
    b.loc = n->loc;
    int mark = g->nnodes;
    push_node(c, g, n);
    Node *r = fn(&b, n, ud);
    if (r == n) continue;
    /* drop n from its slot: nodes fn appended came after it */
    memmove(g->nodes + mark, g->nodes + mark + 1,
            sizeof(Node *) * (size_t)(g->nnodes - mark - 1));
    g->nnodes--;
    repl[n->id] = r;
    if (n->name && !r->name && !r->literal && r->op != OP_INPUT &&
        r->op != OP_PARAM)
      r->name = n->name; /* keep user-visible names of replaced values */
  }
  for (int i = 0; i < g->nret; i++)
    g->rets[i] = follow(repl, nrepl, g->rets[i]);
}

void ib_filter(Ctx *c, Graph *g, const bool *keep) {
  (void)c;
  int j = 0;
  for (int i = 0; i < g->nnodes; i++) {
    Node *n = g->nodes[i];
    if (keep[n->id] || n->op == OP_INPUT || n->op == OP_PARAM)
      g->nodes[j++] = n;
  }
  g->nnodes = j;
}

/* ---- copying ---- */

Node *ib_clone(IrBuilder *b, const Node *n, Node *const *in) {
  if (n->op == OP_CONST) {
    Node *k = ir_const_new(b->c, b->g, n->type, n->data, n->splat, b->loc);
    k->literal = n->literal;
    return k;
  }
  RLX_ASSERT(n->op != OP_INPUT && n->op != OP_PARAM);
  Node *k = ir_node_new(b->c, b->g, n->op, in, n->nin, n->loc);
  ir_attr_copy_all(b->c, k, n);
  k->type = n->type;
  return k;
}

Node **ib_inline(IrBuilder *b, const Graph *sub, Node *const *args) {
  Node **map = arena_alloc(b->c->arena,
                           sizeof(Node *) * (size_t)(sub->next_id + 1));
  for (int i = 0; i < sub->nargs; i++) map[sub->args[i]->id] = args[i];
  Node *ops[64], **in = ops;
  for (int i = 0; i < sub->nnodes; i++) {
    const Node *n = sub->nodes[i];
    if (n->op == OP_INPUT || n->op == OP_PARAM) continue;
    if (n->nin > 64)
      in = arena_alloc(b->c->arena, sizeof(Node *) * (size_t)n->nin);
    for (int k = 0; k < n->nin; k++) in[k] = map[n->in[k]->id];
    map[n->id] = ib_clone(b, n, in);
    in = ops;
  }
  Node **rets = arena_alloc(b->c->arena,
                            sizeof(Node *) * (size_t)(sub->nret + 1));
  for (int i = 0; i < sub->nret; i++) rets[i] = map[sub->rets[i]->id];
  return rets;
}

/* ---- graphs ---- */

Graph *ib_graph_detached(Ctx *c, const char *name, Loc loc) {
  return ir_graph_new(c, NULL, name, loc);
}

Graph *ib_attach(Ctx *c, Module *m, Graph *g) {
  Graph *slot = ir_graph_new(c, m, g->name, g->loc);
  *slot = *g;
  return slot;
}

Graph *ib_attach_before(Ctx *c, Module *m, Graph *g, const Graph *user) {
  Graph *a = ib_attach(c, m, g);
  int at = -1;
  for (int i = 0; i < m->ngraphs; i++)
    if (m->graphs[i] == user) at = i;
  if (at < 0) return a;
  memmove(m->graphs + at + 1, m->graphs + at,
          sizeof(Graph *) * (size_t)(m->ngraphs - 1 - at));
  m->graphs[at] = a;
  return a;
}

const char *ib_fresh_graph_name(Ctx *c, const Module *m, const char *base) {
  if (!ir_graph_find(m, base)) return arena_strdup(c->arena, base);
  size_t n = strlen(base) + 16; /* a fixed buffer truncated long names */
  char *buf = arena_alloc(c->arena, n);
  for (int i = 1;; i++) {
    snprintf(buf, n, "%s_%d", base, i);
    if (!ir_graph_find(m, buf)) return buf;
  }
}
