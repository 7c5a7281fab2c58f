"""dfwire: reads a server's reply stream into items and normalises them.

A reply stream is cut into items: one text line, a VALUE or VA line with
its data block, or one binary response frame. The parser is incremental
(feed bytes, take the items that are complete) and knows nothing of the
requests: the connection's protocol, picked by its first request byte as
memcached does, says whether to read text or frames.

Normalising turns an item into a tuple that two servers must agree on
byte for byte, after removing what legitimately differs:
  - cas values become their equality pattern: the n-th distinct cas a
    server hands out in a stream reads as ("cas", n), 0 stays 0;
  - `stats` listings compare by their end alone (text STAT lines are
    dropped, binary stat frames collapse into one item), and a version
    string reads ("version",);
  - meta t (time to live) and `me` exp= compare within 2 s, since the two
    servers' clocks tick at different moments;
  - the deliberate differences of doc/protocol.md that show in a reply
    alone (meta h and l, `me`'s memcached-internal fields);
  - the spaces an incr leaves after a shorter number (see _unpadded).
"""

import base64
import re
import struct

BIN_REQ = 0x80
BIN_RES = 0x81
OP_NOOP = 0x0A
OP_VERSION = 0x0B
OP_STAT = 0x10

# A sentinel's reply: the meta get of this key, carrying an O token, or a
# binary noop carrying an opaque with this high half.
SENTINEL_KEY = b"dfzz.sentinel"
SENTINEL_OPAQUE_BASE = 0xD1F00000


class Item:
    """One reply item. kind: 'line', 'value' (VALUE/VA + data), 'frame',
    'tail' (bytes that parse as nothing, at EOF)."""

    __slots__ = ("kind", "line", "data", "frame", "raw")

    def __init__(self, kind, raw, line=None, data=None, frame=None):
        self.kind = kind
        self.raw = raw
        self.line = line
        self.data = data
        self.frame = frame

    def __repr__(self):
        return "Item(%s, %r)" % (self.kind, self.raw[:80])


class Frame:
    __slots__ = ("magic", "opcode", "status", "datatype", "opaque", "cas",
                 "extras", "key", "value")

    def __init__(self, hdr, body):
        (self.magic, self.opcode, nkey, nextras, self.datatype, self.status,
         _blen, self.opaque, self.cas) = struct.unpack(">BBHBBHIIQ", hdr)
        self.extras = body[:nextras]
        self.key = body[nextras:nextras + nkey]
        self.value = body[nextras + nkey:]


def _value_len(line):
    """The data length a VALUE or VA line announces, or None."""
    toks = line.split(b" ")
    try:
        if toks[0] == b"VALUE" and len(toks) in (4, 5):
            n = int(toks[3])
        elif toks[0] == b"VA" and len(toks) >= 2:
            n = int(toks[1])
        else:
            return None
    except ValueError:
        return None
    return n if n >= 0 else None


class ReplyParser:
    """Incremental parser of one connection's replies."""

    def __init__(self, binary):
        self.binary = binary
        self.buf = bytearray()
        self.items = []

    def feed(self, data):
        self.buf += data
        self._parse()

    def _parse(self):
        buf = self.buf
        pos = 0
        while pos < len(buf):
            if self.binary:
                if buf[pos] != BIN_RES:
                    break  # not a frame: left as a tail at EOF
                if len(buf) - pos < 24:
                    break
                blen = struct.unpack_from(">I", buf, pos + 8)[0]
                end = pos + 24 + blen
                if len(buf) < end:
                    break
                raw = bytes(buf[pos:end])
                self.items.append(Item("frame", raw,
                                       frame=Frame(raw[:24], raw[24:])))
                pos = end
                continue
            nl = buf.find(b"\n", pos)
            if nl < 0:
                break
            line = bytes(buf[pos:nl + 1])
            text = line[:-2] if line.endswith(b"\r\n") else line[:-1]
            n = _value_len(text)
            if n is not None:
                end = nl + 1 + n + 2
                if len(buf) < end:
                    break
                raw = bytes(buf[pos:end])
                self.items.append(Item("value", raw, line=text,
                                       data=bytes(buf[nl + 1:end])))
                pos = end
                continue
            self.items.append(Item("line", line, line=text))
            pos = nl + 1
        if pos:
            del buf[:pos]

    def finish(self):
        """At EOF: whatever is left becomes one tail item."""
        if self.buf:
            self.items.append(Item("tail", bytes(self.buf)))
            self.buf = bytearray()


def is_sentinel(item, token=None):
    """True if `item` answers a sentinel (the one with `token`, if given)."""
    if item.kind == "line":
        toks = item.line.split(b" ")
        if (len(toks) == 3 and toks[0] == b"EN" and
                toks[1] == b"k" + SENTINEL_KEY and toks[2].startswith(b"O")):
            return token is None or toks[2] == b"O%d" % token
        return False
    if item.kind == "frame":
        f = item.frame
        if f.opcode == OP_NOOP and f.opaque & 0xFFFF0000 == \
                SENTINEL_OPAQUE_BASE:
            return token is None or f.opaque == SENTINEL_OPAQUE_BASE + token
    return False


def item_cas_values(item):
    """The cas values an item carries, in order (for cas references)."""
    out = []
    if item.kind == "frame":
        if item.frame.cas:
            out.append(item.frame.cas)
    elif item.kind in ("line", "value"):
        toks = item.line.split(b" ")
        if toks[0] == b"VALUE" and len(toks) == 5 and toks[4].isdigit():
            out.append(int(toks[4]))
        elif toks[0] in META_REPLIES:
            for t in toks[1:]:
                if t[:1] == b"c" and t[1:].isdigit():
                    out.append(int(t[1:]))
    return out


META_REPLIES = (b"VA", b"HD", b"EN", b"NF", b"NS", b"EX", b"OK")


class Approx:
    """A number two servers may report a second apart (a time to live)."""

    __slots__ = ("n",)

    def __init__(self, n):
        self.n = n

    def __eq__(self, other):
        return isinstance(other, Approx) and abs(self.n - other.n) <= 2

    def __hash__(self):
        return 0

    def __repr__(self):
        return "~%d" % self.n


_PADDING = re.compile(rb"([0-9]) +")


def _unpadded(data):
    """A value without the spaces an incr or decr may have left after a
    number's digits, or None if it has none. memcached pads a shorter
    number in place only when no other thread holds the item at that
    moment, and otherwise stores the digits alone, so the padding is
    compared as if absent (kura always pads; the conformance transcripts
    pin that down). A later append or prepend carries the padding inside
    the value (doc/protocol.md, difference 19), so every run of spaces
    after a digit is dropped, on both servers' replies alike."""
    if not _PADDING.search(data):
        return None
    return _PADDING.sub(rb"\1", data)


def _sort_prefix_runs(items):
    """A `stats detail dump` lists its prefixes in the order of the
    server's own hash table: compare them sorted."""
    out = []
    run = []
    for n in items:
        if isinstance(n, tuple) and n and n[0] == "line" and \
                n[1].startswith(b"PREFIX "):
            run.append(n)
            continue
        out.extend(sorted(run))
        run = []
        out.append(n)
    out.extend(sorted(run))
    return out


class Normaliser:
    """Normalises one server's items of one stream (the cas pattern spans
    every connection of the stream). The play's key prefix (`prefix`, in
    raw and base64 form) reads as dfgen's KEY_PREFIX again, so that the
    plays of a stream compare alike."""

    def __init__(self, prefix=None, template=b"~pfx~:"):
        self.cas_ids = {}
        self.swaps = []
        if prefix is not None and prefix != template:
            self.swaps = [(prefix, template),
                          (base64.b64encode(prefix),
                           base64.b64encode(template))]

    def _b(self, data):
        for a, b in self.swaps:
            data = data.replace(a, b)
        return data

    def cas(self, value):
        if value == 0:
            return 0
        if value not in self.cas_ids:
            self.cas_ids[value] = len(self.cas_ids) + 1
        return ("cas", self.cas_ids[value])

    def items(self, items):
        out = []
        for it in items:
            n = self.item(it)
            if n == ("stats",):
                continue  # which STAT lines a listing has is the server's
            if n[0] == "binstats" and out and out[-1] == n:
                continue  # one block, however many frames
            out.append(n)
        return _sort_prefix_runs(out)

    def item(self, it):
        if it.kind == "frame":
            return self._frame(it.frame)
        if it.kind == "tail":
            return ("tail", self._b(it.raw))
        if it.kind == "value":
            line, data = self._b(it.line), self._b(it.data)
            body = _unpadded(data[:-2])
            if body is not None:
                # the length word goes with the unpadded data
                toks = line.split(b" ")
                idx = 3 if toks[0] == b"VALUE" else 1
                if len(toks) > idx:
                    toks[idx] = b"%d" % len(body)
                    line = b" ".join(toks)
                data = body + data[-2:]
            return (self._line(line), data)
        return self._line(self._b(it.line))

    def _frame(self, f):
        if f.opcode == OP_STAT and f.status == 0:
            return ("binstats", f.opaque)
        value = f.value
        if f.opcode == OP_VERSION and f.status == 0:
            value = b"<version>"
        body = _unpadded(value)
        if body is not None and f.status == 0:
            value = body
        return ("frame", f.magic, f.opcode, f.status, f.datatype, f.opaque,
                self.cas(f.cas), f.extras, self._b(f.key), self._b(value))

    def _line(self, line):
        toks = line.split(b" ")
        head = toks[0]
        if head == b"STAT":
            return ("stats",)
        if head == b"VERSION":
            return ("version",)
        if head == b"VALUE" and len(toks) == 5 and toks[4].isdigit():
            return ("VALUE",) + tuple(toks[1:4]) + (self.cas(int(toks[4])),)
        if head == b"ME" and len(toks) >= 2:
            return self._me(toks)
        if len(toks) >= 3 and toks[-1].startswith(b"size=") and \
                any(t.startswith(b"exp=") for t in toks):
            # The rest of an ME line whose key (sent base64, echoed raw)
            # holds a line break: the same fields, after the key's tail.
            return self._me([b"ME"] + toks)
        if head in META_REPLIES:
            return (head,) + tuple(self._meta_flag(t) for t in toks[1:])
        return ("line", line)

    def _meta_flag(self, t):
        f, rest = t[:1], t[1:]
        if f == b"c" and rest.isdigit():
            return (b"c", self.cas(int(rest)))
        if f == b"t" and (rest.isdigit() or rest == b"-1"):
            n = int(rest)
            return (b"t", n if n < 0 else Approx(n))
        if f in (b"h", b"l"):
            # Deliberate (doc/protocol.md): h and l count meta reads only.
            return (f, b"?")
        return t

    def _me(self, toks):
        # me is memcached's debug view: only the key and the time to live
        # are the item's; cas is patterned, la, fetch, cls and size belong
        # to memcached's LRU and slabs (deliberate: doc/protocol.md).
        out = [b"ME", toks[1]]
        for t in toks[2:]:
            name, _, val = t.partition(b"=")
            if name == b"exp":
                # 1.6.18 prints the time left negated, in its own clock's
                # arithmetic (difference 7): only "never" is compared.
                out.append((b"exp", b"-1" if val == b"-1" else b"set"))
            elif name == b"cas" and val.isdigit():
                out.append((b"cas", self.cas(int(val))))
        return tuple(out)
