/* elementwise.c: fused elementwise loop nests.
 *
 * A root (an elementwise node with storage) is emitted with the tree of
 * FUSED nodes under it (fuse.c) as ONE loop nest: no intermediate
 * buffers. Leaves (operands with storage, constants) are read with NumPy
 * broadcast strides. Dimensions that are contiguous for the output and
 * every leaf are coalesced, so a same-shape chain is a single flat loop;
 * the outermost loop is outlined and run through rlx_parallel_for when
 * the work is large (every element is independent: deterministic), and
 * the body receives the buffers as noalias parameters so the innermost
 * loop vectorizes at host width (a root computed in place over a leaf,
 * memplan.c, reads that leaf through its output pointer: one pointer,
 * so noalias still holds). Inside one element every node of the
 * tree is computed once (memoized). The group's side outputs (fuse.c:
 * returned members with storage of their own) are computed in the tree
 * like FUSED nodes and stored at the element's offset after the root,
 * once every load of the element is done; a leaf whose bytes a stored
 * value overwrites (a root over a dying leaf, a return over its
 * argument) is read through that value's pointer, so the noalias
 * parameters stay true. Roots whose trees are equal up to
 * node identity call one shared body (see "one body per distinct loop"
 * below).
 *
 * Arithmetic: the ops of elementwise_scalar.c on compute types
 * (llvm/elements.c). f16 and bf16 values are computed in f32 and
 * rounded to their dtype after every op, exactly as if each op were run
 * on its own.
 */
#include "codegen/emit/emit.h"

#include <stdlib.h>
#include <string.h>

#define MAX_LEAVES CG_MAX_GROUP_OPERANDS /* fuse.c bounds a group's leaves */
#define MAX_VAL_LEAVES 40 /* leaves passed to the body as noalias args */

/* A node met in the tree: id + 1 (0: empty), leaf index + 1 (-1: inner
 * node, 0: not collected), its value in element `gen`. Open addressing
 * over EW_SLOTS > 2 * (CG_MAX_GROUP_NODES + MAX_LEAVES) entries: a
 * tree's tables cost its size, not the graph's. */
#define EW_SLOTS 512

/* A leaf's row of row r of a dynamic view (dyn_view): the sum over its
 * n runs of ((r / div) % mod) * mul (sizes; mod 0: no modulo); n = 0:
 * r itself. */
typedef struct {
  int n;
  int64_t div[RLX_MAX_RANK], mod[RLX_MAX_RANK], mul[RLX_MAX_RANK];
} EwRuns;
typedef struct {
  int id, leaf, pos; /* pos: inner node's place in Ew.inner */
  unsigned gen;
  LLVMValueRef memo;
} EwEntry;

typedef struct {
  Cg *cg;
  Node *root;
  int nleaf, ninner;
  Node *leaf[MAX_LEAVES];
  Node *inner[CG_MAX_GROUP_NODES]; /* post-order (operands first) */
  int nside;
  Node *side[CG_MAX_GROUP_SIDES];  /* side outputs, post-order */
  LLVMValueRef sptr[CG_MAX_GROUP_SIDES];
  int64_t stride[MAX_LEAVES][RLX_MAX_RANK];
  EwRuns runs[MAX_LEAVES]; /* dyn_view: each leaf's row of view row r */
  bool part; /* some leaf has runs: the view's axis 0 stays alone */
  LLVMValueRef ptr[MAX_LEAVES];
  EwEntry tab[EW_SLOTS]; /* per node of the tree: leaf index, memo */
  unsigned gen;          /* memo entries of this element have it */
  int ndim;
  LLVMValueRef idx[RLX_MAX_RANK];
  LLVMValueRef flat;          /* prologue: flat index of the element */
  bool full[MAX_LEAVES];      /* prologue: leaf read at `flat` */
} Ew;

/* Computed in the loop: the root, FUSED nodes, the root's side
 * outputs. */
static bool inner(const Ew *e, const Node *n) {
  const CgSlot *s = &e->cg->fn->plan->slot[n->id];
  return n == e->root || s->kind == CG_SLOT_FUSED ||
         (s->side_of && s->side_of == e->root);
}

static bool is_side(const Ew *e, const Node *n) {
  const Node *r = e->cg->fn->plan->slot[n->id].side_of;
  return r && r == e->root;
}

static bool splat_leaf(const Node *n) {
  return n->op == OP_CONST && (n->splat || type_numel(&n->type) == 1);
}

static EwEntry *entry(Ew *e, const Node *n) {
  unsigned h = ((unsigned)n->id * 2654435761u) & (EW_SLOTS - 1);
  while (e->tab[h].id && e->tab[h].id != n->id + 1)
    h = (h + 1) & (EW_SLOTS - 1);
  e->tab[h].id = n->id + 1;
  return &e->tab[h];
}

static bool collect(Ew *e, Node *n) {
  EwEntry *t = entry(e, n);
  if (t->leaf) return true;
  if (!inner(e, n)) {
    RLX_ASSERT(e->nleaf < MAX_LEAVES);
    e->leaf[e->nleaf++] = n;
    t->leaf = e->nleaf;
    return true;
  }
  t->leaf = -1;
  for (int k = 0; k < n->nin; k++)
    if (!collect(e, n->in[k])) return false;
  RLX_ASSERT(e->ninner < CG_MAX_GROUP_NODES);
  t->pos = e->ninner;
  e->inner[e->ninner++] = n;
  if (is_side(e, n)) {
    RLX_ASSERT(e->nside < CG_MAX_GROUP_SIDES); /* fuse.c bounds them */
    e->side[e->nside++] = n;
  }
  return cg_ew_check(e->cg, n);
}

/* Leaf l's row of the loop's axis 0 (e->runs). */
static LLVMValueRef part_row(Ew *e, int l) {
  Cg *cg = e->cg;
  const EwRuns *rs = &e->runs[l];
  LLVMValueRef row = rs->n ? NULL : e->idx[0];
  for (int k = 0; k < rs->n; k++) {
    LLVMValueRef r = e->idx[0];
    if (rs->div[k] != 1)
      r = LLVMBuildSDiv(cg->b, r, cg_dim(cg, rs->div[k]), "");
    if (rs->mod[k])
      r = LLVMBuildSRem(cg->b, r, cg_dim(cg, rs->mod[k]), "");
    r = cg_mul_dim(cg, r, rs->mul[k]);
    row = row ? LLVMBuildNSWAdd(cg->b, row, r, "") : r;
  }
  return row;
}

static LLVMValueRef value(Ew *e, Node *n) {
  Cg *cg = e->cg;
  EwEntry *t = entry(e, n);
  if (t->gen == e->gen) return t->memo;
  LLVMValueRef v;
  if (inner(e, n)) {
    LLVMValueRef in[3];
    for (int k = 0; k < n->nin; k++) in[k] = value(e, n->in[k]);
    v = cg_ew_op(cg, n, in);
  } else if (splat_leaf(n)) {
    v = cg_const_elem(cg, n, 0);
  } else {
    int l = t->leaf - 1;
    LLVMValueRef off = cg_i64(cg, 0);
    if (e->flat && e->full[l]) off = e->flat;
    for (int d = 0; !(e->flat && e->full[l]) && d < e->ndim; d++)
      if (e->stride[l][d])
        off = LLVMBuildNSWAdd(cg->b, off,
                              LLVMBuildNSWMul(cg->b, d ? e->idx[d]
                                                       : part_row(e, l),
                                              cg_dim(cg, e->stride[l][d]),
                                              ""),
                              "");
    v = cg_load(cg, n->type.dt, e->ptr[l], off);
  }
  t->memo = v; /* entries never move */
  t->gen = e->gen;
  return v;
}

static void ew_init(Ew *e, Cg *cg, Node *root) {
  e->cg = cg;
  e->root = root;
  e->gen = 1;
}

/* ---- dynamic sizes after axis 0 ----
 * With L the last dynamic axis of the result t, axes 0..L act as one
 * axis of their product's size: the view of t has rank t->rank - L.
 * An operand u that broadcasts over all of them (size 1 or absent)
 * reads row 0 of its view; one with t's sizes on all of them reads row
 * r at view row r; otherwise its sizes there form runs of t's with 1s
 * between them, and row r reads u's row sum((r / div) % mod * mul) over
 * the runs, div the product of t's sizes after the run, mod that of the
 * run and mul that of u's sizes after it (`[?t, C] + [?b, ?t, C]`:
 * r % ?t; `[?b, 1, C]`: r / ?t; a mask `[b, 1, 1, ?k]` against `[b, h,
 * ?q, ?k]`: (r / (h ?q ?k)) ?k + r % ?k). Every stride of the views is
 * static. */
static int last_dynamic(const Type *t) {
  int l = t->rank - 1;
  while (l >= 0 && dim_is_static(t->dims[l])) l--;
  return l;
}

static void mul_dim(Ctx *c, int64_t *p, int64_t d) {
  DimStatus st = dim_mul(c, *p, d, p);
  RLX_ASSERT(st == DIM_OK); /* factors of t's element count */
}

/* u's view against t's, and u's runs (false: u does not broadcast to
 * t); c NULL: only that check, v's size 0 and the runs left unset.
 * Operands are checked by ew_dyn before emission. */
static bool dyn_view(Ctx *c, const Type *u, const Type *t, int L, Type *v,
                     EwRuns *rs) {
  int off = t->rank - u->rank;
  bool filled = false;
  for (int j = 0; j <= L; j++) {
    int64_t d = j < off ? 1 : u->dims[j - off];
    if (d != 1 && d != t->dims[j]) return false;
    filled |= d != 1;
  }
  *v = *u;
  v->rank = t->rank - L;
  if (c) { /* the runs from the last axis up; tn, un: sizes after j */
    int64_t tn = 1, un = 1;
    bool open = false;
    rs->n = 0;
    for (int j = L; j >= 0; j--) {
      int64_t d = j < off ? 1 : u->dims[j - off];
      if (t->dims[j] == 1) continue;
      if (d != 1 && !open) {
        int k = rs->n++;
        rs->div[k] = tn, rs->mod[k] = 1, rs->mul[k] = un;
      }
      open = d != 1;
      if (open) mul_dim(c, &rs->mod[rs->n - 1], d), mul_dim(c, &un, d);
      mul_dim(c, &tn, t->dims[j]);
    }
    int64_t top = 1; /* the outermost run needs no modulo */
    if (rs->n) mul_dim(c, &top, rs->div[rs->n - 1]);
    if (rs->n) mul_dim(c, &top, rs->mod[rs->n - 1]);
    if (rs->n && top == tn) rs->mod[rs->n - 1] = 0;
    if (rs->n == 1 && rs->div[0] == 1 && !rs->mod[0]) rs->n = 0; /* fills */
    v->dims[0] = filled ? tn : 1; /* a row stride as if u filled t */
  }
  for (int i = 1; i < v->rank; i++)
    v->dims[i] = L + i < off ? 1 : u->dims[L + i - off];
  return true;
}

/* Coalesce the output dims: drop size-1 dims, merge a dim into the next
 * when every leaf (and the output) is contiguous across them. */
static int coalesce(Ew *e, const Type *t, int64_t *cd, int64_t *ostr) {
  int64_t full[MAX_LEAVES + 1][RLX_MAX_RANK];
  const Type *lt[MAX_LEAVES];
  for (int l = 0; l < e->nleaf; l++) lt[l] = &e->leaf[l]->type;
  Type view[MAX_LEAVES + 1];
  int L = last_dynamic(t);
  if (L > 0) { /* the views (ew_dyn checked that they exist) */
    for (int l = 0; l < e->nleaf; l++) {
      bool ok = dyn_view(e->cg->ctx, lt[l], t, L, &view[l + 1],
                         &e->runs[l]);
      RLX_ASSERT(ok);
      e->part |= e->runs[l].n > 0;
      lt[l] = &view[l + 1];
    }
    EwRuns self;
    bool ok = dyn_view(e->cg->ctx, t, t, L, &view[0], &self);
    RLX_ASSERT(ok);
    t = &view[0];
  }
  cg_strides(t, full[0]);
  for (int l = 0; l < e->nleaf; l++) cg_bcast_strides(lt[l], t, full[l + 1]);
  int k = 0;
  for (int d = 0; d < t->rank; d++) {
    if (t->dims[d] == 1) continue;
    bool merge = k > 0 && !(k == 1 && e->part);
    for (int l = 0; merge && l <= e->nleaf; l++) {
      int64_t *prev = l ? e->stride[l - 1] : ostr;
      if (prev[k - 1] != full[l][d] * t->dims[d]) merge = false;
    }
    if (merge) {
      if (dim_is_static(cd[k - 1]) && dim_is_static(t->dims[d])) {
        cd[k - 1] *= t->dims[d];
      } else { /* the dynamic axis 0 of t or of its view (ew_dyn) */
        DimStatus st = dim_mul(e->cg->ctx, cd[k - 1], t->dims[d], &cd[k - 1]);
        RLX_ASSERT(st == DIM_OK);
      }
      ostr[k - 1] = full[0][d];
      for (int l = 0; l < e->nleaf; l++) e->stride[l][k - 1] = full[l + 1][d];
      continue;
    }
    cd[k] = t->dims[d];
    ostr[k] = full[0][d];
    for (int l = 0; l < e->nleaf; l++) e->stride[l][k] = full[l + 1][d];
    k++;
  }
  if (k == 0) {
    cd[0] = type_numel(t);
    ostr[0] = 1;
    for (int l = 0; l < e->nleaf; l++) e->stride[l][0] = 0;
    k = 1;
  }
  return k;
}

bool cg_exp_chain(Op op) {
  return op == OP_EXP || op == OP_TANH || op == OP_SIGMOID ||
         op == OP_SILU || op == OP_GELU_TANH;
}

/* Vectors the innermost loop interleaves: 4 for f32 trees with an exp
 * chain (cg_exp_chain; the AVX2 gelu_tanh loop runs 1.35x faster), else
 * LLVM's choice. */
static int interleave(const Ew *e) {
  for (int i = 0; i < e->ninner; i++)
    if (e->inner[i]->type.dt == DT_F32 && cg_exp_chain(e->inner[i]->op))
      return 4;
  return 0;
}

/* Inner loops d = 1..k-1 around one element; then store it and the
 * side outputs (memoized: computed with the root). */
static void emit_nest(Ew *e, int k, const int64_t *cd, const int64_t *ostr,
                      LLVMValueRef out) {
  Cg *cg = e->cg;
  CgLoop loops[RLX_MAX_RANK];
  for (int d = 1; d < k; d++)
    e->idx[d] = cg_loop_begin(cg, &loops[d], cg_i64(cg, 0),
                              cg_i64(cg, cd[d]), NULL, 0);
  if (k > 1 && cd[k - 1] >= 256) loops[k - 1].interleave = interleave(e);
  LLVMValueRef v = value(e, e->root);
  LLVMValueRef off = cg_i64(cg, 0);
  for (int d = 0; d < k; d++)
    off = LLVMBuildNSWAdd(
        cg->b, off, LLVMBuildNSWMul(cg->b, e->idx[d], cg_i64(cg, ostr[d]), ""),
        "");
  cg_store(cg, e->root->type.dt, out, off, v);
  for (int j = 0; j < e->nside; j++)
    cg_store(cg, e->side[j]->type.dt, e->sptr[j], off, value(e, e->side[j]));
  for (int d = k - 1; d >= 1; d--) cg_loop_end(cg, &loops[d], NULL);
}

/* ---- one body per distinct loop ----
 * A root's loop body is a function of its tree up to node identity:
 * the loop shape, each leaf's argument slot, dtype and strides, splat
 * constants' values, and the inner nodes (op, type, attributes:
 * ir_node_same_local) with how they connect. Roots with equal
 * descriptions (a layer repeated, in the forward and the backward
 * pass) call one body, which LLVM then builds, optimizes and compiles
 * once. A root with leaves beyond the body's arguments is not cached
 * (the body would address them through the plan). */
#define EW_KEY_MAX \
  (8 + 2 * RLX_MAX_RANK + MAX_LEAVES * (4 + 4 * RLX_MAX_RANK) + \
   2 * CG_MAX_GROUP_NODES + CG_MAX_GROUP_OPERANDS)

typedef struct {
  int64_t key[EW_KEY_MAX];
  const Node *cmp[CG_MAX_GROUP_NODES + MAX_LEAVES];
  CgKey q;
} EwKey;

/* Describe e's loop; false when its body cannot be shared. */
static bool ew_key(Ew *e, EwKey *q, int k, const int64_t *cd,
                   const int64_t *ostr, int64_t grain, int nv,
                   const int *map) {
  int64_t *key = q->key;
  int m = 0, c = 0;
  key[m++] = CG_BODY_ELEMENTWISE;
  key[m++] = k;
  for (int d = 0; d < k; d++) key[m++] = cd[d], key[m++] = ostr[d];
  key[m++] = grain, key[m++] = nv;
  key[m++] = e->nleaf, key[m++] = e->ninner;
  for (int l = 0; l < e->nleaf; l++) {
    bool sp = splat_leaf(e->leaf[l]);
    if (map[l] < 0 && !sp) return false;
    key[m++] = map[l], key[m++] = e->leaf[l]->type.dt, key[m++] = sp;
    const EwRuns *rs = &e->runs[l];
    key[m++] = rs->n;
    for (int k = 0; k < rs->n; k++)
      key[m++] = rs->div[k], key[m++] = rs->mod[k], key[m++] = rs->mul[k];
    for (int d = 0; d < k; d++) key[m++] = e->stride[l][d];
    if (sp) q->cmp[c++] = e->leaf[l];
  }
  for (int i = 0; i < e->ninner; i++) {
    Node *x = e->inner[i];
    q->cmp[c++] = x;
    key[m++] = is_side(e, x); /* stored: vals 1.. in this order */
    for (int j = 0; j < x->nin; j++) {
      EwEntry *t = entry(e, x->in[j]);
      key[m++] = t->leaf > 0 ? t->leaf - 1 : MAX_LEAVES + t->pos;
    }
  }
  q->q = (CgKey){.key = key, .nkey = m, .cmp = q->cmp, .ncmp = c};
  return true;
}

/* Does stored value x (the root or a side output) overwrite leaf l's
 * bytes: a root over a dying leaf (memplan.c, inplace_of) or a return
 * over its argument (Graph.ret_into)? */
static bool overwrites(Cg *cg, Node *x, Node *l) {
  const CgSlot *s = cg_slot(cg, x), *ls = cg_slot(cg, l);
  const Graph *g = cg->fn->plan->g;
  if (s->inplace_of == l) return true;
  return s->kind == CG_SLOT_OUTPUT && ls->kind == CG_SLOT_INPUT &&
         g->ret_into && g->ret_into[s->index] == ls->index;
}

/* The loop of root n: its buffer, its side outputs' and its leaves'
 * are the body's arguments; a leaf that a stored value overwrites is
 * read through that value's argument. */
static void emit_loop(Ew *e, Node *n) {
  Cg *cg = e->cg;
  int64_t cd[RLX_MAX_RANK], ostr[RLX_MAX_RANK];
  int k = coalesce(e, &n->type, cd, ostr);
  e->ndim = k;
  int64_t rest = 1;
  for (int d = 1; d < k; d++) rest *= cd[d];
  int64_t grain = cg_grain(dim_bound(cd[0]), rest);
  LLVMValueRef vals[MAX_VAL_LEAVES + 1];
  int nv = 0, map[MAX_LEAVES];
  vals[nv++] = cg_buf(cg, n);
  for (int j = 0; j < e->nside; j++) vals[nv++] = cg_buf(cg, e->side[j]);
  for (int l = 0; l < e->nleaf; l++) {
    map[l] = overwrites(cg, n, e->leaf[l]) ? 0 : -1; /* read through out */
    for (int j = 0; map[l] < 0 && j < e->nside; j++)
      if (overwrites(cg, e->side[j], e->leaf[l])) map[l] = 1 + j;
    if (map[l] < 0 && !splat_leaf(e->leaf[l]) && nv <= MAX_VAL_LEAVES) {
      map[l] = nv;
      vals[nv++] = cg_buf(cg, e->leaf[l]);
    }
  }
  EwKey q;
  bool keyed = ew_key(e, &q, k, cd, ostr, grain, nv, map);
  if (keyed && cg_par_shared(cg, &q.q, cg_dim(cg, cd[0]), grain, vals, nv))
    return;
  CgPar p;
  e->idx[0] = cg_par_begin(cg, &p, cg_dim(cg, cd[0]), grain, vals, nv, true);
  if (k == 1) p.loop.interleave = interleave(e);
  for (int l = 0; l < e->nleaf; l++)
    if (!splat_leaf(e->leaf[l]))
      e->ptr[l] = map[l] >= 0 ? vals[map[l]] : cg_buf(cg, e->leaf[l]);
  for (int j = 0; j < e->nside; j++) e->sptr[j] = vals[1 + j];
  emit_nest(e, k, cd, ostr, vals[0]);
  cg_par_end(cg, &p);
  if (keyed) cg_par_keep(cg, &q.q, &p);
}

static bool cg_emit_elementwise(Cg *cg, Node *n) {
  Ew e = {0};
  ew_init(&e, cg, n);
  bool ok = collect(&e, n);
  if (ok) emit_loop(&e, n);
  return ok;
}

/* Value of any node at a multi-index of its own shape. */
LLVMValueRef cg_elem_at(Cg *cg, Node *n, LLVMValueRef *idx) {
  CgSlot *s = cg_slot(cg, n);
  if (s->kind == CG_SLOT_FOLDED) {
    LLVMValueRef sw[RLX_MAX_RANK];
    int r = n->type.rank;
    for (int d = 0; d < r; d++) sw[d] = idx[d];
    sw[r - 2] = idx[r - 1];
    sw[r - 1] = idx[r - 2];
    return cg_elem_at(cg, n->in[0], sw);
  }
  Ew e = {0};
  ew_init(&e, cg, n);
  if (s->kind != CG_SLOT_FUSED) {
    e.root = NULL;
    e.leaf[0] = n;
    entry(&e, n)->leaf = e.nleaf = 1;
  } else if (!collect(&e, n)) {
    return LLVMGetUndef(cg_ctype(cg, n->type.dt));
  }
  e.ndim = n->type.rank;
  for (int d = 0; d < e.ndim; d++) e.idx[d] = idx[d];
  for (int l = 0; l < e.nleaf; l++) {
    cg_bcast_strides_dim(cg, &e.leaf[l]->type, &n->type, e.stride[l]);
    if (!splat_leaf(e.leaf[l])) e.ptr[l] = cg_buf(cg, e.leaf[l]);
  }
  LLVMValueRef v = value(&e, n);
  return v;
}

/* ---- prologue fusion: a FUSED tree read by a reduction's loads ----
 * The reduction emitter reads its operand through a pointer from
 * cg_buf; for a prologue that pointer is a marker (an unused alloca)
 * bound to the node. cg_par_begin rebinds the body's copy of it, and
 * cg_load / cg_ops_vload through a bound pointer evaluate the tree at
 * the flat element index, lane by lane (same scalar ops as the
 * elementwise loop: results are bit-identical to the unfused graph). */

static bool full_strides(Cg *cg, const int64_t *a, const Type *t) {
  int64_t s[RLX_MAX_RANK];
  cg_strides_dim(cg, t, s);
  for (int d = 0; d < t->rank; d++)
    if (t->dims[d] != 1 && a[d] != s[d]) return false;
  return true;
}

/* Multi-index of flat index i in type t (only when some leaf needs it). */
static void unflatten(Cg *cg, const Type *t, LLVMValueRef i,
                      LLVMValueRef *idx) {
  for (int d = t->rank - 1; d >= 0; d--) {
    if (d == 0) {
      idx[d] = i;
      break;
    }
    LLVMValueRef sz = cg_dim(cg, t->dims[d]);
    idx[d] = LLVMBuildURem(cg->b, i, sz, "");
    i = LLVMBuildUDiv(cg->b, i, sz, "");
  }
}

/* cg_fused_load, and with side non-NULL (one lane) cg_group_load. */
static LLVMValueRef fused_eval(Cg *cg, Node *n, LLVMValueRef idx, int lanes,
                               Node **side, LLVMValueRef *sv, int *nside) {
  Ew e = {0};
  ew_init(&e, cg, n);
  LLVMTypeRef ct = cg_ctype(cg, n->type.dt);
  LLVMTypeRef rt = lanes > 1 ? LLVMVectorType(ct, (unsigned)lanes) : ct;
  if (side) *nside = 0;
  if (!collect(&e, n)) {
    return LLVMGetUndef(rt);
  }
  bool need_idx = false;
  e.ndim = n->type.rank;
  for (int l = 0; l < e.nleaf; l++) {
    cg_bcast_strides_dim(cg, &e.leaf[l]->type, &n->type, e.stride[l]);
    e.full[l] = full_strides(cg, e.stride[l], &n->type);
    if (!splat_leaf(e.leaf[l])) {
      e.ptr[l] = cg_buf(cg, e.leaf[l]);
      need_idx |= !e.full[l];
    }
  }
  LLVMValueRef r = lanes > 1 ? LLVMGetUndef(rt) : NULL, i0 = NULL;
  int dl = n->type.rank - 1; /* innermost dim of size > 1 */
  while (dl > 0 && n->type.dims[dl] == 1) dl--;
  if (need_idx) {
    unflatten(cg, &n->type, idx, e.idx);
    i0 = dl >= 0 ? e.idx[dl] : NULL;
  }
  for (int k = 0; k < (lanes > 1 ? lanes : 1); k++) {
    e.flat = k ? LLVMBuildNSWAdd(cg->b, idx, cg_i64(cg, k), "") : idx;
    if (need_idx && k) /* lanes stay in one row of dim dl (fuse.c) */
      e.idx[dl] = LLVMBuildNSWAdd(cg->b, i0, cg_i64(cg, k), "");
    e.gen++;
    LLVMValueRef v = value(&e, n);
    if (lanes <= 1) r = v;
    else r = LLVMBuildInsertElement(cg->b, r, v, cg_i32(cg, k), "");
  }
  for (int j = 0; side && j < e.nside; j++) { /* memoized with n */
    side[j] = e.side[j];
    sv[j] = value(&e, e.side[j]);
  }
  if (side) *nside = e.nside;
  return r;
}

LLVMValueRef cg_fused_load(Cg *cg, Node *n, LLVMValueRef idx, int lanes) {
  return fused_eval(cg, n, idx, lanes, NULL, NULL, NULL);
}

LLVMValueRef cg_group_load(Cg *cg, Node *n, LLVMValueRef idx, Node **side,
                           LLVMValueRef *sv, int *nside) {
  return fused_eval(cg, n, idx, 1, side, sv, nside);
}

/* Dynamic sizes: in axis 0 of n and of operands of n's rank, so every
 * stride is static and the loop's outer trip count (the first coalesced
 * dim, which absorbs axis 0) is the one run-time size; or in later axes
 * too, through views whose rows each operand reads at the run-time
 * row of its runs (dyn_view: [?b, ?t, C] + [C], + [?t, C] or + [?b, 1,
 * C]); any operand that broadcasts to n. */
static const char *ew_dyn(const Node *n) {
  const Type *t = &n->type;
  int L = last_dynamic(t);
  for (int i = 0; i < n->nin; i++) {
    const Type *u = &n->in[i]->type;
    Type v;
    if (L <= 0 ? !cg_dyn_leading(u) ||
                     (!type_is_static(u) && u->rank != t->rank)
               : !dyn_view(NULL, u, t, L, &v, NULL))
      return L <= 0 ? "an operand with a dynamic size outside its "
                      "result's axis 0"
                    : "an operand that does not broadcast to the result";
  }
  return NULL;
}

const CgEmitter cg_emitter_elementwise = {cg_emit_elementwise, NULL, ew_dyn};
