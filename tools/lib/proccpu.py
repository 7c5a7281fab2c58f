"""proccpu.py: the servers' CPU time around a benchmark run, from /proc.

The one place the benchmark scripts read a process's user + system time
(/proc/PID/stat utime and stime, every thread included) and the host's
idle and steal time (/proc/stat), so that every script's "CPU per
operation" means the same thing.

From Python (tools/lib on sys.path):

    import proccpu
    before = proccpu.snapshot([pid, ...])
    ... the run ...
    after = proccpu.snapshot([pid, ...])
    us = proccpu.us_per_op(before, after, ops)      # server CPU per op
    by_thread = proccpu.thread_ticks(pid)            # {thread name: ticks}
    idle, steal = proccpu.host_shares(before, after) # percent of the host

From the shell (tools/lib/servers.sh wraps these):

    proccpu.py snap [--tree] PID...     prints a snapshot as one JSON object
    proccpu.py per-op BEFORE AFTER OPS  prints the microseconds per op
    proccpu.py shares BEFORE AFTER      prints "idle% steal%"

--tree also counts every descendant of each PID (nginx's workers under its
master). A PID that has exited counts 0, so a server that died mid-run
shows as a fall in its CPU, not as an error.
"""

import json
import os
import sys

HZ = os.sysconf("SC_CLK_TCK")


def _stat_fields(pid):
    """The fields after the command name of /proc/PID/stat, or None."""
    try:
        with open(f"/proc/{pid}/stat") as f:
            return f.read().rsplit(")", 1)[1].split()
    except OSError:
        return None


def descendants(pid):
    """pid and every process below it, found by each process's parent."""
    children = {}
    for name in os.listdir("/proc"):
        if name.isdigit():
            f = _stat_fields(name)
            if f:
                children.setdefault(int(f[1]), []).append(int(name))
    out, todo = [], [int(pid)]
    while todo:
        p = todo.pop()
        out.append(p)
        todo.extend(children.get(p, []))
    return out


def process_ticks(pids, tree=False):
    """User + system clock ticks of pids (and their descendants if tree)."""
    total = 0
    for pid in pids:
        for p in (descendants(pid) if tree else [pid]):
            f = _stat_fields(p)
            if f:
                total += int(f[11]) + int(f[12])  # utime, stime
    return total


def thread_ticks(pid):
    """User + system ticks of each thread of pid, summed by thread name
    (kura-worker0, kura-sync...), as a dict."""
    out = {}
    try:
        tids = os.listdir(f"/proc/{pid}/task")
    except OSError:
        return out
    for tid in tids:
        try:
            with open(f"/proc/{pid}/task/{tid}/stat") as f:
                text = f.read()
        except OSError:
            continue
        name = text[text.index("(") + 1:text.rindex(")")]
        f = text.rsplit(")", 1)[1].split()
        out[name] = out.get(name, 0) + int(f[11]) + int(f[12])
    return out


def snapshot(pids, tree=False):
    """The processes' ticks and the host's total, idle and steal ticks."""
    with open("/proc/stat") as f:
        cpu = [int(x) for x in f.readline().split()[1:]]
    return {"proc": process_ticks(pids, tree), "total": sum(cpu[:8]),
            "idle": cpu[3] + cpu[4], "steal": cpu[7]}


def us_per_op(before, after, ops):
    """Microseconds of the processes' CPU per operation between snapshots."""
    return round((after["proc"] - before["proc"]) * 1e6 / HZ / max(ops, 1), 2)


def host_shares(before, after):
    """The host's idle and steal time between snapshots, in percent."""
    ticks = max(after["total"] - before["total"], 1)
    return (round(100 * (after["idle"] - before["idle"]) / ticks, 1),
            round(100 * (after["steal"] - before["steal"]) / ticks, 1))


def main(argv):
    if argv and argv[0] == "snap":
        tree = len(argv) > 1 and argv[1] == "--tree"
        pids = [p for p in argv[1 + tree:] if p]
        print(json.dumps(snapshot(pids, tree)))
    elif len(argv) == 4 and argv[0] == "per-op":
        print(us_per_op(json.loads(argv[1]), json.loads(argv[2]),
                        float(argv[3])))
    elif len(argv) == 3 and argv[0] == "shares":
        print("%s %s" % host_shares(json.loads(argv[1]), json.loads(argv[2])))
    else:
        sys.stderr.write(__doc__)
        return 2
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
