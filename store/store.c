/* The prompt store (include/tpl_store.h): rows, versions, tombstones, translation rows,
 * dictionaries and their binding, and loading a prompt for rendering. A layer above the engine:
 * it includes only public headers (tpl.h, tpl_store.h) and its own database layer (db.h). */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <time.h>
#include <jansson.h>
#include "tpl_store.h"
#include "db.h"
#include "store_i.h"

struct tpl_store {
    db *d;
    uint64_t trips;     /* statements sent since the open finished (tpl_store_round_trips) */
    char msg[1024];
};

tpl_store_status tpl_store_i_fail(tpl_store *s, tpl_store_status st, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(s->msg, sizeof s->msg, fmt, ap);
    va_end(ap);
    return st;
}

/* Runs one statement; failures become TPL_STORE_IO/NOMEM with the database's message. */
static tpl_store_status run(tpl_store *s, const char *sql, const db_val *p, size_t n, db_res *res)
{
    char m[768];
    m[0] = 0;
    s->trips++;
    int rc = s->d->exec(s->d, sql, p, n, res, m, sizeof m);
    if (rc == DB_OK) return TPL_STORE_OK;
    if (rc == DB_NOMEM) return fail(s, TPL_STORE_NOMEM, "out of memory");
    return fail(s, TPL_STORE_IO, "store: %s", m);
}

static db_val txt(const char *p) { db_val v = { p ? DB_TEXT : DB_NULL, p, p ? strlen(p) : 0 }; return v; }
static db_val txtn(const char *p, size_t n) { db_val v = { DB_TEXT, p, n }; return v; }

tpl_store_status tpl_store_i_begin(tpl_store *s)
{
    tpl_store_status st = run(s, s->d->begin_sql, NULL, 0, NULL);
    if (st == TPL_STORE_OK && s->d->lock_sql) {
        db_res r;
        st = run(s, s->d->lock_sql, NULL, 0, &r);
        db_res_free(&r);
        if (st != TPL_STORE_OK) {
            char keep[sizeof s->msg];
            memcpy(keep, s->msg, sizeof keep);
            run(s, "ROLLBACK", NULL, 0, NULL);
            memcpy(s->msg, keep, sizeof keep);
        }
    }
    return st;
}

tpl_store_status tpl_store_i_commit(tpl_store *s) { return run(s, "COMMIT", NULL, 0, NULL); }

/* Rolls back, keeping the failure's message; returns st. */
tpl_store_status tpl_store_i_rollback(tpl_store *s, tpl_store_status st)
{
    char keep[sizeof s->msg];
    memcpy(keep, s->msg, sizeof keep);
    run(s, "ROLLBACK", NULL, 0, NULL);
    memcpy(s->msg, keep, sizeof keep);
    return st;
}

/* ---- validation ---- */

static bool utf8_ok(const char *p, size_t n)
{
    const unsigned char *s = (const unsigned char *)p;
    size_t i = 0;
    while (i < n) {
        unsigned c = s[i];
        if (c == 0) return false;
        if (c < 0x80) { i++; continue; }
        size_t k;
        if (c >= 0xC2 && c <= 0xDF) k = 1;
        else if (c >= 0xE0 && c <= 0xEF) k = 2;
        else if (c >= 0xF0 && c <= 0xF4) k = 3;
        else return false;
        if (n - i <= k) return false;
        for (size_t j = 1; j <= k; j++)
            if ((s[i + j] & 0xC0) != 0x80) return false;
        unsigned c1 = s[i + 1];
        if ((c == 0xE0 && c1 < 0xA0) || (c == 0xED && c1 > 0x9F) || (c == 0xF0 && c1 < 0x90) || (c == 0xF4 && c1 > 0x8F))
            return false;
        i += k + 1;
    }
    return true;
}

static tpl_store_status too_long(tpl_store *s, const char *what, size_t n)
{
    return fail(s, TPL_STORE_INVALID, "%s is %zu bytes; the store takes at most %zu bytes (8 MiB)", what, n,
                TPL_STORE_MAX_TEXT);
}

static tpl_store_status check_text(tpl_store *s, const char *what, const char *v, bool empty_ok)
{
    if (!v) return fail(s, TPL_STORE_INVALID, "%s is missing", what);
    if (!*v && !empty_ok) return fail(s, TPL_STORE_INVALID, "%s is empty", what);
    size_t n = strlen(v);
    if (n > TPL_STORE_MAX_TEXT) return too_long(s, what, n);
    if (!utf8_ok(v, n)) return fail(s, TPL_STORE_INVALID, "%s is not UTF-8", what);
    return TPL_STORE_OK;
}

static bool all_digits(const char *p, size_t n)
{
    if (!n) return false;
    for (size_t i = 0; i < n; i++) if (p[i] < '0' || p[i] > '9') return false;
    return true;
}

/* A prompt or dictionary name: 1..200 bytes of UTF-8, no ':', whitespace or control
 * characters, not all digits (that is a row id). */
static tpl_store_status check_name(tpl_store *s, const char *what, const char *name)
{
    tpl_store_status st = check_text(s, what, name, false);
    if (st) return st;
    size_t n = strlen(name);
    if (n > 200) return fail(s, TPL_STORE_INVALID, "%s '%.40s...' is longer than 200 bytes", what, name);
    if (all_digits(name, n)) return fail(s, TPL_STORE_INVALID, "%s '%s' is all digits (that is a row id)", what, name);
    for (size_t i = 0; i < n; i++) {
        unsigned char c = (unsigned char)name[i];
        if (c == ':' || c <= ' ' || c == 0x7f)
            return fail(s, TPL_STORE_INVALID, "%s '%s' has a %s (names have none)", what, name,
                        c == ':' ? "':'" : c == ' ' ? "space" : "control character");
    }
    return TPL_STORE_OK;
}

static const char *syntax_name(tpl_syntax x)
{
    return x == TPL_SYNTAX_ERB ? "erb" : x == TPL_SYNTAX_FMT ? "fmt" : "jinja";
}

static bool syntax_parse(const char *p, tpl_syntax *x)
{
    if (!p) return false;
    if (strcmp(p, "jinja") == 0) *x = TPL_SYNTAX_JINJA;
    else if (strcmp(p, "erb") == 0) *x = TPL_SYNTAX_ERB;
    else if (strcmp(p, "fmt") == 0) *x = TPL_SYNTAX_FMT;
    else return false;
    return true;
}

/* ---- open ---- */

/* Migrations: step k upgrades a store of schema version k to k+1 (k = 0: a new store). */
static tpl_store_status migrate(tpl_store *s, long from)
{
    for (long v = from; v < TPL_STORE_SCHEMA_VERSION; v++) {
        if (v == 0)
            for (const char *const *q = s->d->schema_v1; *q; q++) {
                tpl_store_status st = run(s, *q, NULL, 0, NULL);
                if (st) return st;
            }
        /* (version 1 -> 2 and later steps go here) */
    }
    char buf[32];
    snprintf(buf, sizeof buf, "%d", TPL_STORE_SCHEMA_VERSION);
    db_val p[] = { txt(buf) };
    if (from == 0) return run(s, "INSERT INTO tpl_meta (key, value) VALUES ('schema_version', ?)", p, 1, NULL);
    return run(s, "UPDATE tpl_meta SET value = ? WHERE key = 'schema_version'", p, 1, NULL);
}

static tpl_store_status schema_version(tpl_store *s, long *v)
{
    db_res r;
    tpl_store_status st = run(s, "SELECT value FROM tpl_meta WHERE key = 'schema_version'", NULL, 0, &r);
    if (st) return st;
    *v = r.nrows && db_cell(&r, 0, 0) ? strtol(db_cell(&r, 0, 0), NULL, 10) : 0;
    db_res_free(&r);
    return TPL_STORE_OK;
}

static tpl_store_status newer(tpl_store *s, long v)
{
    return fail(s, TPL_STORE_IO, "store schema version %ld is newer than this tpl supports (%d): upgrade tpl to use it",
                v, TPL_STORE_SCHEMA_VERSION);
}

static tpl_store_status setup_schema(tpl_store *s)
{
    long v = -1;
    /* The common case, without a write lock: the store is at our version. */
    if (schema_version(s, &v) == TPL_STORE_OK) {
        if (v == TPL_STORE_SCHEMA_VERSION) return TPL_STORE_OK;
        if (v > TPL_STORE_SCHEMA_VERSION) return newer(s, v);
    }
    tpl_store_status st = begin(s);
    if (st) return st;
    st = run(s, "CREATE TABLE IF NOT EXISTS tpl_meta (key TEXT PRIMARY KEY, value TEXT NOT NULL)", NULL, 0, NULL);
    if (!st) st = schema_version(s, &v);
    if (!st && v > TPL_STORE_SCHEMA_VERSION) st = newer(s, v);
    if (!st && v < TPL_STORE_SCHEMA_VERSION) st = migrate(s, v);
    if (st) return rollback(s, st);
    return commit(s);
}

static bool is_url(const char *w)
{
    return strncmp(w, "postgresql://", 13) == 0 || strncmp(w, "postgres://", 11) == 0;
}

tpl_store_status tpl_store_open(const char *where, tpl_store **out)
{
    if (!out) return TPL_STORE_INVALID;
    tpl_store *s = calloc(1, sizeof *s);
    *out = s;
    if (!s) return TPL_STORE_NOMEM;
    if (!where || !*where) return fail(s, TPL_STORE_INVALID, "no store given");
    char m[768];
    m[0] = 0;
    size_t n = strspn(where, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789+.-");
    if (!is_url(where) && ((n && strncmp(where + n, "://", 3) == 0) || strncasecmp(where, "sqlite:", 7) == 0 ||
                           strncasecmp(where, "sqlite3:", 8) == 0 || strncasecmp(where, "file:", 5) == 0))
        return fail(s, TPL_STORE_INVALID, "'%.200s' is a URL, not a store: give an SQLite file's path or a postgresql:// URL",
                    where);
    s->d = is_url(where) ? db_pg_open(where, m, sizeof m) : db_sqlite_open(where, m, sizeof m);
    if (!s->d) return fail(s, TPL_STORE_IO, "cannot open the store: %s", m);
    tpl_store_status st = setup_schema(s);
    if (st == TPL_STORE_OK) s->msg[0] = 0;
    s->trips = 0;
    return st;
}

void tpl_store_close(tpl_store *s)
{
    if (!s) return;
    if (s->d) s->d->close(s->d);
    free(s);
}

const char *tpl_store_errmsg(const tpl_store *s) { return s ? s->msg : "no store (NULL)"; }
const char *tpl_store_backend(const tpl_store *s) { return s && s->d ? s->d->backend : ""; }
uint64_t tpl_store_round_trips(const tpl_store *s) { return s ? s->trips : 0; }

/* ---- rows ---- */

/* A row's columns, then its bound dictionaries (a JSON array, db.h's dicts_json) and, for loads,
 * the cached .tplb: one round trip gives the whole tpl_store_prompt. */
enum { C_ID, C_NAME, C_VERSION, C_SYNTAX, C_SOURCE, C_PROFILE, C_TRKEYS, C_LANG, C_CREATED, C_REMOVED, C_FORMAT, C_DICTS,
       C_TPLB };

/* The C_* columns of table t (an alias, or the table's name in a RETURNING clause: SQLite's
 * RETURNING knows no alias) into buf: "t.id, ..., <dicts of t.name>[, t.tplb]". */
static void row_cols(const tpl_store *s, const char *t, char *buf, size_t cap, bool with_tplb)
{
    static const char *const names[] = { "id", "name", "version", "syntax", "source", "profile", "tr_keys", "lang",
                                         "created_at", "removed", "tplb_format" };
    size_t k = 0;
    for (size_t i = 0; i < sizeof names / sizeof *names && k < cap; i++)
        k += (size_t)snprintf(buf + k, cap - k, "%s.%s, ", t, names[i]);
    char col[64];
    snprintf(col, sizeof col, "%s.name", t);
    if (k < cap) k += (size_t)snprintf(buf + k, cap - k, s->d->dicts_json, col);
    if (with_tplb && k < cap) snprintf(buf + k, cap - k, ", %s.tplb", t);
}

static char *dup_cell(const db_res *r, size_t row, size_t col)
{
    const char *c = db_cell(r, row, col);
    if (!c) return NULL;
    size_t n = db_cell_len(r, row, col);
    char *d = malloc(n + 1);
    if (d) { memcpy(d, c, n); d[n] = 0; }
    return d;
}

static void prompt_clear(tpl_store_prompt *p)
{
    free(p->name); free(p->source); free(p->profile); free(p->lang); free(p->created_at);
    for (size_t i = 0; i < p->ntr_keys; i++) free(p->tr_keys[i]);
    free(p->tr_keys);
    for (size_t i = 0; i < p->ndicts; i++) free(p->dicts[i]);
    free(p->dicts);
    memset(p, 0, sizeof *p);
}

/* Parses a JSON array of strings into a malloc'd vector. */
static bool str_array(const char *json, char ***out, size_t *n)
{
    *out = NULL;
    *n = 0;
    if (!json) return true;
    json_t *a = json_loads(json, 0, NULL);
    if (!json_is_array(a)) { json_decref(a); return false; }
    size_t k = json_array_size(a);
    char **v = calloc(k + 1, sizeof *v);
    bool ok = v != NULL;
    for (size_t i = 0; ok && i < k; i++) {
        const char *e = json_string_value(json_array_get(a, i));
        ok = e && (v[i] = strdup(e));
    }
    json_decref(a);
    if (!ok) { for (size_t i = 0; v && i < k; i++) free(v[i]); free(v); return false; }
    *out = v;
    *n = k;
    return true;
}

static char *json_of_strs(const char *const *v, size_t n)
{
    json_t *a = json_array();
    for (size_t i = 0; a && i < n; i++)
        if (json_array_append_new(a, json_string(v[i])) != 0) { json_decref(a); return NULL; }
    char *s = a ? json_dumps(a, JSON_COMPACT) : NULL;
    json_decref(a);
    return s;
}

/* Row i of r as a prompt; its columns start at column `at`, in C_* order (C_DICTS included). */
static tpl_store_status fill_row(tpl_store *s, db_res *r, size_t i, size_t at, tpl_store_prompt *p)
{
    memset(p, 0, sizeof *p);
    if (r->ncols < at + C_TPLB) return fail(s, TPL_STORE_IO, "store: a prompt row has %zu columns", r->ncols);
#define CELL(c) db_cell(r, i, at + (c))
    if (!CELL(C_ID) || !CELL(C_VERSION)) return fail(s, TPL_STORE_IO, "store: a prompt row has no id or version");
    p->id = strtoll(CELL(C_ID), NULL, 10);
    p->version = strtoll(CELL(C_VERSION), NULL, 10);
    syntax_parse(CELL(C_SYNTAX), &p->syntax);
    p->name = dup_cell(r, i, at + C_NAME);
    /* the source, which may be large, is moved out of the result (the caller frees the rest) */
    p->source_len = db_cell_len(r, i, at + C_SOURCE);
    p->source = r->cell[i * r->ncols + at + C_SOURCE];
    r->cell[i * r->ncols + at + C_SOURCE] = NULL;
    p->profile = dup_cell(r, i, at + C_PROFILE);
    p->lang = dup_cell(r, i, at + C_LANG);
    p->created_at = dup_cell(r, i, at + C_CREATED);
    p->removed = CELL(C_REMOVED) && strtol(CELL(C_REMOVED), NULL, 10) != 0;
    p->tplb_format = CELL(C_FORMAT) ? (int)strtol(CELL(C_FORMAT), NULL, 10) : 0;
    bool ok = p->name && p->source && p->created_at && (!CELL(C_PROFILE) || p->profile) && (!CELL(C_LANG) || p->lang);
    if (ok && (!str_array(CELL(C_TRKEYS), &p->tr_keys, &p->ntr_keys) ||
               !str_array(CELL(C_DICTS) ? CELL(C_DICTS) : "[]", &p->dicts, &p->ndicts))) {
        long long id = p->id; /* prompt_clear zeroes it */
        prompt_clear(p);
        return fail(s, TPL_STORE_IO, "store: row %lld has invalid tr_keys or bindings", id);
    }
#undef CELL
    if (!ok) { prompt_clear(p); return fail(s, TPL_STORE_NOMEM, "out of memory"); }
    return TPL_STORE_OK;
}

/* A parsed ref: kind 0 name (latest active), 1 name:N, 2 row id; with the condition selecting
 * its row from tpl_prompts p (for NAME: ordered and limited to the latest active version) and
 * that condition's parameters a[0..na), which point into the ref itself. */
typedef struct ref {
    int kind;
    char name[256];
    char num[24];
    char where[96];
    db_val a[2];
    size_t na;
} ref;

static void ref_where(ref *f)
{
    if (f->kind == 2) {
        snprintf(f->where, sizeof f->where, "WHERE p.id = ?");
        f->a[0] = txt(f->num);
        f->na = 1;
        return;
    }
    f->a[0] = txt(f->name);
    if (f->kind == 1) {
        snprintf(f->where, sizeof f->where, "WHERE p.name = ? AND p.version = ?");
        f->a[1] = txt(f->num);
        f->na = 2;
        return;
    }
    snprintf(f->where, sizeof f->where, "WHERE p.name = ? AND p.removed = 0 ORDER BY p.version DESC LIMIT 1");
    f->na = 1;
}

static tpl_store_status parse_ref(tpl_store *s, const char *text, ref *f)
{
    tpl_store_status st = check_text(s, "prompt reference", text, false);
    if (st) return st;
    size_t n = strlen(text);
    memset(f, 0, sizeof *f);
    if (all_digits(text, n)) {
        if (n > 18) return fail(s, TPL_STORE_NOT_FOUND, "no prompt with row id %s", text);
        f->kind = 2;
        memcpy(f->num, text, n);
        ref_where(f);
        return TPL_STORE_OK;
    }
    const char *colon = strrchr(text, ':');
    size_t nl = colon ? (size_t)(colon - text) : n;
    if (nl >= sizeof f->name) return fail(s, TPL_STORE_INVALID, "prompt name '%.40s...' is longer than 200 bytes", text);
    memcpy(f->name, text, nl);
    if ((st = check_name(s, "prompt name", f->name))) return st;
    if (colon) {
        const char *v = colon + 1;
        size_t vl = strlen(v);
        if (!all_digits(v, vl) || vl > 18 || strtoll(v, NULL, 10) < 1)
            return fail(s, TPL_STORE_INVALID, "'%s': a version is a number from 1 (NAME:N)", text);
        f->kind = 1;
        memcpy(f->num, v, vl);
    }
    ref_where(f);
    return TPL_STORE_OK;
}

static tpl_store_status ref_missing(tpl_store *s, const ref *f)
{
    if (f->kind == 2) return fail(s, TPL_STORE_NOT_FOUND, "no prompt with row id %s", f->num);
    if (f->kind == 1) return fail(s, TPL_STORE_NOT_FOUND, "prompt '%s' has no version %s", f->name, f->num);
    return fail(s, TPL_STORE_NOT_FOUND, "no prompt named '%s'", f->name);
}

/* The row a ref names with its bindings (C_* columns): one query. */
static tpl_store_status query_ref(tpl_store *s, const ref *f, db_res *r)
{
    char cols[640], sql[1024];
    row_cols(s, "p", cols, sizeof cols, false);
    snprintf(sql, sizeof sql, "SELECT %s FROM tpl_prompts p %s", cols, f->where);
    tpl_store_status st = run(s, sql, f->a, f->na, r);
    if (st) return st;
    if (r->nrows == 0) {
        db_res_free(r);
        return ref_missing(s, f);
    }
    return TPL_STORE_OK;
}

static tpl_store_status get_row(tpl_store *s, const char *text, tpl_store_prompt *p)
{
    ref f;
    tpl_store_status st = parse_ref(s, text, &f);
    if (st) return st;
    db_res r;
    if ((st = query_ref(s, &f, &r))) return st;
    st = fill_row(s, &r, 0, 0, p);
    db_res_free(&r);
    return st;
}

tpl_store_status tpl_store_get(tpl_store *s, const char *ref_text, tpl_store_prompt **out)
{
    if (!s || !out) return s ? fail(s, TPL_STORE_INVALID, "tpl_store_get: out is NULL") : TPL_STORE_INVALID;
    *out = NULL;
    tpl_store_prompt *p = calloc(1, sizeof *p);
    if (!p) return fail(s, TPL_STORE_NOMEM, "out of memory");
    tpl_store_status st = get_row(s, ref_text, p);
    if (st) { free(p); return st; }
    *out = p;
    s->msg[0] = 0;
    return TPL_STORE_OK;
}

void tpl_store_prompt_free(tpl_store_prompt *p)
{
    if (!p) return;
    prompt_clear(p);
    free(p);
}

void tpl_store_prompts_free(tpl_store_prompt *v, size_t n)
{
    if (!v) return;
    for (size_t i = 0; i < n; i++) prompt_clear(&v[i]);
    free(v);
}

static int by_name_version(const void *a, const void *b)
{
    const tpl_store_prompt *x = a, *y = b;
    int c = strcmp(x->name, y->name);
    return c ? c : (x->version > y->version) - (x->version < y->version);
}

static tpl_store_status rows_out(tpl_store *s, db_res *r, tpl_store_prompt **out, size_t *n)
{
    tpl_store_prompt *v = calloc(r->nrows + 1, sizeof *v);
    if (!v) { db_res_free(r); return fail(s, TPL_STORE_NOMEM, "out of memory"); }
    tpl_store_status st = TPL_STORE_OK;
    size_t k = 0;
    for (; k < r->nrows && !st; k++) st = fill_row(s, r, k, 0, &v[k]);
    db_res_free(r);
    if (st) { tpl_store_prompts_free(v, k); return st; }
    qsort(v, k, sizeof *v, by_name_version);
    *out = v;
    *n = k;
    s->msg[0] = 0;
    return TPL_STORE_OK;
}

tpl_store_status tpl_store_list(tpl_store *s, const char *prefix, tpl_store_prompt **out, size_t *n)
{
    if (!s || !out || !n) return s ? fail(s, TPL_STORE_INVALID, "tpl_store_list: out or n is NULL") : TPL_STORE_INVALID;
    *out = NULL;
    *n = 0;
    tpl_store_status st;
    if (prefix && *prefix && (st = check_text(s, "prefix", prefix, true))) return st;
    db_res r;
    db_val a[] = { txt(prefix ? prefix : ""), txt(prefix ? prefix : "") };
    char cols[640], sql[1024];
    row_cols(s, "p", cols, sizeof cols, false);
    snprintf(sql, sizeof sql, "SELECT %s FROM tpl_prompts p WHERE p.removed = 0 AND p.version = "
             "(SELECT MAX(q.version) FROM tpl_prompts q WHERE q.name = p.name AND q.removed = 0) "
             "AND substr(p.name, 1, length(CAST(? AS TEXT))) = CAST(? AS TEXT)", cols);
    st = run(s, sql, a, 2, &r);
    if (st) return st;
    return rows_out(s, &r, out, n);
}

tpl_store_status tpl_store_versions(tpl_store *s, const char *name, bool all, tpl_store_prompt **out, size_t *n)
{
    if (!s || !out || !n) return s ? fail(s, TPL_STORE_INVALID, "tpl_store_versions: out or n is NULL") : TPL_STORE_INVALID;
    *out = NULL;
    *n = 0;
    tpl_store_status st = check_name(s, "prompt name", name);
    if (st) return st;
    db_res r;
    db_val a[] = { txt(name) };
    char cols[640], sql[1024];
    row_cols(s, "p", cols, sizeof cols, false);
    snprintf(sql, sizeof sql, "SELECT %s FROM tpl_prompts p WHERE p.name = ?%s", cols, all ? "" : " AND p.removed = 0");
    st = run(s, sql, a, 1, &r);
    if (st) return st;
    if (!r.nrows) { db_res_free(&r); return fail(s, TPL_STORE_NOT_FOUND, "no prompt named '%s'", name); }
    return rows_out(s, &r, out, n);
}

static void now_utc(char buf[32])
{
    time_t t = time(NULL);
    struct tm tm;
    gmtime_r(&t, &tm);
    strftime(buf, 32, "%Y-%m-%dT%H:%M:%SZ", &tm);
}


/* The store loader: include/import/extends of "NAME", "NAME:N" or a row id compile the source of
 * the prompt that ref names now (the same rules as tpl_store_get; NULL: none, so the compile
 * fails with Jinja's/ERB's "template not found"). */
static char *store_loader(void *data, const char *name, size_t name_len, size_t *len)
{
    tpl_store *s = data;
    char ref[300];
    if (name_len >= sizeof ref || memchr(name, 0, name_len)) return NULL;
    memcpy(ref, name, name_len);
    ref[name_len] = 0;
    char keep[sizeof s->msg];
    memcpy(keep, s->msg, sizeof keep);
    tpl_store_prompt p;
    memset(&p, 0, sizeof p);
    char *src = NULL;
    if (get_row(s, ref, &p) == TPL_STORE_OK) {
        if ((src = malloc(p.source_len + 1))) {
            memcpy(src, p.source, p.source_len);
            src[p.source_len] = 0;
            *len = p.source_len;
        }
        prompt_clear(&p);
    }
    memcpy(s->msg, keep, sizeof keep);
    return src;
}

/* Compiles a row's source with its options; include/import/extends resolve from the store. */
static tpl_store_status compile_src(tpl_store *s, const char *file, const char *src, size_t len, tpl_syntax syntax,
                                    const char *profile, tpl_program **prog, tpl_error *err)
{
    tpl_options o;
    memset(&o, 0, sizeof o);
    o.loader = store_loader;
    o.loader_data = s;
    if (tpl_options_profile(&o, syntax, profile) != TPL_OK)
        return fail(s, TPL_STORE_INVALID, "profile '%s' does not apply to %s prompts", profile ? profile : "", syntax_name(syntax));
    tpl_error e = { 0 };
    tpl_status st = tpl_compile(file, src, len, &o, prog, &e);
    if (st == TPL_OK) return TPL_STORE_OK;
    if (st == TPL_ERR_NOMEM) { tpl_error_clear(&e); return fail(s, TPL_STORE_NOMEM, "out of memory"); }
    snprintf(s->msg, sizeof s->msg, "%s", e.message ? e.message : "the template does not compile");
    if (err) *err = e;
    else tpl_error_clear(&e);
    return TPL_STORE_TEMPLATE;
}

static void test_hold(void)
{
    /* Test hook (tests/store_cli.py): keep the create transaction open this many milliseconds
     * after its insert, so a test can kill the writer mid-transaction. */
    const char *h = getenv("TPL_STORE_TEST_HOLD_MS");
    if (h && *h) {
        long ms = strtol(h, NULL, 10);
        struct timespec ts = { ms / 1000, (ms % 1000) * 1000000L };
        if (ms > 0) nanosleep(&ts, NULL);
    }
}

tpl_store_status tpl_store_create(tpl_store *s, const tpl_store_new *nw, tpl_store_prompt **out, tpl_error *err)
{
    if (out) *out = NULL;
    if (!s || !nw) return s ? fail(s, TPL_STORE_INVALID, "tpl_store_create: nw is NULL") : TPL_STORE_INVALID;
    tpl_store_status st = check_name(s, "prompt name", nw->name);
    if (st) return st;
    if (!nw->source) return fail(s, TPL_STORE_INVALID, "prompt '%s' has no source", nw->name);
    if (nw->source_len > TPL_STORE_MAX_TEXT) {
        char what[260];
        snprintf(what, sizeof what, "the source of '%s'", nw->name);
        return too_long(s, what, nw->source_len);
    }
    if (!utf8_ok(nw->source, nw->source_len))
        return fail(s, TPL_STORE_INVALID, "the source of '%s' is not UTF-8 text (or has a NUL byte)", nw->name);
    if (nw->lang && (st = check_text(s, "language", nw->lang, false))) return st;
    if (nw->ntr_keys && !nw->tr_keys) return fail(s, TPL_STORE_INVALID, "tpl_store_create: tr_keys is NULL");
    for (size_t i = 0; i < nw->ntr_keys; i++)
        if ((st = check_text(s, "tr key", nw->tr_keys[i], false))) return st;
    tpl_program *prog = NULL;
    st = compile_src(s, nw->file ? nw->file : nw->name, nw->source, nw->source_len, nw->syntax, nw->profile, &prog, err);
    if (st) return st;
    void *bytes = NULL;
    size_t blen = 0;
    /* A prompt that includes, imports or extends others is not cached: each load compiles it
     * with the versions its refs name then (NAME: the latest active one). */
    bool composed = tpl_program_dependencies(prog, NULL, NULL, 0) > 0;
    tpl_status ts = composed ? TPL_OK : tpl_program_save(prog, 0, &bytes, &blen);
    tpl_program_free(prog);
    if (ts != TPL_OK) return fail(s, TPL_STORE_NOMEM, "out of memory");
    char *keys = json_of_strs(nw->tr_keys, nw->ntr_keys);
    if (!keys) { free(bytes); return fail(s, TPL_STORE_NOMEM, "out of memory"); }
    char created[32], fmt[16];
    now_utc(created);
    snprintf(fmt, sizeof fmt, "%d", composed ? 0 : TPL_TPLB_VERSION);
    /* One statement (one round trip): the next version number is computed in the INSERT, and the
     * new row comes back with its bindings. Two writers that computed the same number meet at
     * UNIQUE (name, version): the later one inserts nothing (it waits for the first to commit on
     * PostgreSQL; SQLite serialises the whole statement) and tries again with the next number. */
    char cols[640], sql[1536];
    row_cols(s, "tpl_prompts", cols, sizeof cols, false);
    snprintf(sql, sizeof sql,
             "INSERT INTO tpl_prompts (name, version, syntax, source, profile, tr_keys, lang, created_at, removed, "
             "tplb, tplb_format) VALUES (?, (SELECT COALESCE(MAX(q.version), 0) + 1 FROM tpl_prompts q WHERE q.name = ?), "
             "?, ?, ?, ?, ?, ?, 0, ?, ?) ON CONFLICT (name, version) DO NOTHING RETURNING %s", cols);
    db_val blob = { bytes ? DB_BLOB : DB_NULL, bytes, blen };
    db_val a[] = { txt(nw->name), txt(nw->name), txt(syntax_name(nw->syntax)), txtn(nw->source, nw->source_len),
                   txt(nw->profile), txt(keys), txt(nw->lang), txt(created), blob, txt(fmt) };
    const char *hold = getenv("TPL_STORE_TEST_HOLD_MS");
    bool held = hold && *hold; /* the test hook: an explicit transaction kept open after the insert */
    db_res r = { 0 };
    for (int attempt = 0; !st; attempt++) {
        if (attempt == 1000) { st = fail(s, TPL_STORE_IO, "store: no free version of '%s' after 1000 tries", nw->name); break; }
        if (held && (st = begin(s))) break;
        st = run(s, sql, a, sizeof a / sizeof *a, &r);
        if (held && !st) test_hold();
        if (held && !st) st = commit(s);
        if (held && st) { db_res_free(&r); st = rollback(s, st); }
        if (st || r.nrows) break;
        db_res_free(&r);
    }
    free(bytes);
    free(keys);
    if (st) return st;
    tpl_store_prompt *p = out ? calloc(1, sizeof *p) : NULL;
    if (out && !p) st = fail(s, TPL_STORE_NOMEM, "out of memory");
    if (p && !(st = fill_row(s, &r, 0, 0, p))) *out = p;
    else free(p);
    db_res_free(&r);
    if (!st) s->msg[0] = 0;
    return st;
}

tpl_store_status tpl_store_remove(tpl_store *s, const char *ref_text)
{
    if (!s) return TPL_STORE_INVALID;
    ref f;
    tpl_store_status st = parse_ref(s, ref_text, &f);
    if (st) return st;
    /* one statement; when it tombstones nothing, a second query says why */
    char sql[512];
    snprintf(sql, sizeof sql, "UPDATE tpl_prompts SET removed = 1 WHERE removed = 0 AND id = (SELECT p.id FROM tpl_prompts p %s) "
             "RETURNING id", f.where);
    db_res r;
    if ((st = run(s, sql, f.a, f.na, &r))) return st;
    size_t done = r.nrows;
    db_res_free(&r);
    if (!done) {
        if ((st = query_ref(s, &f, &r))) return st;
        db_res_free(&r);
        return fail(s, TPL_STORE_NOT_FOUND, "prompt '%s' is already removed", ref_text);
    }
    s->msg[0] = 0;
    return TPL_STORE_OK;
}

/* ---- translation rows ---- */

tpl_store_status tpl_store_tr_set(tpl_store *s, const char *dict, const char *lang, const char *source,
                                  const char *target, const char *plural, const char *const *forms, size_t nforms)
{
    if (!s) return TPL_STORE_INVALID;
    tpl_store_status st;
    if ((st = check_name(s, "dictionary", dict)) || (st = check_name(s, "language", lang)) ||
        (st = check_text(s, "source text", source, false)) || (st = check_text(s, "target text", target, true)))
        return st;
    if (plural && (st = check_text(s, "plural source text", plural, false))) return st;
    if (nforms && !forms) return fail(s, TPL_STORE_INVALID, "tpl_store_tr_set: forms is NULL");
    for (size_t i = 0; i < nforms; i++)
        if ((st = check_text(s, "plural form", forms[i], true))) return st;
    char *fj = NULL;
    if (plural && !(fj = json_of_strs(forms, nforms))) return fail(s, TPL_STORE_NOMEM, "out of memory");
    db_val a[] = { txt(dict), txt(lang), txt(source), txt(target), txt(plural), txt(fj) };
    st = run(s, "INSERT INTO tpl_tr (dict, lang, source, target, plural, forms) VALUES (?, ?, ?, ?, ?, ?) "
                "ON CONFLICT (dict, lang, source) DO UPDATE SET target = excluded.target, plural = excluded.plural, "
                "forms = excluded.forms", a, 6, NULL);
    free(fj);
    if (!st) s->msg[0] = 0;
    return st;
}

tpl_store_status tpl_store_prompt_tr_set(tpl_store *s, const char *name, const char *dict, const char *lang,
                                         const char *source, const char *target)
{
    if (!s) return TPL_STORE_INVALID;
    tpl_store_status st;
    if ((st = check_name(s, "prompt name", name))) return st;
    if (!dict) dict = name;
    if ((st = check_name(s, "dictionary", dict)) || (st = check_name(s, "language", lang)) ||
        (st = check_text(s, "source text", source, false)) || (st = check_text(s, "target text", target, true)))
        return st;
    db_val a[] = { txt(dict), txt(lang), txt(source), txt(target), txt(name) };
    db_res r;
    st = run(s, "INSERT INTO tpl_tr (dict, lang, source, target, plural, forms) SELECT CAST(? AS TEXT), CAST(? AS TEXT), "
                "CAST(? AS TEXT), CAST(? AS TEXT), NULL, NULL WHERE EXISTS (SELECT 1 FROM tpl_prompts WHERE name = ?) "
                "ON CONFLICT (dict, lang, source) DO UPDATE SET target = excluded.target, plural = excluded.plural, "
                "forms = excluded.forms RETURNING 1", a, 5, &r);
    if (st) return st;
    size_t done = r.nrows;
    db_res_free(&r);
    if (!done) return fail(s, TPL_STORE_NOT_FOUND, "no prompt named '%s'", name);
    s->msg[0] = 0;
    return TPL_STORE_OK;
}

/* The nplurals of a Plural-Forms header ("nplurals=3; plural=..."), 2 when it has none. */
static size_t nplurals_of(const char *pf)
{
    const char *p = pf ? strstr(pf, "nplurals") : NULL;
    if (!p) return 2;
    p += 8;
    while (*p == ' ' || *p == '\t') p++;
    if (*p != '=') return 2;
    long n = strtol(p + 1, NULL, 10);
    return n >= 1 && n <= 16 ? (size_t)n : 2;
}

static int by_entry_key(const void *a, const void *b)
{
    const tpl_store_pot_entry *x = a, *y = b;
    return strcmp(x->msgid, y->msgid);
}

tpl_store_status tpl_store_tr_add_untranslated(tpl_store *s, const char *dict, const char *lang,
                                               const tpl_store_pot_entry *e, size_t n, size_t *added)
{
    if (added) *added = 0;
    if (!s) return TPL_STORE_INVALID;
    tpl_store_status st;
    if ((st = check_name(s, "dictionary", dict)) || (st = check_name(s, "language", lang))) return st;
    if (n && !e) return fail(s, TPL_STORE_INVALID, "tpl_store_tr_add_untranslated: entries is NULL");
    /* the messages that have one, sorted by key, duplicates dropped */
    tpl_store_pot_entry *v = calloc(n + 1, sizeof *v);
    if (!v) return fail(s, TPL_STORE_NOMEM, "out of memory");
    size_t k = 0;
    bool any_plural = false;
    for (size_t i = 0; i < n; i++) {
        if (!e[i].msgid) continue;
        if ((st = check_text(s, "msgid", e[i].msgid, true)) || (e[i].context && (st = check_text(s, "msgctxt", e[i].context, true))) ||
            (e[i].plural && (st = check_text(s, "msgid_plural", e[i].plural, false)))) {
            free(v);
            return st;
        }
        /* msgid "" is the PO header's; a context message cannot be a row (the store's PO files
         * name the dictionary by msgctxt) */
        if (!*e[i].msgid || e[i].context) continue;
        v[k++] = e[i];
        any_plural = any_plural || e[i].plural;
    }
    qsort(v, k, sizeof *v, by_entry_key);
    size_t u = 0;
    for (size_t i = 0; i < k; i++)
        if (!u || by_entry_key(&v[u - 1], &v[i]) != 0) v[u++] = v[i];
    k = u;
    /* plural rows get as many empty forms as the language's recorded Plural-Forms says (2 without one) */
    char *pf = NULL, *forms = NULL;
    if (any_plural && (st = tpl_store_plural_forms(s, dict, lang, &pf))) { free(v); return st; }
    size_t np = nplurals_of(pf);
    free(pf);
    if (any_plural) {
        const char **empty = calloc(np, sizeof *empty);
        for (size_t i = 0; empty && i < np; i++) empty[i] = "";
        forms = empty ? json_of_strs(empty, np) : NULL;
        free(empty);
        if (!forms) { free(v); return fail(s, TPL_STORE_NOMEM, "out of memory"); }
    }
    /* one INSERT per 200 messages (one round trip for most prompts), rows that exist kept */
    enum { CHUNK = 200 };
    char *sql = malloc(256 + CHUNK * 24);
    db_val *a = calloc(CHUNK * 6 + 1, sizeof *a);
    if (!sql || !a) st = fail(s, TPL_STORE_NOMEM, "out of memory");
    bool tx = !st && k > CHUNK;
    if (tx && (st = begin(s))) tx = false;
    size_t total = 0;
    for (size_t at = 0; !st && at < k; at += CHUNK) {
        size_t m = k - at < CHUNK ? k - at : CHUNK, o = 0;
        o += (size_t)sprintf(sql + o, "INSERT INTO tpl_tr (dict, lang, source, target, plural, forms) VALUES ");
        for (size_t i = 0; i < m; i++) {
            o += (size_t)sprintf(sql + o, "%s(?, ?, ?, '', ?, ?)", i ? ", " : "");
            const tpl_store_pot_entry *x = &v[at + i];
            a[i * 5] = txt(dict), a[i * 5 + 1] = txt(lang), a[i * 5 + 2] = txt(x->msgid);
            a[i * 5 + 3] = txt(x->plural), a[i * 5 + 4] = txt(x->plural ? forms : NULL);
        }
        sprintf(sql + o, " ON CONFLICT (dict, lang, source) DO NOTHING RETURNING 1");
        db_res r;
        if ((st = run(s, sql, a, m * 5, &r))) break;
        total += r.nrows;
        db_res_free(&r);
    }
    if (tx) st = st ? rollback(s, st) : commit(s) ? rollback(s, TPL_STORE_IO) : TPL_STORE_OK;
    free(sql);
    free(a);
    free(forms);
    free(v);
    if (st) return st;
    if (added) *added = total;
    s->msg[0] = 0;
    return TPL_STORE_OK;
}

tpl_store_status tpl_store_tr_delete(tpl_store *s, const char *dict, const char *lang, const char *source)
{
    if (!s) return TPL_STORE_INVALID;
    tpl_store_status st;
    if ((st = check_text(s, "dictionary", dict, false)) || (st = check_text(s, "language", lang, false)) ||
        (st = check_text(s, "source text", source, false)))
        return st;
    db_val a[] = { txt(dict), txt(lang), txt(source) };
    db_res r;
    if ((st = run(s, "SELECT 1 FROM tpl_tr WHERE dict = ? AND lang = ? AND source = ?", a, 3, &r))) return st;
    size_t found = r.nrows;
    db_res_free(&r);
    if (!found) return fail(s, TPL_STORE_NOT_FOUND, "dictionary '%s' has no %s row for '%s'", dict, lang, source);
    st = run(s, "DELETE FROM tpl_tr WHERE dict = ? AND lang = ? AND source = ?", a, 3, NULL);
    if (!st) s->msg[0] = 0;
    return st;
}

static void tr_clear(tpl_store_tr *t)
{
    free(t->dict); free(t->lang); free(t->source); free(t->target); free(t->plural);
    for (size_t i = 0; i < t->nforms; i++) free(t->forms[i]);
    free(t->forms);
}

void tpl_store_trs_free(tpl_store_tr *v, size_t n)
{
    if (!v) return;
    for (size_t i = 0; i < n; i++) tr_clear(&v[i]);
    free(v);
}

static int by_lang_source(const void *a, const void *b)
{
    const tpl_store_tr *x = a, *y = b;
    int c = strcmp(x->lang, y->lang);
    return c ? c : strcmp(x->source, y->source);
}

tpl_store_status tpl_store_tr_list(tpl_store *s, const char *const *dicts, size_t ndicts, const char *lang,
                                   tpl_store_tr **out, size_t *n)
{
    if (!s || !out || !n) return s ? fail(s, TPL_STORE_INVALID, "tpl_store_tr_list: out or n is NULL") : TPL_STORE_INVALID;
    *out = NULL;
    *n = 0;
    tpl_store_tr *v = NULL;
    size_t k = 0;
    tpl_store_status st = TPL_STORE_OK;
    if (ndicts && !dicts) return fail(s, TPL_STORE_INVALID, "tpl_store_tr_list: dicts is NULL");
    for (size_t d = 0; d < ndicts; d++)
        if ((st = check_text(s, "dictionary", dicts[d], true))) return st;
    if (lang && (st = check_text(s, "language", lang, true))) return st;
    for (size_t d = 0; d < ndicts && !st; d++) {
        db_val a[] = { txt(dicts[d]), txt(lang) };
        db_res r;
        st = run(s, lang ? "SELECT dict, lang, source, target, plural, forms FROM tpl_tr WHERE dict = ? AND lang = ?"
                         : "SELECT dict, lang, source, target, plural, forms FROM tpl_tr WHERE dict = ?",
                 a, lang ? 2 : 1, &r);
        if (st) break;
        tpl_store_tr *nv = realloc(v, (k + r.nrows + 1) * sizeof *v);
        if (!nv) { db_res_free(&r); st = fail(s, TPL_STORE_NOMEM, "out of memory"); break; }
        v = nv;
        size_t first = k;
        for (size_t i = 0; i < r.nrows; i++) {
            tpl_store_tr *t = &v[k++];
            memset(t, 0, sizeof *t);
            t->dict = dup_cell(&r, i, 0);
            t->lang = dup_cell(&r, i, 1);
            t->source = dup_cell(&r, i, 2);
            t->target = dup_cell(&r, i, 3);
            t->plural = dup_cell(&r, i, 4);
            if (!t->dict || !t->lang || !t->source || !t->target || (db_cell(&r, i, 4) && !t->plural) ||
                !str_array(db_cell(&r, i, 5), &t->forms, &t->nforms)) {
                st = fail(s, TPL_STORE_NOMEM, "out of memory");
                break;
            }
        }
        db_res_free(&r);
        if (!st) qsort(v + first, k - first, sizeof *v, by_lang_source);
    }
    if (st) { tpl_store_trs_free(v, k); return st; }
    *out = v;
    *n = k;
    s->msg[0] = 0;
    return TPL_STORE_OK;
}

tpl_store_status tpl_store_plural_forms(tpl_store *s, const char *dict, const char *lang, char **out)
{
    if (!s || !out) return s ? fail(s, TPL_STORE_INVALID, "tpl_store_plural_forms: out is NULL") : TPL_STORE_INVALID;
    *out = NULL;
    tpl_store_status st0;
    if ((st0 = check_text(s, "dictionary", dict, true)) || (st0 = check_text(s, "language", lang, true))) return st0;
    db_val a[] = { txt(dict), txt(lang) };
    db_res r;
    tpl_store_status st = run(s, "SELECT plural_forms FROM tpl_tr_langs WHERE dict = ? AND lang = ?", a, 2, &r);
    if (st) return st;
    if (r.nrows && db_cell(&r, 0, 0) && !(*out = dup_cell(&r, 0, 0))) st = fail(s, TPL_STORE_NOMEM, "out of memory");
    db_res_free(&r);
    return st;
}

tpl_store_status tpl_store_set_plural_forms(tpl_store *s, const char *dict, const char *lang, const char *pf)
{
    if (!s) return TPL_STORE_INVALID;
    tpl_store_status st;
    if ((st = check_name(s, "dictionary", dict)) || (st = check_name(s, "language", lang))) return st;
    if (pf && (st = check_text(s, "Plural-Forms", pf, true))) return st;
    db_val a[] = { txt(dict), txt(lang), txt(pf) };
    return run(s, "INSERT INTO tpl_tr_langs (dict, lang, plural_forms) VALUES (?, ?, ?) "
                  "ON CONFLICT (dict, lang) DO UPDATE SET plural_forms = excluded.plural_forms", a, 3, NULL);
}

tpl_store_status tpl_store_bind(tpl_store *s, const char *name, const char *dict)
{
    if (!s) return TPL_STORE_INVALID;
    tpl_store_status st;
    if ((st = check_name(s, "prompt name", name)) || (st = check_name(s, "dictionary", dict))) return st;
    if ((st = begin(s))) return st;
    db_val a[] = { txt(name), txt(dict) };
    db_res r;
    if ((st = run(s, "SELECT 1 FROM tpl_prompts WHERE name = ? LIMIT 1", a, 1, &r))) return rollback(s, st);
    size_t exists = r.nrows;
    db_res_free(&r);
    if (!exists) return rollback(s, fail(s, TPL_STORE_NOT_FOUND, "no prompt named '%s'", name));
    if ((st = run(s, "SELECT 1 FROM tpl_binds WHERE name = ? AND dict = ?", a, 2, &r))) return rollback(s, st);
    size_t bound = r.nrows;
    db_res_free(&r);
    if (!bound)
        st = run(s, "INSERT INTO tpl_binds (name, dict, pos) VALUES (?, ?, "
                    "(SELECT COALESCE(MAX(pos), 0) + 1 FROM tpl_binds WHERE name = ?))",
                 (db_val[]){ txt(name), txt(dict), txt(name) }, 3, NULL);
    if (st) return rollback(s, st);
    if ((st = commit(s))) return rollback(s, st);
    s->msg[0] = 0;
    return TPL_STORE_OK;
}

tpl_store_status tpl_store_unbind(tpl_store *s, const char *name, const char *dict)
{
    if (!s) return TPL_STORE_INVALID;
    tpl_store_status st;
    if ((st = check_name(s, "prompt name", name)) || (st = check_name(s, "dictionary", dict))) return st;
    if ((st = begin(s))) return st;
    db_val a[] = { txt(name), txt(dict) };
    db_res r;
    if ((st = run(s, "SELECT 1 FROM tpl_binds WHERE name = ? AND dict = ?", a, 2, &r))) return rollback(s, st);
    size_t bound = r.nrows;
    db_res_free(&r);
    if (!bound) return rollback(s, fail(s, TPL_STORE_NOT_FOUND, "prompt '%s' does not bind dictionary '%s'", name, dict));
    if ((st = run(s, "DELETE FROM tpl_binds WHERE name = ? AND dict = ?", a, 2, NULL))) return rollback(s, st);
    if ((st = commit(s))) return rollback(s, st);
    s->msg[0] = 0;
    return TPL_STORE_OK;
}

/* ---- load for rendering ---- */

/* A translation row of a load's result, for sorting. */
typedef struct trow { const char *dict, *lang, *source; size_t row; } trow;

static int by_dict_lang_source(const void *a, const void *b)
{
    const trow *x = a, *y = b;
    int c = strcmp(x->dict, y->dict);
    if (!c) c = strcmp(x->lang, y->lang);
    return c ? c : strcmp(x->source, y->source);
}

/* The catalogs of a load (one finished tpl_catalog per dictionary, in lookup order:
 * dicts[0..nd)) from the load query's rows of kind 't' (dict, lang, source, target, plural,
 * forms) and 'f' (dict, lang, plural_forms), added row by row (no JSON text on the way: 200,000
 * rows were 3.4 G instructions of building, writing and parsing JSON). A plural row's target is
 * the list of its forms (ngettext picks one); a language of a dictionary with plural rows whose
 * Plural-Forms a PO import recorded gets the gettext header row "" ("Plural-Forms: ...\n") its
 * plural forms are chosen by (stdlib/tr.c), unless the dictionary has a "" row of its own. */
static tpl_store_status build_catalogs(tpl_store *s, const db_res *r, const char *const *dicts, size_t nd,
                                       tpl_store_loaded *l)
{
    json_t **langs = calloc(nd, sizeof *langs); /* per catalog: lang -> whether it has a "" row */
    bool *plural = calloc(nd, 1);
    l->tr_catalogs = calloc(nd, sizeof *l->tr_catalogs);
    bool ok = langs && plural && l->tr_catalogs, bad = false;
    for (size_t c = 0; ok && c < nd; c++) {
        ok = (langs[c] = json_object()) && (l->tr_catalogs[c] = tpl_catalog_new());
        if (l->tr_catalogs[c]) l->ncatalogs = c + 1;
    }
    /* rows by dictionary, language and source: a deterministic order (tpl_store_loaded_json) */
    size_t nt = 0, k = 0;
    for (size_t i = 0; i < r->nrows; i++) nt += db_cell(r, i, 0) && db_cell(r, i, 0)[0] == 't';
    trow *rows = calloc(nt + 1, sizeof *rows);
    ok = ok && rows;
    for (size_t i = 0; ok && i < r->nrows; i++) {
        const char *kind = db_cell(r, i, 0);
        if (!kind || kind[0] != 't') continue;
        if (!db_cell(r, i, 1) || !db_cell(r, i, 2) || !db_cell(r, i, 3) || !db_cell(r, i, 4)) { bad = true; break; }
        rows[k++] = (trow){ db_cell(r, i, 1), db_cell(r, i, 2), db_cell(r, i, 3), i };
    }
    if (ok && !bad) qsort(rows, k, sizeof *rows, by_dict_lang_source);
    tpl_status ts = TPL_OK;
    for (size_t j = 0; ok && !bad && j < k; j++) {
        size_t i = rows[j].row;
        const char *dict = db_cell(r, i, 1), *lang = db_cell(r, i, 2), *src = db_cell(r, i, 3), *tgt = db_cell(r, i, 4);
        const char *forms = db_cell(r, i, 6);
        bool pl = db_cell(r, i, 5) != NULL, untranslated = !*tgt;
        json_t *fv = NULL;
        if (pl && forms) {
            fv = json_loads(forms, 0, NULL);
            if (!json_is_array(fv)) { json_decref(fv); bad = true; break; }
            if (!json_array_size(fv)) { json_decref(fv); fv = NULL; }
            for (size_t f = 0; fv && f < json_array_size(fv); f++) {
                const char *fs = json_string_value(json_array_get(fv, f));
                if (!fs) bad = true;
                else if (*fs) untranslated = false;
            }
        }
        /* an untranslated row (target "", every plural form "": tr-extract's rows, msgfmt leaves
         * them out of a .mo too) is not in the catalog: the source text stays */
        for (size_t c = 0; ok && !bad && !untranslated && c < nd; c++) {
            if (strcmp(dicts[c], dict) != 0) continue;
            plural[c] = plural[c] || pl;
            json_t *seen = json_object_get(langs[c], lang);
            if (!seen || (!*src && !json_is_true(seen)))
                ok = json_object_set_new(langs[c], lang, json_boolean(!*src)) == 0;
            if (fv) {
                size_t nf = json_array_size(fv);
                const char **fs = malloc(nf * sizeof *fs);
                size_t *fl = malloc(nf * sizeof *fl);
                if (!fs || !fl) ok = false;
                for (size_t f = 0; ok && f < nf; f++) {
                    fs[f] = json_string_value(json_array_get(fv, f));
                    fl[f] = json_string_length(json_array_get(fv, f));
                }
                if (ok) ts = tpl_catalog_add_forms(l->tr_catalogs[c], lang, src, strlen(src), fs, fl, nf);
                free(fs);
                free(fl);
            } else {
                ts = tpl_catalog_add(l->tr_catalogs[c], lang, src, strlen(src), tgt, db_cell_len(r, i, 4));
            }
            if (ts == TPL_ERR_NOMEM) ok = false;
            else if (ts != TPL_OK) bad = true;
        }
        json_decref(fv);
    }
    for (size_t i = 0; ok && !bad && i < r->nrows; i++) {
        const char *kind = db_cell(r, i, 0), *dict = db_cell(r, i, 1), *lang = db_cell(r, i, 2), *pf = db_cell(r, i, 3);
        if (!kind || kind[0] != 'f' || !dict || !lang || !pf) continue;
        for (size_t c = 0; ok && !bad && c < nd; c++) {
            json_t *seen = plural[c] && strcmp(dicts[c], dict) == 0 ? json_object_get(langs[c], lang) : NULL;
            if (!seen || json_is_true(seen)) continue;
            size_t fl = strlen(pf);
            char *hdr = malloc(fl + 16);
            if (!hdr) { ok = false; break; }
            int hl = snprintf(hdr, fl + 16, "Plural-Forms: %s\n", pf);
            ts = tpl_catalog_add(l->tr_catalogs[c], lang, "", 0, hdr, (size_t)hl);
            free(hdr);
            if (ts == TPL_ERR_NOMEM) ok = false;
            else if (ts != TPL_OK) bad = true;
            else ok = json_object_set_new(langs[c], lang, json_true()) == 0;
        }
    }
    for (size_t c = 0; ok && !bad && c < nd; c++) {
        ts = tpl_catalog_finish(l->tr_catalogs[c]);
        ok = ts == TPL_OK;
    }
    for (size_t c = 0; langs && c < nd; c++) json_decref(langs[c]);
    free(langs);
    free(rows);
    free(plural);
    if (bad) return fail(s, TPL_STORE_IO, "store: a translation row of '%s' is malformed", l->prompt.name);
    return ok ? TPL_STORE_OK : fail(s, TPL_STORE_NOMEM, "out of memory");
}

tpl_store_status tpl_store_loaded_json(tpl_store_loaded *l)
{
    if (!l) return TPL_STORE_INVALID;
    if (l->catalogs) return TPL_STORE_OK;
    char **cats = calloc(l->ncatalogs + 1, sizeof *cats);
    size_t *lens = calloc(l->ncatalogs + 1, sizeof *lens);
    bool ok = cats && lens;
    for (size_t c = 0; ok && c < l->ncatalogs; c++) ok = tpl_catalog_json(l->tr_catalogs[c], &cats[c], &lens[c]) == TPL_OK;
    if (!ok) {
        for (size_t c = 0; cats && c < l->ncatalogs; c++) free(cats[c]);
        free(cats);
        free(lens);
        return TPL_STORE_NOMEM;
    }
    l->catalogs = cats;
    l->catalog_lens = lens;
    return TPL_STORE_OK;
}

tpl_store_status tpl_store_load(tpl_store *s, const char *ref_text, tpl_store_loaded **out, tpl_error *err)
{
    if (!s || !out) return s ? fail(s, TPL_STORE_INVALID, "tpl_store_load: out is NULL") : TPL_STORE_INVALID;
    *out = NULL;
    ref f;
    tpl_store_status st = parse_ref(s, ref_text, &f);
    if (st) return st;
    /* One query (one round trip): the row (kind '0': its columns from 1 on, bindings and .tplb
     * included), the translation rows of its own and bound dictionaries (kind 't') and their
     * Plural-Forms (kind 'f'). A stale .tplb adds an UPDATE caching the recompiled program; a
     * composed prompt adds a query per prompt it includes, imports or extends. */
    char sql[3072];
    /* the bindings and the .tplb of the row (row_cols' tail after its C_FORMAT columns) */
    char tail[400];
    int tk = snprintf(tail, sizeof tail, s->d->dicts_json, "p.name");
    snprintf(tail + tk, sizeof tail - (size_t)tk, ", p.tplb");
    /* (k and d are materialized: each is read more than once, and k's row, whose .tplb may be
     * large, is read once, in the first branch) */
    snprintf(sql, sizeof sql,
             "WITH k (id, name) AS MATERIALIZED (SELECT p.id, p.name FROM tpl_prompts p %s), "
             "d (dict) AS MATERIALIZED (SELECT k.name FROM k UNION SELECT b.dict FROM tpl_binds b, k WHERE b.name = k.name) "
             "SELECT '0', CAST(p.id AS TEXT), p.name, CAST(p.version AS TEXT), p.syntax, p.source, p.profile, "
             "p.tr_keys, p.lang, p.created_at, p.removed, p.tplb_format, %s FROM tpl_prompts p, k WHERE p.id = k.id "
             "UNION ALL SELECT 't', t.dict, t.lang, t.source, t.target, t.plural, t.forms, NULL, NULL, NULL, NULL, NULL, NULL, "
             "NULL FROM tpl_tr t, d WHERE t.dict = d.dict "
             "UNION ALL SELECT 'f', l.dict, l.lang, l.plural_forms, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL "
             "FROM tpl_tr_langs l, d WHERE l.dict = d.dict AND l.plural_forms IS NOT NULL",
             f.where, tail);
    db_res r;
    if ((st = run(s, sql, f.a, f.na, &r))) return st;
    size_t row0 = r.nrows;
    for (size_t i = 0; i < r.nrows && row0 == r.nrows; i++)
        if (db_cell(&r, i, 0) && db_cell(&r, i, 0)[0] == '0') row0 = i;
    if (row0 == r.nrows) { db_res_free(&r); return ref_missing(s, &f); }
    tpl_store_loaded *l = calloc(1, sizeof *l);
    if (!l) { db_res_free(&r); return fail(s, TPL_STORE_NOMEM, "out of memory"); }
    if ((st = fill_row(s, &r, row0, 1, &l->prompt))) { db_res_free(&r); free(l); return st; }
    char file[300];
    snprintf(file, sizeof file, "%s:%lld", l->prompt.name, (long long)l->prompt.version);
    const char *tplb = db_cell(&r, row0, 1 + C_TPLB);
    if (tplb && l->prompt.tplb_format == TPL_TPLB_VERSION &&
        tpl_program_load(file, tplb, db_cell_len(&r, row0, 1 + C_TPLB), &l->program, NULL) != TPL_OK)
        l->program = NULL;
    /* lookup order: the own dictionary, then the bound ones */
    size_t nd = 1 + l->prompt.ndicts;
    const char **dicts = calloc(nd, sizeof *dicts);
    if (!dicts) st = fail(s, TPL_STORE_NOMEM, "out of memory");
    for (size_t i = 0; dicts && i < nd; i++) dicts[i] = i ? l->prompt.dicts[i - 1] : l->prompt.name;
    if (!st) st = build_catalogs(s, &r, dicts, nd, l);
    free(dicts);
    db_res_free(&r);
    if (st) { tpl_store_loaded_free(l); return st; }
    if (!l->program) {
        /* No cached program for this tpl's format (or it fails verification): recompile and
         * cache it back (best effort: a read-only store still renders). */
        st = compile_src(s, file, l->prompt.source, l->prompt.source_len, l->prompt.syntax, l->prompt.profile,
                         &l->program, err);
        if (st) { tpl_store_loaded_free(l); return st; }
        void *bytes;
        size_t blen;
        if (tpl_program_dependencies(l->program, NULL, NULL, 0) == 0 && tpl_program_save(l->program, 0, &bytes, &blen) == TPL_OK) {
            char id[32], fmt[16];
            snprintf(id, sizeof id, "%lld", (long long)l->prompt.id);
            snprintf(fmt, sizeof fmt, "%d", TPL_TPLB_VERSION);
            db_val blob = { DB_BLOB, bytes, blen };
            db_val u[] = { blob, txt(fmt), txt(id) };
            if (run(s, "UPDATE tpl_prompts SET tplb = ?, tplb_format = ? WHERE id = ?", u, 3, NULL) == TPL_STORE_OK)
                l->prompt.tplb_format = TPL_TPLB_VERSION;
            free(bytes);
        }
    }
    *out = l;
    s->msg[0] = 0;
    return TPL_STORE_OK;
}

void tpl_store_loaded_free(tpl_store_loaded *l)
{
    if (!l) return;
    prompt_clear(&l->prompt);
    tpl_program_free(l->program);
    for (size_t i = 0; l->catalogs && i < l->ncatalogs; i++) free(l->catalogs[i]);
    free(l->catalogs);
    free(l->catalog_lens);
    for (size_t i = 0; l->tr_catalogs && i < l->ncatalogs; i++) tpl_catalog_free(l->tr_catalogs[i]);
    free(l->tr_catalogs);
    free(l);
}

tpl_status tpl_store_apply(const tpl_store_loaded *l, tpl_render *r, const char *lang, const char *fallback_lang)
{
    if (!l || !r) return TPL_ERR_USAGE;
    tpl_render_clear_catalogs(r);
    tpl_render_clear_tr_keys(r);
    tpl_status st;
    for (size_t i = 0; i < l->ncatalogs; i++)
        if ((st = tpl_render_add_catalog(r, l->tr_catalogs[i])) != TPL_OK) return st;
    for (size_t i = 0; i < l->prompt.ntr_keys; i++)
        if ((st = tpl_render_add_tr_key(r, l->prompt.tr_keys[i], strlen(l->prompt.tr_keys[i]))) != TPL_OK) return st;
    const char *use = lang && *lang ? lang : l->prompt.lang && *l->prompt.lang ? l->prompt.lang
                    : fallback_lang && *fallback_lang ? fallback_lang : NULL;
    return tpl_render_set_lang(r, use);
}
