/* test_lexer.c: CUnit tests of the .rlx scanner (frontend/lexer.l)
 * through fe_tokenize: every token kind, keywords vs identifiers,
 * numbers (ints, floats, exponents, inf/nan, int64 limits), values and
 * graph references, comments, line:col positions (1-based, bytes) with
 * LF, CRLF and lone-CR line ends, a skipped UTF-8 byte-order mark, and
 * the lexical errors (".5", malformed numbers, overflow, stray
 * characters, NUL and non-ASCII bytes) with their locations.
 */
#include <CUnit/Basic.h>
#include <string.h>

#include "frontend/frontend.h"

/* Token names of src, space separated, into out. */
static Ctx *lex(const char *src, size_t len, FeToken **t, int *n) {
  Ctx *c = ctx_new("t.rlx", src, len);
  *n = fe_tokenize(c, t);
  return c;
}

static void names(const char *src, char *out, size_t cap) {
  FeToken *t;
  int n;
  Ctx *c = lex(src, strlen(src), &t, &n);
  out[0] = 0;
  for (int i = 0; i < n; i++) {
    if (i) strncat(out, " ", cap - strlen(out) - 1);
    strncat(out, fe_token_name(t[i].kind), cap - strlen(out) - 1);
  }
  ctx_free(c);
}

#define CHECK_NAMES(src, want)                                          \
  do {                                                                  \
    char buf_[512];                                                     \
    names(src, buf_, sizeof buf_);                                      \
    CU_ASSERT_STRING_EQUAL(buf_, want);                                 \
  } while (0)

/* The first diagnostic of src: line, col and a message substring. */
static void check_error(const char *src, size_t len, int line, int col,
                        const char *sub) {
  FeToken *t;
  int n;
  Ctx *c = lex(src, len, &t, &n);
  CU_ASSERT_FATAL(c->diags != NULL);
  CU_ASSERT_EQUAL(c->diags->loc.line, line);
  CU_ASSERT_EQUAL(c->diags->loc.col, col);
  if (!strstr(c->diags->msg, sub))
    fprintf(stderr, "\n  got '%s', want '%s'\n", c->diags->msg, sub);
  CU_ASSERT_PTR_NOT_NULL(strstr(c->diags->msg, sub));
  ctx_free(c);
}

static void test_keywords(void) {
  CHECK_NAMES("graph input param return const true false",
              "graph input param return const true false");
  CHECK_NAMES("graphs inputx _param Return const1 f32 bool",
              "IDENT IDENT IDENT IDENT IDENT IDENT IDENT");
  CHECK_NAMES("", "");
  CHECK_NAMES("   \n\t // only a comment", "");
}

static void test_punct(void) {
  CHECK_NAMES("( ) [ ] { } , = : ?", "( ) [ ] { } , = : ?");
  CHECK_NAMES("f32[2,?]", "IDENT [ INT , ? ]");
  CHECK_NAMES("%y=add(%x,1):f32[]",
              "VALUE = IDENT ( VALUE , INT ) : IDENT [ ]");
}

static void test_values(void) {
  FeToken *t;
  int n;
  Ctx *c = lex("%x %0 %h1 %d_w1 %a.b.c @body @_g1", 33, &t, &n);
  CU_ASSERT_EQUAL(n, 7);
  const char *want[] = {"%x", "%0", "%h1", "%d_w1", "%a.b.c", "@body",
                        "@_g1"};
  for (int i = 0; i < 7 && i < n; i++) {
    CU_ASSERT_STRING_EQUAL(t[i].text, want[i]);
    CU_ASSERT_STRING_EQUAL(fe_token_name(t[i].kind),
                           i < 5 ? "VALUE" : "GRAPHREF");
  }
  CU_ASSERT_EQUAL(c->nerrors, 0);
  ctx_free(c);
}

static void test_numbers(void) {
  CHECK_NAMES("0 -1 42 123456789", "INT INT INT INT");
  CHECK_NAMES("1.5 -2e-3 1e10 1. 0.5E+2 -0.0", "FLOAT FLOAT FLOAT FLOAT "
              "FLOAT FLOAT");
  CHECK_NAMES("inf -inf nan", "FLOAT FLOAT FLOAT");
  CHECK_NAMES("info nanx", "IDENT IDENT");
  /* int64 limits are accepted exactly */
  FeToken *t;
  int n;
  Ctx *c = lex("9223372036854775807 -9223372036854775808", 40, &t, &n);
  CU_ASSERT_EQUAL(n, 2);
  CU_ASSERT_EQUAL(c->nerrors, 0);
  ctx_free(c);
}

static void test_positions(void) {
  FeToken *t;
  int n;
  const char *src = "graph g {\n  input %x: f32[4]\n\n// c\n\t%y = 1\n}";
  Ctx *c = lex(src, strlen(src), &t, &n);
  CU_ASSERT_EQUAL(n, 14);
  struct { int i, line, col; } want[] = {
      {0, 1, 1}, {1, 1, 7}, {2, 1, 9}, {3, 2, 3}, {4, 2, 9},
      {5, 2, 11}, {6, 2, 13}, {7, 2, 16}, {9, 2, 18}, {10, 5, 2},
      {11, 5, 5}, {12, 5, 7}, {13, 6, 1}};
  for (size_t k = 0; k < sizeof want / sizeof want[0]; k++) {
    CU_ASSERT_EQUAL(t[want[k].i].loc.line, want[k].line);
    CU_ASSERT_EQUAL(t[want[k].i].loc.col, want[k].col);
  }
  ctx_free(c);
}

/* The same tokens at the same line:col whatever ends the lines. */
static void check_line_ends(const char *nl) {
  char src[256];
  snprintf(src, sizeof src, "graph g {%s  input %%x: f32[4]%s%s// c%s"
           "\t%%y = 1 // z%s}", nl, nl, nl, nl, nl);
  FeToken *t;
  int n;
  Ctx *c = lex(src, strlen(src), &t, &n);
  CU_ASSERT_EQUAL(c->nerrors, 0);
  CU_ASSERT_EQUAL(n, 14);
  struct { int i, line, col; } want[] = {
      {0, 1, 1}, {2, 1, 9}, {3, 2, 3}, {4, 2, 9}, {9, 2, 18},
      {10, 5, 2}, {11, 5, 5}, {12, 5, 7}, {13, 6, 1}};
  for (size_t k = 0; k < sizeof want / sizeof want[0] && n == 14; k++) {
    CU_ASSERT_EQUAL(t[want[k].i].loc.line, want[k].line);
    CU_ASSERT_EQUAL(t[want[k].i].loc.col, want[k].col);
  }
  ctx_free(c);
}

static void test_line_ends(void) {
  check_line_ends("\n");
  check_line_ends("\r\n");
  check_line_ends("\r");
  /* mixed: CR, CRLF, LF, then CR LF CR: lines 1, 2, 3, 4, then 6 */
  FeToken *t;
  int n;
  const char *src = "a\rb\r\nc\nd\r\n\re";
  Ctx *c = lex(src, strlen(src), &t, &n);
  CU_ASSERT_EQUAL_FATAL(n, 5);
  for (int i = 0; i < 4; i++) CU_ASSERT_EQUAL(t[i].loc.line, i + 1);
  CU_ASSERT_EQUAL(t[4].loc.line, 6);
  CU_ASSERT_EQUAL(t[4].loc.col, 1);
  ctx_free(c);
  /* errors on line 3 of CR-only and CRLF files */
  check_error("graph g {\r  input %x: f32[4]\r  $\r}", 34, 3, 3,
              "unexpected character '$'");
  check_error("graph g {\r\n  input %x: f32[4]\r\n  $\r\n}", 37, 3, 3,
              "unexpected character '$'");
  /* a comment ends at a lone CR */
  c = lex("// c\rgraph", 10, &t, &n);
  CU_ASSERT_EQUAL(n, 1);
  CU_ASSERT_EQUAL(t[0].loc.line, 2);
  ctx_free(c);
}

static void test_bom(void) {
  FeToken *t;
  int n;
  Ctx *c = lex("\xef\xbb\xbfgraph g", 10, &t, &n);
  CU_ASSERT_EQUAL(c->nerrors, 0);
  CU_ASSERT_EQUAL_FATAL(n, 2);
  CU_ASSERT_STRING_EQUAL(fe_token_name(t[0].kind), "graph");
  CU_ASSERT_EQUAL(t[0].loc.col, 1); /* columns count from after it */
  CU_ASSERT_EQUAL(t[1].loc.col, 7);
  ctx_free(c);
  check_error("\xef\xbb\xbf  $", 6, 1, 3, "unexpected character '$'");
  c = lex("\xef\xbb\xbf", 3, &t, &n); /* a BOM alone is an empty file */
  CU_ASSERT_EQUAL(c->nerrors, 0);
  CU_ASSERT_EQUAL(n, 0);
  ctx_free(c);
  /* only at the very start: elsewhere it is a non-ASCII byte run */
  check_error("a \xef\xbb\xbf", 5, 1, 3, "non-ASCII");
  check_error("\xef\xbb\xbf\xef\xbb\xbf", 6, 1, 1, "non-ASCII");
  check_error("\xef\xbb", 2, 1, 1, "non-ASCII");
}

static void test_errors(void) {
  check_error("%y = .5", 7, 1, 6, "write 0.5");
  check_error("\n  -.25", 7, 2, 3, "digit before '.'");
  check_error("1x", 2, 1, 1, "invalid numeric literal '1x'");
  check_error("1.5.3", 5, 1, 1, "invalid numeric literal");
  check_error("  9223372036854775808", 21, 1, 3, "out of range");
  check_error("-9223372036854775809", 20, 1, 1, "out of range");
  check_error("1e999", 5, 1, 1, "out of range");
  check_error("a $ b", 5, 1, 3, "unexpected character '$'");
  check_error("a - b", 5, 1, 3, "unexpected character '-'");
  check_error("a\0b", 3, 1, 2, "unexpected byte 0x00");
  check_error("x \xc3\xa9", 4, 1, 3, "non-ASCII");
  check_error("% x", 3, 1, 1, "value name after '%'");
  check_error("@ g", 3, 1, 1, "graph name after '@'");
  /* UTF-8 and any bytes inside comments are fine */
  FeToken *t;
  int n;
  Ctx *c = lex("// \xc3\xa9 \xff\n%x", 10, &t, &n);
  CU_ASSERT_EQUAL(c->nerrors, 0);
  CU_ASSERT_EQUAL(n, 1);
  ctx_free(c);
}

static void test_binary_garbage(void) {
  /* arbitrary bytes: bounded errors (cap), no crash, scan terminates */
  char buf[4096];
  for (size_t i = 0; i < sizeof buf; i++)
    buf[i] = (char)((i * 2654435761u) >> 13);
  FeToken *t;
  int n;
  Ctx *c = lex(buf, sizeof buf, &t, &n);
  CU_ASSERT(c->nerrors <= c->max_errors);
  CU_ASSERT_EQUAL(t[n].kind, 0);
  ctx_free(c);
}

static void test_nesting_limit(void) {
  static char src[2000];
  for (int i = 0; i < 300; i++) memcpy(src + 4 * i, "neg(", 4);
  FeToken *t;
  int n;
  Ctx *c = lex(src, 1200, &t, &n);
  CU_ASSERT_EQUAL(c->nerrors, 1);
  CU_ASSERT_PTR_NOT_NULL(strstr(c->diags->msg, "nested more than 256"));
  CU_ASSERT_EQUAL(c->diags->loc.col, 4 * 256 + 4);
  ctx_free(c);
}

int main(void) {
  if (CU_initialize_registry() != CUE_SUCCESS) return 1;
  CU_pSuite s = CU_add_suite("lexer", NULL, NULL);
  CU_add_test(s, "keywords", test_keywords);
  CU_add_test(s, "punct", test_punct);
  CU_add_test(s, "values", test_values);
  CU_add_test(s, "numbers", test_numbers);
  CU_add_test(s, "positions", test_positions);
  CU_add_test(s, "line_ends", test_line_ends);
  CU_add_test(s, "bom", test_bom);
  CU_add_test(s, "errors", test_errors);
  CU_add_test(s, "binary_garbage", test_binary_garbage);
  CU_add_test(s, "nesting_limit", test_nesting_limit);
  CU_basic_set_mode(CU_BRM_VERBOSE);
  CU_basic_run_tests();
  unsigned fails = CU_get_number_of_failures();
  CU_cleanup_registry();
  return fails ? 1 : 0;
}
