/* fft_plan.c -- the stage structure of an rlx_fft_c64 call and the
 * layout of its scratch (FftLayout, fft_internal.h); depends only on
 * rows and n.  The compiler links this file too, to reserve
 * rlx_fft_scratch_bytes and size its constant tables
 * (rlx_fft_tables_bytes).
 */
#include <math.h>
#include <string.h>

#include "runtime/fft/fft_internal.h"
#include "runtime/rlxrt.h"

static int64_t bump(int64_t *at, int64_t bytes)
{
  int64_t off = *at;
  *at += (bytes + 63) / 64 * 64;
  return off;
}

int64_t rlx_fft_isqrt_up(int64_t v)
{
  int64_t f = (int64_t)sqrt((double)v);
  while (f * f < v)
    f++;
  return f > 0 ? f : 1;
}

/* Radices of len (4s, a 2, 3s, then primes), or 0 if a prime factor
 * exceeds FFT_MAX_RADIX. */
static int factor(int64_t len, FftPlan *p)
{
  p->len = len;
  p->nst = 0;
  int64_t s = 1, rest = len;
  while (rest > 1) {
    int64_t r;
    if (rest % 4 == 0)
      r = 4;
    else if (rest % 2 == 0)
      r = 2;
    else {
      r = 3;
      while (rest % r)
        r += 2;
      if (r > FFT_MAX_RADIX)
        return 0;
    }
    FftStage *st = &p->st[p->nst++];
    memset(st, 0, sizeof *st);
    st->r = r;
    st->s = s;
    st->m = rest / r;
    s *= r;
    rest /= r;
  }
  return 1;
}

void rlx_fft_layout(int64_t rows, int64_t n, FftLayout *L)
{
  /* field by field: the plan's unused stages stay unwritten (a memset
   * of all FFT_MAX_STAGES was a tenth of a 256-point call) */
  L->n = n;
  L->len = n;
  L->bluestein = 0;
  L->ntw = L->nom = L->chirp_off = L->h_off = 0;
  if (!factor(n, &L->plan)) {
    L->bluestein = 1;
    L->len = 1; /* the next power of two: the fastest stages */
    while (L->len < 2 * n - 1)
      L->len *= 2;
    factor(L->len, &L->plan);
  }
  int64_t at = 0, len = L->len;
  for (int i = 0; i < L->plan.nst; i++) {
    const FftStage *st = &L->plan.st[i];
    L->ntw += (st->r - 1) * st->m;
    if (st->r > 5)
      L->nom += st->r;
  }
  L->w_off = bump(&at, 2 * len * 4);
  L->tab_at = at; /* the tables' offsets count from here */
  L->tw_off = bump(&at, 2 * L->ntw * 4) - L->tab_at;
  L->om_off = bump(&at, 2 * L->nom * 4) - L->tab_at;
  if (L->bluestein) {
    L->chirp_off = bump(&at, 2 * n * 4) - L->tab_at;
    L->h_off = bump(&at, 2 * len * 4) - L->tab_at;
  }
  L->tab_bytes = at - L->tab_at;
  /* coarse + fine tables for len and, for Bluestein, for 2n */
  L->root_off = bump(&at, 2 * 2 * (rlx_fft_isqrt_up(2 * len) + 2) * 16);
  int64_t per = rows * len;
  L->nslots = per / 2048 < 1 ? 1 : per / 2048;
  if (L->nslots > FFT_SLOTS)
    L->nslots = FFT_SLOTS;
  if (L->nslots > rows)
    L->nslots = rows > 0 ? rows : 1;
  L->slot_bytes = ((4 * len + 6 * FFT_PAD) * 4 + 63) / 64 * 64;
  L->slot_off = bump(&at, L->nslots * L->slot_bytes);
  L->total = at;
}

int64_t rlx_fft_scratch_bytes(int64_t rows, int64_t n)
{
  if (rows <= 0 || n <= 0)
    return 0;
  FftLayout L;
  rlx_fft_layout(rows, n, &L);
  return L.total;
}


int64_t rlx_fft_tables_bytes(int64_t n)
{
  if (n <= 0)
    return 0;
  FftLayout L;
  rlx_fft_layout(1, n, &L);
  return L.tab_bytes;
}
