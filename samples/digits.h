/* digits.h -- what the digits drivers share (train_digits.c,
 * train_mpi.c): the model selected by MODEL / MODEL_H (default mlp), the
 * CSV loader of the 8x8 digits, a small seeded PRNG and shuffle.
 * Included once by each driver, after the system headers.
 */
#ifndef RLX_SAMPLES_DIGITS_H
#define RLX_SAMPLES_DIGITS_H

#ifndef MODEL
#define MODEL mlp
#define MODEL_H "mlp.h"
#endif
#include MODEL_H

#define CAT_(a, b) a##b
#define CAT(a, b) CAT_(a, b)
#define FWD MODEL
#define GRAD CAT(MODEL, _grad)

enum { NPIX = 64, NCLS = 10, MAXROWS = 2000, MAXP = 16 };

typedef struct {
  float x[MAXROWS][NPIX];
  int label[MAXROWS];
  int n;
} Data;

static uint64_t rng_next(uint64_t *s)
{
  *s = *s * 6364136223846793005ull + 1442695040888963407ull;
  return *s >> 33;
}

static double rng_unit(uint64_t *s) /* [0, 1) */
{
  return (double)rng_next(s) / 2147483648.0;
}

static int load_csv(const char *path, Data *d)
{
  FILE *f = fopen(path, "r");
  if (!f) {
    perror(path);
    return 0;
  }
  d->n = 0;
  while (d->n < MAXROWS) {
    int v, k;
    for (k = 0; k <= NPIX; k++) {
      if (fscanf(f, k ? " ,%d" : " %d", &v) != 1)
        break;
      if (k < NPIX)
        d->x[d->n][k] = (float)v / 16.0f;
      else
        d->label[d->n] = v;
    }
    if (k <= NPIX)
      break;
    d->n++;
  }
  fclose(f);
  if (d->n == 0)
    fprintf(stderr, "%s: no rows of %d pixels and a label\n", path, NPIX);
  return d->n;
}

static void shuffle(int *idx, int n, uint64_t *s)
{
  for (int i = n - 1; i > 0; i--) {
    int j = (int)(rng_unit(s) * (i + 1));
    int t = idx[i];
    idx[i] = idx[j];
    idx[j] = t;
  }
}

/* idx := the rows in the fixed-seed order every driver uses (seed
 * 20240601, advanced); returns how many lead as the training set (80%),
 * the rest being the test set. */
static int split_rows(const Data *d, int *idx, uint64_t *seed)
{
  *seed = 20240601;
  for (int i = 0; i < d->n; i++)
    idx[i] = i;
  shuffle(idx, d->n, seed);
  return d->n * 4 / 5;
}

static int64_t numel(const rlx_tensor_desc *d)
{
  int64_t n = 1;
  for (int i = 0; i < d->rank; i++)
    n *= d->dims[i];
  return n;
}

#endif
