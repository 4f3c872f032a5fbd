"""The guard of the checkout's own outputs (``tests/checkout_guard.py``): a session whose tests add, change or remove
anything under a checkout's ``results/``, ``figures/``, ``runs/``, ``logs/``, ``benchmarks/`` or ``.snakemake/``
fails, naming the paths; one that leaves them alone passes. Run on a checkout of the test's own (its folders as the
README's main job leaves them), in a pytest of its own."""

from __future__ import annotations

import os
import subprocess
import sys

from tests.checkout_guard import HEADLINE, ROOT_ENV
from tests.conftest import ROOT

TESTS = """
from pathlib import Path

def test_reads_the_results(checkout=Path({checkout!r})):
    assert (checkout / "results" / "table2_unsup.csv").read_text() == "method,Avg\\n"

def test_writes(checkout=Path({checkout!r})):
    if {write!r}:
        (checkout / "results" / "table2_unsup.csv").write_text("method,Avg\\nConSERT-base,72.7\\n")
        (checkout / "runs" / "base-unsup-seed1").mkdir(parents=True)
"""


def _session(tmp_path, write: bool) -> subprocess.CompletedProcess:
    checkout = tmp_path / "checkout"
    (checkout / "results").mkdir(parents=True)
    (checkout / "results" / "table2_unsup.csv").write_text("method,Avg\n")
    tests = tmp_path / "session"
    tests.mkdir()
    (tests / "test_session.py").write_text(TESTS.format(checkout=str(checkout), write=write))
    (tests / "pytest.ini").write_text("[pytest]\n")
    env = {**os.environ, ROOT_ENV: str(checkout), "PYTHONPATH": str(ROOT)}
    command = [sys.executable, "-m", "pytest", "-p", "tests.checkout_guard", "-p", "no:cacheprovider", "-q", "."]
    return subprocess.run(command, cwd=tests, env=env, capture_output=True, text=True, timeout=120)


def test_a_session_that_writes_into_the_checkouts_outputs_fails_naming_them(tmp_path):
    result = _session(tmp_path, write=True)
    assert result.returncode == 1, result.stdout
    assert "2 passed" in result.stdout and HEADLINE in result.stdout
    assert "changed results/table2_unsup.csv" in result.stdout
    assert "added runs/" in result.stdout and "added runs/base-unsup-seed1/" in result.stdout


def test_a_session_that_only_reads_them_passes(tmp_path):
    result = _session(tmp_path, write=False)
    assert result.returncode == 0, result.stdout
    assert HEADLINE not in result.stdout
