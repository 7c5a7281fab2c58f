/*
 * crashfs_fuse.h: what the FUSE request handlers of crashfs share.
 *
 * crashfs.c owns main() and puts the handlers together into one table;
 * crashfs_names.c handles names and attributes (lookup, create, link,
 * unlink, rename, getattr, setattr), crashfs_files.c open handles (read,
 * write, fsync, directory listings, statfs). Both reach the model
 * (crashfs_state.h) through the helpers of crashfs_fuse.c: take the lock,
 * fail with EIO after a cut, map inode numbers to nodes, fill attributes.
 * Every handler runs on the FUSE loop's one thread.
 */
#ifndef CRASHFS_FUSE_H
#define CRASHFS_FUSE_H

#define FUSE_USE_VERSION 35
#include <fuse_lowlevel.h>

#include <stdbool.h>
#include <sys/stat.h>

#include "crashfs_state.h"

/* Attributes and names are not cached by the kernel, so that after a cut
 * stat and lookup reach crashfs and fail with EIO (cost: a round trip). */
#define CFS_TIMEOUT 0.0

/* Takes st->lock for the request. After a cut it replies EIO itself,
 * releases the lock and returns NULL: the handler then just returns. */
struct cfs_state *cfs_enter(fuse_req_t req);

/* Releases st->lock and replies `err` (0: success with no data). */
void cfs_leave_err(struct cfs_state *st, fuse_req_t req, int err);

/* The node behind a FUSE inode number (the root, or the node's address). */
struct cfs_node *cfs_node_of(struct cfs_state *st, fuse_ino_t ino);

/* Sets n's ctime to now, and its mtime too if `modified`. */
void cfs_touch(struct cfs_node *n, bool modified);

/* Fills *sb with n's attributes as stat shows them. Loads a directory
 * from BACKING to count its subdirectories. Caller holds st->lock. */
void cfs_fill_attr(struct cfs_state *st, struct cfs_node *n, struct stat *sb);

/* Fills *e for a lookup reply of n and counts the kernel's new reference
 * (n->nlookup, given back by forget). Caller holds st->lock. */
void cfs_make_entry(struct cfs_state *st, struct cfs_node *n, struct fuse_entry_param *e);

/* Sets *dir to the directory behind ino, loaded from BACKING. Returns 0,
 * ENOTDIR, or the errno of the load. Caller holds st->lock. */
int cfs_get_dir(struct cfs_state *st, fuse_ino_t ino, struct cfs_node **dir);

/* True for the name crashfs keeps for itself (its staging directory in
 * the root), which no request may create, link or rename onto. */
bool cfs_reserved_name(struct cfs_state *st, struct cfs_node *dir, const char *name);

/* Set the handlers of crashfs_names.c and crashfs_files.c into *ops. */
void cfs_names_ops(struct fuse_lowlevel_ops *ops);
void cfs_files_ops(struct fuse_lowlevel_ops *ops);

#endif
