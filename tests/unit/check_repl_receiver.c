/*
 * Unit tests: the standby side of replication (repl_receiver.h).
 *
 * The master here is a script: its answer and frames are written in
 * advance into one end of a socketpair, the write side is shut, and
 * repl_receiver_follow() runs one session on the other end until it
 * reads the end of the stream. What the standby sent back (its hello,
 * ACK and WACK frames) is then read from the script's end. No network,
 * no threads of the test's own: the session runs on the test's thread.
 * The write path is the fixture's (engine_fixture.h) with an update log
 * under "never", so the standby logs what it applies.
 */
#include <check.h>
#include <errno.h>
#include <inttypes.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "buf.h"
#include "engine_fixture.h"
#include "logrec.h"
#include "netio.h"
#include "record.h"
#include "repl_auth.h"
#include "repl_proto.h"
#include "repl_receiver.h"
#include "unit_main.h"
#include "util.h"

#define MASTER_SID 2
#define STANDBY_SID 1 /* the fixture's engine */
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

/* What a scripted master sends, built up before the session runs. */
struct script {
    struct buf out;
    int fds[2]; /* [0] the standby's end, [1] the master's */
};

static void
_script_init(struct script *m)
{
    buf_init(&m->out);
    ck_assert_int_eq(socketpair(AF_UNIX, SOCK_STREAM, 0, m->fds), 0);
}

static void
_script_add(struct script *m, const void *p, size_t n)
{
    ck_assert(buf_append(&m->out, p, n, SIZE_MAX));
}

static void
_script_line(struct script *m, const char *line)
{
    _script_add(m, line, strlen(line));
}

/* A RECORD frame: key = value, written at master `sid` at `lsn`. */
static void
_script_record(struct script *m, const char *key, const char *value,
               uint32_t sid, uint64_t lsn, uint64_t seq)
{
    struct record_meta meta = {.kind = RECORD_VALUE, .cas = lsn, .ts = lsn,
                               .sid = sid};
    uint8_t env[RECORD_HEADER_MAX];
    size_t elen = record_encode(&meta, env);
    size_t vlen = strlen(value);
    size_t nkey = strlen(key);
    size_t rlen = logrec_size(nkey, elen + vlen);
    uint8_t *rec = malloc(rlen);
    ck_assert_ptr_nonnull(rec);
    uint8_t *p = logrec_begin(rec, LOGREC_PUT, sid, key, nkey, elen + vlen);
    memcpy(p, env, elen);
    memcpy(p + elen, value, vlen);
    logrec_seal(rec, lsn, seq);
    uint8_t hdr[REPL_FRAME_HEADER];
    repl_frame_header(hdr, REPL_FRAME_RECORD, rlen);
    _script_add(m, hdr, sizeof(hdr));
    _script_add(m, rec, rlen);
    free(rec);
}

/* A SNAP_ITEM frame: key = value as stored at `sid`, stamped `ts`. */
static void
_script_snap_item(struct script *m, const char *key, const char *value,
                  uint32_t sid, uint64_t ts)
{
    struct record_meta meta = {.kind = RECORD_VALUE, .cas = ts, .ts = ts,
                               .sid = sid};
    uint8_t stored[RECORD_HEADER_MAX + 64];
    size_t elen = record_encode(&meta, stored);
    size_t vlen = strlen(value);
    ck_assert_uint_le(elen + vlen, sizeof(stored));
    memcpy(stored + elen, value, vlen);
    uint8_t hdr[REPL_FRAME_HEADER + 2 + RECORD_KEY_MAX];
    size_t h = repl_encode_snap_item(hdr, key, strlen(key), elen + vlen);
    _script_add(m, hdr, h);
    _script_add(m, stored, elen + vlen);
}

static void
_script_u64(struct script *m, enum repl_frame_type type, uint64_t v)
{
    uint8_t frame[16];
    _script_add(m, frame, repl_encode_u64(frame, type, v));
}

static void
_script_heartbeat(struct script *m, uint64_t end_lsn, uint64_t end_seq,
                  uint64_t pos_lsn, uint64_t pos_seq)
{
    uint8_t hb[REPL_HEARTBEAT_LEN];
    _script_add(m, hb, repl_encode_heartbeat(hb, end_lsn, end_seq, pos_lsn,
                                             pos_seq, 12345));
}

/* What the standby sent back during the session. */
struct reply {
    struct repl_hello hello;
    int acks;
    int wacks;
    uint64_t ack_lsn; /* the last ACK's */
    uint64_t ack_seq;
    uint64_t wack_lsn;
    bool wack_before_ack; /* a WACK came before the first ACK */
};

struct follow_run {
    struct repl_receiver *s;
    int fd;
};

/* The session, on its own thread as on the receiver's; at its end the
 * script reads the end of the stream. */
static void *
_follow_main(void *arg)
{
    struct follow_run *r = arg;
    struct netio_stream io;
    netio_stream_init(&io, r->fd, NULL);
    repl_receiver_follow(r->s, &io);
    netio_stream_deinit(&io);
    shutdown(r->fd, SHUT_WR);
    return NULL;
}

/* Reads the standby's frames for up to `ms`; false at the stream's end. */
static bool
_collect(int fd, uint8_t *frames, size_t *have, size_t cap,
         struct reply *out, int ms)
{
    if (netio_wait_readable(fd, ms) <= 0) {
        return true;
    }
    ssize_t r = recv(fd, frames + *have, cap - *have, 0);
    if (r <= 0) {
        return false;
    }
    *have += (size_t)r;
    size_t off = 0;
    struct repl_frame f;
    while (repl_frame_decode(frames + off, *have - off, &f) == REPL_OK) {
        if (f.type == REPL_FRAME_ACK) {
            out->acks++;
            out->ack_lsn = f.lsn;
            out->ack_seq = f.seq;
        } else {
            ck_assert_int_eq(f.type, REPL_FRAME_WACK);
            out->wack_before_ack |= out->acks == 0 && out->wacks == 0;
            out->wacks++;
            out->wack_lsn = f.lsn;
        }
        off += f.len;
    }
    memmove(frames, frames + off, *have - off);
    *have -= off;
    return true;
}

/*
 * Runs one session against the script: reads the standby's hello, sends
 * the script, then waits (with a deadline) until the standby has received
 * `want_received` frames and acknowledged at least `want_ack`, and has
 * gone twice more round its loop (two more ACKs: everything sent is
 * applied and committed); or until the session ends by itself. Then it
 * closes the master's side and collects what the standby sent last.
 */
static void
_run(struct script *m, struct repl_receiver *s, struct reply *out,
     uint64_t want_received, uint64_t want_ack)
{
    struct follow_run fr = {s, m->fds[0]};
    pthread_t t;
    ck_assert_int_eq(pthread_create(&t, NULL, _follow_main, &fr), 0);

    memset(out, 0, sizeof(*out));
    char line[REPL_LINE_MAX];
    long n = netio_read_line(m->fds[1], line, sizeof(line), DEADLINE_MS);
    ck_assert_int_gt(n, 5);
    ck_assert_msg(repl_hello_parse(line + 5, (size_t)n - 5, &out->hello),
                  "%s", line);
    size_t len = buf_len(&m->out);
    ck_assert_uint_lt(len, 64 << 10); /* fits the socket's buffer */
    ck_assert_int_eq(netio_send_all(m->fds[1], buf_head(&m->out), len,
                                    DEADLINE_MS),
                     0);

    uint8_t frames[4096];
    size_t have = 0;
    uint64_t deadline = util_mono_ms() + DEADLINE_MS;
    bool open = true;
    int after = -1; /* ACKs seen once the condition held */
    while (open && after < 2) {
        ck_assert_msg(util_mono_ms() < deadline, "the standby got stuck");
        int acks = out->acks;
        open = _collect(m->fds[1], frames, &have, sizeof(frames), out, 20);
        if (after >= 0) {
            after += out->acks - acks;
            continue;
        }
        struct repl_receiver_stats st;
        repl_receiver_stats(s, &st);
        if (st.received >= want_received &&
            (want_ack == 0 || (out->acks > 0 && out->ack_lsn >= want_ack))) {
            while (open && netio_wait_readable(m->fds[1], 0) > 0) {
                open = _collect(m->fds[1], frames, &have, sizeof(frames),
                                out, 0);
            }
            after = 0;
        }
    }
    ck_assert_int_eq(shutdown(m->fds[1], SHUT_WR), 0);
    while (open) {
        open = _collect(m->fds[1], frames, &have, sizeof(frames), out,
                        DEADLINE_MS);
    }
    pthread_join(t, NULL);
    ck_assert_uint_eq(have, 0); /* nothing but whole frames */
    close(m->fds[0]);
    close(m->fds[1]);
    buf_deinit(&m->out);
}

static struct repl_receiver *
_receiver(const struct repl_auth *auth, bool own_back)
{
    struct repl_receiver_options o;
    char err[256] = "";
    memset(&o, 0, sizeof(o));
    snprintf(o.host, sizeof(o.host), "scripted-master");
    o.port = 1;
    o.sid = STANDBY_SID;
    engine_fixture_path(&fx, "rts", o.rts_path, sizeof(o.rts_path));
    o.scratch_cap = 4096;
    o.auth = auth;
    o.own_back = own_back;
    struct repl_receiver *s = repl_receiver_create(&o, &fx.eng, &fx.log, err,
                                                   sizeof(err));
    ck_assert_msg(s != NULL, "%s", err);
    return s;
}

static void
_write_rts(const char *text)
{
    char path[256];
    engine_fixture_path(&fx, "rts", path, sizeof(path));
    FILE *fp = fopen(path, "w");
    ck_assert_ptr_nonnull(fp);
    ck_assert_int_ge(fputs(text, fp), 0);
    ck_assert_int_eq(fclose(fp), 0);
}

static bool
_absent(const char *key)
{
    struct record_meta meta;
    char value[64];
    return !engine_fixture_stored(&fx, key, &meta, value, sizeof(value));
}

static void
_assert_value(const char *key, const char *want, uint32_t sid)
{
    struct record_meta meta;
    char value[64];
    ck_assert_msg(engine_fixture_stored(&fx, key, &meta, value,
                                        sizeof(value)),
                  "%s missing", key);
    ck_assert_str_eq(value, want);
    ck_assert_uint_eq(meta.sid, sid);
}

/* ------------------------------------------------------------- tests */

START_TEST(test_backoff_doubles_to_the_cap)
{
    unsigned b = REPL_RECEIVER_BACKOFF_MIN_MS;
    unsigned seen[16];
    int n = 0;
    while (n < 16) {
        seen[n++] = b;
        unsigned next = repl_receiver_next_backoff(b, false, false);
        ck_assert_uint_ge(next, b);
        ck_assert_uint_le(next, REPL_RECEIVER_BACKOFF_MAX_MS);
        b = next;
    }
    ck_assert_uint_eq(seen[0], 100);
    ck_assert_uint_eq(seen[1], 200);
    ck_assert_uint_eq(seen[5], 3200);
    ck_assert_uint_eq(seen[6], REPL_RECEIVER_BACKOFF_MAX_MS);
    ck_assert_uint_eq(seen[15], REPL_RECEIVER_BACKOFF_MAX_MS);
}
END_TEST

START_TEST(test_backoff_master_back_resets_soon_holds)
{
    /* The master connected back to us: reconnect quickly from then on. */
    ck_assert_uint_eq(repl_receiver_next_backoff(5000, false, true),
                      REPL_RECEIVER_BACKOFF_MIN_MS);
    ck_assert_uint_eq(repl_receiver_next_backoff(5000, true, true),
                      REPL_RECEIVER_BACKOFF_MIN_MS);
    /* Within the window after it came back, the backoff is not grown
     * (each retry waits the short pause instead). */
    ck_assert_uint_eq(repl_receiver_next_backoff(400, true, false), 400);
    ck_assert_uint_eq(repl_receiver_next_backoff(400, false, false), 800);
}
END_TEST

START_TEST(test_applies_stream_logs_it_and_acks_r8)
{
    struct repl_receiver *s = _receiver(&no_key, false);
    uint64_t lsn_before;
    uint64_t seq_before;
    ulog_position(fx.ulog, &lsn_before, &seq_before);
    ck_assert_int_eq(repl_receiver_first(s), REPL_RECEIVER_FIRST_PENDING);

    struct script m;
    _script_init(&m);
    _script_line(&m, "REPL OK 2\r\n");
    _script_record(&m, "a", "va", MASTER_SID, 1000, 1);
    _script_record(&m, "b", "vb", MASTER_SID, 2000, 2);
    _script_record(&m, "c", "vc", 9, 3000, 3); /* a third server's */
    _script_heartbeat(&m, 3000, 3, 3000, 3);
    struct reply rep;
    _run(&m, s, &rep, 3, 3000);

    /* The hello: this server, from the -rts position (none: 0), a
     * snapshot allowed, its own records not asked back. */
    ck_assert_uint_eq(rep.hello.version, REPL_VERSION);
    ck_assert_uint_eq(rep.hello.sid, STANDBY_SID);
    ck_assert_uint_eq(rep.hello.after, 0);
    ck_assert_uint_eq(rep.hello.flags, REPL_FLAG_ALLOW_RESYNC);

    /* Applied through the write path, origin kept. */
    _assert_value("a", "va", MASTER_SID);
    _assert_value("b", "vb", MASTER_SID);
    _assert_value("c", "vc", 9);
    /* ... and logged in this server's own log, with their origins. */
    uint64_t lsn_after;
    uint64_t seq_after;
    ulog_position(fx.ulog, &lsn_after, &seq_after);
    ck_assert_uint_eq(seq_after, seq_before + 3);
    ck_assert_uint_gt(lsn_after, lsn_before);

    /* R8: under "never" a record is durable once written, so the last
     * acknowledgement is the whole stream, and the -rts position too. */
    ck_assert_int_ge(rep.acks, 1);
    ck_assert_int_eq(rep.wacks, 0); /* not asked for (R5) */
    ck_assert_uint_eq(rep.ack_lsn, 3000);
    ck_assert_uint_eq(rep.ack_seq, 3);
    ck_assert_uint_eq(repl_receiver_applied(s), 3000);

    struct repl_receiver_stats st;
    repl_receiver_stats(s, &st);
    ck_assert(!st.connected); /* the session is over */
    ck_assert_uint_eq(st.master_sid, MASTER_SID);
    ck_assert_uint_eq(st.connects, 1);
    ck_assert_uint_eq(st.received, 3);
    ck_assert_uint_eq(st.applied, 3);
    ck_assert_uint_eq(st.master_lsn, 3000);
    ck_assert_uint_eq(st.lag_records, 0);
    ck_assert_uint_eq(st.resyncs, 0);
    /* Everything the master had at its heartbeat is applied. */
    ck_assert_int_eq(repl_receiver_first(s), REPL_RECEIVER_FIRST_CAUGHT_UP);
    repl_receiver_destroy(s);
}
END_TEST

START_TEST(test_older_change_loses_newer_wins)
{
    /* A local write newer than the master's copy stays (record_newer). */
    struct repl_receiver *s = _receiver(&no_key, false);
    engine_fixture_put(&fx, "k", "local", 0);

    struct script m;
    _script_init(&m);
    _script_line(&m, "REPL OK 2\r\n");
    _script_record(&m, "k", "old", MASTER_SID, 5, 1); /* stamped 5 us */
    _script_record(&m, "n", "new", MASTER_SID, 6, 2);
    struct reply rep;
    _run(&m, s, &rep, 2, 6);

    _assert_value("k", "local", STANDBY_SID);
    _assert_value("n", "new", MASTER_SID);
    struct repl_receiver_stats st;
    repl_receiver_stats(s, &st);
    ck_assert_uint_eq(st.received, 2);
    ck_assert_uint_eq(st.applied, 1);
    /* The losing record is still part of the acknowledged position. */
    ck_assert_uint_eq(rep.ack_lsn, 6);
    /* No heartbeat came: the first session did not catch up. */
    ck_assert_int_eq(repl_receiver_first(s), REPL_RECEIVER_FIRST_FAILED);
    repl_receiver_destroy(s);
}
END_TEST

START_TEST(test_resumes_from_the_rts_file)
{
    _write_rts("rts 4000 40\n");
    struct repl_receiver *s = _receiver(&no_key, false);
    ck_assert_uint_eq(repl_receiver_applied(s), 4000);

    struct script m;
    _script_init(&m);
    _script_line(&m, "REPL OK 2\r\n");
    _script_record(&m, "d", "vd", MASTER_SID, 5000, 41);
    struct reply rep;
    _run(&m, s, &rep, 1, 5000);
    ck_assert_uint_eq(rep.hello.after, 4000);
    ck_assert_uint_eq(rep.ack_lsn, 5000);
    ck_assert_uint_eq(rep.ack_seq, 41);
    repl_receiver_destroy(s);

    /* ttserver's -rts file: a bare number. */
    _write_rts("777\n");
    s = _receiver(&no_key, false);
    ck_assert_uint_eq(repl_receiver_applied(s), 777);
    repl_receiver_destroy(s);
}
END_TEST

START_TEST(test_corrupt_rts_file_refused)
{
    _write_rts("not a position\n");
    struct repl_receiver_options o;
    char err[256] = "";
    memset(&o, 0, sizeof(o));
    o.sid = STANDBY_SID;
    engine_fixture_path(&fx, "rts", o.rts_path, sizeof(o.rts_path));
    o.scratch_cap = 4096;
    o.auth = &no_key;
    ck_assert_ptr_null(repl_receiver_create(&o, &fx.eng, &fx.log, err,
                                            sizeof(err)));
    ck_assert_msg(strstr(err, "corrupt") != NULL, "%s", err);
}
END_TEST

START_TEST(test_acknowledged_position_never_goes_back_r8)
{
    /* A new session resumes below what was acknowledged (the master's
     * heartbeat says less): the position stays. */
    _write_rts("rts 9000 90\n");
    struct repl_receiver *s = _receiver(&no_key, false);
    struct script m;
    _script_init(&m);
    _script_line(&m, "REPL OK 2\r\n");
    _script_record(&m, "e", "ve", MASTER_SID, 100, 1);
    _script_heartbeat(&m, 100, 1, 100, 1);
    struct reply rep;
    _run(&m, s, &rep, 1, 0);
    _assert_value("e", "ve", MASTER_SID);
    ck_assert_uint_eq(repl_receiver_applied(s), 9000);
    ck_assert_uint_eq(rep.ack_lsn, 9000);
    repl_receiver_destroy(s);
}
END_TEST

START_TEST(test_resync_applies_a_snapshot_then_the_stream)
{
    engine_fixture_put(&fx, "stale", "x", 0);
    struct repl_receiver *s = _receiver(&no_key, false);
    struct script m;
    _script_init(&m);
    _script_line(&m, "REPL RESYNC 2\r\n");
    _script_u64(&m, REPL_FRAME_SNAP_BEGIN, 50000);
    _script_snap_item(&m, "s1", "one", MASTER_SID, 40000);
    _script_snap_item(&m, "s2", "two", 7, 41000);
    /* Inside a snapshot a heartbeat moves no position. */
    _script_heartbeat(&m, 60000, 6, 60000, 6);
    _script_u64(&m, REPL_FRAME_SNAP_END, 2);
    _script_record(&m, "s3", "three", MASTER_SID, 60000, 6);
    struct reply rep;
    _run(&m, s, &rep, 3, 60000);

    _assert_value("s1", "one", MASTER_SID);
    _assert_value("s2", "two", 7);
    _assert_value("s3", "three", MASTER_SID);
    struct repl_receiver_stats st;
    repl_receiver_stats(s, &st);
    ck_assert_uint_eq(st.resyncs, 1);
    ck_assert_uint_eq(st.received, 3);
    /* R1: the stream after SNAP_END goes on from the snapshot's lsn. */
    ck_assert_uint_eq(rep.ack_lsn, 60000);
    ck_assert_uint_eq(repl_receiver_applied(s), 60000);
    repl_receiver_destroy(s);
}
END_TEST

START_TEST(test_snapshot_cut_short_is_not_acknowledged)
{
    /* The master goes away in the middle of a snapshot: what arrived is
     * applied, but the position stays where it was (R1, R8). */
    _write_rts("rts 300 3\n");
    struct repl_receiver *s = _receiver(&no_key, false);
    struct script m;
    _script_init(&m);
    _script_line(&m, "REPL RESYNC 2\r\n");
    _script_u64(&m, REPL_FRAME_SNAP_BEGIN, 50000);
    _script_snap_item(&m, "half", "way", MASTER_SID, 40000);
    struct reply rep;
    _run(&m, s, &rep, 1, 0);
    _assert_value("half", "way", MASTER_SID);
    ck_assert_uint_eq(repl_receiver_applied(s), 300);
    ck_assert_uint_le(rep.ack_lsn, 300);
    repl_receiver_destroy(s);
}
END_TEST

START_TEST(test_wack_reported_before_ack_r5)
{
    struct repl_receiver *s = _receiver(&no_key, false);
    struct script m;
    _script_init(&m);
    _script_line(&m, "REPL OK 2" REPL_WACK_WORD "\r\n");
    _script_record(&m, "w", "vw", MASTER_SID, 7000, 1);
    struct reply rep;
    _run(&m, s, &rep, 1, 7000);
    ck_assert_int_ge(rep.wacks, 1);
    ck_assert(rep.wack_before_ack);
    ck_assert_uint_eq(rep.wack_lsn, 7000);
    ck_assert_uint_eq(rep.ack_lsn, 7000);
    struct repl_receiver_stats st;
    repl_receiver_stats(s, &st);
    ck_assert_uint_ge(st.wacks, 1);
    repl_receiver_destroy(s);
}
END_TEST

START_TEST(test_own_records_asked_back_until_caught_up_r6)
{
    struct repl_receiver *s = _receiver(&no_key, true);
    struct script m;
    _script_init(&m);
    _script_line(&m, "REPL OK 2\r\n");
    _script_heartbeat(&m, 10, 1, 10, 1);
    struct reply rep;
    _run(&m, s, &rep, 0, 0);
    ck_assert_uint_eq(rep.hello.flags,
                      REPL_FLAG_ALLOW_RESYNC | REPL_FLAG_OWN);

    /* Caught up once (a heartbeat): the next session does not ask. */
    _script_init(&m);
    _script_line(&m, "REPL OK 2\r\n");
    _run(&m, s, &rep, 0, 0);
    ck_assert_uint_eq(rep.hello.flags, REPL_FLAG_ALLOW_RESYNC);
    repl_receiver_destroy(s);
}
END_TEST

START_TEST(test_refusal_ends_the_session)
{
    struct repl_receiver *s = _receiver(&no_key, false);
    struct script m;
    _script_init(&m);
    _script_line(&m, "REPL ERROR position 0 is no longer kept\r\n");
    _script_record(&m, "never", "applied", MASTER_SID, 100, 1);
    struct reply rep;
    _run(&m, s, &rep, 0, 0);
    ck_assert(_absent("never"));
    ck_assert_int_eq(rep.acks, 0);
    struct repl_receiver_stats st;
    repl_receiver_stats(s, &st);
    ck_assert_uint_eq(st.connects, 0);
    ck_assert_int_eq(repl_receiver_first(s), REPL_RECEIVER_FIRST_FAILED);
    repl_receiver_destroy(s);
}
END_TEST

START_TEST(test_garbage_ends_the_session_unapplied)
{
    struct repl_receiver *s = _receiver(&no_key, false);
    struct script m;
    _script_init(&m);
    _script_line(&m, "REPL OK 2\r\n");
    _script_record(&m, "good", "g", MASTER_SID, 100, 1);
    /* A record frame whose record fails its checksum. */
    struct script bad;
    _script_init(&bad);
    _script_record(&bad, "bad", "b", MASTER_SID, 200, 2);
    uint8_t *raw = (uint8_t *)buf_head(&bad.out);
    raw[buf_len(&bad.out) - 1] ^= 0x55;
    _script_add(&m, raw, buf_len(&bad.out));
    buf_deinit(&bad.out);
    close(bad.fds[0]);
    close(bad.fds[1]);
    struct reply rep;
    _run(&m, s, &rep, 0, 0);
    ck_assert(_absent("bad"));
    /* Frames come in whole reads: the good one may or may not have been
     * applied before the garbage was seen, but never acknowledged past
     * what was applied. */
    ck_assert_uint_le(repl_receiver_applied(s), 100);
    repl_receiver_destroy(s);
}
END_TEST

START_TEST(test_standby_handshake_refusals)
{
    struct repl_auth key;
    memset(&key, 0, sizeof(key));
    key.enabled = true;
    memcpy(key.key, "0123456789abcdef0123", 20);
    key.klen = 20;
    struct repl_auth other = key;
    other.key[0] = 'X';
    char snonce[REPL_NONCE_HEX + 1];
    char proof[REPL_PROOF_HEX + 1];
    char line[REPL_LINE_MAX];
    struct {
        const struct repl_auth *standby;
        const struct repl_auth *master; /* NULL: answers without a proof */
        enum repl_receiver_hs want;
    } cases[] = {
        {&key, NULL, REPL_RECEIVER_HS_NOPROOF},
        {&no_key, &key, REPL_RECEIVER_HS_NEEDKEY},
        {&key, &other, REPL_RECEIVER_HS_BADPROOF},
        {&no_key, NULL, REPL_RECEIVER_HS_OK},
    };
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        int fds[2];
        ck_assert_int_eq(socketpair(AF_UNIX, SOCK_STREAM, 0, fds), 0);
        /* The proof cannot know the standby's nonce yet: any proof from
         * a master without the standby's key is wrong. */
        if (cases[i].master != NULL) {
            ck_assert_int_eq(repl_auth_nonce(snonce), 0);
            repl_auth_proof(cases[i].master, REPL_AUTH_MASTER,
                            "00000000000000000000000000000000", snonce,
                            proof);
            snprintf(line, sizeof(line), "REPL CHALLENGE %s %s\r\n", snonce,
                     proof);
        } else {
            snprintf(line, sizeof(line), "REPL OK 2\r\n");
        }
        ck_assert_int_eq(netio_send_all(fds[1], line, strlen(line), 1000), 0);
        struct netio_stream io;
        netio_stream_init(&io, fds[0], NULL);
        struct repl_hello h = {REPL_VERSION, STANDBY_SID, 0, 0, ""};
        ck_assert_int_eq(repl_receiver_handshake(&io, &h, cases[i].standby,
                                                 1000, line, sizeof(line)),
                         cases[i].want);
        if (cases[i].want == REPL_RECEIVER_HS_OK) {
            ck_assert_str_eq(line, "REPL OK 2");
        }
        /* The standby's hello went out with a fresh nonce. */
        ck_assert(repl_auth_nonce_valid(h.nonce, strlen(h.nonce)));
        netio_stream_deinit(&io);
        close(fds[0]);
        close(fds[1]);
    }
}
END_TEST

START_TEST(test_handshake_silent_master_is_eio)
{
    int fds[2];
    char line[REPL_LINE_MAX];
    ck_assert_int_eq(socketpair(AF_UNIX, SOCK_STREAM, 0, fds), 0);
    ck_assert_int_eq(shutdown(fds[1], SHUT_WR), 0);
    struct netio_stream io;
    netio_stream_init(&io, fds[0], NULL);
    struct repl_hello h = {REPL_VERSION, STANDBY_SID, 0, 0, ""};
    ck_assert_int_eq(repl_receiver_handshake(&io, &h, &no_key, 1000, line,
                                             sizeof(line)),
                     REPL_RECEIVER_HS_EIO);
    netio_stream_deinit(&io);
    close(fds[0]);
    close(fds[1]);
}
END_TEST

static Suite *
_suite(void)
{
    Suite *s = suite_create("repl_receiver");
    TCase *pure = tcase_create("backoff");
    tcase_add_test(pure, test_backoff_doubles_to_the_cap);
    tcase_add_test(pure, test_backoff_master_back_resets_soon_holds);
    suite_add_tcase(s, pure);

    TCase *tc = tcase_create("session");
    tcase_add_checked_fixture(tc, _setup, _teardown);
    tcase_set_timeout(tc, 30);
    tcase_add_test(tc, test_applies_stream_logs_it_and_acks_r8);
    tcase_add_test(tc, test_older_change_loses_newer_wins);
    tcase_add_test(tc, test_resumes_from_the_rts_file);
    tcase_add_test(tc, test_corrupt_rts_file_refused);
    tcase_add_test(tc, test_acknowledged_position_never_goes_back_r8);
    tcase_add_test(tc, test_resync_applies_a_snapshot_then_the_stream);
    tcase_add_test(tc, test_snapshot_cut_short_is_not_acknowledged);
    tcase_add_test(tc, test_wack_reported_before_ack_r5);
    tcase_add_test(tc, test_own_records_asked_back_until_caught_up_r6);
    tcase_add_test(tc, test_refusal_ends_the_session);
    tcase_add_test(tc, test_garbage_ends_the_session_unapplied);
    tcase_add_test(tc, test_standby_handshake_refusals);
    tcase_add_test(tc, test_handshake_silent_master_is_eio);
    suite_add_tcase(s, tc);
    return s;
}

TEST_MAIN(_suite)
