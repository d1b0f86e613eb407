/* tpl_compile_all: every error of a template, not only the first (`tplc lint`).
 *
 * Recovery works at tag boundaries, above the parsers: after an error, the tag (Jinja `{% %}`,
 * `{{ }}`; ERB `<% %>`; a format field `{...}`) that holds the error's location is neutralised
 * in a private copy of the source and the copy is compiled again, until it compiles, the error
 * lies outside any tag (the end of the template: an unclosed block), in another file (an included
 * template), or cap errors are found. Neutralising keeps every other byte's line and column: a
 * block opener becomes an opener of the same keyword that parses (`{%for _ in()%}`, ERB
 * `<%if 1%>`), so its end tag still matches, when it fits in the tag's first line; anything
 * else becomes spaces (newlines kept). Each error's source line is taken from the original text. */
#include <stdlib.h>
#include <string.h>
#include "../runtime/vm.h"
#include "../runtime/error.h"

static bool is_space(char c) { return c == ' ' || c == '\t' || c == '\r' || c == '\n'; }

/* Byte offset of 1-based line:column (code points) in s; false when it is past the text. */
static bool offset_of(const char *s, size_t n, uint32_t line, uint32_t col, size_t *off)
{
    size_t i = 0;
    for (uint32_t l = 1; l < line; l++) {
        const char *nl = memchr(s + i, '\n', n - i);
        if (!nl) return false;
        i = (size_t)(nl - s) + 1;
    }
    for (uint32_t c = 1; c < col && i < n && s[i] != '\n'; c++) tpl_utf8_next(s, n, &i);
    if (i > n) return false;
    *off = i;
    return true;
}

/* The last occurrence of the two-byte opener o at or before off, or SIZE_MAX. */
static size_t last_before(const char *s, size_t off, const char *o)
{
    for (size_t i = off + 1; i-- > 0;)
        if (s[i] == o[0] && s[i + 1] == o[1]) return i;
    return SIZE_MAX;
}

/* The tag [*a, *b) around byte off: the nearest opener at or before off whose closer ends after
 * off. False when off is in no tag. */
static bool enclosing_tag(tpl_syntax syn, const char *s, size_t n, size_t off, size_t *a, size_t *b)
{
    if (off >= n) return false;
    static const char *const jinja[][2] = { { "{%", "%}" }, { "{{", "}}" }, { "{#", "#}" } };
    static const char *const erb[][2] = { { "<%", "%>" } };
    static const char *const fmt[][2] = { { "{", "}" } };
    const char *const (*pairs)[2] = syn == TPL_SYNTAX_JINJA ? jinja : syn == TPL_SYNTAX_ERB ? erb : fmt;
    int npairs = syn == TPL_SYNTAX_JINJA ? 3 : 1;
    size_t best = SIZE_MAX, best_end = 0;
    for (int k = 0; k < npairs; k++) {
        const char *o = pairs[k][0], *c = pairs[k][1];
        size_t ol = strlen(o), cl = strlen(c);
        size_t i = SIZE_MAX;
        if (ol == 2) i = last_before(s, off < n - 1 ? off : n - 2, o);
        else for (size_t j = off + 1; j-- > 0;) if (s[j] == o[0]) { i = j; break; }
        if (i == SIZE_MAX || (best != SIZE_MAX && i < best)) continue;
        const char *end = NULL;
        for (size_t j = i + ol; j + cl <= n; j++)
            if (memcmp(s + j, c, cl) == 0) { end = s + j + cl; break; }
        if (!end || (size_t)(end - s) < off) continue; /* an error just after a tag is the tag's */
        best = i;
        best_end = (size_t)(end - s);
    }
    if (best == SIZE_MAX) return false;
    *a = best;
    *b = best_end;
    return true;
}

/* The first word of a tag's code (after the opener and a -/+/= marker). */
static size_t first_word(const char *s, size_t a, size_t b, size_t *w)
{
    size_t i = a + 2;
    while (i < b && (s[i] == '-' || s[i] == '+' || s[i] == '=')) i++;
    while (i < b && is_space(s[i])) i++;
    size_t j = i;
    while (j < b && (s[j] == '_' || (s[j] >= 'a' && s[j] <= 'z') || (s[j] >= 'A' && s[j] <= 'Z'))) j++;
    *w = i;
    return j - i;
}

static bool word_is(const char *s, size_t w, size_t len, const char *kw)
{
    return strlen(kw) == len && memcmp(s + w, kw, len) == 0;
}

/* An opener of the same block kind that parses, for a Jinja or ERB tag, or NULL. */
static const char *replacement(tpl_syntax syn, const char *s, size_t a, size_t b)
{
    size_t w, len = first_word(s, a, b, &w);
    if (syn == TPL_SYNTAX_JINJA && s[a + 1] == '%') {
        static const char *const map[][2] = {
            { "for", "{%for _ in()%}" }, { "if", "{%if 1%}" }, { "macro", "{%macro _()%}" },
            { "call", "{%call _()%}" }, { "filter", "{%filter e%}" }, { "with", "{%with%}" },
            { "autoescape", "{%autoescape 1%}" },
        };
        for (size_t k = 0; k < sizeof map / sizeof map[0]; k++)
            if (word_is(s, w, len, map[k][0])) return map[k][1];
        if (word_is(s, w, len, "set") && !memchr(s + w, '=', b - w)) return "{%set _%}";
        return NULL;
    }
    if (syn == TPL_SYNTAX_ERB && s[a + 2] != '#') {
        static const char *const kws[] = { "if", "unless", "while", "until", "case", "for", "begin" };
        for (size_t k = 0; k < sizeof kws / sizeof kws[0]; k++)
            if (word_is(s, w, len, kws[k])) return "<%if 1%>";
        /* `... do`, `... do |x|` at the end of the code */
        size_t e = b - 2;
        if (e > a && s[e - 1] == '-') e--;
        while (e > w && is_space(s[e - 1])) e--;
        if (e > w && s[e - 1] == '|') {
            size_t k = e - 1;
            while (k > w && s[k - 1] != '|') k--;
            if (k == w) return NULL;
            e = k - 1;
            while (e > w && is_space(s[e - 1])) e--;
        }
        if (e >= w + 2 && memcmp(s + e - 2, "do", 2) == 0 && (e == w + 2 || is_space(s[e - 3])))
            return "<%if 1%>";
    }
    return NULL;
}

/* Neutralises the tag [a, b) of s (see the top of the file). False when it was neutral already. */
static bool neutralise(tpl_syntax syn, char *s, size_t a, size_t b)
{
    const char *r = replacement(syn, s, a, b);
    size_t rl = r ? strlen(r) : 0;
    const char *nl = memchr(s + a, '\n', b - a);
    if (r && (nl ? (size_t)(nl - s) : b) - a >= rl) {
        if (b - a >= rl && memcmp(s + a, r, rl) == 0) {
            bool rest_blank = true;
            for (size_t i = a + rl; i < b; i++) rest_blank &= is_space(s[i]);
            if (rest_blank) return false;
        }
        memcpy(s + a, r, rl);
        for (size_t i = a + rl; i < b; i++)
            if (s[i] != '\n') s[i] = ' ';
        return true;
    }
    bool changed = false;
    for (size_t i = a; i < b; i++)
        if (s[i] != '\n' && s[i] != ' ') { s[i] = ' '; changed = true; }
    return changed;
}

/* Replaces err's source line with line `line` of the original text (the copy's may show
 * neutralised tags). */
static void original_line(tpl_error *err, const char *src, size_t n)
{
    size_t off;
    if (!err->source_line || !offset_of(src, n, err->line, 1, &off)) return;
    const char *nl = memchr(src + off, '\n', n - off);
    size_t len = nl ? (size_t)(nl - src) - off : n - off;
    if (len && src[off + len - 1] == '\r') len--;
    char *line = malloc(tpl_error_line_copy(NULL, src + off, len) + 1);
    if (!line) return;
    tpl_error_line_copy(line, src + off, len);
    free((char *)err->source_line);
    err->source_line = line;
}

#define RECOVER_BUDGET ((size_t)32 << 20)

/* (a compile memory limit is not: every retry would take the same memory again) */
static bool recoverable(tpl_status st) { return st != TPL_OK && st != TPL_ERR_NOMEM && st != TPL_ERR_LIMIT && st < TPL_ERR_USAGE; }

size_t tpl_compile_all(const char *name, const char *src, size_t len, const tpl_options *opts, tpl_program **out,
                       tpl_error *errs, size_t cap)
{
    if (out) *out = NULL;
    tpl_program *p = NULL;
    tpl_error e = { 0 };
    tpl_status st = tpl_compile(name, src, len, opts, out ? out : &p, &e);
    if (st == TPL_OK) {
        tpl_program_free(p);
        return 0;
    }
    if (!errs || cap == 0) {
        tpl_error_clear(&e);
        return 1;
    }
    errs[0] = e;
    size_t n = 1;
    tpl_syntax syn = opts ? opts->syntax : TPL_SYNTAX_JINJA;
    const char *fname = name ? name : "<template>";
    char *copy = recoverable(st) && src ? malloc(len + 2) : NULL;
    if (!copy) return n;
    memcpy(copy, src, len);
    copy[len] = copy[len + 1] = 0;
    /* Each retry compiles the whole copy again: at most RECOVER_BUDGET bytes of them in all, so a
     * big template full of errors (200,000 bad tags in 3.4 MB: 100 compiles, 5 s of CPU) reports
     * its first errors in bounded time; a template under 320 KiB gets all 100 retries. */
    size_t spent = 0;
    while (n < cap && (spent += len) <= RECOVER_BUDGET) {
        const tpl_error *last = &errs[n - 1];
        size_t off, a, b;
        /* an unclosed block: the error is at the template's last token (Jinja2's line for it),
         * which no neutralised tag would close */
        if (last->message && strncmp(last->message, "Unexpected end of template", 26) == 0) break;
        if (!last->file || strcmp(last->file, fname) != 0 || last->line == 0 ||
            !offset_of(copy, len, last->line, last->column, &off) || !enclosing_tag(syn, copy, len, off, &a, &b) ||
            !neutralise(syn, copy, a, b))
            break;
        tpl_error e2 = { 0 };
        st = tpl_compile(name, copy, len, opts, &p, &e2);
        if (st == TPL_OK) {
            tpl_program_free(p);
            break;
        }
        bool same = e2.line == last->line && e2.column == last->column && e2.message && last->message &&
                    strcmp(e2.message, last->message) == 0;
        if (same) {
            tpl_error_clear(&e2);
            break;
        }
        original_line(&e2, src, len);
        errs[n++] = e2;
        if (!recoverable(st)) break;
    }
    free(copy);
    /* source order (insertion sort: n is small) */
    for (size_t i = 1; i < n; i++) {
        tpl_error x = errs[i];
        size_t j = i;
        for (; j > 0 && (errs[j - 1].line > x.line || (errs[j - 1].line == x.line && errs[j - 1].column > x.column)); j--)
            errs[j] = errs[j - 1];
        errs[j] = x;
    }
    return n;
}
