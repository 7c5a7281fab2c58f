"""trrun: plays a parsed transcript against a server: connections, the
steps, the checks of stats and lines, and how a failure is described."""

import re
import select
import socket
import struct
import time

from trterms import (
    EXTRA_FIELDS,
    HEADER,
    MAX_BODY,
    OPCODES,
    OPNAMES,
    OPTIONAL_EXTRAS,
    Placeholder,
    REQ_EXTRAS,
    RES_EXTRAS,
    STATUS_NAMES,
    StepFailure,
    eval_operand,
    has_placeholder,
    literal,
    match_parts,
    render,
    shorten,
    show,
    split_lines)
from trparse import (_TYPES)

# ------------------------------------------------------------- connection

class Conn:
    def __init__(self, addr, name, timeout):
        self.name = name
        self.buf = bytearray()
        self.eof = False
        self.sock = socket.create_connection(addr, timeout=timeout)
        self.sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        self.last_sent = b""
        self.corked = None

    def send(self, data):
        if self.corked is not None:
            self.corked += data
            self.last_sent = bytes(self.corked)
            return
        self.last_sent = data
        self.sock.sendall(data)

    def uncork(self):
        data, self.corked = bytes(self.corked or b""), None
        if data:
            self.sock.sendall(data)
            self.last_sent = data

    def _fill(self, deadline):
        if self.eof:
            return False
        left = deadline - time.monotonic()
        if left <= 0:
            return False
        r, _, _ = select.select([self.sock], [], [], left)
        if not r:
            return False
        try:
            d = self.sock.recv(1 << 20)
        except ConnectionResetError:
            d = b""
        if not d:
            self.eof = True
            return False
        self.buf += d
        return True

    def read_exact(self, n, deadline):
        while len(self.buf) < n:
            if not self._fill(deadline):
                break
        got = bytes(self.buf[:n])
        del self.buf[:n]
        return got

    def read_line(self, deadline, limit=MAX_BODY):
        while True:
            i = self.buf.find(b"\n")
            if i >= 0:
                got = bytes(self.buf[:i + 1])
                del self.buf[:i + 1]
                return got
            if len(self.buf) >= limit:
                got = bytes(self.buf[:limit])
                del self.buf[:limit]
                return got
            if not self._fill(deadline):
                got = bytes(self.buf)
                self.buf.clear()
                return got

    def peek_more(self, wait=0.2):
        """After a mismatch: whatever else arrives shortly, for the report."""
        end = time.monotonic() + wait
        while len(self.buf) < 512 and self._fill(end):
            if b"\n" in self.buf:
                break
        return bytes(self.buf[:512])

    def state(self):
        return " (connection closed by server)" if self.eof else ""

    def close(self):
        try:
            self.sock.close()
        except OSError:
            pass


# ----------------------------------------------------------------- runner

class Runner:
    def __init__(self, addr, transcript, timeout, verbose):
        self.addr = addr
        self.t = transcript
        self.timeout = transcript.timeout or timeout
        self.verbose = verbose
        self.conns = {}
        self.cur = None
        self.env = {}
        self.filled = []

    def log(self, msg):
        if self.verbose:
            print("    " + msg)

    def conn(self):
        if self.cur is None:
            self.switch("main")
        return self.conns[self.cur]

    def switch(self, name):
        if name not in self.conns:
            try:
                self.conns[name] = Conn(self.addr, name, self.timeout)
            except OSError as e:
                raise StepFailure("cannot connect %s: %s" % (name, e))
        self.cur = name

    def fail(self, step, expected, got, why=""):
        c = self.conns.get(self.cur)
        sent = shorten(c.last_sent) if c else ""
        msg = "%s [conn %s]\n      sent:     %s\n      expected: %s\n" \
              "      got:      %s%s" % (step, self.cur, sent, expected, got,
                                        c.state() if c else "")
        if why:
            msg += "\n      why:      " + why
        raise StepFailure(msg)

    def run(self):
        try:
            steps = self.t.steps
            i = 0
            while i < len(steps):
                st = steps[i]
                self.log(str(st))
                if st.kind == "poll":
                    self.do_poll(st, steps[i + 1:i + 3])
                    i += 3
                    continue
                self.do(st)
                i += 1
            self.check_quiet()
        finally:
            for c in list(self.conns.values()) + self.filled:
                c.close()

    def check_quiet(self):
        for name, c in self.conns.items():
            if c.buf:
                self.cur = name
                self.fail("end of transcript", "nothing more",
                          shorten(c.buf), "unexpected unread reply")
            if not c.eof:
                r, _, _ = select.select([c.sock], [], [], 0.05)
                if r:
                    try:
                        d = c.sock.recv(4096)
                    except OSError:
                        d = b""
                    if d:
                        self.cur = name
                        self.fail("end of transcript", "nothing more",
                                  shorten(d), "unexpected unread reply")

    def do(self, st):
        getattr(self, "do_" + st.kind.replace("-", "_"))(st)

    def do_poll(self, st, pair):
        deadline = time.monotonic() + st.seconds
        while True:
            try:
                for p in pair:
                    self.log("  (poll) " + str(p))
                    self.do(p)
                return
            except StepFailure:
                if time.monotonic() >= deadline:
                    raise
                time.sleep(0.05)

    # -- steps
    def do_cork(self, st):
        self.conn().corked = bytearray()

    def do_uncork(self, st):
        c = self.conn()
        if c.corked is None:
            raise StepFailure("%s: the connection is not corked" % st)
        try:
            c.uncork()
        except OSError as e:
            self.fail(st, "to send", "error %s" % e)

    def do_conn(self, st):
        self.switch(st.arg)

    def do_close(self, st):
        name = st.arg or self.cur or "main"
        c = self.conns.pop(name, None)
        if c is None:
            raise StepFailure("%s: no open connection %s" % (st, name))
        c.close()
        if self.cur == name:
            self.cur = None

    def do_send(self, st):
        data = render(st.parts, self.env)
        c = self.conn()
        try:
            c.send(data)
        except OSError as e:
            self.fail(st, "to send %s" % shorten(data), "error %s" % e)
        self.log("sent %s" % shorten(data))

    def do_expect(self, st):
        c = self.conn()
        deadline = time.monotonic() + self.timeout
        got_all = b""
        for seg in split_lines(st.parts):
            if has_placeholder(seg):
                got = c.read_line(deadline)
            else:
                want = literal(seg, self.env)
                if want.endswith(b"\n"):
                    got = c.read_line(deadline, len(want))
                else:
                    got = c.read_exact(len(want), deadline)
            got_all += got
            err = match_parts(seg, got, self.env)
            if err:
                more = b"" if got.endswith(b"\n") else c.peek_more()
                self.fail(st, show(st.parts), shorten(got_all + more),
                          "at %s: %s" % (shorten(got), err) if got else
                          "nothing received before the deadline")
        self.log("got  %s" % shorten(got_all))

    def do_expect_closed(self, st):
        c = self.conn()
        deadline = time.monotonic() + self.timeout
        if not c.buf:
            c._fill(deadline)
        if c.buf:
            self.fail(st, "connection closed", shorten(c.peek_more()))
        if not c.eof:
            self.fail(st, "connection closed",
                      "connection still open after %gs" % self.timeout)
        self.log("closed")

    def do_wait(self, st):
        time.sleep(st.seconds)

    # -- binary
    def _extras(self, st, layout, env):
        out = b""
        for name, code in layout:
            v = st.fields.get(name, "0")
            val = eval_operand(v, env)
            out += struct.pack(">" + code, val % (1 << (8 * struct.calcsize(
                ">" + code))))
        return out

    def do_send_bin(self, st):
        f, env, op = st.fields, self.env, st.opcode
        key = render(f.get("key", []), env)
        value = render(f.get("value", []), env)
        if "extras" in f:
            extras = render(f["extras"], env)
        elif op in REQ_EXTRAS:
            extras = self._extras(st, REQ_EXTRAS[op], env)
        elif op in OPTIONAL_EXTRAS and "exptime" in f:
            extras = self._extras(st, OPTIONAL_EXTRAS[op], env)
        else:
            for n in EXTRA_FIELDS & set(f):
                raise StepFailure("%s: %s is not an extra of opcode 0x%02x"
                                  % (st, n, op))
            extras = b""
        num = lambda n, d: eval_operand(f[n], env) if n in f else d
        frame = HEADER.pack(
            num("magic", 0x80), op, num("keylen", len(key)),
            num("extlen", len(extras)), num("datatype", 0),
            num("vbucket", 0),
            num("bodylen", len(key) + len(extras) + len(value)),
            num("opaque", 0), num("cas", 0) % (1 << 64))
        frame += extras + key + value
        c = self.conn()
        try:
            c.send(frame)
        except OSError as e:
            self.fail(st, "to send", "error %s" % e)
        self.log("sent %s" % shorten(frame))

    def read_frame(self, st, c, deadline):
        hdr = c.read_exact(24, deadline)
        if len(hdr) < 24:
            self.fail(st, describe_expect(st), shorten(hdr) or "nothing",
                      "short header")
        fr = dict(zip(("magic", "opcode", "keylen", "extlen", "datatype",
                       "status", "bodylen", "opaque", "cas"),
                      HEADER.unpack(hdr)))
        if fr["bodylen"] > MAX_BODY or \
                fr["keylen"] + fr["extlen"] > fr["bodylen"]:
            self.fail(st, describe_expect(st), describe_frame(fr),
                      "bad lengths in response header")
        body = c.read_exact(fr["bodylen"], deadline)
        if len(body) < fr["bodylen"]:
            self.fail(st, describe_expect(st), describe_frame(fr),
                      "body cut short (%d of %d bytes)"
                      % (len(body), fr["bodylen"]))
        e, k = fr["extlen"], fr["keylen"]
        fr["extras"], fr["key"], fr["value"] = body[:e], body[e:e + k], \
            body[e + k:]
        return fr

    def do_expect_bin(self, st):
        c = self.conn()
        deadline = time.monotonic() + self.timeout
        fr = self.read_frame(st, c, deadline)
        self.log("got  %s" % describe_frame(fr))
        f = st.fields
        trial = dict(self.env)

        def num(name, default):
            want = f.get(name)
            got = fr[name]
            if want is None:
                return None if got == default else \
                    "%s is %s, expected %s" % (name, got, default)
            if isinstance(want, Placeholder):
                err = want.check(got, trial)
                return None if err is None else "%s: %s" % (name, err)
            if want.startswith("$") and re.match(r"^\$\w+$", want) and \
                    want[1:] not in trial:
                trial[want[1:]] = got
                return None
            w = eval_operand(want, trial)
            return None if w == got else "%s is %s, expected %s" % (
                name, got, w)

        checks = [
            ("magic", lambda: num("magic", 0x81)),
            ("opcode", lambda: None if fr["opcode"] == st.opcode else
             "opcode is %s, expected %s" % (opname(fr["opcode"]),
                                            opname(st.opcode))),
            ("status", lambda: None if fr["status"] == f.get("status", 0) else
             "status is %s, expected %s" % (stname(fr["status"]),
                                            stname(f.get("status", 0)))),
            ("opaque", lambda: num("opaque", 0)),
            ("datatype", lambda: num("datatype", 0)),
            ("cas", lambda: num("cas", 0)),
        ]
        for _, chk in checks:
            err = chk()
            if err:
                self.fail(st, describe_expect(st), describe_frame(fr), err)
        # extras
        if "extras" in f:
            err = match_parts(f["extras"], fr["extras"], trial)
            if err:
                self.fail(st, describe_expect(st), describe_frame(fr),
                          "extras " + err)
        elif EXTRA_FIELDS & set(f):
            layout = RES_EXTRAS.get(st.opcode, [("flags", "I")])
            size = sum(struct.calcsize(">" + c) for _, c in layout)
            if len(fr["extras"]) != size:
                self.fail(st, describe_expect(st), describe_frame(fr),
                          "extras are %d bytes, expected %d"
                          % (len(fr["extras"]), size))
            off = 0
            for name, code in layout:
                sz = struct.calcsize(">" + code)
                got = struct.unpack(">" + code, fr["extras"][off:off + sz])[0]
                off += sz
                want = f.get(name, "0")
                if isinstance(want, Placeholder):
                    err = want.check(got, trial)
                elif want.startswith("$") and want[1:] not in trial:
                    trial[want[1:]] = got
                    err = None
                else:
                    w = eval_operand(want, trial)
                    err = None if w == got else "%s is %d, expected %d" % (
                        name, got, w)
                if err:
                    self.fail(st, describe_expect(st), describe_frame(fr), err)
        elif fr["extras"]:
            self.fail(st, describe_expect(st), describe_frame(fr),
                      "unexpected extras")
        for part in ("key", "value"):
            err = match_parts(f.get(part, [b""]), fr[part], trial)
            if err:
                self.fail(st, describe_expect(st), describe_frame(fr),
                          "%s %s" % (part, err))
        self.env.clear()
        self.env.update(trial)

    # -- stats
    def do_expect_stats(self, st):
        c = self.conn()
        deadline = time.monotonic() + self.timeout
        stats, order = {}, []
        if st.binary:
            opq = eval_operand(st.opaque, self.env)
            while True:
                fr = self.read_frame(st, c, deadline)
                if fr["magic"] != 0x81 or fr["opcode"] != OPCODES["stat"] or \
                        fr["status"] != 0 or fr["opaque"] != opq or \
                        fr["extras"] or fr["cas"]:
                    self.fail(st, "stat frames (status success, opaque %d)"
                              % opq, describe_frame(fr))
                if not fr["key"]:
                    if fr["value"]:
                        self.fail(st, "an empty terminating frame",
                                  describe_frame(fr))
                    break
                k = fr["key"].decode("latin-1")
                stats[k] = fr["value"].decode("latin-1")
                order.append(k)
        else:
            while True:
                line = c.read_line(deadline)
                if line == b"END\r\n":
                    break
                m = re.match(rb"^STAT (\S+) (.*)\r\n$", line, re.S)
                if not m:
                    self.fail(st, "STAT name value\\r\\n ... END\\r\\n",
                              shorten(line + c.peek_more()),
                              "after %d stats" % len(order))
                k = m.group(1).decode("latin-1")
                stats[k] = m.group(2).decode("latin-1")
                order.append(k)
        self.log("got  %d stats" % len(order))
        for chk in st.checks:
            err = self.stat_check(chk, stats, order)
            if err:
                self.fail(st, "stats check: " + " ".join(
                    str(x) for x in chk if x is not None),
                    "%d stats%s" % (len(order), ""), err)

    def stat_check(self, chk, stats, order):
        kind = chk[0]
        env = self.env
        if kind == "absent":
            return None if chk[1] not in stats else \
                "%s is present (%s)" % (chk[1], stats[chk[1]])
        if kind == "count":
            lo, hi = eval_operand(chk[1], env), eval_operand(chk[2], env)
            return None if lo <= len(order) <= hi else \
                "count %d not in %d..%d" % (len(order), lo, hi)
        if kind == "all":
            bad = [k for k in order if not chk[1].fullmatch(k)]
            return None if not bad else "keys not matching: %s" % bad[:5]
        if kind == "match":
            keys = [k for k in order if chk[1].fullmatch(k)]
            if not keys:
                return "no key matches %s" % chk[1].pattern
            bad = [k for k in keys if not _TYPES[chk[2]].match(stats[k])]
            return None if not bad else "%s = %r is not %s" % (
                bad[0], stats[bad[0]], chk[2])
        name = chk[1]
        if name not in stats:
            return "%s is missing" % name
        val = stats[name]
        if kind == "eq":
            want = chk[2]
            if re.match(r"^\$\w+([+-]\d+)?$", want):
                want = str(eval_operand(want, env))
            return None if val == want else "%s is %r, expected %r" % (
                name, val, want)
        if kind == "in":
            if not _TYPES["int"].match(val):
                return "%s = %r is not an integer" % (name, val)
            lo, hi = eval_operand(chk[2], env), eval_operand(chk[3], env)
            return None if lo <= int(val) <= hi else \
                "%s = %s not in %d..%d" % (name, val, lo, hi)
        if kind == "type":
            if not _TYPES[chk[2]].match(val):
                return "%s = %r is not %s" % (name, val, chk[2])
            if chk[3]:
                if not _TYPES["int"].match(val):
                    return "%s = %r cannot be captured" % (name, val)
                env[chk[3]] = int(val)
            return None
        return "unknown check"

    def do_expect_lines(self, st):
        c = self.conn()
        deadline = time.monotonic() + self.timeout
        lines = []
        while True:
            line = c.read_line(deadline)
            if not line.endswith(b"\n"):
                self.fail(st, "lines until %s" % show(st.until),
                          shorten(b"".join(lines[-3:]) + line),
                          "no complete line before the deadline")
            if match_parts(st.until, line, self.env) is None:
                break
            lines.append(line)
        self.log("got  %d lines" % len(lines))
        for chk in st.checks:
            if chk[0] == "count":
                lo, hi = eval_operand(chk[1], self.env), \
                    eval_operand(chk[2], self.env)
                if not lo <= len(lines) <= hi:
                    self.fail(st, "%d..%d lines" % (lo, hi),
                              "%d lines: %s" % (len(lines), shorten(
                                  b"".join(lines[:4]))))
            elif chk[0] == "each":
                for ln in lines:
                    if match_parts(chk[1], ln, self.env):
                        self.fail(st, "each line like %s" % show(chk[1]),
                                  shorten(ln))
            elif chk[0] == "has":
                if not any(match_parts(chk[1], ln, self.env) is None
                           for ln in lines):
                    self.fail(st, "a line like %s" % show(chk[1]),
                              shorten(b"".join(lines[:6])))

    # -- connection limits
    def _probe(self, name, deadline, refusal):
        """Opens a connection: returns ('accepted', conn), ('refused', got)
        or ('other', got)."""
        try:
            c = Conn(self.addr, name, self.timeout)
        except OSError as e:
            return ("other", "connect failed: %s" % e)
        # A refusing server writes its message on accept and closes; an
        # accepting one writes nothing. Poll briefly before saying anything
        # (a request sent into a refused connection could turn the close
        # into a reset that loses the message).
        c._fill(min(deadline, time.monotonic() + 0.25))
        if not c.buf and not c.eof:
            try:
                c.send(b"version\r\n")
            except OSError as e:
                c.close()
                return ("other", "send failed: %s" % e)
            line = c.read_line(deadline)
            if line.startswith(b"VERSION "):
                return ("accepted", c)
            c.buf[:0] = line
        got = bytes(c.buf)
        if not c.eof:
            c._fill(min(deadline, time.monotonic() + 1.0))
            got = bytes(c.buf)
        err = match_parts(refusal, got, dict(self.env)) if refusal else "x"
        eof = c.eof
        c.close()
        if err is None and eof:
            return ("refused", got)
        return ("other", shorten(got) + (" (then closed)" if eof else
                                         " (still open)"))

    def do_fill_conns(self, st):
        for i in range(st.max):
            deadline = time.monotonic() + self.timeout
            res, what = self._probe("fill%d" % (i + 1), deadline, st.parts)
            if res == "accepted":
                self.filled.append(what)
                continue
            if res == "refused":
                self.log("refused after %d accepted connections"
                         % len(self.filled))
                return
            self.fail(st, show(st.parts) + " then close", what,
                      "after %d accepted connections" % len(self.filled))
        self.fail(st, "a refusal within %d connections" % st.max,
                  "all accepted")

    def do_close_filled(self, st):
        for c in self.filled:
            c.close()
        self.filled = []

    def do_await_accept(self, st):
        deadline = time.monotonic() + st.seconds
        last = ""
        while time.monotonic() < deadline:
            res, what = self._probe(st.arg, deadline, None)
            if res == "accepted":
                self.conns[st.arg] = what
                self.cur = st.arg
                return
            last = what
            time.sleep(0.05)
        self.fail(st, "an accepted connection within %gs" % st.seconds, last)


def opname(op):
    return "%s(0x%02x)" % (OPNAMES.get(op, "?"), op)


def stname(s):
    return "%s(0x%02x)" % (STATUS_NAMES.get(s, "?"), s)


def describe_frame(fr):
    out = "magic=0x%02x %s status=%s opaque=0x%x cas=%d" % (
        fr["magic"], opname(fr["opcode"]), stname(fr["status"]),
        fr["opaque"], fr["cas"])
    if fr.get("datatype"):
        out += " datatype=%d" % fr["datatype"]
    if "extras" in fr:
        if fr["extras"]:
            out += " extras=x\"%s\"" % fr["extras"].hex()
        if fr["key"]:
            out += " key=\"%s\"" % shorten(fr["key"])
        if fr["value"]:
            out += " value=\"%s\"" % shorten(fr["value"])
    return out


def describe_expect(st):
    return st.text.partition(" ")[2]
