/* jvp_rules.h: forward mode (passes/ad/jvp*.c): the tangent walk, and the
 * conventions inside a JVP rule.
 *
 * jvp_into() copies a source graph into a destination graph (binding
 * the source's arguments to given nodes) and, in topological order,
 * gives every node whose operands carry a tangent its tangent, built by
 * the op's JVP rule. A value without a tangent is a symbolic zero
 * (NULL): nothing is built for it, so parts of the graph that do not
 * depend on a seeded value cost nothing.
 *
 * A rule returns the tangent of n (NULL: an exact zero) from the
 * primal copies X(i), Y and the operand tangents T(i) (NULL when zero;
 * TZ(i) materializes zeros). FIT(v) broadcasts a tangent computed at an
 * operand's shape to the result's. On an error a rule reports a
 * diagnostic and sets jc->ok = false. A rule may replace Y (the primal
 * copy) when it computes the primal and the tangent together (scan,
 * if, while).
 */
#ifndef RLX_JVP_RULES_H
#define RLX_JVP_RULES_H

#include "passes/ad/ad.h"

/* The tangent walk (jvp_into's signature, ad.h). */
typedef bool (*JvpWalk)(IrBuilder *b, Module *mod, const Graph *src,
                        Node *const *args, bool keep_names,
                        const Node *const *seed_at, Node *const *seed_tan,
                        int ns, Node **prim_out, Node **tan_out);

typedef struct JvpCtx {
  IrBuilder b;
  Module *mod;
  const Graph *src;
  Node **fwd; /* src node id -> its primal copy */
  Node **tan; /* src node id -> its tangent, or NULL (zero) */
  bool ok;
  /* The whole tangent walk, installed by jvp_into (jvp.c): rules
   * that differentiate a body or an expansion (control flow,
   * jvp_through) call it through here, not up into the walk. */
  JvpWalk walk;
} JvpCtx;

/* The tangent of n's op (jvp_rules.c's table). */
Node *jvp_apply(JvpCtx *jc, const Node *n);

/* jvp_tangent.c. Sum of two tangents, either possibly NULL. */
Node *jvp_add(JvpCtx *jc, Node *a, Node *b);
/* v broadcast to n's type (tangents of broadcast operands). */
Node *jvp_fit(JvpCtx *jc, const Node *n, Node *v);
/* op(in...) with n's attributes (linear ops applied to a tangent). */
Node *jvp_same_attrs(JvpCtx *jc, const Node *n, Op op, Node *const *in,
                     int nin);
/* The tangent of `expanded`, a detached graph that computes n from its
 * operands through other ops (a closed form re-expressed): its JVP at
 * n's operands with n's operand tangents. */
Node *jvp_through(JvpCtx *jc, const Node *n, const Graph *expanded);

#define B (&jc->b)
#define X(i) (jc->fwd[n->in[i]->id])
#define Y (jc->fwd[n->id])
#define T(i) (jc->tan[n->in[i]->id])
#define TZ(i) (T(i) ? T(i) : ib_fill(B, n->in[i]->type, 0))
#define FIT(v) jvp_fit(jc, n, (v))
#define DT (n->type.dt)
#define K(v) ib_scalar(B, DT, (v))
#define UN(op, a) ib_un(B, op, a)
#define BIN(op, a, b2) ib_bin(B, op, a, b2)
#define MUL(a, b2) BIN(OP_MUL, a, b2)

/* Every rule the jvp column of ops.def names, jvp_J, declared from the
 * table itself: a rule in any jvp_rules*.c file needs no line here. */
typedef Node *JvpRuleFn(JvpCtx *jc, const Node *n);
#define OP(id, name, nmin, nmax, flags, rule, vjp, jvp, emit, attrs, math) \
  JvpRuleFn jvp_##jvp;
#include "ir/ops.def"
#undef OP

#endif
