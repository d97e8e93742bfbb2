/* shape_log_mel.c: rules for log_mel and log_mel_backward (language.md
 * 6.8).
 *
 * log_mel(spec [..., F], filters [F, M]) -> [..., M], one float dtype.
 * log_mel_backward(spec, filters, dy [..., M]) -> spec's type.
 * Dynamic sizes: spec's leading (frame, batch) axes; the filter bank,
 * and so spec's frequency axis, static.
 */
#include "ir/shape_internal.h"

/* spec [..., F] x filters [F, M] -> [..., M] into out. */
static bool log_mel_out(Ctx *c, const Node *n, Type *out) {
  const Type *s = IN(n, 0), *f = IN(n, 1);
  if (!sh_want_float(c, n, 0, "spec") || !sh_same_dtype(c, n, 0, 1))
    return false;
  if (s->rank < 1)
    return sh_err(c, n, "spec must have rank >= 1, got %s", TS(s));
  if (!sh_static(c, n, 0, s->rank - 1, "the frequency bins, which the "
                 "filter bank [F, M] fixes") ||
      !sh_static_type(c, n, 1, "only spec's leading (frame, batch) axes "
                      "may be dynamic"))
    return false;
  if (f->rank != 2 || f->dims[0] != s->dims[s->rank - 1])
    return sh_err(c, n, "filters must be [%lld, M] to match spec %s, got "
                  "%s", (long long)s->dims[s->rank - 1], TS(s), TS(f));
  *out = *s;
  out->dims[s->rank - 1] = f->dims[1];
  return true;
}

bool shape_log_mel(Ctx *c, Node *n) { return log_mel_out(c, n, &n->type); }

bool shape_log_mel_bwd(Ctx *c, Node *n) {
  Type o;
  if (!log_mel_out(c, n, &o) || !sh_want_type(c, n, 2, "dy", &o))
    return false;
  n->type = *IN(n, 0);
  return true;
}
