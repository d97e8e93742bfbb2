/* fuse.c: which nodes get no storage of their own.
 *
 * FUSED: an elementwise node (or expand) that is not returned and whose
 * consumers are all elementwise nodes of the same output shape belonging
 * to one group (an expand or stop_gradient that keeps storage accepts
 * none). It is computed inside the loop of the group's root (the one
 * node of the group with storage), once per element (memoized), so an
 * elementwise chain with broadcasts becomes one loop nest with no
 * intermediate buffers. A producer whose shape differs from a consumer
 * (it is broadcast) keeps its buffer, so nothing is recomputed.
 * Side output (CgSlot.side_of): a returned elementwise node (not
 * stop_gradient or expand) whose consumers are all elementwise nodes of
 * its shape in one group with an elementwise root is a member of that
 * group with storage of its own: the root's loop computes it (memoized,
 * as a FUSED node, its fused producers joining the group) and also
 * stores it, so the update m' = f(m, g) read by p' = h(p, m', ...)
 * costs one loop over p, g, m writing p and m, not two (AdamW: one for
 * p, m, v). It emits no code of its own, and every element's store
 * follows all of that element's loads, in both targets. When it is
 * stored over an argument (Graph.ret_into) memplan.c must be able to do
 * that in place, so every reader of the argument must be an elementwise
 * node of the argument's type in the same group (it is then read only
 * at the element the loop writes, and by no node after the root) and
 * the argument must not be returned; otherwise the node is refused
 * (noside) and fusion runs again: it stays a root, as it was before.
 * Prologue: an elementwise node whose only consumer is a reduction
 * (reduce_*), a softmax/log_softmax over an innermost axis or the
 * logits of softmax_cross_entropy is FUSED with that consumer as its
 * root: the reduction's loads compute it (cg_fused_load), no buffer;
 * its own elementwise producers join the same group. Not when a
 * reduction folds vectors across rows of its innermost dim and the tree
 * has a broadcast leaf (fix_prologue: kept as a root with a buffer).
 * Shared prologue: an elementwise node read only as the logits of
 * softmax_cross_entropy nodes and their backwards (a training step's
 * forward and backward of the same logits) is the prologue of each of
 * them: every one computes it in its loads and counts it in its group.
 * Its own producers keep their storage (Groups.shared), so no tree
 * below it belongs to two groups.
 * FOLDED: a transpose that only swaps the last two dims and is read
 * only by matmul (or as grouped_matmul's w), which folds it into its
 * GEMM strides.
 * ALIAS: reshape (same bytes, row-major) and a stop_gradient that is not
 * fused into a consumer, resolved to the node that owns the storage (a
 * stop_gradient root accepts no fused producers, so it can alias).
 * Decided in reverse node order, so consumers are decided first.
 * Groups are bounded (CG_MAX_GROUP_NODES nodes, CG_MAX_GROUP_OPERANDS
 * operand slots, CG_MAX_GROUP_SIDES side outputs): a producer that
 * would overflow its consumers' group becomes the root of a new one
 * (a returned one stays a root). This keeps every fused tree, and so
 * the recursion over it and the LLVM loop body it becomes, small
 * whatever the graph's size, and bounds a root's leaves. Walks over a
 * fused tree visit each FUSED node once (cg_walk_*): trees are DAGs
 * with shared nodes, and a walk without a visited set is exponential.
 */
#include "codegen/plan/plan.h"

#include <stdlib.h>

/* Elementwise for fusion: expand is a pure broadcast (its operand is
 * read with broadcast strides), so it fuses like an identity op. */
static bool is_ew(const Node *n) {
  return n->op == OP_EXPAND || cg_is_elementwise(n->op);
}

static bool is_swap_last2(const Node *n) {
  if (n->op != OP_TRANSPOSE || n->type.rank < 2) return false;
  int k;
  const int64_t *perm = ir_attr_ints(n, ATTR_PERM, &k);
  int r = n->type.rank;
  if (!perm || k != r) return false;
  for (int i = 0; i < r - 2; i++)
    if (perm[i] != i) return false;
  return perm[r - 2] == r - 1 && perm[r - 1] == r - 2;
}

/* Consumers of each node, as a CSR list. */
typedef struct {
  int *start, *list;
} Uses;

static bool uses_build(Arena *a, Graph *g, Uses *u) {
  int n = g->next_id;
  u->start = arena_tmp_alloc(a, ((size_t)n + 2) * sizeof(int));
  int tot = 0;
  for (int i = 0; i < g->nnodes; i++) tot += g->nodes[i]->nin;
  u->list = arena_tmp_alloc(a, ((size_t)tot + 1) * sizeof(int));
  for (int i = 0; i < g->nnodes; i++)
    for (int k = 0; k < g->nodes[i]->nin; k++)
      u->start[g->nodes[i]->in[k]->id + 2]++;
  for (int i = 0; i < n; i++) u->start[i + 2] += u->start[i + 1];
  for (int i = 0; i < g->nnodes; i++)
    for (int k = 0; k < g->nodes[i]->nin; k++)
      u->list[u->start[g->nodes[i]->in[k]->id + 1]++] = i;
  return true;
}

static bool is_reduce(Op op) {
  return op == OP_REDUCE_SUM || op == OP_REDUCE_MEAN || op == OP_REDUCE_MAX ||
         op == OP_REDUCE_MIN || op == OP_REDUCE_PROD;
}

/* Does reduction c reduce the innermost dim of size > 1 of its input?
 * Then its loads may be vectors spanning rows of that dim. */
static bool reduces_innermost(const Node *c) {
  const Type *t = &c->in[0]->type;
  int dl = t->rank - 1;
  while (dl >= 0 && t->dims[dl] == 1) dl--;
  if (dl < 0) return false;
  int k;
  const int64_t *ax = ir_attr_ints(c, ATTR_AXES, &k);
  if (!ax) return true;
  for (int i = 0; i < k; i++)
    if ((ax[i] < 0 ? ax[i] + t->rank : ax[i]) == dl) return true;
  return false;
}

bool cg_fuse_prologue_ok(const Node *c, const Node *n) {
  if (c->nin < 1 || c->in[0] != n) return false;
  /* prologue loads index with static sizes after axis 0 */
  for (int i = 1; i < n->type.rank; i++)
    if (!dim_is_static(n->type.dims[i])) return false;
  /* may be unfused again by fix_prologue, and these roots take no
   * fused producers */
  if (is_reduce(c->op) && reduces_innermost(c) &&
      (n->op == OP_STOP_GRADIENT || n->op == OP_EXPAND))
    return false;
  for (int k = 1; k < c->nin; k++)
    if (c->in[k] == n) return false;
  switch (c->op) {
  case OP_REDUCE_SUM: case OP_REDUCE_MEAN: case OP_REDUCE_MAX:
  case OP_REDUCE_MIN: case OP_REDUCE_PROD:
  case OP_SOFTMAX_CROSS_ENTROPY: case OP_SOFTMAX_CROSS_ENTROPY_BACKWARD:
    return true;
  case OP_SOFTMAX: case OP_LOG_SOFTMAX: {
    /* rows only: the outer-axis kernel offsets its input pointer */
    const Type *t = &c->type;
    if (t->rank == 0) return true;
    int64_t ax = ir_attr_int(c, ATTR_AXIS, -1);
    if (ax < 0) ax += t->rank;
    int64_t inner = 1;
    for (int i = (int)ax + 1; i < t->rank; i++) inner *= t->dims[i];
    return inner == 1;
  }
  default:
    return false;
  }
}

/* Nodes, operand slots and side outputs of the group rooted at each
 * node id; shared prologues (by node id). */
typedef struct {
  Node **root;
  int *nodes, *slots, *sides;
  bool *shared;
} Groups;

/* Does n fit into the group rooted at r (as a side output)? */
static bool fits(const Groups *gr, const Node *r, const Node *n, bool side) {
  return gr->nodes[r->id] < CG_MAX_GROUP_NODES &&
         gr->slots[r->id] + n->nin <= CG_MAX_GROUP_OPERANDS &&
         (!side || gr->sides[r->id] < CG_MAX_GROUP_SIDES);
}

/* The root of the one group holding all of n's consumers, when they are
 * elementwise nodes of n's shape; else NULL. */
static Node *consumers_group(Graph *g, Node *n, Uses *u, const Groups *gr) {
  Node **root = gr->root, *r = NULL;
  for (int k = u->start[n->id]; k < u->start[n->id + 1]; k++) {
    Node *c = g->nodes[u->list[k]];
    if (!is_ew(c) || !type_same_dims(&c->type, &n->type) || gr->shared[c->id])
      return NULL;
    bool own = root[c->id] == c; /* c keeps storage: it is a root */
    if (own && (c->op == OP_STOP_GRADIENT || c->op == OP_EXPAND))
      return NULL; /* aliased / emitted by emit/data.c from a buffer */
    if (r && root[c->id] != r) return NULL;
    r = root[c->id];
  }
  return r;
}

/* Is n a shared prologue: read (more than once) only as the logits of
 * softmax_cross_entropy nodes and their backwards, each with room? */
static bool shared_prologue(Graph *g, Node *n, Uses *u, const Groups *gr) {
  if (u->start[n->id + 1] - u->start[n->id] < 2) return false;
  for (int k = u->start[n->id]; k < u->start[n->id + 1]; k++) {
    Node *c = g->nodes[u->list[k]];
    if ((c->op != OP_SOFTMAX_CROSS_ENTROPY &&
         c->op != OP_SOFTMAX_CROSS_ENTROPY_BACKWARD) ||
        !cg_fuse_prologue_ok(c, n) || !fits(gr, gr->root[c->id], n, false))
      return false;
  }
  return true;
}

/* n joins its consumers' group: returns the group root or NULL. A lone
 * consumer of the reduction family takes n as its prologue; a shared
 * prologue returns its first consumer (decide counts it in each). */
static Node *fusable(Graph *g, Node *n, Uses *u, const Groups *gr,
                     const bool *isret, bool *shared) {
  *shared = false;
  if (!is_ew(n) || isret[n->id]) return NULL;
  Node **root = gr->root;
  if (u->start[n->id + 1] - u->start[n->id] == 1) {
    Node *c = g->nodes[u->list[u->start[n->id]]];
    if (cg_fuse_prologue_ok(c, n))
      return fits(gr, root[c->id], n, false) ? c : NULL;
  }
  if ((*shared = shared_prologue(g, n, u, gr)))
    return g->nodes[u->list[u->start[n->id]]];
  Node *r = consumers_group(g, n, u, gr);
  return r && fits(gr, r, n, false) ? r : NULL;
}

/* Returned n becomes a side output of its consumers' group: returns
 * that group's root (an elementwise loop of n's shape) or NULL. */
static Node *side_root(Graph *g, Node *n, Uses *u, const Groups *gr,
                       const bool *noside) {
  if (!cg_is_elementwise(n->op) || n->op == OP_STOP_GRADIENT ||
      noside[n->id])
    return NULL;
  Node *r = consumers_group(g, n, u, gr);
  if (!r || !cg_is_elementwise(r->op) || r->op == OP_STOP_GRADIENT ||
      !type_same_dims(&r->type, &n->type))
    return NULL;
  return fits(gr, r, n, true) ? r : NULL;
}

/* A leaf of n's fused tree read with broadcast strides (not a scalar
 * constant, not laid out like n)? */
static bool bcast_leaf(CgPlan *plan, const Node *root, const Node *n) {
  for (int k = 0; k < n->nin; k++) {
    const Node *o = n->in[k];
    if (plan->slot[o->id].kind == CG_SLOT_FUSED) {
      if (cg_walk_first(plan, o) && bcast_leaf(plan, root, o)) return true;
      continue;
    }
    if (o->op == OP_CONST && (o->splat || type_numel(&o->type) == 1))
      continue;
    int64_t bs[RLX_MAX_RANK], rs[RLX_MAX_RANK];
    cg_bcast_strides(&o->type, &root->type, bs);
    cg_strides(&root->type, rs);
    for (int d = 0; d < root->type.rank; d++)
      if (root->type.dims[d] != 1 && bs[d] != rs[d]) return true;
  }
  return false;
}

/* A reduction whose vector loads cross rows cannot read a prologue with
 * broadcast leaves (cg_fused_load): that producer keeps its buffer and
 * becomes the root of its fused producers. */
static void fix_prologue(Graph *g, CgPlan *plan) {
  for (int i = 0; i < g->nnodes; i++) {
    Node *c = g->nodes[i];
    if (!is_reduce(c->op) || !reduces_innermost(c)) continue;
    Node *n = c->in[0];
    if (plan->slot[n->id].kind != CG_SLOT_FUSED) continue;
    cg_walk_begin(plan);
    if (bcast_leaf(plan, n, n)) plan->slot[n->id].kind = CG_SLOT_NONE;
  }
}

static bool all_matmul(Graph *g, Node *n, Uses *u) {
  int cnt = 0;
  for (int k = u->start[n->id]; k < u->start[n->id + 1]; k++, cnt++) {
    const Node *c = g->nodes[u->list[k]];
    bool gm_w = c->op == OP_GROUPED_MATMUL && c->in[0] != n &&
                c->in[2] != n;
    if (c->op != OP_MATMUL && !gm_w) return false;
  }
  return cnt > 0;
}

/* One pass of decisions, in reverse node order over undecided slots. */
static void decide(Graph *g, CgPlan *plan, Uses *u, Groups *gr,
                   const bool *isret, const bool *noside) {
  for (int i = g->nnodes - 1; i >= 0; i--) {
    Node *n = g->nodes[i];
    CgSlot *s = &plan->slot[n->id];
    Node *r = fusable(g, n, u, gr, isret, &gr->shared[n->id]);
    Node *side = !r && isret[n->id] ? side_root(g, n, u, gr, noside) : NULL;
    gr->root[n->id] = r ? r : side ? side : n;
    for (int k = u->start[n->id]; gr->shared[n->id] && k < u->start[n->id + 1];
         k++) {
      Node *c = g->nodes[u->list[k]];
      if (c == r) continue;
      gr->nodes[c->id]++;
      gr->slots[c->id] += n->nin;
    }
    gr->nodes[gr->root[n->id]->id]++;
    gr->slots[gr->root[n->id]->id] += n->nin;
    if (r) {
      s->kind = CG_SLOT_FUSED;
    } else if (side) {
      s->side_of = side;
      gr->sides[side->id]++;
    } else if (!isret[n->id] && is_swap_last2(n) && all_matmul(g, n, u)) {
      s->kind = CG_SLOT_FOLDED;
    }
  }
  fix_prologue(g, plan);
}

/* Side outputs stored over an argument whose in-place store memplan.c
 * could not prove safe (see the top comment) are marked in noside;
 * returns how many. */
static int refuse_sides(Graph *g, CgPlan *plan, Uses *u, const Groups *gr,
                        const bool *isret, bool *noside) {
  int bad = 0;
  for (int j = 0; g->ret_into && j < g->nret; j++) {
    Node *n = g->rets[j], *r = plan->slot[n->id].side_of;
    if (!r || g->ret_into[j] < 0) continue;
    Node *a = g->args[g->ret_into[j]];
    bool ok = !isret[a->id] && type_eq(&n->type, &a->type);
    for (int k = u->start[a->id]; ok && k < u->start[a->id + 1]; k++) {
      Node *c = g->nodes[u->list[k]];
      ok = cg_is_elementwise(c->op) && gr->root[c->id] == r &&
           type_eq(&c->type, &a->type);
    }
    if (!ok && !noside[n->id]) {
      noside[n->id] = true;
      bad++;
    }
  }
  return bad;
}

static void undecide(Graph *g, CgPlan *plan, Groups *gr) {
  for (int i = 0; i < g->nnodes; i++) {
    int id = g->nodes[i]->id;
    plan->slot[id].kind = CG_SLOT_NONE;
    plan->slot[id].side_of = NULL;
    gr->nodes[id] = gr->slots[id] = gr->sides[id] = 0;
    gr->shared[id] = false;
  }
}

bool cg_fuse(Graph *g, CgPlan *plan) {
  Uses u = {0};
  Arena *a = plan->ctx->arena; /* temporaries: freed below */
  size_t ids = (size_t)g->next_id + 1;
  bool *isret = arena_tmp_alloc(a, ids * sizeof(bool));
  bool *noside = arena_tmp_alloc(a, ids * sizeof(bool));
  Groups gr = {arena_tmp_alloc(a, ids * sizeof(Node *)),
               arena_tmp_alloc(a, ids * sizeof(int)),
               arena_tmp_alloc(a, ids * sizeof(int)),
               arena_tmp_alloc(a, ids * sizeof(int)),
               arena_tmp_alloc(a, ids * sizeof(bool))};
  bool ok = uses_build(a, g, &u);
  for (int i = 0; ok && i < g->nret; i++) isret[g->rets[i]->id] = true;
  if (ok) decide(g, plan, &u, &gr, isret, noside);
  while (ok && refuse_sides(g, plan, &u, &gr, isret, noside)) {
    undecide(g, plan, &gr); /* each round refuses more nodes */
    decide(g, plan, &u, &gr, isret, noside);
  }
  /* aliases, in forward order so chains resolve to their owner */
  for (int i = 0; ok && i < g->nnodes; i++) {
    Node *n = g->nodes[i];
    CgSlot *s = &plan->slot[n->id];
    if (n->op != OP_RESHAPE &&
        !(n->op == OP_STOP_GRADIENT && s->kind == CG_SLOT_NONE))
      continue;
    CgSlot *src = &plan->slot[n->in[0]->id];
    s->kind = CG_SLOT_ALIAS;
    s->alias = src->kind == CG_SLOT_ALIAS ? src->alias : n->in[0];
  }
  arena_tmp_free(a, u.start);
  arena_tmp_free(a, u.list);
  arena_tmp_free(a, isret);
  arena_tmp_free(a, noside);
  arena_tmp_free(a, gr.root);
  arena_tmp_free(a, gr.nodes);
  arena_tmp_free(a, gr.slots);
  arena_tmp_free(a, gr.sides);
  arena_tmp_free(a, gr.shared);
  return ok;
}
