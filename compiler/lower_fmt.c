/* Format-string prompts (Python str.format(**state)) lowered to the shared bytecode.
 *
 *   FMT_BEGIN s0, k(source), ->end    fields map into slot s0 (tr_keys applied); a translated
 *                                     template string is formatted at run time and jumps to end
 *   TEXT k                            literal text ("{{" and "}}" unescaped, runs merged)
 *   LOAD_SLOT s0; FMT_FIELD n(name)   a field: kwargs[name] (pre-hashed; KeyError when missing)
 *   FMT_ATTR k / FMT_ITEM k           .attr and [key] parts (key: int when all digits)
 *   FMT_CONV c                        !s !r !a
 *   FMT_PRINT k(spec)                 format(value, spec) appended to the output
 *   ... CONST/CONCAT ...; FMT_SPEC; PRINT_PY   a spec with nested fields, built at run time
 *
 * Everything str.format rejects while parsing (unmatched braces, positional fields: there are
 * no positional arguments, bad conversions, recursion) is a located compile error. */
#include <string.h>
#include "compile.h"
#include "../grammar/fmt_lex.h"

typedef struct fmt_ctx {
    tpl_comp *c;
    const char *src;        /* the whole template (offsets in errors are into it) */
    uint32_t slot;          /* the fields map */
    uint32_t slot_name;     /* name index for LOAD_SLOT's (unused) fallback */
} fmt_ctx;

static bool all_digits(const char *s, size_t n)
{
    if (!n) return false;
    for (size_t i = 0; i < n; i++)
        if (s[i] < '0' || s[i] > '9') return false;
    return true;
}

/* An int key when the text is all digits (as CPython's get_integer), else a str key. */
static tpl_value key_value(fmt_ctx *x, const char *s, size_t n, uint32_t off, bool *ok)
{
    *ok = true;
    if (all_digits(s, n)) {
        int64_t v = 0;
        for (size_t i = 0; i < n; i++) {
            if (v > (INT64_MAX - 9) / 10) {
                tpl_c_error(x->c, off, "Too many decimal digits in format string");
                *ok = false;
                return tpl_v_none();
            }
            v = v * 10 + (s[i] - '0');
        }
        return tpl_v_int(v);
    }
    return tpl_v_str(s, n);
}

/* Pushes the value of a field name (first part, then .attr and [key] parts). */
static bool lower_name(fmt_ctx *x, const char *s, size_t n, uint32_t off)
{
    tpl_comp *c = x->c;
    size_t i = 0;
    while (i < n && s[i] != '.' && s[i] != '[') i++;
    if (i == 0 || all_digits(s, i)) {
        bool ok;
        tpl_value idx = i ? key_value(x, s, i, off, &ok) : tpl_v_int(0);
        if (i && !ok) return false;
        tpl_c_fail(c, TPL_EK_FORMAT_INDEX, off, "Replacement index %lld out of range for positional args tuple (the "
                   "prompt is formatted with keyword arguments only)", (long long)idx.u.i);
        return false;
    }
    tpl_c_at(c, off);
    tpl_c_emit(c, TPL_OP_LOAD_SLOT, x->slot, 1);
    tpl_c_word(c, x->slot_name);
    tpl_c_emit(c, TPL_OP_FMT_FIELD, tpl_c_name(c, tpl_v_str(s, i)), 0);
    while (i < n) {
        char k = s[i++];
        size_t b = i;
        if (k == '.') {
            while (i < n && s[i] != '.' && s[i] != '[') i++;
            if (i == b) { tpl_c_error(c, off, "Empty attribute in format string"); return false; }
            tpl_c_emit(c, TPL_OP_FMT_ATTR, tpl_c_const(c, tpl_v_str(s + b, i - b)), 0);
        } else if (k == '[') {
            while (i < n && s[i] != ']') i++;
            if (i >= n) { tpl_c_error(c, off, "Missing ']' in format string"); return false; }
            size_t e = i++;
            if (e == b) { tpl_c_error(c, off, "Empty attribute in format string"); return false; }
            bool ok;
            tpl_value key = key_value(x, s + b, e - b, off, &ok);
            if (!ok) return false;
            tpl_c_emit(c, TPL_OP_FMT_ITEM, tpl_c_const(c, key), 0);
        } else {
            tpl_c_error(c, off, "Only '.' or '[' may follow ']' in format field specifier");
            return false;
        }
    }
    return true;
}

/* Pushes a field's value after its conversion. */
static bool lower_value(fmt_ctx *x, const char *s, const tpl_fmt_piece *p, uint32_t base)
{
    uint32_t off = base + p->off;
    if (!lower_name(x, s + p->name_off, p->name_len, off)) return false;
    if (p->conv) {
        if (p->conv != 's' && p->conv != 'r' && p->conv != 'a') {
            if (p->conv >= 0x20 && p->conv < 0x7f)
                tpl_c_error(x->c, off, "Unknown conversion specifier %c", p->conv);
            else
                tpl_c_error(x->c, off, "Unknown conversion specifier \\x%02x", p->conv & 0xff);
            return false;
        }
        tpl_c_emit(x->c, TPL_OP_FMT_CONV, (uint32_t)p->conv, 0);
    }
    return true;
}

static bool lower_string(fmt_ctx *x, const char *s, size_t n, uint32_t base, int depth, int *parts);

/* Pushes the expanded spec of a field whose spec holds nested fields (one string). */
static bool lower_spec(fmt_ctx *x, const char *s, const tpl_fmt_piece *p, uint32_t base, int depth)
{
    int parts = 0;
    if (!lower_string(x, s + p->spec_off, p->spec_len, base + p->spec_off, depth + 1, &parts)) return false;
    if (parts == 0) tpl_c_emit(x->c, TPL_OP_CONST, tpl_c_const(x->c, tpl_v_str("", 0)), 1);
    else if (parts > 1) tpl_c_emit(x->c, TPL_OP_CONCAT, (uint32_t)parts, 1 - parts);
    return true;
}

/* Lowers a format string. depth 0: the template, output directly. depth 1: a nested spec, each
 * piece pushed as a string (*parts counts them). */
static bool lower_string(fmt_ctx *x, const char *s, size_t n, uint32_t base, int depth, int *parts)
{
    tpl_comp *c = x->c;
    size_t pos = 0;
    tpl_fmt_piece p;
    for (;;) {
        int k = tpl_fmt_next(s, n, &pos, &p);
        if (k == TPL_FMTP_END) return true;
        if (k == TPL_FMTP_ERROR) {
            tpl_c_error(c, base + p.err_off, "%s", p.msg);
            return false;
        }
        if (k == TPL_FMTP_TEXT) {
            tpl_c_at(c, base + p.off);
            if (depth == 0) {
                tpl_c_text(c, s + p.off, p.len);
            } else {
                tpl_c_emit(c, TPL_OP_CONST, tpl_c_const(c, tpl_v_str(s + p.off, p.len)), 1);
                (*parts)++;
            }
            continue;
        }
        if (depth >= 2 || (depth == 1 && p.spec_nested)) {
            tpl_c_error(c, base + p.off, "Max string recursion exceeded");
            return false;
        }
        if (!lower_value(x, s, &p, base)) return false;
        tpl_c_at(c, base + p.off);
        if (p.spec_nested) {
            if (!lower_spec(x, s, &p, base, depth)) return false;
            tpl_c_at(c, base + p.off);
            tpl_c_emit(c, TPL_OP_FMT_SPEC, 0, -1);
            tpl_c_emit(c, TPL_OP_PRINT_PY, 0, -1);
        } else if (depth == 0) {
            tpl_c_emit(c, TPL_OP_FMT_PRINT, tpl_c_const(c, tpl_v_str(s + p.spec_off, p.spec_len)), -1);
        } else {
            tpl_c_emit(c, TPL_OP_CONST, tpl_c_const(c, tpl_v_str(s + p.spec_off, p.spec_len)), 1);
            tpl_c_emit(c, TPL_OP_FMT_SPEC, 0, -1);
            (*parts)++;
        }
        if (tpl_c_failed(c)) return false;
    }
}

bool tpl_lower_fmt(tpl_comp *c, const char *src, size_t n)
{
    fmt_ctx x = { c, src, tpl_c_slot(c), tpl_c_name(c, tpl_v_str("<fields>", 8)) };
    tpl_c_at(c, 0);
    tpl_c_emit(c, TPL_OP_FMT_BEGIN, x.slot, 0);
    tpl_c_word(c, tpl_c_const(c, tpl_v_str(src, n)));
    uint32_t jump = tpl_c_word(c, 0);
    tpl_node whole = { 0 };
    whole.kind = TPL_N_CONST;
    whole.val = tpl_v_str(src, n);
    tpl_c_note_tr(c, 0, &whole);
    int parts = 0;
    lower_string(&x, src, n, 0, 0, &parts);
    tpl_c_at(c, (uint32_t)n);
    tpl_c_patch_word(c, jump, tpl_c_here(c));
    if (tpl_c_options(c)->tidy) tpl_c_emit(c, TPL_OP_TIDY_PY, 0, 0);
    tpl_c_emit(c, TPL_OP_HALT, 0, 0);
    return !tpl_c_failed(c);
}
