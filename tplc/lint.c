/* tplc lint: syntax errors, unknown filters/tests (soft ones Jinja2 defers to run time), names
 * the template reads that a given state (--state) or JSON Schema (--schema) does not provide, and
 * the reads-set (--reads), as text or JSON (--format json).
 *
 *   tplc lint TEMPLATE... [compile flags] [--state FILE.json | --schema FILE.json] [--reads]
 *             [--format text|json]
 *
 * Text: one "FILE:LINE:COL: SEVERITY: MESSAGE" line per finding (syntax errors also show the
 * source line and a caret; FILE is the template's, or the name of the template it includes,
 * imports or extends that the finding is in), then with --reads "FILE: reads: a, b". JSON: an
 * array with one object per template: {"file", "ok", "diagnostics": [{"severity", "line",
 * "column", "message"}, and "file" when the finding is in a template it loads],
 * "reads": [...]} ("reads" only with --reads). Exit status: 0 no findings, 1 findings, 2 usage
 * or I/O errors. Unknown functions are calls of names that are neither builtins nor in the
 * state, so --state/--schema report them with the other missing names. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <jansson.h>
#include "tplc.h"

/* The names a state provides: the keys of a JSON object, or a JSON Schema's "properties". */
static json_t *known_names(const tplc_opts *o)
{
    const char *path = o->state ? o->state : o->schema;
    if (!path) return NULL;
    size_t len;
    char *text = tplc_read_input(path, o->state ? "state" : "schema", &len);
    if (!text) return NULL;
    json_error_t je;
    json_t *j = json_loadb(text, len, 0, &je);
    free(text);
    if (!j) {
        fprintf(stderr, "%s:%d:%d: error: %s\n", path, je.line > 0 ? je.line : 1, je.column > 0 ? je.column : 1, je.text);
        return NULL;
    }
    json_t *obj = o->state ? j : json_object_get(j, "properties");
    if (!json_is_object(obj)) {
        fprintf(stderr, "%s: error: %s\n", path, o->state ? "the state must be a JSON object" : "the schema has no \"properties\" object");
        json_decref(j);
        return NULL;
    }
    json_incref(obj);
    json_decref(j);
    return obj;
}

typedef struct finding {
    char *file;        /* the loaded template the finding is in, or NULL: the template linted */
    const char *severity;
    uint32_t line, col;
    char *message;
    char *formatted;   /* text form with source line and caret (syntax errors), or NULL */
} finding;

typedef struct report {
    finding *f;
    size_t n, cap;
} report;

static void add_in(report *r, const char *file, const char *sev, uint32_t line, uint32_t col, const char *msg,
                   char *formatted)
{
    if (r->n == r->cap) {
        size_t nc = r->cap ? r->cap * 2 : 8;
        finding *nf = realloc(r->f, nc * sizeof *nf);
        if (!nf) { free(formatted); return; }
        r->f = nf;
        r->cap = nc;
    }
    r->f[r->n++] = (finding){ file ? strdup(file) : NULL, sev, line, col, strdup(msg), formatted };
}

static void add(report *r, const char *sev, uint32_t line, uint32_t col, const char *msg, char *formatted)
{
    add_in(r, NULL, sev, line, col, msg, formatted);
}

/* The file a finding of p's is in, when it is not p's own template (NULL then). */
static const char *other_file(const tpl_program *p, const char *file)
{
    const char *own = tpl_program_name(p);
    return file && own && strcmp(file, own) != 0 ? file : NULL;
}

/* Lints one program: deferred errors (Jinja2's soft errors, tpl_program_deferred_errors), tr()
 * calls that cannot be extracted, and names read from the state itself (not as the fallback of a
 * local variable) that the known state does not provide (builtin globals and `call` excepted);
 * each name once, at its first read in code order. Only the public API is used. */
static void lint_program(const tpl_program *p, json_t *known, report *r)
{
    size_t nd = tpl_program_deferred_errors(p, NULL, 0);
    tpl_diagnostic *ds = nd ? calloc(nd, sizeof *ds) : NULL;
    if (ds) {
        tpl_program_deferred_errors(p, ds, nd);
        for (size_t i = 0; i < nd; i++) {
            char msg[300];
            snprintf(msg, sizeof msg, "%.*s", (int)ds[i].message_len, ds[i].message);
            add_in(r, other_file(p, ds[i].file), "error", ds[i].line, ds[i].column, msg, NULL);
        }
        free(ds);
    }
    /* tr() calls whose text is not a literal cannot be extracted into a catalog */
    size_t ntr = tpl_program_tr_calls(p, NULL, 0);
    tpl_tr_call *calls = ntr ? calloc(ntr, sizeof *calls) : NULL;
    if (calls) {
        tpl_program_tr_calls(p, calls, ntr);
        for (size_t i = 0; i < ntr; i++)
            if (!calls[i].text) {
                char msg[160];
                snprintf(msg, sizeof msg, "%s() argument is not a literal string: it cannot be extracted into a catalog",
                         calls[i].function ? calls[i].function : "tr");
                add(r, "warning", calls[i].line, calls[i].column, msg, NULL);
            }
        free(calls);
    }
    if (!known) return;
    size_t n = tpl_program_reads_located(p, NULL, 0);
    tpl_read *rd = n ? calloc(n, sizeof *rd) : NULL;
    if (!rd) return;
    n = tpl_program_reads_located(p, rd, n);
    json_t *seen = json_object();
    for (size_t i = 0; i < n && seen; i++) {
        const tpl_read *x = &rd[i];
        if ((x->kind != TPL_READ_STATE && x->kind != TPL_READ_FUNC) || x->fallback || x->builtin) continue;
        char *key = strndup(x->name, x->len);
        if (key && !json_object_get(seen, key) && !json_object_get(known, key)) {
            json_object_set_new(seen, key, json_true());
            char msg[300];
            snprintf(msg, sizeof msg, "'%.*s' is not in the state", (int)x->len, x->name);
            add_in(r, other_file(p, x->file), "warning", x->line, x->column, msg, NULL);
        }
        free(key);
    }
    json_decref(seen);
    free(rd);
}

static int cmp_finding(const void *a, const void *b)
{
    const finding *x = a, *y = b;
    if (!x->file != !y->file) return x->file ? 1 : -1; /* (the template's own first, then by file) */
    if (x->file && strcmp(x->file, y->file) != 0) return strcmp(x->file, y->file);
    if (x->line != y->line) return x->line < y->line ? -1 : 1;
    if (x->col != y->col) return x->col < y->col ? -1 : 1;
    return strcmp(x->message, y->message);
}

/* Compiles or loads one file; fills r with every compile error (tpl_compile_all, at most
 * LINT_MAX_ERRORS). Returns the program (NULL on error) or sets *io. */
#define LINT_MAX_ERRORS 100
static tpl_program *open_one(const tplc_opts *o, const char *path, report *r, bool *io)
{
    tpl_program *prog = NULL;
    tpl_error errs[LINT_MAX_ERRORS];
    char *msgs[LINT_MAX_ERRORS];
    memset(errs, 0, sizeof errs);
    memset(msgs, 0, sizeof msgs);
    size_t n = 0;
    int rc = tplc_compile_path_all(o, path, &prog, errs, msgs, LINT_MAX_ERRORS, &n);
    bool any = false;
    for (size_t i = 0; i < n; i++) {
        if (!msgs[i]) continue;
        const char *m = errs[i].message;
        errs[i].message = msgs[i];
        add(r, "error", errs[i].line, errs[i].column, msgs[i], tpl_error_format(&errs[i]));
        errs[i].message = m;
        free(msgs[i]);
        tpl_error_clear(&errs[i]);
        any = true;
    }
    if (rc == TPLC_EXIT_TEMPLATE && any) return NULL;
    if (rc) { *io = true; return NULL; }
    return prog;
}

int tplc_lint(const tplc_opts *opts)
{
    if (opts->page && opts->args.n == 0) return tplc_lint_page(opts);
    if (opts->page || opts->args.n == 0) {
        fprintf(stderr, "tplc lint: give TEMPLATE... or --page DIR\n");
        return 2;
    }
    const tplc_opts o = *opts;
    json_t *known = NULL;
    if ((o.state || o.schema) && !(known = known_names(&o))) return 2;
    bool json = o.format && strcmp(o.format, "json") == 0, io = false, any = false;
    json_t *all = json ? json_array() : NULL;
    for (int fi = 0; fi < o.args.n; fi++) {
        const char *path = o.args.v[fi];
        report r = { 0 };
        tpl_program *prog = open_one(&o, path, &r, &io);
        if (prog) lint_program(prog, known, &r);
        if (!prog && r.n == 0) continue; /* I/O error, already reported */
        if (r.n) qsort(r.f, r.n, sizeof *r.f, cmp_finding); /* r.f is NULL when empty */
        any |= r.n > 0;
        json_t *jf = json ? json_object() : NULL, *diags = json ? json_array() : NULL;
        for (size_t i = 0; i < r.n; i++) {
            finding *f = &r.f[i];
            if (json) {
                json_t *d = json_pack("{s:s, s:i, s:i, s:s}", "severity", f->severity, "line", (json_int_t)f->line,
                                      "column", (json_int_t)f->col, "message", f->message);
                if (d && f->file) json_object_set_new(d, "file", json_string(f->file));
                json_array_append_new(diags, d);
            } else if (f->formatted) {
                fputs(f->formatted, stdout);
            } else {
                printf("%s:%u:%u: %s: %s\n", f->file ? f->file : path, f->line, f->col, f->severity, f->message);
            }
            free(f->file);
            free(f->message);
            free(f->formatted);
        }
        free(r.f);
        if (json) {
            json_object_set_new(jf, "file", json_string(path));
            json_object_set_new(jf, "ok", json_boolean(r.n == 0));
            json_object_set_new(jf, "diagnostics", diags);
        }
        if (o.reads && prog) {
            size_t n = tpl_program_reads(prog, NULL, NULL, 0);
            const char **names = calloc(n + 1, sizeof *names);
            size_t *lens = calloc(n + 1, sizeof *lens);
            if (names && lens) {
                tpl_program_reads(prog, names, lens, n);
                json_t *jr = json ? json_array() : NULL;
                if (!json) printf("%s: reads:", path);
                for (size_t i = 0; i < n; i++) {
                    if (json) json_array_append_new(jr, json_stringn(names[i], lens[i]));
                    else printf("%s %.*s", i ? "," : "", (int)lens[i], names[i]);
                }
                if (json) json_object_set_new(jf, "reads", jr);
                else putchar('\n');
            }
            free(names);
            free(lens);
        }
        if (json) json_array_append_new(all, jf);
        tpl_program_free(prog);
    }
    if (json) {
        char *s = json_dumps(all, JSON_INDENT(2) | JSON_PRESERVE_ORDER);
        if (s) { puts(s); free(s); }
        json_decref(all);
    }
    json_decref(known);
    return io ? 2 : any ? 1 : 0;
}
