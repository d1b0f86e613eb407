/* Public-API tests for format-string prompts, catalogs, tr() and the tr-call table (issue 5). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "tpl.h"

static int failures;

#define CHECK(cond) do { if (!(cond)) { fprintf(stderr, "%s:%d: CHECK failed: %s\n", __FILE__, __LINE__, #cond); failures++; } } while (0)

static tpl_program *compile(const char *src, tpl_syntax syn)
{
    tpl_options o = { 0 };
    o.syntax = syn;
    tpl_program *p = NULL;
    tpl_error err = { 0 };
    if (tpl_compile("t", src, strlen(src), &o, &p, &err) != TPL_OK) {
        fprintf(stderr, "compile failed: %s\n", err.message ? err.message : "?");
        tpl_error_clear(&err);
        return NULL;
    }
    return p;
}

static bool renders(tpl_render *r, const tpl_program *p, const char *want)
{
    const char *out;
    size_t n;
    if (tpl_render_run(r, p, &out, &n) != TPL_OK) {
        fprintf(stderr, "render failed: %s\n", tpl_render_error(r)->message);
        return false;
    }
    if (n != strlen(want) || memcmp(out, want, n) != 0) {
        fprintf(stderr, "got '%.*s', want '%s'\n", (int)n, out, want);
        return false;
    }
    return true;
}

static void test_fmt_and_catalogs(void)
{
    tpl_program *p = compile("Hello, {name}! {n:>4}|{n:{w}}|{place}", TPL_SYNTAX_FMT);
    CHECK(p != NULL);
    if (!p) return;
    tpl_render *r = tpl_render_new(NULL);
    const char *state = "{\"name\": \"Ada\", \"n\": 7, \"w\": 3, \"place\": \"Tokyo\"}";
    CHECK(tpl_render_set_state_json(r, state, strlen(state)) == TPL_OK);
    CHECK(renders(r, p, "Hello, Ada!    7|  7|Tokyo"));
    const char *cat = "{\"main_lang\": \"en\", \"zz\": {\"Hello, {name}! {n:>4}|{n:{w}}|{place}\": "
                      "\"HOLA {name} {n:03}|{place}\", \"Tokyo\": \"TOKIO\", \"Hi {x}\": \"Hey {x}\"}}";
    CHECK(tpl_render_add_catalog_json(r, cat, strlen(cat)) == TPL_OK);
    CHECK(renders(r, p, "Hello, Ada!    7|  7|Tokyo")); /* no language yet */
    CHECK(tpl_render_set_lang(r, "zz") == TPL_OK);
    CHECK(renders(r, p, "HOLA Ada 007|Tokyo"));
    CHECK(tpl_render_add_tr_key(r, "place", 5) == TPL_OK);
    CHECK(renders(r, p, "HOLA Ada 007|TOKIO"));
    tpl_render_clear_tr_keys(r);
    CHECK(tpl_render_set_lang(r, NULL) == TPL_OK);
    CHECK(renders(r, p, "Hello, Ada!    7|  7|Tokyo"));
    /* a bad catalog is a located state error; the good one stays */
    CHECK(tpl_render_add_catalog_json(r, "{\"a\": ", 6) == TPL_ERR_STATE);
    CHECK(tpl_render_error(r)->line == 1);
    CHECK(tpl_render_add_catalog_json(r, "[1]", 3) == TPL_ERR_STATE);
    tpl_program_free(p);

    tpl_program *j = compile("{{ tr('Hi Ann') }}/{{ 'Hi Bo'|tr(lang='en') }}/{{ bullet_list(['a', 'b\\nc']) }}",
                             TPL_SYNTAX_JINJA);
    CHECK(j != NULL);
    if (j) {
        CHECK(tpl_render_set_lang(r, "zz") == TPL_OK);
        CHECK(renders(r, j, "Hey Ann/Hi Bo/- a\n- b\n  c"));
        tpl_render_clear_catalogs(r);
        CHECK(renders(r, j, "Hi Ann/Hi Bo/- a\n- b\n  c"));
        tpl_tr_call calls[4];
        CHECK(tpl_program_tr_calls(j, calls, 4) == 2);
        CHECK(calls[0].text && calls[0].len == 6 && memcmp(calls[0].text, "Hi Ann", 6) == 0);
        CHECK(calls[0].line == 1 && calls[0].column == 4);
        tpl_program_free(j);
    }
    tpl_render_free(r);
}

static void test_fmt_errors(void)
{
    static const char *bad[] = { "a {", "a }", "{}", "{0}", "{x!q}", "{x[}", "{x:{y:{z}}}", "{x.}" };
    for (size_t i = 0; i < sizeof bad / sizeof *bad; i++) {
        tpl_options o = { 0 };
        o.syntax = TPL_SYNTAX_FMT;
        tpl_program *p = NULL;
        tpl_error err = { 0 };
        CHECK(tpl_compile("t.fmt", bad[i], strlen(bad[i]), &o, &p, &err) == TPL_ERR_SYNTAX);
        CHECK(p == NULL && err.line == 1 && err.column >= 1);
        tpl_error_clear(&err);
    }
    tpl_program *p = compile("{a[0]} {missing}", TPL_SYNTAX_FMT);
    CHECK(p != NULL);
    if (!p) return;
    tpl_render *r = tpl_render_new(NULL);
    const char *state = "{\"a\": [1]}";
    tpl_render_set_state_json(r, state, strlen(state));
    const char *out;
    size_t n;
    /* str.format's KeyError (issue 16: tests/error_kinds.txt) */
    CHECK(tpl_render_run(r, p, &out, &n) == TPL_ERR_VALUE && tpl_render_error(r)->kind == TPL_EK_KEY);
    CHECK(tpl_render_error(r)->line == 1 && tpl_render_error(r)->column == 8);
    tpl_render_free(r);
    tpl_program_free(p);
}

/* tr(text, elicit="none") (issue 19): accepted in Jinja (global and filter) and ERB, translating
 * as without it; any other value fails (tests/errors/tr-elicit*.expect pin the messages). */
static void test_elicit(void)
{
    const char *cat = "{\"fr\": {\"Hi\": \"Salut\"}}";
    struct { const char *src; tpl_syntax syn; const char *want; } cases[] = {
        { "{{ tr('Hi', elicit='none') }} {{ 'Hi'|tr(elicit='none') }} {{ tr('Hi', 'fr', 'none') }}", TPL_SYNTAX_JINJA,
          "Salut Salut Salut" },
        { "<%= tr('Hi', elicit: 'none') %> <%= tr('Hi') %>", TPL_SYNTAX_ERB, "Salut Salut" },
    };
    for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
        tpl_program *p = compile(cases[i].src, cases[i].syn);
        CHECK(p != NULL);
        if (!p) continue;
        tpl_render *r = tpl_render_new(NULL);
        CHECK(tpl_render_add_catalog_json(r, cat, strlen(cat)) == TPL_OK);
        CHECK(tpl_render_set_lang(r, "fr") == TPL_OK);
        CHECK(renders(r, p, cases[i].want));
        tpl_render_free(r);
        tpl_program_free(p);
    }
    tpl_program *p = compile("{{ tr('Hi', elicit='llm') }}", TPL_SYNTAX_JINJA);
    CHECK(p != NULL);
    if (!p) return;
    tpl_render *r = tpl_render_new(NULL);
    const char *out;
    size_t n;
    /* the TypeError of an unexpected keyword argument, as the oracle's tr() raises */
    CHECK(tpl_render_run(r, p, &out, &n) == TPL_ERR_TYPE && tpl_render_error(r)->kind == TPL_EK_TYPE);
    CHECK(strstr(tpl_render_error(r)->message, "'llm'") != NULL && tpl_render_error(r)->line == 1);
    tpl_render_free(r);
    tpl_program_free(p);
}

int main(void)
{
    test_fmt_and_catalogs();
    test_elicit();
    test_fmt_errors();
    if (failures) fprintf(stderr, "%d failures\n", failures);
    else printf("test_tr: all passed\n");
    return failures ? 1 : 0;
}
