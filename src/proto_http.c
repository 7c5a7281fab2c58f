/*
 * proto_http: HTTP/1.x request parser (see proto_http.h).
 */
#include "proto_http.h"

#include <string.h>
#include <strings.h>


/*
 * h2o's picohttpparser. Debian ships its code inside libh2o (libh2o-evloop)
 * without its header, so the two declarations kura uses are made here,
 * as its documentation gives them.
 */
struct phr_header {
    const char *name;
    size_t name_len;
    const char *value;
    size_t value_len;
};

int phr_parse_request(const char *buf, size_t len, const char **method,
                      size_t *method_len, const char **path, size_t *path_len,
                      int *minor_version, struct phr_header *headers,
                      size_t *num_headers, size_t last_len);

/* Longest chunk-size line (with extensions) accepted. */
#define CHUNK_LINE_MAX 1024
/* A raw path longer than this cannot decode to a 250-byte key. */
#define RAW_PATH_MAX (3 * PROTO_KEY_MAX + 2)

static const char *const method_names[] = {
    [PROTO_HTTP_GET] = "GET",       [PROTO_HTTP_HEAD] = "HEAD",
    [PROTO_HTTP_PUT] = "PUT",       [PROTO_HTTP_POST] = "POST",
    [PROTO_HTTP_DELETE] = "DELETE", [PROTO_HTTP_OTHER] = "OTHER",
};

const char *
proto_http_method_name(enum proto_http_method m)
{
    return (unsigned)m <= PROTO_HTTP_OTHER ? method_names[m] : "?";
}

static enum proto_status
_refuse(struct proto_parser *p, uint16_t status)
{
    p->error = PROTO_ERR_HTTP_STATUS;
    p->http_status = status;
    p->error_noreply = false;
    p->http_continue = false;
    return PROTO_ECLOSE;
}

static bool
_is(const char *s, size_t n, const char *word)
{
    return strlen(word) == n && strncasecmp(s, word, n) == 0;
}

/* Maps a method; false (501) if HTTP defines no such method. */
static bool
_method(const char *s, size_t n, uint8_t *out)
{
    static const struct {
        const char *name;
        enum proto_http_method m;
    } known[] = {
        {"GET", PROTO_HTTP_GET},       {"HEAD", PROTO_HTTP_HEAD},
        {"PUT", PROTO_HTTP_PUT},       {"POST", PROTO_HTTP_POST},
        {"DELETE", PROTO_HTTP_DELETE}, {"OPTIONS", PROTO_HTTP_OTHER},
        {"PATCH", PROTO_HTTP_OTHER},   {"TRACE", PROTO_HTTP_OTHER},
        {"CONNECT", PROTO_HTTP_OTHER},
    };
    for (size_t i = 0; i < sizeof(known) / sizeof(known[0]); i++) {
        if (strlen(known[i].name) == n && memcmp(known[i].name, s, n) == 0) {
            *out = (uint8_t)known[i].m;
            return true;
        }
    }
    return false;
}

static int
_hex(char c)
{
    if (c >= '0' && c <= '9') {
        return c - '0';
    }
    c = (char)(c | 0x20);
    return c >= 'a' && c <= 'f' ? c - 'a' + 10 : -1;
}

/* Percent-decodes `path` into req->keybuf: 0, or the status to send. */
static uint16_t
_key(struct proto_request *req, const char *path, size_t n)
{
    size_t k = 0;
    for (size_t i = 0; i < n; i++) {
        char c = path[i];
        if (c == '%') {
            int hi = i + 2 < n ? _hex(path[i + 1]) : -1;
            int lo = i + 2 < n ? _hex(path[i + 2]) : -1;
            if (hi < 0 || lo < 0) {
                return 400;
            }
            c = (char)(hi << 4 | lo);
            i += 2;
        }
        if (k == PROTO_KEY_MAX) {
            return 414;
        }
        req->keybuf[k++] = c;
    }
    if (!proto_key_valid(req->keybuf, k)) {
        return 400;
    }
    req->key = req->keybuf;
    req->nkey = k;
    return 0;
}

static bool
_digits(const char *s, size_t n, uint64_t *out)
{
    uint64_t v = 0;
    if (n == 0 || n > 19) {
        return false;
    }
    for (size_t i = 0; i < n; i++) {
        if (s[i] < '0' || s[i] > '9') {
            return false;
        }
        v = v * 10 + (uint64_t)(s[i] - '0');
    }
    *out = v;
    return true;
}

/* application/json, or any type ending in +json, parameters aside. */
static bool
_json_type(const char *s, size_t n)
{
    const char *semi = memchr(s, ';', n);
    size_t len = semi != NULL ? (size_t)(semi - s) : n;
    while (len > 0 && (s[len - 1] == ' ' || s[len - 1] == '\t')) {
        len--;
    }
    return _is(s, len, "application/json") ||
           (len > 5 && strncasecmp(s + len - 5, "+json", 5) == 0);
}

bool
proto_http_next_item(const char *list, size_t n, size_t *pos,
                     const char **item, size_t *len)
{
    size_t i = *pos;
    for (;;) {
        while (i < n && (list[i] == ' ' || list[i] == '\t' || list[i] == ',')) {
            i++;
        }
        if (i >= n) {
            *pos = n;
            return false;
        }
        size_t start = i;
        while (i < n && list[i] != ',') {
            i++;
        }
        size_t end = i;
        while (end > start && (list[end - 1] == ' ' || list[end - 1] == '\t')) {
            end--;
        }
        *pos = i;
        *item = list + start;
        *len = end - start;
        return true;
    }
}

/* Does the comma-separated `list` hold `token`? */
static bool
_has_token(const char *list, size_t n, const char *token)
{
    size_t pos = 0;
    const char *item;
    size_t len;
    while (proto_http_next_item(list, n, &pos, &item, &len)) {
        if (_is(item, len, token)) {
            return true;
        }
    }
    return false;
}

/*
 * A request line's shape, as far as `n` bytes of it go: a method token,
 * one space, a target of visible characters, one space, then `*tail`
 * (`*ntail` bytes). False if the bytes so far cannot be such a line.
 */
static bool
_line_shape(const char *line, size_t n, const char **tail, size_t *ntail)
{
    size_t i = 0;
    while (i < n && line[i] >= 'A' && line[i] <= 'Z') {
        i++;
    }
    if (i == 0 || i == n || line[i] != ' ') {
        return false;
    }
    size_t t = ++i;
    while (i < n && line[i] > ' ' && line[i] < 0x7f) {
        i++;
    }
    if (i == t || i == n || line[i] != ' ') {
        return false;
    }
    *tail = line + i + 1;
    *ntail = n - i - 1;
    return true;
}

/* Does `v` (`n` bytes) match the start of "HTTP/<digit>.<digit>"? */
static bool
_version_prefix(const char *v, size_t n)
{
    static const char shape[] = "HTTP/9.9";
    if (n > sizeof(shape) - 1) {
        return false;
    }
    for (size_t i = 0; i < n; i++) {
        bool digit = shape[i] == '9';
        if (digit ? (v[i] < '0' || v[i] > '9') : v[i] != shape[i]) {
            return false;
        }
    }
    return true;
}

/*
 * picohttpparser refuses a request line whose version is not HTTP/1.x.
 * Returns 505 for a well-formed line naming another version, 0 when the
 * unfinished line could still become one (wait for more), and 400 for
 * anything else; so the answer never depends on how the bytes arrived.
 */
static uint16_t
_version_refusal(const char *buf, size_t len)
{
    const char *eol = memchr(buf, '\n', len);
    size_t n = eol != NULL ? (size_t)(eol - buf) : len;
    const char *v;
    size_t nv;
    if (!_line_shape(buf, n, &v, &nv)) {
        return 400;
    }
    if (eol == NULL) {
        bool cr = nv == 9 && v[8] == '\r';
        return _version_prefix(v, nv - cr) ? 0 : 400;
    }
    nv -= nv > 0 && v[nv - 1] == '\r';
    if (nv != 8 || !_version_prefix(v, nv)) {
        return 400;
    }
    return v[5] == '1' && (v[7] == '0' || v[7] == '1') ? 400 : 505;
}

struct body_plan {
    bool chunked;
    bool has_length;
    uint64_t length;
};

/* Reads the headers kura uses into `req` and `plan`: 0, or a status. */
static uint16_t
_headers(const struct phr_header *h, size_t nh, struct proto_request *req,
         struct body_plan *plan, bool *expect)
{
    struct proto_http *x = &req->http;
    bool host = false;
    bool close = false;
    bool keep = false;
    for (size_t i = 0; i < nh; i++) {
        const char *v = h[i].value;
        size_t vn = h[i].value_len;
        if (h[i].name == NULL) {
            return 400; /* a folded line: obsolete, refused */
        }
        if (_is(h[i].name, h[i].name_len, "content-length")) {
            uint64_t len;
            if (!_digits(v, vn, &len) ||
                (plan->has_length && len != plan->length)) {
                return 400;
            }
            plan->has_length = true;
            plan->length = len;
        } else if (_is(h[i].name, h[i].name_len, "transfer-encoding")) {
            if (!_is(v, vn, "chunked")) {
                return 501;
            }
            plan->chunked = true;
        } else if (_is(h[i].name, h[i].name_len, "content-type")) {
            x->ctype = v;
            x->nctype = vn;
            x->json = _json_type(v, vn);
        } else if (_is(h[i].name, h[i].name_len, "if-match")) {
            x->if_match = v;
            x->n_if_match = vn;
        } else if (_is(h[i].name, h[i].name_len, "if-none-match")) {
            x->if_none_match = v;
            x->n_if_none_match = vn;
        } else if (_is(h[i].name, h[i].name_len, "expect")) {
            if (!_is(v, vn, "100-continue")) {
                return 417;
            }
            *expect = true;
        } else if (_is(h[i].name, h[i].name_len, "connection")) {
            close = close || _has_token(v, vn, "close");
            keep = keep || _has_token(v, vn, "keep-alive");
        } else if (_is(h[i].name, h[i].name_len, "kura-exptime")) {
            bool neg = vn > 0 && v[0] == '-';
            uint64_t e;
            if (!_digits(v + neg, vn - neg, &e) || e > INT32_MAX) {
                return 400;
            }
            x->has_exptime = true;
            x->exptime = neg ? -(int64_t)e : (int64_t)e;
        } else if (_is(h[i].name, h[i].name_len, "authorization")) {
            x->auth = v;
            x->nauth = vn;
        } else if (_is(h[i].name, h[i].name_len, "host")) {
            host = true;
        }
    }
    if (plan->chunked && plan->has_length) {
        return 400; /* two framings: refused, as a smuggling guard */
    }
    if (x->minor >= 1 && !host) {
        return 400;
    }
    x->keep_alive = x->minor >= 1 ? !close : keep && !close;
    return 0;
}

/*
 * Scans a chunked body starting at `buf` (`len` bytes): 1 when complete
 * (`*total` data bytes, `*used` bytes of framing and data), 0 when more
 * bytes are needed, or -status.
 */
static int
_scan_chunked(const char *buf, size_t len, size_t max, uint64_t *total,
              size_t *used)
{
    size_t pos = 0;
    uint64_t sum = 0;
    for (;;) {
        if (pos > PROTO_HTTP_CHUNKED_WIRE_MAX(max)) {
            return -413; /* framing out of all proportion to the data */
        }
        const char *eol = memchr(buf + pos, '\n', len - pos);
        if (eol == NULL) {
            return len - pos > CHUNK_LINE_MAX ? -400 : 0;
        }
        size_t line = (size_t)(eol - (buf + pos));
        if (line > CHUNK_LINE_MAX || line == 0 || buf[pos + line - 1] != '\r') {
            return -400;
        }
        uint64_t size = 0;
        size_t i = pos;
        int d;
        while (i < pos + line - 1 && (d = _hex(buf[i])) >= 0) {
            if (size > (UINT64_MAX >> 4)) {
                return -413;
            }
            size = size << 4 | (uint64_t)d;
            i++;
        }
        if (i == pos || (buf[i] != ';' && buf[i] != '\r' && buf[i] != ' ' &&
                         buf[i] != '\t')) {
            return -400;
        }
        pos += line + 1;
        if (size == 0) {
            /* trailers, then an empty line */
            for (;;) {
                const char *t = memchr(buf + pos, '\n', len - pos);
                if (t == NULL) {
                    return len - pos > PROTO_HTTP_HEAD_MAX ? -431 : 0;
                }
                size_t tl = (size_t)(t - (buf + pos));
                pos += tl + 1;
                if (tl == 1 && buf[pos - 2] == '\r') {
                    *total = sum;
                    *used = pos;
                    return 1;
                }
                if (tl == 0) {
                    return -400;
                }
            }
        }
        sum += size;
        if (sum > max) {
            return -413;
        }
        if (len - pos < size + 2) {
            return 0;
        }
        if (buf[pos + size] != '\r' || buf[pos + size + 1] != '\n') {
            return -400;
        }
        pos += (size_t)size + 2;
    }
}

/* Joins a complete chunked body (`len` bytes of framing and data, as
 * _scan_chunked() measured it) in place; returns the data's length. */
static size_t
_join_chunked(char *buf, size_t len)
{
    size_t pos = 0;
    size_t out = 0;
    for (;;) {
        uint64_t size = 0;
        int d;
        while ((d = _hex(buf[pos])) >= 0) {
            size = size << 4 | (uint64_t)d;
            pos++;
        }
        pos = (size_t)((char *)memchr(buf + pos, '\n', len - pos) - buf) + 1;
        if (size == 0) {
            return out;
        }
        memmove(buf + out, buf + pos, (size_t)size);
        out += (size_t)size;
        pos += (size_t)size + 2;
    }
}

enum proto_status
proto_http_parse(struct proto_parser *p, char *buf, size_t len,
                 size_t *consumed, struct proto_request *req)
{
    const char *method;
    const char *path;
    size_t nmethod;
    size_t npath;
    int minor;
    struct phr_header h[PROTO_HTTP_HEADERS_MAX];
    size_t nh = PROTO_HTTP_HEADERS_MAX;

    *consumed = 0;
    p->need = 0;
    p->error = PROTO_ERR_NONE;
    memset(req, 0, sizeof(*req));
    req->kind = PROTO_KIND_HTTP;
    req->cmd = PROTO_CMD_HTTP_GET;
    req->http.keep_alive = false;
    int r = phr_parse_request(buf, len, &method, &nmethod, &path, &npath,
                              &minor, h, &nh, 0);
    if (r == -2) {
        return len >= PROTO_HTTP_HEAD_MAX ? _refuse(p, 431) : PROTO_EUNFIN;
    }
    if (r < 0) {
        /* Malformed, or more headers than PROTO_HTTP_HEADERS_MAX. */
        if (nh >= PROTO_HTTP_HEADERS_MAX) {
            return _refuse(p, 431);
        }
        uint16_t st = _version_refusal(buf, len);
        return st == 0 ? PROTO_EUNFIN : _refuse(p, st);
    }
    size_t head = (size_t)r;
    if (head > PROTO_HTTP_HEAD_MAX) {
        return _refuse(p, 431);
    }
    if (minor != 0 && minor != 1) {
        return _refuse(p, 505);
    }
    req->http.minor = (uint8_t)minor;
    if (!_method(method, nmethod, &req->http.method)) {
        return _refuse(p, 501);
    }
    struct body_plan plan = {false, false, 0};
    bool expect = false;
    uint16_t st = _headers(h, nh, req, &plan, &expect);
    if (st != 0) {
        return _refuse(p, st);
    }
    /* The path: origin form only, the query left out. */
    const char *q = memchr(path, '?', npath);
    size_t plen = q != NULL ? (size_t)(q - path) : npath;
    const char *frag = memchr(path, '#', plen);
    plen = frag != NULL ? (size_t)(frag - path) : plen;
    if (plen == 0 || path[0] != '/') {
        return _refuse(p, 400);
    }
    req->http.path = path;
    req->http.npath = plen;
    if (plen >= 3 && memcmp(path, "/-/", 3) == 0) {
        req->cmd = PROTO_CMD_HTTP_ADMIN;
    } else {
        if (plen > RAW_PATH_MAX) {
            return _refuse(p, 414);
        }
        st = _key(req, path, plen);
        if (st != 0) {
            return _refuse(p, st);
        }
        switch (req->http.method) {
        case PROTO_HTTP_PUT:
        case PROTO_HTTP_POST:
            req->cmd = PROTO_CMD_HTTP_PUT;
            break;
        case PROTO_HTTP_DELETE:
            req->cmd = PROTO_CMD_HTTP_DELETE;
            break;
        case PROTO_HTTP_OTHER:
            return _refuse(p, 405);
        default:
            break;
        }
    }
    req->keys = req->key;
    req->keys_len = req->nkey;
    req->nkeys = req->key != NULL ? 1 : 0;
    /* The body: whole before the request is returned. */
    size_t total;
    if (plan.chunked) {
        uint64_t data;
        size_t used;
        int c = _scan_chunked(buf + head, len - head, p->limits.item_max, &data,
                              &used);
        if (c < 0) {
            return _refuse(p, (uint16_t)-c);
        }
        if (c == 0) {
            if (expect && !p->http_continue_sent) {
                p->http_continue = true;
            }
            return PROTO_EUNFIN;
        }
        req->value = buf + head;
        req->vlen = _join_chunked(buf + head, used);
        total = head + used;
    } else {
        uint64_t n = plan.has_length ? plan.length : 0;
        if (n > p->limits.item_max) {
            return _refuse(p, 413);
        }
        total = head + (size_t)n;
        if (len < total) {
            p->need = total;
            if (expect && !p->http_continue_sent) {
                p->http_continue = true;
            }
            return PROTO_EUNFIN;
        }
        req->value = buf + head;
        req->vlen = (size_t)n;
    }
    p->http_continue = false;
    p->http_continue_sent = false;
    *consumed = total;
    return PROTO_OK;
}
