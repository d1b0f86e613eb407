/* The PostgreSQL backend of the store (Debian's libpq): one registry many hosts share. Write
 * transactions serialise on a transaction-scoped advisory lock (schema creation, PO imports,
 * binds; a create numbers its version inside one INSERT statement instead, store.c), so they are
 * race-free; a client killed mid-transaction is rolled back by the server. Parameters go as text
 * (blobs in binary), results come as text (bytea decoded with PQunescapeBytea). Each exec is one
 * network round trip (PQexecParams).
 *
 * libpq is loaded with dlopen when a PostgreSQL store is opened, not linked: its dependencies
 * (OpenSSL, Kerberos, LDAP, GnuTLS...) cost every tplc start (and every process linking the store)
 * ~20 shared objects and most of the dynamic linker's time although only a postgres URL uses them.
 * libpq-fe.h still gives the types; the functions are looked up into each connection's table. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <libpq-fe.h>
#include "db.h"

#define BYTEAOID 17

/* The shared object and the libpq functions this backend calls: RET, NAME, (PARAMS). */
#define PG_LIBPQ "libpq.so.5"
#define PG_FUNCS(X) \
    X(PGconn *, PQconnectdb, (const char *)) \
    X(ConnStatusType, PQstatus, (const PGconn *)) \
    X(char *, PQerrorMessage, (const PGconn *)) \
    X(void, PQfinish, (PGconn *)) \
    X(PQnoticeProcessor, PQsetNoticeProcessor, (PGconn *, PQnoticeProcessor, void *)) \
    X(int, PQclientEncoding, (const PGconn *)) \
    X(int, PQsetClientEncoding, (PGconn *, const char *)) \
    X(int, pg_char_to_encoding, (const char *)) \
    X(PGresult *, PQexecParams, (PGconn *, const char *, int, const Oid *, const char *const *, const int *, \
                                 const int *, int)) \
    X(ExecStatusType, PQresultStatus, (const PGresult *)) \
    X(char *, PQresultErrorMessage, (const PGresult *)) \
    X(void, PQclear, (PGresult *)) \
    X(int, PQntuples, (const PGresult *)) \
    X(int, PQnfields, (const PGresult *)) \
    X(int, PQgetisnull, (const PGresult *, int, int)) \
    X(char *, PQgetvalue, (const PGresult *, int, int)) \
    X(int, PQgetlength, (const PGresult *, int, int)) \
    X(Oid, PQftype, (const PGresult *, int)) \
    X(unsigned char *, PQunescapeBytea, (const unsigned char *, size_t *)) \
    X(void, PQfreemem, (void *))

typedef struct pq_api {
    void *lib; /* dlopen's handle */
    PG_FUNCS(DB_DL_FIELD)
} pq_api;

typedef struct pg {
    db base;
    pq_api pq;
    PGconn *c;
} pg;

static const char *const schema_v1[] = DB_SCHEMA_V1("BIGSERIAL PRIMARY KEY", "BIGINT", "BYTEA");

static void set_msg(char *msg, size_t cap, const char *s)
{
    snprintf(msg, cap, "%s", s);
    size_t n = strlen(msg);
    while (n && (msg[n - 1] == '\n' || msg[n - 1] == ' ')) msg[--n] = 0;
}

/* `?` -> `$n` (the store's SQL has no `?` inside literals). */
static char *number_params(const char *sql)
{
    size_t n = strlen(sql), q = 0;
    for (size_t i = 0; i < n; i++) q += sql[i] == '?';
    char *out = malloc(n + q * 8 + 1);
    if (!out) return NULL;
    size_t o = 0;
    int k = 0;
    for (size_t i = 0; i < n; i++) {
        if (sql[i] == '?') o += (size_t)sprintf(out + o, "$%d", ++k);
        else out[o++] = sql[i];
    }
    out[o] = 0;
    return out;
}

static int pg_exec(db *d, const char *sql, const db_val *params, size_t n, db_res *res, char *msg, size_t cap)
{
    pg *g = (pg *)d;
    if (res) memset(res, 0, sizeof *res);
    char *q = number_params(sql);
    const char **vals = calloc(n + 1, sizeof *vals);
    int *lens = calloc(n + 1, sizeof *lens), *fmts = calloc(n + 1, sizeof *fmts);
    if (!q || !vals || !lens || !fmts) {
        free(q); free(vals); free(lens); free(fmts);
        set_msg(msg, cap, "out of memory");
        return DB_NOMEM;
    }
    for (size_t i = 0; i < n; i++) {
        if (params[i].kind == DB_NULL) continue;
        vals[i] = params[i].p ? params[i].p : "";
        lens[i] = (int)params[i].len;
        fmts[i] = params[i].kind == DB_BLOB;
    }
    PGresult *r = g->pq.PQexecParams(g->c, q, (int)n, NULL, vals, lens, fmts, 0);
    free(q); free(vals); free(lens); free(fmts);
    ExecStatusType st = r ? g->pq.PQresultStatus(r) : PGRES_FATAL_ERROR;
    if (st != PGRES_COMMAND_OK && st != PGRES_TUPLES_OK) {
        set_msg(msg, cap, r ? g->pq.PQresultErrorMessage(r) : g->pq.PQerrorMessage(g->c));
        if (!*msg) set_msg(msg, cap, g->pq.PQerrorMessage(g->c));
        g->pq.PQclear(r);
        return DB_FAIL;
    }
    if (res && st == PGRES_TUPLES_OK) {
        size_t rows = (size_t)g->pq.PQntuples(r), cols = (size_t)g->pq.PQnfields(r);
        res->cell = calloc(rows * cols + 1, sizeof *res->cell);
        res->len = calloc(rows * cols + 1, sizeof *res->len);
        if (!res->cell || !res->len) goto nomem;
        res->nrows = rows;
        res->ncols = cols;
        for (size_t i = 0; i < rows; i++)
            for (size_t j = 0; j < cols; j++) {
                if (g->pq.PQgetisnull(r, (int)i, (int)j)) continue;
                const char *v = g->pq.PQgetvalue(r, (int)i, (int)j);
                size_t len = (size_t)g->pq.PQgetlength(r, (int)i, (int)j);
                char *copy;
                if (g->pq.PQftype(r, (int)j) == BYTEAOID) {
                    size_t bl = 0;
                    unsigned char *b = g->pq.PQunescapeBytea((const unsigned char *)v, &bl);
                    if (!b) goto nomem;
                    copy = malloc(bl + 1);
                    if (copy) { memcpy(copy, b, bl); copy[bl] = 0; }
                    g->pq.PQfreemem(b);
                    len = bl;
                } else {
                    copy = malloc(len + 1);
                    if (copy) { memcpy(copy, v, len); copy[len] = 0; }
                }
                if (!copy) goto nomem;
                res->cell[i * cols + j] = copy;
                res->len[i * cols + j] = len;
            }
    }
    g->pq.PQclear(r);
    return DB_OK;
nomem:
    g->pq.PQclear(r);
    db_res_free(res);
    set_msg(msg, cap, "out of memory");
    return DB_NOMEM;
}

static void pg_close(db *d)
{
    pg *g = (pg *)d;
    if (!g) return;
    g->pq.PQfinish(g->c);
    free(g);
}

static void quiet(void *arg, const char *message) { (void)arg; (void)message; }

/* Loads libpq into api; false with msg filled when the library or one of its functions is
 * missing. */
static bool load_libpq(pq_api *api, char *msg, size_t cap)
{
    const char *soname = PG_LIBPQ;
    api->lib = db_dl_open(soname, "a postgresql:// store needs libpq, PostgreSQL's client library (Debian package libpq5)", msg, cap);
    if (!api->lib) return false;
    PG_FUNCS(DB_DL_LOAD)
    return true;
}

db *db_pg_open(const char *url, char *msg, size_t cap)
{
    pg *g = calloc(1, sizeof *g);
    if (!g) { set_msg(msg, cap, "out of memory"); return NULL; }
    if (!load_libpq(&g->pq, msg, cap)) { free(g); return NULL; }
    g->c = g->pq.PQconnectdb(url);
    if (!g->c || g->pq.PQstatus(g->c) != CONNECTION_OK) {
        set_msg(msg, cap, g->c ? g->pq.PQerrorMessage(g->c) : "out of memory");
        g->pq.PQfinish(g->c);
        free(g);
        return NULL;
    }
    g->pq.PQsetNoticeProcessor(g->c, quiet, NULL);
    if (g->pq.PQclientEncoding(g->c) != g->pq.pg_char_to_encoding("UTF8")) g->pq.PQsetClientEncoding(g->c, "UTF8");
    g->base.backend = "postgresql";
    g->base.exec = pg_exec;
    g->base.close = pg_close;
    g->base.begin_sql = "BEGIN";
    g->base.lock_sql = "SELECT pg_advisory_xact_lock(7340019)";
    g->base.schema_v1 = schema_v1;
    g->base.dicts_json = "(SELECT COALESCE(json_agg(b.dict ORDER BY b.pos), '[]'::json)::text FROM tpl_binds b WHERE b.name = %s)";
    return &g->base;
}
