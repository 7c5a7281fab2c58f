"""outcomes: a pytest plugin that writes each test's outcome to a file.

run-client-suites loads it (-p outcomes) into the clients' own test runs
and reads back, for every test id pytest collected, one of "pass", "fail"
or "skip". A failure in setup or teardown counts as "fail", as does a test
that passed its call but failed its teardown. The file is JSON, written
once at the end of the session to the path in KURA_SUITE_OUTCOMES.
"""
import json
import os

_outcomes = {}
_RANK = {"pass": 0, "skip": 1, "fail": 2}


def _note(nodeid, outcome):
    old = _outcomes.get(nodeid)
    if old is None or _RANK[outcome] > _RANK[old]:
        _outcomes[nodeid] = outcome


def pytest_runtest_logreport(report):
    if report.passed:
        # a setup or teardown that passed says nothing of the test itself
        if report.when == "call":
            _note(report.nodeid, "pass")
    elif report.failed:
        # an xfail that passed (strict) is a failure too
        _note(report.nodeid, "fail")
    elif report.skipped:
        _note(report.nodeid, "skip")


def pytest_collectreport(report):
    # a test module that cannot be imported fails as a whole
    if report.failed:
        _note(report.nodeid, "fail")


def pytest_sessionfinish(session, exitstatus):
    path = os.environ.get("KURA_SUITE_OUTCOMES")
    if not path:
        return
    tmp = path + ".tmp"
    with open(tmp, "w") as f:
        json.dump(_outcomes, f, indent=0, sort_keys=True)
    os.replace(tmp, path)
