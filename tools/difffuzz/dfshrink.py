"""dfshrink: shrinks a diverging stream and prints it as a transcript.

Shrinking removes requests (halves, then quarters... then one at a time,
as delta debugging does) while the servers still disagree, and then drops
the sentinels that are not needed. A candidate counts only if it diverges
the same way (the same signature) so that a shrink does not wander off to
another difference. The result is printed in the format of
tests/conformance/*.t: each request as `send`, then memcached's replies as
`expect` / `expect-bin` with cas values captured as {$cN}, so that it can
be pasted into a transcript that check-kurad runs against kurad.
"""

import struct

import dfcompare
import dfrun
import dfwire
from dfgen import AbsTime, BIN_NAMES, CasRef
from dfstream import fix, opens_well, without


class Shrinker:
    def __init__(self, kura, mc, prefixes, budget=400):
        self.kura = kura
        self.mc = mc
        self.prefixes = prefixes
        self.budget = budget
        self.runs = 0

    def diverges(self, stream, signature):
        """True if `stream` still diverges with `signature`."""
        if self.runs >= self.budget:
            return False
        self.runs += 1
        prefix = self.prefixes.next()
        rk = dfrun.play(self.kura, stream, prefix)
        rm = dfrun.play(self.mc, stream, prefix)
        if rk is None or rm is None:
            return signature == "server failed"
        d = dfcompare.compare(stream, rk, rm, prefix)
        return d is not None and d.signature() == signature

    def shrink(self, stream, signature):
        n = 2
        while len(stream.reqs) >= 2:
            size = max(1, len(stream.reqs) // n)
            progressed = False
            start = 0
            while start < len(stream.reqs):
                drop = set(range(start, min(start + size,
                                            len(stream.reqs))))
                cand = without(stream, drop)
                if cand.reqs and opens_well(cand) and \
                        self.diverges(cand, signature):
                    stream = cand
                    progressed = True
                else:
                    start += size
            if progressed:
                continue
            if size == 1:
                break
            n = min(len(stream.reqs), n * 2)
        for i in range(len(stream.reqs)):
            if stream.reqs[i].sentinel_after and \
                    not stream.reqs[i].sync_after:
                cand = stream.copy()
                cand.reqs[i].sentinel_after = False
                fix(cand)
                if self.diverges(cand, signature):
                    stream = cand
        return stream


# ------------------------------------------------------------ transcript

def _esc(data):
    out = []
    for c in data:
        ch = chr(c)
        if ch == "\r":
            out.append("\\r")
        elif ch == "\n":
            out.append("\\n")
        elif ch == "\t":
            out.append("\\t")
        elif ch in "\\\"{}":
            out.append("\\" + ch)
        elif 0x20 <= c < 0x7f:
            out.append(ch)
        else:
            out.append("\\x%02x" % c)
    return "".join(out)


def _quote(data, limit=200):
    """A "..." term, with long runs of one byte written as "x"*N."""
    terms = []
    i = 0
    while i < len(data):
        j = i
        while j < len(data) and data[j] == data[i]:
            j += 1
        if j - i >= 16:
            terms.append('"%s"*%d' % (_esc(data[i:i + 1]), j - i))
            i = j
            continue
        k = i
        while k < len(data) and k - i < limit:
            r = k
            while r < len(data) and data[r] == data[k]:
                r += 1
            if r - k >= 16:
                break
            k = r
        terms.append('"%s"' % _esc(data[i:k]))
        i = k
    return " ".join(terms) if terms else '""'


def _send_terms(req, refname):
    terms = []
    buf = b""
    for p in req.parts:
        if isinstance(p, bytes):
            buf += p
            continue
        if buf:
            terms.append(_quote(buf))
            buf = b""
        if isinstance(p, CasRef):
            name = refname(p.idx)
            if p.fmt == "dec":
                terms.append('"{$%s%s}"' % (name, _delta(p.delta)) if name
                             else '"%d"' % (dfrun.STALE_CAS + p.delta))
            else:
                terms.append("u64:%s" % ("$" + name + _delta(p.delta)
                                         if name else
                                         str(dfrun.STALE_CAS + p.delta)))
        elif isinstance(p, AbsTime):
            if p.fmt == "dec":
                terms.append('"{$now%s}"' % _delta(p.delta))
            else:
                terms.append("u32:$now%s" % _delta(p.delta))
    if buf:
        terms.append(_quote(buf))
    return " ".join(terms)


def _delta(d):
    return "" if d == 0 else "%+d" % d


class _Caps:
    """Names the cas values memcached returned: $c1, $c2..."""

    def __init__(self):
        self.names = {}

    def name(self, value):
        if value not in self.names:
            self.names[value] = "c%d" % (len(self.names) + 1)
            return self.names[value], True
        return self.names[value], False


def _expect_text(item, caps):
    line = item.line
    toks = line.split(b" ")
    if toks[0] == b"VALUE" and len(toks) == 5 and toks[4].isdigit():
        name, _ = caps.name(int(toks[4]))
        head = _esc(b" ".join(toks[:4]) + b" ") + "{$%s}" % name
    elif toks[0] in dfwire.META_REPLIES:
        out = [_esc(toks[0])]
        for t in toks[1:]:
            if t[:1] == b"c" and t[1:].isdigit():
                name, _ = caps.name(int(t[1:]))
                out.append("c{$%s}" % name)
            elif t[:1] == b"t" and t[1:].isdigit():
                out.append("t{int}")
            elif t[:1] in (b"h", b"l"):
                out.append(_esc(t[:1]) + "{int}")
            else:
                out.append(_esc(t))
        head = " ".join(out)
    elif toks[0] == b"VERSION":
        head = "VERSION {version}"
    else:
        head = _esc(line)
    end = item.raw[len(line):len(line) + 2] if item.kind == "value" else \
        item.raw[len(line):]
    text = head + _esc(end)
    if item.kind == "value":
        return 'expect "%s" %s' % (text, _quote(item.data))
    return 'expect "%s"' % text


def _expect_frame(f, caps):
    op = BIN_NAMES.get(f.opcode, "0x%02x" % f.opcode)
    fields = [op]
    if f.status:
        fields.append("status=%d" % f.status)
    if f.datatype:
        fields.append("datatype=%d" % f.datatype)
    if f.opaque:
        fields.append("opaque=0x%x" % f.opaque)
    if f.cas:
        name, new = caps.name(f.cas)
        fields.append("cas={$%s}" % name if new else "cas=$%s" % name)
    if f.extras:
        fields.append("extras=x\"%s\"" % f.extras.hex())
    if f.key:
        fields.append("key=%s" % _quote(f.key).replace(" ", "+"))
    if f.value:
        if f.opcode == 0x0b:
            fields.append('value="{version}"')
        else:
            fields.append("value=%s" % _quote(f.value).replace(" ", "+"))
    return "expect-bin " + " ".join(fields)


def transcript(stream, mc_results, title):
    """The stream and memcached's replies as a conformance transcript."""
    lines = ["# %s" % title,
             "# Found by tools/difffuzz; memcached 1.6.18's replies."]
    caps = _Caps()
    # The cas a request captured is the last one in its reply unit.
    ref_names = {}
    pos = {c: 0 for c in mc_results}
    cur = None
    sent_by_conn = {}
    for i, req in enumerate(stream.reqs):
        sent_by_conn.setdefault(req.conn, []).append(i)

    def refname(idx):
        return ref_names.get(idx)

    for i, req in enumerate(stream.reqs):
        if req.conn != cur:
            cur = req.conn
            lines.append("conn c%d" % cur)
        lines.append("send " + _send_terms(req, refname))
        last = sent_by_conn[req.conn][-1] == i
        if not (req.sentinel_after or last):
            continue
        res = mc_results[req.conn]
        items = res.items
        j = pos[req.conn]
        unit = []
        while j < len(items) and not dfwire.is_sentinel(items[j]):
            unit.append(items[j])
            j += 1
        sentinel_seen = j < len(items)
        pos[req.conn] = j + 1 if sentinel_seen else j
        for it in unit:
            if it.kind == "frame":
                lines.append(_expect_frame(it.frame, caps))
            elif it.kind == "tail":
                lines.append("expect %s" % _quote(it.raw))
            else:
                lines.append(_expect_text(it, caps))
            for v in dfwire.item_cas_values(it):
                ref_names[i] = caps.name(v)[0]
        if req.sync_after and i not in ref_names:
            pass  # a miss: later references send the stale value
        if sentinel_seen:
            lines.append("# (the sentinel: reply unit %d ends)" % i)
            s = _sentinel_send(res.binary, i)
            lines.append(s[0])
            lines.append(s[1])
        elif res.end == "eof":
            lines.append("expect-closed")
    return "\n".join(lines) + "\n"


def _sentinel_send(binary, i):
    if binary:
        return ("send-bin noop opaque=0x%x" % (0x7E000000 + i),
                "expect-bin noop opaque=0x%x" % (0x7E000000 + i))
    return ("send \"mn\\r\\n\"", "expect \"MN\\r\\n\"")


def frame_bytes(op, opaque):
    return struct.pack(">BBHBBHIIQ", 0x80, op, 0, 0, 0, 0, 0, opaque, 0)
