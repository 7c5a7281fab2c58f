/*
 * proto_internal: what kura's parsers share beyond proto.h and
 * proto_token.h: the start of every parse and the failure helper
 * (proto.c), and the meta parser's entry, which the text parser
 * dispatches to. Included by proto.c, proto_text.c, proto_meta.c and
 * proto_bin.c.
 */
#ifndef KURA_PROTO_INTERNAL_H
#define KURA_PROTO_INTERNAL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "proto.h"
#include "proto_token.h"

/*
 * The start of every parse: resets `p`'s per-request state and
 * `*consumed`, then discards what remains of a rejected value's data
 * (p->swallow) from the front of `*buf`/`*len`, counting it in
 * `*consumed`. Returns true when the caller must return PROTO_EUNFIN
 * (the swallow is not done, or nothing follows it); otherwise `*buf` and
 * `*len` describe what follows and `*eaten` what was discarded.
 */
bool proto_begin(struct proto_parser *p, const char **buf, size_t *len,
                 size_t *consumed, size_t *eaten);

/* Records error `err` in `p` and returns PROTO_EREQ or PROTO_ECLOSE. */
enum proto_status proto_fail(struct proto_parser *p, enum proto_error err,
                             bool noreply);

/*
 * Parses a meta command line (mg, ms, md, ma, me, mn) of `line_len` bytes
 * at the start of `buf` (`len` bytes buffered, `hdr` the line with its
 * end), like proto_parse(): sets `*consumed`, returns PROTO_OK with
 * `req` filled, PROTO_EUNFIN for an ms whose data block is incomplete,
 * or a failure.
 */
enum proto_status proto_meta_parse(struct proto_parser *p,
                                   struct proto_request *req, const char *buf,
                                   size_t len, size_t line_len, size_t hdr,
                                   size_t *consumed);

#endif
