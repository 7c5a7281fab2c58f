/*
 * crashfs_state.c: the volatile-cache model behind crashfs.
 *
 * Owns the node tree, the dirty pages of each file, the ordered list of
 * pending namespace operations, making them durable (fsync, fsyncdir) and
 * the power cut that materialises BACKING in drop, torn or writeback mode.
 * BACKING is only ever written here, and never once st->cut is set.
 */
#define _GNU_SOURCE
#include "crashfs_state.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

void
cfs_log(const char *fmt, ...)
{
    va_list ap;

    va_start(ap, fmt);
    fputs("crashfs: ", stderr);
    vfprintf(stderr, fmt, ap);
    fputc('\n', stderr);
    va_end(ap);
}

/* splitmix64: tiny, and the whole run replays from --seed. */
uint64_t
cfs_rand(struct cfs_state *st)
{
    uint64_t z = (st->rng += 0x9e3779b97f4a7c15ULL);

    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
    return z ^ (z >> 31);
}

static void *
xcalloc(size_t n, size_t size)
{
    void *p = calloc(n, size);

    if (p == NULL) {
        cfs_log("out of memory");
        abort();
    }
    return p;
}

static char *
xstrdup(const char *s)
{
    char *p = strdup(s);

    if (p == NULL) {
        cfs_log("out of memory");
        abort();
    }
    return p;
}

static void
stage_name(const struct cfs_node *n, char *buf, size_t size)
{
    snprintf(buf, size, "ino-%llu", (unsigned long long)n->id);
}

static int
write_all(int fd, const void *buf, size_t len, off_t off)
{
    const char *p = buf;

    while (len > 0) {
        ssize_t w = pwrite(fd, p, len, off);
        if (w < 0) {
            if (errno == EINTR) {
                continue;
            }
            return -errno;
        }
        p += w;
        len -= (size_t)w;
        off += w;
    }
    return 0;
}

/* ---- nodes and directories ---------------------------------------------- */

struct cfs_node *
cfs_node_new(struct cfs_state *st, mode_t mode)
{
    struct cfs_node *n = xcalloc(1, sizeof(*n));
    struct timespec now;

    clock_gettime(CLOCK_REALTIME, &now);
    n->id = st->next_id++;
    n->mode = mode;
    n->atime = n->mtime = n->ctime = now;
    n->dir_fd = n->data_fd = -1;
    n->all_next = st->all;
    if (st->all != NULL) {
        st->all->all_prev = n;
    }
    st->all = n;
    return n;
}

static void
pages_free(struct cfs_node *n)
{
    for (size_t b = 0; b < n->nbuckets; b++) {
        while (n->buckets[b] != NULL) {
            struct cfs_page *p = n->buckets[b];
            n->buckets[b] = p->next;
            free(p);
        }
    }
    free(n->buckets);
    n->buckets = NULL;
    n->nbuckets = n->npages = 0;
}

void
cfs_node_maybe_free(struct cfs_state *st, struct cfs_node *n)
{
    if (n == NULL || n == st->root || n->nlookup || n->opens || n->links || n->pins) {
        return;
    }
    if (n->all_prev != NULL) {
        n->all_prev->all_next = n->all_next;
    } else {
        st->all = n->all_next;
    }
    if (n->all_next != NULL) {
        n->all_next->all_prev = n->all_prev;
    }
    if (n->staged && !st->cut) {
        char sn[64];
        stage_name(n, sn, sizeof(sn));
        unlinkat(st->stage_fd, sn, 0);
    }
    pages_free(n);
    if (n->data_fd >= 0) {
        close(n->data_fd);
    }
    if (n->dir_fd >= 0) {
        close(n->dir_fd);
    }
    /* A directory gets here empty: rmdir and rename-over demand it. */
    struct cfs_node *parent = n->parent;
    free(n->name);
    free(n->link);
    free(n);
    if (parent != NULL) {
        parent->pins--;
        cfs_node_maybe_free(st, parent);
    }
}

void
cfs_node_set_name(struct cfs_state *st, struct cfs_node *n, struct cfs_node *parent,
                  const char *name)
{
    struct cfs_node *old = n->parent;

    parent->pins++;
    n->parent = parent;
    free(n->name);
    n->name = xstrdup(name);
    if (old != NULL) {
        old->pins--;
        cfs_node_maybe_free(st, old);
    }
}

struct cfs_dentry *
cfs_dir_find(struct cfs_node *dir, const char *name)
{
    for (struct cfs_dentry *d = dir->children; d != NULL; d = d->next) {
        if (strcmp(d->name, name) == 0) {
            return d;
        }
    }
    return NULL;
}

void
cfs_dir_add(struct cfs_state *st, struct cfs_node *dir, const char *name, struct cfs_node *n)
{
    struct cfs_dentry *d = xcalloc(1, sizeof(*d));

    d->name = xstrdup(name);
    d->node = n;
    d->next = dir->children;
    dir->children = d;
    if (++n->links == 1 || n->parent == NULL) {
        cfs_node_set_name(st, n, dir, name);
    }
}

/* Drops one name. A hard-linked node whose remembered name this was takes
 * another of its names (rare: found by a scan). Freeing is the caller's. */
void
cfs_dir_remove(struct cfs_state *st, struct cfs_node *dir, const char *name)
{
    struct cfs_dentry **pp = &dir->children;

    while (*pp != NULL && strcmp((*pp)->name, name) != 0) {
        pp = &(*pp)->next;
    }
    if (*pp == NULL) {
        return;
    }
    struct cfs_dentry *d = *pp;
    struct cfs_node *n = d->node;
    *pp = d->next;
    n->links--;
    if (n->links > 0 && n->parent == dir && strcmp(n->name, name) == 0) {
        for (struct cfs_node *o = st->all; o != NULL; o = o->all_next) {
            struct cfs_dentry *e = S_ISDIR(o->mode) ? o->children : NULL;
            for (; e != NULL && e->node != n; e = e->next) {
            }
            if (e != NULL) {
                cfs_node_set_name(st, n, o, e->name);
                break;
            }
        }
    }
    free(d->name);
    free(d);
}

/* Reads a directory's durable entries on first use. Every namespace change
 * in a directory goes through a loaded directory, so at load time its
 * BACKING content is exactly its visible content. */
int
cfs_dir_load(struct cfs_state *st, struct cfs_node *dir)
{
    if (dir->loaded) {
        return 0;
    }
    if (dir->dir_fd < 0) {
        dir->loaded = true;
        return 0;
    }
    int fd = openat(dir->dir_fd, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    DIR *dp = fd >= 0 ? fdopendir(fd) : NULL;
    if (dp == NULL) {
        int err = errno;
        if (fd >= 0) {
            close(fd);
        }
        return -err;
    }
    struct dirent *de;
    while ((de = readdir(dp)) != NULL) {
        const char *name = de->d_name;
        struct stat sb;
        if (strcmp(name, ".") == 0 || strcmp(name, "..") == 0 ||
            (dir == st->root && strcmp(name, CFS_STAGE_DIR) == 0) ||
            fstatat(dir->dir_fd, name, &sb, AT_SYMLINK_NOFOLLOW) != 0) {
            continue;
        }
        struct cfs_node *n = cfs_node_new(st, sb.st_mode);
        n->uid = sb.st_uid;
        n->gid = sb.st_gid;
        n->atime = sb.st_atim;
        n->mtime = sb.st_mtim;
        n->ctime = sb.st_ctim;
        int err = 0;
        if (S_ISREG(sb.st_mode)) {
            n->data_fd = openat(dir->dir_fd, name, O_RDWR | O_CLOEXEC | O_NOFOLLOW);
            n->vis_size = n->dur_size = n->base_size = n->alloc_end = sb.st_size;
            err = n->data_fd < 0;
        } else if (S_ISDIR(sb.st_mode)) {
            n->dir_fd = openat(dir->dir_fd, name, O_RDONLY | O_DIRECTORY | O_CLOEXEC | O_NOFOLLOW);
            err = n->dir_fd < 0;
        } else if (S_ISLNK(sb.st_mode)) {
            char buf[4096];
            ssize_t len = readlinkat(dir->dir_fd, name, buf, sizeof(buf) - 1);
            err = len < 0;
            buf[len < 0 ? 0 : len] = '\0';
            n->link = xstrdup(buf);
        }
        if (err) {
            cfs_log("cannot open backing entry %s: %s (hidden)", name, strerror(errno));
            cfs_node_maybe_free(st, n);
            continue;
        }
        cfs_dir_add(st, dir, name, n);
    }
    closedir(dp);
    dir->loaded = true;
    return 0;
}

/* Path relative to the mount root ("" for the root), from remembered names. */
int
cfs_node_path(const struct cfs_node *n, char *buf, size_t size)
{
    const struct cfs_node *chain[256];
    size_t depth = 0, len = 0;

    for (; n != NULL && n->parent != NULL && depth < 256; n = n->parent) {
        chain[depth++] = n;
    }
    buf[0] = '\0';
    while (depth > 0) {
        const char *name = chain[--depth]->name;
        int w = snprintf(buf + len, size - len, "%s%s", len ? "/" : "", name);
        if (w < 0 || (size_t)w >= size - len) {
            return -ENAMETOOLONG;
        }
        len += (size_t)w;
    }
    return 0;
}

/* ---- pending namespace operations --------------------------------------- */

int
cfs_stage_create(struct cfs_state *st, struct cfs_node *n)
{
    char sn[64];

    stage_name(n, sn, sizeof(sn));
    n->data_fd = openat(st->stage_fd, sn, O_RDWR | O_CREAT | O_EXCL | O_CLOEXEC,
                        n->mode & 07777);
    if (n->data_fd < 0) {
        return -errno;
    }
    n->staged = true;
    return 0;
}

void
cfs_op_add(struct cfs_state *st, enum cfs_op_kind kind, struct cfs_node *dir,
           const char *name, struct cfs_node *dir2, const char *name2,
           struct cfs_node *target)
{
    struct cfs_dirop *op = xcalloc(1, sizeof(*op));

    op->kind = kind;
    op->dir = dir;
    op->name = xstrdup(name);
    op->dir2 = dir2;
    op->name2 = name2 != NULL ? xstrdup(name2) : NULL;
    op->target = target;
    dir->pins++;
    if (dir2 != NULL) {
        dir2->pins++;
    }
    if (target != NULL) {
        target->pins++;
    }
    *st->ops_tail = op;
    st->ops_tail = &op->next;
    st->nops++;
}

static const char *
op_kind_name(enum cfs_op_kind kind)
{
    static const char *names[] = {"create", "mknod", "mkdir", "symlink", "link",
                                  "unlink", "rmdir", "rename"};
    return names[kind];
}

static void
op_apply(struct cfs_state *st, struct cfs_dirop *op)
{
    int dfd = op->dir->dir_fd, dfd2 = op->dir2 != NULL ? op->dir2->dir_fd : -1;
    struct cfs_node *t = op->target;
    char sn[64];
    int rc = -1;

    switch (op->kind) {
    case OP_CREATE:
        stage_name(t, sn, sizeof(sn));
        rc = renameat(st->stage_fd, sn, dfd, op->name);
        t->staged = rc != 0 && t->staged;
        break;
    case OP_MKNOD:
        rc = mknodat(dfd, op->name, t->mode, t->rdev);
        break;
    case OP_MKDIR:
        rc = mkdirat(dfd, op->name, t->mode & 07777);
        if (rc == 0 && t->dir_fd < 0) {
            t->dir_fd = openat(dfd, op->name, O_RDONLY | O_DIRECTORY | O_CLOEXEC | O_NOFOLLOW);
            rc = t->dir_fd < 0 ? -1 : 0;
        }
        break;
    case OP_SYMLINK:
        rc = symlinkat(t->link, dfd, op->name);
        break;
    case OP_LINK:
        rc = linkat(dfd, op->name, dfd2, op->name2, 0);
        break;
    case OP_UNLINK:
        rc = unlinkat(dfd, op->name, 0);
        break;
    case OP_RMDIR:
        rc = unlinkat(dfd, op->name, AT_REMOVEDIR);
        break;
    case OP_RENAME:
        rc = renameat(dfd, op->name, dfd2, op->name2);
        break;
    }
    if (rc != 0) {
        cfs_log("applying %s %s to BACKING failed: %s", op_kind_name(op->kind), op->name,
                strerror(errno));
    }
}

static void
op_free(struct cfs_state *st, struct cfs_dirop *op)
{
    struct cfs_node *nodes[3] = {op->dir, op->dir2, op->target};

    for (int i = 0; i < 3; i++) {
        if (nodes[i] != NULL) {
            nodes[i]->pins--;
            cfs_node_maybe_free(st, nodes[i]);
        }
    }
    free(op->name);
    free(op->name2);
    free(op);
}

/* Applies the oldest count pending ops (apply=false: discards them). */
static void
ops_pop(struct cfs_state *st, size_t count, bool apply)
{
    while (count-- > 0 && st->ops != NULL) {
        struct cfs_dirop *op = st->ops;
        st->ops = op->next;
        if (st->ops == NULL) {
            st->ops_tail = &st->ops;
        }
        st->nops--;
        if (apply) {
            op_apply(st, op);
        }
        op_free(st, op);
    }
}

/* A directory fsync makes durable every op that changes that directory's
 * entries and, to keep the journal's order, every older op. A rename between
 * two directories is durable once either of them is fsynced. */
int
cfs_dir_sync(struct cfs_state *st, struct cfs_node *dir)
{
    size_t i = 0, last = 0;

    for (struct cfs_dirop *op = st->ops; op != NULL; op = op->next) {
        i++;
        if (op->dir == dir || op->dir2 == dir) {
            last = i;
        }
    }
    ops_pop(st, last, true);
    return 0;
}

/* ---- file content ------------------------------------------------------- */

static size_t
bucket_of(const struct cfs_node *n, uint64_t idx)
{
    return (size_t)((idx * 0x9e3779b97f4a7c15ULL) >> 20) & (n->nbuckets - 1);
}

static struct cfs_page *
page_find(const struct cfs_node *n, uint64_t idx)
{
    if (n->nbuckets == 0) {
        return NULL;
    }
    struct cfs_page *p = n->buckets[bucket_of(n, idx)];
    while (p != NULL && p->idx != idx) {
        p = p->next;
    }
    return p;
}

static void
page_insert(struct cfs_node *n, struct cfs_page *p)
{
    if (n->npages >= n->nbuckets) {
        size_t old_n = n->nbuckets;
        struct cfs_page **old = n->buckets;
        n->nbuckets = old_n ? old_n * 2 : 64;
        n->buckets = xcalloc(n->nbuckets, sizeof(*n->buckets));
        for (size_t b = 0; b < old_n; b++) {
            while (old[b] != NULL) {
                struct cfs_page *q = old[b];
                old[b] = q->next;
                size_t nb = bucket_of(n, q->idx);
                q->next = n->buckets[nb];
                n->buckets[nb] = q;
            }
        }
        free(old);
    }
    size_t b = bucket_of(n, p->idx);
    p->next = n->buckets[b];
    n->buckets[b] = p;
    n->npages++;
}

/* Durable bytes show through below base_size only: a volatile truncate hides
 * the durable tail even if the file grows again. */
static int
durable_read(const struct cfs_node *n, char *buf, size_t len, off_t off)
{
    size_t got = 0;

    if (off < n->base_size) {
        size_t want = (size_t)(n->base_size - off) < len ? (size_t)(n->base_size - off) : len;
        while (got < want) {
            ssize_t r = pread(n->data_fd, buf + got, want - got, off + (off_t)got);
            if (r < 0 && errno == EINTR) {
                continue;
            }
            if (r < 0) {
                return -errno;
            }
            if (r == 0) {
                break;
            }
            got += (size_t)r;
        }
    }
    memset(buf + got, 0, len - got);
    return 0;
}

ssize_t
cfs_file_read(struct cfs_node *n, char *buf, size_t size, off_t off)
{
    if (off >= n->vis_size) {
        return 0;
    }
    if ((off_t)size > n->vis_size - off) {
        size = (size_t)(n->vis_size - off);
    }
    size_t done = 0;
    while (done < size) {
        off_t pos = off + (off_t)done;
        size_t in = (size_t)(pos % CFS_PAGE), chunk = CFS_PAGE - in;
        chunk = chunk < size - done ? chunk : size - done;
        struct cfs_page *p = page_find(n, (uint64_t)pos / CFS_PAGE);
        if (p != NULL) {
            memcpy(buf + done, p->data + in, chunk);
        } else {
            /* One pread for a run of clean pages. */
            while (done + chunk < size &&
                   page_find(n, (uint64_t)(pos + (off_t)chunk) / CFS_PAGE) == NULL) {
                chunk += size - done - chunk < CFS_PAGE ? size - done - chunk : CFS_PAGE;
            }
            int rc = durable_read(n, buf + done, chunk, pos);
            if (rc != 0) {
                return rc;
            }
        }
        done += chunk;
    }
    return (ssize_t)size;
}

int
cfs_file_write(struct cfs_node *n, const char *buf, size_t size, off_t off)
{
    size_t done = 0;

    while (done < size) {
        off_t pos = off + (off_t)done;
        uint64_t idx = (uint64_t)pos / CFS_PAGE;
        size_t in = (size_t)(pos % CFS_PAGE), chunk = CFS_PAGE - in;
        chunk = chunk < size - done ? chunk : size - done;
        struct cfs_page *p = page_find(n, idx);
        if (p == NULL) {
            /* Copy the durable page on first write, then modify. */
            p = malloc(sizeof(*p));
            if (p == NULL) {
                return -ENOMEM;
            }
            p->idx = idx;
            int rc = chunk == CFS_PAGE ? 0 :
                     durable_read(n, (char *)p->data, CFS_PAGE, (off_t)idx * CFS_PAGE);
            if (rc != 0) {
                free(p);
                return rc;
            }
            page_insert(n, p);
        }
        memcpy(p->data + in, buf + done, chunk);
        done += chunk;
        if (pos + (off_t)chunk > n->vis_size) {
            n->vis_size = pos + (off_t)chunk;
        }
    }
    return 0;
}

/* Dirty pages keep zeros past vis_size, so growing again reads zeros. */
void
cfs_file_truncate(struct cfs_node *n, off_t size)
{
    if (size < n->vis_size) {
        uint64_t first = ((uint64_t)size + CFS_PAGE - 1) / CFS_PAGE;
        for (size_t b = 0; b < n->nbuckets; b++) {
            struct cfs_page **pp = &n->buckets[b];
            while (*pp != NULL) {
                if ((*pp)->idx >= first) {
                    struct cfs_page *p = *pp;
                    *pp = p->next;
                    free(p);
                    n->npages--;
                } else {
                    pp = &(*pp)->next;
                }
            }
        }
        struct cfs_page *p = size % CFS_PAGE ? page_find(n, (uint64_t)size / CFS_PAGE) : NULL;
        if (p != NULL) {
            memset(p->data + size % CFS_PAGE, 0, CFS_PAGE - (size_t)(size % CFS_PAGE));
        }
        if (size < n->base_size) {
            n->base_size = size;
        }
    }
    n->vis_size = size;
}

bool
cfs_file_dirty(const struct cfs_node *n)
{
    return S_ISREG(n->mode) &&
           (n->npages > 0 || n->vis_size != n->dur_size || n->base_size != n->dur_size);
}

/* Applies a volatile size change to the backing file: truncating to base
 * first zeroes what a volatile truncate hid, then the new size. */
static int
apply_size(struct cfs_node *n, off_t size)
{
    if (n->base_size < n->dur_size && ftruncate(n->data_fd, n->base_size) != 0) {
        return -errno;
    }
    if (ftruncate(n->data_fd, size) != 0) {
        return -errno;
    }
    return 0;
}

static int
page_write(const struct cfs_node *n, const struct cfs_page *p, size_t from, size_t len,
           off_t limit)
{
    off_t off = (off_t)p->idx * CFS_PAGE + (off_t)from;

    if (off >= limit) {
        return 0;
    }
    if ((off_t)len > limit - off) {
        len = (size_t)(limit - off);
    }
    return write_all(n->data_fd, p->data + from, len, off);
}

int
cfs_file_sync(struct cfs_node *n)
{
    if (!cfs_file_dirty(n)) {
        return 0;
    }
    int rc = 0;
    if (n->vis_size != n->dur_size || n->base_size != n->dur_size) {
        rc = apply_size(n, n->vis_size);
    }
    for (size_t b = 0; rc == 0 && b < n->nbuckets; b++) {
        for (struct cfs_page *p = n->buckets[b]; rc == 0 && p != NULL; p = p->next) {
            rc = page_write(n, p, 0, CFS_PAGE, n->vis_size);
        }
    }
    if (rc != 0) {
        cfs_log("fsync of inode %llu to BACKING failed: %s", (unsigned long long)n->id,
                strerror(-rc));
        return rc;
    }
    pages_free(n);
    n->dur_size = n->base_size = n->vis_size;
    return 0;
}

/* ---- the power cut ------------------------------------------------------ */

struct cut_stats {
    unsigned files, pages, written, torn;
};

/* ext3 data=writeback: grown space whose pages were not written shows old
 * blocks: random bytes or copies of the file's own durable pages. */
static void
fill_garbage(struct cfs_state *st, struct cfs_node *n, off_t size)
{
    unsigned char buf[CFS_PAGE];
    uint64_t src_pages = (uint64_t)n->base_size / CFS_PAGE;

    for (off_t off = (n->base_size + CFS_PAGE - 1) / CFS_PAGE * CFS_PAGE; off < size;
         off += CFS_PAGE) {
        bool copied = false;
        if (src_pages > 0 && cfs_rand(st) % 2 == 0) {
            off_t src = (off_t)(cfs_rand(st) % src_pages) * CFS_PAGE;
            copied = pread(n->data_fd, buf, CFS_PAGE, src) == CFS_PAGE;
        }
        for (size_t i = 0; !copied && i < CFS_PAGE; i += 8) {
            uint64_t r = cfs_rand(st);
            memcpy(buf + i, &r, 8);
        }
        size_t len = size - off < CFS_PAGE ? (size_t)(size - off) : CFS_PAGE;
        if (write_all(n->data_fd, buf, len, off) != 0) {
            cfs_log("cut: writing garbage failed: %s", strerror(errno));
        }
    }
}

static void
cut_file(struct cfs_state *st, struct cfs_node *n, enum cfs_mode mode, struct cut_stats *cs)
{
    bool size_applied = (n->vis_size != n->dur_size || n->base_size != n->dur_size) &&
                        cfs_rand(st) % 2 == 0;
    off_t size = size_applied ? n->vis_size : n->dur_size;

    cs->files++;
    if (size_applied) {
        if (apply_size(n, size) != 0) {
            cfs_log("cut: resizing inode %llu failed: %s", (unsigned long long)n->id,
                    strerror(errno));
        }
        if (mode == CFS_WRITEBACK) {
            fill_garbage(st, n, size);
        }
    }
    struct cfs_page **pages = xcalloc(n->npages + 1, sizeof(*pages));
    size_t count = 0;
    for (size_t b = 0; b < n->nbuckets; b++) {
        for (struct cfs_page *p = n->buckets[b]; p != NULL; p = p->next) {
            pages[count++] = p;
        }
    }
    for (size_t i = count; i > 1; i--) {       /* random write-back order */
        size_t j = (size_t)(cfs_rand(st) % i);
        struct cfs_page *t = pages[i - 1];
        pages[i - 1] = pages[j];
        pages[j] = t;
    }
    cs->pages += (unsigned)count;
    for (size_t i = 0; i < count; i++) {
        struct cfs_page *p = pages[i];
        if (cfs_rand(st) % 2 != 0 || (off_t)p->idx * CFS_PAGE >= size) {
            continue;
        }
        cs->written++;
        int rc = 0;
        if (cfs_rand(st) % 4 == 0) {
            /* Torn: some of the eight sectors, never none or all. */
            unsigned mask = 1 + (unsigned)(cfs_rand(st) % 254);
            cs->torn++;
            for (unsigned s = 0; rc == 0 && s < CFS_PAGE / CFS_SECTOR; s++) {
                if (mask & (1u << s)) {
                    rc = page_write(n, p, s * CFS_SECTOR, CFS_SECTOR, size);
                }
            }
        } else {
            rc = page_write(n, p, 0, CFS_PAGE, size);
        }
        if (rc != 0) {
            cfs_log("cut: writing a page failed: %s", strerror(-rc));
        }
    }
    free(pages);
}

void
cfs_cut(struct cfs_state *st, enum cfs_mode mode)
{
    static const char *mode_names[] = {"drop", "torn", "writeback"};
    struct cut_stats cs = {0, 0, 0, 0};
    size_t total = st->nops, applied = 0;

    if (st->cut) {
        return;
    }
    if (mode != CFS_DROP) {
        /* The journal commits namespace changes in order: a prefix. */
        applied = (size_t)(cfs_rand(st) % (total + 1));
        ops_pop(st, applied, true);
    }
    ops_pop(st, st->nops, false);
    for (struct cfs_node *n = st->all; n != NULL; n = n->all_next) {
        if (mode != CFS_DROP && !n->staged && cfs_file_dirty(n)) {
            cut_file(st, n, mode, &cs);
        }
        pages_free(n);
        n->vis_size = n->base_size = n->dur_size;   /* nothing dirty is left */
        if (n->staged) {                       /* never named durably */
            char sn[64];
            stage_name(n, sn, sizeof(sn));
            unlinkat(st->stage_fd, sn, 0);
            n->staged = false;
        }
    }
    unlinkat(st->backing_fd, CFS_STAGE_DIR, AT_REMOVEDIR);
    st->cut = true;
    st->armed = false;
    cfs_log("cut mode=%s files=%u pages_written=%u/%u torn=%u dirops=%zu/%zu",
            mode_names[mode], cs.files, cs.written, cs.pages, cs.torn, applied, total);
}

/* The "sync" command: everything becomes durable, as sync(1) or a clean
 * umount would make it. */
int
cfs_sync_all(struct cfs_state *st)
{
    int rc = 0;

    ops_pop(st, st->nops, true);
    for (struct cfs_node *n = st->all; n != NULL; n = n->all_next) {
        if (cfs_file_dirty(n) && cfs_file_sync(n) != 0) {
            rc = -EIO;
        }
    }
    return rc;
}

/* ---- setup -------------------------------------------------------------- */

int
cfs_state_init(struct cfs_state *st, const char *backing, uint64_t seed)
{
    struct stat sb;

    memset(st, 0, sizeof(*st));
    pthread_mutex_init(&st->lock, NULL);
    st->ops_tail = &st->ops;
    st->seed = st->rng = seed;
    st->next_id = 1;
    st->ctl_fd = st->wake_pipe[0] = st->wake_pipe[1] = -1;
    st->backing_fd = open(backing, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (st->backing_fd < 0 || fstat(st->backing_fd, &sb) != 0) {
        return -errno;
    }
    /* Staging files left by a crashfs that died are names never made
     * durable: remove them. */
    if (mkdirat(st->backing_fd, CFS_STAGE_DIR, 0700) != 0 && errno != EEXIST) {
        return -errno;
    }
    st->stage_fd = openat(st->backing_fd, CFS_STAGE_DIR, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    int fd = st->stage_fd >= 0 ? dup(st->stage_fd) : -1;
    DIR *dp = fd >= 0 ? fdopendir(fd) : NULL;
    if (dp == NULL) {
        return -errno;
    }
    for (struct dirent *de; (de = readdir(dp)) != NULL;) {
        if (strncmp(de->d_name, "ino-", 4) == 0) {
            unlinkat(st->stage_fd, de->d_name, 0);
        }
    }
    closedir(dp);
    st->root = cfs_node_new(st, sb.st_mode);
    st->root->uid = sb.st_uid;
    st->root->gid = sb.st_gid;
    st->root->mtime = sb.st_mtim;
    st->root->ctime = sb.st_ctim;
    st->root->atime = sb.st_atim;
    st->root->dir_fd = dup(st->backing_fd);
    st->root->links = 1;
    return st->root->dir_fd < 0 ? -errno : 0;
}

void
cfs_state_free(struct cfs_state *st)
{
    /* Teardown only: no BACKING access, just memory and descriptors. */
    while (st->ops != NULL) {
        struct cfs_dirop *op = st->ops;
        st->ops = op->next;
        free(op->name);
        free(op->name2);
        free(op);
    }
    while (st->all != NULL) {
        struct cfs_node *n = st->all;
        st->all = n->all_next;
        while (n->children != NULL) {
            struct cfs_dentry *d = n->children;
            n->children = d->next;
            free(d->name);
            free(d);
        }
        pages_free(n);
        if (n->data_fd >= 0) {
            close(n->data_fd);
        }
        if (n->dir_fd >= 0) {
            close(n->dir_fd);
        }
        free(n->name);
        free(n->link);
        free(n);
    }
    close(st->stage_fd);
    close(st->backing_fd);
    free(st->arm_glob);
    pthread_mutex_destroy(&st->lock);
}
