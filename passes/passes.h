/* passes.h: the compilation unit, command-line options and the pass
 * pipeline. A pass is a function over the Unit; pipeline.c lists them
 * in order, one line each, and --dump-ir prints the module after each.
 * Each pass file opens with what it requires and provides. */
#ifndef RLX_PASSES_H
#define RLX_PASSES_H

#include "ir/ir.h"

enum {
  EMIT_OBJ = 1 << 0,
  EMIT_HEADER = 1 << 1,
  EMIT_ASM = 1 << 2,
  EMIT_LLVM = 1 << 3,
  EMIT_IR = 1 << 4,
  EMIT_DOT = 1 << 5,
};

typedef struct {
  const char *input;      /* the .rlx file */
  const char *output;     /* -o PATH, or NULL */
  unsigned emit;          /* EMIT_* set */
  const char *entry;      /* --entry, or NULL: last graph */
  const char *name;       /* --name, or NULL: the entry graph's name */
  bool grad;              /* --grad */
  const char **wrt;       /* --wrt names without '%'; nwrt 0 = params */
  int nwrt;
  bool grad_missing_zero; /* --grad-missing=zero */
  bool jvp;               /* --jvp */
  const char **jvp_wrt;   /* --jvp=%a,... seeds; 0 = all inputs/params */
  int njvp_wrt;
  bool hvp;               /* --hvp */
  const char *dump_ir;    /* NULL, "all" or a pass name */
  int opt_level;          /* 0..3, default 2 */
  const char *target;     /* NULL: host triple */
  const char *mcpu;       /* NULL: host cpu */
  bool time_passes;       /* --time-passes: report per phase */
  const char *mattr;      /* NULL: none; "+f,-g" added to the features */
  const char *gpu_arch;   /* --target=cuda: sm_80 (default), sm_90, sm_90a */
  bool gpu_tf32;          /* --gpu-tf32: f32 matmul on tensor cores (tf32) */
  int gpu_mm_r;           /* RLX_CUDA_MM f32rR[bB]: largest f32 matmul R; 0 */
  int gpu_mm_b;           /* its B: blocks per SM the tiles ask for; 0 */
  int gpu_mma[6];         /* its BMxBNxBKsS[wW][bB] tensor-core tile (W
                             warps, B blocks per SM); 0: default */
  int gpu_wg[4];          /* RLX_CUDA_MM wgBMxBNsS[p] (sm_90a wgmma tile,
                             p: pipelined); 0: default, -1 (nowg):
                             mma.sync */
  bool cuda_graph;        /* --cuda-graph: entries replay a CUDA graph */
  bool check;             /* --check: write nothing */
  int train;              /* --train: TRAIN_NONE or an optimizer */
} Options;

/* --train=OPT: the optimizer of ENTRY_train (passes/ad/train.c). */
enum { TRAIN_NONE, TRAIN_SGD, TRAIN_MOMENTUM, TRAIN_ADAMW };

/* What ENTRY_train's C arguments are beyond its graph's (abi.md,
 * "Training step"): the graph's arguments are the entry's, then
 * nhyper f32 scalars, then nstate optimizer-state pieces; the C entry
 * passes one state buffer instead of the pieces, piece k at byte
 * state_off[k] of it (64-byte aligned offsets), state_bytes in all.
 * The graph's returns are the entry's nout outputs, then one value per
 * updated param and state piece, each stored over the argument
 * Graph.ret_into names. */
typedef struct {
  int nhyper;             /* hyperparameter inputs */
  int nstate;             /* state pieces (graph args after the hypers) */
  int64_t *state_off;     /* byte offset of each piece in the buffer */
  int64_t state_bytes;    /* the buffer's size (ENTRY_train_STATE_BYTES) */
  DType state_dt;         /* element type of the state */
  int nout;               /* the user-visible outputs (the entry's) */
} TrainAbi;

/* One compilation: the module and the graphs that become entry points.
 * Passes replace these pointers as they rewrite graphs. */
typedef struct {
  Ctx *ctx;
  Module *mod;
  const Options *opt;
  const char *cname;  /* C name of the entry points */
  Graph *entry;       /* forward graph */
  Graph *grad;        /* ENTRY_grad graph, or NULL */
  Graph *jvp;         /* ENTRY_jvp, or NULL */
  Graph *hvp;         /* ENTRY_hvp, or NULL */
  Graph *train;       /* ENTRY_train, or NULL */
  TrainAbi train_abi; /* its C arguments, when train is set */
  /* AD working copies (passes/ad/working_copy.c): the entry and every
   * graph it references, cloned before the AD preparation passes
   * rewrite them, so that u->entry keeps its own semantics. NULL / 0
   * until then. */
  Graph *ad_entry;
  Graph **ad_graphs;  /* the clones, subgraphs first */
  int n_ad_graphs;
} Unit;

typedef struct {
  const char *name;      /* shown by --dump-ir, selectable by name */
  bool (*run)(Unit *u);  /* false: diagnostics were reported */
} Pass;

/* Run every pass in order; verify after each in debug/test builds;
 * print after each for --dump-ir. False on the first failing pass. */
bool pass_run_pipeline(Unit *u);
/* The pipeline's pass list (for --help and tests). */
const Pass *pass_list(int *n);

/* The passes (passes/ad/<name>.c, lowering: passes/lower/, clean-up:
 * passes/cleanup/; each returns true and does nothing when its options
 * are not given). In pipeline order: */
bool pass_lower_scan_bwd(Unit *u); /* scan_backward* -> reverse scan
                                      (code generation and AD) */
bool pass_expand_fused(Unit *u);    /* fused blocks -> primitives (the
                                       transformer layer always) */
bool pass_prepare_if(Unit *u);      /* if -> both branches + where */
bool pass_prepare_while(Unit *u);   /* while -> bounded unrolling */
bool pass_inline_custom_fn(Unit *u);/* custom_fn w/o vjp/jvp -> fwd */
bool pass_scan_prep(Unit *u);       /* scan bcast + trajectory form */
bool pass_grad(Unit *u);            /* builds u->grad (reverse walk) */
bool pass_train(Unit *u);           /* builds u->train: u->grad plus the
                                       optimizer update (--train) */
bool pass_simplify(Unit *u);        /* folding, algebraic identities */
bool pass_cse(Unit *u);             /* common subexpressions */
bool pass_dce(Unit *u);             /* dead code */
bool pass_grad_outputs(Unit *u);    /* own value + d_NAME per gradient */
bool pass_jvp(Unit *u);             /* builds u->jvp (forward mode) */
bool pass_hvp(Unit *u);             /* builds u->hvp (JVP of u->grad) */
bool pass_lower_quant(Unit *u);     /* fake quantization -> its ops
                                       (when code is generated) */
bool pass_lower_norm_params(Unit *u); /* dynamic norm parameter gradients
                                         -> their closed forms (idem) */
/* passes/unit.c. Object code, assembly or LLVM IR is produced (not --check, not
   --emit=ir alone): the lowering passes apply. */
bool pass_generates_code(const Unit *u);
/* --grad or --hvp: the gradient graph and its preparation are built. */
bool ad_wants_grad(const Unit *u);
/* The graphs the clean-up passes and grad_outputs work on (derived
 * graphs: grad, jvp, hvp, train; NULL entries skipped by callers). */
#define UNIT_DERIVED(u) {(u)->grad, (u)->jvp, (u)->hvp, (u)->train}

/* For --list-ops and docs: has reverse (VJP) / forward (JVP) mode a rule
 * for op? */
bool vjp_supported(Op op);
bool jvp_supported(Op op);

#endif
