/*
 * crashfs_fuse.c: the helpers every FUSE handler of crashfs uses
 * (crashfs_fuse.h): the lock and the EIO after a cut, inode numbers to
 * nodes, a node's attributes as stat and lookup show them.
 */
#define _GNU_SOURCE
#include "crashfs_fuse.h"

#include <errno.h>
#include <stdint.h>
#include <string.h>
#include <time.h>

struct cfs_state *
cfs_enter(fuse_req_t req)
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

void
cfs_leave_err(struct cfs_state *st, fuse_req_t req, int err)
{
    pthread_mutex_unlock(&st->lock);
    fuse_reply_err(req, err);
}

struct cfs_node *
cfs_node_of(struct cfs_state *st, fuse_ino_t ino)
{
    return ino == FUSE_ROOT_ID ? st->root : (struct cfs_node *)(uintptr_t)ino;
}

void
cfs_touch(struct cfs_node *n, bool modified)
{
    struct timespec now;

    clock_gettime(CLOCK_REALTIME, &now);
    n->ctime = now;
    if (modified) {
        n->mtime = now;
    }
}

void
cfs_fill_attr(struct cfs_state *st, struct cfs_node *n, struct stat *sb)
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

void
cfs_make_entry(struct cfs_state *st, struct cfs_node *n, struct fuse_entry_param *e)
{
    memset(e, 0, sizeof(*e));
    n->nlookup++;
    e->ino = n == st->root ? FUSE_ROOT_ID : (uintptr_t)n;
    e->attr_timeout = e->entry_timeout = CFS_TIMEOUT;
    cfs_fill_attr(st, n, &e->attr);
}

/* The directory behind ino, loaded; 0 or an errno. */
int
cfs_get_dir(struct cfs_state *st, fuse_ino_t ino, struct cfs_node **dir)
{
    *dir = cfs_node_of(st, ino);
    if (!S_ISDIR((*dir)->mode)) {
        return ENOTDIR;
    }
    return -cfs_dir_load(st, *dir);
}

bool
cfs_reserved_name(struct cfs_state *st, struct cfs_node *dir, const char *name)
{
    return dir == st->root && strcmp(name, CFS_STAGE_DIR) == 0;
}
