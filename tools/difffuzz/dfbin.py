"""dfbin: binary protocol requests for the differential fuzzer.

Every opcode memcached 1.6.18 knows, with its quiet form, its extras at
their edges and a cas taken from an earlier reply; and in a share of
cases a frame memcached refuses: wrong extras, a key where none belongs,
a value on a get, a key past 250 bytes, an unknown opcode, a bad magic.
"""

import struct

from dfgen import B, AbsTime, CasRef, bin_frame


def _u32_exptime(g):
    e = g.exptime("u32")
    if isinstance(e, AbsTime):
        return e
    return e & 0xFFFFFFFF


def _extras(parts_before, *fields):
    """Packs extras; an AbsTime field stays a reference (rendered later)."""
    out = []
    buf = b""
    for fmt, v in fields:
        if isinstance(v, AbsTime):
            out.append(buf)
            out.append(v)
            buf = b""
        else:
            buf += struct.pack(">" + fmt, v)
    out.append(buf)
    return out


def _frame_with_refs(op, key, extras_parts, value, opaque, cas):
    """A frame whose extras may hold an AbsTime: lengths computed from
    the rendered sizes (an AbsTime is 4 bytes)."""
    nextras = sum(4 if isinstance(p, AbsTime) else len(p)
                  for p in extras_parts)
    hdr = struct.pack(">BBHBBHII", 0x80, op, len(key), nextras, 0, 0,
                      nextras + len(key) + len(value), opaque)
    parts = [hdr, cas if isinstance(cas, CasRef) else struct.pack(">Q", cas)]
    parts += extras_parts
    parts.append(key + value)
    return parts


def request(g, key, cas_src, opaque, no_grow=False, allow_delay=True):
    """One binary request on `key`; returns (parts, label). `no_grow`:
    no append or prepend (the key may hold a value near the limit);
    `allow_delay`: a flush may carry a delay."""
    r = g.r
    name = g.pick([
        (14, "get"), (5, "getq"), (6, "getk"), (5, "getkq"),
        (14, "set"), (3, "setq"), (5, "add"), (2, "addq"), (5, "replace"),
        (2, "replaceq"), (4, "append"), (2, "appendq"), (4, "prepend"),
        (1, "prependq"), (6, "delete"), (2, "deleteq"), (6, "incr"),
        (2, "incrq"), (5, "decr"), (1, "decrq"), (4, "touch"), (3, "gat"),
        (2, "gatq"), (3, "gatk"), (2, "gatkq"), (4, "noop"),
        (2, "version"), (3, "flush"), (1, "flushq"), (3, "stat"),
        (1, "verbosity"), (1, "sasl_list"), (1, "quit"), (1, "quitq"),
        (2, "unknown"), (3, "malformed"),
    ])
    if no_grow and name.startswith(("append", "prepend")):
        name = "set"
    cas = 0
    if cas_src is not None and r.random() < 0.6:
        # (never the cas plus one: memcached's next cas is exactly that)
        cas = CasRef(cas_src, "u64")
    elif r.random() < 0.05:
        cas = r.choice([1, 12345, 2**64 - 1])
    if name in ("get", "getq", "getk", "getkq"):
        return bin_frame(B[name], key=key, opaque=opaque), name
    if name in ("set", "setq", "add", "addq", "replace", "replaceq"):
        ex = _extras(None, ("I", g.flags()), ("I", _u32_exptime(g)))
        return _frame_with_refs(B[name], key, ex, g.value(), opaque,
                                cas), name
    if name in ("append", "appendq", "prepend", "prependq"):
        # small, so that the result never lands between kura's item limit
        # and memcached's (dfgen.MC_ITEM_MAX)
        value = g.value()
        if len(value) > 65536:
            value = g.value(small=True)
        return bin_frame(B[name], key=key, value=value, opaque=opaque,
                         cas=cas), name
    if name in ("delete", "deleteq"):
        return bin_frame(B[name], key=key, opaque=opaque, cas=cas), name
    if name in ("incr", "incrq", "decr", "decrq") and no_grow:
        # memcached answers non-numeric for a value it stores in chunks
        # before it looks at the cas; kura, which has no chunks, looks at
        # the cas first: no cas on a key that may hold a large value.
        cas = 0
    if name in ("incr", "incrq", "decr", "decrq"):
        exp = g.pick([(40, 0), (30, 0xFFFFFFFF), (30, _u32_exptime(g))])
        ex = _extras(None, ("Q", g.delta()), ("Q", g.delta()), ("I", exp))
        return _frame_with_refs(B[name], key, ex, b"", opaque, cas), name
    if name in ("touch", "gat", "gatq", "gatk", "gatkq"):
        ex = _extras(None, ("I", _u32_exptime(g)))
        return _frame_with_refs(B[name], key, ex, b"", opaque, 0), name
    if name in ("noop", "version", "quit", "quitq", "sasl_list"):
        return bin_frame(B[name], opaque=opaque), name
    if name in ("flush", "flushq"):
        # A delay only while no immediate flush happened in the stream
        # (see dftext.flush_all).
        if r.random() < 0.5:
            return bin_frame(B[name], opaque=opaque), name
        later = [(20, r.choice([100, 1000, 86400])),
                 (10, AbsTime(1000, "u32")), (5, 0xFFFFFFFF)]
        delay = g.pick([(30, 0)] + (later if allow_delay else []))
        ex = _extras(None, ("I", delay))
        label = name + (" later" if delay != 0 else "")
        return _frame_with_refs(B[name], b"", ex, b"", opaque, 0), label
    if name == "stat":
        k = r.choice([b"", b"", b"settings", b"items", b"slabs", b"sizes",
                      b"detail", b"detail on", b"detail dump", b"conns",
                      b"reset", b"nonsense"])
        return bin_frame(B["stat"], key=k, opaque=opaque), "stat " + \
            k.decode()
    if name == "verbosity":
        # memcached 1.6.18 does not know VERBOSITY, and after an unknown
        # opcode with a body it discards as many bytes again, misframing
        # what follows; kura discards the body alone (doc/protocol.md).
        # Only the bodiless form is compared.
        return bin_frame(B["verbosity"], opaque=opaque), name
    if name == "unknown":
        op = r.choice([0x25, 0x30, 0x3d, 0x40, 0x83, 0xfe, 0xff])
        return bin_frame(op, opaque=opaque), "opcode 0x%02x" % op
    return malformed(g, key, opaque)


def malformed(g, key, opaque):
    """A frame memcached refuses (EINVAL and a close, or unknown)."""
    r = g.r
    kind = g.pick([(10, "get+value"), (10, "get+extras"), (10, "set-extras"),
                   (8, "noop+key"), (8, "key>250"), (6, "lengths"),
                   (4, "magic"), (6, "incr-extras"), (4, "flush+key"),
                   (4, "nokey")])
    if kind == "get+value":
        return bin_frame(B["get"], key=key, value=b"v", opaque=opaque), kind
    if kind == "get+extras":
        return bin_frame(B["get"], key=key, extras=b"\0\0\0\0",
                         opaque=opaque), kind
    if kind == "set-extras":
        return bin_frame(B["set"], key=key, extras=b"\0\0\0\0", value=b"v",
                         opaque=opaque), kind
    if kind == "noop+key":
        return bin_frame(B["noop"], key=b"k", opaque=opaque), kind
    if kind == "key>250":
        return bin_frame(B["get"], key=b"k" * r.choice([251, 300]),
                         opaque=opaque), kind
    if kind == "lengths":
        # key and extras lengths that exceed the body
        return bin_frame(B["get"], key=key, opaque=opaque,
                         bodylen=max(0, len(key) - 1)), kind
    if kind == "magic":
        return bin_frame(B["get"], key=key, opaque=opaque,
                         magic=r.choice([0x81, 0x00, 0x7f])), kind
    if kind == "incr-extras":
        return bin_frame(B["incr"], key=key, extras=b"\0" * 8,
                         opaque=opaque), kind
    if kind == "flush+key":
        return bin_frame(B["flush"], key=b"k", opaque=opaque), kind
    return bin_frame(B["get"], opaque=opaque), kind


def cas_source(g, key, opaque):
    """A binary get, whose reply carries the key's cas."""
    return bin_frame(B["getk"], key=key, opaque=opaque), "getk (cas)"


def sentinel(token):
    from dfwire import SENTINEL_OPAQUE_BASE
    return b"".join(bin_frame(B["noop"],
                              opaque=SENTINEL_OPAQUE_BASE + token)[0:1] +
                    [struct.pack(">Q", 0)])
