/* gemm_internal.h -- micro-kernel interface shared by the GEMM files.
 *
 * A micro-kernel computes one MR x NR tile of C from packed panels:
 *   s(i,j) = sum_{p<kc} ap[p*lda + i] * bp[p*ldb + j]
 *   C(i,j) = load ? C(i,j) + s(i,j) : s(i,j)
 * for i < MR, j < NR, with C(i,j) at c[i*ldc + j].  The sum is one
 * fused multiply-add per p, in increasing p order, in one accumulator
 * starting from zero; C is added once at the end.  So an element's
 * value depends only on its inputs, kc, `load` and the old C -- never on
 * the tile's position, the thread or the ISA.  lda = MR for a packed,
 * zero-padded A panel, or A's column stride when a transposed A is read
 * in place (small-N calls; all MR rows present).  Likewise ldb = NR for
 * a packed, zero-padded B panel, or B's row stride when small-M calls
 * read B in place (all NR columns present).  Loads are unaligned-safe.
 *
 * Kernel tables (RlxGemmCfg*) are immutable; gemm.c picks one per dtype
 * at run time from the CPU features.  The ISA-specific files compile to
 * a table with kern == NULL where their ISA is not compiled in.
 */
#ifndef RLX_GEMM_INTERNAL_H
#define RLX_GEMM_INTERNAL_H

#include <stddef.h>
#include <stdint.h>

typedef void (*RlxKernF32)(int64_t kc, const float *ap, const float *bp,
                           int64_t lda, int64_t ldb, float *c, int64_t ldc,
                           int load);
typedef void (*RlxKernF64)(int64_t kc, const double *ap, const double *bp,
                           int64_t lda, int64_t ldb, double *c,
                           int64_t ldc, int load);

/* Optional ISA-specific packing (NULL: the generic C loops).
   pack_a: an MR-row panel of A with unit column stride, of which the
     first `count` (1..MR) rows are present:
     ap[p*MR + i] = i < count ? a[i*rs + p] : 0 for i < MR, p < kc.
   pack_b: npanels full NR-column panels of B with unit column stride:
     bp[jr*kc + p*NR + j] = b[p*rs + jr + j], jr = 0, NR, ...
   pack_bt: the same from B stored transposed (unit row stride), with
     `rs` the column stride: bp[jr*kc + p*NR + j] = b[(jr + j)*rs + p].
   pack_at: `count` rows (1 <= count <= RLX_PACK_AT_PANELS * MR) of A
     stored transposed (unit row stride), with `rs` the column stride,
     as consecutive MR-row panels, the last zero-padded:
     ap[i0*kc + p*MR + i] = i0 + i < count ? a[p*rs + i0 + i] : 0 for
     i0 = 0, MR, ..., i < MR, p < kc. */
typedef void (*RlxPackF32)(const float *src, int64_t rs, int64_t kc,
                           int64_t count, float *dst);
typedef void (*RlxPackF64)(const double *src, int64_t rs, int64_t kc,
                           int64_t count, double *dst);

/* Optional edge kernel (NULL: the full kernel on a buffer): the tile
   contract above restricted to i < mr, j < nr (1 <= mr <= MR,
   1 <= nr <= NR), touching no other C element; it must perform, per
   element, the same operations as the full kernel. */
typedef void (*RlxEdgeF32)(int64_t kc, const float *ap, const float *bp,
                           int64_t lda, int64_t ldb, float *c, int64_t ldc,
                           int load, int mr, int nr);
typedef void (*RlxEdgeF64)(int64_t kc, const double *ap,
                           const double *bp, int64_t lda, int64_t ldb,
                           double *c, int64_t ldc, int load, int mr,
                           int nr);

/* Panels that one pack_at call fills. */
enum { RLX_PACK_AT_PANELS = 8 };

/* Largest MR and NR of any kernel: sizes the edge-tile buffer. */
enum { RLX_MR_MAX = 16, RLX_NR_MAX = 32 };

/* Rows of A packed at a time (the packed A block lives in L3). */
enum { RLX_GEMM_MC = 1008 };

/* Row blocks of at most this many MR tiles read B in place (unpacked);
   regions of at most RLX_DIRECT_A_COLS NR tiles read A^T in place. */
enum { RLX_DIRECT_B_ROWS = 2, RLX_DIRECT_A_COLS = 2 };

/* One ISA's kernels and cache blocking (in elements).  kc: depth of a
   packed block; nc: columns of the packed B block (kc x nc stays in
   L2); mr / nr: the register tile. */
typedef struct RlxGemmCfgF32 RlxGemmCfgF32;
struct RlxGemmCfgF32 {
  const char *name;
  int mr, nr, kc, nc;
  RlxKernF32 kern;
  RlxPackF32 pack_a; /* count = rows present */
  RlxPackF32 pack_b; /* count = npanels */
  RlxPackF32 pack_bt; /* count = npanels */
  RlxPackF32 pack_at; /* count = rows, several panels */
  RlxEdgeF32 edge;
  /* Optional (both or neither): kern and edge reading A in place by
     rows (unit column stride): A(i, p) at ap[i*lda + p]; otherwise the
     same contract.  Only where the MR row streams stay in L1 at any
     stride (AVX2's 6 rows; the 14 rows of AVX-512 lost up to 25% at
     2048^3 when their stride mapped them to one L1 set). */
  RlxKernF32 kern_ra;
  RlxEdgeF32 edge_ra;
  /* Optional table of the same ISA and KC with another MR, used for
     calls whose M it pads less (see gemm.c); NULL: none. */
  const RlxGemmCfgF32 *alt;
};

typedef struct {
  const char *name;
  int mr, nr, kc, nc;
  RlxKernF64 kern;
  RlxPackF64 pack_a, pack_b, pack_bt, pack_at;
  RlxEdgeF64 edge;
  RlxKernF64 kern_ra;
  RlxEdgeF64 edge_ra;
} RlxGemmCfgF64;

/* Per-ISA tables; `kern` is NULL where the ISA was not compiled in. */
extern const RlxGemmCfgF32 rlx_gemm_avx512_f32, rlx_gemm_avx512_f32_12,
    rlx_gemm_avx2_f32, rlx_gemm_neon_f32, rlx_gemm_scalar_f32;
extern const RlxGemmCfgF64 rlx_gemm_avx512_f64, rlx_gemm_avx2_f64,
    rlx_gemm_neon_f64, rlx_gemm_scalar_f64;

/* Per-thread scratch of at least `bytes` bytes, 64-byte aligned, owned
   by the calling thread and reused across calls (freed at thread exit).
   NULL on allocation failure.  At most one user per thread at a time. */
void *rlx_thread_scratch(size_t bytes);

#endif
