/*
 * process_base: the helpers the command handlers share (process_base.c).
 * Included by the handlers (process_classic.c, process_auth.c,
 * process_meta.c, process_stats.c, process_http.c, through
 * process_members.h) and by process.c; it knows none of them.
 *
 * Visibility rule, applied by every command: a key is present only if its
 * record is a value (not a tombstone), its exptime has not passed and no
 * flush_all has invalidated it. Anything else counts as absent, exactly as
 * an expired or flushed item does in memcached.
 */
#ifndef KURA_PROCESS_BASE_H
#define KURA_PROCESS_BASE_H

#include "expiry.h"
#include "process.h"
#include "reply.h"

/* Per-request view of the clock and the flush state. */
struct now {
    int64_t s;
    uint64_t us;
    struct expiry_flush flush;
};

enum visibility {
    VISIBLE,
    ABSENT,  /* no record, or a tombstone */
    EXPIRED, /* exptime passed */
    FLUSHED, /* invalidated by flush_all */
};

void process_now(struct process_ctx *ctx, struct now *n);

enum visibility process_visibility(const struct txn_current *cur,
                                   const struct now *n);

/*
 * Takes the key's stripe for a write (txn_begin_key) and reports whether
 * a visible record is there (`*present`) and its cas, then releases the
 * record it read; the stripe stays held for the write that follows.
 * Returns the txn status (TXN_OK, or the error to answer).
 */
enum txn_status process_presence(struct process_ctx *ctx, const char *key,
                                 size_t nkey, bool *present, uint64_t *cas);

/*
 * Would a write be accepted now: the log and disk are sound (txn) and
 * -mask lets sets through? What kura_writable, `kura ping` and
 * /-/health all report, so every health check agrees.
 */
bool process_accepts_writes(const struct process_ctx *ctx);

/* PROCESS_DONE if `ok`, else PROCESS_FATAL (the reply did not fit). */
enum process_result process_result_of(bool ok);

/* Answers a failed txn call with the matching server error. */
enum process_result process_txn_error(struct process_ctx *ctx,
                                      const struct proto_request *req,
                                      struct buf *out, enum txn_status st);

/* Fills the envelope of a new local write. */
void process_new_meta(struct process_ctx *ctx, struct record_meta *m,
                      uint32_t flags, uint32_t exptime);

/* Seconds left before `m` expires at `n`, or -1 for never. */
int64_t process_ttl(const struct record_meta *m, const struct now *n);

/* Fills a reply item from a record of `key`. */
void process_item(struct reply_item *it, const char *key, size_t nkey,
                  const struct txn_current *cur, const struct now *n);

/*
 * Fills what the meta h and l flags report of a visible item (the time of
 * its last write stands in when the access table lost the key) and, if
 * `bump`, notes this read in the table.
 */
void process_note_read(struct process_ctx *ctx, struct reply_item *it,
                       const struct txn_current *cur, const struct now *n,
                       bool bump);

/* Notes a write of `key` in the access table. */
void process_note_write(struct process_ctx *ctx, const char *key,
                        size_t nkey, const struct now *n);

/*
 * The longest value incr and decr read. memcached keeps a larger item in
 * chunks (slab_chunk_max, 512 KiB by default) and answers non-numeric for
 * it whatever it holds; kura does the same at this length.
 */
#define PROCESS_COUNTER_MAX ((size_t)512 * 1024 - 64)

/*
 * Reads a stored value as memcached's incr does (strtoull): see
 * process.c. Returns false if it is not a number.
 */
bool process_parse_counter(const uint8_t *v, size_t len, uint64_t *out);

/*
 * True if memcached would rewrite a counter of `old_len` bytes in place
 * for `value` (its digits fit), keeping the item; false if it would build
 * a new item.
 */
bool process_counter_fits(uint64_t value, size_t old_len);

/*
 * Fills `m`, the envelope of the counter `cur` rewritten to `value`: a new
 * cas and stamp, the item's flags and expiry, and, when the digits fit
 * (memcached rewrites them in place, keeping the item), its stale state,
 * recache token and base64 key; a longer number starts clean, as
 * memcached's new item does.
 */
void process_counter_meta(struct process_ctx *ctx,
                          const struct txn_current *cur, uint64_t value,
                          struct record_meta *m);

/*
 * incr, decr and ma on the visible item `cur`, as memcached's do_add_delta
 * goes: an empty value, or one longer than PROCESS_COUNTER_MAX, is
 * REPLY_NON_NUMERIC before the cas is compared; then a cas `want` (with
 * `compare`; 0 matches nothing) other than the item's is REPLY_EXISTS;
 * then a value that does not read as a number is REPLY_NON_NUMERIC.
 * Otherwise sets `*value` to the result (an increment wraps at 2^64, a
 * decrement stops at 0) and `m` to its envelope (process_counter_meta)
 * and returns REPLY_STORED.
 */
enum reply_code process_counter_hit(struct process_ctx *ctx,
                                    const struct txn_current *cur, bool incr,
                                    uint64_t delta, bool compare,
                                    uint64_t want, uint64_t *value,
                                    struct record_meta *m);

/* Stages the decimal `value` for `key` with envelope `m`, padded with
 * spaces to `old_len` as memcached rewrites numbers in place. */
enum txn_status process_stage_counter(struct process_ctx *ctx,
                                      const struct proto_request *req,
                                      struct record_meta *m, uint64_t value,
                                      size_t old_len);

/*
 * The cas rule of every store that compares one (a text cas, a binary
 * store with a cas, ms with C): REPLY_NOT_FOUND without a visible item,
 * REPLY_STORED when `want` is the item's cas `have` (0 matches nothing),
 * and with `stale_ok` (ms I) when `want` is older, setting `*stale`;
 * REPLY_EXISTS otherwise. Counts cas_misses, cas_hits or cas_badval.
 */
enum reply_code process_cas_rule(struct process_ctx *ctx, bool present,
                                 uint64_t have, uint64_t want, bool stale_ok,
                                 bool *stale);

/* A value written as one or two pieces (an append joins two). */
struct process_value {
    const void *v1;
    size_t l1;
    const void *v2;
    size_t l2;
};

/*
 * An append (`append`) or prepend of `nadd` bytes at `add` to the visible
 * item `cur`: fills `*v` (the item then `add`, or `add` then the item) and
 * gives `m` the item's flags, expiry and content type, which memcached
 * keeps whatever the command says. Returns false, counting
 * store_too_large, if the value would pass the item size limit.
 */
bool process_join(struct process_ctx *ctx, const struct txn_current *cur,
                  bool append, const void *add, size_t nadd,
                  struct record_meta *m, struct process_value *v);

/*
 * Counts `key` for `stats detail` (detail.h) as memcached does: a get
 * (`what` 'g', a hit when `hit`), a store ('s') or a delete ('d'), for
 * text and binary requests only.
 */
void process_detail(struct process_ctx *ctx, const struct proto_request *req,
                    const char *key, size_t nkey, char what, bool hit);

#endif
