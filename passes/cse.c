/* cse.c: common-subexpression elimination.
 *
 * Two nodes are the same value when they have the same op, type,
 * operands (after earlier merges), attributes and, for constants, the
 * same bytes; the later one is replaced by the earlier. Arguments are
 * never merged. Every op is a pure function of its operands and
 * attributes (rng ops are counter-based and seeded), so merging is
 * always sound. Runs with --grad on the gradient graph; the AD passes
 * call pass_cse_graph on the backward bodies they create.
 * Entry points: pass_cse (pipeline), pass_cse_graph.
 */
#include "passes/ad.h"

#include <string.h>

typedef struct {
  Node **slot;
  size_t cap;
} CseTable;

static uint64_t mix(uint64_t h, uint64_t v) {
  h ^= v + 0x9e3779b97f4a7c15ULL + (h << 6) + (h >> 2);
  return h;
}

static size_t const_bytes(const Node *n) {
  return (size_t)(n->splat ? 1 : type_numel(&n->type)) *
         (size_t)dt_size(n->type.dt);
}

static uint64_t node_hash(const Node *n) {
  uint64_t h = mix(n->op, (uint64_t)n->type.dt);
  for (int i = 0; i < n->type.rank; i++) h = mix(h, (uint64_t)n->type.dims[i]);
  for (int i = 0; i < n->nin; i++) h = mix(h, (uint64_t)n->in[i]->id);
  if (n->op == OP_CONST) {
    const unsigned char *p = n->data;
    size_t len = const_bytes(n);
    for (size_t i = 0; i < len && i < 64; i++) h = mix(h, p[i]);
    h = mix(h, n->splat);
  }
  return h;
}

static bool attr_eq(const Attr *a, const Attr *b) {
  if (a->kind != b->kind) return false;
  switch (a->kind) {
  case AK_INT: return a->u.i == b->u.i;
  case AK_FLOAT: return !memcmp(&a->u.f, &b->u.f, sizeof a->u.f);
  case AK_BOOL: return a->u.b == b->u.b;
  case AK_DTYPE: return a->u.dt == b->u.dt;
  case AK_ENUM: return !strcmp(a->u.word, b->u.word);
  case AK_GRAPH: return a->u.graph == b->u.graph;
  case AK_INTS:
    return a->u.ints.n == b->u.ints.n &&
           !memcmp(a->u.ints.v, b->u.ints.v,
                   sizeof(int64_t) * (size_t)a->u.ints.n);
  }
  return false;
}

/* Same attributes, counting defaults (x=default equals x absent). */
static bool attrs_eq(const Node *a, const Node *b) {
  const OpInfo *oi = op_info(a->op);
  for (int i = 0; i < oi->nattrs; i++) {
    const Attr *x = ir_attr(a, oi->attrs[i].id);
    const Attr *y = ir_attr(b, oi->attrs[i].id);
    if (!x != !y || (x && !attr_eq(x, y))) return false;
  }
  return true;
}

static bool same(const Node *a, const Node *b) {
  if (a->op != b->op || a->nin != b->nin || !type_eq(&a->type, &b->type))
    return false;
  for (int i = 0; i < a->nin; i++)
    if (a->in[i] != b->in[i]) return false;
  if (a->op == OP_CONST)
    return a->splat == b->splat &&
           !memcmp(a->data, b->data, const_bytes(a));
  return attrs_eq(a, b);
}

static Node *rewrite_cse(IrBuilder *b, Node *n, void *ud) {
  CseTable *t = ud;
  if (n->op == OP_INPUT || n->op == OP_PARAM) return n;
  size_t i = node_hash(n) & (t->cap - 1);
  for (; t->slot[i]; i = (i + 1) & (t->cap - 1))
    if (same(t->slot[i], n)) {
      Node *r = t->slot[i];
      if (!r->name && n->name) r->name = n->name;
      return r;
    }
  t->slot[i] = n;
  return n;
}

void pass_cse_graph(Ctx *c, Graph *g) {
  CseTable t = {NULL, 16};
  while (t.cap < (size_t)g->nnodes * 2 + 16) t.cap *= 2;
  t.slot = arena_alloc(c->arena, sizeof(Node *) * t.cap);
  ib_rewrite(c, g, rewrite_cse, &t);
}

bool pass_cse(Unit *u) {
  if (!u->opt || !u->opt->grad || !u->grad) return true;
  pass_cse_graph(u->ctx, u->grad);
  return true;
}
