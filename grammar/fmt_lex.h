/* Format-string scanner (Python str.format syntax): splits a template into literal text and
 * replacement fields, exactly as CPython's MarkupIterator and parse_field do. */
#ifndef TPL_FMT_LEX_H
#define TPL_FMT_LEX_H

#include <stddef.h>
#include <stdint.h>
#include <stdbool.h>

enum { TPL_FMTP_END = 0, TPL_FMTP_TEXT, TPL_FMTP_FIELD, TPL_FMTP_ERROR };

/* One piece of a format string. Offsets are bytes relative to the scanned string. */
typedef struct tpl_fmt_piece {
    int kind;               /* TPL_FMTP_* */
    uint32_t off, len;      /* TEXT: the literal bytes ("{{" gives "{"); FIELD: from '{' to '}' */
    uint32_t name_off, name_len; /* FIELD: the field name (may be empty) */
    int conv;               /* FIELD: 0, or the character after '!' */
    uint32_t spec_off, spec_len; /* FIELD: the format spec after ':' (may be empty) */
    bool spec_nested;       /* FIELD: the spec holds '{' (nested replacement fields) */
    const char *msg;        /* ERROR: Python's message */
    uint32_t err_off;       /* ERROR: where */
} tpl_fmt_piece;

/* Scans the piece starting at *pos in s[0..n) and advances *pos past it. s need not be
 * NUL-terminated. Returns p->kind. */
int tpl_fmt_next(const char *s, size_t n, size_t *pos, tpl_fmt_piece *p);

#endif
