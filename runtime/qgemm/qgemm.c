/* qgemm.c -- int8 GEMM and convolution for q_matmul / q_conv2d
 * (rlxrt.h, rlx_q_*): packing, the thread split, the portable tile
 * kernel and the entry points.
 *
 * The arithmetic and the packed layouts are in qgemm_internal.h.  The
 * tile kernel follows the GEMM dispatch's level (rlx_isa_level): the
 * widest the CPU has of AVX-512 VNNI (qgemm_vnni.c) at avx512, AVX-VNNI
 * or AVX2 (qgemm_avx2.c) at avx512 or avx2, sdot or plain NEON
 * (qgemm_neon.c) at neon, else the portable one below
 * (rlx_q_select_isa forces one); they give the same bits.  B panels are
 * packed by the VNNI file's VBMI routine where the kernel is AVX-512
 * VNNI and the CPU has AVX-512 VBMI, else by the C (SSE2) loops below.
 * One call packs all of
 * A and B (tasks over A's row tiles and B's column panels), then runs
 * the QMR x QNR tiles, column panel by column panel so that a thread's
 * consecutive tiles share the B panel in L1.  K is not blocked: a B
 * panel is 32*k bytes (16 KiB at k = 512).  q_conv2d lowers each image
 * and group to one GEMM of W_g [C_out/G, C/G*KH*KW] by the im2col
 * matrix of x (padding cells hold x_zp), whose columns are the output
 * pixels, so the result rows land in NCHW order; 1x1 stride-1 unpadded
 * convolutions read x in place.
 */
#include <pthread.h>
#include <stddef.h>
#include <string.h>

#include "runtime/qgemm/qgemm_internal.h"
#include "runtime/rlxrt.h"

#if defined(__SSE2__)
#include <emmintrin.h>
#endif

/* Below about this many multiply-adds, a task is not worth a wake-up. */
#define MIN_TASK_MACS (1 << 17)

typedef struct {
  const RlxQIsa *isa;
  int64_t m, n, k, kq, mt, nt;
  const int8_t *a, *b;
  int64_t lda, ldb;
  const int32_t *bias;
  int bias_rows; /* bias per row of C (else per column) */
  int32_t az, bz, ozp;
  float mult;
  const float *mults; /* per column of C, or NULL */
  int8_t *c;
  int64_t ldc;
  uint8_t *ap;
  int8_t *bp;
  int32_t *rowt, *colt;
  double *mc; /* column multipliers: mult (times mults[j]), padded */
} QJob;

static int64_t up(int64_t v, int64_t a) { return (v + a - 1) / a * a; }

/* ---- portable tile kernel ---- */

static void kern_scalar(int64_t kq, const uint8_t *ap, const int8_t *bp,
                        const int32_t *rowt, const int32_t *colt,
                        const double *mc, int32_t ozp, int8_t *c, int64_t ldc,
                        int mr, int nr)
{
  uint32_t acc[QMR][QNR] = {{0}};
  for (int64_t q = 0; q < kq; q++, ap += QMR * 4, bp += QNR * 4)
    for (int i = 0; i < mr; i++)
      for (int j = 0; j < nr; j++)
        for (int t = 0; t < 4; t++)
          acc[i][j] += (uint32_t)(ap[4 * i + t] * bp[4 * j + t]);
  rlx_q_store_tile(acc, rowt, colt, mc, ozp, c, ldc, mr, nr);
}

/* Column sums of a packed panel: sums of the 4*kq bytes of each of
   `lanes` lanes (rows of an A tile read as u8, columns of a B panel as
   s8); the reference for the ISA versions. */
static void sums_scalar(const void *panel, int64_t kq, int lanes, int sgn,
                        int32_t *out)
{
  const uint8_t *u = panel;
  for (int l = 0; l < lanes; l++) {
    int32_t s = 0;
    for (int64_t q = 0; q < kq; q++)
      for (int t = 0; t < 4; t++) {
        uint8_t v = u[q * lanes * 4 + 4 * l + t];
        s += sgn ? (int8_t)v : v;
      }
    out[l] = s;
  }
}

static void sums_a_scalar(const uint8_t *ap, int64_t kq, int32_t *out)
{
  sums_scalar(ap, kq, QMR, 0, out);
}

static void sums_b_scalar(const int8_t *bp, int64_t kq, int32_t *out)
{
  sums_scalar(bp, kq, QNR, 1, out);
}

static const RlxQIsa qisa_scalar = {.name = "scalar", .level = RLX_ISA_SCALAR,
                                    .a_off = 128, .kern = kern_scalar};

/* Widest first: a level's default is the first kernel it allows. */
static const RlxQIsa *const qisas[] = {
    &rlx_qisa_avx512vnni, &rlx_qisa_avxvnni, &rlx_qisa_avx2,
    &rlx_qisa_neondot,    &rlx_qisa_neon,    &qisa_scalar};
enum { N_QISA = sizeof qisas / sizeof qisas[0] };

static int has_vbmi, runs[N_QISA]; /* set once by detect() */
static int forced = -1;            /* rlx_q_select_isa's kernel, or -1 */
static pthread_once_t detect_once = PTHREAD_ONCE_INIT;

static void detect(void)
{
#if RLX_HAVE_X86_SIMD
  __builtin_cpu_init();
  has_vbmi = __builtin_cpu_supports("avx512vbmi");
#endif
  for (int i = 0; i < N_QISA; i++)
    runs[i] = qisas[i]->kern && (!qisas[i]->cpu || qisas[i]->cpu());
}

/* Whether dispatch level `level` allows kernel i: its own level's
   kernels, the AVX2 ones at avx512 too (a CPU without AVX-512 VNNI),
   and the portable one everywhere. */
static int allowed(int i, int level)
{
  int l = qisas[i]->level;
  return runs[i] && (l == level || l == RLX_ISA_SCALAR ||
                     (l == RLX_ISA_AVX2 && level == RLX_ISA_AVX512));
}

static const RlxQIsa *pick_isa(void)
{
  pthread_once(&detect_once, detect);
  int level = rlx_isa_level(), i = 0;
  if (forced >= 0 && allowed(forced, level))
    return qisas[forced];
  while (!allowed(i, level)) /* the portable kernel ends the list */
    i++;
  return qisas[i];
}

int rlx_q_select_isa(const char *isa)
{
  pthread_once(&detect_once, detect);
  for (int i = 0; i < N_QISA; i++)
    if (!isa || (strcmp(isa, qisas[i]->name) == 0 &&
                 allowed(i, rlx_isa_level()))) {
      forced = isa ? i : -1;
      return RLX_OK;
    }
  return RLX_ERR_INVALID;
}

const char *rlx_q_isa(void)
{
  return pick_isa()->name;
}

/* ---- packing ---- */

/* A's row tile t: u8 bytes a + 128, and rowt = bias - bz * rowsum. */
static void pack_a(const QJob *jb, int64_t t)
{
  int64_t i0 = t * QMR;
  uint8_t *dst = jb->ap + i0 * jb->kq * 4;
  int64_t k = jb->k, kq = jb->kq, lda = jb->lda, q = 0;
  int mr = jb->m - i0 < QMR ? (int)(jb->m - i0) : QMR;
  const int8_t *a = jb->a + i0 * lda;
#if defined(__SSE2__)
  /* full tiles, 4 groups at a time: two 4 x 4 transposes of u32 */
  const __m128i flip = _mm_set1_epi8((char)0x80);
  if (mr == QMR)
    for (; 4 * q + 16 <= k; q += 4)
      for (int h = 0; h < QMR; h += 4) {
        __m128i r[4], t[4];
        for (int i = 0; i < 4; i++)
          r[i] = _mm_xor_si128(
              _mm_loadu_si128((const __m128i *)(a + (h + i) * lda + 4 * q)),
              flip);
        t[0] = _mm_unpacklo_epi32(r[0], r[1]);
        t[1] = _mm_unpacklo_epi32(r[2], r[3]);
        t[2] = _mm_unpackhi_epi32(r[0], r[1]);
        t[3] = _mm_unpackhi_epi32(r[2], r[3]);
        uint8_t *o = dst + q * QMR * 4 + 4 * h;
        _mm_storeu_si128((__m128i *)o, _mm_unpacklo_epi64(t[0], t[1]));
        _mm_storeu_si128((__m128i *)(o + QMR * 4),
                         _mm_unpackhi_epi64(t[0], t[1]));
        _mm_storeu_si128((__m128i *)(o + 2 * QMR * 4),
                         _mm_unpacklo_epi64(t[2], t[3]));
        _mm_storeu_si128((__m128i *)(o + 3 * QMR * 4),
                         _mm_unpackhi_epi64(t[2], t[3]));
      }
#endif
  if (mr == QMR)
    for (; 4 * q + 4 <= k; q++) /* a + 128 = a ^ 0x80 per byte */
      for (int i = 0; i < QMR; i++) {
        uint32_t v;
        memcpy(&v, a + i * lda + 4 * q, 4);
        v ^= 0x80808080u;
        memcpy(dst + q * QMR * 4 + 4 * i, &v, 4);
      }
  if (q < kq) { /* the rest: zeros, then the elements present */
    memset(dst + q * QMR * 4, 0, (size_t)((kq - q) * QMR * 4));
    for (int i = 0; i < mr; i++)
      for (int64_t p = 4 * q; p < k; p++)
        dst[(p >> 2) * QMR * 4 + 4 * i + (p & 3)] =
            (uint8_t)(a[i * lda + p] + 128);
  }
  int32_t sum[QMR] = {0};
  if (jb->bz)
    (jb->isa->sums_a ? jb->isa->sums_a : sums_a_scalar)(dst, jb->kq, sum);
  for (int i = 0; i < mr; i++) /* sum of a = sum of a + 128 - 128 k */
    jb->rowt[i0 + i] = (int32_t)(
        (jb->bias_rows ? (uint32_t)jb->bias[i0 + i] : 0) -
        (uint32_t)jb->bz * ((uint32_t)sum[i] - 128u * (uint32_t)jb->k));
}

/* Rows p..p+3 (all present) of a full 32-column B panel: bytes 4j..4j+3
   of the group are B(p..p+3, j). */
static void interleave4(const int8_t *b, int64_t ldb, int8_t *dst)
{
#if defined(__SSE2__)
  for (int h = 0; h < QNR; h += 16) {
    __m128i r0 = _mm_loadu_si128((const __m128i *)(b + h));
    __m128i r1 = _mm_loadu_si128((const __m128i *)(b + ldb + h));
    __m128i r2 = _mm_loadu_si128((const __m128i *)(b + 2 * ldb + h));
    __m128i r3 = _mm_loadu_si128((const __m128i *)(b + 3 * ldb + h));
    __m128i lo01 = _mm_unpacklo_epi8(r0, r1), hi01 = _mm_unpackhi_epi8(r0, r1);
    __m128i lo23 = _mm_unpacklo_epi8(r2, r3), hi23 = _mm_unpackhi_epi8(r2, r3);
    __m128i *o = (__m128i *)(dst + 4 * h);
    _mm_storeu_si128(o, _mm_unpacklo_epi16(lo01, lo23));
    _mm_storeu_si128(o + 1, _mm_unpackhi_epi16(lo01, lo23));
    _mm_storeu_si128(o + 2, _mm_unpacklo_epi16(hi01, hi23));
    _mm_storeu_si128(o + 3, _mm_unpackhi_epi16(hi01, hi23));
  }
#else
  for (int j = 0; j < QNR; j++)
    for (int t = 0; t < 4; t++)
      dst[4 * j + t] = b[t * ldb + j];
#endif
}

/* The C loops of a B panel (RlxQIsa.pack_b's contract). */
static void pack_b_c(const int8_t *b, int64_t ldb, int64_t k, int64_t nn,
                     int64_t kq, int8_t *dst)
{
  int64_t q = 0;
  if (nn == QNR)
    for (; 4 * q + 4 <= k; q++)
      interleave4(b + 4 * q * ldb, ldb, dst + q * QNR * 4);
  if (q < kq) { /* the rest: zeros, then the elements present */
    memset(dst + q * QNR * 4, 0, (size_t)((kq - q) * QNR * 4));
    for (; 4 * q + 4 <= k; q++)
      for (int64_t j = 0; j < nn; j++)
        for (int t4 = 0; t4 < 4; t4++)
          dst[q * QNR * 4 + 4 * j + t4] = b[(4 * q + t4) * ldb + j];
    for (int64_t p = 4 * q; p < k; p++)
      for (int64_t j = 0; j < nn; j++)
        dst[(p >> 2) * QNR * 4 + 4 * j + (p & 3)] = b[p * ldb + j];
  }
}

/* B's column panel t, and colt = bias - (a_off + az) * colsum + k az bz. */
static void pack_b(const QJob *jb, int64_t t)
{
  int64_t j0 = t * QNR, nn = jb->n - j0 < QNR ? jb->n - j0 : QNR;
  int8_t *dst = jb->bp + j0 * jb->kq * 4;
  if (jb->isa->pack_b && has_vbmi)
    jb->isa->pack_b(jb->b + j0, jb->ldb, jb->k, (int)nn, jb->kq, dst);
  else
    pack_b_c(jb->b + j0, jb->ldb, jb->k, nn, jb->kq, dst);
  int32_t sum[QNR];
  (jb->isa->sums_b ? jb->isa->sums_b : sums_b_scalar)(dst, jb->kq, sum);
  uint32_t kzz = (uint32_t)jb->k * (uint32_t)jb->az * (uint32_t)jb->bz;
  for (int j = 0; j < QNR; j++)
    jb->colt[j0 + j] = (int32_t)(
        (!jb->bias_rows && j < nn ? (uint32_t)jb->bias[j0 + j] : 0) -
        (uint32_t)(jb->isa->a_off + jb->az) * (uint32_t)sum[j] + kzz);
}

static void pack_task(void *ctx, int64_t lo, int64_t hi)
{
  const QJob *jb = ctx;
  for (int64_t t = lo; t < hi; t++) {
    if (t < jb->mt)
      pack_a(jb, t);
    else
      pack_b(jb, t - jb->mt);
  }
}

/* Tiles [lo, hi), column panel by column panel. */
static void tile_task(void *ctx, int64_t lo, int64_t hi)
{
  const QJob *jb = ctx;
  for (int64_t t = lo; t < hi; t++) {
    int64_t it = t % jb->mt, jt = t / jb->mt, i0 = it * QMR, j0 = jt * QNR;
    int mr = jb->m - i0 < QMR ? (int)(jb->m - i0) : QMR;
    int nr = jb->n - j0 < QNR ? (int)(jb->n - j0) : QNR;
    jb->isa->kern(jb->kq, jb->ap + i0 * jb->kq * 4, jb->bp + j0 * jb->kq * 4,
             jb->rowt + i0, jb->colt + j0, jb->mc + (jb->mults ? j0 : 0),
             jb->ozp, jb->c + i0 * jb->ldc + j0, jb->ldc, mr, nr);
  }
}

/* Run fn over [0, n) on the pool, serially when the work is small. */
static void run(int64_t n, int64_t macs_per_item, rlx_task_fn fn, QJob *jb)
{
  int64_t grain = MIN_TASK_MACS / (macs_per_item + 1) + 1;
  if (n <= grain || rlx_get_num_threads() == 1)
    fn(jb, 0, n);
  else
    rlx_parallel_for(n, grain, fn, jb);
}

/* The GEMM of jb (sizes, operands, zero points set) in `scratch`,
   laid out as qgemm_plan.c sizes it. */
static void qgemm(QJob *jb, char *scratch)
{
  jb->isa = pick_isa();
  jb->kq = (jb->k + 3) / 4;
  jb->mt = (jb->m + QMR - 1) / QMR;
  jb->nt = (jb->n + QNR - 1) / QNR;
  int64_t kp = jb->kq * 4, mp = jb->mt * QMR, np = jb->nt * QNR;
  jb->ap = (uint8_t *)scratch;
  jb->bp = (int8_t *)(scratch + up(mp * kp, 64));
  jb->rowt = (int32_t *)((char *)jb->bp + up(np * kp, 64));
  jb->colt = (int32_t *)((char *)jb->rowt + up(mp * 4, 64));
  jb->mc = (double *)((char *)jb->colt + up(np * 4, 64));
  /* f32 x f32 is exact in double; without mults one tile's worth,
     which every tile reads (tile_task) */
  for (int64_t j = 0; j < (jb->mults ? np : QNR); j++)
    jb->mc[j] = (double)jb->mult * (jb->mults && j < jb->n ? jb->mults[j] : 1);
  run(jb->mt + jb->nt, 8 * kp * QNR, pack_task, jb);
  run(jb->mt * jb->nt, kp * QMR * QNR, tile_task, jb);
}

void rlx_q_matmul(int64_t m, int64_t n, int64_t k, const int8_t *x,
                  const int8_t *w, const int32_t *bias, float mult,
                  const float *mults, int32_t x_zp, int32_t w_zp,
                  int32_t out_zp, int8_t *y, void *scratch)
{
  if (m <= 0 || n <= 0)
    return;
  QJob jb = {.m = m, .n = n, .k = k, .a = x, .lda = k, .b = w, .ldb = n,
             .bias = bias, .bias_rows = 0, .az = x_zp, .bz = w_zp,
             .ozp = out_zp, .mult = mult, .mults = mults, .c = y, .ldc = n};
  qgemm(&jb, scratch);
}

typedef struct {
  const rlx_conv_geom *g;
  const int8_t *x; /* image and group origin: [C/G, H, W] */
  int8_t *col;     /* [C/G * KH * KW, OH * OW] */
  int8_t zp;
} Im2col;

/* First output column whose input column ow * s + off is >= lim. */
static int64_t first_at(int64_t lim, int64_t off, int64_t s, int64_t ow)
{
  int64_t v = lim - off <= 0 ? 0 : (lim - off + s - 1) / s;
  return v < ow ? v : ow;
}

static void im2col_task(void *ctx, int64_t lo, int64_t hi)
{
  const Im2col *ic = ctx;
  const rlx_conv_geom *g = ic->g;
  for (int64_t r = lo; r < hi; r++) {
    int64_t c = r / (g->kh * g->kw), ki = r / g->kw % g->kh, kj = r % g->kw;
    int64_t off = kj * g->dw - g->pw; /* input column of ow = 0 */
    int64_t w0 = first_at(0, off, g->sw, g->ow),
            w1 = first_at(g->w, off, g->sw, g->ow);
    if (w1 < w0)
      w1 = w0;
    const int8_t *src = ic->x + c * g->h * g->w;
    int8_t *dst = ic->col + r * g->oh * g->ow;
    for (int64_t oh = 0; oh < g->oh; oh++, dst += g->ow) {
      int64_t ih = oh * g->sh - g->ph + ki * g->dh;
      if (ih < 0 || ih >= g->h) {
        memset(dst, ic->zp, (size_t)g->ow);
        continue;
      }
      const int8_t *row = src + ih * g->w;
      memset(dst, ic->zp, (size_t)w0);
      if (g->sw == 1 && w1 > w0)
        memcpy(dst + w0, row + w0 + off, (size_t)(w1 - w0));
      else
        for (int64_t ow = w0; ow < w1; ow++)
          dst[ow] = row[ow * g->sw + off];
      memset(dst + w1, ic->zp, (size_t)(g->ow - w1));
    }
  }
}

void rlx_q_conv2d(const rlx_conv_geom *g, const int8_t *x, const int8_t *w,
                  const int32_t *bias, float mult, int32_t x_zp,
                  int32_t w_zp, int32_t out_zp, int8_t *y, void *scratch)
{
  int64_t gs = g->groups, cg = g->c / gs, cog = g->co / gs,
          kc = cg * g->kh * g->kw, p = g->oh * g->ow;
  int direct = rlx_q_conv2d_direct(g);
  char *gemm_ws = (char *)scratch + (direct ? 0 : up(kc * p, 64));
  if (p <= 0 || cog <= 0)
    return;
  for (int64_t b = 0; b < g->n; b++)
    for (int64_t gi = 0; gi < gs; gi++) {
      const int8_t *xg = x + (b * g->c + gi * cg) * g->h * g->w;
      Im2col ic = {g, xg, scratch, (int8_t)x_zp};
      if (!direct) {
        int64_t grain = MIN_TASK_MACS / (16 * p + 1) + 1;
        if (kc <= grain || rlx_get_num_threads() == 1)
          im2col_task(&ic, 0, kc);
        else
          rlx_parallel_for(kc, grain, im2col_task, &ic);
      }
      QJob jb = {.m = cog, .n = p, .k = kc, .a = w + gi * cog * kc,
                 .lda = kc, .b = direct ? xg : ic.col, .ldb = p,
                 .bias = bias + gi * cog, .bias_rows = 1, .az = w_zp,
                 .bz = x_zp, .ozp = out_zp, .mult = mult,
                 .c = y + (b * g->co + gi * cog) * p, .ldc = p};
      qgemm(&jb, gemm_ws);
    }
}
