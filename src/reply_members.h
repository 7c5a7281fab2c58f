/*
 * reply_members: the writers behind reply.h, one per protocol, for
 * reply.c's dispatch: reply_text.c, reply_bin.c, reply_meta.c and
 * reply_http.c (whose public part is in reply.h). Each function has the
 * contract of its reply.h counterpart, for a request of its own protocol.
 * They build on reply_base.h and never call the front.
 */
#ifndef KURA_REPLY_MEMBERS_H
#define KURA_REPLY_MEMBERS_H

#include <stdarg.h>

#include "reply_base.h"

/* reply_text.c */
bool reply_text_result(struct buf *out, const struct proto_request *req,
                       enum reply_code code);
bool reply_text_hit(struct buf *out, const struct proto_request *req,
                    const struct reply_item *it);
bool reply_text_counter(struct buf *out, const struct proto_request *req,
                        uint64_t n);
/* "CLIENT_ERROR <command> not allowed" (-mask), silenced by noreply */
bool reply_text_denied(struct buf *out, const struct proto_request *req);
bool reply_text_version(struct buf *out);
/* "STAT <name> <value>" with a value of `n` bytes */
bool reply_text_stat(struct buf *out, const char *name, const void *value,
                     size_t n);

/* reply_bin.c */
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
