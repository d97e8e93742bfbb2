/* attention_groups.c: attention groups of the plan (plan.h).
 *
 * The reverse walk emits one attention_backward per wanted operand
 * (wrt=q, k, v, bias) of one attention, all with the same operands and
 * attributes. cg_attention_groups() (before fusion) moves the later
 * ones right after the first, the leader, and sets their attn_lead;
 * the leader's runtime call writes every member's result and the
 * members emit nothing (the memory plan makes their blocks live from
 * the leader's position). The leader also looks for the forward
 * attention of the same operands and attributes (f32/f64; f16/bf16 too
 * where the target asks, its lse then in f32): that node
 * then saves its row log-sum-exp in a block of its own (saved_bytes, live
 * to the last leader reading it) and the leader reads it with the
 * forward output, so the backward recomputes neither. Grouping is
 * linear in the graph (chains keyed by operand ids).
 */
#include "codegen/plan/plan.h"

#include <math.h>
#include <string.h>

static bool half(DType dt) { return dt == DT_F16 || dt == DT_BF16; }
static bool is_bwd(const Node *n) { return n->op == OP_ATTENTION_BACKWARD; }
static int mask_i(const Node *n) { return is_bwd(n) ? 4 : 3; }

int cg_attn_mask_kind(const Node *n) {
  static const char *const kinds[] = {"none", "causal", "sliding_window",
                                      "custom", "bias"};
  const char *m = ir_attr_word(n, ATTR_MASK);
  for (int i = 0; i < 5; i++)
    if (!strcmp(m, kinds[i])) return i;
  RLX_ASSERT(!"attention: unknown mask kind");
  return 0;
}

rlx_attn_geom cg_attn_geometry(const Node *n) {
  const Type *q = &n->in[0]->type, *k = &n->in[1]->type;
  rlx_attn_geom g = {.b = q->dims[0], .layout = q->rank,
                     .mask = cg_attn_mask_kind(n)};
  if (q->rank == 4) {
    g.h = q->dims[1], g.lq = q->dims[2], g.d = q->dims[3];
    g.lk = k->dims[2];
  } else {
    int64_t e = q->dims[2];
    g.h = ir_attr_present(n, ATTR_HEADS)
              ? ir_attr_int(n, ATTR_HEADS, 1)
              : e / ir_attr_int(n, ATTR_HEAD_DIM, 1);
    g.d = e / g.h, g.lq = q->dims[1], g.lk = k->dims[1];
  }
  g.window = g.mask == RLX_ATTN_SLIDING ? ir_attr_int(n, ATTR_WINDOW, 0) : 0;
  g.scale = ir_attr_present(n, ATTR_SCALE) ? ir_attr_float(n, ATTR_SCALE, 1)
                                           : 1.0 / sqrt((double)g.d);
  g.softcap = ir_attr_float(n, ATTR_SOFTCAP, 0);
  return g;
}

rlx_attn_geom cg_attn_geometry_bound(const Node *n) {
  rlx_attn_geom g = cg_attn_geometry(n);
  g.b = dim_bound(g.b), g.lq = dim_bound(g.lq), g.lk = dim_bound(g.lk);
  return g;
}

/* Bytes of attention n's row log-sum-exp (f32 for f16/bf16): [b, h,
 * lq], a number at the bounds, or a size expression (memplan.c). */
static int64_t lse_bytes(Ctx *c, const Node *n) {
  rlx_attn_geom g = cg_attn_geometry(n);
  Type t = {.dt = half(n->type.dt) ? DT_F32 : n->type.dt, .rank = 3,
            .dims = {g.b, g.h, g.lq}};
  return cg_plan_bytes_dim(c, &t);
}

static bool same_geom(const Node *a, const Node *b) {
  rlx_attn_geom x = cg_attn_geometry(a), y = cg_attn_geometry(b);
  return !memcmp(&x, &y, sizeof x) && a->type.dt == b->type.dt;
}

/* Same q, k, v (and mask operand) and attributes. */
static bool same_attention(const Node *a, const Node *b) {
  for (int i = 0; i < 3; i++)
    if (a->in[i] != b->in[i]) return false;
  bool ma = a->nin > mask_i(a), mb = b->nin > mask_i(b);
  if (ma != mb || (ma && a->in[mask_i(a)] != b->in[mask_i(b)]))
    return false;
  return same_geom(a, b);
}

int cg_attn_wrt(const Node *n) {
  const char *w = ir_attr_word(n, ATTR_WRT);
  return w[0] == 'q' ? 0 : w[0] == 'k' ? 1 : w[0] == 'v' ? 2 : 3;
}

/* Lookups go through chains keyed by an operand's node id (head[id] ->
 * index, next[index] -> index, -1 ends), so grouping stays linear in
 * the graph for the usual few nodes per key. */
static int *chain_heads(Ctx *c, const Graph *g) {
  int *h = arena_alloc(c->arena, sizeof *h * (size_t)(g->next_id + 1));
  for (int i = 0; i <= g->next_id; i++) h[i] = -1;
  return h;
}

void cg_attn_members(const CgPlan *p, Node *n, Node *mem[4]) {
  memset(mem, 0, 4 * sizeof *mem);
  mem[cg_attn_wrt(n)] = n;
  for (int64_t i = p->slot[n->id].def + 1; i < p->g->nnodes; i++) {
    Node *o = p->g->nodes[i];
    if (p->slot[o->id].attn_lead != n) break;
    mem[cg_attn_wrt(o)] = o;
  }
}

void cg_attention_groups(CgPlan *p, Graph *g, bool half_lse) {
  int nb = 0, nf = 0;
  for (int i = 0; i < g->nnodes; i++) {
    nb += is_bwd(g->nodes[i]);
    nf += g->nodes[i]->op == OP_ATTENTION;
  }
  if (!nb) return;
  Ctx *c = p->ctx;
  Node **lead = arena_alloc(c->arena, sizeof *lead * (size_t)nb);
  Node *(*grp)[4] = arena_alloc(c->arena, sizeof *grp * (size_t)nb);
  Node **fwd = arena_alloc(c->arena, sizeof *fwd * (size_t)(nf + 1));
  int *lnext = arena_alloc(c->arena, sizeof(int) * (size_t)nb);
  int *fnext = arena_alloc(c->arena, sizeof(int) * (size_t)(nf + 1));
  int *lhead = chain_heads(c, g), *fhead = chain_heads(c, g);
  int *lof = chain_heads(c, g); /* leader's node id -> its group */
  int nl = 0, nfw = 0;
  for (int i = 0; i < g->nnodes; i++) {
    Node *n = g->nodes[i];
    if (n->op == OP_ATTENTION) { /* forward attentions so far, by q */
      fwd[nfw] = n, fnext[nfw] = fhead[n->in[0]->id];
      fhead[n->in[0]->id] = nfw++;
      continue;
    }
    if (!is_bwd(n)) continue;
    /* a group of the same attention and dy (leaders chained by dy)
     * whose slot for this wrt is free; else n leads a new one */
    int w = cg_attn_wrt(n), j = lhead[n->in[3]->id];
    while (j >= 0 && (grp[j][w] || !same_attention(lead[j], n))) j = lnext[j];
    if (j >= 0) {
      grp[j][w] = n;
      p->slot[n->id].attn_lead = lead[j];
      continue;
    }
    j = nl++;
    lead[j] = n, grp[j][w] = n, lof[n->id] = j;
    lnext[j] = lhead[n->in[3]->id], lhead[n->in[3]->id] = j;
    if (half(n->type.dt) && !half_lse) continue;
    for (int f = fhead[n->in[0]->id]; f >= 0; f = fnext[f])
      if (same_attention(fwd[f], n)) {
        p->slot[n->id].fwd = fwd[f];
        p->slot[fwd[f]->id].saved_bytes = lse_bytes(c, n);
        break;
      }
  }
  /* members right after their leader (their operands are its own) */
  Node **order = arena_alloc(c->arena, sizeof *order * (size_t)g->nnodes);
  int m = 0;
  for (int i = 0; i < g->nnodes; i++) {
    Node *n = g->nodes[i];
    if (p->slot[n->id].attn_lead) continue;
    order[m++] = n;
    for (int w = 0; is_bwd(n) && w < 4; w++) {
      Node *o = grp[lof[n->id]][w];
      if (o && o != n) order[m++] = o;
    }
  }
  RLX_ASSERT(m == g->nnodes);
  memcpy(g->nodes, order, sizeof *order * (size_t)m);
}

