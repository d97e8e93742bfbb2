/* assert.c: the failure path of RLX_ASSERT (ir.h), the lowest file of
 * the compiler: internal invariants print __FILE__:__LINE__ and abort.
 * A user's input must never reach it. */
#include "ir/ir.h"

#include <stdio.h>
#include <stdlib.h>

void rlx_assert_fail(const char *file, int line, const char *expr) {
  fprintf(stderr, "%s:%d: internal error: assertion `%s' failed\n", file,
          line, expr);
  abort();
}
