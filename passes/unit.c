/* unit.c: what the command line asks of the pipeline, below every
 * pass that asks it: whether code is generated (the lowering passes
 * apply) and whether a gradient graph is built (the AD preparation
 * passes apply). */
#include "passes/passes.h"

bool pass_generates_code(const Unit *u) {
  return u->opt && !u->opt->check &&
         (u->opt->emit & (EMIT_OBJ | EMIT_ASM | EMIT_LLVM));
}

bool ad_wants_grad(const Unit *u) {
  return u->opt && (u->opt->grad || u->opt->hvp || u->opt->train);
}
