/*
 * lagprobe: ack-to-visibility replication lag samples (see lagprobe.h).
 */
#include "lagprobe.h"

#include <errno.h>
#include <inttypes.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include "netio.h"
#include "util.h"

#define MAX_SAMPLES 100000
#define PROBE_TIMEOUT_US 10000000u

struct lagprobe {
    char host[256];
    int primary;
    int secondary;
    unsigned interval_ms;
    struct tls_ctx *tls;  /* borrowed; NULL: plaintext */
    pthread_t thread;
    _Atomic bool stop;
    uint64_t *samples;
    size_t n;
    uint64_t timeouts;
};

static uint64_t
_now_us(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000u + (uint64_t)ts.tv_nsec / 1000u;
}

/* Sends `req` and reads one reply ending in `term`; 0 on success. */
static int
_call(struct netio_stream *io, const char *req, char *reply, size_t cap,
      const char *term)
{
    size_t got = 0;
    size_t tl = strlen(term);
    if (netio_stream_send_all(io, req, strlen(req), 2000) != 0) {
        return -1;
    }
    while (got + 1 < cap) {
        if (netio_stream_wait_readable(io, 2000) <= 0) {
            return -1;
        }
        ssize_t n = netio_stream_recv(io, reply + got, cap - 1 - got);
        if (n < 0 && errno == EAGAIN) {
            continue;
        }
        if (n <= 0) {
            return -1;
        }
        got += (size_t)n;
        reply[got] = '\0';
        if (got >= tl && memcmp(reply + got - tl, term, tl) == 0) {
            return 0;
        }
    }
    return -1;
}

static void *
_main(void *arg)
{
    struct lagprobe *p = arg;
    struct netio_stream a;
    struct netio_stream b;
    char err[512];
    if (netio_stream_connect(&a, p->host, p->primary, p->tls, 2000, err,
                             sizeof(err)) != 0) {
        fprintf(stderr, "lagprobe: %s\n", err);
    }
    if (netio_stream_connect(&b, p->host, p->secondary, p->tls, 2000, err,
                             sizeof(err)) != 0) {
        fprintf(stderr, "lagprobe: %s\n", err);
    }
    char req[128];
    char reply[256];
    uint64_t seq = 0;

    while (a.fd >= 0 && b.fd >= 0 && !atomic_load(&p->stop) &&
           p->n < MAX_SAMPLES) {
        seq++;
        snprintf(req, sizeof(req), "set lagprobe:%" PRIu64 " 0 0 1\r\nx\r\n",
                 seq);
        if (_call(&a, req, reply, sizeof(reply), "\r\n") != 0) {
            break;
        }
        uint64_t acked = _now_us();
        snprintf(req, sizeof(req), "get lagprobe:%" PRIu64 "\r\n", seq);
        for (;;) {
            if (_call(&b, req, reply, sizeof(reply), "END\r\n") != 0) {
                goto out;
            }
            if (strncmp(reply, "VALUE", 5) == 0) {
                p->samples[p->n++] = _now_us() - acked;
                break;
            }
            if (_now_us() - acked > PROBE_TIMEOUT_US) {
                p->timeouts++;
                break;
            }
            usleep(1000);
        }
        usleep(p->interval_ms * 1000u);
    }
out:
    netio_stream_close(&a);
    netio_stream_close(&b);
    return NULL;
}

struct lagprobe *
lagprobe_start(const char *host, int primary, int secondary,
               unsigned interval_ms, struct tls_ctx *tls)
{
    struct lagprobe *p = calloc(1, sizeof(*p));
    if (p == NULL) {
        return NULL;
    }
    util_strlcpy(p->host, host, sizeof(p->host));
    p->primary = primary;
    p->secondary = secondary;
    p->interval_ms = interval_ms;
    p->tls = tls;
    p->samples = calloc(MAX_SAMPLES, sizeof(*p->samples));
    if (p->samples == NULL ||
        pthread_create(&p->thread, NULL, _main, p) != 0) {
        free(p->samples);
        free(p);
        return NULL;
    }
    return p;
}

static int
_cmp(const void *x, const void *y)
{
    uint64_t a = *(const uint64_t *)x;
    uint64_t b = *(const uint64_t *)y;
    return a < b ? -1 : a > b;
}

void
lagprobe_stop(struct lagprobe *p, struct lagprobe_result *r)
{
    memset(r, 0, sizeof(*r));
    atomic_store(&p->stop, true);
    pthread_join(p->thread, NULL);
    r->samples = p->n;
    r->timeouts = p->timeouts;
    if (p->n > 0) {
        qsort(p->samples, p->n, sizeof(p->samples[0]), _cmp);
        r->p50_us = p->samples[p->n / 2];
        r->p99_us = p->samples[(p->n * 99) / 100 < p->n ? (p->n * 99) / 100
                                                        : p->n - 1];
        r->max_us = p->samples[p->n - 1];
    }
    free(p->samples);
    free(p);
}
