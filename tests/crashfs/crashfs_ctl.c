/*
 * crashfs_ctl.c: what the test harness talks to or relies on besides the
 * mount itself: the control socket, the armed trigger, and lifting the
 * mount's dirty-page limit so that mapped writes are not throttled.
 *
 * A thread of its own serves line commands on a unix stream socket, so a test
 * can cut power while the FUSE loop is busy or idle. It takes the same mutex
 * as every file system operation, so a cut lands between two operations,
 * never inside one.
 */
#define _GNU_SOURCE
#include "crashfs_state.h"

#include <errno.h>
#include <fcntl.h>
#include <fnmatch.h>
#include <inttypes.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#define CTL_MAX_CLIENTS 16
#define CTL_LINE 1024

struct ctl_client {
    int fd;
    size_t len;
    char buf[CTL_LINE];
};

static int
parse_mode(const char *s, enum cfs_mode *mode)
{
    static const char *names[] = {"drop", "torn", "writeback"};

    for (int i = 0; s != NULL && i < 3; i++) {
        if (strcmp(s, names[i]) == 0) {
            *mode = (enum cfs_mode)i;
            return 0;
        }
    }
    return -1;
}

static int
parse_event(const char *s, enum cfs_event *ev)
{
    static const char *names[] = {"fsync", "fsyncdir", "create", "rename", "unlink", "write"};

    for (int i = 0; s != NULL && i < 6; i++) {
        if (strcmp(s, names[i]) == 0) {
            *ev = (enum cfs_event)i;
            return 0;
        }
    }
    return -1;
}

static void
stats_line(struct cfs_state *st, char *reply, size_t size)
{
    unsigned long long files = 0, pages = 0;

    for (struct cfs_node *n = st->all; n != NULL; n = n->all_next) {
        if (cfs_file_dirty(n)) {
            files++;
            pages += n->npages;
        }
    }
    snprintf(reply, size,
             "ok dirty_files=%llu dirty_pages=%llu pending_dirops=%zu fsyncs=%" PRIu64
             " writes=%" PRIu64, files, pages, st->nops, st->fsyncs, st->writes);
}

static void
ctl_exec(struct cfs_state *st, char *line, char *reply, size_t size)
{
    char *save = NULL, *tok[6] = {NULL};
    int ntok = 0;
    enum cfs_mode mode;
    enum cfs_event ev;

    for (char *t = strtok_r(line, " \t\r", &save); t != NULL && ntok < 6;
         t = strtok_r(NULL, " \t\r", &save)) {
        tok[ntok++] = t;
    }
    pthread_mutex_lock(&st->lock);
    if (ntok == 1 && strcmp(tok[0], "status") == 0) {
        snprintf(reply, size, "ok %s", st->cut ? "cut" : "running");
    } else if (ntok == 2 && strcmp(tok[0], "cut") == 0 && parse_mode(tok[1], &mode) == 0) {
        cfs_cut(st, mode);
        snprintf(reply, size, "ok cut");
    } else if ((ntok == 4 || ntok == 5) && strcmp(tok[0], "arm") == 0 &&
               parse_mode(tok[1], &mode) == 0 && parse_event(tok[2], &ev) == 0) {
        char *end = NULL;
        unsigned long skip = ntok == 5 ? strtoul(tok[4], &end, 10) : 0;
        if (ntok == 5 && (*end != '\0' || tok[4][0] == '-')) {
            snprintf(reply, size, "err bad SKIP");
        } else if (st->cut) {
            snprintf(reply, size, "err already cut");
        } else {
            free(st->arm_glob);
            st->arm_glob = strdup(tok[3]);
            st->armed = st->arm_glob != NULL;
            st->arm_mode = mode;
            st->arm_event = ev;
            st->arm_skip = skip;
            snprintf(reply, size, st->armed ? "ok armed" : "err out of memory");
        }
    } else if (ntok == 1 && strcmp(tok[0], "disarm") == 0) {
        st->armed = false;
        snprintf(reply, size, "ok disarmed");
    } else if (ntok == 1 && strcmp(tok[0], "stats") == 0) {
        stats_line(st, reply, size);
    } else if (ntok == 1 && strcmp(tok[0], "sync") == 0) {
        snprintf(reply, size, st->cut ? "err already cut" :
                              cfs_sync_all(st) == 0 ? "ok synced" : "err sync failed");
    } else {
        snprintf(reply, size, "err usage: status | cut MODE | arm MODE EVENT GLOB [SKIP] | "
                              "disarm | stats | sync (MODE: drop torn writeback)");
    }
    pthread_mutex_unlock(&st->lock);
}

/* Handles what arrived on one client; false: close it. */
static bool
ctl_serve(struct cfs_state *st, struct ctl_client *c)
{
    ssize_t r = read(c->fd, c->buf + c->len, sizeof(c->buf) - c->len);

    if (r <= 0) {
        return r < 0 && (errno == EINTR || errno == EAGAIN);
    }
    c->len += (size_t)r;
    char *nl;
    while ((nl = memchr(c->buf, '\n', c->len)) != NULL) {
        char reply[256];
        size_t used = (size_t)(nl - c->buf) + 1;
        *nl = '\0';
        ctl_exec(st, c->buf, reply, sizeof(reply) - 1);
        strcat(reply, "\n");
        if (write(c->fd, reply, strlen(reply)) < 0) {
            return false;
        }
        memmove(c->buf, c->buf + used, c->len - used);
        c->len -= used;
    }
    return c->len < sizeof(c->buf);
}

static void *
ctl_main(void *arg)
{
    struct cfs_state *st = arg;
    struct ctl_client clients[CTL_MAX_CLIENTS];
    size_t nclients = 0;

    for (;;) {
        struct pollfd pfd[CTL_MAX_CLIENTS + 2];
        pfd[0] = (struct pollfd){.fd = st->wake_pipe[0], .events = POLLIN};
        pfd[1] = (struct pollfd){.fd = nclients < CTL_MAX_CLIENTS ? st->ctl_fd : -1,
                                 .events = POLLIN};
        for (size_t i = 0; i < nclients; i++) {
            pfd[i + 2] = (struct pollfd){.fd = clients[i].fd, .events = POLLIN};
        }
        if (poll(pfd, nclients + 2, -1) < 0) {
            if (errno == EINTR) {
                continue;
            }
            cfs_log("control poll: %s", strerror(errno));
            break;
        }
        if (pfd[0].revents) {
            break;
        }
        for (size_t i = nclients; i-- > 0;) {
            if (pfd[i + 2].revents && !ctl_serve(st, &clients[i])) {
                close(clients[i].fd);
                clients[i] = clients[--nclients];
            }
        }
        if (pfd[1].revents & POLLIN) {
            int fd = accept4(st->ctl_fd, NULL, NULL, SOCK_CLOEXEC);
            if (fd >= 0) {
                clients[nclients].fd = fd;
                clients[nclients++].len = 0;
            }
        }
    }
    while (nclients > 0) {
        close(clients[--nclients].fd);
    }
    return NULL;
}

int
cfs_ctl_start(struct cfs_state *st, const char *path)
{
    struct sockaddr_un sa = {.sun_family = AF_UNIX};

    if (strlen(path) >= sizeof(sa.sun_path)) {
        return -ENAMETOOLONG;
    }
    strcpy(sa.sun_path, path);
    st->ctl_path = strdup(path);
    st->ctl_fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (st->ctl_path == NULL || st->ctl_fd < 0 || pipe2(st->wake_pipe, O_CLOEXEC) != 0) {
        return -errno;
    }
    unlink(path);                       /* a socket left by an earlier run */
    if (bind(st->ctl_fd, (struct sockaddr *)&sa, sizeof(sa)) != 0 ||
        listen(st->ctl_fd, 16) != 0) {
        return -errno;
    }
    int rc = pthread_create(&st->ctl_thread, NULL, ctl_main, st);
    if (rc != 0) {
        return -rc;
    }
    st->ctl_started = true;
    return 0;
}

void
cfs_ctl_stop(struct cfs_state *st)
{
    if (st->ctl_started) {
        char c = 'q';
        if (write(st->wake_pipe[1], &c, 1) != 1) {
            cfs_log("cannot wake the control thread: %s", strerror(errno));
        }
        pthread_join(st->ctl_thread, NULL);
        st->ctl_started = false;
    }
    for (int i = 0; i < 2; i++) {
        if (st->wake_pipe[i] >= 0) {
            close(st->wake_pipe[i]);
        }
    }
    if (st->ctl_fd >= 0) {
        close(st->ctl_fd);
        unlink(st->ctl_path);
    }
    free(st->ctl_path);
}

/* The path relative to the mount root of dir, joined with name if given. */
static bool
event_path(const struct cfs_node *dir, const char *name, char *path, size_t size)
{
    if (dir == NULL || cfs_node_path(dir, path, size) != 0) {
        return false;
    }
    size_t len = strlen(path);
    int w = name != NULL ? snprintf(path + len, size - len, "%s%s", len ? "/" : "", name) : 0;
    return w >= 0 && (size_t)w < size - len;
}

static bool
path_matches(const char *glob, const char *path)
{
    const char *base = strrchr(path, '/');

    base = base != NULL ? base + 1 : path;
    return fnmatch(glob, path, 0) == 0 || fnmatch(glob, base, 0) == 0;
}

bool
cfs_trigger(struct cfs_state *st, enum cfs_event ev, const struct cfs_node *dir,
            const char *name, const struct cfs_node *dir2, const char *name2)
{
    char path[4096], path2[4096];

    if (!st->armed || st->cut || ev != st->arm_event) {
        return false;
    }
    bool hit = event_path(dir, name, path, sizeof(path)) && path_matches(st->arm_glob, path);
    if (!hit && event_path(dir2, name2, path2, sizeof(path2)) &&
        path_matches(st->arm_glob, path2)) {
        hit = true;
        memcpy(path, path2, sizeof(path));
    }
    if (!hit) {
        return false;
    }
    if (st->arm_skip > 0) {
        st->arm_skip--;
        return false;
    }
    cfs_log("armed trigger fired on /%s", path);
    cfs_cut(st, st->arm_mode);
    return true;
}

/* FUSE bdis have a strict 1% dirty limit that throttles mapped writes to a
 * crawl; lift it for this mount (found by its st_dev in mountinfo, without
 * touching the mount, which nobody serves yet). */
void
cfs_lift_dirty_limit(const char *mountpoint)
{
    FILE *f = fopen("/proc/self/mountinfo", "r");
    char line[8192], mp[4096], path[128];
    unsigned maj, min, found = 0, found_min = 0;

    for (; f != NULL && fgets(line, sizeof(line), f) != NULL;) {
        if (sscanf(line, "%*u %*u %u:%u %*s %4095s", &maj, &min, mp) != 3) {
            continue;
        }
        char *w = mp;                /* undo mountinfo's \ooo escapes */
        for (char *r = mp; *r; w++) {
            unsigned oct;
            if (r[0] == '\\' && sscanf(r + 1, "%3o", &oct) == 1) {
                *w = (char)oct;
                r += 4;
            } else {
                *w = *r++;
            }
        }
        *w = '\0';
        if (maj == 0 && strcmp(mp, mountpoint) == 0) {
            found = 1;
            found_min = min;
        }
    }
    if (f != NULL) {
        fclose(f);
    }
    if (!found) {
        cfs_log("bdi limits: mount %s not found in mountinfo", mountpoint);
        return;
    }
    static const char *settings[][2] = {{"strict_limit", "0"}, {"max_ratio", "100"}};
    for (int i = 0; i < 2; i++) {
        snprintf(path, sizeof(path), "/sys/class/bdi/0:%u/%s", found_min, settings[i][0]);
        if (access(path, F_OK) != 0) {
            continue;
        }
        int fd = open(path, O_WRONLY | O_CLOEXEC);
        ssize_t len = (ssize_t)strlen(settings[i][1]);
        if (fd < 0 || write(fd, settings[i][1], (size_t)len) != len) {
            cfs_log("bdi limits: writing %s to %s: %s", settings[i][1], path, strerror(errno));
        }
        if (fd >= 0) {
            close(fd);
        }
    }
}
