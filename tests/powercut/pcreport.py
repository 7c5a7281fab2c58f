"""pcreport.py: what a run prints: one line per cut (with its findings,
and the command that replays it when it failed) and the summary, a
table per moment x mode and the verdict.
"""
import os

from pcbase import REPO

POWERCUT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "powercut.py")


def print_cut(h, r, n):
    status = "FAIL" if r.failed(h.args.fsync) else "ok"
    recov = []
    if r.refused:
        recov.append("REFUSED")
    recov.append("unclean" if r.unclean else "clean")
    if r.rebuilt:
        recov.append("rebuilt")
    recov.append("redo %d" % r.redo)
    line = "cut %d/%d %s/%s %s [%s] %s; acked %d, this cut: %d missing %d stale" % (
        r.idx + 1, n, r.moment, r.mode, status, r.scenario, r.how, r.acked, r.lost, r.stale)
    if r.old_lost or r.old_stale:
        line += "; OLDER CUTS: %d missing %d stale" % (r.old_lost, r.old_stale)
    if r.nan:
        line += "; %d HALF-APPLIED" % r.nan
    if r.log_errors:
        line += "; %d ERROR lines logged after the restart" % len(r.log_errors)
    line += "; restart %s (%.1fs)" % (", ".join(recov), r.seconds)
    h.log(line)
    for e in r.errors:
        h.log("    error: " + e)
    for b in r.bad_stops:
        h.log("    " + b)
    for e in r.log_errors[:10]:
        h.log("    logged: " + e)
    if h.verbose or r.failed(h.args.fsync):
        for note in r.notes:
            h.log("    " + note)
    for f in r.findings:
        h.log("    " + f)
    if r.failed(h.args.fsync):
        h.log("    reproduce: %s --seed %d --moments %s --modes %s --cuts %d --fsync %s --keep" % (
            os.path.relpath(POWERCUT, REPO), h.args.seed, r.moment, r.mode,
            r.k + 1, h.args.fsync))


def print_summary(h, results, moments, modes, elapsed):
    n = len(results)
    R = sum(r.refused for r in results)
    L = sum(r.lost + r.old_lost for r in results)
    S = sum(r.stale + r.old_stale for r in results)
    nan = sum(r.nan for r in results)
    errs = sum(1 for r in results if r.errors)
    stops = sum(len(r.bad_stops) for r in results)
    h.log("")
    h.log("%-16s %-9s %5s %5s %6s %7s %7s %8s %5s %5s %7s" % (
        "moment", "mode", "cuts", "fired", "acked", "unclean", "rebuilt", "redo", "lost",
        "stale", "refused"))
    for mo in moments:
        for md in modes:
            rs = [r for r in results if r.moment == mo and r.mode == md]
            if not rs:
                continue
            armed = [r for r in rs if r.fired is not None]
            h.log("%-16s %-9s %5d %5s %6d %7d %7d %8d %5d %5d %7d" % (
                mo, md, len(rs), "%d/%d" % (sum(1 for r in armed if r.fired), len(armed))
                if armed else "-", sum(r.acked for r in rs) // max(1, len(rs)),
                sum(r.unclean for r in rs), sum(r.rebuilt for r in rs),
                sum(r.redo for r in rs), sum(r.lost + r.old_lost for r in rs),
                sum(r.stale + r.old_stale for r in rs), sum(r.refused for r in rs)))
    h.log("(acked: average acknowledged writes per cut; fired: armed triggers that fired "
          "before the fallback cut; unclean/rebuilt: restarts that found the database not "
          "closed cleanly / rebuilt it; redo: log records redone)")
    h.log("rebuilds: %d; unclean restarts: %d; redo records: %d; older cuts' writes lost: %d "
          "missing %d stale; half-applied values: %d; harness errors: %d; unclean stops: %d; "
          "cuts whose restarted kurads logged ERROR: %d" % (
              sum(r.rebuilt for r in results), sum(r.unclean for r in results),
              sum(r.redo for r in results), sum(r.old_lost for r in results),
              sum(r.old_stale for r in results), nan, errs, stops,
              sum(1 for r in results if r.log_errors)))
    h.log("seed %d, -fsync %s, %.0f s" % (h.args.seed, h.args.fsync, elapsed))
    for cg in list(h.cgroups):
        h.release_cgroup(cg)
    if h.memlimit:
        h.log("every kurad in a memory cgroup of %d MiB%s: %d OOM kills" % (
            h.memlimit >> 20, ", %d records prefilled" % h.args.prefill
            if h.args.prefill else "", h.ooms))
    h.log("%d cuts, %d refused to start, %d acknowledged writes lost, %d stale" % (n, R, L, S))
    if h.args.fsync == "always":
        ok = R == 0 and L == 0 and S == 0 and nan == 0 and errs == 0 and stops == 0
    else:
        ok = R == 0 and nan == 0 and errs == 0 and stops == 0
    return ok and h.ooms == 0
