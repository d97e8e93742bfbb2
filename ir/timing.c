/* timing.c: the --time-passes report (like GCC's -ftime-report).
 *
 * A phase (the front end, each pass of the pipeline, code generation,
 * LLVM's optimizer and object emission) is bracketed by time_begin /
 * time_end on the Ctx; when the Ctx has no report (the option is off)
 * both do nothing. Per phase: wall time, CPU time of the process (all
 * threads), arena bytes allocated during it, and the peak resident set
 * size after it. time_print writes the table to a stream.
 */
#include "ir/ir.h"

#include <string.h>
#include <sys/resource.h>
#include <time.h>

static double clock_s(clockid_t id) {
  struct timespec ts;
  clock_gettime(id, &ts);
  return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

static double peak_rss_mib(void) {
  struct rusage r;
  return getrusage(RUSAGE_SELF, &r) == 0 ? (double)r.ru_maxrss / 1024 : 0;
}

void time_begin(Ctx *c, TimeMark *m) {
  if (!c->times) return;
  m->wall = clock_s(CLOCK_MONOTONIC);
  m->cpu = clock_s(CLOCK_PROCESS_CPUTIME_ID);
  m->mem = arena_used(c->arena);
}

void time_end(Ctx *c, const TimeMark *m, const char *what) {
  TimeReport *t = c->times;
  if (!t || t->n == TIME_MAX_PHASES) return;
  TimePhase *p = &t->phase[t->n++];
  p->what = what;
  p->wall = clock_s(CLOCK_MONOTONIC) - m->wall;
  p->cpu = clock_s(CLOCK_PROCESS_CPUTIME_ID) - m->cpu;
  size_t used = arena_used(c->arena);
  p->mem = used > m->mem ? used - m->mem : 0;
  p->rss = peak_rss_mib();
}

void time_print(const Ctx *c, FILE *f) {
  const TimeReport *t = c->times;
  if (!t) return;
  double wall = 0, cpu = 0;
  for (int i = 0; i < t->n; i++) {
    wall += t->phase[i].wall;
    cpu += t->phase[i].cpu;
  }
  fprintf(f, "===- rlxc: time and memory per phase (%s) -===\n"
             "%10s %6s %10s %12s %13s  %s\n", c->file ? c->file : "-",
          "wall ms", "%", "cpu ms", "arena KiB", "peak RSS MiB", "phase");
  for (int i = 0; i < t->n; i++) {
    const TimePhase *p = &t->phase[i];
    fprintf(f, "%10.2f %6.1f %10.2f %12.1f %13.1f  %s\n", p->wall * 1e3,
            wall > 0 ? 100 * p->wall / wall : 0, p->cpu * 1e3,
            (double)p->mem / 1024, p->rss, p->what);
  }
  fprintf(f, "%10.2f %6.1f %10.2f %12.1f %13.1f  total\n", wall * 1e3,
          100.0, cpu * 1e3, (double)arena_used(c->arena) / 1024,
          peak_rss_mib());
}
