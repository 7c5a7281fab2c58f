/*
 * reply_internal: the binary and meta writers behind reply.h, for
 * reply.c's dispatch only. Each function has the contract of its reply.h
 * counterpart, for a request of its own protocol.
 */
#ifndef KURA_REPLY_INTERNAL_H
#define KURA_REPLY_INTERNAL_H

#include <stdarg.h>

#include "reply.h"

/* The version string every protocol reports. */
extern const char reply_version_string[];

/* The text line of a parser error, without noreply handling. */
bool reply_text_error(struct buf *out, enum proto_error err);

bool reply_bin_result(struct buf *out, const struct proto_request *req,
                      enum reply_code code, const struct reply_item *it);
bool reply_bin_hit(struct buf *out, const struct proto_request *req,
                   const struct reply_item *it);
bool reply_bin_miss(struct buf *out, const struct proto_request *req,
                    const struct reply_item *it);
bool reply_bin_counter(struct buf *out, const struct proto_request *req,
                       uint64_t n, const struct reply_item *it);
bool reply_bin_error(struct buf *out, const struct proto_request *req,
                     enum proto_error err);
bool reply_bin_simple(struct buf *out, const struct proto_request *req,
                      const void *value, size_t vlen);
bool reply_bin_stat(struct buf *out, const struct proto_request *req,
                    const char *name, const char *value, size_t vlen);
bool reply_bin_sasl(struct buf *out, const struct proto_request *req,
                    enum reply_sasl_state state);

bool reply_meta_result(struct buf *out, const struct proto_request *req,
                       enum reply_code code, const struct reply_item *it);
bool reply_meta_hit(struct buf *out, const struct proto_request *req,
                    const struct reply_item *it);
bool reply_meta_miss(struct buf *out, const struct proto_request *req,
                     const struct reply_item *it);
bool reply_meta_counter(struct buf *out, const struct proto_request *req,
                        uint64_t n, const struct reply_item *it);

/* A memcached outcome as an HTTP status (errors of the write path). */
bool reply_http_result(struct buf *out, const struct proto_request *req,
                       enum reply_code code);

#endif
