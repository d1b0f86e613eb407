/* tpl-count WORKLOAD_DIR N [render|compile]: compiles WORKLOAD_DIR/template.jinja (trim_blocks,
 * lstrip_blocks, as tpl-bench does) and renders it against context.json N times (or compiles it N
 * times). BENCH_DIALECT=erb|fmt reads template.erb / template.fmt instead (compiled with that
 * syntax's defaults, as tpl-bench does). Run under `valgrind --tool=callgrind` by bench/count.sh, which takes the difference of two
 * values of N: instructions per render (or compile), a figure that machine load does not change.
 * The render's facts are context.memory, as tpl-bench sets them (w1's remembers(x) is true iff x
 * is in it), so a count renders the output the benchmark renders.
 * tpl-count-native (-DTPL_COUNT_NATIVE; BENCH_NATIVE=1 bench/count.sh) renders the workload's
 * native view instead (its template.jinja compiled with --native at build time, as
 * tpl-bench-native's). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <jansson.h>
#include "tpl.h"
#ifdef TPL_COUNT_NATIVE
#include "tpl_static.h"
extern const struct tpl_static_program tpl_view_w1_agent, tpl_view_w2_loop, tpl_view_w3_static,
    tpl_view_w4_chat, tpl_view_w5_format;
static const struct { const char *w; const tpl_static_program *p; } tc_native[] = {
    { "w1_agent", &tpl_view_w1_agent }, { "w2_loop", &tpl_view_w2_loop }, { "w3_static", &tpl_view_w3_static },
    { "w4_chat", &tpl_view_w4_chat }, { "w5_format", &tpl_view_w5_format },
};
#endif

static char *slurp(const char *dir, const char *name, size_t *n)
{
    char path[4096];
    snprintf(path, sizeof path, "%s/%s", dir, name);
    FILE *f = fopen(path, "rb");
    if (!f) { perror(path); exit(2); }
    char *b = NULL;
    size_t cap = 0;
    *n = 0;
    for (;;) {
        if (*n + 4096 + 1 > cap) {
            cap = cap ? cap * 2 : 65536;
            if (!(b = realloc(b, cap))) { fputs("out of memory\n", stderr); exit(2); }
        }
        size_t got = fread(b + *n, 1, cap - *n - 1, f);
        *n += got;
        if (got == 0) break;
    }
    fclose(f);
    b[*n] = 0;
    return b;
}

/* A failed render or state: the error as tplc prints it (FILE:LINE:COL: error: ... with the
 * line and caret; the file named by what failed), exit status 1. */
static int render_failed(tpl_render *r, const char *file)
{
    tpl_error e = *tpl_render_error(r);
    if (!e.file) e.file = file;
    char *m = tpl_error_format(&e);
    fprintf(stderr, "%s\n", m ? m : "render failed");
    free(m);
    return 1;
}

int main(int argc, char **argv)
{
    if (argc < 3) { fputs("usage: tpl-count WORKLOAD_DIR N [render|compile]\n", stderr); return 2; }
    long n = atol(argv[2]);
    int compile = argc > 3 && strcmp(argv[3], "compile") == 0;
    size_t sl, cl;
    const char *dialect = getenv("BENCH_DIALECT");
    if (!dialect || !*dialect) dialect = "jinja";
    tpl_syntax syn = strcmp(dialect, "erb") == 0 ? TPL_SYNTAX_ERB
                     : strcmp(dialect, "fmt") == 0 ? TPL_SYNTAX_FMT : TPL_SYNTAX_JINJA;
    char name[32];
    snprintf(name, sizeof name, "template.%s", syn == TPL_SYNTAX_JINJA ? "jinja" : dialect);
    char *src = slurp(argv[1], name, &sl), *ctx = slurp(argv[1], "context.json", &cl);
    tpl_options o = { 0 };
    o.syntax = syn;
    if (syn == TPL_SYNTAX_JINJA) {
        tpl_options_profile(&o, TPL_SYNTAX_JINJA, "jinja2");
        o.trim_blocks = o.lstrip_blocks = true;
    }
    /* every exit frees what it made (valgrind: the input buffers leaked on the error exits) */
    int rc = 1;
    tpl_program *p = NULL;
    tpl_render *r = NULL;
    tpl_error e = { 0 };
    if (tpl_compile(name, src, sl, &o, &p, &e) != TPL_OK) {
        char *m = tpl_error_format(&e);
        fprintf(stderr, "%s\n", m ? m : "compile failed");
        free(m);
        goto out;
    }
#ifdef TPL_COUNT_NATIVE
    {
        const char *base = strrchr(argv[1], '/');
        base = base && base[1] ? base + 1 : argv[1];
        const tpl_static_program *view = NULL;
        for (size_t i = 0; i < sizeof tc_native / sizeof *tc_native; i++)
            if (strncmp(tc_native[i].w, base, strlen(tc_native[i].w)) == 0) view = tc_native[i].p;
        if (!view || syn != TPL_SYNTAX_JINJA) { fprintf(stderr, "no native view of %s\n", argv[1]); goto out; }
        tpl_program_free(p);
        p = NULL;
        if (tpl_program_load_static(view, &p, &e) != TPL_OK) {
            char *m = tpl_error_format(&e);
            fprintf(stderr, "%s\n", m ? m : "load failed");
            free(m);
            goto out;
        }
    }
#endif
    r = tpl_render_new(NULL);
    if (!r) { fputs("out of memory\n", stderr); goto out; }
    json_t *j = json_loadb(ctx, cl, 0, NULL); /* the facts: context.memory (tpl_bench.c's tb_setup) */
    json_t *fact;
    size_t k;
    json_array_foreach(j ? json_object_get(j, "memory") : NULL, k, fact)
        if (json_is_string(fact) && tpl_render_add_fact(r, json_string_value(fact), json_string_length(fact)) != TPL_OK) {
            fputs("fact failed\n", stderr);
            json_decref(j);
            goto out;
        }
    json_decref(j);
    if (tpl_render_set_state_json(r, ctx, cl) != TPL_OK) {
        render_failed(r, "context.json");
        goto out;
    }
    size_t total = 0;
    for (long i = 0; i < n; i++) {
        if (compile) {
            tpl_program *q = NULL;
            if (tpl_compile(name, src, sl, &o, &q, &e) != TPL_OK) {
                char *m = tpl_error_format(&e);
                fprintf(stderr, "%s\n", m ? m : "compile failed");
                free(m);
                goto out;
            }
            tpl_program_free(q);
        } else {
            const char *out;
            size_t len;
            if (tpl_render_run(r, p, &out, &len) != TPL_OK) {
                render_failed(r, name);
                goto out;
            }
            total += len;
        }
    }
    printf("%zu\n", total);
    rc = 0;
out:
    tpl_error_clear(&e);
    tpl_render_free(r);
    tpl_program_free(p);
    free(src);
    free(ctx);
    return rc;
}
