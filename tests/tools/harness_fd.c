/* harness_fd.c -- central finite-difference check of an ENTRY_grad
 * against its forward entry (declared in harness.h: hx_fd_check).
 *
 * The scalar probed is s(x) = <d_output, out0(x)> computed in double
 * (for c64 outputs Re(sum conj(d_output) * out0)); for a scalar loss
 * with d_output = 1 that is the loss itself.  The
 * perturbation actually applied (after rounding to the input's dtype)
 * is used as the step, so f32 inputs give honest differences.
 */
#include "tests/tools/harness.h"

#include <math.h>
#include <stdio.h>
#include <string.h>

static int find_input(const HxCall *fwd, const char *gname)
{
  if (!gname)
    return -1;
  const char *n = strncmp(gname, "d_", 2) == 0 ? gname + 2 : gname;
  for (int i = 0; i < fwd->sig->num_inputs; i++) {
    const char *in = fwd->sig->inputs[i].name;
    if (in && strcmp(in, n) == 0)
      return i;
  }
  return -1;
}

static double probe(HxCall *fwd, const HxTensor *dout, int *rc)
{
  *rc = hx_run(fwd);
  const HxTensor *o = &fwd->out[0];
  int64_t n = o->desc->dtype == RLX_DT_C64 ? 2 * o->numel : o->numel;
  double s = 0;
  for (int64_t i = 0; i < n; i++)
    s += hx_get(dout, i) * hx_get(o, i);
  return s;
}

/* Difference quotient for element i of input t; NAN on a failed call. */
static double fd_one(HxCall *fwd, HxTensor *t, int64_t i,
                     const HxTensor *dout, double eps)
{
  double x0 = hx_get(t, i);
  int rc1, rc2;
  hx_set(t, i, x0 + eps);
  double hp = hx_get(t, i) - x0;
  double sp = probe(fwd, dout, &rc1);
  hx_set(t, i, x0 - eps);
  double hm = x0 - hx_get(t, i);
  double sm = probe(fwd, dout, &rc2);
  hx_set(t, i, x0);
  if (rc1 || rc2 || hp + hm == 0)
    return NAN;
  return (sp - sm) / (hp + hm);
}

static int check_one(HxCall *fwd, HxCall *grad, int k, int idx,
                     const HxFdOpts *o)
{
  int nfo = fwd->sig->num_outputs;
  HxTensor *t = &fwd->in[idx];
  const HxTensor *g = &grad->out[nfo + k];
  const HxTensor *dout = &grad->in[fwd->sig->num_inputs];
  int dt = t->desc->dtype;
  if ((dt != RLX_DT_F32 && dt != RLX_DT_F64 && dt != RLX_DT_C64) ||
      g->numel != t->numel || g->desc->dtype != dt) {
    fprintf(stderr, "fd: gradient %d (%s) does not match input %d\n", k,
            g->desc->name, idx);
    return 1;
  }
  /* c64: real and imaginary parts are perturbed separately; the
   * gradient's (re, im) are dL/dre and dL/dim (PyTorch's convention). */
  int64_t n = dt == RLX_DT_C64 ? 2 * t->numel : t->numel;
  double scale = 1;
  for (int64_t i = 0; i < n; i++)
    scale = fmax(scale, fabs(hx_get(g, i)));
  int64_t step = 1;
  if (o->max_elems > 0 && n > o->max_elems)
    step = (n + o->max_elems - 1) / o->max_elems;
  int bad = 0;
  for (int64_t i = 0; i < n; i += step) {
    double fd = fd_one(fwd, t, i, dout, o->eps), an = hx_get(g, i);
    double lim = o->tol.rtol * fabs(fd) + o->tol.atol * scale;
    if (!(fabs(fd - an) <= lim)) {
      if (bad++ < 8)
        fprintf(stderr, "fd: d %s [%lld]: analytic %.10g, finite "
                "difference %.10g (allowed %.3g)\n", t->desc->name,
                (long long)i, an, fd, lim);
    }
  }
  return bad;
}

int hx_fd_check(HxCall *fwd, HxCall *grad, const int *wrt, int n_wrt,
                const HxFdOpts *o)
{
  int nin = fwd->sig->num_inputs, nfo = fwd->sig->num_outputs;
  if (grad->sig->num_inputs != nin + 1 || nfo < 1 ||
      grad->sig->num_outputs < nfo) {
    fprintf(stderr, "fd: grad entry signature does not fit the forward "
            "one (%d inputs / %d outputs vs %d / %d)\n",
            grad->sig->num_inputs, grad->sig->num_outputs, nin, nfo);
    return -1;
  }
  if (!hx_copy_inputs(grad, fwd, nin))
    return -1;
  int ngrad = grad->sig->num_outputs - nfo;
  if (grad->in[nin].numel == 1)
    hx_set(&grad->in[nin], 0, 1.0);
  else {
    uint64_t st = o->seed;
    hx_fill_tensor(&grad->in[nin], &st);
  }
  int rc = hx_run(grad);
  if (rc) {
    fprintf(stderr, "fd: grad entry returned %d (%s)\n", rc,
            rlx_strerror(rc));
    return -1;
  }
  if (wrt && n_wrt != ngrad) {
    fprintf(stderr, "fd: %d wrt indices for %d gradients\n", n_wrt, ngrad);
    return -1;
  }
  int bad = 0;
  for (int k = 0; k < ngrad; k++) {
    int idx = wrt ? wrt[k] : find_input(fwd, grad->out[nfo + k].desc->name);
    if (idx < 0 || idx >= nin) {
      fprintf(stderr, "fd: cannot tell which input gradient %d (%s) "
              "belongs to\n", k, grad->out[nfo + k].desc->name);
      return -1;
    }
    bad += check_one(fwd, grad, k, idx, o);
  }
  return bad;
}
