"""memcg.py: run processes inside a memory limit, the way systemd's
MemoryMax= and container runtimes do (the same rules as memcg.sh, for the
Python harnesses): a cgroup of its own under the caller's, with the cgroup
v2 memory.max where the unified hierarchy has the memory controller, and
the v1 memory.limit_in_bytes otherwise. Swap is not allowed either. Needs
root.

    cg = MemCgroup.create("kura-bench", 256 << 20)
    subprocess.Popen(cmd, preexec_fn=cg.enter)   # the child runs inside
    cg.usage(), cg.peak(), cg.stat("total_dirty"), cg.ooms()
    cg.drop()      # reclaim its page cache: a cold start
    cg.destroy()   # once its processes are gone
"""
import os


def _mountinfo():
    with open("/proc/self/mountinfo") as f:
        for line in f:
            left, _, right = line.partition(" - ")
            fields = left.split()
            rest = right.split()
            if len(fields) >= 5 and len(rest) >= 3:
                yield fields[3], fields[4], rest[0], rest[2]


def _own(v2):
    with open("/proc/self/cgroup") as f:
        for line in f:
            num, ctls, path = line.rstrip("\n").split(":", 2)
            if v2 and num == "0" and ctls == "":
                return path
            if not v2 and "memory" in ctls.split(","):
                return path
    return None


def _under(point, root, path):
    if root != "/" and path.startswith(root):
        path = path[len(root):]
    return point if path in ("", "/") else point + path


def version():
    """"v2", "v1" or None: the hierarchy that controls memory here."""
    for root, point, fstype, _ in _mountinfo():
        if fstype == "cgroup2":
            own = _own(True)
            if own is not None:
                try:
                    with open(_under(point, root, own) + "/cgroup.controllers") as f:
                        if "memory" in f.read().split():
                            return "v2"
                except OSError:
                    pass
    for root, point, fstype, sup in _mountinfo():
        if fstype == "cgroup" and "memory" in sup.split(","):
            return "v1"
    return None


class MemCgroup:
    def __init__(self, path, ver):
        self.path = path
        self.version = ver

    @classmethod
    def create(cls, name, limit):
        ver = version()
        if ver == "v2":
            for root, point, fstype, _ in _mountinfo():
                if fstype == "cgroup2":
                    parent = _under(point, root, _own(True))
                    break
            # v2 allows no process in a cgroup whose children control
            # memory: the new cgroup goes beside the caller.
            with open(parent + "/cgroup.procs") as f:
                if f.read().strip():
                    parent = os.path.dirname(parent)
            try:
                with open(parent + "/cgroup.subtree_control", "w") as f:
                    f.write("+memory")
            except OSError:
                pass
            path = "%s/%s-%d" % (parent, name, os.getpid())
            os.makedirs(path, exist_ok=True)
            cg = cls(path, ver)
            cg._write("memory.max", str(limit))
            try:
                cg._write("memory.swap.max", "0")
            except OSError:
                pass
            return cg
        if ver == "v1":
            for root, point, fstype, sup in _mountinfo():
                if fstype == "cgroup" and "memory" in sup.split(","):
                    parent = _under(point, root, _own(False))
                    break
            path = "%s/%s-%d" % (parent, name, os.getpid())
            os.makedirs(path, exist_ok=True)
            cg = cls(path, ver)
            cg._write("memory.limit_in_bytes", str(limit))
            try:
                cg._write("memory.memsw.limit_in_bytes", str(limit))
            except OSError:
                pass
            return cg
        raise OSError("no memory cgroup controller on this machine")

    def _write(self, name, value):
        with open(os.path.join(self.path, name), "w") as f:
            f.write(value)

    def _read(self, name):
        with open(os.path.join(self.path, name)) as f:
            return f.read()

    def enter(self):
        """Moves the calling process in (a Popen preexec_fn)."""
        self._write("cgroup.procs", str(os.getpid()))

    def usage(self):
        if self.version == "v2":
            return int(self._read("memory.current"))
        return int(self._read("memory.usage_in_bytes"))

    def peak(self):
        try:
            if self.version == "v2":
                return int(self._read("memory.peak"))
            return int(self._read("memory.max_usage_in_bytes"))
        except OSError:
            return 0

    def reset_peak(self):
        try:
            if self.version == "v2":
                self._write("memory.peak", "reset")
            else:
                self._write("memory.max_usage_in_bytes", "0")
        except OSError:
            pass

    def stat(self, key):
        """A memory.stat figure; v1 names (total_dirty, total_cache...)
        are mapped to v2's where they differ."""
        names = {"total_dirty": "file_dirty", "total_writeback": "file_writeback",
                 "total_cache": "file", "total_rss": "anon",
                 "total_mapped_file": "file_mapped"}
        if self.version == "v2":
            key = names.get(key, key)
        for line in self._read("memory.stat").splitlines():
            k, _, v = line.partition(" ")
            if k == key:
                return int(v)
        return 0

    def ooms(self):
        try:
            text = self._read("memory.events" if self.version == "v2"
                              else "memory.oom_control")
        except OSError:
            return 0
        for line in text.splitlines():
            k, _, v = line.partition(" ")
            if k == "oom_kill":
                return int(v)
        return 0

    def drop(self):
        """Reclaims what the cgroup holds (its page cache, above all)."""
        try:
            if self.version == "v2":
                self._write("memory.reclaim", str(self.usage()))
            else:
                self._write("memory.force_empty", "0")
        except OSError:
            pass

    def destroy(self):
        try:
            os.rmdir(self.path)
        except OSError:
            pass
