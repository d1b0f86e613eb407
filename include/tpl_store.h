/* tpl_store — prompts as versioned, translatable objects (issue 19, DESIGN.md §10).  Public API.
 *
 * A layer above the engine: it uses only include/tpl.h. A store is a database of prompt rows and
 * translation rows, on SQLite (a file path: the embedded default) or PostgreSQL (a
 * "postgresql://..." or "postgres://..." URL: one registry shared by many hosts). Both backends
 * have one schema (tables tpl_meta, tpl_prompts, tpl_tr, tpl_tr_langs, tpl_binds; version
 * TPL_STORE_SCHEMA_VERSION, upgraded in place by migrations when an older store is opened; a store
 * written by a newer schema is refused).
 *
 * Prompt rows: name, version (1 for a new name, then the next number: versions are never reused,
 * also after a remove), row id (unique over the store), syntax, source, compile options (the
 * profile), tr_keys, bound language, created-at (UTC, "YYYY-MM-DDTHH:MM:SSZ"), tombstone flag, and
 * the compiled .tplb (format TPL_TPLB_VERSION), recompiled from the source when the running tpl
 * has another .tplb format or the cached bytes fail verification.
 *
 * References ("refs"): "NAME" (the latest version that is not removed), "NAME:N" (version N, also
 * a removed one) or a row id in decimal ("42").
 *
 * Translation rows live in dictionaries: (dict, lang, source) -> target, where source may hold
 * {placeholder}s (pattern rows, DESIGN.md §3). A prompt's own dictionary is named after it; a
 * prompt binds further dictionaries in order. Lookup order for a render: own dictionary, then the
 * bound ones in bind order (tpl_store_load gives them as catalogs in that order).
 *
 * Conventions: strings are NUL-terminated UTF-8, borrowed by the callee (copied when kept).
 * Every function returns a tpl_store_status; on failure tpl_store_errmsg(s) says why (valid until
 * the next call on s). A tpl_store handle is not thread-safe: one per thread (or a lock around
 * it); any number of processes and threads may open the same store at once — writes are
 * transactions, so concurrent creates of one name get distinct versions and a writer killed at
 * any point leaves the store as it was before its transaction.
 */
#ifndef TPL_STORE_H
#define TPL_STORE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include "tpl.h"

#ifdef __cplusplus
extern "C" {
#endif

/* The schema version this library writes; older stores are migrated when opened. */
#define TPL_STORE_SCHEMA_VERSION 1

/* The longest text the store takes, in bytes: a prompt's source, a translation's source, target,
 * plural or form (longer: TPL_STORE_INVALID). 8 MiB is far past any prompt; a 100 MB prompt took
 * 20 s to store and as long to load (its .tplb is several times the source). */
#define TPL_STORE_MAX_TEXT ((size_t)8 << 20)

typedef enum tpl_store_status {
    TPL_STORE_OK = 0,
    TPL_STORE_NOT_FOUND = 1,  /* no such prompt, version, row id or translation row */
    TPL_STORE_TEMPLATE = 2,   /* the source does not compile: the tpl_error record is filled */
    TPL_STORE_INVALID = 3,    /* a bad argument: an empty or malformed name, ref, language, a NUL
                               * byte in a text, an unknown syntax or profile, bad PO input */
    TPL_STORE_IO = 64,        /* the database failed: cannot open, not a database, corrupt, lost
                               * connection, a newer schema; or a file could not be read/written */
    TPL_STORE_NOMEM = 65,     /* allocation failed */
} tpl_store_status;

typedef struct tpl_store tpl_store;

/* One prompt row. Every pointer is owned by the row (freed by tpl_store_prompt_free or with the
 * array that holds it). */
typedef struct tpl_store_prompt {
    int64_t id;
    char *name;
    int64_t version;
    tpl_syntax syntax;
    char *source;
    size_t source_len;
    char *profile;          /* the compile profile, or NULL (the syntax's defaults) */
    char **tr_keys;         /* fmt fields whose values tr() translates */
    size_t ntr_keys;
    char *lang;             /* the bound language, or NULL */
    char *created_at;       /* "YYYY-MM-DDTHH:MM:SSZ" (UTC) */
    bool removed;           /* tombstoned */
    int tplb_format;        /* .tplb format of the cached program (0: none cached) */
    char **dicts;           /* the dictionaries the prompt's name binds, in bind order */
    size_t ndicts;
} tpl_store_prompt;

/* What tpl_store_create stores. */
typedef struct tpl_store_new {
    const char *name;       /* [A-Za-z0-9_.-/]+ not starting with a digit-only word, no ':' */
    const char *source;     /* the template text (UTF-8, no NUL byte) */
    size_t source_len;
    tpl_syntax syntax;
    const char *profile;    /* NULL: the syntax's defaults */
    const char *const *tr_keys;
    size_t ntr_keys;
    const char *lang;       /* bound language, or NULL */
    const char *file;       /* the name compile errors carry (NULL: the prompt's name) */
} tpl_store_new;

/* One translation row. Owned by the array that holds it. A plural row (from a PO file's
 * msgid_plural) has plural set and forms[0..nforms) (msgstr[n]); target is forms[0]. */
typedef struct tpl_store_tr {
    char *dict, *lang, *source, *target;
    char *plural;           /* msgid_plural, or NULL */
    char **forms;
    size_t nforms;
} tpl_store_tr;

/* A prompt ready to render (tpl_store_load). */
typedef struct tpl_store_loaded {
    tpl_store_prompt prompt;
    tpl_program *program;   /* owned; rendered as any program (immutable, shareable) */
    tpl_catalog **tr_catalogs; /* the catalogs, finished (tpl_prompt.h), lookup order: the own
                             * dictionary, then the bound ones; empty dictionaries too */
    size_t ncatalogs;
    char **catalogs;        /* the same as JSON texts ({"LANG": {"source": "target"}}): NULL
                             * until tpl_store_loaded_json writes them */
    size_t *catalog_lens;
} tpl_store_loaded;

/* Opens (creating when missing) the store at `where`: a "postgresql://" or "postgres://" URL, else
 * an SQLite file path (its folder is created when missing; other URLs -- "sqlite:", "file:",
 * "NAME://" -- are refused with TPL_STORE_INVALID, never taken as a file's name). Creates the schema in a new store,
 * migrates an older one, refuses one written by a newer schema (TPL_STORE_IO, "store schema
 * version N is newer than this tpl supports (M)"). On TPL_STORE_OK *out is a handle closed with
 * tpl_store_close; on failure *out is a handle too (unless NULL on TPL_STORE_NOMEM) whose
 * tpl_store_errmsg says why — close it as well. */
TPL_API tpl_store_status tpl_store_open(const char *where, tpl_store **out);
/* Closes the handle (NULL: nothing). */
TPL_API void tpl_store_close(tpl_store *s);
/* The last failure's message (never NULL; "" after success; owned by s). */
TPL_API const char *tpl_store_errmsg(const tpl_store *s);
/* "sqlite" or "postgresql". */
TPL_API const char *tpl_store_backend(const tpl_store *s);
/* The number of statements s has sent to its database since tpl_store_open returned (the open's
 * own schema check not counted; NULL: 0). On PostgreSQL each is one network round trip. Every
 * operation below is one statement — tpl_store_get, _list, _versions, _create, _tr_set,
 * _prompt_tr_set and _load (the row, its bindings, the translation rows of its dictionaries and
 * their Plural-Forms) — except: a load that recompiles a stale .tplb adds one (caching it back),
 * a load of a composed prompt adds one per prompt it includes, imports or extends, a create that
 * loses a race for a version number retries, and a failed _remove adds one to say why.
 * For tests and monitoring (tplc prompt prints it when $TPL_STORE_ROUND_TRIPS is set). */
TPL_API uint64_t tpl_store_round_trips(const tpl_store *s);

/* Compiles nw->source (when it fails: TPL_STORE_TEMPLATE and *err filled when err is not NULL;
 * tpl_error_clear it) and stores it as the next version of nw->name in one transaction. On
 * TPL_STORE_OK, *out (when not NULL) is the new row (free with tpl_store_prompt_free). */
TPL_API tpl_store_status tpl_store_create(tpl_store *s, const tpl_store_new *nw, tpl_store_prompt **out,
                                          tpl_error *err);
/* The row `ref` names (see refs above). TPL_STORE_NOT_FOUND when there is none (also for a name
 * whose every version is removed). *out is freed with tpl_store_prompt_free. */
TPL_API tpl_store_status tpl_store_get(tpl_store *s, const char *ref, tpl_store_prompt **out);
/* Frees a row from tpl_store_get/tpl_store_create (NULL: nothing). */
TPL_API void tpl_store_prompt_free(tpl_store_prompt *p);
/* The latest active version of every name starting with prefix (NULL or "": all), by name.
 * *out is an array of *n rows freed with tpl_store_prompts_free (sources included). */
TPL_API tpl_store_status tpl_store_list(tpl_store *s, const char *prefix, tpl_store_prompt **out, size_t *n);
/* Every version of name, oldest first; removed ones only when all is true. TPL_STORE_NOT_FOUND
 * when the name has no (listed) version. */
TPL_API tpl_store_status tpl_store_versions(tpl_store *s, const char *name, bool all, tpl_store_prompt **out,
                                            size_t *n);
TPL_API void tpl_store_prompts_free(tpl_store_prompt *v, size_t n);
/* Tombstones the row ref names (NAME: its latest active version). The row stays (versions
 * --all lists it, NAME:N and the row id still get it); NAME then means the previous active one. */
TPL_API tpl_store_status tpl_store_remove(tpl_store *s, const char *ref);

/* Sets (inserts or replaces) the row (dict, lang, source) -> target. plural/forms: a plural row
 * (NULL/0: a plain one). A target "" (a plural row: every form "") is an untranslated row, left
 * out of the catalogs tpl_store_load builds (see tpl_store_tr_add_untranslated). */
TPL_API tpl_store_status tpl_store_tr_set(tpl_store *s, const char *dict, const char *lang, const char *source,
                                          const char *target, const char *plural, const char *const *forms,
                                          size_t nforms);
/* tpl_store_tr_set of a plain row for a prompt, in one statement: sets (dict, lang, source) ->
 * target where dict NULL is the prompt's own dictionary (named after it), only when a prompt
 * named name exists (any version, removed ones too); TPL_STORE_NOT_FOUND ("no prompt named
 * 'NAME'") otherwise. What `tplc prompt tr-set` runs. */
TPL_API tpl_store_status tpl_store_prompt_tr_set(tpl_store *s, const char *name, const char *dict, const char *lang,
                                                 const char *source, const char *target);
/* Deletes a row; TPL_STORE_NOT_FOUND when there is none. */
TPL_API tpl_store_status tpl_store_tr_delete(tpl_store *s, const char *dict, const char *lang, const char *source);
/* The rows of the dictionaries dicts[0..ndicts) (in that order, then by language and source),
 * of language lang (NULL: every language). *out freed with tpl_store_trs_free. */
TPL_API tpl_store_status tpl_store_tr_list(tpl_store *s, const char *const *dicts, size_t ndicts, const char *lang,
                                           tpl_store_tr **out, size_t *n);
TPL_API void tpl_store_trs_free(tpl_store_tr *v, size_t n);
/* The Plural-Forms header of (dict, lang) recorded by a PO import: *out malloc'd (free()), or
 * NULL when none was recorded. Setting NULL forgets it. */
TPL_API tpl_store_status tpl_store_plural_forms(tpl_store *s, const char *dict, const char *lang, char **out);
TPL_API tpl_store_status tpl_store_set_plural_forms(tpl_store *s, const char *dict, const char *lang,
                                                    const char *plural_forms);
/* Binds dictionary dict to the prompt name (appended to its bind order; binding again keeps
 * the place). The name must have a row. */
TPL_API tpl_store_status tpl_store_bind(tpl_store *s, const char *name, const char *dict);
/* Unbinds; TPL_STORE_NOT_FOUND when it was not bound. */
TPL_API tpl_store_status tpl_store_unbind(tpl_store *s, const char *name, const char *dict);

/* Loads the prompt ref names for rendering: the program (from the cached .tplb, or recompiled
 * from the source — and cached back — when the format changed or the bytes fail verification;
 * include/import/extends name other prompts by ref — "NAME", "NAME:N" or a row id, resolved as
 * tpl_store_get does — and a prompt that uses them is compiled on every load with the versions
 * they name then (no cached program: tpl_store_create stores it with tplb_format 0);
 * a compile failure is TPL_STORE_TEMPLATE with *err filled) and its catalogs in lookup order.
 * *out is freed with tpl_store_loaded_free. */
TPL_API tpl_store_status tpl_store_load(tpl_store *s, const char *ref, tpl_store_loaded **out, tpl_error *err);
TPL_API void tpl_store_loaded_free(tpl_store_loaded *l);
/* Writes l->catalogs / l->catalog_lens (JSON texts of l->tr_catalogs, owned by l), once; a load
 * does not (200,000 rows are 0.8 G instructions of JSON). TPL_STORE_NOMEM, or TPL_STORE_INVALID
 * when l is NULL. */
TPL_API tpl_store_status tpl_store_loaded_json(tpl_store_loaded *l);
/* Prepares render context r for l: replaces its catalogs with l's, its tr keys with the prompt's,
 * and sets the language: lang (the caller's explicit one) → the prompt's bound language →
 * fallback_lang (say $TPL_LANG) → none (tr() returns the source text). NULL or "" skips a step.
 * Returns the tpl_status of the first render call that failed (TPL_OK on success). */
TPL_API tpl_status tpl_store_apply(const tpl_store_loaded *l, tpl_render *r, const char *lang,
                                   const char *fallback_lang);

/* ---- gettext PO files (through Debian's libgettextpo; no PO parser of tpl's own) ---- */

/* Writes the rows of language lang of dictionaries dicts[0..ndicts) to the PO file `path`
 * (written atomically: a temporary file beside it, renamed over it). Every entry carries its
 * dictionary as msgctxt; plural rows become msgid_plural/msgstr[n]. The header has Language,
 * UTF-8 Content-Type and the Plural-Forms a PO import recorded for the first dictionary that has
 * one (else "nplurals=2; plural=(n != 1);"), so `msgfmt --check` accepts the file. *nrows (may be
 * NULL) is the number of entries written. */
TPL_API tpl_store_status tpl_store_po_export(tpl_store *s, const char *const *dicts, size_t ndicts,
                                             const char *lang, const char *path, size_t *nrows);
/* Reads the PO file `path` and sets a row per translated entry, in one transaction: the language
 * is the header's Language field; the dictionary is the entry's msgctxt, else `dict` (NULL: such
 * an entry is an error); `#, fuzzy`, obsolete and untranslated entries are skipped; plural entries
 * keep msgid_plural and every msgstr[n]; the header's Plural-Forms is recorded per dictionary
 * and language. A malformed file is TPL_STORE_INVALID with "PATH:LINE:COL: error: ..." (the
 * first problem libgettextpo reports) as the message, and nothing is stored. *nrows (may be
 * NULL) is the number of rows set. */
TPL_API tpl_store_status tpl_store_po_import(tpl_store *s, const char *path, const char *dict, size_t *nrows);

/* One message of a PO template (tpl_store_pot_write). Strings are borrowed. */
typedef struct tpl_store_pot_ref { const char *file; uint32_t line; } tpl_store_pot_ref;
typedef struct tpl_store_pot_entry {
    const char *context;        /* msgctxt, or NULL */
    const char *msgid;          /* NULL: the entry is skipped */
    const char *plural;         /* msgid_plural (written with two empty msgstr[n]), or NULL */
    const tpl_store_pot_ref *refs; /* "#: FILE:LINE" references, refs[0..nrefs) */
    size_t nrefs;
    bool python_format;         /* "#, python-format" (a %-format message, as Babel flags it) */
} tpl_store_pot_entry;
/* Writes the PO template (.pot) `path` through libgettextpo, atomically (a temporary file beside
 * it, renamed over it): Babel's header (a fuzzy msgid "" entry, charset UTF-8) and the entries in
 * order with empty translations. Needs no store. On failure (TPL_STORE_IO: cannot write;
 * TPL_STORE_NOMEM; TPL_STORE_INVALID: NULL path) msg[0..cap) says why (msg may be NULL). */
TPL_API tpl_store_status tpl_store_pot_write(const char *path, const tpl_store_pot_entry *e, size_t n, char *msg,
                                             size_t cap);
/* Adds an untranslated row to dictionary dict, language lang, for every message of e[0..n) it has
 * no row of (what `tplc prompt tr-extract` stores): source is the msgid, target "", and a plural
 * message keeps its
 * msgid_plural with as many empty forms as the (dict, lang) Plural-Forms a PO import recorded
 * says (2 without one). Existing rows, translated or not, are kept; entries with a NULL or empty
 * msgid, and those with a context (pgettext: the store's PO files name the dictionary by msgctxt,
 * so such a row could not be exported), are skipped; refs and python_format are not stored. One INSERT per 200 messages (a
 * transaction around them when there are more). *added (may be NULL) is the number of rows
 * added. An untranslated row translates nothing: tpl_store_load leaves rows whose target (every
 * form of a plural row) is "" out of the catalogs, as msgfmt leaves untranslated entries out of a
 * .mo, and tr-export writes them with an empty msgstr for translators to fill. */
TPL_API tpl_store_status tpl_store_tr_add_untranslated(tpl_store *s, const char *dict, const char *lang,
                                                       const tpl_store_pot_entry *e, size_t n, size_t *added);

#ifdef __cplusplus
}
#endif
#endif
