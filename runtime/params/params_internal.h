/* params_internal.h -- what params_io.c (files, .npy, safetensors
 * writer) and params_json.c (the safetensors header reader) share: a
 * bounded text cursor, a header's tensor entry, the readers' limits. */
#ifndef RLX_PARAMS_INTERNAL_H
#define RLX_PARAMS_INTERNAL_H

#include "runtime/rlxrt.h"

/* Headers larger than this are refused; ranks above RLX_PARAMS_MAX_RANK
 * are neither written nor read (safetensors). */
#define RLX_PARAMS_MAX_HEADER (100u << 20)
#define RLX_PARAMS_MAX_RANK 16

/* Text [p, end); nothing reads at or past end. */
typedef struct {
  const char *p, *end;
} Cur;

static inline void skip_ws(Cur *c)
{
  while (c->p < c->end && (*c->p == ' ' || *c->p == '\t' || *c->p == '\n' ||
                           *c->p == '\r'))
    c->p++;
}

/* Skip blanks, then ch if it is next (1) or nothing (0). */
static inline int eat(Cur *c, char ch)
{
  skip_ws(c);
  if (c->p < c->end && *c->p == ch) {
    c->p++;
    return 1;
  }
  return 0;
}

/* A non-negative integer (at most 18 digits). */
static inline int uint_val(Cur *c, int64_t *v)
{
  skip_ws(c);
  int digits = 0;
  *v = 0;
  while (c->p < c->end && *c->p >= '0' && *c->p <= '9') {
    if (++digits > 18)
      return 0;
    *v = *v * 10 + (*c->p++ - '0');
  }
  return digits > 0;
}

/* One tensor entry of a safetensors header; have: bit 0 dtype, 1 shape,
 * 2 data_offsets (0: the tensor is not in the file). */
typedef struct {
  char dtype[16];
  int64_t shape[RLX_PARAMS_MAX_RANK], begin, end;
  int rank, have;
} StEntry;

/* Parse the JSON header h[0, len): ent[i] gets the entry of the tensor
 * named like sig's param i (ent has sig->num_inputs slots, zeroed);
 * other tensors and __metadata__ are checked for syntax only. Names and
 * strings may have any length the header holds. RLX_ERR_FORMAT for bad
 * JSON, a bad entry or a param given twice; RLX_ERR_NOMEM. */
int rlx_st_parse(const char *h, size_t len, const rlx_signature *sig,
                 StEntry *ent);

#endif
