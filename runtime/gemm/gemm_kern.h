/* gemm_kern.h -- the GEMM micro-kernel (contract: gemm_internal.h)
 * written once over the vector layer (runtime/simd/vec.h).  Included
 * with T, a vec_*.h instantiation, GK_MR (rows) and GK_NV (vectors per
 * row: NR = GK_NV * VL) defined; defines the static kernel GK_NAME.
 * GK_MR * GK_NV accumulators start from zero and take one FMA per p, in
 * increasing p; C is added once at the end.  With GK_PREFETCH_C the
 * kernel first asks for C's tile (prefetch for writing), so its loads
 * and stores at the end do not wait for a C that large GEMMs keep out
 * of cache (AVX2, 2048^3: 0.92-0.94 of OpenBLAS's rate before, 0.93-0.98).
 */
#define GK_CAT_(a, b) a##b
#define GK_CAT(a, b) GK_CAT_(a, b)

/* A(i, p) at ap[i*ars + p*lda]: ars = 1 (a packed panel, or a
   transposed A in place) or A's row stride (A in place by rows). */
__attribute__((always_inline)) TGT static inline void
GK_CAT(GK_NAME, _body)(int64_t kc, const T *ap, const T *bp, int64_t ars,
                       int64_t lda, int64_t ldb, T *c, int64_t ldc,
                       int load)
{
  VT acc[GK_MR][GK_NV];
#ifdef GK_PREFETCH_C
#pragma GCC unroll 16
  for (int i = 0; i < GK_MR; i++) {
    __builtin_prefetch(c + i * ldc, 1);
    __builtin_prefetch(c + i * ldc + GK_NV * VL - 1, 1);
  }
#endif
#pragma GCC unroll 16
  for (int i = 0; i < GK_MR; i++)
#pragma GCC unroll 16
    for (int v = 0; v < GK_NV; v++)
      acc[i][v] = VZERO();
  for (int64_t p = 0; p < kc; p++) {
    VT b[GK_NV];
#pragma GCC unroll 16
    for (int v = 0; v < GK_NV; v++)
      b[v] = VLOADU(bp + v * VL);
#pragma GCC unroll 16
    for (int i = 0; i < GK_MR; i++) {
      VT a = VSET1(ap[i * ars]);
#pragma GCC unroll 16
      for (int v = 0; v < GK_NV; v++)
        acc[i][v] = VFMA(a, b[v], acc[i][v]);
    }
    ap += lda;
    bp += ldb;
  }
#pragma GCC unroll 16
  for (int i = 0; i < GK_MR; i++)
#pragma GCC unroll 16
    for (int v = 0; v < GK_NV; v++) {
      T *ci = c + i * ldc + v * VL;
      VSTOREU(ci, load ? VADD(VLOADU(ci), acc[i][v]) : acc[i][v]);
    }
}

TGT static void GK_NAME(int64_t kc, const T *ap, const T *bp, int64_t lda,
                        int64_t ldb, T *c, int64_t ldc, int load)
{
  GK_CAT(GK_NAME, _body)(kc, ap, bp, 1, lda, ldb, c, ldc, load);
}

/* A in place by rows: A(i, p) at ap[i*lda + p] (the tables of
   gemm_isa.h use it where GK_EDGE_RA_F32 is defined). */
__attribute__((unused)) TGT static void GK_CAT(GK_NAME, _ra)(int64_t kc, const T *ap, const T *bp,
                                     int64_t lda, int64_t ldb, T *c,
                                     int64_t ldc, int load)
{
  GK_CAT(GK_NAME, _body)(kc, ap, bp, lda, 1, ldb, c, ldc, load);
}
