/*
 * reply_base: the base every reply writer shares (reply_base.c), beyond
 * reply.h's reply_raw() and reply_text_code(). Included by the writers
 * (through reply_members.h) and by the front, reply.c; it knows neither.
 */
#ifndef KURA_REPLY_BASE_H
#define KURA_REPLY_BASE_H

#include "reply.h"

/* The version string every protocol reports. */
extern const char reply_version_string[];
extern const size_t reply_version_len;

/* The text line of a parser error, without noreply handling. */
bool reply_text_error(struct buf *out, enum proto_error err);

#endif
