"""pcmount.py: one crashfs instance (tests/crashfs) as the power-cut
harness drives it: mount BACKING, talk to its control socket (cut, arm a
trigger, disarm, status), and tear it down the way a power cut leaves
it: abort the FUSE connection, lazy unmount, reap.
"""
import os
import re
import socket
import subprocess
import time

from pcbase import HarnessError, KILL_WAIT, MOUNT_WAIT, tail, wait_until


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
        # Only while the mount is still this one's: a connection number
        # is reused once its mount is gone, and aborting another run's
        # (power-cut runs share the machine in make check) broke its mount.
        abort = None
        if self.minor and mount_minor(self.mnt) == self.minor:
            abort = "/sys/fs/fuse/connections/%d/abort" % self.minor
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


def mount_minor(path):
    """The device minor of the file system mounted at path, from
    /proc/self/mountinfo (no call into the file system, which may hang),
    or None if nothing is mounted there."""
    want = os.path.realpath(path)
    found = None
    try:
        with open("/proc/self/mountinfo") as f:
            for line in f:
                fields = line.split()
                mp = re.sub(r"\\([0-7]{3})", lambda m: chr(int(m.group(1), 8)),
                            fields[4])
                if mp == want:
                    found = int(fields[2].split(":")[1])
    except (OSError, ValueError, IndexError):
        return None
    return found


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
