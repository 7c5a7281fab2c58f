/*
 * repl_proto: the replication wire format (pure codec, no I/O).
 *
 * A standby opens a TCP connection to its master's memcached port and
 * sends one text line:
 *
 *   REPL <version> <sid> <after-lsn> <flags> <nonce>\r\n
 *
 * flags: REPL_FLAG_ALLOW_RESYNC (1) a snapshot may replace the stream,
 * REPL_FLAG_BACKUP (2) a backup, not a peer, REPL_FLAG_OWN (4) send my
 * own records back too (repl_sender.h R6). Unknown flags are ignored.
 *
 * When the master has a shared key (repl_auth.h) the two prove they hold
 * it before anything else passes:
 *
 *   master:  REPL CHALLENGE <nonce> <master proof>\r\n
 *   standby: REPL AUTH <standby proof>\r\n
 *
 * Then the master answers with one line, then binary frames:
 *
 *   REPL OK <master-sid>[ wack]\r\n       records with lsn > after-lsn
 *                                          follow
 *   REPL RESYNC <master-sid>[ wack]\r\n   a full snapshot follows, then
 *                                          records
 *   REPL BACKUP <master-sid>\r\n    a backup follows (below)
 *   REPL ERROR <reason>\r\n         (at any step) the connection closes
 *
 * A backup (`kura backup`) asks with REPL_FLAG_BACKUP, any after-lsn and
 * the sid REPL_BACKUP_SID. It is authenticated like a standby, but it is
 * not a peer (repl_sender.h, R3): the master sends SNAP_BEGIN, the items,
 * SNAP_END, then every record (whatever its origin) after the snapshot's
 * lsn up to the backup's position P, then one HEARTBEAT whose stream
 * position is P, and closes the connection. Snapshot and records applied
 * in order are the database as of P (R2). A master that predates backups
 * ignores the flag and answers OK or RESYNC: the tool then gives up.
 *
 * Frames, both directions (little-endian):
 *
 *   u32 len    whole frame, header included
 *   u8  type   REPL_FRAME_*
 *   u8  0, u8 0, u8 0
 *   ...        payload
 *
 *   master -> standby
 *     RECORD      one update log record (logrec.h), checksum included
 *     HEARTBEAT   u64 log end lsn, u64 log end seq, u64 stream position
 *                 lsn, u64 stream position seq, u64 master clock (us);
 *                 the position counts records skipped because they came
 *                 from the standby itself
 *     SNAP_BEGIN  u64 lsn the stream resumes after
 *     SNAP_ITEM   u16 key length, key, the stored record (record.h)
 *     SNAP_END    u64 items sent
 *   standby -> master
 *     ACK         u64 lsn, u64 seq: the master position applied and
 *                 durable on the standby
 *     WACK        u64 lsn, u64 seq: the master position written to the
 *                 standby's own log (write(2) returned; not yet synced).
 *                 Sent only when the master's OK or RESYNC line ends in
 *                 " wack" (it runs -fsync peer; repl_sender.h R5), after
 *                 every batch the standby logs, so the master can answer
 *                 the writes it holds back (ulog.h U10). A master that
 *                 did not ask never gets one (older masters would drop
 *                 the connection on an unknown frame).
 *
 * Records keep the id of the server where each change originated; a
 * master never sends a standby the standby's own changes.
 *
 * Pure functions; any thread.
 */
#ifndef KURA_REPL_PROTO_H
#define KURA_REPL_PROTO_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "logrec.h"
#include "repl_auth.h"

#define REPL_VERSION 1
#define REPL_FRAME_HEADER 8
#define REPL_FRAME_MAX (LOGREC_MAX_LEN + 64)
#define REPL_FLAG_ALLOW_RESYNC 1u
#define REPL_FLAG_BACKUP 2u
/* After an unclean stop: send my own records back too (repl_sender.h R6).
 * Masters that predate it ignore the flag. */
#define REPL_FLAG_OWN 4u
/* The sid a backup announces: server ids are 1-65535, so it names none. */
#define REPL_BACKUP_SID UINT32_MAX

enum repl_frame_type {
    REPL_FRAME_RECORD = 1,
    REPL_FRAME_HEARTBEAT = 2,
    REPL_FRAME_SNAP_BEGIN = 3,
    REPL_FRAME_SNAP_ITEM = 4,
    REPL_FRAME_SNAP_END = 5,
    REPL_FRAME_ACK = 6,
    REPL_FRAME_WACK = 7,
};

/* The suffix of a master's OK or RESYNC line asking for WACK frames. */
#define REPL_WACK_WORD " wack"

enum repl_status {
    REPL_OK = 0,
    REPL_SHORT,   /* more bytes needed */
    REPL_CORRUPT, /* not a valid frame */
};

struct repl_frame {
    enum repl_frame_type type;
    uint32_t len;           /* whole frame */
    const uint8_t *payload;
    size_t plen;
    /* decoded fields, by type */
    struct logrec rec;      /* RECORD */
    uint64_t lsn;           /* HEARTBEAT (log end), SNAP_BEGIN, ACK */
    uint64_t seq;           /* HEARTBEAT (log end), ACK */
    uint64_t pos_lsn;       /* HEARTBEAT: stream position */
    uint64_t pos_seq;
    uint64_t now_us;        /* HEARTBEAT */
    uint64_t count;         /* SNAP_END */
    const char *key;        /* SNAP_ITEM */
    size_t nkey;
    const uint8_t *value;   /* SNAP_ITEM: the stored record */
    size_t vlen;
};

/* A parsed "REPL ..." request line. */
struct repl_hello {
    uint32_t version;
    uint32_t sid;
    uint64_t after;
    uint32_t flags;
    char nonce[REPL_NONCE_HEX + 1];
};

#define REPL_LINE_MAX 256

/*
 * Writes a frame header for `type` with a `plen`-byte payload into `out`
 * (REPL_FRAME_HEADER bytes). Returns REPL_FRAME_HEADER.
 */
size_t repl_frame_header(uint8_t *out, enum repl_frame_type type,
                         size_t plen);

/* Encodes the fixed-size frames into `out`; returns the frame length. */
#define REPL_HEARTBEAT_LEN (REPL_FRAME_HEADER + 40)
size_t repl_encode_heartbeat(uint8_t out[REPL_HEARTBEAT_LEN], uint64_t lsn,
                             uint64_t seq, uint64_t pos_lsn, uint64_t pos_seq,
                             uint64_t now_us);
size_t repl_encode_u64(uint8_t out[16], enum repl_frame_type type,
                       uint64_t v);
#define REPL_ACK_LEN (REPL_FRAME_HEADER + 16)
size_t repl_encode_ack(uint8_t out[REPL_ACK_LEN], uint64_t lsn, uint64_t seq);
/* As repl_encode_ack() for `type` REPL_FRAME_ACK or REPL_FRAME_WACK. */
size_t repl_encode_ack_type(uint8_t out[REPL_ACK_LEN],
                            enum repl_frame_type type, uint64_t lsn,
                            uint64_t seq);

/*
 * True if a master's OK or RESYNC line `line` (without the line end) asks
 * for WACK frames.
 */
bool repl_line_wants_wack(const char *line);

/*
 * Encodes the header of a SNAP_ITEM for a `nkey`-byte key and a
 * `vlen`-byte record into `out` (REPL_FRAME_HEADER + 2 + nkey bytes; the
 * record follows). Returns the bytes written.
 */
size_t repl_encode_snap_item(uint8_t *out, const char *key, size_t nkey,
                             size_t vlen);

/*
 * Decodes the frame at the start of `buf` (`avail` bytes). On REPL_OK,
 * `*f` describes it (pointers into `buf`) and f->len bytes may be
 * consumed. A RECORD frame's record is checked (checksum included).
 */
enum repl_status repl_frame_decode(const uint8_t *buf, size_t avail,
                                   struct repl_frame *f);

/* Parses the arguments of a REPL request line (after "REPL"). */
bool repl_hello_parse(const char *args, size_t len, struct repl_hello *h);

/*
 * Writes the whole request line for `h` ("REPL ...\r\n") into `out`
 * (`cap` bytes, REPL_LINE_MAX is enough). Returns its length, or -1.
 */
int repl_hello_format(const struct repl_hello *h, char *out, size_t cap);

/*
 * Parses a master's "REPL CHALLENGE <nonce> <proof>" line (without the
 * line end) into `nonce` and `proof`. Returns false if it is not one.
 */
bool repl_challenge_parse(const char *line, char nonce[REPL_NONCE_HEX + 1],
                          char proof[REPL_PROOF_HEX + 1]);

/* Parses a standby's "REPL AUTH <proof>" line into `proof`. */
bool repl_auth_line_parse(const char *line, char proof[REPL_PROOF_HEX + 1]);

#endif
