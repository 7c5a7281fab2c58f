/*
 * json_check: JSON validation with yajl (see json_check.h).
 */
#include "json_check.h"

#include <stdio.h>
#include <string.h>
#include <yajl/yajl_parse.h>

bool
json_check(const char *text, size_t len, struct json_check_error *err)
{
    yajl_handle h = yajl_alloc(NULL, NULL, NULL);
    if (h == NULL) {
        snprintf(err->reason, sizeof(err->reason), "out of memory");
        err->offset = 0;
        return false;
    }
    yajl_status st = yajl_parse(h, (const unsigned char *)text, len);
    if (st == yajl_status_ok) {
        st = yajl_complete_parse(h);
    }
    bool ok = st == yajl_status_ok;
    if (!ok) {
        err->offset = yajl_get_bytes_consumed(h);
        unsigned char *msg = yajl_get_error(h, 0, NULL, 0);
        /* "parse error: <what>\n": the words after the prefix, one line */
        const char *m = msg != NULL ? (const char *)msg : "invalid JSON";
        const char *colon = strstr(m, ": ");
        m = colon != NULL ? colon + 2 : m;
        size_t n = strcspn(m, "\r\n");
        if (n >= sizeof(err->reason)) {
            n = sizeof(err->reason) - 1;
        }
        memcpy(err->reason, m, n);
        err->reason[n] = '\0';
        if (msg != NULL) {
            yajl_free_error(h, msg);
        }
    }
    yajl_free(h);
    return ok;
}
