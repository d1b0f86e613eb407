/* tplc page, tplc lint --page, and the page scope of tplc render (--defaults, --resumed,
 * --claimed): DESIGN.md §8, issue 18. Uses only the public headers (tpl.h, tpl_page.h). */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <jansson.h>
#include "tplc.h"
#include "tpl_page.h"

/* ------------------------------------------------------------------ inputs */

/* Prints a JSON parse error of an input file as tplc's other JSON errors read. */
static void json_fail(const char *path, const char *text, size_t len, const json_error_t *je, const char *what)
{
    tpl_error e = { 0 };
    e.status = TPL_ERR_STATE;
    char msg[300];
    snprintf(msg, sizeof msg, "invalid %s JSON: %s", what, je->text);
    e.message = msg;
    e.file = path;
    e.line = je->line > 0 ? (uint32_t)je->line : 0;
    e.column = je->column > 0 ? (uint32_t)je->column : 0;
    char *line = NULL;
    if (e.line) {
        const char *s = text, *end = text + len;
        for (uint32_t l = 1; l < e.line && s < end; s++)
            if (*s == '\n') l++;
        const char *eol = s;
        while (eol < end && *eol != '\n' && *eol != '\r') eol++;
        if ((line = malloc((size_t)(eol - s) + 1))) {
            memcpy(line, s, (size_t)(eol - s));
            line[eol - s] = 0;
        }
    }
    e.source_line = line;
    tplc_print_error(&e);
    free(line);
}

static void plain_fail(const char *path, const char *msg)
{
    fprintf(stderr, "%s: error: %s\n", path, msg);
}

/* The state (a JSON object, new reference) and the memory facts (new reference, an array of
 * strings, or NULL) of --state / --golden [--case]. *state is an empty object without either.
 * Returns 0 or an exit status (the error printed). */
static int read_input(const tplc_opts *o, json_t **state, json_t **memory)
{
    *state = NULL;
    *memory = NULL;
    const char *path = o->state ? o->state : o->golden;
    if (!path) {
        *state = json_object();
        return *state ? 0 : TPLC_EXIT_USAGE;
    }
    size_t len;
    char *text = tplc_read_input(path, o->golden ? "golden" : "state", &len);
    if (!text) return TPLC_EXIT_USAGE;
    json_error_t je;
    json_t *root = json_loadb(text, len, 0, &je);
    if (!root) {
        json_fail(path, text, len, &je, o->golden ? "golden" : "state");
        free(text);
        return TPLC_EXIT_TEMPLATE;
    }
    if (o->golden) {
        long elem = -1;
        json_t *g0 = root;
        if (json_is_array(root) && o->case_n >= 0) { elem = o->case_n; g0 = json_array_get(root, (size_t)o->case_n); }
        if (json_is_object(g0) && !tplc_golden_keys_ok(path, text, len, g0, elem)) {
            free(text);
            json_decref(root);
            return TPLC_EXIT_TEMPLATE;
        }
    }
    free(text);
    if (o->state) {
        if (!json_is_object(root)) { plain_fail(path, "the state must be a JSON object"); json_decref(root); return TPLC_EXIT_TEMPLATE; }
        *state = root;
        return 0;
    }
    json_t *g = root;
    if (json_is_array(root)) {
        if (o->case_n < 0) { plain_fail(path, "the golden file holds an array of cases: pick one with --case N"); json_decref(root); return TPLC_EXIT_USAGE; }
        g = json_array_get(root, (size_t)o->case_n);
        if (!g) { plain_fail(path, "--case is past the last case"); json_decref(root); return TPLC_EXIT_USAGE; }
    }
    json_t *st = json_is_object(g) ? json_object_get(g, "state") : NULL;
    json_t *mem = json_is_object(g) ? json_object_get(g, "memory") : NULL;
    if (!json_is_object(g) || (st && !json_is_object(st)) || (mem && !json_is_array(mem))) {
        plain_fail(path, "a golden is {\"state\": {...}, \"memory\": [facts]}");
        json_decref(root);
        return TPLC_EXIT_TEMPLATE;
    }
    for (size_t i = 0; mem && i < json_array_size(mem); i++)
        if (!json_is_string(json_array_get(mem, i))) {
            plain_fail(path, "memory facts must be strings");
            json_decref(root);
            return TPLC_EXIT_TEMPLATE;
        }
    *state = st ? json_incref(st) : json_object();
    *memory = mem ? json_incref(mem) : NULL;
    json_decref(root);
    return 0;
}

/* Facts for a page call: the golden's memory, then --remember. */
static tpl_status set_facts(tpl_page_call *c, const json_t *memory, const tplc_opts *o)
{
    size_t n = json_array_size(memory) + (size_t)o->facts.n;
    const char **facts = calloc(n + 1, sizeof *facts);
    size_t *lens = calloc(n + 1, sizeof *lens);
    if (!facts || !lens) { free(facts); free(lens); return TPL_ERR_NOMEM; }
    size_t k = 0;
    for (size_t i = 0; i < json_array_size(memory); i++, k++) {
        facts[k] = json_string_value(json_array_get(memory, i));
        lens[k] = json_string_length(json_array_get(memory, i));
    }
    for (int i = 0; i < o->facts.n; i++, k++) {
        facts[k] = o->facts.v[i];
        lens[k] = strlen(o->facts.v[i]);
    }
    tpl_status st = tpl_page_call_set_facts(c, facts, lens, k);
    free(facts);
    free(lens);
    return st;
}

/* ------------------------------------------------------------------ tplc page */

/* DIR/page.json could not be read (an empty DIR: nothing was, it would name /page.json); says
 * why, as far as stat(2) tells: no folder, not a folder, no page.json, not a regular file. */
static void page_io_error(const char *dir)
{
    if (!*dir) {
        fprintf(stderr, "'': error: cannot read page.json: the folder name is empty\n");
        return;
    }
    struct stat st;
    const char *why = "cannot open it";
    size_t n = strlen(dir) + sizeof "/page.json";
    char *path = malloc(n);
    if (stat(dir, &st) != 0) why = errno == ENOENT ? "no such folder" : strerror(errno);
    else if (!S_ISDIR(st.st_mode)) why = "not a folder";
    else if (path) {
        snprintf(path, n, "%s/page.json", dir);
        if (stat(path, &st) != 0) why = errno == ENOENT ? "the folder has no page.json" : strerror(errno);
        else if (!S_ISREG(st.st_mode)) why = "page.json is not a regular file";
        else if (st.st_size > (16 << 20)) why = "page.json is larger than 16 MiB";
    }
    free(path);
    fprintf(stderr, "%s: error: cannot read %s/page.json: %s\n", dir, dir, why);
}

static int load_page(const char *dir, tpl_page **pg)
{
    tpl_error err = { 0 };
    tpl_status st = tpl_page_load_dir(dir, pg, &err);
    if (st == TPL_OK) return 0;
    if (st == TPL_ERR_IO) page_io_error(dir);
    else tplc_print_error(&err);
    tpl_error_clear(&err);
    return st == TPL_ERR_IO || st == TPL_ERR_NOMEM || st == TPL_ERR_USAGE ? TPLC_EXIT_USAGE : TPLC_EXIT_TEMPLATE;
}

/* Prints the error of a failed page render; for a state error, names the input file. */
static int render_fail(const tpl_page_call *c, tpl_status st, const char *input)
{
    const tpl_error *e = tpl_page_call_error(c);
    if (st == TPL_ERR_STATE && input) {
        tpl_error copy = *e;
        copy.file = input;
        tplc_print_error(&copy);
    } else {
        tplc_print_error(e);
    }
    return st >= TPL_ERR_USAGE && st != TPL_ERR_NOMEM ? TPLC_EXIT_USAGE : TPLC_EXIT_TEMPLATE;
}

static int write_stdout(const char *s, size_t n)
{
    if (tplc_write_output(NULL, s, n) == 0) return 0;
    perror("tplc: error: cannot write standard output");
    return TPLC_EXIT_USAGE;
}

static int dump_json(json_t *j)
{
    char *s = json_dumps(j, JSON_INDENT(2));
    json_decref(j);
    if (!s) { fprintf(stderr, "tplc: out of memory\n"); return TPLC_EXIT_USAGE; }
    size_t n = strlen(s);
    int rc = write_stdout(s, n);
    if (!rc) rc = write_stdout("\n", 1);
    free(s);
    return rc;
}

/* One golden as the page's state text (compact JSON, malloc'd). */
static char *state_text(json_t *state)
{
    return json_dumps(state, JSON_COMPACT);
}

static int page_once(const tplc_opts *o, const tpl_page *pg, tpl_page_call *c)
{
    json_t *state, *memory;
    int rc = read_input(o, &state, &memory);
    if (rc) return rc;
    char *text = state_text(state);
    json_decref(state);
    if (!text) { json_decref(memory); fprintf(stderr, "tplc: out of memory\n"); return TPLC_EXIT_USAGE; }
    tpl_status fs = set_facts(c, memory, o); /* (a fact that is not UTF-8: the call's error) */
    json_decref(memory);
    if (fs != TPL_OK) {
        free(text);
        if (fs == TPL_ERR_NOMEM) { fprintf(stderr, "tplc: out of memory\n"); return TPLC_EXIT_USAGE; }
        render_fail(c, fs, NULL);
        return TPLC_EXIT_USAGE; /* (a --remember refused: as tplc render refuses it) */
    }
    tpl_status st = tpl_page_call_render(c, text, strlen(text));
    free(text);
    if (st != TPL_OK) return render_fail(c, st, o->state ? o->state : o->golden);
    if (o->format && !strcmp(o->format, "json")) {
        json_t *blocks = json_array();
        for (size_t i = 0; i < tpl_page_block_count(pg); i++) {
            tpl_page_block_result b;
            tpl_page_call_block(c, i, &b);
            json_t *reads = json_array();
            size_t nr = tpl_page_block_reads(pg, i, NULL, 0);
            const char **paths = calloc(nr + 1, sizeof *paths);
            if (paths) {
                tpl_page_block_reads(pg, i, paths, nr);
                for (size_t k = 0; k < nr; k++) json_array_append_new(reads, json_string(paths[k]));
            }
            free(paths);
            json_array_append_new(blocks, json_pack("{s:s, s:s, s:s%, s:o}", "name", b.name, "region",
                                                    b.region == TPL_PAGE_STATIC ? "static" : "dynamic", "text", b.text,
                                                    b.len, "reads", reads));
        }
        return dump_json(json_pack("{s:o}", "blocks", blocks));
    }
    char *page;
    size_t n;
    if (tpl_page_call_text(c, &page, &n) != TPL_OK) { fprintf(stderr, "tplc: out of memory\n"); return TPLC_EXIT_USAGE; }
    rc = write_stdout(page, n);
    free(page);
    return rc;
}

/* Appends ", NAME" (or "NAME" first) to a line being built. */
static void list_add(char *line, size_t cap, bool *first, const char *s)
{
    size_t n = strlen(line);
    snprintf(line + n, cap - n, "%s%s", *first ? "" : ", ", s);
    *first = false;
}

static int page_steps(const tplc_opts *o, const tpl_page *pg, tpl_page_call *c)
{
    size_t len;
    char *text = tplc_read_input(o->steps, "steps", &len);
    if (!text) return TPLC_EXIT_USAGE;
    json_error_t je;
    json_t *steps = json_loadb(text, len, 0, &je);
    if (!steps) {
        json_fail(o->steps, text, len, &je, "steps");
        free(text);
        return TPLC_EXIT_TEMPLATE;
    }
    for (size_t k = 0; k < json_array_size(steps); k++) {
        json_t *g = json_array_get(steps, k);
        if (json_is_object(g) && !tplc_golden_keys_ok(o->steps, text, len, g, (long)k)) {
            free(text);
            json_decref(steps);
            return TPLC_EXIT_TEMPLATE;
        }
    }
    free(text);
    if (!json_is_array(steps)) {
        plain_fail(o->steps, "the steps file is a JSON array of goldens {\"state\": {...}, \"memory\": [facts]}");
        json_decref(steps);
        return TPLC_EXIT_TEMPLATE;
    }
    bool json = o->format && !strcmp(o->format, "json");
    size_t nb = tpl_page_block_count(pg), sent = 0, naive = 0;
    json_t *jsteps = json_array();
    char *out = NULL;
    size_t outlen = 0;
    FILE *mem = json ? NULL : open_memstream(&out, &outlen);
    if (!jsteps || (!json && !mem)) { json_decref(steps); json_decref(jsteps); fprintf(stderr, "tplc: out of memory\n"); return TPLC_EXIT_USAGE; }
    int rc = 0;
    for (size_t k = 0; k < json_array_size(steps) && !rc; k++) {
        json_t *g = json_array_get(steps, k);
        json_t *st = json_is_object(g) ? json_object_get(g, "state") : NULL;
        json_t *memory = json_is_object(g) ? json_object_get(g, "memory") : NULL;
        bool bad = !json_is_object(g) || (st && !json_is_object(st)) || (memory && !json_is_array(memory));
        for (size_t i = 0; !bad && memory && i < json_array_size(memory); i++) bad = !json_is_string(json_array_get(memory, i));
        if (bad) {
            fprintf(stderr, "%s: error: step %zu: a golden is {\"state\": {...}, \"memory\": [facts]}\n", o->steps, k + 1);
            rc = TPLC_EXIT_TEMPLATE;
            break;
        }
        json_t *empty = json_object();
        char *stext = state_text(st ? st : empty);
        json_decref(empty);
        tpl_status s = stext ? set_facts(c, memory, o) : TPL_ERR_NOMEM;
        if (s == TPL_OK) s = tpl_page_call_render(c, stext, strlen(stext));
        free(stext);
        if (s != TPL_OK) {
            fprintf(stderr, "%s: step %zu:\n", o->steps, k + 1);
            rc = render_fail(c, s, o->steps);
            break;
        }
        json_t *jblocks = json_array();
        char changed[4096] = "", unchanged[4096] = "", kept[4096] = "";
        bool f1 = true, f2 = true, f3 = true;
        for (size_t i = 0; i < nb; i++) {
            tpl_page_block_result b;
            tpl_page_call_block(c, i, &b);
            naive += b.len;
            if (b.changed) sent += b.len;
            json_array_append_new(jblocks, json_pack("{s:s, s:b, s:b, s:I}", "name", b.name, "changed", b.changed,
                                                     "rendered", b.rendered, "bytes", (json_int_t)b.len));
            if (mem) {
                char item[600];
                if (b.changed) {
                    snprintf(item, sizeof item, "%s (%zu bytes)", b.name, b.len);
                    list_add(changed, sizeof changed, &f1, item);
                    if (k > 0 && b.region == TPL_PAGE_STATIC)
                        fprintf(mem, "step %zu: cache break: static block '%s' changed mid-call (only a change of "
                                     "channel or medium can do that)\n", k + 1, b.name);
                } else {
                    list_add(unchanged, sizeof unchanged, &f2, b.name);
                }
                if (!b.rendered && !b.changed) list_add(kept, sizeof kept, &f3, b.name);
            }
        }
        json_array_append_new(jsteps, json_pack("{s:I, s:o}", "step", (json_int_t)(k + 1), "blocks", jblocks));
        if (mem) {
            fprintf(mem, "step %zu: sent %s", k + 1, f1 ? "nothing" : changed);
            if (!f2) fprintf(mem, "; unchanged: %s", unchanged);
            if (!f3) fprintf(mem, "; not re-rendered: %s", kept);
            fputc('\n', mem);
        }
    }
    json_decref(steps);
    if (rc) {
        json_decref(jsteps);
        if (mem) fclose(mem);
        free(out);
        return rc;
    }
    if (json)
        return dump_json(json_pack("{s:o, s:I, s:I}", "steps", jsteps, "sent_bytes", (json_int_t)sent, "naive_bytes",
                                   (json_int_t)naive));
    json_decref(jsteps);
    fprintf(mem, "sent %zu bytes; re-sending every block every step: %zu bytes", sent, naive);
    if (naive) fprintf(mem, " (sent %.1f%%)", 100.0 * (double)sent / (double)naive);
    fputc('\n', mem);
    fclose(mem);
    rc = write_stdout(out, outlen);
    free(out);
    return rc;
}

int tplc_page(const tplc_opts *o)
{
    if (o->steps && (o->state || o->golden)) {
        fprintf(stderr, "tplc page: --steps takes its states from the steps file (no --state or --golden)\n");
        return TPLC_EXIT_USAGE;
    }
    if (o->state && o->golden) {
        fprintf(stderr, "tplc page: --state and --golden exclude each other\n");
        return TPLC_EXIT_USAGE;
    }
    tpl_page *pg = NULL;
    int rc = load_page(o->tpl, &pg);
    if (rc) return rc;
    tpl_render *r = tpl_render_new(&o->limits);
    tpl_page_call *c = r ? tpl_page_call_new(pg, r) : NULL;
    if (!c) {
        fprintf(stderr, "tplc: out of memory\n");
        rc = TPLC_EXIT_USAGE;
    } else if (tpl_page_call_set_channel(c, o->channel, o->medium) != TPL_OK ||
               tpl_page_call_set_claimed(c, o->claimed) != TPL_OK) {
        tplc_print_error(tpl_page_call_error(c));
        rc = TPLC_EXIT_USAGE;
    } else {
        tpl_page_call_set_resumed(c, o->resumed);
        rc = o->steps ? page_steps(o, pg, c) : page_once(o, pg, c);
    }
    tpl_page_call_free(c);
    tpl_render_free(r);
    tpl_page_free(pg);
    return rc;
}

/* ------------------------------------------------------------------ tplc lint --page */

int tplc_lint_page(const tplc_opts *o)
{
    tpl_page *pg = NULL;
    tpl_error err = { 0 };
    tpl_status st = tpl_page_load_dir(o->page, &pg, &err);
    bool json = o->format && !strcmp(o->format, "json");
    int rc = st == TPL_OK ? 0 : st == TPL_ERR_IO || st == TPL_ERR_NOMEM || st == TPL_ERR_USAGE ? TPLC_EXIT_USAGE : 1;
    if (rc == TPLC_EXIT_USAGE) {
        page_io_error(o->page);
    } else if (json) {
        json_t *diags = json_array();
        if (st != TPL_OK)
            json_array_append_new(diags, json_pack("{s:s, s:s, s:i, s:i, s:s}", "severity", "error", "file",
                                                   err.file ? err.file : "page.json", "line", (int)err.line, "column",
                                                   (int)err.column, "message", err.message ? err.message : "error"));
        json_t *arr = json_array();
        json_array_append_new(arr, json_pack("{s:s, s:b, s:o}", "page", o->page, "ok", st == TPL_OK, "diagnostics", diags));
        int w = dump_json(arr);
        if (w) rc = w;
    } else if (st != TPL_OK) {
        char *e = tpl_error_format(&err);
        if (e) fputs(e, stdout);
        free(e);
    }
    tpl_error_clear(&err);
    tpl_page_free(pg);
    return rc;
}

/* ------------------------------------------------------------------ tplc render's page scope */

int tplc_page_scope(const tplc_opts *o, tpl_render *r)
{
    json_t *state, *memory;
    int rc = read_input(o, &state, &memory);
    if (rc) return rc;
    json_t *merged = NULL;
    if (o->defaults) {
        size_t len;
        char *text = tplc_read_input(o->defaults, "defaults", &len);
        if (!text) { json_decref(state); json_decref(memory); return TPLC_EXIT_USAGE; }
        json_error_t je;
        merged = json_loadb(text, len, 0, &je);
        if (!merged || !json_is_object(merged)) {
            if (merged) plain_fail(o->defaults, "the defaults must be a JSON object");
            else json_fail(o->defaults, text, len, &je, "defaults");
            json_decref(merged);
            free(text);
            json_decref(state);
            json_decref(memory);
            return TPLC_EXIT_TEMPLATE;
        }
        free(text);
    } else {
        merged = json_object();
    }
    /* defaults under the state; the framework names (call, resumed) win over both */
    json_object_update(merged, state);
    json_object_del(merged, "call");
    json_object_set_new(merged, "resumed", json_boolean(o->resumed));
    char *text = json_dumps(merged, JSON_COMPACT);
    json_decref(merged);
    json_decref(state);
    tpl_status st = text ? tpl_render_set_state_json(r, text, strlen(text)) : TPL_ERR_NOMEM;
    free(text);
    for (size_t i = 0; st == TPL_OK && i < json_array_size(memory); i++)
        st = tpl_render_add_fact(r, json_string_value(json_array_get(memory, i)), json_string_length(json_array_get(memory, i)));
    json_decref(memory);
    if (st == TPL_OK && o->claimed) st = tpl_render_set_call_claimed(r, o->claimed);
    if (st != TPL_OK) {
        tplc_print_error(tpl_render_error(r));
        return st >= TPL_ERR_USAGE ? TPLC_EXIT_USAGE : TPLC_EXIT_TEMPLATE;
    }
    return 0;
}
