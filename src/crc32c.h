/*
 * crc32c: the Castagnoli CRC used to check update log records.
 *
 * CRC32C detects every burst error of up to 32 bits and is computed in
 * hardware by SSE4.2 (selected at run time; a table-driven fallback keeps
 * other CPUs working). Pure; any thread.
 */
#ifndef KURA_CRC32C_H
#define KURA_CRC32C_H

#include <stddef.h>
#include <stdint.h>

/*
 * Extends `crc` (0 to start) over `len` bytes of `p` and returns the new
 * value. crc32c(0, "123456789", 9) == 0xe3069283.
 */
uint32_t crc32c(uint32_t crc, const void *p, size_t len);

#endif
