/* The SQLite backend of the store (Debian's libsqlite3): a file per store, writers serialised by
 * BEGIN IMMEDIATE with a busy timeout, the rollback journal keeping a killed writer's
 * transaction out of the file. A file that is not a database (or is corrupt) fails the first
 * statement with SQLite's own message; SQLite never crashes on it. libsqlite3 is dlopen'd when a
 * store is opened (db_dl.c), not linked: binding its symbols cost every tplc start ~1.5M
 * instructions. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sqlite3.h>
#include "db.h"

#define NCACHE 16

#define SQ_LIB "libsqlite3.so.0"
#define SQ_FUNCS(X) \
    X(int, sqlite3_open_v2, (const char *, sqlite3 **, int, const char *)) \
    X(int, sqlite3_close_v2, (sqlite3 *)) \
    X(int, sqlite3_busy_timeout, (sqlite3 *, int)) \
    X(int, sqlite3_extended_result_codes, (sqlite3 *, int)) \
    X(const char *, sqlite3_errmsg, (sqlite3 *)) \
    X(const char *, sqlite3_errstr, (int)) \
    X(int, sqlite3_prepare_v3, (sqlite3 *, const char *, int, unsigned int, sqlite3_stmt **, const char **)) \
    X(int, sqlite3_reset, (sqlite3_stmt *)) \
    X(int, sqlite3_clear_bindings, (sqlite3_stmt *)) \
    X(int, sqlite3_finalize, (sqlite3_stmt *)) \
    X(int, sqlite3_bind_null, (sqlite3_stmt *, int)) \
    X(int, sqlite3_bind_blob64, (sqlite3_stmt *, int, const void *, sqlite3_uint64, void (*)(void *))) \
    X(int, sqlite3_bind_text64, (sqlite3_stmt *, int, const char *, sqlite3_uint64, void (*)(void *), unsigned char)) \
    X(int, sqlite3_step, (sqlite3_stmt *)) \
    X(int, sqlite3_column_count, (sqlite3_stmt *)) \
    X(int, sqlite3_column_type, (sqlite3_stmt *, int)) \
    X(const void *, sqlite3_column_blob, (sqlite3_stmt *, int)) \
    X(const unsigned char *, sqlite3_column_text, (sqlite3_stmt *, int)) \
    X(int, sqlite3_column_bytes, (sqlite3_stmt *, int))

typedef struct sq_api {
    void *lib; /* dlopen's handle */
    SQ_FUNCS(DB_DL_FIELD)
} sq_api;

typedef struct sq {
    db base;
    sq_api api;
    sqlite3 *h;
    /* prepared statements kept for reuse, by SQL text (the store runs a few dozen distinct ones) */
    struct { char *sql; sqlite3_stmt *st; } cache[NCACHE];
    unsigned next;          /* the slot replaced next when the cache is full */
} sq;

/* A prepared statement for sql: a cached one (reset, bindings cleared) or a new one (cached). */
static int prepare(sq *q, const char *sql, sqlite3_stmt **st)
{
    for (unsigned i = 0; i < NCACHE; i++)
        if (q->cache[i].sql && strcmp(q->cache[i].sql, sql) == 0) {
            *st = q->cache[i].st;
            q->api.sqlite3_reset(*st);
            q->api.sqlite3_clear_bindings(*st);
            return SQLITE_OK;
        }
    int rc = q->api.sqlite3_prepare_v3(q->h, sql, -1, SQLITE_PREPARE_PERSISTENT, st, NULL);
    if (rc != SQLITE_OK) return rc;
    char *copy = strdup(sql);
    if (!copy) return SQLITE_OK; /* used once, not cached: finalized by the caller */
    unsigned k = q->next++ % NCACHE;
    free(q->cache[k].sql);
    q->api.sqlite3_finalize(q->cache[k].st);
    q->cache[k].sql = copy;
    q->cache[k].st = *st;
    return SQLITE_OK;
}

static bool cached(const sq *q, const sqlite3_stmt *st)
{
    for (unsigned i = 0; i < NCACHE; i++) if (q->cache[i].st == st) return true;
    return false;
}

static const char *const schema_v1[] = DB_SCHEMA_V1("INTEGER PRIMARY KEY AUTOINCREMENT", "INTEGER", "BLOB");

static void set_msg(char *msg, size_t cap, const char *s)
{
    snprintf(msg, cap, "%s", s);
}

static int sq_exec(db *d, const char *sql, const db_val *params, size_t n, db_res *res, char *msg, size_t cap)
{
    sq *q = (sq *)d;
    sqlite3_stmt *st = NULL;
    if (res) memset(res, 0, sizeof *res);
    int rc = prepare(q, sql, &st);
    if (rc != SQLITE_OK) {
        set_msg(msg, cap, q->api.sqlite3_errmsg(q->h));
        return rc == SQLITE_NOMEM ? DB_NOMEM : DB_FAIL;
    }
    /* SQLITE_STATIC: the parameters are the caller's and outlive the statement's use (it is reset
     * and its bindings cleared before returning), so a large row is not copied once more */
    for (size_t i = 0; i < n && rc == SQLITE_OK; i++) {
        int k = (int)i + 1;
        if (params[i].kind == DB_NULL) rc = q->api.sqlite3_bind_null(st, k);
        else if (params[i].kind == DB_BLOB) rc = q->api.sqlite3_bind_blob64(st, k, params[i].p, params[i].len, SQLITE_STATIC);
        else rc = q->api.sqlite3_bind_text64(st, k, params[i].p, params[i].len, SQLITE_STATIC, SQLITE_UTF8);
    }
    if (rc != SQLITE_OK) {
        set_msg(msg, cap, q->api.sqlite3_errmsg(q->h));
        if (cached(q, st)) { q->api.sqlite3_reset(st); q->api.sqlite3_clear_bindings(st); }
        else q->api.sqlite3_finalize(st);
        return DB_FAIL;
    }
    size_t ncols = (size_t)q->api.sqlite3_column_count(st), cap_rows = 0;
    int err = DB_OK;
    for (;;) {
        rc = q->api.sqlite3_step(st);
        if (rc == SQLITE_DONE) break;
        if (rc != SQLITE_ROW) {
            set_msg(msg, cap, q->api.sqlite3_errmsg(q->h));
            err = rc == SQLITE_NOMEM ? DB_NOMEM : DB_FAIL;
            break;
        }
        if (!res) continue;
        if (res->nrows == cap_rows) {
            size_t nc = cap_rows ? cap_rows * 2 : 8;
            char **c = realloc(res->cell, nc * ncols * sizeof *c + 1);
            if (c) res->cell = c;
            size_t *l = c ? realloc(res->len, nc * ncols * sizeof *l + 1) : NULL;
            if (l) res->len = l;
            if (!c || !l) { set_msg(msg, cap, "out of memory"); err = DB_NOMEM; break; }
            cap_rows = nc;
        }
        res->ncols = ncols;
        size_t base = res->nrows * ncols;
        for (size_t c = 0; c < ncols; c++) res->cell[base + c] = NULL, res->len[base + c] = 0;
        res->nrows++;
        for (size_t c = 0; c < ncols; c++) {
            int t = q->api.sqlite3_column_type(st, (int)c);
            if (t == SQLITE_NULL) continue;
            const void *p = t == SQLITE_BLOB ? q->api.sqlite3_column_blob(st, (int)c) : (const void *)q->api.sqlite3_column_text(st, (int)c);
            size_t len = (size_t)q->api.sqlite3_column_bytes(st, (int)c);
            char *v = malloc(len + 1);
            if (!v) { set_msg(msg, cap, "out of memory"); err = DB_NOMEM; break; }
            if (len) memcpy(v, p, len);
            v[len] = 0;
            res->cell[base + c] = v;
            res->len[base + c] = len;
        }
        if (err) break;
    }
    /* a cached statement is reset (its locks released) now, not at its next use */
    if (cached(q, st)) { q->api.sqlite3_reset(st); q->api.sqlite3_clear_bindings(st); }
    else q->api.sqlite3_finalize(st);
    if (err && res) db_res_free(res);
    if (res) res->ncols = ncols;
    return err;
}

static void sq_close(db *d)
{
    sq *q = (sq *)d;
    if (!q) return;
    for (unsigned i = 0; i < NCACHE; i++) {
        q->api.sqlite3_finalize(q->cache[i].st);
        free(q->cache[i].sql);
    }
    q->api.sqlite3_close_v2(q->h);
    free(q);
}

/* Loads libsqlite3 into api; false with msg filled when it or one of its functions is missing. */
static bool load_sqlite(sq_api *api, char *msg, size_t cap)
{
    const char *soname = SQ_LIB;
    api->lib = db_dl_open(soname, "a store needs libsqlite3 (Debian package libsqlite3-0)", msg, cap);
    if (!api->lib) return false;
    SQ_FUNCS(DB_DL_LOAD)
    return true;
}

/* mkdir -p of path's folder. */
static int make_parent(const char *path)
{
    char *dir = strdup(path);
    if (!dir) return ENOMEM;
    char *slash = strrchr(dir, '/');
    int rc = 0;
    if (slash && slash != dir) {
        *slash = 0;
        for (char *p = dir + 1; ; p++) {
            if (*p == '/' || *p == 0) {
                char c = *p;
                *p = 0;
                if (mkdir(dir, 0777) != 0 && errno != EEXIST) { rc = errno; break; }
                if (!c) break;
                *p = c;
            }
        }
    }
    free(dir);
    return rc;
}

db *db_sqlite_open(const char *path, char *msg, size_t cap)
{
    int e = make_parent(path);
    if (e) { snprintf(msg, cap, "cannot create the store's folder: %s", strerror(e)); return NULL; }
    sq *q = calloc(1, sizeof *q);
    if (!q) { set_msg(msg, cap, "out of memory"); return NULL; }
    if (!load_sqlite(&q->api, msg, cap)) { free(q); return NULL; }
    int rc = q->api.sqlite3_open_v2(path, &q->h, SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE | SQLITE_OPEN_NOMUTEX, NULL);
    if (rc != SQLITE_OK) {
        snprintf(msg, cap, "%s", q->h ? q->api.sqlite3_errmsg(q->h) : q->api.sqlite3_errstr(rc));
        q->api.sqlite3_close_v2(q->h);
        free(q);
        return NULL;
    }
    q->api.sqlite3_busy_timeout(q->h, 30000);
    q->api.sqlite3_extended_result_codes(q->h, 0);
    q->base.backend = "sqlite";
    q->base.exec = sq_exec;
    q->base.close = sq_close;
    q->base.begin_sql = "BEGIN IMMEDIATE";
    q->base.lock_sql = NULL;
    q->base.schema_v1 = schema_v1;
    q->base.dicts_json = "(SELECT json_group_array(dict) FROM (SELECT b.dict FROM tpl_binds b WHERE b.name = %s ORDER BY b.pos))";
    return &q->base;
}

void db_res_free(db_res *r)
{
    if (!r) return;
    if (r->cell)
        for (size_t i = 0; i < r->nrows * r->ncols; i++) free(r->cell[i]);
    free(r->cell);
    free(r->len);
    memset(r, 0, sizeof *r);
}
