/* conv_plan.c -- the plan of a convolution call (conv_internal.h) and
 * its scratch size, rlx_conv2d_scratch_bytes.
 *
 * Compiled into librlxrt and into the compiler, which reserves this
 * many bytes of a conv node's workspace, so both agree on one formula.
 * Self-contained (libc only), and independent of the CPU: every size
 * is a bound over the kernels of all ISAs (conv_internal.h).
 *
 * Scratch: the shared part (the packed weights, or the partial dW of
 * each reduction chunk), then `slots` equal slot areas, each holding
 * one item's planes, offset table and C tile (or transposed tile).
 * Tiles are as many output rows as fit the slot size (SLOT_BYTES,
 * WSLOT_BYTES), but small enough that there are ~2 * CONV_SLOTS items
 * (unless a tile would then hold less than ITEM_FLOPS of work); the
 * partial dW take at most PART_BYTES (unless one chunk needs more).
 * So about 16 * 352 KiB + 1 MiB < 7 MiB at most for usual layers, and
 * independent of the batch size once it gives 32 items.
 */
#include <string.h>

#include "runtime/conv/conv_internal.h"

enum {
  SLOT_BYTES = 256 << 10,  /* per slot (igemm, wdot) */
  WSLOT_BYTES = 352 << 10, /* per slot (wgemm) */
  PART_BYTES = 2 << 20,    /* partial dW of all chunks */
  ITEM_FLOPS = 1 << 20     /* least work worth a separate item */
};

static int64_t cdiv(int64_t a, int64_t b)
{
  return (a + b - 1) / b;
}

static int64_t rup(int64_t a, int64_t b)
{
  return cdiv(a, b) * b;
}

static int64_t min64(int64_t a, int64_t b)
{
  return a < b ? a : b;
}

static int64_t gcd64(int64_t a, int64_t b)
{
  while (b) {
    int64_t t = a % b;
    a = b;
    b = t;
  }
  return a;
}

/* Distinct stride phases that taps 0..k-1 (dilation d, stride s) hit:
   r*d mod s repeats with period s / gcd(d, s). */
static int64_t phases_used(int64_t k, int64_t d, int64_t s)
{
  return min64(k, s / gcd64(d, s));
}

/* K block: equal blocks of at most 384 (f32) / 256 (f64) columns. */
static int64_t kblock(int64_t k, int64_t es)
{
  int64_t kc = es == 4 ? 384 : 256;
  return cdiv(k, cdiv(k, kc));
}

/* Elements of one plane for tiles of rt rows; the slack after the last
   row covers the reads of a whole column panel past it. */
static int64_t plane_elems(const ConvPlan *p, int64_t rt)
{
  return rup((rt + p->rho + 1) * p->We + p->kap + CONV_PW, 16);
}

static int64_t bytes64(int64_t elems, int64_t es)
{
  return rup(elems * es, 64);
}

static int64_t slot_bytes(const ConvPlan *p, const rlx_conv_geom *g,
                          int64_t rt)
{
  int64_t es = p->es, pe = plane_elems(p, rt), cols = rt * p->We;
  int64_t planes = bytes64(p->np * p->SC * pe, es);
  if (p->path == CONV_IGEMM)
    return bytes64(p->K, 8) + planes +
           bytes64((p->M + CONV_RPAD) * (cols + CONV_PW), es);
  if (p->path == CONV_WGEMM) { /* boff, planeT, dyT, 16 channels of
                                  planes or of dy */
    int64_t tmp = p->direct ? 0 : 16 * (p->np * pe > cols ? p->np * pe
                                                           : cols);
    return bytes64(p->kc, 8) + bytes64(p->np * p->cgp * pe, es) +
           bytes64(cols * p->ogp, es) + bytes64(tmp, es);
  }
  return bytes64(rup(p->K, CONV_DK), 8) + planes +
         bytes64(p->M * (cols + 16), es);
}

/* Rows per tile: the most that fit the slot (at least 1); fewer when
   `outer` (items per tile index) is too small to keep the slots busy,
   but not below ITEM_FLOPS of work per tile. */
static void choose_tiles(ConvPlan *p, const rlx_conv_geom *g,
                         int64_t outer)
{
  int64_t lo = 1, hi = p->U > 1 ? p->U : 1;
  int64_t budget = p->path == CONV_WGEMM ? WSLOT_BYTES : SLOT_BYTES;
  while (lo < hi) {
    int64_t mid = (lo + hi + 1) / 2;
    if (slot_bytes(p, g, mid) <= budget)
      lo = mid;
    else
      hi = mid - 1;
  }
  if (outer > 0 && outer < 2 * CONV_SLOTS) {
    int64_t row_flops = 2 * p->M * p->SC * p->khkw * p->We;
    int64_t least = cdiv(ITEM_FLOPS, row_flops > 0 ? row_flops : 1);
    int64_t want = cdiv(p->U, cdiv(2 * CONV_SLOTS, outer));
    want = want > least ? want : least;
    lo = min64(lo, want);
  }
  p->rt = lo > 1 ? lo : 1;
  p->tiles = cdiv(p->U, p->rt);
}

static void plan_planes(ConvPlan *p, const rlx_conv_geom *g)
{
  p->rho = (g->kh - 1) * g->dh / g->sh;
  p->kap = (g->kw - 1) * g->dw / g->sw;
  if (p->op == RLX_CONV_BWD_INPUT) {
    p->np = 1;
    p->nphase = g->sh * g->sw;
    p->U = cdiv(g->h, g->sh);
    p->We = cdiv(g->w, g->sw) + p->kap;
  } else {
    p->np = phases_used(g->kh, g->dh, g->sh) *
            phases_used(g->kw, g->dw, g->sw);
    p->nphase = 1;
    p->U = g->oh;
    p->We = g->ow + p->kap;
  }
}

/* Backward weight: chunks of the (image, tile) units and row blocks. */
static void plan_reduction(ConvPlan *p)
{
  int64_t one = p->G * p->prow * p->pcol * p->es;
  p->nch = min64(p->units, CONV_SLOTS);
  while (p->nch > 1 && p->nch * one > PART_BYTES)
    p->nch--;
  /* Row blocks redo the transposes ((cg + og) per t) for their rows
     (rows * og FMAs per t): at least 32 * (cg + og) / og rows each. */
  p->nkb = 1;
  if (p->path == CONV_WGEMM && p->nch * p->G < CONV_SLOTS) {
    int64_t og = p->M, least = rup(cdiv(32 * (p->SC + og), og), CONV_WR);
    p->nkb = min64(cdiv(CONV_SLOTS, p->nch * p->G),
                   p->prow / CONV_WR);
    p->nkb = min64(p->nkb, p->prow / least > 1 ? p->prow / least : 1);
  }
  p->items = p->nch * p->G * p->nkb;
  p->shared_bytes = bytes64(p->nch * p->G * p->prow * p->pcol, p->es);
}

void rlx_conv_plan(const rlx_conv_geom *g, int op, int64_t elem_size,
                   ConvPlan *p)
{
  memset(p, 0, sizeof *p);
  p->op = op;
  p->es = elem_size;
  p->G = g->groups;
  if (g->groups <= 0 || g->sh <= 0 || g->sw <= 0 || g->dh <= 0 ||
      g->dw <= 0)
    return;
  int64_t cg = g->c / g->groups, og = g->co / g->groups;
  if (g->n <= 0 || cg <= 0 || og <= 0 || g->oh <= 0 || g->ow <= 0 ||
      g->kh <= 0 || g->kw <= 0)
    return; /* nothing to compute: outputs are zero-filled */
  p->khkw = g->kh * g->kw;
  p->M = op == RLX_CONV_BWD_INPUT ? cg : og;
  p->SC = op == RLX_CONV_BWD_INPUT ? og : cg;
  p->K = p->SC * p->khkw;
  p->kc = kblock(p->K, elem_size);
  plan_planes(p, g);
  if (op != RLX_CONV_BWD_WEIGHT && g->kh == 1 && g->kw == 1 &&
      g->sh == 1 && g->sw == 1 && g->ph == 0 && g->pw == 0) {
    p->path = CONV_GEMM11; /* no scratch: rlx_gemm packs per thread */
    p->items = 1;
    return;
  }
  if (op != RLX_CONV_BWD_WEIGHT) {
    p->path = CONV_IGEMM;
    choose_tiles(p, g, g->n * p->G * p->nphase);
    p->items = g->n * p->G * p->nphase * p->tiles;
    p->shared_bytes = bytes64(p->G * (p->M + CONV_RPAD) * p->K, p->es);
  } else {
    int64_t es = elem_size;
    p->path = cg >= CONV_WR ? CONV_WGEMM : CONV_WDOT;
    p->cgp = rup(cg, CONV_WR);
    p->ogp = rup(og, 16);
    p->direct = g->kh == 1 && g->kw == 1 && g->sh == 1 && g->sw == 1 &&
                g->ph == 0 && g->pw == 0;
    p->kc = 384; /* longest wgemm kernel call (t block) */
    choose_tiles(p, g, g->n);
    p->units = g->n * p->tiles;
    /* byrow: a tap row's kw * cgp columns whole vectors of every ISA */
    p->byrow = p->path == CONV_WGEMM && !p->direct && g->sh == 1 &&
               g->sw == 1 && g->dh == 1 && g->dw == 1 &&
               g->kw * p->cgp % 16 == 0;
    p->prow = p->path != CONV_WGEMM ? og
              : p->byrow ? p->ogp : p->khkw * p->cgp;
    p->pcol = p->path != CONV_WGEMM ? rup(p->K, CONV_DK) * (64 / es)
              : p->byrow ? p->khkw * p->cgp : p->ogp;
    plan_reduction(p);
  }
  p->pstride = plane_elems(p, p->rt);
  p->slots = min64(p->items, CONV_SLOTS);
  p->slot_bytes = slot_bytes(p, g, p->rt);
  p->shared_off = 0;
  p->slot_off = p->shared_bytes;
  p->total = p->slot_off + p->slots * p->slot_bytes;
}

int64_t rlx_conv2d_scratch_bytes(const rlx_conv_geom *g, int op,
                                 int64_t elem_size)
{
  ConvPlan p;
  rlx_conv_plan(g, op, elem_size, &p);
  return p.total;
}
