#!/usr/bin/env python3
"""Writes the seed corpora of the fuzz harnesses in tests/fuzz/corpus/.

    tests/fuzz/make-seeds.py [KIND...]  rewrites corpus/{proto,ulog,repl,bin,tls}/
                                        (or those KINDs only)

The seeds are committed; this script documents how each was made and makes
them again after a format change. It encodes update log records, record
envelopes and replication frames itself, from the layouts in src/logrec.h,
src/record.h, src/repl_proto.h and memcached's binary protocol (no
third-party modules), so a seed is a second opinion on the format rather
than a copy of the C encoder's output.

Seed names say what they cover. Every command and error path of the text
protocol and the meta commands, every binary opcode and refusal, valid and
damaged log records, and every frame type, valid and damaged, should have
one.
"""
import os
import shutil
import struct
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
CORPUS = os.path.join(HERE, "corpus")

# ------------------------------------------------------------------ codecs


def _crc32c_table():
    table = []
    for i in range(256):
        c = i
        for _ in range(8):
            c = (c >> 1) ^ 0x82F63B78 if c & 1 else c >> 1
        table.append(c)
    return table


CRC_TABLE = _crc32c_table()


def crc32c(data):
    crc = 0xFFFFFFFF
    for b in data:
        crc = CRC_TABLE[(crc ^ b) & 0xFF] ^ (crc >> 8)
    return crc ^ 0xFFFFFFFF


assert crc32c(b"123456789") == 0xE3069283

RECORD_VALUE, RECORD_TOMBSTONE = 1, 2
PRESENT_FLAGS, PRESENT_EXPTIME, PRESENT_CAS = 1, 2, 4
LOGREC_PUT, LOGREC_FLUSH = 1, 2
FRAME_RECORD, FRAME_HEARTBEAT, FRAME_SNAP_BEGIN = 1, 2, 3
FRAME_SNAP_ITEM, FRAME_SNAP_END, FRAME_ACK = 4, 5, 6


def envelope(kind=RECORD_VALUE, ts=1_700_000_000_000_000, sid=1, flags=0,
             exptime=0, cas=None, value=b"", version=2):
    """A stored record (record.h): envelope, then the value. Version 2
    carries a 4-byte seal (zero until stored); version 1 had none."""
    present = 0
    tail = b""
    if flags:
        present |= PRESENT_FLAGS
        tail += struct.pack("<I", flags)
    if exptime:
        present |= PRESENT_EXPTIME
        tail += struct.pack("<I", exptime)
    if cas is not None and cas != ts:
        present |= PRESENT_CAS
        tail += struct.pack("<Q", cas)
    varint = b""
    while True:
        b = sid & 0x7F
        sid >>= 7
        varint += bytes([b | 0x80 if sid else b])
        if not sid:
            break
    seal = b"\0\0\0\0" if version == 2 else b""
    return (bytes([(version << 4) | kind, present]) + seal +
            struct.pack("<Q", ts) + varint + tail + value)


def logrec(op, key, payload, lsn, seq, sid=1, reserved=0, crc=None,
           nkey=None):
    """An update log record (logrec.h), sealed unless `crc` is given."""
    if nkey is None:
        nkey = len(key)
    body = (struct.pack("<QQ", lsn, seq) + bytes([op, reserved]) +
            struct.pack("<HI", nkey, sid) + key + payload)
    length = 8 + len(body)
    if crc is None:
        crc = crc32c(body)
    return struct.pack("<II", length, crc) + body


def put(key, value, lsn, seq, **env):
    return logrec(LOGREC_PUT, key, envelope(value=value, ts=lsn, **env), lsn,
                  seq)


def tombstone(key, lsn, seq):
    return logrec(LOGREC_PUT, key, envelope(kind=RECORD_TOMBSTONE, ts=lsn),
                  lsn, seq)


def flush(lsn, seq, stamp=0, deadline=0):
    return logrec(LOGREC_FLUSH, b"", struct.pack("<QQ", stamp, deadline), lsn,
                  seq)


def frame(ftype, payload, reserved=b"\0\0\0", length=None):
    """A replication frame (repl_proto.h)."""
    if length is None:
        length = 8 + len(payload)
    return struct.pack("<IB", length, ftype) + reserved + payload


def heartbeat(lsn, seq, pos_lsn, pos_seq, now):
    return frame(FRAME_HEARTBEAT,
                 struct.pack("<QQQQQ", lsn, seq, pos_lsn, pos_seq, now))


def snap_item(key, stored):
    return frame(FRAME_SNAP_ITEM, struct.pack("<H", len(key)) + key + stored)


def u64_frame(ftype, v):
    return frame(ftype, struct.pack("<Q", v))


def ack(lsn, seq):
    return frame(FRAME_ACK, struct.pack("<QQ", lsn, seq))


# ------------------------------------------------------------------- seeds

LSN = 1_700_000_000_000_000  # a plausible microsecond timestamp


def proto_seeds():
    """Byte 0: bit 0 = small limits; byte 1 % 8 = chunk sizes that follow."""
    seeds = {}

    def add(name, stream, small=False, chunks=()):
        assert len(chunks) < 8
        head = bytes([1 if small else 0, len(chunks)]) + bytes(chunks)
        seeds[name] = head + stream

    for cmd in (b"set", b"add", b"replace", b"append", b"prepend"):
        add(cmd.decode(), cmd + b" k 0 0 5\r\nhello\r\n")
        add(cmd.decode() + "-noreply",
            cmd + b" k 1 60 5 noreply\r\nhello\r\nget k\r\n")
    add("cas", b"cas k 0 0 5 12345\r\nhello\r\n")
    add("cas-noreply", b"cas k 0 0 5 12345 noreply\r\nhello\r\n")
    add("cas-bad-unique", b"cas k 0 0 5 x\r\nhello\r\nversion\r\n")
    add("set-bare-newlines", b"set k 0 0 1\nx\r\nget k\n")
    add("set-bad-chunk", b"set k 0 0 5\r\nhelloXX\r\nget k\r\n")
    add("set-negative-length", b"set k 0 0 -1\r\nget k\r\n")
    add("set-bad-flags-swallowed", b"set k abc 0 5\r\nhello\r\nget k\r\n")
    add("set-bad-exptime", b"set k 0 x 2\r\nhi\r\n")
    add("set-key-too-long", b"set " + b"k" * 251 + b" 0 0 2\r\nhi\r\n")
    add("set-key-control-char", b"set k\x01y 0 0 2\r\nhi\r\n")
    add("set-wrapped-length", b"set k 0 0 4294967301\r\nhello\r\n")
    add("set-huge-flags", b"set k 18446744073709551615 -1 1\r\nx\r\n")
    add("set-incomplete", b"set k 0 0 10\r\nabc")
    add("set-too-many-tokens", b"set k 0 0 5 noreply extra more\r\nhello\r\n")
    add("set-too-few-tokens", b"set k 0 0\r\n")
    add("set-too-large", b"set k 0 0 100\r\n" + b"v" * 100 +
        b"\r\nget k\r\n", small=True)
    add("set-too-large-chunked", b"set k 0 0 100\r\n" + b"v" * 100 +
        b"\r\nget k\r\n", small=True, chunks=(3, 40, 0))
    add("set-chunked", b"set k 0 0 20\r\n" + b"0123456789" * 2 +
        b"\r\nget k\r\n", chunks=(0, 1, 4))
    add("get", b"get k\r\n")
    add("get-multi", b"get a b c\r\ngets a  b   c \r\n")
    add("gat", b"gat 100 a b\r\ngats -1 a\r\n")
    add("gat-no-keys", b"gat 10\r\n")
    add("gat-bad-exptime", b"gat x a\r\n")
    add("get-no-key", b"get\r\n")
    add("get-control-char", b"get a\x00b\r\nget a\tb\r\n")
    add("get-many-keys",
        b"get " + b" ".join(b"key%04d" % i for i in range(300)) + b"\r\n")
    add("get-line-too-long-small",
        b"get " + b" ".join(b"key%04d" % i for i in range(80)) + b"\r\n",
        small=True)
    add("get-leading-spaces", b" " * 120 + b"get k\r\n", small=True)
    add("delete", b"delete k\r\ndelete k 0\r\ndelete k noreply\r\n"
        b"delete k 0 noreply\r\n")
    add("delete-usage", b"delete k 5\r\ndelete k 0 x\r\ndelete\r\n")
    add("incr-decr", b"incr k 5\r\ndecr k 18446744073709551615\r\n"
        b"incr k 1 noreply\r\n")
    add("incr-bad-delta", b"incr k -1\r\nincr k 18446744073709551616\r\n"
        b"decr k x noreply\r\n")
    add("touch", b"touch k 100\r\ntouch k -5 noreply\r\ntouch k x\r\n")
    add("flush-all", b"flush_all\r\nflush_all 10\r\nflush_all noreply\r\n"
        b"flush_all 10 noreply\r\nflush_all x\r\nflush_all 1 2 3\r\n")
    add("verbosity", b"verbosity 1\r\nverbosity 1 noreply\r\nverbosity\r\n"
        b"verbosity x\r\n")
    add("version-quit", b"version\r\nversion extra words\r\nquit\r\n")
    add("stats", b"stats\r\nstats slabs\r\nstats   detail on   \r\n")
    add("repl-hello", b"REPL 1 2 0 1 " + b"0123456789abcdef" * 2 + b"\r\n")
    add("repl-hello-bad", b"REPL 1 0 0 1\r\nREPL 1 2 x 1\r\nREPL\r\n"
        b"REPL 1 2 18446744073709551616 1\r\nREPL 1 2 3 4 5\r\n")
    add("unknown", b"bogus\r\n\r\n   \r\nGET\r\n")
    add("http", b"GET / HTTP/1.1\r\nHost: x\r\n\r\n")
    add("line-too-long", b"a" * 2100)
    add("line-too-long-small", b"set " + b"k" * 200 + b"\r\n", small=True)
    add("pipeline-chunked",
        b"set a 0 0 1\r\n1\r\nget a b\r\nincr a 1\r\ndelete b\r\n"
        b"touch a 5\r\nset b 0 0 2 noreply\r\nxy\r\ngets a b\r\nquit\r\n",
        chunks=(0, 6, 12, 2))

    # meta commands (src/proto_meta.c)
    add("meta-mn-me", b"mn\r\nme k\r\nme Zm9v b\r\nme\r\nmn extra\r\n")
    add("meta-mg-flags", b"mg k c f h k l Oabc s t u v q\r\nmg k\r\n"
        b"mg k O\r\nmn\r\n")
    add("meta-mg-tokens", b"mg k N30 R-5 T3600\r\nmg k t T10\r\n"
        b"mg k T10 t\r\nmg k T+7 N-0 R4294967297\r\n")
    add("meta-mg-proxy-hints", b"mg k Pfoo Lbar/ v\r\nmg k P P\r\n")
    add("meta-ms", b"ms k 5 F4294967295 T-1 C18446744073709551615 E1 I MS q"
        b"\r\nhello\r\nms k 0\r\n\r\nms k 4\r\n\r\n\r\n\r\nmn\r\n")
    add("meta-ms-modes", b"".join(b"ms k 2 M%c\r\nab\r\n" % m
                                  for m in b"SEAPR"))
    add("meta-ms-chunked", b"ms key 10 T60 F3\r\n0123456789\r\nmn\r\n",
        chunks=(0, 1, 4))
    add("meta-md", b"md k I q C5 T30 k O1\r\nmd k\r\nmd k Pp Lx/\r\n")
    add("meta-ma", b"ma k N0 J10 D5 MD C3 E4 v t c\r\nma k\r\n"
        b"ma k D0 J18446744073709551615\r\nma k MI\r\nma k M+\r\n"
        b"ma k M-\r\n")
    add("meta-base64", b"mg Zm9vYmFy b v\r\nmg Zm9vYg== b\r\n"
        b"mg IGEKAA== b\r\nms Zm9v 3 b T1\r\nabc\r\nmd Zm9v b q\r\n"
        b"ma Zm9v b\r\n")
    add("meta-base64-bad", b"mg Zm9 b\r\nmg Z=9v b\r\nmg !!!! b\r\n"
        b"ms !!!! 3 b\r\nabc\r\nmd !!!! b\r\nma !!!! b\r\nmn\r\n")
    add("meta-base64-long", b"mg " + b"enp6" * 83 + b"eg== b\r\nmg " +
        b"enp6" * 83 + b"eno= b\r\n")
    add("meta-flag-errors", b"mg k y\r\nmg k v v\r\nms k 3 y\r\nabc\r\n"
        b"ms k 3 k Oa O2\r\nabc\r\nmd k x\r\nmd k k k\r\nma k v v\r\n"
        b"mn\r\n")
    add("meta-token-errors", b"mg k Ta\r\nmg k N\r\nmg k R\r\nmg k C\r\n"
        b"mg k E1.5\r\nmg k J-3\r\nmg k Dx\r\nmg k F\r\nma k Dabc\r\n"
        b"md k T\r\nms k 3 Tabc\r\nabc\r\nms k 3 F-1\r\nabc\r\nmn\r\n")
    add("meta-opaque", b"mg k O" + b"o" * 31 + b"\r\nmg k O" + b"o" * 32 +
        b"\r\nms k 3 O" + b"o" * 32 + b"\r\nabc\r\nmn\r\n")
    add("meta-too-many", b"mg k c f h k l O q s t u v N1 R1 T1 C1 P L\r\n"
        b"mg k c f h k l O q s t u v N1 R1 T1 C1 P L I\r\n"
        b"md k" + b" v" * 30 + b"\r\n"
        b"ms k 1 c f h k l O q s t u v N1 R1 T1 C1 P L\r\nx\r\nmn\r\n")
    add("meta-modes-bad", b"ms k 3 MX\r\nabc\r\nms k 3 Ms\r\nabc\r\n"
        b"ms k 3 M\r\nabc\r\nma k Md\r\nma k MII\r\nmn\r\n")
    add("meta-command-line", b"mg\r\nms\r\nms k\r\nms k abc\r\nabc\r\n"
        b"ms k -1\r\nmg " + b"k" * 251 + b" v\r\nms " + b"k" * 251 +
        b" 3\r\nabc\r\nmg a\x01z v\r\nmn\r\n")
    add("meta-ms-bad-chunk", b"ms k 3\r\nabcd\r\nms k 3 q\r\nabcXYmn\r\n")
    add("meta-ms-too-large", b"ms big 100 T0 q\r\n" + b"v" * 100 +
        b"\r\nmn\r\n", small=True)
    add("meta-ms-too-large-chunked", b"ms Ymln 100 b\r\n" + b"v" * 100 +
        b"\r\nmn\r\n", small=True, chunks=(3, 40, 0))
    add("meta-pipeline", b"ms a 1 q\r\nx\r\nmg a v k c\r\nma n N0 J5\r\n"
        b"md a q\r\nget a\r\nmn\r\n", chunks=(0, 6, 12, 2))
    return seeds


def ulog_seeds():
    """Segment bodies: the records after the 64-byte segment header."""
    seeds = {}
    a = put(b"user:1", b"1700000000", LSN + 1, 1)
    b = put(b"user:2", b"x" * 40, LSN + 2, 2, flags=7, exptime=1_900_000_000,
            cas=99)
    c = tombstone(b"user:1", LSN + 3, 3)
    d = flush(LSN + 4, 4)
    e = flush(LSN + 5, 5, stamp=0, deadline=1_900_000_000)
    seeds["empty"] = b""
    seeds["one-put"] = a
    seeds["put-flags-exptime-cas"] = put(b"k", b"v", LSN + 1, 1, flags=1,
                                         exptime=2, cas=3, sid=300)
    seeds["put-tombstone-flush"] = a + b + c + d + e
    seeds["tombstone"] = tombstone(b"k", LSN + 1, 1)
    seeds["flush"] = flush(LSN + 1, 1, stamp=LSN, deadline=0)
    seeds["torn-tail"] = a + b + c[: len(c) // 2]
    seeds["torn-length"] = a + c[:2]
    seeds["torn-header"] = a + b[:20]
    seeds["bad-crc-middle"] = (a + logrec(LOGREC_PUT, b"user:2",
                                          envelope(value=b"y"), LSN + 2, 2,
                                          crc=0x12345678) + c)
    seeds["zero-fill"] = a + b + bytes(256)
    seeds["zero-fill-then-garbage"] = a + bytes(64) + b"garbage"
    seeds["seq-gap"] = a + put(b"k", b"v", LSN + 2, 3)
    seeds["lsn-repeats"] = a + put(b"k", b"v", LSN + 1, 2)
    seeds["lsn-zero-first"] = put(b"k", b"v", 0, 1) + put(b"k", b"w", 5, 2)
    seeds["seq-not-one"] = put(b"k", b"v", LSN, 7)
    seeds["bad-op"] = a + logrec(3, b"k", b"", LSN + 2, 2)
    seeds["reserved-byte"] = logrec(LOGREC_PUT, b"k", envelope(), LSN, 1,
                                    reserved=1)
    seeds["flush-with-key"] = logrec(LOGREC_FLUSH, b"k", bytes(16), LSN, 1)
    seeds["flush-short-payload"] = logrec(LOGREC_FLUSH, b"", bytes(8), LSN, 1)
    seeds["put-empty-key"] = logrec(LOGREC_PUT, b"", envelope(), LSN, 1)
    seeds["put-version-1"] = logrec(LOGREC_PUT, b"k", envelope(version=1),
                                    LSN, 1)
    seeds["put-bad-envelope"] = logrec(LOGREC_PUT, b"k", b"\x31\x00junk",
                                       LSN, 1)
    seeds["put-long-key"] = put(b"k" * 300, b"v", LSN, 1)
    seeds["length-below-header"] = struct.pack("<II", 16, 0) + bytes(12)
    seeds["length-above-max"] = struct.pack("<II", (1 << 30) + 8192, 0)
    seeds["key-past-end"] = logrec(LOGREC_PUT, b"k", envelope(), LSN, 1,
                                   nkey=200)
    seeds["torn-large-record"] = a + struct.pack("<I", 600 << 10) + bytes(40)
    seeds["many-records"] = b"".join(
        put(b"key:%d" % i, b"value-%d" % i, LSN + i, i) for i in range(1, 41))
    return seeds


def repl_seeds():
    """What one side of a replication connection reads."""
    seeds = {}
    nonce = b"0123456789abcdef" * 2
    proof = b"fedcba9876543210" * 4
    hello = b"REPL 1 2 0 1 " + nonce + b"\r\n"
    challenge = b"REPL CHALLENGE " + nonce + b" " + proof + b"\r\n"
    r1 = frame(FRAME_RECORD, put(b"user:1", b"1700000000", LSN + 1, 1))
    r2 = frame(FRAME_RECORD, tombstone(b"user:1", LSN + 2, 2))
    r3 = frame(FRAME_RECORD, flush(LSN + 3, 3, deadline=1_900_000_000))
    hb = heartbeat(LSN + 3, 3, LSN + 3, 3, LSN + 10)
    seeds["hello-records-heartbeat"] = (hello + b"REPL OK 1\r\n" + r1 + r2 +
                                        r3 + hb)
    seeds["records"] = r1 + r2 + r3
    seeds["record-put"] = r1
    seeds["record-flush"] = r3
    seeds["heartbeat"] = hb
    seeds["heartbeat-skipped-own"] = heartbeat(LSN + 9, 9, LSN + 7, 7, 0)
    seeds["resync"] = (hello + b"REPL RESYNC 1\r\n" +
                       u64_frame(FRAME_SNAP_BEGIN, LSN) +
                       snap_item(b"a", envelope(value=b"1")) +
                       snap_item(b"b", envelope(kind=RECORD_TOMBSTONE)) +
                       snap_item(b"c" * 250, envelope(value=b"x" * 30,
                                                      flags=5, cas=77)) +
                       u64_frame(FRAME_SNAP_END, 3) + r1 + hb)
    seeds["snap-begin"] = u64_frame(FRAME_SNAP_BEGIN, 0)
    seeds["snap-end"] = u64_frame(FRAME_SNAP_END, 12)
    seeds["snap-item"] = snap_item(b"k", envelope(value=b"v"))
    seeds["acks"] = ack(LSN + 1, 1) + ack(LSN + 2, 2) + ack(LSN + 3, 3)
    seeds["hello-only"] = hello
    seeds["hello-sid-zero"] = b"REPL 1 0 0 1 " + nonce + b"\r\n" + r1
    seeds["hello-overflow"] = (b"REPL 1 5 99999999999999999999 1 " + nonce +
                               b"\r\n" + r1)
    seeds["hello-no-nonce"] = b"REPL 1 5 0 1\r\n"
    seeds["hello-bad-nonce"] = b"REPL 1 5 0 1 " + nonce.upper() + b"\r\n"
    seeds["hello-extra"] = b"REPL 1 5 0 1 " + nonce + b" 9\r\n"
    seeds["hello-bare"] = b"1 2 3 4 " + nonce
    seeds["handshake-authenticated"] = (hello + challenge + b"REPL AUTH " +
                                        proof + b"\r\nREPL OK 1\r\n" + r1 +
                                        hb)
    seeds["handshake-open"] = hello + b"REPL RESYNC 1\r\n" + r1
    seeds["challenge-bad"] = (b"REPL CHALLENGE " + nonce + b" " + proof[:63] +
                              b"\r\nREPL CHALLENGE " + nonce + b" " + proof +
                              b" x\r\nREPL AUTH " + proof.upper() +
                              b"\r\nREPL ERROR authentication failed\r\n")
    seeds["reserved-nonzero"] = frame(FRAME_ACK, bytes(16), reserved=b"\0\1\0")
    seeds["length-below-header"] = frame(FRAME_ACK, b"", length=4)
    seeds["length-above-max"] = frame(FRAME_RECORD, b"", length=0xFFFFFFF0)
    seeds["unknown-type"] = frame(9, bytes(8))
    seeds["heartbeat-position-ahead"] = heartbeat(5, 5, 6, 6, 0)
    seeds["heartbeat-short"] = frame(FRAME_HEARTBEAT, bytes(32))
    seeds["ack-short"] = frame(FRAME_ACK, bytes(8))
    seeds["snap-begin-long"] = frame(FRAME_SNAP_BEGIN, bytes(9))
    seeds["snap-item-empty-key"] = snap_item(b"", envelope())
    seeds["snap-item-key-past-end"] = frame(FRAME_SNAP_ITEM,
                                            struct.pack("<H", 40) + b"k")
    seeds["snap-item-bad-envelope"] = snap_item(b"k", b"\x00\x00")
    seeds["record-bad-crc"] = frame(FRAME_RECORD,
                                    logrec(LOGREC_PUT, b"k", envelope(), LSN,
                                           1, crc=0))
    seeds["record-trailing-byte"] = frame(FRAME_RECORD,
                                          put(b"k", b"v", LSN, 1) + b"\0")
    seeds["record-truncated"] = r1 + r2[:-3]
    seeds["partial-header"] = r1 + r2[:5]
    return seeds


# memcached binary protocol (src/proto_bin.h)
BIN_OPS = {
    "get": 0x00, "set": 0x01, "add": 0x02, "replace": 0x03, "delete": 0x04,
    "incr": 0x05, "decr": 0x06, "quit": 0x07, "flush": 0x08, "getq": 0x09,
    "noop": 0x0A, "version": 0x0B, "getk": 0x0C, "getkq": 0x0D,
    "append": 0x0E, "prepend": 0x0F, "stat": 0x10, "setq": 0x11,
    "addq": 0x12, "replaceq": 0x13, "deleteq": 0x14, "incrq": 0x15,
    "decrq": 0x16, "quitq": 0x17, "flushq": 0x18, "appendq": 0x19,
    "prependq": 0x1A, "verbosity": 0x1B, "touch": 0x1C, "gat": 0x1D,
    "gatq": 0x1E, "sasl-list": 0x20, "sasl-auth": 0x21, "sasl-step": 0x22,
    "gatk": 0x23, "gatkq": 0x24,
}


def bframe(op, extras=b"", key=b"", value=b"", opaque=0, cas=0, magic=0x80,
           nkey=None, nextras=None, body=None):
    """A binary request; the lengths are computed unless given."""
    if nkey is None:
        nkey = len(key)
    if nextras is None:
        nextras = len(extras)
    if body is None:
        body = len(extras) + len(key) + len(value)
    return (struct.pack(">BBHBBHIIQ", magic, BIN_OPS.get(op, op), nkey,
                        nextras, 0, 0, body, opaque, cas) +
            extras + key + value)


def store_extras(flags=0, exptime=0):
    return struct.pack(">II", flags, exptime)


def arith_extras(delta=1, initial=0, exptime=0):
    return struct.pack(">QQI", delta, initial, exptime)


def bin_seeds():
    """Byte 0: bit 0 = 64-byte item limit, bit 1 = repair frame lengths;
    byte 1 % 8 = chunk sizes that follow."""
    seeds = {}

    def add(name, stream, small=False, repair=False, chunks=()):
        assert len(chunks) < 8
        head = bytes([(1 if small else 0) | (2 if repair else 0),
                      len(chunks)]) + bytes(chunks)
        seeds[name] = head + stream

    ext = store_extras(5, 60)
    exp = struct.pack(">I", 100)
    for op in ("get", "getq", "getk", "getkq", "delete", "deleteq"):
        add(op, bframe(op, key=b"k", opaque=7) + bframe("noop", opaque=8))
    for op in ("set", "setq", "add", "addq", "replace", "replaceq"):
        add(op, bframe(op, ext, b"k", b"hello", opaque=7) +
            bframe("noop", opaque=8))
    for op in ("append", "appendq", "prepend", "prependq"):
        add(op, bframe(op, key=b"k", value=b"tail", opaque=7) +
            bframe("noop", opaque=8))
    for op in ("incr", "incrq", "decr", "decrq"):
        add(op, bframe(op, arith_extras(3, 10, 0), b"n") +
            bframe(op, arith_extras(1, 0, 0xFFFFFFFF), b"n", cas=9) +
            bframe("noop"))
    for op in ("touch", "gat", "gatq", "gatk", "gatkq"):
        add(op, bframe(op, exp, b"k", opaque=3) + bframe("noop", opaque=4))
    for op in ("quit", "quitq", "noop", "version", "sasl-list"):
        add(op, bframe(op, opaque=0x12345678))
    add("flush", bframe("flush") + bframe("flushq", exp) +
        bframe("flush", struct.pack(">I", 0)))
    add("stat", bframe("stat") + bframe("stat", key=b"settings") +
        bframe("stat", key=b"items"))
    add("sasl", bframe("sasl-list") +
        bframe("sasl-auth", key=b"PLAIN", value=b"\0user\0pass") +
        bframe("sasl-step", key=b"PLAIN", value=b"more"))
    add("set-cas", bframe("set", ext, b"k", b"v", cas=0x1122334455667788) +
        bframe("add", ext, b"k", b"v", cas=5) +
        bframe("delete", key=b"k", cas=42))
    add("key-250", bframe("get", key=b"k" * 250) +
        bframe("set", ext, b"k" * 250, b"v"))
    add("pipeline", bframe("getkq", key=b"a", opaque=1) +
        bframe("set", store_extras(), b"bb", b"value", opaque=2) +
        bframe("incr", arith_extras(), b"n", opaque=3) +
        bframe("getq", key=b"ccc", opaque=4) + bframe("noop", opaque=5))
    add("pipeline-chunked", bframe("getkq", key=b"a", opaque=1) +
        bframe("set", store_extras(), b"bb", b"value", opaque=2) +
        bframe("incr", arith_extras(), b"n", opaque=3) +
        bframe("noop", opaque=5), chunks=(0, 6, 12, 2, 30))
    add("pipeline-repaired", bframe("get", key=b"a", body=1000) +
        bframe("set", ext, b"k", b"xyz", nkey=900) + bframe("noop"),
        repair=True)

    # refusals that close
    add("bad-magic", bframe("get", key=b"k", magic=0x81))
    add("text-line", b"get k\r\nget k\r\nget k\r\nget k\r\n")
    add("key-longer-than-body", bframe("get", key=b"k", nkey=10, body=5) +
        b"kkkk")
    add("key-extras-longer-than-body", bframe("set", ext, b"kkkk", body=11))
    add("set-no-extras", bframe("set", key=b"k", value=b"v"))
    add("get-with-extras", bframe("get", b"\0" * 4, b"k"))
    add("get-no-key", bframe("get"))
    add("get-with-value", bframe("get", key=b"k", value=b"v"))
    add("noop-with-key", bframe("noop", key=b"k"))
    add("flush-8-extras", bframe("flush", b"\0" * 8))
    add("incr-short-extras", bframe("incr", b"\0" * 19, b"n"))
    add("key-251", bframe("get", key=b"k" * 251))
    add("body-huge-get", bframe("get", key=b"k", body=0xFFFFFFFF))
    add("body-huge-unknown", bframe(0x55, body=0xFFFFFFFF))

    # refusals that carry on
    add("unknown-opcodes", bframe("verbosity", exp, opaque=0xBEEF) +
        bframe(0x1F) + bframe(0x40, b"abc", b"key", b"v") +
        bframe(0xFF, opaque=1) + bframe("noop"))
    add("set-too-large", bframe("setq", store_extras(), b"big", b"v" * 100,
                                opaque=0x51) + bframe("noop", opaque=0x52),
        small=True)
    add("set-too-large-chunked", bframe("set", store_extras(), b"big",
                                        b"v" * 300) + bframe("noop"),
        small=True, chunks=(63, 3, 100, 0))
    add("append-too-large", bframe("append", key=b"k", value=b"v" * 65) +
        bframe("sasl-auth", key=b"PLAIN", value=b"v" * 65) + bframe("noop"),
        small=True)
    add("set-body-huge", bframe("set", store_extras(), b"k",
                                body=0xFFFFFFFF) + bytes(200))
    add("set-too-large-long-key", bframe("set", store_extras(), b"k" * 300,
                                         b"v" * 100), small=True)
    add("truncated", bframe("set", ext, b"k", b"hello")[:30])
    add("header-only", bframe("get", key=b"k")[:24])
    return seeds


def client_hello(max_tls12=False, alpn=None):
    """A real ClientHello from Python's ssl module (OpenSSL), as a client
    connecting to kurad's TLS port sends it."""
    import ssl
    ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_CLIENT)
    ctx.check_hostname = False
    ctx.verify_mode = ssl.CERT_NONE
    if max_tls12:
        ctx.maximum_version = ssl.TLSVersion.TLSv1_2
    if alpn:
        ctx.set_alpn_protocols(alpn)
    inb, outb = ssl.MemoryBIO(), ssl.MemoryBIO()
    conn = ctx.wrap_bio(inb, outb, server_hostname="localhost")
    try:
        conn.do_handshake()
    except ssl.SSLWantReadError:
        pass
    return outb.read()


def tls_seeds():
    """fuzz_tls: byte 0 bit 0 asks for a client certificate, byte 1 % 8
    chunk sizes follow, then what the client sends."""
    seeds = {}

    def add(name, stream, mode=0, sizes=b""):
        seeds[name] = bytes([mode, len(sizes)]) + sizes + stream

    hello = client_hello()
    add("hello13", hello)
    add("hello13-whole", hello, sizes=b"\xff")
    add("hello13-mutual", hello, mode=1, sizes=b"\x40")
    add("hello12", client_hello(max_tls12=True), sizes=b"\x10\x80")
    add("hello-alpn", client_hello(alpn=["http/1.1"]))
    add("hello-truncated", hello[:40])
    add("hello-twice", hello + hello, sizes=b"\xff")
    add("hello-then-junk", hello + bytes(range(256)), sizes=b"\xff")
    add("header-length-max", b"\x16\x03\x01\xff\xff" + hello[5:])
    add("header-junk", b"\x16\x03\x01\x00\x10" + bytes(range(16)))
    add("header-only", b"\x16\x03\x01")
    add("record-16k-junk", b"\x16\x03\x03\x40\x00" +
        bytes((i * 131 + 7) & 0xFF for i in range(16384)), sizes=b"\xff")
    add("appdata-first", b"\x17\x03\x03\x00\x05hello")
    add("alert-first", b"\x15\x03\x03\x00\x02\x02\x28")
    add("sslv2-hello", b"\x80\x2e\x01\x03\x01\x00\x15\x00\x00\x00\x10" +
        bytes(range(37)))
    add("text-get", b"get a\r\n")
    add("text-repl", b"REPL 1 1 0 0\r\n")
    add("meta", b"mg a v\r\n")
    add("http-get", b"GET /x HTTP/1.1\r\nHost: k\r\n\r\n")
    add("binary-get", bframe("get", key=b"k", opaque=0xdeadbeef))
    add("binary-magic-only", b"\x80")
    return seeds


def write(kind, seeds):
    out = os.path.join(CORPUS, kind)
    shutil.rmtree(out, ignore_errors=True)
    os.makedirs(out)
    for name, data in sorted(seeds.items()):
        with open(os.path.join(out, name), "wb") as f:
            f.write(data)
    return len(seeds), sum(len(d) for d in seeds.values())


def main():
    kinds = (("proto", proto_seeds), ("ulog", ulog_seeds),
             ("repl", repl_seeds), ("bin", bin_seeds), ("tls", tls_seeds))
    wanted = sys.argv[1:] or [k for k, _ in kinds]
    if any(w not in dict(kinds) for w in wanted):
        sys.exit(__doc__)
    for kind, make in kinds:
        if kind in wanted:
            n, size = write(kind, make())
            print(f"{kind}: {n} seeds, {size} bytes")


if __name__ == "__main__":
    main()
