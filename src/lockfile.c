/*
 * lockfile: flock()ed files that name their holder (see lockfile.h).
 */
#include "lockfile.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/file.h>
#include <unistd.h>

/* The pid written in the file, or 0. */
static long
_holder(int fd)
{
    char text[32];
    ssize_t n = pread(fd, text, sizeof(text) - 1, 0);
    if (n <= 0) {
        return 0;
    }
    text[n] = '\0';
    long pid = strtol(text, NULL, 10);
    return pid > 0 ? pid : 0;
}

int
lockfile_open(const char *path, long *holder)
{
    *holder = 0;
    int fd = open(path, O_RDWR | O_CREAT | O_CLOEXEC, 0644);
    if (fd < 0) {
        return -1;
    }
    if (flock(fd, LOCK_EX | LOCK_NB) != 0) {
        int saved = errno;
        if (saved == EWOULDBLOCK) {
            *holder = _holder(fd);
        }
        close(fd);
        errno = saved;
        return -1;
    }
    return fd;
}

int
lockfile_name_holder(int fd)
{
    char text[32];
    int n = snprintf(text, sizeof(text), "%ld\n", (long)getpid());
    if (ftruncate(fd, 0) != 0 || pwrite(fd, text, (size_t)n, 0) != n) {
        return -1;
    }
    return 0;
}

int
lockfile_take(const char *path, long *holder)
{
    int fd = lockfile_open(path, holder);
    if (fd >= 0) {
        (void)lockfile_name_holder(fd);
    }
    return fd;
}

int
lockfile_held(const char *path, long *holder)
{
    *holder = 0;
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0) {
        return errno == ENOENT ? 0 : -1;
    }
    int held = 0;
    if (flock(fd, LOCK_SH | LOCK_NB) != 0) {
        if (errno != EWOULDBLOCK) {
            int saved = errno;
            close(fd);
            errno = saved;
            return -1;
        }
        *holder = _holder(fd);
        held = 1;
    }
    close(fd);
    return held;
}
