#!/usr/bin/env python3
"""probe: the clients of tests/ha/, run in the client namespace (ip netns
exec) against a floating address or twemproxy, in memcached's text
protocol.

  probe.py writes HOST PORT SECONDS OUT.json ACKLOG [--keys N,N,...]
      One set at a time with 0.1 s timeouts (seed 002's client), and a
      fresh connection after any error or timeout. Keys are probe:c0:<n>
      for each n of --keys in turn (default 0..63), each value the write's
      sequence number, and every acknowledged write goes to ACKLOG in
      `kura bench --ack-log` form, so `kura verify` checks these writes
      too. OUT.json gets the time of every acknowledgement, so the test
      measures the time without service where a client sees it.

  probe.py session HOST PORT OUT.json
      Seed 000's session client. It stores a session (a value with flags
      and an expiry, and a counter) on a connection it keeps, prints one
      JSON line with the pid of the kurad that answered, and waits for a
      line on standard input: the test has killed that kurad meanwhile.
      It then asks again on the old connection (which fails), and retries
      on a fresh connection every 50 ms, 0.1 s timeouts, until one
      answers; there it reads the session back and increments the
      counter, once (2 s timeout): a retried increment whose first reply
      was only late would count twice. OUT.json says how the old connection failed, how many
      attempts and seconds it took, what came back and which pid
      answered.
"""
import json
import socket
import sys
import time

TIMEOUT = 0.1
SESSION_KEY = "sess:7f3a9c"
SESSION_VALUE = b'{"user":4711,"cart":[3,14,15],"theme":"dark"}'
SESSION_FLAGS = 3
SESSION_TTL = 1800


class Conn:
    def __init__(self, host, port, timeout=TIMEOUT):
        self.s = socket.create_connection((host, port), timeout=timeout)
        self.s.settimeout(timeout)
        self.s.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        self.buf = b""

    def close(self):
        self.s.close()

    def _more(self):
        chunk = self.s.recv(65536)
        if not chunk:
            raise ConnectionError("closed by the server")
        self.buf += chunk

    def line(self):
        while b"\r\n" not in self.buf:
            self._more()
        line, self.buf = self.buf.split(b"\r\n", 1)
        return line

    def request(self, req, terminators):
        """Sends req and reads up to a line in `terminators` (or one that
        starts with an error word); returns every line before it and it."""
        self.s.sendall(req)
        lines = []
        while True:
            line = self.line()
            if line in terminators or line.split(b" ")[0] in (
                    b"ERROR", b"CLIENT_ERROR", b"SERVER_ERROR"):
                return lines, line
            lines.append(line)
            if line.startswith(b"VALUE "):
                n = int(line.split()[3])
                while len(self.buf) < n + 2:
                    self._more()
                lines.append(self.buf[:n])
                self.buf = self.buf[n + 2:]

    def set(self, key, value, flags=0, ttl=0):
        _, last = self.request(b"set %s %d %d %d\r\n%s\r\n" % (
            key.encode(), flags, ttl, len(value), value), (b"STORED",))
        return last

    def get(self, key):
        """(flags, value) or None."""
        lines, last = self.request(b"get %s\r\n" % key.encode(), (b"END",))
        if last != b"END":
            raise ConnectionError(last.decode(errors="replace"))
        if not lines:
            return None
        return int(lines[0].split()[2]), lines[1]

    def pid(self):
        lines, _ = self.request(b"stats\r\n", (b"END",))
        for line in lines:
            f = line.split()
            if len(f) == 3 and f[1] == b"pid":
                return int(f[2])
        return None


def writes(host, port, seconds, out, ack_path, keys):
    start = time.time()
    end = start + seconds
    acks = []           # [time, n]
    errors = []         # [time, what]
    connects = 0
    seq = 0
    conn = None
    ack = open(ack_path, "w")
    i = 0
    while time.time() < end:
        if conn is None:
            try:
                connects += 1
                conn = Conn(host, port)
            except OSError as e:
                errors.append([time.time(), f"connect: {e}"])
                time.sleep(0.05)
                continue
        n = keys[i % len(keys)]
        seq += 1
        try:
            reply = conn.set(f"probe:c0:{n}", b"%010d" % seq)
        except (OSError, ValueError) as e:
            errors.append([time.time(), f"set: {e or type(e).__name__}"])
            conn.close()
            conn = None
            continue
        if reply == b"STORED":
            acks.append([time.time(), n])
            ack.write(f"probe:c0:{n} {seq}\n")
            i += 1
        else:
            errors.append([time.time(), reply.decode(errors="replace")])
            conn.close()
            conn = None
    ack.close()
    if conn is not None:
        conn.close()
    with open(out, "w") as f:
        json.dump({"start": start, "end": time.time(), "acks": acks,
                   "errors": errors[:200], "nerrors": len(errors),
                   "connects": connects}, f)


def session(host, port, out):
    c = Conn(host, port, timeout=2)
    assert c.set(SESSION_KEY, SESSION_VALUE, SESSION_FLAGS,
                 SESSION_TTL) == b"STORED"
    assert c.set(SESSION_KEY + ":hits", b"1", 0, SESSION_TTL) == b"STORED"
    first_pid = c.pid()
    print(json.dumps({"pid": first_pid}), flush=True)
    sys.stdin.readline()
    t0 = time.time()
    result = {"first_pid": first_pid}
    # The old connection: its server is gone.
    try:
        c.s.settimeout(2)
        got = c.get(SESSION_KEY)
        result["old_connection"] = f"answered: {got!r}"
    except (OSError, ValueError) as e:
        result["old_connection"] = f"failed: {e or type(e).__name__}"
    c.close()
    attempts = 0
    while time.time() < t0 + 20:
        attempts += 1
        try:
            c = Conn(host, port)
            got = c.get(SESSION_KEY)
            pid = c.pid()
        except (OSError, ValueError):
            time.sleep(0.05)
            continue
        # A server has answered: the increment is sent once, never
        # retried, so a slow reply cannot count one visit twice.
        try:
            c.s.settimeout(2)
            c.s.sendall(b"incr %s:hits 1\r\n" % SESSION_KEY.encode())
            hits = c.line()
        except (OSError, ValueError) as e:
            hits = f"no answer: {e or type(e).__name__}".encode()
        c.close()
        result.update({
            "attempts": attempts, "seconds": time.time() - t0,
            "flags": got[0] if got else None,
            "value_ok": bool(got) and got[1] == SESSION_VALUE,
            "hits": hits.decode(errors="replace"), "pid": pid})
        break
    else:
        result.update({"attempts": attempts, "seconds": None})
    with open(out, "w") as f:
        json.dump(result, f)


def main():
    mode = sys.argv[1]
    if mode == "writes":
        keys = list(range(64))
        if len(sys.argv) > 8 and sys.argv[7] == "--keys":
            keys = [int(k) for k in sys.argv[8].split(",")]
        writes(sys.argv[2], int(sys.argv[3]), float(sys.argv[4]),
               sys.argv[5], sys.argv[6], keys)
    elif mode == "session":
        session(sys.argv[2], int(sys.argv[3]), sys.argv[4])
    else:
        sys.exit(f"probe: unknown mode {mode}")


if __name__ == "__main__":
    main()
