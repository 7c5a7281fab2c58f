/*
 * backup_pos: a backup's position file and restore times (see
 * backup_pos.h). Calendar arithmetic is done here rather than with
 * timegm()/mktime(), so nothing depends on the process's time zone.
 */
#include "backup_pos.h"

#include <inttypes.h>
#include <stdio.h>
#include <string.h>

#include "util.h"

#define US_PER_S UINT64_C(1000000)
#define YEAR_MIN 1970
#define YEAR_MAX 9999

/* Days from 1970-01-01 to `y`-`m`-`d` (proleptic Gregorian). */
static int64_t
_days_from_civil(int64_t y, int64_t m, int64_t d)
{
    y -= m <= 2;
    int64_t era = y / 400; /* y >= 1969 here, so no negative division */
    int64_t yoe = y - era * 400;
    int64_t doy = (153 * (m + (m > 2 ? -3 : 9)) + 2) / 5 + d - 1;
    int64_t doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    return era * 146097 + doe - 719468;
}

/* The inverse of _days_from_civil(). */
static void
_civil_from_days(int64_t z, int64_t *y, int64_t *m, int64_t *d)
{
    z += 719468;
    int64_t era = z / 146097;
    int64_t doe = z - era * 146097;
    int64_t yoe = (doe - doe / 1460 + doe / 36524 - doe / 146096) / 365;
    int64_t doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    int64_t mp = (5 * doy + 2) / 153;
    *d = doy - (153 * mp + 2) / 5 + 1;
    *m = mp + (mp < 10 ? 3 : -9);
    *y = yoe + era * 400 + (*m <= 2);
}

static bool
_leap(int64_t y)
{
    return (y % 4 == 0 && y % 100 != 0) || y % 400 == 0;
}

static int64_t
_month_days(int64_t y, int64_t m)
{
    static const int8_t days[12] = {31, 28, 31, 30, 31, 30,
                                    31, 31, 30, 31, 30, 31};
    return m == 2 && _leap(y) ? 29 : days[m - 1];
}

/* Reads exactly `n` digits at `*p` into `*out`, advancing `*p`. */
static bool
_digits(const char **p, int n, int64_t *out)
{
    int64_t v = 0;
    for (int i = 0; i < n; i++) {
        char c = (*p)[i];
        if (c < '0' || c > '9') {
            return false;
        }
        v = v * 10 + (c - '0');
    }
    *p += n;
    *out = v;
    return true;
}

/* Reads ".f" with 1-6 digits as microseconds; nothing there is 0. */
static bool
_fraction(const char **p, uint64_t *us)
{
    *us = 0;
    if (**p != '.') {
        return true;
    }
    (*p)++;
    int n = 0;
    uint64_t scale = US_PER_S;
    while (**p >= '0' && **p <= '9') {
        if (++n > 6) {
            return false;
        }
        scale /= 10;
        *us += (uint64_t)(**p - '0') * scale;
        (*p)++;
    }
    return n > 0;
}

static bool
_unix_time(const char *s, uint64_t *us)
{
    if (*s == '@') {
        s++;
    }
    const char *dot = strchr(s, '.');
    size_t ilen = dot != NULL ? (size_t)(dot - s) : strlen(s);
    uint64_t secs;
    uint64_t frac;
    /* Up to year 9999, so the product cannot overflow. */
    if (!util_parse_uint(s, ilen, 253402300799ull, &secs)) {
        return false;
    }
    const char *p = s + ilen;
    if (!_fraction(&p, &frac) || *p != '\0') {
        return false;
    }
    *us = secs * US_PER_S + frac;
    return true;
}

/* "Z", "+hh", "+hh:mm" or "+hhmm" (or '-'): seconds east of UTC. */
static bool
_zone(const char *p, int64_t *east)
{
    if (p[0] == 'Z' && p[1] == '\0') {
        *east = 0;
        return true;
    }
    if (p[0] != '+' && p[0] != '-') {
        return false;
    }
    int64_t sign = p[0] == '-' ? -1 : 1;
    int64_t hh;
    int64_t mm = 0;
    p++;
    if (!_digits(&p, 2, &hh)) {
        return false;
    }
    bool colon = *p == ':';
    p += colon ? 1 : 0;
    if ((colon || *p != '\0') && !_digits(&p, 2, &mm)) {
        return false;
    }
    if (*p != '\0' || hh > 23 || mm > 59) {
        return false;
    }
    *east = sign * (hh * 3600 + mm * 60);
    return true;
}

static bool
_iso_time(const char *s, uint64_t *us)
{
    const char *p = s;
    int64_t y;
    int64_t mo;
    int64_t d;
    int64_t h;
    int64_t mi;
    int64_t sec = 0;
    uint64_t frac = 0;
    int64_t east;

    if (!_digits(&p, 4, &y) || *p++ != '-' || !_digits(&p, 2, &mo) ||
        *p++ != '-' || !_digits(&p, 2, &d) || (*p != 'T' && *p != ' ')) {
        return false;
    }
    p++;
    if (!_digits(&p, 2, &h) || *p++ != ':' || !_digits(&p, 2, &mi)) {
        return false;
    }
    if (*p == ':') {
        p++;
        if (!_digits(&p, 2, &sec) || !_fraction(&p, &frac)) {
            return false;
        }
    }
    if (!_zone(p, &east)) {
        return false;
    }
    if (y < YEAR_MIN || y > YEAR_MAX || mo < 1 || mo > 12 || d < 1 ||
        d > _month_days(y, mo) || h > 23 || mi > 59 || sec > 59) {
        return false;
    }
    int64_t t = _days_from_civil(y, mo, d) * 86400 + h * 3600 + mi * 60 +
                sec - east;
    if (t < 0) {
        return false;
    }
    *us = (uint64_t)t * US_PER_S + frac;
    return true;
}

bool
backup_pos_time_parse(const char *s, uint64_t *us)
{
    if (s == NULL || *s == '\0') {
        return false;
    }
    /* Four digits then '-' is a date; anything else must be a number. */
    if (strlen(s) > 4 && s[4] == '-') {
        return _iso_time(s, us);
    }
    return _unix_time(s, us);
}

void
backup_pos_time_format(uint64_t us, char out[BACKUP_POS_TIME_MAX])
{
    uint64_t secs = us / US_PER_S;
    if (secs > 253402300799ull) {
        secs = 253402300799ull; /* 9999-12-31T23:59:59 */
    }
    int64_t days = (int64_t)(secs / 86400);
    int64_t rem = (int64_t)(secs % 86400);
    int64_t y;
    int64_t m;
    int64_t d;
    _civil_from_days(days, &y, &m, &d);
    snprintf(out, BACKUP_POS_TIME_MAX,
             "%04" PRId64 "-%02" PRId64 "-%02" PRId64 "T%02" PRId64
             ":%02" PRId64 ":%02" PRId64 ".%06" PRIu64 "Z",
             y, m, d, rem / 3600, rem / 60 % 60, rem % 60,
             (uint64_t)(us % US_PER_S));
}

int
backup_pos_format(const struct backup_pos *p, char *out, size_t cap)
{
    char t[BACKUP_POS_TIME_MAX];
    backup_pos_time_format(p->lsn, t);
    int n = snprintf(out, cap,
                     "rts %" PRIu64 " %" PRIu64 "\nsid %" PRIu32
                     "\ntime %s\n", p->lsn, p->seq, p->sid, t);
    return n > 0 && (size_t)n < cap ? n : -1;
}

/* A canonical decimal: digits only, no leading zero unless just "0". */
static bool
_canon(const char *s, size_t len, uint64_t max, uint64_t *out)
{
    if (len == 0 || (len > 1 && s[0] == '0')) {
        return false;
    }
    return util_parse_uint(s, len, max, out);
}

/*
 * Takes the line at `*p` (before `end`), which must start with `word` and
 * a space and end in '\n'; sets `*arg`/`*alen` to what follows the space.
 */
static bool
_line(const char **p, const char *end, const char *word, const char **arg,
      size_t *alen)
{
    size_t wl = strlen(word);
    const char *nl = memchr(*p, '\n', (size_t)(end - *p));
    if (nl == NULL || (size_t)(nl - *p) <= wl ||
        memcmp(*p, word, wl) != 0 || (*p)[wl] != ' ') {
        return false;
    }
    *arg = *p + wl + 1;
    *alen = (size_t)(nl - *arg);
    *p = nl + 1;
    return true;
}

bool
backup_pos_parse(const char *text, size_t len, struct backup_pos *p)
{
    const char *at = text;
    const char *end = text + len;
    const char *arg;
    size_t alen;
    uint64_t lsn;
    uint64_t seq;
    uint64_t sid;
    char t[BACKUP_POS_TIME_MAX];

    if (!_line(&at, end, "rts", &arg, &alen)) {
        return false;
    }
    const char *sp = memchr(arg, ' ', alen);
    if (sp == NULL || !_canon(arg, (size_t)(sp - arg), UINT64_MAX, &lsn) ||
        !_canon(sp + 1, alen - (size_t)(sp - arg) - 1, UINT64_MAX, &seq)) {
        return false;
    }
    if (!_line(&at, end, "sid", &arg, &alen) ||
        !_canon(arg, alen, 65535, &sid) || sid == 0) {
        return false;
    }
    if (!_line(&at, end, "time", &arg, &alen) || at != end) {
        return false;
    }
    backup_pos_time_format(lsn, t);
    if (alen != strlen(t) || memcmp(arg, t, alen) != 0) {
        return false;
    }
    p->lsn = lsn;
    p->seq = seq;
    p->sid = (uint32_t)sid;
    return true;
}
