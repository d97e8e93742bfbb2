/* cg_unit.h: the entry-point builder, the top layer of codegen/ (see
 * docs/codegen.md): compiling graphs into functions (graph_fn.c), the
 * exported entry points and their signatures (entry.c), their sizes
 * and run-time workspace layouts (layout.c), call tables
 * (calltable.c), a whole Unit (codegen.c), its header text (header.c)
 * and the module's optimization and output (object.c). Internal to
 * codegen/; calls the emitters (emit/emit.h), the LLVM building blocks
 * (llvm/cg.h) and the plan (plan/plan.h), never the other way round.
 */
#ifndef RLX_CG_UNIT_H
#define RLX_CG_UNIT_H

#include "codegen/emit/emit.h"

typedef struct {
  Graph *g;
  const char *name;  /* C name: cname, cname_grad, ... */
  int64_t ws_bytes;
  /* The C arguments (abi.md): g's arguments and returns, except for
   * ENTRY_train (train set), whose state pieces are one buffer, the
   * node `state` (kind RLX_ARG_STATE), and whose in-place returns are
   * not outputs. */
  Node **args, **rets;
  int nargs, nret;
  const TrainAbi *train;
  const Node *state;
  /* Dynamic dimensions: the symbols (numbers of the module's table) in
   * the order of the entry's sizes argument: first appearance among the
   * arguments' dims (cg_entry sets them). */
  int nsyms;
  int *syms;
  /* Sizes without a bound (layout.c): a workspace laid out at each call
   * when the plan has blocks placed at run time (else NULL): the
   * layout and workspace-bytes functions, and the table's offset. */
  LLVMValueRef layout, wsbytes;
  int64_t dyn_tab;
} CgEntry;

#define CG_MAX_ENTRIES 5

/* Build every entry of u into cg; e[] gets them. False on a diagnostic. */
bool cg_build_unit(Cg *cg, Unit *u, CgEntry *e, int *ne);
/* The header of cg's unit with entries e[0..ne). */
bool cg_header_text(FILE *f, const Cg *cg, const CgEntry *e, int ne);

/* ---- graph functions (graph_fn.c) ---- */
/* Nodes that emit code per segment function of a large graph. */
#define CG_SEGMENT_NODES 128
/* Compile g as an internal function `i32 f(ptr in, ptr out, ptr ws)`
 * (cached per Graph; installs itself as cg->graph_fn and the emitters'
 * hooks). *ws_bytes gets the workspace it needs. NULL after a
 * diagnostic. */
LLVMValueRef cg_compile_graph(Cg *cg, Graph *g, int64_t *ws_bytes);
/* The plan of compiled graph g (NULL before cg_compile_graph). */
CgPlan *cg_graph_plan(const Cg *cg, const Graph *g);

/* ---- entry points (entry.c) ---- */
/* Exported entry point NAME (NULL workspace -> rlx_alloc/rlx_free)
 * around the graph function, plus NAME_signature(). */
bool cg_entry(Cg *cg, CgEntry *e);
/* NAME_signature() of entry e (also --target=cuda). */
void cg_entry_signature(Cg *cg, const CgEntry *e);
/* e->syms, e->nsyms: the entry's symbols in the order of first
 * appearance among its arguments' dims (its sizes array's order). */
void cg_entry_syms(Cg *cg, CgEntry *e);
/* ENTRY_train's C arguments (x->g is u->train): the graph's up to the
 * hyperparameters, then one node standing for the state buffer (kind
 * RLX_ARG_STATE); its first nout returns. */
void cg_train_args(Unit *u, CgEntry *x);
/* ENTRY_train's pointer arrays for its graph function (abi.md,
 * "Training step"), built at the builder's position: the C inputs up to
 * the hyperparameters, then one pointer per state piece into the state
 * buffer (the last C input); the C outputs, then for every in-place
 * return the pointer of the argument it overwrites. Stack arrays; *in
 * and *out are replaced. Also --target=cuda (device pointers). */
void cg_train_arrays(Cg *cg, const CgEntry *e, LLVMValueRef *in,
                     LLVMValueRef *out);
/* Name of argument/return value n at position j: its name, else
 * "output<j>" written into buf (at least 64 bytes). */
const char *cg_out_name(const Node *n, int j, char *buf);

/* ---- sizes and run-time layouts (layout.c) ---- */
/* i1: is every size of entry x in [0, its bound] (no bound:
 * RLX_MAX_ELEMS)? */
LLVMValueRef cg_sizes_ok(Cg *cg, const CgEntry *x, LLVMValueRef sizes);
/* Store x's sizes into ws's header (8 bytes per module symbol). */
void cg_store_sizes(Cg *cg, const CgEntry *x, LLVMValueRef sizes,
                    LLVMValueRef ws);
/* After x's graph is compiled: its layout functions when its plan has
 * blocks placed at run time (x->layout, x->wsbytes), and when it has
 * sizes, the exported NAME_workspace_bytes(sizes). */
void cg_layout_fns(Cg *cg, CgEntry *x);

/* ---- call tables (calltable.c) ---- */
/* Runs of calls in segment fn become tables walked by dispatch
 * functions. True when fn is left with nothing but those calls: they
 * are then re-emitted at the builder's position, with the current
 * function's (inputs, outputs, ws), and fn can be deleted. */
bool cg_call_tables(Cg *cg, LLVMValueRef fn);

/* ---- optimization and output (object.c) ---- */
/* Run the optimization pipeline (default<On>) and verify the module. */
bool cg_optimize(Cg *cg);
/* Stage the module as object / assembly / LLVM IR text for path in out
 * (codegen/output.h); nothing is on disk before out_finish. */
struct OutSet;
bool cg_write_obj(Cg *cg, struct OutSet *out, const char *path,
                  bool assembly);
bool cg_write_ll(Cg *cg, struct OutSet *out, const char *path);

#endif
