/*
 * crashfs.c: a FUSE file system that simulates power cuts for kura's tests.
 *
 * crashfs BACKING MOUNTPOINT --ctl SOCKETPATH [--seed N] [fuse options]
 *
 * MOUNTPOINT shows BACKING through a volatile write cache: BACKING only ever
 * holds durable state, so a cut (crashfs_state.c) can decide what survives.
 * This file owns main(): the command line, the control socket and the FUSE
 * session (crashfs_ctl.c), and the table of request handlers, which
 * crashfs_names.c (names, attributes) and crashfs_files.c (open files and
 * directories) fill. It uses the low-level API because the model is per
 * inode: open handles keep working after unlink or rename.
 * No direct_io (it breaks MAP_SHARED) and no writeback_cache: every write,
 * including the kernel's write-back of mapped pages, reaches the daemon as a
 * FUSE write, whose memory is the volatile cache.
 */
#define _GNU_SOURCE
#include "crashfs_fuse.h"

#include <errno.h>
#include <inttypes.h>
#include <limits.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

static void
cfs_init(void *userdata, struct fuse_conn_info *conn)
{
    (void)userdata;
    /* The kernel must send every write and truncate here, and must not
     * throw away its page cache behind a mapping's back. */
    conn->want &= ~(unsigned)(FUSE_CAP_WRITEBACK_CACHE | FUSE_CAP_ATOMIC_O_TRUNC |
                              FUSE_CAP_AUTO_INVAL_DATA | FUSE_CAP_HANDLE_KILLPRIV);
}

/* Every handler into one table. No getlk/setlk/flock: the kernel then
 * keeps POSIX locks and flock locally, which is all kurad needs. */
static void
cfs_ops_fill(struct fuse_lowlevel_ops *ops)
{
    memset(ops, 0, sizeof(*ops));
    ops->init = cfs_init;
    cfs_names_ops(ops);
    cfs_files_ops(ops);
}

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
    struct fuse_lowlevel_ops ops;
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
    cfs_ops_fill(&ops);
    se = fuse_session_new(&args, &ops, sizeof(ops), st);
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
