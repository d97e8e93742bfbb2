/* cg.h: the internal interface of the LLVM code generator.
 *
 * Owner: every LLVM object (context, module, builder, target machine)
 * is created by cg_new() and disposed by cg_free(), both called only by
 * cg_emit() / cg_write_header(). Emitters never dispose LLVM objects.
 *
 * Model. Each compiled Graph becomes an internal LLVM function with the
 * entry-point ABI `i32 f(ptr inputs, ptr outputs, ptr ws)` (ws never
 * NULL, at least the graph's workspace bytes, 64-byte aligned). Every
 * node of the graph has a CgSlot chosen by the memory plan (memplan.c)
 * after fusion (fuse.c): an input or output buffer, a workspace offset,
 * a constant global, an alias of another node (reshape), or nothing
 * (elementwise nodes computed inside their consumer's loop, transposes
 * folded into matmul strides). Emitters run in node order; emitter
 * for n writes n's storage, `cg_buf(cg, n)`, reading its operands'
 * storage with `cg_buf(cg, n->in[i])` or `cg_elem_at`.
 *
 * Errors at compile time: an emitter that cannot compile a node reports
 * a diagnostic through cg_unsupported()/diag_error() and returns false.
 * Errors at run time: cg_fail_if()/cg_check_index() branch to the
 * current function's error exit, which returns the code (RLX_ERR_*).
 *
 * Threads: cg_par_begin/cg_par_end outline a loop body into a task run
 * by rlx_parallel_for over independent iterations. Never split a
 * reduction across iterations of a parallel loop (determinism).
 *
 * Emitter table: emit.c builds `CgOpEntry[OP_COUNT]` from ir/ops.def by
 * X-macro: every op ID needs a macro CG_<ID> defined in emit_table.h
 * (core ops) or emit_table_ops.h (ops owned by the codegen-ops files),
 * so an op without an entry is a build error. Unsupported ops map to
 * CG_UNSUPPORTED, which reports "codegen: op 'NAME' is not supported".
 */
#ifndef RLX_CG_H
#define RLX_CG_H

#include "codegen/codegen.h"

#include <llvm-c/Core.h>
#include <llvm-c/Target.h>
#include <llvm-c/TargetMachine.h>

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
} CgSlotKind;

typedef struct {
  CgSlotKind kind;
  int index;             /* INPUT / OUTPUT */
  int64_t offset;        /* WS */
  Node *alias;           /* ALIAS (resolved: never itself an alias) */
  LLVMValueRef global;   /* CONST */
  int64_t scratch_off;   /* per-node scratch in the workspace, or -1 */
  int64_t scratch_bytes;
  int64_t def, last;     /* live range in node positions (memplan) */
  bool copy_out;         /* ret value not stored in place: copy it */
  bool uses_buf;         /* some consumer reads it through cg_buf */
  Node *inplace_of;      /* WS elementwise root written over this leaf
                            (same shape and dtype, dies at the root) */
  /* attention groups (emit_attention.c): */
  Node *attn_lead;       /* attention_backward written by this leader */
  Node *attn_fwd;        /* leader: the attention whose o and lse it reads */
  int64_t lse_bytes;     /* attention: > 0 when it saves its row lse */
  int64_t lse_off, lse_last; /* that block: offset; last reader */
} CgSlot;

/* The plan of one graph: slots indexed by Node.id. */
typedef struct CgPlan {
  Graph *g;
  Ctx *ctx;              /* its arena holds the plan's tables */
  CgSlot *slot;          /* g->next_id entries */
  int nslots;
  int64_t ws_bytes;      /* total workspace, multiple of 64 */
  unsigned *seen;        /* fused-tree walks: node id -> epoch seen */
  unsigned epoch;
} CgPlan;

/* ---- the function being emitted ---- */
typedef struct CgFn {
  LLVMValueRef fn;
  LLVMValueRef in, out, ws; /* the graph function's 3 pointers (copies
                               inside outlined bodies) */
  LLVMBasicBlockRef alloca_bb; /* entry block: allocas go here */
  LLVMBasicBlockRef err_bb;    /* returns the i32 in status */
  LLVMValueRef status;         /* alloca i32 */
  CgPlan *plan;                /* of the enclosing graph function */
  bool can_fail;               /* set by cg_fn_finish: a path returns
                                  the status (else it returns 0) */
} CgFn;

/* Cached compiled subgraph. */
typedef struct CgSub {
  Graph *g;
  LLVMValueRef fn;
  int64_t ws_bytes;
  struct CgSub *next;
} CgSub;

#define CG_MAX_FSRC 16
typedef struct Cg {
  Ctx *ctx;
  Unit *u;                  /* may be NULL in unit tests */
  LLVMContextRef lc;
  LLVMModuleRef mod;
  LLVMBuilderRef b;
  LLVMTargetMachineRef tm;
  LLVMTargetDataRef td;
  char *triple, *cpu, *features; /* LLVM-allocated (disposed by cg_free) */
  const char *cpu_needs;    /* extensions checked at the first call */
  int opt_level;
  bool avx512;              /* target has avx512f: prefer zmm */
  /* types */
  LLVMTypeRef t_void, t_i1, t_i8, t_i16, t_i32, t_i64;
  LLVMTypeRef t_f16, t_f32, t_f64, t_ptr, t_c64; /* c64: <2 x float> */
  LLVMTypeRef t_graph_fn;   /* i32 (ptr, ptr, ptr) */
  LLVMTypeRef t_task_fn;    /* void (ptr, i64, i64) */
  CgFn *fn;                 /* current function */
  CgSub *subs;              /* compiled subgraphs (cg_graph_fn cache) */
  struct CgPlan *planning; /* the plan plan_graph() is building (what
                              scratch functions may read), or NULL */
  int uniq;                 /* counter for unique symbol names */
  bool failed;              /* a diagnostic was reported */
  /* Prologue fusion (emit_elementwise.c): pointers standing for a FUSED
   * producer read by a reduction; loads through them compute it. */
  struct { Node *n; LLVMValueRef p; } fsrc[CG_MAX_FSRC];
  int nfsrc;
  struct CgBody **bodies; /* loops.c: shared loop bodies (cg_par_keep) */
  struct CgDispatch *dispatch; /* calltable.c: dispatch functions */
} Cg;

/* ---- lifetime (llvm.c) ---- */
/* Create context, module and target machine from u->opt (target, mcpu,
 * opt level); NULL options mean host defaults. NULL on failure (with a
 * diagnostic on ctx). */
Cg *cg_new(Ctx *ctx, Unit *u, const char *module_name);
void cg_free(Cg *cg);
/* Run the optimization pipeline (default<On>) and verify the module. */
bool cg_optimize(Cg *cg);
/* Stage the module as object / assembly / LLVM IR text for path in out
 * (codegen/output.h); nothing is on disk before out_finish. */
struct OutSet;
bool cg_write_obj(Cg *cg, struct OutSet *out, const char *path,
                  bool assembly);
bool cg_write_ll(Cg *cg, struct OutSet *out, const char *path);
/* Add the target attributes every generated function carries. */
void cg_fn_attrs(Cg *cg, LLVMValueRef fn);
/* The attributes of the exported wrappers: the architecture's baseline
 * CPU, so that the CPU check runs on any CPU of the architecture. */
void cg_fn_attrs_baseline(Cg *cg, LLVMValueRef fn);
/* Whether the target machine enables the LLVM feature `name`, implied
 * ones included (target_features.cpp). */
bool cg_tm_has_feature(LLVMTargetMachineRef tm, const char *name);

/* ---- compiling graphs (abi.c) ---- */
/* Nodes that emit code per segment function of a large graph. */
#define CG_SEGMENT_NODES 128
/* Compile g as an internal function `i32 f(ptr in, ptr out, ptr ws)`
 * (cached per Graph). *ws_bytes gets the workspace it needs. NULL after
 * a diagnostic. Saves and restores the caller's builder position, so it
 * may be called while emitting another function. Outputs must not
 * overlap inputs or each other. */
LLVMValueRef cg_graph_fn(Cg *cg, Graph *g, int64_t *ws_bytes);
/* Call a graph function with arrays built from the given pointers;
 * a non-zero result branches to the current error exit. */
void cg_call_graph_fn(Cg *cg, LLVMValueRef fn, LLVMValueRef *ins, int nin,
                      LLVMValueRef *outs, int nout, LLVMValueRef ws);
/* Start emitting function fn (params in, out, ws first): entry block
 * for allocas, status slot, error exit; makes f current. */
void cg_fn_begin(Cg *cg, CgFn *f, LLVMValueRef fn, CgPlan *plan);
/* The current block returns 0; the error exit returns the status (it is
 * deleted when no path reaches it; f->can_fail says which). */
void cg_fn_finish(Cg *cg);
/* Exported entry point NAME (NULL workspace -> rlx_alloc/rlx_free)
 * around the graph function, plus NAME_signature(). */
bool cg_entry(Cg *cg, Graph *g, const char *name, int64_t *ws_bytes);

/* Name of argument/return value n at position j: its name, else
 * "output<j>" written into buf (at least 64 bytes). */
const char *cg_out_name(const Node *n, int j, char *buf);

/* ---- storage of nodes ---- */
/* Pointer to n's storage in the current function (inputs, outputs,
 * workspace slot, constant global; aliases resolved). n must not be
 * FUSED or FOLDED. */
LLVMValueRef cg_buf(Cg *cg, Node *n);
/* Pointer to n's scratch area (requested by its table scratch fn). */
LLVMValueRef cg_scratch(Cg *cg, Node *n);
CgSlot *cg_slot(Cg *cg, Node *n);
/* Value of n (compute type) at multi-index idx[n->type.rank] (i64
 * values): loads from storage, or computes a FUSED elementwise tree. */
LLVMValueRef cg_elem_at(Cg *cg, Node *n, LLVMValueRef *idx);

/* ---- values and types (llvm.c) ---- */
/* Storage type of one element (f16/bf16 -> i16, bool -> i8, c64 ->
 * <2 x float>) and compute type (f16/bf16 -> float, bool -> i1). */
LLVMTypeRef cg_stype(Cg *cg, DType dt);
LLVMTypeRef cg_ctype(Cg *cg, DType dt);
LLVMValueRef cg_i64(Cg *cg, int64_t v);
LLVMValueRef cg_i32(Cg *cg, int32_t v);
/* Constant of dt's compute type with value v (c64: (v, 0)). */
LLVMValueRef cg_const(Cg *cg, DType dt, double v);
/* Element idx (i64) of a dt buffer at base, in compute type. */
LLVMValueRef cg_load(Cg *cg, DType dt, LLVMValueRef base, LLVMValueRef idx);
/* Element i of a const node as a constant of its compute type. */
LLVMValueRef cg_const_elem(Cg *cg, const Node *n, int64_t i);
void cg_store(Cg *cg, DType dt, LLVMValueRef base, LLVMValueRef idx,
              LLVMValueRef v);
/* Convert a compute-type value between dtypes with cast semantics
 * (float->int truncates and saturates, NaN->0; x->bool is x != 0). */
LLVMValueRef cg_convert(Cg *cg, LLVMValueRef v, DType from, DType to);
/* f16/bf16: round an f32 compute value to the dtype (nearest even) and
 * back; other dtypes: v unchanged. */
LLVMValueRef cg_round_dt(Cg *cg, DType dt, LLVMValueRef v);
/* Pointer arithmetic: base + off bytes (off i64 value). */
LLVMValueRef cg_gep(Cg *cg, LLVMValueRef base, LLVMValueRef off);
/* alloca in the current function's entry block. */
LLVMValueRef cg_alloca(Cg *cg, LLVMTypeRef t, const char *name);
/* Call a runtime / libm function by name, declared on first use with
 * the argument types of args. */
LLVMValueRef cg_call(Cg *cg, const char *name, LLVMTypeRef ret,
                     LLVMValueRef *args, int nargs);
/* Call an overloaded intrinsic ("llvm.sqrt") on type t. */
LLVMValueRef cg_intrinsic(Cg *cg, const char *name, LLVMTypeRef t,
                          LLVMValueRef *args, int nargs);
void cg_memcpy(Cg *cg, LLVMValueRef dst, LLVMValueRef src, int64_t bytes);
void cg_memset0(Cg *cg, LLVMValueRef dst, int64_t bytes);
LLVMBasicBlockRef cg_block(Cg *cg, const char *name); /* in current fn */

/* ---- run-time errors ---- */
/* If cond (i1) is true, return code from the current function. */
void cg_fail_if(Cg *cg, LLVMValueRef cond, int code);
/* code (i32) non-zero -> return it from the current function. */
void cg_fail_if_nonzero(Cg *cg, LLVMValueRef code);
/* idx (i64, signed) outside [0, bound) -> return RLX_ERR_INDEX. */
void cg_check_index(Cg *cg, LLVMValueRef idx, LLVMValueRef bound);

/* ---- loops (loops.c) ---- */
#define CG_MAX_CARRY 8
typedef struct {
  LLVMBasicBlockRef pre, body, exit;
  LLVMValueRef idx, end;
  int nc;
  LLVMValueRef init[CG_MAX_CARRY], phi[CG_MAX_CARRY];
} CgLoop;
/* Mark fn noinline (outlined bodies and segments stay separate). */
void cg_noinline(Cg *cg, LLVMValueRef fn);
/* Runs of calls in segment fn become tables walked by dispatch
 * functions (calltable.c). True when fn is left with nothing but those
 * calls: they are then re-emitted at the builder's position, with the
 * current function's (inputs, outputs, ws), and fn can be deleted. */
bool cg_call_tables(Cg *cg, LLVMValueRef fn);
/* Mark a noinline fn optnone: not optimized, compiled as at -O0. */
void cg_optnone(Cg *cg, LLVMValueRef fn);
/* for (i = begin; i < end; i++) with nc loop-carried values: carry[]
 * holds initial values and is replaced by the phis. Returns i (i64).
 * The body may create blocks freely. */
LLVMValueRef cg_loop_begin(Cg *cg, CgLoop *l, LLVMValueRef begin,
                           LLVMValueRef end, LLVMValueRef *carry, int nc);
/* carry[] in: next values; out: values after the loop (the initial
 * values when it ran zero times). */
void cg_loop_end(Cg *cg, CgLoop *l, LLVMValueRef *carry);

/* Outlined loop over [0, n): the body becomes a separate function run
 * by rlx_parallel_for in chunks of at least `grain` iterations
 * (grain <= 0: called once serially over [0, n)). vals[0..nv) are
 * values of the current function the body needs; on return they are
 * replaced by the body's copies (use only those inside). cg_buf,
 * cg_fail_if and cg_check_index work inside (an error code set by any
 * chunk is returned after the loop). noalias: pointer vals are declared
 * noalias (the caller promises that memory written through one is not
 * accessed through another). Returns the index (i64). Do not nest
 * another cg_par_begin inside. */
#define CG_MAX_PAR_VALS 48
typedef struct {
  CgFn *outer_fn, body_fn;
  LLVMBasicBlockRef outer_bb;
  LLVMValueRef outer_vals[CG_MAX_PAR_VALS];
  int nv;
  LLVMValueRef n;
  int64_t grain;
  LLVMValueRef body;   /* the outlined function */
  CgLoop loop;
  int nfsrc0;          /* cg->nfsrc before the body's bindings */
} CgPar;
LLVMValueRef cg_par_begin(Cg *cg, CgPar *p, LLVMValueRef n, int64_t grain,
                          LLVMValueRef *vals, int nv, bool noalias);
void cg_par_end(Cg *cg, CgPar *p);
/* Call an outlined body built before (p.body after cg_par_end, whose
 * p.body_fn.can_fail is passed) again, with other vals: the same call
 * cg_par_end makes. */
void cg_par_call(Cg *cg, LLVMValueRef body, bool can_fail, LLVMValueRef n,
                 int64_t grain, const LLVMValueRef *vals, int nv);
/* Loop bodies shared between nodes: an emitter whose outlined body is a
 * function of a few numbers (shape, strides, dtypes, attributes) and of
 * nodes compared by ir_node_same_local describes it by a CgKey (key[0]
 * a CG_BODY_* tag naming the emitter). cg_par_shared calls the body
 * kept for an equal key (cg_par_call) and returns true, or returns
 * false: the caller builds the body (cg_par_begin ... cg_par_end) and
 * keeps it with cg_par_keep. Bodies reading a prologue (cg_fused_src)
 * are never shared. A layer repeated 10^4 times, forward and
 * backward, then builds each of its loops once. */
enum { CG_BODY_ELEMENTWISE = 1, CG_BODY_REDUCE, CG_BODY_FILL };
typedef struct {
  const int64_t *key;
  const Node *const *cmp;
  int nkey, ncmp;
} CgKey;
bool cg_par_shared(Cg *cg, const CgKey *k, LLVMValueRef n, int64_t grain,
                   const LLVMValueRef *vals, int nv);
void cg_par_keep(Cg *cg, const CgKey *k, const CgPar *p);
/* A grain giving chunks of about 32K elements of work per iteration
 * cost `per_iter` (elements touched per iteration); <= 0 (serial) when
 * the whole loop is too small to be worth threads. */
int64_t cg_grain(int64_t n, int64_t per_iter);

/* Row-major strides (in elements) of a type. */
void cg_strides(const Type *t, int64_t *strides);
/* Broadcast strides of operand type `in` read at out's multi-index
 * (stride 0 on stretched or missing leading dims). */
void cg_bcast_strides(const Type *in, const Type *out, int64_t *strides);

/* ---- emitters (emit.c and emit_*.c) ---- */
typedef bool (*CgEmitFn)(Cg *cg, Node *n);
/* Scratch bytes node n needs while it runs (0: none). May compile
 * subgraphs (cg_graph_fn) to learn their workspace sizes. */
typedef int64_t (*CgScratchFn)(Cg *cg, Node *n);
typedef struct {
  CgEmitFn emit;
  CgScratchFn scratch; /* NULL: none */
} CgOpEntry;
const CgOpEntry *cg_op_entry(Op op);
/* Run n's emitter (skipping FUSED / FOLDED / ALIAS nodes). */
bool cg_emit_node(Cg *cg, Node *n);
/* Report "codegen: op 'NAME' is not supported[: why]" and fail. */
bool cg_unsupported(Cg *cg, Node *n, const char *why);

/* Core emitters (emit_table.h). */
bool cg_emit_nothing(Cg *cg, Node *n);     /* input, param */
bool cg_emit_const(Cg *cg, Node *n);
bool cg_emit_elementwise(Cg *cg, Node *n); /* root of a fused group */
bool cg_emit_alias(Cg *cg, Node *n);       /* reshape: shares bytes */
bool cg_emit_matmul(Cg *cg, Node *n);
int64_t cg_scratch_matmul(Cg *cg, Node *n); /* f16/bf16: f32 copies */
/* dst[i] = convert(src[i]) for i < count, an outlined parallel loop:
 * the f32 copies of f16/bf16 operands and results around a runtime
 * call (emit_matmul.c, emit_conv.c). */
void cg_convert_loop(Cg *cg, LLVMValueRef dst, DType ddt, LLVMValueRef src,
                     DType sdt, int64_t count);
bool cg_emit_solve(Cg *cg, Node *n);        /* (batched_)dense_solve */
int64_t cg_scratch_solve(Cg *cg, Node *n);
bool cg_emit_unsupported(Cg *cg, Node *n);
/* The table entry of the ops the passes lower before code generation
 * (emit.c). */
bool cg_emit_lowered(Cg *cg, Node *n);
bool cg_emit_fft(Cg *cg, Node *n); /* fft (emit_fft.c) */
int64_t cg_scratch_fft(Cg *cg, Node *n);

/* attention and attention_backward (emit_attention.c). Before fusion,
 * cg_attention_groups() gathers the attention_backward nodes of one
 * attention (same operands and attributes, wrt q/k/v/bias) right after
 * the first of them, their leader, and links the leader to the forward
 * attention whose output and saved log-sum-exp it reuses. */
void cg_attention_groups(CgPlan *p, Graph *g);
bool cg_emit_attention(Cg *cg, Node *n);
int64_t cg_scratch_attention(Cg *cg, Node *n);

/* ---- fusion and memory planning ---- */
/* Ops compiled by the fused elementwise emitter: OPF_ELEMENTWISE ops
 * plus the elementwise complex ops (conjugate, real, imag, complex,
 * complex_norm_sq, complex_norm_sq_backward), quantize, dequantize. */
bool cg_is_elementwise(Op op);
/* Mark FUSED / FOLDED / ALIAS nodes of g in plan (fuse.c). A fused
 * group (its root and the FUSED nodes computed in the root's loop) has
 * at most CG_MAX_GROUP_NODES nodes whose operand counts add up to at
 * most CG_MAX_GROUP_OPERANDS, so a root has at most that many leaves. */
#define CG_MAX_GROUP_NODES 64
#define CG_MAX_GROUP_OPERANDS 128
bool cg_fuse(Graph *g, CgPlan *plan);
/* Walks over a fused tree that visit each FUSED node once: start one
 * with cg_walk_begin; cg_walk_first(n) is true the first time n is met
 * in it. One walk at a time per plan. */
void cg_walk_begin(CgPlan *plan);
bool cg_walk_first(CgPlan *plan, const Node *n);
/* Prologue fusion: is n (FUSED) computed inside the loads of a
 * reduction-family consumer (reduce_*, softmax and log_softmax over an
 * innermost axis, softmax_cross_entropy logits)? */
bool cg_fuse_prologue_ok(const Node *consumer, const Node *n);
/* A pointer standing for FUSED node n (cg_buf of a prologue): loads
 * through it (cg_load, cg_ops_vload, also inside outlined bodies that
 * receive it) compute n's fused tree at the flat element index. Never
 * stored through or offset by anything but those loads. */
LLVMValueRef cg_fused_src(Cg *cg, Node *n);
/* The FUSED node bound to pointer p, or NULL. */
Node *cg_fused_src_of(Cg *cg, LLVMValueRef p);
/* n's value at flat element index idx (i64), `lanes` lanes (vector of
 * the compute type when lanes > 1). With lanes > 1 and a broadcast leaf
 * the lanes must lie in one row of n's innermost dim of size > 1
 * (fuse.c only builds prologues where vector loads do). */
LLVMValueRef cg_fused_load(Cg *cg, Node *n, LLVMValueRef idx, int lanes);
/* Is n computed inside its consumers' loops? */
bool cg_is_fused(const CgPlan *plan, const Node *n);
/* Place every remaining node (memplan.c); scratch[id] = bytes a node
 * needs while it runs (NULL: none). Sets live ranges and ws_bytes. */
bool cg_memplan(Graph *g, CgPlan *plan, const int64_t *scratch);
/* A fresh plan for g (arena memory): every slot CG_SLOT_NONE. */
CgPlan *cg_plan_new(Ctx *ctx, Graph *g);
/* Bytes rounded up to the plan alignment (64). */
int64_t cg_align(int64_t bytes);

#endif
