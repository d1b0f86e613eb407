/* The embedding API keeps its contract (issue 13 §3), through the public header only and linked
 * against the shared library (what a host links):
 *  - every public function called with NULL objects and NULL outputs returns TPL_ERR_USAGE (or
 *    the documented NULL/0/no-op), never crashes; tests/api_null_check.py checks that
 *    the NULL-argument section calls every TPL_API function of include/tpl.h;
 *  - a host callback (host function, remembers, allocator) calling back into the render context
 *    that is running it gets TPL_ERR_USAGE "render context busy", and the outer render's output
 *    is still right;
 *  - invalid UTF-8 from the host (facts, call channel/medium, language, tr keys, catalogs, host
 *    function results) is refused with TPL_ERR_VALUE (catalogs: invalid JSON, TPL_ERR_STATE).
 * Prints "N passed, N failed"; exit status 1 on any failure. */
#include <dirent.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/stat.h>
#include "tpl.h"
#include "tpl_native.h"
#include "tpl_prompt.h"

static int npass, nfail;

/* Whether the n bytes at s contain the string needle (memmem is a GNU extension; a host built
 * with -std=c11 alone does not see its declaration). */
static int has_bytes(const char *s, size_t n, const char *needle)
{
    size_t k = strlen(needle);
    for (size_t i = 0; k <= n && i <= n - k; i++)
        if (memcmp(s + i, needle, k) == 0) return 1;
    return 0;
}

#define CHECK(cond, ...)                                                 \
    do {                                                                 \
        if (cond) npass++;                                               \
        else { nfail++; fprintf(stderr, "FAIL %s:%d: ", __FILE__, __LINE__); \
               fprintf(stderr, __VA_ARGS__); fputc('\n', stderr); }      \
    } while (0)

static tpl_program *compile_opts(const char *src, const tpl_options *o)
{
    tpl_program *p = NULL;
    tpl_error err = { 0 };
    if (tpl_compile("t.jinja", src, strlen(src), o, &p, &err) != TPL_OK) {
        fprintf(stderr, "compile: %s\n", err.message);
        tpl_error_clear(&err);
        return NULL;
    }
    return p;
}

static tpl_program *compile(const char *src) { return compile_opts(src, NULL); }

/* Renders p with r; the output in buf, or "ERR:<status>:<message>". */
static const char *render(tpl_render *r, const tpl_program *p, char *buf, size_t cap)
{
    const char *out;
    size_t n;
    tpl_status st = tpl_render_run(r, p, &out, &n);
    if (st != TPL_OK) snprintf(buf, cap, "ERR:%d:%s", (int)st, tpl_render_error(r)->message);
    else snprintf(buf, cap, "%s", out);
    return buf;
}


/* tpl_program_write sinks: counting, appending to memory, refusing. */
static int count_sink(void *data, const void *bytes, size_t len) { (void)bytes; *(size_t *)data += len; return 0; }
typedef struct membytes { char *p; size_t n; } membytes;
static int mem_append(void *data, const void *bytes, size_t len)
{
    membytes *m = data;
    char *np = realloc(m->p, m->n + len);
    if (!np) return 1;
    memcpy(np + m->n, bytes, len);
    m->p = np;
    m->n += len;
    return 0;
}
static int refuse_sink(void *data, const void *bytes, size_t len) { (void)data; (void)bytes; (void)len; return 1; }

static int remembers_no(void *data, const char *words, size_t len)
{
    (void)data;
    (void)words;
    (void)len;
    return 0;
}

/* fills for tpl_file_write */
static int fill_counting(void *data, int fd, const char *path)
{
    (void)fd; (void)path;
    ++*(int *)data;
    return 0;
}

static int fill_fd(void *data, int fd, const char *path)
{
    (void)path;
    const char *s = data;
    return write(fd, s, strlen(s)) == (ssize_t)strlen(s) ? 0 : -1;
}

static int fill_name(void *data, int fd, const char *path)
{
    (void)fd;
    FILE *f = fopen(path, "w");
    if (!f) return -1;
    fputs(data, f);
    return fclose(f) == 0 ? 0 : -1;
}

static int fill_fail(void *data, int fd, const char *path)
{
    (void)data; (void)fd; (void)path;
    errno = ENOSPC;
    return -1;
}

static bool file_is(const char *path, const char *want)
{
    char buf[64] = "";
    FILE *f = fopen(path, "r");
    if (!f) return false;
    size_t n = fread(buf, 1, sizeof buf - 1, f);
    fclose(f);
    buf[n] = 0;
    return strcmp(buf, want) == 0;
}

/* ---- NULL-ARGUMENT TEST: tests/api_null_check.py checks that every TPL_API function is called
 * between this line and the END line below. */

/* Statuses of the calls a host function made on NULL arguments (checked after the render). */
typedef struct null_calls {
    tpl_status json_null_call, str_null_call, json_null_text, str_null_text;
} null_calls;

static int h_null_args(void *data, tpl_host_call *call)
{
    null_calls *nc = data;
    nc->json_null_call = tpl_host_return_json(NULL, "1", 1);
    nc->str_null_call = tpl_host_return_str(NULL, "x", 1);
    nc->json_null_text = tpl_host_return_json(call, NULL, 0);
    nc->str_null_text = tpl_host_return_str(call, NULL, 0);
    tpl_host_fail(NULL, "ignored");
    tpl_host_fail(call, NULL);
    return tpl_host_return_str(call, "ok", 2) == TPL_OK ? 0 : 1;
}

/* Every TPL_API function of include/tpl.h with NULL objects and NULL outputs (each name must
 * appear in this function: tests/api_null_check.py). */
static void test_null_args(void)
{
    const tpl_status U = TPL_ERR_USAGE;
    char buf[256];
    tpl_program *p = compile("{{ tr('Hi') }}{{ name }}");
    tpl_render *r = tpl_render_new(NULL);
    if (!p || !r) { nfail++; return; }
    const char *out = "x";
    size_t n = 7;
    void *blob = (void *)1;
    char *text = (char *)1;
    tpl_error err = { 0 };
    tpl_program *q = (tpl_program *)1;

    /* compile */
    tpl_options o = { 0 };
    CHECK(tpl_options_profile(NULL, TPL_SYNTAX_JINJA, "pinecall") == U, "options_profile(NULL)");
    CHECK(tpl_options_profile(&o, TPL_SYNTAX_JINJA, NULL) == TPL_OK && !o.strict, "options_profile(profile NULL) = jinja2");
    CHECK(tpl_compile("t", NULL, 3, NULL, &q, &err) == U && q == NULL && err.status == U && err.message &&
          strstr(err.message, "src"), "compile(src NULL): %s", err.message ? err.message : "(null)");
    tpl_error_clear(&err);
    CHECK(tpl_compile("t", "x", 1, NULL, NULL, &err) == U && err.status == U, "compile(out NULL)");
    tpl_error_clear(&err);
    CHECK(tpl_compile(NULL, "x", 1, NULL, &q, NULL) == TPL_OK && q, "compile(name, opts, err NULL)");
    tpl_program_free(q);
    tpl_program_free(NULL);
    tpl_error_clear(NULL);
    CHECK(tpl_disassemble(NULL) == NULL, "disassemble(NULL)");
    /* tplc dump --tokens / --ast: NULL out or src is a usage error; NULL name, opts and err work */
    char *dumped = (char *)1;
    CHECK(tpl_dump_tokens("t", "x", 1, NULL, NULL, &err) == U && err.status == U, "dump_tokens(out NULL)");
    tpl_error_clear(&err);
    CHECK(tpl_dump_ast("t", NULL, 1, NULL, &dumped, &err) == U && dumped == NULL && err.message &&
          strstr(err.message, "src"), "dump_ast(src NULL)");
    tpl_error_clear(&err);
    CHECK(tpl_dump_tokens(NULL, "a{{ b }}", 8, NULL, &dumped, NULL) == TPL_OK && dumped &&
          strstr(dumped, "1:2-1:4          VAR_BEGIN      \"{{\"\n"), "dump_tokens(name, opts, err NULL): %s",
          dumped ? dumped : "(null)");
    free(dumped);
    CHECK(tpl_dump_ast(NULL, "a{{ b }}", 8, NULL, &dumped, NULL) == TPL_OK && dumped &&
          strcmp(dumped, "TEMPLATE 1:1\n  b: TEXT 1:1 \"a\"\n  b: OUTPUT 1:2\n    a: NAME 1:5 \"b\"\n") == 0,
          "dump_ast(name, opts, err NULL): %s", dumped ? dumped : "(null)");
    free(dumped);
    CHECK(tpl_dump_ast("t", "{{ (", 4, NULL, &dumped, &err) == TPL_ERR_SYNTAX && dumped == NULL && err.line == 1,
          "dump_ast(syntax error)");
    tpl_error_clear(&err);

    /* render contexts */
    tpl_render *r2 = tpl_render_new_with(NULL, NULL);
    CHECK(r2 != NULL, "render_new_with(NULL, NULL)");
    tpl_render_free(r2);
    CHECK(tpl_render_new_with(NULL, &(tpl_allocator){ 0 }) == NULL, "render_new_with(allocator without callbacks)");
    tpl_render_free(NULL);
    CHECK(tpl_render_set_state_json(NULL, "{}", 2) == U, "set_state_json(NULL)");
    CHECK(tpl_render_set_state_json(r, NULL, 2) == U && tpl_render_error(r)->status == U &&
          strstr(tpl_render_error(r)->message, "json is NULL"), "set_state_json(json NULL): %s", tpl_render_error(r)->message);
    CHECK(tpl_render_set_state_file(NULL, stdin) == U, "set_state_file(NULL)");
    CHECK(tpl_render_set_state_file(r, NULL) == U && tpl_render_error(r)->status == U, "set_state_file(f NULL)");
    CHECK(tpl_render_add_fact(NULL, "x", 1) == U, "add_fact(NULL)");
    CHECK(tpl_render_add_fact(r, NULL, 1) == U && tpl_render_error(r)->status == U, "add_fact(fact NULL)");
    tpl_render_clear_facts(NULL);
    tpl_render_set_remembers(NULL, remembers_no, NULL);
    CHECK(tpl_render_set_call(NULL, "web", NULL) == U, "set_call(NULL)");
    CHECK(tpl_render_set_call(r, NULL, NULL) == TPL_OK, "set_call(channel NULL) = phone");
    CHECK(tpl_render_set_call_claimed(NULL, "1234") == U, "set_call_claimed(NULL)");
    CHECK(tpl_render_set_call_claimed(r, NULL) == TPL_OK, "set_call_claimed(claimed NULL) = None");
    tpl_render_set_host_funcs(NULL, NULL, 3);
    tpl_render_set_loader(NULL, NULL, NULL);
    tpl_render_set_output(NULL, NULL, NULL);
    CHECK(tpl_render_add_catalog_json(NULL, "{}", 2) == U, "add_catalog_json(NULL)");
    CHECK(tpl_render_add_catalog_json(r, NULL, 2) == U && tpl_render_error(r)->status == U, "add_catalog_json(json NULL)");
    {
        tpl_catalog *cat = tpl_catalog_new();
        const char *f0 = "x";
        size_t fl0 = 1;
        CHECK(cat != NULL, "tpl_catalog_new");
        CHECK(tpl_catalog_add(NULL, "fr", "a", 1, "b", 1) == U, "catalog_add(NULL)");
        CHECK(tpl_catalog_add(cat, NULL, "a", 1, "b", 1) == U, "catalog_add(lang NULL)");
        CHECK(tpl_catalog_add(cat, "fr", NULL, 1, "b", 1) == U, "catalog_add(source NULL)");
        CHECK(tpl_catalog_add(cat, "fr", "a", 1, NULL, 1) == U, "catalog_add(target NULL)");
        CHECK(tpl_catalog_add_forms(NULL, "fr", "a", 1, &f0, &fl0, 1) == U, "catalog_add_forms(NULL)");
        CHECK(tpl_catalog_add_forms(cat, "fr", "a", 1, NULL, &fl0, 1) == U, "catalog_add_forms(forms NULL)");
        CHECK(tpl_catalog_finish(NULL) == U, "catalog_finish(NULL)");
        CHECK(tpl_render_add_catalog(NULL, cat) == U, "add_catalog(NULL)");
        CHECK(tpl_render_add_catalog(r, NULL) == U && tpl_render_error(r)->status == U, "add_catalog(c NULL)");
        CHECK(tpl_render_add_catalog(r, cat) == U, "add_catalog(unfinished)");
        char *js = NULL;
        size_t jl = 0;
        CHECK(tpl_catalog_json(NULL, &js, &jl) == U && tpl_catalog_json(cat, NULL, &jl) == U &&
              tpl_catalog_json(cat, &js, NULL) == U, "catalog_json(NULL)");
        tpl_catalog_free(NULL);
        tpl_catalog_free(cat);
    }
    tpl_render_clear_catalogs(NULL);
    CHECK(tpl_render_set_lang(NULL, "zz") == U, "set_lang(NULL)");
    CHECK(tpl_render_set_lang(r, NULL) == TPL_OK, "set_lang(lang NULL) = none");
    CHECK(tpl_render_add_tr_key(NULL, "k", 1) == U, "add_tr_key(NULL)");
    CHECK(tpl_render_add_tr_key(r, NULL, 1) == U && tpl_render_error(r)->status == U, "add_tr_key(name NULL)");
    tpl_render_clear_tr_keys(NULL);

    /* rendering after a failed load: the program is NULL */
    CHECK(tpl_render_run(NULL, p, &out, &n) == U && out == NULL && n == 0, "render_run(r NULL)");
    CHECK(tpl_render_run(r, NULL, &out, &n) == U && out == NULL && tpl_render_error(r)->status == U &&
          strstr(tpl_render_error(r)->message, "program is NULL"), "render_run(p NULL): %s", tpl_render_error(r)->message);
    CHECK(tpl_render_run(r, p, NULL, &n) == U && tpl_render_error(r)->status == U, "render_run(out NULL)");
    CHECK(tpl_render_run(r, p, &out, NULL) == U && out == NULL, "render_run(out_len NULL)");
    CHECK(strcmp(render(r, p, buf, sizeof buf), "Hi") == 0, "the context still renders: %s", buf);
    const tpl_error *ne = tpl_render_error(NULL);
    CHECK(ne && ne->status == U && ne->message && strstr(ne->message, "NULL"), "render_error(NULL)");
    CHECK(tpl_error_format(NULL) == NULL, "error_format(NULL)");

    /* host calls */
    null_calls nc = { TPL_OK, TPL_OK, TPL_OK, TPL_OK };
    tpl_host_func fns[] = { { "h", TPL_HOST_GLOBAL, h_null_args, &nc } };
    tpl_options ho = { .host_funcs = fns, .nhost_funcs = 1 };
    tpl_program *hp = compile_opts("{{ h() }}", &ho);
    tpl_render_set_host_funcs(r, fns, 1);
    CHECK(hp && strcmp(render(r, hp, buf, sizeof buf), "ok") == 0, "host function: %s", buf);
    CHECK(nc.json_null_call == U && nc.str_null_call == U && nc.json_null_text == U && nc.str_null_text == U,
          "host_return_json/str with NULL: %d %d %d %d", nc.json_null_call, nc.str_null_call, nc.json_null_text,
          nc.str_null_text);
    tpl_render_set_host_funcs(r, NULL, 0);
    tpl_program_free(hp);

    /* programs */
    tpl_tr_call calls[2];
    CHECK(tpl_program_tr_calls(NULL, calls, 2) == 0 && tpl_program_tr_calls(p, NULL, 2) == 1, "program_tr_calls");
    CHECK(tpl_program_save(NULL, 0, &blob, &n) == U && blob == NULL && n == 0, "program_save(NULL)");
    CHECK(tpl_program_save(p, 0, NULL, &n) == U && tpl_program_save(p, 0, &blob, NULL) == U, "program_save(outputs NULL)");
    CHECK(tpl_program_write(NULL, 0, count_sink, &n) == U && tpl_program_write(p, 0, NULL, &n) == U, "program_write(NULL)");
    {
        /* tpl_file_write: NULL path or fill is EINVAL without a call; a fill that fails leaves the
         * target as it was and no temporary file; a fill by name writes through the name */
        int calls_made = 0;
        errno = 0;
        CHECK(tpl_file_write(NULL, 0, fill_counting, &calls_made) == -1 && errno == EINVAL && calls_made == 0, "file_write(NULL path)");
        errno = 0;
        CHECK(tpl_file_write("x", 0, NULL, &calls_made) == -1 && errno == EINVAL, "file_write(NULL fill)");
        char dir[] = "/tmp/tpl-api-XXXXXX";
        if (mkdtemp(dir)) {
            char target[64];
            snprintf(target, sizeof target, "%s/t.txt", dir);
            CHECK(tpl_file_write(target, 0, fill_fd, "one") == 0 && file_is(target, "one"), "file_write by fd");
            chmod(target, 0600);
            CHECK(tpl_file_write(target, TPL_FILE_BY_NAME, fill_name, "two") == 0 && file_is(target, "two"), "file_write by name");
            struct stat st;
            CHECK(stat(target, &st) == 0 && (st.st_mode & 07777) == 0600, "file_write keeps the mode");
            errno = 0;
            CHECK(tpl_file_write(target, 0, fill_fail, NULL) == -1 && errno == ENOSPC && file_is(target, "two"), "file_write: a failed fill keeps the target");
            CHECK(tpl_file_write(target, TPL_FILE_BY_NAME, fill_fail, NULL) == -1 && file_is(target, "two"), "file_write: a failed fill by name keeps the target");
            CHECK(tpl_file_write(dir, 0, fill_fd, "x") == -1 && errno == EISDIR, "file_write: a directory is EISDIR");
            DIR *d = opendir(dir);
            int entries = 0;
            for (struct dirent *e; d && (e = readdir(d));) entries += strcmp(e->d_name, ".") != 0 && strcmp(e->d_name, "..") != 0;
            if (d) closedir(d);
            CHECK(entries == 1, "file_write leaves no temporary file");
            unlink(target);
            rmdir(dir);
        }
    }
    {
        /* the bytes tpl_program_write gives are tpl_program_save's; a sink that refuses is TPL_ERR_IO */
        void *saved = NULL;
        size_t ns = 0;
        membytes mb = { NULL, 0 };
        CHECK(tpl_program_save(p, 0, &saved, &ns) == TPL_OK && tpl_program_write(p, 0, mem_append, &mb) == TPL_OK &&
              mb.n == ns && memcmp(mb.p, saved, ns) == 0, "program_write == program_save");
        CHECK(tpl_program_write(p, 0, refuse_sink, NULL) == TPL_ERR_IO, "program_write: a refusing sink");
        free(saved);
        free(mb.p);
    }
    CHECK(!tpl_is_tplb(NULL, 100), "is_tplb(NULL)");
    CHECK(tpl_program_load("x", NULL, 100, &q, &err) == U && q == NULL && err.status == U, "program_load(data NULL)");
    tpl_error_clear(&err);
    CHECK(tpl_program_load("x", "TPLB", 4, NULL, NULL) == U, "program_load(out NULL)");
    CHECK(tpl_program_emit_c(NULL, "v", 0, &text, &n) == U && text == NULL, "program_emit_c(NULL)");
    CHECK(tpl_program_emit_c(p, NULL, 0, &text, &n) == U, "program_emit_c(symbol NULL)");
    CHECK(tpl_program_emit_c(p, "v", 0, NULL, &n) == U && tpl_program_emit_c(p, "v", 0, &text, NULL) == U,
          "program_emit_c(outputs NULL)");
    q = (tpl_program *)1;
    CHECK(tpl_program_load_static(NULL, &q, &err) == U && q == NULL && err.status == U, "program_load_static(NULL)");
    tpl_error_clear(&err);
    CHECK(tpl_program_load_static((const tpl_static_program *)p, NULL, NULL) == U, "program_load_static(out NULL)");
    /* native programs' helpers (tpl_native.h): a NULL frame or value is refused with -1 / NULL */
    {
        tpl_nvalue v;
        CHECK(tpl_native_step(NULL, 0, 0) == -1 && tpl_native_run_vm(NULL, 0, 0) == -1, "native step/run_vm(NULL)");
        CHECK(tpl_native_put_slow(NULL, "x", 1) == -1 && tpl_native_fail(NULL, 0) == -1 &&
              tpl_native_out_of_fuel(NULL, 0) == -1, "native put_slow/fail/out_of_fuel(NULL)");
        CHECK(tpl_native_load_name(NULL, 0, &v) == -1 && tpl_native_truthy_py(NULL, &v) == -1 &&
              tpl_native_for_next(NULL, 0, &v) == -1 && tpl_native_map_get(NULL, &v, 0) == NULL &&
              tpl_native_equal(NULL, &v, &v) == -1, "native load_name/truthy_py/for_next/map_get/equal(NULL)");
        CHECK(tpl_native_filter(NULL, 0, &v) == -1 && tpl_native_getattr(NULL, 0, &v) == -1 &&
              tpl_native_getitem_str(NULL, 0, &v) == -1 && tpl_native_print_py(NULL, &v) == -1 &&
              tpl_native_print_rb(NULL, &v) == -1 && tpl_native_adds(NULL, 0, &v) == -1 &&
              tpl_native_for_init(NULL, 0, &v) == -1 && tpl_native_call_name(NULL, 0, &v) == -1 &&
              tpl_native_call_builtin(NULL, 0, &v) == -1 && tpl_native_remembers(NULL, "x", 1, &v) == -1 &&
              tpl_native_remembers_kept(NULL, "x", 1, &v, NULL) == -1 &&
              tpl_native_loop_attr(NULL, 0, &v) == -1,
              "native filter/getattr/getitem_str/print/adds/for_init/call_name(NULL)");
    }
    CHECK(tpl_program_reads(NULL, NULL, NULL, 4) == 0 && tpl_program_reads(p, NULL, NULL, 4) >= 1, "program_reads");
    CHECK(tpl_program_reads_located(NULL, NULL, 4) == 0 && tpl_program_reads_located(p, NULL, 4) >= 1,
          "program_reads_located");
    CHECK(tpl_program_dependencies(NULL, NULL, NULL, 4) == 0 && tpl_program_dependencies(p, NULL, NULL, 4) == 0,
          "program_dependencies");
    CHECK(tpl_program_host_functions(NULL, NULL, 4) == 0 && tpl_program_host_functions(p, NULL, 4) == 0,
          "program_host_functions");
    CHECK(!tpl_program_needs_loader(NULL) && !tpl_program_needs_loader(p), "program_needs_loader");
    {
        /* every error, each located, with the original source line; 0 and the program when clean */
        static const char bad[] = "{{ a + }}\n{% for x in %}{{ x }}{% endfor %}\n{{ b | upper( }}\n";
        tpl_error es[4];
        memset(es, 0, sizeof es);
        tpl_program *bp = (tpl_program *)1;
        size_t ne = tpl_compile_all("bad.j2", bad, sizeof bad - 1, NULL, &bp, es, 4);
        CHECK(ne == 3 && bp == NULL && es[0].line == 1 && es[1].line == 2 && es[2].line == 3 &&
              es[1].status == TPL_ERR_SYNTAX && es[1].source_line && strcmp(es[1].source_line, "{% for x in %}{{ x }}{% endfor %}") == 0,
              "compile_all reports every error");
        for (size_t i = 0; i < 4; i++) tpl_error_clear(&es[i]);
        CHECK(tpl_compile_all("bad.j2", bad, sizeof bad - 1, NULL, NULL, es, 1) == 1 && es[0].line > 0, "compile_all cap 1");
        tpl_error_clear(&es[0]);
        CHECK(tpl_compile_all("bad.j2", bad, sizeof bad - 1, NULL, NULL, NULL, 0) == 1, "compile_all without records");
        CHECK(tpl_compile_all("ok.j2", "{{ x }}", 7, NULL, &bp, es, 4) == 0 && bp, "compile_all of a clean template");
        tpl_program_free(bp);
        CHECK(tpl_compile_all(NULL, NULL, 0, NULL, NULL, es, 4) == 1 && es[0].status == TPL_ERR_USAGE, "compile_all(NULL)");
        tpl_error_clear(&es[0]);
    }
    CHECK(tpl_program_deferred_errors(NULL, NULL, 4) == 0 && tpl_program_deferred_errors(p, NULL, 4) == 0,
          "program_deferred_errors");
    {
        /* Jinja2 defers an unknown filter in a branch to render time: the program carries it */
        static const char soft[] = "a\n{% if x %}{{ y | nope }}{% endif %}";
        tpl_program *sp = NULL;
        tpl_error serr = { 0 };
        CHECK(tpl_compile("soft.j2", soft, sizeof soft - 1, NULL, &sp, &serr) == TPL_OK, "compile soft error");
        tpl_diagnostic d[2] = { { 0 } };
        CHECK(tpl_program_deferred_errors(sp, d, 2) == 1 && d[0].severity == TPL_SEVERITY_ERROR &&
              d[0].status == TPL_ERR_RAISED && d[0].line == 2 && d[0].column == 18 &&
              d[0].message_len > 0 && strstr(d[0].file, "soft.j2") && has_bytes(d[0].message, d[0].message_len, "nope"),
              "program_deferred_errors finds the unknown filter");
        tpl_program_free(sp);
        tpl_error_clear(&serr);
    }
    CHECK(tpl_program_options(NULL) == NULL && tpl_program_options(p) != NULL, "program_options");
    CHECK(tpl_program_source_hash(NULL) == 0, "program_source_hash(NULL)");
    CHECK(tpl_program_name(NULL) == NULL, "program_name(NULL)");

    /* host values (issue 17) */
    tpl_val hv = tpl_val_none(), hl, hm;
    CHECK(tpl_val_kind_of(tpl_val_bool(true)) == TPL_VAL_BOOL && tpl_val_as_int(tpl_val_int(7)) == 7 &&
          tpl_val_as_float(tpl_val_float(0.5)) == 0.5 && tpl_val_kind_of(hv) == TPL_VAL_NONE &&
          tpl_val_kind_of(tpl_val_undefined()) == TPL_VAL_UNDEFINED, "val scalars");
    CHECK(tpl_val_undefined_text(NULL, "x", 1, true, &hv) == U && tpl_val_undefined_text(r, NULL, 1, true, &hv) == U &&
          tpl_val_undefined_text(r, "x", 1, false, NULL) == U, "val_undefined_text(NULL)");
    CHECK(tpl_val_undefined_missing(NULL, "o", 1, "x", 1, false, &hv) == U &&
          tpl_val_undefined_missing(r, NULL, 1, "x", 1, false, &hv) == U &&
          tpl_val_undefined_missing(r, "o", 1, NULL, 1, true, &hv) == U &&
          tpl_val_undefined_missing(r, "o", 1, "x", 1, false, NULL) == U &&
          tpl_val_undefined_missing(r, "o", 1, "\xff", 1, false, &hv) == TPL_ERR_VALUE, "val_undefined_missing(NULL)");
    CHECK(tpl_val_str(NULL, "x", 1, 0, &hv) == U && tpl_val_str(r, NULL, 1, 0, &hv) == U &&
          tpl_val_str(r, "x", 1, 0, NULL) == U, "val_str(NULL)");
    CHECK(tpl_val_str_borrow(NULL, 1, &hv) == U && tpl_val_str_borrow("x", 1, NULL) == U, "val_str_borrow(NULL)");
    CHECK(tpl_val_int_text(NULL, "1", 1, 10, &hv) == U && tpl_val_int_text(r, NULL, 1, 10, &hv) == U &&
          tpl_val_int_text(r, "1", 1, 10, NULL) == U, "val_int_text(NULL)");
    CHECK(tpl_val_rational_text(NULL, "1/3", 3, &hv) == U && tpl_val_rational_text(r, NULL, 3, &hv) == U &&
          tpl_val_rational_text(r, "1/3", 3, NULL) == U, "val_rational_text(NULL)");
    CHECK(tpl_val_list(NULL, 0, 0, &hl) == U && tpl_val_list(r, 0, 0, NULL) == U, "val_list(NULL)");
    CHECK(tpl_val_map(NULL, 0, &hm) == U && tpl_val_map(r, 0, NULL) == U, "val_map(NULL)");
    CHECK(tpl_val_list_push(NULL, hv, hv) == U && tpl_val_list_push(r, hv, hv) == U, "val_list_push(NULL, non-list)");
    CHECK(tpl_val_map_set(NULL, hv, hv, hv) == U && tpl_val_map_set(r, hv, hv, hv) == U, "val_map_set(NULL, non-map)");
    CHECK(tpl_val_map_add_str(NULL, hv, "k", 1, tpl_val_key_hash("k", 1), 0, hv) == U &&
          tpl_val_map_add_str(r, hv, "k", 1, 0, 0, hv) == U && tpl_val_key_hash(NULL, 3) == 0 &&
          tpl_val_key_hash(NULL, 0) == tpl_val_key_hash("", 0), "val_map_add_str(NULL, non-map), val_key_hash(NULL)");
    {
        tpl_str_entry ne = { NULL, 1, 0, hv };
        CHECK(tpl_val_map_of_str(NULL, NULL, 0, 0, &hm) == U && tpl_val_map_of_str(r, NULL, 1, 0, &hm) == U &&
              tpl_val_map_of_str(r, &ne, 1, 0, &hm) == U && tpl_val_map_of_str(r, NULL, 0, 0, NULL) == U,
              "val_map_of_str(NULL)");
        tpl_str_str ns = { NULL, "v", 1, 1, 0 };
        CHECK(tpl_val_map_of_strs(NULL, NULL, 0, &hm) == U && tpl_val_map_of_strs(r, NULL, 1, &hm) == U &&
              tpl_val_map_of_strs(r, &ns, 1, &hm) == U && tpl_val_map_of_strs(r, NULL, 0, NULL) == U,
              "val_map_of_strs(NULL)");
        uint32_t one = 1;
        CHECK(tpl_val_list_of_str_maps(NULL, NULL, NULL, 0, 0, &hl) == U &&
              tpl_val_list_of_str_maps(r, NULL, NULL, 1, 0, &hl) == U &&
              tpl_val_list_of_str_maps(r, NULL, &one, 1, 0, &hl) == U &&
              tpl_val_list_of_str_maps(r, &ns, &one, 1, 0, &hl) == U &&
              tpl_val_list_of_str_maps(r, NULL, NULL, 0, 0, NULL) == U, "val_list_of_str_maps(NULL)");
        CHECK(tpl_val_list_of(NULL, NULL, 0, 0, &hl) == U && tpl_val_list_of(r, NULL, 1, 0, &hl) == U &&
              tpl_val_list_of(r, &hv, 1, 0, NULL) == U, "val_list_of(NULL)");
        tpl_val fint = tpl_val_int(1);
        CHECK(tpl_val_freeze(NULL) == U && tpl_val_freeze(&fint) == TPL_ERR_TYPE && tpl_val_str_flags(fint) == 0,
              "val_freeze(NULL)");
    }
    CHECK(tpl_val_host(NULL, NULL, NULL, &hv) == U && tpl_val_host(r, NULL, NULL, &hv) == U, "val_host(NULL)");
    CHECK(tpl_val_as_str(hv, NULL) == NULL && !tpl_val_as_bool(hv) && !tpl_val_is_markup(hv) && tpl_val_len(hv) == 0 &&
          tpl_val_kind_of(tpl_val_item(hv, 0)) == TPL_VAL_UNDEFINED &&
          tpl_val_kind_of(tpl_val_map_key(hv, 0)) == TPL_VAL_UNDEFINED &&
          tpl_val_kind_of(tpl_val_map_value(hv, 0)) == TPL_VAL_UNDEFINED &&
          tpl_val_host_object(hv) == NULL && tpl_val_host_class(hv) == NULL, "val readers on the wrong kind");
    CHECK(strcmp(tpl_val_type_name(tpl_val_none()), "NoneType") == 0 && !tpl_val_range_params(hv, NULL) &&
          !tpl_val_range_params(tpl_val_none(), &hv) && tpl_val_kind_of(tpl_val_view_dict(tpl_val_none())) == TPL_VAL_UNDEFINED,
          "val_type_name/range_params/view_dict on the wrong kind");
    CHECK(tpl_render_reset_state(NULL) == U && tpl_render_set_state_val(NULL, hv) == U &&
          tpl_render_set_state_val(r, hv) == U, "reset_state/set_state_val(NULL, non-map)");
    {
        uint32_t w0 = 0, w9 = 9;
        tpl_val v0 = tpl_val_int(1);
        CHECK(tpl_render_set_state_reads(NULL, p, &w0, &v0, 1) == U && tpl_render_set_state_reads(r, NULL, &w0, &v0, 1) == U &&
              tpl_render_set_state_reads(r, p, NULL, &v0, 1) == U && tpl_render_set_state_reads(r, p, &w0, NULL, 1) == U &&
              tpl_render_set_state_reads(r, p, &w9, &v0, 1) == U && tpl_render_set_state_reads(r, p, NULL, NULL, 0) == TPL_OK &&
              tpl_render_reset_state(r) == TPL_OK,
              "set_state_reads(NULL, read out of range)");
    }
    CHECK(tpl_val_range(NULL, tpl_val_int(1), tpl_val_int(2), false, &hv) == U &&
          tpl_val_range(r, tpl_val_int(1), tpl_val_int(2), false, NULL) == U &&
          tpl_val_range(r, tpl_val_int(1), tpl_val_bool(true), false, &hv) == TPL_ERR_TYPE, "val_range(NULL, bad end)");
    CHECK(tpl_render_set_globals_val(NULL, tpl_val_none()) == U && tpl_render_set_globals_val(r, tpl_val_int(1)) == U &&
          tpl_render_set_globals_val(r, tpl_val_none()) == TPL_OK, "set_globals_val(NULL, non-map)");
    CHECK(tpl_render_set_self_val(NULL, tpl_val_none()) == U && tpl_render_set_self_val(r, tpl_val_int(1)) == U &&
          tpl_render_set_self_val(r, tpl_val_none()) == TPL_OK, "set_self_val(NULL, non-host)");
    CHECK(tpl_render_set_self_ivars_in_state(NULL, true) == U && tpl_render_set_self_ivars_in_state(NULL, false) == U &&
          tpl_render_set_self_ivars_in_state(r, true) == TPL_OK && tpl_render_set_self_ivars_in_state(r, false) == TPL_OK,
          "set_self_ivars_in_state(NULL)");
    tpl_host_error(NULL, "ignored", NULL);
    CHECK(tpl_render_charge(NULL, 1) == U && tpl_render_charge(r, 1) == U, "render_charge(NULL, not rendering)");
    CHECK(tpl_render_error_payload(NULL) == NULL && tpl_render_error_payload(r) == NULL, "render_error_payload(NULL)");
    CHECK(tpl_render_getattr(NULL, hv, "name", 4, &hv) == U && tpl_render_getattr(r, hv, NULL, 1, &hv) == U &&
          tpl_render_getattr(r, hv, "name", 4, NULL) == U && tpl_render_getattr(r, hv, "name", 4, &hv) == U &&
          tpl_val_kind_of(hv) == TPL_VAL_NONE, "render_getattr(NULL, not rendering)");
    CHECK(tpl_render_call(NULL, hv, NULL, 0, NULL, NULL, 0, &hv) == U && tpl_render_call(r, hv, NULL, 0, NULL, NULL, 0, NULL) == U &&
          tpl_render_call(r, hv, NULL, 1, NULL, NULL, 0, &hv) == U && tpl_render_call(r, hv, NULL, 0, NULL, NULL, 1, &hv) == U &&
          tpl_render_call(r, hv, NULL, 0, NULL, NULL, 0, &hv) == U && tpl_val_kind_of(hv) == TPL_VAL_NONE,
          "render_call(NULL, not rendering)");
    CHECK(tpl_render_lookup(NULL, "x", 1, &hv) == U && tpl_render_lookup(r, "x", 1, NULL) == U &&
          tpl_render_lookup(r, NULL, 1, &hv) == U && tpl_val_kind_of(hv) == TPL_VAL_NONE &&
          tpl_render_lookup(r, "x", 1, &hv) == U, "render_lookup(NULL, not rendering)");
    CHECK(tpl_render_changes(NULL) == 0 && tpl_render_assign(NULL, hv, hv) == U && tpl_render_assign(r, hv, hv) == U,
          "render_changes(NULL), render_assign(NULL, not rendering)");
    {
        tpl_error te;
        CHECK(tpl_render_mark(NULL) == U && tpl_render_mark(r) == U && !tpl_render_release(NULL, true) &&
              !tpl_render_release(r, true), "render_mark/release(NULL, not rendering)");
        CHECK(tpl_render_rescue(NULL, NULL) == U && tpl_render_rescue(r, &te) == U && te.status == TPL_OK &&
              tpl_render_rescue(r, NULL) == U, "render_rescue(NULL, not rendering)");
    }
    /* the error-kind functions take no pointers: out-of-range kinds and statuses */
    CHECK(strcmp(tpl_error_kind_name((tpl_error_kind)-1), "unknown") == 0 &&
          strcmp(tpl_error_exception(TPL_EK__COUNT, TPL_SYNTAX_JINJA), "") == 0 &&
          tpl_error_kind_status(TPL_EK__COUNT) == TPL_OK && tpl_status_kind((tpl_status)12345) == TPL_EK_NONE,
          "error kinds out of range");
    CHECK(tpl_host_value_fn(NULL, NULL) == 1, "host_value_fn(NULL, NULL): a marker, fails");

    tpl_render_free(r);
    tpl_program_free(p);
}

/* ---- NULL-ARGUMENT TEST END */

/* ------------------------------------------------------------------ re-entrancy */

typedef struct reenter {
    tpl_render *r;              /* the context whose callbacks re-enter it */
    const tpl_program *p;
    int calls;
    tpl_status run, state, fact, call, lang, catalog, tr_key;
    char message[64];
    bool freed_nothing;
} reenter;

/* Calls back into the busy context with every changing function and records what they return. */
static void poke(reenter *re)
{
    const char *out = NULL;
    size_t n = 0;
    re->calls++;
    re->run = tpl_render_run(re->r, re->p, &out, &n);
    snprintf(re->message, sizeof re->message, "%s", tpl_render_error(re->r)->message);
    re->state = tpl_render_set_state_json(re->r, "{\"name\": \"Mallory\"}", 19);
    re->fact = tpl_render_add_fact(re->r, "f", 1);
    re->call = tpl_render_set_call(re->r, "web", NULL);
    re->lang = tpl_render_set_lang(re->r, "zz");
    re->catalog = tpl_render_add_catalog_json(re->r, "{}", 2);
    re->tr_key = tpl_render_add_tr_key(re->r, "name", 4);
    tpl_render_clear_facts(re->r);
    tpl_render_clear_catalogs(re->r);
    tpl_render_clear_tr_keys(re->r);
    tpl_render_set_host_funcs(re->r, NULL, 0);
    tpl_render_set_remembers(re->r, NULL, NULL);
    tpl_render_free(re->r); /* does nothing while it renders */
}

static bool all_busy(const reenter *re)
{
    return re->calls > 0 && re->run == TPL_ERR_USAGE && strcmp(re->message, "render context busy") == 0 &&
           re->state == TPL_ERR_USAGE && re->fact == TPL_ERR_USAGE && re->call == TPL_ERR_USAGE &&
           re->lang == TPL_ERR_USAGE && re->catalog == TPL_ERR_USAGE && re->tr_key == TPL_ERR_USAGE;
}

static int h_reenter(void *data, tpl_host_call *call)
{
    poke(data);
    return tpl_host_return_str(call, "<inner>", 7) == TPL_OK ? 0 : 1;
}

static int remembers_reenter(void *data, const char *words, size_t len)
{
    (void)words;
    (void)len;
    poke(data);
    return 1;
}

/* An allocator whose alloc re-enters the context once it is set (and only once per test). */
static void *re_alloc(void *data, size_t size)
{
    reenter *re = data;
    if (re->r && re->calls == 0) poke(re);
    return malloc(size);
}
static void *re_realloc(void *data, void *ptr, size_t old_size, size_t new_size)
{
    (void)data;
    (void)old_size;
    return realloc(ptr, new_size);
}
static void re_free(void *data, void *ptr, size_t size)
{
    (void)data;
    (void)size;
    free(ptr);
}

static void test_reentrancy(void)
{
    char buf[512];
    const char *state = "{\"name\": \"Ana\", \"items\": [1, 2, 3]}";

    /* a host function */
    reenter re = { 0 };
    tpl_host_func fns[] = { { "again", TPL_HOST_GLOBAL, h_reenter, &re } };
    tpl_options o = { .host_funcs = fns, .nhost_funcs = 1 };
    const char *src = "{% for i in items %}{{ i }}{% endfor %} {{ again() }} {{ name }}{% for i in items %}{{ i }}{% endfor %}";
    tpl_program *p = compile_opts(src, &o);
    tpl_render *r = tpl_render_new(NULL);
    re.r = r;
    re.p = p;
    tpl_render_set_host_funcs(r, fns, 1);
    CHECK(tpl_render_set_state_json(r, state, strlen(state)) == TPL_OK, "state");
    CHECK(strcmp(render(r, p, buf, sizeof buf), "123 <inner> Ana123") == 0, "outer render after re-entry: %s", buf);
    CHECK(all_busy(&re), "host function re-entry refused: run %d '%s' state %d fact %d call %d lang %d cat %d key %d",
          re.run, re.message, re.state, re.fact, re.call, re.lang, re.catalog, re.tr_key);
    CHECK(tpl_render_error(r)->status == TPL_OK, "no error left after the outer render: %s",
          tpl_render_error(r)->message ? tpl_render_error(r)->message : "");
    /* the context is usable again afterwards (and the refused calls changed nothing) */
    re.calls = 0;
    CHECK(strcmp(render(r, p, buf, sizeof buf), "123 <inner> Ana123") == 0 && re.calls == 1, "second render: %s", buf);
    tpl_render_free(r);
    tpl_program_free(p);

    /* the remembers callback */
    reenter rr = { 0 };
    tpl_program *pm = compile("{{ name }}:{{ remembers('x') }}:{{ name }}");
    r = tpl_render_new(NULL);
    rr.r = r;
    rr.p = pm;
    tpl_render_set_remembers(r, remembers_reenter, &rr);
    tpl_render_set_state_json(r, state, strlen(state));
    CHECK(strcmp(render(r, pm, buf, sizeof buf), "Ana:True:Ana") == 0, "remembers re-entry: %s", buf);
    CHECK(all_busy(&rr), "remembers re-entry refused: run %d '%s'", rr.run, rr.message);
    tpl_render_free(r);

    /* the allocator: re-entered from the arena's first chunk of a render */
    reenter ra = { 0 };
    r = tpl_render_new_with(NULL, &(tpl_allocator){ re_alloc, re_realloc, re_free, &ra });
    tpl_render_set_state_json(r, state, strlen(state));
    ra.r = r;
    ra.p = pm;
    CHECK(strcmp(render(r, pm, buf, sizeof buf), "Ana:False:Ana") == 0, "allocator re-entry: %s", buf);
    CHECK(all_busy(&ra), "allocator re-entry refused: calls %d run %d '%s'", ra.calls, ra.run, ra.message);
    ra.r = NULL;
    tpl_render_free(r);
    tpl_program_free(pm);
}

/* ------------------------------------------------------------------ invalid UTF-8 from the host */

static int h_bad_str(void *data, tpl_host_call *call)
{
    tpl_status *st = data;
    *st = tpl_host_return_str(call, "a\xff", 2);
    return 0;
}

static int h_bad_json(void *data, tpl_host_call *call)
{
    tpl_status *st = data;
    *st = tpl_host_return_json(call, "\"a\xc3\"", 4);
    return 0;
}

static void test_utf8(void)
{
    char buf[256];
    tpl_render *r = tpl_render_new(NULL);
    const tpl_status V = TPL_ERR_VALUE;
    CHECK(tpl_render_add_fact(r, "caf\xc3", 4) == V && tpl_render_error(r)->status == V &&
          strstr(tpl_render_error(r)->message, "UTF-8"), "fact: %s", tpl_render_error(r)->message);
    CHECK(tpl_render_add_fact(r, "caf\xc3\xa9", 5) == TPL_OK, "valid fact");
    CHECK(tpl_render_set_call(r, "ph\xffne", NULL) == V, "channel");
    CHECK(tpl_render_set_call(r, "phone", "v\xe2\x82") == V, "medium");
    CHECK(tpl_render_set_lang(r, "z\x80") == V, "language");
    CHECK(tpl_render_set_call_claimed(r, "12\xf0\x9f") == V, "claimed code");
    CHECK(tpl_render_add_tr_key(r, "na\xfeme", 6) == V, "tr key");
    CHECK(tpl_render_add_tr_key(r, "\xed\xa0\x80", 3) == V, "tr key: an encoded surrogate");
    CHECK(tpl_render_add_catalog_json(r, "{\"zz\": {\"Hi\": \"H\xffla\"}}", 22) == TPL_ERR_STATE, "catalog value");
    CHECK(tpl_render_add_catalog_json(r, "{\"zz\": {\"Hi\": \"\\udc00\"}}", 24) == TPL_ERR_STATE, "catalog: lone surrogate");
    CHECK(tpl_render_set_state_json(r, "{\"a\": \"\xc0\xaf\"}", 12) == TPL_ERR_STATE, "state (as before)");

    /* the context still works, and the refused values did not get in */
    tpl_program *p = compile("{{ call.channel }} {{ call.medium }} {{ tr('Hi') }} {{ remembers('caf\xc3\xa9') }}");
    CHECK(tpl_render_set_state_json(r, "{}", 2) == TPL_OK, "state");
    CHECK(p && strcmp(render(r, p, buf, sizeof buf), "phone voice Hi True") == 0, "after refusals: %s", buf);
    tpl_program_free(p);

    /* host function results */
    tpl_status st_str = TPL_OK, st_json = TPL_OK;
    tpl_host_func fns[] = { { "bad_str", TPL_HOST_GLOBAL, h_bad_str, &st_str },
                            { "bad_json", TPL_HOST_GLOBAL, h_bad_json, &st_json } };
    tpl_options o = { .host_funcs = fns, .nhost_funcs = 2 };
    tpl_program *ps = compile_opts("[{{ bad_str() }}]", &o), *pj = compile_opts("[{{ bad_json() }}]", &o);
    tpl_render_set_host_funcs(r, fns, 2);
    render(r, ps, buf, sizeof buf);
    CHECK(st_str == V && tpl_render_error(r)->status == V && strstr(buf, "not valid UTF-8") && tpl_render_error(r)->line == 1,
          "host string result: %d %s", st_str, buf);
    render(r, pj, buf, sizeof buf);
    CHECK(st_json == V && tpl_render_error(r)->status == V && strstr(buf, "invalid result JSON"),
          "host JSON result: %d %s", st_json, buf);
    tpl_program_free(ps);
    tpl_program_free(pj);
    tpl_render_free(r);
}

/* ------------------------------------------------------------------ error kinds (issue 16) */

/* The kind of the error rendering src gives (TPL_EK_NONE when it renders), with the fuel limit. */
static tpl_error_kind render_kind(const char *src, unsigned long long fuel, tpl_status *st)
{
    tpl_program *p = NULL;
    tpl_error err = { 0 };
    *st = tpl_compile("k.jinja", src, strlen(src), NULL, &p, &err);
    if (*st != TPL_OK) {
        tpl_error_kind k = err.kind;
        tpl_error_clear(&err);
        return k;
    }
    tpl_limits lim = { 0 };
    lim.fuel = fuel;
    tpl_render *r = tpl_render_new(&lim);
    const char *out;
    size_t n;
    *st = tpl_render_run(r, p, &out, &n);
    tpl_error_kind k = *st == TPL_OK ? TPL_EK_NONE : tpl_render_error(r)->kind;
    tpl_render_free(r);
    tpl_program_free(p);
    return k;
}

static void test_error_kinds(void)
{
    tpl_status st;
    CHECK(render_kind("{{ 1 }}", 0, &st) == TPL_EK_NONE && st == TPL_OK, "no error: TPL_EK_NONE");
    CHECK(render_kind("{% if %}", 0, &st) == TPL_EK_SYNTAX && st == TPL_ERR_SYNTAX, "syntax error kind");
    CHECK(render_kind("{{ 1 // 0 }}", 0, &st) == TPL_EK_ZERO_DIVISION && st == TPL_ERR_TYPE, "1 // 0: zero_division, TYPE");
    CHECK(render_kind("{{ 2**2000 / 3 }}", 0, &st) == TPL_EK_OVERFLOW && st == TPL_ERR_TYPE, "overflow kind");
    CHECK(render_kind("{{ 2**(10**9) }}", 0, &st) == TPL_EK_MEMORY_LIMIT && st == TPL_ERR_LIMIT, "huge int: memory limit");
    CHECK(render_kind("{{ 2**14300 }}", 0, &st) == TPL_EK_VALUE && st == TPL_ERR_VALUE, "str() past 4300 digits: ValueError");
    CHECK(render_kind("{{ 1 + 'a' }}", 0, &st) == TPL_EK_TYPE && st == TPL_ERR_TYPE, "type error kind");
    CHECK(render_kind("{% for i in range(100000) %}{{ i }}{% endfor %}", 1000, &st) == TPL_EK_FUEL && st == TPL_ERR_LIMIT,
          "fuel: limit kind fuel");
    CHECK(render_kind("{% macro m() %}{{ m() }}{% endmacro %}{{ m() }}", 0, &st) == TPL_EK_DEPTH && st == TPL_ERR_LIMIT,
          "recursion: depth");
    CHECK(render_kind("{{ 1|nosuch }}", 0, &st) == TPL_EK_ASSERTION && st == TPL_ERR_SYNTAX,
          "unknown filter: TemplateAssertionError, SYNTAX");
    CHECK(render_kind("{% if true %}{{ 1|nosuch }}{% endif %}", 0, &st) == TPL_EK_RUNTIME && st == TPL_ERR_RAISED,
          "unknown filter in a branch: TemplateRuntimeError when it runs");
    CHECK(render_kind("{% set d = {} %}{% set d.x = 1 %}", 0, &st) == TPL_EK_RUNTIME, "set on a non-namespace: runtime");
    CHECK(render_kind("{{ '{0}{1}'.format(1) }}", 0, &st) == TPL_EK_INDEX && st == TPL_ERR_VALUE, "format index: IndexError");
    CHECK(render_kind("{{ '%(a)s' % {} }}", 0, &st) == TPL_EK_KEY, "percent key: KeyError");
    CHECK(render_kind("{{ 5 % 0 }}", 0, &st) == TPL_EK_ZERO_DIVISION, "5 %% 0: ZeroDivisionError");
    CHECK(strcmp(tpl_error_exception(TPL_EK_ATTRIBUTE, TPL_SYNTAX_ERB), "NoMethodError") == 0 &&
          strcmp(tpl_error_exception(TPL_EK_ATTRIBUTE, TPL_SYNTAX_JINJA), "AttributeError") == 0 &&
          strcmp(tpl_error_exception(TPL_EK_TEMPLATE_NOT_FOUND, TPL_SYNTAX_JINJA), "TemplateNotFound") == 0,
          "new kinds' exceptions");
    CHECK(strcmp(tpl_error_kind_name(TPL_EK_ZERO_DIVISION), "zero_division") == 0, "kind name");
    CHECK(strcmp(tpl_error_exception(TPL_EK_ZERO_DIVISION, TPL_SYNTAX_JINJA), "ZeroDivisionError") == 0 &&
          strcmp(tpl_error_exception(TPL_EK_UNDEFINED, TPL_SYNTAX_ERB), "NameError") == 0 &&
          strcmp(tpl_error_exception(TPL_EK_FUEL, TPL_SYNTAX_JINJA), "") == 0, "exceptions by syntax");
    CHECK(tpl_status_kind(TPL_ERR_LIMIT) == TPL_EK_LIMIT && tpl_status_kind(TPL_ERR_NOMEM) == TPL_EK_NOMEM &&
          tpl_error_kind_status(TPL_EK_MEMORY_LIMIT) == TPL_ERR_LIMIT, "status <-> kind");
    for (int k = 0; k < TPL_EK__COUNT; k++)
        CHECK(k == 0 || tpl_error_kind_status((tpl_error_kind)k) != TPL_OK, "every kind but NONE has a status (%d)", k);
}

/* A catalog built row by row (tpl_catalog) translates as the same catalog given as JSON: exact,
 * pattern and plural rows, Plural-Forms, the fallback chain; one finished catalog is shared by
 * two render contexts; bad rows are refused and the catalog stays usable. */
static void test_catalog_rows(void)
{
    char a[512], b[512];
    const char *json = "{\"fr\": {\"\": \"Plural-Forms: nplurals=2; plural=(n > 1);\\n\", \"Hi\": \"Salut\", "
                       "\"Hello, {name}!\": \"Bonjour, {name} !\", \"%(num)s apple\": [\"%(num)s pomme\", \"%(num)s pommes\"]}}";
    tpl_program *p = compile("{{ tr('Hi') }}|{{ tr('Hello, Ann!') }}|{{ ngettext('%(num)s apple', '%(num)s apples', 0) }}|"
                             "{{ ngettext('%(num)s apple', '%(num)s apples', 2) }}|{{ tr('Bye') }}|{{ _('Hi') }}|{{ tr('Hi', lang='de') }}");
    tpl_catalog *c = tpl_catalog_new();
    const char *forms[] = { "%(num)s pomme", "%(num)s pommes" };
    const size_t lens[] = { 13, 14 };
    CHECK(c && tpl_catalog_add(c, "fr", "Hi", 2, "Sal", 3) == TPL_OK, "add");
    CHECK(tpl_catalog_add(c, "fr", "Hi", 2, "Salut", 5) == TPL_OK, "add again (replaces)");
    CHECK(tpl_catalog_add(c, "fr", "Hello, {name}!", 14, "Bonjour, {name} !", 17) == TPL_OK, "add pattern");
    CHECK(tpl_catalog_add_forms(c, "fr", "%(num)s apple", 13, forms, lens, 2) == TPL_OK, "add forms");
    CHECK(tpl_catalog_add(c, "fr", "", 0, "Plural-Forms: nplurals=2; plural=(n > 1);\n", 42) == TPL_OK, "header");
    CHECK(tpl_catalog_add(c, "fr", "X", 1, "\xff", 1) == TPL_ERR_VALUE, "target not UTF-8");
    CHECK(tpl_catalog_add(c, "f\xc3", "X", 1, "x", 1) == TPL_ERR_VALUE, "lang not UTF-8");
    CHECK(tpl_catalog_add(c, "fr", "\xed\xa0\x80", 3, "x", 1) == TPL_ERR_VALUE, "source: an encoded surrogate");
    CHECK(tpl_catalog_finish(c) == TPL_OK && tpl_catalog_finish(c) == TPL_OK, "finish (twice)");
    CHECK(tpl_catalog_add(c, "fr", "Bye", 3, "Salut", 5) == TPL_ERR_USAGE, "add after finish");
    tpl_render *r1 = tpl_render_new(NULL), *r2 = tpl_render_new(NULL), *rj = tpl_render_new(NULL);
    CHECK(tpl_render_add_catalog_json(rj, json, strlen(json)) == TPL_OK, "json catalog");
    CHECK(tpl_render_add_catalog(r1, c) == TPL_OK && tpl_render_add_catalog(r2, c) == TPL_OK, "shared");
    tpl_render *rs[] = { r1, r2, rj };
    for (int i = 0; i < 3; i++)
        CHECK(tpl_render_set_lang(rs[i], "fr") == TPL_OK && tpl_render_set_state_json(rs[i], "{}", 2) == TPL_OK, "lang");
    const char *want = "Salut|Bonjour, Ann !|0 pomme|2 pommes|Bye|Salut|Hi";
    CHECK(p && strcmp(render(rj, p, b, sizeof b), want) == 0, "json: %s", b);
    CHECK(p && strcmp(render(r1, p, a, sizeof a), want) == 0, "rows: %s", a);
    CHECK(p && strcmp(render(r2, p, a, sizeof a), want) == 0, "rows, second context: %s", a);
    char *text = NULL;
    size_t len = 0;
    CHECK(tpl_catalog_json(c, &text, &len) == TPL_OK && text && len == strlen(text) &&
          strcmp(text, "{\"fr\":{\"Hi\":\"Salut\",\"Hello, {name}!\":\"Bonjour, {name} !\",\"%(num)s apple\":"
                       "[\"%(num)s pomme\",\"%(num)s pommes\"],\"\":\"Plural-Forms: nplurals=2; plural=(n > 1);\\n\"}}") == 0,
          "catalog_json: %s", text ? text : "(null)");
    /* the JSON text is the same catalog */
    tpl_render *rt = tpl_render_new(NULL);
    CHECK(text && tpl_render_add_catalog_json(rt, text, len) == TPL_OK && tpl_render_set_lang(rt, "fr") == TPL_OK &&
          tpl_render_set_state_json(rt, "{}", 2) == TPL_OK && strcmp(render(rt, p, a, sizeof a), want) == 0,
          "catalog_json round trip: %s", a);
    free(text);
    /* a fallback chain: a second catalog answers what the first lacks */
    tpl_catalog *c2 = tpl_catalog_new();
    CHECK(c2 && tpl_catalog_add(c2, "fr", "Bye", 3, "Au revoir", 9) == TPL_OK && tpl_catalog_finish(c2) == TPL_OK, "c2");
    CHECK(tpl_render_add_catalog(r1, c2) == TPL_OK &&
          strcmp(render(r1, p, a, sizeof a), "Salut|Bonjour, Ann !|0 pomme|2 pommes|Au revoir|Salut|Hi") == 0, "chain: %s", a);
    tpl_render_clear_catalogs(r1);
    CHECK(strcmp(render(r1, p, a, sizeof a), "Hi|Hello, Ann!|0 apples|2 apples|Bye|Hi|Hi") == 0, "cleared: %s", a);
    tpl_render_free(r1);
    tpl_render_free(r2);
    tpl_render_free(rj);
    tpl_render_free(rt);
    tpl_catalog_free(c);
    tpl_catalog_free(c2);
    tpl_program_free(p);
}

/* remembers() answers kept while the facts do not change (stdlib/prompt/state.c): every change
 * of the facts is seen by the next render, and an answer from the memo charges the fuel its fact
 * scan charged. */
static int no_memory(void *data, const char *words, size_t len) { (void)data; (void)words; (void)len; return 0; }

static void test_remembered(void)
{
    char buf[256];
    tpl_program *p = compile("{{ remembers('xy') }} {{ remembers('xy') }} {{ remembers('y') }}");
    tpl_render *r = tpl_render_new(NULL);
    CHECK(p && r, "remembered: setup");
    if (!p || !r) { tpl_program_free(p); tpl_render_free(r); return; }
    CHECK(strcmp(render(r, p, buf, sizeof buf), "False False False") == 0, "no facts: %s", buf);
    tpl_render_add_fact(r, "ab", 2);
    CHECK(strcmp(render(r, p, buf, sizeof buf), "False False False") == 0, "fact ab: %s", buf);
    tpl_render_add_fact(r, "axyz", 4);
    CHECK(strcmp(render(r, p, buf, sizeof buf), "True True True") == 0, "fact axyz added: %s", buf);
    tpl_render_clear_facts(r);
    CHECK(strcmp(render(r, p, buf, sizeof buf), "False False False") == 0, "facts cleared: %s", buf);
    tpl_render_add_fact(r, "y", 1);
    CHECK(strcmp(render(r, p, buf, sizeof buf), "False False True") == 0, "fact y: %s", buf);
    tpl_render_set_remembers(r, no_memory, NULL);
    CHECK(strcmp(render(r, p, buf, sizeof buf), "False False False") == 0, "host memory: %s", buf);
    tpl_render_set_remembers(r, NULL, NULL);
    CHECK(strcmp(render(r, p, buf, sizeof buf), "False False True") == 0, "facts again: %s", buf);
    tpl_render_free(r);
    tpl_program_free(p);

    /* the fuel: a render whose answers all come from the memo (warm) fails exactly where one that
     * scans the facts first (a new context) fails */
    char fact[400];
    memset(fact, 'a', sizeof fact);
    memcpy(fact + sizeof fact - 7, "hearing", 7);
    p = compile("{% for i in range(3) %}{{ remembers('hearing') }}{% endfor %}");
    uint64_t least = 0; /* the least fuel a new context renders with */
    for (uint64_t fuel = 1; p && fuel < 10000 && !least; fuel++) {
        tpl_limits lim = { .fuel = fuel };
        r = tpl_render_new(&lim);
        tpl_render_add_fact(r, fact, sizeof fact);
        if (strcmp(render(r, p, buf, sizeof buf), "TrueTrueTrue") == 0) least = fuel;
        tpl_render_free(r);
    }
    CHECK(least > 3 * (4 + sizeof fact / 16), "remembered: fuel threshold %llu", (unsigned long long)least);
    for (uint64_t fuel = least - 1; p && least && fuel <= least; fuel++) {
        tpl_limits lim = { .fuel = fuel };
        r = tpl_render_new(&lim);
        tpl_render_add_fact(r, fact, sizeof fact);
        bool cold = strcmp(render(r, p, buf, sizeof buf), "TrueTrueTrue") == 0;
        bool warm = strcmp(render(r, p, buf, sizeof buf), "TrueTrueTrue") == 0;
        CHECK(cold == (fuel == least) && warm == cold, "remembered: fuel %llu: cold %d, warm %d (%s)",
              (unsigned long long)fuel, cold, warm, buf);
        tpl_render_free(r);
    }
    tpl_program_free(p);
}

/* The native code keeps what it found in the state across renders while the state does not
 * change (tpl_native.h memo): every way the API changes the state between two renders of a
 * native view must show in the next render, as the VM renders the view's source with the same
 * changes (tests/native_state.jinja: top-level names, chains of attributes, a macro's reads). */
extern const tpl_static_program tpl_view_native_state;

/* Change number `step` of the state of r (the same on every context); h: the host values of
 * step 6 (the state, its d, d's y, its l), changed in place by the later steps. */
static void state_step(tpl_render *r, int step, tpl_val *h)
{
    static const char *const js[] = {
        "{\"a\":\"1\",\"b\":2,\"d\":{\"x\":\"x1\",\"y\":{\"z\":\"z1\"},\"w\":\"w1\"},\"e\":{\"f\":{\"g\":\"g1\"}},\"l\":[1,2]}",
        /* the same shape and lengths: the new state takes the old one's addresses */
        "{\"a\":\"2\",\"b\":3,\"d\":{\"x\":\"x2\",\"y\":{\"z\":\"z2\"},\"w\":\"w2\"},\"e\":{\"f\":{\"g\":\"g2\"}},\"l\":[3,4]}",
        /* keys in another order, some missing */
        "{\"e\":{\"f\":{\"g\":\"g3\"}},\"d\":{\"y\":{\"z\":\"z3\"},\"x\":\"x3\"},\"a\":\"3\",\"l\":[]}",
    };
    tpl_val v;
#define SET_STR(m, key, val) (tpl_val_str(r, (val), strlen(val), 0, &v), \
                              tpl_val_map_add_str(r, (m), (key), strlen(key), tpl_val_key_hash((key), strlen(key)), 0, v))
    switch (step) {
    case 0: case 1: case 2:
        tpl_render_set_state_json(r, js[step], strlen(js[step]));
        if (step == 1) tpl_render_add_fact(r, "axyz", 4); /* (remembers: the facts are part of the stamp) */
        if (step == 2) tpl_render_clear_facts(r);
        break;
    case 3: { /* from a file */
        FILE *f = tmpfile();
        if (f) {
            fputs("{\"a\":\"4\",\"b\":5,\"d\":{\"x\":\"x4\",\"y\":{\"z\":\"z4\"}},\"e\":{\"f\":{\"g\":\"g4\"}},\"l\":[5]}", f);
            rewind(f);
            tpl_render_set_state_file(r, f);
            fclose(f);
        }
        break;
    }
    case 4: /* not JSON: the state stays */
        tpl_render_set_state_json(r, "{", 1);
        tpl_render_add_fact(r, "y", 1);
        break;
    case 5:
        tpl_render_reset_state(r);
        break;
    case 6: /* host values */
        tpl_val_map(r, 4, &h[0]);
        tpl_val_map(r, 4, &h[1]);
        tpl_val_map(r, 2, &h[2]);
        tpl_val_list(r, 2, 0, &h[3]);
        SET_STR(h[2], "z", "z6");
        tpl_val_map_add_str(r, h[1], "y", 1, tpl_val_key_hash("y", 1), 0, h[2]);
        SET_STR(h[1], "x", "x6");
        SET_STR(h[1], "v", "v6");
        tpl_val_map_add_str(r, h[0], "d", 1, tpl_val_key_hash("d", 1), 0, h[1]);
        tpl_val_map_add_str(r, h[0], "l", 1, tpl_val_key_hash("l", 1), 0, h[3]);
        SET_STR(h[0], "a", "a6");
        tpl_render_set_state_val(r, h[0]);
        break;
    case 7: /* a value of the state's dict replaced in place */
    {
        tpl_val k;
        tpl_val_str_borrow("x", 1, &k);
        tpl_val_str(r, "x7", 2, 0, &v);
        tpl_val_map_set(r, h[1], k, v);
    }
        break;
    case 8: /* keys added to the state and to its dict (more than it has room for: its entries move) */
        SET_STR(h[1], "w", "w8");
        for (int i = 0; i < 8; i++) {
            char key[8];
            snprintf(key, sizeof key, "k%d", i);
            SET_STR(h[1], key, "k");
        }
        tpl_val_str_borrow("b", 1, &v);
        tpl_val_map_set(r, h[0], v, tpl_val_int(8));
        break;
    case 9: /* an item pushed, nested dicts' values replaced (in the moved entries) */
        tpl_val_list_push(r, h[3], tpl_val_int(9));
        tpl_val_str_borrow("x", 1, &v);
        tpl_val_map_set(r, h[1], v, tpl_val_int(9));
        tpl_val_str_borrow("v", 1, &v);
        tpl_val_map_set(r, h[1], v, tpl_val_int(9));
        tpl_val_str_borrow("z", 1, &v);
        tpl_val_map_set(r, h[2], v, tpl_val_bool(true));
        break;
    case 10: /* the state set again to the same map; a host memory store */
        tpl_render_set_state_val(r, h[0]);
        tpl_render_set_remembers(r, remembers_no, NULL);
        break;
    case 11: /* the facts again */
        tpl_render_set_remembers(r, NULL, NULL);
        break;
    /* the facts and the memory store changed alone */
    case 12: tpl_render_add_fact(r, "xyz", 3); break;
    case 13: tpl_render_clear_facts(r); break;
    case 14: tpl_render_add_fact(r, "y", 1); break;
    case 15: tpl_render_set_remembers(r, remembers_no, NULL); break;
    case 16: tpl_render_set_remembers(r, NULL, NULL); break;
    /* globals below the state (the state has no 'e'): set, replaced by another map of the same
     * shape, then removed */
    case 17: /* (both maps made now: step 18 only sets the other one) */
        for (int k = 0; k < 2; k++) {
            tpl_val e, f;
            tpl_val_map(r, 1, &h[4 + k]);
            tpl_val_map(r, 1, &e);
            tpl_val_map(r, 1, &f);
            SET_STR(f, "g", k == 0 ? "g17" : "g18");
            tpl_val_map_add_str(r, e, "f", 1, tpl_val_key_hash("f", 1), 0, f);
            tpl_val_map_add_str(r, h[4 + k], "e", 1, tpl_val_key_hash("e", 1), 0, e);
        }
        tpl_render_set_globals_val(r, h[4]);
        break;
    case 18: tpl_render_set_globals_val(r, h[5]); break;
    case 19: tpl_render_set_globals_val(r, tpl_val_none()); break;
    /* a state key that shadows the builtin remembers() (calling it fails), then gone again: the
     * native code keeps whether the state shadows it with the state memo */
    case 20: case 21: {
        const char *j = step == 20 ? "{\"a\":\"20\",\"d\":{\"x\":\"x\",\"y\":{\"z\":\"z\"}},\"l\":[],\"remembers\":\"r\"}"
                                   : "{\"a\":\"21\",\"d\":{\"x\":\"x\",\"y\":{\"z\":\"z\"}},\"l\":[]}";
        tpl_render_set_state_json(r, j, strlen(j));
        tpl_render_add_fact(r, "y", 1);
        break;
    }
    default: break;
    }
#undef SET_STR
}

static void test_native_state(void)
{
    const tpl_static_program *sp = &tpl_view_native_state;
    tpl_program *pn = NULL, *pv = NULL;
    tpl_error err = { 0 };
    CHECK(tpl_program_load_static(sp, &pn, &err) == TPL_OK, "native state: load");
    tpl_error_clear(&err);
    CHECK(tpl_compile("native_state.jinja", sp->source, sp->source_len, NULL, &pv, &err) == TPL_OK, "native state: compile");
    tpl_error_clear(&err);
    tpl_render *rn = tpl_render_new(NULL), *rv = tpl_render_new(NULL);
    if (pn && pv && rn && rv) {
        char bn[512], bv[512];
        tpl_val hn[6], hv[6];
        for (int step = 0; step <= 21; step++) {
            state_step(rn, step, hn);
            state_step(rv, step, hv);
            for (int rep = 0; rep < 2; rep++) { /* the second render reads what the first kept */
                render(rn, pn, bn, sizeof bn);
                render(rv, pv, bv, sizeof bv);
                CHECK(strcmp(bn, bv) == 0, "native state: step %d render %d: native %s, VM %s", step, rep, bn, bv);
            }
        }
    } else CHECK(0, "native state: setup");
    tpl_render_free(rn);
    tpl_render_free(rv);
    /* the fuel: a native render whose remembers() answers were kept by an earlier render runs out
     * of fuel exactly where one that scans the facts (a new context) does */
    char fact[400], buf[512];
    memset(fact, 'a', sizeof fact);
    memcpy(fact + sizeof fact - 2, "xy", 2);
    const char *js = "{\"a\":\"1\",\"d\":{\"x\":\"x\",\"y\":{\"z\":\"z\"}},\"l\":[]}";
    uint64_t least = 0;
    for (uint64_t fuel = 1; pn && fuel < 10000 && !least; fuel++) {
        tpl_limits lim = { .fuel = fuel };
        tpl_render *r = tpl_render_new(&lim);
        tpl_render_set_state_json(r, js, strlen(js));
        tpl_render_add_fact(r, fact, sizeof fact);
        if (strncmp(render(r, pn, buf, sizeof buf), "ERR", 3) != 0) least = fuel;
        tpl_render_free(r);
    }
    CHECK(least > 2 * (4 + sizeof fact / 16), "native state: fuel threshold %llu", (unsigned long long)least);
    for (uint64_t fuel = least - 1; pn && least && fuel <= least; fuel++) {
        tpl_limits lim = { .fuel = fuel };
        tpl_render *r = tpl_render_new(&lim);
        tpl_render_set_state_json(r, js, strlen(js));
        tpl_render_add_fact(r, fact, sizeof fact);
        bool cold = strncmp(render(r, pn, buf, sizeof buf), "ERR", 3) != 0;
        bool warm = strncmp(render(r, pn, buf, sizeof buf), "ERR", 3) != 0;
        CHECK(cold == (fuel == least) && warm == cold, "native state: fuel %llu: cold %d, warm %d (%s)",
              (unsigned long long)fuel, cold, warm, buf);
        tpl_render_free(r);
    }
    tpl_program_free(pn);
    tpl_program_free(pv);
}

/* A render's output, or its error with its location (ERR:status:line:col:message). */
static const char *render_loc(tpl_render *r, const tpl_program *p, char *buf, size_t cap)
{
    const char *out;
    size_t n;
    tpl_status st = tpl_render_run(r, p, &out, &n);
    const tpl_error *e = tpl_render_error(r);
    if (st != TPL_OK) snprintf(buf, cap, "ERR:%d:%u:%u:%s", (int)st, (unsigned)e->line, (unsigned)e->column, e->message);
    else snprintf(buf, cap, "%s", out);
    return buf;
}

/* tpl_native_find (tpl_native.h) answers as the VM's map_find_name: a Ruby class or Regexp key
 * (Hash[Array], {/k/ => 1}) is no String of its bytes, also when the hint points at it (the hint
 * compares a short key's bytes without its hash; it compared no flags). */
static void test_native_find_flags(void)
{
    static const char *const names[] = { "Array", "a_key_longer_than_sixteen" };
    for (int k = 0; k < 2; k++)
        for (int fl = 0; fl < 3; fl++) {
            uint8_t flags = fl == 0 ? 0 : fl == 1 ? TPL_NF_CLASS_RB : TPL_NF_REGEX_RB;
            const char *s = names[k];
            uint32_t n = (uint32_t)strlen(s);
            uint64_t h = 0x1234u, hk = fl ? 0x5678u : h; /* (a class's hash is its own: runtime/value.c) */
            tpl_nentry e[2] = {
                { .key = { .type = TPL_NT_STR, .flags = flags, .len = n, .u.s = s }, .val = { .type = TPL_NT_INT, .u.i = 1 }, .hash = hk },
                { .key = { .type = TPL_NT_STR, .len = 1, .u.s = "k" }, .val = { .type = TPL_NT_INT, .u.i = 2 }, .hash = 7 },
            };
            tpl_nmap m = { .len = 2, .cap = 2, .e = e };
            tpl_nvalue mv = { .type = TPL_NT_MAP, .u.p = &m };
            uint32_t hint = 0, keep = 9;
            const tpl_nvalue *v = tpl_native_find(&mv, s, n, h, &hint, &keep);
            CHECK(fl ? v == NULL : v == &e[0].val, "native_find %s flags %u: hinted %s", s, (unsigned)flags,
                  v ? "found" : "missing");
            hint = 1;
            v = tpl_native_find(&mv, s, n, h, &hint, &keep);
            CHECK(fl ? v == NULL : v == &e[0].val && hint == 0 && keep == 0, "native_find %s flags %u: scanned %s", s,
                  (unsigned)flags, v ? "found" : "missing");
        }
}

/* The lean native entry (tpl_native.h TPL_NATIVE_DIRECT, FRESH_SLOTS): the emitter's flags for two
 * views whose code never steps (tests/native_direct.jinja: a slot set on one path only, a loop
 * read through `loop`; tests/native_fresh.jinja: every slot stored before it is read), and their
 * renders on one context with states that set the slots on some renders and not on others (a
 * slot left from the last render must not show), at every fuel up to what they need and with a
 * small output limit: the VM's bytes, errors and locations. */
extern const tpl_static_program tpl_view_native_direct, tpl_view_native_fresh;
static void test_native_direct(void)
{
    CHECK(tpl_view_native_direct.native_flags == TPL_NATIVE_DIRECT, "native direct: flags %u",
          tpl_view_native_direct.native_flags);
    CHECK(tpl_view_native_fresh.native_flags == (TPL_NATIVE_DIRECT | TPL_NATIVE_FRESH_SLOTS), "native fresh: flags %u",
          tpl_view_native_fresh.native_flags);
    static const char *const states[] = {
        "{\"c\":\"X\",\"l\":[1,2,3],\"a\":\"A\",\"z\":\"S\"}",
        "{\"c\":\"\",\"l\":[],\"a\":\"B\",\"z\":\"S\"}",
        "{\"c\":\"Y\",\"l\":[\" 4 \"],\"a\":\"C\"}",
        "{\"l\":[5,\"six\"],\"a\":\"D\"}",
        "{\"c\":\"Z\",\"l\":{\"k\":1},\"a\":[1]}",
    };
    const tpl_static_program *views[2] = { &tpl_view_native_direct, &tpl_view_native_fresh };
    for (int w = 0; w < 2; w++) {
        tpl_program *pn = NULL, *pv = NULL;
        tpl_error err = { 0 };
        CHECK(tpl_program_load_static(views[w], &pn, &err) == TPL_OK, "native direct %d: load", w);
        tpl_error_clear(&err);
        CHECK(tpl_compile("v.jinja", views[w]->source, views[w]->source_len, NULL, &pv, &err) == TPL_OK,
              "native direct %d: compile", w);
        tpl_error_clear(&err);
        tpl_render *rn = tpl_render_new(NULL), *rv = tpl_render_new(NULL);
        char bn[512], bv[512];
        for (int i = 0; pn && pv && rn && rv && i < 15; i++) { /* each state after each other one */
            const char *js = states[(i * 3) % 5];
            tpl_render_set_state_json(rn, js, strlen(js));
            tpl_render_set_state_json(rv, js, strlen(js));
            render_loc(rn, pn, bn, sizeof bn);
            render_loc(rv, pv, bv, sizeof bv);
            CHECK(strcmp(bn, bv) == 0, "native direct %d: render %d: native %s, VM %s", w, i, bn, bv);
        }
        tpl_render_free(rn);
        tpl_render_free(rv);
        /* every fuel up to a render that completes; then output limits around its length */
        bool done = false;
        for (uint64_t fuel = 1; pn && pv && fuel < 500 && !done; fuel++) {
            tpl_limits lim = { .fuel = fuel };
            rn = tpl_render_new(&lim);
            rv = tpl_render_new(&lim);
            if (rn && rv) {
                tpl_render_set_state_json(rn, states[0], strlen(states[0]));
                tpl_render_set_state_json(rv, states[0], strlen(states[0]));
                for (int rep = 0; rep < 2; rep++) {
                    render_loc(rn, pn, bn, sizeof bn);
                    render_loc(rv, pv, bv, sizeof bv);
                    CHECK(strcmp(bn, bv) == 0, "native direct %d: fuel %llu: native %s, VM %s", w, (unsigned long long)fuel, bn, bv);
                }
                done = strncmp(bv, "ERR", 3) != 0;
            }
            tpl_render_free(rn);
            tpl_render_free(rv);
        }
        CHECK(!pn || done, "native direct %d: no fuel enough", w);
        for (uint64_t cap = 1; pn && pv && cap < 24; cap++) {
            tpl_limits lim = { .max_output = cap };
            rn = tpl_render_new(&lim);
            rv = tpl_render_new(&lim);
            if (rn && rv) {
                tpl_render_set_state_json(rn, states[0], strlen(states[0]));
                tpl_render_set_state_json(rv, states[0], strlen(states[0]));
                render_loc(rn, pn, bn, sizeof bn);
                render_loc(rv, pv, bv, sizeof bv);
                CHECK(strcmp(bn, bv) == 0, "native direct %d: output %llu: native %s, VM %s", w, (unsigned long long)cap, bn, bv);
            }
            tpl_render_free(rn);
            tpl_render_free(rv);
        }
        tpl_program_free(pn);
        tpl_program_free(pv);
    }
}

/* The interpreter keeps a render's state lookups, the attributes of state dicts and remembers()
 * answers for the next render on the same context (issue 21: vm_impl.h name_hit_kept): another
 * program on that context (other names, or the same names in another order), a program freed and
 * another compiled in its place, a state or facts changed between renders all read afresh. Each
 * render is compared with one on a new context. */
static void test_vm_kept(void)
{
    static const char *const srcs[] = {
        "{{ a }}|{{ d.x }}|{{ d.y }}|{{ b }}|{{ remembers('usual') }}",
        "{{ b }}|{{ d.y }}|{{ d.x }}|{{ a }}|{{ remembers('x') }}",
        "{{ b }}{{ a }}|{{ d.x }}",
        "x {{ d.y }} y {{ d.x }} z {{ a }}",
    };
    static const char *const states[] = {
        "{\"a\":\"A\",\"b\":\"B\",\"d\":{\"x\":\"X\",\"y\":\"Y\"}}",
        "{\"a\":\"1\",\"b\":\"2\",\"d\":{\"x\":\"3\",\"y\":\"4\"}}",
    };
    tpl_render *r = tpl_render_new(NULL);
    tpl_program *kept[4] = { NULL };
    tpl_error err = { 0 };
    char b1[256], b2[256];
    for (int step = 0; r && step < 48; step++) {
        int si = step % 4, st = (step / 8) % 2;
        tpl_program *p = NULL;
        CHECK(tpl_compile("kept.jinja", srcs[si], strlen(srcs[si]), NULL, &p, &err) == TPL_OK, "vm kept: compile");
        tpl_error_clear(&err);
        if (!p) break;
        if (step % 8 == 0) tpl_render_set_state_json(r, states[st], strlen(states[st]));
        if (step % 12 == 5) tpl_render_add_fact(r, "usual doctor", 12);
        if (step % 12 == 11) tpl_render_clear_facts(r);
        tpl_render *fresh = tpl_render_new(NULL);
        tpl_render_set_state_json(fresh, states[st], strlen(states[st]));
        if (step % 12 >= 5 && step % 12 < 11) tpl_render_add_fact(fresh, "usual doctor", 12);
        render(fresh, p, b2, sizeof b2);
        for (int rep = 0; rep < 2; rep++) {
            render(r, p, b1, sizeof b1);
            CHECK(strcmp(b1, b2) == 0, "vm kept: step %d render %d: %s, expected %s", step, rep, b1, b2);
        }
        tpl_render_free(fresh);
        /* every other program is freed before the next compile (which may take its place) */
        if (step % 2) tpl_program_free(p);
        else {
            tpl_program_free(kept[si]);
            kept[si] = p;
        }
    }
    for (int i = 0; i < 4; i++) tpl_program_free(kept[i]);
    tpl_render_free(r);
    /* the fuel: a render whose remembers() answer the interpreter kept from the one before runs
     * out of fuel exactly where one on a new context does */
    char fact[400], buf[256];
    memset(fact, 'a', sizeof fact);
    memcpy(fact + sizeof fact - 2, "xy", 2);
    const char *src = "{{ a }}{% if remembers('xy') %}Y{% endif %}{{ remembers('q') }}", *js = "{\"a\":\"1\"}";
    tpl_program *p = NULL;
    CHECK(tpl_compile("fuel.jinja", src, strlen(src), NULL, &p, &err) == TPL_OK, "vm kept: compile fuel");
    tpl_error_clear(&err);
    uint64_t least = 0;
    for (uint64_t fuel = 1; p && fuel < 10000 && !least; fuel++) {
        tpl_limits lim = { .fuel = fuel };
        tpl_render *rf = tpl_render_new(&lim);
        tpl_render_set_state_json(rf, js, strlen(js));
        tpl_render_add_fact(rf, fact, sizeof fact);
        if (strncmp(render(rf, p, buf, sizeof buf), "ERR", 3) != 0) least = fuel;
        tpl_render_free(rf);
    }
    CHECK(least > 2 * (4 + sizeof fact / 16), "vm kept: fuel threshold %llu", (unsigned long long)least);
    for (uint64_t fuel = least - 1; p && least && fuel <= least; fuel++) {
        tpl_limits lim = { .fuel = fuel };
        tpl_render *rf = tpl_render_new(&lim);
        tpl_render_set_state_json(rf, js, strlen(js));
        tpl_render_add_fact(rf, fact, sizeof fact);
        bool cold = strncmp(render(rf, p, buf, sizeof buf), "ERR", 3) != 0;
        bool warm = strncmp(render(rf, p, buf, sizeof buf), "ERR", 3) != 0;
        CHECK(cold == (fuel == least) && warm == cold, "vm kept: fuel %llu: cold %d, warm %d (%s)",
              (unsigned long long)fuel, cold, warm, buf);
        tpl_render_free(rf);
    }
    tpl_program_free(p);
}


/* tpl_render_set_state_reads: a state given as values of the program's reads renders as the same
 * state built as a map (tpl_val_map_of_str + tpl_render_set_state_val) — names given, names not
 * given (a builtin's, undefined), in either order, a name a loop and a set also use, a program of
 * more names than the VM keeps lookups of, another program rendered over the state, and a map
 * state on the same context after it — and renders again the same. */
static void test_state_reads(void)
{
    static const char *const srcs[] = {
        "{{ a }}|{{ b }}|{{ c is defined }}|{{ d.x }}|{{ range(2)|list }}|{{ g }}|{{ a }}{{ b }}",
        "{% for k in xs %}{{ k }}{{ a }}{% endfor %}|{{ b }}{% set a = 'local' %}{{ a }}",
    };
    const char *names[8];
    size_t lens[8];
    char b1[512], b2[512];
    tpl_render *r = tpl_render_new(NULL), *m = tpl_render_new(NULL);
    if (!r || !m) { nfail++; tpl_render_free(r); tpl_render_free(m); return; }
    for (int si = 0; si < 2; si++) {
        tpl_program *p = compile(srcs[si]);
        if (!p) { nfail++; continue; }
        size_t n = tpl_program_reads(p, names, lens, 8);
        CHECK(n >= 2 && n <= 8, "state_reads: %zu reads", n);
        for (int order = 0; order < 2 && n <= 8; order++) {
            /* each read but "c" and "g" given: a string, a dict for d, a list for xs */
            uint32_t which[8];
            tpl_val vals[8], mv[8];
            tpl_str_entry e[8];
            size_t nw = 0;
            for (size_t j = 0; j < n; j++) {
                size_t i = order ? n - 1 - j : j;
                if ((lens[i] == 1 && (names[i][0] == 'c' || names[i][0] == 'g')) || (lens[i] == 5 && !memcmp(names[i], "range", 5)))
                    continue;
                for (int k = 0; k < 2; k++) {
                    tpl_render *h = k ? m : r;
                    tpl_val v;
                    if (lens[i] == 1 && names[i][0] == 'd') {
                        tpl_str_entry x = { "x", 1, tpl_val_key_hash("x", 1), tpl_val_int(7) };
                        CHECK(tpl_val_map_of_str(h, &x, 1, 0, &v) == TPL_OK, "state_reads: d");
                    } else if (lens[i] == 2 && !memcmp(names[i], "xs", 2)) {
                        tpl_val it[2] = { tpl_val_int(1), tpl_val_int(2) };
                        CHECK(tpl_val_list_of(h, it, 2, 0, &v) == TPL_OK, "state_reads: xs");
                    } else {
                        CHECK(tpl_val_str(h, names[i], lens[i], 0, &v) == TPL_OK, "state_reads: str");
                    }
                    if (k) mv[nw] = v;
                    else vals[nw] = v;
                }
                which[nw] = (uint32_t)i;
                e[nw] = (tpl_str_entry){ names[i], lens[i], tpl_val_key_hash(names[i], lens[i]), mv[nw] };
                nw++;
            }
            tpl_val st;
            CHECK(tpl_val_map_of_str(m, e, nw, 0, &st) == TPL_OK && tpl_render_set_state_val(m, st) == TPL_OK,
                  "state_reads: map state");
            CHECK(tpl_render_set_state_reads(r, p, which, vals, nw) == TPL_OK, "state_reads: set");
            render(m, p, b2, sizeof b2);
            for (int rep = 0; rep < 2; rep++) {
                CHECK(strcmp(render(r, p, b1, sizeof b1), b2) == 0, "state_reads: %d/%d/%d: %s, expected %s", si, order,
                      rep, b1, b2);
            }
            tpl_render_reset_state(r);
            tpl_render_reset_state(m);
        }
        tpl_program_free(p);
    }
    /* a program of more names than the VM keeps lookups of (TPL_VM_NAME_HITS), its reads given */
    {
        char src[8192];
        size_t o = 0;
        for (int i = 0; i < 200; i++) o += (size_t)snprintf(src + o, sizeof src - o, "{{ v%d }}", i);
        tpl_program *p = compile(src);
        size_t n = p ? tpl_program_reads(p, NULL, NULL, 0) : 0;
        CHECK(n == 200, "state_reads: 200 reads (%zu)", n);
        uint32_t which[200];
        tpl_val vals[200];
        for (size_t i = 0; i < n && i < 200; i++) {
            which[i] = (uint32_t)i;
            vals[i] = tpl_val_int((int64_t)i % 10);
        }
        const char *out;
        size_t len;
        CHECK(p && tpl_render_set_state_reads(r, p, which, vals, n) == TPL_OK && tpl_render_run(r, p, &out, &len) == TPL_OK &&
              len == 200 && !memcmp(out, "0123456789", 10), "state_reads: 200 names");
        tpl_render_reset_state(r);
        tpl_program_free(p);
    }
    /* another program over the same state, then a map state on the same context: each as a map
     * state renders it */
    {
        tpl_program *p = compile("{{ a }}{{ b }}{{ z }}"), *q = compile("{{ b }}{{ a }}");
        const char *rn[3];
        size_t rl[3];
        if (p && q && tpl_program_reads(p, rn, rl, 3) == 3) {
            uint32_t which[2] = { 1, 0 }; /* (b, a: reads are in the order names were first met) */
            tpl_val vals[2], st;
            CHECK(tpl_val_str(r, "B", 1, 0, &vals[0]) == TPL_OK && tpl_val_str(r, "A", 1, 0, &vals[1]) == TPL_OK &&
                  tpl_render_set_state_reads(r, p, which, vals, 2) == TPL_OK, "state_reads: set ab");
            CHECK(strcmp(render(r, p, b1, sizeof b1), "AB") == 0, "state_reads: ab: %s", b1);
            CHECK(strcmp(render(r, q, b1, sizeof b1), "BA") == 0, "state_reads: other program: %s", b1);
            tpl_str_entry e[3] = { { "a", 1, tpl_val_key_hash("a", 1), vals[1] },
                                   { "b", 1, tpl_val_key_hash("b", 1), vals[0] },
                                   { "z", 1, tpl_val_key_hash("z", 1), vals[1] } };
            CHECK(tpl_render_reset_state(r) == TPL_OK && tpl_val_str(r, "A", 1, 0, &e[0].val) == TPL_OK &&
                  tpl_val_str(r, "B", 1, 0, &e[1].val) == TPL_OK && tpl_val_str(r, "Z", 1, 0, &e[2].val) == TPL_OK &&
                  tpl_val_map_of_str(r, e + 1, 2, 0, &st) == TPL_OK && tpl_render_set_state_val(r, st) == TPL_OK,
                  "state_reads: map state after");
            CHECK(strcmp(render(r, p, b1, sizeof b1), "BZ") == 0, "state_reads: map state after: %s", b1);
        }
        tpl_render_reset_state(r);
        tpl_program_free(p);
        tpl_program_free(q);
    }
    tpl_render_free(r);
    tpl_render_free(m);
}

/* Python's mutating methods (issue 14): a render changes the JSON state's lists and dicts in place
 * (its later reads and every alias see it), and the next render on the context sees the state as
 * it was given, also after a render that failed midway; a host's values (tpl_render_set_state_val:
 * a Python list passed in, which Jinja2 would change) are a located error naming them. */
static void test_mutate_state(void)
{
    const char *src = "{{ xs.append(3) }}{{ xs }}{{ d.update(b=2) }}{{ d.b }}{{ d }}{% for x in xs %}{{ x }}{% endfor %}{{ d.a }}";
    const char *bad = "{{ xs.append(9) }}{{ d.pop('a') }}{{ d.update(z=1) }}{{ [].pop() }}";
    const char *js = "{\"xs\":[1,2],\"d\":{\"a\":1}}";
    const char *want = "None[1, 2, 3]None2{'a': 1, 'b': 2}1231"; /* (Jinja2 3.1's, from the oracle) */
    tpl_program *p = NULL, *pb = NULL;
    tpl_error err = { 0 };
    CHECK(tpl_compile("mut.jinja", src, strlen(src), NULL, &p, &err) == TPL_OK, "mutate: compile");
    tpl_error_clear(&err);
    CHECK(tpl_compile("bad.jinja", bad, strlen(bad), NULL, &pb, &err) == TPL_OK, "mutate: compile bad");
    tpl_error_clear(&err);
    tpl_render *r = tpl_render_new(NULL);
    char buf[256];
    if (!p || !pb || !r) goto done;
    CHECK(tpl_render_set_state_json(r, js, strlen(js)) == TPL_OK, "mutate: state");
    for (int rep = 0; rep < 3; rep++) {
        CHECK(strcmp(render(r, p, buf, sizeof buf), want) == 0, "mutate: render %d: %s", rep, buf);
        CHECK(strncmp(render(r, pb, buf, sizeof buf), "ERR", 3) == 0 && strstr(buf, "pop from empty list"),
              "mutate: failing render %d: %s", rep, buf);
    }
    /* the host's values */
    tpl_val items[2] = { tpl_val_int(1), tpl_val_int(2) }, xs = tpl_val_none(), d = tpl_val_none(), st = tpl_val_none();
    CHECK(tpl_val_list_of(r, items, 2, 0, &xs) == TPL_OK && tpl_val_map(r, 2, &d) == TPL_OK &&
          tpl_val_map_add_str(r, d, "a", 1, tpl_val_key_hash("a", 1), 0, tpl_val_int(1)) == TPL_OK, "mutate: host values");
    tpl_str_entry e[2] = { { "xs", 2, tpl_val_key_hash("xs", 2), xs }, { "d", 1, tpl_val_key_hash("d", 1), d } };
    CHECK(tpl_val_map_of_str(r, e, 2, 0, &st) == TPL_OK && tpl_render_set_state_val(r, st) == TPL_OK, "mutate: host state");
    CHECK(strncmp(render(r, p, buf, sizeof buf), "ERR", 3) == 0 && strstr(buf, "list.append on a list the host passed in"),
          "mutate: host list: %s", buf);
    /* a JSON state again: changed for one render */
    CHECK(tpl_render_set_state_json(r, js, strlen(js)) == TPL_OK, "mutate: state again");
    CHECK(strcmp(render(r, p, buf, sizeof buf), want) == 0, "mutate: render after host: %s", buf);
done:
    tpl_render_free(r);
    tpl_program_free(p);
    tpl_program_free(pb);
}

int main(void)
{
    test_null_args();
    test_error_kinds();
    test_reentrancy();
    test_utf8();
    test_catalog_rows();
    test_remembered();
    test_native_state();
    test_native_direct();
    test_native_find_flags();
    test_vm_kept();
    test_state_reads();
    test_mutate_state();
    printf("%d passed, %d failed\n", npass, nfail);
    return nfail ? 1 : 0;
}
