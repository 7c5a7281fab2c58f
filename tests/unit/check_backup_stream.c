/*
 * Unit tests for backup_stream: what `kura backup` accepts from a server.
 * A whole session (with and without log records after the snapshot) is
 * passed on in order and ends at the heartbeat's position; every
 * departure from repl_sender.h R2 listed in backup_stream.h is refused
 * with a reason, and nothing more is accepted after a refusal.
 */
#include <check.h>
#include <stdio.h>
#include <string.h>

#include "backup_stream.h"
#include "record.h"
#include "unit_main.h"

/* What the ops saw. */
struct sink {
    int items;
    char last_key[64];
    uint64_t seqs[16];
    int nseqs;
    bool fail_item;
    bool fail_redo;
};

static int
_item(void *arg, const char *key, size_t nkey, const uint8_t *rec,
      size_t len, char *err, size_t errlen)
{
    struct sink *k = arg;
    (void)rec;
    (void)len;
    if (k->fail_item) {
        snprintf(err, errlen, "disk full");
        return -1;
    }
    snprintf(k->last_key, sizeof(k->last_key), "%.*s", (int)nkey, key);
    k->items++;
    return 0;
}

static int
_redo(void *arg, const struct logrec *r, char *err, size_t errlen)
{
    struct sink *k = arg;
    if (k->fail_redo) {
        snprintf(err, errlen, "cannot apply");
        return -1;
    }
    k->seqs[k->nseqs++] = r->seq;
    return 0;
}

static struct sink sink;
static struct backup_stream st;
static uint8_t item_rec[RECORD_HEADER_MAX + 8];
static size_t item_len;

static void
_setup(void)
{
    memset(&sink, 0, sizeof(sink));
    struct backup_stream_ops ops = {_item, _redo, &sink};
    backup_stream_init(&st, &ops);
    struct record_meta m;
    memset(&m, 0, sizeof(m));
    m.kind = RECORD_VALUE;
    m.ts = 99;
    m.cas = 99;
    m.sid = 1;
    item_len = record_encode(&m, item_rec);
    memcpy(item_rec + item_len, "value", 5);
    item_len += 5;
}

static int
_begin(uint64_t lsn)
{
    struct repl_frame f = {.type = REPL_FRAME_SNAP_BEGIN, .lsn = lsn};
    return backup_stream_frame(&st, &f);
}

static int
_item_frame(const char *key)
{
    struct repl_frame f = {.type = REPL_FRAME_SNAP_ITEM};
    f.key = key;
    f.nkey = strlen(key);
    f.value = item_rec;
    f.vlen = item_len;
    return backup_stream_frame(&st, &f);
}

static int
_snap_end(uint64_t count)
{
    struct repl_frame f = {.type = REPL_FRAME_SNAP_END, .count = count};
    return backup_stream_frame(&st, &f);
}

static int
_record(uint64_t lsn, uint64_t seq)
{
    struct repl_frame f = {.type = REPL_FRAME_RECORD};
    f.rec.lsn = lsn;
    f.rec.seq = seq;
    f.rec.op = LOGREC_PUT;
    return backup_stream_frame(&st, &f);
}

static int
_position(uint64_t lsn, uint64_t seq)
{
    struct repl_frame f = {.type = REPL_FRAME_HEARTBEAT, .pos_lsn = lsn,
                           .pos_seq = seq, .lsn = lsn + 50, .seq = seq + 5};
    return backup_stream_frame(&st, &f);
}

/* The refusal's reason must contain `why`; later frames fail too. */
static void
_refused(int rc, const char *why)
{
    ck_assert_int_eq(rc, -1);
    ck_assert_msg(strstr(st.err, why) != NULL, "reason: %s", st.err);
    ck_assert(!backup_stream_done(&st));
    ck_assert_int_eq(_position(1, 1), -1);
    ck_assert_int_eq(_begin(1), -1);
}

START_TEST(test_whole_session)
{
    ck_assert_int_eq(_begin(100), 0);
    ck_assert_int_eq(_item_frame("a"), 0);
    ck_assert_int_eq(_item_frame("b"), 0);
    ck_assert_int_eq(_snap_end(2), 0);
    ck_assert_int_eq(_record(101, 11), 0);
    ck_assert_int_eq(_record(102, 12), 0);
    ck_assert_int_eq(_record(110, 13), 0);
    ck_assert(!backup_stream_done(&st));
    ck_assert_int_eq(_position(110, 13), 0);
    ck_assert(backup_stream_done(&st));
    ck_assert_uint_eq(st.pos_lsn, 110);
    ck_assert_uint_eq(st.pos_seq, 13);
    ck_assert_uint_eq(st.items, 2);
    ck_assert_uint_eq(st.records, 3);
    ck_assert_int_eq(sink.items, 2);
    ck_assert_str_eq(sink.last_key, "b");
    ck_assert_int_eq(sink.nseqs, 3);
    ck_assert_uint_eq(sink.seqs[0], 11);
    ck_assert_uint_eq(sink.seqs[2], 13);
    /* Nothing may follow the position. */
    _refused(_record(111, 14), "after the position");
}
END_TEST

START_TEST(test_session_without_records)
{
    ck_assert_int_eq(_begin(100), 0);
    ck_assert_int_eq(_snap_end(0), 0);
    ck_assert_int_eq(_position(100, 10), 0);
    ck_assert(backup_stream_done(&st));
    ck_assert_uint_eq(st.pos_lsn, 100);
    ck_assert_uint_eq(st.pos_seq, 10);
}
END_TEST

/* No records but a position above the snapshot: records went missing. */
START_TEST(test_position_above_snapshot_without_records)
{
    ck_assert_int_eq(_begin(100), 0);
    ck_assert_int_eq(_snap_end(0), 0);
    _refused(_position(101, 11), "does not match");
}
END_TEST

START_TEST(test_seq_gap)
{
    ck_assert_int_eq(_begin(100), 0);
    ck_assert_int_eq(_snap_end(0), 0);
    ck_assert_int_eq(_record(101, 11), 0);
    _refused(_record(102, 13), "missing between seq 11 and 13");
    ck_assert_int_eq(sink.nseqs, 1);
}
END_TEST

START_TEST(test_record_order)
{
    ck_assert_int_eq(_begin(100), 0);
    ck_assert_int_eq(_record(101, 11) == -1, 1);
    ck_assert_ptr_nonnull(strstr(st.err, "inside the snapshot"));
    _setup();
    ck_assert_int_eq(_begin(100), 0);
    ck_assert_int_eq(_snap_end(0), 0);
    _refused(_record(100, 10), "out of order");
    _setup();
    ck_assert_int_eq(_begin(100), 0);
    ck_assert_int_eq(_snap_end(0), 0);
    ck_assert_int_eq(_record(105, 11), 0);
    _refused(_record(105, 12), "out of order");
}
END_TEST

static int
_flush_record(uint64_t seq)
{
    struct repl_frame f = {.type = REPL_FRAME_RECORD};
    f.rec.lsn = 100;
    f.rec.seq = seq;
    f.rec.op = LOGREC_FLUSH;
    return backup_stream_frame(&st, &f);
}

/* R7: the flush_all state leads the snapshot, outside the log's order. */
START_TEST(test_snapshot_flush_state)
{
    ck_assert_int_eq(_begin(100), 0);
    ck_assert_int_eq(_flush_record(0), 0);
    ck_assert_int_eq(_flush_record(0), 0);
    ck_assert_int_eq(_item_frame("a"), 0);
    ck_assert_int_eq(_snap_end(1), 0);
    ck_assert_int_eq(_record(101, 11), 0);
    ck_assert_int_eq(_position(101, 11), 0);
    ck_assert(backup_stream_done(&st));
    ck_assert_int_eq(sink.nseqs, 3);
    ck_assert_int_eq(sink.seqs[0], 0);
    ck_assert_int_eq(sink.seqs[2], 11);
    /* Not after an item, not a log record, not before SNAP_BEGIN. */
    _setup();
    ck_assert_int_eq(_begin(100), 0);
    ck_assert_int_eq(_item_frame("a"), 0);
    _refused(_flush_record(0), "inside the snapshot");
    _setup();
    ck_assert_int_eq(_begin(100), 0);
    _refused(_flush_record(7), "inside the snapshot");
    _setup();
    _refused(_flush_record(0), "before the snapshot");
}
END_TEST

START_TEST(test_items_outside_the_snapshot)
{
    _refused(_item_frame("a"), "outside the snapshot");
    _setup();
    ck_assert_int_eq(_begin(100), 0);
    ck_assert_int_eq(_snap_end(0), 0);
    _refused(_item_frame("a"), "outside the snapshot");
    ck_assert_int_eq(sink.items, 0);
}
END_TEST

START_TEST(test_malformed_item)
{
    ck_assert_int_eq(_begin(100), 0);
    item_rec[0] = 0xff; /* no such version */
    _refused(_item_frame("a"), "malformed item");
    ck_assert_int_eq(sink.items, 0);
}
END_TEST

START_TEST(test_snapshot_counts)
{
    ck_assert_int_eq(_begin(100), 0);
    ck_assert_int_eq(_item_frame("a"), 0);
    _refused(_snap_end(2), "2 items counted and 1 received");
    _setup();
    _refused(_snap_end(0), "items counted");
    _setup();
    ck_assert_int_eq(_begin(100), 0);
    _refused(_begin(100), "second snapshot");
}
END_TEST

START_TEST(test_position_must_be_the_last_record)
{
    ck_assert_int_eq(_begin(100), 0);
    ck_assert_int_eq(_snap_end(0), 0);
    ck_assert_int_eq(_record(101, 11), 0);
    _refused(_position(102, 12), "does not match");
    _setup();
    ck_assert_int_eq(_begin(100), 0);
    ck_assert_int_eq(_snap_end(0), 0);
    ck_assert_int_eq(_record(101, 11), 0);
    _refused(_position(101, 12), "does not match");
    _setup();
    ck_assert_int_eq(_begin(100), 0);
    _refused(_position(100, 10), "inside the snapshot");
}
END_TEST

START_TEST(test_other_frames_refused)
{
    struct repl_frame f = {.type = REPL_FRAME_ACK};
    ck_assert_int_eq(_begin(100), 0);
    _refused(backup_stream_frame(&st, &f), "unexpected frame");
}
END_TEST

START_TEST(test_writer_failures_end_the_session)
{
    ck_assert_int_eq(_begin(100), 0);
    sink.fail_item = true;
    _refused(_item_frame("a"), "disk full");
    _setup();
    ck_assert_int_eq(_begin(100), 0);
    ck_assert_int_eq(_snap_end(0), 0);
    sink.fail_redo = true;
    _refused(_record(101, 11), "cannot apply");
    ck_assert_uint_eq(st.records, 0);
}
END_TEST

static Suite *
backup_stream_suite(void)
{
    Suite *s = suite_create("backup_stream");
    TCase *tc = tcase_create("backup_stream");
    tcase_add_checked_fixture(tc, _setup, NULL);
    tcase_add_test(tc, test_whole_session);
    tcase_add_test(tc, test_session_without_records);
    tcase_add_test(tc, test_position_above_snapshot_without_records);
    tcase_add_test(tc, test_seq_gap);
    tcase_add_test(tc, test_record_order);
    tcase_add_test(tc, test_snapshot_flush_state);
    tcase_add_test(tc, test_items_outside_the_snapshot);
    tcase_add_test(tc, test_malformed_item);
    tcase_add_test(tc, test_snapshot_counts);
    tcase_add_test(tc, test_position_must_be_the_last_record);
    tcase_add_test(tc, test_other_frames_refused);
    tcase_add_test(tc, test_writer_failures_end_the_session);
    suite_add_tcase(s, tc);
    return s;
}

TEST_MAIN(backup_stream_suite)
