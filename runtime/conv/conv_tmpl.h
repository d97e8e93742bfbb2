/* conv_tmpl.h -- the convolution drivers for one element type, on the
 * plan of conv_plan.c and the kernels of conv_kern.h (the lowering is
 * described in conv_internal.h).  Included by conv.c with T (float or
 * double), SFX (F32 / F64), SFXL (f32 / f64) and FN(name) (name##f32 /
 * name##f64) defined.
 *
 * Work split: parallel_for over the plan's slots; each slot claims
 * items from the job's counter until none is left, and runs them one
 * after another in its own scratch area (claimed, not split in fixed
 * ranges: images whose data is slow, e.g. subnormal gradients, would
 * otherwise hold up one slot).  An item's results never depend on which
 * slot runs it.
 */
#define ISA_T CAT(ConvIsa, SFX)

typedef struct {
  const ConvPlan *pl;
  const rlx_conv_geom *g;
  const ISA_T *isa;
  const T *src, *w, *dy; /* src: x, or dy for backward input */
  T *dst;
  char *scratch;
  int ri, V;             /* igemm kernel: R = conv_rows[ri], V */
  int64_t per_h, per_w, nqb; /* forward-style plane periods */
  atomic_llong *next;    /* next unclaimed item */
} FN(Job_);

/* One output phase of an igemm item (forward: the only one). */
typedef struct {
  int64_t a, b;        /* residues of the backward-input phase */
  int64_t U, Vn, We;   /* output rows, columns; plane width */
  int64_t h0, w0;      /* source row/col of plane (0, 0), tile 0 */
  int64_t sh, sw;      /* source step per plane row / column */
  int64_t dh0, dw0;    /* destination row/col of output (0, 0) */
  int64_t dsh, dsw;    /* destination step per output row / column */
  int64_t ntap;        /* taps of this phase */
} FN(Phase_);

static inline int64_t FN(cdiv_)(int64_t a, int64_t b)
{
  return (a + b - 1) / b;
}

static inline int64_t FN(min_)(int64_t a, int64_t b)
{
  return a < b ? a : b;
}

static inline int64_t FN(rup_)(int64_t a, int64_t b)
{
  return FN(cdiv_)(a, b) * b;
}

static inline int64_t FN(gcd_)(int64_t a, int64_t b)
{
  while (b) {
    int64_t t = a % b;
    a = b;
    b = t;
  }
  return a;
}

/* Forward-style planes: plane index of tap (r, q) is
   (r mod per_h) * nqb + (q mod per_w) (r*dh mod sh repeats with period
   per_h, conv_plan.c). */
static void FN(periods_)(const rlx_conv_geom *g, int64_t *per_h,
                         int64_t *per_w, int64_t *nqb)
{
  *per_h = g->sh / FN(gcd_)(g->dh, g->sh);
  *per_w = g->sw / FN(gcd_)(g->dw, g->sw);
  *nqb = FN(min_)(g->kw, *per_w);
}

/* Copies and zero fills of row pieces (often 14-56 elements: a libc
   call costs more than the copy) in 32-byte fixed-size memcpy / memset
   (inlined as vector moves), the last one overlapping. */
enum { FN(CH_) = 32 / (int)sizeof(T) };

static inline void FN(copy_)(T *d, const T *s, int64_t n)
{
  if (n < FN(CH_)) {
    for (int64_t i = 0; i < n; i++)
      d[i] = s[i];
    return;
  }
  if (n <= 4 * FN(CH_)) { /* the usual rows: 2-4 moves, no loop */
    memcpy(d, s, 32);
    if (n > 2 * FN(CH_))
      memcpy(d + FN(CH_), s + FN(CH_), 32);
    if (n > 3 * FN(CH_))
      memcpy(d + 2 * FN(CH_), s + 2 * FN(CH_), 32);
    memcpy(d + n - FN(CH_), s + n - FN(CH_), 32);
    return;
  }
  for (int64_t i = 0; i + FN(CH_) <= n; i += FN(CH_))
    memcpy(d + i, s + i, 32);
  memcpy(d + n - FN(CH_), s + n - FN(CH_), 32);
}


static inline void FN(zero_)(T *d, int64_t n)
{
  if (n < FN(CH_)) {
    for (int64_t i = 0; i < n; i++)
      d[i] = 0;
    return;
  }
  for (int64_t i = 0; i + FN(CH_) <= n; i += FN(CH_))
    memset(d + i, 0, 32);
  memset(d + n - FN(CH_), 0, 32);
}

/* Does tap row r (column q) belong to output phase a (b)? */
static inline int FN(tap_in_)(const rlx_conv_geom *g, int op, int64_t r,
                              int64_t d, int64_t s, int64_t a)
{
  return op != RLX_CONV_BWD_INPUT || r * d % s == a;
}

static int64_t FN(count_taps_)(const rlx_conv_geom *g, int op, int64_t k,
                               int64_t d, int64_t s, int64_t a)
{
  int64_t n = 0;
  for (int64_t r = 0; r < k; r++)
    n += FN(tap_in_)(g, op, r, d, s, a);
  return n;
}

/* First index of the rows in phase a with h = u*s + a - p in [0, n):
   u in [lo, lo + count). */
static void FN(phase_range_)(int64_t n, int64_t p, int64_t a, int64_t s,
                             int64_t *lo, int64_t *count)
{
  int64_t x = p - a, y = n - 1 + p - a;
  *lo = x > 0 ? FN(cdiv_)(x, s) : 0;
  int64_t hi = y >= 0 ? y / s + 1 : 0;
  *count = hi > *lo ? hi - *lo : 0;
}

static FN(Phase_) FN(phase_)(const FN(Job_) *jb, int64_t ph)
{
  const rlx_conv_geom *g = jb->g;
  const ConvPlan *pl = jb->pl;
  FN(Phase_) P = {0};
  if (pl->op != RLX_CONV_BWD_INPUT) {
    P.U = g->oh;
    P.Vn = g->ow;
    P.We = pl->We;
    P.h0 = -g->ph;
    P.w0 = -g->pw;
    P.sh = g->sh;
    P.sw = g->sw;
    P.dsh = P.dsw = 1;
    P.ntap = pl->khkw;
    return P;
  }
  int64_t ulo, vlo;
  P.a = ph / g->sw;
  P.b = ph % g->sw;
  FN(phase_range_)(g->h, g->ph, P.a, g->sh, &ulo, &P.U);
  FN(phase_range_)(g->w, g->pw, P.b, g->sw, &vlo, &P.Vn);
  P.We = P.Vn + pl->kap;
  P.h0 = ulo - pl->rho;
  P.w0 = vlo - pl->kap;
  P.sh = P.sw = 1;
  P.dh0 = ulo * g->sh + P.a - g->ph;
  P.dw0 = vlo * g->sw + P.b - g->pw;
  P.dsh = g->sh;
  P.dsw = g->sw;
  P.ntap = FN(count_taps_)(g, pl->op, g->kh, g->dh, g->sh, P.a) *
           FN(count_taps_)(g, pl->op, g->kw, g->dw, g->sw, P.b);
  return P;
}

/* Plane offset of tap (r, q) of source channel s: plane index, then the
   tap's row and column offsets inside the plane. */
static int64_t FN(tap_off_)(const FN(Job_) *jb, const FN(Phase_) *P,
                            int64_t s, int64_t r, int64_t q)
{
  const rlx_conv_geom *g = jb->g;
  const ConvPlan *pl = jb->pl;
  int64_t rr = r * g->dh / g->sh, qq = q * g->dw / g->sw, pi = 0;
  if (pl->op == RLX_CONV_BWD_INPUT) {
    rr = pl->rho - rr;
    qq = pl->kap - qq;
  } else {
    pi = r % jb->per_h * jb->nqb + q % jb->per_w;
  }
  return (s * pl->np + pi) * pl->pstride + rr * P->We + qq;
}

/* boff[k] for k = (s, tap) in the phase's order: s outer, then taps of
   the phase row-major (the order of pack_a_).  Returns the count. */
static int64_t FN(fill_boff_)(const FN(Job_) *jb, const FN(Phase_) *P,
                              int64_t *boff)
{
  const rlx_conv_geom *g = jb->g;
  int op = jb->pl->op;
  int64_t nt = 0;
  for (int64_t r = 0; r < g->kh; r++) {
    if (!FN(tap_in_)(g, op, r, g->dh, g->sh, P->a))
      continue;
    for (int64_t q = 0; q < g->kw; q++)
      if (FN(tap_in_)(g, op, q, g->dw, g->sw, P->b))
        boff[nt++] = FN(tap_off_)(jb, P, 0, r, q);
  }
  int64_t step = jb->pl->np * jb->pl->pstride;
  for (int64_t s = 1; s < jb->pl->SC; s++)
    for (int64_t t = 0; t < nt; t++)
      boff[s * nt + t] = boff[t] + s * step;
  return jb->pl->SC * nt;
}

/* Fill rows [0, rows) of one plane from source plane src (h x w):
   element (u, v) = src[u*sh + h0][v*sw + w0], 0 outside; the rest of
   the plane (the slack that column panels read) is zero.  Rows that
   are contiguous in both (no column padding, unit steps) are copied as
   one block. */
static void FN(plane_fill_)(T *dst, int64_t rows, int64_t We, int64_t ps,
                            const T *src, int64_t h, int64_t w, int64_t h0,
                            int64_t w0, int64_t sh, int64_t sw)
{
  int64_t v0 = w0 < 0 ? FN(min_)(FN(cdiv_)(-w0, sw), We) : 0;
  int64_t v1 = w0 < w ? FN(min_)(FN(cdiv_)(w - w0, sw), We) : 0;
  int64_t u0 = h0 < 0 ? FN(min_)(FN(cdiv_)(-h0, sh), rows) : 0;
  int64_t u1 = h0 < h ? FN(min_)(FN(cdiv_)(h - h0, sh), rows) : 0;
  v1 = v1 < v0 ? v0 : v1;
  u1 = u1 < u0 ? u0 : u1;
  FN(zero_)(dst, u0 * We);
  if (v0 == 0 && v1 == We && We == w && sw == 1 && sh == 1)
    memcpy(dst + u0 * We, src + (h0 + u0) * w,
           (size_t)((u1 - u0) * We) * sizeof(T));
  else if (sw == 1) {
    /* The right padding of row u and the left one of row u + 1 are one
       gap: zeroed in one 32-byte store where the next row's data (at
       least that long) overwrites what it spills over, exactly after
       the last row. */
    int64_t gap = We - v1 + v0;
    FN(zero_)(dst + u0 * We, v0);
    for (int64_t u = u0; u < u1; u++) {
      T *d = dst + u * We;
      FN(copy_)(d + v0, src + (u * sh + h0) * w + w0 + v0, v1 - v0);
      if (u + 1 < u1 && gap <= FN(CH_) && v1 - v0 >= FN(CH_))
        memset(d + v1, 0, 32);
      else
        FN(zero_)(d + v1, u + 1 < u1 ? gap : We - v1);
    }
  } else
    for (int64_t u = u0; u < u1; u++) {
      const T *row = src + (u * sh + h0) * w;
      T *d = dst + u * We;
      for (int64_t v = 0; v < We; v++)
        d[v] = v >= v0 && v < v1 ? row[v * sw + w0] : 0;
    }
  FN(zero_)(dst + u1 * We, ps - u1 * We);
}

/* The planes of source channels [s0, s0 + ns) of image n, group gi,
   for tile rows [u0, u0 + rows - rho): forward style (one plane per
   stride phase in use) or backward-input style (one plane). */
static void FN(build_planes_)(const FN(Job_) *jb, const FN(Phase_) *P,
                              const T *src, int64_t sc_total, int64_t n,
                              int64_t gi, int64_t s0, int64_t ns,
                              int64_t u0, int64_t rows, T *planes)
{
  const rlx_conv_geom *g = jb->g;
  const ConvPlan *pl = jb->pl;
  int bwd = pl->op == RLX_CONV_BWD_INPUT;
  int64_t hs = bwd ? g->oh : g->h, ws = bwd ? g->ow : g->w, nqb = jb->nqb;
  for (int64_t s = 0; s < ns; s++) {
    const T *sp = src + (n * sc_total + gi * pl->SC + s0 + s) * hs * ws;
    for (int64_t pi = 0; pi < pl->np; pi++) {
      int64_t al = bwd ? 0 : pi / nqb * g->dh % g->sh;
      int64_t be = bwd ? 0 : pi % nqb * g->dw % g->sw;
      FN(plane_fill_)(planes + (s * pl->np + pi) * pl->pstride, rows,
                      P->We, pl->pstride, sp, hs, ws,
                      u0 * P->sh + P->h0 + al, P->w0 + be, P->sh, P->sw);
    }
  }
}

/* Carve the next `bytes` (rounded to 64) of a slot area. */
static void *FN(carve_)(char **at, int64_t bytes)
{
  void *p = *at;
  *at += (bytes + 63) / 64 * 64;
  return p;
}

static int64_t FN(kblock_)(int64_t k)
{
  int64_t kc = sizeof(T) == 4 ? 384 : 256;
  return FN(cdiv_)(k, FN(cdiv_)(k, kc));
}

/* ---------------- igemm: forward and backward input ---------------- */

static int64_t FN(mp_)(const FN(Job_) *jb)
{
  return FN(rup_)(jb->pl->M, conv_rows[jb->ri]);
}

/* Packed A of (group, phase): element offset in the shared area. */
static int64_t FN(a_off_)(const FN(Job_) *jb, int64_t gi, int64_t ph)
{
  int64_t off = gi * FN(mp_)(jb) * jb->pl->K;
  for (int64_t p = 0; p < ph; p++)
    off += FN(mp_)(jb) * jb->pl->SC * FN(phase_)(jb, p).ntap;
  return off;
}

/* Weights of (group gi, phase ph) as R-row panels per K block:
   A(m, k) at pc*Mp + (m/R)*R*kc + (k-pc)*R + m%R, k = (s, tap) in the
   order of fill_boff_, rows m >= M zero. */
static void FN(pack_a_)(const FN(Job_) *jb, int64_t gi, int64_t ph)
{
  const rlx_conv_geom *g = jb->g;
  const ConvPlan *pl = jb->pl;
  FN(Phase_) P = FN(phase_)(jb, ph);
  int64_t kp = pl->SC * P.ntap, R = conv_rows[jb->ri], mp = FN(mp_)(jb);
  if (kp == 0)
    return;
  int bwd = pl->op == RLX_CONV_BWD_INPUT;
  int64_t cg = g->c / g->groups, og = g->co / g->groups;
  int64_t mstride = bwd ? pl->khkw : cg * pl->khkw;
  int64_t sstride = bwd ? cg * pl->khkw : pl->khkw;
  const T *w = jb->w + gi * og * cg * pl->khkw;
  T *A = (T *)jb->scratch + FN(a_off_)(jb, gi, ph);
  int64_t kstep = FN(kblock_)(kp), k = 0;
  for (int64_t s = 0; s < pl->SC; s++)
    for (int64_t r = 0; r < g->kh; r++) {
      if (!FN(tap_in_)(g, pl->op, r, g->dh, g->sh, P.a))
        continue;
      for (int64_t q = 0; q < g->kw; q++) {
        if (!FN(tap_in_)(g, pl->op, q, g->dw, g->sw, P.b))
          continue;
        int64_t pc = k / kstep * kstep, kc = FN(min_)(kstep, kp - pc);
        T *col = A + pc * mp + (k - pc) * R;
        const T *wk = w + s * sstride + r * g->kw + q;
        for (int64_t m0 = 0; m0 < mp; m0 += R)
          for (int64_t i = 0; i < R; i++)
            col[m0 * kc + i] = m0 + i < pl->M ? wk[(m0 + i) * mstride] : 0;
        k++;
      }
    }
}

static void FN(pack_task_)(void *ctx, int64_t b, int64_t e)
{
  const FN(Job_) *jb = ctx;
  for (int64_t i = b; i < e; i++)
    FN(pack_a_)(jb, i / jb->pl->nphase, i % jb->pl->nphase);
}

/* Output rows [u0, u0 + rows) of channels [0, M) of the tile: copied
   from the C tile (ct, ldc), or zeros (ct NULL). */
static void FN(copy_out_)(const FN(Job_) *jb, const FN(Phase_) *P, T *dst,
                          int64_t u0, int64_t rows, const T *ct,
                          int64_t ldc)
{
  const rlx_conv_geom *g = jb->g;
  int bwd = jb->pl->op == RLX_CONV_BWD_INPUT;
  int64_t dh = bwd ? g->h : g->oh, dw = bwd ? g->w : g->ow;
  if (ct && P->We == P->Vn && P->Vn == dw && P->dsh == 1 && P->dsw == 1) {
    for (int64_t m = 0; m < jb->pl->M; m++)
      memcpy(dst + (m * dh + u0 + P->dh0) * dw, ct + m * ldc,
             (size_t)(rows * dw) * sizeof(T));
    return;
  }
  for (int64_t m = 0; m < jb->pl->M; m++)
    for (int64_t u = 0; u < rows; u++) {
      T *d = dst + (m * dh + (u0 + u) * P->dsh + P->dh0) * dw + P->dw0;
      const T *c = ct ? ct + m * ldc + u * P->We : NULL;
      if (c && P->dsw == 1)
        FN(copy_)(d, c, P->Vn);
      else
        for (int64_t v = 0; v < P->Vn; v++)
          d[v * P->dsw] = c ? c[v] : 0;
    }
}

/* Item (image n, group gi, phase ph, tile): planes, offsets, then
   C = A x B in K blocks into the C tile, then copied out. */
static void FN(igemm_item_)(const FN(Job_) *jb, int64_t it, char *slot)
{
  const rlx_conv_geom *g = jb->g;
  const ConvPlan *pl = jb->pl;
  int64_t tile = it % pl->tiles, rest = it / pl->tiles;
  int64_t ph = rest % pl->nphase;
  rest /= pl->nphase;
  int64_t gi = rest % pl->G, n = rest / pl->G;
  FN(Phase_) P = FN(phase_)(jb, ph);
  int64_t u0 = tile * pl->rt, rows = FN(min_)(pl->rt, P.U - u0);
  if (rows <= 0 || P.Vn <= 0)
    return;
  int bwd = pl->op == RLX_CONV_BWD_INPUT;
  int64_t dc = bwd ? g->c : g->co, dh = bwd ? g->h : g->oh;
  T *dst = jb->dst + (n * dc + gi * pl->M) * dh * (bwd ? g->w : g->ow);
  if (P.ntap == 0) {
    FN(copy_out_)(jb, &P, dst, u0, rows, NULL, 0);
    return;
  }
  int64_t *boff = FN(carve_)(&slot, pl->K * 8);
  T *planes = FN(carve_)(&slot, pl->np * pl->SC * pl->pstride * pl->es);
  T *ct = (T *)slot;
  FN(build_planes_)(jb, &P, jb->src, bwd ? g->co : g->c, n, gi, 0, pl->SC,
                    u0, rows + pl->rho, planes);
  int64_t kp = FN(fill_boff_)(jb, &P, boff), kstep = FN(kblock_)(kp);
  int64_t R = conv_rows[jb->ri], mp = FN(mp_)(jb);
  int64_t pw = jb->V * jb->isa->lanes;
  int64_t ldc = FN(rup_)(rows * P.We, jb->isa->lanes);
  const T *A = (const T *)jb->scratch + FN(a_off_)(jb, gi, ph);
  /* Panels of V vectors before column `split`, then one of va vectors
     (as few as cover the rest of the tile's columns), then one of vb: a
     rest of one vector after V >= 3 (R accumulators, each FMA waiting
     on the one before) is spread with the last full panel's vectors
     over two panels of about (V + 1) / 2. */
  int64_t cols = rows * P.We, lanes = jb->isa->lanes;
  int64_t full = cols / pw * pw, split = full;
  int64_t va = FN(cdiv_)(cols - full, lanes), vb = 0;
  if (va == 1 && jb->V >= 3 && full > 0) {
    split = full - pw;
    va = (jb->V + 2) / 2;
    vb = jb->V + 1 - va;
  }
  for (int64_t pc = 0; pc < kp; pc += kstep) {
    int64_t kc = FN(min_)(kstep, kp - pc);
    for (int64_t jc = 0, nv; jc < cols; jc += nv * lanes) {
      nv = jc < split ? jb->V : jc == split ? va : vb;
      CAT(ConvKern, SFX) kj = jb->isa->kern[jb->ri][nv - 1];
      for (int64_t ir = 0; ir < mp; ir += R)
        kj(kc, A + pc * mp + ir * kc, R, planes + jc, boff + pc,
           ct + ir * ldc + jc, ldc, pc > 0);
    }
  }
  FN(copy_out_)(jb, &P, dst, u0, rows, ct, ldc);
}

/* ---------------- backward weight ---------------- */

/* Units [j*units/nch, (j+1)*units/nch) of chunk j. */
static void FN(chunk_units_)(const ConvPlan *pl, int64_t j, int64_t *b,
                             int64_t *e)
{
  *b = j * pl->units / pl->nch;
  *e = (j + 1) * pl->units / pl->nch;
}

/* The operands of one wgemm unit (image n, output rows [u0, u0+rows)),
   channel-last, each element transposed once, in long rows, 16
   channels at a time through tmp: the tile's planes, transposed to
   planeT[pi][t'][cgp] (t' up to tn + the taps' reach), and dy staged
   in extended coordinates (columns >= ow zero; memcpy'd, as the
   transposes' masked edge loads are slow on memory) and transposed to
   dyT[t][ogp].  A 1x1 unpadded stride-1 tile is contiguous: transposed
   in place. */
static void FN(wgemm_unit_)(const FN(Job_) *jb, const FN(Phase_) *P,
                            int64_t n, int64_t gi, int64_t u0,
                            int64_t rows, int64_t c0, int64_t c1, T *planeT,
                            T *dyT, T *tmp)
{
  const rlx_conv_geom *g = jb->g;
  const ConvPlan *pl = jb->pl;
  int64_t og = g->co / g->groups, ohw = g->oh * g->ow, pe = pl->pstride;
  int64_t We = P->We, tn = rows * We, cgp = pl->cgp, ogp = pl->ogp;
  const T *dy = jb->dy + (n * g->co + gi * og) * ohw;
  const ISA_T *isa = jb->isa;
  c1 = FN(min_)(c1, pl->SC);
  if (pl->direct) {
    int64_t hw = g->h * g->w;
    isa->trans(jb->src + (n * g->c + gi * pl->SC + c0) * hw + u0 * g->w, hw,
               c1 - c0, tn, planeT + c0, cgp, FN(rup_)(c1 - c0, CONV_WR));
    isa->trans(dy + u0 * g->ow, ohw, og, tn, dyT, ogp, ogp);
    return;
  }
  for (int64_t s0 = c0; s0 < c1; s0 += 16) {
    int64_t ns = FN(min_)(16, c1 - s0);
    FN(build_planes_)(jb, P, jb->src, g->c, n, gi, s0, ns, u0,
                      rows + pl->rho, tmp);
    for (int64_t pi = 0; pi < pl->np; pi++)
      isa->trans(tmp + pi * pe, pl->np * pe, ns,
                 (rows + pl->rho) * We + pl->kap,
                 planeT + pi * pe * cgp + s0, cgp, FN(rup_)(ns, CONV_WR));
  }
  for (int64_t o0 = 0; o0 < og; o0 += 16) {
    int64_t no = FN(min_)(16, og - o0);
    for (int64_t o = 0; o < no; o++)
      FN(plane_fill_)(tmp + o * tn, rows, We, tn,
                      dy + (o0 + o) * ohw + u0 * g->ow, rows, g->ow, 0, 0,
                      1, 1);
    isa->trans(tmp, tn, no, tn, dyT + o0, ogp, FN(min_)(16, ogp - o0));
  }
}

/* WGEMM item (chunk j, group gi, row block kb): channel blocks
   c in [c0, c1) (c = ci/8 * khkw + tap) of the chunk's partial
   dW^T[ci*khkw + tap][o] += sum_t planeT[t + tap][ci] * dyT[t][o] (the
   8 rows of a block are khkw rows apart), the sum over t of each unit
   in kernel calls of at most pl->kc. */
static void FN(wgemm_item_)(const FN(Job_) *jb, int64_t it, char *slot)
{
  const rlx_conv_geom *g = jb->g;
  const ConvPlan *pl = jb->pl;
  int64_t kb = it % pl->nkb, gi = it / pl->nkb % pl->G;
  int64_t j = it / pl->nkb / pl->G, nc8 = pl->prow / CONV_WR;
  int64_t c0 = kb * nc8 / pl->nkb, c1 = (kb + 1) * nc8 / pl->nkb;
  T *part = (T *)jb->scratch + (j * pl->G + gi) * pl->prow * pl->pcol;
  int64_t ldc = pl->byrow ? pl->pcol : pl->khkw * pl->pcol;
  if (pl->byrow) /* rows o of blocks [c0, c1) */
    memset(part + c0 * CONV_WR * ldc, 0,
           (size_t)((c1 - c0) * CONV_WR * ldc) * sizeof(T));
  else
    for (int64_t c = c0; c < c1; c++)
      for (int64_t i = 0; i < CONV_WR; i++)
        memset(part + (c / pl->khkw * CONV_WR + i) * ldc +
                   c % pl->khkw * pl->pcol,
               0, (size_t)pl->pcol * sizeof(T));
  int64_t pe = pl->pstride, lanes = jb->isa->lanes;
  /* An 8-row block (CONV_WR) in one R = 8 call where its vmax[3]
     vectors fit the ISA's accumulators, else in two R = 4 calls with up
     to acc_max / 4 vectors (AVX2: 8 x 2 tiles spill 3 of 16 ymm
     accumulators; 2 x (4 x 3) do not).  Per element the same operations
     either way. */
  const ISA_T *isa = jb->isa;
  int split = CONV_WR * isa->vmax[3] > isa->acc_max;
  int ki = split ? 2 : 3, kr = conv_rows[ki];
  int64_t pmax = split ? FN(min_)(isa->vmax[2], isa->acc_max / 4)
                       : isa->vmax[3];
  int64_t nvec = (pl->byrow ? g->kw * pl->cgp : pl->ogp) / lanes;
  int64_t npan = FN(cdiv_)(nvec, pmax), bstep = pl->byrow ? pl->cgp
                                                         : pl->ogp;
  int64_t *boff = FN(carve_)(&slot, pl->kc * 8);
  T *planeT = FN(carve_)(&slot, pl->np * pl->cgp * pe * pl->es);
  T *dyT = FN(carve_)(&slot, pl->rt * pl->We * pl->ogp * pl->es);
  T *tmp = (T *)slot;
  for (int64_t p = 0, kcm = pl->kc; p < kcm; p++)
    boff[p] = p * bstep;
  FN(Phase_) P = FN(phase_)(jb, 0);
  int64_t ub, ue;
  FN(chunk_units_)(pl, j, &ub, &ue);
  for (int64_t un = ub; un < ue; un++) {
    int64_t u0 = un % pl->tiles * pl->rt;
    int64_t rows = FN(min_)(pl->rt, g->oh - u0), tn = rows * P.We;
    FN(wgemm_unit_)(jb, &P, un / pl->tiles, gi, u0, rows,
                    pl->byrow ? 0 : c0 / pl->khkw * CONV_WR,
                    pl->byrow ? pl->cgp : FN(cdiv_)(c1, pl->khkw) * CONV_WR,
                    planeT, dyT, tmp);
    int64_t kstep = FN(cdiv_)(tn, FN(cdiv_)(tn, pl->kc));
    for (int64_t tb = 0; tb < tn; tb += kstep) {
      int64_t kc = FN(min_)(kstep, tn - tb);
      /* byrow: dW[o][r][q][ci] += sum_t dyT[t][o] * planeT[t + r*We +
         q][ci], tap row r's kw * cgp columns in panels (each read by
         all the item's rows o) */
      for (int64_t r = 0; pl->byrow && r < g->kh; r++) {
        int64_t off = FN(tap_off_)(jb, &P, 0, r, 0);
        const T *b = planeT + (off + tb) * pl->cgp;
        T *cr = part + r * g->kw * pl->cgp;
        for (int64_t q = 0, j0 = 0; q < npan; q++) {
          int64_t V = nvec / npan + (q < nvec % npan);
          for (int64_t o = c0 * CONV_WR; o < c1 * CONV_WR; o += kr)
            isa->kern[ki][V - 1](kc, dyT + tb * pl->ogp + o, pl->ogp,
                                 b + j0, boff, cr + o * ldc + j0, ldc, 1);
          j0 += V * lanes;
        }
      }
      for (int64_t c = c0; !pl->byrow && c < c1; c++) {
        int64_t tap = c % pl->khkw, ci0 = c / pl->khkw * CONV_WR;
        int64_t off = FN(tap_off_)(jb, &P, 0, tap / g->kw, tap % g->kw);
        const T *a = planeT + (off + tb) * pl->cgp + ci0;
        T *cr = part + (ci0 * pl->khkw + tap) * pl->pcol;
        /* ogp / lanes vectors in as few panels of <= pmax as
           possible, the wider first (4 vectors: 2 + 2, not 3 + 1) */
        for (int64_t q = 0, o0 = 0; q < npan; q++) {
          int64_t V = nvec / npan + (q < nvec % npan);
          for (int h = 0; h < CONV_WR; h += kr)
            isa->kern[ki][V - 1](kc, a + h, pl->cgp,
                                 dyT + tb * pl->ogp + o0, boff,
                                 cr + h * ldc + o0, ldc, 1);
          o0 += V * lanes;
        }
      }
    }
  }
}

/* WDOT item (chunk j, group gi): the chunk's partial, lane sums
   part[o][k][DL] += dy_ext[o] . plane row k (the lanes are added in
   the final sum). */
static void FN(wdot_item_)(const FN(Job_) *jb, int64_t it, char *slot)
{
  const rlx_conv_geom *g = jb->g;
  const ConvPlan *pl = jb->pl;
  int64_t gi = it % pl->G, j = it / pl->G, og = pl->M;
  T *part = (T *)jb->scratch + (j * pl->G + gi) * pl->prow * pl->pcol;
  memset(part, 0, (size_t)(pl->prow * pl->pcol) * sizeof(T));
  int64_t ld = pl->rt * pl->We + 16, dl = 64 / (int64_t)sizeof(T);
  int64_t kp = pl->pcol / dl;
  int64_t *boff = FN(carve_)(&slot, kp * 8);
  T *planes = FN(carve_)(&slot, pl->np * pl->SC * pl->pstride * pl->es);
  T *dye = (T *)slot;
  FN(Phase_) P = FN(phase_)(jb, 0);
  for (int64_t k = FN(fill_boff_)(jb, &P, boff); k < kp; k++)
    boff[k] = boff[0];
  int64_t ub, ue;
  FN(chunk_units_)(pl, j, &ub, &ue);
  for (int64_t un = ub; un < ue; un++) {
    int64_t n = un / pl->tiles, u0 = un % pl->tiles * pl->rt;
    int64_t rows = FN(min_)(pl->rt, g->oh - u0), tn = rows * P.We;
    int64_t nv = FN(cdiv_)(tn, dl);
    FN(build_planes_)(jb, &P, jb->src, g->c, n, gi, 0, pl->SC, u0,
                      rows + pl->rho, planes);
    for (int64_t o = 0; o < og; o++) {
      const T *d = jb->dy + ((n * g->co + gi * og + o) * g->oh + u0) * g->ow;
      FN(plane_fill_)(dye + o * ld, rows, P.We, nv * dl, d, rows, g->ow, 0,
                      0, 1, 1);
    }
    for (int64_t o0 = 0; o0 < og; o0 += 2) {
      int ro = og - o0 >= 2 ? 2 : 1;
      for (int64_t k0 = 0; k0 < kp; k0 += CONV_DK)
        jb->isa->dot[ro - 1](nv, dye + o0 * ld, ld, planes, boff + k0,
                             part + o0 * pl->pcol + k0 * dl, pl->pcol);
    }
  }
}

/* Lanes l, l + DL/2, ... of a WDOT lane vector added pairwise. */
static T FN(tree_)(T *lane)
{
  for (int64_t w = 32 / (int64_t)sizeof(T); w >= 1; w /= 2)
    for (int64_t l = 0; l < w; l++)
      lane[l] = lane[l] + lane[l + w];
  return lane[0];
}

/* Rows [16*b, 16*b + 16) of group gi's partials: chunk 0 += chunks
   1, 2, ... in order; then to dW (wgemm: the partial is dW^T, so a
   16-row transpose; wdot: lane sums, added by the tree). */
static void FN(wsum_task_)(void *ctx, int64_t b, int64_t e)
{
  const FN(Job_) *jb = ctx;
  const ConvPlan *pl = jb->pl;
  int64_t og = jb->g->co / jb->g->groups, dl = 64 / (int64_t)sizeof(T);
  int64_t nb = FN(cdiv_)(pl->prow, 16), pstep = pl->G * pl->prow * pl->pcol;
  for (int64_t i = b; i < e; i++) {
    int64_t gi = i / nb, r0 = i % nb * 16, nr = FN(min_)(16, pl->prow - r0);
    T *p0 = (T *)jb->scratch + (gi * pl->prow + r0) * pl->pcol;
    for (int64_t j = 1; j < pl->nch; j++)
      for (int64_t x = 0; x < nr * pl->pcol; x++)
        p0[x] += p0[j * pstep + x];
    T *dw = jb->dst + gi * og * pl->K;
    if (pl->byrow) /* rows o; column tap * cgp + ci to dW[o][ci][tap] */
      for (int64_t o = r0; o < FN(min_)(r0 + nr, og); o++)
        for (int64_t k = 0; k < pl->K; k++)
          dw[o * pl->K + k] =
              p0[(o - r0) * pl->pcol + k % pl->khkw * pl->cgp +
                 k / pl->khkw];
    else if (pl->path == CONV_WGEMM)
      jb->isa->trans(p0, pl->pcol, FN(min_)(nr, pl->K - r0), og, dw + r0,
                     pl->K, FN(min_)(nr, pl->K - r0));
    else
      for (int64_t r = 0; r < nr; r++)
        for (int64_t k = 0; k < pl->K; k++)
          dw[(r0 + r) * pl->K + k] = FN(tree_)(p0 + r * pl->pcol + k * dl);
  }
}

/* ---------------- driver ---------------- */

static void FN(slot_task_)(void *ctx, int64_t b, int64_t e)
{
  const FN(Job_) *jb = ctx;
  const ConvPlan *pl = jb->pl;
  for (int64_t s = b; s < e; s++) {
    char *slot = jb->scratch + pl->slot_off + s * pl->slot_bytes;
    for (int64_t it; (it = atomic_fetch_add(jb->next, 1)) < pl->items;) {
      if (pl->path == CONV_IGEMM)
        FN(igemm_item_)(jb, it, slot);
      else if (pl->path == CONV_WGEMM)
        FN(wgemm_item_)(jb, it, slot);
      else
        FN(wdot_item_)(jb, it, slot);
    }
  }
}

/* The register tile for M rows: R x V accumulators within the ISA's
   acc_max (V = vmax[R] or fewer), fewest padded rows, then the most
   accumulators, then the larger R. */
static void FN(pick_tile_)(FN(Job_) *jb)
{
  int64_t best = -1, area = 0;
  for (int i = 0; i < 5; i++) {
    int v = jb->isa->vmax[i], fit = jb->isa->acc_max / conv_rows[i];
    v = v < fit ? v : fit;
    int64_t mp = FN(rup_)(jb->pl->M, conv_rows[i]);
    if (v > 0 && (best < 0 || mp < best ||
                  (mp == best && conv_rows[i] * v >= area))) {
      best = mp;
      area = conv_rows[i] * v;
      jb->ri = i;
      jb->V = v;
    }
  }
}

/* 1x1, stride 1, unpadded, forward or backward input: per group one
   batched GEMM over the images (rlx_gemm splits the batch over the
   pool): y[n] = W x[n], dx[n] = W^T dy[n]. */
static void FN(gemm11_)(const rlx_conv_geom *g, int op, const T *src,
                        const T *w, T *dst)
{
  int64_t cg = g->c / g->groups, og = g->co / g->groups, hw = g->h * g->w;
  int bwd = op == RLX_CONV_BWD_INPUT;
  int64_t m = bwd ? cg : og, k = bwd ? og : cg;
  for (int64_t gi = 0; gi < g->groups; gi++)
    CAT(rlx_gemm_, SFXL)(g->n, m, hw, k, w + gi * og * cg, 0,
                         bwd ? 1 : cg, bwd ? cg : 1,
                         src + gi * k * hw, (bwd ? g->co : g->c) * hw, hw, 1,
                         dst + gi * m * hw, (bwd ? g->c : g->co) * hw, hw,
                         0);
}

static void FN(conv_run_)(const rlx_conv_geom *g, int op, const T *src,
                          const T *w, const T *dy, T *dst, void *scratch,
                          const ISA_T *isa)
{
  ConvPlan pl;
  rlx_conv_plan(g, op, sizeof(T), &pl);
  atomic_llong next = 0;
  FN(Job_) jb = {&pl, g, isa, src, w, dy, dst, scratch, 0, 0, 0, 0, 0,
                 &next};
  FN(periods_)(g, &jb.per_h, &jb.per_w, &jb.nqb);
  if (pl.items == 0) {
    int64_t n = op == RLX_CONV_FWD ? g->n * g->co * g->oh * g->ow
                : op == RLX_CONV_BWD_INPUT ? g->n * g->c * g->h * g->w
                : g->co * (g->c / g->groups) * g->kh * g->kw;
    if (n > 0)
      memset(dst, 0, (size_t)n * sizeof(T));
    return;
  }
  if (pl.path == CONV_GEMM11) {
    FN(gemm11_)(g, op, src, w, dst);
    return;
  }
  if (pl.path == CONV_IGEMM) {
    FN(pick_tile_)(&jb);
    rlx_parallel_for(pl.G * pl.nphase, 1, FN(pack_task_), &jb);
  }
  rlx_parallel_for(pl.slots, 1, FN(slot_task_), &jb);
  if (pl.path != CONV_IGEMM)
    rlx_parallel_for(pl.G * FN(cdiv_)(pl.prow, 16), 1, FN(wsum_task_), &jb);
}
