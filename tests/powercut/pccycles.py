"""pccycles.py: one cut cycle per moment. Each cycle starts what its moment
needs (one server, a standby being resynced, a master serving a
snapshot, both masters of a pair, the active of a -fsync peer pair),
runs the load, cuts power at the moment, restarts on what BACKING kept
and checks every acknowledged write (pcverify.py). run_cut turns any
harness error into a cut that proved nothing.
"""
import os
import shutil
import subprocess

from pcbase import (CATCHUP_WAIT, KILL_WAIT, OPTIMIZE_WAIT, RESTART_WAIT, START_WAIT,
                    STOP_WAIT, HarnessError, indented, now, sleep_until, tail, wait_until)
from pcload import Bench, Kurad, answers_version, db_of, kill_all, mc_request, stats, start_kurad
from pcmount import CrashMount
from pcschedule import LOAD_S, SINGLE_MOMENTS, cut_during, cut_rng
from pcscenario import Scenario, Steps, snapshot_of, snapshot_phase
from pcverify import CutResult, catch_up, check_acks

FILL_KEYS = 10000       # --own-keys of the bench that fills a resync master


class Runner(Steps):
    """The cycles of every moment; run_cut runs the one of a cut's moment."""

    # -- the cut moments of a single server ----------------------------------------

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
        k2 = self.restart(s, r, "restart", db, lambda p: [], same_boot=True)
        if k2 is None:
            return
        try:
            check_acks(self.h, s, r, [ack], [k2.port])
        finally:
            self.stop(k2, r)

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
                cut_during(m, k, bench, r.mode, r.moment, rng, r)
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
            check_acks(self.h, s, r, [ack], [k2.port])
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
            if not catch_up(self.h, k2.port, mp, r, "standby"):
                r.findings.append("standby log tail:\n" + indented(tail(k2.log_path, 15)))
            check_acks(self.h, s, r, [fill, live], [mp, k2.port])
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
            if not catch_up(self.h, standby.port, mp, r, "standby"):
                r.findings.append("standby log tail:\n" + indented(tail(standby.log_path, 15)))
            check_acks(self.h, s, r, [fill, live], [mp, standby.port])
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
                if not catch_up(self.h, ports[f], ports[mm], r, k2[f].name):
                    r.findings.append("%s log tail:\n%s" % (
                        k2[f].name, indented(tail(k2[f].log_path, 15))))
            check_acks(self.h, s, r, acks, ports)
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
            check_acks(self.h, s, r, [ack], [standby.port])
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
                if not catch_up(self.h, f, mm, r, name):
                    caught = False
                    r.findings.append("%s log tail:\n%s" % (
                        name, indented(tail(standby.log_path if f == standby.port
                                            else k2.log_path, 15))))
            # R6: the active got back from the standby what the cut took.
            if caught:
                check_acks(self.h, s, r, [ack], [standby.port, k2.port])
            self.stop(k2, r)
            self.stop(standby, r)
        finally:
            kill_all(procs)
            if m is not None:
                m.teardown(quiet=True)

    # -- the run ------------------------------------------------------------------

    def run_cut(self, idx, moment, mode, k):
        r = CutResult(idx, moment, mode, k)
        rng = cut_rng(self.args.seed, moment, mode, k)
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
