#!/usr/bin/python3
"""pymemcache's HashClient over a master/master pair, with the failover
settings of doc/failover.md: kill -9 of one server under load, writes go on
through the other, the server comes back, nothing acknowledged is lost.

    pymemcache_failover_test.py

Two clients run side by side on the same pair: the HashClient alone (its
errors are what an application sees, and are measured) and the same
HashClient inside pymemcache's RetryingClient, which must see none. Run
under with_kurad like the other client scripts, it ignores that daemon and
starts a pair of its own ($KURA_BIN; `kura verify` from $KURA_TOOL). Exits
1 if a check failed, 77 if pymemcache (python3-pymemcache) is missing.
"""
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

try:
    from pymemcache.client.hash import HashClient
    from pymemcache.client.retrying import RetryingClient
    from pymemcache.exceptions import MemcacheUnexpectedCloseError
except ImportError:
    print("SKIP: pymemcache is not installed (Debian python3-pymemcache)")
    sys.exit(77)

from kura_pair import Load, run_failover  # noqa: E402

DEAD_TIMEOUT = 3  # seconds before a dead server is tried again


def hash_client(ports):
    """The settings doc/failover.md gives, with a short dead_timeout so
    that the test sees the client come back."""
    return HashClient([("127.0.0.1", p) for p in ports],
                      retry_attempts=0,      # the first failure ejects
                      dead_timeout=DEAD_TIMEOUT,
                      ignore_exc=False,      # errors are raised, not misses
                      default_noreply=False,  # a set waits for STORED
                      connect_timeout=0.5, timeout=2)


class Ops:
    def __init__(self, client):
        self.c = client

    def set(self, key, value):
        return self.c.set(key, value, noreply=False) is True

    def get(self, key):
        v = self.c.get(key)
        return v.decode() if v is not None else None


def loads(ports):
    bare = Ops(hash_client(ports))
    retrying = Ops(RetryingClient(
        hash_client(ports), attempts=3, retry_delay=0,
        retry_for=(OSError, MemcacheUnexpectedCloseError)))
    return [Load("HashClient", 0, bare), Load("RetryingClient", 1, retrying)]


def main():
    return run_failover(
        "pymemcache HashClient, retry_attempts=0 dead_timeout=%d" %
        DEAD_TIMEOUT, loads, lambda ld, key: ld.ops.get(key),
        back_after=2 * DEAD_TIMEOUT, zero_errors=("RetryingClient",),
        max_error_s=0.5)


if __name__ == "__main__":
    sys.exit(main())
