/* jvp_rules_fused.c: forward mode of the fused sequence blocks
 * (selective_scan, gated_delta_net, fused_transformer_layer): the JVP
 * of their expansion into primitives (expand_fused.c), built in a
 * detached graph and differentiated by jvp_through, so --jvp and --hvp
 * see the same ops as reverse mode (the recurrences as a trajectory
 * scan, whose JVP is jvp_rules_control.c's).
 */
#include "passes/ad/jvp_rules.h"

#include <stdio.h>

Node *jvp_fused(JvpCtx *jc, const Node *n) {
  Ctx *c = B->c;
  Graph *s = ib_graph_detached(c, "jvp_expand", n->loc);
  Node **a = arena_alloc(c->arena, sizeof(Node *) * (size_t)n->nin);
  for (int i = 0; i < n->nin; i++) {
    char nm[16];
    snprintf(nm, sizeof nm, "a%d", i);
    a[i] = ir_arg_new(c, s, OP_INPUT, arena_strdup(c->arena, nm),
                      n->in[i]->type, n->loc);
  }
  IrBuilder sb = {c, s, n->loc};
  Node *r = ad_fused_expand(&sb, jc->mod, n, a);
  ir_set_rets(c, s, &r, 1);
  return jvp_through(jc, n, s);
}
