/*
 * Unit tests: the binary protocol parser (proto_bin.h). Every opcode kura
 * knows, parsed into the shared request model and refused with the wrong
 * extras, key or value; frames split at every byte; pipelines; framing
 * errors; unknown opcodes; values over the item limit swallowed across
 * calls; bodies too large to buffer refused from their header.
 */
#include <check.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "proto.h"
#include "proto_bin.h"
#include "unit_main.h"

#define ITEM_MAX 1024

static const struct proto_limits limits = {
    .max_line = 2048, .max_get_line = 65536, .item_max = ITEM_MAX};

/* The largest frame a test builds: a header, extras, a key, a value. */
#define FRAME_MAX (PROTO_BIN_HEADER + 255 + 300 + 4 * ITEM_MAX)

static void
_put16(unsigned char *p, uint16_t v)
{
    p[0] = (unsigned char)(v >> 8);
    p[1] = (unsigned char)v;
}

static void
_put32(unsigned char *p, uint32_t v)
{
    _put16(p, (uint16_t)(v >> 16));
    _put16(p + 2, (uint16_t)v);
}

static void
_put64(unsigned char *p, uint64_t v)
{
    _put32(p, (uint32_t)(v >> 32));
    _put32(p + 4, (uint32_t)v);
}

/* Writes a request header with the lengths given, not computed. */
static void
_header(char *out, uint8_t magic, uint8_t opcode, uint16_t nkey,
        uint8_t nextras, uint32_t body, uint32_t opaque, uint64_t cas)
{
    unsigned char *h = (unsigned char *)out;
    memset(h, 0, PROTO_BIN_HEADER);
    h[0] = magic;
    h[1] = opcode;
    _put16(h + 2, nkey);
    h[4] = nextras;
    _put32(h + 8, body);
    _put32(h + 12, opaque);
    _put64(h + 16, cas);
}

/* Writes a well-framed request; returns its length. */
static size_t
_frame(char *out, uint8_t opcode, const void *extras, size_t nextras,
       const char *key, size_t nkey, const char *value, size_t nvalue,
       uint32_t opaque, uint64_t cas)
{
    size_t body = nextras + nkey + nvalue;
    ck_assert_uint_le(PROTO_BIN_HEADER + body, FRAME_MAX);
    _header(out, PROTO_BIN_REQUEST, opcode, (uint16_t)nkey, (uint8_t)nextras,
            (uint32_t)body, opaque, cas);
    char *p = out + PROTO_BIN_HEADER;
    if (nextras > 0) {
        memcpy(p, extras, nextras);
    }
    if (nkey > 0) {
        memcpy(p + nextras, key, nkey);
    }
    if (nvalue > 0) {
        memcpy(p + nextras + nkey, value, nvalue);
    }
    return PROTO_BIN_HEADER + body;
}

static enum proto_status
_parse(struct proto_parser *p, const char *buf, size_t len, size_t *consumed,
       struct proto_request *req)
{
    *consumed = (size_t)-1;
    return proto_bin_parse(p, buf, len, consumed, req);
}

static void
_same_request(const struct proto_request *a, const struct proto_request *b)
{
    ck_assert_int_eq(a->cmd, b->cmd);
    ck_assert_int_eq(a->kind, b->kind);
    ck_assert_int_eq(a->noreply, b->noreply);
    ck_assert_ptr_eq(a->key, b->key);
    ck_assert_uint_eq(a->nkey, b->nkey);
    ck_assert_ptr_eq(a->value, b->value);
    ck_assert_uint_eq(a->vlen, b->vlen);
    ck_assert_uint_eq(a->flags, b->flags);
    ck_assert_int_eq(a->exptime, b->exptime);
    ck_assert_uint_eq(a->cas_unique, b->cas_unique);
    ck_assert_int_eq(a->has_cas, b->has_cas);
    ck_assert_uint_eq(a->delta, b->delta);
    ck_assert_uint_eq(a->initial, b->initial);
    ck_assert_int_eq(a->create, b->create);
    ck_assert_int_eq(a->delay, b->delay);
    ck_assert_ptr_eq(a->args, b->args);
    ck_assert_uint_eq(a->args_len, b->args_len);
    ck_assert_uint_eq(a->opcode, b->opcode);
    ck_assert_uint_eq(a->opaque, b->opaque);
    ck_assert_int_eq(a->want_key, b->want_key);
}

/*
 * Parses the whole frame `buf` into `*req` (PROTO_OK, all of it consumed),
 * then checks that every shorter prefix asks for more with the right
 * `need` and consumes nothing, and that the complete frame, given to the
 * same parser afterwards, parses into the same request.
 */
static void
_parse_ok(const char *buf, size_t len, struct proto_request *req)
{
    struct proto_parser p;
    size_t consumed;

    proto_parser_init(&p, &limits);
    ck_assert_int_eq(_parse(&p, buf, len, &consumed, req), PROTO_OK);
    ck_assert_uint_eq(consumed, len);
    ck_assert_int_eq(req->kind, PROTO_KIND_BINARY);
    ck_assert_int_eq(p.error, PROTO_ERR_NONE);

    /* The header first, then its extras and key (memcached judges a frame
     * only with them), then the value. */
    size_t head = PROTO_BIN_HEADER + (unsigned char)buf[4] +
                  ((size_t)(unsigned char)buf[2] << 8 |
                   (unsigned char)buf[3]);
    for (size_t k = 0; k < len; k++) {
        struct proto_request part;
        ck_assert_int_eq(_parse(&p, buf, k, &consumed, &part), PROTO_EUNFIN);
        ck_assert_uint_eq(consumed, 0);
        ck_assert_uint_eq(p.need, k < PROTO_BIN_HEADER ? PROTO_BIN_HEADER
                                  : k < head           ? head
                                                       : len);
    }
    struct proto_request again;
    ck_assert_int_eq(_parse(&p, buf, len, &consumed, &again), PROTO_OK);
    ck_assert_uint_eq(consumed, len);
    _same_request(req, &again);
}

/* Expects `buf` to be refused with `st` and `err`, the opcode echoed. */
static void
_parse_fails(const char *buf, size_t len, enum proto_status st,
             enum proto_error err)
{
    struct proto_parser p;
    struct proto_request req;
    size_t consumed;

    proto_parser_init(&p, &limits);
    ck_assert_int_eq(_parse(&p, buf, len, &consumed, &req), st);
    ck_assert_int_eq(p.error, err);
    ck_assert(!p.error_noreply);
    ck_assert_uint_le(consumed, len);
    ck_assert_int_eq(req.kind, PROTO_KIND_BINARY);
    ck_assert_uint_eq(req.opcode, (unsigned char)buf[1]);
}

/* ------------------------------------------------------------- opcodes */

struct opcase {
    uint8_t op;
    const char *name;
    enum proto_cmd cmd;
    bool quiet;
    bool want_key;
    uint8_t nextras; /* the extras it needs */
    int key;         /* 1 required, 0 forbidden, -1 optional */
    bool value;      /* a value is allowed */
};

static const struct opcase ops[] = {
    {PROTO_BIN_GET, "get", PROTO_CMD_GET, false, false, 0, 1, false},
    {PROTO_BIN_GETQ, "getq", PROTO_CMD_GET, true, false, 0, 1, false},
    {PROTO_BIN_GETK, "getk", PROTO_CMD_GET, false, true, 0, 1, false},
    {PROTO_BIN_GETKQ, "getkq", PROTO_CMD_GET, true, true, 0, 1, false},
    {PROTO_BIN_SET, "set", PROTO_CMD_SET, false, false, 8, 1, true},
    {PROTO_BIN_SETQ, "setq", PROTO_CMD_SET, true, false, 8, 1, true},
    {PROTO_BIN_ADD, "add", PROTO_CMD_ADD, false, false, 8, 1, true},
    {PROTO_BIN_ADDQ, "addq", PROTO_CMD_ADD, true, false, 8, 1, true},
    {PROTO_BIN_REPLACE, "replace", PROTO_CMD_REPLACE, false, false, 8, 1,
     true},
    {PROTO_BIN_REPLACEQ, "replaceq", PROTO_CMD_REPLACE, true, false, 8, 1,
     true},
    {PROTO_BIN_DELETE, "delete", PROTO_CMD_DELETE, false, false, 0, 1, false},
    {PROTO_BIN_DELETEQ, "deleteq", PROTO_CMD_DELETE, true, false, 0, 1,
     false},
    {PROTO_BIN_INCREMENT, "incr", PROTO_CMD_INCR, false, false, 20, 1, false},
    {PROTO_BIN_INCREMENTQ, "incrq", PROTO_CMD_INCR, true, false, 20, 1,
     false},
    {PROTO_BIN_DECREMENT, "decr", PROTO_CMD_DECR, false, false, 20, 1, false},
    {PROTO_BIN_DECREMENTQ, "decrq", PROTO_CMD_DECR, true, false, 20, 1,
     false},
    {PROTO_BIN_QUIT, "quit", PROTO_CMD_QUIT, false, false, 0, 0, false},
    {PROTO_BIN_QUITQ, "quitq", PROTO_CMD_QUIT, true, false, 0, 0, false},
    {PROTO_BIN_FLUSH, "flush", PROTO_CMD_FLUSH_ALL, false, false, 0, 0,
     false},
    {PROTO_BIN_FLUSHQ, "flushq", PROTO_CMD_FLUSH_ALL, true, false, 0, 0,
     false},
    {PROTO_BIN_NOOP, "noop", PROTO_CMD_NOOP, false, false, 0, 0, false},
    {PROTO_BIN_VERSION, "version", PROTO_CMD_VERSION, false, false, 0, 0,
     false},
    {PROTO_BIN_APPEND, "append", PROTO_CMD_APPEND, false, false, 0, 1, true},
    {PROTO_BIN_APPENDQ, "appendq", PROTO_CMD_APPEND, true, false, 0, 1,
     true},
    {PROTO_BIN_PREPEND, "prepend", PROTO_CMD_PREPEND, false, false, 0, 1,
     true},
    {PROTO_BIN_PREPENDQ, "prependq", PROTO_CMD_PREPEND, true, false, 0, 1,
     true},
    {PROTO_BIN_STAT, "stat", PROTO_CMD_STATS, false, false, 0, -1, false},
    {PROTO_BIN_TOUCH, "touch", PROTO_CMD_TOUCH, false, false, 4, 1, false},
    {PROTO_BIN_GAT, "gat", PROTO_CMD_GAT, false, false, 4, 1, false},
    {PROTO_BIN_GATQ, "gatq", PROTO_CMD_GAT, true, false, 4, 1, false},
    {PROTO_BIN_GATK, "gatk", PROTO_CMD_GAT, false, true, 4, 1, false},
    {PROTO_BIN_GATKQ, "gatkq", PROTO_CMD_GAT, true, true, 4, 1, false},
    {PROTO_BIN_SASL_LIST_MECHS, "sasl list", PROTO_CMD_SASL_LIST, false,
     false, 0, 0, false},
    {PROTO_BIN_SASL_AUTH, "sasl auth", PROTO_CMD_SASL_AUTH, false, false, 0,
     1, true},
    {PROTO_BIN_SASL_STEP, "sasl step", PROTO_CMD_SASL_STEP, false, false, 0,
     1, true},
};

#define NOPS (sizeof(ops) / sizeof(ops[0]))

/* Enough bytes for any extras a test gives, valid or one too many. */
static const unsigned char some_extras[32] = {
    0, 0, 0, 0, 0, 0, 0, 7, 0, 0, 0, 0, 0, 0, 0, 9, 0, 0, 0, 60};

/* Each opcode in its valid shape: the command, quietness, key, value. */
START_TEST(test_every_opcode)
{
    const struct opcase *c = &ops[_i];
    char buf[FRAME_MAX];
    struct proto_request req;
    bool with_key = c->key != 0;
    const char *value = c->value ? "the value" : NULL;
    size_t nvalue = c->value ? 9 : 0;
    uint32_t opaque = 0xa5000000u | c->op;

    size_t len = _frame(buf, c->op, some_extras, c->nextras,
                        with_key ? "key:1" : NULL, with_key ? 5 : 0, value,
                        nvalue, opaque, 0);
    _parse_ok(buf, len, &req);
    ck_assert_msg(req.cmd == c->cmd, "%s: cmd %d", c->name, req.cmd);
    ck_assert_msg(req.noreply == c->quiet, "%s: noreply", c->name);
    ck_assert_msg(req.want_key == c->want_key, "%s: want_key", c->name);
    ck_assert_uint_eq(req.opcode, c->op);
    ck_assert_uint_eq(req.opaque, opaque);
    ck_assert(!req.has_cas);
    if (c->cmd == PROTO_CMD_STATS) {
        ck_assert_ptr_eq(req.args, buf + PROTO_BIN_HEADER);
        ck_assert_uint_eq(req.args_len, 5);
        ck_assert_ptr_null(req.key);
        ck_assert_uint_eq(req.nkeys, 0);
    } else if (with_key) {
        ck_assert_ptr_eq(req.key, buf + PROTO_BIN_HEADER + c->nextras);
        ck_assert_uint_eq(req.nkey, 5);
        ck_assert_uint_eq(req.nkeys, 1);
        ck_assert_ptr_eq(req.keys, req.key);
        ck_assert_uint_eq(req.keys_len, 5);
    } else {
        ck_assert_uint_eq(req.nkey, 0);
        ck_assert_uint_eq(req.nkeys, 0);
    }
    if (c->value) {
        ck_assert_ptr_eq(req.value, buf + PROTO_BIN_HEADER + c->nextras + 5);
        ck_assert_uint_eq(req.vlen, 9);
    } else {
        ck_assert_uint_eq(req.vlen, 0);
    }
}
END_TEST

/* Each opcode refused with extras, a key or a value it must not have. */
START_TEST(test_every_opcode_refuses_wrong_shape)
{
    const struct opcase *c = &ops[_i];
    char buf[FRAME_MAX];
    size_t len;

    const char *key = c->key != 0 ? "k" : NULL;
    size_t nkey = c->key != 0 ? 1 : 0;

    /* Extras one byte longer, then one shorter, than required. */
    len = _frame(buf, c->op, some_extras, c->nextras + 1u, key, nkey, NULL, 0,
                 1, 0);
    _parse_fails(buf, len, PROTO_ECLOSE, PROTO_ERR_BIN_EINVAL);
    if (c->nextras > 0) {
        len = _frame(buf, c->op, some_extras, c->nextras - 1u, key, nkey,
                     NULL, 0, 1, 0);
        _parse_fails(buf, len, PROTO_ECLOSE, PROTO_ERR_BIN_EINVAL);
    }
    /* A required key missing; a forbidden one given. */
    if (c->key == 1) {
        len = _frame(buf, c->op, some_extras, c->nextras, NULL, 0, NULL, 0, 1,
                     0);
        _parse_fails(buf, len, PROTO_ECLOSE, PROTO_ERR_BIN_EINVAL);
    } else if (c->key == 0) {
        len = _frame(buf, c->op, some_extras, c->nextras, "k", 1, NULL, 0, 1,
                     0);
        _parse_fails(buf, len, PROTO_ECLOSE, PROTO_ERR_BIN_EINVAL);
    }
    /* A value where none is allowed. */
    if (!c->value) {
        len = _frame(buf, c->op, some_extras, c->nextras, key, nkey, "v", 1,
                     1, 0);
        _parse_fails(buf, len, PROTO_ECLOSE, PROTO_ERR_BIN_EINVAL);
    }
    /* A key of 251 bytes, wherever a key may be. */
    if (c->key != 0) {
        char longkey[251];
        memset(longkey, 'k', sizeof(longkey));
        len = _frame(buf, c->op, some_extras, c->nextras, longkey, 251, NULL,
                     0, 1, 0);
        _parse_fails(buf, len, PROTO_ECLOSE, PROTO_ERR_BIN_EINVAL);
        len = _frame(buf, c->op, some_extras, c->nextras, longkey, 250, NULL,
                     0, 1, 0);
        struct proto_request req;
        _parse_ok(buf, len, &req);
        ck_assert_uint_eq(c->cmd == PROTO_CMD_STATS ? req.args_len : req.nkey,
                          250);
    }
}
END_TEST

/* ------------------------------------------------------ request fields */

START_TEST(test_storage_fields)
{
    char buf[FRAME_MAX];
    unsigned char ex[8];
    struct proto_request req;

    _put32(ex, 0xdeadbeefu);
    _put32(ex + 4, 3600);
    size_t len = _frame(buf, PROTO_BIN_SET, ex, 8, "foo", 3, "bar\r\n", 5,
                        0x01020304u, 0);
    _parse_ok(buf, len, &req);
    ck_assert_uint_eq(req.flags, 0xdeadbeefu);
    ck_assert_int_eq(req.exptime, 3600);
    ck_assert_uint_eq(req.opaque, 0x01020304u);
    ck_assert(!req.has_cas);
    ck_assert_uint_eq(req.cas_unique, 0);
    ck_assert(memcmp(req.value, "bar\r\n", 5) == 0);

    /* An exptime is unsigned on the wire: 0xffffffff is not -1. */
    _put32(ex + 4, 0xffffffffu);
    len = _frame(buf, PROTO_BIN_SET, ex, 8, "foo", 3, NULL, 0, 0, 0);
    _parse_ok(buf, len, &req);
    ck_assert_int_eq(req.exptime, 4294967295LL);
    ck_assert_uint_eq(req.vlen, 0);

    /* A cas in the header: set, replace and add compare it (memcached
     * turns each into a cas; found by tools/difffuzz). */
    len = _frame(buf, PROTO_BIN_SET, ex, 8, "foo", 3, "x", 1, 0,
                 0x1122334455667788ULL);
    _parse_ok(buf, len, &req);
    ck_assert(req.has_cas);
    ck_assert_uint_eq(req.cas_unique, 0x1122334455667788ULL);
    len = _frame(buf, PROTO_BIN_REPLACEQ, ex, 8, "foo", 3, "x", 1, 0, 5);
    _parse_ok(buf, len, &req);
    ck_assert(req.has_cas);
    len = _frame(buf, PROTO_BIN_ADD, ex, 8, "foo", 3, "x", 1, 0, 5);
    _parse_ok(buf, len, &req);
    ck_assert(req.has_cas);
    ck_assert_uint_eq(req.cas_unique, 5);
    len = _frame(buf, PROTO_BIN_ADDQ, ex, 8, "foo", 3, "x", 1, 0, 0);
    _parse_ok(buf, len, &req);
    ck_assert(!req.has_cas);

    /* append, prepend and delete compare a cas too. */
    static const uint8_t with_cas[] = {PROTO_BIN_APPEND, PROTO_BIN_PREPENDQ,
                                       PROTO_BIN_DELETE};
    for (size_t i = 0; i < sizeof(with_cas); i++) {
        bool value = with_cas[i] != PROTO_BIN_DELETE;
        len = _frame(buf, with_cas[i], NULL, 0, "k", 1, value ? "v" : NULL,
                     value ? 1 : 0, 0, 42);
        _parse_ok(buf, len, &req);
        ck_assert(req.has_cas);
        ck_assert_uint_eq(req.cas_unique, 42);
        len = _frame(buf, with_cas[i], NULL, 0, "k", 1, value ? "v" : NULL,
                     value ? 1 : 0, 0, 0);
        _parse_ok(buf, len, &req);
        ck_assert(!req.has_cas);
    }
}
END_TEST

START_TEST(test_arith_fields)
{
    char buf[FRAME_MAX];
    unsigned char ex[20];
    struct proto_request req;

    _put64(ex, 0x0102030405060708ULL);
    _put64(ex + 8, 0xfffffffffffffffeULL);
    _put32(ex + 16, 300);
    size_t len = _frame(buf, PROTO_BIN_INCREMENT, ex, 20, "n", 1, NULL, 0, 9,
                        0);
    _parse_ok(buf, len, &req);
    ck_assert_int_eq(req.cmd, PROTO_CMD_INCR);
    ck_assert_uint_eq(req.delta, 0x0102030405060708ULL);
    ck_assert_uint_eq(req.initial, 0xfffffffffffffffeULL);
    ck_assert(req.create);
    ck_assert_int_eq(req.exptime, 300);
    ck_assert(!req.has_cas);

    /* 0xffffffff: fail on a miss rather than create. */
    _put32(ex + 16, 0xffffffffu);
    len = _frame(buf, PROTO_BIN_DECREMENTQ, ex, 20, "n", 1, NULL, 0, 9, 77);
    _parse_ok(buf, len, &req);
    ck_assert_int_eq(req.cmd, PROTO_CMD_DECR);
    ck_assert(req.noreply);
    ck_assert(!req.create);
    ck_assert_int_eq(req.exptime, 0);
    ck_assert(req.has_cas);
    ck_assert_uint_eq(req.cas_unique, 77);

    /* 0xfffffffe still creates. */
    _put32(ex + 16, 0xfffffffeu);
    len = _frame(buf, PROTO_BIN_INCREMENTQ, ex, 20, "n", 1, NULL, 0, 9, 0);
    _parse_ok(buf, len, &req);
    ck_assert(req.create);
    ck_assert_int_eq(req.exptime, 0xfffffffeLL);
}
END_TEST

START_TEST(test_other_fields)
{
    char buf[FRAME_MAX];
    unsigned char ex[4];
    struct proto_request req;

    /* flush: no extras is now; four are a delay. */
    size_t len = _frame(buf, PROTO_BIN_FLUSH, NULL, 0, NULL, 0, NULL, 0, 1, 0);
    _parse_ok(buf, len, &req);
    ck_assert_int_eq(req.delay, 0);
    _put32(ex, 90);
    len = _frame(buf, PROTO_BIN_FLUSHQ, ex, 4, NULL, 0, NULL, 0, 1, 0);
    _parse_ok(buf, len, &req);
    ck_assert_int_eq(req.delay, 90);
    ck_assert(req.noreply);
    len = _frame(buf, PROTO_BIN_FLUSH, some_extras, 8, NULL, 0, NULL, 0, 1, 0);
    _parse_fails(buf, len, PROTO_ECLOSE, PROTO_ERR_BIN_EINVAL);

    /* touch and the gat family: the exptime from the extras. */
    static const uint8_t touching[] = {PROTO_BIN_TOUCH, PROTO_BIN_GAT,
                                       PROTO_BIN_GATQ, PROTO_BIN_GATK,
                                       PROTO_BIN_GATKQ};
    for (size_t i = 0; i < sizeof(touching); i++) {
        _put32(ex, 1000 + (uint32_t)i);
        len = _frame(buf, touching[i], ex, 4, "t", 1, NULL, 0, 1, 8);
        _parse_ok(buf, len, &req);
        ck_assert_int_eq(req.exptime, 1000 + (int64_t)i);
        ck_assert(!req.has_cas);
    }

    /* stat: the key is the group asked for; none is every stat. */
    len = _frame(buf, PROTO_BIN_STAT, NULL, 0, "settings", 8, NULL, 0, 3, 0);
    _parse_ok(buf, len, &req);
    ck_assert_int_eq(req.args_len, 8);
    ck_assert(memcmp(req.args, "settings", 8) == 0);
    ck_assert_ptr_null(req.key);
    len = _frame(buf, PROTO_BIN_STAT, NULL, 0, NULL, 0, NULL, 0, 3, 0);
    _parse_ok(buf, len, &req);
    ck_assert_uint_eq(req.args_len, 0);

    /* SASL: the mechanism is the key, the message the value. */
    len = _frame(buf, PROTO_BIN_SASL_AUTH, NULL, 0, "PLAIN", 5,
                 "\0user\0pass", 10, 4, 0);
    _parse_ok(buf, len, &req);
    ck_assert_uint_eq(req.nkey, 5);
    ck_assert(memcmp(req.key, "PLAIN", 5) == 0);
    ck_assert_uint_eq(req.vlen, 10);
    ck_assert(memcmp(req.value, "\0user\0pass", 10) == 0);
    len = _frame(buf, PROTO_BIN_SASL_STEP, NULL, 0, "PLAIN", 5, NULL, 0, 4, 0);
    _parse_ok(buf, len, &req);
    ck_assert_int_eq(req.cmd, PROTO_CMD_SASL_STEP);

    /* The data type and reserved bytes are not checked. */
    len = _frame(buf, PROTO_BIN_NOOP, NULL, 0, NULL, 0, NULL, 0, 7, 0);
    buf[5] = 1;
    buf[6] = (char)0xff;
    buf[7] = 2;
    _parse_ok(buf, len, &req);
    ck_assert_int_eq(req.cmd, PROTO_CMD_NOOP);
}
END_TEST

/* ----------------------------------------------------------- pipelines */

START_TEST(test_pipeline)
{
    static char buf[4 * FRAME_MAX];
    unsigned char ex[20];
    size_t len = 0;

    memset(ex, 0, sizeof(ex));
    len += _frame(buf + len, PROTO_BIN_GETKQ, NULL, 0, "a", 1, NULL, 0, 1, 0);
    len += _frame(buf + len, PROTO_BIN_SET, ex, 8, "bb", 2, "value", 5, 2, 0);
    len += _frame(buf + len, PROTO_BIN_INCREMENT, ex, 20, "n", 1, NULL, 0, 3,
                  0);
    len += _frame(buf + len, PROTO_BIN_GETQ, NULL, 0, "ccc", 3, NULL, 0, 4, 0);
    len += _frame(buf + len, PROTO_BIN_NOOP, NULL, 0, NULL, 0, NULL, 0, 5, 0);
    static const enum proto_cmd want[] = {PROTO_CMD_GET, PROTO_CMD_SET,
                                          PROTO_CMD_INCR, PROTO_CMD_GET,
                                          PROTO_CMD_NOOP};
    static const size_t want_nkey[] = {1, 2, 1, 3, 0};

    /* All at once, then arriving in pieces of every size from 1 to 40. */
    for (size_t chunk = 0; chunk <= 40; chunk++) {
        struct proto_parser p;
        size_t start = 0;
        size_t have = chunk == 0 ? len : 0;
        size_t n = 0;
        proto_parser_init(&p, &limits);
        while (n < 5) {
            struct proto_request req;
            size_t consumed;
            enum proto_status st = _parse(&p, buf + start, have - start,
                                          &consumed, &req);
            if (st == PROTO_EUNFIN) {
                ck_assert_uint_eq(consumed, 0);
                ck_assert_uint_gt(p.need, have - start);
                ck_assert_uint_lt(have, len);
                have = have + chunk < len ? have + chunk : len;
                continue;
            }
            ck_assert_int_eq(st, PROTO_OK);
            ck_assert_int_eq(req.cmd, want[n]);
            ck_assert_uint_eq(req.opaque, n + 1);
            ck_assert_uint_eq(req.nkey, want_nkey[n]);
            start += consumed;
            n++;
        }
        ck_assert_uint_eq(start, len);
    }
}
END_TEST

/* -------------------------------------------------------------- errors */

START_TEST(test_bad_magic)
{
    char buf[FRAME_MAX];
    struct proto_parser p;
    struct proto_request req;
    size_t consumed;

    /* A response magic, a text line: framing is lost, close. */
    size_t len = _frame(buf, PROTO_BIN_GET, NULL, 0, "k", 1, NULL, 0, 0x77,
                        0);
    buf[0] = (char)PROTO_BIN_RESPONSE;
    proto_parser_init(&p, &limits);
    ck_assert_int_eq(_parse(&p, buf, len, &consumed, &req), PROTO_ECLOSE);
    ck_assert_int_eq(p.error, PROTO_ERR_BIN_FRAMING);
    ck_assert_uint_eq(req.opaque, 0x77);
    memcpy(buf, "get k\r\nget k\r\nget k\r\nget k\r\n", 28);
    ck_assert_int_eq(_parse(&p, buf, 28, &consumed, &req), PROTO_ECLOSE);
    ck_assert_int_eq(p.error, PROTO_ERR_BIN_FRAMING);
    /* The header is awaited before anything is judged. */
    ck_assert_int_eq(_parse(&p, buf, 23, &consumed, &req), PROTO_EUNFIN);
    ck_assert_uint_eq(p.need, PROTO_BIN_HEADER);
}
END_TEST

START_TEST(test_lengths_that_do_not_add_up)
{
    char buf[FRAME_MAX];

    /* Key longer than the body: refused once the key is in. */
    memset(buf + PROTO_BIN_HEADER, 'k', 16);
    _header(buf, PROTO_BIN_REQUEST, PROTO_BIN_GET, 10, 0, 5, 1, 0);
    _parse_fails(buf, PROTO_BIN_HEADER + 10, PROTO_ECLOSE,
                 PROTO_ERR_BIN_UNKNOWN);
    /* Key and extras together longer than the body. */
    _header(buf, PROTO_BIN_REQUEST, PROTO_BIN_SET, 4, 8, 11, 1, 0);
    _parse_fails(buf, PROTO_BIN_HEADER + 12, PROTO_ECLOSE,
                 PROTO_ERR_BIN_UNKNOWN);
    /* ... even for an opcode kura does not know. */
    _header(buf, PROTO_BIN_REQUEST, 0x40, 0, 9, 8, 1, 0);
    _parse_fails(buf, PROTO_BIN_HEADER + 9, PROTO_ECLOSE,
                 PROTO_ERR_BIN_UNKNOWN);
    /* Exactly equal is a frame with no value. */
    _header(buf, PROTO_BIN_REQUEST, PROTO_BIN_SET, 3, 8, 11, 1, 0);
    memset(buf + PROTO_BIN_HEADER, 'x', 11);
    struct proto_request req;
    _parse_ok(buf, PROTO_BIN_HEADER + 11, &req);
    ck_assert_uint_eq(req.vlen, 0);
}
END_TEST

START_TEST(test_unknown_opcodes)
{
    char buf[FRAME_MAX];
    struct proto_parser p;
    struct proto_request req;
    size_t consumed;

    /* The whole frame is read and consumed; the next one parses. */
    unsigned char level[4] = {0, 0, 0, 1};
    size_t len = _frame(buf, PROTO_BIN_VERBOSITY, level, 4, NULL, 0, NULL, 0,
                        0xbeef, 0);
    size_t first = len;
    len += _frame(buf + len, PROTO_BIN_NOOP, NULL, 0, NULL, 0, NULL, 0, 2, 0);
    proto_parser_init(&p, &limits);
    ck_assert_int_eq(_parse(&p, buf, first - 1, &consumed, &req),
                     PROTO_EUNFIN);
    ck_assert_uint_eq(p.need, first);
    ck_assert_int_eq(_parse(&p, buf, len, &consumed, &req), PROTO_EREQ);
    ck_assert_int_eq(p.error, PROTO_ERR_BIN_UNKNOWN);
    ck_assert_uint_eq(consumed, first);
    ck_assert_uint_eq(req.opcode, PROTO_BIN_VERBOSITY);
    ck_assert_uint_eq(req.opaque, 0xbeef);
    ck_assert_int_eq(_parse(&p, buf + first, len - first, &consumed, &req),
                     PROTO_OK);
    ck_assert_int_eq(req.cmd, PROTO_CMD_NOOP);

    /* Every opcode kura does not know, with and without a body. */
    for (unsigned op = 0; op < 256; op++) {
        bool known = false;
        for (size_t i = 0; i < NOPS; i++) {
            known = known || ops[i].op == op;
        }
        if (known) {
            continue;
        }
        len = _frame(buf, (uint8_t)op, NULL, 0, NULL, 0, NULL, 0, op, 0);
        _parse_fails(buf, len, PROTO_EREQ, PROTO_ERR_BIN_UNKNOWN);
        len = _frame(buf, (uint8_t)op, some_extras, 3, "key", 3, "v", 1, op,
                     0);
        proto_parser_init(&p, &limits);
        ck_assert_int_eq(_parse(&p, buf, len, &consumed, &req), PROTO_EREQ);
        ck_assert_int_eq(p.error, PROTO_ERR_BIN_UNKNOWN);
        ck_assert_uint_eq(consumed, len);
        ck_assert_uint_eq(req.opaque, op);
    }
}
END_TEST

/* A set of `nvalue` bytes of value, then a noop; returns the set's size. */
static size_t
_too_large_then_noop(char *buf, size_t nvalue, size_t *len)
{
    static char value[2 * ITEM_MAX];
    unsigned char ex[8] = {0};
    ck_assert_uint_le(nvalue, sizeof(value));
    memset(value, 'v', nvalue);
    size_t set = _frame(buf, PROTO_BIN_SETQ, ex, 8, "big", 3, value, nvalue,
                        0x51, 0);
    *len = set + _frame(buf + set, PROTO_BIN_NOOP, NULL, 0, NULL, 0, NULL, 0,
                        0x52, 0);
    return set;
}

START_TEST(test_value_over_item_max)
{
    static char buf[2 * FRAME_MAX];
    struct proto_parser p;
    struct proto_request req;
    size_t consumed;
    size_t len;

    /* item_max itself is fine. */
    size_t set = _too_large_then_noop(buf, ITEM_MAX, &len);
    _parse_ok(buf, set, &req);
    ck_assert_uint_eq(req.vlen, ITEM_MAX);

    /* One more: refused, answered even though quiet, the body skipped. */
    set = _too_large_then_noop(buf, ITEM_MAX + 1, &len);
    proto_parser_init(&p, &limits);
    ck_assert_int_eq(_parse(&p, buf, len, &consumed, &req), PROTO_EREQ);
    ck_assert_int_eq(p.error, PROTO_ERR_TOO_LARGE);
    ck_assert(!p.error_noreply);
    ck_assert(!req.noreply);
    ck_assert_int_eq(p.error_cmd, PROTO_CMD_SET);
    ck_assert_uint_eq(req.opcode, PROTO_BIN_SETQ);
    ck_assert_uint_eq(req.opaque, 0x51);
    ck_assert_uint_eq(consumed, set);
    ck_assert_uint_eq(req.nkey, 3);
    ck_assert(memcmp(req.key, "big", 3) == 0);
    ck_assert_int_eq(_parse(&p, buf + set, len - set, &consumed, &req),
                     PROTO_OK);
    ck_assert_int_eq(req.cmd, PROTO_CMD_NOOP);
    ck_assert_uint_eq(req.opaque, 0x52);

    /* Arriving in pieces: swallowed across calls, then the noop. */
    for (size_t chunk = 1; chunk <= 700; chunk += 233) {
        size_t off = 0;
        size_t have = 40; /* the header, extras and key, and some value */
        bool refused = false;
        proto_parser_init(&p, &limits);
        for (;;) {
            enum proto_status st = _parse(&p, buf + off, have - off,
                                          &consumed, &req);
            ck_assert_uint_le(consumed, have - off);
            off += consumed;
            if (st == PROTO_EUNFIN) {
                ck_assert(refused);
                ck_assert_uint_lt(have, len);
                have = have + chunk < len ? have + chunk : len;
                continue;
            }
            if (!refused) {
                ck_assert_int_eq(st, PROTO_EREQ);
                ck_assert_int_eq(p.error, PROTO_ERR_TOO_LARGE);
                ck_assert_uint_eq(consumed, 40);
                refused = true;
                continue;
            }
            ck_assert_int_eq(st, PROTO_OK);
            ck_assert_int_eq(req.cmd, PROTO_CMD_NOOP);
            ck_assert_uint_eq(off, len);
            break;
        }
    }

    /* The rest of the body, then part of the next header: need counts
     * from the start of what was given, swallowed bytes included. */
    proto_parser_init(&p, &limits);
    ck_assert_int_eq(_parse(&p, buf, 100, &consumed, &req), PROTO_EREQ);
    ck_assert_int_eq(_parse(&p, buf + 100, len - 100 - 10, &consumed, &req),
                     PROTO_EUNFIN);
    ck_assert_uint_eq(consumed, set - 100);
    ck_assert_uint_eq(p.need, set - 100 + PROTO_BIN_HEADER);

    /* append, prepend and SASL values are bounded too. */
    static const uint8_t valued[] = {PROTO_BIN_APPEND, PROTO_BIN_PREPENDQ,
                                     PROTO_BIN_SASL_AUTH, PROTO_BIN_SASL_STEP};
    static char value[ITEM_MAX + 1];
    for (size_t i = 0; i < sizeof(valued); i++) {
        len = _frame(buf, valued[i], NULL, 0, "k", 1, value, sizeof(value), 1,
                     0);
        _parse_fails(buf, len, PROTO_EREQ, PROTO_ERR_TOO_LARGE);
    }
}
END_TEST

/*
 * A too-large set names its key (process.c drops the key's old value, as
 * memcached does) however TCP split the stream: the parser waits for the
 * extras and key, and only then refuses the value.
 */
START_TEST(test_too_large_names_its_key_however_split)
{
    static char buf[2 * FRAME_MAX];
    struct proto_parser p;
    struct proto_request req;
    size_t consumed;
    size_t len;
    size_t head = PROTO_BIN_HEADER + 8 + 3; /* header, extras, key */

    _too_large_then_noop(buf, ITEM_MAX + 1, &len);
    proto_parser_init(&p, &limits);
    for (size_t have = PROTO_BIN_HEADER; have < head; have++) {
        ck_assert_int_eq(_parse(&p, buf, have, &consumed, &req),
                         PROTO_EUNFIN);
        ck_assert_uint_eq(consumed, 0);
        ck_assert_uint_eq(p.need, head);
    }
    for (size_t have = head; have <= head + 5; have++) {
        proto_parser_init(&p, &limits);
        ck_assert_int_eq(_parse(&p, buf, have, &consumed, &req), PROTO_EREQ);
        ck_assert_int_eq(p.error, PROTO_ERR_TOO_LARGE);
        ck_assert_uint_eq(consumed, have);
        ck_assert_msg(req.nkey == 3 && req.key != NULL &&
                          memcmp(req.key, "big", 3) == 0,
                      "a too-large set seen with %zu bytes buffered names "
                      "no key (nkey %zu)", have, req.nkey);
    }
}
END_TEST

/*
 * A header announcing a long key is judged only once the key is in, as
 * memcached does (found by tools/difffuzz: kurad answered Invalid
 * arguments at once to a client that then hung up, memcached nothing).
 */
START_TEST(test_long_key_waits_for_its_bytes)
{
    char buf[FRAME_MAX];
    struct proto_parser p;
    struct proto_request req;
    size_t consumed;

    _header(buf, PROTO_BIN_REQUEST, PROTO_BIN_GET, 300, 0, 300, 1, 0);
    proto_parser_init(&p, &limits);
    ck_assert_int_eq(_parse(&p, buf, PROTO_BIN_HEADER + 299, &consumed,
                            &req),
                     PROTO_EUNFIN);
    ck_assert_uint_eq(consumed, 0);
    ck_assert_uint_eq(p.need, PROTO_BIN_HEADER + 300);
    memset(buf + PROTO_BIN_HEADER, 'k', 300);
    _parse_fails(buf, PROTO_BIN_HEADER + 300, PROTO_ECLOSE,
                 PROTO_ERR_BIN_EINVAL);
}
END_TEST

START_TEST(test_huge_body_refused_from_header)
{
    char buf[FRAME_MAX];
    struct proto_parser p;
    struct proto_request req;
    size_t consumed;

    /* No value allowed: a body beyond any valid frame closes once the
     * key is in. */
    _header(buf, PROTO_BIN_REQUEST, PROTO_BIN_GET, 1, 0, 0xffffffffu, 1, 0);
    buf[PROTO_BIN_HEADER] = 'k';
    _parse_fails(buf, PROTO_BIN_HEADER + 1, PROTO_ECLOSE,
                 PROTO_ERR_BIN_EINVAL);
    _header(buf, PROTO_BIN_REQUEST, 0x55, 0, 0, 0xffffffffu, 1, 0);
    _parse_fails(buf, PROTO_BIN_HEADER, PROTO_ECLOSE, PROTO_ERR_BIN_EINVAL);

    /* The largest body still buffered: item_max, a key and 255 extras. */
    uint32_t most = ITEM_MAX + PROTO_KEY_MAX + 255;
    _header(buf, PROTO_BIN_REQUEST, 0x55, 0, 0, most, 1, 0);
    proto_parser_init(&p, &limits);
    ck_assert_int_eq(_parse(&p, buf, PROTO_BIN_HEADER, &consumed, &req),
                     PROTO_EUNFIN);
    ck_assert_uint_eq(p.need, PROTO_BIN_HEADER + most);
    _header(buf, PROTO_BIN_REQUEST, 0x55, 0, 0, most + 1, 1, 0);
    _parse_fails(buf, PROTO_BIN_HEADER, PROTO_ECLOSE, PROTO_ERR_BIN_EINVAL);

    /* A value allowed: refused as too large once the extras and key are
     * in, the 4 GiB body swallowed as it comes, never buffered. */
    _header(buf, PROTO_BIN_REQUEST, PROTO_BIN_SET, 1, 8, 0xffffffffu, 1, 0);
    memset(buf + PROTO_BIN_HEADER, 'k', 9);
    proto_parser_init(&p, &limits);
    ck_assert_int_eq(_parse(&p, buf, PROTO_BIN_HEADER, &consumed, &req),
                     PROTO_EUNFIN);
    ck_assert_uint_eq(p.need, PROTO_BIN_HEADER + 9);
    ck_assert_int_eq(_parse(&p, buf, PROTO_BIN_HEADER + 9, &consumed, &req),
                     PROTO_EREQ);
    ck_assert_int_eq(p.error, PROTO_ERR_TOO_LARGE);
    ck_assert_uint_eq(consumed, PROTO_BIN_HEADER + 9);
    ck_assert_uint_eq(p.swallow, 0xffffffffu - 9);
    /* A key over 250 bytes, or extras the opcode does not take, are
     * refused before the size, as memcached does: Invalid arguments and a
     * close (found by tools/difffuzz; kurad answered Too large). */
    memset(buf + PROTO_BIN_HEADER, 'k', 255 + PROTO_KEY_MAX + 1);
    _header(buf, PROTO_BIN_REQUEST, PROTO_BIN_SET, 251, 8, 0xffffffffu, 1,
            0);
    _parse_fails(buf, PROTO_BIN_HEADER + 259, PROTO_ECLOSE,
                 PROTO_ERR_BIN_EINVAL);
    _header(buf, PROTO_BIN_REQUEST, PROTO_BIN_APPEND, PROTO_KEY_MAX, 255,
            0xffffffffu, 1, 0);
    _parse_fails(buf, PROTO_BIN_HEADER + 255 + PROTO_KEY_MAX, PROTO_ECLOSE,
                 PROTO_ERR_BIN_EINVAL);
    /* What is waited for is the key and extras the header names. */
    _header(buf, PROTO_BIN_REQUEST, PROTO_BIN_SET, PROTO_KEY_MAX, 8,
            0xffffffffu, 1, 0);
    proto_parser_init(&p, &limits);
    ck_assert_int_eq(_parse(&p, buf, PROTO_BIN_HEADER, &consumed, &req),
                     PROTO_EUNFIN);
    ck_assert_uint_eq(p.need, PROTO_BIN_HEADER + 8 + PROTO_KEY_MAX);

    _header(buf, PROTO_BIN_REQUEST, PROTO_BIN_SET, 1, 8, 0xffffffffu, 1, 0);
    proto_parser_init(&p, &limits);
    ck_assert_int_eq(_parse(&p, buf, PROTO_BIN_HEADER + 9, &consumed, &req),
                     PROTO_EREQ);
    memset(buf, 0, sizeof(buf));
    ck_assert_int_eq(_parse(&p, buf, sizeof(buf), &consumed, &req),
                     PROTO_EUNFIN);
    ck_assert_uint_eq(consumed, sizeof(buf));
    ck_assert_uint_eq(p.swallow, 0xffffffffu - 9 - sizeof(buf));
    proto_parser_reset(&p);
    ck_assert_uint_eq(p.swallow, 0);
}
END_TEST

/*
 * Issue 28: a binary key is length-prefixed, so every byte of it, spaces
 * included, is the one key. The get family hands process.c exactly that
 * key, once: a key split at a space answered one request twice.
 */
START_TEST(test_issue_28_key_with_any_byte_is_one_key)
{
    static const struct {
        const char *key;
        size_t nkey;
    } keys[] = {
        {"a key", 5},   {"a  b", 4},    {" lead", 5}, {"trail ", 6},
        {"   ", 3},     {"nul\0in", 6}, {"cr\rlf\n", 7},
        {"tab\there", 8}, {"\xff\xfe", 2},
    };
    static const uint8_t get_ops[] = {PROTO_BIN_GET, PROTO_BIN_GETQ,
                                  PROTO_BIN_GETK, PROTO_BIN_GETKQ};
    char buf[FRAME_MAX];

    for (size_t k = 0; k < sizeof(keys) / sizeof(keys[0]); k++) {
        for (size_t o = 0; o < sizeof(get_ops); o++) {
            struct proto_request req;
            size_t len = _frame(buf, get_ops[o], NULL, 0, keys[k].key,
                                keys[k].nkey, NULL, 0, 7, 0);
            _parse_ok(buf, len, &req);
            ck_assert_uint_eq(req.nkey, keys[k].nkey);
            ck_assert_mem_eq(req.key, keys[k].key, keys[k].nkey);

            size_t pos = 0;
            const char *key;
            size_t nkey;
            ck_assert(proto_next_key(&req, &pos, &key, &nkey));
            ck_assert_ptr_eq(key, req.key);
            ck_assert_uint_eq(nkey, keys[k].nkey);
            ck_assert(!proto_next_key(&req, &pos, &key, &nkey));
        }
    }
}
END_TEST

static Suite *
proto_bin_suite(void)
{
    Suite *s = suite_create("proto_bin");
    TCase *tc = tcase_create("opcodes");
    tcase_add_loop_test(tc, test_every_opcode, 0, NOPS);
    tcase_add_loop_test(tc, test_every_opcode_refuses_wrong_shape, 0, NOPS);
    tcase_add_test(tc, test_storage_fields);
    tcase_add_test(tc, test_arith_fields);
    tcase_add_test(tc, test_other_fields);
    tcase_add_test(tc, test_pipeline);
    tcase_add_test(tc, test_issue_28_key_with_any_byte_is_one_key);
    suite_add_tcase(s, tc);
    tc = tcase_create("errors");
    tcase_add_test(tc, test_bad_magic);
    tcase_add_test(tc, test_lengths_that_do_not_add_up);
    tcase_add_test(tc, test_unknown_opcodes);
    tcase_add_test(tc, test_value_over_item_max);
    tcase_add_test(tc, test_too_large_names_its_key_however_split);
    tcase_add_test(tc, test_huge_body_refused_from_header);
    tcase_add_test(tc, test_long_key_waits_for_its_bytes);
    suite_add_tcase(s, tc);
    return s;
}

TEST_MAIN(proto_bin_suite)
