/*
 * server: wiring and life cycle (see server.h).
 */
#include "server.h"

#include <errno.h>
#include <event2/event.h>
#include <event2/thread.h>
#include <libgen.h>
#include <inttypes.h>
#include <pthread.h>
#include <signal.h>
#include <sys/socket.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "atomicfile.h"
#include "clock.h"
#include "config.h"
#include "daemon.h"
#include "listener.h"
#include "log.h"
#include "memlimit.h"
#include "process.h"
#include "record.h"
#include "stats_snapshot.h"
#include "recovery.h"
#include "repl_sender.h"
#include "repl_receiver.h"
#include "stats.h"
#include "store.h"
#include "sweeper.h"
#include "tlsconf.h"
#include "txn.h"
#include "ulog.h"
#include "util.h"
#include "worker.h"

/* Output bytes queued for one client before it stops being served. */
#define SERVER_WATERMARK ((size_t)256 << 10)
/* Lock stripes for the write path; collisions force early commits. */
#define SERVER_STRIPES 65536
/* Recent-access slots for meta h and l: 2^20 x 8 bytes = 8 MiB. */
#define SERVER_ACCESS_BITS 20
/* Keys a worker reads ahead at once (prefetch.h). */
#define SERVER_PREFETCH_DEPTH 256
#define SWEEPER_SLICE_KEYS 500
#define SWEEPER_PAUSE_MS 100
/*
 * Checkpoints. Each one writes back every database page dirtied since the
 * last, and every page it cleans costs a write fault (and a journal
 * handle, on ext4) when it is next updated. Random updates to 13.31M
 * records dirty almost every page within seconds, so the less often, the
 * less writing: 25 s (the -ckpt default, under the kernel's own 30 s
 * writeback age) instead of 10 s halved the faults (11k/s vs 20-21k/s) and took p99 from 2.0-2.3
 * to 1.3-1.5 ms (tools/bench-dataset's database, 64 connections). The log
 * bound keeps the redo after a crash near 5 s (1M records/s). Appends
 * (new records) are different: nothing absorbs them, and left for 25 s
 * they pile up into writeback that stalls the log (1 KiB inserts, ext4:
 * worst 129 ms vs 28 ms), so a grown database checkpoints at 64 MiB.
 */
#define CHECKPOINT_BYTES ((uint64_t)256 << 20)
#define CHECKPOINT_GROWTH ((uint64_t)64 << 20)

struct server {
    const struct settings *settings;
    struct logger log;
    struct pidfile pid;
    int notify_fd;
    struct daemon_sd sd;         /* systemd's notification socket */
    struct store *store;
    struct memlimit mem;         /* the memory kurad may use */
    struct memplan plan;         /* ... and what follows from it */
    bool buckets_locked;         /* store_pin_buckets() succeeded */
    struct clock clock;
    struct ulog *ulog;
    struct repl_auth auth;       /* -rkey */
    struct auth clients;         /* -auth */
    struct access_table access;  /* meta h and l */
    struct detail detail;        /* stats detail */
    struct conntab conntab;      /* stats conns */
    bool conntab_ready;
    bool access_ready;
    struct repl_sender *sender;  /* serves peers; with an update log */
    struct repl_receiver *receiver; /* follows -mhost */
    struct txn_engine eng;
    bool eng_ready;
    struct process_env penv;
    struct worker_shared shared;
    struct worker *workers;
    int nworkers;
    struct event_base *base;
    struct listener listener;
    bool bound;                  /* the listener holds the port */
    struct tlsconf tls;          /* -tlsport and -mtls contexts */
    struct listener tls_listener; /* -tlsport */
    bool tls_bound;
    struct sweeper sweeper;
    bool sweeping;
    struct event *sig_term;
    struct event *sig_int;
    struct event *sig_hup;
    struct event *catchup;       /* polls the receiver while clients wait */
    uint64_t catchup_since_ms;
    int exit_status;             /* set when serving failed after start */
    int64_t started_s;
    uint32_t maxconn; /* -maxconn, lowered to fit the descriptor limit */
    _Atomic uint32_t verbosity; /* the last "verbosity" level */
    pthread_mutex_t baseline_lock;
    uint64_t baseline[STATS_COUNT]; /* counters at the last stats reset */
    uint64_t total_conns_baseline;
};

static void
_sum_counters(struct server *srv, uint64_t out[STATS_COUNT])
{
    memset(out, 0, sizeof(uint64_t) * STATS_COUNT);
    for (int i = 0; i < srv->nworkers; i++) {
        stats_sum(out, &srv->workers[i].stats);
    }
}

/* Connections accepted on both ports. */
static uint64_t
_total_conns(struct server *srv)
{
    return atomic_load(&srv->listener.total_conns) +
           atomic_load(&srv->tls_listener.total_conns);
}

static void
_snapshot(void *arg, struct stats_snapshot *snap)
{
    struct server *srv = arg;
    uint64_t sums[STATS_COUNT];

    _sum_counters(srv, sums);
    pthread_mutex_lock(&srv->baseline_lock);
    for (int i = 0; i < STATS_COUNT; i++) {
        snap->counters[i] = sums[i] - srv->baseline[i];
    }
    snap->total_connections = _total_conns(srv) - srv->total_conns_baseline;
    pthread_mutex_unlock(&srv->baseline_lock);
    snap->counters[STATS_RECLAIMED] += atomic_load(&srv->sweeper.reclaimed);
    snap->started_s = srv->started_s;
    snap->curr_connections = atomic_load(&srv->shared.curr_conns);
    snap->rejected_connections = atomic_load(&srv->listener.rejected_conns) +
                                 atomic_load(&srv->tls_listener.rejected_conns);
    snap->listen_disabled_num = atomic_load(&srv->listener.disabled_count) +
                                atomic_load(&srv->tls_listener.disabled_count);
    snap->listen_disabled_us = atomic_load(&srv->listener.disabled_us) +
                               atomic_load(&srv->tls_listener.disabled_us);
    snap->accepting_conns = atomic_load(&srv->listener.accepting);
    snap->threads = srv->nworkers;
    snap->verbosity = atomic_load(&srv->verbosity);
    snap->max_connections = srv->maxconn;
    for (int i = 0; i < srv->nworkers; i++) {
        snap->commits += atomic_load(&srv->workers[i].batch.commits);
        snap->early_commits +=
            atomic_load(&srv->workers[i].batch.early_commits);
    }
    snap->tombstones_dropped = atomic_load(&srv->sweeper.tombstones_dropped);
    snap->memory_limit = memlimit_limited(&srv->mem) ? srv->mem.limit : 0;
    snap->buckets_locked = srv->buckets_locked;
    for (int i = 0; i < srv->nworkers; i++) {
        if (srv->workers[i].prefetch != NULL) {
            struct prefetch_stats ps;
            prefetch_stats(srv->workers[i].prefetch, &ps);
            snap->prefetch_waits += ps.waits;
            snap->prefetch_reads += ps.reads;
        }
    }
    if (srv->ulog != NULL) {
        snap->has_ulog = true;
        ulog_stats(srv->ulog, &snap->ulog);
    }
    if (srv->receiver != NULL) {
        snap->has_master = true;
        repl_receiver_stats(srv->receiver, &snap->master);
    }
    if (srv->sender != NULL) {
        snap->npeers = repl_sender_stats(srv->sender, snap->peers,
                                         REPL_MAX_PEERS);
    }
    if (srv->tls.server != NULL) {
        tls_ctx_stats(srv->tls.server, &snap->tls);
    }
    if (srv->tls.client != NULL) {
        struct tls_stats link;
        tls_ctx_stats(srv->tls.client, &link);
        snap->tls_link_not_after = link.not_after;
    }
}

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

static uint64_t
_peers_acked(void *arg)
{
    struct server *srv = arg;
    return srv->sender != NULL ? repl_sender_acked(srv->sender) : UINT64_MAX;
}

/* Sweeper callback: what still needs tombstones (T6). */
static void
_tombstone_limits(void *arg, uint64_t *acked, uint64_t *source)
{
    struct server *srv = arg;
    *acked = _peers_acked(srv);
    *source = srv->receiver != NULL ? repl_receiver_applied(srv->receiver)
                                    : UINT64_MAX;
}

/*
 * A client sent REPL: hand its socket, and its TLS session if any, to the
 * replication sender. A server that checks certificates (-tlsca) or
 * replicates over TLS (-mtls) serves replication to other hosts only over
 * TLS: the plaintext port would skip the check and carry the stream in
 * the clear.
 */
static int
_handoff(void *arg, int fd, struct tls_session *tls,
         const struct proto_request *req)
{
    struct server *srv = arg;
    const struct settings *s = srv->settings;
    const char *refusal = NULL;
    if (srv->sender == NULL) {
        refusal = "REPL ERROR this server has no update log\r\n";
    } else if (tls == NULL && (s->mtls || s->tls_ca[0] != '\0') &&
               !repl_auth_peer_is_local(fd)) {
        refusal = "REPL ERROR this server replicates to other hosts only "
                  "over TLS: connect to its -tlsport\r\n";
        log_limited(&srv->log, LOG_WARN, "repl: refused replication over "
                    "the plaintext port from another host (this server has "
                    "%s)", s->mtls ? "-mtls" : "-tlsca");
    }
    if (refusal != NULL) {
        ssize_t w = send(fd, refusal, strlen(refusal),
                         MSG_NOSIGNAL | MSG_DONTWAIT);
        (void)w;
        tls_session_free(tls);
        return -1;
    }
    return repl_sender_accept(srv->sender, fd, tls, req->args,
                              req->args_len);
}

static void
_reset(void *arg)
{
    struct server *srv = arg;
    uint64_t sums[STATS_COUNT];

    _sum_counters(srv, sums);
    pthread_mutex_lock(&srv->baseline_lock);
    memcpy(srv->baseline, sums, sizeof(sums));
    srv->total_conns_baseline = _total_conns(srv);
    pthread_mutex_unlock(&srv->baseline_lock);
}

static void
_set_verbosity(void *arg, uint32_t level)
{
    struct server *srv = arg;
    enum log_level configured =
        srv->settings->log_level == SETTINGS_LOG_DEBUG   ? LOG_DEBUG
        : srv->settings->log_level == SETTINGS_LOG_ERROR ? LOG_ERROR
                                                         : LOG_INFO;
    log_set_level(&srv->log, level == 0 ? configured : LOG_DEBUG);
    atomic_store(&srv->verbosity, level);
}

/* Tells systemd `state` (daemon.h); a failure is logged, never fatal. */
static void
_notify_systemd(struct server *srv, const char *state)
{
    if (daemon_sd_notify(&srv->sd, state) != 0) {
        log_warn(&srv->log, "cannot notify systemd (%.*s): %s",
                 (int)strcspn(state, "\n"), state, strerror(errno));
    }
}

static void
_on_signal(evutil_socket_t sig, short what, void *arg)
{
    struct server *srv = arg;
    char state[64];

    (void)what;
    if (sig == SIGHUP) {
        snprintf(state, sizeof(state), "RELOADING=1\nMONOTONIC_USEC=%" PRIu64,
                 util_mono_us());
        _notify_systemd(srv, state);
        if (log_reopen(&srv->log) != 0) {
            log_error(&srv->log, "cannot reopen log %s: %s", srv->log.path,
                      strerror(errno));
        } else {
            log_info(&srv->log, "log reopened on SIGHUP");
        }
        tlsconf_reload(&srv->tls, &srv->log);
        _notify_systemd(srv, "READY=1");
        return;
    }
    _notify_systemd(srv, "STOPPING=1");
    log_info(&srv->log, "%s received; shutting down",
             sig == SIGTERM ? "SIGTERM" : "SIGINT");
    event_base_loopbreak(srv->base);
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
    o.peers_acked = _peers_acked;
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
                 "in full in %" PRIu64 " ms: %" PRIu64 " records, sound",
                 path, rep->check_ms, rep->check.records);
        return;
    }
    const struct salvage_report *sr = &rep->salvage;
    log_warn(&srv->log, "database %s was not closed cleanly and is damaged "
             "at offset %" PRIu64 " (%s); rebuilt from its intact records in "
             "%" PRIu64 " ms: %" PRIu64 " records kept, %" PRIu64 " older "
             "copies dropped, %" PRIu64 " torn records and %" PRIu64
             " unreadable bytes skipped (first at offset %" PRIu64 "); the "
             "update log restores what changed since the last checkpoint",
             path, rep->check.damage_offset, rep->check.damage,
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

static int
_open_storage(struct server *srv, char *err, size_t errlen)
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

static int
_start_workers(struct server *srv, char *err, size_t errlen)
{
    const struct settings *s = srv->settings;

    srv->penv.eng = &srv->eng;
    srv->penv.settings = s;
    srv->penv.snapshot = _snapshot;
    srv->penv.reset = _reset;
    srv->penv.set_verbosity = _set_verbosity;
    srv->penv.arg = srv;
    srv->penv.auth = &srv->clients;
    if (access_init(&srv->access, SERVER_ACCESS_BITS) != 0) {
        snprintf(err, errlen, "out of memory");
        return -1;
    }
    srv->access_ready = true;
    srv->penv.access = &srv->access;
    detail_init(&srv->detail);
    srv->penv.detail = &srv->detail;
    srv->shared.penv = &srv->penv;
    srv->shared.eng = &srv->eng;
    srv->shared.ulog = srv->ulog;
    srv->shared.handoff = _handoff;
    srv->shared.handoff_arg = srv;
    srv->shared.log = &srv->log;
    srv->shared.limits.max_line = PROTO_MAX_LINE_DEFAULT;
    srv->shared.limits.max_get_line = (size_t)1 << 20;
    srv->shared.limits.item_max = s->item_max;
    srv->shared.limits.http = !s->nohttp;
    srv->shared.idle_timeout_s = s->tout;
    srv->shared.tls = srv->tls.server;
    srv->shared.tls_timeout_ms = (int)s->tls_tout_s * 1000;
    srv->shared.watermark = SERVER_WATERMARK;
    srv->shared.prefetch_depth = SERVER_PREFETCH_DEPTH;
    atomic_init(&srv->shared.curr_conns, 0);
    srv->workers = calloc((size_t)s->thnum, sizeof(*srv->workers));
    if (srv->workers == NULL) {
        snprintf(err, errlen, "out of memory");
        return -1;
    }
    for (int i = 0; i < s->thnum; i++) {
        if (worker_init(&srv->workers[i], i, &srv->shared) != 0) {
            snprintf(err, errlen, "cannot set up worker %d", i);
            srv->nworkers = i + 1;
            return -1;
        }
        srv->nworkers = i + 1;
    }
    for (int i = 0; i < srv->nworkers; i++) {
        if (worker_start(&srv->workers[i]) != 0) {
            snprintf(err, errlen, "cannot start worker thread %d", i);
            return -1;
        }
    }
    return 0;
}

/* Reports a start that failed, to the log, -dmn's parent and systemd. */
static void
_start_failed(struct server *srv, const char *err)
{
    log_error(&srv->log, "%s", err);
    daemon_notify(srv->notify_fd, err);
    srv->notify_fd = -1;
    char state[1024 + 32];
    snprintf(state, sizeof(state), "STATUS=cannot start: %s", err);
    _notify_systemd(srv, state);
}

/* Starts accepting clients and says kurad is ready. Returns 0 or -1. */
static int
_serve(struct server *srv, char *err, size_t errlen)
{
    const struct settings *s = srv->settings;

    (void)conntab_add(&srv->conntab, srv->listener.fd, true, conntab_now());
    if (srv->tls_bound) {
        (void)conntab_add(&srv->conntab, srv->tls_listener.fd, true,
                          conntab_now());
    }
    struct listener_env env = {
        .base = srv->base,
        .workers = srv->workers,
        .nworkers = srv->nworkers,
        .maxconn = srv->maxconn,
        .curr_conns = &srv->shared.curr_conns,
        .log = &srv->log,
    };
    if (listener_start(&srv->listener, &env, err, errlen) != 0 ||
        (srv->tls_bound &&
         listener_start(&srv->tls_listener, &env, err, errlen) != 0)) {
        return -1;
    }
    char db[DBSPEC_PATH_MAX + 128];
    dbspec_format(&s->db, db, sizeof(db));
    log_info(&srv->log,
             "kurad %s started: pid %ld, listening on %s%s%s, %d threads, "
             "database %s",
             PACKAGE_VERSION, (long)getpid(), srv->listener.name,
             srv->tls_bound ? " and, over TLS, " : "",
             srv->tls_bound ? srv->tls_listener.name : "", srv->nworkers, db);
    daemon_notify(srv->notify_fd, NULL);
    srv->notify_fd = -1;
    /* The same moment for systemd (Type=notify). Under -dmn the process
     * it started has gone: MAINPID names the daemon. */
    char state[sizeof(srv->listener.name) + 96];
    int n = snprintf(state, sizeof(state), "READY=1\nSTATUS=serving on %s",
                     srv->listener.name);
    if (s->dmn) {
        snprintf(state + n, sizeof(state) - (size_t)n, "\nMAINPID=%ld",
                 (long)getpid());
    }
    _notify_systemd(srv, state);
    return 0;
}

/*
 * Until the receiver has caught up with a reachable master (or failed to
 * reach it, or -catchup passed), the port stays shut: a restarted server
 * beside a live peer must not answer a read with a value older than one
 * the peer acknowledged while it was down, nor miss its own writes that
 * only the peer kept (R6). A shut port is what memcached clients fail
 * over on; a busy one they would wait on.
 */
static void
_on_catchup_tick(evutil_socket_t fd, short what, void *arg)
{
    struct server *srv = arg;
    const struct settings *s = srv->settings;
    (void)fd;
    (void)what;

    enum repl_receiver_first first = repl_receiver_first(srv->receiver);
    uint64_t waited = util_mono_ms() - srv->catchup_since_ms;
    if (first == REPL_RECEIVER_FIRST_PENDING &&
        waited < (uint64_t)s->catchup_s * 1000) {
        return;
    }
    event_free(srv->catchup);
    srv->catchup = NULL;
    if (first == REPL_RECEIVER_FIRST_CAUGHT_UP) {
        log_info(&srv->log, "repl: caught up with master %s:%d in %" PRIu64
                 " ms; serving clients", s->mhost, s->mport, waited);
    } else if (first == REPL_RECEIVER_FIRST_FAILED) {
        log_warn(&srv->log, "repl: master %s:%d not followed; serving what "
                 "this server holds", s->mhost, s->mport);
    } else {
        struct repl_receiver_stats st;
        repl_receiver_stats(srv->receiver, &st);
        log_warn(&srv->log, "repl: still catching up with master %s:%d after "
                 "%u s (%" PRIu64 " records behind); serving meanwhile",
                 s->mhost, s->mport, s->catchup_s, st.lag_records);
    }
    char err[1024];
    if (_serve(srv, err, sizeof(err)) != 0) {
        _start_failed(srv, err);
        srv->exit_status = 1;
        event_base_loopbreak(srv->base);
    }
}

static int
_hold_for_catchup(struct server *srv, char *err, size_t errlen)
{
    const struct settings *s = srv->settings;
    const struct timeval tick = {0, 5000};

    srv->catchup = event_new(srv->base, -1, EV_PERSIST, _on_catchup_tick,
                             srv);
    if (srv->catchup == NULL || event_add(srv->catchup, &tick) != 0) {
        snprintf(err, errlen, "cannot wait for replication");
        return -1;
    }
    srv->catchup_since_ms = util_mono_ms();
    log_info(&srv->log, "repl: catching up with master %s:%d before serving "
             "clients (at most %u s, -catchup)", s->mhost, s->mport,
             s->catchup_s);
    return 0;
}

static int
_start(struct server *srv, char *err, size_t errlen)
{
    const struct settings *s = srv->settings;

    if (s->pid_path[0] != '\0' && pidfile_write(&srv->pid) != 0) {
        snprintf(err, errlen, "cannot write pid file %s: %s", s->pid_path,
                 strerror(errno));
        return -1;
    }
    /* Descriptors beyond the clients: listeners, eventfds, db, logs. */
    uint64_t reserve = (uint64_t)s->thnum * 4 + 64;
    uint64_t want = (uint64_t)s->maxconn + reserve;
    uint64_t got = daemon_raise_nofile(want);
    srv->maxconn = s->maxconn;
    memlimit_read(&srv->mem, "");
    memlimit_plan(&srv->mem, &srv->plan);
    if (srv->plan.maxconn > 0 && srv->maxconn > srv->plan.maxconn) {
        log_warn(&srv->log, "a memory limit of %" PRIu64 " MiB: connection "
                 "limit lowered from %u to %u (at about %u KiB each, half "
                 "of the memory; see etc/tuning.md, \"Data larger than "
                 "memory\")", srv->mem.limit >> 20, srv->maxconn,
                 srv->plan.maxconn, MEMLIMIT_CONN_BYTES >> 10);
        srv->maxconn = srv->plan.maxconn;
    }
    if (got < want && (got <= reserve || got - reserve < srv->maxconn)) {
        srv->maxconn = got > reserve ? (uint32_t)(got - reserve) : 1;
        log_warn(&srv->log,
                 "file descriptor limit is %llu: connection limit lowered "
                 "from %u to %u (raise the hard limit, ulimit -Hn, to allow "
                 "more)",
                 (unsigned long long)got, s->maxconn, srv->maxconn);
    }
    if (conntab_init(&srv->conntab, got) != 0) {
        snprintf(err, errlen, "out of memory");
        return -1;
    }
    srv->conntab_ready = true;
    srv->penv.conntab = &srv->conntab;
    srv->shared.conntab = &srv->conntab;
    /* Before the database: a bad password file changes nothing. */
    if (auth_load(&srv->clients, s->auth_path, err, errlen) != 0) {
        return -1;
    }
    /* So is a bad certificate or key. */
    if (tlsconf_open(&srv->tls, s, &srv->log, err, errlen) != 0) {
        return -1;
    }
    /* The port is taken first, so a port in use fails the start before
     * the log or the database is created; clients are refused until
     * _serve() listens. */
    srv->bound = true;
    if (listener_bind(&srv->listener, s->host, s->port, false, err,
                      errlen) != 0) {
        return -1;
    }
    if (s->tls_port != 0) {
        srv->tls_bound = true;
        const char *host = s->tls_host[0] != '\0' ? s->tls_host : s->host;
        if (listener_bind(&srv->tls_listener, host, s->tls_port, true, err,
                          errlen) != 0) {
            return -1;
        }
    }
    if (_open_storage(srv, err, errlen) != 0) {
        return -1;
    }
    srv->base = event_base_new();
    if (srv->base == NULL) {
        snprintf(err, errlen, "cannot create the main event loop");
        return -1;
    }
    if (_start_workers(srv, err, errlen) != 0) {
        return -1;
    }
    if (sweeper_init(&srv->sweeper, &srv->eng, &srv->log, SWEEPER_SLICE_KEYS,
                     SWEEPER_PAUSE_MS, s->item_max + RECORD_HEADER_MAX + 1,
                     _tombstone_limits, srv) != 0 ||
        sweeper_start(&srv->sweeper) != 0) {
        snprintf(err, errlen, "cannot start the expiry sweeper");
        return -1;
    }
    srv->sweeping = true;
    if (srv->receiver != NULL && repl_receiver_start(srv->receiver) != 0) {
        snprintf(err, errlen, "cannot start replication from %s:%d", s->mhost,
                 s->mport);
        return -1;
    }
    srv->sig_term = evsignal_new(srv->base, SIGTERM, _on_signal, srv);
    srv->sig_int = evsignal_new(srv->base, SIGINT, _on_signal, srv);
    srv->sig_hup = evsignal_new(srv->base, SIGHUP, _on_signal, srv);
    if (srv->sig_term == NULL || srv->sig_int == NULL ||
        srv->sig_hup == NULL || evsignal_add(srv->sig_term, NULL) != 0 ||
        evsignal_add(srv->sig_int, NULL) != 0 ||
        evsignal_add(srv->sig_hup, NULL) != 0) {
        snprintf(err, errlen, "cannot install signal handlers");
        return -1;
    }
    if (srv->receiver != NULL && s->catchup_s > 0) {
        return _hold_for_catchup(srv, err, errlen);
    }
    return _serve(srv, err, errlen);
}

static int
_stop(struct server *srv)
{
    int status = 0;

    if (srv->bound) {
        listener_close(&srv->listener);
    }
    if (srv->tls_bound) {
        listener_close(&srv->tls_listener);
    }
    if (srv->catchup != NULL) {
        event_free(srv->catchup);
        srv->catchup = NULL;
    }
    for (int i = 0; i < srv->nworkers; i++) {
        worker_stop(&srv->workers[i]);
    }
    for (int i = 0; i < srv->nworkers; i++) {
        worker_join(&srv->workers[i]);
    }
    repl_receiver_destroy(srv->receiver);
    srv->receiver = NULL;
    repl_sender_destroy(srv->sender);
    srv->sender = NULL;
    if (srv->sweeping) {
        sweeper_stop(&srv->sweeper);
    }
    for (int i = 0; i < srv->nworkers; i++) {
        worker_deinit(&srv->workers[i]);
    }
    free(srv->workers);
    /* The final checkpoint: a clean start redoes nothing. The signal
     * events stay until the database is closed: freeing them restores
     * the default action, and a second SIGTERM (an impatient operator, a
     * supervisor) would then kill kurad half-way through its close. */
    ulog_close(srv->ulog);
    srv->ulog = NULL;
    if (srv->eng_ready) {
        txn_engine_deinit(&srv->eng);
    }
    if (srv->store != NULL && store_close(srv->store) != STORE_OK) {
        log_error(&srv->log, "database did not close cleanly");
        status = 1;
    }
    /* Every other thread has been joined by now, so blocking these here
     * holds any late one pending while freeing the events restores the
     * default action; ignoring them then discards it. A late signal must
     * not turn this clean stop into a kill at its last step. */
    sigset_t late;
    sigemptyset(&late);
    sigaddset(&late, SIGTERM);
    sigaddset(&late, SIGINT);
    sigaddset(&late, SIGHUP);
    pthread_sigmask(SIG_BLOCK, &late, NULL);
    if (srv->sig_term != NULL) {
        event_free(srv->sig_term);
    }
    if (srv->sig_int != NULL) {
        event_free(srv->sig_int);
    }
    if (srv->sig_hup != NULL) {
        event_free(srv->sig_hup);
    }
    if (srv->base != NULL) {
        event_base_free(srv->base);
    }
    signal(SIGTERM, SIG_IGN);
    signal(SIGINT, SIG_IGN);
    signal(SIGHUP, SIG_IGN);
    if (srv->access_ready) {
        access_deinit(&srv->access);
        detail_deinit(&srv->detail);
    }
    if (srv->conntab_ready) {
        conntab_deinit(&srv->conntab);
    }
    auth_free(&srv->clients);
    tlsconf_close(&srv->tls);
    pidfile_release(&srv->pid);
    return status;
}

static enum log_level
_log_level(const struct settings *s)
{
    switch (s->log_level) {
    case SETTINGS_LOG_DEBUG:
        return LOG_DEBUG;
    case SETTINGS_LOG_ERROR:
        return LOG_ERROR;
    default:
        return LOG_INFO;
    }
}

/* Steps that must happen before daemonising, so errors reach the user. */
static int
_prepare(struct server *srv, char *err, size_t errlen)
{
    const struct settings *s = srv->settings;

    if (s->kl && daemon_kill_existing(s->pid_path, 30000, err, errlen) !=
                     DAEMON_OK) {
        return -1;
    }
    if (s->pid_path[0] != '\0') {
        pid_t holder = 0;
        if (pidfile_acquire(&srv->pid, s->pid_path, &holder, err, errlen) !=
            DAEMON_OK) {
            return -1;
        }
    }
    /* Keep standard error only if the log goes there. */
    if (s->dmn && daemon_detach(s->log_path[0] == '\0', &srv->notify_fd) !=
                      0) {
        snprintf(err, errlen, "cannot daemonise: %s", strerror(errno));
        return -1;
    }
    return 0;
}

int
server_run(const struct settings *settings)
{
    struct server srv;
    char err[1024] = "";

    memset(&srv, 0, sizeof(srv));
    srv.settings = settings;
    srv.pid.fd = -1;
    srv.notify_fd = -1;
    srv.started_s = util_now_s();
    pthread_mutex_init(&srv.baseline_lock, NULL);
    if (log_open(&srv.log, settings->log_path, _log_level(settings)) != 0) {
        fprintf(stderr, "kurad: cannot open log %s: %s\n", settings->log_path,
                strerror(errno));
        return 1;
    }
    signal(SIGPIPE, SIG_IGN);
    if (daemon_sd_open(&srv.sd, err, sizeof(err)) != 0) {
        log_warn(&srv.log, "%s; systemd will not hear that kurad is ready",
                 err);
    }
    if (_prepare(&srv, err, sizeof(err)) != 0) {
        log_error(&srv.log, "%s", err);
        if (settings->log_path[0] != '\0') {
            fprintf(stderr, "kurad: %s\n", err);
        }
        daemon_sd_close(&srv.sd);
        log_close(&srv.log);
        return 1;
    }
    if (_start(&srv, err, sizeof(err)) != 0) {
        _start_failed(&srv, err);
        _stop(&srv);
        daemon_sd_close(&srv.sd);
        log_close(&srv.log);
        return 1;
    }
    event_base_dispatch(srv.base);
    /* Stopped while catching up: -dmn's parent still waits. */
    if (srv.notify_fd >= 0) {
        log_warn(&srv.log, "stopped before serving clients");
    }
    daemon_notify(srv.notify_fd, "stopped before serving clients");
    srv.notify_fd = -1;
    int status = _stop(&srv) != 0 ? 1 : srv.exit_status;
    daemon_sd_close(&srv.sd);
    log_info(&srv.log, "kurad stopped");
    log_close(&srv.log);
    pthread_mutex_destroy(&srv.baseline_lock);
    return status;
}
