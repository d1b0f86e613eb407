/* Python's `\N{NAME}` lookup: CPython 3.11's unicodedata name lookup (Unicode 14.0) as its
 * unicode-escape codec uses it. A name is looked up as "HANGUL SYLLABLE <jamo>" or
 * "CJK UNIFIED IDEOGRAPH-<4 or 5 upper-case hex digits>" (both case-sensitive), else in the table
 * of character names and aliases (case-insensitive, ASCII); named sequences are not names here. */
#include "vm.h"

#include <string.h>

/* NAME_DATA, NAME_INDEX, CJK_UNIFIED and the JAMO_ tables, generated at build time from Debian's
 * unicode-data by tools/gen_unicode_names.py. */
#include "unicode_names.h"

#define HANGUL_PREFIX "HANGUL SYLLABLE "
#define CJK_PREFIX "CJK UNIFIED IDEOGRAPH-"

/* The longest short name of tab that starts s (CPython's find_syllable): its index in *pos (-1
 * when none does), its length returned. */
static size_t jamo(const char *s, size_t n, const char *const *tab, size_t count, int *pos)
{
    size_t best = 0;
    *pos = -1;
    for (size_t i = 0; i < count; i++) {
        size_t l = strlen(tab[i]);
        if (*pos >= 0 && l <= best) continue;
        if (l <= n && memcmp(s, tab[i], l) == 0) {
            *pos = (int)i;
            best = l;
        }
    }
    return best;
}

static bool hangul(const char *s, size_t n, uint32_t *cp)
{
    int l, v, t;
    size_t k = jamo(s, n, JAMO_L, sizeof JAMO_L / sizeof *JAMO_L, &l);
    k += jamo(s + k, n - k, JAMO_V, sizeof JAMO_V / sizeof *JAMO_V, &v);
    k += jamo(s + k, n - k, JAMO_T, sizeof JAMO_T / sizeof *JAMO_T, &t);
    if (l < 0 || v < 0 || t < 0 || k != n) return false;
    *cp = 0xAC00 + (uint32_t)((l * 21 + v) * 28 + t);
    return true;
}

static bool cjk(const char *s, size_t n, uint32_t *cp)
{
    if (n != 4 && n != 5) return false;
    uint32_t c = 0;
    for (size_t i = 0; i < n; i++) {
        if (s[i] >= '0' && s[i] <= '9') c = c * 16 + (uint32_t)(s[i] - '0');
        else if (s[i] >= 'A' && s[i] <= 'F') c = c * 16 + (uint32_t)(s[i] - 'A' + 10);
        else return false;
    }
    for (size_t i = 0; i < sizeof CJK_UNIFIED / sizeof *CJK_UNIFIED; i++)
        if (c >= CJK_UNIFIED[i][0] && c <= CJK_UNIFIED[i][1]) {
            *cp = c;
            return true;
        }
    return false;
}

/* Compares the n bytes of key with the entry whose text is e[0..en). */
static int cmp(const char *key, size_t n, const char *e, size_t en)
{
    int r = memcmp(key, e, n < en ? n : en);
    return r ? r : (n > en) - (n < en);
}

bool tpl_unicode_lookup_name(const char *name, size_t n, uint32_t *cp)
{
    if (n >= strlen(HANGUL_PREFIX) && memcmp(name, HANGUL_PREFIX, strlen(HANGUL_PREFIX)) == 0)
        return hangul(name + strlen(HANGUL_PREFIX), n - strlen(HANGUL_PREFIX), cp);
    if (n >= strlen(CJK_PREFIX) && memcmp(name, CJK_PREFIX, strlen(CJK_PREFIX)) == 0)
        return cjk(name + strlen(CJK_PREFIX), n - strlen(CJK_PREFIX), cp);
    char key[256];
    if (n == 0 || n >= sizeof key) return false;
    for (size_t i = 0; i < n; i++) {
        unsigned char c = (unsigned char)name[i];
        if (c >= 0x80) return false;
        key[i] = (char)(c >= 'a' && c <= 'z' ? c - 32 : c);
    }
    const unsigned char *d = (const unsigned char *)NAME_DATA;
    size_t nblocks = sizeof NAME_INDEX / sizeof *NAME_INDEX, lo = 0, hi = nblocks;
    while (hi - lo > 1) { /* the last block whose first name is <= key */
        size_t mid = lo + (hi - lo) / 2;
        const unsigned char *e = d + NAME_INDEX[mid];
        if (cmp(key, n, (const char *)e + 2, e[1]) < 0) hi = mid;
        else lo = mid;
    }
    char text[256];
    size_t off = NAME_INDEX[lo], end = lo + 1 < nblocks ? NAME_INDEX[lo + 1] : sizeof NAME_DATA - 1;
    while (off < end) {
        size_t shared = d[off], len = d[off + 1];
        memcpy(text + shared, d + off + 2, len);
        const unsigned char *c = d + off + 2 + len;
        int r = cmp(key, n, text, shared + len);
        if (r == 0) {
            *cp = (uint32_t)c[0] << 16 | (uint32_t)c[1] << 8 | c[2];
            return true;
        }
        if (r < 0) return false;
        off += 2 + len + 3;
    }
    return false;
}
