/*
 * txn_replay: changes that come from elsewhere than a client command: a
 * peer's update log (txn_stage_replicated, ordered by the conflict rule
 * of record.h) and this server's own log after a crash (txn_redo). See
 * txn.h for the invariants.
 */
#include "txn_internal.h"

#include <string.h>

#include "util.h"

/*
 * Decides whether `rec` (a PUT from a peer or the log) wins over the
 * current record; fills the envelope to store in `env`/`elen`, which is
 * the incoming one, or a tombstone for an incoming value already expired.
 */
static bool
_wins(const struct txn_current *cur, const struct record_meta *in,
      uint8_t *env, size_t *elen, bool *as_tombstone)
{
    if (cur->found && !record_newer(in, &cur->meta)) {
        return false;
    }
    *as_tombstone = false;
    *elen = 0;
    if (in->kind == RECORD_VALUE &&
        expiry_expired(in->exptime, util_now_s())) {
        struct record_meta t;
        record_tombstone_of(in, in->ts, &t);
        *elen = record_encode(&t, env);
        *as_tombstone = true;
    }
    return true;
}

/*
 * Whether the incoming record `rec` (a PUT from a peer or the log) wins
 * over what the store holds for its key (_wins). `lock_key` reads the
 * current record through the batch, which keeps the key's stripe until
 * commit; otherwise it is read without holding anything (redo runs
 * alone). On a win that must be stored as a tombstone, `env` (`*elen`
 * bytes) is its envelope and `*as_tombstone` is set.
 */
static enum txn_status
_incoming_wins(struct txn_batch *b, const struct logrec *rec, bool lock_key,
               uint8_t env[RECORD_HEADER_MAX], size_t *elen,
               bool *as_tombstone, bool *wins)
{
    struct txn_current cur;
    struct record_meta in;
    const uint8_t *v;
    size_t vlen;

    if (record_decode(rec->payload, rec->plen, &in, &v, &vlen) != RECORD_OK) {
        return TXN_EIO;
    }
    clock_observe(b->eng->clock, in.ts);
    enum txn_status st = lock_key
                             ? txn_begin_key(b, rec->key, rec->nkey, &cur)
                             : txn_read_record(b, rec->key, rec->nkey, &cur);
    if (st != TXN_OK) {
        return st;
    }
    *wins = _wins(&cur, &in, env, elen, as_tombstone);
    txn_current_release(&cur);
    return TXN_OK;
}

enum txn_status
txn_stage_replicated(struct txn_batch *b, const struct logrec *rec,
                     bool *applied)
{
    uint8_t env[RECORD_HEADER_MAX];
    size_t elen;
    bool as_tombstone;
    bool wins;

    *applied = false;
    if (rec->op == LOGREC_FLUSH) {
        enum txn_status st = txn_writable(b->eng);
        if (st != TXN_OK) {
            return st;
        }
        *applied = true;
        return txn_stage_raw(b, LOGREC_FLUSH, rec->sid, NULL, 0, rec->payload,
                             rec->plen, NULL, 0, NULL, 0);
    }
    enum txn_status st = _incoming_wins(b, rec, true, env, &elen,
                                        &as_tombstone, &wins);
    if (st != TXN_OK || !wins) {
        return st;
    }
    *applied = true;
    if (as_tombstone) {
        st = txn_stage_raw(b, LOGREC_PUT, rec->sid, rec->key, rec->nkey, env,
                           elen, NULL, 0, NULL, 0);
        if (st == TXN_OK) {
            txn_account_bytes(b, rec->key, rec->nkey, false, 0);
        }
        return st;
    }
    st = txn_stage_raw(b, LOGREC_PUT, rec->sid, rec->key, rec->nkey,
                       rec->payload, rec->plen, NULL, 0, NULL, 0);
    struct record_meta in;
    const uint8_t *v;
    size_t vlen;
    if (st == TXN_OK &&
        record_decode(rec->payload, rec->plen, &in, &v, &vlen) == RECORD_OK) {
        txn_account_bytes(b, rec->key, rec->nkey, in.kind == RECORD_VALUE,
                          vlen);
    }
    return st;
}

enum txn_status
txn_redo(struct txn_batch *b, const struct logrec *rec, bool *applied)
{
    uint8_t env[RECORD_HEADER_MAX];
    size_t elen;
    bool as_tombstone;

    *applied = true;
    if (rec->op == LOGREC_FLUSH) {
        return txn_apply_record(b->eng, rec);
    }
    /* D5: the log is the truth for every key it names, whatever the file
     * holds (it may hold a torn or half-applied record). The empty
     * current record makes _wins() take it, only turning a value that
     * has expired since into its tombstone. */
    struct txn_current none;
    struct record_meta in;
    const uint8_t *v;
    size_t vlen;
    memset(&none, 0, sizeof(none));
    if (record_decode(rec->payload, rec->plen, &in, &v, &vlen) != RECORD_OK) {
        return TXN_EIO;
    }
    clock_observe(b->eng->clock, in.ts);
    (void)_wins(&none, &in, env, &elen, &as_tombstone);
    /* What it replaces, for stats "bytes". */
    struct txn_current cur;
    (void)txn_read_record(b, rec->key, rec->nkey, &cur);
    txn_current_release(&cur);
    txn_account_bytes(b, rec->key, rec->nkey,
                      in.kind == RECORD_VALUE && !as_tombstone, vlen);
    if (as_tombstone) {
        struct record_meta t;
        record_decode(env, elen, &t, &v, &vlen);
        return txn_put_tombstone(b->eng, rec->key, rec->nkey, &t, rec->lsn) ==
                                 STORE_OK
                                 ? TXN_OK
                                 : TXN_EIO;
    }
    return txn_apply_record(b->eng, rec);
}
