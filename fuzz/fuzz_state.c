/* libFuzzer target: render fixed templates (a Pinecall view and a chat template) against
 * arbitrary bytes as the JSON state. Invalid JSON must be rejected; valid JSON of any shape must
 * render or fail with an error, never crash. */
#include <stdint.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>
#include "tpl.h"

static const char *const templates[] = {
    ("{% if patient %}Name: {{ patient.name }}{% if patient.get('doctor') %} ({{ patient.doctor }}){% endif %}"
    "{% else %}unknown{% endif %}\n{% for s in slots %}{{ loop.index }}. {{ s.day }} {{ s.time|default('?') }}"
    "{% else %}none{% endfor %}{{ stage|upper }}{{ remembers('doctor') }}{{ call.channel }}"),
    ("{% for m in messages %}{% if m.role == 'system' %}<<{{ m.content|trim }}>>{% else %}"
    "[{{ m['role'] }}] {{ m.content ~ '' }}{% endif %}{% if not loop.last %}\n{% endif %}{% endfor %}"
    "{{ messages|length }}{{ messages|tojson }}{{ (messages|map(attribute='role')|list)|join(',') }}"),
    ("{{ x + y }}{{ x * 2 }}{{ x / y }}{{ x // y }}{{ x % y }}{{ x ** 2 }}{{ x ~ y }}{{ x in y }}{{ x[0] }}"
    "{{ x[1:] }}{{ x|string|length }}{{ x|sort|list }}{{ x|dictsort }}{{ x|items|list }}{{ y|int }}{{ y|float }}"),
};

/* Compiled once (LLVMFuzzerInitialize): programs are immutable and shared by renders, and
 * compiling is fuzz_jinja's job; recompiling here per input cost most of each execution. */
#define N_TEMPLATES (sizeof templates / sizeof *templates)
static tpl_program *programs[N_TEMPLATES][2];

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
    (void)argc;
    (void)argv;
    for (size_t i = 0; i < N_TEMPLATES; i++)
        for (int strict = 0; strict < 2; strict++) {
            tpl_options o = { 0 };
            o.strict = strict;
            if (tpl_compile("state.jinja", templates[i], strlen(templates[i]), &o, &programs[i][strict], NULL) != TPL_OK)
                abort();
        }
    return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    tpl_limits lim = { 0 };
    lim.fuel = 200000;
    lim.max_output = 1 << 20;
    lim.max_memory = 16 << 20;
    tpl_render *r = tpl_render_new(&lim);
    if (!r) return 0;
    if (tpl_render_set_state_json(r, (const char *)data, size) == TPL_OK) {
        for (size_t i = 0; i < N_TEMPLATES; i++) {
            for (int strict = 0; strict < 2; strict++) {
                const char *out;
                size_t n;
                tpl_render_run(r, programs[i][strict], &out, &n);
            }
        }
    }
    tpl_render_free(r);
    return 0;
}
