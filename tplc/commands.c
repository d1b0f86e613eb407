/* tplc render, dump, compile and tr-extract, and what they share (compiling a template with the
 * command line's options, loading state, goldens and catalogs). Uses only the public header. */
#include <dlfcn.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <jansson.h>
#include "tplc.h"
#include "tpl_store.h"

#define EXIT_TEMPLATE TPLC_EXIT_TEMPLATE
#define EXIT_USAGE TPLC_EXIT_USAGE

void tplc_print_error(const tpl_error *e)
{
    char *s = tpl_error_format(e);
    if (s) { fputs(s, stderr); free(s); }
    else fprintf(stderr, "error: %s\n", e->message ? e->message : "unknown");
}

/* A JSON error in a state/golden/catalog file: FILE:LINE:COL with the file's line and a caret. */
static void print_json_error(const char *path, const char *text, size_t tlen, const tpl_error *e)
{
    tpl_error loc = *e;
    loc.file = path;
    if (!loc.line) loc.line = 1, loc.column = 1; /* a document-wide error: its first line */
    char *line = NULL;
    if (text) {
        size_t i = 0;
        uint32_t l = 1;
        while (i < tlen && l < loc.line) { if (text[i] == '\n') l++; i++; }
        size_t j = i;
        /* the line up to 4 KiB past the caret's column: the diagnostic shows at most 100
         * columns around it, and "..." still says the line goes on (a 200 MB state on one line
         * was copied whole) */
        uint32_t col = 1;
        while (j < tlen && text[j] != '\n' && text[j] != '\r' && col < loc.column) {
            j++;
            while (j < tlen && ((unsigned char)text[j] & 0xC0) == 0x80) j++;
            col++;
        }
        size_t stop = tlen - j > 4096 ? j + 4096 : tlen;
        while (j < stop && text[j] != '\n' && text[j] != '\r') j++;
        line = malloc(j - i + 1);
        if (line) { memcpy(line, text + i, j - i); line[j - i] = 0; }
    }
    loc.source_line = line;
    tplc_print_error(&loc);
    free(line);
}

static tpl_syntax syntax_of(const char *path)
{
    const char *dot = strrchr(path, '.');
    if (dot && strcmp(dot, ".erb") == 0) return TPL_SYNTAX_ERB;
    if (dot && (strcmp(dot, ".fmt") == 0 || strcmp(dot, ".txt") == 0)) return TPL_SYNTAX_FMT;
    return TPL_SYNTAX_JINJA;
}

static bool ends_with(const char *s, const char *suffix);

/* The syntax of a source at path (--syntax, else its extension) and the options of --profile for
 * it. Returns false, with a message on stderr, when the profile does not apply to that syntax. */
static bool source_options(const tplc_opts *o, const char *path, tpl_syntax *syn, tpl_options *opt)
{
    *syn = syntax_of(path);
    if (o->syntax) *syn = strcmp(o->syntax, "erb") == 0 ? TPL_SYNTAX_ERB : strcmp(o->syntax, "fmt") == 0 ? TPL_SYNTAX_FMT : TPL_SYNTAX_JINJA;
    *opt = (tpl_options){ 0 };
    if (tpl_options_profile(opt, *syn, o->profile) != TPL_OK) {
        fprintf(stderr, "tplc: profile '%s' does not apply to this syntax\n", o->profile);
        return false;
    }
    return true;
}
static void default_symbol(const char *tpl, char *out, size_t cap);

/* A precompiled .tplb (by magic, or by extension): load and verify it instead of compiling. */
static int load_tplb(const tplc_opts *o, const char *path, const char *bytes, size_t len, tpl_program **prog,
                     tpl_error *errout, char **msgout)
{
    if (o->syntax || o->profile || o->trim_blocks || o->lstrip_blocks || o->keep_nl || o->strict || o->tidy || o->autoescape ||
        o->extensions.n || o->max_compile_memory) {
        fprintf(stderr, "%s: error: compile-time flags do not apply to a .tplb (they were fixed by tplc compile)\n", path);
        return EXIT_USAGE;
    }
    tpl_error err = { 0 };
    tpl_status st = tpl_program_load(path, bytes, len, prog, &err);
    if (st != TPL_OK) {
        if (errout) {
            *errout = err;
            *msgout = strdup(err.message ? err.message : "error");
            return EXIT_TEMPLATE;
        }
        tplc_print_error(&err);
        tpl_error_clear(&err);
        return EXIT_TEMPLATE;
    }
    return 0;
}

/* A shared library of programs built from `tplc compile --emit c [--native]` files (VIEWS.so
 * --name SYMBOL): load the static program SYMBOL from it (the library stays loaded until tplc
 * exits; its native code calls back into this tplc's libtpl, exported with -rdynamic). */
static int load_shared(const tplc_opts *o, const char *path, tpl_program **prog)
{
    if (o->syntax || o->profile || o->trim_blocks || o->lstrip_blocks || o->keep_nl || o->strict || o->tidy || o->autoescape ||
        o->extensions.n || o->max_compile_memory) {
        fprintf(stderr, "%s: error: compile-time flags do not apply to a compiled program (they were fixed by tplc compile)\n", path);
        return EXIT_USAGE;
    }
    char symbol[128];
    default_symbol(path, symbol, sizeof symbol);
    char *full = malloc(strlen(path) + 3);
    if (!full) { fprintf(stderr, "tplc: out of memory\n"); return EXIT_USAGE; }
    sprintf(full, "%s%s", strchr(path, '/') ? "" : "./", path); /* dlopen searches bare names */
    void *h = dlopen(full, RTLD_NOW | RTLD_LOCAL);
    free(full);
    if (!h) { fprintf(stderr, "%s: error: cannot load the library: %s\n", path, dlerror()); return EXIT_USAGE; }
    const char *name = o->name ? o->name : symbol;
    const tpl_static_program *sp = dlsym(h, name);
    if (!sp) { fprintf(stderr, "%s: error: no program named %s in it\n", path, name); dlclose(h); return EXIT_USAGE; }
    tpl_error err = { 0 };
    if (tpl_program_load_static(sp, prog, &err) != TPL_OK) {
        tplc_print_error(&err);
        tpl_error_clear(&err);
        dlclose(h);
        return EXIT_TEMPLATE;
    }
    return 0;
}

int tplc_compile_path_all(const tplc_opts *o, const char *path, tpl_program **prog, tpl_error *errs, char **msgs,
                          size_t cap, size_t *nerr)
{
    if (nerr) *nerr = 0;
    if (ends_with(path, ".so") && o->cmd && (strcmp(o->cmd->name, "render") == 0 || strcmp(o->cmd->name, "dump") == 0))
        return load_shared(o, path, prog);
    size_t len;
    char *src = tplc_read_input(path, "template", &len);
    if (!src) return EXIT_USAGE;
    size_t plen = strlen(path);
    if (tpl_is_tplb(src, len) || (plen > 5 && strcmp(path + plen - 5, ".tplb") == 0)) {
        int rc = load_tplb(o, path, src, len, prog, errs && cap ? errs : NULL, msgs);
        if (rc == EXIT_TEMPLATE && errs && cap) *nerr = 1;
        free(src);
        return rc;
    }
    tpl_syntax syn;
    tpl_options opt;
    if (!source_options(o, path, &syn, &opt)) {
        free(src);
        return EXIT_USAGE;
    }
    tplc_loader l;
    if (!tplc_loader_init(&l, path)) { free(src); fprintf(stderr, "tplc: out of memory\n"); return EXIT_USAGE; }
    opt.loader = tplc_loader_load;
    opt.loader_data = &l;
    opt.trim_blocks |= o->trim_blocks;
    opt.lstrip_blocks |= o->lstrip_blocks;
    opt.keep_trailing_newline |= o->keep_nl;
    opt.strict |= o->strict;
    opt.tidy |= o->tidy;
    opt.autoescape |= o->autoescape;
    for (int i = 0; i < o->extensions.n; i++) { /* (main.c's choices: Jinja2's names, as tpl.jinja2 takes them) */
        if (strcmp(o->extensions.v[i], "jinja2.ext.do") == 0) opt.do_statement = true;
        else opt.loop_controls = true;
    }
    /* tplc compile --lang L binds L into the program (DESIGN.md §3; kept by the .tplb) */
    if (o->cmd && strcmp(o->cmd->name, "compile") == 0) opt.lang = o->lang;
    opt.max_compile_memory = o->max_compile_memory;
    tpl_error one = { 0 };
    bool list = errs && cap;
    size_t n = tpl_compile_all(path, src, len, &opt, prog, list ? errs : &one, list ? cap : 1);
    free(src);
    int rc = 0;
    for (size_t i = 0; i < n; i++) {
        tpl_error *err = list ? &errs[i] : &one;
        tpl_status st = err->status;
        char *better = tplc_loader_fix_error(&l, err);
        int r = st >= TPL_ERR_USAGE && st != TPL_ERR_NOMEM ? EXIT_USAGE : EXIT_TEMPLATE;
        if (r > rc) rc = r;
        if (list && r == EXIT_TEMPLATE) {
            msgs[i] = better ? better : strdup(err->message ? err->message : "error");
        } else {
            const char *m = err->message;
            if (better) err->message = better;
            tplc_print_error(err);
            err->message = m;
            free(better);
            tpl_error_clear(err);
            if (list) msgs[i] = NULL;
        }
    }
    if (nerr) *nerr = n;
    tplc_loader_free(&l);
    return rc;
}

int tplc_compile_path(const tplc_opts *o, const char *path, tpl_program **prog, tpl_error *errout, char **msgout)
{
    size_t n;
    return tplc_compile_path_all(o, path, prog, errout, msgout, errout ? 1 : 0, &n);
}

/* Where "key" appears as a key of the golden object in JSON text (the top-level object, or
 * element `elem` of a top-level array when elem >= 0): line and column, 1-based, in code points,
 * for a located error; 1:1 when it cannot be found (an escaped spelling). */
static void locate_key(const char *text, size_t len, const char *key, long elem, uint32_t *line, uint32_t *col)
{
    size_t kl = strlen(key);
    *line = 1, *col = 1;
    uint32_t l = 1, c = 1;
    int depth = 0, want = elem >= 0 ? 2 : 1;
    long index = 0;
    for (size_t i = 0; i < len; i++) {
        char ch = text[i];
        if (ch == '"') {
            if (depth == want && (elem < 0 || index == elem) && i + kl + 1 < len && memcmp(text + i + 1, key, kl) == 0 &&
                text[i + kl + 1] == '"') {
                size_t j = i + kl + 2;
                while (j < len && (text[j] == ' ' || text[j] == '\t' || text[j] == '\n' || text[j] == '\r')) j++;
                if (j < len && text[j] == ':') { *line = l, *col = c; return; }
            }
            /* skip the string */
            for (i++, c++; i < len && text[i] != '"'; i++) {
                if (text[i] == '\\') { i++; c++; continue; }
                if (text[i] == '\n') l++, c = 1; /* invalid JSON, but keep counting */
                else if (((unsigned char)text[i] & 0xC0) != 0x80) c++;
            }
            c++;
            continue;
        }
        if (ch == '{' || ch == '[') depth++;
        else if (ch == '}' || ch == ']') depth--;
        else if (ch == ',' && depth == 1 && elem >= 0) index++;
        if (ch == '\n') l++, c = 1;
        else if (((unsigned char)ch & 0xC0) != 0x80) c++;
    }
}

/* The keys a Pinecall golden holds; any other key (a misspelling) is an error. */
static const char *const golden_keys[] = { "state", "memory" };

bool tplc_golden_keys_ok(const char *path, const char *text, size_t len, json_t *g, long elem)
{
    const char *key;
    json_t *v;
    json_object_foreach(g, key, v) {
        bool known = false;
        for (size_t i = 0; i < sizeof golden_keys / sizeof *golden_keys; i++) known |= strcmp(key, golden_keys[i]) == 0;
        if (!known) {
            char msg[200];
            snprintf(msg, sizeof msg, "unknown key \"%.100s\" in the golden (a golden holds \"state\" and \"memory\")", key);
            tpl_error e = { 0 };
            e.status = TPL_ERR_STATE;
            e.message = msg;
            locate_key(text, len, key, elem, &e.line, &e.column);
            print_json_error(path, text, len, &e);
            return false;
        }
    }
    return true;
}

/* A Pinecall golden: {"state": {...}, "memory": ["fact", ...]}, or an array of them (then --case N
 * picks one, counting from 0). */
static int load_golden(const tplc_opts *o, tpl_render *r, const char *path, const char *text, size_t len)
{
    json_error_t je;
    json_t *root = json_loadb(text, len, 0, &je);
    if (!root) {
        tpl_error e = { 0 };
        e.status = TPL_ERR_STATE;
        e.message = je.text;
        e.line = je.line > 0 ? (uint32_t)je.line : 1;
        e.column = je.column > 0 ? (uint32_t)je.column : 1;
        print_json_error(path, text, len, &e);
        return EXIT_TEMPLATE;
    }
    json_t *g = root;
    if (json_is_array(root)) {
        if (o->case_n < 0) {
            fprintf(stderr, "%s: error: the golden file holds %zu cases: pick one with --case N (0-based)\n", path,
                    json_array_size(root));
            json_decref(root);
            return EXIT_USAGE;
        }
        g = json_array_get(root, (size_t)o->case_n);
        if (!g) {
            fprintf(stderr, "%s: error: --case %ld is out of range (%zu cases)\n", path, o->case_n,
                    json_array_size(root));
            json_decref(root);
            return EXIT_USAGE;
        }
    } else if (o->case_n > 0) {
        fprintf(stderr, "%s: error: --case %ld: the golden file holds one case\n", path, o->case_n);
        json_decref(root);
        return EXIT_USAGE;
    }
    json_t *state = json_is_object(g) ? json_object_get(g, "state") : NULL;
    json_t *memory = json_is_object(g) ? json_object_get(g, "memory") : NULL;
    if (!json_is_object(g) || (state && !json_is_object(state)) || (memory && !json_is_array(memory))) {
        fprintf(stderr, "%s:1:1: error: a golden is an object with \"state\" (an object) and \"memory\" (a list of facts)\n",
                path);
        json_decref(root);
        return EXIT_TEMPLATE;
    }
    if (!tplc_golden_keys_ok(path, text, len, g, json_is_array(root) ? o->case_n : -1)) {
        json_decref(root);
        return EXIT_TEMPLATE;
    }
    int rc = 0;
    if (state) {
        char *s = json_dumps(state, JSON_COMPACT | JSON_PRESERVE_ORDER);
        if (!s || tpl_render_set_state_json(r, s, strlen(s)) != TPL_OK) {
            tplc_print_error(tpl_render_error(r));
            rc = EXIT_TEMPLATE;
        }
        free(s);
    }
    for (size_t i = 0; !rc && memory && i < json_array_size(memory); i++) {
        json_t *f = json_array_get(memory, i);
        if (!json_is_string(f)) {
            fprintf(stderr, "%s: error: memory fact %zu is not a string\n", path, i);
            rc = EXIT_TEMPLATE;
        } else if (tpl_render_add_fact(r, json_string_value(f), json_string_length(f)) != TPL_OK) {
            tplc_print_error(tpl_render_error(r));
            rc = EXIT_USAGE;
        }
    }
    json_decref(root);
    return rc;
}

/* Loads the --catalog files, --lang and --tr-key settings into the render. */
static int load_translation(const tplc_opts *o, tpl_render *r)
{
    for (int i = 0; i < o->catalogs.n; i++) {
        size_t len;
        char *text = tplc_read_input(o->catalogs.v[i], "catalog", &len);
        if (!text) return EXIT_USAGE;
        tpl_status st = tpl_render_add_catalog_json(r, text, len);
        if (st != TPL_OK) {
            print_json_error(o->catalogs.v[i], text, len, tpl_render_error(r));
            free(text);
            return st == TPL_ERR_NOMEM ? EXIT_USAGE : EXIT_TEMPLATE;
        }
        free(text);
    }
    /* (invalid UTF-8 is refused: the render's error says so) */
    if (o->lang && tpl_render_set_lang(r, o->lang) != TPL_OK) {
        tplc_print_error(tpl_render_error(r));
        return EXIT_USAGE;
    }
    for (int i = 0; i < o->trkeys.n; i++)
        if (tpl_render_add_tr_key(r, o->trkeys.v[i], strlen(o->trkeys.v[i])) != TPL_OK) {
            tplc_print_error(tpl_render_error(r));
            return EXIT_USAGE;
        }
    return 0;
}

/* Loads --state or --golden into the render (and the golden's memory facts). */
static int load_state(const tplc_opts *o, tpl_render *r)
{
    const char *path = o->state ? o->state : o->golden;
    if (!path) return 0;
    size_t len;
    if (!o->golden && strcmp(path, "-") != 0) {
        /* parsed from the file's stream: the text is read again only to show an error */
        FILE *f = tplc_open_input(path, "state");
        if (!f) return EXIT_USAGE;
        tpl_status st = tpl_render_set_state_file(r, f);
        bool rerr = ferror(f);
        fclose(f);
        if (st == TPL_OK) return 0;
        char *text = rerr ? NULL : tplc_read_input(path, "state", &len);
        if (!text) return EXIT_USAGE;
        print_json_error(path, text, len, tpl_render_error(r));
        free(text);
        return st == TPL_ERR_NOMEM ? EXIT_USAGE : EXIT_TEMPLATE;
    }
    char *text = tplc_read_input(path, o->golden ? "golden" : "state", &len);
    if (!text) return EXIT_USAGE;
    if (o->golden) {
        int rc = load_golden(o, r, path, text, len);
        free(text);
        return rc;
    }
    tpl_status st = tpl_render_set_state_json(r, text, len);
    if (st != TPL_OK) {
        print_json_error(path, text, len, tpl_render_error(r));
        free(text);
        return st == TPL_ERR_NOMEM ? EXIT_USAGE : EXIT_TEMPLATE;
    }
    free(text);
    return 0;
}

/* An error tpl_render_run reports in the state (TPL_ERR_STATE: Python's json refuses an integer of
 * more than 4,300 digits, so a Jinja or format-string render fails where it begins): located in the
 * --state file, with its line (read again); standard input and a golden's state (parsed again from
 * its JSON text) are named without a line. */
static void print_state_error(const tplc_opts *o, const tpl_error *e)
{
    const char *path = o->state ? o->state : o->golden;
    tpl_error loc = *e;
    if (!path || o->golden || strcmp(path, "-") == 0) {
        loc.file = !path || strcmp(path, "-") == 0 ? "<stdin>" : path;
        if (o->golden) loc.line = loc.column = 0;
        loc.source_line = NULL;
        tplc_print_error(&loc);
        return;
    }
    size_t len;
    char *text = tplc_read_input(path, "state", &len);
    print_json_error(path, text, text ? len : 0, e);
    free(text);
}

/* Writes an output, reporting a failure with its errno text (exit 2). */
static int write_error(const char *path)
{
    int e = errno;
    if (!path || strcmp(path, "-") == 0) fprintf(stderr, "tplc: error: cannot write standard output: %s\n", strerror(e));
    else fprintf(stderr, "%s: error: cannot write: %s\n", path, strerror(e));
    return EXIT_USAGE;
}

static int write_out(const char *path, const void *data, size_t n)
{
    if (tplc_write_output(path, data, n) == 0) return 0;
    int e = errno;
    if (!path || strcmp(path, "-") == 0) fprintf(stderr, "tplc: error: cannot write standard output: %s\n", strerror(e));
    else fprintf(stderr, "%s: error: cannot write: %s\n", path, strerror(e));
    return EXIT_USAGE;
}

int tplc_render(const tplc_opts *o)
{
    tpl_program *prog = NULL;
    int rc = tplc_compile_path(o, o->tpl, &prog, NULL, NULL);
    if (rc) return rc;
    if ((rc = tplc_check_outputs(o, o->tpl, prog)) != 0) { tpl_program_free(prog); return rc; }
    tpl_render *r = tpl_render_new(&o->limits);
    if (!r) { tpl_program_free(prog); fprintf(stderr, "tplc: out of memory\n"); return EXIT_USAGE; }
    /* templates named by a value computed when it runs load from beside it, as at compile time */
    tplc_loader l;
    /* (a program of a VIEWS.so: beside the template it was compiled from, as the VM's render of
     * that template loads them) */
    const char *beside = ends_with(o->tpl, ".so") && tpl_program_name(prog) ? tpl_program_name(prog) : o->tpl;
    if (!tplc_loader_init(&l, beside)) {
        tpl_render_free(r);
        tpl_program_free(prog);
        fprintf(stderr, "tplc: out of memory\n");
        return EXIT_USAGE;
    }
    tpl_render_set_loader(r, tplc_loader_load, &l);
    rc = o->resumed || o->claimed || o->defaults ? tplc_page_scope(o, r) : load_state(o, r);
    if (!rc) rc = load_translation(o, r);
    for (int i = 0; !rc && i < o->facts.n; i++)
        if (tpl_render_add_fact(r, o->facts.v[i], strlen(o->facts.v[i])) != TPL_OK) {
            tplc_print_error(tpl_render_error(r));
            rc = EXIT_USAGE;
        }
    if (!rc && (o->channel || o->medium) && tpl_render_set_call(r, o->channel, o->medium) != TPL_OK) {
        tplc_print_error(tpl_render_error(r));
        rc = EXIT_USAGE;
    }
    if (!rc) {
        const char *out;
        size_t n;
        tpl_status st = tpl_render_run(r, prog, &out, &n);
        if (st == TPL_ERR_STATE) { /* the state is refused for this syntax (a too-long int) */
            print_state_error(o, tpl_render_error(r));
            rc = EXIT_TEMPLATE;
        } else if (st != TPL_OK) {
            /* a template loaded when its statement ran that exists but cannot be read says why,
             * as at compile time */
            tpl_error e = *tpl_render_error(r);
            char *better = tplc_loader_fix_error(&l, &e);
            if (better) e.message = better;
            tplc_print_error(&e);
            free(better);
            rc = st >= TPL_ERR_USAGE && st != TPL_ERR_NOMEM ? EXIT_USAGE : EXIT_TEMPLATE;
        } else {
            rc = write_out(o->out, out, n);
        }
    }
    tpl_render_free(r);
    tpl_program_free(prog);
    tplc_loader_free(&l);
    return rc;
}

/* tplc dump --tokens / --ast: the scanner's tokens or the parser's tree of a template source. */
static int dump_stage(const tplc_opts *o)
{
    if (o->tokens && o->ast) {
        fprintf(stderr, "tplc: --tokens and --ast are alternatives: give one\n");
        return EXIT_USAGE;
    }
    size_t len;
    char *src = tplc_read_input(o->tpl, "template", &len);
    if (!src) return EXIT_USAGE;
    if (tpl_is_tplb(src, len) || ends_with(o->tpl, ".tplb") || ends_with(o->tpl, ".so")) {
        fprintf(stderr, "tplc: %s: --tokens and --ast need a template source, not a compiled program\n", o->tpl);
        free(src);
        return EXIT_USAGE;
    }
    tpl_syntax syn;
    tpl_options opt;
    if (!source_options(o, o->tpl, &syn, &opt)) {
        free(src);
        return EXIT_USAGE;
    }
    opt.trim_blocks |= o->trim_blocks;
    opt.lstrip_blocks |= o->lstrip_blocks;
    opt.keep_trailing_newline |= o->keep_nl;
    opt.max_compile_memory = o->max_compile_memory;
    char *text = NULL;
    tpl_error err = { 0 };
    tpl_status st = o->tokens ? tpl_dump_tokens(o->tpl, src, len, &opt, &text, &err)
                              : tpl_dump_ast(o->tpl, src, len, &opt, &text, &err);
    free(src);
    if (st != TPL_OK) {
        tplc_print_error(&err);
        tpl_error_clear(&err);
        return st >= TPL_ERR_USAGE && st != TPL_ERR_NOMEM ? EXIT_USAGE : EXIT_TEMPLATE;
    }
    int rc = write_out(NULL, text, strlen(text));
    free(text);
    return rc;
}

int tplc_dump(const tplc_opts *o)
{
    if (o->tokens || o->ast) return dump_stage(o);
    tpl_program *prog = NULL;
    int rc = tplc_compile_path(o, o->tpl, &prog, NULL, NULL);
    if (rc) return rc;
    char *s = tpl_disassemble(prog);
    tpl_program_free(prog);
    if (!s) { fprintf(stderr, "tplc: out of memory\n"); return EXIT_USAGE; }
    rc = write_out(NULL, s, strlen(s));
    free(s);
    return rc;
}

/* Babel's python-format test: the message has a %-conversion (%s, %(name)s, %d, %%, ...). */
static bool python_format(const char *s, size_t n)
{
    for (size_t i = 0; i < n; i++) {
        if (s[i] != '%') continue;
        size_t j = i + 1;
        if (j < n && s[j] == '(') {
            while (j < n && s[j] != ')') j++;
            if (j >= n) return false;
            j++;
        }
        if (j < n && strchr("-#0 +", s[j])) j++;
        if (j < n && s[j] == '*') j++;
        else while (j < n && s[j] >= '0' && s[j] <= '9') j++;
        if (j < n && s[j] == '.') {
            j++;
            if (j < n && s[j] == '*') j++;
            else while (j < n && s[j] >= '0' && s[j] <= '9') j++;
        }
        if (j < n && strchr("hlL", s[j])) j++;
        if (j < n && s[j] && strchr("diouxXeEfFgGcrs%", s[j])) return true;
    }
    return false;
}

static bool ends_with(const char *s, const char *suffix)
{
    size_t n = strlen(s), k = strlen(suffix);
    return n >= k && strcmp(s + n - k, suffix) == 0;
}

struct tplc_msgs {
    json_t *index;              /* key ([context \x04] msgid) -> message number */
    tplc_msg *v;
    size_t n, cap;
};

static char *dupn0(const char *s, size_t n)
{
    char *d = malloc(n + 1);
    if (d) { memcpy(d, s, n); d[n] = 0; }
    return d;
}

tplc_msgs *tplc_msgs_new(void)
{
    tplc_msgs *m = calloc(1, sizeof *m);
    if (m && !(m->index = json_object())) { free(m); m = NULL; }
    return m;
}

void tplc_msgs_free(tplc_msgs *m)
{
    if (!m) return;
    for (size_t i = 0; i < m->n; i++) { free(m->v[i].ctx); free(m->v[i].id); free(m->v[i].plural); free(m->v[i].refs); }
    free(m->v);
    json_decref(m->index);
    free(m);
}

const tplc_msg *tplc_msgs_list(const tplc_msgs *m, size_t *n)
{
    *n = m->n;
    return m->v;
}

int tplc_msgs_add(tplc_msgs *ms, const tpl_program *prog, const char *label)
{
    size_t n = tpl_program_tr_calls(prog, NULL, 0);
    tpl_tr_call *calls = n ? calloc(n, sizeof *calls) : NULL;
    if (n && !calls) return EXIT_USAGE;
    tpl_program_tr_calls(prog, calls, n);
    int rc = 0;
    for (size_t i = 0; i < n && !rc; i++) {
        const tpl_tr_call *c = &calls[i];
        if (!c->text) {
            fprintf(stderr, "%s:%u:%u: warning: %s() argument is not a literal string: skipped\n", label,
                    c->line, c->column, c->function ? c->function : "tr");
            continue;
        }
        /* the key: [context \x04] msgid */
        size_t kl = (c->context ? c->context_len + 1 : 0) + c->len;
        char *key = malloc(kl + 1);
        if (!key) { rc = EXIT_USAGE; break; }
        size_t o2 = 0;
        if (c->context) { memcpy(key, c->context, c->context_len); key[c->context_len] = '\x04'; o2 = c->context_len + 1; }
        memcpy(key + o2, c->text, c->len);
        key[kl] = 0;
        json_t *at = json_object_getn(ms->index, key, kl);
        tplc_msg *m;
        if (at) {
            m = &ms->v[json_integer_value(at)];
        } else {
            if (ms->n == ms->cap) {
                size_t nc = ms->cap ? ms->cap * 2 : 16;
                tplc_msg *nm = realloc(ms->v, nc * sizeof *nm);
                if (!nm) { free(key); rc = EXIT_USAGE; break; }
                ms->v = nm;
                ms->cap = nc;
            }
            m = &ms->v[ms->n];
            memset(m, 0, sizeof *m);
            m->id = dupn0(c->text, c->len);
            m->ctx = c->context ? dupn0(c->context, c->context_len) : NULL;
            m->plural = c->plural ? dupn0(c->plural, c->plural_len) : NULL;
            bool gettext = c->function && strcmp(c->function, "tr") != 0;
            m->pyfmt = gettext && (python_format(c->text, c->len) || (c->plural && python_format(c->plural, c->plural_len)));
            json_object_setn_new(ms->index, key, kl, json_integer((json_int_t)ms->n));
            ms->n++;
            if (!m->id || (c->context && !m->ctx) || (c->plural && !m->plural)) { free(key); rc = EXIT_USAGE; break; }
        }
        free(key);
        tpl_store_pot_ref *nr = realloc(m->refs, (m->nrefs + 1) * sizeof *nr);
        if (!nr) { rc = EXIT_USAGE; break; }
        m->refs = nr;
        m->refs[m->nrefs++] = (tpl_store_pot_ref){ label, c->line };
    }
    free(calls);
    if (rc) fprintf(stderr, "tplc: out of memory\n");
    return rc;
}

tpl_store_pot_entry *tplc_msgs_entries(const tplc_msgs *ms)
{
    tpl_store_pot_entry *e = calloc(ms->n + 1, sizeof *e);
    for (size_t i = 0; e && i < ms->n; i++) {
        const tplc_msg *m = &ms->v[i];
        e[i] = (tpl_store_pot_entry){ m->ctx, m->id, m->plural, m->refs, m->nrefs, m->pyfmt };
    }
    return e;
}

int tplc_msgs_write_pot(const tplc_msgs *ms, const char *path)
{
    tpl_store_pot_entry *e = tplc_msgs_entries(ms);
    if (!e) { fprintf(stderr, "tplc: out of memory\n"); return EXIT_USAGE; }
    char msg[600];
    int rc = 0;
    if (tpl_store_pot_write(path, e, ms->n, msg, sizeof msg) != TPL_STORE_OK) {
        fprintf(stderr, "%s\n", msg);
        rc = EXIT_USAGE;
    }
    free(e);
    return rc;
}

/* tplc tr-extract: every literal tr() text and Jinja gettext message ({% trans %} blocks, _(),
 * gettext(), ngettext(), pgettext(), npgettext(): what Babel's Jinja extractor finds) of the
 * templates, as a catalog skeleton {"main_lang": "en", LANG: {"text": "text", ...}} (targets
 * start as the source text, so the skeleton translates nothing until edited; a plural message's
 * target is [singular, plural], a context's key "context\x04msgid"; LANG is --lang, default "xx"),
 * or with -o FILE.pot (or .po) a PO template through libgettextpo (msgctxt, msgid_plural,
 * "#: FILE:LINE" references, "#, python-format" on %-format messages, as Babel writes them). */
int tplc_tr_extract(const tplc_opts *o)
{
    if (!o->out) { fprintf(stderr, "tplc tr-extract: needs -o CATALOG.json or -o FILE.pot (- for standard output: JSON)\n"); return EXIT_USAGE; }
    bool pot = ends_with(o->out, ".pot") || ends_with(o->out, ".po");
    tplc_msgs *ms = tplc_msgs_new();
    if (!ms) { fprintf(stderr, "tplc: out of memory\n"); return EXIT_USAGE; }
    int rc = 0;
    for (int t = 0; t < o->args.n && !rc; t++) {
        const char *path = o->args.v[t];
        tpl_program *prog = NULL;
        rc = tplc_compile_path(o, path, &prog, NULL, NULL);
        if (rc) break;
        if ((rc = tplc_check_outputs(o, path, prog)) != 0) { tpl_program_free(prog); break; }
        if (tpl_program_tr_calls(prog, NULL, 0) == 0) {
            size_t hl = 0;
            const char *why;
            char *head = strcmp(path, "-") == 0 ? NULL : tplc_read(path, &hl, &why);
            bool tplb = head && tpl_is_tplb(head, hl);
            free(head);
            if (tplb) { /* a .tplb keeps no record of its tr() calls */
                fprintf(stderr, "%s: error: tr-extract reads template sources, not a .tplb\n", path);
                tpl_program_free(prog);
                rc = EXIT_USAGE;
                break;
            }
        }
        rc = tplc_msgs_add(ms, prog, strcmp(path, "-") == 0 ? "<stdin>" : path);
        tpl_program_free(prog);
    }
    if (!rc && pot) {
        rc = tplc_msgs_write_pot(ms, o->out);
    } else if (!rc) {
        json_t *rows = json_object(), *root = json_object();
        for (size_t i = 0; rows && i < ms->n; i++) {
            const char *id = ms->v[i].id;
            char *key = NULL;
            if (ms->v[i].ctx) {
                size_t cl = strlen(ms->v[i].ctx), il = strlen(id);
                if ((key = malloc(cl + il + 2))) { memcpy(key, ms->v[i].ctx, cl); key[cl] = '\x04'; memcpy(key + cl + 1, id, il + 1); }
            }
            json_t *target = ms->v[i].plural ? json_pack("[ss]", id, ms->v[i].plural) : json_string(id);
            json_object_set_new(rows, key ? key : id, target);
            free(key);
        }
        json_object_set_new(root, "main_lang", json_string("en"));
        json_object_set(root, o->lang ? o->lang : "xx", rows);
        char *text = rows && root ? json_dumps(root, JSON_INDENT(2) | JSON_PRESERVE_ORDER) : NULL;
        if (!text) rc = EXIT_USAGE;
        else {
            size_t n = strlen(text);
            text[n] = '\n'; /* json_dumps' NUL becomes the final newline */
            rc = write_out(o->out, text, n + 1);
            free(text);
        }
        json_decref(rows);
        json_decref(root);
    }
    tplc_msgs_free(ms);
    return rc;
}

/* Writes a path to a depfile as make and ninja read it (GCC's escaping): a space or tab gets a
 * backslash and the backslashes before it are doubled, as are trailing ones; '#' becomes "\#"
 * and '$' "$$". A newline cannot be written (neither tool has an escape for it): false. */
static bool dep_path(FILE *f, const char *s, size_t n)
{
    for (size_t i = 0; i < n; i++) {
        char c = s[i];
        if (c == '\n' || c == '\r') return false;
        if (c == ' ' || c == '\t') {
            for (size_t k = i; k > 0 && s[k - 1] == '\\'; k--) fputc('\\', f);
            fputc('\\', f);
        } else if (c == '#') {
            fputc('\\', f);
        } else if (c == '$') {
            fputc('$', f);
        }
        fputc(c, f);
    }
    for (size_t k = n; k > 0 && s[k - 1] == '\\'; k--) fputc('\\', f);
    return true;
}

/* --depfile text: "OUT: TEMPLATE DEP..." where each dependency is a template the compilation
 * loaded (tpl_program_dependencies), as the path beside the main template where the CLI's loader
 * found it. Returns a malloc'd text, or NULL after printing the error. */
static char *depfile_text(const tplc_opts *o, const tpl_program *prog, size_t *len)
{
    char *text = NULL;
    size_t tl = 0;
    FILE *f = open_memstream(&text, &tl);
    if (!f) { fprintf(stderr, "tplc: out of memory\n"); return NULL; }
    const char *bad = NULL;
    if (!dep_path(f, o->out, strlen(o->out))) bad = o->out;
    fputs(": ", f);
    if (!dep_path(f, o->tpl, strlen(o->tpl))) bad = o->tpl;
    const char *slash = strrchr(o->tpl, '/');
    size_t n = tpl_program_dependencies(prog, NULL, NULL, 0);
    const char **names = calloc(n ? n : 1, sizeof *names);
    size_t *lens = calloc(n ? n : 1, sizeof *lens);
    if (names && lens) {
        tpl_program_dependencies(prog, names, lens, n);
        for (size_t i = 0; i < n; i++) {
            fputs(" \\\n  ", f);
            if (slash) dep_path(f, o->tpl, (size_t)(slash - o->tpl) + 1);
            else fputs("./", f);
            if (!dep_path(f, names[i], lens[i])) bad = names[i];
        }
    }
    fputc('\n', f);
    bool ok = fclose(f) == 0 && names && lens;
    free(names);
    free(lens);
    if (!ok || bad) {
        if (bad) fprintf(stderr, "%s: error: cannot write depfile: the path '%s' holds a newline (make and ninja have no escape for it)\n",
                         o->depfile, bad);
        else fprintf(stderr, "tplc: out of memory\n");
        free(text);
        return NULL;
    }
    *len = tl;
    return text;
}

/* The C symbol --emit c uses without --name: "tpl_view_" + the template's base name up to its
 * first dot, bytes other than [A-Za-z0-9_] as '_' (so it is an identifier that clashes with no
 * C keyword, no `main` and nothing of tpl's own). */
static void default_symbol(const char *tpl, char *out, size_t cap)
{
    const char *base = strrchr(tpl, '/');
    base = base ? base + 1 : tpl;
    size_t k = (size_t)snprintf(out, cap, "tpl_view");
    if (strcmp(base, "-") == 0 || *base == '.' || !*base) return;
    out[k++] = '_';
    for (; *base && *base != '.' && k < cap - 1; base++)
        out[k++] = (char)((*base >= 'a' && *base <= 'z') || (*base >= 'A' && *base <= 'Z') ||
                          (*base >= '0' && *base <= '9') ? *base : '_');
    out[k] = 0;
}

/* Whether the generated file's symbol, or one of the file-scope arrays named after it, is already
 * a function or variable of this process (libc, libtpl, the libraries they load): the file would
 * not compile (a declaration of a header it includes) or would interpose the library's symbol
 * when linked. The generated file's other checks are tpl_program_emit_c's. */
static bool taken_symbol(const char *sym)
{
    static const char *const suffixes[] = { "", "_builtins", "_code", "_consts", "_names", "_spans",
                                            "_macros", "_source", "_native" };
    char buf[256];
    for (size_t i = 0; i < sizeof suffixes / sizeof *suffixes; i++) {
        if ((size_t)snprintf(buf, sizeof buf, "%s%s", sym, suffixes[i]) >= sizeof buf) return false;
        dlerror();
        if (dlsym(RTLD_DEFAULT, buf) || !dlerror()) return true;
    }
    return false;
}

/* tplc compile: a .tplb, or C source with --emit c (written atomically: a failed compile leaves
 * any previous output untouched); the depfile only once the output is written. */
int tplc_compile(const tplc_opts *o)
{
    if (!o->out) { fprintf(stderr, "tplc compile: needs -o OUT (- for standard output)\n"); return EXIT_USAGE; }
    bool emit_c = o->emit && strcmp(o->emit, "c") == 0;
    char symbol[128];
    default_symbol(o->tpl, symbol, sizeof symbol);
    tpl_program *prog = NULL;
    int rc = tplc_compile_path(o, o->tpl, &prog, NULL, NULL);
    if (rc) return rc;
    if ((rc = tplc_check_outputs(o, o->tpl, prog)) != 0) { tpl_program_free(prog); return rc; }
    char *dep = NULL;
    size_t deplen = 0;
    if (o->depfile && !(dep = depfile_text(o, prog, &deplen))) { tpl_program_free(prog); return EXIT_USAGE; }
    unsigned fl = (o->strip_source ? TPL_SAVE_STRIP_SOURCE : 0) | (o->native ? TPL_EMIT_NATIVE : 0);
    void *data = NULL;
    size_t n = 0;
    if (!emit_c) {
        /* the .tplb goes to the output as it is encoded (never whole in memory: issue 13 §1) */
        int w = tplc_write_program(o->out, prog, fl);
        int e = errno;
        tpl_program_free(prog);
        if (w == -2) { fprintf(stderr, "tplc: out of memory\n"); rc = EXIT_USAGE; }
        else if (w != 0) { errno = e; rc = write_error(o->out); }
        else rc = 0;
    } else {
        const char *sym = o->name ? o->name : symbol;
        tpl_status st = taken_symbol(sym) ? TPL_ERR_USAGE : tpl_program_emit_c(prog, sym, fl, (char **)&data, &n);
        tpl_program_free(prog);
        if (st == TPL_ERR_USAGE) {
            fprintf(stderr, "tplc compile: --name %s: not a symbol the generated C can define (it must be a C identifier, not a keyword, "
                    "not main, not reserved (_X), not a macro or type of the C headers or tpl_ / TPL_ (tpl_view_ is free), "
                    "not a function or variable of libc, libtpl or the libraries they load)\n", sym);
            rc = EXIT_USAGE;
        }
        else if (st != TPL_OK) { fprintf(stderr, "tplc: out of memory\n"); rc = EXIT_USAGE; }
        else rc = write_out(o->out, data, n);
    }
    if (!rc && dep) rc = write_out(o->depfile, dep, deplen);
    free(data);
    free(dep);
    return rc;
}
