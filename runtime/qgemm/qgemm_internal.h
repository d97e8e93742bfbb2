/* qgemm_internal.h -- the int8 GEMM behind q_matmul and q_conv2d
 * (rlxrt.h, rlx_q_*): packed layouts, the tile-kernel contract and the
 * requantization shared by every kernel.
 *
 * C(i,j) = requant(bias + sum_p (A(i,p) - az) * (B(p,j) - bz)) with A
 * [m, k] and B [k, n] i8, row-major.  The int8 dot-product instruction
 * (vpdpbusd) multiplies unsigned by signed bytes, so A is packed as
 * u8 a + 128 and the sum regrouped exactly (modulo 2^32):
 *   sum (a - az)(b - bz) = sum (a + 128) b - (128 + az) colsum_B(j)
 *                          - bz rowsum_A(i) + k az bz
 * rowt(i) holds the terms of row i, colt(j) those of column j (the
 * bias goes to one of them).  Packed panels, K padded to KQ = ceil(k/4)
 * groups of 4 with zeros (a padded product is 0 * 0):
 *   ap[q*QMR*4 + 4i + t] = A(i0+i, 4q+t) + 128   (0 outside A)
 *   bp[q*QNR*4 + 4j + t] = B(4q+t, j0+j)         (0 outside B)
 * A tile kernel computes s(i,j) = sum_q sum_t ap * bp (i32, wrapping)
 * and writes c[i*ldc + j] = rlx_requant(s + rowt[i] + colt[j], mc[j])
 * for i < mr, j < nr (mc: the column's multiplier, QNR of them).  A
 * kernel whose dot product is signed x signed (NEON's sdot) multiplies
 * ap - 128 = a instead: its RlxQIsa.a_off is 0, and colt subtracts
 * az colsum_B(j) only.  The row and column sums come from the packed
 * panels too (RlxQIsa).  Integer sums are exact in any order, and every
 * kernel rounds alike, so every path and thread count gives the same
 * bits.
 */
#ifndef RLX_QGEMM_INTERNAL_H
#define RLX_QGEMM_INTERNAL_H

#include <math.h>
#include <stdint.h>

#include "runtime/rlxrt.h"
#include "runtime/simd/isa.h"

enum { QMR = 8, QNR = 32 };

typedef void (*RlxQKern)(int64_t kq, const uint8_t *ap, const int8_t *bp,
                         const int32_t *rowt, const int32_t *colt,
                         const double *mc, int32_t out_zp, int8_t *c,
                         int64_t ldc, int mr, int nr);

/* One instruction set's kernels.  level: the RLX_ISA_* level
   (runtime/simd/isa.h) whose dispatch may pick it; a_off: the offset on
   A in the kernel's products (above); cpu: whether this CPU runs it
   (NULL: whenever compiled).  kern == NULL where the kernel was not
   compiled in (another architecture, RLX_NO_SIMD).  sums_a / sums_b:
   the lane sums of a packed A tile (QMR lanes of u8) and B panel (QNR
   lanes of s8), out[l] = sum over q < kq, t < 4 of
   panel[q*lanes*4 + 4l + t]; NULL: the C loops. */
typedef struct {
  const char *name;
  int level, a_off;
  int (*cpu)(void);
  RlxQKern kern;
  void (*sums_a)(const uint8_t *ap, int64_t kq, int32_t *out);
  void (*sums_b)(const int8_t *bp, int64_t kq, int32_t *out);
  /* Optional (NULL: C loops; used only where the CPU has AVX-512 VBMI):
     a whole B panel, columns j < nn (1..QNR) of b (row stride ldb),
     rows p < k, packed as above with zeros elsewhere. */
  void (*pack_b)(const int8_t *b, int64_t ldb, int64_t k, int nn,
                 int64_t kq, int8_t *bp);
} RlxQIsa;

/* qgemm_vnni.c (AVX-512 VNNI; pack_b needs AVX-512 VBMI as well),
   qgemm_avx2.c (AVX-VNNI, AVX2), qgemm_neon.c (dot product, plain). */
extern const RlxQIsa rlx_qisa_avx512vnni, rlx_qisa_avxvnni, rlx_qisa_avx2,
    rlx_qisa_neondot, rlx_qisa_neon;

/* Whether a q_conv2d reads x in place as its GEMM's B (1x1, stride 1,
   no padding): then its workspace has no im2col part (qgemm_plan.c). */
int rlx_q_conv2d_direct(const rlx_conv_geom *g);

/* sat8(round_half_even(acc * mult) + out_zp), the product in double
   (acc is the i32 accumulator's bits). */
static inline int8_t rlx_requant(uint32_t acc, double mult, int32_t zp)
{
  double r = rint((double)(int32_t)acc * mult) + zp;
  return (int8_t)(r < -128 ? -128 : r > 127 ? 127 : r);
}

/* The epilogue of a tile kernel whose sums s are in a buffer. */
static inline void rlx_q_store_tile(uint32_t s[][QNR],
                                    const int32_t *rowt,
                                    const int32_t *colt, const double *mc,
                                    int32_t ozp, int8_t *c, int64_t ldc,
                                    int mr, int nr)
{
  for (int i = 0; i < mr; i++)
    for (int j = 0; j < nr; j++)
      c[i * ldc + j] = rlx_requant(
          s[i][j] + (uint32_t)rowt[i] + (uint32_t)colt[j], mc[j], ozp);
}

#endif
