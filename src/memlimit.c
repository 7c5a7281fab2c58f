/*
 * memlimit: the memory kurad may use (see memlimit.h).
 */
#include "memlimit.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "util.h"

/*
 * Tokyo Cabinet's mapping. Inside it a record is a memory copy, beyond
 * it a pread()/pwrite(); a database that fits in memory is faster mapped
 * (etc/tuning.md, "xmsiz"), so the default stays 1 GiB where the memory
 * allows. Under a limit smaller than the database, mapped pages were
 * the worst kind to have: every fault read around itself (the virtual
 * disk here asks for 8 MiB of read-ahead) and uniform gets fell to 243/s.
 * With read-around off (MADV_RANDOM, store.c) the mapping costs no extra
 * reads, but its pages are still harder to reclaim than the page cache
 * a pread() leaves, so it is kept to a quarter of the memory.
 */
#define MEMLIMIT_XMSIZ_MAX ((int64_t)1 << 30)
#define MEMLIMIT_XMSIZ_SHARE 4
/*
 * The bucket array is read by every lookup: locked in memory (store.h,
 * store_pin_buckets()) while it takes at most a quarter of the memory.
 * Beyond that the rest would not hold a useful share of the records.
 */
#define MEMLIMIT_PIN_SHARE 4
/*
 * Dirty page cache. Inside a cgroup v1 limit the kernel's dirty limits
 * are the machine's (a fifth of 23 GB here), so a database's dirty pages
 * could fill the whole limit; reclaim then cannot free them without
 * waiting for their write-back, and every allocation stalls (the fill of
 * a 3M-key database fell from 23,210 to 1,200 sets/s past the limit).
 * Checkpoints write them back once an eighth of the memory is dirty.
 */
#define MEMLIMIT_DIRTY_SHARE 8
#define MEMLIMIT_DIRTY_MIN ((uint64_t)8 << 20)
/*
 * Redo after a crash reads a page for each record, so under a limit it
 * runs at the disk's pace (23,000 records/s with reads ahead, against
 * hundreds of thousands from memory), and 25 s of updates took 5-15 s to
 * redo. With the dirty pages written back as they come, a checkpoint
 * has little left to write (the bucket array), so it is taken every 5 s
 * or 64 MiB of log, which bounds the redo near 3 s.
 */
#define MEMLIMIT_CHECKPOINT_MS 5000
#define MEMLIMIT_CHECKPOINT_LOG ((uint64_t)64 << 20)

bool
memlimit_parse_value(const char *text, uint64_t *out)
{
    size_t n = strcspn(text, "\n");
    if (n == 3 && memcmp(text, "max", 3) == 0) {
        *out = UINT64_MAX;
        return true;
    }
    return util_parse_uint(text, n, UINT64_MAX, out);
}

bool
memlimit_stat_value(const char *text, const char *key, uint64_t *out)
{
    size_t klen = strlen(key);
    for (const char *line = text; *line != '\0';) {
        const char *end = strchr(line, '\n');
        size_t len = end != NULL ? (size_t)(end - line) : strlen(line);
        if (len > klen && memcmp(line, key, klen) == 0 && line[klen] == ' ') {
            return util_parse_uint(line + klen + 1, len - klen - 1,
                                   UINT64_MAX, out);
        }
        if (end == NULL) {
            break;
        }
        line = end + 1;
    }
    return false;
}

/* Reads `root``path` into `buf` (`cap` bytes, terminated). */
static bool
_read(const char *root, const char *path, char *buf, size_t cap)
{
    char full[PATH_MAX];
    if ((size_t)snprintf(full, sizeof(full), "%s%s", root, path) >=
        sizeof(full)) {
        return false;
    }
    int fd = open(full, O_RDONLY | O_CLOEXEC);
    if (fd < 0) {
        return false;
    }
    size_t len = 0;
    while (len + 1 < cap) {
        ssize_t n = read(fd, buf + len, cap - 1 - len);
        if (n < 0 && errno == EINTR) {
            continue;
        }
        if (n <= 0) {
            break;
        }
        len += (size_t)n;
    }
    close(fd);
    buf[len] = '\0';
    return len > 0;
}

/*
 * Finds, in mountinfo text, the mount of the cgroup hierarchy: cgroup2
 * (`v2`), or cgroup v1 with the memory controller. Writes its mount point
 * and its root within the hierarchy.
 */
static bool
_mount(const char *info, bool v2, char *point, size_t plen, char *mroot,
       size_t rlen)
{
    for (const char *line = info; *line != '\0';) {
        const char *end = strchr(line, '\n');
        size_t len = end != NULL ? (size_t)(end - line) : strlen(line);
        char copy[1024];
        if (len < sizeof(copy)) {
            memcpy(copy, line, len);
            copy[len] = '\0';
            /* id parent dev root point options [tags] - type source super */
            char *sep = strstr(copy, " - ");
            char *save = NULL;
            if (sep != NULL) {
                *sep = '\0';
                char *type = strtok_r(sep + 3, " ", &save);
                strtok_r(NULL, " ", &save); /* source */
                char *super = strtok_r(NULL, " ", &save);
                char *f[5];
                char *s2 = NULL;
                int nf = 0;
                for (char *t = strtok_r(copy, " ", &s2); t != NULL && nf < 5;
                     t = strtok_r(NULL, " ", &s2)) {
                    f[nf++] = t;
                }
                bool match = false;
                if (nf == 5 && type != NULL) {
                    if (v2) {
                        match = strcmp(type, "cgroup2") == 0;
                    } else if (strcmp(type, "cgroup") == 0 && super != NULL) {
                        char *s3 = NULL;
                        for (char *o = strtok_r(super, ",", &s3); o != NULL;
                             o = strtok_r(NULL, ",", &s3)) {
                            match = match || strcmp(o, "memory") == 0;
                        }
                    }
                }
                if (match) {
                    util_strlcpy(point, f[4], plen);
                    util_strlcpy(mroot, f[3], rlen);
                    return true;
                }
            }
        }
        if (end == NULL) {
            break;
        }
        line = end + 1;
    }
    return false;
}

/* The cgroup path on the line of /proc/self/cgroup for v2 ("0::") or v1
 * ("N:...memory...:"). */
static bool
_own_cgroup(const char *text, bool v2, char *out, size_t len)
{
    for (const char *line = text; *line != '\0';) {
        const char *end = strchr(line, '\n');
        size_t n = end != NULL ? (size_t)(end - line) : strlen(line);
        const char *c1 = memchr(line, ':', n);
        const char *c2 = c1 != NULL ? memchr(c1 + 1, ':', n - (size_t)(c1 + 1 - line))
                                    : NULL;
        if (c2 != NULL) {
            size_t clen = (size_t)(c2 - c1 - 1);
            bool match;
            if (v2) {
                match = c1 - line == 1 && line[0] == '0' && clen == 0;
            } else {
                match = false;
                for (const char *p = c1 + 1; p < c2;) {
                    const char *comma = memchr(p, ',', (size_t)(c2 - p));
                    const char *e = comma != NULL ? comma : c2;
                    match = match || ((size_t)(e - p) == 6 &&
                                      memcmp(p, "memory", 6) == 0);
                    p = e + 1;
                }
            }
            size_t plen = n - (size_t)(c2 + 1 - line);
            if (match && plen < len) {
                memcpy(out, c2 + 1, plen);
                out[plen] = '\0';
                return true;
            }
        }
        if (end == NULL) {
            break;
        }
        line = end + 1;
    }
    return false;
}

/* The cgroup's directory: the mount point, plus its path below the
 * mount's own root (a cgroup namespace shows that root as "/"). */
static void
_dir(char *out, size_t len, const char *point, const char *mroot,
     const char *path)
{
    size_t rl = strlen(mroot);
    if (strcmp(mroot, "/") != 0 && strncmp(path, mroot, rl) == 0) {
        path += rl;
    }
    snprintf(out, len, "%s%s", point, strcmp(path, "/") == 0 ? "" : path);
}

static uint64_t
_ram(void)
{
    long pages = sysconf(_SC_PHYS_PAGES);
    long page = sysconf(_SC_PAGESIZE);
    return pages > 0 && page > 0 ? (uint64_t)pages * (uint64_t)page
                                 : UINT64_MAX;
}

/* cgroup v2: the lowest memory.max or memory.high from `dir` up to the
 * mount point. */
static uint64_t
_v2_limit(const char *root, const char *point, const char *dir)
{
    uint64_t limit = UINT64_MAX;
    char d[PATH_MAX];
    util_strlcpy(d, dir, sizeof(d));
    size_t plen = strlen(point);
    for (;;) {
        static const char *const files[] = {"/memory.max", "/memory.high"};
        for (size_t i = 0; i < 2; i++) {
            char path[PATH_MAX + 16];
            char text[64];
            uint64_t v;
            snprintf(path, sizeof(path), "%s%s", d, files[i]);
            if (_read(root, path, text, sizeof(text)) &&
                memlimit_parse_value(text, &v) && v < limit) {
                limit = v;
            }
        }
        if (strlen(d) <= plen) {
            break;
        }
        char *slash = strrchr(d, '/');
        if (slash == NULL || (size_t)(slash - d) < plen) {
            break;
        }
        *slash = '\0';
    }
    return limit;
}

void
memlimit_read(struct memlimit *m, const char *root)
{
    char info[16384];
    char own[4096];
    char point[PATH_MAX];
    char mroot[PATH_MAX];

    memset(m, 0, sizeof(*m));
    m->ram = _ram();
    m->limit = UINT64_MAX;
    if (!_read(root, "/proc/self/mountinfo", info, sizeof(info)) ||
        !_read(root, "/proc/self/cgroup", own, sizeof(own))) {
        return;
    }
    char path[PATH_MAX];
    char dir[PATH_MAX];
    /* v2 where it controls memory for this cgroup, else v1. */
    if (_mount(info, true, point, sizeof(point), mroot, sizeof(mroot)) &&
        _own_cgroup(own, true, path, sizeof(path))) {
        _dir(dir, sizeof(dir), point, mroot, path);
        char ctl[512];
        char file[PATH_MAX + 32];
        snprintf(file, sizeof(file), "%s/cgroup.controllers", dir);
        if (_read(root, file, ctl, sizeof(ctl)) && strstr(ctl, "memory")) {
            m->version = 2;
            snprintf(m->dir, sizeof(m->dir), "%s%s", root, dir);
            m->limit = _v2_limit(root, point, dir);
            return;
        }
    }
    if (_mount(info, false, point, sizeof(point), mroot, sizeof(mroot)) &&
        _own_cgroup(own, false, path, sizeof(path))) {
        _dir(dir, sizeof(dir), point, mroot, path);
        m->version = 1;
        snprintf(m->dir, sizeof(m->dir), "%s%s", root, dir);
        char file[PATH_MAX + 32];
        char stat[16384];
        uint64_t v;
        snprintf(file, sizeof(file), "%s/memory.stat", dir);
        if (_read(root, file, stat, sizeof(stat)) &&
            memlimit_stat_value(stat, "hierarchical_memory_limit", &v)) {
            m->limit = v;
        } else {
            char text[64];
            snprintf(file, sizeof(file), "%s/memory.limit_in_bytes", dir);
            if (_read(root, file, text, sizeof(text)) &&
                memlimit_parse_value(text, &v)) {
                m->limit = v;
            }
        }
    }
}

uint64_t
memlimit_bytes(const struct memlimit *m)
{
    return m->limit < m->ram ? m->limit : m->ram;
}

bool
memlimit_limited(const struct memlimit *m)
{
    return m->limit < m->ram;
}

int
memlimit_dirty(const struct memlimit *m, uint64_t *dirty)
{
    char file[PATH_MAX + 32];
    char stat[16384];
    if (m->version == 0) {
        return -1;
    }
    snprintf(file, sizeof(file), "%s/memory.stat", m->dir);
    if (!_read("", file, stat, sizeof(stat))) { /* m->dir has the root */
        return -1;
    }
    uint64_t d = 0, w = 0;
    bool ok = m->version == 2
                  ? memlimit_stat_value(stat, "file_dirty", &d) &&
                        memlimit_stat_value(stat, "file_writeback", &w)
                  : memlimit_stat_value(stat, "total_dirty", &d) &&
                        memlimit_stat_value(stat, "total_writeback", &w);
    if (!ok) {
        return -1;
    }
    *dirty = d + w;
    return 0;
}

void
memlimit_plan(const struct memlimit *m, struct memplan *out)
{
    uint64_t mem = memlimit_bytes(m);
    uint64_t x = mem / MEMLIMIT_XMSIZ_SHARE;
    out->xmsiz = x > (uint64_t)MEMLIMIT_XMSIZ_MAX ? MEMLIMIT_XMSIZ_MAX
                                                   : (int64_t)x;
    out->pin_max = mem / MEMLIMIT_PIN_SHARE;
    out->dirty_max = 0;
    out->writeback_at = 0;
    out->checkpoint_ms = 0;
    out->checkpoint_log = 0;
    out->maxconn = 0;
    if (memlimit_limited(m)) {
        uint64_t conns = mem / 2 / MEMLIMIT_CONN_BYTES;
        out->maxconn = conns > UINT32_MAX ? UINT32_MAX
                       : conns < 64       ? 64
                                          : (uint32_t)conns;
        out->checkpoint_ms = MEMLIMIT_CHECKPOINT_MS;
        out->checkpoint_log = MEMLIMIT_CHECKPOINT_LOG;
        uint64_t d = mem / MEMLIMIT_DIRTY_SHARE;
        out->dirty_max = d > MEMLIMIT_DIRTY_MIN ? d : MEMLIMIT_DIRTY_MIN;
        out->writeback_at = out->dirty_max / 2;
    }
}
