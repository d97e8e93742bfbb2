/* ad.h: internal interface of autodiff (passes/ad/: the reverse walk
 * grad.c, the VJP rules vjp_rules*.c, the tangent walk jvp.c, the
 * expansions and helpers both modes share) for the AD passes and the
 * lowering passes that reuse its helpers (passes/lower/).
 *
 * grad_into() is the core: it copies a source graph into a destination
 * graph (binding the source's arguments to given nodes), then walks the
 * source in reverse topological order and, for every node that has an
 * upstream gradient, emits its VJP rule (vjp_rules.c) into the
 * destination.
 * Gradients reaching one value are summed with `add`; a gradient whose
 * shape is a broadcast of its operand's shape is reduced back in one
 * place (grad_accum). Only values that depend on a target receive
 * gradients (activity analysis), so no work is spent on inputs nobody
 * asked about.
 */
#ifndef RLX_AD_H
#define RLX_AD_H

#include "ir/builder.h"
#include "passes/cleanup/cleanup.h"
#include "passes/passes.h"

/* The reverse walk (grad_into's signature, below). */
typedef bool (*GradWalk)(IrBuilder *b, Module *mod, const Graph *src,
                         Node *const *args, bool keep_names,
                         Node *const *seeds, Node *const *targets, int nt,
                         Node **grads, Node **fwd_out);

typedef struct GradCtx {
  IrBuilder b;        /* appends to the destination graph */
  Module *mod;        /* where generated subgraphs go */
  const Graph *src;
  Node **fwd;         /* src node id -> its copy in the destination */
  Node **adj;         /* src node id -> accumulated gradient, or NULL */
  bool *active;       /* src node id -> depends on a target */
  bool ok;            /* false once a rule reported a diagnostic */
  /* The whole reverse walk, installed by grad_into (grad.c): rules that
   * differentiate a detached graph (second-order VJPs, scan bodies)
   * call it through here, so no rule calls up into the walk. */
  GradWalk walk;
} GradCtx;

/* Copy src into b->g with src's args bound to args[] (keep_names: copy
 * value names too, for the top-level gradient graph), seed the
 * gradient of src's return i with seeds[i] (NULL: none), and compute
 * the gradient of every node in targets[0..nt). grads[k] receives the
 * gradient of targets[k] (NULL when none reaches it). fwd_out, when
 * non-NULL, receives the copies of src's return values. False when a
 * diagnostic was reported. */
bool grad_into(IrBuilder *b, Module *mod, const Graph *src,
               Node *const *args, bool keep_names, Node *const *seeds,
               Node *const *targets, int nt, Node **grads, Node **fwd_out);

/* Accumulate gradient g into operand `opnd` (a src node), reducing a
 * broadcast gradient to the operand's shape. Inactive or
 * non-differentiable operands are skipped (grad_accum.c). */
void grad_accum(GradCtx *gc, const Node *opnd, Node *g);
/* The destination copy of src node n. */
#define GV(gc, n) ((gc)->fwd[(n)->id])
/* Reduce g (a broadcast of type t) back to t: sum + reshape. */
Node *grad_unbroadcast(IrBuilder *b, Node *g, const Type *t);

/* The VJP rule of n's op: reads GV() of n and its operands, the
 * upstream gradient g, and calls grad_accum() per operand. */
bool vjp_apply(GradCtx *gc, const Node *n, Node *g);

/* Shared by the VJP and JVP rules (partials.c): the normalized axes of
 * reduction n (axes may be NULL) and its keep_dims type, returning the
 * axis count; the partial derivatives of reduce_prod n at x (x's
 * shape, exact with zeros); f''(x) of an activation_backward kind
 * (NULL where it is zero). */
int ad_reduce_axes(const Node *n, int64_t *axes, Type *kept);
Node *ad_prod_partials(IrBuilder *b, const Node *n, Node *x);
Node *ad_act_second(IrBuilder *b, const char *kind, Node *x, DType dt);

/* Closed forms re-expressed through ordinary ops (nn_expand.c,
 * attention_expand.c), for the second-order VJPs and the JVPs: n's value
 * built with b from operands a[] (n's operands' counterparts in b's
 * graph), for n a *_norm*_backward_* op, attention, or
 * attention_backward. */
Node *ad_norm_bwd_expand(IrBuilder *b, const Node *n, Node *const *a);
/* v summed over every axis but ax (a fixed-order reduction: the beta
 * gradient of a norm over axis ax). */
Node *ad_sum_but(IrBuilder *b, Node *v, int ax);
/* The normalized axis of a layer/rms norm node (its axis attribute,
 * negative counting from the end). */
int ad_norm_axis(const Node *n);
/* An attention node whose mask operand is an additive bias. */
bool ad_attention_has_bias(const Node *n);
Node *ad_attention_expand(IrBuilder *b, const Node *n, Node *const *a);
Node *ad_attention_bwd_expand(IrBuilder *b, const Node *n, Node *const *a);
/* Fake quantization (quant_expand.c): n's value through ordinary ops for
 * the five fake_quantize* ops; ad_quant_graph wraps it in a detached
 * graph over n's operands (args a0, a1, ...). ad_lsq_psi: ψ(x/S) of
 * lsq op n at x and scale s (x-shaped), times the LSQ gradient scale
 * when n has grad_scale. */
bool ad_is_fake_quant(Op op);
Node *ad_quant_expand(IrBuilder *b, const Node *n, Node *const *a);
Graph *ad_quant_graph(Ctx *c, const Node *n);
Node *ad_lsq_psi(IrBuilder *b, const Node *n, Node *x, Node *s);
/* A per-tensor scalar or [C] value of fake-quantization op n laid out
 * to broadcast against x: 1 on every axis but the channel axis. */
Node *ad_quant_lay(IrBuilder *b, const Node *n, Node *s);
/* n (selective_scan, gated_delta_net or fused_transformer_layer)
 * expanded into primitive ops with b from operands a[]; recurrence
 * bodies become graphs of m placed before b->g (fused_expand.c). */
Node *ad_fused_expand(IrBuilder *b, Module *m, const Node *n,
                      Node *const *a);
/* For max_pool2d or max_pool2d_backward n (its kernel, stride,
 * padding) with m = max_pool2d(x): per window, v (x-shaped) at the
 * window's first maximum of x in row-major order, m-shaped
 * (nn_expand.c; the VJP of max_pool2d_backward in dy, the JVP of
 * max_pool2d). */
Node *ad_max_pool_pick(IrBuilder *b, const Node *n, Node *x, Node *m,
                       Node *v);

/* Forward mode (jvp.c): copy src into b->g with src's args bound to
 * args[] (keep_names: value names too), give src node seed_at[k] the
 * tangent seed_tan[k] (replacing what flows into it), and propagate
 * tangents forward. prim_out / tan_out (either may be NULL) receive the
 * copies of src's return values and their tangents (NULL: zero). False
 * when a diagnostic was reported. */
bool jvp_into(IrBuilder *b, Module *mod, const Graph *src, Node *const *args,
              bool keep_names, const Node *const *seed_at,
              Node *const *seed_tan, int ns, Node **prim_out,
              Node **tan_out);

/* Reverse mode of a scan node (vjp_rules_scan.c). */
bool scan_vjp(GradCtx *gc, const Node *n, Node *g);
/* Helpers of the backward sweeps (vjp_rules_scan.c, lower_scan_bwd.c):
 * ad_scan: a scan of len steps over in[0..nin) with body `body`
 * (reverse / save_trajectory as asked); ad_scan_carries_in: the carries
 * entering m steps, [m, carry] in array order, from start (the carry
 * before the first step of the scan's order) and tr, the carries after
 * the first m-1 (or all m) steps in that order (rev: the order runs
 * t = m-1 ... 0); ad_section: [off, off+len) of v's last axis, shaped
 * like t (NULL: as is); ad_flat: v as a vector; ad_rows_of: [rows, t]. */
Node *ad_scan(IrBuilder *b, Graph *body, Node *const *in, int nin,
              int64_t len, bool rev, bool traj);
Node *ad_scan_carries_in(IrBuilder *b, Node *start, Node *tr, int64_t m,
                         bool rev);
Node *ad_section(IrBuilder *b, Node *v, int64_t off, int64_t len,
                 const Type *t);
Node *ad_flat(IrBuilder *b, Node *v);
Type ad_rows_of(const Type *t, int64_t rows);

/* The value of g named name (the first), or NULL. */
Node *ad_find_value(const Graph *g, const char *name);
/* Names of the wrt values in order: --wrt, else the entry's params. */
const char **ad_wrt_names(const Unit *u);


/* The AD working copy (working_copy.c): clone u->entry and the graphs it
 * references once (u->ad_entry, u->ad_graphs); later calls do nothing.
 * ad_drop_unused removes the clones the gradient graph does not use. */
void ad_working_copy(Unit *u);
void ad_drop_unused(Unit *u);
/* Run fn on every graph of the AD working copy (subgraphs first),
 * creating the copy on first use. */
bool ad_each_graph(Unit *u, bool (*fn)(Unit *u, Graph *g));
/* For --grad only: ib_rewrite every graph of the working copy with fn
 * (a preparation pass that cannot fail). */
bool ad_rewrite_each(Unit *u, RewriteFn fn);

#endif
