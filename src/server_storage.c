/*
 * server_storage: opening the update log and the database at start-up
 * (server_internal.h): the directory checks, the log's recovery, the
 * database's open and redo, and the memory plan that follows from the
 * limit; and the callbacks through which the log asks about the database
 * and the peers.
 */
#include "server_internal.h"

#include <errno.h>
#include <inttypes.h>
#include <libgen.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "atomicfile.h"
#include "record.h"
#include "recovery.h"
#include "util.h"

/* ulog callbacks: database sync for checkpoints, peers for retention. */
static int
_sync_db(void *arg)
{
    struct server *srv = arg;
    uint64_t dirty = 0;
    if (memlimit_dirty(&srv->mem, &dirty) != 0) {
        dirty = 0;
    }
    return store_sync_data(srv->store, dirty);
}

static uint64_t
_db_size(void *arg)
{
    struct server *srv = arg;
    return store_fsiz(srv->store);
}

static int
_db_dirty(void *arg, uint64_t *bytes)
{
    struct server *srv = arg;
    return memlimit_dirty(&srv->mem, bytes);
}

static int
_db_write_back(void *arg, uint64_t dirty)
{
    struct server *srv = arg;
    return store_write_back(srv->store, dirty);
}

static uint32_t
_db_salt(void *arg)
{
    struct server *srv = arg;
    return store_salt(srv->store);
}

uint64_t
server_peers_acked(void *arg)
{
    struct server *srv = arg;
    return srv->sender != NULL ? repl_sender_acked(srv->sender) : UINT64_MAX;
}


/* Creates the directory of the default database (./data) if missing. */
static int
_ensure_parent_dir(const char *path, char *err, size_t errlen)
{
    char copy[DBSPEC_PATH_MAX];
    util_strlcpy(copy, path, sizeof(copy));
    const char *dir = dirname(copy);
    if (mkdir(dir, 0755) == 0) {
        /* The new directory's entry must outlive a power cut too. */
        return atomicfile_sync_dir(dir) == 0 ? 0 : -1;
    }
    if (errno != EEXIST) {
        snprintf(err, errlen, "cannot create %s: %s", dir, strerror(errno));
        return -1;
    }
    return 0;
}

/* A database named in a directory that is not there: said in the terms
 * the operator used, before the update log beside it is created. */
static int
_check_parent_dir(const char *path, char *err, size_t errlen)
{
    char copy[DBSPEC_PATH_MAX];
    struct stat st;
    util_strlcpy(copy, path, sizeof(copy));
    const char *dir = dirname(copy);
    if (stat(dir, &st) != 0) {
        snprintf(err, errlen, "cannot open database %s: directory %s: %s",
                 path, dir, strerror(errno));
        return -1;
    }
    if (!S_ISDIR(st.st_mode)) {
        snprintf(err, errlen, "cannot open database %s: %s is not a "
                 "directory", path, dir);
        return -1;
    }
    return 0;
}

static int
_open_ulog(struct server *srv, struct ulog_recovery *found, char *err,
           size_t errlen)
{
    const struct settings *s = srv->settings;
    struct ulog_options o;
    struct ulog_recovery rec;

    memset(&o, 0, sizeof(o));
    util_strlcpy(o.dir, s->ulog_path, sizeof(o.dir));
    o.segment_max = s->ulim;
    o.keep_segments = s->ukeep;
    o.fsync = s->fsync;
    o.fsync_ms = s->fsync_ms;
    o.sid = s->sid;
    o.checkpoint_ms = s->ckpt_s * 1000; /* -ckpt, default 25 s */
    o.checkpoint_bytes = CHECKPOINT_BYTES;
    /* "At least this often": more often under a memory limit, where
     * redo runs at the disk's pace (memlimit.h). */
    if (srv->plan.checkpoint_ms > 0 && srv->plan.checkpoint_ms <
                                           o.checkpoint_ms) {
        o.checkpoint_ms = srv->plan.checkpoint_ms;
    }
    if (srv->plan.checkpoint_log > 0 && srv->plan.checkpoint_log <
                                            o.checkpoint_bytes) {
        o.checkpoint_bytes = srv->plan.checkpoint_log;
    }
    o.checkpoint_growth = CHECKPOINT_GROWTH;
    o.checkpoint_dirty = srv->plan.dirty_max; /* 0 without a memory limit */
    o.writeback_dirty = srv->plan.writeback_at;
    o.db_dirty = _db_dirty;
    o.db_write_back = _db_write_back;
    o.clock = &srv->clock;
    o.log = &srv->log;
    o.sync_db = _sync_db;
    o.db_size = _db_size;
    o.db_salt = _db_salt;
    o.peers_acked = server_peers_acked;
    o.arg = srv;
    srv->ulog = ulog_open(&o, &rec, err, errlen);
    if (srv->ulog == NULL) {
        return -1;
    }
    /* Stamps must sort after everything already logged (U1). */
    clock_observe(&srv->clock, rec.last_lsn);
    log_info(&srv->log, "update log %s: %u segment(s), last lsn %" PRIu64
             ", checkpoint %" PRIu64, s->ulog_path, rec.segments,
             rec.last_lsn, rec.checkpoint_lsn);
    *found = rec;
    return 0;
}

/* What store_open() found: an unclean stop is worth a line, a rebuild a
 * warning with what was kept and lost. */
static void
_log_open_report(struct server *srv, const struct store_open_report *rep)
{
    const char *path = srv->settings->db.path;
    if (rep->created) {
        log_info(&srv->log, "database %s created", path);
    }
    if (!rep->unclean) {
        return;
    }
    if (!rep->salvaged) {
        log_info(&srv->log, "database %s was not closed cleanly; checked "
                 "in full in %" PRIu64 " ms (%s, %" PRIu32 " pass%s): %"
                 PRIu64 " records, sound", path, rep->check_ms,
                 rep->same_boot ? "the machine did not restart"
                                : "the machine may have restarted",
                 rep->check.passes, rep->check.passes == 1 ? "" : "es",
                 rep->check.records);
        return;
    }
    const struct salvage_report *sr = &rep->salvage;
    /* Which check found the damage, as in the line above (store.h D8). */
    log_warn(&srv->log, "database %s was not closed cleanly (%s) and is "
             "damaged at offset %" PRIu64 " (%s); rebuilt from its intact "
             "records in %" PRIu64 " ms: %" PRIu64 " records kept, %" PRIu64
             " older copies dropped, %" PRIu64 " torn records and %" PRIu64
             " unreadable bytes skipped (first at offset %" PRIu64 "); the "
             "update log restores what changed since the last checkpoint",
             path, rep->same_boot ? "the machine did not restart"
                                  : "the machine may have restarted",
             rep->check.damage_offset, rep->check.damage,
             rep->salvage_ms, sr->kept, sr->superseded, sr->torn,
             sr->unreadable, sr->first_damage);
}

/* Says what the memory kurad may use made of the database's settings,
 * and locks the bucket array in memory when it fits (memlimit.h). */
static void
_fit_memory(struct server *srv, const struct dbspec *db)
{
    const struct memlimit *m = &srv->mem;
    uint64_t mib = (uint64_t)1 << 20;
    char where[96];
    if (memlimit_limited(m)) {
        snprintf(where, sizeof(where), "a cgroup v%d limit of %" PRIu64
                 " MiB", m->version, m->limit / mib);
    } else {
        snprintf(where, sizeof(where), "%" PRIu64 " MiB of RAM, no cgroup "
                 "limit", m->ram / mib);
    }
    if (db->kind != DBSPEC_HASH_FILE) {
        log_info(&srv->log, "memory: %s", where);
        return;
    }
    uint64_t buckets = store_bucket_bytes(srv->store);
    const char *pinned = "locked in memory";
    char why[128] = "";
    if (buckets > srv->plan.pin_max) {
        pinned = "not locked: more than a quarter of the memory";
    } else if (store_pin_buckets(srv->store) != 0) {
        snprintf(why, sizeof(why), "not locked (%s; raise LimitMEMLOCK)",
                 strerror(errno));
        pinned = why;
    } else {
        srv->buckets_locked = true;
        /* Every update rewrites its bucket entry (Tokyo Cabinet writes
         * the link to a record back even when it is unchanged), so the
         * whole array is dirty within seconds; locked, it needs no room
         * from reclaim, and the dirty bound is for the rest. */
        if (srv->plan.dirty_max > 0) {
            srv->plan.dirty_max += buckets;
            srv->plan.writeback_at += buckets;
            if (srv->ulog != NULL) {
                ulog_set_dirty_bounds(srv->ulog, srv->plan.dirty_max,
                                      srv->plan.writeback_at);
            }
        }
    }
    char dirty[64] = "by time and log only";
    if (srv->plan.dirty_max > 0) {
        snprintf(dirty, sizeof(dirty), "also once %" PRIu64 " MiB is dirty",
                 srv->plan.dirty_max / mib);
    }
    log_info(&srv->log, "memory: %s; database %" PRIu64 " MiB, mapped %"
             PRIu64 " MiB%s, bucket array %" PRIu64 " MiB %s; checkpoints "
             "%s", where, store_fsiz(srv->store) / mib,
             (uint64_t)db->xmsiz / mib,
             srv->settings->db.xmsiz >= 0 ? " (#xmsiz)" : "", buckets / mib,
             pinned, dirty);
}

/* A peer that connects to us as a follower is up again: the receiver
 * following it stops waiting out its backoff. */
static void
_peer_is_back(void *arg)
{
    repl_receiver_peer_back(arg);
}

int
server_open_storage(struct server *srv, char *err, size_t errlen)
{
    const struct settings *s = srv->settings;
    char flush_path[DBSPEC_PATH_MAX + 16] = "";
    size_t scratch = s->item_max + RECORD_HEADER_MAX + 1;

    if (s->default_db && _ensure_parent_dir(s->db.path, err, errlen) != 0) {
        return -1;
    }
    if (!s->default_db && s->db.kind == DBSPEC_HASH_FILE &&
        _check_parent_dir(s->db.path, err, errlen) != 0) {
        return -1;
    }
    if (s->db.dfunit > 0 && s->ulog_path[0] != '\0') {
        /* Defragmentation moves records without logging the move, so a
         * power cut in the middle of one could lose a record the log
         * cannot restore (store.h, D1). */
        snprintf(err, errlen, "#dfunit cannot be used with an update log: "
                 "Tokyo Cabinet's defragmentation moves records the log "
                 "does not know about; defragment offline with kura "
                 "optimize instead");
        return -1;
    }
    /* The log first: its checkpoint says how much of the database file
     * a rebuild must read (store.h, store_redo_bound). */
    struct ulog_recovery found;
    struct store_redo_bound bound = {0, 0};
    clock_init(&srv->clock, 0);
    if (s->ulog_path[0] != '\0') {
        if (_open_ulog(srv, &found, err, errlen) != 0) {
            return -1;
        }
        bound.size = found.checkpoint_db_size;
        bound.salt = found.checkpoint_db_salt;
    }
    struct store_open_report rep;
    struct dbspec db = s->db;
    if (db.xmsiz < 0) {
        db.xmsiz = srv->plan.xmsiz; /* memlimit.h */
    }
    srv->store = store_open(&db, &bound, &rep, err, errlen);
    if (srv->store == NULL) {
        return -1;
    }
    _log_open_report(srv, &rep);
    _fit_memory(srv, &db);
    store_set_logger(srv->store, &srv->log);
    if (s->db.kind == DBSPEC_HASH_FILE) {
        snprintf(flush_path, sizeof(flush_path), "%s.flush", s->db.path);
    }
    if (txn_engine_init(&srv->eng, srv->store, &srv->clock, srv->ulog, s->sid,
                        SERVER_STRIPES, flush_path, err, errlen) != 0) {
        return -1;
    }
    srv->eng.uas = s->uas;
    /* stats "bytes" and "curr_items" start from what the opening check
     * counted. */
    atomic_store(&srv->eng.bytes, (int64_t)rep.check.item_bytes);
    atomic_store(&srv->eng.items, (int64_t)rep.check.values);
    /* store.h D1: under "always" the database holds only what the log
     * holds durably; under "peer" what the peer reported or, in the
     * fallback, what is synced here (txn.h T10). */
    srv->eng.apply_after_sync = srv->ulog != NULL && !s->uas &&
                                (s->fsync == ULOG_FSYNC_ALWAYS ||
                                 s->fsync == ULOG_FSYNC_PEER);
    srv->eng_ready = true;
    if (srv->ulog == NULL) {
        return 0;
    }
    struct ulog_stats us;
    struct recovery_result res;
    ulog_stats(srv->ulog, &us);
    if (recovery_redo(&srv->eng, srv->ulog, us.checkpoint_lsn, scratch, &res,
                      &srv->log, err, errlen) != 0) {
        return -1;
    }
    /* After a crash, a checkpoint of the recovered state at once: the
     * redo is not repeated, and a rebuilt file (new salt) gets the
     * checkpoint size that bounds its next rebuild. */
    if (rep.unclean && ulog_checkpoint(srv->ulog) != ULOG_OK) {
        snprintf(err, errlen, "cannot checkpoint the recovered database");
        return -1;
    }
    if (repl_auth_load(&srv->auth, s->rkey_path, err, errlen) != 0) {
        return -1;
    }
    srv->sender = repl_sender_create(srv->ulog, srv->store, s->ulog_path,
                                     s->sid, s->fsync == ULOG_FSYNC_ALWAYS,
                                     &srv->auth, &srv->log, err, errlen);
    if (srv->sender == NULL) {
        return -1;
    }
    repl_sender_set_engine(srv->sender, &srv->eng);
    if (ulog_start(srv->ulog) != 0) {
        snprintf(err, errlen, "cannot start the update log threads");
        return -1;
    }
    if (s->mhost[0] != '\0') {
        struct repl_receiver_options ro;
        memset(&ro, 0, sizeof(ro));
        util_strlcpy(ro.host, s->mhost, sizeof(ro.host));
        ro.port = s->mport;
        ro.sid = s->sid;
        util_strlcpy(ro.rts_path, s->rts_path, sizeof(ro.rts_path));
        ro.scratch_cap = scratch;
        ro.auth = &srv->auth;
        ro.tls = srv->tls.client;
        /* R6: a crash may have cut writes the peer holds from our log. */
        ro.own_back = rep.unclean && !s->uas &&
                      s->fsync != ULOG_FSYNC_ALWAYS;
        srv->receiver = repl_receiver_create(&ro, &srv->eng, &srv->log, err,
                                             errlen);
        if (srv->receiver == NULL) {
            return -1;
        }
        repl_sender_on_follower(srv->sender, _peer_is_back, srv->receiver);
    }
    return 0;
}
