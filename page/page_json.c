/* JSON text helpers of the page layer (page_json.h). */
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include "page_json.h"

typedef struct sc {
    const char *s;
    size_t n, i;
    bool bad;
} sc;

static void ws(sc *z)
{
    while (z->i < z->n && (z->s[z->i] == ' ' || z->s[z->i] == '\t' || z->s[z->i] == '\n' || z->s[z->i] == '\r')) z->i++;
}

static int hexv(char c)
{
    if (c >= '0' && c <= '9') return c - '0';
    if (c >= 'a' && c <= 'f') return c - 'a' + 10;
    if (c >= 'A' && c <= 'F') return c - 'A' + 10;
    return -1;
}

/* A string at z->i (its opening quote); *esc set when it holds an escape. */
static void string(sc *z, bool *esc)
{
    const unsigned char *s = (const unsigned char *)z->s;
    if (z->i >= z->n || s[z->i] != '"') { z->bad = true; return; }
    z->i++;
    while (z->i < z->n) {
        unsigned c = s[z->i];
        if (c == '"') { z->i++; return; }
        if (c < 0x20) break;
        if (c == '\\') {
            if (esc) *esc = true;
            if (z->i + 1 >= z->n) break;
            char e = (char)s[z->i + 1];
            if (e == 'u') {
                if (z->i + 5 >= z->n) break;
                int v = 0;
                for (int k = 2; k < 6; k++) {
                    int h = hexv((char)s[z->i + (size_t)k]);
                    if (h < 0) { z->bad = true; return; }
                    v = v * 16 + h;
                }
                if (v == 0 || (v >= 0xD800 && v <= 0xDFFF)) break; /* left to the real parser */
                z->i += 6;
                continue;
            }
            if (!strchr("\"\\/bfnrt", e) || e == 0) break;
            z->i += 2;
            continue;
        }
        if (c < 0x80) { z->i++; continue; }
        /* UTF-8 */
        size_t len;
        unsigned lo = 0x80, hi = 0xBF;
        if (c >= 0xC2 && c <= 0xDF) len = 2;
        else if (c >= 0xE0 && c <= 0xEF) { len = 3; if (c == 0xE0) lo = 0xA0; if (c == 0xED) hi = 0x9F; }
        else if (c >= 0xF0 && c <= 0xF4) { len = 4; if (c == 0xF0) lo = 0x90; if (c == 0xF4) hi = 0x8F; }
        else break;
        if (z->i + len > z->n) break;
        unsigned c1 = s[z->i + 1];
        if (c1 < lo || c1 > hi) break;
        for (size_t k = 2; k < len; k++)
            if ((s[z->i + k] & 0xC0) != 0x80) { z->bad = true; return; }
        z->i += len;
    }
    z->bad = true;
}

static bool digit(sc *z) { return z->i < z->n && z->s[z->i] >= '0' && z->s[z->i] <= '9'; }

static void number(sc *z)
{
    if (z->i < z->n && z->s[z->i] == '-') z->i++;
    size_t digits = 0, expd = 0;
    bool real = false;
    if (!digit(z)) { z->bad = true; return; }
    if (z->s[z->i] == '0') { z->i++; digits++; }
    else while (digit(z)) { z->i++; digits++; }
    if (z->i < z->n && z->s[z->i] == '.') {
        real = true;
        z->i++;
        if (!digit(z)) { z->bad = true; return; }
        while (digit(z)) { z->i++; digits++; }
    }
    if (z->i < z->n && (z->s[z->i] == 'e' || z->s[z->i] == 'E')) {
        real = true;
        z->i++;
        if (z->i < z->n && (z->s[z->i] == '+' || z->s[z->i] == '-')) z->i++;
        if (!digit(z)) { z->bad = true; return; }
        while (digit(z)) { z->i++; expd++; }
    }
    if (real ? digits > 17 || expd > 2 : digits > 18) z->bad = true; /* left to the real parser */
}

static void value(sc *z, int depth)
{
    ws(z);
    if (z->i >= z->n || depth > 64) { z->bad = true; return; }
    char c = z->s[z->i];
    if (c == '{' || c == '[') {
        char close = c == '{' ? '}' : ']';
        z->i++;
        ws(z);
        if (z->i < z->n && z->s[z->i] == close) { z->i++; return; }
        for (;;) {
            if (c == '{') {
                ws(z);
                string(z, NULL);
                ws(z);
                if (z->bad || z->i >= z->n || z->s[z->i] != ':') { z->bad = true; return; }
                z->i++;
            }
            value(z, depth + 1);
            if (z->bad) return;
            ws(z);
            if (z->i < z->n && z->s[z->i] == ',') { z->i++; continue; }
            if (z->i < z->n && z->s[z->i] == close) { z->i++; return; }
            z->bad = true;
            return;
        }
    }
    if (c == '"') { string(z, NULL); return; }
    if (c == '-' || (c >= '0' && c <= '9')) { number(z); return; }
    static const char *const lits[] = { "true", "false", "null" };
    for (int k = 0; k < 3; k++) {
        size_t l = strlen(lits[k]);
        if (z->n - z->i >= l && !memcmp(z->s + z->i, lits[k], l)) { z->i += l; return; }
    }
    z->bad = true;
}

int pj_scan_object(const char *s, size_t n, pj_entry **ents, size_t *nents, size_t *cap)
{
    sc z = { s, n, 0, false };
    *nents = 0;
    ws(&z);
    if (z.i >= n || s[z.i] != '{') return 0;
    z.i++;
    ws(&z);
    if (z.i < n && s[z.i] == '}') { z.i++; goto end; }
    for (;;) {
        ws(&z);
        bool esc = false;
        size_t k0 = z.i + 1;
        string(&z, &esc);
        if (z.bad || esc) return 0;
        size_t k1 = z.i - 1;
        ws(&z);
        if (z.i >= n || s[z.i] != ':') return 0;
        z.i++;
        ws(&z);
        size_t v0 = z.i;
        value(&z, 1);
        if (z.bad) return 0;
        if (*nents >= 512) return 0; /* the duplicate check below is quadratic */
        if (*nents + 1 > *cap) {
            size_t nc = *cap ? *cap * 2 : 16;
            pj_entry *ne = realloc(*ents, nc * sizeof *ne);
            if (!ne) return -1;
            *ents = ne;
            *cap = nc;
        }
        for (size_t j = 0; j < *nents; j++)
            if ((*ents)[j].klen == k1 - k0 && !memcmp((*ents)[j].key, s + k0, k1 - k0)) return 0;
        (*ents)[(*nents)++] = (pj_entry){ s + k0, k1 - k0, s + v0, z.i - v0 };
        ws(&z);
        if (z.i < n && s[z.i] == ',') { z.i++; continue; }
        if (z.i < n && s[z.i] == '}') { z.i++; break; }
        return 0;
    }
end:
    ws(&z);
    return z.i == n ? 1 : 0;
}

/* ------------------------------------------------------------------ page.json offsets */

/* Skips a valid JSON value starting at z->i (no recursion). */
static void skip(sc *z)
{
    ws(z);
    int depth = 0;
    do {
        if (z->i >= z->n) return;
        char c = z->s[z->i];
        if (c == '"') {
            z->i++;
            while (z->i < z->n && z->s[z->i] != '"') z->i += z->s[z->i] == '\\' ? 2 : 1;
            z->i++;
        } else if (c == '{' || c == '[') { depth++; z->i++; }
        else if (c == '}' || c == ']') { depth--; z->i++; }
        else if (depth == 0) {
            while (z->i < z->n && !strchr(",}] \t\r\n", z->s[z->i])) z->i++;
        } else z->i++;
    } while (depth > 0);
}

static bool node(sc *z, pj_node *nd, int level)
{
    ws(z);
    nd->off = z->i;
    if (z->i >= z->n) return true;
    char c = z->s[z->i];
    if ((c != '{' && c != '[') || level >= 3) { skip(z); return true; }
    z->i++;
    size_t cap = 0;
    for (;;) {
        ws(z);
        if (z->i < z->n && (z->s[z->i] == '}' || z->s[z->i] == ']')) { z->i++; return true; }
        if (z->i < z->n && z->s[z->i] == ',') { z->i++; continue; }
        if (z->i >= z->n) return true;
        if (nd->nkids + 1 > cap) {
            cap = cap ? cap * 2 : 8;
            pj_node *nk = realloc(nd->kids, cap * sizeof *nk);
            if (!nk) return false;
            nd->kids = nk;
        }
        pj_node *k = &nd->kids[nd->nkids++];
        memset(k, 0, sizeof *k);
        if (c == '{') {
            k->koff = z->i;
            size_t k0 = z->i + 1;
            z->i++;
            while (z->i < z->n && z->s[z->i] != '"') z->i += z->s[z->i] == '\\' ? 2 : 1;
            k->key = z->s + k0;
            k->klen = z->i - k0;
            z->i++;
            ws(z);
            z->i++; /* ':' */
        }
        if (!node(z, k, level + 1)) return false;
    }
}

static void free_kids(pj_node *t)
{
    for (size_t i = 0; i < t->nkids; i++) free_kids(&t->kids[i]);
    free(t->kids);
}

pj_node *pj_tree(const char *s, size_t n)
{
    pj_node *t = calloc(1, sizeof *t);
    if (!t) return NULL;
    sc z = { s, n, 0, false };
    if (!node(&z, t, 0)) { pj_tree_free(t); return NULL; }
    return t;
}

void pj_tree_free(pj_node *t)
{
    if (!t) return;
    free_kids(t);
    free(t);
}

const pj_node *pj_child(const pj_node *obj, const char *key)
{
    if (!obj) return NULL;
    size_t n = strlen(key);
    for (size_t i = 0; i < obj->nkids; i++)
        if (obj->kids[i].key && obj->kids[i].klen == n && !memcmp(obj->kids[i].key, key, n)) return &obj->kids[i];
    return NULL;
}

size_t pj_key_off(const pj_node *obj, const char *key)
{
    const pj_node *k = pj_child(obj, key);
    return k ? k->koff : obj ? obj->off : 0;
}

size_t pj_val_off(const pj_node *obj, const char *key)
{
    const pj_node *k = pj_child(obj, key);
    return k ? k->off : obj ? obj->off : 0;
}

const pj_node *pj_index(const pj_node *arr, size_t i)
{
    return arr && i < arr->nkids ? &arr->kids[i] : NULL;
}
