/* emit_table_ops.h: emitters of the ops owned by the codegen-ops files
 * (emit_reduce.c, emit_data.c, emit_control.c, emit_backward.c).
 * Same format as emit_table.h: CG_<ID> {emit fn, scratch fn or NULL};
 * declare the functions in cg.h or a header of your own included here.
 * Until an op is implemented it stays CG_UNSUPPORTED. */
#ifndef RLX_EMIT_TABLE_OPS_H
#define RLX_EMIT_TABLE_OPS_H

#include "codegen/emit_ops.h"

#define CG_REDUCE_SUM {cg_emit_reduce, NULL}
#define CG_REDUCE_MEAN {cg_emit_reduce, NULL}
#define CG_REDUCE_MAX {cg_emit_reduce, NULL}
#define CG_REDUCE_MIN {cg_emit_reduce, NULL}
#define CG_REDUCE_PROD {cg_emit_reduce, NULL}
#define CG_SOFTMAX {cg_emit_softmax, cg_scratch_softmax}
#define CG_LOG_SOFTMAX {cg_emit_softmax, cg_scratch_softmax}
#define CG_CUMSUM {cg_emit_cumsum, NULL}
#define CG_SOFTMAX_CROSS_ENTROPY {cg_emit_softmax_xent, NULL}
#define CG_TOPK {cg_emit_topk, NULL}
#define CG_TRANSPOSE {cg_emit_transpose, NULL}
#define CG_EXPAND {cg_emit_expand, NULL}
#define CG_CONCAT {cg_emit_concat, NULL}
#define CG_NARROW {cg_emit_narrow, NULL}
#define CG_GATHER {cg_emit_gather, NULL}
#define CG_SCATTER_ADD {cg_emit_scatter_add, NULL}
#define CG_SCAN {cg_emit_scan, cg_scratch_scan}
#define CG_IF {cg_emit_if, cg_scratch_if}
#define CG_WHILE {cg_emit_while, cg_scratch_while}
#define CG_CUSTOM_FN {cg_emit_custom_fn, cg_scratch_custom_fn}
#define CG_RELU_BACKWARD {cg_emit_relu_backward, NULL}
#define CG_ACTIVATION_BACKWARD {cg_emit_activation_backward, NULL}
#define CG_CUMSUM_BACKWARD {cg_emit_cumsum_backward, NULL}
#define CG_GATHER_BACKWARD {cg_emit_gather_backward, NULL}
#define CG_SOFTMAX_CROSS_ENTROPY_BACKWARD {cg_emit_softmax_xent_backward, NULL}
#define CG_SCAN_BACKWARD {cg_emit_lowered, NULL} /* passes/lower_scan_bwd.c */
#define CG_SCAN_BACKWARD_XS {cg_emit_lowered, NULL}

#endif
