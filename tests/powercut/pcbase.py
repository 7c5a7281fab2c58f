"""pcbase.py: the ground floor of the power-cut harness (powercut.py):
how long each wait may take, the harness's own errors, polling with a
deadline, and the Harness, which owns every process, mount, port, memory
cgroup and temporary directory of a run and takes them all down on any
exit. Every other pc*.py module builds on this one; it imports none of
them.
"""
import concurrent.futures
import os
import shutil
import socket
import subprocess
import tempfile
import time
import uuid

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

MOUNT_WAIT = 15.0       # crashfs mount, control socket, exit after unmount
START_WAIT = 30.0       # kurad on the mount answering `version`
RESTART_WAIT = 120.0    # kurad restarted on BACKING answering `version`
STOP_WAIT = 60.0        # SIGTERM to exit
KILL_WAIT = 30.0        # SIGKILL to reaped
CATCHUP_WAIT = 90.0     # a follower catching up with its master
VERIFY_WAIT = 300.0     # one kura verify run
OPTIMIZE_WAIT = 120.0
CUT_WAIT = 10.0         # an armed trigger after the event that should fire it


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
        # store.h D8: a power cut is a machine's restart, a new boot; a
        # kill -9 without one is not. kurad reads the boot from here.
        self.boot_id_file = os.path.join(self.tmp, "boot_id")
        os.environ["KURA_BOOT_ID_FILE"] = self.boot_id_file
        self.new_boot()

    def new_boot(self):
        """Simulates the machine's restart that follows a power cut."""
        tmp = self.boot_id_file + ".new"
        with open(tmp, "w") as f:
            f.write(str(uuid.uuid4()) + "\n")
        os.replace(tmp, self.boot_id_file)

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
