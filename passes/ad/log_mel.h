/* log_mel.h: the expansion of log_mel and log_mel_backward through
 * ordinary ops (log_mel_expand.c) that their reverse- and forward-mode
 * rules (vjp_rules_log_mel.c, jvp_rules_log_mel.c) are built on. */
#ifndef RLX_AD_LOG_MEL_H
#define RLX_AD_LOG_MEL_H

#include "passes/ad/ad.h"

/* A detached graph computing log_mel or log_mel_backward n from
 * arguments typed like its operands, through matmul/max/log (forward)
 * or ge/where/div/matmul (backward); the mask z >= 1e-10 matches the
 * kernels' and max's ties (the gradient goes to z). */
Graph *ad_log_mel_graph(Ctx *c, const Node *n);

#endif
