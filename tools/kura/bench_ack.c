/*
 * bench_ack: `kura bench`'s log of acknowledged writes (see bench_ack.h).
 */
#include "bench_ack.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "util.h"

#define ACK_BUF_SIZE ((size_t)1 << 20)
#define ACK_LINE_MAX (BENCH_KEY_CAP + UTIL_U64_DIGITS + 2)

int
bench_ack_open(struct bench_ack *a, const char *path, uint64_t now_ns)
{
    memset(a, 0, sizeof(*a));
    a->path = path;
    a->flushed_ns = now_ns;
    a->fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
    if (a->fd < 0) {
        fprintf(stderr, "bench: cannot create the ack log %s: %s\n", path,
                strerror(errno));
        return -1;
    }
    a->buf = malloc(ACK_BUF_SIZE);
    if (a->buf == NULL) {
        fprintf(stderr, "bench: out of memory (%zu bytes)\n", ACK_BUF_SIZE);
        exit(1);
    }
    return 0;
}

bool
bench_ack_flush(struct bench_ack *a, uint64_t now_ns)
{
    size_t off = 0;
    bool ok = true;

    while (off < a->len && !a->failed) {
        ssize_t n = write(a->fd, a->buf + off, a->len - off);
        if (n < 0) {
            if (errno == EINTR) {
                continue;
            }
            /* The log stays a true (if shorter) list of acknowledged
             * writes; verify would just check fewer of them. */
            fprintf(stderr, "bench: cannot write the ack log %s: %s; "
                            "logging stopped\n", a->path, strerror(errno));
            a->failed = true;
            ok = false;
            break;
        }
        off += (size_t)n;
    }
    a->len = 0;
    a->flushed_ns = now_ns;
    return ok;
}

bool
bench_ack_append(struct bench_ack *a, const struct bench_keys *k, int conn,
                 uint64_t n, uint64_t seq, uint64_t now_ns)
{
    bool ok = true;
    if (a->failed) {
        return true;
    }
    if (a->len + ACK_LINE_MAX > ACK_BUF_SIZE) {
        ok = bench_ack_flush(a, now_ns);
    }
    char *p = a->buf + a->len;
    size_t len = bench_keys_own(k, conn, n, p);
    p[len++] = ' ';
    len += util_u64_to_dec(seq, p + len);
    p[len++] = '\n';
    a->len += len;
    a->lines++;
    return ok;
}

bool
bench_ack_close(struct bench_ack *a, uint64_t now_ns)
{
    if (a->fd < 0) {
        return true;
    }
    bool ok = bench_ack_flush(a, now_ns);
    if (close(a->fd) != 0 && !a->failed) {
        fprintf(stderr, "bench: cannot write the ack log %s: %s\n", a->path,
                strerror(errno));
        a->failed = true;
        ok = false;
    }
    a->fd = -1;
    free(a->buf);
    a->buf = NULL;
    return ok;
}
