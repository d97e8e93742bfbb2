/* jvp_rules_log_mel.c: JVP rules of log_mel and log_mel_backward: the
 * expansion of log_mel.h differentiated forward (jvp_through), so
 * they are the exact transposes of the VJP rules, mask included; the
 * primal stays the kernel. */
#include "passes/ad/log_mel.h"

#include "passes/ad/jvp_rules.h"

Node *jvp_log_mel(JvpCtx *jc, const Node *n) {
  return jvp_through(jc, n, ad_log_mel_graph(B->c, n));
}
