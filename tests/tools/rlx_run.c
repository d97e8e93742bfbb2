/* rlx_run.c -- generic driver for rlxc-generated entry points.
 *
 * Built once per build tree (tests/CMakeLists.txt: the rlx_run target,
 * with the whole runtime linked in and its symbols exported); a case is
 * a shared object linked from rlxc's (position-independent) output,
 * which this driver loads and whose entries it finds by name:
 *   rlxc case.rlx -o case.o && cc -shared case.o -o case.so
 *   build/tests/rlx_run --so ./case.so --entry case [options] DIR
 * The case's references to librlxrt resolve to the driver's copy, so a
 * sanitizer build tree tests its own instrumented runtime.
 * --grad-entry case_grad enables --fd (finite differences of the entry
 * against the gradient entry).
 *
 * Everything it knows about the graph comes from ENTRY_signature(), so
 * one binary drives every case.  Exit status: 0 pass, 1 mismatch or
 * unexpected return code, 2 usage or setup error.
 */
#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "tests/tools/harness.h"

typedef const rlx_signature *(*SigFn)(void);

typedef struct {
  const char *so, *entry, *grad_entry;
  const char *dir, *write_dir;
  int gen;
  uint64_t seed;
  int expect;
  bool null_ws, fd, print_sig, have_tol;
  HxTol tol;
  int threads[16], nthreads;
  int time_iters;
  int concurrent;
  double fd_eps;
  int64_t fd_max;
} RunOpts;

static void usage(void)
{
  fprintf(stderr,
          "usage: rlx_run --so CASE.so --entry NAME [--grad-entry NAME]\n"
          "               [--gen SEED] [--write DIR] [--expect RC] "
          "[--null-ws]\n"
          "               [--threads 1,2,3] [--rtol X] [--atol Y] "
          "[--sig]\n"
          "               [--concurrent N] [--time N]\n"
          "               [--fd [--fd-eps E] [--fd-max N]] [DIR]\n");
}

static int parse_threads(RunOpts *o, const char *s)
{
  o->nthreads = 0;
  while (*s && o->nthreads < 16) {
    char *end;
    long v = strtol(s, &end, 10);
    if (end == s || v < 0) /* 0: the default (env RLX_NUM_THREADS) */
      return 0;
    o->threads[o->nthreads++] = (int)v;
    s = *end == ',' ? end + 1 : end;
  }
  return o->nthreads;
}

static bool parse_args(RunOpts *o, int argc, char **argv)
{
  for (int i = 1; i < argc; i++) {
    const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
    bool has_v = true;
    if (!strcmp(a, "--so") && v)
      o->so = v;
    else if (!strcmp(a, "--entry") && v)
      o->entry = v;
    else if (!strcmp(a, "--grad-entry") && v)
      o->grad_entry = v;
    else if (!strcmp(a, "--gen") && v)
      o->gen = 1, o->seed = strtoull(v, NULL, 0);
    else if (!strcmp(a, "--write") && v)
      o->write_dir = v;
    else if (!strcmp(a, "--expect") && v)
      o->expect = atoi(v);
    else if (!strcmp(a, "--threads") && v) {
      if (!parse_threads(o, v))
        return false;
    } else if (!strcmp(a, "--rtol") && v)
      o->tol.rtol = atof(v), o->have_tol = true;
    else if (!strcmp(a, "--atol") && v)
      o->tol.atol = atof(v), o->have_tol = true;
    else if (!strcmp(a, "--concurrent") && v)
      o->concurrent = atoi(v);
    else if (!strcmp(a, "--time") && v)
      o->time_iters = atoi(v);
    else if (!strcmp(a, "--fd-eps") && v)
      o->fd_eps = atof(v);
    else if (!strcmp(a, "--fd-max") && v)
      o->fd_max = atoll(v);
    else {
      has_v = false;
      if (!strcmp(a, "--null-ws"))
        o->null_ws = true;
      else if (!strcmp(a, "--fd"))
        o->fd = true;
      else if (!strcmp(a, "--sig"))
        o->print_sig = true;
      else if (a[0] != '-' && !o->dir)
        o->dir = a;
      else
        return false;
    }
    i += has_v;
  }
  return o->so && o->entry && (o->dir || o->gen);
}

/* The entry NAME of the loaded case and its signature, or false. */
static bool find_entry(void *so, const char *name, HxEntry *fn,
                       const rlx_signature **sig)
{
  char sym[512];
  snprintf(sym, sizeof sym, "%s_signature", name);
  *fn = (HxEntry)dlsym(so, name);
  SigFn sf = (SigFn)dlsym(so, sym);
  if (!*fn || !sf) {
    fprintf(stderr, "rlx_run: no entry '%s' (and %s) in the case\n", name,
            sym);
    return false;
  }
  *sig = sf();
  return true;
}

static void print_sig(const rlx_signature *s)
{
  char ty[128];
  printf("%s: %d inputs, %d outputs, workspace %zu bytes\n", s->name,
         s->num_inputs, s->num_outputs, s->workspace_bytes);
  for (int i = 0; i < s->num_inputs; i++)
    printf("  in%d  %-12s %s\n", i, s->inputs[i].name,
           hx_desc_str(&s->inputs[i], ty, sizeof ty));
  for (int j = 0; j < s->num_outputs; j++)
    printf("  out%d %-12s %s\n", j, s->outputs[j].name,
           hx_desc_str(&s->outputs[j], ty, sizeof ty));
}

static double now_s(void)
{
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return ts.tv_sec + ts.tv_nsec * 1e-9;
}

static int time_calls(HxCall *c, int iters)
{
  double best = 1e30, total = 0;
  for (int i = 0; i < iters; i++) {
    double t0 = now_s();
    if (hx_run(c))
      return 1;
    double dt = now_s() - t0;
    total += dt;
    best = dt < best ? dt : best;
  }
  printf("time: %d calls, best %.3f ms, mean %.3f ms (%d threads)\n",
         iters, best * 1e3, total / iters * 1e3, rlx_get_num_threads());
  return 0;
}

static int run_fd(void *so, HxCall *fwd, const RunOpts *o)
{
  HxEntry fn;
  const rlx_signature *sig;
  if (!o->grad_entry) {
    fprintf(stderr, "rlx_run: --fd needs --grad-entry NAME_grad\n");
    return 2;
  }
  HxCall grad;
  if (!find_entry(so, o->grad_entry, &fn, &sig) ||
      !hx_call_init(&grad, fn, sig, o->null_ws))
    return 2;
  HxFdOpts fo = {o->fd_eps > 0 ? o->fd_eps : 1e-6,
                 o->have_tol ? o->tol : (HxTol){1e-5, 1e-7},
                 o->fd_max > 0 ? o->fd_max : 32, o->seed + 1};
  int bad = hx_fd_check(fwd, &grad, NULL, 0, &fo);
  hx_call_free(&grad);
  if (bad)
    fprintf(stderr, "FAIL: finite differences (%d)\n", bad);
  return bad < 0 ? 2 : bad ? 1 : 0;
}

static int check(HxCall *c, const RunOpts *o)
{
  int rc = hx_run(c);
  if (rc != o->expect) {
    fprintf(stderr, "FAIL: %s returned %d (%s), expected %d (%s)\n",
            c->sig->name, rc, rlx_strerror(rc), o->expect,
            rlx_strerror(o->expect));
    return 1;
  }
  if (rc != 0)
    return 0; /* outputs are unspecified on error */
  if (o->write_dir && !hx_write_outputs(c, o->write_dir))
    return 2;
  if (o->dir && !o->write_dir) {
    int bad = hx_compare_outputs(c, o->dir, o->have_tol ? &o->tol : NULL);
    if (bad) {
      fprintf(stderr, "FAIL: %s: %d output(s) differ from %s\n",
              c->sig->name, bad < 0 ? 0 : bad, o->dir);
      return bad < 0 ? 2 : 1;
    }
  }
  if (o->nthreads && !hx_check_threads(c, o->threads, o->nthreads)) {
    fprintf(stderr, "FAIL: results depend on the thread count\n");
    return 1;
  }
  if (o->concurrent > 0 && !hx_check_concurrent(c, o->concurrent, 3)) {
    fprintf(stderr, "FAIL: concurrent calls differ or fail\n");
    return 1;
  }
  return 0;
}

int main(int argc, char **argv)
{
  RunOpts o = {0};
  if (!parse_args(&o, argc, argv)) {
    usage();
    return 2;
  }
  void *so = dlopen(o.so, RTLD_NOW | RTLD_LOCAL);
  if (!so) {
    fprintf(stderr, "rlx_run: %s\n", dlerror());
    return 2;
  }
  HxEntry fn;
  const rlx_signature *sig;
  if (!find_entry(so, o.entry, &fn, &sig))
    return 2;
  if (o.print_sig)
    print_sig(sig);
  HxCall c;
  int status = 2;
  if (!hx_call_init(&c, fn, sig, o.null_ws))
    goto done;
  if (o.gen)
    hx_fill_inputs(&c, o.seed);
  else if (!hx_load_inputs(&c, o.dir))
    goto done;
  status = check(&c, &o);
  if (status == 0 && o.fd)
    status = run_fd(so, &c, &o);
  if (status == 0 && o.time_iters > 0)
    status = time_calls(&c, o.time_iters);
done:
  hx_call_free(&c);
  if (status == 0)
    printf("PASS %s\n", sig->name);
  return status;
}
