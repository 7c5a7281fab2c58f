#!/usr/bin/python3
"""tools/retune-pair under load: both databases of a live master/master
pair get a larger bnum, one server at a time, while pymemcache clients
with the failover settings of doc/failover.md keep writing and reading.

    retune_pair_test.py

The pair starts with bnum 1021 and 3,000 preloaded records (so both show
kura_db_over_bnum 1). Two loads run through the whole procedure: a
HashClient inside a RetryingClient (the recommended settings; it must see
0 errors) and the bare HashClient (its errors are counted and printed).
retune-pair stops, optimizes and restarts kurad 2 and then kurad 1,
holding after each restart until the clients have taken the server back.
Then: 0 acknowledged writes lost (kura verify on both servers, every
preloaded record on both), no read older than what was acknowledged
before it (during the retune, before it by more than a replication lag:
kura_pair.LAG_GRACE), both servers at the new bnum with
kura_db_over_bnum 0.
Runs under with_kurad like the other client scripts but starts a pair of
its own ($KURA_BIN, $KURA_TOOL). Exits 1 if a check failed, 77 if
pymemcache (python3-pymemcache) is missing.
"""
import os
import shlex
import shutil
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

try:
    from pymemcache.client.base import Client
    from pymemcache.client.hash import HashClient
    from pymemcache.client.retrying import RetryingClient
    from pymemcache.exceptions import MemcacheUnexpectedCloseError
except ImportError:
    print("SKIP: pymemcache is not installed (Debian python3-pymemcache)")
    sys.exit(77)

import kura_pair  # noqa: E402
from kura_pair import Load, Server, error_window, free_port, now, \
    stat_int, wait_for  # noqa: E402

HERE = os.path.dirname(os.path.abspath(__file__))
RETUNE = os.path.join(HERE, "..", "..", "..", "tools", "retune-pair")
DEAD_TIMEOUT = 2
HOLD = 2 * DEAD_TIMEOUT + 1  # HashClient may wait twice dead_timeout
OLD_BNUM = 1021
NEW_BNUM = 20011
PRELOAD = 3000


def hash_client(ports):
    return HashClient([("127.0.0.1", p) for p in ports], retry_attempts=0,
                      dead_timeout=DEAD_TIMEOUT, ignore_exc=False,
                      default_noreply=False, connect_timeout=0.5, timeout=2)


class Ops:
    def __init__(self, client):
        self.c = client

    def set(self, key, value):
        return self.c.set(key, value, noreply=False) is True

    def get(self, key):
        v = self.c.get(key)
        return v.decode() if v is not None else None


def start_cmd(s, spec):
    argv = s.argv()[:-1] + ["-dmn", "-pid", s.pid, spec]
    return " ".join(shlex.quote(a) for a in argv)


def stop_cmd(s):
    # Returns once kurad has exited: it removes its pid file last, after
    # closing the database (the lock kura optimize takes).
    p = shlex.quote(s.pid)
    return ("kill $(cat %s) && n=0 && while [ -e %s ] && [ $n -lt 600 ]; "
            "do sleep 0.05; n=$((n+1)); done && [ ! -e %s ]" % (p, p, p))


def shell(cmd):
    return subprocess.run(cmd, shell=True).returncode


def main():
    failed = []

    def check(cond, what):
        print("%s %s" % ("PASS" if cond else "FAIL", what))
        sys.stdout.flush()
        if not cond:
            failed.append(what)

    if not kura_pair.KURA_BIN or not kura_pair.KURA_TOOL:
        print("KURA_BIN and KURA_TOOL name kurad and kura")
        return 99
    ports = [free_port(), free_port()]
    while ports[1] == ports[0]:
        ports[1] = free_port()
    servers = []
    for i in range(2):
        s = Server(i + 1, ports[i], ports[1 - i],
                   tempfile.mkdtemp(prefix="kura-retune-"))
        s.pid = os.path.join(s.dir, "kurad.pid")
        servers.append(s)
    a, b = servers
    loads = []
    try:
        for s in servers:
            if shell(start_cmd(s, "%s#bnum=%d" % (s.db, OLD_BNUM))) != 0:
                raise RuntimeError("kurad %d did not start:\n%s" % (
                    s.sid, s.log_tail()))
        # Preload through kurad 1, so both log and replicate it.
        data = os.path.join(a.dir, "preload.tsv")
        with open(data, "w") as f:
            for n in range(PRELOAD):
                f.write("pre:%d\t%d\n" % (n, n))
        r = subprocess.run([kura_pair.KURA_TOOL, "load", data, "--port",
                            str(a.port)], stdout=subprocess.PIPE,
                           stderr=subprocess.STDOUT, text=True)
        print(r.stdout.strip())
        check(r.returncode == 0, "kura load of %d records" % PRELOAD)
        check(wait_for(lambda: all(
            stat_int(s.stats(), "kura_db_over_bnum") == 1 and
            stat_int(s.stats(), "curr_items") >= PRELOAD for s in servers),
            20), "both servers hold the records, over bnum %d" % OLD_BNUM)

        loads = [
            Load("RetryingClient", 0, Ops(RetryingClient(
                hash_client(ports), attempts=3, retry_delay=0,
                retry_for=(OSError, MemcacheUnexpectedCloseError)))),
            Load("HashClient", 1, Ops(hash_client(ports)))]
        for ld in loads:
            ld.start()
        wait_for(lambda: all(ld.progress() >= 300 for ld in loads), 20)

        argv = [RETUNE, "--bnum", str(NEW_BNUM), "--hold", str(HOLD),
                "--timeout", "30", "--kura", kura_pair.KURA_TOOL]
        for tag, s in (("a", a), ("b", b)):
            argv += ["--" + tag, "127.0.0.1:%d" % s.port,
                     "--%s-db" % tag, s.db,
                     "--%s-stop" % tag, stop_cmd(s),
                     "--%s-start" % tag, start_cmd(s, s.db)]
        t_start = now()
        at_start = [ld.progress() for ld in loads]
        rc = subprocess.run(argv, timeout=120).returncode
        t_end = now()
        during = [ld.progress() - n for ld, n in zip(loads, at_start)]
        for ld in loads:
            ld.finish()
        check(rc == 0, "retune-pair finished (exit %d) in %.1f s" % (
            rc, t_end - t_start))

        for ld, n in zip(loads, during):
            count, first, last = error_window(ld.errors, t_start, t_end)
            print("%s: %d sets acknowledged (%d during the retune), %d "
                  "reads, %d errors during the retune (first %s, last %s), "
                  "%d stale reads; slowest request %.3f s at %+.3f s" % (
                      ld.label, ld.sets, n, len(ld.reads), count,
                      "-" if first is None else "%+.3f s" % first,
                      "-" if last is None else "%+.3f s" % last,
                      len(ld.stale), ld.slowest[0],
                      ld.slowest[1] - t_start))
            for e in ld.errors[:4]:
                print("  error at %+.3f s: %s %s: %s" % (
                    e[0] - t_start, e[1], e[2], e[3]))
            check(ld.crashed is None, "%s: the load ran" % ld.label)
            check(n > 0, "%s: writes acknowledged during the retune" %
                  ld.label)
            for st in ld.stale[:5]:
                print("  stale read at %+.3f s: %s = %s, acknowledged %d "
                      "%.4f s before" % (st[0] - t_start, st[1], st[2],
                                         st[3], st[4]))
            check(not [st for st in ld.stale if st[0] < t_start],
                  "%s: no stale read before the retune" % ld.label)
            check(not ld.stale_past_lag(t_start),
                  "%s: no read older than what was acknowledged %.2f s "
                  "before it" % (ld.label, kura_pair.LAG_GRACE))
        check(not loads[0].errors, "RetryingClient: 0 errors")

        pair = kura_pair.Pair.__new__(kura_pair.Pair)
        pair.servers = servers
        pair.catch_up = [None, None]
        check(pair.caught_up(20) is not None, "the pair caught up")
        ack = os.path.join(a.dir, "ack.log")
        with open(ack, "w") as f:
            for ld in loads:
                ld.write_ack_log(f)
        rc, out = pair.verify(ack)
        print(out)
        check(rc == 0, "kura verify: every acknowledged write is on both "
              "servers (0 lost)")
        for s in servers:
            c = Client(("127.0.0.1", s.port), timeout=5)
            lost = 0
            for base in range(0, PRELOAD, 100):
                keys = ["pre:%d" % n for n in range(base, base + 100)]
                got = c.get_many(keys)
                lost += sum(1 for k in keys if
                            got.get(k) != k[4:].encode())
            c.close()
            st = s.stats()
            check(lost == 0, "kurad %d holds every preloaded record "
                  "(%d lost)" % (s.sid, lost))
            check(stat_int(st, "kura_db_bnum") >= NEW_BNUM and
                  stat_int(st, "kura_db_over_bnum") == 0,
                  "kurad %d: kura_db_bnum %s, kura_db_over_bnum %s" % (
                      s.sid, st.get("kura_db_bnum"),
                      st.get("kura_db_over_bnum")))
    finally:
        for ld in loads:
            ld.finish()
        for s in servers:
            if os.path.exists(s.pid):
                shell(stop_cmd(s))
            if failed:
                print("kurad %d log (%s):\n%s" % (s.sid, s.log,
                                                  s.log_tail(30)))
            else:
                shutil.rmtree(s.dir, ignore_errors=True)
    print("%d checks failed" % len(failed) if failed else
          "all checks passed")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
