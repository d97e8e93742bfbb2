/* train_mpi.c -- data-parallel SGD on the digits with MPI.
 *
 * The same model contract as train_digits.c: any graph with inputs
 * (x, y, params...) whose first two outputs are the scalar loss and the
 * logits [batch, 10], compiled with --grad: samples/mlp.rlx (default)
 * or samples/cnn.rlx (-DMODEL=cnn -DMODEL_H='"cnn.h"').  Build
 * (samples/run_demo.sh mpi does it):
 *   rlxc samples/mlp.rlx --grad -o mlp.o        # writes mlp.o, mlp.h
 *   mpicc -std=c11 -I. -Iruntime -I<dir of mlp.h> samples/train_mpi.c \
 *      mlp.o build/runtime/librlxrt.a -lm -lpthread -o train_mpi
 *   gzip -dc samples/data/digits.csv.gz > digits.csv
 *   mpirun -np 2 ./train_mpi digits.csv [epochs] [min_accuracy]
 *                            [learning_rate] [checkpoint] [shards]
 *
 * One step works on a global batch of `shards` x B examples, B being
 * the batch size fixed in the .rlx (32).  Shard s is rows
 * [s*B, (s+1)*B) of the global batch; with P ranks, rank r computes the
 * gradients of the shards r*S/P .. (r+1)*S/P - 1 with MODEL_grad and
 * sums them, in shard order, into one contiguous buffer (every param's
 * gradient, then the summed loss).  One MPI_Allreduce (MPI_FLOAT,
 * MPI_SUM) over that buffer gives every rank the sum over all shards;
 * every rank then divides by S and applies the same SGD update to its
 * copy of the params, so the copies stay equal without sending params.
 * `shards` defaults to P (global batch = B x ranks) and must be a
 * multiple of P.  The global batch sequence depends only on the data
 * and a fixed seed, never on P: `mpirun -np 1` and `-np 2` with the
 * same `shards` compute the same sums, in another order (see
 * docs/distributed.md).
 *
 * Every rank reads the whole CSV (1,797 rows; 80% train, 20% test by
 * a fixed-seed shuffle, as train_digits.c) and reshuffles the training
 * rows each epoch with the same seed; an epoch is floor(train / (S*B))
 * steps.  Rank 0 initializes the params (He-uniform, as train_digits.c)
 * and broadcasts them.  At the end the ranks check that their params
 * are bitwise equal, rank 0 saves them with rlx_save_params (default
 * MODEL_mpi.safetensors; "-" saves nothing), evaluates the test set
 * with the forward entry and prints the accuracy.  Each rank runs the
 * compiled code on 1 thread unless RLX_NUM_THREADS is set.  Exit status
 * (of rank 0): 1 when the test accuracy is below min_accuracy (default
 * 0.95), 2 on other errors.
 */
#include <math.h>
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "digits.h"

#define STR_(a) #a
#define STR(a) STR_(a)

/* The params, in signature order, as slices of one buffer `w`; their
   gradients as slices of one buffer `g` of total+1 floats (the last
   one carries the loss), so that one allreduce moves everything. */
typedef struct {
  int n;
  int64_t numel[MAXP], total;
  float *w, *g, *gshard;
  const void *in[MAXP + 3];  /* x, y, params..., d_output */
  void *out[MAXP + 2];       /* loss, logits, d_params... */
} Model;

static int rank, nranks;

static void die(const char *msg)
{
  fprintf(stderr, "rank %d: %s\n", rank, msg);
  MPI_Abort(MPI_COMM_WORLD, 2);
  exit(2);
}

/* x: 64 floats per image, y: i32, logits [batch, 10], params f32. */
static int check_abi(void)
{
  const rlx_signature *s = CAT(GRAD, _signature)();
  const rlx_tensor_desc *x = &s->inputs[0], *z = &s->outputs[1];
  int ok = s->num_inputs >= 4 && s->num_inputs - 3 <= MAXP &&
           s->num_outputs == s->num_inputs - 1 && x->dtype == RLX_DT_F32 &&
           numel(x) == x->dims[0] * NPIX &&
           s->inputs[1].dtype == RLX_DT_I32 && z->rank == 2 &&
           z->dims[0] == x->dims[0] && z->dims[1] == NCLS;
  for (int k = 2; ok && k < s->num_inputs - 1; k++)
    ok = s->inputs[k].dtype == RLX_DT_F32;
  return ok;
}

/* Allocate the buffers and point the entry's argument arrays at them. */
static void setup(Model *m, float *x, int *y, float *loss, float *logits,
                  const float *one)
{
  const rlx_signature *sig = CAT(GRAD, _signature)();
  m->n = sig->num_inputs - 3;
  m->total = 0;
  for (int k = 0; k < m->n; k++)
    m->total += m->numel[k] = numel(&sig->inputs[2 + k]);
  m->w = calloc((size_t)m->total, sizeof(float));
  m->g = calloc((size_t)m->total + 1, sizeof(float));
  m->gshard = calloc((size_t)m->total, sizeof(float));
  if (!m->w || !m->g || !m->gshard)
    die("out of memory");
  m->in[0] = x;
  m->in[1] = y;
  m->out[0] = loss;
  m->out[1] = logits;
  int64_t off = 0;
  for (int k = 0; k < m->n; k++) {
    m->in[2 + k] = m->w + off;
    m->out[2 + k] = m->gshard + off;
    off += m->numel[k];
  }
  m->in[2 + m->n] = one;
}

/* He-uniform as in train_digits.c, on rank 0, then broadcast. */
static void init_params(Model *m, uint64_t seed)
{
  const rlx_signature *sig = CAT(GRAD, _signature)();
  if (rank == 0) {
    float *w = m->w;
    for (int k = 0; k < m->n; k++) {
      const rlx_tensor_desc *d = &sig->inputs[2 + k];
      int64_t fan = d->rank == 2 ? d->dims[0]
                    : d->rank == 4 ? d->dims[1] * d->dims[2] * d->dims[3]
                                   : 0;
      for (int64_t i = 0; i < m->numel[k]; i++)
        *w++ = fan ? (float)((2 * rng_unit(&seed) - 1) * sqrt(6.0 / fan))
               : !strncmp(d->name, "gamma", 5) ? 1.0f : 0.0f;
    }
  }
  /* MPI counts are int: fine for these models; chunk beyond 2^31. */
  MPI_Bcast(m->w, (int)m->total, MPI_FLOAT, 0, MPI_COMM_WORLD);
}

static void fill_batch(const Data *d, const int *rows, int n, int batch,
                       float *x, int *y)
{
  for (int i = 0; i < batch; i++) {
    int r = rows[i < n ? i : n - 1]; /* pad a short batch by repeating */
    memcpy(x + i * NPIX, d->x[r], sizeof d->x[r]);
    y[i] = d->label[r];
  }
}

/* One SGD step on the global batch `rows` (shards x batch rows);
   returns the mean loss over the shards (the same on every rank). */
static double step(Model *m, const Data *d, const int *rows, int shards,
                   int batch, float lr, void *ws, float *x, int *y,
                   const float *loss)
{
  int per_rank = shards / nranks;
  memset(m->g, 0, ((size_t)m->total + 1) * sizeof(float));
  for (int s = rank * per_rank; s < (rank + 1) * per_rank; s++) {
    fill_batch(d, rows + (size_t)s * batch, batch, batch, x, y);
    int rc = GRAD(m->in, m->out, ws);
    if (rc) {
      fprintf(stderr, "rank %d: training step failed: %s\n", rank,
              rlx_strerror(rc));
      MPI_Abort(MPI_COMM_WORLD, 2);
    }
    for (int64_t i = 0; i < m->total; i++)
      m->g[i] += m->gshard[i];
    m->g[m->total] += *loss;
  }
  /* The one collective per step: gradient sums (and the loss sum). */
  MPI_Allreduce(MPI_IN_PLACE, m->g, (int)m->total + 1, MPI_FLOAT, MPI_SUM,
                MPI_COMM_WORLD);
  float scale = lr / (float)shards;
  for (int64_t i = 0; i < m->total; i++)
    m->w[i] -= scale * m->g[i];
  return m->g[m->total] / shards;
}

static double accuracy(Model *m, const Data *d, const int *te, int nte,
                       int batch, float *x, int *y, const float *logits)
{
  int correct = 0;
  for (int b = 0; b < nte; b += batch) {
    int n = nte - b < batch ? nte - b : batch;
    fill_batch(d, te + b, n, batch, x, y);
    if (FWD(m->in, m->out, NULL))
      die("forward failed");
    for (int i = 0; i < n; i++) {
      int best = 0;
      for (int c = 1; c < NCLS; c++)
        if (logits[i * NCLS + c] > logits[i * NCLS + best])
          best = c;
      correct += best == y[i];
    }
  }
  return (double)correct / nte;
}

/* FNV-1a over the params' bytes: equal on every rank, or a bug. */
static unsigned long long params_hash(const Model *m)
{
  const unsigned char *p = (const unsigned char *)m->w;
  unsigned long long h = 14695981039346656037ull;
  for (size_t i = 0; i < (size_t)m->total * sizeof(float); i++)
    h = (h ^ p[i]) * 1099511628211ull;
  return h;
}

int main(int argc, char **argv)
{
  MPI_Init(&argc, &argv);
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &nranks);
  if (argc < 2) {
    if (rank == 0)
      fprintf(stderr,
              "usage: mpirun -np P %s digits.csv [epochs] [min_acc] [lr] "
              "[checkpoint.safetensors|-] [shards]\n",
              argv[0]);
    MPI_Finalize();
    return 2;
  }
  int epochs = argc > 2 ? atoi(argv[2]) : 30;
  double min_acc = argc > 3 ? atof(argv[3]) : 0.95;
  float lr = argc > 4 ? (float)atof(argv[4]) : 0.3f;
  const char *ckpt = argc > 5 ? argv[5] : STR(MODEL) "_mpi.safetensors";
  int shards = argc > 6 ? atoi(argv[6]) : nranks;
  if (shards < 1 || shards % nranks)
    die("shards must be a positive multiple of the number of ranks");
  if (!getenv("RLX_NUM_THREADS"))
    rlx_set_num_threads(1); /* one core per rank */

  static Data d;
  static Model m;
  static int idx[MAXROWS];
  if (!check_abi())
    die("the model does not have the expected signature");
  if (!load_csv(argv[1], &d))
    die("cannot read the data");
  uint64_t seed;
  int batch = (int)CAT(GRAD, _signature)()->inputs[0].dims[0];
  int ntr = split_rows(&d, idx, &seed), nte = d.n - ntr,
      global = shards * batch;
  int steps = ntr / global;
  if (steps < 1)
    die("the global batch is larger than the training set");
  float *x = calloc((size_t)batch * NPIX, sizeof *x);
  float *logits = calloc((size_t)batch * NCLS, sizeof *logits);
  int *y = calloc((size_t)batch, sizeof *y);
  void *ws = rlx_alloc(CAT(GRAD, _WORKSPACE_BYTES));
  float loss = 0, one = 1.0f;
  if (!x || !logits || !y || !ws)
    die("out of memory");
  setup(&m, x, y, &loss, logits, &one);
  init_params(&m, 7);
  if (rank == 0)
    printf("digits: %d train, %d test; %d ranks x %d shards x batch %d = "
           "global batch %d, %d steps/epoch; %lld params (%lld bytes "
           "allreduced per step); %d threads per rank\n",
           ntr, nte, nranks, shards / nranks, batch, global, steps,
           (long long)m.total, (long long)(m.total + 1) * 4,
           rlx_get_num_threads());

  for (int e = 0; e < epochs; e++) {
    double sum = 0;
    shuffle(idx, ntr, &seed); /* the same permutation on every rank */
    for (int s = 0; s < steps; s++)
      sum += step(&m, &d, idx + (size_t)s * global, shards, batch, lr, ws,
                  x, y, &loss);
    if (rank == 0)
      printf("epoch %2d  loss %.4f\n", e + 1, sum / steps);
  }

  unsigned long long h = params_hash(&m), lo, hi;
  MPI_Allreduce(&h, &lo, 1, MPI_UNSIGNED_LONG_LONG, MPI_MIN,
                MPI_COMM_WORLD);
  MPI_Allreduce(&h, &hi, 1, MPI_UNSIGNED_LONG_LONG, MPI_MAX,
                MPI_COMM_WORLD);
  if (lo != hi)
    die("the ranks' params differ");
  int status = 0;
  if (rank == 0) {
    if (strcmp(ckpt, "-")) {
      int rc = rlx_save_params(CAT(FWD, _signature)(), ckpt, m.in);
      if (rc) {
        fprintf(stderr, "%s: %s\n", ckpt, rlx_strerror(rc));
        status = 2;
      } else {
        printf("saved %s\n", ckpt);
      }
    }
    double acc = accuracy(&m, &d, idx + ntr, nte, batch, x, y, logits);
    printf("test accuracy: %.2f%% (%d samples)\n", 100 * acc, nte);
    if (!status && acc < min_acc)
      status = 1;
  }
  MPI_Bcast(&status, 1, MPI_INT, 0, MPI_COMM_WORLD);
  free(m.w);
  free(m.g);
  free(m.gshard);
  free(x);
  free(logits);
  free(y);
  rlx_free(ws);
  MPI_Finalize();
  return status;
}
