/* isa.h -- choosing kernel ISAs in runtime unit tests.
 *
 * A test that compares ISAs takes its reference from "scalar" (always
 * present) and runs each other ISA the CPU has; an ISA the CPU, the
 * build or RLX_ISA leaves out is skipped with a line on stderr saying
 * so (once per ISA and process), never silently and never by comparing
 * against a buffer nobody wrote. */
#ifndef RLX_TEST_ISA_H
#define RLX_TEST_ISA_H
#include <stdio.h>
#include <string.h>

#include "runtime/rlxrt.h"

/* The portable reference first, then the vector ISAs (rlx_gemm_isa's
   names; a CPU has NEON or the x86 ones). */
static const char *const test_isas[] = {"scalar", "neon", "avx2", "avx512"};
enum { N_TEST_ISAS = 4 };

/* Says once per name that the isa kernels (any name: a GEMM ISA, an
   int8 kernel) are skipped. */
static inline void test_isa_skip(const char *isa)
{
  static const char *said[16];
  int i = 0;
  for (; i < 16 && said[i]; i++)
    if (strcmp(said[i], isa) == 0)
      return;
  if (i < 16)
    said[i] = isa;
  fprintf(stderr, "\n  skip: the %s kernels (this CPU or build lacks "
          "them, or RLX_ISA hides them)\n", isa);
}

/* Selects isa for the kernels; when unavailable, says so and returns 0. */
static inline int test_isa_use(const char *isa)
{
  if (rlx_gemm_select_isa(isa) == RLX_OK)
    return 1;
  test_isa_skip(isa);
  return 0;
}
#endif
