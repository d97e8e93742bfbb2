/* emit_random.h: emitters of rng_uniform, rng_normal, sample, log_mel
 * and log_mel_backward (emit_random.c), one runtime call each. */
#ifndef RLX_EMIT_RANDOM_H
#define RLX_EMIT_RANDOM_H

#include "codegen/cg.h"

bool cg_emit_rng(Cg *cg, Node *n);
bool cg_emit_sample(Cg *cg, Node *n);
int64_t cg_scratch_sample(Cg *cg, Node *n);
bool cg_emit_log_mel(Cg *cg, Node *n);
int64_t cg_scratch_log_mel(Cg *cg, Node *n);

#endif
