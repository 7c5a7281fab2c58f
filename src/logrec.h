/*
 * logrec: the update log's record format.
 *
 * Every change the server makes is one record. The same bytes go to the
 * log file, over the replication stream and into the redo at start-up, so
 * this codec is pure and shared. Layout (little-endian):
 *
 *   offset  size  field
 *   0       4     len     whole record, header included
 *   4       4     crc     CRC32C of bytes [8, len)
 *   8       8     lsn     log timestamp, microseconds; strictly increasing
 *                         within one server's log
 *   16      8     seq     record number in that log: 1, 2, 3, ... (dense,
 *                         so "lag in records" is a subtraction)
 *   24      1     op      LOGREC_PUT or LOGREC_FLUSH
 *   25      1     0       reserved
 *   26      2     klen    key length (0 for FLUSH)
 *   28      4     sid     id of the server where the change originated
 *   32      klen  key
 *   ...           payload PUT: the key's resulting record, exactly as
 *                         stored (record.h envelope + value, or a
 *                         tombstone); FLUSH: u64 stamp, u64 deadline
 *
 * A PUT carries the key's whole resulting state, never an operation, so
 * replaying a record any number of times, in any order relative to other
 * records for the key, converges under the (ts, sid) rule of record.h.
 *
 * Pure functions; any thread.
 */
#ifndef KURA_LOGREC_H
#define KURA_LOGREC_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define LOGREC_HEADER 32
/* Longest record accepted when reading: a 1 GiB value plus key and envelope. */
#define LOGREC_MAX_LEN ((uint64_t)(1u << 30) + 4096)
#define LOGREC_FLUSH_PAYLOAD 16

enum logrec_op {
    LOGREC_PUT = 1,
    LOGREC_FLUSH = 2,
};

enum logrec_status {
    LOGREC_OK = 0,
    LOGREC_SHORT,   /* fewer bytes than the record needs (a torn tail) */
    LOGREC_CORRUPT, /* bad length, checksum or field */
};

/* A decoded record; pointers refer to the caller's buffer. */
struct logrec {
    const uint8_t *raw; /* the whole encoded record (len bytes) */
    uint32_t len;
    uint64_t lsn;
    uint64_t seq;
    enum logrec_op op;
    uint32_t sid;
    const char *key;
    size_t nkey;
    const uint8_t *payload;
    size_t plen;
};

/* Size of a record with a `nkey`-byte key and a `plen`-byte payload. */
static inline size_t
logrec_size(size_t nkey, size_t plen)
{
    return LOGREC_HEADER + nkey + plen;
}

/*
 * Writes the header and key of a record into `out` (logrec_size() bytes);
 * lsn, seq and crc are left zero for logrec_seal(). Returns a pointer to
 * where the `plen` payload bytes go.
 */
uint8_t *logrec_begin(uint8_t *out, enum logrec_op op, uint32_t sid,
                      const char *key, size_t nkey, size_t plen);

/* Fills in lsn and seq and computes the checksum of a complete record. */
void logrec_seal(uint8_t *rec, uint64_t lsn, uint64_t seq);

/*
 * Decodes the record at the start of `buf` (`avail` bytes). LOGREC_SHORT
 * means the record is incomplete; then `out->len` holds its declared
 * length when at least 4 bytes were available (0 otherwise).
 */
enum logrec_status logrec_decode(const uint8_t *buf, size_t avail,
                                 struct logrec *out);

/*
 * Reads the fields of a complete, well-formed record without checking its
 * checksum (one this process built itself, possibly not yet sealed).
 */
void logrec_view(const uint8_t *buf, struct logrec *out);

/* Reads the length field of a record (4 bytes must be available). */
uint32_t logrec_peek_len(const uint8_t *buf);

/* Reads the origin server id of a record (its header must be available). */
uint32_t logrec_peek_sid(const uint8_t *buf);

/* FLUSH payload: the flush_all stamp (0 for delayed) and deadline. */
void logrec_flush_encode(uint8_t out[LOGREC_FLUSH_PAYLOAD], uint64_t stamp,
                         uint64_t deadline);
bool logrec_flush_decode(const struct logrec *r, uint64_t *stamp,
                         uint64_t *deadline);

#endif
