"""pcload.py: what runs on the mounts: kurad (started, inside a memory
cgroup with --memory-limit, stopped, killed), the memcached requests the
harness itself sends (version, stats), and the workload: `kura bench
--ack-log`, whose ack log lists every write kurad acknowledged, one file
per cycle (AckLog).
"""
import os
import re
import signal
import socket
import subprocess
import sys

from pcbase import KILL_WAIT, REPO, STOP_WAIT, HarnessError, now, tail, wait_until

sys.path.insert(0, os.path.join(REPO, "tools", "lib"))
import memcg  # noqa: E402


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


class AckLog:
    def __init__(self, path, label):
        self.path, self.label = path, label
        self.bad = 0            # missing + stale at its last check
        self.missing = 0
        self.stale = 0


def db_of(dirpath):
    return os.path.join(dirpath, "data", "kura.tch")


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
