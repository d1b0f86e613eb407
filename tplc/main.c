/* tplc — compile, render, lint and disassemble templates (DESIGN.md §4).
 * Uses only the public header. Exit status: 0 success, 1 template error (syntax, undefined,
 * type, limit, invalid state), 2 usage or I/O error. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/stat.h>
#include <jansson.h>
#include "tpl.h"

#define EXIT_TEMPLATE 1
#define EXIT_USAGE 2

static const char usage[] =
    "usage: tplc render TEMPLATE [--state FILE.json | --golden FILE.json [--case N]]\n"
    "                   [--syntax jinja|erb|fmt] [--profile jinja2|pinecall|hf]\n"
    "                   [--trim-blocks] [--lstrip-blocks] [--keep-trailing-newline] [--strict] [--tidy]\n"
    "                   [--lang L] [--catalog FILE]... [--remember FACT]... [--tr-key NAME]...\n"
    "                   [--channel C] [--medium M] [-o OUT]\n"
    "       tplc dump TEMPLATE [compile flags]\n"
    "       tplc compile TEMPLATE [compile flags] [--strip-source] -o OUT.tplb\n"
    "       tplc compile TEMPLATE [compile flags] --emit c --name SYMBOL -o OUT.c\n"
    "            (compile also takes --depfile FILE: a Makefile rule OUT: TEMPLATE and its includes)\n"
    "       tplc lint TEMPLATE... [--state FILE.json | --schema FILE.json] [--reads] [--format text|json]\n"
    "       tplc tr-extract TEMPLATE... -o CATALOG.json [--lang L] [compile flags]\n"
    "       tplc --version\n";

/* The largest input tplc reads (a template, state or catalog): /dev/zero is refused, not read
 * until memory runs out. */
#define TPLC_MAX_INPUT ((size_t)256 << 20)

/* Reads a whole file ("-" = stdin). Returns malloc'd bytes (NUL-terminated) or NULL (errno set;
 * EFBIG past TPLC_MAX_INPUT). */
static char *read_file(const char *path, size_t *len)
{
    FILE *f = strcmp(path, "-") == 0 ? stdin : fopen(path, "rb");
    if (!f) return NULL;
    size_t cap = 65536, n = 0;
    char *buf = malloc(cap);
    while (buf) {
        size_t got = fread(buf + n, 1, cap - n - 1, f);
        n += got;
        if (got == 0) break;
        if (n > TPLC_MAX_INPUT) {
            free(buf);
            if (f != stdin) fclose(f);
            errno = EFBIG;
            return NULL;
        }
        if (n + 1 >= cap) {
            char *nb = realloc(buf, cap * 2);
            if (!nb) { free(buf); buf = NULL; break; }
            buf = nb;
            cap *= 2;
        }
    }
    bool err = ferror(f);
    if (f != stdin) fclose(f);
    if (!buf || err) { free(buf); return NULL; }
    buf[n] = 0;
    *len = n;
    return buf;
}

/* Writes data to path atomically (temporary file in the same folder + rename). */
/* A symlink is followed (the file it names is replaced, the link stays); a path that is not a
 * regular file (a FIFO, /dev/stdout, a terminal) is written in place, as there is nothing to
 * rename over; an existing file keeps its permissions. */
static int write_atomic(const char *path, const char *data, size_t n)
{
    struct stat st;
    char *real = NULL;
    bool exists = stat(path, &st) == 0;
    if (exists && !S_ISREG(st.st_mode)) {
        FILE *f = fopen(path, "wb");
        if (!f) return -1;
        bool ok = fwrite(data, 1, n, f) == n;
        ok = (fclose(f) == 0) && ok;
        return ok ? 0 : -1;
    }
    struct stat lst;
    if (exists && lstat(path, &lst) == 0 && S_ISLNK(lst.st_mode) && !(real = realpath(path, NULL))) return -1;
    const char *target = real ? real : path;
    size_t plen = strlen(target);
    char *tmp = malloc(plen + 32);
    if (!tmp) { free(real); return -1; }
    snprintf(tmp, plen + 32, "%s.tmp.%ld", target, (long)getpid());
    FILE *f = fopen(tmp, "wb");
    if (!f) { free(tmp); free(real); return -1; }
    bool ok = fwrite(data, 1, n, f) == n;
    ok = (fflush(f) == 0) && ok;
    if (exists) ok = fchmod(fileno(f), st.st_mode & 07777) == 0 && ok;
    ok = (fclose(f) == 0) && ok;
    if (!ok || rename(tmp, target) != 0) { remove(tmp); free(tmp); free(real); return -1; }
    free(tmp);
    free(real);
    return 0;
}

/* Whether paths a and b name the same existing file. */
static bool same_file(const char *a, const char *b)
{
    struct stat sa, sb;
    return a && b && strcmp(a, "-") != 0 && strcmp(b, "-") != 0 && stat(a, &sa) == 0 && stat(b, &sb) == 0 &&
           sa.st_dev == sb.st_dev && sa.st_ino == sb.st_ino;
}

static void print_error(const tpl_error *e)
{
    char *s = tpl_error_format(e);
    if (s) { fputs(s, stderr); free(s); }
    else fprintf(stderr, "error: %s\n", e->message ? e->message : "unknown");
}

/* A JSON error in a state/golden file: FILE:LINE:COL with the file's line and a caret. */
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
        while (j < tlen && text[j] != '\n' && text[j] != '\r') j++;
        line = malloc(j - i + 1);
        if (line) { memcpy(line, text + i, j - i); line[j - i] = 0; }
    }
    loc.source_line = line;
    print_error(&loc);
    free(line);
}

/* The CLI's template loader: names resolve beside the main template (data = its folder). */
static char *load_beside(void *data, const char *name, size_t name_len, size_t *len)
{
    const char *dir = data;
    if (name_len == 0 || memchr(name, 0, name_len)) return NULL;
    /* as Jinja2's FileSystemLoader: a ".." segment never leaves the folder (not found) */
    for (size_t i = 0; i < name_len;) {
        size_t j = i;
        while (j < name_len && name[j] != '/') j++;
        if (j - i == 2 && name[i] == '.' && name[i + 1] == '.') return NULL;
        i = j + 1;
    }
    size_t dl = strlen(dir);
    char *path = malloc(dl + name_len + 2);
    if (!path) return NULL;
    memcpy(path, dir, dl);
    path[dl] = '/';
    memcpy(path + dl + 1, name, name_len);
    path[dl + 1 + name_len] = 0;
    char *text = read_file(path, len);
    free(path);
    return text;
}

static tpl_syntax syntax_of(const char *path)
{
    const char *dot = strrchr(path, '.');
    if (dot && strcmp(dot, ".erb") == 0) return TPL_SYNTAX_ERB;
    if (dot && (strcmp(dot, ".fmt") == 0 || strcmp(dot, ".txt") == 0)) return TPL_SYNTAX_FMT;
    return TPL_SYNTAX_JINJA;
}

typedef struct opts {
    const char *cmd, *tpl, *state, *golden, *syntax, *profile, *lang, *channel, *medium, *out;
    long case_n;
    bool trim_blocks, lstrip_blocks, keep_nl, strict, tidy;
    const char **facts;
    int nfacts;
    const char **catalogs, **trkeys;
    int ncatalogs, ntrkeys;
    const char **tpls;      /* every template argument (lint, tr-extract) */
    int ntpls;
    const char *emit, *symbol;  /* compile: --emit c, --name SYMBOL */
    const char *depfile;        /* compile: --depfile FILE */
    bool strip_source;          /* compile: --strip-source */
} opts;

static int parse_args(int argc, char **argv, opts *o)
{
    memset(o, 0, sizeof *o);
    o->case_n = -1;
    o->facts = calloc((size_t)argc, sizeof *o->facts);
    o->catalogs = calloc((size_t)argc, sizeof *o->catalogs);
    o->trkeys = calloc((size_t)argc, sizeof *o->trkeys);
    o->tpls = calloc((size_t)argc, sizeof *o->tpls);
    if (!o->facts || !o->catalogs || !o->trkeys || !o->tpls) return -1;
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
#define VAL(flag, field) if (strcmp(a, flag) == 0) { if (++i >= argc) { fprintf(stderr, "tplc: %s needs a value\n", flag); return -1; } o->field = argv[i]; continue; }
        VAL("--state", state) VAL("--golden", golden) VAL("--syntax", syntax) VAL("--profile", profile)
        VAL("--lang", lang) VAL("--channel", channel) VAL("--medium", medium) VAL("-o", out)
        VAL("--emit", emit) VAL("--name", symbol) VAL("--depfile", depfile)
#undef VAL
        if (strcmp(a, "--case") == 0) {
            if (++i >= argc) { fprintf(stderr, "tplc: --case needs a value\n"); return -1; }
            char *end;
            errno = 0;
            o->case_n = strtol(argv[i], &end, 10);
            if (end == argv[i] || *end || o->case_n < 0 || errno == ERANGE) {
                fprintf(stderr, "tplc: --case needs a non-negative number (got '%s')\n", argv[i]);
                return -1;
            }
            continue;
        }
        if (strcmp(a, "--remember") == 0) {
            if (++i >= argc) { fprintf(stderr, "tplc: --remember needs a value\n"); return -1; }
            o->facts[o->nfacts++] = argv[i];
            continue;
        }
        if (strcmp(a, "--catalog") == 0 || strcmp(a, "--tr-key") == 0) {
            if (++i >= argc) { fprintf(stderr, "tplc: %s needs a value\n", a); return -1; }
            if (a[2] == 'c') o->catalogs[o->ncatalogs++] = argv[i];
            else o->trkeys[o->ntrkeys++] = argv[i];
            continue;
        }
        if (strcmp(a, "--trim-blocks") == 0) { o->trim_blocks = true; continue; }
        if (strcmp(a, "--lstrip-blocks") == 0) { o->lstrip_blocks = true; continue; }
        if (strcmp(a, "--keep-trailing-newline") == 0) { o->keep_nl = true; continue; }
        if (strcmp(a, "--strict") == 0) { o->strict = true; continue; }
        if (strcmp(a, "--tidy") == 0) { o->tidy = true; continue; }
        if (strcmp(a, "--strip-source") == 0) { o->strip_source = true; continue; }
        if (a[0] == '-' && a[1] != 0) { fprintf(stderr, "tplc: unknown flag %s\n", a); return -1; }
        if (!o->cmd) o->cmd = a;
        else if (!o->tpl) o->tpl = o->tpls[o->ntpls++] = a;
        else if (strcmp(o->cmd, "tr-extract") == 0) o->tpls[o->ntpls++] = a;
        else { fprintf(stderr, "tplc: unexpected argument %s\n", a); return -1; }
    }
    if (!o->cmd || !o->tpl) return -1;
    return 0;
}

/* A precompiled .tplb (by magic, or by extension): load and verify it instead of compiling. */
static int load_tplb(const opts *o, const char *path, const char *bytes, size_t len, tpl_program **prog)
{
    if (o->syntax || o->profile || o->trim_blocks || o->lstrip_blocks || o->keep_nl || o->strict || o->tidy) {
        fprintf(stderr, "%s: error: compile-time flags do not apply to a .tplb (they were fixed by tplc compile)\n", path);
        return EXIT_USAGE;
    }
    tpl_error err = { 0 };
    tpl_status st = tpl_program_load(path, bytes, len, prog, &err);
    if (st != TPL_OK) {
        print_error(&err);
        tpl_error_clear(&err);
        return EXIT_TEMPLATE;
    }
    return 0;
}

/* Compiles template `path` (or loads it, when it is a .tplb) with the command line's options; prints errors unless err is given
 * (then the caller gets the error record and must tpl_error_clear it). */
static int compile_path(const opts *o, const char *path, tpl_program **prog, tpl_error *errout)
{
    size_t len;
    char *src = read_file(path, &len);
    if (!src) {
        fprintf(stderr, "%s: error: cannot read template: %s\n", path, strerror(errno ? errno : EIO));
        return EXIT_USAGE;
    }
    size_t plen = strlen(path);
    if (tpl_is_tplb(src, len) || (plen > 5 && strcmp(path + plen - 5, ".tplb") == 0)) {
        int rc = load_tplb(o, path, src, len, prog);
        free(src);
        return rc;
    }
    tpl_syntax syn = syntax_of(path);
    if (o->syntax) {
        if (strcmp(o->syntax, "jinja") == 0) syn = TPL_SYNTAX_JINJA;
        else if (strcmp(o->syntax, "erb") == 0) syn = TPL_SYNTAX_ERB;
        else if (strcmp(o->syntax, "fmt") == 0) syn = TPL_SYNTAX_FMT;
        else { fprintf(stderr, "tplc: unknown syntax '%s'\n", o->syntax); free(src); return EXIT_USAGE; }
    }
    tpl_options opt = { 0 };
    char *dir = strdup(o->tpl);
    if (!dir) { free(src); return EXIT_USAGE; }
    char *slash = strrchr(dir, '/');
    if (slash) *slash = 0;
    else strcpy(dir, ".");
    if (strcmp(o->tpl, "-") == 0) strcpy(dir, ".");
    opt.loader = load_beside;
    opt.loader_data = dir;
    if (tpl_options_profile(&opt, syn, o->profile) != TPL_OK) {
        free(dir);
        fprintf(stderr, strcmp(o->profile, "jinja2") && strcmp(o->profile, "pinecall") && strcmp(o->profile, "hf")
                    ? "tplc: unknown profile '%s' (jinja2, pinecall or hf)\n" : "tplc: profile '%s' does not apply to this syntax\n",
                    o->profile);
        free(src);
        return EXIT_USAGE;
    }
    opt.trim_blocks |= o->trim_blocks;
    opt.lstrip_blocks |= o->lstrip_blocks;
    opt.keep_trailing_newline |= o->keep_nl;
    opt.strict |= o->strict;
    opt.tidy |= o->tidy;
    tpl_error err = { 0 };
    tpl_status st = tpl_compile(path, src, len, &opt, prog, &err);
    free(src);
    free(dir);
    if (st != TPL_OK) {
        if (errout) *errout = err;
        else {
            print_error(&err);
            tpl_error_clear(&err);
        }
        return st >= TPL_ERR_USAGE && st != TPL_ERR_NOMEM ? EXIT_USAGE : EXIT_TEMPLATE;
    }
    return 0;
}

static int compile_template(const opts *o, tpl_program **prog)
{
    return compile_path(o, o->tpl, prog, NULL);
}

/* A Pinecall golden: {"state": {...}, "memory": ["fact", ...]}, or an array of them (then --case N
 * picks one, counting from 0). */
static int load_golden(const opts *o, tpl_render *r, const char *path, const char *text, size_t len)
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
    int rc = 0;
    if (state) {
        char *s = json_dumps(state, JSON_COMPACT | JSON_PRESERVE_ORDER);
        if (!s || tpl_render_set_state_json(r, s, strlen(s)) != TPL_OK) {
            print_error(tpl_render_error(r));
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
            rc = EXIT_USAGE;
        }
    }
    json_decref(root);
    return rc;
}

/* Loads the --catalog files, --lang and --tr-key settings into the render. */
static int load_translation(const opts *o, tpl_render *r)
{
    for (int i = 0; i < o->ncatalogs; i++) {
        size_t len;
        char *text = read_file(o->catalogs[i], &len);
        if (!text) {
            fprintf(stderr, "%s: error: cannot read catalog: %s\n", o->catalogs[i], strerror(errno ? errno : EIO));
            return EXIT_USAGE;
        }
        tpl_status st = tpl_render_add_catalog_json(r, text, len);
        if (st != TPL_OK) {
            print_json_error(o->catalogs[i], text, len, tpl_render_error(r));
            free(text);
            return st == TPL_ERR_NOMEM ? EXIT_USAGE : EXIT_TEMPLATE;
        }
        free(text);
    }
    if (o->lang && tpl_render_set_lang(r, o->lang) != TPL_OK) return EXIT_USAGE;
    for (int i = 0; i < o->ntrkeys; i++)
        if (tpl_render_add_tr_key(r, o->trkeys[i], strlen(o->trkeys[i])) != TPL_OK) return EXIT_USAGE;
    return 0;
}

/* Loads --state or --golden into the render (and the golden's memory facts). */
static int load_state(const opts *o, tpl_render *r)
{
    const char *path = o->state ? o->state : o->golden;
    if (!path) return 0;
    size_t len;
    if (!o->golden && strcmp(path, "-") != 0) {
        /* parsed from the file's stream: the text is read again only to show an error */
        FILE *f = fopen(path, "rb");
        if (f) {
            tpl_status st = tpl_render_set_state_file(r, f);
            bool rerr = ferror(f);
            fclose(f);
            if (st == TPL_OK) return 0;
            char *text = rerr ? NULL : read_file(path, &len);
            if (text) {
                print_json_error(path, text, len, tpl_render_error(r));
                free(text);
                return EXIT_TEMPLATE;
            }
        }
    }
    char *text = read_file(path, &len);
    if (!text) {
        fprintf(stderr, "%s: error: cannot read state: %s\n", path, strerror(errno ? errno : EIO));
        return EXIT_USAGE;
    }
    if (o->golden) {
        int rc = load_golden(o, r, path, text, len);
        free(text);
        return rc;
    }
    tpl_status st = tpl_render_set_state_json(r, text, len);
    if (st != TPL_OK) {
        print_json_error(path, text, len, tpl_render_error(r));
        free(text);
        return EXIT_TEMPLATE;
    }
    free(text);
    return 0;
}

static int cmd_render(const opts *o)
{
    tpl_program *prog = NULL;
    int rc = compile_template(o, &prog);
    if (rc) return rc;
    tpl_render *r = tpl_render_new(NULL);
    if (!r) { tpl_program_free(prog); fprintf(stderr, "tplc: out of memory\n"); return EXIT_USAGE; }
    rc = load_state(o, r);
    if (!rc) rc = load_translation(o, r);
    for (int i = 0; !rc && i < o->nfacts; i++)
        if (tpl_render_add_fact(r, o->facts[i], strlen(o->facts[i])) != TPL_OK) rc = EXIT_USAGE;
    if (!rc && (o->channel || o->medium) && tpl_render_set_call(r, o->channel, o->medium) != TPL_OK) {
        print_error(tpl_render_error(r));
        rc = EXIT_USAGE;
    }
    if (!rc) {
        const char *out;
        size_t n;
        tpl_status st = tpl_render_run(r, prog, &out, &n);
        if (st != TPL_OK) {
            print_error(tpl_render_error(r));
            rc = st >= TPL_ERR_USAGE && st != TPL_ERR_NOMEM ? EXIT_USAGE : EXIT_TEMPLATE;
        } else if (o->out) {
            if (write_atomic(o->out, out, n) != 0) {
                fprintf(stderr, "%s: error: cannot write: %s\n", o->out, strerror(errno));
                rc = EXIT_USAGE;
            }
        } else if (fwrite(out, 1, n, stdout) != n || fflush(stdout) != 0) {
            rc = EXIT_USAGE;
        }
    }
    tpl_render_free(r);
    tpl_program_free(prog);
    return rc;
}

static int cmd_dump(const opts *o)
{
    tpl_program *prog = NULL;
    int rc = compile_template(o, &prog);
    if (rc) return rc;
    char *s = tpl_disassemble(prog);
    tpl_program_free(prog);
    if (!s) { fprintf(stderr, "tplc: out of memory\n"); return EXIT_USAGE; }
    fputs(s, stdout);
    free(s);
    return 0;
}

/* tplc tr-extract: every literal tr() text of the templates as a catalog skeleton
 * {"main_lang": "en", LANG: {"text": "text", ...}} (targets start as the source text, so the
 * skeleton translates nothing until edited). LANG is --lang, default "xx". */
static int cmd_tr_extract(const opts *o)
{
    if (!o->out) { fprintf(stderr, "tplc: tr-extract needs -o CATALOG.json\n"); return EXIT_USAGE; }
    json_t *rows = json_object();
    json_t *root = json_object();
    if (!rows || !root) { fprintf(stderr, "tplc: out of memory\n"); return EXIT_USAGE; }
    int rc = 0;
    for (int t = 0; t < o->ntpls && !rc; t++) {
        tpl_program *prog = NULL;
        rc = compile_path(o, o->tpls[t], &prog, NULL);
        if (rc) break;
        if (tpl_program_tr_calls(prog, NULL, 0) == 0) {
            size_t hl = 0;
            char *head = read_file(o->tpls[t], &hl);
            bool tplb = head && tpl_is_tplb(head, hl);
            free(head);
            if (tplb) { /* a .tplb keeps no record of its tr() calls */
                fprintf(stderr, "%s: error: tr-extract reads template sources, not a .tplb\n", o->tpls[t]);
                tpl_program_free(prog);
                rc = EXIT_USAGE;
                break;
            }
        }
        size_t n = tpl_program_tr_calls(prog, NULL, 0);
        tpl_tr_call *calls = n ? calloc(n, sizeof *calls) : NULL;
        if (n && !calls) { rc = EXIT_USAGE; tpl_program_free(prog); break; }
        tpl_program_tr_calls(prog, calls, n);
        for (size_t i = 0; i < n; i++) {
            if (!calls[i].text) {
                fprintf(stderr, "%s:%u:%u: warning: tr() argument is not a literal string: skipped\n", o->tpls[t],
                        calls[i].line, calls[i].column);
                continue;
            }
            char *k = malloc(calls[i].len + 1);
            if (!k) { rc = EXIT_USAGE; break; }
            memcpy(k, calls[i].text, calls[i].len);
            k[calls[i].len] = 0;
            if (!json_object_getn(rows, k, calls[i].len))
                json_object_setn_new(rows, k, calls[i].len, json_stringn(calls[i].text, calls[i].len));
            free(k);
        }
        free(calls);
        tpl_program_free(prog);
    }
    if (!rc) {
        json_object_set_new(root, "main_lang", json_string("en"));
        json_object_set(root, o->lang ? o->lang : "xx", rows);
        char *text = json_dumps(root, JSON_INDENT(2) | JSON_PRESERVE_ORDER | JSON_ENSURE_ASCII * 0);
        if (!text) rc = EXIT_USAGE;
        else {
            size_t n = strlen(text);
            text[n] = '\n';
            if (write_atomic(o->out, text, n + 1) != 0) {
                fprintf(stderr, "%s: error: cannot write: %s\n", o->out, strerror(errno));
                rc = EXIT_USAGE;
            }
            free(text);
        }
    }
    json_decref(rows);
    json_decref(root);
    return rc;
}

/* Writes a path to a Makefile depfile, escaped as make and ninja read it. */
static void dep_path(FILE *f, const char *s, size_t n)
{
    for (size_t i = 0; i < n; i++) {
        if (s[i] == ' ' || s[i] == '#' || s[i] == '\\') fputc('\\', f);
        else if (s[i] == '$') fputc('$', f);
        fputc(s[i], f);
    }
}

/* --depfile: "OUT: TEMPLATE DEP..." where each dependency is a template the compilation loaded
 * (tpl_program_dependencies), as the path beside the main template where the CLI's loader
 * found it. Written atomically. */
static int write_depfile(const opts *o, const tpl_program *prog)
{
    char *text = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&text, &len);
    if (!f) { fprintf(stderr, "tplc: out of memory\n"); return EXIT_USAGE; }
    dep_path(f, o->out, strlen(o->out));
    fputs(": ", f);
    dep_path(f, o->tpl, strlen(o->tpl));
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
            dep_path(f, names[i], lens[i]);
        }
    }
    fputc('\n', f);
    bool ok = names && lens && fclose(f) == 0;
    if (!ok && (!names || !lens)) fclose(f);
    free(names);
    free(lens);
    int rc = 0;
    if (!ok || write_atomic(o->depfile, text, len) != 0) {
        fprintf(stderr, "%s: error: cannot write depfile\n", o->depfile);
        rc = EXIT_USAGE;
    }
    free(text);
    return rc;
}

/* tplc compile: a .tplb, or C source with --emit c (written atomically: a failed compile leaves
 * any previous output untouched). */
static int cmd_compile(const opts *o)
{
    if (!o->out) { fprintf(stderr, "tplc: compile needs -o OUT\n"); return EXIT_USAGE; }
    bool emit_c = false;
    if (o->emit) {
        if (strcmp(o->emit, "c") == 0) emit_c = true;
        else if (strcmp(o->emit, "tplb") != 0) { fprintf(stderr, "tplc: --emit takes c or tplb\n"); return EXIT_USAGE; }
    }
    /* --emit c without --name: the template's base name with non-identifier bytes as '_' */
    char symbol[128];
    if (emit_c && !o->symbol) {
        const char *base = strrchr(o->tpl, '/');
        base = base ? base + 1 : o->tpl;
        size_t k = 0;
        if (*base >= '0' && *base <= '9') symbol[k++] = '_';
        for (; *base && *base != '.' && k < sizeof symbol - 1; base++)
            symbol[k++] = (char)((*base >= 'a' && *base <= 'z') || (*base >= 'A' && *base <= 'Z') ||
                                 (*base >= '0' && *base <= '9') ? *base : '_');
        symbol[k] = 0;
    }
    tpl_program *prog = NULL;
    int rc = compile_template(o, &prog);
    if (rc) return rc;
    if (o->depfile && (rc = write_depfile(o, prog)) != 0) { tpl_program_free(prog); return rc; }
    unsigned flags = o->strip_source ? TPL_SAVE_STRIP_SOURCE : 0;
    void *data = NULL;
    size_t n = 0;
    tpl_status st = emit_c ? tpl_program_emit_c(prog, o->symbol ? o->symbol : symbol, flags, (char **)&data, &n)
                           : tpl_program_save(prog, flags, &data, &n);
    tpl_program_free(prog);
    if (st == TPL_ERR_USAGE) { fprintf(stderr, "tplc: --name must be a C identifier\n"); return EXIT_USAGE; }
    if (st != TPL_OK) { fprintf(stderr, "tplc: out of memory\n"); return EXIT_USAGE; }
    if (write_atomic(o->out, data, n) != 0) {
        fprintf(stderr, "%s: error: cannot write: %s\n", o->out, strerror(errno));
        rc = EXIT_USAGE;
    }
    free(data);
    return rc;
}

int tplc_lint(int argc, char **argv);

int main(int argc, char **argv)
{
    if (argc == 2 && strcmp(argv[1], "--version") == 0) {
        printf("tplc %s\n", TPL_VERSION_STRING);
        return 0;
    }
    if (argc == 2 && (strcmp(argv[1], "--help") == 0 || strcmp(argv[1], "-h") == 0)) {
        fputs(usage, stdout);
        fputs("\nThe syntax follows the extension (.erb ERB, .fmt/.txt format strings, else Jinja) unless\n"
              "--syntax says otherwise; TEMPLATE - reads standard input. Exit status: 0 success, 1 template\n"
              "error, 2 usage or I/O error. More: man doc/tplc.1 and the README.\n", stdout);
        return 0;
    }
    if (argc >= 2 && strcmp(argv[1], "lint") == 0) return tplc_lint(argc - 1, argv + 1);
    opts o;
    if (parse_args(argc, argv, &o) != 0) {
        fputs(usage, stderr);
        free(o.facts);
        free(o.catalogs);
        free(o.trkeys);
        free(o.tpls);
        return EXIT_USAGE;
    }
    int rc;
    if ((o.state && o.golden) || (o.case_n >= 0 && !o.golden)) {
        fprintf(stderr, "tplc: %s\n", o.golden ? "--state and --golden exclude each other" : "--case needs --golden");
        free(o.facts);
        free(o.catalogs);
        free(o.trkeys);
        free(o.tpls);
        return EXIT_USAGE;
    }
    /* tplc never writes to its inputs: -o or --depfile naming one is refused before any work */
    const char *outs[2] = { o.out, o.depfile };
    for (int k = 0; k < 2; k++) {
        const char *ins[4] = { o.tpl, o.state, o.golden, NULL };
        const char *hit = NULL;
        for (int i = 0; i < 3 && !hit; i++)
            if (same_file(outs[k], ins[i])) hit = ins[i];
        for (int i = 0; i < o.ntpls && !hit; i++)
            if (same_file(outs[k], o.tpls[i])) hit = o.tpls[i];
        for (int i = 0; i < o.ncatalogs && !hit; i++)
            if (same_file(outs[k], o.catalogs[i])) hit = o.catalogs[i];
        if (hit) {
            fprintf(stderr, "tplc: error: %s %s is an input (%s); tplc does not write to its inputs\n",
                    k ? "--depfile" : "-o", outs[k], hit);
            free(o.facts);
            free(o.catalogs);
            free(o.trkeys);
            free(o.tpls);
            return EXIT_USAGE;
        }
    }
    if (strcmp(o.cmd, "render") == 0) rc = cmd_render(&o);
    else if (strcmp(o.cmd, "dump") == 0) rc = cmd_dump(&o);
    else if (strcmp(o.cmd, "tr-extract") == 0) rc = cmd_tr_extract(&o);
    else if (strcmp(o.cmd, "compile") == 0) rc = cmd_compile(&o);
    else {
        fputs(usage, stderr);
        rc = EXIT_USAGE;
    }
    free(o.facts);
    free(o.catalogs);
    free(o.trkeys);
    free(o.tpls);
    return rc;
}
