#!/usr/bin/python3
"""pylibmc (libmemcached) in binary mode against the server, with the
behaviours users set: tcp_nodelay and ketama (and cas, which gets needs).

    pylibmc_binary_test.py [--host H] [--port P] [--mode binary|text]

The address comes from KURA_HOST and KURA_PORT (set by with_kurad) unless
given. If KURA_SASL_USER and KURA_SASL_PASS are set (or --sasl-user and
--sasl-pass), the client authenticates with SASL PLAIN (binary only).
Prints one line per check and "N passed, N failed"; exits 1 if a check
failed, 77 if pylibmc (Debian python3-pylibmc) is not installed. The wait
for a TTL to pass on the server's clock polls against a deadline.
"""
import argparse
import os
import sys
import time

try:
    import pylibmc
except ImportError:
    print("SKIP: pylibmc is not installed (Debian package python3-pylibmc)")
    sys.exit(77)


def parse_args():
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--host", default=os.environ.get("KURA_HOST", "127.0.0.1"))
    p.add_argument("--port", type=int,
                   default=int(os.environ.get("KURA_PORT", "0") or 0))
    p.add_argument("--mode", choices=("binary", "text"), default="binary")
    p.add_argument("--sasl-user", default=os.environ.get("KURA_SASL_USER"))
    p.add_argument("--sasl-pass", default=os.environ.get("KURA_SASL_PASS"))
    a = p.parse_args()
    if not a.port:
        p.error("no server: set KURA_HOST/KURA_PORT or give --host/--port")
    return a


class Checks:
    def __init__(self):
        self.passed = 0
        self.failed = 0

    def run(self, name, fn):
        try:
            fn()
        except Exception as e:  # a failed assert or a client error
            self.failed += 1
            print("FAIL %s: %s: %s" % (name, type(e).__name__, e))
        else:
            self.passed += 1
            print("PASS %s" % name)
        sys.stdout.flush()


def expect(cond, what):
    if not cond:
        raise AssertionError(what)


def refused(fn, *args):
    """True if a store was refused: libmemcached returns False, or raises
    NotFound / DataExists in binary mode (replace of a missing key is
    KEY_ENOENT there, add of an existing one KEY_EEXISTS)."""
    try:
        return not fn(*args)
    except (pylibmc.NotFound, pylibmc.DataExists):
        return True


def main():
    a = parse_args()
    binary = a.mode == "binary"
    kw = {}
    if a.sasl_user and a.sasl_pass:
        if not binary:
            print("SKIP: SASL needs the binary protocol")
            return 77
        kw = {"username": a.sasl_user, "password": a.sasl_pass}
    mc = pylibmc.Client(["%s:%d" % (a.host, a.port)], binary=binary,
                        behaviors={"tcp_nodelay": True, "ketama": True,
                                   "cas": True, "connect_timeout": 5000,
                                   "receive_timeout": 5000000,
                                   "send_timeout": 5000000}, **kw)
    p = "pylibmc:%s:" % a.mode
    print("pylibmc %s, libmemcached %s, %s protocol, %s:%d%s" % (
        pylibmc.__version__, pylibmc.libmemcached_version, a.mode, a.host,
        a.port, " (SASL %s)" % a.sasl_user if kw else ""))
    c = Checks()

    def set_get():
        mc.delete(p + "k")
        expect(mc.get(p + "k") is None, "a deleted key reads as None")
        expect(mc.set(p + "k", "hello"), "set returned false")
        expect(mc.get(p + "k") == "hello", "get after set")
        expect(mc.set(p + "k", b"\x00\xffraw"), "set bytes")
        expect(mc.get(p + "k") == b"\x00\xffraw", "bytes round trip")
        expect(mc.set(p + "k", 12345), "set int")
        expect(mc.get(p + "k") == 12345, "int round trip (flags)")

    def serialised():
        obj = {"user": 42, "roles": ["admin", "dev"], "ratio": 0.5,
               "nested": {"t": (1, 2), "none": None}, "text": "ünï"}
        expect(mc.set(p + "obj", obj), "set dict")
        expect(mc.get(p + "obj") == obj, "the dict read back differs")
        arr = [1, "two", 3.0, [4]]
        expect(mc.set(p + "arr", arr), "set list")
        expect(mc.get(p + "arr") == arr, "the list read back differs")

    def add_replace():
        mc.delete(p + "ar")
        expect(refused(mc.replace, p + "ar", "x"), "replace of a missing key")
        expect(mc.add(p + "ar", "first"), "add of a missing key")
        expect(refused(mc.add, p + "ar", "second"), "add of an existing key")
        expect(mc.get(p + "ar") == "first", "add changed the value")
        expect(mc.replace(p + "ar", "third"), "replace of an existing key")
        expect(mc.get(p + "ar") == "third", "replace did not store")

    def cas():
        mc.set(p + "cas", "v1")
        v, token = mc.gets(p + "cas")
        expect(v == "v1" and token, "gets returned %r, %r" % (v, token))
        expect(mc.cas(p + "cas", "v2", token), "cas with a fresh token")
        expect(refused(mc.cas, p + "cas", "v3", token),
               "cas with a stale token succeeded")
        expect(mc.get(p + "cas") == "v2", "the conflicting cas stored")

    def incr_decr():
        mc.set(p + "n", "10")
        expect(mc.incr(p + "n", 5) == 15, "incr")
        expect(mc.decr(p + "n", 3) == 12, "decr")
        expect(mc.decr(p + "n", 100) == 0, "decr floors at 0")
        expect(mc.incr(p + "n") == 1, "incr by 1")
        mc.delete(p + "nx")
        try:
            mc.incr(p + "nx", 1)
        except pylibmc.NotFound:
            pass
        else:
            raise AssertionError("incr of a missing key did not fail")

    def delete():
        mc.set(p + "d", "x")
        expect(mc.delete(p + "d"), "delete of an existing key")
        expect(mc.get(p + "d") is None, "the key is still there")
        expect(not mc.delete(p + "d"), "delete of a missing key")

    def multi_get():
        data = {p + "m%03d" % i: "value-%d" % i for i in range(100)}
        failed = mc.set_multi(data)
        expect(not failed, "set_multi failed for %s" % failed)
        got = mc.get_multi(list(data) + [p + "m-missing"])
        expect(got == data, "get_multi returned %d of 100 keys, %d equal" % (
            len(got), sum(1 for k in data if got.get(k) == data[k])))

    def big_value():
        v = bytes(range(256)) * 2000  # 512,000 bytes
        expect(mc.set(p + "big", v), "set of 500 KB")
        expect(mc.get(p + "big") == v, "the 500 KB value read back differs")

    def ttl_and_touch():
        expect(mc.set(p + "ttl", "short", time=3), "set with a TTL")
        expect(mc.set(p + "touch", "kept", time=3), "set with a TTL")
        expect(mc.get(p + "ttl") == "short", "the item is there at once")
        expect(mc.touch(p + "touch", 100), "touch")
        # poll until the shared TTL has passed on the server's clock
        deadline = time.monotonic() + 15
        while mc.get(p + "ttl") is not None and time.monotonic() < deadline:
            time.sleep(0.1)
        results["ttl"] = mc.get(p + "ttl")
        results["touch"] = mc.get(p + "touch")

    results = {}
    c.run("set/get", set_get)
    c.run("serialised object (flags)", serialised)
    c.run("add/replace", add_replace)
    c.run("cas", cas)
    c.run("incr/decr (floor at 0)", incr_decr)
    def issue_28_utf8_key_with_spaces():
        # pylibmc's own tests/test_client.py::test_utf8_encoding: a binary
        # key may hold spaces; the text protocol cannot name it.
        if not binary:
            return
        k = ("a key with a replacement character \ufffd and something "
             "non-BMP \U0001f4a3")
        expect(mc.set(k, 0), "set of a key with spaces")
        expect(mc.get(k.encode("utf-8")) == 0,
               "get of a key with spaces returned %r" % mc.get(k))
        expect(mc.set("a key with spaces", 7), "set")
        expect(mc.get("a key with spaces") == 7, "get")
        expect(mc.get_multi(["a key with spaces", p + "k"]) ==
               {"a key with spaces": 7, p + "k": 12345},
               "get_multi of a key with spaces")

    c.run("delete", delete)
    c.run("100-key multi-get", multi_get)
    c.run("500 KB value", big_value)
    try:
        ttl_and_touch()
    except Exception as e:
        results["error"] = "%s: %s" % (type(e).__name__, e)

    def ttl():
        expect("error" not in results, results.get("error"))
        expect(results["ttl"] is None, "still there after its TTL")

    def touch():
        expect("error" not in results, results.get("error"))
        expect(results["touch"] == "kept", "touch did not extend the TTL")

    c.run("TTL expiry", ttl)
    if binary:
        c.run("issue 28: a binary key with spaces (test_utf8_encoding)",
              issue_28_utf8_key_with_spaces)
    c.run("touch extends the TTL", touch)
    print("%d passed, %d failed" % (c.passed, c.failed))
    return 1 if c.failed else 0


if __name__ == "__main__":
    sys.exit(main())
