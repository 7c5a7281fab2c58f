/*
 * proto: a pure, incremental parser for the memcached text protocol.
 *
 * proto_parse() is handed the unread bytes of a connection and either
 * returns one complete request, says it needs more bytes, or reports an
 * error the caller must answer. It performs no I/O, touches no storage and
 * allocates nothing: requests point into the caller's buffer, so the caller
 * processes a request before consuming its bytes. Memory is bounded by the
 * limits: a command line may not exceed `max_line` bytes and a value may
 * not exceed `item_max` bytes, so the caller never needs to buffer more than
 * max_line + item_max + 2 bytes for one request.
 *
 * The parser is a two-state machine:
 *
 *   LINE --(storage command accepted, data incomplete)--> LINE (re-parsed)
 *   LINE --(value rejected as too large)--> SWALLOW --(n bytes eaten)--> LINE
 *
 * A storage command is returned only once its whole data block and the
 * trailing "\r\n" are present; nothing partial ever reaches storage. Errors
 * are enum values; reply.c owns their wire strings.
 *
 * Thread-safety: a parser belongs to one connection; no shared state.
 */
#ifndef KURA_PROTO_H
#define KURA_PROTO_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define PROTO_KEY_MAX 250

enum proto_cmd {
    PROTO_CMD_GET,
    PROTO_CMD_GETS,
    PROTO_CMD_GAT,
    PROTO_CMD_GATS,
    PROTO_CMD_SET,
    PROTO_CMD_ADD,
    PROTO_CMD_REPLACE,
    PROTO_CMD_APPEND,
    PROTO_CMD_PREPEND,
    PROTO_CMD_CAS,
    PROTO_CMD_DELETE,
    PROTO_CMD_INCR,
    PROTO_CMD_DECR,
    PROTO_CMD_TOUCH,
    PROTO_CMD_FLUSH_ALL,
    PROTO_CMD_VERSION,
    PROTO_CMD_VERBOSITY,
    PROTO_CMD_QUIT,
    PROTO_CMD_STATS,
    PROTO_CMD_REPL, /* "REPL ...": a peer asking for the update log */
    PROTO_CMD_COUNT
};

enum proto_status {
    PROTO_OK,     /* a request was parsed into *req */
    PROTO_EUNFIN, /* more bytes are needed (some may have been consumed) */
    PROTO_EREQ,   /* the request is rejected; answer p->error, carry on */
    PROTO_ECLOSE, /* the stream cannot be resynchronised; answer, close */
};

enum proto_error {
    PROTO_ERR_NONE,
    PROTO_ERR_UNKNOWN_COMMAND, /* ERROR */
    PROTO_ERR_FORMAT,          /* CLIENT_ERROR bad command line format */
    PROTO_ERR_DELETE_USAGE,    /* ... with the delete usage hint */
    PROTO_ERR_EXPTIME,         /* CLIENT_ERROR invalid exptime argument */
    PROTO_ERR_DELTA,           /* CLIENT_ERROR invalid numeric delta ... */
    PROTO_ERR_TOO_LARGE,       /* SERVER_ERROR object too large for cache */
    PROTO_ERR_BAD_CHUNK,       /* CLIENT_ERROR bad data chunk */
    PROTO_ERR_NON_NUMERIC,     /* CLIENT_ERROR cannot increment or ... */
    PROTO_ERR_LINE_TOO_LONG,   /* CLIENT_ERROR line too long (closes) */
    PROTO_ERR_HTTP,            /* an HTTP request line: close silently */
    PROTO_ERR_COUNT
};

struct proto_limits {
    size_t max_line;     /* longest command line, without "\r\n" */
    size_t max_get_line; /* longest get/gets/gat/gats line (many keys) */
    size_t item_max;     /* largest value accepted, in bytes */
};

/* memcached closes a connection after 2048 bytes without a newline. */
#define PROTO_MAX_LINE_DEFAULT 2048

struct proto_request {
    enum proto_cmd cmd;
    bool noreply;
    /* The key of single-key commands; the first key of the get family. */
    const char *key;
    size_t nkey;
    /* get/gets/gat/gats: all keys, separated by one or more spaces. */
    const char *keys;
    size_t keys_len;
    uint32_t nkeys;
    uint32_t flags;      /* storage commands */
    int64_t exptime;     /* storage commands, touch, gat, gats */
    const char *value;   /* storage commands: the data block */
    size_t vlen;
    uint64_t cas_unique; /* cas */
    uint64_t delta;      /* incr, decr */
    int64_t delay;       /* flush_all, 0 when absent */
    uint32_t level;      /* verbosity */
    const char *args;    /* stats, REPL: the text after the command */
    size_t args_len;
};

struct proto_parser {
    struct proto_limits limits;
    uint64_t swallow;       /* bytes of a rejected value still to discard */
    enum proto_error error; /* why the last PROTO_EREQ/PROTO_ECLOSE */
    enum proto_cmd error_cmd; /* command that failed, when known */
    bool error_noreply;     /* the failed request asked for noreply */
    /* After PROTO_EUNFIN: bytes from the buffer start needed before the
     * request can complete, or 0 if only the end of line is awaited. */
    size_t need;
};

/* Initialises a parser with the given limits. */
void proto_parser_init(struct proto_parser *p,
                       const struct proto_limits *limits);

/* Forgets any partial state (a pending swallow), e.g. on connection reuse. */
void proto_parser_reset(struct proto_parser *p);

/*
 * Parses at most one request from `buf` (`len` unread bytes).
 *
 * Always sets `*consumed` to the number of bytes the caller must discard
 * from the front of the buffer once it is done with `*req`.
 *   PROTO_OK      `*req` is valid and points into `buf`.
 *   PROTO_EUNFIN  call again with more bytes; `p->need` says how many are
 *                 needed in total (0 = unknown, a line is incomplete).
 *                 `*consumed` may be nonzero while a value is swallowed.
 *   PROTO_EREQ    reply with `p->error` (see reply.h) unless
 *                 `p->error_noreply`; the bytes are consumed.
 *   PROTO_ECLOSE  reply with `p->error`, then close the connection.
 */
enum proto_status proto_parse(struct proto_parser *p, const char *buf,
                              size_t len, size_t *consumed,
                              struct proto_request *req);

/*
 * Iterates over the keys of a get-family request. `*pos` starts at 0.
 * Returns false when there are no more keys; otherwise sets `*key` and
 * `*nkey`. The keys were validated by proto_parse().
 */
bool proto_next_key(const struct proto_request *req, size_t *pos,
                    const char **key, size_t *nkey);

/* True if `key` is a valid memcached key: 1..250 bytes, no space/control. */
bool proto_key_valid(const char *key, size_t nkey);

/* The command's name as sent on the wire ("get", "set", ...). */
const char *proto_cmd_name(enum proto_cmd cmd);

/* Looks up a command by wire name; returns false if unknown. */
bool proto_cmd_lookup(const char *name, size_t len, enum proto_cmd *cmd);

#endif
