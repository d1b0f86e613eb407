/* libFuzzer target: load arbitrary bytes as a .tplb program. Every load is verified; hostile
 * bytes must give TPL_ERR_CORRUPT, never a crash. A mutated file almost always fails the CRC-32
 * first, so the input is loaded twice: as is, and with its header CRC recomputed over the
 * (mutated) payload, which carries the mutation past the checksum into the structural verifier.
 * What loads is disassembled, saved again and rendered against a small fixed state.
 * Seeds: .tplb files made with `tplc compile` from conformance templates (fuzz/meson.build). */
#include <stdint.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>
#include "tpl.h"
#include "../runtime/crc32.h"

enum { HEADER = 32, CRC_AT = 24 };

static const char state[] =
    "{\"name\": \"Ana\", \"n\": 3, \"xs\": [1, 2.5, \"a\", null, true], \"d\": {\"k\": \"v\", \"l\": [1]},"
    " \"messages\": [{\"role\": \"user\", \"content\": \"hi\"}, {\"role\": \"assistant\", \"content\": \"yo\"}]}";

/* Loads len bytes; renders, disassembles and re-saves what verifies. */
static void load(const unsigned char *data, size_t len)
{
    tpl_program *p = NULL;
    tpl_error err = { 0 };
    if (tpl_program_load("fuzz.tplb", data, len, &p, &err) != TPL_OK) {
        char *msg = tpl_error_format(&err);
        free(msg);
        tpl_error_clear(&err);
        return;
    }
    char *dis = tpl_disassemble(p);
    free(dis);
    void *saved = NULL;
    size_t slen = 0;
    if (tpl_program_save(p, 0, &saved, &slen) == TPL_OK) free(saved);
    tpl_limits lim = { 0 };
    lim.fuel = 200000;
    lim.max_output = 64 << 10;  /* small, as fuzz_erb's: the corpus drifts to programs that build */
    lim.max_memory = 2 << 20;   /* big strings, and wordwrap over MiBs was most of each run */
    tpl_render *r = tpl_render_new(&lim);
    if (r) {
        tpl_render_set_state_json(r, state, sizeof state - 1);
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

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    load(data, size);
    if (size >= HEADER) {
        unsigned char *copy = malloc(size);
        if (!copy) return 0;
        memcpy(copy, data, size);
        uint32_t crc = tpl_crc32(copy + HEADER, size - HEADER);
        for (int i = 0; i < 4; i++) copy[CRC_AT + i] = (unsigned char)(crc >> (8 * i));
        if (memcmp(copy, data, size) != 0) load(copy, size);
        free(copy);
    }
    return 0;
}
