/*
 * engine_fixture: a write path in a temporary directory for unit suites
 * (see engine_fixture.h).
 */
#include "engine_fixture.h"

#include <check.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "dbspec.h"
#include "stats_snapshot.h"

#define FIXTURE_SCRATCH 4096

void
engine_fixture_setup(struct engine_fixture *f)
{
    memset(f, 0, sizeof(*f));
    unit_tmpdir_make(f->dir, sizeof(f->dir), "engine_fixture");
    ck_assert_int_eq(log_open(&f->log, "/dev/null", LOG_ERROR), 0);
    clock_init(&f->clk, 0);
    f->peers_acked = UINT64_MAX;
}

void
engine_fixture_teardown(struct engine_fixture *f)
{
    engine_fixture_close(f);
    log_close(&f->log);
    unit_tmpdir_remove(f->dir);
}

void
engine_fixture_path(const struct engine_fixture *f, const char *name,
                    char *out, size_t cap)
{
    ck_assert_int_lt(snprintf(out, cap, "%s/%s", f->dir, name), (int)cap);
}

void
engine_fixture_open_store(struct engine_fixture *f, const char *name)
{
    struct dbspec spec;
    char path[128];
    char err[256];

    engine_fixture_path(f, name, path, sizeof(path));
    ck_assert_msg(dbspec_parse(path, &spec, err, sizeof(err)), "%s", err);
    f->store = store_open(&spec, NULL, NULL, err, sizeof(err));
    ck_assert_msg(f->store != NULL, "%s", err);
}

static uint64_t
_peers_acked(void *arg)
{
    const struct engine_fixture *f = arg;
    return f->peers_acked;
}

void
engine_fixture_open_ulog(struct engine_fixture *f, enum ulog_fsync policy,
                         uint64_t segment_max)
{
    struct ulog_options o;
    struct ulog_recovery rec;
    char err[256];

    memset(&o, 0, sizeof(o));
    engine_fixture_path(f, "ulog", o.dir, sizeof(o.dir));
    o.segment_max = segment_max;
    o.fsync = policy;
    o.sid = 1;
    o.checkpoint_ms = 1000000;
    o.checkpoint_bytes = UINT64_MAX;
    o.clock = &f->clk;
    o.log = &f->log;
    o.peers_acked = _peers_acked;
    o.arg = f;
    f->ulog = ulog_open(&o, &rec, err, sizeof(err));
    ck_assert_msg(f->ulog != NULL, "%s", err);
}

void
engine_fixture_start(struct engine_fixture *f)
{
    char flush[128];
    char err[256];

    ck_assert_ptr_nonnull(f->store);
    engine_fixture_path(f, "flush", flush, sizeof(flush));
    ck_assert_msg(txn_engine_init(&f->eng, f->store, &f->clk, f->ulog, 1, 64,
                                  flush, err, sizeof(err)) == 0,
                  "%s", err);
    ck_assert_int_eq(txn_batch_init(&f->batch, &f->eng, FIXTURE_SCRATCH), 0);
    f->eng_ready = true;
}

void
engine_fixture_close(struct engine_fixture *f)
{
    if (f->eng_ready) {
        txn_batch_deinit(&f->batch);
        txn_engine_deinit(&f->eng);
        f->eng_ready = false;
    }
    ulog_close(f->ulog);
    f->ulog = NULL;
    if (f->store != NULL) {
        store_close(f->store);
        f->store = NULL;
    }
}

uint64_t
engine_fixture_put(struct engine_fixture *f, const char *key,
                   const char *value, uint32_t exptime)
{
    struct txn_current cur;
    size_t nkey = strlen(key);
    uint64_t ts = clock_next(&f->clk);
    struct record_meta m = {.kind = RECORD_VALUE, .exptime = exptime,
                            .cas = ts, .ts = ts, .sid = 1};

    ck_assert_int_eq(txn_begin_key(&f->batch, key, nkey, &cur), TXN_OK);
    txn_current_release(&cur);
    ck_assert_int_eq(txn_stage_record(&f->batch, key, nkey, &m, value,
                                      strlen(value), NULL, 0),
                     TXN_OK);
    ck_assert_int_eq(txn_commit(&f->batch), TXN_OK);
    return ts;
}

void
engine_fixture_remove(struct engine_fixture *f, const char *key)
{
    struct txn_current cur;
    size_t nkey = strlen(key);

    ck_assert_int_eq(txn_begin_key(&f->batch, key, nkey, &cur), TXN_OK);
    ck_assert(cur.found);
    txn_current_release(&cur);
    ck_assert_int_eq(txn_stage_remove(&f->batch, key, nkey), TXN_OK);
    ck_assert_int_eq(txn_commit(&f->batch), TXN_OK);
}

bool
engine_fixture_stored(struct engine_fixture *f, const char *key,
                      struct record_meta *m, char *out, size_t cap)
{
    uint8_t scratch[FIXTURE_SCRATCH];
    struct store_value sv;
    const uint8_t *v;
    size_t vlen;

    if (store_get(f->store, key, strlen(key), scratch, sizeof(scratch),
                  &sv) != STORE_OK) {
        return false;
    }
    ck_assert_int_eq(record_decode(sv.data, sv.len, m, &v, &vlen),
                     RECORD_OK);
    snprintf(out, cap, "%.*s", (int)vlen, (const char *)v);
    store_value_release(&sv);
    return true;
}

static void
_no_snapshot(void *arg, struct stats_snapshot *s)
{
    (void)arg;
    memset(s, 0, sizeof(*s));
}

static void
_no_reset(void *arg)
{
    (void)arg;
}

static void
_no_verbosity(void *arg, uint32_t level)
{
    (void)arg;
    (void)level;
}

void
engine_fixture_process_setup(struct engine_fixture *f,
                             struct process_fixture *p)
{
    static const char *const argv[] = {"kurad", "-itemmax", "2k", "*", NULL};
    char err[512];

    ck_assert(f->eng_ready);
    memset(p, 0, sizeof(*p));
    settings_init(&p->settings);
    ck_assert_int_eq(settings_parse(&p->settings, 4, (char **)argv, err,
                                    sizeof(err)),
                     SETTINGS_OK);
    ck_assert_int_eq(access_init(&p->recent, 10), 0);
    p->env = (struct process_env){.eng = &f->eng,
                                  .settings = &p->settings,
                                  .snapshot = _no_snapshot,
                                  .reset = _no_reset,
                                  .set_verbosity = _no_verbosity,
                                  .auth = &p->auth,
                                  .access = &p->recent};
}

void
engine_fixture_process_teardown(struct process_fixture *p)
{
    access_deinit(&p->recent);
    auth_free(&p->auth);
}
