/* Value printing, byte-exact with the reference engines: Python 3.11 str()/repr() (Jinja2
 * output), Ruby 3.1 to_s/inspect (ERB output) and Python's json.dumps (tojson filters). */
#include "vm_impl.h"
#include "bigint.h"

#include <float.h>
#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <utf8proc.h>

/* ------------------------------------------------------------------ shortest float digits */

/* A positive finite double as decimal digits: value = 0.d[0]d[1]...d[n-1] * 10^decpt. */
typedef struct fdigits {
    char d[24];
    int n, decpt;
} fdigits;

/* Reads printf "%.*e" output ("1.2340e+02"); keeps trailing zeros. */
static void parse_e(const char *buf, fdigits *f)
{
    const char *p = buf;
    f->n = 0;
    for (; *p && *p != 'e'; p++)
        if (*p >= '0' && *p <= '9' && f->n < (int)sizeof f->d)
            f->d[f->n++] = *p;
    f->decpt = (*p == 'e' ? atoi(p + 1) : 0) + 1;
}

static bool round_trips(const fdigits *f, double d)
{
    char buf[48];
    snprintf(buf, sizeof buf, "%c.%.*se%d", f->d[0], f->n - 1, f->d + 1, f->decpt - 1);
    return strtod(buf, NULL) == d;
}

/* The shortest digit string that reads back as d and, among those, the closest to d: what
 * David Gay's dtoa mode 0 returns for both CPython's repr and Ruby's Float#to_s.
 * For normal numbers, any <= 15-digit string that round-trips equals d correctly rounded to
 * 15 digits (the rounding interval is narrower than half a unit in the 15th digit), so 15
 * digits are tried first and trailing zeros dropped (subnormals, with fewer bits, try every
 * precision); 17 correctly rounded digits always round-trip. At 16 digits
 * a power of two has an asymmetric interval, so the string one unit up may read back even when
 * the correctly rounded one does not. */
static void shortest_digits(double d, fdigits *f)
{
    char buf[48];
    int exp2;
    for (int prec = d < DBL_MIN ? 1 : 15; prec <= 17; prec++) {
        snprintf(buf, sizeof buf, "%.*e", prec - 1, d);
        parse_e(buf, f);
        if (strtod(buf, NULL) == d)
            break;
        if (prec == 16 && frexp(d, &exp2) == 0.5) {
            fdigits g = *f;
            int k = g.n - 1;
            while (k >= 0 && g.d[k] == '9')
                g.d[k--] = '0';
            if (k < 0) {
                g.d[0] = '1';
                g.decpt++;
            } else {
                g.d[k]++;
            }
            if (round_trips(&g, d)) {
                *f = g;
                break;
            }
        }
    }
    while (f->n > 1 && f->d[f->n - 1] == '0')
        f->n--;
}

/* Formats d like CPython's float repr (ruby=false) or Ruby's Float#to_s (ruby=true): shortest
 * digits; exponent form when the decimal exponent is < -4 or >= 16 ("1e+16" / "1.0e+16"), else
 * positional with at least one fractional digit ("100.0", "0.0001"). Ruby also uses the
 * exponent form for exponent 15 unless the digits reach past the point: 1e15.to_s is
 * "1.0e+15", but 1626983080611305.8 stays positional. */
static void put_float(tpl_sb *b, double d, bool ruby)
{
    if (isnan(d)) {
        tpl_sb_puts(b, ruby ? "NaN" : "nan");
        return;
    }
    if (isinf(d)) {
        tpl_sb_puts(b, d > 0 ? (ruby ? "Infinity" : "inf") : (ruby ? "-Infinity" : "-inf"));
        return;
    }
    if (signbit(d)) {
        tpl_sb_putc(b, '-');
        d = -d;
    }
    fdigits f = {.d = "0", .n = 1, .decpt = 1};
    if (d != 0)
        shortest_digits(d, &f);
    if (f.decpt <= -4 || f.decpt > 16 || (ruby && f.decpt == 16 && f.n <= 16)) {
        tpl_sb_putc(b, f.d[0]);
        if (f.n > 1) {
            tpl_sb_putc(b, '.');
            tpl_sb_put(b, f.d + 1, (size_t)f.n - 1);
        } else if (ruby) {
            tpl_sb_puts(b, ".0");
        }
        int e = f.decpt - 1;
        tpl_sb_printf(b, "e%c%02d", e < 0 ? '-' : '+', e < 0 ? -e : e);
    } else if (f.decpt <= 0) {
        tpl_sb_puts(b, "0.");
        for (int k = f.decpt; k < 0; k++)
            tpl_sb_putc(b, '0');
        tpl_sb_put(b, f.d, (size_t)f.n);
    } else if (f.decpt >= f.n) {
        tpl_sb_put(b, f.d, (size_t)f.n);
        for (int k = f.n; k < f.decpt; k++)
            tpl_sb_putc(b, '0');
        tpl_sb_puts(b, ".0");
    } else {
        tpl_sb_put(b, f.d, (size_t)f.decpt);
        tpl_sb_putc(b, '.');
        tpl_sb_put(b, f.d + f.decpt, (size_t)(f.n - f.decpt));
    }
}

/* CPython float.__repr__. */
void tpl_py_float(tpl_sb *b, double d) { put_float(b, d, false); }

/* An int's decimal text (no printf: Ruby's to_s of ints in arrays, join, interpolation). */
static void put_int(tpl_sb *b, int64_t i)
{
    char buf[24];
    size_t n = 0;
    if (i < 0) buf[n++] = '-';
    n += put_decimal(buf + n, abs_u64(i));
    tpl_sb_put(b, buf, n);
}

/* A big int's decimal text; Python's (py) refuses more than 4,300 digits: the builder is marked
 * (tpl_big_str_limit, as for an address) and the caller raises the ValueError. */
static void put_big(tpl_sb *b, tpl_value v, bool py)
{
    if (py && tpl_big_ndigits(v) > TPL_PY_INT_MAX_STR_DIGITS) {
        tpl_sb_mark(b, tpl_big_str_limit);
        return;
    }
    tpl_sb_put(b, v.u.s, v.len);
}

/* ------------------------------------------------------------------ container walks */

/* The containers being printed, outermost first: detects cycles (printed as [...] / {...},
 * like Python and Ruby; an error for JSON) and bounds the recursion. */
enum { MAX_NEST = TPL_NEST_MAX }; /* below Python's recursion limit (value.h); the state nests at most 512 deep */

const char tpl_nest_limit[] = "nest";

typedef struct walker {
    int depth;
    const void *open[MAX_NEST];
} walker;

/* False when p is already open (a cycle) or nesting is too deep: then b is marked failed with the
 * tpl_nest_limit address (Python's RecursionError; the caller's tpl_vm_sb_error says so). */
static bool w_enter(tpl_sb *b, walker *w, const void *p)
{
    if (w->depth >= MAX_NEST) {
        b->address = tpl_nest_limit;
        b->failed = true;
        return false;
    }
    for (int k = 0; k < w->depth; k++)
        if (w->open[k] == p)
            return false;
    w->open[w->depth++] = p;
    return true;
}

static void w_leave(walker *w) { w->depth--; }

/* Charges the fuel for visiting one element at the walker's depth (tpl_sb_charge): the cycle
 * scan of w_enter costs the depth, so an element deep in shared structure costs more than one
 * unit. False when the builder has failed: the walk stops. */
static bool w_charge(tpl_sb *b, const walker *w) { return tpl_sb_charge(b, 1 + (uint64_t)w->depth / 8); }

/* Byte ends of the run of bytes in [i, n) that need no escaping: ASCII 0x20..0x7E except
 * the given specials. */
static size_t plain_run(const char *s, size_t n, size_t i, const char *specials)
{
    while (i < n) {
        unsigned char c = (unsigned char)s[i];
        if (c < 0x20 || c >= 0x7F || strchr(specials, c))
            break;
        i++;
    }
    return i;
}

/* A byte that tpl_utf8_next could not decode (U+FFFD consuming one byte). */
static bool bad_byte(uint32_t cp, size_t at, size_t i) { return cp == 0xFFFD && i - at == 1; }

/* ------------------------------------------------------------------ Python */

/* CPython unicode_repr: single quotes unless the text has ' and no "; escapes \\, the quote,
 * \t \n \r, and non-printables as \xhh, \uhhhh or \Uhhhhhhhh. A byte that is not UTF-8 prints
 * as \udcXX, as Python shows a surrogateescape-decoded byte. */
static void py_repr_str(tpl_sb *b, const char *s, size_t n)
{
    bool sq = n && memchr(s, '\'', n), dq = n && memchr(s, '"', n);
    const char *quote = sq && !dq ? "\"" : "'";
    const char *specials = sq && !dq ? "\"\\" : "'\\";
    tpl_sb_putc(b, quote[0]);
    size_t i = 0;
    while (i < n) {
        size_t j = plain_run(s, n, i, specials);
        tpl_sb_put(b, s + i, j - i);
        if ((i = j) >= n)
            break;
        unsigned char c = (unsigned char)s[i];
        if (c < 0x80) {
            i++;
            switch (c) {
            case '\t': tpl_sb_puts(b, "\\t"); break;
            case '\n': tpl_sb_puts(b, "\\n"); break;
            case '\r': tpl_sb_puts(b, "\\r"); break;
            case '\\': tpl_sb_puts(b, "\\\\"); break;
            default:
                if (c == (unsigned char)quote[0]) {
                    tpl_sb_putc(b, '\\');
                    tpl_sb_putc(b, (char)c);
                } else {
                    char e[11];
                    tpl_sb_put(b, e, (size_t)tpl_py_escape_cp(e, c));
                }
            }
            continue;
        }
        size_t at = i;
        uint32_t cp = tpl_utf8_next(s, n, &i);
        if (bad_byte(cp, at, i))
            tpl_sb_printf(b, "\\udc%02x", c);
        else if (tpl_py_isprintable(cp))
            tpl_sb_put(b, s + at, i - at);
        else {
            char e[11];
            tpl_sb_put(b, e, (size_t)tpl_py_escape_cp(e, cp));
        }
    }
    tpl_sb_putc(b, quote[0]);
}

static void py_repr(tpl_sb *b, tpl_value v, walker *w);

/* dict.__repr__: {'a': 1, 'b': [2]}. */
static void py_repr_dict(tpl_sb *b, const tpl_map *m, walker *w)
{
    if (!w_enter(b, w, m)) {
        tpl_sb_puts(b, "{...}");
        return;
    }
    tpl_sb_putc(b, '{');
    for (uint32_t k = 0; k < m->len && !b->failed; k++) {
        if (k)
            tpl_sb_puts(b, ", ");
        py_repr(b, m->e[k].key, w);
        tpl_sb_puts(b, ": ");
        py_repr(b, m->e[k].val, w);
    }
    tpl_sb_putc(b, '}');
    w_leave(w);
}

/* repr() of the values Jinja2 templates see (Undefined, Markup and Namespace included). */
static void py_repr(tpl_sb *b, tpl_value v, walker *w)
{
    if (!w_charge(b, w))
        return;
    switch (v.type) {
    case TPL_T_UNDEF:
    case TPL_T_UNSET:
        tpl_sb_puts(b, "Undefined");
        break;
    case TPL_T_NONE:
        tpl_sb_puts(b, "None");
        break;
    case TPL_T_BOOL:
        tpl_sb_puts(b, v.u.i ? "True" : "False");
        break;
    case TPL_T_INT:
        put_int(b, v.u.i);
        break;
    case TPL_T_BIGINT:
        put_big(b, v, true);
        break;
    case TPL_T_FLOAT:
        put_float(b, v.u.f, false);
        break;
    case TPL_T_RATIONAL: { /* Python's Fraction repr (a Jinja template never makes one) */
        const char *sl = memchr(v.u.s, '/', v.len);
        size_t k = sl ? (size_t)(sl - v.u.s) : v.len;
        tpl_sb_puts(b, "Fraction(");
        tpl_sb_put(b, v.u.s, k);
        tpl_sb_puts(b, ", ");
        if (k < v.len) tpl_sb_put(b, v.u.s + k + 1, v.len - k - 1);
        tpl_sb_putc(b, ')');
        break;
    }
    case TPL_T_STR:
        if (v.flags & TPL_F_SAFE)
            tpl_sb_puts(b, "Markup(");
        py_repr_str(b, v.u.s, v.len);
        if (v.flags & TPL_F_SAFE)
            tpl_sb_putc(b, ')');
        break;
    case TPL_T_LIST: {
        const tpl_list *l = v.u.list;
        bool tuple = v.flags & TPL_F_TUPLE;
        if (v.aux == TPL_LAZY_RANGE) { /* range(0, 3), range(1, 9, 2) */
            const tpl_value *p = tpl_range_params(v);
            tpl_sb_puts(b, "range(");
            for (int k = 0; k < 3; k++) {
                if (k == 2 && p[2].type == TPL_T_INT && p[2].u.i == 1) break;
                if (k) tpl_sb_puts(b, ", ");
                if (p[k].type == TPL_T_BIGINT) put_big(b, p[k], true);
                else put_int(b, p[k].u.i);
            }
            tpl_sb_putc(b, ')');
            break;
        }
        if (v.aux >= TPL_LAZY_GENERATOR) { /* Python prints an address; the VM refuses to print one */
            tpl_sb_printf(b, "<%s object>", tpl_lazy_name(v.aux));
            tpl_sb_mark(b, tpl_lazy_name(v.aux));
            break;
        }
        if (tpl_is_view(v)) { /* dict_items([...]): the dict as it is now (Python's view is live) */
            const tpl_map *m = tpl_view_dict(v);
            if (!w_enter(b, w, l)) { /* (dictview_repr's Py_ReprEnter) */
                tpl_sb_puts(b, "...");
                break;
            }
            tpl_sb_puts(b, tpl_lazy_name(v.aux));
            tpl_sb_puts(b, "([");
            for (uint32_t k = 0; k < m->len && !b->failed; k++) {
                if (k)
                    tpl_sb_puts(b, ", ");
                if (v.aux == TPL_LAZY_DICT_ITEMS) {
                    tpl_sb_putc(b, '(');
                    py_repr(b, m->e[k].key, w);
                    tpl_sb_puts(b, ", ");
                    py_repr(b, m->e[k].val, w);
                    tpl_sb_putc(b, ')');
                } else {
                    py_repr(b, v.aux == TPL_LAZY_DICT_KEYS ? m->e[k].key : m->e[k].val, w);
                }
            }
            tpl_sb_puts(b, "])");
            w_leave(w);
            break;
        }
        if (v.aux) { /* dict_items([...]) */
            tpl_sb_puts(b, tpl_lazy_name(v.aux));
            tpl_sb_putc(b, '(');
            v.aux = 0;
            v.flags &= (uint8_t)~TPL_F_VIEW_DICT;
            py_repr(b, v, w);
            tpl_sb_putc(b, ')');
            break;
        }
        if (!w_enter(b, w, l)) {
            tpl_sb_puts(b, tuple ? "(...)" : "[...]");
            break;
        }
        tpl_sb_putc(b, tuple ? '(' : '[');
        for (uint32_t k = 0; k < l->len && !b->failed; k++) {
            if (k)
                tpl_sb_puts(b, ", ");
            py_repr(b, l->items[k], w);
        }
        if (tuple && l->len == 1)
            tpl_sb_putc(b, ',');
        tpl_sb_putc(b, tuple ? ')' : ']');
        w_leave(w);
        break;
    }
    case TPL_T_MAP:
        if ((v.flags & TPL_F_NS) && v.u.map->module) { /* Jinja2's TemplateModule.__repr__ */
            const tpl_value *name = &v.u.map->module[1];
            tpl_sb_puts(b, "<TemplateModule ");
            if (name->type == TPL_T_STR) py_repr_str(b, name->u.s, name->len);
            else tpl_sb_puts(b, "None");
            tpl_sb_putc(b, '>');
            break;
        }
        if (v.flags & TPL_F_NS)
            tpl_sb_puts(b, "<Namespace ");
        py_repr_dict(b, v.u.map, w);
        if (v.flags & TPL_F_NS)
            tpl_sb_putc(b, '>');
        break;
    case TPL_T_MACRO: { /* as Jinja2's Macro.__repr__ */
        const tpl_closure *cl = v.u.p;
        tpl_sb_puts(b, "<Macro ");
        if (cl && cl->name.len) py_repr_str(b, cl->name.u.s, cl->name.len);
        else tpl_sb_puts(b, "anonymous"); /* a call block's caller */
        tpl_sb_putc(b, '>');
        break;
    }
    case TPL_T_HOST:
        tpl_hobj_print(b, v, true);
        break;
    case TPL_T_LOOP: { /* as Jinja2's LoopContext.__repr__: index/length */
        const tpl_loop *l = v.u.p;
        if (l && l->items) tpl_sb_printf(b, "<LoopContext %u/%u>", l->i, l->items->len + (l->src ? l->src->len : 0));
        else tpl_sb_puts(b, "<LoopContext>");
        break;
    }
    case TPL_T_FUNC:
        if (v.u.p && v.aux >= TPL_FN_ALIAS) { /* dict[...], dict.get, range.start (vm.c class_attr) */
            const tpl_bound *bd = v.u.bound;
            const char *owner = tpl_lib_builtin(bd->method)->name; /* dict, range */
            if (v.aux == TPL_FN_ALIAS) { /* GenericAlias.__repr__ (3.11 ga_repr): a tuple's items, each repr() */
                tpl_sb_puts(b, owner);
                tpl_sb_putc(b, '[');
                const tpl_value *args = &bd->self;
                uint32_t n = 1;
                if (bd->self.type == TPL_T_LIST && (bd->self.flags & TPL_F_TUPLE) && !bd->self.aux && bd->self.u.list->len) {
                    args = bd->self.u.list->items;
                    n = bd->self.u.list->len;
                }
                for (uint32_t k = 0; k < n && !b->failed; k++) {
                    if (k) tpl_sb_puts(b, ", ");
                    tpl_value x = args[k];
                    tpl_vtype cls = tpl_value_class(x);
                    const tpl_builtin_info *bi = x.type == TPL_T_FUNC && !x.u.p ? tpl_lib_builtin(x.aux) : NULL;
                    if (cls != TPL_VT__COUNT) { /* a class: its module and qualified name (builtins: the name) */
                        const char *c = tpl_types[cls].pyclass; /* <class 'jinja2.utils.Cycler'> */
                        tpl_sb_put(b, c + 8, strlen(c) - 10);
                    } else if (bi && (x.aux == tpl_stdlib.id_range_hf || strcmp(bi->name, "lipsum") == 0)) { /* a function: the same */
                        tpl_sb_puts(b, x.aux == tpl_stdlib.id_range_hf ? "jinja2.sandbox.safe_range" : "jinja2.utils.generate_lorem_ipsum");
                    } else if (x.type == TPL_T_LIST && !x.aux && !(x.flags & TPL_F_TUPLE)) {
                        /* a list: its items as above (3.12's ga_repr_items_list); plain values only */
                        for (uint32_t j = 0; j < x.u.list->len; j++) {
                            tpl_value y = x.u.list->items[j];
                            if (y.type == TPL_T_FUNC || y.type == TPL_T_LIST || y.type == TPL_T_MAP || y.type == TPL_T_MACRO)
                                tpl_sb_mark(b, "container in a GenericAlias");
                        }
                        py_repr(b, x, w);
                    } else {
                        py_repr(b, x, w);
                    }
                }
                tpl_sb_putc(b, ']');
            } else {
                tpl_sb_printf(b, "<%s '%.*s' of '%s' objects>", v.aux == TPL_FN_DESCR ? "method" : "member",
                              (int)bd->self.len, bd->self.u.s, owner);
            }
            break;
        }
        /* fallthrough */
    default: {
        /* the globals Jinja2 has as classes print as the class */
        tpl_vtype cls = tpl_value_class(v);
        const char *repr = cls != TPL_VT__COUNT ? tpl_types[cls].pyclass : "<built-in function>";
        /* any other function, method or cycler/joiner object: Python prints its address */
        if (repr[1] != 'c') tpl_sb_mark(b, v.type == TPL_T_FUNC && v.u.p ? "method" : "function");
        tpl_sb_puts(b, repr);
        break;
    }
    }
}

void tpl_py_repr(tpl_sb *b, tpl_value v)
{
    walker w;
    w.depth = 0;
    py_repr(b, v, &w);
}

/* Python ascii(): repr with non-ASCII code points escaped. */
void tpl_py_ascii(tpl_sb *b, tpl_value v)
{
    tpl_sb r;
    tpl_sb_init(&r, b->arena);
    tpl_py_repr(&r, v);
    if (r.failed) { /* carried to b: never printed partly */
        if (r.address) tpl_sb_mark(b, r.address);
        else b->failed = true;
        return;
    }
    size_t i = 0;
    while (i < r.len) {
        unsigned char c = (unsigned char)r.p[i];
        if (c < 0x80) {
            tpl_sb_putc(b, (char)c);
            i++;
            continue;
        }
        uint32_t cp = tpl_utf8_next(r.p, r.len, &i);
        if (cp < 0x100) tpl_sb_printf(b, "\\x%02x", cp);
        else if (cp < 0x10000) tpl_sb_printf(b, "\\u%04x", cp);
        else tpl_sb_printf(b, "\\U%08x", cp);
    }
}

/* Python str(): strings as they are, Undefined as "", everything else as repr. */
void tpl_py_str(tpl_sb *b, tpl_value v)
{
    if (v.type == TPL_T_STR || v.type == TPL_T_RATIONAL) /* (str(Fraction(1, 3)) is 1/3) */
        tpl_sb_put(b, v.u.s, v.len);
    else if (v.type == TPL_T_HOST)
        tpl_hobj_print(b, v, false);
    else if (v.type == TPL_T_MAP && (v.flags & TPL_F_NS) && v.u.map->module) /* TemplateModule.__str__: the output */
        tpl_sb_put(b, v.u.map->module[0].u.s, v.u.map->module[0].len);
    else if (v.type != TPL_T_UNDEF && v.type != TPL_T_UNSET)
        tpl_py_repr(b, v);
}

/* ------------------------------------------------------------------ Ruby */

/* Onigmo's [[:print:]] for UTF-8 as Ruby 3.1 applies it in String#inspect: everything but
 * Cn, Cc (except U+0085), Cs, Zl and Zp (found by inspecting every code point in Ruby 3.1). */
static bool rb_printable(uint32_t c)
{
    if (c < 0x80)
        return c >= 0x20 && c < 0x7F;
    if (c == 0x85)
        return true;
    if (tpl_unicode_age_after13(c))   /* unassigned in Ruby 3.1's Unicode 13 */
        return false;
    switch (utf8proc_category((utf8proc_int32_t)c)) {
    case UTF8PROC_CATEGORY_CN: case UTF8PROC_CATEGORY_CC: case UTF8PROC_CATEGORY_CS:
    case UTF8PROC_CATEGORY_ZL: case UTF8PROC_CATEGORY_ZP:
        return false;
    default:
        return true;
    }
}

/* Ruby's rb_str_inspect (dump false) or rb_str_dump (dump true) of a UTF-8 string: "..." with \" \\ \n
 * \t \r \f \v \b \a \e, \# before {, $ or @, invalid bytes as \xNN. inspect writes the other ASCII
 * controls as \uXXXX and keeps printable characters past ASCII; dump (only ASCII left as it is) writes the
 * controls and 0x7F as \xNN and every character past ASCII as \uXXXX / \u{XXXXX}, as inspect writes the
 * non-printable ones. */
void tpl_rb_str_escape(tpl_sb *b, const char *s, size_t n, bool dump)
{
    tpl_sb_putc(b, '"');
    size_t i = 0;
    while (i < n) {
        size_t j = plain_run(s, n, i, "\"\\#");
        tpl_sb_put(b, s + i, j - i);
        if ((i = j) >= n)
            break;
        unsigned char c = (unsigned char)s[i];
        if (c < 0x80) {
            static const char esc_from[] = "\"\\\n\r\t\f\v\b\a\033";
            static const char esc_to[] = "\"\\nrtfvbae";
            const char *e = c ? strchr(esc_from, c) : NULL;
            i++;
            if (e) {
                tpl_sb_putc(b, '\\');
                tpl_sb_putc(b, esc_to[e - esc_from]);
            } else if (c == '#') {
                if (i < n && (s[i] == '{' || s[i] == '$' || s[i] == '@'))
                    tpl_sb_putc(b, '\\');
                tpl_sb_putc(b, '#');
            } else {
                tpl_sb_printf(b, dump ? "\\x%02X" : "\\u%04X", c);
            }
            continue;
        }
        size_t at = i;
        uint32_t cp = tpl_utf8_next(s, n, &i);
        if (bad_byte(cp, at, i))
            tpl_sb_printf(b, "\\x%02X", c);
        else if (!dump && rb_printable(cp))
            tpl_sb_put(b, s + at, i - at);
        else if (cp < 0x10000)
            tpl_sb_printf(b, "\\u%04X", (unsigned)cp);
        else
            tpl_sb_printf(b, "\\u{%X}", (unsigned)cp);
    }
    tpl_sb_putc(b, '"');
}

/* Symbol#inspect: :name for identifiers (optionally ending in ? ! or =) and operator names,
 * else :"..." with string escapes. */
static void rb_inspect_sym(tpl_sb *b, const char *s, size_t n)
{
    static const char *const ops[] = {"+", "-", "*", "/", "%", "**", "==", "===", "!=", "=~",
                                      "!~", "<", "<=", ">", ">=", "<=>", "<<", ">>", "!", "~",
                                      "+@", "-@", "[]", "[]=", "&", "|", "^", "`"};
    bool plain = n > 0 && !(s[0] >= '0' && s[0] <= '9');
    for (size_t i = 0; plain && i < n; i++) {
        unsigned char c = (unsigned char)s[i];
        bool word = c >= 0x80 || c == '_' || (c >= '0' && c <= '9') || ((c | 0x20) >= 'a' && (c | 0x20) <= 'z');
        if (!word && !(i == n - 1 && i > 0 && (c == '?' || c == '!' || c == '=')))
            plain = false;
    }
    for (size_t k = 0; !plain && k < sizeof ops / sizeof ops[0]; k++)
        plain = strlen(ops[k]) == n && memcmp(ops[k], s, n) == 0;
    tpl_sb_putc(b, ':');
    if (plain)
        tpl_sb_put(b, s, n);
    else
        tpl_rb_str_escape(b, s, n, false);
}

/* The class of an exception `rescue => e` bound (TPL_F_EXC_RB): the " (Class)" after its message. */
tpl_value tpl_rb_exc_class(tpl_value v)
{
    const char *s = v.u.s + v.len;
    if (s[0] == ' ' && s[1] == '(') {
        size_t k = 2;
        while (s[k] == ':' || (s[k] >= 'a' && s[k] <= 'z') || (s[k] >= 'A' && s[k] <= 'Z') || (s[k] >= '0' && s[k] <= '9')) k++;
        if (k > 2 && s[k] == ')' && s[k + 1] == 0) return tpl_v_str(s + 2, k - 2);
    }
    return tpl_v_str("StandardError", 13);
}

static void rb_inspect(tpl_sb *b, tpl_value v, walker *w)
{
    if (!w_charge(b, w))
        return;
    switch (v.type) {
    case TPL_T_UNDEF:
    case TPL_T_UNSET:
    case TPL_T_NONE:
        tpl_sb_puts(b, "nil");
        break;
    case TPL_T_BOOL:
        tpl_sb_puts(b, v.u.i ? "true" : "false");
        break;
    case TPL_T_INT:
        put_int(b, v.u.i);
        break;
    case TPL_T_BIGINT:
        put_big(b, v, false);
        break;
    case TPL_T_FLOAT:
        put_float(b, v.u.f, true);
        break;
    case TPL_T_RATIONAL: /* Rational#inspect: (1/3) */
        tpl_sb_putc(b, '(');
        tpl_sb_put(b, v.u.s, v.len);
        tpl_sb_putc(b, ')');
        break;
    case TPL_T_STR:
        if (v.flags & TPL_F_SYMBOL)
            rb_inspect_sym(b, v.u.s, v.len);
        else if (tpl_is_gemv_rb(v)) {   /* Gem::Version#inspect: #<Gem::Version "1.2"> */
            tpl_sb_puts(b, "#<Gem::Version ");
            tpl_rb_str_escape(b, v.u.s, v.len, false);
            tpl_sb_putc(b, '>');
        } else if (v.flags & TPL_F_CLASS_RB)   /* a class: its name */
            tpl_sb_put(b, v.u.s, v.len);
        else if (v.flags & TPL_F_EXC_RB) {   /* Exception#inspect: #<Class: message>, the class alone for an empty message */
            tpl_value c = tpl_rb_exc_class(v);
            if (v.len) {
                tpl_sb_puts(b, "#<");
                tpl_sb_put(b, c.u.s, c.len);
                tpl_sb_puts(b, ": ");
                tpl_sb_put(b, v.u.s, v.len);
                tpl_sb_putc(b, '>');
            } else
                tpl_sb_put(b, c.u.s, c.len);
        }
        else if ((v.flags & TPL_F_REGEX_RB) && v.len >= 5 && memcmp(v.u.s, "(?", 2) == 0) {
            /* stored as Regexp#to_s, "(?mi-x:src)"; inspect is /src/mi */
            size_t i = 2, on = 2;
            while (i < v.len && v.u.s[i] != '-' && v.u.s[i] != ':') i++;
            size_t on_end = i;
            while (i < v.len && v.u.s[i] != ':') i++;
            tpl_sb_putc(b, '/');
            if (i + 1 < v.len) tpl_sb_put(b, v.u.s + i + 1, v.len - i - 2);
            tpl_sb_putc(b, '/');
            tpl_sb_put(b, v.u.s + on, on_end - on);
        } else
            tpl_rb_str_escape(b, v.u.s, v.len, false);
        break;
    case TPL_T_LIST: {
        const tpl_list *l = v.u.list;
        if (v.flags & TPL_F_ENUM_RB) {   /* Enumerator#inspect: #<Enumerator: [1, 2]:each_slice(2)> */
            const tpl_value *x = l->items + l->len;
            const tpl_list *al = x[2].u.list;
            bool aseq = tpl_is_aseq_rb(v), kw = x[2].flags & TPL_F_TUPLE;   /* (kw: the last argument is the keywords) */
            if ((x[1].len == 10 && memcmp(x[1].u.s, "slice_when", 10) == 0) || (x[1].len == 11 && memcmp(x[1].u.s, "chunk_while", 11) == 0)) {
                tpl_sb_mark(b, "Enumerator::Generator");   /* #<Enumerator: #<Enumerator::Generator:0x...>:each> */
                break;
            }
            if (aseq) {   /* ArithmeticSequence#inspect: (1.step(5, 2)), ((1..3).step(2)) */
                bool range = x[0].type == TPL_T_LIST;
                tpl_sb_puts(b, range ? "((" : "(");
                rb_inspect(b, x[0], w);
                tpl_sb_puts(b, range ? ")." : ".");
            } else {
                tpl_sb_puts(b, "#<Enumerator: ");
                rb_inspect(b, x[0], w);
                tpl_sb_putc(b, ':');
            }
            tpl_sb_put(b, x[1].u.s, x[1].len);
            if (al->len) {
                tpl_sb_putc(b, '(');
                for (uint32_t i = 0; i < al->len; i++) {
                    if (i) tpl_sb_puts(b, ", ");
                    /* keywords, or a last Hash argument whose keys are all Symbols (inspect_enumerator prints
                     * it so: each_with_object({a: 1}) is each_with_object(a: 1)) */
                    bool kwh = i + 1 == al->len && al->items[i].type == TPL_T_MAP && (kw || al->items[i].u.map->len);
                    for (uint32_t k = 0; kwh && !kw && k < al->items[i].u.map->len; k++)
                        kwh = al->items[i].u.map->e[k].key.type == TPL_T_STR && (al->items[i].u.map->e[k].key.flags & TPL_F_SYMBOL);
                    if (kwh) {   /* by: 2, to: 5 */
                        const tpl_map *m = al->items[i].u.map;
                        for (uint32_t k = 0; k < m->len; k++) {
                            if (k) tpl_sb_puts(b, ", ");
                            tpl_sb_put(b, m->e[k].key.u.s, m->e[k].key.len);
                            tpl_sb_puts(b, ": ");
                            rb_inspect(b, m->e[k].val, w);
                        }
                    } else
                        rb_inspect(b, al->items[i], w);
                }
                tpl_sb_putc(b, ')');
            }
            tpl_sb_putc(b, aseq ? ')' : '>');
            break;
        }
        if ((v.flags & TPL_F_MATCH_RB) && l->len >= 5) {   /* MatchData#inspect: #<MatchData "ab" 1:"b" x:nil> */
            const tpl_value s = l->items[0];
            const tpl_list *names = l->items[2].type == TPL_T_LIST ? l->items[2].u.list : NULL;
            if (l->len % 2 == 0) {   /* a String pattern's (sub, scan: one item more): Ruby's #<MatchData: TEXT> */
                int64_t lo = l->items[3].u.i, hi = l->items[4].u.i;
                tpl_sb_puts(b, "#<MatchData: ");
                if (lo >= 0 && hi >= lo && (uint64_t)hi <= s.len) tpl_sb_put(b, s.u.s + lo, (size_t)(hi - lo));
                tpl_sb_putc(b, '>');
                break;
            }
            tpl_sb_puts(b, "#<MatchData ");
            for (uint32_t g = 0; 3 + 2 * g + 1 < l->len && !b->failed; g++) {
                int64_t lo = l->items[3 + 2 * g].u.i, hi = l->items[4 + 2 * g].u.i;
                if (g) {
                    tpl_sb_putc(b, ' ');
                    if (names && g - 1 < names->len && names->items[g - 1].type == TPL_T_STR)
                        tpl_sb_put(b, names->items[g - 1].u.s, names->items[g - 1].len);
                    else
                        put_int(b, g);
                    tpl_sb_putc(b, ':');
                }
                if (lo < 0) tpl_sb_puts(b, "nil");
                else tpl_rb_str_escape(b, s.u.s + lo, (size_t)(hi - lo), false);
            }
            tpl_sb_putc(b, '>');
            break;
        }
        if ((v.flags & TPL_F_RANGE_RB) && l->len == 3) {   /* Range#inspect: 1..3, "a"..."c" */
            /* as range_inspect: a nil begin shows only when the end is nil too (nil..nil) */
            bool nb = l->items[0].type == TPL_T_NONE, ne = l->items[1].type == TPL_T_NONE;
            if (!nb || ne) rb_inspect(b, l->items[0], w);
            tpl_sb_puts(b, l->items[2].u.i ? "..." : "..");
            if (nb || !ne) rb_inspect(b, l->items[1], w);
            break;
        }
        if (!w_enter(b, w, l)) {
            tpl_sb_puts(b, "[...]");
            break;
        }
        tpl_sb_putc(b, '[');
        for (uint32_t k = 0; k < l->len && !b->failed; k++) {
            if (k)
                tpl_sb_puts(b, ", ");
            rb_inspect(b, l->items[k], w);
        }
        tpl_sb_putc(b, ']');
        w_leave(w);
        break;
    }
    case TPL_T_MAP: {   /* Ruby 3.1 Hash#inspect: {"a"=>1, :b=>nil} */
        const tpl_map *m = v.u.map;
        if (!w_enter(b, w, m)) {
            tpl_sb_puts(b, "{...}");
            break;
        }
        tpl_sb_putc(b, '{');
        for (uint32_t k = 0; k < m->len && !b->failed; k++) {
            if (k)
                tpl_sb_puts(b, ", ");
            rb_inspect(b, m->e[k].key, w);
            tpl_sb_puts(b, "=>");
            rb_inspect(b, m->e[k].val, w);
        }
        tpl_sb_putc(b, '}');
        w_leave(w);
        break;
    }
    case TPL_T_HOST: /* the host's inspect */
        tpl_hobj_print(b, v, true);
        break;
    default:
        tpl_sb_puts(b, "#<Proc>");
        break;
    }
}

void tpl_rb_inspect(tpl_sb *b, tpl_value v)
{
    walker w;
    w.depth = 0;
    rb_inspect(b, v, &w);
}

/* Ruby to_s: nil -> "", strings and symbols as they are, arrays and hashes as inspect. */
void tpl_rb_to_s(tpl_sb *b, tpl_value v)
{
    switch (v.type) {
    case TPL_T_UNDEF:
    case TPL_T_UNSET:
    case TPL_T_NONE:
        break;
    case TPL_T_STR:
    case TPL_T_RATIONAL: /* Rational#to_s: 1/3 */
        tpl_sb_put(b, v.u.s, v.len);
        break;
    case TPL_T_HOST:
        tpl_hobj_print(b, v, false);
        break;
    case TPL_T_LIST:
        if ((v.flags & TPL_F_MATCH_RB) && v.u.list->len >= 5) {   /* MatchData#to_s: the matched text */
            const tpl_value *it = v.u.list->items;
            tpl_sb_put(b, it[0].u.s + it[3].u.i, (size_t)(it[4].u.i - it[3].u.i));
            break;
        }
        if ((v.flags & TPL_F_RANGE_RB) && v.u.list->len == 3) {   /* Range#to_s: a..c */
            tpl_rb_to_s(b, v.u.list->items[0]);
            tpl_sb_puts(b, v.u.list->items[2].u.i ? "..." : "..");
            tpl_rb_to_s(b, v.u.list->items[1]);
            break;
        }
        tpl_rb_inspect(b, v);
        break;
    default:
        tpl_rb_inspect(b, v);
        break;
    }
}

/* ------------------------------------------------------------------ JSON */

typedef struct json_opts {
    bool ascii, html, sort;
    int indent;                  /* < 0: no newlines */
    const char *ind_s;           /* a str indent (json.dumps uses it as it is), or NULL: indent spaces */
    size_t ind_n;
    const char *isep, *ksep;
    tpl_json_fail *fail;         /* the first failure's reason, or NULL */
} json_opts;

/* Records the first reason a json.dumps walk fails; returns false. */
static bool json_fail(const json_opts *o, int why, tpl_value bad)
{
    if (o->fail && o->fail->why == TPL_JSON_OK) {
        o->fail->why = why;
        o->fail->bad = bad;
    }
    return false;
}

/* Python json string encoding. ensure_ascii: py_encode_basestring_ascii (everything outside
 * 0x20..0x7E as \uXXXX, lowercase hex, surrogate pairs past the BMP); otherwise only '"', '\\'
 * and C0 controls are escaped. html adds Jinja2's htmlsafe_json_dumps replacements of < > & '
 * (they only ever occur inside strings). Bytes that are not UTF-8 become U+FFFD. */
static void json_str(tpl_sb *b, const char *s, size_t n, const json_opts *o)
{
    const char *specials = o->html ? "\"\\<>&'" : "\"\\";
    tpl_sb_putc(b, '"');
    size_t i = 0;
    while (i < n) {
        size_t j = plain_run(s, n, i, specials);
        tpl_sb_put(b, s + i, j - i);
        if ((i = j) >= n)
            break;
        unsigned char c = (unsigned char)s[i];
        if (c < 0x80) {
            static const char esc_from[] = "\"\\\b\f\n\r\t";
            static const char esc_to[] = "\"\\bfnrt";
            const char *e = c ? strchr(esc_from, c) : NULL;
            i++;
            if (e) {
                tpl_sb_putc(b, '\\');
                tpl_sb_putc(b, esc_to[e - esc_from]);
            } else if (c == 0x7F && !o->ascii) {
                tpl_sb_putc(b, (char)c);
            } else {
                tpl_sb_printf(b, "\\u%04x", c);
            }
            continue;
        }
        size_t at = i;
        uint32_t cp = tpl_utf8_next(s, n, &i);
        if (!o->ascii && bad_byte(cp, at, i))
            tpl_sb_puts(b, "\xEF\xBF\xBD");
        else if (!o->ascii)
            tpl_sb_put(b, s + at, i - at);
        else if (cp >= 0x10000)
            tpl_sb_printf(b, "\\u%04x\\u%04x", (unsigned)(0xD800 + ((cp - 0x10000) >> 10)),
                          (unsigned)(0xDC00 + ((cp - 0x10000) & 0x3FF)));
        else
            tpl_sb_printf(b, "\\u%04x", (unsigned)cp);
    }
    tpl_sb_putc(b, '"');
}

/* Python json float: repr, with NaN / Infinity / -Infinity. */
static void json_float(tpl_sb *b, double d)
{
    if (isnan(d))
        tpl_sb_puts(b, "NaN");
    else if (isinf(d))
        tpl_sb_puts(b, d > 0 ? "Infinity" : "-Infinity");
    else
        put_float(b, d, false);
}

/* Python's dict key coercion: str as is; float, True/False, None and int to their JSON text.
 * Other key types are a TypeError. */
static bool json_key(tpl_sb *b, tpl_value k, const json_opts *o)
{
    switch (k.type) {
    case TPL_T_STR:
        json_str(b, k.u.s, k.len, o);
        return true;
    case TPL_T_BIGINT:
        tpl_sb_putc(b, '"');
        put_big(b, k, true);
        tpl_sb_putc(b, '"');
        return true;
    case TPL_T_FLOAT:
    case TPL_T_BOOL:
    case TPL_T_NONE:
    case TPL_T_INT:
        tpl_sb_putc(b, '"');
        if (k.type == TPL_T_FLOAT)
            json_float(b, k.u.f);
        else if (k.type == TPL_T_INT)
            put_int(b, k.u.i);
        else
            tpl_sb_puts(b, k.type == TPL_T_NONE ? "null" : k.u.i ? "true" : "false");
        tpl_sb_putc(b, '"');
        return true;
    default:
        return false;
    }
}

/* Exact comparison of an int64 with a double (NaN compares equal to everything, as far as a
 * sort can tell). */
static int cmp_int_float(int64_t i, double f)
{
    if (isnan(f))
        return 0;
    if (f >= 9223372036854775808.0)
        return -1;
    if (f < -9223372036854775808.0)
        return 1;
    double fl = floor(f);
    int64_t fi = (int64_t)fl;
    if (i != fi)
        return i < fi ? -1 : 1;
    return f > fl ? -1 : 0;
}

/* Python `<` between two dict keys known to be both strings or both numbers. */
static int key_cmp(const void *pa, const void *pb)
{
    tpl_value a = (*(const tpl_entry *const *)pa)->key, b = (*(const tpl_entry *const *)pb)->key;
    if (a.type == TPL_T_STR) {
        size_t n = a.len < b.len ? a.len : b.len;
        int c = n ? memcmp(a.u.s, b.u.s, n) : 0;   /* UTF-8 byte order = code point order */
        return c ? c : (a.len > b.len) - (a.len < b.len);
    }
    if (a.type == TPL_T_BIGINT || b.type == TPL_T_BIGINT) {
        int c = tpl_big_cmp(a, b);
        return c == 2 ? 0 : c;
    }
    if (a.type != TPL_T_FLOAT && b.type != TPL_T_FLOAT)
        return (a.u.i > b.u.i) - (a.u.i < b.u.i);
    if (a.type == TPL_T_FLOAT && b.type == TPL_T_FLOAT)
        return (a.u.f > b.u.f) - (a.u.f < b.u.f);
    return a.type == TPL_T_FLOAT ? -cmp_int_float(b.u.i, a.u.f) : cmp_int_float(a.u.i, b.u.f);
}

static void json_newline(tpl_sb *b, const json_opts *o, int level)
{
    tpl_sb_putc(b, '\n');
    if (!o->ind_s) {
        for (long k = (long)o->indent * level; k > 0; k--)
            tpl_sb_putc(b, ' ');
        return;
    }
    for (int k = 0; k < level && !b->failed; k++) {
        if (!o->html) {
            tpl_sb_put(b, o->ind_s, o->ind_n);
            continue;
        }
        /* htmlsafe_json_dumps replaces < > & ' in the whole text, a str indent included */
        for (size_t i = 0; i < o->ind_n; i++) {
            char ch = o->ind_s[i];
            if (ch == '<' || ch == '>' || ch == '&' || ch == '\'') {
                char u[8];
                snprintf(u, sizeof u, "\\u%04x", (unsigned)ch);
                tpl_sb_puts(b, u);
            } else {
                tpl_sb_putc(b, ch);
            }
        }
    }
}

static bool json_val(tpl_sb *b, tpl_value v, const json_opts *o, walker *w);

/* Python's _iterencode_dict. sort_keys sorts by the original keys with Python's `<`, so keys
 * of mixed types (str and int, or None with anything) are a TypeError, as in Python. */
static bool json_dict(tpl_sb *b, const tpl_map *m, const json_opts *o, walker *w)
{
    if (m->len == 0) {
        tpl_sb_puts(b, "{}");
        return true;
    }
    const tpl_entry **order = NULL;
    if (o->sort && m->len > 1) {
        bool strs = m->e[0].key.type == TPL_T_STR;
        for (uint32_t k = 0; k < m->len; k++) {
            tpl_value key = m->e[k].key;
            if (strs ? key.type != TPL_T_STR : !tpl_is_num(key) && key.type != TPL_T_BIGINT)
                return false;
        }
        size_t bytes = (size_t)m->len * sizeof *order;
        order = b->arena ? tpl_arena_alloc(b->arena, bytes) : malloc(bytes);
        if (!order) {
            b->failed = true;
            return true;
        }
        for (uint32_t k = 0; k < m->len; k++)
            order[k] = &m->e[k];
        qsort(order, m->len, sizeof *order, key_cmp);
    }
    bool ok = true;
    tpl_sb_putc(b, '{');
    if (o->indent >= 0)
        json_newline(b, o, w->depth);
    for (uint32_t k = 0; ok && !b->failed && k < m->len; k++) {
        const tpl_entry *e = order ? order[k] : &m->e[k];
        if (k) {
            tpl_sb_puts(b, o->isep);
            if (o->indent >= 0)
                json_newline(b, o, w->depth);
        }
        ok = json_key(b, e->key, o) || json_fail(o, TPL_JSON_KEY, e->key);
        tpl_sb_puts(b, o->ksep);
        ok = ok && json_val(b, e->val, o, w);
    }
    if (o->indent >= 0)
        json_newline(b, o, w->depth - 1);
    tpl_sb_putc(b, '}');
    if (!b->arena)
        free(order);
    return ok;
}

/* Python json.dumps of one value; false on anything it would raise TypeError/ValueError for
 * (Undefined, callables, namespace objects, circular references). */
static bool json_val(tpl_sb *b, tpl_value v, const json_opts *o, walker *w)
{
    if (!w_charge(b, w))
        return true; /* the builder failed: the caller reports that */
    switch (v.type) {
    case TPL_T_NONE:
        tpl_sb_puts(b, "null");
        return true;
    case TPL_T_BOOL:
        tpl_sb_puts(b, v.u.i ? "true" : "false");
        return true;
    case TPL_T_INT:
        put_int(b, v.u.i);
        return true;
    case TPL_T_BIGINT:
        put_big(b, v, true);
        return true;
    case TPL_T_FLOAT:
        json_float(b, v.u.f);
        return true;
    case TPL_T_STR:
        json_str(b, v.u.s, v.len, o);
        return true;
    case TPL_T_LIST: {
        const tpl_list *l = v.u.list;
        if (v.aux) /* range, dict views, generators: TypeError in json.dumps */
            return json_fail(o, TPL_JSON_TYPE, v);
        if (l->len == 0) {
            tpl_sb_puts(b, "[]");
            return true;
        }
        if (!w_enter(b, w, l)) /* a cycle: json.dumps' check_circular ValueError (or the nest limit) */
            return b->failed || json_fail(o, TPL_JSON_CIRCULAR, v);
        bool ok = true;
        tpl_sb_putc(b, '[');
        if (o->indent >= 0)
            json_newline(b, o, w->depth);
        for (uint32_t k = 0; ok && !b->failed && k < l->len; k++) {
            if (k) {
                tpl_sb_puts(b, o->isep);
                if (o->indent >= 0)
                    json_newline(b, o, w->depth);
            }
            ok = json_val(b, l->items[k], o, w);
        }
        if (o->indent >= 0)
            json_newline(b, o, w->depth - 1);
        tpl_sb_putc(b, ']');
        w_leave(w);
        return ok;
    }
    case TPL_T_MAP: {
        if (v.flags & TPL_F_NS)
            return json_fail(o, TPL_JSON_TYPE, v);
        if (!w_enter(b, w, v.u.map))
            return b->failed || json_fail(o, TPL_JSON_CIRCULAR, v);
        bool ok = json_dict(b, v.u.map, o, w);
        w_leave(w);
        return ok || json_fail(o, TPL_JSON_TYPE, v); /* (the keys of mixed types sort_keys refuses) */
    }
    default:
        return json_fail(o, TPL_JSON_TYPE, v);
    }
}

/* On failure the builder is rolled back to where it was. */
static bool json_dumps(tpl_sb *b, tpl_value v, const json_opts *o)
{
    size_t start = b->len;
    walker w;
    w.depth = 0;
    if (json_val(b, v, o, &w))
        return true;
    if (!b->failed)
        b->len = start;
    return false;
}

/* json.dumps(v, ensure_ascii=, indent=, separators=, sort_keys=). Default separators are
 * (', ', ': ') without indent and (',', ': ') with one, as in Python. */
bool tpl_json_dumps(tpl_sb *b, tpl_value v, bool ensure_ascii, int indent, const char *item_sep,
                    const char *key_sep, bool sort_keys)
{
    json_opts o = {.ascii = ensure_ascii, .html = false, .sort = sort_keys, .indent = indent,
                   .isep = item_sep ? item_sep : indent < 0 ? ", " : ",",
                   .ksep = key_sep ? key_sep : ": "};
    return json_dumps(b, v, &o);
}

bool tpl_json_dumps_s(tpl_sb *b, tpl_value v, bool ensure_ascii, const char *ind, size_t ind_n, const char *item_sep,
                      const char *key_sep, bool sort_keys, tpl_json_fail *fail)
{
    json_opts o = {.ascii = ensure_ascii, .html = false, .sort = sort_keys, .indent = ind ? 0 : -1,
                   .ind_s = ind, .ind_n = ind_n,
                   .isep = item_sep ? item_sep : !ind ? ", " : ",",
                   .ksep = key_sep ? key_sep : ": ", .fail = fail};
    return json_dumps(b, v, &o);
}

bool tpl_json_dumps_htmlsafe_s(tpl_sb *b, tpl_value v, const char *ind, size_t ind_n, tpl_json_fail *fail)
{
    json_opts o = {.ascii = true, .html = true, .sort = true, .indent = ind ? 0 : -1, .ind_s = ind, .ind_n = ind_n,
                   .isep = !ind ? ", " : ",", .ksep = ": ", .fail = fail};
    return json_dumps(b, v, &o);
}

/* Jinja2 3.1 tojson: htmlsafe_json_dumps(v, sort_keys=True[, indent=]) with json.dumps'
 * ensure_ascii default, then < > & ' replaced by \u003c \u003e \u0026 \u0027. */
bool tpl_json_dumps_htmlsafe(tpl_sb *b, tpl_value v, int indent)
{
    json_opts o = {.ascii = true, .html = true, .sort = true, .indent = indent,
                   .isep = indent < 0 ? ", " : ",", .ksep = ": "};
    return json_dumps(b, v, &o);
}

/* ------------------------------------------------------------------ Ruby JSON */

/* Ruby's JSON generator (json 2.6, Ruby 3.1's: JSON.generate, JSON.dump, Object#to_json, and with pretty
 * JSON.pretty_generate): strings escaped as json.dumps with ensure_ascii off ('"', '\\', C0 controls;
 * not '/', U+2028 or 0x7F), nil null, numbers as Ruby prints them (1.0e+20), a Hash's keys by to_s,
 * other objects (a Range, a Regexp, a class) as their to_s string. Pretty: two-space indent, "key": value,
 * and json 2.6's empty forms ("[\n\n<indent>]", "{\n<indent>}"). Returns 0, or 1 with *bad set for a NaN or
 * infinite Float, 2 for nesting past 100 levels (JSON::NestingError), 3 when a host object's printing
 * failed. */
static void rb_json_put(tpl_sb *b, tpl_value s) { if (s.len) tpl_sb_put(b, s.u.s, s.len); }

static void rb_json_indent(tpl_sb *b, const tpl_rb_json_opts *jo, int depth)
{
    for (int i = 0; jo->indent.len && i < depth && !b->failed; i++) tpl_sb_put(b, jo->indent.u.s, jo->indent.len);
}

/* json 2.6's generator.c over a State (jo): generate_json_array/_object with the State's indent, space,
 * space_before, object_nl, array_nl, allow_nan and max_nesting; depth counts the open containers. */
static int rb_json(tpl_sb *b, tpl_value v, const tpl_rb_json_opts *jo, int depth, double *bad)
{
    static const json_opts o = {.ascii = false, .indent = -1};
    if (b->failed) return 0;
    switch (v.type) {
    case TPL_T_UNDEF: case TPL_T_UNSET: case TPL_T_NONE:
        tpl_sb_puts(b, "null");
        return 0;
    case TPL_T_BOOL:
        tpl_sb_puts(b, v.u.i ? "true" : "false");
        return 0;
    case TPL_T_INT:
        put_int(b, v.u.i);
        return 0;
    case TPL_T_BIGINT:
        put_big(b, v, false);
        return 0;
    case TPL_T_FLOAT:
        if (isnan(v.u.f) || isinf(v.u.f)) {
            if (!jo->allow_nan) { *bad = v.u.f; return 1; }
            tpl_sb_puts(b, isnan(v.u.f) ? "NaN" : v.u.f > 0 ? "Infinity" : "-Infinity");
            return 0;
        }
        put_float(b, v.u.f, true);
        return 0;
    case TPL_T_STR:
        if (!(v.flags & (TPL_F_CLASS_RB | TPL_F_REGEX_RB))) { json_str(b, v.u.s, v.len, &o); return 0; }
        break;
    case TPL_T_LIST:
        if (v.flags & TPL_F_ENUM_RB) return 5;   /* (its to_s, Kernel#to_s, is its address) */
        if (v.flags & (TPL_F_RANGE_RB | TPL_F_MATCH_RB)) break;
        if (jo->max_nesting && depth >= jo->max_nesting) return 2;
        if (depth >= TPL_RB_JSON_DEPTH) return 4;
        tpl_sb_putc(b, '[');
        rb_json_put(b, jo->array_nl);
        for (uint32_t k = 0; k < v.u.list->len && !b->failed; k++) {
            if (k) { tpl_sb_putc(b, ','); rb_json_put(b, jo->array_nl); }
            rb_json_indent(b, jo, depth + 1);
            int r = rb_json(b, v.u.list->items[k], jo, depth + 1, bad);
            if (r) return r;
        }
        if (jo->array_nl.type == TPL_T_STR) {   /* given, even empty: the closing indent too */
            rb_json_put(b, jo->array_nl);
            rb_json_indent(b, jo, depth);
        }
        tpl_sb_putc(b, ']');
        return 0;
    case TPL_T_MAP: {
        const tpl_map *m = v.u.map;
        if (jo->max_nesting && depth >= jo->max_nesting) return 2;
        if (depth >= TPL_RB_JSON_DEPTH) return 4;
        tpl_sb_putc(b, '{');
        for (uint32_t k = 0; k < m->len && !b->failed; k++) {
            if (k) tpl_sb_putc(b, ',');
            rb_json_put(b, jo->object_nl);
            rb_json_indent(b, jo, depth + 1);
            tpl_value key = m->e[k].key;
            if (key.type == TPL_T_STR) {
                json_str(b, key.u.s, key.len, &o);
            } else {
                tpl_sb t;
                tpl_sb_init(&t, b->arena);
                tpl_rb_to_s(&t, key);
                if (t.failed) { b->failed = true; return 0; }
                json_str(b, t.p ? t.p : "", t.len, &o);
            }
            rb_json_put(b, jo->space_before);
            tpl_sb_putc(b, ':');
            rb_json_put(b, jo->space);
            int r = rb_json(b, m->e[k].val, jo, depth + 1, bad);
            if (r) return r;
        }
        if (jo->object_nl.type == TPL_T_STR) {
            rb_json_put(b, jo->object_nl);
            rb_json_indent(b, jo, depth);
        }
        tpl_sb_putc(b, '}');
        return 0;
    }
    default:
        break;
    }
    /* anything else: its to_s, as a JSON string */
    tpl_sb t;
    tpl_sb_init(&t, b->arena);
    tpl_rb_to_s(&t, v);
    if (t.failed) { b->failed = true; return 3; }
    json_str(b, t.p ? t.p : "", t.len, &o);
    return 0;
}

void tpl_rb_json_defaults(tpl_rb_json_opts *jo, bool pretty)
{
    memset(jo, 0, sizeof *jo);
    jo->indent = jo->space = jo->space_before = jo->object_nl = jo->array_nl = tpl_v_none();
    jo->max_nesting = 100;
    if (pretty) {
        jo->indent = tpl_v_str("  ", 2);
        jo->space = tpl_v_str(" ", 1);
        jo->object_nl = tpl_v_str("\n", 1);
        jo->array_nl = tpl_v_str("\n", 1);
    }
}

int tpl_rb_json_with(tpl_sb *b, tpl_value v, const tpl_rb_json_opts *jo, double *bad)
{
    return rb_json(b, v, jo, 0, bad);
}

int tpl_rb_json(tpl_sb *b, tpl_value v, bool pretty, double *bad)
{
    tpl_rb_json_opts jo;
    tpl_rb_json_defaults(&jo, pretty);
    return rb_json(b, v, &jo, 0, bad);
}
