/*
 * crashfs_state.h: the one state struct of crashfs and the model behind it.
 *
 * BACKING holds only durable state. The visible file system is an in-memory
 * tree of nodes (per inode, not per name) whose unsynced file content lives in
 * dirty 4 KiB pages and whose unsynced namespace changes live in one ordered
 * list of directory operations. crashfs_state.c owns that model, durability
 * (fsync, fsyncdir) and the power cut; crashfs_ctl.c owns the control socket;
 * crashfs.c owns main() and the FUSE session, whose request handlers are in
 * crashfs_names.c and crashfs_files.c (crashfs_fuse.h).
 */
#ifndef CRASHFS_STATE_H
#define CRASHFS_STATE_H

#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>
#include <sys/stat.h>
#include <sys/types.h>

#define CFS_PAGE 4096
#define CFS_SECTOR 512
#define CFS_STAGE_DIR ".crashfs"

enum cfs_mode { CFS_DROP, CFS_TORN, CFS_WRITEBACK };

enum cfs_event { EV_FSYNC, EV_FSYNCDIR, EV_CREATE, EV_RENAME, EV_UNLINK, EV_WRITE };

struct cfs_page {
    uint64_t idx;
    struct cfs_page *next;
    unsigned char data[CFS_PAGE];
};

struct cfs_node;

struct cfs_dentry {
    char *name;
    struct cfs_node *node;
    struct cfs_dentry *next;
};

struct cfs_node {
    uint64_t id;                 /* st_ino, and the staging file's name */
    mode_t mode;
    uid_t uid;
    gid_t gid;
    struct timespec atime, mtime, ctime;
    /* A node lives while any of these is non-zero. */
    uint64_t nlookup;            /* kernel references (lookup/forget) */
    unsigned opens;              /* open file handles */
    unsigned links;              /* visible names */
    unsigned pins;               /* pending dirops and children naming it */
    /* One current visible name: for event paths and "..". */
    struct cfs_node *parent;
    char *name;
    struct cfs_node *all_prev, *all_next;
    /* Directories. dir_fd follows the durable directory through renames
     * in BACKING; -1 while its mkdir is pending. */
    struct cfs_dentry *children;
    bool loaded;
    int dir_fd;
    /* Regular files. data_fd is the durable file (or its staging file while
     * no name of it is durable): fds follow renames, so no durable path is
     * ever needed for content. */
    int data_fd;
    bool staged;
    off_t vis_size;              /* what getattr and reads see */
    off_t dur_size;              /* size of the backing file */
    off_t base_size;             /* durable bytes below this show through */
    off_t alloc_end;             /* highest fallocate()d end */
    struct cfs_page **buckets;
    size_t nbuckets, npages;
    char *link;                  /* symlinks */
    dev_t rdev;                  /* device nodes */
};

enum cfs_op_kind { OP_CREATE, OP_MKNOD, OP_MKDIR, OP_SYMLINK, OP_LINK, OP_UNLINK,
                   OP_RMDIR, OP_RENAME };

/* A namespace change not yet durable. Names are as they were when the op was
 * made; since ops are applied to BACKING strictly in order, the durable
 * namespace at apply time equals the visible one at record time, so the
 * names are valid in BACKING then. */
struct cfs_dirop {
    enum cfs_op_kind kind;
    struct cfs_node *dir, *dir2; /* dir2: rename and link destination */
    char *name, *name2;
    struct cfs_node *target;     /* the node named / created */
    struct cfs_dirop *next;
};

struct cfs_state {
    pthread_mutex_t lock;        /* serialises everything, ctl thread too */
    int backing_fd, stage_fd;
    struct cfs_node *root;
    struct cfs_node *all;        /* every live node, for cut and stats */
    uint64_t next_id;
    struct cfs_dirop *ops, **ops_tail;
    size_t nops;
    bool cut;
    uint64_t seed, rng;
    /* Armed trigger. */
    bool armed;
    enum cfs_mode arm_mode;
    enum cfs_event arm_event;
    char *arm_glob;
    unsigned long arm_skip;
    /* Counters for "stats". */
    uint64_t fsyncs, writes;
    /* Control socket. */
    int ctl_fd, wake_pipe[2];
    char *ctl_path;
    pthread_t ctl_thread;
    bool ctl_started;
};

/* crashfs_state.c; callers hold st->lock unless noted. */
void cfs_log(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
int cfs_state_init(struct cfs_state *st, const char *backing, uint64_t seed);
void cfs_state_free(struct cfs_state *st);
uint64_t cfs_rand(struct cfs_state *st);
struct cfs_node *cfs_node_new(struct cfs_state *st, mode_t mode);
void cfs_node_maybe_free(struct cfs_state *st, struct cfs_node *n);
void cfs_node_set_name(struct cfs_state *st, struct cfs_node *n, struct cfs_node *parent,
                       const char *name);
int cfs_dir_load(struct cfs_state *st, struct cfs_node *dir);
struct cfs_dentry *cfs_dir_find(struct cfs_node *dir, const char *name);
void cfs_dir_add(struct cfs_state *st, struct cfs_node *dir, const char *name,
                 struct cfs_node *n);
void cfs_dir_remove(struct cfs_state *st, struct cfs_node *dir, const char *name);
int cfs_node_path(const struct cfs_node *n, char *buf, size_t size);
int cfs_stage_create(struct cfs_state *st, struct cfs_node *n);
void cfs_op_add(struct cfs_state *st, enum cfs_op_kind kind, struct cfs_node *dir,
                const char *name, struct cfs_node *dir2, const char *name2,
                struct cfs_node *target);
ssize_t cfs_file_read(struct cfs_node *n, char *buf, size_t size, off_t off);
int cfs_file_write(struct cfs_node *n, const char *buf, size_t size, off_t off);
void cfs_file_truncate(struct cfs_node *n, off_t size);
bool cfs_file_dirty(const struct cfs_node *n);
int cfs_file_sync(struct cfs_node *n);
int cfs_dir_sync(struct cfs_state *st, struct cfs_node *dir);
void cfs_cut(struct cfs_state *st, enum cfs_mode mode);
int cfs_sync_all(struct cfs_state *st);

/* crashfs_ctl.c */
int cfs_ctl_start(struct cfs_state *st, const char *path);
void cfs_ctl_stop(struct cfs_state *st);
void cfs_lift_dirty_limit(const char *mountpoint);
/* Fires the armed cut if EVENT on the path of node (optionally joined with
 * name) or of dir2/name2 matches; true means "cut done, fail with EIO". */
bool cfs_trigger(struct cfs_state *st, enum cfs_event ev, const struct cfs_node *dir,
                 const char *name, const struct cfs_node *dir2, const char *name2);

#endif
