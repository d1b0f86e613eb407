/* Tokens shared by the scanners and the parsers. Token kinds are the TK_* codes that Lemon
 * generates from each grammar (the grammar is their one source of truth). */
#ifndef TPL_LEX_H
#define TPL_LEX_H

#include <stddef.h>
#include <stdint.h>
#include <stdbool.h>

typedef struct tpl_token {  /* 12 bytes: a large template has a token per few bytes */
    uint32_t off, len; /* bytes in the (normalised) source; for TEXT the text after stripping */
    uint16_t kind;     /* TK_* of the grammar */
    uint8_t flag;      /* tag tokens: the whitespace-control sign ('-', '+' or 0) */
} tpl_token;

typedef struct tpl_token_vec {
    tpl_token *v;
    size_t n, cap;
} tpl_token_vec;

/* Jinja's token vector, 8 bytes a token (issue 13 §1: a tag-heavy template has a token per two
 * bytes, and the whole vector is in memory while it is parsed): the offset, the length (0xFFFF:
 * a long token, its length in `longs`, ascending by token index) and the kind with the flag's
 * code (0, 1 '-', 2 '+') in its top two bits. tpl_jtok_get gives a token back as tpl_token. */
typedef struct tpl_jtok {
    uint32_t off;
    uint16_t len, kf;
} tpl_jtok;
typedef struct tpl_jlong {
    uint32_t i, len;
} tpl_jlong;
typedef struct tpl_jtok_vec {
    tpl_jtok *v;
    size_t n, cap;
    tpl_jlong *longs;
    size_t nlongs, lcap;
    /* block tags whose first token is not if, elif, else, endif, for, endfor, break or continue
     * (counted by tpl_jinja_lex for tpl_jinja_streamable: no second walk over the tokens) */
    size_t nonstream;
} tpl_jtok_vec;
#define TPL_JTOK_LONG 0xFFFF

/* Token i of v (i < v->n). */
static inline tpl_token tpl_jtok_get(const tpl_jtok_vec *v, size_t i)
{
    const tpl_jtok *t = &v->v[i];
    tpl_token r = { t->off, t->len, (uint16_t)(t->kf & 0x3FFF), (uint8_t)("\0-+"[t->kf >> 14 & 3]) };
    if (t->len == TPL_JTOK_LONG) {
        size_t lo = 0, hi = v->nlongs;
        while (lo < hi) {
            size_t mid = (lo + hi) / 2;
            if (v->longs[mid].i < i) lo = mid + 1;
            else hi = mid;
        }
        if (lo < v->nlongs && v->longs[lo].i == i) r.len = v->longs[lo].len;
    }
    return r;
}
/* The kind of token i. */
static inline int tpl_jtok_kind(const tpl_jtok_vec *v, size_t i) { return v->v[i].kf & 0x3FFF; }
/* Frees v's arrays. */
void tpl_jtok_free(tpl_jtok_vec *v);

/* Scanner result: ok, or an error at byte offset `err_off` with a message. */
typedef struct tpl_lex_result {
    bool ok;
    bool nomem;         /* the error is out of memory */
    uint32_t err_off;
    char msg[160];
} tpl_lex_result;

typedef struct tpl_lex_opts {
    bool trim_blocks, lstrip_blocks;
} tpl_lex_opts;

/* Scans a Jinja template. `src` must be NUL-terminated at src[n] and already newline-normalised
 * (see tpl_jinja_normalize). Tokens are appended to *out (heap; caller frees with tpl_jtok_free). */
tpl_lex_result tpl_jinja_lex(const char *src, size_t n, const tpl_lex_opts *o, tpl_jtok_vec *out);

/* Jinja2's source preparation: \r\n and \r become \n, and unless keep_trailing_newline one
 * trailing newline is dropped. Returns a malloc'd NUL-terminated copy (*len set), or NULL. */
char *tpl_jinja_normalize(const char *src, size_t n, bool keep_trailing_newline, size_t *len);

/* Python's string-literal unescaping for a literal body (without quotes), as Jinja2 does it
 * (`unicode-escape`): \n \t \\ \' \" \xhh \uhhhh \Uhhhhhhhh \ooo \a \b \f \v \r and
 * \N{NAME} and backslash-newline; unknown escapes stay as written. Writes to out (capacity >= n).
 * Returns the output length, or -1 with *bad set to the offset of a malformed escape (-2: a
 * malformed \N escape; -4: a \N{NAME} of no character; -3: a surrogate, \ud800 to \udfff, which
 * UTF-8 cannot hold). */
long tpl_py_unescape(const char *s, size_t n, char *out, size_t *bad);

/* Keyword table: one X-macro list of (spelling, token) for the Jinja grammar. */
int tpl_jinja_keyword(const char *s, size_t n);

/* The name of token kind `kind` of the Jinja grammar (jinja_parse.y) and of the ERB grammar
 * (erb_parse.y): "NAME" for TK_NAME; NULL for a kind the grammar does not have. Generated from
 * the grammars' headers (grammar/token_names.py) for `tplc dump --tokens`. */
const char *tpl_jinja_token_name(int kind);
const char *tpl_erb_token_name(int kind);

#endif
