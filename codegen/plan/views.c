/* views.c: attention operands and gradients in place (plan.h).
 *
 * A transformer splits qkv = x w + b with narrow(qkv, axis=-1) into q,
 * k and v, and the gradient joins dq, dk and dv back with concat(...,
 * axis=-1): copies of [rows, h*d] slices out of and into rows of 3*h*d.
 * The attention kernels address every q-like and k-like row through
 * one function of the operand (its row pitch), so on a target that
 * uses this (the GPU; the CPU's rlx_attn_geom.ld, f32 and f64) such a
 * narrow read only as attention's q, k or v
 * is a view (CG_SLOT_VIEW: its source's bytes from `offset`, rows of
 * the source's last dim), and attention_backward results of one group
 * read only by one concat along the last axis are views of the concat,
 * which their leader's kernels then write (the concat: stored_by the
 * leader, placed at it by cg_memplan, no kernel). Views start and step
 * at 16-byte multiples (the kernels' cp.async chunks).
 *
 * Pitched rows: a 16-bit matrix whose rows are no multiple of 16 bytes
 * (GPT-2's logits gradient [B*T, 50257]) cannot be staged by the
 * tensor-core products in 16-byte chunks, so each product reading it
 * would copy it with padded rows first (matmul.c). When it is stored
 * by softmax_cross_entropy_backward's epilogue and read only by
 * products (directly or through a folded transpose), its rows lie C
 * rounded up to 16 bytes apart instead (CgSlot.pitch): the epilogue
 * stores each element at its row's pitch (cg_store), the kernel zeroes
 * the padding, and the products read it in place. Linear in the graph.
 */
#include "codegen/plan/plan.h"

static int last_axis(const Node *n) {
  return ir_norm_axis(ir_attr_int(n, ATTR_AXIS, 0), n->in[0]->type.rank);
}

static bool attn_op(const Node *n) {
  return n->op == OP_ATTENTION || n->op == OP_ATTENTION_BACKWARD;
}

static bool wide(DType dt) { return dt == DT_F32 || dt == DT_F64; }

/* qkv[id]: every reader of the node is an attention (backward) of
 * layout 3 reading it as q, k or v (and there is one), of a dtype the
 * target reads in place (half_ok: any). */
static bool *qkv_reads(Arena *a, Graph *g, const int *uses, bool half_ok) {
  bool *ok = arena_tmp_alloc(a, ((size_t)g->next_id + 1) * sizeof *ok);
  for (int i = 0; i <= g->next_id; i++) ok[i] = uses[i] > 0;
  for (int i = 0; i < g->nnodes; i++) {
    const Node *c = g->nodes[i];
    for (int k = 0; k < c->nin; k++)
      if (!attn_op(c) || k > 2 || c->in[0]->type.rank != 3 ||
          (!half_ok && !wide(c->type.dt)))
        ok[c->in[k]->id] = false;
  }
  return ok;
}

static void narrow_view(CgPlan *p, Node *v, const bool *qkv) {
  Node *s = v->in[0];
  int r = s->type.rank;
  if (!qkv[v->id] || r != 3 || last_axis(v) != r - 1 ||
      p->slot[v->id].kind != CG_SLOT_NONE)
    return;
  if (p->slot[s->id].kind == CG_SLOT_ALIAS) s = p->slot[s->id].alias;
  int64_t es = dt_size(v->type.dt), start = ir_attr_int(v, ATTR_START, 0);
  int64_t row = v->in[0]->type.dims[r - 1]; /* the view's pitch */
  if (p->slot[s->id].kind != CG_SLOT_NONE || start < 0 || row < 0 ||
      (start * es) % 16 || (row * es) % 16)
    return;
  p->slot[v->id].kind = CG_SLOT_VIEW;
  p->slot[v->id].alias = s;
  p->slot[v->id].offset = start * es;
}

/* concat(m...) of one attention group's q/k/v gradients, each read only
 * by it: the members become views of c. */
static void concat_view(CgPlan *p, Node *c, const int *uses, bool half_ok) {
  int r = c->type.rank;
  if (r != 3 || last_axis(c) != r - 1 || c->type.dims[r - 1] < 0 ||
      p->slot[c->id].kind != CG_SLOT_NONE || (!half_ok && !wide(c->type.dt)))
    return;
  Node *lead = NULL;
  for (int k = 0; k < c->nin; k++) {
    Node *m = c->in[k];
    const CgSlot *s = &p->slot[m->id];
    Node *l = s->attn_lead ? s->attn_lead : m;
    if (m->op != OP_ATTENTION_BACKWARD || uses[m->id] != 1 ||
        cg_attn_wrt(m) > 2 || s->kind != CG_SLOT_NONE ||
        (lead && l != lead))
      return;
    lead = l;
  }
  int64_t off = 0, es = dt_size(c->type.dt);
  for (int k = 0; k < c->nin; k++) {
    CgSlot *s = &p->slot[c->in[k]->id];
    s->kind = CG_SLOT_VIEW;
    s->alias = c;
    s->offset = off * es;
    off += c->in[k]->type.dims[r - 1];
  }
  p->slot[c->id].stored_by = lead;
}

/* mm[id]: every reader of the node is a matmul, directly or through a
 * folded transpose (fuse.c folds only those), and it is not returned. */
static bool *mm_reads(Arena *a, Graph *g, const CgPlan *p, const int *uses) {
  bool *ok = arena_tmp_alloc(a, ((size_t)g->next_id + 1) * sizeof *ok);
  for (int i = 0; i <= g->next_id; i++) ok[i] = uses[i] > 0;
  for (int i = 0; i < g->nnodes; i++) {
    const Node *c = g->nodes[i];
    for (int k = 0; k < c->nin; k++)
      if (c->op != OP_MATMUL && p->slot[c->id].kind != CG_SLOT_FOLDED)
        ok[c->in[k]->id] = false;
  }
  for (int j = 0; j < g->nret; j++) ok[g->rets[j]->id] = false;
  return ok;
}

static void pitch_rows(CgPlan *p, Node *n, const bool *mm) {
  CgSlot *s = &p->slot[n->id];
  if (!mm[n->id] || !s->stored_by || n->type.rank != 2 ||
      s->stored_by->op != OP_SOFTMAX_CROSS_ENTROPY_BACKWARD ||
      s->kind != CG_SLOT_NONE)
    return;
  int64_t es = dt_size(n->type.dt), C = n->type.dims[1];
  if (es != 2 || (C * es) % 16 == 0) return;
  s->pitch = (C * es + 15) / 16 * 16 / es;
}

void cg_views(CgPlan *p, Graph *g, bool half_ok) {
  Arena *a = p->ctx->arena;
  int *uses = cg_use_counts(a, g);
  bool *qkv = qkv_reads(a, g, uses, half_ok);
  for (int j = 0; j < g->nret; j++) qkv[g->rets[j]->id] = false;
  bool *mm = mm_reads(a, g, p, uses);
  for (int i = 0; i < g->nnodes; i++) {
    Node *n = g->nodes[i];
    if (n->op == OP_NARROW) narrow_view(p, n, qkv);
    else if (n->op == OP_CONCAT && n->nin > 1)
      concat_view(p, n, uses, half_ok);
    pitch_rows(p, n, mm);
  }
  arena_tmp_free(a, uses);
  arena_tmp_free(a, qkv);
  arena_tmp_free(a, mm);
}
