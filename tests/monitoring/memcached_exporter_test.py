#!/usr/bin/env python3
"""The Prometheus memcached exporter scrapes kurad.

Run under with_kurad (make check), which starts kurad and exports
KURA_HOST and KURA_PORT. After known operations, the exporter's standard
metrics must say what kurad's own stats say: memcached_up 1, items, bytes,
connections, commands by command and status (set being cmd_set less cas,
as the exporter computes it), the limit, the version; and kurad's own
/-/metrics must give the same values under the same names, so dashboards
for the exporter work on either.

The exporter is Debian's prometheus-memcached-exporter (or
memcached_exporter on PATH, or $KURA_MEMCACHED_EXPORTER); without it the
test is skipped (77).
"""
import os
import shutil
import socket
import subprocess
import sys
import time
import urllib.request

HOST = os.environ.get("KURA_HOST", "127.0.0.1")
PORT = int(os.environ.get("KURA_PORT", "0"))
DEADLINE_S = 20.0


def skip(why):
    print("SKIP: " + why)
    sys.exit(77)


def find_exporter():
    given = os.environ.get("KURA_MEMCACHED_EXPORTER")
    if given:
        return given
    for name in ("prometheus-memcached-exporter", "memcached_exporter"):
        path = shutil.which(name)
        if path:
            return path
    return None


class Conn:
    """A text-protocol connection with a deadline on every read."""

    def __init__(self):
        self.s = socket.create_connection((HOST, PORT), timeout=5)
        self.buf = b""

    def ask(self, req, end):
        self.s.sendall(req)
        deadline = time.monotonic() + 5
        while not self.buf.endswith(end):
            if time.monotonic() > deadline:
                raise AssertionError("no reply to %r" % req)
            chunk = self.s.recv(65536)
            if not chunk:
                raise AssertionError("closed after %r" % req)
            self.buf += chunk
        out, self.buf = self.buf, b""
        return out

    def expect(self, req, reply):
        got = self.ask(req, reply[-2:] if reply.endswith(b"\r\n") else reply)
        if got != reply:
            raise AssertionError("%r: got %r, expected %r" % (req, got, reply))

    def stats(self, sub=b""):
        req = b"stats " + sub + b"\r\n" if sub else b"stats\r\n"
        text = self.ask(req, b"END\r\n").decode()
        out = {}
        for line in text.splitlines():
            parts = line.split(" ", 2)
            if len(parts) == 3 and parts[0] == "STAT":
                out[parts[1]] = parts[2]
        return out

    def close(self):
        self.s.close()


def free_port():
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    port = s.getsockname()[1]
    s.close()
    return port


def parse_exposition(text):
    """{"name{labels}": value} for every sample line."""
    samples = {}
    for line in text.splitlines():
        if not line or line.startswith("#"):
            continue
        key, _, value = line.rpartition(" ")
        samples[key] = float(value)
    return samples


def get(url):
    with urllib.request.urlopen(url, timeout=5) as r:
        return r.read().decode()


def scrape(url):
    """Polls `url` until it answers (the exporter is starting)."""
    deadline = time.monotonic() + DEADLINE_S
    last = None
    while time.monotonic() < deadline:
        try:
            return get(url)
        except OSError as e:
            last = e
            time.sleep(0.05)
    raise AssertionError("no answer from %s: %s" % (url, last))


def known_operations(c):
    for key, value in ((b"k1", b"a"), (b"k2", b"bb"), (b"k3", b"ccc"),
                       (b"n", b"5")):
        c.expect(b"set %s 0 0 %d\r\n%s\r\n" % (key, len(value), value),
                 b"STORED\r\n")
    c.expect(b"get k1\r\n", b"VALUE k1 0 1\r\na\r\nEND\r\n")
    c.expect(b"get k2 k3\r\n",
             b"VALUE k2 0 2\r\nbb\r\nVALUE k3 0 3\r\nccc\r\nEND\r\n")
    c.expect(b"get nokey\r\n", b"END\r\n")
    reply = c.ask(b"gets k1\r\n", b"END\r\n").decode()
    cas = int(reply.split("\r\n")[0].split(" ")[4])
    c.expect(b"cas k1 0 0 1 %d\r\nA\r\n" % cas, b"STORED\r\n")
    c.expect(b"cas k3 0 0 1 1\r\nC\r\n", b"EXISTS\r\n")
    c.expect(b"cas nokey 0 0 1 1\r\nx\r\n", b"NOT_FOUND\r\n")
    c.expect(b"delete k2\r\n", b"DELETED\r\n")
    c.expect(b"delete nokey\r\n", b"NOT_FOUND\r\n")
    c.expect(b"incr n 2\r\n", b"7\r\n")
    c.expect(b"decr nokey 1\r\n", b"NOT_FOUND\r\n")
    c.expect(b"touch k1 100\r\n", b"TOUCHED\r\n")
    c.expect(b"touch nokey 100\r\n", b"NOT_FOUND\r\n")


def main():
    if PORT == 0:
        skip("KURA_PORT not set: run under with_kurad (make check)")
    exporter = find_exporter()
    if exporter is None:
        skip("prometheus-memcached-exporter not installed "
             "(apt-get install prometheus-memcached-exporter)")

    c = Conn()
    known_operations(c)
    before = c.stats()

    eport = free_port()
    proc = subprocess.Popen(
        [exporter, "--memcached.address=%s:%d" % (HOST, PORT),
         "--web.listen-address=127.0.0.1:%d" % eport],
        stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
    try:
        text = scrape("http://127.0.0.1:%d/metrics" % eport)
        after = c.stats()
        settings = c.stats(b"settings")
        kurad_text = get("http://%s:%d/-/metrics" % (HOST, PORT))
    finally:
        proc.terminate()
        try:
            out, _ = proc.communicate(timeout=10)
        except subprocess.TimeoutExpired:
            proc.kill()
            out, _ = proc.communicate()
    c.close()

    m = parse_exposition(text)
    k = parse_exposition(kurad_text)
    failures = []

    def check(name, want, got_from=m, label="exporter"):
        got = got_from.get(name)
        if got is None or got != float(want):
            failures.append("%s: %s is %s, stats say %s" %
                            (label, name, got, want))

    def within(name, low, high):
        got = m.get(name)
        if got is None or not float(low) <= got <= float(high):
            failures.append("exporter: %s is %s, not in [%s, %s]" %
                            (name, got, low, high))

    check("memcached_up", 1)
    check("memcached_current_items", after["curr_items"])
    check("memcached_items_total", after["total_items"])
    check("memcached_current_bytes", after["bytes"])
    check("memcached_limit_bytes", after["limit_maxbytes"])
    check("memcached_max_connections", settings["maxconns"])
    check("memcached_items_evicted_total", after["evictions"])
    check("memcached_items_reclaimed_total", after["reclaimed"])
    check('memcached_version{version="%s"}' % after["version"], 1)
    within("memcached_current_connections", 1,
           int(after["curr_connections"]) + 1)
    within("memcached_connections_total", before["total_connections"],
           after["total_connections"])
    within("memcached_read_bytes_total", before["bytes_read"],
           after["bytes_read"])
    within("memcached_uptime_seconds", before["uptime"], after["uptime"])

    cas = sum(int(after[f]) for f in ("cas_hits", "cas_misses", "cas_badval"))
    commands = {
        ("set", "hit"): int(after["cmd_set"]) - cas,
        ("flush", "hit"): after["cmd_flush"],
        ("cas", "badval"): after["cas_badval"],
    }
    for op in ("get", "delete", "incr", "decr", "cas", "touch"):
        commands[(op, "hit")] = after[op + "_hits"]
        commands[(op, "miss")] = after[op + "_misses"]
    for (command, status), want in commands.items():
        name = ('memcached_commands_total{command="%s",status="%s"}' %
                (command, status))
        check(name, want)
        check(name, want, k, "kurad /-/metrics")

    # What the operations imply, whatever stats say.
    implied = {("set", "hit"): 4, ("get", "hit"): 4, ("get", "miss"): 1,
               ("cas", "hit"): 1, ("cas", "badval"): 1, ("cas", "miss"): 1,
               ("delete", "hit"): 1, ("delete", "miss"): 1,
               ("incr", "hit"): 1, ("decr", "miss"): 1,
               ("touch", "hit"): 1, ("touch", "miss"): 1}
    for (command, status), want in implied.items():
        check('memcached_commands_total{command="%s",status="%s"}' %
              (command, status), want)

    # kurad's endpoint and the exporter agree on the figures no request
    # between the two scrapes changes.
    for name in ("memcached_current_items", "memcached_items_total",
                 "memcached_current_bytes", "memcached_limit_bytes",
                 "memcached_items_evicted_total",
                 'memcached_version{version="%s"}' % after["version"]):
        check(name, m.get(name), k, "kurad /-/metrics")

    if failures:
        print("exporter output:\n" + out.decode(errors="replace")[-2000:])
        print("exporter metrics:\n" + "\n".join(
            "%s %s" % kv for kv in sorted(m.items())
            if kv[0].startswith("memcached_") and "slab" not in kv[0]))
        for f in failures:
            print("FAIL: " + f)
        return 1
    print("memcached exporter: %d samples, all as stats say" % len(m))
    return 0


if __name__ == "__main__":
    sys.exit(main())
