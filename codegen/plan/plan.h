/* plan.h: the target-independent plan of one graph function (the
 * lowest layer of codegen/, see docs/codegen.md).
 *
 * A plan says what each node of a Graph computes where, before any
 * target code exists: which nodes are computed inside another node's
 * loop (fusion groups, fuse.c; a returned one is also stored from that
 * loop: a side output), which transposes are folded into a
 * matmul's strides, which nodes alias another's bytes, and where every
 * other value lives (an input or output pointer, a constant, a
 * 64-byte aligned workspace offset with its live range, or in place
 * over a dying operand, memplan.c), plus each node's scratch area and
 * the attention groups (attention_groups.c). The schedule is the
 * graph's node order. Nothing here knows LLVM: a second target reads
 * the same plan. cg_plan_dump() prints it (--emit=plan).
 *
 * Owner: plans and their tables live in the compilation's IR arena.
 * Entry points, in the order a graph compiler calls them: cg_plan_new,
 * cg_attention_groups, cg_fuse, (the target's scratch sizes), cg_memplan.
 */
#ifndef RLX_CG_PLAN_H
#define RLX_CG_PLAN_H

#include <stdio.h>

#include "ir/ir.h"
#include "runtime/rlxrt.h"

/* ---- storage of one node ---- */
typedef enum {
  CG_SLOT_NONE,    /* not planned yet / not needed */
  CG_SLOT_INPUT,   /* inputs[index] */
  CG_SLOT_OUTPUT,  /* outputs[index] */
  CG_SLOT_WS,      /* workspace + offset */
  CG_SLOT_CONST,   /* global constant (non-splat consts) */
  CG_SLOT_ALIAS,   /* same bytes as node `alias` (reshape, ...) */
  CG_SLOT_FUSED,   /* elementwise: computed inside its consumer's loop */
  CG_SLOT_FOLDED,  /* transpose of the last two dims read by matmul */
  CG_SLOT_VIEW,    /* rows in place in another node's (alias) storage:
                      from byte offset, rows of alias's last dim
                      (views.c) */
  CG_SLOT_EPI,     /* stored through its one reader's elementwise
                      group (epilogues.c): each value goes through the
                      group's tree into its root's (store_as) storage */
} CgSlotKind;

typedef struct {
  CgSlotKind kind;
  int index;             /* INPUT / OUTPUT */
  int64_t offset;        /* WS; VIEW: bytes into alias's storage */
  Node *alias;           /* ALIAS (resolved: never itself an alias),
                            VIEW */
  int64_t scratch_off;   /* per-node scratch in the workspace, or -1 */
  int64_t scratch_bytes;
  int64_t def, last;     /* live range in node positions (memplan) */
  bool copy_out;         /* ret value not stored in place: copy it */
  bool uses_buf;         /* some consumer reads it through a buffer */
  Node *inplace_of;      /* WS elementwise root written over this leaf
                            (same shape and dtype, dies at the root) */
  Node *side_of;         /* side output (fuse.c): computed in this
                            root's loop like a FUSED node and stored
                            from it to its own storage (this slot's
                            kind); emits no code of its own */
  /* epilogues (epilogues.c): */
  Node *store_as;        /* CG_SLOT_EPI: the group root it stores */
  Node *stored_by;       /* that root: stored by this node's kernel; it
                            emits no code of its own */
  /* attention groups (attention_groups.c): */
  Node *attn_lead;       /* attention_backward written by this leader */
  /* forward/backward pairs (attention groups, cg_xent_pairs): */
  Node *fwd;             /* backward: the forward whose output and saved
                            row statistics it reads */
  int64_t saved_bytes;   /* forward: > 0 when it saves row statistics
                            (attention: lse; softmax_cross_entropy: max
                            and sum) in a block of its own */
  int64_t saved_off, saved_last; /* that block: offset; last reader */
  int64_t pitch;         /* > 0: a matrix's rows lie this many elements
                            apart in its storage (views.c), else dense */
} CgSlot;

/* Workspace offsets (CgSlot offset, scratch_off, saved_off): a byte
 * offset >= 0, or in a graph with sizes that have no bound, entry k of
 * its run-time layout, CG_OFF_DYN - k (cg_off_dyn: k, else -1). */
#define CG_OFF_DYN (-((int64_t)1 << 40))
static inline int cg_off_dyn(int64_t off) {
  return off <= CG_OFF_DYN ? (int)(CG_OFF_DYN - off) : -1;
}

/* A scratch request (cg_memplan's scratch[id]) whose bytes the node's
 * emitter computes at run time from the sizes (sizes without a bound:
 * a routine's formula, codegen/layout.c). */
#define CG_SCRATCH_RT INT64_MIN

/* The plan of one graph: slots indexed by Node.id. */
typedef struct CgPlan {
  Graph *g;
  Ctx *ctx;              /* its arena holds the plan's tables */
  CgSlot *slot;          /* g->next_id entries */
  int nslots;
  int64_t ws_bytes;      /* total workspace, multiple of 64 (with
                            ndyn blocks: up to where they start) */
  /* The run-time layout (docs/dynamic-dims.md, "Sizes without a
   * bound"): the ndyn blocks whose bytes grow with a symbol without a
   * bound, by definition: their bytes (dims, size expressions, or
   * CG_SCRATCH_RT: the node's scratch at run time) and live
   * ranges (def, last pairs). At each call the entry evaluates the bytes
   * into a table at dyn_tab (ndyn offsets, ndyn byte counts, ndyn words
   * of scratch) and rlx_ws_layout places them from dyn_base up. */
  int ndyn;
  int64_t *dyn_bytes, *dyn_range;
  Node **dyn_node;       /* CG_SCRATCH_RT bytes: the node, else NULL */
  int64_t dyn_tab, dyn_base;
  unsigned *seen;        /* fused-tree walks: node id -> epoch seen */
  unsigned epoch;
  void **target;         /* per node id: the target's own data (LLVM:
                            a constant's global), NULL until it sets it */
} CgPlan;

/* ---- plan.c ---- */
/* A fresh plan for g (arena memory): every slot CG_SLOT_NONE. */
CgPlan *cg_plan_new(Ctx *ctx, Graph *g);
/* n's slot (n a node of p's graph). */
CgSlot *cg_plan_slot(const CgPlan *p, const Node *n);
/* Is n computed by code emitted for another node (fused or folded into
 * it, an alias, a narrow read in place as a view, a side output, or
 * stored by another node's kernel)? Its emitter then runs nothing. */
bool cg_plan_elsewhere(const CgPlan *p, const Node *n);
/* Readers of each node id of g (arena_tmp memory), a returned value's
 * counted twice more: never a value's one reader. */
int *cg_use_counts(Arena *a, const Graph *g);
/* Bytes of n's storage (its type's, or its rows at its pitch). */
int64_t cg_plan_slot_bytes(const CgPlan *p, const Node *n);
/* Bytes rounded up to the plan alignment (64). */
int64_t cg_align(int64_t bytes);
/* Dynamic dimensions (docs/dynamic-dims.md): the workspace bytes below
 * every planned block, where the entry stores the symbols' values (0
 * in a module without symbols); the bytes a value of type t is planned
 * with (its bound for a dynamic type: every symbol must be bounded). */
int64_t cg_dim_header(void);
int64_t cg_plan_bytes(const Type *t);
/* Bytes of a block of type t (aligned) as a dim: a number when t is
 * bounded (cg_plan_bytes), else a size expression; -1 when the
 * expression cannot be formed (a diagnostic). */
int64_t cg_plan_bytes_dim(Ctx *c, const Type *t);
/* Ops compiled by the fused elementwise emitter: OPF_ELEMENTWISE ops
 * plus the elementwise complex ops (conjugate, real, imag, complex,
 * complex_norm_sq, complex_norm_sq_backward), quantize, dequantize. */
bool cg_is_elementwise(Op op);
bool cg_is_complex_op(Op op); /* the complex ops above */
bool cg_is_quant_op(Op op);   /* quantize, dequantize */
/* Walks over a fused tree that visit each FUSED node once: start one
 * with cg_walk_begin; cg_walk_first(n) is true the first time n is met
 * in it. One walk at a time per plan. */
void cg_walk_begin(CgPlan *plan);
bool cg_walk_first(CgPlan *plan, const Node *n);
/* Is n computed inside its consumers' loops? */
bool cg_is_fused(const CgPlan *plan, const Node *n);
/* Is n computed inside a root's loop: FUSED or a side output (which
 * also has storage)? Walks over a fused tree descend into both. */
bool cg_in_tree(const CgPlan *plan, const Node *n);
/* Row-major strides (in elements) of a type. */
void cg_strides(const Type *t, int64_t *strides);
/* Broadcast strides of operand type `in` read at out's multi-index
 * (stride 0 on stretched or missing leading dims). */
void cg_bcast_strides(const Type *in, const Type *out, int64_t *strides);

/* ---- attention_groups.c ---- */
/* Before fusion: gather the attention_backward nodes of one attention
 * (same operands and attributes, wrt q/k/v/bias) right after the first
 * of them, their leader, and link the leader to the forward attention
 * whose output and saved log-sum-exp it reuses (f32/f64, and f16/bf16
 * with half_lse: their lse in f32). */
void cg_attention_groups(CgPlan *p, Graph *g, bool half_lse);
/* Before cg_memplan (targets that use it: the GPU): link each
 * softmax_cross_entropy_backward to the forward of the same logits and
 * labels (f32, f64), which then saves its rows' max and sum (2 x rows
 * values) for it. */
void cg_xent_pairs(CgPlan *p, Graph *g);
/* After cg_fuse, before cg_memplan, for a target whose emitters of
 * these ops store their output only by cg_store at flat indices (the
 * GPU): a matmul, layer_norm, rms_norm, their backward_input or a
 * softmax_cross_entropy_backward read only inside one elementwise
 * group of its shape stores that group's values (CG_SLOT_EPI) instead
 * of its own: no buffer for it, no loop for the group. May move small
 * elementwise operands of the group before the op (the schedule). */
void cg_epilogues(CgPlan *p, Graph *g);
/* After cg_fuse, before cg_memplan, for a target whose attention
 * kernels address q-like and k-like rows with the operand's row pitch
 * (the GPU; the CPU's rlx_attn_geom.ld): a narrow along the last axis
 * read only as attention's q, k or v, and the q/k/v gradients of one
 * attention group read only by one concat along the last axis, are
 * views (CG_SLOT_VIEW) of the narrowed tensor and of the concat, which
 * the group's leader writes (stored_by): no copies. Without half_ok,
 * only for f32 and f64 attention (the CPU computes f16/bf16 attention
 * on dense f32 copies). */
void cg_views(CgPlan *p, Graph *g, bool half_ok);
/* The results of attention_backward leader n (after cg_memplan) by
 * wrt index (q k v bias), n included, NULL where not wanted. */
void cg_attn_members(const CgPlan *p, Node *n, Node *mem[4]);
/* The runtime geometry of a shape-checked attention or
 * attention_backward (b, lq and lk may be dynamic dims); its mask kind (RLX_ATTN_*); the operand an
 * attention_backward differentiates (q k v bias -> 0 1 2 3). */
rlx_attn_geom cg_attn_geometry(const Node *n);
/* The same with every dynamic size (b, lq, lk) at its bound: what the
 * plan reserves (docs/dynamic-dims.md). */
rlx_attn_geom cg_attn_geometry_bound(const Node *n);
int cg_attn_mask_kind(const Node *n);
int cg_attn_wrt(const Node *n);

/* ---- fuse.c ---- */
/* Mark FUSED / FOLDED / ALIAS nodes and side outputs (CgSlot.side_of)
 * of g in plan. A fused group (its root and the FUSED nodes and side
 * outputs computed in the root's loop) has at most
 * CG_MAX_GROUP_NODES nodes whose operand counts add up to at most
 * CG_MAX_GROUP_OPERANDS, so a root has at most that many leaves, and at
 * most CG_MAX_GROUP_SIDES side outputs. */
#define CG_MAX_GROUP_NODES 64
#define CG_MAX_GROUP_OPERANDS 128
#define CG_MAX_GROUP_SIDES 8 /* side outputs stored by one root's loop */
bool cg_fuse(Graph *g, CgPlan *plan);
/* Prologue fusion: is n (FUSED) computed inside the loads of a
 * reduction-family consumer (reduce_*, softmax and log_softmax over an
 * innermost axis, softmax_cross_entropy logits)? */
bool cg_fuse_prologue_ok(const Node *consumer, const Node *n);

/* ---- memplan.c ---- */
/* Place every remaining node; scratch[id] = bytes a node needs while it
 * runs (NULL: none). Sets live ranges and ws_bytes. */
bool cg_memplan(Graph *g, CgPlan *plan, const int64_t *scratch);

/* ---- dump.c ---- */
/* The plan as text (--emit=plan): fusion groups, each value's storage,
 * scratch areas and the workspace size, headed by fn_name (the function
 * compiled from it). */
void cg_plan_dump(FILE *f, const CgPlan *p, const char *fn_name);

#endif
