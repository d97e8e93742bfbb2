/* test_bpe.c: GPT-2's byte-level BPE tokenizer (samples/bpe.c).
 *
 * The ids of the GPL-3 text (samples/data/gpl-3.txt.gz) and of the hard
 * cases of tests/unit/data/bpe/hard.txt (contractions, digits,
 * punctuation runs, whitespace runs, accents, CJK, emoji, combining
 * marks, bytes that are not UTF-8) equal those of GPT-2's encoder.py
 * (tests/unit/test_bpe_gen.py writes them, checked against Node's
 * Encoder.js where that port agrees with GPT-2), and so do those of
 * pseudo-random bytes and the id counts of runs of one byte 100,000
 * long; decode(encode(x)) == x for all of them; the count past cap, <|endoftext|>, ids out of range, and vocabulary
 * files that are missing or malformed. BPE_DIR holds vocab.bpe and
 * gpl-3.txt, gunzipped by CMake.
 */
#include "bpe.h"

#include <CUnit/Basic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static Bpe *bpe;

/* The whole file at path, its size in *n (aborts the test if absent). */
static unsigned char *slurp(const char *path, size_t *n) {
  FILE *f = fopen(path, "rb");
  CU_ASSERT_PTR_NOT_NULL_FATAL(f);
  fseek(f, 0, SEEK_END);
  *n = (size_t)ftell(f);
  rewind(f);
  unsigned char *buf = malloc(*n + 1);
  CU_ASSERT_EQUAL_FATAL(fread(buf, 1, *n, f), *n);
  fclose(f);
  buf[*n] = 0;
  return buf;
}

/* decode(encode(s[0..n))) == s, and the ids (their count in *m). */
static int32_t *round_trip(const unsigned char *s, size_t n, size_t *m) {
  int32_t *ids = malloc((n + 1) * sizeof *ids); /* at most one a byte */
  *m = bpe_encode(bpe, s, n, ids, n + 1);
  CU_ASSERT_FATAL(*m <= n);
  unsigned char *back = malloc(n + 1);
  CU_ASSERT_EQUAL(bpe_decode(bpe, ids, *m, back, n + 1), n);
  CU_ASSERT(memcmp(back, s, n) == 0);
  free(back);
  return ids;
}

/* Encode s[0..n) and compare with the golden ids in the file golden. */
static void check_ids(const unsigned char *s, size_t n, const char *golden) {
  size_t gn, m;
  char *g = (char *)slurp(golden, &gn);
  int32_t *ids = round_trip(s, n, &m);
  size_t k = 0, bad = 0;
  for (char *p = strtok(g, "\n"); p; p = strtok(NULL, "\n"), k++)
    if (k >= m || ids[k] != atoi(p)) bad++;
  CU_ASSERT_EQUAL(k, m);
  CU_ASSERT_EQUAL(bad, 0);
  if (bad || k != m)
    printf("\n%s: %zu ids, golden %zu, %zu differ\n", golden, m, k, bad);
  free(ids);
  free(g);
}

/* The same for the text of the file text. */
static void check_file(const char *text, const char *golden) {
  size_t n;
  unsigned char *s = slurp(text, &n);
  check_ids(s, n, golden);
  free(s);
}

static void test_gpl(void) {
  check_file(BPE_DIR "/gpl-3.txt", BPE_DATA "/gpl-3.ids");
}

static void test_hard(void) {
  check_file(BPE_DATA "/hard.txt", BPE_DATA "/hard.ids");
}

/* 8,192 pseudo-random bytes (mostly not UTF-8) give the golden ids;
   runs of one byte 100,000 long (one piece each: the merge heap's
   scratch grows) give the golden counts; all round trip. */
static void test_random_and_runs(void) {
  size_t n = 8192, m, gn;
  unsigned char *s = malloc(n);
  uint32_t x = 12345;
  for (size_t i = 0; i < n; i++) {
    x = x * 1664525u + 1013904223u;
    s[i] = (unsigned char)(x >> 24);
  }
  check_ids(s, n, BPE_DATA "/random.ids");
  free(s);
  char *g = (char *)slurp(BPE_DATA "/runs.ids", &gn), *p = strtok(g, "\n");
  for (const char *c = " a7!\n"; *c; c++, p = strtok(NULL, "\n")) {
    CU_ASSERT_PTR_NOT_NULL_FATAL(p);
    unsigned char *r = malloc(100000);
    memset(r, *c, 100000);
    free(round_trip(r, 100000, &m));
    CU_ASSERT_EQUAL(m, (size_t)atol(p));
    free(r);
  }
  free(g);
}

/* Only cap ids or bytes are written; the whole count is returned. */
static void test_cap(void) {
  const unsigned char text[] = "Hello world, it's 2026!";
  int32_t ids[16], few[3] = {-7, -7, -7};
  size_t m = bpe_encode(bpe, text, sizeof text - 1, ids, 16);
  CU_ASSERT_EQUAL(m, 8); /* Hello| world|,| it|'s| 2026|!: 2026 = 20|26 */
  const int32_t want[] = {15496, 995, 11, 340, 338, 1160, 2075, 0};
  CU_ASSERT(memcmp(ids, want, sizeof want) == 0);
  CU_ASSERT_EQUAL(bpe_encode(bpe, text, sizeof text - 1, few, 2), 8);
  CU_ASSERT(few[0] == 15496 && few[1] == 995 && few[2] == -7);
  unsigned char out[8] = "xxxxxxxx";
  CU_ASSERT_EQUAL(bpe_decode(bpe, ids, m, out, 4), sizeof text - 1);
  CU_ASSERT(memcmp(out, "Hellxxxx", 8) == 0);
  CU_ASSERT_EQUAL(bpe_encode(bpe, text, 0, ids, 16), 0);
}

/* <|endoftext|> decodes to its text, bad ids to U+FFFD. */
static void test_special(void) {
  int32_t ids[] = {BPE_EOT, -1, 50257, 0};
  unsigned char out[32];
  size_t n = bpe_decode(bpe, ids, 4, out, sizeof out);
  CU_ASSERT_EQUAL(n, 13 + 3 + 3 + 1);
  CU_ASSERT(memcmp(out, "<|endoftext|>\xef\xbf\xbd\xef\xbf\xbd!", n) == 0);
}

/* Missing or malformed vocabulary files: NULL and a message. */
static void test_load_errors(void) {
  char err[256] = "";
  CU_ASSERT_PTR_NULL(bpe_load(BPE_DIR "/absent.bpe", err, sizeof err));
  CU_ASSERT_PTR_NOT_NULL(strstr(err, "cannot read"));
  static const char *bad[][2] = {
      {"#version: 0.2\n\xc4\xa0 t\n", "fewer than 50000 merges"},
      {"#version: 0.2\nt\n", "not a merge"},
      {"#version: 0.2\n\xc4\xa0 t x\n", "not a merge"},
      {"#version: 0.2\n\xc4\xa0 \xc3\xa0\xc3\n", "byte alphabet"},
      {"#version: 0.2\n\xc4\xa0 \x01\n", "byte alphabet"},
      {"#version: 0.2\nab c\n", "no earlier line"},
      {"#version: 0.2\na b\nab c\nab c\n", "an earlier line makes"},
  };
  for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
    const char *path = BPE_DIR "/bad.bpe";
    FILE *f = fopen(path, "wb");
    CU_ASSERT_PTR_NOT_NULL_FATAL(f);
    fputs(bad[i][0], f);
    fclose(f);
    err[0] = 0;
    CU_ASSERT_PTR_NULL(bpe_load(path, err, sizeof err));
    CU_ASSERT_PTR_NOT_NULL(strstr(err, bad[i][1]));
    if (!strstr(err, bad[i][1])) printf("\ncase %zu: %s\n", i, err);
  }
}

int main(void) {
  char err[256];
  bpe = bpe_load(BPE_DIR "/vocab.bpe", err, sizeof err);
  if (!bpe) {
    fprintf(stderr, "%s\n", err);
    return 1;
  }
  if (CU_initialize_registry() != CUE_SUCCESS) return 1;
  CU_pSuite s = CU_add_suite("bpe", NULL, NULL);
  CU_add_test(s, "gpl", test_gpl);
  CU_add_test(s, "hard", test_hard);
  CU_add_test(s, "random_and_runs", test_random_and_runs);
  CU_add_test(s, "cap", test_cap);
  CU_add_test(s, "special", test_special);
  CU_add_test(s, "load_errors", test_load_errors);
  CU_basic_set_mode(CU_BRM_VERBOSE);
  CU_basic_run_tests();
  unsigned fails = CU_get_number_of_failures();
  CU_cleanup_registry();
  bpe_free(bpe);
  return fails ? 1 : 0;
}
