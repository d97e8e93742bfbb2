/* cse.c: common-subexpression elimination.
 *
 * Two nodes are the same value when they have the same op, type,
 * operands (after earlier merges), attributes and, for constants, the
 * same bytes; the later one is replaced by the earlier. add, mul, eq
 * and ne are commutative (exactly, in IEEE arithmetic): their two
 * operands match in either order, so the x·t + t·x that forward mode
 * builds for mul(x, x) is one product. Arguments are
 * never merged. Every op is a pure function of its operands and
 * attributes (rng ops are counter-based and seeded), so merging is
 * always sound. Runs with --grad on the gradient graph; the AD passes
 * call pass_cse_graph on the backward bodies they create.
 * Entry points: pass_cse (pipeline), pass_cse_graph.
 */
#include "passes/cleanup/cleanup.h"

typedef struct {
  Node **slot;
  size_t cap;
} CseTable;

static bool commutative(const Node *n) {
  return n->nin == 2 && (n->op == OP_ADD || n->op == OP_MUL ||
                         n->op == OP_EQ || n->op == OP_NE);
}

static uint64_t node_hash(const Node *n) {
  uint64_t h = ir_node_hash_local(n);
  if (commutative(n)) /* symmetric in the two operands */
    return h ^ ((uint64_t)n->in[0]->id * 0x9e3779b97f4a7c15ULL +
                (uint64_t)n->in[1]->id * 0x9e3779b97f4a7c15ULL);
  for (int i = 0; i < n->nin; i++)
    h ^= (uint64_t)n->in[i]->id * 0x9e3779b97f4a7c15ULL + (h << 6) + (h >> 2);
  return h;
}

static bool same(const Node *a, const Node *b) {
  if (!ir_node_same_local(a, b)) return false;
  if (commutative(a) && a->in[0] == b->in[1] && a->in[1] == b->in[0])
    return true;
  for (int i = 0; i < a->nin; i++)
    if (a->in[i] != b->in[i]) return false;
  return true;
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
  Graph *g[4] = UNIT_DERIVED(u);
  for (int i = 0; i < 4; i++)
    if (g[i]) pass_cse_graph(u->ctx, g[i]);
  return true;
}
