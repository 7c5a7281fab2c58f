#!/usr/bin/python3
"""python-binary-memcached (bmemcached, pure Python, binary protocol only)
against the server.

    bmemcached_test.py [--host H] [--port P]

The address comes from KURA_HOST and KURA_PORT (set by with_kurad) unless
given. If KURA_SASL_USER and KURA_SASL_PASS are set (or --sasl-user and
--sasl-pass), the client authenticates with SASL PLAIN. Prints one line per
check and "N passed, N failed"; exits 1 if a check failed, 77 if the module
(Debian python3-binary-memcached) is not installed. The client has no
touch; its incr and decr create a missing counter with a default, which
the binary protocol's initial value carries. The wait for a TTL to pass
on the server's clock polls against a deadline.
"""
import argparse
import os
import sys
import time

try:
    import bmemcached
except ImportError:
    print("SKIP: bmemcached is not installed "
          "(Debian package python3-binary-memcached)")
    sys.exit(77)


def parse_args():
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--host", default=os.environ.get("KURA_HOST", "127.0.0.1"))
    p.add_argument("--port", type=int,
                   default=int(os.environ.get("KURA_PORT", "0") or 0))
    p.add_argument("--sasl-user", default=os.environ.get("KURA_SASL_USER"))
    p.add_argument("--sasl-pass", default=os.environ.get("KURA_SASL_PASS"))
    a = p.parse_args()
    if not a.port:
        p.error("no server: set KURA_HOST/KURA_PORT or give --host/--port")
    return a


def expect(cond, what):
    if not cond:
        raise AssertionError(what)


def main():
    a = parse_args()
    mc = bmemcached.Client(["%s:%d" % (a.host, a.port)],
                           username=a.sasl_user, password=a.sasl_pass,
                           socket_timeout=5)
    p = "bmemcached:"
    print("bmemcached against %s:%d%s" % (
        a.host, a.port, " (SASL %s)" % a.sasl_user if a.sasl_user else ""))
    passed = failed = 0

    def run(name, fn):
        nonlocal passed, failed
        try:
            fn()
        except Exception as e:  # a failed assert or a client error
            failed += 1
            print("FAIL %s: %s: %s" % (name, type(e).__name__, e))
        else:
            passed += 1
            print("PASS %s" % name)
        sys.stdout.flush()

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

    def add_replace():
        mc.delete(p + "ar")
        expect(not mc.replace(p + "ar", "x"), "replace of a missing key")
        expect(mc.add(p + "ar", "first"), "add of a missing key")
        expect(not mc.add(p + "ar", "second"), "add of an existing key")
        expect(mc.get(p + "ar") == "first", "add changed the value")
        expect(mc.replace(p + "ar", "third"), "replace of an existing key")
        expect(mc.get(p + "ar") == "third", "replace did not store")

    def cas():
        mc.set(p + "cas", "v1")
        v, token = mc.gets(p + "cas")
        expect(v == "v1" and token, "gets returned %r, %r" % (v, token))
        expect(mc.cas(p + "cas", "v2", token), "cas with a fresh token")
        expect(not mc.cas(p + "cas", "v3", token),
               "cas with a stale token succeeded")
        expect(mc.get(p + "cas") == "v2", "the conflicting cas stored")

    def incr_decr():
        mc.delete(p + "n")
        expect(mc.incr(p + "n", 5, default=10) == 10,
               "incr of a missing key creates it with the default")
        expect(mc.incr(p + "n", 5) == 15, "incr")
        expect(mc.decr(p + "n", 3) == 12, "decr")
        expect(mc.decr(p + "n", 100) == 0, "decr floors at 0")
        # the digits are rewritten in place: "12" becomes "0 "
        expect(str(mc.get(p + "n")).strip() == "0",
               "the counter reads back as 0")

    def delete():
        mc.set(p + "d", "x")
        expect(mc.delete(p + "d"), "delete of an existing key")
        expect(mc.get(p + "d") is None, "the key is still there")
        # (the client reports a missing key's delete as a success)

    def multi_get():
        data = {p + "m%03d" % i: "value-%d" % i for i in range(100)}
        # (set_multi of this client version fails on text keys)
        for k, v in data.items():
            expect(mc.set(k, v), "set of %s" % k)
        got = mc.get_multi(list(data) + [p + "m-missing"])
        expect(got == data, "get_multi returned %d of 100 keys, %d equal" % (
            len(got), sum(1 for k in data if got.get(k) == data[k])))

    def big_value():
        v = bytes(range(256)) * 2000  # 512,000 bytes
        expect(mc.set(p + "big", v), "set of 500 KB")
        expect(mc.get(p + "big") == v, "the 500 KB value read back differs")

    def ttl():
        expect(mc.set(p + "ttl", "short", time=3), "set with a TTL")
        expect(mc.get(p + "ttl") == "short", "the item is there at once")
        # poll until the TTL has passed on the server's clock
        deadline = time.monotonic() + 15
        while mc.get(p + "ttl") is not None and time.monotonic() < deadline:
            time.sleep(0.1)
        expect(mc.get(p + "ttl") is None, "still there 15 s after its TTL")

    def issue_28_key_with_spaces():
        # The client reads replies in order: a request answered twice
        # shifts every later reply onto the wrong request. Each reply is
        # checked, on one connection, in the order the issue saw them.
        expect(mc.set("alice", "ALICE-DATA"), "set alice")
        expect(mc.set("bob", "BOB-DATA"), "set bob")
        mc.delete("x y")
        expect(mc.get("x y") is None, "get of a missing 'x y'")
        expect(mc.get("bob") == "BOB-DATA", "get bob after 'x y'")
        expect(mc.get("alice") == "ALICE-DATA", "get alice after 'x y'")
        expect(mc.set("carol", "CAROL-DATA"), "set carol")
        expect(mc.get("carol") == "CAROL-DATA", "get carol")
        for k in ("x y", "a  b", " lead", "trail ", "tab\there",
                  "a key with spaces"):
            expect(mc.set(k, "V:" + k), "set of %r" % k)
            expect(mc.get(k) == "V:" + k, "get of %r" % k)
            expect(mc.get("alice") == "ALICE-DATA",
                   "get alice after %r" % k)
        expect(mc.delete("x y"), "delete of 'x y'")
        expect(mc.get("x y") is None, "'x y' is gone")
        expect(mc.get("bob") == "BOB-DATA", "get bob at the end")

    run("set/get", set_get)
    run("issue 28: keys with spaces, one reply each", issue_28_key_with_spaces)
    run("serialised object (flags)", serialised)
    run("add/replace", add_replace)
    run("cas", cas)
    run("incr/decr (initial value, floor at 0)", incr_decr)
    run("delete", delete)
    run("100-key multi-get", multi_get)
    run("500 KB value", big_value)
    run("TTL expiry", ttl)
    print("SKIP touch: the client has no touch")
    print("%d passed, %d failed" % (passed, failed))
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
