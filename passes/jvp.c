/* jvp.c: forward mode (--jvp) and Hessian-vector products (--hvp).
 *
 * Not implemented in this version: rather than silently emitting no
 * ENTRY_jvp / ENTRY_hvp, the pass reports one diagnostic so that a
 * caller relying on those entry points learns it at compile time.
 * Forward mode is planned as tangent rules per op (docs/autodiff.md)
 * and HVP as forward-over-reverse on ENTRY_grad.
 */
#include "passes/ad.h"

bool pass_jvp(Unit *u) {
  if (!u->opt || (!u->opt->jvp && !u->opt->hvp)) return true;
  return diag_error(u->ctx, u->entry ? u->entry->loc : (Loc){0, 0},
                    "%s: forward-mode differentiation is not implemented "
                    "in this version of rlxc (reverse mode: --grad)",
                    u->opt->hvp ? "--hvp" : "--jvp");
}

/* For --list-ops and docs: does forward mode support op? Not yet for
 * any op (see above). */
bool jvp_supported(Op op) {
  (void)op;
  return false;
}
