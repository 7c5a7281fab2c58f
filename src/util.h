/*
 * util: small dependency-free helpers shared by every module.
 *
 * Strict number parsing (the protocol and the command line both reject
 * anything strtoul() would silently accept), size suffixes, fast decimal
 * formatting, key hashing for lock stripes, and fd flags. Nothing here
 * allocates or keeps state, so any thread may call any function.
 */
#ifndef KURA_UTIL_H
#define KURA_UTIL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <time.h>

/* Longest decimal rendering of a uint64_t, without terminator. */
#define UTIL_U64_DIGITS 20

/*
 * Parses exactly `len` bytes of `s` as an unsigned decimal number no larger
 * than `max`. No sign, no spaces, no empty string.
 * Returns true and stores the value in `*out` on success; false otherwise,
 * leaving `*out` untouched.
 */
bool util_parse_uint(const char *s, size_t len, uint64_t max, uint64_t *out);

/*
 * Parses exactly `len` bytes of `s` as a signed decimal number within
 * [min, max]. An optional leading '-' is accepted. Same contract as
 * util_parse_uint().
 */
bool util_parse_int(const char *s, size_t len, int64_t min, int64_t max,
                    int64_t *out);

/*
 * Parses a NUL-terminated size such as "1024", "64k", "1024m" or "2g"
 * (binary multiples, case-insensitive suffix). Returns true and stores the
 * byte count in `*out`, false on syntax error or overflow.
 */
bool util_parse_size(const char *s, uint64_t *out);

/*
 * Writes the decimal form of `v` to `buf`, which must hold at least
 * UTIL_U64_DIGITS bytes. No terminator is written.
 * Returns the number of bytes written.
 */
size_t util_u64_to_dec(uint64_t v, char *buf);

/* 64-bit hash of a key (FNV-1a with a final mix); stable across runs. */
uint64_t util_hash(const void *key, size_t len);

/* A 64-bit finalising mix (MurmurHash3's): every input bit moves about
 * half the output bits. */
uint64_t util_mix64(uint64_t h);

/* Sets O_NONBLOCK on `fd`. Returns 0, or -1 with errno set. */
int util_set_nonblock(int fd);

/* Sets FD_CLOEXEC on `fd`. Returns 0, or -1 with errno set. */
int util_set_cloexec(int fd);

/*
 * Writes all `len` bytes of `p` to the blocking descriptor `fd`, retrying
 * short writes and EINTR. Returns 0, or -1 with errno set.
 */
int util_write_all(int fd, const void *p, size_t len);

/*
 * Sets `out` to `ms` milliseconds from now on CLOCK_REALTIME, the clock
 * pthread_cond_timedwait() measures its deadline against by default.
 */
void util_deadline_ms(struct timespec *out, uint64_t ms);

/* Wall-clock time in microseconds since the epoch. */
uint64_t util_now_us(void);

/* Little-endian integers in byte buffers (log records, frames, files). */
static inline void
util_put_le32(uint8_t *p, uint32_t v)
{
    for (int i = 0; i < 4; i++) {
        p[i] = (uint8_t)(v >> (8 * i));
    }
}

static inline void
util_put_le64(uint8_t *p, uint64_t v)
{
    for (int i = 0; i < 8; i++) {
        p[i] = (uint8_t)(v >> (8 * i));
    }
}

static inline uint32_t
util_get_le32(const uint8_t *p)
{
    return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 |
           (uint32_t)p[3] << 24;
}

static inline uint64_t
util_get_le64(const uint8_t *p)
{
    return (uint64_t)util_get_le32(p) | (uint64_t)util_get_le32(p + 4) << 32;
}

/* Wall-clock time in whole seconds since the epoch. */
int64_t util_now_s(void);

/* Monotonic time in milliseconds, for timeouts and deadlines. */
uint64_t util_mono_ms(void);

/* Monotonic time in microseconds, for measuring short operations. */
uint64_t util_mono_us(void);

/*
 * Names the calling thread (at most 15 characters are kept) so that top,
 * perf and gdb tell the threads apart. Failure is ignored: it is cosmetic.
 */
void util_thread_name(const char *name);

/*
 * Copies the NUL-terminated `src` into `dst` of size `size`, always
 * terminating. Returns false if `src` had to be truncated.
 */
bool util_strlcpy(char *dst, const char *src, size_t size);

#endif
