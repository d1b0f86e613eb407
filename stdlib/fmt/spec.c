/* Python's format-spec mini-language, as format(value, spec) and str.format's "{:spec}" apply it
 * (https://docs.python.org/3/library/string.html#formatspec): [[fill]align][sign][z][#][0][width]
 * [grouping][.precision][type] for str, int, bool and float; "Invalid format specifier" and the
 * other ValueErrors CPython 3.11 raises. */
#include "fmt.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define OOM() tpl_vm_nomem(vm)

static tpl_arena *AR(tpl_vm *vm) { return tpl_vm_arena(vm); }

typedef struct {
    uint32_t fill;
    char align;     /* 0, '<', '>', '=', '^' */
    char sign;      /* 0, '+', '-', ' ' */
    bool z, alt, zero;
    int64_t width;  /* -1 = none */
    char grouping;  /* 0, ',', '_' */
    int64_t prec;   /* -1 = none */
    char type;      /* 0 = none */
    bool fill_given;
} fspec;

/* A width or precision: the digits at *i (at least one), *i moved past them. Python's
 * "Too many decimal digits" past PY_SSIZE_T_MAX (INT64_MAX); below it Python pads (or fails with
 * MemoryError): tpl's output limit ends a width past it before anything is padded. */
static int spec_number(tpl_vm *vm, const char *s, size_t n, size_t *i, int64_t *out)
{
    int64_t v = 0;
    while (*i < n && s[*i] >= '0' && s[*i] <= '9') {
        int d = s[(*i)++] - '0';
        if (v > (INT64_MAX - d) / 10)
            return tpl_vm_error(vm, TPL_ERR_VALUE, "Too many decimal digits in format string");
        v = v * 10 + d;
    }
    *out = v;
    return 0;
}

static int parse_spec(tpl_vm *vm, const char *s, size_t n, fspec *f, const char *tyname)
{
    memset(f, 0, sizeof *f);
    f->fill = ' ';
    f->width = f->prec = -1;
    size_t i = 0;
    /* [[fill]align] */
    if (n > 0) {
        size_t j = 0;
        uint32_t c = tpl_utf8_next(s, n, &j);
        if (j < n && (s[j] == '<' || s[j] == '>' || s[j] == '=' || s[j] == '^')) {
            f->fill = c;
            f->fill_given = true;
            f->align = s[j];
            i = j + 1;
        } else if (s[0] == '<' || s[0] == '>' || s[0] == '=' || s[0] == '^') {
            f->align = s[0];
            i = 1;
        }
    }
    if (i < n && (s[i] == '+' || s[i] == '-' || s[i] == ' '))
        f->sign = s[i++];
    if (i < n && s[i] == 'z') { f->z = true; i++; }
    if (i < n && s[i] == '#') { f->alt = true; i++; }
    if (i < n && s[i] == '0') {
        f->zero = true;
        if (!f->fill_given) {
            f->fill = '0';
            f->fill_given = true;
        }
        if (!f->align)
            f->align = 'Z'; /* '=' for numbers, '<' for strings (Python 3.10+) */
        i++;
    }
    if (i < n && s[i] >= '0' && s[i] <= '9' && spec_number(vm, s, n, &i, &f->width) < 0)
        return -1;
    if (i < n && (s[i] == ',' || s[i] == '_')) {
        f->grouping = s[i++];
        if (i < n && (s[i] == ',' || s[i] == '_'))
            return s[i] == f->grouping
                ? tpl_vm_error(vm, TPL_ERR_VALUE, "Cannot specify '%c' with '%c'.", s[i], s[i])
                : tpl_vm_error(vm, TPL_ERR_VALUE, "Cannot specify both ',' and '_'.");
    }
    if (i < n && s[i] == '.') {
        i++;
        if (i >= n || s[i] < '0' || s[i] > '9')
            return tpl_vm_error(vm, TPL_ERR_VALUE, "Format specifier missing precision");
        if (spec_number(vm, s, n, &i, &f->prec) < 0)
            return -1;
    }
    if (i < n && (unsigned char)s[i] >= 0x80) {
        /* one non-ASCII code point left is Python's presentation type: no type takes it, and
         * CPython names it '\x%x' (after its separator check, which refuses it too) */
        size_t j = i;
        uint32_t c = tpl_utf8_next(s, n, &j);
        if (j == n)
            return f->grouping
                ? tpl_vm_error(vm, TPL_ERR_VALUE, "Cannot specify '%c' with '\\x%x'.", f->grouping, (unsigned)c)
                : tpl_vm_error(vm, TPL_ERR_VALUE, "Unknown format code '\\x%x' for object of type '%s'",
                               (unsigned)c, tyname);
    }
    if (i < n) {
        if (n - i > 1 || (unsigned char)s[i] >= 0x80)
            return tpl_vm_error(vm, TPL_ERR_VALUE, "Invalid format specifier '%.*s' for object of type '%s'",
                                (int)n, s, tyname);
        f->type = s[i];
    }
    return 0;
}

/* Pads text (of ncp code points) per align/width. */
static void pad_out(tpl_sb *b, const fspec *f, char dflt_align, const char *text, size_t nbytes, int64_t ncp)
{
    int64_t pad = f->width > ncp ? f->width - ncp : 0;
    char al = f->align ? f->align : dflt_align;
    if (al == 'Z' || (al == '=' && dflt_align == '>')) /* a number's '=' without a sign: padding first */
        al = dflt_align;
    int64_t left = 0, right = 0;
    if (al == '>')
        left = pad;
    else if (al == '^') {
        left = pad / 2;
        right = pad - left;
    } else
        right = pad;
    tpl_sb_put_fill(b, f->fill, left);
    tpl_sb_put(b, text, nbytes);
    tpl_sb_put_fill(b, f->fill, right);
}

static int format_str(tpl_vm *vm, tpl_sb *b, tpl_value s, const fspec *f)
{
    if (f->type && f->type != 's')
        return tpl_vm_error(vm, TPL_ERR_VALUE, "Unknown format code '%c' for object of type 'str'", f->type);
    if (f->sign)
        return tpl_vm_error(vm, TPL_ERR_VALUE, f->sign == ' ' ? "Space not allowed in string format specifier"
                                                               : "Sign not allowed in string format specifier");
    if (f->z)
        return tpl_vm_error(vm, TPL_ERR_VALUE, "Negative zero coercion (z) not allowed in string format specifier");
    if (f->alt)
        return tpl_vm_error(vm, TPL_ERR_VALUE, "Alternate form (#) not allowed in string format specifier");
    if (f->align == '=')
        return tpl_vm_error(vm, TPL_ERR_VALUE, "'=' alignment not allowed in string format specifier");
    if (f->grouping)
        return tpl_vm_error(vm, TPL_ERR_VALUE, "Cannot specify '%c' with 's'.", f->grouping);
    size_t nbytes = s.len;
    int64_t ncp = (int64_t)tpl_utf8_len(s.u.s, s.len);
    if (f->prec >= 0 && ncp > f->prec) {
        nbytes = tpl_utf8_offset(s.u.s, s.len, (size_t)f->prec);
        ncp = f->prec;
    }
    pad_out(b, f, '<', s.u.s, nbytes, ncp);
    return 0;
}

/* Inserts grouping separators into the digit run digits[0..n) every `every` digits, zero-padding
 * on the left until the grouped run is at least min_len characters long. The length is computed,
 * reserved once and written in place (a width of 10^8 is 10^8 bytes, not 10^8 calls). */
static void put_grouped(tpl_sb *b, const char *digits, size_t n, char sep, int every, int64_t min_len)
{
    int64_t d = (int64_t)n;
    if (sep) {
        /* the fewest digits d >= n with d + (d - 1) / every >= min_len: g below has
         * g + (g - 1) / every <= min_len, and that length grows by at least 1 per digit */
        int64_t g = min_len > 0 ? min_len * every / (every + 1) : 0;
        if (g > d)
            d = g;
        while (d + (d - 1) / every < min_len)
            d++;
    } else if (d < min_len) {
        d = min_len;
    }
    if (d <= 0)
        return;
    int64_t zeros = d - (int64_t)n;
    int64_t total = d + (sep ? (d - 1) / every : 0);
    if (!tpl_sb_reserve(b, (size_t)total))
        return;
    char *o = b->p + b->len;
    if (!sep) {
        memset(o, '0', (size_t)zeros);
        memcpy(o + zeros, digits, n);
    } else {
        int r = (int)((d - 1) % every); /* digits after this one before the next separator */
        for (int64_t k = 0; k < d; k++) {
            *o++ = k < zeros ? '0' : digits[k - zeros];
            if (r == 0) {
                if (k < d - 1)
                    *o++ = sep;
                r = every - 1;
            } else
                r--;
        }
    }
    b->len += (size_t)total;
}

/* Assembles sign + prefix + number body (integer digits, then the rest) with padding. */
static void emit_number(tpl_sb *b, const fspec *f, const char *sign, const char *prefix,
                        const char *intdigits, size_t nint, const char *rest, size_t nrest, int every)
{
    size_t ls = strlen(sign), lp = strlen(prefix);
    int64_t grouped = (int64_t)nint + (f->grouping && nint ? ((int64_t)nint - 1) / every : 0);
    int64_t total = (int64_t)(ls + lp) + grouped + (int64_t)nrest;
    char al = f->align ? f->align : '>';
    if (al == 'Z')
        al = '=';
    if (al == '=') {
        int64_t min_len = 0;
        if (f->width > total)
            min_len = f->width - (int64_t)(ls + lp) - (int64_t)nrest;
        tpl_sb_puts(b, sign);
        tpl_sb_puts(b, prefix);
        if (f->fill == '0' && nint) {
            put_grouped(b, intdigits, nint, f->grouping, every, min_len);
        } else {
            int64_t pad = min_len > grouped ? min_len - grouped : 0;
            tpl_sb_put_fill(b, f->fill, pad);
            put_grouped(b, intdigits, nint, f->grouping, every, 0);
        }
        tpl_sb_put(b, rest, nrest);
        return;
    }
    int64_t pad = f->width > total ? f->width - total : 0;
    int64_t left = 0, right = 0;
    if (al == '<') right = pad;
    else if (al == '^') { left = pad / 2; right = pad - left; }
    else left = pad;
    tpl_sb_put_fill(b, f->fill, left);
    tpl_sb_puts(b, sign);
    tpl_sb_puts(b, prefix);
    put_grouped(b, intdigits, nint, f->grouping, every, 0);
    tpl_sb_put(b, rest, nrest);
    tpl_sb_put_fill(b, f->fill, right);
}

static int format_float(tpl_vm *vm, tpl_sb *b, double x, const fspec *f, const char *tname);

/* format(v, spec) of an int (v: TPL_T_INT, TPL_T_BOOL or a big int, bigint.h). */
static int format_int(tpl_vm *vm, tpl_sb *b, tpl_value iv, const fspec *f, const char *tname)
{
    char t = f->type;
    bool big = iv.type == TPL_T_BIGINT;
    int64_t v = big ? (iv.u.s[0] == '-' ? -1 : 1) : iv.u.i; /* a big int: only its sign */
    switch (t) {
    case 'e': case 'E': case 'f': case 'F': case 'g': case 'G': case '%': {
        double d;
        if (!tpl_big_to_double(iv, &d))
            return tpl_vm_fail(vm, TPL_EK_OVERFLOW, "int too large to convert to float");
        return format_float(vm, b, d, f, tname);
    }
    case 0: case 'd': case 'n': case 'b': case 'o': case 'x': case 'X': case 'c':
        break;
    default:
        return tpl_vm_error(vm, TPL_ERR_VALUE, "Unknown format code '%c' for object of type '%s'", t, tname);
    }
    if (f->prec >= 0)
        return tpl_vm_error(vm, TPL_ERR_VALUE, "Precision not allowed in integer format specifier");
    if (f->z)
        return tpl_vm_error(vm, TPL_ERR_VALUE, "Negative zero coercion (z) not allowed in integer format specifier");
    if (t == 'c') {
        if (f->sign)
            return tpl_vm_error(vm, TPL_ERR_VALUE, "Sign not allowed with integer format specifier 'c'");
        if (f->alt)
            return tpl_vm_error(vm, TPL_ERR_VALUE, "Alternate form (#) not allowed with integer format specifier 'c'");
        if (big)
            return tpl_vm_fail(vm, TPL_EK_OVERFLOW, "Python int too large to convert to C long");
        if (v < 0 || v > 0x10FFFF)
            return tpl_vm_error(vm, TPL_ERR_VALUE, "%%c arg not in range(0x110000)");
        tpl_sb tmp;
        tpl_sb_init(&tmp, AR(vm));
        if (tpl_vm_put_cp(vm, &tmp, (uint32_t)v) < 0)
            return -1;
        fspec g = *f;
        pad_out(b, &g, '>', tmp.p, tmp.len, 1);
        return 0;
    }
    if (f->grouping == ',' && (t == 'b' || t == 'o' || t == 'x' || t == 'X'))
        return tpl_vm_error(vm, TPL_ERR_VALUE, "Cannot specify ',' with '%c'.", t);
    if (f->grouping && t == 'n')
        return tpl_vm_error(vm, TPL_ERR_VALUE, "Cannot specify '%c' with 'n'.", f->grouping);
    uint64_t mag = v < 0 ? 0 - (uint64_t)v : (uint64_t)v;
    char digits[80];
    size_t nd = 0;
    int base = 10, every = 3;
    const char *prefix = "";
    if (t == 'b') { base = 2; every = 4; prefix = f->alt ? "0b" : ""; }
    else if (t == 'o') { base = 8; every = 4; prefix = f->alt ? "0o" : ""; }
    else if (t == 'x') { base = 16; every = 4; prefix = f->alt ? "0x" : ""; }
    else if (t == 'X') { base = 16; every = 4; prefix = f->alt ? "0X" : ""; }
    const char *dig = t == 'X' ? "0123456789ABCDEF" : "0123456789abcdef";
    const char *sign = v < 0 ? "-" : f->sign == '+' ? "+" : f->sign == ' ' ? " " : "";
    if (big) { /* its digits in base from GMP; decimal past 4,300 digits is Python's ValueError */
        if (base == 10 && tpl_big_ndigits(iv) > TPL_PY_INT_MAX_STR_DIGITS)
            return tpl_big_str_error(vm);
        mpz_t z;
        tpl_big_get(z, iv);
        mpz_abs(z, z);
        char *p = tpl_arena_alloc(AR(vm), mpz_sizeinbase(z, base) + 2);
        if (!p) { mpz_clear(z); return OOM(); }
        mpz_get_str(p, t == 'X' ? -16 : base, z);
        mpz_clear(z);
        emit_number(b, f, sign, prefix, p, strlen(p), "", 0, every);
        return 0;
    }
    char tmp[80];
    do {
        tmp[nd++] = dig[mag % (uint64_t)base];
        mag /= (uint64_t)base;
    } while (mag);
    for (size_t k = 0; k < nd; k++)
        digits[k] = tmp[nd - 1 - k];
    emit_number(b, f, sign, prefix, digits, nd, "", 0, every);
    return 0;
}

static int format_float(tpl_vm *vm, tpl_sb *b, double x, const fspec *f, const char *tname)
{
    char t = f->type;
    switch (t) {
    case 0: case 'e': case 'E': case 'f': case 'F': case 'g': case 'G': case 'n': case '%':
        break;
    default:
        return tpl_vm_error(vm, TPL_ERR_VALUE, "Unknown format code '%c' for object of type '%s'", t, tname);
    }
    if (t == 'n' && f->grouping)
        return tpl_vm_error(vm, TPL_ERR_VALUE, "Cannot specify '%c' with 'n'.", f->grouping);
    bool neg = signbit(x) && !isnan(x);
    double ax = fabs(x);
    char body[512];
    char *big = NULL;
    const char *txt = body;
    size_t ntxt;
    bool upper = t == 'E' || t == 'F' || t == 'G';
    if (isinf(ax) || isnan(ax)) {
        snprintf(body, sizeof body, "%s%s", isnan(ax) ? (upper ? "NAN" : "nan") : (upper ? "INF" : "inf"),
                 t == '%' ? "%" : "");
        ntxt = strlen(body);
    } else {
        if (t == '%')
            ax *= 100;
        if (f->prec > TPL_MAX_FLOAT_PREC)
            return tpl_vm_error(vm, TPL_ERR_LIMIT, "precision too large (tpl formats at most %d digits)", TPL_MAX_FLOAT_PREC);
        int prec = f->prec >= 0 ? (int)f->prec : 6;
        char cfmt[16];
        char conv = t;
        if (t == 0) {
            if (f->prec < 0) {
                tpl_sb tb;
                tpl_sb_init(&tb, AR(vm));
                tpl_py_float(&tb, ax);
                ntxt = tb.len < sizeof body - 2 ? tb.len : sizeof body - 2;
                memcpy(body, tb.p, ntxt);
                body[ntxt] = 0;
                if (f->alt && !memchr(body, '.', ntxt)) { /* Py_DTSF_ALT: always a point (1e+16 -> 1.e+16) */
                    char *e = memchr(body, 'e', ntxt);
                    size_t at = e ? (size_t)(e - body) : ntxt;
                    memmove(body + at + 1, body + at, ntxt - at + 1);
                    body[at] = '.';
                    ntxt++;
                }
                goto assembled;
            }
            /* CPython's format_float_internal: no type with a precision is 'g' with
             * Py_DTSF_ADD_DOT_0, which also moves the switch to exponent notation one digit
             * earlier (decpt > precision - 1) and keeps a ".0" on fixed results. */
            conv = 'g';
            if (prec == 0)
                prec = 1;
            char eb[64];
            snprintf(eb, sizeof eb, "%.*e", prec - 1 < 40 ? prec - 1 : 40, ax);
            const char *ep = strchr(eb, 'e');
            long x10 = ep ? strtol(ep + 1, NULL, 10) : 0;
            if (x10 >= prec - 1) {
                int need = snprintf(body, sizeof body, f->alt ? "%#.*e" : "%.*e", prec - 1, ax);
                if (need < 0 || (size_t)need >= sizeof body)
                    return tpl_vm_error(vm, TPL_ERR_LIMIT, "precision too large for exponent notation");
                char *e = strchr(body, 'e');
                size_t mant = (size_t)(e - body);
                if (!f->alt && memchr(body, '.', mant)) {
                    size_t keep = mant;
                    while (body[keep - 1] == '0') keep--;
                    if (body[keep - 1] == '.') keep--;
                    memmove(body + keep, e, strlen(e) + 1);
                }
                ntxt = strlen(body);
                goto assembled;
            }
        } else if (t == 'n') {
            conv = 'g';
        } else if (t == '%') {
            conv = 'f';
        }
        if (f->alt && (conv == 'g' || conv == 'G')) {
            tpl_sb gb;
            tpl_sb_init(&gb, AR(vm));
            if (!tpl_fmt_alt_g(&gb, ax, prec, conv)) return OOM();
            if (gb.len < sizeof body) {
                memcpy(body, gb.p, gb.len);
                body[gb.len] = 0;
            } else {
                txt = big = gb.p;
            }
            ntxt = gb.len;
            goto formatted;
        }
        snprintf(cfmt, sizeof cfmt, "%%%s.*%c", f->alt ? "#" : "", conv);
        int need = snprintf(body, sizeof body, cfmt, prec, ax);
        if (need < 0)
            return tpl_vm_error(vm, TPL_ERR_VALUE, "format failed");
        if ((size_t)need >= sizeof body) {
            big = tpl_arena_alloc(AR(vm), (size_t)need + 1);
            if (!big)
                return OOM();
            snprintf(big, (size_t)need + 1, cfmt, prec, ax);
            txt = big;
        }
        ntxt = (size_t)need;
    formatted:
        if (t == 0 && !memchr(txt, '.', ntxt) && !memchr(txt, 'e', ntxt) && ntxt + 2 < sizeof body && !big) {
            memcpy(body + ntxt, ".0", 3);
            ntxt += 2;
        }
        if (t == '%') {
            if (big) {
                char *nb = tpl_arena_alloc(AR(vm), ntxt + 2);
                if (!nb)
                    return OOM();
                memcpy(nb, big, ntxt);
                nb[ntxt] = '%';
                nb[ntxt + 1] = 0;
                txt = nb;
                ntxt++;
            } else if (ntxt + 1 < sizeof body) {
                body[ntxt++] = '%';
                body[ntxt] = 0;
            }
        }
    }
assembled:
    if (f->z && neg) {
        /* Negative zero coercion: a value that rounds to zero loses its sign (-inf keeps it). */
        bool allzero = true;
        for (size_t k = 0; k < ntxt; k++)
            if ((txt[k] >= '1' && txt[k] <= '9') || txt[k] == 'n' || txt[k] == 'N') { allzero = false; break; }
        if (allzero)
            neg = false;
    }
    size_t nint = 0;
    while (nint < ntxt && txt[nint] >= '0' && txt[nint] <= '9')
        nint++;
    const char *sign = neg ? "-" : f->sign == '+' ? "+" : f->sign == ' ' ? " " : "";
    emit_number(b, f, sign, "", txt, nint, txt + nint, ntxt - nint, 3);
    return 0;
}

static int format_parsed(tpl_vm *vm, tpl_sb *b, tpl_value v, const fspec *pf);

int tpl_format_value(tpl_vm *vm, tpl_sb *b, tpl_value v, const char *spec, size_t n)
{
    if (n == 0 || v.type == TPL_T_UNDEF || v.type == TPL_T_NONE || v.type == TPL_T_LIST ||
        v.type == TPL_T_MAP || v.type == TPL_T_FUNC || v.type == TPL_T_MACRO || v.type == TPL_T_LOOP ||
        v.type == TPL_T_UNSET) {
        if (n != 0)
            return tpl_vm_error(vm, TPL_ERR_TYPE, "unsupported format string passed to %s.__format__",
                                tpl_type_name(vm, v));
        if (tpl_vm_strict_undef(vm, v))
            return tpl_undefined_error(vm, v);
        tpl_py_str(b, v);
        return 0;
    }
    if (v.type == TPL_T_STR && (v.flags & TPL_F_CLASS_RB)) /* a format field's `x.__class__` */
        return tpl_vm_error(vm, TPL_ERR_TYPE, "unsupported format string passed to type.__format__");
    fspec f;
    if (parse_spec(vm, spec, n, &f, tpl_type_name(vm, v)) < 0)
        return -1;
    if (f.grouping && (v.type == TPL_T_STR || v.type == TPL_T_BOOL || v.type == TPL_T_INT || v.type == TPL_T_BIGINT ||
                       v.type == TPL_T_FLOAT)) {
        /* CPython's parse_internal_render_format_spec refuses a separator the presentation type
         * (by default 's' for str, 'd' for int, none for float) takes none of, before any other
         * check of the spec or the type */
        char t = f.type ? f.type : v.type == TPL_T_STR ? 's' : v.type == TPL_T_FLOAT ? 0 : 'd';
        bool ok = t == 0 || strchr("defgEGF%", t) || (f.grouping == '_' && strchr("boxX", t));
        if (!ok)
            return (unsigned char)t > 32 && (unsigned char)t < 128
                ? tpl_vm_error(vm, TPL_ERR_VALUE, "Cannot specify '%c' with '%c'.", f.grouping, t)
                : tpl_vm_error(vm, TPL_ERR_VALUE, "Cannot specify '%c' with '\\x%x'.", f.grouping, (unsigned char)t);
    }
    if (f.width > 0 && (uint64_t)f.width > tpl_vm_max_output(vm)) {
        /* Python pads to this width (or fails with MemoryError): past the output limit, tpl
         * formats without it, so a spec Python refuses keeps Python's error, then stops */
        size_t len0 = b->len;
        f.width = 0;
        if (format_parsed(vm, b, v, &f) < 0)
            return -1;
        b->len = len0;
        return tpl_vm_limit(vm, TPL_EK_OUTPUT_LIMIT, tpl_vm_max_output(vm));
    }
    return format_parsed(vm, b, v, &f);
}

static int format_parsed(tpl_vm *vm, tpl_sb *b, tpl_value v, const fspec *pf)
{
    fspec f = *pf;
    switch (v.type) {
    case TPL_T_STR:
        return format_str(vm, b, v, &f);
    case TPL_T_BOOL:
    case TPL_T_INT:
    case TPL_T_BIGINT:
        return format_int(vm, b, v, &f, v.type == TPL_T_BOOL ? "bool" : "int");
    case TPL_T_FLOAT:
        return format_float(vm, b, v.u.f, &f, "float");
    default:
        return tpl_vm_error(vm, TPL_ERR_TYPE, "unsupported format string passed to %s.__format__",
                            tpl_type_name(vm, v));
    }
}
