/* alloc.c -- 64-byte aligned allocation for run-time buffers.
 *
 * rlx_alloc rounds the size up to a multiple of 64 (aligned_alloc needs
 * it) and never asks for 0 bytes, so every success is a unique pointer
 * that rlx_free (plain free) releases.
 */
#include <stdlib.h>

#include "runtime/rlxrt.h"

enum { RLX_ALIGN = 64 };

void *rlx_alloc(size_t bytes)
{
  if (bytes > SIZE_MAX - RLX_ALIGN)
    return NULL;
  size_t rounded = (bytes + RLX_ALIGN - 1) / RLX_ALIGN * RLX_ALIGN;
  if (rounded == 0)
    rounded = RLX_ALIGN;
  return aligned_alloc(RLX_ALIGN, rounded);
}

void rlx_free(void *p)
{
  free(p);
}
