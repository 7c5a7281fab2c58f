"""dfrun: starts the servers and plays a stream against one of them.

Both servers run on loopback ports of their own, in a temporary directory
(under /dev/shm when it exists: kurad syncs every write, and a memory file
system keeps that from setting the pace). Before each stream a control
connection sends flush_all, which also cancels a delayed flush an earlier
stream left pending; the stream's key prefix does the rest of the
isolation (dfgen.KEY_PREFIX).

Playing a stream: requests go out in order, each on its connection, with
a sentinel after those that close a reply unit; the sockets are
non-blocking and replies are read while requests are written, so a
stream with large values cannot deadlock. At a sync the player reads
until that sentinel's reply arrives (or the server closes, or a deadline
passes). At the end every connection is read until the reply to its
last sentinel, or failing that its write side is shut and it is read
until the server closes it.
"""

import base64
import errno
import os
import select
import shutil
import signal
import socket
import struct
import subprocess
import tempfile
import time

import dfbin
import dftext
import dfwire
from dfgen import KEY_PREFIX, AbsTime, CasRef

SYNC_TIMEOUT = 2.0
LAST_TIMEOUT = 0.5  # then the half-close below
END_TIMEOUT = 5.0
STALE_CAS = 9000000000000000000  # a cas no server hands out in a run


class Prefixes:
    """Hands out a fresh 6-byte key prefix for each play."""

    def __init__(self):
        self.n = 0

    def next(self):
        self.n += 1
        return b"%05x:" % (self.n & 0xFFFFF)


def free_port():
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    port = s.getsockname()[1]
    s.close()
    return port


def scratch_root():
    for d in ("/dev/shm", None):
        if d is None or (os.path.isdir(d) and os.access(d, os.W_OK)):
            return tempfile.mkdtemp(prefix="difffuzz-", dir=d)


class Server:
    """One server under test: "kurad" or "memcached"."""

    def __init__(self, name, argv_fn, root):
        self.name = name
        self.argv_fn = argv_fn  # (port, dir) -> argv
        self.root = root
        self.proc = None
        self.port = None
        self.dir = None
        self.ctl = None
        self.log = None
        self.starts = 0

    def start(self):
        self.stop()
        self.starts += 1
        self.dir = os.path.join(self.root, "%s.%d" % (self.name, self.starts))
        os.makedirs(self.dir)
        self.port = free_port()
        self.log = open(os.path.join(self.dir, "log"), "wb")
        self.proc = subprocess.Popen(self.argv_fn(self.port, self.dir),
                                     stdout=self.log, stderr=self.log,
                                     stdin=subprocess.DEVNULL)
        deadline = time.monotonic() + 15
        while True:
            if self.proc.poll() is not None:
                raise RuntimeError("%s exited at start (status %s); log: %s"
                                   % (self.name, self.proc.returncode,
                                      self.log_tail()))
            try:
                self.ctl = socket.create_connection(("127.0.0.1", self.port),
                                                    timeout=5)
                break
            except OSError:
                if time.monotonic() > deadline:
                    raise RuntimeError("%s did not listen within 15 s"
                                       % self.name)
                time.sleep(0.02)
        self.ctl.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)

    def log_tail(self):
        try:
            with open(os.path.join(self.dir, "log"), "rb") as f:
                return f.read()[-2000:].decode("utf-8", "replace")
        except OSError:
            return ""

    def alive(self):
        return self.proc is not None and self.proc.poll() is None

    def stop(self):
        if self.ctl is not None:
            self.ctl.close()
            self.ctl = None
        if self.proc is not None:
            if self.proc.poll() is None:
                self.proc.send_signal(signal.SIGKILL)
            self.proc.wait()
            self.proc = None
        if self.log is not None:
            self.log.close()
            self.log = None
        if self.dir is not None:
            shutil.rmtree(self.dir, ignore_errors=True)
            self.dir = None

    RESET = b"flush_all\r\nstats reset\r\nstats detail off\r\n"
    RESET_REPLY = b"OK\r\nRESET\r\nOK\r\n"

    def reset(self):
        """Before a stream, on the control connection: flush_all, and the
        per-prefix counts (stats detail) off and cleared, so that a stream
        sees none of the earlier ones' state. False if it failed."""
        try:
            self.ctl.sendall(self.RESET)
            buf = b""
            deadline = time.monotonic() + 5
            while len(buf) < len(self.RESET_REPLY):
                self.ctl.settimeout(max(0.01, deadline - time.monotonic()))
                d = self.ctl.recv(4096)
                if not d:
                    return False
                buf += d
            return buf == self.RESET_REPLY
        except OSError:
            return False


class ConnResult:
    """What one connection of a stream received."""

    __slots__ = ("binary", "items", "end", "unit_starts")

    def __init__(self, binary):
        self.binary = binary
        self.items = []
        self.end = "open"  # "eof", "reset" or "timeout" once finished


class _Conn:
    def __init__(self, sock, binary):
        self.sock = sock
        self.parser = dfwire.ReplyParser(binary)
        self.binary = binary
        self.eof = False
        self.reset = False  # the server reset the connection
        self.write_dead = False
        self.unit_start = 0  # first item of the unit being read

    def pump(self, out, deadline, until=None):
        """Writes `out` while reading; then, if `until` (a predicate on
        the parser) is given, reads until it holds, EOF or the deadline.
        Returns False on the deadline."""
        sock = self.sock
        view = memoryview(out)
        while True:
            if not view or self.write_dead:
                if until is None or self.eof or until(self.parser):
                    return True
            now = time.monotonic()
            if now > deadline:
                return False
            wl = [sock] if view and not self.write_dead else []
            rl = [] if self.eof else [sock]
            if not rl and not wl:
                return True
            r, w, _ = select.select(rl, wl, [], deadline - now)
            if r:
                try:
                    d = sock.recv(1 << 20)
                except OSError as e:
                    self.reset = e.errno == errno.ECONNRESET
                    d = b""
                if d:
                    self.parser.feed(d)
                else:
                    self.eof = True
                    self.parser.finish()
            if w:
                try:
                    n = sock.send(view[:1 << 20])
                    view = view[n:]
                except OSError as e:
                    if e.errno in (errno.EAGAIN, errno.EWOULDBLOCK):
                        continue
                    self.write_dead = True  # the server closed on us


def render(req, cas_by_req, now, prefix=KEY_PREFIX):
    """The request's bytes on this server, its keys under `prefix`."""
    out = []
    swap = prefix != KEY_PREFIX
    b64_from = base64.b64encode(KEY_PREFIX)
    b64_to = base64.b64encode(prefix)
    for p in req.parts:
        if isinstance(p, bytes):
            if swap:
                p = p.replace(KEY_PREFIX, prefix).replace(b64_from, b64_to)
            out.append(p)
        elif isinstance(p, CasRef):
            v = cas_by_req.get(p.idx) if p.idx is not None else None
            v = (STALE_CAS if v is None else v) + p.delta
            v &= 0xFFFFFFFFFFFFFFFF
            out.append(b"%d" % v if p.fmt == "dec" else struct.pack(">Q", v))
        elif isinstance(p, AbsTime):
            v = now + p.delta
            out.append(b"%d" % v if p.fmt == "dec"
                       else struct.pack(">I", v & 0xFFFFFFFF))
        else:
            raise TypeError(p)
    return b"".join(out)


def play(server, stream, prefix=KEY_PREFIX):
    """Plays `stream` on `server` with its keys under `prefix` (6 bytes).
    Returns {conn: ConnResult}, or None if the server could not be reset
    (it is dead or hung)."""
    if not server.reset():
        return None
    conns = {}
    results = {}
    cas_by_req = {}
    token = 0
    now = int(time.time())
    last_on = {}
    last_token = {}
    for i, req in enumerate(stream.reqs):
        last_on[req.conn] = i
    for i, req in enumerate(stream.reqs):
        data = render(req, cas_by_req, now, prefix)
        c = conns.get(req.conn)
        if c is None:
            binary = data[:1] == b"\x80"
            try:
                sock = socket.create_connection(("127.0.0.1", server.port),
                                                timeout=5)
            except OSError:
                return None
            sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
            sock.setblocking(False)
            c = conns[req.conn] = _Conn(sock, binary)
            results[req.conn] = ConnResult(binary)
        sentinel = req.sentinel_after or last_on[req.conn] == i
        if sentinel:
            token += 1
            last_token[req.conn] = token
            data += dfbin.sentinel(token) if c.binary \
                else dftext.sentinel(token)
        until = None
        if req.sync_after:
            t = token
            until = lambda p, t=t: any(  # noqa: E731
                dfwire.is_sentinel(it, t) for it in p.items[c.unit_start:])
        c.pump(data, time.monotonic() + (SYNC_TIMEOUT if until else 30),
               until)
        if req.sync_after:
            items = c.parser.items[c.unit_start:]
            cas = [v for it in items for v in dfwire.item_cas_values(it)]
            if cas:
                cas_by_req[i] = cas[-1]
            c.unit_start = len(c.parser.items)
    for n in sorted(conns):
        c = conns[n]
        # The last sentinel's reply ends the stream on this connection:
        # the server answered everything and kept the connection open. If
        # it does not come (a data block still awaited took it), the write
        # side is shut and the connection read until the server closes.
        t = last_token[n]
        seen = c.pump(b"", time.monotonic() + LAST_TIMEOUT,
                      lambda p, t=t: any(dfwire.is_sentinel(it, t)
                                         for it in p.items))
        if c.eof:
            results[n].end = "reset" if c.reset else "eof"
        elif seen:
            results[n].end = "open"
        else:
            if not c.write_dead:
                try:
                    c.sock.shutdown(socket.SHUT_WR)
                except OSError:
                    pass
            ok = c.pump(b"", time.monotonic() + END_TIMEOUT,
                        lambda p: False)
            if c.eof:
                results[n].end = "reset" if c.reset else "eof"
            else:
                c.parser.finish()
                results[n].end = "timeout" if not ok else "open"
        results[n].items = c.parser.items
        c.sock.close()
    return results
