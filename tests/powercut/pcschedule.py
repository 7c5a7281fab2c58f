"""pcschedule.py: the cut schedule of the power-cut harness: the power-loss
modes and the moments (powercut.py's docstring says what each is), which
moment and mode each cut of a run gets, the random choices of a cut
(derived from the run seed so that a cut replays alone), and how a cut
lands on its moment while the load runs: timed, or through a crashfs
trigger armed on a file system event.
"""
import random
import signal

from pcbase import CUT_WAIT, now, sleep_until, wait_until

MODES = ["drop", "torn", "writeback"]
MOMENTS = ["load", "checkpoint", "rotation", "removal", "checkpoint-file", "fresh",
           "shutdown", "optimize", "resync-standby", "resync-master", "pair"]
PEER_MOMENTS = ["active"]   # --fsync peer only
EXTRA_MOMENTS = ["kill9"]   # only when named
SINGLE_MOMENTS = {"load", "checkpoint", "rotation", "removal", "checkpoint-file",
                  "shutdown", "optimize"}

LOAD_S = 2.0            # bench duration of a cycle


def cuts(moments, modes, n):
    """The schedule: (index, moment, mode, k) for each of n cuts. Moments go
    round-robin and modes rotate so that every mode meets every moment; k
    counts the earlier cuts of the same moment and mode."""
    count = {}
    for i in range(n):
        nm = len(moments)
        moment = moments[i % nm]
        mode = modes[(i % nm + i // nm) % len(modes)]
        k = count.get((moment, mode), 0)
        count[(moment, mode)] = k + 1
        yield i, moment, mode, k


def cut_rng(seed, moment, mode, k):
    """Every random choice of the k-th cut of this moment and mode."""
    return random.Random("%d/%s/%s/%d" % (seed, moment, mode, k))


def cut_during(m, k, bench, mode, moment, rng, r):
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
