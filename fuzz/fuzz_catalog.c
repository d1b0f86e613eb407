/* libFuzzer target: arbitrary bytes as a translation catalog (tpl_render_add_catalog_json), then
 * tr lookups: a Jinja template of exact, pattern and explicit-language tr() calls and a format
 * string with tr_keys, rendered under several languages. Invalid catalogs must be rejected with
 * an error; any catalog that loads must serve lookups without crashing. */
#include <stdint.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>
#include "tpl.h"

static const char state[] = "{\"name\": \"Ada\", \"place\": \"Tokyo\", \"n\": 3}";
static const char jinja[] =
    "{{ tr('Hello') }}|{{ tr('Hello, Ana!') }}|{{ tr('Good morning', lang='es') }}|{{ 'Tokyo'|tr }}"
    "|{{ tr('Hello, ' ~ name ~ '!') }}|{{ tr(n) }}|{{ tr('a{b}c') }}|{{ tr('') }}|{{ tr('x', lang='') }}";
static const char fmt[] = "Hello, {name}! Welcome to {place}";

/* Compiled once: programs are immutable and shared by renders; the input is the catalog. */
static tpl_program *pj, *pf;

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
    (void)argc;
    (void)argv;
    tpl_options oj = { 0 }, of = { 0 };
    of.syntax = TPL_SYNTAX_FMT;
    if (tpl_compile("cat.jinja", jinja, sizeof jinja - 1, &oj, &pj, NULL) != TPL_OK) abort();
    if (tpl_compile("cat.fmt", fmt, sizeof fmt - 1, &of, &pf, NULL) != TPL_OK) abort();
    return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    static const char *const langs[] = { NULL, "en", "es", "zz", "main_lang" };
    tpl_limits lim = { 0 };
    lim.fuel = 200000;
    lim.max_output = 1 << 20;
    lim.max_memory = 16 << 20;
    tpl_render *r = tpl_render_new(&lim);
    if (r && tpl_render_set_state_json(r, state, sizeof state - 1) == TPL_OK) {
        if (tpl_render_add_catalog_json(r, (const char *)data, size) != TPL_OK) {
            char *msg = tpl_error_format(tpl_render_error(r));
            free(msg);
        } else {
            tpl_render_add_tr_key(r, "place", 5);
            tpl_render_add_tr_key(r, "name", 4);
            for (size_t i = 0; i < sizeof langs / sizeof *langs; i++) {
                if (langs[i] && tpl_render_set_lang(r, langs[i]) != TPL_OK) continue;
                const char *out;
                size_t n;
                tpl_render_run(r, pj, &out, &n);
                tpl_render_run(r, pf, &out, &n);
            }
        }
    }
    tpl_render_free(r);
    return 0;
}
