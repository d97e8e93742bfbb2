/* conv_internal.h -- shared by the convolution files (conv.c,
 * conv_tmpl.h, conv_plan.c, conv_kern.h, conv_avx512.c, conv_scalar.c):
 * the plan of one call and the micro-kernel contracts.
 *
 * Lowering (measurements: docs/performance.md, "Convolution kernels").
 * Every op runs on "planes": zero-padded copies of the source channels
 * of one tile of output rows, in extended coordinates t = u*We + v (u a
 * row of the tile, v < We = output width + the taps' reach; columns v
 * >= the output width are garbage, computed and dropped).  In a plane,
 * every tap (r, q) is a constant offset, so row k = (channel, tap) of
 * the im2col matrix is the plane itself read at offset boff[k]: nothing
 * is im2col-packed, and the B operand of the micro-kernel is read in
 * place.  Strided convolutions split the source into stride phases
 * (plane (a, b) holds rows a, a+s, ... and columns b, b+s, ...), so
 * this holds for any stride and dilation.
 *   IGEMM (forward, backward input): C[m][t] = sum_k A[m][k] B[k][t],
 *     A the weights packed once per call into R-row panels, B[k] =
 *     plane + boff[k]; one item = (image, group, output phase, tile of
 *     rows); C goes to a tile buffer, then to the output rows.  Backward
 *     input is the transposed convolution written per output phase (dx
 *     rows h = u*sh + a - ph): a stride-1 correlation of zero-padded dy
 *     with the taps of that phase (no zeros are inserted).
 *   GEMM11 (1x1, stride 1, unpadded, forward / backward input): one
 *     batched rlx_gemm per group, no copies.
 *   WGEMM (backward weight, >= 8 channels per group): dW^T[(ci, tap)][o]
 *     = sum_t planeT[t + tap][ci] * dyT[t][o] on channel-last copies of
 *     a tile's planes and of its dy (one transpose per element, not per
 *     tap; 8-channel A panels read in place).  With unit strides and
 *     dilations the kw taps of a tap row are kw * cgp consecutive
 *     planeT elements, so (`byrow`) the partial is dW[o][r][q][ci]
 *     instead, dyT the broadcast operand and a tap row's kw * cgp
 *     columns the vector one (AVX2: 4 x 3 tiles of 12 accumulators for
 *     the 8 of 4 x 2); per element the same products in the same order.
 *   WDOT (backward weight, < 8 channels per group, depthwise): lane
 *     sums of dy rows times plane rows, vectorized along t; the lanes
 *     are added once, at the end.
 *   Backward weight sums over images: the (image, tile) units are cut
 *   into `nch` chunks fixed by the shapes, each summed into its own
 *   partial dW (row blocks `nkb` split it further); the partials are
 *   then added in chunk order.
 * Work split: rlx_parallel_for over a fixed number of slots (<= 16,
 * each with its own scratch area), each slot claiming items from a
 * shared counter until none is left (so a slow item, e.g. an image with
 * subnormal gradients, does not hold up the items behind it in a fixed
 * range).  Each output element is computed by one
 * item in an order fixed by the shapes, so results never depend on the
 * thread count; all kernels of a dtype do the same operations per
 * element, so they do not depend on the ISA either.
 *
 * The plan depends only on the geometry, op and element size (never on
 * the CPU): the compiler links conv_plan.c to reserve the scratch.
 */
#ifndef RLX_CONV_INTERNAL_H
#define RLX_CONV_INTERNAL_H

#include <stdint.h>

#include "runtime/rlxrt.h"

enum { CONV_IGEMM = 0, CONV_WGEMM = 1, CONV_WDOT = 2, CONV_GEMM11 = 3 };

/* Bounds the kernels of every ISA respect (the plan sizes with them):
   rows of a register tile (R <= 14 pads M by at most 13), column
   padding of a tile (< one vector of <= 16 elements: the last column
   panel of a tile has only the vectors it needs), WGEMM channel block
   (8), WDOT taps per block (9), logical vector of WDOT sums (64 bytes);
   at most CONV_SLOTS slots. */
enum { CONV_RPAD = 15, CONV_PW = 16, CONV_WR = 8, CONV_DK = 9 };
enum { CONV_SLOTS = 16 };

typedef struct {
  int op, path;
  int64_t es;          /* element size in bytes */
  int64_t G, M, SC;    /* groups, rows of C per group, source channels */
  int64_t khkw, K;     /* taps; K = SC * khkw (igemm, wdot) */
  int64_t np;          /* planes per source channel */
  int64_t nphase;      /* output phases (backward input: sh * sw) */
  int64_t rho, kap;    /* largest tap row / column offset in a plane */
  int64_t We;          /* plane width (largest over phases) */
  int64_t U;           /* output rows per phase (largest) */
  int64_t rt, tiles;   /* rows per tile, tiles per phase */
  int64_t pstride;     /* elements per plane */
  int64_t kc;          /* K block of the igemm kernels */
  int64_t cgp, ogp;    /* wgemm: channels padded to 8 / to 16 */
  int direct;          /* wgemm, 1x1 stride 1 unpadded: tiles are
                          contiguous in x and dy, no planes, no stage */
  int64_t nch, nkb;    /* backward weight: chunks, row blocks */
  int64_t units;       /* backward weight: images * tiles */
  int64_t prow, pcol;  /* backward weight: partial rows, columns */
  int byrow;           /* wgemm: partial rows o, columns (r, q, ci) */
  int64_t items, slots;
  /* scratch layout, bytes from the (64-byte aligned) scratch start */
  int64_t shared_off, shared_bytes; /* packed A, or the partials */
  int64_t slot_off, slot_bytes;     /* slots * slot_bytes follow */
  int64_t total;
} ConvPlan;

void rlx_conv_plan(const rlx_conv_geom *g, int op, int64_t elem_size,
                   ConvPlan *p);

/* Micro-kernels (one table per ISA and dtype; conv_kern.h).
   kern, an R x W tile, W = V * lanes (all present, nothing masked):
     s(i,j) = sum_{p<kc} a[p*lda + i] * b[boff[p] + j]
     c[i*ldc + j] = load ? c[i*ldc + j] + s(i,j) : s(i,j)
   with s one fused multiply-add chain from zero in increasing p, so an
   element's bits depend only on its inputs and kc (never on R, V, the
   tile or the ISA).
   dot, RO x 9 lane vectors (VL = 64/sizeof(T) lanes each):
     out[i*ldo + j*VL + l] += sum_{t < nv*VL, t = l mod VL}
                              a[i*lda + t] * b[boff[j] + t]
   one FMA chain per lane in increasing t, whatever the ISA (the caller
   adds the lanes, pairwise (l, l + VL/2), ..., at the very end).
   trans: dst[p*ld + i] = i < rows ? src[i*ss + p] : 0, i < width,
   p < len; src should be in cache: AVX-512 masked loads that miss
   it are several times slower than plain ones (measured on Zen 5), so
   callers stage cold data with memcpy first. */
#define CONV_DECL_KERNELS(T, SFX)                                         \
  typedef void (*ConvKern##SFX)(int64_t kc, const T *a, int64_t lda,     \
                                const T *b, const int64_t *boff, T *c,    \
                                int64_t ldc, int load);                   \
  typedef void (*ConvDot##SFX)(int64_t nv, const T *a, int64_t lda,      \
                               const T *b, const int64_t *boff, T *out,   \
                               int64_t ldo);                              \
  typedef void (*ConvTrans##SFX)(const T *src, int64_t ss, int64_t rows,  \
                                 int64_t len, T *dst, int64_t ld,         \
                                 int64_t width);                          \
  typedef struct {                                                        \
    const char *name;                                                     \
    int lanes;                         /* elements per vector */          \
    ConvKern##SFX kern[5][4];          /* [R = 1,2,4,8,14][V - 1] */      \
    int vmax[5];                       /* widest V used per R (registers) */\
    int acc_max;                       /* accumulators without spills */ \
    ConvDot##SFX dot[2];               /* RO = 1, 2 */                    \
    ConvTrans##SFX trans;                                                 \
  } ConvIsa##SFX;
CONV_DECL_KERNELS(float, F32)
CONV_DECL_KERNELS(double, F64)

/* Defines NAME, a trans (above) for T elements through B x B register
   blocks (TRANSPOSE on B rows of type VT, LOADU / STOREU of B lanes),
   element by element at the edges; the SIMD tables' files use it with
   their TGT defined. */
#define CONV_DEFINE_TRANS(NAME, T, B, VT, LOADU, STOREU, TRANSPOSE)        \
  TGT static void NAME(const T *src, int64_t ss, int64_t rows, int64_t len,\
                   T *dst, int64_t ld, int64_t width)                      \
  {                                                                        \
    for (int64_t i0 = 0; i0 < width; i0 += B)                              \
      for (int64_t p0 = 0; p0 < len; p0 += B) {                            \
        int64_t i1 = i0 + B < width ? i0 + B : width;                      \
        int64_t p1 = p0 + B < len ? p0 + B : len;                          \
        if (i0 + B > rows || i1 - i0 < B || p1 - p0 < B) {                 \
          for (int64_t p = p0; p < p1; p++)                                \
            for (int64_t i = i0; i < i1; i++)                              \
              dst[p * ld + i] = i < rows ? src[i * ss + p] : (T)0;         \
          continue;                                                        \
        }                                                                  \
        VT r[B];                                                           \
        for (int i = 0; i < B; i++)                                        \
          r[i] = LOADU(src + (i0 + i) * ss + p0);                          \
        TRANSPOSE(r);                                                      \
        for (int j = 0; j < B; j++)                                        \
          STOREU(dst + (p0 + j) * ld + i0, r[j]);                          \
      }                                                                    \
  }

/* Rows of each kern[] entry. */
static const int conv_rows[5] = {1, 2, 4, 8, 14};

extern const ConvIsaF32 rlx_conv_avx512_f32, rlx_conv_avx2_f32,
    rlx_conv_neon_f32, rlx_conv_scalar_f32;
extern const ConvIsaF64 rlx_conv_avx512_f64, rlx_conv_avx2_f64,
    rlx_conv_neon_f64,
    rlx_conv_scalar_f64;

#endif
