/* inline_custom_fn.c: AD preparation, custom_fn without derivative
 * bodies -> its fwd graph inlined.
 *
 * Runs only with --grad, on the AD working copy (working_copy.c). A custom_fn
 * with a vjp body stays (reverse mode uses the body, vjp_rules.c); one with
 * only a jvp body stays too (reverse mode then reports that it needs a
 * vjp body). Provides: every remaining custom_fn has a derivative body.
 */
#include "passes/ad/ad.h"

static Node *rewrite_cf(IrBuilder *b, Node *n, void *ud) {
  (void)ud;
  if (n->op != OP_CUSTOM_FN || ir_attr_graph(n, ATTR_VJP) ||
      ir_attr_graph(n, ATTR_JVP))
    return n;
  Node *r = ib_inline(b, ir_attr_graph(n, ATTR_FWD), n->in)[0];
  if (r->id > n->id && !r->name) r->name = n->name;
  return r;
}

bool pass_inline_custom_fn(Unit *u) {
  return ad_rewrite_each(u, rewrite_cf);
}
