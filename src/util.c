/*
 * util: strict parsing, formatting, hashing and clock helpers.
 * See util.h for the contract of each function.
 */
#include "util.h"

#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

bool
util_parse_uint(const char *s, size_t len, uint64_t max, uint64_t *out)
{
    uint64_t v = 0;

    if (len == 0 || len > UTIL_U64_DIGITS) {
        return false;
    }
    for (size_t i = 0; i < len; i++) {
        unsigned d = (unsigned char)s[i] - '0';
        if (d > 9) {
            return false;
        }
        if (v > (UINT64_MAX - d) / 10) {
            return false;
        }
        v = v * 10 + d;
    }
    if (v > max) {
        return false;
    }
    *out = v;
    return true;
}

bool
util_parse_int(const char *s, size_t len, int64_t min, int64_t max,
               int64_t *out)
{
    bool negative = false;
    uint64_t magnitude;

    if (len > 0 && s[0] == '-') {
        negative = true;
        s++;
        len--;
    }
    if (!util_parse_uint(s, len, (uint64_t)INT64_MAX + 1, &magnitude)) {
        return false;
    }
    int64_t v;
    if (negative) {
        v = magnitude == (uint64_t)INT64_MAX + 1 ? INT64_MIN
                                                 : -(int64_t)magnitude;
    } else {
        if (magnitude > (uint64_t)INT64_MAX) {
            return false;
        }
        v = (int64_t)magnitude;
    }
    if (v < min || v > max) {
        return false;
    }
    *out = v;
    return true;
}

bool
util_parse_size(const char *s, uint64_t *out)
{
    size_t len = strlen(s);
    uint64_t mult = 1;
    uint64_t v;

    if (len == 0) {
        return false;
    }
    switch (s[len - 1]) {
    case 'k': case 'K': mult = 1ULL << 10; len--; break;
    case 'm': case 'M': mult = 1ULL << 20; len--; break;
    case 'g': case 'G': mult = 1ULL << 30; len--; break;
    case 't': case 'T': mult = 1ULL << 40; len--; break;
    default: break;
    }
    if (!util_parse_uint(s, len, UINT64_MAX, &v)) {
        return false;
    }
    if (v > UINT64_MAX / mult) {
        return false;
    }
    *out = v * mult;
    return true;
}

size_t
util_u64_to_dec(uint64_t v, char *buf)
{
    char tmp[UTIL_U64_DIGITS];
    size_t n = 0;

    do {
        tmp[n++] = (char)('0' + v % 10);
        v /= 10;
    } while (v != 0);
    for (size_t i = 0; i < n; i++) {
        buf[i] = tmp[n - 1 - i];
    }
    return n;
}

uint64_t
util_hash(const void *key, size_t len)
{
    const unsigned char *p = key;
    uint64_t h = 14695981039346656037ULL;

    for (size_t i = 0; i < len; i++) {
        h ^= p[i];
        h *= 1099511628211ULL;
    }
    /* FNV's low bits are weak for short keys; finish with a 64-bit mix. */
    return util_mix64(h);
}

uint64_t
util_mix64(uint64_t h)
{
    h ^= h >> 33;
    h *= 0xff51afd7ed558ccdULL;
    h ^= h >> 33;
    h *= 0xc4ceb9fe1a85ec53ULL;
    h ^= h >> 33;
    return h;
}

int
util_set_nonblock(int fd)
{
    int fl = fcntl(fd, F_GETFL);
    if (fl < 0) {
        return -1;
    }
    return fcntl(fd, F_SETFL, fl | O_NONBLOCK);
}

int
util_set_cloexec(int fd)
{
    int fl = fcntl(fd, F_GETFD);
    if (fl < 0) {
        return -1;
    }
    return fcntl(fd, F_SETFD, fl | FD_CLOEXEC);
}

int
util_write_all(int fd, const void *p, size_t len)
{
    const char *at = p;
    while (len > 0) {
        ssize_t n = write(fd, at, len);
        if (n < 0) {
            if (errno == EINTR) {
                continue;
            }
            return -1;
        }
        at += n;
        len -= (size_t)n;
    }
    return 0;
}

void
util_deadline_ms(struct timespec *out, uint64_t ms)
{
    clock_gettime(CLOCK_REALTIME, out);
    out->tv_sec += (time_t)(ms / 1000);
    out->tv_nsec += (long)(ms % 1000) * 1000000L;
    if (out->tv_nsec >= 1000000000L) {
        out->tv_sec++;
        out->tv_nsec -= 1000000000L;
    }
}

uint64_t
util_now_us(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    return (uint64_t)ts.tv_sec * 1000000u + (uint64_t)ts.tv_nsec / 1000u;
}

int64_t
util_now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    return (int64_t)ts.tv_sec;
}

uint64_t
util_mono_us(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000u + (uint64_t)ts.tv_nsec / 1000u;
}

uint64_t
util_mono_ms(void)
{
    return util_mono_us() / 1000u;
}

void
util_thread_name(const char *name)
{
    char shortname[16];
    util_strlcpy(shortname, name, sizeof(shortname));
    (void)pthread_setname_np(pthread_self(), shortname);
}

bool
util_strlcpy(char *dst, const char *src, size_t size)
{
    size_t n = strlen(src);
    if (size == 0) {
        return n == 0;
    }
    if (n >= size) {
        memcpy(dst, src, size - 1);
        dst[size - 1] = '\0';
        return false;
    }
    memcpy(dst, src, n + 1);
    return true;
}
