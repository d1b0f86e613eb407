/* libFuzzer target: compile arbitrary bytes as a Python format string (plain options and the
 * pinecall profile), disassemble what compiles and render it against a fixed state, once bare and
 * once through the public translation API (a catalog, a render language and tr_keys fields), so
 * the whole-template and tr_keys catalog lookups run too. Any crash, leak, hang or sanitizer
 * report is a finding. */
#include <stdint.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>
#include "tpl.h"

static const char state[] =
    "{\"name\": \"Ada\", \"place\": \"Tokyo\", \"n\": 42, \"x\": 3.25, \"neg\": -7, \"xs\": [1, \"b\", null],"
    " \"d\": {\"k\": \"v\", \"0\": 1}, \"t\": true, \"z\": null}";
static const char catalog[] =
    "{\"main_lang\": \"en\", \"zz\": {\"Hello, {name}! Welcome to {place}\": \"HEY, {name}! GO {place}\","
    " \"Tokyo\": \"TOKIO\", \"{n} items\": \"{n} cosas\", \"Ada\": \"ADA\"}}";

/* Renders p once; with translation, sets up the catalog, language and tr_keys first. */
static void render(const tpl_program *p, const tpl_limits *lim, int translate)
{
    tpl_render *r = tpl_render_new(lim);
    if (!r) return;
    tpl_render_set_state_json(r, state, sizeof state - 1);
    if (translate) {
        tpl_render_add_catalog_json(r, catalog, sizeof catalog - 1);
        tpl_render_set_lang(r, "zz");
        tpl_render_add_tr_key(r, "place", 5);
        tpl_render_add_tr_key(r, "name", 4);
        tpl_render_add_tr_key(r, "n", 1);
    }
    const char *out;
    size_t n;
    if (tpl_render_run(r, p, &out, &n) != TPL_OK) {
        char *msg = tpl_error_format(tpl_render_error(r));
        free(msg);
    }
    tpl_render_free(r);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    tpl_limits lim = { 0 };
    lim.fuel = 200000;
    lim.max_output = 1 << 16;  /* 64 KiB: widths in the millions hit the limit at once, not after megabytes */
    lim.max_memory = 2 << 20;
    for (int i = 0; i < 2; i++) {
        tpl_options o = { 0 };
        o.syntax = TPL_SYNTAX_FMT;
        if (i == 1 && tpl_options_profile(&o, TPL_SYNTAX_FMT, "pinecall") != TPL_OK) continue;
        tpl_program *p = NULL;
        tpl_error err = { 0 };
        if (tpl_compile("fuzz.fmt", (const char *)data, size, &o, &p, &err) != TPL_OK) {
            char *msg = tpl_error_format(&err);
            free(msg);
            tpl_error_clear(&err);
            continue;
        }
        char *dis = tpl_disassemble(p);
        free(dis);
        render(p, &lim, 0);
        render(p, &lim, 1);
        tpl_program_free(p);
    }
    return 0;
}
