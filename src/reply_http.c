/*
 * reply_http: HTTP/1.x responses (see reply.h): the status line, the
 * headers every response carries (Date, Server, Content-Length,
 * Connection when the server will close), the ones a record gives
 * (Content-Type, ETag from its cas), and short JSON bodies for errors.
 */
#include "reply_internal.h"

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

bool
reply_http(struct buf *out, const struct proto_request *req,
           const struct reply_http *r)
{
    char head[768];
    char date[64];
    time_t now = time(NULL);
    struct tm tm;
    gmtime_r(&now, &tm);
    strftime(date, sizeof(date), "%a, %d %b %Y %H:%M:%S GMT", &tm);
    /* 1xx, 204 and 304 carry no body and no length (RFC 9110). */
    bool bodyless = r->status == 204 || r->status == 304;
    size_t length = r->nbody; /* HEAD: what GET would send */
    int n = snprintf(head, sizeof(head),
                     "HTTP/1.1 %u %s\r\nDate: %s\r\nServer: kura/%s\r\n",
                     r->status, _reason(r->status), date, PACKAGE_VERSION);
    if (!bodyless) {
        n += snprintf(head + n, sizeof(head) - (size_t)n,
                      "Content-Length: %zu\r\n", length);
    }
    if (r->nctype > 0 && !bodyless) {
        n += snprintf(head + n, sizeof(head) - (size_t)n,
                      "Content-Type: %.*s\r\n", (int)r->nctype, r->ctype);
    }
    if (r->has_etag) {
        n += snprintf(head + n, sizeof(head) - (size_t)n,
                      "ETag: \"%016" PRIx64 "\"\r\n", r->cas);
    }
    if (r->extra != NULL) {
        n += snprintf(head + n, sizeof(head) - (size_t)n, "%s", r->extra);
    }
    if (r->close || !req->http.keep_alive) {
        n += snprintf(head + n, sizeof(head) - (size_t)n,
                      "Connection: close\r\n");
    } else if (req->http.minor == 0) {
        n += snprintf(head + n, sizeof(head) - (size_t)n,
                      "Connection: keep-alive\r\n");
    }
    n += snprintf(head + n, sizeof(head) - (size_t)n, "\r\n");
    if (n < 0 || (size_t)n >= sizeof(head)) {
        return false;
    }
    bool head_only = req->http.method == PROTO_HTTP_HEAD || bodyless;
    return reply_raw(out, head, (size_t)n) &&
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
