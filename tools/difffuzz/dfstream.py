"""dfstream: assembles generated requests into streams, and keeps a stream
well-formed when the shrinker removes requests from it.

Reply units: a request marked sentinel_after is followed on the wire by a
sentinel (dftext.sentinel / dfbin.sentinel), whose reply closes the unit
of replies that request's group produced. Requests between sentinels are
pipelined. A stream must read a connection's replies before it switches
to another connection (the order of effects across connections is then
the order of the stream) and before it uses a cas an earlier request
returned: those requests are marked sync_after.
"""

import re
import struct

import dfbin
import dftext
from dfgen import ITEM_MAX, AbsTime, CasRef, Gen, Req


class Stream:
    __slots__ = ("sid", "reqs")

    def __init__(self, sid, reqs):
        self.sid = sid
        self.reqs = reqs

    def copy(self):
        return Stream(self.sid, [r.copy() for r in self.reqs])


PROTOCOLS = ("text", "meta", "bin")
_META_ON_TEXT = True  # text connections send meta commands too


def generate(rng, sid, protocols=PROTOCOLS):
    global _META_ON_TEXT
    _META_ON_TEXT = "meta" in protocols
    """One random stream, numbered `sid`. A connection speaks
    one of `protocols` ("meta" is a text connection sending mostly meta
    commands)."""
    g = Gen(rng)
    r = rng
    keys = g.keys()
    nconn = g.pick([(60, 1), (30, 2), (10, 3)])
    weights = [(w, p) for w, p in ((40, "text"), (25, "meta"), (35, "bin"))
               if p in protocols]
    protos = {c: g.pick(weights) for c in range(nconn)}
    n = g.pick([(10, 1), (25, r.randint(2, 5)), (40, r.randint(6, 15)),
                (20, r.randint(16, 40)), (5, r.randint(41, 100))])
    reqs = []
    cas_src = {}   # key -> index of the request that returned its cas
    started = set()
    big = 0
    big_keys = set()  # keys that may hold a value near the limit
    flushed_now = False  # an immediate flush was generated
    # Keys that may hold a number of 2^63 or more: memcached's incr then
    # looks for a '-' past the end of the value, in memory that belongs
    # to no item, and may answer non-numeric (doc/protocol.md, difference
    # 15): no incr or decr on them.
    counter_keys = set()
    # Connections whose last request may have left bytes that the next one
    # is read with (a data block longer or shorter than announced): the
    # next stays short, as a line over 2048 bytes reads differently in
    # memcached depending on how it arrived.
    shifted = {}
    conn = 0
    for i in range(n):
        if nconn > 1 and r.random() < 0.3:
            conn = r.randrange(nconn)
        proto = protos[conn]
        first = conn not in started
        mixed = not first and r.random() < 0.02 and len(protocols) > 1
        if mixed:
            proto = "text" if proto == "bin" else "bin"  # mixed on a conn
        key = r.choice(keys)
        src = cas_src.get(key)
        no_grow = key in big_keys
        if r.random() < 0.12:
            if proto == "bin":
                parts, label = dfbin.cas_source(g, key, i + 1)
            else:
                parts, label = dftext.cas_source(g, key, proto == "meta")
            req = Req(conn, parts, proto == "bin", label)
            req.sync_after = True
            req.sentinel_after = True
            cas_src[key] = i
        else:
            for _ in range(20):
                out = _one(g, proto, key, keys, src, i + 1, first, no_grow,
                           not flushed_now)
                if first and not _opens_well(out[0]):
                    continue
                if key in counter_keys and _counts(out[1]):
                    continue
                if shifted.get(conn) and sum(
                        len(p) for p in out[0] if isinstance(p, bytes)) > 1000:
                    continue
                break
            else:
                continue
            parts, label = out[0], out[1]
            req = Req(conn, parts, proto == "bin", label,
                      out[2] if len(out) > 2 else ())
            if label.startswith("flush") and not label.endswith("later"):
                flushed_now = True
        head = next((p for p in req.parts if isinstance(p, bytes)), b"")
        req.binary = head[:1] == b"\x80"
        if req.binary != (protos[conn] == "bin"):
            mixed = True  # a frame on a text connection, or a line on a
            # binary one (whichever generator chose it)
        if mixed:
            # Read as the other protocol, a time's bytes would change how
            # the request splits from play to play: use a fixed one.
            # The same for a cas: each server's differ.
            req.parts = [p if not isinstance(p, (AbsTime, CasRef)) else
                         (b"1000" if p.fmt == "dec" else
                          b"\0\0\3\xe8" if isinstance(p, AbsTime) else
                          b"\x7d" * 8)
                         for p in req.parts]
            if protos[conn] != "bin":
                # A frame read as a text line: end it, and keep it short,
                # or the line would run into the next request (memcached
                # reads a line over 2048 bytes only if it arrived whole).
                if sum(len(p) for p in req.parts
                       if isinstance(p, bytes)) > 300:
                    continue
                req.parts.append(b"\r\n")
        size = sum(len(p) for p in req.parts if isinstance(p, bytes))
        if size > ITEM_MAX - 65536:
            big_keys.add(key)
        if _may_make_big_number(req):
            counter_keys.add(key)
        shifted[conn] = "shifts" in req.tags
        if size > 65536:
            big += 1
            if big > 2:
                continue  # at most two large values a stream
        started.add(conn)
        req.sentinel_after = req.sentinel_after or r.random() < 0.6
        reqs.append(req)
    return fix(Stream(sid, reqs))


def _counts(label):
    """Whether a request is an incr, decr or meta arithmetic."""
    return label.split(" ")[0].rstrip(",") in (
        "incr", "decr", "incrq", "decrq", "ma")


_DIGITS = re.compile(rb"[0-9]{16}")


def _may_make_big_number(req):
    """Whether a request may leave a number of 2^63 or more in its key: a
    run of 16 digits in it (a value, an incr's delta), or a binary incr or
    decr whose delta or initial value is that large."""
    data = b"".join(p for p in req.parts if isinstance(p, bytes))
    if _DIGITS.search(data):
        return True
    # a frame's cas or time is a reference until played: its width here
    data = b"".join(p if isinstance(p, bytes) else
                    b"\0" * (8 if isinstance(p, CasRef) else 4)
                    for p in req.parts)
    if req.binary and len(data) >= 44 and data[1] in (5, 6, 0x15, 0x16):
        delta, initial = struct.unpack_from(">QQ", data, 24)
        return max(delta, initial) >= 10 ** 15
    return False


def _opens_well(parts):
    """Whether a connection may start with these bytes. Left out: a first
    byte kura takes for HTTP (upper case but R), a replication peer's
    REPL, and a control or high byte, which kura answers with ERROR and
    a close at once (doc/protocol.md, difference 10)."""
    head = b"".join(p for p in parts[:2] if isinstance(p, bytes))[:4]
    if not head:
        return False
    c = head[0]
    if c == 0x80:
        return True
    if 0x41 <= c <= 0x5a and c != 0x52 or head.startswith(b"REPL"):
        return False
    return not ((c < 0x20 and c not in b" \t\r\n") or c >= 0x7f)


def _one(g, proto, key, keys, src, opaque, first, no_grow, allow_delay):
    """One request of the connection's protocol. `no_grow`: the key may
    hold a value near the size limit, so nothing appends to it (memcached's
    limit is higher: see dfgen.MC_ITEM_MAX). `allow_delay`: a flush may
    be delayed (see dftext.flush_all)."""
    if proto == "bin":
        return dfbin.request(g, key, src, opaque, no_grow, allow_delay)
    r = g.r
    if proto == "meta" and r.random() < 0.7:
        return dftext.meta(g, key, src, no_grow)
    op = g.pick([(30, "store"), (25, "get"), (7, "delete"), (8, "arith"),
                 (5, "touch"), (3, "flush"), (6, "admin"), (6, "malformed"),
                 (10, "meta"), (1, "quit"), (1, "binary")])
    if first and op in ("binary", "quit"):
        op = "get"
    if op == "meta" and not _META_ON_TEXT:
        op = "store"
    if op == "store":
        return dftext.storage(g, key, src, no_grow)
    if op == "get":
        return dftext.retrieval(g, keys)
    if op == "delete":
        return dftext.delete(g, key)
    if op == "arith":
        return dftext.arith(g, key)
    if op == "touch":
        return dftext.touch(g, key)
    if op == "flush":
        return dftext.flush_all(g, allow_delay)[:2]
    if op == "admin":
        return dftext.admin(g)
    if op == "malformed":
        return dftext.malformed(g, first)
    if op == "meta":
        return dftext.meta(g, key, src, no_grow)
    if op == "quit":
        return [b"quit\r\n"], "quit"
    return dfbin.request(g, key, src, opaque, no_grow, allow_delay)


def fix(stream):
    """Marks the syncs a stream needs: before a switch of connection and
    after a request whose cas a later request uses; drops references to
    requests that are gone. Returns the stream."""
    reqs = stream.reqs
    for i, req in enumerate(reqs):
        if i + 1 < len(reqs) and reqs[i + 1].conn != req.conn:
            req.sentinel_after = True
            req.sync_after = True
    last = {}
    binary = {}
    for i, req in enumerate(reqs):
        if req.conn not in binary:
            head = next((p for p in req.parts if isinstance(p, bytes)), b"")
            binary[req.conn] = head[:1] == b"\x80"
        closes = binary[req.conn] and _bad_magic(req)
        if (closes or _long_key_get(req) or _long_line(req)) and \
                req.conn in last:
            # memcached drops the unsent replies of earlier requests when a
            # get names a key over 250 bytes (doc/protocol.md, difference
            # 12): let them be sent first.
            reqs[last[req.conn]].sentinel_after = True
            reqs[last[req.conn]].sync_after = True
        last[req.conn] = i
    for i, req in enumerate(reqs):
        for p in req.parts:
            if isinstance(p, CasRef) and p.idx is not None:
                if p.idx >= i:
                    p.idx = None
                else:
                    reqs[p.idx].sentinel_after = True
                    reqs[p.idx].sync_after = True
    return stream


def _bad_magic(req):
    """A request that does not start with the binary magic: on a binary
    connection memcached closes at once and drops the replies it had not
    sent; kura sends them and then closes. Read them first."""
    head = next((p for p in req.parts if isinstance(p, bytes)), b"")
    return head[:1] != b"\x80"


def _long_line(req):
    """A text line over 2048 bytes other than a get: memcached closes the
    connection on it and drops the replies it had not sent yet; kura sends
    them and then closes (doc/protocol.md, difference 3). Read them first."""
    if req.binary:
        return False
    line = b"".join(p for p in req.parts if isinstance(p, bytes))
    first = line.split(b"\n", 1)[0]
    return len(first) > 2048 and not first.startswith((b"get ", b"gets "))


def _long_key_get(req):
    """A text get, gets, gat or gats line with a word over 250 bytes."""
    if req.binary:
        return False
    line = b"".join(p for p in req.parts if isinstance(p, bytes))
    line = line.split(b"\n", 1)[0]
    words = line.split(b" ")
    return words[0] in (b"get", b"gets", b"gat", b"gats", b"bget") and \
        any(len(w) > 250 for w in words[1:])


def opens_well(stream):
    """Whether every connection of `stream` starts as a generated one may
    (see _opens_well): a shrunk stream must not start one with a request
    that was not first."""
    seen = set()
    for req in stream.reqs:
        if req.conn not in seen:
            seen.add(req.conn)
            if not _opens_well(req.parts):
                return False
    return True


def without(stream, drop):
    """A copy of `stream` without the requests whose indices are in
    `drop`, with cas references renumbered (or made stale)."""
    keep = [i for i in range(len(stream.reqs)) if i not in drop]
    newidx = {old: new for new, old in enumerate(keep)}
    reqs = []
    for old in keep:
        req = stream.reqs[old].copy()
        parts = []
        for p in req.parts:
            if isinstance(p, CasRef):
                p = CasRef(newidx.get(p.idx) if p.idx is not None else None,
                           p.fmt, p.delta)
            parts.append(p)
        req.parts = parts
        req.sync_after = False
        reqs.append(req)
    return fix(Stream(stream.sid, reqs))
