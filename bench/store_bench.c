/* store-bench: loads of a stored prompt by name through the C API (issue 19; bench/RESULTS.md).
 *
 *   store-bench WHERE NAME [N [STATE.json]]    (WHERE: an SQLite path or a postgresql:// URL)
 *
 * Opens the store once, then times N (default 1000) tpl_store_load(NAME) calls (the row, its
 * cached .tplb verified and loaded, its catalogs built) and, separately, N loads each followed by
 * tpl_store_apply and a render of STATE (default {}), and prints the mean microseconds per load. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include "tpl_store.h"

static double now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec + ts.tv_nsec / 1e9;
}

int main(int argc, char **argv)
{
    if (argc < 3) { fprintf(stderr, "usage: store-bench WHERE NAME [N [STATE.json]]\n"); return 2; }
    long n = argc > 3 ? strtol(argv[3], NULL, 10) : 1000;
    if (n < 1) n = 1;
    char *state = NULL;
    size_t slen = 0;
    if (argc > 4) {
        FILE *f = fopen(argv[4], "rb");
        if (!f || fseek(f, 0, SEEK_END) != 0 || (slen = (size_t)ftell(f), fseek(f, 0, SEEK_SET)) != 0 ||
            !(state = malloc(slen + 1)) || fread(state, 1, slen, f) != slen) {
            fprintf(stderr, "store-bench: cannot read %s\n", argv[4]);
            return 2;
        }
        fclose(f);
    }
    tpl_store *s = NULL;
    if (tpl_store_open(argv[1], &s) != TPL_STORE_OK) {
        fprintf(stderr, "store-bench: %s\n", tpl_store_errmsg(s));
        tpl_store_close(s);
        return 1;
    }
    tpl_store_loaded *l = NULL;
    uint64_t trips0 = tpl_store_round_trips(s);
    double t0 = now();
    for (long i = 0; i < n; i++) {
        if (tpl_store_load(s, argv[2], &l, NULL) != TPL_STORE_OK) {
            fprintf(stderr, "store-bench: %s\n", tpl_store_errmsg(s));
            tpl_store_close(s);
            return 1;
        }
        tpl_store_loaded_free(l);
    }
    double t1 = now();
    double trips = (double)(tpl_store_round_trips(s) - trips0) / (double)n;
    tpl_render *r = tpl_render_new(NULL);
    size_t bytes = 0;
    for (long i = 0; i < n; i++) {
        const char *out;
        size_t len;
        if (tpl_store_load(s, argv[2], &l, NULL) != TPL_STORE_OK || tpl_store_apply(l, r, NULL, NULL) != TPL_OK ||
            tpl_render_set_state_json(r, state ? state : "{}", state ? slen : 2) != TPL_OK || tpl_render_run(r, l->program, &out, &len) != TPL_OK) {
            fprintf(stderr, "store-bench: load+render failed: %s / %s\n", tpl_store_errmsg(s), tpl_render_error(r)->message);
            return 1;
        }
        bytes += len;
        tpl_store_loaded_free(l);
    }
    double t2 = now();
    printf("%s %s loads=%ld load_us=%.1f load_render_us=%.1f out_bytes=%zu round_trips_per_load=%.2f\n",
           tpl_store_backend(s), argv[2], n, (t1 - t0) / n * 1e6, (t2 - t1) / n * 1e6, bytes / (size_t)n, trips);
    tpl_render_free(r);
    tpl_store_close(s);
    free(state);
    return 0;
}
