/* The error model: the kinds of include/tpl_errors.def, error records (tpl_error: filling,
 * clearing, formatting with the source line and a caret) and the one out-of-memory report. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "error.h"
#include "program.h"
#include "vm.h"

static const struct {
    tpl_status status;
    const char *name, *py, *rb, *fmt;
} kinds[TPL_EK__COUNT] = {
#define TPL_ERROR_KIND(id, status, name, py, rb, fmt) [TPL_EK_##id] = { status, name, py, rb, fmt },
#include "../include/tpl_errors.def"
#undef TPL_ERROR_KIND
};

static bool is_kind(tpl_error_kind k) { return (unsigned)k < TPL_EK__COUNT; }

const char *tpl_error_kind_name(tpl_error_kind kind) { return is_kind(kind) ? kinds[kind].name : "unknown"; }

const char *tpl_error_exception(tpl_error_kind kind, tpl_syntax syntax)
{
    if (!is_kind(kind)) return "";
    return syntax == TPL_SYNTAX_ERB ? kinds[kind].rb : kinds[kind].py;
}

tpl_status tpl_error_kind_status(tpl_error_kind kind) { return is_kind(kind) ? kinds[kind].status : TPL_OK; }

tpl_error_kind tpl_status_kind(tpl_status status)
{
    for (unsigned k = 1; k < TPL_EK__COUNT; k++)
        if (kinds[k].status == status) return (tpl_error_kind)k;
    return TPL_EK_NONE;
}

const char *tpl_error_kind_format(tpl_error_kind kind) { return is_kind(kind) ? kinds[kind].fmt : ""; }

tpl_error_kind tpl_error_kind_of_exception(tpl_syntax syntax, const char *name, size_t n)
{
    for (unsigned k = 1; k < TPL_EK__COUNT; k++) {
        const char *e = syntax == TPL_SYNTAX_ERB ? kinds[k].rb : kinds[k].py;
        if (n && strlen(e) == n && memcmp(e, name, n) == 0) return (tpl_error_kind)k;
    }
    return TPL_EK_NONE;
}

tpl_error_kind tpl_error_kind_of_message(tpl_syntax syntax, const char *msg, size_t n, tpl_error_kind dflt)
{
    static const char dym[] = "\nDid you mean?  ";   /* (did_you_mean's lines after the class, as Ruby prints them) */
    for (size_t i = 0; syntax == TPL_SYNTAX_ERB && i + sizeof dym - 1 <= n; i++)
        if (i > 0 && msg[i - 1] == ')' && msg[i] == '\n' && memcmp(msg + i, dym, sizeof dym - 1) == 0) { n = i; break; }
    if (syntax != TPL_SYNTAX_ERB || n < 4 || msg[n - 1] != ')') return dflt;
    size_t b = n - 1;
    while (b > 0 && msg[b - 1] != '(' && msg[b - 1] != ' ') b--;
    if (b < 2 || msg[b - 1] != '(' || msg[b - 2] != ' ') return dflt;
    tpl_error_kind k = tpl_error_kind_of_exception(syntax, msg + b, n - 1 - b);
    return k != TPL_EK_NONE ? k : dflt;
}

tpl_error_kind tpl_fail_kind(tpl_syntax syntax, const char *msg, size_t n)
{
    return tpl_error_kind_of_message(syntax, msg, n, TPL_EK_RUNTIME);
}

static char *dupstr(const char *s)
{
    if (!s) return NULL;
    size_t n = strlen(s);
    char *d = malloc(n + 1);
    if (d) memcpy(d, s, n + 1);
    return d;
}

/* Line and column of byte offset off (at most n); the offset its line begins at. (memchr: a
 * line of 100 KB is not walked byte by byte.) */
static size_t offset_linecol(const char *src, size_t n, uint32_t *off, uint32_t *line, uint32_t *col)
{
    if (*off > n) *off = (uint32_t)n;
    uint32_t l = 1;
    size_t bol = 0;
    for (const char *nl; bol < *off && (nl = memchr(src + bol, '\n', *off - bol)); l++) bol = (size_t)(nl - src) + 1;
    *line = l;
    *col = (uint32_t)tpl_utf8_len(src + bol, *off - bol) + 1;
    return bol;
}

void tpl_offset_to_linecol(const char *src, size_t n, uint32_t off, uint32_t *line, uint32_t *col)
{
    offset_linecol(src, n, &off, line, col);
}

/* Copies the source line from byte offset bol (its start) on (malloc'd). */
static char *source_line(const char *src, size_t n, size_t bol)
{
    if (!src) return NULL;
    const char *nl = bol < n ? memchr(src + bol, '\n', n - bol) : NULL;
    size_t e = nl ? (size_t)(nl - src) : n;
    char *s = malloc(tpl_error_line_copy(NULL, src + bol, e - bol) + 1);
    if (!s) return NULL;
    tpl_error_line_copy(s, src + bol, e - bol);
    return s;
}

size_t tpl_error_line_copy(char *dst, const char *src, size_t n)
{
    size_t o = 0;
    for (size_t i = 0; i < n;) {
        const char *z = memchr(src + i, 0, n - i);
        size_t k = z ? (size_t)(z - (src + i)) : n - i;
        if (dst) memcpy(dst + o, src + i, k);
        o += k;
        i += k;
        if (i < n) { /* a NUL byte */
            if (dst) memcpy(dst + o, "\xE2\x90\x80", 3);
            o += 3;
            i++;
        }
    }
    if (dst) dst[o] = 0;
    return o;
}

void tpl_error_clear(tpl_error *err)
{
    if (!err) return;
    free((char *)err->message);
    free((char *)err->file);
    free((char *)err->source_line);
    memset(err, 0, sizeof *err);
}

tpl_status tpl_error_set(tpl_error *err, tpl_error_kind kind, const char *name, const char *msg)
{
    tpl_status st = tpl_error_kind_status(kind);
    if (!err) return st;
    tpl_error_clear(err);
    err->status = st;
    err->kind = kind;
    err->message = dupstr(msg);
    err->file = dupstr(name);
    return st;
}

tpl_status tpl_error_set_at(tpl_error *err, tpl_error_kind kind, const char *name, const char *src, size_t n,
                            uint32_t off, const char *msg)
{
    tpl_status st = tpl_error_set(err, kind, name ? name : "<template>", msg);
    if (!err) return st;
    size_t bol = offset_linecol(src, n, &off, &err->line, &err->column);
    err->source_line = source_line(src, n, bol);
    return st;
}

tpl_status tpl_error_usage(tpl_error *err, const char *name, const char *msg)
{
    return tpl_error_set(err, TPL_EK_USAGE, name ? name : "<template>", msg);
}

tpl_status tpl_error_nomem(tpl_error *err, const char *name)
{
    return tpl_error_set(err, TPL_EK_NOMEM, name, tpl_error_kind_format(TPL_EK_NOMEM));
}

/* ---- the echoed source line of a diagnostic (issue 13 §3) ----
 * The line is shown as units, one per code point (the error's column counts code points):
 * printable characters as they are, a tab as a tab (so the caret line, which repeats it, lines
 * up), and what a terminal would not show faithfully escaped as Python's backslashreplace and
 * repr write it: an invalid byte \xe9, a C0/C1 control or DEL \x1b, a bidirectional or
 * zero-width format character \u202e (it could reorder what the reader sees). A line wider than
 * DIAG_CUT columns is cut to a window of DIAG_WIDTH columns around the caret (DIAG_LEFT of them
 * before it when the line goes on), "..." marking each cut; the caret stays under its
 * character. A trailing CR (CRLF source) is not shown. */
enum { DIAG_CUT = 120, DIAG_WIDTH = 100, DIAG_LEFT = 60 };

/* Whether cp is a format character that can hide or reorder text (shown escaped). */
static bool diag_invisible(uint32_t cp)
{
    return cp == 0x200B || cp == 0x200C || cp == 0x200D || cp == 0x200E || cp == 0x200F || cp == 0x2028 ||
           cp == 0x2029 || (cp >= 0x202A && cp <= 0x202E) || (cp >= 0x2060 && cp <= 0x2069) || cp == 0xFEFF;
}

/* Display width of the unit at s[i..i+len) (code point cp): 1, or the length of its escape. */
static unsigned diag_unit_width(uint32_t cp, size_t len)
{
    if (cp == 0xFFFD && len == 1) return 4;                          /* invalid byte: \xe9 */
    if ((cp < 0x20 && cp != '\t') || (cp >= 0x7F && cp < 0xA0)) return 4; /* \x1b */
    if (diag_invisible(cp)) return 6;                                 /* \u202e */
    return 1;
}

static void diag_put_unit(tpl_sb *b, const char *s, size_t i, size_t len, uint32_t cp, unsigned w)
{
    if (w == 1) tpl_sb_put(b, s + i, len);
    else if (w == 4) tpl_sb_printf(b, "\\x%02x", len == 1 && cp == 0xFFFD ? (unsigned char)s[i] : (unsigned)cp);
    else tpl_sb_printf(b, "\\u%04x", (unsigned)cp);
}

/* Skips up to k units of s[0..n) from byte *i (an ASCII run 32 or 8 bytes a step: every ASCII
 * byte is one unit); the units skipped (fewer when the line ends first). */
static size_t diag_skip(const char *s, size_t n, size_t *i, size_t k)
{
    size_t at = *i, u = 0;
    while (u < k && at < n) {
        uint64_t w, x[4];
        if (k - u >= 32 && n - at >= 32 && (memcpy(x, s + at, 32), !((x[0] | x[1] | x[2] | x[3]) & 0x8080808080808080ull))) {
            at += 32;
            u += 32;
            continue;
        }
        if (k - u >= 8 && n - at >= 8 && (memcpy(&w, s + at, 8), !(w & 0x8080808080808080ull))) {
            at += 8;
            u += 8;
            continue;
        }
        tpl_utf8_next(s, n, &at);
        u++;
    }
    *i = at;
    return u;
}

/* Appends "  LINE\n  CARET^\n" for source line s[0..n) and 1-based code-point column `column`.
 * Its cost follows the window shown, not the line: the units before the window are skipped (an
 * ASCII run 8 bytes a step), the line's width is counted only up to DIAG_CUT (a 100 KB line
 * took 300 us an error when every unit was measured). */
static void diag_source_line(tpl_sb *b, const char *s, size_t n, uint32_t column)
{
    if (n && s[n - 1] == '\r') n--;
    size_t c = column > 0 ? column - 1 : 0; /* the caret's unit (at most just past the end) */
    /* a short line (at most DIAG_CUT columns) is shown whole */
    size_t nu = 0, total = 0, i = 0;
    while (i < n && total <= DIAG_CUT) {
        size_t at = i;
        uint32_t cp = tpl_utf8_next(s, n, &i);
        total += diag_unit_width(cp, i - at);
        nu++;
    }
    bool whole = i >= n && total <= DIAG_CUT;
    if (whole && c > nu) c = nu;
    /* the units a..z kept: a window never reaches more than DIAG_WIDTH units from the caret
     * (every unit is at least one column wide) */
    size_t off[2 * DIAG_WIDTH + 2]; /* units a..z: off[k - a], w[k - a] */
    unsigned char w[2 * DIAG_WIDTH + 2];
    size_t a, z;
    for (;;) {
        a = whole ? 0 : c > DIAG_WIDTH ? c - DIAG_WIDTH : 0;
        i = 0;
        size_t got = diag_skip(s, n, &i, a);
        if (got < a) { /* the caret is past the line's end (of got units): at the end */
            c = got;
            continue;
        }
        size_t zmax = whole ? nu : c + DIAG_WIDTH;
        for (z = a; z < zmax && i < n; z++) {
            off[z - a] = i;
            uint32_t cp = tpl_utf8_next(s, n, &i);
            w[z - a] = (unsigned char)diag_unit_width(cp, i - off[z - a]);
        }
        off[z - a] = i;
        if (c <= z) break;
        c = z; /* (the line ended before the caret: at the end, the window taken again from there) */
        if (whole || (c > DIAG_WIDTH ? c - DIAG_WIDTH : 0) == a) break;
    }
    bool more = i < n; /* units after z */
    size_t lo = a, hi = z;
    if (!whole) { /* a window: up to DIAG_LEFT columns before the caret, the rest after */
        size_t used = 0;
        lo = c;
        while (lo > a && used + w[lo - 1 - a] <= DIAG_LEFT) used += w[--lo - a];
        hi = c;
        while (hi < z && used + w[hi - a] <= DIAG_WIDTH) used += w[hi++ - a];
        while (lo > a && used + w[lo - 1 - a] <= DIAG_WIDTH) used += w[--lo - a]; /* the line ends early: more before */
    }
    tpl_sb_puts(b, "  ");
    if (lo > 0) tpl_sb_puts(b, "...");
    for (size_t k = lo; k < hi; k++) {
        size_t at = off[k - a];
        uint32_t cp = tpl_utf8_next(s, n, &at);
        diag_put_unit(b, s, off[k - a], off[k + 1 - a] - off[k - a], cp, w[k - a]);
    }
    if (hi < z || more) tpl_sb_puts(b, "...");
    tpl_sb_puts(b, "\n  ");
    if (lo > 0) tpl_sb_puts(b, "   ");
    for (size_t k = lo; k < c; k++) {
        if (w[k - a] == 1 && s[off[k - a]] == '\t') tpl_sb_putc(b, '\t');
        else for (unsigned x = 0; x < w[k - a]; x++) tpl_sb_putc(b, ' ');
    }
    tpl_sb_puts(b, "^\n");
}

char *tpl_error_format(const tpl_error *err)
{
    if (!err) return NULL;
    tpl_sb b;
    tpl_sb_init(&b, NULL);
    if (err->line) {
        tpl_sb_printf(&b, "%s:%u:%u: error: %s\n", err->file ? err->file : "<template>", err->line, err->column,
                      err->message ? err->message : "error");
        if (err->source_line) diag_source_line(&b, err->source_line, strlen(err->source_line), err->column);
    } else {
        tpl_sb_printf(&b, "%s: error: %s\n", err->file ? err->file : "<template>", err->message ? err->message : "error");
    }
    if (b.failed) { tpl_sb_free(&b); return NULL; }
    tpl_sb_putc(&b, 0);
    return b.p;
}
