/* Host extension points of the public API (issue 6, DESIGN.md §6): the host remembers
 * callback, host filters and global functions, the allocator hook and the program's
 * dependency list. Prints "N passed, N failed"; exit status 1 on any failure. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "tpl.h"

static int npass, nfail;

#define CHECK(cond, ...)                                                 \
    do {                                                                 \
        if (cond) npass++;                                               \
        else { nfail++; fprintf(stderr, "FAIL %s:%d: ", __FILE__, __LINE__); \
               fprintf(stderr, __VA_ARGS__); fputc('\n', stderr); }      \
    } while (0)

static tpl_program *compile(const char *name, const char *src, const tpl_options *o)
{
    tpl_program *p = NULL;
    tpl_error err = { 0 };
    if (tpl_compile(name, src, strlen(src), o, &p, &err) != TPL_OK) {
        fprintf(stderr, "compile %s: %s\n", name, err.message);
        tpl_error_clear(&err);
        return NULL;
    }
    return p;
}

/* Renders p with r; returns a static copy of the output, or "ERR:<message>". */
static const char *render(tpl_render *r, const tpl_program *p)
{
    static char buf[4096];
    const char *out;
    size_t n;
    if (!p) return "NOPROGRAM";
    if (tpl_render_run(r, p, &out, &n) != TPL_OK) snprintf(buf, sizeof buf, "ERR:%s", tpl_render_error(r)->message);
    else snprintf(buf, sizeof buf, "%s", out);
    return buf;
}

/* ------------------------------------------------------------------ remembers */

typedef struct store {
    const char *facts[4];
    int calls;
    char last[64];
} store;

static int store_remembers(void *data, const char *words, size_t len)
{
    store *s = data;
    s->calls++;
    snprintf(s->last, sizeof s->last, "%.*s", (int)len, words);
    if (len == 4 && memcmp(words, "FAIL", 4) == 0) return -1;
    for (int i = 0; i < 4 && s->facts[i]; i++)
        if (strlen(s->facts[i]) == len && memcmp(s->facts[i], words, len) == 0) return 1;
    return 0;
}

static void test_remembers(void)
{
    store s = { { "prefers mornings", "caf\xc3\xa9" }, 0, "" };
    tpl_program *j = compile("r.jinja", "{{ remembers('prefers mornings') }} {{ remembers('dogs') }} "
                                        "{{ remembers('cafe\xcc\x81') }}", NULL);
    tpl_options eo = { .syntax = TPL_SYNTAX_ERB };
    tpl_program *e = compile("r.erb", "<%= remembers?('prefers mornings') %> <%= remembers('dogs') %>", &eo);
    tpl_program *f = compile("f.jinja", "ok\n  {{ remembers('FAIL') }}", NULL);
    tpl_render *r = tpl_render_new(NULL);
    tpl_render_add_fact(r, "dogs are fine", 13);  /* ignored while the callback is set */
    tpl_render_set_remembers(r, store_remembers, &s);
    CHECK(strcmp(render(r, j), "True False True") == 0, "jinja remembers: %s", render(r, j));
    CHECK(strcmp(s.last, "caf\xc3\xa9") == 0, "words are NFC-normalised: %s", s.last);
    CHECK(strcmp(render(r, e), "true false") == 0, "erb remembers: %s", render(r, e));
    int before = s.calls;
    CHECK(tpl_render_run(r, f, &(const char *){ 0 }, &(size_t){ 0 }) == TPL_ERR_RAISED, "failure status");
    const tpl_error *err = tpl_render_error(r);
    CHECK(s.calls == before + 1, "callback called once");
    CHECK(err->message && strstr(err->message, "host function 'remembers'") != NULL, "message: %s", err->message);
    CHECK(err->line == 2 && err->column == 15, "located at 2:15, got %u:%u", err->line, err->column);
    /* unset: back to the facts */
    tpl_render_set_remembers(r, NULL, NULL);
    CHECK(strcmp(render(r, j), "False True False") == 0, "facts again: %s", render(r, j));
    tpl_render_free(r);
    tpl_program_free(j);
    tpl_program_free(e);
    tpl_program_free(f);
}

/* ------------------------------------------------------------------ host functions */

/* shout: the subject's JSON text and the keyword arguments, as a string */
static int h_shout(void *data, tpl_host_call *call)
{
    char buf[512];
    snprintf(buf, sizeof buf, "%s%s%s", (const char *)data, call->args_json, call->kwargs_json);
    return tpl_host_return_str(call, buf, strlen(buf)) == TPL_OK ? 0 : -1;
}

/* patient(id): a JSON object from the host's records */
static int h_patient(void *data, tpl_host_call *call)
{
    (void)data;
    if (strcmp(call->args_json, "[7]") == 0) {
        const char *j = "{\"name\": \"Ana\", \"slots\": [1, 2]}";
        return tpl_host_return_json(call, j, strlen(j)) == TPL_OK ? 0 : -1;
    }
    tpl_host_fail(call, "no such patient");
    return 1;
}

static int h_badjson(void *data, tpl_host_call *call)
{
    (void)data;
    tpl_host_return_json(call, "{oops", 5);
    return 0;
}

static void test_host_funcs(void)
{
    const tpl_host_func table[] = {
        { "shout", TPL_HOST_FILTER, h_shout, ">" },
        { "patient", TPL_HOST_GLOBAL, h_patient, NULL },
        { "badjson", TPL_HOST_GLOBAL, h_badjson, NULL },
        { "upper", TPL_HOST_FILTER, h_shout, "U" },   /* overrides the builtin */
    };
    tpl_options o = { .host_funcs = table, .nhost_funcs = 4 };
    tpl_program *j = compile("h.jinja",
                             "{{ 'hi'|shout }} {{ [1, none, 'x']|shout(2, sep='-') }} {{ patient(7).name }} "
                             "{{ patient(7).slots|sum }} {{ 'a'|upper }} {{ undefined_var|shout }}", &o);
    tpl_options eo = { .syntax = TPL_SYNTAX_ERB, .host_funcs = table, .nhost_funcs = 4 };
    tpl_program *e = compile("h.erb", "<%= patient(7)['name'] %> <% patient(7) %><%= patient(7)[\"slots\"].size %>", &eo);
    tpl_program *fail = compile("fail.jinja", "a\n{{ patient(8) }}", &o);
    tpl_program *bad = compile("bad.jinja", "{{ badjson() }}", &o);
    tpl_program *mac = compile("mac.jinja", "{% macro m() %}{% endmacro %}{{ m|shout }}", &o);
    CHECK(j && e && fail && bad && mac, "compiles with host functions");

    /* resolved at compile time: unknown names are still compile errors; host names without the table too */
    tpl_program *p = NULL;
    tpl_error err = { 0 };
    CHECK(tpl_compile("u.jinja", "{{ 1|nosuch }}", 14, &o, &p, &err) == TPL_ERR_SYNTAX && strstr(err.message, "No filter named 'nosuch'"),
          "unknown filter is a compile error");
    tpl_error_clear(&err);
    CHECK(tpl_compile("u.jinja", "{{ 1|shout }}", 13, NULL, &p, &err) == TPL_ERR_SYNTAX, "host filter needs the table");
    tpl_error_clear(&err);
    tpl_program *q = NULL;
    /* ERB, as Ruby: an unknown method is a NoMethodError when the call runs (a branch that never runs renders) */
    CHECK(tpl_compile("u.erb", "<%= patient(1) %>", 17, &(tpl_options){ .syntax = TPL_SYNTAX_ERB }, &q, &err) == TPL_OK,
          "ERB host function without the table compiles");
    tpl_error_clear(&err);
    if (q) {
        tpl_render *ur = tpl_render_new(NULL);
        CHECK(strstr(render(ur, q), "ERR:undefined method `patient' for main:Object (NoMethodError)") != NULL,
              "ERB host function without the table: NoMethodError when it runs");
        tpl_render_free(ur);
        tpl_program_free(q);
        q = NULL;
    }
    CHECK(tpl_program_options(j)->host_funcs == NULL, "options do not keep the borrowed table");

    /* the program records its host functions */
    tpl_host_func rec[8];
    size_t n = tpl_program_host_functions(j, rec, 8);
    CHECK(n == 3 && strcmp(rec[0].name, "shout") == 0 && rec[0].kind == TPL_HOST_FILTER &&
          strcmp(rec[1].name, "patient") == 0 && rec[1].kind == TPL_HOST_GLOBAL && strcmp(rec[2].name, "upper") == 0,
          "tpl_program_host_functions: %zu", n);

    tpl_render *r = tpl_render_new(NULL);
    /* not bound: a located error */
    CHECK(strcmp(render(r, j), "ERR:no host filter named 'shout' in this render context") == 0, "unbound: %s", render(r, j));
    CHECK(tpl_render_error(r)->status == TPL_ERR_UNDEFINED && tpl_render_error(r)->line == 1 && tpl_render_error(r)->column == 9,
          "unbound is located: %u:%u", tpl_render_error(r)->line, tpl_render_error(r)->column);
    tpl_render_set_host_funcs(r, table, 4);
    const char *want = ">[\"hi\"]{} >[[1, null, \"x\"], 2]{\"sep\": \"-\"} Ana 3 U[\"a\"]{} >[null]{}";
    CHECK(strcmp(render(r, j), want) == 0, "jinja host functions: %s", render(r, j));
    CHECK(strcmp(render(r, e), "Ana 2") == 0, "erb host function: %s", render(r, e));
    CHECK(strcmp(render(r, fail), "ERR:host function 'patient' failed: no such patient") == 0, "failure: %s", render(r, fail));
    CHECK(tpl_render_error(r)->status == TPL_ERR_RAISED && tpl_render_error(r)->line == 2, "failure status and line");
    CHECK(strncmp(render(r, bad), "ERR:host function 'badjson' failed: invalid result JSON", 55) == 0, "bad json: %s", render(r, bad));
    CHECK(strcmp(render(r, mac), "ERR:host filter 'shout': an argument cannot be passed as JSON") == 0 ||
          strncmp(render(r, mac), "ERR:host function 'shout'", 25) == 0, "macro argument: %s", render(r, mac));
    CHECK(tpl_render_error(r)->status == TPL_ERR_TYPE, "macro argument is a type error");

    /* strict: an undefined argument is the undefined error */
    tpl_options so = o;
    so.strict = true;
    tpl_program *st = compile("s.jinja", "{{ nothing|shout }}", &so);
    CHECK(strncmp(render(r, st), "ERR:'nothing' is undefined", 26) == 0, "strict undefined: %s", render(r, st));

    /* .tplb and static data keep the host calls */
    void *bytes;
    size_t len;
    tpl_program *lj = NULL;
    CHECK(tpl_program_save(j, 0, &bytes, &len) == TPL_OK && tpl_program_load("h.tplb", bytes, len, &lj, &err) == TPL_OK,
          "save/load with host calls");
    free(bytes);
    CHECK(lj && strcmp(render(r, lj), want) == 0, "loaded program renders the same");
    CHECK(lj && tpl_program_host_functions(lj, NULL, 0) == 3, "loaded program records the host functions");
    char *csrc;
    CHECK(tpl_program_emit_c(j, "hosty", 0, &csrc, &len) == TPL_OK && strstr(csrc, "\"patient\"") != NULL, "emit c");
    free(csrc);
    char *dis = tpl_disassemble(j);
    CHECK(dis && strstr(dis, "HOST_FILTER") && strstr(dis, "HOST_CALL"), "disassembly names the host opcodes");
    free(dis);

    tpl_render_set_host_funcs(r, NULL, 0);
    CHECK(strncmp(render(r, e), "ERR:no host function named 'patient'", 36) == 0, "unbound again: %s", render(r, e));
    tpl_render_free(r);
    tpl_program_free(j);
    tpl_program_free(e);
    tpl_program_free(fail);
    tpl_program_free(bad);
    tpl_program_free(mac);
    tpl_program_free(st);
    tpl_program_free(lj);
}

/* ------------------------------------------------------------------ allocator */

typedef struct counting {
    size_t allocs, reallocs, frees, live_bytes, budget; /* budget: bytes allowed (0 = any) */
} counting;

static void *c_alloc(void *data, size_t size)
{
    counting *c = data;
    if (c->budget && c->live_bytes + size > c->budget) return NULL;
    c->allocs++;
    c->live_bytes += size;
    return malloc(size);
}

static void *c_realloc(void *data, void *ptr, size_t old_size, size_t new_size)
{
    counting *c = data;
    if (c->budget && c->live_bytes - old_size + new_size > c->budget) return NULL;
    void *p = realloc(ptr, new_size);
    if (!p) return NULL;
    c->reallocs++;
    c->live_bytes = c->live_bytes - old_size + new_size;
    return p;
}

static void c_free(void *data, void *ptr, size_t size)
{
    counting *c = data;
    c->frees++;
    c->live_bytes -= size;
    free(ptr);
}

static void test_allocator(void)
{
    counting cnt = { 0 };
    tpl_allocator al = { c_alloc, c_realloc, c_free, &cnt };
    tpl_program *p = compile("a.jinja",
                             "{% for i in range(n) %}{{ i }}: {{ ('x' ~ i)|upper }} {{ [i, i * 2]|tojson }}\n{% endfor %}"
                             "{{ remembers('z') }}", NULL);
    tpl_render *r = tpl_render_new_with(NULL, &al);
    CHECK(r != NULL, "tpl_render_new_with");
    size_t base = cnt.allocs;
    CHECK(base >= 4, "the context, stack, slots and output come from the allocator (%zu)", base);
    const char *state = "{\"n\": 3000}";
    CHECK(tpl_render_set_state_json(r, state, strlen(state)) == TPL_OK, "state");
    tpl_render_add_fact(r, "zz", 2);
    const char *out;
    size_t n;
    CHECK(tpl_render_run(r, p, &out, &n) == TPL_OK && n > 50000, "first render");
    CHECK(cnt.allocs > base + 1 && cnt.reallocs > 0, "arena chunks and output growth use the allocator (%zu, %zu)",
          cnt.allocs, cnt.reallocs);
    tpl_render_run(r, p, &out, &n);  /* the arena settles into one chunk */
    size_t a = cnt.allocs, re = cnt.reallocs, f = cnt.frees;
    for (int i = 0; i < 5; i++) CHECK(tpl_render_run(r, p, &out, &n) == TPL_OK, "steady render");
    CHECK(cnt.allocs == a && cnt.reallocs == re && cnt.frees == f, "steady state allocates nothing (%zu/%zu/%zu -> %zu/%zu/%zu)",
          a, re, f, cnt.allocs, cnt.reallocs, cnt.frees);
    tpl_render_free(r);
    CHECK(cnt.live_bytes == 0 && cnt.allocs == cnt.frees, "everything returned (%zu live, %zu allocs, %zu frees)",
          cnt.live_bytes, cnt.allocs, cnt.frees);

    /* a budget the render outgrows: a clean error, then everything is returned */
    counting small = { .budget = 600000 };
    tpl_allocator sal = { c_alloc, c_realloc, c_free, &small };
    r = tpl_render_new_with(NULL, &sal);
    CHECK(r != NULL, "context within the budget");
    if (r) {
        const char *big = "{\"n\": 200000}";
        tpl_render_set_state_json(r, big, strlen(big));
        tpl_status st = tpl_render_run(r, p, &out, &n);
        CHECK(st == TPL_ERR_LIMIT || st == TPL_ERR_NOMEM, "over budget fails cleanly: %d %s", st, tpl_render_error(r)->message);
        tpl_render_free(r);
    }
    CHECK(small.live_bytes == 0 && small.allocs == small.frees, "over budget: everything returned");
    counting none = { .budget = 16 };
    tpl_allocator nal = { c_alloc, c_realloc, c_free, &none };
    CHECK(tpl_render_new_with(NULL, &nal) == NULL && none.live_bytes == 0, "allocation failure in new_with");
    CHECK(tpl_render_new_with(NULL, &(tpl_allocator){ c_alloc, NULL, c_free, &none }) == NULL, "incomplete allocator");
    tpl_program_free(p);
}

/* tpl_render_set_state_file: the same state as from text, the same errors with line and column. */
static void test_state_file(void)
{
    tpl_program *p = compile("s.jinja", "{{ a.b[1] }} {{ s }} {{ xs | length }}", NULL);
    tpl_render *r = tpl_render_new(NULL);
    const char *out;
    size_t n;
    FILE *f = tmpfile();
    fputs("{\"a\": {\"b\": [1, \"two\"]}, \"s\": \"caf\u00e9\", \"xs\": [[], {}, null]}\n", f);
    rewind(f);
    CHECK(tpl_render_set_state_file(r, f) == TPL_OK, "state from a file");
    CHECK(tpl_render_run(r, p, &out, &n) == TPL_OK && strcmp(out, "two caf\xc3\xa9 3") == 0, "rendered: %s", out);
    fclose(f);
    f = tmpfile();
    fputs("{\"a\": 1,\n  \"b\": }", f);
    rewind(f);
    CHECK(tpl_render_set_state_file(r, f) == TPL_ERR_STATE, "invalid JSON");
    const tpl_error *e = tpl_render_error(r);
    CHECK(e->line == 2 && e->column == 8, "located at 2:8 (%u:%u)", e->line, e->column);
    fclose(f);
    f = tmpfile();
    fputs("[1, 2]", f);
    rewind(f);
    CHECK(tpl_render_set_state_file(r, f) == TPL_ERR_STATE && strstr(tpl_render_error(r)->message, "object"),
          "the top level must be an object");
    fclose(f);
    /* a failed load keeps nothing half-set: the previous good state still renders */
    CHECK(tpl_render_run(r, p, &out, &n) == TPL_OK, "render after failed loads");
    tpl_render_free(r);
    tpl_program_free(p);
}

int main(void)
{
    test_state_file();
    test_remembers();
    test_host_funcs();
    test_allocator();
    printf("%d passed, %d failed\n", npass, nfail);
    return nfail ? 1 : 0;
}
