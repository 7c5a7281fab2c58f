/*
 * engine_fixture: a database, an optional update log and a write path in
 * a temporary directory, for the unit suites that drive modules sitting
 * on the write path (recovery, sweeper, conn, worker), and the request
 * processing environment over it. No sockets and no threads: the log's
 * sync thread is not started, so use the "never" policy unless a test
 * asks for durability itself (ulog_wait_durable() then syncs).
 *
 * Every call fails the running Check test on error, so callers need no
 * error handling.
 */
#ifndef KURA_ENGINE_FIXTURE_H
#define KURA_ENGINE_FIXTURE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "access.h"
#include "auth.h"
#include "clock.h"
#include "log.h"
#include "process.h"
#include "record.h"
#include "settings.h"
#include "store.h"
#include "txn.h"
#include "ulog.h"
#include "unit_tmpdir.h"

struct engine_fixture {
    char dir[UNIT_TMPDIR_MAX]; /* the temporary directory (unit_tmpdir) */
    struct logger log;    /* to /dev/null */
    struct clock clk;
    struct store *store;  /* NULL until engine_fixture_open_store() */
    struct ulog *ulog;    /* NULL until engine_fixture_open_ulog() */
    struct txn_engine eng;
    bool eng_ready;
    struct txn_batch batch; /* the test's own batch, once the engine runs */
    /* What the log's peers have acknowledged (U5); UINT64_MAX, no peer,
     * until a test sets it. 0 keeps every segment past a checkpoint. */
    uint64_t peers_acked;
};

/* Creates the directory, the logger and the clock. */
void engine_fixture_setup(struct engine_fixture *f);

/* Closes whatever is open and removes the directory with its files. */
void engine_fixture_teardown(struct engine_fixture *f);

/* Opens (creating) the database file `name` in the directory. */
void engine_fixture_open_store(struct engine_fixture *f, const char *name);

/*
 * Opens (creating) the update log in <dir>/ulog with `policy`, starting a
 * new segment past `segment_max` bytes. The sync thread is not started.
 */
void engine_fixture_open_ulog(struct engine_fixture *f, enum ulog_fsync policy,
                              uint64_t segment_max);

/*
 * Starts the write path over the open store and, if open, the log, with
 * server id 1, and initialises `f->batch`.
 */
void engine_fixture_start(struct engine_fixture *f);

/* Stops the write path (committing the batch) and closes log and store. */
void engine_fixture_close(struct engine_fixture *f);

/*
 * Stages and commits key = value with absolute expiry `exptime` (0 for
 * never) through `f->batch`, stamped now. Returns the record's stamp.
 */
uint64_t engine_fixture_put(struct engine_fixture *f, const char *key,
                            const char *value, uint32_t exptime);

/* Stages and commits the deletion of `key`, which must exist. */
void engine_fixture_remove(struct engine_fixture *f, const char *key);

/*
 * What the store itself holds for `key`, bypassing every batch: returns
 * false if nothing; otherwise fills `m` and copies the value (NUL
 * terminated, truncated to `cap`) into `out`.
 */
bool engine_fixture_stored(struct engine_fixture *f, const char *key,
                           struct record_meta *m, char *out, size_t cap);

/*
 * What process.c needs to serve requests over a fixture's engine:
 * settings as from `kurad -itemmax 2k` (so the defaults, -fsync always
 * among them), no authentication, and server-wide callbacks that do
 * nothing (stats print zeros).
 */
struct process_fixture {
    struct settings settings;
    struct access_table recent;
    struct auth auth;
    struct process_env env;
};

/* Sets `p` up over `f`'s engine, which must be started. */
void engine_fixture_process_setup(struct engine_fixture *f,
                                  struct process_fixture *p);

/* Frees what engine_fixture_process_setup() allocated. */
void engine_fixture_process_teardown(struct process_fixture *p);

/* Path of the file `name` in the fixture's directory, in `out`. */
void engine_fixture_path(const struct engine_fixture *f, const char *name,
                         char *out, size_t cap);

#endif
