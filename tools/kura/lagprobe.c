/*
 * lagprobe: ack-to-visibility replication lag samples (see lagprobe.h).
 */
#include "lagprobe.h"

#include <inttypes.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "client.h"
#include "util.h"

#define MAX_SAMPLES 100000
#define PROBE_TIMEOUT_US 10000000u
#define CALL_TIMEOUT_MS 2000
#define REPLY_MAX 4096

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

/*
 * Sends `req` and reads its reply within CALL_TIMEOUT_MS: a set's one
 * line (any), or a get's values up to END. Returns 1 if the get found a
 * value, 0 if it did not (or for a set), -1 if the connection failed or
 * answered an error to a get.
 */
static int
_call(struct client *c, const char *req, bool get)
{
    client_set_timeout(c, CALL_TIMEOUT_MS);
    client_append(c, req, strlen(req));
    if (client_send_wait(c) != 0) {
        return -1;
    }
    int found = 0;
    for (;;) {
        struct client_reply r;
        enum client_reply_kind k = client_next(c, 0, CLIENT_PROTO_TEXT,
                                               REPLY_MAX, &r);
        if (k != CLIENT_REPLY_LINE && k != CLIENT_REPLY_VALUE) {
            return -1;
        }
        client_consume(c, r.len);
        if (!get) {
            return 0;
        }
        if (k == CLIENT_REPLY_VALUE) {
            found = 1;
        } else {
            return client_reply_is(&r, "END") ? found : -1;
        }
    }
}

static void *
_main(void *arg)
{
    struct lagprobe *p = arg;
    struct client a;
    struct client b;
    char err[512];
    char port[16];
    client_init(&a, 256, REPLY_MAX);
    client_init(&b, 256, REPLY_MAX);
    snprintf(port, sizeof(port), "%d", p->primary);
    if (client_open(&a, p->host, port, CALL_TIMEOUT_MS, p->tls, err,
                    sizeof(err)) != 0) {
        fprintf(stderr, "lagprobe: %s\n", err);
    }
    snprintf(port, sizeof(port), "%d", p->secondary);
    if (client_open(&b, p->host, port, CALL_TIMEOUT_MS, p->tls, err,
                    sizeof(err)) != 0) {
        fprintf(stderr, "lagprobe: %s\n", err);
    }
    char req[128];
    uint64_t seq = 0;

    while (a.fd >= 0 && b.fd >= 0 && !atomic_load(&p->stop) &&
           p->n < MAX_SAMPLES) {
        seq++;
        snprintf(req, sizeof(req), "set lagprobe:%" PRIu64 " 0 0 1\r\nx\r\n",
                 seq);
        if (_call(&a, req, false) != 0) {
            break;
        }
        uint64_t acked = _now_us();
        snprintf(req, sizeof(req), "get lagprobe:%" PRIu64 "\r\n", seq);
        for (;;) {
            int found = _call(&b, req, true);
            if (found < 0) {
                goto out;
            }
            if (found > 0) {
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
    client_close(&a);
    client_close(&b);
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
