/*
 * ulog_fixture: what every update log suite sets up the same way: a
 * temporary directory, a logger that writes nowhere, a clock at zero, and
 * the log's options with no checkpoint by time or by size, so that each
 * test decides when anything happens.
 *
 * Every call fails the running Check test on error.
 */
#ifndef KURA_ULOG_FIXTURE_H
#define KURA_ULOG_FIXTURE_H

#include <stdint.h>

#include "clock.h"
#include "log.h"
#include "ulog.h"
#include "unit_tmpdir.h"

struct ulog_fixture {
    char dir[UNIT_TMPDIR_MAX]; /* the suite's directory; the log in ulog/ */
    struct logger lg;
    struct clock clk;
};

/* Makes the directory (named after `suite`), opens the logger on
 * /dev/null and starts the clock at zero. */
void ulog_fixture_setup(struct ulog_fixture *f, const char *suite);

/* Removes the directory and everything in it, and closes the logger.
 * Every log opened on it must be closed first. */
void ulog_fixture_teardown(struct ulog_fixture *f);

/*
 * Fills `o` for a log in `f`'s directory: `fsync` and `segment_max` as
 * given, server id 1, no checkpoint by time or size, no segments kept for
 * peers, and `f`'s clock and logger. The caller sets anything else before
 * opening.
 */
void ulog_fixture_options(struct ulog_fixture *f, struct ulog_options *o,
                          enum ulog_fsync fsync, uint64_t segment_max);

/* Opens a log with `o`; `rec` (NULL: not wanted) receives what it found.
 * Fails the test if it cannot. The caller closes it. */
struct ulog *ulog_fixture_open(const struct ulog_options *o,
                               struct ulog_recovery *rec);

#endif
