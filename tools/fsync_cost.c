/*
 * fsync_cost: the CPU a durable write costs on this machine, with nothing
 * else running in the process (etc/tuning-experiments.md, "The asker
 * syncs"); built and run by tools/fsync-cost, not installed.
 *
 *   fsync_cost MODE BYTES COUNT FILE
 *
 * FILE is written with 128 MiB of zeros and synced first, as the update
 * log's prepared space is (src/ulog.h, U6), so each write below lands on
 * blocks already allocated and written. Then COUNT times, at the next
 * offset, one of:
 *
 *   fdatasync  pwrite(BYTES) then fdatasync(): what kurad's log does
 *   dsync      pwritev2(BYTES, RWF_DSYNC): the same in one call
 *   direct     pwrite of BYTES rounded up to 4 KiB through O_DIRECT |
 *              O_DSYNC: no page cache, the sync in the write
 *   nosync     pwrite(BYTES) alone: the cost of the copy, to subtract
 *
 * Prints the wall and CPU time (this thread's user + system, getrusage)
 * per operation. FILE is removed at the end.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/uio.h>
#include <time.h>
#include <unistd.h>

#define FILE_BYTES ((off_t)128 << 20)
#define BLOCK 4096

static double
_wall_s(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + (double)t.tv_nsec / 1e9;
}

static double
_cpu_s(void)
{
    struct rusage r;
    getrusage(RUSAGE_THREAD, &r);
    return (double)(r.ru_utime.tv_sec + r.ru_stime.tv_sec) +
           (double)(r.ru_utime.tv_usec + r.ru_stime.tv_usec) / 1e6;
}

static int
_fail(const char *what)
{
    fprintf(stderr, "fsync_cost: %s: %s\n", what, strerror(errno));
    return 1;
}

int
main(int argc, char **argv)
{
    if (argc != 5) {
        fprintf(stderr, "usage: fsync_cost fdatasync|dsync|direct|nosync "
                        "BYTES COUNT FILE\n");
        return 2;
    }
    const char *mode = argv[1];
    size_t bytes = strtoul(argv[2], NULL, 10);
    long count = strtol(argv[3], NULL, 10);
    const char *path = argv[4];
    size_t span = (bytes + BLOCK - 1) / BLOCK * BLOCK;
    if (bytes == 0 || count <= 0 || span * (size_t)count > FILE_BYTES) {
        fprintf(stderr, "fsync_cost: BYTES x COUNT must fit in 128 MiB\n");
        return 2;
    }

    int fd = open(path, O_RDWR | O_CREAT | O_TRUNC, 0600);
    if (fd < 0) {
        return _fail(path);
    }
    static char zeros[1 << 20];
    for (off_t off = 0; off < FILE_BYTES; off += (off_t)sizeof(zeros)) {
        if (pwrite(fd, zeros, sizeof(zeros), off) != (ssize_t)sizeof(zeros)) {
            return _fail("write zeros");
        }
    }
    if (fsync(fd) != 0) {
        return _fail("fsync");
    }
    int dfd = -1;
    if (strcmp(mode, "direct") == 0) {
        dfd = open(path, O_RDWR | O_DIRECT | O_DSYNC);
        if (dfd < 0) {
            return _fail("open O_DIRECT");
        }
    }
    void *buf;
    if (posix_memalign(&buf, BLOCK, span) != 0) {
        return _fail("memory");
    }
    memset(buf, 'x', span);

    double wall = _wall_s();
    double cpu = _cpu_s();
    off_t off = 0;
    for (long i = 0; i < count; i++) {
        ssize_t n;
        if (strcmp(mode, "fdatasync") == 0) {
            n = pwrite(fd, buf, bytes, off);
            if (n == (ssize_t)bytes && fdatasync(fd) != 0) {
                n = -1;
            }
        } else if (strcmp(mode, "dsync") == 0) {
            struct iovec v = {buf, bytes};
            n = pwritev2(fd, &v, 1, off, RWF_DSYNC);
        } else if (strcmp(mode, "direct") == 0) {
            n = pwrite(dfd, buf, span, off) == (ssize_t)span ? (ssize_t)bytes
                                                             : -1;
        } else if (strcmp(mode, "nosync") == 0) {
            n = pwrite(fd, buf, bytes, off);
        } else {
            fprintf(stderr, "fsync_cost: unknown mode %s\n", mode);
            return 2;
        }
        if (n != (ssize_t)bytes) {
            return _fail(mode);
        }
        off += (off_t)(strcmp(mode, "direct") == 0 ? span : bytes);
    }
    cpu = _cpu_s() - cpu;
    wall = _wall_s() - wall;
    printf("%-9s %6zu bytes: %7.1f us wall, %6.1f us CPU per operation\n",
           mode, bytes, wall / (double)count * 1e6,
           cpu / (double)count * 1e6);
    free(buf);
    if (dfd >= 0) {
        close(dfd);
    }
    close(fd);
    unlink(path);
    return 0;
}
