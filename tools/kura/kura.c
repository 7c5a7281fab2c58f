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
#include <getopt.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "backup.h"
#include "bench.h"
#include "bench_cmd.h"
#include "check_cmd.h"
#include "config.h"
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
            "           [--ack-log FILE [--own-keys K]] [--warmup SEC]\n"
            "           [--no-resume]\n"
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
            "           [--prometheus | --watch SECS [--count N]]\n"
            "\n"
            "Every command that connects (bench, verify, stallwatch, load,\n"
            "backup, ping, stats) also takes, for kurad's -tlsport:\n"
            "  --tls [--cacert FILE] [--cert FILE --key FILE]\n");
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
        return bench_cmd(argc - 1, argv + 1);
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
        return check_cmd(argc - 1, argv + 1);
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
