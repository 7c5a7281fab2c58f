/*
 * txn_internal: what txn.c shares with txn_replay.c (changes from a peer
 * or from the log), txn_retire.c (expired items and tombstones) and
 * txn_flush.c (flush_all's state, which calls nothing back), and with
 * nothing else. Each function keeps the invariants of txn.h.
 */
#ifndef KURA_TXN_INTERNAL_H
#define KURA_TXN_INTERNAL_H

#include "txn.h"

/* The stripe that guards `key` (T4). */
uint32_t txn_stripe_of(const struct txn_engine *eng, const char *key,
                       size_t nkey);

/* Records that the batch holds `stripe` (already locked by the caller);
 * false if out of memory. */
bool txn_mark_held(struct txn_batch *b, uint32_t stripe);

/* TXN_OK if writes are allowed now, else why not (read-only, no space). */
enum txn_status txn_writable(struct txn_engine *eng);

/* Reads `key`'s committed record, or a change of this batch still
 * waiting for durability (T8), into `*cur`. */
enum txn_status txn_read_record(struct txn_batch *b, const char *key,
                                size_t nkey, struct txn_current *cur);

/* Stages one log record whose payload is p1, p2, p3 back to back. */
enum txn_status txn_stage_raw(struct txn_batch *b, enum logrec_op op,
                              uint32_t sid, const char *key, size_t nkey,
                              const void *p1, size_t l1, const void *p2,
                              size_t l2, const void *p3, size_t l3);

/* Counts a staged change of `key` in stats "bytes": its size (`value`,
 * `vlen`) minus that of the record read just before through the same key
 * pointer. */
void txn_account_bytes(struct txn_batch *b, const char *key, size_t nkey,
                       bool value, size_t vlen);

/* Applies one logged record to the store. */
enum txn_status txn_apply_record(struct txn_engine *eng,
                                 const struct logrec *r);

/* Stores a tombstone for `m`; its cas records the local lsn (T6). */
enum store_status txn_put_tombstone(struct txn_engine *eng, const char *key,
                                    size_t nkey, const struct record_meta *m,
                                    uint64_t lsn);

/* Loads the engine's flush_all state from its file (txn_flush.c); 0, or
 * -1 with a reason in `err`. A missing file is no flush_all yet. */
int txn_flush_state_load(struct txn_engine *eng, char *err, size_t errlen);

/* Folds a flush_all (stamp, deadline) into the engine's persisted state. */
enum txn_status txn_apply_flush(struct txn_engine *eng, uint64_t stamp,
                                uint64_t deadline);

#endif
