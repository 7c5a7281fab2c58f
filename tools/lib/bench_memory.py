"""bench_memory.py: the body of tools/bench-memory (see there for usage).

kurad serving a database larger than the memory it may use, measured
against the disk under it and against itself with no limit.

For each kind of data (1,000-byte values; seed 002's last-login records)
and each size (a multiple of the limit), a database is loaded through an
unlimited kurad, then served twice: by kurad inside a memory cgroup of
--limit bytes, started cold (the file's pages put out of memory first), and
by kurad with no limit, started warm (the file read once). Each serves the
workloads at each connection count: uniform gets, Zipf (s = 0.99) keys
with 90% gets and 10% sets, uniform updates, fresh inserts. Each run is
preceded by a warm-up of the same load. Under the limit, kurad is also
killed with -9 in the middle of updates and restarted, and its start-up
time (to the first answer) is taken cold after a clean stop and after the
kill. fio measures the disk in the same run: random 4 KiB reads and writes
at queue depth 1 and 64, O_DIRECT, on the same file system.

Per run: ops/s, p50/p99/max latency; kurad's RSS and the cgroup's usage
(both the most seen, sampled every 0.5 s); major faults, and bytes read
and written per operation (/proc/PID/io read_bytes, write_bytes: pages
read from the disk and pages dirtied); checkpoints, write-backs and reads
ahead in the run; and the ratio to the same run with no limit and to
fio's queue-depth-64 figure (reads for gets and Zipf, writes for updates
and inserts).
"""
import argparse
import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import memcg  # noqa: E402
import proccpu  # noqa: E402  the server's CPU from /proc

MIB = 1 << 20
# Bytes one record takes in the file, bucket included (measured on loads:
# a 2.4M-record, bnum 4.8M file of 1,000-byte values is 2,516,975,936
# bytes; last-login records take a 64-byte block and bnum = records).
RECORD_BYTES = {"values": 1049, "logins": 68}
VALUE_SIZE = {"values": 1000, "logins": 10}
BNUM_PER_RECORD = {"values": 2, "logins": 1}
WORKLOADS = {
    "get": ["--reads", "100"],
    "zipf": ["--reads", "90", "--zipf", "0.99"],
    "update": ["--reads", "0"],
    "insert": ["--reads", "0"],
}
FIO_BOUND = {"get": "randread", "zipf": "randread", "update": "randwrite",
             "insert": "randwrite"}


def log(*a):
    print(*a, file=sys.stderr, flush=True)


def free_port():
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    port = s.getsockname()[1]
    s.close()
    return port


def evict(paths):
    """Puts the files' pages out of memory (they are all synced)."""
    for p in paths:
        for root, _, files in os.walk(p) if os.path.isdir(p) else [
                (os.path.dirname(p), [], [os.path.basename(p)])]:
            for name in files:
                try:
                    fd = os.open(os.path.join(root, name), os.O_RDONLY)
                except OSError:
                    continue
                try:
                    os.fdatasync(fd)
                    os.posix_fadvise(fd, 0, 0, os.POSIX_FADV_DONTNEED)
                finally:
                    os.close(fd)


def warm(path):
    with open(path, "rb") as f:
        while f.read(1 << 20):
            pass


def fio(directory, rw, depth, seconds):
    out = subprocess.run(
        ["fio", "--name=kura", "--filename=%s/fio.dat" % directory,
         "--size=1g", "--rw=" + rw, "--bs=4k", "--direct=1",
         "--ioengine=libaio", "--iodepth=%d" % depth,
         "--runtime=%d" % seconds, "--time_based", "--output-format=json"],
        check=True, capture_output=True, text=True).stdout
    job = json.loads(out)["jobs"][0]
    r = job["read"] if rw.endswith("read") else job["write"]
    pct = r["clat_ns"]["percentile"]
    return {"iops": r["iops"], "p50_us": pct["50.000000"] / 1000,
            "p99_us": pct["99.000000"] / 1000}


class Kurad:
    def __init__(self, args, db, port, cgroup=None, extra=()):
        self.args, self.db, self.port, self.cgroup = args, db, port, cgroup
        self.extra = list(extra)
        self.proc = None

    def start(self, wait=300):
        """Starts it; returns the seconds until it answered."""
        cmd = [self.args.kurad, "-port", str(self.port), "-log",
               os.path.join(os.path.dirname(self.db.split("#")[0]),
                            "kurad.log")] + self.extra + [self.db]
        began = time.monotonic()
        self.proc = subprocess.Popen(
            cmd, preexec_fn=self.cgroup.enter if self.cgroup else None)
        deadline = began + wait
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                raise RuntimeError("kurad exited with %d" % self.proc.returncode)
            if subprocess.run([self.args.kura, "ping", "--port", str(self.port),
                               "--quiet", "--timeout", "1000"],
                              capture_output=True).returncode == 0:
                return time.monotonic() - began
            time.sleep(0.02)
        raise RuntimeError("kurad did not answer within %d s" % wait)

    def stop(self):
        self.proc.send_signal(signal.SIGTERM)
        rc = self.proc.wait(timeout=600)
        if rc != 0:
            raise RuntimeError("kurad stopped with status %d" % rc)

    def kill(self):
        self.proc.send_signal(signal.SIGKILL)
        self.proc.wait(timeout=60)

    def alive(self):
        return self.proc is not None and self.proc.poll() is None

    def stats(self):
        out = subprocess.run([self.args.kura, "stats", "--port", str(self.port)],
                             capture_output=True, text=True).stdout
        st = {}
        for line in out.splitlines():
            parts = line.split()
            if len(parts) == 3 and parts[0] == "STAT":
                st[parts[1]] = parts[2]
        return st

    def proc_figures(self):
        pid = self.proc.pid
        io = {}
        with open("/proc/%d/io" % pid) as f:
            for line in f:
                k, _, v = line.partition(":")
                io[k] = int(v)
        with open("/proc/%d/stat" % pid) as f:
            fields = f.read().rsplit(")", 1)[1].split()
        return {"read_bytes": io["read_bytes"], "write_bytes": io["write_bytes"],
                "majflt": int(fields[9]),
                "cpu": proccpu.snapshot([pid])}

    def rss(self):
        with open("/proc/%d/status" % self.proc.pid) as f:
            for line in f:
                if line.startswith("VmRSS:"):
                    return int(line.split()[1]) * 1024
        return 0


class Sampler(threading.Thread):
    """The most RSS and cgroup usage seen, every 0.5 s."""

    def __init__(self, kd, cg):
        super().__init__(daemon=True)
        self.kd, self.cg = kd, cg
        self.rss = self.usage = 0
        self.halt = threading.Event()

    def run(self):
        while not self.halt.is_set():
            try:
                self.rss = max(self.rss, self.kd.rss())
                if self.cg:
                    self.usage = max(self.usage, self.cg.usage())
            except OSError:
                pass
            self.halt.wait(0.5)


def bench(args, port, workload, conns, seconds, kind, records, fresh_from):
    cmd = [args.kura, "bench", "--port", str(port), "--json", "--conns",
           str(conns), "--duration", str(seconds), "--value-size",
           str(VALUE_SIZE[kind])] + WORKLOADS[workload]
    if workload == "insert":
        cmd += ["--fresh", str(fresh_from), "--keyspace", str(1 << 62)]
    else:
        cmd += ["--keyspace", str(records)]
    res = subprocess.run(cmd, capture_output=True, text=True)
    if res.returncode not in (0, 1) or not res.stdout.strip():
        raise RuntimeError("kura bench failed: %s" % res.stderr.strip())
    return json.loads(res.stdout)


def measure(args, kd, cg, workload, conns, kind, records, state):
    """One warm-up and one measured run; returns the figures."""
    def fresh():
        return records + state["inserted"]
    if args.warm > 0:
        w = bench(args, kd.port, workload, conns, args.warm, kind, records,
                  fresh())
        if workload == "insert":
            state["inserted"] += w["ops"]
    st0 = kd.stats()
    p0 = kd.proc_figures()
    samp = Sampler(kd, cg)
    samp.start()
    r = bench(args, kd.port, workload, conns, args.duration, kind, records,
              fresh())
    samp.halt.set()
    samp.join()
    p1 = kd.proc_figures()
    st1 = kd.stats()
    if workload == "insert":
        state["inserted"] += r["ops"]
    ops = max(r["ops"], 1)

    def delta(name):
        return int(st1.get(name, 0)) - int(st0.get(name, 0))
    return {
        "workload": workload, "conns": conns, "ops": r["ops"],
        "errors": r["errors"], "ops_per_s": r["ops_per_s"],
        "p50_ms": r["p50_us"] / 1000, "p99_ms": r["p99_us"] / 1000,
        "max_ms": r["max_us"] / 1000,
        "rss_mib": samp.rss / MIB, "cgroup_mib": samp.usage / MIB,
        "majflt_per_op": (p1["majflt"] - p0["majflt"]) / ops,
        "read_kib_per_op": (p1["read_bytes"] - p0["read_bytes"]) / ops / 1024,
        "written_kib_per_op": (p1["write_bytes"] - p0["write_bytes"]) / ops / 1024,
        "cpu_us_per_op": proccpu.us_per_op(p0["cpu"], p1["cpu"], ops),
        "checkpoints": delta("kura_ulog_checkpoints"),
        "write_backs": delta("kura_ulog_write_backs"),
        "prefetch_waits_per_op": delta("kura_prefetch_waits") / ops,
        "db_mib": int(st1.get("kura_db_file_size", 0)) / MIB,
    }


def kill_test(args, kd, kind, records):
    """kill -9 ten seconds into updates; returns the restart's seconds."""
    cmd = [args.kura, "bench", "--port", str(kd.port), "--conns", "64",
           "--duration", "30", "--value-size", str(VALUE_SIZE[kind]),
           "--keyspace", str(records)] + WORKLOADS["update"]
    load = subprocess.Popen(cmd, stdout=subprocess.DEVNULL,
                            stderr=subprocess.DEVNULL)
    time.sleep(10)
    kd.kill()
    load.wait(timeout=120)
    return kd.start()


def serve(args, kind, factor, records, db, limited, results, state):
    port = free_port()
    cg = None
    if limited:
        cg = memcg.MemCgroup.create("kura-bench-memory", args.limit)
    kd = Kurad(args, db, port, cg, args.kurad_arg)
    label = "limit" if limited else "none"
    base = {"kind": kind, "factor": factor, "records": records, "limit": label}
    try:
        if limited:
            evict([os.path.dirname(db.split("#")[0])])
        else:
            warm(db.split("#")[0])
        start_s = kd.start()
        results.append(dict(base, event="start", cold=limited, seconds=start_s))
        log("  %s: started in %.1f s" % (label, start_s))
        # Inserts last: they grow the database the other runs measure.
        for workload in args.workloads:
            for conns in args.conns:
                m = measure(args, kd, cg, workload, conns, kind, records, state)
                m.update(base)
                results.append(m)
                log("  %s %-6s %4d conns: %8.0f ops/s  p99 %6.1f ms  max %7.1f ms"
                    "  rss %4.0f MiB  cg %4.0f MiB  read %.1f KiB/op  written %.1f"
                    " KiB/op" % (label, workload, conns, m["ops_per_s"],
                                 m["p99_ms"], m["max_ms"], m["rss_mib"],
                                 m["cgroup_mib"], m["read_kib_per_op"],
                                 m["written_kib_per_op"]))
        if limited and not args.no_kill:
            kd.stop()
            evict([os.path.dirname(db.split("#")[0])])
            cg.drop()
            s = kd.start()
            results.append(dict(base, event="restart-clean", seconds=s))
            s = kill_test(args, kd, kind, records)
            results.append(dict(base, event="restart-kill9", seconds=s))
            log("  limit: restart after a clean stop, cold, %.1f s; after kill -9"
                " under updates %.1f s" % (results[-2]["seconds"], s))
        kd.stop()
        if cg is not None:
            results.append(dict(base, event="ooms", count=cg.ooms()))
    finally:
        if kd.alive():
            kd.kill()
        if cg is not None:
            cg.destroy()


def pair(args, kind, factor, records, work, results):
    """A master/master pair, one side (B) inside the limit: B catches up
    from an empty database (a full resync of A's), then updates run on A
    with B's lag measured from outside, then on B with A's."""
    a_dir = os.path.join(work, "pair-a-%s-%dx" % (kind, factor))
    b_dir = os.path.join(work, "pair-b-%s-%dx" % (kind, factor))
    for d in (a_dir, b_dir):
        shutil.rmtree(d, ignore_errors=True)
        os.makedirs(d)
    bnum = records * BNUM_PER_RECORD[kind]
    a_db = "%s/kura.tch#bnum=%d" % (a_dir, bnum)
    b_db = "%s/kura.tch#bnum=%d" % (b_dir, bnum)
    secs = load(args, kind, records, a_db)
    log("pair %s %dx: %d records loaded into A in %.0f s" % (kind, factor,
                                                             records, secs))
    pa, pb = free_port(), free_port()
    cg = memcg.MemCgroup.create("kura-bench-pair", args.limit)
    a = Kurad(args, a_db, pa, None, args.kurad_arg +
              ["-sid", "1", "-mhost", "127.0.0.1", "-mport", str(pb),
               "-catchup", "0"])
    b = Kurad(args, b_db, pb, cg, args.kurad_arg +
              ["-sid", "2", "-mhost", "127.0.0.1", "-mport", str(pa),
               "-catchup", "0"])
    base = {"kind": kind, "factor": factor, "records": records,
            "event": "pair"}
    try:
        a.start()
        began = time.monotonic()
        b.start()
        deadline = began + 3600
        while int(b.stats().get("curr_items", 0)) < records:
            if time.monotonic() > deadline or not b.alive():
                raise RuntimeError("the limited standby did not catch up")
            time.sleep(1)
        caught = time.monotonic() - began
        log("  B (limited) caught up in %.0f s" % caught)
        results.append(dict(base, what="catch-up", seconds=caught))
        for src, dst, name in ((a, b, "updates on A, B limited"),
                               (b, a, "updates on B (limited), A")):
            st0 = (a.stats(), b.stats())
            cmd = [args.kura, "bench", "--port", str(src.port), "--json",
                   "--conns", "64", "--duration", str(args.duration),
                   "--value-size", str(VALUE_SIZE[kind]), "--keyspace",
                   str(records), "--lag-to", str(dst.port)] + WORKLOADS["update"]
            r = json.loads(subprocess.run(cmd, capture_output=True,
                                          text=True).stdout)
            st1 = (a.stats(), b.stats())
            resyncs = sum(int(t1.get("kura_repl_master_resyncs", 0)) -
                          int(t0.get("kura_repl_master_resyncs", 0))
                          for t0, t1 in zip(st0, st1))
            m = dict(base, what=name, ops_per_s=r["ops_per_s"],
                     p99_ms=r["p99_us"] / 1000, max_ms=r["max_us"] / 1000,
                     lag_p50_ms=r["lag_p50_us"] / 1000,
                     lag_p99_ms=r["lag_p99_us"] / 1000,
                     lag_max_ms=r["lag_max_us"] / 1000,
                     lag_timeouts=r["lag_timeouts"], resyncs=resyncs,
                     errors=r["errors"])
            results.append(m)
            log("  %s: %.0f updates/s, p99 %.1f ms; lag p50 %.1f ms, p99 %.1f "
                "ms, max %.0f ms, %d probes timed out; resyncs during it: %d"
                % (name, m["ops_per_s"], m["p99_ms"], m["lag_p50_ms"],
                   m["lag_p99_ms"], m["lag_max_ms"], m["lag_timeouts"],
                   resyncs))
        b.stop()
        a.stop()
        results.append(dict(base, what="ooms", count=cg.ooms()))
    finally:
        for k in (a, b):
            if k.alive():
                k.kill()
        cg.destroy()
        if not args.keep:
            shutil.rmtree(a_dir, ignore_errors=True)
            shutil.rmtree(b_dir, ignore_errors=True)


def load(args, kind, records, db):
    port = free_port()
    kd = Kurad(args, db, port, None, args.kurad_arg)
    kd.start()
    gen = subprocess.Popen([args.kura, "load", "--generate", str(records),
                            "--value-size", str(VALUE_SIZE[kind]), "--out", "-"],
                           stdout=subprocess.PIPE)
    began = time.monotonic()
    res = subprocess.run([args.kura, "load", "-", "--port", str(port),
                          "--conns", "8"], stdin=gen.stdout,
                         capture_output=True, text=True)
    gen.stdout.close()
    gen.wait()
    if res.returncode != 0:
        raise RuntimeError("kura load failed: %s %s" % (res.stdout, res.stderr))
    kd.stop()
    return time.monotonic() - began


def fmt_table(results, fio_res):
    lines = []
    runs = [r for r in results if "workload" in r]
    none = {(r["kind"], r["factor"], r["workload"], r["conns"]): r
            for r in runs if r["limit"] == "none"}
    hdr = ("| data | size | workload | conns | limit | ops/s | p50 / p99 / max ms "
           "| RSS MiB | cgroup MiB | major faults/op | read KiB/op | written KiB/op "
           "| vs no limit | vs fio QD64 |")
    lines.append(hdr)
    lines.append("|" + "---|" * 14)
    for r in runs:
        key = (r["kind"], r["factor"], r["workload"], r["conns"])
        ref = none.get(key)
        vs_none = ("%.2f" % (r["ops_per_s"] / ref["ops_per_s"])
                   if ref and r["limit"] == "limit" and ref["ops_per_s"] > 0 else "")
        bound = fio_res.get((FIO_BOUND[r["workload"]], 64), {}).get("iops", 0)
        vs_fio = "%.2f" % (r["ops_per_s"] / bound) if bound else ""
        lines.append(
            "| %s | %dx | %s | %d | %s | %.0f | %.1f / %.1f / %.0f | %.0f | %s | "
            "%.3f | %.1f | %.1f | %s | %s |" % (
                r["kind"], r["factor"], r["workload"], r["conns"], r["limit"],
                r["ops_per_s"], r["p50_ms"], r["p99_ms"], r["max_ms"],
                r["rss_mib"], "%.0f" % r["cgroup_mib"] if r["limit"] == "limit"
                else "-", r["majflt_per_op"], r["read_kib_per_op"],
                r["written_kib_per_op"], vs_none, vs_fio))
    starts = [r for r in results if r.get("event", "").startswith(("start", "restart"))]
    if starts:
        lines.append("")
        lines.append("| data | size | limit | start-up | seconds |")
        lines.append("|---|---|---|---|---|")
        for r in starts:
            what = {"start": "cold" if r.get("cold") else "warm",
                    "restart-clean": "after a clean stop, cold",
                    "restart-kill9": "after kill -9 under updates"}[r["event"]]
            lines.append("| %s | %dx | %s | %s | %.1f |" % (
                r["kind"], r["factor"], r["limit"], what, r["seconds"]))
    return "\n".join(lines)


def run_fio(args, work, results, fio_res, when):
    """fio's four runs; the ratios use the lower of the two passes (one
    before the datasets, one after: the machine may be shared)."""
    for rw in ("randread", "randwrite"):
        for depth in (1, 64):
            f = fio(work, rw, depth, args.fio_seconds)
            prev = fio_res.get((rw, depth))
            if prev is None or f["iops"] < prev["iops"]:
                fio_res[(rw, depth)] = f
            results.append(dict(event="fio", rw=rw, depth=depth, when=when, **f))
            log("fio %s QD%d (%s): %.0f IOPS, p50 %.0f us, p99 %.0f us" % (
                rw, depth, when, f["iops"], f["p50_us"], f["p99_us"]))
    os.unlink(os.path.join(work, "fio.dat"))


def measure_dataset(args, kind, factor, records, work, results):
    d = os.path.join(work, "%s-%dx" % (kind, factor))
    shutil.rmtree(d, ignore_errors=True)
    os.makedirs(d)
    db = "%s/kura.tch#bnum=%d" % (d, records * BNUM_PER_RECORD[kind])
    secs = load(args, kind, records, db)
    size = os.path.getsize(d + "/kura.tch")
    log("%s %dx: %d records, %d MiB file, loaded in %.0f s" % (
        kind, factor, records, size // MIB, secs))
    results.append(dict(event="load", kind=kind, factor=factor,
                        records=records, file_bytes=size, seconds=secs))
    state = {"inserted": 0}
    serve(args, kind, factor, records, db, True, results, state)
    if not args.no_unlimited:
        serve(args, kind, factor, records, db, False, results, state)
    if not args.keep:
        shutil.rmtree(d, ignore_errors=True)


def main():
    ap = argparse.ArgumentParser(prog="bench-memory")
    ap.add_argument("--kurad", required=True)
    ap.add_argument("--kura", required=True)
    ap.add_argument("--limit", default="256m")
    ap.add_argument("--sizes", default="1,3,10")
    ap.add_argument("--data", default="values,logins")
    ap.add_argument("--conns", default="64,256")
    ap.add_argument("--workloads", default="get,zipf,update,insert")
    ap.add_argument("--duration", type=int, default=30)
    ap.add_argument("--warm", type=int, default=10)
    ap.add_argument("--fio-seconds", type=int, default=15)
    ap.add_argument("--dir", default=None)
    ap.add_argument("--out", default=None)
    ap.add_argument("--no-unlimited", action="store_true")
    ap.add_argument("--no-kill", action="store_true")
    ap.add_argument("--keep", action="store_true")
    ap.add_argument("--kurad-arg", action="append", default=[])
    ap.add_argument("--pair", action="store_true",
                    help="also a master/master pair with one side limited")
    args = ap.parse_args()
    units = {"k": 1 << 10, "m": 1 << 20, "g": 1 << 30}
    lim = args.limit.lower()
    args.limit = int(lim[:-1]) * units[lim[-1]] if lim[-1] in units else int(lim)
    args.conns = [int(c) for c in args.conns.split(",")]
    args.workloads = [w for w in args.workloads.split(",") if w]
    for w in args.workloads:
        if w not in WORKLOADS:
            ap.error("unknown workload %s" % w)
    if os.geteuid() != 0 or memcg.version() is None:
        log("bench-memory: needs root and a memory cgroup controller")
        return 77
    work = args.dir or tempfile.mkdtemp(prefix="kura-bench-memory-",
                                        dir="/var/tmp")
    os.makedirs(work, exist_ok=True)
    out = args.out or work.rstrip("/") + "-results"
    os.makedirs(out, exist_ok=True)
    results = []
    log("bench-memory: limit %d MiB (cgroup %s), data in %s" % (
        args.limit // MIB, memcg.version(), work))
    fio_res = {}
    run_fio(args, work, results, fio_res, "first")
    try:
        for kind in args.data.split(","):
            for factor in [int(x) for x in args.sizes.split(",")]:
                records = int(factor * args.limit / RECORD_BYTES[kind])
                if args.workloads:
                    measure_dataset(args, kind, factor, records, work,
                                    results)
                if args.pair:
                    pair(args, kind, factor, records, work, results)
                with open(os.path.join(out, "results.jsonl"), "w") as f:
                    for r in results:
                        f.write(json.dumps(r) + "\n")
        run_fio(args, work, results, fio_res, "last")
    finally:
        with open(os.path.join(out, "results.jsonl"), "w") as f:
            for r in results:
                f.write(json.dumps(r) + "\n")
        table = fmt_table(results, fio_res)
        with open(os.path.join(out, "table.md"), "w") as f:
            f.write(table + "\n")
        print(table)
        for r in results:
            if r.get("event") == "pair" and "lag_p99_ms" in r:
                print("pair %s %dx, %s: %.0f updates/s, p99 %.1f ms, max %.0f ms; "
                      "lag p50 %.1f ms, p99 %.1f ms, max %.0f ms; resyncs %d" % (
                          r["kind"], r["factor"], r["what"], r["ops_per_s"],
                          r["p99_ms"], r["max_ms"], r["lag_p50_ms"],
                          r["lag_p99_ms"], r["lag_max_ms"], r["resyncs"]))
            elif r.get("event") == "pair" and r.get("what") == "catch-up":
                print("pair %s %dx: the limited standby caught up from empty in "
                      "%.0f s" % (r["kind"], r["factor"], r["seconds"]))
        ooms = sum(r.get("count", 0) for r in results
                   if r.get("event") == "ooms" or r.get("what") == "ooms")
        print("\nfio (%s): " % ", ".join(sorted({r["when"] for r in results
                                                   if r.get("event") == "fio"}))
              + "; ".join("%s QD%d %.0f IOPS (p99 %.0f us)" % (
                  r["rw"], r["depth"], r["iops"], r["p99_us"])
                  for r in results if r.get("event") == "fio"))
        print("OOM kills in the cgroups: %d; results in %s" % (ooms, out))
        if not args.keep and args.dir is None:
            shutil.rmtree(work, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
