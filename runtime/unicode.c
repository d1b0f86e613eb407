/* Unicode helpers with CPython 3.11 semantics: UTF-8 decoding, str.isspace, the strip family,
 * full case mapping (upper/lower/title/capitalize) and NFC.
 *
 * Simple case mappings and general categories come from libutf8proc. CPython's *full* mappings
 * (SpecialCasing.txt, unconditional entries) and its "Cased" property are not in utf8proc, so
 * the two small tables below were generated with CPython 3.11 (Unicode 14) itself: every code
 * point where str.upper/str.title differs from utf8proc's simple mapping, and every code point
 * Python treats as cased (title-case context) whose category is not Lu/Ll/Lt. */
#include "vm.h"

#include <stdlib.h>
#include <string.h>
#include <stdio.h>
#include <utf8proc.h>

/* A full case mapping of one code point (SpecialCasing.txt). */
typedef struct special_case {
    uint32_t cp, title[3], upper[3];
} special_case;

/* NEW_IN_14, NEW_IN_15, OTHER_CASED and SPECIAL, generated at build time from Debian's
 * unicode-data by tools/gen_unicode_tables.py. */
#include "unicode_tables.h"

/* ------------------------------------------------------------------ UTF-8 */

/* Strict UTF-8 (no overlongs, surrogates or code points past U+10FFFF); anything else decodes
 * as U+FFFD consuming exactly one byte, like Python's errors="replace" per byte. */
uint32_t tpl_utf8_next(const char *s, size_t n, size_t *i)
{
    if (*i >= n)
        return 0;
    const unsigned char *p = (const unsigned char *)s + *i;
    size_t left = n - *i;
    uint32_t c = p[0];
    if (c < 0x80) {
        *i += 1;
        return c;
    }
    if (c >= 0xC2 && c < 0xE0) {
        if (left >= 2 && (p[1] & 0xC0) == 0x80) {
            *i += 2;
            return ((c & 0x1F) << 6) | (p[1] & 0x3F);
        }
    } else if (c >= 0xE0 && c < 0xF0) {
        if (left >= 3 && (p[1] & 0xC0) == 0x80 && (p[2] & 0xC0) == 0x80 &&
            !(c == 0xE0 && p[1] < 0xA0) && !(c == 0xED && p[1] >= 0xA0)) {
            *i += 3;
            return ((c & 0x0F) << 12) | ((uint32_t)(p[1] & 0x3F) << 6) | (p[2] & 0x3F);
        }
    } else if (c >= 0xF0 && c < 0xF5) {
        if (left >= 4 && (p[1] & 0xC0) == 0x80 && (p[2] & 0xC0) == 0x80 &&
            (p[3] & 0xC0) == 0x80 && !(c == 0xF0 && p[1] < 0x90) && !(c == 0xF4 && p[1] >= 0x90)) {
            *i += 4;
            return ((c & 0x07) << 18) | ((uint32_t)(p[1] & 0x3F) << 12) |
                   ((uint32_t)(p[2] & 0x3F) << 6) | (p[3] & 0x3F);
        }
    }
    *i += 1;
    return 0xFFFD;
}

/* Decodes the code point that ends at s[*end] (exclusive), not looking before `start`; moves
 * *end back to its first byte. Agrees with forward decoding on where code points begin. */
static uint32_t utf8_prev(const char *s, size_t start, size_t *end)
{
    size_t e = *end, j = e - 1;
    if ((unsigned char)s[j] < 0x80) {
        *end = j;
        return (unsigned char)s[j];
    }
    for (int k = 0; k < 3 && j > start && ((unsigned char)s[j] & 0xC0) == 0x80; k++)
        j--;
    size_t t = j;
    uint32_t cp = tpl_utf8_next(s, e, &t);
    if (t == e) {
        *end = j;
        return cp;
    }
    *end = e - 1;   /* a stray byte: one U+FFFD */
    return 0xFFFD;
}

/* Number of code points as tpl_utf8_next counts them. */
size_t tpl_utf8_len(const char *s, size_t n)
{
    size_t count = 0, i = 0;
    while (i < n) {
        uint64_t w;
        if (n - i >= 8 && (memcpy(&w, s + i, 8), (w & 0x8080808080808080u) == 0)) {
            i += 8; /* eight ASCII bytes: eight code points */
            count += 8;
            continue;
        }
        if ((unsigned char)s[i] < 0x80)
            i++;
        else
            tpl_utf8_next(s, n, &i);
        count++;
    }
    return count;
}

size_t tpl_utf8_offset(const char *s, size_t n, size_t cp)
{
    size_t i = 0;
    while (cp-- > 0 && i < n) {
        if ((unsigned char)s[i] < 0x80)
            i++;
        else
            tpl_utf8_next(s, n, &i);
    }
    return i;
}

/* ------------------------------------------------------------------ Unicode versions */

/* Code points first assigned in Unicode 14.0 and 15.0 (DerivedAge.txt). utf8proc 2.8 has
 * Unicode 15 data, while CPython 3.11 stops at 14.0 and Ruby 3.1 at 13.0: for them these code
 * points are unassigned (not printable, not cased, not case-ignorable). */

static bool in_ranges(const uint32_t (*r)[2], size_t n, uint32_t c)
{
    size_t lo = 0, hi = n;
    while (lo < hi) {
        size_t mid = (lo + hi) / 2;
        if (c < r[mid][0])
            hi = mid;
        else if (c > r[mid][1])
            lo = mid + 1;
        else
            return true;
    }
    return false;
}

unsigned tpl_unicode_age_after13(uint32_t cp)
{
    if (cp < 0x61D)
        return 0;
    if (in_ranges(NEW_IN_15, sizeof NEW_IN_15 / sizeof NEW_IN_15[0], cp))
        return 15;
    return in_ranges(NEW_IN_14, sizeof NEW_IN_14 / sizeof NEW_IN_14[0], cp) ? 14 : 0;
}

/* ------------------------------------------------------------------ properties */

/* Python str.isspace: bidirectional class WS, B or S, or category Zs. */
bool tpl_py_isspace(uint32_t cp)
{
    if (cp < 0x80)
        return (cp >= 0x09 && cp <= 0x0D) || (cp >= 0x1C && cp <= 0x20);
    switch (cp) {
    case 0x85: case 0xA0: case 0x1680: case 0x2028: case 0x2029: case 0x202F: case 0x205F:
    case 0x3000:
        return true;
    default:
        return cp >= 0x2000 && cp <= 0x200A;
    }
}

/* CPython Py_UNICODE_ISPRINTABLE: not Cc, Cf, Cs, Co, Cn, Zl, Zp, or Zs other than ' '. */
bool tpl_py_isprintable(uint32_t c)
{
    if (c < 0x80)
        return c >= 0x20 && c < 0x7F;
    if (tpl_unicode_age_after13(c) == 15)   /* unassigned in CPython 3.11's Unicode 14 */
        return false;
    switch (utf8proc_category((utf8proc_int32_t)c)) {
    case UTF8PROC_CATEGORY_CC: case UTF8PROC_CATEGORY_CF: case UTF8PROC_CATEGORY_CS:
    case UTF8PROC_CATEGORY_CO: case UTF8PROC_CATEGORY_CN: case UTF8PROC_CATEGORY_ZL:
    case UTF8PROC_CATEGORY_ZP: case UTF8PROC_CATEGORY_ZS:
        return false;
    default:
        return true;
    }
}

int tpl_py_escape_cp(char buf[11], uint32_t cp)
{
    if (cp <= 0xFF)
        return snprintf(buf, 11, "\\x%02x", (unsigned)cp);
    if (cp <= 0xFFFF)
        return snprintf(buf, 11, "\\u%04x", (unsigned)cp);
    return snprintf(buf, 11, "\\U%08x", (unsigned)cp);
}

/* Identifier classes of a non-ASCII code point, from its general category and PropList.txt's
 * Other_ID_Start / Other_ID_Continue: 1 XID_Start, 2 XID_Continue only, 3 in Python's \w only
 * (No: '²'), 0 none. (The few NFKC-unstable exclusions of XID_* are not modelled.) */
static int ident_class(uint32_t c)
{
    if (tpl_unicode_age_after13(c) == 15)
        return 0;
    switch (c) {
    case 0x1885: case 0x1886: case 0x2118: case 0x212E: case 0x309B: case 0x309C:
        return 1;
    case 0xB7: case 0x387: case 0x1369: case 0x136A: case 0x136B: case 0x136C: case 0x136D:
    case 0x136E: case 0x136F: case 0x1370: case 0x1371: case 0x19DA:
        return 2;
    default:
        break;
    }
    switch (utf8proc_category((utf8proc_int32_t)c)) {
    case UTF8PROC_CATEGORY_LU: case UTF8PROC_CATEGORY_LL: case UTF8PROC_CATEGORY_LT:
    case UTF8PROC_CATEGORY_LM: case UTF8PROC_CATEGORY_LO: case UTF8PROC_CATEGORY_NL:
        return 1;
    case UTF8PROC_CATEGORY_MN: case UTF8PROC_CATEGORY_MC: case UTF8PROC_CATEGORY_ND:
    case UTF8PROC_CATEGORY_PC:
        return 2;
    case UTF8PROC_CATEGORY_NO:
        return 3;
    default:
        return 0;
    }
}

bool tpl_py_isnamechar(uint32_t c)
{
    if (c < 0x80)
        return c == '_' || (c >= '0' && c <= '9') || ((c | 0x20) >= 'a' && (c | 0x20) <= 'z');
    return ident_class(c) != 0;
}

bool tpl_py_isidentifier(const char *s, size_t n)
{
    size_t i = 0;
    for (bool first = true; i < n; first = false) {
        uint32_t c = tpl_utf8_next(s, n, &i);
        int k = c < 0x80 ? (c == '_' || ((c | 0x20) >= 'a' && (c | 0x20) <= 'z') ? 1 : (c >= '0' && c <= '9') ? 2 : 0)
                         : ident_class(c);
        if (k == 0 || k == 3 || (first && k != 1))
            return false;
    }
    return n > 0;
}

/* Python's Cased property: categories Lu, Ll, Lt plus Other_Lowercase/Other_Uppercase. */

static bool is_cased(uint32_t c)
{
    if (c < 0x80)
        return (c | 0x20) >= 'a' && (c | 0x20) <= 'z';
    if (tpl_unicode_age_after13(c) == 15)
        return false;
    switch (utf8proc_category((utf8proc_int32_t)c)) {
    case UTF8PROC_CATEGORY_LU: case UTF8PROC_CATEGORY_LL: case UTF8PROC_CATEGORY_LT:
        return true;
    default:
        break;
    }
    for (size_t k = 0; k < sizeof OTHER_CASED / sizeof OTHER_CASED[0]; k++)
        if (c >= OTHER_CASED[k][0] && c <= OTHER_CASED[k][1])
            return true;
    return false;
}

/* Case_Ignorable (Unicode 3.13): Mn, Me, Cf, Lm, Sk, or Word_Break MidLetter/MidNumLet/
 * Single_Quote. */
static bool is_case_ignorable(uint32_t c)
{
    switch (c) {
    case 0x27: case 0x2E: case 0x3A: case 0xB7: case 0x387: case 0x55F: case 0x5F4:
    case 0x2018: case 0x2019: case 0x2024: case 0x2027: case 0xFE13: case 0xFE52: case 0xFE55:
    case 0xFF07: case 0xFF0E: case 0xFF1A: case 0x5E:  case 0x60:
        return true;
    default:
        break;
    }
    if (c < 0x80 || tpl_unicode_age_after13(c) == 15)
        return false;
    switch (utf8proc_category((utf8proc_int32_t)c)) {
    case UTF8PROC_CATEGORY_MN: case UTF8PROC_CATEGORY_ME: case UTF8PROC_CATEGORY_CF:
    case UTF8PROC_CATEGORY_LM: case UTF8PROC_CATEGORY_SK:
        return true;
    default:
        return false;
    }
}

/* ------------------------------------------------------------------ full case mapping */

/* CPython 3.11 full title/upper mappings that differ from the simple ones (all are the
 * unconditional SpecialCasing.txt entries; the only special lowercase, U+0130, is in code). */


static const special_case *find_special(uint32_t c)
{
    if (c < 0xDF || c > 0xFB17)
        return NULL;
    size_t lo = 0, hi = sizeof SPECIAL / sizeof SPECIAL[0];
    while (lo < hi) {
        size_t mid = (lo + hi) / 2;
        if (SPECIAL[mid].cp == c)
            return &SPECIAL[mid];
        if (SPECIAL[mid].cp < c)
            lo = mid + 1;
        else
            hi = mid;
    }
    return NULL;
}

/* Appends a 0-terminated mapping of up to three code points. */
static void put_mapping(tpl_sb *b, const uint32_t m[3])
{
    for (int k = 0; k < 3 && m[k]; k++)
        tpl_sb_put_cp(b, m[k]);
}

static void put_upper(tpl_sb *b, uint32_t c)
{
    const special_case *sc = find_special(c);
    if (sc)
        put_mapping(b, sc->upper);
    else
        tpl_sb_put_cp(b, (uint32_t)utf8proc_toupper((utf8proc_int32_t)c));
}

static void put_title(tpl_sb *b, uint32_t c)
{
    const special_case *sc = find_special(c);
    if (sc)
        put_mapping(b, sc->title);
    else
        tpl_sb_put_cp(b, (uint32_t)utf8proc_totitle((utf8proc_int32_t)c));
}

/* CPython handle_capital_sigma: Σ at [at, end) is final when preceded by a cased letter and
 * not followed by one (case-ignorable characters are skipped on both sides). */
static bool final_sigma(const char *s, size_t n, size_t at, size_t end)
{
    uint32_t c = 0;
    size_t j = at;
    bool found = false;
    while (j > 0) {
        c = utf8_prev(s, 0, &j);
        if (!is_case_ignorable(c)) {
            found = true;
            break;
        }
    }
    if (!found || !is_cased(c))
        return false;
    for (j = end; j < n;) {
        c = tpl_utf8_next(s, n, &j);
        if (!is_case_ignorable(c))
            return !is_cased(c);
    }
    return true;
}

/* CPython lower_ucs4: full lowercase of the code point at [at, end) of s, in context. */
static void put_lower(tpl_sb *b, const char *s, size_t n, size_t at, size_t end, uint32_t c)
{
    if (c == 0x3A3)
        tpl_sb_put_cp(b, final_sigma(s, n, at, end) ? 0x3C2 : 0x3C3);
    else if (c == 0x130)
        tpl_sb_put(b, "i\xCC\x87", 3);
    else
        tpl_sb_put_cp(b, (uint32_t)utf8proc_tolower((utf8proc_int32_t)c));
}

/* Length of the run of ASCII bytes at s[i..n). */
static size_t ascii_run(const char *s, size_t n, size_t i)
{
    size_t j = i;
    while (j < n && (unsigned char)s[j] < 0x80)
        j++;
    return j - i;
}

/* Decodes at s[*i]; a byte that is not valid UTF-8 is copied to b unchanged and yields false. */
static bool next_or_copy(tpl_sb *b, const char *s, size_t n, size_t *i, uint32_t *c)
{
    size_t at = *i;
    *c = tpl_utf8_next(s, n, i);
    if (*c == 0xFFFD && *i - at == 1) {
        tpl_sb_putc(b, s[at]);
        return false;
    }
    return true;
}

enum { CASE_UPPER, CASE_LOWER };

/* Shared loop of str.upper / str.lower over s[i..n) (s[0..i) is context for the final sigma);
 * ASCII runs are mapped in bulk. */
static void map_case(tpl_sb *b, const char *s, size_t n, size_t i, int mode)
{
    if (!tpl_sb_reserve(b, n - i))
        return;
    while (i < n) {
        size_t run = ascii_run(s, n, i);
        if (run) {
            if (!tpl_sb_reserve(b, run))
                return;
            char *o = b->p + b->len;
            for (size_t k = 0; k < run; k++) {
                char ch = s[i + k];
                if (mode == CASE_UPPER)
                    o[k] = ch >= 'a' && ch <= 'z' ? (char)(ch - 32) : ch;
                else
                    o[k] = ch >= 'A' && ch <= 'Z' ? (char)(ch + 32) : ch;
            }
            b->len += run;
            i += run;
            continue;
        }
        /* Latin-1 letters (U+00C0..U+00FE, C3 80..C3 BE) map by +-0x20 within the same lead
         * byte, except U+00D7/U+00F7 (the signs) and U+00DF (sharp s, 'SS'). */
        if ((unsigned char)s[i] == 0xC3 && i + 1 < n) {
            unsigned char t = (unsigned char)s[i + 1];
            bool up = mode == CASE_UPPER && t >= 0xA0 && t <= 0xBE && t != 0xB7;
            bool low = mode == CASE_LOWER && t >= 0x80 && t <= 0x9E && t != 0x97;
            if (up || low) {
                if (!tpl_sb_reserve(b, 2))
                    return;
                b->p[b->len] = (char)0xC3;
                b->p[b->len + 1] = (char)(up ? t - 0x20 : t + 0x20);
                b->len += 2;
                i += 2;
                continue;
            }
        }
        size_t at = i;
        uint32_t c;
        if (!next_or_copy(b, s, n, &i, &c))
            continue;
        if (mode == CASE_UPPER)
            put_upper(b, c);
        else
            put_lower(b, s, n, at, i, c);
    }
}

/* Python str.upper (full mapping: 'ß' -> 'SS'). */
void tpl_py_upper(tpl_sb *b, const char *s, size_t n) { map_case(b, s, n, 0, CASE_UPPER); }
void tpl_py_case_from(tpl_sb *b, const char *s, size_t n, size_t i, bool upper)
{
    map_case(b, s, n, i, upper ? CASE_UPPER : CASE_LOWER);
}

/* Python's lower() of the one code point at s[at..end), with s[0..n) as its context (the final
 * sigma rule), as CPython's swapcase applies lower_ucs4 to each uppercase character. */
void tpl_py_lower_at(tpl_sb *b, const char *s, size_t n, size_t at, size_t end)
{
    size_t i = at;
    uint32_t c;
    if (next_or_copy(b, s, end, &i, &c))
        put_lower(b, s, n, at, i, c);
}

/* Python str.lower (full mapping and the final-sigma rule). */
void tpl_py_lower(tpl_sb *b, const char *s, size_t n) { map_case(b, s, n, 0, CASE_LOWER); }

/* Python str.title: a character after a cased one is lowercased, any other is titlecased
 * (so "they're" -> "They'Re"). */
void tpl_py_title(tpl_sb *b, const char *s, size_t n)
{
    bool prev_cased = false;
    size_t i = 0;
    while (i < n) {
        unsigned char ch = (unsigned char)s[i];
        if (ch < 0x80) {
            bool cased = ((ch | 0x20) >= 'a' && (ch | 0x20) <= 'z');
            if (cased)
                ch = prev_cased ? (unsigned char)(ch | 0x20) : (unsigned char)(ch & ~0x20);
            tpl_sb_putc(b, (char)ch);
            prev_cased = cased;
            i++;
            continue;
        }
        size_t at = i;
        uint32_t c;
        if (!next_or_copy(b, s, n, &i, &c)) {
            prev_cased = false;
            continue;
        }
        if (prev_cased)
            put_lower(b, s, n, at, i, c);
        else
            put_title(b, c);
        prev_cased = is_cased(c);
    }
}

/* Python 3.8+ str.capitalize: titlecase the first character, lowercase the rest. */
void tpl_py_capitalize(tpl_sb *b, const char *s, size_t n)
{
    if (n == 0)
        return;
    size_t i = 0;
    uint32_t c;
    if (next_or_copy(b, s, n, &i, &c))
        put_title(b, c);
    map_case(b, s, n, i, CASE_LOWER);
}

/* ------------------------------------------------------------------ strip, NFC */

/* Membership in a strip set: Python whitespace, or the code points of chars (UTF-8). */
static bool in_strip_set(uint32_t c, const char *chars, size_t nchars)
{
    if (!chars)
        return tpl_py_isspace(c);
    for (size_t i = 0; i < nchars;)
        if (tpl_utf8_next(chars, nchars, &i) == c)
            return true;
    return false;
}

/* Python str.strip/lstrip/rstrip([chars]); the result shares s's bytes and keeps its flags. */
tpl_value tpl_py_strip(tpl_value s, int which, const char *chars, size_t nchars)
{
    if (s.type != TPL_T_STR || s.len == 0)
        return s;
    const char *p = s.u.s;
    size_t lo = 0, hi = s.len;
    if (!chars) {
        /* ASCII fast path for whitespace: \t\n\v\f\r, \x1c-\x1f, space */
#define ASCII_WS(b) ((b) == ' ' || ((b) >= 9 && (b) <= 13) || ((b) >= 0x1c && (b) <= 0x1f))
        if (which & 1)
            while (lo < hi && (unsigned char)p[lo] < 0x80 && ASCII_WS((unsigned char)p[lo])) lo++;
        if (which & 2)
            while (hi > lo && (unsigned char)p[hi - 1] < 0x80 && ASCII_WS((unsigned char)p[hi - 1])) hi--;
#undef ASCII_WS
        bool done_left = !(which & 1) || lo == hi || (unsigned char)p[lo] < 0x80;
        bool done_right = !(which & 2) || lo == hi || (unsigned char)p[hi - 1] < 0x80;
        if (done_left && done_right) {
            s.u.s = p + lo;
            s.len = (uint32_t)(hi - lo);
            return s;
        }
    }
    if (which & 1)
        while (lo < hi) {
            size_t j = lo;
            if (!in_strip_set(tpl_utf8_next(p, hi, &j), chars, nchars))
                break;
            lo = j;
        }
    if (which & 2)
        while (hi > lo) {
            size_t j = hi;
            if (!in_strip_set(utf8_prev(p, lo, &j), chars, nchars))
                break;
            hi = j;
        }
    s.u.s = p + lo;
    s.len = (uint32_t)(hi - lo);
    return s;
}

bool tpl_utf8_valid(const char *s, size_t n, size_t *bad)
{
    bool ascii;
    return tpl_utf8_check(s, n, bad, &ascii);
}

bool tpl_utf8_check(const char *s, size_t n, size_t *bad, bool *ascii)
{
    size_t i = 0;
    *ascii = true;
    while (i < n) {
        /* ASCII 32 bytes at a time, then eight */
        while (i + 32 <= n) {
            uint64_t w[4];
            memcpy(w, s + i, 32);
            if ((w[0] | w[1] | w[2] | w[3]) & 0x8080808080808080ull) break;
            i += 32;
        }
        while (i + 8 <= n) {
            uint64_t w;
            memcpy(&w, s + i, 8);
            if (w & 0x8080808080808080ull) break;
            i += 8;
        }
        if (i >= n) break;
        if ((unsigned char)s[i] < 0x80) { i++; continue; }
        *ascii = false;
        utf8proc_int32_t cp;
        utf8proc_ssize_t k = utf8proc_iterate((const utf8proc_uint8_t *)s + i, (utf8proc_ssize_t)(n - i), &cp);
        if (k <= 0) { *bad = i; return false; }
        i += (size_t)k;
    }
    return true;
}

/* Unicode NFC (utf8proc_map with COMPOSE|STABLE) into the arena. ASCII, invalid UTF-8 and
 * allocation failure return s unchanged. */
tpl_value tpl_nfc(tpl_arena *a, tpl_value s)
{
    if (s.type != TPL_T_STR || ascii_run(s.u.s, s.len, 0) == s.len)
        return s;
    utf8proc_uint8_t *out = NULL;
    utf8proc_ssize_t n = utf8proc_map((const utf8proc_uint8_t *)s.u.s, (utf8proc_ssize_t)s.len,
                                      &out, UTF8PROC_STABLE | UTF8PROC_COMPOSE);
    if (n >= 0) {
        char *p = tpl_arena_strdup(a, (const char *)out, (size_t)n);
        if (p) {
            s.u.s = p;
            s.len = (uint32_t)n;
        }
    }
    free(out);
    return s;
}

/* Unicode normalization form `form` (0 NFC, 1 NFD, 2 NFKC, 3 NFKD) of the string s into the arena (as
 * String#unicode_normalize). ASCII is its own form. Returns s's value with the new bytes, or a value
 * of type TPL_T_NONE when out of memory. */
tpl_value tpl_unicode_normalize(tpl_arena *a, tpl_value s, int form)
{
    if (ascii_run(s.u.s, s.len, 0) == s.len)
        return s;
    static const int opts[4] = { UTF8PROC_STABLE | UTF8PROC_COMPOSE, UTF8PROC_STABLE | UTF8PROC_DECOMPOSE,
                                 UTF8PROC_STABLE | UTF8PROC_COMPOSE | UTF8PROC_COMPAT,
                                 UTF8PROC_STABLE | UTF8PROC_DECOMPOSE | UTF8PROC_COMPAT };
    utf8proc_uint8_t *out = NULL;
    utf8proc_ssize_t n = utf8proc_map((const utf8proc_uint8_t *)s.u.s, (utf8proc_ssize_t)s.len, &out,
                                      (utf8proc_option_t)opts[form & 3]);
    tpl_value r = tpl_v_none();
    if (n >= 0) {
        char *p = tpl_arena_strdup(a, (const char *)out, (size_t)n);
        if (p) r = tpl_v_str(p, (size_t)n);
    } else
        r = s;
    free(out);
    return r;
}

/* Python str.casefold: full case folding (CaseFolding.txt statuses C and F, as utf8proc's
 * UTF8PROC_CASEFOLD); code points CPython 3.11's Unicode 14 does not have are kept. */
void tpl_py_casefold(tpl_sb *b, const char *s, size_t n)
{
    size_t i = 0;
    while (i < n) {
        unsigned char ch = (unsigned char)s[i];
        if (ch < 0x80) {
            tpl_sb_putc(b, (char)(ch >= 'A' && ch <= 'Z' ? ch | 0x20 : ch));
            i++;
            continue;
        }
        size_t at = i;
        uint32_t c = tpl_utf8_next(s, n, &i);
        utf8proc_int32_t dst[8];
        int last = 0;
        utf8proc_ssize_t k = tpl_unicode_age_after13(c) == 15 ? -1
            : utf8proc_decompose_char((utf8proc_int32_t)c, dst, 8, UTF8PROC_CASEFOLD, &last);
        if (k <= 0 || k > 8) { tpl_sb_put(b, s + at, i - at); continue; }
        for (utf8proc_ssize_t j = 0; j < k; j++) {
            utf8proc_uint8_t u[4];
            utf8proc_ssize_t m = utf8proc_encode_char(dst[j], u);
            tpl_sb_put(b, (const char *)u, (size_t)m);
        }
    }
}
