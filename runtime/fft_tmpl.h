/* fft_tmpl.h -- one Stockham stage (fft_internal.h), included by fft.c
 * (TGT empty) and fft_avx512.c (TGT = target("avx512f")) to define
 * STAGE_FN.  Radix 2, 3 and 4 have closed-form butterflies, other radices
 * the direct r-point DFT.  When the stride s is large the inner loop
 * runs over q (unit stride, one twiddle per p); for s < 8 it runs over p
 * instead, so the first stages vectorize too.  Both orders do the same
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

/* Both loop orders around one butterfly kind. */
#define STAGE_LOOPS(BF)                                                  \
  do {                                                                   \
    if (s >= 8) {                                                        \
      for (int64_t p = 0; p < m; p++)                                    \
        for (int64_t q = 0; q < s; q++) {                                \
          int64_t i0 = q + s * p, o0 = q + s * r * p, t0 = p;            \
          BF();                                                          \
        }                                                                \
    } else {                                                             \
      for (int64_t q = 0; q < s; q++)                                    \
        for (int64_t p = 0; p < m; p++) {                                \
          int64_t i0 = q + s * p, o0 = q + s * r * p, t0 = p;            \
          BF();                                                          \
        }                                                                \
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

TGT void STAGE_FN(const FftStage *st, const float *restrict xr,
                  const float *restrict xi, float *restrict yr,
                  float *restrict yi)
{
  const int64_t r = st->r, m = st->m, s = st->s, is = s * m, os = s;
  const float sg = st->sg;
  const float *restrict twr = st->twr, *restrict twi = st->twi;
  (void)sg;
  switch (r) {
  case 2: STAGE_LOOPS(BFLY2); break;
  case 3: STAGE_LOOPS(BFLY3); break;
  case 4: STAGE_LOOPS(BFLY4); break;
  default: generic_stage(st, xr, xi, yr, yi); break;
  }
}

#undef CMUL
#undef BFLY2
#undef BFLY3
#undef BFLY4
#undef STAGE_LOOPS
