#!/usr/bin/env python3
"""Writes the seed corpora of the fuzz harnesses in tests/fuzz/corpus/.

    tests/fuzz/make-seeds.py            rewrites corpus/{proto,ulog,repl}/

The seeds are committed; this script documents how each was made and makes
them again after a format change. It encodes update log records, record
envelopes and replication frames itself, from the layouts in src/logrec.h,
src/record.h and src/repl_proto.h (no third-party modules), so a seed is a
second opinion on the format rather than a copy of the C encoder's output.

Seed names say what they cover. Every command and error path of the text
protocol, valid and damaged log records, and every frame type, valid and
damaged, should have one.
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


def write(kind, seeds):
    out = os.path.join(CORPUS, kind)
    shutil.rmtree(out, ignore_errors=True)
    os.makedirs(out)
    for name, data in sorted(seeds.items()):
        with open(os.path.join(out, name), "wb") as f:
            f.write(data)
    return len(seeds), sum(len(d) for d in seeds.values())


def main():
    if len(sys.argv) > 1:
        sys.exit(__doc__)
    for kind, make in (("proto", proto_seeds), ("ulog", ulog_seeds),
                       ("repl", repl_seeds)):
        n, size = write(kind, make())
        print(f"{kind}: {n} seeds, {size} bytes")


if __name__ == "__main__":
    main()
