/*
 * crashfs.c: a FUSE file system that simulates power cuts for kura's tests.
 *
 * crashfs BACKING MOUNTPOINT --ctl SOCKETPATH [--seed N] [fuse options]
 *
 * MOUNTPOINT shows BACKING through a volatile write cache: BACKING only ever
 * holds durable state, so a cut (crashfs_state.c) can decide what survives.
 * This file owns the FUSE glue and main(). It uses the low-level API because
 * the model is per inode: open handles keep working after unlink or rename.
 * No direct_io (it breaks MAP_SHARED) and no writeback_cache: every write,
 * including the kernel's write-back of mapped pages, reaches the daemon as a
 * FUSE write, whose memory is the volatile cache.
 */
#define _GNU_SOURCE
#define FUSE_USE_VERSION 35
#include <fuse_lowlevel.h>

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <limits.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/statvfs.h>
#include <time.h>
#include <unistd.h>

#include "crashfs_state.h"

/* Attributes and names are not cached by the kernel, so that after a cut
 * stat and lookup reach crashfs and fail with EIO (cost: a round trip). */
#define CFS_TIMEOUT 0.0

struct dir_snap {
    size_t count;
    struct snap_ent {
        char *name;
        ino_t ino;
        mode_t mode;
    } ents[];
};

/* Takes the lock; after a cut replies EIO and returns NULL. */
static struct cfs_state *
enter(fuse_req_t req)
{
    struct cfs_state *st = fuse_req_userdata(req);

    pthread_mutex_lock(&st->lock);
    if (st->cut) {
        pthread_mutex_unlock(&st->lock);
        fuse_reply_err(req, EIO);
        return NULL;
    }
    return st;
}

static void
leave_err(struct cfs_state *st, fuse_req_t req, int err)
{
    pthread_mutex_unlock(&st->lock);
    fuse_reply_err(req, err);
}

static struct cfs_node *
node_of(struct cfs_state *st, fuse_ino_t ino)
{
    return ino == FUSE_ROOT_ID ? st->root : (struct cfs_node *)(uintptr_t)ino;
}

static void
touch(struct cfs_node *n, bool modified)
{
    struct timespec now;

    clock_gettime(CLOCK_REALTIME, &now);
    n->ctime = now;
    if (modified) {
        n->mtime = now;
    }
}

static void
fill_attr(struct cfs_state *st, struct cfs_node *n, struct stat *sb)
{
    memset(sb, 0, sizeof(*sb));
    sb->st_ino = n->id;
    sb->st_mode = n->mode;
    sb->st_nlink = n->links;
    sb->st_uid = n->uid;
    sb->st_gid = n->gid;
    sb->st_rdev = n->rdev;
    sb->st_blksize = CFS_PAGE;
    sb->st_atim = n->atime;
    sb->st_mtim = n->mtime;
    sb->st_ctim = n->ctime;
    if (S_ISDIR(n->mode)) {
        sb->st_nlink = 2;
        if (cfs_dir_load(st, n) == 0) {
            for (struct cfs_dentry *d = n->children; d != NULL; d = d->next) {
                sb->st_nlink += S_ISDIR(d->node->mode);
            }
        }
        sb->st_size = CFS_PAGE;
    } else if (S_ISLNK(n->mode)) {
        sb->st_size = (off_t)strlen(n->link);
    } else {
        sb->st_size = n->vis_size;
    }
    off_t used = n->alloc_end > sb->st_size ? n->alloc_end : sb->st_size;
    sb->st_blocks = (used + 511) / 512;
}

static void
make_entry(struct cfs_state *st, struct cfs_node *n, struct fuse_entry_param *e)
{
    memset(e, 0, sizeof(*e));
    n->nlookup++;
    e->ino = n == st->root ? FUSE_ROOT_ID : (uintptr_t)n;
    e->attr_timeout = e->entry_timeout = CFS_TIMEOUT;
    fill_attr(st, n, &e->attr);
}

/* The directory behind ino, loaded; 0 or an errno. */
static int
get_dir(struct cfs_state *st, fuse_ino_t ino, struct cfs_node **dir)
{
    *dir = node_of(st, ino);
    if (!S_ISDIR((*dir)->mode)) {
        return ENOTDIR;
    }
    return -cfs_dir_load(st, *dir);
}

static bool
reserved_name(struct cfs_state *st, struct cfs_node *dir, const char *name)
{
    return dir == st->root && strcmp(name, CFS_STAGE_DIR) == 0;
}

static void
cfs_init(void *userdata, struct fuse_conn_info *conn)
{
    (void)userdata;
    /* The kernel must send every write and truncate here, and must not
     * throw away its page cache behind a mapping's back. */
    conn->want &= ~(unsigned)(FUSE_CAP_WRITEBACK_CACHE | FUSE_CAP_ATOMIC_O_TRUNC |
                              FUSE_CAP_AUTO_INVAL_DATA | FUSE_CAP_HANDLE_KILLPRIV);
}

static void
cfs_lookup(fuse_req_t req, fuse_ino_t parent, const char *name)
{
    struct cfs_state *st = enter(req);
    struct cfs_node *dir;
    struct fuse_entry_param e;

    if (st == NULL) {
        return;
    }
    int err = get_dir(st, parent, &dir);
    struct cfs_dentry *d = err ? NULL : cfs_dir_find(dir, name);
    if (d == NULL) {
        leave_err(st, req, err ? err : ENOENT);
        return;
    }
    make_entry(st, d->node, &e);
    pthread_mutex_unlock(&st->lock);
    fuse_reply_entry(req, &e);
}

static void
forget_one(struct cfs_state *st, fuse_ino_t ino, uint64_t nlookup)
{
    struct cfs_node *n = node_of(st, ino);

    n->nlookup = n->nlookup > nlookup ? n->nlookup - nlookup : 0;
    cfs_node_maybe_free(st, n);
}

/* Forget and release run after a cut too: they only free memory. */
static void
cfs_forget(fuse_req_t req, fuse_ino_t ino, uint64_t nlookup)
{
    struct cfs_state *st = fuse_req_userdata(req);

    pthread_mutex_lock(&st->lock);
    forget_one(st, ino, nlookup);
    pthread_mutex_unlock(&st->lock);
    fuse_reply_none(req);
}

static void
cfs_forget_multi(fuse_req_t req, size_t count, struct fuse_forget_data *forgets)
{
    struct cfs_state *st = fuse_req_userdata(req);

    pthread_mutex_lock(&st->lock);
    for (size_t i = 0; i < count; i++) {
        forget_one(st, forgets[i].ino, forgets[i].nlookup);
    }
    pthread_mutex_unlock(&st->lock);
    fuse_reply_none(req);
}

static void
cfs_getattr(fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi)
{
    struct cfs_state *st = enter(req);
    struct stat sb;

    (void)fi;
    if (st == NULL) {
        return;
    }
    fill_attr(st, node_of(st, ino), &sb);
    pthread_mutex_unlock(&st->lock);
    fuse_reply_attr(req, &sb, CFS_TIMEOUT);
}

/* chmod, chown and utimens are kept in memory only ("accepted"); a size
 * change is volatile until fsync like any content change. */
static void
cfs_setattr(fuse_req_t req, fuse_ino_t ino, struct stat *attr, int to_set,
            struct fuse_file_info *fi)
{
    struct cfs_state *st = enter(req);
    struct timespec now;
    struct stat sb;

    (void)fi;
    if (st == NULL) {
        return;
    }
    struct cfs_node *n = node_of(st, ino);
    clock_gettime(CLOCK_REALTIME, &now);
    if (to_set & FUSE_SET_ATTR_SIZE) {
        if (!S_ISREG(n->mode)) {
            leave_err(st, req, S_ISDIR(n->mode) ? EISDIR : EINVAL);
            return;
        }
        cfs_file_truncate(n, attr->st_size);
        n->mtime = now;
    }
    if (to_set & FUSE_SET_ATTR_MODE) {
        n->mode = (n->mode & S_IFMT) | (attr->st_mode & 07777);
    }
    if (to_set & FUSE_SET_ATTR_UID) {
        n->uid = attr->st_uid;
    }
    if (to_set & FUSE_SET_ATTR_GID) {
        n->gid = attr->st_gid;
    }
    if (to_set & (FUSE_SET_ATTR_ATIME | FUSE_SET_ATTR_ATIME_NOW)) {
        n->atime = (to_set & FUSE_SET_ATTR_ATIME_NOW) ? now : attr->st_atim;
    }
    if (to_set & (FUSE_SET_ATTR_MTIME | FUSE_SET_ATTR_MTIME_NOW)) {
        n->mtime = (to_set & FUSE_SET_ATTR_MTIME_NOW) ? now : attr->st_mtim;
    }
    n->ctime = (to_set & FUSE_SET_ATTR_CTIME) ? attr->st_ctim : now;
    fill_attr(st, n, &sb);
    pthread_mutex_unlock(&st->lock);
    fuse_reply_attr(req, &sb, CFS_TIMEOUT);
}

static void
cfs_readlink(fuse_req_t req, fuse_ino_t ino)
{
    struct cfs_state *st = enter(req);

    if (st == NULL) {
        return;
    }
    struct cfs_node *n = node_of(st, ino);
    if (!S_ISLNK(n->mode)) {
        leave_err(st, req, EINVAL);
        return;
    }
    char *link = strdup(n->link);
    pthread_mutex_unlock(&st->lock);
    if (link == NULL) {
        fuse_reply_err(req, ENOMEM);
        return;
    }
    fuse_reply_readlink(req, link);
    free(link);
}

/* Creates a name at once; it becomes durable when its directory is fsynced.
 * A new regular file's durable content lives in a staging file meanwhile. */
static int
new_node(struct cfs_state *st, fuse_req_t req, fuse_ino_t parent, const char *name,
         mode_t mode, dev_t rdev, const char *link, struct cfs_node **out)
{
    const struct fuse_ctx *ctx = fuse_req_ctx(req);
    struct cfs_node *dir;
    int err = get_dir(st, parent, &dir);

    if (err != 0) {
        return err;
    }
    if (strlen(name) > NAME_MAX) {
        return ENAMETOOLONG;
    }
    if (cfs_dir_find(dir, name) != NULL || reserved_name(st, dir, name)) {
        return EEXIST;
    }
    if (cfs_trigger(st, EV_CREATE, dir, name, NULL, NULL)) {
        return EIO;
    }
    struct cfs_node *n = cfs_node_new(st, mode);
    n->uid = ctx->uid;
    n->gid = ctx->gid;
    n->rdev = rdev;
    enum cfs_op_kind kind = OP_MKNOD;
    if (S_ISREG(mode)) {
        kind = OP_CREATE;
        err = -cfs_stage_create(st, n);
    } else if (S_ISDIR(mode)) {
        kind = OP_MKDIR;
        n->loaded = true;
    } else if (S_ISLNK(mode)) {
        kind = OP_SYMLINK;
        n->link = strdup(link);
        err = n->link == NULL ? ENOMEM : 0;
    }
    if (err != 0) {
        cfs_node_maybe_free(st, n);
        return err;
    }
    cfs_op_add(st, kind, dir, name, NULL, NULL, n);
    cfs_dir_add(st, dir, name, n);
    touch(dir, true);
    *out = n;
    return 0;
}

static void
reply_new(fuse_req_t req, fuse_ino_t parent, const char *name, mode_t mode, dev_t rdev,
          const char *link)
{
    struct cfs_state *st = enter(req);
    struct fuse_entry_param e;
    struct cfs_node *n;

    if (st == NULL) {
        return;
    }
    int err = new_node(st, req, parent, name, mode, rdev, link, &n);
    if (err != 0) {
        leave_err(st, req, err);
        return;
    }
    make_entry(st, n, &e);
    pthread_mutex_unlock(&st->lock);
    fuse_reply_entry(req, &e);
}

static void
cfs_mknod(fuse_req_t req, fuse_ino_t parent, const char *name, mode_t mode, dev_t rdev)
{
    reply_new(req, parent, name, mode, rdev, NULL);
}

static void
cfs_mkdir(fuse_req_t req, fuse_ino_t parent, const char *name, mode_t mode)
{
    reply_new(req, parent, name, S_IFDIR | (mode & 07777), 0, NULL);
}

static void
cfs_symlink(fuse_req_t req, const char *link, fuse_ino_t parent, const char *name)
{
    reply_new(req, parent, name, S_IFLNK | 0777, 0, link);
}

static void
cfs_create(fuse_req_t req, fuse_ino_t parent, const char *name, mode_t mode,
           struct fuse_file_info *fi)
{
    struct cfs_state *st = enter(req);
    struct fuse_entry_param e;
    struct cfs_node *dir, *n;

    if (st == NULL) {
        return;
    }
    int err = get_dir(st, parent, &dir);
    struct cfs_dentry *d = err ? NULL : cfs_dir_find(dir, name);
    if (d != NULL) {                 /* lost a race with another creator */
        n = d->node;
        err = (fi->flags & O_EXCL) ? EEXIST : S_ISDIR(n->mode) ? EISDIR : 0;
        if (err == 0 && (fi->flags & O_TRUNC)) {
            cfs_file_truncate(n, 0);
        }
    } else if (err == 0) {
        err = new_node(st, req, parent, name, S_IFREG | (mode & 07777), 0, NULL, &n);
    }
    if (err != 0) {
        leave_err(st, req, err);
        return;
    }
    n->opens++;
    make_entry(st, n, &e);
    pthread_mutex_unlock(&st->lock);
    fi->keep_cache = 1;
    fuse_reply_create(req, &e, fi);
}

static void
cfs_link(fuse_req_t req, fuse_ino_t ino, fuse_ino_t newparent, const char *newname)
{
    struct cfs_state *st = enter(req);
    struct fuse_entry_param e;
    struct cfs_node *dir;

    if (st == NULL) {
        return;
    }
    struct cfs_node *n = node_of(st, ino);
    int err = get_dir(st, newparent, &dir);
    if (err == 0 && S_ISDIR(n->mode)) {
        err = EPERM;
    } else if (err == 0 && n->links == 0) {
        err = ENOENT;
    } else if (err == 0 && (cfs_dir_find(dir, newname) || reserved_name(st, dir, newname))) {
        err = EEXIST;
    } else if (err == 0 && cfs_trigger(st, EV_CREATE, dir, newname, NULL, NULL)) {
        err = EIO;
    }
    if (err != 0) {
        leave_err(st, req, err);
        return;
    }
    /* The remembered name is visible now, hence durable when this applies. */
    cfs_op_add(st, OP_LINK, n->parent, n->name, dir, newname, n);
    cfs_dir_add(st, dir, newname, n);
    touch(dir, true);
    touch(n, false);
    make_entry(st, n, &e);
    pthread_mutex_unlock(&st->lock);
    fuse_reply_entry(req, &e);
}

static void
remove_name(fuse_req_t req, fuse_ino_t parent, const char *name, bool want_dir)
{
    struct cfs_state *st = enter(req);
    struct cfs_node *dir;

    if (st == NULL) {
        return;
    }
    int err = get_dir(st, parent, &dir);
    struct cfs_dentry *d = err ? NULL : cfs_dir_find(dir, name);
    struct cfs_node *n = d != NULL ? d->node : NULL;
    if (err == 0 && n == NULL) {
        err = ENOENT;
    } else if (err == 0 && want_dir != S_ISDIR(n->mode)) {
        err = want_dir ? ENOTDIR : EISDIR;
    } else if (err == 0 && want_dir && (err = -cfs_dir_load(st, n)) == 0 &&
               n->children != NULL) {
        err = ENOTEMPTY;
    }
    if (err == 0 && cfs_trigger(st, EV_UNLINK, dir, name, NULL, NULL)) {
        err = EIO;
    }
    if (err != 0) {
        leave_err(st, req, err);
        return;
    }
    /* BACKING loses the name only when this op becomes durable. */
    cfs_op_add(st, want_dir ? OP_RMDIR : OP_UNLINK, dir, name, NULL, NULL, n);
    cfs_dir_remove(st, dir, name);
    touch(dir, true);
    touch(n, false);
    leave_err(st, req, 0);
}

static void
cfs_unlink(fuse_req_t req, fuse_ino_t parent, const char *name)
{
    remove_name(req, parent, name, false);
}

static void
cfs_rmdir(fuse_req_t req, fuse_ino_t parent, const char *name)
{
    remove_name(req, parent, name, true);
}

static int
rename_check(struct cfs_state *st, struct cfs_node *src, struct cfs_node *dst,
             struct cfs_node *newdir, unsigned flags)
{
    if (flags & ~(unsigned)RENAME_NOREPLACE) {
        return EINVAL;               /* RENAME_EXCHANGE, WHITEOUT: unsupported */
    }
    if (dst != NULL && (flags & RENAME_NOREPLACE)) {
        return EEXIST;
    }
    if (!S_ISDIR(src->mode)) {
        return dst != NULL && S_ISDIR(dst->mode) ? EISDIR : 0;
    }
    for (struct cfs_node *p = newdir; p != NULL; p = p->parent) {
        if (p == src) {
            return EINVAL;           /* into its own subtree */
        }
    }
    if (dst == NULL) {
        return 0;
    }
    if (!S_ISDIR(dst->mode)) {
        return ENOTDIR;
    }
    int err = -cfs_dir_load(st, dst);
    return err != 0 ? err : dst->children != NULL ? ENOTEMPTY : 0;
}

static void
cfs_rename(fuse_req_t req, fuse_ino_t parent, const char *name, fuse_ino_t newparent,
           const char *newname, unsigned int flags)
{
    struct cfs_state *st = enter(req);
    struct cfs_node *dir, *newdir;

    if (st == NULL) {
        return;
    }
    int err = get_dir(st, parent, &dir);
    err = err ? err : get_dir(st, newparent, &newdir);
    struct cfs_dentry *sd = err ? NULL : cfs_dir_find(dir, name);
    struct cfs_dentry *dd = err ? NULL : cfs_dir_find(newdir, newname);
    struct cfs_node *n = sd != NULL ? sd->node : NULL;
    struct cfs_node *victim = dd != NULL ? dd->node : NULL;
    if (err == 0 && n == NULL) {
        err = ENOENT;
    } else if (err == 0 && reserved_name(st, newdir, newname)) {
        err = EPERM;
    } else if (err == 0 && strlen(newname) > NAME_MAX) {
        err = ENAMETOOLONG;
    } else if (err == 0) {
        err = rename_check(st, n, victim, newdir, flags);
    }
    if (err == 0 && victim == n) {   /* same file: POSIX says do nothing */
        leave_err(st, req, 0);
        return;
    }
    if (err == 0 && cfs_trigger(st, EV_RENAME, dir, name, newdir, newname)) {
        err = EIO;
    }
    if (err != 0) {
        leave_err(st, req, err);
        return;
    }
    cfs_op_add(st, OP_RENAME, dir, name, newdir, newname, n);
    if (victim != NULL) {
        victim->pins++;              /* kept until we are done with it */
        cfs_dir_remove(st, newdir, newname);
    }
    cfs_dir_remove(st, dir, name);
    cfs_dir_add(st, newdir, newname, n);
    touch(dir, true);
    touch(newdir, true);
    touch(n, false);
    if (victim != NULL) {
        victim->pins--;
        touch(victim, false);
        cfs_node_maybe_free(st, victim);
    }
    leave_err(st, req, 0);
}

static void
cfs_open(fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi)
{
    struct cfs_state *st = enter(req);

    if (st == NULL) {
        return;
    }
    struct cfs_node *n = node_of(st, ino);
    if (S_ISDIR(n->mode)) {
        leave_err(st, req, EISDIR);
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
    struct cfs_state *st = enter(req);
    char *buf = malloc(size ? size : 1);

    (void)fi;
    if (st == NULL) {
        free(buf);
        return;
    }
    if (buf == NULL) {
        leave_err(st, req, ENOMEM);
        return;
    }
    ssize_t got = cfs_file_read(node_of(st, ino), buf, size, off);
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
    struct cfs_state *st = enter(req);

    (void)fi;
    if (st == NULL) {
        return;
    }
    struct cfs_node *n = node_of(st, ino);
    if (cfs_trigger(st, EV_WRITE, n, NULL, NULL, NULL)) {
        leave_err(st, req, EIO);
        return;
    }
    st->writes++;
    int rc = cfs_file_write(n, buf, size, off);
    touch(n, true);
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
    struct cfs_state *st = enter(req);

    (void)ino;
    (void)fi;
    if (st != NULL) {
        leave_err(st, req, 0);
    }
}

static void
cfs_release(fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi)
{
    struct cfs_state *st = fuse_req_userdata(req);

    (void)fi;
    pthread_mutex_lock(&st->lock);
    struct cfs_node *n = node_of(st, ino);
    n->opens--;
    cfs_node_maybe_free(st, n);
    leave_err(st, req, 0);
}

static void
cfs_fsync(fuse_req_t req, fuse_ino_t ino, int datasync, struct fuse_file_info *fi)
{
    struct cfs_state *st = enter(req);

    (void)datasync;                  /* both make content and size durable */
    (void)fi;
    if (st == NULL) {
        return;
    }
    struct cfs_node *n = node_of(st, ino);
    if (cfs_trigger(st, EV_FSYNC, n, NULL, NULL, NULL)) {
        leave_err(st, req, EIO);
        return;
    }
    st->fsyncs++;
    int rc = S_ISREG(n->mode) ? cfs_file_sync(n) : 0;
    leave_err(st, req, rc ? EIO : 0);
}

static void
cfs_opendir(fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi)
{
    struct cfs_state *st = enter(req);
    struct cfs_node *dir;

    if (st == NULL) {
        return;
    }
    int err = get_dir(st, ino, &dir);
    if (err != 0) {
        leave_err(st, req, err);
        return;
    }
    /* A snapshot: offsets stay valid while the directory changes. */
    size_t count = 2;
    for (struct cfs_dentry *d = dir->children; d != NULL; d = d->next) {
        count++;
    }
    struct dir_snap *snap = calloc(1, sizeof(*snap) + count * sizeof(snap->ents[0]));
    if (snap == NULL) {
        leave_err(st, req, ENOMEM);
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
    struct cfs_state *st = enter(req);
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
    struct cfs_state *st = enter(req);

    (void)datasync;
    (void)fi;
    if (st == NULL) {
        return;
    }
    struct cfs_node *dir = node_of(st, ino);
    if (cfs_trigger(st, EV_FSYNCDIR, dir, NULL, NULL, NULL)) {
        leave_err(st, req, EIO);
        return;
    }
    st->fsyncs++;
    leave_err(st, req, -cfs_dir_sync(st, dir));
}

static void
cfs_statfs(fuse_req_t req, fuse_ino_t ino)
{
    struct cfs_state *st = enter(req);
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
    struct cfs_state *st = enter(req);

    (void)ino;
    (void)mask;                      /* default_permissions checks modes */
    if (st != NULL) {
        leave_err(st, req, 0);
    }
}

/* Allocation is recorded (st_blocks); mode 0 grows the size with zeros. */
static void
cfs_fallocate(fuse_req_t req, fuse_ino_t ino, int mode, off_t off, off_t len,
              struct fuse_file_info *fi)
{
    struct cfs_state *st = enter(req);

    (void)fi;
    if (st == NULL) {
        return;
    }
    struct cfs_node *n = node_of(st, ino);
    if (mode & ~FALLOC_FL_KEEP_SIZE) {
        leave_err(st, req, EOPNOTSUPP);
        return;
    }
    if (!S_ISREG(n->mode)) {
        leave_err(st, req, ENODEV);
        return;
    }
    if (off + len > n->alloc_end) {
        n->alloc_end = off + len;
    }
    if (!(mode & FALLOC_FL_KEEP_SIZE) && off + len > n->vis_size) {
        cfs_file_truncate(n, off + len);
        touch(n, true);
    }
    leave_err(st, req, 0);
}

static const struct fuse_lowlevel_ops cfs_ops = {
    .init = cfs_init,
    .lookup = cfs_lookup,
    .forget = cfs_forget,
    .forget_multi = cfs_forget_multi,
    .getattr = cfs_getattr,
    .setattr = cfs_setattr,
    .readlink = cfs_readlink,
    .mknod = cfs_mknod,
    .mkdir = cfs_mkdir,
    .unlink = cfs_unlink,
    .rmdir = cfs_rmdir,
    .symlink = cfs_symlink,
    .rename = cfs_rename,
    .link = cfs_link,
    .open = cfs_open,
    .read = cfs_read,
    .write = cfs_write,
    .flush = cfs_flush,
    .release = cfs_release,
    .fsync = cfs_fsync,
    .opendir = cfs_opendir,
    .readdir = cfs_readdir,
    .releasedir = cfs_releasedir,
    .fsyncdir = cfs_fsyncdir,
    .statfs = cfs_statfs,
    .access = cfs_access,
    .create = cfs_create,
    .fallocate = cfs_fallocate,
    /* No getlk/setlk/flock: the kernel then keeps POSIX locks and flock
     * locally, which is all kurad needs. */
};

struct cli {
    char *ctl, *seed, *backing;
};

/* fuse_opt applies every matching template in order: "--ctl %s" also
 * matches "--ctl=X" (giving "=X"), so the "=" form must come after it. */
static const struct fuse_opt cli_spec[] = {
    {"--ctl %s", offsetof(struct cli, ctl), 0},
    {"--ctl=%s", offsetof(struct cli, ctl), 0},
    {"--seed %s", offsetof(struct cli, seed), 0},
    {"--seed=%s", offsetof(struct cli, seed), 0},
    FUSE_OPT_END,
};

/* The first non-option is BACKING; the second, the mountpoint, stays for
 * fuse_parse_cmdline. */
static int
cli_proc(void *data, const char *arg, int key, struct fuse_args *out)
{
    struct cli *c = data;

    (void)out;
    if (key == FUSE_OPT_KEY_NONOPT && c->backing == NULL) {
        c->backing = strdup(arg);
        return 0;
    }
    return 1;
}

static void
usage(const char *prog)
{
    fprintf(stderr,
            "usage: %s BACKING MOUNTPOINT --ctl SOCKETPATH [--seed N] [fuse options]\n"
            "Runs in the foreground, single-threaded. Control commands, one a line:\n"
            "  status | cut MODE | arm MODE EVENT GLOB [SKIP] | disarm | stats | sync\n"
            "  MODE: drop torn writeback; EVENT: fsync fsyncdir create rename unlink write\n",
            prog);
}

int
main(int argc, char *argv[])
{
    struct fuse_args args = FUSE_ARGS_INIT(argc, argv);
    struct fuse_cmdline_opts opts;
    struct cli cli = {NULL, NULL, NULL};
    char backing[PATH_MAX], mountpoint[PATH_MAX];
    struct cfs_state *st = calloc(1, sizeof(*st));
    struct fuse_session *se = NULL;
    int rc = 1, err;

    if (st == NULL || fuse_opt_parse(&args, &cli, cli_spec, cli_proc) != 0 ||
        fuse_opt_add_arg(&args, "-ofsname=crashfs,subtype=crashfs,default_permissions") != 0 ||
        fuse_parse_cmdline(&args, &opts) != 0) {
        usage(argv[0]);
        return 2;
    }
    if (opts.show_help || opts.show_version || cli.backing == NULL ||
        opts.mountpoint == NULL || cli.ctl == NULL) {
        usage(argv[0]);
        return opts.show_help || opts.show_version ? 0 : 2;
    }
    char *end = NULL;
    uint64_t seed = cli.seed != NULL ? strtoull(cli.seed, &end, 0) : (uint64_t)time(NULL);
    size_t mlen = 0;
    if ((end != NULL && *end != '\0') || realpath(cli.backing, backing) == NULL ||
        realpath(opts.mountpoint, mountpoint) == NULL ||
        (strncmp(backing, mountpoint, (mlen = strlen(mountpoint))) == 0 &&
         (backing[mlen] == '\0' || backing[mlen] == '/'))) {
        cfs_log("bad --seed, BACKING or MOUNTPOINT (BACKING must not be under MOUNTPOINT)");
        return 2;
    }
    if ((err = cfs_state_init(st, backing, seed)) != 0) {
        cfs_log("BACKING %s: %s", backing, strerror(-err));
        return 1;
    }
    cfs_log("seed %" PRIu64 " (replay with --seed %" PRIu64 ")", seed, seed);
    if ((err = cfs_ctl_start(st, cli.ctl)) != 0) {
        cfs_log("control socket %s: %s", cli.ctl, strerror(-err));
        goto out;
    }
    se = fuse_session_new(&args, &cfs_ops, sizeof(cfs_ops), st);
    if (se == NULL || fuse_set_signal_handlers(se) != 0 ||
        fuse_session_mount(se, mountpoint) != 0) {
        goto out;
    }
    cfs_lift_dirty_limit(mountpoint);
    cfs_log("serving %s on %s", backing, mountpoint);
    int loop = fuse_session_loop(se);
    fuse_session_unmount(se);
    /* The kernel reports an abort and an unmount alike (ENODEV), so an end
     * without a cut is taken as a power cut: never flush what the test did
     * not sync (the control command "sync" does that on purpose). */
    pthread_mutex_lock(&st->lock);
    if (!st->cut) {
        cfs_log("session ended without a cut: dropping unsynced state");
        cfs_cut(st, CFS_DROP);
    }
    pthread_mutex_unlock(&st->lock);
    rc = loop == 0 || loop == -ECONNABORTED || loop == -ENODEV ? 0 : 1;
out:
    if (se != NULL) {
        fuse_remove_signal_handlers(se);
        fuse_session_destroy(se);
    }
    cfs_ctl_stop(st);
    cfs_state_free(st);
    free(st);
    free(opts.mountpoint);
    free(cli.ctl);
    free(cli.seed);
    free(cli.backing);
    fuse_opt_free_args(&args);
    return rc;
}
