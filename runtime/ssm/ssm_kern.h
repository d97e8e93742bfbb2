/* ssm_kern.h -- the f32 kernels of ssm.c (the SsmIsa contracts of
 * ssm_internal.h) for one vector ISA, written once over the vector layer
 * (runtime/simd/vec.h; VEXP2P1 from vec_exp.h).  Included by ssm_<isa>.c
 * after an f32 vec_*.h instantiation and vec_exp.h, with GDN_NV (vectors
 * per gated-delta-net column sweep: what the registers hold) defined;
 * defines scan_block and gdn_head.  The files build with
 * -ffp-contract=off (CMakeLists.txt): every FMA is written out.
 *
 * selective_scan: a block's RLX_SSM_LANES channels are LANES / VL
 * vectors, each run through the whole time loop in turn (scan_vec): per
 * step and state index k, state_k = 2^(delta a_k log2 e) state_k +
 * (delta x) b_k and y += c_k state_k, two FMAs and a VEXP2P1 of
 * w = delta a_k - 1 (an FMA; the rates stored pre-scaled by log2(e)).
 * State size 16 (Mamba's usual) keeps a vector's state in 16 registers
 * across the time loop (unrolled; AVX2, with 16 in all, spills part of
 * it: two moves per update on the load and store ports, which measured
 * the same as streaming it through L1); other sizes stream it through
 * the task's scratch (L1).  AVX2 runs a step whose products all lie in
 * (-123, 1/2) on VEXP2P1_NEG (same bits, 11 micro-ops for the exp
 * instead of 21), and (SSM_NV 2: ssm_avx2.c) runs a full block's two
 * vectors in one time loop (scan_vecs: the state through L1, the range
 * test once per SSM_CHUNK steps, VEXP2P1 for a chunk that fails it).
 * The delta, x and y rows of a block are h floats apart: each step prefetches those PF
 * steps ahead (PF + SSM_CHUNK in scan_vecs).  A tail block's last vector loads and stores under a lane
 * mask; vectors past the last channel are skipped.  Every element sees
 * the same operations on every ISA (VEXP2P1's bits included), so the SIMD
 * kernels agree bitwise; the portable loops of ssm.c (libm expf,
 * separate multiply and add) differ in the last bits.
 *
 * gated_delta_net: ssm.c gdn_head_f32's operations on the same elements
 * in the same order, separate multiplies and adds (no FMA), so the same
 * bits as the portable loops; the second pass over S (the rank-1 update
 * S += k d^T) is fused into the next step's first (gdn_cols).
 */
#define LANES RLX_SSM_LANES
#define LOG2E 1.44269504088896341f

/* Steps ahead that the selective scan prefetches: one step of the n = 16
 * block takes about 100 cycles (AVX-512), a miss to memory several
 * hundred. */
#define PF 12

/* Prefetch row ra's delta, x and y lines of the channels from c: the
 * rows are h floats apart, a new 4 KiB page every few steps, which the
 * hardware prefetchers do not follow; without this the time loop waits
 * on the delta load every step. */
static inline void prefetch_row(const rlx_ssm_args *p, int64_t ra, int64_t c)
{
  int64_t o = ra * p->h + c;
  __builtin_prefetch((const float *)p->delta + o);
  __builtin_prefetch((const float *)p->x + o);
  __builtin_prefetch((const float *)p->y + o);
}

/* One time step of scan_vec over the state indices: e = 2^(dv at_k)
 * = VEXP2P1(dv at_k - 1) (VEXP2P1_NEG when FAST: every dv at_k is in
 * (-123, 1/2)), the state update and the readout; returns y.  REG: the
 * state in sr (registers), else in st. */
__attribute__((always_inline)) TGT static inline VT
scan_step(const int REG, const int FAST, int64_t n, VT dv, VT du,
          const float *at, float *st, VT *sr, const float *bt,
          const float *ct)
{
  VT yv = VZERO();
#pragma GCC unroll 16
  for (int64_t k = 0; k < n; k++) {
    VT w = VFMA(dv, VLOADU(at + k * LANES), VSET1(-1.0f));
#ifdef VEXP2P1_NEG
    VT e = FAST ? VEXP2P1_NEG(w) : VEXP2P1(w);
#else
    VT e = VEXP2P1(w);
    (void)FAST;
#endif
    VT sk = REG ? sr[k] : VLOADU(st + k * LANES);
    sk = VFMA(e, sk, VMUL(du, VSET1(bt[k])));
    if (REG)
      sr[k] = sk;
    else
      VSTOREU(st + k * LANES, sk);
    yv = VFMA(VSET1(ct[k]), sk, yv);
  }
  return yv;
}

/* The channels [c, c + nl) of batch row bi (nl <= VL; at, st: their rates
 * and state, k-th at + k * LANES) over the whole time loop.  NK: the
 * state size, with the state in registers where SSM_STATE_REGS (default
 * 1); 0: p->n, in st.  NK and nl == VL are constants after inlining.
 * Where the layer has VEXP2P1_NEG (AVX2), a step takes it when every
 * product delta a_k of its lanes lies in (-123, 1/2): bounded by delta
 * times the lane's least and greatest rate (rounding is monotonic), the
 * rates all finite; NaN fails the compares.  The same bits, half the
 * instructions of the exp. */
#ifndef SSM_STATE_REGS
#define SSM_STATE_REGS 1
#endif
#ifndef SSM_NV
#define SSM_NV 1
#endif
#ifndef SSM_CHUNK
#define SSM_CHUNK 16
#endif
__attribute__((always_inline)) TGT static inline void
scan_vec(const int NK, int nl, const rlx_ssm_args *p, int64_t bi, int64_t c,
         const float *at, float *st)
{
  const int64_t s = p->s, h = p->h, n = NK ? NK : p->n;
  const int full = nl == VL, REG = NK && SSM_STATE_REGS;
  const MT m = VMASK_FIRST(nl);
  VT sr[16];
  for (int k = 0; k < NK; k++)
    sr[k] = VZERO();
#ifdef VEXP2P1_NEG
  /* lane-wise least and greatest rate; fin: every rate finite */
  VT an = VLOADU(at), ap = an;
  int fin = 1;
  for (int64_t k = 0; k < n; k++) {
    VT ak = VLOADU(at + k * LANES);
    an = VMIN(an, ak);
    ap = VMAX(ap, ak);
    fin &= VALL_LT(VMAX(ak, VSUB(VZERO(), ak)), VSET1(INFINITY)) != 0;
  }
#endif
  for (int64_t t = 0; t < s; t++) {
    int64_t r = bi * s + t;
    prefetch_row(p, t + PF < s ? r + PF : r, c);
    const float *bt = (const float *)p->bm + r * n;
    const float *ct = (const float *)p->cm + r * n;
    const float *dt = (const float *)p->delta + r * h + c;
    const float *xt = (const float *)p->x + r * h + c;
    VT dv = full ? VLOADU(dt) : VMASKZ_LOAD(m, dt);
    VT du = VMUL(dv, full ? VLOADU(xt) : VMASKZ_LOAD(m, xt));
    VT yv;
#ifdef VEXP2P1_NEG
    VT z1 = VMUL(dv, an), z2 = VMUL(dv, ap);
    const VT hi = VSET1(0.5f), lo = VSET1(-123.0f);
    if (fin && VALL_LT(z1, hi) && VALL_LT(z2, hi) && VALL_LT(lo, z1) &&
        VALL_LT(lo, z2))
      yv = scan_step(REG, 1, n, dv, du, at, st, sr, bt, ct);
    else
#endif
      yv = scan_step(REG, 0, n, dv, du, at, st, sr, bt, ct);
    float *yt = (float *)p->y + r * h + c;
    if (full)
      VSTOREU(yt, yv);
    else
      VMASK_STORE(yt, m, yv);
  }
}

#if SSM_NV > 1
/* scan_vec over the SSM_NV full vectors of a full block in one time
 * loop (per step, each vector's update in turn; the state in st, L1):
 * the same operations on each element as scan_vec, but each step's
 * delta, x and y lines (one 64-byte line each) are used whole at once:
 * one pass over the rows and their pages instead of SSM_NV, and the
 * step's prefetch and pointers serve every vector.  The range test of
 * scan_vec runs once per SSM_CHUNK steps: from each lane's least and
 * greatest delta over the chunk, the products of the corners (delta
 * extremes times rate extremes) bound every product delta a_k of the
 * chunk, rounding being monotonic; when they all lie in (-123, 1/2) the
 * chunk's steps take VEXP2P1_NEG, else VEXP2P1 (right for every
 * product).  Where the test holds both give the same bits; outside
 * (-123, 1/2) only VEXP2P1 does (VEXP2P1_NEG's fraction w + 1 rounds
 * for w in (-1/2, 0)), so the bits rest on this one test.  No per-step
 * test: one that compared each step's delta with the rate extremes
 * an[v], ap[v] was compiled by GCC 12.2 under -fsanitize=address plus
 * object-size (the sanitizer tree) with vector 1's extremes for vector
 * 0, giving VEXP2P1_NEG steps out of range and new bits.  NK as in
 * scan_vec. */
__attribute__((always_inline)) TGT static inline void
scan_vecs(const int NK, const rlx_ssm_args *p, int64_t bi, int64_t c,
          const float *at, float *st)
{
  const int64_t s = p->s, h = p->h, n = NK ? NK : p->n;
  VT an[SSM_NV], ap[SSM_NV];
  int fin = 1;
  for (int v = 0; v < SSM_NV; v++) {
    an[v] = ap[v] = VLOADU(at + v * VL);
    for (int64_t k = 0; k < n; k++) {
      VT ak = VLOADU(at + k * LANES + v * VL);
      an[v] = VMIN(an[v], ak);
      ap[v] = VMAX(ap[v], ak);
      fin &= VALL_LT(VMAX(ak, VSUB(VZERO(), ak)), VSET1(INFINITY)) != 0;
    }
  }
  const VT hi = VSET1(0.5f), lo = VSET1(-123.0f);
  for (int64_t t0 = 0; t0 < s; t0 += SSM_CHUNK) {
    const int64_t t1 = s - t0 < SSM_CHUNK ? s : t0 + SSM_CHUNK;
    /* all: every step of the chunk passes scan_vec's test; dsum - dsum
       is NaN for NaN and infinite deltas (which VMIN / VMAX may drop)
       and for sums that overflow (then the chunk takes VEXP2P1) */
    int all = fin;
    for (int v = 0; all && v < SSM_NV; v++) {
      const float *dt =
          (const float *)p->delta + (bi * s + t0) * h + c + v * VL;
      VT dmin = VLOADU(dt), dmax = dmin, dsum = dmin;
      for (int64_t t = t0 + 1; t < t1; t++) {
        VT dv = VLOADU(dt + (t - t0) * h);
        dmin = VMIN(dmin, dv);
        dmax = VMAX(dmax, dv);
        dsum = VADD(dsum, dv);
      }
      VT z1 = VMUL(dmin, an[v]), z2 = VMUL(dmin, ap[v]);
      VT z3 = VMUL(dmax, an[v]), z4 = VMUL(dmax, ap[v]);
      VT zl = VMIN(VMIN(z1, z2), VMIN(z3, z4));
      VT zh = VMAX(VMAX(z1, z2), VMAX(z3, z4));
      all = VALL_LT(lo, zl) && VALL_LT(zh, hi) &&
            VALL_LT(VSUB(dsum, dsum), VSET1(1.0f));
    }
    for (int64_t t = t0; t < t1; t++) {
      int64_t r = bi * s + t;
      prefetch_row(p, t + PF + SSM_CHUNK < s ? r + PF + SSM_CHUNK : r, c);
      const float *bt = (const float *)p->bm + r * n;
      const float *ct = (const float *)p->cm + r * n;
      const float *dt = (const float *)p->delta + r * h + c;
      const float *xt = (const float *)p->x + r * h + c;
      float *yt = (float *)p->y + r * h + c;
      for (int v = 0; v < SSM_NV; v++) {
        const float *av = at + v * VL;
        float *sv = st + v * VL;
        VT dv = VLOADU(dt + v * VL);
        VT du = VMUL(dv, VLOADU(xt + v * VL));
        VT yv;
        if (all)
          yv = scan_step(0, 1, n, dv, du, av, sv, NULL, bt, ct);
        else
          yv = scan_step(0, 0, n, dv, du, av, sv, NULL, bt, ct);
        VSTOREU(yt + v * VL, yv);
      }
    }
  }
}
#endif

/* SsmIsa.scan_block: the rates of the block's channels from c0,
 * transposed to [n][LANES] and scaled by log2(e) (0 in lanes past the
 * last channel), and the zero state in
 * ws, then each vector of channels. */
TGT static void scan_block(const rlx_ssm_args *p, int64_t bi, int64_t c0,
                           float *ws)
{
  const int64_t n = p->n, nc = p->h - c0 < LANES ? p->h - c0 : LANES;
  const float *a = p->a;
  float *at = ws, *st = ws + n * LANES;
  for (int64_t k = 0; k < n; k++)
    for (int j = 0; j < LANES; j++) {
      at[k * LANES + j] = j < nc ? a[(c0 + j) * n + k] * LOG2E : 0;
      st[k * LANES + j] = 0;
    }
#if SSM_NV > 1
  if (nc == LANES) {
    if (n == 16)
      scan_vecs(16, p, bi, c0, at, st);
    else
      scan_vecs(0, p, bi, c0, at, st);
    return;
  }
#endif
  for (int j = 0; j < nc; j += VL) {
    int nl = nc - j < VL ? (int)(nc - j) : VL;
    if (n == 16 && nl == VL)
      scan_vec(16, VL, p, bi, c0 + j, at + j, st + j);
    else if (n == 16)
      scan_vec(16, nl, p, bi, c0 + j, at + j, st + j);
    else if (nl == VL)
      scan_vec(0, VL, p, bi, c0 + j, at + j, st + j);
    else
      scan_vec(0, nl, p, bi, c0 + j, at + j, st + j);
  }
}

/* One step of one gated-delta-net head: its rows, scalars and the
 * previous step's (kp: its k, NULL at the first step; dp: its d). */
typedef struct {
  const float *q, *k, *v, *kp;
  float *o, *dp;
  float eg, be, kq, rs;
} GdnStep;

/* Columns [j0, j0 + (NC - 1) VL + nl) of step g of the head with state S
 * (n x n), NC <= GDN_NV vectors, the last with nl <= VL lanes: with
 * PEND, first the previous step's second pass S += kp d (its rank-1
 * update, fused into this pass), then S1 = eg S, sk = S1^T k and
 * sq = S1^T q over the rows i in order, d = (v - sk) be,
 * o = (sq + d kq) rs; d replaces the old d in dp.  Full vectors move
 * without lane masks (masked stores cost about a fifth of the time at
 * n = 64 on AVX-512).  NC, nl == VL and PEND are constants after
 * inlining. */
__attribute__((always_inline)) TGT static inline void
gdn_cols(const int NC, int nl, const int PEND, float *S, int64_t n,
         int64_t j0, const GdnStep *g)
{
  const MT m = VMASK_FIRST(nl);
  VT dv[GDN_NV], sk[GDN_NV], sq[GDN_NV];
  for (int c = 0; c < NC; c++) {
    const float *d = g->dp + j0 + c * VL;
    dv[c] = c < NC - 1 || nl == VL ? VLOADU(d) : VMASKZ_LOAD(m, d);
    sk[c] = sq[c] = VZERO();
  }
  const VT veg = VSET1(g->eg);
  for (int64_t i = 0; i < n; i++) {
    const VT ki = VSET1(g->k[i]), qi = VSET1(g->q[i]);
    for (int c = 0; c < NC; c++) {
      float *Si = S + i * n + j0 + c * VL;
      const int full = c < NC - 1 || nl == VL;
      VT w = full ? VLOADU(Si) : VMASKZ_LOAD(m, Si);
      if (PEND)
        w = VADD(w, VMUL(VSET1(g->kp[i]), dv[c]));
      w = VMUL(w, veg);
      if (full)
        VSTOREU(Si, w);
      else
        VMASK_STORE(Si, m, w);
      sk[c] = VADD(sk[c], VMUL(w, ki));
      sq[c] = VADD(sq[c], VMUL(w, qi));
    }
  }
  for (int c = 0; c < NC; c++) {
    int64_t j = j0 + c * VL;
    const int full = c < NC - 1 || nl == VL;
    VT d = VMUL(VSUB(full ? VLOADU(g->v + j) : VMASKZ_LOAD(m, g->v + j),
                     sk[c]),
                VSET1(g->be));
    VT y = VMUL(VADD(sq[c], VMUL(d, VSET1(g->kq))), VSET1(g->rs));
    if (full) {
      VSTOREU(g->o + j, y);
      VSTOREU(g->dp + j, d);
    } else {
      VMASK_STORE(g->o + j, m, y);
      VMASK_STORE(g->dp + j, m, d);
    }
  }
}

/* SsmIsa.gdn_head: S [n][n] and the previous step's d (n floats) in ws;
 * per step, sweeps of GDN_NV full vectors of columns, then single
 * vectors (the last one masked).  Each step prefetches the next step's
 * q, k, v and o rows (H n floats apart). */
TGT static void gdn_head(const rlx_ssm_args *p, int64_t task, float *S)
{
  const int64_t s = p->s, H = p->h, n = p->n;
  const int64_t bi = task / H, hh = task % H;
  GdnStep g = {.dp = S + n * n, .rs = (float)(1 / sqrt((double)n))};
  memset(S, 0, sizeof(float) * (size_t)(n * n));
  for (int64_t t = 0; t < s; t++) {
    int64_t r = (bi * s + t) * H + hh;
    g.q = (const float *)p->x + r * n;
    g.k = (const float *)p->delta + r * n;
    g.v = (const float *)p->a + r * n;
    g.o = (float *)p->y + r * n;
    if (t + 1 < s)
      for (int64_t j = 0; j < n; j += 16) { /* one 64-byte line */
        __builtin_prefetch(g.q + H * n + j);
        __builtin_prefetch(g.k + H * n + j);
        __builtin_prefetch(g.v + H * n + j);
        __builtin_prefetch(g.o + H * n + j);
      }
    g.eg = expf(((const float *)p->bm)[r]);
    g.be = ((const float *)p->cm)[r];
    g.kq = 0;
    for (int64_t j = 0; j < n; j++)
      g.kq += g.k[j] * g.q[j];
    int64_t j0 = 0;
    for (; n - j0 >= GDN_NV * VL; j0 += GDN_NV * VL)
      if (g.kp)
        gdn_cols(GDN_NV, VL, 1, S, n, j0, &g);
      else
        gdn_cols(GDN_NV, VL, 0, S, n, j0, &g);
    for (; j0 < n; j0 += VL) {
      int nl = n - j0 < VL ? (int)(n - j0) : VL;
      if (g.kp && nl == VL)
        gdn_cols(1, VL, 1, S, n, j0, &g);
      else if (g.kp)
        gdn_cols(1, nl, 1, S, n, j0, &g);
      else
        gdn_cols(1, nl, 0, S, n, j0, &g);
    }
    g.kp = g.k;
  }
}
