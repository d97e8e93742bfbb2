/* topk.c -- rlx_topk_<dt> for f32 f64 i8 u8 i32 i64 f16 bf16: per-row
 * indices of the k largest elements, descending, ties to the smaller
 * index, NaN largest (float dtypes).
 *
 * Comparisons go through KEY(x) and ISNAN(x) per dtype: the value itself
 * for f32/f64/integers; for f16/bf16 (uint16_t bit patterns) an integer
 * key that orders exactly like the value converted to f32 (sign-magnitude
 * to two's complement; -0 and +0 map to the same key), with NaN detected
 * from the exponent/mantissa bits.
 *
 * Each row keeps a k-element heap in its own out_idx row (the worst
 * candidate at the root; no allocation), scanned in index order so an
 * equal later element never displaces an earlier one, then heap-sorted
 * into descending order: O(n log k) per row.  Parallel over rows.
 */
#include "runtime/rlxrt.h"

/* Order key of a half-precision bit pattern h whose magnitude bits are
 * below the NaN range: -(magnitude) for a set sign bit, else magnitude;
 * monotone in the value for f16 and bf16 alike (both are sign-magnitude
 * with the exponent above the mantissa). */
static int32_t half_key(uint16_t h)
{
  int32_t m = h & 0x7fff;
  return (h & 0x8000) ? -m : m;
}

#define ISNAN_f32(v) ((v) != (v))
#define ISNAN_f64(v) ((v) != (v))
#define ISNAN_i8(v) 0
#define ISNAN_u8(v) 0
#define ISNAN_i32(v) 0
#define ISNAN_i64(v) 0
#define ISNAN_f16(v) (((v) & 0x7fff) > 0x7c00)
#define ISNAN_bf16(v) (((v) & 0x7fff) > 0x7f80)
#define KEY_f32(v) (v)
#define KEY_f64(v) (v)
#define KEY_i8(v) (v)
#define KEY_u8(v) (v)
#define KEY_i32(v) (v)
#define KEY_i64(v) (v)
#define KEY_f16(v) half_key(v)
#define KEY_bf16(v) half_key(v)

#define TOPK_IMPL(SFX, T)                                                 \
  /* Whether element i ranks before element j. */                         \
  static int better_##SFX(const T *x, int64_t i, int64_t j)               \
  {                                                                       \
    int ni = ISNAN_##SFX(x[i]), nj = ISNAN_##SFX(x[j]);                   \
    if (ni || nj)                                                         \
      return ni && nj ? i < j : ni;                                       \
    if (KEY_##SFX(x[i]) != KEY_##SFX(x[j]))                               \
      return KEY_##SFX(x[i]) > KEY_##SFX(x[j]);                           \
    return i < j;                                                         \
  }                                                                       \
                                                                          \
  /* Restore the heap (root = worst) below slot s of h[0, len). */        \
  static void sift_##SFX(const T *x, int64_t *h, int64_t len, int64_t s)  \
  {                                                                       \
    for (;;) {                                                            \
      int64_t l = 2 * s + 1, r = l + 1, w = s;                            \
      if (l < len && better_##SFX(x, h[w], h[l]))                         \
        w = l;                                                            \
      if (r < len && better_##SFX(x, h[w], h[r]))                         \
        w = r;                                                            \
      if (w == s)                                                         \
        return;                                                           \
      int64_t t = h[s];                                                   \
      h[s] = h[w];                                                        \
      h[w] = t;                                                           \
      s = w;                                                              \
    }                                                                     \
  }                                                                       \
                                                                          \
  static void row_##SFX(const T *x, int64_t n, int64_t k, int64_t *h)     \
  {                                                                       \
    if (k == 0)                                                           \
      return;                                                             \
    for (int64_t i = 0; i < k; i++)                                       \
      h[i] = i;                                                           \
    for (int64_t s = k / 2; s-- > 0;)                                     \
      sift_##SFX(x, h, k, s);                                             \
    for (int64_t i = k; i < n; i++)                                       \
      if (better_##SFX(x, i, h[0])) {                                     \
        h[0] = i;                                                         \
        sift_##SFX(x, h, k, 0);                                           \
      }                                                                   \
    for (int64_t len = k; len > 1; len--) {                               \
      int64_t t = h[0];                                                   \
      h[0] = h[len - 1];                                                  \
      h[len - 1] = t;                                                     \
      sift_##SFX(x, h, len - 1, 0);                                       \
    }                                                                     \
  }                                                                       \
                                                                          \
  typedef struct {                                                        \
    const T *x;                                                           \
    int64_t n, k;                                                         \
    int64_t *out;                                                         \
  } TopkJob_##SFX;                                                        \
                                                                          \
  static void task_##SFX(void *ctx, int64_t begin, int64_t end)           \
  {                                                                       \
    const TopkJob_##SFX *jb = ctx;                                        \
    for (int64_t r = begin; r < end; r++)                                 \
      row_##SFX(jb->x + r * jb->n, jb->n, jb->k, jb->out + r * jb->k);    \
  }                                                                       \
                                                                          \
  int rlx_topk_##SFX(const T *x, int64_t rows, int64_t n, int64_t k,      \
                     int64_t *out_idx)                                    \
  {                                                                       \
    if (rows < 0 || n < 0 || k < 0 || k > n)                              \
      return RLX_ERR_INVALID;                                             \
    TopkJob_##SFX jb = {x, n, k, out_idx};                                \
    int64_t grain = n >= 4096 ? 1 : 4096 / (n + 1) + 1;                   \
    rlx_parallel_for(rows, grain, task_##SFX, &jb);                       \
    return RLX_OK;                                                        \
  }

TOPK_IMPL(f32, float)
TOPK_IMPL(f64, double)
TOPK_IMPL(i8, int8_t)
TOPK_IMPL(u8, uint8_t)
TOPK_IMPL(i32, int32_t)
TOPK_IMPL(i64, int64_t)
TOPK_IMPL(f16, uint16_t)
TOPK_IMPL(bf16, uint16_t)
