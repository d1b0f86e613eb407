/* The ERB front end: Ruby 3.1 ERB (trim_mode "-") templates with a Ruby subset in their tags.
 *
 * Two stages, as Ruby's own ERB works:
 *  1. tpl_erb_script (erb_lex.re) scans text and tags exactly as ERB::Compiler with its
 *     TrimScanner does and lays out the Ruby "script" ERB would generate, line for line. Text
 *     becomes a PUT marker, `<%= e %>` becomes INS_OPEN e INS_CLOSE, `<% code %>` the code itself,
 *     joined by "; " and the generated line breaks. A `#` comment in a code tag therefore
 *     swallows the rest of the generated line, as it does in Ruby.
 *  2. The Ruby tokenizer (also erb_lex.re) tokenizes that script and the Lemon grammar
 *     (erb_parse.y) builds the shared AST, with the Ruby node kinds appended to grammar/ast.h.
 * Token offsets point into the script; the driver maps every node back to a source offset. */
#ifndef TPL_ERB_H
#define TPL_ERB_H

#include "parse_ctx.h"

/* Parses an ERB template (src[n] must be NUL) into c->root (a TEMPLATE node whose offsets are
 * source offsets). c->arena holds the AST; c->src/c->n must be the template source. Returns
 * false with c->err_off (a source offset) and c->msg on failure. */
bool tpl_erb_parse(tpl_pctx *c);
/* A streaming parse: with c->top set, tpl_erb_parse hands each top-level statement (its offsets
 * source offsets) to c->top as soon as it is parsed, and c->root's body stays empty; c->keep
 * then holds the script and texts the statements point into (it must outlive their compile),
 * c->arena may be reset by top after each statement. Errors as in a whole parse: a scan error
 * anywhere first, then the first parse error (the statements before it were handed over). */

/* Whether the template starts with a frozen_string_literal magic comment (ERB::Compiler's
 * detect_magic_comment): 1 "true" (string literals are frozen), 0 another value, -1 none. The
 * TEMPLATE node's op is 1 exactly when this is 1. */
int tpl_erb_frozen(const char *src, size_t n);

/* The ERB tokens as `tplc dump --tokens` shows them: builds the script as tpl_erb_parse does and
 * tokenizes it with the same Ruby tokenizer (no parse), calling fn for each token in order with
 * its kind (TK_* of erb_parse.y), its source span [off, end) and its text (len bytes, borrowed for
 * the call: the script's bytes; PUT: the text it puts; INS_OPEN/INS_CLOSE: "<%=" and "%>", their
 * spans those of the tag's first and last code byte). c as for tpl_erb_parse (c->arena holds the
 * texts). False with c->err_off (a source offset) and c->msg on a scan error. */
typedef void (*tpl_erb_token_fn)(void *data, int kind, uint32_t off, uint32_t end, const char *text, size_t len);
bool tpl_erb_tokens(tpl_pctx *c, tpl_erb_token_fn fn, void *data);

/* ---- used by the grammar's actions (erb_parse.y) ---- */

/* The text of PUT marker token t (its value and its source offset). */
tpl_node *tpl_erb_text(tpl_pctx *c, tpl_token t);
/* A double-quoted string literal: CONST, or INTERP with the `#{}` parts parsed as Ruby. */
tpl_node *tpl_erb_dstring(tpl_pctx *c, tpl_token t);
/* A single-quoted string literal (only \\ and \' are escapes). */
tpl_node *tpl_erb_sstring(tpl_pctx *c, tpl_token t);
/* A :symbol literal (a string flagged TPL_F_SYMBOL: DESIGN §2). */
tpl_node *tpl_erb_symbol(tpl_pctx *c, tpl_token t);
/* A regular expression literal /.../flags: RREGEX with val = pattern, op = option bits. */
tpl_node *tpl_erb_regex(tpl_pctx *c, tpl_token t);
/* The named groups of a regex's source `re` (len bytes) that Ruby's `/re/ =~ x` makes local variables (a name
 * a local may have: lower case or `_` first): the one after *pos (start at 0), its start and length; false at the end. */
bool tpl_erb_regex_name(const char *re, size_t len, size_t *pos, size_t *start, size_t *nlen);
/* A %w[...] or %i[...] word array: a LIST of strings (symbols for %i). */
tpl_node *tpl_erb_words(tpl_pctx *c, tpl_token t);
/* A numeric literal (may carry a leading '-'). */
tpl_node *tpl_erb_number(tpl_pctx *c, tpl_token t, bool is_float);

/* The line of token t (__LINE__) as Ruby's ERB counts it: the template's line, one more after a
 * frozen_string_literal magic comment (ERB adds that line to the script). */
int64_t tpl_erb_line(tpl_pctx *c, tpl_token t);

/* Regex option bits stored in RREGEX op. */
enum { TPL_RX_I = 1, TPL_RX_X = 2, TPL_RX_M = 4 };

#endif
