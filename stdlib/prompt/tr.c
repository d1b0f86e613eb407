/* Translation (tr): catalogs, language resolution, exact and pattern rows; the fmt prologue
 * (tr_keys, translated template strings) and Python's str.format field access.
 *
 * The algorithm is the conformance oracle's Translator, exactly:
 *  - language: explicit → the render's → none (the source text is returned);
 *  - per catalog in order: the catalog's main language (default "en") returns the source text;
 *    an exact row wins; else every pattern row (a key with {placeholder}s) is matched: a
 *    placeholder captures up to the first occurrence of the next literal, the last one runs to
 *    the final literal, a repeated name must capture the same text; the matching rows are
 *    ordered by (-trigram hits of the longest literal, -its length, -total literal length, key)
 *    (lengths in code points), and the best target is filled with the captures;
 *  - no catalog matched: the source text.
 *
 * Cost: a matching row's text contains every literal of the row, so the oracle's trigram hits
 * (distinct 3-code-point substrings of the longest literal found in the text) are simply the
 * number of its distinct trigrams, counted once when the catalog is added (sort + unique).
 * A lookup scans each pattern row once (prefix, suffix, then each middle literal from where
 * the last one ended) and charges the render's fuel for the rows and bytes it scans; the
 * captures go to scratch kept in the state and reused by every call. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <jansson.h>
#include "tr.h"
#include "../../runtime/host.h"
#include "../builtins.h"

/* A pattern row, split once: lits[0] name[0] lits[1] ... name[n-1] lits[n]. */
typedef struct tr_pat {
    tpl_value key, target;
    uint32_t nnames;
    tpl_value *lits;        /* nnames + 1 literal strings (braces unescaped) */
    tpl_value *names;       /* nnames placeholder names */
    uint32_t *first;        /* per placeholder: index of the first one of the same name */
    uint32_t probe;         /* index of the first longest literal (code points) */
    size_t probe_cp, total_cp;
    size_t lit_bytes;       /* total length of the literals in bytes */
    size_t hits;            /* distinct trigrams of the probe literal (its ranking hits) */
} tr_pat;

typedef struct tr_lang {
    tpl_value name;
    tpl_map *rows;
    tr_pat *pats;
    uint32_t npats;
    uint32_t max_names;     /* the most placeholders of one of pats */
} tr_lang;

typedef struct tr_catalog {
    tpl_value main_lang;
    tr_lang *langs;
    uint32_t nlangs;
} tr_catalog;

/* A catalog built row by row by a host (tpl_catalog_new): its own arena, prepared once by
 * tpl_catalog_finish, then read-only and shared by any number of render contexts. */
struct tpl_catalog {
    tpl_arena arena;
    tpl_map *root;          /* lang -> (source -> target string or list of forms) */
    tr_catalog cat;         /* set by tpl_catalog_finish */
    bool finished;
};

struct tpl_tr_state {
    tpl_arena arena;        /* the catalogs parsed from JSON (cleared with them) */
    const tr_catalog **cats;/* lookup order: in arena, or a finished tpl_catalog's (borrowed) */
    size_t ncats, capcats;
    char *lang;             /* malloc'd; NULL = none */
    size_t lang_len;
    tpl_arena key_arena;
    tpl_value *keys;
    size_t nkeys, capkeys;
    size_t *scratch;        /* captures of lookup_lang: 4 * max_names, reused by every call */
    size_t scratch_cap;
};

tpl_tr_state *tpl_tr_new(void)
{
    tpl_tr_state *t = calloc(1, sizeof *t);
    if (!t) return NULL;
    tpl_arena_init(&t->arena, 0);
    tpl_arena_init(&t->key_arena, 0);
    return t;
}

void tpl_tr_free(tpl_tr_state *t)
{
    if (!t) return;
    tpl_arena_free(&t->arena);
    tpl_arena_free(&t->key_arena);
    free(t->cats);
    free(t->lang);
    free(t->keys);
    free(t->scratch);
    free(t);
}

/* ------------------------------------------------------------------ catalogs */

/* Python's \w for one code point at s[i] (advances *i past it). */
static bool word_at(const char *s, size_t n, size_t *i)
{
    uint32_t cp = tpl_utf8_next(s, n, i);
    return tpl_uc_isword(cp);
}

/* Matches the oracle's PH regex at s[i]: 1 = "{{" or "}}" (2 bytes), 2 = "{name}" (name in
 * [*ns, *ne), total length *len), 0 = no match. */
static int ph_at(const char *s, size_t n, size_t i, size_t *ns, size_t *ne, size_t *len)
{
    if (s[i] == '{' && i + 1 < n && s[i + 1] == '{') { *len = 2; return 1; }
    if (s[i] == '}' && i + 1 < n && s[i + 1] == '}') { *len = 2; return 1; }
    if (s[i] != '{') return 0;
    size_t j = i + 1;
    while (j < n && s[j] != '}') {
        size_t k = j;
        if (!word_at(s, n, &k)) return 0;
        j = k;
    }
    if (j >= n || j == i + 1) return 0;
    *ns = i + 1;
    *ne = j;
    *len = j + 1 - i;
    return 1 + 1;
}

static int u64_cmp(const void *a, const void *b)
{
    uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
    return x < y ? -1 : x > y;
}

/* Number of distinct 3-code-point substrings of s (sort + unique; -1: out of memory). A literal
 * of up to 64 code points (nearly every pattern row's) is counted on the stack with an insertion
 * sort: a catalog of 200,000 pattern rows was 625 M instructions of malloc and qsort here. */
static long long distinct_trigrams(const char *s, size_t n, size_t ncp)
{
    if (ncp < 3) return 0;
    enum { SMALL = 64 };
    uint32_t cp_small[SMALL];
    uint64_t g_small[SMALL];
    uint32_t *cp = ncp <= SMALL ? cp_small : malloc(ncp * sizeof *cp);
    uint64_t *g = ncp <= SMALL ? g_small : malloc((ncp - 2) * sizeof *g);
    if (!cp || !g) {
        if (cp != cp_small) free(cp);
        if (g != g_small) free(g);
        return -1;
    }
    size_t k = 0;
    for (size_t i = 0; i < n && k < ncp;) cp[k++] = tpl_utf8_next(s, n, &i);
    size_t ng = k >= 3 ? k - 2 : 0;
    for (size_t i = 0; i < ng; i++)
        g[i] = (uint64_t)cp[i] << 42 | (uint64_t)cp[i + 1] << 21 | cp[i + 2];
    if (ng <= SMALL) {
        for (size_t i = 1; i < ng; i++) {
            uint64_t x = g[i];
            size_t j = i;
            for (; j > 0 && g[j - 1] > x; j--) g[j] = g[j - 1];
            g[j] = x;
        }
    } else {
        qsort(g, ng, sizeof *g, u64_cmp);
    }
    long long d = 0;
    for (size_t i = 0; i < ng; i++) d += i == 0 || g[i] != g[i - 1];
    if (cp != cp_small) free(cp);
    if (g != g_small) free(g);
    return d;
}

static bool split_key(tpl_arena *a, tr_pat *p)
{
    const char *s = p->key.u.s;
    size_t n = p->key.len;
    uint32_t count = 0;
    for (size_t i = 0; i < n;) {
        size_t ns, ne, len;
        int k = ph_at(s, n, i, &ns, &ne, &len);
        if (k == 2) count++;
        i += k ? len : 1;
    }
    p->nnames = count;
    if (!count) return true;
    p->lits = tpl_arena_alloc(a, (count + 1) * sizeof *p->lits);
    p->names = tpl_arena_alloc(a, count * sizeof *p->names);
    if (!p->lits || !p->names) return false;
    tpl_sb cur;
    tpl_sb_init(&cur, a);
    uint32_t li = 0;
    size_t pos = 0;
    for (size_t i = 0; i < n;) {
        size_t ns, ne, len;
        int k = ph_at(s, n, i, &ns, &ne, &len);
        if (!k) { i++; continue; }
        tpl_sb_put(&cur, s + pos, i - pos);
        if (k == 1) {
            tpl_sb_putc(&cur, s[i]);
        } else {
            char *lit = tpl_arena_strdup(a, cur.p ? cur.p : "", cur.len);
            if (!lit) return false;
            p->lits[li] = tpl_v_str(lit, cur.len);
            p->names[li] = tpl_v_str(s + ns, ne - ns);
            li++;
            tpl_sb_init(&cur, a);
        }
        i += len;
        pos = i;
    }
    tpl_sb_put(&cur, s + pos, n - pos);
    if (cur.failed) return false;
    p->lits[li] = tpl_v_str(cur.p ? cur.p : "", cur.len);
    p->probe = 0;
    p->probe_cp = 0;
    p->total_cp = 0;
    p->lit_bytes = 0;
    for (uint32_t i = 0; i <= count; i++) {
        size_t cp = tpl_utf8_len(p->lits[i].u.s, p->lits[i].len);
        p->total_cp += cp;
        p->lit_bytes += p->lits[i].len;
        if (cp > p->probe_cp || i == 0) { p->probe = i; p->probe_cp = cp; }
    }
    long long hits = distinct_trigrams(p->lits[p->probe].u.s, p->lits[p->probe].len, p->probe_cp);
    if (hits < 0) return false;
    p->hits = (size_t)hits;
    /* repeated names: each placeholder points at the first one of its name (a hash map) */
    p->first = tpl_arena_alloc(a, count * sizeof *p->first);
    tpl_map *seen = count > 1 ? tpl_map_new(a, count) : NULL;
    if (!p->first || (count > 1 && !seen)) return false;
    for (uint32_t i = 0; i < count; i++) {
        p->first[i] = i;
        if (!seen) continue;
        tpl_value *f = tpl_map_get(seen, p->names[i]);
        if (f) p->first[i] = (uint32_t)f->u.i;
        else if (!tpl_map_set(a, seen, p->names[i], tpl_v_int(i))) return false;
    }
    return true;
}

static bool prepare_catalog(tpl_arena *a, tpl_value root, tr_catalog *c)
{
    memset(c, 0, sizeof *c);
    c->main_lang = tpl_v_str("en", 2);
    tpl_map *m = root.u.map;
    tpl_value *ml = tpl_map_get_str(m, "main_lang", 9, tpl_hash_str("main_lang", 9));
    if (ml) c->main_lang = *ml;
    c->langs = tpl_arena_alloc(a, (m->len + 1) * sizeof *c->langs);
    if (!c->langs) return false;
    for (uint32_t i = 0; i < m->len; i++) {
        tpl_value k = m->e[i].key, v = m->e[i].val;
        if (v.type != TPL_T_MAP) continue;
        tr_lang *l = &c->langs[c->nlangs++];
        l->name = k;
        l->rows = v.u.map;
        l->npats = 0;
        l->max_names = 0;
        l->pats = tpl_arena_alloc(a, (v.u.map->len + 1) * sizeof *l->pats);
        if (!l->pats) return false;
        for (uint32_t r = 0; r < v.u.map->len; r++) {
            tr_pat *p = &l->pats[l->npats];
            memset(p, 0, sizeof *p);
            p->key = v.u.map->e[r].key;
            p->target = v.u.map->e[r].val;
            if (p->key.type != TPL_T_STR) continue;
            if (!split_key(a, p)) return false;
            if (p->nnames) l->npats++;
            if (p->nnames > l->max_names) l->max_names = p->nnames;
        }
    }
    return true;
}

/* Appends c to t's lookup order (false: out of memory). */
static bool push_catalog(tpl_tr_state *t, const tr_catalog *c)
{
    if (t->ncats == t->capcats) {
        size_t nc = t->capcats ? t->capcats * 2 : 4;
        const tr_catalog **ncats = realloc(t->cats, nc * sizeof *ncats);
        if (!ncats) return false;
        t->cats = ncats;
        t->capcats = nc;
    }
    t->cats[t->ncats++] = c;
    return true;
}

tpl_status tpl_tr_add_catalog_json(tpl_tr_state *t, const char *json, size_t len, char *msg, size_t msgsize,
                                   uint32_t *line, uint32_t *col)
{
    *line = *col = 0;
    json_error_t je;
    json_t *j = json_loadb(json, len, JSON_DECODE_ANY | JSON_ALLOW_NUL, &je);
    if (!j) {
        snprintf(msg, msgsize, "%s", je.text);
        *line = je.line > 0 ? (uint32_t)je.line : 1;
        *col = je.column > 0 ? (uint32_t)je.column : 1;
        return TPL_ERR_STATE;
    }
    if (!json_is_object(j)) {
        json_decref(j);
        snprintf(msg, msgsize, "a catalog must be a JSON object");
        return TPL_ERR_STATE;
    }
    /* a language's rows are an object (null: none); Python's tr fails on a string, list, number
     * or bool there (AttributeError on .items(), TypeError on `in`) where tpl rendered the source
     * text: refused when the catalog is added */
    const char *lk;
    json_t *lv;
    json_object_foreach(j, lk, lv) {
        if (strcmp(lk, "main_lang") == 0 || json_is_object(lv) || json_is_null(lv)) continue;
        snprintf(msg, msgsize, "catalog language '%.100s' must be an object of translations, not %s", lk,
                 json_is_array(lv) ? "a list" : json_is_string(lv) ? "a string" : json_is_boolean(lv) ? "a boolean" : "a number");
        json_decref(j);
        *line = *col = 1;
        return TPL_ERR_STATE;
    }
    tpl_value root;
    bool ok = tpl_value_from_json(&t->arena, j, &root, 0);
    json_decref(j);
    tr_catalog *c = ok ? tpl_arena_alloc(&t->arena, sizeof *c) : NULL;
    if (!c || !prepare_catalog(&t->arena, root, c) || !push_catalog(t, c)) {
        snprintf(msg, msgsize, "catalog too deep or out of memory");
        return TPL_ERR_NOMEM;
    }
    return TPL_OK;
}

bool tpl_tr_add_catalog(tpl_tr_state *t, const tpl_catalog *c)
{
    return push_catalog(t, &c->cat);
}

/* ---- tpl_catalog: rows from a host, no JSON on the way ---- */

tpl_catalog *tpl_catalog_new(void)
{
    tpl_catalog *c = calloc(1, sizeof *c);
    if (!c) return NULL;
    tpl_arena_init(&c->arena, 0);
    if (!(c->root = tpl_map_new(&c->arena, 4))) { tpl_catalog_free(c); return NULL; }
    return c;
}

void tpl_catalog_free(tpl_catalog *c)
{
    if (!c) return;
    tpl_arena_free(&c->arena);
    free(c);
}

/* A copy of s[0..n) in c's arena as a string value (false: not UTF-8, too long or no memory:
 * *st says which). */
static bool catalog_str(tpl_catalog *c, const char *s, size_t n, tpl_value *out, tpl_status *st)
{
    size_t bad;
    if (n > UINT32_MAX || !tpl_utf8_valid(s, n, &bad)) { *st = TPL_ERR_VALUE; return false; }
    char *d = tpl_arena_strdup(&c->arena, s, n);
    if (!d) { *st = TPL_ERR_NOMEM; return false; }
    *out = tpl_v_str(d, n);
    return true;
}

/* The row map of language lang, made on first use. */
static tpl_status catalog_row(tpl_catalog *c, const char *lang, const char *source, size_t source_len,
                              tpl_map **rows, tpl_value *key)
{
    tpl_status st = TPL_OK;
    if (!c || !lang || !source) return TPL_ERR_USAGE;
    if (c->finished) return TPL_ERR_USAGE;
    size_t ln = strlen(lang);
    size_t bad;
    if (!tpl_utf8_valid(lang, ln, &bad)) return TPL_ERR_VALUE;
    tpl_value *lv = tpl_map_get_str(c->root, lang, ln, tpl_hash_str(lang, ln));
    if (lv && lv->type == TPL_T_MAP) *rows = lv->u.map;
    else {
        tpl_value name;
        if (!catalog_str(c, lang, ln, &name, &st)) return st;
        if (!(*rows = tpl_map_new(&c->arena, 8)) || !tpl_map_set(&c->arena, c->root, name, tpl_v_map(*rows)))
            return TPL_ERR_NOMEM;
    }
    return catalog_str(c, source, source_len, key, &st) ? TPL_OK : st;
}

tpl_status tpl_catalog_add(tpl_catalog *c, const char *lang, const char *source, size_t source_len,
                           const char *target, size_t target_len)
{
    if (!target) return TPL_ERR_USAGE;
    tpl_map *rows;
    tpl_value key, val;
    tpl_status st = catalog_row(c, lang, source, source_len, &rows, &key);
    if (st != TPL_OK) return st;
    if (!catalog_str(c, target, target_len, &val, &st)) return st;
    return tpl_map_set(&c->arena, rows, key, val) ? TPL_OK : TPL_ERR_NOMEM;
}

tpl_status tpl_catalog_add_forms(tpl_catalog *c, const char *lang, const char *source, size_t source_len,
                                 const char *const *forms, const size_t *form_lens, size_t nforms)
{
    if ((!forms || !form_lens) && nforms) return TPL_ERR_USAGE;
    if (nforms > UINT32_MAX) return TPL_ERR_VALUE;
    tpl_map *rows;
    tpl_value key;
    tpl_status st = catalog_row(c, lang, source, source_len, &rows, &key);
    if (st != TPL_OK) return st;
    tpl_list *l = tpl_list_new(&c->arena, (uint32_t)nforms);
    if (!l) return TPL_ERR_NOMEM;
    for (size_t i = 0; i < nforms; i++) {
        if (!forms[i]) return TPL_ERR_USAGE;
        if (!catalog_str(c, forms[i], form_lens[i], &l->items[i], &st)) return st;
    }
    l->len = (uint32_t)nforms;
    return tpl_map_set(&c->arena, rows, key, tpl_v_list(l)) ? TPL_OK : TPL_ERR_NOMEM;
}

tpl_status tpl_catalog_finish(tpl_catalog *c)
{
    if (!c) return TPL_ERR_USAGE;
    if (c->finished) return TPL_OK;
    if (!prepare_catalog(&c->arena, tpl_v_map(c->root), &c->cat)) return TPL_ERR_NOMEM;
    c->finished = true;
    return TPL_OK;
}

tpl_status tpl_catalog_json(const tpl_catalog *c, char **json, size_t *len)
{
    if (!c || !json || !len) return TPL_ERR_USAGE;
    *json = NULL;
    *len = 0;
    json_t *root = json_object();
    bool ok = root != NULL;
    for (uint32_t i = 0; ok && i < c->root->len; i++) {
        tpl_value lang = c->root->e[i].key, rows = c->root->e[i].val;
        json_t *lo = json_object();
        ok = lo && json_object_setn_new(root, lang.u.s, lang.len, lo) == 0;
        for (uint32_t r = 0; ok && rows.type == TPL_T_MAP && r < rows.u.map->len; r++) {
            tpl_value k = rows.u.map->e[r].key, v = rows.u.map->e[r].val;
            json_t *t;
            if (v.type == TPL_T_LIST) {
                t = json_array();
                for (uint32_t f = 0; t && f < v.u.list->len; f++)
                    if (json_array_append_new(t, json_stringn(v.u.list->items[f].u.s, v.u.list->items[f].len))) {
                        json_decref(t);
                        t = NULL;
                    }
            } else {
                t = json_stringn(v.u.s, v.len);
            }
            ok = t && json_object_setn_new(lo, k.u.s, k.len, t) == 0;
        }
    }
    *json = ok ? json_dumps(root, JSON_COMPACT) : NULL;
    json_decref(root);
    if (!*json) return TPL_ERR_NOMEM;
    *len = strlen(*json);
    return TPL_OK;
}

bool tpl_tr_catalog_finished(const tpl_catalog *c)
{
    return c->finished;
}

void tpl_tr_clear_catalogs(tpl_tr_state *t)
{
    t->ncats = 0;
    tpl_arena_reset(&t->arena);
}

bool tpl_tr_set_lang(tpl_tr_state *t, const char *lang, size_t len)
{
    free(t->lang);
    t->lang = NULL;
    t->lang_len = 0;
    if (!lang || !len) return true;
    t->lang = malloc(len + 1);
    if (!t->lang) return false;
    memcpy(t->lang, lang, len);
    t->lang[len] = 0;
    t->lang_len = len;
    return true;
}

bool tpl_tr_add_key(tpl_tr_state *t, const char *name, size_t len)
{
    if (t->nkeys == t->capkeys) {
        size_t nc = t->capkeys ? t->capkeys * 2 : 4;
        tpl_value *nk = realloc(t->keys, nc * sizeof *nk);
        if (!nk) return false;
        t->keys = nk;
        t->capkeys = nc;
    }
    char *s = tpl_arena_strdup(&t->key_arena, name, len);
    if (!s) return false;
    t->keys[t->nkeys++] = tpl_v_str(s, len);
    return true;
}

void tpl_tr_clear_keys(tpl_tr_state *t)
{
    t->nkeys = 0;
    tpl_arena_reset(&t->key_arena);
}

/* ------------------------------------------------------------------ lookup */

static bool str_eq(tpl_value a, const char *s, size_t n)
{
    return a.type == TPL_T_STR && a.len == n && memcmp(a.u.s, s, n) == 0;
}

static const char *find_bytes(const char *h, size_t hn, const char *nd, size_t nn)
{
    if (nn == 0) return h;
    if (nn > hn) return NULL;
    return memmem(h, hn, nd, nn);
}

/* match_key: captures (byte ranges) into caps[2 * nnames]; false when the text does not match.
 * Adds the work done (one unit per placeholder, one per 16 bytes searched or compared) to *cost. */
static bool match_key(const tr_pat *p, const char *text, size_t n, size_t *caps, uint64_t *cost)
{
    const tpl_value *lits = p->lits;
    uint32_t nl = p->nnames + 1;
    if (n < p->lit_bytes) return false;
    *cost += (lits[0].len + lits[nl - 1].len) / 16;
    if (memcmp(text, lits[0].u.s, lits[0].len) != 0) return false;
    if (memcmp(text + n - lits[nl - 1].len, lits[nl - 1].u.s, lits[nl - 1].len) != 0) return false;
    size_t cur = lits[0].len, end = n - lits[nl - 1].len;
    if (cur > end) return false;
    for (uint32_t i = 1; i <= p->nnames; i++) {
        size_t vs, ve;
        if (i == p->nnames) {
            vs = cur;
            ve = end;
            cur = end;
        } else if (lits[i].len == 0) {
            vs = ve = cur;
        } else {
            /* the first occurrence from cur must end by end: search [cur, end) only */
            const char *j = find_bytes(text + cur, end - cur, lits[i].u.s, lits[i].len);
            *cost += (j ? (size_t)(j - text) + lits[i].len - cur : end - cur) / 16;
            if (!j) return false;
            vs = cur;
            ve = (size_t)(j - text);
            cur = ve + lits[i].len;
        }
        caps[2 * (i - 1)] = vs;
        caps[2 * (i - 1) + 1] = ve;
        *cost += 1;
        /* a repeated name must capture the same text as its first occurrence */
        uint32_t k = p->first[i - 1];
        if (k != i - 1) {
            size_t a0 = caps[2 * k], a1 = caps[2 * k + 1];
            *cost += (ve - vs) / 16;
            if (a1 - a0 != ve - vs || memcmp(text + a0, text + vs, ve - vs) != 0) return false;
        }
    }
    return true;
}

static int key_cmp(tpl_value a, tpl_value b)
{
    size_t n = a.len < b.len ? a.len : b.len;
    int c = memcmp(a.u.s, b.u.s, n);
    if (c) return c;
    return a.len < b.len ? -1 : a.len > b.len;
}

/* fill(target, caps): {{ and }} become braces; {name} the capture (unknown names stay). */
static int fill(tpl_vm *vm, const tr_pat *p, tpl_value target, const char *text, const size_t *caps,
                tpl_value *out)
{
    tpl_sb b;
    tpl_sb_init(&b, tpl_vm_arena(vm));
    const char *s = target.u.s;
    size_t n = target.len, pos = 0;
    for (size_t i = 0; i < n;) {
        size_t ns, ne, len;
        int k = ph_at(s, n, i, &ns, &ne, &len);
        if (!k) { i++; continue; }
        tpl_sb_put(&b, s + pos, i - pos);
        if (k == 1) {
            tpl_sb_putc(&b, s[i]);
        } else {
            bool found = false;
            for (uint32_t j = 0; j < p->nnames && !found; j++) {
                if (str_eq(p->names[j], s + ns, ne - ns)) {
                    tpl_sb_put(&b, text + caps[2 * j], caps[2 * j + 1] - caps[2 * j]);
                    found = true;
                }
            }
            if (!found) tpl_sb_put(&b, s + i, len);
        }
        i += len;
        pos = i;
    }
    tpl_sb_put(&b, s + pos, n - pos);
    if (b.failed) return tpl_vm_sb_error(vm, &b, "while getting the repr of an object");
    *out = tpl_sb_value(&b);
    return 0;
}

/* An ERB view's copy of a catalog target that holds a JSON object: the oracle's catalogs are
 * JSON.parse's plain Hashes (no StateHash), so every Hash in it keeps :k and "k" apart (eql). */
static int rb_plain(tpl_vm *vm, tpl_value v, int depth, tpl_value *out)
{
    *out = v;
    if (v.type != TPL_T_LIST && v.type != TPL_T_MAP) return 0;
    if (depth > TPL_NEST_MAX)
        return tpl_vm_error(vm, TPL_ERR_LIMIT, "a catalog row's target is nested more than %d deep", TPL_NEST_MAX);
    tpl_arena *a = tpl_vm_arena(vm);
    if (v.type == TPL_T_LIST) {
        tpl_list *l = NULL;
        for (uint32_t i = 0; i < v.u.list->len; i++) {
            tpl_value x;
            if (rb_plain(vm, v.u.list->items[i], depth + 1, &x) < 0) return -1;
            tpl_value o = v.u.list->items[i];
            bool copied = x.type == TPL_T_MAP ? x.u.map != o.u.map : x.type == TPL_T_LIST && x.u.list != o.u.list;
            if (!l && copied) { /* the first item that changed: copy */
                if (!(l = tpl_list_new(a, v.u.list->len))) return tpl_vm_nomem(vm);
                for (uint32_t j = 0; j < i; j++) l->items[l->len++] = v.u.list->items[j];
            }
            if (l) l->items[l->len++] = x;
        }
        if (l) *out = tpl_v_list(l);
        return 0;
    }
    tpl_map *m = tpl_map_new(a, v.u.map->len);
    if (!m) return tpl_vm_nomem(vm);
    m->eql = true;
    for (uint32_t i = 0; i < v.u.map->len; i++) {
        tpl_value x;
        if (rb_plain(vm, v.u.map->e[i].val, depth + 1, &x) < 0) return -1;
        if (!tpl_map_set(a, m, v.u.map->e[i].key, x)) return tpl_vm_nomem(vm);
    }
    *out = tpl_v_map(m);
    return 0;
}

static int lookup_lang(tpl_vm *vm, const tr_lang *l, tpl_value text, tpl_value *out, bool *hit)
{
    *hit = false;
    tpl_value *exact = tpl_map_get(l->rows, text);
    if (exact) { /* the row's target as it is: the oracle's rows[text] (a list, a number, null, ...) */
        *hit = true;
        if (tpl_vm_syntax(vm) == TPL_SYN_ERB) return rb_plain(vm, *exact, 0, out);
        *out = *exact;
        return 0;
    }
    if (!l->npats) return 0;
    tpl_tr_state *t = tpl_prompt_tr(vm);
    size_t need = 4 * (size_t)l->max_names;
    if (t->scratch_cap < need) {
        size_t *ns = realloc(t->scratch, need * sizeof *ns);
        if (!ns) return tpl_vm_nomem(vm);
        t->scratch = ns;
        t->scratch_cap = need;
    }
    size_t *caps = t->scratch, *best_caps = t->scratch + 2 * (size_t)l->max_names;
    uint64_t *fuel = tpl_vm_arena(vm)->fuel;
    const tr_pat *best = NULL;
    for (uint32_t i = 0; i < l->npats; i++) {
        const tr_pat *p = &l->pats[i];
        uint64_t cost = 1;
        bool m = match_key(p, text.u.s, text.len, caps, &cost);
        if (!tpl_fuel_charge(fuel, cost)) return tpl_vm_nomem(vm);
        if (!m) continue;
        bool better = !best;
        if (best) {
            if (p->hits != best->hits) better = p->hits > best->hits;
            else if (p->probe_cp != best->probe_cp) better = p->probe_cp > best->probe_cp;
            else if (p->total_cp != best->total_cp) better = p->total_cp > best->total_cp;
            else better = key_cmp(p->key, best->key) < 0;
        }
        if (better) {
            size_t *tmp = best_caps;
            best = p;
            best_caps = caps;
            caps = tmp;
        }
    }
    if (!best) return 0;
    *hit = true;
    tpl_value target = best->target;
    if (target.type != TPL_T_STR) { /* the oracle's fill: re.sub / String#gsub on the target */
        if (tpl_vm_syntax(vm) == TPL_SYN_ERB) {
            if (target.type == TPL_T_NONE)
                return tpl_vm_error(vm, TPL_ERR_TYPE, "undefined method `gsub' for nil:NilClass (NoMethodError)");
            tpl_sb b;
            tpl_sb_init(&b, tpl_vm_arena(vm));
            tpl_rb_inspect(&b, target);
            if (b.failed) return tpl_vm_sb_error(vm, &b, "while getting the repr of an object");
            if (b.len > 65) /* Ruby's message names a long receiver by its class alone */
                return tpl_vm_error(vm, TPL_ERR_TYPE, "undefined method `gsub' for #<%s> (NoMethodError)",
                                    tpl_rb_class_name(target));
            return tpl_vm_error(vm, TPL_ERR_TYPE, "undefined method `gsub' for %.*s:%s (NoMethodError)", (int)b.len,
                                b.p, tpl_rb_class_name(target));
        }
        return tpl_vm_error(vm, TPL_ERR_TYPE, "TypeError: expected string or bytes-like object, got '%s'",
                            tpl_type_name(vm, target));
    }
    return fill(vm, best, target, text.u.s, best_caps, out);
}

/* The language of a lookup: explicit lang → the render's → the program's bound one; *ls NULL: none. */
static int lookup_language(tpl_vm *vm, tpl_value lang, const char **ls, size_t *ln)
{
    tpl_tr_state *t = tpl_prompt_tr(vm);
    *ls = NULL;
    *ln = 0;
    if (lang.type == TPL_T_STR && lang.len) { *ls = lang.u.s; *ln = lang.len; }
    else if (lang.type != TPL_T_STR && lang.type != TPL_T_UNSET && lang.type != TPL_T_NONE &&
             lang.type != TPL_T_UNDEF && !(lang.type == TPL_T_BOOL && !lang.u.i)) {
        tpl_value s;
        if (tpl_to_str(vm, lang, &s) < 0) return -1;
        *ls = s.u.s;
        *ln = s.len;
    }
    if (!*ls && t && t->lang) { *ls = t->lang; *ln = t->lang_len; }
    if (!*ls && tpl_vm_bound_lang(vm)) { *ls = tpl_vm_bound_lang(vm); *ln = strlen(*ls); } /* the bound language */
    return 0;
}

int tpl_tr_value(tpl_vm *vm, tpl_value text, tpl_value lang, tpl_value *out)
{
    *out = text;
    tpl_tr_state *t = tpl_prompt_tr(vm);
    const char *ls;
    size_t ln;
    if (lookup_language(vm, lang, &ls, &ln) < 0) return -1;
    if (!ls || !t) return 0;
    for (size_t c = 0; c < t->ncats; c++) {
        const tr_catalog *cat = t->cats[c];
        if (str_eq(cat->main_lang, ls, ln)) return 0;
        for (uint32_t i = 0; i < cat->nlangs; i++) {
            if (!str_eq(cat->langs[i].name, ls, ln)) continue;
            bool hit;
            if (lookup_lang(vm, &cat->langs[i], text, out, &hit) < 0) return -1;
            if (hit) return 0;
            break;
        }
    }
    *out = text;
    return 0;
}

int tpl_tr_text(tpl_vm *vm, tpl_value text, tpl_value lang, tpl_value *out)
{
    if (tpl_tr_value(vm, text, lang, out) < 0) return -1;
    if (out->type == TPL_T_LIST) { /* a plural row: its first form */
        if (!out->u.list->len) return tpl_vm_error(vm, TPL_ERR_TYPE, "IndexError: list index out of range");
        *out = out->u.list->items[0];
    }
    return out->type == TPL_T_STR ? 0 : tpl_to_str(vm, *out, out);
}

/* ------------------------------------------------------------------ gettext (jinja2.ext.i18n) */

/* A Plural-Forms expression (C syntax: n, decimal numbers, ! * / % + - < > <= >= == != && || ?:
 * and parentheses), evaluated as GNU gettext does; -1 on a malformed expression, a division by
 * zero or nesting deeper than 32. */
typedef struct plural_ev { const char *p, *end; int64_t n; int depth; bool bad; } plural_ev;

static void pl_ws(plural_ev *e) { while (e->p < e->end && (*e->p == ' ' || *e->p == '\t' || *e->p == '\n' || *e->p == '\r')) e->p++; }
static bool pl_eat(plural_ev *e, const char *op)
{
    pl_ws(e);
    size_t k = strlen(op);
    if ((size_t)(e->end - e->p) < k || memcmp(e->p, op, k) != 0) return false;
    /* "<" must not take the first half of "<=", "!" of "!=", ... */
    if (k == 1 && e->p + 1 < e->end && e->p[1] == '=' && strchr("<>!=", op[0])) return false;
    if (k == 1 && e->p + 1 < e->end && (op[0] == '&' || op[0] == '|')) return false;
    e->p += k;
    return true;
}
static int64_t pl_cond(plural_ev *e);
static int64_t pl_primary(plural_ev *e)
{
    pl_ws(e);
    if (e->bad || e->p >= e->end) { e->bad = true; return 0; }
    if (*e->p == 'n') { e->p++; return e->n; }
    if (*e->p >= '0' && *e->p <= '9') {
        int64_t v = 0;
        while (e->p < e->end && *e->p >= '0' && *e->p <= '9') {
            if (v > (INT64_MAX - 9) / 10) { e->bad = true; return 0; }
            v = v * 10 + (*e->p++ - '0');
        }
        return v;
    }
    if (*e->p == '(') {
        e->p++;
        if (++e->depth > 32) { e->bad = true; return 0; }
        int64_t v = pl_cond(e);
        e->depth--;
        if (!pl_eat(e, ")")) e->bad = true;
        return v;
    }
    if (*e->p == '!' && !(e->p + 1 < e->end && e->p[1] == '=')) {
        e->p++;
        if (++e->depth > 32) { e->bad = true; return 0; }
        int64_t v = !pl_primary(e);
        e->depth--;
        return v;
    }
    e->bad = true;
    return 0;
}
static int64_t pl_mul(plural_ev *e)
{
    int64_t v = pl_primary(e);
    for (;;) {
        int op = pl_eat(e, "*") ? '*' : pl_eat(e, "/") ? '/' : pl_eat(e, "%") ? '%' : 0;
        if (!op || e->bad) return v;
        int64_t r = pl_primary(e);
        if (op != '*' && r == 0) { e->bad = true; return 0; }
        uint64_t uv = (uint64_t)v, ur = (uint64_t)r; /* GNU gettext computes in unsigned long */
        v = (int64_t)(op == '*' ? uv * ur : op == '/' ? uv / ur : uv % ur);
    }
}
static int64_t pl_add(plural_ev *e)
{
    int64_t v = pl_mul(e);
    for (;;) {
        int op = pl_eat(e, "+") ? '+' : pl_eat(e, "-") ? '-' : 0;
        if (!op || e->bad) return v;
        int64_t r = pl_mul(e);
        v = (int64_t)(op == '+' ? (uint64_t)v + (uint64_t)r : (uint64_t)v - (uint64_t)r);
    }
}
static int64_t pl_rel(plural_ev *e)
{
    int64_t v = pl_add(e);
    for (;;) {
        int op = pl_eat(e, "<=") ? 'l' : pl_eat(e, ">=") ? 'g' : pl_eat(e, "<") ? '<' : pl_eat(e, ">") ? '>' : 0;
        if (!op || e->bad) return v;
        uint64_t a = (uint64_t)v, b = (uint64_t)pl_add(e);
        v = op == 'l' ? a <= b : op == 'g' ? a >= b : op == '<' ? a < b : a > b;
    }
}
static int64_t pl_eq(plural_ev *e)
{
    int64_t v = pl_rel(e);
    for (;;) {
        int op = pl_eat(e, "==") ? '=' : pl_eat(e, "!=") ? '!' : 0;
        if (!op || e->bad) return v;
        int64_t r = pl_rel(e);
        v = op == '=' ? v == r : v != r;
    }
}
static int64_t pl_and(plural_ev *e)
{
    int64_t v = pl_eq(e);
    while (!e->bad && pl_eat(e, "&&")) { int64_t r = pl_eq(e); v = v && r; }
    return v;
}
static int64_t pl_or(plural_ev *e)
{
    int64_t v = pl_and(e);
    while (!e->bad && pl_eat(e, "||")) { int64_t r = pl_and(e); v = v || r; }
    return v;
}
static int64_t pl_cond(plural_ev *e)
{
    int64_t c = pl_or(e);
    if (e->bad || !pl_eat(e, "?")) return c;
    if (++e->depth > 32) { e->bad = true; return 0; }
    int64_t a = pl_cond(e);
    if (!pl_eat(e, ":")) e->bad = true;
    int64_t b = pl_cond(e);
    e->depth--;
    return c ? a : b;
}

/* The plural index of n for a language's rows: the Plural-Forms of its header row (the row whose
 * source is "", as in a gettext catalog: "...Plural-Forms: nplurals=2; plural=(n != 1);\n..."),
 * else Germanic plurals (n != 1). -1 when the expression is malformed. */
static int64_t plural_index(const tr_lang *l, int64_t n)
{
    const char *expr = "(n != 1)";
    size_t elen = strlen(expr);
    tpl_value *hdr = tpl_map_get_str(l->rows, "", 0, tpl_hash_str("", 0));
    if (hdr && hdr->type == TPL_T_STR) {
        const char *h = hdr->u.s, *end = h + hdr->len;
        const char *pf = memmem(h, hdr->len, "Plural-Forms:", 13);
        const char *eol = pf ? memchr(pf, '\n', (size_t)(end - pf)) : NULL;
        if (!eol) eol = end;
        const char *pl = pf ? memmem(pf, (size_t)(eol - pf), "plural=", 7) : NULL;
        if (pl) {
            expr = pl + 7;
            const char *semi = memchr(expr, ';', (size_t)(eol - expr));
            elen = (size_t)((semi ? semi : eol) - expr);
        }
    }
    plural_ev e = { expr, expr + elen, n, 0, false };
    int64_t v = pl_cond(&e);
    pl_ws(&e);
    if (e.bad || e.p != e.end) return -1;
    return v;
}

static tpl_value *lang_row(const tr_lang *l, tpl_value key)
{
    return tpl_map_get(l->rows, key);
}

/* gettext's lookup of key (exact rows only) or, with plural, ngettext's: a row whose target is a
 * list of forms gives form plural_index(n). *hit false: no catalog has it. */
static int gettext_lookup(tpl_vm *vm, tpl_value key, bool plural, int64_t n, tpl_value *out, bool *hit)
{
    *hit = false;
    tpl_tr_state *t = tpl_prompt_tr(vm);
    const char *ls;
    size_t ln;
    if (lookup_language(vm, tpl_v_unset(), &ls, &ln) < 0) return -1;
    if (!ls || !t) return 0;
    for (size_t c = 0; c < t->ncats; c++) {
        const tr_catalog *cat = t->cats[c];
        if (str_eq(cat->main_lang, ls, ln)) return 0;
        for (uint32_t i = 0; i < cat->nlangs; i++) {
            if (!str_eq(cat->langs[i].name, ls, ln)) continue;
            tpl_value *row = lang_row(&cat->langs[i], key);
            tpl_value v = tpl_v_unset();
            if (row && !plural) v = row->type == TPL_T_LIST ? (row->u.list->len ? row->u.list->items[0] : v) : *row;
            else if (row && row->type == TPL_T_LIST) {
                int64_t k = plural_index(&cat->langs[i], n);
                if (k >= 0 && (uint64_t)k < row->u.list->len) v = row->u.list->items[k];
            }
            if (v.type != TPL_T_UNSET) {
                *hit = true;
                if (v.type == TPL_T_STR) { *out = v; return 0; }
                return tpl_to_str(vm, v, out);
            }
            break;
        }
    }
    return 0;
}

/* "context\x04message": gettext's key of a message with a context. */
static int ctx_key(tpl_vm *vm, tpl_value ctx, tpl_value msg, tpl_value *out)
{
    tpl_sb b;
    tpl_sb_init(&b, tpl_vm_arena(vm));
    tpl_sb_put(&b, ctx.u.s, ctx.len);
    tpl_sb_putc(&b, '\x04');
    tpl_sb_put(&b, msg.u.s, msg.len);
    if (b.failed) return tpl_vm_sb_error(vm, &b, "while getting the repr of an object");
    *out = tpl_sb_value(&b);
    return 0;
}

/* Python's int(n) for the count: int, bool, integral float; anything else a TypeError. */
static int count_of(tpl_vm *vm, tpl_value n, int64_t *out)
{
    if (n.type == TPL_T_INT || n.type == TPL_T_BOOL) { *out = n.u.i; return 0; }
    if (n.type == TPL_T_FLOAT && n.u.f == (double)(int64_t)n.u.f) { *out = (int64_t)n.u.f; return 0; }
    return tpl_vm_error(vm, TPL_ERR_TYPE, "TypeError: Plural value must be an integer, got %s", tpl_type_name(vm, n));
}

/* Jinja2's newstyle wrappers: rv % variables, always (so a literal % is written %%). vars gets
 * key=val unless it has key already (variables.setdefault). */
static int newstyle_format(tpl_vm *vm, tpl_value rv, tpl_value vars, const char *key, tpl_value val, tpl_value *out)
{
    if (key) {
        tpl_map *m = vars.u.map;
        size_t kl = strlen(key);
        if (!tpl_map_get_str(m, key, kl, tpl_hash_str(key, kl))) {
            tpl_arena *a = tpl_vm_arena(vm);
            tpl_map *copy = tpl_map_new(a, m->len + 1);
            if (!copy) return tpl_vm_nomem(vm);
            for (uint32_t i = 0; i < m->len; i++)
                if (!tpl_map_set(a, copy, m->e[i].key, m->e[i].val)) return tpl_vm_nomem(vm);
            if (!tpl_map_set(a, copy, tpl_v_str(key, kl), val)) return tpl_vm_nomem(vm);
            vars = tpl_v_map(copy);
        }
    }
    return tpl_str_mod(vm, rv, vars, out);
}

static int str_arg(tpl_vm *vm, tpl_value v, tpl_value *out)
{
    if (v.type == TPL_T_STR) { *out = v; return 0; }
    return tpl_to_str(vm, v, out);
}

/* gettext(message, **variables): the render's catalogs as tr() reads them (exact row, then pattern
 * rows), then % variables. _() is the same function. */
int g_gettext(tpl_vm *vm, tpl_value *a, tpl_value *out)
{
    tpl_value msg, rv;
    if (str_arg(vm, a[0], &msg) < 0 || tpl_tr_text(vm, msg, tpl_v_unset(), &rv) < 0) return -1;
    return newstyle_format(vm, rv, a[1], NULL, tpl_v_unset(), out);
}

/* ngettext(singular, plural, n, **variables): the row of singular whose target is a list of
 * plural forms gives the form the language's Plural-Forms picks for n; no such row: singular when
 * n == 1, else plural. Then % variables, with num=n unless given. */
int g_ngettext(tpl_vm *vm, tpl_value *a, tpl_value *out)
{
    tpl_value s, p, rv;
    int64_t n = 0;
    bool hit;
    if (str_arg(vm, a[0], &s) < 0 || str_arg(vm, a[1], &p) < 0 || count_of(vm, a[2], &n) < 0) return -1;
    if (gettext_lookup(vm, s, true, n, &rv, &hit) < 0) return -1;
    if (!hit) rv = n == 1 ? s : p;
    return newstyle_format(vm, rv, a[3], "num", a[2], out);
}

/* pgettext(context, message, **variables): the row "context\x04message", else message; then
 * % variables with context=context unless given. */
int g_pgettext(tpl_vm *vm, tpl_value *a, tpl_value *out)
{
    tpl_value c, s, key, rv;
    bool hit;
    if (str_arg(vm, a[0], &c) < 0 || str_arg(vm, a[1], &s) < 0 || ctx_key(vm, c, s, &key) < 0) return -1;
    if (gettext_lookup(vm, key, false, 0, &rv, &hit) < 0) return -1;
    if (!hit) rv = s;
    return newstyle_format(vm, rv, a[2], "context", c, out);
}

/* npgettext(context, singular, plural, n, **variables): ngettext on the row "context\x04singular". */
int g_npgettext(tpl_vm *vm, tpl_value *a, tpl_value *out)
{
    tpl_value c, s, p, key, rv;
    int64_t n = 0;
    bool hit;
    if (str_arg(vm, a[0], &c) < 0 || str_arg(vm, a[1], &s) < 0 || str_arg(vm, a[2], &p) < 0 ||
        count_of(vm, a[3], &n) < 0 || ctx_key(vm, c, s, &key) < 0)
        return -1;
    if (gettext_lookup(vm, key, true, n, &rv, &hit) < 0) return -1;
    if (!hit) rv = n == 1 ? s : p;
    /* variables.setdefault("context"), then setdefault("num") */
    tpl_map *m = a[4].u.map;
    tpl_arena *ar = tpl_vm_arena(vm);
    tpl_map *copy = tpl_map_new(ar, m->len + 2);
    if (!copy) return tpl_vm_nomem(vm);
    for (uint32_t i = 0; i < m->len; i++)
        if (!tpl_map_set(ar, copy, m->e[i].key, m->e[i].val)) return tpl_vm_nomem(vm);
    if (!tpl_map_get_str(copy, "context", 7, tpl_hash_str("context", 7)) &&
        !tpl_map_set(ar, copy, tpl_v_str("context", 7), c))
        return tpl_vm_nomem(vm);
    return newstyle_format(vm, rv, tpl_v_map(copy), "num", a[3], out);
}

/* ------------------------------------------------------------------ fmt prompts */

int tpl_fmt_begin(tpl_vm *vm, tpl_value source, tpl_value *fields, tpl_value *translated)
{
    tpl_arena *a = tpl_vm_arena(vm);
    *translated = tpl_v_unset();
    tpl_value st = tpl_vm_state(vm);
    tpl_map *state = st.type == TPL_T_MAP ? st.u.map : NULL;
    tpl_tr_state *t = tpl_prompt_tr(vm);
    if (!state) {
        state = tpl_map_new(a, 0);
        if (!state) return tpl_vm_nomem(vm);
    }
    if (t && t->nkeys) {
        tpl_map *copy = NULL;
        for (size_t k = 0; k < t->nkeys; k++) {
            tpl_value *v = tpl_map_get(copy ? copy : state, t->keys[k]);
            if (!v) continue;
            if (!copy) {
                copy = tpl_map_new(a, state->len);
                if (!copy) return tpl_vm_nomem(vm);
                for (uint32_t i = 0; i < state->len; i++)
                    if (!tpl_map_set(a, copy, state->e[i].key, state->e[i].val))
                        return tpl_vm_nomem(vm);
                v = tpl_map_get(copy, t->keys[k]);
            }
            tpl_value s, tr;
            if (v->type == TPL_T_STR) s = *v;
            else {
                tpl_sb b;
                tpl_sb_init(&b, a);
                tpl_py_str(&b, *v);
                if (b.failed) return tpl_vm_sb_error(vm, &b, "while getting the repr of an object");
                s = tpl_sb_value(&b);
            }
            if (tpl_tr_value(vm, s, tpl_v_unset(), &tr) < 0) return -1; /* state[key] = tr(str(state[key])) */
            *v = tr;
        }
        if (copy) state = copy;
    }
    *fields = tpl_v_map(state);
    if (t && (t->lang || tpl_vm_bound_lang(vm)) && t->ncats) {
        tpl_value tr;
        if (tpl_tr_value(vm, source, tpl_v_unset(), &tr) < 0) return -1;
        if (tr.type != TPL_T_STR) /* tr(source).format(**state) */
            return tpl_vm_error(vm, TPL_ERR_TYPE, "AttributeError: '%s' object has no attribute 'format'",
                                tpl_type_name(vm, tr));
        if (tr.len != source.len || memcmp(tr.u.s, source.u.s, tr.len) != 0)
            return tpl_str_format(vm, tr, NULL, 0, state, false, translated);
    }
    return 0;
}

/* A value's class in a format field (`{0.__class__.__name__}`, a common Python idiom): a string
 * flagged TPL_F_CLASS_RB holding its str(), "<class 'str'>"; fmt_class_name gives the name back. */
static bool fmt_is_class(tpl_value v) { return v.type == TPL_T_STR && (v.flags & TPL_F_CLASS_RB); }

static tpl_value fmt_class_name(tpl_value cls)
{
    return tpl_v_str(cls.u.s + 8, cls.len - 10); /* <class 'NAME'> */
}

/* Python's repr-based type names for str.format errors. */
int tpl_fmt_item(tpl_vm *vm, tpl_value obj, tpl_value key, tpl_value *out)
{
    if (fmt_is_class(obj)) /* Python's list[0] is a typing alias, str[0] an error: tpl has neither */
        return tpl_vm_error(vm, TPL_ERR_TYPE, "TypeError: type '%.*s' is not subscriptable",
                            (int)fmt_class_name(obj).len, fmt_class_name(obj).u.s);
    switch (obj.type) {
    case TPL_T_HOST: { /* obj[key], as str.format does */
        int rc = tpl_hobj_item(vm, obj, key, out);
        if (rc <= 0) return rc;
        tpl_sb b;
        tpl_sb_init(&b, tpl_vm_arena(vm));
        tpl_py_repr(&b, key);
        return tpl_vm_fail(vm, TPL_EK_KEY, "KeyError: %.*s", (int)b.len, b.p ? b.p : "");
    }
    case TPL_T_MAP: {
        tpl_value *v = tpl_map_get(obj.u.map, key);
        if (v) { *out = *v; return 0; }
        tpl_sb b;
        tpl_sb_init(&b, tpl_vm_arena(vm));
        tpl_py_repr(&b, key);
        return tpl_vm_fail(vm, TPL_EK_KEY, "KeyError: %.*s", (int)b.len, b.p ? b.p : "");
    }
    case TPL_T_LIST:
    case TPL_T_STR: {
        const char *what = obj.type == TPL_T_STR ? "string" : obj.flags & TPL_F_TUPLE ? "tuple" : "list";
        if (key.type != TPL_T_INT)
            return tpl_vm_error(vm, TPL_ERR_TYPE, obj.type == TPL_T_STR
                                ? "TypeError: %s indices must be integers, not 'str'"
                                : "TypeError: %s indices must be integers or slices, not str", what);
        int64_t i = key.u.i;
        if (obj.type == TPL_T_LIST) {
            if (i < 0 || i >= (int64_t)obj.u.list->len)
                return tpl_vm_fail(vm, TPL_EK_INDEX, "IndexError: %s index out of range", what);
            *out = obj.u.list->items[i];
            return 0;
        }
        size_t ncp = tpl_utf8_len(obj.u.s, obj.len);
        if (i < 0 || (uint64_t)i >= ncp)
            return tpl_vm_fail(vm, TPL_EK_INDEX, "IndexError: string index out of range");
        size_t b0 = tpl_utf8_offset(obj.u.s, obj.len, (size_t)i);
        size_t b1 = b0;
        tpl_utf8_next(obj.u.s, obj.len, &b1);
        *out = tpl_v_str(obj.u.s + b0, b1 - b0);
        return 0;
    }
    default:
        return tpl_vm_error(vm, TPL_ERR_TYPE, "TypeError: '%s' object is not subscriptable", tpl_type_name(vm, obj));
    }
}

int tpl_fmt_attr(tpl_vm *vm, tpl_value obj, tpl_value name, tpl_value *out)
{
    if (fmt_is_class(obj)) { /* the data attributes of a builtin type */
        tpl_value cname = fmt_class_name(obj);
        if (str_eq(name, "__name__", 8) || str_eq(name, "__qualname__", 12)) { *out = cname; return 0; }
        if (str_eq(name, "__module__", 10)) { *out = tpl_v_str("builtins", 8); return 0; }
        if (!str_eq(name, "__class__", 9))
            return tpl_vm_fail(vm, TPL_EK_ATTRIBUTE, "AttributeError: type object '%.*s' has no attribute '%.*s'",
                               (int)cname.len, cname.u.s, (int)name.len, name.u.s);
        *out = tpl_v_str("<class 'type'>", 14); /* a type's class is type */
        out->flags |= TPL_F_CLASS_RB;
        return 0;
    }
    if (str_eq(name, "__class__", 9) && obj.type != TPL_T_HOST) {
        const char *tn = tpl_type_name(vm, obj);
        tpl_sb b;
        tpl_sb_init(&b, tpl_vm_arena(vm));
        tpl_sb_printf(&b, "<class '%s'>", tn);
        if (b.failed) return tpl_vm_sb_error(vm, &b, "while getting an attribute");
        *out = tpl_sb_value(&b);
        out->flags |= TPL_F_CLASS_RB;
        return 0;
    }
    /* JSON values have no data attributes but the numeric ones; methods would print their
     * address, which is not reproducible, so they are refused like a missing attribute. */
    if (obj.type == TPL_T_INT || obj.type == TPL_T_BOOL) {
        if (str_eq(name, "real", 4) || str_eq(name, "numerator", 9)) { *out = tpl_v_int(obj.u.i); return 0; }
        if (str_eq(name, "imag", 4)) { *out = tpl_v_int(0); return 0; }
        if (str_eq(name, "denominator", 11)) { *out = tpl_v_int(1); return 0; }
    } else if (obj.type == TPL_T_BIGINT) { /* an int past int64: the same data attributes */
        if (str_eq(name, "real", 4) || str_eq(name, "numerator", 9)) { *out = obj; return 0; }
        if (str_eq(name, "imag", 4)) { *out = tpl_v_int(0); return 0; }
        if (str_eq(name, "denominator", 11)) { *out = tpl_v_int(1); return 0; }
    } else if (obj.type == TPL_T_FLOAT) {
        if (str_eq(name, "real", 4)) { *out = obj; return 0; }
        if (str_eq(name, "imag", 4)) { *out = tpl_v_float(0.0); return 0; }
    } else if (obj.type == TPL_T_HOST) { /* getattr(obj, name), as str.format does */
        int rc = tpl_hobj_attr(vm, obj, name.u.s, name.len, out);
        if (rc <= 0) return rc;
    }
    return tpl_vm_fail(vm, TPL_EK_ATTRIBUTE, "AttributeError: '%s' object has no attribute '%.*s'",
                        tpl_type_name(vm, obj), (int)name.len, name.u.s);
}

int tpl_fmt_conv(tpl_vm *vm, tpl_value v, int conv, tpl_value *out)
{
    tpl_sb b;
    tpl_sb_init(&b, tpl_vm_arena(vm));
    if (fmt_is_class(v)) { /* a class's str() and repr() are both "<class 'str'>", ASCII */
        *out = tpl_v_str(v.u.s, v.len);
        return 0;
    }
    if (conv == 's') {
        if (v.type == TPL_T_STR) { *out = v; return 0; }
        tpl_py_str(&b, v);
    } else if (conv == 'r') {
        tpl_py_repr(&b, v);
    } else {
        tpl_sb r;
        tpl_sb_init(&r, tpl_vm_arena(vm));
        tpl_py_repr(&r, v);
        if (r.failed) return tpl_vm_sb_error(vm, &r, "while getting the repr of an object");
        for (size_t i = 0; i < r.len;) {
            unsigned char c = (unsigned char)r.p[i];
            if (c < 0x80) { tpl_sb_putc(&b, (char)c); i++; continue; }
            uint32_t cp = tpl_utf8_next(r.p, r.len, &i);
            if (cp < 0x100) tpl_sb_printf(&b, "\\x%02x", cp);
            else if (cp < 0x10000) tpl_sb_printf(&b, "\\u%04x", cp);
            else tpl_sb_printf(&b, "\\U%08x", cp);
        }
    }
    if (b.failed) return tpl_vm_sb_error(vm, &b, "while getting the repr of an object");
    *out = tpl_sb_value(&b);
    return 0;
}
