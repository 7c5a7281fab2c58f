/*
 * crashfs_files.c: the FUSE handlers of open files and directories: open,
 * read, write, flush, release, fsync, fallocate, the directory listing
 * (opendir, readdir, releasedir), fsyncdir, statfs and access.
 *
 * Writes land in the volatile cache of dirty pages (cfs_file_write); fsync
 * and fsyncdir make a file or a directory durable in BACKING
 * (crashfs_state.c). A listing is a snapshot taken at opendir, so that its
 * offsets stay valid while the directory changes.
 */
#define _GNU_SOURCE
#include "crashfs_fuse.h"

#include <errno.h>
#include <fcntl.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/statvfs.h>

struct dir_snap {
    size_t count;
    struct snap_ent {
        char *name;
        ino_t ino;
        mode_t mode;
    } ents[];
};

static void
cfs_open(fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi)
{
    struct cfs_state *st = cfs_enter(req);

    if (st == NULL) {
        return;
    }
    struct cfs_node *n = cfs_node_of(st, ino);
    if (S_ISDIR(n->mode)) {
        cfs_leave_err(st, req, EISDIR);
        return;
    }
    if ((fi->flags & O_TRUNC) && S_ISREG(n->mode)) {
        cfs_file_truncate(n, 0);
    }
    n->opens++;
    pthread_mutex_unlock(&st->lock);
    /* The page cache only ever holds what passed through this mount. */
    fi->keep_cache = 1;
    fuse_reply_open(req, fi);
}

static void
cfs_read(fuse_req_t req, fuse_ino_t ino, size_t size, off_t off, struct fuse_file_info *fi)
{
    struct cfs_state *st = cfs_enter(req);
    char *buf = malloc(size ? size : 1);

    (void)fi;
    if (st == NULL) {
        free(buf);
        return;
    }
    if (buf == NULL) {
        cfs_leave_err(st, req, ENOMEM);
        return;
    }
    ssize_t got = cfs_file_read(cfs_node_of(st, ino), buf, size, off);
    pthread_mutex_unlock(&st->lock);
    if (got < 0) {
        fuse_reply_err(req, (int)-got);
    } else {
        fuse_reply_buf(req, buf, (size_t)got);
    }
    free(buf);
}

static void
cfs_write(fuse_req_t req, fuse_ino_t ino, const char *buf, size_t size, off_t off,
          struct fuse_file_info *fi)
{
    struct cfs_state *st = cfs_enter(req);

    (void)fi;
    if (st == NULL) {
        return;
    }
    struct cfs_node *n = cfs_node_of(st, ino);
    if (cfs_trigger(st, EV_WRITE, n, NULL, NULL, NULL)) {
        cfs_leave_err(st, req, EIO);
        return;
    }
    st->writes++;
    int rc = cfs_file_write(n, buf, size, off);
    cfs_touch(n, true);
    pthread_mutex_unlock(&st->lock);
    if (rc != 0) {
        fuse_reply_err(req, -rc);
    } else {
        fuse_reply_write(req, size);
    }
}

static void
cfs_flush(fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi)
{
    struct cfs_state *st = cfs_enter(req);

    (void)ino;
    (void)fi;
    if (st != NULL) {
        cfs_leave_err(st, req, 0);
    }
}

static void
cfs_release(fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi)
{
    struct cfs_state *st = fuse_req_userdata(req);

    (void)fi;
    pthread_mutex_lock(&st->lock);
    struct cfs_node *n = cfs_node_of(st, ino);
    n->opens--;
    cfs_node_maybe_free(st, n);
    cfs_leave_err(st, req, 0);
}

static void
cfs_fsync(fuse_req_t req, fuse_ino_t ino, int datasync, struct fuse_file_info *fi)
{
    struct cfs_state *st = cfs_enter(req);

    (void)datasync;                  /* both make content and size durable */
    (void)fi;
    if (st == NULL) {
        return;
    }
    struct cfs_node *n = cfs_node_of(st, ino);
    if (cfs_trigger(st, EV_FSYNC, n, NULL, NULL, NULL)) {
        cfs_leave_err(st, req, EIO);
        return;
    }
    st->fsyncs++;
    int rc = S_ISREG(n->mode) ? cfs_file_sync(n) : 0;
    cfs_leave_err(st, req, rc ? EIO : 0);
}

static void
cfs_opendir(fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi)
{
    struct cfs_state *st = cfs_enter(req);
    struct cfs_node *dir;

    if (st == NULL) {
        return;
    }
    int err = cfs_get_dir(st, ino, &dir);
    if (err != 0) {
        cfs_leave_err(st, req, err);
        return;
    }
    /* A snapshot: offsets stay valid while the directory changes. */
    size_t count = 2;
    for (struct cfs_dentry *d = dir->children; d != NULL; d = d->next) {
        count++;
    }
    struct dir_snap *snap = calloc(1, sizeof(*snap) + count * sizeof(snap->ents[0]));
    if (snap == NULL) {
        cfs_leave_err(st, req, ENOMEM);
        return;
    }
    struct cfs_node *up = dir->parent != NULL ? dir->parent : dir;
    snap->ents[0] = (struct snap_ent){strdup("."), dir->id, S_IFDIR};
    snap->ents[1] = (struct snap_ent){strdup(".."), up->id, S_IFDIR};
    snap->count = 2;
    for (struct cfs_dentry *d = dir->children; d != NULL; d = d->next) {
        snap->ents[snap->count++] = (struct snap_ent){strdup(d->name), d->node->id,
                                                      d->node->mode};
    }
    pthread_mutex_unlock(&st->lock);
    fi->fh = (uintptr_t)snap;
    fuse_reply_open(req, fi);
}

static void
cfs_readdir(fuse_req_t req, fuse_ino_t ino, size_t size, off_t off, struct fuse_file_info *fi)
{
    struct cfs_state *st = cfs_enter(req);
    struct dir_snap *snap = (struct dir_snap *)(uintptr_t)fi->fh;
    char *buf = malloc(size ? size : 1);
    size_t used = 0;

    (void)ino;
    if (st == NULL) {
        free(buf);
        return;
    }
    pthread_mutex_unlock(&st->lock);
    if (buf == NULL) {
        fuse_reply_err(req, ENOMEM);
        return;
    }
    for (size_t i = (size_t)off; i < snap->count; i++) {
        struct snap_ent *e = &snap->ents[i];
        struct stat sb = {.st_ino = e->ino, .st_mode = e->mode};
        size_t len = fuse_add_direntry(req, buf + used, size - used,
                                       e->name ? e->name : "?", &sb, (off_t)i + 1);
        if (len > size - used) {
            break;
        }
        used += len;
    }
    fuse_reply_buf(req, buf, used);
    free(buf);
}

static void
cfs_releasedir(fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi)
{
    struct dir_snap *snap = (struct dir_snap *)(uintptr_t)fi->fh;

    (void)ino;
    for (size_t i = 0; i < snap->count; i++) {
        free(snap->ents[i].name);
    }
    free(snap);
    fuse_reply_err(req, 0);
}

static void
cfs_fsyncdir(fuse_req_t req, fuse_ino_t ino, int datasync, struct fuse_file_info *fi)
{
    struct cfs_state *st = cfs_enter(req);

    (void)datasync;
    (void)fi;
    if (st == NULL) {
        return;
    }
    struct cfs_node *dir = cfs_node_of(st, ino);
    if (cfs_trigger(st, EV_FSYNCDIR, dir, NULL, NULL, NULL)) {
        cfs_leave_err(st, req, EIO);
        return;
    }
    st->fsyncs++;
    cfs_leave_err(st, req, -cfs_dir_sync(st, dir));
}

static void
cfs_statfs(fuse_req_t req, fuse_ino_t ino)
{
    struct cfs_state *st = cfs_enter(req);
    struct statvfs sv;

    (void)ino;
    if (st == NULL) {
        return;
    }
    int rc = fstatvfs(st->backing_fd, &sv);
    int err = errno;
    pthread_mutex_unlock(&st->lock);
    if (rc != 0) {
        fuse_reply_err(req, err);
    } else {
        fuse_reply_statfs(req, &sv);
    }
}

static void
cfs_access(fuse_req_t req, fuse_ino_t ino, int mask)
{
    struct cfs_state *st = cfs_enter(req);

    (void)ino;
    (void)mask;                      /* default_permissions checks modes */
    if (st != NULL) {
        cfs_leave_err(st, req, 0);
    }
}

/* Allocation is recorded (st_blocks); mode 0 grows the size with zeros. */
static void
cfs_fallocate(fuse_req_t req, fuse_ino_t ino, int mode, off_t off, off_t len,
              struct fuse_file_info *fi)
{
    struct cfs_state *st = cfs_enter(req);

    (void)fi;
    if (st == NULL) {
        return;
    }
    struct cfs_node *n = cfs_node_of(st, ino);
    if (mode & ~FALLOC_FL_KEEP_SIZE) {
        cfs_leave_err(st, req, EOPNOTSUPP);
        return;
    }
    if (!S_ISREG(n->mode)) {
        cfs_leave_err(st, req, ENODEV);
        return;
    }
    if (off + len > n->alloc_end) {
        n->alloc_end = off + len;
    }
    if (!(mode & FALLOC_FL_KEEP_SIZE) && off + len > n->vis_size) {
        cfs_file_truncate(n, off + len);
        cfs_touch(n, true);
    }
    cfs_leave_err(st, req, 0);
}

void
cfs_files_ops(struct fuse_lowlevel_ops *ops)
{
    ops->open = cfs_open;
    ops->read = cfs_read;
    ops->write = cfs_write;
    ops->flush = cfs_flush;
    ops->release = cfs_release;
    ops->fsync = cfs_fsync;
    ops->opendir = cfs_opendir;
    ops->readdir = cfs_readdir;
    ops->releasedir = cfs_releasedir;
    ops->fsyncdir = cfs_fsyncdir;
    ops->statfs = cfs_statfs;
    ops->access = cfs_access;
    ops->fallocate = cfs_fallocate;
}
