/* prepare_if.c: AD preparation, `if` -> both branches inlined + where.
 *
 * Runs only with --grad, on every graph of the AD working copy (working_copy.c)
 * in order (subgraphs first, so branches are already prepared when
 * inlined).
 * if(pred, c..., then=@t, else=@e) becomes t(c...) and e(c...) inlined
 * in place and where(pred, t_out, e_out); a rank-0 pred broadcasts.
 * Both branches are evaluated, so the forward value is unchanged while
 * reverse mode sees only ordinary ops (the untaken branch receives a
 * masked, exactly zero, gradient).
 * Provides: no `if` node remains.
 */
#include "passes/ad/ad.h"

static Node *rewrite_if(IrBuilder *b, Node *n, void *ud) {
  (void)ud;
  if (n->op != OP_IF) return n;
  Graph *t = ir_attr_graph(n, ATTR_THEN), *e = ir_attr_graph(n, ATTR_ELSE);
  Node *const *caps = n->in + 1;
  Node *tv = ib_inline(b, t, caps)[0];
  Node *ev = ib_inline(b, e, caps)[0];
  Node *r = ib_where(b, n->in[0], tv, ev);
  r->name = n->name;
  return r;
}

bool pass_prepare_if(Unit *u) {
  return ad_rewrite_each(u, rewrite_if);
}
