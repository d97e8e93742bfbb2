/* lower_scan_bwd.c: the "lower_scan_bwd" pass. scan_backward and
 * scan_backward_xs (language.md 6.9; ops-detail.md, "Scan reverse
 * mode") become a `scan` with reverse=true and movement ops, so that
 * code generation, reverse mode, forward mode and HVP only ever see
 * ordinary ops (the grad pass never emits these ops; a user may write
 * them). For
 *   n = scan_backward[_xs](init, xs..., traj, dtraj, body=@B, length=L,
 *                          checkpoints=K, fwd=@F, k=k):
 *   tr  = traj; with K > 0 the rows of traj other than the checkpoint
 *         rows need not be valid, so every carry is recomputed from
 *         init: tr = scan(init, xs..., body=@F, save_trajectory=true);
 *   cin = concat(reshape(init, [1, ...]), narrow(tr, 0, 0, L-1)), the
 *         carry entering each step (vjp_rules_scan.c's ad_scan_carries_in);
 *   scan_backward:    scan(zeros, cin, xs..., dtraj, body=@B_bwd,
 *                     reverse=true) with
 *                     B_bwd(dc, carry, x..., dt) = B(carry, x..., dc+dt)[0]
 *                     (steps L-1 ... 0; the final carry is d init);
 *   scan_backward_xs: the carry packs [dc | dx_k] flat, B_bwd returns
 *                     concat(flat(B(...)[0]), flat(B(...)[1+k])) and the
 *                     scan keeps its trajectory: row t holds step t's
 *                     dx_k, so the result is that section of the rows,
 *                     already in step order.
 * The carry pack needs xs[k] of the carry's dtype (else a diagnostic).
 * Requires: shape-checked module. Provides: no scan_backward* in any
 * graph when code (object, header, asm, llvm) is generated or --grad /
 * --jvp / --hvp is given; --emit=ir/dot and --check alone keep the ops
 * as written. Bodies are new
 * graphs NAME_bwd placed right before the graph that uses them.
 */
#include "passes/ad/ad.h"

#include <stdio.h>

/* The module and the bodies made so far (one per body graph and k). */
typedef struct {
  Module *m;
  struct Made {
    const Graph *body;
    int64_t k;
    Graph *bwd;
  } *made;
  int nmade, cap;
} Lower;

static Node *arg(Ctx *c, Graph *g, const char *nm, Type t) {
  return ir_arg_new(c, g, OP_INPUT, nm, t, g->loc);
}

/* B_bwd(dpack, carry, x..., dtraj) -> dpack' for n (k < 0: no xs
 * section; dpack is the carry gradient itself). */
static Graph *bwd_body(IrBuilder *b, Lower *lw, const Node *n, int nx,
                       int64_t k) {
  Ctx *c = b->c;
  const Graph *body = ir_attr_graph(n, ATTR_BODY);
  for (int i = 0; i < lw->nmade; i++)
    if (lw->made[i].body == body && lw->made[i].k == k)
      return lw->made[i].bwd;
  const Type *ct = &n->in[0]->type;
  int64_t nc = type_numel(ct);
  int64_t np = k < 0 ? 0 : nc + type_numel(&body->args[1 + k]->type);
  Graph *g = ib_graph_detached(c, "bwd", n->loc);
  Node *dp = arg(c, g, "dpack", k < 0 ? *ct : type_make(ct->dt, 1, &np));
  Node **a = arena_alloc(c->arena, sizeof(Node *) * (size_t)(nx + 2));
  a[0] = arg(c, g, "carry", *ct);
  for (int i = 0; i < nx; i++) {
    char nm[32];
    snprintf(nm, sizeof nm, "x%d", i);
    a[1 + i] = arg(c, g, nm, body->args[1 + i]->type);
  }
  Node *dt = arg(c, g, "dtraj", *ct);
  IrBuilder bb = {c, g, n->loc};
  Node *dc = k < 0 ? dp : ad_section(&bb, dp, 0, nc, ct);
  a[1 + nx] = ib_bin(&bb, OP_ADD, dc, dt);
  Node **r = ib_inline(&bb, body, a), *ret = r[0];
  if (k >= 0) {
    Node *p[2] = {ad_flat(&bb, r[0]), ad_flat(&bb, r[1 + k])};
    ret = ib_concat(&bb, p, 2, 0);
  }
  ir_set_rets(c, g, &ret, 1);
  char nm[300];
  snprintf(nm, sizeof nm, "%s_bwd", body->name);
  g->name = ib_fresh_graph_name(c, lw->m, nm);
  pass_simplify_graph(c, g);
  pass_dce_graph(c, g);
  g = ib_attach_before(c, lw->m, g, b->g);
  lw->made = arena_grow(c->arena, lw->made, lw->nmade, &lw->cap,
                        sizeof *lw->made);
  lw->made[lw->nmade++] = (struct Made){body, k, g};
  return g;
}

static Node *lower(IrBuilder *b, Node *n, void *ud) {
  if (n->op != OP_SCAN_BACKWARD && n->op != OP_SCAN_BACKWARD_XS) return n;
  Ctx *c = b->c;
  int nx = n->nin - 3;
  Node *init = n->in[0], *traj = n->in[1 + nx], *dtraj = n->in[2 + nx];
  int64_t L = traj->type.dims[0], nc = type_numel(&init->type);
  int64_t k = n->op == OP_SCAN_BACKWARD_XS ? ir_attr_int(n, ATTR_K, 0) : -1;
  if (k >= 0 && n->in[1 + k]->type.dt != init->type.dt) {
    diag_error(c, n->loc, "scan_backward_xs: xs[%lld] (operand %lld) has "
               "dtype %s; its lowering to a reverse scan packs dxs[k] with "
               "the carry gradient and needs the carry's dtype %s",
               (long long)k, (long long)(1 + k),
               dt_name(n->in[1 + k]->type.dt), dt_name(init->type.dt));
    return n;
  }
  if (ir_attr_int(n, ATTR_CHECKPOINTS, 0) > 0)
    traj = ad_scan(b, ir_attr_graph(n, ATTR_FWD), n->in, 1 + nx, L, false,
                   true);
  Node **in = arena_alloc(c->arena, sizeof(Node *) * (size_t)(nx + 3));
  int64_t np = k < 0 ? 0 : nc + type_numel(&n->type) / L;
  in[0] = ib_fill(b, k < 0 ? init->type : type_make(init->type.dt, 1, &np),
                  0);
  in[1] = ad_scan_carries_in(b, init, traj, L, false);
  for (int i = 0; i < nx; i++) in[2 + i] = n->in[1 + i];
  in[2 + nx] = dtraj;
  Graph *body = bwd_body(b, ud, n, nx, k);
  Node *sc = ad_scan(b, body, in, nx + 3, L, true, k >= 0);
  return k < 0 ? sc : ad_section(b, sc, nc, np - nc, &n->type);
}

static bool has_scan_bwd(const Graph *g) {
  for (int i = 0; i < g->nnodes; i++)
    if (g->nodes[i]->op == OP_SCAN_BACKWARD ||
        g->nodes[i]->op == OP_SCAN_BACKWARD_XS)
      return true;
  return false;
}

/* Code (the header too: its workspace size plans the graph), or a
 * derivative graph built from the module, is wanted. */
static bool wanted(const Unit *u) {
  const Options *o = u->opt;
  if (!o) return false;
  return o->grad || o->jvp || o->hvp ||
         (!o->check &&
          (o->emit & (EMIT_OBJ | EMIT_HEADER | EMIT_ASM | EMIT_LLVM)));
}

bool pass_lower_scan_bwd(Unit *u) {
  Module *m = u->mod;
  Lower lw = {m, NULL, 0, 0};
  if (!wanted(u)) return true;
  for (int i = 0; i < m->ngraphs; i++) {
    Graph *g = m->graphs[i];
    if (!has_scan_bwd(g)) continue;
    ib_rewrite(u->ctx, g, lower, &lw);
    while (m->graphs[i] != g) i++; /* bodies were placed before g */
  }
  return true;
}
