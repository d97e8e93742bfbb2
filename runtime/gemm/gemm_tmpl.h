/* gemm_tmpl.h -- the blocked, packed GEMM driver, instantiated by gemm.c
 * once per real dtype.  Before including, define T (element type), SFX
 * (name suffix: f32 / f64), CFG (RlxGemmCfgF32 / RlxGemmCfgF64) and
 * FMA_T (fmaf / fma).
 *
 * Structure (GotoBLAS / BLIS with the roles of the loops swapped, so the
 * packed A micro-panel stays in L1 and the packed B block in L2):
 *   for each thread region of C (rows [m0,m1) x cols [n0,n1)):
 *     for ic step MC (RLX_GEMM_MC rows):  for pc step KC (equal blocks):
 *       pack A(ic:ic+mc, pc:pc+kc) into MR-row panels         (L3)
 *       for jc step NC (equal blocks of at most NC columns):
 *         pack B(pc:pc+kc, jc:jc+nc) into NR-column panels    (L2)
 *         for ir step MR (one A panel, L1):  for jr step NR:
 *           micro-kernel on the MR x NR tile of C
 * so A and B are each packed about once per element (B once per MC
 * rows).
 * Partial tiles use the ISA's edge kernel, else an MR x NR buffer and the
 * full kernel.  With at most RLX_DIRECT_B_ROWS register tiles of rows,
 * full B panels are read in place instead of packed; with at most
 * RLX_DIRECT_A_COLS tiles of columns, a transposed A is read in place;
 * an A of unit column stride is read in place by rows where the table
 * has kern_ra (AVX2: its 6 row streams stay in L1).
 * Determinism: K is never split across threads, and every C element is
 * accumulated in increasing p order in one accumulator per KC block
 * (blocks in order, each added to C), whatever the region and tile it
 * falls in -- so results do not depend on the thread count.  All ISA
 * tables of a dtype share KC, so results do not depend on the ISA
 * either.
 */
#define CAT_(a, b) a##b
#define CAT(a, b) CAT_(a, b)
#define FN(name) CAT(name, SFX)

typedef struct {
  const CFG *cfg;
  int64_t m, n, k;
  const T *a;
  int64_t a_bs, a_rs, a_cs;
  const T *b;
  int64_t b_bs, b_rs, b_cs;
  T *c;
  int64_t c_bs, c_rs;
  int acc;
  int64_t tm, tn; /* region grid per batch element */
  int64_t mt, nt; /* rows / cols per region */
} FN(Job_);

/* Pack rows [0,mr) x cols [0,kc) of A (element (i,p) at a[i*rs+p*cs])
   as ap[p*MR + i], zero-padding rows mr..MR-1. */
static void FN(pack_a_)(const T *a, int64_t rs, int64_t cs, int mr,
                        int64_t kc, int MR, T *ap)
{
  for (int64_t p = 0; p < kc; p++)
    for (int i = 0; i < mr; i++)
      ap[p * MR + i] = a[i * rs + p * cs];
  for (int64_t p = 0; p < kc && mr < MR; p++)
    for (int i = mr; i < MR; i++)
      ap[p * MR + i] = 0;
}

/* Pack one panel: rows [0,kc) x cols [0,nr) of B as bp[p*NR + j]. */
static void FN(pack_b_panel_)(const T *b, int64_t rs, int64_t cs, int nr,
                              int64_t kc, int NR, T *bp)
{
  if (cs == 1) { /* one pass per row, padding included (no memset) */
    for (int64_t p = 0; p < kc; p++)
      for (int j = 0; j < NR; j++)
        bp[p * NR + j] = j < nr ? b[p * rs + j] : 0;
    return;
  } else if (rs == 1) {
    for (int j = 0; j < nr; j++)
      for (int64_t p = 0; p < kc; p++)
        bp[p * NR + j] = b[j * cs + p];
  } else {
    for (int64_t p = 0; p < kc; p++)
      for (int j = 0; j < nr; j++)
        bp[p * NR + j] = b[p * rs + j * cs];
  }
  for (int64_t p = 0; p < kc && nr < NR; p++)
    for (int j = nr; j < NR; j++)
      bp[p * NR + j] = 0;
}

/* Pack a kc x nc block of B into consecutive NR-column panels.  With
   unit column stride, rows are read whole (sequential streams). */
static void FN(pack_b_)(const CFG *cfg, const T *b, int64_t rs,
                        int64_t cs, int64_t nc, int64_t kc, T *bp)
{
  int NR = cfg->nr;
  int64_t full = nc / NR * NR;
  if (cs == 1 && cfg->pack_b) {
    cfg->pack_b(b, rs, kc, full / NR, bp);
  } else if (rs == 1 && cfg->pack_bt) {
    cfg->pack_bt(b, cs, kc, full / NR, bp);
  } else if (cs == 1) {
    for (int64_t p = 0; p < kc; p++)
      for (int64_t jr = 0; jr < full; jr += NR)
        memcpy(bp + jr * kc + p * NR, b + p * rs + jr, NR * sizeof(T));
  } else {
    for (int64_t jr = 0; jr < full; jr += NR)
      FN(pack_b_panel_)(b + jr * cs, rs, cs, NR, kc, NR, bp + jr * kc);
  }
  if (full < nc)
    FN(pack_b_panel_)(b + full * cs, rs, cs, (int)(nc - full), kc, NR,
                      bp + full * kc);
}

/* A partial tile of C: mr <= MR rows, nr <= NR columns, not both full
   (macro_ runs full tiles); `ra`: A in place by rows (kern_ra /
   edge_ra). */
static void FN(tile_)(const CFG *cfg, int64_t kc, const T *ap, const T *bp,
                      int64_t lda, int64_t ldb, T *c, int64_t ldc, int mr,
                      int nr, int load, int ra)
{
  if (ra ? cfg->edge_ra != NULL : cfg->edge != NULL) {
    (ra ? cfg->edge_ra : cfg->edge)(kc, ap, bp, lda, ldb, c, ldc, load, mr,
                                    nr);
    return;
  }
  _Alignas(64) T tmp[RLX_MR_MAX * RLX_NR_MAX];
  int NR = cfg->nr;
  for (int i = 0; i < cfg->mr * NR; i++)
    tmp[i] = 0;
  for (int i = 0; i < mr && load; i++)
    for (int j = 0; j < nr; j++)
      tmp[i * NR + j] = c[i * ldc + j];
  (ra ? cfg->kern_ra : cfg->kern)(kc, ap, bp, lda, ldb, tmp, NR,
                                  load); /* same ops */
  for (int i = 0; i < mr; i++)
    for (int j = 0; j < nr; j++)
      c[i * ldc + j] = tmp[i * NR + j];
}

/* Pack rows [m0,m1) x kc of A into consecutive MR-row panels (with
   `direct`, only the partial last panel: full ones are read in place).
   A stored transposed goes through pack_at in groups of
   RLX_PACK_AT_PANELS panels: each source row's bytes of a group are read
   once, whatever its stride (per panel, a stride that maps the rows to
   a few L1 sets made every panel reload them from L2). */
static void FN(pack_a_block_)(const FN(Job_) *jb, const T *a, int64_t m0,
                              int64_t m1, int64_t kc, T *ap, int direct)
{
  const CFG *cfg = jb->cfg;
  int MR = cfg->mr;
  if (cfg->pack_at && jb->a_rs == 1 && !(cfg->pack_a && jb->a_cs == 1)) {
    int64_t g = (int64_t)RLX_PACK_AT_PANELS * MR;
    for (int64_t ic = direct ? m0 + (m1 - m0) / MR * MR : m0; ic < m1;
         ic += g)
      cfg->pack_at(a + ic, jb->a_cs, kc, m1 - ic < g ? m1 - ic : g,
                   ap + (ic - m0) * kc);
    return;
  }
  for (int64_t ic = m0; ic < m1; ic += MR) {
    int mr = m1 - ic < MR ? (int)(m1 - ic) : MR;
    if (direct && mr == MR)
      continue;
    if (cfg->pack_a && jb->a_cs == 1)
      cfg->pack_a(a + ic * jb->a_rs, jb->a_rs, kc, mr,
                  ap + (ic - m0) * kc);
    else
      FN(pack_a_)(a + ic * jb->a_rs, jb->a_rs, jb->a_cs, mr, kc, MR,
                  ap + (ic - m0) * kc);
  }
}

/* The packed rows [m0,m1) x kc (ap) times the kc x nc block of B, into
   C (c points at row 0, column jc).  Full A panels come from adir (A in
   place: transposed, or by rows with `ra`) when it is not NULL, else
   from ap, which always holds the partial last panel.  Full B panels
   come from bdir (B in place, rows jb->b_rs apart) when it is not NULL,
   else from the packed block bp, which always holds the partial last
   panel. */
static void FN(macro_)(const FN(Job_) *jb, int64_t m0, int64_t m1,
                       int64_t kc, int64_t nc, const T *ap, const T *adir,
                       int ra, const T *bp, const T *bdir, T *c, int load)
{
  const CFG *cfg = jb->cfg;
  for (int64_t ic = m0; ic < m1; ic += cfg->mr) {
    int mr = m1 - ic < cfg->mr ? (int)(m1 - ic) : cfg->mr;
    int in_place = adir && mr == cfg->mr;
    const T *apan = !in_place ? ap + (ic - m0) * kc
                    : ra      ? adir + ic * jb->a_rs
                              : adir + ic;
    int64_t lda = !in_place ? cfg->mr : ra ? jb->a_rs : jb->a_cs;
    T *cr = c + ic * jb->c_rs;
    int64_t jr = 0;
    if (mr == cfg->mr) { /* full tiles: the kernel directly */
      __typeof__(cfg->kern) kern = in_place && ra ? cfg->kern_ra : cfg->kern;
      for (; jr + cfg->nr <= nc; jr += cfg->nr)
        kern(kc, apan, bdir ? bdir + jr : bp + jr * kc, lda,
             bdir ? jb->b_rs : cfg->nr, cr + jr, jb->c_rs, load);
    }
    for (; jr < nc; jr += cfg->nr) {
      int nr = nc - jr < cfg->nr ? (int)(nc - jr) : cfg->nr;
      int direct = bdir && nr == cfg->nr;
      FN(tile_)(cfg, kc, apan, direct ? bdir + jr : bp + jr * kc, lda,
                direct ? jb->b_rs : cfg->nr, cr + jr, jb->c_rs, mr, nr,
                load, in_place && ra);
    }
  }
}

/* Depth of the KC blocks: k cut into equal blocks of at most cfg->kc
   (784 = 392 + 392, not 384 + 384 + 16: a thin last block costs a full
   pass over C for little work).  Depends on k and the dtype's KC only,
   so not on the thread count or the ISA. */
static int64_t FN(kstep_)(const CFG *cfg, int64_t k)
{
  int64_t nblk = (k + cfg->kc - 1) / cfg->kc;
  return (k + nblk - 1) / nblk;
}

/* Unpacked fallback when the packing buffer cannot be allocated: the
   same per-element operations as the kernels (slowly). */
static void FN(naive_)(const FN(Job_) *jb, const T *a, const T *b, T *c,
                       int64_t m0, int64_t m1, int64_t n0, int64_t n1)
{
  int64_t KC = FN(kstep_)(jb->cfg, jb->k);
  for (int64_t i = m0; i < m1; i++)
    for (int64_t j = n0; j < n1; j++) {
      T *cij = c + i * jb->c_rs + j;
      for (int64_t pc = 0; pc < jb->k; pc += KC) {
        T s = 0;
        for (int64_t p = pc; p < jb->k && p < pc + KC; p++)
          s = FMA_T(a[i * jb->a_rs + p * jb->a_cs],
                    b[p * jb->b_rs + j * jb->b_cs], s);
        *cij = jb->acc || pc > 0 ? *cij + s : s;
      }
    }
}

/* Packing buffer: the B block, then an A block of up to MC rows. */
static int64_t FN(bsize_)(const CFG *cfg)
{
  return cfg->kc * ((cfg->nc + cfg->nr - 1) / cfg->nr * cfg->nr);
}

static int64_t FN(asize_)(const CFG *cfg)
{
  return cfg->kc * ((RLX_GEMM_MC + cfg->mr - 1) / cfg->mr * cfg->mr);
}

/* Rows [m0,m1) (at most MC) times B columns [n0,n1), all of K. */
static void FN(rows_)(const FN(Job_) *jb, const T *a, const T *b, T *c,
                      int64_t m0, int64_t m1, int64_t n0, int64_t n1,
                      T *bp)
{
  const CFG *cfg = jb->cfg;
  T *ap = bp + FN(bsize_)(cfg);
  /* Few rows: packing B would cost as much as using it; read it in
     place (unit column stride needed). */
  int direct = jb->b_cs == 1 && m1 - m0 <= RLX_DIRECT_B_ROWS * cfg->mr;
  /* Few columns: likewise read a transposed A (unit row stride) in
     place. */
  int adirect = !direct && jb->a_rs == 1 &&
                n1 - n0 <= RLX_DIRECT_A_COLS * cfg->nr;
  /* A with unit column stride: full panels read in place by rows (each
     of its MR row streams stays in L1 across the B panels). */
  int ra = !adirect && jb->a_cs == 1 && cfg->kern_ra;
  /* Equal column blocks of at most NC (a narrow last block would reuse
     each A panel only a few times). */
  int64_t nblk = (n1 - n0 + cfg->nc - 1) / cfg->nc;
  int64_t nstep = (n1 - n0 + nblk - 1) / nblk;
  nstep = (nstep + cfg->nr - 1) / cfg->nr * cfg->nr;
  int64_t kstep = FN(kstep_)(cfg, jb->k);
  for (int64_t pc = 0; pc < jb->k; pc += kstep) {
    int64_t kc = jb->k - pc < kstep ? jb->k - pc : kstep;
    const T *asrc = a + pc * jb->a_cs;
    FN(pack_a_block_)(jb, asrc, m0, m1, kc, ap, adirect || ra);
    for (int64_t jc = n0; jc < n1; jc += nstep) {
      int64_t nc = n1 - jc < nstep ? n1 - jc : nstep;
      const T *bsrc = b + pc * jb->b_rs + jc * jb->b_cs;
      if (direct) {
        int64_t full = nc / cfg->nr * cfg->nr;
        if (full < nc)
          FN(pack_b_panel_)(bsrc + full, jb->b_rs, 1, (int)(nc - full),
                            kc, cfg->nr, bp + full * kc);
      } else {
        FN(pack_b_)(cfg, bsrc, jb->b_rs, jb->b_cs, nc, kc, bp);
      }
      FN(macro_)(jb, m0, m1, kc, nc, ap, adirect || ra ? asrc : NULL, ra,
                 bp, direct ? bsrc : NULL, c + jc, jb->acc || pc > 0);
    }
  }
}

/* C region rows [m0,m1) x cols [n0,n1) of one batch element. */
static void FN(region_)(const FN(Job_) *jb, const T *a, const T *b, T *c,
                        int64_t m0, int64_t m1, int64_t n0, int64_t n1)
{
  const CFG *cfg = jb->cfg;
  size_t elems = (size_t)(FN(bsize_)(cfg) + FN(asize_)(cfg));
  T *bp = rlx_thread_scratch(elems * sizeof(T));
  if (!bp) {
    FN(naive_)(jb, a, b, c, m0, m1, n0, n1);
    return;
  }
  /* Equal row blocks of at most MC rows (a short last block would
     repack B for little work). */
  int64_t nblk = (m1 - m0 + RLX_GEMM_MC - 1) / RLX_GEMM_MC;
  int64_t step = (m1 - m0 + nblk - 1) / nblk;
  step = (step + cfg->mr - 1) / cfg->mr * cfg->mr;
  for (int64_t ic = m0; ic < m1; ic += step) {
    int64_t ie = m1 - ic < step ? m1 : ic + step;
    FN(rows_)(jb, a, b, c, ic, ie, n0, n1, bp);
  }
}

static void FN(task_)(void *ctx, int64_t begin, int64_t end)
{
  const FN(Job_) *jb = ctx;
  int64_t per = jb->tm * jb->tn;
  for (int64_t t = begin; t < end; t++) {
    int64_t bi = t / per, im = t % per / jb->tn, in = t % per % jb->tn;
    int64_t m0 = im * jb->mt, n0 = in * jb->nt;
    int64_t m1 = m0 + jb->mt < jb->m ? m0 + jb->mt : jb->m;
    int64_t n1 = n0 + jb->nt < jb->n ? n0 + jb->nt : jb->n;
    if (m0 >= m1 || n0 >= n1)
      continue;
    FN(region_)(jb, jb->a + bi * jb->a_bs, jb->b + bi * jb->b_bs,
                jb->c + bi * jb->c_bs, m0, m1, n0, n1);
  }
}

/* k == 0: C = 0 unless accumulating. */
static void FN(zero_c_)(int64_t batch, int64_t m, int64_t n, T *c,
                        int64_t c_bs, int64_t c_rs)
{
  for (int64_t bi = 0; bi < batch; bi++)
    for (int64_t i = 0; i < m; i++)
      for (int64_t j = 0; j < n; j++)
        c[bi * c_bs + i * c_rs + j] = 0;
}

static void FN(run_)(FN(Job_) *jb, int64_t batch)
{
  const CFG *cfg = jb->cfg;
  Grid g = choose_grid(batch, jb->m, jb->n, jb->k, cfg->mr, cfg->nr);
  jb->tm = g.tm;
  jb->tn = g.tn;
  jb->mt = g.mt;
  jb->nt = g.nt;
  rlx_parallel_for(batch * g.tm * g.tn, g.grain, FN(task_), jb);
}

#undef FN
#undef CAT
#undef CAT_
