/*
 * worker: per-thread event loops with group commit (see worker.h).
 */
#include "worker.h"

#include <errno.h>
#include <malloc.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <unistd.h>

#include "record.h"
#include "util.h"

/* The most writes a pass may have staged and still serve once more
 * before its worker leads an fdatasync (_main). A larger pass already
 * fills the sync: without the bound, 10,000 connections lost to the
 * delay (etc/tuning-experiments.md, "Serve once more before syncing"). */
#define WORKER_GATHER_MAX 32

static void
_on_abort(void *owner, void *arg)
{
    (void)arg;
    conn_abort(owner);
}

/* Sends the replies whose writes are applied; the caller applied first
 * (T8), so a read after the answer finds the change wherever it runs. */
static void
_release(struct worker *w)
{
    conn_host_durable(&w->host);
    w->released_lsn = txn_applied_lsn(&w->batch);
}

static void
_on_notify(evutil_socket_t fd, short what, void *arg)
{
    struct worker *w = arg;
    uint64_t count;

    (void)what;
    if (read(fd, &count, sizeof(count)) < 0 && errno != EAGAIN) {
        log_error(w->shared->log, "worker %d: eventfd read: %s", w->id,
                  strerror(errno));
    }
    pthread_mutex_lock(&w->lock);
    struct worker_item items[256];
    size_t n = 0;
    while (w->qlen > 0 && n < sizeof(items) / sizeof(items[0])) {
        items[n++] = w->queue[--w->qlen];
    }
    bool more = w->qlen > 0;
    bool stopping = w->stopping;
    pthread_mutex_unlock(&w->lock);
    if (atomic_exchange(&w->synced, false)) {
        txn_apply_durable(&w->batch);
        _release(w);
    }
    for (size_t i = 0; i < n; i++) {
        if (stopping) {
            close(items[i].fd);
            atomic_fetch_sub(&w->shared->curr_conns, 1);
        } else if (conn_create(&w->host, items[i].fd, items[i].tls) == NULL) {
            atomic_fetch_sub(&w->shared->curr_conns, 1);
        }
    }
    if (more || stopping) {
        event_active(w->notify_ev, EV_READ, 0);
    }
    if (stopping) {
        event_base_loopbreak(w->base);
    }
}

static void _wake(struct worker *w);

/* The update log's sync thread made what this worker asked for durable. */
static void
_on_synced(void *arg)
{
    struct worker *w = arg;
    atomic_store(&w->synced, true);
    _wake(w);
}

/* Replies may go once what they answer is durable and applied (T8). */
static uint64_t
_durable(void *arg)
{
    struct worker *w = arg;
    return txn_applied_lsn(&w->batch);
}

/* Reads ahead of a request's keys; returns how many keys wait. */
static unsigned
_io_start(void *arg, struct conn *c, const struct proto_request *req)
{
    struct worker *w = arg;
    unsigned waits = 0;
    if (req->nkeys > 1 && req->kind == PROTO_KIND_TEXT) {
        size_t pos = 0;
        const char *key;
        size_t nkey;
        while (proto_next_key(req, &pos, &key, &nkey)) {
            waits += prefetch_key(w->prefetch, key, nkey, c) ? 1 : 0;
        }
    } else if (req->key != NULL && req->nkey > 0) {
        waits = prefetch_key(w->prefetch, req->key, req->nkey, c) ? 1 : 0;
    }
    return waits;
}

static void
_io_forget(void *arg, struct conn *c)
{
    struct worker *w = arg;
    prefetch_forget(w->prefetch, c);
}

/* Reads ahead completed: their requests may run. */
static void
_on_prefetch(evutil_socket_t fd, short what, void *arg)
{
    struct worker *w = arg;
    void *ready[64];
    size_t n;

    (void)fd;
    (void)what;
    do {
        n = prefetch_reap(w->prefetch, ready, 64);
        for (size_t i = 0; i < n; i++) {
            conn_io_done(ready[i]);
        }
    } while (n == 64);
}

static bool
_log_failed(void *arg)
{
    struct worker *w = arg;
    return ulog_failed(w->shared->ulog);
}

/*
 * The memory of closed connections goes back to the system in batches:
 * glibc keeps freed buffers in its arenas, and after 9,000 connections
 * closed kurad still held the 89 MB they had used, which under a memory
 * limit is memory the page cache can no longer have.
 */
#define WORKER_TRIM_CONNS 256
#define WORKER_TRIM_MS 100

/* AddressSanitizer replaces malloc but not malloc_trim(), which then walks
 * glibc's arenas that ASan never set up and crashes. */
#if defined(__SANITIZE_ADDRESS__)
#define WORKER_CAN_TRIM 0
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define WORKER_CAN_TRIM 0
#endif
#endif
#ifndef WORKER_CAN_TRIM
#define WORKER_CAN_TRIM 1
#endif

static void
_trim(struct worker *w, uint64_t before, uint64_t at_least)
{
    if (w->host.nconns < before) {
        w->closed_since_trim += before - w->host.nconns;
    }
    if (w->closed_since_trim >= at_least && w->closed_since_trim > 0 &&
        util_mono_ms() - w->trimmed_ms >= WORKER_TRIM_MS) {
        if (WORKER_CAN_TRIM) {
            malloc_trim(0);
        }
        w->closed_since_trim = 0;
        w->trimmed_ms = util_mono_ms();
    }
}

/* Once a second: what the last closes left, once the clients are gone;
 * and reads ahead that a pass could not submit (the ring busy), which
 * no later pass might otherwise send while their requests wait. */
static void
_on_tick(evutil_socket_t fd, short what, void *arg)
{
    struct worker *w = arg;
    (void)fd;
    (void)what;
    _trim(w, w->host.nconns, 1);
    if (w->prefetch != NULL) {
        prefetch_submit(w->prefetch);
    }
}

int
worker_init(struct worker *w, int id, struct worker_shared *shared)
{
    const struct settings *s = shared->penv->settings;

    memset(w, 0, sizeof(*w));
    w->id = id;
    w->shared = shared;
    w->notify_fd = -1;
    w->watcher = -1;
    pthread_mutex_init(&w->lock, NULL);
    struct event_config *cfg = event_config_new();
    if (cfg == NULL) {
        return -1;
    }
    event_config_set_flag(cfg, EVENT_BASE_FLAG_NOLOCK);
    w->base = event_base_new_with_config(cfg);
    event_config_free(cfg);
    w->notify_fd = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
    if (w->base == NULL || w->notify_fd < 0) {
        log_error(shared->log, "worker %d: cannot create event loop: %s", id,
                  strerror(errno));
        return -1;
    }
    w->notify_ev = event_new(w->base, w->notify_fd, EV_READ | EV_PERSIST,
                             _on_notify, w);
    if (w->notify_ev == NULL || event_add(w->notify_ev, NULL) != 0) {
        return -1;
    }
    if (txn_batch_init(&w->batch, shared->eng,
                       s->item_max + RECORD_HEADER_MAX + 1) != 0) {
        log_error(shared->log, "worker %d: out of memory", id);
        return -1;
    }
    txn_batch_on_abort(&w->batch, _on_abort, w);
    w->pctx.env = shared->penv;
    w->pctx.batch = &w->batch;
    w->pctx.stats = &w->stats;
    conn_host_init(&w->host);
    w->host.base = w->base;
    w->host.pctx = &w->pctx;
    w->host.limits = shared->limits;
    w->host.watermark = shared->watermark;
    w->host.stats = &w->stats;
    w->host.curr_conns = &shared->curr_conns;
    w->host.handoff = shared->handoff;
    w->host.handoff_arg = shared->handoff_arg;
    w->host.send = shared->send;
    w->host.send_arg = shared->send_arg;
    w->host.conntab = shared->conntab;
    w->host.tls = shared->tls;
    w->host.tls_timeout_ms = shared->tls_timeout_ms;
    w->host.log = shared->log;
    /* Replies wait for the log under "always", and under "peer" for the
     * peer's report or the sync (ulog.h U10). */
    enum ulog_fsync policy = shared->penv->settings->fsync;
    if (shared->ulog != NULL && !shared->eng->uas &&
        (policy == ULOG_FSYNC_ALWAYS || policy == ULOG_FSYNC_PEER)) {
        w->watcher = ulog_watch(shared->ulog, _on_synced, w);
        if (w->watcher < 0) {
            return -1;
        }
        w->host.durable = _durable;
        w->host.log_failed = _log_failed;
        w->host.sync_arg = w;
    }
    if (shared->prefetch_depth > 0) {
        char why[160];
        w->prefetch = prefetch_create(shared->eng->store,
                                      shared->prefetch_depth, why,
                                      sizeof(why));
        if (w->prefetch == NULL && id == 0) {
            log_info(shared->log, "worker: reads of the database wait in "
                     "the worker (no read-ahead: %s)", why);
        }
    }
    if (w->prefetch != NULL) {
        w->prefetch_ev = event_new(w->base, prefetch_fd(w->prefetch),
                                   EV_READ | EV_PERSIST, _on_prefetch, w);
        if (w->prefetch_ev == NULL || event_add(w->prefetch_ev, NULL) != 0) {
            return -1;
        }
        w->host.io_start = _io_start;
        w->host.io_forget = _io_forget;
        w->host.io_arg = w;
    }
    w->tick_ev = event_new(w->base, -1, EV_PERSIST, _on_tick, w);
    struct timeval second = {1, 0};
    if (w->tick_ev == NULL || event_add(w->tick_ev, &second) != 0) {
        return -1;
    }
    if (shared->idle_timeout_s > 0) {
        struct timeval tv = {shared->idle_timeout_s, 0};
        const struct timeval *common =
            event_base_init_common_timeout(w->base, &tv);
        w->idle_tv = *common;
        w->host.idle_tv = &w->idle_tv;
    }
    return 0;
}

/*
 * End of pass: one commit for every write of the pass (T3); the replies
 * follow as soon as the writes they answer are durable (_on_synced).
 * Replies that need no sync (reads) have already gone out.
 */
static void
_end_pass(struct worker *w)
{
    if (w->prefetch != NULL) {
        prefetch_submit(w->prefetch); /* the pass's reads, together */
    }
    txn_commit(&w->batch);
    txn_apply_durable(&w->batch);
    if (w->host.durable != NULL &&
        txn_applied_lsn(&w->batch) > w->released_lsn) {
        /* Groups applied in this pass, on a sync no call back announced:
         * one that asked this worker to lead (ulog.h U14) may have been
         * taken before another thread's sync covered them, and nothing
         * else would release their replies. */
        _release(w);
    }
    uint64_t lsn = w->batch.last_lsn;
    uint64_t conns = w->host.nconns;
    bool marked = conn_host_end_pass(&w->host, lsn);
    _trim(w, conns, WORKER_TRIM_CONNS);
    /* One request per pass, however many connections wrote; also when
     * nobody waits to be answered (noreply), since the changes wait for
     * it to be applied (T8). */
    if ((marked || w->batch.waiting > 0) &&
        ulog_want_sync(w->shared->ulog, w->watcher, lsn)) {
        /* This thread synced it (ulog.h U14): the next pass applies and
         * answers at once, without the wake-up. */
        atomic_store(&w->synced, true);
        event_active(w->notify_ev, EV_READ, 0);
    }
}

static void *
_main(void *arg)
{
    struct worker *w = arg;
    char name[16];

    snprintf(name, sizeof(name), "kura-worker%d", w->id);
    util_thread_name(name);
    for (;;) {
        event_base_loop(w->base, EVLOOP_ONCE);
        if (w->batch.nchanges > 0 &&
            w->batch.nchanges <= WORKER_GATHER_MAX &&
            w->shared->ulog != NULL && ulog_would_lead(w->shared->ulog)) {
            /* This thread is about to block in an fdatasync (ulog.h
             * U14): first serve what arrived during a small pass, so its
             * reads are not held behind the sync and its writes share
             * it. A large pass already fills the sync, and one more would
             * only delay it. */
            event_base_loop(w->base, EVLOOP_NONBLOCK);
        }
        _end_pass(w);
        pthread_mutex_lock(&w->lock);
        bool stopping = w->stopping;
        pthread_mutex_unlock(&w->lock);
        if (stopping) {
            break;
        }
    }
    _end_pass(w);
    /* Shutdown: what was read is answered (README), once durable. */
    txn_wait_applied(&w->batch);
    conn_host_durable(&w->host);
    conn_host_close_all(&w->host);
    return NULL;
}

int
worker_start(struct worker *w)
{
    if (pthread_create(&w->thread, NULL, _main, w) != 0) {
        return -1;
    }
    w->started = true;
    return 0;
}

static void
_wake(struct worker *w)
{
    uint64_t one = 1;
    if (write(w->notify_fd, &one, sizeof(one)) < 0 && errno != EAGAIN) {
        log_error(w->shared->log, "worker %d: eventfd write: %s", w->id,
                  strerror(errno));
    }
}

int
worker_dispatch(struct worker *w, int fd, bool tls)
{
    pthread_mutex_lock(&w->lock);
    if (w->stopping) {
        pthread_mutex_unlock(&w->lock);
        return -1;
    }
    if (w->qlen == w->qcap) {
        size_t cap = w->qcap == 0 ? 64 : w->qcap * 2;
        struct worker_item *q = realloc(w->queue, cap * sizeof(*q));
        if (q == NULL) {
            pthread_mutex_unlock(&w->lock);
            return -1;
        }
        w->queue = q;
        w->qcap = cap;
    }
    w->queue[w->qlen++] = (struct worker_item){fd, tls};
    pthread_mutex_unlock(&w->lock);
    _wake(w);
    return 0;
}

void
worker_stop(struct worker *w)
{
    pthread_mutex_lock(&w->lock);
    w->stopping = true;
    pthread_mutex_unlock(&w->lock);
    _wake(w);
}

void
worker_join(struct worker *w)
{
    if (w->started) {
        pthread_join(w->thread, NULL);
        w->started = false;
    }
}

void
worker_deinit(struct worker *w)
{
    for (size_t i = 0; i < w->qlen; i++) {
        close(w->queue[i].fd);
    }
    free(w->queue);
    txn_batch_deinit(&w->batch);
    if (w->prefetch_ev != NULL) {
        event_free(w->prefetch_ev);
    }
    if (w->tick_ev != NULL) {
        event_free(w->tick_ev);
    }
    prefetch_destroy(w->prefetch);
    if (w->notify_ev != NULL) {
        event_free(w->notify_ev);
    }
    if (w->base != NULL) {
        event_base_free(w->base);
    }
    if (w->notify_fd >= 0) {
        close(w->notify_fd);
    }
    pthread_mutex_destroy(&w->lock);
}
