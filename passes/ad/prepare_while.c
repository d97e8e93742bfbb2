/* prepare_while.c: AD preparation, `while` -> bounded unrolling.
 *
 * Runs only with --grad, on the AD working copy (working_copy.c). A while
 * without max_iterations is a diagnostic (reverse mode needs a bound).
 * while(c..., cond=@p, body=@b, max_iterations=N) becomes N copies of
 *   p_i = p(c...)            (cond on the current carries)
 *   act = where(p_i, act, 0) (running active flag, f32, starts at 1:
 *                             the product of the cond values so far)
 *   o... = b(c...)
 *   c_j = where(act, o_j, c_j)
 * and the node's value is carry 0. Once a cond is false the carries
 * stop changing, so the value equals the loop's whenever it ends within
 * N iterations; the masked branch receives an exactly zero gradient.
 * Unrolling is refused when it would exceed RLX_UNROLL_LIMIT nodes.
 * Provides: no `while` node remains.
 */
#include "passes/ad/ad.h"

#define RLX_UNROLL_LIMIT 2000000

typedef struct {
  Unit *u;
  bool ok;
} WhileCtx;

static Node *unroll(IrBuilder *b, Node *n, int64_t iters) {
  Graph *p = ir_attr_graph(n, ATTR_COND), *body = ir_attr_graph(n, ATTR_BODY);
  int nc = n->nin;
  Node **c = arena_alloc(b->c->arena, sizeof(Node *) * (size_t)nc);
  for (int j = 0; j < nc; j++) c[j] = n->in[j];
  Node *act = ib_scalar(b, DT_F32, 1.0), *zero = ib_scalar(b, DT_F32, 0.0);
  for (int64_t i = 0; i < iters; i++) {
    Node *pv = ib_inline(b, p, c)[0];
    act = ib_where(b, pv, act, zero);
    Node **o = ib_inline(b, body, c);
    for (int j = 0; j < nc; j++) c[j] = ib_where(b, act, o[j], c[j]);
  }
  return c[0];
}

static Node *rewrite_while(IrBuilder *b, Node *n, void *ud) {
  WhileCtx *w = ud;
  if (n->op != OP_WHILE) return n;
  if (!ir_attr_present(n, ATTR_MAX_ITERS)) {
    w->ok = diag_error(b->c, n->loc, "while: reverse mode (%s) needs "
                       "max_iterations=N to bound the loop",
                       w->u->opt->grad ? "--grad" : "--hvp");
    return n;
  }
  int64_t iters = ir_attr_int(n, ATTR_MAX_ITERS, 0);
  Graph *p = ir_attr_graph(n, ATTR_COND), *body = ir_attr_graph(n, ATTR_BODY);
  int64_t per = p->nnodes + body->nnodes + 2 * n->nin + 2;
  if (iters > 0 && per > RLX_UNROLL_LIMIT / iters) {
    w->ok = diag_error(b->c, n->loc, "while: unrolling %lld iterations for "
                       "reverse mode would create over %d nodes",
                       (long long)iters, RLX_UNROLL_LIMIT);
    return n;
  }
  Node *r = unroll(b, n, iters);
  if (r->id > n->id && !r->name) r->name = n->name;
  return r;
}

static bool prep_graph(Unit *u, Graph *g) {
  WhileCtx w = {u, true};
  ib_rewrite(u->ctx, g, rewrite_while, &w);
  return w.ok;
}

bool pass_prepare_while(Unit *u) {
  if (!ad_wants_grad(u)) return true;
  return ad_each_graph(u, prep_graph);
}
