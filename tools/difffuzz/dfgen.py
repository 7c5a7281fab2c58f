"""dfgen: generates request streams for the text, binary and meta protocols.

A stream is a list of requests, each sent on one of up to three
connections. A request is a list of parts: bytes, or a reference resolved
at send time on each server (CasRef: the last cas that server returned
for an earlier request; AbsTime: the wall clock plus an offset). A
connection speaks the protocol of its first byte, as memcached decides;
later requests of the other protocol on it test how a server refuses them.

Every key starts with KEY_PREFIX, which each play of a stream replaces
with a prefix of its own (dfrun.render), in raw keys and in base64 ones
alike: plays never see each other's items even though a server keeps
running across them (a delayed flush_all brings back memcached items an
earlier flush hid, doc/protocol.md difference 5), and a stream replayed
while it is shrunk meets the state it met the first time.

What the generator leaves out, and why (each is a difference a client can
not rely on, or one doc/protocol.md lists as deliberate):
  - a relative exptime or flush delay of 1 to 10 s: whether it has passed
    depends on when each server's clock ticks;
  - a connection whose first byte is an upper-case letter (kura answers
    HTTP there) or whose first line starts with REPL (kura's replication);
  - meta E (explicit cas): memcached 1.6.18 does not have it;
  - text keys with control characters (deliberate difference 1).
"""

import base64
import random
import struct

from dfwire import SENTINEL_KEY

ITEM_MAX = 1024 * 1024
# Six bytes, so that its base64 form (8 characters) is the same whatever
# follows it in a key: render() swaps both forms.
KEY_PREFIX = b"~pfx~:"
# memcached counts its item header and the key against its size limit,
# kura only the value (doc/protocol.md): memcached runs with a limit of
# 1.5 MiB (a multiple of its default slab_chunk_max, 512 KiB, which it
# requires), so that it stores every value kura stores, and values between
# the two limits are never generated. PAST_MAX is past both.
MC_ITEM_MAX = 1536 * 1024
PAST_MAX = MC_ITEM_MAX + 1
KEY_MAX = 250
MAX_DELTA = 2592000  # 30 days: larger exptimes are absolute

# Binary opcodes.
B = dict(get=0x00, set=0x01, add=0x02, replace=0x03, delete=0x04, incr=0x05,
         decr=0x06, quit=0x07, flush=0x08, getq=0x09, noop=0x0a,
         version=0x0b, getk=0x0c, getkq=0x0d, append=0x0e, prepend=0x0f,
         stat=0x10, setq=0x11, addq=0x12, replaceq=0x13, deleteq=0x14,
         incrq=0x15, decrq=0x16, quitq=0x17, flushq=0x18, appendq=0x19,
         prependq=0x1a, verbosity=0x1b, touch=0x1c, gat=0x1d, gatq=0x1e,
         sasl_list=0x20, sasl_auth=0x21, sasl_step=0x22, gatk=0x23,
         gatkq=0x24)
BIN_NAMES = {v: k for k, v in B.items()}


class CasRef:
    """The last cas the server returned for request `idx` (or a stale
    value no server hands out when it returned none)."""

    __slots__ = ("idx", "fmt", "delta")

    def __init__(self, idx, fmt, delta=0):
        self.idx = idx
        self.fmt = fmt  # "dec" or "u64"
        self.delta = delta


class AbsTime:
    """A unix time `delta` seconds from now, as text or a u32."""

    __slots__ = ("delta", "fmt")

    def __init__(self, delta, fmt):
        self.delta = delta
        self.fmt = fmt


class Req:
    """One request. `tags` name the deliberate differences its replies may
    show (dfcompare applies the rule of each)."""

    __slots__ = ("conn", "parts", "binary", "label", "sync_after",
                 "sentinel_after", "tags")

    def __init__(self, conn, parts, binary, label, tags=()):
        self.conn = conn
        self.parts = parts
        self.binary = binary
        self.label = label
        self.sync_after = False     # read its replies before going on
        self.sentinel_after = False  # a sentinel ends its reply unit
        self.tags = frozenset(tags)

    def copy(self):
        r = Req(self.conn, list(self.parts), self.binary, self.label,
                self.tags)
        r.sync_after = self.sync_after
        r.sentinel_after = self.sentinel_after
        return r

    def cas_refs(self):
        return [p.idx for p in self.parts if isinstance(p, CasRef)]


def bin_frame(op, key=b"", extras=b"", value=b"", opaque=0, cas=0,
              magic=0x80, keylen=None, extlen=None, bodylen=None,
              datatype=0):
    """A binary request as parts (the cas may be a CasRef)."""
    nkey = len(key) if keylen is None else keylen
    next_ = len(extras) if extlen is None else extlen
    body = len(key) + len(extras) + len(value) if bodylen is None else bodylen
    hdr = struct.pack(">BBHBBHII", magic, op, nkey & 0xffff, next_ & 0xff,
                      datatype, 0, body & 0xffffffff, opaque)
    parts = [hdr]
    if isinstance(cas, CasRef):
        parts.append(cas)
    else:
        parts.append(struct.pack(">Q", cas))
    parts.append(extras + key + value)
    return parts


class Gen:
    """Generates streams from one random.Random."""

    def __init__(self, rng):
        self.r = rng

    # ------------------------------------------------------------- values

    def pick(self, weighted):
        """Picks from [(weight, value)...]."""
        total = sum(w for w, _ in weighted)
        x = self.r.random() * total
        for w, v in weighted:
            x -= w
            if x < 0:
                return v
        return weighted[-1][1]

    def exptime(self, fmt="dec"):
        """An exptime: 0, negative, relative, absolute, at and past 30 days
        (never 1..10 s: see the module comment)."""
        r = self.r
        return self.pick([
            (30, 0),
            (8, -1),
            (4, -r.randint(2, 1 << 31)),
            (8, r.choice([100, 1000, 3600, 86400, MAX_DELTA - 1, MAX_DELTA])),
            (6, MAX_DELTA + 1),              # absolute: 1970, long past
            (6, AbsTime(r.choice([-100000, -1000, -20]), fmt)),  # past
            (6, AbsTime(r.choice([1000, 100000]), fmt)),         # future
            (2, r.randint(11, MAX_DELTA)),
        ])

    def flags(self):
        return self.pick([(40, 0), (20, self.r.randint(1, 65535)),
                          (10, 0xFFFFFFFF), (5, self.r.getrandbits(32))])

    def value(self, small=False):
        """A value; `small`: short and free of line ends (a data block
        memcached may execute as a command line)."""
        r = self.r
        if small:
            return b"zz%d" % r.randint(0, 99999)
        v = self._value()
        if v and not v.strip(b" \t\n\v\f\r"):
            # Only white space: memcached's incr reads on past the value
            # into whatever memory follows (doc/protocol.md, difference
            # 15), so its answer is not the value's.
            v = b"w" + v
        return v

    def _value(self):
        r = self.r
        return self.pick([
            (30, lambda: b"v%d" % r.randint(0, 999)),
            (10, lambda: b""),
            (15, lambda: str(r.choice([0, 1, 9, 10, 99, 255, 2**32,
                                       2**64 - 2, 2**64 - 1,
                                       r.getrandbits(64)])).encode()),
            (3, lambda: b"18446744073709551616"),  # 2^64: not a counter
            (3, lambda: b" 12"),
            (3, lambda: b"12 "),
            (3, lambda: b"-5"),
            (3, lambda: b"0x10"),
            (10, lambda: bytes(r.getrandbits(8) for _ in range(
                r.randint(1, 40)))),
            (4, lambda: b"\r\n"),
            (3, lambda: b"x" * r.randint(100, 5000)),
            (1, lambda: b"y" * ITEM_MAX),
            (1, lambda: b"z" * (PAST_MAX + r.choice([0, 0, 1, 4096]))),
            (1, lambda: b"w" * (ITEM_MAX - r.randint(1, 64))),
        ])()

    def delta(self):
        r = self.r
        return self.pick([(30, 1), (20, r.randint(0, 1000)),
                          (8, 2**64 - 1), (6, 2**63), (6, r.getrandbits(64)),
                          (4, 0)])

    # --------------------------------------------------------------- keys

    def keys(self, prefix=KEY_PREFIX):
        """The stream's key pool: a few keys, some at the limits."""
        r = self.r
        pool = []
        for i in range(r.randint(1, 4)):
            kind = self.pick([(50, "plain"), (10, "max"), (6, "over"),
                              (12, "high"), (10, "any"), (6, "space")])
            pool.append(self._key(prefix, i, kind))
        return pool

    def _key(self, prefix, i, kind):
        r = self.r
        base = prefix + b"%d" % i
        if kind == "plain":
            return base
        if kind == "max":
            return (base + b"m" * KEY_MAX)[:KEY_MAX]
        if kind == "over":
            return (base + b"o" * (KEY_MAX + 5))[:KEY_MAX + r.randint(1, 5)]
        if kind == "high":
            # bytes a text key may hold: 0x21..0x7e and 0x80..0xff
            alphabet = [c for c in range(0x21, 0x100) if c != 0x7f]
            return base + bytes(r.choice(alphabet)
                                for _ in range(r.randint(1, 20)))
        if kind == "space":
            return base + b" " + bytes([r.randint(0x61, 0x7a)])
        # any byte value: only binary and meta base64 can name it
        return base + bytes(r.getrandbits(8) for _ in range(r.randint(1, 12)))


# ------------------------------------------------- memcached's numbers
# How memcached's safe_strto*() read a word (and kura's proto_token.c):
# strtoull/strtol in base 10, white space first, one sign, the digits to
# the end of the word or to white space; None where they refuse it.

def _c_scan(word):
    w = word.split(b"\0", 1)[0]
    i = 0
    while i < len(w) and w[i:i + 1] in b" \t\n\v\f\r":
        i += 1
    neg = False
    if i < len(w) and w[i:i + 1] in b"+-":
        neg = w[i:i + 1] == b"-"
        i += 1
    j = i
    while j < len(w) and 0x30 <= w[j] <= 0x39:
        j += 1
    if j == i or (j < len(w) and w[j:j + 1] not in b" \t\n\v\f\r"):
        return None
    return neg, int(w[i:j]), w


def c_strtoull(word):
    sc = _c_scan(word)
    if sc is None or sc[1] >= 1 << 64:
        return None
    neg, mag, w = sc
    v = (-mag) % (1 << 64) if neg else mag
    if v >= 1 << 63 and b"-" in w:
        return None
    return v


def c_strtoul32(word):
    v = c_strtoull(word)
    return None if v is None else v & 0xFFFFFFFF


def c_strtol32(word):
    sc = _c_scan(word)
    if sc is None:
        return None
    neg, mag, _ = sc
    v = -mag if neg else mag
    if not -(1 << 63) <= v < (1 << 63):
        return None
    v &= 0xFFFFFFFF
    return v - (1 << 32) if v >= 1 << 31 else v


def text_key_ok(key):
    """Whether the text protocol can name `key` as one token."""
    return all(0x21 <= c <= 0xff and c != 0x7f for c in key)
