/* builder.h: small helpers that passes (and anything above ir/) use to add
 * nodes to a graph.
 *
 * An IrBuilder appends nodes to one graph at one source location. Every
 * ib_* constructor sets the attributes, runs shape_infer() and asserts
 * success: a pass only builds nodes it knows to be well typed, so a
 * failure is a compiler bug, never a user error.
 *
 * ib_rewrite() lets a pass replace nodes in place while keeping the
 * node list topological: the list is rebuilt front to back, operands
 * are redirected to replacements made earlier, and nodes the callback
 * creates are appended right where the replaced node stood.
 *
 * ib_inline() copies a subgraph into the builder's graph, binding its
 * inputs to given nodes; it returns the copies of the subgraph's
 * return values.
 *
 * Ownership: everything lives in the Ctx arena.
 */
#ifndef RLX_IR_BUILDER_H
#define RLX_IR_BUILDER_H

#include "ir/ir.h"

typedef struct {
  Ctx *c;
  Graph *g;
  Loc loc;
} IrBuilder;

/* Finish a node created with ir_node_new + attributes: infer its type
 * and assert success. Returns n. */
Node *ib_finish(IrBuilder *b, Node *n);
Node *ib_op(IrBuilder *b, Op op, Node *const *in, int nin);
Node *ib_un(IrBuilder *b, Op op, Node *x);
Node *ib_bin(IrBuilder *b, Op op, Node *x, Node *y);
Node *ib_where(IrBuilder *b, Node *c, Node *x, Node *y);
/* rank-0 constant of dtype dt holding v (c64: v + 0i) */
Node *ib_scalar(IrBuilder *b, DType dt, double v);
/* splat constant of type t holding v */
Node *ib_fill(IrBuilder *b, Type t, double v);
Node *ib_reshape(IrBuilder *b, Node *x, int rank, const int64_t *dims);
Node *ib_reshape_as(IrBuilder *b, Node *x, const Type *t);
Node *ib_transpose(IrBuilder *b, Node *x, const int64_t *perm);
/* swap the last two axes */
Node *ib_mT(IrBuilder *b, Node *x);
Node *ib_expand(IrBuilder *b, Node *x, const Type *t);
Node *ib_reduce(IrBuilder *b, Op op, Node *x, const int64_t *axes, int k,
                bool keep);
Node *ib_narrow(IrBuilder *b, Node *x, int axis, int64_t start,
                int64_t len);
Node *ib_concat(IrBuilder *b, Node *const *parts, int n, int axis);
Node *ib_cast(IrBuilder *b, Node *x, DType to);
/* i64 constant vector holding v[0..n) */
Node *ib_i64s(IrBuilder *b, const int64_t *v, int64_t n);

/* Replace nodes of g. fn sees each old node after its operands were
 * redirected and returns its replacement (or the node itself to keep
 * it). The returned node must be an earlier node or one fn appended. */
typedef Node *(*RewriteFn)(IrBuilder *b, Node *n, void *ud);
void ib_rewrite(Ctx *c, Graph *g, RewriteFn fn, void *ud);
/* Keep only the nodes for which keep[id] is true (args are always
 * kept); order is preserved. */
void ib_filter(Ctx *c, Graph *g, const bool *keep);

/* Copy sub's nodes into b->g with sub's args bound to args[]; returns
 * an arena array of sub->nret copies of its return values. Names are
 * dropped (generated values get fresh numbers). */
Node **ib_inline(IrBuilder *b, const Graph *sub, Node *const *args);
/* Copy node n (from another graph) with operands in[]: same op,
 * attributes, type and constant data. */
Node *ib_clone(IrBuilder *b, const Node *n, Node *const *in);

/* A graph not yet in any module; attach it with ib_attach() once it is
 * complete, so subgraphs it uses are placed before it. */
Graph *ib_graph_detached(Ctx *c, const char *name, Loc loc);
Graph *ib_attach(Ctx *c, Module *m, Graph *g);
/* ib_attach, placed just before graph `user` (at the end if user is not
 * in m), so that user may reference it. */
Graph *ib_attach_before(Ctx *c, Module *m, Graph *g, const Graph *user);
/* A graph name not used in m, built from base. */
const char *ib_fresh_graph_name(Ctx *c, const Module *m, const char *base);

#endif
