/* libFuzzer target: compile arbitrary bytes as an ERB template (plain options and the pinecall
 * profile), disassemble what compiles and render it against a small fixed state with a catalog
 * (so tr() lookups run). Any crash, leak, hang or sanitizer report is a finding. */
#include <stdint.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>
#include "tpl.h"

static const char state[] =
    "{\"name\": \"Ana\", \"n\": 3, \"xs\": [1, 2.5, \"a\", null, true], \"h\": {\"k\": \"v\", \"l\": [1]},"
    " \"s\": \"a-b c\", \"items\": [{\"name\": \"x\", \"qty\": 2}, {\"name\": \"y\", \"qty\": 0}]}";
static const char catalog[] =
    "{\"main_lang\": \"en\", \"es\": {\"Hello\": \"Hola\", \"Hello, {name}!\": \"Hola, {name}!\"}}";

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    tpl_limits lim = { 0 };
    lim.fuel = 200000;          /* keep each input fast */
    lim.max_output = 64 << 10;  /* loops that print or allocate hit a limit soon: under ASan, */
    lim.max_memory = 4 << 20;   /* 16 MiB arenas per input slowed the runs to ~500 exec/s */
    for (int i = 0; i < 2; i++) {
        tpl_options o = { 0 };
        o.syntax = TPL_SYNTAX_ERB;
        if (i == 1 && tpl_options_profile(&o, TPL_SYNTAX_ERB, "pinecall") != TPL_OK) continue;
        tpl_program *p = NULL;
        tpl_error err = { 0 };
        if (tpl_compile("fuzz.erb", (const char *)data, size, &o, &p, &err) != TPL_OK) {
            char *msg = tpl_error_format(&err);
            free(msg);
            tpl_error_clear(&err);
            continue;
        }
        char *dis = tpl_disassemble(p);
        free(dis);
        tpl_render *r = tpl_render_new(&lim);
        if (r) {
            tpl_render_set_state_json(r, state, sizeof state - 1);
            tpl_render_add_catalog_json(r, catalog, sizeof catalog - 1);
            tpl_render_set_lang(r, "es");
            const char *out;
            size_t n;
            if (tpl_render_run(r, p, &out, &n) != TPL_OK) {
                char *msg = tpl_error_format(tpl_render_error(r));
                free(msg);
            }
            tpl_render_free(r);
        }
        tpl_program_free(p);
    }
    return 0;
}
