#!/usr/bin/python3
"""pylibmc (libmemcached) in binary mode over a master/master pair, with
the failover settings of doc/failover.md: kill -9 of one server under
load, writes go on through the other, the server comes back, nothing
acknowledged is lost.

    pylibmc_failover_test.py

Two clients run side by side on the same pair: pylibmc alone (its errors
are what an application sees, and are measured) and the same client
behind a two-line retry in the application, which must see none. Run under
with_kurad like the other client scripts, it ignores that daemon and starts
a pair of its own ($KURA_BIN; `kura verify` from $KURA_TOOL). Exits 1 if a
check failed, 77 if pylibmc (python3-pylibmc) is missing.
"""
import os
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

try:
    import pylibmc
except ImportError:
    print("SKIP: pylibmc is not installed (Debian python3-pylibmc)")
    sys.exit(77)

from kura_pair import Load, run_failover  # noqa: E402

DEAD_TIMEOUT = 3  # seconds before an ejected server is tried again

# The behaviours doc/failover.md gives, with a short dead_timeout so that
# the test sees the client come back.
BEHAVIORS = {
    "ketama": True,          # consistent hashing: ejection moves only the
                             # dead server's keys, and ejection needs it
    "remove_failed": 1,      # eject a server after 1 failure...
    "failure_limit": 1,      # ...(both spellings of the limit)
    "retry_timeout": 1,      # seconds a failed server is skipped before
                             # it is marked dead
    "dead_timeout": DEAD_TIMEOUT,  # seconds an ejected server stays out
    "connect_timeout": 500,  # ms
    "send_timeout": 2000000,     # us
    "receive_timeout": 2000000,  # us
    "tcp_nodelay": True,
}


def client(ports):
    return pylibmc.Client(["127.0.0.1:%d" % p for p in ports], binary=True,
                          behaviors=dict(BEHAVIORS))


class Ops:
    """attempts > 1 is the application's retry: libmemcached answers a
    request on a server that just died with up to three errors in a row
    (the reset connection, the refused reconnect, SERVER IS MARKED DEAD)
    before it ejects the server, so the retry allows five attempts with a
    short pause doubling from 10 ms (150 ms in all)."""

    def __init__(self, mc, attempts=1, pause=0.01):
        self.mc = mc
        self.attempts = attempts
        self.pause = pause
        self.retries = 0

    def _do(self, fn, *args):
        for attempt in range(self.attempts):
            try:
                return fn(*args)
            except pylibmc.Error:
                if attempt == self.attempts - 1:
                    raise
                self.retries += 1
                time.sleep(self.pause * (1 << attempt))

    def set(self, key, value):
        return bool(self._do(self.mc.set, key, value))

    def get(self, key):
        return self._do(self.mc.get, key)


def loads(ports):
    return [Load("pylibmc", 0, Ops(client(ports))),
            Load("pylibmc+retry", 1, Ops(client(ports), attempts=5))]


def main():
    print("pylibmc %s, libmemcached %s" % (pylibmc.__version__,
                                          pylibmc.libmemcached_version))
    return run_failover(
        "pylibmc binary, %s" % " ".join("%s=%s" % kv for kv in
                                        sorted(BEHAVIORS.items())),
        loads, lambda ld, key: ld.ops.get(key),
        back_after=DEAD_TIMEOUT + 1, zero_errors=("pylibmc+retry",),
        max_error_s=0.5)


if __name__ == "__main__":
    sys.exit(main())
