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

int main(void)
{
    test_remembers();
    printf("%d passed, %d failed\n", npass, nfail);
    return nfail ? 1 : 0;
}
