/* attention_tmpl.h -- the attention drivers and the entry points
 * rlx_attention_<t>, rlx_attention_bwd_<t> for one element type (design:
 * the header comment of attention.c).  Included by attention.c with T,
 * SFX (F32 / F64), FN(name) (name##f32 / name##f64), EXP, LOG and TANH
 * defined.
 */
#define ISA_T CAT(AttnIsa, SFX)
#define BQ ATTN_BQ
#define BK ATTN_BK

typedef struct {
  const rlx_attn_geom *g;
  const ISA_T *isa;
  const T *q, *k, *v, *dy;
  const void *mask;
  T *o, *lse;           /* forward outputs */
  int o_l4;             /* o is addressed as [b, h, lq, d] */
  int recompute;        /* backward: o and lse are computed in scratch */
  T *dq, *dk, *dv, *dbias;
  T *qt, *dot, *dd;     /* backward: Q^T * scale and dO^T tiles, D */
  T *dqp;               /* backward: nch > 1 dQ partials */
  int64_t nqt, nkt, nch;
  char *slots;
  int64_t slot_bytes, nslots;
  T scale, cap;
  int tri;              /* causal, no softcap: masked products skipped */
} FN(Attn_);

/* ---- portable kernels (attention_internal.h contracts) ---- */

static void FN(mm_c_)(int64_t m, int64_t n, int64_t k, const T *a,
                      int64_t ars, int64_t acs, const T *b, int64_t ldb,
                      T *c, int64_t ldc, int acc)
{
  for (int64_t i = 0; i < m; i++) {
    T *ci = c + i * ldc;
    if (!acc)
      for (int64_t j = 0; j < n; j++)
        ci[j] = 0;
    for (int64_t p = 0; p < k; p++) {
      T aip = a[i * ars + p * acs];
      const T *bp = b + p * ldb;
      for (int64_t j = 0; j < n; j++)
        ci[j] += aip * bp[j];
    }
  }
}

static void FN(online_c_)(T *s, int64_t nk, int64_t kvis, T *mx, T *l,
                          T *alpha)
{
  (void)kvis; /* libm exp(-inf) is 0 too */
  T mn[BQ], sum[BQ];
  for (int i = 0; i < BQ; i++) {
    mn[i] = mx[i];
    sum[i] = 0;
  }
  for (int64_t j = 0; j < nk; j++)
    for (int i = 0; i < BQ; i++)
      mn[i] = s[j * BQ + i] > mn[i] ? s[j * BQ + i] : mn[i];
  for (int i = 0; i < BQ; i++) {
    T mu = mn[i] == -INFINITY ? 0 : mn[i];
    alpha[i] = EXP(mx[i] - mu);
    mx[i] = mu;
  }
  for (int64_t j = 0; j < nk; j++)
    for (int i = 0; i < BQ; i++) {
      T e = EXP(s[j * BQ + i] - mx[i]);
      s[j * BQ + i] = e;
      sum[i] += e;
    }
  for (int i = 0; i < BQ; i++) {
    l[i] = l[i] * alpha[i] + sum[i];
    mx[i] = mn[i];
  }
}

static void FN(expsub_c_)(T *s, int64_t nk, int64_t kvis, const T *sub)
{
  (void)kvis; /* libm exp(-inf) is 0 too */
  for (int64_t j = 0; j < nk; j++)
    for (int i = 0; i < BQ; i++)
      s[j * BQ + i] = EXP(s[j * BQ + i] - sub[i]);
}

static void FN(trans_c_)(const T *src, int64_t lds, int64_t rows,
                         int64_t cols, T mul, T *dst, int64_t ldd)
{
  for (int64_t r = 0; r < rows; r++)
    for (int64_t c = 0; c < cols; c++)
      dst[c * ldd + r] = src[r * lds + c] * mul;
}

static void FN(dsub_c_)(const T *s, T *dp, int64_t nk, int64_t shift,
                        const T *dd, T mul)
{
  for (int64_t j = 0; j < nk; j++) {
    int64_t a = j + shift < 0 ? 0 : j + shift < BQ ? j + shift : BQ;
    for (int64_t i = 0; i < a; i++) /* masked: P = 0, not computed */
      dp[j * BQ + i] = 0;
    for (int64_t i = a; i < BQ; i++)
      dp[j * BQ + i] = s[j * BQ + i] * (dp[j * BQ + i] - dd[i]) * mul;
  }
}

static void FN(cols_c_)(T *x, int64_t rows, const T *f, int div)
{
  for (int64_t r = 0; r < rows; r++)
    for (int i = 0; i < BQ; i++)
      x[r * BQ + i] = div ? x[r * BQ + i] / f[i] : x[r * BQ + i] * f[i];
}

/* The kernels of the ISA the GEMM dispatch chose; portable C where its
   table has none. */
static ISA_T FN(isa_)(void)
{
  ISA_T t = {FN(mm_c_),    FN(online_c_), FN(expsub_c_),
             FN(trans_c_), FN(dsub_c_),   FN(cols_c_)};
  const ISA_T *x = FN(attn_tables_)[rlx_isa_level()];
  if (x && x->mm) {
    t.mm = x->mm;
    t.online = x->online ? x->online : t.online;
    t.expsub = x->expsub ? x->expsub : t.expsub;
    t.trans = x->trans ? x->trans : t.trans;
    t.dsub = x->dsub ? x->dsub : t.dsub;
    t.cols = x->cols ? x->cols : t.cols;
  }
  return t;
}

/* ---- helpers ---- */

static inline int64_t FN(min_)(int64_t a, int64_t b)
{
  return a < b ? a : b;
}

static inline int64_t FN(max_)(int64_t a, int64_t b)
{
  return a > b ? a : b;
}

/* Row 0 of head (b, h) of a q-like (len = lq) or k-like (len = lk)
   tensor, and its row stride: h*d in layout 3, or operand `op`'s pitch
   (g->ld[op]; op < 0: dense). */
static inline int64_t FN(base_)(const rlx_attn_geom *g, int l4, int64_t b,
                                int64_t h, int64_t len, int64_t *ld)
{
  *ld = l4 ? g->d : g->h * g->d;
  return l4 ? (b * g->h + h) * len * g->d : (b * len * g->h + h) * g->d;
}

static inline int64_t FN(at_)(const rlx_attn_geom *g, int op, int64_t b,
                              int64_t h, int64_t len, int64_t *ld)
{
  if (g->layout == 4 || op < 0 || g->ld[op] <= 0)
    return FN(base_)(g, g->layout == 4, b, h, len, ld);
  *ld = g->ld[op];
  return b * len * *ld + h * g->d;
}

/* dst[c*BQ + i] = src[i*ld + c] * mul for i < n, 0 for n <= i < BQ. */
static void FN(trans_)(const FN(Attn_) *A, const T *src, int64_t ld,
                       int64_t n, int64_t d, T mul, T *dst)
{
  for (int64_t c = 0; c < d; c++)
    for (int64_t i = n; i < BQ; i++)
      dst[c * BQ + i] = 0;
  A->isa->trans(src, ld, n, d, mul, dst, BQ);
}

static void FN(zero_rows_)(T *p, int64_t ld, int64_t rows, int64_t d)
{
  for (int64_t i = 0; i < rows; i++)
    memset(p + i * ld, 0, (size_t)d * sizeof(T));
}

/* Keys [*lo, *hi) that queries [i0, i0 + nq) may see (causal, sliding). */
static void FN(krange_)(const rlx_attn_geom *g, int64_t i0, int64_t nq,
                        int64_t *lo, int64_t *hi)
{
  int64_t off = g->lk - g->lq;
  *lo = 0;
  *hi = g->lk;
  if (g->mask == RLX_ATTN_CAUSAL || g->mask == RLX_ATTN_SLIDING)
    *hi = FN(max_)(0, FN(min_)(g->lk, off + i0 + nq));
  if (g->mask == RLX_ATTN_SLIDING)
    *lo = FN(max_)(0, off + i0 - g->window);
  if (*hi < *lo)
    *hi = *lo;
}

/* Queries [*lo, *hi) that may see keys [j0, j0 + nk). */
static void FN(qrange_)(const rlx_attn_geom *g, int64_t j0, int64_t nk,
                        int64_t *lo, int64_t *hi)
{
  int64_t off = g->lk - g->lq;
  *lo = 0;
  *hi = g->lq;
  if (g->mask == RLX_ATTN_CAUSAL || g->mask == RLX_ATTN_SLIDING)
    *lo = FN(min_)(g->lq, FN(max_)(0, j0 - off));
  if (g->mask == RLX_ATTN_SLIDING)
    *hi = FN(max_)(0, FN(min_)(g->lq, j0 + nk + g->window - off));
  if (*hi < *lo)
    *hi = *lo;
}

/* Causal tiles (A->tri): the products of masked (key, query) pairs are
   not computed.  Key row j of the tile (key j0 + j) is seen by the
   query columns [tri_a_, BQ); query column i sees the key rows
   [0, tri_k_).  Scores of masked pairs are set to -inf afterwards
   (scores_), P and dS of masked pairs are exact zeros, and a sum that
   skips zero products keeps its bits (its accumulator starts at +0 and
   is never -0), so results are those of the full tiles (for finite V,
   dO, Q and K).  Row groups of TRI_G, a multiple of the mm tiles' 6
   rows. */
#define TRI_G 12

static inline int64_t FN(tri_a_)(const rlx_attn_geom *g, int64_t i0,
                                 int64_t j0, int64_t j)
{
  return FN(min_)(BQ, FN(max_)(0, j0 + j - (g->lk - g->lq) - i0));
}

static inline int64_t FN(tri_k_)(const rlx_attn_geom *g, int64_t i0,
                                 int64_t j0, int64_t nk, int64_t i)
{
  return FN(min_)(nk, FN(max_)(0, i + (g->lk - g->lq) + i0 - j0 + 1));
}

/* The kvis of the softmax steps (attention_internal.h): causal tiles
   have -inf scores at key rows j >= i + kvis; others none. */
static inline int64_t FN(kvis_)(const FN(Attn_) *A, int64_t i0, int64_t j0,
                                int64_t nk)
{
  return A->tri ? A->g->lk - A->g->lq + i0 - j0 + 1 : nk;
}

/* C[j][i] = sum_p A(j, p) B(p, i) for key rows j < nk and the query
   columns [tri_a_(j), BQ) only, rounded down to a multiple of 8 per
   group (the rest of C is left as it was; callers overwrite the masked
   columns, so the extra ones cost a few products and no bits). */
static void FN(mm_keyrows_)(const FN(Attn_) *A, int64_t i0, int64_t j0,
                            int64_t nk, int64_t kd, const T *a, int64_t ars,
                            int64_t acs, const T *b, int64_t ldb, T *c,
                            int64_t ldc)
{
  for (int64_t j = 0; j < nk; j += TRI_G) {
    int64_t m = FN(min_)(TRI_G, nk - j), c0 = FN(tri_a_)(A->g, i0, j0, j);
    c0 = c0 < BQ ? c0 / 8 * 8 : BQ; /* whole 8-lane columns: no masked
                                        stores; the extra are masked */
    if (c0 < BQ)
      A->isa->mm(m, BQ - c0, kd, a + j * ars, ars, acs, b + c0, ldb,
                 c + j * ldc + c0, ldc, 0);
  }
}

/* The final scores of keys [j0, j0 + nk) x queries [i0, i0 + BQ) of head
   (b, h), s[j*BQ + i] (columns i >= lq - i0 are padding: finite or
   -inf, never used).  qt is the d x BQ tile Q^T * scale.  f (softcap
   only; else NULL) gets ds/d(q.k) = scale (1 - tanh^2). */
static void FN(scores_)(const FN(Attn_) *A, int64_t b, int64_t h,
                        const T *kr, int64_t ldk, const T *qt, int64_t i0,
                        int64_t j0, int64_t nk, T *s, T *f)
{
  const rlx_attn_geom *g = A->g;
  if (A->tri)
    FN(mm_keyrows_)(A, i0, j0, nk, g->d, kr, ldk, 1, qt, BQ, s, BQ);
  else
    A->isa->mm(nk, BQ, g->d, kr, ldk, 1, qt, BQ, s, BQ, 0);
  if (A->cap > 0)
    for (int64_t x = 0; x < nk * BQ; x++) {
      T t = TANH(s[x] / A->cap);
      s[x] = A->cap * t;
      if (f)
        f[x] = A->scale * (1 - t * t);
    }
  int64_t off = g->lk - g->lq;
  for (int64_t j = 0; j < nk; j++) {
    T *sj = s + j * BQ;
    int64_t jj = j0 + j, a = 0, e = BQ; /* allowed columns [a, e) */
    if (g->mask == RLX_ATTN_CAUSAL || g->mask == RLX_ATTN_SLIDING)
      a = FN(min_)(BQ, FN(max_)(0, jj - off - i0));
    if (g->mask == RLX_ATTN_SLIDING)
      e = FN(max_)(a, FN(min_)(BQ, jj + g->window - off - i0 + 1));
    if (g->mask == RLX_ATTN_CUSTOM &&
        !((const uint8_t *)A->mask)[b * g->lk + jj])
      a = e = BQ;
    for (int64_t i = 0; i < a; i++)
      sj[i] = -INFINITY;
    for (int64_t i = e; i < BQ; i++)
      sj[i] = -INFINITY;
  }
  if (g->mask == RLX_ATTN_BIAS) {
    const T *bias = (const T *)A->mask + ((b * g->h + h) * g->lq + i0) * g->lk;
    int64_t nq = FN(min_)(BQ, g->lq - i0);
    for (int64_t j = 0; j < nk; j++)
      for (int64_t i = 0; i < nq; i++)
        s[j * BQ + i] += bias[i * g->lk + j0 + j];
  }
}

/* ---- forward: one item = (b, h, query tile) ---- */

static void FN(fwd_item_)(const FN(Attn_) *A, int64_t it, char *slot)
{
  const rlx_attn_geom *g = A->g;
  int64_t d = g->d, qi = it % A->nqt, h = it / A->nqt % g->h;
  int64_t b = it / A->nqt / g->h, i0 = qi * BQ;
  int64_t nq = FN(min_)(BQ, g->lq - i0), ldq, ldk, ldv, ldo, lo, hi;
  const T *q = A->q + FN(at_)(g, RLX_ATTN_LD_Q, b, h, g->lq, &ldq);
  const T *k = A->k + FN(at_)(g, RLX_ATTN_LD_K, b, h, g->lk, &ldk);
  const T *v = A->v + FN(at_)(g, RLX_ATTN_LD_V, b, h, g->lk, &ldv);
  T *o = A->o + FN(base_)(g, A->o_l4, b, h, g->lq, &ldo);
  T *qt = (T *)slot, *ot = qt + d * BQ, *s = ot + d * BQ;
  T *mx = s + BK * BQ, *l = mx + BQ, *al = l + BQ;
  FN(trans_)(A, q + i0 * ldq, ldq, nq, d, A->scale, qt);
  memset(ot, 0, (size_t)(d * BQ) * sizeof(T));
  for (int i = 0; i < BQ; i++) {
    mx[i] = -INFINITY;
    l[i] = 0;
  }
  FN(krange_)(g, i0, nq, &lo, &hi);
  for (int64_t j0 = lo / BK * BK; j0 < hi; j0 += BK) {
    int64_t nk = FN(min_)(BK, g->lk - j0);
    FN(scores_)(A, b, h, k + j0 * ldk, ldk, qt, i0, j0, nk, s, NULL);
    A->isa->online(s, nk, FN(kvis_)(A, i0, j0, nk), mx, l, al);
    if (j0 > lo / BK * BK) /* the first tile's O^T is 0 */
      A->isa->cols(ot, d, al, 0);
    if (!A->tri)
      A->isa->mm(d, BQ, nk, v + j0 * ldv, 1, ldv, s, BQ, ot, BQ, 1);
    else /* query columns in groups, each over the keys it sees */
      for (int64_t i = 0; i < BQ; i += 2 * TRI_G) {
        int64_t w = FN(min_)(2 * TRI_G, BQ - i);
        int64_t kk = FN(tri_k_)(g, i0, j0, nk, i + w - 1);
        if (kk > 0)
          A->isa->mm(d, w, kk, v + j0 * ldv, 1, ldv, s + i, BQ, ot + i, BQ,
                     1);
      }
  }
  for (int i = 0; i < BQ; i++) /* divisors: columns without keys: 1 */
    al[i] = l[i] > 0 ? l[i] : 1;
  A->isa->cols(ot, d, al, 1);
  for (int i = 0; i < BQ; i++) /* and 0 there (even for inf v) */
    for (int64_t c = 0; !(l[i] > 0) && c < d; c++)
      ot[c * BQ + i] = 0;
  A->isa->trans(ot, BQ, d, nq, 1, o + i0 * ldo, ldo);
  for (int64_t i = 0; i < nq && A->lse; i++)
    A->lse[(b * g->h + h) * g->lq + i0 + i] =
        l[i] > 0 ? mx[i] + LOG(l[i]) : -INFINITY;
}

/* ---- work split: slot s runs items [s*n/S, (s+1)*n/S) in order ---- */

typedef void (*FN(ItemFn_))(const FN(Attn_) *A, int64_t it, char *slot);

typedef struct {
  const FN(Attn_) *A;
  FN(ItemFn_) fn;
  int64_t items, nslots;
} FN(Run_);

static void FN(task_)(void *ctx, int64_t begin, int64_t end)
{
  const FN(Run_) *r = ctx;
  for (int64_t s = begin; s < end; s++) {
    char *slot = r->A->slots + s * r->A->slot_bytes;
    for (int64_t it = s * r->items / r->nslots;
         it < (s + 1) * r->items / r->nslots; it++)
      r->fn(r->A, it, slot);
  }
}

static void FN(run_)(const FN(Attn_) *A, FN(ItemFn_) fn, int64_t items)
{
  FN(Run_) r = {A, fn, items, FN(min_)(A->nslots, items)};
  if (r.nslots > 0)
    rlx_parallel_for(r.nslots, 1, FN(task_), &r);
}

static FN(Attn_) FN(setup_)(const rlx_attn_geom *g, const AttnPlan *pl,
                            const ISA_T *isa, const T *q, const T *k,
                            const T *v, const void *mask, void *scratch)
{
  FN(Attn_) A = {.g = g, .isa = isa, .q = q, .k = k, .v = v, .mask = mask,
                 .o_l4 = g->layout == 4, .nqt = pl->nqt, .nkt = pl->nkt,
                 .nch = pl->nch, .slots = (char *)scratch + pl->slot_off,
                 .slot_bytes = pl->slot_bytes, .nslots = pl->nslots,
                 .scale = (T)g->scale, .cap = (T)g->softcap,
                 .tri = g->mask == RLX_ATTN_CAUSAL && !(g->softcap > 0)};
  return A;
}

static void FN(attention_)(const rlx_attn_geom *g, const ISA_T *isa,
                           const T *q, const T *k, const T *v,
                           const void *mask, T *o, T *lse, void *scratch)
{
  AttnPlan pl;
  rlx_attn_plan(g, RLX_ATTN_FWD, sizeof(T), &pl);
  FN(Attn_) A = FN(setup_)(g, &pl, isa, q, k, v, mask, scratch);
  A.o = o;
  A.lse = lse;
  FN(run_)(&A, FN(fwd_item_), g->b * g->h * pl.nqt);
}

/* ---- backward ---- */

/* Pre-pass item (b, h, query tile): the forward if recomputing, the
   transposed tiles of Q * scale and dO, and D = rowsum(dO * O). */
static void FN(pre_item_)(const FN(Attn_) *A, int64_t it, char *slot)
{
  const rlx_attn_geom *g = A->g;
  int l4 = g->layout == 4;
  int64_t d = g->d, qi = it % A->nqt, h = it / A->nqt % g->h;
  int64_t b = it / A->nqt / g->h, i0 = qi * BQ;
  int64_t nq = FN(min_)(BQ, g->lq - i0), ldq, ldy, ldo;
  if (A->recompute)
    FN(fwd_item_)(A, it, slot);
  const T *q = A->q + FN(at_)(g, RLX_ATTN_LD_Q, b, h, g->lq, &ldq) + i0 * ldq;
  const T *o = A->o + FN(base_)(g, A->o_l4, b, h, g->lq, &ldo) + i0 * ldo;
  const T *dy = A->dy + FN(base_)(g, l4, b, h, g->lq, &ldy) + i0 * ldy;
  FN(trans_)(A, q, ldq, nq, d, A->scale, A->qt + it * d * BQ);
  FN(trans_)(A, dy, ldy, nq, d, 1, A->dot + it * d * BQ);
  /* D: eight rows at a time (independent sums, each in c order) */
  for (int64_t i0 = 0; i0 < BQ; i0 += 8) {
    T acc[8] = {0};
    int64_t nr = FN(max_)(0, FN(min_)(8, nq - i0));
    for (int64_t c = 0; c < d; c++)
      for (int64_t r = 0; r < nr; r++)
        acc[r] += dy[(i0 + r) * ldy + c] * o[(i0 + r) * ldo + c];
    for (int r = 0; r < 8; r++)
      A->dd[it * BQ + i0 + r] = acc[r];
  }
}

/* Main item (b, h, chunk of key tiles): dK and dV of its keys, the dQ
   contributions of its keys into its own dQ buffer. */
static void FN(bwd_item_)(const FN(Attn_) *A, int64_t it, char *slot)
{
  const rlx_attn_geom *g = A->g;
  int l4 = g->layout == 4;
  int64_t d = g->d, ch = it % A->nch, h = it / A->nch % g->h;
  int64_t b = it / A->nch / g->h, ldq, ldy, ldk, ldv, lddq, lddk, lddv;
  int64_t ldp = d;
  int64_t kt0 = ch * A->nkt / A->nch, kt1 = (ch + 1) * A->nkt / A->nch;
  const T *q = A->q + FN(at_)(g, RLX_ATTN_LD_Q, b, h, g->lq, &ldq);
  const T *dy = A->dy + FN(base_)(g, l4, b, h, g->lq, &ldy);
  const T *k = A->k + FN(at_)(g, RLX_ATTN_LD_K, b, h, g->lk, &ldk);
  const T *v = A->v + FN(at_)(g, RLX_ATTN_LD_V, b, h, g->lk, &ldv);
  int64_t dqoff = FN(at_)(g, RLX_ATTN_LD_DQ, b, h, g->lq, &lddq);
  int64_t dkoff = FN(at_)(g, RLX_ATTN_LD_DK, b, h, g->lk, &lddk);
  int64_t dvoff = FN(at_)(g, RLX_ATTN_LD_DV, b, h, g->lk, &lddv);
  const T *lse = A->lse + (b * g->h + h) * g->lq;
  T *dqp = NULL, *s = (T *)slot, *dp = s + BK * BQ, *f = dp + BK * BQ;
  T *lt = f + BK * BQ, *dt = lt + BQ;
  int need_ds = A->dq || A->dk || A->dbias;
  if (A->dq) {
    dqp = ch == 0 ? A->dq + dqoff /* chunk 0 into dq, the others apart */
                  : A->dqp + (((ch - 1) * g->b + b) * g->h + h) * g->lq * d;
    ldp = ch == 0 ? lddq : d;
    FN(zero_rows_)(dqp, ldp, g->lq, d);
  }
  for (int64_t kt = kt0; kt < kt1; kt++) {
    int64_t j0 = kt * BK, nk = FN(min_)(BK, g->lk - j0), lo, hi;
    const T *kr = k + j0 * ldk, *vr = v + j0 * ldv;
    T *dkr = A->dk ? A->dk + dkoff + j0 * lddk : NULL;
    T *dvr = A->dv ? A->dv + dvoff + j0 * lddv : NULL;
    if (dkr)
      FN(zero_rows_)(dkr, lddk, nk, d);
    if (dvr)
      FN(zero_rows_)(dvr, lddv, nk, d);
    FN(qrange_)(g, j0, nk, &lo, &hi);
    for (int64_t i0 = lo / BQ * BQ; i0 < hi; i0 += BQ) {
      int64_t nq = FN(min_)(BQ, g->lq - i0);
      int64_t tile = (b * g->h + h) * A->nqt + i0 / BQ;
      for (int64_t i = 0; i < BQ; i++) {
        T li = i < nq ? lse[i0 + i] : INFINITY;
        lt[i] = li == -INFINITY ? INFINITY : li;
        dt[i] = A->dd[tile * BQ + i];
      }
      FN(scores_)(A, b, h, kr, ldk, A->qt + tile * d * BQ, i0, j0, nk, s,
                  A->cap > 0 ? f : NULL);
      A->isa->expsub(s, nk, FN(kvis_)(A, i0, j0, nk), lt); /* s = P */
      if (dvr && !A->tri)
        A->isa->mm(nk, d, nq, s, BQ, 1, dy + i0 * ldy, ldy, dvr, lddv, 1);
      else if (dvr) /* key rows in groups, each over the queries that
                       see them */
        for (int64_t j = 0; j < nk; j += TRI_G) {
          int64_t m = FN(min_)(TRI_G, nk - j), c0 = FN(tri_a_)(g, i0, j0, j);
          if (c0 < nq)
            A->isa->mm(m, d, nq - c0, s + j * BQ + c0, BQ, 1,
                       dy + (i0 + c0) * ldy, ldy, dvr + j * lddv, lddv, 1);
        }
      if (!need_ds)
        continue;
      if (A->tri)
        FN(mm_keyrows_)(A, i0, j0, nk, d, vr, ldv, 1,
                        A->dot + tile * d * BQ, BQ, dp, BQ);
      else
        A->isa->mm(nk, BQ, d, vr, ldv, 1, A->dot + tile * d * BQ, BQ, dp,
                   BQ, 0);
      /* dS = P (dP - D), times the scale here unless dbias needs dS
         first or the softcap's f replaces the scale (x * 1 is x) */
      T mul = A->dbias || A->cap > 0 ? 1 : A->scale;
      A->isa->dsub(s, dp, nk, A->tri ? j0 - (g->lk - g->lq) - i0 : -nk, dt,
                   mul); /* causal: the columns tri_a_ masks are 0 */
      if (A->dbias) {
        T *db = A->dbias + ((b * g->h + h) * g->lq + i0) * g->lk + j0;
        for (int64_t i = 0; i < nq; i++)
          for (int64_t j = 0; j < nk; j++)
            db[i * g->lk + j] = dp[j * BQ + i];
      }
      if (A->cap > 0)
        for (int64_t x = 0; x < nk * BQ; x++)
          dp[x] *= f[x];
      else if (A->dbias)
        for (int64_t x = 0; x < nk * BQ; x++)
          dp[x] *= A->scale;
      if (dkr && !A->tri)
        A->isa->mm(nk, d, nq, dp, BQ, 1, q + i0 * ldq, ldq, dkr, lddk, 1);
      else if (dkr)
        for (int64_t j = 0; j < nk; j += TRI_G) {
          int64_t m = FN(min_)(TRI_G, nk - j), c0 = FN(tri_a_)(g, i0, j0, j);
          if (c0 < nq)
            A->isa->mm(m, d, nq - c0, dp + j * BQ + c0, BQ, 1,
                       q + (i0 + c0) * ldq, ldq, dkr + j * lddk, lddk, 1);
        }
      if (dqp && !A->tri)
        A->isa->mm(nq, d, nk, dp, 1, BQ, kr, ldk, dqp + i0 * ldp, ldp, 1);
      else if (dqp) /* query rows in groups, each over the keys it sees */
        for (int64_t i = 0; i < nq; i += TRI_G) {
          int64_t m = FN(min_)(TRI_G, nq - i);
          int64_t kk = FN(tri_k_)(g, i0, j0, nk, i + m - 1);
          if (kk > 0)
            A->isa->mm(m, d, kk, dp + i, 1, BQ, kr, ldk,
                       dqp + (i0 + i) * ldp, ldp, 1);
        }
    }
  }
}

/* Reduction item (b, h, query tile): dq = the chunks' partials, summed
   in chunk order. */
static void FN(sum_item_)(const FN(Attn_) *A, int64_t it, char *slot)
{
  const rlx_attn_geom *g = A->g;
  int64_t d = g->d, qi = it % A->nqt, bh = it / A->nqt, ldq;
  int64_t i0 = qi * BQ, nq = FN(min_)(BQ, g->lq - i0);
  T *dq = A->dq + FN(at_)(g, RLX_ATTN_LD_DQ, bh / g->h, bh % g->h, g->lq,
                          &ldq) + i0 * ldq;
  int64_t stride = g->b * g->h * g->lq * d;
  const T *p = A->dqp + (bh * g->lq + i0) * d;
  for (int64_t i = 0; i < nq; i++)
    for (int64_t c = 0; c < d; c++) {
      T acc = dq[i * ldq + c];
      for (int64_t ch = 1; ch < A->nch; ch++)
        acc += p[(ch - 1) * stride + i * d + c];
      dq[i * ldq + c] = acc;
    }
}

static void FN(attention_bwd_)(const rlx_attn_geom *g, const ISA_T *isa,
                               const T *q, const T *k, const T *v,
                               const void *mask, const T *dy, const T *o,
                               const T *lse, T *dq, T *dk, T *dv, T *dbias,
                               void *scratch)
{
  AttnPlan pl;
  int recompute = o == NULL || lse == NULL;
  rlx_attn_plan(g, recompute ? RLX_ATTN_BWD_RECOMPUTE : RLX_ATTN_BWD, sizeof(T),
            &pl);
  FN(Attn_) A = FN(setup_)(g, &pl, isa, q, k, v, mask, scratch);
  char *sc = scratch;
  A.dy = dy;
  A.dq = dq;
  A.dk = dk;
  A.dv = dv;
  A.dbias = g->mask == RLX_ATTN_BIAS ? dbias : NULL;
  A.qt = (T *)(sc + pl.qt_off);
  A.dot = (T *)(sc + pl.dot_off);
  A.dd = (T *)(sc + pl.dd_off);
  A.dqp = (T *)(sc + pl.dqp_off);
  A.o = recompute ? (T *)(sc + pl.o_off) : (T *)o;
  A.lse = recompute ? (T *)(sc + pl.lse_off) : (T *)lse;
  A.recompute = recompute;
  A.o_l4 = recompute || g->layout == 4; /* scratch o is [b, h, lq, d] */
  int64_t bh = g->b * g->h;
  FN(run_)(&A, FN(pre_item_), bh * pl.nqt);
  if (!dq && !dk && !dv && !A.dbias)
    return;
  FN(run_)(&A, FN(bwd_item_), bh * pl.nch);
  if (dq && pl.nch > 1)
    FN(run_)(&A, FN(sum_item_), bh * pl.nqt);
}

/* ---- the entry points (rlxrt.h) ---- */

void FN(rlx_attention_)(const rlx_attn_geom *g, const T *q, const T *k,
                        const T *v, const void *mask, T *o, T *lse,
                        void *scratch)
{
  ISA_T isa = FN(isa_)();
  FN(attention_)(g, &isa, q, k, v, mask, o, lse, scratch);
}

void FN(rlx_attention_bwd_)(const rlx_attn_geom *g, const T *q, const T *k,
                            const T *v, const void *mask, const T *dy,
                            const T *o, const T *lse, T *dq, T *dk, T *dv,
                            T *dbias, void *scratch)
{
  ISA_T isa = FN(isa_)();
  FN(attention_bwd_)(g, &isa, q, k, v, mask, dy, o, lse, dq, dk, dv, dbias,
                     scratch);
}

#undef ISA_T
#undef BQ
#undef BK
