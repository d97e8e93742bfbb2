/* emit_moe.h: emitters of grouped_matmul, its weight gradient and
 * dequant_matmul (emit_moe.c). Included by emit_table.h. */
#ifndef RLX_EMIT_MOE_H
#define RLX_EMIT_MOE_H

#include "codegen/cg.h"

bool cg_emit_grouped_matmul(Cg *cg, Node *n); /* and its backward op */
int64_t cg_scratch_grouped_matmul(Cg *cg, Node *n);
bool cg_emit_dequant_matmul(Cg *cg, Node *n);
int64_t cg_scratch_dequant_matmul(Cg *cg, Node *n);

#endif
