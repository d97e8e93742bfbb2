/* attention_plan.c -- the scratch layout of one attention call
 * (AttnPlan, attention_internal.h): tile counts, dQ chunks, slots and
 * the byte offsets of every scratch area.  Depends only on the geometry,
 * op and element size (never on the CPU or the thread count); the
 * compiler links this file too, to reserve rlx_attention_scratch_bytes.
 */
#include <string.h>

#include "runtime/attention/attention_internal.h"
#include "runtime/rlxrt.h"

static int64_t cdiv(int64_t a, int64_t b)
{
  return (a + b - 1) / b;
}

static int64_t bump(int64_t *at, int64_t bytes)
{
  int64_t off = *at;
  *at += cdiv(bytes, 64) * 64;
  return off;
}

void rlx_attn_plan(const rlx_attn_geom *g, int op, int64_t es, AttnPlan *p)
{
  int64_t bh = g->b * g->h, at = 0;
  memset(p, 0, sizeof *p);
  p->nqt = cdiv(g->lq, ATTN_BQ);
  p->nkt = cdiv(g->lk, ATTN_BK);
  p->nch = bh >= ATTN_SLOTS ? 1 : cdiv(ATTN_SLOTS, bh > 0 ? bh : 1);
  if (p->nch > p->nkt)
    p->nch = p->nkt > 0 ? p->nkt : 1;
  int64_t items = bh * p->nqt;
  if (op != RLX_ATTN_FWD && bh * p->nch > items)
    items = bh * p->nch;
  p->nslots = items < ATTN_SLOTS ? items : ATTN_SLOTS;
  int64_t fwd = 2 * g->d * ATTN_BQ + ATTN_BK * ATTN_BQ + 3 * ATTN_BQ;
  int64_t bwd = 3 * ATTN_BK * ATTN_BQ + 2 * ATTN_BQ;
  int64_t slot = op == RLX_ATTN_BWD ? bwd : fwd > bwd ? fwd : bwd;
  if (op == RLX_ATTN_FWD)
    slot = fwd;
  p->slot_bytes = cdiv(slot * es, 64) * 64;
  p->slot_off = bump(&at, p->nslots * p->slot_bytes);
  if (op != RLX_ATTN_FWD) {
    int64_t tiles = bh * p->nqt;
    p->qt_off = bump(&at, tiles * g->d * ATTN_BQ * es);
    p->dot_off = bump(&at, tiles * g->d * ATTN_BQ * es);
    p->dd_off = bump(&at, tiles * ATTN_BQ * es);
    p->dqp_off = bump(&at, (p->nch - 1) * bh * g->lq * g->d * es);
  }
  if (op == RLX_ATTN_BWD_RECOMPUTE) {
    p->o_off = bump(&at, bh * g->lq * g->d * es);
    p->lse_off = bump(&at, bh * g->lq * es);
  }
  p->total = at;
}

int64_t rlx_attention_scratch_bytes(const rlx_attn_geom *g, int op,
                                    int64_t elem_size)
{
  AttnPlan p;
  rlx_attn_plan(g, op, elem_size, &p);
  return p.total;
}
