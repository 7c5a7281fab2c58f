#!/usr/bin/python3
"""Ruby's Dalli (binary protocol) over a master/master pair, with the
failover settings of doc/failover.md: kill -9 of one server under load,
writes go on through the other, the server comes back, nothing
acknowledged is lost.

    dalli_failover_test.py

The load and the checks are kura_pair.py's; every request goes through a
real Dalli client in a Ruby process of its own (dalli_ops.rb), which does
the network I/O. Dalli retries a request on the next server of its ring by
itself when one fails (failover: true), so the application must see no
error at all. Run under with_kurad like the other client scripts, it
ignores that daemon and starts a pair of its own ($KURA_BIN; `kura verify`
from $KURA_TOOL). Exits 1 if a check failed, 77 if Ruby or Dalli (Debian
ruby-dalli) is missing.
"""
import os
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

from kura_pair import Load, run_failover  # noqa: E402

HERE = os.path.dirname(os.path.abspath(__file__))
RUBY = "/usr/bin/ruby"
DOWN_RETRY_DELAY = 3  # seconds before a down server is tried again


class DalliOps:
    """set/get through dalli_ops.rb. A reply "err ..." is raised as the
    error Dalli reported; the Ruby process's standard error (Dalli's
    warnings) is kept in a file and counted at the end."""

    def __init__(self, ports):
        self.stderr = tempfile.TemporaryFile(mode="w+")
        self.proc = subprocess.Popen(
            [RUBY, os.path.join(HERE, "dalli_ops.rb"), str(DOWN_RETRY_DELAY)]
            + ["127.0.0.1:%d" % p for p in ports],
            stdin=subprocess.PIPE, stdout=subprocess.PIPE,
            stderr=self.stderr, text=True, bufsize=1)
        first = self.proc.stdout.readline()
        if first.startswith("SKIP"):
            print(first.strip())
            sys.exit(77)
        if not first.startswith("ready"):
            raise RuntimeError("dalli_ops.rb did not start: %r" % first)
        self.version = first.split()[-1]

    def _ask(self, line):
        self.proc.stdin.write(line + "\n")
        reply = self.proc.stdout.readline().rstrip("\n")
        if not reply:
            raise RuntimeError("dalli_ops.rb exited")
        if reply.startswith("err "):
            raise RuntimeError(reply[4:])
        return reply

    def set(self, key, value):
        return self._ask("s %s %s" % (key, value)) == "ok"

    def get(self, key):
        reply = self._ask("g %s" % key)
        return reply[2:] if reply.startswith("v ") else None

    def warnings(self):
        self.stderr.seek(0)
        return [ln.rstrip() for ln in self.stderr if " -- : " in ln or
                ln.startswith(("W,", "E,"))]

    def close(self):
        self.proc.stdin.close()
        self.proc.wait(10)


OPS = []


def loads(ports):
    OPS.append(DalliOps(ports))
    print("dalli %s" % OPS[0].version)
    return [Load("dalli", 0, OPS[0])]


def main():
    if not os.access(RUBY, os.X_OK):
        print("SKIP: %s is missing (Debian package ruby)" % RUBY)
        return 77
    try:
        rc = run_failover(
            "dalli binary, failover: true socket_timeout: 2 "
            "socket_max_failures: 1 socket_failure_delay: 0.01 "
            "down_retry_delay: %d" % DOWN_RETRY_DELAY, loads,
            lambda ld, key: ld.ops.get(key),
            back_after=DOWN_RETRY_DELAY + 1, zero_errors=("dalli",))
    finally:
        for ops in OPS:
            w = ops.warnings()
            print("Dalli logged %d warnings (failures it retried "
                  "itself)%s" % (len(w), ":" if w else ""))
            for line in w[:4]:
                print("  " + line)
            ops.close()
    return rc


if __name__ == "__main__":
    sys.exit(main())
