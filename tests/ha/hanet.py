"""hanet: the laboratory for tests/ha/: network namespaces on a bridge,
kurad master/master pairs, keepalived and twemproxy inside them.

Owns everything it creates and removes it all on exit, on failure and on
SIGTERM, SIGINT or SIGHUP:

  - namespaces named kura-ha<pid>-<host>: one, "lan", holds the bridge
    br0; every other is a host with one veth (eth0) on it. Nothing is
    created in the namespace the test runs in, so deleting the namespaces
    removes every link and address;
  - processes started with spawn(): each gets PR_SET_PDEATHSIG, so a test
    killed with SIGKILL still takes them with it. At cleanup they get
    SIGTERM (keepalived then gives up its address), then SIGKILL, and
    whatever else still runs inside one of the namespaces is killed by pid
    before the namespace is deleted;
  - a temporary directory (kept when KURA_HA_KEEP=1).

Namespaces left by a test that was killed outright (its pid gone) are
swept at the next start.

Every wait polls a condition against a deadline (wait_for).
"""
import ctypes
import json
import os
import re
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time

SKIP = 77
HERE = os.path.dirname(os.path.abspath(__file__))
TOP = os.path.dirname(os.path.dirname(HERE))
NS_PREFIX = "kura-ha"
PORT = 1978

_libc = ctypes.CDLL("libc.so.6", use_errno=True)
_CLONE_NEWNET = 0x40000000
_PR_SET_PDEATHSIG = 1


class Failure(Exception):
    """A check failed; the message says which and what was seen."""


def skip(why):
    print(f"SKIP: {why}")
    sys.exit(SKIP)


def log(msg):
    print(f"[{time.strftime('%H:%M:%S')}] {msg}", flush=True)


def binaries():
    """The kurad and kura under test: make check's KURA_BIN/KURA_TOOL, else
    KURA_BUILD_DIR, else the current directory's build, else build/."""
    if os.environ.get("KURA_BIN") and os.environ.get("KURA_TOOL"):
        return os.environ["KURA_BIN"], os.environ["KURA_TOOL"]
    for d in (os.environ.get("KURA_BUILD_DIR"), os.getcwd(),
              os.path.join(TOP, "build")):
        if d and os.access(os.path.join(d, "src/kurad"), os.X_OK):
            return (os.path.join(d, "src/kurad"),
                    os.path.join(d, "tools/kura/kura"))
    raise Failure("no kurad built: set KURA_BUILD_DIR")


def wait_for(cond, timeout, what, every=0.05):
    """Polls cond() until it returns something true; returns that. Raises
    Failure after `timeout` seconds."""
    deadline = time.monotonic() + timeout
    while True:
        v = cond()
        if v:
            return v
        if time.monotonic() >= deadline:
            raise Failure(f"timed out after {timeout} s waiting for {what}")
        time.sleep(every)


def _child_setup():
    # Dies with the test, even if the test is killed with SIGKILL.
    _libc.prctl(_PR_SET_PDEATHSIG, signal.SIGKILL, 0, 0, 0)
    os.setsid()


def _pid_alive(pid):
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def _netns_list():
    r = subprocess.run(["ip", "netns", "list"], capture_output=True,
                       text=True)
    return [line.split()[0] for line in r.stdout.splitlines() if line.strip()]


def _netns_pids(ns):
    r = subprocess.run(["ip", "netns", "pids", ns], capture_output=True,
                       text=True)
    return [int(p) for p in r.stdout.split() if p.isdigit()]


def _netns_remove(ns):
    """Kills whatever still runs in namespace `ns` (all started by a test
    here) and deletes it."""
    for _ in range(50):
        pids = [p for p in _netns_pids(ns) if p != os.getpid()]
        if not pids:
            break
        for p in pids:
            try:
                os.kill(p, signal.SIGKILL)
            except ProcessLookupError:
                pass
        time.sleep(0.05)
    subprocess.run(["ip", "netns", "del", ns], capture_output=True)


def sweep_stale():
    """Removes namespaces of earlier runs whose test process is gone."""
    for ns in _netns_list():
        m = re.match(rf"{NS_PREFIX}(\d+)-", ns)
        if m and not _pid_alive(int(m.group(1))):
            log(f"removing namespace {ns} left by a killed run")
            _netns_remove(ns)


class in_netns:
    """`with in_netns(name):` sockets made inside belong to namespace
    `name` (setns on this thread, restored on exit)."""

    def __init__(self, ns):
        self.ns = ns

    def __enter__(self):
        self.home = os.open("/proc/thread-self/ns/net", os.O_RDONLY)
        fd = os.open(f"/run/netns/{self.ns}", os.O_RDONLY)
        try:
            if _libc.setns(fd, _CLONE_NEWNET) != 0:
                raise OSError(ctypes.get_errno(), f"setns {self.ns}")
        finally:
            os.close(fd)

    def __exit__(self, *exc):
        try:
            if _libc.setns(self.home, _CLONE_NEWNET) != 0:
                raise OSError(ctypes.get_errno(), "setns back")
        finally:
            os.close(self.home)


def mc_request(ns, addr, port, req, until, timeout=2.0):
    """Sends `req` (bytes) to addr:port from namespace `ns` on a fresh
    connection and returns the reply up to the terminator `until`."""
    with in_netns(ns):
        s = socket.create_connection((addr, port), timeout=timeout)
    try:
        s.settimeout(timeout)
        s.sendall(req)
        buf = b""
        while not buf.endswith(until):
            chunk = s.recv(65536)
            if not chunk:
                raise OSError("connection closed")
            buf += chunk
        return buf
    finally:
        s.close()


class Lab:
    """Namespaces, processes and a directory, all removed by cleanup()."""

    def __init__(self, name, budget):
        self.name = name
        self.tag = f"{NS_PREFIX}{os.getpid()}"
        self.kurad, self.kura = binaries()
        self.dir = tempfile.mkdtemp(prefix=f"kura-{name}-")
        self.namespaces = []
        self.procs = []       # (label, Popen, log path)
        self.cleaned = False
        for sig in (signal.SIGTERM, signal.SIGINT, signal.SIGHUP):
            signal.signal(sig, self._on_signal)
        signal.signal(signal.SIGALRM, self._on_alarm)
        signal.alarm(budget)
        self.budget = budget
        sweep_stale()

    def _on_signal(self, signum, frame):
        raise SystemExit(128 + signum)

    def _on_alarm(self, signum, frame):
        raise Failure(f"over the test's budget of {self.budget} s")

    def script_path(self, path):
        """A copy of the program `path` in a directory of the lab's, for
        keepalived's scripts: with enable_script_security it runs a
        script only if no one but root can write it or any directory
        above it, which a build tree owned by another user fails."""
        bindir = os.path.join(self.dir, "bin")
        os.makedirs(bindir, mode=0o755, exist_ok=True)
        dst = os.path.join(bindir, os.path.basename(path))
        if not os.path.exists(dst):
            shutil.copy(path, dst)
            os.chmod(dst, 0o755)
        return dst

    # ------------------------------------------------------------ network
    def ns(self, host):
        return f"{self.tag}-{host}"

    def ip(self, host, *args):
        r = subprocess.run(["ip", "-n", self.ns(host), *args],
                           capture_output=True, text=True)
        if r.returncode != 0:
            raise Failure(f"ip -n {self.ns(host)} {' '.join(args)}: "
                          f"{r.stderr.strip()}")
        return r.stdout

    def _add_ns(self, host):
        ns = self.ns(host)
        r = subprocess.run(["ip", "netns", "add", ns], capture_output=True,
                           text=True)
        if r.returncode != 0:
            skip(f"cannot create a network namespace: {r.stderr.strip()}")
        self.namespaces.append(ns)
        # ip netns exec also remounts /sys, which some containers forbid.
        r = subprocess.run(["ip", "netns", "exec", ns, "true"],
                           capture_output=True, text=True)
        if r.returncode != 0:
            skip(f"cannot run programs in a network namespace: "
                 f"{r.stderr.strip()}")
        self.ip(host, "link", "set", "lo", "up")

    def make_lan(self):
        """The "lan" namespace with the bridge every host plugs into."""
        self._add_ns("lan")
        r = subprocess.run(["ip", "-n", self.ns("lan"), "link", "add", "br0",
                            "type", "bridge"], capture_output=True, text=True)
        if r.returncode != 0:
            skip(f"cannot create a bridge: {r.stderr.strip()}")
        self.ip("lan", "link", "set", "br0", "up")

    def add_host(self, host, addr):
        """A namespace `host` whose eth0 (a veth on br0) has addr/24."""
        self._add_ns(host)
        port = f"v-{host}"[:15]
        r = subprocess.run(["ip", "-n", self.ns("lan"), "link", "add", port,
                            "type", "veth", "peer", "name", "eth0", "netns",
                            self.ns(host)], capture_output=True, text=True)
        if r.returncode != 0:
            skip(f"cannot create a veth pair: {r.stderr.strip()}")
        self.ip("lan", "link", "set", port, "master", "br0", "up")
        self.ip(host, "addr", "add", f"{addr}/24", "dev", "eth0")
        self.ip(host, "link", "set", "eth0", "up")

    def link(self, host, state):
        """Takes host's eth0 "down" or "up" (its own interface fails)."""
        self.ip(host, "link", "set", "eth0", state)

    def unplug(self, host):
        """Takes host's port off the bridge: the host vanishes from the
        network while its own eth0 stays up, as when a machine freezes or
        its switch port fails; nothing on it notices by itself."""
        self.ip("lan", "link", "set", f"v-{host}"[:15], "nomaster")

    def plug(self, host):
        """Puts host's port back on the bridge (see unplug)."""
        self.ip("lan", "link", "set", f"v-{host}"[:15], "master", "br0")

    def has_addr(self, host, addr):
        out = self.ip(host, "-4", "-o", "addr", "show", "dev", "eth0")
        return f" {addr}/" in out

    # ---------------------------------------------------------- processes
    def spawn(self, label, host, argv, stdin=None, stdout=None):
        """Starts argv in namespace `host`; its output goes to a log file
        (or to `stdout` if given). Returns the Popen; Popen.pid is the
        program's own pid (ip netns exec execs it)."""
        path = os.path.join(self.dir, f"{label}.out")
        out = open(path, "ab")
        p = subprocess.Popen(["ip", "netns", "exec", self.ns(host), *argv],
                             stdin=stdin, stdout=stdout or out, stderr=out,
                             preexec_fn=_child_setup, cwd=self.dir)
        out.close()
        self.procs.append((label, p, path))
        return p

    def run(self, host, argv, timeout=30):
        """Runs argv in namespace `host` to completion; returns
        CompletedProcess with text output."""
        return subprocess.run(["ip", "netns", "exec", self.ns(host), *argv],
                              capture_output=True, text=True,
                              timeout=timeout, preexec_fn=_child_setup)

    def stop(self, p, sig=signal.SIGTERM, timeout=10.0):
        """Signals p and waits for it, SIGKILL after `timeout`."""
        if p.poll() is None:
            try:
                p.send_signal(sig)
                p.wait(timeout)
            except subprocess.TimeoutExpired:
                p.kill()
                p.wait(5)
        return p.returncode

    def tail(self, label, lines=30):
        for lab, _, path in self.procs:
            if lab == label:
                try:
                    with open(path, errors="replace") as f:
                        return "".join(f.readlines()[-lines:])
                except OSError:
                    return ""
        return ""

    def dump_logs(self):
        seen = set()
        for label, _, path in self.procs:
            if path in seen:
                continue
            seen.add(path)
            print(f"---- {label} ({path})")
            print(self.tail(label, 25), end="")

    def cleanup(self):
        if self.cleaned:
            return
        self.cleaned = True
        signal.alarm(0)
        for sig in (signal.SIGTERM, signal.SIGINT, signal.SIGHUP):
            signal.signal(sig, signal.SIG_IGN)
        # keepalived first, so that it gives up its addresses itself.
        order = sorted(self.procs, key=lambda t: 0 if "keepalived" in t[0]
                       else 1)
        for _, p, _ in order:
            if p.poll() is None:
                try:
                    p.terminate()
                except ProcessLookupError:
                    pass
        deadline = time.monotonic() + 10
        for _, p, _ in order:
            try:
                p.wait(max(0.1, deadline - time.monotonic()))
            except subprocess.TimeoutExpired:
                p.kill()
                p.wait(5)
        for ns in reversed(self.namespaces):
            _netns_remove(ns)
        if os.environ.get("KURA_HA_KEEP") == "1":
            print(f"kept {self.dir}")
        else:
            shutil.rmtree(self.dir, ignore_errors=True)


class Kurad:
    """One kurad of a master/master pair, listening on 0.0.0.0:1978 in its
    host's namespace and following `peer_addr` with a shared -rkey."""

    def __init__(self, lab, host, sid, peer_addr, addr, peer_sid=None):
        self.lab, self.host, self.sid = lab, host, sid
        self.peer_sid = peer_sid or (2 if sid == 1 else 1)
        self.peer_addr, self.addr = peer_addr, addr
        self.dir = os.path.join(lab.dir, host)
        os.makedirs(self.dir, exist_ok=True)
        self.rkey = os.path.join(self.dir, "rkey")
        fd = os.open(self.rkey, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
        os.write(fd, b"the ha lab's shared replication key\n")
        os.close(fd)
        self.proc = None
        self.starts = 0

    def start(self):
        self.starts += 1
        label = f"kurad-{self.host}"
        self.proc = self.lab.spawn(label, self.host, [
            self.lab.kurad, "-host", "0.0.0.0", "-port", str(PORT),
            "-sid", str(self.sid), "-mhost", self.peer_addr,
            "-mport", str(PORT), "-rkey", self.rkey,
            "-log", os.path.join(self.dir, "kurad.log"),
            "-pid", os.path.join(self.dir, "kurad.pid"),
            os.path.join(self.dir, "kura.tch")])
        wait_for(self.healthy, 20, f"kurad on {self.host} to answer")

    def healthy(self):
        if self.proc.poll() is not None:
            raise Failure(f"kurad on {self.host} exited with "
                          f"{self.proc.returncode}:\n"
                          f"{self.lab.tail('kurad-' + self.host)}")
        r = self.lab.run(self.host, [self.lab.kura, "ping", "--port",
                                     str(PORT), "--timeout", "500",
                                     "--quiet"])
        return r.returncode == 0

    def kill9(self):
        self.proc.kill()
        self.proc.wait(5)

    def stats(self):
        raw = mc_request(self.lab.ns(self.host), "127.0.0.1", PORT,
                         b"stats\r\n", b"END\r\n")
        st = {}
        for line in raw.decode().split("\r\n"):
            f = line.split(" ", 2)
            if len(f) == 3 and f[0] == "STAT":
                st[f[1]] = f[2]
        return st

    def caught_up(self):
        """Following its peer with nothing left to apply, and the peer
        following it with nothing left to send."""
        try:
            st = self.stats()
        except OSError:
            return False
        peer = self.peer_sid
        return (st.get("kura_repl_master_connected") == "1" and
                st.get("kura_repl_master_lag_records") == "0" and
                st.get(f"kura_repl_peer_{peer}_connected") == "1" and
                st.get(f"kura_repl_peer_{peer}_lag_records") == "0")


def read_config(relpath, replacements):
    """The shipped config etc/<relpath>, with each (old, new) or (old,
    new, count) replaced; each `old` must occur exactly once (or `count`
    times), so that a config edited out of the test's reach fails loudly
    instead of going untested."""
    with open(os.path.join(TOP, "etc", relpath)) as f:
        text = f.read()
    for old, new, *count in replacements:
        want = count[0] if count else 1
        n = text.count(old)
        if n != want:
            raise Failure(f"etc/{relpath}: expected '{old}' {want} time(s), "
                          f"found {n}")
        text = text.replace(old, new)
    return text


class Keepalived:
    """keepalived (VRRP only, in the foreground) in a host's namespace,
    running etc/keepalived/kura.conf as config id `config_id`."""

    def __init__(self, lab, host, config_id, conf_text):
        self.lab, self.host, self.config_id = lab, host, config_id
        self.dir = os.path.join(lab.dir, host)
        os.makedirs(self.dir, exist_ok=True)
        self.conf = os.path.join(self.dir, "keepalived.conf")
        with open(self.conf, "w") as f:
            f.write(conf_text)
        self.label = f"keepalived-{host}"
        self.proc = None

    def start(self):
        self.proc = self.lab.spawn(self.label, self.host, [
            "keepalived", "--dont-fork", "--log-console", "--log-detail",
            "--no-syslog", "--vrrp", "--use-file", self.conf,
            "--config-id", self.config_id,
            "--pid", os.path.join(self.dir, "keepalived.pid"),
            "--vrrp_pid", os.path.join(self.dir, "keepalived-vrrp.pid")])

    def states(self):
        """Every state the instance entered so far, in order."""
        for label, _, path in self.lab.procs:
            if label == self.label:
                with open(path, errors="replace") as f:
                    return re.findall(r"Entering (\w+) STATE", f.read())
        return []

    def check_config(self):
        r = self.lab.run(self.host, ["keepalived", "--config-test",
                                     "--use-file", self.conf,
                                     "--config-id", self.config_id])
        if r.returncode != 0:
            raise Failure(f"keepalived rejects the config:\n{r.stderr}"
                          f"{r.stdout}")


class Nutcracker:
    """twemproxy (nutcracker) in a host's namespace, running
    etc/nutcracker/kura.yml (as given in conf_text); `port` is the port
    its pool listens on."""

    def __init__(self, lab, host, conf_text, port):
        self.lab, self.host, self.port = lab, host, port
        self.dir = os.path.join(lab.dir, host)
        os.makedirs(self.dir, exist_ok=True)
        self.conf = os.path.join(self.dir, "nutcracker.yml")
        with open(self.conf, "w") as f:
            f.write(conf_text)
        self.label = f"nutcracker-{host}"
        self.proc = None

    def check_config(self):
        r = self.lab.run(self.host, ["nutcracker", "--test-conf",
                                     "--conf-file", self.conf])
        if r.returncode != 0:
            raise Failure(f"nutcracker rejects the config:\n{r.stderr}"
                          f"{r.stdout}")

    def start(self):
        self.proc = self.lab.spawn(self.label, self.host, [
            "nutcracker", "--conf-file", self.conf, "--verbose", "5",
            "--output", os.path.join(self.lab.dir, f"{self.label}.out"),
            "--stats-addr", "127.0.0.1",
            "--pid-file", os.path.join(self.dir, "nutcracker.pid")])
        wait_for(self.answers, 10, f"nutcracker on {self.host} to answer")

    def answers(self):
        if self.proc.poll() is not None:
            raise Failure(f"nutcracker exited with {self.proc.returncode}:"
                          f"\n{self.lab.tail(self.label)}")
        try:
            return mc_request(self.lab.ns(self.host), "127.0.0.1",
                              self.port, b"get kura:ha:none\r\n",
                              b"END\r\n", timeout=1.0) == b"END\r\n"
        except OSError:
            return False


def verify(lab, host, ack_log, addr, port=PORT):
    """Runs `kura verify` from `host` against addr:port; returns
    (keys, ok, stale, missing, output)."""
    r = lab.run(host, [lab.kura, "verify", "--ack-log", ack_log, "--host",
                       addr, "--port", str(port)], timeout=60)
    m = re.search(r": (\d+) keys, (\d+) ok, (\d+) stale, (\d+) missing",
                  r.stdout)
    if not m:
        raise Failure(f"kura verify against {addr}:{port} failed:\n"
                      f"{r.stdout}{r.stderr}")
    return tuple(int(x) for x in m.groups()) + (r.stdout.strip(),)


def gaps(times, start, end):
    """The longest stretch in [start, end] without an acknowledgement in
    `times` (sorted): (seconds, from, to)."""
    best = (0.0, start, start)
    prev = start
    for t in times + [end]:
        if t - prev > best[0]:
            best = (t - prev, prev, t)
        prev = max(prev, t)
    return best


def read_json(path):
    with open(path) as f:
        return json.load(f)


def main(test, name, budget):
    """Runs test(lab), then cleans up. Exit 0, 1 (a check failed) or 77."""
    if os.geteuid() != 0:
        skip("needs root for network namespaces")
    if shutil.which("ip") is None:
        skip("iproute2 (ip) is missing")
    lab = None
    status = 1
    try:
        lab = Lab(name, budget)
        test(lab)
        status = 0
    except Failure as e:
        print(f"FAIL: {e}")
        if lab is not None:
            lab.dump_logs()
    except SystemExit as e:
        if e.code == SKIP:
            status = SKIP
        else:
            print(f"interrupted ({e.code})")
            status = 1 if e.code in (0, None) else e.code
    finally:
        if lab is not None:
            lab.cleanup()
    sys.exit(status)
