"""pcverify.py: what a cut found. `kura verify` of the ack logs against
the restarted servers (PC2, PC3), what a restart's log says about the
recovery, replication caught up before a check (PC4, PC7), kura check
and kura ulog verify of the post-cut state when something is wrong, and
CutResult, which decides whether a cut failed under the -fsync policy
(powercut.py's docstring lists PC1-PC7).
"""
import os
import re
import shutil

from pcbase import CATCHUP_WAIT, VERIFY_WAIT, indented, now, wait_until
from pcload import db_of, stats
from pcschedule import SINGLE_MOMENTS

INTERESTING = re.compile(r"not closed cleanly|rebuilt|redo:|torn|never completed|"
                         r"created but never|ERROR|damaged|snapshot|cannot")
BENIGN = re.compile(r"file descriptor limit")


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


def check_acks(h, s, r, newest, ports):
    """Verifies every ack log of the scenario against ports: the newest
    count for this cut, older ones count only what they newly lost."""
    jobs = [(a, h.pool.submit(verify, h, a.path, ports)) for a in s.acks]
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
    if worst and (h.args.fsync == "always" or any(v["nan"] for _, v in worst)):
        diagnose(h, s, r)


def diagnose(h, s, r):
    """kura check and kura ulog verify of the post-cut state."""
    s.failed = True
    h.failed = True
    post = s.path("postcut")
    if not os.path.isdir(post):
        return
    for i in range(len(s.backings)):
        src = os.path.join(post, "backing%d" % i)
        work = s.path("postcut-check%d" % i)
        shutil.rmtree(work, ignore_errors=True)
        shutil.copytree(src, work, symlinks=True)
        rc, out = h.run([h.kura, "check", db_of(work)], 300)
        r.findings.append("kura check %s (post-cut copy) -> exit %s:\n%s" % (
            db_of(src), rc, indented(out.splitlines()[-15:])))
        ulog = os.path.join(work, "data", "kura.ulog")
        if os.path.isdir(ulog):
            argv = [h.kura, "ulog", "verify", ulog]
            try:
                with open(os.path.join(ulog, "checkpoint")) as f:
                    argv += ["--after", f.read().split()[1]]   # "checkpoint LSN ..."
            except (OSError, IndexError):
                pass
            rc, out = h.run(argv, 300)
            r.findings.append("%s (post-cut copy) -> exit %s:\n%s" % (
                " ".join(argv[1:3] + argv[4:]), rc, indented(out.splitlines()[-10:])))
            try:
                listing = sorted(os.listdir(os.path.join(src, "data", "kura.ulog")))
                r.findings.append("post-cut ulog dir: " + " ".join(listing))
            except OSError:
                pass
        shutil.rmtree(work, ignore_errors=True)
    r.findings.append("post-cut state kept in %s (with --keep)" % post)


def catch_up(h, follower, master, r, name):
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
        h.debug("%s caught up in %.1f s" % (name, now() - t0))
        return True
    fs = state.get("fs", {})
    r.findings.append("%s did not catch up with its master in %.0f s: %s" % (
        name, CATCHUP_WAIT, " ".join("%s=%s" % (k[16:], v) for k, v in sorted(fs.items())
                                     if k.startswith("kura_repl_master"))))
    r.errors.append("%s did not catch up" % name)
    return False


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
    info = {"unclean": False, "rebuilt": False, "redo": 0, "lines": [],
            "same_boot": False}
    try:
        with open(path, errors="replace") as f:
            text = f.read()
    except OSError:
        return info
    for line in text.splitlines():
        if "not closed cleanly" in line:
            info["unclean"] = True
            info["same_boot"] = "the machine did not restart" in line
        if "rebuilt" in line:
            info["rebuilt"] = True
        m = re.search(r"redo: (\d+) records", line)
        if m:
            info["redo"] += int(m.group(1))
        if INTERESTING.search(line) and not BENIGN.search(line):
            info["lines"].append(line)
    return info
