/* emit.h: the op emitters (codegen/emit/), one file per op family,
 * above the LLVM building blocks (codegen/llvm/cg.h) and below the
 * entry-point builder (codegen/cg_unit.h).
 *
 * Emitter table. ir/ops.def names each op's emitter in its `emit`
 * column; table.c expands it into `[OP_ID] = &cg_emitter_E`, and the
 * declarations below come from the same column, so an op whose emitter
 * is not defined fails the build (an undefined reference at link time).
 * Each family file defines its emitters as
 *     const CgEmitter cg_emitter_E = {emit function, scratch or NULL};
 * Ops that are not compiled use cg_emitter_unsupported (a diagnostic
 * naming the op), ops a pass lowers before code generation
 * cg_emitter_lowered.
 *
 * An emitter reads operands with cg_buf/cg_elem_at, writes cg_buf(cg,
 * n), loops with cg_loop_* and cg_par_*, reports bad indices with
 * cg_check_index and unsupported cases with cg_unsupported. It asks the
 * plan for addresses (cg_slot, cg_buf, cg_scratch) and compiles
 * subgraphs with cg_graph_fn; it never calls the entry builder.
 */
#ifndef RLX_EMIT_H
#define RLX_EMIT_H

#include "codegen/llvm/cg.h"

/* ---- the emitter table (table.c) ---- */
typedef bool (*CgEmitFn)(Cg *cg, Node *n);
/* Scratch bytes node n needs while it runs (0: none, < 0: failed after
 * a diagnostic). May compile subgraphs (cg_graph_fn) to learn their
 * workspace sizes; cg->planning is the plan being built. */
typedef int64_t (*CgScratchFn)(Cg *cg, Node *n);
/* (Failure is -1. The emitters table.c lists give, when the bytes grow
 * with a symbol without a bound, a dim (a size expression) or
 * CG_SCRATCH_RT (computed at run time, cg_op_scratch_rt), which the plan
 * places at run time; other emitters' nodes must have bounded sizes,
 * cg_dyn_check.) */
/* Dynamic sizes (docs/dynamic-dims.md): NULL when the emitter compiles
 * n with the dynamic sizes of its type and operands, else what it
 * cannot take ("a dynamic size outside axis 0"). An emitter without
 * this function takes none: cg_dyn_check diagnoses the node first. */
typedef const char *(*CgDynFn)(const Node *n);
typedef struct {
  CgEmitFn emit;
  CgScratchFn scratch; /* NULL: none */
  CgDynFn dyn;         /* NULL: static sizes only */
} CgEmitter;

#define OP(id, name, nmin, nmax, flags, rule, vjp, jvp, emit, attrs, math) \
  extern const CgEmitter cg_emitter_##emit;
#include "ir/ops.def"
#undef OP
extern const CgEmitter cg_emitter_unsupported;

const CgEmitter *cg_op_entry(Op op);
/* Before planning a graph with dynamic sizes: may every node's emitter
 * take them (else a diagnostic naming the op, the value and why)? A
 * symbol without a bound also needs an emitter whose scratch memory,
 * if any, is not laid out for bounds (see CgScratchFn). */
bool cg_dyn_check(Cg *cg, Graph *g);
/* Scratch computed at run time: for a node whose scratch function gave
 * CG_SCRATCH_RT, code (where cg_dim reads the call's sizes) computing
 * the i64 bytes its emitter will use there; NULL for other ops. */
typedef LLVMValueRef (*CgScratchRtFn)(Cg *cg, Node *n);
CgScratchRtFn cg_op_scratch_rt(Op op);
LLVMValueRef cg_attention_scratch_rt(Cg *cg, Node *n);
LLVMValueRef cg_conv_scratch_rt(Cg *cg, Node *n);
LLVMValueRef cg_fft_scratch_rt(Cg *cg, Node *n);
LLVMValueRef cg_ssm_scratch_rt(Cg *cg, Node *n);
LLVMValueRef cg_qgemm_scratch_rt(Cg *cg, Node *n);
LLVMValueRef cg_gm_scratch_rt(Cg *cg, Node *n);
LLVMValueRef cg_control_scratch_rt(Cg *cg, Node *n); /* scan if while
                                                        custom_fn */

/* ---- run-time layouts (layout.c) ---- */
/* The layout function i64 (ptr hdr, ptr tab) of compiled graph g, whose
 * plan places blocks at run time (NULL when it places none): the
 * workspace bytes at hdr's sizes (-1 on overflow), the blocks' offsets
 * written to tab (the workspace's, at its plan's dyn_tab). */
LLVMValueRef cg_layout_fn(Cg *cg, Graph *g);
/* CgEmitter.dyn of an emitter that takes dynamic sizes in every axis. */
const char *cg_dyn_any(const Node *n);
/* Run n's emitter (skipping FUSED / FOLDED / ALIAS nodes and side
 * outputs, which their root's loop stores). */
bool cg_emit_node(Cg *cg, Node *n);
/* Install the hooks this layer serves to the one below (cg->fused_load,
 * loads of prologue-fused trees). Called before any emitter runs. */
void cg_emit_hooks(Cg *cg);

/* ---- elementwise (elementwise.c, elementwise_scalar.c) ---- */
/* Value of n (compute type) at multi-index idx[n->type.rank] (i64
 * values): loads from storage, or computes a FUSED elementwise tree. */
LLVMValueRef cg_elem_at(Cg *cg, Node *n, LLVMValueRef *idx);
/* n's value at flat element index idx (i64), `lanes` lanes (vector of
 * the compute type when lanes > 1). With lanes > 1 and a broadcast leaf
 * the lanes must lie in one row of n's innermost dim of size > 1
 * (fuse.c only builds prologues where vector loads do). The fused_load
 * hook. */
LLVMValueRef cg_fused_load(Cg *cg, Node *n, LLVMValueRef idx, int lanes);
/* The root n of an elementwise group at flat element index idx (one
 * lane), and the values there of the group's side outputs (fuse.c):
 * side[k] and sv[k], *nside of them (at most CG_MAX_GROUP_SIDES), in
 * the same order at every call for n. The caller stores them. */
LLVMValueRef cg_group_load(Cg *cg, Node *n, LLVMValueRef idx, Node **side,
                           LLVMValueRef *sv, int *nside);
/* Does the elementwise emitter compile n's op for its dtypes? (else a
 * diagnostic). One element of n from its operands' values v[]. */
bool cg_ew_check(Cg *cg, Node *n);
/* Is op an activation computed through exp (exp, tanh, sigmoid, silu,
 * gelu_tanh)? In f32 their long dependency chains leave a core mostly
 * idle at one vector a loop step: the elementwise loops (elementwise.c)
 * and the activation-backward loops (backward.c) give them more
 * independent vectors a step. */
bool cg_exp_chain(Op op);
LLVMValueRef cg_ew_op(Cg *cg, Node *n, LLVMValueRef *v);

/* ---- elementwise backward ops (backward.c) ---- */
/* Is k an activation_backward kind (relu, gelu, ..., atan)? */
bool cg_act_kind_known(const char *k);
/* dy * f'(x) for activation kind k (relu: x > 0 ? dy : 0), x and dy in
 * the compute type (scalars or vectors): the CPU emitter's formulas,
 * also used by the GPU target's kernel. */
LLVMValueRef cg_act_grad(Cg *cg, const char *kind, LLVMValueRef x,
                         LLVMValueRef dy);

/* ---- norms (norm.c) ---- */
/* Which norm a norm op belongs to and what it computes; false when op is
 * no norm op. Also used by the GPU target's kernels. */
enum { CG_NORM_LAYER, CG_NORM_RMS, CG_NORM_GROUP, CG_NORM_BATCH };
enum { CG_NORM_FWD, CG_NORM_DX, CG_NORM_GAMMA, CG_NORM_BETA };
bool cg_norm_op(Op op, int *kind, int *role);

/* ---- conv (conv.c), also q_conv2d's (qgemm.c) ---- */
/* The geometry of a conv node and its private constant global of 16
   i64. */
rlx_conv_geom cg_conv_geometry(const Node *n);
LLVMValueRef cg_conv_geometry_global(Cg *cg, const rlx_conv_geom *g);
/* n's geometry for its call: the constant global, or with a dynamic
 * batch a copy on the stack with n read at run time. */
LLVMValueRef cg_conv_geometry_call(Cg *cg, const Node *n);

/* ---- scan (control.c), also the GPU target's host loop ---- */
/* The length of scan n (-1: none). */
int64_t cg_scan_len(Node *n);
/* Pointers of iteration i of scan n: a[0] the carry read (init at
 * i = 0), a[k] operand k (row t of xs operands), *dst the carry
 * written (row t of out with save_trajectory, else out or tmp
 * alternately so that the last iteration writes out). */
void cg_scan_step(Cg *cg, Node *n, LLVMValueRef i, LLVMValueRef init,
                  LLVMValueRef *ins, LLVMValueRef out, LLVMValueRef tmp,
                  LLVMValueRef *a, LLVMValueRef *dst);

/* ---- kernels shared by forward and backward ops ---- */
/* cumsum kernel of node n (axis, exclusive attrs); rev: suffix sums
 * (cumsum_backward). reduce.c. */
bool cg_ops_cumsum(Cg *cg, Node *n, bool rev);
/* The dynamic sizes cumsum(_backward) takes (CgEmitter.dyn). reduce.c. */
const char *cg_cum_dyn(const Node *n);
/* Per row r of logits [N, C] (n->in[0]; labels n->in[1]); vals are
 * {out, logits, labels} body pointers: label (checked), row offset,
 * max m and sum s of exp(x - m). reduce.c. */
typedef struct {
  LLVMValueRef lab, off, m, s;
} XentRow;
void cg_ops_xent_row(Cg *cg, Node *n, LLVMValueRef *vals, LLVMValueRef r,
                     XentRow *X);
/* Scatter-add kernel: out [A, T, B] = 0, then for a, i in order:
 * out[a, idx[i], :] += upd[a, i, :] (upd [A, I, B]). data.c. */
bool cg_ops_scatter(Cg *cg, Node *n, Node *upd, Node *idx, int64_t a_c,
                    int64_t t_c, int64_t b_c);

#endif
