/* bpe.h -- GPT-2's byte-level BPE tokenizer (samples/bpe.c). */
#ifndef BPE_H
#define BPE_H

#include <stddef.h>
#include <stdint.h>

typedef struct Bpe Bpe;
/* Load a vocab.bpe file (plain text); NULL with a message in err
   (errcap bytes) on failure. */
Bpe *bpe_load(const char *path, char *err, size_t errcap);
/* Encode n bytes of UTF-8 text; writes at most cap ids, returns the
   number of ids the whole text needs (SIZE_MAX when out of memory). */
size_t bpe_encode(const Bpe *b, const unsigned char *text, size_t n,
                  int32_t *ids, size_t cap);
/* Decode ids to bytes; writes at most cap bytes, returns the length. */
size_t bpe_decode(const Bpe *b, const int32_t *ids, size_t n,
                  unsigned char *out, size_t cap);
void bpe_free(Bpe *b);
#define BPE_EOT 50256

#endif
