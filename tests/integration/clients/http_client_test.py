"""Python's http.client against kurad's HTTP interface: documents by URL,
every status the interface gives, conditional requests, TTL, keep-alive
and pipelining, chunked bodies and 100-continue, and records crossing
between HTTP and the memcached protocol (pymemcache) both ways.

Run under with_kurad, which provides KURA_HOST and KURA_PORT. Every wait
polls with a deadline.
"""
import http.client
import json
import os
import re
import socket
import time
import unittest

from pymemcache.client.base import Client

HOST = os.environ["KURA_HOST"]
PORT = int(os.environ["KURA_PORT"])


def wait_for(cond, timeout):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if cond():
            return True
        time.sleep(0.05)
    return cond()


def raw_exchange(data, timeout=5.0):
    """Sends `data` on a fresh connection and reads until the server
    closes it or `timeout` passes. Returns the bytes read."""
    s = socket.create_connection((HOST, PORT), timeout=timeout)
    try:
        s.sendall(data)
        out = b""
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            try:
                chunk = s.recv(65536)
            except socket.timeout:
                break
            if not chunk:
                break
            out += chunk
        return out
    finally:
        s.close()


class HttpTest(unittest.TestCase):
    def setUp(self):
        self.c = http.client.HTTPConnection(HOST, PORT, timeout=5)
        self.prefix = "/t/%s/" % self._testMethodName

    def tearDown(self):
        self.c.close()

    def req(self, method, path, body=None, headers=None):
        self.c.request(method, path, body=body, headers=headers or {})
        r = self.c.getresponse()
        data = r.read()
        return r, data

    def test_put_get_delete_json(self):
        key = self.prefix + "user/1"
        doc = {"id": 1, "name": "kura", "tags": ["a", "b"]}
        body = json.dumps(doc).encode()
        hdr = {"Content-Type": "application/json"}
        r, _ = self.req("PUT", key, body, hdr)
        self.assertEqual(r.status, 201)
        etag1 = r.getheader("ETag")
        self.assertRegex(etag1, r'^"[0-9a-f]{16}"$')
        r, data = self.req("GET", key)
        self.assertEqual(r.status, 200)
        self.assertEqual(json.loads(data), doc)
        self.assertEqual(r.getheader("Content-Type"), "application/json")
        self.assertEqual(r.getheader("ETag"), etag1)
        # POST overwrites (an upsert): replaced is 204, with a new ETag.
        r, _ = self.req("POST", key, b'{"id":2}', hdr)
        self.assertEqual(r.status, 204)
        self.assertNotEqual(r.getheader("ETag"), etag1)
        r, data = self.req("GET", key)
        self.assertEqual(data, b'{"id":2}')
        # HEAD: the headers of GET, no body.
        r, data = self.req("HEAD", key)
        self.assertEqual(r.status, 200)
        self.assertEqual(r.getheader("Content-Length"), "8")
        self.assertEqual(data, b"")
        r, _ = self.req("DELETE", key)
        self.assertEqual(r.status, 204)
        r, _ = self.req("DELETE", key)
        self.assertEqual(r.status, 404)
        r, data = self.req("GET", key)
        self.assertEqual(r.status, 404)
        self.assertEqual(json.loads(data)["error"], "Not Found")

    def test_content_types_kept(self):
        key = self.prefix + "page"
        r, _ = self.req("PUT", key, b"<p>hi</p>",
                        {"Content-Type": "text/html; charset=utf-8"})
        self.assertEqual(r.status, 201)
        r, data = self.req("GET", key)
        self.assertEqual(r.getheader("Content-Type"),
                         "text/html; charset=utf-8")
        self.assertEqual(data, b"<p>hi</p>")
        # No type given: served as octet-stream.
        self.req("PUT", key + "2", b"\x00\x01")
        r, data = self.req("GET", key + "2")
        self.assertEqual(r.getheader("Content-Type"),
                         "application/octet-stream")
        self.assertEqual(data, b"\x00\x01")

    def test_invalid_json_is_400_and_not_stored(self):
        key = self.prefix + "bad"
        for ctype in ("application/json", "application/vnd.x+json"):
            r, data = self.req("PUT", key, b'{"a": [1, 2,}',
                               {"Content-Type": ctype})
            self.assertEqual(r.status, 400)
            err = json.loads(data)
            self.assertIn("invalid JSON", err["reason"])
            self.assertIsInstance(err["offset"], int)
            r, _ = self.req("GET", key)
            self.assertEqual(r.status, 404)
        # Not JSON by type: stored as it is.
        r, _ = self.req("PUT", key, b'{"a": [1, 2,}',
                        {"Content-Type": "text/plain"})
        self.assertEqual(r.status, 201)

    def test_conditional_requests(self):
        key = self.prefix + "doc"
        hdr = {"Content-Type": "application/json"}
        # If-None-Match: * on PUT is create-only.
        r, _ = self.req("PUT", key, b"1", dict(hdr, **{"If-None-Match": "*"}))
        self.assertEqual(r.status, 201)
        etag = r.getheader("ETag")
        r, _ = self.req("PUT", key, b"2", dict(hdr, **{"If-None-Match": "*"}))
        self.assertEqual(r.status, 412)
        # If-Match with a stale tag fails; with the current one succeeds.
        r, _ = self.req("PUT", key, b"3",
                        dict(hdr, **{"If-Match": '"0000000000000001"'}))
        self.assertEqual(r.status, 412)
        r, _ = self.req("PUT", key, b"3", dict(hdr, **{"If-Match": etag}))
        self.assertEqual(r.status, 204)
        etag3 = r.getheader("ETag")
        # GET with If-None-Match of the current tag: 304, no body.
        r, data = self.req("GET", key, headers={"If-None-Match": etag3})
        self.assertEqual(r.status, 304)
        self.assertEqual(data, b"")
        self.assertEqual(r.getheader("ETag"), etag3)
        r, data = self.req("GET", key, headers={"If-None-Match": etag})
        self.assertEqual(r.status, 200)
        self.assertEqual(data, b"3")
        # GET and DELETE with If-Match.
        r, _ = self.req("GET", key, headers={"If-Match": etag})
        self.assertEqual(r.status, 412)
        r, _ = self.req("DELETE", key, headers={"If-Match": etag})
        self.assertEqual(r.status, 412)
        r, _ = self.req("DELETE", key, headers={"If-Match": "W/" + etag3})
        self.assertEqual(r.status, 204)
        # If-Match: * needs the record to exist.
        r, _ = self.req("PUT", key, b"4", dict(hdr, **{"If-Match": "*"}))
        self.assertEqual(r.status, 412)

    def test_exptime_header(self):
        key = self.prefix + "session"
        r, _ = self.req("PUT", key, b"s", {"Kura-Exptime": "1"})
        self.assertEqual(r.status, 201)
        r, _ = self.req("PUT", key + "-long", b"s", {"Kura-Exptime": "3600"})
        self.assertEqual(r.status, 201)
        self.assertTrue(wait_for(lambda: self.req("GET", key)[0].status == 404,
                                 5.0))
        self.assertEqual(self.req("GET", key + "-long")[0].status, 200)
        # Negative: expired at once, as memcached's exptime rules say.
        r, _ = self.req("PUT", key + "-neg", b"s", {"Kura-Exptime": "-1"})
        self.assertEqual(self.req("GET", key + "-neg")[0].status, 404)
        r, _ = self.req("PUT", key, b"s", {"Kura-Exptime": "soon"})
        self.assertEqual(r.status, 400)

    def test_keep_alive_many_requests_one_connection(self):
        for i in range(200):
            r, _ = self.req("PUT", self.prefix + str(i), b"v%d" % i)
            self.assertIn(r.status, (201, 204))
        for i in range(200):
            r, data = self.req("GET", self.prefix + str(i))
            self.assertEqual(data, b"v%d" % i)
        # One connection served all of them.
        self.assertIsNotNone(self.c.sock)

    def test_pipelining_answers_in_order(self):
        reqs = b""
        for i in range(50):
            body = b'{"n":%d}' % i
            reqs += (b"PUT %sp%d HTTP/1.1\r\nHost: x\r\nContent-Type: "
                     b"application/json\r\nContent-Length: %d\r\n\r\n%s"
                     % (self.prefix.encode(), i, len(body), body))
        for i in range(50):
            reqs += b"GET %sp%d HTTP/1.1\r\nHost: x\r\n\r\n" % (
                self.prefix.encode(), i)
        reqs += b"GET /-/health HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n"
        out = raw_exchange(reqs)
        statuses = [int(m) for m in re.findall(rb"HTTP/1\.1 (\d{3}) ", out)]
        self.assertEqual(statuses, [201] * 50 + [200] * 50 + [200])
        for i in range(50):
            self.assertIn(b'{"n":%d}' % i, out)
        self.assertLess(out.index(b'{"n":3}'), out.index(b'{"n":4}'))

    def test_chunked_body_and_expect_continue(self):
        key = self.prefix + "chunked"

        def gen():
            yield b'{"parts":'
            yield b'[1,2,3]'
            yield b'}'
        self.c.request("PUT", key, body=gen(), encode_chunked=True,
                       headers={"Content-Type": "application/json"})
        r = self.c.getresponse()
        r.read()
        self.assertEqual(r.status, 201)
        self.assertEqual(self.req("GET", key)[1], b'{"parts":[1,2,3]}')
        # Expect: 100-continue: the interim answer comes before the body.
        s = socket.create_connection((HOST, PORT), timeout=5)
        s.sendall(b"PUT %s HTTP/1.1\r\nHost: x\r\nExpect: 100-continue\r\n"
                  b"Content-Length: 5\r\n\r\n" % key.encode())
        got = b""
        while b"\r\n\r\n" not in got:
            got += s.recv(4096)
        self.assertTrue(got.startswith(b"HTTP/1.1 100 Continue\r\n\r\n"))
        s.sendall(b"hello")
        got = got[len(b"HTTP/1.1 100 Continue\r\n\r\n"):]
        while b"\r\n\r\n" not in got:
            got += s.recv(4096)
        self.assertTrue(got.startswith(b"HTTP/1.1 204 "))
        s.close()

    def test_every_refusal_status(self):
        cases = [
            (b"GET /a%20b HTTP/1.1\r\nHost: x\r\n\r\n", 400),
            (b"GET /k HTTP/1.1\r\n\r\n", 400),
            (b"OPTIONS /k HTTP/1.1\r\nHost: x\r\n\r\n", 405),
            (b"BREW /k HTTP/1.1\r\nHost: x\r\n\r\n", 501),
            (b"GET /k HTTP/2.0\r\nHost: x\r\n\r\n", 505),
            (b"PUT /k HTTP/1.1\r\nHost: x\r\nContent-Length: 2000000\r\n\r\n",
             413),
            (b"GET /" + b"k" * 300 + b" HTTP/1.1\r\nHost: x\r\n\r\n", 414),
            (b"GET /k HTTP/1.1\r\nHost: x\r\nX: " + b"v" * 9000 +
             b"\r\n\r\n", 431),
            (b"PUT /k HTTP/1.1\r\nHost: x\r\nExpect: tea\r\n\r\n", 417),
            (b"PUT /-/health HTTP/1.1\r\nHost: x\r\n\r\n", 405),
            (b"GET /-/nothing HTTP/1.1\r\nHost: x\r\n\r\n", 404),
        ]
        for req, status in cases:
            out = raw_exchange(req)
            self.assertTrue(out.startswith(b"HTTP/1.1 %d " % status),
                            "%r -> %r" % (req[:40], out[:60]))
            if status not in (404, 405):
                # A malformed request's connection is closed after it.
                self.assertIn(b"Connection: close\r\n", out)

    def test_health_and_metrics(self):
        r, data = self.req("GET", "/-/health")
        self.assertEqual(r.status, 200)
        self.assertEqual(json.loads(data)["status"], "ok")
        self.req("PUT", self.prefix + "m", b"x")
        r, data = self.req("GET", "/-/metrics")
        self.assertEqual(r.status, 200)
        self.assertTrue(r.getheader("Content-Type").startswith("text/plain"))
        text = data.decode()
        # Prometheus text format: every sample line is "name value".
        names = set()
        for line in text.splitlines():
            if not line or line.startswith("#"):
                continue
            name, value = line.rsplit(" ", 1)
            float(value)
            names.add(name.split("{")[0])
        self.assertTrue(any(n.startswith("kura_") for n in names))
        self.assertTrue(any("ulog" in n for n in names), names)

    def test_crossing_protocols_both_ways(self):
        mc = Client((HOST, PORT), connect_timeout=5, timeout=5)
        try:
            key = self.prefix + "cross"
            # HTTP write, memcached read: the key is the path, flags 0.
            self.req("PUT", key, b'{"from":"http"}',
                     {"Content-Type": "application/json"})
            self.assertEqual(mc.get(key), b'{"from":"http"}')
            value, cas = mc.gets(key)
            r, _ = self.req("GET", key)
            self.assertEqual(r.getheader("ETag"), '"%016x"' % int(cas))
            # memcached write, HTTP read: no type was stored.
            mc.set(key + "2", b"plain", noreply=False)
            r, data = self.req("GET", key + "2")
            self.assertEqual(r.status, 200)
            self.assertEqual(data, b"plain")
            self.assertEqual(r.getheader("Content-Type"),
                             "application/octet-stream")
            # A memcached overwrite forgets the HTTP type; append keeps it.
            mc.append(key, b" ", noreply=False)
            r, data = self.req("GET", key)
            self.assertEqual(r.getheader("Content-Type"), "application/json")
            self.assertEqual(data, b'{"from":"http"} ')
            mc.set(key, b"x", noreply=False)
            r, _ = self.req("GET", key)
            self.assertEqual(r.getheader("Content-Type"),
                             "application/octet-stream")
            # Delete through either is seen by the other.
            self.assertTrue(mc.delete(key, noreply=False))
            self.assertEqual(self.req("GET", key)[0].status, 404)
            self.req("DELETE", key + "2")
            self.assertIsNone(mc.get(key + "2"))
        finally:
            mc.close()

    def test_garbage_costs_only_its_connection(self):
        out = raw_exchange(b"GET / HTTP/1.1\r\n\x00\xff\xfe garbage\r\n\r\n")
        self.assertTrue(out.startswith(b"HTTP/1.1 400 "))
        r, _ = self.req("GET", "/-/health")
        self.assertEqual(r.status, 200)


if __name__ == "__main__":
    unittest.main()
