/* jvp_tangent.c: what the JVP rules share, below them: sums of
 * symbolic-zero tangents (jvp_add), broadcasting a tangent to a
 * result's type (jvp_fit), an op with a node's attributes
 * (jvp_same_attrs), and the tangent of a closed form re-expressed in a
 * detached graph (jvp_through), which runs the tangent walk through the
 * hook jvp_into installs in the JvpCtx (jc->walk). Declared in jvp_rules.h.
 */
#include "passes/ad/jvp_rules.h"

Node *jvp_add(JvpCtx *jc, Node *a, Node *b) {
  if (!a) return b;
  if (!b) return a;
  return ib_bin(&jc->b, OP_ADD, a, b);
}

Node *jvp_fit(JvpCtx *jc, const Node *n, Node *v) {
  if (!v || type_eq(&v->type, &n->type)) return v;
  if (v->type.dt != n->type.dt) v = ib_cast(&jc->b, v, n->type.dt);
  return type_eq(&v->type, &n->type) ? v : ib_expand(&jc->b, v, &n->type);
}

Node *jvp_same_attrs(JvpCtx *jc, const Node *n, Op op, Node *const *in,
                     int nin) {
  Node *r = ib_op(B, op, in, nin);
  ir_attr_copy_all(B->c, r, n);
  return ib_finish(B, r);
}

Node *jvp_through(JvpCtx *jc, const Node *n, const Graph *expanded) {
  Node **seed_at = arena_alloc(B->c->arena, sizeof(Node *) * (size_t)n->nin);
  Node **seed = arena_alloc(B->c->arena, sizeof(Node *) * (size_t)n->nin);
  Node **args = arena_alloc(B->c->arena, sizeof(Node *) * (size_t)n->nin);
  int ns = 0;
  for (int i = 0; i < n->nin; i++) {
    args[i] = X(i);
    if (T(i)) {
      seed_at[ns] = expanded->args[i];
      seed[ns++] = T(i);
    }
  }
  Node *p, *t;
  if (!jc->walk(B, jc->mod, expanded, args, false,
                (const Node *const *)seed_at, seed, ns, &p, &t))
    jc->ok = false;
  return t;
}
