/* bench_scan_bwd.c -- latency of scan_backward + scan_backward_xs
 * written by hand (bench/bench_scan_bwd.rlx: carry f32[4096], 256
 * steps, lowered to two reverse scans by lower_scan_bwd) at 1 and 2
 * threads. Inputs uniform in [-1, 1).
 *   bench_scan_bwd [--seconds S]
 * prints bench/bench_time.h's line `rlx scan_bwd threads=T ...`.
 * bench/bench_scan_bwd_torch.py --rlx PATH runs it next to PyTorch.
 * Built by bench/CMakeLists.txt (target bench_scan_bwd, not in `all`). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bench/bench_time.h"
#include "bench_scan_bwd.h"
#include "tests/tools/harness.h"

static int run(void *c) { return hx_run(c); }

int main(int argc, char **argv)
{
  argc = bench_isa_args(argc, argv);
  double seconds = 2;
  for (int i = 1; i + 1 < argc; i++)
    if (!strcmp(argv[i], "--seconds"))
      seconds = atof(argv[++i]);
  HxCall c;
  if (!hx_call_init(&c, bench_scan_bwd, bench_scan_bwd_signature(), false))
    return 1;
  hx_fill_inputs(&c, 1);
  int rc = 0;
  for (int t = 1; t <= 2 && !rc; t++)
    rc = time_fn(run, &c, "scan_bwd", t, seconds);
  hx_call_free(&c);
  return rc;
}
