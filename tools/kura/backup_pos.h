/*
 * backup_pos: the position file written beside a backup, and the times a
 * point-in-time restore stops at (pure; no I/O, any thread).
 *
 * `kura backup OUT.tch` writes OUT.tch.pos:
 *
 *   rts <lsn> <seq>\n     the backup holds every change of the server's
 *                         log up to this record and none after (repl_sender.h,
 *                         R2); the line is an -rts file's contents, so the
 *                         file can seed a new standby's -rts as it is
 *   sid <sid>\n           the server whose log that position is in
 *   time <ISO-8601>\n     the lsn as a UTC time, for people
 *
 * Log positions (lsn) are the server's write clock in microseconds since
 * the epoch (logrec.h), so a wall-clock time is compared with them as is.
 */
#ifndef KURA_BACKUP_POS_H
#define KURA_BACKUP_POS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* Longest formatted file; it fits an -rts file read (128 bytes). */
#define BACKUP_POS_MAX 120
/* "YYYY-MM-DDThh:mm:ss.uuuuuuZ" and its NUL. */
#define BACKUP_POS_TIME_MAX 28

struct backup_pos {
    uint64_t lsn;
    uint64_t seq;
    uint32_t sid;
};

/*
 * Writes the file's contents for `p` into `out` (`cap` bytes,
 * BACKUP_POS_MAX is enough), NUL-terminated. Returns the length, or -1 if
 * it does not fit.
 */
int backup_pos_format(const struct backup_pos *p, char *out, size_t cap);

/*
 * Parses a position file's `len` bytes of `text`: the three lines above in
 * that order, each ending in a newline, numbers in canonical decimal, a
 * sid of 1-65535; the time line must name the same instant as the lsn.
 * Returns true and fills `*p`, or false.
 */
bool backup_pos_parse(const char *text, size_t len, struct backup_pos *p);

/*
 * Parses a time given to a restore, into microseconds since the epoch:
 *   - a unix time: seconds, with up to six decimals ("1732000000.25"),
 *     optionally after an '@' as date(1) prints it;
 *   - an ISO-8601 time with its zone: "2026-11-23T10:00:00Z",
 *     "2026-11-23 10:00:00.123+09:00", "2026-11-23T10:00+0900" (a space
 *     may stand for the T; seconds and up to six decimals are optional).
 *     A time without a zone is refused rather than guessed.
 * Years 1970-9999. Returns true and sets `*us`, or false.
 */
bool backup_pos_time_parse(const char *s, uint64_t *us);

/* Writes `us` as "YYYY-MM-DDThh:mm:ss.uuuuuuZ" into `out`. */
void backup_pos_time_format(uint64_t us, char out[BACKUP_POS_TIME_MAX]);

#endif
