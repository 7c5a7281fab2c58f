/*
 * repl_sender: one sender thread per connected peer (see repl_sender.h).
 */
#include "repl_sender.h"

#include <assert.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include "atomicfile.h"
#include "buf.h"
#include "netio.h"
#include "record.h"
#include "util.h"

#define HEARTBEAT_MS 200
#define SEND_TIMEOUT_MS 10000
#define SEND_CHUNK ((size_t)256 << 10)
#define PERSIST_MS 10000
#define AUTH_TIMEOUT_MS 5000

struct sender {
    struct repl_sender *m;
    struct netio_stream io; /* the peer's connection, plaintext or TLS */
    pthread_t thread;
    struct repl_hello hello;
    _Atomic bool stop;
    _Atomic bool finished;
    bool backup;         /* a backup in progress (R3); under m->lock */
    uint64_t hold;       /* ... holding back removal after this lsn */
    struct sender *next;
    struct buf out;
    bool wack;           /* the peer sends WACK frames (R5) */
    pthread_t ack_thread; /* ... read by _acks_main */
    _Atomic bool acks_done;
    bool linked;         /* ... which linked it to the log (U11) */
    uint64_t own_until;  /* R6: its own records up to here go back, or 0 */
};

struct peer {
    uint32_t sid;
    uint64_t acked;
    uint64_t acked_seq;
    bool connected;
    uint64_t sent;
    uint64_t resyncs;
    struct sender *owner;
};

struct repl_sender {
    struct ulog *ulog;
    struct store *store;
    struct txn_engine *eng;     /* flush_all state for R4, or NULL */
    void (*on_follower)(void *arg);
    void *on_follower_arg;
    const struct repl_auth *auth;
    uint32_t sid;
    bool durable_only;
    struct logger *log;
    char peers_path[PATH_MAX];
    pthread_mutex_t lock;
    struct peer peers[REPL_MAX_PEERS];
    int npeers;
    struct sender *senders;
    bool stopping;
    bool dirty;
    uint64_t persisted_ms;
    pthread_mutex_t persist_lock;
};

/* ------------------------------------------------------------- peers */

static void
_load_peers(struct repl_sender *m)
{
    char text[4096];
    long n = atomicfile_read(m->peers_path, text, sizeof(text));
    if (n <= 0) {
        return;
    }
    char *save = NULL;
    for (char *line = strtok_r(text, "\n", &save); line != NULL;
         line = strtok_r(NULL, "\n", &save)) {
        unsigned sid;
        uint64_t acked;
        if (sscanf(line, "peer %u %" SCNu64, &sid, &acked) == 2 &&
            m->npeers < REPL_MAX_PEERS) {
            m->peers[m->npeers].sid = sid;
            m->peers[m->npeers].acked = acked;
            m->npeers++;
        }
    }
}

/* Writes the peers file if it changed and PERSIST_MS passed. */
static void
_persist_peers(struct repl_sender *m, bool force)
{
    char text[4096];
    size_t n = 0;

    pthread_mutex_lock(&m->persist_lock);
    pthread_mutex_lock(&m->lock);
    uint64_t now = util_mono_ms();
    bool due = m->dirty && (force || now - m->persisted_ms >= PERSIST_MS);
    if (due) {
        for (int i = 0; i < m->npeers; i++) {
            n += (size_t)snprintf(text + n, sizeof(text) - n,
                                  "peer %u %" PRIu64 "\n", m->peers[i].sid,
                                  m->peers[i].acked);
        }
        m->dirty = false;
        m->persisted_ms = now;
    }
    pthread_mutex_unlock(&m->lock);
    if (due && atomicfile_write(m->peers_path, text, n) != 0) {
        log_limited(m->log, LOG_ERROR, "repl: cannot write %s: %s",
                    m->peers_path, strerror(errno));
    }
    pthread_mutex_unlock(&m->persist_lock);
}

/* Finds or adds the peer `sid` and makes `s` its connection. */
static struct peer *
_attach(struct repl_sender *m, struct sender *s)
{
    struct peer *p = NULL;

    pthread_mutex_lock(&m->lock);
    for (int i = 0; i < m->npeers; i++) {
        if (m->peers[i].sid == s->hello.sid) {
            p = &m->peers[i];
        }
    }
    if (p == NULL && m->npeers < REPL_MAX_PEERS) {
        p = &m->peers[m->npeers++];
        memset(p, 0, sizeof(*p));
        p->sid = s->hello.sid;
        /* A new peer holds back nothing it has not asked for. */
        p->acked = s->hello.after;
        m->dirty = true;
    }
    if (p != NULL) {
        if (p->owner != NULL) {
            atomic_store(&p->owner->stop, true); /* a stale connection */
        }
        p->owner = s;
        p->connected = true;
        p->sent = 0;
    }
    pthread_mutex_unlock(&m->lock);
    return p;
}

static void
_detach(struct repl_sender *m, struct sender *s, struct peer *p)
{
    pthread_mutex_lock(&m->lock);
    if (p != NULL && p->owner == s) {
        p->owner = NULL;
        p->connected = false;
    }
    pthread_mutex_unlock(&m->lock);
}

uint64_t
repl_sender_acked(struct repl_sender *m)
{
    uint64_t acked = UINT64_MAX;
    pthread_mutex_lock(&m->lock);
    for (int i = 0; i < m->npeers; i++) {
        if (m->peers[i].acked < acked) {
            acked = m->peers[i].acked;
        }
    }
    for (struct sender *s = m->senders; s != NULL; s = s->next) {
        if (s->backup && s->hold < acked) {
            acked = s->hold; /* R3 */
        }
    }
    pthread_mutex_unlock(&m->lock);
    return acked;
}

int
repl_sender_stats(struct repl_sender *m, struct repl_peer_stats *out, int max)
{
    int n = 0;
    pthread_mutex_lock(&m->lock);
    for (int i = 0; i < m->npeers && n < max; i++, n++) {
        out[n].sid = m->peers[i].sid;
        out[n].connected = m->peers[i].connected;
        out[n].acked_lsn = m->peers[i].acked;
        out[n].acked_seq = m->peers[i].acked_seq;
        out[n].sent = m->peers[i].sent;
        out[n].resyncs = m->peers[i].resyncs;
    }
    pthread_mutex_unlock(&m->lock);
    return n;
}

/* ------------------------------------------------------------ sending */

static bool
_stopped(struct sender *s)
{
    if (atomic_load(&s->stop)) {
        return true;
    }
    pthread_mutex_lock(&s->m->lock);
    bool stopping = s->m->stopping;
    pthread_mutex_unlock(&s->m->lock);
    return stopping;
}

static int
_flush(struct sender *s)
{
    if (buf_len(&s->out) == 0) {
        return 0;
    }
    int rc = netio_stream_send_all(&s->io, buf_head(&s->out),
                                   buf_len(&s->out), SEND_TIMEOUT_MS);
    buf_reset(&s->out);
    return rc;
}

static int
_queue(struct sender *s, const void *p, size_t n)
{
    if (!buf_append(&s->out, p, n, SIZE_MAX)) {
        return -1;
    }
    return buf_len(&s->out) >= SEND_CHUNK ? _flush(s) : 0;
}

static int
_send_line(struct sender *s, const char *fmt, uint32_t arg)
{
    char line[128];
    int n = snprintf(line, sizeof(line), fmt, arg);
    return netio_stream_send_all(&s->io, line, (size_t)n, SEND_TIMEOUT_MS);
}

static int
_send_text(struct sender *s, const char *text)
{
    return netio_stream_send_all(&s->io, text, strlen(text),
                                 SEND_TIMEOUT_MS);
}

/* The peer's address, for log lines. */
static void
_peer_name(int fd, char *out, size_t cap)
{
    struct sockaddr_storage ss;
    socklen_t len = sizeof(ss);
    char host[INET6_ADDRSTRLEN] = "?";
    int port = 0;
    if (getpeername(fd, (struct sockaddr *)&ss, &len) == 0) {
        if (ss.ss_family == AF_INET) {
            const struct sockaddr_in *a = (const struct sockaddr_in *)&ss;
            inet_ntop(AF_INET, &a->sin_addr, host, sizeof(host));
            port = ntohs(a->sin_port);
        } else if (ss.ss_family == AF_INET6) {
            const struct sockaddr_in6 *a = (const struct sockaddr_in6 *)&ss;
            inet_ntop(AF_INET6, &a->sin6_addr, host, sizeof(host));
            port = ntohs(a->sin6_port);
        } else {
            snprintf(host, sizeof(host), "local socket");
        }
    }
    snprintf(out, cap, "%s:%d", host, port);
}

/*
 * Proves this master holds the shared key and checks that the peer does
 * too (repl_auth.h); without a key, admits peers on this host only.
 * Returns true if the peer may go on.
 */
static bool
_authenticate(struct sender *s)
{
    struct repl_sender *m = s->m;
    char peer[INET6_ADDRSTRLEN + 16];
    char line[REPL_LINE_MAX];
    char snonce[REPL_NONCE_HEX + 1];
    char proof[REPL_PROOF_HEX + 1];

    _peer_name(s->io.fd, peer, sizeof(peer));
    if (!m->auth->enabled) {
        if (repl_auth_peer_is_local(s->io.fd)) {
            return true;
        }
        _send_text(s, "REPL ERROR replication from another host needs a "
                      "shared key (-rkey)\r\n");
        log_limited(m->log, LOG_WARN, "repl: refused %s: replication from "
                    "another host needs -rkey on both servers", peer);
        return false;
    }
    if (repl_auth_nonce(snonce) != 0) {
        log_error(m->log, "repl: no random numbers for a nonce");
        return false;
    }
    repl_auth_proof(m->auth, REPL_AUTH_MASTER, s->hello.nonce, snonce, proof);
    snprintf(line, sizeof(line), "REPL CHALLENGE %s %s\r\n", snonce, proof);
    if (_send_text(s, line) != 0) {
        return false;
    }
    if (netio_stream_read_line(&s->io, line, sizeof(line),
                               AUTH_TIMEOUT_MS) < 0 ||
        !repl_auth_line_parse(line, proof) ||
        !repl_auth_verify(m->auth, REPL_AUTH_STANDBY, s->hello.nonce, snonce,
                          proof)) {
        _send_text(s, "REPL ERROR authentication failed\r\n");
        log_limited(m->log, LOG_WARN, "repl: %s failed authentication (not "
                    "the same -rkey?)", peer);
        return false;
    }
    return true;
}

/* True if the stored record `rec` is a value `fl` hides at `now_us`. */
static bool
_flushed(const struct expiry_flush *fl, const uint8_t *rec, size_t len,
         uint64_t now_us)
{
    struct record_meta meta;
    const uint8_t *v;
    size_t vlen;
    return record_decode(rec, len, &meta, &v, &vlen) == RECORD_OK &&
           meta.kind == RECORD_VALUE && expiry_flushed(fl, meta.ts, now_us);
}

/* R7: the flush_all state `fl` as FLUSH records stamped `lsn`. */
static int
_queue_flush_state(struct sender *s, const struct expiry_flush *fl,
                   uint64_t lsn)
{
    const uint64_t flushes[2][2] = {
        {fl->applied_us, 0},                /* an immediate flush */
        {fl->pending_stamp, fl->pending_us} /* a delayed one */
    };
    uint8_t rec[LOGREC_HEADER + LOGREC_FLUSH_PAYLOAD];
    uint8_t hdr[REPL_FRAME_HEADER];

    for (int i = 0; i < 2; i++) {
        if (flushes[i][0] == 0) {
            continue;
        }
        uint8_t *payload = logrec_begin(rec, LOGREC_FLUSH, s->m->sid, NULL, 0,
                                        LOGREC_FLUSH_PAYLOAD);
        logrec_flush_encode(payload, flushes[i][0], flushes[i][1]);
        logrec_seal(rec, lsn, 0);
        repl_frame_header(hdr, REPL_FRAME_RECORD, sizeof(rec));
        if (_queue(s, hdr, sizeof(hdr)) != 0 ||
            _queue(s, rec, sizeof(rec)) != 0) {
            return -1;
        }
    }
    return 0;
}

/*
 * Sends a snapshot of the database (R1) to peer `p`, or to a backup when
 * `p` is NULL. Returns the lsn it covers, or 0; sets `*sent` to the items.
 */
static uint64_t
_send_snapshot(struct sender *s, struct peer *p, uint64_t *sent)
{
    struct repl_sender *m = s->m;
    uint8_t hdr[REPL_FRAME_HEADER + 2 + RECORD_KEY_MAX];
    char key[RECORD_KEY_MAX + 1];
    size_t nkey;
    size_t cap = (size_t)64 << 10;
    uint8_t *scratch = malloc(cap);
    uint64_t count = 0;
    bool ok = scratch != NULL;

    /* Every record up to `safe` is in the database as the walk starts;
     * later changes follow from the log, and newer always wins. */
    uint64_t safe = ulog_applied_lsn(m->ulog);
    /* R4, R7: a snapshot leaves out what the flush_all state hides now,
     * and carries that state. */
    struct expiry_flush fl;
    bool hide_flushed = m->eng != NULL;
    uint64_t walk_us = util_now_us();
    if (hide_flushed) {
        txn_flush_state(m->eng, &fl);
    }
    uint8_t frame[16];
    ok = ok && _queue(s, frame, repl_encode_u64(frame, REPL_FRAME_SNAP_BEGIN,
                                                safe)) == 0;
    ok = ok && (!hide_flushed || _queue_flush_state(s, &fl, safe) == 0);
    store_iter_acquire(m->store);
    store_iter_init(m->store);
    while (ok && !_stopped(s)) {
        enum store_status st =
            store_iter_next(m->store, key, sizeof(key), &nkey);
        if (st == STORE_NOTFOUND) {
            break;
        }
        if (st != STORE_OK) {
            ok = false;
            break;
        }
        struct store_value v;
        if (store_get(m->store, key, nkey, scratch, cap, &v) != STORE_OK) {
            continue; /* removed meanwhile: the log carries that */
        }
        if (hide_flushed && _flushed(&fl, v.data, v.len, walk_us)) {
            store_value_release(&v);
            continue;
        }
        size_t h = repl_encode_snap_item(hdr, key, nkey, v.len);
        ok = _queue(s, hdr, h) == 0 && _queue(s, v.data, v.len) == 0;
        store_value_release(&v);
        count++;
    }
    store_iter_release(m->store);
    free(scratch);
    /* R1: the snapshot's lsn names only logged, applied changes. */
    assert(safe <= ulog_applied_lsn(m->ulog));
    ok = ok && !_stopped(s) &&
         _queue(s, frame, repl_encode_u64(frame, REPL_FRAME_SNAP_END,
                                          count)) == 0 &&
         _flush(s) == 0;
    if (!ok) {
        return 0;
    }
    *sent = count;
    if (p != NULL) {
        pthread_mutex_lock(&m->lock);
        p->resyncs++;
        pthread_mutex_unlock(&m->lock);
        log_info(m->log, "repl: sent a full snapshot of %" PRIu64 " records "
                 "to peer %u (up to lsn %" PRIu64 ")", count, s->hello.sid,
                 safe);
    }
    return safe == 0 ? 1 : safe;
}

/* Records a peer's acknowledgement of `lsn`/`seq` as durable there. */
static void
_note_ack(struct sender *s, struct peer *p, uint64_t lsn, uint64_t seq)
{
    pthread_mutex_lock(&s->m->lock);
    if (lsn > p->acked) {
        p->acked = lsn;
        s->m->dirty = true;
    }
    if (seq > p->acked_seq) {
        p->acked_seq = seq;
    }
    pthread_mutex_unlock(&s->m->lock);
}

/* Reads acknowledgements without blocking. Returns -1 if the peer left. */
static int
_read_acks(struct sender *s, struct peer *p, uint8_t *buf, size_t *have,
           size_t cap)
{
    for (;;) {
        ssize_t n = netio_stream_recv(&s->io, buf + *have, cap - *have);
        if (n == 0) {
            return -1;
        }
        if (n < 0) {
            if (errno == EAGAIN || errno == EWOULDBLOCK) {
                break;
            }
            if (errno == EINTR) {
                continue;
            }
            return -1;
        }
        *have += (size_t)n;
        size_t off = 0;
        struct repl_frame f;
        enum repl_status st;
        while ((st = repl_frame_decode(buf + off, *have - off, &f)) ==
               REPL_OK) {
            if (f.type != REPL_FRAME_ACK) {
                return -1;
            }
            _note_ack(s, p, f.lsn, f.seq);
            off += f.len;
        }
        if (st == REPL_CORRUPT) {
            return -1;
        }
        memmove(buf, buf + off, *have - off);
        *have -= off;
        if (*have == cap) {
            return -1;
        }
    }
    return 0;
}

struct ack_reader {
    struct sender *s;
    struct peer *p;
};

/*
 * Under -fsync peer, one thread per peer reads its ACK and WACK frames as
 * they arrive, so a write waiting on the peer (ulog.h U10) is answered as
 * soon as the peer's report lands, not when the sender next looks. The
 * first WACK links the peer to the log (U11), the session's end unlinks
 * it (_sender_main). Ends the session if the peer leaves or sends
 * anything else.
 */
static void *
_acks_main(void *arg)
{
    struct ack_reader *ar = arg;
    struct sender *s = ar->s;
    struct peer *p = ar->p;
    uint8_t buf[1024];
    size_t have = 0;
    util_thread_name("kura-acks");

    while (!_stopped(s)) {
        int r = netio_stream_wait_readable(&s->io, 100);
        if (r == 0) {
            continue;
        }
        ssize_t n = r < 0 ? -1
                          : netio_stream_recv(&s->io, buf + have,
                                              sizeof(buf) - have);
        if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK ||
                      errno == EINTR)) {
            continue;
        }
        if (n <= 0) {
            break;
        }
        have += (size_t)n;
        size_t off = 0;
        struct repl_frame f;
        enum repl_status st;
        bool bad = false;
        while ((st = repl_frame_decode(buf + off, have - off, &f)) ==
               REPL_OK) {
            if (f.type == REPL_FRAME_ACK) {
                _note_ack(s, p, f.lsn, f.seq);
            } else if (f.type == REPL_FRAME_WACK) {
                if (!s->linked) {
                    s->linked = true;
                    ulog_peer_link(s->m->ulog, s->hello.sid, true);
                }
                ulog_peer_written(s->m->ulog, f.lsn); /* U10 */
            } else {
                bad = true;
                break;
            }
            off += f.len;
        }
        if (bad || st == REPL_CORRUPT) {
            break;
        }
        memmove(buf, buf + off, have - off);
        have -= off;
    }
    atomic_store(&s->stop, true); /* the sender ends the session too */
    free(ar);
    return NULL;
}

static void
_stream(struct sender *s, struct peer *p, struct ulog_reader *r)
{
    struct repl_sender *m = s->m;
    uint8_t acks[256];
    size_t have = 0;
    uint64_t pos_seq = 0;
    uint64_t next_heartbeat = 0;

    while (!_stopped(s)) {
        struct logrec rec;
        enum ulog_status st = ulog_reader_next(r, &rec, m->durable_only);
        if (st == ULOG_OK) {
            /* U1 as the peer sees it: records in log order. */
            assert(rec.seq > pos_seq);
            pos_seq = rec.seq;
            if (rec.sid == s->hello.sid && rec.lsn > s->own_until) {
                continue; /* never send a change back where it came from,
                           * except what it asked to get back (R6) */
            }
            assert(rec.sid != s->hello.sid || s->own_until > 0); /* R6 */
            uint8_t hdr[REPL_FRAME_HEADER];
            repl_frame_header(hdr, REPL_FRAME_RECORD, rec.len);
            if (_queue(s, hdr, sizeof(hdr)) != 0 ||
                _queue(s, rec.raw, rec.len) != 0) {
                return;
            }
            pthread_mutex_lock(&m->lock);
            p->sent++;
            pthread_mutex_unlock(&m->lock);
            continue;
        }
        if (st != ULOG_END) {
            log_warn(m->log, "repl: peer %u: cannot read the update log "
                     "(%d); disconnecting", s->hello.sid, (int)st);
            return;
        }
        /* Caught up with what may be sent. */
        uint64_t now = util_mono_ms();
        if (now >= next_heartbeat) {
            uint64_t end_lsn;
            uint64_t end_seq;
            ulog_position(m->ulog, &end_lsn, &end_seq);
            uint64_t pos_lsn = ulog_reader_lsn(r);
            if (pos_lsn >= end_lsn) {
                pos_seq = end_seq;
                pos_lsn = end_lsn;
            }
            if (pos_seq > end_seq) {
                pos_seq = end_seq;
            }
            uint8_t hb[REPL_HEARTBEAT_LEN];
            repl_encode_heartbeat(hb, end_lsn, end_seq, pos_lsn, pos_seq,
                                  util_now_us());
            if (_queue(s, hb, sizeof(hb)) != 0) {
                return;
            }
            next_heartbeat = now + HEARTBEAT_MS;
        }
        if (_flush(s) != 0 ||
            (!s->wack && _read_acks(s, p, acks, &have, sizeof(acks)) != 0)) {
            return;
        }
        _persist_peers(m, false);
        /* Appends of the peer's own records, skipped above, need not
         * wake us: on a standby that is every record it receives. */
        uint32_t skip = ulog_reader_lsn(r) >= s->own_until ? s->hello.sid
                                                           : 0;
        ulog_reader_wait_others(r, skip, 50);
    }
}

/*
 * Sends a backup (REPL_FLAG_BACKUP): the snapshot, every record after it
 * up to P, the log's end once the walk is done (R2), and a heartbeat
 * naming P. Returns true if the whole backup was sent.
 */
static bool
_send_backup(struct sender *s, const char *peer)
{
    struct repl_sender *m = s->m;
    struct ulog_reader *r = NULL;
    uint64_t count = 0;
    uint64_t sent = 0;
    uint64_t end;
    uint64_t end_seq;
    bool ok = false;

    if (_send_line(s, "REPL BACKUP %u\r\n", m->sid) != 0) {
        return false;
    }
    uint64_t from = _send_snapshot(s, NULL, &count);
    ulog_position(m->ulog, &end, &end_seq);
    if (from == 0 || ulog_reader_open(m->ulog, from, &r) != ULOG_OK) {
        return false;
    }
    while (!_stopped(s) && !ulog_failed(m->ulog)) {
        struct logrec rec;
        enum ulog_status st = ulog_reader_next(r, &rec, m->durable_only);
        if (st == ULOG_OK) {
            assert(rec.lsn > from); /* R2: the records after the snapshot */
            if (rec.lsn > end) {
                ok = true;
                break;
            }
            uint8_t hdr[REPL_FRAME_HEADER];
            repl_frame_header(hdr, REPL_FRAME_RECORD, rec.len);
            if (_queue(s, hdr, sizeof(hdr)) != 0 ||
                _queue(s, rec.raw, rec.len) != 0) {
                break;
            }
            sent++;
            continue;
        }
        if (st != ULOG_END) {
            break;
        }
        if (ulog_reader_lsn(r) >= end) {
            ok = true;
            break;
        }
        if (_flush(s) != 0) {
            break;
        }
        ulog_reader_wait(r, 50); /* durable_only: P is not durable yet */
    }
    ulog_reader_close(r);
    if (ok) {
        uint64_t last_lsn;
        uint64_t last_seq;
        uint8_t hb[REPL_HEARTBEAT_LEN];
        ulog_position(m->ulog, &last_lsn, &last_seq);
        assert(end <= last_lsn); /* R2: P was logged */
        repl_encode_heartbeat(hb, last_lsn, last_seq, end, end_seq,
                              util_now_us());
        ok = _queue(s, hb, sizeof(hb)) == 0 && _flush(s) == 0;
    }
    if (ok) {
        log_info(m->log, "repl: sent a backup to %s: %" PRIu64 " records "
                 "and %" PRIu64 " log records after lsn %" PRIu64 ", up to "
                 "lsn %" PRIu64, peer, count, sent, from, end);
    }
    return ok;
}

/* Serves a backup, holding back removal while it runs (R3). */
static void
_serve_backup(struct sender *s)
{
    struct repl_sender *m = s->m;
    char peer[INET6_ADDRSTRLEN + 16];

    /* Hold everything, then from the lsn read here: the snapshot's lsn,
     * read later, cannot be lower. */
    pthread_mutex_lock(&m->lock);
    s->backup = true;
    s->hold = 0;
    pthread_mutex_unlock(&m->lock);
    uint64_t floor = ulog_applied_lsn(m->ulog);
    pthread_mutex_lock(&m->lock);
    assert(s->backup && s->hold == 0); /* R3: held from the start */
    s->hold = floor;
    pthread_mutex_unlock(&m->lock);

    _peer_name(s->io.fd, peer, sizeof(peer));
    if (!_send_backup(s, peer)) {
        log_warn(m->log, "repl: backup by %s ended early", peer);
    }
    pthread_mutex_lock(&m->lock);
    s->backup = false;
    pthread_mutex_unlock(&m->lock);
}

static void *
_sender_main(void *arg)
{
    struct sender *s = arg;
    struct repl_sender *m = s->m;
    struct ulog_reader *r = NULL;
    util_thread_name("kura-send");
    struct peer *p = NULL;
    uint64_t last_lsn;
    uint64_t last_seq;

    if (s->io.tls == NULL) {
        /* Plaintext: blocking, each call bounded by its own deadline. A
         * TLS stream stays non-blocking and polls (netio.h). */
        fcntl(s->io.fd, F_SETFL, fcntl(s->io.fd, F_GETFL) & ~O_NONBLOCK);
    }
    if (!_authenticate(s)) {
        goto done;
    }
    if (s->hello.version != REPL_VERSION) {
        _send_line(s, "REPL ERROR unsupported version %u\r\n",
                   s->hello.version);
        goto done;
    }
    if (s->hello.flags & REPL_FLAG_BACKUP) {
        _serve_backup(s); /* not a peer (R3) */
        goto done;
    }
    if (s->hello.sid == m->sid) {
        _send_line(s, "REPL ERROR the peer has this server's id %u\r\n",
                   m->sid);
        log_error(m->log, "repl: a peer connected with this server's own "
                  "id %u; give each server its own -sid", m->sid);
        goto done;
    }
    p = _attach(m, s);
    if (p == NULL) {
        _send_line(s, "REPL ERROR too many peers (%u)\r\n", REPL_MAX_PEERS);
        goto done;
    }
    /* R5: under -fsync peer the peer reports what it has written. */
    s->wack = ulog_fsync_policy(m->ulog) == ULOG_FSYNC_PEER;
    ulog_position(m->ulog, &last_lsn, &last_seq);
    if (s->hello.flags & REPL_FLAG_OWN) {
        s->own_until = last_lsn; /* R6 */
        log_info(m->log, "repl: peer %u restarted after an unclean stop: "
                 "sending back its own records up to lsn %" PRIu64,
                 s->hello.sid, last_lsn);
    }
    if (m->on_follower != NULL) {
        m->on_follower(m->on_follower_arg);
    }
    enum ulog_status st = ULOG_EGAP;
    if (s->hello.after <= last_lsn) {
        st = ulog_reader_open(m->ulog, s->hello.after, &r);
    }
    if (st == ULOG_OK) {
        if (_send_line(s, s->wack ? "REPL OK %u" REPL_WACK_WORD "\r\n"
                                  : "REPL OK %u\r\n", m->sid) != 0) {
            goto done;
        }
        log_info(m->log, "repl: peer %u follows from lsn %" PRIu64,
                 s->hello.sid, s->hello.after);
    } else {
        if (!(s->hello.flags & REPL_FLAG_ALLOW_RESYNC)) {
            _send_line(s, "REPL ERROR position %u is no longer kept\r\n", 0);
            goto done;
        }
        log_info(m->log, "repl: peer %u asked for lsn %" PRIu64 ", which is "
                 "no longer kept: full resynchronisation", s->hello.sid,
                 s->hello.after);
        if (_send_line(s, s->wack ? "REPL RESYNC %u" REPL_WACK_WORD "\r\n"
                                  : "REPL RESYNC %u\r\n", m->sid) != 0) {
            goto done;
        }
        uint64_t sent = 0;
        uint64_t from = _send_snapshot(s, p, &sent);
        if (from == 0 || ulog_reader_open(m->ulog, from, &r) != ULOG_OK) {
            goto done;
        }
    }
    bool acks = false;
    if (s->wack) {
        struct ack_reader *ar = malloc(sizeof(*ar));
        if (ar == NULL) {
            goto done;
        }
        *ar = (struct ack_reader){s, p};
        if (pthread_create(&s->ack_thread, NULL, _acks_main, ar) != 0) {
            free(ar);
            goto done;
        }
        acks = true;
    }
    _stream(s, p, r);
    if (acks) {
        atomic_store(&s->stop, true);
        pthread_join(s->ack_thread, NULL);
        if (s->linked) {
            ulog_peer_link(m->ulog, s->hello.sid, false); /* U11 */
        }
    }
done:
    _flush(s);
    ulog_reader_close(r);
    _detach(m, s, p);
    _persist_peers(m, true);
    if (s->io.tls != NULL) {
        pthread_mutex_lock(&s->io.lock);
        tls_session_close_notify(s->io.tls);
        pthread_mutex_unlock(&s->io.lock);
    }
    /* The descriptor is closed when the thread is reaped, so that
     * repl_sender_destroy() never shuts down a reused descriptor. */
    shutdown(s->io.fd, SHUT_RDWR);
    buf_deinit(&s->out);
    atomic_store(&s->finished, true);
    return NULL;
}

/* Joins and frees finished senders; the caller holds no lock. */
static void
_reap(struct repl_sender *m, bool all)
{
    pthread_mutex_lock(&m->lock);
    struct sender **link = &m->senders;
    struct sender *done = NULL;
    while (*link != NULL) {
        struct sender *s = *link;
        if (all || atomic_load(&s->finished)) {
            *link = s->next;
            s->next = done;
            done = s;
        } else {
            link = &s->next;
        }
    }
    pthread_mutex_unlock(&m->lock);
    while (done != NULL) {
        struct sender *s = done;
        done = s->next;
        pthread_join(s->thread, NULL);
        netio_stream_deinit(&s->io);
        close(s->io.fd);
        free(s);
    }
}

void
repl_sender_set_engine(struct repl_sender *m, struct txn_engine *eng)
{
    m->eng = eng;
}

void
repl_sender_on_follower(struct repl_sender *m,
                        void (*fn)(void *arg), void *arg)
{
    m->on_follower = fn;
    m->on_follower_arg = arg;
}

int
repl_sender_accept(struct repl_sender *m, int fd, struct tls_session *tls,
                   const char *args, size_t args_len)
{
    struct sender *s = calloc(1, sizeof(*s));
    if (s == NULL) {
        tls_session_free(tls);
        return -1;
    }
    _reap(m, false);
    s->m = m;
    netio_stream_init(&s->io, fd, tls);
    buf_init(&s->out);
    if (!repl_hello_parse(args, args_len, &s->hello)) {
        const char *msg = "REPL ERROR bad request\r\n";
        netio_stream_send_all(&s->io, msg, strlen(msg), 1000);
        netio_stream_deinit(&s->io);
        free(s);
        return -1;
    }
    pthread_mutex_lock(&m->lock);
    if (m->stopping ||
        pthread_create(&s->thread, NULL, _sender_main, s) != 0) {
        pthread_mutex_unlock(&m->lock);
        netio_stream_deinit(&s->io);
        free(s);
        return -1;
    }
    s->next = m->senders;
    m->senders = s;
    pthread_mutex_unlock(&m->lock);
    return 0;
}

struct repl_sender *
repl_sender_create(struct ulog *ulog, struct store *store,
                   const char *ulog_dir, uint32_t sid, bool durable_only,
                   const struct repl_auth *auth, struct logger *log,
                   char *err, size_t errlen)
{
    struct repl_sender *m = calloc(1, sizeof(*m));
    if (m == NULL) {
        snprintf(err, errlen, "out of memory");
        return NULL;
    }
    m->ulog = ulog;
    m->store = store;
    m->sid = sid;
    m->auth = auth;
    m->durable_only = durable_only;
    m->log = log;
    snprintf(m->peers_path, sizeof(m->peers_path), "%s/peers", ulog_dir);
    pthread_mutex_init(&m->lock, NULL);
    pthread_mutex_init(&m->persist_lock, NULL);
    _load_peers(m);
    return m;
}

void
repl_sender_destroy(struct repl_sender *m)
{
    if (m == NULL) {
        return;
    }
    pthread_mutex_lock(&m->lock);
    m->stopping = true;
    for (struct sender *s = m->senders; s != NULL; s = s->next) {
        atomic_store(&s->stop, true);
        shutdown(s->io.fd, SHUT_RDWR); /* unblocks a send in progress */
    }
    pthread_mutex_unlock(&m->lock);
    _reap(m, true);
    _persist_peers(m, true);
    pthread_mutex_destroy(&m->lock);
    pthread_mutex_destroy(&m->persist_lock);
    free(m);
}
