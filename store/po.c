/* gettext PO import and export of the store's translation rows, through Debian's libgettextpo
 * (no PO parser of our own). msgctxt is the dictionary; plural entries keep msgid_plural and
 * msgstr[n]; `#, fuzzy` entries are skipped on import.
 *
 * libgettextpo reports problems through a handler without a data pointer, and a fatal one must
 * not return: the handler records the first problem in thread-local state and leaves a fatal
 * one by longjmp back to po_import (the only way out its API allows; what libgettextpo
 * allocated for the half-read file is then lost, a bounded leak on a failed import).
 *
 * libgettextpo (and its libunistring) is dlopen'd by each import or export (db_dl.c), not linked:
 * binding their symbols cost every tplc start ~0.9M instructions. */
#include <errno.h>
#include <setjmp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/stat.h>
#include <gettext-po.h>
#include "store_i.h"
#include "db.h"

/* The functions used, as X(RET, NAME, (PARAMS)) (po_file_read and po_file_write are macros of
 * gettext-po.h naming these versions). */
#define PO_LIB "libgettextpo.so.0"
#define PO_FUNCS(X) \
    X(po_file_t, po_file_create, (void)) \
    X(po_file_t, po_file_read_v3, (const char *, po_xerror_handler_t)) \
    X(po_file_t, po_file_write_v2, (po_file_t, const char *, po_xerror_handler_t)) \
    X(void, po_file_free, (po_file_t)) \
    X(const char *const *, po_file_domains, (po_file_t)) \
    X(const char *, po_file_domain_header, (po_file_t, const char *)) \
    X(char *, po_header_field, (const char *, const char *)) \
    X(po_message_iterator_t, po_message_iterator, (po_file_t, const char *)) \
    X(void, po_message_iterator_free, (po_message_iterator_t)) \
    X(po_message_t, po_next_message, (po_message_iterator_t)) \
    X(void, po_message_insert, (po_message_iterator_t, po_message_t)) \
    X(po_message_t, po_message_create, (void)) \
    X(const char *, po_message_msgctxt, (po_message_t)) \
    X(void, po_message_set_msgctxt, (po_message_t, const char *)) \
    X(const char *, po_message_msgid, (po_message_t)) \
    X(void, po_message_set_msgid, (po_message_t, const char *)) \
    X(const char *, po_message_msgid_plural, (po_message_t)) \
    X(void, po_message_set_msgid_plural, (po_message_t, const char *)) \
    X(const char *, po_message_msgstr, (po_message_t)) \
    X(void, po_message_set_msgstr, (po_message_t, const char *)) \
    X(const char *, po_message_msgstr_plural, (po_message_t, int)) \
    X(void, po_message_set_msgstr_plural, (po_message_t, int, const char *)) \
    X(void, po_message_add_filepos, (po_message_t, const char *, size_t)) \
    X(int, po_message_is_obsolete, (po_message_t)) \
    X(int, po_message_is_fuzzy, (po_message_t)) \
    X(void, po_message_set_fuzzy, (po_message_t, int)) \
    X(void, po_message_set_format, (po_message_t, const char *, int)) \
    X(void, po_file_check_all, (po_file_t, po_xerror_handler_t))

typedef struct po_api {
    void *lib; /* dlopen's handle */
    PO_FUNCS(DB_DL_FIELD)
} po_api;

/* Loads libgettextpo into api; false with msg filled when it or one of its functions is missing. */
static bool load_po(po_api *api, char *msg, size_t cap)
{
    const char *soname = PO_LIB;
    api->lib = db_dl_open(soname, "PO files need libgettextpo (Debian package libgettextpo0)", msg, cap);
    if (!api->lib) return false;
    PO_FUNCS(DB_DL_LOAD)
    return true;
}

typedef struct po_err {
    jmp_buf jb;
    char msg[512];
    bool have;
    const char *path; /* the file read: where a problem libgettextpo reports without one is */
} po_err;

/* The line (from 1) of the first line of path that starts with `prefix`, else 1: where a header
 * problem libgettextpo reports without a position is (its Plural-Forms, its msgid ""). */
static size_t line_of(const char *path, const char *prefix)
{
    FILE *fp = fopen(path, "r");
    if (!fp) return 1;
    size_t line = 1, k = 0, plen = strlen(prefix);
    bool bol = true, found = false;
    int c;
    while (!found && (c = getc(fp)) != EOF) {
        if (c == '\n') { line++; bol = true; k = 0; continue; }
        if (bol && k < plen && c == prefix[k]) { if (++k == plen) found = true; }
        else bol = false;
    }
    fclose(fp);
    return found ? line : 1;
}

/* Appends the PO string literal starting at p (after its opening quote) to b, decoded ("\\n",
 * "\\t", "\\\"", "\\\\", octal; others as the character); false when b is full. */
static bool po_lit(const char *p, char *b, size_t cap, size_t *n)
{
    for (; *p && *p != '"' && *p != '\n'; p++) {
        char c = *p;
        if (c == '\\' && p[1]) {
            c = *++p;
            if (c == 'n') c = '\n';
            else if (c == 't') c = '\t';
            else if (c == 'r') c = '\r';
            else if (c >= '0' && c <= '7') {
                int v = 0;
                for (int k = 0; k < 3 && *p >= '0' && *p <= '7'; k++) v = v * 8 + (*p++ - '0');
                p--;
                c = (char)v;
            }
        }
        if (*n + 1 >= cap) return false;
        b[(*n)++] = c;
    }
    return true;
}

/* The line (from 1) of the msgid of the first entry of path whose msgid is id and which has a
 * msgctxt exactly when with_ctx, else 1: where an entry problem found after libgettextpo read the
 * file is (its API gives no entry's own position). Obsolete (#~) entries are not entries. */
static size_t entry_line(const char *path, const char *id, bool with_ctx)
{
    FILE *fp = fopen(path, "r");
    if (!fp) return 1;
    size_t idlen = strlen(id), cap = idlen + 2, n = 0, line = 0, at = 0, found = 1;
    char *b = malloc(cap), buf[4096];
    bool ctx = false, in_id = false, ok = true;
    while (b && fgets(buf, sizeof buf, fp)) {
        size_t len = strlen(buf);
        bool whole = len && buf[len - 1] == '\n';
        line++;
        const char *p = buf;
        while (*p == ' ' || *p == '\t') p++;
        if (in_id && *p == '"') {
            ok = ok && po_lit(p + 1, b, cap, &n);
        } else {
            if (in_id && ok && n == idlen && ctx == with_ctx && memcmp(b, id, n) == 0) { found = at; break; }
            in_id = false;
            if (strncmp(p, "msgctxt", 7) == 0 && (p[7] == ' ' || p[7] == '\t' || p[7] == '"')) {
                ctx = true;
            } else if (strncmp(p, "msgid", 5) == 0 && (p[5] == ' ' || p[5] == '\t' || p[5] == '"')) {
                const char *q = strchr(p, '"');
                in_id = true, ok = true, n = 0, at = line;
                if (q) ok = po_lit(q + 1, b, cap, &n);
            } else if (strncmp(p, "msgstr", 6) == 0) {
                ctx = false; /* the entry ends with its msgstr lines */
            }
        }
        while (!whole && fgets(buf, sizeof buf, fp)) { /* the rest of a very long line */
            len = strlen(buf);
            whole = len && buf[len - 1] == '\n';
        }
    }
    free(b);
    fclose(fp);
    return found;
}

/* The number of characters (code points) of line `line` (from 1) of path, or 0 when it has none. */
static size_t line_chars(const char *path, size_t line)
{
    FILE *fp = fopen(path, "r");
    if (!fp) return 0;
    size_t l = 1, n = 0;
    int c;
    while ((c = getc(fp)) != EOF && l <= line) {
        if (c == '\n') l++;
        else if (l == line && c != '\r' && (c & 0xC0) != 0x80) n++;
    }
    fclose(fp);
    return n;
}

static _Thread_local po_err *cur;

static void note(int severity, const char *filename, size_t lineno, size_t column, const char *text)
{
    if (cur && !cur->have && severity != PO_SEVERITY_WARNING) {
        char where[300] = "";
        if (filename && lineno != (size_t)-1 && lineno > 1 && text && strstr(text, "end-of-line within string")) {
            /* libgettextpo counts the line end it stopped at: the string that lacks its closing
             * quote ends the line before, where the quote belongs */
            lineno--;
            column = line_chars(filename, lineno);
        }
        if (filename && lineno != (size_t)-1 && column != (size_t)-1)
            snprintf(where, sizeof where, "%s:%zu:%zu: ", filename, lineno, column + 1);
        else if (filename && lineno != (size_t)-1)
            snprintf(where, sizeof where, "%s:%zu:1: ", filename, lineno);
        else if (filename)
            snprintf(where, sizeof where, "%s: ", filename);
        else if (cur->path)
            /* a header check (nplurals, the plural expression): located at the header's field */
            snprintf(where, sizeof where, "%s:%zu:1: ", cur->path,
                     line_of(cur->path, text && strstr(text, "plural") ? "\"Plural-Forms:" : "msgid \"\""));
        snprintf(cur->msg, sizeof cur->msg, "%serror: %s", where, text ? text : "invalid PO file");
        size_t n = strlen(cur->msg);
        while (n && cur->msg[n - 1] == '\n') cur->msg[--n] = 0;
        for (char *p = cur->msg; *p; p++) if (*p == '\n') *p = ' ';
        cur->have = true;
    }
    if (severity == PO_SEVERITY_FATAL_ERROR && cur) longjmp(cur->jb, 1);
}

static void xerror(int severity, po_message_t m, const char *filename, size_t lineno, size_t column, int multiline,
                   const char *text)
{
    (void)m; (void)multiline;
    note(severity, filename, lineno, column, text);
}

static void xerror2(int severity, po_message_t m1, const char *f1, size_t l1, size_t c1, int ml1, const char *t1,
                    po_message_t m2, const char *f2, size_t l2, size_t c2, int ml2, const char *t2)
{
    (void)m1; (void)ml1; (void)m2; (void)f2; (void)l2; (void)c2; (void)ml2; (void)t2;
    note(severity, f1, l1, c1, t1);
}

static const struct po_xerror_handler handler = { xerror, xerror2 };

/* ---- import ---- */

static tpl_store_status import_file(const po_api *pa, tpl_store *s, po_file_t f, const char *path, const char *dict, size_t *nrows)
{
    /* libgettextpo 0.21 returns a copy (xstrdup) the caller frees, though its header does not say */
    char *header = (char *)pa->po_file_domain_header(f, NULL);
    char *lang = header ? pa->po_header_field(header, "Language") : NULL;
    char *pf = header ? pa->po_header_field(header, "Plural-Forms") : NULL;
    tpl_store_status st = TPL_STORE_OK;
    if (!lang || !*lang) {
        st = fail(s, TPL_STORE_INVALID, "%s:1:1: error: the PO header has no Language field (the rows' language)", path);
        goto out;
    }
    if ((st = begin(s))) goto out;
    const char *const *domains = pa->po_file_domains(f);
    for (size_t d = 0; domains && domains[d] && !st; d++) {
        po_message_iterator_t it = pa->po_message_iterator(f, domains[d]);
        po_message_t m;
        while (!st && (m = pa->po_next_message(it))) {
            const char *id = pa->po_message_msgid(m);
            if (!*id || pa->po_message_is_fuzzy(m) || pa->po_message_is_obsolete(m)) continue; /* header, fuzzy, obsolete */
            const char *ctx = pa->po_message_msgctxt(m), *use = ctx ? ctx : dict;
            if (!use) {
                st = fail(s, TPL_STORE_INVALID, "%s:%zu:1: error: entry '%.80s' has no msgctxt (its dictionary): give --dict",
                          path, entry_line(path, id, false), id);
                break;
            }
            const char *plural = pa->po_message_msgid_plural(m);
            if (plural) {
                const char *forms[64];
                size_t nf = 0;
                bool any = false;
                for (int k = 0; k < 64 && (forms[nf] = pa->po_message_msgstr_plural(m, k)); k++) any |= *forms[nf++] != 0;
                if (!any) continue;
                st = tpl_store_tr_set(s, use, lang, id, forms[0], plural, forms, nf);
            } else {
                const char *str = pa->po_message_msgstr(m);
                if (!*str) continue;
                st = tpl_store_tr_set(s, use, lang, id, str, NULL, NULL, 0);
            }
            if (!st && pf) st = tpl_store_set_plural_forms(s, use, lang, pf);
            if (!st) (*nrows)++;
            else if (st == TPL_STORE_INVALID) {
                char keep[900];
                snprintf(keep, sizeof keep, "%s", tpl_store_errmsg(s));
                st = fail(s, TPL_STORE_INVALID, "%s:%zu:1: error: entry '%.80s': %s", path, entry_line(path, id, ctx != NULL),
                          id, keep);
            }
        }
        pa->po_message_iterator_free(it);
    }
    if (st) st = rollback(s, st);
    else if ((st = commit(s))) st = rollback(s, st);
out:
    free(header);
    free(lang);
    free(pf);
    return st;
}

tpl_store_status tpl_store_po_import(tpl_store *s, const char *path, const char *dict, size_t *nrows)
{
    if (nrows) *nrows = 0;
    if (!s || !path) return s ? fail(s, TPL_STORE_INVALID, "tpl_store_po_import: path is NULL") : TPL_STORE_INVALID;
    po_api api;
    char lm[300];
    if (!load_po(&api, lm, sizeof lm)) return fail(s, TPL_STORE_IO, "%s", lm);
    const po_api *pa = &api;
    po_err e;
    memset(&e, 0, sizeof e);
    e.path = path;
    po_err *volatile saved = cur;
    po_file_t volatile f = NULL;
    cur = &e;
    if (setjmp(e.jb) == 0) {
        f = pa->po_file_read(path, &handler);
        if (!e.have && f) {
            /* what msgfmt checks too (plural counts against Plural-Forms, header) */
            pa->po_file_check_all(f, &handler);
        }
    } else {
        f = NULL;
    }
    cur = saved;
    if (e.have || !f) {
        if (f) pa->po_file_free(f);
        if (!e.have) snprintf(e.msg, sizeof e.msg, "%s: error: cannot read the PO file", path);
        return fail(s, TPL_STORE_INVALID, "%s", e.msg);
    }
    size_t n = 0;
    tpl_store_status st = import_file(pa, s, f, path, dict, &n);
    pa->po_file_free(f);
    if (!st && nrows) *nrows = n;
    return st;
}

/* ---- export ---- */

/* tpl_file_write's fill: libgettextpo writes f to the file it opens by name. */
typedef struct po_fill {
    const po_api *pa;
    po_file_t f;
    po_err e;
} po_fill;

static int fill_po(void *data, int fd, const char *name)
{
    (void)fd;
    po_fill *volatile pf = data;
    memset(&pf->e, 0, sizeof pf->e);
    po_err *volatile saved = cur;
    cur = &pf->e;
    errno = 0;
    if (setjmp(pf->e.jb) == 0) pf->pa->po_file_write(pf->f, name, &handler);
    cur = saved;
    if (!pf->e.have) return 0;
    if (!errno) errno = EIO;
    return -1;
}

/* Writes f to path as every file tpl writes (tpl_file_write: atomic, even against SIGKILL; an
 * existing file keeps its mode; through symlinks; `-` and /dev/stdout are standard output) and
 * frees f. On failure the message goes to msg. */
static tpl_store_status write_po(const po_api *pa, po_file_t f, const char *path, char *msg, size_t cap)
{
    po_fill pf = { .pa = pa, .f = f };
    int rc = tpl_file_write(path, TPL_FILE_BY_NAME, fill_po, &pf);
    int err = errno;
    pa->po_file_free(f);
    if (rc == 0) return TPL_STORE_OK;
    snprintf(msg, cap, "%s: error: cannot write: %s", path, strerror(err));
    return err == ENOMEM ? TPL_STORE_NOMEM : TPL_STORE_IO;
}


tpl_store_status tpl_store_po_export(tpl_store *s, const char *const *dicts, size_t ndicts, const char *lang,
                                     const char *path, size_t *nrows)
{
    if (nrows) *nrows = 0;
    if (!s || !path || !lang) return s ? fail(s, TPL_STORE_INVALID, "tpl_store_po_export: path or lang is NULL") : TPL_STORE_INVALID;
    tpl_store_tr *v;
    size_t n;
    tpl_store_status st = tpl_store_tr_list(s, dicts, ndicts, lang, &v, &n);
    if (st) return st;
    char *pf = NULL;
    for (size_t i = 0; i < ndicts && !pf && !st; i++) st = tpl_store_plural_forms(s, dicts[i], lang, &pf);
    if (st) { tpl_store_trs_free(v, n); return st; }
    /* the header, as msgfmt --check wants it */
    char *header = malloc(1024 + strlen(lang) + (pf ? strlen(pf) : 0));
    if (!header) { free(pf); tpl_store_trs_free(v, n); return fail(s, TPL_STORE_NOMEM, "out of memory"); }
    sprintf(header,
            "Project-Id-Version: tpl prompts\n"
            "PO-Revision-Date: 2000-01-01 00:00+0000\n"
            "Last-Translator: tpl <tpl@localhost>\n"
            "Language-Team: %s\n"
            "Language: %s\n"
            "MIME-Version: 1.0\n"
            "Content-Type: text/plain; charset=UTF-8\n"
            "Content-Transfer-Encoding: 8bit\n"
            "Plural-Forms: %s\n",
            lang, lang, pf ? pf : "nplurals=2; plural=(n != 1);");
    free(pf);
    po_api api;
    char lm[300];
    if (!load_po(&api, lm, sizeof lm)) { free(header); tpl_store_trs_free(v, n); return fail(s, TPL_STORE_IO, "%s", lm); }
    const po_api *pa = &api;
    po_file_t f = pa->po_file_create();
    po_message_iterator_t it = pa->po_message_iterator(f, NULL);
    po_message_t h = pa->po_message_create();
    pa->po_message_set_msgid(h, "");
    pa->po_message_set_msgstr(h, header);
    pa->po_message_insert(it, h);
    free(header);
    for (size_t i = 0; i < n; i++) {
        po_message_t m = pa->po_message_create();
        pa->po_message_set_msgctxt(m, v[i].dict);
        pa->po_message_set_msgid(m, v[i].source);
        if (v[i].plural) {
            pa->po_message_set_msgid_plural(m, v[i].plural);
            for (size_t k = 0; k < v[i].nforms; k++) pa->po_message_set_msgstr_plural(m, (int)k, v[i].forms[k]);
        } else {
            pa->po_message_set_msgstr(m, v[i].target);
        }
        pa->po_message_insert(it, m);
    }
    pa->po_message_iterator_free(it);
    tpl_store_trs_free(v, n);
    char msg[600];
    tpl_store_status wst = write_po(pa, f, path, msg, sizeof msg);
    if (wst) return fail(s, wst, "%s", msg);
    if (nrows) *nrows = n;
    return TPL_STORE_OK;
}

/* ---- PO templates (tplc tr-extract) ---- */

tpl_store_status tpl_store_pot_write(const char *path, const tpl_store_pot_entry *e, size_t n, char *msg, size_t cap)
{
    char dummy[8];
    if (!msg || !cap) { msg = dummy; cap = sizeof dummy; }
    msg[0] = 0;
    if (!path || (n && !e)) { snprintf(msg, cap, "tpl_store_pot_write: path or entries is NULL"); return TPL_STORE_INVALID; }
    po_api api;
    if (!load_po(&api, msg, cap)) return TPL_STORE_IO;
    const po_api *pa = &api;
    po_file_t f = pa->po_file_create();
    if (!f) { snprintf(msg, cap, "out of memory"); return TPL_STORE_NOMEM; }
    po_message_iterator_t it = pa->po_message_iterator(f, NULL);
    po_message_t h = pa->po_message_create();
    pa->po_message_set_msgid(h, "");
    pa->po_message_set_msgstr(h, "Project-Id-Version: PROJECT VERSION\n"
                             "POT-Creation-Date: 2000-01-01 00:00+0000\n"
                             "PO-Revision-Date: YEAR-MO-DA HO:MI+ZONE\n"
                             "Last-Translator: FULL NAME <EMAIL@ADDRESS>\n"
                             "Language-Team: LANGUAGE <LL@li.org>\n"
                             "MIME-Version: 1.0\n"
                             "Content-Type: text/plain; charset=UTF-8\n"
                             "Content-Transfer-Encoding: 8bit\n"
                             "Generated-By: tplc tr-extract\n");
    pa->po_message_set_fuzzy(h, 1);
    pa->po_message_insert(it, h);
    for (size_t i = 0; i < n; i++) {
        if (!e[i].msgid) continue;
        po_message_t m = pa->po_message_create();
        if (e[i].context) pa->po_message_set_msgctxt(m, e[i].context);
        pa->po_message_set_msgid(m, e[i].msgid);
        if (e[i].plural) {
            pa->po_message_set_msgid_plural(m, e[i].plural);
            pa->po_message_set_msgstr_plural(m, 0, "");
            pa->po_message_set_msgstr_plural(m, 1, "");
        } else {
            pa->po_message_set_msgstr(m, "");
        }
        for (size_t k = 0; k < e[i].nrefs; k++)
            if (e[i].refs[k].file) pa->po_message_add_filepos(m, e[i].refs[k].file, e[i].refs[k].line);
        if (e[i].python_format) pa->po_message_set_format(m, "python-format", 1);
        pa->po_message_insert(it, m);
    }
    pa->po_message_iterator_free(it);
    tpl_store_status st = write_po(pa, f, path, msg, cap);
    return st;
}
