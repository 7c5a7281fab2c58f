/*
 * cmdmask: -mask / -unmask expressions (see cmdmask.h).
 */
#include "cmdmask.h"

#include <stdio.h>
#include <string.h>
#include <strings.h>

#include "util.h"

#define B(cmd) ((uint64_t)1 << PROTO_CMD_##cmd)

#define READS (B(GET) | B(GETS))
#define WRITES                                                              \
    (B(SET) | B(ADD) | B(REPLACE) | B(APPEND) | B(PREPEND) | B(CAS) |        \
     B(DELETE) | B(INCR) | B(DECR) | B(TOUCH) | B(GAT) | B(GATS) |           \
     B(FLUSH_ALL))
#define MANAGE (B(FLUSH_ALL) | B(STATS) | B(VERBOSITY))

struct name_bits {
    const char *name;
    uint64_t bits;
};

static const struct name_bits names[] = {
    {"put", B(SET) | B(REPLACE) | B(CAS)},
    {"putkeep", B(ADD)},
    {"putcat", B(APPEND) | B(PREPEND)},
    {"out", B(DELETE)},
    {"get", READS | B(GAT) | B(GATS)},
    {"mget", READS | B(GAT) | B(GATS)},
    {"addint", B(INCR) | B(DECR)},
    {"vanish", B(FLUSH_ALL)},
    {"stat", B(STATS)},
    {"misc", B(TOUCH)},
    {"repl", CMDMASK_REPL},
    {"slave", CMDMASK_SLAVE},
    {"all", UINT64_MAX},
    {"allmc", READS | WRITES | MANAGE},
    {"allread", READS},
    {"allwrite", WRITES},
    {"allmanage", MANAGE},
    /* ttserver names without a memcached counterpart. */
    {"putshl", 0}, {"putnr", 0}, {"vsiz", 0}, {"iterinit", 0},
    {"iternext", 0}, {"fwmkeys", 0}, {"adddouble", 0}, {"ext", 0},
    {"sync", 0}, {"optimize", 0}, {"copy", 0}, {"restore", 0},
    {"setmst", 0}, {"rnum", 0}, {"size", 0}, {"allorg", 0},
    {"allhttp", 0},
};

static bool
_lookup(const char *name, size_t len, uint64_t *bits)
{
    char lower[32];
    enum proto_cmd cmd;

    if (len >= sizeof(lower)) {
        return false;
    }
    for (size_t i = 0; i < len; i++) {
        char c = name[i];
        lower[i] = (c >= 'A' && c <= 'Z') ? (char)(c - 'A' + 'a') : c;
    }
    lower[len] = '\0';
    if (len > 2 && lower[0] == '0' && lower[1] == 'x') {
        uint64_t v = 0;
        for (size_t i = 2; i < len; i++) {
            char c = lower[i];
            unsigned d;
            if (c >= '0' && c <= '9') {
                d = (unsigned)(c - '0');
            } else if (c >= 'a' && c <= 'f') {
                d = (unsigned)(c - 'a' + 10);
            } else {
                return false;
            }
            if (i - 2 >= 16) {
                return false;
            }
            v = (v << 4) | d;
        }
        *bits = v;
        return true;
    }
    /* ttserver's names first: "get" there means the whole get family. */
    for (size_t i = 0; i < sizeof(names) / sizeof(names[0]); i++) {
        if (strcmp(names[i].name, lower) == 0) {
            *bits = names[i].bits;
            return true;
        }
    }
    /* Meta commands are masked by what they do (proto_class()), so
     * only the classic names are accepted. */
    if (proto_cmd_lookup(lower, len, &cmd) && cmd < PROTO_CMD_REPL &&
        cmd != PROTO_CMD_VERSION && cmd != PROTO_CMD_QUIT) {
        *bits = cmdmask_bit(cmd);
        return true;
    }
    return false;
}

bool
cmdmask_apply(uint64_t *mask, const char *expr, bool unmask, char *err,
              size_t errlen)
{
    const char *p = expr;

    while (*p != '\0') {
        while (*p == ' ' || *p == ',') {
            p++;
        }
        if (*p == '\0') {
            break;
        }
        size_t len = strcspn(p, " ,");
        uint64_t bits;
        if (!_lookup(p, len, &bits)) {
            snprintf(err, errlen, "unknown command name '%.*s' in '%s'",
                     (int)len, p, expr);
            return false;
        }
        if (unmask) {
            *mask &= ~bits;
        } else {
            *mask |= bits;
        }
        p += len;
    }
    return true;
}

void
cmdmask_format(uint64_t mask, char *out, size_t outlen)
{
    size_t n = 0;

    out[0] = '\0';
    for (int i = 0; i < PROTO_CMD_COUNT; i++) {
        if (i != PROTO_CMD_REPL && (mask & cmdmask_bit((enum proto_cmd)i))) {
            int w = snprintf(out + n, outlen - n, "%s%s", n > 0 ? "," : "",
                             proto_cmd_name((enum proto_cmd)i));
            if (w < 0 || (size_t)w >= outlen - n) {
                return;
            }
            n += (size_t)w;
        }
    }
    const char *extra[] = {"repl", "slave"};
    uint64_t bits[] = {CMDMASK_REPL, CMDMASK_SLAVE};
    for (int i = 0; i < 2; i++) {
        if (mask & bits[i]) {
            int w = snprintf(out + n, outlen - n, "%s%s", n > 0 ? "," : "",
                             extra[i]);
            if (w < 0 || (size_t)w >= outlen - n) {
                return;
            }
            n += (size_t)w;
        }
    }
    if (n == 0) {
        util_strlcpy(out, "none", outlen);
    }
}
