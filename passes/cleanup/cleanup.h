/* cleanup.h: the clean-up passes (simplify.c, cse.c, dce.c) on one
 * graph, for the passes that build graphs (AD, lowering) and clean
 * them where they make them. Below AD and lowering, above ir/. */
#ifndef RLX_CLEANUP_H
#define RLX_CLEANUP_H

#include "ir/builder.h"
#include "passes/passes.h"

void pass_simplify_graph(Ctx *c, Graph *g);
void pass_cse_graph(Ctx *c, Graph *g);
void pass_dce_graph(Ctx *c, Graph *g);

#endif
