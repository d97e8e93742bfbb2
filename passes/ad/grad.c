/* grad.c: reverse-mode autodiff: the reverse walk (grad_into), on top
 * of the VJP table (vjp_rules.c) and the rules, and the "grad" pass that
 * builds ENTRY_grad. grad_into installs itself as the walk hook of the
 * GradCtx it makes (gc->walk), through which the rules that
 * differentiate a detached graph (second-order VJPs, scan bodies) call
 * it back without an upward call. Gradients are accumulated in
 * grad_accum.c.
 *
 * Requires: the AD preparation passes have run (no if / while, no
 * custom_fn without derivative bodies, scans with num_bcast = 0).
 * Provides: u->grad, a graph named ENTRY_grad placed last in the module
 * whose arguments are the entry's arguments then `d_output` (typed like
 * the first return value) and whose returns are the entry's returns then
 * one gradient per wrt value (abi.md section 3). The entry graph itself
 * is not modified. (grad_outputs.c names the gradient outputs once the
 * clean-up passes are done.)
 *
 * Diagnostics: a wrt value that receives no gradient is reported at its
 * declaration, all of them in one run, unless --grad-missing=zero (then
 * its gradient is zeros). Unknown --wrt names and non-float wrt values
 * are reported too.
 */
#include "passes/ad/ad.h"

#include <string.h>

static bool differentiable(const Node *n) {
  return dt_is_float(n->type.dt) || dt_is_complex(n->type.dt);
}

/* Copy src's nodes into the destination graph. */
static void copy_forward(GradCtx *gc, Node *const *args, bool keep_names) {
  const Graph *src = gc->src;
  for (int i = 0; i < src->nargs; i++) gc->fwd[src->args[i]->id] = args[i];
  Node *buf[64];
  for (int i = 0; i < src->nnodes; i++) {
    const Node *n = src->nodes[i];
    if (n->op == OP_INPUT || n->op == OP_PARAM) continue;
    Node **in = n->nin > 64
        ? arena_alloc(gc->b.c->arena, sizeof(Node *) * (size_t)n->nin)
        : buf;
    for (int k = 0; k < n->nin; k++) in[k] = gc->fwd[n->in[k]->id];
    gc->b.loc = n->loc;
    Node *k = ib_clone(&gc->b, n, in);
    if (keep_names && n->name) k->name = n->name;
    gc->fwd[n->id] = k;
  }
}

/* active[n]: n depends on a target through differentiable ops. */
static void find_active(GradCtx *gc, Node *const *targets, int nt) {
  const Graph *src = gc->src;
  for (int k = 0; k < nt; k++)
    if (differentiable(targets[k])) gc->active[targets[k]->id] = true;
  for (int i = 0; i < src->nnodes; i++) {
    const Node *n = src->nodes[i];
    if (gc->active[n->id] || !differentiable(n)) continue;
    if (op_has(n->op, OPF_NO_GRAD) || n->op == OP_STOP_GRADIENT) continue;
    for (int k = 0; k < n->nin; k++)
      if (gc->active[n->in[k]->id]) gc->active[n->id] = true;
  }
}

bool grad_into(IrBuilder *b, Module *mod, const Graph *src,
               Node *const *args, bool keep_names, Node *const *seeds,
               Node *const *targets, int nt, Node **grads, Node **fwd_out) {
  Arena *ar = b->c->arena;
  size_t n = (size_t)src->next_id + 1;
  GradCtx gc = {*b, mod, src, arena_alloc(ar, sizeof(Node *) * n),
                arena_alloc(ar, sizeof(Node *) * n),
                arena_alloc(ar, sizeof(bool) * n), true, grad_into};
  copy_forward(&gc, args, keep_names);
  find_active(&gc, targets, nt);
  gc.b.loc = b->loc;
  for (int i = 0; i < src->nret; i++)
    if (seeds && seeds[i]) grad_accum(&gc, src->rets[i], seeds[i]);
  for (int i = src->nnodes - 1; i >= 0 && gc.ok; i--) {
    const Node *nd = src->nodes[i];
    Node *g = gc.adj[nd->id];
    if (!g || op_has(nd->op, OPF_PSEUDO) || op_has(nd->op, OPF_NO_GRAD))
      continue;
    bool any = false; /* no operand needs a gradient: nothing to build */
    for (int k = 0; k < nd->nin; k++) any |= gc.active[nd->in[k]->id];
    if (!any) continue;
    gc.b.loc = nd->loc;
    if (!vjp_apply(&gc, nd, g)) gc.ok = false;
  }
  for (int k = 0; k < nt; k++) grads[k] = gc.adj[targets[k]->id];
  if (fwd_out)
    for (int i = 0; i < src->nret; i++) fwd_out[i] = gc.fwd[src->rets[i]->id];
  return gc.ok;
}

bool ad_each_graph(Unit *u, bool (*fn)(Unit *u, Graph *g)) {
  ad_working_copy(u);
  bool ok = true;
  for (int i = 0; i < u->n_ad_graphs; i++) ok = fn(u, u->ad_graphs[i]) && ok;
  return ok;
}

bool ad_rewrite_each(Unit *u, RewriteFn fn) {
  if (!ad_wants_grad(u)) return true;
  ad_working_copy(u);
  for (int i = 0; i < u->n_ad_graphs; i++)
    ib_rewrite(u->ctx, u->ad_graphs[i], fn, NULL);
  return true;
}

/* ---- the grad pass ---- */

Node *ad_find_value(const Graph *g, const char *name) {
  for (int i = 0; i < g->nnodes; i++)
    if (g->nodes[i]->name && !strcmp(g->nodes[i]->name, name))
      return g->nodes[i];
  return NULL;
}

/* The wrt nodes of e (--wrt names, else every param); NULL on error. */
static Node **resolve_wrt(Unit *u, const Graph *e, int *nt) {
  Ctx *c = u->ctx;
  int n = u->opt->nwrt, k = 0;
  Node **t = arena_alloc(c->arena, sizeof(Node *) * (size_t)(e->nargs +
                                                               n + 1));
  bool ok = true;
  if (n == 0) {
    for (int i = 0; i < e->nargs; i++)
      if (e->args[i]->op == OP_PARAM) t[k++] = e->args[i];
    if (k == 0)
      ok = u->opt->train
          ? diag_error(c, e->loc, "--train: graph '%s' has no param to "
                       "train", u->entry->name)
          : diag_error(c, e->loc, "--grad: graph '%s' has no param and no "
                       "--wrt value was given", u->entry->name);
  }
  for (int i = 0; i < n; i++) {
    Node *v = ad_find_value(e, u->opt->wrt[i]);
    if (!v)
      ok = diag_error(c, e->loc, "--wrt: graph '%s' has no value named "
                      "'%%%s'", u->entry->name, u->opt->wrt[i]);
    else if (!differentiable(v))
      ok = diag_error(c, v->loc, "--wrt: '%%%s' has dtype %s; only "
                      "floating-point values have gradients", v->name,
                      dt_name(v->type.dt));
    else
      t[k++] = v;
  }
  *nt = k;
  return ok ? t : NULL;
}

/* Arguments of the gradient graph: the entry's, then d_output. */
static Node **grad_args(Unit *u, const Graph *e, Graph *gg, Node **dout) {
  Node **a = arena_alloc(u->ctx->arena,
                         sizeof(Node *) * (size_t)(e->nargs + 1));
  for (int i = 0; i < e->nargs; i++) {
    const Node *x = e->args[i];
    a[i] = ir_arg_new(u->ctx, gg, x->op, x->name, x->type, x->loc);
  }
  const char *name = "d_output";
  char buf[64];
  for (int i = 1; ad_find_value(e, name); i++) {
    snprintf(buf, sizeof buf, "d_output_%d", i);
    name = buf;
  }
  *dout = ir_arg_new(u->ctx, gg, OP_INPUT, name, e->rets[0]->type, e->loc);
  return a;
}

/* Replace missing gradients by zeros or report them; false on error. */
static bool check_missing(Unit *u, IrBuilder *b, Node *const *t, int nt,
                          Node **grads) {
  bool ok = true;
  for (int k = 0; k < nt; k++) {
    if (grads[k]) continue;
    if (u->opt->grad_missing_zero) {
      grads[k] = ib_fill(b, t[k]->type, 0.0);
      continue;
    }
    ok = diag_error(u->ctx, t[k]->loc, "'%%%s' receives no gradient: the "
                    "first return value of '%s' does not depend on it "
                    "(--grad-missing=zero returns zeros instead)",
                    t[k]->name ? t[k]->name : "?", u->entry->name) && ok;
  }
  return ok;
}

bool pass_grad(Unit *u) {
  if (!ad_wants_grad(u)) return true;
  /* the prepared working copy (working_copy.c), named after the entry */
  Graph *e = u->ad_entry ? u->ad_entry : u->entry;
  Ctx *c = u->ctx;
  if (e->nret < 1 || !differentiable(e->rets[0]))
    return diag_error(c, e->loc, "--grad: the first return value of '%s' "
                      "(the loss) must be a floating-point or c64 tensor",
                      u->entry->name);
  int nt;
  Node **t = resolve_wrt(u, e, &nt);
  if (!t) return false;
  char nm[256];
  snprintf(nm, sizeof nm, "%s_grad", u->entry->name);
  Graph *gg = ib_graph_detached(c, ib_fresh_graph_name(c, u->mod, nm),
                                e->loc);
  Node *dout, **args = grad_args(u, e, gg, &dout);
  IrBuilder b = {c, gg, e->loc};
  Node **seeds = arena_alloc(c->arena, sizeof(Node *) * (size_t)e->nret);
  seeds[0] = dout;
  Node **rets = arena_alloc(c->arena,
                            sizeof(Node *) * (size_t)(e->nret + nt + 1));
  if (!grad_into(&b, u->mod, e, args, true, seeds, t, nt, rets + e->nret,
                 rets))
    return false;
  if (!check_missing(u, &b, t, nt, rets + e->nret)) return false;
  ir_set_rets(c, gg, rets, e->nret + nt);
  u->grad = ib_attach(c, u->mod, gg);
  ad_drop_unused(u);
  return true;
}
