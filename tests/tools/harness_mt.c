/* harness_mt.c -- reentrancy check of a generated entry point (abi.md
 * section 3: concurrent calls with distinct workspaces and outputs are
 * allowed).  Declared in harness.h: hx_check_concurrent.
 *
 * n user threads each own a copy of the call (inputs copied from the
 * reference call, their own outputs and workspace, or NULL workspace
 * when the reference uses one) and call the entry `reps` times at once;
 * every result must equal the reference call's outputs bit for bit.
 */
#include "tests/tools/harness.h"

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef struct {
  HxCall call;
  int reps, rc;
} Worker;

static void *worker_main(void *arg)
{
  Worker *w = arg;
  for (int r = 0; r < w->reps && w->rc == 0; r++)
    w->rc = hx_run(&w->call);
  return NULL;
}

static bool same_outputs(const HxCall *a, const HxCall *b, int k)
{
  for (int j = 0; j < a->sig->num_outputs; j++)
    if (memcmp(a->out[j].data, b->out[j].data, a->out[j].bytes) != 0) {
      fprintf(stderr, "harness: concurrent call %d: output %d differs "
              "from the serial call\n", k, j);
      return false;
    }
  return true;
}

bool hx_check_concurrent(HxCall *c, int n, int reps)
{
  int rc = hx_run(c);
  if (rc) {
    fprintf(stderr, "harness: entry returned %d\n", rc);
    return false;
  }
  Worker *w = calloc((size_t)n, sizeof *w);
  pthread_t *th = calloc((size_t)n, sizeof *th);
  bool ok = w && th;
  int started = 0;
  for (int k = 0; ok && k < n; k++) {
    ok = hx_call_init(&w[k].call, c->fn, c->sig, c->null_ws) &&
         hx_copy_inputs(&w[k].call, c, c->sig->num_inputs);
    w[k].reps = reps;
  }
  for (; ok && started < n; started++)
    ok = pthread_create(&th[started], NULL, worker_main,
                        &w[started]) == 0;
  for (int k = 0; k < started; k++)
    pthread_join(th[k], NULL);
  for (int k = 0; ok && k < n; k++) {
    if (w[k].rc) {
      fprintf(stderr, "harness: concurrent call %d returned %d (%s)\n", k,
              w[k].rc, rlx_strerror(w[k].rc));
      ok = false;
    } else {
      ok = same_outputs(&w[k].call, c, k);
    }
  }
  for (int k = 0; w && k < n; k++)
    hx_call_free(&w[k].call);
  free(w);
  free(th);
  return ok;
}
