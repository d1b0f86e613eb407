/* A compiled program is immutable and may be rendered by many threads at once (DESIGN.md §6):
 * THREADS threads, each with its own tpl_render, render one shared program (loaded from .tplb
 * bytes, so the loaded form is what is shared) ROUNDS times and compare with a reference render.
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

typedef struct job {
    const tpl_program *p;
    const char *want;
    int mismatches;
} job;

static void *worker(void *arg)
{
    job *j = arg;
    tpl_render *r = tpl_render_new(NULL);
    if (!r || tpl_render_set_state_json(r, STATE, strlen(STATE)) != TPL_OK) { j->mismatches = -1; return NULL; }
    tpl_render_add_fact(r, "the patient prefers mornings", 28);
    for (int i = 0; i < ROUNDS; i++) {
        const char *out;
        size_t n;
        if (tpl_render_run(r, j->p, &out, &n) != TPL_OK || strcmp(out, j->want) != 0) j->mismatches++;
    }
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
        jobs[i] = (job){ i % 2 ? p : src, want, 0 };
        if (pthread_create(&th[i], NULL, worker, &jobs[i]) != 0) { fprintf(stderr, "pthread_create failed\n"); return 1; }
    }
    for (int i = 0; i < THREADS; i++) {
        pthread_join(th[i], NULL);
        if (jobs[i].mismatches == 0) pass++;
        else { fail++; fprintf(stderr, "thread %d: %d mismatching renders\n", i, jobs[i].mismatches); }
    }
    free(want);
    tpl_program_free(p);
    tpl_program_free(src);
    printf("%d passed, %d failed\n", pass, fail);
    return fail ? 1 : 0;
}
