/* attention_kern.h -- the AVX-512 register-tiled mm kernel of
 * attention_internal.h for one element type.  Included by
 * attention_avx512.c with T, SFX, VT (vector type), VL (lanes), MT (lane
 * mask type) and the V* operation macros defined.
 *
 * An R x NV-vector tile of C lives in R*NV zmm accumulators (R <= 6,
 * NV <= 4: 24 accumulators, 4 B vectors and one broadcast); each step p
 * loads NV vectors of row p of B (the last one masked) and broadcasts
 * A(i, p) for each of the R rows.  R and NV are compile-time constants
 * after inlining into the dispatch switch.
 */
#define MM_TILE CAT(mm_tile_, SFX)
#define MM CAT(mm_, SFX)

__attribute__((always_inline)) TGT static inline void
MM_TILE(const int R, const int NV, int64_t k, const T *a, int64_t ars,
        int64_t acs, const T *b, int64_t ldb, T *c, int64_t ldc, MT last,
        int acc)
{
  VT x[6][4];
#pragma GCC unroll 6
  for (int r = 0; r < R; r++)
#pragma GCC unroll 4
    for (int v = 0; v < NV; v++)
      x[r][v] = !acc         ? VZERO()
                : v < NV - 1 ? VLOADU(c + r * ldc + v * VL)
                             : VMASKZ_LOAD(last, c + r * ldc + v * VL);
  for (int64_t p = 0; p < k; p++) {
    VT bv[4];
    const T *bp = b + p * ldb;
#pragma GCC unroll 4
    for (int v = 0; v < NV; v++)
      bv[v] = v < NV - 1 ? VLOADU(bp + v * VL)
                         : VMASKZ_LOAD(last, bp + v * VL);
    const T *ap = a + p * acs;
#pragma GCC unroll 6
    for (int r = 0; r < R; r++) {
      VT av = VSET1(ap[r * ars]);
#pragma GCC unroll 4
      for (int v = 0; v < NV; v++)
        x[r][v] = VFMA(av, bv[v], x[r][v]);
    }
  }
#pragma GCC unroll 6
  for (int r = 0; r < R; r++)
#pragma GCC unroll 4
    for (int v = 0; v < NV; v++) {
      if (v < NV - 1)
        VSTOREU(c + r * ldc + v * VL, x[r][v]);
      else
        VMASK_STORE(c + r * ldc + v * VL, last, x[r][v]);
    }
}

TGT static void MM(int64_t m, int64_t n, int64_t k, const T *a,
                   int64_t ars, int64_t acs, const T *b, int64_t ldb, T *c,
                   int64_t ldc, int acc)
{
  for (int64_t j0 = 0; j0 < n; j0 += 4 * VL) {
    int64_t w = n - j0 < 4 * VL ? n - j0 : 4 * VL;
    int nv = (int)((w + VL - 1) / VL);
    int tail = (int)(w - (nv - 1) * VL);
    MT last = (MT)((1u << tail) - 1);
    for (int64_t i0 = 0; i0 < m; i0 += 6) {
      int R = m - i0 < 6 ? (int)(m - i0) : 6;
      const T *ai = a + i0 * ars;
      T *ci = c + i0 * ldc + j0;
      const T *bj = b + j0;
#define MM_CASE(RR, NN)                                                   \
  case (RR) * 8 + (NN):                                                   \
    MM_TILE(RR, NN, k, ai, ars, acs, bj, ldb, ci, ldc, last, acc);        \
    break;
#define MM_ROW(RR) MM_CASE(RR, 1) MM_CASE(RR, 2) MM_CASE(RR, 3) MM_CASE(RR, 4)
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
