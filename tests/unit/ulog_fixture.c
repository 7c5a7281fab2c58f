/*
 * ulog_fixture: the update log suites' shared setup (see ulog_fixture.h).
 */
#include "ulog_fixture.h"

#include <check.h>
#include <stdio.h>
#include <string.h>

void
ulog_fixture_setup(struct ulog_fixture *f, const char *suite)
{
    memset(f, 0, sizeof(*f));
    unit_tmpdir_make(f->dir, sizeof(f->dir), suite);
    ck_assert_int_eq(log_open(&f->lg, "/dev/null", LOG_ERROR), 0);
    clock_init(&f->clk, 0);
}

void
ulog_fixture_teardown(struct ulog_fixture *f)
{
    unit_tmpdir_remove(f->dir);
    log_close(&f->lg);
}

void
ulog_fixture_options(struct ulog_fixture *f, struct ulog_options *o,
                     enum ulog_fsync fsync, uint64_t segment_max)
{
    memset(o, 0, sizeof(*o));
    int n = snprintf(o->dir, sizeof(o->dir), "%s/ulog", f->dir);
    ck_assert(n > 0 && (size_t)n < sizeof(o->dir));
    o->segment_max = segment_max;
    o->fsync = fsync;
    o->sid = 1;
    o->checkpoint_ms = 1000000;
    o->checkpoint_bytes = UINT64_MAX;
    o->clock = &f->clk;
    o->log = &f->lg;
}

struct ulog *
ulog_fixture_open(const struct ulog_options *o, struct ulog_recovery *rec)
{
    struct ulog_recovery unused;
    char err[256];
    struct ulog *u = ulog_open(o, rec != NULL ? rec : &unused, err,
                               sizeof(err));
    ck_assert_msg(u != NULL, "%s", err);
    return u;
}
