/*
 * repl_receiver: the standby side of replication (see repl_receiver.h).
 */
#include "repl_receiver.h"

#include <assert.h>
#include <errno.h>
#include <inttypes.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include "atomicfile.h"
#include "buf.h"
#include "hist.h"
#include "netio.h"
#include "prefetch.h"
#include "repl_progress.h"
#include "repl_proto.h"
#include "util.h"

#define BACKOFF_MIN_MS REPL_RECEIVER_BACKOFF_MIN_MS
#define BACKOFF_MAX_MS REPL_RECEIVER_BACKOFF_MAX_MS
/* After the master came back: how often and how long to retry while it
 * catches up before listening (its -catchup, 30 s by default). */
#define PEER_BACK_RETRY_MS 20
#define PEER_BACK_WINDOW_MS 60000
#define ACK_MS 100      /* how often the durable position is acknowledged */
#define PERSIST_MS 1000 /* how often it is written to the -rts file */
#define HELLO_TIMEOUT_MS 5000
#define SILENCE_MS 5000 /* no frame for this long: the master is gone */
#define READ_MAX ((size_t)4 << 20) /* bytes taken from the socket per round */
#define RECEIVER_AHEAD 256         /* records whose pages are read ahead */

struct repl_receiver {
    struct repl_receiver_options o;
    struct txn_engine *eng;
    struct logger *log;
    pthread_t thread;
    pthread_t persister;
    bool started;
    pthread_mutex_t lock;
    pthread_cond_t cond;
    bool stopping;
    bool peer_back;     /* the master came back: end the retry pause */
    uint64_t peer_back_until; /* retry every PEER_BACK_RETRY_MS until then
                                 (monotonic ms; the thread's own) */
    enum repl_receiver_first first; /* guarded by lock */
    int fd;
    struct repl_receiver_stats st;
    struct hist delay;  /* guarded by lock */
    uint64_t rts;       /* durable master position (guarded by lock) */
    uint64_t rts_seq;
    uint64_t persisted; /* position last written to the -rts file */
    uint64_t master_seq;    /* master log end, from the last heartbeat */
    uint64_t master_now_us;
    struct txn_batch batch;
    struct repl_progress progress; /* what may be acknowledged (R8) */
    struct prefetch *prefetch;     /* NULL: records read as applied */
};

static int
_read_rts(struct repl_receiver *s, char *err, size_t errlen)
{
    char text[128];
    long n = atomicfile_read(s->o.rts_path, text, sizeof(text));
    if (n < 0) {
        if (errno == ENOENT) {
            return 0;
        }
        snprintf(err, errlen, "cannot read %s: %s", s->o.rts_path,
                 strerror(errno));
        return -1;
    }
    uint64_t lsn = 0;
    uint64_t seq = 0;
    /* "rts <lsn> <seq>", or ttserver's bare number. */
    if (sscanf(text, "rts %" SCNu64 " %" SCNu64, &lsn, &seq) < 1 &&
        sscanf(text, "%" SCNu64, &lsn) != 1) {
        snprintf(err, errlen, "%s is corrupt", s->o.rts_path);
        return -1;
    }
    s->rts = lsn;
    s->rts_seq = seq;
    s->persisted = lsn;
    return 0;
}

static void
_write_rts(struct repl_receiver *s, uint64_t lsn, uint64_t seq)
{
    char text[128];
    int n = snprintf(text, sizeof(text), "rts %" PRIu64 " %" PRIu64 "\n", lsn,
                     seq);
    if (atomicfile_write(s->o.rts_path, text, (size_t)n) != 0) {
        log_limited(s->log, LOG_ERROR, "repl: cannot write %s: %s",
                    s->o.rts_path, strerror(errno));
    }
}

static bool
_stopping(struct repl_receiver *s)
{
    pthread_mutex_lock(&s->lock);
    bool stop = s->stopping;
    pthread_mutex_unlock(&s->lock);
    return stop;
}

/* Waits `ms`, or until stopping; with `or_peer_back`, also until the
 * master is back, which it reports (and consumes) by returning true. */
static bool
_pause(struct repl_receiver *s, unsigned ms, bool or_peer_back)
{
    struct timespec until;
    util_deadline_ms(&until, ms);
    pthread_mutex_lock(&s->lock);
    while (!s->stopping && !(or_peer_back && s->peer_back) &&
           pthread_cond_timedwait(&s->cond, &s->lock, &until) != ETIMEDOUT) {
    }
    bool back = or_peer_back && s->peer_back;
    if (back) {
        s->peer_back = false;
    }
    pthread_mutex_unlock(&s->lock);
    return back;
}

/* The pause before reconnecting; returns the backoff for the next one:
 * doubled up to the cap, or back to the minimum when the master is back.
 * A master that is back may refuse us while it catches up itself: it is
 * retried often for a while, so its new writes reach us at once. */
static unsigned
_retry_pause(struct repl_receiver *s, unsigned backoff)
{
    bool soon = util_mono_ms() < s->peer_back_until;
    bool back = _pause(s, soon ? PEER_BACK_RETRY_MS : backoff, true);
    if (back) {
        s->peer_back_until = util_mono_ms() + PEER_BACK_WINDOW_MS;
    }
    return repl_receiver_next_backoff(backoff, soon, back);
}

unsigned
repl_receiver_next_backoff(unsigned backoff, bool soon, bool back)
{
    if (back) {
        return BACKOFF_MIN_MS;
    }
    if (soon) {
        return backoff;
    }
    return backoff * 2 > BACKOFF_MAX_MS ? BACKOFF_MAX_MS : backoff * 2;
}

/* Records the first attempt's outcome, if it is still open. */
static void
_first_outcome(struct repl_receiver *s, enum repl_receiver_first outcome)
{
    pthread_mutex_lock(&s->lock);
    if (s->first == REPL_RECEIVER_FIRST_PENDING) {
        s->first = outcome;
    }
    pthread_mutex_unlock(&s->lock);
}

enum repl_receiver_first
repl_receiver_first(struct repl_receiver *s)
{
    pthread_mutex_lock(&s->lock);
    enum repl_receiver_first first = s->first;
    pthread_mutex_unlock(&s->lock);
    return first;
}

void
repl_receiver_peer_back(struct repl_receiver *s)
{
    pthread_mutex_lock(&s->lock);
    if (s->fd < 0) {
        s->peer_back = true;
        pthread_cond_broadcast(&s->cond);
    }
    pthread_mutex_unlock(&s->lock);
}

struct session {
    struct buf in;
    uint64_t pos_lsn; /* master position received and staged */
    uint64_t pos_seq;
    bool in_snapshot;
    uint64_t snap_lsn;
    uint64_t next_ack;
    uint64_t last_frame_ms;
    bool wack;        /* the master asked for WACK frames (R5) */
    uint64_t wacked;  /* position last reported written */
    bool heard_end;   /* a heartbeat came: all sent before it is staged */
};

/* Applies one frame. Returns -1 to end the session. */
static int
_frame(struct repl_receiver *s, struct session *ss, const struct repl_frame *f)
{
    bool applied = false;
    enum txn_status st = TXN_OK;

    switch (f->type) {
    case REPL_FRAME_RECORD:
        st = txn_stage_replicated(&s->batch, &f->rec, &applied);
        if (!ss->in_snapshot) {
            ss->pos_lsn = f->rec.lsn;
            ss->pos_seq = f->rec.seq;
        }
        break;
    case REPL_FRAME_HEARTBEAT:
        /* R6: a heartbeat comes once the master has sent everything, our
         * own records asked back included. */
        s->o.own_back = false;
        if (!ss->in_snapshot) {
            ss->heard_end = true;
        }
        pthread_mutex_lock(&s->lock);
        s->st.master_lsn = f->lsn;
        s->master_seq = f->seq;
        s->master_now_us = f->now_us;
        pthread_mutex_unlock(&s->lock);
        if (!ss->in_snapshot) {
            if (f->pos_lsn > ss->pos_lsn) {
                ss->pos_lsn = f->pos_lsn;
            }
            if (f->pos_seq > ss->pos_seq) {
                ss->pos_seq = f->pos_seq;
            }
        }
        return 0;
    case REPL_FRAME_SNAP_BEGIN:
        ss->in_snapshot = true;
        ss->snap_lsn = f->lsn;
        log_info(s->log, "repl: receiving a full snapshot from %s:%d",
                 s->o.host, s->o.port);
        return 0;
    case REPL_FRAME_SNAP_ITEM: {
        struct record_meta m;
        const uint8_t *v;
        size_t vlen;
        if (record_decode(f->value, f->vlen, &m, &v, &vlen) != RECORD_OK) {
            return -1;
        }
        struct logrec rec;
        memset(&rec, 0, sizeof(rec));
        rec.op = LOGREC_PUT;
        rec.sid = m.sid;
        rec.key = f->key;
        rec.nkey = f->nkey;
        rec.payload = f->value;
        rec.plen = f->vlen;
        st = txn_stage_replicated(&s->batch, &rec, &applied);
        break;
    }
    case REPL_FRAME_SNAP_END:
        ss->in_snapshot = false;
        ss->pos_lsn = ss->snap_lsn;
        ss->pos_seq = 0;
        pthread_mutex_lock(&s->lock);
        s->st.resyncs++;
        pthread_mutex_unlock(&s->lock);
        log_info(s->log, "repl: snapshot of %" PRIu64 " records applied",
                 f->count);
        return 0;
    default:
        return -1;
    }
    if (st != TXN_OK) {
        log_limited(s->log, LOG_ERROR, "repl: cannot apply a change from "
                    "the master (%d); reconnecting", (int)st);
        return -1;
    }
    pthread_mutex_lock(&s->lock);
    s->st.received++;
    s->st.applied += applied ? 1 : 0;
    if (f->type == REPL_FRAME_RECORD && !ss->in_snapshot) {
        /* A snapshot's records (R7) are stamped with its lsn, not sent
         * as they were logged: no delay to measure. */
        uint64_t now = util_now_us();
        hist_add(&s->delay, now > f->rec.lsn ? now - f->rec.lsn : 0);
    }
    pthread_mutex_unlock(&s->lock);
    return 0;
}

/*
 * Advances the durable position and acknowledges it every ACK_MS. The
 * -rts file is written by its own thread (_persist_main), because its
 * fsync can take long and must not stall applying. Returns -1 on error.
 */
static int
_acknowledge(struct repl_receiver *s, struct session *ss,
             struct netio_stream *io, bool force)
{
    /* R8: durable here. Under -fsync peer a peer's copy of our log says
     * nothing of this disk, and the -rts position must survive a power
     * cut of this machine. */
    struct ulog *u = s->eng->ulog;
    uint64_t durable = u == NULL || s->eng->uas ? UINT64_MAX
                                                : ulog_local_durable_lsn(u);
    struct repl_position d = repl_progress_durable(&s->progress, durable);
    /* Published for the other threads; it never goes back (R8). */
    pthread_mutex_lock(&s->lock);
    assert(d.lsn >= s->rts && d.seq >= s->rts_seq); /* R8 */
    s->rts = d.lsn;
    s->rts_seq = d.seq;
    pthread_mutex_unlock(&s->lock);
    uint64_t now = util_mono_ms();
    if (!force && now < ss->next_ack) {
        return 0;
    }
    ss->next_ack = now + ACK_MS;
    uint8_t ack[REPL_ACK_LEN];
    repl_encode_ack(ack, s->rts, s->rts_seq);
    return netio_stream_send_all(io, ack, sizeof(ack), 2000);
}

/* Writes the durable position to the -rts file if it moved. */
static void
_persist(struct repl_receiver *s)
{
    pthread_mutex_lock(&s->lock);
    uint64_t lsn = s->rts;
    uint64_t seq = s->rts_seq;
    pthread_mutex_unlock(&s->lock);
    if (lsn > s->persisted) {
        assert(lsn <= repl_receiver_applied(s)); /* R8: never ahead */
        _write_rts(s, lsn, seq);
        s->persisted = lsn;
    }
}

static void *
_persist_main(void *arg)
{
    struct repl_receiver *s = arg;
    util_thread_name("kura-rts");
    while (!_stopping(s)) {
        (void)_pause(s, PERSIST_MS, false);
        _persist(s);
    }
    return NULL;
}

enum repl_receiver_hs
repl_receiver_handshake(struct netio_stream *io, struct repl_hello *h,
                        const struct repl_auth *auth, int timeout_ms,
                        char *line, size_t cap)
{
    char snonce[REPL_NONCE_HEX + 1];
    char proof[REPL_PROOF_HEX + 1];

    int n = repl_auth_nonce(h->nonce) == 0
                ? repl_hello_format(h, line, cap)
                : -1;
    if (n < 0 || netio_stream_send_all(io, line, (size_t)n, timeout_ms) != 0 ||
        netio_stream_read_line(io, line, cap, timeout_ms) < 0) {
        return REPL_RECEIVER_HS_EIO;
    }
    if (!repl_challenge_parse(line, snonce, proof)) {
        if (auth->enabled && strncmp(line, "REPL ERROR", 10) != 0) {
            /* Anyone can answer OK: only a proof shows the key. */
            return REPL_RECEIVER_HS_NOPROOF;
        }
        return REPL_RECEIVER_HS_OK;
    }
    if (!auth->enabled) {
        return REPL_RECEIVER_HS_NEEDKEY;
    }
    if (!repl_auth_verify(auth, REPL_AUTH_MASTER, h->nonce, snonce, proof)) {
        return REPL_RECEIVER_HS_BADPROOF;
    }
    repl_auth_proof(auth, REPL_AUTH_STANDBY, h->nonce, snonce, proof);
    n = snprintf(line, cap, "REPL AUTH %s\r\n", proof);
    if (netio_stream_send_all(io, line, (size_t)n, timeout_ms) != 0 ||
        netio_stream_read_line(io, line, cap, timeout_ms) < 0) {
        return REPL_RECEIVER_HS_EIO;
    }
    return REPL_RECEIVER_HS_OK;
}

/*
 * Sends the hello and takes the master through authentication
 * (repl_auth.h). Leaves the master's answer to the hello in `line`.
 * Returns 0, or -1 (logged) if the session must end.
 */
static int
_handshake(struct repl_receiver *s, struct netio_stream *io, char *line,
           size_t cap)
{
    struct repl_hello h = {REPL_VERSION, s->o.sid, s->rts,
                           REPL_FLAG_ALLOW_RESYNC, ""};
    if (s->o.own_back) {
        h.flags |= REPL_FLAG_OWN; /* R6 */
    }

    switch (repl_receiver_handshake(io, &h, s->o.auth, HELLO_TIMEOUT_MS, line,
                                    cap)) {
    case REPL_RECEIVER_HS_OK:
        return 0;
    case REPL_RECEIVER_HS_EIO: {
        char why[256];
        if (netio_stream_tls_error(io, why, sizeof(why))) {
            /* TLS 1.3 tells a client its certificate was refused only
             * once it reads. */
            log_limited(s->log, LOG_ERROR, "repl: master %s:%d ended the "
                        "TLS session: %s", s->o.host, s->o.port, why);
        } else {
            log_limited(s->log, LOG_WARN, "repl: no answer from %s:%d",
                        s->o.host, s->o.port);
        }
        return -1;
    }
    case REPL_RECEIVER_HS_NOPROOF:
        log_limited(s->log, LOG_ERROR, "repl: master %s:%d did not "
                    "authenticate (has it no -rkey?); refusing its "
                    "stream", s->o.host, s->o.port);
        return -1;
    case REPL_RECEIVER_HS_NEEDKEY:
        log_limited(s->log, LOG_ERROR, "repl: master %s:%d requires a "
                    "shared key; start this server with -rkey", s->o.host,
                    s->o.port);
        return -1;
    case REPL_RECEIVER_HS_BADPROOF:
        log_limited(s->log, LOG_ERROR, "repl: master %s:%d failed "
                    "authentication (not the same -rkey?); refusing its "
                    "stream", s->o.host, s->o.port);
        return -1;
    }
    return -1;
}

/*
 * Asks at once for the pages of the keys of the records received (at
 * most RECEIVER_AHEAD of them), before they are applied one after the
 * other (prefetch.h): on a standby whose database is larger than its
 * memory, each would otherwise wait for its page in turn, and the
 * standby would fall behind a master that keeps its data in memory.
 */
struct ahead {
    size_t bytes;    /* frames from the buffer's head asked for already */
    unsigned frames; /* ... how many */
};

static void
_read_ahead(struct repl_receiver *s, const struct buf *in, struct ahead *a)
{
    if (s->prefetch == NULL || a->frames > RECEIVER_AHEAD / 2) {
        return;
    }
    void *ready[64];
    while (prefetch_reap(s->prefetch, ready, 64) == 64) {
    }
    const uint8_t *p = (const uint8_t *)buf_head(in) + a->bytes;
    size_t left = buf_len(in) - a->bytes;
    struct repl_frame f;
    for (; a->frames < RECEIVER_AHEAD &&
           repl_frame_decode(p, left, &f) == REPL_OK;
         a->frames++) {
        if (f.type == REPL_FRAME_RECORD && f.rec.op != LOGREC_FLUSH) {
            (void)prefetch_key(s->prefetch, f.rec.key, f.rec.nkey, s);
        } else if (f.type == REPL_FRAME_SNAP_ITEM) {
            (void)prefetch_key(s->prefetch, f.key, f.nkey, s);
        }
        p += f.len;
        left -= f.len;
        a->bytes += f.len;
    }
    prefetch_submit(s->prefetch);
}

static void
_session(struct repl_receiver *s, struct netio_stream *io)
{
    char line[REPL_LINE_MAX];
    struct session ss;
    unsigned master_sid = 0;

    memset(&ss, 0, sizeof(ss));
    buf_init(&ss.in);
    if (_handshake(s, io, line, sizeof(line)) != 0) {
        return;
    }
    if (sscanf(line, "REPL OK %u", &master_sid) != 1 &&
        sscanf(line, "REPL RESYNC %u", &master_sid) != 1) {
        log_limited(s->log, LOG_ERROR, "repl: master %s:%d refused: %s",
                    s->o.host, s->o.port, line);
        return;
    }
    pthread_mutex_lock(&s->lock);
    s->st.connected = true;
    s->st.master_sid = master_sid;
    s->st.connects++;
    pthread_mutex_unlock(&s->lock);
    log_info(s->log, "repl: following %s:%d (server %u) from lsn %" PRIu64,
             s->o.host, s->o.port, master_sid, s->rts);
    ss.pos_lsn = s->rts;
    ss.pos_seq = s->rts_seq;
    ss.wacked = s->rts;
    ss.wack = repl_line_wants_wack(line);
    ss.last_frame_ms = util_mono_ms();
    while (!_stopping(s)) {
        int r = netio_stream_wait_readable(io, 50);
        if (r < 0) {
            break;
        }
        if (r > 0) {
            /* Take everything that has arrived (up to READ_MAX), so a fast
             * master is applied in large batches, one commit each. */
            ssize_t got = 0;
            while (buf_len(&ss.in) < READ_MAX) {
                if (!buf_reserve(&ss.in, 1 << 16, REPL_FRAME_MAX + READ_MAX)) {
                    got = -1;
                    break;
                }
                got = netio_stream_recv(io, buf_tail(&ss.in),
                                        buf_room(&ss.in));
                if (got <= 0) {
                    break;
                }
                buf_produce(&ss.in, (size_t)got);
            }
            if (got == 0 ||
                (got < 0 && errno != EAGAIN && errno != EWOULDBLOCK)) {
                log_info(s->log, "repl: master %s:%d closed the connection",
                         s->o.host, s->o.port);
                break;
            }
            ss.last_frame_ms = util_mono_ms();
        } else if (util_mono_ms() - ss.last_frame_ms > SILENCE_MS) {
            log_warn(s->log, "repl: master %s:%d silent for %d ms; "
                     "reconnecting", s->o.host, s->o.port, SILENCE_MS);
            break;
        }
        struct repl_frame f;
        enum repl_status fs;
        bool failed = false;
        struct ahead ahead = {0, 0};
        while ((fs = repl_frame_decode((const uint8_t *)buf_head(&ss.in),
                                       buf_len(&ss.in), &f)) == REPL_OK) {
            _read_ahead(s, &ss.in, &ahead); /* the next frames' pages */
            if (_frame(s, &ss, &f) != 0) {
                failed = true;
                break;
            }
            buf_consume(&ss.in, f.len);
            if (ahead.frames > 0) {
                ahead.frames--;
                ahead.bytes -= f.len;
            }
        }
        if (failed || fs == REPL_CORRUPT) {
            if (fs == REPL_CORRUPT) {
                log_error(s->log, "repl: garbage from %s:%d; reconnecting",
                          s->o.host, s->o.port);
            }
            break;
        }
        if (fs == REPL_SHORT && f.len > 0 && buf_len(&ss.in) < f.len &&
            !buf_reserve(&ss.in, f.len - buf_len(&ss.in),
                         REPL_FRAME_MAX + (1 << 16))) {
            break;
        }
        /* R5: what was received is written to our own log first, then
         * reported, before any wait for a sync. */
        if (txn_commit(&s->batch) != TXN_OK) {
            break;
        }
        if (ss.wack && !ss.in_snapshot && ss.pos_lsn > ss.wacked) {
            assert(s->batch.nchanges == 0); /* R5: nothing left unlogged */
            uint8_t wack[REPL_ACK_LEN];
            repl_encode_ack_type(wack, REPL_FRAME_WACK, ss.pos_lsn,
                                 ss.pos_seq);
            if (netio_stream_send_all(io, wack, sizeof(wack), 2000) != 0) {
                break;
            }
            ss.wacked = ss.pos_lsn;
            pthread_mutex_lock(&s->lock);
            s->st.wacks++;
            pthread_mutex_unlock(&s->lock);
        }
        /* T8: under "always" a change is applied here only once it is
         * durable here (store.h D1): a standby whose disk loses power
         * with its master must not hold a half-written record that only
         * an unsynced change explains. So wait for the sync, then apply. */
        if (txn_wait_applied(&s->batch) != TXN_OK) {
            break;
        }
        /* Acknowledged only once durable here (R8). */
        if (!ss.in_snapshot) {
            repl_progress_commit(&s->progress, s->batch.last_lsn,
                                 (struct repl_position){ss.pos_lsn,
                                                        ss.pos_seq});
        }
        /* Applied: what the master had when it sent the heartbeat is
         * readable here now. */
        if (ss.heard_end) {
            _first_outcome(s, REPL_RECEIVER_FIRST_CAUGHT_UP);
        }
        if (_acknowledge(s, &ss, io, false) != 0) {
            break;
        }
    }
    txn_wait_applied(&s->batch);
    _acknowledge(s, &ss, io, true);
    buf_deinit(&ss.in);
}

void
repl_receiver_follow(struct repl_receiver *s, struct netio_stream *io)
{
    pthread_mutex_lock(&s->lock);
    s->fd = io->fd;
    pthread_mutex_unlock(&s->lock);
    _session(s, io);
    pthread_mutex_lock(&s->lock);
    s->fd = -1;
    s->st.connected = false;
    pthread_mutex_unlock(&s->lock);
    _first_outcome(s, REPL_RECEIVER_FIRST_FAILED); /* if it had not */
}

static void *
_main(void *arg)
{
    struct repl_receiver *s = arg;
    unsigned backoff = BACKOFF_MIN_MS;
    util_thread_name("kura-recv");

    while (!_stopping(s)) {
        struct netio_stream io;
        char why[512];
        if (netio_stream_connect(&io, s->o.host, s->o.port, s->o.tls, 2000,
                                 why, sizeof(why)) != 0) {
            log_limited(s->log, LOG_WARN, "repl: master %s:%d%s: %s; "
                        "retrying", s->o.host, s->o.port,
                        s->o.tls != NULL ? " (TLS)" : "", why);
            pthread_mutex_lock(&s->lock);
            s->st.connect_failures++;
            pthread_mutex_unlock(&s->lock);
            _first_outcome(s, REPL_RECEIVER_FIRST_FAILED);
            backoff = _retry_pause(s, backoff);
            continue;
        }
        s->peer_back_until = 0; /* it listens */
        uint64_t started = util_mono_ms();
        repl_receiver_follow(s, &io);
        netio_stream_close(&io);
        if (util_mono_ms() - started > 1000) {
            backoff = BACKOFF_MIN_MS;
        }
        backoff = _retry_pause(s, backoff);
    }
    return NULL;
}

struct repl_receiver *
repl_receiver_create(const struct repl_receiver_options *o,
                     struct txn_engine *eng, struct logger *log, char *err,
                     size_t errlen)
{
    struct repl_receiver *s = calloc(1, sizeof(*s));
    if (s == NULL) {
        snprintf(err, errlen, "out of memory");
        return NULL;
    }
    s->o = *o;
    s->eng = eng;
    s->log = log;
    s->fd = -1;
    pthread_mutex_init(&s->lock, NULL);
    pthread_cond_init(&s->cond, NULL);
    if (_read_rts(s, err, errlen) != 0 ||
        txn_batch_init(&s->batch, eng, o->scratch_cap) != 0) {
        if (err[0] == '\0') {
            snprintf(err, errlen, "cannot set up replication");
        }
        pthread_mutex_destroy(&s->lock);
        pthread_cond_destroy(&s->cond);
        free(s);
        return NULL;
    }
    repl_progress_init(&s->progress,
                       (struct repl_position){s->rts, s->rts_seq});
    char why[160];
    s->prefetch = prefetch_create(eng->store, RECEIVER_AHEAD, why,
                                  sizeof(why));
    /* txn.h T10: under -fsync peer what the peer sends is in its log
     * already; waiting for it to report our copy back would stall the
     * stream (and each side's receiver on the other's). */
    s->batch.apply_at_commit = eng->ulog != NULL &&
                               ulog_fsync_policy(eng->ulog) == ULOG_FSYNC_PEER;
    return s;
}

int
repl_receiver_start(struct repl_receiver *s)
{
    if (pthread_create(&s->thread, NULL, _main, s) != 0) {
        return -1;
    }
    if (pthread_create(&s->persister, NULL, _persist_main, s) != 0) {
        pthread_mutex_lock(&s->lock);
        s->stopping = true;
        pthread_cond_broadcast(&s->cond);
        pthread_mutex_unlock(&s->lock);
        pthread_join(s->thread, NULL);
        return -1;
    }
    s->started = true;
    return 0;
}

uint64_t
repl_receiver_applied(struct repl_receiver *s)
{
    pthread_mutex_lock(&s->lock);
    uint64_t rts = s->rts;
    pthread_mutex_unlock(&s->lock);
    return rts;
}

void
repl_receiver_stats(struct repl_receiver *s, struct repl_receiver_stats *out)
{
    pthread_mutex_lock(&s->lock);
    *out = s->st;
    out->applied_lsn = s->rts;
    out->delay_p50_us = hist_percentile(&s->delay, 50);
    out->delay_p99_us = hist_percentile(&s->delay, 99);
    out->delay_max_us = s->delay.max;
    out->lag_records = s->master_seq > s->rts_seq ? s->master_seq - s->rts_seq
                                                  : 0;
    if (out->master_lsn > s->rts) {
        uint64_t ref = out->connected ? s->master_now_us : util_now_us();
        out->lag_seconds = ref > s->rts ? (double)(ref - s->rts) / 1e6 : 0;
    } else {
        out->lag_seconds = 0;
    }
    pthread_mutex_unlock(&s->lock);
}

void
repl_receiver_destroy(struct repl_receiver *s)
{
    if (s == NULL) {
        return;
    }
    if (s->started) {
        pthread_mutex_lock(&s->lock);
        s->stopping = true;
        if (s->fd >= 0) {
            shutdown(s->fd, SHUT_RDWR);
        }
        pthread_cond_broadcast(&s->cond);
        pthread_mutex_unlock(&s->lock);
        pthread_join(s->thread, NULL);
        pthread_join(s->persister, NULL);
        _persist(s);
    }
    txn_batch_deinit(&s->batch);
    prefetch_destroy(s->prefetch);
    pthread_cond_destroy(&s->cond);
    pthread_mutex_destroy(&s->lock);
    free(s);
}
