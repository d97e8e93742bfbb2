/* epilogues.c: ops that store the elementwise group reading them
 * (plan.h).
 *
 * A linear layer is add(matmul(x, w), b), a residual x + cast(y, f32),
 * mixed precision cast(layer_norm(x), to=bf16), and a gradient carries
 * cast(softmax_cross_entropy_backward(...), to=bf16): an op whose one
 * reader is an elementwise group of its shape, a loop that reads the
 * op's buffer once. On a target whose emitters of these ops store their
 * output only by cg_store at flat indices (the GPU), the op stores the
 * group instead: cg_buf of the op is a marker (as for a prologue), and
 * cg_store through it evaluates the group's tree at that element, the
 * op's value (rounded to the op's dtype, as its buffer held it) standing
 * for the op, and stores the root. The op gets no buffer (CG_SLOT_EPI,
 * store_as), the root emits nothing (stored_by) and its block is
 * defined at the op (cg_memplan): a pass and a buffer less, the same
 * bits. The group's other leaves must be computed before the op: ones
 * that come between the two in the schedule (a bias cast written after
 * the product) move before the op when they are a few elementwise
 * nodes that do not depend on it. Not for groups with side outputs.
 */
#include "codegen/plan/plan.h"

#include <string.h>

enum {
  MAX_HOIST = 8,    /* nodes moved before one op */
  MAX_WINDOW = 256, /* positions between op and root searched for them */
};

static bool stores_flat(Op op) {
  switch (op) {
  case OP_MATMUL: case OP_LAYER_NORM: case OP_RMS_NORM:
  case OP_LAYER_NORM_BACKWARD_INPUT: case OP_RMS_NORM_BACKWARD_INPUT:
  case OP_SOFTMAX_CROSS_ENTROPY_BACKWARD:
    return true;
  default:
    return false;
  }
}

typedef struct {
  CgPlan *p;
  Graph *g;
  int *pos;      /* node id -> position */
  Node **leaf;   /* leaves of the group other than the op */
  int nleaf;
  bool ok;
} Tree;

/* Collect the leaves of root r's fused tree under n (each once). */
static void leaves(Tree *t, Node *n, Node *op) {
  for (int k = 0; k < n->nin; k++) {
    Node *o = n->in[k];
    if (cg_in_tree(t->p, o)) {
      if (cg_walk_first(t->p, o)) leaves(t, o, op);
      continue;
    }
    if (o == op || (o->op == OP_CONST && o->splat)) continue;
    bool seen = false;
    for (int i = 0; i < t->nleaf; i++) seen |= t->leaf[i] == o;
    if (seen) continue;
    if (t->nleaf == CG_MAX_GROUP_OPERANDS) t->ok = false;
    else t->leaf[t->nleaf++] = o;
  }
}

/* Move the nodes after op that the late leaves need (elementwise,
 * reshape or constant nodes not depending on op, at most MAX_HOIST)
 * right before op, in their order; false when that cannot be done. */
static bool hoist(Tree *t, Node *op, Node *root) {
  int a = t->pos[op->id], z = t->pos[root->id];
  bool late = false;
  for (int i = 0; i < t->nleaf; i++) late |= t->pos[t->leaf[i]->id] > a;
  if (!late) return true;
  if (z - a > MAX_WINDOW) return false;
  Graph *g = t->g;
  bool need[MAX_WINDOW + 1] = {false};
  for (int i = 0; i < t->nleaf; i++) {
    int q = t->pos[t->leaf[i]->id];
    if (q > a) need[q - a] = true;
  }
  int moved = 0;
  for (int q = z - 1; q > a; q--) { /* the late leaves' producers */
    if (!need[q - a]) continue;
    Node *n = g->nodes[q];
    if ((!cg_is_elementwise(n->op) && n->op != OP_RESHAPE &&
         n->op != OP_CONST) || ++moved > MAX_HOIST)
      return false;
    for (int k = 0; k < n->nin; k++) {
      int r = t->pos[n->in[k]->id];
      if (r == a) return false; /* depends on op */
      if (r > a) need[r - a] = true;
    }
  }
  Node *keep[MAX_WINDOW + 1];
  int nk = 0, w = a;
  for (int q = a; q < z; q++) { /* the needed ones first, then op, ... */
    if (q > a && need[q - a]) g->nodes[w++] = g->nodes[q];
    else keep[nk++] = g->nodes[q];
  }
  for (int i = 0; i < nk; i++) g->nodes[w++] = keep[i];
  for (int q = a; q < z; q++) t->pos[g->nodes[q]->id] = q;
  return true;
}

void cg_epilogues(CgPlan *p, Graph *g) {
  Arena *ar = p->ctx->arena;
  size_t ids = (size_t)g->next_id + 1;
  int *uses = cg_use_counts(ar, g);
  int *pos = arena_tmp_alloc(ar, ids * sizeof *pos);
  Node **reader = arena_tmp_alloc(ar, ids * sizeof *reader);
  bool *sides = arena_tmp_alloc(ar, ids * sizeof *sides);
  Node **leaf = arena_tmp_alloc(ar, CG_MAX_GROUP_OPERANDS * sizeof *leaf);
  for (int i = 0; i < g->nnodes; i++) {
    Node *n = g->nodes[i];
    pos[n->id] = i;
    for (int k = 0; k < n->nin; k++) reader[n->in[k]->id] = n;
    if (p->slot[n->id].side_of) sides[p->slot[n->id].side_of->id] = true;
  }
  for (int i = 0; i < g->nnodes; i++) {
    Node *n = g->nodes[i];
    if (!stores_flat(n->op) || uses[n->id] != 1 ||
        p->slot[n->id].kind != CG_SLOT_NONE)
      continue;
    /* the group's root: n's reader, or above it (the readers of a
     * FUSED node are all in its group) */
    Node *r = reader[n->id];
    while (p->slot[r->id].kind == CG_SLOT_FUSED) r = reader[r->id];
    if ( !cg_is_elementwise(r->op) || !type_same_dims(&r->type, &n->type) ||
        p->slot[r->id].kind != CG_SLOT_NONE || p->slot[r->id].side_of ||
        sides[r->id] || !type_same_dims(&reader[n->id]->type, &n->type))
      continue;
    Tree t = {p, g, pos, leaf, 0, true};
    cg_walk_begin(p);
    leaves(&t, r, n);
    if (!t.ok || !hoist(&t, n, r)) continue;
    p->slot[n->id].kind = CG_SLOT_EPI;
    p->slot[n->id].store_as = r;
    p->slot[r->id].stored_by = n;
  }
  arena_tmp_free(ar, uses);
  arena_tmp_free(ar, pos);
  arena_tmp_free(ar, reader);
  arena_tmp_free(ar, sides);
  arena_tmp_free(ar, leaf);
}
