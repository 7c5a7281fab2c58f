/*
 * reply_http: HTTP/1.x responses (see reply.h): the status line, the
 * headers every response carries (Date, Server, Content-Length,
 * Connection when the server will close), the ones a record gives
 * (Content-Type, ETag from its cas), and short JSON bodies for errors.
 */
#include "reply_members.h"

#include <assert.h>
#include <inttypes.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

#include "config.h"
#include "proto_http.h"

static const char *
_reason(uint16_t status)
{
    switch (status) {
    case 100: return "Continue";
    case 200: return "OK";
    case 201: return "Created";
    case 204: return "No Content";
    case 304: return "Not Modified";
    case 400: return "Bad Request";
    case 401: return "Unauthorized";
    case 403: return "Forbidden";
    case 404: return "Not Found";
    case 405: return "Method Not Allowed";
    case 412: return "Precondition Failed";
    case 413: return "Content Too Large";
    case 414: return "URI Too Long";
    case 417: return "Expectation Failed";
    case 431: return "Request Header Fields Too Large";
    case 500: return "Internal Server Error";
    case 501: return "Not Implemented";
    case 503: return "Service Unavailable";
    case 505: return "HTTP Version Not Supported";
    case 507: return "Insufficient Storage";
    default: return "Unknown";
    }
}

const char *
reply_http_date(struct reply_http_date *d, int64_t now_s)
{
    /* a fresh `d` says second 0 with no text: second 0 formats too */
    if (d->second != now_s || d->text[0] == '\0') {
        time_t t = (time_t)now_s;
        struct tm tm;
        gmtime_r(&t, &tm);
        strftime(d->text, sizeof(d->text), "%a, %d %b %Y %H:%M:%S GMT", &tm);
        d->second = now_s;
    }
    return d->text;
}

/* Appends `s` (`n` bytes) at `*p`, which has room (the head is sized). */
static void
_put(char **p, const char *s, size_t n)
{
    memcpy(*p, s, n);
    *p += n;
}

#define PUT_LIT(p, lit) _put((p), (lit), sizeof(lit) - 1)

static void
_put_u64(char **p, uint64_t v)
{
    char digits[20];
    size_t n = 0;
    do {
        digits[n++] = (char)('0' + v % 10);
        v /= 10;
    } while (v != 0);
    while (n > 0) {
        *(*p)++ = digits[--n];
    }
}

bool
reply_http(struct buf *out, const struct proto_request *req,
           const struct reply_http *r)
{
    static const char hex[] = "0123456789abcdef";
    /* Status line, Date, Server, length, type (at most 127 bytes), ETag,
     * Connection: well under this; `extra` is checked on its own. */
    char head[640];
    char *p = head;
    struct reply_http_date now = {0, ""};
    const char *date = r->date;
    if (date == NULL) {
        date = reply_http_date(&now, (int64_t)time(NULL));
    }
    const char *reason = _reason(r->status);
    size_t nextra = r->extra != NULL ? strlen(r->extra) : 0;
    if (r->nctype > REPLY_HTTP_CTYPE_MAX || nextra > 128) {
        return false;
    }
    /* 1xx, 204 and 304 carry no body and no length (RFC 9110). */
    bool bodyless = r->status == 204 || r->status == 304;
    PUT_LIT(&p, "HTTP/1.1 ");
    _put_u64(&p, r->status);
    *p++ = ' ';
    _put(&p, reason, strlen(reason));
    PUT_LIT(&p, "\r\nDate: ");
    _put(&p, date, strlen(date));
    PUT_LIT(&p, "\r\nServer: kura/" PACKAGE_VERSION "\r\n");
    if (!bodyless) {
        PUT_LIT(&p, "Content-Length: "); /* HEAD: what GET would send */
        _put_u64(&p, r->nbody);
        PUT_LIT(&p, "\r\n");
        if (r->nctype > 0) {
            PUT_LIT(&p, "Content-Type: ");
            _put(&p, r->ctype, r->nctype);
            PUT_LIT(&p, "\r\n");
        }
    }
    if (r->has_etag) {
        PUT_LIT(&p, "ETag: \"");
        for (int shift = 60; shift >= 0; shift -= 4) {
            *p++ = hex[(r->cas >> shift) & 0xf];
        }
        PUT_LIT(&p, "\"\r\n");
    }
    if (nextra > 0) {
        _put(&p, r->extra, nextra);
    }
    if (r->close || !req->http.keep_alive) {
        PUT_LIT(&p, "Connection: close\r\n");
    } else if (req->http.minor == 0) {
        PUT_LIT(&p, "Connection: keep-alive\r\n");
    }
    PUT_LIT(&p, "\r\n");
    assert((size_t)(p - head) <= sizeof(head));
    bool head_only = req->http.method == PROTO_HTTP_HEAD || bodyless;
    return reply_raw(out, head, (size_t)(p - head)) &&
           (head_only || r->nbody == 0 || reply_raw(out, r->body, r->nbody));
}

bool
reply_http_error(struct buf *out, const struct proto_request *req,
                 uint16_t status, const char *detail, bool close)
{
    char body[320];
    int n = detail != NULL
                ? snprintf(body, sizeof(body), "{\"error\":\"%s\",%s}\n",
                           _reason(status), detail)
                : snprintf(body, sizeof(body), "{\"error\":\"%s\"}\n",
                           _reason(status));
    if (n < 0 || (size_t)n >= sizeof(body)) {
        n = snprintf(body, sizeof(body), "{\"error\":\"%s\"}\n",
                     _reason(status));
    }
    struct reply_http r = {
        .status = status,
        .ctype = "application/json",
        .nctype = 16,
        .body = body,
        .nbody = (size_t)n,
        .close = close,
        .extra = status == 401 ? "WWW-Authenticate: Basic realm=\"kura\"\r\n"
                               : NULL,
    };
    return reply_http(out, req, &r);
}

bool
reply_http_continue(struct buf *out)
{
    static const char line[] = "HTTP/1.1 100 Continue\r\n\r\n";
    return reply_raw(out, line, sizeof(line) - 1);
}

bool
reply_http_result(struct buf *out, const struct proto_request *req,
                  enum reply_code code)
{
    switch (code) {
    case REPLY_SERVER_ERROR_READONLY:
    case REPLY_SERVER_ERROR_OOM:
        return reply_http_error(out, req, 503, NULL, false);
    case REPLY_SERVER_ERROR_NOSPACE:
        return reply_http_error(out, req, 507, NULL, false);
    case REPLY_UNAUTHENTICATED:
    case REPLY_AUTH_FAILED:
        return reply_http_error(out, req, 401, NULL, false);
    case REPLY_ERROR:
        return reply_http_error(out, req, 501, NULL, false);
    case REPLY_TOO_LARGE:
        return reply_http_error(out, req, 413, NULL, true);
    default:
        return reply_http_error(out, req, 500, NULL, false);
    }
}
