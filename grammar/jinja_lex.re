/* Jinja scanner (re2c). Mirrors Jinja2 3.1's lexer (jinja2/lexer.py): the root rule finds the
 * next `{{`, `{%` or `{#`, the text before it gets whitespace control (`-` strips, lstrip_blocks
 * strips the indentation of a line holding only a block or comment tag), and inside tags the
 * expression rules below produce tokens. `}}` and `%}` end a tag only when brackets are
 * balanced, as in Jinja2. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "lex.h"
#include "jinja_parse.h"
#include "../runtime/vm.h"
#include "../runtime/error.h"

/* ---- keywords: one X-macro table (spelling, token) ---- */
#define TPL_JINJA_KEYWORDS(X) \
    X("and", TK_AND) X("or", TK_OR) X("not", TK_NOT) X("in", TK_IN) X("is", TK_IS) \
    X("if", TK_IF) X("else", TK_ELSE) X("elif", TK_ELIF) X("endif", TK_ENDIF) \
    X("for", TK_FOR) X("endfor", TK_ENDFOR) X("set", TK_SET) X("endset", TK_ENDSET) \
    X("true", TK_TRUE) X("false", TK_FALSE) X("none", TK_NONE) \
    X("True", TK_TRUE) X("False", TK_FALSE) X("None", TK_NONE) \
    X("macro", TK_MACRO) X("endmacro", TK_ENDMACRO) X("call", TK_CALL) X("endcall", TK_ENDCALL) \
    X("filter", TK_FILTER) X("endfilter", TK_ENDFILTER) X("with", TK_WITH) X("endwith", TK_ENDWITH) \
    X("without", TK_WITHOUT) X("context", TK_CONTEXT) X("block", TK_BLOCK) X("endblock", TK_ENDBLOCK) \
    X("extends", TK_EXTENDS) X("include", TK_INCLUDE) X("import", TK_IMPORT) X("from", TK_FROM) \
    X("as", TK_AS) X("ignore", TK_IGNORE) X("missing", TK_MISSING) X("recursive", TK_RECURSIVE) \
    X("scoped", TK_SCOPED) X("required", TK_REQUIRED) X("break", TK_BREAK) X("continue", TK_CONTINUE) \
    X("do", TK_DO) X("autoescape", TK_AUTOESCAPE) X("endautoescape", TK_ENDAUTOESCAPE) \
    X("generation", TK_GENERATION) X("endgeneration", TK_ENDGENERATION) X("endraw", TK_ENDRAW) \
    X("print", TK_PRINT) X("trans", TK_TRANS) X("endtrans", TK_ENDTRANS) X("pluralize", TK_PLURALIZE)

/* A switch on the length, each case comparing only the keywords of that length (the others'
 * tests are constant false): a name costs a jump and a compare or two, not a test per keyword
 * (issue 21, compile time). */
int tpl_jinja_keyword(const char *s, size_t n)
{
#define KW(str, tok) if (sizeof(str) - 1 == KW_N && memcmp(s, str, KW_N) == 0) return tok;
    switch (n) {
#define KW_N 2
    case KW_N: TPL_JINJA_KEYWORDS(KW) break;
#undef KW_N
#define KW_N 3
    case KW_N: TPL_JINJA_KEYWORDS(KW) break;
#undef KW_N
#define KW_N 4
    case KW_N: TPL_JINJA_KEYWORDS(KW) break;
#undef KW_N
#define KW_N 5
    case KW_N: TPL_JINJA_KEYWORDS(KW) break;
#undef KW_N
#define KW_N 6
    case KW_N: TPL_JINJA_KEYWORDS(KW) break;
#undef KW_N
#define KW_N 7
    case KW_N: TPL_JINJA_KEYWORDS(KW) break;
#undef KW_N
#define KW_N 8
    case KW_N: TPL_JINJA_KEYWORDS(KW) break;
#undef KW_N
#define KW_N 9
    case KW_N: TPL_JINJA_KEYWORDS(KW) break;
#undef KW_N
#define KW_N 10
    case KW_N: TPL_JINJA_KEYWORDS(KW) break;
#undef KW_N
#define KW_N 11
    case KW_N: TPL_JINJA_KEYWORDS(KW) break;
#undef KW_N
#define KW_N 12
    case KW_N: TPL_JINJA_KEYWORDS(KW) break;
#undef KW_N
#define KW_N 13
    case KW_N: TPL_JINJA_KEYWORDS(KW) break;
#undef KW_N
    default: break;
    }
#undef KW
    return TK_NAME;
}

char *tpl_jinja_normalize(const char *src, size_t n, bool keep_trailing_newline, size_t *len)
{
    char *out = malloc(n + 1);
    if (!out) return NULL;
    size_t j = 0;
    /* copy runs without \r in one memcpy each (most sources have none) */
    for (size_t i = 0; i < n;) {
        const char *cr = memchr(src + i, '\r', n - i);
        size_t run = cr ? (size_t)(cr - (src + i)) : n - i;
        memcpy(out + j, src + i, run);
        j += run;
        i += run;
        if (i < n) {
            out[j++] = '\n';
            i++;
            if (i < n && src[i] == '\n') i++;
        }
    }
    if (!keep_trailing_newline && j > 0 && out[j - 1] == '\n') j--;
    out[j] = 0;
    *len = j;
    return out;
}

static int hexval(int c)
{
    if (c >= '0' && c <= '9') return c - '0';
    if (c >= 'a' && c <= 'f') return c - 'a' + 10;
    if (c >= 'A' && c <= 'F') return c - 'A' + 10;
    return -1;
}

static size_t put_utf8(char *o, uint32_t cp)
{
    if (cp < 0x80) { o[0] = (char)cp; return 1; }
    if (cp < 0x800) { o[0] = (char)(0xC0 | (cp >> 6)); o[1] = (char)(0x80 | (cp & 0x3F)); return 2; }
    if (cp < 0x10000) {
        o[0] = (char)(0xE0 | (cp >> 12)); o[1] = (char)(0x80 | ((cp >> 6) & 0x3F));
        o[2] = (char)(0x80 | (cp & 0x3F)); return 3;
    }
    o[0] = (char)(0xF0 | (cp >> 18)); o[1] = (char)(0x80 | ((cp >> 12) & 0x3F));
    o[2] = (char)(0x80 | ((cp >> 6) & 0x3F)); o[3] = (char)(0x80 | (cp & 0x3F)); return 4;
}

long tpl_py_unescape(const char *s, size_t n, char *out, size_t *bad)
{
    size_t j = 0;
    for (size_t i = 0; i < n; i++) {
        if (s[i] != '\\' || i + 1 >= n) { out[j++] = s[i]; continue; }
        char c = s[++i];
        switch (c) {
        case '\n': break;
        case '\\': out[j++] = '\\'; break;
        case '\'': out[j++] = '\''; break;
        case '"': out[j++] = '"'; break;
        case 'a': out[j++] = '\a'; break;
        case 'b': out[j++] = '\b'; break;
        case 'f': out[j++] = '\f'; break;
        case 'n': out[j++] = '\n'; break;
        case 'r': out[j++] = '\r'; break;
        case 't': out[j++] = '\t'; break;
        case 'v': out[j++] = '\v'; break;
        case 'N': { /* \N{NAME}: a brace, a non-empty name, its closing brace, a known name */
            const char *close = i + 2 < n && s[i + 1] == '{' ? memchr(s + i + 2, '}', n - i - 2) : NULL;
            *bad = i - 1;
            if (!close || close == s + i + 2) return -2;
            uint32_t cp;
            if (!tpl_unicode_lookup_name(s + i + 2, (size_t)(close - s - i - 2), &cp)) return -4;
            i = (size_t)(close - s);
            j += put_utf8(out + j, cp);
            break;
        }
        case 'x': case 'u': case 'U': {
            int digits = c == 'x' ? 2 : c == 'u' ? 4 : 8;
            uint32_t cp = 0;
            for (int k = 1; k <= digits; k++) {
                int h = i + k < n ? hexval((unsigned char)s[i + k]) : -1;
                if (h < 0) { *bad = i - 1; return -1; }
                cp = cp * 16 + (uint32_t)h;
            }
            if (cp > 0x10FFFF) { *bad = i - 1; return -1; }
            if (cp >= 0xD800 && cp <= 0xDFFF) { *bad = i - 1; return -3; }
            i += (size_t)digits;
            j += put_utf8(out + j, cp);
            break;
        }
        default:
            if (c >= '0' && c <= '7') {
                uint32_t cp = (uint32_t)(c - '0');
                for (int k = 0; k < 2 && i + 1 < n && s[i + 1] >= '0' && s[i + 1] <= '7'; k++)
                    cp = cp * 8 + (uint32_t)(s[++i] - '0');
                j += put_utf8(out + j, cp);
            } else {
                out[j++] = '\\';
                out[j++] = c;
            }
        }
    }
    return (long)j;
}

/* Jinja2's lexer has no keywords: `if`, `else`, `in`, `is`, `and`, `or` are names that its parser
 * reads as operators only where an operator may stand, so `{% set in = 1 %}`, `{{ not in }}`,
 * `{% for if in xs %}`, `x is in [..]` (the test `in`) and `m(if=1)` name variables. Such a word is
 * an operator after something that ends an operand (a name, a literal, a closing bracket, a
 * statement word used as a name), and `in` after a `not` that follows one (`x not in y`); the
 * first word of a `{% %}` tag stays a statement keyword; anywhere else it is a name. */
static bool is_keyword_kind(int k)
{
#define KK(str, tok) if (k == tok) return true;
    TPL_JINJA_KEYWORDS(KK)
#undef KK
    return false;
}

static bool ends_operand(const tpl_jtok_vec *v, size_t i)
{
    int k = tpl_jtok_kind(v, i);
    switch (k) {
    case TK_NAME: case TK_STRING: case TK_INTEGER: case TK_FLOAT: case TK_TRUE: case TK_FALSE:
    case TK_NONE: case TK_RPAREN: case TK_RBRACKET: case TK_RBRACE:
        return true;
    case TK_AND: case TK_OR: case TK_NOT: case TK_IN: case TK_IS: case TK_IF: case TK_ELSE:
    case TK_AS: case TK_IMPORT:
        return false;
    default: /* a statement word (for, set, block...) is a name unless it opens the tag */
        return is_keyword_kind(k) && i > 0 && tpl_jtok_kind(v, i - 1) != TK_BLOCK_BEGIN;
    }
}

/* Token i is a test's name: a name (or none/true/false) after `is` or `is not`. */
static bool is_test_name(const tpl_jtok_vec *v, size_t i)
{
    int k = tpl_jtok_kind(v, i);
    if ((k != TK_NAME && k != TK_NONE && k != TK_TRUE && k != TK_FALSE) || i == 0) return false;
    int p = tpl_jtok_kind(v, i - 1);
    return p == TK_IS || (p == TK_NOT && i >= 2 && tpl_jtok_kind(v, i - 2) == TK_IS);
}

static int operator_word(const tpl_jtok_vec *v, int kind)
{
    size_t n = v->n;
    if (n == 0) return TK_NAME;
    int prev = tpl_jtok_kind(v, n - 1);
    if (prev == TK_BLOCK_BEGIN) return kind;
    /* right after a test's name, Jinja2's parse_test takes a name-like word other than else, or
     * and (and is, which it refuses: "You cannot chain multiple tests with is") as the test's
     * argument: `x is sameas in` tests against the variable in, and `x is defined if c else d`
     * is a syntax error there, not a conditional */
    if ((kind == TK_IF || kind == TK_IN) && is_test_name(v, n - 1)) return TK_NAME;
    if (ends_operand(v, n - 1)) return kind;
    if (kind == TK_IN && prev == TK_NOT && n >= 2 && ends_operand(v, n - 2)) return kind;
    return TK_NAME;
}

/* `not` where Jinja2's parser reads a primary (parse_unary's operand: after an arithmetic or
 * comparison operator, a comparison's `in` or `not in`, a unary sign) or a filter's name is a
 * name: `{{ 1 % not }}` and `{{ x == not }}` look up the variable not. It stays the operator
 * where an expression starts (parse_not: after `(`, `,`, `and`, a tag's start, for's `in`...). */
static int not_word(const tpl_jtok_vec *v)
{
    size_t n = v->n;
    if (n == 0) return TK_NOT;
    if (is_test_name(v, n - 1)) return TK_NAME; /* parse_test's argument: `x is sameas not` */
    if (n >= 2 && tpl_jtok_kind(v, n - 1) == TK_NOT && tpl_jtok_kind(v, n - 2) == TK_IS)
        return TK_NAME; /* the test's name: `x is not not` (Jinja2: "No test named 'not'.") */
    switch (tpl_jtok_kind(v, n - 1)) {
    case TK_ADD: case TK_SUB: case TK_MUL: case TK_DIV: case TK_FLOORDIV: case TK_MOD: case TK_POW:
    case TK_TILDE: case TK_EQ: case TK_NE: case TK_LT: case TK_GT: case TK_LTEQ: case TK_GTEQ: case TK_PIPE:
        return TK_NAME;
    case TK_IN: {
        /* a comparison's `in`, unless it is the `in` of a for tag (its first at bracket depth 0) */
        size_t s = n - 1;
        while (s > 0 && tpl_jtok_kind(v, s) != TK_BLOCK_BEGIN && tpl_jtok_kind(v, s) != TK_VAR_BEGIN) s--;
        if (tpl_jtok_kind(v, s) != TK_BLOCK_BEGIN || s + 1 >= n || tpl_jtok_kind(v, s + 1) != TK_FOR) return TK_NAME;
        int depth = 0;
        for (size_t j = s + 2; j < n; j++) {
            int k = tpl_jtok_kind(v, j);
            if (k == TK_LPAREN || k == TK_LBRACKET || k == TK_LBRACE) depth++;
            else if (k == TK_RPAREN || k == TK_RBRACKET || k == TK_RBRACE) depth--;
            else if (k == TK_IN && depth == 0) return j == n - 1 ? TK_NOT : TK_NAME;
        }
        return TK_NAME;
    }
    default:
        return TK_NOT;
    }
}

/* `not`, `true`, `false`, `none` (and True/False/None) are names to Jinja2's lexer too; its parser
 * reads them as a constant or the operator only where an expression's primary stands. They are
 * names where Jinja2 reads a name: a filter's name (`x|false`: "No filter named 'false'."), a call's
 * keyword argument (`dict(not=1)`, `f(true=1)`: the next byte is a single `=`), and `not` as an
 * assignment target (`{% set not = 1 %}`, `{% for not in xs %}`, `{% with not = 1 %}`, a macro's
 * parameter); true/false/none as a set/for/with target stay constants (Jinja2: "can't assign to
 * 'const'"). */
static int const_word(const tpl_jtok_vec *v, int kind, const unsigned char *cur, const unsigned char *lim)
{
    size_t n = v->n;
    if (n == 0) return kind;
    int prev = tpl_jtok_kind(v, n - 1);
    if (prev == TK_PIPE) return TK_NAME;
    if (prev == TK_FILTER && n >= 2 && tpl_jtok_kind(v, n - 2) == TK_BLOCK_BEGIN) return TK_NAME;
    if (kind == TK_NOT && n >= 2 && tpl_jtok_kind(v, n - 2) == TK_BLOCK_BEGIN &&
        (prev == TK_SET || prev == TK_FOR || prev == TK_WITH))
        return TK_NAME;
    if (prev != TK_LPAREN && prev != TK_COMMA) return kind;
    if (kind == TK_NOT && prev == TK_COMMA) {
        /* `{% set a, not = ... %}`, `{% for (a, b), not in ... %}`: a name in the target's tuple of
         * primaries (inside its parentheses, Jinja2 parses expressions: `(a, not)` stays `not`) */
        size_t s = n - 1;
        int d = 0;
        while (s > 0) {
            int k = tpl_jtok_kind(v, s);
            if (k == TK_BLOCK_BEGIN || k == TK_VAR_BEGIN) break;
            if (k == TK_RPAREN) d++;
            else if (k == TK_LPAREN) { if (d == 0) break; d--; }
            else if (d == 0 && k != TK_NAME && k != TK_COMMA) break;
            s--;
        }
        int k = tpl_jtok_kind(v, s);
        if (s > 0 && (k == TK_SET || k == TK_FOR) && tpl_jtok_kind(v, s - 1) == TK_BLOCK_BEGIN) return TK_NAME;
    }
    const unsigned char *p = cur;
    while (p < lim && (*p == ' ' || *p == '\t' || *p == '\n' || *p == '\r')) p++;
    bool kwarg = p < lim && *p == '=' && !(p + 1 < lim && p[1] == '=');
    /* the innermost open bracket */
    size_t j = n;
    int depth = 0;
    while (j > 0) {
        int k = tpl_jtok_kind(v, --j);
        if (k == TK_BLOCK_BEGIN || k == TK_VAR_BEGIN) return kind;
        if (k == TK_RPAREN || k == TK_RBRACKET || k == TK_RBRACE) depth++;
        else if (k == TK_LPAREN || k == TK_LBRACKET || k == TK_LBRACE) {
            if (depth == 0) break;
            depth--;
        }
    }
    if (tpl_jtok_kind(v, j) != TK_LPAREN || j == 0) return kind;
    /* a macro's parameter list: `{% macro m(not) %}`, `m(not=1)` (true there: the parser refuses
     * it as Jinja2's parse_signature does, "can't assign to 'name'") */
    /* and a call block's: `{% call(not) m() %}` */
    if ((j >= 3 && tpl_jtok_kind(v, j - 2) == TK_MACRO && tpl_jtok_kind(v, j - 3) == TK_BLOCK_BEGIN) ||
        (j >= 2 && tpl_jtok_kind(v, j - 1) == TK_CALL && tpl_jtok_kind(v, j - 2) == TK_BLOCK_BEGIN))
        return p < lim && (*p == ',' || *p == ')' || kwarg) ? TK_NAME : kind;
    return kwarg && ends_operand(v, j - 1) ? TK_NAME : kind;
}

/* ---- the scanner ---- */

typedef struct lexer {
    const unsigned char *src, *cur, *lim, *tok;
    const tpl_lex_opts *o;
    tpl_jtok_vec *out;
    int depth;            /* open ( [ { inside the current tag */
    unsigned char open[64];      /* the innermost 64 of them (as Jinja2's balancing stack) */
    bool line_starting;   /* the last match ended with a newline (Jinja2's line_starting) */
    bool after_dot;       /* previous token was `.`: numbers lex as integers, words as names */
    size_t tag_first;     /* index of the current tag's first token (after its BEGIN) */
    bool import_seen;     /* the current `{% from %}` tag's keyword `import` was read */
    tpl_lex_result res;
} lexer;

static bool lex_nomem(lexer *lx)
{
    snprintf(lx->res.msg, sizeof lx->res.msg, "%s", tpl_error_kind_format(TPL_EK_NOMEM));
    lx->res.nomem = true;
    lx->res.ok = false;
    return false;
}

/* emit's slow path: the vector grows, or the token is long (its length kept in v->longs). */
static __attribute__((noinline)) bool emit_slow(lexer *lx, int kind, const unsigned char *s, size_t n, uint8_t flag)
{
    tpl_jtok_vec *v = lx->out;
    if (v->n == v->cap) {
        size_t cap = v->cap ? v->cap * 2 : 256;
        tpl_jtok *nv = realloc(v->v, cap * sizeof *nv);
        if (!nv) return lex_nomem(lx);
        v->v = nv;
        v->cap = cap;
    }
    uint16_t len = (uint16_t)n;
    if (n >= TPL_JTOK_LONG) {
        if (v->nlongs == v->lcap) {
            size_t cap = v->lcap ? v->lcap * 2 : 16;
            tpl_jlong *nl = realloc(v->longs, cap * sizeof *nl);
            if (!nl) return lex_nomem(lx);
            v->longs = nl;
            v->lcap = cap;
        }
        v->longs[v->nlongs++] = (tpl_jlong){ (uint32_t)v->n, (uint32_t)n };
        len = TPL_JTOK_LONG;
    }
    unsigned code = flag == '-' ? 1u : flag == '+' ? 2u : 0u;
    v->v[v->n++] = (tpl_jtok){ (uint32_t)(s - lx->src), len, (uint16_t)((unsigned)kind | code << 14) };
    return true;
}

/* Appends a token (inline: the lexer's every token; issue 21, compile time). */
/* `import` and `as` are names to Jinja2's lexer too: its parser reads them as keywords only in
 * the tags that take them: `import` opening a tag, `import` after a `{% from %}` tag's template
 * expression (at bracket depth 0), `as` at depth 0 in an `{% import %}` tag or after a from-tag's
 * `import`. Anywhere else (`{% for import in xs %}`, `{{ as if c }}`) they name variables. */
static int import_word(lexer *lx, int kind)
{
    const tpl_jtok_vec *v = lx->out;
    size_t n = v->n;
    if (lx->tag_first == 0 || n < lx->tag_first || tpl_jtok_kind(v, lx->tag_first - 1) != TK_BLOCK_BEGIN) return TK_NAME;
    if (n == lx->tag_first) return kind == TK_IMPORT ? kind : TK_NAME;
    int opener = tpl_jtok_kind(v, lx->tag_first);
    if (kind == TK_IMPORT) {
        if (opener == TK_FROM && !lx->import_seen && lx->depth == 0 && n >= lx->tag_first + 2) {
            lx->import_seen = true;
            return kind;
        }
        return TK_NAME;
    }
    if (lx->depth == 0 && ((opener == TK_IMPORT && n >= lx->tag_first + 2) || (opener == TK_FROM && lx->import_seen)))
        return kind;
    return TK_NAME;
}

static inline bool emit(lexer *lx, int kind, const unsigned char *s, size_t n, uint8_t flag)
{
    tpl_jtok_vec *v = lx->out;
    if (__builtin_expect(v->n == v->cap || n >= TPL_JTOK_LONG, 0)) return emit_slow(lx, kind, s, n, flag);
    unsigned code = flag == '-' ? 1u : flag == '+' ? 2u : 0u;
    v->v[v->n++] = (tpl_jtok){ (uint32_t)(s - lx->src), (uint16_t)n, (uint16_t)((unsigned)kind | code << 14) };
    return true;
}

void tpl_jtok_free(tpl_jtok_vec *v)
{
    free(v->v);
    free(v->longs);
    v->v = NULL;
    v->longs = NULL;
    v->n = v->cap = v->nlongs = v->lcap = v->nonstream = 0;
}

static bool fail(lexer *lx, const unsigned char *at, const char *msg)
{
    lx->res.ok = false;
    lx->res.err_off = (uint32_t)(at - lx->src);
    snprintf(lx->res.msg, sizeof lx->res.msg, "%s", msg);
    return false;
}

/* Jinja2's "unexpected char X at N": X as Python's repr of the one-character string (cp, n bytes
 * at at), N its index in the source in code points. */
static bool fail_char(lexer *lx, const unsigned char *at, uint32_t cp, size_t n)
{
    char msg[80], e[11];
    size_t pos = 0;
    for (const unsigned char *q = lx->src; q < at; q++) pos += (*q & 0xC0) != 0x80;
    if (cp == '\\') snprintf(msg, sizeof msg, "unexpected char '\\\\' at %zu", pos);
    else if (cp == '\'') snprintf(msg, sizeof msg, "unexpected char \"'\" at %zu", pos);
    else if (tpl_py_isprintable(cp)) snprintf(msg, sizeof msg, "unexpected char '%.*s' at %zu", (int)n, (const char *)at, pos);
    else snprintf(msg, sizeof msg, "unexpected char '%.*s' at %zu", tpl_py_escape_cp(e, cp), e, pos);
    return fail(lx, at, msg);
}

/* An opening bracket inside a tag: counted, and remembered while the stack has room. */
static bool open_bracket(lexer *lx, int kind)
{
    if (lx->depth < (int)sizeof lx->open) {
        lx->open[lx->depth] = *lx->tok;
    }
    lx->depth++;
    return emit(lx, kind, lx->tok, 1, 0);
}

/* The closer matching an opening bracket. */
static unsigned char closer_of(unsigned char open) { return open == '(' ? ')' : open == '[' ? ']' : '}'; }

/* A closing bracket inside a tag: one that does not match the innermost open bracket is
 * Jinja2's "unexpected ')', expected ']'" at the closer (so `{{ (1 }}` points at its `}}`), one
 * with no bracket open its "unexpected ')'". */
static bool close_bracket(lexer *lx, int kind)
{
    if (lx->depth == 0) { /* (with nothing open: Jinja2's "unexpected ')'") */
        char msg[32];
        snprintf(msg, sizeof msg, "unexpected '%c'", *lx->tok);
        return fail(lx, lx->tok, msg);
    }
    lx->depth--;
    if (lx->depth < (int)sizeof lx->open && closer_of(lx->open[lx->depth]) != *lx->tok) {
        char msg[64];
        snprintf(msg, sizeof msg, "unexpected '%c', expected '%c'", *lx->tok, closer_of(lx->open[lx->depth]));
        return fail(lx, lx->tok, msg);
    }
    return emit(lx, kind, lx->tok, 1, 0);
}

/* Length of the whitespace (Python \s) starting at p, limited to lim. */
static size_t ws_len(const unsigned char *p, const unsigned char *lim)
{
    size_t i = 0, n = (size_t)(lim - p);
    while (i < n) {
        unsigned char b = p[i];
        if (b < 0x80) { /* ASCII: Python's whitespace is \t..\r and \x1c..' ' */
            if (!((b >= 0x09 && b <= 0x0D) || (b >= 0x1C && b <= 0x20))) break;
            i++;
            continue;
        }
        size_t k = i;
        uint32_t cp = tpl_utf8_next((const char *)p, n, &k);
        if (!tpl_py_isspace(cp)) break;
        i = k;
    }
    return i;
}

/* Python str.rstrip() on [s, s+n): the new length. */
static size_t rstrip_len(const unsigned char *s, size_t n)
{
    while (n > 0) {
        /* step back one code point */
        size_t k = n - 1;
        while (k > 0 && (s[k] & 0xC0) == 0x80) k--;
        size_t i = k;
        uint32_t cp = tpl_utf8_next((const char *)s, n, &i);
        if (!tpl_py_isspace(cp)) break;
        n = k;
    }
    return n;
}

/* Emits the text before a tag with Jinja2's whitespace control applied.
 * sign: the tag's '-'/'+'/0; lstrip: the tag is a block, comment or raw tag. */
static bool emit_text(lexer *lx, const unsigned char *s, size_t n, int sign, bool lstrip)
{
    if (sign == '-') {
        n = rstrip_len(s, n);
    } else if (sign != '+' && lstrip && lx->o->lstrip_blocks) {
        size_t l_pos = 0;
        for (size_t i = n; i > 0; i--)
            if (s[i - 1] == '\n') { l_pos = i; break; }
        if ((l_pos > 0 || lx->line_starting) && n > l_pos && ws_len(s + l_pos, s + n) == n - l_pos)
            n = l_pos;
    }
    if (n == 0) return true;
    return emit(lx, TK_TEXT, s, n, 0);
}

/*!re2c
    re2c:define:YYCTYPE = "unsigned char";
    re2c:define:YYCURSOR = "lx->cur";
    re2c:define:YYLIMIT = "lx->lim";
    re2c:yyfill:enable = 0;
    re2c:flags:tags = 0;

    ws      = [ \t\n\r\v\f\x1c-\x1f]+;
    digits  = [0-9]+ ("_" [0-9]+)*;
    name    = [a-zA-Z_\x80-\xff] [a-zA-Z0-9_\x80-\xff]*;
    aname   = [a-zA-Z_] [a-zA-Z0-9_]*;
    integer = "0" [bB] ("_"? [01])+ | "0" [oO] ("_"? [0-7])+ | "0" [xX] ("_"? [0-9a-fA-F])+ | [1-9] ("_"? [0-9])* | "0" ("_"? "0")*;
    exp     = [eE] [+-]? digits;
    float   = digits (("." digits)? exp | "." digits);
*/

enum { TAG_NONE, TAG_VAR, TAG_BLOCK };

/* Scans expression tokens until the end of the current tag. Returns false on error. */
static bool scan_tag(lexer *lx, int tag)
{
    lx->depth = 0;
    lx->after_dot = false;
    for (;;) {
        lx->tok = lx->cur;
        if (lx->cur >= lx->lim) /* Jinja2's lexer stops at the end, inside a tag too (its parser
                                 * then says what it expected: tpl_jinja_syntax_error at EOF) */
            return true;
        const unsigned char *YYMARKER;
        bool dot = lx->after_dot;
        lx->after_dot = false;
        /*!re2c
        ws { continue; }
        "-}}" {
            if (tag == TAG_VAR && lx->depth == 0) {
                if (!emit(lx, TK_VAR_END, lx->tok, 3, '-')) return false;
                lx->cur += ws_len(lx->cur, lx->lim);
                lx->line_starting = lx->cur > lx->src && lx->cur[-1] == '\n';
                return true;
            }
            lx->cur = lx->tok + 1;
            if (!emit(lx, TK_SUB, lx->tok, 1, 0)) return false;
            continue;
        }
        "}}" {
            if (tag == TAG_VAR && lx->depth == 0) {
                lx->line_starting = false;
                return emit(lx, TK_VAR_END, lx->tok, 2, 0);
            }
            lx->cur = lx->tok + 1;
            goto close_brace;
        }
        "+%}" | "-%}" | "%}" {
            if (tag == TAG_BLOCK && lx->depth == 0) {
                int sign = lx->tok[0] == '%' ? 0 : lx->tok[0];
                if (!emit(lx, TK_BLOCK_END, lx->tok, (size_t)(lx->cur - lx->tok), (uint8_t)sign)) return false;
                if (sign == '-')
                    lx->cur += ws_len(lx->cur, lx->lim);
                else if (sign == 0 && lx->o->trim_blocks && lx->cur < lx->lim && *lx->cur == '\n')
                    lx->cur++;
                lx->line_starting = lx->cur[-1] == '\n';
                return true;
            }
            lx->cur = lx->tok + 1;
            if (lx->tok[0] == '%') { if (!emit(lx, TK_MOD, lx->tok, 1, 0)) return false; }
            else if (!emit(lx, lx->tok[0] == '+' ? TK_ADD : TK_SUB, lx->tok, 1, 0)) return false;
            continue;
        }
        float {
            if (dot) { /* `x.0.1`: after a dot, numbers are integers (Jinja2's (?<!\.)) */
                const unsigned char *p = lx->tok;
                while (p < lx->cur && (*p >= '0' && *p <= '9')) p++;
                lx->cur = p;
                if (!emit(lx, TK_INTEGER, lx->tok, (size_t)(p - lx->tok), 0)) return false;
                continue;
            }
            if (!emit(lx, TK_FLOAT, lx->tok, (size_t)(lx->cur - lx->tok), 0)) return false;
            continue;
        }
        integer { if (!emit(lx, TK_INTEGER, lx->tok, (size_t)(lx->cur - lx->tok), 0)) return false; continue; }
        aname {
            /* an all-ASCII name (not followed by a byte >= 0x80: `name` below matches longer
             * then, and the longest match wins): no per-byte recheck (issue 21, compile time) */
            size_t n = (size_t)(lx->cur - lx->tok);
            int kind = dot ? TK_NAME : tpl_jinja_keyword((const char *)lx->tok, n);
            if (kind == TK_IMPORT || kind == TK_AS) kind = import_word(lx, kind);
            if (kind == TK_IF || kind == TK_ELSE || kind == TK_IN || kind == TK_IS || kind == TK_AND ||
                kind == TK_OR)
                kind = operator_word(lx->out, kind);
            else if (kind == TK_NOT)
                kind = not_word(lx->out);
            if (kind == TK_NOT || kind == TK_TRUE || kind == TK_FALSE || kind == TK_NONE)
                kind = const_word(lx->out, kind, lx->cur, lx->lim);
            if (!emit(lx, kind, lx->tok, n, 0)) return false;
            continue;
        }
        name {
            /* bytes >= 0x80 are read per code point as Jinja2's patterns see them: Unicode
             * whitespace separates tokens (\\s), a name runs over \\w and XID_Continue
             * characters and must be a Python identifier; anything else is an unexpected char */
            const unsigned char *q = lx->tok;
            bool ascii = true;
            while (q < lx->cur) {
                if (*q < 0x80) { q++; continue; }
                size_t i = 0;
                uint32_t cp = tpl_utf8_next((const char *)q, (size_t)(lx->cur - q), &i);
                if (!tpl_py_isnamechar(cp)) break;
                ascii = false;
                q += i;
            }
            if (q == lx->tok) {
                size_t i = 0;
                uint32_t cp = tpl_utf8_next((const char *)q, (size_t)(lx->lim - q), &i);
                if (tpl_py_isspace(cp)) { lx->cur = q + i; continue; }
                return fail_char(lx, q, cp, i);
            }
            lx->cur = q;
            size_t n = (size_t)(lx->cur - lx->tok);
            if (!ascii && !tpl_py_isidentifier((const char *)lx->tok, n)) return fail(lx, lx->tok, "Invalid character in identifier");
            int kind = dot ? TK_NAME : tpl_jinja_keyword((const char *)lx->tok, n);
            if (kind == TK_IMPORT || kind == TK_AS) kind = import_word(lx, kind);
            if (kind == TK_IF || kind == TK_ELSE || kind == TK_IN || kind == TK_IS || kind == TK_AND ||
                kind == TK_OR)
                kind = operator_word(lx->out, kind);
            else if (kind == TK_NOT)
                kind = not_word(lx->out);
            if (kind == TK_NOT || kind == TK_TRUE || kind == TK_FALSE || kind == TK_NONE)
                kind = const_word(lx->out, kind, lx->cur, lx->lim);
            if (!emit(lx, kind, lx->tok, n, 0)) return false;
            continue;
        }
        ['"] {
            /* scanned by hand, bounded by lim: a NUL byte inside a literal is a character, as in Jinja2 */
            const unsigned char *p = lx->cur;
            while (p < lx->lim && *p != lx->tok[0]) p += (*p == '\\' && p + 1 < lx->lim) ? 2 : 1;
            if (p >= lx->lim) return fail_char(lx, lx->tok, *lx->tok, 1); /* (Jinja2: no string matches there) */
            lx->cur = p + 1;
            if (!emit(lx, TK_STRING, lx->tok, (size_t)(lx->cur - lx->tok), 0)) return false;
            continue;
        }
        "//" { if (!emit(lx, TK_FLOORDIV, lx->tok, 2, 0)) return false; continue; }
        "**" { if (!emit(lx, TK_POW, lx->tok, 2, 0)) return false; continue; }
        "==" { if (!emit(lx, TK_EQ, lx->tok, 2, 0)) return false; continue; }
        "!=" { if (!emit(lx, TK_NE, lx->tok, 2, 0)) return false; continue; }
        ">=" { if (!emit(lx, TK_GTEQ, lx->tok, 2, 0)) return false; continue; }
        "<=" { if (!emit(lx, TK_LTEQ, lx->tok, 2, 0)) return false; continue; }
        "+" { if (!emit(lx, TK_ADD, lx->tok, 1, 0)) return false; continue; }
        "-" { if (!emit(lx, TK_SUB, lx->tok, 1, 0)) return false; continue; }
        "*" { if (!emit(lx, TK_MUL, lx->tok, 1, 0)) return false; continue; }
        "/" { if (!emit(lx, TK_DIV, lx->tok, 1, 0)) return false; continue; }
        "%" { if (!emit(lx, TK_MOD, lx->tok, 1, 0)) return false; continue; }
        "~" { if (!emit(lx, TK_TILDE, lx->tok, 1, 0)) return false; continue; }
        ">" { if (!emit(lx, TK_GT, lx->tok, 1, 0)) return false; continue; }
        "<" { if (!emit(lx, TK_LT, lx->tok, 1, 0)) return false; continue; }
        "=" { if (!emit(lx, TK_ASSIGN, lx->tok, 1, 0)) return false; continue; }
        "." { lx->after_dot = true; if (!emit(lx, TK_DOT, lx->tok, 1, 0)) return false; continue; }
        ":" { if (!emit(lx, TK_COLON, lx->tok, 1, 0)) return false; continue; }
        "|" { if (!emit(lx, TK_PIPE, lx->tok, 1, 0)) return false; continue; }
        "," { if (!emit(lx, TK_COMMA, lx->tok, 1, 0)) return false; continue; }
        ";" { if (!emit(lx, TK_SEMICOLON, lx->tok, 1, 0)) return false; continue; }
        "(" { if (!open_bracket(lx, TK_LPAREN)) return false; continue; }
        "[" { if (!open_bracket(lx, TK_LBRACKET)) return false; continue; }
        "{" { if (!open_bracket(lx, TK_LBRACE)) return false; continue; }
        ")" { if (!close_bracket(lx, TK_RPAREN)) return false; continue; }
        "]" { if (!close_bracket(lx, TK_RBRACKET)) return false; continue; }
        "}" { goto close_brace; }
        * { return fail_char(lx, lx->tok, lx->tok[0], 1); }
        */
    close_brace:
        if (!close_bracket(lx, TK_RBRACE)) return false;
    }
}

/* Finds the first `#}` (with its sign) from p; returns its position or NULL. */
static const unsigned char *find_comment_end(const unsigned char *p, const unsigned char *lim)
{
    for (; p + 1 < lim; p++) {
        if ((p[0] == '-' || p[0] == '+') && p + 2 < lim && p[1] == '#' && p[2] == '}') return p;
        if (p[0] == '#' && p[1] == '}') return p;
    }
    return NULL;
}

/* Matches `{%[-+]?\s*endraw\s*` at p and then one of `+%}`, `-%}`, `%}`; on success stores the
 * begin sign, the end sign and the end of the match. */
static bool match_endraw(const unsigned char *p, const unsigned char *lim, int *bsign, int *esign,
                         const unsigned char **end)
{
    if (p + 2 > lim || p[0] != '{' || p[1] != '%') return false;
    p += 2;
    *bsign = 0;
    if (p < lim && (*p == '-' || *p == '+')) *bsign = *p++;
    p += ws_len(p, lim);
    if ((size_t)(lim - p) < 6 || memcmp(p, "endraw", 6) != 0) return false;
    p += 6;
    p += ws_len(p, lim);
    *esign = 0;
    if (p < lim && (*p == '-' || *p == '+')) *esign = *p++;
    if (p + 2 > lim || p[0] != '%' || p[1] != '}') return false;
    *end = p + 2;
    return true;
}

/* Matches the raw-begin tag `{%[-+]?\s*raw\s*(-%}\s*|%})` at p. */
static bool match_raw(const unsigned char *p, const unsigned char *lim, const unsigned char **end)
{
    p += 2;
    if (p < lim && (*p == '-' || *p == '+')) p++;
    p += ws_len(p, lim);
    if ((size_t)(lim - p) < 3 || memcmp(p, "raw", 3) != 0) return false;
    p += 3;
    size_t w = ws_len(p, lim);
    if (w == 0 && p < lim && p[0] != '-' && p[0] != '%') return false; /* `rawx` is a name */
    p += w;
    if (p + 3 <= lim && p[0] == '-' && p[1] == '%' && p[2] == '}') {
        p += 3;
        p += ws_len(p, lim);
    } else if (p + 2 <= lim && p[0] == '%' && p[1] == '}') {
        p += 2;
    } else {
        return false;
    }
    *end = p;
    return true;
}

tpl_lex_result tpl_jinja_lex(const char *src, size_t n, const tpl_lex_opts *o, tpl_jtok_vec *out)
{
    lexer lx = { 0 };
    lx.src = (const unsigned char *)src;
    lx.cur = lx.src;
    lx.lim = lx.src + n;
    lx.o = o;
    lx.out = out;
    lx.line_starting = true;
    lx.res.ok = true;
    const unsigned char *text = lx.cur;
    while (lx.cur < lx.lim) {
        const unsigned char *p = memchr(lx.cur, '{', (size_t)(lx.lim - lx.cur));
        if (!p || p + 1 >= lx.lim) break;
        unsigned char c = p[1];
        if (c != '{' && c != '%' && c != '#') { lx.cur = p + 1; continue; }
        int sign = p + 2 < lx.lim && (p[2] == '-' || p[2] == '+') ? p[2] : 0;
        const unsigned char *raw_end;
        if (c == '%' && match_raw(p, lx.lim, &raw_end)) {
            if (!emit_text(&lx, text, (size_t)(p - text), sign, true)) return lx.res;
            /* raw body: up to the first {% endraw %} */
            const unsigned char *q = raw_end, *body = raw_end, *end = NULL;
            int bsign = 0, esign = 0;
            lx.line_starting = raw_end[-1] == '\n';
            for (; q < lx.lim; q++)
                if (*q == '{' && match_endraw(q, lx.lim, &bsign, &esign, &end)) break;
            if (q >= lx.lim) {
                /* Jinja2 fails only on a byte left after the tag (its Failure rule matches `.`):
                 * `{% raw %}` ending the template (its trailing newline dropped) renders nothing */
                if (raw_end < lx.lim) { fail(&lx, p, "Missing end of raw directive"); return lx.res; }
                text = lx.lim;
                break;
            }
            if (!emit_text(&lx, body, (size_t)(q - body), bsign, true)) return lx.res;
            lx.cur = end;
            if (esign == '-') lx.cur += ws_len(lx.cur, lx.lim);
            else if (esign == 0 && o->trim_blocks && lx.cur < lx.lim && *lx.cur == '\n') lx.cur++;
            lx.line_starting = lx.cur[-1] == '\n';
            text = lx.cur;
            continue;
        }
        if (!emit_text(&lx, text, (size_t)(p - text), sign, c != '{')) return lx.res;
        lx.tok = p;
        lx.cur = p + 2 + (sign ? 1 : 0);
        if (c == '#' && lx.cur >= lx.lim) { /* Jinja2's lexer stops at the end: `x{#` renders `x` */
            text = lx.lim;
            break;
        }
        if (c != '#' && lx.cur + ws_len(lx.cur, lx.lim) >= lx.lim) { /* `{{`, `{%` and blanks to the end */
            fail(&lx, p, c == '{' ? "unexpected 'end of template'" : "tag name expected");
            return lx.res;
        }
        if (c == '#') {
            const unsigned char *e = find_comment_end(lx.cur, lx.lim);
            if (!e) { fail(&lx, p, "Missing end of comment tag"); return lx.res; }
            if (e[0] == '-') {
                lx.cur = e + 3;
                lx.cur += ws_len(lx.cur, lx.lim);
            } else if (e[0] == '+') {
                lx.cur = e + 3;
            } else {
                lx.cur = e + 2;
                if (o->trim_blocks && lx.cur < lx.lim && *lx.cur == '\n') lx.cur++;
            }
            lx.line_starting = lx.cur[-1] == '\n';
        } else {
            int tag = c == '{' ? TAG_VAR : TAG_BLOCK;
            if (!emit(&lx, tag == TAG_VAR ? TK_VAR_BEGIN : TK_BLOCK_BEGIN, p, (size_t)(lx.cur - p), (uint8_t)sign))
                return lx.res;
            size_t first = out->n;
            lx.tag_first = first;
            lx.import_seen = false;
            if (!scan_tag(&lx, tag)) return lx.res;
            if (tag == TAG_BLOCK && first < out->n) {
                switch (tpl_jtok_kind(out, first)) {
                case TK_IF: case TK_ELIF: case TK_ELSE: case TK_ENDIF: case TK_FOR: case TK_ENDFOR:
                case TK_BREAK: case TK_CONTINUE:
                    break;
                default:
                    out->nonstream++;
                }
            }
        }
        text = lx.cur;
    }
    if (text < lx.lim) emit(&lx, TK_TEXT, text, (size_t)(lx.lim - text), 0);
    return lx.res;
}
