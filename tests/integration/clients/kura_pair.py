"""kura_pair: a master/master pair of real kurad processes for the failover
tests, and the write/read load that proves no acknowledged write was lost.

    from kura_pair import Pair, Load, run_failover

Pair() starts two kurad ($KURA_BIN, which make check exports) on free
loopback ports, each with a temporary directory, each following the other
(-sid 1 and 2, -mhost/-mport). kill9(i), stop(i) and start(i) act on one of
them; caught_up() waits until each has applied everything its peer had
logged when the wait began, read from `stats` (kura_ulog_last_lsn on the
peer, kura_repl_master_applied_lsn here). verify() runs `kura verify`
($KURA_TOOL) against both servers.

Load runs one client's loop in a thread: it writes its own keys
fo:c<conn>:<n> with values that only grow per key (a counter shared by all
its keys), keeps the last acknowledged value of each key (the ack log), and
reads a key between writes, comparing with what was acknowledged before the
read. Every error the client reports is timed, and every stale read carries
its age: how long before the read the newest write it missed was
acknowledged. A client that moves a key back to a server it had given up on
can read it there a replication lag (doc/failover.md) after writing it to
the other one; a read older than LAG_GRACE is a write the catch-up missed.

run_failover() is the scenario every client test runs: load, kill -9 one
server under it, keep writing, restart it, wait for the pair to catch up,
keep going until the clients have come back to it, then check every
acknowledged write on both servers, directly and through the client.

Every wait polls a condition against a deadline.
"""
import ctypes
import os
import random
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time

# Replication is asynchronous: a stale read this young, after a client came
# back to a server, is the lag (p99 about 1 ms, the worst seen 12 ms, in
# doc/benchmarks.md), with room for a loaded machine. What -catchup
# guards against is writes the whole outage old.
LAG_GRACE = 0.25
HISTORY = 8  # acknowledged writes kept per key, for a stale read's age

KURA_BIN = os.environ.get("KURA_BIN", "")
KURA_TOOL = os.environ.get("KURA_TOOL", "")
PREFIX = "fo:"


def now():
    return time.monotonic()


def wait_for(cond, timeout, step=0.02):
    """Polls cond() until it is true or `timeout` seconds pass."""
    deadline = now() + timeout
    while now() < deadline:
        if cond():
            return True
        time.sleep(step)
    return cond()


def free_port():
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    port = s.getsockname()[1]
    s.close()
    return port


def _die_with_parent():
    # PR_SET_PDEATHSIG: no kurad outlives a test that dies.
    ctypes.CDLL(None).prctl(1, signal.SIGKILL)


def ask(port, request, terminator=b"\r\n", timeout=2.0, host="127.0.0.1"):
    """One request on a fresh connection; the reply, or None."""
    try:
        with socket.create_connection((host, port), timeout=timeout) as s:
            s.sendall(request)
            buf = b""
            deadline = now() + timeout
            while not buf.endswith(terminator) and now() < deadline:
                chunk = s.recv(65536)
                if not chunk:
                    return None
                buf += chunk
            return buf if buf.endswith(terminator) else None
    except OSError:
        return None


def stats(port):
    """`stats` as a dict of strings, or {} if the server does not answer."""
    reply = ask(port, b"stats\r\n", b"END\r\n")
    out = {}
    for line in (reply or b"").decode().splitlines():
        parts = line.split(" ", 2)
        if len(parts) == 3 and parts[0] == "STAT":
            out[parts[1]] = parts[2]
    return out


def stat_int(st, name, default=-1):
    try:
        return int(float(st.get(name, default)))
    except ValueError:
        return default


class Server:
    """One kurad of the pair. Its directory and port outlive restarts."""

    def __init__(self, sid, port, peer_port, directory, extra=()):
        self.sid = sid
        self.port = port
        self.peer_port = peer_port
        self.dir = directory
        self.db = os.path.join(directory, "kura.tch")
        self.log = os.path.join(directory, "kurad.log")
        self.extra = list(extra)
        self.proc = None

    def argv(self):
        return [KURA_BIN, "-port", str(self.port), "-thnum", "2",
                "-log", self.log, "-sid", str(self.sid),
                "-mhost", "127.0.0.1", "-mport", str(self.peer_port)] + \
            self.extra + [self.db]

    def answers(self):
        return (ask(self.port, b"version\r\n") or b"").startswith(b"VERSION ")

    def start(self, timeout=15):
        """Starts kurad and waits until it answers; raises if it does not."""
        self.proc = subprocess.Popen(self.argv(), cwd=self.dir,
                                     stdin=subprocess.DEVNULL,
                                     preexec_fn=_die_with_parent)
        if not wait_for(lambda: self.proc.poll() is not None or
                        self.answers(), timeout, 0.01) or \
                self.proc.poll() is not None:
            raise RuntimeError("kurad %d did not start; log %s:\n%s" % (
                self.sid, self.log, self.log_tail()))

    def kill9(self):
        if self.proc is not None and self.proc.poll() is None:
            self.proc.kill()
            self.proc.wait()
        self.proc = None

    def stop(self, timeout=30):
        """SIGTERM, then waits for the exit; returns the exit status."""
        if self.proc is None:
            return None
        self.proc.terminate()
        try:
            rc = self.proc.wait(timeout)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            rc = self.proc.wait()
        self.proc = None
        return rc

    def stats(self):
        return stats(self.port)

    def get(self, key):
        """The raw value of `key` (str), None if absent, or raises."""
        reply = ask(self.port, ("get %s\r\n" % key).encode(), b"END\r\n")
        if reply is None:
            raise OSError("no reply from port %d" % self.port)
        if reply == b"END\r\n":
            return None
        header, rest = reply.split(b"\r\n", 1)
        n = int(header.split()[3])
        return rest[:n].decode()

    def log_tail(self, lines=20):
        try:
            with open(self.log, errors="replace") as f:
                return "".join(f.readlines()[-lines:])
        except OSError:
            return "(no log)"


class Pair:
    """Two kurad following each other. Use as a context manager."""

    def __init__(self, extra=()):
        if not KURA_BIN:
            raise RuntimeError("KURA_BIN names the kurad binary")
        ports = [free_port(), free_port()]
        while ports[1] == ports[0]:
            ports[1] = free_port()
        self.servers = []
        for i in range(2):
            d = tempfile.mkdtemp(prefix="kura-failover-")
            self.servers.append(Server(i + 1, ports[i], ports[1 - i], d,
                                       extra))
        self.keep = False
        self.catch_up = [None, None]

    def __enter__(self):
        for s in self.servers:
            s.start()
        return self

    def __exit__(self, exc_type, exc, tb):
        for s in self.servers:
            rc = s.stop()
            if rc not in (0, None):
                print("kurad %d exited with %s on SIGTERM; log:\n%s" % (
                    s.sid, rc, s.log_tail()))
        if exc_type is not None or self.keep:
            for s in self.servers:
                print("kurad %d log (%s), last lines:\n%s" % (
                    s.sid, s.log, s.log_tail()))
        else:
            for s in self.servers:
                shutil.rmtree(s.dir, ignore_errors=True)
        return False

    @property
    def ports(self):
        return [s.port for s in self.servers]

    def caught_up(self, timeout=20):
        """Waits until each server has applied everything its peer had
        logged when the wait began. Returns the seconds it took, or None
        if the deadline passed; self.catch_up holds each server's time."""
        t0 = now()
        self.catch_up = [None, None]
        targets = []
        for s in self.servers:
            peer = stats(s.peer_port)
            if not peer:
                return None
            targets.append(stat_int(peer, "kura_ulog_last_lsn"))

        def done():
            for i, (s, target) in enumerate(zip(self.servers, targets)):
                if self.catch_up[i] is not None:
                    continue
                st = s.stats()
                if stat_int(st, "kura_repl_master_connected") == 1 and \
                        stat_int(st, "kura_repl_master_applied_lsn") >= target:
                    self.catch_up[i] = now() - t0
            return None not in self.catch_up

        return now() - t0 if wait_for(done, timeout) else None

    def verify(self, ack_path):
        """`kura verify` against both servers: (exit status, output)."""
        if not KURA_TOOL:
            return 0, "kura verify skipped: KURA_TOOL is not set"
        argv = [KURA_TOOL, "verify", "--ack-log", ack_path]
        for p in self.ports:
            argv += ["--port", str(p)]
        r = subprocess.run(argv, stdout=subprocess.PIPE,
                           stderr=subprocess.STDOUT, timeout=60)
        return r.returncode, r.stdout.decode(errors="replace").strip()


class Load(threading.Thread):
    """One client's write/read loop. `ops` has set(key, value) -> bool
    (False or an exception is an error) and get(key) -> str or None. Keys
    are fo:c<conn>:<n>, n < nkeys; the value is the decimal sequence."""

    def __init__(self, name, conn, ops, nkeys=200, pace=0.0):
        super().__init__(name=name, daemon=True)
        self.label = name
        self.conn = conn
        self.ops = ops
        self.nkeys = nkeys
        self.pace = pace          # seconds between operations (0: none)
        self.acked = {}           # key -> last acknowledged sequence
        self.history = {}         # key -> [(sequence, time acknowledged)]
        self.errors = []          # (time, op, key, message)
        self.stale = []           # (time, key, got, acknowledged, age)
        self.reads = []           # times of reads (for the phase counts)
        self.sets = 0
        self.seq = 0
        self.stop_flag = threading.Event()
        self.crashed = None
        self.rng = random.Random(conn)
        self.slowest = (0.0, 0.0)  # (seconds, start) of the slowest request

    def key(self, n):
        return "%sc%d:%d" % (PREFIX, self.conn, n)

    def _error(self, op, key, e):
        self.errors.append((now(), op, key, "%s: %s" % (type(e).__name__, e)
                            if isinstance(e, BaseException) else str(e)))

    def _timed(self, t0):
        took = now() - t0
        if took > self.slowest[0]:
            self.slowest = (took, t0)

    def step(self, i):
        key = self.key(i % self.nkeys)
        self.seq += 1
        t = now()
        try:
            if self.ops.set(key, str(self.seq)):
                self.acked[key] = self.seq
                h = self.history.setdefault(key, [])
                h.append((self.seq, now()))
                del h[:-HISTORY]
                self.sets += 1
            else:
                self._error("set", key, "not stored")
        except Exception as e:  # what the client raised is the error
            self._error("set", key, e)
        self._timed(t)
        key = self.key(self.rng.randrange(self.nkeys))
        want = self.acked.get(key, 0)
        t = now()
        try:
            got = self.ops.get(key)
        except Exception as e:
            self._error("get", key, e)
            return
        finally:
            self._timed(t)
        self.reads.append(t)
        have = int(got) if got is not None else 0
        if have < want:
            self.stale.append((t, key, got, want, self._age(key, have, t)))

    def _age(self, key, have, t):
        """How long before `t` the oldest acknowledged write of `key` newer
        than `have` was acknowledged (as old as the run if it is no longer
        in the history)."""
        for seq, at in self.history.get(key, []):
            if seq > have:
                return t - at
        return float("inf")

    def stale_past_lag(self, since=0.0, until=float("inf")):
        """The stale reads in [since, until) older than LAG_GRACE."""
        return [s for s in self.stale
                if since <= s[0] < until and s[4] > LAG_GRACE]

    def run(self):
        i = 0
        try:
            while not self.stop_flag.is_set():
                self.step(i)
                i += 1
                if self.pace:
                    time.sleep(self.pace)
        except BaseException as e:  # a bug in the test, not the client
            self.crashed = e

    def finish(self, timeout=30):
        self.stop_flag.set()
        self.join(timeout)

    def write_ack_log(self, f):
        for key, seq in sorted(self.acked.items()):
            f.write("%s %d\n" % (key, seq))

    def progress(self):
        return self.sets


def error_window(errors, since, until=None):
    """(count, first, last) of the errors in [since, until), relative to
    `since`; first and last are None when there were none."""
    ts = [e[0] for e in errors if e[0] >= since and
          (until is None or e[0] < until)]
    if not ts:
        return 0, None, None
    return len(ts), min(ts) - since, max(ts) - since


def _fmt(x):
    return "-" if x is None else "%.3f s" % x


def run_failover(title, loads, client_check, back_after, victim=0,
                 outage=1.5, settle=1.0, zero_errors=(), max_error_s=None,
                 pair_extra=()):
    """The failover scenario; returns 0 if every check passed, else 1.

    loads(ports) -> [Load]: the clients under test, built on both servers.
    client_check(load, key) -> str or None: reads a key through the client
    after the run (for the final read-back through the client).
    back_after: seconds after the restart by which every client has come
    back to the restarted server (its dead/retry interval, with a margin).
    zero_errors: labels of the loads that must see no error at all.
    max_error_s: the longest error window allowed for the others.
    """
    failed = []

    def check(cond, what):
        print("%s %s" % ("PASS" if cond else "FAIL", what))
        sys.stdout.flush()
        if not cond:
            failed.append(what)

    print(title)
    with Pair(pair_extra) as pair:
        ls = loads(pair.ports)
        for ld in ls:
            ld.start()
        # Before: every client under load and acknowledged.
        wait_for(lambda: all(ld.progress() >= 300 for ld in ls), 20)
        vic = pair.servers[victim]
        t_kill = now()
        vic.kill9()
        at_kill = [ld.progress() for ld in ls]
        wait_for(lambda: now() - t_kill >= outage and all(
            ld.progress() >= a + 300 for ld, a in zip(ls, at_kill)), 20)
        kept = [ld.progress() - a for ld, a in zip(ls, at_kill)]
        t_restart0 = now()
        vic.start()
        t_restart = now()
        caught = pair.caught_up(20)
        catch_up = list(pair.catch_up)
        # Keep going until the clients have come back to it, and a while.
        sets_back0 = stat_int(vic.stats(), "cmd_set", 0)
        wait_for(lambda: now() - t_restart >= back_after + settle and
                 stat_int(vic.stats(), "cmd_set", 0) > sets_back0, 30, 0.05)
        sets_back = stat_int(vic.stats(), "cmd_set", 0) - sets_back0
        for ld in ls:
            ld.finish()
        caught2 = pair.caught_up(20)

        print("kill -9 of kurad %d at +0; restarted at +%.3f s (%.3f s to "
              "answer); after the restart, kurad %d had pulled what it "
              "missed in %s and kurad %d what it had not received in %s; "
              "clients sent it %d sets after the restart" % (
                  vic.sid, t_restart - t_kill, t_restart - t_restart0,
                  vic.sid, _fmt(catch_up[victim]),
                  pair.servers[1 - victim].sid,
                  _fmt(catch_up[1 - victim]), sets_back))
        for ld, k in zip(ls, kept):
            n, first, last = error_window(ld.errors, t_kill, t_restart0)
            n2, first2, last2 = error_window(ld.errors, t_restart0)
            nb, _, _ = error_window(ld.errors, 0, t_kill)
            stale_out = [s for s in ld.stale if t_kill <= s[0] < t_restart0]
            stale_after = [s for s in ld.stale if s[0] >= t_restart0]
            stale_before = [s for s in ld.stale if s[0] < t_kill]
            print("%s: %d sets acknowledged (%d during the outage), %d "
                  "reads; errors: %d before the kill; %d after it "
                  "(first %s, last %s, window %s); %d after the restart "
                  "(first %s, last %s); stale reads: %d during the outage, "
                  "%d after the restart" % (
                      ld.label, ld.sets, k, len(ld.reads), nb, n,
                      _fmt(first), _fmt(last),
                      _fmt(None if first is None else last - first),
                      n2, _fmt(first2), _fmt(last2), len(stale_out),
                      len(stale_after)))
            print("%s: slowest request %.3f s, started at %+.3f s" % (
                ld.label, ld.slowest[0], ld.slowest[1] - t_kill))
            shown = ld.errors if len(ld.errors) <= 5 else \
                ld.errors[:3] + ld.errors[-2:]
            for e in shown:
                print("  error at +%.3f s: %s %s: %s" % (
                    e[0] - t_kill, e[1], e[2], e[3]))
            for s in stale_after[:5]:
                print("  stale read at +%.3f s (%.3f s after the restart): "
                      "%s = %s, acknowledged %d %.4f s before" % (
                          s[0] - t_kill, s[0] - t_restart, s[1], s[2], s[3],
                          s[4]))
            check(ld.crashed is None, "%s: the load ran (%r)" % (
                ld.label, ld.crashed))
            check(k > 0, "%s: writes were acknowledged while kurad %d was "
                  "down" % (ld.label, vic.sid))
            check(nb == 0 and not stale_before,
                  "%s: no error and no stale read before the kill" % ld.label)
            if ld.label in zero_errors:
                check(not ld.errors, "%s: no error seen at all" % ld.label)
            elif max_error_s is not None:
                check(first is None or last - first <= max_error_s,
                      "%s: errors for at most %.1f s after the kill" % (
                          ld.label, max_error_s))
            check(not ld.stale_past_lag(t_restart0),
                  "%s: no read after the restart older than what was "
                  "acknowledged %.2f s before it" % (ld.label, LAG_GRACE))
        check(caught is not None and caught2 is not None,
              "the pair caught up after the restart and after the load")
        check(sets_back > 0, "the clients came back to kurad %d within "
              "%.1f s of its restart" % (vic.sid, back_after + settle))
        ack = os.path.join(pair.servers[0].dir, "ack.log")
        with open(ack, "w") as f:
            for ld in ls:
                ld.write_ack_log(f)
        rc, out = pair.verify(ack)
        print(out)
        check(rc == 0, "kura verify: every acknowledged write is on both "
              "servers")
        for ld in ls:
            bad = []
            for key, seq in ld.acked.items():
                got = client_check(ld, key)
                if got is None or int(got) < seq:
                    bad.append((key, got, seq))
            check(not bad, "%s: every acknowledged write reads back through "
                  "the client (%d keys; bad: %s)" % (
                      ld.label, len(ld.acked), bad[:3]))
        if failed:
            pair.keep = True
    print("%d checks failed" % len(failed) if failed else "all checks passed")
    return 1 if failed else 0
