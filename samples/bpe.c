/* bpe.c -- GPT-2's byte-level BPE tokenizer: the same ids as OpenAI's
 * encoder.py (GPT-2, MIT licence) for any bytes.
 *
 * Vocabulary: vocab.bpe (samples/data/gpt2-vocab.bpe.gz, gunzipped), a
 * "#version" line then 50,000 merges "A B", each half spelt in GPT-2's
 * byte-to-unicode alphabet (bytes_to_unicode: every byte a printable
 * character). Ids 0..255 are the 256 bytes in that alphabet's order, id
 * 256+i is merge i (A then B), 50256 is <|endoftext|>; this is exactly
 * GPT-2's encoder.json (checked by samples/gen_bpe_data.py). Every merge
 * must join two earlier ids, so a merge only makes pairs of later rank.
 *
 * Encoding: the text is cut into pieces by GPT-2's regex
 *   's|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)|\s+
 * over code points (the first alternative that matches, each greedy),
 * with \p{L}, \p{N} and \s from samples/bpe_unicode.h (Unicode 14.0;
 * code points unassigned there are neither). Bytes that are not part of
 * well-formed UTF-8 (stray continuation bytes, overlong forms,
 * surrogates, past U+10FFFF, truncated sequences) each count as one code
 * point outside the three classes, so they join punctuation runs; this
 * is encoder.py on the text decoded with Python's "surrogateescape"
 * (each such byte a lone surrogate U+DC80..U+DCFF, category Cs) and
 * encoded back the same way, and it keeps decode(encode(x)) == x for any
 * bytes. Each piece's bytes are then merged: the adjacent pair of lowest
 * rank first, equal pairs left to right, until no pair is a merge (a
 * heap of (rank, position) over a linked list, in scratch of 36 bytes
 * a byte of the longest piece: bpe_encode returns SIZE_MAX when that
 * allocation fails). <|endoftext|> in the text is plain text, as in
 * encoder.py: append BPE_EOT yourself.
 * Decoding: each id's bytes; an id outside 0..50256 decodes to U+FFFD.
 * Tests: unit.test_bpe (tests/unit/test_bpe.c); data and speed:
 * samples/data/README.md.
 */
#include "bpe.h"
#include "bpe_unicode.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define NTOKENS (BPE_EOT + 1)
#define MAPBITS 17 /* hash slots: 2^17 > 2 x the 50,000 pairs */

struct Bpe {
  uint32_t off[NTOKENS + 1];       /* token t: bytes[off[t], off[t+1]) */
  unsigned char *bytes;
  uint8_t byte_id[256];            /* byte -> its id */
  uint64_t pair_key[1 << MAPBITS]; /* (a << 32 | b) + 1; 0: empty slot */
  int32_t pair_id[1 << MAPBITS];   /* -> the merged id 256 + rank */
};

enum { OTHER, LETTER, NUMBER, SPACE };

/* The first slot to probe for hash h in a table of 2^MAPBITS slots. */
static size_t slot(uint64_t h) {
  return (size_t)((h * 0x9e3779b97f4a7c15ull) >> (64 - MAPBITS));
}

/* The slot of the pair of ids (x, y) in the pair map, or its empty slot
   (pair_key 0) where it would go; *key is its key. */
static size_t pair_slot(const Bpe *b, int32_t x, int32_t y, uint64_t *key) {
  *key = ((uint64_t)x << 32 | (uint32_t)y) + 1;
  size_t s = slot(*key);
  while (b->pair_key[s] && b->pair_key[s] != *key)
    s = (s + 1) & (((size_t)1 << MAPBITS) - 1);
  return s;
}

/* The merged id of the pair (x, y), or -1. */
static int32_t pair_lookup(const Bpe *b, int32_t x, int32_t y) {
  uint64_t key;
  size_t s = pair_slot(b, x, y, &key);
  return b->pair_key[s] ? b->pair_id[s] : -1;
}

/* Whether c lies in one of the n sorted inclusive ranges r. */
static int in_ranges(const uint32_t (*r)[2], size_t n, uint32_t c) {
  size_t lo = 0, hi = n;
  while (lo < hi) {
    size_t mid = (lo + hi) / 2;
    if (c < r[mid][0]) hi = mid;
    else if (c > r[mid][1]) lo = mid + 1;
    else return 1;
  }
  return 0;
}

#define NRANGES(t) (sizeof t / sizeof t[0])

/* The class of code point c. */
static int cp_class(uint32_t c) {
  if (in_ranges(bpe_letter, NRANGES(bpe_letter), c)) return LETTER;
  if (in_ranges(bpe_number, NRANGES(bpe_number), c)) return NUMBER;
  if (in_ranges(bpe_space, NRANGES(bpe_space), c)) return SPACE;
  return OTHER;
}

/* Decode the well-formed UTF-8 sequence at s[0..n) (n >= 1) into *c and
   return its length, or 0 when s[0] starts none. */
static size_t utf8(const unsigned char *s, size_t n, uint32_t *c) {
  unsigned char b = s[0];
  size_t len = b < 0x80 ? 1 : b < 0xc2 ? 0 : b < 0xe0 ? 2 : b < 0xf0 ? 3
             : b < 0xf5 ? 4 : 0;
  if (len == 0 || len > n) return 0;
  uint32_t v = len == 1 ? b : b & (0x7f >> len);
  for (size_t k = 1; k < len; k++) {
    if ((s[k] & 0xc0) != 0x80) return 0;
    v = v << 6 | (s[k] & 0x3f);
  }
  static const uint32_t least[5] = {0, 0, 0x80, 0x800, 0x10000};
  if (v < least[len] || v > 0x10ffff || (v >= 0xd800 && v <= 0xdfff))
    return 0;
  *c = v;
  return len;
}

/* The class of the code point at s[i] (i < n) and its length in *len;
   a byte outside well-formed UTF-8 is one OTHER. */
static int class_at(const unsigned char *s, size_t n, size_t i, size_t *len) {
  static const unsigned char ascii[128] = {
      ['\t'] = SPACE, ['\n'] = SPACE, ['\v'] = SPACE, ['\f'] = SPACE,
      ['\r'] = SPACE, [' '] = SPACE,
      ['0'] = NUMBER, ['1'] = NUMBER, ['2'] = NUMBER, ['3'] = NUMBER,
      ['4'] = NUMBER, ['5'] = NUMBER, ['6'] = NUMBER, ['7'] = NUMBER,
      ['8'] = NUMBER, ['9'] = NUMBER};
  uint32_t c;
  if (s[i] < 0x80) {
    *len = 1;
    c = s[i];
    return (c | 0x20) >= 'a' && (c | 0x20) <= 'z' ? LETTER : ascii[c];
  }
  *len = utf8(s + i, n - i, &c);
  if (*len == 0) {
    *len = 1;
    return OTHER;
  }
  return cp_class(c);
}

/* The end of the regex match (the piece) that starts at s[i], i < n. */
static size_t piece_end(const unsigned char *s, size_t n, size_t i) {
  if (s[i] == '\'' && i + 1 < n) {
    if (s[i + 1] && strchr("stmd", s[i + 1])) return i + 2;
    if (i + 2 < n && (!memcmp(s + i + 1, "re", 2) ||
                      !memcmp(s + i + 1, "ve", 2) ||
                      !memcmp(s + i + 1, "ll", 2)))
      return i + 3;
  }
  size_t len, j = i;
  int c = class_at(s, n, i, &len);
  if (s[i] == ' ' && i + 1 < n) { /* " ?" before a run of a non-space */
    int c2 = class_at(s, n, i + 1, &len);
    if (c2 != SPACE) c = c2, j = i + 1;
  }
  if (c != SPACE) {
    while (j < n && class_at(s, n, j, &len) == c) j += len;
    return j;
  }
  size_t last = i; /* \s+(?!\S): all but the last space before a non-space */
  while (j < n && class_at(s, n, j, &len) == SPACE) last = j, j += len;
  return j == n || last == i ? j : last;
}

typedef struct {
  int32_t id, pos;
} Cand;

/* Whether candidate x merges before y: lower rank, then further left. */
static int before(Cand x, Cand y) {
  return x.id < y.id || (x.id == y.id && x.pos < y.pos);
}

/* Push c onto the binary min-heap h of *n candidates. */
static void heap_push(Cand *h, size_t *n, Cand c) {
  size_t k = (*n)++;
  for (; k > 0 && before(c, h[(k - 1) / 2]); k = (k - 1) / 2)
    h[k] = h[(k - 1) / 2];
  h[k] = c;
}

/* Pop the least candidate of the heap h of *n > 0. */
static Cand heap_pop(Cand *h, size_t *n) {
  Cand top = h[0], last = h[--*n];
  size_t k = 0;
  for (;;) {
    size_t ch = 2 * k + 1;
    if (ch >= *n) break;
    if (ch + 1 < *n && before(h[ch + 1], h[ch])) ch++;
    if (!before(h[ch], last)) break;
    h[k] = h[ch];
    k = ch;
  }
  h[k] = last;
  return top;
}

/* Push the pair starting at symbol p, if it is a merge. */
static void push_pair(const Bpe *b, const int32_t *tok, const int32_t *nxt,
                      int32_t p, Cand *h, size_t *nh) {
  if (p < 0 || nxt[p] < 0) return;
  int32_t id = pair_lookup(b, tok[p], tok[nxt[p]]);
  if (id >= 0) heap_push(h, nh, (Cand){id, p});
}

/* BPE of one piece s[0..n) (n >= 2) with scratch tok/nxt/prv (n each)
   and heap (3n); appends its ids to ids[*k..cap), counting all in *k. */
static void merge_piece(const Bpe *b, const unsigned char *s, int32_t n,
                        int32_t *tok, int32_t *nxt, int32_t *prv, Cand *heap,
                        int32_t *ids, size_t cap, size_t *k) {
  size_t nh = 0;
  for (int32_t p = 0; p < n; p++) {
    tok[p] = b->byte_id[s[p]];
    nxt[p] = p + 1 < n ? p + 1 : -1;
    prv[p] = p - 1;
  }
  for (int32_t p = 0; p + 1 < n; p++) push_pair(b, tok, nxt, p, heap, &nh);
  while (nh > 0) {
    Cand c = heap_pop(heap, &nh);
    int32_t p = c.pos, q = nxt[p];
    if (tok[p] < 0 || q < 0 || pair_lookup(b, tok[p], tok[q]) != c.id)
      continue; /* stale: p or its right neighbour merged since */
    tok[p] = c.id;
    tok[q] = -1;
    nxt[p] = nxt[q];
    if (nxt[q] >= 0) prv[nxt[q]] = p;
    push_pair(b, tok, nxt, prv[p], heap, &nh);
    push_pair(b, tok, nxt, p, heap, &nh);
  }
  for (int32_t p = 0; p >= 0; p = nxt[p]) {
    if (*k < cap) ids[*k] = tok[p];
    ++*k;
  }
}

size_t bpe_encode(const Bpe *b, const unsigned char *text, size_t n,
                  int32_t *ids, size_t cap) {
  size_t k = 0, room = 0;
  int32_t *scratch = NULL;
  for (size_t i = 0; i < n;) {
    size_t end = piece_end(text, n, i), len = end - i;
    if (len == 1) {
      if (k < cap) ids[k] = b->byte_id[text[i]];
      k++;
    } else {
      if (len > room) { /* tok, nxt, prv, then 3 len Cands */
        free(scratch);
        room = len > 2 * room ? len : 2 * room;
        scratch = room > INT32_MAX / 9 ? NULL : malloc(room * 9 * 4);
        if (!scratch) return SIZE_MAX;
      }
      merge_piece(b, text + i, (int32_t)len, scratch, scratch + room,
                  scratch + 2 * room, (Cand *)(scratch + 3 * room), ids, cap,
                  &k);
    }
    i = end;
  }
  free(scratch);
  return k;
}

size_t bpe_decode(const Bpe *b, const int32_t *ids, size_t n,
                  unsigned char *out, size_t cap) {
  static const unsigned char bad[] = "\xef\xbf\xbd"; /* U+FFFD */
  size_t k = 0;
  for (size_t i = 0; i < n; i++) {
    int ok = ids[i] >= 0 && ids[i] < NTOKENS;
    const unsigned char *s = ok ? b->bytes + b->off[ids[i]] : bad;
    size_t len = ok ? b->off[ids[i] + 1] - b->off[ids[i]] : 3;
    for (size_t j = 0; j < len; j++, k++)
      if (k < cap) out[k] = s[j];
  }
  return k;
}

/* Format a message into err (errcap bytes); returns NULL. */
static Bpe *fail(Bpe *b, char *err, size_t errcap, const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  if (errcap) vsnprintf(err, errcap, fmt, ap);
  va_end(ap);
  bpe_free(b);
  return NULL;
}

/* The whole file at path (its size in *n), or NULL. */
static unsigned char *read_file(const char *path, size_t *n) {
  FILE *f = fopen(path, "rb");
  if (!f) return NULL;
  size_t cap = 1 << 20;
  unsigned char *buf = malloc(cap), *grown;
  *n = 0;
  while (buf) {
    *n += fread(buf + *n, 1, cap - *n, f);
    if (*n < cap) break;
    grown = realloc(buf, cap *= 2);
    if (!grown) free(buf);
    buf = grown;
  }
  if (buf && ferror(f)) free(buf), buf = NULL;
  fclose(f);
  return buf;
}

/* Append the bytes that the alphabet spelling s[0..n) stands for to
   out (advancing *k); 0 on a character outside the alphabet. */
static int unspell(const unsigned char *s, size_t n, const int16_t *from_cp,
                   unsigned char *out, uint32_t *k) {
  for (size_t i = 0, len; i < n; i += len) {
    uint32_t c;
    len = utf8(s + i, n - i, &c);
    if (len == 0 || c >= 324 || from_cp[c] < 0) return 0;
    out[(*k)++] = (unsigned char)from_cp[c];
  }
  return 1;
}

/* FNV-1a of s[0..n). */
static uint64_t fnv(const unsigned char *s, size_t n) {
  uint64_t h = 0xcbf29ce484222325ull;
  for (size_t i = 0; i < n; i++) h = (h ^ s[i]) * 0x100000001b3ull;
  return h;
}

/* The id of the token with bytes s[0..n) in the string table str (ids
   + 1, 0 empty), or its empty slot's -1 - index. */
static int64_t str_find(const Bpe *b, const int32_t *str,
                        const unsigned char *s, size_t n) {
  size_t mask = ((size_t)1 << MAPBITS) - 1;
  for (size_t h = slot(fnv(s, n));; h = (h + 1) & mask) {
    int32_t t = str[h] - 1;
    if (t < 0) return -1 - (int64_t)h;
    if (b->off[t + 1] - b->off[t] == n && !memcmp(b->bytes + b->off[t], s, n))
      return t;
  }
}

/* Read the merges of vocab.bpe text v[0..n) into b; NULL or a message. */
static const char *parse(Bpe *b, const unsigned char *v, size_t n,
                         int32_t *str, size_t *line) {
  int16_t from_cp[324]; /* alphabet code point -> byte */
  memset(from_cp, -1, sizeof from_cp);
  for (int c = 0, extra = 0; c < 256; c++) {
    int printable = (c >= '!' && c <= '~') || (c >= 0xa1 && c <= 0xac) ||
                    c >= 0xae;
    from_cp[printable ? c : 256 + extra++] = (int16_t)c;
  }
  uint32_t k = 0;
  for (int c = 0, t = 0; c < 324; c++)
    if (from_cp[c] >= 0) {
      b->byte_id[from_cp[c]] = (uint8_t)t;
      b->off[t++] = k;
      b->bytes[k++] = (unsigned char)from_cp[c];
    }
  b->off[256] = k;
  for (int32_t t = 0; t < 256; t++)
    str[-1 - str_find(b, str, b->bytes + b->off[t], 1)] = t + 1;
  const unsigned char *p = memchr(v, '\n', n), *e = v + n;
  int32_t t = 256;
  for (*line = 2; p && p + 1 < e; (*line)++) {
    const unsigned char *a = p + 1, *eol = memchr(a, '\n', (size_t)(e - a));
    if (!eol) eol = e;
    const unsigned char *sp = memchr(a, ' ', (size_t)(eol - a));
    p = eol;
    if (t == BPE_EOT) return "more than 50000 merges";
    if (!sp || sp == a || sp + 1 == eol || memchr(sp + 1, ' ', eol - sp - 1))
      return "not a merge \"A B\"";
    uint32_t ka = k;
    if (!unspell(a, sp - a, from_cp, b->bytes, &k))
      return "not in GPT-2's byte alphabet";
    uint32_t kb = k;
    if (!unspell(sp + 1, eol - sp - 1, from_cp, b->bytes, &k))
      return "not in GPT-2's byte alphabet";
    int64_t x = str_find(b, str, b->bytes + ka, kb - ka);
    int64_t y = str_find(b, str, b->bytes + kb, k - kb);
    if (x < 0 || y < 0) return "a half that no earlier line makes";
    int64_t z = str_find(b, str, b->bytes + ka, k - ka);
    if (z >= 0) return "a token that an earlier line makes";
    str[-1 - z] = t + 1;
    b->off[t + 1] = k;
    uint64_t key;
    size_t s = pair_slot(b, (int32_t)x, (int32_t)y, &key); /* new, as z */
    b->pair_key[s] = key;
    b->pair_id[s] = t++;
  }
  if (t != BPE_EOT) return "fewer than 50000 merges";
  memcpy(b->bytes + k, "<|endoftext|>", 13);
  b->off[NTOKENS] = k + 13;
  return NULL;
}

Bpe *bpe_load(const char *path, char *err, size_t errcap) {
  size_t n, line = 1;
  unsigned char *v = read_file(path, &n);
  if (!v) return fail(NULL, err, errcap, "%s: cannot read", path);
  Bpe *b = calloc(1, sizeof *b);
  int32_t *str = calloc((size_t)1 << MAPBITS, sizeof *str);
  /* every token's bytes fit in the file's: a merge line's halves spell
     at least their bytes, and the 256 bytes and <|endoftext|> are
     fewer than the "#version" line and the 50,000 separators */
  if (b) b->bytes = malloc(n + 256 + 13);
  const char *msg = !b || !str || !b->bytes ? "out of memory"
                                            : parse(b, v, n, str, &line);
  free(str);
  free(v);
  if (msg) return fail(b, err, errcap, "%s:%zu: %s", path, line, msg);
  return b;
}

void bpe_free(Bpe *b) {
  if (!b) return;
  free(b->bytes);
  free(b);
}
