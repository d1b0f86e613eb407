/* tplc prompt VERB ... — prompts as versioned, translatable objects (issue 19, DESIGN.md §10),
 * on the store layer (include/tpl_store.h). Verbs take their own flags, so this command parses
 * its arguments itself (run_raw in tplc/main.c's table). Uses only public headers.
 * Exit status: 0 ok; 1 template error, a missing prompt/version/row, bad input (state, PO file);
 * 2 usage error or store I/O error. */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>
#include <unistd.h>
#include <jansson.h>
#include "tplc.h"
#include "tpl_store.h"

#define EXIT_TEMPLATE TPLC_EXIT_TEMPLATE
#define EXIT_USAGE TPLC_EXIT_USAGE

/* The flags of the verbs: name, whether it takes a value, whether it repeats. */
enum { P_STORE, P_TEMPLATE, P_FILE, P_SYNTAX, P_PROFILE, P_TRKEY, P_LANG, P_PREFIX, P_JSON, P_ALL, P_ARGS,
       P_STATE, P_REMEMBER, P_DICT, P_OUT, P_CHANNEL, P_MEDIUM, P_FUEL, P_MAXDEPTH, P_MAXOUTPUT, P_MAXMEMORY,
       P_NFLAGS };
static const struct { const char *name; bool value, multi; } pflags[P_NFLAGS] = {
    [P_STORE] = { "--store", true, false }, [P_TEMPLATE] = { "--template", true, false },
    [P_FILE] = { "--file", true, false }, [P_SYNTAX] = { "--syntax", true, false },
    [P_PROFILE] = { "--profile", true, false }, [P_TRKEY] = { "--tr-key", true, true },
    [P_LANG] = { "--lang", true, false }, [P_PREFIX] = { "--prefix", true, false },
    [P_JSON] = { "--json", false, false }, [P_ALL] = { "--all", false, false },
    [P_ARGS] = { "--args", true, false }, [P_STATE] = { "--state", true, false },
    [P_REMEMBER] = { "--remember", true, true }, [P_DICT] = { "--dict", true, false },
    [P_OUT] = { "-o", true, false }, [P_CHANNEL] = { "--channel", true, false },
    [P_MEDIUM] = { "--medium", true, false }, [P_FUEL] = { "--fuel", true, false },
    [P_MAXDEPTH] = { "--max-depth", true, false }, [P_MAXOUTPUT] = { "--max-output", true, false },
    [P_MAXMEMORY] = { "--max-memory", true, false },
};

typedef struct popts {
    const char *verb;
    const char *pos[4];
    int npos;
    const char *v[P_NFLAGS];        /* single-valued flags ("" for a given boolean) */
    const char **multi[P_NFLAGS];   /* repeatable flags */
    size_t nmulti[P_NFLAGS];
} popts;

typedef int (*verb_fn)(tpl_store *s, const popts *o);

static int v_create(tpl_store *s, const popts *o);
static int v_list(tpl_store *s, const popts *o);
static int v_show(tpl_store *s, const popts *o);
static int v_versions(tpl_store *s, const popts *o);
static int v_remove(tpl_store *s, const popts *o);
static int v_render(tpl_store *s, const popts *o);
static int v_tr_set(tpl_store *s, const popts *o);
static int v_tr_list(tpl_store *s, const popts *o);
static int v_tr_bind(tpl_store *s, const popts *o);
static int v_tr_unbind(tpl_store *s, const popts *o);
static int v_tr_export(tpl_store *s, const popts *o);
static int v_tr_import(tpl_store *s, const popts *o);
static int v_tr_extract(tpl_store *s, const popts *o);

static const struct verb {
    const char *name, *usage, *flags;
    int min, max;
    verb_fn fn;
} verbs[] = {
    { "create", "NAME (--template TEXT | --file PATH) [--syntax fmt|jinja|erb] [--profile P] [--tr-key K]... [--lang L]",
      "--template --file --syntax --profile --tr-key --lang", 1, 1, v_create },
    { "list", "[--prefix P] [--json]", "--prefix --json", 0, 0, v_list },
    { "show", "NAME[:N]|ID [--json]", "--json", 1, 1, v_show },
    { "versions", "NAME [--all] [--json]", "--all --json", 1, 1, v_versions },
    { "remove", "NAME[:N]|ID", "", 1, 1, v_remove },
    { "render", "NAME[:N]|ID [--args JSON | --state FILE] [--lang L] [--remember FACT]... [--channel C]\n"
      "      [--medium M] [--fuel N] [--max-depth N] [--max-output BYTES] [--max-memory BYTES]",
      "--args --state --lang --remember --channel --medium --fuel --max-depth --max-output --max-memory", 1, 1,
      v_render },
    { "tr-set", "NAME SOURCE LANG TARGET [--dict D]", "--dict", 4, 4, v_tr_set },
    { "tr-list", "NAME [--lang L] [--json]", "--lang --json", 1, 1, v_tr_list },
    { "tr-bind", "NAME DICT", "", 2, 2, v_tr_bind },
    { "tr-unbind", "NAME DICT", "", 2, 2, v_tr_unbind },
    { "tr-export", "(NAME | --dict D) --lang L -o FILE.po", "--dict --lang -o", 0, 1, v_tr_export },
    { "tr-import", "FILE.po [--dict D]", "--dict", 1, 1, v_tr_import },
    { "tr-extract", "(NAME[:N]|ID | --all) (--lang L [--dict D] | -o FILE.pot)", "--all --lang --dict -o", 0, 1,
      v_tr_extract },
};
#define NVERBS (sizeof verbs / sizeof *verbs)

static bool in_words(const char *list, const char *w)
{
    size_t n = strlen(w);
    for (const char *p = list; *p;) {
        while (*p == ' ') p++;
        const char *e = p;
        while (*e && *e != ' ') e++;
        if ((size_t)(e - p) == n && n && memcmp(p, w, n) == 0) return true;
        p = e;
    }
    return false;
}

static void verbs_usage(FILE *f)
{
    for (size_t i = 0; i < NVERBS; i++) fprintf(f, "  tplc prompt %s %s\n", verbs[i].name, verbs[i].usage);
    fputs("  (every verb: --store PATH|postgresql://...; default $TPL_STORE, else ./.tpl/store.db)\n", f);
}

/* Maps a store failure to a message and an exit status. */
static int store_fail(const popts *o, tpl_store *s, tpl_store_status st)
{
    /* a message that is already a diagnostic ("PATH: error: cannot write: ...", a PO file's
     * located error) is printed as it is, not behind a second "error:" */
    const char *m = tpl_store_errmsg(s), *e = strstr(m, ": error: ");
    if (e && !memchr(m, '\n', (size_t)(e - m))) fprintf(stderr, "%s\n", m);
    else fprintf(stderr, "tplc prompt %s: error: %s\n", o->verb, m);
    return st == TPL_STORE_NOT_FOUND || st == TPL_STORE_TEMPLATE ? EXIT_TEMPLATE : EXIT_USAGE;
}

/* ---- JSON output ---- */

static json_t *jstr_or_null(const char *s) { return s ? json_string(s) : json_null(); }

static const char *syntax_word(tpl_syntax x) { return x == TPL_SYNTAX_ERB ? "erb" : x == TPL_SYNTAX_FMT ? "fmt" : "jinja"; }

/* The documented prompt object (README "Prompts as objects"). */
static json_t *prompt_json(const tpl_store_prompt *p)
{
    json_t *keys = json_array(), *dicts = json_array();
    for (size_t i = 0; i < p->ntr_keys; i++) json_array_append_new(keys, json_string(p->tr_keys[i]));
    for (size_t i = 0; i < p->ndicts; i++) json_array_append_new(dicts, json_string(p->dicts[i]));
    return json_pack("{s:I, s:s, s:I, s:s, s:s%, s:o, s:o, s:o, s:o, s:s, s:b, s:i}",
                     "id", (json_int_t)p->id, "name", p->name, "version", (json_int_t)p->version,
                     "syntax", syntax_word(p->syntax), "source", p->source, p->source_len,
                     "profile", jstr_or_null(p->profile), "tr_keys", keys, "lang", jstr_or_null(p->lang),
                     "dicts", dicts, "created_at", p->created_at, "removed", p->removed,
                     "tplb_format", p->tplb_format);
}

static int print_json(json_t *j)
{
    if (!j) { fprintf(stderr, "tplc prompt: out of memory\n"); return EXIT_USAGE; }
    char *s = json_dumps(j, JSON_INDENT(2) | JSON_PRESERVE_ORDER);
    json_decref(j);
    if (!s) { fprintf(stderr, "tplc prompt: out of memory\n"); return EXIT_USAGE; }
    fputs(s, stdout);
    fputc('\n', stdout);
    free(s);
    return 0;
}

static void print_row_line(const tpl_store_prompt *p)
{
    printf("%s:%lld\tid %lld\t%s\t%s%s\n", p->name, (long long)p->version, (long long)p->id, syntax_word(p->syntax),
           p->created_at, p->removed ? "\tremoved" : "");
}

/* ---- verbs ---- */

static bool syntax_of_word(const char *w, tpl_syntax *x)
{
    if (strcmp(w, "fmt") == 0) *x = TPL_SYNTAX_FMT;
    else if (strcmp(w, "jinja") == 0) *x = TPL_SYNTAX_JINJA;
    else if (strcmp(w, "erb") == 0) *x = TPL_SYNTAX_ERB;
    else return false;
    return true;
}

static int v_create(tpl_store *s, const popts *o)
{
    const char *tmpl = o->v[P_TEMPLATE], *file = o->v[P_FILE];
    if (!tmpl == !file) {
        fprintf(stderr, "tplc prompt create: give --template TEXT or --file PATH (one of them)\n");
        return EXIT_USAGE;
    }
    tpl_store_new nw;
    memset(&nw, 0, sizeof nw);
    nw.name = o->pos[0];
    nw.syntax = TPL_SYNTAX_FMT;
    char *text = NULL;
    size_t len;
    if (file) {
        if (!(text = tplc_read_input(file, "template", &len))) return EXIT_USAGE;
        const char *dot = strrchr(file, '.');
        nw.syntax = dot && strcmp(dot, ".erb") == 0 ? TPL_SYNTAX_ERB
                  : dot && (strcmp(dot, ".fmt") == 0 || strcmp(dot, ".txt") == 0) ? TPL_SYNTAX_FMT : TPL_SYNTAX_JINJA;
        nw.source = text, nw.source_len = len, nw.file = file;
    } else {
        nw.source = tmpl, nw.source_len = strlen(tmpl);
    }
    if (o->v[P_SYNTAX] && !syntax_of_word(o->v[P_SYNTAX], &nw.syntax)) {
        fprintf(stderr, "tplc prompt create: --syntax takes fmt|jinja|erb (got '%s')\n", o->v[P_SYNTAX]);
        free(text);
        return EXIT_USAGE;
    }
    nw.profile = o->v[P_PROFILE];
    nw.tr_keys = o->multi[P_TRKEY];
    nw.ntr_keys = o->nmulti[P_TRKEY];
    nw.lang = o->v[P_LANG];
    tpl_store_prompt *p = NULL;
    tpl_error err = { 0 };
    tpl_store_status st = tpl_store_create(s, &nw, &p, &err);
    free(text);
    if (st == TPL_STORE_TEMPLATE && err.message) {
        tplc_print_error(&err);
        tpl_error_clear(&err);
        return EXIT_TEMPLATE;
    }
    if (st) return store_fail(o, s, st);
    printf("created %s:%lld (id %lld)\n", p->name, (long long)p->version, (long long)p->id);
    tpl_store_prompt_free(p);
    return 0;
}

/* Prints rows (list, versions): one line each, or a JSON array with --json; frees them. */
static int print_rows(const popts *o, tpl_store_prompt *v, size_t n)
{
    if (o->v[P_JSON]) {
        json_t *a = json_array();
        for (size_t i = 0; i < n; i++) json_array_append_new(a, prompt_json(&v[i]));
        tpl_store_prompts_free(v, n);
        return print_json(a);
    }
    for (size_t i = 0; i < n; i++) print_row_line(&v[i]);
    tpl_store_prompts_free(v, n);
    return 0;
}

static int v_list(tpl_store *s, const popts *o)
{
    tpl_store_prompt *v;
    size_t n;
    tpl_store_status st = tpl_store_list(s, o->v[P_PREFIX], &v, &n);
    return st ? store_fail(o, s, st) : print_rows(o, v, n);
}

static int v_show(tpl_store *s, const popts *o)
{
    tpl_store_prompt *p;
    tpl_store_status st = tpl_store_get(s, o->pos[0], &p);
    if (st) return store_fail(o, s, st);
    if (o->v[P_JSON]) {
        json_t *j = prompt_json(p);
        tpl_store_prompt_free(p);
        return print_json(j);
    }
    printf("name: %s\nversion: %lld\nid: %lld\nsyntax: %s\n", p->name, (long long)p->version, (long long)p->id,
           syntax_word(p->syntax));
    if (p->profile) printf("profile: %s\n", p->profile);
    if (p->ntr_keys) {
        fputs("tr_keys:", stdout);
        for (size_t i = 0; i < p->ntr_keys; i++) printf(" %s", p->tr_keys[i]);
        fputc('\n', stdout);
    }
    if (p->lang) printf("lang: %s\n", p->lang);
    if (p->ndicts) {
        fputs("dicts:", stdout);
        for (size_t i = 0; i < p->ndicts; i++) printf(" %s", p->dicts[i]);
        fputc('\n', stdout);
    }
    printf("created_at: %s\n%s\n", p->created_at, p->removed ? "removed: true\n" : "");
    fwrite(p->source, 1, p->source_len, stdout);
    if (!p->source_len || p->source[p->source_len - 1] != '\n') fputc('\n', stdout);
    tpl_store_prompt_free(p);
    return 0;
}

static int v_versions(tpl_store *s, const popts *o)
{
    tpl_store_prompt *v;
    size_t n;
    tpl_store_status st = tpl_store_versions(s, o->pos[0], o->v[P_ALL] != NULL, &v, &n);
    return st ? store_fail(o, s, st) : print_rows(o, v, n);
}

static int v_remove(tpl_store *s, const popts *o)
{
    tpl_store_status st = tpl_store_remove(s, o->pos[0]);
    if (st) return store_fail(o, s, st);
    printf("removed %s\n", o->pos[0]);
    return 0;
}

/* A JSON text's error located in the text: FILE:LINE:COL with its line and a caret. */
static void json_error(const char *what, const char *text, size_t tlen, const tpl_error *e)
{
    tpl_error loc = *e;
    loc.file = what;
    if (!loc.line) loc.line = 1, loc.column = 1;
    size_t i = 0;
    uint32_t l = 1;
    while (i < tlen && l < loc.line) { if (text[i] == '\n') l++; i++; }
    size_t j = i;
    /* the line up to 4 KiB past the caret's column (the diagnostic shows 100 columns around it) */
    for (uint32_t col = 1; j < tlen && text[j] != '\n' && text[j] != '\r' && col < loc.column; col++) {
        j++;
        while (j < tlen && ((unsigned char)text[j] & 0xC0) == 0x80) j++;
    }
    size_t stop = tlen - j > 4096 ? j + 4096 : tlen;
    while (j < stop && text[j] != '\n' && text[j] != '\r') j++;
    char *line = malloc(j - i + 1);
    if (line) { memcpy(line, text + i, j - i); line[j - i] = 0; }
    loc.source_line = line;
    tplc_print_error(&loc);
    free(line);
}

static int v_render(tpl_store *s, const popts *o)
{
    if (o->v[P_ARGS] && o->v[P_STATE]) {
        fprintf(stderr, "tplc prompt render: --args and --state exclude each other\n");
        return EXIT_USAGE;
    }
    char *state = NULL;
    size_t slen = 0;
    const char *what = "--args";
    if (o->v[P_STATE]) {
        if (!(state = tplc_read_input(o->v[P_STATE], "state", &slen))) return EXIT_USAGE;
        what = o->v[P_STATE];
    }
    /* the call's channel and medium: tplc render's choices */
    static const char *const choice[][4] = { { "--channel", "phone", "web", "whatsapp" }, { "--medium", "voice", "text", NULL } };
    for (int c = 0; c < 2; c++) {
        const char *v = o->v[c ? P_MEDIUM : P_CHANNEL];
        if (v && !((choice[c][1] && !strcmp(v, choice[c][1])) || (choice[c][2] && !strcmp(v, choice[c][2])) ||
                   (choice[c][3] && !strcmp(v, choice[c][3])))) {
            fprintf(stderr, "tplc prompt render: %s takes %s (got '%s')\n", choice[c][0],
                    c ? "voice|text" : "phone|web|whatsapp", v);
            free(state);
            return EXIT_USAGE;
        }
    }
    /* render limits and the call (as tplc render's --fuel ... and --channel/--medium) */
    tpl_limits lim = { 0 };
    static const struct { int flag; bool bytes; uint64_t max; } lims[] = {
        { P_FUEL, false, UINT64_MAX }, { P_MAXDEPTH, false, UINT32_MAX }, { P_MAXOUTPUT, true, UINT64_MAX },
        { P_MAXMEMORY, true, UINT64_MAX } };
    for (size_t i = 0; i < sizeof lims / sizeof *lims; i++) {
        const char *v = o->v[lims[i].flag];
        uint64_t x;
        if (!v) continue;
        if (!tplc_parse_number(v, lims[i].bytes, lims[i].max, &x)) {
            fprintf(stderr, "tplc prompt render: %s takes a positive number%s (got '%s')\n", pflags[lims[i].flag].name,
                    lims[i].bytes ? " of bytes (K, M, G suffixes)" : "", v);
            free(state);
            return EXIT_USAGE;
        }
        if (lims[i].flag == P_FUEL) lim.fuel = x;
        else if (lims[i].flag == P_MAXDEPTH) lim.max_depth = (uint32_t)x;
        else if (lims[i].flag == P_MAXOUTPUT) lim.max_output = x;
        else lim.max_memory = x;
    }
    tpl_store_loaded *l = NULL;
    tpl_error err = { 0 };
    tpl_store_status st = tpl_store_load(s, o->pos[0], &l, &err);
    if (st) {
        free(state);
        if (st == TPL_STORE_TEMPLATE && err.message) { tplc_print_error(&err); tpl_error_clear(&err); return EXIT_TEMPLATE; }
        return store_fail(o, s, st);
    }
    tpl_render *r = tpl_render_new(&lim);
    int rc = 0;
    if (!r) { fprintf(stderr, "tplc: out of memory\n"); rc = EXIT_USAGE; }
    if (!rc && (o->v[P_CHANNEL] || o->v[P_MEDIUM]) && tpl_render_set_call(r, o->v[P_CHANNEL], o->v[P_MEDIUM]) != TPL_OK) {
        tplc_print_error(tpl_render_error(r));
        rc = EXIT_USAGE;
    }
    const char *js = state ? state : o->v[P_ARGS];
    size_t jl = state ? slen : js ? strlen(js) : 0;
    if (!rc && js && tpl_render_set_state_json(r, js, jl) != TPL_OK) {
        const tpl_error *e = tpl_render_error(r);
        if (e->status == TPL_ERR_STATE) json_error(what, js, jl, e);
        else tplc_print_error(e);
        rc = e->status >= TPL_ERR_USAGE && e->status != TPL_ERR_NOMEM ? EXIT_USAGE : EXIT_TEMPLATE;
    }
    if (!rc && tpl_store_apply(l, r, o->v[P_LANG], getenv("TPL_LANG")) != TPL_OK) {
        tplc_print_error(tpl_render_error(r));
        rc = EXIT_USAGE;
    }
    for (size_t i = 0; !rc && i < o->nmulti[P_REMEMBER]; i++)
        if (tpl_render_add_fact(r, o->multi[P_REMEMBER][i], strlen(o->multi[P_REMEMBER][i])) != TPL_OK) {
            tplc_print_error(tpl_render_error(r));
            rc = EXIT_USAGE;
        }
    if (!rc) {
        const char *out;
        size_t n;
        tpl_status ts = tpl_render_run(r, l->program, &out, &n);
        if (ts == TPL_ERR_STATE && js) { /* the state is refused for this syntax (a too-long int) */
            json_error(what, js, jl, tpl_render_error(r));
            rc = EXIT_TEMPLATE;
        } else if (ts != TPL_OK) {
            tplc_print_error(tpl_render_error(r));
            rc = ts >= TPL_ERR_USAGE && ts != TPL_ERR_NOMEM ? EXIT_USAGE : EXIT_TEMPLATE;
        } else {
            fwrite(out, 1, n, stdout);
        }
    }
    tpl_render_free(r);
    tpl_store_loaded_free(l);
    free(state);
    return rc;
}

/* One statement: the row is set only when the prompt NAME exists (any version). */
static int v_tr_set(tpl_store *s, const popts *o)
{
    tpl_store_status st = tpl_store_prompt_tr_set(s, o->pos[0], o->v[P_DICT], o->pos[2], o->pos[1], o->pos[3]);
    return st ? store_fail(o, s, st) : 0;
}

static int v_tr_list(tpl_store *s, const popts *o)
{
    tpl_store_prompt *p;
    tpl_store_status st = tpl_store_get(s, o->pos[0], &p);
    if (st) return store_fail(o, s, st);
    const char **dicts = calloc(p->ndicts + 1, sizeof *dicts);
    if (!dicts) { tpl_store_prompt_free(p); fprintf(stderr, "tplc: out of memory\n"); return EXIT_USAGE; }
    dicts[0] = p->name;
    for (size_t i = 0; i < p->ndicts; i++) dicts[i + 1] = p->dicts[i];
    tpl_store_tr *v;
    size_t n;
    st = tpl_store_tr_list(s, dicts, p->ndicts + 1, o->v[P_LANG], &v, &n);
    free(dicts);
    tpl_store_prompt_free(p);
    if (st) return store_fail(o, s, st);
    if (o->v[P_JSON]) {
        json_t *a = json_array();
        for (size_t i = 0; i < n; i++) {
            json_t *row = json_pack("{s:s, s:s, s:s, s:s}", "dict", v[i].dict, "lang", v[i].lang, "source", v[i].source,
                                    "target", v[i].target);
            if (row && v[i].plural) {
                json_t *forms = json_array();
                for (size_t k = 0; k < v[i].nforms; k++) json_array_append_new(forms, json_string(v[i].forms[k]));
                json_object_set_new(row, "plural", json_string(v[i].plural));
                json_object_set_new(row, "forms", forms);
            }
            json_array_append_new(a, row);
        }
        tpl_store_trs_free(v, n);
        return print_json(a);
    }
    for (size_t i = 0; i < n; i++) printf("%s\t%s\t%s\t%s\n", v[i].dict, v[i].lang, v[i].source, v[i].target);
    tpl_store_trs_free(v, n);
    return 0;
}

static int v_tr_bind(tpl_store *s, const popts *o)
{
    tpl_store_status st = tpl_store_bind(s, o->pos[0], o->pos[1]);
    return st ? store_fail(o, s, st) : 0;
}

static int v_tr_unbind(tpl_store *s, const popts *o)
{
    tpl_store_status st = tpl_store_unbind(s, o->pos[0], o->pos[1]);
    return st ? store_fail(o, s, st) : 0;
}

/* tr-export NAME: the prompt's own dictionary and its bound ones; --dict D: that one. */
static int v_tr_export(tpl_store *s, const popts *o)
{
    const char **dicts = NULL;
    size_t nd = 1;
    tpl_store_prompt *p = NULL;
    if (o->npos) {
        tpl_store_status st = tpl_store_get(s, o->pos[0], &p);
        if (st) return store_fail(o, s, st);
        nd = 1 + p->ndicts;
    }
    if (!(dicts = calloc(nd, sizeof *dicts))) { tpl_store_prompt_free(p); fprintf(stderr, "tplc: out of memory\n"); return EXIT_USAGE; }
    if (p) {
        dicts[0] = p->name;
        for (size_t i = 0; i < p->ndicts; i++) dicts[i + 1] = p->dicts[i];
    } else {
        dicts[0] = o->v[P_DICT];
    }
    int rc = 0;
    size_t n = 0;
    tpl_store_status st = tpl_store_po_export(s, dicts, nd, o->v[P_LANG], o->v[P_OUT], &n);
    if (st) rc = store_fail(o, s, st);
    else fprintf(stderr, "tplc prompt tr-export: %zu entries written to %s\n", n, o->v[P_OUT]);
    free(dicts);
    tpl_store_prompt_free(p);
    return rc;
}

/* A tr-import error: the store's "PATH:LINE:COL: error: MESSAGE" (PATH: read, the file
 * libgettextpo read; name: what the user named) as FILE:LINE:COL with the input's line and a
 * caret. text: the input, or NULL to read it again from read. */
static void po_error(const char *name, const char *read, const char *msg, const char *text, size_t tlen)
{
    size_t rl = strlen(read);
    unsigned long line = 0, col = 0;
    int used = 0;
    if (strncmp(msg, read, rl) != 0 || msg[rl] != ':' ||
        sscanf(msg + rl + 1, "%lu:%lu: error: %n", &line, &col, &used) != 2 || used <= 0 || !line || line > UINT32_MAX ||
        !col || col > UINT32_MAX) {
        if (strncmp(msg, read, rl) == 0 && msg[rl] == ':')   /* (named as the user named the file, not its copy's name) */
            fprintf(stderr, "%s%s\n", name, msg + rl);
        else
            fprintf(stderr, "%s\n", msg);
        return;
    }
    char *own = NULL;
    const char *why;
    if (!text) text = own = tplc_read(read, &tlen, &why);
    tpl_error e = { TPL_ERR_SYNTAX, msg + rl + 1 + used, name, (uint32_t)line, (uint32_t)col, NULL, TPL_EK_SYNTAX };
    json_error(name, text ? text : "", text ? tlen : 0, &e);
    free(own);
}

/* Standard input's PO text (text[0, len]) in a temporary file of dir that libgettextpo reads by
 * name: an unnamed one (O_TMPFILE, else mkstemp's name removed at once) read as /proc/self/fd/N
 * (written at path, cap bytes), so an import killed at any point leaves nothing behind; where
 * /proc is not mounted a named one, which *named then says the caller removes after the import.
 * The file's descriptor (kept open while libgettextpo reads it), or -1 with errno set. */
static int po_stdin_file(const char *dir, const char *text, size_t len, char *path, size_t cap, bool *named)
{
    int fd = -1;
    *named = false;
#ifdef O_TMPFILE
    fd = open(dir, O_TMPFILE | O_RDWR | O_CLOEXEC, 0600);
#endif
    if (fd < 0) {
        if (snprintf(path, cap, "%s/tplc-po-XXXXXX", dir) >= (int)cap) { errno = ENAMETOOLONG; return -1; }
        if ((fd = mkstemp(path)) < 0) return -1;
        *named = true;
    }
    char name[64];
    snprintf(name, sizeof name, "/proc/self/fd/%d", fd);
    int probe = open(name, O_RDONLY | O_CLOEXEC);
    if (probe >= 0) {
        close(probe);
        if (*named) unlink(path);   /* (before a byte is written: nothing of it outlives tplc) */
        *named = false;
        snprintf(path, cap, "%s", name);
    } else if (!*named) {   /* an unnamed file no name reaches: a named one instead */
        close(fd);
        if (snprintf(path, cap, "%s/tplc-po-XXXXXX", dir) >= (int)cap) { errno = ENAMETOOLONG; return -1; }
        if ((fd = mkstemp(path)) < 0) return -1;
        *named = true;
    }
    for (size_t at = 0; at < len;) {
        ssize_t w = write(fd, text + at, len - at);
        if (w < 0 && errno == EINTR) continue;
        if (w <= 0) {
            int e = w < 0 ? errno : ENOSPC;
            if (*named) unlink(path);
            close(fd);
            errno = e;
            return -1;
        }
        at += (size_t)w;
    }
    return fd;
}

/* tr-import FILE.po: a malformed file is a located error (exit 1). Standard input ("-") is read
 * up to tplc's input cap into a temporary file libgettextpo reads (it read "-" itself, without
 * end: `yes | tplc prompt tr-import -` grew until memory ran out). */
static int v_tr_import(tpl_store *s, const popts *o)
{
    size_t n = 0, tlen = 0;
    const char *path = o->pos[0];
    char *text = NULL, tmp[4096] = "";
    int fd = -1;
    bool named = false;
    if (strcmp(path, "-") != 0) {
        /* an input as every other of tplc's: a regular file within the size cap, checked before
         * libgettextpo opens it (a FIFO blocked it forever, /dev/zero was read without end) */
        FILE *f = tplc_open_input(path, "the PO file");
        if (!f) return EXIT_USAGE;
        fclose(f);
    } else {
        if (!(text = tplc_read_input(path, "the PO file", &tlen))) return EXIT_USAGE;
        const char *dir = getenv("TMPDIR");
        if (!dir || !*dir) dir = "/tmp";
        if ((fd = po_stdin_file(dir, text, tlen, tmp, sizeof tmp, &named)) < 0) {
            fprintf(stderr, "-: error: cannot read the PO file: no temporary file in %s: %s\n", dir, strerror(errno));
            free(text);
            return EXIT_USAGE;
        }
        path = tmp;
    }
    tpl_store_status st = tpl_store_po_import(s, path, o->v[P_DICT], &n);
    int rc = 0;
    if (st == TPL_STORE_INVALID) {
        po_error(o->pos[0], path, tpl_store_errmsg(s), text, tlen);
        rc = EXIT_TEMPLATE;
    } else if (st) {
        rc = store_fail(o, s, st);
    } else {
        printf("imported %zu rows from %s\n", n, o->pos[0]);
    }
    if (named) unlink(tmp);
    if (fd >= 0) close(fd);
    free(text);
    return rc;
}

/* The loader of a stored prompt's compile: include/import/extends name other prompts by ref. */
static char *ref_loader(void *data, const char *name, size_t name_len, size_t *len)
{
    char ref[300];
    if (name_len >= sizeof ref || memchr(name, 0, name_len)) return NULL;
    memcpy(ref, name, name_len);
    ref[name_len] = 0;
    tpl_store_prompt *p = NULL;
    char *src = NULL;
    if (tpl_store_get(data, ref, &p) == TPL_STORE_OK && (src = malloc(p->source_len + 1))) {
        memcpy(src, p->source, p->source_len);
        src[p->source_len] = 0;
        *len = p->source_len;
    }
    tpl_store_prompt_free(p);
    return src;
}

/* tr-extract: the messages of stored prompts (tr() texts, fmt template strings, Jinja gettext
 * messages, as tplc tr-extract finds them in files) compiled from their sources; with --lang L
 * added as untranslated rows (target "") to each prompt's own dictionary (or --dict D), rows
 * that exist kept; with -o FILE.pot written as one PO template ("#: NAME:LINE" references). */
static int v_tr_extract(tpl_store *s, const popts *o)
{
    if (!o->npos == !o->v[P_ALL] || (!o->v[P_LANG] && !o->v[P_OUT]) || (o->v[P_DICT] && !o->v[P_LANG])) {
        fprintf(stderr, "tplc prompt tr-extract: give NAME or --all, and --lang L (rows into the store; --dict D: into D) "
                        "or -o FILE.pot\n");
        return EXIT_USAGE;
    }
    tpl_store_prompt *v = NULL;
    size_t n = 0;
    tpl_store_status st;
    if (o->npos) {
        tpl_store_prompt *p;
        if ((st = tpl_store_get(s, o->pos[0], &p))) return store_fail(o, s, st);
        v = p, n = 1;
    } else if ((st = tpl_store_list(s, NULL, &v, &n))) {
        return store_fail(o, s, st);
    }
    tplc_msgs *all = o->v[P_OUT] ? tplc_msgs_new() : NULL;
    int rc = o->v[P_OUT] && !all ? EXIT_USAGE : 0;
    size_t total = 0;
    for (size_t i = 0; i < n && !rc; i++) {
        const tpl_store_prompt *p = &v[i];
        tpl_options opt;
        memset(&opt, 0, sizeof opt);
        opt.loader = ref_loader;
        opt.loader_data = s;
        if (tpl_options_profile(&opt, p->syntax, p->profile) != TPL_OK) {
            fprintf(stderr, "tplc prompt tr-extract: %s: profile '%s' does not apply to %s prompts\n", p->name,
                    p->profile ? p->profile : "", syntax_word(p->syntax));
            rc = EXIT_USAGE;
            break;
        }
        tpl_program *prog = NULL;
        tpl_error err = { 0 };
        if (tpl_compile(p->name, p->source, p->source_len, &opt, &prog, &err) != TPL_OK) {
            tplc_print_error(&err);
            rc = err.status == TPL_ERR_NOMEM ? EXIT_USAGE : EXIT_TEMPLATE;
            tpl_error_clear(&err);
            break;
        }
        tplc_msgs *one = o->v[P_LANG] ? tplc_msgs_new() : NULL;
        if ((o->v[P_LANG] && !one) || (one && tplc_msgs_add(one, prog, p->name)) || (all && tplc_msgs_add(all, prog, p->name)))
            rc = EXIT_USAGE;
        tpl_program_free(prog);
        if (!rc && one) {
            size_t nm, added = 0, nctx = 0;
            const tplc_msg *ms = tplc_msgs_list(one, &nm);
            for (size_t k = 0; k < nm; k++) nctx += ms[k].ctx != NULL;
            tpl_store_pot_entry *e = tplc_msgs_entries(one);
            const char *dict = o->v[P_DICT] ? o->v[P_DICT] : p->name;
            if (!e) rc = EXIT_USAGE;
            else if ((st = tpl_store_tr_add_untranslated(s, dict, o->v[P_LANG], e, nm, &added))) rc = store_fail(o, s, st);
            else printf("%s: %zu messages, %zu untranslated rows added to %s (%s)%s\n", p->name, nm, added, dict,
                        o->v[P_LANG], nctx ? "; messages with a context (pgettext) are not stored: the store's PO files "
                                             "name the dictionary by msgctxt" : "");
            free(e);
        }
        tplc_msgs_free(one);
    }
    if (!rc && all) {
        tplc_msgs_list(all, &total);
        if (!(rc = tplc_msgs_write_pot(all, o->v[P_OUT])))
            fprintf(stderr, "tplc prompt tr-extract: %zu messages written to %s\n", total, o->v[P_OUT]);
    }
    tplc_msgs_free(all);
    tpl_store_prompts_free(v, n);
    return rc;
}

/* ---- the command ---- */

/* Whether paths a and b name the same directory entry: the same folder (by device and inode)
 * and the same last component, whether or not the file exists (a store's -journal and -wal
 * files come and go: a PO file written there was deleted, or read as a journal, by SQLite). */
static bool same_entry(const char *a, const char *b)
{
    const char *sa = strrchr(a, '/'), *sb = strrchr(b, '/');
    const char *ba = sa ? sa + 1 : a, *bb = sb ? sb + 1 : b;
    if (!*ba || strcmp(ba, bb) != 0 || strcmp(ba, ".") == 0 || strcmp(ba, "..") == 0) return false;
    char *da = sa ? strndup(a, (size_t)(sa - a) + 1) : strdup("."), *db = sb ? strndup(b, (size_t)(sb - b) + 1) : strdup(".");
    struct stat xa, xb;
    bool same = !da || !db || (stat(da, &xa) == 0 && stat(db, &xb) == 0 && xa.st_dev == xb.st_dev && xa.st_ino == xb.st_ino);
    free(da);
    free(db);
    return same; /* (out of memory: refused rather than risked) */
}

/* Whether out names the SQLite store at where or its journal, WAL or shared-memory file (also
 * one that does not exist now). */
static bool out_is_store(const char *out, const char *where)
{
    static const char *const sfx[] = { "", "-journal", "-wal", "-shm" };
    for (size_t i = 0; i < sizeof sfx / sizeof *sfx; i++) {
        char *f = malloc(strlen(where) + strlen(sfx[i]) + 1);
        if (!f) return true; /* refused rather than risked */
        strcpy(f, where);
        strcat(f, sfx[i]);
        bool same = tplc_same_file(out, f) || same_entry(out, f);
        free(f);
        if (same) return true;
    }
    return false;
}

/* Verbs that may create a missing SQLite store; the others need one (sqlite3 creates its FILE,
 * never its folder: tplc creates only the default .tpl/ folder). */
static const char creating_verbs[] = "create tr-set tr-bind tr-import";

/* The SQLite file named by where (a path, or SQLite's URI form file:PATH, file:///ABS,
 * file://localhost/ABS) into *path; NULL, or the reason when where is a URL tplc cannot open
 * exactly (sqlite: and other schemes, URI parameters, %-escapes): a file named after a URL is
 * never what was meant. */
static const char *store_file(const char *where, const char **path)
{
    *path = where;
    if (strncasecmp(where, "file:", 5) == 0) {
        const char *p = where + 5;
        if (strncmp(p, "//", 2) == 0) {
            p += 2;
            if (strncasecmp(p, "localhost/", 10) == 0) p += 9;
            else if (*p != '/') return "a file: URL's host must be empty or localhost";
        }
        if (strpbrk(p, "?#%")) return "URI parameters (?...), fragments and %-escapes are not supported; give the file's path";
        if (!*p) return "the file: URL names no file";
        *path = p;
        return NULL;
    }
    if (strncasecmp(where, "sqlite:", 7) == 0 || strncasecmp(where, "sqlite3:", 8) == 0)
        return "sqlite: URLs are not supported (sqlite:///x.db is relative for some tools, absolute for others); "
               "give the SQLite file's path";
    size_t n = strspn(where, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789+.-");
    if (n && strncmp(where + n, "://", 3) == 0) return "not a store: give an SQLite file's path or a postgresql:// URL";
    return NULL;
}

int tplc_prompt(int argc, char **argv)
{
    if (argc < 2) {
        fprintf(stderr, "tplc prompt: a verb is needed:\n");
        verbs_usage(stderr);
        return EXIT_USAGE;
    }
    const struct verb *vb = NULL;
    for (size_t i = 0; i < NVERBS && !vb; i++)
        if (strcmp(verbs[i].name, argv[1]) == 0) vb = &verbs[i];
    if (!vb) {
        fprintf(stderr, "tplc prompt: unknown verb '%s'; the verbs:\n", argv[1]);
        verbs_usage(stderr);
        return EXIT_USAGE;
    }
    popts o;
    memset(&o, 0, sizeof o);
    o.verb = vb->name;
    int rc = 0;
    for (int k = 0; k < P_NFLAGS; k++)
        if (pflags[k].multi && !(o.multi[k] = calloc((size_t)argc + 1, sizeof *o.multi[k]))) {
            fprintf(stderr, "tplc: out of memory\n");
            rc = EXIT_USAGE;
        }
    bool dashdash = false;
    for (int i = 2; i < argc && !rc; i++) {
        const char *a = argv[i];
        if (dashdash || a[0] != '-' || a[1] == 0) {
            if (o.npos >= vb->max) {
                fprintf(stderr, "tplc prompt %s: unexpected argument '%s' (usage: tplc prompt %s %s)\n", vb->name, a,
                        vb->name, vb->usage);
                rc = EXIT_USAGE;
            } else {
                o.pos[o.npos++] = a;
            }
            continue;
        }
        if (strcmp(a, "--") == 0) { dashdash = true; continue; }
        if (strcmp(a, "--help") == 0 || strcmp(a, "-h") == 0) {
            printf("usage: tplc prompt %s %s [--store PATH|URL]\n", vb->name, vb->usage);
            rc = -1;
            break;
        }
        const char *eq = strncmp(a, "--", 2) == 0 ? strchr(a, '=') : NULL;
        size_t nl = eq ? (size_t)(eq - a) : strlen(a);
        int f = -1;
        for (int k = 0; k < P_NFLAGS && f < 0; k++)
            if (strlen(pflags[k].name) == nl && memcmp(pflags[k].name, a, nl) == 0) f = k;
        char fname[32];
        snprintf(fname, sizeof fname, "%.*s", (int)(nl < 31 ? nl : 31), a);
        if (f < 0 || (f != P_STORE && !in_words(vb->flags, pflags[f].name))) {
            fprintf(stderr, "tplc prompt %s: %s %s (usage: tplc prompt %s %s)\n", vb->name,
                    f < 0 ? "unknown flag" : "this verb does not take", fname, vb->name, vb->usage);
            rc = EXIT_USAGE;
            break;
        }
        const char *val = "";
        if (pflags[f].value) {
            if (eq) val = eq + 1;
            else if (i + 1 < argc) val = argv[++i];
            else { fprintf(stderr, "tplc prompt %s: %s needs a value\n", vb->name, fname); rc = EXIT_USAGE; break; }
        } else if (eq) {
            fprintf(stderr, "tplc prompt %s: %s takes no value\n", vb->name, fname);
            rc = EXIT_USAGE;
            break;
        }
        if (pflags[f].multi) {
            o.multi[f][o.nmulti[f]++] = val;
        } else if (o.v[f]) {
            fprintf(stderr, "tplc prompt %s: %s given twice\n", vb->name, fname);
            rc = EXIT_USAGE;
        } else {
            o.v[f] = val;
        }
    }
    if (!rc && o.npos < vb->min) {
        fprintf(stderr, "tplc prompt %s: missing arguments (usage: tplc prompt %s %s)\n", vb->name, vb->name, vb->usage);
        rc = EXIT_USAGE;
    }
    if (!rc && vb->fn == v_tr_export && (!o.npos == !o.v[P_DICT] || !o.v[P_LANG] || !o.v[P_OUT])) {
        fprintf(stderr, "tplc prompt tr-export: give NAME or --dict D, and --lang L and -o FILE.po\n");
        rc = EXIT_USAGE;
    }
    if (!rc) {
        const char *where = o.v[P_STORE], *from = "--store";
        if (!where) { where = getenv("TPL_STORE"); from = "$TPL_STORE"; }
        bool dflt = !where || (!*where && !o.v[P_STORE]);
        if (dflt) where = ".tpl/store.db";
        bool url = strncmp(where, "postgresql://", 13) == 0 || strncmp(where, "postgres://", 11) == 0;
        const char *why = NULL;
        if (!*where) why = "empty: give an SQLite file's path or a postgresql:// URL";
        else if (!url) why = store_file(where, &where);
        tpl_store *s = NULL;
        tpl_store_status st = TPL_STORE_OK;
        struct stat sb;
        if (why) {
            fprintf(stderr, "tplc: error: %s '%s': %s\n", from, o.v[P_STORE] ? o.v[P_STORE] : getenv("TPL_STORE"), why);
            rc = EXIT_USAGE;
        } else if (!url && stat(where, &sb) != 0 && (errno == ENOENT || errno == ENOTDIR) && !in_words(creating_verbs, vb->name)) {
            fprintf(stderr, "%s: error: no store at %s (tplc prompt %s does not create one; "
                    "tplc prompt create does)\n", where, where, vb->name);
            rc = EXIT_USAGE;
        } else if (!url && !dflt && stat(where, &sb) != 0 && strrchr(where, '/')) {
            /* like sqlite3: the file is created, its folder is not */
            const char *sl = strrchr(where, '/');
            char *dir = sl == where ? strdup("/") : strndup(where, (size_t)(sl - where));
            if (dir && stat(dir, &sb) != 0) {
                fprintf(stderr, "%s: error: no folder %s (tplc creates a store's file, not its folder)\n", where, dir);
                rc = EXIT_USAGE;
            }
            free(dir);
        }
        if (rc) {
        } else if (!url && o.v[P_OUT] && out_is_store(o.v[P_OUT], where)) {
            /* tr-export -o .tpl/store.db replaced the database with a PO file */
            fprintf(stderr, "tplc: error: -o %s is the store (%s) or one of its files; tplc does not write over its store\n",
                    o.v[P_OUT], where);
            rc = EXIT_USAGE;
        } else if ((st = tpl_store_open(where, &s))) {
            fprintf(stderr, "%s: error: %s\n", url ? "store" : where, tpl_store_errmsg(s));
            rc = st == TPL_STORE_NOMEM || st == TPL_STORE_IO || st == TPL_STORE_INVALID ? EXIT_USAGE : EXIT_TEMPLATE;
        } else {
            rc = vb->fn(s, &o);
            /* a debug count (tests/store_cli.py t_round_trips; tpl_store_round_trips) */
            const char *rt = getenv("TPL_STORE_ROUND_TRIPS");
            if (rt && *rt) fprintf(stderr, "tplc prompt %s: %llu store round trips\n", vb->name,
                                   (unsigned long long)tpl_store_round_trips(s));
        }
        tpl_store_close(s);
    }
    for (int k = 0; k < P_NFLAGS; k++) free(o.multi[k]);
    return rc < 0 ? 0 : rc;
}
