/* jvp.c: the tangent walk (jvp_into, over the JVP table of jvp_rules.c;
 * it installs itself as the JvpCtx's walk hook, through which rules
 * that differentiate a body or an expansion call it back) and the
 * "jvp" and "hvp" passes (abi.md section 3).
 *
 * jvp (with --jvp): ENTRY_jvp, placed last in the module. Arguments:
 *   the entry's, then `tangent_NAME` for each seeded value (--jvp=%a,..
 *   in order, else every param); returns: the entry's returns, then
 *   their tangents (zeros for a return that depends on no seed, and for
 *   a non-floating-point return). A seeded value that is not an
 *   argument has its tangent replaced by the given one. Built from the
 *   entry graph itself: control flow keeps its form (jvp_rules_control.c).
 * hvp (with --hvp; after "grad", which then also runs): ENTRY_hvp =
 *   the JVP of the gradient graph (forward over reverse), seeded at the
 *   wrt values. Arguments: the entry's, d_output, then `tangent_NAME`
 *   per wrt; returns: the loss, the gradient per wrt, <grad, v> (the
 *   sum over wrt of sum(grad * tangent), a scalar of the loss dtype),
 *   then H v per wrt. Without --grad, ENTRY_grad is then dropped.
 * Both run before the clean-up passes, which then visit them too.
 * Diagnostics: unknown or non-floating-point seeds, repeated seeds, no
 * param to seed, a loss that is not one real floating-point element
 * (--hvp), complex wrt values (--hvp).
 */
#include "passes/ad/jvp_rules.h"

#include <stdio.h>
#include <string.h>

static bool differentiable(const Node *n) {
  return dt_is_float(n->type.dt) || dt_is_complex(n->type.dt);
}

/* ---- the tangent walk: the rules' table (jvp_rules.c) below it ---- */

bool jvp_into(IrBuilder *b, Module *mod, const Graph *src, Node *const *args,
              bool keep_names, const Node *const *seed_at,
              Node *const *seed_tan, int ns, Node **prim_out,
              Node **tan_out) {
  Arena *ar = b->c->arena;
  size_t cnt = (size_t)src->next_id + 1;
  JvpCtx jc = {*b, mod, src, arena_alloc(ar, sizeof(Node *) * cnt),
               arena_alloc(ar, sizeof(Node *) * cnt), true, jvp_into};
  Node **seed = arena_alloc(ar, sizeof(Node *) * cnt);
  for (int k = 0; k < ns; k++) seed[seed_at[k]->id] = seed_tan[k];
  for (int i = 0; i < src->nargs; i++) jc.fwd[src->args[i]->id] = args[i];
  Node *buf[64];
  for (int i = 0; i < src->nnodes && jc.ok; i++) {
    const Node *n = src->nodes[i];
    if (n->op != OP_INPUT && n->op != OP_PARAM) {
      Node **in = n->nin > 64
          ? arena_alloc(ar, sizeof(Node *) * (size_t)n->nin) : buf;
      bool any = false;
      for (int k = 0; k < n->nin; k++) {
        in[k] = jc.fwd[n->in[k]->id];
        any |= jc.tan[n->in[k]->id] != NULL;
      }
      jc.b.loc = n->loc;
      Node *k = ib_clone(&jc.b, n, in);
      if (keep_names && n->name) k->name = n->name;
      jc.fwd[n->id] = k;
      if (any && differentiable(n) && !op_has(n->op, OPF_NO_GRAD))
        jc.tan[n->id] = jvp_apply(&jc, n);
    }
    if (seed[n->id]) jc.tan[n->id] = seed[n->id];
  }
  for (int i = 0; i < src->nret; i++) {
    if (prim_out) prim_out[i] = jc.fwd[src->rets[i]->id];
    if (tan_out) tan_out[i] = jc.tan[src->rets[i]->id];
  }
  return jc.ok;
}

/* `tangent_NAME`, made unique among g's values (tangent_NAME_1, ...) */
static const char *tangent_name(Ctx *c, const Graph *g, const char *v) {
  char buf[256];
  snprintf(buf, sizeof buf, "tangent_%s", v ? v : "value");
  size_t len = strlen(buf);
  for (int i = 1; ad_find_value(g, buf); i++)
    snprintf(buf + len, sizeof buf - len, "_%d", i);
  return arena_strdup(c->arena, buf);
}

/* The seeds of --jvp: named values, else every float param. */
static Node **jvp_seeds(Unit *u, const Graph *e, int *ns) {
  Ctx *c = u->ctx;
  int n = u->opt->njvp_wrt, k = 0;
  Node **s = arena_alloc(c->arena, sizeof(Node *) * (size_t)(e->nargs + n + 1));
  bool ok = true;
  for (int i = 0; i < n; i++) {
    Node *v = ad_find_value(e, u->opt->jvp_wrt[i]);
    if (!v) {
      ok = diag_error(c, e->loc, "--jvp: graph '%s' has no value named "
                      "'%%%s'", u->entry->name, u->opt->jvp_wrt[i]);
      continue;
    }
    if (!differentiable(v)) {
      ok = diag_error(c, v->loc, "--jvp: '%%%s' has dtype %s; only "
                      "floating-point and c64 values have tangents",
                      v->name, dt_name(v->type.dt));
      continue;
    }
    for (int j = 0; j < k; j++)
      if (s[j] == v)
        ok = diag_error(c, v->loc, "--jvp: '%%%s' is seeded twice", v->name);
    s[k++] = v;
  }
  if (n == 0) {
    for (int i = 0; i < e->nargs; i++)
      if (e->args[i]->op == OP_PARAM && differentiable(e->args[i]))
        s[k++] = e->args[i];
    if (k == 0)
      ok = diag_error(c, e->loc, "--jvp: graph '%s' has no floating-point "
                      "param to seed; name the values with --jvp=%%a,...",
                      u->entry->name);
  }
  *ns = k;
  return ok ? s : NULL;
}

/* Arguments of a derived graph: copies of src's, then one tangent
 * argument per seed (typed like it). */
static Node **derived_args(Unit *u, const Graph *src, Graph *g,
                           Node *const *seeds, int ns, Node **tan) {
  Node **a = arena_alloc(u->ctx->arena,
                         sizeof(Node *) * (size_t)(src->nargs + 1));
  for (int i = 0; i < src->nargs; i++) {
    const Node *x = src->args[i];
    a[i] = ir_arg_new(u->ctx, g, x->op, x->name, x->type, x->loc);
  }
  for (int k = 0; k < ns; k++)
    tan[k] = ir_arg_new(u->ctx, g, OP_INPUT,
                        tangent_name(u->ctx, src, seeds[k]->name),
                        seeds[k]->type, seeds[k]->loc);
  return a;
}

static Graph *derived_graph(Unit *u, const char *suffix) {
  char nm[256];
  snprintf(nm, sizeof nm, "%s_%s", u->entry->name, suffix);
  return ib_graph_detached(u->ctx, ib_fresh_graph_name(u->ctx, u->mod, nm),
                           u->entry->loc);
}

bool pass_jvp(Unit *u) {
  if (!u->opt || !u->opt->jvp) return true;
  Ctx *c = u->ctx;
  Graph *e = u->entry;
  int ns;
  Node **seeds = jvp_seeds(u, e, &ns);
  if (!seeds) return false;
  Graph *g = derived_graph(u, "jvp");
  Node **tan = arena_alloc(c->arena, sizeof(Node *) * (size_t)(ns + 1));
  Node **args = derived_args(u, e, g, seeds, ns, tan);
  IrBuilder b = {c, g, e->loc};
  Node **rets = arena_alloc(c->arena, sizeof(Node *) * (size_t)(2 * e->nret));
  if (!jvp_into(&b, u->mod, e, args, true, (const Node *const *)seeds, tan,
                ns, rets, rets + e->nret))
    return false;
  for (int i = 0; i < e->nret; i++)
    if (!rets[e->nret + i])
      rets[e->nret + i] = ib_fill(&b, rets[i]->type, 0);
  ir_set_rets(c, g, rets, 2 * e->nret);
  u->jvp = ib_attach(c, u->mod, g);
  return true;
}

bool pass_hvp(Unit *u) {
  if (!u->opt || !u->opt->hvp || !u->grad) return true;
  Ctx *c = u->ctx;
  Graph *gg = u->grad;
  const Node *loss = u->entry->rets[0];
  int64_t cnt = 0; /* a dim: ?b elements is no scalar either */
  char cs[64];
  if (type_numel_dim(c, &loss->type, &cnt) != DIM_OK || cnt != 1 ||
      !dt_is_float(loss->type.dt))
    return diag_error(c, loss->loc, "--hvp: the first return value of '%s' "
                      "must be a real floating-point loss of one element "
                      "(it is %s with %s elements)", u->entry->name,
                      dt_name(loss->type.dt), dim_str(cnt, cs, sizeof cs));
  int nf = u->entry->nret, nt = gg->nret - nf;
  const char **names = ad_wrt_names(u);
  Node **seeds = arena_alloc(c->arena, sizeof(Node *) * (size_t)(nt + 1));
  bool ok = true;
  for (int k = 0; k < nt; k++) {
    seeds[k] = ad_find_value(gg, names[k]);
    RLX_ASSERT(seeds[k]);
    if (dt_is_complex(seeds[k]->type.dt))
      ok = diag_error(c, seeds[k]->loc, "--hvp: '%%%s' is complex; "
                      "Hessian-vector products need real wrt values",
                      names[k]);
    for (int j = 0; j < k; j++)
      if (seeds[j] == seeds[k])
        ok = diag_error(c, seeds[k]->loc, "--hvp: '%%%s' is listed twice "
                        "in --wrt", names[k]);
  }
  if (!ok) return false;
  Graph *g = derived_graph(u, "hvp");
  Node **tan = arena_alloc(c->arena, sizeof(Node *) * (size_t)(nt + 1));
  Node **args = derived_args(u, gg, g, seeds, nt, tan);
  IrBuilder b = {c, g, gg->loc};
  Node **p = arena_alloc(c->arena, sizeof(Node *) * (size_t)gg->nret);
  Node **t = arena_alloc(c->arena, sizeof(Node *) * (size_t)gg->nret);
  if (!jvp_into(&b, u->mod, gg, args, true, (const Node *const *)seeds, tan,
                nt, p, t))
    return false;
  Node **rets = arena_alloc(c->arena, sizeof(Node *) * (size_t)(2 * nt + 2));
  DType dt = loss->type.dt;
  Node *gv = ib_scalar(&b, dt, 0);
  rets[0] = p[0];
  for (int k = 0; k < nt; k++) {
    Node *gk = p[nf + k];
    rets[1 + k] = gk;
    int64_t ax[RLX_MAX_RANK];
    for (int i = 0; i < gk->type.rank; i++) ax[i] = i;
    Node *d = ib_bin(&b, OP_MUL, gk, tan[k]);
    if (d->type.rank) d = ib_reduce(&b, OP_REDUCE_SUM, d, ax, d->type.rank,
                                    false);
    gv = ib_bin(&b, OP_ADD, gv, d->type.dt == dt ? d : ib_cast(&b, d, dt));
    rets[2 + nt + k] = t[nf + k] ? t[nf + k] : ib_fill(&b, gk->type, 0);
  }
  rets[1 + nt] = gv;
  ir_set_rets(c, g, rets, 2 * nt + 2);
  u->hvp = ib_attach(c, u->mod, g);
  if (!u->opt->grad) {
    ir_module_remove_graph(u->mod, gg);
    u->grad = NULL;
  }
  return true;
}
