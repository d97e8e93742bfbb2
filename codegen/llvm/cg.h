/* cg.h: the LLVM building blocks of code generation (codegen/llvm/):
 * the Cg context, element values, functions and run-time errors,
 * storage addresses from the plan, loops, vectors, folds, math and
 * copies. Above the plan (codegen/plan/plan.h), below the op emitters
 * (codegen/emit/emit.h) and the entry-point builder (codegen/).
 *
 * Owner: every LLVM object (context, module, builder, target machine)
 * is created by cg_new() and disposed by cg_free(), both called only by
 * the entry builder (codegen.c). Helpers here never dispose LLVM
 * objects.
 *
 * Model. Each compiled Graph becomes an internal LLVM function with the
 * entry-point ABI `i32 f(ptr inputs, ptr outputs, ptr ws)` (ws never
 * NULL, at least the graph's workspace bytes, 64-byte aligned). Every
 * node of the graph has a CgSlot chosen by the plan: an input or output
 * buffer, a workspace offset, a constant global, an alias of another
 * node (reshape), or nothing (elementwise nodes computed inside their
 * consumer's loop, transposes folded into matmul strides). Emitters run
 * in node order; emitter for n writes n's storage, `cg_buf(cg, n)`,
 * reading its operands' storage with `cg_buf(cg, n->in[i])` or
 * `cg_elem_at`.
 *
 * Hooks. Two things this layer needs are defined above it and reached
 * through function pointers in Cg, installed before any emitter runs:
 * the loads of a prologue-fused tree (fused_load, installed by the
 * emitter layer: cg_emit_hooks) and the compilation of a subgraph
 * (graph_fn, installed by the entry builder's graph compiler). So no
 * file here calls upward.
 *
 * Errors at compile time: code that cannot compile a node reports a
 * diagnostic through cg_unsupported()/diag_error() and returns false.
 * Errors at run time: cg_fail_if()/cg_check_index() branch to the
 * current function's error exit, which returns the code (RLX_ERR_*).
 *
 * Threads: cg_par_begin/cg_par_end outline a loop body into a task run
 * by rlx_parallel_for over independent iterations. Never split a
 * reduction across iterations of a parallel loop (determinism).
 *
 * Conventions of the vector helpers: element offsets and counts are i64
 * LLVM values unless named *_c (compile-time int64_t). "lanes" is a
 * vector width in elements: 1 means scalar code in the dtype's compute
 * type (cg_load/cg_store, so f16/bf16/bool work), >1 means native
 * vectors, only for f32/f64/integer storage types (see cg_ops_lanes).
 */
#ifndef RLX_CG_H
#define RLX_CG_H

#include "codegen/codegen.h"
#include "codegen/plan/plan.h"
#include "runtime/rlxrt.h"

#include <llvm-c/Core.h>
#include <llvm-c/Target.h>
#include <llvm-c/TargetMachine.h>

/* ---- the function being emitted ---- */
typedef struct CgFn {
  LLVMValueRef fn;
  LLVMValueRef in, out, ws; /* the graph function's 3 pointers (copies
                               inside outlined bodies) */
  LLVMValueRef sizes;       /* the symbols' values (i64 each, numbered as
                               dim_nsyms), then the run-time layout's
                               offsets (storage.c), or NULL: in ws's
                               header and table (the GPU's kernels and
                               host code: dims.c) */
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
  CgPlan *plan;          /* its plan (--emit=plan) */
  LLVMValueRef layout;   /* its run-time layout function (emit/layout.c),
                            NULL until made */
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
  bool fma;                 /* target has a fused multiply-add (x86 fma,
                               AArch64, NVPTX): math.c's polynomials use it */
  /* types */
  LLVMTypeRef t_void, t_i1, t_i8, t_i16, t_i32, t_i64;
  LLVMTypeRef t_f16, t_f32, t_f64, t_ptr, t_c64; /* c64: <2 x float> */
  LLVMTypeRef t_graph_fn;   /* i32 (ptr, ptr, ptr) */
  LLVMTypeRef t_task_fn;    /* void (ptr, i64, i64) */
  CgFn *fn;                 /* current function */
  CgSub *subs;              /* compiled graphs (graph_fn.c's cache) */
  struct CgPlan *planning; /* the plan plan_graph() is building (what
                              scratch functions may read), or NULL */
  int uniq;                 /* counter for unique symbol names */
  bool failed;              /* a diagnostic was reported */
  /* Prologue fusion (prologue.c, emit/elementwise.c): pointers standing
   * for a FUSED producer read by a reduction; loads through them
   * compute it. */
  struct {
    Node *n;
    LLVMValueRef p;
    Node *root;          /* a CG_SLOT_EPI op's: its group root and the */
    LLVMValueRef root_p; /* root's storage (cg_epi_bind); else NULL */
  } fsrc[CG_MAX_FSRC];
  int nfsrc;
  /* A CG_SLOT_EPI op's value while cg_store evaluates its epilogue: a
   * load through that op's marker gives epi_val. */
  Node *epi_op;
  LLVMValueRef epi_val;
  struct CgBody **bodies; /* loops.c: shared loop bodies (cg_par_keep) */
  /* Hooks (see above): n's value at flat element index idx, `lanes`
   * lanes (cg_fused_load, emit/elementwise.c); compile a graph
   * (cg_compile_graph, graph_fn.c). */
  LLVMValueRef (*fused_load)(struct Cg *cg, Node *n, LLVMValueRef idx,
                             int lanes);
  LLVMValueRef (*graph_fn)(struct Cg *cg, Graph *g, int64_t *ws_bytes);
  /* the run-time layout function of a compiled graph (emit/layout.c) */
  LLVMValueRef (*layout_fn)(struct Cg *cg, Graph *g);
  /* the bytes of a CG_SCRATCH_RT scratch area in a run-time layout:
   * NULL for the op's emitter's (cg_op_scratch_rt), or the target's
   * (--target=cuda: its control-flow nodes, codegen/cuda/control.c) */
  LLVMValueRef (*scratch_rt)(struct Cg *cg, Node *n);
  struct CgDispatch *dispatch; /* calltable.c: dispatch functions */
} Cg;

/* ---- dynamic sizes (dims.c) ---- */
/* The value of size d (static: a constant; dynamic: evaluated from the
 * symbols stored at the workspace's start), element count and bytes of
 * t. */
LLVMValueRef cg_dim(Cg *cg, int64_t d);
/* The same in checked arithmetic: *ovf (NULL or an i1) gets or-ed with
 * whether a product or sum overflowed (sizes without a bound). */
LLVMValueRef cg_dim_checked(Cg *cg, int64_t d, LLVMValueRef *ovf);
LLVMValueRef cg_numel(Cg *cg, const Type *t);
/* Run-time bytes rounded up to a multiple of 64 (cg_align's). */
LLVMValueRef cg_align_rt(Cg *cg, LLVMValueRef bytes);
LLVMValueRef cg_bytes(Cg *cg, const Type *t);
/* Copy or zero the bytes of t (dynamic sizes read at run time). */
void cg_copy_bytes(Cg *cg, LLVMValueRef dst, LLVMValueRef src,
                   const Type *t);
void cg_zero_bytes(Cg *cg, LLVMValueRef dst, const Type *t);
/* v * d for a size d (static: cg_mul_c). */
LLVMValueRef cg_mul_dim(Cg *cg, LLVMValueRef v, int64_t d);
/* cg_ops_split_axis for any sizes: outer, n and inner as sizes
 * (products of dynamic ones are size expressions). */
void cg_split_axis_dim(Cg *cg, const Type *t, int64_t axis, int64_t *outer,
                       int64_t *n, int64_t *inner);
/* cg_strides for any sizes: the strides of dense t as sizes. */
void cg_strides_dim(Cg *cg, const Type *t, int64_t *strides);
/* cg_bcast_strides for any sizes: strides as sizes. */
void cg_bcast_strides_dim(Cg *cg, const Type *in, const Type *out,
                          int64_t *strides);
/* Is every dynamic size of t in axis 0? */
bool cg_dyn_leading(const Type *t);
/* Why rows of n's `axis` attribute over t cannot take t's dynamic sizes
 * (dynamic only before the row axis, which is static and the last
 * non-1 axis), or NULL when they can. */
const char *cg_dyn_rows(const Node *n, const Type *t);

/* ---- lifetime and target (context.c) ---- */
/* Create context, module and target machine from u->opt (target, mcpu,
 * opt level); NULL options mean host defaults. NULL on failure (with a
 * diagnostic on ctx). */
Cg *cg_new(Ctx *ctx, Unit *u, const char *module_name);
void cg_free(Cg *cg);
/* Add the target attributes every generated function carries. */
void cg_fn_attrs(Cg *cg, LLVMValueRef fn);
/* The attributes of the exported wrappers: the architecture's baseline
 * CPU, so that the CPU check runs on any CPU of the architecture. */
void cg_fn_attrs_baseline(Cg *cg, LLVMValueRef fn);
/* Whether the target machine enables the LLVM feature `name`, implied
 * ones included (target_features.cpp). */
bool cg_tm_has_feature(LLVMTargetMachineRef tm, const char *name);
/* ---- types and constants (types.c); element values (elements.c) ---- */
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
/* ---- calls (calls.c) ---- */
/* Call a runtime / libm function by name, declared on first use with
 * the argument types of args. */
LLVMValueRef cg_call(Cg *cg, const char *name, LLVMTypeRef ret,
                     LLVMValueRef *args, int nargs);
/* Call an overloaded intrinsic ("llvm.sqrt") on type t. */
LLVMValueRef cg_intrinsic(Cg *cg, const char *name, LLVMTypeRef t,
                          LLVMValueRef *args, int nargs);
void cg_memcpy(Cg *cg, LLVMValueRef dst, LLVMValueRef src, int64_t bytes);
void cg_memset0(Cg *cg, LLVMValueRef dst, int64_t bytes);
/* The same with the intrinsic's overload types tys[0..nt). */
LLVMValueRef cg_intrinsic_n(Cg *cg, const char *name, LLVMTypeRef *tys,
                            int nt, LLVMValueRef *args, int nargs);

/* ---- functions and run-time errors (function.c) ---- */
/* Start emitting function fn (params in, out, ws first): entry block
 * for allocas, status slot, error exit; makes f current. */
void cg_fn_begin(Cg *cg, CgFn *f, LLVMValueRef fn, CgPlan *plan);
/* The current block returns 0; the error exit returns the status (it is
 * deleted when no path reaches it; f->can_fail says which). */
void cg_fn_finish(Cg *cg);
/* Mark fn noinline (outlined bodies and segments stay separate). */
void cg_noinline(Cg *cg, LLVMValueRef fn);
/* Mark a noinline fn optnone: not optimized, compiled as at -O0. */
void cg_optnone(Cg *cg, LLVMValueRef fn);
/* alloca in the current function's entry block. */
LLVMValueRef cg_alloca(Cg *cg, LLVMTypeRef t, const char *name);
LLVMBasicBlockRef cg_block(Cg *cg, const char *name); /* in current fn */
/* If cond (i1) is true, return code from the current function. */
void cg_fail_if(Cg *cg, LLVMValueRef cond, int code);
/* code (i32) non-zero -> return it from the current function. */
void cg_fail_if_nonzero(Cg *cg, LLVMValueRef code);
/* idx (i64, signed) outside [0, bound) -> return RLX_ERR_INDEX. */
void cg_check_index(Cg *cg, LLVMValueRef idx, LLVMValueRef bound);
/* Report "codegen: op 'NAME' is not supported[: why]" and fail. */
bool cg_unsupported(Cg *cg, Node *n, const char *why);
/* Compile g as an internal function `i32 f(ptr in, ptr out, ptr ws)`
 * through the graph_fn hook (cached per Graph). *ws_bytes gets the
 * workspace it needs. NULL after a diagnostic. Saves and restores the
 * caller's builder position, so it may be called while emitting
 * another function. Outputs must not overlap inputs or each other. */
LLVMValueRef cg_graph_fn(Cg *cg, Graph *g, int64_t *ws_bytes);
/* The run-time layout function of compiled graph g through the
 * layout_fn hook (emit/layout.c, cg_layout_fn: NULL when its plan
 * places no block at run time), and a call of one: i64 (hdr, tab). */
LLVMValueRef cg_graph_layout(Cg *cg, Graph *g);
LLVMValueRef cg_call_layout(Cg *cg, LLVMValueRef fn, LLVMValueRef hdr,
                            LLVMValueRef tab);
/* Call a graph function with arrays built from the given pointers;
 * a non-zero result branches to the current error exit. */
/* An alloca'd array of the n pointers v (one slot when n is 0). */
LLVMValueRef cg_ptr_array(Cg *cg, LLVMValueRef *v, int n);
void cg_call_graph_fn(Cg *cg, LLVMValueRef fn, LLVMValueRef *ins, int nin,
                      LLVMValueRef *outs, int nout, LLVMValueRef ws);

/* ---- addresses of planned storage (storage.c) ---- */
/* n's slot in the current function's plan. */
CgSlot *cg_slot(Cg *cg, Node *n);
/* Pointer to n's storage in the current function (inputs, outputs,
 * workspace slot, constant global; aliases resolved; a prologue marker
 * for a FUSED node). n must not be FOLDED. */
LLVMValueRef cg_buf(Cg *cg, Node *n);
/* ws + off for a workspace offset of the plan (cg_off_dyn: read from
 * the run-time layout's table). */
LLVMValueRef cg_ws_at(Cg *cg, int64_t off);
/* Pointer to n's scratch area (requested by its table scratch fn). */
LLVMValueRef cg_scratch(Cg *cg, Node *n);
/* Pointer i of a pointer array (the inputs or outputs parameter). */
LLVMValueRef cg_arg_ptr(Cg *cg, LLVMValueRef arr, int i);
/* ---- prologue markers (prologue.c) ---- */
/* A pointer standing for FUSED node n (cg_buf of a prologue): loads
 * through it (cg_load, cg_ops_vload, also inside outlined bodies that
 * receive it) compute n's fused tree at the flat element index through
 * the fused_load hook. Never stored through or offset by anything but
 * those loads. Also for a CG_SLOT_EPI node (cg_buf of an op that stores
 * its epilogue, plan/epilogues.c), where cg_store through it stores the
 * value of the group root store_as at that element (the fused_load
 * hook), the op's value (rounded to its dtype) standing for the op. */
LLVMValueRef cg_fused_src(Cg *cg, Node *n);
/* Bind marker p (of a CG_SLOT_EPI op) to its group root and the root's
 * storage root_p; the root bound to marker p (*root_p: its storage),
 * NULL for any other pointer. */
void cg_epi_bind(Cg *cg, LLVMValueRef p, Node *root, LLVMValueRef root_p);
Node *cg_epi_root(Cg *cg, LLVMValueRef p, LLVMValueRef *root_p);
/* The FUSED node bound to pointer p, or NULL. */
Node *cg_fused_src_of(Cg *cg, LLVMValueRef p);
/* A private, unnamed-address constant global holding init (8-aligned):
 * the geometry structs of runtime calls (conv, attention). */
LLVMValueRef cg_ops_const_global(Cg *cg, LLVMValueRef init, const char *name);

/* ---- loops (loops.c) ---- */
#define CG_MAX_CARRY 8
typedef struct {
  LLVMBasicBlockRef pre, body, exit;
  LLVMValueRef idx, end;
  int nc;
  LLVMValueRef init[CG_MAX_CARRY], phi[CG_MAX_CARRY];
  int interleave; /* > 1: ask LLVM's vectorizer to interleave this many
                     vectors (llvm.loop.interleave.count) */
} CgLoop;
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

/* nsw i64 arithmetic: a + b, a * c (c == 1: a itself). */
static inline LLVMValueRef cg_add_i64(Cg *cg, LLVMValueRef a,
                                      LLVMValueRef b) {
  return LLVMBuildNSWAdd(cg->b, a, b, "");
}
static inline LLVMValueRef cg_mul_c(Cg *cg, LLVMValueRef a, int64_t c) {
  if (c == 1) return a;
  return LLVMBuildNSWMul(cg->b, a, cg_i64(cg, c), "");
}

/* ---- vectors (vector.c) ---- */
/* Is dt a real float type (f32 f64 f16 bf16)? */
bool cg_ops_is_real(DType dt);

/* Vector width used for dt's contiguous loops (1: scalar only). */
int cg_ops_lanes(Cg *cg, DType dt);
/* Compute type of dt with `lanes` lanes. */
LLVMTypeRef cg_ops_vtype(Cg *cg, DType dt, int lanes);
LLVMValueRef cg_ops_splat(Cg *cg, LLVMValueRef s, int lanes);
LLVMValueRef cg_ops_vload(Cg *cg, DType dt, LLVMValueRef base,
                          LLVMValueRef idx, int lanes);
void cg_ops_vstore(Cg *cg, DType dt, LLVMValueRef base, LLVMValueRef idx,
                   LLVMValueRef v, int lanes);
/* Integer type of `esize` bytes (1, 2, 4, 8). */
LLVMTypeRef cg_ops_bits_type(Cg *cg, int esize);

/* ---- folds, row maps, columns (fold.c) ---- */
typedef enum { CG_RED_SUM, CG_RED_PROD, CG_RED_MAX, CG_RED_MIN } CgRed;
/* The fold of a reduce_* op (reduce_mean folds with a sum). */
CgRed cg_red_kind(Op op);
/* Identity element of a reduction (compute type, scalar). */
LLVMValueRef cg_ops_red_init(Cg *cg, DType dt, CgRed r);
/* a (+ * max min) b, scalars or vectors of dt's compute type. Float
 * max/min propagate NaN (NumPy). */
LLVMValueRef cg_ops_combine(Cg *cg, DType dt, CgRed r, LLVMValueRef a,
                            LLVMValueRef b);
/* Fold the lanes of v in a fixed tree order. */
LLVMValueRef cg_ops_hfold(Cg *cg, DType dt, CgRed r, LLVMValueRef v);

/* Per-element hook: value x (lanes wide) at element index idx. */
typedef LLVMValueRef (*CgOpsMapFn)(Cg *cg, LLVMValueRef x, LLVMValueRef idx,
                                   int lanes, void *ctx);
/* Fold f(base[off + j]) for j in [0, n_c) with r, starting from init
 * (scalar): vector partial accumulators then a scalar tail, always in
 * the same order. f may be NULL (identity). */
LLVMValueRef cg_ops_row_fold(Cg *cg, DType dt, CgRed r, LLVMValueRef base,
                             LLVMValueRef off, int64_t n_c,
                             LLVMValueRef init, CgOpsMapFn f, void *ctx);
/* The same with k (1, 2, 4 or 8) vector accumulators, vector j into
 * j % k, combined pairwise (fewer for short rows): more throughput on
 * long rows, another fixed order. */
LLVMValueRef cg_ops_row_fold_k(Cg *cg, DType dt, CgRed r, LLVMValueRef base,
                               LLVMValueRef off, int64_t n_c,
                               LLVMValueRef init, CgOpsMapFn f, void *ctx,
                               int k);
/* dst[off + j] = f(src[off + j]) for j in [0, n_c) (vectorized). */
void cg_ops_row_map(Cg *cg, DType dt, LLVMValueRef dst, LLVMValueRef src,
                    LLVMValueRef off, int64_t n_c, CgOpsMapFn f, void *ctx);
/* The same with vectors of `wide` times the usual lanes: more
 * independent work per step for maps with long dependency chains
 * (exp-based activations: 1.2x faster at 4 registers than at 2). */
void cg_ops_row_map_wide(Cg *cg, DType dt, LLVMValueRef dst,
                         LLVMValueRef src, LLVMValueRef off, int64_t n_c,
                         int wide, CgOpsMapFn f, void *ctx);

/* [outer, n, inner] view around axis (negative counts from the end). */
void cg_ops_split_axis(const Type *t, int64_t axis, int64_t *outer,
                       int64_t *n, int64_t *inner);

/* Column driver: for each o in [0, outer) and each lane group of
 * [0, inner), calls body(lanes, base) where base = o*n*inner + i0, so
 * the body visits elements base + j*inner, j in [0, n). Groups use
 * wide * cg_ops_lanes(dt) lanes (wide > 1: fewer, wider column strips,
 * whose rows are longer contiguous reads with independent accumulators),
 * then cg_ops_lanes(dt), the rest scalar. Runs in parallel over
 * independent (o, group) units. vals (pointers) are passed to the
 * outlined body and replaced by its copies, as in cg_par_begin.
 * outer and n are sizes (dynamic ones read at run time); inner static. */
typedef void (*CgOpsColFn)(Cg *cg, int lanes, LLVMValueRef base,
                           LLVMValueRef *vals, void *ctx);
void cg_ops_cols(Cg *cg, DType dt, int64_t outer, int64_t n, int64_t inner,
                 int wide, LLVMValueRef *vals, int nv, CgOpsColFn body,
                 void *ctx);

/* ---- math (math.c) ---- */
/* exp / log on scalars or vectors of f32 or f64: intrinsics, except
 * exp of f32 vectors: a straight-line approximation (about 1 ulp; LLVM
 * would call expf per lane). */
LLVMValueRef cg_ops_exp(Cg *cg, LLVMValueRef v);
LLVMValueRef cg_ops_log(Cg *cg, LLVMValueRef v);
/* exp as cg_ops_exp, but f32 scalars too in the straight-line form
 * (the elementwise emitter's exp: its per-element code vectorizes). */
LLVMValueRef cg_ops_expf(Cg *cg, LLVMValueRef v);
/* gelu_tanh's exp(-2u), u = sqrt(2/pi) (x + 0.044715 x^3), with -2u
 * clamped to [-40, 40] (f32: no range clamp inside the exp then), and
 * *above true where -2u exceeded 40: there the caller's value and
 * derivative are 0 (|x s| < 5e-17 |x|): neither 1 + exp(-2u) nor a
 * quotient by it is subnormal, whose every use costs a microcode assist
 * on Intel CPUs. The forward (elementwise_scalar.c) and the derivative
 * (backward.c) both start here. */
LLVMValueRef cg_gelu_tanh_exp(Cg *cg, LLVMValueRef x, LLVMValueRef *above);
/* libm call by base name ("tanh", "erf", ...) on a float/double scalar
 * (the float variant gets the 'f' suffix) or per lane of a vector. */
LLVMValueRef cg_ops_libm(Cg *cg, const char *name, LLVMValueRef v);
/* tanh / erf: libm, except f32 vectors: straight-line approximations
 * (absolute error ~1e-7) so that loops stay vectorized. */
LLVMValueRef cg_ops_tanh(Cg *cg, LLVMValueRef v);
LLVMValueRef cg_ops_erf(Cg *cg, LLVMValueRef v);
/* gelu_tanh of an f32 scalar x (*y) and its derivative (*dydx; either
 * may be NULL) for a result of dtype dt, when the code is for the GPU
 * (an nvptx triple) and dt is f16 or bf16: 0.5 (1 + tanh u) written as
 * the sigmoid 1 / (1 + exp(-2u)), u = sqrt(2/pi) (x + 0.044715 x^3),
 * by ex2.approx and rcp.approx (relative error near 1e-6, far under
 * the result's rounding, for a fraction of the tanh polynomial and
 * division); false (nothing built) otherwise: the caller computes the
 * CPU's formula. */
bool cg_gelu_tanh_fast(Cg *cg, DType dt, LLVMValueRef x, LLVMValueRef *y,
                       LLVMValueRef *dydx);

/* ---- index operands (index.c) ---- */
/* Load index element i of an index buffer (i32, i64, or f32/f64 with
 * integral values), check 0 <= v < bound (else RLX_ERR_INDEX; a
 * non-integral or NaN float index is out of range too) and return it
 * as i64. */
LLVMValueRef cg_ops_index(Cg *cg, DType dt, LLVMValueRef base,
                          LLVMValueRef i, int64_t bound_c);
/* cg_ops_index with a bound read at run time (a dynamic size). */
LLVMValueRef cg_ops_index_v(Cg *cg, DType dt, LLVMValueRef base,
                            LLVMValueRef i, LLVMValueRef bound);
bool cg_ops_index_dtype_ok(DType dt);

/* ---- copies (copy.c) ---- */
/* Strided copy: dst[sum i_d*dst_str[d]] = src[sum i_d*src_str[d]] for
 * every multi-index below dims (element strides, offsets in elements),
 * elements of esize bytes. Dims are canonicalized (size-1 dims dropped,
 * contiguous neighbours merged) and the outer loop runs in parallel.
 * Dims and strides may be dynamic sizes (read at run time; then neither
 * canonicalized nor tiled). */
typedef struct {
  int rank;
  int64_t dims[RLX_MAX_RANK];
  int64_t dst_str[RLX_MAX_RANK], src_str[RLX_MAX_RANK];
  int64_t dst_off, src_off;
} CgCopy;
void cg_ops_copy(Cg *cg, const CgCopy *c, LLVMValueRef dst,
                 LLVMValueRef src, int esize);
/* dst[i] = convert(src[i]) for i < count, an outlined parallel loop:
 * the f32 copies of f16/bf16 operands and results around a runtime
 * call (matmul, conv, attention). count is a size: a static one, or a
 * size expression read at run time. */
void cg_convert_loop(Cg *cg, LLVMValueRef dst, DType ddt, LLVMValueRef src,
                     DType sdt, int64_t count);
/* cg_convert_loop over as many elements as a value of type t has,
 * counted at run time when t is dynamic (a value is dense at its
 * actual sizes, so its f32 copy is too). cg_f32_copy_bytes: the
 * scratch bytes of an f32 copy of t, at its bounds (aligned). The
 * f16/bf16 paths of conv and attention. */
void cg_convert_type(Cg *cg, LLVMValueRef dst, DType ddt, LLVMValueRef src,
                     DType sdt, const Type *t);
int64_t cg_f32_copy_bytes(const Type *t);
/* The same as a value, or (rt: a size without a bound) computed from the
 * call's sizes. */
LLVMValueRef cg_f32_copy_size(Cg *cg, const Type *t, bool rt);

#endif
