/* log_mel.h: reverse and forward mode of log_mel and
 * log_mel_backward (vjp_rules_log_mel.c, jvp_rules_log_mel.c), both
 * built on one expansion of the ops through ordinary ops
 * (log_mel_expand.c). */
#ifndef RLX_AD_LOG_MEL_H
#define RLX_AD_LOG_MEL_H

#include "passes/ad/ad.h"

struct JvpCtx;

/* A detached graph computing log_mel or log_mel_backward n from
 * arguments typed like its operands, through matmul/max/log (forward)
 * or ge/where/div/matmul (backward); the mask z >= 1e-10 matches the
 * kernels' and max's ties (the gradient goes to z). */
Graph *ad_log_mel_graph(Ctx *c, const Node *n);

bool vjp_log_mel(GradCtx *gc, const Node *n, Node *g);
bool vjp_log_mel_backward(GradCtx *gc, const Node *n, Node *g);
Node *jvp_log_mel(struct JvpCtx *jc, const Node *n);

#endif
