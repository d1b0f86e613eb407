/* A compiled program is immutable and may be rendered by many threads at once (DESIGN.md §6):
 * THREADS threads, each with its own tpl_render, render one shared program (loaded from .tplb
 * bytes, so the loaded form is what is shared) ROUNDS times and compare with a reference render.
 *
 * A second program names its templates by values (issue 14: {% include name %}): the threads'
 * renders load and compile them through their loaders into the program's shared cache at once.
 *
 * Each thread also compiles and renders an ERB template with regular expressions of its own, all at
 * once before any other regex of the process: Oniguruma's one-time set-up raced when two threads
 * compiled their first regex together (DRD; libonig is not instrumented, so TSan cannot see
 * it; helgrind does not follow pthread_once: `valgrind --tool=drd build/tests/test_threads`).
 *
 * Under ThreadSanitizer:
 *   meson setup build-tsan -Db_sanitize=thread -Db_lundef=false && ninja -C build-tsan &&
 *   meson test -C build-tsan threads
 * Prints "N passed, N failed"; exit status 1 on any mismatch. */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "tpl.h"

#define THREADS 8
#define ROUNDS 200

static const char SRC[] =
    "{% macro item(x, i) %}{{ i }}. {{ x|title }}{% endmacro %}"
    "Caller: {{ caller.name }} ({{ caller.phone }})\n"
    "{% for x in slots %}{{ item(x, loop.index) }}{% if not loop.last %}; {% endif %}{% endfor %}\n"
    "{{ slots|map('upper')|join(',') }} {{ slots|length * 3 }} {{ {'k': slots}|tojson }}\n"
    "{% if remembers('prefers mornings') %}prefers mornings{% endif %}";
static const char STATE[] =
    "{\"caller\": {\"name\": \"Ana\", \"phone\": \"+34 600\"}, \"slots\": [\"mon 9:00\", \"tue 10:30\", \"fri 16:00\"]}";

/* the templates the dynamic program loads (a loader over this table; names computed at render time) */
static const char *const FILES[][2] = {
    { "a.j2", "A({{ x }}{% include 'c.j2' %})" },
    { "b.j2", "B({{ x * 2 }}{% include inner %})" },
    { "c.j2", "C" },
};
static const char DSRC[] = "{% for x in [1, 2, 3] %}{% for n in names %}{% include n %}{% endfor %}{% endfor %}"
                           "{% include ['nope.j2', inner] %}{% include 'zz' ~ x ignore missing %}";
static const char DSTATE[] = "{\"names\": [\"a.j2\", \"b.j2\"], \"inner\": \"c.j2\"}";
static const char DWANT[] = "A(1C)B(2C)A(2C)B(4C)A(3C)B(6C)C";
static const char ESRC[] = "<%= 'abc-def'.gsub(/[a-c]+/) { |m| m.upcase } %><%= 'x1y2' =~ /\\d/ %><%= 'a,b;c'.split(/[,;]/).join('|') %>";
static const char EWANT[] = "ABC-def1a|b|c";

static char *table_loader(void *data, const char *name, size_t name_len, size_t *len)
{
    (void)data;
    for (size_t i = 0; i < sizeof FILES / sizeof *FILES; i++)
        if (strlen(FILES[i][0]) == name_len && memcmp(FILES[i][0], name, name_len) == 0) {
            *len = strlen(FILES[i][1]);
            return strdup(FILES[i][1]);
        }
    return NULL;
}

typedef struct job {
    const tpl_program *p, *dyn;
    const char *want;
    int mismatches;
} job;

static void *worker(void *arg)
{
    job *j = arg;
    tpl_options eo;
    memset(&eo, 0, sizeof eo);
    eo.syntax = TPL_SYNTAX_ERB;
    tpl_program *ep = NULL;
    tpl_error eerr = { 0 };
    if (tpl_compile("regex.erb", ESRC, strlen(ESRC), &eo, &ep, &eerr) != TPL_OK) { j->mismatches = -1; return NULL; }
    tpl_render *e = tpl_render_new(NULL);
    const char *eout;
    size_t en;
    if (!e || tpl_render_run(e, ep, &eout, &en) != TPL_OK || strcmp(eout, EWANT) != 0) j->mismatches++;
    tpl_render_free(e);
    tpl_program_free(ep);
    tpl_render *r = tpl_render_new(NULL);
    if (!r || tpl_render_set_state_json(r, STATE, strlen(STATE)) != TPL_OK) { j->mismatches = -1; return NULL; }
    tpl_render_add_fact(r, "the patient prefers mornings", 28);
    for (int i = 0; i < ROUNDS; i++) {
        const char *out;
        size_t n;
        if (tpl_render_run(r, j->p, &out, &n) != TPL_OK || strcmp(out, j->want) != 0) j->mismatches++;
    }
    tpl_render *d = tpl_render_new(NULL);
    if (!d || tpl_render_set_state_json(d, DSTATE, strlen(DSTATE)) != TPL_OK) { j->mismatches = -1; return NULL; }
    tpl_render_set_loader(d, table_loader, NULL);
    for (int i = 0; i < ROUNDS; i++) {
        const char *out;
        size_t n;
        if (tpl_render_run(d, j->dyn, &out, &n) != TPL_OK || strcmp(out, DWANT) != 0) j->mismatches++;
    }
    tpl_render_free(d);
    tpl_render_free(r);
    return NULL;
}

int main(void)
{
    int pass = 0, fail = 0;
    tpl_program *src = NULL, *p = NULL;
    tpl_error err = { 0 };
    if (tpl_compile("threads.jinja", SRC, strlen(SRC), NULL, &src, &err) != TPL_OK) {
        fprintf(stderr, "compile: %s\n", err.message);
        return 1;
    }
    void *bytes;
    size_t len;
    if (tpl_program_save(src, 0, &bytes, &len) != TPL_OK || tpl_program_load("threads.tplb", bytes, len, &p, &err) != TPL_OK) {
        fprintf(stderr, "save/load failed\n");
        return 1;
    }
    free(bytes);
    tpl_program *dyn = NULL;
    if (tpl_compile("dyn.jinja", DSRC, strlen(DSRC), NULL, &dyn, &err) != TPL_OK || !tpl_program_needs_loader(dyn) ||
        tpl_program_needs_loader(p)) {
        fprintf(stderr, "compile dyn: %s\n", err.message ? err.message : "needs_loader");
        return 1;
    }
    tpl_render *r = tpl_render_new(NULL);
    tpl_render_set_state_json(r, STATE, strlen(STATE));
    tpl_render_add_fact(r, "the patient prefers mornings", 28);
    const char *out;
    size_t n;
    if (tpl_render_run(r, p, &out, &n) != TPL_OK) {
        fprintf(stderr, "render: %s\n", tpl_render_error(r)->message);
        return 1;
    }
    char *want = strdup(out);
    tpl_render_free(r);
    job jobs[THREADS];
    pthread_t th[THREADS];
    for (int i = 0; i < THREADS; i++) {
        jobs[i] = (job){ i % 2 ? p : src, dyn, want, 0 };
        if (pthread_create(&th[i], NULL, worker, &jobs[i]) != 0) { fprintf(stderr, "pthread_create failed\n"); return 1; }
    }
    for (int i = 0; i < THREADS; i++) {
        pthread_join(th[i], NULL);
        if (jobs[i].mismatches == 0) pass++;
        else { fail++; fprintf(stderr, "thread %d: %d mismatching renders\n", i, jobs[i].mismatches); }
    }
    free(want);
    tpl_program_free(dyn);
    tpl_program_free(p);
    tpl_program_free(src);
    printf("%d passed, %d failed\n", pass, fail);
    return fail ? 1 : 0;
}
