/*
 * proto: the request model shared by kura's three memcached protocols,
 * and the text protocol's parser.
 *
 * memcached clients speak one of three protocols on the same port:
 *   text     "get k", "set k 0 0 5" ...: proto_text.c
 *   meta     "mg k v", "ms k 5 T60" ...: text lines too, so proto_text.c
 *            reads them and proto_meta.c reads their flags
 *   binary   24-byte framed requests starting with 0x80: proto_bin.c
 * A connection's first byte says which (conn.c). Every parser produces the
 * same struct proto_request: the command, its key(s) and arguments, and
 * the protocol details a reply must echo (binary opcode and opaque, meta
 * return flags). process.c executes requests without caring which
 * protocol carried them; reply.c writes each result in the request's own
 * protocol.
 *
 * The parsers are pure and incremental: they are handed the unread bytes
 * of a connection and either return one complete request, say they need
 * more bytes, or report an error the caller must answer. They perform no
 * I/O, touch no storage and allocate nothing: requests point into the
 * caller's buffer (a base64 key is decoded into the request itself), so
 * the caller processes a request before consuming its bytes. Memory is
 * bounded by the limits: a command line may not exceed `max_line` bytes
 * and a value may not exceed `item_max` bytes.
 *
 * The text parser is a two-state machine:
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

#include "record.h"

#define PROTO_KEY_MAX RECORD_KEY_MAX

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
    PROTO_CMD_NOOP, /* binary noop; meta "mn" */
    PROTO_CMD_MG,   /* meta get */
    PROTO_CMD_MS,   /* meta set */
    PROTO_CMD_MD,   /* meta delete */
    PROTO_CMD_MA,   /* meta arithmetic */
    PROTO_CMD_ME,   /* meta debug */
    PROTO_CMD_SASL_LIST, /* binary SASL: list mechanisms */
    PROTO_CMD_SASL_AUTH, /* binary SASL: start */
    PROTO_CMD_SASL_STEP, /* binary SASL: continue */
    PROTO_CMD_HTTP_GET,    /* HTTP GET and HEAD of a key */
    PROTO_CMD_HTTP_PUT,    /* HTTP PUT and POST: store the body */
    PROTO_CMD_HTTP_DELETE, /* HTTP DELETE */
    PROTO_CMD_HTTP_ADMIN,  /* HTTP under /-/: health, metrics */
    PROTO_CMD_SHUTDOWN,    /* refused, as by memcached without -A */
    PROTO_CMD_MEMLIMIT,    /* cache_memlimit: accepted, nothing to resize */
    PROTO_CMD_SLABS,       /* slabs automove|reassign: no slabs to move */
    PROTO_CMD_COUNT
};

/*
 * What a valid "slabs" line asks (memcached's slab page mover). kura keeps
 * no slab classes, so the parser's reading decides the answer.
 */
enum proto_slabs {
    PROTO_SLABS_AUTOMOVE,      /* automove 0|1|2, automove ratio R: OK */
    PROTO_SLABS_REASSIGN_SAME, /* reassign N N: SAME */
    PROTO_SLABS_REASSIGN,      /* reassign SRC DST: BADCLASS, no classes */
};

/* Which protocol carried a request, and so how it is answered. */
enum proto_kind {
    PROTO_KIND_TEXT,
    PROTO_KIND_META,
    PROTO_KIND_BINARY,
    PROTO_KIND_HTTP,
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
    /* meta commands (CLIENT_ERROR ...) */
    PROTO_ERR_META_FLAG,       /* invalid flag (mg, ms) */
    PROTO_ERR_META_DUP,        /* duplicate flag (mg, ms) */
    PROTO_ERR_META_FLAG_OR_DUP, /* invalid or duplicate flag (md, ma) */
    PROTO_ERR_META_TOKEN,      /* bad token in command line format */
    PROTO_ERR_META_OPAQUE,     /* opaque token too long */
    PROTO_ERR_META_TOO_MANY,   /* options flags are too long (mg) */
    PROTO_ERR_META_TOO_LONG,   /* options flags too long (ms, md, ma) */
    PROTO_ERR_META_KEY,        /* error decoding key */
    PROTO_ERR_META_MODE_MS,    /* invalid mode for ms M token */
    PROTO_ERR_META_MODE_MA,    /* invalid mode for ma M token */
    PROTO_ERR_META_MODE_LEN,   /* incorrect length for M token */
    PROTO_ERR_META_INITIAL,    /* invalid numeric initial value (J) */
    PROTO_ERR_META_DELTA,      /* invalid numeric delta value (D) */
    /* binary statuses for a rejected frame (reply.c maps them) */
    PROTO_ERR_BIN_EINVAL,      /* Invalid arguments */
    PROTO_ERR_BIN_UNKNOWN,     /* Unknown command */
    PROTO_ERR_BIN_FRAMING,     /* bad magic or lengths: close */
    /* HTTP: answered with p->http_status (reply.h), then closed */
    PROTO_ERR_HTTP_STATUS,
    PROTO_ERR_COUNT
};

struct proto_limits {
    size_t max_line;     /* longest command line, without "\r\n" */
    size_t max_get_line; /* longest get/gets/gat/gats line (many keys) */
    size_t item_max;     /* largest value accepted, in bytes */
    bool http;           /* HTTP/1.x is served on the port (-nohttp) */
};

/* memcached closes a connection after 2048 bytes without a newline. */
#define PROTO_MAX_LINE_DEFAULT 2048

/* The most flags a meta command may carry: memcached takes 19 words on a
 * line, the command and the key among them. */
#define PROTO_META_FLAGS_MAX 17

/* A meta command's flags (memcached 1.6 doc/protocol.txt, "Meta ..."). */
struct proto_meta {
    /* Every flag letter, once each, in the client's order: return flags
     * are answered in it, and mg and ma apply T, N and R in it (a t
     * before a T reports the ttl as it was). */
    char order[PROTO_META_FLAGS_MAX];
    uint8_t norder;
    bool base64;        /* b: the key is base64 (decoded in keybuf) */
    bool quiet;         /* q: noreply semantics for the usual result */
    bool value;         /* v: return the value */
    bool no_bump;       /* u: do not note the access (h, l stay) */
    bool invalidate;    /* I: mark stale (md, ms) instead of deleting */
    bool vivify;        /* N: mg/ma create on miss, with ttl `vivify_ttl` */
    int64_t vivify_ttl;
    bool recache;       /* R: win for recache when ttl < `recache_ttl` */
    int64_t recache_ttl;
    bool ttl;           /* T: new ttl `ttl_value` */
    int64_t ttl_value;
    bool client_flags;  /* F: ms client flags */
    uint32_t flags_value;
    bool compare_cas;   /* C: act only if the cas matches */
    uint64_t compare_value;
    bool new_cas;       /* E: use this cas for the change */
    uint64_t new_cas_value;
    bool initial;       /* J: ma initial value for vivify */
    uint64_t initial_value;
    uint64_t delta;     /* D: ma delta (1 when absent) */
    char mode;          /* M: ms S E A P R, ma I + D -; 0 when absent */
    const char *opaque; /* O: echoed back (without its O) */
    size_t opaque_len;
};

/* What an HTTP request carries beyond the request model (proto_http.c). */
struct proto_http {
    uint8_t method;        /* enum proto_http_method */
    uint8_t minor;         /* HTTP/1.minor */
    bool keep_alive;       /* the connection stays open after the reply */
    bool json;             /* Content-Type is application/json or +json */
    const char *ctype;     /* Content-Type as sent, NULL if none */
    size_t nctype;
    const char *if_match;  /* If-Match value, NULL if none */
    size_t n_if_match;
    const char *if_none_match;
    size_t n_if_none_match;
    const char *auth;      /* Authorization value, NULL if none */
    size_t nauth;
    bool has_exptime;      /* a Kura-Exptime header */
    int64_t exptime;
    const char *path;      /* the raw path (without the query) */
    size_t npath;
};

struct proto_request {
    enum proto_cmd cmd;
    enum proto_kind kind;
    bool noreply;       /* text noreply; binary quiet opcode; meta q */
    /* The key of single-key commands; the first key of the get family. */
    const char *key;
    size_t nkey;
    /* get/gets/gat/gats: all keys, separated by one or more spaces (text
     * only; a binary or meta request has exactly one key, `key`, which may
     * hold any byte). */
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
    uint32_t level;      /* verbosity; cache_memlimit's megabytes;
                            slabs: enum proto_slabs */
    const char *args;    /* stats, REPL: the text after the command */
    size_t args_len;
    bool has_cas;        /* the command compares cas_unique (text cas,
                            binary with a nonzero cas, meta C) */
    /* binary */
    uint8_t opcode;      /* echoed in the reply */
    uint32_t opaque;     /* echoed in the reply */
    bool want_key;       /* getk, getkq, gatk, gatkq: reply with the key */
    uint64_t initial;    /* incr/decr: value of a key created on miss */
    bool create;         /* incr/decr: create on miss (exptime != ~0) */
    /* meta */
    struct proto_meta meta;
    /* HTTP (proto_http.h) */
    struct proto_http http;
    char keybuf[PROTO_KEY_MAX]; /* a base64 key, decoded */
};

struct proto_parser {
    struct proto_limits limits;
    uint64_t swallow;       /* bytes of a rejected value still to discard */
    enum proto_error error; /* why the last PROTO_EREQ/PROTO_ECLOSE */
    enum proto_cmd error_cmd; /* command that failed, when known */
    bool error_noreply;     /* the failed request asked for noreply */
    uint16_t http_status;   /* PROTO_ERR_HTTP_STATUS: the status to send */
    bool http_continue;     /* HTTP: "100 Continue" is due (see proto_http.h) */
    bool http_continue_sent;
    /* After PROTO_EUNFIN: bytes from the buffer start needed before the
     * request can complete, or 0 if only the end of line is awaited. */
    size_t need;
};

/*
 * The protocol a connection speaks, from its first byte, by memcached's
 * rule: the binary request magic (0x80), or text; with limits.http, an
 * upper-case letter (an HTTP method; REPL excepted) is HTTP. A byte no memcached
 * client starts with (a control character, or a high byte such as a TLS
 * record's) returns PROTO_ECLOSE with p->error set, so that the client
 * is answered "ERROR" and closed at once rather than left waiting for a
 * line that will never come; otherwise PROTO_OK and `*kind`.
 */
enum proto_status proto_detect(struct proto_parser *p, unsigned char first,
                               enum proto_kind *kind);

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
 * `*nkey`. The keys were validated by proto_parse(). A text request's
 * keys are split at spaces; a binary or meta request yields its one key
 * whole, whatever bytes it holds. `*pos` reaches `req->keys_len` (or 1
 * for an empty key list) after the last key.
 */
bool proto_next_key(const struct proto_request *req, size_t *pos,
                    const char **key, size_t *nkey);

/* True if `key` is a valid memcached key: 1..250 bytes, no space/control. */
bool proto_key_valid(const char *key, size_t nkey);

/*
 * The classic command a request counts as for -mask (cmdmask.h) and for
 * stats: meta get as get (gat when it touches), meta set as set, add,
 * append... by its mode, meta delete as delete, meta arithmetic as incr
 * or decr. Other commands are themselves.
 */
enum proto_cmd proto_class(const struct proto_request *req);

/*
 * Decodes base64 `in` (`n` bytes, standard alphabet, padded) into `out`
 * (`cap` bytes). Returns the decoded length, or -1 if it is not base64
 * or does not fit. Strict: for HTTP credentials.
 */
long proto_base64_decode(const char *in, size_t n, char *out, size_t cap);

/*
 * Decodes a meta key given in base64 (the b flag) as memcached 1.6 reads
 * one: bytes outside the alphabet and '=' are skipped; the rest must come
 * in whole groups of four, at least one; '=' anywhere in a group counts as
 * padding (a zero), one or two of them end the key after that group
 * (whatever follows is ignored), more are an error. Unpadded input is
 * decoded as long as its groups are whole. Returns the decoded length
 * (at least 1), or -1 if the key cannot be decoded or exceeds `cap`.
 */
long proto_base64_decode_meta(const char *in, size_t n, char *out,
                              size_t cap);

/* Encodes `n` bytes as padded base64 into `out`, which must hold
 * 4 * ((n + 2) / 3) bytes. Returns the length written. */
size_t proto_base64_encode(const void *in, size_t n, char *out);

/* The command's name as sent on the wire ("get", "set", ...). */
const char *proto_cmd_name(enum proto_cmd cmd);

/* Looks up a command by wire name; returns false if unknown. */
bool proto_cmd_lookup(const char *name, size_t len, enum proto_cmd *cmd);

#endif
