/* codegen.h: LLVM code generation for the Unit's entry graphs.
 * Owner: everything LLVM-side is created and disposed inside cg_emit. */
#ifndef RLX_CODEGEN_H
#define RLX_CODEGEN_H

#include "passes/passes.h"

/* Compile u->entry (and u->grad/jvp/hvp when set) into one LLVM module
 * and write what u->opt->emit asks for (object, header, asm, llvm) next
 * to the output path. Graphs or ops it cannot compile are reported as
 * diagnostics naming the op; returns false then and writes nothing. */
bool cg_emit(Unit *u);
/* Does code generation have an emitter for op (--list-ops, docs)? */
bool cg_op_compiles(Op op);

/* Header text only (also used by --emit=header). */
bool cg_write_header(Unit *u, FILE *f);
/* --emit=dot: a Graphviz picture of the module (dot.c). */
bool cg_write_dot(Unit *u, FILE *f);
/* --emit=plan: the plan of every graph function, as text, in the order
 * they were compiled (codegen.c, plan/dump.c). */
bool cg_write_plan(Unit *u, FILE *f);
/* The Options.emit bit of --emit=plan (passes.h has the others). */
#define EMIT_PLAN (1u << 6)

#endif
