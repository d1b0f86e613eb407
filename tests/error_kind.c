/* error_kind: compiles and renders one template as `tplc render` does and prints the kind of
 * the error it ends with and the exception the reference engine of its syntax raises for that
 * kind (tpl_error_exception), one line: "KIND EXCEPTION" ("-" when tpl_errors.def names none),
 * or "ok" when it renders. tests/error_kinds.py compares that with the class the reference
 * engine raises (tests/error_kinds.txt, pinned from ../shared/conformance/oracle).
 *
 * usage: error_kind TEMPLATE [--state JSON] [--strict] [--profile P] [--trim-blocks]
 *                   [--lstrip-blocks] [--keep-trailing-newline] [--tidy]
 * The syntax comes from the extension (.jinja/.j2, .erb, else str.format); include, import and
 * extends load from the template's folder. Exit status 0 (a line printed), 2 usage or I/O. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "tpl.h"

static char *read_file(const char *path, size_t *len)
{
    FILE *f = fopen(path, "rb");
    if (!f) return NULL;
    size_t cap = 4096, n = 0;
    char *buf = malloc(cap + 1);
    for (size_t got; buf && (got = fread(buf + n, 1, cap - n, f)) > 0;) {
        n += got;
        if (n == cap) {
            char *b = realloc(buf, (cap *= 2) + 1);
            if (!b) { free(buf); buf = NULL; }
            else buf = b;
        }
    }
    fclose(f);
    if (buf) buf[n] = 0;
    *len = n;
    return buf;
}

/* include/import/extends beside the template; a name with a ".." segment is not found. */
static char *load(void *data, const char *name, size_t name_len, size_t *len)
{
    const char *dir = data;
    if (name_len == 0 || memchr(name, 0, name_len)) return NULL;
    for (size_t i = 0; i + 1 < name_len; i++)
        if (name[i] == '.' && name[i + 1] == '.') return NULL;
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

static int report(tpl_error_kind kind, tpl_syntax syn)
{
    if (kind == TPL_EK_NONE) { printf("ok\n"); return 0; }
    const char *exc = tpl_error_exception(kind, syn);
    printf("%s %s\n", tpl_error_kind_name(kind), *exc ? exc : "-");
    return 0;
}

int main(int argc, char **argv)
{
    if (argc < 2) { fprintf(stderr, "usage: error_kind TEMPLATE [flags]\n"); return 2; }
    const char *path = argv[1], *state = NULL, *profile = NULL;
    bool strict = false, trim = false, lstrip = false, keep = false, tidy = false;
    for (int i = 2; i < argc; i++) {
        if (strcmp(argv[i], "--state") == 0 && i + 1 < argc) state = argv[++i];
        else if (strcmp(argv[i], "--profile") == 0 && i + 1 < argc) profile = argv[++i];
        else if (strcmp(argv[i], "--strict") == 0) strict = true;
        else if (strcmp(argv[i], "--trim-blocks") == 0) trim = true;
        else if (strcmp(argv[i], "--lstrip-blocks") == 0) lstrip = true;
        else if (strcmp(argv[i], "--keep-trailing-newline") == 0) keep = true;
        else if (strcmp(argv[i], "--tidy") == 0) tidy = true;
        else { fprintf(stderr, "error_kind: unknown flag %s\n", argv[i]); return 2; }
    }
    const char *ext = strrchr(path, '.');
    tpl_syntax syn = !ext ? TPL_SYNTAX_FMT
                     : strcmp(ext, ".jinja") == 0 || strcmp(ext, ".j2") == 0 ? TPL_SYNTAX_JINJA
                     : strcmp(ext, ".erb") == 0                              ? TPL_SYNTAX_ERB
                                                                             : TPL_SYNTAX_FMT;
    tpl_options opt;
    memset(&opt, 0, sizeof opt);
    if (tpl_options_profile(&opt, syn, profile) != TPL_OK) { fprintf(stderr, "error_kind: bad profile\n"); return 2; }
    opt.strict |= strict, opt.trim_blocks |= trim, opt.lstrip_blocks |= lstrip;
    opt.keep_trailing_newline |= keep, opt.tidy |= tidy;
    char *dir = strdup(path);
    char *slash = dir ? strrchr(dir, '/') : NULL;
    if (!dir) return 2;
    if (slash) *slash = 0;
    else strcpy(dir, ".");
    opt.loader = load;
    opt.loader_data = dir;
    size_t len;
    char *src = read_file(path, &len);
    if (!src) { fprintf(stderr, "error_kind: cannot read %s\n", path); free(dir); return 2; }
    const char *base = strrchr(path, '/') ? strrchr(path, '/') + 1 : path;
    tpl_program *p = NULL;
    tpl_error err = { 0 };
    int rc;
    if (tpl_compile(base, src, len, &opt, &p, &err) != TPL_OK) {
        rc = report(err.kind ? err.kind : tpl_status_kind(err.status), syn);
        tpl_error_clear(&err);
    } else {
        tpl_render *r = tpl_render_new(NULL);
        tpl_render_set_loader(r, load, dir); /* names computed at render time (issue 14) */
        size_t slen = 0;
        char *json = state ? read_file(state, &slen) : NULL;
        if (state && !json) { fprintf(stderr, "error_kind: cannot read %s\n", state); rc = 2; }
        else if (!r) rc = 2;
        else if (json && tpl_render_set_state_json(r, json, slen) != TPL_OK) rc = report(tpl_render_error(r)->kind, syn);
        else {
            const char *out;
            size_t olen;
            tpl_status st = tpl_render_run(r, p, &out, &olen);
            rc = report(st == TPL_OK ? TPL_EK_NONE : tpl_render_error(r)->kind, syn);
        }
        free(json);
        tpl_render_free(r);
        tpl_program_free(p);
    }
    free(src);
    free(dir);
    return rc;
}
