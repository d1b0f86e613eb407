/* Format-string scanner (re2c). The top level (literal runs, "{{", "}}", a field's '{', a lone
 * '}') is a re2c automaton; inside a field, parse_field() follows CPython's
 * Objects/stringlib/unicode_format.h: the name runs to ':' '!' or '}' ('[' ... ']' may hold
 * anything but '{' ends nothing), a conversion is one character, the spec runs to the '}'
 * that balances the field's '{' (nested '{' mark it as needing expansion). */
#include <string.h>
#include "fmt_lex.h"

static int fail(tpl_fmt_piece *p, const char *msg, size_t off)
{
    p->kind = TPL_FMTP_ERROR;
    p->msg = msg;
    p->err_off = (uint32_t)off;
    return TPL_FMTP_ERROR;
}

/* s[*pos] is just after the field's '{'. */
static int parse_field(const char *s, size_t n, size_t *pos, size_t open, tpl_fmt_piece *p)
{
    size_t i = *pos;
    char c = 0;
    p->kind = TPL_FMTP_FIELD;
    p->name_off = (uint32_t)i;
    p->conv = 0;
    p->spec_off = p->spec_len = 0;
    p->spec_nested = false;
    while (i < n) {
        c = s[i++];
        if (c == '{') return fail(p, "unexpected '{' in field name", i - 1);
        if (c == '[') {
            while (i < n && s[i] != ']') i++;
            c = 0;
            continue;
        }
        if (c == '}' || c == ':' || c == '!') break;
        c = 0;
    }
    p->name_len = (uint32_t)(i - (c ? 1 : 0) - p->name_off);
    if (c == '!' || c == ':') {
        if (c == '!') {
            if (i >= n) return fail(p, "end of string while looking for conversion specifier", i);
            p->conv = (unsigned char)s[i++];
            if (i < n) {
                c = s[i++];
                if (c == '}') {
                    p->spec_off = (uint32_t)i;
                    goto done;
                }
                if (c != ':') return fail(p, "expected ':' after conversion specifier", i - 1);
            }
        }
        p->spec_off = (uint32_t)i;
        int count = 1;
        while (i < n) {
            c = s[i++];
            if (c == '{') { p->spec_nested = true; count++; }
            else if (c == '}' && --count == 0) {
                p->spec_len = (uint32_t)(i - 1 - p->spec_off);
                goto done;
            }
        }
        return fail(p, "unmatched '{' in format spec", open);
    } else if (c != '}') {
        return fail(p, "expected '}' before end of string", open);
    }
done:
    p->off = (uint32_t)open;
    p->len = (uint32_t)(i - open);
    *pos = i;
    return TPL_FMTP_FIELD;
}

int tpl_fmt_next(const char *s, size_t n, size_t *pos, tpl_fmt_piece *p)
{
    memset(p, 0, sizeof *p);
    const char *start = s + *pos, *cur = start, *lim = s + n, *mar = cur;
    (void)mar;
    if (cur >= lim) return p->kind = TPL_FMTP_END;
    /*!re2c
        re2c:api = custom;
        re2c:api:style = free-form;
        re2c:define:YYCTYPE = "unsigned char";
        re2c:define:YYPEEK = "(cur < lim ? (unsigned char)*cur : 0)";
        re2c:define:YYSKIP = "++cur;";
        re2c:define:YYBACKUP = "mar = cur;";
        re2c:define:YYRESTORE = "cur = mar;";
        re2c:yyfill:enable = 0;

        "{{" { p->kind = TPL_FMTP_TEXT; p->off = (uint32_t)*pos; p->len = 1; *pos += 2; return p->kind; }
        "}}" { p->kind = TPL_FMTP_TEXT; p->off = (uint32_t)*pos; p->len = 1; *pos += 2; return p->kind; }
        "{"  {
            if (cur > lim || cur == lim) return fail(p, "Single '{' encountered in format string", *pos);
            size_t open = *pos;
            *pos += 1;
            return parse_field(s, n, pos, open, p);
        }
        "}"  { return fail(p, "Single '}' encountered in format string", *pos); }
        [^{}\x00]+ | "\x00" {
            if (cur > lim) cur = lim;
            p->kind = TPL_FMTP_TEXT;
            p->off = (uint32_t)*pos;
            p->len = (uint32_t)(cur - start);
            *pos += p->len;
            return p->kind;
        }
    */
}
