/* fft_tmpl.h -- one Stockham stage (fft_internal.h), included by
 * fft_tables.c (TGT empty: the portable kernel) and fft_kern.h (each
 * ISA's, for the stages its vector code, STAGE_VEC, leaves) to define
 * STAGE_FN.  Radix 2, 3, 4 and 5 have closed-form butterflies, other
 * radices the direct r-point DFT.  When the stride s is large the inner
 * loop runs over q (unit stride, one twiddle per p); for s < 16 it runs
 * over p instead, so the first stages vectorize too.  Both orders do the same
 * operations per element: results do not depend on the order, nor on
 * the ISA (the file is compiled without FP contraction).
 */

/* y = (ar + i ai) * (wr + i wi) */
#define CMUL(yr, yi, ar, ai, wr, wi)                                     \
  do {                                                                   \
    float cr_ = (ar) * (wr) - (ai) * (wi);                               \
    float ci_ = (ar) * (wi) + (ai) * (wr);                               \
    (yr) = cr_;                                                          \
    (yi) = ci_;                                                          \
  } while (0)

/* One radix-R butterfly: inputs at x + j*is, outputs at y + k*os,
 * twiddles tw[(k-1)*m]. */
#define BFLY2()                                                          \
  do {                                                                   \
    float a0r = xr[i0], a0i = xi[i0], a1r = xr[i0 + is], a1i = xi[i0 + is]; \
    yr[o0] = a0r + a1r;                                                  \
    yi[o0] = a0i + a1i;                                                  \
    CMUL(yr[o0 + os], yi[o0 + os], a0r - a1r, a0i - a1i, twr[t0], twi[t0]); \
  } while (0)

#define BFLY3()                                                          \
  do {                                                                   \
    const float h = 0.5f, c = 0.86602540378443864676f * sg;              \
    float a0r = xr[i0], a0i = xi[i0];                                    \
    float a1r = xr[i0 + is], a1i = xi[i0 + is];                          \
    float a2r = xr[i0 + 2 * is], a2i = xi[i0 + 2 * is];                  \
    float tr = a1r + a2r, ti = a1i + a2i;                                \
    float dr = (a1r - a2r) * c, di = (a1i - a2i) * c;                    \
    float ur = a0r - tr * h, ui = a0i - ti * h;                          \
    yr[o0] = a0r + tr;                                                   \
    yi[o0] = a0i + ti;                                                   \
    CMUL(yr[o0 + os], yi[o0 + os], ur - di, ui + dr, twr[t0], twi[t0]);  \
    CMUL(yr[o0 + 2 * os], yi[o0 + 2 * os], ur + di, ui - dr,             \
         twr[t0 + m], twi[t0 + m]);                                      \
  } while (0)

#define BFLY4()                                                          \
  do {                                                                   \
    float a0r = xr[i0], a0i = xi[i0];                                    \
    float a1r = xr[i0 + is], a1i = xi[i0 + is];                          \
    float a2r = xr[i0 + 2 * is], a2i = xi[i0 + 2 * is];                  \
    float a3r = xr[i0 + 3 * is], a3i = xi[i0 + 3 * is];                  \
    float t0r = a0r + a2r, t0i = a0i + a2i;                              \
    float t1r = a0r - a2r, t1i = a0i - a2i;                              \
    float t2r = a1r + a3r, t2i = a1i + a3i;                              \
    float dr = (a1i - a3i) * -sg, di = (a1r - a3r) * sg; /* sg i (a1-a3) */ \
    yr[o0] = t0r + t2r;                                                  \
    yi[o0] = t0i + t2i;                                                  \
    CMUL(yr[o0 + os], yi[o0 + os], t1r + dr, t1i + di, twr[t0], twi[t0]); \
    CMUL(yr[o0 + 2 * os], yi[o0 + 2 * os], t0r - t2r, t0i - t2i,         \
         twr[t0 + m], twi[t0 + m]);                                      \
    CMUL(yr[o0 + 3 * os], yi[o0 + 3 * os], t1r - dr, t1i - di,           \
         twr[t0 + 2 * m], twi[t0 + 2 * m]);                              \
  } while (0)

/* Radix 5: b_k = a0 + sum_j a_j w^(jk), w = exp(sg 2 pi i / 5), with
 * the pairs a1 +- a4, a2 +- a3 (cos and sin of 2 pi / 5, 4 pi / 5). */
#define BFLY5()                                                          \
  do {                                                                   \
    const float c1 = 0.30901699437494742410f, c2 = -0.80901699437494742410f; \
    const float s1 = 0.95105651629515357212f * sg;                       \
    const float s2 = 0.58778525229247312917f * sg;                       \
    float a0r = xr[i0], a0i = xi[i0];                                    \
    float a1r = xr[i0 + is], a1i = xi[i0 + is];                          \
    float a2r = xr[i0 + 2 * is], a2i = xi[i0 + 2 * is];                  \
    float a3r = xr[i0 + 3 * is], a3i = xi[i0 + 3 * is];                  \
    float a4r = xr[i0 + 4 * is], a4i = xi[i0 + 4 * is];                  \
    float p1r = a1r + a4r, p1i = a1i + a4i, m1r = a1r - a4r, m1i = a1i - a4i; \
    float p2r = a2r + a3r, p2i = a2i + a3i, m2r = a2r - a3r, m2i = a2i - a3i; \
    float u1r = a0r + c1 * p1r + c2 * p2r, u1i = a0i + c1 * p1i + c2 * p2i; \
    float u2r = a0r + c2 * p1r + c1 * p2r, u2i = a0i + c2 * p1i + c1 * p2i; \
    float v1r = s1 * m1r + s2 * m2r, v1i = s1 * m1i + s2 * m2i;          \
    float v2r = s2 * m1r - s1 * m2r, v2i = s2 * m1i - s1 * m2i;          \
    yr[o0] = a0r + p1r + p2r;                                            \
    yi[o0] = a0i + p1i + p2i;                                            \
    /* b1 = u1 + i v1, b4 = u1 - i v1, b2 = u2 + i v2, b3 = u2 - i v2 */ \
    CMUL(yr[o0 + os], yi[o0 + os], u1r - v1i, u1i + v1r, twr[t0], twi[t0]); \
    CMUL(yr[o0 + 2 * os], yi[o0 + 2 * os], u2r - v2i, u2i + v2r,         \
         twr[t0 + m], twi[t0 + m]);                                      \
    CMUL(yr[o0 + 3 * os], yi[o0 + 3 * os], u2r + v2i, u2i - v2r,         \
         twr[t0 + 2 * m], twi[t0 + 2 * m]);                              \
    CMUL(yr[o0 + 4 * os], yi[o0 + 4 * os], u1r + v1i, u1i - v1r,         \
         twr[t0 + 3 * m], twi[t0 + 3 * m]);                              \
  } while (0)

/* Both loop orders around one butterfly kind, with local restrict
 * pointers so the inner loop has constant strides: over q (unit
 * stride, the twiddles broadcast) when s >= 16, else over p with the
 * strides of s = 1 (the first stage) or s as a constant. */
#define STAGE_LOOPS(BF)                                                  \
  do {                                                                   \
    if (s >= 16) {                                                       \
      for (int64_t p = 0; p < m; p++) {                                  \
        const float *restrict xr_ = xr0 + s * p, *restrict xi_ = xi0 + s * p; \
        float *restrict yr_ = yr0 + s * r * p, *restrict yi_ = yi0 + s * r * p; \
        const float *restrict twr = twr0 + p, *restrict twi = twi0 + p; \
        for (int64_t q = 0; q < s; q++) {                                \
          const int64_t i0 = q, o0 = q, t0 = 0;                          \
          float *restrict yr = yr_, *restrict yi = yi_;                  \
          const float *restrict xr = xr_, *restrict xi = xi_;            \
          BF();                                                          \
        }                                                                \
      }                                                                  \
    } else if (s == 1) {                                                 \
      const float *restrict xr = xr0, *restrict xi = xi0;                \
      float *restrict yr = yr0, *restrict yi = yi0;                      \
      const float *restrict twr = twr0, *restrict twi = twi0;            \
      const int64_t os = 1;                                              \
      for (int64_t p = 0; p < m; p++) {                                  \
        const int64_t i0 = p, o0 = R_ * p, t0 = p;                       \
        BF();                                                            \
      }                                                                  \
    } else {                                                             \
      for (int64_t q = 0; q < s; q++) {                                  \
        const float *restrict xr = xr0 + q, *restrict xi = xi0 + q;      \
        float *restrict yr = yr0 + q, *restrict yi = yi0 + q;            \
        const float *restrict twr = twr0, *restrict twi = twi0;          \
        for (int64_t p = 0; p < m; p++) {                                \
          const int64_t i0 = s * p, o0 = s * R_ * p, t0 = p;             \
          BF();                                                          \
        }                                                                \
      }                                                                  \
    }                                                                    \
  } while (0)

TGT static void generic_stage(const FftStage *st, const float *restrict xr,
                              const float *restrict xi, float *restrict yr,
                              float *restrict yi)
{
  int64_t r = st->r, m = st->m, s = st->s, is = s * m, os = s;
  float ar[FFT_MAX_RADIX], ai[FFT_MAX_RADIX];
  for (int64_t p = 0; p < m; p++)
    for (int64_t q = 0; q < s; q++) {
      int64_t i0 = q + s * p, o0 = q + s * r * p;
      for (int64_t j = 0; j < r; j++) {
        ar[j] = xr[i0 + j * is];
        ai[j] = xi[i0 + j * is];
      }
      for (int64_t k = 0; k < r; k++) {
        float br = 0, bi = 0;
        int64_t t = 0; /* j k mod r */
        for (int64_t j = 0; j < r; j++) {
          float cr, ci;
          CMUL(cr, ci, ar[j], ai[j], st->wr[t], st->wi[t]);
          br += cr;
          bi += ci;
          t += k;
          if (t >= r)
            t -= r;
        }
        if (k == 0) {
          yr[o0] = br;
          yi[o0] = bi;
        } else {
          int64_t w = (k - 1) * m + p;
          CMUL(yr[o0 + k * os], yi[o0 + k * os], br, bi, st->twr[w],
               st->twi[w]);
        }
      }
    }
}

TGT void STAGE_FN(const FftStage *st, const float *restrict xr0,
                  const float *restrict xi0, float *restrict yr0,
                  float *restrict yi0)
{
  const int64_t r = st->r, m = st->m, s = st->s, is = s * m, os = s;
  const float sg = st->sg;
  const float *restrict twr0 = st->twr, *restrict twi0 = st->twi;
  (void)sg;
  (void)r;
#ifdef STAGE_VEC
  if (STAGE_VEC(st, xr0, xi0, yr0, yi0))
    return;
#endif
  switch (r) {
#define R_ 2
  case 2: STAGE_LOOPS(BFLY2); break;
#undef R_
#define R_ 3
  case 3: STAGE_LOOPS(BFLY3); break;
#undef R_
#define R_ 4
  case 4: STAGE_LOOPS(BFLY4); break;
#undef R_
#define R_ 5
  case 5: STAGE_LOOPS(BFLY5); break;
#undef R_
  default: generic_stage(st, xr0, xi0, yr0, yi0); break;
  }
}

#undef CMUL
#undef BFLY2
#undef BFLY3
#undef BFLY4
#undef BFLY5
#undef STAGE_LOOPS
