"""CI's promise kept: no test it runs may be skipped quietly (a pytest plugin; ``tests/conftest.py`` uses its hooks).

``.ci/run`` sets ``CONSERT_CI_NO_SKIPS=1``: every skipped test of the run is then listed with its reason at the
end and the run fails, so a missing tool or a missing data file turns CI red instead of green. It also sets
``CONSERT_CI_DEADLINE``: past it no slow test starts, and the one left out fails, naming the deadline, so a slow
machine fails loudly instead of running past CI's limit. Tests that cannot run on CI's machine (the CUDA ones)
are deselected by their marker (``-m 'not slow and not cuda'``), never skipped. Unset, skips stay skips (a laptop
without Chromium is green).
"""

from __future__ import annotations

import os
import time

import pytest

#: ``1``: a skipped test fails the run (``.ci/run`` sets it).
NO_SKIPS_ENV = "CONSERT_CI_NO_SKIPS"
#: Epoch seconds after which no slow test starts: .ci/run sets it so that its run ends within CI's 90 minutes on
#: a slow machine (a slow test may take 25 minutes on 2 AVX2 cores); unset, every selected test runs.
DEADLINE_ENV = "CONSERT_CI_DEADLINE"
#: The first words of the failure's headline in the log.
HEADLINE = "skipped tests that CI promises to run"

_skipped: dict[str, str] = {}


def strict() -> bool:
    return os.environ.get(NO_SKIPS_ENV) == "1"


def pytest_runtest_setup(item):
    """Past CI's deadline a slow test does not start: it fails, and says why (never a skip, which a run without
    ``CONSERT_CI_NO_SKIPS`` would count as green)."""
    deadline = os.environ.get(DEADLINE_ENV)
    if deadline and item.get_closest_marker("slow") and time.time() > float(deadline):
        pytest.fail(f"${DEADLINE_ENV}: CI's time budget leaves too little for this end-to-end run", pytrace=False)


def _reason(report) -> str:
    longrepr = report.longrepr
    if isinstance(longrepr, tuple) and len(longrepr) == 3:  # (path, line, "Skipped: reason")
        return str(longrepr[2]).removeprefix("Skipped: ")
    return str(longrepr)


def pytest_runtest_logreport(report):
    """Remember each skipped test (a skip in its setup or its call; an expected failure is not a skip)."""
    if report.skipped and not hasattr(report, "wasxfail"):
        _skipped[report.nodeid] = _reason(report)


def pytest_sessionfinish(session, exitstatus):
    """Under ``CONSERT_CI_NO_SKIPS=1`` a run that skipped a test fails (exit status 1), however it went else."""
    if strict() and _skipped and session.exitstatus == pytest.ExitCode.OK:
        session.exitstatus = pytest.ExitCode.TESTS_FAILED


def pytest_terminal_summary(terminalreporter, exitstatus, config):
    """Under ``CONSERT_CI_NO_SKIPS=1``: each skipped test's name and reason, last in the log, in red."""
    if not (strict() and _skipped):
        return
    terminalreporter.section(f"{HEADLINE} ({NO_SKIPS_ENV}=1): the run fails", sep="=", red=True, bold=True)
    for nodeid, reason in _skipped.items():
        terminalreporter.line(f"SKIPPED, so CI fails: {nodeid}: {reason}", red=True)
