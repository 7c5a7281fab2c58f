/*
 * bench_cmd: the command line of `kura bench` (the load itself is in
 * bench.c). Every number is parsed strictly: "19x78" is an error, not 19.
 */
#include "bench_cmd.h"

#include <getopt.h>
#include <inttypes.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>

#include "bench.h"
#include "bench_wire.h"
#include "lagprobe.h"
#include "tlsopt.h"
#include "util.h"

/* Far above any item size a server accepts; only a guard on the number. */
#define BENCH_CMD_VALUE_MAX ((uint64_t)1 << 30)

static void
_usage(void)
{
    fputs("usage: kura bench [--host H] [--port P] [--conns N] "
          "[--pipeline D]\n"
          "                  [--proto text|binary|meta] [--multiget N]\n"
          "                  [--keyspace K] [--zipf S] [--fresh N]\n"
          "                  [--prefix S] [--reads PCT]\n"
          "                  [--value-size B] [--duration SEC | --ops N]\n"
          "                  [--connect [--quit]] [--json] [--lag-to PORT]\n"
          "                  [--ack-log FILE [--own-keys K]]\n"
          "                  [--warmup SEC] [--no-resume]\n"
          "                  " TLSOPT_USAGE "\n",
          stderr);
}

static bool
_u64(const char *s, uint64_t *out)
{
    return util_parse_uint(s, strlen(s), UINT64_MAX, out);
}

static bool
_int(const char *s, int max, int *out)
{
    uint64_t v;
    if (!util_parse_uint(s, strlen(s), (uint64_t)max, &v)) {
        return false;
    }
    *out = (int)v;
    return true;
}

/*
 * A plain decimal: digits, then at most one '.' and more digits ("10",
 * "0.5"). No sign, spaces, exponent, hexadecimal, "inf" or "nan", which
 * strtod() alone would take.
 */
static bool
_decimal(const char *s, double *out)
{
    size_t i = strspn(s, "0123456789");
    if (i == 0 || i > 15) {
        return false;
    }
    if (s[i] == '.') {
        size_t f = strspn(s + i + 1, "0123456789");
        if (f == 0 || f > 15) {
            return false;
        }
        i += 1 + f;
    }
    if (s[i] != '\0') {
        return false;
    }
    *out = strtod(s, NULL);
    return true;
}

/* A positive duration in seconds, fractions allowed ("0.5"). */
static bool
_seconds(const char *s, double *out)
{
    double v;
    if (!_decimal(s, &v) || !(v > 0) || v > 86400.0 * 365) {
        return false;
    }
    *out = v;
    return true;
}

/* User plus system CPU of `ru`, in microseconds. */
static uint64_t
_rusage_us(const struct rusage *ru)
{
    return (uint64_t)(ru->ru_utime.tv_sec + ru->ru_stime.tv_sec) * 1000000 +
           (uint64_t)(ru->ru_utime.tv_usec + ru->ru_stime.tv_usec);
}

int
bench_cmd(int argc, char **argv)
{
    static const struct option longopts[] = {
        {"host", required_argument, NULL, 'h'},
        {"port", required_argument, NULL, 'p'},
        {"conns", required_argument, NULL, 'c'},
        {"pipeline", required_argument, NULL, 'd'},
        {"keyspace", required_argument, NULL, 'k'},
        {"prefix", required_argument, NULL, 'x'},
        {"reads", required_argument, NULL, 'r'},
        {"value-size", required_argument, NULL, 'v'},
        {"duration", required_argument, NULL, 't'},
        {"ops", required_argument, NULL, 'n'},
        {"connect", no_argument, NULL, 'C'},
        {"quit", no_argument, NULL, 'Q'},
        {"json", no_argument, NULL, 'j'},
        {"lag-to", required_argument, NULL, 'L'},
        {"ack-log", required_argument, NULL, 'A'},
        {"own-keys", required_argument, NULL, 'K'},
        {"proto", required_argument, NULL, 'P'},
        {"multiget", required_argument, NULL, 'M'},
        {"zipf", required_argument, NULL, 'Z'},
        {"fresh", required_argument, NULL, 'F'},
        {"warmup", required_argument, NULL, 'W'},
        {"no-resume", no_argument, NULL, 'R'},
        TLSOPT_LONG_OPTIONS,
        {NULL, 0, NULL, 0},
    };
    struct bench_opts o = {
        .host = "127.0.0.1",
        .port = 1978,
        .conns = 64,
        .pipeline = 1,
        .keyspace = 13310000,
        .prefix = "u:",
        .read_pct = 0,
        .value_size = 10,
        .duration_s = 10,
        .own_keys = 1000,
    };
    bool json = false;
    bool resume = true;
    struct tlsopt tlsopt = {0};
    int lag_port = 0;
    uint64_t u;
    int li = 0;
    int ch;

    optind = 1;
    while ((ch = getopt_long(argc, argv, "", longopts, &li)) != -1) {
        bool ok = true;
        switch (ch) {
        case 'h': o.host = optarg; break;
        case 'p': ok = _int(optarg, 65535, &o.port); break;
        case 'c': ok = _int(optarg, 1000000, &o.conns); break;
        case 'd': ok = _int(optarg, 64, &o.pipeline); break;
        case 'k': ok = _u64(optarg, &o.keyspace); break;
        case 'x': o.prefix = optarg; break;
        case 'r': ok = _int(optarg, 100, &o.read_pct); break;
        case 'v':
            ok = _u64(optarg, &u) && u <= BENCH_CMD_VALUE_MAX;
            o.value_size = (size_t)u;
            break;
        case 't': ok = _seconds(optarg, &o.duration_s); o.ops = 0; break;
        case 'n': ok = _u64(optarg, &o.ops); o.duration_s = 0; break;
        case 'C': o.connect_per_request = true; break;
        case 'Q': o.quit = true; break;
        case 'j': json = true; break;
        case 'L': ok = _int(optarg, 65535, &lag_port); break;
        case 'A': o.ack_log = optarg; break;
        case 'K':
            ok = _u64(optarg, &o.own_keys) && o.own_keys >= 1 &&
                 o.own_keys <= UINT32_MAX;
            break;
        case 'P':
            if (!bench_wire_proto_parse(optarg, &o.proto)) {
                fprintf(stderr, "kura bench: --proto is text, binary or "
                                "meta\n");
                return 2;
            }
            break;
        case 'M': ok = _int(optarg, 1000, &o.multiget) && o.multiget >= 1;
            break;
        case 'Z':
            /* 1 itself has no closed form in Gray et al.'s method. */
            ok = _decimal(optarg, &o.zipf) && o.zipf > 0 && o.zipf < 1;
            break;
        case 'F': ok = _u64(optarg, &o.fresh_from); o.fresh = true; break;
        case 'W': ok = _seconds(optarg, &o.warmup_s); break;
        case 'R': resume = false; break;
        default:
            if (!tlsopt_parse(&tlsopt, ch, optarg)) {
                _usage();
                return 2;
            }
            break;
        }
        if (!ok) {
            fprintf(stderr, "kura bench: --%s: bad value '%s'\n",
                    longopts[li].name, optarg);
            return 2;
        }
    }
    /* The upper bounds were checked as each number was read. */
    if (o.conns < 1 || o.pipeline < 1 || o.keyspace < 1 ||
        strlen(o.prefix) > 200 || (o.duration_s <= 0 && o.ops == 0)) {
        fprintf(stderr, "kura bench: invalid options\n");
        return 2;
    }
    if (o.connect_per_request) {
        o.pipeline = 1;
    }
    /* Connect-per-request clients resume sessions, as a real client with a
     * session cache does; --no-resume makes every handshake a full one. */
    if (tlsopt_context(&tlsopt, o.connect_per_request && resume, &o.tls) !=
        0) {
        return 2;
    }
    struct bench_result r;
    struct lagprobe *probe = NULL;
    struct lagprobe_result lag;
    memset(&lag, 0, sizeof(lag));
    if (lag_port > 0) {
        probe = lagprobe_start(o.host, o.port, lag_port, 20, o.tls);
        if (probe == NULL) {
            fprintf(stderr, "kura bench: cannot start the lag probe\n");
            return 1;
        }
    }
    /* The load is driven from this thread alone: its CPU per operation is
     * the client's share when client and server share a machine. */
    struct rusage ru0, ru1;
    getrusage(RUSAGE_THREAD, &ru0);
    int rc = bench_run(&o, &r);
    getrusage(RUSAGE_THREAD, &ru1);
    if (probe != NULL) {
        lagprobe_stop(probe, &lag);
    }
    if (rc != 0) {
        return 1;
    }
    if (json) {
        printf("{\"ops\": %" PRIu64 ", \"errors\": %" PRIu64
               ", \"seconds\": %.3f, \"ops_per_s\": %.0f, \"p50_us\": %" PRIu64
               ", \"p99_us\": %" PRIu64 ", \"p999_us\": %" PRIu64
               ", \"max_us\": %" PRIu64 ", \"connects\": %" PRIu64
               ", \"lag_samples\": %" PRIu64 ", \"lag_p50_us\": %" PRIu64
               ", \"lag_p99_us\": %" PRIu64 ", \"lag_max_us\": %" PRIu64
               ", \"lag_timeouts\": %" PRIu64 ", \"proto\": \"%s\""
               ", \"keys\": %" PRIu64 ", \"hits\": %" PRIu64,
               r.ops, r.errors, r.seconds, r.ops_per_s, r.p50_us, r.p99_us,
               r.p999_us, r.max_us, r.connects, lag.samples, lag.p50_us,
               lag.p99_us, lag.max_us, lag.timeouts,
               bench_wire_proto_name(o.proto), r.keys, r.hits);
        /* With a warm-up, only the counted part (bench.h, cpu_us). */
        uint64_t cpu = o.warmup_s > 0 ? r.cpu_us
                                      : _rusage_us(&ru1) - _rusage_us(&ru0);
        printf(", \"client_cpu_us_per_op\": %.2f",
               r.ops > 0 ? (double)cpu /
                               (double)r.ops
                         : 0.0);
        if (o.ack_log != NULL) {
            printf(", \"acked\": %" PRIu64, r.acked);
        }
        if (o.tls != NULL) {
            printf(", \"tls_handshakes\": %" PRIu64 ", \"tls_resumed\": %"
                   PRIu64, r.tls_handshakes, r.tls_resumed);
        }
        printf("}\n");
    } else {
        printf("ops %" PRIu64 " in %.2fs: %.0f ops/s  p50 %" PRIu64
               "us  p99 %" PRIu64 "us  p999 %" PRIu64 "us  max %" PRIu64
               "us  errors %" PRIu64 "\n",
               r.ops, r.seconds, r.ops_per_s, r.p50_us, r.p99_us, r.p999_us,
               r.max_us, r.errors);
        if (r.keys > 0) {
            printf("gets asked for %" PRIu64 " keys and found %" PRIu64
                   " values\n", r.keys, r.hits);
        }
        if (probe != NULL) {
            printf("replication lag: %" PRIu64 " samples  p50 %" PRIu64
                   "us  p99 %" PRIu64 "us  max %" PRIu64 "us  timeouts %"
                   PRIu64 "\n",
                   lag.samples, lag.p50_us, lag.p99_us, lag.max_us,
                   lag.timeouts);
        }
        if (o.ack_log != NULL) {
            printf("acknowledged writes logged: %" PRIu64 " in %s\n",
                   r.acked, o.ack_log);
        }
        if (o.tls != NULL) {
            printf("tls: %" PRIu64 " handshakes, %" PRIu64 " resumed\n",
                   r.tls_handshakes, r.tls_resumed);
        }
    }
    tls_ctx_destroy(o.tls);
    return r.errors == 0 ? 0 : 1;
}
