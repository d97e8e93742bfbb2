/* attention_kern.h -- the register-tiled mm kernel of
 * attention_internal.h for one element type and vector ISA, written once
 * over the vector layer (runtime/simd/vec.h).  Included by
 * attention_<isa>.c after a vec_*.h instantiation, with T, SFX and
 * MM_NV (most vectors per tile row: what the registers hold) defined.
 *
 * An R x NV-vector tile of C lives in R*NV accumulators (R <= 6,
 * NV <= MM_NV: AVX-512 6 x 4 = 24 of 32 zmm, AVX2 6 x 2 = 12 of 16 ymm,
 * NEON 6 x 4 = 24 of 32 q registers,
 * plus NV B vectors and one broadcast); each step p loads NV vectors of
 * row p of B (the last one masked) and broadcasts A(i, p) for each of
 * the R rows.  R and NV are compile-time constants after inlining into
 * the dispatch switch.  Every element of C is one FMA chain in
 * increasing p, so both ISAs give the same bits.
 *
 * Also the dsub and cols steps, and where VEXP is defined (f32,
 * simd/vec_exp.h) the online and expsub softmax steps of
 * attention_internal.h over VL-lane columns.
 */
#define CAT_(a, b) a##b
#define CAT(a, b) CAT_(a, b)
#define MM_TILE CAT(mm_tile_, SFX)
#define MM CAT(mm_, SFX)

/* FULL (a constant): the last vector has all VL columns (plain loads
   and stores; else `last` selects its columns). */
__attribute__((always_inline)) TGT static inline void
MM_TILE(const int R, const int NV, const int FULL, int64_t k, const T *a,
        int64_t ars, int64_t acs, const T *b, int64_t ldb, T *c,
        int64_t ldc, MT last, int acc)
{
  VT x[6][4];
#pragma GCC unroll 6
  for (int r = 0; r < R; r++)
#pragma GCC unroll 4
    for (int v = 0; v < NV; v++)
      x[r][v] = !acc                 ? VZERO()
                : FULL || v < NV - 1 ? VLOADU(c + r * ldc + v * VL)
                                     : VMASKZ_LOAD(last, c + r * ldc + v * VL);
  for (int64_t p = 0; p < k; p++) {
    VT bv[4];
#pragma GCC unroll 4
    for (int v = 0; v < NV; v++)
      bv[v] = FULL || v < NV - 1 ? VLOADU(b + v * VL)
                                 : VMASKZ_LOAD(last, b + v * VL);
#pragma GCC unroll 6
    for (int r = 0; r < R; r++) {
      VT av = VSET1(a[r * ars]);
#pragma GCC unroll 4
      for (int v = 0; v < NV; v++)
        x[r][v] = VFMA(av, bv[v], x[r][v]);
    }
    a += acs;
    b += ldb;
  }
#pragma GCC unroll 6
  for (int r = 0; r < R; r++)
#pragma GCC unroll 4
    for (int v = 0; v < NV; v++) {
      if (FULL || v < NV - 1)
        VSTOREU(c + r * ldc + v * VL, x[r][v]);
      else
        VMASK_STORE(c + r * ldc + v * VL, last, x[r][v]);
    }
}

TGT static void MM(int64_t m, int64_t n, int64_t k, const T *a,
                   int64_t ars, int64_t acs, const T *b, int64_t ldb, T *c,
                   int64_t ldc, int acc)
{
  for (int64_t j0 = 0; j0 < n; j0 += MM_NV * VL) {
    int64_t w = n - j0 < MM_NV * VL ? n - j0 : MM_NV * VL;
    int nv = (int)((w + VL - 1) / VL);
    int tail = (int)(w - (nv - 1) * VL);
    MT last = VMASK_FIRST(tail);
    for (int64_t i0 = 0; i0 < m; i0 += 6) {
      int R = m - i0 < 6 ? (int)(m - i0) : 6;
      const T *ai = a + i0 * ars;
      T *ci = c + i0 * ldc + j0;
      const T *bj = b + j0;
#define MM_CASE(RR, NN)                                                   \
  case (RR) * 8 + (NN):                                                   \
    if (tail == VL)                                                       \
      MM_TILE(RR, NN, 1, k, ai, ars, acs, bj, ldb, ci, ldc, last, acc);   \
    else                                                                  \
      MM_TILE(RR, NN, 0, k, ai, ars, acs, bj, ldb, ci, ldc, last, acc);   \
    break;
#if MM_NV == 2
#define MM_ROW(RR) MM_CASE(RR, 1) MM_CASE(RR, 2)
#else
#define MM_ROW(RR) MM_CASE(RR, 1) MM_CASE(RR, 2) MM_CASE(RR, 3) MM_CASE(RR, 4)
#endif
      switch (R * 8 + nv) {
        MM_ROW(1) MM_ROW(2) MM_ROW(3) MM_ROW(4) MM_ROW(5) MM_ROW(6)
      }
#undef MM_ROW
#undef MM_CASE
    }
  }
}

#undef MM_TILE
#undef MM

/* dsub and cols (attention_internal.h): the portable kernels' operations
   lane by lane, so their bits. */
TGT static void CAT(dsub_, SFX)(const T *s, T *dp, int64_t nk,
                                int64_t shift, const T *dd, T mul)
{
  const VT m = VSET1(mul);
  for (int64_t j = 0; j < nk; j++) {
    int64_t a = j + shift < 0 ? 0 : j + shift < ATTN_BQ ? j + shift : ATTN_BQ;
    const T *sj = s + j * ATTN_BQ;
    T *pj = dp + j * ATTN_BQ;
    int v = 0;
    for (; v + VL <= a; v += VL)
      VSTOREU(pj + v, VZERO());
    for (; v < ATTN_BQ; v += VL) {
      VT t = VSUB(VLOADU(pj + v), VLOADU(dd + v));
      VSTOREU(pj + v, VMUL(VMUL(VLOADU(sj + v), t), m));
      if (v < a) /* the masked lanes of a partly masked vector */
        VMASK_STORE(pj + v, VMASK_FIRST((int)(a - v)), VZERO());
    }
  }
}

TGT static void CAT(cols_, SFX)(T *x, int64_t rows, const T *f, int div)
{
  for (int64_t r = 0; r < rows; r++)
    for (int v = 0; v < ATTN_BQ; v += VL) {
      T *p = x + r * ATTN_BQ + v;
      VSTOREU(p, div ? VDIV(VLOADU(p), VLOADU(f + v))
                     : VMUL(VLOADU(p), VLOADU(f + v)));
    }
}

#ifdef VEXP
/* Rows of the VL columns from v that are not -inf in all of them
   (kvis: attention_internal.h); the rest are set to 0 here. */
TGT static inline int64_t CAT(visible_, SFX)(T *s, int64_t nk, int64_t kvis,
                                            int v)
{
  int64_t ne = v + VL - 1 + kvis;
  ne = ne < 0 ? 0 : ne < nk ? ne : nk;
  for (int64_t j = ne; j < nk; j++)
    VSTOREU(s + j * ATTN_BQ + v, VZERO());
  return ne;
}

/* Both steps run the tile row by row across its ATTN_BQ / VL column
   groups (each group's max, exp and sum chains independent of the
   others'), in each column the order of the one-group loops, so their
   bits. */
TGT static void CAT(online_, SFX)(T *s, int64_t nk, int64_t kvis, T *mx,
                                  T *l, T *alpha)
{
  enum { G = ATTN_BQ / VL };
  VT mn[G], sum[G];
  T mu[ATTN_BQ];
  int64_t ne[G], top = 0;
  for (int g = 0; g < G; g++)
    mn[g] = VLOADU(mx + g * VL);
  for (int64_t j = 0; j < nk; j++)
    for (int g = 0; g < G; g++)
      mn[g] = VMAX(mn[g], VLOADU(s + j * ATTN_BQ + g * VL));
  for (int g = 0; g < G; g++) {
    ne[g] = CAT(visible_, SFX)(s, nk, kvis, g * VL);
    top = ne[g] > top ? ne[g] : top;
    VT m = VZERO_WHERE_NEGINF(mn[g], mn[g]);
    VSTOREU(mu + g * VL, m);
    VSTOREU(alpha + g * VL, VEXP(VSUB(VLOADU(mx + g * VL), m)));
    VSTOREU(mx + g * VL, mn[g]);
    sum[g] = VZERO();
  }
  for (int64_t j = 0; j < top; j++)
    for (int g = 0; g < G; g++)
      if (j < ne[g]) {
        T *sj = s + j * ATTN_BQ + g * VL;
        VSTOREU(sj, VEXP(VSUB(VLOADU(sj), VLOADU(mu + g * VL))));
      }
  for (int64_t j = 0; j < top; j++)
    for (int g = 0; g < G; g++)
      if (j < ne[g])
        sum[g] = VADD(sum[g], VLOADU(s + j * ATTN_BQ + g * VL));
  for (int g = 0; g < G; g++)
    VSTOREU(l + g * VL, VADD(VMUL(VLOADU(l + g * VL),
                                  VLOADU(alpha + g * VL)),
                             sum[g]));
}

TGT static void CAT(expsub_, SFX)(T *s, int64_t nk, int64_t kvis,
                                  const T *sub)
{
  enum { G = ATTN_BQ / VL };
  int64_t ne[G], top = 0;
  for (int g = 0; g < G; g++) {
    ne[g] = CAT(visible_, SFX)(s, nk, kvis, g * VL);
    top = ne[g] > top ? ne[g] : top;
  }
  for (int64_t j = 0; j < top; j++)
    for (int g = 0; g < G; g++)
      if (j < ne[g]) {
        T *sj = s + j * ATTN_BQ + g * VL;
        VSTOREU(sj, VEXP(VSUB(VLOADU(sj), VLOADU(sub + g * VL))));
      }
}
#endif
