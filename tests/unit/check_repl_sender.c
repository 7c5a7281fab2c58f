/*
 * Unit tests: serving the update log to peers (repl_sender.h).
 *
 * The peer is the test: it writes its "REPL ..." line into one end of a
 * socketpair, plays the worker by reading that line from the other end
 * and handing it to repl_sender_accept(), then reads the sender's answer
 * and frames. The log and database are the fixture's (engine_fixture.h),
 * written through the write path while the sender streams them. No
 * network: a socketpair is a local peer, as loopback is.
 */
#include <check.h>
#include <errno.h>
#include <inttypes.h>
#include <poll.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "engine_fixture.h"
#include "logrec.h"
#include "netio.h"
#include "record.h"
#include "repl_auth.h"
#include "repl_proto.h"
#include "repl_receiver.h"
#include "repl_sender.h"
#include "unit_main.h"
#include "util.h"

#define MASTER_SID 1 /* the fixture's engine */
#define PEER_SID 2
#define DEADLINE_MS 5000

static struct engine_fixture fx;
static struct repl_auth no_key;

static void
_setup(void)
{
    engine_fixture_setup(&fx);
    engine_fixture_open_store(&fx, "db.tch");
    engine_fixture_open_ulog(&fx, ULOG_FSYNC_NEVER, 1 << 20);
    engine_fixture_start(&fx);
    memset(&no_key, 0, sizeof(no_key));
}

static void
_teardown(void)
{
    engine_fixture_close(&fx);
    engine_fixture_teardown(&fx);
}

static struct repl_sender *
_sender(const struct repl_auth *auth)
{
    char dir[256];
    char err[256] = "";
    engine_fixture_path(&fx, "ulog", dir, sizeof(dir));
    struct repl_sender *m = repl_sender_create(fx.ulog, fx.store, dir,
                                               MASTER_SID, false, auth,
                                               &fx.log, err, sizeof(err));
    ck_assert_msg(m != NULL, "%s", err);
    repl_sender_set_engine(m, &fx.eng);
    return m;
}

/* The test's end of one replication connection. */
struct peer {
    int fd;
    uint8_t buf[1 << 16];
    size_t have;
    size_t used; /* bytes of the last frame returned */
};

/*
 * Plays the worker: reads the "REPL ..." line that arrived on `fd` and
 * hands the connection to the sender. Returns repl_sender_accept()'s.
 */
static int
_hand_over(struct repl_sender *m, int fd)
{
    char line[REPL_LINE_MAX];
    long n = netio_read_line(fd, line, sizeof(line), DEADLINE_MS);
    ck_assert_int_ge(n, 5);
    ck_assert(strncmp(line, "REPL ", 5) == 0);
    return repl_sender_accept(m, fd, NULL, line + 5, (size_t)n - 5);
}

/*
 * Connects a peer announcing `sid`, `after` and `flags` (`version` as
 * given) and returns its answer line in `line`. The sender owns the other
 * end if it accepted it.
 */
static void
_connect_as(struct repl_sender *m, struct peer *p, uint32_t version,
            uint32_t sid, uint64_t after, uint32_t flags, char *line,
            size_t cap)
{
    int fds[2];
    ck_assert_int_eq(socketpair(AF_UNIX, SOCK_STREAM, 0, fds), 0);
    memset(p, 0, sizeof(*p));
    p->fd = fds[1];
    struct repl_hello h = {version, sid, after, flags, ""};
    char hello[REPL_LINE_MAX];
    ck_assert_int_eq(repl_auth_nonce(h.nonce), 0);
    int n = repl_hello_format(&h, hello, sizeof(hello));
    ck_assert_int_gt(n, 0);
    ck_assert_int_eq(netio_send_all(p->fd, hello, (size_t)n, DEADLINE_MS), 0);
    if (_hand_over(m, fds[0]) != 0) {
        close(fds[0]);
    }
    ck_assert_int_ge(netio_read_line(p->fd, line, cap, DEADLINE_MS), 0);
}

static void
_connect(struct repl_sender *m, struct peer *p, uint32_t sid, uint64_t after,
         uint32_t flags, char *line, size_t cap)
{
    _connect_as(m, p, REPL_VERSION, sid, after, flags, line, cap);
}

/* The next frame from the sender, or false at its end or the deadline. */
static bool
_next_frame(struct peer *p, struct repl_frame *f)
{
    memmove(p->buf, p->buf + p->used, p->have - p->used);
    p->have -= p->used;
    p->used = 0;
    uint64_t deadline = util_mono_ms() + DEADLINE_MS;
    for (;;) {
        enum repl_status st = repl_frame_decode(p->buf, p->have, f);
        ck_assert_int_ne(st, REPL_CORRUPT);
        if (st == REPL_OK) {
            p->used = f->len;
            return true;
        }
        uint64_t now = util_mono_ms();
        if (now >= deadline ||
            netio_wait_readable(p->fd, (int)(deadline - now)) <= 0) {
            return false;
        }
        ssize_t n = recv(p->fd, p->buf + p->have, sizeof(p->buf) - p->have,
                         0);
        if (n <= 0) {
            return false;
        }
        p->have += (size_t)n;
    }
}

/* The next frame that is not a heartbeat. */
static bool
_next_data(struct peer *p, struct repl_frame *f)
{
    while (_next_frame(p, f)) {
        if (f->type != REPL_FRAME_HEARTBEAT) {
            return true;
        }
    }
    return false;
}

/* Reads records up to the first heartbeat; returns their keys. */
static void
_records_until_heartbeat(struct peer *p, char *keys, size_t cap,
                         struct repl_frame *hb)
{
    size_t n = 0;
    keys[0] = '\0';
    struct repl_frame f;
    while (_next_frame(p, &f)) {
        if (f.type == REPL_FRAME_HEARTBEAT) {
            *hb = f;
            return;
        }
        ck_assert_int_eq(f.type, REPL_FRAME_RECORD);
        n += (size_t)snprintf(keys + n, cap - n, "%s%.*s", n > 0 ? "," : "",
                              (int)f.rec.nkey, f.rec.key);
        ck_assert_uint_lt(n, cap);
    }
    ck_abort_msg("no heartbeat after %s", keys);
}

static void
_close(struct peer *p)
{
    close(p->fd);
}

/* Stages a change that originated at server `sid`, as a standby does. */
static void
_put_from(const char *key, const char *value, uint32_t sid, uint64_t lsn)
{
    struct record_meta meta = {.kind = RECORD_VALUE, .cas = lsn, .ts = lsn,
                               .sid = sid};
    uint8_t rec[256];
    uint8_t env[RECORD_HEADER_MAX];
    size_t elen = record_encode(&meta, env);
    size_t vlen = strlen(value);
    uint8_t *pl = logrec_begin(rec, LOGREC_PUT, sid, key, strlen(key),
                               elen + vlen);
    memcpy(pl, env, elen);
    memcpy(pl + elen, value, vlen);
    logrec_seal(rec, lsn, 1);
    struct logrec r;
    ck_assert_int_eq(logrec_decode(rec, logrec_size(strlen(key), elen + vlen),
                                   &r),
                     LOGREC_OK);
    bool applied = false;
    ck_assert_int_eq(txn_stage_replicated(&fx.batch, &r, &applied), TXN_OK);
    ck_assert_int_eq(txn_commit(&fx.batch), TXN_OK);
    ck_assert(applied);
}

/* Waits (with a deadline) until the sender's acknowledged lsn is `want`. */
static void
_await_acked(struct repl_sender *m, uint64_t want)
{
    uint64_t deadline = util_mono_ms() + DEADLINE_MS;
    while (repl_sender_acked(m) != want && util_mono_ms() < deadline) {
        usleep(1000);
    }
    ck_assert_uint_eq(repl_sender_acked(m), want);
}

/* Waits until `n` peers are known and peer `sid` is connected or not. */
static void
_await_peer(struct repl_sender *m, uint32_t sid, bool connected,
            struct repl_peer_stats *out)
{
    uint64_t deadline = util_mono_ms() + DEADLINE_MS;
    for (;;) {
        struct repl_peer_stats st[REPL_MAX_PEERS];
        int n = repl_sender_stats(m, st, REPL_MAX_PEERS);
        for (int i = 0; i < n; i++) {
            if (st[i].sid == sid && st[i].connected == connected) {
                *out = st[i];
                return;
            }
        }
        ck_assert_msg(util_mono_ms() < deadline, "peer %u not %s", sid,
                      connected ? "connected" : "gone");
        usleep(1000);
    }
}

/* ---------------------------------------------------- refusals */

START_TEST(test_bad_request_refused)
{
    struct repl_sender *m = _sender(&no_key);
    int fds[2];
    ck_assert_int_eq(socketpair(AF_UNIX, SOCK_STREAM, 0, fds), 0);
    const char *junk = "1 2 three 0";
    ck_assert_int_eq(repl_sender_accept(m, fds[0], NULL, junk, strlen(junk)),
                     -1);
    char line[REPL_LINE_MAX];
    ck_assert_int_ge(netio_read_line(fds[1], line, sizeof(line), DEADLINE_MS),
                     0);
    ck_assert_str_eq(line, "REPL ERROR bad request");
    close(fds[0]);
    close(fds[1]);
    ck_assert_int_eq(repl_sender_stats(m, NULL, 0), 0);
    repl_sender_destroy(m);
}
END_TEST

START_TEST(test_unsupported_version_refused)
{
    struct repl_sender *m = _sender(&no_key);
    struct peer p;
    char line[REPL_LINE_MAX];
    _connect_as(m, &p, REPL_VERSION + 1, PEER_SID, 0, 0, line, sizeof(line));
    ck_assert_str_eq(line, "REPL ERROR unsupported version 2");
    struct repl_frame f;
    ck_assert(!_next_frame(&p, &f)); /* and the connection ends */
    _close(&p);
    struct repl_peer_stats st;
    ck_assert_int_eq(repl_sender_stats(m, &st, 1), 0);
    repl_sender_destroy(m);
}
END_TEST

START_TEST(test_own_server_id_refused)
{
    struct repl_sender *m = _sender(&no_key);
    struct peer p;
    char line[REPL_LINE_MAX];
    _connect(m, &p, MASTER_SID, 0, 0, line, sizeof(line));
    ck_assert_str_eq(line, "REPL ERROR the peer has this server's id 1");
    struct repl_frame f;
    ck_assert(!_next_frame(&p, &f));
    _close(&p);
    repl_sender_destroy(m);
}
END_TEST

START_TEST(test_too_many_peers_refused)
{
    struct repl_sender *m = _sender(&no_key);
    struct peer *p = calloc(REPL_MAX_PEERS + 1, sizeof(*p));
    ck_assert_ptr_nonnull(p);
    char line[REPL_LINE_MAX];
    for (int i = 0; i < REPL_MAX_PEERS; i++) {
        _connect(m, &p[i], 10 + (uint32_t)i, 0, 0, line, sizeof(line));
        ck_assert_str_eq(line, "REPL OK 1");
    }
    _connect(m, &p[REPL_MAX_PEERS], 100, 0, 0, line, sizeof(line));
    ck_assert_str_eq(line, "REPL ERROR too many peers (16)");
    struct repl_peer_stats st[REPL_MAX_PEERS + 1];
    ck_assert_int_eq(repl_sender_stats(m, st, REPL_MAX_PEERS + 1),
                     REPL_MAX_PEERS);
    repl_sender_destroy(m);
    for (int i = 0; i <= REPL_MAX_PEERS; i++) {
        _close(&p[i]);
    }
    free(p);
}
END_TEST

START_TEST(test_position_gone_without_resync_refused)
{
    engine_fixture_put(&fx, "a", "1", 0);
    uint64_t end;
    uint64_t end_seq;
    ulog_position(fx.ulog, &end, &end_seq);
    struct repl_sender *m = _sender(&no_key);
    struct peer p;
    char line[REPL_LINE_MAX];
    /* A position this log never reached: it cannot stream from it. */
    _connect(m, &p, PEER_SID, end + 1000, 0, line, sizeof(line));
    ck_assert_str_eq(line, "REPL ERROR position 0 is no longer kept");
    _close(&p);
    repl_sender_destroy(m);
}
END_TEST

/* ------------------------------------------------ authentication */

struct standby_run {
    int fd;
    const struct repl_auth *auth;
    enum repl_receiver_hs hs;
    char line[REPL_LINE_MAX];
};

static void *
_standby_main(void *arg)
{
    struct standby_run *r = arg;
    struct netio_stream io;
    netio_stream_init(&io, r->fd, NULL);
    struct repl_hello h = {REPL_VERSION, PEER_SID, 0, 0, ""};
    r->hs = repl_receiver_handshake(&io, &h, r->auth, DEADLINE_MS, r->line,
                                    sizeof(r->line));
    netio_stream_deinit(&io);
    return NULL;
}

/* A standby holding `standby` opens a session with a sender holding
 * `master`'s key; returns how its handshake went. */
static enum repl_receiver_hs
_handshake(const struct repl_auth *master, const struct repl_auth *standby,
           char *line, size_t cap)
{
    struct repl_sender *m = _sender(master);
    int fds[2];
    ck_assert_int_eq(socketpair(AF_UNIX, SOCK_STREAM, 0, fds), 0);
    struct standby_run r = {fds[1], standby, REPL_RECEIVER_HS_EIO, ""};
    pthread_t t;
    ck_assert_int_eq(pthread_create(&t, NULL, _standby_main, &r), 0);
    if (_hand_over(m, fds[0]) != 0) {
        close(fds[0]);
    }
    pthread_join(t, NULL);
    close(fds[1]); /* the standby gives up or is done */
    repl_sender_destroy(m);
    snprintf(line, cap, "%s", r.line);
    return r.hs;
}

START_TEST(test_auth_same_key_admitted_others_refused)
{
    struct repl_auth key;
    memset(&key, 0, sizeof(key));
    key.enabled = true;
    memcpy(key.key, "a shared replication key", 24);
    key.klen = 24;
    struct repl_auth other = key;
    other.key[0] = 'A';
    char line[REPL_LINE_MAX];

    ck_assert_int_eq(_handshake(&key, &key, line, sizeof(line)),
                     REPL_RECEIVER_HS_OK);
    ck_assert_str_eq(line, "REPL OK 1");
    /* The master proves itself first: a standby with another key sees a
     * wrong proof and gives up before sending its own. */
    ck_assert_int_eq(_handshake(&key, &other, line, sizeof(line)),
                     REPL_RECEIVER_HS_BADPROOF);
    ck_assert_int_eq(_handshake(&key, &no_key, line, sizeof(line)),
                     REPL_RECEIVER_HS_NEEDKEY);
    /* A master without a key is refused by a standby holding one. */
    ck_assert_int_eq(_handshake(&no_key, &key, line, sizeof(line)),
                     REPL_RECEIVER_HS_NOPROOF);
    /* Without keys on either side, a local peer is admitted. */
    ck_assert_int_eq(_handshake(&no_key, &no_key, line, sizeof(line)),
                     REPL_RECEIVER_HS_OK);
    ck_assert_str_eq(line, "REPL OK 1");
}
END_TEST

START_TEST(test_auth_wrong_proof_refused)
{
    struct repl_auth key;
    memset(&key, 0, sizeof(key));
    key.enabled = true;
    memcpy(key.key, "a shared replication key", 24);
    key.klen = 24;
    struct repl_sender *m = _sender(&key);
    struct peer p;
    char line[REPL_LINE_MAX];
    _connect(m, &p, PEER_SID, 0, 0, line, sizeof(line));
    ck_assert(strncmp(line, "REPL CHALLENGE ", 15) == 0);
    char answer[REPL_LINE_MAX];
    snprintf(answer, sizeof(answer), "REPL AUTH %0*d\r\n", REPL_PROOF_HEX, 0);
    ck_assert_int_eq(netio_send_all(p.fd, answer, strlen(answer), 1000), 0);
    ck_assert_int_ge(netio_read_line(p.fd, line, sizeof(line), DEADLINE_MS),
                     0);
    ck_assert_str_eq(line, "REPL ERROR authentication failed");
    struct repl_frame f;
    ck_assert(!_next_frame(&p, &f));
    /* Refused before it became a peer: nothing is held back for it. */
    ck_assert_uint_eq(repl_sender_acked(m), UINT64_MAX);
    _close(&p);
    repl_sender_destroy(m);
}
END_TEST

/* ------------------------------------------------------ streaming */

START_TEST(test_streams_the_log_never_back_to_its_origin)
{
    engine_fixture_put(&fx, "a", "1", 0);
    engine_fixture_put(&fx, "b", "2", 0);
    _put_from("p", "from the peer", PEER_SID, 1000);
    engine_fixture_put(&fx, "c", "3", 0);
    uint64_t end;
    uint64_t end_seq;
    ulog_position(fx.ulog, &end, &end_seq);

    struct repl_sender *m = _sender(&no_key);
    struct peer p;
    char line[REPL_LINE_MAX];
    _connect(m, &p, PEER_SID, 0, 0, line, sizeof(line));
    ck_assert_str_eq(line, "REPL OK 1");
    char keys[256];
    struct repl_frame hb;
    _records_until_heartbeat(&p, keys, sizeof(keys), &hb);
    ck_assert_str_eq(keys, "a,b,c");
    /* The heartbeat names the log's end, and the stream position counts
     * the record skipped because it came from the peer. */
    ck_assert_uint_eq(hb.lsn, end);
    ck_assert_uint_eq(hb.seq, end_seq);
    ck_assert_uint_eq(hb.pos_lsn, end);
    ck_assert_uint_eq(hb.pos_seq, end_seq);
    ck_assert_uint_gt(hb.now_us, 0);

    /* A write made while the peer follows reaches it. */
    engine_fixture_put(&fx, "d", "4", 0);
    struct repl_frame f;
    ck_assert(_next_data(&p, &f));
    ck_assert_int_eq(f.type, REPL_FRAME_RECORD);
    ck_assert_uint_eq(f.rec.nkey, 1);
    ck_assert(f.rec.key[0] == 'd');
    ck_assert_uint_eq(f.rec.sid, MASTER_SID);
    ck_assert_uint_gt(f.rec.lsn, end);

    struct repl_peer_stats st;
    _await_peer(m, PEER_SID, true, &st);
    ck_assert_uint_eq(st.sent, 4);
    ck_assert_uint_eq(st.resyncs, 0);
    _close(&p);
    _await_peer(m, PEER_SID, false, &st);
    repl_sender_destroy(m);
}
END_TEST

START_TEST(test_streams_from_the_asked_position)
{
    engine_fixture_put(&fx, "a", "1", 0);
    uint64_t after;
    uint64_t seq;
    ulog_position(fx.ulog, &after, &seq);
    engine_fixture_put(&fx, "b", "2", 0);
    engine_fixture_put(&fx, "c", "3", 0);
    struct repl_sender *m = _sender(&no_key);
    struct peer p;
    char line[REPL_LINE_MAX];
    _connect(m, &p, PEER_SID, after, 0, line, sizeof(line));
    ck_assert_str_eq(line, "REPL OK 1");
    char keys[256];
    struct repl_frame hb;
    _records_until_heartbeat(&p, keys, sizeof(keys), &hb);
    ck_assert_str_eq(keys, "b,c");
    _close(&p);
    repl_sender_destroy(m);
}
END_TEST

START_TEST(test_own_records_sent_back_when_asked_r6)
{
    engine_fixture_put(&fx, "a", "1", 0);
    _put_from("p", "from the peer", PEER_SID, 1000);
    engine_fixture_put(&fx, "b", "2", 0);
    struct repl_sender *m = _sender(&no_key);
    struct peer p;
    char line[REPL_LINE_MAX];
    _connect(m, &p, PEER_SID, 0, REPL_FLAG_OWN, line, sizeof(line));
    ck_assert_str_eq(line, "REPL OK 1");
    char keys[256];
    struct repl_frame hb;
    _records_until_heartbeat(&p, keys, sizeof(keys), &hb);
    ck_assert_str_eq(keys, "a,p,b");
    _close(&p);

    /* Its records after the session began are not sent back. */
    _connect(m, &p, PEER_SID, 0, REPL_FLAG_OWN, line, sizeof(line));
    _records_until_heartbeat(&p, keys, sizeof(keys), &hb);
    ck_assert_str_eq(keys, "a,p,b");
    _put_from("q", "later", PEER_SID, 2000);
    engine_fixture_put(&fx, "c", "3", 0);
    struct repl_frame f;
    ck_assert(_next_data(&p, &f));
    ck_assert(f.type == REPL_FRAME_RECORD && f.rec.key[0] == 'c');
    _close(&p);
    repl_sender_destroy(m);
}
END_TEST

START_TEST(test_heartbeats_while_idle)
{
    engine_fixture_put(&fx, "a", "1", 0);
    uint64_t end;
    uint64_t end_seq;
    ulog_position(fx.ulog, &end, &end_seq);
    struct repl_sender *m = _sender(&no_key);
    struct peer p;
    char line[REPL_LINE_MAX];
    _connect(m, &p, PEER_SID, end, 0, line, sizeof(line));
    ck_assert_str_eq(line, "REPL OK 1");
    /* Nothing to send: heartbeats keep coming, each with the log's end,
     * so the peer's lag stays honest. */
    uint64_t last_now = 0;
    for (int i = 0; i < 3; i++) {
        struct repl_frame f;
        ck_assert(_next_frame(&p, &f));
        ck_assert_int_eq(f.type, REPL_FRAME_HEARTBEAT);
        ck_assert_uint_eq(f.lsn, end);
        ck_assert_uint_eq(f.pos_lsn, end);
        ck_assert_uint_ge(f.now_us, last_now);
        last_now = f.now_us;
    }
    _close(&p);
    repl_sender_destroy(m);
}
END_TEST

START_TEST(test_acks_hold_back_removal_and_persist)
{
    engine_fixture_put(&fx, "a", "1", 0);
    uint64_t end;
    uint64_t end_seq;
    ulog_position(fx.ulog, &end, &end_seq);
    struct repl_sender *m = _sender(&no_key);
    ck_assert_uint_eq(repl_sender_acked(m), UINT64_MAX); /* no peer */
    struct peer p;
    char line[REPL_LINE_MAX];
    _connect(m, &p, PEER_SID, 7, 0, line, sizeof(line));
    ck_assert_str_eq(line, "REPL OK 1");
    /* A new peer holds back what it asked for, no more. */
    _await_acked(m, 7);

    uint8_t ack[REPL_ACK_LEN];
    repl_encode_ack(ack, end, end_seq);
    ck_assert_int_eq(netio_send_all(p.fd, ack, sizeof(ack), 1000), 0);
    _await_acked(m, end);
    /* An older acknowledgement moves nothing back. */
    repl_encode_ack(ack, 8, 1);
    ck_assert_int_eq(netio_send_all(p.fd, ack, sizeof(ack), 1000), 0);
    struct repl_peer_stats st;
    _await_peer(m, PEER_SID, true, &st);
    ck_assert_uint_eq(repl_sender_acked(m), end);

    _close(&p);
    _await_peer(m, PEER_SID, false, &st);
    ck_assert_uint_eq(st.acked_lsn, end);
    ck_assert_uint_eq(st.acked_seq, end_seq);
    /* A peer that has gone still holds back what it has not
     * acknowledged: its position is kept across a restart. */
    ck_assert_uint_eq(repl_sender_acked(m), end);
    repl_sender_destroy(m);
    m = _sender(&no_key);
    ck_assert_uint_eq(repl_sender_acked(m), end);
    ck_assert_int_eq(repl_sender_stats(m, &st, 1), 1);
    ck_assert_uint_eq(st.sid, PEER_SID);
    ck_assert(!st.connected);
    repl_sender_destroy(m);
}
END_TEST

START_TEST(test_garbage_from_the_peer_ends_the_session)
{
    struct repl_sender *m = _sender(&no_key);
    struct peer p;
    char line[REPL_LINE_MAX];
    _connect(m, &p, PEER_SID, 0, 0, line, sizeof(line));
    ck_assert_str_eq(line, "REPL OK 1");
    /* A heartbeat is not for the master to receive. */
    uint8_t hb[REPL_HEARTBEAT_LEN];
    repl_encode_heartbeat(hb, 1, 1, 1, 1, 1);
    ck_assert_int_eq(netio_send_all(p.fd, hb, sizeof(hb), 1000), 0);
    struct repl_peer_stats st;
    _await_peer(m, PEER_SID, false, &st);
    _close(&p);
    repl_sender_destroy(m);
}
END_TEST

/* ------------------------------------------------ snapshots */

/* True if the comma-separated `keys` hold `key`. */
static bool
_has_key(const char *keys, const char *key)
{
    char all[300];
    char one[64];
    snprintf(all, sizeof(all), ",%s,", keys);
    snprintf(one, sizeof(one), ",%s,", key);
    return strstr(all, one) != NULL;
}

/* Reads a snapshot: returns the items' keys, and its lsn and count. */
static void
_read_snapshot(struct peer *p, uint64_t *lsn, char *keys, size_t cap,
               int *flush_records)
{
    struct repl_frame f;
    ck_assert(_next_data(p, &f));
    ck_assert_int_eq(f.type, REPL_FRAME_SNAP_BEGIN);
    *lsn = f.lsn;
    *flush_records = 0;
    int items = 0;
    size_t n = 0;
    keys[0] = '\0';
    for (;;) {
        ck_assert(_next_data(p, &f));
        if (f.type == REPL_FRAME_SNAP_END) {
            ck_assert_uint_eq(f.count, (uint64_t)items);
            return;
        }
        if (f.type == REPL_FRAME_RECORD) {
            /* R7: the flush_all state, right after SNAP_BEGIN. */
            ck_assert_int_eq(f.rec.op, LOGREC_FLUSH);
            ck_assert_int_eq(items, 0);
            ck_assert_uint_eq(f.rec.lsn, *lsn);
            ck_assert_uint_eq(f.rec.seq, 0);
            (*flush_records)++;
            continue;
        }
        ck_assert_int_eq(f.type, REPL_FRAME_SNAP_ITEM);
        struct record_meta meta;
        const uint8_t *v;
        size_t vlen;
        ck_assert_int_eq(record_decode(f.value, f.vlen, &meta, &v, &vlen),
                         RECORD_OK);
        items++;
        n += (size_t)snprintf(keys + n, cap - n, "%s%.*s", n > 0 ? "," : "",
                              (int)f.nkey, f.key);
        ck_assert_uint_lt(n, cap);
    }
}

START_TEST(test_resync_snapshot_then_stream_r1)
{
    engine_fixture_put(&fx, "a", "1", 0);
    _put_from("p", "from the peer", PEER_SID, 1000);
    uint64_t end;
    uint64_t end_seq;
    ulog_position(fx.ulog, &end, &end_seq);
    struct repl_sender *m = _sender(&no_key);
    struct peer p;
    char line[REPL_LINE_MAX];
    _connect(m, &p, PEER_SID, end + 1000, REPL_FLAG_ALLOW_RESYNC, line,
             sizeof(line));
    ck_assert_str_eq(line, "REPL RESYNC 1");
    uint64_t lsn;
    char keys[256];
    int flushes;
    _read_snapshot(&p, &lsn, keys, sizeof(keys), &flushes);
    /* R1: every change logged up to the snapshot's lsn is in it, the
     * peer's own included (the whole database). */
    ck_assert_uint_ge(lsn, end);
    ck_assert(_has_key(keys, "a") && _has_key(keys, "p"));
    ck_assert_int_eq(flushes, 0); /* no flush_all was ever made */
    /* ... and the stream goes on after it. */
    engine_fixture_put(&fx, "b", "2", 0);
    struct repl_frame f;
    ck_assert(_next_data(&p, &f));
    ck_assert(f.type == REPL_FRAME_RECORD && f.rec.key[0] == 'b');
    ck_assert_uint_gt(f.rec.lsn, lsn);
    struct repl_peer_stats st;
    _await_peer(m, PEER_SID, true, &st);
    ck_assert_uint_eq(st.resyncs, 1);
    _close(&p);
    repl_sender_destroy(m);
}
END_TEST

START_TEST(test_snapshot_carries_flush_state_r7)
{
    engine_fixture_put(&fx, "old", "hidden", 0);
    ck_assert_int_eq(txn_flush_all(&fx.batch, 0), TXN_OK);
    engine_fixture_put(&fx, "new", "kept", 0);
    struct repl_sender *m = _sender(&no_key);
    struct peer p;
    char line[REPL_LINE_MAX];
    _connect(m, &p, PEER_SID, UINT64_MAX / 2, REPL_FLAG_ALLOW_RESYNC, line,
             sizeof(line));
    ck_assert_str_eq(line, "REPL RESYNC 1");
    uint64_t lsn;
    char keys[256];
    int flushes;
    _read_snapshot(&p, &lsn, keys, sizeof(keys), &flushes);
    ck_assert_int_eq(flushes, 1);
    /* R4: what the flush_all hides is left out. */
    ck_assert_str_eq(keys, "new");
    _close(&p);
    repl_sender_destroy(m);
}
END_TEST

START_TEST(test_backup_snapshot_records_then_end_r2_r3)
{
    engine_fixture_put(&fx, "a", "1", 0);
    engine_fixture_put(&fx, "b", "2", 0);
    uint64_t end;
    uint64_t end_seq;
    ulog_position(fx.ulog, &end, &end_seq);
    struct repl_sender *m = _sender(&no_key);
    struct peer p;
    char line[REPL_LINE_MAX];
    _connect(m, &p, REPL_BACKUP_SID, 0, REPL_FLAG_BACKUP, line, sizeof(line));
    ck_assert_str_eq(line, "REPL BACKUP 1");
    uint64_t lsn;
    char keys[256];
    int flushes;
    _read_snapshot(&p, &lsn, keys, sizeof(keys), &flushes);
    ck_assert(_has_key(keys, "a") && _has_key(keys, "b"));
    /* R2: the records after the snapshot up to P (none: it had all),
     * then one heartbeat naming P, then the end. */
    struct repl_frame f;
    ck_assert(_next_frame(&p, &f));
    ck_assert_int_eq(f.type, REPL_FRAME_HEARTBEAT);
    ck_assert_uint_eq(f.pos_lsn, end);
    ck_assert_uint_eq(f.pos_seq, end_seq);
    ck_assert(!_next_frame(&p, &f));
    _close(&p);
    /* R3: a backup is not a peer, and holds nothing back once gone. */
    struct repl_peer_stats st;
    ck_assert_int_eq(repl_sender_stats(m, &st, 1), 0);
    _await_acked(m, UINT64_MAX);
    repl_sender_destroy(m);
}
END_TEST

static Suite *
_suite(void)
{
    Suite *s = suite_create("repl_sender");
    TCase *tc = tcase_create("refusals");
    tcase_add_checked_fixture(tc, _setup, _teardown);
    tcase_set_timeout(tc, 30);
    tcase_add_test(tc, test_bad_request_refused);
    tcase_add_test(tc, test_unsupported_version_refused);
    tcase_add_test(tc, test_own_server_id_refused);
    tcase_add_test(tc, test_too_many_peers_refused);
    tcase_add_test(tc, test_position_gone_without_resync_refused);
    tcase_add_test(tc, test_auth_same_key_admitted_others_refused);
    tcase_add_test(tc, test_auth_wrong_proof_refused);
    suite_add_tcase(s, tc);

    tc = tcase_create("streaming");
    tcase_add_checked_fixture(tc, _setup, _teardown);
    tcase_set_timeout(tc, 30);
    tcase_add_test(tc, test_streams_the_log_never_back_to_its_origin);
    tcase_add_test(tc, test_streams_from_the_asked_position);
    tcase_add_test(tc, test_own_records_sent_back_when_asked_r6);
    tcase_add_test(tc, test_heartbeats_while_idle);
    tcase_add_test(tc, test_acks_hold_back_removal_and_persist);
    tcase_add_test(tc, test_garbage_from_the_peer_ends_the_session);
    suite_add_tcase(s, tc);

    tc = tcase_create("snapshots");
    tcase_add_checked_fixture(tc, _setup, _teardown);
    tcase_set_timeout(tc, 30);
    tcase_add_test(tc, test_resync_snapshot_then_stream_r1);
    tcase_add_test(tc, test_snapshot_carries_flush_state_r7);
    tcase_add_test(tc, test_backup_snapshot_records_then_end_r2_r3);
    suite_add_tcase(s, tc);
    return s;
}

TEST_MAIN(_suite)
