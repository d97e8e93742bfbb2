/* frontend.h: the .rlx front end (language.md).
 *
 * fe_parse() scans and parses c->src (c->src_len bytes; may contain NUL
 * or any other byte) with a reentrant flex scanner and a pure bison
 * parser, builds a syntax tree in the Ctx arena, resolves names and
 * turns it into a Module through the ir/graph.c API, running
 * shape_infer() on every node. There is no global state: any number of
 * Ctx may be parsed concurrently.
 *
 * Errors: every user mistake becomes a diagnostic on c at the exact
 * line:col (1-based, columns count bytes) of the offending token.
 * Lexical or syntax errors make fe_parse return NULL; name, attribute,
 * literal and type errors are all reported (up to the Ctx cap) and the
 * Module is returned with c->nerrors > 0, so callers check nerrors.
 *
 * Limits (diagnosed, never crashed on): nested calls deeper than 256,
 * integer literals outside int64, ranks above RLX_MAX_RANK, element
 * counts above RLX_MAX_ELEMS. Time and memory are linear in the input.
 */
#ifndef RLX_FRONTEND_H
#define RLX_FRONTEND_H

#include "ir/ir.h"

Module *fe_parse(Ctx *c);

/* ---- token stream (for tests and tools) ---- */
typedef struct {
  int kind;          /* 0 = end of input */
  Loc loc;
  const char *text;  /* the token's bytes (arena copy) */
} FeToken;

/* Scan c->src into *toks (arena array ending with a kind-0 token);
 * returns the number of tokens before the end. Lexical errors are
 * reported on c as in fe_parse. */
int fe_tokenize(Ctx *c, FeToken **toks);
/* Stable token names: "graph" "input" "param" "return" "const" "true"
 * "false" (keywords), "IDENT" "VALUE" "GRAPHREF" "INT" "FLOAT", the
 * punctuation itself ("(" ")" "[" "]" "{" "}" "," "=" ":" "?" "+" "*" "<="), "EOF". */
const char *fe_token_name(int kind);

#endif
