/* alloc.c -- 64-byte aligned allocation for run-time buffers, and the
 * per-thread scratch that GEMM packs into (rlx_thread_scratch).
 *
 * rlx_alloc rounds the size up to a multiple of 64 (aligned_alloc needs
 * it) and never asks for 0 bytes, so every success is a unique pointer
 * that rlx_free (plain free) releases.
 */
#include <pthread.h>
#include <stdlib.h>

#include "runtime/gemm/gemm_internal.h"
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

/* First fit over the blocks live at each definition: act lists them
   by offset (a new block goes between its neighbours), and since
   definitions only grow, a block dead at one stays dead. */
int64_t rlx_ws_layout(int64_t n, const int64_t *range, int64_t base,
                      int64_t *tab)
{
  int64_t *off = tab, *bytes = tab + n, *act = tab + 2 * n, na = 0;
  int64_t top = base;
  for (int64_t k = 0; k < n; k++) {
    int64_t def = range[2 * k], m = 0, at = base, i = 0, end;
    if (bytes[k] < 0 || bytes[k] > INT64_MAX - RLX_ALIGN)
      return -1;
    bytes[k] = (bytes[k] + RLX_ALIGN - 1) / RLX_ALIGN * RLX_ALIGN;
    for (int64_t j = 0; j < na; j++)
      if (range[2 * act[j] + 1] >= def)
        act[m++] = act[j];
    na = m;
    off[k] = base;
    if (!bytes[k])
      continue;
    for (; i < na; i++) {
      int64_t j = act[i];
      if (at <= off[j] - bytes[k])
        break; /* [at, at + bytes) fits below block j */
      if (off[j] + bytes[j] > at)
        at = off[j] + bytes[j];
    }
    if (__builtin_add_overflow(at, bytes[k], &end))
      return -1;
    for (int64_t j = na; j > i; j--)
      act[j] = act[j - 1];
    act[i] = k;
    na++;
    off[k] = at;
    if (end > top)
      top = end;
  }
  return top;
}

/* Per-thread scratch (GEMM packing buffers): one grow-only buffer per
   thread, found through a pthread key whose destructor frees it when
   the thread exits.  The key is the only state; it is created once. */
typedef struct {
  void *p;
  size_t bytes;
} Scratch;

static pthread_key_t scratch_key;
static pthread_once_t scratch_once = PTHREAD_ONCE_INIT;
static int scratch_key_ok;

static void scratch_free(void *v)
{
  Scratch *s = v;
  rlx_free(s->p);
  free(s);
}

static void scratch_init(void)
{
  scratch_key_ok = pthread_key_create(&scratch_key, scratch_free) == 0;
}

void *rlx_thread_scratch(size_t bytes)
{
  pthread_once(&scratch_once, scratch_init);
  if (!scratch_key_ok)
    return NULL;
  Scratch *s = pthread_getspecific(scratch_key);
  if (!s) {
    s = calloc(1, sizeof *s);
    if (!s || pthread_setspecific(scratch_key, s) != 0) {
      free(s);
      return NULL;
    }
  }
  if (s->bytes < bytes) {
    void *p = rlx_alloc(bytes);
    if (!p)
      return NULL;
    rlx_free(s->p);
    s->p = p;
    s->bytes = bytes;
  }
  return s->p;
}
