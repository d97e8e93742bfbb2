/* conv_kern.h -- the convolution micro-kernels (contracts in
 * conv_internal.h) for one ISA and dtype, written once over the vector
 * layer (runtime/simd/vec.h).  Included by conv_<isa>.c after a vec_*.h
 * instantiation, with T, SFX (F32 / F64), KVMAX (the table's vmax) and
 * KACC (its acc_max) defined.
 * All loops have constant trip counts after inlining, so the R x V
 * accumulators stay in registers (like the GEMM kernels).  Defines the
 * table conv_<ISA>_<sfx> through CONV_TABLE(name, isa, trans).
 */
#define KCAT_(a, b) a##b
#define KCAT(a, b) KCAT_(a, b)
#define KN(name) KCAT(name, SFX)

/* Lanes of the logical WDOT vector (64 bytes), whatever VL is. */
#undef DL
#define DL ((int)(64 / sizeof(T)))

__attribute__((always_inline)) TGT static inline void
KN(kern_rv_)(int R, int V, int64_t kc, const T *a, int64_t lda,
             const T *b, const int64_t *boff, T *c, int64_t ldc, int load)
{
  VT acc[14][4];
#pragma GCC unroll 16
  for (int i = 0; i < R; i++)
#pragma GCC unroll 4
    for (int v = 0; v < V; v++)
      acc[i][v] = VZERO();
  for (int64_t p = 0; p < kc; p++) {
    const T *bp = b + boff[p];
    VT bv[4];
#pragma GCC unroll 4
    for (int v = 0; v < V; v++)
      bv[v] = VLOADU(bp + v * VL);
#pragma GCC unroll 16
    for (int i = 0; i < R; i++) {
      VT av = VSET1(a[p * lda + i]);
#pragma GCC unroll 4
      for (int v = 0; v < V; v++)
        acc[i][v] = VFMA(av, bv[v], acc[i][v]);
    }
  }
#pragma GCC unroll 16
  for (int i = 0; i < R; i++)
#pragma GCC unroll 4
    for (int v = 0; v < V; v++) {
      T *ci = c + i * ldc + v * VL;
      VSTOREU(ci, load ? VADD(VLOADU(ci), acc[i][v]) : acc[i][v]);
    }
}

/* Rows [0, RO) of a against 9 rows of b, lane vectors [s0, s0 + NP) of
   the logical one (DL / VL vectors each), lane sums added to out. */
__attribute__((always_inline)) TGT static inline void
KN(dot_part_)(int RO, int s0, int NP, int64_t nv, const T *a, int64_t lda,
              const T *b, const int64_t *boff, T *out, int64_t ldo)
{
  enum { NS = 64 / sizeof(T) / VL };
  VT acc[2][CONV_DK][NS];
#pragma GCC unroll 2
  for (int i = 0; i < RO; i++)
#pragma GCC unroll 9
    for (int j = 0; j < CONV_DK; j++)
#pragma GCC unroll 16
      for (int s = s0; s < s0 + NP; s++)
        acc[i][j][s] = VZERO();
  for (int64_t t = 0; t < nv * DL; t += DL)
#pragma GCC unroll 16
    for (int s = s0; s < s0 + NP; s++) {
      VT av[2];
#pragma GCC unroll 2
      for (int i = 0; i < RO; i++)
        av[i] = VLOADU(a + i * lda + t + s * VL);
#pragma GCC unroll 9
      for (int j = 0; j < CONV_DK; j++) {
        VT bv = VLOADU(b + boff[j] + t + s * VL);
#pragma GCC unroll 2
        for (int i = 0; i < RO; i++)
          acc[i][j][s] = VFMA(av[i], bv, acc[i][j][s]);
      }
    }
#pragma GCC unroll 2
  for (int i = 0; i < RO; i++)
#pragma GCC unroll 9
    for (int j = 0; j < CONV_DK; j++)
#pragma GCC unroll 16
      for (int s = s0; s < s0 + NP; s++) {
        T *o = out + i * ldo + j * DL + s * VL;
        VSTOREU(o, VADD(VLOADU(o), acc[i][j][s]));
      }
}

/* RO rows of a against 9 rows of b.  Each accumulator is one lane
   chain in increasing t, so the passes below change no bits: all at
   once where RO x 9 x NS accumulators fit KACC (AVX-512), else one pass
   per lane vector (NEON, portable C), else one per row and lane vector
   (AVX2: 2 x 9 x 2 would spill most of them). */
__attribute__((always_inline)) TGT static inline void
KN(dot_r_)(int RO, int64_t nv, const T *a, int64_t lda, const T *b,
           const int64_t *boff, T *out, int64_t ldo)
{
  enum { NS = 64 / sizeof(T) / VL };
  if (RO * CONV_DK * NS <= KACC) {
    KN(dot_part_)(RO, 0, NS, nv, a, lda, b, boff, out, ldo);
    return;
  }
#pragma GCC unroll 16
  for (int s = 0; s < NS; s++) {
    if (RO * CONV_DK <= KACC) {
      KN(dot_part_)(RO, s, 1, nv, a, lda, b, boff, out, ldo);
      continue;
    }
#pragma GCC unroll 2
    for (int i = 0; i < RO; i++)
      KN(dot_part_)(1, s, 1, nv, a + i * lda, lda, b, boff, out + i * ldo,
                    ldo);
  }
}

#define KDEF(R, V)                                                        \
  TGT static void KN(kern_##R##_##V##_)(int64_t kc, const T *a,           \
                                        int64_t lda, const T *b,          \
                                        const int64_t *boff, T *c,        \
                                        int64_t ldc, int load)            \
  {                                                                       \
    KN(kern_rv_)(R, V, kc, a, lda, b, boff, c, ldc, load);                \
  }
KDEF(1, 1) KDEF(1, 2) KDEF(1, 3) KDEF(1, 4)
KDEF(2, 1) KDEF(2, 2) KDEF(2, 3) KDEF(2, 4)
KDEF(4, 1) KDEF(4, 2) KDEF(4, 3) KDEF(4, 4)
KDEF(8, 1) KDEF(8, 2) KDEF(8, 3)
KDEF(14, 1) KDEF(14, 2)
#undef KDEF

TGT static void KN(dot1_)(int64_t nv, const T *a, int64_t lda, const T *b,
                          const int64_t *boff, T *out, int64_t ldo)
{
  KN(dot_r_)(1, nv, a, lda, b, boff, out, ldo);
}

TGT static void KN(dot2_)(int64_t nv, const T *a, int64_t lda, const T *b,
                          const int64_t *boff, T *out, int64_t ldo)
{
  KN(dot_r_)(2, nv, a, lda, b, boff, out, ldo);
}

#define CONV_TABLE(tname, isa_name, trans_fn)                             \
  const KCAT(ConvIsa, SFX) tname = {                                      \
    .name = isa_name,                                                     \
    .lanes = VL,                                                          \
    .kern = {{KN(kern_1_1_), KN(kern_1_2_), KN(kern_1_3_), KN(kern_1_4_)},\
             {KN(kern_2_1_), KN(kern_2_2_), KN(kern_2_3_), KN(kern_2_4_)},\
             {KN(kern_4_1_), KN(kern_4_2_), KN(kern_4_3_), KN(kern_4_4_)},\
             {KN(kern_8_1_), KN(kern_8_2_), KN(kern_8_3_), NULL},         \
             {KN(kern_14_1_), KN(kern_14_2_), NULL, NULL}},               \
    .vmax = KVMAX,                                                        \
    .acc_max = KACC,                                                      \
    .dot = {KN(dot1_), KN(dot2_)},                                        \
    .trans = trans_fn}
