/* The store's database layer (internal to store/): one small interface over SQLite and libpq, so
 * store.c writes every query once. SQL uses `?` placeholders (the PostgreSQL backend numbers
 * them $1, $2, ...); values travel as text, blobs as bytes. Not installed. */
#ifndef TPL_STORE_DB_H
#define TPL_STORE_DB_H

#include <stdbool.h>
#include <stddef.h>

enum db_kind { DB_NULL = 0, DB_TEXT = 1, DB_BLOB = 2 };

/* A parameter: borrowed bytes. */
typedef struct db_val {
    enum db_kind kind;
    const char *p;
    size_t len;
} db_val;

/* A result: nrows x ncols cells, row-major; cell NULL is SQL NULL, else a malloc'd,
 * NUL-terminated copy (blobs decoded to their bytes) of len bytes. */
typedef struct db_res {
    size_t nrows, ncols;
    char **cell;
    size_t *len;
} db_res;

/* The DDL of schema version 1, one text for both backends (the types that differ are the
 * arguments: the row id's column definition, a 64-bit integer, a byte string), as the
 * initialiser of a NULL-terminated array of statements. */
#define DB_SCHEMA_V1(ID_PK, BIGINT, BLOB) { \
    "CREATE TABLE tpl_prompts (\n" \
    "  id " ID_PK ",\n" \
    "  name TEXT NOT NULL,\n" \
    "  version " BIGINT " NOT NULL,\n" \
    "  syntax TEXT NOT NULL,\n" \
    "  source TEXT NOT NULL,\n" \
    "  profile TEXT,\n" \
    "  tr_keys TEXT NOT NULL,\n" \
    "  lang TEXT,\n" \
    "  created_at TEXT NOT NULL,\n" \
    "  removed INTEGER NOT NULL DEFAULT 0,\n" \
    "  tplb " BLOB ",\n" \
    "  tplb_format INTEGER NOT NULL DEFAULT 0,\n" \
    "  UNIQUE (name, version))", \
    "CREATE TABLE tpl_tr (\n" \
    "  dict TEXT NOT NULL, lang TEXT NOT NULL, source TEXT NOT NULL, target TEXT NOT NULL,\n" \
    "  plural TEXT, forms TEXT,\n" \
    "  PRIMARY KEY (dict, lang, source))", \
    "CREATE TABLE tpl_tr_langs (\n" \
    "  dict TEXT NOT NULL, lang TEXT NOT NULL, plural_forms TEXT,\n" \
    "  PRIMARY KEY (dict, lang))", \
    "CREATE TABLE tpl_binds (\n" \
    "  name TEXT NOT NULL, dict TEXT NOT NULL, pos INTEGER NOT NULL,\n" \
    "  PRIMARY KEY (name, dict))", \
    NULL, \
}

typedef struct db db;

/* Error classes of db_exec. */
enum db_err { DB_OK = 0, DB_FAIL = 1, DB_NOMEM = 2 };

struct db {
    const char *backend;    /* "sqlite" | "postgresql" */
    /* Runs one statement with params; res (may be NULL) receives the rows. On failure returns
     * DB_FAIL/DB_NOMEM and writes the message into msg (cap bytes). */
    int (*exec)(db *d, const char *sql, const db_val *params, size_t n, db_res *res, char *msg, size_t cap);
    void (*close)(db *d);
    const char *begin_sql;  /* a write transaction that serialises writers */
    const char *lock_sql;   /* run right after begin_sql (NULL: none) */
    const char *const *schema_v1; /* the DDL of schema version 1, NULL-terminated */
    /* A printf format with one %s (an SQL expression naming a prompt): the scalar subquery giving
     * the JSON array text of the dictionaries that name binds, in bind order ('[]' for none), so
     * a row's query carries its bindings (one round trip; SQLite and PostgreSQL spell JSON
     * aggregation differently). */
    const char *dicts_json;
};

/* Backends. On failure return NULL with msg filled (or NULL and msg "out of memory"). */
db *db_sqlite_open(const char *path, char *msg, size_t cap);
db *db_pg_open(const char *url, char *msg, size_t cap);

void db_res_free(db_res *r);
static inline const char *db_cell(const db_res *r, size_t row, size_t col) { return r->cell[row * r->ncols + col]; }
static inline size_t db_cell_len(const db_res *r, size_t row, size_t col) { return r->len[row * r->ncols + col]; }

/* The optional libraries, dlopen'd when used (db_dl.c). db_dl_open: the handle, or NULL with msg
 * "WHAT: dlerror's reason" (WHAT says who needs which library). db_dl_sym: stores the function
 * NAME into the function pointer at fn, or false with msg filled. A backend lists its functions
 * as X(RET, NAME, (PARAMS)); DB_DL_FIELD makes one a field of its table, DB_DL_LOAD loads one
 * into the table `api` (a pointer to it, whose field `lib` is the handle) from `soname`, in a
 * function returning bool that has msg and cap (on failure it returns false). A library once
 * loaded stays loaded (no dlclose; dlopen counts the opens of one library and gives its handle
 * again): what it keeps in its globals stays reachable, and its frames keep their module's name
 * for LeakSanitizer's suppressions (tests/lsan-gettextpo.supp), as when it was linked. */
void *db_dl_open(const char *soname, const char *what, char *msg, size_t cap);
bool db_dl_sym(void *lib, const char *soname, const char *name, void *fn, char *msg, size_t cap);
#define DB_DL_FIELD(ret, name, params) ret (*name) params;
#define DB_DL_LOAD(ret, name, params) \
    if (!db_dl_sym(api->lib, soname, #name, &api->name, msg, cap)) return false;

#endif
