/* printf-style `%` formatting: Python's str % args (Jinja2's `format` filter and `%`), and ERB's
 * String#% / format(), which is Ruby's Kernel#format (selected by the render's syntax). */
#include "fmt.h"
#include "../../runtime/host.h"

#include <limits.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define OOM() tpl_vm_nomem(vm)

static tpl_arena *AR(tpl_vm *vm) { return tpl_vm_arena(vm); }

/* Pads s (ncp code points) to width with spaces (left unless '-'), or zeros after the sign. */
static void pct_pad(tpl_sb *b, const char *s, size_t n, int64_t ncp, int64_t width, bool left, bool zero,
                    size_t signlen)
{
    int64_t pad = width > ncp ? width - ncp : 0;
    if (left) {
        tpl_sb_put(b, s, n);
        tpl_sb_put_fill(b, ' ', pad);
    } else if (zero) {
        tpl_sb_put(b, s, signlen);
        tpl_sb_put_fill(b, '0', pad);
        tpl_sb_put(b, s + signlen, n - signlen);
    } else {
        tpl_sb_put_fill(b, ' ', pad);
        tpl_sb_put(b, s, n);
    }
}

/* Ruby's Kernel#format prints floats through its BSD__dtoa (missing/dtoa.c), modes 2 (%e, %g: that
 * many significant digits) and 3 (%f: that many after the point). For at most 14 digits it first
 * computes them in double arithmetic, and when the remainder past the last digit is within its error
 * bound of one half it rounds that digit half to even without the exact value: an odd digit goes up,
 * an even one is kept ("%.2f" % 2.675 is "2.68" and "%.2f" % 56.905 is "56.90", where 2.675 is
 * 2.67499999999999982236431605997495353221893310546875 and 56.905 a little more than 56.905).
 * Everywhere else Ruby's digits are the correctly rounded ones glibc prints. This is that first pass:
 * for d > 0 finite, true when the half case applies, with the digits in dig (no point, *nd of them)
 * and *decpt, the position of the point after the first digit as dtoa's. A kept even digit then
 * comes from dtoa's exact pass, which leaves the trailing zeros of the digits in place when the exact
 * value is past the half or an integer below 1e15 (*zeros: %g prints them, "%.4g" % 0.022505 is
 * "0.02250" and "%g" % 1000005.0 "1.00000e+06"). */
static bool rb_dtoa_half(double d, int mode, int ndigits, char *dig, int *nd, int *decpt, bool *zeros)
{
    const double d0 = d;
    static const double tens[] = { 1e0,  1e1,  1e2,  1e3,  1e4,  1e5,  1e6,  1e7,  1e8,  1e9,  1e10, 1e11,
                                   1e12, 1e13, 1e14, 1e15, 1e16, 1e17, 1e18, 1e19, 1e20, 1e21, 1e22 };
    static const double bigtens[] = { 1e16, 1e32, 1e64, 1e128, 1e256 };
    uint64_t bits;
    memcpy(&bits, &d, sizeof bits);
    uint32_t w0 = (uint32_t)(bits >> 32), w1 = (uint32_t)bits;
    int ex = (int)(w0 >> 20 & 0x7ff), i;
    double d2;
    if (ex) { /* normalized: d2 is the significand in [1, 2) */
        uint64_t b2 = (bits & 0x000fffffffffffffull) | 0x3ff0000000000000ull;
        memcpy(&d2, &b2, sizeof d2);
        i = ex - 1023;
    } else { /* subnormal: d2b's bit count and exponent, as dtoa's */
        uint64_t m = bits & 0x000fffffffffffffull;
        int tz = __builtin_ctzll(m);
        int bbits = 64 - __builtin_clzll(m) - tz, be = -1074 + tz;
        i = bbits + be + (1023 + 52 - 1);
        uint32_t x = i > 32 ? w0 << (64 - i) | w1 >> (i - 32) : w1 << (32 - i);
        d2 = (double)x;
        uint64_t b2;
        memcpy(&b2, &d2, sizeof b2);
        b2 -= (uint64_t)31 << 52;
        memcpy(&d2, &b2, sizeof d2);
        i -= (1023 + 52 - 1) + 1;
    }
    double ds = (d2 - 1.5) * 0.289529654602168 + 0.1760912590558 + i * 0.301029995663981;
    int k = (int)ds;
    if (ds < 0. && ds != k) k--;
    bool k_check = true;
    if (k >= 0 && k <= 22) {
        if (d < tens[k]) k--;
        k_check = false;
    }
    int ilim, ilim1;
    if (mode == 2) {
        ilim = ilim1 = ndigits <= 0 ? 1 : ndigits;
    } else {
        ilim = ndigits + k + 1;
        ilim1 = ilim - 1;
    }
    if (ilim < 1 || ilim > 14) return false;    /* no quick pass (or its one-digit case, which is exact) */
    int ieps = 2, j, bi = 0;
    if (k > 0) {
        ds = tens[k & 0xf];
        j = k >> 4;
        if (j & 0x10) {
            j &= 0xf;
            d /= bigtens[4];
            ieps++;
        }
        for (; j; j >>= 1, bi++)
            if (j & 1) { ieps++; ds *= bigtens[bi]; }
        d /= ds;
    } else if (k < 0) {
        d *= tens[-k & 0xf];
        for (j = -k >> 4; j; j >>= 1, bi++)
            if (j & 1) { ieps++; d *= bigtens[bi]; }
    }
    if (k_check && d < 1.) {
        if (ilim1 <= 0) return false;
        ilim = ilim1;
        k--;
        d *= 10.;
        ieps++;
    }
    double eps = ldexp(ieps * d + 7., -52) * tens[ilim - 1];
    int n = 0;
    for (int q = 1;; q++, d *= 10.) {
        int32_t L = (int32_t)d;
        d -= L;
        dig[n++] = (char)('0' + L);
        if (d == 0. || q == ilim) break;
    }
    if (d > 0.5 + eps || d < 0.5 - eps) return false;
    *zeros = false;
    if ((dig[n - 1] - '0') & 1) {   /* dtoa's bump_up */
        while (n > 0 && dig[n - 1] == '9') n--;
        if (n == 0) { dig[n++] = '1'; k++; }
        else dig[n - 1]++;
    } else if (d0 < 1e15 && d0 == floor(d0)) {
        *zeros = true;              /* the small-integer pass keeps every digit */
    } else {
        char ex[32];                /* past the half exactly when correct rounding goes up */
        snprintf(ex, sizeof ex, "%.*e", n - 1, d0);
        *zeros = ex[0] != dig[0] || (n > 1 && memcmp(ex + 2, dig + 1, (size_t)n - 1) != 0);
    }
    *nd = n;
    *decpt = k + 1;
    return true;
}

/* Lays out the digits dg[0..nd) of 0.dg x 10^decpt (digits past nd are zeros) as C's %e, %f or %g
 * (conv, either case) with precision p: alt is the '#' flag (the point always, and %g's trailing
 * zeros), keep keeps %g's trailing zeros without forcing a point (Ruby's untrimmed digits). */
static void put_digits(tpl_sb *b, const char *dg, int64_t nd, int64_t decpt, int64_t p, char conv, bool alt,
                       bool keep)
{
    char lc = (char)(conv | 0x20);
    bool g = lc == 'g';
    if (g) {
        int64_t P = p ? p : 1, x = decpt - 1;
        if (x >= -4 && x < P) { lc = 'f'; p = P - 1 - x; }
        else { lc = 'e'; p = P - 1; }
    }
    size_t point = 0;
    if (lc == 'f') {
        if (decpt <= 0) tpl_sb_putc(b, '0');
        for (int64_t i = 0; i < decpt; i++) tpl_sb_putc(b, i < nd ? dg[i] : '0');
        point = b->len;
        if (p > 0 || alt) tpl_sb_putc(b, '.');
        for (int64_t i = decpt; i < decpt + p; i++) tpl_sb_putc(b, i >= 0 && i < nd ? dg[i] : '0');
    } else {
        tpl_sb_putc(b, dg[0]);
        point = b->len;
        if (p > 0 || alt) tpl_sb_putc(b, '.');
        for (int64_t i = 1; i <= p; i++) tpl_sb_putc(b, i < nd ? dg[i] : '0');
    }
    if (g && !alt && b->len > point && !b->failed) {
        if (!keep)
            while (b->p[b->len - 1] == '0') b->len--;
        if (b->p[b->len - 1] == '.') b->len--;
    }
    if (lc == 'e') {
        int64_t x = dg[0] == '0' ? 0 : decpt - 1;
        tpl_sb_printf(b, "%c%c%02lld", conv == 'E' || conv == 'G' ? 'E' : 'e', x < 0 ? '-' : '+',
                      (long long)(x < 0 ? -x : x));
    }
}

/* C's %#g (precision p, conv 'g' or 'G') of ad >= 0 into b. glibc's loses a zero when rounding
 * carries into a new digit ("%#.2g" of 99.96 is "1.e+02", Python's and Ruby's "1.0e+02"), so its
 * correctly rounded %e digits are laid out here. False when out of memory. */
bool tpl_fmt_alt_g(tpl_sb *b, double ad, int64_t p, char conv)
{
    int P = p ? (int)p : 1;
    int need = snprintf(NULL, 0, "%.*e", P - 1, ad);
    char *e = need < 0 ? NULL : malloc((size_t)need + 1);
    if (!e) return false;
    snprintf(e, (size_t)need + 1, "%.*e", P - 1, ad);
    char *x = strchr(e, 'e');
    int64_t n = 0;
    for (char *c = e; c < x; c++)
        if (*c != '.') e[n++] = *c;
    put_digits(b, e, n, strtol(x + 1, NULL, 10) + 1, p, conv, true, false);
    free(e);
    return !b->failed;
}

/* Ruby's %a of ad >= 0 (finite), after its "0x": BSD__hdtoa's digits as Ruby's BSD_vfprintf lays them
 * out. The first digit is always 1 (subnormals normalized: 5e-324 is 0x1p-1074, glibc's
 * 0x0.0000000000001p-1022), a precision rounds the significand half to even (1.5 at %.0a is 0x1p+1,
 * glibc's 0x2p+0), and without one the 13 hex digits lose their trailing zeros. */
static void rb_hexfloat(tpl_sb *b, double ad, int64_t prec, bool alt, bool upper)
{
    const char *xd = upper ? "0123456789ABCDEF" : "0123456789abcdef";
    uint64_t frac = 0;   /* the 52 bits after the point */
    int ex = 0, nd = 0;  /* the binary exponent, the fraction digits printed */
    if (ad != 0) {
        int e;
        double m = frexp(ad, &e);                 /* ad = m * 2^e, m in [0.5, 1) */
        uint64_t full = (uint64_t)ldexp(m, 53);   /* 1.f as a 53-bit integer */
        ex = e - 1;
        if (prec >= 0 && prec < 13) {
            int drop = 4 * (13 - (int)prec);
            uint64_t q = full >> drop, r = full & ((UINT64_C(1) << drop) - 1), half = UINT64_C(1) << (drop - 1);
            if (r > half || (r == half && (q & 1))) q++;
            if (q >> (53 - drop)) { q >>= 1; ex++; }   /* rounded up to 2.0: 1.0 at the next exponent */
            full = q << drop;
        }
        frac = full & ((UINT64_C(1) << 52) - 1);
    }
    tpl_sb_putc(b, ad != 0 ? '1' : '0');
    if (prec < 0) {
        nd = 13;
        while (nd > 0 && ((frac >> (4 * (13 - nd))) & 0xf) == 0) nd--;
    } else {
        nd = prec < 13 ? (int)prec : 13;
    }
    if (nd > 0 || prec > 0 || alt) tpl_sb_putc(b, '.');
    for (int k = 0; k < nd; k++) tpl_sb_putc(b, xd[(frac >> (4 * (12 - k))) & 0xf]);
    if (prec > 13) tpl_sb_put_fill(b, '0', prec - 13);
    tpl_sb_printf(b, "%c%c%d", upper ? 'P' : 'p', ex < 0 ? '-' : '+', ex < 0 ? -ex : ex);
}

/* The arguments conversions take, as CPython's formatter keeps them: a tuple's items (len >= 0,
 * idx the next one), or one object (len -1, idx -2 until it is taken). `%(key)` makes the
 * mapping's value the one object, so a `*` or a keyless conversion after it takes that value
 * once more at most ("%(a)*d" takes a as the width, then has no argument). */
typedef struct {
    const tpl_value *items;
    tpl_value one;
    int64_t len, idx;
} pct_args;

static int next_arg(tpl_vm *vm, pct_args *a, tpl_value *out)
{
    if (a->idx >= a->len)
        return tpl_vm_error(vm, TPL_ERR_TYPE, "not enough arguments for format string");
    a->idx++;
    *out = a->len < 0 ? a->one : a->items[a->idx - 1];
    return 0;
}

/* A `*` width or precision: the next argument, an int. Markup's % (safe) wraps every argument in
 * markupsafe's _MarkupEscapeHelper, which is no int: "* wants int" whatever the value. */
static int star_arg(tpl_vm *vm, pct_args *a, int64_t *out, bool safe)
{
    tpl_value w = tpl_v_none();
    if (next_arg(vm, a, &w) < 0)
        return -1;
    if ((w.type != TPL_T_INT && w.type != TPL_T_BOOL) || safe)
        return tpl_vm_error(vm, TPL_ERR_TYPE, "* wants int");
    *out = w.u.i;
    return 0;
}

/* Ruby's NUM2INT of what is no number: its TypeError. */
static int rb_int_conv_error(tpl_vm *vm, tpl_value v)
{
    if (v.type == TPL_T_NONE)
        return tpl_vm_error(vm, TPL_ERR_TYPE, "no implicit conversion from nil to integer (TypeError)");
    return tpl_vm_error(vm, TPL_ERR_TYPE, "no implicit conversion of %s into Integer (TypeError)",
                        v.type == TPL_T_BOOL ? (v.u.i ? "true" : "false") : tpl_rb_class_name(v));
}

/* Ruby's NUM2INT: an Integer in int's range, a Float truncated (through long), else its errors. */
static int rb_num2int(tpl_vm *vm, tpl_value v, int64_t *out)
{
    int64_t i;
    if (v.type == TPL_T_INT) {
        i = v.u.i;
    } else if (v.type == TPL_T_BIGINT) {
        return tpl_vm_error(vm, TPL_ERR_VALUE, "bignum too big to convert into `long' (RangeError)");
    } else if (v.type == TPL_T_FLOAT) {
        double d = v.u.f;
        if (isnan(d) || isinf(d))
            return tpl_vm_error(vm, TPL_ERR_VALUE, "float %s out of range of integer (RangeError)",
                                isnan(d) ? "NaN" : d < 0 ? "-Inf" : "Inf");
        if (!(d > -9223372036854775808.0 && d < 9223372036854775808.0))
            return tpl_vm_error(vm, TPL_ERR_VALUE, "float %-.10g out of range of integer (RangeError)", d);
        i = (int64_t)d;
    } else {
        return rb_int_conv_error(vm, v);
    }
    if (i > 2147483647 || i < -2147483648LL)
        return tpl_vm_error(vm, TPL_ERR_VALUE, "integer %lld too %s to convert to `int' (RangeError)", (long long)i,
                            i < 0 ? "small" : "big");
    *out = i;
    return 0;
}

/* A conversion's flags, width and precision (-1: none) and its character. */
typedef struct {
    bool left, plus, space, alt, zero;
    int64_t width, prec;
    char conv;
} pct_spec;

/* Formats arg by one conversion into b: Python's %, or Ruby's format (rb; conv 'r' is then %p).
 * idx is the conversion character's index in the format (Python's messages). */
static int pct_convert(tpl_vm *vm, tpl_sb *b, const pct_spec *sp, tpl_value arg, bool rb, bool safe, size_t idx)
{
    bool left = sp->left, plus = sp->plus, space = sp->space, alt = sp->alt, zero = sp->zero;
    int64_t width = sp->width, prec = sp->prec;
    char conv = sp->conv;
    tpl_sb tb;
    tpl_sb_init(&tb, AR(vm));
    if (safe && !rb) {
        /* Markup's %: the argument is markupsafe's _MarkupEscapeHelper, which has __int__ and
         * __float__ (%d, %f work) but no __index__ (%o, %x, %X need one) and is no int or str (%c) */
        if (conv == 'o' || conv == 'x' || conv == 'X')
            return tpl_vm_error(vm, TPL_ERR_TYPE, "%%%c format: an integer is required, not _MarkupEscapeHelper", conv);
        if (conv == 'c') return tpl_vm_error(vm, TPL_ERR_TYPE, "%%c requires int or char");
    }
    switch (conv) {
    case 's': case 'r': case 'a': {
        if (rb && conv == 'a') goto rb_float; /* Ruby's %a is a hexadecimal float, not Python's ascii() */
        if (conv == 's') (rb ? tpl_rb_to_s : tpl_py_str)(&tb, arg);
        else if (conv == 'r') (rb ? tpl_rb_inspect : tpl_py_repr)(&tb, arg);
        else tpl_py_ascii(&tb, arg);
        if (tb.failed) /* an int past 4,300 digits, a function in a list, no memory */
            return tpl_vm_sb_error(vm, &tb, "while getting the repr of an object");
        tpl_value t = tpl_sb_value(&tb);
        if (safe && !(arg.type == TPL_T_STR && (arg.flags & TPL_F_SAFE) && conv == 's')) {
            tpl_sb eb;
            tpl_sb_init(&eb, AR(vm));
            tpl_html_escape(&eb, t.u.s, t.len);
            t = tpl_sb_value(&eb);
        }
        size_t nb = t.len;
        int64_t ncp = (int64_t)tpl_utf8_len(t.u.s, t.len);
        if (prec >= 0 && ncp > prec) {
            nb = tpl_utf8_offset(t.u.s, t.len, (size_t)prec);
            ncp = prec;
        }
        pct_pad(b, t.u.s, nb, ncp, width, left, false, 0);
        break;
    }
    case 'b': case 'B':
        if (!rb) goto unsupported;
        /* fallthrough */
    case 'd': case 'i': case 'u': case 'o': case 'x': case 'X': {
        int64_t v;
        if (rb && arg.type != TPL_T_INT) { /* Ruby converts with Integer(): "12", 3.9 -> 3 */
            tpl_value cv[3] = { arg, tpl_v_unset(), tpl_v_unset() };
            if (r_k_Integer(vm, cv, &arg) < 0) return -1;
        }
        tpl_value bigv = tpl_v_none(); /* a big int argument (bigint.h) */
        if (arg.type == TPL_T_HOST && (conv == 'd' || conv == 'i' || conv == 'u') &&
            (tpl_hobj_numeric(arg) & TPL_HOST_NUMBER)) { /* Python: int(x) of a Decimal, a Fraction */
            tpl_value n;
            int h = tpl_hobj_number(vm, arg, false, &n);
            if (h < 0) return -1;
            if (h == 0) arg = n;
        }
        if (arg.type == TPL_T_INT || arg.type == TPL_T_BOOL) {
            v = arg.u.i;
        } else if (arg.type == TPL_T_BIGINT) {
            bigv = arg;
            v = arg.u.s[0] == '-' ? -1 : 1;
        } else if (arg.type == TPL_T_FLOAT && (conv == 'd' || conv == 'i' || conv == 'u')) {
            double d = arg.u.f;
            if (isnan(d))
                return tpl_vm_error(vm, TPL_ERR_VALUE, "cannot convert float NaN to integer");
            if (isinf(d))
                return tpl_vm_fail(vm, TPL_EK_OVERFLOW, "cannot convert float infinity to integer");
            if (!(d > -9.2e18 && d < 9.2e18)) {
                if (tpl_big_from_double(vm, d, &bigv) < 0) return -1;
                v = d < 0 ? -1 : 1;
            } else {
                v = (int64_t)d;
            }
        } else if (conv == 'd' || conv == 'i' || conv == 'u') {
            return tpl_vm_error(vm, TPL_ERR_TYPE, "%%%c format: a real number is required, not %s", conv,
                                tpl_type_name(vm, arg));
        } else {
            return tpl_vm_error(vm, TPL_ERR_TYPE, "%%%c format: an integer is required, not %s", conv,
                                tpl_type_name(vm, arg));
        }
        uint64_t mag = v < 0 ? 0 - (uint64_t)v : (uint64_t)v;
        char dgbuf[72], *dg = dgbuf;
        int64_t nd = 0;
        int base = (conv == 'o') ? 8 : (conv == 'x' || conv == 'X') ? 16 : (conv == 'b' || conv == 'B') ? 2 : 10;
        const char *digs = conv == 'X' ? "0123456789ABCDEF" : "0123456789abcdef";
        if (rb && v < 0 && base != 10 && !plus && !space) {
            /* Ruby: a negative number in base 2, 8 or 16 without a sign flag is its two's complement
             * after "..", its endless leading sign digits shown once (-5: "..fb", "%08x": "..fffffb",
             * "%#x": "0x..fb"; an octal's "0" prefix is dropped): sprintf.c's `dots`. */
            char sd = base == 16 ? (conv == 'X' ? 'F' : 'f') : base == 8 ? '7' : '1';
            bool big = bigv.type == TPL_T_BIGINT;
            mpz_t z;
            size_t cap = 72, k;
            if (big) {
                tpl_big_get(z, bigv);
                cap = mpz_sizeinbase(z, base) + 4;
            }
            char *t = tpl_arena_alloc(AR(vm), cap);
            if (!t) { if (big) mpz_clear(z); return OOM(); }
            k = cap;
            if (big) {
                while (mpz_cmp_si(z, -1) != 0 && k > 1) t[--k] = digs[mpz_fdiv_q_ui(z, z, (unsigned long)base)];
                mpz_clear(z);
            } else {
                for (int64_t w = v; w != -1 && k > 1;) {
                    int64_t d = ((w % base) + base) % base;
                    t[--k] = digs[d];
                    w = (w - d) / base;
                }
            }
            t[--k] = sd;
            const char *pre = !alt || base == 8 ? "" : conv == 'x' ? "0x" : conv == 'X' ? "0X" : conv == 'b' ? "0b" : "0B";
            int64_t len = (int64_t)(cap - k), w = (width < 0 ? 0 : width) - 2 - (int64_t)strlen(pre), p = prec;
            if (p >= 0) p -= 2;
            if (zero && !left && prec < 0) { p = w; w = 0; }
            else { if (p < len) p = len; w -= p; }
            if (!left && w > 0) tpl_sb_put_fill(b, ' ', w);
            tpl_sb_puts(b, pre);
            tpl_sb_puts(b, "..");
            if (p > len) tpl_sb_put_fill(b, sd, p - len);
            tpl_sb_put(b, t + k, (size_t)len);
            if (left && w > 0) tpl_sb_put_fill(b, ' ', w);
            break;
        }
        if (bigv.type == TPL_T_BIGINT) {
            if (!rb && base == 10 && tpl_big_ndigits(bigv) > TPL_PY_INT_MAX_STR_DIGITS)
                return tpl_big_str_error(vm);
            mpz_t z;
            tpl_big_get(z, bigv);
            mpz_abs(z, z);
            dg = tpl_arena_alloc(AR(vm), mpz_sizeinbase(z, base) + 2);
            if (!dg) { mpz_clear(z); return OOM(); }
            mpz_get_str(dg, conv == 'X' ? -16 : base, z);
            mpz_clear(z);
            nd = (int64_t)strlen(dg);
        } else {
            char tmp[72];
            do { tmp[nd++] = digs[mag % (uint64_t)base]; mag /= (uint64_t)base; } while (mag);
            for (int64_t k = 0; k < nd; k++) dg[k] = tmp[nd - 1 - k];
        }
        if (rb) {
            /* sprintf.c: '#' adds no prefix to 0 (an octal 0 is its "0" prefix alone), nor an octal one
             * to digits a precision pads; a precision turns the 0 flag off and "%.0d" of 0 is empty */
            const char *sc = v < 0 ? "-" : plus ? "+" : space ? " " : "";
            const char *pre = !alt ? "" : base == 8 ? "0" : base == 10 ? "" : conv == 'x' ? "0x" : conv == 'X' ? "0X"
                              : conv == 'b' ? "0b" : "0B";
            bool zero0 = nd == 1 && dg[0] == '0';
            int64_t len = nd, p = prec;
            if (base == 8 && *pre) {
                if (zero0) { len = 0; if (p >= 0) p--; }
                else if (p > len) pre = "";
            } else if (zero0) {
                pre = "";
            }
            int64_t w = (width < 0 ? 0 : width) - (int64_t)strlen(pre) - (int64_t)strlen(sc);
            if (zero && !left && prec < 0) { p = w; w = 0; }
            else {
                if (p < len) {
                    if (!*pre && p == 0 && zero0) len = 0;
                    p = len;
                }
                w -= p;
            }
            if (!left && w > 0) tpl_sb_put_fill(b, ' ', w);
            tpl_sb_puts(b, sc);
            tpl_sb_puts(b, pre);
            if (p > len) tpl_sb_put_fill(b, '0', p - len);
            tpl_sb_put(b, dg, (size_t)len);
            if (left && w > 0) tpl_sb_put_fill(b, ' ', w);
            break;
        }
        tpl_sb_put(&tb, v < 0 ? "-" : plus ? "+" : space ? " " : "", (v < 0 || plus || space) ? 1 : 0);
        if (alt && conv == 'o') tpl_sb_puts(&tb, rb ? "0" : "0o");
        if (alt && conv == 'b') tpl_sb_puts(&tb, "0b");
        if (alt && conv == 'B') tpl_sb_puts(&tb, "0B");
        if (alt && conv == 'x') tpl_sb_puts(&tb, "0x");
        if (alt && conv == 'X') tpl_sb_puts(&tb, "0X");
        size_t signlen = tb.len;
        if (prec > nd) tpl_sb_put_fill(&tb, '0', prec - nd);
        tpl_sb_put(&tb, dg, (size_t)nd);
        pct_pad(b, tb.p, tb.len, (int64_t)tb.len, width, left, zero && !left, signlen);
        break;
    }
    case 'A':
        if (!rb) goto unsupported;
        /* fallthrough */
    case 'e': case 'E': case 'f': case 'F': case 'g': case 'G': {
        double d;
    rb_float:
        if (rb && conv == 'f' && arg.type == TPL_T_RATIONAL) {
            /* Ruby's %f of a Rational is exact too (sprintf.c): |num| * 10**prec + den / 2, divided by
             * den, its digits with the point before the last prec */
            int64_t p = prec < 0 ? 6 : prec;
            if (p > TPL_MAX_FLOAT_PREC)
                return tpl_vm_error(vm, TPL_ERR_LIMIT, "precision too large (tpl formats at most %d digits)",
                                    TPL_MAX_FLOAT_PREC);
            bool neg = arg.u.s[0] == '-';
            tpl_sb_put(&tb, neg ? "-" : plus ? "+" : space ? " " : "", (neg || plus || space) ? 1 : 0);
            size_t signlen = tb.len;
            mpq_t q;
            mpz_t z, h;
            tpl_rat_get(q, arg);
            mpz_inits(z, h, NULL);
            mpz_abs(z, mpq_numref(q));
            mpz_ui_pow_ui(h, 10, (unsigned long)p);
            mpz_mul(z, z, h);
            mpz_fdiv_q_2exp(h, mpq_denref(q), 1);
            mpz_add(z, z, h);
            mpz_fdiv_q(z, z, mpq_denref(q));
            mpq_clear(q);
            /* (its size is bounded: a Rational within TPL_BIG_MAX_BITS, times 10**prec) */
            size_t cap = mpz_sizeinbase(z, 10) + 2;
            char *dg = malloc(cap);
            if (!dg) { mpz_clears(z, h, NULL); return OOM(); }
            mpz_get_str(dg, 10, z);
            mpz_clears(z, h, NULL);
            size_t nd = strlen(dg);
            if (nd <= (size_t)p) {   /* integer part 0 */
                tpl_sb_putc(&tb, '0');
                if (p > 0) tpl_sb_putc(&tb, '.');
                tpl_sb_put_fill(&tb, '0', (size_t)p - nd);
                tpl_sb_put(&tb, dg, nd);
            } else {
                tpl_sb_put(&tb, dg, nd - (size_t)p);
                if (p > 0) {
                    tpl_sb_putc(&tb, '.');
                    tpl_sb_put(&tb, dg + nd - (size_t)p, (size_t)p);
                }
            }
            free(dg);
            if (tb.failed) return OOM();
            pct_pad(b, tb.p, tb.len, (int64_t)tb.len, width, left, zero && !left, signlen);
            break;
        }
        if (rb && conv == 'f' && (arg.type == TPL_T_INT || arg.type == TPL_T_BIGINT)) {
            /* Ruby's %f of an Integer is exact (10**25 is not a double): its digits, then the precision's
             * zeros after the point ('#' adds no point) */
            int64_t p = prec < 0 ? 6 : prec;
            if (p > TPL_MAX_FLOAT_PREC)
                return tpl_vm_error(vm, TPL_ERR_LIMIT, "precision too large (tpl formats at most %d digits)",
                                    TPL_MAX_FLOAT_PREC);
            bool neg = arg.type == TPL_T_INT ? arg.u.i < 0 : arg.u.s[0] == '-';
            tpl_sb_put(&tb, neg ? "-" : plus ? "+" : space ? " " : "", (neg || plus || space) ? 1 : 0);
            size_t signlen = tb.len;
            if (arg.type == TPL_T_INT) {
                uint64_t mag = neg ? 0 - (uint64_t)arg.u.i : (uint64_t)arg.u.i;
                tpl_sb_printf(&tb, "%llu", (unsigned long long)mag);
            } else {
                mpz_t z;
                tpl_big_get(z, arg);
                mpz_abs(z, z);
                size_t cap = mpz_sizeinbase(z, 10) + 2;
                if (!tpl_sb_reserve(&tb, cap)) { mpz_clear(z); return OOM(); }
                mpz_get_str(tb.p + tb.len, 10, z);
                tb.len += strlen(tb.p + tb.len);
                mpz_clear(z);
            }
            if (p > 0) {
                tpl_sb_putc(&tb, '.');
                tpl_sb_put_fill(&tb, '0', p);
            }
            if (tb.failed) return OOM();
            pct_pad(b, tb.p, tb.len, (int64_t)tb.len, width, left, zero && !left, signlen);
            break;
        }
        if (rb && arg.type != TPL_T_FLOAT && arg.type != TPL_T_INT) { /* Ruby's Float(): "1.5" */
            tpl_value cv[2] = { arg, tpl_v_unset() };
            if (r_k_Float(vm, cv, &arg) < 0) return -1;
        }
        if (arg.type == TPL_T_HOST && (tpl_hobj_numeric(arg) & TPL_HOST_NUMBER)) { /* Python: float(x) of a Decimal */
            tpl_value n;
            int h = tpl_hobj_number(vm, arg, true, &n);
            if (h < 0) return -1;
            if (h == 0) arg = n;
        }
        if (arg.type == TPL_T_FLOAT) d = arg.u.f;
        else if (arg.type == TPL_T_INT || arg.type == TPL_T_BOOL) d = (double)arg.u.i;
        else if (arg.type == TPL_T_BIGINT) {
            if (!tpl_big_to_double(arg, &d))
                return tpl_vm_fail(vm, TPL_EK_OVERFLOW, "int too large to convert to float");
        } else
            return tpl_vm_error(vm, TPL_ERR_TYPE, "must be real number, not %s", tpl_type_name(vm, arg));
        bool neg = signbit(d) && !isnan(d);
        tpl_sb_put(&tb, neg ? "-" : plus ? "+" : space ? " " : "", (neg || plus || space) ? 1 : 0);
        size_t signlen = tb.len;
        double ad = fabs(d);
        if (rb && (isnan(ad) || isinf(ad))) {
            /* sprintf.c: "Inf" / "NaN" in every case, NaN unsigned unless '+' or ' ', padded with spaces */
            tpl_sb_puts(&tb, isnan(ad) ? "NaN" : "Inf");
            pct_pad(b, tb.p, tb.len, (int64_t)tb.len, width, left, false, 0);
            break;
        }
        if (rb && (conv == 'a' || conv == 'A')) {
            if (prec > TPL_MAX_FLOAT_PREC)
                return tpl_vm_error(vm, TPL_ERR_LIMIT, "precision too large (tpl formats at most %d digits)",
                                    TPL_MAX_FLOAT_PREC);
            tpl_sb_puts(&tb, conv == 'a' ? "0x" : "0X");
            rb_hexfloat(&tb, ad, prec, alt, conv == 'A');
            pct_pad(b, tb.p, tb.len, (int64_t)tb.len, width, left, zero && !left, signlen + 2);
            break;
        }
        if (isnan(ad) || isinf(ad)) {
            bool up = conv == 'E' || conv == 'F' || conv == 'G';
            tpl_sb_puts(&tb, isnan(ad) ? (up ? "NAN" : "nan") : (up ? "INF" : "inf"));
        } else {
            char cf[16];
            if (prec > TPL_MAX_FLOAT_PREC)
                return tpl_vm_error(vm, TPL_ERR_LIMIT, "precision too large (tpl formats at most %d digits)",
                                    TPL_MAX_FLOAT_PREC);
            int p = prec < 0 ? 6 : (int)prec;
            char dg[24];
            int nd, decpt;
            bool fix = conv == 'f' || conv == 'F', sci = conv == 'e' || conv == 'E', zeros = false;
            if (rb && ad != 0 &&
                rb_dtoa_half(ad, fix ? 3 : 2, fix ? p : sci ? p + 1 : p, dg, &nd, &decpt, &zeros)) {
                put_digits(&tb, dg, nd, decpt, p, conv, alt, zeros);
            } else if (alt && !fix && !sci) {
                if (!tpl_fmt_alt_g(&tb, ad, p, conv)) return OOM();
            } else {
                snprintf(cf, sizeof cf, "%%%s.*%c", alt ? "#" : "", conv);
                int need = snprintf(NULL, 0, cf, p, ad);
                if (need < 0 || !tpl_sb_reserve(&tb, (size_t)need + 1))
                    return OOM();
                snprintf(tb.p + tb.len, (size_t)need + 1, cf, p, ad);
                tb.len += (size_t)need;
            }
        }
        pct_pad(b, tb.p, tb.len, (int64_t)tb.len, width, left, zero && !left, signlen);
        break;
    }
    case 'c': {
        uint32_t cp;
        if (rb && arg.type == TPL_T_STR) { /* Ruby 3.1: a String of one character */
            if (tpl_utf8_len(arg.u.s, arg.len) != 1)
                return tpl_vm_error(vm, TPL_ERR_VALUE, "%%c requires a character (ArgumentError)");
            pct_pad(b, arg.u.s, arg.len, 1, width, left, false, 0);
            break;
        }
        if (rb) { /* NUM2INT */
            int64_t c;
            if (rb_num2int(vm, arg, &c) < 0) return -1;
            arg = tpl_v_int(c);
        }
        if (rb && (arg.u.i == -1 || arg.u.i == -2 || (arg.u.i >= 0xD800 && arg.u.i <= 0xDFFF)))
            /* Ruby writes bytes that are no UTF-8 ("\xFF" for -1, a surrogate's three): tpl's strings
             * are UTF-8 text */
            return tpl_vm_error(vm, TPL_ERR_VALUE, "unsupported Ruby construct: format's %%c of %lld (not a UTF-8 "
                                "character)", (long long)arg.u.i);
        if (rb && (arg.u.i < 0 || arg.u.i > 0x10FFFF))
            return tpl_vm_error(vm, TPL_ERR_VALUE, "invalid character (ArgumentError)");
        if (arg.type == TPL_T_INT || arg.type == TPL_T_BOOL) {
            if (arg.u.i < 0 || arg.u.i > 0x10FFFF)
                return tpl_vm_error(vm, TPL_ERR_VALUE, "%%c arg not in range(0x110000)");
            cp = (uint32_t)arg.u.i;   /* (Python's lone surrogate is the shared tpl_sb_put_cp's) */
        } else if (arg.type == TPL_T_STR && tpl_utf8_len(arg.u.s, arg.len) == 1) {
            size_t k = 0;
            cp = tpl_utf8_next(arg.u.s, arg.len, &k);
        } else {
            return tpl_vm_error(vm, TPL_ERR_TYPE, "%%c requires int or char");
        }
        if (tpl_vm_put_cp(vm, &tb, cp) < 0)
            return -1;
        pct_pad(b, tb.p, tb.len, 1, width, left, false, 0);
        break;
    }
    default:
    unsupported:
        if (rb)
            return tpl_vm_error(vm, TPL_ERR_VALUE, "malformed format string - %%%c (ArgumentError)", conv);
        if ((unsigned char)conv < 0x80)
            return tpl_vm_error(vm, TPL_ERR_VALUE, "unsupported format character '%c' (0x%x) at index %zu",
                                conv, (unsigned)conv, idx);
        return tpl_vm_error(vm, TPL_ERR_VALUE, "unsupported format character at index %zu", idx);
    }
    return 0;
}

static int pct_convert_limited(tpl_vm *vm, tpl_sb *b, const pct_spec *sp, tpl_value arg, bool rb, bool safe,
                               size_t idx);

/* Ruby's format / String#% (sprintf.c's rb_str_format): a conversion's flags, width (digits or
 * `*`), precision and one `<name>` / `{name}` reference come in any order (`%-10<a>s`, `%<n>05.1f`,
 * `%-8{a}|`), checked as Ruby checks them; `%{name}` is the value's to_s with the flags, width and
 * precision before it. Arguments are numbered (unnumbered and named ones do not mix); extra ones
 * are ignored. args is the argument list (a tuple) or the one argument. */
static int rb_str_mod(tpl_vm *vm, tpl_value fmt, tpl_value args, tpl_value *out)
{
#define RB_ARG_ERR(...) return tpl_vm_error(vm, TPL_ERR_VALUE, __VA_ARGS__)
    bool tuple = args.type == TPL_T_LIST && (args.flags & TPL_F_TUPLE);
    const tpl_value *argv = tuple ? args.u.list->items : &args;
    int64_t argc = tuple ? (int64_t)args.u.list->len : 1, nextarg = 0, posarg = 0;
    const char *s = fmt.u.s;
    size_t n = fmt.len, i = 0;
    tpl_sb b;
    tpl_sb_init(&b, AR(vm));
    while (i < n) {
        const char *pct = memchr(s + i, '%', n - i);
        if (!pct) {
            tpl_sb_put(&b, s + i, n - i);
            break;
        }
        size_t at = (size_t)(pct - s);
        tpl_sb_put(&b, s + i, at - i);
        if (at + 1 == n)
            RB_ARG_ERR("incomplete format specifier; use %%%% (double %%) instead (ArgumentError)");
        i = at + 1;
        pct_spec sp = { false, false, false, false, false, -1, -1, 0 };
        bool fwidth = false, fprec = false, flags = false, named = false, numbered = false;
        tpl_value arg = tpl_v_unset();
        const char *name = NULL;
        int namelen = 0;
        while (!sp.conv) {
            char c = i < n ? s[i] : '\0';
            switch (c) {
            case ' ': case '#': case '+': case '-': case '0':
                if (fwidth) RB_ARG_ERR("flag after width (ArgumentError)");
                if (fprec) RB_ARG_ERR("flag after precision (ArgumentError)");
                if (c == ' ') sp.space = true;
                else if (c == '#') sp.alt = true;
                else if (c == '+') sp.plus = true;
                else if (c == '-') sp.left = true;
                else sp.zero = true;
                flags = true;
                i++;
                break;
            case '1': case '2': case '3': case '4': case '5': case '6': case '7': case '8': case '9': {
                int64_t v = 0;
                while (i < n && s[i] >= '0' && s[i] <= '9') {
                    v = v * 10 + (s[i++] - '0');
                    if (v > INT_MAX) RB_ARG_ERR("width too big (ArgumentError)");   /* sprintf.c's GETNUM */
                }
                if (i >= n) RB_ARG_ERR("malformed format string - %%*[0-9] (ArgumentError)");
                if (s[i] == '$') {   /* %N$: the Nth argument (sprintf.c's GETPOSARG) */
                    if (numbered) RB_ARG_ERR("value given twice - %lld$ (ArgumentError)", (long long)v);
                    if (posarg > 0) RB_ARG_ERR("numbered(%lld) after unnumbered(%lld) (ArgumentError)", (long long)v, (long long)posarg);
                    if (posarg == -2) RB_ARG_ERR("numbered(%lld) after named (ArgumentError)", (long long)v);
                    if (v > argc) RB_ARG_ERR("too few arguments (ArgumentError)");
                    posarg = -1;
                    arg = argv[v - 1];
                    numbered = true;
                    i++;
                    break;
                }
                if (fwidth) RB_ARG_ERR("width given twice (ArgumentError)");
                if (fprec) RB_ARG_ERR("width after precision (ArgumentError)");
                sp.width = v;
                fwidth = true;
                break;
            }
            case '<': case '{': {
                char close = c == '<' ? '>' : '}';
                size_t ks = i;
                while (i < n && s[i] != close) i++;
                if (i >= n) RB_ARG_ERR("malformed name - unmatched parenthesis (ArgumentError)");
                if (named)
                    RB_ARG_ERR("named%.*s after <%.*s> (ArgumentError)", (int)(i + 1 - ks), s + ks, namelen, name);
                if (posarg > 0)
                    RB_ARG_ERR("named%.*s after unnumbered(%lld) (ArgumentError)", (int)(i + 1 - ks), s + ks,
                               (long long)posarg);
                if (posarg == -1)
                    RB_ARG_ERR("named%.*s after numbered (ArgumentError)", (int)(i + 1 - ks), s + ks);
                posarg = -2;
                if (argc != 1 || argv[0].type != TPL_T_MAP) RB_ARG_ERR("one hash required (ArgumentError)");
                name = s + ks + 1;
                namelen = (int)(i - ks - 1);
                tpl_value key = tpl_v_str(name, (size_t)namelen);
                key.flags = TPL_F_SYMBOL;   /* (sprintf.c looks the name up as a Symbol, never as a String, also in
                                             * a Hash of the render state, whose keys are Strings) */
                const tpl_map *hm = argv[0].u.map;
                tpl_value *v = hm->eql ? tpl_map_get(hm, key) : tpl_map_probe_rb(hm, name, (size_t)namelen, tpl_hash_str(name, (size_t)namelen), TPL_F_SYMBOL);
                if (v) arg = *v;
                else if (argv[0].u.map->rb_default) {
                    /* a Hash with a default (Hash.new("x"), Hash.new { |h, k| ... }): sprintf.c's
                     * rb_hash_default_value; a nil default is the KeyError still */
                    if (tpl_stdlib.rb_getitem(vm, argv[0], key, &arg) < 0) return -1;
                }
                if (!v && (arg.type == TPL_T_UNSET || arg.type == TPL_T_NONE))
                    return tpl_vm_error(vm, TPL_ERR_VALUE, "key%.*s not found (KeyError)", (int)(i + 1 - ks), s + ks);
                named = true;
                i++;
                if (close == '}') sp.conv = 's';   /* %{name}: the value's to_s */
                break;
            }
            case '*': case '.': {
                bool star_prec = c == '.';
                if (star_prec) {
                    if (fprec) RB_ARG_ERR("precision given twice (ArgumentError)");
                    fprec = true;
                    sp.prec = 0;
                    i++;
                    if (i >= n || s[i] != '*') {
                        while (i < n && s[i] >= '0' && s[i] <= '9') {
                            sp.prec = sp.prec * 10 + (s[i++] - '0');
                            if (sp.prec > INT_MAX) RB_ARG_ERR("precision too big (ArgumentError)");
                        }
                        if (i >= n) RB_ARG_ERR("malformed format string - %%.[0-9] (ArgumentError)");
                        break;
                    }
                } else {
                    if (fwidth) RB_ARG_ERR("width given twice (ArgumentError)");
                    if (fprec) RB_ARG_ERR("width after precision (ArgumentError)");
                    fwidth = true;
                }
                i++;   /* the '*': the next argument, an Integer (a Float truncated, as NUM2INT) */
                tpl_value wv;
                size_t t = i;
                int64_t pn = 0;
                while (t < n && s[t] >= '0' && s[t] <= '9') {
                    pn = pn * 10 + (s[t++] - '0');
                    if (pn > INT_MAX) RB_ARG_ERR("%s too big (ArgumentError)", star_prec ? "prec" : "width");
                }
                if (t > i && t < n && s[t] == '$') {   /* *N$: the Nth argument (GETASTER's GETPOSARG) */
                    if (posarg > 0) RB_ARG_ERR("numbered(%lld) after unnumbered(%lld) (ArgumentError)", (long long)pn, (long long)posarg);
                    if (posarg == -2) RB_ARG_ERR("numbered(%lld) after named (ArgumentError)", (long long)pn);
                    if (pn < 1) RB_ARG_ERR("invalid index - %lld$ (ArgumentError)", (long long)pn);
                    if (pn > argc) RB_ARG_ERR("too few arguments (ArgumentError)");
                    posarg = -1;
                    wv = argv[pn - 1];
                    i = t + 1;
                } else {
                    if (posarg == -1) RB_ARG_ERR("unnumbered(%lld) mixed with numbered (ArgumentError)", (long long)nextarg + 1);
                    if (posarg == -2) RB_ARG_ERR("unnumbered(%lld) mixed with named (ArgumentError)", (long long)nextarg + 1);
                    if (nextarg >= argc) RB_ARG_ERR("too few arguments (ArgumentError)");
                    posarg = ++nextarg;
                    wv = argv[nextarg - 1];
                }
                int64_t v;
                if (rb_num2int(vm, wv, &v) < 0) return -1;   /* NUM2INT: within int */
                if (!star_prec && v == INT_MIN) RB_ARG_ERR("width too big (ArgumentError)");   /* -INT_MIN */
                if (star_prec) sp.prec = v < 0 ? -1 : v;   /* a negative precision is none */
                else if (v < 0) { sp.left = true; sp.width = -v; }
                else sp.width = v;
                break;
            }
            case '\n': case '\0': case '%':
                if (flags || fwidth || fprec || named) RB_ARG_ERR("invalid format character - %% (ArgumentError)");
                tpl_sb_putc(&b, '%');
                if (c == '%') i++;
                sp.conv = '%';
                break;
            case 'c': case 's': case 'p': case 'd': case 'i': case 'u': case 'o': case 'x': case 'X': case 'b':
            case 'B': case 'f': case 'e': case 'E': case 'g': case 'G': case 'a': case 'A':
                sp.conv = c == 'p' ? 'r' : c;
                i++;
                break;
            default:
                if (c >= 0x20 && c < 0x7f) RB_ARG_ERR("malformed format string - %%%c (ArgumentError)", c);
                RB_ARG_ERR("malformed format string (ArgumentError)");
            }
        }
        if (sp.conv == '%') continue;
        if (!named && !numbered) {
            if (posarg == -1) RB_ARG_ERR("unnumbered(%lld) mixed with numbered (ArgumentError)", (long long)nextarg + 1);
            if (posarg == -2) RB_ARG_ERR("unnumbered(%lld) mixed with named (ArgumentError)", (long long)nextarg + 1);
            if (nextarg >= argc) RB_ARG_ERR("too few arguments (ArgumentError)");
            posarg = ++nextarg;
            arg = argv[nextarg - 1];
        }
        if (pct_convert_limited(vm, &b, &sp, arg, true, false, i - 1) < 0)
            return -1;
    }
    if (b.failed)
        return tpl_vm_sb_error(vm, &b, "while getting the repr of an object");
    *out = tpl_sb_value(&b);
    return 0;
#undef RB_ARG_ERR
}

/* pct_convert with a width or an integer's precision past the output limit (Python and Ruby pad to
 * it, or fail with MemoryError; Ruby's widths go up to INT_MAX): converted without it, so the
 * engine's errors come first, then the located output-limit error (tpl said "width too big" past
 * 10^8, which Python says past 2^63 - 1 and Ruby past INT_MAX). A string's precision past it only
 * truncates: none. Ruby's float precision is tpl's own limit (pct_convert's "precision too large"). */
static int pct_convert_limited(tpl_vm *vm, tpl_sb *b, const pct_spec *sp, tpl_value arg, bool rb, bool safe,
                               size_t idx)
{
    uint64_t lim = tpl_vm_max_output(vm);
    bool str = rb ? sp->conv == 's' || sp->conv == 'r' || sp->conv == 'c' : sp->conv == 's' || sp->conv == 'r' || sp->conv == 'a';
    bool rb_float = rb && strchr("feEgGaA", sp->conv) != NULL;
    bool wide = sp->width > 0 && (uint64_t)sp->width > lim;
    bool deep = sp->prec > 0 && (uint64_t)sp->prec > lim && !rb_float;
    if (!wide && !deep)
        return pct_convert(vm, b, sp, arg, rb, safe, idx);
    pct_spec s2 = *sp;
    if (wide) s2.width = -1;
    if (deep) s2.prec = str ? -1 : 0;
    size_t len0 = b->len;
    if (pct_convert(vm, b, &s2, arg, rb, safe, idx) < 0)
        return -1;
    if (!wide && str)
        return 0;
    b->len = len0;
    return tpl_vm_limit(vm, TPL_EK_OUTPUT_LIMIT, lim);
}

int tpl_str_mod(tpl_vm *vm, tpl_value fmt, tpl_value args, tpl_value *out)
{
    if (fmt.type != TPL_T_STR)
        return tpl_vm_error(vm, TPL_ERR_TYPE, "format string must be str");
    if (tpl_vm_syntax(vm) == TPL_SYNTAX_ERB)
        return rb_str_mod(vm, fmt, args, out);
    bool safe = (fmt.flags & TPL_F_SAFE) != 0;
    bool tuple = args.type == TPL_T_LIST && (args.flags & TPL_F_TUPLE);
    pct_args av = { NULL, args, -1, -2 };
    if (tuple) {
        av.items = args.u.list->items;
        av.len = args.u.list->len;
        av.idx = 0;
    }
    /* Python treats any non-tuple, non-str object with __getitem__ as a mapping for %(key)s, and
     * then does not count it as an argument: dicts, lists, ranges, a types.GenericAlias (dict['a'])
     * and Jinja2's Undefined (whose __getitem__ raises only when called: "abc" % missing is "abc"),
     * not dict views or iterators ("abc" % d.items() is "not all arguments converted"), nor a
     * namespace(), cycler() (a namespace here), joiner, loop, macro or class. */
    tpl_vtype vt = tpl_value_vtype(args, false);
    bool mapping = !tuple && (vt == TPL_VT_DICT || vt == TPL_VT_LIST || vt == TPL_VT_RANGE ||
                              vt == TPL_VT_UNDEFINED || vt == TPL_VT_GENERIC_ALIAS);
    const char *s = fmt.u.s;
    size_t n = fmt.len, i = 0;
    tpl_sb b;
    tpl_sb_init(&b, AR(vm));
    while (i < n) {
        const char *pct = memchr(s + i, '%', n - i);
        if (!pct) {
            tpl_sb_put(&b, s + i, n - i);
            break;
        }
        size_t at = (size_t)(pct - s);
        tpl_sb_put(&b, s + i, at - i);
        i = at + 1;
        if (i >= n)
            return tpl_vm_error(vm, TPL_ERR_VALUE, "incomplete format");
        tpl_value arg = tpl_v_unset();
        if (s[i] == '(') {
            if (!mapping)
                return tpl_vm_error(vm, TPL_ERR_TYPE, "format requires a mapping");
            int depth = 1;
            size_t ks = ++i;
            while (i < n && depth > 0) {
                if (s[i] == '(') depth++;
                else if (s[i] == ')') depth--;
                i++;
            }
            if (depth > 0)
                return tpl_vm_error(vm, TPL_ERR_VALUE, "incomplete format key");
            tpl_value key = tpl_v_str(s + ks, i - 1 - ks);
            if (args.type == TPL_T_UNDEF) /* Undefined.__getitem__ */
                return tpl_undefined_error(vm, args);
            if (args.type == TPL_T_LIST)
                return tpl_vm_error(vm, TPL_ERR_TYPE, "%s indices must be integers or slices, not str",
                                    vt == TPL_VT_RANGE ? "range" : "list");
            if (vt == TPL_VT_GENERIC_ALIAS) { /* types.GenericAlias.__getitem__ */
                tpl_sb rb;
                tpl_sb_init(&rb, AR(vm));
                tpl_py_repr(&rb, args);
                if (rb.failed)
                    return tpl_vm_sb_error(vm, &rb, "while getting the repr of an object");
                return tpl_vm_error(vm, TPL_ERR_TYPE, "%.*s is not a generic class", (int)rb.len, rb.p);
            }
            tpl_value *v = tpl_map_get(args.u.map, key);
            if (!v)
                return tpl_vm_fail(vm, TPL_EK_KEY, "'%.*s'", (int)key.len, key.u.s);
            av = (pct_args){ NULL, *v, -1, -2 }; /* the value is now the one argument */
        }
        bool left = false, plus = false, space = false, alt = false, zero = false;
        for (; i < n; i++) {
            char c = s[i];
            if (c == '-') left = true;
            else if (c == '+') plus = true;
            else if (c == ' ') space = true;
            else if (c == '#') alt = true;
            else if (c == '0') zero = true;
            else break;
        }
        int64_t width = -1, prec = -1;
        if (i < n && s[i] == '*') {
            i++;
            if (star_arg(vm, &av, &width, safe) < 0)
                return -1;
            if (width < 0) { left = true; width = width == INT64_MIN ? INT64_MAX : -width; }
        } else {
            while (i < n && s[i] >= '0' && s[i] <= '9') {
                int d = s[i++] - '0';
                if (width > (INT64_MAX - d) / 10) /* Python's limit: PY_SSIZE_T_MAX */
                    return tpl_vm_error(vm, TPL_ERR_VALUE, "width too big");
                width = (width < 0 ? 0 : width) * 10 + d;
            }
        }
        if (i < n && s[i] == '.') {
            i++;
            prec = 0;
            if (i < n && s[i] == '*') {
                i++;
                if (star_arg(vm, &av, &prec, safe) < 0)
                    return -1;
                if (prec < 0) prec = 0;
            } else {
                while (i < n && s[i] >= '0' && s[i] <= '9') {
                    int d = s[i++] - '0';
                    if (prec > (INT64_MAX - d) / 10)
                        return tpl_vm_error(vm, TPL_ERR_VALUE, "precision too big");
                    prec = prec * 10 + d;
                }
            }
        }
        if (i < n && (s[i] == 'h' || s[i] == 'l' || s[i] == 'L')) {
            i++; /* Python skips one */
        }
        if (i >= n)
            return tpl_vm_error(vm, TPL_ERR_VALUE, "incomplete format");
        char conv = s[i++];
        if (conv == '%' && i - 1 == at + 1) { /* "%%"; a '%' after flags, a width or a key is a conversion */
            tpl_sb_putc(&b, '%');
            continue;
        }
        if (next_arg(vm, &av, &arg) < 0)
            return -1;
        /* (StrictUndefined: str() raises, repr() is Undefined) */
        if (arg.type == TPL_T_UNDEF && ((tpl_vm_strict_undef(vm, arg) && conv == 's') || (conv != 's' && conv != 'r' && conv != 'a')))
            return tpl_undefined_error(vm, arg);
        pct_spec sp = { left, plus, space, alt, zero, width, prec, conv };
        if (pct_convert_limited(vm, &b, &sp, arg, false, safe, i - 1) < 0)
            return -1;
    }
    if (av.idx < av.len && !mapping)
        return tpl_vm_error(vm, TPL_ERR_TYPE, "not all arguments converted during string formatting");
    if (b.failed)
        return tpl_vm_sb_error(vm, &b, "while getting the repr of an object");
    *out = tpl_sb_value(&b);
    if (safe)
        out->flags = TPL_F_SAFE;
    return 0;
}
