/* tplc lint: syntax errors, unknown filters/tests (soft ones Jinja2 defers to run time), names
 * the template reads that a given state (--state) or JSON Schema (--schema) does not provide, and
 * the reads-set (--reads), as text or JSON (--format json).
 *
 *   tplc lint TEMPLATE... [compile flags] [--state FILE.json | --schema FILE.json] [--reads]
 *             [--format text|json]
 *
 * Text: one "FILE:LINE:COL: SEVERITY: MESSAGE" line per finding (syntax errors also show the
 * source line and a caret), then with --reads "FILE: reads: a, b". JSON: an array with one object
 * per template: {"file", "ok", "diagnostics": [{"severity", "line", "column", "message"}],
 * "reads": [...]} ("reads" only with --reads). Exit status: 0 no findings, 1 findings, 2 usage
 * or I/O errors. Unknown functions are calls of names that are neither builtins nor in the
 * state, so --state/--schema report them with the other missing names. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <jansson.h>
#include "tpl.h"
#include "compiler/program.h"
#include "runtime/verify.h"
#include "stdlib/builtins.h"

typedef struct lint_opts {
    const char **files;
    int nfiles;
    const char *state, *schema, *format, *syntax, *profile;
    bool reads, trim_blocks, lstrip_blocks, keep_nl, strict, tidy;
} lint_opts;

static char *slurp(const char *path, size_t *len)
{
    FILE *f = strcmp(path, "-") == 0 ? stdin : fopen(path, "rb");
    if (!f) return NULL;
    size_t cap = 4096, n = 0;
    char *buf = malloc(cap);
    while (buf) {
        if (n + 1 >= cap) {
            char *nb = realloc(buf, cap *= 2);
            if (!nb) { free(buf); buf = NULL; break; }
            buf = nb;
        }
        size_t got = fread(buf + n, 1, cap - n - 1, f);
        if (got == 0) break;
        n += got;
    }
    if (f != stdin) fclose(f);
    if (!buf) return NULL;
    buf[n] = 0;
    *len = n;
    return buf;
}

static char *load_beside(void *data, const char *name, size_t name_len, size_t *len)
{
    const char *dir = data;
    if (name_len == 0 || memchr(name, 0, name_len)) return NULL;
    size_t dl = strlen(dir);
    char *path = malloc(dl + name_len + 2);
    if (!path) return NULL;
    snprintf(path, dl + name_len + 2, "%s/%.*s", dir, (int)name_len, name);
    char *text = slurp(path, len);
    free(path);
    return text;
}

/* The names a state provides: the keys of a JSON object, or a JSON Schema's "properties". */
static json_t *known_names(const lint_opts *o)
{
    const char *path = o->state ? o->state : o->schema;
    if (!path) return NULL;
    json_error_t je;
    json_t *j = json_load_file(path, 0, &je);
    if (!j) {
        if (je.line > 0) fprintf(stderr, "%s:%d:%d: error: %s\n", path, je.line, je.column, je.text);
        else fprintf(stderr, "%s: error: %s\n", path, je.text); /* unreadable: jansson has no position */
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
    const char *severity;
    uint32_t line, col;
    char *message;
    char *formatted;   /* text form with source line and caret (syntax errors), or NULL */
} finding;

typedef struct report {
    finding *f;
    size_t n, cap;
} report;

static void add(report *r, const char *sev, uint32_t line, uint32_t col, const char *msg, char *formatted)
{
    if (r->n == r->cap) {
        size_t nc = r->cap ? r->cap * 2 : 8;
        finding *nf = realloc(r->f, nc * sizeof *nf);
        if (!nf) { free(formatted); return; }
        r->f = nf;
        r->cap = nc;
    }
    r->f[r->n++] = (finding){ sev, line, col, strdup(msg), formatted };
}

/* The first instruction that reads name index ni (for a location). */
/* The first instruction that reads name ni from the state itself (not as the fallback of a local
 * variable), or UINT32_MAX when none does: lint warns only about those names. */
static uint32_t first_read(const tpl_program *p, uint32_t ni)
{
    for (size_t pc = 0; pc < p->ncode;) {
        uint32_t op = TPL_INSN_OP(p->code[pc]);
        if (op >= TPL_OP__COUNT) break;
        bool state_read = op == TPL_OP_LOAD_NAME || op == TPL_OP_CALL_NAME || op == TPL_OP_LOAD_NAME_RB ||
                          op == TPL_OP_LOAD_IVAR_RB || op == TPL_OP_FMT_FIELD;
        if (state_read && TPL_INSN_A(p->code[pc]) == ni) return (uint32_t)pc;
        pc += 1 + (size_t)tpl_opinfo_table[op].extra;
    }
    return UINT32_MAX;
}

static bool is_builtin_name(const char *s, size_t n)
{
    return (n == 4 && memcmp(s, "call", 4) == 0) || tpl_builtin_find(TPL_BK_GLOBAL, s, n) >= 0;
}

/* Lints one program: deferred errors (FAIL instructions) and names missing from the state. */
static void lint_program(const tpl_program *p, json_t *known, report *r)
{
    for (size_t pc = 0; pc < p->ncode;) {
        uint32_t op = TPL_INSN_OP(p->code[pc]);
        if (op >= TPL_OP__COUNT) break;
        if (op == TPL_OP_FAIL) {
            const tpl_value *k = &p->consts[TPL_INSN_A(p->code[pc])];
            char msg[300];
            snprintf(msg, sizeof msg, "%.*s", (int)k->len, k->u.s);
            uint32_t line, col;
            tpl_program_span(p, (uint32_t)pc, &line, &col);
            add(r, "error", line, col, msg, NULL);
        }
        pc += 1 + (size_t)tpl_opinfo_table[op].extra;
    }
    /* tr() calls whose text is not a literal cannot be extracted into a catalog */
    size_t ntr = tpl_program_tr_calls(p, NULL, 0);
    tpl_tr_call *calls = ntr ? calloc(ntr, sizeof *calls) : NULL;
    if (calls) {
        tpl_program_tr_calls(p, calls, ntr);
        for (size_t i = 0; i < ntr; i++)
            if (!calls[i].text)
                add(r, "warning", calls[i].line, calls[i].column,
                    "tr() argument is not a literal string: it cannot be extracted into a catalog", NULL);
        free(calls);
    }
    if (!known) return;
    size_t n = tpl_program_reads_idx(p, NULL, 0);
    uint32_t *idx = malloc((n + 1) * sizeof *idx);
    if (!idx) return;
    tpl_program_reads_idx(p, idx, n);
    for (size_t i = 0; i < n; i++) {
        const tpl_value *s = &p->names[idx[i]].s;
        uint32_t at = first_read(p, idx[i]);
        if (at == UINT32_MAX || is_builtin_name(s->u.s, s->len)) continue;
        char *key = strndup(s->u.s, s->len);
        if (key && !json_object_get(known, key)) {
            char msg[300];
            snprintf(msg, sizeof msg, "'%.*s' is not in the state", (int)s->len, s->u.s);
            uint32_t line, col;
            tpl_program_span(p, at, &line, &col);
            add(r, "warning", line, col, msg, NULL);
        }
        free(key);
    }
    free(idx);
}

static int cmp_finding(const void *a, const void *b)
{
    const finding *x = a, *y = b;
    if (x->line != y->line) return x->line < y->line ? -1 : 1;
    if (x->col != y->col) return x->col < y->col ? -1 : 1;
    return strcmp(x->message, y->message);
}

static int parse(int argc, char **argv, lint_opts *o)
{
    memset(o, 0, sizeof *o);
    o->files = calloc((size_t)argc + 1, sizeof *o->files);
    if (!o->files) return -1;
    o->format = "text";
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
#define VAL(flag, field) if (strcmp(a, flag) == 0) { if (++i >= argc) { fprintf(stderr, "tplc: %s needs a value\n", flag); return -1; } o->field = argv[i]; continue; }
        VAL("--state", state) VAL("--schema", schema) VAL("--format", format) VAL("--syntax", syntax) VAL("--profile", profile)
#undef VAL
#define FLAG(flag, field) if (strcmp(a, flag) == 0) { o->field = true; continue; }
        FLAG("--reads", reads) FLAG("--trim-blocks", trim_blocks) FLAG("--lstrip-blocks", lstrip_blocks)
        FLAG("--keep-trailing-newline", keep_nl) FLAG("--strict", strict) FLAG("--tidy", tidy)
#undef FLAG
        if (a[0] == '-' && a[1]) { fprintf(stderr, "tplc: unknown lint flag %s\n", a); return -1; }
        o->files[o->nfiles++] = a;
    }
    if (!o->nfiles) { fprintf(stderr, "tplc: lint needs a template\n"); return -1; }
    if (strcmp(o->format, "text") != 0 && strcmp(o->format, "json") != 0) {
        fprintf(stderr, "tplc: --format takes text or json\n");
        return -1;
    }
    if (o->state && o->schema) { fprintf(stderr, "tplc: give --state or --schema, not both\n"); return -1; }
    return 0;
}

/* Compiles or loads one file; fills r. Returns the program (NULL on error) or sets *io. */
static tpl_program *open_one(const lint_opts *o, const char *path, report *r, bool *io)
{
    size_t len;
    char *src = slurp(path, &len);
    if (!src) {
        fprintf(stderr, "%s: error: cannot read template: %s\n", path, strerror(errno ? errno : EIO));
        *io = true;
        return NULL;
    }
    tpl_program *prog = NULL;
    tpl_error err = { 0 };
    tpl_status st;
    if (tpl_is_tplb(src, len)) {
        st = tpl_program_load(path, src, len, &prog, &err);
    } else {
        const char *dot = strrchr(path, '.');
        tpl_syntax syn = dot && strcmp(dot, ".erb") == 0 ? TPL_SYNTAX_ERB
                       : dot && (strcmp(dot, ".fmt") == 0 || strcmp(dot, ".txt") == 0) ? TPL_SYNTAX_FMT : TPL_SYNTAX_JINJA;
        if (o->syntax) syn = strcmp(o->syntax, "erb") == 0 ? TPL_SYNTAX_ERB : strcmp(o->syntax, "fmt") == 0 ? TPL_SYNTAX_FMT : TPL_SYNTAX_JINJA;
        tpl_options opt = { 0 };
        char *dir = strdup(path);
        char *slash = dir ? strrchr(dir, '/') : NULL;
        if (slash) *slash = 0;
        else if (dir) strcpy(dir, ".");
        opt.loader = load_beside;
        opt.loader_data = dir;
        if (tpl_options_profile(&opt, syn, o->profile) != TPL_OK) {
            fprintf(stderr, strcmp(o->profile, "jinja2") && strcmp(o->profile, "pinecall") && strcmp(o->profile, "hf")
                    ? "tplc: unknown profile '%s' (jinja2, pinecall or hf)\n" : "tplc: profile '%s' does not apply to this syntax\n",
                    o->profile);
            free(dir);
            free(src);
            *io = true;
            return NULL;
        }
        opt.trim_blocks |= o->trim_blocks;
        opt.lstrip_blocks |= o->lstrip_blocks;
        opt.keep_trailing_newline |= o->keep_nl;
        opt.strict |= o->strict;
        opt.tidy |= o->tidy;
        st = tpl_compile(path, src, len, &opt, &prog, &err);
        free(dir);
    }
    free(src);
    if (st != TPL_OK) {
        add(r, "error", err.line, err.column, err.message ? err.message : "error", tpl_error_format(&err));
        tpl_error_clear(&err);
        return NULL;
    }
    return prog;
}

int tplc_lint(int argc, char **argv)
{
    lint_opts o;
    if (parse(argc, argv, &o) != 0) { free(o.files); return 2; }
    json_t *known = NULL;
    if ((o.state || o.schema) && !(known = known_names(&o))) { free(o.files); return 2; }
    bool json = strcmp(o.format, "json") == 0, io = false, any = false;
    json_t *all = json ? json_array() : NULL;
    for (int fi = 0; fi < o.nfiles; fi++) {
        const char *path = o.files[fi];
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
                json_array_append_new(diags, json_pack("{s:s, s:i, s:i, s:s}", "severity", f->severity, "line",
                                                       (json_int_t)f->line, "column", (json_int_t)f->col, "message", f->message));
            } else if (f->formatted) {
                fputs(f->formatted, stdout);
            } else {
                printf("%s:%u:%u: %s: %s\n", path, f->line, f->col, f->severity, f->message);
            }
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
    free(o.files);
    return io ? 2 : any ? 1 : 0;
}
