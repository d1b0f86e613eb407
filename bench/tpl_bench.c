/* tpl-bench — tpl as an engine of the shared benchmark harness (../shared/bench, README.md,
 * "Protocol").
 *
 * usage: tpl-bench WORKLOADS_DIR OUT_DIR          (run from the shared bench root)
 * env:   BENCH_DIALECT = jinja | erb | fmt (which template.<dialect> to read; default jinja),
 *        BENCH_WORKLOADS (comma list), BENCH_TIME, BENCH_COMPILE_TIME, BENCH_ENGINE_NAME.
 *
 * The timing, file reading and JSON quoting come from ../shared/bench/engines/c/bench_harness.h,
 * used as is (found through the include path set in bench/meson.build); the per-workload loop is
 * bench_main's, repeated here only to add three fields to each JSON line:
 *   "allocs_per_render"  heap allocations (malloc/calloc/realloc calls) per steady-state render,
 *                        counted over 1,000 renders after the timed ones;
 *   "alloc_bytes_per_render"  bytes requested by those calls, per render;
 *   "allocs_first_render" heap allocations of the first (cold) render, for comparison;
 *   "peak_rss_kib"       getrusage() ru_maxrss of the process at the end of the workload.
 *
 * Render = tpl_render_run on a reused tpl_render (state set once, facts set once) → the output
 * bytes. Compile = tpl_compile of source + "\n<counter>" (then tpl_program_free), as the protocol
 * says. Jinja is compiled as the anchors are configured: trim_blocks and lstrip_blocks on,
 * autoescape off, lenient undefined (Jinja2's defaults otherwise). In w1, remembers(x) is true iff
 * x is one of context.memory: that list is passed as the render's facts.
 */
#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <sys/resource.h>
#include <jansson.h>
#include "tpl.h"

/* The harness header is used as is; bench_main and helpers we do not call stay unused. */
#if defined(__GNUC__)
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wunused-function"
#endif
#include "bench_harness.h"
#if defined(__GNUC__)
#pragma GCC diagnostic pop
#endif

/* ------------------------------------------------------------------ malloc counting
 *
 * The bench binary interposes malloc, calloc and realloc (the library is linked statically into
 * it, and the dynamic linker resolves every malloc of the process to the executable's definition
 * first), forwarding to glibc's __libc_* entry points. While `alloc_counting` is set, each call is
 * counted. These are the only mutable globals in the project: they are confined to this benchmark
 * binary, and the counters are atomics so the interposer is safe if some library starts a thread.
 * free() is not interposed: it does not allocate. */

extern void *__libc_malloc(size_t n);
extern void *__libc_calloc(size_t n, size_t m);
extern void *__libc_realloc(void *p, size_t n);

static atomic_bool alloc_counting;
static atomic_ullong alloc_calls, alloc_bytes;

static inline void count_alloc(size_t n)
{
    if (atomic_load_explicit(&alloc_counting, memory_order_relaxed)) {
        atomic_fetch_add_explicit(&alloc_calls, 1, memory_order_relaxed);
        atomic_fetch_add_explicit(&alloc_bytes, n, memory_order_relaxed);
    }
}

void *malloc(size_t n)
{
    count_alloc(n);
    return __libc_malloc(n);
}

void *calloc(size_t n, size_t m)
{
    count_alloc(n * m);
    return __libc_calloc(n, m);
}

void *realloc(void *p, size_t n)
{
    count_alloc(n);
    return __libc_realloc(p, n);
}

/* ------------------------------------------------------------------ native views
 *
 * tpl-bench-native (-DTPL_BENCH_NATIVE): each workload's template.jinja compiled to native C at
 * build time (bench/meson.build); renders use that program, the compile column still times
 * tpl_compile of the source (a native view's compile happens at build time). Workloads without a
 * native view, and other dialects, print no line. */
#ifdef TPL_BENCH_NATIVE
extern const struct tpl_static_program tpl_view_w1_agent, tpl_view_w2_loop, tpl_view_w3_static,
    tpl_view_w4_chat, tpl_view_w5_format;
static const struct { const char *w; const tpl_static_program *p; } tb_native[] = {
    { "w1_agent", &tpl_view_w1_agent }, { "w2_loop", &tpl_view_w2_loop }, { "w3_static", &tpl_view_w3_static },
    { "w4_chat", &tpl_view_w4_chat }, { "w5_format", &tpl_view_w5_format },
};

static const tpl_static_program *tb_native_view(const char *w, const char *dialect)
{
    if (strcmp(dialect, "jinja") != 0) return NULL;
    for (size_t i = 0; i < sizeof tb_native / sizeof *tb_native; i++)
        if (strcmp(tb_native[i].w, w) == 0) return tb_native[i].p;
    return NULL;
}
#endif

/* ------------------------------------------------------------------ the engine */

typedef struct tb_state {
    tpl_syntax syntax;
    tpl_render *r;
} tb_state;

/* Returns a malloc'd copy of a message (the harness frees error strings). */
static char *tb_msg(const char *what, const tpl_error *e)
{
    char buf[640];
    if (e && e->message)
        snprintf(buf, sizeof buf, "%s: %s%s%u:%u", what, e->message, e->line ? " at " : "", e->line, e->column);
    else
        snprintf(buf, sizeof buf, "%s", what);
    return strdup(buf);
}

static tpl_syntax tb_syntax(const char *dialect)
{
    if (strcmp(dialect, "erb") == 0) return TPL_SYNTAX_ERB;
    if (strcmp(dialect, "fmt") == 0) return TPL_SYNTAX_FMT;
    return TPL_SYNTAX_JINJA;
}

/* Creates the render context: state = context.json, facts = context.memory (w1's remembers). */
static tb_state *tb_setup(tpl_syntax syn, const char *ctx, size_t len, char **err)
{
    tb_state *st = calloc(1, sizeof *st);
    if (!st || !(st->r = tpl_render_new(NULL))) { *err = strdup("out of memory"); free(st); return NULL; }
    st->syntax = syn;
    /* the facts first: jansson's tree of the whole context is gone before tpl builds the state */
    json_t *j = json_loadb(ctx, len, 0, NULL);
    json_t *mem = j ? json_object_get(j, "memory") : NULL;
    size_t i;
    json_t *f;
    json_array_foreach(mem, i, f) {
        if (json_is_string(f) &&
            tpl_render_add_fact(st->r, json_string_value(f), json_string_length(f)) != TPL_OK) {
            *err = tb_msg("fact", tpl_render_error(st->r));
            json_decref(j);
            return st;
        }
    }
    json_decref(j);
    if (tpl_render_set_state_json(st->r, ctx, len) != TPL_OK)
        *err = tb_msg("state", tpl_render_error(st->r));
    return st;
}

static void *tb_compile(void *stp, const char *src, size_t len, char **err)
{
    tb_state *st = stp;
    tpl_options o = { 0 };
    o.syntax = st->syntax;
    if (st->syntax == TPL_SYNTAX_JINJA) {
        tpl_options_profile(&o, TPL_SYNTAX_JINJA, "jinja2");
        o.trim_blocks = o.lstrip_blocks = true;
    }
    tpl_program *p = NULL;
    tpl_error e = { 0 };
    if (tpl_compile("template", src, len, &o, &p, &e) != TPL_OK) {
        *err = tb_msg("tpl_compile", &e);
        tpl_error_clear(&e);
        return NULL;
    }
    return p;
}

static void tb_free_compiled(void *stp, void *t)
{
    (void)stp;
    tpl_program_free(t);
}

static const char *tb_render(void *stp, void *t, size_t *out_len, char **err)
{
    tb_state *st = stp;
    const char *out = NULL;
    if (tpl_render_run(st->r, t, &out, out_len) != TPL_OK) {
        if (!*err) *err = tb_msg("render", tpl_render_error(st->r));
        return NULL;
    }
    return out;
}

/* ------------------------------------------------------------------ the loop (as bench_main) */

static const bench_ops tb_ops = {
    .name = "tpl", .dialect = "jinja", .version = "tpl " TPL_VERSION_STRING,
    .setup = NULL, .compile = tb_compile, .free_compiled = tb_free_compiled, .render = tb_render,
    .teardown = NULL,
};

/* Counts heap allocations over n renders. */
static void tb_count_allocs(bench_ctx *c, int n, double *calls, double *bytes)
{
    atomic_store(&alloc_calls, 0);
    atomic_store(&alloc_bytes, 0);
    atomic_store(&alloc_counting, true);
    for (int i = 0; i < n && !c->err; i++) bench_do_render(c);
    atomic_store(&alloc_counting, false);
    *calls = (double)atomic_load(&alloc_calls) / n;
    *bytes = (double)atomic_load(&alloc_bytes) / n;
}

static void tb_workload(const char *wdir, const char *odir, const char *w, const char *label,
                        const char *dialect, double rtime, double ctime)
{
    char path[4096];
#ifdef TPL_BENCH_NATIVE
    const tpl_static_program *view = tb_native_view(w, dialect);
    if (!view) return;
#endif
    snprintf(path, sizeof path, "%s/%s/template.%s", wdir, w, dialect);
    size_t src_len = 0, ctx_len = 0;
    char *src = bench_read_file(path, &src_len);
    if (!src) return; /* no template for this dialect: not our workload */
    snprintf(path, sizeof path, "%s/%s/context.json", wdir, w);
    char *ctx = bench_read_file(path, &ctx_len);

    bench_ctx c = { &tb_ops, NULL, NULL, src, src_len, malloc(src_len + 32), 0, NULL };
    double rns = 0, cns = 0, acalls = 0, abytes = 0;
    unsigned long long first_allocs = 0;
    uint64_t rit = 0, cit = 0;
    size_t out_len = 0;
    const char *stage = "setup";
    tb_state *st = tb_setup(tb_syntax(dialect), ctx ? ctx : "{}", ctx ? ctx_len : 2, &c.err);
    c.st = st;
    if (c.err || !st) goto done;
    stage = "compile";
    c.tmpl = tb_compile(st, src, src_len, &c.err);
    if (c.err || !c.tmpl) goto done;
#ifdef TPL_BENCH_NATIVE
    tb_free_compiled(st, c.tmpl);
    c.tmpl = NULL;
    {
        tpl_program *np = NULL;
        tpl_error e = { 0 };
        if (tpl_program_load_static(view, &np, &e) != TPL_OK) {
            c.err = tb_msg("tpl_program_load_static", &e);
            tpl_error_clear(&e);
            goto done;
        }
        c.tmpl = np;
    }
#endif
    stage = "render";
    atomic_store(&alloc_calls, 0);
    atomic_store(&alloc_counting, true);
    const char *out = tb_render(st, c.tmpl, &out_len, &c.err);
    atomic_store(&alloc_counting, false);
    first_allocs = atomic_load(&alloc_calls);
    if (c.err || !out) goto done;
    snprintf(path, sizeof path, "%s/%s.txt", odir, w);
    FILE *f = fopen(path, "wb");
    if (f) { fwrite(out, 1, out_len, f); fclose(f); }
    rns = bench_measure(bench_do_render, &c, rtime, &rit);
    if (c.err) goto done;
    tb_count_allocs(&c, 1000, &acalls, &abytes);
    if (c.err) goto done;
    stage = "compile-loop";
    cns = bench_measure(bench_do_compile, &c, ctime, &cit);
done:
    printf("{\"engine\":");
    bench_json_str(stdout, label);
    printf(",\"workload\":");
    bench_json_str(stdout, w);
    printf(",\"dialect\":");
    bench_json_str(stdout, dialect);
    printf(",\"version\":");
    bench_json_str(stdout, tb_ops.version);
    if (c.err) {
        char msg[768];
        snprintf(msg, sizeof msg, "%s: %s", stage, c.err);
        printf(",\"error\":");
        bench_json_str(stdout, msg);
        free(c.err);
    } else if (!c.tmpl || rit == 0) {
        printf(",\"error\":\"%s failed\"", stage);
    } else {
        struct rusage ru;
        getrusage(RUSAGE_SELF, &ru);
        printf(",\"render_ns\":%.3f,\"render_iters\":%llu,\"out_bytes\":%zu", rns, (unsigned long long)rit, out_len);
        printf(",\"compile_ns\":%.3f,\"compile_iters\":%llu", cns, (unsigned long long)cit);
        printf(",\"allocs_per_render\":%.3f,\"alloc_bytes_per_render\":%.1f,\"allocs_first_render\":%llu"
               ",\"peak_rss_kib\":%ld", acalls, abytes, first_allocs, ru.ru_maxrss);
    }
    printf("}\n");
    fflush(stdout);
    if (c.tmpl) tpl_program_free(c.tmpl);
    if (st) { tpl_render_free(st->r); free(st); }
    free(c.buf);
    free(ctx);
    free(src);
}

int main(int argc, char **argv)
{
    if (argc < 3) {
        fprintf(stderr, "usage: %s WORKLOADS_DIR OUT_DIR\n", argv[0]);
        return 2;
    }
    const char *wdir = argv[1], *odir = argv[2];
    const char *label = getenv("BENCH_ENGINE_NAME");
    if (!label || !*label) label = tb_ops.name;
    const char *dialect = getenv("BENCH_DIALECT");
    if (!dialect || !*dialect) dialect = tb_ops.dialect;
    const char *only = getenv("BENCH_WORKLOADS");
    double rtime = bench_env_f("BENCH_TIME", 1.0), ctime = bench_env_f("BENCH_COMPILE_TIME", 0.3);
    mkdir(odir, 0755);

    DIR *d = opendir(wdir);
    if (!d) { perror(wdir); return 1; }
    char *names[1024];
    int nn = 0;
    struct dirent *e;
    while ((e = readdir(d)) && nn < 1024)
        if (e->d_name[0] != '.') names[nn++] = strdup(e->d_name);
    closedir(d);
    qsort(names, (size_t)nn, sizeof names[0], bench_cmpstr);
    for (int i = 0; i < nn; i++) {
        if (bench_selected(only, names[i])) tb_workload(wdir, odir, names[i], label, dialect, rtime, ctime);
        free(names[i]);
    }
    return 0;
}
