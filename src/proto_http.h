/*
 * proto_http: a pure, incremental parser for HTTP/1.0 and 1.1 requests,
 * kurad's JSON document interface on the memcached port.
 *
 * A request becomes a struct proto_request like any other (proto.h):
 * GET and HEAD are PROTO_CMD_HTTP_GET, PUT and POST PROTO_CMD_HTTP_PUT,
 * DELETE PROTO_CMD_HTTP_DELETE, and anything under /-/ (kurad's own
 * endpoints) PROTO_CMD_HTTP_ADMIN. The key is the percent-decoded path
 * (the query is ignored), under the memcached key rules; the value is the
 * whole body. req->http holds what the reply needs (method, version,
 * keep-alive, Content-Type, conditional headers, Kura-Exptime,
 * Authorization).
 *
 * The request line and headers are parsed with h2o's picohttpparser;
 * bodies of Content-Length or chunked transfer coding are handled here.
 * A request is returned only once its whole body has arrived; a chunked
 * body is then joined in place in the caller's buffer, which is why that
 * buffer is not const. Memory is bounded: the head may not exceed
 * PROTO_HTTP_HEAD_MAX bytes (431), the body limits.item_max (413; a
 * chunked body's framing is bounded too), the decoded key 250 bytes (414).
 *
 * Every refusal is PROTO_ECLOSE with PROTO_ERR_HTTP_STATUS and the status
 * in p->http_status (400, 405, 413, 414, 417, 431, 501, 505): after a
 * malformed request the stream cannot be trusted, so the connection is
 * answered and closed.
 *
 * "Expect: 100-continue": when the head is complete and the body is not,
 * the parser returns PROTO_EUNFIN with p->http_continue set, once per
 * request; the caller sends "100 Continue" and clears it.
 *
 * Thread-safety: a parser belongs to one connection; no shared state.
 */
#ifndef KURA_PROTO_HTTP_H
#define KURA_PROTO_HTTP_H

#include <stdbool.h>
#include <stddef.h>

#include "proto.h"

/* Longest request line plus headers. */
#define PROTO_HTTP_HEAD_MAX 8192
/*
 * Most bytes a chunked body may take on the wire, framing included, for
 * an item limit `max`: twice the data and a little, so that tiny chunks
 * with long extensions cannot make a connection buffer far more than an
 * item (413).
 */
#define PROTO_HTTP_CHUNKED_WIRE_MAX(max) (2 * (size_t)(max) + 4096)
/* Most headers in one request. */
#define PROTO_HTTP_HEADERS_MAX 64

enum proto_http_method {
    PROTO_HTTP_GET,
    PROTO_HTTP_HEAD,
    PROTO_HTTP_PUT,
    PROTO_HTTP_POST,
    PROTO_HTTP_DELETE,
    PROTO_HTTP_OTHER, /* a method HTTP defines that kurad does not serve */
};

/*
 * Parses at most one request from `buf` (`len` unread bytes); the
 * contract of proto_parse() (proto.h) otherwise, with the additions
 * above.
 */
enum proto_status proto_http_parse(struct proto_parser *p, char *buf,
                                   size_t len, size_t *consumed,
                                   struct proto_request *req);

/*
 * Iterates over a comma-separated header list (Connection, If-Match...):
 * from `*pos` (0 at first), sets `*item`/`*len` to the next element with
 * surrounding blanks removed, advances `*pos` and returns true; false at
 * the end. Empty elements are skipped.
 */
bool proto_http_next_item(const char *list, size_t n, size_t *pos,
                          const char **item, size_t *len);

/* The method's name ("GET"...). */
const char *proto_http_method_name(enum proto_http_method m);

#endif
