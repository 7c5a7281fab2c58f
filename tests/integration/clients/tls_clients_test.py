"""Real clients over TLS against kurad's -tlsport, across a restart.

Two servers of its own (the with_kurad one is left alone), both with
certificates made for the run by tests/tls/make-certs:

- A: -tlsport, no client certificate asked: pymemcache (text,
  tls_context), Ruby Dalli (binary, ssl_context, dalli_tls.rb), curl
  (HTTPS, two requests on one keep-alive connection) and the project's
  own `kura` tool (bench, then verify of what it acknowledged).
- B: -tlsport with -tlsca and -auth: python-binary-memcached (binary and
  SASL) presenting a client certificate; one without a certificate is
  refused.

Each client writes (set, cas, delete), the servers restart (SIGTERM and
start), and each reads back what it wrote and goes on (get, cas, delete).
Every wait polls with a deadline.
"""
import os
import shutil
import signal
import socket
import ssl
import subprocess
import sys
import tempfile
import time
import unittest

from pymemcache import serde
from pymemcache.client.base import Client

HERE = os.path.dirname(os.path.abspath(__file__))
MAKE_CERTS = os.path.join(HERE, "..", "..", "tls", "make-certs")
KURA_BIN = os.environ.get("KURA_BIN", "")
KURA_TOOL = os.environ.get("KURA_TOOL", "")


def free_port():
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    port = s.getsockname()[1]
    s.close()
    return port


def wait_for(cond, timeout, step=0.02):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if cond():
            return True
        time.sleep(step)
    return cond()


def answers(port):
    try:
        with socket.create_connection(("127.0.0.1", port), timeout=1) as s:
            s.sendall(b"version\r\n")
            return s.recv(64).startswith(b"VERSION ")
    except OSError:
        return False


class Server:
    """One kurad with a TLS port, in a directory of its own."""

    def __init__(self, base, name, extra):
        self.dir = os.path.join(base, name)
        os.mkdir(self.dir)
        self.port = free_port()
        self.tls_port = free_port()
        self.args = [KURA_BIN, "-port", str(self.port), "-thnum", "2",
                     "-tlsport", str(self.tls_port),
                     "-log", os.path.join(self.dir, "kurad.log")] + extra + [
                         os.path.join(self.dir, "kura.tch")]
        self.proc = None

    def start(self):
        self.proc = subprocess.Popen(self.args, cwd=self.dir)
        if not wait_for(lambda: answers(self.port), 15):
            raise AssertionError("kurad did not start: " + self.log())

    def restart(self):
        self.proc.send_signal(signal.SIGTERM)
        self.proc.wait(timeout=30)
        self.start()

    def stop(self):
        if self.proc is not None and self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
            self.proc.wait(timeout=30)

    def log(self):
        with open(os.path.join(self.dir, "kurad.log")) as f:
            return f.read()


class TlsClientsTest(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.base = tempfile.mkdtemp(prefix="kura-tls-clients-")
        cls.certs = os.path.join(cls.base, "certs")
        subprocess.run([MAKE_CERTS, cls.certs], check=True)
        users = os.path.join(cls.base, "users")
        with open(users, "w") as f:
            f.write("app:tls-test-password\n")
        os.chmod(users, 0o600)
        tls = ["-tlscert", cls.cert("server.pem"),
               "-tlskey", cls.cert("server.key")]
        cls.a = Server(cls.base, "a", tls)
        cls.b = Server(cls.base, "b", tls + ["-tlsca", cls.cert("ca.pem"),
                                             "-auth", users])
        cls.a.start()
        cls.b.start()

    @classmethod
    def tearDownClass(cls):
        cls.a.stop()
        cls.b.stop()
        shutil.rmtree(cls.base, ignore_errors=True)

    @classmethod
    def cert(cls, name):
        return os.path.join(cls.certs, name)

    def context(self, client_cert=False):
        ctx = ssl.create_default_context(cafile=self.cert("ca.pem"))
        if client_cert:
            ctx.load_cert_chain(self.cert("client.pem"),
                                self.cert("client.key"))
        return ctx

    # ----------------------------------------------------------- clients

    def pymemcache(self):
        return Client(("127.0.0.1", self.a.tls_port),
                      serde=serde.pickle_serde, tls_context=self.context(),
                      connect_timeout=5, timeout=5)

    def bmemcached(self, client_cert=True):
        import bmemcached
        return bmemcached.Client(
            ["127.0.0.1:%d" % self.b.tls_port], "app", "tls-test-password",
            tls_context=self.context(client_cert), socket_timeout=5)

    def dalli(self, phase):
        r = subprocess.run(
            ["ruby", os.path.join(HERE, "dalli_tls.rb"), phase,
             "127.0.0.1:%d" % self.a.tls_port, self.cert("ca.pem")],
            capture_output=True, text=True, timeout=60)
        if r.returncode == 77:
            self.skipTest("no Dalli")
        self.assertEqual(r.returncode, 0, r.stdout + r.stderr)
        self.assertEqual(r.stdout.strip(), "ok")

    def curl(self, *requests):
        """Each request (method, path, body) in turn on one connection;
        returns [(status, new connections, body)]."""
        url = "https://127.0.0.1:%d" % self.a.tls_port
        args = ["curl", "--silent", "--show-error", "--max-time", "10"]
        outs = []
        for i, (method, path, body) in enumerate(requests):
            out = os.path.join(self.base, "curl%d" % i)
            outs.append(out)
            if i > 0:
                args.append("--next")
            args += ["--cacert", self.cert("ca.pem"), "-X", method,
                     "-o", out, "-w", "%{http_code} %{num_connects}\\n"]
            if body is not None:
                args += ["-H", "Content-Type: application/json",
                         "--data-binary", body]
            args.append(url + path)
        r = subprocess.run(args, capture_output=True, text=True, timeout=60)
        self.assertEqual(r.returncode, 0, r.stderr)
        result = []
        for line, out in zip(r.stdout.split("\n"), outs):
            code, connects = line.split()
            with open(out) as f:
                result.append((int(code), int(connects), f.read()))
        return result

    def kura(self, *args):
        r = subprocess.run([KURA_TOOL] + list(args) + [
            "--port", str(self.a.tls_port), "--tls",
            "--cacert", self.cert("ca.pem")],
            capture_output=True, text=True, timeout=120)
        self.assertEqual(r.returncode, 0, r.stdout + r.stderr)
        return r.stdout

    # ------------------------------------------------------------- test

    def test_clients_across_a_restart(self):
        # Writes through every client.
        c = self.pymemcache()
        self.assertTrue(c.set("py:obj", {"user": 42}))
        self.assertTrue(c.set("py:cas", "one"))
        value, token = c.gets("py:cas")
        self.assertTrue(c.cas("py:cas", "two", token))
        self.assertFalse(c.cas("py:cas", "three", token))
        self.assertTrue(c.set("py:gone", "x"))
        self.assertTrue(c.delete("py:gone", noreply=False))
        c.close()

        b = self.bmemcached()
        self.assertTrue(b.set("bm:k", "binary over TLS"))
        value, token = b.gets("bm:k")
        self.assertEqual(value, "binary over TLS")
        self.assertTrue(b.cas("bm:k", "cas over TLS", token))
        b.disconnect_all()
        with self.assertRaises(Exception):
            nocert = self.bmemcached(client_cert=False)
            if not nocert.set("bm:nocert", "x"):
                raise ssl.SSLError("refused")
        self.assertIn("peer did not return a certificate", self.b.log())

        self.dalli("write")

        res = self.curl(("PUT", "/tls/doc", '{"a": 1}'),
                        ("GET", "/tls/doc", None))
        self.assertTrue(200 <= res[0][0] < 300, res)
        self.assertEqual(res[1][0], 200)
        self.assertEqual(res[1][1], 0, "the GET did not reuse the connection")
        self.assertEqual(res[1][2], '{"a": 1}')

        ack = os.path.join(self.base, "ack")
        self.kura("bench", "--ops", "2000", "--conns", "4", "--own-keys",
                  "100", "--ack-log", ack)

        self.a.restart()
        self.b.restart()

        # Everything is there, and each client carries on.
        c = self.pymemcache()
        self.assertEqual(c.get("py:obj"), {"user": 42})
        value, token = c.gets("py:cas")
        self.assertEqual(value, "two")
        self.assertTrue(c.cas("py:cas", "four", token))
        self.assertEqual(c.get("py:cas"), "four")
        self.assertIsNone(c.get("py:gone"))
        self.assertTrue(c.delete("py:obj", noreply=False))
        c.close()

        b = self.bmemcached()
        self.assertEqual(b.get("bm:k"), "cas over TLS")
        self.assertTrue(b.delete("bm:k"))
        self.assertIsNone(b.get("bm:k"))
        b.disconnect_all()

        self.dalli("read")

        res = self.curl(("GET", "/tls/doc", None),
                        ("DELETE", "/tls/doc", None),
                        ("GET", "/tls/doc", None))
        self.assertEqual(res[0][0], 200)
        self.assertEqual(res[0][2], '{"a": 1}')
        self.assertTrue(200 <= res[1][0] < 300, res)
        self.assertEqual(res[2][0], 404)
        self.assertEqual([r[1] for r in res[1:]], [0, 0])

        out = self.kura("verify", "--ack-log", ack)
        self.assertIn(" 0 stale, 0 missing", out)


if __name__ == "__main__":
    if not KURA_BIN or not KURA_TOOL:
        print("SKIP: KURA_BIN and KURA_TOOL are set by make check")
        sys.exit(77)
    result = unittest.main(exit=False, verbosity=2).result
    sys.exit(0 if result.wasSuccessful() else 1)
