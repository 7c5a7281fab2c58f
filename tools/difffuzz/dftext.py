"""dftext: text and meta protocol requests for the differential fuzzer.

Each builder returns the parts of one request (dfgen.Req parts): mostly
well-formed commands with the arguments at their edges, and in a share of
cases a malformation a client or an attacker could send: a wrong data
length, a missing or extra token, a number out of range, a bad
terminator, an unknown command, an over-long line.
"""

import base64

from dfgen import (KEY_MAX, MAX_DELTA, AbsTime, CasRef, c_strtol32,
                   c_strtoul32, c_strtoull)

STORE = (b"set", b"add", b"replace", b"append", b"prepend", b"cas")


# Malformed numbers both servers refuse, and odd ones both read (strtol
# takes a sign and leading zeros).
BAD_NUMBERS = [b"abc", b"1.5", b"0x10", b"18446744073709551616",
               b"99999999999999999999"]
ODD_NUMBERS = [b"+5", b"-0", b"007"]


def _num(g, good, field):
    """(token, kind): `good` (an int or AbsTime) and "ok", or rarely a
    malformed token and "bad" (refused by both) or "odd"."""
    r = g.r
    x = r.random()
    if x < 0.92:
        return good, "ok"
    if x < 0.98:
        bad = list(BAD_NUMBERS)
        if field in ("flags", "bytes"):
            bad += [b"-1", b"4294967296"]
        if field == "exptime":
            bad.append(b"4294967296")
        return r.choice(bad), "bad"
    return r.choice(ODD_NUMBERS), "ok"


def _render(x):
    if isinstance(x, (AbsTime, CasRef)):
        return x
    if isinstance(x, int):
        return b"%d" % x
    return x


def _join(tokens, sep=b" "):
    """Joins tokens (bytes, ints or references) into parts."""
    parts = []
    for i, t in enumerate(tokens):
        if i:
            parts.append(sep)
        parts.append(_render(t))
    return parts


def _n(g, good, field):
    """A number token, sometimes malformed (see _num)."""
    return _num(g, good, field)[0]


def text_key(key, keep_space=True):
    """`key` as the text protocol can carry it: control characters, which
    kura refuses in text keys and memcached stores (doc/protocol.md,
    difference 1), become '_'. Spaces stay where asked (both servers split
    the line there); a storage command's key loses them, since the shifted
    tokens would make a length out of its exptime, which kura swallows and
    memcached does not (difference 2)."""
    return bytes(c if (c > 0x20 and c != 0x7f) or (c == 0x20 and keep_space)
                 else 0x5f for c in key)


def _word(t):
    """A token as the server reads it (references render as numbers)."""
    if isinstance(t, (AbsTime, CasRef)):
        return b"1000000000"
    if isinstance(t, int):
        return b"%d" % t
    return t


def _kura_swallows(toks):
    """(swallows, vlen): whether kura refuses this storage line after
    reading its length, and so discards `vlen` + 2 bytes where memcached
    reads on (doc/protocol.md, difference 2; proto_text.c)."""
    words = [_word(t) for t in toks]
    base = 6 if words[0] == b"cas" else 5
    if len(words) not in (base, base + 1):
        return False, None
    vlen = c_strtol32(words[4])
    if vlen is None or vlen < 0:
        return False, None
    bad = (len(words[1]) > KEY_MAX or c_strtoul32(words[2]) is None or
           c_strtol32(words[3]) is None or
           (base == 6 and c_strtoull(words[5]) is None))
    return bad, vlen


def storage(g, key, cas_src, no_grow=False):
    """set/add/replace/append/prepend/cas with a data block.

    Tagged "swallow" when kura reads and discards the data block of a
    refused command (a key over 250 bytes, or bad flags, exptime or cas,
    with a readable length) and memcached runs it as a command line
    (doc/protocol.md, difference 2); the block is then exactly the length
    kura reads. Whenever some bytes may be read as a command line (that
    case, a malformed length, a missing word, a block longer or shorter
    than announced) they are a short word no command starts with:
    memcached reads a line over 2048 bytes only if it arrived in one
    piece, which would make the reply depend on timing. An append or
    prepend stays small: the result must not land between kura's item
    limit and memcached's (dfgen.MC_ITEM_MAX)."""
    r = g.r
    key = text_key(key, False)
    cmds = [(30, b"set"), (8, b"add"), (8, b"replace"), (14, b"cas")]
    if not no_grow:
        cmds += [(8, b"append"), (8, b"prepend")]
    cmd = g.pick(cmds)
    for _ in range(20):
        flags = _num(g, g.flags(), "flags")[0]
        exptime = _num(g, g.exptime(), "exptime")[0]
        value = g.value()
        if cmd in (b"append", b"prepend") and len(value) > 65536:
            value = g.value(small=True)
        toks = [cmd, key, flags, exptime, None]
        if cmd == b"cas":
            toks.append(_cas_token(g, cas_src))
        if r.random() < 0.2:
            toks.append(r.choice([b"noreply"] * 9 + [b"norepl"]))
        nb, bk = _num(g, 0, "bytes")
        altered = bk == "bad"
        if r.random() < 0.04:
            del toks[r.randrange(1, len(toks))]    # a word missing
            altered = True
        elif r.random() < 0.02:
            toks.append(b"extra")
            altered = True
        mismatch = r.random() < 0.05
        bad_term = not mismatch and not altered and r.random() < 0.04
        if altered or mismatch or bad_term:
            value = g.value(small=True)
        if None in toks:
            toks[toks.index(None)] = len(value) if bk == "ok" else nb
        swallow, vlen = _kura_swallows(toks)
        if swallow:
            if vlen > 64:
                continue  # a shifted word as the length: try again
            value = b"z" * vlen
            mismatch = bad_term = False
        break
    eol = b"\r\n" if r.random() < 0.95 else b"\n"
    data = value
    term = b"\r\n"
    n = len(value)
    # A block longer than announced runs on into a line of its own; one
    # shorter, or a terminator cut short, is made up with filler to the
    # length the server reads, so that the next request (a sentinel, say)
    # is read as itself.
    if mismatch and r.random() < 0.5:
        data = value + b"x" * r.randint(1, 3)
    elif mismatch:
        k = min(n, r.randint(1, 3))
        data = value[:n - k]
        term = b"\r\n" + b"z" * k
    elif bad_term:
        term = r.choice([b"\nz", b"xx", b"zz"])
    label = "%s, %d-byte value" % (cmd.decode(), len(value))
    tags = ("swallow",) if swallow else ()
    if mismatch or bad_term:
        tags += ("shifts",)
    return _join(toks) + [eol, data, term], label, tags


def _cas_token(g, cas_src):
    r = g.r
    if cas_src is not None and r.random() < 0.7:
        return CasRef(cas_src, "dec")
    return r.choice([0, 1, 2**64 - 1, 12345, b"abc", b"-1"])


def retrieval(g, keys):
    """get/gets/gat/gats of one or more keys, repeats included."""
    r = g.r
    cmd = g.pick([(30, b"get"), (20, b"gets"), (8, b"gat"), (8, b"gats"),
                  (2, b"bget")])
    nkeys = g.pick([(60, 1), (25, 2), (10, 5), (3, 0), (2, 40)])
    ks = [text_key(r.choice(keys)) for _ in range(nkeys)]
    toks = [cmd]
    if cmd == b"bget":
        # memcached reads a long line only for get and gets when it has
        # not arrived whole (see below)
        while ks and sum(len(k) + 2 for k in ks) > 1900:
            ks.pop()
    if cmd in (b"gat", b"gats"):
        toks.append(_n(g, g.exptime(), "exptime"))
        # memcached reads a gat line over 2048 bytes only if it arrived
        # whole: keep under it (kura takes the get family's 1 MiB).
        while ks and sum(len(k) + 2 for k in ks) > 1900:
            ks.pop()
        # A key over 250 bytes: memcached touches the keys before it and
        # then refuses the line; kura refuses the line whole first
        # (doc/protocol.md, difference 12).
        ks = [k for k in ks if len(k) <= KEY_MAX] or \
            [r.choice([k for k in keys if len(text_key(k)) <= KEY_MAX] or
                      [b"~pfx~:short"])]
        ks = [text_key(k) for k in ks]
    toks += ks
    sep = b" " if r.random() < 0.9 else b"  "
    return _join(toks, sep) + [b"\r\n"], "%s of %d keys" % (cmd.decode(),
                                                          len(ks))


def delete(g, key):
    r = g.r
    toks = [b"delete", text_key(key)] + g.pick([(50, []), (10, [b"0"]),
                                     (15, [b"noreply"]),
                                     (5, [b"0", b"noreply"]), (5, [b"5"]),
                                     (3, [b"x"]), (2, [b"0", b"0"])])
    return _join(toks) + [b"\r\n"], "delete"


def arith(g, key):
    r = g.r
    cmd = r.choice([b"incr", b"decr"])
    toks = [cmd, text_key(key), _n(g, g.delta(), "delta")]
    if r.random() < 0.2:
        toks.append(b"noreply")
    if r.random() < 0.03:
        toks = toks[:2]
    return _join(toks) + [b"\r\n"], cmd.decode()


def touch(g, key):
    r = g.r
    toks = [b"touch", text_key(key), _n(g, g.exptime(), "exptime")]
    if r.random() < 0.2:
        toks.append(b"noreply")
    return _join(toks) + [b"\r\n"], "touch"


def flush_all(g, allow_delay=True):
    """flush_all, now or with a delay; returns (parts, label, delayed).

    Left out (doc/protocol.md): a delay after an immediate flush in the
    same stream, since memcached's single oldest_live then brings back
    what the first flush hid (difference 5); an absolute time in the
    past, with which memcached flushes nothing and also brings items back
    (difference 11)."""
    r = g.r
    now = [(30, []), (10, [0]), (5, [-1]), (3, [b"abc"])]
    later = [(15, [r.choice([100, 1000, 86400, MAX_DELTA])]),
             (8, [AbsTime(r.choice([1000, 100000]), "dec")])]
    arg = g.pick(now + later if allow_delay else now)
    delayed = bool(arg) and arg[0] not in (0, -1, b"abc")
    if r.random() < 0.2:
        arg = arg + [b"noreply"]
    return _join([b"flush_all"] + arg) + [b"\r\n"], \
        "flush_all" + (" later" if delayed else ""), delayed


def admin(g):
    """verbosity, version, stats, and memcached's administrative lines."""
    r = g.r
    line = g.pick([
        (10, b"version"), (6, b"verbosity"), (10, b"verbosity 1"),
        (6, b"verbosity 0 noreply"), (4, b"verbosity invalid"),
        (3, b"verbosity 1 2 3"),
        (10, b"stats"), (4, b"stats settings"), (3, b"stats items"),
        (3, b"stats slabs"), (2, b"stats sizes"), (2, b"stats conns"),
        (2, b"stats detail on"), (2, b"stats detail off"),
        (2, b"stats detail dump"), (2, b"stats nonsense"),
        (2, b"stats reset"),
        (2, b"cache_memlimit 100"), (1, b"cache_memlimit"),
        (1, b"shutdown"),
    ])
    return [line, b"\r\n"], line.decode()


def malformed(g, first):
    """A line no memcached command accepts, or an over-long one."""
    r = g.r
    printable = bytes(range(0x21, 0x7f))
    kind = g.pick([(20, "junk"), (10, "empty"), (6, "long"),
                   (4, "longnl"), (6, "spaces"), (6, "case"),
                   (6, "bytes"), (4, "cr")])
    if kind == "junk":
        line = bytes(r.choice(printable) for _ in range(r.randint(1, 30)))
    elif kind == "empty":
        line = b""
    elif kind == "long":       # a get may run past 2048 bytes
        n = r.choice([2047, 2048, 2049, 4096, 9000])
        line = b"get " + b"a" * n
    elif kind == "longnl":
        # Another command under 2048 bytes, or past memcached's 16 KiB
        # read buffer (it closes; kura says why, then closes: difference
        # 3). In between, memcached reads the line only if it arrived in
        # one piece, so that range is left out.
        line = b"x" * r.choice([2000, 2046, 20000])
    elif kind == "spaces":
        line = b" " * r.randint(1, 5) + r.choice([b"get a", b"version", b""])
    elif kind == "case":
        line = r.choice([b"Get a", b"GET a", b"VERSION", b"Set a 0 0 1"])
    elif kind == "bytes":
        line = bytes(r.getrandbits(8) for _ in range(r.randint(1, 30)))
        line = line.replace(b"\n", b"")
    else:
        line = b"version\rget a"
    if first:
        # kura reads an upper-case first byte as HTTP and REPL as a peer.
        while line[:1].isupper() or line.startswith(b"REPL") or \
                line[:1] in (b"\x80",):
            line = b"x" + line
    return [line, b"\r\n"], "malformed %s" % kind


# ----------------------------------------------------------------- meta
#
# The meta generator draws each command's flags from the letters memcached
# 1.6.18 knows, with their tokens at the edges and, in a share of cases,
# malformed (a number that does not read, an M that is not one letter, a
# key that is not base64, an unknown or repeated letter, too many flags).
# What it leaves out, each a deliberate difference of doc/protocol.md (its
# number in brackets) whose effects would show in later replies:
#   - E (explicit cas): 1.6.18 does not have it [7];
#   - an opaque over 32 bytes on an mg with N or T, or on an ma with a valid
#     mode: memcached finds it too long only while it answers, after the
#     creation, the touch or the increment took effect; kura refuses first
#     [17];
#   - N with a base64 key (mg, ma), an append or prepend (ms MA, MP) with
#     one, and an ma that may make a number longer with one: memcached
#     builds those items without noting that the key came in base64, and
#     later echoes the raw bytes (k, me) [18];
#   - an ma with T that may make a number longer: memcached sets the new
#     ttl on the item it replaces, which the new one does not keep [19];
#   - t with a T or N in the past: memcached prints the time left of the
#     item it has just expired as an unsigned wrap of a negative number
#     [20];
#   - an ms value of white space only, or a number of 2^63 or more, and
#     an ma D or J of 2^60 or more (a counter would soon pass 2^63):
#     memcached's ma reads on past the value's end, into whatever memory
#     follows (strtoull skipping white space, strchr looking for a '-')
#     [15];
#   - an ma with C on a key that may hold a value near the size limit
#     (no_grow): memcached calls a value it stores in chunks non-numeric
#     before it compares the cas, and so does kura past 512 KiB
#     (PROCESS_COUNTER_MAX), but memcached's boundary moves with the key's
#     length;
#   - an ms append or prepend of more than 64 KiB: it could grow a value
#     past kura's limit and not past memcached's (dfgen.MC_ITEM_MAX) [4].
# And every ma is sent after an mn: memcached rewrites a number in place
# (padding a shorter one with spaces, keeping the item's stale, recache
# and base64 marks) only if no reply waiting to be sent still holds the
# item, and an mn makes it send the replies before it; kura always
# rewrites in place when the digits fit [19].
# A refused ms whose length reads (a key over 250 bytes, too many flags) is
# tagged "swallow", with a short word for data: kura discards it, memcached
# runs it as a command [2].

B64_JUNK = [b"!", b".", b"-", b"_", b"\xff", b"*"]
NO_CAS = 9000000000000000001  # above any cas a server hands out in a run


def _meta_key(g, key):
    """The key token and whether b is needed: a text key as it is, or the
    base64 of any key, sometimes written as memcached still decodes it
    (unpadded, with bytes outside the alphabet, with more after the
    padding) or as it cannot (a group cut short, three '=')."""
    r = g.r
    from dfgen import text_key_ok
    if text_key_ok(key) and r.random() < 0.75:
        return key, False
    tok = base64.b64encode(key)
    x = r.random()
    if x < 0.03:
        tok = tok.rstrip(b"=") + b"!"       # maybe not whole groups
    elif x < 0.05:
        tok = tok + r.choice([b"QQ==", b"A", b"=", b"==", b"AAAA"])
    elif x < 0.07 and len(tok) > 2:
        i = r.randrange(1, len(tok))
        tok = tok[:i] + r.choice(B64_JUNK) + tok[i:]
    elif x < 0.08:
        tok = tok[:-4] + b"A===" if len(tok) >= 4 else tok
    elif x < 0.10 and len(key) % 3 == 0:
        tok = tok + b"===="
    return tok, True


def _past(e):
    """Whether exptime `e` puts an item in the past."""
    if isinstance(e, AbsTime):
        return e.delta < 0
    return e < 0 or MAX_DELTA < e < 1000000000


def _future_exptime(g):
    r = g.r
    return g.pick([(30, 0), (10, r.choice([100, 1000, 86400, MAX_DELTA])),
                   (6, AbsTime(r.choice([1000, 100000]), "dec"))])


def _opaque(g):
    r = g.r
    n = g.pick([(60, r.randint(0, 8)), (20, r.randint(9, 31)), (10, 31),
                (10, r.randint(32, 40))])
    return b"O" + bytes(r.choice(b"abcxyz0129") for _ in range(n))


# Malformed and oddly read tokens by how the flag reads its number: T, N
# and R as a signed 32-bit (safe_strtol), C, J, D and F as an unsigned
# 64-bit (safe_strtoull; F then cut to 32 bits). The odd ones of T, N and R
# keep clear of ttls of 1 to 10 s (see dfgen) and of the past (a "-1" is a
# good T).
FLAG_NUMBERS = {
    "ttl": ([b"", b"abc", b"1x", b"-", b"+", b"0x10", b"1.5",
             b"99999999999999999999", b"18446744073709551616"],
            [b"-0", b"+100", b"0100", b"4294967396"]),
    "u64": ([b"", b"abc", b"1x", b"-", b"0x10", b"1.5",
             b"18446744073709551616", b"-1"],
            [b"+5", b"-0", b"007", b"-18446744073709551615"]),
    "u32": ([b"", b"abc", b"-", b"1.5", b"-1", b"18446744073709551616"],
            [b"+5", b"-0", b"4294967297"]),
}


def _num_flag(g, letter, good, kind):
    """A flag with a number: mostly `good`, sometimes one that does not
    read or reads oddly (FLAG_NUMBERS[kind])."""
    x = g.r.random()
    bad, odd = FLAG_NUMBERS[kind]
    if x < 0.9:
        return [letter, good]
    if x < 0.96:
        return [letter, g.r.choice(bad)]
    return [letter, g.r.choice(odd)]


def _junk_flag(g):
    """A flag memcached refuses or reads oddly."""
    r = g.r
    return r.choice([b"x", b"y", b"Z", b"W", b"1", b"\x80", b"\xff", b"#",
                     b"M", b"MSS", b"Mab", b"Fx", b"F", b"F-1", b"T", b"Tx",
                     b"N", b"R1x", b"C", b"Cx", b"J-1", b"Jx", b"D", b"Dx",
                     b"Pfoo", b"Lbar/"])


WHITE = b" \t\r\n\v\f"


def _reads_past(value):
    """[15]: whether memcached's incr would read past the end of `value`."""
    if not value:
        return False
    rest = value.lstrip(WHITE)
    if not rest:
        return True
    if rest[:1] == b"+":
        rest = rest[1:]
    digits = len(rest) - len(rest.lstrip(b"0123456789"))
    return digits > 0 and 2**63 <= int(rest[:digits]) < 2**64


def _ma_delta(g):
    """[15]: a delta or initial value that keeps counters below 2^63 (a
    handful of increments of it cannot reach 2^63)."""
    d = g.delta()
    return d >> 4 if d >= 2**60 else d


def _meta_flags(g, choices, nflags):
    r = g.r
    out = []
    for _ in range(nflags):
        f = r.choice(choices)
        if callable(f):
            f = f()
        out.append(f)
    return out


def _letter(f):
    return (f[0] if isinstance(f, list) else f)[:1]


def _valid_mode(f, modes):
    """Whether flag `f` is an M with a mode letter in `modes`."""
    return not isinstance(f, list) and len(f) == 2 and f[:1] == b"M" and \
        f[1:] in [bytes([m]) for m in modes]


def _meta_exclude(g, cmd, flags, b64):
    """Rewrites `flags` so that none of the cases the meta comment above
    leaves out is generated."""
    r = g.r
    letters = [_letter(f) for f in flags]
    if cmd in (b"mg", b"ma") and b64:
        flags = [f for f in flags if _letter(f) != b"N"]      # [18]
        letters = [_letter(f) for f in flags]
    if cmd in (b"mg", b"ma") and b"t" in letters:              # [20]
        flags = [[f[0], _future_exptime(g)]
                 if isinstance(f, list) and f[0] in (b"T", b"N") and
                 not isinstance(f[1], bytes) and _past(f[1]) else f
                 for f in flags]
    if cmd == b"ms" and b64:                                   # [18]
        flags = [f for f in flags if f not in (b"MA", b"MP")]
    if cmd == b"ma":
        modes = [f for f in flags if _letter(f) == b"M"]
        valid = all(_valid_mode(f, b"ID+-") for f in modes) and \
            len(modes) <= 1
        if valid and (b64 or b"T" in letters):                 # [18] [19]
            # decrement, or add nothing: the number never grows
            if modes and modes[0] in (b"MI", b"M+"):
                flags[flags.index(modes[0])] = r.choice([b"MD", b"M-"])
            elif not modes:
                flags.append(r.choice([b"MD", b"M-"]))
        if valid and len(flags) <= 17:
            flags = [_short_opaque(f) for f in flags]          # [17]
    if cmd == b"mg" and (b"N" in letters or b"T" in letters):  # [17]
        flags = [_short_opaque(f) for f in flags]
    return flags


def _meta_exclude_big(cmd, flags, no_grow):
    """No C on an ma of a key that may hold a large value (see above)."""
    if cmd == b"ma" and no_grow:
        return [f for f in flags if _letter(f) != b"C"]
    return flags


def _short_opaque(f):
    if not isinstance(f, list) and f[:1] == b"O" and len(f) > 32:
        return f[:32]
    return f


def meta(g, key, cas_src, no_grow=False):
    r = g.r
    cmd = g.pick([(30, b"mg"), (25, b"ms"), (12, b"md"), (15, b"ma"),
                  (5, b"mn"), (4, b"me")])
    if cmd == b"mn":
        return [g.pick([(9, b"mn\r\n"), (1, b"mn x O1 k\r\n")])], "mn"
    tok, b64 = _meta_key(g, key)
    common = [b"k", b"q", lambda: _opaque(g), b"b", b"P", b"L",
              lambda: _junk_flag(g)]
    # A cas is one a server handed out, or one no server hands out, or 0
    # (which compares nothing): never a constant or one near a cas handed
    # out, which the two servers' cas series would place differently
    # (memcached counts 1, 2, 3...: 5 + 1 is the next item's cas; kura's
    # are times in microseconds). I meets an older cas once the item has
    # changed since its cas was taken.
    cas_flag = (lambda: [b"C", CasRef(cas_src, "dec")]
                if cas_src is not None and r.random() < 0.8 else
                _num_flag(g, b"C", r.choice([0, 2**64 - 1, NO_CAS]),
                          "u64"))
    ttl_flag = lambda: _num_flag(g, b"T", g.exptime(), "ttl")  # noqa: E731
    viv_flag = lambda: _num_flag(g, b"N", g.exptime(), "ttl")  # noqa: E731
    if cmd == b"mg":
        choices = common + [b"v", b"v", b"c", b"f", b"h", b"l", b"s", b"t",
                            b"t", b"u", viv_flag, ttl_flag,
                            # (never a ttl the generator gives: whether a
                            # ttl of 1000 is below R1000 depends on when
                            # each server's clock ticked)
                            lambda: _num_flag(g, b"R", r.choice(
                                [30, 500, 5000, 0, -1, MAX_DELTA + 1]),
                                "ttl"),
                            b"I", lambda: [b"F", g.flags()]]
    elif cmd == b"ms":
        choices = common + [b"c", b"I", cas_flag, cas_flag, ttl_flag,
                            lambda: _num_flag(g, b"F", g.flags(), "u32"),
                            lambda: b"M" + r.choice(
                                b"SERseX" if no_grow else b"SEAPRseapX"
                            ).to_bytes(1, "big"),
                            b"v", b"t", b"s"]
    elif cmd == b"md":
        choices = common + [b"I", cas_flag, ttl_flag, b"v", b"c", b"t"]
    elif cmd == b"ma":
        choices = common + [b"v", b"v", b"c", b"t", b"t", cas_flag,
                            ttl_flag, viv_flag,
                            lambda: _num_flag(g, b"D", _ma_delta(g), "u64"),
                            lambda: _num_flag(g, b"J", _ma_delta(g), "u64"),
                            lambda: b"M" + r.choice(b"ID+-ID+-idx").to_bytes(
                                1, "big")]
    else:  # me: memcached reads a b right after the key, nothing else
        choices = [b"v", b"k", b"x", b"b"]
    nflags = g.pick([(15, 0), (30, 1), (25, 2), (15, 3), (10, 5),
                     (3, r.randint(6, 12)), (2, r.randint(15, 19))])
    if cmd == b"me":
        nflags = g.pick([(80, 0), (20, r.randint(1, 3))])
    flags = _meta_flags(g, choices, nflags)
    if b64 and b"b" not in flags:
        if cmd == b"me" or r.random() < 0.7:
            flags.insert(0, b"b")
        else:
            flags.insert(r.randint(0, len(flags)), b"b")
    if cmd != b"me":
        # a b on a text key reads it as base64 too: maybe another key
        flags = _meta_exclude(g, cmd, flags, b"b" in flags)
        flags = _meta_exclude_big(cmd, flags, no_grow)
    toks = [cmd, tok]
    value = None
    tags = ()
    if cmd == b"ms":
        value = g.value()
        if r.random() < 0.04:
            value = r.choice([b"-0", b"7\x00x", b"+3", b"  8", b"9\t",
                              b"18446744073709551615 "])
        if _reads_past(value):
            value = b"v" + value  # [15]
        if len(value) > 65536 and (b"MA" in flags or b"MP" in flags):
            # kura's size limit is below memcached's (dfgen.MC_ITEM_MAX):
            # nothing grows a value past it
            value = g.value(small=True)
        # a refused line whose length kura reads: kura swallows the data
        refused = len(tok) > KEY_MAX or len(flags) > 16
        if refused:
            value = g.value(small=True)
            tags = ("swallow",)
            toks.append(len(value))
        else:
            n, kind = _num(g, len(value), "bytes")
            if kind == "bad":
                # read as a command line by both: a short word (a large
                # block would make memcached close for a line too long
                # before it answers the ms)
                value = g.value(small=True)
            elif isinstance(n, bytes):
                # +5, -0, 007: a length both read, so a block that long
                value = b"z" * int(n)
            toks.append(n)
    for f in flags:
        if isinstance(f, list):
            # a flag and its argument, glued: T100, C<cas>
            toks.append(f[0] if len(f) == 1 else _Glue(f[0], f[1]))
        else:
            toks.append(f)
    parts = [b"mn\r\n"] if cmd == b"ma" else []  # [19]
    for i, t in enumerate(toks):
        if i:
            parts.append(b" ")
        if isinstance(t, _Glue):
            parts.append(t.flag)
            parts.append(_render(t.arg))
        else:
            parts.append(_render(t))
    parts.append(b"\r\n")
    if value is not None:
        data = value
        if not tags and r.random() < 0.04:
            data = value + b"x"
        parts += [data, b"\r\n"]
    return parts, "%s" % cmd.decode(), tags


class _Glue:
    __slots__ = ("flag", "arg")

    def __init__(self, flag, arg):
        self.flag = flag
        self.arg = arg


def cas_source(g, key, conn_meta):
    """A request whose reply carries the key's cas (gets or mg c). A key
    over 250 bytes is asked for with mg: memcached's gets refuses it by
    dropping the replies of the requests pipelined before it."""
    if conn_meta and (g.r.random() < 0.5 or len(key) > KEY_MAX):
        tok, b64 = _meta_key(g, key)
        return [b"mg ", tok, b" c v", b" b" if b64 else b"", b"\r\n"], \
            "mg c"
    return [b"gets ", text_key(key), b"\r\n"], "gets"


def sentinel(token):
    """The text sentinel: a meta get of a key no stream uses, with an
    opaque that names it; its reply is `EN k<key> O<token>`."""
    from dfwire import SENTINEL_KEY
    return b"mg " + SENTINEL_KEY + b" k O%d\r\n" % token


def _unused():
    return ITEM_MAX
