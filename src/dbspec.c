/*
 * dbspec: database name parsing (see dbspec.h).
 */
#include "dbspec.h"

#include <stdio.h>
#include <string.h>
#include <strings.h>
#include <tchdb.h>

#include "util.h"

struct param {
    const char *name;
    size_t offset;
    int64_t min;
    int64_t max;
};

static const struct param params[] = {
    {"bnum", offsetof(struct dbspec, bnum), 1, INT64_MAX},
    {"apow", offsetof(struct dbspec, apow), 0, 16},
    {"fpow", offsetof(struct dbspec, fpow), 0, 20},
    {"rcnum", offsetof(struct dbspec, rcnum), 0, INT32_MAX},
    {"xmsiz", offsetof(struct dbspec, xmsiz), 0, INT64_MAX},
    {"dfunit", offsetof(struct dbspec, dfunit), 0, INT32_MAX},
};

static bool
_parse_opts(const char *v, uint8_t *opts)
{
    *opts = 0;
    for (; *v != '\0'; v++) {
        switch (*v) {
        case 'l': case 'L': *opts |= HDBTLARGE; break;
        case 'd': case 'D': *opts |= HDBTDEFLATE; break;
        case 'b': case 'B': *opts |= HDBTBZIP; break;
        case 't': case 'T': *opts |= HDBTTCBS; break;
        default: return false;
        }
    }
    return true;
}

static bool
_parse_param(char *item, struct dbspec *spec, char *err, size_t errlen)
{
    char *eq = strchr(item, '=');
    if (eq == NULL) {
        snprintf(err, errlen, "database parameter '%s' has no '='", item);
        return false;
    }
    *eq = '\0';
    const char *value = eq + 1;
    if (strcasecmp(item, "opts") == 0) {
        if (!_parse_opts(value, &spec->opts)) {
            snprintf(err, errlen,
                     "database parameter opts=%s: letters are l, d, b, t",
                     value);
            return false;
        }
        return true;
    }
    for (size_t i = 0; i < sizeof(params) / sizeof(params[0]); i++) {
        if (strcasecmp(item, params[i].name) != 0) {
            continue;
        }
        uint64_t v;
        if (!util_parse_size(value, &v) || v > (uint64_t)params[i].max ||
            (int64_t)v < params[i].min) {
            snprintf(err, errlen,
                     "database parameter %s=%s: expected a number from "
                     "%lld to %lld",
                     params[i].name, value, (long long)params[i].min,
                     (long long)params[i].max);
            return false;
        }
        *(int64_t *)((char *)spec + params[i].offset) = (int64_t)v;
        return true;
    }
    snprintf(err, errlen,
             "unknown database parameter '%s' (known: bnum, apow, fpow, "
             "opts, rcnum, xmsiz, dfunit)",
             item);
    return false;
}

bool
dbspec_parse(const char *name, struct dbspec *spec, char *err, size_t errlen)
{
    char copy[DBSPEC_PATH_MAX];

    memset(spec, 0, sizeof(*spec));
    spec->bnum = spec->apow = spec->fpow = -1;
    spec->rcnum = spec->xmsiz = spec->dfunit = -1;
    if (!util_strlcpy(copy, name, sizeof(copy))) {
        snprintf(err, errlen, "database name is too long");
        return false;
    }
    char *save = NULL;
    char *path = strtok_r(copy, "#", &save);
    if (path == NULL || *path == '\0' || name[0] == '#') {
        snprintf(err, errlen, "database name '%s' has no path", name);
        return false;
    }
    if (strcmp(path, "*") == 0) {
        spec->kind = DBSPEC_HASH_MEMORY;
    } else {
        size_t n = strlen(path);
        if (n < 4 || (strcmp(path + n - 4, ".tch") != 0 &&
                      strcmp(path + n - 4, ".hdb") != 0)) {
            snprintf(err, errlen,
                     "database '%s' must be a hash database ending in .tch "
                     "(or .hdb), or '*' for an in-memory one",
                     path);
            return false;
        }
        spec->kind = DBSPEC_HASH_FILE;
    }
    util_strlcpy(spec->path, path, sizeof(spec->path));
    for (char *item = strtok_r(NULL, "#", &save); item != NULL;
         item = strtok_r(NULL, "#", &save)) {
        if (!_parse_param(item, spec, err, errlen)) {
            return false;
        }
    }
    return true;
}

bool
dbspec_format(const struct dbspec *spec, char *out, size_t outlen)
{
    size_t n = 0;
    int w = snprintf(out, outlen, "%s", spec->path);

    if (w < 0 || (size_t)w >= outlen) {
        return false;
    }
    n = (size_t)w;
    for (size_t i = 0; i < sizeof(params) / sizeof(params[0]); i++) {
        int64_t v = *(const int64_t *)((const char *)spec + params[i].offset);
        if (v < 0) {
            continue;
        }
        w = snprintf(out + n, outlen - n, "#%s=%lld", params[i].name,
                     (long long)v);
        if (w < 0 || (size_t)w >= outlen - n) {
            return false;
        }
        n += (size_t)w;
    }
    if (spec->opts != 0) {
        w = snprintf(out + n, outlen - n, "#opts=%s%s%s%s",
                     (spec->opts & HDBTLARGE) ? "l" : "",
                     (spec->opts & HDBTDEFLATE) ? "d" : "",
                     (spec->opts & HDBTBZIP) ? "b" : "",
                     (spec->opts & HDBTTCBS) ? "t" : "");
        if (w < 0 || (size_t)w >= outlen - n) {
            return false;
        }
    }
    return true;
}
