/* conv_tmpl.h -- direct (reference) convolution for one element type.
 * Included by conv.c with T (float or double) and FN(name) defined. */

typedef struct {
  const rlx_conv_geom *g;
  const T *a, *b;
  T *out;
} FN(Job_);

/* y[n, o, i, j] = sum over (ci, r, q) of x * w, ci in o's group. */
static void FN(fwd_task_)(void *ctx, int64_t begin, int64_t end)
{
  const FN(Job_) *jb = ctx;
  const rlx_conv_geom *g = jb->g;
  int64_t cg = g->c / g->groups, og = g->co / g->groups;
  for (int64_t t = begin; t < end; t++) {
    int64_t n = t / g->co, o = t % g->co, c0 = o / og * cg;
    T *y = jb->out + t * g->oh * g->ow;
    for (int64_t i = 0; i < g->oh; i++)
      for (int64_t j = 0; j < g->ow; j++) {
        T s = 0;
        for (int64_t ci = 0; ci < cg; ci++)
          for (int64_t r = 0; r < g->kh; r++) {
            int64_t hi = i * g->sh - g->ph + r * g->dh;
            if (hi < 0 || hi >= g->h) continue;
            for (int64_t q = 0; q < g->kw; q++) {
              int64_t wi = j * g->sw - g->pw + q * g->dw;
              if (wi < 0 || wi >= g->w) continue;
              s += jb->a[((n * g->c + c0 + ci) * g->h + hi) * g->w + wi] *
                   jb->b[((o * cg + ci) * g->kh + r) * g->kw + q];
            }
          }
        y[i * g->ow + j] = s;
      }
  }
}

/* dx[n, c, hi, wi] = sum over (o in c's group, r, q) with
   hi = i*sh - ph + r*dh, wi = j*sw - pw + q*dw of dy[n, o, i, j] * w. */
static void FN(bwd_input_task_)(void *ctx, int64_t begin, int64_t end)
{
  const FN(Job_) *jb = ctx;
  const rlx_conv_geom *g = jb->g;
  int64_t cg = g->c / g->groups, og = g->co / g->groups;
  for (int64_t t = begin; t < end; t++) {
    int64_t n = t / g->c, c = t % g->c, o0 = c / cg * og, ci = c % cg;
    T *dx = jb->out + t * g->h * g->w;
    for (int64_t e = 0; e < g->h * g->w; e++)
      dx[e] = 0;
    for (int64_t o = o0; o < o0 + og; o++)
      for (int64_t i = 0; i < g->oh; i++)
        for (int64_t j = 0; j < g->ow; j++) {
          T d = jb->a[((n * g->co + o) * g->oh + i) * g->ow + j];
          for (int64_t r = 0; r < g->kh; r++) {
            int64_t hi = i * g->sh - g->ph + r * g->dh;
            if (hi < 0 || hi >= g->h) continue;
            for (int64_t q = 0; q < g->kw; q++) {
              int64_t wi = j * g->sw - g->pw + q * g->dw;
              if (wi < 0 || wi >= g->w) continue;
              dx[hi * g->w + wi] +=
                  d * jb->b[((o * cg + ci) * g->kh + r) * g->kw + q];
            }
          }
        }
  }
}

/* dw[o, ci, r, q] = sum over (n, i, j) of dy[n, o, i, j] * x[...]. */
static void FN(bwd_weight_task_)(void *ctx, int64_t begin, int64_t end)
{
  const FN(Job_) *jb = ctx;
  const rlx_conv_geom *g = jb->g;
  int64_t cg = g->c / g->groups, og = g->co / g->groups;
  int64_t per = cg * g->kh * g->kw;
  for (int64_t t = begin; t < end; t++) {
    int64_t o = t / per, k = t % per, ci = k / (g->kh * g->kw);
    int64_t r = k / g->kw % g->kh, q = k % g->kw, c = o / og * cg + ci;
    T s = 0;
    for (int64_t n = 0; n < g->n; n++)
      for (int64_t i = 0; i < g->oh; i++) {
        int64_t hi = i * g->sh - g->ph + r * g->dh;
        if (hi < 0 || hi >= g->h) continue;
        for (int64_t j = 0; j < g->ow; j++) {
          int64_t wi = j * g->sw - g->pw + q * g->dw;
          if (wi < 0 || wi >= g->w) continue;
          s += jb->b[((n * g->co + o) * g->oh + i) * g->ow + j] *
               jb->a[((n * g->c + c) * g->h + hi) * g->w + wi];
        }
      }
    jb->out[t] = s;
  }
}

void FN(rlx_conv2d_)(const rlx_conv_geom *g, const T *x, const T *w, T *y,
                     void *scratch)
{
  FN(Job_) jb = {g, x, w, y};
  rlx_parallel_for(g->n * g->co, 1, FN(fwd_task_), &jb);
}

void FN(rlx_conv2d_bwd_input_)(const rlx_conv_geom *g, const T *dy,
                               const T *w, T *dx, void *scratch)
{
  FN(Job_) jb = {g, dy, w, dx};
  rlx_parallel_for(g->n * g->c, 1, FN(bwd_input_task_), &jb);
}

void FN(rlx_conv2d_bwd_weight_)(const rlx_conv_geom *g, const T *x,
                                const T *dy, T *dw, void *scratch)
{
  FN(Job_) jb = {g, x, dy, dw};
  rlx_parallel_for(g->co * (g->c / g->groups) * g->kh * g->kw, 1,
                   FN(bwd_weight_task_), &jb);
}
