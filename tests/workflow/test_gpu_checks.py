"""`scripts/gpu_checks.sh`, the CUDA checks of a GPU box, on what can run anywhere: how it finds its data."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from tests.conftest import ROOT


def test_the_gpu_checks_find_the_sts_data_where_download_data_puts_it(tmp_path):
    """`bash scripts/gpu_checks.sh OUT` on a box where `consert download-data` filled data/senteval (no
    $CONSERT_DATA, no SentEval folder beside it): it reads that folder, as every command does."""
    from tests.fixtures import write_senteval_tree

    box = tmp_path / "box"
    write_senteval_tree(box / "data" / "senteval")
    env = {key: value for key, value in os.environ.items() if key != "CONSERT_DATA"}
    env["PATH"] = f"{Path(sys.executable).parent}{os.pathsep}{env['PATH']}"
    result = subprocess.run(["bash", str(ROOT / "scripts" / "gpu_checks.sh"), str(tmp_path / "out")], cwd=box, env=env,
                            capture_output=True, text=True, timeout=120)  # fmt: skip
    assert result.returncode == 0, result.stdout + result.stderr
    machine = (tmp_path / "out" / "machine.txt").read_text()
    assert f"data {(box / 'data' / 'senteval' / 'downstream').resolve()}" in machine.splitlines()


def _parse_only(steps: list[str], out: Path) -> subprocess.CompletedProcess:
    """``GPU_CHECKS_PARSE_ONLY=1 bash scripts/gpu_checks.sh OUT STEPS``, from a folder outside the checkout."""
    env = {
        **os.environ,
        "GPU_CHECKS_PARSE_ONLY": "1",
        "PATH": f"{Path(sys.executable).parent}{os.pathsep}{os.environ['PATH']}",
    }
    return subprocess.run(["bash", str(ROOT / "scripts" / "gpu_checks.sh"), str(out), *steps], cwd=out.parent, env=env,
                          capture_output=True, text=True, timeout=600)  # fmt: skip


def test_the_gpu_checks_help_names_every_step_and_a_steps_arguments_parse(tmp_path):
    """`--help` prints the script's usage (every step it runs) and exits 0; the share step's arguments, as the script
    builds them, accepted by `python -m harness_bench --parse-only` on a CPU (every step: the slow test below)."""
    shown = subprocess.run(["bash", str(ROOT / "scripts" / "gpu_checks.sh"), "--help"], capture_output=True, text=True)
    assert shown.returncode == 0 and shown.stdout.startswith("The CUDA checks of a GPU box"), shown.stderr
    for step in ("graphs", "dag", "cost", "share", "bench", "rehearsal"):
        assert f"  {step}:" in shown.stdout
    result = _parse_only(["share"], tmp_path / "out")
    steps = (tmp_path / "out" / "steps.txt").read_text()
    assert result.returncode == 0, steps + (tmp_path / "out" / "share.log").read_text()
    assert [line.split(":")[0] for line in steps.splitlines()] == ["share"]
    assert (tmp_path / "out" / "share.log").read_text() == "harness_bench share: arguments accepted\n"


@pytest.mark.slow
def test_every_gpu_check_step_parses_its_arguments_on_a_cpu(tmp_path):
    """Every step with the arguments the script gives it: the graphs and rehearsal steps collect their CUDA tests,
    the dag step dry-runs the offline config's DAG, the benchmark steps' arguments are accepted."""
    steps = ["graphs", "dag", "cost", "share", "bench", "rehearsal"]
    result = _parse_only(steps, tmp_path / "out")
    logs = {step: (tmp_path / "out" / f"{step}.log").read_text() for step in steps}
    assert result.returncode == 0, logs
    for step in ("cost", "bench"):
        assert logs[step].endswith("arguments accepted\n"), logs[step]
    assert " tests collected" in logs["graphs"] and "rehearsal" in logs["rehearsal"]
    assert "This was a dry-run" in logs["dag"] and re.search(r"^total\s+[1-9]\d*$", logs["dag"], re.M), logs["dag"]
