/* CRC-32 (reflected, polynomial 0xEDB88320, IEEE 802.3) as the .tplb header carries it: the one
 * copy, used by runtime/serialize.c (save and load), tests/test_tplb.c and fuzz/fuzz_tplb.c (which
 * recompute it over mutated payloads). Bitwise: no table, no global state. Its loops do not
 * depend on the data, so a fuzzing build leaves them out of SanitizerCoverage: traced, its nine
 * comparisons per byte were most of fuzz_tplb's time on large inputs. */
#ifndef TPL_CRC32_H
#define TPL_CRC32_H

#include <stddef.h>
#include <stdint.h>

#if defined(__clang__)
__attribute__((no_sanitize("coverage")))
#endif
static inline uint32_t tpl_crc32_update(uint32_t c, const unsigned char *p, size_t n)
{
    for (size_t i = 0; i < n; i++) {
        c ^= p[i];
        for (int k = 0; k < 8; k++) c = (c >> 1) ^ (0xEDB88320u & (0u - (c & 1u)));
    }
    return c;
}

/* The CRC of p[0..n); tpl_crc32_update(0xFFFFFFFF, ...) then ~ computes it in pieces. */
#if defined(__clang__)
__attribute__((no_sanitize("coverage")))
#endif
static inline uint32_t tpl_crc32(const unsigned char *p, size_t n)
{
    return ~tpl_crc32_update(0xFFFFFFFFu, p, n);
}

#endif
