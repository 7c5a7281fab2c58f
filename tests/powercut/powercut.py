#!/usr/bin/env python3
"""powercut.py: the power-cut harness. Proves kura's durability promise on
crashfs (tests/crashfs): under the default `-fsync always`, a power cut at
any instant loses no acknowledged write, and kurad restarts by itself.

    powercut.py [--kurad PATH] [--kura PATH] [--crashfs PATH] [--cuts N]
                [--seed N] [--modes drop,torn,writeback] [--moments M,...]
                [--fsync always|100|never|peer] [--keep] [--budget SECONDS]
                [--memory-limit SIZE [--prefill N]] [--verbose]

The caller builds crashfs with tests/crashfs/build (tools/powercut and
tests/powercut/run-* do, into build/tests/crashfs/crashfs, the default
--crashfs):

    tests/crashfs/build build/tests/crashfs/crashfs

Every cut cycle mounts crashfs over a BACKING directory that persists for a
scenario (so the database grows, checkpoints happen, and each recovery
starts from what the last one left), runs kurad on the mount under a
`kura bench --ack-log` load, cuts power at the chosen moment in the chosen
mode, kills kurad -9, tears the mount down, restarts kurad on BACKING
itself and checks with `kura verify` that every write acknowledged in this
cycle and in every earlier cycle of the scenario is there. Moments:

  load             a random instant of the load
  checkpoint       kurad's fdatasync of kura.tch (the middle of a checkpoint)
  rotation         the creation of a new update log segment
  removal          the unlink of an old segment behind a checkpoint
  checkpoint-file  the rename that replaces ulog/checkpoint
  fresh            a brand-new database, before its first checkpoint
  shutdown         a clean shutdown (SIGTERM) under load
  optimize         `kura optimize` rebuilding the stopped database
  resync-standby   a standby on crashfs receiving a full snapshot
  resync-master    a master on crashfs serving a full snapshot
  pair             both masters of a master/master pair at once
  active           (with --fsync peer only) the active server of a pair,
                   the standby on a plain directory that keeps power
  kill9            (only when named) no power cut: kill -9 of kurad under
                   the load, on a plain directory, and a restart there

With --memory-limit SIZE every kurad runs in a memory cgroup of its own
limited to SIZE (k, m, g suffixes; as systemd's MemoryMax= would: cgroup
v2 memory.max, or v1 memory.limit_in_bytes, tools/lib/memcg.py), and the
run also fails if one was OOM-killed; --prefill N first loads N 1,000-byte
records into each single-server scenario (through a kurad with no limit),
so that the database is larger than the limit.

Moments go round-robin over the cuts and modes rotate so that every mode
meets every moment (11 moments x 3 modes = 33 cuts for full coverage).
Every random choice of a cut (delays, SKIP counts, value sizes, crashfs
seeds) comes from the run seed, the moment, the mode and how many cuts of
that moment and mode came before, so `--seed S --moments M --modes X
--cuts K` replays the parameters of the K-th such cut of a full run. The
state BACKING held right after a failing cut is kept (with --keep) as
postcut/ in its scenario directory: starting kurad on a copy of it replays
the recovery exactly.

What each cut asserts (src/store.h D1-D7, src/ulog.h U3, U7, U9 and
src/txn.h T8 cite these numbers):

  PC1  kurad starts again by itself on what the disk kept, with no flag
       and no manual step, under every policy (R counts failures).
  PC2  under -fsync always, every write acknowledged before the cut, in
       this cut and every earlier cut of the scenario, reads back with the
       acknowledged value or a later one: none missing (L), none stale (S).
       The same under -fsync peer in the moments with one server, which
       has no peer and so runs the fallback (src/ulog.h U11, txn.h T10).
  PC3  no value is ever half-applied, under every policy: a value reads
       back whole or not at all.
  PC4  both masters of a pair cut together restart, converge, and hold
       every write either of them acknowledged (PC2 checked on both).
  PC5  once restarted, kurad logs no ERROR about what it recovered and
       stops cleanly (exit 0) on SIGTERM.
  PC6  under -fsync 100 and never, the losses are reported, not failed:
       README's "What survives what" bounds them. So are they under
       -fsync peer in the other moments (etc/tuning.md, "-fsync peer").
  PC7  under -fsync peer, once the standby reports writes (src/ulog.h
       U10, src/repl_sender.h R5), every write the active acknowledged
       before a power cut of the active is on the standby, checked
       before the active comes back; then the active restarts, gets back
       from the standby the writes its log lost (src/repl_sender.h R6),
       and once the pair has converged both hold them all (moment
       `active`).

Ends with the line `N cuts, R refused to start, L acknowledged writes lost,
S stale`, a table per mode x moment and the seed. Exit 0 when R, L and S
are 0 (with -fsync 100 or never, when R is 0 and no value was half
applied); 1 otherwise; 77 (skip) without root, /dev/fuse or crashfs; 2 on
bad usage. Standard library only; run as root.
"""
import argparse
import atexit
import concurrent.futures
import os
import random
import re
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
sys.path.insert(0, os.path.join(REPO, "tools", "lib"))
import memcg  # noqa: E402
MODES = ["drop", "torn", "writeback"]
MOMENTS = ["load", "checkpoint", "rotation", "removal", "checkpoint-file", "fresh",
           "shutdown", "optimize", "resync-standby", "resync-master", "pair"]
PEER_MOMENTS = ["active"]   # --fsync peer only
EXTRA_MOMENTS = ["kill9"]   # only when named
SINGLE_MOMENTS = {"load", "checkpoint", "rotation", "removal", "checkpoint-file",
                  "shutdown", "optimize"}

LOAD_S = 2.0            # bench duration of a cycle
MOUNT_WAIT = 15.0       # crashfs mount, control socket, exit after unmount
START_WAIT = 30.0       # kurad on the mount answering `version`
RESTART_WAIT = 120.0    # kurad restarted on BACKING answering `version`
STOP_WAIT = 60.0        # SIGTERM to exit
KILL_WAIT = 30.0        # SIGKILL to reaped
CATCHUP_WAIT = 90.0     # a follower catching up with its master
VERIFY_WAIT = 300.0     # one kura verify run
OPTIMIZE_WAIT = 120.0
RESYNC_CYCLES = 10      # cuts on one resync scenario (each sends the whole database)
FILL_KEYS = 10000       # --own-keys of the bench that fills a resync master
CUT_WAIT = 10.0         # an armed trigger after the event that should fire it

INTERESTING = re.compile(r"not closed cleanly|rebuilt|redo:|torn|never completed|"
                         r"created but never|ERROR|damaged|snapshot|cannot")
BENIGN = re.compile(r"file descriptor limit")


class HarnessError(Exception):
    """The harness could not do what it meant to (not a finding on kurad)."""


class Interrupted(BaseException):
    pass


def now():
    return time.monotonic()


def wait_until(pred, deadline, step=0.02):
    """Polls pred() until it is true or `deadline` seconds have passed."""
    end = now() + deadline
    while True:
        if pred():
            return True
        if now() >= end:
            return False
        time.sleep(step)


def sleep_until(t):
    d = t - now()
    if d > 0:
        time.sleep(d)


def indented(lines):
    return "\n".join("      " + x for x in lines)


def tail(path, n=40):
    try:
        with open(path, errors="replace") as f:
            return f.read().splitlines()[-n:]
    except OSError as e:
        return ["(cannot read %s: %s)" % (path, e)]


# ---- the harness: processes, mounts, temp dirs, cleanup ----------------------

class Harness:
    def __init__(self, args):
        self.args = args
        self.verbose = args.verbose
        self.procs = []          # every Popen we started, reaped or not
        self.mounts = []         # every CrashMount not torn down yet
        self.tmp = tempfile.mkdtemp(prefix="powercut-")
        self.failed = False
        self.cleaned = False
        self.used_ports = set()
        self.pool = concurrent.futures.ThreadPoolExecutor(max_workers=2)
        # Private copies: another build replacing the binaries mid-run must
        # not mix two versions in one run.
        bindir = os.path.join(self.tmp, "bin")
        os.makedirs(bindir)
        self.kurad = os.path.join(bindir, "kurad")
        self.kura = os.path.join(bindir, "kura")
        shutil.copy2(args.kurad, self.kurad)
        shutil.copy2(args.kura, self.kura)
        self.crashfs = args.crashfs
        self.memlimit = args.memory_limit   # bytes, or 0
        self.cgroups = []        # MemCgroups of kurads not yet released
        self.ooms = 0            # OOM kills seen in them

    def release_cgroup(self, cg):
        """Once its process is gone: counts its OOM kills, removes it."""
        if cg in self.cgroups:
            self.ooms += cg.ooms()
            cg.destroy()
            self.cgroups.remove(cg)

    def log(self, msg):
        print(msg, flush=True)

    def debug(self, msg):
        if self.verbose:
            print("    " + msg, flush=True)

    def spawn(self, argv, out_path, preexec=None):
        out = open(out_path, "ab")
        try:
            p = subprocess.Popen(argv, stdin=subprocess.DEVNULL, stdout=out,
                                 stderr=subprocess.STDOUT, start_new_session=True,
                                 preexec_fn=preexec)
        finally:
            out.close()
        self.procs.append(p)
        self.debug("started pid %d: %s" % (p.pid, " ".join(argv)))
        return p

    def run(self, argv, timeout):
        """Runs a short command; returns (rc, output)."""
        self.debug("run: " + " ".join(argv))
        p = subprocess.Popen(argv, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                             stderr=subprocess.STDOUT, start_new_session=True)
        self.procs.append(p)
        try:
            out, _ = p.communicate(timeout=timeout)
        except subprocess.TimeoutExpired:
            p.kill()
            out, _ = p.communicate(timeout=KILL_WAIT)
            return None, out.decode(errors="replace")
        return p.returncode, out.decode(errors="replace")

    def free_port(self):
        for _ in range(100):
            with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
                s.bind(("127.0.0.1", 0))
                port = s.getsockname()[1]
            if port not in self.used_ports:
                self.used_ports.add(port)
                return port
        raise HarnessError("no free port")

    def cleanup(self):
        """Every exit path: mounts down, our processes dead, temp dir gone."""
        if self.cleaned:
            return
        self.cleaned = True
        for m in list(self.mounts):
            m.teardown(quiet=True)
        for p in self.procs:
            if p.poll() is None:
                try:
                    p.kill()            # by pid: only what we started
                    p.wait(timeout=KILL_WAIT)
                except (OSError, subprocess.TimeoutExpired):
                    pass
        for cg in list(self.cgroups):
            self.release_cgroup(cg)
        self.pool.shutdown(wait=False)
        if self.failed and self.args.keep:
            print("kept %s for inspection" % self.tmp, flush=True)
        else:
            shutil.rmtree(self.tmp, ignore_errors=True)


# ---- crashfs -----------------------------------------------------------------

class CrashMount:
    """One crashfs instance: BACKING shown at MOUNT, controlled over CTL."""

    def __init__(self, h, backing, mnt, ctl, seed, log_path):
        self.h, self.backing, self.mnt, self.ctl = h, backing, mnt, ctl
        self.seed, self.log_path = seed, log_path
        self.proc = None
        self.minor = None
        self.down = True

    def start(self):
        """Mounts; a mount that fails is tried once more (it proves nothing
        of kurad), and both failures are reported if the second fails."""
        first = self._try_start()
        if first is None:
            return self
        second = self._try_start()
        if second is None:
            return self
        raise HarnessError("crashfs did not mount %s, twice: %s; then %s" %
                           (self.mnt, first, second))

    def _try_start(self):
        """Mounts and reads the device; None, or why it failed."""
        os.makedirs(self.mnt, exist_ok=True)
        if os.path.exists(self.ctl):
            os.unlink(self.ctl)
        self.proc = self.h.spawn([self.h.crashfs, self.backing, self.mnt, "--ctl", self.ctl,
                                  "--seed", str(self.seed), "-f"], self.log_path)
        self.down = False
        self.h.mounts.append(self)
        t0 = time.monotonic()
        ok = wait_until(lambda: self.proc.poll() is not None or
                        (mounted(self.mnt) and os.path.exists(self.ctl)), MOUNT_WAIT)
        rc = self.proc.poll()
        if rc is not None or not ok:
            why = "%s after %.1f s (mounted %s, control socket %s): %s" % (
                "exited with %s" % rc if rc is not None else "no mount",
                time.monotonic() - t0, mounted(self.mnt), os.path.exists(self.ctl),
                " | ".join(tail(self.log_path, 5)))
            self.teardown(quiet=True)
            return why
        # Read now: after a cut, stat on the mount fails with EIO.
        self.minor = os.minor(os.stat(self.mnt).st_dev)
        return None

    def connect(self):
        s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        s.settimeout(MOUNT_WAIT)
        s.connect(self.ctl)
        return s

    @staticmethod
    def send(s, line):
        s.sendall(line.encode() + b"\n")

    @staticmethod
    def reply(s):
        buf = b""
        while not buf.endswith(b"\n"):
            chunk = s.recv(4096)
            if not chunk:
                break
            buf += chunk
        return buf.decode().strip()

    def cmd(self, line):
        with self.connect() as s:
            self.send(s, line)
            return self.reply(s)

    def status(self):
        return self.cmd("status")

    def is_cut(self):
        return self.status() == "ok cut"

    def cut(self, mode):
        r = self.cmd("cut " + mode)
        if r != "ok cut":
            raise HarnessError("cut %s: %s" % (mode, r))

    def arm(self, mode, event, glob, skip):
        r = self.cmd("arm %s %s %s %d" % (mode, event, glob, skip))
        if r != "ok armed":
            raise HarnessError("arm: " + r)

    def disarm_and_cut(self, mode):
        """Ends an armed wait: true if the trigger had fired."""
        self.cmd("disarm")
        if self.is_cut():
            return True
        self.cut(mode)
        return False

    def cut_summary(self):
        for line in reversed(tail(self.log_path, 50)):
            m = re.search(r"cut mode=\S+ .*", line)
            if m:
                return m.group(0)
        return ""

    def abort_and_unmount(self):
        """Abort the FUSE connection, lazily unmount; does not wait."""
        abort = "/sys/fs/fuse/connections/%d/abort" % self.minor if self.minor else None
        if abort and os.path.exists(abort):
            try:
                with open(abort, "w") as f:
                    f.write("1")
            except OSError:
                pass
        r = subprocess.run(["fusermount3", "-u", "-z", self.mnt], stdout=subprocess.DEVNULL,
                           stderr=subprocess.DEVNULL, timeout=MOUNT_WAIT)
        if r.returncode != 0 and mounted(self.mnt):
            subprocess.run(["umount", "-l", self.mnt], stdout=subprocess.DEVNULL,
                           stderr=subprocess.DEVNULL, timeout=MOUNT_WAIT)

    def teardown(self, quiet=False):
        """Abort, lazy unmount, reap crashfs. Returns an error text or None."""
        if self.down:
            return None
        self.down = True
        if self in self.h.mounts:
            self.h.mounts.remove(self)
        err = None
        try:
            self.abort_and_unmount()
        except (OSError, subprocess.TimeoutExpired) as e:
            err = "unmount %s: %s" % (self.mnt, e)
        try:
            rc = self.proc.wait(timeout=MOUNT_WAIT)
            if rc != 0:
                err = "crashfs exited with %s: %s" % (rc, " | ".join(tail(self.log_path, 5)))
        except subprocess.TimeoutExpired:
            self.proc.kill()
            try:
                self.proc.wait(timeout=KILL_WAIT)
            except subprocess.TimeoutExpired:
                pass
            err = "crashfs did not exit after the unmount"
        if err and not quiet:
            raise HarnessError(err)
        return err


def mounted(path):
    """True if path is a mount point, read from /proc/self/mountinfo."""
    want = os.path.realpath(path)
    try:
        with open("/proc/self/mountinfo") as f:
            for line in f:
                mp = line.split()[4]
                mp = re.sub(r"\\([0-7]{3})", lambda m: chr(int(m.group(1), 8)), mp)
                if mp == want:
                    return True
    except OSError:
        pass
    return False


# ---- kurad and the kura tool -------------------------------------------------

def mc_request(port, line, end_marks, timeout=5.0):
    with socket.create_connection(("127.0.0.1", port), timeout=timeout) as s:
        s.sendall(line.encode() + b"\r\n")
        buf = b""
        while not any(buf.endswith(m) for m in end_marks):
            chunk = s.recv(65536)
            if not chunk:
                break
            buf += chunk
        return buf.decode(errors="replace")


def answers_version(port):
    try:
        return mc_request(port, "version", [b"\r\n"], timeout=2.0).startswith("VERSION")
    except OSError:
        return False


def stats(port):
    out = {}
    for line in mc_request(port, "stats", [b"END\r\n", b"ERROR\r\n"]).splitlines():
        parts = line.split()
        if len(parts) == 3 and parts[0] == "STAT":
            out[parts[1]] = parts[2]
    return out


class Kurad:
    def __init__(self, h, name, db, port, log_path, extra=()):
        self.h, self.name, self.db, self.port = h, name, db, port
        self.log_path, self.extra = log_path, list(extra)
        self.proc = None
        self.cg = None

    def argv(self):
        return [self.h.kurad, "-port", str(self.port), "-thnum", "2", "-log", self.log_path,
                "-ckpt", "1", "-ulim", "256k", "-ukeep", "2", "-fsync", self.h.args.fsync] + \
            self.extra + [self.db]

    def start(self, limited=True):
        preexec = None
        if self.h.memlimit and limited:
            self.cg = memcg.MemCgroup.create("kura-powercut-%d" % self.port,
                                             self.h.memlimit)
            self.h.cgroups.append(self.cg)
            preexec = self.cg.enter
        self.proc = self.h.spawn(self.argv(), self.log_path + ".out", preexec)
        return self

    def alive(self):
        return self.proc is not None and self.proc.poll() is None

    def wait_ready(self, deadline):
        """True once it answers `version`; False if it exited or timed out."""
        ok = wait_until(lambda: not self.alive() or answers_version(self.port), deadline, 0.05)
        return ok and self.alive()

    def port_taken(self):
        text = "\n".join(tail(self.log_path, 20) + tail(self.log_path + ".out", 20))
        return "cannot listen on" in text

    def kill9(self):
        if self.alive():
            try:
                self.proc.kill()
            except OSError:
                pass

    def reap(self, deadline=KILL_WAIT):
        try:
            rc = self.proc.wait(timeout=deadline)
        except subprocess.TimeoutExpired:
            return None
        if self.cg is not None:
            self.h.release_cgroup(self.cg)
            self.cg = None
        return rc

    def terminate(self, deadline=STOP_WAIT):
        """SIGTERM and wait; returns the exit code, or None on timeout (then kill -9)."""
        if not self.alive():
            return self.proc.returncode
        try:
            self.proc.send_signal(signal.SIGTERM)
        except OSError:
            pass
        rc = self.reap(deadline)
        if rc is None:
            self.kill9()
            self.reap()
        return rc


def start_kurad(h, name, db, log_path, extra_for_port, deadline, port=None,
                limited=True):
    """Starts kurad (inside --memory-limit unless not `limited`), retrying
    on another port if its port was taken meanwhile. Returns (Kurad, ready)."""
    for attempt in range(3):
        p = port if port is not None else h.free_port()
        k = Kurad(h, name, db, p, log_path, extra_for_port(p)).start(limited)
        ready = k.wait_ready(deadline)
        if ready or port is not None or not k.port_taken() or attempt == 2:
            return k, ready
        h.debug("%s: port %d was taken, retrying" % (name, p))
    raise AssertionError("unreachable")


class Bench:
    def __init__(self, h, port, ack_path, prefix, duration, value_size, own_keys, out_path):
        self.h = h
        self.argv = [h.kura, "bench", "--port", str(port), "--conns", "8", "--duration",
                     "%.2f" % duration, "--ack-log", ack_path, "--prefix", prefix,
                     "--value-size", str(value_size), "--own-keys", str(own_keys)]
        self.out_path, self.duration = out_path, duration
        self.proc, self.t0 = None, None

    def start(self):
        self.proc = self.h.spawn(self.argv, self.out_path)
        self.t0 = now()
        return self

    def wait(self):
        try:
            rc = self.proc.wait(timeout=self.duration + 60)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait(timeout=KILL_WAIT)
            raise HarnessError("kura bench did not end after its duration")
        # Exit 1 only says some requests failed: after the cut they do.
        lines = tail(self.out_path, 200)
        acked = [re.match(r"acknowledged writes logged: (\d+)", x) for x in lines]
        acked = [int(m.group(1)) for m in acked if m]
        if rc not in (0, 1) or not acked or any("cannot write the ack log" in x for x in lines):
            raise HarnessError("kura bench exited with %d: %s" % (rc, " | ".join(lines[-5:])))
        return acked[-1]


VERIFY_LINE = re.compile(r"^127\.0\.0\.1:(\d+): (\d+) keys, (\d+) ok, (\d+) stale, (\d+) missing")


def verify(h, ack_path, ports):
    """kura verify of one ack log against ports. Returns a dict: missing and
    stale (the worst port), nan (half-applied values seen), ports (per port
    text), bad (the listed keys), error (None, or why it could not check)."""
    argv = [h.kura, "verify", "--ack-log", ack_path]
    for p in ports:
        argv += ["--port", str(p)]
    rc, out = h.run(argv, VERIFY_WAIT)
    res = {"missing": 0, "stale": 0, "nan": 0, "keys": 0, "ports": [], "bad": [],
           "error": None, "output": out}
    seen = set()
    for line in out.splitlines():
        m = VERIFY_LINE.match(line)
        if m:
            seen.add(int(m.group(1)))
            keys, stale, missing = int(m.group(2)), int(m.group(4)), int(m.group(5))
            res["keys"] = max(res["keys"], keys)
            res["stale"] = max(res["stale"], stale)
            res["missing"] = max(res["missing"], missing)
            res["ports"].append(line.strip())
        elif line.startswith("  "):
            res["bad"].append(line.strip())
            if "not a sequence number" in line:
                res["nan"] += 1
        elif "cannot verify" in line:
            res["error"] = line.strip()
    if res["error"] is None and (rc not in (0, 1) or seen != set(ports)):
        res["error"] = "kura verify exited with %s: %s" % (rc, out.strip()[-300:])
    if res["error"] is None and rc == 1 and res["missing"] + res["stale"] == 0:
        res["error"] = "kura verify failed without naming a key: " + out.strip()[-300:]
    return res


# ---- what a cut found --------------------------------------------------------

class CutResult:
    def __init__(self, idx, moment, mode, k):
        self.idx, self.moment, self.mode, self.k = idx, moment, mode, k
        self.how = ""
        self.scenario = ""
        self.acked = 0
        self.refused = 0
        self.lost = 0
        self.stale = 0
        self.nan = 0
        self.old_lost = 0
        self.old_stale = 0
        self.unclean = 0
        self.rebuilt = 0
        self.redo = 0
        self.bad_stops = []
        self.log_errors = []    # ERROR lines of kurads started after the cut
        self.errors = []        # harness errors: the cut proved nothing
        self.notes = []
        self.findings = []      # text blocks for the report
        self.fired = None       # armed trigger: True fired, False fell back
        self.seconds = 0.0

    def failed(self, fsync):
        # PC1 (refused), PC3 (nan), PC5 (bad stops); errors: the cut proved
        # nothing.
        if self.refused or self.errors or self.bad_stops or self.nan:
            return True
        # A lone server under -fsync peer runs the fallback: as always (PC2).
        fallback = fsync == "peer" and (self.moment in SINGLE_MOMENTS or
                                        self.moment == "fresh")
        # kill -9 loses nothing under any policy (README, "What survives
        # what"): the page cache keeps every write.
        if fsync == "always" or fallback or self.moment in ("active", "kill9"):
            return bool(self.lost or self.stale or self.old_lost or self.old_stale)
        return False


def scan_restart_log(path):
    """What a restart's log says about recovery."""
    info = {"unclean": False, "rebuilt": False, "redo": 0, "lines": []}
    try:
        with open(path, errors="replace") as f:
            text = f.read()
    except OSError:
        return info
    for line in text.splitlines():
        if "not closed cleanly" in line:
            info["unclean"] = True
        if "rebuilt" in line:
            info["rebuilt"] = True
        m = re.search(r"redo: (\d+) records", line)
        if m:
            info["redo"] += int(m.group(1))
        if INTERESTING.search(line) and not BENIGN.search(line):
            info["lines"].append(line)
    return info


class AckLog:
    def __init__(self, path, label):
        self.path, self.label = path, label
        self.bad = 0            # missing + stale at its last check
        self.missing = 0
        self.stale = 0


# ---- scenarios ---------------------------------------------------------------

class Scenario:
    """Directories that persist from cut to cut: BACKINGs, ack logs."""
    counter = 0

    def __init__(self, h, kind, nbacking=1):
        Scenario.counter += 1
        self.h, self.kind = h, kind
        self.name = "%s-%d" % (kind, Scenario.counter)
        self.dir = os.path.join(h.tmp, self.name)
        self.backings = [os.path.join(self.dir, "backing%d" % i) for i in range(nbacking)]
        for b in self.backings:
            os.makedirs(os.path.join(b, "data"))
        for d in ("logs", "acks", "mnt"):
            os.makedirs(os.path.join(self.dir, d))
        self.acks = []
        self.cycles = 0
        self.dead = False
        self.failed = False

    def path(self, *parts):
        return os.path.join(self.dir, *parts)

    def new_ack(self, idx, tag=""):
        label = "r%d%s" % (idx, tag)
        a = AckLog(self.path("acks", label + ".ack"), label)
        return a

    def snapshot(self, idx):
        """Copies each BACKING as it is right after the cut (before recovery
        touches it) to postcut/, replacing the previous cycle's copy."""
        dst = self.path("postcut")
        shutil.rmtree(dst, ignore_errors=True)
        os.makedirs(dst)
        for i, b in enumerate(self.backings):
            shutil.copytree(b, os.path.join(dst, "backing%d" % i), symlinks=True)
        with open(os.path.join(dst, "CUT"), "w") as f:
            f.write("state right after cut %d\n" % idx)

    def remove(self):
        if not self.failed:
            shutil.rmtree(self.dir, ignore_errors=True)


def db_of(dirpath):
    return os.path.join(dirpath, "data", "kura.tch")


class Runner:
    def __init__(self, h):
        self.h = h
        self.args = h.args
        self.scen = {}          # kind -> live Scenario

    # -- helpers -----------------------------------------------------------------

    def scenario(self, kind, nbacking=1):
        s = self.scen.get(kind)
        # A resync sends the whole database each cycle: keep those smaller.
        limit = self.args.scenario_cycles
        if kind.startswith("resync"):
            limit = min(limit, RESYNC_CYCLES)
        if s is not None and (s.dead or s.cycles >= limit):
            if not s.failed:
                s.remove()
            s = None
        if s is None:
            s = Scenario(self.h, kind, nbacking)
            self.scen[kind] = s
            if kind == "main" and self.args.prefill > 0:
                self.prefill(s)
        return s

    def prefill(self, s):
        """--prefill: N 1,000-byte records loaded into the BACKING (by a kurad
        with no memory limit), so that the database outgrows the limit."""
        log = s.path("logs", "prefill.log")
        k, ready = start_kurad(self.h, "prefill", db_of(s.backings[0]), log,
                               lambda p: [], START_WAIT, limited=False)
        if not ready:
            raise HarnessError("kurad did not start for --prefill: %s" %
                               " | ".join(tail(log, 8)))
        try:
            gen = subprocess.Popen([self.h.kura, "load", "--generate",
                                    str(self.args.prefill), "--value-size", "1000",
                                    "--out", "-"], stdout=subprocess.PIPE,
                                   start_new_session=True)
            self.h.procs.append(gen)
            res = subprocess.run([self.h.kura, "load", "-", "--port", str(k.port)],
                                 stdin=gen.stdout, capture_output=True, timeout=600)
            gen.stdout.close()
            gen.wait(timeout=KILL_WAIT)
            if res.returncode != 0:
                raise HarnessError("--prefill: kura load failed: %s" %
                                   res.stdout.decode(errors="replace").strip())
        finally:
            rc = k.terminate(STOP_WAIT)
        if rc != 0:
            raise HarnessError("--prefill: kurad did not stop cleanly (%s)" % rc)
        self.h.debug("prefilled %d records (%d MiB)" % (
            self.args.prefill, os.path.getsize(db_of(s.backings[0])) >> 20))

    def cycle_kill9(self, r, rng):
        """No power cut: kill -9 under the load on a plain directory (the
        page cache keeps every write), then a restart there."""
        s = self.scenario("main")
        r.scenario = "%s#%d" % (s.name, s.cycles + 1)
        s.cycles += 1
        value_size = 1000 if rng.random() < 0.5 else 10
        at = rng.uniform(0.3, LOAD_S - 0.3)
        r.notes.append("value size %d" % value_size)
        db = db_of(s.backings[0])
        k = bench = None
        try:
            k, ready = start_kurad(self.h, "kurad", db, self.log_path(s, r.idx, "killed"),
                                   lambda p: [], START_WAIT)
            if not ready:
                s.dead = s.failed = True
                raise HarnessError("kurad did not start (before the kill): %s" %
                                   " | ".join(tail(k.log_path, 8)))
            ack = s.new_ack(r.idx)
            s.acks.append(ack)
            bench = Bench(self.h, k.port, ack.path, ack.label + ":", LOAD_S, value_size, 1000,
                          self.log_path(s, r.idx, "bench")).start()
            sleep_until(bench.t0 + at)
            k.kill9()
            if k.reap() is None:
                raise HarnessError("kurad (pid %d) did not die after kill -9" % k.proc.pid)
            r.how = "kill -9@%.2fs" % at
            r.acked += bench.wait()
        finally:
            for p in (k, bench):
                if p is not None and p.proc is not None and p.proc.poll() is None:
                    p.proc.kill()
                    p.proc.wait(timeout=KILL_WAIT)
        k2 = self.restart(s, r, "restart", db, lambda p: [])
        if k2 is None:
            return
        try:
            self.check_acks(s, r, [ack], [k2.port])
        finally:
            self.stop(k2, r)

    def mount(self, s, i, seed, idx):
        m = CrashMount(self.h, s.backings[i], s.path("mnt", "m%d" % i), s.path("ctl%d.sock" % i),
                       seed, s.path("logs", "crashfs-c%d-%d.log" % (idx, i)))
        return m.start()

    def log_path(self, s, idx, role):
        return s.path("logs", "c%d-%s.log" % (idx, role))

    def crash(self, mounts, kurads, r):
        """After a confirmed cut: kill -9, abort, lazy unmount, reap."""
        for m in mounts:
            if not m.is_cut():
                raise HarnessError("crashfs %s is not cut" % m.mnt)
        for k in kurads:
            k.kill9()
        for m in mounts:
            m.abort_and_unmount()
        for k in kurads:
            if k.proc is not None and k.reap() is None:
                raise HarnessError("%s (pid %d) did not die after kill -9" % (k.name, k.proc.pid))
        for m in mounts:
            summary = m.cut_summary()
            err = m.teardown(quiet=True)
            if err:
                raise HarnessError(err)
            if summary:
                r.notes.append("%s: %s" % (os.path.basename(m.mnt), summary))

    def restart(self, s, r, role, db, extra_for_port, port=None):
        """Restarts kurad on BACKING; None if it refused (then it is recorded)."""
        log = self.log_path(s, r.idx, role)
        k, ready = start_kurad(self.h, role, db, log, extra_for_port, RESTART_WAIT, port)
        info = scan_restart_log(log)
        r.unclean += int(info["unclean"])
        r.rebuilt += int(info["rebuilt"])
        r.redo += info["redo"]
        for line in info["lines"]:
            r.notes.append("%s: %s" % (role, line.split(" ", 1)[-1]))
        if not ready:
            rc = k.proc.poll()
            k.kill9()
            k.reap()
            if k.port_taken():
                raise HarnessError("%s: port %d was taken: %s" %
                                   (role, k.port, " | ".join(tail(log, 3))))
            r.refused += 1
            s.dead = s.failed = True
            r.findings.append("%s refused to start on %s (%s); its log:\n%s" % (
                role, db, "exit %s" % rc if rc is not None else
                "no answer in %.0f s" % RESTART_WAIT,
                indented(tail(log, 30) + tail(log + ".out", 10))))
            self.diagnose(s, r)
            return None
        return k

    def stop(self, k, r):
        rc = k.terminate(STOP_WAIT)
        # It ran on an intact file system: any ERROR it logged is worth a look.
        for line in tail(k.log_path, 2000):
            if " ERROR " in line:
                r.log_errors.append("%s: %s" % (k.name, line.split(" ", 1)[-1]))
        if rc != 0:
            r.bad_stops.append("%s exited with %s after SIGTERM" % (k.name, rc))
            r.findings.append("%s did not stop cleanly (exit %s); log tail:\n%s" % (
                k.name, rc, indented(tail(k.log_path, 15))))

    def check_acks(self, s, r, newest, ports):
        """Verifies every ack log of the scenario against ports: the newest
        count for this cut, older ones count only what they newly lost."""
        jobs = [(a, self.h.pool.submit(verify, self.h, a.path, ports)) for a in s.acks]
        worst = []
        for a, fut in jobs:
            v = fut.result()
            if v["error"]:
                r.errors.append("verify %s: %s" % (a.label, v["error"]))
                r.findings.append("kura verify could not check %s against %s:\n%s" % (
                    a.label, ports, indented(v["output"].splitlines()[-15:])))
                continue
            r.nan += v["nan"]
            if a in newest:
                r.lost += v["missing"]
                r.stale += v["stale"]
            else:
                dm = max(0, v["missing"] - a.missing)
                ds = max(0, v["stale"] - a.stale)
                r.old_lost += dm
                r.old_stale += ds
            if v["missing"] + v["stale"] > a.bad or v["nan"]:
                worst.append((a, v))
            a.missing, a.stale = max(a.missing, v["missing"]), max(a.stale, v["stale"])
            a.bad = a.missing + a.stale
        for a, v in worst:
            r.findings.append("ack log %s (%s) on ports %s:\n%s" % (
                a.label, "this cut" if a in newest else "an earlier cut", ports,
                indented(v["ports"] + v["bad"])))
        if worst and (self.args.fsync == "always" or any(v["nan"] for _, v in worst)):
            self.diagnose(s, r)

    def diagnose(self, s, r):
        """kura check and kura ulog verify of the post-cut state."""
        s.failed = True
        self.h.failed = True
        post = s.path("postcut")
        if not os.path.isdir(post):
            return
        for i in range(len(s.backings)):
            src = os.path.join(post, "backing%d" % i)
            work = s.path("postcut-check%d" % i)
            shutil.rmtree(work, ignore_errors=True)
            shutil.copytree(src, work, symlinks=True)
            rc, out = self.h.run([self.h.kura, "check", db_of(work)], 300)
            r.findings.append("kura check %s (post-cut copy) -> exit %s:\n%s" % (
                db_of(src), rc, indented(out.splitlines()[-15:])))
            ulog = os.path.join(work, "data", "kura.ulog")
            if os.path.isdir(ulog):
                argv = [self.h.kura, "ulog", "verify", ulog]
                try:
                    with open(os.path.join(ulog, "checkpoint")) as f:
                        argv += ["--after", f.read().split()[1]]   # "checkpoint LSN ..."
                except (OSError, IndexError):
                    pass
                rc, out = self.h.run(argv, 300)
                r.findings.append("%s (post-cut copy) -> exit %s:\n%s" % (
                    " ".join(argv[1:3] + argv[4:]), rc, indented(out.splitlines()[-10:])))
                try:
                    listing = sorted(os.listdir(os.path.join(src, "data", "kura.ulog")))
                    r.findings.append("post-cut ulog dir: " + " ".join(listing))
                except OSError:
                    pass
            shutil.rmtree(work, ignore_errors=True)
        r.findings.append("post-cut state kept in %s (with --keep)" % post)

    # -- the cut moments of a single server ----------------------------------------

    def cut_during(self, m, k, bench, mode, moment, rng, r):
        """Cuts m at the moment; returns once the cut is confirmed."""
        t0 = bench.t0
        if moment == "load":
            at = rng.uniform(0.3, LOAD_S - 0.3)
            sleep_until(t0 + at)
            m.cut(mode)
            r.how = "timed@%.2fs" % at
            return
        if moment == "fresh":
            at = rng.uniform(0.05, 0.8)
            sleep_until(t0 + at)
            m.cut(mode)
            r.how = "timed@%.2fs" % at
            return
        arms = {"checkpoint": ("fsync", "kura.tch", 3),
                "rotation": ("create", "*.ulog", 8),
                "removal": ("unlink", "*.ulog", 4),
                "checkpoint-file": ("rename", "checkpoint", 3)}
        if moment in arms:
            event, glob, maxskip = arms[moment]
            skip = rng.randint(0, maxskip)
            m.arm(mode, event, glob, skip)
            fired = wait_until(m.is_cut, max(0.0, t0 + LOAD_S - 0.05 - now()), 0.01)
            if not fired:
                fired = m.disarm_and_cut(mode)
            r.fired = fired
            r.how = "arm %s %s skip=%d: %s@%.2fs" % (event, glob, skip,
                                                   "fired" if fired else "fallback", now() - t0)
            return
        if moment == "shutdown":
            at = rng.uniform(0.3, LOAD_S - 0.3)
            armed = rng.random() < 0.4
            delay = rng.uniform(0.0, 0.3)
            sleep_until(t0 + at)
            k.proc.send_signal(signal.SIGTERM)
            ts = now()
            if armed:
                m.arm(mode, "fsync", "kura.tch", 0)
                fired = wait_until(lambda: m.is_cut() or not k.alive(), CUT_WAIT, 0.005) and \
                    m.is_cut()
                if not fired:
                    fired = m.disarm_and_cut(mode)
                r.fired = fired
                r.how = "SIGTERM@%.2fs, arm fsync kura.tch: %s +%.0fms" % (
                    at, "fired" if fired else "fallback", (now() - ts) * 1000)
            else:
                sleep_until(ts + delay)
                exited = not k.alive()
                m.cut(mode)
                r.how = "SIGTERM@%.2fs, cut +%.0fms%s" % (at, delay * 1000,
                                                         " (kurad had exited)" if exited else "")
            return
        raise AssertionError(moment)

    def cycle_single(self, r, rng):
        fresh = r.moment == "fresh"
        s = Scenario(self.h, "fresh") if fresh else self.scenario("main")
        r.scenario = "%s#%d" % (s.name, s.cycles + 1)
        s.cycles += 1
        value_size = 300 if rng.random() < 0.35 else 10
        seed = rng.getrandbits(63)
        r.notes.append("crashfs seed %d, value size %d" % (seed, value_size))
        m = self.mount(s, 0, seed, r.idx)
        k = bench = None
        try:
            k, ready = start_kurad(self.h, "kurad", db_of(m.mnt),
                                   self.log_path(s, r.idx, "mounted"), lambda p: [], START_WAIT)
            if not ready:
                s.dead = s.failed = True
                raise HarnessError("kurad did not start on the mount (before any cut): %s" %
                                   " | ".join(tail(k.log_path, 8)))
            ack = s.new_ack(r.idx)
            s.acks.append(ack)
            bench = Bench(self.h, k.port, ack.path, ack.label + ":", LOAD_S, value_size, 1000,
                          self.log_path(s, r.idx, "bench")).start()
            if r.moment == "optimize":
                self.optimize_cut(s, m, k, bench, r, rng)
            else:
                self.cut_during(m, k, bench, r.mode, r.moment, rng, r)
            self.crash([m], [k], r)
            r.acked += bench.wait()
        finally:
            for p in (k, bench):
                if p is not None and p.proc is not None and p.proc.poll() is None:
                    p.proc.kill()
                    p.proc.wait(timeout=KILL_WAIT)
            m.teardown(quiet=True)
        s.snapshot(r.idx)
        k2 = self.restart(s, r, "restart", db_of(s.backings[0]), lambda p: [])
        if k2 is None:
            return
        try:
            self.check_acks(s, r, [ack], [k2.port])
        finally:
            self.stop(k2, r)
        if fresh:
            s.remove()

    def optimize_cut(self, s, m, k, bench, r, rng):
        """Load, stop kurad cleanly, then cut inside kura optimize on the mount."""
        bench.wait()
        rc = k.terminate(STOP_WAIT)
        if rc != 0:
            r.bad_stops.append("kurad on the mount exited with %s after SIGTERM" % rc)
        bnum = rng.randint(2000, 50000)
        variant = rng.choice(["timed", "timed", "rename", "fsync"])
        delay = rng.uniform(0.0, 0.15)      # optimize of a few MB takes ~0.1-0.3 s
        if variant == "rename":
            m.arm(r.mode, "rename", "kura.tch*", 0)
        elif variant == "fsync":
            m.arm(r.mode, "fsync", "*.rebuild", 0)
        out = self.log_path(s, r.idx, "optimize")
        t0 = now()
        p = self.h.spawn([self.h.kura, "optimize", "%s#bnum=%d" % (db_of(m.mnt), bnum)], out)
        if variant == "timed":
            wait_until(lambda: p.poll() is not None, delay, 0.005)
            done = p.poll() is not None
            m.cut(r.mode)
            r.how = "optimize bnum=%d, cut +%.0fms%s" % (bnum, (now() - t0) * 1000,
                                                       " (optimize had ended)" if done else "")
        else:
            fired = wait_until(lambda: m.is_cut() or p.poll() is not None, OPTIMIZE_WAIT, 0.005) \
                and m.is_cut()
            if not fired:
                fired = m.disarm_and_cut(r.mode)
            r.fired = fired
            r.how = "optimize bnum=%d, arm %s: %s +%.0fms" % (
                bnum, variant, "fired" if fired else "fallback", (now() - t0) * 1000)
        try:
            orc = p.wait(timeout=OPTIMIZE_WAIT)
        except subprocess.TimeoutExpired:
            p.kill()
            p.wait(timeout=KILL_WAIT)
            orc = "timeout"
        r.notes.append("optimize exit %s: %s" % (orc, " | ".join(tail(out, 3))))
        # the bench already ended; crash() and bench.wait() see it done

    # -- replication scenarios --------------------------------------------------

    def cycle_resync_standby(self, r, rng):
        """Master on a plain dir; an empty standby on crashfs is cut while it
        receives the snapshot (or soon after)."""
        s = self.scenario("resync-standby")
        r.scenario = "%s#%d" % (s.name, s.cycles + 1)
        s.cycles += 1
        value_size = 300 if rng.random() < 0.5 else 10
        seed = rng.getrandbits(63)
        at = rng.uniform(0.0, 1.0)
        r.notes.append("crashfs seed %d, value size %d" % (seed, value_size))
        master_dir = s.backings[0]               # plain, never cut
        sb = os.path.join(s.dir, "standby-c%d" % r.idx)   # fresh BACKING each cycle
        os.makedirs(os.path.join(sb, "data"))
        procs = []
        master = standby = m = None
        try:
            master, ready = start_kurad(self.h, "master", db_of(master_dir),
                                        self.log_path(s, r.idx, "master"),
                                        lambda p: ["-sid", "1"], START_WAIT)
            procs.append(master)
            if not ready:
                s.dead = s.failed = True
                raise HarnessError("the master did not start: " +
                                   " | ".join(tail(master.log_path, 8)))
            fill = s.new_ack(r.idx, "f")
            s.acks.append(fill)
            b = Bench(self.h, master.port, fill.path, fill.label + ":", 1.5, value_size, FILL_KEYS,
                      self.log_path(s, r.idx, "bench-fill")).start()
            procs.append(b)
            r.acked += b.wait()
            live = s.new_ack(r.idx, "g")
            s.acks.append(live)
            mp = master.port
            m = CrashMount(self.h, sb, s.path("mnt", "standby"), s.path("ctl-standby.sock"), seed,
                           s.path("logs", "crashfs-c%d.log" % r.idx)).start()
            standby = Kurad(self.h, "standby", db_of(m.mnt), self.h.free_port(),
                            self.log_path(s, r.idx, "standby-mounted"),
                            ["-sid", "2", "-mhost", "127.0.0.1", "-mport", str(mp)]).start()
            procs.append(standby)
            t0 = now()
            b2 = Bench(self.h, mp, live.path, live.label + ":", LOAD_S, value_size, 1000,
                       self.log_path(s, r.idx, "bench-live")).start()
            procs.append(b2)
            sleep_until(t0 + at)
            phase = snapshot_phase(standby.log_path)
            m.cut(r.mode)
            r.how = "cut +%.0fms after the standby started (%s)" % ((now() - t0) * 1000, phase)
            self.crash([m], [standby], r)
            r.acked += b2.wait()
            snapshot_of(s, [sb], r.idx)
            k2 = self.restart(s, r, "standby-restart", db_of(sb),
                              lambda p: ["-sid", "2", "-mhost", "127.0.0.1", "-mport", str(mp)])
            if k2 is None:
                return
            procs.append(k2)
            if not self.catch_up(k2.port, mp, r, "standby"):
                r.findings.append("standby log tail:\n" + indented(tail(k2.log_path, 15)))
            self.check_acks(s, r, [fill, live], [mp, k2.port])
            self.stop(k2, r)
            self.stop(master, r)
        finally:
            kill_all(procs)
            if m is not None:
                m.teardown(quiet=True)
        if not s.failed:
            shutil.rmtree(sb, ignore_errors=True)

    def cycle_resync_master(self, r, rng):
        """Master on crashfs (persistent BACKING) cut while it serves a full
        snapshot to an empty standby on a plain dir."""
        s = self.scenario("resync-master")
        r.scenario = "%s#%d" % (s.name, s.cycles + 1)
        s.cycles += 1
        value_size = 300 if rng.random() < 0.5 else 10
        seed = rng.getrandbits(63)
        at = rng.uniform(0.0, 1.0)
        r.notes.append("crashfs seed %d, value size %d" % (seed, value_size))
        sd = os.path.join(s.dir, "standby-c%d" % r.idx)
        os.makedirs(os.path.join(sd, "data"))
        procs = []
        m = None
        try:
            m = self.mount(s, 0, seed, r.idx)
            master, ready = start_kurad(self.h, "master", db_of(m.mnt),
                                        self.log_path(s, r.idx, "master-mounted"),
                                        lambda p: ["-sid", "1"], START_WAIT)
            procs.append(master)
            if not ready:
                s.dead = s.failed = True
                raise HarnessError("the master did not start on the mount: " +
                                   " | ".join(tail(master.log_path, 8)))
            mp = master.port
            fill = s.new_ack(r.idx, "f")
            s.acks.append(fill)
            b = Bench(self.h, mp, fill.path, fill.label + ":", 1.5, value_size, FILL_KEYS,
                      self.log_path(s, r.idx, "bench-fill")).start()
            procs.append(b)
            r.acked += b.wait()
            live = s.new_ack(r.idx, "g")
            s.acks.append(live)
            standby = Kurad(self.h, "standby", db_of(sd), self.h.free_port(),
                            self.log_path(s, r.idx, "standby"),
                            ["-sid", "2", "-mhost", "127.0.0.1", "-mport", str(mp)]).start()
            procs.append(standby)
            t0 = now()
            b2 = Bench(self.h, mp, live.path, live.label + ":", LOAD_S, value_size, 1000,
                       self.log_path(s, r.idx, "bench-live")).start()
            procs.append(b2)
            sleep_until(t0 + at)
            phase = snapshot_phase(standby.log_path)
            m.cut(r.mode)
            r.how = "cut +%.0fms after the standby started (standby %s)" % (
                (now() - t0) * 1000, phase)
            self.crash([m], [master], r)
            r.acked += b2.wait()
            s.snapshot(r.idx)
            if not standby.alive():
                raise HarnessError("the standby died: " + " | ".join(tail(standby.log_path, 8)))
            # Same port: the standby keeps following 127.0.0.1:mp.
            k2 = self.restart(s, r, "master-restart", db_of(s.backings[0]),
                              lambda p: ["-sid", "1"], port=mp)
            if k2 is None:
                return
            procs.append(k2)
            if not self.catch_up(standby.port, mp, r, "standby"):
                r.findings.append("standby log tail:\n" + indented(tail(standby.log_path, 15)))
            self.check_acks(s, r, [fill, live], [mp, standby.port])
            self.stop(standby, r)
            self.stop(k2, r)
        finally:
            kill_all(procs)
            if m is not None:
                m.teardown(quiet=True)
        if not s.failed:
            shutil.rmtree(sd, ignore_errors=True)

    def cycle_pair(self, r, rng):
        """Both masters of a pair on crashfs, both cut at the same instant."""
        s = self.scenario("pair", nbacking=2)
        r.scenario = "%s#%d" % (s.name, s.cycles + 1)
        s.cycles += 1
        value_size = 300 if rng.random() < 0.35 else 10
        seeds = [rng.getrandbits(63), rng.getrandbits(63)]
        at = rng.uniform(0.3, LOAD_S - 0.3)
        r.notes.append("crashfs seeds %d %d, value size %d" % (seeds[0], seeds[1], value_size))
        procs = []
        mounts = []
        try:
            mounts = [self.mount(s, i, seeds[i], r.idx) for i in range(2)]
            kurads = self.start_pair(s, r, [db_of(m.mnt) for m in mounts], "mounted", START_WAIT)
            procs += kurads
            if not all(k.alive() and answers_version(k.port) for k in kurads):
                s.dead = s.failed = True
                raise HarnessError("the pair did not start on the mounts: " + " | ".join(
                    tail(kurads[0].log_path, 5) + tail(kurads[1].log_path, 5)))
            acks = [s.new_ack(r.idx, t) for t in "ab"]
            s.acks += acks
            benches = [Bench(self.h, kurads[i].port, acks[i].path, acks[i].label + ":", LOAD_S,
                             value_size, 1000, self.log_path(s, r.idx, "bench-" + "ab"[i])).start()
                       for i in range(2)]
            procs += benches
            socks = [m.connect() for m in mounts]
            try:
                sleep_until(benches[0].t0 + at)
                for sk in socks:                       # back to back
                    CrashMount.send(sk, "cut " + r.mode)
                replies = [CrashMount.reply(sk) for sk in socks]
            finally:
                for sk in socks:
                    sk.close()
            if replies != ["ok cut", "ok cut"]:
                raise HarnessError("pair cut: %s" % replies)
            r.how = "both cut @%.2fs" % at
            self.crash(mounts, kurads, r)
            for b in benches:
                r.acked += b.wait()
            s.snapshot(r.idx)
            k2 = self.start_pair(s, r, [db_of(b) for b in s.backings], "restart", RESTART_WAIT, r)
            procs += k2
            if any(k is None for k in k2):
                return
            ports = [k.port for k in k2]
            for f, mm in ((0, 1), (1, 0)):
                if not self.catch_up(ports[f], ports[mm], r, k2[f].name):
                    r.findings.append("%s log tail:\n%s" % (
                        k2[f].name, indented(tail(k2[f].log_path, 15))))
            self.check_acks(s, r, acks, ports)
            for k in k2:
                self.stop(k, r)
        finally:
            kill_all(procs)
            for m in mounts:
                m.teardown(quiet=True)

    def cycle_active(self, r, rng):
        """PC7: a pair under -fsync peer; the active (sid 1) on crashfs, the
        standby (sid 2) on a plain directory that never loses power. Once the
        standby reports writes, the active is cut under load, and every write
        it acknowledged is checked on the standby alone; then the active
        restarts on what its disk kept and the pair converges."""
        s = self.scenario("active", nbacking=2)
        r.scenario = "%s#%d" % (s.name, s.cycles + 1)
        s.cycles += 1
        value_size = 300 if rng.random() < 0.35 else 10
        seed = rng.getrandbits(63)
        at = rng.uniform(0.3, LOAD_S - 0.3)
        r.notes.append("crashfs seed %d, value size %d" % (seed, value_size))
        procs = []
        m = None
        try:
            m = self.mount(s, 0, seed, r.idx)
            kurads = self.start_pair(s, r, [db_of(m.mnt), db_of(s.backings[1])], "mounted",
                                     START_WAIT)
            procs += kurads
            if not all(k.alive() and answers_version(k.port) for k in kurads):
                s.dead = s.failed = True
                raise HarnessError("the pair did not start: " + " | ".join(
                    tail(kurads[0].log_path, 5) + tail(kurads[1].log_path, 5)))
            active, standby = kurads
            # The standby links on its first report of a write (U11 ends).
            mc_request(active.port, "set pc7:link 0 0 1\r\nx", [b"\r\n"])
            if not wait_until(lambda: stats(active.port).get("kura_fsync_peers_live") == "1",
                              CATCHUP_WAIT, 0.02):
                raise HarnessError("the standby never reported a write: " +
                                   " | ".join(tail(active.log_path, 5)))
            ack = s.new_ack(r.idx, "a")
            s.acks.append(ack)
            bench = Bench(self.h, active.port, ack.path, ack.label + ":", LOAD_S, value_size,
                          1000, self.log_path(s, r.idx, "bench")).start()
            procs.append(bench)
            sleep_until(bench.t0 + at)
            st = stats(active.port)
            m.cut(r.mode)
            r.how = "active cut @%.2fs" % at
            r.notes.append("before the cut: fallbacks %s, stalls %s, peers %s" % (
                st.get("kura_fsync_peer_fallbacks"), st.get("kura_fsync_peer_stalls"),
                st.get("kura_fsync_peers_live")))
            self.crash([m], [active], r)
            r.acked += bench.wait()
            s.snapshot(r.idx)
            # PC7: the standby alone holds every acknowledged write.
            self.check_acks(s, r, [ack], [standby.port])
            # The active comes back on the port the standby follows.
            k2 = self.restart(s, r, "active-restart", db_of(s.backings[0]),
                              lambda p: ["-sid", "1", "-mhost", "127.0.0.1", "-mport",
                                         str(standby.port)], port=active.port)
            if k2 is None:
                return
            procs.append(k2)
            caught = True
            for f, mm, name in ((standby.port, k2.port, "standby"),
                                (k2.port, standby.port, "active")):
                if not self.catch_up(f, mm, r, name):
                    caught = False
                    r.findings.append("%s log tail:\n%s" % (
                        name, indented(tail(standby.log_path if f == standby.port
                                            else k2.log_path, 15))))
            # R6: the active got back from the standby what the cut took.
            if caught:
                self.check_acks(s, r, [ack], [standby.port, k2.port])
            self.stop(k2, r)
            self.stop(standby, r)
        finally:
            kill_all(procs)
            if m is not None:
                m.teardown(quiet=True)

    def start_pair(self, s, r, dbs, role, deadline, restart_result=None):
        """Starts two masters naming each other (-sid 1 and 2)."""
        for attempt in range(3):
            ports = [self.h.free_port(), self.h.free_port()]
            ks = []
            for i in range(2):
                ks.append(Kurad(self.h, "%s%d" % (role, i + 1), dbs[i], ports[i],
                                self.log_path(s, r.idx, "%s%d" % (role, i + 1)),
                                ["-sid", str(i + 1), "-mhost", "127.0.0.1", "-mport",
                                 str(ports[1 - i])]).start())
            ready = [k.wait_ready(deadline) for k in ks]
            if all(ready):
                break
            if attempt < 2 and any(k.port_taken() for k in ks):
                kill_all(ks)
                continue
            break
        if restart_result is None:
            return ks
        out = []
        for k, ok in zip(ks, ready):
            info = scan_restart_log(k.log_path)
            r.unclean += int(info["unclean"])
            r.rebuilt += int(info["rebuilt"])
            r.redo += info["redo"]
            for line in info["lines"]:
                r.notes.append("%s: %s" % (k.name, line.split(" ", 1)[-1]))
            if ok:
                out.append(k)
                continue
            rc = k.proc.poll()
            r.refused += 1
            s.dead = s.failed = True
            r.findings.append("%s refused to start on %s (%s); its log:\n%s" % (
                k.name, k.db, "exit %s" % rc if rc is not None else
                "no answer in %.0f s" % deadline,
                indented(tail(k.log_path, 30) + tail(k.log_path + ".out", 10))))
            out.append(None)
        if any(k is None for k in out):
            kill_all(ks)
            self.diagnose(s, r)
        return out

    def catch_up(self, follower, master, r, name):
        """Waits until the follower holds its master's whole log: connected,
        no records lagging, its applied position at the master's durable end."""
        state = {}

        def done():
            try:
                ms, fs = stats(master), stats(follower)
            except OSError:
                state["n"] = 0
                return False
            end = int(ms.get("kura_ulog_durable_lsn", ms.get("kura_ulog_last_lsn", "0")))
            ok = (fs.get("kura_repl_master_connected") == "1" and
                  int(fs.get("kura_repl_master_lag_records", "1")) == 0 and
                  int(fs.get("kura_repl_master_applied_lsn", "0")) >= end)
            state["n"] = state.get("n", 0) + 1 if ok else 0
            state["fs"] = fs
            return state["n"] >= 3
        t0 = now()
        if wait_until(done, CATCHUP_WAIT, 0.1):
            self.h.debug("%s caught up in %.1f s" % (name, now() - t0))
            return True
        fs = state.get("fs", {})
        r.findings.append("%s did not catch up with its master in %.0f s: %s" % (
            name, CATCHUP_WAIT, " ".join("%s=%s" % (k[16:], v) for k, v in sorted(fs.items())
                                         if k.startswith("kura_repl_master"))))
        r.errors.append("%s did not catch up" % name)
        return False

    # -- the run ------------------------------------------------------------------

    def run_cut(self, idx, moment, mode, k):
        r = CutResult(idx, moment, mode, k)
        rng = random.Random("%d/%s/%s/%d" % (self.args.seed, moment, mode, k))
        t0 = now()
        try:
            if moment in SINGLE_MOMENTS or moment == "fresh":
                self.cycle_single(r, rng)
            elif moment == "resync-standby":
                self.cycle_resync_standby(r, rng)
            elif moment == "resync-master":
                self.cycle_resync_master(r, rng)
            elif moment == "pair":
                self.cycle_pair(r, rng)
            elif moment == "active":
                self.cycle_active(r, rng)
            elif moment == "kill9":
                self.cycle_kill9(r, rng)
        except HarnessError as e:
            r.errors.append(str(e))
            for s in self.scen.values():
                if r.scenario.startswith(s.name + "#"):
                    s.dead = True
        except (OSError, subprocess.SubprocessError) as e:
            r.errors.append("%s: %s" % (type(e).__name__, e))
            for s in self.scen.values():
                if r.scenario.startswith(s.name + "#"):
                    s.dead = True
        r.seconds = now() - t0
        if r.failed(self.args.fsync):
            self.h.failed = True
            for s in self.scen.values():
                if r.scenario.startswith(s.name + "#"):
                    s.failed = True
        return r


def snapshot_phase(log_path):
    text = "\n".join(tail(log_path, 200))
    if "snapshot of" in text:
        return "after the snapshot"
    if "receiving a full snapshot" in text:
        return "during the snapshot"
    return "before any snapshot"


def snapshot_of(s, dirs, idx):
    dst = s.path("postcut")
    shutil.rmtree(dst, ignore_errors=True)
    os.makedirs(dst)
    for i, d in enumerate(dirs):
        shutil.copytree(d, os.path.join(dst, "backing%d" % i), symlinks=True)


def kill_all(procs):
    for p in procs:
        if p is None:
            continue
        proc = p.proc if hasattr(p, "proc") else p
        if proc is not None and proc.poll() is None:
            try:
                proc.kill()
                proc.wait(timeout=KILL_WAIT)
            except (OSError, subprocess.TimeoutExpired):
                pass


# ---- report ------------------------------------------------------------------

def print_cut(h, r, n):
    status = "FAIL" if r.failed(h.args.fsync) else "ok"
    recov = []
    if r.refused:
        recov.append("REFUSED")
    recov.append("unclean" if r.unclean else "clean")
    if r.rebuilt:
        recov.append("rebuilt")
    recov.append("redo %d" % r.redo)
    line = "cut %d/%d %s/%s %s [%s] %s; acked %d, this cut: %d missing %d stale" % (
        r.idx + 1, n, r.moment, r.mode, status, r.scenario, r.how, r.acked, r.lost, r.stale)
    if r.old_lost or r.old_stale:
        line += "; OLDER CUTS: %d missing %d stale" % (r.old_lost, r.old_stale)
    if r.nan:
        line += "; %d HALF-APPLIED" % r.nan
    if r.log_errors:
        line += "; %d ERROR lines logged after the restart" % len(r.log_errors)
    line += "; restart %s (%.1fs)" % (", ".join(recov), r.seconds)
    h.log(line)
    for e in r.errors:
        h.log("    error: " + e)
    for b in r.bad_stops:
        h.log("    " + b)
    for e in r.log_errors[:10]:
        h.log("    logged: " + e)
    if h.verbose or r.failed(h.args.fsync):
        for note in r.notes:
            h.log("    " + note)
    for f in r.findings:
        h.log("    " + f)
    if r.failed(h.args.fsync):
        h.log("    reproduce: %s --seed %d --moments %s --modes %s --cuts %d --fsync %s --keep" % (
            os.path.relpath(os.path.abspath(__file__), REPO), h.args.seed, r.moment, r.mode,
            r.k + 1, h.args.fsync))


def print_summary(h, results, moments, modes, elapsed):
    n = len(results)
    R = sum(r.refused for r in results)
    L = sum(r.lost + r.old_lost for r in results)
    S = sum(r.stale + r.old_stale for r in results)
    nan = sum(r.nan for r in results)
    errs = sum(1 for r in results if r.errors)
    stops = sum(len(r.bad_stops) for r in results)
    h.log("")
    h.log("%-16s %-9s %5s %5s %6s %7s %7s %8s %5s %5s %7s" % (
        "moment", "mode", "cuts", "fired", "acked", "unclean", "rebuilt", "redo", "lost",
        "stale", "refused"))
    for mo in moments:
        for md in modes:
            rs = [r for r in results if r.moment == mo and r.mode == md]
            if not rs:
                continue
            armed = [r for r in rs if r.fired is not None]
            h.log("%-16s %-9s %5d %5s %6d %7d %7d %8d %5d %5d %7d" % (
                mo, md, len(rs), "%d/%d" % (sum(1 for r in armed if r.fired), len(armed))
                if armed else "-", sum(r.acked for r in rs) // max(1, len(rs)),
                sum(r.unclean for r in rs), sum(r.rebuilt for r in rs),
                sum(r.redo for r in rs), sum(r.lost + r.old_lost for r in rs),
                sum(r.stale + r.old_stale for r in rs), sum(r.refused for r in rs)))
    h.log("(acked: average acknowledged writes per cut; fired: armed triggers that fired "
          "before the fallback cut; unclean/rebuilt: restarts that found the database not "
          "closed cleanly / rebuilt it; redo: log records redone)")
    h.log("rebuilds: %d; unclean restarts: %d; redo records: %d; older cuts' writes lost: %d "
          "missing %d stale; half-applied values: %d; harness errors: %d; unclean stops: %d; "
          "cuts whose restarted kurads logged ERROR: %d" % (
              sum(r.rebuilt for r in results), sum(r.unclean for r in results),
              sum(r.redo for r in results), sum(r.old_lost for r in results),
              sum(r.old_stale for r in results), nan, errs, stops,
              sum(1 for r in results if r.log_errors)))
    h.log("seed %d, -fsync %s, %.0f s" % (h.args.seed, h.args.fsync, elapsed))
    for cg in list(h.cgroups):
        h.release_cgroup(cg)
    if h.memlimit:
        h.log("every kurad in a memory cgroup of %d MiB%s: %d OOM kills" % (
            h.memlimit >> 20, ", %d records prefilled" % h.args.prefill
            if h.args.prefill else "", h.ooms))
    h.log("%d cuts, %d refused to start, %d acknowledged writes lost, %d stale" % (n, R, L, S))
    if h.args.fsync == "always":
        ok = R == 0 and L == 0 and S == 0 and nan == 0 and errs == 0 and stops == 0
    else:
        ok = R == 0 and nan == 0 and errs == 0 and stops == 0
    return ok and h.ooms == 0


# ---- main --------------------------------------------------------------------

def parse_args(argv):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--kurad", default=os.path.join(REPO, "build", "src", "kurad"))
    ap.add_argument("--kura", default=os.path.join(REPO, "build", "tools", "kura"))
    ap.add_argument("--crashfs",
                    default=os.path.join(REPO, "build", "tests", "crashfs", "crashfs"),
                    help="crashfs binary, built by the caller (default %(default)s)")
    ap.add_argument("--cuts", type=int, default=20)
    ap.add_argument("--seed", type=int, default=None)
    ap.add_argument("--modes", default=",".join(MODES))
    ap.add_argument("--moments", default=",".join(MOMENTS))
    ap.add_argument("--fsync", default="always", choices=["always", "100", "never", "peer"])
    ap.add_argument("--keep", action="store_true", help="keep temp dirs on failure")
    ap.add_argument("--budget", type=float, default=None,
                    help="stop starting new cuts after this many seconds")
    ap.add_argument("--scenario-cycles", type=int, default=30,
                    help="cuts on one BACKING before a new scenario starts "
                         "(default 30; resync scenarios at most %d)" % RESYNC_CYCLES)
    ap.add_argument("--memory-limit", default="0",
                    help="run every kurad in a memory cgroup of this size (64m, 1g)")
    ap.add_argument("--prefill", type=int, default=0,
                    help="1,000-byte records loaded into each single-server scenario")
    ap.add_argument("--verbose", action="store_true")
    a = ap.parse_args(argv)
    units = {"k": 1 << 10, "m": 1 << 20, "g": 1 << 30}
    ml = a.memory_limit.lower()
    try:
        a.memory_limit = int(ml[:-1]) * units[ml[-1]] if ml[-1:] in units else int(ml)
    except ValueError:
        ap.error("bad --memory-limit %s" % ml)
    a.modes = [x for x in a.modes.split(",") if x]
    a.moments = [x for x in a.moments.split(",") if x]
    known = MOMENTS + EXTRA_MOMENTS + (PEER_MOMENTS if a.fsync == "peer" else [])
    bad = [x for x in a.modes if x not in MODES] + [x for x in a.moments if x not in known]
    if bad or not a.modes or not a.moments or a.cuts < 1 or a.scenario_cycles < 1:
        ap.error("bad --modes/--moments/--cuts: %s" % ",".join(bad))
    if a.seed is None:
        a.seed = int(time.time())
    return a


def skip(msg):
    print("SKIP: " + msg, flush=True)
    sys.exit(77)


def main(argv):
    args = parse_args(argv)
    if os.geteuid() != 0:
        skip("powercut needs root (FUSE mounts, fusectl abort)")
    if not os.path.exists("/dev/fuse"):
        skip("/dev/fuse is missing")
    if not (os.path.isfile(args.crashfs) and os.access(args.crashfs, os.X_OK)):
        skip("no crashfs binary at %s (build it first: see the top of this file)" % args.crashfs)
    for path in (args.kurad, args.kura):
        if not (os.path.isfile(path) and os.access(path, os.X_OK)):
            print("powercut: %s not found; build kura first" % path, file=sys.stderr)
            return 2
    if not os.path.ismount("/sys/fs/fuse/connections"):
        subprocess.run(["mount", "-t", "fusectl", "fusectl", "/sys/fs/fuse/connections"],
                       check=False, timeout=MOUNT_WAIT)
    h = Harness(args)
    atexit.register(h.cleanup)

    def on_signal(signum, frame):
        raise Interrupted(signal.Signals(signum).name)
    signal.signal(signal.SIGINT, on_signal)
    signal.signal(signal.SIGTERM, on_signal)
    signal.signal(signal.SIGHUP, on_signal)

    print("powercut: seed %d, %d cuts, modes %s, moments %s, -fsync %s%s; temp %s" % (
        args.seed, args.cuts, ",".join(args.modes), ",".join(args.moments), args.fsync,
        ", budget %.0f s" % args.budget if args.budget else "", h.tmp), flush=True)
    runner = Runner(h)
    results = []
    start = now()
    interrupted = None
    count = {}
    try:
        for i in range(args.cuts):
            if args.budget is not None and now() - start >= args.budget:
                h.log("budget of %.0f s spent: no new cuts" % args.budget)
                break
            nm = len(args.moments)
            moment = args.moments[i % nm]
            mode = args.modes[(i % nm + i // nm) % len(args.modes)]
            k = count.get((moment, mode), 0)
            count[(moment, mode)] = k + 1
            r = runner.run_cut(i, moment, mode, k)
            results.append(r)
            print_cut(h, r, args.cuts)
    except Interrupted as e:
        interrupted = str(e)
        h.failed = True
        h.log("interrupted by %s" % interrupted)
    finally:
        try:
            ok = print_summary(h, results, args.moments, args.modes, now() - start)
        except Interrupted:
            ok = False
        if not ok:
            h.failed = True
        else:
            for s in runner.scen.values():
                s.remove()
        h.cleanup()
    if interrupted:
        return 130
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
