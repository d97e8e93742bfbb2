/* memplan.c: the static memory plan of one graph.
 *
 * After cg_fuse(), every node that still needs storage gets a place:
 * graph arguments -> inputs[i]; the first return of a computed node ->
 * outputs[j] (other returns are copied out at the end); non-splat
 * constants -> a global; everything else (including splat constants
 * read through a buffer) -> an offset in the workspace.
 *
 * Live range of a workspace block, in node positions: from its
 * definition to the last node that reads it, where reading a FUSED node
 * reads the operands of its tree, reading a FOLDED transpose or an ALIAS
 * reads the storage underneath, and returned values live to the end.
 * A node's scratch area lives only at its own position. A side output
 * (fuse.c) is written by its root's loop: it is defined at the root's
 * position (placed right after the root), and reading it inside that
 * loop reads the operands of its tree, as for a FUSED node. A node's output
 * never shares bytes with its operands (operands are live at its
 * position), so emitters may assume no overlap -- with one exception:
 * an elementwise root may take over the block of a leaf of its fused
 * tree that has its shape and dtype and dies at the root (inplace_of);
 * its loop reads element i before writing element i through the same
 * pointer, which is safe.
 *
 * Attention groups (cg_attention_groups): a member of a group is
 * written by its leader, so its block lives from the leader's position
 * (members directly follow their leader); a leader reading a forward
 * attention's output keeps it live, and that attention's saved row
 * log-sum-exp is a block of its own, live from it to its last leader.
 * The same for any backward linked to its forward (slot.fwd: also
 * cg_xent_pairs): the forward's output and saved block live to it.
 * A group root stored by an op's epilogue (cg_epilogues) is placed
 * like a side output: defined at the op's position, right after it
 * (its leaves, read there, are defined before it and read again at the
 * root's own position: live through).
 *
 * In-place returns (Graph.ret_into, ENTRY_train's updated params and
 * state): the output pointer of such a return is its argument's buffer;
 * the return is computed there (an OUTPUT slot) when that is safe
 * (inplace_ret_ok), else it lives in the workspace and is copied over
 * the argument after every node ran.
 *
 * Sizes without a bound (docs/dynamic-dims.md): a block whose bytes
 * grow with a symbol that has no bound (a dim, not a number: a value's
 * type, a scratch area or saved block given as a size expression, or a
 * scratch area its emitter computes at run time, CG_SCRATCH_RT) is
 * placed at run time. Those blocks, by definition, go to the plan's
 * run-time layout (CgPlan.ndyn...) with their offsets CG_OFF_DYN - k;
 * the entry evaluates their bytes at each call and rlx_ws_layout places
 * them by the same first fit, above the numbers' blocks and the table.
 *
 * Placement: blocks in definition order, each at the lowest 64-aligned
 * offset that does not overlap any block whose live range intersects it
 * (first fit), computed by a sweep over a sorted list of free gaps (no
 * pass over every earlier block: large graphs plan in O(n log n) plus
 * the gaps scanned). Walks over fused trees visit each FUSED node once.
 * Temporary tables live in the compilation's arena. Invariants checked
 * by tests: no two simultaneously live blocks overlap; the placement
 * equals a brute-force first fit.
 */
#include "codegen/plan/plan.h"

#include <stdlib.h>
#include <string.h>

/* The node owning the bytes that reading n reads; NULL when n is FUSED
 * (its operands are read instead). */
static Node *owner(const CgPlan *p, Node *n) {
  const CgSlot *s = &p->slot[n->id];
  if (s->kind == CG_SLOT_ALIAS) return s->alias;
  if (s->kind == CG_SLOT_FOLDED) return owner(p, n->in[0]);
  if (s->kind == CG_SLOT_VIEW) return owner(p, s->alias);
  if (s->kind == CG_SLOT_FUSED) return NULL;
  return n;
}

/* Mark everything reader-at-pos reads; via_ew: read as an elementwise
 * leaf (a splat constant read that way needs no buffer). */
static void mark_reads(CgPlan *p, Node *n, int64_t pos, bool via_ew) {
  for (int k = 0; k < n->nin; k++) {
    Node *o = n->in[k];
    Node *w = owner(p, o);
    if (!w || p->slot[o->id].side_of) {
      if (cg_walk_first(p, o)) mark_reads(p, o, pos, true);
      continue;
    }
    CgSlot *s = &p->slot[w->id];
    if (s->last < pos) s->last = pos;
    bool ew_leaf = via_ew && w == o;
    if (!ew_leaf) s->uses_buf = true;
  }
}

typedef struct {
  int64_t def, last, size, *off;
  Node *rt; /* size CG_SCRATCH_RT: whose scratch */
} Block;

/* Free gaps of the workspace, sorted by offset and coalesced; the last
 * one is unbounded. */
typedef struct {
  int64_t *off, *end;
  int n;
} Gaps;

static void gap_remove(Gaps *g, int k) {
  memmove(g->off + k, g->off + k + 1, sizeof *g->off * (size_t)(g->n - k - 1));
  memmove(g->end + k, g->end + k + 1, sizeof *g->end * (size_t)(g->n - k - 1));
  g->n--;
}

/* First fit: the lowest offset of a gap that holds size bytes. */
static int64_t gap_take(Gaps *g, int64_t size) {
  int k = 0;
  while (g->end[k] - g->off[k] < size) k++; /* the last gap is unbounded */
  int64_t off = g->off[k];
  g->off[k] += size;
  if (g->off[k] == g->end[k]) gap_remove(g, k);
  return off;
}

/* Return [off, off + size) to the gaps, merging with its neighbours. */
static void gap_put(Gaps *g, int64_t off, int64_t size) {
  int lo = 0, hi = g->n;
  while (lo < hi) { /* first gap after off */
    int mid = (lo + hi) / 2;
    if (g->off[mid] < off) lo = mid + 1;
    else hi = mid;
  }
  int64_t end = off + size;
  bool left = lo > 0 && g->end[lo - 1] == off, right = g->off[lo] == end;
  if (left && right) {
    g->end[lo - 1] = g->end[lo];
    gap_remove(g, lo);
  } else if (left) {
    g->end[lo - 1] = end;
  } else if (right) {
    g->off[lo] = off;
  } else {
    memmove(g->off + lo + 1, g->off + lo, sizeof *g->off * (size_t)(g->n - lo));
    memmove(g->end + lo + 1, g->end + lo, sizeof *g->end * (size_t)(g->n - lo));
    g->off[lo] = off;
    g->end[lo] = end;
    g->n++;
  }
}

/* Blocks ordered by the end of their live range (qsort context-free). */
static int cmp_last(const void *a, const void *b) {
  int64_t x = (*(Block *const *)a)->last, y = (*(Block *const *)b)->last;
  return x < y ? -1 : x > y;
}

/* Place blocks (in definition order) by a sweep: before block i, free
 * every block whose live range ended before i's definition; i takes the
 * lowest gap that holds it. The same placement as first fit against
 * every earlier block live at the same time, in O(n log n + n * gaps).
 * Returns the high-water mark. */
static int64_t place_all(Ctx *c, Block *bl, int nb) {
  Block **by_last = arena_alloc(c->arena, sizeof *by_last * ((size_t)nb + 1));
  Gaps g = {arena_alloc(c->arena, sizeof(int64_t) * ((size_t)nb + 2)),
            arena_alloc(c->arena, sizeof(int64_t) * ((size_t)nb + 2)), 1};
  g.end[0] = INT64_MAX;
  int m = 0;
  for (int i = 0; i < nb; i++)
    if (bl[i].size > 0) by_last[m++] = &bl[i];
  qsort(by_last, (size_t)m, sizeof *by_last, cmp_last);
  int64_t total = 0;
  for (int i = 0, f = 0; i < nb; i++) {
    if (bl[i].size <= 0) continue;
    for (; f < m && by_last[f]->last < bl[i].def; f++)
      gap_put(&g, *by_last[f]->off, by_last[f]->size);
    *bl[i].off = gap_take(&g, bl[i].size);
    if (*bl[i].off + bl[i].size > total) total = *bl[i].off + bl[i].size;
  }
  return total;
}

static bool needs_ws(const Node *n, const CgSlot *s) {
  if (s->kind != CG_SLOT_NONE) return false;
  if (n->op == OP_INPUT || n->op == OP_PARAM) return false;
  if (n->op == OP_CONST) return n->splat && s->uses_buf;
  return true;
}

/* Does the fused tree under n read argument a only as itself, from
 * nodes of type t (so at the element its root writes)? */
static bool reads_at_same_element(CgPlan *p, Node *n, Node *a,
                                  const Type *t) {
  for (int k = 0; k < n->nin; k++) {
    Node *o = n->in[k];
    if (o == a) {
      if (!type_eq(&n->type, t)) return false;
    } else if (cg_in_tree(p, o)) {
      if (cg_walk_first(p, o) && !reads_at_same_element(p, o, a, t))
        return false;
    } else if (owner(p, o) == a) {
      return false; /* a view of a (alias, folded transpose) */
    }
  }
  return true;
}

/* Can return r be computed directly over argument a's buffer (the
 * graph's ret_into)? r is an elementwise root (or side output) of a's
 * type, nothing after r's position (its root's) reads a (live ranges
 * are final here: returns were marked), and the loop computing r reads
 * a only at the element it writes. Otherwise r goes to the workspace
 * and is copied over a at the end of the function. */
static bool inplace_ret_ok(CgPlan *p, Node *r, Node *a) {
  CgSlot *s = &p->slot[r->id];
  if (s->kind != CG_SLOT_NONE || r->op == OP_CONST || r->op == OP_INPUT ||
      r->op == OP_PARAM || !cg_is_elementwise(r->op) ||
      !type_eq(&r->type, &a->type) || p->slot[a->id].last > s->def)
    return false;
  cg_walk_begin(p);
  return reads_at_same_element(p, s->side_of ? s->side_of : r, a, &r->type);
}

static void assign_fixed(Graph *g, CgPlan *p) {
  for (int i = 0; i < g->nargs; i++) {
    CgSlot *s = &p->slot[g->args[i]->id];
    s->kind = CG_SLOT_INPUT;
    s->index = i;
  }
  for (int j = 0; j < g->nret; j++) {
    Node *r = g->rets[j];
    CgSlot *s = &p->slot[r->id];
    int into = g->ret_into ? g->ret_into[j] : -1;
    if (into >= 0 && !inplace_ret_ok(p, r, g->args[into])) continue;
    if (s->kind == CG_SLOT_NONE && r->op != OP_CONST) {
      s->kind = CG_SLOT_OUTPUT;
      s->index = j;
    }
  }
}

/* Does the fused tree under n read w's bytes through another node (an
 * alias or folded view of w)? */
static bool read_via_other(CgPlan *p, Node *n, Node *w) {
  for (int k = 0; k < n->nin; k++) {
    Node *o = n->in[k];
    if (cg_in_tree(p, o)) {
      if (cg_walk_first(p, o) && read_via_other(p, o, w)) return true;
    } else if (o != w && owner(p, o) == w) {
      return true;
    }
  }
  return false;
}

/* Leaves of root's fused tree (depth first) with the root's type whose
 * workspace block dies at the root; at most CG_MAX_GROUP_OPERANDS. */
static int inplace_cands(CgPlan *p, Node *root, Node *n, int64_t pos,
                         Node **out, int m) {
  for (int k = 0; k < n->nin; k++) {
    Node *o = n->in[k];
    CgSlot *s = &p->slot[o->id];
    if (cg_in_tree(p, o)) {
      if (cg_walk_first(p, o)) m = inplace_cands(p, root, o, pos, out, m);
    } else if (s->kind == CG_SLOT_WS && s->last == pos &&
               type_eq(&o->type, &root->type)) {
      out[m++] = o;
    }
  }
  return m;
}

/* A leaf of root n's fused tree whose workspace block n can take over:
 * same type as the root, dies at the root, read only as itself. */
static Node *inplace_leaf(CgPlan *p, Node *root, int64_t pos) {
  Node *cand[CG_MAX_GROUP_OPERANDS];
  cg_walk_begin(p);
  int m = inplace_cands(p, root, root, pos, cand, 0);
  for (int i = 0; i < m; i++) {
    cg_walk_begin(p);
    if (!read_via_other(p, root, cand[i])) return cand[i];
  }
  return NULL;
}

static bool ew_root(const Node *n) { return cg_is_elementwise(n->op); }

/* Blocks being listed, in definition order. */
typedef struct {
  Block *bl;
  int nb, *blk;
  const int64_t *scratch;
  bool ok; /* every size expression formed */
} Blocks;

/* A static size aligned; a dim or CG_SCRATCH_RT (aligned at run time)
 * as is. */
static int64_t aligned(int64_t bytes) {
  return dim_is_static(bytes) ? cg_align(bytes) : bytes;
}

/* n's storage and blocks, defined at position i. */
static void place_node(CgPlan *p, Blocks *b, Node *n, int64_t i) {
  CgSlot *s = &p->slot[n->id];
  Block *bl = b->bl;
  if (s->last < i) s->last = i;
  Node *l = needs_ws(n, s) && ew_root(n) && !s->side_of && !s->stored_by
      ? inplace_leaf(p, n, i) : NULL;
  if (l) {
    s->kind = CG_SLOT_WS;
    s->inplace_of = l;
    b->blk[n->id] = b->blk[l->id];
    if (bl[b->blk[n->id]].last < s->last) bl[b->blk[n->id]].last = s->last;
  } else if (needs_ws(n, s)) {
    s->kind = CG_SLOT_WS;
    b->blk[n->id] = b->nb;
    int64_t def = s->attn_lead ? p->slot[s->attn_lead->id].def : i;
    int64_t bytes = s->pitch ? cg_align(cg_plan_slot_bytes(p, n))
                             : cg_plan_bytes_dim(p->ctx, &n->type);
    b->ok &= bytes != -1;
    bl[b->nb++] = (Block){def, s->last, bytes, &s->offset, NULL};
  } else if (n->op == OP_CONST && s->kind == CG_SLOT_NONE) {
    s->kind = n->splat ? CG_SLOT_NONE : CG_SLOT_CONST;
  }
  b->ok &= s->saved_bytes != -1;
  if (s->saved_bytes)
    bl[b->nb++] = (Block){i, s->saved_last, aligned(s->saved_bytes),
                          &s->saved_off, NULL};
  if (b->scratch && b->scratch[n->id]) {
    b->ok &= b->scratch[n->id] != -1;
    s->scratch_bytes = b->scratch[n->id];
    bl[b->nb++] = (Block){i, i, aligned(b->scratch[n->id]), &s->scratch_off,
                          n};
  }
}

static int cmp_def(const void *a, const void *b) {
  int64_t x = (*(Block *const *)a)->def, y = (*(Block *const *)b)->def;
  return x < y ? -1 : x > y;
}

/* The blocks of dynamic size (a dim) become the run-time layout, by
 * definition (qsort is not stable: ties keep their order by index). */
static void dyn_layout(CgPlan *p, Block *bl, int nb) {
  Ctx *c = p->ctx;
  Block **d = arena_alloc(c->arena, sizeof *d * ((size_t)nb + 1));
  int n = 0;
  for (int i = 0; i < nb; i++)
    if (!dim_is_static(bl[i].size)) d[n++] = &bl[i];
  if (!n) return;
  for (int i = 0; i < n; i++) d[i]->def = d[i]->def * ((int64_t)nb + 1) + i;
  qsort(d, (size_t)n, sizeof *d, cmp_def);
  p->ndyn = n;
  p->dyn_bytes = arena_alloc(c->arena, sizeof(int64_t) * (size_t)n);
  p->dyn_range = arena_alloc(c->arena, sizeof(int64_t) * 2 * (size_t)n);
  p->dyn_node = arena_alloc(c->arena, sizeof(Node *) * (size_t)n);
  for (int k = 0; k < n; k++) {
    p->dyn_bytes[k] = d[k]->size;
    p->dyn_node[k] = d[k]->size == CG_SCRATCH_RT ? d[k]->rt : NULL;
    p->dyn_range[2 * k] = d[k]->def / ((int64_t)nb + 1);
    p->dyn_range[2 * k + 1] = d[k]->last;
    *d[k]->off = CG_OFF_DYN - k;
  }
}

bool cg_memplan(Graph *g, CgPlan *p, const int64_t *scratch) {
  Ctx *c = p->ctx;
  size_t ids = (size_t)g->next_id + 1;
  Blocks b = {arena_alloc(c->arena, sizeof *b.bl * ((size_t)g->nnodes * 3 + 1)),
              0, arena_alloc(c->arena, sizeof *b.blk * ids), scratch, true};
  Node **side = arena_alloc(c->arena, sizeof *side * ids); /* chains */
  memset(side, 0, sizeof *side * ids);
  for (int i = 0; i < g->nnodes; i++) {
    Node *n = g->nodes[i];
    CgSlot *s = &p->slot[n->id];
    s->def = i;
    if (s->kind != CG_SLOT_FUSED && s->kind != CG_SLOT_FOLDED &&
        s->kind != CG_SLOT_ALIAS && !s->side_of) {
      cg_walk_begin(p);
      mark_reads(p, n, i, cg_is_elementwise(n->op));
    }
  }
  for (int i = g->nnodes - 1; i >= 0; i--) { /* the root's, the op's */
    CgSlot *s = &p->slot[g->nodes[i]->id];
    Node *n = g->nodes[i], *r = s->side_of ? s->side_of : s->stored_by;
    if (!r) continue;
    p->slot[n->id].def = p->slot[r->id].def;
    side[n->id] = side[r->id];
    side[r->id] = n;
  }
  for (int i = 0; i < g->nnodes; i++) { /* forward/backward pairs */
    Node *f = p->slot[g->nodes[i]->id].fwd;
    if (!f) continue;
    CgSlot *o = &p->slot[owner(p, f)->id];
    if (o->last < i) o->last = i;
    o->uses_buf = true;
    if (p->slot[f->id].saved_last < i) p->slot[f->id].saved_last = i;
  }
  for (int j = 0; j < g->nret; j++) {
    Node *w = owner(p, g->rets[j]);
    p->slot[w->id].last = g->nnodes;
    p->slot[w->id].uses_buf = true;
  }
  assign_fixed(g, p);
  for (int i = 0; i < g->nnodes; i++) {
    Node *n = g->nodes[i];
    if (p->slot[n->id].side_of || p->slot[n->id].stored_by)
      continue; /* placed after its root, its op */
    place_node(p, &b, n, i);
    for (Node *x = side[n->id]; x; x = side[x->id]) place_node(p, &b, x, i);
  }
  Block *bl = b.bl;
  int nb = b.nb, *blk = b.blk;
  if (!b.ok) {
    diag_error(c, g->loc, "graph '%s': a value's size is too complex an "
               "expression of sizes without a bound (write ?NAME<=N)",
               g->name);
    return false;
  }
  int64_t total = place_all(c, bl, nb), hdr = cg_dim_header();
  for (int k = 0; k < nb; k++)
    if (dim_is_static(bl[k].size)) *bl[k].off += hdr;
  dyn_layout(p, bl, nb);
  for (int i = 0; i < g->nnodes; i++) {
    CgSlot *s = &p->slot[g->nodes[i]->id];
    if (s->inplace_of) s->offset = *bl[blk[g->nodes[i]->id]].off;
  }
  p->ws_bytes = cg_align(total + hdr);
  if (p->ndyn) {
    p->dyn_tab = p->ws_bytes;
    p->ws_bytes = p->dyn_base = cg_align(p->dyn_tab + 24 * (int64_t)p->ndyn);
  }
  return true;
}
