"""dfcompare: decides whether two servers answered a stream alike.

Each connection's items are normalised (dfwire.Normaliser: cas values by
their equality pattern, stats and version collapsed, times to live within
2 s) and compared in order, and so is how the connection ended: closed by
the server, or still open when the client had finished. A difference is
reported with the connection, the reply unit (the requests between two
sentinels) and both servers' items there.

Replies are compared unit by unit: a unit is what the requests between
two sentinels produced. Deliberate differences that show only with the
request in view are rewritten here, each citing doc/protocol.md's list:
  2. a refused storage command's data block (requests tagged "swallow");
  3. a line over the limit: kura says CLIENT_ERROR line too long before it
     closes, memcached closes silently.
"""

import dfwire


class Divergence:
    def __init__(self, conn, index, unit, ours, theirs, why):
        self.conn = conn
        self.index = index
        self.unit = unit
        self.ours = ours      # kurad's normalised items from there
        self.theirs = theirs  # memcached's
        self.why = why
        self.labels = []

    def signature(self):
        """A short key that groups divergences of the same kind."""
        def head(x):
            if not x:
                return "nothing"
            n = x[0]
            if isinstance(n, tuple) and n and isinstance(n[0], tuple):
                n = n[0]
            if isinstance(n, tuple):
                return "%r" % (n[:2],)
            return repr(n)[:60]
        return "%s | %s" % (head(self.ours), head(self.theirs))

    def __str__(self):
        return ("connection %d, reply unit %d (%s), item %d: %s\n"
                "  kurad:     %s\n  memcached: %s" % (
                    self.conn, self.unit, "; ".join(self.labels),
                    self.index, self.why, _show(self.ours),
                    _show(self.theirs)))


def _show(items, limit=4):
    out = [repr(i)[:300] for i in items[:limit]]
    if len(items) > limit:
        out.append("... %d more" % (len(items) - limit))
    return "\n             ".join(out) if out else "(nothing)"


def _deliberate_unit(ik, im, tags):
    """Rewrites one reply unit for the differences its requests' tags
    name (doc/protocol.md's numbers)."""
    if "swallow" in tags:
        # 2: kura discards a refused storage command's data block,
        # memcached runs it as a line (dfgen makes it a word no command
        # starts with, so memcached's extra replies are ERROR lines).
        err = ("line", b"ERROR")
        ik = [x for x in ik if x != err]
        im = [x for x in im if x != err]
    return ik, im


def _deliberate_end(items, end):
    """3: a line over the limit: kura says why before it closes."""
    if end == "eof" and items and items[-1] == (
            "line", b"CLIENT_ERROR line too long"):
        return items[:-1]
    return items


def _lost_to_reset(ik, im, end_mc):
    """16: memcached closed with requests unread, so its kernel reset the
    connection, and the client's may discard replies memcached had sent
    (a reply cut short is left as a tail). kurad closes with a FIN after
    every reply: it may have more, and memcached's must begin them."""
    if end_mc != "reset":
        return False
    if im and im[-1][0] == "tail":
        im = im[:-1]
    return ik[:len(im)] == im


def sentinel_token(item):
    """The token of a sentinel's reply, else None."""
    if item.kind == "line":
        toks = item.line.split(b" ")
        if dfwire.is_sentinel(item):
            return int(toks[2][1:])
    elif item.kind == "frame" and dfwire.is_sentinel(item):
        return item.frame.opaque - dfwire.SENTINEL_OPAQUE_BASE
    return None


def token_requests(stream):
    """token -> index of the request the sentinel with that token follows,
    numbered as dfrun.play() numbers them."""
    last_on = {}
    for i, req in enumerate(stream.reqs):
        last_on[req.conn] = i
    out = {}
    token = 0
    for i, req in enumerate(stream.reqs):
        if req.sentinel_after or last_on[req.conn] == i:
            token += 1
            out[token] = i
    return out


def units(items, cuts):
    """Cuts a connection's items into reply units after the sentinels
    whose token is in `cuts` (a unit keeps its sentinel's item last)."""
    out = [[]]
    for it in items:
        out[-1].append(it)
        if sentinel_token(it) in cuts:
            out.append([])
    if not out[-1]:
        out.pop()
    return out


def request_units(stream, conn, cuts, token_req):
    """The requests on `conn`, grouped as `units` groups their replies."""
    ends = sorted(token_req[t] for t in cuts if t in token_req)
    out = [[]]
    for i, r in enumerate(stream.reqs):
        if r.conn != conn:
            continue
        out[-1].append(r)
        if ends and i == ends[0]:
            ends.pop(0)
            out.append([])
    if not out[-1]:
        out.pop()
    return out


def compare(stream, kura, mc, prefix=None):
    """Returns None if kurad (`kura`) and memcached (`mc`) results agree,
    else a Divergence. Results are dfrun.play() outputs of one play, whose
    key prefix was `prefix`.

    A unit ends at a sentinel both servers answered: a sentinel one of
    them read as part of another request (an incomplete data block, a
    line that runs on) joins its unit to the next, so that the tags of
    every request that may have produced a unit's replies apply to it."""
    nk = dfwire.Normaliser(prefix)
    nm = dfwire.Normaliser(prefix)
    token_req = token_requests(stream)
    for conn in sorted(set(kura) | set(mc)):
        rk = kura.get(conn)
        rm = mc.get(conn)
        if rk is None or rm is None:
            return Divergence(conn, 0, 0, [], [], "connection missing")
        cuts = ({sentinel_token(it) for it in rk.items} &
                {sentinel_token(it) for it in rm.items}) - {None}
        uk = units(rk.items, cuts)
        um = units(rm.items, cuts)
        groups = request_units(stream, conn, cuts, token_req)
        for u in range(max(len(uk), len(um))):
            ik = nk.items(uk[u]) if u < len(uk) else []
            im = nm.items(um[u]) if u < len(um) else []
            tags = set()
            labels = []
            if u < len(groups):
                for r in groups[u]:
                    tags |= r.tags
                    labels.append(r.label)
            ik, im = _deliberate_unit(ik, im, tags)
            if u == len(uk) - 1:
                ik = _deliberate_end(ik, rk.end)
            if ik != im and u >= len(um) - 1 and \
                    _lost_to_reset(ik, im, rm.end):
                continue
            if ik != im:
                n = 0
                while n < min(len(ik), len(im)) and ik[n] == im[n]:
                    n += 1
                why = "replies differ" if n < min(len(ik), len(im)) else \
                    "kurad sent %d replies, memcached %d" % (len(ik),
                                                             len(im))
                d = Divergence(conn, n, u, ik[n:], im[n:], why)
                d.labels = labels
                return d
        if rk.end != rm.end and (rk.end, rm.end) != ("eof", "reset"):
            return Divergence(conn, 0, len(uk), [], [],
                              "kurad's connection ended %s, memcached's %s"
                              % (rk.end, rm.end))
    return None
