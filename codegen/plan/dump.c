/* dump.c: a plan as text (--emit=plan; plan.h).
 *
 * One block per graph function, headed by its name and workspace size,
 * then one line per node in schedule (node order):
 *
 *   %name = op  STORAGE [live DEF..LAST] [scratch [A, B)] [group: ...]
 *
 * STORAGE is inputs[i], outputs[j] (`= inputs[i] (in place)` for a
 * return stored over an argument, ENTRY_train's updates; `copied out` when the returned
 * value lives elsewhere), ws [A, B) (a workspace block; `in place of
 * %v` when it took over a dying leaf's block), const (a constant
 * global), alias of %v, fused into %root, folded (a transpose read
 * through matmul strides), or none. A root of a fused group lists the
 * nodes computed inside its loop (`group:`) and, among them, the side
 * outputs its loop also stores (`stores:`); a side output's own line
 * shows its storage and `stored by %root`. Attention groups show their leader
 * and the saved log-sum-exp block. Unnamed values print as %ID.
 */
#include "codegen/plan/plan.h"

#include <string.h>

static void name(FILE *f, const Node *n) {
  if (n->name) fprintf(f, "%%%s", n->name);
  else fprintf(f, "%%%d", n->id);
}

/* root[id] = the root whose loop computes FUSED node (or side output)
 * id (first root in reverse node order wins, as a group is built). */
static void collect(const CgPlan *p, const Node *r, const Node *n,
                    const Node **root) {
  for (int i = 0; i < n->nin; i++) {
    const Node *x = n->in[i];
    if (!x || !cg_in_tree(p, x) || root[x->id]) continue;
    root[x->id] = r;
    collect(p, r, x, root);
  }
}

/* [off, off + bytes) or, placed at run time, "run-time #k (EXPR bytes)". */
static void block(FILE *f, const CgPlan *p, int64_t off, int64_t bytes) {
  int k = cg_off_dyn(off);
  char b[160];
  if (k < 0)
    fprintf(f, "[%lld, %lld)", (long long)off, (long long)(off + bytes));
  else if (p->dyn_node[k])
    fprintf(f, "run-time #%d (bytes computed at run time)", k);
  else
    fprintf(f, "run-time #%d (%s bytes)", k,
            dim_str(p->dyn_bytes[k], b, sizeof b));
}

static void storage(FILE *f, const CgPlan *p, const Node *n,
                    const Node **root) {
  const CgSlot *s = cg_plan_slot(p, n);
  switch (s->kind) {
  case CG_SLOT_INPUT: fprintf(f, "inputs[%d]", s->index); break;
  case CG_SLOT_OUTPUT:
    fprintf(f, "outputs[%d]", s->index);
    if (p->g->ret_into && p->g->ret_into[s->index] >= 0)
      fprintf(f, " = inputs[%d] (in place)", p->g->ret_into[s->index]);
    break;
  case CG_SLOT_WS:
    fprintf(f, "ws ");
    block(f, p, s->offset, cg_align(cg_plan_slot_bytes(p, n)));
    if (s->pitch) fprintf(f, " rows %lld apart", (long long)s->pitch);
    break;
  case CG_SLOT_CONST: fprintf(f, "const"); break;
  case CG_SLOT_ALIAS:
    fprintf(f, "alias of ");
    name(f, s->alias);
    break;
  case CG_SLOT_FUSED:
    fprintf(f, "fused into ");
    if (root[n->id]) name(f, root[n->id]);
    else fprintf(f, "?");
    break;
  case CG_SLOT_FOLDED: fprintf(f, "folded"); break;
  case CG_SLOT_VIEW:
    fprintf(f, "view of ");
    name(f, s->alias);
    fprintf(f, " at byte %lld", (long long)s->offset);
    break;
  case CG_SLOT_EPI:
    fprintf(f, "stores ");
    name(f, s->store_as);
    break;
  default: fprintf(f, "none"); break;
  }
}

static void extras(FILE *f, const CgPlan *p, const Node *n) {
  const CgSlot *s = cg_plan_slot(p, n);
  if (s->inplace_of) {
    fprintf(f, " in place of ");
    name(f, s->inplace_of);
  }
  if (s->copy_out) fprintf(f, " copied out");
  if (s->side_of || s->stored_by) {
    fprintf(f, " stored by ");
    name(f, s->side_of ? s->side_of : s->stored_by);
  }
  if (s->kind == CG_SLOT_WS && s->def >= 0)
    fprintf(f, " live %lld..%lld", (long long)s->def, (long long)s->last);
  if (s->scratch_off != -1) {
    fprintf(f, " scratch ");
    block(f, p, s->scratch_off, s->scratch_bytes);
  }
  if (s->attn_lead) {
    fprintf(f, " written by ");
    name(f, s->attn_lead);
  }
  if (s->fwd) {
    fprintf(f, " reads ");
    name(f, s->fwd);
  }
  if (s->saved_bytes) {
    fprintf(f, " saved ");
    block(f, p, s->saved_off, cg_align(s->saved_bytes));
    fprintf(f, " to %lld", (long long)s->saved_last);
  }
}

static void group(FILE *f, const CgPlan *p, const Node *r,
                  const Node **root) {
  const Graph *g = p->g;
  for (int side = 0; side < 2; side++) {
    bool any = false;
    for (int i = 0; i < g->nnodes; i++) {
      const Node *n = g->nodes[i];
      if (root[n->id] != r || (side && cg_plan_slot(p, n)->side_of != r))
        continue;
      fprintf(f, any ? " " : side ? " stores: " : " group: ");
      name(f, n);
      any = true;
    }
  }
}

void cg_plan_dump(FILE *f, const CgPlan *p, const char *fn_name) {
  const Graph *g = p->g;
  Arena *a = p->ctx->arena;
  size_t ids = (size_t)p->nslots + 1;
  const Node **root = arena_tmp_alloc(a, sizeof *root * ids);
  memset(root, 0, sizeof *root * ids);
  for (int i = g->nnodes - 1; i >= 0; i--) {
    const Node *n = g->nodes[i];
    if (!cg_in_tree(p, n)) collect(p, n, n, root);
  }
  fprintf(f, "plan %s (graph %s): workspace %lld bytes\n", fn_name, g->name,
          (long long)p->ws_bytes);
  if (p->ndyn)
    fprintf(f, "  (then %d blocks placed at run time, table at %lld)\n",
            p->ndyn, (long long)p->dyn_tab);
  for (int i = 0; i < g->nnodes; i++) {
    const Node *n = g->nodes[i];
    fprintf(f, "  ");
    name(f, n);
    fprintf(f, " = %s  ", op_name(n->op));
    storage(f, p, n, root);
    extras(f, p, n);
    group(f, p, n, root);
    fputc('\n', f);
  }
  arena_tmp_free(a, root);
}
