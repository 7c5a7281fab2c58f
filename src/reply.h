/*
 * reply: writes results in the protocol of the request they answer.
 *
 * process.c decides what happened (stored, not found, a hit with this
 * item...) without knowing the wire; these functions write it the way
 * the request's protocol does: reply.c for the text protocol (and the
 * dispatch), reply_bin.c for binary frames, reply_meta.c for meta lines.
 * Each protocol also decides here what its "quiet" means: text noreply
 * silences every reply, a binary quiet opcode its successes (and a get's
 * misses), meta q the usual success (EN for mg, HD for the others).
 *
 * Every function appends to a struct buf and returns false only if the
 * buffer could not grow (the caller then closes the connection, as
 * memcached does on out-of-memory).
 *
 * Pure formatting; no shared state; any thread.
 */
#ifndef KURA_REPLY_H
#define KURA_REPLY_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "buf.h"
#include "proto.h"

/* Version reported to clients: memcached compatibility level, then ours. */
#define REPLY_MEMCACHED_COMPAT "1.6.18"

enum reply_code {
    REPLY_STORED,
    REPLY_NOT_STORED,
    REPLY_EXISTS,
    REPLY_NOT_FOUND,
    REPLY_DELETED,
    REPLY_TOUCHED,
    REPLY_OK,
    REPLY_END,
    REPLY_RESET,
    REPLY_ERROR,
    REPLY_NON_NUMERIC,     /* CLIENT_ERROR cannot increment or decrement... */
    REPLY_SERVER_ERROR_IO, /* SERVER_ERROR a write could not be made durable */
    REPLY_SERVER_ERROR_READ, /* SERVER_ERROR the record could not be read */
    REPLY_SERVER_ERROR_READONLY,
    REPLY_SERVER_ERROR_OOM,
    REPLY_SERVER_ERROR_NOSPACE,
    REPLY_TOO_MANY_CONNECTIONS, /* ERROR Too many open connections */
    REPLY_REPL_DENIED, /* REPL refused by -mask repl */
    REPLY_UNAUTHENTICATED, /* a command before authentication */
    REPLY_AUTH_FAILED,     /* the credentials were refused */
    REPLY_AUTH_MALFORMED,  /* a text token that is not "user password" */
    REPLY_TOO_LARGE,       /* the value would exceed the item size limit */
    REPLY_NO_SHUTDOWN,     /* ERROR: shutdown not enabled */
    REPLY_MEMLIMIT_TOO_SMALL, /* cache_memlimit under 8 */
    REPLY_MEMLIMIT_NOT_BYTES, /* cache_memlimit over 10^9 megabytes */
    REPLY_SLABS_SAME,         /* slabs reassign N N */
    REPLY_SLABS_BADCLASS,     /* slabs reassign: no such class */
    REPLY_CODE_COUNT
};

/* Limit passed to buf_* when growing an output buffer. */
#define REPLY_BUF_LIMIT ((size_t)1 << 40)

/* What a command found or made, as far as a reply may tell it. */
struct reply_item {
    const char *key;       /* as the request named it */
    size_t nkey;
    uint32_t flags;        /* client flags */
    const void *value;
    size_t vlen;
    uint64_t cas;
    int64_t ttl;           /* seconds left; -1 for none */
    /* meta only */
    bool stale;            /* X */
    char win;              /* 'W' this client won the recache, 'Z' another
                              has it, 0 neither */
    int hit;               /* h: fetched before (0/1), -1 unknown */
    bool key_binary;       /* k: print the key in base64, then " b" */
    int64_t idle;          /* l: seconds since the last access */
};

/*
 * The text protocol's line for `code` ("STORED\r\n"...), whatever the
 * request's protocol: text authentication and REPL answer in text only.
 */
bool reply_text_code(struct buf *out, enum reply_code code);

/*
 * Meta debug's answer for `it`: "ME <key> exp=<ttl> la=<idle>
 * cas=<cas> fetch=<yes|no> cls=1 size=<size>".
 */
bool reply_meta_debug(struct buf *out, const struct proto_request *req,
                      const struct reply_item *it, size_t size);

/* Appends raw bytes. */
bool reply_raw(struct buf *out, const void *p, size_t n);

/*
 * The outcome of a command: a store (REPLY_STORED, NOT_STORED, EXISTS,
 * NOT_FOUND), a delete (DELETED, NOT_FOUND), a touch (TOUCHED), OK, or an
 * error code. `it` (may be NULL) names the item for what a protocol sends
 * back: the new cas and flags (binary), the meta return flags.
 */
bool reply_result(struct buf *out, const struct proto_request *req,
                  enum reply_code code, const struct reply_item *it);

/*
 * A retrieval hit: "VALUE ..." (text, with the cas for gets/gats), a get
 * response (binary), "VA"/"HD" with the return flags (meta).
 */
bool reply_hit(struct buf *out, const struct proto_request *req,
               const struct reply_item *it);

/* A retrieval miss of `it->key`: nothing (text), ENOENT (binary), EN. */
bool reply_miss(struct buf *out, const struct proto_request *req,
                const struct reply_item *it);

/* The end of a retrieval: "END" (text), nothing elsewhere. */
bool reply_end(struct buf *out, const struct proto_request *req);

/* An incr/decr result `n`; `it` carries the new cas and meta flags. */
bool reply_counter(struct buf *out, const struct proto_request *req,
                   uint64_t n, const struct reply_item *it);

/* Answers a request the parser rejected (`p->error`, proto.h). */
bool reply_proto_error(struct buf *out, const struct proto_request *req,
                       const struct proto_parser *p);

/* "CLIENT_ERROR <command> not allowed" (-mask/-unmask), or its kin. */
bool reply_denied(struct buf *out, const struct proto_request *req);

/* The server's version: "VERSION <compat>-kura-<version>" or kin. */
bool reply_version(struct buf *out, const struct proto_request *req);

/* A noop: the binary noop response, meta "MN". */
bool reply_noop(struct buf *out, const struct proto_request *req);

/*
 * One statistic: "STAT <name> <value>" or a binary stat frame, the value
 * formatted from `fmt`, of any length.
 */
bool reply_stat(struct buf *out, const struct proto_request *req,
                const char *name, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));

/* One statistic whose value is `n` bytes at `value` (any length). */
bool reply_stat_bytes(struct buf *out, const struct proto_request *req,
                      const char *name, const void *value, size_t n);

/* The end of a stats listing: "END" or the empty binary stat frame. */
bool reply_stats_end(struct buf *out, const struct proto_request *req);

/* The SASL mechanisms (binary). */
bool reply_sasl_mechs(struct buf *out, const struct proto_request *req,
                      const char *mechs);

enum reply_sasl_state {
    REPLY_SASL_OK,       /* "Authenticated" */
    REPLY_SASL_CONTINUE, /* send the next step (an empty challenge) */
    REPLY_SASL_FAILED,   /* AUTH_ERROR */
};

/* A SASL auth or step's answer. */
bool reply_sasl(struct buf *out, const struct proto_request *req,
                enum reply_sasl_state state);

/* An HTTP response (reply_http.c). */
/*
 * The Date header's value, formatted once a second: one per worker (in
 * its process_ctx), so formatting costs nothing per response.
 */
struct reply_http_date {
    int64_t second;     /* the Unix second `text` shows */
    char text[32];      /* "Sun, 06 Nov 1994 08:49:37 GMT"; "" before the
                           first call (a zeroed struct is ready to use) */
};

/* Brings `d` up to `now_s` (Unix seconds); returns d->text. */
const char *reply_http_date(struct reply_http_date *d, int64_t now_s);

struct reply_http {
    uint16_t status;
    const char *date;   /* Date value (reply_http_date()); NULL: now */
    const char *ctype;  /* Content-Type, `nctype` bytes; none if 0 */
    size_t nctype;
    const void *body;   /* sent unless the request was HEAD */
    size_t nbody;       /* Content-Length (also for HEAD) */
    bool has_etag;      /* ETag: "<cas in hex>" */
    uint64_t cas;
    bool close;         /* the connection closes after this response */
    const char *extra;  /* more header lines ("Name: value\r\n"), or NULL */
};

/* The longest Content-Type a response carries (record.h keeps 127). */
#define REPLY_HTTP_CTYPE_MAX 127

/*
 * Appends `r` as the answer to HTTP request `req`. Returns false if `out`
 * cannot grow, or `r` has a Content-Type over REPLY_HTTP_CTYPE_MAX or
 * `extra` over 128 bytes.
 */
bool reply_http(struct buf *out, const struct proto_request *req,
                const struct reply_http *r);

/*
 * An error status with a short JSON body, {"error":"<reason>"} plus
 * `detail` (more members, already JSON, or NULL); `close` adds
 * "Connection: close".
 */
bool reply_http_error(struct buf *out, const struct proto_request *req,
                      uint16_t status, const char *detail, bool close);

/* "HTTP/1.1 100 Continue", for a request that expects it. */
bool reply_http_continue(struct buf *out);

#endif
