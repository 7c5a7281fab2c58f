/*
 * memlimit: how much memory kurad may use, and what to do with it.
 *
 * A database larger than that memory is served from the disk, and a few
 * defaults must then change (etc/tuning.md, "Data larger than memory").
 * The memory is the machine's, or less: systemd's MemoryMax= and every
 * container runtime put a process in a memory cgroup whose limit counts
 * the page cache of the files it reads and writes, so Tokyo Cabinet's
 * mapping and every page of the database kurad touches are charged to
 * it. memlimit_read() finds that limit as the kernel applies it:
 *
 *   cgroup v2   the cgroup named on the "0::" line of /proc/self/cgroup,
 *               under the cgroup2 mount (/proc/self/mountinfo); the
 *               lowest memory.max or memory.high of it and its ancestors
 *   cgroup v1   the cgroup on the "memory" line, under the v1 mount with
 *               the memory controller; hierarchical_memory_limit from its
 *               memory.stat (the lowest of its ancestors' limits), or
 *               else its memory.limit_in_bytes
 *
 * and the same files give the dirty page cache charged to that cgroup
 * (memlimit_dirty()), which checkpoints bound (ulog.h).
 *
 * memlimit_plan() turns it into the settings that depend on it; the
 * reasons and measurements are next to the constants in memlimit.c.
 *
 * Reads files only in memlimit_read() and memlimit_dirty(); the parsers
 * are pure. Any thread.
 */
#ifndef KURA_MEMLIMIT_H
#define KURA_MEMLIMIT_H

#include <limits.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct memlimit {
    uint64_t ram;        /* the machine's memory */
    uint64_t limit;      /* the cgroup's limit; UINT64_MAX: none */
    int version;         /* 1 or 2; 0: no memory cgroup found */
    char dir[PATH_MAX];  /* the cgroup's directory (with the `root` given
                            to memlimit_read()), "" if none */
};

/*
 * Fills `m` for the calling process. `root` prefixes every path read
 * ("" in kurad; a directory of fake /proc and /sys files in tests).
 * Never fails: what cannot be read is left out (no cgroup: limit
 * UINT64_MAX, version 0).
 */
void memlimit_read(struct memlimit *m, const char *root);

/* The memory kurad may use: the lower of the limit and the RAM. */
uint64_t memlimit_bytes(const struct memlimit *m);

/* True when a cgroup limits kurad below the machine's memory. */
bool memlimit_limited(const struct memlimit *m);

/*
 * Bytes of dirty page cache (and page cache being written back) charged
 * to the cgroup, from its memory.stat. Returns 0, or -1 when there is no
 * cgroup or the file cannot be read.
 */
int memlimit_dirty(const struct memlimit *m, uint64_t *dirty);

/* Settings that follow from the memory (see memlimit.c). */
struct memplan {
    int64_t xmsiz;        /* Tokyo Cabinet's mapping, when #xmsiz is not
                             given */
    uint64_t pin_max;     /* lock a bucket array in memory up to this */
    uint64_t dirty_max;   /* checkpoint once this much page cache is
                             dirty; 0: no such bound */
    uint64_t writeback_at; /* write dirty records back (store.h) once
                             this much is dirty; 0: never */
    uint32_t maxconn;     /* connections the memory allows; 0: any */
    uint32_t checkpoint_ms; /* checkpoint at least this often; 0: -ckpt */
    uint64_t checkpoint_log; /* ... or after this much log; 0: default */
};

void memlimit_plan(const struct memlimit *m, struct memplan *out);

/*
 * What a client connection costs kurad, at most, in ordinary use: 6.6
 * KiB measured for an idle one (9,000 connections), 9.9 KiB once each
 * set and got a 1,000-byte value; the rest is headroom for larger values
 * (a connection holds a whole request, and replies up to the 256 KiB
 * output watermark). Under a memory limit the connections may take half
 * of it.
 */
#define MEMLIMIT_CONN_BYTES (32u << 10)

/* Parses a limit file's contents: a number, or "max". */
bool memlimit_parse_value(const char *text, uint64_t *out);

/* Finds `key`'s value in memory.stat text ("key value" lines). */
bool memlimit_stat_value(const char *text, const char *key, uint64_t *out);

#endif
