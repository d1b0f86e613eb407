/* Replays fuzz findings outside libFuzzer: links one fuzz/fuzz_*.c target and feeds it every file
 * named on the command line (tests/fuzz-regress/TARGET/NAME.*, each named after what broke), so
 * every finding stays a regression test in the ordinary suites, where the ASan/UBSan build
 * (with UBSAN_OPTIONS=halt_on_error=1) turns a recurrence into a failure.
 * usage: fuzz_replay_TARGET FILE...   prints "N passed, N failed" (a crash aborts the run). */
#include <stdint.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
/* Optional, as in libFuzzer: a target that defines it is initialised once before any input. */
__attribute__((weak)) int LLVMFuzzerInitialize(int *argc, char ***argv);

/* Reads a whole file into a malloc'd buffer (*len bytes); NULL on failure. */
static uint8_t *slurp(const char *path, size_t *len)
{
    FILE *f = fopen(path, "rb");
    if (!f) return NULL;
    size_t cap = 4096, n = 0;
    uint8_t *buf = malloc(cap);
    while (buf) {
        n += fread(buf + n, 1, cap - n, f);
        if (n < cap) break;
        uint8_t *nb = realloc(buf, cap *= 2);
        if (!nb) { free(buf); buf = NULL; }
        else buf = nb;
    }
    int bad = ferror(f);
    fclose(f);
    if (bad) { free(buf); return NULL; }
    *len = n;
    return buf;
}

int main(int argc, char **argv)
{
    int passed = 0, failed = 0;
    if (LLVMFuzzerInitialize) LLVMFuzzerInitialize(&argc, &argv);
    for (int i = 1; i < argc; i++) {
        size_t len = 0;
        uint8_t *data = slurp(argv[i], &len);
        if (!data) {
            fprintf(stderr, "FAIL %s: cannot read\n", argv[i]);
            failed++;
            continue;
        }
        LLVMFuzzerTestOneInput(data, len);
        free(data);
        passed++;
    }
    printf("%d passed, %d failed\n", passed, failed);
    return failed ? 1 : 0;
}
