/* suggest.c: "did you mean" hints for misspelt names (ops, attributes,
 * attribute words, dtypes, graphs, values): the candidate nearest in
 * optimal-string-alignment distance, offered only when it is close
 * enough (suggest_hint). Uses nothing but libc, so every file of ir/
 * and above may ask for a hint. */
#include "ir/ir.h"

#include <stdint.h>
#include <stdio.h>
#include <string.h>

/* Optimal-string-alignment distance (edits, adjacent swaps), capped. */
static int edit_distance(const char *a, const char *b) {
  enum { MAXW = 64 };
  size_t n = strlen(a), m = strlen(b);
  if (n >= MAXW || m >= MAXW) return MAXW;
  int d[MAXW + 1][MAXW + 1];
  for (size_t i = 0; i <= n; i++) d[i][0] = (int)i;
  for (size_t j = 0; j <= m; j++) d[0][j] = (int)j;
  for (size_t i = 1; i <= n; i++)
    for (size_t j = 1; j <= m; j++) {
      int cost = a[i - 1] != b[j - 1];
      int v = d[i - 1][j - 1] + cost;
      if (d[i - 1][j] + 1 < v) v = d[i - 1][j] + 1;
      if (d[i][j - 1] + 1 < v) v = d[i][j - 1] + 1;
      if (i > 1 && j > 1 && a[i - 1] == b[j - 2] && a[i - 2] == b[j - 1] &&
          d[i - 2][j - 2] + 1 < v)
        v = d[i - 2][j - 2] + 1;
      d[i][j] = v;
    }
  return d[n][m];
}

void suggest_init(Suggest *s, const char *word) {
  *s = (Suggest){.word = word, .dist = INT32_MAX};
}

void suggest_add(Suggest *s, const char *cand) {
  if (!cand || !strcmp(cand, s->word)) return;
  int d = edit_distance(s->word, cand);
  if (d < s->dist && strlen(cand) < sizeof s->best) {
    s->dist = d;
    strcpy(s->best, cand);
  }
}

const char *suggest_hint(const Suggest *s, const char *prefix, char *buf,
                         size_t n) {
  int len = (int)strlen(s->word), limit = len / 3 > 1 ? len / 3 : 1;
  if (!s->best[0] || s->dist > limit || s->dist >= len) return "";
  snprintf(buf, n, "; did you mean '%s%s'?", prefix, s->best);
  return buf;
}
