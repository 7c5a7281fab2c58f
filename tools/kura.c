/*
 * kura: the command-line tool for kurad.
 *
 *   kura bench [options]     closed-loop load against a memcached-protocol
 *                            server; prints ops/s and latency percentiles
 *   kura verify --ack-log FILE --port P ...
 *                            prove no write acknowledged to a bench was lost
 *   kura stallwatch [options]
 *                            single-connection inserts, reporting freezes
 *   kura load FILE | --generate N --out FILE
 *                            bulk-load a TSV file, or make one to load
 *   kura ulog dump|verify|replay ...
 *                            read, check or replay an update log
 *   kura check DBNAME        structural check of a database file
 *   kura optimize DBNAME     rebuild a stopped database with new tuning
 *   kura backup ... OUT.tch  hot backup of a running server
 *
 * Each subcommand lives in its own file; this file only dispatches.
 */
#include <errno.h>
#include <getopt.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "backup.h"
#include "bench.h"
#include "config.h"
#include "dbcheck.h"
#include "dbspec.h"
#include "lagprobe.h"
#include "load.h"
#include "optimize.h"
#include "ping.h"
#include "stallwatch.h"
#include "stats_cmd.h"
#include "ulog_cmd.h"
#include "util.h"
#include "verify.h"

static void
_usage(FILE *out)
{
    fprintf(out,
            "usage: kura <command> [options]\n"
            "\n"
            "commands:\n"
            "  bench       load a server and report throughput and latency\n"
            "  verify      check servers hold every write a bench had "
            "acknowledged\n"
            "  stallwatch  insert one at a time and report any freeze\n"
            "  load        bulk-load a key<TAB>value file, or generate one\n"
            "  ulog        dump, verify or replay an update log\n"
            "  check       check a database file's structure\n"
            "  optimize    rebuild a stopped database, e.g. with a larger "
            "bnum\n"
            "  backup      copy a running server's database, with its log "
            "position\n"
            "  ping        is a server answering and accepting writes "
            "(exit 0)?\n"
            "  stats       a server's stats, or the same for Prometheus\n"
            "  version     print the version\n"
            "\n"
            "kura bench [--host H] [--port P] [--conns N] [--pipeline D]\n"
            "           [--proto text|binary|meta] [--multiget N]\n"
            "           [--keyspace K] [--prefix S] [--reads PCT]\n"
            "           [--value-size B] [--duration SEC | --ops N]\n"
            "           [--connect [--quit]] [--json] [--lag-to PORT]\n"
            "           [--ack-log FILE [--own-keys K]]\n"
            "kura verify --ack-log FILE [--host H] --port P [--port P2 ...]\n"
            "kura stallwatch [--host H] [--port P] [--count N] "
            "[--value-size B]\n"
            "                [--threshold-ms T] [--json]\n"
            "kura load FILE [--host H] [--port P] [--conns N] [--window W]\n"
            "               [--exptime S]\n"
            "kura load --generate N --out FILE [--start-time T]\n"
            "kura ulog dump DIR [--after LSN]\n"
            "kura ulog verify DIR\n"
            "kura ulog replay DIR DBNAME [--after LSN | --pos FILE]\n"
            "                [--until TIME]\n"
            "kura check DBNAME\n"
            "kura optimize DBNAME[#bnum=N#apow=N#fpow=N#opts=...]\n"
            "kura backup [--host H] --port P [--rkey FILE] [--timeout MS] "
            "OUT.tch\n"
            "kura ping [--host H] [--port P] [--timeout MS] [--auth FILE]\n"
            "          [--quiet]\n"
            "kura stats [--host H] [--port P] [--timeout MS] [--auth FILE]\n"
            "           [--prometheus]\n");
}

static int
_cmd_bench(int argc, char **argv)
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
    int lag_port = 0;
    uint64_t multiget;
    int ch;

    optind = 1;
    while ((ch = getopt_long(argc, argv, "", longopts, NULL)) != -1) {
        switch (ch) {
        case 'h': o.host = optarg; break;
        case 'p': o.port = atoi(optarg); break;
        case 'c': o.conns = atoi(optarg); break;
        case 'd': o.pipeline = atoi(optarg); break;
        case 'k': o.keyspace = strtoull(optarg, NULL, 10); break;
        case 'x': o.prefix = optarg; break;
        case 'r': o.read_pct = atoi(optarg); break;
        case 'v': o.value_size = strtoull(optarg, NULL, 10); break;
        case 't': o.duration_s = atof(optarg); o.ops = 0; break;
        case 'n': o.ops = strtoull(optarg, NULL, 10); o.duration_s = 0; break;
        case 'C': o.connect_per_request = true; break;
        case 'Q': o.quit = true; break;
        case 'j': json = true; break;
        case 'L': lag_port = atoi(optarg); break;
        case 'A': o.ack_log = optarg; break;
        case 'K':
            if (!util_parse_uint(optarg, strlen(optarg), UINT32_MAX,
                                 &o.own_keys) || o.own_keys == 0) {
                fprintf(stderr, "kura bench: --own-keys wants a count >= 1\n");
                return 2;
            }
            break;
        case 'P':
            if (!bench_wire_proto_parse(optarg, &o.proto)) {
                fprintf(stderr, "kura bench: --proto is text, binary or "
                                "meta\n");
                return 2;
            }
            break;
        case 'M':
            if (!util_parse_uint(optarg, strlen(optarg), 1000, &multiget) ||
                multiget == 0) {
                fprintf(stderr, "kura bench: --multiget wants 1 to 1000 "
                                "keys\n");
                return 2;
            }
            o.multiget = (int)multiget;
            break;
        default: _usage(stderr); return 2;
        }
    }
    if (o.conns < 1 || o.conns > 1000000 || o.pipeline < 1 ||
        o.pipeline > 64 || o.keyspace < 1 || strlen(o.prefix) > 200 ||
        o.read_pct < 0 || o.read_pct > 100 ||
        (o.duration_s <= 0 && o.ops == 0)) {
        fprintf(stderr, "kura bench: invalid options\n");
        return 2;
    }
    if (o.connect_per_request) {
        o.pipeline = 1;
    }
    struct bench_result r;
    struct lagprobe *probe = NULL;
    struct lagprobe_result lag;
    memset(&lag, 0, sizeof(lag));
    if (lag_port > 0) {
        probe = lagprobe_start(o.host, o.port, lag_port, 20);
        if (probe == NULL) {
            fprintf(stderr, "kura bench: cannot start the lag probe\n");
            return 1;
        }
    }
    int rc = bench_run(&o, &r);
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
        if (o.ack_log != NULL) {
            printf(", \"acked\": %" PRIu64, r.acked);
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
    }
    return r.errors == 0 ? 0 : 1;
}

/* Exit status: 0 sound, 1 damaged or unreadable, 2 usage. */
static int
_cmd_check(int argc, char **argv)
{
    struct dbspec spec;
    char err[256];
    if (argc != 2) {
        _usage(stderr);
        return 2;
    }
    if (!dbspec_parse(argv[1], &spec, err, sizeof(err))) {
        fprintf(stderr, "kura check: %s\n", err);
        return 2;
    }
    if (spec.kind != DBSPEC_HASH_FILE) {
        fprintf(stderr, "kura check: %s is not a database file\n", argv[1]);
        return 2;
    }
    struct dbcheck_report r;
    switch (dbcheck_file(spec.path, DBCHECK_DEEP, &r)) {
    case DBCHECK_OK:
        printf("%s: %" PRIu64 " records, %" PRIu64 " free blocks, %" PRIu64
               " bytes: sound\n", spec.path, r.records, r.free_blocks,
               r.file_size);
        if (r.unsealed > 0) {
            printf("%s: note: %" PRIu64 " records were written before "
                   "records carried seals; kura optimize rewrites them\n",
                   spec.path, r.unsealed);
        }
        if (r.was_open) {
            printf("%s: note: the file was not closed cleanly; kurad "
                   "checks it in full at start\n", spec.path);
        }
        if (r.records != r.header_records) {
            printf("%s: note: the header counts %" PRIu64 " records\n",
                   spec.path, r.header_records);
        }
        return 0;
    case DBCHECK_DAMAGED:
        printf("%s: damaged at offset %" PRIu64 ": %s\n", spec.path,
               r.damage_offset, r.damage);
        return 1;
    default:
        fprintf(stderr, "kura check: %s: %s\n", spec.path, strerror(errno));
        return 1;
    }
}

int
main(int argc, char **argv)
{
    if (argc < 2 || strcmp(argv[1], "-h") == 0 ||
        strcmp(argv[1], "--help") == 0) {
        _usage(argc < 2 ? stderr : stdout);
        return argc < 2 ? 2 : 0;
    }
    if (strcmp(argv[1], "bench") == 0) {
        return _cmd_bench(argc - 1, argv + 1);
    }
    if (strcmp(argv[1], "verify") == 0) {
        return verify_cmd(argc - 1, argv + 1);
    }
    if (strcmp(argv[1], "stallwatch") == 0) {
        return stallwatch_cmd(argc - 1, argv + 1);
    }
    if (strcmp(argv[1], "load") == 0) {
        return load_cmd(argc - 1, argv + 1);
    }
    if (strcmp(argv[1], "ulog") == 0) {
        return ulog_cmd(argc - 1, argv + 1);
    }
    if (strcmp(argv[1], "check") == 0) {
        return _cmd_check(argc - 1, argv + 1);
    }
    if (strcmp(argv[1], "optimize") == 0) {
        return optimize_cmd(argc - 1, argv + 1);
    }
    if (strcmp(argv[1], "backup") == 0) {
        return backup_cmd(argc - 1, argv + 1);
    }
    if (strcmp(argv[1], "ping") == 0) {
        return ping_cmd(argc - 1, argv + 1);
    }
    if (strcmp(argv[1], "stats") == 0) {
        return stats_cmd(argc - 1, argv + 1);
    }
    if (strcmp(argv[1], "version") == 0) {
        printf("kura %s\n", PACKAGE_VERSION);
        return 0;
    }
    fprintf(stderr, "kura: unknown command '%s'\n", argv[1]);
    _usage(stderr);
    return 2;
}
