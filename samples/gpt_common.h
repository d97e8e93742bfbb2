/* gpt_common.h -- what the GPT drivers share (train_gpt.c, train_gpt2.c):
 * model memory on the CPU or, with -DGPU, on the GPU; a seeded PRNG;
 * a clock; the text loader; GPT-2's initialization of one param.
 * Included once by each driver, after the system headers and the
 * model's header.
 */
#ifndef RLX_SAMPLES_GPT_COMMON_H
#define RLX_SAMPLES_GPT_COMMON_H

/* Model memory: host memory, or GPU memory with -DGPU. put and get copy
 * between it and the host (get waits for the GPU); on the CPU they are
 * memcpy, and nothing when both pointers are the same buffer. */
#ifdef GPU
typedef int (*Entry)(const void *const *, void *const *, void *, void *);
#define STREAM , stream
static void *stream;

static void gpu_ok(int rc, const char *what)
{
  if (rc) {
    fprintf(stderr, "%s: %s %s\n", what, rlx_strerror(rc),
            rc == RLX_ERR_GPU ? rlx_gpu_error() : "");
    exit(2);
  }
}

static void *model_alloc(void *host, size_t bytes)
{
  void *p = NULL;
  (void)host;
  gpu_ok(rlx_gpu_alloc(&p, bytes), "rlx_gpu_alloc");
  gpu_ok(rlx_gpu_zero(p, bytes, stream), "rlx_gpu_zero");
  return p;
}

static void model_free(void *p) { rlx_gpu_free(p); }

static void put(void *dst, const void *src, size_t n)
{
  gpu_ok(rlx_gpu_copy_to_device(dst, src, n, stream), "copy to the GPU");
}

static void get(void *dst, const void *src, size_t n)
{
  gpu_ok(rlx_gpu_copy_to_host(dst, src, n, stream), "copy from the GPU");
  gpu_ok(rlx_gpu_stream_sync(stream), "rlx_gpu_stream_sync");
}

/* `--probe` as the only argument: exit 0 when a GPU is usable, else 1
 * and the reason on stderr. */
static void gpu_probe(int argc, char **argv)
{
  if (argc == 2 && !strcmp(argv[1], "--probe")) {
    int rc = rlx_gpu_init(0);
    if (rc)
      fprintf(stderr, "%s", rlx_gpu_error());
    exit(rc ? 1 : 0);
  }
}
#else
typedef int (*Entry)(const void *const *, void *const *, void *);
#define STREAM

/* The host buffer itself, or (host NULL) a zeroed new one. */
static void *model_alloc(void *host, size_t bytes)
{
  void *p = host ? host : rlx_alloc(bytes);
  if (!p) {
    fprintf(stderr, "out of memory\n");
    exit(2);
  }
  if (!host)
    memset(p, 0, bytes);
  return p;
}

static void model_free(void *p) { rlx_free(p); } /* a model_alloc(NULL) */

static void put(void *dst, const void *src, size_t n)
{
  if (dst != src)
    memcpy(dst, src, n);
}

static void get(void *dst, const void *src, size_t n) { put(dst, src, n); }
#endif

static uint64_t rng_next(uint64_t *s) /* splitmix64 */
{
  uint64_t z = (*s += 0x9e3779b97f4a7c15ull);
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
  return z ^ (z >> 31);
}

static double rng_unit(uint64_t *s) /* [0, 1) */
{
  return (double)(rng_next(s) >> 11) / 9007199254740992.0;
}

static double rng_normal(uint64_t *s) /* Box-Muller */
{
  double r = sqrt(-2 * log(1 - rng_unit(s)));
  return r * cos(6.283185307179586 * rng_unit(s));
}

static double now(void)
{
  struct timespec ts;
  timespec_get(&ts, TIME_UTC);
  return ts.tv_sec + 1e-9 * ts.tv_nsec;
}

static unsigned char *load_text(const char *path, long *n)
{
  FILE *f = fopen(path, "rb");
  unsigned char *buf = NULL;
  if (!f || fseek(f, 0, SEEK_END) || (*n = ftell(f)) < 0 ||
      fseek(f, 0, SEEK_SET) || !(buf = malloc((size_t)*n + 1)) ||
      fread(buf, 1, (size_t)*n, f) != (size_t)*n) {
    perror(path);
    free(buf);
    buf = NULL;
  }
  if (f)
    fclose(f);
  return buf;
}

/* GPT-2's initialization of the param `name` (n elements, rank given)
 * of a model with `layers` blocks: matrices (and wte, wpe) normal(0,
 * 0.02), the output projections wo* and wpr* scaled by 1/sqrt(2
 * layers), layer-norm gammas (ln*g*) 1, betas and biases 0. */
static void gpt_init_param(const char *name, int rank, int layers, float *w,
                           int64_t n, uint64_t *s)
{
  double sd = !strncmp(name, "wo", 2) || !strncmp(name, "wpr", 3)
                  ? 0.02 / sqrt(2.0 * layers) : 0.02;
  int gamma = !strncmp(name, "ln", 2) && name[2] && name[3] == 'g';
  for (int64_t i = 0; i < n; i++)
    w[i] = rank == 2 ? (float)(sd * rng_normal(s)) : gamma ? 1.0f : 0.0f;
}

#endif
