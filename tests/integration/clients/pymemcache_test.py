"""pymemcache against kurad: pickle serialisation (which depends on the
flags round-trip), cas, touch, TTL expiry, and the multi-key calls.

Run under with_kurad, which provides KURA_HOST and KURA_PORT. Every wait
polls with a deadline.
"""
import os
import sys
import time
import unittest

from pymemcache import serde
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


class PymemcacheTest(unittest.TestCase):
    def setUp(self):
        self.c = Client((HOST, PORT), serde=serde.pickle_serde,
                        connect_timeout=5, timeout=5)

    def tearDown(self):
        self.c.close()

    def test_pickle_roundtrip_uses_flags(self):
        values = {
            "str": "session ünïcode",
            "bytes": b"\x00\x01raw",
            "int": 12345678901234,
            "dict": {"user": 42, "roles": ["a", "b"]},
            "list": [1, 2.5, None, True],
        }
        for k, v in values.items():
            self.assertTrue(self.c.set("py:" + k, v))
        for k, v in values.items():
            self.assertEqual(self.c.get("py:" + k), v)
        got = self.c.get_many(["py:" + k for k in values])
        self.assertEqual({k[3:]: v for k, v in got.items()}, values)

    def test_cas(self):
        self.c.set("py:cas", {"n": 1})
        value, token = self.c.gets("py:cas")
        self.assertEqual(value, {"n": 1})
        self.assertTrue(self.c.cas("py:cas", {"n": 2}, token))
        self.assertFalse(self.c.cas("py:cas", {"n": 3}, token))
        self.assertEqual(self.c.get("py:cas"), {"n": 2})
        self.assertIsNone(self.c.cas("py:missing", 1, b"1"))

    def test_touch_and_ttl(self):
        self.c.set("py:ttl", "short", expire=3)
        self.assertEqual(self.c.get("py:ttl"), "short")
        self.assertTrue(wait_for(lambda: self.c.get("py:ttl") is None, 15))

        self.c.set("py:touch", "kept", expire=3)
        self.c.set("py:ttl2", "short", expire=3)
        self.assertTrue(self.c.touch("py:touch", expire=100, noreply=False))
        # past the original TTL (py:ttl2 shared it): the touch must hold
        self.assertTrue(wait_for(lambda: self.c.get("py:ttl2") is None, 15))
        self.assertEqual(self.c.get("py:touch"), "kept")
        self.assertFalse(self.c.touch("py:nope", expire=10, noreply=False))

    def test_add_replace_delete_incr(self):
        self.c.delete("py:n")
        self.assertTrue(self.c.add("py:n", "5", noreply=False))
        self.assertFalse(self.c.add("py:n", "6", noreply=False))
        self.assertTrue(self.c.replace("py:n", "7", noreply=False))
        self.assertEqual(self.c.incr("py:n", 3), 10)
        self.assertEqual(self.c.decr("py:n", 20), 0)
        self.assertTrue(self.c.delete("py:n", noreply=False))
        self.assertFalse(self.c.delete("py:n", noreply=False))
        self.assertIsNone(self.c.incr("py:n", 1))

    def test_stats_and_version(self):
        stats = self.c.stats()
        self.assertIn(b"curr_connections", stats)
        self.assertTrue(self.c.version().startswith(b"1.6"))


if __name__ == "__main__":
    result = unittest.main(exit=False, verbosity=2).result
    sys.exit(0 if result.wasSuccessful() else 1)
