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

What each cut asserts (src/store.h D1-D8, src/ulog.h U3, U7, U9 and
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

The harness is split by responsibility, each part in a module beside this
one: pcbase.py (waits, processes, temporary files, cleanup), pcmount.py
(crashfs), pcschedule.py (the modes, the moments and which cut gets which),
pcload.py (kurad, kura bench and its ack log), pcverify.py (what a cut
found), pcscenario.py (what persists from cut to cut, the shared steps),
pccycles.py (one cycle per moment) and pcreport.py (the output). This file
is the command line.
"""
import argparse
import atexit
import os
import signal
import subprocess
import sys
import time

from pcbase import MOUNT_WAIT, REPO, Harness, Interrupted, now
from pccycles import Runner
from pcreport import print_cut, print_summary
from pcschedule import EXTRA_MOMENTS, MODES, MOMENTS, PEER_MOMENTS, cuts
from pcscenario import RESYNC_CYCLES


def parse_args(argv):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--kurad", default=os.path.join(REPO, "build", "src", "kurad"))
    ap.add_argument("--kura", default=os.path.join(REPO, "build", "tools", "kura", "kura"))
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
    try:
        for i, moment, mode, k in cuts(args.moments, args.modes, args.cuts):
            if args.budget is not None and now() - start >= args.budget:
                h.log("budget of %.0f s spent: no new cuts" % args.budget)
                break
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
