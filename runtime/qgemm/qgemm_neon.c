/* qgemm_neon.c -- the int8 tile kernels of AArch64 (qgemm_internal.h):
 * sdot (the dot-product extension, FEAT_DotProd; rlx_cpu_has_neon_dot)
 * and a plain Advanced SIMD fallback.
 *
 * Both multiply signed bytes: the packed u8 a + 128 is flipped back to a
 * (eor 0x80), so their a_off is 0.  sdot by element adds, per i32 lane,
 * the 4-byte dot product of one column of a B vector (4 columns x 4 k)
 * with row l's 4 bytes of an A vector (4 rows x 4 k); the tile runs as
 * 4 sub-tiles of 8 rows x 8 columns (16 accumulators).  The fallback
 * multiplies a B vector by row i's 4 bytes repeated: smull / smull2 give
 * exact i16 products (|a b| <= 2^14), sadalp adds their pairs into i32
 * lanes holding each column's two pair sums (smlal into i16 could
 * overflow: 2 * -128 * -128 = 2^15), and addp joins the pairs at the
 * end; 8 sub-tiles of 4 rows x 8 columns (16 accumulators).  The sums
 * go to a buffer that rlx_q_store_tile requantizes.
 */
#include "runtime/qgemm/qgemm_internal.h"

#if RLX_HAVE_NEON
#include <arm_neon.h>

#define TGT_DOT __attribute__((target("arch=armv8.2-a+dotprod")))

/* 16 packed bytes of A (4 rows x 4 k) as signed a. */
static inline int8x16_t load_a(const uint8_t *a)
{
  return vreinterpretq_s8_u8(veorq_u8(vld1q_u8(a), vdupq_n_u8(0x80)));
}

TGT_DOT static void kern_dot(int64_t kq, const uint8_t *ap, const int8_t *bp,
                             const int32_t *rowt, const int32_t *colt,
                             const double *mc, int32_t ozp, int8_t *c,
                             int64_t ldc, int mr, int nr)
{
  uint32_t s[QMR][QNR];
  for (int c0 = 0; c0 < nr; c0 += 8) {
    int32x4_t acc[QMR][2];
    for (int i = 0; i < QMR; i++)
      acc[i][0] = acc[i][1] = vdupq_n_s32(0);
    const uint8_t *a = ap;
    const int8_t *b = bp + 4 * c0;
    for (int64_t q = 0; q < kq; q++, a += QMR * 4, b += QNR * 4) {
      int8x16_t a0 = load_a(a), a1 = load_a(a + 16);
      int8x16_t b0 = vld1q_s8(b), b1 = vld1q_s8(b + 16);
#define DOT(i, av, l)                                                     \
  acc[i][0] = vdotq_laneq_s32(acc[i][0], b0, av, l);                      \
  acc[i][1] = vdotq_laneq_s32(acc[i][1], b1, av, l);
      DOT(0, a0, 0) DOT(1, a0, 1) DOT(2, a0, 2) DOT(3, a0, 3)
      DOT(4, a1, 0) DOT(5, a1, 1) DOT(6, a1, 2) DOT(7, a1, 3)
#undef DOT
    }
    for (int i = 0; i < QMR; i++) {
      vst1q_u32(s[i] + c0, vreinterpretq_u32_s32(acc[i][0]));
      vst1q_u32(s[i] + c0 + 4, vreinterpretq_u32_s32(acc[i][1]));
    }
  }
  rlx_q_store_tile(s, rowt, colt, mc, ozp, c, ldc, mr, nr);
}

static void kern_neon(int64_t kq, const uint8_t *ap, const int8_t *bp,
                      const int32_t *rowt, const int32_t *colt,
                      const double *mc, int32_t ozp, int8_t *c, int64_t ldc,
                      int mr, int nr)
{
  uint32_t s[QMR][QNR];
  for (int r0 = 0; r0 < mr; r0 += 4)
    for (int c0 = 0; c0 < nr; c0 += 8) {
      /* acc[i][v]: row i's pair sums of columns c0 + 2v, c0 + 2v + 1 */
      int32x4_t acc[4][4];
      for (int i = 0; i < 4; i++)
        for (int v = 0; v < 4; v++)
          acc[i][v] = vdupq_n_s32(0);
      const uint8_t *a = ap + 4 * r0;
      const int8_t *b = bp + 4 * c0;
      for (int64_t q = 0; q < kq; q++, a += QMR * 4, b += QNR * 4) {
        int32x4_t av = vreinterpretq_s32_s8(load_a(a));
        int8x16_t b0 = vld1q_s8(b), b1 = vld1q_s8(b + 16);
#define MUL(i)                                                            \
  {                                                                       \
    int8x16_t r = vreinterpretq_s8_s32(vdupq_laneq_s32(av, i));           \
    acc[i][0] = vpadalq_s16(acc[i][0], vmull_s8(vget_low_s8(b0),          \
                                                vget_low_s8(r)));         \
    acc[i][1] = vpadalq_s16(acc[i][1], vmull_high_s8(b0, r));             \
    acc[i][2] = vpadalq_s16(acc[i][2], vmull_s8(vget_low_s8(b1),          \
                                                vget_low_s8(r)));         \
    acc[i][3] = vpadalq_s16(acc[i][3], vmull_high_s8(b1, r));             \
  }
        MUL(0) MUL(1) MUL(2) MUL(3)
#undef MUL
      }
      for (int i = 0; i < 4; i++) {
        int32x4_t lo = vpaddq_s32(acc[i][0], acc[i][1]),
                  hi = vpaddq_s32(acc[i][2], acc[i][3]);
        vst1q_u32(s[r0 + i] + c0, vreinterpretq_u32_s32(lo));
        vst1q_u32(s[r0 + i] + c0 + 4, vreinterpretq_u32_s32(hi));
      }
    }
  rlx_q_store_tile(s, rowt, colt, mc, ozp, c, ldc, mr, nr);
}

const RlxQIsa rlx_qisa_neondot = {.name = "neondot", .level = RLX_ISA_NEON,
                                  .cpu = rlx_cpu_has_neon_dot,
                                  .kern = kern_dot};
const RlxQIsa rlx_qisa_neon = {.name = "neon", .level = RLX_ISA_NEON,
                               .kern = kern_neon};
#else
const RlxQIsa rlx_qisa_neondot = {.name = "neondot", .level = RLX_ISA_NEON};
const RlxQIsa rlx_qisa_neon = {.name = "neon", .level = RLX_ISA_NEON};
#endif
