/* page-bench: a 20-step call of a page (default examples/front-desk), rendered incrementally
 * (tpl_page_call_render: a block is re-rendered only when a value it reads changed) and naively
 * (every block re-rendered every step: the call is reset before each step). Prints, per mode,
 * the time of one whole call (best of 7 runs of many calls), the bytes a framework sends (the
 * changed blocks) against re-sending every block every step, and the time of one step whose
 * state changes only a field no block reads, against one full render of the page.
 *
 *   page-bench [PAGE_DIR] [--check]    --check: exit 1 unless that step costs under 5% of a
 *                                      full render (issue 18)
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include "tpl.h"
#include "tpl_page.h"

#define STEPS 20

static double now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

/* The state of step k (0-based) of the call: most turns change only the turn counter, which no
 * block reads; the stage, the patient, the slots and memory change now and then. */
static int step_state(int k, char *out, size_t cap, bool *fact)
{
    const char *stage = k < 4 ? "identify" : k < 12 ? "schedule" : k < 17 ? "confirm" : "done";
    const char *patient = k < 3 ? "null" : "{\"name\": \"Marta Puig\", \"doctor\": \"Dr. Vidal\"}";
    const char *slots = k < 7 ? "[]"
                        : k < 14 ? "[{\"day\": \"Tuesday\", \"time\": \"09:30\", \"doctor\": \"Dr. Vidal\"}, "
                                   "{\"day\": \"Tuesday\", \"time\": \"12:00\", \"doctor\": null}, "
                                   "{\"day\": \"Thursday\", \"time\": \"16:15\", \"doctor\": \"Dr. Serra\"}]"
                                 : "[{\"day\": \"Tuesday\", \"time\": \"09:30\", \"doctor\": \"Dr. Vidal\"}]";
    *fact = k >= 9;
    return snprintf(out, cap,
                    "{\"today\": \"Monday 30 November\", \"turn\": %d, \"stage\": \"%s\", \"patient\": %s, "
                    "\"slots\": %s, \"last_utterance\": \"turn %d of the caller\"}",
                    k + 1, stage, patient, slots, k + 1);
}

static const char *const FACT = "The patient's usual doctor is Dr. Vidal";

/* One call of STEPS steps; naive: reset before every step. Adds the bytes sent (changed blocks)
 * and the bytes of every block every step. Returns 0 or -1. */
static int one_call(tpl_page_call *c, const tpl_page *pg, const char states[][1024], const bool *facts, bool naive,
                    size_t *sent, size_t *all)
{
    tpl_page_call_reset(c);
    for (int k = 0; k < STEPS; k++) {
        size_t fl = strlen(FACT);
        const char *f = FACT;
        tpl_page_call_set_facts(c, &f, &fl, facts[k] ? 1 : 0);
        if (naive) tpl_page_call_reset(c);
        if (tpl_page_call_render(c, states[k], strlen(states[k])) != TPL_OK) {
            char *m = tpl_error_format(tpl_page_call_error(c));
            fprintf(stderr, "%s", m ? m : "render failed\n");
            free(m);
            return -1;
        }
        for (size_t i = 0; i < tpl_page_block_count(pg); i++) {
            tpl_page_block_result b;
            tpl_page_call_block(c, i, &b);
            if (b.changed) *sent += b.len;
            *all += b.len;
        }
    }
    return 0;
}

/* Best time of one call over 7 runs of n calls each. */
static double time_call(tpl_page_call *c, const tpl_page *pg, const char states[][1024], const bool *facts, bool naive,
                        int n)
{
    double best = 1e9;
    for (int run = 0; run < 7; run++) {
        size_t s = 0, a = 0;
        double t0 = now();
        for (int i = 0; i < n; i++)
            if (one_call(c, pg, states, facts, naive, &s, &a) < 0) return -1;
        double t = (now() - t0) / n;
        if (t < best) best = t;
    }
    return best;
}

int main(int argc, char **argv)
{
    const char *dir = "examples/front-desk";
    bool check = false;
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "--check")) check = true;
        else dir = argv[i];
    }
    tpl_page *pg = NULL;
    tpl_error err = { 0 };
    if (tpl_page_load_dir(dir, &pg, &err) != TPL_OK) {
        char *m = tpl_error_format(&err);
        fprintf(stderr, "%s", m ? m : "cannot load the page\n");
        free(m);
        tpl_error_clear(&err);
        return 2;
    }
    static char states[STEPS][1024];
    bool facts[STEPS];
    for (int k = 0; k < STEPS; k++) step_state(k, states[k], sizeof states[k], &facts[k]);
    tpl_render *r = tpl_render_new(NULL);
    tpl_page_call *c = tpl_page_call_new(pg, r);
    if (!c) return 2;

    size_t sent_inc = 0, all_inc = 0, sent_naive = 0, all_naive = 0;
    if (one_call(c, pg, states, facts, false, &sent_inc, &all_inc) < 0 ||
        one_call(c, pg, states, facts, true, &sent_naive, &all_naive) < 0)
        return 1;
    int n = 200;
    double t_inc = time_call(c, pg, states, facts, false, n);
    double t_naive = time_call(c, pg, states, facts, true, n);

    /* one step that changes only `turn` and `last_utterance` (no block reads them) against a
     * full render of the page (a reset call renders every block) */
    char quiet[1024];
    bool f;
    step_state(12, quiet, sizeof quiet, &f);
    char quiet2[1024];
    memcpy(quiet2, quiet, sizeof quiet);
    char *turn = strstr(quiet2, "\"turn\": 13");
    if (turn) turn[9] = '4'; /* turn 14, same length */
    size_t fl = strlen(FACT);
    const char *fp = FACT;
    tpl_page_call_set_facts(c, &fp, &fl, 1);
    const int m = 20000;
    double best_full = 1e9, best_quiet = 1e9;
    for (int run = 0; run < 7; run++) {
        double t0 = now();
        for (int i = 0; i < m; i++) {
            tpl_page_call_reset(c);
            tpl_page_call_render(c, quiet, strlen(quiet));
        }
        double t = (now() - t0) / m;
        if (t < best_full) best_full = t;
        tpl_page_call_render(c, quiet, strlen(quiet));
        t0 = now();
        for (int i = 0; i < m; i++) tpl_page_call_render(c, (i & 1) ? quiet : quiet2, strlen(quiet));
        t = (now() - t0) / m;
        if (t < best_quiet) best_quiet = t;
    }
    /* the quiet step rendered nothing */
    int rendered = 0;
    for (size_t i = 0; i < tpl_page_block_count(pg); i++) {
        tpl_page_block_result b;
        tpl_page_call_block(c, i, &b);
        rendered += b.rendered;
    }
    double ratio = best_quiet / best_full;
    printf("page %s, %zu blocks, a call of %d steps\n", dir, tpl_page_block_count(pg), STEPS);
    printf("incremental:  %8.2f us per call, %6zu bytes sent (of %zu)\n", t_inc * 1e6, sent_inc, all_inc);
    printf("re-render all:%8.2f us per call, %6zu bytes sent if every block is re-sent every step\n", t_naive * 1e6,
           all_naive);
    printf("time ratio incremental/re-render all: %.3f; bytes sent: %.1f%% of re-sending every block\n",
           t_inc / t_naive, 100.0 * (double)sent_inc / (double)all_naive);
    printf("a step changing nothing the blocks read: %.3f us (%d blocks re-rendered); a full render of the page: "
           "%.3f us; %.2f%%\n",
           best_quiet * 1e6, rendered, best_full * 1e6, 100.0 * ratio);
    tpl_page_call_free(c);
    tpl_render_free(r);
    tpl_page_free(pg);
    if (check && (ratio >= 0.05 || rendered)) {
        fprintf(stderr, "page-bench: the quiet step costs %.2f%% of a full render (limit 5%%)\n", 100.0 * ratio);
        return 1;
    }
    return 0;
}
