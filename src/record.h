/*
 * record: the envelope stored in front of every value in the database.
 *
 * A stored record is the envelope followed by the client's value bytes.
 * The envelope keeps what memcached clients rely on (32-bit flags, absolute
 * expiry, 64-bit cas) and what replication needs (the write timestamp and
 * the id of the server where the write originated). Tombstones record a
 * delete so that a later, older write from a peer cannot resurrect the key.
 *
 * Encoding (little-endian), compact because a record for a last-login
 * timestamp is only ~30 bytes of key and value:
 *
 *   u8  version (high nibble, = 2) | kind (low nibble)
 *   u8  presence bits: FLAGS, EXPTIME, CAS (cas stored only if != ts),
 *                    and three facts of the meta protocol with no bytes
 *                    of their own: STALE (invalidated by md/ms I), TOKEN
 *                    (a recache token was handed out: W sent, Z next)
 *                    and BINKEY (the key was stored in base64, so k
 *                    returns it so)
 *   u32 seal         CRC32C of the database's salt, the key and every
 *                    other byte of the record (record_seal); 0 until
 *                    the record is stored
 *   u64 ts           microseconds since the epoch, origin write time
 *   varint sid       origin server id
 *   [u32 flags]      when FLAGS
 *   [u32 exptime]    when EXPTIME; absolute unix seconds, absent = never
 *   [u64 cas]        when CAS; otherwise cas == ts
 *   [u8 n, n bytes]  when CTYPE: the Content-Type an HTTP client stored the
 *                    value with (1..RECORD_CTYPE_MAX bytes)
 *   value bytes      the rest
 *
 * Version 1 (written before the seal existed) is the same without the
 * seal; it is still read, and cannot be verified.
 *
 * Why a seal: the database file is written in place and, between two
 * checkpoints, the kernel writes its pages back in any order. After a
 * power cut a record can be half old and half new. The seal tells an
 * intact record from a torn one (store.h, D3), so recovery never serves
 * a torn value or invents a key. It is keyed with a random per-database
 * salt so that a client cannot plant, inside a value, a record that
 * recovery would take for a real one.
 *
 * Pure functions; no allocation; any thread.
 */
#ifndef KURA_RECORD_H
#define KURA_RECORD_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define RECORD_VERSION 2
/* Longest key stored: memcached's limit, which every protocol enforces
 * (proto.h). Modules that walk the store size their buffers by it. */
#define RECORD_KEY_MAX 250
/* Longest Content-Type a record keeps. */
#define RECORD_CTYPE_MAX 127
/* Largest envelope: 2 + 4 + 8 + 5 + 4 + 4 + 8 + 1 + RECORD_CTYPE_MAX. */
#define RECORD_HEADER_MAX (36 + RECORD_CTYPE_MAX)
/* Where the seal sits in a version-2 envelope. */
#define RECORD_SEAL_OFF 2

enum record_kind {
    RECORD_VALUE = 1,     /* a live value (possibly expired) */
    RECORD_TOMBSTONE = 2, /* a delete, kept so replication can order it */
};

enum record_status {
    RECORD_OK = 0,
    RECORD_ECORRUPT,  /* bytes are not a valid envelope, or the seal
                         does not match */
    RECORD_UNSEALED,  /* record_verify(): a version-1 record, which
                         carries no seal to check */
};

struct record_meta {
    enum record_kind kind;
    uint32_t flags;   /* client flags */
    uint32_t exptime; /* absolute unix seconds; 0 = never expires */
    uint64_t cas;     /* compare-and-swap unique */
    uint64_t ts;      /* origin write timestamp, microseconds */
    uint32_t sid;     /* origin server id */
    bool stale;       /* meta: marked stale by an invalidation */
    bool token;       /* meta: a recache token was handed out */
    bool binkey;      /* meta: the key was given in base64 (b) */
    const char *ctype; /* HTTP Content-Type, `nctype` bytes, or NULL; after
                          record_decode() it points into the record */
    uint8_t nctype;
};

/*
 * Encodes `m` into `out`, which must hold RECORD_HEADER_MAX bytes, as a
 * version-2 envelope with a zero seal. Returns the number of bytes written
 * (the value follows them).
 */
size_t record_encode(const struct record_meta *m, uint8_t *out);

/*
 * Decodes the envelope at the start of `buf` (`len` bytes). On success fills
 * `*m`, points `*value` into `buf` at the value and sets `*vlen`; nothing is
 * copied. Returns RECORD_OK or RECORD_ECORRUPT.
 */
enum record_status record_decode(const uint8_t *buf, size_t len,
                                 struct record_meta *m, const uint8_t **value,
                                 size_t *vlen);

/*
 * Seals the stored form of a record: `rec` is the envelope and value
 * (`len` bytes) stored under `key` (`nkey` bytes) in a database whose
 * salt is `salt`. Writes the seal into the envelope; a version-1 or
 * malformed envelope is left as it is.
 */
void record_seal(uint8_t *rec, size_t len, const void *key, size_t nkey,
                 uint32_t salt);

/*
 * Checks a stored record against its seal. Returns RECORD_OK when the
 * envelope decodes and the seal matches, RECORD_UNSEALED for a
 * well-formed version-1 record, and RECORD_ECORRUPT otherwise.
 */
enum record_status record_verify(const uint8_t *rec, size_t len,
                                 const void *key, size_t nkey, uint32_t salt);

/*
 * Returns nonzero if the change described by `a` wins over `b` under the
 * replication rule: the higher (ts, sid) pair is the newer write.
 */
int record_newer(const struct record_meta *a, const struct record_meta *b);

/*
 * The tombstone that replaces the record `m`: the same stamp and server
 * id, and nothing of the value (flags, exptime, the stale, token and
 * base64 marks, content type); its cas is `cas` (the local lsn when
 * tombstones are kept, T6, or the stamp).
 */
void record_tombstone_of(const struct record_meta *m, uint64_t cas,
                         struct record_meta *out);

#endif
