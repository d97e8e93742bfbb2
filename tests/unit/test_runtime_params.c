/* test_runtime_params.c -- CUnit tests of checkpoint I/O (rlxrt.h:
 * rlx_save_params / rlx_load_params / rlx_save_npy / rlx_load_npy).
 *
 * - Files written by NumPy and a safetensors file written from the
 *   format's description (tests/tools/gen_params_data.py, committed in
 *   tests/unit/data/params) load with the expected values.
 * - Files written here are read back by NumPy (tests/tools/check_npy.py,
 *   run through python3) and by the loaders, for every dtype each
 *   format has; the dtypes a format lacks are refused.
 * - Malformed input never reads out of bounds and returns an error:
 *   every truncation of valid files, headers that lie about their
 *   length, wrong dtypes and shapes, huge shapes, offsets outside the
 *   file, duplicate and missing tensors, Fortran order, bad JSON.
 * - A save that fails (a dtype the format lacks, a bad name or shape,
 *   a write cut short by RLIMIT_FSIZE in a forked child) leaves the
 *   previous checkpoint as it was, loadable, and no temporary behind;
 *   for all three forms (safetensors, .npy directory, one .npy).
 * - Names and metadata strings have no length limit (300 and 3000
 *   characters; tests/unit/data/params/long.safetensors, written by
 *   Python); non-ASCII names round trip; a directory is RLX_ERR_IO; a
 *   param without a name or buffer is RLX_ERR_INVALID, never read.
 */
#include <CUnit/Basic.h>
#include <dirent.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "runtime/rlxrt.h"

#ifndef PARAMS_DATA
#error "PARAMS_DATA (tests/unit/data/params) must be defined"
#endif

static char tmpdir[64];

/* TMPDIR/name, in one of 8 rotating buffers (a few live at once). */
static const char *tmp_path(const char *name)
{
  static char buf[8][256];
  static int next;
  char *b = buf[next++ % 8];
  snprintf(b, sizeof buf[0], "%s/%s", tmpdir, name);
  return b;
}

static const int64_t d23[] = {2, 3}, d3[] = {3}, d4[] = {4}, d2[] = {2};

/* A signature: input x, params w [2, 3] and b [3], input y. */
static const rlx_tensor_desc sig_in[] = {
  {"x", RLX_DT_F32, 1, d4, RLX_ARG_INPUT},
  {"w", RLX_DT_F32, 2, d23, RLX_ARG_PARAM},
  {"b", RLX_DT_F32, 1, d3, RLX_ARG_PARAM},
  {"y", RLX_DT_I32, 1, d4, RLX_ARG_INPUT},
};
static const rlx_signature sig = {"m", 4, 0, sig_in, NULL, 0};

static void test_numpy_files(void)
{
  float w[6], b[3];
  int64_t n[4];
  double s;
  uint16_t h[2];
  rlx_tensor_desc dn = {"n", RLX_DT_I64, 1, d4, RLX_ARG_PARAM};
  rlx_tensor_desc ds = {"s", RLX_DT_F64, 0, NULL, RLX_ARG_PARAM};
  rlx_tensor_desc dh = {"h", RLX_DT_F16, 1, d2, RLX_ARG_PARAM};
  CU_ASSERT_EQUAL(rlx_load_npy(PARAMS_DATA "/n.npy", &dn, n), RLX_OK);
  CU_ASSERT(n[0] == 1 && n[1] == -2 && n[2] == 3 && n[3] == -4);
  CU_ASSERT_EQUAL(rlx_load_npy(PARAMS_DATA "/s.npy", &ds, &s), RLX_OK);
  CU_ASSERT_EQUAL(s, 3.5);
  CU_ASSERT_EQUAL(rlx_load_npy(PARAMS_DATA "/h.npy", &dh, h), RLX_OK);
  CU_ASSERT(h[0] == 0x3e00 && h[1] == 0xc000); /* 1.5, -2 in f16 */
  /* the directory form: w.npy and b.npy by param name */
  void *in[4] = {NULL, w, b, NULL};
  CU_ASSERT_EQUAL(rlx_load_params(&sig, PARAMS_DATA, in), RLX_OK);
  for (int i = 0; i < 6; i++)
    CU_ASSERT_EQUAL(w[i], i / 2.0f - 1);
  CU_ASSERT(b[0] == 0.25f && b[1] == -0.5f && b[2] == 2.0f);
  memset(w, 0, sizeof w);
  memset(b, 0, sizeof b);
  CU_ASSERT_EQUAL(
      rlx_load_params(&sig, PARAMS_DATA "/ckpt.safetensors", in), RLX_OK);
  for (int i = 0; i < 6; i++)
    CU_ASSERT_EQUAL(w[i], i / 2.0f - 1);
  CU_ASSERT(b[0] == 0.25f && b[1] == -0.5f && b[2] == 2.0f);
  /* a wrong shape or dtype in the signature */
  rlx_tensor_desc bad = {"w", RLX_DT_F32, 1, d3, RLX_ARG_PARAM};
  CU_ASSERT_EQUAL(rlx_load_npy(PARAMS_DATA "/w.npy", &bad, w),
                  RLX_ERR_FORMAT);
  bad = (rlx_tensor_desc){"w", RLX_DT_I32, 2, d23, RLX_ARG_PARAM};
  CU_ASSERT_EQUAL(rlx_load_npy(PARAMS_DATA "/w.npy", &bad, w),
                  RLX_ERR_FORMAT);
  CU_ASSERT_EQUAL(rlx_load_npy(PARAMS_DATA "/none.npy", &bad, w),
                  RLX_ERR_IO);
}

/* Every dtype through .npy (and safetensors where it exists), values
 * checked by NumPy in check_npy.py and by the loaders here. */
static void test_round_trip(void)
{
  static const int dts[] = {RLX_DT_F32, RLX_DT_F64,  RLX_DT_F16,
                            RLX_DT_I8,  RLX_DT_U8,   RLX_DT_I32,
                            RLX_DT_I64, RLX_DT_BOOL, RLX_DT_C64};
  unsigned char data[64], back[64];
  for (int i = 0; i < 64; i++)
    data[i] = (unsigned char)(i * 37 % 2); /* valid bools, small ints */
  const char *names[] = {"f32", "f64", "f16", "i8", "u8",
                         "i32", "i64", "bool", "c64"};
  for (size_t k = 0; k < sizeof dts / sizeof dts[0]; k++) {
    rlx_tensor_desc d = {names[k], dts[k], 2, d23, RLX_ARG_PARAM};
    char file[32];
    snprintf(file, sizeof file, "%s.npy", names[k]);
    CU_ASSERT_EQUAL(rlx_save_npy(tmp_path(file), &d, data), RLX_OK);
    memset(back, 0xAA, sizeof back);
    CU_ASSERT_EQUAL(rlx_load_npy(tmp_path(file), &d, back), RLX_OK);
    CU_ASSERT(!memcmp(back, data, 6 * rlx_dtype_size(dts[k])));
  }
  rlx_tensor_desc bf = {"bf", RLX_DT_BF16, 1, d2, RLX_ARG_PARAM};
  CU_ASSERT_EQUAL(rlx_save_npy(tmp_path("bf.npy"), &bf, data),
                  RLX_ERR_FORMAT);
  char cmd[512];
  /* Debian's python3 has NumPy; another one first on PATH may not */
  snprintf(cmd, sizeof cmd, "%s %s %s",
           access("/usr/bin/python3", X_OK) == 0 ? "/usr/bin/python3"
                                                 : "python3",
           CHECK_NPY, tmpdir);
  CU_ASSERT_EQUAL(system(cmd), 0);

  /* safetensors: every dtype it has, one file */
  static const int sdts[] = {RLX_DT_F32, RLX_DT_F64, RLX_DT_F16,
                             RLX_DT_BF16, RLX_DT_I8, RLX_DT_U8,
                             RLX_DT_I32, RLX_DT_I64, RLX_DT_BOOL};
  rlx_tensor_desc sd[9];
  const void *in[9];
  void *out[9];
  unsigned char bufs[9][64];
  for (int k = 0; k < 9; k++) {
    sd[k] = (rlx_tensor_desc){names[k < 3 ? k : k - 1], sdts[k], 2, d23,
                              RLX_ARG_PARAM};
    in[k] = data;
    out[k] = bufs[k];
  }
  sd[3].name = "bf16";
  rlx_signature s = {"all", 9, 0, sd, NULL, 0};
  const char *st = tmp_path("all.safetensors");
  CU_ASSERT_EQUAL(rlx_save_params(&s, st, in), RLX_OK);
  CU_ASSERT_EQUAL(rlx_load_params(&s, st, out), RLX_OK);
  for (int k = 0; k < 9; k++)
    CU_ASSERT(!memcmp(bufs[k], data, 6 * rlx_dtype_size(sdts[k])));
  rlx_tensor_desc c = {"c", RLX_DT_C64, 1, d2, RLX_ARG_PARAM};
  rlx_signature sc = {"c", 1, 0, &c, NULL, 0};
  CU_ASSERT_EQUAL(rlx_save_params(&sc, st, in), RLX_ERR_FORMAT);

  /* the directory form, and a missing param */
  float w[6] = {1, 2, 3, 4, 5, 6}, b[3] = {7, 8, 9}, w2[6], b2[3];
  const void *pin[4] = {NULL, w, b, NULL};
  void *pout[4] = {NULL, w2, b2, NULL};
  const char *dir = tmp_path("ckdir");
  CU_ASSERT_EQUAL(rlx_save_params(&sig, dir, pin), RLX_OK);
  CU_ASSERT_EQUAL(rlx_load_params(&sig, dir, pout), RLX_OK);
  CU_ASSERT(!memcmp(w, w2, sizeof w) && !memcmp(b, b2, sizeof b));
  CU_ASSERT_EQUAL(rlx_load_params(&sig, tmp_path("f32.npy"), pout),
                  RLX_ERR_IO); /* not a directory */
  /* c64 is not in the file (safetensors has no such dtype) */
  CU_ASSERT_EQUAL(rlx_load_params(&sc, st, out), RLX_ERR_FORMAT);
}

static void put(const char *path, const void *p, size_t n)
{
  FILE *f = fopen(path, "wb");
  CU_ASSERT_FATAL(f != NULL);
  CU_ASSERT(fwrite(p, 1, n, f) == n);
  fclose(f);
}

static size_t slurp(const char *path, unsigned char *buf, size_t cap)
{
  FILE *f = fopen(path, "rb");
  CU_ASSERT_FATAL(f != NULL);
  size_t n = fread(buf, 1, cap, f);
  fclose(f);
  return n;
}

/* A safetensors file from a header text and n data bytes. */
static int load_st(const char *json, size_t data_bytes)
{
  unsigned char buf[1024] = {0};
  size_t h = strlen(json);
  for (int i = 0; i < 8; i++)
    buf[i] = (unsigned char)((uint64_t)h >> (8 * i));
  memcpy(buf + 8, json, h);
  put(tmp_path("m.safetensors"), buf, 8 + h + data_bytes);
  float w[6], b[3];
  void *in[4] = {NULL, w, b, NULL};
  return rlx_load_params(&sig, tmp_path("m.safetensors"), in);
}

static void test_malformed(void)
{
  unsigned char good[4096], cut[4096];
  float w[6], b[3];
  void *in[4] = {NULL, w, b, NULL};
  /* every truncation of a valid file fails */
  size_t n = slurp(PARAMS_DATA "/ckpt.safetensors", good, sizeof good);
  for (size_t k = 0; k < n; k++) {
    memcpy(cut, good, k);
    put(tmp_path("t.safetensors"), cut, k);
    CU_ASSERT_NOT_EQUAL(rlx_load_params(&sig, tmp_path("t.safetensors"),
                                        in), RLX_OK);
  }
  rlx_tensor_desc dw = {"w", RLX_DT_F32, 2, d23, RLX_ARG_PARAM};
  n = slurp(PARAMS_DATA "/w.npy", good, sizeof good);
  for (size_t k = 0; k < n; k++) {
    put(tmp_path("t.npy"), good, k);
    CU_ASSERT_NOT_EQUAL(rlx_load_npy(tmp_path("t.npy"), &dw, w), RLX_OK);
  }
  /* a header length past the end of the file, and a huge one */
  memcpy(cut, good, n);
  cut[8] = 0xff;
  cut[9] = 0x7f;
  put(tmp_path("t.npy"), cut, n);
  CU_ASSERT_EQUAL(rlx_load_npy(tmp_path("t.npy"), &dw, w), RLX_ERR_FORMAT);
  unsigned char huge[16] = {0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x7f,
                            '{', '}'};
  put(tmp_path("h.safetensors"), huge, 10);
  CU_ASSERT_EQUAL(rlx_load_params(&sig, tmp_path("h.safetensors"), in),
                  RLX_ERR_FORMAT);
  /* .npy headers */
  static const char *const bad_npy[] = {
      "{'descr': '<f4', 'fortran_order': True, 'shape': (2, 3), }",
      "{'descr': '>f4', 'fortran_order': False, 'shape': (2, 3), }",
      "{'descr': '<f4', 'fortran_order': False, 'shape': (3, 2), }",
      "{'descr': '<f4', 'fortran_order': False, 'shape': (6,), }",
      "{'descr': '<f4', 'fortran_order': False, "
      "'shape': (99999999999999999999, 3), }",
      "{'descr': '<f4', 'descr': '<f4', 'fortran_order': False, "
      "'shape': (2, 3), }",
      "{'descr': '<f4', 'shape': (2, 3), }",
      "{'descr': '<f4', 'fortran_order': False, 'shape': (2, 3",
      "{'descr': '<f4\\', 'fortran_order': False, 'shape': (2, 3), }",
      "",
  };
  for (size_t k = 0; k < sizeof bad_npy / sizeof bad_npy[0]; k++) {
    size_t h = strlen(bad_npy[k]);
    memcpy(cut, "\x93NUMPY\x01\x00", 8);
    cut[8] = (unsigned char)h;
    cut[9] = 0;
    memcpy(cut + 10, bad_npy[k], h);
    memset(cut + 10 + h, 0, 24);
    put(tmp_path("t.npy"), cut, 10 + h + 24);
    CU_ASSERT_EQUAL(rlx_load_npy(tmp_path("t.npy"), &dw, w), RLX_ERR_FORMAT);
  }
  /* safetensors headers (w is 24 bytes, b 12) */
  static const char *const bad_st[] = {
      "{\"w\":{\"dtype\":\"F64\",\"shape\":[2,3],\"data_offsets\":[0,24]},"
      "\"b\":{\"dtype\":\"F32\",\"shape\":[3],\"data_offsets\":[24,36]}}",
      "{\"w\":{\"dtype\":\"F32\",\"shape\":[3,2],\"data_offsets\":[0,24]},"
      "\"b\":{\"dtype\":\"F32\",\"shape\":[3],\"data_offsets\":[24,36]}}",
      "{\"w\":{\"dtype\":\"F32\",\"shape\":[2,3],\"data_offsets\":[0,24]},"
      "\"b\":{\"dtype\":\"F32\",\"shape\":[3],\"data_offsets\":[24,99]}}",
      "{\"w\":{\"dtype\":\"F32\",\"shape\":[2,3],\"data_offsets\":[9,3]},"
      "\"b\":{\"dtype\":\"F32\",\"shape\":[3],\"data_offsets\":[24,36]}}",
      "{\"w\":{\"dtype\":\"F32\",\"shape\":[2,3],\"data_offsets\":[0,24]}}",
      "{\"w\":{\"dtype\":\"F32\",\"shape\":[2,3],\"data_offsets\":[0,24]},"
      "\"w\":{\"dtype\":\"F32\",\"shape\":[2,3],\"data_offsets\":[0,24]},"
      "\"b\":{\"dtype\":\"F32\",\"shape\":[3],\"data_offsets\":[24,36]}}",
      "{\"w\":{\"dtype\":\"F32\",\"shape\":[99999999999999999999,3],"
      "\"data_offsets\":[0,24]},"
      "\"b\":{\"dtype\":\"F32\",\"shape\":[3],\"data_offsets\":[24,36]}}",
      "{\"w\":{\"dtype\":\"F32\",\"shape\":[2,3],\"data_offsets\":[0,24]},"
      "\"b\":{\"dtype\":\"F32\",\"shape\":[3],\"data_offsets\":[24,36]},}",
      "{\"x\":[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[]]]]]]]]]]]]]]]]]]]]]]"
      "]]]]]]]]]]]]]]]]]]}",
      "{\"w\":{\"dtype\":\"F32\",\"shape\":[2,3],\"data_offsets\":[0,24]},"
      "\"b\":{\"dtype\":\"F32\",\"shape\":[3],\"data_offsets\":[24,36]}} x",
      "{\"\\u12",
  };
  for (size_t k = 0; k < sizeof bad_st / sizeof bad_st[0]; k++)
    CU_ASSERT_EQUAL(load_st(bad_st[k], 36), RLX_ERR_FORMAT);
  /* the good form of the same header loads (escaped key names too) */
  CU_ASSERT_EQUAL(
      load_st("{\"\\u0077\":{\"dtype\":\"F32\",\"shape\":[2,3],"
              "\"data_offsets\":[0,24]},\"b\":{\"dtype\":\"F32\","
              "\"shape\":[3],\"data_offsets\":[24,36]},"
              "\"__metadata__\":{\"k\":\"v\\n\\\"\"}}", 36),
      RLX_OK);
}

/* ------------------- failed saves keep the old file ------------------- */

static int cmp_str(const void *a, const void *b)
{
  return strcmp(*(char *const *)a, *(char *const *)b);
}

/* The names in dir, sorted, separated by spaces (temporaries included). */
static const char *listing(const char *dir)
{
  static char out[1024];
  char *names[32];
  int n = 0;
  DIR *d = opendir(dir);
  CU_ASSERT_FATAL(d != NULL);
  for (struct dirent *e; (e = readdir(d)) && n < 32;)
    if (strcmp(e->d_name, ".") && strcmp(e->d_name, ".."))
      names[n++] = strdup(e->d_name);
  closedir(d);
  qsort(names, (size_t)n, sizeof *names, cmp_str);
  size_t k = 0;
  out[0] = 0;
  for (int i = 0; i < n; i++) {
    k += (size_t)snprintf(out + k, sizeof out - k, "%s%s", i ? " " : "",
                          names[i]);
    free(names[i]);
  }
  return out;
}

/* A fresh directory TMPDIR/name. */
static const char *new_dir(const char *name)
{
  const char *d = tmp_path(name);
  CU_ASSERT_FATAL(mkdir(d, 0777) == 0);
  return d;
}

/* A save, run in a forked child whose files may not grow past limit
 * bytes (SIGXFSZ ignored: the write fails with EFBIG instead). */
typedef struct {
  const rlx_signature *sig; /* rlx_save_params, or NULL: rlx_save_npy */
  const char *path;
  const void *const *in;
  const rlx_tensor_desc *desc;
} SaveJob;

static int run_save(const SaveJob *j)
{
  return j->sig ? rlx_save_params(j->sig, j->path, j->in)
                : rlx_save_npy(j->path, j->desc, j->in[0]);
}

static int save_limited(const SaveJob *j, rlim_t limit)
{
  fflush(NULL);
  pid_t pid = fork();
  CU_ASSERT_FATAL(pid >= 0);
  if (pid == 0) {
    struct rlimit rl = {limit, limit};
    signal(SIGXFSZ, SIG_IGN);
    _exit(setrlimit(RLIMIT_FSIZE, &rl) != 0 ? 100 : run_save(j));
  }
  int st;
  CU_ASSERT_FATAL(waitpid(pid, &st, 0) == pid);
  return WIFEXITED(st) ? WEXITSTATUS(st) : 200;
}

enum { BIG = 4096 }; /* elements: 16 KiB of f32, more than the limit */
static const int64_t dbig[] = {BIG}, dneg[] = {-1};

/* w f32 [2, 3] and big f32 [BIG] hold base + index. */
static float vw[6], vbig[BIG];
static void fill(float base)
{
  for (int i = 0; i < 6; i++)
    vw[i] = base + (float)i;
  for (int i = 0; i < BIG; i++)
    vbig[i] = base + (float)i;
}

/* The checkpoint at path holds w, big as fill(base) made them. */
static void check_ckpt(const rlx_signature *s, const char *path, float base)
{
  static float w[6], big[BIG];
  void *out[2] = {w, big};
  CU_ASSERT_EQUAL_FATAL(rlx_load_params(s, path, out), RLX_OK);
  int same = 1;
  for (int i = 0; i < 6; i++)
    same &= w[i] == base + (float)i;
  for (int i = 0; i < BIG; i++)
    same &= big[i] == base + (float)i;
  CU_ASSERT(same);
}

/* Signatures: the good one, and ones whose second param cannot be
 * saved: bf16 (none in .npy), c64 (none in safetensors), a negative
 * dim, a name with '"'. */
static const rlx_tensor_desc good_in[] = {
  {"w", RLX_DT_F32, 2, d23, RLX_ARG_PARAM},
  {"big", RLX_DT_F32, 1, dbig, RLX_ARG_PARAM},
};
static const rlx_signature good = {"g", 2, 0, good_in, NULL, 0};
static const rlx_tensor_desc bad_in[][2] = {
  {{"w", RLX_DT_F32, 2, d23, RLX_ARG_PARAM},
   {"big", RLX_DT_BF16, 1, dbig, RLX_ARG_PARAM}},
  {{"w", RLX_DT_F32, 2, d23, RLX_ARG_PARAM},
   {"big", RLX_DT_C64, 1, d2, RLX_ARG_PARAM}},
  {{"w", RLX_DT_F32, 2, d23, RLX_ARG_PARAM},
   {"big", RLX_DT_F32, 1, dneg, RLX_ARG_PARAM}},
  {{"w", RLX_DT_F32, 2, d23, RLX_ARG_PARAM},
   {"b\"g", RLX_DT_F32, 1, dbig, RLX_ARG_PARAM}},
};

static void test_failed_save_safetensors(void)
{
  const char *dir = new_dir("st");
  char path[300];
  snprintf(path, sizeof path, "%s/A.safetensors", dir);
  const void *in[2] = {vw, vbig};
  fill(1);
  CU_ASSERT_EQUAL(rlx_save_params(&good, path, in), RLX_OK);
  fill(100);
  static const int want[] = {RLX_OK, RLX_ERR_FORMAT, RLX_ERR_INVALID,
                             RLX_ERR_INVALID};
  for (int k = 1; k < 4; k++) {
    rlx_signature s = {"b", 2, 0, bad_in[k], NULL, 0};
    CU_ASSERT_EQUAL(rlx_save_params(&s, path, in), want[k]);
    check_ckpt(&good, path, 1);
    CU_ASSERT_STRING_EQUAL(listing(dir), "A.safetensors");
  }
  /* a write that fails part-way (after the header, inside big) */
  SaveJob j = {&good, path, in, NULL};
  CU_ASSERT_EQUAL(save_limited(&j, 8192), RLX_ERR_IO);
  check_ckpt(&good, path, 1);
  CU_ASSERT_STRING_EQUAL(listing(dir), "A.safetensors");
  /* the same save without the limit replaces it, keeping its mode */
  CU_ASSERT(chmod(path, 0640) == 0);
  CU_ASSERT_EQUAL(save_limited(&j, RLIM_INFINITY), RLX_OK);
  check_ckpt(&good, path, 100);
  struct stat st;
  CU_ASSERT(stat(path, &st) == 0 && (st.st_mode & 0777) == 0640);
  CU_ASSERT_STRING_EQUAL(listing(dir), "A.safetensors");
  /* over a directory: RLX_ERR_IO, the directory untouched */
  snprintf(path, sizeof path, "%s/D.safetensors", dir);
  CU_ASSERT(mkdir(path, 0777) == 0);
  CU_ASSERT_EQUAL(rlx_save_params(&good, path, in), RLX_ERR_IO);
  CU_ASSERT_STRING_EQUAL(listing(dir), "A.safetensors D.safetensors");
}

static void test_failed_save_npy_dir(void)
{
  const char *root = new_dir("nd"), *dir = tmp_path("nd/ck");
  const void *in[2] = {vw, vbig};
  fill(1);
  CU_ASSERT_EQUAL(rlx_save_params(&good, dir, in), RLX_OK);
  fill(100);
  static const int want[] = {RLX_ERR_FORMAT, RLX_OK, RLX_ERR_INVALID};
  for (int k = 0; k < 3; k += 2) {
    rlx_signature s = {"b", 2, 0, bad_in[k], NULL, 0};
    CU_ASSERT_EQUAL(rlx_save_params(&s, dir, in), want[k]);
    check_ckpt(&good, dir, 1); /* w.npy not replaced either */
    CU_ASSERT_STRING_EQUAL(listing(dir), "big.npy w.npy");
  }
  /* w.npy's temporary is complete when big.npy's fails: none renamed */
  SaveJob j = {&good, dir, in, NULL};
  CU_ASSERT_EQUAL(save_limited(&j, 8192), RLX_ERR_IO);
  check_ckpt(&good, dir, 1);
  CU_ASSERT_STRING_EQUAL(listing(dir), "big.npy w.npy");
  /* a directory that a failed save created is removed again */
  j.path = tmp_path("nd/new");
  CU_ASSERT_EQUAL(save_limited(&j, 8192), RLX_ERR_IO);
  rlx_signature s = {"b", 2, 0, bad_in[0], NULL, 0};
  CU_ASSERT_EQUAL(rlx_save_params(&s, j.path, in), RLX_ERR_FORMAT);
  CU_ASSERT_STRING_EQUAL(listing(root), "ck");
  CU_ASSERT_EQUAL(save_limited(&j, RLIM_INFINITY), RLX_OK);
  check_ckpt(&good, j.path, 100);
  CU_ASSERT_STRING_EQUAL(listing(j.path), "big.npy w.npy");
}

/* The .npy file at path holds big as fill(base) made it. */
static void check_npy(const char *path, float base)
{
  static float back[BIG];
  CU_ASSERT_EQUAL_FATAL(rlx_load_npy(path, &good_in[1], back), RLX_OK);
  int same = 1;
  for (int i = 0; i < BIG; i++)
    same &= back[i] == base + (float)i;
  CU_ASSERT(same);
}

static void test_failed_save_npy(void)
{
  const char *dir = new_dir("n1");
  char path[300];
  snprintf(path, sizeof path, "%s/big.npy", dir);
  const void *in[1] = {vbig};
  fill(1);
  CU_ASSERT_EQUAL(rlx_save_npy(path, &good_in[1], vbig), RLX_OK);
  fill(100);
  for (int k = 0; k < 3; k += 2) {
    CU_ASSERT_EQUAL(rlx_save_npy(path, &bad_in[k][1], vbig),
                    k ? RLX_ERR_INVALID : RLX_ERR_FORMAT);
    check_npy(path, 1);
    CU_ASSERT_STRING_EQUAL(listing(dir), "big.npy");
  }
  SaveJob j = {NULL, path, in, &good_in[1]};
  CU_ASSERT_EQUAL(save_limited(&j, 8192), RLX_ERR_IO);
  check_npy(path, 1);
  CU_ASSERT_STRING_EQUAL(listing(dir), "big.npy");
  CU_ASSERT_EQUAL(save_limited(&j, RLIM_INFINITY), RLX_OK);
  check_npy(path, 100);
  CU_ASSERT_STRING_EQUAL(listing(dir), "big.npy");
}

/* --------------------- long names, directories --------------------- */

/* n characters of c, then tail (malloc'd). */
static char *long_name(size_t n, char c, const char *tail)
{
  char *s = malloc(n + strlen(tail) + 1);
  CU_ASSERT_FATAL(s != NULL);
  memset(s, c, n);
  strcpy(s + n, tail);
  return s;
}

static void test_long_names(void)
{
  /* names of 300 and 3000 characters, and a non-ASCII one, round trip */
  char *n300 = long_name(300, 'a', ""), *n3000 = long_name(3000, 'b', "");
  rlx_tensor_desc d[3] = {{n300, RLX_DT_F32, 2, d23, RLX_ARG_PARAM},
                          {n3000, RLX_DT_F32, 1, d3, RLX_ARG_PARAM},
                          {"\xc3\xa9t\xc3\xa9", RLX_DT_F32, 1, d3,
                           RLX_ARG_PARAM}};
  rlx_signature s = {"l", 3, 0, d, NULL, 0};
  float w[6] = {1, 2, 3, 4, 5, 6}, b[3] = {7, 8, 9}, w2[6], b2[3], e2[3];
  const void *in[3] = {w, b, b};
  void *out[3] = {w2, b2, e2};
  const char *st = tmp_path("long.safetensors");
  CU_ASSERT_EQUAL(rlx_save_params(&s, st, in), RLX_OK);
  CU_ASSERT_EQUAL(rlx_load_params(&s, st, out), RLX_OK);
  CU_ASSERT(!memcmp(w, w2, sizeof w) && !memcmp(b, b2, sizeof b) &&
            !memcmp(b, e2, sizeof b));
  free(n300);
  free(n3000);
  /* a metadata value of 300+ characters (escapes too) is skipped */
  char *v = long_name(300, 'm', "\\u00e9\\n"), json[1024];
  snprintf(json, sizeof json, "{\"__metadata__\":{\"format\":\"%s\"},"
           "\"w\":{\"dtype\":\"F32\",\"shape\":[2,3],\"data_offsets\":"
           "[0,24]},\"b\":{\"dtype\":\"F32\",\"shape\":[3],\"data_offsets\""
           ":[24,36]}}", v);
  free(v);
  CU_ASSERT_EQUAL(load_st(json, 36), RLX_OK);
}

/* Written by gen_params_data.py (json.dumps escapes the non-ASCII
 * characters, the emoji as a surrogate pair). */
static void test_long_fixture(void)
{
  char *nm = long_name(300, 'p', "\xc3\xa9\xe2\x82\xac\xf0\x9f\x98\x80");
  static const int64_t d5[] = {5};
  rlx_tensor_desc d[4] = {{"w", RLX_DT_F32, 2, d23, RLX_ARG_PARAM},
                          {"b", RLX_DT_F32, 1, d3, RLX_ARG_PARAM},
                          {"n", RLX_DT_I64, 1, d4, RLX_ARG_PARAM},
                          {nm, RLX_DT_U8, 1, d5, RLX_ARG_PARAM}};
  rlx_signature s = {"f", 4, 0, d, NULL, 0};
  float w[6], b[3];
  int64_t n[4];
  uint8_t u[5];
  void *out[4] = {w, b, n, u};
  CU_ASSERT_EQUAL(
      rlx_load_params(&s, PARAMS_DATA "/long.safetensors", out), RLX_OK);
  for (int i = 0; i < 6; i++)
    CU_ASSERT_EQUAL(w[i], i / 2.0f - 1);
  CU_ASSERT(b[0] == 0.25f && b[1] == -0.5f && b[2] == 2.0f);
  CU_ASSERT(n[0] == 1 && n[1] == -2 && n[2] == 3 && n[3] == -4);
  CU_ASSERT(u[0] == 1 && u[1] == 2 && u[2] == 3 && u[3] == 4 && u[4] == 5);
  free(nm);
}

static void test_not_a_file(void)
{
  float w[6], b[3];
  void *in[4] = {NULL, w, b, NULL};
  rlx_tensor_desc dw = {"w", RLX_DT_F32, 2, d23, RLX_ARG_PARAM};
  CU_ASSERT(mkdir(tmp_path("x.safetensors"), 0777) == 0);
  CU_ASSERT(mkdir(tmp_path("x.npy"), 0777) == 0);
  CU_ASSERT_EQUAL(rlx_load_params(&sig, tmp_path("x.safetensors"), in),
                  RLX_ERR_IO);
  CU_ASSERT_EQUAL(rlx_load_npy(tmp_path("x.npy"), &dw, w), RLX_ERR_IO);
  CU_ASSERT_EQUAL(rlx_load_params(&sig, tmp_path("none.safetensors"), in),
                  RLX_ERR_IO);
}

/* A param without a buffer or a name is refused, not dereferenced. */
static void test_null_slots(void)
{
  float w[6] = {0}, b[3] = {0};
  const void *in[4] = {NULL, w, NULL, NULL};
  void *out[4] = {NULL, w, NULL, NULL};
  const char *st = tmp_path("null.safetensors");
  CU_ASSERT_EQUAL(rlx_save_params(&sig, st, in), RLX_ERR_INVALID);
  CU_ASSERT_EQUAL(rlx_save_params(&sig, tmp_path("nulldir"), in),
                  RLX_ERR_INVALID);
  CU_ASSERT(access(st, F_OK) != 0 && access(tmp_path("nulldir"), F_OK) != 0);
  in[2] = b;
  CU_ASSERT_EQUAL(rlx_save_params(&sig, st, in), RLX_OK);
  CU_ASSERT_EQUAL(rlx_load_params(&sig, st, out), RLX_ERR_INVALID);
  rlx_tensor_desc d = {NULL, RLX_DT_F32, 1, d3, RLX_ARG_PARAM};
  rlx_signature s = {"n", 1, 0, &d, NULL, 0};
  CU_ASSERT_EQUAL(rlx_save_params(&s, st, in + 2), RLX_ERR_INVALID);
}

int main(void)
{
  snprintf(tmpdir, sizeof tmpdir, "/tmp/rlx_params_XXXXXX");
  if (!mkdtemp(tmpdir))
    return 1;
  if (CU_initialize_registry() != CUE_SUCCESS)
    return 1;
  CU_pSuite s = CU_add_suite("runtime_params", NULL, NULL);
  CU_add_test(s, "numpy_files", test_numpy_files);
  CU_add_test(s, "round_trip", test_round_trip);
  CU_add_test(s, "malformed", test_malformed);
  CU_add_test(s, "failed_save_safetensors", test_failed_save_safetensors);
  CU_add_test(s, "failed_save_npy_dir", test_failed_save_npy_dir);
  CU_add_test(s, "failed_save_npy", test_failed_save_npy);
  CU_add_test(s, "long_names", test_long_names);
  CU_add_test(s, "long_fixture", test_long_fixture);
  CU_add_test(s, "not_a_file", test_not_a_file);
  CU_add_test(s, "null_slots", test_null_slots);
  CU_basic_set_mode(CU_BRM_VERBOSE);
  CU_basic_run_tests();
  unsigned fails = CU_get_number_of_failures();
  CU_cleanup_registry();
  char cmd[128];
  snprintf(cmd, sizeof cmd, "rm -rf %s", tmpdir);
  if (system(cmd) != 0)
    fails++;
  return fails != 0;
}
