/*
 * stallwatch: `kura stallwatch`, the seed 004 freeze test (see
 * stallwatch.h).
 *
 * Both connections (client.h) wait for each reply, one request at a
 * time: the point is to see each operation's own latency, which a
 * pipelined or event-driven client would blur. The prober runs on its own thread so
 * that a server stalling every connection shows up on both, while one
 * that only stalls writers leaves the probe fast.
 */
#include "stallwatch.h"

#include <errno.h>
#include <getopt.h>
#include <inttypes.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "hist.h"
#include "client.h"
#include "tlsopt.h"
#include "util.h"

#define OP_TIMEOUT_MS 60000      /* an operation this slow is an error */
#define PROBE_INTERVAL_NS 1000000000ULL
#define MAX_REPORTED_ERRORS 5
#define REPLY_CAP 512

/* What both threads share; everything else is owned by one thread. */
struct watch {
    const struct stallwatch_opts *o;
    FILE *stalls;
    uint64_t started_ns;
    pthread_mutex_t lock;        /* guards the fields below */
    pthread_cond_t wake;
    bool stop;
    uint64_t over_threshold;
    uint64_t errors_reported;
    uint64_t worst_us;
    bool worst_is_probe;
    uint64_t worst_index;
    uint64_t worst_at_ns;
};

struct prober {
    struct watch *w;
    pthread_t thread;
    uint64_t probes;
    uint64_t max_us;
    uint64_t errors;
};

static uint64_t
_now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

/*
 * Records one operation's latency: counts and prints it if it crossed the
 * threshold, and keeps the worst.
 */
static void
_account(struct watch *w, bool probe, uint64_t index, uint64_t start_ns,
         uint64_t us)
{
    pthread_mutex_lock(&w->lock);
    double at = (double)(start_ns - w->started_ns) / 1e9;
    if (us >= (uint64_t)w->o->threshold_ms * 1000u) {
        w->over_threshold++;
        fprintf(w->stalls, "stall: %s #%" PRIu64 " took %" PRIu64
                           " ms at +%.1f s\n",
                probe ? "probe (version)" : "insert", index, us / 1000, at);
        fflush(w->stalls);
    }
    if (us > w->worst_us) {
        w->worst_us = us;
        w->worst_is_probe = probe;
        w->worst_index = index;
        w->worst_at_ns = start_ns - w->started_ns;
    }
    pthread_mutex_unlock(&w->lock);
}

/* Prints "<what> #<index>: <detail>" for the first few errors only. */
static void
_report_error(struct watch *w, const char *what, uint64_t index,
              const char *detail)
{
    pthread_mutex_lock(&w->lock);
    if (w->errors_reported++ < MAX_REPORTED_ERRORS) {
        fprintf(stderr, "stallwatch: %s #%" PRIu64 ": %s\n", what, index,
                detail);
    }
    pthread_mutex_unlock(&w->lock);
}

/*
 * Sends `len` bytes of `req` and reads one reply line into `reply`
 * (NUL-terminated, "\r\n" kept), within OP_TIMEOUT_MS. Returns 0, or -1
 * on timeout, EOF or error with a reason in `reply`.
 */
static int
_roundtrip(struct client *c, const char *req, size_t len, char *reply)
{
    client_set_timeout(c, OP_TIMEOUT_MS);
    client_append(c, req, len);
    if (client_send_wait(c) != 0) {
        snprintf(reply, REPLY_CAP, "send: %s", strerror(errno));
        return -1;
    }
    struct client_reply r;
    enum client_reply_kind k = client_next(c, 0, CLIENT_PROTO_TEXT, 0, &r);
    if (k != CLIENT_REPLY_LINE) {
        snprintf(reply, REPLY_CAP, "%s",
                 k != CLIENT_REPLY_MORE   ? "unexpected value"
                 : errno == ETIMEDOUT     ? "no reply within 60 s"
                 : errno == ENOBUFS       ? "reply line too long"
                 : errno == 0             ? "connection closed"
                                          : strerror(errno));
        return -1;
    }
    memcpy(reply, r.line, r.len);
    reply[r.len] = '\0';
    client_consume(c, r.len);
    return 0;
}

static void *
_probe_main(void *arg)
{
    struct prober *p = arg;
    struct watch *w = p->w;
    const char req[] = "version\r\n";
    char reply[REPLY_CAP];
    char why[512];
    char port[16];
    struct client io;
    uint64_t due = w->started_ns;  /* the first probe goes out at once */

    client_init(&io, REPLY_CAP - 1, REPLY_CAP - 1);
    snprintf(port, sizeof(port), "%d", w->o->port);

    util_thread_name("stallprobe");
    pthread_mutex_lock(&w->lock);
    for (;;) {
        struct timespec ts = {
            .tv_sec = (time_t)(due / 1000000000u),
            .tv_nsec = (long)(due % 1000000000u),
        };
        while (!w->stop && _now_ns() < due) {
            pthread_cond_timedwait(&w->wake, &w->lock, &ts);
        }
        if (w->stop) {
            break;
        }
        pthread_mutex_unlock(&w->lock);

        uint64_t index = p->probes + p->errors + 1;
        if (io.fd < 0) {
            client_open(&io, w->o->host, port, 5000, w->o->tls, why,
                        sizeof(why));
        }
        uint64_t start = _now_ns();
        if (io.fd < 0 || _roundtrip(&io, req, sizeof(req) - 1, reply) != 0) {
            p->errors++;
            _report_error(w, "probe", index, io.fd < 0 ? why : reply);
            client_disconnect(&io);
        } else {
            uint64_t us = (_now_ns() - start) / 1000;
            if (strncmp(reply, "VERSION ", 8) != 0) {
                p->errors++;
                reply[strcspn(reply, "\r\n")] = '\0';
                _report_error(w, "probe, unexpected reply", index, reply);
            } else {
                p->probes++;
            }
            if (us > p->max_us) {
                p->max_us = us;
            }
            _account(w, true, index, start, us);
        }
        /* Once a second on the run's clock; a slow probe skips ticks. */
        uint64_t now = _now_ns();
        do {
            due += PROBE_INTERVAL_NS;
        } while (due <= now);
        pthread_mutex_lock(&w->lock);
    }
    pthread_mutex_unlock(&w->lock);
    client_close(&io);
    return NULL;
}

/* The insert loop, on the calling thread. Returns its error count. */
static uint64_t
_insert_all(struct watch *w, struct client *io, struct hist *h,
            uint64_t *stored)
{
    const struct stallwatch_opts *o = w->o;
    char reply[REPLY_CAP];
    char head[128];
    uint64_t errors = 0;
    /* Fresh keys per run: a previous run's keys would make these updates. */
    uint64_t run = util_now_us() ^ ((uint64_t)getpid() << 40);
    size_t cap = sizeof(head) + o->value_size + 2;
    char *req = malloc(cap);

    if (req == NULL) {
        fprintf(stderr, "stallwatch: out of memory\n");
        return 1;
    }
    for (uint64_t i = 1; i <= o->count; i++) {
        int hl = snprintf(head, sizeof(head), "set sw:%" PRIx64 ":%" PRIu64
                          " 0 0 %zu\r\n", run, i, o->value_size);
        memcpy(req, head, (size_t)hl);
        /* The value varies a little so no layer can dedupe it. */
        memset(req + hl, 'a' + (int)(i % 26), o->value_size);
        memcpy(req + (size_t)hl + o->value_size, "\r\n", 2);
        size_t len = (size_t)hl + o->value_size + 2;

        uint64_t start = _now_ns();
        if (_roundtrip(io, req, len, reply) != 0) {
            errors++;
            _report_error(w, "insert (stopping)", i, reply);
            break;
        }
        uint64_t us = (_now_ns() - start) / 1000;
        hist_add(h, us);
        _account(w, false, i, start, us);
        if (strcmp(reply, "STORED\r\n") == 0) {
            (*stored)++;
        } else {
            errors++;
            reply[strcspn(reply, "\r\n")] = '\0';
            _report_error(w, "insert, unexpected reply", i, reply);
        }
    }
    free(req);
    return errors;
}

int
stallwatch_run(const struct stallwatch_opts *o, struct stallwatch_result *r,
               FILE *stalls)
{
    struct watch w;
    struct prober p;
    struct hist *h = calloc(1, sizeof(*h));
    pthread_condattr_t ca;

    memset(r, 0, sizeof(*r));
    if (h == NULL) {
        return -1;
    }
    struct client io;
    char why[512];
    char port[16];
    client_init(&io, REPLY_CAP - 1, REPLY_CAP - 1);
    snprintf(port, sizeof(port), "%d", o->port);
    if (client_open(&io, o->host, port, 5000, o->tls, why, sizeof(why)) !=
        0) {
        fprintf(stderr, "stallwatch: %s\n", why);
        client_close(&io);
        free(h);
        return -1;
    }
    memset(&w, 0, sizeof(w));
    memset(&p, 0, sizeof(p));
    w.o = o;
    w.stalls = stalls;
    pthread_mutex_init(&w.lock, NULL);
    pthread_condattr_init(&ca);
    pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
    pthread_cond_init(&w.wake, &ca);
    pthread_condattr_destroy(&ca);
    p.w = &w;
    w.started_ns = _now_ns();
    bool probing = pthread_create(&p.thread, NULL, _probe_main, &p) == 0;
    if (!probing) {
        fprintf(stderr, "stallwatch: cannot start the probe thread\n");
        r->errors++;
    }

    r->errors += _insert_all(&w, &io, h, &r->inserts);
    uint64_t elapsed = _now_ns() - w.started_ns;
    client_close(&io);

    pthread_mutex_lock(&w.lock);
    w.stop = true;
    pthread_cond_signal(&w.wake);
    pthread_mutex_unlock(&w.lock);
    if (probing) {
        pthread_join(p.thread, NULL);
    }

    r->seconds = (double)elapsed / 1e9;
    r->ops_per_s = r->seconds > 0 ? (double)r->inserts / r->seconds : 0;
    r->p50_us = hist_percentile(h, 50);
    r->p99_us = hist_percentile(h, 99);
    r->p999_us = hist_percentile(h, 99.9);
    r->max_us = h->max;
    r->probes = p.probes;
    r->probe_max_us = p.max_us;
    r->errors += p.errors;
    r->over_threshold = w.over_threshold;
    r->worst_us = w.worst_us;
    r->worst_is_probe = w.worst_is_probe;
    r->worst_index = w.worst_index;
    r->worst_at_s = (double)w.worst_at_ns / 1e9;
    pthread_cond_destroy(&w.wake);
    pthread_mutex_destroy(&w.lock);
    free(h);
    return 0;
}

static void
_usage(FILE *out)
{
    fprintf(out, "usage: kura stallwatch [--host H] [--port P] [--count N] "
                 "[--value-size B]\n"
                 "                       [--threshold-ms T] [--json]\n"
                 "                       " TLSOPT_USAGE "\n");
}

static bool
_parse_opt(const char *s, uint64_t min, uint64_t max, uint64_t *out)
{
    return util_parse_uint(s, strlen(s), max, out) && *out >= min;
}

int
stallwatch_cmd(int argc, char **argv)
{
    static const struct option longopts[] = {
        {"host", required_argument, NULL, 'h'},
        {"port", required_argument, NULL, 'p'},
        {"count", required_argument, NULL, 'n'},
        {"value-size", required_argument, NULL, 'v'},
        {"threshold-ms", required_argument, NULL, 't'},
        {"json", no_argument, NULL, 'j'},
        TLSOPT_LONG_OPTIONS,
        {NULL, 0, NULL, 0},
    };
    struct tlsopt tlsopt = {0};
    struct stallwatch_opts o = {
        .host = "127.0.0.1",
        .port = 1978,
        .count = 800000,
        .value_size = 1024,
        .threshold_ms = 500,
    };
    bool json = false;
    uint64_t v;
    int ch;

    optind = 1;
    while ((ch = getopt_long(argc, argv, "", longopts, NULL)) != -1) {
        switch (ch) {
        case 'h': o.host = optarg; break;
        case 'p':
            if (!_parse_opt(optarg, 1, 65535, &v)) {
                goto usage;
            }
            o.port = (int)v;
            break;
        case 'n':
            if (!_parse_opt(optarg, 1, UINT64_MAX, &o.count)) {
                goto usage;
            }
            break;
        case 'v':
            if (!_parse_opt(optarg, 1, (uint64_t)1 << 30, &v)) {
                goto usage;
            }
            o.value_size = (size_t)v;
            break;
        case 't':
            if (!_parse_opt(optarg, 1, 3600000, &v)) {
                goto usage;
            }
            o.threshold_ms = (unsigned)v;
            break;
        case 'j': json = true; break;
        default:
            if (!tlsopt_parse(&tlsopt, ch, optarg)) {
                goto usage;
            }
            break;
        }
    }
    if (optind != argc) {
        goto usage;
    }
    if (tlsopt_context(&tlsopt, false, &o.tls) != 0) {
        return 2;
    }

    struct stallwatch_result r;
    int run = stallwatch_run(&o, &r, json ? stderr : stdout);
    tls_ctx_destroy(o.tls);
    if (run != 0) {
        return 1;
    }
    if (json) {
        printf("{\"inserts\": %" PRIu64 ", \"seconds\": %.3f, \"ops_per_s\": "
               "%.0f, \"p50_us\": %" PRIu64 ", \"p99_us\": %" PRIu64
               ", \"p999_us\": %" PRIu64 ", \"max_us\": %" PRIu64
               ", \"probes\": %" PRIu64 ", \"probe_max_us\": %" PRIu64
               ", \"over_threshold\": %" PRIu64 ", \"threshold_ms\": %u"
               ", \"worst_us\": %" PRIu64 ", \"errors\": %" PRIu64 "}\n",
               r.inserts, r.seconds, r.ops_per_s, r.p50_us, r.p99_us,
               r.p999_us, r.max_us, r.probes, r.probe_max_us,
               r.over_threshold, o.threshold_ms, r.worst_us, r.errors);
    } else {
        printf("inserts %" PRIu64 " x %zu B in %.2f s: %.0f inserts/s\n",
               r.inserts, o.value_size, r.seconds, r.ops_per_s);
        printf("insert latency p50 %" PRIu64 "us  p99 %" PRIu64
               "us  p999 %" PRIu64 "us  max %" PRIu64 "us\n",
               r.p50_us, r.p99_us, r.p999_us, r.max_us);
        printf("probe (version every 1 s): %" PRIu64 " answered, max %" PRIu64
               "us\n", r.probes, r.probe_max_us);
        printf("over %u ms: %" PRIu64 "; worst: %s #%" PRIu64 " took %.1f ms "
               "at +%.1f s\n", o.threshold_ms, r.over_threshold,
               r.worst_is_probe ? "probe" : "insert", r.worst_index,
               (double)r.worst_us / 1000.0, r.worst_at_s);
        printf("errors %" PRIu64 "\n", r.errors);
    }
    return r.over_threshold == 0 && r.errors == 0 ? 0 : 1;
usage:
    _usage(stderr);
    return 2;
}
