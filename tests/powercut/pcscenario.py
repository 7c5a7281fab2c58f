"""pcscenario.py: what persists from cut to cut, and the steps every cycle
is made of. A Scenario holds the BACKING directories and ack logs of a run
of cuts, so that the database grows and each recovery starts from what
the last one left. Steps, the base of the Runner (pccycles.py), keeps the
live scenarios and does the common steps: mount crashfs, crash after a
cut (kill -9, abort, unmount), restart kurad on BACKING and record a
refusal (PC1), stop it cleanly (PC5), start a master/master pair.
"""
import os
import shutil
import subprocess

from pcbase import (KILL_WAIT, RESTART_WAIT, START_WAIT, STOP_WAIT, HarnessError,
                    indented, tail)
from pcload import AckLog, Kurad, db_of, kill_all, start_kurad
from pcmount import CrashMount
from pcverify import diagnose, scan_restart_log

RESYNC_CYCLES = 10      # cuts on one resync scenario (each sends the whole database)


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


class Steps:
    """The live scenarios (one per kind) and the steps the cycles share."""

    def __init__(self, h):
        self.h = h
        self.args = h.args
        self.scen = {}          # kind -> live Scenario

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
        self.h.new_boot()
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

    def restart(self, s, r, role, db, extra_for_port, port=None, same_boot=False):
        """Restarts kurad on BACKING; None if it refused (then it is recorded).
        same_boot: the machine kept running (kill -9, no power cut)."""
        log = self.log_path(s, r.idx, role)
        k, ready = start_kurad(self.h, role, db, log, extra_for_port, RESTART_WAIT, port)
        info = scan_restart_log(log)
        if info["unclean"] and info["same_boot"] != same_boot:
            # store.h D8: only a crash without a power cut may skip the walk.
            r.errors.append("%s: the restart took the machine for %s" % (
                role, "the same boot" if info["same_boot"] else "a new boot"))
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
            diagnose(self.h, s, r)
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
            diagnose(self.h, s, r)
        return out
