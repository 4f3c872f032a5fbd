"""CI cannot be green with a test it promises skipped: ``CONSERT_CI_NO_SKIPS=1`` (set by ``.ci/run``) turns any
skip, CI's deadline included, into a failed run that names the test and its reason (``tests/ci_skips.py``)."""

from __future__ import annotations

import os
import re
import subprocess
import sys
import time

import pytest

from tests import ci_skips, conftest
from tests.conftest import ROOT

#: A tiny suite: one test that passes, one that skips with a reason, one slow test that CI's deadline can leave out.
SUITE = """
import pytest


def test_runs():
    assert True


def test_needs_a_tool():
    pytest.skip("the-tool is not installed")


@pytest.mark.slow
def test_end_to_end():
    assert True
"""


def _inner_run(tmp_path, *selection: str, **env: str) -> subprocess.CompletedProcess:
    """pytest on :data:`SUITE` in a fresh folder with the plugin and only the CI variables in ``env``."""
    (tmp_path / "test_suite.py").write_text(SUITE)
    (tmp_path / "pytest.ini").write_text("[pytest]\nmarkers =\n    slow: end to end\n")
    environ = {k: v for k, v in os.environ.items() if k not in (ci_skips.NO_SKIPS_ENV, ci_skips.DEADLINE_ENV)}
    environ.update(env, PYTHONPATH=str(ROOT))
    command = [sys.executable, "-m", "pytest", "-p", "tests.ci_skips", "-p", "no:cacheprovider", *selection]
    return subprocess.run(command, cwd=tmp_path, env=environ, capture_output=True, text=True, timeout=120)


def test_a_skipped_test_fails_the_run_under_ci_and_is_named_with_its_reason(tmp_path):
    result = _inner_run(tmp_path, "-m", "not slow", **{ci_skips.NO_SKIPS_ENV: "1"})
    assert result.returncode == pytest.ExitCode.TESTS_FAILED, result.stdout
    assert re.search(r"1 passed, 1 skipped, 1 deselected", result.stdout), result.stdout
    assert ci_skips.HEADLINE in result.stdout
    assert "SKIPPED, so CI fails: test_suite.py::test_needs_a_tool: the-tool is not installed" in result.stdout
    assert "test_runs" not in result.stdout.split(ci_skips.HEADLINE)[1]  # only the skipped test is listed


def test_without_the_variable_a_skip_stays_a_skip(tmp_path):
    result = _inner_run(tmp_path, "-m", "not slow")
    assert result.returncode == pytest.ExitCode.OK, result.stdout
    assert "1 passed, 1 skipped" in result.stdout and ci_skips.HEADLINE not in result.stdout


def test_a_slow_test_left_out_at_cis_deadline_fails_the_run_saying_why(tmp_path):
    past = str(time.time() - 60)
    for strict in ("1", ""):  # a failure, not a skip: red even where skips are allowed
        result = _inner_run(tmp_path, "-m", "slow", **{ci_skips.NO_SKIPS_ENV: strict, ci_skips.DEADLINE_ENV: past})
        assert result.returncode == pytest.ExitCode.TESTS_FAILED, result.stdout
        assert f"${ci_skips.DEADLINE_ENV}: CI's time budget" in result.stdout and "1 error" in result.stdout
    # before the deadline the slow test runs, and a run with nothing skipped is green under the variable
    future = str(time.time() + 3600)
    result = _inner_run(tmp_path, "-m", "slow", **{ci_skips.NO_SKIPS_ENV: "1", ci_skips.DEADLINE_ENV: future})
    assert result.returncode == pytest.ExitCode.OK and "1 passed, 2 deselected" in result.stdout, result.stdout


def test_a_failure_keeps_its_own_exit_status_beside_a_skip(tmp_path):
    (tmp_path / "test_broken.py").write_text("def test_broken():\n    assert False\n")
    result = _inner_run(tmp_path, "-m", "not slow", **{ci_skips.NO_SKIPS_ENV: "1"})
    assert result.returncode == pytest.ExitCode.TESTS_FAILED and "1 failed" in result.stdout, result.stdout
    assert "SKIPPED, so CI fails: test_suite.py::test_needs_a_tool" in result.stdout


def test_the_suite_uses_the_plugin_and_ci_sets_its_variables():
    """tests/conftest.py's hooks are the plugin's, and .ci/run turns it on for both of its pytest runs."""
    for hook in ("pytest_runtest_setup", "pytest_runtest_logreport", "pytest_sessionfinish", "pytest_terminal_summary"):
        assert getattr(conftest, hook) is getattr(ci_skips, hook), hook
    script = (ROOT / ".ci" / "run").read_text()
    exported = script.index(f"export {ci_skips.NO_SKIPS_ENV}=1")
    assert exported < script.index("&& pytest ||") < script.index("python -m pytest -m slow")
    assert f"export {ci_skips.DEADLINE_ENV}=" in script


def test_ci_runs_the_readmes_two_quickstart_commands_as_written_in_their_order_before_the_slow_suite():
    """The quickstart's two commands (the main job, then the tests), each line of .ci/run word for word, in that
    order, then the slow suite: a test that needs the checkout's outputs absent, or a main job that breaks, fails
    CI."""
    readme = (ROOT / "README.md").read_text()
    quickstart = readme.split("## Quickstart", 1)[1].split("```bash\n", 1)[1].split("```", 1)[0]
    commands = [line for line in quickstart.splitlines() if line.strip() and not line.startswith("#")]
    assert len(commands) == 2 and "snakemake" in commands[0] and "pytest" in commands[1], commands
    script = (ROOT / ".ci" / "run").read_text()
    lines = script.splitlines()
    at = [next(i for i, line in enumerate(lines) if line.startswith(command)) for command in commands]
    assert at[0] < at[1] < next(i for i, line in enumerate(lines) if "pytest -m slow" in line)


def test_ci_times_sums_each_test_files_seconds(tmp_path):
    """scripts/ci_times.py: a file's seconds are its tests' (classes and parametrizations included), longest first."""
    report = tmp_path / "report.xml"
    report.write_text(
        '<testsuites><testsuite name="pytest">'
        '<testcase classname="tests.train.test_a" name="t1" time="1.5"/>'
        '<testcase classname="tests.train.test_a.TestX" name="t2[x]" time="2.0"/>'
        '<testcase classname="tests.test_b" name="t3" time="4.5"/>'
        "</testsuite></testsuites>",
        encoding="utf-8",
    )
    result = subprocess.run(
        [sys.executable, str(ROOT / "scripts" / "ci_times.py"), str(report)], capture_output=True, text=True
    )
    lines = result.stdout.splitlines()
    assert result.returncode == 0 and "0.1 min in 2 files" in lines[0]
    assert lines[1].split() == ["4.5", "s", "tests/test_b.py"]
    assert lines[2].split() == ["3.5", "s", "tests/train/test_a.py"]
