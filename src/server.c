/*
 * server: wiring and life cycle (see server.h): builds every object,
 * injects the callbacks, starts and stops the threads in order. Opening
 * the update log and the database is server_storage.c's; the state both
 * share is in server_internal.h.
 */
#include "server.h"
#include "server_internal.h"

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

/* Sweeper callback: what still needs tombstones (T6). */
static void
_tombstone_limits(void *arg, uint64_t *acked, uint64_t *source)
{
    struct server *srv = arg;
    *acked = server_peers_acked(srv);
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
    if (server_open_storage(srv, err, errlen) != 0) {
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
