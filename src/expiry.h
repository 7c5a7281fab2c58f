/*
 * expiry: memcached's exptime and flush_all arithmetic.
 *
 * A client exptime is converted once, when the write arrives, into an
 * absolute unix time; the record keeps only that. Rules (doc/protocol.txt):
 *   0                       never expires
 *   1 .. 2592000 (30 days)  seconds from now
 *   > 2592000               an absolute unix time; one in the past means
 *                           the item is already expired
 *   negative                already expired
 *
 * flush_all invalidates records by their write stamp. An immediate flush
 * takes effect at once: every record stamped at or before it is invalid,
 * records written after it survive. A delayed flush ("flush_all 60") is
 * pending until its deadline, then invalidates every record stamped at or
 * before the deadline, including ones written while it was pending; a new
 * flush_all replaces a pending one. Unlike memcached, a pending flush never
 * makes items invalidated by an earlier flush visible again.
 *
 * Pure functions; any thread.
 */
#ifndef KURA_EXPIRY_H
#define KURA_EXPIRY_H

#include <stdbool.h>
#include <stdint.h>

#define EXPIRY_MAX_RELATIVE 2592000 /* 30 days, in seconds */
/* Stored for items that are expired on arrival; any past time would do. */
#define EXPIRY_ALREADY 1u

/*
 * Converts a client `exptime` received at `now_s` into the absolute form
 * stored in a record: 0 for never, EXPIRY_ALREADY for already expired,
 * otherwise a unix time (clamped to UINT32_MAX).
 */
uint32_t expiry_absolute(int64_t exptime, int64_t now_s);

/* True if a record whose stored expiry is `abs` is expired at `now_s`. */
bool expiry_expired(uint32_t abs, int64_t now_s);

/*
 * The flush_all state, in write-stamp microseconds; 0 = none. Flushes from
 * two replicating servers combine the same in any order: the applied point
 * only grows, and of two pending flushes the one issued later wins.
 */
struct expiry_flush {
    uint64_t applied_us;    /* records stamped at or before it are invalid */
    uint64_t pending_us;    /* a delayed flush's deadline, not yet reached */
    uint64_t pending_stamp; /* when that delayed flush was issued */
};

/*
 * True if a record written at `ts_us` is invalidated by `f` at wall-clock
 * time `now_us`.
 */
bool expiry_flushed(const struct expiry_flush *f, uint64_t ts_us,
                    uint64_t now_us);

/*
 * Returns the deadline of "flush_all `delay_s`" issued at `now_us`, or 0
 * for an immediate flush (a delay of 0 or less, or an absolute time that
 * has passed). A delay above 30 days is an absolute unix time.
 */
uint64_t expiry_flush_deadline(int64_t delay_s, uint64_t now_us);

/*
 * Applies a flush issued at write stamp `stamp_us` to `f`: an immediate one
 * (`deadline_us` 0) or a delayed one. An immediate flush cancels a pending
 * one issued before it; a delayed flush replaces a pending one issued
 * before it and is ignored if issued before the applied point. Returns
 * true if `f` changed.
 */
bool expiry_flush_apply(struct expiry_flush *f, uint64_t stamp_us,
                        uint64_t deadline_us);

/*
 * Folds a pending flush whose deadline has passed into the applied point.
 * Returns true if `f` changed.
 */
bool expiry_flush_settle(struct expiry_flush *f, uint64_t now_us);

#endif
