/*
 * crashfs_names.c: the FUSE handlers of names and attributes: lookup and
 * forget, getattr and setattr, readlink, mknod, mkdir, symlink, create,
 * link, unlink, rmdir and rename.
 *
 * A name changes in the visible tree at once and is queued as a pending
 * directory operation (cfs_op_add) that becomes durable in BACKING when its
 * directory is fsynced; a new regular file's durable content lives in a
 * staging file meanwhile (crashfs_state.h). Each handler that an armed
 * trigger can match asks cfs_trigger first and fails with EIO once it
 * fires.
 */
#define _GNU_SOURCE
#include "crashfs_fuse.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static void
cfs_lookup(fuse_req_t req, fuse_ino_t parent, const char *name)
{
    struct cfs_state *st = cfs_enter(req);
    struct cfs_node *dir;
    struct fuse_entry_param e;

    if (st == NULL) {
        return;
    }
    int err = cfs_get_dir(st, parent, &dir);
    struct cfs_dentry *d = err ? NULL : cfs_dir_find(dir, name);
    if (d == NULL) {
        cfs_leave_err(st, req, err ? err : ENOENT);
        return;
    }
    cfs_make_entry(st, d->node, &e);
    pthread_mutex_unlock(&st->lock);
    fuse_reply_entry(req, &e);
}

static void
forget_one(struct cfs_state *st, fuse_ino_t ino, uint64_t nlookup)
{
    struct cfs_node *n = cfs_node_of(st, ino);

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
    struct cfs_state *st = cfs_enter(req);
    struct stat sb;

    (void)fi;
    if (st == NULL) {
        return;
    }
    cfs_fill_attr(st, cfs_node_of(st, ino), &sb);
    pthread_mutex_unlock(&st->lock);
    fuse_reply_attr(req, &sb, CFS_TIMEOUT);
}

/* chmod, chown and utimens are kept in memory only ("accepted"); a size
 * change is volatile until fsync like any content change. */
static void
cfs_setattr(fuse_req_t req, fuse_ino_t ino, struct stat *attr, int to_set,
            struct fuse_file_info *fi)
{
    struct cfs_state *st = cfs_enter(req);
    struct timespec now;
    struct stat sb;

    (void)fi;
    if (st == NULL) {
        return;
    }
    struct cfs_node *n = cfs_node_of(st, ino);
    clock_gettime(CLOCK_REALTIME, &now);
    if (to_set & FUSE_SET_ATTR_SIZE) {
        if (!S_ISREG(n->mode)) {
            cfs_leave_err(st, req, S_ISDIR(n->mode) ? EISDIR : EINVAL);
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
    cfs_fill_attr(st, n, &sb);
    pthread_mutex_unlock(&st->lock);
    fuse_reply_attr(req, &sb, CFS_TIMEOUT);
}

static void
cfs_readlink(fuse_req_t req, fuse_ino_t ino)
{
    struct cfs_state *st = cfs_enter(req);

    if (st == NULL) {
        return;
    }
    struct cfs_node *n = cfs_node_of(st, ino);
    if (!S_ISLNK(n->mode)) {
        cfs_leave_err(st, req, EINVAL);
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
    int err = cfs_get_dir(st, parent, &dir);

    if (err != 0) {
        return err;
    }
    if (strlen(name) > NAME_MAX) {
        return ENAMETOOLONG;
    }
    if (cfs_dir_find(dir, name) != NULL || cfs_reserved_name(st, dir, name)) {
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
    cfs_touch(dir, true);
    *out = n;
    return 0;
}

static void
reply_new(fuse_req_t req, fuse_ino_t parent, const char *name, mode_t mode, dev_t rdev,
          const char *link)
{
    struct cfs_state *st = cfs_enter(req);
    struct fuse_entry_param e;
    struct cfs_node *n;

    if (st == NULL) {
        return;
    }
    int err = new_node(st, req, parent, name, mode, rdev, link, &n);
    if (err != 0) {
        cfs_leave_err(st, req, err);
        return;
    }
    cfs_make_entry(st, n, &e);
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
    struct cfs_state *st = cfs_enter(req);
    struct fuse_entry_param e;
    struct cfs_node *dir, *n;

    if (st == NULL) {
        return;
    }
    int err = cfs_get_dir(st, parent, &dir);
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
        cfs_leave_err(st, req, err);
        return;
    }
    n->opens++;
    cfs_make_entry(st, n, &e);
    pthread_mutex_unlock(&st->lock);
    fi->keep_cache = 1;
    fuse_reply_create(req, &e, fi);
}

static void
cfs_link(fuse_req_t req, fuse_ino_t ino, fuse_ino_t newparent, const char *newname)
{
    struct cfs_state *st = cfs_enter(req);
    struct fuse_entry_param e;
    struct cfs_node *dir;

    if (st == NULL) {
        return;
    }
    struct cfs_node *n = cfs_node_of(st, ino);
    int err = cfs_get_dir(st, newparent, &dir);
    if (err == 0 && S_ISDIR(n->mode)) {
        err = EPERM;
    } else if (err == 0 && n->links == 0) {
        err = ENOENT;
    } else if (err == 0 &&
               (cfs_dir_find(dir, newname) || cfs_reserved_name(st, dir, newname))) {
        err = EEXIST;
    } else if (err == 0 && cfs_trigger(st, EV_CREATE, dir, newname, NULL, NULL)) {
        err = EIO;
    }
    if (err != 0) {
        cfs_leave_err(st, req, err);
        return;
    }
    /* The remembered name is visible now, hence durable when this applies. */
    cfs_op_add(st, OP_LINK, n->parent, n->name, dir, newname, n);
    cfs_dir_add(st, dir, newname, n);
    cfs_touch(dir, true);
    cfs_touch(n, false);
    cfs_make_entry(st, n, &e);
    pthread_mutex_unlock(&st->lock);
    fuse_reply_entry(req, &e);
}

static void
remove_name(fuse_req_t req, fuse_ino_t parent, const char *name, bool want_dir)
{
    struct cfs_state *st = cfs_enter(req);
    struct cfs_node *dir;

    if (st == NULL) {
        return;
    }
    int err = cfs_get_dir(st, parent, &dir);
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
        cfs_leave_err(st, req, err);
        return;
    }
    /* BACKING loses the name only when this op becomes durable. */
    cfs_op_add(st, want_dir ? OP_RMDIR : OP_UNLINK, dir, name, NULL, NULL, n);
    cfs_dir_remove(st, dir, name);
    cfs_touch(dir, true);
    cfs_touch(n, false);
    cfs_leave_err(st, req, 0);
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
    struct cfs_state *st = cfs_enter(req);
    struct cfs_node *dir, *newdir;

    if (st == NULL) {
        return;
    }
    int err = cfs_get_dir(st, parent, &dir);
    err = err ? err : cfs_get_dir(st, newparent, &newdir);
    struct cfs_dentry *sd = err ? NULL : cfs_dir_find(dir, name);
    struct cfs_dentry *dd = err ? NULL : cfs_dir_find(newdir, newname);
    struct cfs_node *n = sd != NULL ? sd->node : NULL;
    struct cfs_node *victim = dd != NULL ? dd->node : NULL;
    if (err == 0 && n == NULL) {
        err = ENOENT;
    } else if (err == 0 && cfs_reserved_name(st, newdir, newname)) {
        err = EPERM;
    } else if (err == 0 && strlen(newname) > NAME_MAX) {
        err = ENAMETOOLONG;
    } else if (err == 0) {
        err = rename_check(st, n, victim, newdir, flags);
    }
    if (err == 0 && victim == n) {   /* same file: POSIX says do nothing */
        cfs_leave_err(st, req, 0);
        return;
    }
    if (err == 0 && cfs_trigger(st, EV_RENAME, dir, name, newdir, newname)) {
        err = EIO;
    }
    if (err != 0) {
        cfs_leave_err(st, req, err);
        return;
    }
    cfs_op_add(st, OP_RENAME, dir, name, newdir, newname, n);
    if (victim != NULL) {
        victim->pins++;              /* kept until we are done with it */
        cfs_dir_remove(st, newdir, newname);
    }
    cfs_dir_remove(st, dir, name);
    cfs_dir_add(st, newdir, newname, n);
    cfs_touch(dir, true);
    cfs_touch(newdir, true);
    cfs_touch(n, false);
    if (victim != NULL) {
        victim->pins--;
        cfs_touch(victim, false);
        cfs_node_maybe_free(st, victim);
    }
    cfs_leave_err(st, req, 0);
}

void
cfs_names_ops(struct fuse_lowlevel_ops *ops)
{
    ops->lookup = cfs_lookup;
    ops->forget = cfs_forget;
    ops->forget_multi = cfs_forget_multi;
    ops->getattr = cfs_getattr;
    ops->setattr = cfs_setattr;
    ops->readlink = cfs_readlink;
    ops->mknod = cfs_mknod;
    ops->mkdir = cfs_mkdir;
    ops->unlink = cfs_unlink;
    ops->rmdir = cfs_rmdir;
    ops->symlink = cfs_symlink;
    ops->rename = cfs_rename;
    ops->link = cfs_link;
    ops->create = cfs_create;
}
