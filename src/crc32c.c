/*
 * crc32c: hardware (SSE4.2) and table implementations (see crc32c.h).
 */
#include "crc32c.h"

#include <pthread.h>
#include <stdbool.h>
#include <string.h>

#define POLY 0x82f63b78u /* reflected Castagnoli polynomial */

static uint32_t table[256];

static void
_init_table(void)
{
    for (uint32_t i = 0; i < 256; i++) {
        uint32_t c = i;
        for (int k = 0; k < 8; k++) {
            c = (c & 1) ? (c >> 1) ^ POLY : c >> 1;
        }
        table[i] = c;
    }
}

static uint32_t
_soft(uint32_t crc, const unsigned char *p, size_t len)
{
    while (len-- > 0) {
        crc = table[(crc ^ *p++) & 0xff] ^ (crc >> 8);
    }
    return crc;
}

#if defined(__x86_64__)
__attribute__((target("sse4.2"))) static uint32_t
_hard(uint32_t crc, const unsigned char *p, size_t len)
{
    uint64_t c = crc;
    while (len >= 8) {
        uint64_t v;
        memcpy(&v, p, 8);
        c = __builtin_ia32_crc32di(c, v);
        p += 8;
        len -= 8;
    }
    uint32_t c32 = (uint32_t)c;
    while (len-- > 0) {
        c32 = __builtin_ia32_crc32qi(c32, *p++);
    }
    return c32;
}
#endif

typedef uint32_t (*crc_fn)(uint32_t, const unsigned char *, size_t);

static crc_fn chosen;
static pthread_once_t chosen_once = PTHREAD_ONCE_INIT;

static void
_choose(void)
{
#if defined(__x86_64__)
    __builtin_cpu_init();
    if (__builtin_cpu_supports("sse4.2")) {
        chosen = _hard;
        return;
    }
#endif
    _init_table();
    chosen = _soft;
}

uint32_t
crc32c(uint32_t crc, const void *p, size_t len)
{
    pthread_once(&chosen_once, _choose);
    return ~chosen(~crc, p, len);
}
