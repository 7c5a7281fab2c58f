/*
 * salvage: rebuilding a hash database from its intact records (see
 * salvage.h).
 */
#include "salvage.h"

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <tchdb.h>
#include <time.h>
#include <unistd.h>

#include "atomicfile.h"
#include "record.h"
#include "tcfile.h"

/* Stamps a record written before seals existed may plausibly carry. */
#define LEGACY_TS_MIN UINT64_C(1262304000000000) /* 2010 */
#define LEGACY_TS_SLACK_US (UINT64_C(86400) * 1000000)

struct rebuild {
    struct tcfile f;
    TCHDB *out;
    uint32_t salt;     /* of the old file: seals are checked against it */
    uint32_t new_salt; /* of the new file */
    uint8_t *buf;      /* a re-sealed copy, when the salt changes */
    size_t cap;
    struct salvage_report *r;
    uint64_t now_us;
    uint64_t end;      /* walk up to here */
};

void
salvage_tuning_keep(struct salvage_tuning *t)
{
    t->bnum = -1;
    t->apow = -1;
    t->fpow = -1;
    t->opts = -1;
    t->xmsiz = 0;
    t->end = 0;
}

/* A record without a seal is believed only if everything about it agrees:
 * the hash byte Tokyo Cabinet derived from its key and a plausible stamp. */
static bool
_plausible_legacy(struct rebuild *rb, const struct tcfile_block *b,
                  const uint8_t *v, size_t len)
{
    uint8_t hash;
    struct record_meta m;
    const uint8_t *value;
    size_t vlen;
    (void)tcfile_bucket_of(rb->f.bnum, b->key, b->ksiz, &hash);
    return hash == b->hash && b->ksiz > 0 &&
           record_decode(v, len, &m, &value, &vlen) == RECORD_OK &&
           m.ts >= LEGACY_TS_MIN && m.ts <= rb->now_us + LEGACY_TS_SLACK_US;
}

/* Writes `v` under the record's key unless a newer copy is there. */
static int
_keep(struct rebuild *rb, const struct tcfile_block *b, const uint8_t *v,
      size_t len)
{
    struct record_meta in;
    struct record_meta have;
    const uint8_t *value;
    size_t vlen;
    uint8_t env[RECORD_HEADER_MAX + 1];

    if (record_decode(v, len, &in, &value, &vlen) != RECORD_OK) {
        return 0;
    }
    int n = tchdbget3(rb->out, b->key, (int)b->ksiz, env, (int)sizeof(env));
    if (n > 0 && record_decode(env, (size_t)n, &have, &value, &vlen) ==
                     RECORD_OK && !record_newer(&in, &have)) {
        rb->r->superseded++;
        return 0;
    }
    if (n > 0) {
        rb->r->superseded++; /* the copy already written loses */
    }
    const uint8_t *put = v;
    if (rb->new_salt != rb->salt && (v[0] >> 4) == RECORD_VERSION) {
        if (len > rb->cap) {
            uint8_t *grown = realloc(rb->buf, len);
            if (grown == NULL) {
                return -1;
            }
            rb->buf = grown;
            rb->cap = len;
        }
        memcpy(rb->buf, v, len);
        record_seal(rb->buf, len, b->key, b->ksiz, rb->new_salt);
        put = rb->buf;
    }
    if (!tchdbput(rb->out, b->key, (int)b->ksiz, put, (int)len)) {
        return -1;
    }
    rb->r->kept += n > 0 ? 0 : 1;
    return 0;
}

/*
 * Tries the block at `off` as an intact record. Returns 1 (kept; `*size`
 * is its size), 0 (not one) or -1 (the new file failed).
 */
static int
_try_record(struct rebuild *rb, uint64_t off, uint64_t *size)
{
    struct tcfile_block b;
    const char *why;
    if (rb->f.map[off] != TCFILE_MAGIC_RECORD ||
        !tcfile_block(&rb->f, off, rb->end, &b, &why) || b.ksiz == 0) {
        return 0;
    }
    size_t len;
    bool owned;
    const uint8_t *v = tcfile_value(&rb->f, &b, &len, &owned);
    if (v == NULL) {
        return 0;
    }
    int rc = 0;
    enum record_status rs = record_verify(v, len, b.key, b.ksiz, rb->salt);
    if (rs == RECORD_OK ||
        (rs == RECORD_UNSEALED && _plausible_legacy(rb, &b, v, len))) {
        rc = _keep(rb, &b, v, len) == 0 ? 1 : -1;
        *size = b.size;
    } else if (rs == RECORD_ECORRUPT) {
        struct record_meta m;
        const uint8_t *value;
        size_t vlen;
        if (record_decode(v, len, &m, &value, &vlen) == RECORD_OK) {
            rb->r->torn++;
        }
    }
    if (owned) {
        free((void *)v);
    }
    return rc;
}

static int
_walk(struct rebuild *rb)
{
    uint64_t align = (uint64_t)1 << rb->f.apow;
    uint64_t off = rb->f.frec;
    uint64_t bad_from = 0;
    bool in_bad = false;
    bool in_free = false;

    while (off < rb->end) {
        uint64_t size = 0;
        int rc = _try_record(rb, off, &size);
        if (rc < 0) {
            return -1;
        }
        if (rc == 1) {
            if (in_bad) {
                rb->r->unreadable += off - bad_from;
                in_bad = false;
            }
            in_free = false;
            off += size;
            continue;
        }
        /* Free space is walked like damage, but not counted as such: its
         * header is not trusted either. */
        struct tcfile_block b;
        const char *why;
        if (rb->f.map[off] == TCFILE_MAGIC_FREE &&
            tcfile_block(&rb->f, off, rb->end, &b, &why)) {
            if (in_bad) {
                rb->r->unreadable += off - bad_from;
                in_bad = false;
            }
            in_free = true;
        } else if (!in_free && !in_bad) {
            in_bad = true;
            bad_from = off;
            if (rb->r->first_damage == 0) {
                rb->r->first_damage = off;
            }
        }
        off += align;
    }
    if (in_bad) {
        rb->r->unreadable += rb->end - bad_from;
    }
    return 0;
}

static int
_fsync_path(const char *path)
{
    int fd = open(path, O_RDWR | O_CLOEXEC);
    if (fd < 0) {
        return -1;
    }
    int rc = fsync(fd);
    int saved = errno;
    close(fd);
    errno = saved;
    return rc;
}

/* Marks the closed file `path` as cleanly stopped, durably. */
static int
_mark_clean(const char *path)
{
    int fd = open(path, O_RDWR | O_CLOEXEC);
    uint8_t one = 1;
    if (fd < 0) {
        return -1;
    }
    int rc = pwrite(fd, &one, 1, TCFILE_KURA_CLEAN_OFF) == 1 &&
                     fdatasync(fd) == 0
                 ? 0
                 : -1;
    int saved = errno;
    close(fd);
    errno = saved;
    return rc;
}

static int
_open_out(struct rebuild *rb, const char *tmp, const struct salvage_tuning *t,
          char *err, size_t errlen)
{
    rb->out = tchdbnew();
    int64_t bnum = t->bnum > 0 ? t->bnum : (int64_t)rb->f.bnum;
    int apow = t->apow >= 0 ? (int)t->apow : (int)rb->f.apow;
    int fpow = t->fpow >= 0 ? (int)t->fpow : (int)rb->f.fpow;
    int opts = t->opts >= 0 ? t->opts : rb->f.opts;
    if (rb->out == NULL ||
        !tchdbtune(rb->out, bnum, (int8_t)apow, (int8_t)fpow, (uint8_t)opts) ||
        (t->xmsiz > 0 && !tchdbsetxmsiz(rb->out, t->xmsiz)) ||
        !tchdbopen(rb->out, tmp, HDBOWRITER | HDBOCREAT | HDBOTRUNC)) {
        snprintf(err, errlen, "cannot create %s: %s", tmp,
                 rb->out != NULL ? tchdberrmsg(tchdbecode(rb->out))
                                 : "out of memory");
        return -1;
    }
    struct tcfile_kura k = {true, rb->new_salt, false, {0}};
    tcfile_kura_encode(&k, (uint8_t *)tchdbopaque(rb->out));
    return 0;
}

int
salvage_rebuild(const char *path, const struct salvage_tuning *t,
                struct salvage_report *r, char *err, size_t errlen)
{
    struct rebuild rb;
    char tmp[4096];
    char why[160];

    memset(r, 0, sizeof(*r));
    memset(&rb, 0, sizeof(rb));
    rb.r = r;
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    rb.now_us = (uint64_t)ts.tv_sec * 1000000 + (uint64_t)ts.tv_nsec / 1000;
    if (snprintf(tmp, sizeof(tmp), "%s.rebuild", path) >= (int)sizeof(tmp)) {
        snprintf(err, errlen, "path too long: %s", path);
        return -1;
    }
    switch (tcfile_open(&rb.f, path, why, sizeof(why))) {
    case TCFILE_EMPTY:
        return 0;
    case TCFILE_EIO:
        snprintf(err, errlen, "cannot read %s: %s", path, strerror(errno));
        return -1;
    case TCFILE_BAD:
        snprintf(err, errlen, "%s cannot be salvaged: %s", path, why);
        return -1;
    case TCFILE_OK:
        break;
    }
    r->old_size = rb.f.size;
    struct tcfile_kura k;
    tcfile_kura_decode(rb.f.map + TCFILE_OPAQUE_OFF, &k);
    rb.salt = k.present ? k.salt : 0;
    if (getrandom(&rb.new_salt, sizeof(rb.new_salt), 0) !=
        (ssize_t)sizeof(rb.new_salt)) {
        rb.new_salt = (uint32_t)rb.now_us ^ (uint32_t)getpid();
    }
    if (rb.new_salt == rb.salt) {
        rb.new_salt++;
    }
    rb.end = t->end > 0 && t->end < rb.f.size ? t->end : rb.f.size;
    unlink(tmp);
    int rc = _open_out(&rb, tmp, t, err, errlen);
    if (rc == 0 && _walk(&rb) != 0) {
        snprintf(err, errlen, "cannot write %s: %s", tmp,
                 tchdberrmsg(tchdbecode(rb.out)));
        rc = -1;
    }
    if (rc == 0) {
        r->new_size = tchdbfsiz(rb.out);
    }
    if (rb.out != NULL && !tchdbclose(rb.out) && rc == 0) {
        snprintf(err, errlen, "cannot close %s: %s", tmp,
                 tchdberrmsg(tchdbecode(rb.out)));
        rc = -1;
    }
    if (rb.out != NULL) {
        tchdbdel(rb.out);
    }
    tcfile_close(&rb.f);
    free(rb.buf);
    if (rc == 0 && (_fsync_path(tmp) != 0 || _mark_clean(tmp) != 0 ||
                    rename(tmp, path) != 0 ||
                    atomicfile_sync_dir(path) != 0)) {
        snprintf(err, errlen, "cannot replace %s with %s: %s", path, tmp,
                 strerror(errno));
        rc = -1;
    }
    if (rc != 0) {
        unlink(tmp);
    }
    return rc;
}
